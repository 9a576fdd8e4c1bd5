"""Frame kinematics, written once like the dynamics: placements, Jacobians, velocities and
classical accelerations of the model's frames (Tree.frames), and the centre-of-mass Jacobian.

Twists are [w; v] (angular first, scleron's convention); Pinocchio's Motion is [v; w]. The three
references are Pinocchio's:
  "local"               the frame's own axes, at the frame origin;
  "local_world_aligned" the world's axes, at the frame origin;
  "world"               the world's axes, at the world origin (v: the velocity of the body point
                        passing through the world origin).
Equations: Featherstone (RBDA) 2.9-2.10 (twists between frames), 3.3 (Jacobian columns).
"""
import copy

from .recursions import (ZERO6, first_moment, joint_kinematics, to_child, velocity_pass,
                         world_pose_step)
from .tree import consecutive_runs
from .spatial import (cross, matvec, mat_t_vec, columns, twist_to_child, twist_to_parent, vadd,
                      vscale, wrench_to_parent)

REFERENCES = ("local_world_aligned", "local", "world")
REFERENCE_MEANINGS = {"local_world_aligned": "world axes, at the frame origin",
                      "local": "the frame's axes, at its origin",
                      "world": "world axes, at the world origin"}


def one_frame(tree, alg, *inputs, function, index, **options):
    """`function` (a recursion over every frame) for frame `index` of the tree alone: the same
    code on a tree whose frame list is that frame, so only its body's ancestors are computed."""
    view = copy.copy(tree)
    view.frames = [tree.frames[index]]
    return function(view, alg, *inputs, **options)[0]


def check_reference(reference):
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(REFERENCES)}, not {reference!r}")
    return reference


# ---- world poses --------------------------------------------------------------------------------
def body_poses(tree, alg, kins, label, bodies=None):
    """(R, t) of every body in the world (or of those in `bodies`, a set closed under
    parents), composed root to leaf (Featherstone 4.1)."""
    pose = [None] * len(tree.bodies)
    for b in tree.bodies:
        if bodies is not None and b.index not in bodies:
            continue
        alg.section(f"{label}: world pose of body {b.name}", f"{label}: world pose", b.index)
        pose[b.index] = world_pose_step(b, kins[b.index], pose)
    return pose


def frame_bodies(tree):
    """The bodies the frames hang from and all their ancestors: those whose poses the frame
    functions need (all of them for every frame, a chain for one)."""
    out = set()
    for f in tree.frames:
        k = f.body
        while k >= 0 and k not in out:
            out.add(k)
            k = tree.bodies[k].parent
    return out


def body_of(f):
    """The body index a frame is fixed to, None for the world (for the program's sections)."""
    return f.body if f.body >= 0 else None


def frame_pose(f, poses):
    """(R, t) of frame f in the world: its body's pose times its placement in the body."""
    if f.body < 0:
        R, t = f.placement if f.placement is not None else (IDENTITY, [0.0] * 3)
        return R, t
    R, t = poses[f.body]
    if f.placement is None:
        return R, t
    return _compose(R, t, *f.placement)


IDENTITY = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def _compose(R, t, Rf, tf):
    """(R Rf, R tf + t)."""
    cols = [matvec(R, c) for c in columns(Rf)]
    return [[cols[c][r] for c in range(3)] for r in range(3)], vadd(matvec(R, tf), t)


def frame_placements(tree, alg, q):
    """The world placement of every frame as a 4x4 homogeneous matrix [[R, p], [0, 1]]."""
    kins = joint_kinematics(tree, alg, q, None)
    poses = body_poses(tree, alg, kins, "frame placements", frame_bodies(tree))
    out = []
    for f in tree.frames:
        alg.section(f"placement of frame {f.name}", "frame placement", body_of(f))
        R, t = frame_pose(f, poses)
        out.append([list(R[0]) + [t[0]], list(R[1]) + [t[1]], list(R[2]) + [t[2]],
                    [0.0, 0.0, 0.0, 1.0]])
    return out


# ---- external wrenches ---------------------------------------------------------------------------
def on_wrench_frames(tree):
    """The tree with its wrench frames (Tree.wrench_frames: fext's rows) as its frames, for the
    frame functions that the wrenches' derivatives are made of (their Jacobians, poses)."""
    view = copy.copy(tree)
    view.frames = tree.wrench_frames
    return view


