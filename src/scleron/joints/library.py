"""The joint library. Each joint is defined only by its coordinates q and its transform
Q(q) = (R(q), t(q)) (the motion part; the constant placement X_tree comes from the model).
S and Sdot are derived from Q by sympy (joints.symbolic), never typed in.

Joint models are cached by (type, parameters) and written in generic symbols, so a model with
100 identical hinges derives one hinge: generation stays linear in the number of bodies.
"""
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy as sp

from . import charts, custom, splines, surfaces
from ..program.algebra import FloatAlgebra
from .special import ExpA, ExpB, ExpC, numeric_namespace
from .symbolic import (EXPAND_MAX_TERMS, Evaluator, expansion_terms, light_entry, motion_subspace,
                       motion_subspace_factored, motion_subspace_rate, product_transform,
                       simplify_entry)

AXES = {"X": 0, "Y": 1, "Z": 2}


@dataclass
class JointModel:
    type: str
    params: dict
    q: tuple                         # sympy symbols, one per coordinate
    qd: tuple
    R: sp.Matrix                     # 3x3 rotation of Q(q)
    t: sp.Matrix                     # 3x1 translation of Q(q)
    coordinates: list                # what each coordinate means
    S: sp.Matrix = None              # 6 x d, derived
    Sdot: sp.Matrix = None           # 6 x d, derived
    Sdot_qd: sp.Matrix = None        # 6 x 1: Sdot * qd
    notes: str = ""
    light: bool = False              # derived on the light path (no expansion / trigsimp)
    _lambdas: dict = field(default_factory=dict, repr=False)

    @property
    def dof(self):
        return len(self.q)

    def derive(self, S=None, Sdot=None, simplify=simplify_entry, factors=None, simplify_twist=None):
        """S (S&G 9) and Sdot (S&G 12) from R, t; through the product rule when the transform
        is given as factors (joints.symbolic.motion_subspace_factored). `simplify` is applied
        to every entry (light_entry skips expansion and trigsimp for big joints),
        `simplify_twist` (default: simplify) to the factors' own twists."""
        self.light = simplify is light_entry
        twist = simplify_twist or simplify
        if S is None:
            S = (motion_subspace_factored(factors, self.q, simplify, twist) if factors is not None
                 else motion_subspace(self.R, self.t, self.q, simplify))
        self.S = S
        self.Sdot = Sdot if Sdot is not None else motion_subspace_rate(self.S, self.q, self.qd, simplify)
        def expand(e):                  # expanded where small (zeros and constants come out)
            if simplify is light_entry or expansion_terms(e) > EXPAND_MAX_TERMS:
                return e
            return sp.expand(e)
        self.Sdot_qd = sp.Matrix([expand(e) for e in self.Sdot * sp.Matrix(self.qd)]) \
            if self.q else sp.zeros(6, 1)
        return self

    def printable(self, what):
        """(replacements, matrix) for showing R, t, S, Sdot or G: ([], the matrix) for joints
        simplified entry by entry, and a common-subexpression form (sympy.cse: [(x0, e0), ...]
        and the matrix in x0, x1, ...) for joints derived on the light path, whose entries are
        DAGs that would print exponentially long as trees (spline joints, ellipsoid contacts)."""
        M = {"R": self.R, "t": self.t, "S": self.S, "Sdot": self.Sdot,
             "G": sp.Matrix(sp.BlockMatrix([[self.R, self.t], [sp.zeros(1, 3), sp.ones(1, 1)]]))}[what]
        if not self.light:
            return [], M
        reps, (reduced,) = sp.cse([M], symbols=sp.numbered_symbols("x"))
        return reps, reduced

    def kinematics(self, alg, q_vals, qd_vals):
        """R, t, S and Sdot*qd of this joint evaluated in an algebra (nested lists)."""
        env = dict(zip(self.q, q_vals))
        env.update(zip(self.qd, qd_vals))
        ev = Evaluator(alg, env)
        return ev.matrix(self.R), ev.vector(self.t), ev.matrix(self.S), ev.vector(self.Sdot_qd)

    def numeric(self, what, q, qd=None):
        """numpy value of R, t, S, Sdot or G (4x4) at q (and qd): for tests and tools."""
        exprs = {"R": self.R, "t": self.t, "S": self.S, "Sdot": self.Sdot,
                 "G": sp.Matrix(sp.BlockMatrix([[self.R, self.t], [sp.zeros(1, 3), sp.ones(1, 1)]]))}
        key = what
        qd = np.zeros(self.dof) if qd is None else qd
        if self.light:                  # big DAG-shaped entries: evaluate, do not print them
            ev = Evaluator(_FloatAlgebra, dict(zip(self.q + self.qd, list(map(float, q)) + list(map(float, qd)))))
            return np.array(ev.matrix(exprs[what]), dtype=float).reshape(exprs[what].shape)
        if key not in self._lambdas:
            mods = [numeric_namespace(), "numpy"]
            self._lambdas[key] = sp.lambdify(self.q + self.qd, exprs[what], modules=mods)
        return np.array(self._lambdas[key](*q, *qd), dtype=float)


