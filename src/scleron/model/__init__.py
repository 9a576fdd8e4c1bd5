"""Models: bodies, joints, inertias, gravity; YAML and URDF loaders."""
from .joint_types import EULER_CHARTS, JOINT_TYPES, joint_dof
from .model import WORLD, Body, Inertia, Joint, Model, Transform, rotation_from_rpy
