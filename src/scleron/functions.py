"""The generated functions, each described once.

A FunctionSpec names a function, its inputs and outputs with their shapes (in terms of the
model's nq and nv), the recursion that computes it (scleron.dynamics.recursions, run in any
algebra) and its documentation. Everything else reads the spec: the unrolled program
(`FunctionSpec.program`), the C signatures, header and cffi declarations, the Python wrappers
(single, batched, out=, the fast extension), `scleron show` and the operation counts.

Adding a generated function is one recursion plus one entry in FUNCTIONS.
"""
from dataclasses import dataclass, replace
from typing import Callable
from functools import partial
from math import prod

from .dynamics import (centroidal, checks, configuration, derivatives, discrete, frames,
                       newton_euler, recursions)
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
class Alternative:
    """Another recursion that computes a spec's outputs, with its own doc, tried for the trees
    where applies(tree) holds."""
    recursion: object
    doc: str
    applies: Callable


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
    said_when_left_out: bool = True     # codegen names it where by_default left it out
    alternatives: tuple = ()    # Alternatives: other recursions of the same outputs; the
                                # unrolled code takes the fastest (unroll.fastest_recursion)
    with_mimic: bool = False    # also for a mimic-coupled tree (docs/mimic.md: its recursion
                                # runs through the coupling or needs no joint kinematics)
    coupled_doc: str = None     # the doc on a mimic-coupled tree, where its recursion differs
    in_all: Callable = None     # tree -> whether functions="all" takes it (None: always)
    calls: tuple = ()           # the "chained" form: ((function, (the inputs of this one it
                                # takes), ...)), generated functions its C calls first
    after_calls: object = None  # ... then this recursion(tree, alg, *inputs, *their outputs),
                                # each output flat as the C writes it
    before_calls: object = None     # recursion(tree, alg, *inputs) -> {name: values}: arrays
                                # b_<name> made before the calls, which they may take
    after_loop: object = None   # instead of after_calls: recursion(same) -> {name: values}, the
                                # arrays a_<name> of the Euler step's chain-rule loop, which
                                # writes the outputs from them and the first call's outputs
    acts_on_tree: Callable = None   # (tree, alg, inputs) -> (tree, inputs): an input acts on
                                # the tree rather than entering the recursion (fext: wrenches
                                # on its bodies); the recursion runs on the tree it returns
    joint_space: bool = False   # its outputs depend on the bodies' inertias only through the
                                # equations of motion (M, h): its code is built on the base
                                # inertial parameters (dynamics.regroup; unroll.code_tree)

    def prepared(self, tree, alg, args):
        """(tree, inputs) the recursion runs on: acts_on_tree applied, where there is one."""
        if self.acts_on_tree is None:
            return tree, list(args)
        return self.acts_on_tree(tree, alg, list(args))

    def run(self, tree, alg, *args):
        """The recursion on its inputs, in an algebra."""
        tree, args = self.prepared(tree, alg, args)
        return self.recursion(tree, alg, *args)

    def program(self, tree, prefix=None):
        """The straight-line Program of this function for one tree: inputs are program input
        arrays, outputs are flattened row-major."""
        sizes = model_sizes(tree)
        prog = Program(f"{prefix or tree.name}_{self.name}")
        alg = ProgramAlgebra(prog)
        args = [prog.input_vector(a.name, a.size(sizes)) for a in self.inputs]
        result = self.run(tree, alg, *args)
        values = result if len(self.outputs) > 1 else (result,)
        for out, value in zip(self.outputs, values):
            flat = flatten(value)
            if len(flat) != out.size(sizes):
                raise ValueError(f"{self.name}: output {out.name} has {len(flat)} entries, "
                                 f"its spec {out.shape} says {out.size(sizes)}")
            prog.set_outputs(out.name, flat)
        return prog

    def evaluate(self, tree, alg, *args):
        """The recursion in an algebra (e.g. FloatAlgebra: the numeric reference); each input
        flattened row-major as the C takes it (fext (nwrenches, 6) too; dt a number or one
        entry)."""
        return self.run(tree, alg, *[flatten(a.tolist() if hasattr(a, "tolist") else a)
                                     for a in args])


