"""The model: bodies, their parents, the joints that move them, inertias and gravity.

A Model is constant data (Pinocchio's "model", as opposed to per-call "data"). Joint i moves
body i relative to its parent; parents come before children (regular numbering, lambda(i) < i).
The body frame is the joint's successor frame: G_i(q) = X_tree,i * Q_i(q_i).
"""
import contextlib
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from . import params as P
from .load import MAX_BODIES
from .joint_types import (JOINT_TYPES, composite_part_problem, composite_part_types,
                          joint_configuration, joint_dof, joint_neutral, joint_nq,
                          joint_ranges)

# where a joint's q holds its quaternion [x, y, z, w] (Pinocchio's order), by configuration space
QUATERNION_AT = {"quaternion": 0, "se3": 3}
UNIT_TOLERANCE = 1e-2    # |q| this close to 1: a unit quaternion written to a few digits

WORLD = "world"


def _placement(origin, xyz, rpy, err):
    """The Transform of add_body's and add_frame's origin=, or of xyz, rpy (URDF convention);
    origin's rotation must be a proper rotation (a reflection or a scaled matrix made wrong
    energies without a word), its translation 3 finite numbers."""
    if origin is None:
        return Transform.from_xyz_rpy(
            P.vector(xyz if xyz is not None else (0, 0, 0), 3, "xyz", err),
            P.vector(rpy if rpy is not None else (0, 0, 0), 3, "rpy", err))
    if xyz is not None or rpy is not None:
        raise err("give origin (a Transform) or xyz and rpy, not both")
    if not isinstance(origin, Transform):
        raise err(f"origin must be a Transform (or give xyz, rpy), got {type(origin).__name__}")
    try:
        R = np.array(origin.rotation, dtype=float)
    except (TypeError, ValueError):
        raise err(f"origin's rotation must be a 3x3 matrix, got {origin.rotation!r}") from None
    if R.shape != (3, 3):
        raise err(f"origin's rotation must be a 3x3 matrix, got shape {R.shape}")
    if not np.all(np.isfinite(R)):
        raise err("origin must be finite")
    problem = P.rotation_problem(R, "origin's rotation")
    if problem:
        raise err(problem)
    if np.abs(R @ R.T - np.eye(3)).max() > 1e-12:      # rounded input: the nearest rotation
        u, _, vt = np.linalg.svd(R)
        R = u @ vt
    return Transform(R, P.vector(origin.translation, 3, "origin's translation", err))


def rotation_from_rpy(rpy):
    """URDF convention: R = Rz(yaw) Ry(pitch) Rx(roll) (fixed-axis roll, pitch, yaw)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def quaternion_matrix(w, x, y, z):
    """R of the quaternion w + (x, y, z), normalised (MuJoCo stores them w first, URDF 1.1's
    quat_xyzw w last)."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@dataclass
class Transform:
    """A rigid placement: a point maps as p_parent = rotation @ p_child + translation."""
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @classmethod
    def from_xyz_rpy(cls, xyz=(0, 0, 0), rpy=(0, 0, 0)):
        return cls(rotation_from_rpy(rpy), np.array(xyz, dtype=float))

    def compose(self, other):
        """self * other."""
        return Transform(self.rotation @ other.rotation,
                         self.rotation @ other.translation + self.translation)

    def inverse(self):
        return Transform(self.rotation.T, -self.rotation.T @ self.translation)

    def is_identity(self, tol=0.0):
        return (np.abs(self.rotation - np.eye(3)).max() <= tol
                and np.abs(self.translation).max() <= tol)


@dataclass
class Inertia:
    """Mass, centre of mass (body frame) and rotational inertia about the centre of mass (body
    axes)."""
    mass: float
    com: np.ndarray
    inertia: np.ndarray

    def spatial(self):
        """S&G (5): J = [[I_c - m[c]^2, m[c]], [-m[c], m 1]], angular first, about the body
        origin."""
        m, c = self.mass, np.asarray(self.com, dtype=float)
        cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        J = np.zeros((6, 6))
        J[:3, :3] = self.inertia - m * cx @ cx
        J[:3, 3:] = m * cx
        J[3:, :3] = -m * cx
        J[3:, 3:] = m * np.eye(3)
        return J

    def transformed(self, X):
        """The same inertia expressed in a frame F where the body frame sits at X
        (p_F = R p + t)."""
        return Inertia(self.mass, X.rotation @ self.com + X.translation,
                       X.rotation @ self.inertia @ X.rotation.T)

    def __add__(self, other):
        """Combine two inertias given in the same frame (parallel axis theorem)."""
        m = self.mass + other.mass
        if m <= 0:
            return Inertia(0.0, np.zeros(3), np.zeros((3, 3)))
        c = (self.mass * self.com + other.mass * other.com) / m

        def shifted(part):
            d = part.com - c
            return part.inertia + part.mass * (d @ d * np.eye(3) - np.outer(d, d))
        return Inertia(m, c, shifted(self) + shifted(other))


