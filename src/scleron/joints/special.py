"""Series-guarded functions for the exponential-coordinate ball joint (Sueda 2.47-2.52).

With x = theta^2 = q.q (so everything is smooth at q = 0):
  A(x) = sin(theta)/theta,  B(x) = (1 - cos theta)/theta^2,  C(x) = (theta - sin theta)/theta^3,
  A' = (C - B)/2,  B' = (A - 2B)/(2x) = DB(x),  C' = (B - 3C)/(2x) = DC(x).
Each evaluates its Taylor series below SERIES_BELOW, where the closed form loses digits
(relative error ~ eps/x), and the closed form above. They are sympy Functions whose fdiff
returns the next function, so sympy can differentiate R and S of the joint. Each also carries
a program Helper (numeric value, C body, derivative) under the same name: the unrolled program
calls it and the backend prints its body (helper_c_body: the series in Horner form below the
threshold, the closed form above).
"""
import math

import numpy as np
import sympy as sp

from ..algebra import Helper

SERIES_BELOW = 0.1
SERIES_TERMS = 9


def _fact(n):
    return math.factorial(n)


# Taylor coefficients in x, by function name
SERIES = {
    "scl_exp_a": [(-1) ** k / _fact(2 * k + 1) for k in range(SERIES_TERMS)],
    "scl_exp_b": [(-1) ** k / _fact(2 * k + 2) for k in range(SERIES_TERMS)],
    "scl_exp_c": [(-1) ** k / _fact(2 * k + 3) for k in range(SERIES_TERMS)],
    "scl_exp_db": [(k + 1) * (-1) ** (k + 1) / _fact(2 * k + 4) for k in range(SERIES_TERMS)],
    "scl_exp_dc": [(k + 1) * (-1) ** (k + 1) / _fact(2 * k + 5) for k in range(SERIES_TERMS)],
    # their derivatives (for forward-mode differentiation of S and Sdot): DB' and DC'
    "scl_exp_ddb": [(k + 1) * (k + 2) * (-1) ** k / _fact(2 * k + 6) for k in range(SERIES_TERMS)],
    "scl_exp_ddc": [(k + 1) * (k + 2) * (-1) ** k / _fact(2 * k + 7) for k in range(SERIES_TERMS)],
}

# closed forms in C, in terms of x and th = sqrt(x)
CLOSED_FORM = {
    "scl_exp_a": "sin(th) / th",
    "scl_exp_b": "(1.0 - cos(th)) / x",
    "scl_exp_c": "(th - sin(th)) / (x * th)",
    "scl_exp_db": "(sin(th) / th - 2.0 * (1.0 - cos(th)) / x) / (2.0 * x)",
    "scl_exp_dc": "((1.0 - cos(th)) / x - 3.0 * (th - sin(th)) / (x * th)) / (2.0 * x)",
}
# DB' = (C - B - 8 DB) / (4x) and DC' = (DB - 5 DC) / (2x), from DB = (A - 2B)/(2x),
# DC = (B - 3C)/(2x)
CLOSED_FORM["scl_exp_ddb"] = (f"(({CLOSED_FORM['scl_exp_c']}) - ({CLOSED_FORM['scl_exp_b']}) "
                              f"- 8.0 * ({CLOSED_FORM['scl_exp_db']})) / (4.0 * x)")
CLOSED_FORM["scl_exp_ddc"] = (f"(({CLOSED_FORM['scl_exp_db']}) - 5.0 * "
                              f"({CLOSED_FORM['scl_exp_dc']})) / (2.0 * x)")


def _numeric(name):
    coeffs = SERIES[name]

    def f(x):
        if x < SERIES_BELOW:
            return sum(c * x ** k for k, c in enumerate(coeffs))
        th = math.sqrt(x)
        s, c = math.sin(th), math.cos(th)
        a, b, cc = s / th, (1 - c) / x, (th - s) / (x * th)
        db, dc = (a - 2 * b) / (2 * x), (b - 3 * cc) / (2 * x)
        return {"scl_exp_a": a, "scl_exp_b": b, "scl_exp_c": cc, "scl_exp_db": db, "scl_exp_dc": dc,
                "scl_exp_ddb": (cc - b - 8 * db) / (4 * x),
                "scl_exp_ddc": (db - 5 * dc) / (2 * x)}[name]
    return f


