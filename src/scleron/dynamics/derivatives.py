"""Analytical derivatives of the dynamics, written once like the recursions (any algebra).

- mass_matrix_inverse: M^-1. Straight-line: from Featherstone's LTDL factorisation of the CRBA
  mass matrix (RBDA 6.5), sparse as the tree. In loop form: Carpentier's algorithm ("Analytical
  inverse of the joint space inertia matrix", 2018; Pinocchio's computeMinverse), the
  articulated-body algorithm (Featherstone 7.3, S&G passes 4-6) run on the nv unit joint forces
  at once, with qd = 0 and no gravity, in world coordinates so that the nv columns need no
  change of frame between bodies.
- inverse_dynamics_derivatives: Carpentier & Mansard's analytical derivatives of the recursive
  Newton-Euler algorithm ("Analytical derivatives of rigid body dynamics algorithms", RSS 2018;
  Pinocchio's computeRNEADerivatives), in world coordinates, generalised to joints whose S
  depends on q and whose Sdot is not zero. The q columns are Pinocchio's: derivatives along
  integrate(q, v) at v = 0, so a quaternion joint's columns are its nv velocity directions.
- forward_dynamics_derivatives: dqdd/dx = -M^-1 dtau/dx at qdd = FD(q, qd, tau) (Carpentier &
  Mansard 2018: differentiate M qdd + h = tau at fixed tau; Pinocchio's computeABADerivatives).
- derivatives_by_duals: any recursion's derivatives by forward mode (dual numbers) through the
  recursion itself: exact for every joint, sharing nothing with the analytical route but the
  recursion, larger code; the frames' velocity and acceleration derivatives, and the tests'
  oracle of the inverse dynamics' (inverse_dynamics_jacobians_by_duals).

Twists [w; v] and wrenches [n; f], angular first, as everywhere in scleron.
"""
from ..joints import manifolds
from ..algebra import Dual, DualAlgebra
from . import configuration, frames, recursions
from .recursions import (ltdl_factors, ltdl_solve,  # noqa: F401 (LTDL: M^-1, q'')
                         mass_matrix_factors)
from .tree import consecutive_runs
from .spatial import (ad, ad_star, columns, constant_rigid_inertia_to_parent, cross, dot, matmul,
                      matvec, sym_add, transpose, twist_to_parent, vadd, vscale, wrench_to_parent)


# ---- M^-1 ----------------------------------------------------------------------------------------
def mass_matrix_inverse(tree, alg, q, blocks=None):
    """M(q)^-1, nv x nv. As straight-line code (blocks None) by the factorisation of the unrolled
    mass matrix, which takes fewer operations wherever straight-line code is used (operations
    per call, factored / articulated: panda 1,408 / 2,019, UR5 486 / 873, RC15 5,249 / 6,076, the
    floating quadruped 4,260 / 4,929); in the C loop form (blocks: its column steps) by the
    articulated-body solve, O(nv^2) at any depth."""
    if blocks is None:
        return factored_mass_matrix_inverse(tree, alg, q)
    return articulated_mass_matrix_inverse(tree, alg, q, blocks)


def factored_mass_matrix_inverse(tree, alg, q):
    """M^-1 = L^-1 D^-1 L^-T from M = L^T D L, Featherstone's LTDL factorisation (RBDA 6.5, Table
    6.3) of the CRBA mass matrix (recursions.mass_matrix, armature included). Over the expanded
    parent array lambda of the coordinates, L_ki is nonzero only where i is an ancestor of k (no
    fill-in), and so is (L^-1)_ki; M^-1_ab sums (L^-1)_ak (L^-1)_bk / D_k over the common
    ancestors k of a and b."""
    return inverse_of_mass_matrix(tree, alg, recursions.mass_matrix(tree, alg, q))


def inverse_of_mass_matrix(tree, alg, M):
    """M^-1 of a mass matrix M of the tree by its LTDL factors."""
    return inverse_from_ltdl(alg, *mass_matrix_factors(tree, alg, M))


def composite_mass_matrix(tree, alg, world):
    """M from world_dynamics' root-frame inertias: the composite inertias leaves to root and
    M_rc = J_r . Ycrb_c J_c, formed exactly as composite_backward will form them (the program
    computes them once), armature added."""
    nv = tree.nv
    Y = [w.Y for w in world]
    YJ = [None] * nv
    M = [[0.0] * nv for _ in range(nv)]
    for b in reversed(tree.bodies):
        alg.section(f"forward dynamics derivatives: M from the composite inertia of body {b.name}",
                    "forward dynamics derivatives: M from the composite inertias", b.index)
        w = world[b.index]
        own = list(range(b.v_start, b.v_start + b.dof))
        for k in own:
            YJ[k] = matvec(Y[b.index], w.J[k - b.v_start])
        for a, r in enumerate(own):
            for k in own:
                M[r][k] = dot(w.J[a], YJ[k])
        if b.parent >= 0:
            Y[b.parent] = sym_add(Y[b.parent], Y[b.index])
    J = [col for w in world for col in w.J]
    fill_related_pairs(tree, {"J": J, "YJ": YJ}, {"M": M})      # PAIR_PRODUCTS' M, down and up
    return recursions.add_armature(tree, M)


def inverse_from_ltdl(alg, L, inv_d, ancestors):
    """M^-1 = L^-1 D^-1 L^-T: row k of W = L^-1 is e_k - sum_(j ancestor of k) L_kj W_j (nonzero
    on k and its ancestors only); M^-1_ab = sum_k (W_ak / D_k) W_bk, upper triangle, mirrored."""
    n = len(inv_d)
    alg.section("mass matrix inverse: L^-1 (the tree's sparsity)")
    W = []
    for k in range(n):
        row = {k: 1.0}
        for j in ancestors[k]:
            for i, w in W[j].items():
                row[i] = row.get(i, 0.0) - L[k][j] * w
        W.append(row)
    alg.section("mass matrix inverse: L^-1 D^-1 L^-T")
    V = [{k: w * inv_d[k] for k, w in row.items()} for row in W]
    Minv = [[0.0] * n for _ in range(n)]
    for a in range(n):
        for b in range(a, n):
            s = 0.0
            for k, v in V[a].items():
                if k in W[b]:
                    s = s + v * W[b][k]
            Minv[a][b] = Minv[b][a] = s
    return Minv


