"""The joint registry: every joint type a model may name, declared once.

A declaration (JointType) says everything scleron needs to know about a type:

- name, a one-line description (`doc`) and the parameter names a model may give;
- `dof`: the number of coordinates, a number or a function of the parameters (a custom joint
  has one coordinate per name; `spin` and `chart` add coordinates to the contact joints);
- `coordinates`: what each coordinate means, with its unit, a list or a function of the
  parameters (JointModel.coordinates, the generated documentation and `scleron show` read it);
- the motion Q(q) = (R(q), t(q)): `transform(params, q) -> (R, t)`, or `factors(params, q)`, a
  list of joints.symbolic.Factor whose product is Q (S then comes from the product rule), or
  both (the transform for R, t; the factors, where given, for S);
- `motion_subspace(q)`: a closed-form S where one is known (Sdot is then its derivative);
- how to simplify: `simplify(params)` and `simplify_twist(params)` give the entry simplifiers
  (joints.symbolic.simplify_entry, or light_entry for big DAG-shaped entries);
- whether it may be a part of a composite joint, whether it is one of the general scleronomic
  joints (docs/joints.md), and `notes` carried by its JointModel.

Everything else derives from REGISTRY: the joint library's joint_model (joints.library), the
model layer's JOINT_TYPES / GENERAL_TYPES / joint_dof (model.joint_types) and so the loaders'
and Model.check_joint's validation. Adding a joint type is one declaration here.

This module imports nothing above joints/ (no model, dynamics, program or backend code).
"""
import re
from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np
import sympy as sp

from . import charts, custom, opensim, splines, surfaces
from .charts import EULER_CHARTS, axis_rotation, skew
from .special import ExpA, ExpB, ExpC
from .symbolic import Factor, light_entry, simplify_entry, simplify_unchopped

__all__ = ["JointType", "REGISTRY", "EULER_CHARTS", "joint_type", "joint_dof", "coordinates_of",
           "coordinate_unit"]


@dataclass(frozen=True)
class JointType:
    """One joint type (module docstring)."""
    name: str
    doc: str
    params: tuple = ()
    dof: Union[int, Callable[[dict], int]] = 0
    coordinates: Union[list, Callable[[dict], list]] = ()
    transform: Optional[Callable] = None          # (params, q) -> (R 3x3, t 3x1)
    factors: Optional[Callable] = None            # (params, q) -> [Factor] (product Q), or None
    motion_subspace: Optional[Callable] = None    # q -> S (6 x d) in closed form
    simplify: Callable[[dict], Callable] = lambda p: simplify_entry
    simplify_twist: Optional[Callable[[dict], Callable]] = None    # default: simplify
    composite_part: bool = True                   # may be one of a composite joint's parts
    general: bool = False                         # a general scleronomic joint (docs/joints.md)
    notes: str = ""                               # carried by the derived JointModel
    nq: Optional[int] = None                      # configuration entries, when not dof
    configuration: str = "vector"                 # its space: "vector", "quaternion", "se3"
    neutral: Optional[tuple] = None               # the neutral q (default: zeros)
    configuration_entries: Optional[list] = None  # what each entry of q is, when nq != dof
    ranges: Optional[Callable[[dict], list]] = None   # (low, high) of each coordinate, where
                                                      # the joint is valid only there (splines)
    euler_angles: Optional[Callable[[dict], Optional[tuple]]] = None  # (first index in q, count,
                                                  # chart) of its Euler-chart angles, or None
    switch: str = ""                              # how a simulation leaves a singular chart:
                                                  # "euler" (another chart), "exp" (q -> q')

    def euler_angles_of(self, params):
        """(first index in q, number, chart) of the joint's Euler-chart angles, or None."""
        return None if self.euler_angles is None else self.euler_angles(params or {})

    def dof_of(self, params):
        """Number of (velocity) coordinates with these (normalised or plain dict) parameters."""
        return self.dof(params or {}) if callable(self.dof) else self.dof

    def nq_of(self, params):
        """Number of entries of the joint's q: dof, except for quaternion joints."""
        return self.dof_of(params) if self.nq is None else self.nq

    def neutral_of(self, params):
        """The joint's neutral configuration (q = 0, or the identity quaternion)."""
        return list(self.neutral) if self.neutral is not None else [0.0] * self.nq_of(params)

    @property
    def default_dof(self):
        """Number of coordinates with no parameters given (None where parameters are required)."""
        return self.dof_of({})

    def ranges_of(self, params):
        """(low, high) of each coordinate where the joint holds only there, or None (any q)."""
        return (None if self.ranges is None
                else [tuple(map(float, r)) for r in self.ranges(params or {})])

    def meanings(self, params):
        """One meaning (with unit) per coordinate."""
        out = self.coordinates(params or {}) if callable(self.coordinates) else self.coordinates
        return list(out)


