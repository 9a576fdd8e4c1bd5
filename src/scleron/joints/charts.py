"""The 12 Euler / Tait-Bryan charts of a spherical joint (Sueda, section 2.5.5, Tables 1-3,
eq. 2.40, App. A).

Convention
----------
Chart "ABC" means R(q) = R_A(q1) R_B(q2) R_C(q3), a product of elementary *active* rotations
(R_X(t) = [[1,0,0],[0,c,-s],[0,s,c]], and so on). Read left to right this is the *intrinsic*
sequence: rotate about A, then about the rotated B, then about the twice-rotated C. (Read right to
left it is the extrinsic sequence C, B, A about fixed axes.) The seed supports this reading in three
ways:

* Appendix A builds the matrices as ``XYZ = X1*Y2*Z3`` and so on, with
  ``X1 = [1 0 0; 0 c(1) -s(1); 0 s(1) c(1)]``. These are active elementary matrices, the angle
  index is the factor's position, and the factors multiply left to right.
* Eq. (2.33) / (3.23) prints the XYZ matrix with first row (c2c3, -c2s3, s2) and R33 = c1c2. That is
  the first row of R_X(q1) R_Y(q2) R_Z(q3). Reading the product the other way,
  R_Z(q3) R_Y(q2) R_X(q1), would put -s2 at R31 instead.
* In every row of Tables 1 and 2 the third column of S (body frame) is the constant unit vector of
  the *last* axis, and the second column depends only on q3. Body-frame columns of that form come
  only from the intrinsic product above. tests/test_charts.py checks all 12 charts against the
  transcribed tables.

Twists are [omega; v] in body coordinates. For Q(q) = (R(q), 0) column k of S is the twist
(Q^-1 dQ/dq_k)^vee, so its top three rows are vee(R^T dR/dq_k) and its bottom three rows are 0.
Sdot = sum_k dS/dq_k qdot_k.

What we found in the seed
-------------------------
* Table 3 labels two rows wrongly: "XXX" must be XYX and "YYZ" must be YZY. The formulas in those
  rows fit XYX and YZY. Table 3 also lists YZY before YXY and YZX before YXZ, so its row order
  differs from Tables 1 and 2. _Q_FROM_R below is keyed by chart name, not by row position.
* In the second line of eq. (2.40), "Sdot_new^-1" stands for d/dt(S_new^-1) =
  -S_new^-1 Sdot_new S_new^-1. The last line of (2.40) is the form implemented here.
* The q2 formulas in Table 3 (acos / asin of one entry) are implemented as an equivalent atan2, with
  the magnitude of the other factor taken from the two entries that q1 uses. For an exact rotation
  this gives the same angle. It is far better conditioned when |R_ii| is near 1 and never goes out
  of domain.

Layouts of the charts' standalone C library and Python module (`scleron charts`, written by
scleron.backends.charts from EMITTED_QUANTITIES below): 3x3 blocks are row-major double[9], and
derivative stacks are double[27] with entry [9*k + 3*i + j] = d M_ij / d q_(k+1). Only the top
(rotational) 3x3 block of S and Sdot is emitted, because the bottom block is identically zero.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np
import sympy as sp

from .symbolic import trig_reduce

# The chart names, in Sueda's table order; the joint registry and the model layer read them from
# here (scleron.model.EULER_CHARTS is this tuple).
EULER_CHARTS = ("XYX", "XZX", "YXY", "YZY", "ZXZ", "ZYZ",      # proper Euler angles (Sueda Table 1)
                "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")      # Tait-Bryan angles (Sueda Table 2)
CHARTS = EULER_CHARTS
PROPER_EULER = CHARTS[:6]
TAIT_BRYAN = CHARTS[6:]

# The coordinate symbols shared by every derivation.
Q_SYMBOLS = sp.symbols("q1:4", real=True)
QD_SYMBOLS = sp.symbols("qd1:4", real=True)

DERIVED_KEYS = ("R", "dRdq", "Rdot", "dRdotdq", "S", "detS", "dSdq", "Sdot", "dSdotdq")


def _check_name(name):
    if name not in CHARTS:
        raise ValueError(f"unknown Euler chart {name!r}; expected one of {', '.join(CHARTS)}")
    return name


def elementary(axis, angle):
    """Active rotation by `angle` about the coordinate axis 'X', 'Y' or 'Z', as a sympy Matrix."""
    c, s = sp.cos(angle), sp.sin(angle)
    if axis == "X":
        return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "Y":
        return sp.Matrix([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    if axis == "Z":
        return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    raise ValueError(f"axis must be 'X', 'Y' or 'Z', got {axis!r}")


def skew(v):
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def axis_rotation(axis, angle):
    """Rotation by angle about a unit axis; exact elementary rotations for (+-) frame axes."""
    a = [float(x) for x in axis]
    for k in range(3):
        if abs(abs(a[k]) - 1.0) < 1e-15 and all(abs(a[j]) < 1e-15 for j in range(3) if j != k):
            return elementary("XYZ"[k], angle if a[k] > 0 else -angle)
    A = skew(a)
    return sp.eye(3) + sp.sin(angle) * A + (1 - sp.cos(angle)) * A * A


def rotation(name, q1, q2, q3):
    """R = R_A(q1) R_B(q2) R_C(q3) for chart "ABC" (intrinsic sequence, see the module
    docstring)."""
    _check_name(name)
    return elementary(name[0], q1) * elementary(name[1], q2) * elementary(name[2], q3)


def _vee(W):
    """The axial vector of a 3x3 skew-symmetric matrix."""
    return [W[2, 1], W[0, 2], W[1, 0]]


class ChartDerivation(Mapping):
    """Read-only mapping of the symbolic quantities of one chart (keys: DERIVED_KEYS).

    Attributes: name, q and qdot (the 3-tuples of symbols used in the expressions), and S3 / Sdot3 /
    dSdq3 / dSdotdq3, which hold the top 3x3 blocks of S, Sdot and their derivatives.
    """

    def __init__(self, name, q, qdot, data):
        self.name = name
        self.q = q
        self.qdot = qdot
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(DERIVED_KEYS)

    def __len__(self):
        return len(DERIVED_KEYS)

    @property
    def S3(self):
        return self._data["S"][:3, :]

    @property
    def Sdot3(self):
        return self._data["Sdot"][:3, :]

    @property
    def dSdq3(self):
        return [m[:3, :] for m in self._data["dSdq"]]

    @property
    def dSdotdq3(self):
        return [m[:3, :] for m in self._data["dSdotdq"]]

    def __repr__(self):
        return f"ChartDerivation({self.name!r})"


@functools.lru_cache(maxsize=None)
def derive(name):
    """Derive R, dR/dq, Rdot, dRdot/dq, S (6x3), det S, dS/dq, Sdot (6x3) and dSdot/dq for a chart.

    This follows Sueda's Appendix A. dRdq, dRdotdq, dSdq and dSdotdq are lists of 3 matrices: entry
    k is the derivative with respect to q_(k+1). Each entry of S is reduced (symbolic.trig_reduce)
    to the short product form of Tables 1 and 2. The result is cached and immutable.
    """
    _check_name(name)
    q, qd = Q_SYMBOLS, QD_SYMBOLS
    R = rotation(name, *q)
    dRdq = [R.diff(qk) for qk in q]
    Rdot = sp.zeros(3, 3)
    for k in range(3):
        Rdot += dRdq[k] * qd[k]
    dRdotdq = [Rdot.diff(qk) for qk in q]

    S3 = sp.zeros(3, 3)
    for k in range(3):
        w = _vee(R.T * dRdq[k])
        for i in range(3):
            S3[i, k] = sp.factor_terms(trig_reduce(w[i]))
    detS = sp.factor_terms(trig_reduce(S3.det()))
    S = S3.col_join(sp.zeros(3, 3))
    dSdq = [S.diff(qk) for qk in q]
    Sdot = sp.zeros(6, 3)
    for k in range(3):
        Sdot += dSdq[k] * qd[k]
    Sdot = Sdot.applyfunc(sp.expand)
    dSdotdq = [Sdot.diff(qk) for qk in q]

    im = sp.ImmutableMatrix
    data = {
        "R": im(R), "dRdq": [im(m) for m in dRdq], "Rdot": im(Rdot),
        "dRdotdq": [im(m) for m in dRdotdq],
        "S": im(S), "detS": detS, "dSdq": [im(m) for m in dSdq], "Sdot": im(Sdot),
        "dSdotdq": [im(m) for m in dSdotdq],
    }
    return ChartDerivation(name, q, qd, data)


# --------------------------------------------------------------------------------------------------
# Table 3: q from R. Entries are signed 1-based indices: 23 means R_23 and -31 means -R_31.
#   q1 = atan2(a, b); q2 = acos(+-R_ii) for proper Euler or asin(+-R_ij) for Tait-Bryan;
#   q3 = atan2(c, d).
# The two rows that the seed labels "XXX" and "YYZ" are stored here as XYX and YZY.
_Q_FROM_R = {
    "XYX": ((21, -31), ("acos", 11), (12, 13)),
    "XZX": ((31, 21), ("acos", 11), (13, -12)),
    "YZY": ((32, -12), ("acos", 22), (23, 21)),
    "YXY": ((12, 32), ("acos", 22), (21, -23)),
    "ZXZ": ((13, -23), ("acos", 33), (31, 32)),
    "ZYZ": ((23, 13), ("acos", 33), (32, -31)),
    "XYZ": ((-23, 33), ("asin", 13), (-12, 11)),
    "XZY": ((32, 22), ("asin", -12), (13, 11)),
    "YZX": ((-31, 11), ("asin", 21), (-23, 22)),
    "YXZ": ((13, 33), ("asin", -23), (21, 22)),
    "ZXY": ((-12, 22), ("asin", 32), (-31, 33)),
    "ZYX": ((21, 11), ("asin", -31), (32, 33)),
}


# At the singularity (|sin q2| or |cos q2| below GIMBAL_LOCK) only q1 + q3 (or q1 - q3) is
# defined: q1 = 0 there, and q3 from the row of R that R_B leaves alone (row B of R_B(q2) R_C(q3)
# is row B of R_C(q3)), so that R(q) = R. Table 3's q1 and q3 are then atan2 of rounding noise.
GIMBAL_LOCK = 1e-9
_AXIS = {"X": 0, "Y": 1, "Z": 2}


def q_from_R_entries(name):
    """Table 3 of a chart: ((a, b), (kind, m), (c, d)) in signed 1-based entries of R, q1 =
    atan2(a, b), q2 from m ("acos" or "asin", as an atan2: q_from_R), q3 = atan2(c, d)."""
    return _Q_FROM_R[_check_name(name)]


def singular_q3(name):
    """(c, d), signed 1-based entries: q3 = atan2(c, d) at the chart's singularity with q1 = 0."""
    b, c = _AXIS[name[1]], _AXIS[name[2]]
    j, k = (c + 1) % 3, (c + 2) % 3          # R_C: [j][j] = [k][k] = cos, [k][j] = sin = -[j][k]
    if b == j:
        return -(10 * (j + 1) + k + 1), 10 * (j + 1) + j + 1
    return 10 * (k + 1) + j + 1, 10 * (k + 1) + k + 1


