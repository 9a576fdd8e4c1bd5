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

Layouts used by the generated code (write_charts): 3x3 blocks are row-major double[9], and
derivative stacks are double[27] with entry [9*k + 3*i + j] = d M_ij / d q_(k+1). Only the top
(rotational) 3x3 block of S and Sdot is emitted, because the bottom block is identically zero.
"""
from __future__ import annotations

import errno
import functools
import os
import tempfile
from collections.abc import Mapping

import numpy as np
import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.pycode import PythonCodePrinter

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


def _singular_q3(name):
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
        c, d = _singular_q3(name)
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
# Code generation.

# (quantity, C/Python suffix, needs qdot, is a stack of 3 derivative slices, returns a scalar)
_GEN_QUANTITIES = (
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


def _flat_entries(d, key):
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


def _cse(exprs):
    return sp.cse(exprs, symbols=sp.numbered_symbols("x"), order="none")


def _input_unpacking(d, used, lang):
    lines = []
    for vec, cname in ((d.q, "q"), (d.qdot, "qd")):
        for k, sym in enumerate(vec):
            if sym in used:
                if lang == "c":
                    lines.append(f"    const double {sym.name} = {cname}[{k}];")
                else:
                    lines.append(f"    {sym.name} = {cname}[{k}]")
    return lines


def _used_symbols(repl, reduced):
    used = set()
    for _, e in repl:
        used |= e.free_symbols
    for e in reduced:
        used |= sp.sympify(e).free_symbols
    return used


def _c_signature(name, key, needs_qd):
    fn = f"scleron_chart_{name}_{key}"
    args = "const double q[3]" + (", const double qd[3]" if needs_qd else "")
    if key == "detS":
        return f"double {fn}({args})"
    n = 27 if key in ("dRdq", "dRdotdq", "dSdq", "dSdotdq") else 9
    return f"void {fn}({args}, double out[{n}])"


def _c_function(d, key, needs_qd, printer):
    exprs = _flat_entries(d, key)
    repl, reduced = _cse(exprs)
    lines = [_c_signature(d.name, key, needs_qd), "{"]
    lines += _input_unpacking(d, _used_symbols(repl, reduced), "c")
    for sym, e in repl:
        lines.append(f"    const double {sym.name} = {printer.doprint(e)};")
    if key == "detS":
        lines.append(f"    return {printer.doprint(reduced[0])};")
    else:
        for idx, e in enumerate(reduced):
            lines.append(f"    out[{idx}] = {printer.doprint(e)};")
    lines.append("}")
    return "\n".join(lines)


def _c_q_from_R(name):
    (a, b), (kind, m), (c, d) = _Q_FROM_R[name]

    def ent(s):
        i, j = divmod(abs(s), 10)
        return ("-" if s < 0 else "") + f"R[{3 * (i - 1) + (j - 1)}]"

    q2 = (f"atan2(other, {ent(m)})" if kind == "acos" else f"atan2({ent(m)}, other)")
    sc, sd = _singular_q3(name)
    return "\n".join([
        f"void scleron_chart_{name}_q_from_R(const double R[9], double q[3])",
        "{",
        f"    const double a = {ent(a)}, b = {ent(b)};",
        "    const double other = hypot(a, b);",
        f"    q[1] = {q2};",
        f"    if (other < {GIMBAL_LOCK!r}) {{       /* gimbal lock: q1 = 0, q3 the whole turn */",
        "        q[0] = 0.0;",
        f"        q[2] = atan2({ent(sc)}, {ent(sd)});",
        "    } else {",
        "        q[0] = atan2(a, b);",
        f"        q[2] = atan2({ent(c)}, {ent(d)});",
        "    }",
        "}",
    ])


_C_HEADER_TOP = """\
/* Euler / Tait-Bryan charts of a spherical joint. Generated by scleron.joints.charts; do not edit.
 *
 * Chart "ABC": R(q) = R_A(q1) R_B(q2) R_C(q3) (intrinsic sequence of active elementary rotations).
 * S is the rotational (top) 3x3 block of the body-frame motion subspace; its bottom 3 rows \
are zero.
 * 3x3 matrices are row-major double[9]; derivative stacks are double[27] with
 * out[9*k + 3*i + j] = d M_ij / d q_(k+1).
 */
