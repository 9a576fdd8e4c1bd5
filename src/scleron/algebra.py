"""The algebra protocol: what the recursions and the joint evaluator may ask of their scalars.
The bottom layer: it imports nothing of scleron, and every layer may use it (the program
builder's own algebra, ProgramAlgebra, is in scleron.program).

The recursions (scleron.dynamics.recursions) and the joint evaluator (scleron.joints.symbolic)
are written once and run in several algebras: floats (the numeric reference), program nodes
(the unrolled code), counters (show's "before simplification" counts) and dual numbers
(forward-mode derivatives). Scalars support + - * / and unary minus; everything else goes
through the algebra object, whose interface is this class:

- `function(name, x)` for the elementary functions in MATH_FUNCTIONS; the named methods
  sin, cos, ... are defined here once in its terms, so every algebra has all of them;
- `call(helper, x)` for a Helper (a named one-argument function with its own numeric value
  and C body, e.g. the series-guarded sinc of the exponential-coordinate ball joint);
- `section(text, pass_=None, body=None)` to label what is being computed (a no-op except
  where the labels are kept: program comments, show's groups).

A new elementary function is one entry of MATH_FUNCTIONS plus its meaning in each algebra's
`function`; an algebra that cannot provide it raises a clear error rather than drifting.
"""
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Optional

MATH_FUNCTIONS = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp,
                  "log": math.log, "sqrt": math.sqrt, "atan": math.atan}


@dataclass(frozen=True)
class Helper:
    """A named one-argument function that generated code calls (a static inline function in C).

    numeric: its value on a float (folds constants, evaluates programs);
    c_body:  the C statements of its body, in terms of `double x`, ending in a return;
    doc:     one line for the comment above it;
    derivative: (alg, x) -> its derivative at x written in an algebra (or None), for
                forward-mode differentiation.
    """
    name: str
    numeric: Callable[[float], float]
    c_body: tuple
    doc: str = ""
    derivative: Optional[Callable] = None

    def __call__(self, x):
        return self.numeric(float(x))


@dataclass(frozen=True)
class Section:
    """What a stretch of a program computes: its comment text, the recursion pass (with its
    equation numbers) and the body it is about (an index, or None)."""
    text: str
    pass_: str = ""
    body: Optional[int] = None

    def __str__(self):
        return self.text


class Algebra:
    """Base of every algebra; subclasses implement function, call and (optionally) section."""

    def function(self, name, x):
        raise NotImplementedError(f"{type(self).__name__} has no elementary functions")

    def call(self, helper, x):
        raise NotImplementedError(f"{type(self).__name__} cannot call helper {helper.name}")

    def piece(self, cls, x):
        """A branch-free piece (max(x, 0), |x|, ...: joints.special) at x, by its formula in
        +, *, / and sqrt; DualAlgebra differentiates it by its own derivative rule instead."""
        return cls.formula(self, x)

    def section(self, text, pass_=None, body=None):
        pass

    def current_section(self):
        return None

    def restore_section(self, section):
        pass

    @contextmanager
    def aside(self, text, pass_=None, body=None):
        """A section for work done on demand (the lazy joint kinematics), the section of the
        work around it restored afterwards."""
        before = self.current_section()
        self.section(text, pass_, body)
        try:
            yield
        finally:
            self.restore_section(before)

    # the elementary functions, each defined once in terms of `function`
    def sin(self, x): return self.function("sin", x)
    def cos(self, x): return self.function("cos", x)
    def tan(self, x): return self.function("tan", x)
    def exp(self, x): return self.function("exp", x)
    def log(self, x): return self.function("log", x)
    def sqrt(self, x): return self.function("sqrt", x)
    def atan(self, x): return self.function("atan", x)


class FloatAlgebra(Algebra):
    """Python floats: the numeric reference."""

    def function(self, name, x):
        return MATH_FUNCTIONS[name](x)

    def call(self, helper, x):
        return helper.numeric(x)


