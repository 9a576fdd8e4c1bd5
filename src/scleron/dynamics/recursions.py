"""The recursions, written once. Each function takes an algebra `alg` (FloatAlgebra for the
numeric reference, a program algebra for the unrolled code) and lists of scalars q, qd, ...

Joint springs and dampers (Sueda 2.6) and constant external body wrenches are model data that
enter here, in the one code path both algebras run: a body's wrench f_e is the f_e of S&G (21),
b_k = -ad*_v J v - f_e, so it reaches every ancestor joint through pass 3 as -S^T (...) f_e; the
passive joint force tau_p = -K (q - q_rest) - D qd is subtracted from the joint forces of pass 3.
Hence h (bias forces, inverse dynamics at qdd = 0) contains -tau_p and the wrench terms,
M qdd + h = tau holds with tau the actuator force alone, and forward dynamics includes them.
A joint's armature a_k (MuJoCo's: a rotor's reflected inertia) adds diag(a) to M: a_k qdd_k in
inverse dynamics, to D = S^T Ia S in the articulated-body passes (Featherstone 7.3 with rotor
inertia), to the mass matrix diagonal and 1/2 a_k qd_k^2 to the kinetic energy.
Zero stiffness, damping, armature and wrench add nothing (not even a + 0 in the program).

Equation numbers are Si & Guenter (S&G), "Linear-Time Dynamics for Multibody Systems with
General Joint Models"; Featherstone (RBDA) where noted. Gravity enters as a base acceleration
alpha_0 = [0; -g] (Featherstone 5.3), which gives the same joint forces as S&G's external
gravity wrench f_e on every body.
"""
from dataclasses import dataclass
from functools import wraps
from typing import Callable

from ..errors import ModelError

from .tree import coordinate_ancestors, coordinate_parents

from .spatial import (ad, body_wrench, columns, cross, dot, inertia_to_parent, matmul, matvec,
                      mat_t_vec, rigid_inertia_to_parent, rotation_product, sym_add,
                      twist_to_child, twist_to_parent, vadd, vscale, vsub, wrench_to_parent)

ZERO6 = [0.0] * 6


def uncoupling_hint(tree):
    """How to give each mimic joint its own coordinate, for the kind of file the model is from."""
    source = str(tree.source or "").lower()
    if source.endswith((".yaml", ".yml")):
        return "leave out the joints' mimic: entries to give each joint its own coordinate"
    if not source.endswith((".urdf", ".xml")):      # (a model built in Python)
        return "set the joints' mimic to None to give each joint its own coordinate"
    return ("load the URDF with mimic='independent' (--mimic independent) to give each joint its "
            "own coordinate")


# ---- per-joint quantities and frame changes ---------------------------------------------------
class joint_kinematics:
    """For every body: (R, t) of Q(q_k), S_k and Sdot_k qd_k, evaluated in the algebra.

    Evaluated on first use, so in the unrolled program each joint's sin/cos sit next to the
    first pass that needs them rather than all at the top."""

    def __init__(self, tree, alg, q, qd):
        if tree.coupling is not None:       # docs/mimic.md: only through_coupling's functions
            raise ModelError("this function is not available yet for a model with mimic joints "
                             "(docs/mimic.md: forward and inverse dynamics, mass matrix, bias and "
                             "static forces, energies, centre of mass, integrate and difference "
                             "and their Jacobians are, and named with --functions: M^-1 (minv), "
                             "the dynamics under external wrenches in the frames' axes (fd_fext, "
                             "id_fext) and the Euler step (step, step_fext)); "
                             f"{uncoupling_hint(tree)}",
                             source=tree.source, element=f"model '{tree.name}'")
        self.tree, self.alg, self.q, self.qd = tree, alg, q, qd
        self.cache = {}

    def __getitem__(self, i):
        if i not in self.cache:
            b = self.tree.bodies[i]
            qs = self.q[b.q_start:b.q_start + b.nq]
            qds = self.qd[b.v_start:b.v_start + b.dof] if self.qd is not None else [0.0] * b.dof
            with self.alg.aside(f"joint {b.joint_name} ({b.joint.type}): Q(q), S, Sdot qd  "
                                "(S&G 9, 12)",
                                "joint kinematics: Q(q), S, Sdot qd (S&G 9, 12)", b.index):
                R, t, S, c = b.joint.kinematics(self.alg, qs, qds)
                if b.turn_after is not None:        # Q(q) Rot(u, c): S and Sdot keep (body_frames)
                    R = rotation_product(R, b.turn_after)
                self.cache[i] = R, t, S, c
        return self.cache[i]

    def __len__(self):
        return len(self.tree.bodies)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __reversed__(self):
        return (self[i] for i in reversed(range(len(self))))


def to_child(b, kin, x):
    """Ad_{G^-1} x with G = X_tree Q(q): parent-frame twist in the child frame (S&G 8)."""
    if b.placement is not None:
        x = twist_to_child(*b.placement, x)
    R, t, _, _ = kin
    return twist_to_child(R, t, x)