def _entry(R, signed_index):
    sign = -1.0 if signed_index < 0 else 1.0
    i, j = divmod(abs(signed_index), 10)
    return sign * R[i - 1][j - 1]


def q_from_R(name, R):
    """Numeric chart coordinates q (numpy array of 3) of a rotation matrix, from Sueda's Table 3.

    The angles lie in the principal ranges: q1, q3 in (-pi, pi]; q2 in [0, pi] for proper Euler
    charts and in [-pi/2, pi/2] for Tait-Bryan charts. At the chart's singularity (det S = 0, to
    GIMBAL_LOCK) q1 = 0 and q3 takes the whole turn about the first and third axes.
    """
    _check_name(name)
    R = np.asarray(R, dtype=float).reshape(3, 3).tolist()
    (a, b), (kind, m), (c, d) = _Q_FROM_R[name]
    ea, eb = _entry(R, a), _entry(R, b)
    q1 = np.arctan2(ea, eb)
    other = np.hypot(ea, eb)          # |sin q2| (proper) or |cos q2| (Tait-Bryan)
    em = _entry(R, m)
    q2 = np.arctan2(other, em) if kind == "acos" else np.arctan2(em, other)
    q3 = np.arctan2(_entry(R, c), _entry(R, d))
    if other < GIMBAL_LOCK:
        c, d = singular_q3(name)
        q1, q3 = 0.0, np.arctan2(_entry(R, c), _entry(R, d))
    return np.array([q1, q2, q3], dtype=float)


