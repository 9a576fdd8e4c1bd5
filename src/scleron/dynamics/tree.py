"""The kinematic tree the recursions walk: for each body its parent, its constant placement,
its joint model (q, Q(q), S, Sdot from the joint library), its spatial inertia and the slice
of q it owns. Built from a Model; constant per model (per-call data lives in the recursions).

A model with mimic joints (docs/mimic.md) gives a coupled Tree: `full` is the tree with a
coordinate per joint (Pinocchio's "extended" layout), `coupling` the constant map from the
independent coordinates to the full ones (q_full = G q + b, qd_full = G qd), and `bodies`, nq, nv
the independent joints' only. The recursions run on `full` between recursions.expand and
recursions.reduce; a plain tree has coupling None and full = itself.
"""
from dataclasses import dataclass, replace
import math

import numpy as np

from ..errors import ModelError, close_names, name_list, short_name
from ..joints import joint_model
from ..joints.registry import joint_type
from . import body_frames


def derived_joint(j, source=None):
    """The joint's derived model (joints.joint_model); parameters so extreme that the derivation
    overflows double precision (an ellipsoid of semi-axes 1e200 and 1e-200) are a ModelError
    naming the joint, not an internal OverflowError."""
    try:
        return joint_model(j.type, j.params)
    except (OverflowError, ZeroDivisionError) as exc:
        raise ModelError(f"its parameters overflow double precision where its motion is derived "
                         f"({exc}): bring them to a moderate range of values", source=source,
                         element=f"joint '{j.name}' ({j.type})", joint=j.name) from None
    except RecursionError:
        raise ModelError("its motion is nested too deeply for sympy to derive (maximum recursion "
                         "depth exceeded): give it fewer terms", source=source,
                         element=f"joint '{j.name}' ({j.type})", joint=j.name) from None


@dataclass
class TreeBody:
    index: int
    name: str
    joint_name: str
    parent: int                  # -1: the world
    placement: tuple             # (R, t) as nested float lists; None when identity
    joint: object                # JointModel
    inertia: list                # 6x6 floats, S&G (5)
    v_start: int                 # first index of its velocity coordinates in qd, qdd, tau
    dof: int                     # nv of the joint
    q_start: int                 # first index of its configuration in q
    nq: int                      # entries of q (a quaternion joint: nq > dof)
    children: list
    stiffness: list = None       # per coordinate (Sueda 2.6), None: no spring
    damping: list = None         # per coordinate, None: no damper
    rest: list = None            # spring rest coordinates (default 0)
    wrench: list = None          # constant external wrench [n; f] in the body frame (S&G 21)
    armature: list = None        # per coordinate, added to M's diagonal; None: none
    linear_armature: list = None  # the armature of linear velocity coordinates in the moving
                                 # body's frame (an se3 joint: the free flyer), whose rotor
                                 # momentum A v turns with the body: None where none
    turn_after: list = None      # a constant rotation about a revolute joint's axis that follows
                                 # its motion, Q(q) Rot(u, c) = Q(q + c); None: none (body_frames)


@dataclass
class TreeFrame:
    name: str
    body: int                    # -1: fixed to the world
    placement: tuple             # (R, t) in the body's frame; None when identity


@dataclass
class Coupling:
    """q_full[k] = a q[r] + b for (r, a, b) = q_map[k]; qd_full[k] = a qd[r] for (r, a) = v_map[k]:
    the constant G (one nonzero per row) and offset b of a model with mimic joints."""
    q_map: list
    v_map: list