def to_parent(b, kin, f):
    """Ad_{G^-1}^T f: child-frame wrench in the parent frame (S&G 14)."""
    R, t, _, _ = kin
    f = wrench_to_parent(R, t, f)
    if b.placement is not None:
        f = wrench_to_parent(*b.placement, f)
    return f


def inertia_into_parent(b, kin, A):
    """Ad_{G^-1}^T A Ad_{G^-1} (S&G 27, first term)."""
    R, t, _, _ = kin
    A = inertia_to_parent(R, t, A)
    if b.placement is not None:
        A = inertia_to_parent(*b.placement, A)
    return A


def composite_inertia_into_parent(b, kin, I):
    """The same for a composite rigid-body inertia, in compact form (Featherstone Tab. A.4)."""
    R, t, _, _ = kin
    I = rigid_inertia_to_parent(R, t, I)
    if b.placement is not None:
        I = rigid_inertia_to_parent(*b.placement, I)
    return I


def joint_transform(b, kin):
    """(R, t) of G = X_tree Q(q), placement and joint combined: the child frame in the parent's."""
    R, t, _, _ = kin
    if b.placement is None:
        return R, t
    Rp, tp = b.placement
    return matmul(Rp, R), vadd(matvec(Rp, t), tp)


def S_times(kin, x):
    """S x for a d-vector x."""
    S = kin[2]
    return [dot(row, x) for row in S]


def S_transpose(kin, f):
    """S^T f for a 6-vector f (S&G 15, 25)."""
    return mat_t_vec(kin[2], f)


def unit_columns(S):
    """Indices k where a column of S is exactly the constant unit vector e_k."""
    out = []
    for col in columns(S):
        nonzero = [k for k, x in enumerate(col) if not (isinstance(x, float) and x == 0.0)]
        if len(nonzero) == 1 and isinstance(col[nonzero[0]], float) and col[nonzero[0]] == 1.0:
            out.append(nonzero[0])
    return out


# ---- small symmetric solves: Omega_k^{-1} for a d_k-DOF joint (d <= 6) --------------------------
class SPDSolver:
    """LDL^T of a small symmetric positive definite matrix, unrolled; solves with it."""

    def __init__(self, A):
        n = len(A)
        self.n = n
        L = [[0.0] * n for _ in range(n)]
        d = [0.0] * n
        inv_d = [0.0] * n
        for j in range(n):
            s = A[j][j]
            for k in range(j):
                s = s - L[j][k] * L[j][k] * d[k]
            d[j] = s
            inv_d[j] = 1.0 / s
            for i in range(j + 1, n):
                s = A[i][j]
                for k in range(j):
                    s = s - L[i][k] * L[j][k] * d[k]
                L[i][j] = s * inv_d[j]
        self.L, self.d, self.inv_d = L, d, inv_d

    @classmethod
    def from_factors(cls, L, inv_d):
        """A solver from stored factors: L unit lower triangular (nested lists), 1/d."""
        self = cls.__new__(cls)
        self.n, self.L, self.inv_d, self.d = len(inv_d), L, list(inv_d), None
        return self

    def solve(self, b):
        n, L = self.n, self.L
        y = list(b)
        for i in range(n):
            for k in range(i):
                y[i] = y[i] - L[i][k] * y[k]
        y = [y[i] * self.inv_d[i] for i in range(n)]
        for i in reversed(range(n)):
            for k in range(i + 1, n):
                y[i] = y[i] - L[k][i] * y[k]
        return y


# ---- mimic joints: q_full = G q + b, qd_full = G qd, forces G^T f (docs/mimic.md) -------------
def _scaled(alg, a, x):
    """a x, folded where a = 1 (no multiplication in the program)."""
    return x if a == 1.0 else a * x


def expand(tree, alg, kind, x):
    """An input of a coupled tree's function in the full tree's coordinates: kind "q" (a
    configuration: a q_r + b), "v" (a velocity or acceleration: a v_r) or None (as it is)."""
    c = tree.coupling
    if kind == "q":
        return [_scaled(alg, a, x[r]) + b if b != 0.0 else _scaled(alg, a, x[r])
                for r, a, b in c.q_map]
    if kind == "v":
        return [_scaled(alg, a, x[r]) for r, a in c.v_map]
    return x


def reduce(tree, alg, kind, y):
    """An output of the full tree in the coupled tree's coordinates: kind "force" (G^T f: each
    coordinate's force plus a times its mimics'), "matrix" (G^T M G) or None (as it is)."""
    c = tree.coupling
    if kind == "force":
        out = [None] * tree.nv
        for k, (r, a) in enumerate(c.v_map):
            term = _scaled(alg, a, y[k])
            out[r] = term if out[r] is None else out[r] + term
        return out
    if kind == "matrix":
        rows = [reduce(tree, alg, "force", list(col)) for col in zip(*y)]   # (M G)^T = G^T M
        return [reduce(tree, alg, "force", list(col)) for col in zip(*rows)]  # G^T M G
    return y


