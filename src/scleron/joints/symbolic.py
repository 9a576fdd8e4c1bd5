"""Deriving S and Sdot from a joint transform with sympy, and evaluating sympy expressions
in any scalar algebra (floats for the reference, program Vars for generated code).

S&G (9):  S = [(G^-1 dG/dq_1)^v ... (G^-1 dG/dq_d)^v]   (body coordinates, angular first)
S&G (12): Sdot = sum_k dS/dq_k qdot_k
With G = (R, t):  G^-1 dG/dq_k = [[R^T dR/dq_k, R^T dt/dq_k], [0, 0]].
"""
import math

import sympy as sp

from ..algebra import Algebra
from .special import SclAbs, SclSign

# sympy functions that sympy itself writes into expressions, as the branch-free pieces
SYMPY_PIECES = {"Abs": SclAbs, "sign": SclSign}

CHOP = 1e-12
# Entries bigger than this (sympy count_ops) skip expansion and reduction in simplify_entry:
# expansion grows very fast with size, and correctness does not depend on it (every joint is
# checked against finite differences); the generated program still shares all common parts.
SIMPLIFY_MAX_OPS = 400
EXPAND_MAX_TERMS = 400      # (each term is at least one operation: more would exceed
                            # SIMPLIFY_MAX_OPS)


def vee3(W):
    """so(3) -> R^3: the axial vector of a skew matrix."""
    return [W[2, 1], W[0, 2], W[1, 0]]


def chop(expr, tol=CHOP):
    """Drop the round-off terms that float constants leave behind (e.g. 1e-17*cos(q))."""
    expr = sp.expand(expr)
    if not expr.has(sp.Float):
        return expr
    terms = sp.Add.make_args(expr)
    kept = []
    for term in terms:
        coeff, rest = term.as_coeff_Mul()
        if coeff.is_Number and abs(float(coeff)) < tol:
            continue
        if coeff.is_Float and abs(float(coeff) - round(float(coeff))) < tol:
            coeff = sp.Integer(round(float(coeff)))
        kept.append(coeff * rest)
    return sp.Add(*kept)


def trig_reduce(expr, tol=CHOP):
    """Reduce polynomials in sin/cos: sin(x)^2 -> 1 - cos(x)^2, expanded, chopped. A polynomial
    in the sines and cosines of independent angles has one such form with each sine to the
    power 0 or 1, so every identity sin^2 + cos^2 = 1 it contains cancels here (the Euler
    charts' S entries come out in the short product form of Sueda's Tables 1 and 2)."""
    expr = sp.expand(expr)
    for s in expr.atoms(sp.sin):
        expr = sp.expand(expr.subs(s ** 2, 1 - sp.cos(s.args[0]) ** 2))
    return chop(expr, tol)


def simplify_entry(expr, tol=CHOP):
    """Local simplification of one entry of S or Sdot: exact zeros and constants must come out
    as such (a revolute joint's S is a constant unit column, its Sdot exactly 0). Entries
    larger than SIMPLIFY_MAX_OPS get the cheap treatment of light_entry only. Terms with a
    coefficient below tol are dropped as round-off (chop)."""
    if sp.count_ops(expr) > SIMPLIFY_MAX_OPS or expansion_terms(expr) > EXPAND_MAX_TERMS:
        return light_entry(expr)
    expanded = sp.expand(expr)
    if sp.count_ops(expanded) > SIMPLIFY_MAX_OPS:
        return light_entry(expr)
    expr = trig_reduce(expanded, tol)
    if expr.is_number:
        return expr
    # No sympy.trigsimp here: besides sin^2 + cos^2 = 1 (done above) what it finds is the
    # angle-sum form (sin a cos b + cos a sin b -> sin(a + b)), a new sine for the generated
    # code to call where the products share sin/cos of the coordinates. Measured on the torus
    # chain, windmill, spline chain and a mixed custom/contact model: without it FD, ID and M
    # have fewer calls, as many flops within 1-3 %, run 2-6 % faster, and derive 1.2-2x faster.
    return sp.factor_terms(expr)


