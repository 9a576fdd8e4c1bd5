"""Prints a straight-line Program as C99 statements, split into chunks.

gcc's compile time grows about quadratically with function size (BENCHMARKS.md), so long
programs are split into static functions of about `chunk` statements; values that cross a
chunk boundary travel through a local work array w[] of the public function.
"""
import math
import re
from dataclasses import dataclass, field

from ...program.program import Var
from .render import c_comment

C_FUNCS = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log",
           "sqrt": "sqrt", "atan": "atan"}
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


ZERO_RUN = 8          # consecutive zero outputs stored with one scl_zero (dynamics.c.j2)
# an output array at least this fraction of whose entries are exact zeros (a frame Jacobian: the
# columns of coordinates that do not move the frame) is cleared by one scl_zero before the first
# statement, its zeros not stored one run at a time: solo12's 17 frame Jacobians take 0.6 us
# instead of 0.85-0.97 us (72 short memsets and single zeros between the computed entries)
CLEAR_FRACTION = 0.5


class NonFiniteConstant(ValueError):
    """A constant of the program is inf or nan (model numbers that overflow when folded); the
    pipeline names the model's numbers."""


def c_literal(x):
    x = float(x)
    if not math.isfinite(x):
        raise NonFiniteConstant(f"non-finite constant {x} in a generated program")
    text = repr(x)
    return text if ("." in text or "e" in text) else text + ".0"


@dataclass
class Chunk:
    name: str
    index: int = 0           # global number of the chunk in the C file (for parallel builds)
    lines: list = field(default_factory=list)
    params: str = ""         # its parameters: the arrays its lines use, in the function's order
    args: str = ""           # the arguments that call it


@dataclass
class CFunction:
    """One public C function: its chunks, its work-array size and its statistics."""
    name: str
    params: str              # C parameter list of the public function
    chunk_params: str        # every pointer a chunk may take (a chunk's own: Chunk.params)
    chunks: list
    nwork: int
    statements: int
    counts: object
    sincos: tuple = None     # (first, count): the entries of q whose sin and cos it reads from
                             # the vectorised sq[] / cq[] arrays (computed for those only)


def _trig_of_input(prog, i, array):
    """For sin(q[k]) or cos(q[k]): ('sq' or 'cq', k); else None."""
    op = prog.ops[i]
    if op in ("sin", "cos"):
        (a,) = prog.args[i]
        if isinstance(a, Var) and prog.ops[a.id] == "in" and prog.args[a.id][0] == array:
            return ("sq" if op == "sin" else "cq"), prog.args[a.id][1]
    return None


class CStatements:
    """C text of a program's live nodes: temporaries named t0, t1, ... in evaluation order,
    inputs as array[index], and (sincos_of="q") sin(q[k]), cos(q[k]) read from sq[k], cq[k],
    which the generated function computes for all k at once before its statements."""

    def __init__(self, prog, sincos_of=None):
        self.prog = prog
        self.trig = {}
        if sincos_of:
            for i in prog.live():
                hit = _trig_of_input(prog, i, sincos_of)
                if hit:
                    self.trig[i] = hit
        self.live = [i for i in prog.live() if prog.ops[i] != "in" and i not in self.trig]
        self.name_of = {i: f"t{k}" for k, i in enumerate(self.live)}

    def ref(self, x):
        """An operand: a literal, an input, a sin/cos of q, or a temporary."""
        prog = self.prog
        if not isinstance(x, Var):
            return c_literal(x)
        if prog.ops[x.id] == "in":
            arr, idx = prog.args[x.id]
            return f"{arr}[{idx}]"
        if x.id in self.trig:
            arr, idx = self.trig[x.id]
            return f"{arr}[{idx}]"
        return self.name_of[x.id]

    def expr(self, i):
        """The right-hand side of node i."""
        op, args = self.prog.ops[i], self.prog.args[i]
        ref = self.ref
        if op in BINARY:
            a, b = args
            return f"{ref(a)} {BINARY[op]} {ref(b)}"
        if op == "neg":
            return f"-{ref(args[0])}"
        if op in C_FUNCS:
            return f"{C_FUNCS[op]}({ref(args[0])})"
        if op.startswith("call:"):
            return f"{op[5:]}({ref(args[0])})"
        if op == "pow":
            return f"pow({ref(args[0])}, {ref(args[1])})"
        raise ValueError(op)

    def statement(self, i):
        return f"const double {self.name_of[i]} = {self.expr(i)};"

    def target(self, array, idx):
        """The C lvalue of output entry idx of an array (a backend with strides overrides it)."""
        return f"{array}[{idx}]"

    def zero_run(self, array, first, n):
        """The C statement zeroing n consecutive output entries from first."""
        return f"scl_zero({array} + {first}, {n});"

    def stores(self):
        """node id -> the output entries ('array[index]') that take its value."""
        out = {}
        for array, idx, v in self.prog.outputs:
            if isinstance(v, Var) and v.id in self.name_of:
                out.setdefault(v.id, []).append(self.target(array, idx))
        return out

    def other_outputs(self):
        """(target, value) of outputs that are constants or inputs (stored at the end)."""
        return [(self.target(array, idx), self.ref(v)) for array, idx, v in self.prog.outputs
                if not (isinstance(v, Var) and v.id in self.name_of)]

    def cleared_arrays(self, fraction=CLEAR_FRACTION):
        """{array: entries} of the output arrays at least `fraction` of whose entries (up to the
        highest one written) are exact zeros."""
        size, zeros = {}, {}
        for array, idx, v in self.prog.outputs:
            size[array] = max(size.get(array, 0), idx + 1)
            if not isinstance(v, Var) and v == 0.0:
                zeros[array] = zeros.get(array, 0) + 1
        return {a: n for a, n in size.items() if zeros.get(a, 0) >= fraction * n}

    def constant_stores(self, min_run=ZERO_RUN, cleared=()):
        """The C statements storing the outputs that are constants or inputs: runs of at least
        min_run consecutive exact zeros of one array as one scl_zero (a frame Jacobian is mostly
        zeros: the coordinates that do not move the frame), the others one by one; none for the
        zeros of the `cleared` arrays (zeroed as a whole beforehand)."""
        lines, run = [], []

        def flush():
            if len(run) >= min_run:
                array, first = run[0]
                lines.append(self.zero_run(array, first, len(run)))
            else:
                lines.extend(f"{self.target(array, idx)} = 0.0;" for array, idx in run)
            run.clear()
        for array, idx, v in self.prog.outputs:
            if isinstance(v, Var) and v.id in self.name_of:
                continue
            if not isinstance(v, Var) and v == 0.0:
                if array in cleared:
                    continue
                if run and (run[-1][0] != array or run[-1][1] != idx - 1):
                    flush()
                run.append((array, idx))
                continue
            flush()
            lines.append(f"{self.target(array, idx)} = {self.ref(v)};")
        flush()
        return lines