def through_coupling(inputs, output):
    """A recursion f(tree, alg, *args) that also takes a coupled tree: its inputs expanded (one
    kind of expand per argument), f run on the full tree, its result reduced (a kind of reduce).
    A plain tree calls f as it is."""
    def wrap(f):
        @wraps(f)
        def run(tree, alg, *args, **kw):
            if tree.coupling is None:
                return f(tree, alg, *args, **kw)
            alg.section("mimic joints: the full coordinates q = G q_r + b, qd = G qd_r "
                        "(docs/mimic.md)")
            full = [expand(tree, alg, kind, x) for kind, x in zip(inputs, args)]
            result = f(tree.full, alg, *full, **kw)
            alg.section("mimic joints: G^T (docs/mimic.md)")
            return reduce(tree, alg, output, result)
        return run
    return wrap


def coupled_forward_dynamics(tree, alg, q, qd, tau):
    """M_r qdd = tau - h_r with M_r = G^T M G and h_r = G^T h (docs/mimic.md): the coupled tree's
    reduced mass matrix factored (LDL^T, unrolled) and solved."""
    h = bias_forces(tree, alg, q, qd)
    M = mass_matrix(tree, alg, q)
    alg.section("mimic joints: M_r qdd = tau - h_r, LDL^T of the reduced mass matrix")
    return SPDSolver(M).solve([t - x for t, x in zip(tau, h)])


# ---- passes 1-3: velocities, velocity-product accelerations, forces ----------------------------
def velocity_step(b, kin, v_parent, qds):
    """S&G (18-20) for one body: its twist v_k and velocity-product acceleration a_k."""
    vp = to_child(b, kin, v_parent) if v_parent is not None else ZERO6      # (18)
    vJ = S_times(kin, qds)
    ak = vadd(vscale(-1.0, ad(vJ, vp)), kin[3])                          # (19)
    return vadd(vp, vJ), ak                                              # (20)


def acceleration_step(b, kin, alpha_parent, vk, ak, qdds=None):
    """S&G (22-23) for one body: alpha_k = Ad alpha_parent + a_k (+ S qdd for inverse dynamics)
    and alpha_bar_k = J_k alpha_k + b_k, with the bias b_k = -ad*_v J_k v_k - f_e of (21): the
    first two terms together by Newton-Euler about the centre of mass (spatial.body_wrench)."""
    al = vadd(to_child(b, kin, alpha_parent), ak)                          # (22)
    if qdds is not None:
        al = vadd(al, S_times(kin, qdds))
    fk = body_wrench(b.inertia, al, vk)                                  # (23) with (21)
    if b.wrench is not None:
        fk = vsub(fk, b.wrench)                                          # (21): - f_e
    return al, fk


def velocity_pass(tree, alg, kins, qd):
    """S&G pass 1 (18-20): body twists v_k and velocity-product accelerations a_k."""
    v, a = [], []
    for b, kin in zip(tree.bodies, kins):
        _velocity_section(alg, b)
        vk, ak = velocity_step(b, kin, v[b.parent] if b.parent >= 0 else None,
                               qd[b.v_start:b.v_start + b.dof])
        v.append(vk)
        a.append(ak)
    return v, a


def motion_pass(tree, alg, kins, qd, qdd=None):
    """S&G passes 1 and 2 in one sweep, root to leaves (both run in that order; each body's
    twist is used at once rather than kept for a second sweep): the bodies' accelerations
    alpha_k and wrenches alpha_bar_k. alpha_0 = [0; -g] carries gravity."""
    v, alpha, f = [], [], []
    for b, kin in zip(tree.bodies, kins):
        _velocity_section(alg, b)
        vk, ak = velocity_step(b, kin, v[b.parent] if b.parent >= 0 else None,
                               qd[b.v_start:b.v_start + b.dof])
        alg.section(f"pass 2 (S&G 21-23): acceleration and force of body {b.name}",
                    "pass 2 (S&G 21-23): acceleration and force", b.index)
        base = alpha[b.parent] if b.parent >= 0 else [0.0, 0.0, 0.0] + [-g for g in tree.gravity]
        al, fk = acceleration_step(b, kin, base, vk, ak,
                                   qdd[b.v_start:b.v_start + b.dof] if qdd is not None else None)
        v.append(vk)
        alpha.append(al)
        f.append(fk)
    return alpha, f


def _velocity_section(alg, b):
    alg.section(f"pass 1 (S&G 18-20): velocity of body {b.name}, joint {b.joint_name}",
                "pass 1 (S&G 18-20): velocity", b.index)


def force_pass(tree, alg, kins, f):
    """S&G pass 3 (24-25): p_k = sum over children Ad^T p_i + alpha_bar_k; joint forces S^T p_k."""
    p = list(f)
    tau = [None] * tree.nv
    for b, kin in zip(reversed(tree.bodies), reversed(kins)):
        alg.section(f"pass 3 (S&G 24-25): force on body {b.name}, joint {b.joint_name}",
                    "pass 3 (S&G 24-25): force", b.index)
        for k, x in enumerate(S_transpose(kin, p[b.index])):                 # (25)
            tau[b.v_start + k] = x
        if b.parent >= 0:
            p[b.parent] = vadd(p[b.parent], to_parent(b, kin, p[b.index]))   # (24)
    return tau