REGISTRY = {}


def _declare(jt):
    if jt.name in REGISTRY:                     # pragma: no cover (a programming error)
        raise ValueError(f"joint type {jt.name!r} declared twice")
    if jt.transform is None and jt.factors is None:     # pragma: no cover
        raise ValueError(f"joint type {jt.name!r} has neither a transform nor factors")
    REGISTRY[jt.name] = jt
    return jt


def joint_type(name):
    """The declaration of a joint type; KeyError (naming the known types) for an unknown one."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise KeyError(f"unknown joint type {name!r} (known: {', '.join(REGISTRY)})") from None


def joint_dof(jtype, params):
    """Number of coordinates of a joint of this type and parameters."""
    return joint_type(jtype).dof_of(params)


def coordinates_of(jtype, params=None):
    """What each coordinate of a joint of this type and parameters means (with units)."""
    return joint_type(jtype).meanings(params)


def coordinate_unit(meaning):
    """The unit a coordinate's meaning (coordinates_of) gives it: "rad", "m" (the last of them
    written in parentheses), "1" for a spline parameter, or "" where it says none."""
    found = re.findall(r"\((rad|m)\)", meaning)
    return found[-1] if found else "1" if meaning.startswith("spline parameter") else ""


# ---- geometry shared by the transforms ----------------------------------------------------------
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


_Z = (0, 0, 1)


def _chart(p):
    return p.get("chart", "XYZ")


def _chart_angles(p):
    return [f"{_chart(p)} angle {k} (rad)" for k in (1, 2, 3)]


# ---- the lower pairs and the Euler-chart joints --------------------------------------------------
_declare(JointType(
    "fixed", "no motion (merged into the parent by the loaders)",
    dof=0, coordinates=[],
    transform=lambda p, q: (sp.eye(3), sp.zeros(3, 1)),
    composite_part=False))


def _revolute(p, q):
    return axis_rotation(p.get("axis", _Z), q[0]), sp.zeros(3, 1)


_declare(JointType(
    "revolute", "rotation about a fixed unit axis (default z)",
    params=("axis",), dof=1, coordinates=["angle about the axis (rad)"], transform=_revolute))

_declare(JointType(
    "continuous", "URDF's name for a revolute joint without limits: one coordinate, the angle",
    params=("axis",), dof=1, coordinates=["angle about the axis (rad)"], transform=_revolute))

_declare(JointType(
    "prismatic", "translation along a fixed unit axis (default z)",
    params=("axis",), dof=1, coordinates=["displacement along the axis (m)"],
    transform=lambda p, q: (sp.eye(3), _vec(p.get("axis", _Z)) * q[0])))


def _helical(p, q):
    a = p.get("axis", _Z)
    return axis_rotation(a, q[0]), _vec(a) * (sp.Float(p.get("pitch", 0.0)) * q[0])


_declare(JointType(
    "helical", "screw about an axis: translation = pitch * angle along it",
    params=("axis", "pitch"), dof=1,
    coordinates=["angle about the axis (rad); translation = pitch * angle"], transform=_helical))


def _cylindrical(p, q):
    a = p.get("axis", _Z)
    return axis_rotation(a, q[0]), _vec(a) * q[1]


_declare(JointType(
    "cylindrical", "rotation about and translation along one axis",
    params=("axis",), dof=2,
    coordinates=["angle about the axis (rad)", "displacement along the axis (m)"],
    transform=_cylindrical))


def _planar(p, q):
    n = p.get("normal", _Z)
    e1, e2 = _plane_basis(n)
    return axis_rotation(n, q[2]), _vec(e1) * q[0] + _vec(e2) * q[1]


_declare(JointType(
    "planar", "T(x, y, 0) R_normal(angle) in the plane with the given normal (default z)",
    params=("normal",), dof=3,
    coordinates=["x in the plane (m)", "y in the plane (m)", "angle about the normal (rad)"],
    transform=_planar))

_declare(JointType(
    "translational", "free translation (x, y, z) in the parent frame",
    dof=3, coordinates=["x (m)", "y (m)", "z (m)"],
    transform=lambda p, q: (sp.eye(3), sp.Matrix(q[:3]))))


def _universal(p, q):
    chart = _chart(p)
    return charts.elementary(chart[0], q[0]) * charts.elementary(chart[1], q[1]), sp.zeros(3, 1)


_declare(JointType(
    "universal", "R_A(q1) R_B(q2), the first two axes of an Euler chart (default XYZ: Sueda 2.43)",
    params=("chart",), dof=2,
    coordinates=["angle about the first axis (rad)", "angle about the rotated second axis (rad)"],
    transform=_universal, euler_angles=lambda p: (0, 2, _chart(p))))

_declare(JointType(
    "spherical", "a ball joint in one of the 12 Euler / Tait-Bryan charts (default XYZ)",
    params=("chart",), dof=3, coordinates=_chart_angles,
    transform=lambda p, q: (charts.rotation(_chart(p), *q), sp.zeros(3, 1)),
    euler_angles=lambda p: (0, 3, _chart(p)), switch="euler"))


def _ball_exp_rotation(p, q):
    x = q[0] ** 2 + q[1] ** 2 + q[2] ** 2
    K = skew(q)
    return sp.eye(3) + ExpA(x) * K + ExpB(x) * K * K, sp.zeros(3, 1)


def _ball_exp_S(q):
    """Body-frame S of exponential coordinates: the right Jacobian of SO(3) (Sueda 2.47-2.52,
    Liu (54)), S_top = I - B(x)[q] + C(x)[q]^2 with x = q.q."""
    K = skew(q)
    x = q[0] ** 2 + q[1] ** 2 + q[2] ** 2
    S = sp.zeros(6, 3)
    S[:3, :] = sp.eye(3) - ExpB(x) * K + ExpC(x) * K * K
    return S


_declare(JointType(
    "ball_exp", "a ball joint in exponential coordinates, R = exp([q])",
    dof=3,
    coordinates=["rotation vector x (rad)", "rotation vector y (rad)", "rotation vector z (rad)"],
    transform=_ball_exp_rotation, motion_subspace=_ball_exp_S,
    notes="S is the closed-form right Jacobian of SO(3)", switch="exp"))

_declare(JointType(
    "free", "T(x, y, z) R_chart(angles): the 3-D free joint (Sueda 2.62)",
    params=("chart",), dof=6,
    coordinates=lambda p: ["x (m)", "y (m)", "z (m)"] + _chart_angles(p),
    transform=lambda p, q: (charts.rotation(_chart(p), *q[3:]), sp.Matrix(q[:3])),
    euler_angles=lambda p: (3, 3, _chart(p)), switch="euler"))

_declare(JointType(
    "free2d", "T(x, y, 0) Rz(angle): the 2-D free joint (Sueda 2.60)",
    dof=3, coordinates=["x (m)", "y (m)", "angle about z (rad)"],
    transform=lambda p, q: _planar({}, q)))


# ---- quaternion joints: Pinocchio's layouts (nq > nv; joints.manifolds integrates them) ----------
def quaternion_rotation(x, y, z, w):
    """R of the quaternion w + (x, y, z), Eigen's toRotationMatrix formula (exact for unit
    quaternions; Pinocchio uses the same on whatever q holds)."""
    return sp.Matrix([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _free_flyer_S(q):
    """v = [linear; angular] of the body in its own frame (Pinocchio): the twist [w; v] = S v."""
    S = sp.zeros(6, 6)
    S[:3, 3:] = sp.eye(3)
    S[3:, :3] = sp.eye(3)
    return S


_QUATERNION = ["quaternion x", "quaternion y", "quaternion z", "quaternion w"]

_declare(JointType(
    "free_flyer", "the 3-D free joint with a quaternion, Pinocchio's layout: "
    "q = [x, y, z, qx, qy, qz, qw], v = [linear; angular velocity] in the body frame",
    dof=6, nq=7, configuration="se3", neutral=(0, 0, 0, 0, 0, 0, 1),
    coordinates=["linear velocity x, body frame (m/s)", "linear velocity y, body frame (m/s)",
                 "linear velocity z, body frame (m/s)", "angular velocity x, body frame (rad/s)",
                 "angular velocity y, body frame (rad/s)",
                 "angular velocity z, body frame (rad/s)"],
    configuration_entries=["x (m)", "y (m)", "z (m)"] + _QUATERNION,
    transform=lambda p, q: (quaternion_rotation(*q[3:7]), sp.Matrix(q[:3])),
    motion_subspace=_free_flyer_S, composite_part=False,
    notes="S is constant (a permutation); q holds a unit quaternion, integrate() keeps it one"))

_declare(JointType(
    "spherical_quat", "a ball joint with a quaternion, Pinocchio's layout: q = [qx, qy, qz, qw], "
    "v = angular velocity in the child frame",
    dof=3, nq=4, configuration="quaternion", neutral=(0, 0, 0, 1),
    coordinates=["angular velocity x, child frame (rad/s)",
                 "angular velocity y, child frame (rad/s)",
                 "angular velocity z, child frame (rad/s)"],
    configuration_entries=_QUATERNION,
    transform=lambda p, q: (quaternion_rotation(*q), sp.zeros(3, 1)),
    motion_subspace=lambda q: sp.Matrix(sp.BlockMatrix([[sp.eye(3)], [sp.zeros(3, 3)]])),
    composite_part=False,
    notes="S = [I3; 0] (the 3 x 3 identity over zeros) is constant; q holds a unit quaternion, "
          "integrate() keeps it one"))


# ---- composite joints: Q = Q1 Q2 ... (Sueda 2.53) ------------------------------------------------
def _parts(p):
    """(declaration, parameters) of each part of a composite joint."""
    return [(joint_type(part["type"]), part.get("params") or {}) for part in p.get("parts") or ()]


def _composite_dof(p):
    if "parts" not in p:
        return None                 # no default: a composite joint needs its parts
    return sum(jt.dof_of(pp) for jt, pp in _parts(p))


def _composite_coordinates(p):
    out = []
    for jt, pp in _parts(p):
        out += jt.meanings(pp)
    return out


def _composite(p, q):
    """Q = Q1 Q2 ... by definition. joints.library does not differentiate it: it derives R, t,
    S and Sdot part by part from the parts' own joint models (symbolic.composite_kinematics,
    linear in the parts); tests/test_composite_joints.py checks that against this product."""
    R, t, k = sp.eye(3), sp.zeros(3, 1), 0
    for jt, pp in _parts(p):
        d = jt.dof_of(pp)
        Rk, tk = jt.transform(pp, q[k:k + d])
        R, t, k = R * Rk, R * tk + t, k + d
    return R, t


_declare(JointType(
    "composite", "Q = Q1 Q2 ... of lower-pair and chart joints (Sueda 2.53), in the order given",
    params=("parts",), dof=_composite_dof, coordinates=_composite_coordinates,
    transform=_composite, composite_part=False))


# ---- the general scleronomic joints (docs/joints.md) ---------------------------------------------
def _custom_dof(p):
    names = p.get("coordinates")
    return len(names) if isinstance(names, (list, tuple)) else 0


def _custom_factors(p, q):
    """Q = T(t) R_1 R_2 ...: through the product rule when the rotation is a product."""
    t, Rs = custom.custom_factors(p, q)
    if len(Rs) < 2:
        return None
    return [Factor(sp.eye(3), t)] + [Factor(Rk, sp.zeros(3, 1)) for Rk in Rs]


_declare(JointType(
    "custom", "rotation and translation written as expressions of named coordinates",
    params=("coordinates", "constants", "rotation", "translation"),
    dof=_custom_dof,
    coordinates=lambda p: [f"{name} (custom coordinate)" for name in p.get("coordinates") or ()],
    transform=custom.custom_transform, factors=_custom_factors,
    composite_part=False, general=True,
    notes="transform read from the model file (whitelist parser)"))


def _uses_ellipsoid(p):
    return any(isinstance(v, dict) and v.get("shape") == "ellipsoid" for v in p.values())


def _contact_simplify(p):
    """Full local simplification (expansion, sin^2 + cos^2 = 1) where it finishes quickly; the
    light path for ellipsoids (big entries; the program still shares them)."""
    return light_entry if _uses_ellipsoid(p) else simplify_entry


def _contact_twist_simplify(p):
    """The factors' twists simplified; an ellipsoid's without chopping (its coefficients carry
    powers of the semi-axes, so a small one's real terms look like round-off)."""
    return simplify_unchopped if _uses_ellipsoid(p) else simplify_entry


def _surface_surface_factors(p, q):
    """Q = F1(u1, v1) [Rz(spin)] Flip F2(u2, v2)^-1 (joints.surfaces)."""
    F1, p1 = surfaces.surface_frame(p.get("parent_surface") or surfaces.DEFAULT_SURFACE, q[0], q[1])
    F2, p2 = surfaces.surface_frame(p.get("child_surface") or surfaces.DEFAULT_SURFACE, q[2], q[3])
    out = [Factor(F1, p1)]
    if p.get("spin"):
        out.append(Factor(charts.elementary("Z", q[4]), sp.zeros(3, 1)))
    return out + [Factor(surfaces.FLIP, sp.zeros(3, 1)), Factor(F2, p2, inverse=True)]


def _moving_frame_factors(frame, key, d):
    """Q = (F(s), p(s)) [R_chart(angles)]: a point on a surface or curve (joints.surfaces)."""
    default = surfaces.DEFAULT_SURFACE if key == "surface" else surfaces.DEFAULT_CURVE

    def factors(p, q):
        F, pt = frame(p.get(key) or default, *q[:d])
        out = [Factor(F, pt)]
        if p.get("chart"):
            out.append(Factor(charts.rotation(p["chart"], *q[d:d + 3]), sp.zeros(3, 1)))
        return out
    return factors


def _contact(name, doc, params, dof, factors, euler_angles=None):
    # an ellipsoid's frame twists are worth simplifying (15 % fewer operations), its S and Sdot not
    return _declare(JointType(
        name, doc, params=params, dof=dof,
        coordinates=lambda p: surfaces.coordinates(name, p),
        factors=factors, simplify=_contact_simplify, simplify_twist=_contact_twist_simplify,
        composite_part=False, general=True, euler_angles=euler_angles,
        notes="contact frames of parametric surfaces / curves"))


_contact("surface_surface", "rolling and sliding contact of two surfaces (u1, v1, u2, v2[, spin])",
         ("parent_surface", "child_surface", "spin"),
         lambda p: 5 if p.get("spin") else 4, _surface_surface_factors)
_contact("surface_point", "a point moving on the parent's surface (u, v[, 3 Euler angles])",
         ("surface", "chart"),
         lambda p: 2 + (3 if p.get("chart") else 0),
         _moving_frame_factors(surfaces.surface_frame, "surface", 2),
         lambda p: (2, 3, p["chart"]) if p.get("chart") else None)
_contact("curve_point", "a point moving along a curve (s[, 3 Euler angles])",
         ("curve", "chart"),
         lambda p: 1 + (3 if p.get("chart") else 0),
         _moving_frame_factors(surfaces.curve_frame, "curve", 1),
         lambda p: (1, 3, p["chart"]) if p.get("chart") else None)


def _spline(name, doc, params, dof, factors):
    return _declare(JointType(
        name, doc, params=params, dof=dof,
        coordinates=lambda p: splines.coordinates(name, p),
        ranges=lambda p: splines.valid_ranges(name, p),
        factors=factors, simplify=lambda p: light_entry,
        composite_part=False, general=True,
        notes="uniform cubic B-spline, evaluated branch-free over all segments"))


_spline("spline_curve", "a cubic B-spline of control frames (Sueda 2.5.12)",
        ("frames",), 1, splines.curve_factors)
_spline("spline_surface", "a bicubic spline of the 6 pose components (Sueda 2.5.13)",
        ("control",), 2, splines.surface_factors)


_declare(JointType(
    "opensim", "an OpenSim joint: translation sum f_k(q) a_k in the parent frame, then rotations "
    "R_a1(f1(q)) R_a2(f2(q)) R_a3(f3(q)) (CustomJoint's SpatialTransform; model.osim)",
    params=("coordinates", "ranges", "rotation", "translation", "ellipsoid"),
    dof=lambda p: len(p.get("coordinates") or ()), coordinates=opensim.coordinates,
    factors=opensim.factors, simplify=opensim.simplifier,
    composite_part=False, general=True,
    notes="functions of the coordinates: Constant, LinearFunction, PolynomialFunction, SimmSpline "
    "(branch-free over its segments), MultiplierFunction"))
