"""Custom joints: the transform written in the model file as expressions of the coordinates.

    type: custom
    coordinates: [a, b]                       # names of the joint's coordinates, in order
    constants: {r: 0.3}                       # optional named numbers
    rotation: [[z, "a"], [x, "0.5*b"]]         # a product of axis rotations R_z(a) R_x(0.5 b) ...
    # or a 3x3 matrix of expressions:  rotation: [["cos(a)", "-sin(a)", 0],
                                                  ["sin(a)", "cos(a)", 0], [0, 0, 1]]
    translation: ["r*cos(a)", "r*sin(a)", "b"]

The text goes through joints.expressions (a whitelist tokenizer and recursive-descent parser),
never through eval/sympify. validate_custom checks everything a model loader must reject:
the structure, every expression, and that the rotation is a rotation (orthonormal with
determinant +1) and the transform finite at a few random coordinates.
"""
import math

import numpy as np
import sympy as sp

from . import charts
from .charts import axis_rotation
from .expressions import ExpressionError, _show, check_name, parse_expression
from .surfaces import num
from .symbolic import Evaluator

AXIS_NAMES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}
MAX_COORDINATES = 6
MAX_CONSTANTS = 64
MAX_FACTORS = 16
# Rotations about an axis other than x, y or z whose angle moves with a coordinate: each makes
# every entry of R dense, and deriving S and Sdot grows steeply with their number (this machine:
# 6 of them 11 s, 8 three minutes, found by an outside tester); constant angles cost nothing.
MAX_MOVING_GENERAL_AXES = 6
# Rotations of any axis whose angle moves: each multiplies the terms of R and of its derivatives
# (an outside tester, angles such as sin(a)^5 exp(0.1 b) + sqrt(1 + c^2) / (3 + d^2) about x, y,
# z in turn: 6 derive in 17 s, 8 in 43 s, 10 in 128 s, 16 not in ten minutes)
MAX_MOVING_ROTATIONS = 8
ORTHONORMAL_TOL = 1e-9
SAMPLES = 4


def _symbols(d):
    return sp.symbols(f"q1:{d + 1}", real=True) if d else ()


def is_matrix(rotation):
    return (isinstance(rotation, (list, tuple)) and len(rotation) == 3
            and all(isinstance(r, (list, tuple)) and len(r) == 3 for r in rotation))


def names_of(params, q):
    names = {c: q[k] for k, c in enumerate(params.get("coordinates") or ())}
    for c, value in (params.get("constants") or {}).items():
        names[c] = num(value)
    return names


def _parse(text, names, where):
    try:
        return parse_expression(text, names)
    except ExpressionError as e:
        raise ExpressionError(f"{where}: {e}", token=e.token) from None


def _axis_rotation(axis, angle):
    if isinstance(axis, str):
        return charts.elementary(axis.upper(), angle)
    a = np.asarray(axis, dtype=float)
    return axis_rotation(tuple(a / np.linalg.norm(a)), angle)      # a unit axis, as validated


def _constant_evaluated(R):
    """A factor whose angle is a constant as numbers: cos and sin of a float's exact rational
    stay symbolic otherwise, and products of such factors about general axes grow into
    expressions that took minutes to build (six factors of angle 0.3: 77 s to load)."""
    if R.free_symbols:
        return R
    # exact rationals (0, 1, -1: the structure the simplifier folds) stay exact; the rest to
    # beyond the last bit of a double
    return R.applyfunc(lambda e: e if e.is_Rational else e.evalf(20))


def custom_factors(params, q):
    """The custom joint as (t, [R_1, R_2, ...]): Q = T(t) R_1 R_2 ..., with one R for a matrix
    rotation and one per axis rotation of a product (the factored derivation uses them)."""
    names = names_of(params, q)
    rot = params.get("rotation")
    if rot is None or (isinstance(rot, (list, tuple)) and not rot):
        Rs = []
    elif is_matrix(rot):
        Rs = [sp.Matrix(3, 3, lambda i, j: _parse(rot[i][j], names, f"rotation[{i}][{j}]"))]
    else:
        Rs = [_constant_evaluated(_axis_rotation(axis, _parse(angle, names,
                                                              f"rotation[{k}] angle")))
              for k, (axis, angle) in enumerate(rot)]
    trans = params.get("translation")
    t = (sp.Matrix([_parse(e, names, f"translation[{i}]") for i, e in enumerate(trans)])
         if trans is not None else sp.zeros(3, 1))
    return t, Rs