def passive_forces(tree, alg, q, qd, tau):
    """tau - tau_p with tau_p = -K (q - q_rest) - D qd (Sueda 2.79, 2.81): the joint springs and
    dampers, diagonal per coordinate. Coordinates without either are left as they are. Also the
    velocity term of a free flyer's linear armature (turning_armature_forces)."""
    out = turning_armature_forces(tree, alg, qd, list(tau))
    for b in tree.bodies:
        if b.stiffness is None and b.damping is None:
            continue
        alg.section(f"joint {b.joint_name}: spring and damper (Sueda 2.6)",
                    "spring and damper (Sueda 2.6)", b.index)
        for k in range(b.dof):           # (springs only on joints with nq = nv: model checks)
            i = b.v_start + k
            if b.stiffness is not None and b.stiffness[k] != 0.0:
                out[i] = out[i] + b.stiffness[k] * (q[b.q_start + k] - b.rest[k])
            if b.damping is not None and b.damping[k] != 0.0:
                out[i] = out[i] + b.damping[k] * qd[i]
    return out


def turning_armature_forces(tree, alg, qd, tau):
    """tau + [w x p; v x p], p = A v, for a joint whose linear velocity v is in the body's own
    turning frame (the free flyer, w its angular velocity) with an armature A = diag(a) on it: the
    rotor momentum p turns with the body (the Euler-Poincare equations of T = 1/2 v^T A v in the
    body frame: dp/dt + w x p on the linear rows, v x p on the angular ones; A dv/dt is M's
    diagonal). For equal a the angular term is 0 and the linear one a (dv/dt + w x v) = a R^T
    d/dt (R v): MuJoCo's free joint, whose armature acts on the world-frame velocity R v.
    Armature on angular velocities stays M's diagonal alone, as MuJoCo has it (with unequal
    entries a free body's world angular momentum then drifts; no work is done, energy holds).
    Modified in place and returned."""
    for b in tree.bodies:
        if b.linear_armature is None:
            continue
        alg.section(f"joint {b.joint_name}: linear armature turning with the body",
                    "armature turning with the body", b.index)
        for k, f in enumerate(turning_armature_force(b, qd[b.v_start:b.v_start + 6])):
            tau[b.v_start + k] = tau[b.v_start + k] + f
    return tau


def turning_armature_force(b, v):
    """[w x p; v x p], p = A v_lin, for the joint's own velocity v = [v_lin; w]."""
    lin, w = v[:3], v[3:]
    p = [a * x for a, x in zip(b.linear_armature, lin)]
    return cross(w, p) + cross(lin, p)


def armature_forces(tree, alg, qdd, tau):
    """tau + diag(armature) qdd: the joints' rotor inertias (MuJoCo's armature)."""
    out = list(tau)
    for b in tree.bodies:
        if b.armature is None:
            continue
        alg.section(f"joint {b.joint_name}: armature", "armature", b.index)
        for k, a in enumerate(b.armature):
            if a != 0.0:
                out[b.v_start + k] = out[b.v_start + k] + a * qdd[b.v_start + k]
    return out


def add_armature(tree, M):
    """M + diag(armature), in place (the mass matrix forms)."""
    for b in tree.bodies:
        for k, a in enumerate(b.armature or ()):
            if a != 0.0:
                M[b.v_start + k][b.v_start + k] = M[b.v_start + k][b.v_start + k] + a
    return M


@through_coupling(("q", "v", "v"), "force")
def inverse_dynamics(tree, alg, q, qd, qdd):
    """Recursive Newton-Euler (S&G passes 1-3 with qdd): tau = M qdd + h."""
    kins = joint_kinematics(tree, alg, q, qd)
    _, f = motion_pass(tree, alg, kins, qd, qdd)
    tau = passive_forces(tree, alg, q, qd, force_pass(tree, alg, kins, f))
    return armature_forces(tree, alg, qdd, tau)


@through_coupling(("q", "v"), "force")
def bias_forces(tree, alg, q, qd):
    """h = C(q, qd) qd + phi(q) - tau_p: inverse dynamics at qdd = 0 (S&G passes 1-3)."""
    kins = joint_kinematics(tree, alg, q, qd)
    _, f = motion_pass(tree, alg, kins, qd)
    return passive_forces(tree, alg, q, qd, force_pass(tree, alg, kins, f))


def static_forces(tree, alg, q):
    """The joint forces that hold q at rest: gravity, the joint springs and the constant body
    wrenches, h(q, 0) (Pinocchio's computeGeneralizedGravity where there are no springs or
    wrenches; the velocity terms fold away as products with qd = 0)."""
    return bias_forces(tree, alg, q, [0.0] * tree.nv)