@dataclass
class Joint:
    """Joint moving `child` relative to `parent`: G = origin * Q(q).

    stiffness, damping, rest (Sueda 2.6): per-coordinate tuples or None; the joint then adds the
    passive force tau_p = -K (q - rest) - D qd (K, D diagonal), so M qdd + h = tau with h
    including -tau_p and tau the actuator force alone. armature (per coordinate, >= 0) adds
    diag(armature) to the mass matrix, as MuJoCo's joint armature (a rotor's reflected inertia).
    """
    name: str
    type: str
    parent: str
    child: str
    origin: Transform = field(default_factory=Transform)
    params: dict = field(default_factory=dict)
    stiffness: tuple = None
    damping: tuple = None
    rest: tuple = None
    mimic: tuple = None          # (joint name, multiplier, offset): q = multiplier q_joint + offset
    armature: tuple = None       # per coordinate: rotor inertia added to M's diagonal (MuJoCo's)

    @property
    def dof(self):
        """Velocity coordinates (the joint's nv)."""
        return joint_dof(self.type, self.params)

    @property
    def nq(self):
        """Entries of its configuration q (dof, except for quaternion joints)."""
        return joint_nq(self.type, self.params)

    @property
    def has_spring(self):
        return any(x is not None for x in (self.stiffness, self.damping, self.armature))


@dataclass
class Body:
    """A rigid body; `wrench` is a constant external wrench [n; f] in the body frame (at the
    body origin), acting besides gravity (S&G 21: f_e), or None."""
    name: str
    inertia: Inertia
    wrench: tuple = None


@dataclass
class Frame:
    """A named frame fixed to a body (or to the world): its placement in the body's frame. Every
    body is a frame of its own name at the identity; a model adds others with add_frame (URDF:
    the links merged away by fixed joints, YAML: a body's `frames`)."""
    name: str
    body: str                # a body name, or WORLD
    origin: Transform = field(default_factory=Transform)


# The inertia checks (docs/inertia-checks.md). Rounding: INERTIA_RTOL of the body's scale (its
# largest principal moment, or m |c|^2 where that is larger), but at least INERTIA_ATOL kg m^2.
# URDF and CAD exports print moments to a few digits and leave noise where a moment is zero
# (icub's r_hip_2 has ixx = iyy = -5.42101e-20). A triangle inequality violated by at most
# TRIANGLE_HAIR of the largest moment (printed digits of a flat plate) is accepted with a warning.
INERTIA_RTOL = 1e-9
INERTIA_ATOL = 1e-15
TRIANGLE_HAIR = 1e-3
INERTIA_CHECKS = ("physical", "relaxed")
RELAX_HINT = ("load it with inertia='relaxed' (scleron.load_model(path, inertia='relaxed'); "
              "the commands' --inertia relaxed) to accept this inertia, as Pinocchio does, with a "
              "warning (the model's other checks still apply)")
# a model built in Python; a YAML file (scleron's own format, written for scleron) gets no hint
MODEL_RELAX_HINT = ("set model.inertia_checks = 'relaxed' first to accept this inertia, as "
                    "Pinocchio does, with a warning (the model's other checks still apply)")


class InertiaWarning(UserWarning):
    """An inertia that is suspicious but harmless to the dynamics (docs/inertia-checks.md)."""


def inertia_problems(inertia):
    """The reasons no rigid body can have this (finite, mass >= 0) inertia, beyond rounding, as
    (kind, text, relative size) with kind "negative" (a principal moment below 0: the spatial
    inertia is indefinite), "triangle" (the largest moment exceeds the sum of the others: no
    mass distribution has it) or "massless" (rotational inertia without mass)."""
    m = float(inertia.mass)
    with np.errstate(all="ignore"):
        ev = [float(x) for x in np.linalg.eigvalsh(0.5 * inertia.inertia + 0.5 * inertia.inertia.T)]
    r = math.hypot(*(float(x) for x in inertia.com))
    reach = m * r * r if m else 0.0
    big = max(abs(x) for x in ev)
    tol = max(INERTIA_RTOL * max(big, reach), INERTIA_ATOL)
    shown = "[" + ", ".join(f"{x:.6g}" for x in ev) + "]"
    out = []
    if ev[0] < -tol:
        out.append(("negative", f"inertia matrix is not positive semi-definite: principal moment "
                    f"{ev[0]:.6g} is negative (eigenvalues {shown}): not positive definite, not "
                    "even semi-definite", -ev[0] / big))
    excess = ev[2] - ev[0] - ev[1]
    if excess > tol:
        out.append(("triangle", f"principal moments {shown} violate the triangle inequality (the "
                    f"largest, {ev[2]:.6g}, exceeds the sum of the other two by "
                    f"{100 * excess / ev[2]:.3g} % of itself)", excess / ev[2]))
    if m == 0 and ev[2] > tol:
        out.append(("massless", f"mass must be positive for a body with rotational inertia "
                    f"(principal moments {shown}), got 0", 1.0))
    return out


def _shown_number(x):
    """x for a message: an int too long to print (over 4300 digits Python refuses) by its size."""
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 120:
        return f"an integer of {int(x.bit_length() * math.log10(2)) + 1} digits"
    return repr(x)