def flatten(value):
    """Nested lists (or a scalar) as one row-major list."""
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flatten(v)]
    return [value]


def model_sizes(tree):
    """The named sizes of the arguments' shapes: nx = 2 nv, a state (q, qd) in the tangent space."""
    return {"nq": tree.nq, "nv": tree.nv, "nx": 2 * tree.nv,
            "nframes": len(getattr(tree, "frames", ())),
            "nwrenches": len(getattr(tree, "wrench_frames", ()))}


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


def uncoupled(tree):
    """A tree without mimic coupling: the functions docs/mimic.md has not wrapped yet (frames,
    derivatives) are generated by default only there; named on a coupled tree, they refuse it
    with a ModelError (recursions.joint_kinematics)."""
    return tree.coupling is None


# Each frame makes four one-frame functions (a placement, three Jacobians), each with its own
# wrappers: they are generated unnamed only for at most this many frames (example-robot-data's
# largest, tiago_dual, has 130). A URDF of 1000 links welded to one moving link took 9 minutes
# to compile its 4,004 functions, for placements that are constants.
ONE_FRAME_FUNCTIONS_UP_TO_FRAMES = 200


def few_frame_columns(tree):
    return uncoupled(tree) and frames.frame_columns(tree) <= FRAME_COLUMNS_BY_DEFAULT


def few_frames(tree):
    return few_frame_columns(tree) and len(tree.frames) <= ONE_FRAME_FUNCTIONS_UP_TO_FRAMES


def on_a_manifold(tree):
    """Trees with a quaternion joint (free_flyer, spherical_quat): elsewhere the Jacobians of
    integrate and difference are I, dt I, -I, I, nv^2 constants not worth generating unasked."""
    return uncoupled(tree) and any(configuration.configuration_space(b) != "vector"
                                   for b in tree.bodies)


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
    return uncoupled(tree) and tree.nv <= DERIVATIVES_BY_DEFAULT_NV


# functions="all" leaves out, above this many coordinates, the functions whose straight-line
# code grows with nv^2 times the frames or faster: the frames' velocity and acceleration
# derivatives (forward mode), the world-axes fext's derivatives and the step's derivatives with
# fext (their M^-1 J^T and M^-1 C products, even chained: RC50's were 0.7-1.3M statements each,
# RC100's world-axes step 9.6M, an outside reviewer). Named (with --wrench-frames the contacts),
# they are generated at any size.
STRAIGHT_LINE_DERIVATIVES_UP_TO_NV = 24


def straight_line_fits(tree):
    return tree.nv <= STRAIGHT_LINE_DERIVATIVES_UP_TO_NV


# Forward dynamics by the mass matrix's factors is O(n d^2) against the articulated-body
# algorithm's O(n): it is unrolled as well, to be estimated against it (unroll.fastest_recursion),
# only up to this many coordinates. Beyond, its operations decide against it (RC20: 8,599
# against 4,530 operations, 988 against 726 ns: docs/performance.md).
MASS_MATRIX_SOLVE_UP_TO_NV = 24


def factors_and_newton_euler_apply(tree):
    """Where both the factors (factors_apply) and Newton-Euler (newton_euler.applies) do."""
    return newton_euler.applies(tree) and factors_apply(tree)


NEWTON_EULER = ("Newton-Euler in classical accelerations (Khalil & Dombre 9.5; "
                "dynamics.newton_euler)")