# ---- passes 4-6: articulated inertias and the factored solve ----------------------------------
# Each pass is a loop over bodies around one per-body step. Method I (`forward_dynamics`) runs
# the loops here, so the steps unroll into straight-line code; Method II (S&G section 4) runs the
# same steps once per joint class on symbolic inputs (scleron.unroll.method2) and a numeric C loop
# over the bodies calls them.
def articulated_inertia_step(b, kin, Jbar):
    """S&G (27-28) for one body: U = Jbar S, Omega = S^T Jbar S (factored), and for a non-root
    body Ad^T Ja Ad, its articulated inertia's share of the parent's (None for a root)."""
    U = [matvec(Jbar, col) for col in columns(kin[2])]                       # Jbar S, by column
    Omega = [[dot(Sc, Uc) for Uc in U] for Sc in columns(kin[2])]            # (28)
    armature = getattr(b, "armature", None)
    for k, a in enumerate(armature or ()):                                   # + rotor inertia
        if a != 0.0:
            Omega[k][k] = Omega[k][k] + a
    solver = SPDSolver(Omega)
    if b.parent < 0:
        return U, solver, None
    W = [solver.solve([Uc[r] for Uc in U]) for r in range(6)]                # Omega^-1 U^T, by row
    Ja = [[Jbar[r][c] - dot([Uc[r] for Uc in U], W[c]) if c >= r else None
           for c in range(6)] for r in range(6)]
    for r in range(6):
        for c in range(r):
            Ja[r][c] = Ja[c][r]
    # Ja S = Jbar S - U Omega^-1 S^T Jbar S = 0 (Featherstone 7.3: I^a S = 0), so where a
    # column of S is a constant unit vector e_k, row and column k of Ja are exactly zero (not
    # with an armature a: then Ja S = U Omega^-1 diag(a) != 0).
    for k in ([] if armature else unit_columns(kin[2])):
        for r in range(6):
            Ja[k][r] = Ja[r][k] = 0.0
    return U, solver, inertia_into_parent(b, kin, Ja)                        # (27), one term


def articulated_bias_step(b, kin, U, solver, tau_bar, z):
    """S&G (31-33) for one body: cbar = Omega^-1 (tau_bar - S^T z), and for a non-root body
    Ad^T (z + U cbar), its share of the parent's z (None for a root)."""
    c = vsub(tau_bar, S_transpose(kin, z))                                   # (32)
    cbar = solver.solve(c)                                                   # (33)
    if b.parent < 0:
        return cbar, None
    zi = vadd(z, [dot([Uc[r] for Uc in U], cbar) for r in range(6)])         # (31)
    return cbar, to_parent(b, kin, zi)


def joint_acceleration_step(b, kin, U, solver, cbar, eta_parent):
    """S&G (34-35) for one body: qdd_k = cbar_k - Omega^-1 U^T Ad eta_parent, and eta_k."""
    if b.parent >= 0:
        ap = to_child(b, kin, eta_parent)
        qdd = vsub(cbar, solver.solve([dot(Uc, ap) for Uc in U]))             # (35)
    else:
        ap, qdd = ZERO6, cbar
    return qdd, vadd(ap, S_times(kin, qdd))                                  # (34)


# The three passes as data: which per-body arrays each step reads (at the body, at its parent,
# or the body's coordinates' slice), which it writes, and which of its results it adds into
# the parent's entry of an array. forward_dynamics runs them with run_body_pass; Method II
# (scleron.unroll) unrolls each step once per joint class and the backend prints the loops.
@dataclass(frozen=True)
class BodyPass:
    label: str                # the pass and its equations, e.g. "pass 4 (S&G 27-28): ..."
    what: str                 # section text after the label: "of body {body}" ...
    leaves_first: bool
    step: Callable            # step(body, kin, *reads) -> writes + (share for the parent,)
    reads: tuple              # (array, "body" | "parent" | "coords")
    writes: tuple             # (array, "body" | "coords")
    to_parent: str = None     # array the step's last result is added into at the parent
    accumulate: Callable = None


ARTICULATED_PASSES = (
    BodyPass("pass 4 (S&G 27-28): articulated inertia", "of body {body}", True,
             articulated_inertia_step, (("J", "body"),), (("U", "body"), ("L", "body")),
             "J", sym_add),
    BodyPass("pass 5 (S&G 31-33): articulated bias", "of body {body}", True,
             articulated_bias_step, (("U", "body"), ("L", "body"), ("tb", "coords"), ("z", "body")),
             (("cb", "body"),), "z", vadd),
    BodyPass("pass 6 (S&G 34-35): acceleration", "of body {body}, joint {joint}", False,
             joint_acceleration_step,
             (("U", "body"), ("L", "body"), ("cb", "body"), ("e", "parent")),
             (("qdd", "coords"), ("e", "body"))),
)


