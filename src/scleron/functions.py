"""The generated functions, each described once.

A FunctionSpec names a function, its inputs and outputs with their shapes (in terms of the
model's nq and nv), the recursion that computes it (scleron.dynamics.recursions, run in any
algebra) and its documentation. Everything else reads the spec: the unrolled program
(`FunctionSpec.program`), the C signatures, header and cffi declarations, the Python wrappers
(single, batched, out=, the fast extension), `scleron show` and the operation counts.

Adding a generated function is one recursion plus one entry in FUNCTIONS.
"""
from dataclasses import dataclass
from typing import Callable
from functools import partial
from math import prod

from .dynamics import configuration, derivatives, frames, recursions
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
    variant: tuple = None       # (python name, ((option, value, default), ...)): the generated
                                # Python function `python name` takes the options (keywords with
                                # their default; None: required) and calls this one
    by_default: Callable = None     # tree -> whether it is generated without being named

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
    return {"nq": tree.nq, "nv": tree.nv, "nframes": len(getattr(tree, "frames", ()))}


def _in(name, dim="nv", doc=""):
    return Argument(name, (dim,), doc)


Q = _in("q", "nq", "configuration")
QD = _in("qd", "nv", "velocity")
QDD = _in("qdd", "nv", "acceleration")


# The frame Jacobians' work grows with the sum over frames of the coordinates that move each
# (n^2/2 for a chain of n bodies), and the one-frame functions' code with it: they are generated
# without being named (--functions) while that sum is at most this; beyond it, name them for the
# frames you need (--frames). Panda: 65, RC20: 210, RC50: 1275, RC100: 5050. (The C code of the
# all-frames Jacobians is O(n) from unroll.FRAME_LOOP_FROM_COLUMNS on, their CUDA code is not.)
FRAME_COLUMNS_BY_DEFAULT = 1000


def few_frame_columns(tree):
    return frames.frame_columns(tree) <= FRAME_COLUMNS_BY_DEFAULT


def named_only(tree):
    """Generated only when named in functions= (--functions)."""
    return False


# The derivative functions' outputs are nv x nv, their code O(nv^2) (the forward-dynamics
# derivatives' products M^-1 dtau/dx: nv^3, below 24 coordinates): they are generated without
# being named (--functions) only for trees of at most this many velocity coordinates, the
# robots of the speed targets (panda 9, UR5 6, a quadruped's 12 joints), where the three add
# about 5 s to a generation (panda 2 s -> 7 s). Measured on 2 busy cores, all three with fd, id:
# solo12 with its free flyer (nv 18) 16 s (35k operations for the forward-dynamics
# derivatives), RC20 38 s (68k), RC50 102 s (412k): name them (--functions fd_derivatives,...).
DERIVATIVES_BY_DEFAULT_NV = 12


def few_coordinates(tree):
    return tree.nv <= DERIVATIVES_BY_DEFAULT_NV


def referenced(name, inputs, output, recursion, doc, aliases=(), by_default=None,
               forms=("unrolled",)):
    """One spec per reference of frames.REFERENCES, the default (local_world_aligned) under
    `name` and the others as `name_local`, `name_world`: the generated Python `name` takes
    reference= and calls the one asked for."""
    out = []
    for ref in frames.REFERENCES:
        suffix = "" if ref == frames.REFERENCES[0] else f"_{ref}"
        out.append(FunctionSpec(name + suffix, inputs, (output,), partial(recursion, reference=ref),
                                f"{doc}, reference {ref}", tuple(a + suffix for a in aliases),
                                forms, variant=(name, (("reference", ref, frames.REFERENCES[0]),)),
                                by_default=by_default))
    return out

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
    FunctionSpec("com_jacobian", (Q,), (Argument("Jcom", (3, "nv"), "centre of mass Jacobian"),),
                 frames.com_jacobian, "d com / d q (world), row-major 3 x nv", ("jcom",)),
    FunctionSpec("frame_placements", (Q,), (Argument("oMf", ("nframes", 4, 4), "frame placements"),),
                 frames.frame_placements,
                 "the world placement [[R, p], [0, 1]] of every frame (frame_names)", ("placements",)),
    FunctionSpec("integrate", (Q, _in("v", doc="velocity"), Argument("dt", (), "time step")),
                 (_in("q_next", "nq", "configuration reached"),), configuration.integrate,
                 "q (+) v dt on each joint's configuration space (quaternions: q exp(v dt))",
                 ("int",)),
    FunctionSpec("difference", (_in("q0", "nq", "configuration"), _in("q1", "nq", "configuration")),
                 (_in("v", doc="velocity"),), configuration.difference,
                 "q1 (-) q0: the v with integrate(q0, v, 1) = q1", ("diff",)),
    *referenced("frame_jacobians", (Q,), Argument("J", ("nframes", 6, "nv"), "frame Jacobians"),
                frames.frame_jacobians, "J_f with twist [w; v] = J_f qd, every frame", ("jacobians",),
                few_frame_columns, ("unrolled", "frame_loop")),
    *referenced("frame_velocities", (Q, QD), Argument("vf", ("nframes", 6), "frame twists [w; v]"),
                frames.frame_velocities, "the twist [w; v] of every frame", ("velocities",)),
    *referenced("frame_accelerations", (Q, QD, QDD),
                Argument("af", ("nframes", 6), "classical accelerations [dw/dt; a]"),
                frames.frame_accelerations,
                "the classical acceleration [dw/dt; a of the origin] of every frame",
                ("accelerations",)),
    FunctionSpec("mass_matrix_inverse", (Q,),
                 (Argument("Minv", ("nv", "nv"), "inverse mass matrix"),),
                 derivatives.mass_matrix_inverse,
                 "M(q)^-1, row-major nv x nv: L^-1 D^-1 L^-T of the mass matrix (Featherstone "
                 "6.5); in loop form the articulated-body columns (Carpentier 2018)", ("minv",),
                 ("unrolled", "minv_loop"),
                 by_default=few_coordinates),
    FunctionSpec("inverse_dynamics_derivatives", (Q, QD, QDD),
                 (Argument("dtau_dq", ("nv", "nv"), "d tau / d q (tangent space: nv columns)"),
                  Argument("dtau_dqd", ("nv", "nv"), "d tau / d qd"),
                  Argument("M", ("nv", "nv"), "d tau / d qdd, the mass matrix")),
                 derivatives.inverse_dynamics_derivatives,
                 "d tau/dq, d tau/dqd and M at (q, qd, qdd), row-major nv x nv each (Carpentier & "
                 "Mansard 2018; q columns along integrate(q, v), as Pinocchio's)",
                 ("id_derivatives", "idd"), ("unrolled", "pair_loop"),
                 by_default=few_coordinates),
    FunctionSpec("forward_dynamics_derivatives", (Q, QD, _in("tau", doc="joint forces")),
                 (Argument("dqdd_dq", ("nv", "nv"), "d qdd / d q (tangent space: nv columns)"),
                  Argument("dqdd_dqd", ("nv", "nv"), "d qdd / d qd"),
                  Argument("Minv", ("nv", "nv"), "d qdd / d tau, the inverse mass matrix")),
                 derivatives.forward_dynamics_derivatives,
                 "d qdd/dq, d qdd/dqd and M^-1 at (q, qd, tau), row-major nv x nv each: "
                 "-M^-1 d tau/dx at qdd = FD(q, qd, tau) (Carpentier & Mansard 2018)",
                 ("fd_derivatives", "fdd"), ("unrolled", "product_loop"),
                 by_default=few_coordinates),
]}