def custom_transform(params, q):
    """(R, t) of a custom joint, its coordinate names bound to the symbols q."""
    t, Rs = custom_factors(params, q)
    R = sp.eye(3)
    for Rk in Rs:
        R = R * Rk
    return R, t


class _Floats:
    """The float algebra (kept here: joints do not import the dynamics layer)."""
    sin, cos, tan, exp, log, sqrt, atan = (math.sin, math.cos, math.tan, math.exp, math.log,
                                           math.sqrt, math.atan)

    @staticmethod
    def call(helper, x):
        return helper.numeric(x)

    @staticmethod
    def piece(cls, x):
        return float(cls.numeric(x))


def validate_custom(params):
    """The normalised parameters of a custom joint; ExpressionError (a ValueError) naming the
    offending key or token on any problem. Nothing in the text is executed."""
    if not isinstance(params, dict):
        raise ExpressionError("a custom joint needs a mapping of parameters")
    coords = params.get("coordinates")
    if not isinstance(coords, (list, tuple)) or not coords:
        raise ExpressionError("coordinates must be a non-empty list of names")
    if len(coords) > MAX_COORDINATES:
        raise ExpressionError(f"a custom joint has at most {MAX_COORDINATES} coordinates, "
                              f"got {len(coords)}")
    coords = [check_name(c, "coordinate name") for c in coords]
    if len(set(coords)) != len(coords):
        raise ExpressionError("two coordinates have the same name")
    constants = params.get("constants") or {}
    if not isinstance(constants, dict):
        raise ExpressionError("constants must be a mapping from names to numbers")
    if len(constants) > MAX_CONSTANTS:
        raise ExpressionError(f"at most {MAX_CONSTANTS} constants, got {len(constants)}")
    consts = {}
    for name, value in constants.items():
        check_name(name, "constant name")
        if name in coords:
            raise ExpressionError(f"constant {name!r} has the name of a coordinate", token=name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or (isinstance(value, int) and abs(value) > 10 ** 300) \
                or not math.isfinite(float(value)):
            raise ExpressionError(f"constant {name!r} must be a finite number, got {_show(value)}",
                                  token=name)
        consts[name] = float(value)
    out = {"coordinates": tuple(coords), "constants": consts}
    if not consts:
        del out["constants"]

    rot = params.get("rotation")
    if rot is not None:
        if not isinstance(rot, (list, tuple)):
            raise ExpressionError("rotation must be a 3x3 matrix of expressions or a list of "
                                  "[axis, angle] pairs")
        if is_matrix(rot):
            out["rotation"] = tuple(tuple(_expression_value(e, f"rotation[{i}][{j}]")
                                          for j, e in enumerate(r))
                                    for i, r in enumerate(rot))
        else:
            if len(rot) > MAX_FACTORS:
                raise ExpressionError(f"at most {MAX_FACTORS} axis rotations, got {len(rot)}")
            factors = []
            for k, item in enumerate(rot):
                if not isinstance(item, (list, tuple)) or len(item) != 2:
                    raise ExpressionError(f"rotation[{k}] must be a pair [axis, angle] (axis x, y, "
                                          "z or 3 numbers), or rotation a 3x3 matrix")
                factors.append((_axis_value(item[0], k),
                                _expression_value(item[1], f"rotation[{k}] angle")))
            out["rotation"] = tuple(factors)
    trans = params.get("translation")
    if trans is not None:
        if not isinstance(trans, (list, tuple)) or len(trans) != 3:
            raise ExpressionError("translation must be a list of 3 expressions")
        out["translation"] = tuple(_expression_value(e, f"translation[{i}]")
                                   for i, e in enumerate(trans))

    q = _symbols(len(coords))
    R, t = custom_transform(out, q)              # parses every expression (ExpressionError)
    _check_moving_general_axes(out, coords, consts)
    _check_values(R, t, q)
    return out


def _is_frame_axis(axis):
    """Whether axis_rotation writes an elementary rotation for this unit axis (its test: one
    entry +-1 and the others below 1e-15), not a dense general one."""
    return any(abs(abs(a) - 1.0) < 1e-15
               and all(abs(b) < 1e-15 for j, b in enumerate(axis) if j != k)
               for k, a in enumerate(axis))


def _check_moving_general_axes(out, coords, consts):
    """At most MAX_MOVING_GENERAL_AXES factors of the rotation turn about an axis other than x,
    y, z by an angle that depends on a coordinate (their derivation takes minutes)."""
    rot = out.get("rotation")
    if rot is None or is_matrix(rot):
        return
    names = {c: sp.Symbol(c) for c in coords}
    names.update({c: sp.Float(v) for c, v in consts.items()})
    turning = [k for k, (_, angle) in enumerate(rot) if parse_expression(angle, names).free_symbols]
    if len(turning) > MAX_MOVING_ROTATIONS:
        raise ExpressionError(
            f"rotation: {len(turning)} of its factors turn with a coordinate (rotation"
            f"[{turning[0]}], ...); at most {MAX_MOVING_ROTATIONS}: deriving S and its rate grows "
            "steeply with them (10 take minutes). A composite joint of revolute parts derives "
            "part by part, in under a second")
    moving = [k for k in turning
              if not isinstance(rot[k][0], str) and not _is_frame_axis(rot[k][0])]
    if len(moving) > MAX_MOVING_GENERAL_AXES:
        raise ExpressionError(
            f"rotation: {len(moving)} rotations about axes other than x, y, z turn with a "
            f"coordinate (rotation[{moving[0]}], ...); at most {MAX_MOVING_GENERAL_AXES}: deriving "
            "S and its rate grows steeply with them (8 take minutes). A composite joint of "
            "revolute parts about these axes derives part by part, in under a second")


def _expression_value(e, where):
    if isinstance(e, bool) or not isinstance(e, (str, int, float)):
        raise ExpressionError(f"{where}: expected an expression (a string or a number), got "
                              f"{_show(e)}")
    return e


def _axis_value(axis, k):
    if isinstance(axis, str):
        if axis.lower() not in AXIS_NAMES:
            raise ExpressionError(f"rotation[{k}]: unknown axis {axis[:20]!r} "
                                  "(x, y, z or 3 numbers)", token=axis[:20])
        return axis.lower()
    if isinstance(axis, (list, tuple)) and len(axis) == 3 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in axis):
        try:
            a = np.array(axis, dtype=float)
        except OverflowError:                   # an integer past the largest double
            raise ExpressionError(f"rotation[{k}]: the axis must be finite and non-zero") from None
        n = float(np.linalg.norm(a)) if np.all(np.isfinite(a)) else 0.0
        if not n > 1e-12:
            raise ExpressionError(f"rotation[{k}]: the axis must be finite and non-zero")
        return tuple(float(x) for x in a / n)
    raise ExpressionError(f"rotation[{k}]: the axis must be x, y, z or 3 numbers")


