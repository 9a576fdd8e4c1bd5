"""The expressions of a custom joint, read by a small whitelist parser into sympy.

Model files are untrusted text, so nothing here uses eval, exec, sympify, parse_expr or
lambdify on them. A hand-written tokenizer accepts only

    numbers            12   0.5   .5   1e-3   2.5E+2
    names              the joint's coordinate names, its named constants, pi
    operators          +  -  *  /  **  ( )
    functions          sin cos tan exp log sqrt asin acos atan sinh cosh tanh abs  (one argument)

and a recursive-descent parser builds the sympy expression from those tokens only, with the
usual precedence (** binds tighter than unary minus and is right associative, as in Python).
Anything else - another character, an unknown name, a name used as a function or a function
used as a name, a missing or extra parenthesis, an over-long or over-deep expression, an
exponent too large to expand - raises ExpressionError naming the offending token.
"""
import math
import re
from fractions import Fraction

import sympy as sp

from .special import SclAbs, SclSign, Tanh

MAX_LENGTH = 400        # characters in one expression
MAX_TOKENS = 200        # tokens in one expression
MAX_DEPTH = 24          # nesting of parentheses, calls, unary signs and powers
MAX_EXPONENT = 16       # |numeric exponent| of **
MAX_NAME = 32           # characters in a coordinate or constant name


def _sinh(x):
    return (sp.exp(x) - sp.exp(-x)) / 2


def _cosh(x):
    return (sp.exp(x) + sp.exp(-x)) / 2


# sinh and cosh are written with exp; tanh is C's, with its derivative 1 / cosh^2 (special.Tanh:
# written with exp, its derivative overflowed to inf / inf above x = 355)
FUNCTIONS = {"sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "exp": sp.exp, "log": sp.log,
             "sqrt": sp.sqrt, "asin": sp.asin, "acos": sp.acos, "atan": sp.atan,
             "sinh": _sinh, "cosh": _cosh, "tanh": Tanh, "abs": SclAbs}
BUILTIN_CONSTANTS = {"pi": sp.pi}
RESERVED = set(FUNCTIONS) | set(BUILTIN_CONSTANTS)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_OPERATORS = ("**", "+", "-", "*", "/", "(", ")")


class ExpressionError(ValueError):
    """A custom-joint expression is not in the accepted language. `token` is the offender."""

    def __init__(self, message, token=None):
        super().__init__(message)
        self.token = token if token is None or (isinstance(token, str) and len(token) <= 40) \
            else short(token)


def check_name(name, what):
    """A coordinate or constant name: an identifier that is not reserved (ExpressionError)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ExpressionError(f"{what} {_show(name)} is not a name (letters, digits, '_', "
                              "not starting with a digit)", token=name)
    if len(name) > MAX_NAME:
        raise ExpressionError(f"{what} {_show(name)} is longer than {MAX_NAME} characters",
                              token=name)
    if name.startswith("_"):
        raise ExpressionError(f"{what} {_show(name)} must not start with '_'", token=name)
    if name in RESERVED:
        raise ExpressionError(f"{what} {_show(name)} is reserved (a function or built-in constant)",
                              token=name)
    return name


def short(x, limit=40):
    """x for an error message, never expanded in full: a string or number cut at `limit`
    characters, a list or mapping by its length (a YAML alias bomb is 10^9 items)."""
    if isinstance(x, (list, tuple)):
        return f"a list of {len(x)} items"
    if isinstance(x, dict):
        return f"a mapping with {len(x)} keys"
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 1000:
        # (repr refuses 4300+)
        return f"an integer of about {int(x.bit_length() * 0.30103)} digits"
    if isinstance(x, (str, int, float, bool)) or x is None:
        text = x if isinstance(x, str) else repr(x)
        return text[:limit] + ("..." if len(text) > limit else "")
    return f"a value of type {type(x).__name__}"


def _show(x, limit=40):
    return repr(short(x, limit)) if isinstance(x, str) else short(x, limit)


def tokenize(text):
    """The tokens of an expression, (kind, text, position) with kind number/name/op, and the
    error at the first character that is not part of any token (None if there is none): the
    parser reports whichever problem comes first in reading order."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"the expression is longer than {MAX_LENGTH} characters",
                              token=text[:20] + "...")
    out, i, n = [], 0, len(text)
    while i < n:
        if len(out) > MAX_TOKENS:
            raise ExpressionError(f"the expression has more than {MAX_TOKENS} tokens",
                                  token=out[-1][1])
        c = text[i]
        if c in " \t":
            i += 1
            continue
        m = _NUMBER.match(text, i)
        if m and (c.isdigit() or c == "."):
            end = m.end()
            if end < n and (text[end].isalpha() or text[end] == "_" or text[end] == "."):
                bad = text[i:end + 1]
                return out, ExpressionError(f"malformed number {bad!r} at position {i}", token=bad)
            out.append(("number", text[i:end], i))
            i = end
            continue
        m = _NAME.match(text, i)
        if m:
            out.append(("name", m.group(), i))
            i = m.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                out.append(("op", op, i))
                i += len(op)
                break
        else:
            hint = " (use ** for powers)" if c == "^" else ""
            return out, ExpressionError(f"unexpected character {c!r} at position {i}{hint}",
                                        token=c)
    if len(out) > MAX_TOKENS:
        raise ExpressionError(f"the expression has more than {MAX_TOKENS} tokens", token=out[-1][1])
    return out, None


