"""The joint types a model may name, their parameters and their number of coordinates: a view
of the joint registry (scleron.joints.registry), where each type is declared once.

JOINT_TYPES: name -> (number of coordinates with default parameters, or None where the type
needs parameters to have any (composite), allowed parameter names). joint_dof() gives the
actual number (a custom joint has one coordinate per name, `spin` and `chart` add coordinates).
GENERAL_TYPES: the general scleronomic joints (custom, contact, spline; docs/joints.md).
"""
from ..joints.registry import EULER_CHARTS, REGISTRY, joint_dof, joint_type

JOINT_TYPES = {name: (jt.default_dof, set(jt.params)) for name, jt in REGISTRY.items()}
GENERAL_TYPES = tuple(name for name, jt in REGISTRY.items() if jt.general)
SPRING_KEYS = ("stiffness", "damping", "rest", "armature")   # per-coordinate joint data

__all__ = ["EULER_CHARTS", "JOINT_TYPES", "GENERAL_TYPES", "SPRING_KEYS", "joint_dof",
           "joint_nq", "joint_neutral", "joint_configuration",
           "composite_part_problem"]


def joint_configuration(jtype):
    """The configuration space of a joint type: "vector", "quaternion" or "se3"."""
    return joint_type(jtype).configuration


def joint_ranges(jtype, params):
    """(low, high) of each coordinate where the joint is valid only there (splines), or None."""
    return joint_type(jtype).ranges_of(params)


def joint_neutral(jtype, params):
    """The neutral configuration of a joint (zeros; the identity quaternion)."""
    return joint_type(jtype).neutral_of(params)


def joint_nq(jtype, params):
    """Entries of q of a joint of this type and parameters (joint_dof, or 4 + ... where the
    configuration holds a quaternion)."""
    return joint_type(jtype).nq_of(params)


def composite_part_problem(jtype):
    """Why a joint of this (known) type cannot be a part of a composite joint, or None."""
    jt = REGISTRY.get(jtype)
    if jt is None or jt.composite_part:
        return None
    if jt.general:
        return (f"a composite part cannot be of type '{jtype}' (write the whole transform as one "
                "custom joint instead)")
    return (f"a composite part cannot be of type '{jtype}' "
            f"(parts: {', '.join(composite_part_types())})")


def composite_part_types():
    """The joint types a composite joint's parts may have."""
    return [t for t in JOINT_TYPES if REGISTRY[t].composite_part]