_FloatAlgebra = FloatAlgebra()          # floats, for JointModel.numeric on the light path


def _symbols(d):
    return (sp.symbols(f"q1:{d + 1}", real=True) if d else (),
            sp.symbols(f"qd1:{d + 1}", real=True) if d else ())


def skew(v):
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def axis_rotation(axis, angle):
    """Rotation by angle about a unit axis; exact elementary rotations for (+-) frame axes."""
    a = [float(x) for x in axis]
    for k in range(3):
        if abs(abs(a[k]) - 1.0) < 1e-15 and all(abs(a[j]) < 1e-15 for j in range(3) if j != k):
            return charts.elementary("XYZ"[k], angle if a[k] > 0 else -angle)
    A = skew(a)
    return sp.eye(3) + sp.sin(angle) * A + (1 - sp.cos(angle)) * A * A


def _vec(axis):
    """Axis as a sympy column with exact 0/1/-1 where it is exactly that."""
    return sp.Matrix([sp.Integer(int(x)) if float(x).is_integer() else sp.Float(x) for x in axis])


def _plane_basis(normal):
    n = np.asarray(normal, dtype=float)
    if abs(n[2]) > 1 - 1e-15:
        e1 = np.array([1.0, 0, 0])
    else:
        e1 = np.cross([0, 0, 1.0], n)
        e1 /= np.linalg.norm(e1)
    return e1, np.cross(n, e1)


def _model(jtype, params, R_t, q, qd, coordinates, notes=""):
    R, t = R_t
    return JointModel(jtype, params, tuple(q), tuple(qd), R, t, coordinates, notes=notes).derive()


def _transform(jtype, p, q):
    """(R, t) of the joint as a function of its coordinate symbols q."""
    if jtype in ("revolute", "continuous"):
        return axis_rotation(p.get("axis", (0, 0, 1)), q[0]), sp.zeros(3, 1)
    if jtype == "prismatic":
        return sp.eye(3), _vec(p.get("axis", (0, 0, 1))) * q[0]
    if jtype == "helical":
        a = p.get("axis", (0, 0, 1))
        return axis_rotation(a, q[0]), _vec(a) * (sp.Float(p.get("pitch", 0.0)) * q[0])
    if jtype == "cylindrical":
        a = p.get("axis", (0, 0, 1))
        return axis_rotation(a, q[0]), _vec(a) * q[1]
    if jtype in ("planar", "free2d"):
        n = p.get("normal", (0, 0, 1))
        e1, e2 = _plane_basis(n)
        return axis_rotation(n, q[2]), _vec(e1) * q[0] + _vec(e2) * q[1]
    if jtype == "translational":
        return sp.eye(3), sp.Matrix(q[:3])
    if jtype == "universal":
        chart = p.get("chart", "XYZ")
        return charts.elementary(chart[0], q[0]) * charts.elementary(chart[1], q[1]), sp.zeros(3, 1)
    if jtype == "spherical":
        return charts.rotation(p.get("chart", "XYZ"), *q), sp.zeros(3, 1)
    if jtype == "ball_exp":
        x = q[0] ** 2 + q[1] ** 2 + q[2] ** 2
        K = skew(q)
        return sp.eye(3) + ExpA(x) * K + ExpB(x) * K * K, sp.zeros(3, 1)
    if jtype == "free":
        return charts.rotation(p.get("chart", "XYZ"), *q[3:]), sp.Matrix(q[:3])
    if jtype == "fixed":
        return sp.eye(3), sp.zeros(3, 1)
    if jtype == "custom":
        return custom.custom_transform(p, q)
    if jtype in FACTORED:
        return product_transform(FACTORED[jtype](p, q))
    if jtype == "composite":
        R, t, k = sp.eye(3), sp.zeros(3, 1), 0
        for part in p["parts"]:
            pp = part.get("params") or {}
            d = joint_model(part["type"], _freeze(pp)).dof
            Rk, tk = _transform(part["type"], pp, q[k:k + d])
            R, t, k = R * Rk, R * tk + t, k + d            # Sueda (2.53): Q = Q1 Q2 ...
        return R, t
    raise ValueError(f"unknown joint type {jtype}")