class Tree:
    def __init__(self, model, frames=None, *, wrench_frames=None, coupled=True, turn_frames=True):
        """frames: the names of the frames the frame functions cover, in that order (default:
        every frame of the model, Model.frame_list); wrench_frames: those of the external
        wrenches fext's rows (default: frames). coupled=False ignores mimic joints (the full
        tree of a coupled model). turn_frames=False keeps every body in its model frame
        (body_frames; the results are the same)."""
        if any(j.type == "fixed" for j in model.joints):
            # a Model built in Python keeps its fixed joints; the loaders merge them. Merged here
            # too: a body welded to the world is part of the world, outside the centre of mass
            # and the potential energy, as from a file (and Pinocchio's). The frames keep their
            # order (Model.frame_list)
            model = model.merged_fixed()
        self.coupling, self.full = None, self
        self.name = model.name
        self.source = getattr(model, "source", None)      # the model file, for error messages
        self.gravity = [float(x) for x in model.gravity]
        self.bodies = []
        k = kq = 0
        self.rotation_snap = tol = rotation_snap(model)
        self.length_snap = length = length_snap(model)
        for i, (body, j) in enumerate(zip(model.bodies, model.joints)):
            jm = derived_joint(j, getattr(model, "source", None))
            X = j.origin
            placement = None
            if not X.is_identity(tol=0.0):
                placement = constant_placement(X, tol, length)
            tb = TreeBody(i, body.name, j.name, model.parent_index(i), placement,
                          jm, spatial_inertia(body.inertia), k, jm.dof, kq, jm.nq, [])
            tb.stiffness = _floats(getattr(j, "stiffness", None), jm.dof)
            tb.damping = _floats(getattr(j, "damping", None), jm.dof)
            tb.rest = _floats(getattr(j, "rest", None), jm.dof) or [0.0] * jm.dof
            armature = _floats(getattr(j, "armature", None), jm.dof)
            tb.armature = armature if armature is not None and any(armature) else None
            if (tb.armature is not None and joint_type(j.type).configuration == "se3"
                    and any(armature[:3])):
                tb.linear_armature = armature[:3]
            wrench = getattr(body, "wrench", None)
            tb.wrench = [float(x) for x in wrench] if wrench is not None and any(wrench) else None
            self.bodies.append(tb)
            k += jm.dof
            kq += jm.nq
        for b in self.bodies:
            if b.parent >= 0:
                self.bodies[b.parent].children.append(b.index)
        self.nv = k
        self.nq = kq
        # the bodies' frames turned about their joints' axes where that folds entries away
        # (body_frames); the user-facing frames keep the model's, re-expressed
        self.body_turns = (body_frames.choose_turns(self.bodies, length) if turn_frames else
                           [np.eye(3) for _ in self.bodies])
        self.body_slides = (body_frames.choose_slides(self.bodies, self.body_turns, length)
                            if turn_frames else [np.zeros(3) for _ in self.bodies])
        # (the turned placements snap no more than the model's own: rotation_snap)
        self.turned_snap = min(body_frames.TURNED, tol)
        body_frames.turn_bodies(self.bodies, self.body_turns, self.body_slides, self.turned_snap,
                                length)
        if turn_frames:
            body_frames.offset_motions(self.bodies, self.turned_snap, length)
        self.frames = self._turned(select_frames(model, frames, tol=tol, length=length))
        self.wrench_frames = (self.frames if wrench_frames is None else
                              self._turned(select_frames(model, wrench_frames,
                                                        "wrench_frames (--wrench-frames)", tol,
                                                        length)))
        if coupled and any(getattr(j, "mimic", None) is not None for j in model.joints):
            self._couple(model, frames, wrench_frames, turn_frames)
            return
        self.neutral = ([float(x) for x in model.neutral()] if hasattr(model, "neutral")
                        else [0.0] * kq)
        self.quaternions = ([k for _, k in model.quaternions()] if hasattr(model, "quaternions")
                            else [])

    def _turned(self, frames):
        """The model's frames with their placements in the turned body frames (body_frames)."""
        return [f if f.body < 0 else
                replace(f, placement=body_frames.turn_frame(f.placement, self.body_turns[f.body],
                                                            self.body_slides[f.body],
                                                            self.turned_snap, self.length_snap))
                for f in frames]

    def _couple(self, model, frames, wrench_frames, turn_frames):
        """Become the coupled tree of a model with mimic joints: the independent joints' bodies
        (their coordinates renumbered), the full tree and the Coupling between them."""
        self.full = Tree(model, frames, wrench_frames=wrench_frames, coupled=False,
                         turn_frames=turn_frames)
        index = {j.name: i for i, j in enumerate(model.joints) if j.mimic is None}
        own, k, kq = {}, 0, 0
        for b in self.full.bodies:
            if b.joint_name in index:
                own[b.joint_name] = replace(b, v_start=k, q_start=kq, children=[])
                k, kq = k + b.dof, kq + b.nq
        q_map, v_map = [], []
        for b, j in zip(self.full.bodies, model.joints):
            if j.mimic is None:
                r = own[j.name]
                q_map += [(r.q_start + c, 1.0, 0.0) for c in range(b.nq)]
                v_map += [(r.v_start + c, 1.0) for c in range(b.dof)]
            else:
                r = own[j.mimic[0]]
                q_map.append((r.q_start, float(j.mimic[1]), float(j.mimic[2])))
                v_map.append((r.v_start, float(j.mimic[1])))
        self.bodies = list(own.values())
        self.nv, self.nq = k, kq
        self.coupling = Coupling(q_map, v_map)
        self.neutral = [float(x) for x in model.neutral()]
        self.quaternions = [k for _, k in model.quaternions()]

    @property
    def nframes(self):
        return len(self.frames)

    @property
    def joint_names(self):
        return [b.joint_name for b in self.bodies]

    def coordinate_names(self):
        """A name per entry of q: the joint's, with [k] for a joint of several."""
        names = []
        for b in self.bodies:
            names += [b.joint_name] if b.nq == 1 else [f"{b.joint_name}[{k}]" for k in range(b.nq)]
        return names

    def velocity_names(self):
        """A name per entry of qd (the same as coordinate_names where nq = nv)."""
        names = []
        for b in self.bodies:
            names += ([b.joint_name] if b.dof == 1
                      else [f"{b.joint_name}[{k}]" for k in range(b.dof)])
        return names


