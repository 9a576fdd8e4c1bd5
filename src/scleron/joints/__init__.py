"""The joint library: each joint is coordinates q plus a transform Q(q); S and Sdot are
derived by sympy. Also the 12 Euler / Tait-Bryan charts (joints.charts)."""
from .library import DOF, JointModel, joint_model
from .symbolic import Evaluator, motion_subspace, motion_subspace_rate