COORDINATES = {
    "revolute": ["angle about the axis (rad)"],
    "continuous": ["angle about the axis (rad)"],
    "prismatic": ["displacement along the axis (m)"],
    "helical": ["angle about the axis (rad); translation = pitch * angle"],
    "cylindrical": ["angle about the axis (rad)", "displacement along the axis (m)"],
    "planar": ["x in the plane (m)", "y in the plane (m)", "angle about the normal (rad)"],
    "free2d": ["x (m)", "y (m)", "angle about z (rad)"],
    "translational": ["x (m)", "y (m)", "z (m)"],
    "universal": ["angle about the first axis (rad)", "angle about the rotated second axis (rad)"],
    "spherical": ["Euler angle 1 (rad)", "Euler angle 2 (rad)", "Euler angle 3 (rad)"],
    "ball_exp": ["rotation vector x (rad)", "rotation vector y (rad)", "rotation vector z (rad)"],
    "free": ["x (m)", "y (m)", "z (m)", "Euler angle 1 (rad)", "Euler angle 2 (rad)",
             "Euler angle 3 (rad)"],
    "fixed": [],
}

DOF = {"revolute": 1, "continuous": 1, "prismatic": 1, "helical": 1, "cylindrical": 2,
       "planar": 3, "free2d": 3, "translational": 3, "universal": 2, "spherical": 3,
       "ball_exp": 3, "free": 6, "fixed": 0,
       # general joints: the number with default parameters; dof_of() gives the actual one
       "custom": 0, "surface_surface": 4, "surface_point": 2, "curve_point": 1,
       "spline_curve": 1, "spline_surface": 2}

# joints given to the derivation as a product of factors (joints.symbolic.Factor)
FACTORED = {
    "surface_surface": lambda p, q: _surface_surface_factors(p, q),
    "surface_point": lambda p, q: _moving_frame_factors(p, q, surfaces.surface_frame, "surface", 2),
    "curve_point": lambda p, q: _moving_frame_factors(p, q, surfaces.curve_frame, "curve", 1),
    "spline_curve": splines.curve_factors,
    "spline_surface": splines.surface_factors,
}
GENERAL = ("custom",) + tuple(FACTORED)


def _surface_surface_factors(p, q):
    """Q = F1(u1, v1) [Rz(spin)] Flip F2(u2, v2)^-1 (joints.surfaces)."""
    from .symbolic import Factor
    F1, p1 = surfaces.surface_frame(p.get("parent_surface") or surfaces.DEFAULT_SURFACE, q[0], q[1])
    F2, p2 = surfaces.surface_frame(p.get("child_surface") or surfaces.DEFAULT_SURFACE, q[2], q[3])
    out = [Factor(F1, p1)]
    if p.get("spin"):
        out.append(Factor(charts.elementary("Z", q[4]), sp.zeros(3, 1)))
    return out + [Factor(surfaces.FLIP, sp.zeros(3, 1)), Factor(F2, p2, inverse=True)]


def _moving_frame_factors(p, q, frame, key, d):
    """Q = (F(s), p(s)) [R_chart(angles)]: a point on a surface or curve (joints.surfaces)."""
    from .symbolic import Factor
    default = surfaces.DEFAULT_SURFACE if key == "surface" else surfaces.DEFAULT_CURVE
    F, pt = frame(p.get(key) or default, *q[:d])
    out = [Factor(F, pt)]
    if p.get("chart"):
        out.append(Factor(charts.rotation(p["chart"], *q[d:d + 3]), sp.zeros(3, 1)))
    return out


def dof_of(jtype, params):
    """Number of coordinates of a joint type with (thawed) parameters."""
    if jtype == "custom":
        return len(params.get("coordinates") or ())
    if jtype in ("surface_surface", "surface_point", "curve_point"):
        return surfaces.dof(jtype, params)
    return DOF[jtype]


def _uses_ellipsoid(p):
    return any(isinstance(v, dict) and v.get("shape") == "ellipsoid" for v in p.values())


def _simplifier(jtype, p):
    """Full local simplification (trigsimp) where it pays and finishes quickly; the light path
    for the spline joints and ellipsoid contacts (big entries; the program still shares them)."""
    if jtype in ("spline_curve", "spline_surface") or _uses_ellipsoid(p):
        return light_entry
    return simplify_entry


class _Frozen(tuple):
    """A frozen mapping: a tuple of sorted (key, value) pairs that thaws back to a dict (a plain
    tuple of pairs, e.g. a custom joint's [[z, "a"], [x, "b"]], thaws back to a list)."""