def _finite(x):
    """math.isfinite, and False for an int too large for a float (10**400 raised OverflowError)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _has_inertia(inertia):
    """Whether an Inertia has any mass or rotational inertia."""
    return bool(inertia.mass != 0 or np.any(np.asarray(inertia.inertia) != 0))


def check_inertia(inertia, err, relaxed=False, hint=RELAX_HINT):
    """A body's inertia is physically possible: finite mass >= 0, finite centre of mass, rotational
    inertia (about the centre of mass) finite, symmetric, positive semi-definite and its principal
    moments obeying the triangle inequality, each up to rounding (INERTIA_RTOL of the largest).
    A triangle inequality violated by a hair (TRIANGLE_HAIR) warns (InertiaWarning) instead;
    relaxed=True turns every problem of inertia_problems into a warning (finiteness and a
    negative mass stay errors). Warnings carry err's source and element.

    Semi-definite, not definite: a point mass (mass > 0, no rotational inertia, e.g. icub's
    r_hip_1) or a thin rod is a valid body (Pinocchio accepts them), and so is a massless body
    without inertia (a URDF link without <inertial>). Rotational inertia without mass is not.
    Whether the whole model has a regular mass matrix is Model.validate's question (a joint
    must move something with mass) and, at generation, dynamics.checks.check_nonsingular's.
    """
    m = inertia.mass
    if not (isinstance(m, (int, float, np.integer, np.floating)) and not isinstance(m, bool)
            and _finite(m)):
        raise err(f"mass must be a finite number, got {_shown_number(m)}")
    if m < 0:
        raise err(f"mass must be positive (or 0 for a massless body without inertia), got {m!r}")
    I = np.asarray(inertia.inertia, dtype=float)
    if I.shape != (3, 3):
        raise err("inertia must be a finite 3x3 matrix")
    if not np.all(np.isfinite(I)):
        raise err("inertia must be a finite 3x3 matrix: its entries in the body's frame are not "
                  "(inf or nan in the model, or moments so large that the arithmetic overflowed "
                  "double precision: rescale the model's units)")
    if not np.all(np.isfinite(np.asarray(inertia.com, dtype=float))):
        raise err("centre of mass must be finite")
    if np.abs(I - I.T).max() > 1e-9 * max(1.0, np.abs(I).max()):
        raise err("inertia matrix is not symmetric")
    # Python floats from here: sums and squares near 1e308 become inf, not numpy warnings
    with np.errstate(all="ignore"):     # moments near 1e308 overflow: refused just below
        ev = [float(x) for x in np.linalg.eigvalsh(0.5 * I + 0.5 * I.T)]
    if not all(math.isfinite(x) for x in ev):
        raise err(f"the inertia's principal moments overflow double precision (entries up to "
                  f"{np.abs(I).max():.3g}); rescale the model's units")
    r = math.hypot(*(float(x) for x in inertia.com))
    reach = float(m) * r * r if m else 0.0          # m |c|^2 (r ** 2 would raise OverflowError)
    if not math.isfinite(max(ev) + reach):
        raise err(f"the inertia about the body origin overflows double precision (mass {m:.3g} kg, "
                  f"centre of mass {r:.3g} m from the origin, principal moments up to "
                  f"{max(ev):.3g}); rescale the model's units")
    for kind, text, size in inertia_problems(Inertia(float(m), inertia.com, I)):
        if relaxed or (kind == "triangle" and size <= TRIANGLE_HAIR):
            why = "accepted (inertia='relaxed')" if relaxed else \
                f"accepted: by at most {TRIANGLE_HAIR:g}, the rounding of printed digits"
            warnings.warn(f"{err(text)}; {why}", InertiaWarning, stacklevel=3)
            continue
        raise err(f"{text}; {hint}" if hint else text)


def massless_subtrees(model):
    """(joint index, body names) for every moving joint whose subtree (its body and all the
    bodies beyond it) has neither mass nor rotational inertia: such a joint moves nothing, its
    row and column of the mass matrix are zero. Parents first; a massless subtree's inner
    joints are not listed again."""
    n = len(model.bodies)
    index = {b.name: i for i, b in enumerate(model.bodies)}
    children = [[] for _ in range(n)]
    for i, j in enumerate(model.joints):
        if j.parent in index:
            children[index[j.parent]].append(i)
    empty = [False] * n
    for i in reversed(range(n)):                 # children come after their parents
        I = model.bodies[i].inertia
        empty[i] = (I.mass == 0 and np.abs(np.asarray(I.inertia, dtype=float)).max() <= INERTIA_ATOL
                    and all(empty[c] for c in children[i]))
    out = []
    for i, j in enumerate(model.joints):
        p = index.get(j.parent)
        if empty[i] and j.dof > 0 and not (p is not None and empty[p] and model.joints[p].dof > 0):
            names, stack = [], [i]
            while stack:
                k = stack.pop()
                names.append(model.bodies[k].name)
                stack.extend(reversed(children[k]))
            out.append((i, names))
    return out


# A name's longest: YAML's reader refuses longer as it reads; a URDF's 2-million-character link
# name gave 100 MB of sources (it is in every comment, docstring and table of names)
NAME_LENGTH = 200


def _printable(name, what, err):
    """A name of at most NAME_LENGTH printable characters: no newline, tab, escape or direction
    mark (a URDF's &#10; or &#x202E; in a link's name forged and reordered the lines `scleron
    show` prints; YAML refuses them as it reads)."""
    if len(name) > NAME_LENGTH:
        raise err(f"{what} must be at most {NAME_LENGTH} characters, got {len(name)} "
                  f"({name[:40]!r}...)")
    if not name.isprintable():
        raise err(f"{what} must be printable characters (no newline, tab, control character or "
                  f"direction mark), got {name!r}")


class Model:
    """A tree of rigid bodies. Build it with add_body(), or load a file with
    scleron.load_model()."""

    def __init__(self, name="model", gravity=(0.0, 0.0, -9.81), source=None):
        self.name = name
        self.source = source
        try:
            self.gravity = np.array(gravity, dtype=float).reshape(3)
        except (TypeError, ValueError):
            raise ModelError(f"gravity must be 3 numbers, got {gravity!r}", source=source) from None
        if not np.all(np.isfinite(self.gravity)):
            raise ModelError(f"gravity must be finite, got {self.gravity.tolist()}", source=source)
        self.bodies = []          # Body, in regular order (parents first)
        self.joints = []          # joints[i] moves bodies[i]
        self.frames = []          # Frame: the frames besides the bodies' own (frame_list)
        self.q0 = None            # optional initial state
        self.qd0 = None
        self.inertia_checks = "physical"   # or "relaxed": docs/inertia-checks.md
        self.included = []        # files the model file pulled in (an MJCF's <include>s and meshes)
        self.joint_lines = {}     # joint name -> its line in the model file (for later errors)
        self.joint_bodies = {}    # joint name -> the file's body it moves, where the joint's own
                                  # body is not it (an MJCF body with several joints)

    # ---- builder ---------------------------------------------------------------------------
    def _relax_hint(self):
        """How to accept an inertia the checks refuse: by the loader's option for a URDF, MJCF
        or OpenSim file, by inertia_checks for a body added in Python (a YAML file's own bodies
        are refused by its loader, with no cure: the file is to be corrected)."""
        if self.source is None or str(self.source).lower().endswith((".yaml", ".yml")):
            return MODEL_RELAX_HINT     # (the YAML loader's own check, first, gives none)
        return RELAX_HINT

    @contextlib.contextmanager
    def _each_warning_once(self):
        """Passes on the warnings of the checks inside, each text once per model: a loaded model
        is validated by its loader and again by build_sources (`codegen --inertia relaxed`
        printed every accepted inertia twice)."""
        said = self.__dict__.setdefault("_said", set())
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                yield
        finally:                # (passed on when a later check refuses, too)
            for w in caught:
                if (w.category, str(w.message)) not in said:
                    said.add((w.category, str(w.message)))
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)

    def _err(self, element, body=None, joint=None):
        if len(element) > NAME_LENGTH:          # (a name over the limit, in the error it gets)
            element = element[:NAME_LENGTH // 2] + "...'"
        return lambda problem: ModelError(problem, source=self.source, element=element, body=body,
                                          joint=joint)

    def add_body(self, name, parent=WORLD, *, joint="revolute", joint_name=None, mass=1.0,
                 com=(0, 0, 0), inertia=((1, 0, 0), (0, 1, 0), (0, 0, 1)), origin=None,
                 xyz=None, rpy=None, allow_massless=False, stiffness=None, damping=None,
                 rest=None, wrench=None, armature=None, **params):
        """Add a body hanging from `parent` on a joint of type `joint` placed at `origin`.

        `origin` is a Transform, or give xyz and rpy (URDF convention). Joint parameters
        (axis, chart, pitch, normal, parts; coordinates, rotation, translation, constants of a
        custom joint; parent_surface, child_surface, spin, surface, curve, frames, control of the
        contact and spline joints: docs/joints.md) are keyword arguments. stiffness, damping
        (>= 0) and rest are one number or one per coordinate (Sueda 2.6), so is armature (>= 0,
        added to the mass matrix diagonal as MuJoCo's joint armature); wrench is a constant
        external wrench [nx, ny, nz, fx, fy, fz] on the body, in its frame. Returns the Body.
        A body may be a point mass (no rotational inertia) or massless without inertia (children
        may still be added to it); validate() rejects a joint that moves nothing with mass.
        allow_massless is accepted for compatibility and no longer needed.
        """
        err = self._err(f"body '{name}'", body=name)
        if not isinstance(name, str) or not name:
            raise err("body name must be a non-empty string")
        _printable(name, "body name", err)
        if name == WORLD:
            raise err(f"the name '{WORLD}' is reserved for the fixed base")
        if name in self._names("bodies"):
            raise err("two bodies have this name")
        if any(f.name == name for f in self.frames):
            raise err("a frame has this name")
        if parent != WORLD and (not isinstance(parent, str) or parent not in self._names("bodies")):
            raise err(f"parent '{parent}' does not exist (parents must be added before children)")
        try:
            inertia_mat = (np.array(inertia, dtype=float) if np.size(inertia) == 9
                           else np.diag(P.vector(inertia, 3, "inertia", err)))
        except ModelError:
            raise
        except (TypeError, ValueError):
            raise err(f"inertia must be 3 numbers (diagonal) or a 3x3 matrix, "
                      f"got {inertia!r}") from None
        body = Body(name, Inertia(mass, P.vector(com, 3, "com", err),
                                  inertia_mat.reshape(3, 3)))
        with self._each_warning_once():     # (validate() checks it again: one warning)
            check_inertia(body.inertia, err, relaxed=self.inertia_checks == "relaxed",
                          hint=self._relax_hint())
        if wrench is not None:
            body.wrench = P.wrench(wrench, err)
        origin = _placement(origin, xyz, rpy, err)
        if joint_name is not None and (not isinstance(joint_name, str) or not joint_name):
            raise err(f"joint_name must be a non-empty string, got {joint_name!r}")
        if joint_name is not None:
            _printable(joint_name, "joint name",
                       self._err(f"joint '{joint_name}'", joint=joint_name))
        jname = joint_name or f"{name}_joint"
        if jname in self._names("joints"):
            raise self._err(f"joint '{jname}'", joint=jname)("two joints have this name")
        j = Joint(jname, joint, parent, name, origin, dict(params), stiffness, damping, rest,
                  armature=armature)
        self.check_joint(j)
        self._names("bodies").add(name)     # sets first, then lists: the cache stays in step
        self._names("joints").add(jname)
        self.bodies.append(body)
        self.joints.append(j)
        return body

    def add_frame(self, name, body, *, origin=None, xyz=None, rpy=None):
        """Add a frame fixed to `body` (a body name, or "world"), placed at `origin` (a Transform)
        or at xyz, rpy (URDF convention) in the body's frame. Returns the Frame."""
        err = self._err(f"frame '{name}'")
        if not isinstance(name, str) or not name:
            raise err("frame name must be a non-empty string")
        _printable(name, "frame name", err)
        if name in self.frame_names():
            raise err("a body or another frame has this name")
        if name == WORLD and body != WORLD:
            raise err(f"the name '{WORLD}' is reserved for the fixed base (a frame on it may "
                      "take it)")
        if body != WORLD and body not in self._names("bodies"):
            raise err(f"body '{body}' does not exist (add the body before its frames)")
        frame = Frame(name, body, _placement(origin, xyz, rpy, err))
        self.frames.append(frame)
        return frame

    def frame_list(self):
        """Every frame: the world's extra frames, then each body's own frame (its name, at the
        identity) followed by the extra frames on it, in body order; a body welded by a fixed
        joint and its frames come with the body it is welded to (the world, or a moving body),
        as in the model merged_fixed makes, so that both list the frames in one order."""
        on = {}
        for f in self.frames:
            on.setdefault(f.body, []).append(f)
        out = list(on.get(WORLD, []))
        for b in self.bodies:
            out.append(Frame(b.name, b.name, Transform()))
            out += on.get(b.name, [])
        home = self.welded_homes()
        group = {name: k for k, name in enumerate([WORLD] + [b.name for b in self.bodies])}
        return sorted(out, key=lambda f: group[home.get(f.body, WORLD)])     # stable

    def welded_homes(self):
        """The moving body (or WORLD) each body is part of: itself, or for a body on a fixed
        joint its parent's (parents come first)."""
        home = {WORLD: WORLD}
        for b, j in zip(self.bodies, self.joints):
            home[b.name] = home.get(j.parent, WORLD) if j.type == "fixed" else b.name
        return home

    def frame_names(self):
        return [f.name for f in self.frame_list()]

    def _names(self, attr):
        """The set of names in self.bodies or self.joints, kept between add_body calls so that
        building a model of n bodies takes O(n), not O(n^2); rebuilt whenever the list was
        replaced or changed length outside add_body."""
        items = getattr(self, attr)
        cache = self.__dict__.setdefault("_name_cache", {})
        entry = cache.get(attr)
        if entry is None or entry[0] is not items or len(entry[1]) != len(items):
            entry = (items, {x.name for x in items})
            cache[attr] = entry
        return entry[1]

    def check_joint(self, j):
        err = self._err(f"joint '{j.name}'", joint=j.name)
        if j.type not in JOINT_TYPES:
            raise err(f"unknown joint type '{j.type}' (known: {', '.join(sorted(JOINT_TYPES))})")
        allowed = JOINT_TYPES[j.type][1]
        for key in j.params:
            if key not in allowed:
                raise err(f"unknown parameter '{key}' for a {j.type} joint"
                          + (f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""))
        self._check_general(j, err)
        for key in ("axis", "normal"):
            if key in j.params:
                j.params[key] = P.axis(j.params[key], key, err)
        if j.type == "helical" and "pitch" not in j.params:
            raise err("a helical joint needs 'pitch', its translation per radian along the axis "
                      "(pitch 0 is a revolute joint)")
        if "pitch" in j.params:
            j.params["pitch"] = P.number(j.params["pitch"], "pitch", err)
        if "chart" in j.params:
            j.params["chart"] = P.chart(j.params["chart"], err)
        if j.type == "composite":
            parts = j.params.get("parts")
            if not isinstance(parts, (list, tuple)) or not parts:
                raise err("a composite joint needs a non-empty list 'parts'")
            checked = []                    # new dicts: the caller's parts stay as given
            for k, part in enumerate(parts):
                if not isinstance(part, dict) or "type" not in part:
                    raise err(f"part {k} must be a mapping with a 'type'")
                given = self._part_parameters(part, k, err)
                sub = Joint(f"{j.name}.part{k}", part["type"], j.parent, j.child, Transform(),
                            given)
                problem = composite_part_problem(sub.type)
                if problem:
                    raise err(f"part {k}: {problem}")
                self.check_joint(sub)
                checked.append({"type": sub.type, "params": sub.params})
            j.params["parts"] = checked
            if j.dof > 6:
                raise err(f"a composite joint has at most 6 coordinates, its parts have {j.dof}: "
                          f"its S is 6 x {j.dof}, so the columns are dependent and the mass matrix "
                          "singular")
        if (not np.all(np.isfinite(j.origin.rotation))
                or not np.all(np.isfinite(j.origin.translation))):
            raise err("origin must be finite")
        P.spring(j, err)

    @staticmethod
    def _part_parameters(part, k, err):
        """A composite part's parameters: beside its type, as YAML writes them ({"type":
        "revolute", "axis": ...}), or under "params" (as model_to_dict writes them); a key no
        joint of its type takes is refused (they were dropped without a word)."""
        ptype = part["type"]
        if not isinstance(ptype, str) or ptype not in JOINT_TYPES:
            raise err(f"part {k}: unknown joint type {ptype!r} (parts: "
                      f"{', '.join(composite_part_types())})")
        beside = {key: v for key, v in part.items() if key not in ("type", "params")}
        if "params" in part and beside:
            raise err(f"part {k}: give its parameters beside 'type' or under 'params', not both "
                      f"({', '.join(map(str, beside))} beside 'params')")
        if "params" in part and not isinstance(part["params"], dict):
            raise err(f"part {k}: params must be a mapping of its parameters, got "
                      f"{type(part['params']).__name__}")
        given = dict(part["params"]) if "params" in part else beside
        unknown = sorted(map(str, set(given) - JOINT_TYPES[ptype][1]))
        if unknown:
            known = ", ".join(sorted(JOINT_TYPES[ptype][1])) or "none"
            raise err(f"part {k}: a {ptype} part takes no parameter {', '.join(unknown)} "
                      f"(it takes: {known})")
        return given

    @staticmethod
    def _check_general(j, err):
        """Parameters of the custom, contact and spline joints (model.params), normalised."""
        p = j.params
        if j.type == "custom":
            if "coordinates" not in p:
                raise err("a custom joint needs 'coordinates', a list of coordinate names")
            j.params = p = P.custom(p, err)
        for key in ("parent_surface", "child_surface", "surface"):
            if key in p:
                p[key] = P.surface(p[key], key, err)
        if "curve" in p:
            p["curve"] = P.curve(p["curve"], "curve", err)
        if "spin" in p:
            p["spin"] = P.boolean(p["spin"], "spin", err)
        if "frames" in p:
            p["frames"] = P.frames(p["frames"], err)
        if "control" in p:
            p["control"] = P.control(p["control"], err)
        if j.type == "spline_curve" and "frames" not in p:
            raise err("a spline_curve joint needs 'frames', a list of at least 4 control frames")
        if j.type == "spline_surface" and "control" not in p:
            raise err("a spline_surface joint needs 'control', grids of control values")

    # ---- queries ---------------------------------------------------------------------------
    @property
    def body_names(self):
        return [b.name for b in self.bodies]

    def parent_index(self, i):
        """Index of the parent body of body i, or -1 for the world."""
        p = self.joints[i].parent
        return -1 if p == WORLD else self.body_names.index(p)

    @property
    def nq(self):
        """Entries of the configuration q (a mimic joint has none of its own: docs/mimic.md)."""
        return sum(j.nq for j in self.joints if j.mimic is None)

    @property
    def nv(self):
        """Velocity coordinates: entries of qd, qdd, tau."""
        return sum(j.dof for j in self.joints if j.mimic is None)

    def coordinate_names(self, velocities=False):
        """A name per entry of q (of qd with velocities=True): the joint's, with [k] for a joint
        of several; a mimic joint has none of its own (the generated module's coordinate_names)."""
        return [name for j in self.joints for name in _joint_coordinate_names(j, velocities)]

    def neutral(self):
        """The neutral configuration (nq,): zeros, with identity quaternions (Pinocchio's)."""
        out = []
        for j in self.joints:
            if j.mimic is None:
                out += joint_neutral(j.type, j.params)
        return np.array(out, dtype=float)

    def quaternions(self):
        """[(joint name, k)]: the quaternion joints, each with the index in q of its
        [x, y, z, w]."""
        out, k = [], 0
        for j in self.joints:
            if j.mimic is not None:
                continue
            at = QUATERNION_AT.get(joint_configuration(j.type))
            if at is not None:
                out.append((j.name, k + at))
            k += j.nq
        return out

    def unit_quaternions(self, q, error=ModelError):
        """q (nq,) with each joint's quaternion [x, y, z, w] normalised (0.7071 written for cos
        45 degrees is fine); raises error(message) where one is not within UNIT_TOLERANCE of
        unit length: zeros are no rotation at all."""
        q = np.array(q, dtype=float)
        for name, k in self.quaternions():
            part = slice(k, k + 4)
            norm = float(np.linalg.norm(q[part]))
            if not abs(norm - 1.0) <= UNIT_TOLERANCE:
                raise error(f"joint '{name}': its quaternion [x, y, z, w] = {q[part].tolist()} "
                            f"has length {norm:.6g}, not 1 (within {UNIT_TOLERANCE:g}: it is then "
                            "normalised; the identity is [0, 0, 0, 1])")
            q[part] /= norm
        return q

    def merged_fixed(self):
        """A copy without fixed joints: each fixed child is merged into its parent body.

        The child's inertia is moved into the parent's frame and summed; the child's children
        hang from the parent with their placement composed with the fixed joint's origin.
        A fixed joint to the world makes the body part of the world and drops it.
        """
        out = Model(self.name, self.gravity, self.source)
        out.q0, out.qd0 = self.q0, self.qd0
        out.inertia_checks = self.inertia_checks
        out._said = self.__dict__.setdefault("_said", set())    # (_each_warning_once: shared)
        massive = {}                    # body -> the bodies with inertia merged into it
        out.included = list(getattr(self, "included", []))
        out.joint_lines = dict(getattr(self, "joint_lines", {}))
        out.joint_bodies = dict(getattr(self, "joint_bodies", {}))
        # where each original body now lives: (new body name or WORLD, placement in it)
        home = {WORLD: (WORLD, Transform())}
        for body, j in zip(self.bodies, self.joints):
            parent_home, parent_X = (WORLD, Transform()) if j.parent == WORLD else home[j.parent]
            X = parent_X.compose(j.origin)
            if j.type == "fixed":
                home[body.name] = (parent_home, X)     # the link stays a frame (below)
                if parent_home != WORLD:
                    target = next(b for b in out.bodies if b.name == parent_home)
                    target.inertia = target.inertia + body.inertia.transformed(X)
                    massive[parent_home] += [body.name] if _has_inertia(body.inertia) else []
                    if body.wrench is not None:      # the welded body's wrench, in the parent frame
                        moved = _wrench_to_parent(X, body.wrench)
                        target.wrench = moved if target.wrench is None else \
                            tuple(float(a + b) for a, b in zip(target.wrench, moved))
                continue
            out.bodies.append(Body(body.name, Inertia(body.inertia.mass, body.inertia.com.copy(),
                                                      body.inertia.inertia.copy()), body.wrench))
            out.joints.append(Joint(j.name, j.type, parent_home, j.child, X, dict(j.params),
                                    j.stiffness, j.damping, j.rest, mimic=j.mimic,
                                    armature=j.armature))
            home[body.name] = (body.name, Transform())
            massive[body.name] = ([getattr(self, "inertia_sources", {}).get(body.name, body.name)]
                                  if _has_inertia(body.inertia) else [])
        # a massless body that took one welded body's inertia (an OpenSim body off its joint's
        # frame) is named by that body in validate's messages, as when it was added
        out.inertia_sources = {n: m[0] for n, m in massive.items() if len(m) == 1 and m[0] != n}
        moving = {b.name for b in out.bodies}
        for f in self.frame_list():           # declared and welded frames move with their body,
            if f.name not in moving:          # in the model's order (frame_names stays the same)
                where, X = home[f.body]
                out.frames.append(Frame(f.name, where, X.compose(f.origin)))
        return out

    def validate(self):
        """Checks a finished model: at least one moving body, every inertia physically possible
        (check_inertia), every moving joint moves something with mass or inertia (else the mass
        matrix is singular; the error names the joint and the top body of what it moves), at
        most MAX_BODIES moving bodies (README, Limits: what larger models cost)."""
        if not self.bodies:
            raise ModelError("the model has no moving bodies: every body is welded to the world (a "
                             "free object moves on a free_flyer joint: --floating on a URDF, "
                             "load_model(..., floating=True); a freejoint in MJCF)",
                             source=self.source)
        if len(self.bodies) > MAX_BODIES:
            raise ModelError(f"{len(self.bodies)} moving bodies is more than the limit of "
                             f"{MAX_BODIES} (generation and compile time grow with the bodies: "
                             "README, Limits)", source=self.source)
        if self.inertia_checks not in INERTIA_CHECKS:
            raise ModelError(f"inertia checks must be one of {INERTIA_CHECKS}, got "
                             f"{self.inertia_checks!r}", source=self.source)
        with self._each_warning_once():
            for b in self.bodies:
                name = getattr(self, "inertia_sources", {}).get(b.name, b.name)
                check_inertia(b.inertia, self._err(f"body '{name}'", body=name),
                              relaxed=self.inertia_checks == "relaxed", hint=self._relax_hint())
        self._validate_tree()
        for j in self.joints:               # (a joint changed after add_body: checked again)
            self.check_joint(j)
        self._validate_mimic()
        coupled = {j.mimic[0] for j in self.joints if j.mimic is not None}
        for i, names in massless_subtrees(self):
            j, body = self.joints[i], self.bodies[i].name
            if j.mimic is not None or j.name in coupled:    # its coordinate moves others too:
                continue                                    # checks.check_nonsingular decides
            beyond = f"body '{body}'" if len(names) == 1 else \
                (f"body '{body}' and the {len(names) - 1} bod{'y' if len(names) == 2 else 'ies'} "
                 "beyond it")
            raise self._err(f"body '{body}'", body=body, joint=j.name)(
                f"joint '{j.name}' moves nothing with mass: {beyond} "
                f"{'has' if len(names) == 1 else 'have'} no mass and no inertia, so the mass "
                "matrix is singular (a body's mass must be positive unless other bodies with mass "
                "hang from it)")
        if not np.all(np.isfinite(self.gravity)):
            raise ModelError("gravity must be finite", source=self.source)
        self._validate_frames()
        self._validate_coordinate_names()
        self._validate_initial_state()
        return self

    def _validate_tree(self):
        """Bodies and joints still in step after changes made outside add_body: one joint per
        body, names unique, each parent the world or a body listed before its child."""
        seen, joints = set(), set()
        if len(self.joints) != len(self.bodies):
            raise ModelError(f"{len(self.bodies)} bodies but {len(self.joints)} joints: add bodies "
                             "with add_body (one joint each)", source=self.source)
        for b, j in zip(self.bodies, self.joints):
            err = self._err(f"body '{b.name}'", body=b.name, joint=j.name)
            if j.child != b.name:
                raise err(f"its joint '{j.name}' moves '{j.child}' (a body or joint renamed after "
                          "add_body?)")
            if b.name in seen or b.name == WORLD:
                raise err("two bodies have this name" if b.name in seen else "the name is reserved")
            if j.parent != WORLD and j.parent not in seen:
                raise err(f"its parent '{j.parent}' is not a body listed before it")
            if j.name in joints:
                raise self._err(f"joint '{j.name}'", joint=j.name)("two joints have this name")
            seen.add(b.name)
            joints.add(j.name)

    def _validate_coordinate_names(self):
        """Every entry of q and of qd has its own name (a spherical joint 'arm' names its
        coordinates 'arm[0]'.., which a revolute joint named 'arm[0]' would repeat)."""
        for velocities in (False, True):
            owner = {}
            for j in self.joints:
                for name in _joint_coordinate_names(j, velocities):
                    if owner.setdefault(name, j.name) != j.name:
                        raise self._err(f"joint '{j.name}'", body=j.child, joint=j.name)(
                            f"its coordinate '{name}' has the name of a coordinate of joint "
                            f"'{owner[name]}' (a joint of several coordinates names them "
                            "'<joint>[k]'): rename one of the two joints")

    def _validate_initial_state(self):
        """q0 (nq numbers, unit quaternions) and qd0 (nv) where set: a Python model's were not
        checked (5 entries for nq = 3 passed; 2 were reported as a singular joint)."""
        for attr, size, n in (("q0", "nq", self.nq), ("qd0", "nv", self.nv)):
            value = getattr(self, attr)
            if value is None:
                continue
            err = lambda problem: ModelError(problem, source=self.source)
            shape = np.shape(value)
            if isinstance(value, (str, bytes)):
                raise err(f"{attr} must be {n} numbers ({size}), got the text {value!r}")
            if len(shape) != 1 or shape[0] != n:
                got = f"{shape[0]} numbers" if len(shape) == 1 else \
                    ("a single number" if not shape else f"an array of shape {shape}")
                raise err(f"{attr} must be {n} numbers ({size}), got {got}")
            P.vector(value, n, attr, err)          # numbers (no strings, booleans), finite
        if self.q0 is not None:
            self.unit_quaternions(self.q0, lambda problem: ModelError(f"q0: {problem}",
                                                                      source=self.source))
            self._validate_initial_ranges()

    def _validate_initial_ranges(self):
        """q0 inside the range of each joint that holds only there (a spline's parameter): one
        outside was called a singularity of the joint's coordinates, or taken silently."""
        k, names = 0, self.coordinate_names()
        for j in self.joints:
            if j.mimic is not None:             # no coordinates of its own
                continue
            for i, (low, high) in enumerate(joint_ranges(j.type, j.params) or []):
                value = float(self.q0[k + i])
                if not low <= value <= high:
                    raise self._err(f"joint '{j.name}'", body=j.child, joint=j.name)(
                        f"the initial value of its coordinate {names[k + i]} is {value:g}, "
                        f"outside [{low:g}, {high:g}], where the {j.type} joint is defined "
                        "(its control frames span that range)")
            k += j.nq

    def _validate_mimic(self):
        """A mimic joint (docs/mimic.md) has one coordinate, follows a joint of the model with one
        coordinate that mimics no other, and carries no spring of its own."""
        joints = {j.name: j for j in self.joints}
        for j in self.joints:
            if j.mimic is None:
                continue
            err = self._err(f"joint '{j.name}'", joint=j.name)
            name, a, b = j.mimic
            if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (a, b)):
                raise err(f"mimic multiplier and offset must be finite numbers, got {a!r}, {b!r}")
            if j.dof != 1 or j.nq != 1:
                raise err(f"a {j.type} joint cannot mimic: only joints of one coordinate can")
            if j.has_spring:
                raise err("a mimic joint has no coordinate of its own: no stiffness, damping or "
                          "armature")
            p = joints.get(name)
            if p is None:
                raise err(f"it mimics joint '{name}', which the model does not have (as a moving "
                          "joint: a fixed joint has no coordinate to follow)")
            if p.mimic is not None:
                raise err(f"it mimics joint '{name}', which itself mimics '{p.mimic[0]}'")
            if p.dof != 1 or p.nq != 1:
                raise err(f"it mimics the {p.type} joint '{name}': only a joint of one coordinate "
                          "can be mimicked")

    def _validate_frames(self):
        seen = set()
        bodies = set(self.body_names)
        for f in self.frame_list():
            err = self._err(f"frame '{f.name}'")
            if f.name in seen:
                raise err("two frames (bodies included) have this name")
            seen.add(f.name)
            if f.body != WORLD and f.body not in bodies:
                raise err(f"its body '{f.body}' does not exist")

    def __repr__(self):
        return f"Model({self.name!r}, {len(self.bodies)} bodies, nq={self.nq})"


