"""Body frames chosen for sparse code.

The recursions may run in any body frame that moves with the body; the user-facing frames
(Tree.frames) keep the model's. A revolute or prismatic joint's motion commutes with a rotation
about its own axis u, so body i's frame may turn by any constant angle a_i about u without
changing its joint: the placement becomes X_i' = C_p^-1 X_i C_i (C = Rot(u, a)), the inertia and
constant wrench are re-expressed in the turned frame, and the children's placements pick up
C_i^-1. (Si & Guenter's frames are likewise free: the joint's successor frame only has to carry
its motion, S&G section 2.) A file's link frames are often the CAD's, turned about the joint
axis by angles such as 1.5708 - pi/2: so101's elbow and wrist placements Rz(1.5708) leave
cos = -3.7e-6 in every product with the joint's rotation. Turning each frame by the angle that
makes its placement's rotation closest to a signed permutation removes them.

The angle is chosen body by body from the root (the parent's is fixed by then) among those that
zero one entry of the placement's rotation, or of a child's translation, scored by the nonzero
entries left in the placement, the inertia and the children's placements (each child at its own
best angle); the turn is kept only where it removes entries.

The same joints' motion commutes with a shift of the frame along the axis, too, so the origin
may slide by d_i u: URDF links often put the centre of mass, or the next joint, a few centimetres
up the axis (kinova, z1, panda), and the shift that zeroes that coordinate removes entries from
the inertia and the children's translations (kinova: FD 1,699 -> 1,634 instructions, M 600 ->
567). The frames' poses become D_p^-1 X_i D_i with D_i = (C_i, d_i u).

A revolute joint's motion also absorbs a turn about its axis that follows it: X Q(q) = (X Rot(u,
a)) (Q(q) Rot(u, -a)), and Q(q) Rot(u, -a) = Q(q - a) is a few products once per call. So each
placement's trailing turn about its own joint's axis moves into the motion (offset_motions; the
frame itself stays), and a body's own turn is chosen for its inertia and its children alone.
so101 FD 2,455 -> 2,186 instructions, panda 2,169 -> 2,064.
"""
import math

import numpy as np

SNAP = 1e-10            # rotation entries this close to 0 or +-1 are exact
                        # (dynamics.tree.SNAP_ROTATION)
# what an entry costs, roughly, in the recursions' products: a rotation entry that is not 0 or
# +-1 enters every twist, wrench and articulated-inertia transform of the body; a translation
# entry the cross products of those; an inertia entry the products with the body's inertia
ROTATION_WEIGHT, TRANSLATION_WEIGHT, INERTIA_WEIGHT = 8, 7, 1
SNAP_LENGTH = 1e-12     # translations below this (metres) are 0 (dynamics.tree.length_snap)
# the turned placements (products of rotations already snapped and the turns chosen to zero
# entries) have only rounding noise to snap: an entry that is merely small there (3e-12 from
# two 1.4e-5 rad turns) is geometry
TURNED = 1e-12
SNAP_INERTIA = 1e-12    # spatial inertia entries below this fraction of their block's scale are 0
INERTIA_FLOOR = 1e-100  # and entries below this (SI units) are 0 at any scale
# A moment of inertia (the rotational block's diagonal) below this fraction of the block's scale
# is 0, and a negative one below SNAP_INERTIA of it: a turned tensor with products of inertia
# leaves rounding noise of about 1e-16 of its scale on a zero moment, either sign, while a thin
# rod along its hinge (1e-12 of m L^2 about the hinge's origin) is geometry
SNAP_MOMENT = 1e-14


_AXES = {}                  # id(joint) -> (joint, its commuting_axis): joint models are shared


def commuting_axis(joint, length=SNAP_LENGTH):
    """The unit axis u about which a constant rotation commutes with the joint's motion, or None:
    one coordinate, S constant and equal to [u; 0] (revolute) or [0; u] (prismatic) (length:
    the model's translation snap, commutes_with_turns)."""
    known = _AXES.get((id(joint), length))
    if known is None or known[0] is not joint:
        known = _AXES[(id(joint), length)] = (joint, _commuting_axis(joint, length))
    return known[1]