class _Guarded(sp.Function):
    c_name = None
    derivative = None       # name of the class of the derivative

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.Float(cls.numeric(float(x)))
        return None

    def fdiff(self, argindex=1):
        if self.derivative is None:
            raise NotImplementedError(f"{self.c_name} has no derivative here")
        return self.derivative(self.args[0])

    def _eval_evalf(self, prec):
        if self.args[0].is_Number:
            return sp.Float(self.numeric(float(self.args[0])), prec)
        return None


def helper_c_body(name):
    """The C body of a guarded helper in x: Taylor series (Horner form) below SERIES_BELOW,
    the closed form in x and th = sqrt(x) above."""
    series = "0.0"
    for c in reversed(SERIES[name]):
        series = f"({c!r} + x * {series})" if series != "0.0" else f"{c!r}"
    return (f"if (x < {SERIES_BELOW!r}) {{", f"    return {series};", "}",
            "const double th = sqrt(x);", f"return {CLOSED_FORM[name]};")


def _make(cname, numeric):
    helper = Helper(cname, numeric, helper_c_body(cname),
                    f"{cname}: {CLOSED_FORM[cname]} with th = sqrt(x) (exp-coordinate ball "
                    f"joint), its Taylor series below x = {SERIES_BELOW}")
    return type(cname.upper(), (_Guarded,), {"c_name": cname, "numeric": staticmethod(numeric),
                                             "helper": helper})


def _with_derivative(cls, rule):
    """Attach d/dx to the sympy class (fdiff) and to its Helper (alg, x) -> value."""
    cls.derivative = staticmethod(lambda x: rule(x, lambda h, y: h(y)))
    cls.helper = Helper(cls.helper.name, cls.helper.numeric, cls.helper.c_body, cls.helper.doc,
                        lambda alg, y: rule(y, lambda h, z: alg.call(h.helper, z)))


ExpDDB = _make("scl_exp_ddb", _numeric("scl_exp_ddb"))
ExpDDC = _make("scl_exp_ddc", _numeric("scl_exp_ddc"))
ExpDB = _make("scl_exp_db", _numeric("scl_exp_db"))
ExpDC = _make("scl_exp_dc", _numeric("scl_exp_dc"))
ExpB = _make("scl_exp_b", _numeric("scl_exp_b"))
ExpC = _make("scl_exp_c", _numeric("scl_exp_c"))
ExpA = _make("scl_exp_a", _numeric("scl_exp_a"))
_with_derivative(ExpDB, lambda x, f: f(ExpDDB, x))
_with_derivative(ExpDC, lambda x, f: f(ExpDDC, x))
_with_derivative(ExpB, lambda x, f: f(ExpDB, x))
_with_derivative(ExpC, lambda x, f: f(ExpDC, x))
_with_derivative(ExpA, lambda x, f: (f(ExpC, x) - f(ExpB, x)) / 2)


# tanh of a custom joint and its derivative sech^2 (= 1 - tanh^2, taken as 1 / cosh^2, which
# is 0, not inf / inf, where cosh overflows): written with exp, d/dx of 1 - 2 / (e^2x + 1) was
# 4 e^2x / (e^2x + 1)^2, NaN above x = 355 (an outside tester)
def _sech2(x):
    return 0.0 if abs(x) > 700.0 else 1.0 / math.cosh(x) ** 2


def _make_plain(shown, cname, numeric, c_body, doc):
    """A helper printed as `shown` by sympy (tanh, not SCL_TANH)."""
    helper = Helper(cname, numeric, c_body, doc)
    return type(shown, (_Guarded,), {"c_name": cname, "numeric": staticmethod(numeric),
                                     "helper": helper})


Tanh = _make_plain("tanh", "scl_tanh", math.tanh, ("return tanh(x);",), "scl_tanh: tanh(x)")
Sech2 = _make_plain("dtanh", "scl_sech2", _sech2,
                    ("const double c = cosh(x);", "return 1.0 / (c * c);"),
                    "scl_sech2: 1 / cosh(x)^2, the derivative of tanh (0 where cosh overflows)")