def configuration_meanings(b):
    """What each entry of body b's joint configuration is (with its unit)."""
    entries = joint_type(b.joint.type).configuration_entries
    return list(entries) if entries is not None else list(b.joint.coordinates)


def _padded_name(name, by_name):
    """A frame name as given, or the one frame whose name is it with spaces around (a URDF link
    " pad ", which `--frames a, pad` reaches: the command line strips around its commas)."""
    if not isinstance(name, str) or name in by_name:
        return name
    padded = [n for n in by_name if n.strip() == name]
    return padded[0] if len(padded) == 1 else name


def select_frames(model, names=None, what="frames", tol=None, length=None):
    """TreeFrames of the model's frames, all of them or the named ones in the order given;
    ValueError naming an unknown frame (what: the option's name in the messages; tol, length:
    the rotations' and translations' snaps, rotation_snap(model) and length_snap(model))."""
    every = model.frame_list() if hasattr(model, "frame_list") else []
    index = {b.name: i for i, b in enumerate(model.bodies)}
    by_name = {f.name: f for f in every}
    if names is None:
        chosen = every
    else:
        names = [names] if isinstance(names, str) else list(names)         # one name, or several
        names = [_padded_name(n, by_name) for n in names]
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise ModelError(f"unknown frame {short_name(unknown[0])!r}"
                             f"{' in ' + what if what != 'frames' else ''} ("
                             f"{close_names(unknown[0], by_name)}the model's frames: "
                             f"{name_list(by_name)})",
                             source=getattr(model, "source", None))
        if not names:
            raise ValueError(f"{what} must name at least one frame")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"{what} must name each frame once: {', '.join(map(repr, twice))} "
                             f"{'is' if len(twice) == 1 else 'are'} named twice")
        chosen = [by_name[n] for n in names]
    out = []
    for f in chosen:
        X = f.origin
        placement = None if X.is_identity(tol=0.0) else constant_placement(
            X, rotation_snap(model) if tol is None else tol,
            length_snap(model) if length is None else length)
        out.append(TreeFrame(f.name, index.get(f.body, -1), placement))
    return out


def _floats(values, n):
    """Per-coordinate floats, or None when absent or all zero (nothing to add to the code)."""
    if values is None:
        return None
    out = [float(x) for x in values]
    if len(out) != n:
        raise ValueError(f"expected {n} values, got {len(out)}")
    return out if any(out) else None


# A placement's rotation entries this close to 0, 1 or -1 are taken as exactly that: pi/2 written
# to 11 digits (1.57079632679, kinova) leaves cos = 4.9e-12 and sin(pi) = 2.1e-13 in every product
# with the joint's rotation, thousands of multiplications by noise in the unrolled code (kinova's
# forward dynamics: 2,501 of them). Results move by up to ~1e-10 relative (an outside tester:
# rpy angles of 1e-11..9e-11 rad moved FD by 1.0e-10 against Pinocchio; kinova ~1e-11), inside
# what a file written to 11 digits means. Entries such as cos(1.5708) = -3.7e-6 (xarm7, so101)
# are real geometry at 1e-9 and stay, and so does the sin = 1 - 7e-12 beside them: snapped alone
# it would scale the rotation (body_frames.snapped_rotation snaps only what keeps R
# orthonormal). Translations below SNAP_LENGTH (metres: CAD exports' 5.6e-17) are 0, or below
# SNAP_LENGTH_RTOL of the model's longest length where that is less (length_snap).
# The snaps add up along a chain, though: 40 joints at pi/2 + 9.5e-11 rad moved the frames by
# 3.8e-9 relative (an outside tester). So a model snaps its rotations only where what they turn
# every body and frame by, summed from the root, stays within SNAP_BUDGET (kinova: 7 x 4.9e-12
# rad), and otherwise only their rounding noise (body_frames.NOISE): exact, slower code.
SNAP_ROTATION = body_frames.SNAP
SNAP_BUDGET = 1e-10             # rad, on any path from the root to a body or frame
SNAP_LENGTH = body_frames.SNAP_LENGTH
SNAP_LENGTH_RTOL = 1e-11