# M^-1 and M^-1 B by Carpentier 2018 (Featherstone 7.3 on many joint forces at once)
def articulated_mass_matrix_inverse(tree, alg, q, blocks=None, world=None):
    """M(q)^-1, nv x nv: the articulated-body solve of the nv unit joint forces (Carpentier 2018,
    as articulated_solve below), column by column, each step an operation on a range of
    consecutive columns (ColumnBlocks: run here on lists, by the loop form of the C code as
    vectorised loops, scleron.unroll.MinvLoop):
      own columns of body i:   W_i = D_i^-1, P_c = U_i D_i^-1              (the unit forces)
      leaves to root, the columns c of i's strict descendants:
                               W_i,c = -D_i^-1 S_i^T P_c,  P_c += U_i W_i,c   (p^a moving up)
      root to leaves, the columns c >= i's first (rows i of the upper triangle):
                               X_i,c = W_i,c - D_i^-1 U_i^T A_c,  A_c += S_i X_i,c
    (W_i,c = 0 outside i's subtree). A_c, the acceleration of the body just done in column c, is
    kept in place: a body whose child does not follow it right away saves A after its step,
    and that child restores it (the world's zeros for a second root). The lower triangle is
    the upper one mirrored. A root's steps skip what cannot matter: its P_c goes to no parent
    (carry=False), and its A_c is still the world's zero (at_rest=True: X = W); a free flyer's
    two 6 x 6 steps per column take half the work. world: articulated_world at q when the
    caller has it."""
    world = articulated_world(tree, alg, q) if world is None else world
    blocks = ColumnBlocks(tree.nv) if blocks is None else blocks
    for b in tree.bodies:
        blocks.own_columns(b, world[b.index])
    below = related_ranges(tree)["down"]
    for b in reversed(tree.bodies):
        alg.section(f"mass matrix inverse (Carpentier 2018, backward): body {b.name}",
                    "mass matrix inverse: backward pass", b.index)
        for _, first, end in (x for x in below if x[0] == b.v_start):
            blocks.backward(b, world[b.index], first, end, carry=b.parent >= 0)
    saved = {}
    for b in tree.bodies:
        alg.section(f"mass matrix inverse (Carpentier 2018, forward): body {b.name}",
                    "mass matrix inverse: forward pass", b.index)
        if b.parent < 0 and b.index > 0:
            blocks.zero(b.v_start)
        elif b.parent >= 0 and b.parent != b.index - 1:
            blocks.restore(saved[b.parent], b.v_start)
        blocks.forward(b, world[b.index], at_rest=b.parent < 0)
        later = [tree.bodies[c].v_start for c in b.children if c != b.index + 1]
        if later:
            saved[b.index] = blocks.save(min(later))
    return blocks.mirrored()


def own_column_values(b, axes):
    """(c, W_i,c, P_c) for each own column c of body i: the unit force's W = D^-1 e and
    P = U D^-1 e."""
    S, U, Dinv, SD, UD = axes
    return [(b.v_start + k, Dinv[k], [dot([Ua[r] for Ua in U], Dinv[k]) for r in range(6)])
            for k in range(b.dof)]


class ColumnBlocks:
    """The column operations of mass_matrix_inverse on nested lists (floats or program values):
    X the nv x nv result (rows hold W, then X), P and A 6 x nv."""

    def __init__(self, nv):
        self.nv = nv
        self.X = [[0.0] * nv for _ in range(nv)]
        self.P = [[0.0] * nv for _ in range(6)]
        self.A = [[0.0] * nv for _ in range(6)]

    def own_columns(self, b, axes):
        for c, w, p in own_column_values(b, axes):
            for a in range(b.dof):
                self.X[b.v_start + a][c] = w[a]
            for r in range(6):
                self.P[r][c] = p[r]

    def backward(self, b, axes, first, end, carry=True):
        """carry=False: P_c is not updated (no parent reads it)."""
        S, U, Dinv, SD, UD = axes
        for c in range(first, end):
            p = [row[c] for row in self.P]
            w = [-dot(row, p) for row in SD]
            for a in range(b.dof):
                self.X[b.v_start + a][c] = w[a]
            if carry:
                for r in range(6):
                    self.P[r][c] = p[r] + dot([Ua[r] for Ua in U], w)

    def forward(self, b, axes, at_rest=False):
        """at_rest=True: A_c is zero in every column from b's on (a root), X = W."""
        S, U, Dinv, SD, UD = axes
        for c in range(b.v_start, self.nv):
            acc = [row[c] for row in self.A]
            x = [self.X[b.v_start + a][c] if at_rest else self.X[b.v_start + a][c] - dot(UD[a], acc)
                 for a in range(b.dof)]
            for a in range(b.dof):
                self.X[b.v_start + a][c] = x[a]
            for r in range(6):
                self.A[r][c] = acc[r] + dot([Sa[r] for Sa in S], x)

    def save(self, first):
        return first, [row[first:] for row in self.A]

    def zero(self, first):
        for row in self.A:
            row[first:] = [0.0] * (self.nv - first)

    def restore(self, saved, first):
        start, rows = saved
        for r in range(6):
            self.A[r][first:] = rows[r][first - start:]

    def mirrored(self):
        for r in range(self.nv):
            for c in range(r):
                self.X[r][c] = self.X[c][r]
        return self.X


def articulated_world(tree, alg, q):
    """Every joint of the articulated-body factorisation in one frame per root (world_axes):
    pass 4 (S&G 27-28) gives U = Ia S and D = S^T Ia S in the body frame; the poses in the
    root's frame (root_frame_poses) move them."""
    kins = recursions.joint_kinematics(tree, alg, q, None)
    state = recursions.articulated_state(tree, [0.0] * tree.nv)
    recursions.run_body_pass(tree, alg, kins, recursions.ARTICULATED_PASSES[0], state)   # U, D
    pose = root_frame_poses(tree, alg, kins, "mass matrix inverse")
    world = []
    for b in tree.bodies:
        alg.section(f"mass matrix inverse: S, U, D^-1 of joint {b.joint_name} in the world",
                    "mass matrix inverse: world axes", b.index)
        world.append(world_axes(b, kins[b.index], pose[b.index], state["U"][b.index],
                                state["L"][b.index]))
    return world


ROOT_FRAME = ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [0.0, 0.0, 0.0])


def root_frame_poses(tree, alg, kins, label):
    """(R, t) of every body in the frame of its root body, frozen at this q. The subtrees of the
    roots do not interact, and both the articulated-body solve and Carpentier & Mansard's
    derivatives hold in any fixed frame: in the root's own, its S stays its body-frame S (a
    free flyer's: the identity, whose products fold away) and its children's axes lose the
    root's rotation."""
    pose = [None] * len(tree.bodies)
    for b in tree.bodies:
        alg.section(f"{label}: pose of body {b.name} in its root's frame",
                    f"{label}: pose in the root's frame", b.index)
        pose[b.index] = (ROOT_FRAME if b.parent < 0
                         else recursions.world_pose_step(b, kins[b.index], pose))
    return pose


def world_axes(b, kin, pose, U, solver):
    """Body b's joint in world coordinates: S and U = Ia S by columns, D^-1 (d x d, by columns)
    and the rows of D^-1 S^T and D^-1 U^T (d x 6), the last two as their 6 columns solved."""
    R, t = pose
    S = [twist_to_parent(R, t, col) for col in columns(kin[2])]
    Uw = [wrench_to_parent(R, t, col) for col in U]
    d = b.dof
    Dinv = [solver.solve([1.0 if k == c else 0.0 for k in range(d)]) for c in range(d)]
    SD = columns([solver.solve([S[k][c] for k in range(d)]) for c in range(6)])
    UD = columns([solver.solve([Uw[k][c] for k in range(d)]) for c in range(6)])
    return S, Uw, Dinv, SD, UD


def articulated_solve(tree, alg, world, forces, wanted):
    """X = M^-1 B for the columns of B (`forces`: a list of nv-vectors of joint forces): the
    articulated-body algorithm (Featherstone 7.3) with qd = 0 and no gravity, run on every
    column at once, all spatial quantities in world coordinates (no transforms between bodies):
      leaves to root (p^A_i = the sum over the children of p^a_c):
        W_i   = D_i^-1 (B_i - S_i^T P_i)       u_i / D_i, every column
        P_par += P_i + U_i W_i                  the articulated forces p^a_i
      root to leaves:
        X_i   = W_i - D_i^-1 U_i^T A_par        the rows of body i's coordinates
        A_i   = A_par + S_i X_i                 the bodies' accelerations
    Columns with structurally zero forces in a subtree are skipped there (unit forces: P_i only
    in the columns of body i's strict descendants). wanted(body): the columns of X wanted in
    its rows; the rows of X are returned with None elsewhere."""
    W = articulated_backward(tree, alg, world, forces)
    return articulated_forward(tree, alg, world, W, len(forces), wanted)