# ---- functions of one frame: one C function per frame (and reference) of the model ---------------
# frame_jacobian(q, "tool") costs that frame's work only (its body's ancestors), where
# frame_jacobians(q)[k] computes every frame. Generated by default with the frame Jacobians.
OPTION_DEFAULTS = {"reference": frames.REFERENCES[0]}     # options without one are required


@dataclass(frozen=True)
class FrameFunction:
    """A family of per-frame functions: for frame k of the tree (and each reference when
    referenced), the spec `name_k[_reference]` computing `all_frames` for that frame alone."""
    name: str
    all_frames: str             # the FUNCTIONS entry it computes one frame of
    recursion: object           # that entry's recursion, taking reference= when referenced
    referenced: bool
    doc: str
    by_default: Callable = None

    def specs(self, tree):
        """The concrete specs for the frames of this tree (Tree.frames, in order)."""
        out = FUNCTIONS[self.all_frames].outputs[0]
        one = Argument(out.name, out.shape[1:], out.doc)          # without the nframes axis
        refs = frames.REFERENCES if self.referenced else (None,)
        specs = []
        for k, f in enumerate(tree.frames):
            for ref in refs:
                suffix = "" if ref in (None, frames.REFERENCES[0]) else f"_{ref}"
                kw = {"reference": ref} if ref else {}
                options = (("frame", f.name, None),) + tuple((o, v, OPTION_DEFAULTS[o])
                                                             for o, v in kw.items())
                specs.append(FunctionSpec(
                    f"{self.name}_{k}{suffix}", FUNCTIONS[self.all_frames].inputs, (one,),
                    partial(frames.one_frame, function=self.recursion, index=k, **kw),
                    f"{self.doc} of frame {f.name}" + (f", reference {ref}" if ref else ""),
                    variant=(self.name, options)))
        return specs


FRAME_FUNCTIONS = {f.name: f for f in [
    FrameFunction("frame_placement", "frame_placements", frames.frame_placements, False,
                  "the world placement [[R, p], [0, 1]]", few_frame_columns),
    FrameFunction("frame_jacobian", "frame_jacobians", frames.frame_jacobians, True,
                  "J with twist [w; v] = J qd", few_frame_columns),
    # one frame's twist and classical acceleration: generated when named (--functions
    # frame_velocity,frame_acceleration), three references each would double the default code
    FrameFunction("frame_velocity", "frame_velocities", frames.frame_velocities, True,
                  "the twist [w; v]", named_only),
    FrameFunction("frame_acceleration", "frame_accelerations", frames.frame_accelerations, True,
                  "the classical acceleration [dw/dt; a of the origin]", named_only),
]}


def frame_family(name):
    """The FRAME_FUNCTIONS family a one-frame function's name belongs to, a reference suffix
    allowed (frame_jacobian, frame_jacobian_local -> frame_jacobian), or None."""
    for fam in FRAME_FUNCTIONS.values():
        refs = frames.REFERENCES[1:] if fam.referenced else ()
        if name == fam.name or name in (f"{fam.name}_{ref}" for ref in refs):
            return fam.name
    return None


def function_spec(name):
    """The spec of a function by its name or alias; ValueError naming the choices."""
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    for f in FUNCTIONS.values():
        if name in f.aliases:
            return f
    choices = ", ".join(f"{f.name} ({'/'.join(f.aliases)})" if f.aliases else f.name
                        for f in FUNCTIONS.values())
    raise ValueError(f"unknown function {name!r} (one of {choices}; the one-frame functions "
                     f"{', '.join(FRAME_FUNCTIONS)}, each with all its references)")