#ifndef SCLERON_EULER_CHARTS_H
#define SCLERON_EULER_CHARTS_H

#ifdef __cplusplus
extern "C" {
#endif

#define SCLERON_N_CHARTS 12
"""

_C_HEADER_BOTTOM = """
typedef struct {
    const char *name;
    void (*R)(const double q[3], double out[9]);
    void (*dRdq)(const double q[3], double out[27]);
    void (*Rdot)(const double q[3], const double qd[3], double out[9]);
    void (*dRdotdq)(const double q[3], const double qd[3], double out[27]);
    void (*S)(const double q[3], double out[9]);
    double (*detS)(const double q[3]);
    void (*dSdq)(const double q[3], double out[27]);
    void (*Sdot)(const double q[3], const double qd[3], double out[9]);
    void (*dSdotdq)(const double q[3], const double qd[3], double out[27]);
    void (*q_from_R)(const double R[9], double q[3]);
} scleron_chart_functions;

/* Indexed by the scleron_chart_id values above. */
extern const scleron_chart_functions scleron_charts[SCLERON_N_CHARTS];

/* Index of a chart name ("XYZ", ...), or -1 if unknown. */
int scleron_chart_index(const char *name);

/* Re-express (q, qd[, qdd]) of chart old_id in chart new_id (Sueda Table 3 and eq. 2.40). qdd and
 * qdd_new may be NULL. Returns 0, or -1 if S of the new chart is singular there (|det| < 1e-12). */
int scleron_chart_switch(int old_id, int new_id, const double q[3], const double qd[3],
                         const double qdd[3], double q_new[3], double qd_new[3], double qdd_new[3]);

#ifdef __cplusplus
}
#endif

#endif /* SCLERON_EULER_CHARTS_H */
"""

_C_SOURCE_BOTTOM = """
int scleron_chart_index(const char *name)
{
    int i;
    for (i = 0; i < SCLERON_N_CHARTS; ++i) {
        if (strcmp(scleron_charts[i].name, name) == 0) return i;
    }
    return -1;
}

/* x = A^-1 b for a 3x3 row-major A, by Cramer's rule; returns -1 if |det A| < 1e-12. */
static int scleron_chart_solve3(const double A[9], const double b[3], double x[3])
{
    const double c0 = A[4] * A[8] - A[5] * A[7];
    const double c1 = A[5] * A[6] - A[3] * A[8];
    const double c2 = A[3] * A[7] - A[4] * A[6];
    const double det = A[0] * c0 + A[1] * c1 + A[2] * c2;
    double inv[9];
    int i;
    if (fabs(det) < 1e-12) return -1;
    inv[0] = c0 / det;
    inv[1] = (A[2] * A[7] - A[1] * A[8]) / det;
    inv[2] = (A[1] * A[5] - A[2] * A[4]) / det;
    inv[3] = c1 / det;
    inv[4] = (A[0] * A[8] - A[2] * A[6]) / det;
    inv[5] = (A[2] * A[3] - A[0] * A[5]) / det;
    inv[6] = c2 / det;
    inv[7] = (A[1] * A[6] - A[0] * A[7]) / det;
    inv[8] = (A[0] * A[4] - A[1] * A[3]) / det;
    for (i = 0; i < 3; ++i) x[i] = inv[3 * i] * b[0] + inv[3 * i + 1] * b[1] \
+ inv[3 * i + 2] * b[2];
    return 0;
}

