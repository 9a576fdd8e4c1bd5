"""Contact joints on parametric surfaces and curves (Si & Guenter section 5).

Every surface gives, for its two parameters (u, v), a point p(u, v) and an orthonormal frame
F(u, v) = [t_u  b  n] in the body that carries it:

    t_u   the unit u-tangent  dp/du / |dp/du|
    n     the unit outward normal
    b     n x t_u             (so that t_u x b = n: a right-handed frame)

written in closed form (no normalising sqrt for the sphere and the torus, whose u-tangent and
normal are unit by construction; two sqrt for the ellipsoid). A placement (xyz, rotation) puts
the surface in its body frame. The joints are then products of such frames (G = X_tree Q(q)):

  surface_surface  (u1, v1, u2, v2[, spin]): the point (u1, v1) of the parent's surface touches
                   the point (u2, v2) of the child's surface, the outward normals are opposite and
                   the u-tangents aligned, or turned by `spin` about the normal when it is a
                   coordinate:  Q = F1(u1, v1) Rz(spin) Flip F2(u2, v2)^-1,  Flip = diag(1, -1, -1)
                   (a half turn about t_u: it turns the normal around and keeps the u-tangent).
  surface_point    (u, v[, a1, a2, a3]): the child's origin on the parent's surface; the child frame
                   is the surface frame F(u, v), turned by three Euler angles of `chart` when given.
  curve_point      (s[, a1, a2, a3]): the child's origin on a parametric curve; the child frame is
                   the curve's Frenet frame [T N B] at s, turned by three Euler angles when given.

Surfaces (parameters u, v in radians):
  sphere     radius r:            p = r (cos v cos u, cos v sin u, sin v)
             (poles v = +-pi/2 singular)
  ellipsoid  semi_axes (a, b, c):  p = (a cos v cos u, b cos v sin u, c sin v) (same poles)
  torus      major R, minor a:    p = ((R + a cos v) cos u, (R + a cos v) sin u, a sin v)
             (u about the symmetry axis z, v around the tube; no singular points)
Curves (parameter s):
  circle     radius r:            p = (r cos s, r sin s, 0)
  helix      radius r, rise h:    p = (r cos s, r sin s, h s)  (h per radian)
"""
from fractions import Fraction

import numpy as np
import sympy as sp

from . import charts

FLIP = sp.diag(1, -1, -1)
DEFAULT_SURFACE = {"shape": "sphere", "radius": 1.0}
DEFAULT_CURVE = {"shape": "circle", "radius": 1.0}


def num(x):
    """A model number as an exact sympy number where it is a short fraction (0.25 -> 1/4), so
    that sympy simplifies cleanly; the double it denotes is unchanged."""
    x = float(x)
    if x.is_integer() and abs(x) < 2 ** 53:
        return sp.Integer(int(x))
    f = Fraction(x).limit_denominator(10 ** 6)
    if float(f) == x:
        return sp.Rational(f.numerator, f.denominator)
    return sp.Float(x)


def _const_matrix(M):
    """A constant (rotation) matrix from floats, with exact 0, +-1 where it is within 1e-15."""
    A = np.asarray(M, dtype=float)
    out = sp.zeros(*A.shape)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            x = A[i, j]
            for target in (0.0, 1.0, -1.0):
                if abs(x - target) <= 1e-15:
                    x = target
            out[i, j] = num(x)
    return out


def placement(spec):
    """(R, t) of a surface's placement in its body frame (identity unless given)."""
    R = _const_matrix(spec["rotation"]) if spec.get("rotation") is not None else sp.eye(3)
    t = (_const_matrix(np.reshape(spec["xyz"], (3, 1))) if spec.get("xyz") is not None
         else sp.zeros(3, 1))
    return R, t


def _unit_frame(tu, n):
    b = n.cross(tu)
    return sp.Matrix.hstack(tu, b, n)