def factors_apply(tree):
    """Small uncoupled trees whose LTDL pivots are not a vanishing fraction of M's diagonal
    (checks.factors_are_accurate: there the factors' rounding would grow), without a quaternion
    joint below the root: a quaternion off unit length (an integrator's drift) moves M^-1 (tau -
    h) as it moves Pinocchio's crba-and-solve, the articulated-body passes' q'' as it moves
    Pinocchio's aba (outside testers: 2e-6 and 8e-7 at length 1 + 1e-6 on a chain of two
    spherical_quat joints; a root free flyer moves neither): the passes keep aba's numbers."""
    return (uncoupled(tree) and tree.nv <= MASS_MATRIX_SOLVE_UP_TO_NV
            and all(configuration.configuration_space(b) == "vector" or b.parent < 0
                    for b in tree.bodies)
            and checks.factors_are_accurate(tree))


def referenced(name, inputs, output, recursion, doc, aliases=(), by_default=None,
               forms=("unrolled",), in_all=None):
    """One spec per reference of frames.REFERENCES, the default (local_world_aligned) under
    `name` and the others as `name_local`, `name_world`: the generated Python `name` takes
    reference= and calls the one asked for. output: an Argument, or a tuple of them."""
    out = []
    outputs = output if isinstance(output, tuple) else (output,)
    for ref in frames.REFERENCES:
        suffix = "" if ref == frames.REFERENCES[0] else f"_{ref}"
        out.append(FunctionSpec(name + suffix, inputs, outputs, partial(recursion, reference=ref),
                                f"{doc}, reference {ref} ({frames.REFERENCE_MEANINGS[ref]})",
                                tuple(a + suffix for a in aliases),
                                forms, variant=(name, (("reference", ref, frames.REFERENCES[0]),)),
                                by_default=by_default, in_all=in_all))
    return out