def run_body_pass(tree, alg, kins, bp, state):
    """One BodyPass over the tree (S&G Method I: a plain loop, unrolled in the program).
    state: array name -> a list per body, or per coordinate for "coords" arrays."""
    for b in (reversed(tree.bodies) if bp.leaves_first else tree.bodies):
        alg.section(f"{bp.label} {bp.what.format(body=b.name, joint=b.joint_name)}", bp.label,
                    b.index)
        coords = slice(b.v_start, b.v_start + b.dof)
        args = [state[a][coords] if where == "coords" else
                state[a][b.parent] if where == "parent" and b.parent >= 0 else
                None if where == "parent" else state[a][b.index] for a, where in bp.reads]
        results = bp.step(b, kins[b.index], *args)
        for (a, where), value in zip(bp.writes, results):
            if where == "coords":
                state[a][coords] = value
            else:
                state[a][b.index] = value
        if bp.to_parent is not None and b.parent >= 0:
            state[bp.to_parent][b.parent] = bp.accumulate(state[bp.to_parent][b.parent],
                                                          results[-1])
    return state


def tau_bar_pass(tree, alg, kins, q, qd, tau):
    """S&G passes 1-3 and (26): tau_bar = tau - h."""
    _, f = motion_pass(tree, alg, kins, qd)
    h = passive_forces(tree, alg, q, qd, force_pass(tree, alg, kins, f))
    alg.section("pass 3 (S&G 26): tau_bar = tau - h")
    return [t - x for t, x in zip(tau, h)]                                   # (26)


def articulated_state(tree, tau_bar):
    """The arrays of passes 4-6 before they run: J starts as the bodies' own inertias, z at 0."""
    n = len(tree.bodies)
    return {"J": [b.inertia for b in tree.bodies], "z": [ZERO6] * n, "tb": list(tau_bar),
            "U": [None] * n, "L": [None] * n, "cb": [None] * n, "e": [None] * n,
            "qdd": [None] * tree.nv}


def forward_dynamics(tree, alg, q, qd, tau):
    """S&G Method I: passes 1-3 give tau_bar = tau - h; passes 4-6 solve M qdd = tau_bar
    with the square factorisation of M^-1 (S&G 58). A coupled tree: coupled_forward_dynamics."""
    if tree.coupling is not None:
        return coupled_forward_dynamics(tree, alg, q, qd, tau)
    kins = joint_kinematics(tree, alg, q, qd)
    state = articulated_state(tree, tau_bar_pass(tree, alg, kins, q, qd, tau))
    for bp in ARTICULATED_PASSES:
        run_body_pass(tree, alg, kins, bp, state)
    return state["qdd"]


# ---- mass matrix: composite rigid bodies (Featherstone Tab 6.2) -------------------------------
def composite_inertias(tree, alg, kins, label="mass matrix"):
    """Ic_k = J_k + sum over children Ad^T Ic_i Ad, leaves to root (compact rigid form)."""
    Ic = [b.inertia for b in tree.bodies]
    for b, kin in zip(reversed(tree.bodies), reversed(kins)):
        alg.section(f"{label} (Featherstone Table 6.2): composite inertia of body {b.name}",
                    f"{label} (Featherstone Table 6.2): composite inertia", b.index)
        if b.parent >= 0:
            Ic[b.parent] = sym_add(Ic[b.parent], composite_inertia_into_parent(b, kin, Ic[b.index]))
    return Ic


@through_coupling(("q",), "matrix")
def mass_matrix(tree, alg, q):
    """CRBA: composite inertias Ic_k = J_k + sum Ad^T Ic_i Ad; M_ij = S_i^T Ic_i (Ad...) S_j.
    Equals S&G (51), M = S^T G^T J G S, built in O(n d) per column of ancestors."""
    return composite_rigid_body_mass_matrix(tree, alg, joint_kinematics(tree, alg, q, None))


def composite_rigid_body_mass_matrix(tree, alg, kins):
    """M from the joints' kinematics (Featherstone Table 6.2), armature included."""
    Ic = composite_inertias(tree, alg, kins)
    nv = tree.nv
    M = [[0.0] * nv for _ in range(nv)]
    for b, kin in zip(reversed(tree.bodies), reversed(kins)):
        alg.section(f"mass matrix (Featherstone Table 6.2): column of joint {b.joint_name}",
                    "mass matrix (Featherstone Table 6.2): column", b.index)
        F = [matvec(Ic[b.index], col) for col in columns(kin[2])]           # Ic_i S_i
        for r, Sc in enumerate(columns(kin[2])):
            for c in range(r, b.dof):
                M[b.v_start + r][b.v_start + c] = M[b.v_start + c][b.v_start + r] = dot(Sc, F[c])
        j = b
        jkin = kin
        while j.parent >= 0:
            F = [to_parent(j, jkin, Fc) for Fc in F]
            j = tree.bodies[j.parent]
            jkin = kins[j.index]
            for r, Sc in enumerate(columns(jkin[2])):
                for c in range(b.dof):
                    M[j.v_start + r][b.v_start + c] = M[b.v_start + c][j.v_start + r] = dot(
                        Sc, F[c])
    return add_armature(tree, M)


# ---- M = L^T D L: Featherstone's factorisation with the tree's sparsity (RBDA 6.5) -------------
def mass_matrix_factors(tree, alg, M):
    """(L, 1/D, ancestors) of M = L^T D L over the expanded parent array of the coordinates."""
    parents = coordinate_parents(tree)
    ancestors = [coordinate_ancestors(parents, k) for k in range(tree.nv)]
    L, inv_d = ltdl_factors(alg, M, ancestors)
    return L, inv_d, ancestors


