"""Checking and normalising the parameters of the general joints, of joint springs/dampers and
of body wrenches. Shared by Model.add_body / Model.check_joint (Python API) and the YAML loader,
so both accept exactly the same things.

Every function takes the value and `err`, a callable that turns a problem (text) into the
exception to raise (a ModelError naming file, element and line), and returns the value in a
canonical form (floats, tuples; the form model_to_dict writes and the joint library reads).
Normalising an already normalised value gives it back unchanged.
"""
import math
from numbers import Real

import numpy as np

from .joint_types import EULER_CHARTS
from .load import describe

SURFACE_KEYS = {"sphere": ("radius",), "ellipsoid": ("semi_axes",),
                "torus": ("major_radius", "minor_radius")}
CURVE_KEYS = {"circle": ("radius",), "helix": ("radius", "rise")}
PLACEMENT = ("xyz", "rpy", "rotation")
SPLINE_COMPONENTS = ("x", "y", "z", "rx", "ry", "rz")
# a spline curve's code grows with the square of its control frames (the branch-free product
# carries every factor's twist through the later ones; an outside tester: forward dynamics 5,991
# statements at 8 frames, 21,216 at 16, 79,317 at 32, 306,112 at 64, whose generation did not end
# in ten minutes)
MAX_FRAMES = 24
MAX_GRID = 32


def number(value, what, err, positive=False):
    """A finite real number (numpy's, sympy's and Fraction too; not a bool) as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise err(f"{what} must be a number, got {describe(value)}")
    try:
        x = float(value)
    except OverflowError:
        raise err(f"{what} is too large: {describe(value)}") from None
    if not math.isfinite(x):
        raise err(f"{what} must be finite, got {describe(value)}")
    if positive and x <= 0:
        raise err(f"{what} must be positive, got {describe(value)}")
    return x


def numbers(value, n, what, err):
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.size <= 64 else None
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise err(f"{what} must be a list of {n} numbers, got {describe(value)}")
    return tuple(number(x, f"{what}[{i}]", err) for i, x in enumerate(value))


def vector(value, n, what, err):
    """n finite numbers (a list, tuple or array of any shape; no strings or booleans, as the
    YAML reader takes them) as a float array."""
    try:
        if any(isinstance(x, (str, bytes, bool, np.bool_))
               for x in np.asarray(value, dtype=object).reshape(-1)):
            raise err(f"{what} must be {n} numbers, got {value!r}")
        arr = np.array(value, dtype=float).reshape(-1)
    except (TypeError, ValueError, OverflowError):      # (OverflowError: an int of 10**400)
        raise err(f"{what} must be {n} numbers, got {value!r}") from None
    if arr.size != n:
        raise err(f"{what} must be {n} numbers, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise err(f"{what} must be finite, got {arr.tolist()}")
    return arr


def axis(value, what, err):
    """A joint's axis or plane normal: 3 finite numbers of nonzero length, as a unit vector (a
    unit one as it is). Its norm is taken over its largest entry: |a|^2 of (1e300, 1e300, 0)
    overflows to inf (and a / inf is a zero axis), that of 1e-200 underflows to 0."""
    a = vector(value, 3, what, err)
    big = float(np.abs(a).max())
    unit = a / big if big > 0 else a
    n = float(np.linalg.norm(unit)) * big             # a Python float: inf, no warning
    if n < 1e-12:
        raise err(f"{what} has zero length (|{what}| = {n:.3g}, below 1e-12)")
    if abs(n - 1.0) > 1e-15:
        a = unit / np.linalg.norm(unit)
    return tuple(float(x) for x in a)


def chart(value, err):
    """An Euler chart's name (EULER_CHARTS: XYZ, ZYX, ... and the proper ones)."""
    if not isinstance(value, str) or value not in EULER_CHARTS:
        raise err(f"unknown Euler chart {describe(value)} (one of {', '.join(EULER_CHARTS)})")
    return str(value)                   # (numpy's str_ as Python's)


def rotation_problem(R, what):
    """Why the 3x3 array R is no proper rotation (orthonormal to 1e-6, determinant +1), or None:
    the one check of every rotation a model is given (YAML, params, Python's origin=)."""
    if np.abs(R @ R.T - np.eye(3)).max() > 1e-6:
        return f"{what} is not orthonormal (R R^T != 1)"
    if np.linalg.det(R) < 0:
        return f"{what} is a reflection (determinant -1), not a proper rotation"
    return None


