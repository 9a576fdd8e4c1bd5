"""The generated functions, each described once.

A FunctionSpec names a function, its inputs and outputs with their shapes (in terms of the
model's nq and nv), the recursion that computes it (scleron.dynamics.recursions, run in any
algebra) and its documentation. Everything else reads the spec: the unrolled program
(`FunctionSpec.program`), the C signatures, header and cffi declarations, the Python wrappers
(single, batched, out=, the fast extension), `scleron show` and the operation counts.

Adding a generated function is one recursion plus one entry in FUNCTIONS.
"""
from dataclasses import dataclass
from math import prod

from .dynamics import recursions
from .program import Program, ProgramAlgebra


@dataclass(frozen=True)
class Argument:
    """An input or output array. shape: a tuple of dimensions, each an int or the name of a
    model size ("nq", "nv"); () is a scalar. Stored row-major, one double per entry."""
    name: str
    shape: tuple
    doc: str = ""

    def dims(self, sizes):
        return tuple(sizes[d] if isinstance(d, str) else int(d) for d in self.shape)

    def size(self, sizes):
        return prod(self.dims(sizes))


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    inputs: tuple
    outputs: tuple
    recursion: object           # recursion(tree, alg, *inputs) -> one value per output
    doc: str
    aliases: tuple = ()         # short names for `scleron show --function`
    forms: tuple = ("unrolled",)   # code shapes it can take (scleron.unroll.function_code)

    def program(self, tree, prefix=None):
        """The straight-line Program of this function for one tree: inputs are program input
        arrays, outputs are flattened row-major."""
        sizes = model_sizes(tree)
        prog = Program(f"{prefix or tree.name}_{self.name}")
        alg = ProgramAlgebra(prog)
        args = [prog.input_vector(a.name, a.size(sizes)) for a in self.inputs]
        result = self.recursion(tree, alg, *args)
        values = result if len(self.outputs) > 1 else (result,)
        for out, value in zip(self.outputs, values):
            flat = flatten(value)
            if len(flat) != out.size(sizes):
                raise ValueError(f"{self.name}: output {out.name} has {len(flat)} entries, "
                                 f"its spec {out.shape} says {out.size(sizes)}")
            prog.set_outputs(out.name, flat)
        return prog

    def evaluate(self, tree, alg, *args):
        """The recursion in an algebra (e.g. FloatAlgebra: the numeric reference)."""
        return self.recursion(tree, alg, *[list(a) for a in args])


def flatten(value):
    """Nested lists (or a scalar) as one row-major list."""
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flatten(v)]
    return [value]


def model_sizes(tree):
    return {"nq": tree.nq, "nv": tree.nv}


def _in(name, dim="nv", doc=""):
    return Argument(name, (dim,), doc)


Q = _in("q", "nq", "configuration")
QD = _in("qd", "nv", "velocity")

FUNCTIONS = {f.name: f for f in [
    FunctionSpec("forward_dynamics", (Q, QD, _in("tau", doc="joint forces")),
                 (_in("qdd", doc="acceleration"),), recursions.forward_dynamics,
                 "qdd = M(q)^-1 (tau - h(q, qd)), Si & Guenter passes 1-6", ("fd",),
                 ("unrolled", "method2")),
    FunctionSpec("inverse_dynamics", (Q, QD, _in("qdd", doc="acceleration")),
                 (_in("tau", doc="joint forces"),), recursions.inverse_dynamics,
                 "tau = M(q) qdd + h(q, qd), recursive Newton-Euler (S&G passes 1-3)", ("id",)),
    FunctionSpec("mass_matrix", (Q,), (Argument("M", ("nv", "nv"), "mass matrix"),),
                 recursions.mass_matrix, "M(q), row-major nv x nv, composite rigid bodies",
                 ("mass",), ("unrolled", "mass_loop")),
    FunctionSpec("bias_forces", (Q, QD), (_in("h", doc="bias forces"),), recursions.bias_forces,
                 "h(q, qd) = C(q, qd) qd + phi(q), so that M qdd + h = tau", ("bias",)),
    FunctionSpec("kinetic_energy", (Q, QD), (Argument("T", (), "kinetic energy"),),
                 recursions.kinetic_energy, "T(q, qd) = 1/2 qd^T M(q) qd, from the body twists",
                 ("ke",)),
    FunctionSpec("potential_energy", (Q,), (Argument("V", (), "potential energy"),),
                 recursions.potential_energy,
                 "V(q): gravity (-sum m g . c, world centres of mass) plus joint springs",
                 ("pe",)),
    FunctionSpec("center_of_mass", (Q,), (Argument("com", (3,), "centre of mass (world)"),),
                 recursions.center_of_mass, "the whole tree's centre of mass in world coordinates",
                 ("com",)),
]}


def function_spec(name):
    """The spec of a function by its name or alias; ValueError naming the choices."""
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    for f in FUNCTIONS.values():
        if name in f.aliases:
            return f
    choices = ", ".join(f"{f.name} ({'/'.join(f.aliases)})" if f.aliases else f.name
                        for f in FUNCTIONS.values())
    raise ValueError(f"unknown function {name!r} (one of {choices})")