def _commuting_axis(joint, length):
    S = getattr(joint, "S", None)
    if S is None or joint.dof != 1 or not all(x.is_Number for x in S):
        return None                 # (is_Number: a look at the head, never a walk of the tree)
    s = np.array([float(x) for x in S])
    if not np.all(np.isfinite(s)) or np.abs(s).max() > 1e100:
        return None                 # a degenerate joint: the model's checks name it
    w, v = s[:3], s[3:]
    if np.linalg.norm(w) > 0 and np.linalg.norm(v) == 0:
        u = w
    elif np.linalg.norm(w) == 0 and np.linalg.norm(v) > 0:
        u = v
    else:
        return None
    u = u / np.linalg.norm(u)
    return u if commutes_with_turns(joint, u, length) else None


def commutes_with_turns(joint, u, length=SNAP_LENGTH):
    """Whether the joint's transform Q(q) = Q(0) exp(S q) commutes with every Rot(u, a): with S
    constant that holds where Q(0) does, i.e. its rotation keeps u and its translation lies
    along u. A custom joint such as rotation z(a) after a constant offset (0.3, 0.1, 0) has
    S = [e_z; 0] yet moves the axis off the frame's origin: no turn commutes with it."""
    zeros = np.zeros(joint.nq)
    R, t = joint.numeric("R", zeros), joint.numeric("t", zeros).reshape(3)
    # the offset off the axis against the translation's own size, down to the model's snap of
    # lengths: 0.03 nm off the axis of a nanometre joint is geometry (turning its body put M
    # 3 % off), 0.2 cos(1.5707963267948966) = 1.2e-17 m in a metre model is rounding (reviewers)
    atol = max(SNAP * float(np.abs(t).max()), length)
    return bool(np.allclose(R @ u, u, rtol=0.0, atol=SNAP)
                and np.allclose(t - u * (u @ t), 0.0, rtol=0.0, atol=atol))


def rotation_about(u, a):
    """Rot(u, a) by Rodrigues' formula."""
    K = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    return np.eye(3) + math.sin(a) * K + (1.0 - math.cos(a)) * K @ K


def nonzeros(M):
    """Entries of M that are not within SNAP of 0 (+-1 count: they fold, but are entries)."""
    return int(np.sum(np.abs(np.asarray(M)) > SNAP))


def products(R):
    """Entries of the rotation R that cost a multiplication: not 0, 1 or -1 once snapped."""
    return int(products_of_each(np.asarray(R, dtype=float)[None])[0])


def products_of_each(Rs):
    """products() of each rotation of a stack (k, 3, 3), at once."""
    A = np.abs(snapped_rotations(Rs, TURNED))
    return np.sum((A != 0.0) & (A != 1.0), axis=(1, 2))


def rotations_about(u, angles):
    """Rot(u, a) for each angle, stacked (k, 3, 3): rotation_about of each."""
    K = skew(u)
    a = np.asarray(angles, dtype=float)[:, None, None]
    return np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * (K @ K)


def fewest_products(A, u):
    """The fewest products() of A Rot(u, a) over a = 0 and the angles zeroing one of its
    entries (zeroing_angles)."""
    return int(products_of_each(A @ rotations_about(u, [0.0] + zeroing_angles(A, u))).min())


_UNIT = np.eye(3)


