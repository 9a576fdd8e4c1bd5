"""Series-guarded functions for the exponential-coordinate ball joint (Sueda 2.47-2.52).

With x = theta^2 = q.q (so everything is smooth at q = 0):
  A(x) = sin(theta)/theta,  B(x) = (1 - cos theta)/theta^2,  C(x) = (theta - sin theta)/theta^3,
  A' = (C - B)/2,  B' = (A - 2B)/(2x) = DB(x),  C' = (B - 3C)/(2x) = DC(x).
Each evaluates its Taylor series below SERIES_BELOW, where the closed form loses digits
(relative error ~ eps/x), and the closed form above. They are sympy Functions whose fdiff
returns the next function, so sympy can differentiate R and S of the joint; the generated C
calls a small helper of the same name (codegen renders them from SERIES and CLOSED_FORM).
"""
import math

import sympy as sp

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
}

# closed forms in C, in terms of x and th = sqrt(x)
CLOSED_FORM = {
    "scl_exp_a": "sin(th) / th",
    "scl_exp_b": "(1.0 - cos(th)) / x",
    "scl_exp_c": "(th - sin(th)) / (x * th)",
    "scl_exp_db": "(sin(th) / th - 2.0 * (1.0 - cos(th)) / x) / (2.0 * x)",
    "scl_exp_dc": "((1.0 - cos(th)) / x - 3.0 * (th - sin(th)) / (x * th)) / (2.0 * x)",
}


def _numeric(name):
    coeffs = SERIES[name]

    def f(x):
        if x < SERIES_BELOW:
            return sum(c * x ** k for k, c in enumerate(coeffs))
        th = math.sqrt(x)
        s, c = math.sin(th), math.cos(th)
        a, b, cc = s / th, (1 - c) / x, (th - s) / (x * th)
        return {"scl_exp_a": a, "scl_exp_b": b, "scl_exp_c": cc,
                "scl_exp_db": (a - 2 * b) / (2 * x), "scl_exp_dc": (b - 3 * cc) / (2 * x)}[name]
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


def _make(cname, numeric):
    return type(cname.upper(), (_Guarded,), {"c_name": cname, "numeric": staticmethod(numeric)})


ExpDB = _make("scl_exp_db", _numeric("scl_exp_db"))
ExpDC = _make("scl_exp_dc", _numeric("scl_exp_dc"))
ExpB = _make("scl_exp_b", _numeric("scl_exp_b"))
ExpC = _make("scl_exp_c", _numeric("scl_exp_c"))
ExpA = _make("scl_exp_a", _numeric("scl_exp_a"))
ExpB.derivative = staticmethod(lambda x: ExpDB(x))
ExpC.derivative = staticmethod(lambda x: ExpDC(x))
ExpA.derivative = staticmethod(lambda x: (ExpC(x) - ExpB(x)) / 2)

GUARDED = {cls.c_name: cls for cls in (ExpA, ExpB, ExpC, ExpDB, ExpDC)}
