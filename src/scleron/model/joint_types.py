"""The joint types a model may name, their parameters and their number of coordinates.

This table is data only; the joint library (scleron.joints) implements each type and a test
checks that both agree. Parameters are checked here, so a bad model fails while loading.
"""

EULER_CHARTS = ("XYX", "XZX", "YXY", "YZY", "ZXZ", "ZYZ",      # proper Euler angles (Sueda Table 1)
                "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")      # Tait-Bryan angles (Sueda Table 2)

# name -> (number of coordinates, allowed parameter names). For the general joints (custom,
# contact, spline) the number is the one with default parameters; joint_dof() gives the actual
# number (a custom joint has one coordinate per name, `spin` and `chart` add coordinates).
JOINT_TYPES = {
    "fixed": (0, set()),
    "revolute": (1, {"axis"}),
    "continuous": (1, {"axis"}),            # URDF name: a revolute joint with one angle
    "prismatic": (1, {"axis"}),
    "helical": (1, {"axis", "pitch"}),      # translation = pitch * angle along the axis
    "cylindrical": (2, {"axis"}),           # (angle, translation) about/along the axis
    "planar": (3, {"normal"}),              # (x, y, angle): T(x, y, 0) Rz(angle), z = normal
    "translational": (3, set()),            # (x, y, z) in the parent frame
    "universal": (2, {"chart"}),            # Rx(q1) Ry(q2)  (Sueda 2.43: the XYZ chart with q3 = 0)
    "spherical": (3, {"chart"}),            # one of the 12 Euler / Tait-Bryan charts
    "ball_exp": (3, set()),                 # exponential coordinates, R = exp([q])
    "free": (6, {"chart"}),                 # T(x, y, z) R(chart): 3-D free joint (Sueda 2.62)
    "free2d": (3, set()),                   # T(x, y, 0) Rz(angle): 2-D free joint (Sueda 2.60)
    "composite": (None, {"parts"}),         # Q = Q1 Q2 ... (Sueda 2.53)
    # general scleronomic joints (docs/joints.md)
    "custom": (0, {"coordinates", "constants", "rotation", "translation"}),   # expressions
    "surface_surface": (4, {"parent_surface", "child_surface", "spin"}),      # (u1, v1, u2, v2[, spin])
    "surface_point": (2, {"surface", "chart"}),    # (u, v[, 3 Euler angles]) on the parent's surface
    "curve_point": (1, {"curve", "chart"}),        # (s[, 3 Euler angles]) on a curve
    "spline_curve": (1, {"frames"}),               # cubic B-spline of control frames (Sueda 2.5.12)
    "spline_surface": (2, {"control"}),            # bicubic spline of the 6 components (Sueda 2.5.13)
}

# joint types that may not be parts of a composite joint (write the whole transform instead)
GENERAL_TYPES = ("custom", "surface_surface", "surface_point", "curve_point", "spline_curve",
                 "spline_surface")
SPRING_KEYS = ("stiffness", "damping", "rest")


def joint_dof(jtype, params):
    """Number of coordinates of a joint of this type and parameters."""
    if jtype == "composite":
        return sum(joint_dof(p["type"], p.get("params", {})) for p in params["parts"])
    if jtype == "custom":
        coords = params.get("coordinates")
        return len(coords) if isinstance(coords, (list, tuple)) else 0
    extra = 3 if params.get("chart") and jtype in ("surface_point", "curve_point") else 0
    if jtype == "surface_surface" and params.get("spin") is True:
        extra = 1
    return JOINT_TYPES[jtype][0] + extra