FUNCTIONS = {f.name: f for f in [
    FunctionSpec("forward_dynamics", (Q, QD, _in("tau", doc="joint forces")),
                 (_in("qdd", doc="acceleration"),), recursions.forward_dynamics,
                 "qdd = M(q)^-1 (tau - h(q, qd)), Si & Guenter passes 1-6", ("fd",),
                 ("unrolled", "method2"),
                 alternatives=(Alternative(recursions.forward_dynamics_by_mass_matrix,
                                           "qdd = M(q)^-1 (tau - h(q, qd)), Si & Guenter passes "
                                           "1-3, M by composite rigid bodies, solved by its sparse "
                                           "LTDL factors (Featherstone 6.2, 6.5)", factors_apply),
                               Alternative(newton_euler.forward_dynamics_by_mass_matrix,
                                           "qdd = M(q)^-1 (tau - h(q, qd)), h by " + NEWTON_EULER
                                           + ", M by composite rigid bodies, solved by its sparse "
                                           "LTDL factors (Featherstone 6.2, 6.5)",
                                           factors_and_newton_euler_apply)),
                 with_mimic=True,
                 coupled_doc="qdd = M_r^-1 (tau - h_r) in the independent coordinates: Si & "
                             "Guenter passes 1-3 and the composite-inertia M on the full tree, "
                             "M_r = G^T M G through the coupling G, solved by its LDL^T",
                 joint_space=True),
    FunctionSpec("inverse_dynamics", (Q, QD, _in("qdd", doc="acceleration")),
                 (_in("tau", doc="joint forces"),), recursions.inverse_dynamics,
                 "tau = M(q) qdd + h(q, qd), recursive Newton-Euler (S&G passes 1-3)", ("id",),
                 alternatives=(Alternative(newton_euler.inverse_dynamics,
                                           "tau = M(q) qdd + h(q, qd), " + NEWTON_EULER,
                                           newton_euler.applies),),
                 with_mimic=True,
                 joint_space=True),
    FunctionSpec("mass_matrix", (Q,), (Argument("M", ("nv", "nv"), "mass matrix"),),
                 recursions.mass_matrix, "M(q), row-major nv x nv, composite rigid bodies",
                 ("mass",), ("unrolled", "mass_loop"), with_mimic=True,
                 joint_space=True),
    FunctionSpec("bias_forces", (Q, QD), (_in("h", doc="bias forces"),), recursions.bias_forces,
                 "h(q, qd) = C(q, qd) qd + phi(q), so that M qdd + h = tau", ("bias",),
                 alternatives=(Alternative(newton_euler.bias_forces,
                                           "h(q, qd) = C(q, qd) qd + phi(q), " + NEWTON_EULER,
                                           newton_euler.applies),),
                 with_mimic=True,
                 joint_space=True),
    FunctionSpec("static_forces", (Q,), (_in("g", doc="static joint forces"),),
                 recursions.static_forces,
                 "g(q) = h(q, 0): the joint forces that hold q at rest (gravity, springs, body "
                 "wrenches)", ("gravity", "static"),
                 alternatives=(Alternative(newton_euler.static_forces,
                                           "g(q) = h(q, 0), " + NEWTON_EULER,
                                           newton_euler.applies),),
                 with_mimic=True,
                 joint_space=True),
    FunctionSpec("kinetic_energy", (Q, QD), (Argument("T", (), "kinetic energy"),),
                 recursions.kinetic_energy, "T(q, qd) = 1/2 qd^T M(q) qd, from the body twists",
                 ("ke",), with_mimic=True,
                 joint_space=True),
    FunctionSpec("potential_energy", (Q,), (Argument("V", (), "potential energy"),),
                 recursions.potential_energy,
                 "V(q): gravity (-sum m g . c, world centres of mass) plus joint springs",
                 ("pe",), with_mimic=True),
    FunctionSpec("center_of_mass", (Q,), (Argument("com", (3,), "centre of mass (world)"),),
                 recursions.center_of_mass, "the whole tree's centre of mass in world coordinates",
                 ("com",), with_mimic=True),
    FunctionSpec("com_jacobian", (Q,), (Argument("Jcom", (3, "nv"), "centre of mass Jacobian"),),
                 frames.com_jacobian, "d com / d v (world): the centre of mass's velocity is "
                 "Jcom qd; row-major 3 x nv", ("jcom",),
                 by_default=uncoupled),
    FunctionSpec("centroidal_momentum_matrix", (Q,),
                 (Argument("Ag", (6, "nv"), "centroidal momentum matrix"),),
                 centroidal.centroidal_momentum_matrix,
                 "A_G(q) with h_G = A_G qd, rows [k; l]: angular momentum about the centre of mass "
                 "(world axes), then linear momentum; row-major 6 x nv", ("ag",),
                 by_default=uncoupled),
    FunctionSpec("centroidal_momentum", (Q, QD),
                 (Argument("hg", (6,), "centroidal momentum [k; l]"),),
                 centroidal.centroidal_momentum,
                 "h_G = [k; l]: the angular momentum about the centre of mass (world axes) and the "
                 "linear momentum", ("hg",), by_default=uncoupled),
    FunctionSpec("centroidal_momentum_rate", (Q, QD, QDD),
                 (Argument("dhg", (6,), "rate of the centroidal momentum [dk/dt; dl/dt]"),),
                 centroidal.centroidal_momentum_rate,
                 "dh_G/dt = A_G qdd + dA_G/dt qd (at qdd = 0: the centroidal drift dA_G/dt qd)",
                 ("dhg",), by_default=uncoupled),
    FunctionSpec("frame_placements", (Q,),
                 (Argument("oMf", ("nframes", 4, 4), "frame placements"),),
                 frames.frame_placements,
                 "the world placement [[R, p], [0, 1]] of every frame (frame_names)",
                 ("placements",),
                 by_default=uncoupled),
    FunctionSpec("integrate", (Q, _in("v", doc="velocity"), Argument("dt", (), "time step")),
                 (_in("q_next", "nq", "configuration reached"),), configuration.integrate,
                 "q (+) v dt on each joint's configuration space (quaternions: q exp(v dt))",
                 ("int",), with_mimic=True),
    FunctionSpec("difference", (_in("q0", "nq", "configuration"), _in("q1", "nq", "configuration")),
                 (_in("v", doc="velocity"),), configuration.difference,
                 "q1 (-) q0: the v with integrate(q0, v, 1) = q1", ("diff",), with_mimic=True),
    FunctionSpec("integrate_jacobians",
                 (Q, _in("v", doc="velocity"), Argument("dt", (), "time step")),
                 (Argument("dqnext_dq", ("nv", "nv"), "d(q (+) v dt)/dq (tangent spaces)"),
                  Argument("dqnext_dv", ("nv", "nv"), "d(q (+) v dt)/dv")),
                 configuration.integrate_jacobians,
                 "the Jacobians of integrate in the tangent spaces, row-major nv x nv each "
                 "(Pinocchio's dIntegrate ARG0, ARG1 at dt = 1; joint blocks: Ad exp(v dt)^-1 "
                 "and dt J_r(v dt))", ("dint",), by_default=on_a_manifold,
                 said_when_left_out=False, with_mimic=True),          # (elsewhere I and dt I)
    FunctionSpec("difference_jacobians", (_in("q0", "nq", "configuration"),
                                          _in("q1", "nq", "configuration")),
                 (Argument("dv_dq0", ("nv", "nv"), "d(q1 (-) q0)/dq0 (tangent spaces)"),
                  Argument("dv_dq1", ("nv", "nv"), "d(q1 (-) q0)/dq1")),
                 configuration.difference_jacobians,
                 "the Jacobians of difference in the tangent spaces, row-major nv x nv each "
                 "(Pinocchio's dDifference ARG0, ARG1; joint blocks: -J_r(-v)^-1 and J_r(v)^-1)",
                 ("ddiff",), by_default=on_a_manifold, said_when_left_out=False, with_mimic=True),
    *referenced("frame_jacobians", (Q,), Argument("J", ("nframes", 6, "nv"), "frame Jacobians"),
                frames.frame_jacobians, "J_f with twist [w; v] = J_f qd, every frame",
                ("jacobians",),
                few_frame_columns, ("unrolled", "frame_loop")),
    *referenced("frame_velocities", (Q, QD), Argument("vf", ("nframes", 6), "frame twists [w; v]"),
                frames.frame_velocities, "the twist [w; v] of every frame", ("velocities",),
                uncoupled),
    *referenced("frame_accelerations", (Q, QD, QDD),
                Argument("af", ("nframes", 6), "classical accelerations [dw/dt; a]"),
                frames.frame_accelerations,
                "the classical acceleration [dw/dt; a] of every frame (a: of the frame's "
                "origin; reference world: of the body point at the world origin)",
                ("accelerations",), uncoupled),
    *referenced("frame_velocity_derivatives", (Q, QD),
                (Argument("dv_dq", ("nframes", 6, "nv"), "d twist / dq (tangent space)"),
                 Argument("dv_dqd", ("nframes", 6, "nv"), "d twist / dqd (the Jacobian)")),
                derivatives.frame_velocity_derivatives,
                "d/dq and d/dqd of every frame's twist [w; v] (q columns along integrate(q, v)), "
                "by forward mode; Pinocchio's getFrameVelocityDerivatives, but in "
                "local_world_aligned, where Pinocchio holds the frame's origin fixed (README: "
                "Frames)",
                ("fvd",), named_only, in_all=straight_line_fits),
    *referenced("frame_acceleration_derivatives", (Q, QD, QDD),
                (Argument("da_dq", ("nframes", 6, "nv"), "d classical acceleration / dq"),
                 Argument("da_dqd", ("nframes", 6, "nv"), "d classical acceleration / dqd"),
                 Argument("da_dqdd", ("nframes", 6, "nv"), "d classical acceleration / dqdd")),
                derivatives.frame_acceleration_derivatives,
                "d/dq, d/dqd and d/dqdd of every frame's classical acceleration [dw/dt; a] "
                "(q columns along integrate(q, v); a contact's p'' = 0 linearised), by forward "
                "mode; in local_world_aligned the frame's origin moves with q (README: Frames)",
                ("fad",), named_only, in_all=straight_line_fits),
    FunctionSpec("mass_matrix_inverse", (Q,),
                 (Argument("Minv", ("nv", "nv"), "inverse mass matrix"),),
                 derivatives.mass_matrix_inverse,
                 "M(q)^-1, row-major nv x nv: L^-1 D^-1 L^-T of the mass matrix (Featherstone "
                 "6.5); in loop form the articulated-body columns (Carpentier 2018)", ("minv",),
                 ("unrolled", "minv_loop"),
                 by_default=few_coordinates, with_mimic=True,
                 joint_space=True),
    FunctionSpec("inverse_dynamics_derivatives", (Q, QD, QDD),
                 (Argument("dtau_dq", ("nv", "nv"), "d tau / d q (tangent space: nv columns)"),
                  Argument("dtau_dqd", ("nv", "nv"), "d tau / d qd"),
                  Argument("M", ("nv", "nv"), "d tau / d qdd, the mass matrix")),
                 derivatives.inverse_dynamics_derivatives,
                 "d tau/dq, d tau/dqd and M at (q, qd, qdd), row-major nv x nv each (Carpentier & "
                 "Mansard 2018; q columns along integrate(q, v), as Pinocchio's)",
                 ("id_derivatives", "idd"), ("unrolled", "pair_loop"),
                 by_default=few_coordinates,
                 joint_space=True),
    FunctionSpec("euler_step",
                 (Q, QD, _in("tau", doc="joint forces"), Argument("dt", (), "time step")),
                 (_in("q_next", "nq", "configuration after the step"),
                  _in("qd_next", doc="velocity after the step")), discrete.euler_step,
                 "one semi-implicit Euler step of length dt: qd' = qd + dt FD(q, qd, tau), q' = q "
                 "(+) qd' dt on the joints' manifolds (Crocoddyl's IntegratedActionModelEuler)",
                 ("step",), by_default=named_only, with_mimic=True,
                 joint_space=True),
    FunctionSpec("euler_step_derivatives",
                 (Q, QD, _in("tau", doc="joint forces"), Argument("dt", (), "time step")),
                 (Argument("Fx", ("nx", "nx"), "d(q', qd')/d(q, qd) (tangent spaces)"),
                  Argument("Fu", ("nx", "nv"), "d(q', qd')/d tau")),
                 discrete.euler_step_derivatives,
                 "the Jacobians of euler_step, row-major: Fx = d(q', qd')/d(q, qd), 2nv x 2nv, "
                 "and Fu = d(q', qd')/d tau, 2nv x nv, q rows and columns in the tangent space "
                 "(Crocoddyl's Fx, Fu), by the chain rule through the forward dynamics' "
                 "derivatives and integrate's Jacobians", ("step_derivatives",),
                 ("unrolled", "chained"), by_default=named_only,
                 calls=(("forward_dynamics_derivatives", ("q", "qd", "tau")),
                        ("forward_dynamics", ("q", "qd", "tau"))),
                 after_calls=discrete.euler_step_derivatives_after_calls,
                 after_loop=discrete.chain_rule_blocks,
                 joint_space=True),
    FunctionSpec("forward_dynamics_derivatives", (Q, QD, _in("tau", doc="joint forces")),
                 (Argument("dqdd_dq", ("nv", "nv"), "d qdd / d q (tangent space: nv columns)"),
                  Argument("dqdd_dqd", ("nv", "nv"), "d qdd / d qd"),
                  Argument("Minv", ("nv", "nv"), "d qdd / d tau, the inverse mass matrix")),
                 derivatives.forward_dynamics_derivatives,
                 "d qdd/dq, d qdd/dqd and M^-1 at (q, qd, tau), row-major nv x nv each: "
                 "-M^-1 d tau/dx at qdd = FD(q, qd, tau) (Carpentier & Mansard 2018; q "
                 "columns along integrate(q, v), as Pinocchio's)",
                 ("fd_derivatives", "fdd"), ("unrolled", "product_loop"),
                 by_default=few_coordinates,
                 joint_space=True),
]}