_with_derivative(Tanh, lambda x, f: f(Sech2, x))
_with_derivative(Sech2, lambda x, f: -2 * f(Tanh, x) * f(Sech2, x))


GUARDED = {cls.c_name: cls for cls in (ExpA, ExpB, ExpC, ExpDB, ExpDC, ExpDDB, ExpDDC, Tanh,
                                       Sech2)}


# ---- piecewise pieces without branches (spline joints, custom joints) ------------------------
# The generated code has no branches on state, so the few non-smooth primitives the spline and
# custom joints need are sympy Functions that the Evaluator (joints.symbolic) writes with
# arithmetic and sqrt only:  max(x, 0) = (x + sqrt(x*x)) / 2  and  |x| = sqrt(x*x).  Their
# derivatives are again such functions, so sympy differentiates through them; forward-mode
# dual numbers (the derivative functions' joint tangents) take the same rule (`derivative`),
# not the formula's: sqrt(x*x) differentiated at its kink x = 0 would give 0 * inf.

class Piece(sp.Function):
    """A one-argument function with a numpy value (numeric), its formula in any algebra with +,
    *, / and sqrt (formula(alg, x); alg.piece(cls, x) evaluates it), and its derivative in that
    algebra (derivative(alg, x), the same rule as sympy's fdiff)."""
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return cls._exact(x)
        return None

    @classmethod
    def _exact(cls, x):
        return None

    def _eval_evalf(self, prec):
        if self.args[0].is_Number:
            return sp.Float(self.numeric(float(self.args[0])), prec)
        return None


class PosPart(Piece):
    """x_+ = max(x, 0); d/dx = Step(x)."""
    @classmethod
    def _exact(cls, x):
        return x if x >= 0 else sp.Integer(0)

    @staticmethod
    def numeric(x):
        return np.maximum(x, 0.0)

    @staticmethod
    def formula(alg, x):
        return 0.5 * (x + alg.sqrt(x * x))

    @staticmethod
    def derivative(alg, x):
        return alg.piece(Step, x)

    def fdiff(self, argindex=1):
        return Step(self.args[0])


class PosPart2(Piece):
    """(x_+)^2; d/dx = 2 x_+."""
    @classmethod
    def _exact(cls, x):
        return x ** 2 if x >= 0 else sp.Integer(0)

    @staticmethod
    def numeric(x):
        return np.maximum(x, 0.0) ** 2

    @staticmethod
    def formula(alg, x):
        p = alg.piece(PosPart, x)
        return p * p

    @staticmethod
    def derivative(alg, x):
        return 2.0 * alg.piece(PosPart, x)

    def fdiff(self, argindex=1):
        return 2 * PosPart(self.args[0])


class PosPart3(Piece):
    """(x_+)^3, the truncated power of cubic B-splines; d/dx = 3 (x_+)^2."""
    @classmethod
    def _exact(cls, x):
        return x ** 3 if x >= 0 else sp.Integer(0)

    @staticmethod
    def numeric(x):
        return np.maximum(x, 0.0) ** 3

    @staticmethod
    def formula(alg, x):
        p = alg.piece(PosPart, x)
        return p * p * p

    @staticmethod
    def derivative(alg, x):
        return 3.0 * alg.piece(PosPart2, x)

    def fdiff(self, argindex=1):
        return 3 * PosPart2(self.args[0])


# sign(x) as x / sqrt(x^2 + tiny): exactly 0 at x = 0, +-1 once |x| > 1e-150 (no branch, no NaN)
_SIGN_TINY = 1e-300


class Step(Piece):
    """Heaviside step (1 + sign x) / 2; its derivative is taken as 0 (away from x = 0)."""
    @classmethod
    def _exact(cls, x):
        return sp.Integer(1) if x > 0 else (sp.Rational(1, 2) if x == 0 else sp.Integer(0))

    @staticmethod
    def numeric(x):
        return 0.5 * (1.0 + np.sign(x))

    @staticmethod
    def formula(alg, x):
        return 0.5 + 0.5 * (x / alg.sqrt(x * x + _SIGN_TINY))

    @staticmethod
    def derivative(alg, x):
        return 0.0

    def fdiff(self, argindex=1):
        return sp.Integer(0)