def with_external_wrenches(tree, alg, fext):
    """The tree with the wrenches fext (6 per frame of tree.wrench_frames, [n; f] in the frame's own
    axes about its origin, Pinocchio's fext of a joint frame) added to its bodies' constant
    wrenches f_e (S&G 21), so that every recursion reading them applies these too: moved into
    the body's frame, Ad_{G^-1}^T [n; f] = [R n + t x (R f); R f] with (R, t) the frame's
    placement in its body (spatial.wrench_to_parent). The wrench turns with its frame: the
    derivatives hold it fixed in the frame's axes, as Pinocchio's. A frame fixed to the world
    takes its wrench into the ground: it moves nothing. A mimic-coupled tree's frames hang from
    its full tree's bodies, where its recursions run (docs/mimic.md): the wrenches go there."""
    view = copy.copy(tree)
    if tree.coupling is not None:
        view.full = with_external_wrenches(tree.full, alg, fext)
        return view
    view.full = view
    view.bodies = [copy.copy(b) for b in tree.bodies]
    for k, f in enumerate(tree.wrench_frames):
        if f.body < 0:
            continue
        b = view.bodies[f.body]
        alg.section(f"external wrench of frame {f.name} on body {b.name}",
                    "external wrench on the body", f.body)
        w = list(fext[6 * k:6 * k + 6])
        w = w if f.placement is None else wrench_to_parent(*f.placement, w)
        b.wrench = w if b.wrench is None else vadd(b.wrench, w)
    return view


def world_aligned_wrenches(tree, alg, q, fext):
    """fext given in world axes at each frame's origin ([n; f] of local_world_aligned, a contact
    force as an MPC has it) in the frames' own axes: R_f^T n, R_f^T f, R_f the frame's world
    rotation at q (zero for a frame fixed to the world, where the wrench moves nothing); the
    frames: tree.wrench_frames."""
    tree = on_wrench_frames(tree)
    kins = joint_kinematics(tree, alg, q, None)
    poses = body_poses(tree, alg, kins, "external wrenches in world axes", frame_bodies(tree))
    out = []
    for k, f in enumerate(tree.frames):
        if f.body < 0:
            out += [0.0] * 6
            continue
        alg.section(f"external wrench of frame {f.name} in its own axes",
                    "external wrench in the frame's axes", f.body)
        R = frame_pose(f, poses)[0]
        w = fext[6 * k:6 * k + 6]
        out += mat_t_vec(R, w[:3]) + mat_t_vec(R, w[3:])
    return out


def acts_in_own_axes(tree, alg, args):
    """FunctionSpec.acts_on_tree of the functions whose last input is fext in the frames' axes."""
    return with_external_wrenches(tree, alg, args[-1]), list(args[:-1])


def acts_in_world_axes(tree, alg, args):
    """FunctionSpec.acts_on_tree of those whose fext has world axes (world_aligned_wrenches)."""
    return acts_in_own_axes(tree, alg, list(args[:-1]) +
                            [world_aligned_wrenches(tree, alg, args[0], args[-1])])


# ---- Jacobians ----------------------------------------------------------------------------------
def support(tree, body):
    """The coordinates that move a body: its joint's and its ancestors', in increasing order."""
    out = []
    while body >= 0:
        b = tree.bodies[body]
        out[:0] = range(b.v_start, b.v_start + b.dof)
        body = b.parent
    return out


def frame_columns(tree):
    """The sum over the frames of the coordinates that move each: the nonzero columns of all
    frame Jacobians, which their code grows with (a coupled tree's frames: in its full tree)."""
    return sum(len(support(tree.full, f.body)) for f in tree.frames)


def world_motion_columns(tree, alg, kins, poses):
    """Every coordinate's unit motion in the world reference: Ad_{G_0k} S_k column by column
    (Featherstone 3.3: the Jacobian's columns are the joints' motion axes in one frame); None
    for the bodies without a pose (not needed)."""
    Sw = [None] * tree.nv
    for b in tree.bodies:
        if poses[b.index] is None:
            continue
        kin = kins[b.index]
        alg.section(f"Jacobian columns of joint {b.joint_name} in the world",
                    "Jacobian columns in the world", b.index)
        R, t = poses[b.index]
        for k, col in enumerate(columns(kin[2])):
            Sw[b.v_start + k] = twist_to_parent(R, t, col)
    return Sw


def refer_world_twist(x, R, p, reference):
    """A twist given in the world reference, in `reference` for a frame at (R, p): moved to the
    frame origin (v + w x p), and for "local" rotated into the frame's axes."""
    if reference == "world":
        return x
    w = x[:3]
    v = vadd(x[3:], cross(w, p))
    if reference == "local_world_aligned":
        return w + v
    return mat_t_vec(R, w) + mat_t_vec(R, v)


def jacobian_kinematics(tree, alg, q, kins=None):
    """(body poses, world motion axes Sw) of the bodies the frames hang from and their ancestors."""
    kins = kins or joint_kinematics(tree, alg, q, None)
    poses = body_poses(tree, alg, kins, "frame Jacobians", frame_bodies(tree))
    return poses, world_motion_columns(tree, alg, kins, poses)