def articulated_backward(tree, alg, world, forces):
    P = [{} for _ in tree.bodies]           # per body: column -> articulated force p^A (6)
    W = [None] * len(tree.bodies)
    for b in reversed(tree.bodies):
        alg.section(f"mass matrix inverse (Carpentier 2018, backward): body {b.name}",
                    "mass matrix inverse: backward pass", b.index)
        S, U, Dinv, SD, _ = world[b.index]
        own = range(b.v_start, b.v_start + b.dof)
        w = {}
        for c, force in enumerate(forces):
            tb = [force[r] for r in own]
            p = P[b.index].get(c)
            if p is None and all(is_zero(x) for x in tb):
                continue
            x = [dot(row, tb) for row in rows_of(Dinv)]                     # D^-1 B_i
            if p is not None:
                x = [y - dot(row, p) for y, row in zip(x, SD)]                 # - D^-1 S^T P_i
            w[c] = x
        W[b.index] = w
        if b.parent >= 0:
            up = P[b.parent]
            for c, x in w.items():
                pa = [dot([Uc[r] for Uc in U], x) for r in range(6)]          # U_i W_i
                if c in P[b.index]:
                    pa = vadd(P[b.index][c], pa)                              # p^a_i
                up[c] = vadd(up[c], pa) if c in up else pa
    return W


def articulated_forward(tree, alg, world, W, ncols, wanted):
    X = [[None] * ncols for _ in range(tree.nv)]
    A = [None] * len(tree.bodies)           # per body: column -> world acceleration (6)
    for b in tree.bodies:
        alg.section(f"mass matrix inverse (Carpentier 2018, forward): body {b.name}",
                    "mass matrix inverse: forward pass", b.index)
        S, _, _, _, UD = world[b.index]
        parent = A[b.parent] if b.parent >= 0 else {}
        a = {}
        for c in wanted(b):
            x = W[b.index].get(c, [0.0] * b.dof)
            if c in parent:
                x = [y - dot(row, parent[c]) for y, row in zip(x, UD)]
            for r in range(b.dof):
                X[b.v_start + r][c] = x[r]
            Sx = [dot([Sc[r] for Sc in S], x) for r in range(6)]
            a[c] = vadd(parent[c], Sx) if c in parent else Sx
        A[b.index] = a
    return X


def rows_of(cols):
    """The rows of a matrix given by its columns."""
    return [list(r) for r in zip(*cols)]


def is_zero(x):
    return isinstance(x, float) and x == 0.0


def is_signed_permutation(A):
    """A square matrix of constants with one entry +-1 in each row and column, zeros elsewhere."""
    return (all(isinstance(x, float) and x in (0.0, 1.0, -1.0) for row in A for x in row)
            and all(sum(abs(x) for x in row) == 1.0 for row in A)
            and all(sum(abs(x) for x in col) == 1.0 for col in zip(*A)))


# ---- inverse dynamics (Carpentier & Mansard, RSS 2018; Pinocchio's RNEA derivatives) ----------
# In world coordinates, moving coordinate k of joint j along its tangent moves the whole subtree of
# j rigidly by the world twist J_k (S&G 9: dG/dq = G S^), and changes the velocity and
# acceleration of every body of that subtree by the same non-rigid amounts dVdq_k, dAdq_k (plus
# the rigid J_k x ...). A body force changes rigidly (J_k x* f) plus Y dAdq_k + dY dVdq_k, so
# the composite inertias Ycrb, their variations dYcrb and the composite forces F of the
# subtrees give every entry as one or two dot products:
#   row r of body i, column k of a body c in the subtree of i:  J_r . dFdq_k   (dtau_r/dq_k)
#   row r of a body below i, column k of body i:   Ycrb J_r . dAdq_k + dYcrb^T J_r . dVdq_k
# with dFdq_k = dYcrb_c dVdq_k + Ycrb_c dAdq_k (+ J_k x* F_c below c); likewise in qd with
# dAdv_k and J_k, and M_rk = J_r . Ycrb_c J_k (composite rigid bodies in the world frame).
# General joints (S(q), Sdot qd != 0: Euler charts, splines, contact surfaces) add their own
# terms: dS/dq and d(Sdot qd)/dq, d(Sdot qd)/dqd of the joint itself (joint_tangents), which
# Pinocchio's constant-S joints do not have.
def inverse_dynamics_derivatives(tree, alg, q, qd, qdd):
    """(dtau/dq, dtau/dqd, M) at (q, qd, qdd), nv x nv each: Pinocchio's computeRNEADerivatives
    (dtau/dq along integrate(q, v) at v = 0: nv columns, a quaternion joint's in its velocity)."""
    dq, dqd, M, vectors = inverse_dynamics_derivative_columns(tree, alg, q, qd, qdd)
    fill_related_pairs(tree, vectors, {"dq": dq, "dqd": dqd, "M": M})
    return dq, dqd, M


def inverse_dynamics_derivative_columns(tree, alg, q, qd, qdd, world=None):
    """What the inverse dynamics' derivatives are made of: (dq, dqd, M, vectors) with the blocks
    of each body's own coordinates (joint springs, dampers and armature included) filled and
    zeros elsewhere, and the per-coordinate vectors (PAIR_VECTORS) whose dot products give the
    entries between a body and its strict descendants (fill_related_pairs; the loop form of the
    C code takes them as vectorised loops, scleron.unroll.PairLoop). world: world_dynamics at
    (q, qd, qdd) when the caller has it."""
    if world is None:
        world = world_dynamics(tree, alg, recursions.joint_kinematics(tree, alg, q, qd), qd, qdd)
    cols = coordinate_tangents(tree, alg, world, q, qd, qdd)
    dq, dqd, M, vectors = composite_backward(tree, alg, world, cols)
    for b in tree.bodies:                   # the joint springs and dampers (passive_forces)
        for k in range(b.dof):
            i = b.v_start + k
            if b.stiffness is not None:
                dq[i][i] = dq[i][i] + b.stiffness[k]
            if b.damping is not None:
                dqd[i][i] = dqd[i][i] + b.damping[k]
        if b.linear_armature is not None:
            add_turning_armature(b, qd, dqd)
    return dq, dqd, recursions.add_armature(tree, M), vectors


def add_turning_armature(b, qd, dqd):
    """d/dqd of recursions.turning_armature_force, by forward mode (dual numbers) through that
    one function, into the joint's 6 x 6 block of dqd (in place)."""
    s = b.v_start
    v = [Dual(x, unit(k, 6)) for k, x in enumerate(qd[s:s + 6])]
    force = recursions.turning_armature_force(b, v)
    for r in range(6):
        for k, d in enumerate(tangents(force[r], 6)):
            dqd[s + r][s + k] = dqd[s + r][s + k] + d