def rotation_matrix(value, what, err):
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.size <= 64 else None
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise err(f"{what} must be a 3x3 matrix, got {describe(value)}")
    R = np.array([numbers(r, 3, f"{what} row {i}", err) for i, r in enumerate(value)])
    problem = rotation_problem(R, what)
    if problem:
        raise err(problem)
    if np.abs(R @ R.T - np.eye(3)).max() > 1e-12:      # rounded input: the nearest rotation
        u, _, vt = np.linalg.svd(R)                     # (an exact one is kept: a dumped model
        R = u @ vt                                      # loads as it was)
    R[np.abs(R) < 1e-15] = 0.0
    return tuple(tuple(float(x) for x in row) for row in R)


def _mapping(value, what, err, allowed):
    if not isinstance(value, dict):
        raise err(f"{what} must be a mapping, got {describe(value)}")
    for key in value:
        if not isinstance(key, str) or key not in allowed:
            shown = repr(key[:40]) if isinstance(key, str) else describe(key)
            raise err(f"unknown key {shown} in {what} (allowed: {', '.join(allowed)})")
    return value


def placement(spec, what, err, out):
    """xyz and rpy / rotation of a surface (or control frame) into out['xyz'], out['rotation']."""
    from .model import rotation_from_rpy
    if "rpy" in spec and "rotation" in spec:
        raise err(f"{what}: give either rpy or rotation, not both")
    if "xyz" in spec:
        out["xyz"] = numbers(spec["xyz"], 3, f"{what} xyz", err)
    if "rotation" in spec:
        out["rotation"] = rotation_matrix(spec["rotation"], f"{what} rotation", err)
    elif "rpy" in spec:
        R = rotation_from_rpy(numbers(spec["rpy"], 3, f"{what} rpy", err))
        out["rotation"] = rotation_matrix(R, f"{what} rotation", err)
    return out


def _is_key(shape, table):
    """shape is one of table's keys (a list or mapping there, unhashable, is not)."""
    return isinstance(shape, str) and shape in table


def surface(value, what, err):
    """{shape: sphere, radius} | {shape: ellipsoid, semi_axes: [a, b, c]} |
    {shape: torus, major_radius, minor_radius}, each with an optional placement."""
    if not isinstance(value, dict) or not _is_key(value.get("shape"), SURFACE_KEYS):
        shape = value.get("shape") if isinstance(value, dict) else None
        raise err(f"{what} must be a mapping with shape sphere, ellipsoid or torus, got "
                  f"{describe(shape if shape is not None else value)}")
    shape = value["shape"]
    keys = SURFACE_KEYS[shape]
    _mapping(value, f"{what} ({shape})", err, ("shape",) + keys + PLACEMENT)
    out = {"shape": shape}
    for key in keys:
        if key not in value:
            raise err(f"{what} ({shape}) lacks the required key '{key}'")
    if shape == "ellipsoid":
        axes = numbers(value["semi_axes"], 3, f"{what} semi_axes", err)
        if min(axes) <= 0:
            raise err(f"{what} semi_axes must be positive, got {list(axes)}")
        out["semi_axes"] = axes
    else:
        for key in keys:
            out[key] = number(value[key], f"{what} {key}", err, positive=True)
    if shape == "torus" and out["minor_radius"] >= out["major_radius"]:
        raise err(f"{what}: the minor radius must be smaller than the major radius "
                  f"(a ring torus), got {out['minor_radius']} >= {out['major_radius']}")
    return placement(value, what, err, out)


def curve(value, what, err):
    """{shape: circle, radius} | {shape: helix, radius, rise}."""
    if not isinstance(value, dict) or not _is_key(value.get("shape"), CURVE_KEYS):
        shape = value.get("shape") if isinstance(value, dict) else None
        raise err(f"{what} must be a mapping with shape circle or helix, got "
                  f"{describe(shape if shape is not None else value)}")
    shape = value["shape"]
    keys = CURVE_KEYS[shape]
    _mapping(value, f"{what} ({shape})", err, ("shape",) + keys)
    out = {"shape": shape}
    for key in keys:
        if key not in value:
            raise err(f"{what} ({shape}) lacks the required key '{key}'")
        out[key] = number(value[key], f"{what} {key}", err, positive=(key == "radius"))
    return out


def boolean(value, what, err):
    if not isinstance(value, bool):
        raise err(f"{what} must be true or false, got {describe(value)}")
    return value