# ---- the dynamics under external wrenches: Pinocchio's aba, rnea and their derivatives with fext
FEXT = Argument("fext", ("nwrenches", 6), "external wrenches: row k, [n; f] on frame k of "
                "wrench_frame_names, in that frame's axes about its origin")


FEXT_WORLD = Argument("fext", ("nwrenches", 6), "external wrenches: row k, [n; f] on frame k "
                      "of wrench_frame_names, in world axes about the frame's origin")


def with_external_wrenches(spec):
    """`spec` with the input fext (FEXT) after its own: the wrenches join the bodies' constant
    ones (frames.with_external_wrenches), in the one recursion. Generated when named."""
    fext = ("; with the external wrenches fext on the frames ([n; f] in each frame's axes "
            "about its origin, turning with it: Pinocchio's fext)")
    return replace(spec, name=f"{spec.name}_fext", inputs=spec.inputs + (FEXT,),
                   doc=spec.doc + fext,
                   coupled_doc=spec.coupled_doc and spec.coupled_doc + fext,
                   aliases=tuple(f"{a}_fext" for a in spec.aliases),
                   forms=tuple(f for f in spec.forms if f not in ("method2", "chained")),
                   calls=(), after_calls=None, after_loop=None,   # (calls take no fext)
                   by_default=named_only, acts_on_tree=frames.acts_in_own_axes)