def ltdl_factors(alg, M, ancestors):
    """(L, 1/D) with M = L^T D L, L unit lower triangular (its strict lower entries in L[k][i],
    i an ancestor of k): Featherstone Table 6.3, leaves to root, on a copy of M."""
    alg.section("mass matrix: M = L^T D L (Featherstone 6.5, Table 6.3)")
    H = [list(row) for row in M]
    inv_d = [None] * len(M)
    for k in reversed(range(len(M))):
        inv_d[k] = 1.0 / H[k][k]
        for i in ancestors[k]:
            a = H[k][i] * inv_d[k]
            for j in [i] + ancestors[i]:
                H[i][j] = H[i][j] - a * H[k][j]
            H[k][i] = a
    return H, inv_d


def ltdl_solve(L, inv_d, ancestors, b):
    """x = M^-1 b from M = L^T D L (Featherstone Table 6.4, the tree's sparsity): L^T z = b leaves
    to root, y = D^-1 z, L x = y root to leaves; 2 nnz(L) + nv multiply-adds against the nv^2 of
    M^-1 b (solo12: 432 against 648 operations)."""
    z = list(b)
    for k in reversed(range(len(z))):
        for i in ancestors[k]:
            z[i] = z[i] - L[k][i] * z[k]
    x = [zk * d for zk, d in zip(z, inv_d)]
    for k in range(len(x)):
        for i in ancestors[k]:
            x[k] = x[k] - L[k][i] * x[i]
    return x


def forward_dynamics_by_mass_matrix(tree, alg, q, qd, tau):
    """qdd = M^-1 (tau - h): S&G passes 1-3 give tau_bar = tau - h, the composite rigid bodies
    M (Featherstone Table 6.2) on the same joint kinematics, and the sparse LTDL factors of M
    solve M qdd = tau_bar (Featherstone 6.5, Tables 6.3-6.4). The same qdd as forward_dynamics
    (its D are the articulated-body algorithm's S^T Ia S) in O(n d^2) rather than O(n): more
    operations on long chains, but on a small arm none of its steps waits on a division of the
    step before, where the articulated inertias of passes 4-6 form one chain of dependent
    products and divisions from the leaves to the root and back (unroll.fastest_recursion
    picks per model; checks.factors_are_accurate says where the factors' rounding stays small).
    A coupled tree: coupled_forward_dynamics, as forward_dynamics."""
    if tree.coupling is not None:
        return coupled_forward_dynamics(tree, alg, q, qd, tau)
    kins = joint_kinematics(tree, alg, q, qd)
    return solve_by_mass_matrix(tree, alg, kins, tau_bar_pass(tree, alg, kins, q, qd, tau))


def solve_by_mass_matrix(tree, alg, kins, tau_bar):
    """qdd with M qdd = tau_bar: the composite rigid bodies' M on the joint kinematics kins,
    solved by its sparse LTDL factors (Featherstone 6.5, Tables 6.3-6.4)."""
    L, inv_d, ancestors = mass_matrix_factors(tree, alg,
                                              composite_rigid_body_mass_matrix(tree, alg, kins))
    alg.section("mass matrix: M qdd = tau_bar by the factors (Featherstone Table 6.4)")
    return ltdl_solve(L, inv_d, ancestors, tau_bar)


# ---- mass matrix in loop form: world-frame columns, then dense products ------------------------
def world_pose_step(b, kin, pose):
    """(R, t) of body b in the world: G_0b = G_0,parent X_tree Q(q), pose[] holding the
    parents' (Featherstone 4.1, frames composed root to leaf)."""
    R, t = joint_transform(b, kin)
    if b.parent >= 0:
        R0, p0 = pose[b.parent]
        R, t = matmul(R0, R), vadd(matvec(R0, t), p0)
    return R, t


def world_columns(tree, alg, q, label="mass matrix"):
    """Every coordinate's motion axis Sw_c and the momentum Fw_c = Ic S_c of the composite body it
    moves, both in world coordinates (Featherstone 6.2 in the world frame, as Pinocchio's WORLD
    convention). Twist-wrench pairing is frame-invariant, so M_rc = Sw_r . Fw_c wherever the body
    of r is the body of c or one of its ancestors (mass_matrix_from_world_columns). O(n) work."""
    kins = joint_kinematics(tree, alg, q, None)
    Ic = composite_inertias(tree, alg, kins, label)
    pose = [None] * len(tree.bodies)
    Sw, Fw = [None] * tree.nv, [None] * tree.nv
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"{label}: world pose, S and Ic S of joint {b.joint_name}",
                    f"{label}: world pose, S and Ic S", b.index)
        pose[b.index] = R, t = world_pose_step(b, kin, pose)
        for k, col in enumerate(columns(kin[2])):
            Sw[b.v_start + k] = twist_to_parent(R, t, col)
            Fw[b.v_start + k] = wrench_to_parent(R, t, matvec(Ic[b.index], col))
    return Sw, Fw