class WorldBody:
    """One body in world coordinates: its pose (R, t), motion subspace J (columns), twist ov,
    acceleration oa (gravity included as the base's, S&G 22), force F = Y oa + ov x* (Y ov) - f_e
    (S&G 21, 23, the external wrench included), inertia Y and its variation dY; Y, dY and F
    become those of the body's subtree (composite) once the backward pass has reached it. ovp,
    oap: the parent's twist and acceleration (a root's: the world's, gravity as acceleration)."""
    __slots__ = ("pose", "J", "ov", "oa", "F", "Y", "dY", "ovp", "oap")


def world_dynamics(tree, alg, kins, qd, qdd):
    """The forward pass of Carpentier & Mansard's algorithm: the recursive Newton-Euler
    equations (S&G 18-23) written in one fixed frame per root, the root's own at this q
    (root_frame_poses; "world" below means that frame), where no transform between bodies is
    needed (Featherstone 5.3 in ground coordinates; twists and forces move covariantly, so S&G's
    a_k = v_parent x S qd + Sdot qd keeps its form):
        ov_i = ov_p + J_i qd_i
        oa_i = oa_p + ov_p x (J_i qd_i) + c_i + J_i qdd_i     (c_i: the joint's Sdot qd, moved)
        F_i  = Y_i oa_i + ov_i x* (Y_i ov_i) - f_e,i
    with a root's parent the world at rest, gravity as its acceleration, seen from the root."""
    pose = root_frame_poses(tree, alg, kins, "inverse dynamics derivatives")
    base = [0.0, 0.0, 0.0] + [-g for g in tree.gravity]
    out = []
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"inverse dynamics derivatives: world quantities of body {b.name}",
                    "inverse dynamics derivatives: world quantities", b.index)
        w = WorldBody()
        w.pose = R, t = pose[b.index]
        own = slice(b.v_start, b.v_start + b.dof)
        w.J = [twist_to_parent(R, t, col) for col in columns(kin[2])]
        w.Y = constant_rigid_inertia_to_parent(R, t, b.inertia)
        vJ = [dot(row, qd[own]) for row in rows(w.J)]                      # J_i qd_i
        w.ovp = ovp = out[b.parent].ov if b.parent >= 0 else ZERO6
        w.oap = oap = out[b.parent].oa if b.parent >= 0 else recursions.to_child(b, kin, base)
        w.ov = vadd(ovp, vJ)                                                # S&G (20)
        w.oa = vadd(vadd(oap, ad(ovp, vJ)),                                 # S&G (19), (22)
                    vadd(twist_to_parent(R, t, kin[3]), [dot(row, qdd[own]) for row in rows(w.J)]))
        Yv = matvec(w.Y, w.ov)
        w.F = vadd(matvec(w.Y, w.oa), vscale(-1.0, ad_star(w.ov, Yv)))     # S&G (21), (23)
        if b.wrench is not None:
            w.F = vadd(w.F, vscale(-1.0, wrench_to_parent(R, t, b.wrench)))
        w.dY = inertia_variation(w.Y, w.ov)
        out.append(w)
    return out


def joint_forces_from_world(tree, alg, q, qd, world):
    """tau_i = J_i . (the sum of F over body i's subtree), less the joint springs and dampers
    (S&G 24-25 and recursions.passive_forces, in the roots' frames): at q'' = 0 the bias
    forces h."""
    F = [w.F for w in world]
    tau = [None] * tree.nv
    for b in reversed(tree.bodies):
        alg.section(f"forward dynamics derivatives: h at body {b.name}",
                    "forward dynamics derivatives: h = tau(q'' = 0)", b.index)
        for k, J in enumerate(world[b.index].J):
            tau[b.v_start + k] = dot(J, F[b.index])
        if b.parent >= 0:
            F[b.parent] = vadd(F[b.parent], F[b.index])
    return recursions.passive_forces(tree, alg, q, qd, tau)


def accelerate(tree, alg, world, qdd):
    """world_dynamics at q'' from its values at q'' = 0, which are linear in q'': every
    acceleration gains da_i = da_p + J_i qdd_i (S&G 22's J qdd moved down the tree) and every
    force Y_i da_i."""
    da = [None] * len(tree.bodies)
    for b, w in zip(tree.bodies, world):
        alg.section(f"forward dynamics derivatives: world quantities of body {b.name} at q''",
                    "forward dynamics derivatives: world quantities at q''", b.index)
        own = qdd[b.v_start:b.v_start + b.dof]
        Jq = [dot(row, own) for row in rows(w.J)]
        da[b.index] = Jq if b.parent < 0 else vadd(da[b.parent], Jq)
        if b.parent >= 0:
            w.oap = world[b.parent].oa
        w.oa = vadd(w.oa, da[b.index])
        w.F = vadd(w.F, matvec(w.Y, da[b.index]))


def inertia_variation(Y, v):
    """dY such that the body force Y a + v x* (Y v) changes by Y da + dY dv when its twist v
    changes by dv (Pinocchio's Inertia::variation plus the force cross matrix of h = Y v;
    Carpentier & Mansard 2018): dY dv = v x* (Y dv) - Y (v x dv) + dv x* (Y v).
    With Y = [[I, [c]], [-[c], m 1]] (c the first moment m com, scleron's layout), v = [w; u] and
    Y v = [n; f], it is [[[w] I - I [w] - [c][u] - [u][c] - [n], 0], [-2 [f], 0]]: a pure
    linear dv moves no force (its terms cancel), so the right half is exactly zero."""
    I = [row[:3] for row in Y[:3]]
    c = [Y[2][4], Y[0][5], Y[1][3]]
    W, U = skew(v[:3]), skew(v[3:])
    Yv = matvec(Y, v)
    WI = matmul(W, I)                                   # [w] I - I [w] = WI + (WI)^T (I symmetric)
    CU = matmul(skew(c), U)                             # [c][u] + [u][c] = CU + (CU)^T
    n, f = skew(Yv[:3]), skew(Yv[3:])
    top = [[WI[r][k] + WI[k][r] - (CU[r][k] + CU[k][r]) - n[r][k] for k in range(3)] + [0.0] * 3
           for r in range(3)]
    return top + [[-2.0 * x for x in row] + [0.0] * 3 for row in f]


class Tangent:
    """What moving one velocity coordinate k (of body i) does, in world coordinates: J (its
    column of J_i), dV, dA the non-rigid change of every twist and acceleration below it when
    q_k moves (Carpentier & Mansard 2018), dAv the change of the accelerations when qd_k
    does, and dS the change of body i's own J columns (general joints only, else zeros)."""
    __slots__ = ("body", "J", "dV", "dA", "dAv", "dS")