def zeroing_angles(A, u, B=None):
    """Angles a at which an entry of A Rot(u, a) vanishes (B None), or of Rot(u, a)^T B for a
    3-vector B. Each entry is alpha + beta cos a + gamma sin a (Rodrigues)."""
    out = []
    rows = []
    if B is None:
        K = skew(u)                         # column k: u x e_k
        for r in range(3):
            for k in range(3):
                rows.append((A[r] @ u * u[k], A[r] @ (_UNIT[k] - u * u[k]), A[r] @ K[:, k]))
    else:
        uxB = np.cross(u, B)
        for r in range(3):                  # (Rot(u, a)^T B)_r = e_r . Rot(u, -a) B
            rows.append((u[r] * (u @ B), B[r] - u[r] * (u @ B), -uxB[r]))
    for alpha, beta, gamma in rows:
        rho = math.hypot(beta, gamma)
        if rho < 1e-300 or abs(alpha) > rho:
            continue
        base, spread = math.atan2(gamma, beta), math.acos(max(-1.0, min(1.0, -alpha / rho)))
        out += [base + spread, base - spread]
    return out


def turned_inertia(I, C, s=None):
    """A 6x6 spatial inertia in a frame turned by C about its origin, and moved to s (old
    coordinates; X maps the new frame's twists to the old frame's)."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = C
    if s is not None:
        X[3:, :3] = skew(s) @ C
    return X.T @ np.asarray(I) @ X


def skew(s):
    return np.array([[0.0, -s[2], s[1]], [s[2], 0.0, -s[0]], [-s[1], s[0], 0.0]])


class Choice:
    """What turning body b's frame by C changes: the placement's rotation, the inertia, and
    each child's translation (the child's own turn is chosen later)."""

    def __init__(self, tree_bodies, b, Cp, axes):
        self.bodies, self.b, self.Cp, self.axes = tree_bodies, b, Cp, axes
        R, t = b.placement if b.placement is not None else (np.eye(3), np.zeros(3))
        self.A = Cp.T @ np.asarray(R)          # the placement's rotation before the turn

    def cost(self, C):
        b = self.b
        n = INERTIA_WEIGHT * nonzeros(turned_inertia(b.inertia, C))
        if not revolving(b.joint, self.axes[b.index]):    # (its own placement: offset_motions)
            n += ROTATION_WEIGHT * products(self.A @ C)
        for c in b.children:
            child = self.bodies[c]
            R, t = child.placement if child.placement is not None else (np.eye(3), np.zeros(3))
            n += TRANSLATION_WEIGHT * nonzeros(C.T @ np.asarray(t)) + \
                ROTATION_WEIGHT * self.child_rotation_cost(C.T @ np.asarray(R), self.axes[c])
        return n

    @staticmethod
    def child_rotation_cost(A, u):
        """The child's placement rotation at its own best turn (or as is)."""
        return products(A) if u is None else fewest_products(A, u)


def choose_turns(bodies, length=SNAP_LENGTH):
    """A 3x3 rotation C_i per body (identity where no turn removes entries), root first. Only
    a body whose placement or a child's has a rotation entry other than 0 or +-1 is tried (where
    both are signed permutations there is nothing to fold)."""
    axes = [commuting_axis(b.joint, length) for b in bodies]
    turns = [np.eye(3) for _ in bodies]
    with np.errstate(all="ignore"):
        for b in bodies:
            if axes[b.index] is not None and (
                    not np.array_equal(turns[b.parent] if b.parent >= 0 else np.eye(3), np.eye(3))
                    or any(rotation_products(bodies[k]) for k in [b.index] + b.children)):
                turns[b.index] = best_turn(bodies, b, turns, axes)
    return turns


def rotation_products(b):
    return 0 if b.placement is None else products(b.placement[0])


def best_turn(bodies, b, turns, axes):
    """The turn of body b's frame about its axis with the lowest Choice.cost, or the identity."""
    u = axes[b.index]
    Cp = turns[b.parent] if b.parent >= 0 else np.eye(3)
    choice = Choice(bodies, b, Cp, axes)
    angles = zeroing_angles(choice.A, u)
    for c in b.children:
        child = bodies[c]
        if child.placement is not None:
            angles += zeroing_angles(None, u, np.asarray(child.placement[1]))
            for column in np.asarray(child.placement[0], dtype=float).T:
                angles += zeroing_angles(None, u, column)
    best, best_cost = np.eye(3), choice.cost(np.eye(3))
    for a in angles:
        C = rotation_about(u, a)
        cost = choice.cost(C)
        if cost < best_cost:
            best, best_cost = C, cost
    return best