def expansion_terms(expr, _memo=None):
    """An upper bound on the number of terms sp.expand(expr) makes (products of sums multiply
    out, integer powers of sums grow as binomials), found without expanding; inside function
    arguments the largest bound counts. Lets simplify_entry refuse expansions that would not
    finish (a custom joint's (a + b)*(a + c)*... from a model file)."""
    memo = {} if _memo is None else _memo
    hit = memo.get(expr)
    if hit is not None:
        return hit
    if expr.is_Add:
        n = sum(expansion_terms(a, memo) for a in expr.args)
    elif expr.is_Mul:
        n = 1
        for a in expr.args:
            n *= expansion_terms(a, memo)
            if n > 10 ** 12:
                break
    elif expr.is_Pow:
        b = expansion_terms(expr.args[0], memo)
        ex = expr.args[1]
        if ex.is_Integer and ex > 1:
            k = int(ex)
            n = math.comb(b + k - 1, k) if b < 10 ** 6 and k < 10 ** 3 else 10 ** 13
        else:
            n = max(b, expansion_terms(ex, memo))
    elif expr.args:
        n = max(expansion_terms(a, memo) for a in expr.args)
    else:
        n = 1
    memo[expr] = n
    return n


def simplify_unchopped(expr):
    """simplify_entry keeping every term: for entries whose coefficients say nothing of the
    terms' sizes (an ellipsoid frame's, divided by powers of its semi-axes: a 5 mm ellipsoid's
    real terms had coefficients below 1e-12)."""
    return simplify_entry(expr, tol=0.0)


def length_unit(t, q):
    """The unit, a power of two 2^-k (k >= 0), in which S's linear rows are derived and chopped:
    the largest coefficient of the translation's derivatives dt/dq_k (S's linear rows are
    R^T dt/dq_k) rounded down to a power of two, or 1 when that is 1 or more. chop's tolerance is
    absolute; in metres a nanometre joint's real terms (a 0.5 pm cam radius, sin(1e-13 a))
    would be taken for round-off. A power of two scales floats exactly."""
    if any(expansion_terms(x) > EXPAND_MAX_TERMS for x in t):
        return sp.Integer(1)            # (before differentiating: a reviewer's deep nesting)
    largest = 0.0
    for e in (x.diff(qk) for x in t for qk in q):
        if expansion_terms(e) > EXPAND_MAX_TERMS:
            return sp.Integer(1)
        for term in sp.Add.make_args(sp.expand(e)):
            coeff = term.as_coeff_Mul()[0]
            if coeff.is_Number:
                largest = max(largest, abs(float(coeff)))
    if not 0.0 < largest < 1.0:
        return sp.Integer(1)
    return sp.Rational(1, 2 ** min(-math.floor(math.log2(largest)), 1000))


def in_length_unit(M, unit):
    """A 6 x d twist matrix (angular rows first) with its linear rows multiplied by unit."""
    return M if unit == 1 else sp.Matrix(6, M.cols, lambda r, c: M[r, c] * (unit if r >= 3 else 1))


def light_entry(expr):
    """The cheap simplification for big entries (spline joints, ellipsoid contacts): no
    expansion, no reduction; exact zeros stay exact because sympy folds them as it builds."""
    return expr


def motion_subspace(R, t, q, simplify=simplify_entry):
    """S&G (9): the 6 x d motion subspace of Q(q) = (R(q), t(q)), in the successor frame."""
    cols = []
    for qk in q:
        w = vee3(R.T * R.diff(qk))
        v = list(R.T * t.diff(qk))
        cols.append([simplify(e) for e in w + v])
    return sp.Matrix(6, len(q), lambda r, c: cols[c][r]) if q else sp.zeros(6, 0)


def motion_subspace_rate(S, q, qd, simplify=simplify_entry):
    """S&G (12): Sdot = sum_k dS/dq_k qd_k. On the light path the derivative is taken by
    dag_diff, which visits each shared subexpression once (sympy's diff walks the tree)."""
    Sdot = sp.zeros(*S.shape)
    if simplify is light_entry:
        d = DagDiff()
        for qk, qdk in zip(q, qd):
            Sdot += S.applyfunc(lambda e: d(e, qk)) * qdk
        return Sdot
    for qk, qdk in zip(q, qd):
        Sdot += S.diff(qk) * qdk
    return Sdot.applyfunc(simplify)


