"""A straight-line program built by operator overloading.

Evaluating any arithmetic code on Var objects records one SSA node per operation. As the
program is built:
- constants are plain Python floats and fold immediately (1.5 * 2.0 is just 3.0);
- structural zeros and ones vanish (x*0 -> 0, x*1 -> x, x+0 -> x, 0/x -> 0);
- negations are pushed outwards and cancel (-(-x) -> x, a - (-b) -> a + b);
- constant factors merge (2 * (3 * x) -> 6 * x);
- every node is hash-consed: building the same operation on the same operands twice returns
  the first node, so common subexpressions are shared without a separate CSE pass, and
  sin/cos of each coordinate are computed once.
Dead code is removed when the program is finalised against its outputs.
"""
from dataclasses import dataclass

from ..algebra import MATH_FUNCTIONS, Section

UNARY_MATH = MATH_FUNCTIONS


class Var:
    """A value computed by the program (an SSA temporary or an input)."""
    __slots__ = ("prog", "id")

    def __init__(self, prog, id_):
        self.prog = prog
        self.id = id_

    @property
    def op(self):
        return self.prog.ops[self.id]

    @property
    def args(self):
        return self.prog.args[self.id]

    def __add__(self, o): return self.prog.add(self, o)
    def __radd__(self, o): return self.prog.add(o, self)
    def __sub__(self, o): return self.prog.sub(self, o)
    def __rsub__(self, o): return self.prog.sub(o, self)
    def __mul__(self, o): return self.prog.mul(self, o)
    def __rmul__(self, o): return self.prog.mul(o, self)
    def __truediv__(self, o): return self.prog.div(self, o)
    def __rtruediv__(self, o): return self.prog.div(o, self)
    def __neg__(self): return self.prog.neg(self)
    def __pos__(self): return self

    def __pow__(self, n):
        if isinstance(n, int) or (isinstance(n, float) and n.is_integer()):
            return self.prog.power(self, int(n))
        if n == 0.5:
            return self.prog.unary("sqrt", self)
        return self.prog.node("pow", (self, float(n)))

    def __repr__(self):
        return f"t{self.id}"

    def __bool__(self):
        raise TypeError("a symbolic value has no truth value (no branches on state)")


def _key(x):
    return ("v", x.id) if isinstance(x, Var) else ("c", x)


def _is_const(x):
    return not isinstance(x, Var)


# Latencies in cycles of double-precision scalar operations on a current x86-64 core (Agner
# Fog's instruction tables: add, multiply 4, divide 13-15); a math function (sin, cos, sqrt:
# sincos is one call for all angles) counted as 20. Operations retire at about 3.5 per cycle in
# the generated code where nothing waits (callgrind instructions per call over the timed
# cycles, unrolled forward dynamics on a Xeon, 2026-11-28: docs/performance.md).
LATENCY = {"add": 4, "sub": 4, "mul": 4, "div": 14, "neg": 1}
FUNCTION_LATENCY = 20
OPERATIONS_PER_CYCLE = 3.5


@dataclass
class OpCounts:
    mul: int = 0      # multiplications and divisions
    add: int = 0      # additions and subtractions
    neg: int = 0
    fn: int = 0       # sin, cos, sqrt, ... calls

    @property
    def total(self):
        return self.mul + self.add + self.neg + self.fn

    def __str__(self):
        return f"{self.mul}m + {self.add}a + {self.fn} fn"