def rotation_axis(joint, length=SNAP_LENGTH):
    """u for a joint whose motion is a rotation about the axis u through its frame's origin
    (commuting_axis with S = [u; 0]): a constant turn about u may follow its motion."""
    u = commuting_axis(joint, length)
    return u if revolving(joint, u) else None


def revolving(joint, u):
    """Whether a joint with the commuting axis u (or None) turns about it (S = [u; 0])."""
    return u is not None and any(float(x) for x in joint.S[:3])


def offset_motions(bodies, tol=TURNED, length=SNAP_LENGTH):
    """Move the turn about a revolute joint's own axis out of its placement into its motion:
    X Q(q) = (X Rot(u, a)) (Q(q) Rot(u, -a)), and Q(q) Rot(u, -a) = Q(q - a) costs a few products
    once per call where X's rotation enters every product of the passes with the body (so101's
    wrist roll: a placement turned 2.8 degrees about the joint's axis). Unlike a turn of the
    body's frame (choose_turns) this leaves the frame, hence the inertia, the children's
    placements and the user frames, as they are. The angle: among those zeroing an entry of X's
    rotation, the one leaving the fewest products; none where no angle lowers them."""
    for b in bodies:
        u = rotation_axis(b.joint, length)
        if u is None or b.placement is None:
            continue
        R = np.asarray(b.placement[0], dtype=float)
        a = best_offset(R, u)
        if a is not None:
            b.placement = (snapped_rotation(R @ rotation_about(u, a), tol).tolist(), b.placement[1])
            b.turn_after = snapped_rotation(rotation_about(u, -a), tol).tolist()


def best_offset(A, u):
    """The angle a with the fewest products in A Rot(u, a), or None where a = 0 is as good."""
    best, fewest = None, products(A)
    for a in zeroing_angles(A, u):
        n = products(A @ rotation_about(u, a))
        if n < fewest:
            best, fewest = a, n
    return best


def snapped(M, tol=SNAP, targets=(0.0, 1.0, -1.0)):
    """M as a float array with exact 0, 1, -1 (targets) where an entry is within tol of them."""
    M = np.array(M, dtype=float)
    for target in targets:
        M[np.abs(M - target) <= tol] = target
    return M


ORTHONORMAL = 1e-14     # |R^T R - 1| a snapped rotation may have (float products leave ~1e-16)
NOISE = 1e-15           # entries this close to 0, 1, -1 are rounding noise, snapped always


def snapped_rotation(R, tol=SNAP):
    """A rotation with its entries within tol of 0, 1, -1 exact where it stays a rotation.
    Entries are not independent: pi/2 written to 11 digits leaves cos = 4.9e-12 beside sin =
    1.0 (snapping the cos gives Rx(pi/2) exactly), but 1.57079 leaves cos = 6.3e-6 beside sin =
    1 - 2e-11, and snapping that sin alone would scale the rotation by 2e-11 at every joint
    (errors of 1e-9 along a chain). So: all of them, else the zeros alone, if the result is
    orthonormal to ORTHONORMAL; otherwise only the rounding noise (NOISE)."""
    for S in (snapped(R, tol), snapped(R, tol, targets=(0.0,))):
        if np.abs(S.T @ S - np.eye(3)).max() <= ORTHONORMAL:
            return S
    return snapped(R, NOISE)


def snapped_lengths(t, tol=SNAP_LENGTH):
    """A translation as floats, entries below tol (SNAP_LENGTH, or the model's: tree.length_snap)
    exactly 0."""
    return [0.0 if abs(x) <= tol else float(x) for x in t]


