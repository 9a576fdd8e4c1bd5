"""Base inertial parameters: the part of each body's inertia that its own joint cannot move,
carried by its parent instead (Khalil & Kleinfinger 1986; Gautier & Khalil 1990; Khalil &
Dombre, Modeling, Identification and Control of Robots, 9.5 and 14.4).

A revolute joint turns its body about the axis u through the body's origin, with S = [u; 0].
A part T of the body's spatial inertia J that is symmetric about that axis and has nothing
along it,

    T = [[alpha (1 - u u^T), [h_u u]], [[h_u u]^T, m 1]]   (T S = 0, Rot(u, a) T Rot(u, a)^T = T),

moves with the parent whatever the joint does: its kinetic energy 1/2 v^T T v with
v = Ad v_parent + S qd is 1/2 v_parent^T Ad^T T Ad v_parent at every q (T S = 0 and T is
invariant under the joint's turn), and its potential energy is its mass's, on the axis. So
J - T on the body and T (in the parent's frame) on the parent give the same Lagrangian, hence
the same joint forces, mass matrix and accelerations, and a part on a body whose parent is the
world adds nothing at all. Taken from the tips to the root, each such body loses its mass, its
first moment along u and one moment of inertia (alpha = the first of the two moments across the
axis: for u = z, XX, leaving YY - XX): Khalil's regrouping of M_j, MZ_j and one of XX_j, YY_j
(he keeps XXR_j = XX_j - YY_j). A prismatic joint (S = [0; u]) slides its body without turning
it: the whole rotational block [[I, 0], [0, 0]] moves with the parent.

These inertias are not a body's own (a body left without mass may keep a first moment), so only
functions of the joint-space dynamics use them (FunctionSpec.joint_space: the dynamics, M, M^-1,
their derivatives, the kinetic energy, the Euler step; unroll.code_tree). The centre of mass,
the momenta and the potential energy (a part moved onto the world would leave it) keep the
tree's own.
"""
from copy import copy
from dataclasses import replace

import numpy as np

from ..algebra import FloatAlgebra
from .body_frames import commuting_axis, revolving
from .recursions import inertia_into_parent, joint_kinematics


def regrouped(tree):
    """A copy of an uncoupled tree whose bodies carry the base inertial parameters: from the
    leaves to the root, each revolute or prismatic body's movable part (movable_part) taken off
    it and added, in the parent's frame, to its parent (to nothing at the root). A tree whose
    inertias are not numbers is returned as it is."""
    assert tree.coupling is None, "regrouped: an uncoupled tree"
    if not all(isinstance(x, float) for b in tree.bodies for row in b.inertia for x in row):
        return tree         # (symbolic constants: show's count before simplification)
    out = copy(tree)
    out.full = out
    out.bodies = [replace(b) for b in tree.bodies]
    kins = joint_kinematics(out, FloatAlgebra(), [0.0] * tree.nq, None)
    inertia = [np.array(b.inertia, dtype=float) for b in out.bodies]
    for b in reversed(out.bodies):
        T = movable_part(b, inertia[b.index], tree.length_snap)
        if T is None:
            continue
        inertia[b.index] = left_after(inertia[b.index], T)
        if b.parent >= 0:       # (T is the same at every q: the parent's frame at q = 0)
            moved = inertia_into_parent(b, kins[b.index], T.tolist())
            inertia[b.parent] = inertia[b.parent] + np.array(moved, dtype=float)
    for b, J in zip(out.bodies, inertia):
        b.inertia = J.tolist()
    return out


def left_after(J, T):
    """J - T, with the entries T takes whole (the mass, a slide's rotational block, the moment
    alpha zeroes) exactly 0. Nothing else is snapped: a difference of two moments can be small
    and real (a hinge about x with Iyy - Izz = 5e-13 keeps its q-dependent M), and the tree's
    own inertias are snapped already (Tree, body_frames.snapped_inertia)."""
    out = J - T
    out[(T != 0.0) & (T == J)] = 0.0
    return out


def movable_part(b, J, length):
    """The part T of body b's spatial inertia J its joint cannot move (module doc), or None for
    a joint that is not a rotation about an axis through the body's origin or a translation."""
    u = commuting_axis(b.joint, length)
    if u is None:
        return None
    T = np.zeros((6, 6))
    if not revolving(b.joint, u):                           # a slide: the rotational block
        T[:3, :3] = J[:3, :3]
        return T
    P = np.eye(3) - np.outer(u, u)
    k = int(np.argmax(np.diag(P)))                          # the moment alpha zeroes
    T[:3, :3] = J[k, k] / P[k, k] * P
    h = np.array([J[2, 4], J[0, 5], J[1, 3]])                # J = [[I, [h]], [[h]^T, m 1]]
    hu = (h @ u) * u
    T[:3, 3:] = [[0.0, -hu[2], hu[1]], [hu[2], 0.0, -hu[0]], [-hu[1], hu[0], 0.0]]
    T[3:, :3] = -T[:3, 3:]
    T[3:, 3:] = J[3, 3] * np.eye(3)
    return T
