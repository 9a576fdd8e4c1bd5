"""OpenSim joints: a SpatialTransform of functions of the joint's coordinates (the `opensim` joint).

OpenSim's CustomJoint (Simbody's MobilizedBody::FunctionBased) moves the child frame M relative
to the parent frame F by
    X_FM(q) = ( R_a1(f1(q)) R_a2(f2(q)) R_a3(f3(q)),  f4(q) a4 + f5(q) a5 + f6(q) a6 ),
three rotations about unit axes a1, a2, a3, each about the axis carried by the rotations before
it (body-fixed), and a translation along a4, a5, a6 in the parent frame F. Each f_k is a
function of one or more of the joint's coordinates. Every other OpenSim joint with coordinates
is one of these with identity functions (model.osim maps them: Pin, Slider, Universal, Gimbal,
Ball, Free, Planar), except the EllipsoidJoint, whose origin also moves on an ellipsoid:
    t = diag(a, b, c) R(q) e_z      (Simbody's Ellipsoid mobilizer; checked against Simbody).
The joint's velocities are q-dot, whatever Simbody uses for its speeds u (docs/opensim.md).

The functions (parameters in the normalised form model.osim writes, `args` indexing the joint's
coordinates):
    {"kind": "constant", "value": v}
    {"kind": "linear", "args": (i, ...), "coefficients": (c_1, ..., c_n, c_0)}  sum c_k x_k + c_0
    {"kind": "polynomial", "args": (i,), "coefficients": (p_n, ..., p_1, p_0)}  highest power first
    {"kind": "spline", "args": (i,), "x": knots, "y": values}                   OpenSim's SimmSpline
    {"kind": "multiplier", "scale": s, "function": {...}}                       s * f
as OpenSim evaluates them (LinearFunction, PolynomialFunction, SimmSpline, MultiplierFunction,
Constant; the orders checked against OpenSim in tests/test_osim.py).

SimmSpline is the cubic spline through the knots whose third derivative at each end equals
that of the cubic through the four nearest knots (Forsythe, Malcolm & Moler's end conditions,
not the natural ones: 2 knots give a line, 3 a parabola), continued by its end tangents
outside [x_0, x_{n-1}]. It is written without branches over all segments at once:
    f(x) = y_0 - b_0 (x_0 - x)_+ + sum_k g_k(u_k) + b_{n-1} (x - x_{n-1})_+,
    u_k = (x - x_k)_+ - (x - x_{k+1})_+ = clamp(x - x_k, 0, h_k),
    g_k(u) = u (b_k + u (c_k + u d_k)),
with (segment k) y_k + b_k u + c_k u^2 + d_k u^3 the spline's cubic. On segment m the terms
k < m are complete (g_k(h_k) = y_{k+1} - y_k: they telescope to y_m), those k > m are 0, so f is
the segment's cubic; every term stays bounded (no cancellation of large truncated powers), and
x_+ = (x + sqrt(x^2)) / 2 needs no branch in the generated code (joints.special.PosPart).
The clamps are one-sided pieces (PosPartRight, PosPartLeft): at a knot u_k' is 1 or 0, never
1/2, so the chain rule's u_k'^2 gives one segment's f'' there (inside the right one, where
f'' is continuous; at the ends the inner one, as OpenSim's calcDerivative), not half of it.
"""
import numpy as np
import sympy as sp

from . import charts
from .special import PosPartLeft, PosPartRight
from .surfaces import num
from .symbolic import Factor, light_entry, simplify_entry

KINDS = ("constant", "linear", "polynomial", "spline", "multiplier")