def coordinate_tangents(tree, alg, world, q, qd, qdd):
    """A Tangent per coordinate, from the parent's twist and acceleration:
        dV  = ov_p x J + dS qd_i
        dA  = oa_p x J + ov_p x dV + dS qdd_i + dc + ov_p x (dS qd_i) + (J_i qd_i) x (dS qd_i)
        dAv = (ov_p + ov_i) x J + dc_v = 2 ov_p x J + (J_i qd_i) x J + dc_v
    (dS, dc, dc_v: the joint's own dS/dq, d(Sdot qd)/dq, d(Sdot qd)/dqd in the world; the
    rigid parts J x ov, J x oa are the subtree's motion, accounted for where used). A root's
    parent is the world at rest with gravity as its acceleration (S&G 22), seen from the root's
    frame."""
    out = []
    for b, w in zip(tree.bodies, world):
        alg.section(f"inverse dynamics derivatives: tangents of joint {b.joint_name}",
                    "inverse dynamics derivatives: tangents", b.index)
        ovp, oap = w.ovp, w.oap
        own = slice(b.v_start, b.v_start + b.dof)
        vJ = [dot(row, qd[own]) for row in rows(w.J)]                          # J_i qd_i
        for k, (dS, dc, dcv) in enumerate(joint_tangents(b, alg, q, qd, w.pose)):
            t = Tangent()
            t.body, t.J, t.dS = b.index, w.J[k], dS
            dSqd = [dot(row, qd[own]) for row in rows(dS)]
            dSqdd = [dot(row, qdd[own]) for row in rows(dS)]
            pJ = ad(ovp, t.J)
            t.dV = vadd(pJ, dSqd)
            t.dA = vadd(vadd(vadd(ad(oap, t.J), ad(ovp, t.dV)), vadd(dSqdd, dc)),
                        vadd(ad(ovp, dSqd), ad(vJ, dSqd)))
            # (ov_p + ov_i) x J = 2 ov_p x J + (J_i qd_i) x J, whose last term is 0 for one
            # coordinate (J_i qd_i = qd J): a sum instead of a cross product
            vJxJ = ad(vJ, t.J) if b.dof > 1 else ZERO6
            t.dAv = vadd(vadd(vadd(pJ, pJ), vJxJ), dcv)
            out.append(t)
    return out


def joint_tangents(b, alg, q, qd, pose):
    """For each velocity coordinate k of body b's joint: (dS/dq_k (columns), d(Sdot qd)/dq_k,
    d(Sdot qd)/dqd_k), in world coordinates, q_k moved along integrate(q, v) (the joint's own
    manifold). Forward mode (dual numbers) through the joint's kinematics alone: exact zeros,
    hence no code, for joints with a constant S and Sdot = 0 (revolute, prismatic, quaternion)."""
    d = b.dof
    dual = DualAlgebra(alg)
    qs = q[b.q_start:b.q_start + b.nq]
    zero = [0.0] * (2 * d)
    moved = manifolds.integrate(configuration.configuration_space(b), dual,
                                [Dual(x, zero) for x in qs],
                                [Dual(0.0, unit(k, 2 * d)) for k in range(d)])
    qx = [Dual(x, tangents(m, 2 * d)) for x, m in zip(qs, moved)]     # values stay q itself
    qdx = [Dual(x, unit(d + k, 2 * d)) for k, x in enumerate(qd[b.v_start:b.v_start + d])]
    _, _, S, c = b.joint.kinematics(dual, qx, qdx)
    R, t = pose
    out = []
    for k in range(d):
        dS = [twist_to_parent(R, t, [tangents(x, 2 * d)[k] for x in col]) for col in columns(S)]
        dc = twist_to_parent(R, t, [tangents(x, 2 * d)[k] for x in c])
        dcv = twist_to_parent(R, t, [tangents(x, 2 * d)[d + k] for x in c])
        out.append((dS, dc, dcv))
    return out


def composite_backward(tree, alg, world, cols):
    """The backward pass of Carpentier & Mansard's algorithm, leaves to root: with the
    composite Ycrb, dYcrb and F of body i's subtree, the block of i's own coordinates, and per
    coordinate the vectors (PAIR_VECTORS) whose dot products give the entries between i and the
    bodies of its subtree (fill_related_pairs):
      row r of body i, column c of a strict descendant:  dq = J_r . dFdq_c, dqd = J_r . dFdv_c,
                                                         M = J_r . Ycrb_c J_c
      row c of a strict descendant, column r of body i:  dq = Ycrb_c J_c . dA_r
                                                           + dYcrb_c^T J_c . dV_r
                                                         dqd = Ycrb_c J_c . dAv_r
                                                           + dYcrb_c^T J_c . J_r
    dYcrb's right half is zero (inertia_variation), so dYcrb^T J has three entries."""
    nv = tree.nv
    dq, dqd, M = ([[0.0] * nv for _ in range(nv)] for _ in range(3))
    vectors = {name: [None] * nv for name in PAIR_VECTORS}
    for b in reversed(tree.bodies):
        alg.section(f"inverse dynamics derivatives: backward pass, body {b.name}",
                    "inverse dynamics derivatives: backward pass", b.index)
        w = world[b.index]
        own = list(range(b.v_start, b.v_start + b.dof))
        dYt = transpose(w.dY)
        YJ, dFdq, dFdv = {}, {}, {}
        for k in own:
            t = cols[k]
            YJ[k] = matvec(w.Y, t.J)                                          # dtau/dqdd
            dFdq[k] = vadd(matvec(w.dY, t.dV), matvec(w.Y, t.dA))
            dFdv[k] = vadd(matvec(w.dY, t.J), matvec(w.Y, t.dAv))
        for a, r in enumerate(own):                    # the block of the body's own coordinates
            J = cols[r].J
            for k in own:
                dq[r][k] = dot(J, dFdq[k]) + dot(cols[k].dS[a], w.F)    # + its S moving with q_k
                dqd[r][k] = dot(J, dFdv[k])
                M[r][k] = dot(J, YJ[k])
        for k in own:
            t = cols[k]
            dYtJ = matvec(dYt, t.J)[:3]                                       # (the rest is 0)
            vectors["J"][k] = t.J
            vectors["dFdq"][k] = vadd(dFdq[k], cross_force(t.J, w.F))  # + the subtree's force
            vectors["dFdv"][k] = dFdv[k]                                #   moving rigidly
            vectors["YJ"][k] = YJ[k] + dYtJ
            vectors["dAdV"][k] = t.dA + t.dV[:3]
            vectors["dAvJ"][k] = t.dAv + t.J[:3]
        if b.parent >= 0:
            p = world[b.parent]
            p.Y = sym_add(p.Y, w.Y)
            p.dY = [[x + y for x, y in zip(rp, rw)] for rp, rw in zip(p.dY, w.dY)]
            p.F = vadd(p.F, w.F)
    return dq, dqd, M, vectors


# The per-coordinate vectors of composite_backward and the dot products they enter, as
# (output, a, b, terms, ranges): output[row][col] = the first `terms` entries of a[row] . b[col],
# over the "down" ranges (row r, its strict descendants' columns: related_ranges) or the "up"
# ones (row c, its strict ancestors' columns). Written once: fill_related_pairs runs it on
# lists, the C loop form (templates/pairs.c.j2) on arrays stored vector-entry-major.
PAIR_VECTORS = {"J": 6, "dFdq": 6, "dFdv": 6, "YJ": 9, "dAdV": 9, "dAvJ": 9}
PAIR_PRODUCTS = (("dq", "J", "dFdq", 6, "down"), ("dqd", "J", "dFdv", 6, "down"),
                 ("M", "J", "YJ", 6, "down"), ("M", "YJ", "J", 6, "up"),
                 ("dq", "YJ", "dAdV", 9, "up"), ("dqd", "YJ", "dAvJ", 9, "up"))


def related_ranges(tree):
    """{"down": [(row r, first, end)], "up": [(row c, first, end)]}: the coordinates c of the
    strict descendants of r's body, and for each c those r of the strict ancestors of its body,
    as ranges of consecutive columns (one range per row on a chain)."""
    body_of = [b.index for b in tree.bodies for _ in range(b.dof)]
    below = [set() for _ in tree.bodies]                    # strict descendants
    for b in reversed(tree.bodies):
        if b.parent >= 0:
            below[b.parent] |= below[b.index] | {b.index}
    down = [[c for c in range(tree.nv) if body_of[c] in below[body_of[r]]] for r in range(tree.nv)]
    up = [[] for _ in range(tree.nv)]
    for r, cs in enumerate(down):
        for c in cs:
            up[c].append(r)
    return {"down": [(r, f, e) for r, cs in enumerate(down) for f, e in consecutive_runs(cs)],
            "up": [(c, f, e) for c, rs in enumerate(up) for f, e in consecutive_runs(rs)]}