# ---- dual numbers: forward-mode derivatives ----------------------------------------------------
class Dual:
    """a + b eps with eps^2 = 0, b a tuple of tangents (one per seed direction). Scalars of
    any algebra may be the parts, so duals over program nodes give unrolled derivatives."""
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, tuple(b)

    @staticmethod
    def _parts(o, n):
        return (o.a, o.b) if isinstance(o, Dual) else (o, (0.0,) * n)

    def __add__(self, o):
        a, b = self._parts(o, len(self.b))
        return Dual(self.a + a, [x + y for x, y in zip(self.b, b)])
    __radd__ = __add__

    def __sub__(self, o):
        a, b = self._parts(o, len(self.b))
        return Dual(self.a - a, [x - y for x, y in zip(self.b, b)])

    def __rsub__(self, o):
        a, b = self._parts(o, len(self.b))
        return Dual(a - self.a, [y - x for x, y in zip(self.b, b)])

    def __mul__(self, o):
        a, b = self._parts(o, len(self.b))
        return Dual(self.a * a, [self.a * y + x * a for x, y in zip(self.b, b)])
    __rmul__ = __mul__

    def __truediv__(self, o):
        a, b = self._parts(o, len(self.b))
        inv = 1.0 / a
        v = self.a * inv
        return Dual(v, [(x - v * y) * inv for x, y in zip(self.b, b)])

    def __rtruediv__(self, o):
        a, b = self._parts(o, len(self.b))
        return Dual(a, b) / self

    def __neg__(self):
        return Dual(-self.a, [-x for x in self.b])

    def __pos__(self):
        return self

    def __pow__(self, n):
        if not (isinstance(n, int) or (isinstance(n, float) and n.is_integer())):
            raise TypeError("dual numbers take integer powers here (use sqrt, exp, log)")
        n = int(n)
        out = 1.0
        for _ in range(abs(n)):
            out = self * out
        return 1.0 / out if n < 0 else out


class DualAlgebra(Algebra):
    """Forward-mode differentiation over a base algebra (floats, or program nodes): every
    function applies its derivative rule to the tangents."""

    def __init__(self, base=None):
        self.base = base or FloatAlgebra()

    def function(self, name, x):
        if not isinstance(x, Dual):
            return self.base.function(name, x)
        f = self.base.function
        v = f(name, x.a)
        if name == "sin":
            d = f("cos", x.a)
        elif name == "cos":
            d = -f("sin", x.a)
        elif name == "tan":
            d = 1.0 + v * v
        elif name == "exp":
            d = v
        elif name == "log":
            d = 1.0 / x.a
        elif name == "sqrt":
            d = 0.5 / v
        elif name == "atan":
            d = 1.0 / (1.0 + x.a * x.a)
        else:
            raise NotImplementedError(f"no derivative rule for {name}")
        return Dual(v, [d * t for t in x.b])

    def piece(self, cls, x):
        """A branch-free piece by its derivative rule (cls.derivative, the sympy fdiff's), not
        through its formula: sqrt(x * x) differentiated at x = 0 is 0 * inf, NaN, where the kink's
        rule gives Step(0) = 1/2 for max(x, 0) and 0 for the derivative of sign(x)."""
        if not isinstance(x, Dual):
            return self.base.piece(cls, x)
        d = cls.derivative(self.base, x.a)
        return Dual(self.base.piece(cls, x.a), [d * t for t in x.b])

    def call(self, helper, x):
        if not isinstance(x, Dual):
            return self.base.call(helper, x)
        if helper.derivative is None:
            raise NotImplementedError(f"helper {helper.name} has no derivative")
        d = helper.derivative(self.base, x.a)
        return Dual(self.base.call(helper, x.a), [d * t for t in x.b])

    def section(self, text, pass_=None, body=None):
        self.base.section(text, pass_, body)

    def current_section(self):
        return self.base.current_section()

    def restore_section(self, section):
        self.base.restore_section(section)


def seeded(values, directions=None):
    """Dual numbers for a vector of values: tangent e_k for entry k (all entries differentiated),
    or the given direction vectors."""
    n = len(values)
    if directions is None:
        return [Dual(v, [1.0 if j == k else 0.0 for j in range(n)]) for k, v in enumerate(values)]
    return [Dual(v, [d[k] for d in directions]) for k, v in enumerate(values)]
