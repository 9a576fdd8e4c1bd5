"""Models: bodies, joints, inertias, gravity; YAML and URDF loaders."""
from .joint_types import EULER_CHARTS, JOINT_TYPES, joint_dof
from .model import (WORLD, Body, Frame, Inertia, Joint, Model, Transform, model_to_dict,
                    rotation_from_rpy)
from .load import load_model
from .yaml_loader import load_yaml, model_from_dict
from .urdf import load_urdf