class DagDiff:
    """d expr / d x with memoisation over shared subexpressions.

    The light-path entries of S are products of many factors written out without expansion
    (a spline joint's seven frames): as trees they are exponentially larger than as DAGs, and
    sympy's diff (and free_symbols) walk the tree. Here every distinct subexpression is
    differentiated once. Handles Add, Mul, Pow and functions of one argument (through fdiff,
    so sin, cos, the pieces of joints.special ...); anything else goes to sympy's diff."""

    def __init__(self):
        self.memo = {}
        self.dep = {}

    def depends(self, e, x):
        key = (e, x)
        hit = self.dep.get(key)
        if hit is None:
            hit = e == x if not e.args else any(self.depends(a, x) for a in e.args)
            self.dep[key] = hit
        return hit

    def __call__(self, e, x):
        key = (e, x)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        out = self._diff(e, x)
        self.memo[key] = out
        return out

    def _diff(self, e, x):
        if not self.depends(e, x):
            return sp.Integer(0)
        if e == x:
            return sp.Integer(1)
        if e.is_Add:
            return sp.Add(*[self(a, x) for a in e.args])
        if e.is_Mul:
            args = e.args
            terms = []
            for i, a in enumerate(args):
                da = self(a, x)
                if da != 0:
                    terms.append(sp.Mul(*(args[:i] + (da,) + args[i + 1:])))
            return sp.Add(*terms)
        if e.is_Pow:
            b, n = e.args
            if not self.depends(n, x):
                return n * b ** (n - 1) * self(b, x)
            return sp.diff(e, x)
        if isinstance(e, sp.Function) and len(e.args) == 1:
            return e.fdiff(1) * self(e.args[0], x)
        return sp.diff(e, x)


# ---- evaluation in an algebra ---------------------------------------------------------------
class Evaluator:
    """Evaluates sympy expressions in an algebra, given values for the free symbols.

    `alg` is an algebra (scleron.algebra: sin, cos, ..., atan, call(helper, x)); values are either
    floats or whatever the algebra's scalars are. Sub-expressions are memoised, so shared
    pieces (sin q, cos q) are evaluated once.

    Beyond those: asin/acos/atan (written with atan, see _atan), the branch-free pieces of
    joints.special (max(x, 0), |x|, ... written with sqrt), powers with a half-integer exponent
    (sqrt and integer powers) and any other power as exp(e log b).
    """

    def __init__(self, alg, env):
        self.alg = alg
        self.env = dict(env)
        self.memo = {}

    def __call__(self, expr):
        hit = self.memo.get(expr)
        if hit is not None:
            return hit
        val = self._eval(expr)
        self.memo[expr] = val
        return val

    def matrix(self, M):
        return [[self(M[i, j]) for j in range(M.shape[1])] for i in range(M.shape[0])]

    def vector(self, M):
        return [self(e) for e in M]

    def _eval(self, e):
        if e.is_Symbol:
            if e not in self.env:
                raise KeyError(f"no value for symbol {e}")
            return self.env[e]
        if e.is_Number or e.is_NumberSymbol:
            return float(e)
        if e.is_Add:
            args = [self(a) for a in e.args]
            total = args[0]
            for a in args[1:]:
                total = total + a
            return total
        if e.is_Mul:
            coeff, rest = e.as_coeff_Mul()
            factors = [self(a) for a in sp.Mul.make_args(rest)]
            prod = factors[0]
            for f in factors[1:]:
                prod = prod * f
            return float(coeff) * prod if coeff != 1 else prod
        if e.is_Pow:
            base, ex = e.args
            b = self(base)
            if ex.is_Integer:
                n = int(ex)
                if n < 0:
                    return 1.0 / self._ipow(b, -n)
                return self._ipow(b, n)
            if ex == sp.Rational(1, 2):
                return self.alg.sqrt(b)
            if ex == sp.Rational(-1, 2):
                return 1.0 / self.alg.sqrt(b)
            if ex.is_Rational and ex.q == 2:           # b^(p/2) = sqrt(b)^p
                r = self._ipow(self.alg.sqrt(b), abs(int(ex.p)))
                return 1.0 / r if ex.p < 0 else r
            return self.alg.exp(self(ex) * self.alg.log(b))
        fn = type(e).__name__
        if fn in ("sin", "cos", "tan", "exp", "log"):
            return getattr(self.alg, fn)(self(e.args[0]))
        if fn in ("asin", "acos", "atan"):
            x = self(e.args[0])
            if fn == "atan":
                return self._atan(x)
            a = self._atan(x / self.alg.sqrt(1.0 - x * x))     # asin x, |x| < 1
            return a if fn == "asin" else math.pi / 2 - a
        if getattr(type(e), "formula", None) is not None:   # a branch-free piece (joints.special)
            return self.alg.piece(type(e), self(e.args[0]))
        numeric = getattr(type(e), "numeric", None)
        if numeric is not None:        # a series-guarded helper (see joints.special)
            return self.alg.call(type(e).helper, self(e.args[0]))
        if fn in SYMPY_PIECES:         # sympy's own |x| (sqrt(x**2) of a real x) and sign
            return self.alg.piece(SYMPY_PIECES[fn], self(e.args[0]))
        raise ValueError(f"cannot evaluate {fn} in generated code")

    def _atan(self, x):
        return self.alg.atan(x)

    def _ipow(self, b, n):
        out = b
        for _ in range(n - 1):
            out = out * b
        return out