def snapped_inertia(I):
    """A 6x6 spatial inertia [[rotational, first moment], [first moment^T, mass]] as nested
    floats with the noise a near-pi rotation leaves in merged links' inertias exactly 0: in each
    block the entries below SNAP_INERTIA of that block's scale, in its own units (kg m^2, kg m,
    kg; the first moment's scale at least sqrt(rotational x mass)), and any below INERTIA_FLOOR.
    (One tolerance for the whole matrix mixed units: a 1e-8 kg body of 1e-16 kg m^2 lost its
    rotational inertia, and a 1 kg body 5 um across its products of inertia; an outside
    tester's forward dynamics were 25 % off Pinocchio's.) The moments on the rotational block's
    diagonal snap below SNAP_MOMENT of its scale, and negative ones below SNAP_INERTIA: a thin
    rod along its hinge lost its moment of 1e-12 of the scale (M 25 % off Pinocchio's), while a
    turned rod's noise, -5e-17, kept, reads as an inertia that is not positive (two outside
    reviewers)."""
    I = np.array(I, dtype=float)
    rotational, mass = float(np.abs(I[:3, :3]).max()), float(np.abs(I[3:, 3:]).max())
    moment = max(float(np.abs(I[:3, 3:]).max()), math.sqrt(rotational) * math.sqrt(mass))
    diagonal = I.diagonal()[:3].copy()
    for rows, cols, scale in ((slice(0, 3), slice(0, 3), rotational),
                              (slice(0, 3), slice(3, 6), moment),
                              (slice(3, 6), slice(0, 3), moment),
                              (slice(3, 6), slice(3, 6), mass)):
        block = I[rows, cols]
        block[np.abs(block) <= max(INERTIA_FLOOR, SNAP_INERTIA * scale)] = 0.0
    for k, x in enumerate(diagonal):
        noise = max(INERTIA_FLOOR, (SNAP_INERTIA if x < 0 else SNAP_MOMENT) * rotational)
        I[k, k] = 0.0 if abs(x) <= noise else x
    return I.tolist()


def turn_bodies(bodies, turns, slides=None, tol=TURNED, length=SNAP_LENGTH):
    """Re-express the tree's bodies in the turned (and slid) frames, in place: placements
    D_p^-1 X D_i with D = (C, s), inertias and constant wrenches in the body's new frame (tol,
    length: the snaps of the rotations and translations)."""
    old = [b.placement for b in bodies]
    slides = slides or [np.zeros(3) for _ in bodies]
    for b in bodies:
        C, s = turns[b.index], np.asarray(slides[b.index], dtype=float)
        Cp = turns[b.parent] if b.parent >= 0 else np.eye(3)
        s_parent = np.asarray(slides[b.parent], dtype=float) if b.parent >= 0 else np.zeros(3)
        if (np.array_equal(C, np.eye(3)) and np.array_equal(Cp, np.eye(3)) and not s.any()
                and not s_parent.any()):
            continue
        R, t = old[b.index] if old[b.index] is not None else (np.eye(3), np.zeros(3))
        R, t = np.asarray(R, dtype=float), np.asarray(t, dtype=float)
        b.placement = (snapped_rotation(Cp.T @ R @ C, tol).tolist(),
                       snapped_lengths(Cp.T @ (t + R @ s - s_parent), length))
        if not np.array_equal(C, np.eye(3)) or s.any():
            I = turned_inertia(b.inertia, C, s)
            b.inertia = snapped_inertia(I)
            if b.wrench is not None:
                w = np.asarray(b.wrench)
                b.wrench = list(np.concatenate([C.T @ (w[:3] - np.cross(s, w[3:])), C.T @ w[3:]]))


