"""Spline joints: uniform cubic B-splines of frames (Sueda 2.5.12, Lee & Terzopoulos 2008) and
tensor-product spline surfaces of the six motion components (Sueda 2.5.13).

Piecewise evaluation without branches. Sueda writes one segment at a time: on segment s
(q in [s, s + 1], u = q - s) the curve joint is
    Q = C_s exp(dC_{s+1} B~2(u)) exp(dC_{s+2} B~3(u)) exp(dC_{s+3} B~4(u)),
    dC_i = log(C_{i-1}^-1 C_i).
Here the whole curve is one formula over all control frames C_0 ... C_{n-1}:
    Q(q) = C_0 prod_{i=1}^{n-1} exp(dC_i beta(q - i + 3)),
    beta(x) = (x+^3 - 3 (x-1)+^3 + 3 (x-2)+^3 - (x-3)+^3) / 6     (x+ = max(x, 0)),
the cumulative cubic B-spline basis: 0 for x <= 0, B~4, B~3, B~2 on [0,1], [1,2], [2,3], 1 for
x >= 3. On segment s the factors i <= s are exp(dC_i) (they multiply to C_s: the product
telescopes), the factors i > s + 3 are the identity, and the three in between are Sueda's. So
Q is Sueda's (2.74) on every segment, C^2 across segments, and the generated code evaluates
any q in one straight line: the truncated powers x+ = (x + sqrt(x*x)) / 2 need no branch. The
parameter range is q in [0, n - 3] (n control frames, n - 3 segments); outside it the formula
continues smoothly for 2 more units at each end (on [-2, n - 1]) and S is 0 beyond.

The spline surface joint (2 DOF) is Q = T(f1, f2, f3) Rx(f4) Ry(f5) Rz(f6), i.e.
prod_k exp(e_k f_k(u, v)) with Sueda's basis order (translation first), where each f_k is the
bicubic tensor-product B-spline of an m x n grid of control values C_k:
    f_k(u, v) = sum_{a, b} C_k[a][b] N(u - a + 3) N(v - b + 3),
    N(x) = (x+^3 - 4 (x-1)+^3 + 6 (x-2)+^3 - 4 (x-3)+^3 + (x-4)+^3) / 6
           (the cardinal cubic B-spline),
again the whole grid in one formula; (u, v) in [0, m - 3] x [0, n - 3]. The rotation part acts as
XYZ Euler angles: keep the angle components below about pi/4 (Sueda's gimbal-lock warning).

Both joints are given to the sympy derivation as their product of factors, so S and Sdot come
from the product rule on SE(3) (joints.symbolic.motion_subspace_factored): S is Lee and
Terzopoulos' recursion written out, derived automatically; the tests compare it with Sueda's
Alg. 3 (with the B~' erratum fixed) and Alg. 4 evaluated numerically.
"""
import math

import numpy as np
import sympy as sp

from . import charts
from .special import PosPart3
from .surfaces import _const_matrix, num
from .symbolic import Factor

COMPONENTS = ("x", "y", "z", "rx", "ry", "rz")


# ---- basis functions ---------------------------------------------------------------------------
def cumulative_basis(x):
    """beta(x): the cumulative cubic B-spline basis (module docstring), in sympy."""
    return (PosPart3(x) - 3 * PosPart3(x - 1) + 3 * PosPart3(x - 2) - PosPart3(x - 3)) / 6


def cardinal_basis(x):
    """N(x): the cardinal cubic B-spline on [0, 4], in sympy."""
    return (PosPart3(x) - 4 * PosPart3(x - 1) + 6 * PosPart3(x - 2) - 4 * PosPart3(x - 3)
            + PosPart3(x - 4)) / 6