def surface_frame(spec, u, v):
    """(F, p): the surface frame [t_u b n] and the point at (u, v), in the body frame."""
    shape = spec["shape"]
    cu, su, cv, sv = sp.cos(u), sp.sin(u), sp.cos(v), sp.sin(v)
    if shape == "sphere":
        r = num(spec["radius"])
        n = sp.Matrix([cv * cu, cv * su, sv])
        tu = sp.Matrix([-su, cu, 0])
        b = sp.Matrix([-sv * cu, -sv * su, cv])                 # = n x t_u
        F, p = sp.Matrix.hstack(tu, b, n), r * n
    elif shape == "torus":
        R, a = num(spec["major_radius"]), num(spec["minor_radius"])
        n = sp.Matrix([cv * cu, cv * su, sv])
        tu = sp.Matrix([-su, cu, 0])
        b = sp.Matrix([-sv * cu, -sv * su, cv])
        F = sp.Matrix.hstack(tu, b, n)
        p = sp.Matrix([(R + a * cv) * cu, (R + a * cv) * su, a * sv])
    elif shape == "ellipsoid":
        a, b_, c = (num(x) for x in spec["semi_axes"])
        p = sp.Matrix([a * cv * cu, b_ * cv * su, c * sv])
        tu = sp.Matrix([-a * su, b_ * cu, 0]) / sp.sqrt(a ** 2 * su ** 2 + b_ ** 2 * cu ** 2)
        m = sp.Matrix([b_ * c * cv * cu, a * c * cv * su, a * b_ * sv])
        n = m / sp.sqrt(sp.expand(m.dot(m)))
        F = _unit_frame(tu, n)
    else:
        raise ValueError(f"unknown surface shape {shape!r}")
    Rp, tp = placement(spec)
    return Rp * F, Rp * p + tp


def curve_frame(spec, s):
    """(F, p): the Frenet frame [T N B] and the point of a curve at s."""
    shape = spec["shape"]
    cs, ss = sp.cos(s), sp.sin(s)
    r = num(spec["radius"])
    if shape == "circle":
        F = sp.Matrix([[-ss, -cs, 0], [cs, -ss, 0], [0, 0, 1]])
        p = sp.Matrix([r * cs, r * ss, 0])
    elif shape == "helix":
        h = num(spec["rise"])
        L = sp.sqrt(r ** 2 + h ** 2)
        T = sp.Matrix([-r * ss, r * cs, h]) / L
        N = sp.Matrix([-cs, -ss, 0])
        B = sp.Matrix([h * ss, -h * cs, r]) / L
        F = sp.Matrix.hstack(T, N, B)
        p = sp.Matrix([r * cs, r * ss, h * s])
    else:
        raise ValueError(f"unknown curve shape {shape!r}")
    return F, p


def _expand(M):
    return M.applyfunc(sp.expand)


def surface_surface(params, q):
    """(R, t) of Q = F1 Rz(spin) Flip F2^-1 (module docstring)."""
    F1, p1 = surface_frame(params.get("parent_surface") or DEFAULT_SURFACE, q[0], q[1])
    F2, p2 = surface_frame(params.get("child_surface") or DEFAULT_SURFACE, q[2], q[3])
    A = F1 * charts.elementary("Z", q[4]) if params.get("spin") else F1
    R = A * FLIP * F2.T
    t = p1 - R * p2
    return _expand(R), _expand(t)


def surface_point(params, q):
    F, p = surface_frame(params.get("surface") or DEFAULT_SURFACE, q[0], q[1])
    if params.get("chart"):
        F = F * charts.rotation(params["chart"], *q[2:5])
    return _expand(F), _expand(p)


def curve_point(params, q):
    F, p = curve_frame(params.get("curve") or DEFAULT_CURVE, q[0])
    if params.get("chart"):
        F = F * charts.rotation(params["chart"], *q[1:4])
    return _expand(F), _expand(p)


def coordinates(jtype, params):
    chart = params.get("chart")
    euler = ([f"{chart} angle {k} of the child in the moving frame (rad)" for k in (1, 2, 3)]
             if chart else [])
    if jtype == "surface_surface":
        p = (params.get("parent_surface") or DEFAULT_SURFACE)["shape"]
        c = (params.get("child_surface") or DEFAULT_SURFACE)["shape"]
        out = [f"u1 on the parent's {p} (rad)", f"v1 on the parent's {p} (rad)",
               f"u2 on the child's {c} (rad)", f"v2 on the child's {c} (rad)"]
        return out + (["spin about the contact normal (rad)"] if params.get("spin") else [])
    if jtype == "surface_point":
        s = (params.get("surface") or DEFAULT_SURFACE)["shape"]
        return [f"u on the parent's {s} (rad)", f"v on the parent's {s} (rad)"] + euler
    if jtype == "curve_point":
        s = (params.get("curve") or DEFAULT_CURVE)["shape"]
        return [f"parameter s of the {s} (rad)"] + euler
    raise ValueError(jtype)