def turn_frame(placement, C, s=None, tol=TURNED, length=SNAP_LENGTH):
    """A user frame's placement in its body's turned (and slid) frame: D^-1 X."""
    s = np.zeros(3) if s is None else np.asarray(s, dtype=float)
    if np.array_equal(C, np.eye(3)) and not s.any():
        return placement
    R, t = placement if placement is not None else (np.eye(3), np.zeros(3))
    return (snapped_rotation(C.T @ np.asarray(R), tol).tolist(),
            snapped_lengths(C.T @ (np.asarray(t, dtype=float) - s), length))


def choose_slides(bodies, turns, length=SNAP_LENGTH):
    """A shift s_i = d u_i of each body's frame origin along its joint's axis (the joint's motion
    commutes with it as with a turn), root first, after the turns: among the d that zero an entry
    of the body's placement translation, of a child's, or the centre of mass's axial coordinate,
    the one with the lowest weighted count of nonzero entries left (own and children's
    translations, the inertia); 0 where none lowers it. A shift that needs more than a tenth of
    an axis' worth of lever (|e . u| < 0.1) is not tried: it would be long and cancel."""
    axes = [commuting_axis(b.joint, length) for b in bodies]
    slides = [np.zeros(3) for _ in bodies]
    with np.errstate(all="ignore"):         # overflowing shifts are not finite: not taken
        for b in bodies:
            if axes[b.index] is not None:
                slides[b.index] = best_slide(bodies, b, turns, slides, axes[b.index], length)
    return slides


def best_slide(bodies, b, turns, slides, u, length=SNAP_LENGTH):
    C = turns[b.index]
    Cp, sp = (turns[b.parent], slides[b.parent]) if b.parent >= 0 else (np.eye(3), np.zeros(3))
    R, t = b.placement if b.placement is not None else (np.eye(3), np.zeros(3))
    R, t = np.asarray(R, dtype=float), np.asarray(t, dtype=float)
    kids = [np.asarray(bodies[c].placement[1], dtype=float) for c in b.children
            if bodies[c].placement is not None]
    I = np.asarray(b.inertia, dtype=float)

    def cost(d):
        s = d * u
        own, inertia = Cp.T @ (t + R @ s - sp), turned_inertia(I, C, s)
        children = [C.T @ (tc - s) for tc in kids]
        if not all(np.isfinite(x).all() for x in [own, inertia, *children]):
            return math.inf         # a shift beyond floats (a model placed 1e155 m away): not taken
        n = TRANSLATION_WEIGHT * nonzeros(snapped_lengths(own, length))
        n += INERTIA_WEIGHT * nonzeros(snapped_inertia(inertia))
        return n + sum(TRANSLATION_WEIGHT * nonzeros(snapped_lengths(x, length)) for x in children)

    candidates = []
    for e in Cp.T:                          # own translation entries: e . (t - s_p + d R u) = 0
        if abs(e @ R @ u) > 0.1:
            candidates.append(-(e @ (t - sp)) / (e @ R @ u))
    for e in C.T:                           # a child's: e . (t_c - d u) = 0
        if abs(e @ u) > 0.1:
            candidates += [(e @ tc) / (e @ u) for tc in kids]
    if I[3, 3] > 0:                         # the centre of mass (m [c]x is the upper right block)
        candidates.append(np.array([I[2, 4], I[0, 5], I[1, 3]]) @ u / I[3, 3])
    best, best_cost = 0.0, cost(0.0)
    for d in sorted(d for d in candidates if math.isfinite(d)):
        if cost(d) < best_cost:
            best, best_cost = d, cost(d)
    return best * u


def snapped_rotations(Rs, tol=SNAP):
    """snapped_rotation of each rotation of a stack (k, 3, 3), at once."""
    Rs = np.asarray(Rs, dtype=float)
    out = snapped(Rs, NOISE)
    for S in (snapped(Rs, tol, targets=(0.0,)), snapped(Rs, tol)):     # the first that holds wins
        gap = np.abs(np.swapaxes(S, 1, 2) @ S - np.eye(3)).max(axis=(1, 2))
        out = np.where((gap <= ORTHONORMAL)[:, None, None], S, out)
    return out