def with_world_aligned_wrenches(spec, recursion=None):
    """`spec` with fext in world axes at the frames' origins (FEXT_WORLD, local_world_aligned):
    a force that keeps its direction in the world while its frame moves, as contact forces do.
    The dynamics turn it into the frames' axes at q (frames.world_aligned_wrenches); the
    derivatives (their own recursion: derivatives.*_world_aligned_fext) add what that turning
    contributes. Straight-line code only. Generated when named."""
    fext = ("; with the external wrenches fext on the frames ([n; f] in world axes about each "
            "frame's origin, keeping their direction as the frames move: contact forces)")
    return replace(spec, name=f"{spec.name}_fext_local_world_aligned",
                   inputs=spec.inputs + (FEXT_WORLD,), doc=spec.doc + fext,
                   coupled_doc=spec.coupled_doc and spec.coupled_doc + fext,
                   aliases=tuple(f"{a}_fext_lwa" for a in spec.aliases), forms=("unrolled",),
                   calls=(), after_calls=None, after_loop=None,
                   alternatives=() if recursion else spec.alternatives,
                   recursion=recursion or spec.recursion, by_default=named_only,
                   with_mimic=False, acts_on_tree=None if recursion else frames.acts_in_world_axes,
                   in_all=straight_line_fits if recursion else spec.in_all)