# ---- the same evaluation, recorded once ----------------------------------------------------------
class Tape:
    """The operations an Evaluator performs on a list of expressions, recorded once and replayed
    in any algebra: tape.run(alg, values) equals [Evaluator(alg, env)(e) for e in exprs] for
    env = dict(zip(symbols, values)) operation for operation, in the same order and with the same
    operands (the same floats for the reference, the same nodes for a program), without walking
    and hashing sympy's trees on every call: a joint's R, t, S and Sdot qd are evaluated once
    per body and pass, and a spline or contact joint's trees have thousands of nodes.

    Recording runs the Evaluator on placeholders (_Slot): arithmetic between constants folds in
    Python as it does in a direct evaluation, everything else (and every elementary function
    and helper call, whatever its argument) becomes one entry (code, a, b) of `ops`, whose
    operands index the values: the inputs, then the constants, then the results in order."""

    ADD, SUB, MUL, DIV, NEG, FUNCTION, CALL, PIECE = range(8)

    def __init__(self, exprs, symbols):
        self.n_inputs = len(symbols)
        self.consts, recorded = [], []
        self._recorded = recorded
        env = {x: _Slot(self, ("in", k)) for k, x in enumerate(symbols)}
        evaluate = Evaluator(_Recorder(self), env)          # one memo: shared parts once
        outputs = [self._slot(evaluate(e)) for e in exprs]
        del self._recorded
        first_result = self.n_inputs + len(self.consts)

        def index(slot):
            kind, k = slot.ref
            return {"in": k, "const": self.n_inputs + k, "op": first_result + k}[kind]

        self.ops = []
        for code, a, b in recorded:
            if code not in (Tape.FUNCTION, Tape.CALL, Tape.PIECE):     # b: a slot, or none (NEG)
                b = None if b is None else index(b)
            self.ops.append((code, index(a), b))
        self.outputs = [index(x) for x in outputs]

    def _slot(self, x):
        """x itself, or a constant's slot."""
        if isinstance(x, _Slot):
            return x
        self.consts.append(x)
        return _Slot(self, ("const", len(self.consts) - 1))

    def record(self, code, a, b=None):
        """One entry: an operation on a and b (slots or constants; for FUNCTION, CALL and PIECE,
        b is the function's name, the helper or the piece's class)."""
        if code not in (Tape.FUNCTION, Tape.CALL, Tape.PIECE) and b is not None:
            b = self._slot(b)
        self._recorded.append((code, self._slot(a), b))
        return _Slot(self, ("op", len(self._recorded) - 1))

    def run(self, alg, values):
        """The values of the expressions in alg, given the symbols' values."""
        if len(values) != self.n_inputs:
            raise ValueError(f"the tape takes {self.n_inputs} values, not {len(values)}")
        v = list(values) + self.consts
        for code, a, b in self.ops:
            if code == Tape.ADD:
                v.append(v[a] + v[b])
            elif code == Tape.MUL:
                v.append(v[a] * v[b])
            elif code == Tape.SUB:
                v.append(v[a] - v[b])
            elif code == Tape.DIV:
                v.append(v[a] / v[b])
            elif code == Tape.NEG:
                v.append(-v[a])
            elif code == Tape.FUNCTION:
                v.append(alg.function(b, v[a]))
            elif code == Tape.PIECE:
                v.append(alg.piece(b, v[a]))
            else:
                v.append(alg.call(b, v[a]))
        return [v[i] for i in self.outputs]


class _Slot:
    """A placeholder value while a Tape records: what computed it (ref)."""
    __slots__ = ("tape", "ref")

    def __init__(self, tape, ref):
        self.tape, self.ref = tape, ref

    def __add__(self, o): return self.tape.record(Tape.ADD, self, o)
    def __radd__(self, o): return self.tape.record(Tape.ADD, o, self)
    def __sub__(self, o): return self.tape.record(Tape.SUB, self, o)
    def __rsub__(self, o): return self.tape.record(Tape.SUB, o, self)
    def __mul__(self, o): return self.tape.record(Tape.MUL, self, o)
    def __rmul__(self, o): return self.tape.record(Tape.MUL, o, self)
    def __truediv__(self, o): return self.tape.record(Tape.DIV, self, o)
    def __rtruediv__(self, o): return self.tape.record(Tape.DIV, o, self)
    def __neg__(self): return self.tape.record(Tape.NEG, self)
    def __pos__(self): return self

    def __bool__(self):
        raise TypeError("a recorded value has no truth value (no branches on values)")


