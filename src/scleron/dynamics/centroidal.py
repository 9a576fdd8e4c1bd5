"""Centroidal momentum (Orin, Goswami & Lee 2013), written once like the dynamics: the momentum of
the whole tree about its centre of mass G, with world axes, h_G = A_G(q) qd, and the centroidal
momentum matrix A_G (Pinocchio's computeCentroidalMomentum and computeCentroidalMap).

Momenta are wrenches here, in scleron's order [k; l]: the angular momentum about G first, then
the linear momentum (Pinocchio's Force, hence its A_G rows and hg, is [l; k]). A momentum
[k_O; l] about the world origin is [k_O - c x l; l] about the point c (Featherstone 2.21).
"""
from .recursions import (ZERO6, S_times, center_of_mass, first_moment, joint_kinematics, to_child,
                         to_parent, velocity_pass, world_columns, world_pose_step)
from .spatial import body_wrench, cross, matvec, vadd, vscale, vsub, wrench_to_parent


def about_point(h, c):
    """The momentum (a wrench [k; l] with world axes, about the world origin) about the point c."""
    return vsub(h[:3], cross(c, h[3:])) + h[3:]


def centroidal_momentum_matrix(tree, alg, q):
    """A_G (6 x nv, rows [k; l]): column c is the momentum about G of the subtree coordinate c
    moves, moving at unit speed along it: the composite inertia of that subtree times its world
    motion axis (the mass matrix's Fw_c = Ic S_c, world coordinates, Featherstone 6.2), moved
    from the world origin to G."""
    _, Fw = world_columns(tree, alg, q, label="centroidal momentum matrix")
    com = center_of_mass(tree, alg, q)
    A = [[0.0] * tree.nv for _ in range(6)]
    for b in tree.bodies:
        alg.section(f"centroidal momentum matrix: columns of joint {b.joint_name} about the "
                    "centre of mass", "centroidal momentum matrix: columns about G", b.index)
        for k in range(b.dof):
            col = about_point(Fw[b.v_start + k], com)
            for r in range(6):
                A[r][b.v_start + k] = col[r]
    return A


def centroidal_momentum(tree, alg, q, qd):
    """h_G = [k; l]: the bodies' momenta J_k v_k (S&G pass 1's twists, each in its body frame)
    summed about G (about_centre_of_mass)."""
    kins = joint_kinematics(tree, alg, q, qd)
    v, _ = velocity_pass(tree, alg, kins, qd)
    momenta = [matvec(b.inertia, v[b.index]) for b in tree.bodies]
    return about_centre_of_mass(tree, alg, kins, momenta, "centroidal momentum")


def centroidal_momentum_rate(tree, alg, q, qd, qdd):
    """dh_G/dt = A_G qdd + dA_G/dt qd (Pinocchio's computeCentroidalMomentumTimeVariation;
    at qdd = 0 the centroidal drift dA_G/dt qd): each body's momentum changes by J a + v x* J v
    (Featherstone 2.15, spatial.body_wrench; a from S&G 22 with no gravity, S qdd added), summed
    about G. About the moving G the rate is dk_O/dt - c x dl/dt, since dc/dt x l = 0."""
    kins = joint_kinematics(tree, alg, q, qd)
    v, a = velocity_pass(tree, alg, kins, qd)
    alpha, rates = [None] * len(tree.bodies), [None] * len(tree.bodies)
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"centroidal momentum rate: acceleration and momentum rate of body {b.name}",
                    "centroidal momentum rate: body accelerations and momentum rates", b.index)
        base = to_child(b, kin, alpha[b.parent]) if b.parent >= 0 else ZERO6          # (22)
        alpha[b.index] = vadd(vadd(base, a[b.index]),
                              S_times(kin, qdd[b.v_start:b.v_start + b.dof]))
        rates[b.index] = body_wrench(b.inertia, alpha[b.index], v[b.index])
    return about_centre_of_mass(tree, alg, kins, rates, "centroidal momentum rate")


def about_centre_of_mass(tree, alg, kins, quantities, label):
    """The sum over the bodies of a momentum-like 6-vector [n; f] given in each body's frame, in
    the world about G: with the bodies' first moments m_k c_k, summed leaves to root in the
    parents' frames as S&G pass 3 sums forces (14), then from each root's frame into the world;
    moved from the world origin to G = (sum of first moments) / (total mass). No world pose
    below the roots."""
    h = list(quantities)
    moment = [first_moment(b) for b in tree.bodies]
    mass = [b.inertia[3][3] for b in tree.bodies]              # of the subtrees, once summed
    total, total_moment = ZERO6, ZERO6[:3]
    for b in reversed(tree.bodies):
        alg.section(f"{label}: sum over the subtree of body {b.name}, first moment",
                    f"{label}: subtree sums and first moments", b.index)
        if b.parent >= 0:
            h[b.parent] = vadd(h[b.parent], to_parent(b, kins[b.index], h[b.index]))
            moment[b.parent] = vadd(moment[b.parent],
                                    moment_to_parent(b, kins[b.index], moment[b.index],
                                                     mass[b.index]))
            mass[b.parent] += mass[b.index]
        else:
            R, t = world_pose_step(b, kins[b.index], None)
            total = vadd(total, wrench_to_parent(R, t, h[b.index]))
            total_moment = vadd(total_moment, vadd(matvec(R, moment[b.index]),
                                                   vscale(mass[b.index], t)))
    return about_point(total, vscale(1.0 / sum(b.inertia[3][3] for b in tree.bodies), total_moment))


def moment_to_parent(b, kin, moment, mass):
    """A first moment m c (mass m at c, child frame) in the parent frame, R m c + m t, through the
    joint's transform and then the body's placement (G = X_tree Q(q), as to_parent)."""
    R, t, _, _ = kin
    moment = vadd(matvec(R, moment), vscale(mass, t))
    if b.placement is not None:
        Rp, tp = b.placement
        moment = vadd(matvec(Rp, moment), vscale(mass, tp))
    return moment