# --------------------------------------------------------------------------------------------------
# Numeric evaluation (lambdified once per chart, on first use).

@functools.lru_cache(maxsize=None)
def numeric_functions(name):
    """Dict of numpy callables for one chart: R(q), S3(q), Sdot3(q, qd), detS(q)."""
    d = derive(name)
    args = (d.q, d.qdot)
    return {
        "R": sp.lambdify(args, d["R"], modules="numpy"),
        "S3": sp.lambdify(args, d.S3, modules="numpy"),
        "Sdot3": sp.lambdify(args, d.Sdot3, modules="numpy"),
        "detS": sp.lambdify(args, d["detS"], modules="numpy"),
    }


_ZERO3 = (0.0, 0.0, 0.0)


def _vec3(x):
    return np.asarray(x, dtype=float).reshape(3)


def R_num(name, q):
    return np.asarray(numeric_functions(name)["R"](_vec3(q), _ZERO3), dtype=float)


def S3_num(name, q):
    return np.asarray(numeric_functions(name)["S3"](_vec3(q), _ZERO3), dtype=float)


def Sdot3_num(name, q, qd):
    return np.asarray(numeric_functions(name)["Sdot3"](_vec3(q), _vec3(qd)), dtype=float)


def det_S(name, q):
    """Numeric det S(q) of a chart (-sin q2 or +-cos q2)."""
    return float(numeric_functions(name)["detS"](_vec3(q), _ZERO3))