def step_derivatives_with_external_wrenches(world_axes):
    """euler_step_derivatives with fext (in the frames' axes or in world axes), and a third
    output, d(q', qd')/dfext."""
    spec = (with_world_aligned_wrenches if world_axes else with_external_wrenches)(
        FUNCTIONS["euler_step_derivatives"])
    chained = {
        "forms": ("unrolled", "chained"), "in_all": straight_line_fits,
        "before_calls": derivatives.world_aligned_fext_before_calls,
        "after_calls": partial(discrete.euler_step_derivatives_fext_after_calls, world_axes=True),
        "calls": tuple((f"{name}_fext", ("q", "qd", "tau", "b_fext"))
                       for name in ("forward_dynamics_derivatives", "forward_dynamics"))
    } if world_axes else {
        "forms": ("unrolled", "chained"), "in_all": straight_line_fits,
        "after_calls": discrete.euler_step_derivatives_fext_after_calls,
        "calls": tuple((f"{name}_fext", ("q", "qd", "tau", "fext"))
                       for name in ("forward_dynamics_derivatives", "forward_dynamics"))}
    return replace(spec, **{
        "outputs": spec.outputs + (
            Argument("Ff", ("nx", "nwrenches", 6), "d(q', qd')/d fext (tangent space)"),),
        "recursion": partial(discrete.euler_step_derivatives_fext, world_axes=world_axes),
        "doc": spec.doc + "; and Ff = d(q', qd')/d fext, 2nv x nwrenches x 6", "acts_on_tree": None,
        "alternatives": (), "forms": ("unrolled",), "calls": (), "after_calls": None,
        "after_loop": None, **chained})