def _own_parameters(chunk, pointers):
    """A chunk takes only the arrays its lines use (name[...] or a scl_zero of it): each further
    pointer is one more argument to pass at every call, on the stack from the seventh."""
    text = "\n".join(chunk.lines)
    mine = [(n, decl) for n, decl in pointers
            if re.search(rf"\b{re.escape(n)}\[|(?:scl_zero|memset)\({re.escape(n)}\b", text)]
    chunk.params = ", ".join(decl for _, decl in mine) or "void"
    chunk.args = ", ".join(n for n, _ in mine)


def print_program(prog, fname, arrays, chunk=1000, first_index=0, sincos_of=None):
    """arrays: ordered list of (name, is_output) naming the C pointer parameters.

    sincos_of: name of the input array (e.g. "q") whose sines and cosines are computed for all
    entries at once, vectorised, before the chunks run (scl_sincos): sin(q[k]) and cos(q[k])
    then read sq[k] and cq[k] instead of calling libm one at a time."""
    cs = CStatements(prog, sincos_of)
    trig, live, name_of = cs.trig, cs.live, cs.name_of

    # assign nodes to chunks
    chunk_of = {i: k // chunk for k, i in enumerate(live)}
    nchunks = max(1, (len(live) + chunk - 1) // chunk)
    # values used in a later chunk travel through w[]
    crossing = {}
    last = nchunks - 1
    for i in live:
        for a in prog.args[i]:
            if isinstance(a, Var) and a.id in chunk_of and chunk_of[a.id] != chunk_of[i]:
                crossing.setdefault(a.id, len(crossing))
    # an output is stored right where its value is computed (outputs must not alias inputs:
    # the parameters are restrict); constants and plain inputs are stored at the end
    stores = cs.stores()

    chunks = [Chunk(f"{fname}_part{k}", first_index + k) for k in range(nchunks)]
    loaded = [set() for _ in range(nchunks)]
    section = [None] * nchunks
    for i in live:
        c = chunk_of[i]
        ch = chunks[c]
        note = prog.notes[i]
        if note != section[c]:
            ch.lines.append(f"/* {c_comment(note)} */")
            section[c] = note
        for a in prog.args[i]:
            if (isinstance(a, Var) and a.id in chunk_of and chunk_of[a.id] != c
                    and a.id not in loaded[c]):
                ch.lines.append(f"const double {name_of[a.id]} = w[{crossing[a.id]}];")
                loaded[c].add(a.id)
        ch.lines.append(cs.statement(i))
        if i in crossing:
            ch.lines.append(f"w[{crossing[i]}] = {name_of[i]};")
        for target in stores.get(i, ()):
            ch.lines.append(f"{target} = {name_of[i]};")
    cleared = cs.cleared_arrays()
    chunks[0].lines[:0] = [f"scl_zero({a}, {n});    /* mostly zeros */"
                           for a, n in cleared.items()]
    rest = cs.constant_stores(cleared=cleared)
    if rest:
        tail = chunks[last]
        tail.lines.append("/* outputs that are constants, inputs or sin/cos of q */")
        tail.lines += rest

    def param(name, is_out):
        return f"double *restrict {name}" if is_out else f"const double *restrict {name}"
    params = ", ".join(param(n, o) for n, o in arrays)
    pointers = [(n, param(n, o)) for n, o in arrays] + (
        [("sq", "const double *restrict sq"), ("cq", "const double *restrict cq")]
        if trig else []) + (
        [("w", "double *restrict w")] if crossing else [])
    chunk_params = ", ".join(decl for _, decl in pointers)
    for ch in chunks:
        _own_parameters(ch, pointers)
    used = sorted({idx for _, idx in trig.values()})
    sincos = (used[0], used[-1] + 1 - used[0]) if used else None
    return CFunction(fname, params, chunk_params, chunks, len(crossing),
                     len(live), prog.op_counts(), sincos)