# ---- SimmSpline ---------------------------------------------------------------------------------
def spline_coefficients(x, y):
    """(b, c, d): segment k of OpenSim's SimmSpline is y_k + b_k u + c_k u^2 + d_k u^3
    (u = x - x_k); b[-1] is the slope at the last knot. The second derivatives m_k solve the
    tridiagonal system h_{k-1} m_{k-1} + 2 (h_{k-1} + h_k) m_k + h_k m_{k+1} = 6 (s_k - s_{k-1})
    (s_k the slopes of the chords) with the third derivative at each end equal to 6 times the third
    divided difference of the four end knots (zero with three knots)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    h = np.diff(x)
    s = np.diff(y) / h
    if n == 2:
        return np.array([s[0], s[0]]), np.zeros(2), np.zeros(2)
    A, r = np.zeros((n, n)), np.zeros(n)
    for k in range(1, n - 1):
        A[k, k - 1:k + 2] = h[k - 1], 2 * (h[k - 1] + h[k]), h[k]
        r[k] = 6 * (s[k] - s[k - 1])
    A[0, :2] = -1.0 / h[0], 1.0 / h[0]                 # (m_1 - m_0) / h_0 = f'''(x_0)
    A[-1, -2:] = -1.0 / h[-1], 1.0 / h[-1]
    if n > 3:
        r[0] = 6 * _third_difference(x[:4], y[:4])
        r[-1] = 6 * _third_difference(x[-4:], y[-4:])
    m = np.linalg.solve(A, r)
    b = np.empty(n)
    b[:-1] = s - h * (2 * m[:-1] + m[1:]) / 6
    b[-1] = s[-1] + h[-1] * (m[-2] + 2 * m[-1]) / 6
    c = m / 2
    d = np.append(np.diff(m) / (6 * h), 0.0)
    return b, c, d


def _third_difference(x, y):
    """The divided difference f[x0, x1, x2, x3]."""
    f = list(y)
    for order in (1, 2, 3):
        f = [(f[i + 1] - f[i]) / (x[i + order] - x[i]) for i in range(len(f) - 1)]
    return f[0]


def spline_value(x, y, at):
    """SimmSpline's value at `at` (numpy, for tests): the segment's cubic, the end tangents
    outside."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    b, c, d = spline_coefficients(x, y)
    if at <= x[0]:
        return y[0] + b[0] * (at - x[0])
    if at >= x[-1]:
        return y[-1] + b[-1] * (at - x[-1])
    k = int(np.searchsorted(x, at, side="right")) - 1
    u = at - x[k]
    return y[k] + u * (b[k] + u * (c[k] + u * d[k]))


def spline_expression(x, y, arg):
    """The SimmSpline as one branch-free sympy expression of arg (module docstring)."""
    b, c, d = spline_coefficients(x, y)
    knots = [num(v) for v in x]
    last = len(x) - 1
    # one-sided pieces (joints.special): at a knot every derivative is one segment's, the inner
    # one at the ends and the right one inside (OpenSim's), not a mix that halves f''
    lower = [PosPartRight(arg - k) for k in knots[:-1]] + [PosPartLeft(arg - knots[-1])]
    out = num(y[0]) - num(b[0]) * PosPartLeft(knots[0] - arg)   # b_0 min(x - x_0, 0)
    for k in range(last):
        u = lower[k] - lower[k + 1]
        out += u * (num(b[k]) + u * (num(c[k]) + u * num(d[k])))
    return out + num(b[-1]) * lower[-1]


# ---- the functions ---------------------------------------------------------------------------
def function_expression(f, q):
    """A function (module docstring) of the joint's coordinate symbols q, in sympy."""
    kind = f["kind"]
    if kind == "constant":
        return num(f["value"])
    if kind == "multiplier":
        return num(f["scale"]) * function_expression(f["function"], q)
    args = [q[i] for i in f["args"]]
    if kind == "linear":
        *cs, c0 = f["coefficients"]
        return sum((num(c) * a for c, a in zip(cs, args)), num(c0))
    if kind == "polynomial":
        out = sp.Integer(0)
        for p in f["coefficients"]:                   # Horner, highest power first
            out = out * args[0] + num(p)
        return out
    if kind == "spline":
        return spline_expression(f["x"], f["y"], args[0])
    raise ValueError(f"unknown OpenSim function kind {kind!r} (one of {', '.join(KINDS)})")