def frames(value, err):
    """The control frames of a spline curve joint: a list of {xyz, rpy | rotation}."""
    from ..joints.splines import frame_differences
    if not isinstance(value, (list, tuple)) or not 4 <= len(value) <= MAX_FRAMES:
        raise err(f"frames must be a list of 4 to {MAX_FRAMES} control frames (the generated code "
                  f"grows with their square), got {describe(value)}")
    out = []
    for k, f in enumerate(value):
        what = f"frames[{k}]"
        _mapping(f, what, err, PLACEMENT)
        if "xyz" not in f:
            raise err(f"{what} lacks the required key 'xyz'")
        fr = placement(f, what, err, {})
        fr.setdefault("rotation", ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))
        out.append({"xyz": fr["xyz"], "rotation": fr["rotation"]})
    for k in range(1, len(out)):
        Rrel = np.array(out[k - 1]["rotation"]).T @ np.array(out[k]["rotation"])
        angle = math.acos(max(-1.0, min(1.0, (np.trace(Rrel) - 1) / 2)))
        if angle > math.pi - 1e-3:
            raise err(f"frames[{k - 1}] and frames[{k}] differ by a rotation of "
                      f"{math.degrees(angle):.2f} degrees: consecutive control frames must turn by "
                      f"at most {math.degrees(math.pi - 1e-3):.2f} degrees (pi - 0.001 rad)")
    try:
        frame_differences(out)
    except ValueError as e:                                   # pragma: no cover (guarded above)
        raise err(f"frames: {e}") from None
    return out


def control(value, err):
    """The control values of a spline surface joint: {x, y, z, rx, ry, rz: m x n grids}."""
    if not isinstance(value, dict) or not value:
        raise err(f"control must be a mapping from components ({', '.join(SPLINE_COMPONENTS)}) to "
                  f"grids of numbers, got {describe(value)}")
    _mapping(value, "control", err, SPLINE_COMPONENTS)
    out, shape = {}, None
    for comp in SPLINE_COMPONENTS:
        if comp not in value:
            continue
        grid = value[comp]
        what = f"control {comp}"
        if not isinstance(grid, (list, tuple)) or not 4 <= len(grid) <= MAX_GRID:
            raise err(f"{what} must be a grid (list of rows) with 4 to {MAX_GRID} rows, "
                      f"got {describe(grid)}")
        rows = []
        for i, row in enumerate(grid):
            if not isinstance(row, (list, tuple)) or not 4 <= len(row) <= MAX_GRID:
                raise err(f"{what} row {i} must be a list of 4 to {MAX_GRID} numbers, "
                          f"got {describe(row)}")
            rows.append(tuple(number(x, f"{what}[{i}][{j}]", err) for j, x in enumerate(row)))
        dims = (len(rows), len(rows[0]))
        if any(len(r) != dims[1] for r in rows):
            raise err(f"{what}: all rows must have the same length")
        if shape is not None and dims != shape:
            raise err(f"{what} is {dims[0]}x{dims[1]}, the other components {shape[0]}x{shape[1]}")
        shape = dims
        out[comp] = tuple(rows)
    return out


def custom(params, err):
    """A custom joint's coordinates, constants, rotation and translation (joints.custom)."""
    from ..joints.custom import validate_custom
    from ..joints.expressions import ExpressionError
    try:
        return validate_custom(params)
    except ExpressionError as e:
        raise err(str(e) + (f" (offending token {e.token!r})" if e.token else "")) from None


def per_coordinate(value, dof, what, err):
    """A spring/damper parameter: one number for every coordinate, or a list of dof numbers."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return numbers(value, dof, what, err)
    return (number(value, what, err),) * dof


QUATERNION_SPRING = ("it takes damping but no stiffness or rest (a spring on a quaternion has no "
                     "single meaning)")


def spring(joint, err):
    """Normalise joint.stiffness / damping / rest / armature in place (None: absent)."""
    dof = joint.dof
    if joint.nq != dof and (joint.stiffness is not None or joint.rest is not None):
        raise err(f"a {joint.type} joint's q holds a quaternion: {QUATERNION_SPRING}")
    if joint.rest is not None and joint.stiffness is None:
        raise err("rest is the rest position of a spring: give stiffness too (without one, rest "
                  "changes nothing)")
    for key in ("stiffness", "damping", "rest", "armature"):
        value = getattr(joint, key)
        if value is None:
            continue
        if dof == 0:
            raise err(f"{key}: a joint without coordinates has no {key}")
        vals = per_coordinate(value, dof, key, err)
        if key != "rest" and min(vals) < 0:
            raise err(f"{key} must not be negative, got {list(vals)}")
        setattr(joint, key, vals)


def wrench(value, err):
    vals = numbers(value, 6, "wrench", err)
    return vals