static void scleron_chart_matvec3(const double A[9], const double x[3], double y[3])
{
    int i;
    for (i = 0; i < 3; ++i) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

int scleron_chart_switch(int old_id, int new_id, const double q[3], const double qd[3],
                         const double qdd[3], double q_new[3], double qd_new[3], double qdd_new[3])
{
    const scleron_chart_functions *co, *cn;
    double R[9], S_old[9], S_new[9], w[3];
    int i;
    if (old_id < 0 || old_id >= SCLERON_N_CHARTS || new_id < 0 || new_id >= SCLERON_N_CHARTS) \
return -1;
    co = &scleron_charts[old_id];
    cn = &scleron_charts[new_id];
    co->R(q, R);
    cn->q_from_R(R, q_new);
    co->S(q, S_old);
    cn->S(q_new, S_new);
    scleron_chart_matvec3(S_old, qd, w);
    if (scleron_chart_solve3(S_new, w, qd_new) != 0) return -1;
    if (qdd != NULL && qdd_new != NULL) {
        double Sd_old[9], Sd_new[9], a[3], b[3], c[3], rhs[3];
        co->Sdot(q, qd, Sd_old);
        cn->Sdot(q_new, qd_new, Sd_new);
        scleron_chart_matvec3(Sd_new, qd_new, a);
        scleron_chart_matvec3(Sd_old, qd, b);
        scleron_chart_matvec3(S_old, qdd, c);
        for (i = 0; i < 3; ++i) rhs[i] = -a[i] + b[i] + c[i];
        if (scleron_chart_solve3(S_new, rhs, qdd_new) != 0) return -1;
    }
    return 0;
}
"""


def _c_sources():
    printer = C99CodePrinter()
    header = [_C_HEADER_TOP, "typedef enum {"]
    header += [f"    SCLERON_CHART_{n} = {i}," for i, n in enumerate(CHARTS)]
    header += ["} scleron_chart_id;", ""]
    source = ["/* Generated by scleron.joints.charts; do not edit. See euler_charts.h for the "
              "layouts. */",
              "#include <math.h>", "#include <stddef.h>", "#include <string.h>",
              '#include "euler_charts.h"', ""]
    for name in CHARTS:
        d = derive(name)
        header.append(f"/* Chart {name}: R = R_{name[0]}(q1) R_{name[1]}(q2) R_{name[2]}(q3). */")
        for key, needs_qd, _stack in _GEN_QUANTITIES:
            header.append(_c_signature(name, key, needs_qd) + ";")
            source.append(_c_function(d, key, needs_qd, printer))
            source.append("")
        header.append(f"void scleron_chart_{name}_q_from_R(const double R[9], double q[3]);")
        header.append("")
        source.append(_c_q_from_R(name))
        source.append("")
    header.append(_C_HEADER_BOTTOM)
    source.append("const scleron_chart_functions scleron_charts[SCLERON_N_CHARTS] = {")
    for name in CHARTS:
        fns = ", ".join(f"scleron_chart_{name}_{key}" for key, _, _ in _GEN_QUANTITIES)
        source.append(f'    {{"{name}", {fns}, scleron_chart_{name}_q_from_R}},')
    source.append("};")
    source.append(_C_SOURCE_BOTTOM)
    return "\n".join(header), "\n".join(source)


class _MathPrinter(PythonCodePrinter):
    """Python printer that writes math.sin(...) and so on, for scalar float inputs."""


def _py_function(d, key, needs_qd, stack, printer):
    exprs = _flat_entries(d, key)
    repl, reduced = _cse(exprs)
    args = "q, qd" if needs_qd else "q"
    lines = [f"def {d.name}_{key}({args}):"]
    lines += _input_unpacking(d, _used_symbols(repl, reduced), "py")
    for sym, e in repl:
        lines.append(f"    {sym.name} = {printer.doprint(e)}")
    if key == "detS":
        lines.append(f"    return float({printer.doprint(reduced[0])})")
    else:
        vals = [printer.doprint(e) for e in reduced]
        rows = ["[" + ", ".join(vals[r * 3:(r + 1) * 3]) + "]" for r in range(len(vals) // 3)]
        if stack:
            slabs = ["[" + ", ".join(rows[s * 3:(s + 1) * 3]) + "]" for s in range(3)]
            body = ",\n        ".join(slabs)
        else:
            body = ",\n        ".join(rows)
        lines.append(f"    return numpy.array([\n        {body}], dtype=float)")
    return "\n".join(lines)


def _py_q_from_R(name):
    (a, b), (kind, m), (c, d) = _Q_FROM_R[name]

    def ent(s):
        i, j = divmod(abs(s), 10)
        return ("-" if s < 0 else "") + f"R[{i - 1}][{j - 1}]"

    q2 = (f"math.atan2(other, {ent(m)})" if kind == "acos" else f"math.atan2({ent(m)}, other)")
    sc, sd = _singular_q3(name)
    return "\n".join([
        f"def {name}_q_from_R(R):",
        "    R = numpy.asarray(R, dtype=float).reshape(3, 3).tolist()",
        f"    a, b = {ent(a)}, {ent(b)}",
        "    other = math.hypot(a, b)",
        f"    if other < {GIMBAL_LOCK!r}:       # gimbal lock: q1 = 0, q3 the whole turn",
        f"        return numpy.array([0.0, {q2}, math.atan2({ent(sc)}, {ent(sd)})])",
        f"    return numpy.array([math.atan2(a, b), {q2}, math.atan2({ent(c)}, {ent(d)})])",
    ])


def _py_source():
    printer = _MathPrinter({"standard": "python3"})
    out = ['"""Euler / Tait-Bryan charts of a spherical joint. Generated by scleron.joints.charts; '
           'do not edit.',
           "",
           'Chart "ABC": R(q) = R_A(q1) R_B(q2) R_C(q3). S and Sdot are the rotational 3x3 blocks; '
           'derivative',
           "stacks have shape (3, 3, 3) with [k, i, j] = d M_ij / d q_(k+1). Inputs are sequences "
           "of 3 floats.",
           '"""', "import math", "", "import numpy", "", ""]
    table = []
    for name in CHARTS:
        d = derive(name)
        for key, needs_qd, stack in _GEN_QUANTITIES:
            out.append(_py_function(d, key, needs_qd, stack, printer))
            out += ["", ""]
        out.append(_py_q_from_R(name))
        out += ["", ""]
        entries = ", ".join(f'"{key}": {name}_{key}' for key, _, _ in _GEN_QUANTITIES)
        table.append(f'    "{name}": {{{entries}, "q_from_R": {name}_q_from_R}},')
    out.append("CHARTS = {")
    out += table
    out.append("}")
    return "\n".join(out) + "\n"