# ---- SE(3) in numpy (constants of the joint) ---------------------------------------------------
def hat3(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def se3_exp(xi):
    """exp of a twist xi = (w, v) (angular first) as a 4x4 matrix."""
    xi = np.asarray(xi, dtype=float)
    w, v = xi[:3], xi[3:]
    th = float(np.linalg.norm(w))
    W = hat3(w)
    if th < 1e-12:
        R, V = np.eye(3) + W, np.eye(3) + W / 2
    else:
        A, B, C = math.sin(th) / th, (1 - math.cos(th)) / th ** 2, (th - math.sin(th)) / th ** 3
        R, V = np.eye(3) + A * W + B * W @ W, np.eye(3) + B * W + C * W @ W
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, V @ v
    return T


def so3_log(R):
    """The rotation vector of R (angle < pi). Below 0.1 rad the angle is atan2(sin, cos), sin th
    the length of the antisymmetric part's axial vector: acos of the trace loses half the digits
    of a small angle (1e-8 rad came out 0 or 1.5e-8)."""
    c = max(-1.0, min(1.0, (np.trace(R) - 1) / 2))
    th = math.acos(c)
    axial = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    if math.pi - th < 1e-6:
        raise ValueError("the rotation angle is pi: its logarithm is not unique")
    if th >= 0.1:
        return axial * th / math.sin(th)
    s = float(np.linalg.norm(axial))
    return axial * (math.atan2(s, c) / s) if s > 0 else axial      # th / sin th -> 1


def se3_log(T):
    """The twist (w, v) with exp = T (rotation angle < pi)."""
    w = so3_log(T[:3, :3])
    th = float(np.linalg.norm(w))
    W = hat3(w)
    # V^-1 = I - W/2 + k W^2, k = (1 - th sin th / (2 (1 - cos th))) / th^2; its series below
    # 1e-2 rad (the closed form cancels: at 1e-6 rad it was 1e-4 off, at 1e-8 a division by 0)
    if th < 1e-2:
        k = 1 / 12 + th ** 2 / 720 + th ** 4 / 30240
    else:
        k = (1 - th * math.sin(th) / (2 * (1 - math.cos(th)))) / th ** 2
    return np.concatenate([w, (np.eye(3) - W / 2 + k * W @ W) @ T[:3, 3]])


def frame_matrix(frame):
    """A control frame {xyz, rotation} as a 4x4 matrix."""
    T = np.eye(4)
    T[:3, :3] = np.asarray(frame["rotation"], dtype=float)
    T[:3, 3] = np.asarray(frame["xyz"], dtype=float)
    return T


def frame_differences(frames):
    """dC_i = log(C_{i-1}^-1 C_i), i = 1 .. n-1 (Sueda 2.74)."""
    C = [frame_matrix(f) for f in frames]
    return [se3_log(np.linalg.inv(C[i - 1]) @ C[i]) for i in range(1, len(C))]


# ---- the joints as products of factors ---------------------------------------------------------
def _exp_factor(xi, x):
    """Factor exp(xi * x) for a constant twist xi and a scalar expression x (Rodrigues)."""
    w, v = np.asarray(xi[:3], dtype=float), np.asarray(xi[3:], dtype=float)
    th = float(np.linalg.norm(w))
    vs = _const_matrix(v.reshape(3, 1))
    if th < 1e-12:
        return Factor(sp.eye(3), vs * x)
    K = hat3(w / th)
    K2 = K @ K
    phi = num(th) * x
    s, c = sp.sin(phi), sp.cos(phi)
    # 1 - cos phi as 2 sin^2(phi/2) for small turns: it is divided by th below, and its
    # rounding (1e-16) cost th = 1e-8 rad a 3e-9 m error
    versine = 2 * sp.sin(phi / 2) ** 2 if th < 1e-3 else 1 - c
    R = sp.eye(3) + s * _const_matrix(K) + versine * _const_matrix(K2)
    t = x * vs + versine * _const_matrix((K @ v / th).reshape(3, 1)) \
        + (x - s / num(th)) * _const_matrix((K2 @ v).reshape(3, 1))
    return Factor(R, t)


def curve_factors(params, q):
    """[C_0, exp(dC_1 beta(q + 2)), ..., exp(dC_{n-1} beta(q - n + 4))]."""
    frames = params.get("frames") or default_frames()
    C0 = frame_matrix(frames[0])
    factors = [Factor(_const_matrix(C0[:3, :3]), _const_matrix(C0[:3, 3:4]))]
    for i, xi in enumerate(frame_differences(frames), start=1):
        factors.append(_exp_factor(xi, cumulative_basis(q[0] - i + 3)))
    return factors


def default_frames():
    """Four frames along x, 1 m apart (a straight line): the curve joint's default."""
    return [{"xyz": (float(k), 0.0, 0.0),
             "rotation": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))}
            for k in range(4)]


def default_control():
    """A flat 4 x 4 grid: x = a, y = b (the plane z = 0)."""
    return {"x": [[float(a)] * 4 for a in range(4)],
            "y": [[float(b) for b in range(4)] for _ in range(4)]}


def surface_function(grid, u, v):
    """f(u, v) = sum_{a, b} C[a][b] N(u - a + 3) N(v - b + 3), grouped by rows."""
    total = sp.Integer(0)
    for a, row in enumerate(grid):
        inner = sum((num(c) * cardinal_basis(v - b + 3) for b, c in enumerate(row) if c != 0),
                    sp.Integer(0))
        if inner != 0:
            total += cardinal_basis(u - a + 3) * inner
    return total


def surface_factors(params, q):
    """[T(f1, f2, f3), Rx(f4), Ry(f5), Rz(f6)] = prod_k exp(e_k f_k(u, v)) (Sueda 2.78)."""
    control = params.get("control") or default_control()
    f = [surface_function(control[c], q[0], q[1]) if c in control else sp.Integer(0)
         for c in COMPONENTS]
    factors = [Factor(sp.eye(3), sp.Matrix(f[:3]))]
    for axis, angle in zip("XYZ", f[3:]):
        if angle != 0:
            factors.append(Factor(charts.elementary(axis, angle), sp.zeros(3, 1)))
    return factors


def grid_shape(params):
    control = params.get("control") or default_control()
    grid = next(iter(control.values()))
    return len(grid), len(grid[0])


def valid_ranges(jtype, params):
    """[(0, segments)] per coordinate: outside, S fades to 0 within 3 units (docs/joints.md)."""
    if jtype == "spline_curve":
        return [(0, len(params.get("frames") or default_frames()) - 3)]
    m, n = grid_shape(params)
    return [(0, m - 3), (0, n - 3)]


def coordinates(jtype, params):
    (low, high), *rest = valid_ranges(jtype, params)
    if jtype == "spline_curve":
        return [f"spline parameter s in [{low}, {high}] (segment floor(s), "
                f"{high + 3} control frames)"]
    return [f"spline parameter u in [{low}, {high}] ({high + 3} control rows)",
            f"spline parameter v in [{low}, {rest[0][1]}] ({rest[0][1] + 3} control columns)"]