def function_value(f, values):
    """The function's float value at the joint's coordinate values (for tests and tools)."""
    kind = f["kind"]
    if kind == "constant":
        return float(f["value"])
    if kind == "multiplier":
        return float(f["scale"]) * function_value(f["function"], values)
    args = [float(values[i]) for i in f["args"]]
    if kind == "linear":
        *cs, c0 = f["coefficients"]
        return float(np.dot(cs, args[:len(cs)]) + c0)
    if kind == "polynomial":
        return float(np.polyval(f["coefficients"], args[0]))
    return float(spline_value(f["x"], f["y"], args[0]))


def uses_spline(f):
    return f["kind"] == "spline" or (f["kind"] == "multiplier" and uses_spline(f["function"]))


def is_zero(f):
    """A function that is 0 whatever the coordinates (its axis does not move)."""
    if f["kind"] == "constant":
        return float(f["value"]) == 0.0
    if f["kind"] == "multiplier":
        return float(f["scale"]) == 0.0 or is_zero(f["function"])
    return False


# ---- the joint ---------------------------------------------------------------------------------
def _axis_rotation(axis, angle):
    """Rotation about a unit axis (exact elementary rotations about +-x, +-y, +-z)."""
    a = [float(v) for v in axis]
    for k in range(3):
        if abs(abs(a[k]) - 1.0) < 1e-15 and all(abs(a[j]) < 1e-15 for j in range(3) if j != k):
            return charts.elementary("XYZ"[k], angle if a[k] > 0 else -angle)
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]]).applyfunc(num)
    return sp.eye(3) + sp.sin(angle) * K + (1 - sp.cos(angle)) * K * K


def _axis_vector(axis):
    return sp.Matrix([sp.Integer(int(v)) if float(v).is_integer() else num(v) for v in axis])


def factors(params, q):
    """Q = T(t) R_a1(f1) R_a2(f2) R_a3(f3) as joints.symbolic Factors (S by the product rule);
    an axis whose function is identically 0 contributes nothing."""
    Rs = [_axis_rotation(axis, function_expression(f, q))
          for axis, f in params.get("rotation") or () if not is_zero(f)]
    t = sp.zeros(3, 1)
    for axis, f in params.get("translation") or ():
        if not is_zero(f):
            t += _axis_vector(axis) * function_expression(f, q)
    radii = params.get("ellipsoid")
    if radii is not None:
        R = sp.eye(3)
        for Rk in Rs:
            R = R * Rk
        t += sp.diag(*[num(r) for r in radii]) * R[:, 2]
    return [Factor(sp.eye(3), t)] + [Factor(Rk, sp.zeros(3, 1)) for Rk in Rs]


def coordinates(params):
    """What each coordinate is: its OpenSim name, motion type (its unit) and range."""
    names = params.get("coordinates") or ()
    ranges = params.get("ranges") or [None] * len(names)
    units = {"rotational": " (rad)", "translational": " (m)", "coupled": ""}
    return [f"{name}, OpenSim {kind} coordinate{units[kind]}"
            + (f", range [{r[0]:.6g}, {r[1]:.6g}]" if r else "")
            for name, r, kind in zip(names, ranges, motion_types(params))]


def motion_types(params):
    """OpenSim's motion type of each coordinate (its Joint's rule): rotational or translational
    where some axis moves it by a LinearFunction of slope +-1 (the last such axis, rotations
    first), else coupled (scaled or nonlinear on every axis that uses it)."""
    axes = [("rotational", f) for _, f in params.get("rotation") or ()] + \
        [("translational", f) for _, f in params.get("translation") or ()]
    out = []
    for i in range(len(params.get("coordinates") or ())):
        kind = "coupled"
        for motion, f in axes:
            pure = f["kind"] == "linear" and abs(f["coefficients"][0]) == 1.0
            if pure and i in f.get("args", ()):
                kind = motion
        out.append(kind)
    return out


def simplifier(params):
    """The light path (no expansion) for joints with splines, as the spline joints."""
    axes = list(params.get("rotation") or ()) + list(params.get("translation") or ())
    functions = [f for _, f in axes]
    return light_entry if any(uses_spline(f) for f in functions) else simplify_entry