def frame_jacobians(tree, alg, q, reference="local_world_aligned"):
    """J_f (6 x nv) of every frame: its twist is J_f qd. Column c is coordinate c's world motion
    axis (zero where c does not move the frame), referred to the frame (refer_world_twist); in
    the local reference the columns of the frame's own body's joint are its S moved from the
    body into the frame, without the round trip through the world (constants where S is: a
    free flyer's base frame, 152 operations to make [[0, 1], [1, 0]] before: an MPC tester)."""
    check_reference(reference)
    kins = joint_kinematics(tree, alg, q, None)
    poses, Sw = jacobian_kinematics(tree, alg, q, kins)
    out = []
    for f in tree.frames:
        alg.section(f"Jacobian of frame {f.name} ({reference})", "frame Jacobian", body_of(f))
        R, p = frame_pose(f, poses)
        J = [[0.0] * tree.nv for _ in range(6)]
        own = own_local_columns(tree, f, kins) if reference == "local" and f.body >= 0 else {}
        for c in support(tree, f.body):
            col = own[c] if c in own else refer_world_twist(Sw[c], R, p, reference)
            for r, x in enumerate(col):
                J[r][c] = x
        out.append(J)
    return out


def own_local_columns(tree, f, kins):
    """{coordinate: its column of the frame's local Jacobian} for the joint of the frame's own
    body: the joint's S (body frame) in the frame's axes about its origin (Ad_{X_f}^-1 S)."""
    b = tree.bodies[f.body]
    out = {}
    for k, col in enumerate(columns(kins[b.index][2])):
        out[b.v_start + k] = col if f.placement is None else twist_to_child(*f.placement, col)
    return out


def reference_matrix(R, p, reference):
    """The 6 x 6 matrix A_f with refer_world_twist(x, R, p, reference) = A_f x (the map is linear
    in x): its columns are the unit twists, referred."""
    cols = [refer_world_twist([1.0 if i == k else 0.0 for i in range(6)], R, p, reference)
            for k in range(6)]
    return [[cols[k][r] for k in range(6)] for r in range(6)]


def frame_jacobian_factors(tree, alg, q, reference="local_world_aligned"):
    """The factors of the frame Jacobians J_f[:, c] = A_f Sw_c (c in support(f.body), zero
    elsewhere): the world motion axes Sw (O(n) work) and every frame's reference_matrix A_f. The
    loop form of frame_jacobians forms the O(frames x nv) products in C loops
    (frame_jacobians_from_factors here, templates/frameloop.c.j2 there)."""
    check_reference(reference)
    poses, Sw = jacobian_kinematics(tree, alg, q)
    A = []
    for f in tree.frames:
        alg.section(f"Jacobian of frame {f.name} ({reference}): its reference matrix",
                    "frame Jacobian: reference matrix", body_of(f))
        A.append(reference_matrix(*frame_pose(f, poses), reference))
    return Sw, A


def frame_jacobian_ranges(tree):
    """Per frame (in order), its support as (first, end) ranges of consecutive coordinates and
    the rest of 0..nv (the zero columns), likewise."""
    out = []
    for f in tree.frames:
        moving = set(support(tree, f.body))
        out.append((consecutive_runs(sorted(moving)),
                    consecutive_runs([c for c in range(tree.nv) if c not in moving])))
    return out


def frame_jacobians_from_factors(tree, Sw, A):
    """frame_jacobians from frame_jacobian_factors, as the loop form's C loops form them."""
    out = []
    for Af, (ranges, _) in zip(A, frame_jacobian_ranges(tree)):
        J = [[0.0] * tree.nv for _ in range(6)]
        for first, end in ranges:
            for c in range(first, end):
                for r, x in enumerate(matvec(Af, Sw[c])):
                    J[r][c] = x
        out.append(J)
    return out


# ---- velocities and classical accelerations -----------------------------------------------------
def refer_local_twist(x, R, p, reference):
    """A twist given in a frame's own reference ("local"), in `reference` (Featherstone 2.9)."""
    if reference == "local":
        return x
    if reference == "local_world_aligned":
        return matvec(R, x[:3]) + matvec(R, x[3:])
    return twist_to_parent(R, p, x)


def local_frame_twist(f, body_twists):
    """A frame's twist in its own reference, from its body's twist (zero on the world)."""
    if f.body < 0:
        return ZERO6
    x = body_twists[f.body]
    return twist_to_child(*f.placement, x) if f.placement is not None else x