class Program:
    """Nodes in creation order (a valid evaluation order). ops[i], args[i] describe node i."""

    def __init__(self, name="program"):
        self.name = name
        self.ops = []
        self.args = []
        self.notes = []          # the Section (pass, joint, body) active when node i was made
        self.table = {}
        self.section = Section("")
        self.helpers = {}        # name -> Helper of the call: nodes (numeric value, C body)
        self.inputs = {}         # array name -> size
        self.outputs = []        # (array, index, value)

    # ---- building ----------------------------------------------------------------------------
    def set_section(self, section):
        """Label the nodes made from now on: a Section, or a plain text."""
        self.section = (section if isinstance(section, Section)
                        else Section(str(section), str(section)))

    def node(self, op, args):
        key = (op,) + tuple(_key(a) for a in args)
        hit = self.table.get(key)
        if hit is not None:
            return hit
        v = Var(self, len(self.ops))
        self.ops.append(op)
        self.args.append(tuple(args))
        self.notes.append(self.section)
        self.table[key] = v
        return v

    def input(self, array, index):
        self.inputs[array] = max(self.inputs.get(array, 0), index + 1)
        return self.node("in", (array, index))

    def input_vector(self, array, n):
        return [self.input(array, i) for i in range(n)]

    def _is_neg(self, x):
        return isinstance(x, Var) and self.ops[x.id] == "neg"

    def _scaled(self, x):
        """x as (constant factor, rest): 3*t -> (3, t), -t -> (-1, t), t -> (1, t)."""
        if isinstance(x, Var):
            if self.ops[x.id] == "neg":
                c, r = self._scaled(self.args[x.id][0])
                return -c, r
            if self.ops[x.id] == "mul" and _is_const(self.args[x.id][0]):
                return self.args[x.id][0], self.args[x.id][1]
        return 1.0, x

    def add(self, a, b):
        if _is_const(a) and _is_const(b):
            return float(a) + float(b)
        if _is_const(a) and a == 0:
            return b
        if _is_const(b) and b == 0:
            return a
        if self._is_neg(b):
            return self.sub(a, self.args[b.id][0])
        if self._is_neg(a):
            return self.sub(b, self.args[a.id][0])
        if _is_const(b):          # constants first, for a canonical key
            a, b = b, a
        elif isinstance(a, Var) and isinstance(b, Var) and b.id < a.id:
            a, b = b, a
        return self.node("add", (a, b))

    def sub(self, a, b):
        if _is_const(a) and _is_const(b):
            return float(a) - float(b)
        if _is_const(b) and b == 0:
            return a
        if _is_const(a) and a == 0:
            return self.neg(b)
        if isinstance(a, Var) and isinstance(b, Var) and a.id == b.id:
            return 0.0
        if self._is_neg(b):
            return self.add(a, self.args[b.id][0])
        if self._is_neg(a):
            return self.neg(self.add(self.args[a.id][0], b))
        return self.node("sub", (a, b))

    def neg(self, a):
        if _is_const(a):
            return -float(a)
        if self.ops[a.id] == "neg":
            return self.args[a.id][0]
        if self.ops[a.id] == "mul" and _is_const(self.args[a.id][0]):
            return self.mul(-self.args[a.id][0], self.args[a.id][1])
        if self.ops[a.id] == "sub":
            x, y = self.args[a.id]
            return self.sub(y, x)
        return self.node("neg", (a,))

    def mul(self, a, b):
        if _is_const(a) and _is_const(b):
            return float(a) * float(b)
        if _is_const(b):
            a, b = b, a
        if _is_const(a):
            a = float(a)
            if a == 0.0:
                return 0.0
            if a == 1.0:
                return b
            if a == -1.0:
                return self.neg(b)
            c, rest = self._scaled(b)
            if c != 1.0:
                return self.mul(a * c, rest)
            return self.node("mul", (a, b))
        # both symbolic: pull signs and constant factors out, so they fold with others
        ca, ra = self._scaled(a)
        cb, rb = self._scaled(b)
        if ca != 1.0 or cb != 1.0:
            return self.mul(ca * cb, self.mul(ra, rb))
        if b.id < a.id:
            a, b = b, a
        return self.node("mul", (a, b))

    def div(self, a, b):
        if _is_const(b):
            b = float(b)
            if b == 1.0:
                return a
            if _is_const(a):
                return float(a) / b
            return self.mul(1.0 / b, a)
        if _is_const(a) and a == 0:
            return 0.0
        if self._is_neg(b):
            return self.neg(self.div(a, self.args[b.id][0]))
        return self.node("div", (a, b))

    def power(self, x, n):
        if n == 0:
            return 1.0
        if n < 0:
            return self.div(1.0, self.power(x, -n))
        if n == 1:
            return x
        half = self.power(x, n // 2)
        sq = self.mul(half, half)
        return self.mul(sq, x) if n % 2 else sq

    def unary(self, fn, x):
        if _is_const(x):
            return UNARY_MATH[fn](float(x))
        return self.node(fn, (x,))

    def call(self, helper, x):
        """A Helper function of one argument (e.g. a series-guarded sinc); its numeric value
        folds constants and evaluates the program, its C body is printed by the backend."""
        if _is_const(x):
            return helper.numeric(float(x))
        known = self.helpers.setdefault(helper.name, helper)
        if known is not helper and known.c_body != helper.c_body:
            raise ValueError(f"two different helpers named {helper.name}")
        return self.node("call:" + helper.name, (x,))

    def used_helpers(self):
        """The Helpers the live nodes call, by name."""
        names = sorted({self.ops[i][5:] for i in self.live() if self.ops[i].startswith("call:")})
        return [self.helpers[n] for n in names]

    # ---- finishing ---------------------------------------------------------------------------
    def set_outputs(self, array, values):
        for i, v in enumerate(values):
            self.outputs.append((array, i, v))

    def live(self):
        """Ids of the nodes the outputs depend on, in evaluation order (dead code removed)."""
        seen = set()
        stack = [v.id for _, _, v in self.outputs if isinstance(v, Var)]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            if self.ops[i] != "in":
                stack.extend(a.id for a in self.args[i] if isinstance(a, Var))
        return sorted(seen)

    def op_counts(self, ids=None):
        c = OpCounts()
        for i in (self.live() if ids is None else ids):
            op = self.ops[i]
            if op in ("mul", "div"):
                c.mul += 1
            elif op in ("add", "sub"):
                c.add += 1
            elif op == "neg":
                c.neg += 1
            elif op != "in":
                c.fn += 1
        return c

    def critical_path(self):
        """The latency, in cycles, of the longest chain of dependent operations to an output
        (LATENCY: a current x86-64 core's)."""
        depth = {}
        for i in self.live():
            if self.ops[i] == "in":
                depth[i] = 0
                continue
            before = [depth[a.id] for a in self.args[i] if isinstance(a, Var)]
            depth[i] = max(before, default=0) + LATENCY.get(self.ops[i], FUNCTION_LATENCY)
        return max(depth.values(), default=0)

    def estimated_cycles(self):
        """A rough time of one call, in cycles: the larger of its critical path and its operations
        at OPERATIONS_PER_CYCLE. Straight-line code of a few thousand operations is bound by
        one or the other: an articulated-body pass on a small arm by its chain of dependent
        divisions, a long chain's code by its operations (docs/performance.md)."""
        return max(self.critical_path(), self.op_counts().total / OPERATIONS_PER_CYCLE)

    def evaluate(self, inputs):
        """Run the program in Python on numbers (for tests): inputs maps array name -> sequence."""
        val = {}
        for i in self.live():
            op, args = self.ops[i], self.args[i]
            a = [val[x.id] if isinstance(x, Var) else x for x in args]
            if op == "in":
                val[i] = float(inputs[args[0]][args[1]])
            elif op == "add":
                val[i] = a[0] + a[1]
            elif op == "sub":
                val[i] = a[0] - a[1]
            elif op == "mul":
                val[i] = a[0] * a[1]
            elif op == "div":
                val[i] = a[0] / a[1]
            elif op == "neg":
                val[i] = -a[0]
            elif op == "pow":
                val[i] = a[0] ** a[1]
            elif op in UNARY_MATH:
                val[i] = UNARY_MATH[op](a[0])
            elif op.startswith("call:"):
                val[i] = self.helpers[op[5:]].numeric(a[0])
            else:
                raise ValueError(f"cannot evaluate {op} in Python")
        out = {}
        for array, idx, v in self.outputs:
            out.setdefault(array, {})[idx] = val[v.id] if isinstance(v, Var) else v
        return {k: [d[i] for i in range(len(d))] for k, d in out.items()}
