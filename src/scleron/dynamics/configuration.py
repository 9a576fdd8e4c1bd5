"""Configurations of the whole tree: the neutral q, integrating a velocity, the difference of two
configurations -- joint by joint on each joint's configuration space (joints.manifolds), so a
quaternion joint's q stays on the unit sphere and q, v are exchanged with Pinocchio as they are
(its `neutral`, `integrate`, `difference`)."""
from ..joints import manifolds
from ..joints.registry import joint_type


def configuration_space(b):
    """"vector", "quaternion" or "se3": the space of body b's joint configuration."""
    return joint_type(b.joint.type).configuration


def neutral(tree):
    """q of every joint at its neutral configuration (zeros, identity quaternions)."""
    out = []
    for b in tree.bodies:
        out += [float(x) for x in joint_type(b.joint.type).neutral_of(b.joint.params)]
    return out


def normalized(tree, q):
    """q with each joint's quaternion scaled to unit length (floats; vector joints as given)."""
    out = list(q)
    for b in tree.bodies:
        space = configuration_space(b)
        if space == "vector":
            continue
        first = b.q_start + (3 if space == "se3" else 0)
        norm = sum(x * x for x in out[first:first + 4]) ** 0.5
        out[first:first + 4] = [x / norm for x in out[first:first + 4]]
    return out


def integrate(tree, alg, q, v, dt):
    """q (+) v dt: each joint's configuration moved by its velocity for a time dt."""
    out = []
    for b in tree.bodies:
        alg.section(f"integrate joint {b.joint_name} ({configuration_space(b)})", "integrate",
                    b.index)
        step = [x * dt[0] for x in v[b.v_start:b.v_start + b.dof]]
        out += manifolds.integrate(configuration_space(b), alg, q[b.q_start:b.q_start + b.nq], step)
    return out


def _block_diagonal(tree, blocks):
    """The nv x nv matrix (rows) with each body's dof x dof block on the diagonal, 0 elsewhere."""
    out = [[0.0] * tree.nv for _ in range(tree.nv)]
    for b, block in zip(tree.bodies, blocks):
        for i, row in enumerate(block):
            out[b.v_start + i][b.v_start:b.v_start + b.dof] = row
    return out


def integrate_jacobians(tree, alg, q, v, dt):
    """d(q (+) v dt)/dq and d(q (+) v dt)/dv, nv x nv each, q along the tangent space as the
    derivatives take it (Pinocchio's dIntegrate ARG0, ARG1 for dt = 1): joint by joint, Ad of
    exp(v dt)^-1 and dt J_r(v dt) (joints.manifolds.integrate_jacobians)."""
    by_q, by_v = [], []
    for b in tree.bodies:
        alg.section(f"integrate Jacobians of joint {b.joint_name} ({configuration_space(b)})",
                    "integrate", b.index)
        step = [x * dt[0] for x in v[b.v_start:b.v_start + b.dof]]
        jq, jv = manifolds.integrate_jacobians(configuration_space(b), alg,
                                               q[b.q_start:b.q_start + b.nq], step)
        by_q.append(jq)
        by_v.append([[x * dt[0] for x in row] for row in jv])
    return _block_diagonal(tree, by_q), _block_diagonal(tree, by_v)


def difference_jacobians(tree, alg, q0, q1):
    """d(q1 (-) q0)/dq0 and d(q1 (-) q0)/dq1, nv x nv each, in the tangent spaces (Pinocchio's
    dDifference ARG0, ARG1): joint by joint, -J_r(-v)^-1 and J_r(v)^-1."""
    by_q0, by_q1 = [], []
    for b in tree.bodies:
        alg.section(f"difference Jacobians of joint {b.joint_name} ({configuration_space(b)})",
                    "difference", b.index)
        qs = slice(b.q_start, b.q_start + b.nq)
        j0, j1 = manifolds.difference_jacobians(configuration_space(b), alg, q0[qs], q1[qs])
        by_q0.append(j0)
        by_q1.append(j1)
    return _block_diagonal(tree, by_q0), _block_diagonal(tree, by_q1)


def difference(tree, alg, q0, q1):
    """q1 (-) q0: the velocity that integrate() turns q0 into q1 with in unit time."""
    out = []
    for b in tree.bodies:
        alg.section(f"difference of joint {b.joint_name} ({configuration_space(b)})",
                    "difference", b.index)
        qs = slice(b.q_start, b.q_start + b.nq)
        out += manifolds.difference(configuration_space(b), alg, q0[qs], q1[qs])
    return out