def frame_velocities(tree, alg, q, qd, reference="local_world_aligned"):
    """The twist [w; v] of every frame (S&G pass 1, 18-20, then moved into the frame)."""
    check_reference(reference)
    kins = joint_kinematics(tree, alg, q, qd)
    v, _ = velocity_pass(tree, alg, kins, qd)
    poses = (body_poses(tree, alg, kins, "frame velocities", frame_bodies(tree))
             if reference != "local" else None)
    out = []
    for f in tree.frames:
        alg.section(f"velocity of frame {f.name} ({reference})", "frame velocity", body_of(f))
        R, p = frame_pose(f, poses) if poses is not None else (None, None)
        out.append(refer_local_twist(local_frame_twist(f, v), R, p, reference))
    return out


def body_accelerations(tree, alg, kins, qd, qdd):
    """The spatial accelerations of the bodies without gravity: alpha_k = Ad alpha_parent
    + a_k + S qdd_k (S&G 19, 22; the derivative of the body twist in body coordinates)."""
    _, a = velocity_pass(tree, alg, kins, qd)
    alpha = []
    for b, kin, ak in zip(tree.bodies, kins, a):
        alg.section(f"acceleration of body {b.name} (S&G 22, no gravity)",
                    "body acceleration (S&G 22)", b.index)
        parent = alpha[b.parent] if b.parent >= 0 else ZERO6
        qdds = qdd[b.v_start:b.v_start + b.dof]
        Sq = [0.0] * 6
        for col, x in zip(columns(kin[2]), qdds):
            Sq = vadd(Sq, vscale(x, col))
        alpha.append(vadd(vadd(to_child(b, kin, parent), ak), Sq))
    return alpha


def frame_accelerations(tree, alg, q, qd, qdd, reference="local_world_aligned"):
    """The classical acceleration of every frame, [dw/dt; d^2p/dt^2 at the frame origin] as
    Pinocchio's getFrameClassicalAcceleration: the spatial acceleration in the reference with
    w x v added to its linear part (w, v the frame's twist in the same reference)."""
    check_reference(reference)
    kins = joint_kinematics(tree, alg, q, qd)
    v, _ = velocity_pass(tree, alg, kins, qd)
    alpha = body_accelerations(tree, alg, kins, qd, qdd)
    poses = (body_poses(tree, alg, kins, "frame accelerations", frame_bodies(tree))
             if reference != "local" else None)
    out = []
    for f in tree.frames:
        alg.section(f"classical acceleration of frame {f.name} ({reference})",
                    "frame classical acceleration", body_of(f))
        R, p = frame_pose(f, poses) if poses is not None else (None, None)
        vf = refer_local_twist(local_frame_twist(f, v), R, p, reference)
        af = refer_local_twist(local_frame_twist(f, alpha), R, p, reference)
        out.append(af[:3] + vadd(af[3:], cross(vf[:3], vf[3:])))
    return out


# ---- centre of mass Jacobian --------------------------------------------------------------------
def com_jacobian(tree, alg, q):
    """d com / d q (3 x nv, world). Coordinate c moves the bodies below its joint rigidly by its
    world motion axis (w, v at the world origin), so column c = (m_c v + w x h_c) / m_total with
    m_c and h_c the mass and world first moment of the subtree it moves. With v = R v_b + t x w
    (v_b the axis' linear part in the body frame, t the body origin) that is
    (m_c R v_b + w x (h_c - m_c t)) / m_total: a lever from the joint to the subtree's centre of
    mass (zero v_b, hence no product, for a hinge); masses and moments are scaled by 1 / m_total
    once, as constants."""
    kins = joint_kinematics(tree, alg, q, None)
    poses = body_poses(tree, alg, kins, "centre of mass Jacobian")
    total = sum(b.inertia[3][3] for b in tree.bodies)
    mass = [b.inertia[3][3] / total for b in tree.bodies]
    moment = [None] * len(tree.bodies)
    for b in tree.bodies:
        R, t = poses[b.index]
        moment[b.index] = vadd(matvec(R, vscale(1.0 / total, first_moment(b))),
                               vscale(mass[b.index], t))
    for b in reversed(tree.bodies):
        alg.section(f"centre of mass Jacobian: subtree mass and first moment of body {b.name}",
                    "centre of mass Jacobian: subtree moments", b.index)
        if b.parent >= 0:
            mass[b.parent] = mass[b.parent] + mass[b.index]
            moment[b.parent] = vadd(moment[b.parent], moment[b.index])
    J = [[0.0] * tree.nv for _ in range(3)]
    for b in tree.bodies:
        alg.section(f"centre of mass Jacobian: columns of joint {b.joint_name}",
                    "centre of mass Jacobian: columns", b.index)
        R, t = poses[b.index]
        lever = vadd(moment[b.index], vscale(-mass[b.index], t))
        for k, axis in enumerate(columns(kins[b.index][2])):
            w = matvec(R, axis[:3])
            col = vadd(vscale(mass[b.index], matvec(R, axis[3:])), cross(w, lever))
            for r in range(3):
                J[r][b.v_start + k] = col[r]
    return J
