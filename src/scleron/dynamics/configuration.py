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


def difference(tree, alg, q0, q1):
    """q1 (-) q0: the velocity that integrate() turns q0 into q1 with in unit time."""
    out = []
    for b in tree.bodies:
        alg.section(f"difference of joint {b.joint_name} ({configuration_space(b)})",
                    "difference", b.index)
        qs = slice(b.q_start, b.q_start + b.nq)
        out += manifolds.difference(configuration_space(b), alg, q0[qs], q1[qs])
    return out