def _freeze(params):
    """A hashable key for joint parameters (the joint-model cache key)."""
    def fz(v):
        if isinstance(v, dict):
            return _Frozen(sorted((k, fz(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple, np.ndarray)):
            return tuple(fz(x) for x in v)
        if isinstance(v, np.generic):
            return v.item()
        return v
    return fz(params)


def _thaw(frozen):
    def th(v):
        if isinstance(v, _Frozen):
            return {k: th(x) for k, x in v}
        if isinstance(v, tuple):
            return [th(x) for x in v]
        return v
    if not frozen:
        return {}
    if isinstance(frozen, tuple) and not isinstance(frozen, _Frozen) and all(
            isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in frozen):
        return {k: th(x) for k, x in frozen}        # a key frozen elsewhere as plain pairs
    return th(frozen)


def joint_model(jtype, params=None):
    """The derived JointModel of a joint type with parameters (a dict), cached."""
    frozen = params if isinstance(params, tuple) else _freeze(params or {})
    return _joint_model_cached(jtype, frozen)


@lru_cache(maxsize=None)
def _joint_model_cached(jtype, frozen):
    p = _thaw(frozen)
    if not isinstance(p, dict):
        p = {}
    if jtype == "composite":
        d = sum(joint_model(part["type"], _freeze(part.get("params") or {})).dof for part in p["parts"])
        coords = []
        for part in p["parts"]:
            coords += COORDINATES[part["type"]]
    elif jtype in GENERAL:
        return _general(jtype, p)
    else:
        d = DOF[jtype]
        coords = list(COORDINATES[jtype])
    q, qd = _symbols(d)
    R, t = _transform(jtype, p, q)
    if jtype in ("spherical", "free"):
        chart = p.get("chart", "XYZ")
        coords = [c.replace("Euler angle", f"{chart} angle") for c in coords]
    if jtype == "ball_exp":
        # Body-frame S of exp coordinates: the right Jacobian (Sueda 2.47-2.52 / Liu (54)),
        # S_top = I - B(x)[q] + C(x)[q]^2; Sdot is derived from it by sympy (joints.symbolic).
        K = skew(q)
        x = q[0] ** 2 + q[1] ** 2 + q[2] ** 2
        S = sp.zeros(6, 3)
        S[:3, :] = sp.eye(3) - ExpB(x) * K + ExpC(x) * K * K
        return _ball_exp(jtype, p, (R, t), q, qd, coords, S)
    return _model(jtype, p, (R, t), q, qd, coords)


def _ball_exp(jtype, p, R_t, q, qd, coords, S):
    S = S.applyfunc(sp.expand)
    Sdot = sp.zeros(6, 3)
    for qk, qdk in zip(q, qd):
        Sdot += S.diff(qk) * qdk
    Sdot = Sdot.applyfunc(sp.expand)
    return JointModel(jtype, p, tuple(q), tuple(qd), R_t[0], R_t[1], coords,
                      notes="S is the closed-form right Jacobian of SO(3)").derive(S, Sdot)


def _general(jtype, p):
    """The general joints: custom (generic derivation) and the factored contact/spline joints."""
    d = dof_of(jtype, p)
    q, qd = _symbols(d)
    simplify = _simplifier(jtype, p)
    if jtype == "custom":
        # Q = T(t) R_1 R_2 ...: through the product rule when the rotation is a product
        from .symbolic import Factor
        t, Rs = custom.custom_factors(p, q)
        R, t = custom.custom_transform(p, q)
        coords = [f"{name} (custom coordinate)" for name in p.get("coordinates") or ()]
        jm = JointModel(jtype, p, tuple(q), tuple(qd), R, t, coords,
                        notes="transform read from the model file (whitelist parser)")
        if len(Rs) < 2:
            return jm.derive(simplify=simplify)
        factors = [Factor(sp.eye(3), t)] + [Factor(Rk, sp.zeros(3, 1)) for Rk in Rs]
        return jm.derive(simplify=simplify, factors=factors)
    factors = FACTORED[jtype](p, q)
    R, t = product_transform(factors)
    if jtype in ("spline_curve", "spline_surface"):
        coords = splines.coordinates(jtype, p)
        notes = "uniform cubic B-spline, evaluated branch-free over all segments"
    else:
        coords = surfaces.coordinates(jtype, p)
        notes = "contact frames of parametric surfaces / curves"
    jm = JointModel(jtype, p, tuple(q), tuple(qd), R, t, coords, notes=notes)
    # an ellipsoid's frame twists are worth simplifying (15 % fewer operations), its S and Sdot not
    twist = simplify_entry if _uses_ellipsoid(p) else simplify
    return jm.derive(simplify=simplify, factors=factors, simplify_twist=twist)
