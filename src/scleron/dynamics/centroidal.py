"""Centroidal momentum (Orin, Goswami & Lee 2013), written once like the dynamics: the momentum of
the whole tree about its centre of mass G, with world axes, h_G = A_G(q) qd, and the centroidal
momentum matrix A_G (Pinocchio's computeCentroidalMomentum and computeCentroidalMap).

Momenta are wrenches here, in scleron's order [k; l]: the angular momentum about G first, then
the linear momentum (Pinocchio's Force, hence its A_G rows and hg, is [l; k]). A momentum
[k_O; l] about the world origin is [k_O - c x l; l] about the point c (Featherstone 2.21).
"""
from .recursions import (ZERO6, center_of_mass, first_moment, joint_kinematics, to_parent,
                         velocity_pass, world_columns, world_pose_step)
from .spatial import cross, matvec, vadd, vscale, vsub, wrench_to_parent


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
    """h_G = [k; l]: the bodies' momenta J_k v_k (S&G pass 1's twists, each in its body frame) and
    first moments m_k c_k, summed leaves to root in the parents' frames as pass 3 sums forces
    (S&G 14), then from each root's frame into the world; the momentum about the world origin
    moved to G = (sum of first moments) / (total mass). No world pose below the roots."""
    kins = joint_kinematics(tree, alg, q, qd)
    v, _ = velocity_pass(tree, alg, kins, qd)
    h = [matvec(b.inertia, v[b.index]) for b in tree.bodies]
    moment = [first_moment(b) for b in tree.bodies]
    mass = [b.inertia[3][3] for b in tree.bodies]              # of the subtrees, once summed
    total, total_moment = ZERO6, ZERO6[:3]
    for b in reversed(tree.bodies):
        alg.section(f"centroidal momentum: momentum and first moment of the subtree of body {b.name}",
                    "centroidal momentum: subtree momentum and first moment", b.index)
        if b.parent >= 0:
            h[b.parent] = vadd(h[b.parent], to_parent(b, kins[b.index], h[b.index]))
            moment[b.parent] = vadd(moment[b.parent],
                                    moment_to_parent(b, kins[b.index], moment[b.index], mass[b.index]))
            mass[b.parent] += mass[b.index]
        else:
            R, t = world_pose_step(b, kins[b.index], None)
            total = vadd(total, wrench_to_parent(R, t, h[b.index]))
            total_moment = vadd(total_moment, vadd(matvec(R, moment[b.index]), vscale(mass[b.index], t)))
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
