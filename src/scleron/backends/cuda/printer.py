"""Prints a straight-line Program as CUDA device code: the C printer's statements (CStatements)
with the differences one GPU thread per state needs.

- Strides. A device function reads and writes one state through pointers to its entry 0 and
  one stride `s` between consecutive entries: s = 1 for states stored one after another
  (AoS, arrays (N, n)), s = N for each entry's values of consecutive states adjacent (SoA,
  arrays (n, N)), so one function serves both layouts.
- Registers, not a work array. The C printer splits long programs into chunk functions and
  passes the values that cross a chunk boundary through a local array w[] (gcc's compile time
  grows quadratically with function size). On a GPU a per-thread array is local memory, the
  suspect of the large-model cliff the spike measured (RC50 18 ns/state, RC100 26). Here a
  program is one function of `const double` locals, inputs read once into locals, sin and cos
  of each coordinate by one sincos(): ptxas allocates registers over the whole live range and
  spills only what does not fit (`nvcc -Xptxas -v` reports both).
- Parts, optionally. `split=K` cuts the program into parts of about K statements, each its own
  kernel: the values crossing a part boundary go through a global scratch array stored by
  entry (index i * n + state: coalesced loads and stores), which shortens every kernel (less
  register pressure, a smaller instruction footprint) at the cost of that traffic. Which one
  wins for a model is measured on a GPU (docs/cuda.md), not guessed.
"""
from dataclasses import dataclass

from ...program.program import Var
from ..c.printer import CStatements
from ..c.render import c_comment


class CudaStatements(CStatements):
    """CStatements whose inputs are locals read once (q_3 = q[3 * s]), whose sines and
    cosines of q are locals sq_k, cq_k set by sincos(), and whose outputs are stored with the
    stride s. `used` collects the inputs and trig values the printed text refers to."""

    def __init__(self, prog, sincos_of=None):
        super().__init__(prog, sincos_of)
        self.trig_array = sincos_of
        self.used = set()

    def ref(self, x):
        prog = self.prog
        if isinstance(x, Var) and prog.ops[x.id] == "in":
            arr, idx = prog.args[x.id]
            self.used.add(("in", arr, idx))
            return f"{arr}_{idx}"
        if isinstance(x, Var) and x.id in self.trig:
            arr, idx = self.trig[x.id]
            self.used.add(("trig", self.trig_array, idx))
            return f"{arr}_{idx}"
        return super().ref(x)

    def target(self, array, idx):
        return f"{array}[{idx} * s]"

    def zero_run(self, array, first, n):
        return f"for (int i = {first}; i < {first + n}; ++i) {array}[i * s] = 0.0;"

    def prologue(self):
        """The loads of the inputs and the sincos() of the coordinates the text used since
        the last call (then forgets them: each part loads its own)."""
        trig = sorted(idx for kind, _, idx in self.used if kind == "trig")
        inputs = {(arr, idx) for kind, arr, idx in self.used if kind == "in"}
        inputs |= {(self.trig_array, idx) for idx in trig}
        lines = [f"const double {arr}_{idx} = {arr}[{idx} * s];" for arr, idx in sorted(inputs)]
        for idx in trig:
            lines.append(f"double sq_{idx}, cq_{idx};")
            lines.append(f"sincos({self.trig_array}_{idx}, &sq_{idx}, &cq_{idx});")
        self.used = set()
        return lines


@dataclass
class DevicePart:
    """One part of a device function (a kernel of its own): its name and C lines."""
    name: str
    lines: list


@dataclass
class DeviceFunction:
    name: str
    parts: list
    nwork: int               # scratch entries per state between parts (0: one part)
    statements: int
    counts: object


# split="auto": one kernel up to AUTO_SPLIT_FROM statements, beyond it kernels of AUTO_PART.
# Measured with `nvcc -arch=sm_90 -Xptxas -v` (CUDA 13.0; docs/cuda.md): one kernel of RC20's
# forward dynamics (5270 statements) gets 255 registers and 3.3 kB of spill traffic per state;
# RC50's inverse dynamics (5749) falls back to 128 registers and 15 kB, RC50's and RC100's forward
# dynamics (14345, 29470) to 32 registers and 91 kB, 183 kB. Kernels of 1000 statements keep 255
# registers with (almost) no spills, the values between them cost 12 kB (RC50 ID), 23 kB (RC50
# FD), 50 kB (RC100 FD) of coalesced global traffic per state. What runs fastest is for a GPU to
# say (benchmarks/gpu.py --split); these are the ptxas figures the default rests on.
AUTO_SPLIT_FROM = 5500
AUTO_PART = 1000


def part_size(split, statements):
    """The statements per kernel of a program: split None (one kernel), an int, or "auto"."""
    if split == "auto":
        split = AUTO_PART if statements > AUTO_SPLIT_FROM else None
    return split or max(1, statements)


def print_device(prog, fname, split=None):
    """The device code of a program: one part (split None), or parts of about `split`
    statements ("auto": part_size) whose crossing values go through the scratch array w
    (stride ws)."""
    cs = CudaStatements(prog, sincos_of="q")
    live, name_of = cs.live, cs.name_of
    size = part_size(split, len(live))
    part_of = {i: k // size for k, i in enumerate(live)}
    nparts = max(1, (len(live) + size - 1) // size)
    crossing = {}
    for i in live:
        for a in prog.args[i]:
            if isinstance(a, Var) and a.id in part_of and part_of[a.id] != part_of[i]:
                crossing.setdefault(a.id, len(crossing))
    stores = cs.stores()
    bodies = [[] for _ in range(nparts)]
    used = [set() for _ in range(nparts)]        # inputs and sincos each part refers to
    loaded = [set() for _ in range(nparts)]
    section = [None] * nparts
    for i in live:
        p = part_of[i]
        body, cs.used = bodies[p], used[p]
        if prog.notes[i] != section[p]:
            body.append(f"/* {c_comment(prog.notes[i])} */")
            section[p] = prog.notes[i]
        for a in prog.args[i]:
            if isinstance(a, Var) and a.id in crossing and part_of[a.id] != p \
                    and a.id not in loaded[p]:
                body.append(f"const double {name_of[a.id]} = w[{crossing[a.id]} * ws];")
                loaded[p].add(a.id)
        body.append(cs.statement(i))
        if i in crossing:
            body.append(f"w[{crossing[i]} * ws] = {name_of[i]};")
        body.extend(f"{target} = {name_of[i]};" for target in stores.get(i, ()))
    cs.used = used[-1]
    rest = cs.constant_stores()
    if rest:
        bodies[-1].append("/* outputs that are constants, inputs or sin/cos of q */")
        bodies[-1] += rest
    parts = []
    for k, body in enumerate(bodies):
        cs.used = used[k]
        parts.append(DevicePart(f"{fname}_part{k}" if nparts > 1 else fname,
                                cs.prologue() + body))
    return DeviceFunction(fname, parts, len(crossing), len(live), prog.op_counts())
