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

from . import charts
from .special import GUARDED, ExpA, ExpB, ExpC
from .symbolic import Evaluator, motion_subspace, motion_subspace_rate

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
    _lambdas: dict = field(default_factory=dict, repr=False)

    @property
    def dof(self):
        return len(self.q)

    def derive(self, S=None, Sdot=None):
        self.S = S if S is not None else motion_subspace(self.R, self.t, self.q)
        self.Sdot = Sdot if Sdot is not None else motion_subspace_rate(self.S, self.q, self.qd)
        self.Sdot_qd = sp.Matrix([sp.expand(e) for e in self.Sdot * sp.Matrix(self.qd)]) \
            if self.q else sp.zeros(6, 1)
        return self

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
        if key not in self._lambdas:
            mods = [{c.__name__: c.numeric for c in GUARDED.values()}, "numpy"]
            self._lambdas[key] = sp.lambdify(self.q + self.qd, exprs[what], modules=mods)
        qd = np.zeros(self.dof) if qd is None else qd
        return np.array(self._lambdas[key](*q, *qd), dtype=float)


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
       "ball_exp": 3, "free": 6, "fixed": 0}


def _freeze(params):
    def fz(v):
        if isinstance(v, dict):
            return tuple(sorted((k, fz(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple, np.ndarray)):
            return tuple(fz(x) for x in v)
        return v
    return fz(params)


def _thaw(frozen):
    def th(v):
        if isinstance(v, tuple) and v and all(isinstance(x, tuple) and len(x) == 2
                                                and isinstance(x[0], str) for x in v):
            return {k: th(x) for k, x in v}
        if isinstance(v, tuple):
            return [th(x) for x in v]
        return v
    return th(frozen) if frozen else {}


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