class SclAbs(Piece):
    """|x| = sqrt(x^2); d/dx = SclSign(x)."""
    @classmethod
    def _exact(cls, x):
        return abs(x)

    @staticmethod
    def numeric(x):
        return np.abs(x)

    @staticmethod
    def formula(alg, x):
        return alg.sqrt(x * x)

    @staticmethod
    def derivative(alg, x):
        return alg.piece(SclSign, x)

    def fdiff(self, argindex=1):
        return SclSign(self.args[0])


class SclSign(Piece):
    """sign(x) (0 at 0); its derivative is taken as 0 (away from x = 0)."""
    @classmethod
    def _exact(cls, x):
        return sp.sign(x)

    @staticmethod
    def numeric(x):
        return np.sign(x)

    @staticmethod
    def formula(alg, x):
        return x / alg.sqrt(x * x + _SIGN_TINY)

    @staticmethod
    def derivative(alg, x):
        return 0.0

    def fdiff(self, argindex=1):
        return sp.Integer(0)


# One-sided pieces, for a function made of polynomial segments (OpenSim's SimmSpline) whose
# derivatives at a knot must come from one segment: with Step(0) = 1/2, a clamped segment
# variable u = x_+ - (x - h)_+ has u' = 1/2 at the knot, and the chain rule's u'^2 would halve
# the second derivative there. StepRight(0) = 1, StepLeft(0) = 0: the argument shifted by a
# power of two whose square is a normal number far above _SIGN_TINY, so that the sign at 0 is
# exactly +-1; only in |x| < 2^-430 (3.6e-130) do the formulas differ from `numeric`.
_SIDE = 2.0 ** -430


class _SidedStep(Piece):
    """A Heaviside step with the value `at_zero` (1 or 0) at 0; its derivative is taken as 0."""
    at_zero = 1

    @classmethod
    def _exact(cls, x):
        return sp.Integer(1) if x > 0 or (x == 0 and cls.at_zero) else sp.Integer(0)

    @classmethod
    def numeric(cls, x):
        x = np.asarray(x)
        return np.where((x >= 0) if cls.at_zero else (x > 0), 1.0, 0.0)

    @classmethod
    def formula(cls, alg, x):
        s = x + _SIDE if cls.at_zero else x - _SIDE
        return 0.5 + 0.5 * (s / alg.sqrt(s * s + _SIGN_TINY))

    @staticmethod
    def derivative(alg, x):
        return 0.0

    def fdiff(self, argindex=1):
        return sp.Integer(0)


class StepRight(_SidedStep):
    """Heaviside step with the value 1 at 0 (the right limit)."""
    at_zero = 1


class StepLeft(_SidedStep):
    """Heaviside step with the value 0 at 0 (the left limit)."""
    at_zero = 0


class PosPartRight(PosPart):
    """max(x, 0) whose derivative at 0 is the right one, 1 (StepRight)."""
    @staticmethod
    def derivative(alg, x):
        return alg.piece(StepRight, x)

    def fdiff(self, argindex=1):
        return StepRight(self.args[0])


class PosPartLeft(PosPart):
    """max(x, 0) whose derivative at 0 is the left one, 0 (StepLeft)."""
    @staticmethod
    def derivative(alg, x):
        return alg.piece(StepLeft, x)

    def fdiff(self, argindex=1):
        return StepLeft(self.args[0])


PIECES = {cls.__name__: cls for cls in (PosPart, PosPart2, PosPart3, Step, SclAbs, SclSign,
                                        StepRight, StepLeft, PosPartRight, PosPartLeft)}


def numeric_namespace():
    """Name -> numpy implementation of every special function (for sympy.lambdify)."""
    out = {c.__name__: c.numeric for c in GUARDED.values()}
    out.update({name: cls.numeric for name, cls in PIECES.items()})
    return out