def _joint_coordinate_names(j, velocities=False):
    """The names of joint j's entries of q (of qd with velocities=True): the joint's, with [k]
    for a joint of several; none for a mimic joint."""
    n = 0 if j.mimic is not None else j.dof if velocities else j.nq
    return [j.name] if n == 1 else [f"{j.name}[{k}]" for k in range(n)]


def _wrench_to_parent(X, w):
    """A wrench [n; f] given in a frame placed at X, expressed in X's parent frame."""
    R, t = np.asarray(X.rotation), np.asarray(X.translation)
    n, f = R @ np.asarray(w[:3], dtype=float), R @ np.asarray(w[3:], dtype=float)
    return tuple(float(x) for x in np.concatenate([n + np.cross(t, f), f]))


def model_to_dict(model):
    """A canonical, JSON-able description of everything in a model that affects its dynamics
    (part of the code cache key; not its initial state, recorded beside the code). Springs,
    dampers and wrenches appear only where present, so models without them keep the
    description (and generated-code hash) they had before."""
    def arr(x):
        return [float(v) for v in np.asarray(x, dtype=float).reshape(-1)]

    def params(p):
        if isinstance(p, dict):
            return {k: params(v) for k, v in sorted(p.items())}
        if isinstance(p, (list, tuple, np.ndarray)):
            return [params(v) for v in p]
        return p
    def body(b, j):
        d = {"name": b.name, "mass": float(b.inertia.mass), "com": arr(b.inertia.com),
             "inertia": arr(b.inertia.inertia),
             "joint": {"name": j.name, "type": j.type, "parent": j.parent,
                       "R": arr(j.origin.rotation), "t": arr(j.origin.translation),
                       "params": params(j.params)}}
        for key in ("stiffness", "damping", "rest", "armature"):
            if getattr(j, key, None) is not None:
                d["joint"][key] = arr(getattr(j, key))
        if getattr(j, "mimic", None) is not None:
            d["joint"]["mimic"] = [j.mimic[0], float(j.mimic[1]), float(j.mimic[2])]
        if getattr(b, "wrench", None) is not None:
            d["wrench"] = arr(b.wrench)
        return d
    out = {
        "name": model.name,
        "gravity": arr(model.gravity),
        "bodies": [body(b, j) for b, j in zip(model.bodies, model.joints)],
    }
    if getattr(model, "frames", None):
        out["frames"] = [{"name": f.name, "body": f.body, "R": arr(f.origin.rotation),
                          "t": arr(f.origin.translation)} for f in model.frames]
    return out