FUNCTIONS.update((f.name, f) for f in map(with_external_wrenches, [
    FUNCTIONS["forward_dynamics"], FUNCTIONS["inverse_dynamics"],
    FUNCTIONS["forward_dynamics_derivatives"], FUNCTIONS["inverse_dynamics_derivatives"],
    FUNCTIONS["euler_step"]]))
FUNCTIONS.update((f.name, f) for f in [
    step_derivatives_with_external_wrenches(False), step_derivatives_with_external_wrenches(True),
    with_world_aligned_wrenches(FUNCTIONS["euler_step"]),
    with_world_aligned_wrenches(FUNCTIONS["forward_dynamics"]),
    with_world_aligned_wrenches(FUNCTIONS["inverse_dynamics"]),
    replace(with_world_aligned_wrenches(
                FUNCTIONS["forward_dynamics_derivatives"],
                derivatives.forward_dynamics_derivatives_world_aligned_fext),
            forms=("unrolled", "chained"), in_all=straight_line_fits,
            before_calls=derivatives.world_aligned_fext_before_calls,
            calls=(("forward_dynamics_derivatives_fext", ("q", "qd", "tau", "b_fext")),),
            after_calls=derivatives.forward_dynamics_derivatives_world_aligned_after_calls),
    with_world_aligned_wrenches(FUNCTIONS["inverse_dynamics_derivatives"],
                                derivatives.inverse_dynamics_derivatives_world_aligned_fext)])

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

    @staticmethod
    def in_all(tree):
        """functions="all" takes a family only up to ONE_FRAME_FUNCTIONS_UP_TO_FRAMES frames,
        as the defaults do (an outside tester's RC1000 "all": 10,039 functions, 11.6 GB after
        the first 1,038 were unrolled); named, they are generated at any size."""
        return few_frames(tree)

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
                    f"{self.doc} of frame {f.name}"
                    + (f", reference {ref} ({frames.REFERENCE_MEANINGS[ref]})" if ref else ""),
                    variant=(self.name, options)))
        return specs


FRAME_FUNCTIONS = {f.name: f for f in [
    FrameFunction("frame_placement", "frame_placements", frames.frame_placements, False,
                  "the world placement [[R, p], [0, 1]]", few_frames),
    FrameFunction("frame_jacobian", "frame_jacobians", frames.frame_jacobians, True,
                  "J with twist [w; v] = J qd", few_frames),
    # one frame's twist and classical acceleration: generated when named (--functions
    # frame_velocity,frame_acceleration), three references each would double the default code
    FrameFunction("frame_velocity", "frame_velocities", frames.frame_velocities, True,
                  "the twist [w; v]", named_only),
    FrameFunction("frame_acceleration", "frame_accelerations", frames.frame_accelerations, True,
                  "the classical acceleration [dw/dt; a] (a: of the frame's origin; reference "
                  "world: of the body point at the world origin)", named_only),
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