def _failing_entry(R, t, q, values):
    """Which part of the transform cannot be evaluated (finite) at these coordinates, as
    "translation[k] at [...]: " or "the rotation at [...]: " (R is the composed rotation: its
    entries are not the file's, where the file gives axes and angles)."""
    entries = [(f"translation[{k}]", t[k]) for k in range(3)] + [
        ("the rotation", R[i, j]) for i in range(3) for j in range(3)]
    at, ev = np.round(values, 3).tolist(), Evaluator(_Floats, dict(zip(q, values)))
    for name, e in entries:
        try:
            if np.isfinite(float(ev(e))):
                continue
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            pass
        return f"{name} at coordinates {at}: "
    return ""


def _check_values(R, t, q):
    """R orthonormal with det +1 and t finite at a few random coordinates."""
    rng = np.random.default_rng(12345)
    good, last = 0, None
    for trial in range(6 * SAMPLES):
        values = [0.0] * len(q) if trial == 0 else list(rng.uniform(-1.0, 1.0, len(q)))
        ev = Evaluator(_Floats, dict(zip(q, values)))
        try:
            Rn = np.array(ev.matrix(R), dtype=float)
            tn = np.array(ev.vector(t), dtype=float)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError) as e:
            last = f"{_failing_entry(R, t, q, values)}{e}"
            continue
        if not (np.all(np.isfinite(Rn)) and np.all(np.isfinite(tn))):
            last = f"{_failing_entry(R, t, q, values)}not finite"
            continue
        err = np.abs(Rn.T @ Rn - np.eye(3)).max()
        if err > ORTHONORMAL_TOL:
            raise ExpressionError(f"rotation is not orthonormal at coordinates "
                                  f"{np.round(values, 3).tolist()} "
                                  f"(|R^T R - 1| = {err:.2g})")
        if np.linalg.det(Rn) < 0:
            raise ExpressionError(f"rotation is a reflection (determinant -1) at coordinates "
                                  f"{np.round(values, 3).tolist()}")
        good += 1
        if good >= SAMPLES:
            return
    raise ExpressionError("the transform cannot be evaluated (finite) at enough coordinates "
                          "in [-1, 1]"
                          + (f" (last problem: {last})" if last else ""))