def ancestor_ranges(tree):
    """For every coordinate r: the coordinates c >= r whose body is r's body or a descendant of
    it, as (first, end) ranges -- the entries M_rc = Sw_r . Fw_c of the upper triangle."""
    body_of = [b.index for b in tree.bodies for _ in range(b.dof)]
    below = [{b.index} for b in tree.bodies]                # the body and its descendants
    for b in reversed(tree.bodies):
        if b.parent >= 0:
            below[b.parent] |= below[b.index]
    out = []
    for r in range(tree.nv):
        ranges = []
        for c in range(r, tree.nv):
            if body_of[c] not in below[body_of[r]]:
                continue
            if ranges and ranges[-1][1] == c:
                ranges[-1][1] = c + 1
            else:
                ranges.append([c, c + 1])
        out.append([tuple(x) for x in ranges])
    return out


def mass_matrix_from_world_columns(tree, Sw, Fw):
    """M from world_columns: M_rc = M_cr = Sw_r . Fw_c over ancestor_ranges, zero elsewhere. The
    generated C runs this as vectorised loops (templates/massloop.c.j2)."""
    nv = tree.nv
    M = [[0.0] * nv for _ in range(nv)]
    for r, ranges in enumerate(ancestor_ranges(tree)):
        for first, end in ranges:
            for c in range(first, end):
                M[r][c] = M[c][r] = dot(Sw[r], Fw[c])
    return add_armature(tree, M)


def mass_matrix_world(tree, alg, q):
    """The mass matrix by world_columns and mass_matrix_from_world_columns."""
    return mass_matrix_from_world_columns(tree, *world_columns(tree, alg, q))


# ---- energies -----------------------------------------------------------------------------------
@through_coupling(("q", "v"), None)
def kinetic_energy(tree, alg, q, qd):
    """T = 1/2 sum_k v_k^T J_k v_k with the body twists v_k of S&G pass 1 (18, 20)."""
    kins = joint_kinematics(tree, alg, q, qd)
    v, _ = velocity_pass(tree, alg, kins, qd)
    alg.section("kinetic energy: 1/2 sum v^T J v (S&G 5, 20)", "kinetic energy")
    T = 0.0
    for b, vk in zip(tree.bodies, v):
        T = T + dot(vk, matvec(b.inertia, vk))
        for k, a in enumerate(b.armature or ()):                             # rotor: a qd^2
            if a != 0.0:
                T = T + a * qd[b.v_start + k] * qd[b.v_start + k]
    return 0.5 * T


def first_moment(b):
    """m c, the body's mass times its centre of mass, read from its spatial inertia: the upper
    right block of J is m [c]x (ARCHITECTURE: J = [[I_c - m[c]^2, m[c]], [-m[c], m 1]])."""
    J = b.inertia
    return [-J[1][5], J[0][5], -J[0][4]]


@through_coupling(("q",), None)
def potential_energy(tree, alg, q):
    """V = -sum_k m_k g . c_k (world centres of mass, as Pinocchio's computePotentialEnergy),
    plus the joint springs' 1/2 K (q - q_rest)^2 (Sueda 2.6), whose force passive_forces adds."""
    kins = joint_kinematics(tree, alg, q, None)
    pose = [None] * len(tree.bodies)
    V = 0.0
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"potential energy: world pose and centre of mass of body {b.name}",
                    "potential energy: gravity", b.index)
        pose[b.index] = R, t = world_pose_step(b, kin, pose)
        mass = b.inertia[3][3]
        if mass == 0.0:
            continue
        mc = vadd(matvec(R, first_moment(b)), vscale(mass, t))      # m (R c + t)
        V = V - dot(tree.gravity, mc)
    for b in tree.bodies:
        if b.stiffness is None:
            continue
        alg.section(f"joint {b.joint_name}: spring energy (Sueda 2.6)", "spring energy", b.index)
        for k in range(b.dof):
            if b.stiffness[k] != 0.0:
                d = q[b.q_start + k] - b.rest[k]
                V = V + 0.5 * b.stiffness[k] * d * d
    return V


# ---- centre of mass -----------------------------------------------------------------------------
@through_coupling(("q",), None)
def center_of_mass(tree, alg, q):
    """The centre of mass of the whole tree in world coordinates, sum_k m_k c_k / sum_k m_k
    (as Pinocchio's centerOfMass), c_k = R_k c_k,body + t_k from the world poses."""
    kins = joint_kinematics(tree, alg, q, None)
    pose = [None] * len(tree.bodies)
    total = sum(b.inertia[3][3] for b in tree.bodies)
    mc = ZERO6[:3]
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"centre of mass: world pose and first moment of body {b.name}",
                    "centre of mass", b.index)
        pose[b.index] = R, t = world_pose_step(b, kin, pose)
        mc = vadd(mc, vadd(matvec(R, first_moment(b)), vscale(b.inertia[3][3], t)))
    return vscale(1.0 / total, mc)