def fill_related_pairs(tree, vectors, outputs):
    """The entries between each body and its strict descendants (PAIR_PRODUCTS), into outputs
    (name -> nv x nv nested lists; products of outputs not given are skipped)."""
    ranges = related_ranges(tree)
    for out, a, b, terms, which in PAIR_PRODUCTS:
        if out not in outputs:
            continue
        for row, first, end in ranges[which]:
            for col in range(first, end):
                outputs[out][row][col] = dot(vectors[a][row][:terms], vectors[b][col][:terms])


# ---- forward dynamics (Carpentier & Mansard 2018) ------------------------------------------------
# dqdd/dx = -M^-1 dtau/dx: up to this many coordinates as products with M^-1 (4 nv^3 operations,
# the smaller code there), above it by the articulated-body solve of the 2 nv columns of
# -dtau/dx (articulated_solve: about 50 operations per body and column, so O(nv^2) code).
SOLVE_FROM_NV = 24


def forward_dynamics_derivative_factors(tree, alg, q, qd, tau):
    """(dtau/dq, dtau/dqd, M^-1, free) at qdd = FD(q, qd, tau): what the forward dynamics'
    derivatives are made of (free: the free roots' columns, free_root_columns)."""
    dq, dqd, vectors, Minv, free = forward_dynamics_derivative_columns(tree, alg, q, qd, tau)
    fill_related_pairs(tree, vectors, {"dq": dq, "dqd": dqd})
    return dq, dqd, Minv, free


def forward_dynamics_derivative_columns(tree, alg, q, qd, tau, blocks=None):
    """The factors with dtau/dq and dtau/dqd as inverse_dynamics_derivative_columns gives them
    (own blocks, and the vectors of the entries between related bodies): (dq, dqd, vectors,
    M^-1, free; blocks: the ColumnBlocks M^-1 is formed by, mass_matrix_inverse; free: the
    columns of free roots in closed form, taken out of dq, dqd: free_root_columns). The loop
    form of the C code forms the pairs and the products -M^-1 dtau/dx in loops
    (scleron.unroll.ProductLoop).
    M^-1 factors the M of world_dynamics' root-frame inertias (composite_mass_matrix: the
    backward pass's own expressions, so M costs its dot products; panda 12,038 -> 11,255
    instructions per call against the body-frame CRBA's M), and q'' = M^-1 (tau - h) with h from
    world_dynamics at q'' = 0, which accelerate then carries to q'' (no body-frame passes 1-6).
    Where C loops form M^-1 after this program (blocks given), M^-1 is not a value of the
    program: q'' = M^-1 (tau - h) is then the articulated-body solve of the one column tau - h
    (articulated_solve) on the factors the loops take (articulated_world, shared)."""
    kins = recursions.joint_kinematics(tree, alg, q, qd)
    world = world_dynamics(tree, alg, kins, qd, [0.0] * tree.nv)
    qdd, Minv = accelerations_and_inverse(tree, alg, q, qd, tau, world, blocks)
    accelerate(tree, alg, world, qdd)
    dq, dqd, _, vectors = inverse_dynamics_derivative_columns(tree, alg, q, qd, qdd, world)
    return dq, dqd, vectors, Minv, free_root_columns(tree, alg, world, dq, dqd, vectors)


# ---- external wrenches in world axes -------------------------------------------------------------
def turning_wrench_columns(tree, alg, q, local):
    """C = sum over frames k of J_k^T [[n_k] x; [f_k] x] J_k,w (nv x nv): what holding the
    frames' wrenches fixed in world axes, rather than in the frames' (n_k, f_k: their values in
    the frame's axes at q, frames.world_aligned_wrenches), adds to d(sum J_k^T w_k)/dq. Turning
    the frame by dq_j turns R^T w by (R^T w) x w_j, w_j = J_k,w e_j its local angular velocity,
    so d tau/dq gains -C and d qdd/dq gains M^-1 C. J_k: the frames' local Jacobians."""
    alg.section("external wrenches in world axes: their turn in the frames, J^T [w] x J_w")
    tree = frames.on_wrench_frames(tree)                  # (the frames of fext's rows)
    C = [[0.0] * tree.nv for _ in range(tree.nv)]
    for k, (f, J) in enumerate(zip(tree.frames, frames.frame_jacobians(tree, alg, q, "local"))):
        if f.body < 0:
            continue
        n, force = local[6 * k:6 * k + 3], local[6 * k + 3:6 * k + 6]
        cols = frames.support(tree, f.body)
        turned = {}
        for c in cols:
            w = [J[r][c] for r in range(3)]                           # J_k,w e_c
            turned[c] = cross(n, w) + cross(force, w)
        for r in cols:
            for c in cols:
                C[r][c] = C[r][c] + dot([J[i][r] for i in range(6)], turned[c])
    return C


def world_aligned_fext_before_calls(tree, alg, q, qd, tau, *rest):
    """The chained forms' array made before their calls: fext (the last input, in world axes at
    the frames' origins) in the frames' own axes at q, which the frame-fixed functions take."""
    return {"fext": frames.world_aligned_wrenches(tree, alg, q, rest[-1])}


def forward_dynamics_derivatives_world_aligned_after_calls(tree, alg, q, qd, tau, fext, dq, dqd,
                                                           Minv):
    """forward_dynamics_derivatives_world_aligned_fext from the frame-fixed wrenches' (the
    functions with fext in the frames' axes, called on world_aligned_wrenches' values): d qdd/dq
    gains M^-1 C (turning_wrench_columns)."""
    dq, dqd, Minv = (square(x, tree.nv) for x in (dq, dqd, Minv))
    return with_turning_columns(tree, alg, q, fext, dq, Minv), dqd, Minv


def square(flat, n):
    """An n x n matrix (rows) from its row-major entries (a called function's output)."""
    return [list(flat[r * n:(r + 1) * n]) for r in range(n)]


def with_turning_columns(tree, alg, q, fext, dq, Minv):
    """d qdd/dq with the wrenches held in the frames' axes, plus M^-1 C: the same with fext
    (world axes) held in the world."""
    C = turning_wrench_columns(tree, alg, q, frames.world_aligned_wrenches(tree, alg, q, fext))
    alg.section("external wrenches in world axes: d qdd/dq + M^-1 C")
    MC = negated_product(Minv, C)
    return [[a - m for a, m in zip(ra, rm)] for ra, rm in zip(dq, MC)]


def _on_world_aligned_wrenches(tree, alg, q, fext):
    """(the tree with fext's wrenches in the frames' axes at q, C of turning_wrench_columns)."""
    local = frames.world_aligned_wrenches(tree, alg, q, fext)
    view = frames.with_external_wrenches(tree, alg, local)
    return view, turning_wrench_columns(tree, alg, q, local)


