"""Inverse dynamics by Newton-Euler in classical accelerations (Luh, Walker & Paul 1980; Khalil
& Dombre 9.5): the alternative the unrolled code takes where it is cheaper than S&G passes 1-3
(unroll.fastest_recursion), which is where the bodies' origins stay on their joints' axes.

Where every joint below the roots is a revolute joint about an axis through its body's origin
or a prismatic one (body_frames.commuting_axis), a body's origin moves with its parent unless
the joint slides it, so the passes need no linear velocities below the roots (a root on any
joint, a free flyer say, starts from its own twist: root_motion): per body, in its own frame,
with G = (R, t) the body's frame in its parent's and S = [s_w; s_v],

    w_k  = R^T w_p + s_w qd                                    angular velocity
    dw_k = R^T dw_p + s_w qdd + (R^T w_p) x s_w qd              angular acceleration
    a_k  = R^T (a_p + U_p t) + s_v qdd + 2 (R^T w_p) x s_v qd   the origin's acceleration
    U_k  = [dw_k] + [w_k]^2                                     so that U x = dw x x + w x (w x x)

from a_0 = -g (gravity as a base acceleration, as in S&G's passes; frames.frame_accelerations
gives the same classical accelerations from the spatial ones), and the body's wrench about
its origin (Featherstone 2.15 about the origin rather than the centre of mass)

    F_k = m a_k + U_k h,    N_k = Ibar dw_k + w_k x (Ibar w_k) + h x a_k

with m, h = m c and Ibar the inertia about the origin. Pass 3 (S&G 24-25) and the joint terms
(springs, dampers, armature) are recursions.py's own. The code is built on the base inertial
parameters (scleron.dynamics.regroup), where most bodies have no mass, no first moment along
their axis and one moment less, and U h is then all of F: xarm7's inverse dynamics takes 882
operations against the passes' 951 on the same parameters (1,084 on the bodies' own), UR5's
304 against 335 (455).
"""
from .recursions import (S_times, armature_forces, force_pass, joint_kinematics, joint_transform,
                         passive_forces, solve_by_mass_matrix, to_child)
from .body_frames import commuting_axis
from .spatial import cross, mat_t_vec, matvec, rigid_parts, vadd, vscale, vsub


def applies(tree):
    """Uncoupled trees whose joints below the roots are all revolute about an axis through the
    body's origin or prismatic (a ball or a general joint moves its origin otherwise); a root's
    joint may be any (a free flyer: its own twist is at hand)."""
    return tree.coupling is None and all(b.parent < 0 or
                                         commuting_axis(b.joint, tree.length_snap) is not None
                                         for b in tree.bodies)


def acceleration_matrix(w, dw):
    """U = [dw] + [w]^2: U x = dw x x + w x (w x x), the acceleration of a point x of the body
    relative to its origin's (Khalil & Dombre 9.5)."""
    xx, yy, zz = w[0] * w[0], w[1] * w[1], w[2] * w[2]
    xy, xz, yz = w[0] * w[1], w[0] * w[2], w[1] * w[2]
    return [[-(yy + zz), xy - dw[2], xz + dw[1]],
            [xy + dw[2], -(xx + zz), yz - dw[0]],
            [xz - dw[1], yz + dw[0], -(xx + yy)]]


def body_motion(b, kin, parent, qd, qdd, gravity):
    """(w, dw, a, U) of body b from its parent's (None at the root)."""
    s, ss = S_times(kin, qd), S_times(kin, qdd)
    if parent is None:
        return root_motion(b, kin, s, ss, gravity)
    R, t = joint_transform(b, kin)
    w, dw, a, U = parent
    wp, dwp, ap = mat_t_vec(R, w), mat_t_vec(R, dw), mat_t_vec(R, vadd(a, matvec(U, t)))
    w = vadd(wp, s[:3])
    dw = vadd(vadd(dwp, ss[:3]), cross(wp, s[:3]))
    a = vadd(vadd(ap, ss[3:]), vscale(2.0, cross(wp, s[3:])))
    return w, dw, a, acceleration_matrix(w, dw)


def root_motion(b, kin, v, Sqdd, gravity):
    """(w, dw, a, U) of a root body on any joint: its twist v = S qd, its spatial acceleration
    S qdd + Sdot qd - Ad^-1 g (S&G 19-22 from the world at rest), and the origin's classical
    acceleration a = alpha_v + w x v_v from it."""
    base = [0.0, 0.0, 0.0] + [-g for g in gravity]
    alpha = vadd(vadd(Sqdd, kin[3]), to_child(b, kin, base))
    w, dw = v[:3], alpha[:3]
    return w, dw, vadd(alpha[3:], cross(w, v[3:])), acceleration_matrix(w, dw)


def origin_wrench(J, motion):
    """[N; F] about the body's origin, in its frame (Featherstone 2.15 about the origin)."""
    m, h, Ibar = rigid_parts(J)
    w, dw, a, U = motion
    F = vadd(vscale(m, a), matvec(U, h))
    N = vadd(vadd(matvec(Ibar, dw), cross(w, matvec(Ibar, w))), cross(h, a))
    return N + F


def inverse_dynamics(tree, alg, q, qd, qdd):
    """tau = M(q) qdd + h(q, qd) by Newton-Euler in classical accelerations."""
    return joint_forces(tree, alg, joint_kinematics(tree, alg, q, qd), q, qd, qdd)


def joint_forces(tree, alg, kins, q, qd, qdd):
    """inverse_dynamics on the joints' kinematics kins."""
    motion, f = [], []
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"Newton-Euler (Khalil & Dombre 9.5): motion and wrench of body {b.name}, "
                    f"joint {b.joint_name}", "Newton-Euler (Khalil & Dombre 9.5): motion and "
                    "wrench", b.index)
        m = body_motion(b, kin, motion[b.parent] if b.parent >= 0 else None,
                        qd[b.v_start:b.v_start + b.dof], qdd[b.v_start:b.v_start + b.dof],
                        tree.gravity)
        fk = origin_wrench(b.inertia, m)
        motion.append(m)
        f.append(vsub(fk, b.wrench) if b.wrench is not None else fk)      # S&G (21): - f_e
    tau = passive_forces(tree, alg, q, qd, force_pass(tree, alg, kins, f))
    return armature_forces(tree, alg, qdd, tau)


def bias_forces(tree, alg, q, qd):
    """h(q, qd): inverse_dynamics at qdd = 0."""
    return inverse_dynamics(tree, alg, q, qd, [0.0] * tree.nv)


def static_forces(tree, alg, q):
    """g(q): inverse_dynamics at qd = qdd = 0."""
    return inverse_dynamics(tree, alg, q, [0.0] * tree.nv, [0.0] * tree.nv)


def forward_dynamics_by_mass_matrix(tree, alg, q, qd, tau):
    """recursions.forward_dynamics_by_mass_matrix with h by Newton-Euler in classical
    accelerations: M qdd = tau - h(q, qd) solved by M's factors."""
    kins = joint_kinematics(tree, alg, q, qd)
    h = joint_forces(tree, alg, kins, q, qd, [0.0] * tree.nv)
    alg.section("pass 3 (S&G 26): tau_bar = tau - h")
    return solve_by_mass_matrix(tree, alg, kins, [t - x for t, x in zip(tau, h)])