def _number(text):
    value = float(text)
    if not math.isfinite(value):
        raise ExpressionError(f"number {text!r} is not finite", token=text)
    mant, _, exp = text.lower().partition("e")
    if value == 0.0 and float(mant) != 0.0:     # 1e-400: 0 as a double (1/1e-400 divided by 0)
        raise ExpressionError(f"number {text[:40]!r} is too small for a double (it would be 0)",
                              token=text[:40])
    if len(text) <= 40 and (not exp or abs(int(exp)) <= 30):
        f = Fraction(mant) * Fraction(10) ** (int(exp) if exp else 0)
        return sp.Rational(f.numerator, f.denominator)
    return sp.Float(value)


# the functions a constant may hold, as doubles (_value)
FLOAT_FUNCTIONS = {sp.sin: math.sin, sp.cos: math.cos, sp.tan: math.tan, sp.exp: math.exp,
                   sp.log: math.log, sp.asin: math.asin, sp.acos: math.acos, sp.atan: math.atan,
                   Tanh: math.tanh, SclAbs: abs, sp.Abs: abs,
                   sp.cot: lambda x: 1.0 / math.tan(x)}     # (sympy's tan(pi/2 + c) = -cot(c))


def _value(e):
    """A constant sympy expression's value as a double, computed in doubles: ValueError or
    OverflowError where it is complex, not finite or beyond a double. sympy's own evaluation
    (evalf, float) of exp(1e30) or sinh(cosh(100)) works at the precision they need, about
    1e30 bits, and never ended (an outside tester)."""
    if e.is_Number or isinstance(e, sp.NumberSymbol):
        x = float(e)
    elif e.is_Add:
        x = math.fsum(_value(a) for a in e.args)
    elif e.is_Mul:
        x = math.prod(_value(a) for a in e.args)
    elif e.is_Pow:
        x = math.pow(_value(e.base), _value(e.exp))
    elif e.func in FLOAT_FUNCTIONS and len(e.args) == 1:
        x = FLOAT_FUNCTIONS[e.func](_value(e.args[0]))
    else:                                   # (I, an unevaluated function: not a real number)
        raise ValueError(f"{type(e).__name__} is not a real number")
    if not math.isfinite(x):
        raise OverflowError("not finite")
    return x