class _Recorder(Algebra):
    """The algebra a Tape records in: elementary functions and helper calls become entries."""

    def __init__(self, tape):
        self.tape = tape

    def function(self, name, x):
        return self.tape.record(Tape.FUNCTION, x, name)

    def call(self, helper, x):
        return self.tape.record(Tape.CALL, x, helper)

    def piece(self, cls, x):
        return self.tape.record(Tape.PIECE, x, cls)


# ---- joints written as products of simple transforms -------------------------------------------
class Factor:
    """One factor X of a joint transform Q = X_1 X_2 ... X_m: X = (R, t), or its inverse
    (inverse=True: X = (R, t)^-1, e.g. the child's surface frame F2^-1 of a contact joint).
    R, t are sympy matrices in some (or none) of the joint's coordinates."""

    def __init__(self, R, t, inverse=False):
        self.R, self.t, self.inverse = sp.Matrix(R), sp.Matrix(t), inverse
        self.free = self.R.free_symbols | self.t.free_symbols

    def scaled(self, c):
        """The same factor with its lengths multiplied by c."""
        return Factor(self.R, self.t * c, self.inverse)

    def transform(self):
        """(R, t) of X itself."""
        if not self.inverse:
            return self.R, self.t
        Rt = self.R.T
        return Rt, -(Rt * self.t)

    def twist(self, qk, simplify):
        """(X^-1 dX/dq_k)^v as a list of 6 expressions (angular first)."""
        w = [simplify(e) for e in vee3(self.R.T * self.R.diff(qk))]
        v = [simplify(e) for e in self.R.T * self.t.diff(qk)]
        if not self.inverse:
            return w + v
        # X = B^-1:  X^-1 dX = B d(B^-1) = -(dB) B^-1, whose vee is -Ad_B (B^-1 dB)^v
        Rw = [simplify(e) for e in self.R * sp.Matrix(w)]
        Rv = self.R * sp.Matrix(v) + self.t.cross(sp.Matrix(Rw))
        return [-e for e in Rw] + [-simplify(e) for e in Rv]

    def to_child(self, x):
        """Ad_{X^-1} x: a twist in the frame before X seen in the frame after X."""
        if all(e == 0 for e in x):
            return list(x)
        if not self.inverse:
            return to_child(self.R, self.t, x)
        w, v = sp.Matrix(x[:3]), sp.Matrix(x[3:])
        Rw = self.R * w                              # Ad_B x = (R w, R v + t x R w)
        return list(Rw) + list(self.R * v + self.t.cross(Rw))


def product_transform(factors):
    """(R, t) of Q = X_1 X_2 ... X_m (entries left unexpanded: the program shares the parts)."""
    R, t = sp.eye(3), sp.zeros(3, 1)
    for f in factors:
        Rf, tf = f.transform()
        R, t = R * Rf, R * tf + t
    return R, t


def motion_subspace_factored(factors, q, simplify=simplify_entry, simplify_twist=simplify_entry):
    """S&G (9) through the product rule on SE(3) (Sueda 2.53-2.58, Lee & Terzopoulos):
    for Q = X_1 ... X_m,  S_k = sum_j Ad_{(X_{j+1} ... X_m)^-1} (X_j^-1 dX_j/dq_k)^v.

    The same S as motion_subspace(*product_transform(factors), q), derived from the same
    transform, but each factor's twist is small and simplifies quickly, and the sum keeps the
    structure of the product instead of one large expanded entry per element."""
    cols = []
    for qk in q:
        total = [sp.Integer(0)] * 6
        for j, f in enumerate(factors):
            if qk not in f.free:
                continue
            x = f.twist(qk, simplify_twist)
            for g in factors[j + 1:]:
                x = g.to_child(x)
            total = [a + b for a, b in zip(total, x)]
        cols.append([simplify(e) for e in total])
    return sp.Matrix(6, len(q), lambda r, c: cols[c][r]) if q else sp.zeros(6, 0)