def write_charts(outdir):
    """Write euler_charts.c, euler_charts.h and euler_charts.py for all 12 charts into outdir.

    Returns the list of paths written.
    """
    os.makedirs(outdir, exist_ok=True)
    paths = {fname: os.path.join(outdir, fname)
             for fname in ("euler_charts.h", "euler_charts.c", "euler_charts.py")}
    for path in paths.values():         # all three or none (a folder at one left the others
        if os.path.isdir(path) or (os.path.islink(path) and not os.path.exists(path)):  # written)
            raise OSError(errno.EISDIR if os.path.isdir(path) else errno.ENOENT,
                          "a folder is there" if os.path.isdir(path)
                          else "a dangling link is there",
                          path)
    header, source = _c_sources()       # (derived after the places are checked: seconds)
    files = {"euler_charts.h": header, "euler_charts.c": source, "euler_charts.py": _py_source()}
    temps = []
    try:
        for fname, text in files.items():   # each written beside its place, then renamed
            fd, tmp = tempfile.mkstemp(prefix=f".{fname}.", dir=outdir)
            temps.append((tmp, paths[fname]))
            with os.fdopen(fd, "w") as f:
                f.write(text if text.endswith("\n") else text + "\n")
            os.chmod(tmp, 0o644)
        for tmp, path in temps:
            os.replace(tmp, path)
        temps = []
    finally:
        for tmp, _ in temps:
            try:
                os.remove(tmp)
            except OSError:
                pass
    return list(paths.values())
