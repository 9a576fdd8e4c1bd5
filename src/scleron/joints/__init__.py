"""The joint library: each joint is coordinates q plus a transform Q(q); S and Sdot are
derived by sympy. Every joint type is declared once in joints.registry (REGISTRY). Also the
12 Euler / Tait-Bryan charts (joints.charts)."""
from .library import JointModel, joint_model
from .registry import EULER_CHARTS, REGISTRY, JointType, coordinates_of, joint_dof, joint_type
from .symbolic import Evaluator, motion_subspace, motion_subspace_rate