# ---- twists carried through transforms (the product rule and composite joints) ------------------
def to_child(R, t, x):
    """Ad_{X^-1} x for X = (R, t): a twist (angular first) in the frame before X seen in the
    frame after X, (R^T w, R^T (v - t x w))."""
    w, v = sp.Matrix(x[:3]), sp.Matrix(x[3:])
    return list(R.T * w) + list(R.T * (v - t.cross(w)))


def cross_motion(V, x):
    """ad_V x = V x x for motion vectors (Featherstone's crm), V = (w, v), x = (xw, xv):
    (w x xw, w x xv + v x xw)."""
    w, v = sp.Matrix(V[:3]), sp.Matrix(V[3:])
    xw, xv = sp.Matrix(x[:3]), sp.Matrix(x[3:])
    return list(w.cross(xw)) + list(w.cross(xv) + v.cross(xw))


class Part:
    """One part Q_i = (R, t) of a composite joint with its own S_i and Sdot_i (6 x d_i), all in
    the composite's symbols; qd are the part's velocity symbols."""

    def __init__(self, R, t, S, Sdot, qd):
        self.R, self.t, self.S, self.Sdot, self.qd = R, t, S, Sdot, tuple(qd)


def composite_kinematics(parts):
    """(R, t, S, Sdot) of Q = Q_1 Q_2 ... Q_m from the parts' own R, t, S, Sdot, part by part.

    Sueda (2.53)-(2.58) for Q = Q_1 Q_2:  S = (Ad(Q_2^-1) S_1, S_2),
    Sdot = (Ad(Q_2^-1) Sdot_1 - ad(S_2 qd_2) Ad(Q_2^-1) S_1, Sdot_2). Applied with Q_2 the
    product of all the later parts P_i = Q_{i+1} ... Q_m, whose body velocity is
    V_i = sum_{j > i} S_j^c qd_j (S_j^c: part j's columns of the composite's S).

    Walking from the last part to the first keeps one P_i and one V_i at a time, so the work
    (and the size of the shared expression graph) is linear in m; the entries are left
    unexpanded (as trees they grow exponentially in m: see tree_size)."""
    Rp, tp = sp.eye(3), sp.zeros(3, 1)              # P_m = identity
    V = [sp.Integer(0)] * 6                          # V_m = 0
    S_blocks, Sdot_blocks = [], []
    for part in reversed(parts):
        S_c, Sdot_c = _carried_columns(part, Rp, tp, V)
        S_blocks.insert(0, S_c)
        Sdot_blocks.insert(0, Sdot_c)
        V = _later_velocity(V, S_c, part.qd)
        Rp, tp = part.R * Rp, part.R * tp + part.t   # P_{i-1} = Q_i P_i
    S = _columns_to_matrix([c for block in S_blocks for c in block])
    Sdot = _columns_to_matrix([c for block in Sdot_blocks for c in block])
    return Rp, tp, S, Sdot


def _carried_columns(part, Rp, tp, V):
    """Part i's columns of S and Sdot in the composite's child frame (Sueda 2.53-2.58):
    S^c = Ad(P_i^-1) S_i and Sdot^c = Ad(P_i^-1) Sdot_i - ad(V_i) S^c."""
    S_c, Sdot_c = [], []
    for k in range(part.S.shape[1]):
        s = to_child(Rp, tp, list(part.S[:, k]))
        sd = to_child(Rp, tp, list(part.Sdot[:, k]))
        ad = cross_motion(V, s)
        S_c.append(s)
        Sdot_c.append([a - b for a, b in zip(sd, ad)])
    return S_c, Sdot_c


def _later_velocity(V, S_c, qd):
    """V_{i-1} = V_i + S_i^c qd_i: the body velocity of P_{i-1} = Q_i P_i (Sueda 2.53)."""
    out = list(V)
    for col, qdk in zip(S_c, qd):
        out = [a + e * qdk for a, e in zip(out, col)]
    return out


def _columns_to_matrix(cols):
    return sp.Matrix(6, len(cols), lambda r, c: cols[c][r]) if cols else sp.zeros(6, 0)


def tree_size(expr, _memo=None):
    """Number of nodes of expr written out as a tree, counted over its shared subexpressions
    once each (sympy's count_ops and printers walk the tree: exponential for the unexpanded
    products of a long composite joint, whose graph is linear in the number of parts)."""
    memo = {} if _memo is None else _memo
    hit = memo.get(expr)
    if hit is not None:
        return hit
    n = 1 + sum(tree_size(a, memo) for a in expr.args)
    memo[expr] = n
    return n