def switch_chart(old, new, q, qd, qdd=None):
    """Re-express a spherical joint state in another chart (Table 3 and eq. 2.40).

    Returns (q_new, qd_new), or (q_new, qd_new, qdd_new) when qdd is given. R, the body angular
    velocity S3 qd and the body angular acceleration d/dt(S3 qd) are unchanged. The world-frame
    quantities R S3 qd and so on are therefore unchanged as well. The new chart must not be singular
    at the new q.
    """
    _check_name(old)
    _check_name(new)
    q, qd = _vec3(q), _vec3(qd)
    q_new = q_from_R(new, R_num(old, q))
    S_old, S_new = S3_num(old, q), S3_num(new, q_new)
    qd_new = np.linalg.solve(S_new, S_old @ qd)
    if qdd is None:
        return q_new, qd_new
    qdd = _vec3(qdd)
    rhs = -Sdot3_num(new, q_new, qd_new) @ qd_new + Sdot3_num(old, q, qd) @ qd + S_old @ qdd
    qdd_new = np.linalg.solve(S_new, rhs)
    return q_new, qd_new, qdd_new


# --------------------------------------------------------------------------------------------------
# What the charts' standalone C library and Python module emit (scleron.backends.charts).

# (quantity, needs qdot, is a stack of 3 derivative slices), in the order of the C struct
EMITTED_QUANTITIES = (
    ("R", False, False),
    ("dRdq", False, True),
    ("Rdot", True, False),
    ("dRdotdq", True, True),
    ("S", False, False),
    ("detS", False, False),
    ("dSdq", False, True),
    ("Sdot", True, False),
    ("dSdotdq", True, True),
)


def flat_entries(d, key):
    """The entries emitted for a quantity, in the layout described in the module docstring."""
    if key == "detS":
        return [d["detS"]]
    if key == "S":
        mats = [d.S3]
    elif key == "Sdot":
        mats = [d.Sdot3]
    elif key == "dSdq":
        mats = d.dSdq3
    elif key == "dSdotdq":
        mats = d.dSdotdq3
    elif key in ("dRdq", "dRdotdq"):
        mats = d[key]
    else:
        mats = [d[key]]
    return [m[i, j] for m in mats for i in range(3) for j in range(3)]


def emitted(name):
    """What the charts' standalone C library and Python module hold for one chart, as data for
    scleron.backends.charts to print: its coordinate symbols, the flat entries (sympy) of each
    EMITTED_QUANTITIES entry, its Table 3 (q_from_R_entries, singular_q3) and GIMBAL_LOCK."""
    d = derive(name)
    return {"name": name, "q": d.q, "qd": d.qdot,
            "quantities": [(key, needs_qd, stack, flat_entries(d, key))
                           for key, needs_qd, stack in EMITTED_QUANTITIES],
            "q_from_R": q_from_R_entries(name), "singular_q3": singular_q3(name),
            "gimbal_lock": GIMBAL_LOCK}