class _Parser:
    def __init__(self, text, names):
        self.text = text
        self.tokens, self.pending = tokenize(text)
        self.names = names
        self.pos = 0
        self.depth = 0

    def peek(self):
        if self.pos < len(self.tokens):
            return self.tokens[self.pos]
        if self.pending is not None:          # the parser got as far as a bad character
            raise self.pending
        return None

    def take(self):
        tok = self.peek()
        self.pos += 1
        return tok

    def expect(self, op):
        tok = self.take()
        if tok is None or tok[1] != op:
            found = "the end of the expression" if tok is None else repr(tok[1])
            raise ExpressionError(f"expected {op!r}, found {found}",
                                  token=None if tok is None else tok[1])

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            tok = self.peek()
            raise ExpressionError(f"the expression nests deeper than {MAX_DEPTH} levels",
                                  token=None if tok is None else tok[1])

    def value(self, e, where):
        """The value of a constant (_value), or the ExpressionError of checked."""
        self.checked(e, where)
        return _value(e)

    def checked(self, e, where):
        """e, where it holds a coordinate; a constant only where it is a finite real double. Run
        on every function's and power's value, whose evaluation could need unbounded precision
        (cos(exp(1e30))); sums and products of such values only overflow, which the model's
        later checks name (1e308*10/100 stays: it is 1e307)."""
        if e.free_symbols:
            return e
        try:
            _value(e)
        except (ValueError, OverflowError, TypeError, ZeroDivisionError):
            raise ExpressionError(f"the constant {short(str(e))} at position {where} is not a "
                                  "finite real number in double precision (complex, or too "
                                  "large)", token=short(str(e))) from None
        return e

    def parse(self):
        if not self.tokens and self.pending is None:
            raise ExpressionError("the expression is empty", token="")
        e = self.expr()
        tok = self.peek()
        if tok is not None:
            raise ExpressionError(f"unexpected {tok[1]!r} at position {tok[2]}", token=tok[1])
        return e

    def expr(self):
        e = self.term()
        while self.peek() is not None and self.peek()[1] in ("+", "-"):
            op = self.take()
            t = self.term()
            e = e + t if op[1] == "+" else e - t
        return e

    def term(self):
        e = self.unary()
        while self.peek() is not None and self.peek()[1] in ("*", "/"):
            op = self.take()
            t = self.unary()
            if op[1] == "/":
                if t == 0 or t.is_zero:             # (Float(0.0) == 0 is False in sympy)
                    raise ExpressionError(f"division by zero at position {op[2]}", token="/")
                e = e / t
            else:
                e = e * t
        return e

    def unary(self):
        tok = self.peek()
        if tok is not None and tok[1] in ("+", "-"):
            self.take()
            self.enter()
            e = self.unary()
            self.depth -= 1
            return -e if tok[1] == "-" else e
        return self.power()

    def power(self):
        base = self.atom()
        tok = self.peek()
        if tok is not None and tok[1] == "**":
            self.take()
            self.enter()
            ex = self.unary()                      # right associative: a**b**c = a**(b**c)
            self.depth -= 1
            if not ex.free_symbols:
                if abs(self.value(ex, tok[2])) > MAX_EXPONENT:
                    raise ExpressionError(f"exponent {short(str(ex))} is larger than "
                                          f"{MAX_EXPONENT} at position {tok[2]}", token="**")
            if not base.free_symbols and not ex.free_symbols:
                b, x = abs(self.value(base, tok[2])), _value(ex)
                if b == 0 and x < 0:
                    raise ExpressionError(f"0 to a negative power at position {tok[2]}", token="**")
                if b != 0 and abs(math.log10(b) * x) > 300:
                    raise ExpressionError(f"the power at position {tok[2]} is too large",
                                          token="**")
            return self.checked(base ** ex, tok[2])
        return base

    def atom(self):
        tok = self.take()
        if tok is None:
            raise ExpressionError(f"the expression ends too early (at position {len(self.text)}: "
                                  "an operand is missing, or a parenthesis is not closed)",
                                  token=None)
        kind, text, where = tok
        if kind == "number":
            return _number(text)
        if kind == "name":
            if text not in FUNCTIONS and text not in self.names and text not in BUILTIN_CONSTANTS:
                known = ", ".join(sorted(self.names)) or "none"
                raise ExpressionError(f"unknown name {text!r} at position {where} "
                                      f"(known names: {known}; "
                                      f"functions: {', '.join(FUNCTIONS)})", token=text)
            nxt = self.peek()
            if text in FUNCTIONS:
                if nxt is None or nxt[1] != "(":
                    raise ExpressionError(f"function {text!r} at position {where} needs an "
                                          "argument in parentheses", token=text)
                self.take()
                self.enter()
                arg = self.expr()
                self.depth -= 1
                self.expect(")")
                return self.checked(FUNCTIONS[text](arg), where)
            if text in self.names:
                if nxt is not None and nxt[1] == "(":
                    raise ExpressionError(f"{text!r} at position {where} is not a function",
                                          token=text)
                return self.names[text]
            if text in BUILTIN_CONSTANTS:
                return BUILTIN_CONSTANTS[text]
            known = ", ".join(sorted(self.names)) or "none"
            raise ExpressionError(f"unknown name {text!r} at position {where} "
                                  f"(known names: {known}; "
                                  f"functions: {', '.join(FUNCTIONS)})", token=text)
        if text == "(":
            self.enter()
            e = self.expr()
            self.depth -= 1
            self.expect(")")
            return e
        raise ExpressionError(f"unexpected {text!r} at position {where}", token=text)


def parse_expression(text, names):
    """The sympy expression of `text` (a string or a number); `names` maps each allowed name
    (coordinates, constants) to its sympy value. ExpressionError on anything else."""
    if isinstance(text, bool):
        raise ExpressionError(f"expected an expression, got {text!r}", token=repr(text))
    if isinstance(text, (int, float)):
        if isinstance(text, int) and abs(text) > 10 ** 300 or not math.isfinite(float(text)):
            raise ExpressionError(f"number {str(text)[:40]} is not a finite number",
                                  token=str(text)[:40])
        return (sp.Integer(text) if isinstance(text, int)
                else sp.Rational(*Fraction(text).as_integer_ratio()))
    if not isinstance(text, str):
        raise ExpressionError(f"expected an expression (a string or a number), got "
                              f"{short(text)}", token=None)
    expr = _Parser(text, names).parse()
    for node in sp.preorder_traversal(expr):
        if node.is_Pow and node.exp.is_number and abs(float(node.exp)) > 4 * MAX_EXPONENT:
            raise ExpressionError(f"the powers multiply to an exponent of {node.exp}, more than "
                                  f"{4 * MAX_EXPONENT}", token="**")
    # sympy writes sqrt(a**2) of a real a as its own Abs (and its derivative as sign, then
    # DiracDelta): the branch-free pieces abs() gives instead, whose derivatives generate
    # and sympy's tan(pi/2 + x) = -cot(x) as 1 / tan(x), which the generated code has
    return (expr.replace(sp.Abs, SclAbs).replace(sp.sign, SclSign)
            .replace(sp.cot, lambda x: 1 / sp.tan(x)))