def inverse_dynamics_derivatives_world_aligned_fext(tree, alg, q, qd, qdd, fext):
    """inverse_dynamics_derivatives with fext in world axes at the frames' origins: d tau/dq of
    the wrenches held in the frames' axes, less C (turning_wrench_columns)."""
    view, C = _on_world_aligned_wrenches(tree, alg, q, fext)
    dq, dqd, M = inverse_dynamics_derivatives(view, alg, q, qd, qdd)
    return [[a - c for a, c in zip(ra, rc)] for ra, rc in zip(dq, C)], dqd, M


def forward_dynamics_derivatives_world_aligned_fext(tree, alg, q, qd, tau, fext):
    """forward_dynamics_derivatives with fext in world axes at the frames' origins: d qdd/dq of
    the wrenches held in the frames' axes, plus M^-1 C (turning_wrench_columns)."""
    view, C = _on_world_aligned_wrenches(tree, alg, q, fext)
    dq, dqd, Minv = forward_dynamics_derivatives(view, alg, q, qd, tau)
    alg.section("external wrenches in world axes: d qdd/dq + M^-1 C")
    MC = negated_product(Minv, C)
    return [[a - m for a, m in zip(ra, rm)] for ra, rm in zip(dq, MC)], dqd, Minv


# ---- a free-floating root: its columns of dqdd/dx in closed form ---------------------------------
def free_roots(tree):
    """The roots that move freely in space and feel nothing from the world but uniform gravity:
    joint configuration "se3" (q moves along the root's body twists J_k = S e_k, S square and
    constant: the free flyer), no spring, damper or armature of their own, no mimic coupling."""
    if tree.coupling is not None:
        return []
    return [b for b in tree.bodies if b.parent < 0 and b.dof == 6
            and configuration.configuration_space(b) == "se3"
            and b.stiffness is None and b.damping is None and b.armature is None]


def free_root_columns(tree, alg, world, dq, dqd, vectors):
    """The forward dynamics' derivatives along a free root's tangents (free_roots), in closed
    form, and those columns taken out of dtau/dq, dtau/dqd (set to zero, own blocks and pair
    vectors) so that -M^-1 dtau/dx gives zeros there. Returns [(output, row, column, value)]:
    what to write over the product's zeros (rows of other bodies stay zero).
    Uniform gravity is the world's acceleration a_g; seen from the root's frame it enters only
    as the root's parent acceleration (S&G 22), which the root's own q'' could take: tau(a_g +
    da) = tau(a_g) + M[:, root] S^-1 da. Moving the whole subtree along the root's tangent J_k
    changes nothing else (the bodies' relative motion and their body-frame wrenches stay), and
    turns a_g seen from the root by a_g x J_k, so dtau/dq_k = M[:, root] S^-1 (a_g x J_k) and
        dqdd/dq_k = -M^-1 dtau/dq_k = -S^-1 (a_g x J_k)  in the root's rows, 0 in all others.
    A velocity J_k that is a pure translation (no angular part) adds the same linear velocity
    to every point and changes no classical acceleration (Galilean invariance); the spatial
    accelerations change by J_k x ov below the root, which the root's q'' takes up:
        dqdd/dqd_k = -S^-1 (ov_root x J_k)  in the root's rows, 0 in all others."""
    out = []
    for b in free_roots(tree):
        alg.section(f"forward dynamics derivatives: free root {b.name} in closed form",
                    "forward dynamics derivatives: free roots in closed form", b.index)
        w = world[b.index]
        own = range(b.v_start, b.v_start + b.dof)
        Sinv = transpose(rows(w.J))                 # S is a signed permutation: S^-1 = S^T
        if not is_signed_permutation(Sinv):
            continue
        translations = [k for k in own if all(is_zero(x) for x in w.J[k - b.v_start][:3])]
        for key, D, cols, factor, x in (("dq", dq, own, "dAdV", w.oap),
                                        ("dqd", dqd, translations, "dAvJ", w.ov)):
            for k in cols:
                vectors[factor][k] = [0.0] * PAIR_VECTORS[factor]
                for r in own:
                    D[r][k] = 0.0
                moved = matvec(Sinv, ad(x, w.J[k - b.v_start]))
                out += [(key, r, k, -moved[r - b.v_start]) for r in own]
    return out


def accelerations_and_inverse(tree, alg, q, qd, tau, world, blocks):
    """(q'', M^-1) with q'' = M^-1 (tau - h), h from world_dynamics at q'' = 0: M^-1 by the LTDL
    factors of the composite M where it is a value of the program (blocks None); else formed by
    the C loops after the program, and q'' the articulated-body solve of the one column tau - h
    on the factors those loops take."""
    if blocks is None:
        factors = mass_matrix_factors(tree, alg, composite_mass_matrix(tree, alg, world))
        Minv = inverse_from_ltdl(alg, *factors)
        h = joint_forces_from_world(tree, alg, q, qd, world)
        alg.section("forward dynamics derivatives: q'' = M^-1 (tau - h) by the LTDL factors")
        return ltdl_solve(*factors, [t - x for t, x in zip(tau, h)]), Minv
    h = joint_forces_from_world(tree, alg, q, qd, world)
    alg.section("forward dynamics derivatives: q'' = M^-1 (tau - h)")
    axes = articulated_world(tree, alg, q)
    solved = articulated_solve(tree, alg, axes, [[t - x for t, x in zip(tau, h)]], lambda b: [0])
    return [row[0] for row in solved], articulated_mass_matrix_inverse(tree, alg, q, blocks, axes)


def derivative_accelerations(tree, alg, q, qd, tau):
    """q'' = FD(q, qd, tau) as forward_dynamics_derivatives forms it on the way (world_dynamics,
    the LTDL factors of the composite M): in a program these are the very nodes it built
    (hash-consed), so a function that wants q'' beside the derivatives pays nothing more."""
    kins = recursions.joint_kinematics(tree, alg, q, qd)
    world = world_dynamics(tree, alg, kins, qd, [0.0] * tree.nv)
    return accelerations_and_inverse(tree, alg, q, qd, tau, world, None)[0]


def forward_dynamics_derivatives(tree, alg, q, qd, tau):
    """(dqdd/dq, dqdd/dqd, M^-1) at (q, qd, tau): M qdd + h(q, qd) = tau differentiated at fixed
    tau gives dqdd/dx = -M^-1 dtau/dx at qdd = FD(q, qd, tau), and dqdd/dtau = M^-1.
    Pinocchio's computeABADerivatives (q columns in the tangent space)."""
    nv = tree.nv
    dq, dqd, Minv, free = forward_dynamics_derivative_factors(tree, alg, q, qd, tau)
    if nv < SOLVE_FROM_NV:
        alg.section("forward dynamics derivatives: -M^-1 dtau/dq, -M^-1 dtau/dqd",
                    "forward dynamics derivatives: products")
        out = {"dq": negated_product(Minv, dq), "dqd": negated_product(Minv, dqd)}
    else:
        forces = [[-dq[r][c] for r in range(nv)] for c in range(nv)]
        forces += [[-dqd[r][c] for r in range(nv)] for c in range(nv)]
        X = articulated_solve(tree, alg, articulated_world(tree, alg, q), forces,
                              lambda b: range(2 * nv))
        out = {"dq": [row[:nv] for row in X], "dqd": [row[nv:] for row in X]}
    for key, r, c, value in free:                     # the free roots' columns (zero above)
        out[key][r][c] = value
    return out["dq"], out["dqd"], Minv