def constant_placement(X, tol=SNAP_ROTATION, length=SNAP_LENGTH):
    """(R, t) of a constant transform as nested float lists, its near-exact entries snapped."""
    return (body_frames.snapped_rotation(X.rotation, tol).tolist(),
            body_frames.snapped_lengths(X.translation, length))


def length_snap(model):
    """The tolerance of the model's translations: SNAP_LENGTH metres, or SNAP_LENGTH_RTOL of the
    model's longest length (placements of joints and frames, centres of mass) where that is
    less. An absolute 1e-12 m made a 0.8 pm offset of a nanometre arm 0, and its M_01 57 % off;
    every model longer than 0.1 m keeps SNAP_LENGTH (example-robot-data's code is unchanged)."""
    lengths = [math.hypot(*j.origin.translation) for j in model.joints]     # (hypot: no overflow)
    lengths += [math.hypot(*b.inertia.com) for b in model.bodies]
    if hasattr(model, "frame_list"):
        lengths += [math.hypot(*f.origin.translation) for f in model.frame_list()]
    longest = max([x for x in lengths if math.isfinite(x)], default=0.0)
    return min(SNAP_LENGTH, SNAP_LENGTH_RTOL * longest) if longest > 0.0 else SNAP_LENGTH


def rotation_snap(model):
    """The tolerance of the model's placements' rotations: SNAP_ROTATION where the turns its
    snaps make (snap_turn) sum to at most SNAP_BUDGET on every path from the root to a body or
    frame, else body_frames.NOISE."""
    index = {b.name: i for i, b in enumerate(model.bodies)}
    path = []
    for i, j in enumerate(model.joints):                # (parents before children)
        p = model.parent_index(i)
        path.append(snap_turn(j.origin.rotation) + (path[p] if p >= 0 else 0.0))
    frames = model.frame_list() if hasattr(model, "frame_list") else []
    worst = max([0.0] + path + [snap_turn(f.origin.rotation) +
                                (path[index[f.body]] if f.body in index else 0.0) for f in frames])
    return SNAP_ROTATION if worst <= SNAP_BUDGET else body_frames.NOISE


def snap_turn(R):
    """The angle (rad) by which snapping R (body_frames.snapped_rotation) turns it."""
    R = np.asarray(R, dtype=float)
    D = body_frames.snapped_rotation(R, SNAP_ROTATION) @ R.T      # I + [w] for a small turn w
    return 0.5 * float(np.linalg.norm([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]]))


def spatial_inertia(inertia):
    """The 6x6 spatial inertia, its noise snapped (body_frames.snapped_inertia)."""
    return body_frames.snapped_inertia(inertia.spatial())


def coordinate_parents(tree):
    """Featherstone's expanded parent array lambda over the velocity coordinates (RBDA 6.5): the
    coordinate before k in its own joint, else the last coordinate of the nearest ancestor body
    that has one; -1 for none. A coupled tree's (mimic joints) reduced coordinates form one chain:
    its reduced mass matrix is dense."""
    if tree.coupling is not None:
        return list(range(-1, tree.nv - 1))
    out = []
    for b in tree.bodies:
        p = b.parent
        while p >= 0 and tree.bodies[p].dof == 0:
            p = tree.bodies[p].parent
        last = tree.bodies[p].v_start + tree.bodies[p].dof - 1 if p >= 0 else -1
        if b.dof:
            out += [last] + [b.v_start + k for k in range(b.dof - 1)]
    return out


def coordinate_ancestors(parents, k):
    """The strict ancestors of coordinate k, nearest first, by the parent array."""
    out = []
    k = parents[k]
    while k >= 0:
        out.append(k)
        k = parents[k]
    return out


def consecutive_runs(indices):
    """Sorted indices as (first, end) ranges of consecutive ones."""
    out = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return [tuple(x) for x in out]