def chain_bodies(tree):
    """(v_start, dof) of each body with coordinates, root first, where the tree is one chain
    (each such body the child of the one before); else None."""
    moving = [b for b in tree.bodies if b.dof]
    for prev, b in zip(moving, moving[1:]):
        p = b.parent
        while p >= 0 and tree.bodies[p].dof == 0:
            p = tree.bodies[p].parent
        if p != prev.index:
            return None
    return [(b.v_start, b.dof) for b in moving] if moving and tree.coupling is None else None


def chain_negated_products(chain, Minv, own, vectors):
    """-M^-1 dtau/dq and -M^-1 dtau/dqd on a chain without forming dtau/dx, in O(nv^2):
    column c of dtau/dx is the own block's column, J_r . B_c in the rows r of the bodies above
    c's and YJ_r . D_c in the rows below (PAIR_PRODUCTS: B = dFdq or dFdv, D = dAdV or dAvJ), so
        M^-1 dtau/dx [:, c] = G_c B_c + H_c D_c + sum over own r of M^-1[:, r] own[r][c]
    with G_c = sum over the coordinates r above c's body of M^-1[:, r] J_r^T (nv x 6) and H_c the
    same sum of M^-1[:, r] YJ_r^T (nv x 9) below it: prefix and suffix sums, one rank-1 update
    per coordinate, which both derivatives share (45 nv^2 multiply-adds against the 2 nv^3 of
    the products and 15 nv^2 of the pairs). chain: chain_bodies; own: {"dq", "dqd"} -> nv x nv
    lists of which the own blocks are read; vectors: PAIR_VECTORS. The C loop form
    (templates/chainproducts.c.j2) runs the same steps."""
    nv = len(Minv)
    pairs = (("dq", "dFdq", "dAdV"), ("dqd", "dFdv", "dAvJ"))
    T = {key: [None] * nv for key, _, _ in pairs}           # columns of M^-1 dtau/dx, by c
    H = [[0.0] * nv for _ in range(9)]                      # H^T, row k: sum YJ_r[k] M^-1[r]
    for s, d in reversed(chain):                            # leaves to root: the rows below
        for c in range(s, s + d):
            for key, _, D in pairs:
                Dc = vectors[D][c]
                T[key][c] = [sum(Dc[k] * H[k][i] for k in range(9)) +
                             sum(own[key][r][c] * Minv[r][i] for r in range(s, s + d))
                             for i in range(nv)]
        for r in range(s, s + d):
            for k in range(9):
                H[k] = [h + vectors["YJ"][r][k] * m for h, m in zip(H[k], Minv[r])]
    G = [[0.0] * nv for _ in range(6)]                      # G^T, row j: sum J_r[j] M^-1[r]
    out = {key: [[None] * nv for _ in range(nv)] for key, _, _ in pairs}
    for s, d in chain:                                      # root to leaves: the rows above
        for c in range(s, s + d):
            for key, B, _ in pairs:
                Bc = vectors[B][c]
                for i in range(nv):
                    out[key][i][c] = -(T[key][c][i] + sum(Bc[j] * G[j][i] for j in range(6)))
        for r in range(s, s + d):
            for j in range(6):
                G[j] = [g + vectors["J"][r][j] * m for g, m in zip(G[j], Minv[r])]
    return out["dq"], out["dqd"]


def negated_product(A, B):
    """-A B for nested lists (structural zeros of B fold away)."""
    cols = [[-x for x in col] for col in columns(B)]
    return [[dot(row, col) for col in cols] for row in A]


# ---- small helpers -------------------------------------------------------------------------------
ZERO6 = recursions.ZERO6


def rows(cols):
    """The 6 rows of a 6 x d matrix given by its d columns."""
    return [[c[r] for c in cols] for r in range(6)]


def skew(x):
    return [[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]]


def neg(M):
    return [[-x for x in row] for row in M]


def cross_force(x, f):
    """x x* f = -ad_x^T f (Featherstone's force cross product)."""
    return [-y for y in ad_star(x, f)]


def unit(k, n):
    return [1.0 if i == k else 0.0 for i in range(n)]


def tangents(x, n):
    """The tangent parts of a dual number (zeros for a constant)."""
    return list(x.b) if isinstance(x, Dual) else [0.0] * n


# ---- derivatives by dual numbers through the recursions themselves ------------------------------
def derivatives_by_duals(tree, alg, function, q, *rates, **options):
    """The derivatives of function(tree, alg, q, *rates, **options) by forward mode: dual numbers
    with nv tangents along integrate(q, v) at v = 0 (configuration.integrate in the dual algebra:
    Pinocchio's tangent convention, nv columns for a quaternion joint) and nv along each rate
    (qd, qdd). Exact for any joint; tangents that stay structural zeros fold away in a program,
    so a frame's derivatives cost its ancestors' coordinates only. Returns one block per
    argument, each shaped as the function's output with a last axis of nv."""
    nv = tree.nv
    n = nv * (1 + len(rates))
    dual = DualAlgebra(alg)
    zero = [0.0] * n
    moved = configuration.integrate(tree, dual, [Dual(x, zero) for x in q],
                                    [Dual(0.0, unit(k, n)) for k in range(nv)], [1.0])
    qx = [Dual(x, tangents(m, n)) for x, m in zip(q, moved)]
    rx = [[Dual(x, unit((i + 1) * nv + k, n)) for k, x in enumerate(r)]
          for i, r in enumerate(rates)]
    out = function(tree, dual, qx, *rx, **options)
    return [_tangent_block(out, n, slice(i * nv, (i + 1) * nv)) for i in range(1 + len(rates))]


def frame_velocity_derivatives(tree, alg, q, qd, reference="local_world_aligned"):
    """(d v_f/dq, d v_f/dqd), each (nframes, 6, nv): the derivatives of every frame's twist
    (frames.frame_velocities) in the reference, q along integrate(q, v) (Pinocchio's
    getFrameVelocityDerivatives, rows [w; v]); d v_f/dqd is the frame Jacobian."""
    return tuple(derivatives_by_duals(tree, alg, frames.frame_velocities, q, qd,
                                      reference=reference))


def frame_acceleration_derivatives(tree, alg, q, qd, qdd, reference="local_world_aligned"):
    """(d a_f/dq, d a_f/dqd, d a_f/dqdd), each (nframes, 6, nv): the derivatives of every
    frame's classical acceleration (frames.frame_accelerations) in the reference, q along
    integrate(q, v): a contact's p'' = 0 linearised (d a_f/dqdd is the frame Jacobian)."""
    return tuple(derivatives_by_duals(tree, alg, frames.frame_accelerations, q, qd, qdd,
                                      reference=reference))


def _tangent_block(value, n, which):
    """The tangents `which` of every dual in a nested list, the nesting kept."""
    if isinstance(value, (list, tuple)):
        return [_tangent_block(v, n, which) for v in value]
    return tangents(value, n)[which]


def inverse_dynamics_jacobians_by_duals(tree, alg, q, qd, qdd):
    """(dtau/dq, dtau/dqd) by forward mode through recursions.inverse_dynamics (q'' held:
    derivatives_by_duals). Independent of the analytical route above (the tests' oracle); as
    generated code it costs more (panda 13k operations against 9k, RC50 428k against 138k)."""
    def at_qdd(tree_, dual, q_, qd_):
        return recursions.inverse_dynamics(tree_, dual, q_, qd_, [Dual(x, [0.0] * (2 * tree.nv))
                                                                 for x in qdd])
    return tuple(derivatives_by_duals(tree, alg, at_qdd, q, qd))
