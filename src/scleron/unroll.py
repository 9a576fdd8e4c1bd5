"""Unrolls the recursions for one model into straight-line programs, in the code forms of FORMS
(S&G Method I straight-line code, Method II loops, the loop and chained forms).

The recursion code of scleron.dynamics is run on program Vars instead of floats: every
scalar operation becomes a node of a Program, with the model's constants folded in.
"""
from collections import namedtuple
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from weakref import WeakKeyDictionary

from .dynamics import derivatives, frames, recursions
from .dynamics.regroup import regrouped
from .dynamics.tree import Tree
from .functions import FUNCTIONS, flatten, function_spec, model_sizes
from .program import OpCounts, Program, ProgramAlgebra


@dataclass
class FunctionCode:
    """How one function's code is shaped for a backend: its form (a key of FORMS), the program
    (the outputs, or a loop form's prologue) and the form's loops (None where unrolled: the
    Method2 tables and kernels, a MassLoop, ProductLoop, PairLoop, MinvLoop, FrameLoop, or the
    chained form's Chain: the calls, an optional ChainRule)."""
    spec: object
    form: str
    program: Program
    sizes: dict
    loops: object = None

    @property
    def description(self):
        return FORMS[self.form].words(self.loops)

    @property
    def programs(self):
        """Every program whose nodes end up in the generated code."""
        return [self.program] + FORMS[self.form].more_programs(self.loops)


def code_tree(tree, spec):
    """The tree a function's code is built on: for a function of the joint-space dynamics
    (FunctionSpec.joint_space) on an uncoupled tree, the same tree on the base inertial
    parameters (dynamics.regroup: the same outputs, fewer constants to multiply by), else the
    tree itself. Its numeric reference (FunctionSpec.evaluate) keeps the tree's own inertias."""
    if not spec.joint_space or tree.coupling is not None:
        return tree
    if tree not in _BASE_PARAMETERS:    # (once per tree; a copy of it, e.g. with fext on its
        _BASE_PARAMETERS[tree] = regrouped(tree)        # bodies, is another key)
    return _BASE_PARAMETERS[tree]


_BASE_PARAMETERS = WeakKeyDictionary()


def function_code(tree, spec, prefix, form="unrolled"):
    """The FunctionCode of a spec in one of the forms of FORMS, on its code_tree."""
    shape = FORMS[form]
    tree = code_tree(tree, spec)
    if shape.from_tree and spec.acts_on_tree is not None:
        # (these forms unroll the recursions from the tree itself, not through the spec)
        raise ValueError(f"{spec.name}: the {form} form does not apply its inputs to the tree")
    spec_taken, program, loops = shape.unroll(tree, spec, prefix)
    return FunctionCode(spec_taken, form, program, model_sizes(tree), loops)


@dataclass(frozen=True)
class Call:
    """One generated function a chained form calls first: its name, the arrays it takes (the
    caller's inputs, or arrays made before: the before program's, an earlier call's), and the
    (C array name, entries) of each of its outputs, local arrays of the caller."""
    function: str
    inputs: tuple
    arrays: tuple


@dataclass(frozen=True)
class ChainRule:
    """The Euler step's chain rule as a C loop after the chained form's program
    (FunctionSpec.after_loop; templates/chainrule.c.j2): per body with coordinates its first
    coordinate, dof and the offset of its blocks in the program's arrays a_Iq, a_Jv (`made`,
    local); the first call's arrays (dqdd/dq, dqdd/dqd, M^-1) as `reads`."""
    nv: int
    bodies: tuple
    made: tuple
    reads: tuple

    def loop_counts(self):
        """Per row and column: 3 sums of dof products (from 0.0) and 6 products; the own
        blocks' sums."""
        n = sum(d * self.nv for _, d, _ in self.bodies)
        own = sum(d * d for _, d, _ in self.bodies)
        dofs = sum(d * d * self.nv for _, d, _ in self.bodies)
        rows = sum(d for _, d, _ in self.bodies)
        return OpCounts(mul=3 * dofs + 6 * n, add=3 * dofs + 2 * own + rows)


@dataclass(frozen=True)
class Chain:
    """The chained form (FunctionSpec.calls): a program `before` the calls (None, or its output
    arrays, local to the caller, as (name, entries) in `made`), the Calls, then the
    FunctionCode's own program, and after it the ChainRule loop where the spec has one."""
    before: object
    made: tuple
    calls: tuple
    rule: object = None

    def loop_counts(self):
        return self.rule.loop_counts() if self.rule is not None else OpCounts()


def unroll_chained(tree, spec, name=None):
    """(spec, the program after the calls, the Chain) of a spec's chained form: spec.before_calls
    (if any) makes local arrays b_<name> from the inputs; each called function's outputs are
    arrays c<k>_<output>; the program runs spec.after_calls on the inputs and those outputs."""
    sizes = model_sizes(tree)
    prefix = f"{name or tree.name}_{spec.name}"
    before, made = None, ()
    if spec.before_calls is not None:
        before = Program(f"{prefix}_before")
        balg = ProgramAlgebra(before)
        values = spec.before_calls(tree, balg, *[before.input_vector(a.name, a.size(sizes))
                                                 for a in spec.inputs])
        for array, value in values.items():
            before.set_outputs(f"b_{array}", flatten(value))
        made = tuple((f"b_{array}", len(flatten(value))) for array, value in values.items())
    prog = Program(prefix)
    alg = ProgramAlgebra(prog)
    args = [prog.input_vector(a.name, a.size(sizes)) for a in spec.inputs]
    calls, values = [], []
    for k, (function, inputs) in enumerate(spec.calls):
        arrays = tuple((f"c{k}_{o.name}", o.size(sizes)) for o in FUNCTIONS[function].outputs)
        calls.append(Call(function, tuple(inputs), arrays))
        values += [prog.input_vector(a, n) for a, n in arrays]
    if spec.after_loop is not None:         # the outputs by the chain rule's loop
        blocks = spec.after_loop(tree, alg, *args, *values)
        for array, value in blocks.items():
            prog.set_outputs(f"a_{array}", value)
        at, bodies = 0, []
        for b in tree.bodies:
            if b.dof:
                bodies.append((b.v_start, b.dof, at))
                at += b.dof * b.dof
        rule = ChainRule(tree.nv, tuple(bodies),
                         tuple((f"a_{a}", len(v)) for a, v in blocks.items()),
                         tuple(a for a, _ in calls[0].arrays))
        return spec, prog, Chain(before, made, tuple(calls), rule)
    result = spec.after_calls(tree, alg, *args, *values)
    for out, value in zip(spec.outputs, result if len(spec.outputs) > 1 else (result,)):
        prog.set_outputs(out.name, flatten(value))
    return spec, prog, Chain(before, made, tuple(calls))


def fastest_recursion(tree, spec, prefix=None):
    """(spec, its Program): the spec's own recursion or one of its alternatives that applies to
    the tree, whichever program has the fewest estimated cycles (Program.estimated_cycles; then
    operations: program_cost); the spec returned carries the recursion and doc taken (forward
    dynamics: the articulated-body passes, or the mass matrix's factors on small arms, where the
    passes wait on their chain of divisions: docs/performance.md)."""
    best, cost = (spec, spec.program(tree, prefix)), None
    for alt in spec.alternatives:
        if not alt.applies(tree):
            continue
        other = replace(spec, recursion=alt.recursion, doc=alt.doc, alternatives=())
        program = other.program(tree, prefix)
        cost = program_cost(best[1]) if cost is None else cost
        its = program_cost(program)
        if its < cost:
            best, cost = (other, program), its
    return best


def program_cost(program):
    """(estimated cycles, operations): where two programs wait on critical paths of the same
    length (UR5's inverse dynamics: 156 cycles either way), the one with fewer operations."""
    return program.estimated_cycles(), program.op_counts().total


def unroll_straight_line(tree, spec, name=None):
    """(the spec taken, its program, no loops): the unrolled form, fastest_recursion."""
    spec, program = fastest_recursion(tree, spec, name)
    return spec, program, None


def unroll(tree, function):
    """The Program of one function (a name or alias of scleron.functions.FUNCTIONS) for one
    tree, as the unrolled C code computes it (fastest_recursion)."""
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    spec = function_spec(function)
    return fastest_recursion(code_tree(tree, spec), spec)[1]


# ---- Method II: passes 4-6 as numeric loops over bodies (S&G section 4) -------------------------
# Passes 1-3 stay unrolled (the "prologue"); they also store, per body, the entries of its joint
# transform (placement and Q(q) combined) and of S that are not structurally 0, 1 or -1. Passes
# 4-6 are recursions.ARTICULATED_PASSES, the same descriptions Method I runs as plain loops: here
# each pass's per-body step is unrolled once on symbolic inputs for every joint class (bodies
# whose transform and S have the same pattern of structural 0/1/-1 and the same root-ness) into
# a kernel, and the backend prints each pass as a loop over the bodies calling the kernel of the
# body's class. How each array of the passes is stored between kernels is STORAGE below.
STRUCTURAL = (0.0, 1.0, -1.0)


@dataclass(frozen=True)
class Storage:
    """How a per-body value of the passes is laid out in its C array: `per` "body" (size
    entries per body), "coords" (size entries per coordinate of the body) or "ldl" (the
    body's LDL^T factors); pack gives the entries of a value, unpack reads a value back from a
    kernel's input array (prog, array name, dof)."""
    per: str
    size: int
    pack: object
    unpack: object
    layout: str = ""         # how a reader of the C finds an entry (comments of the tables)

    def entries(self, dof):
        return (ldl_size(dof) if self.per == "ldl"
                else self.size * (dof if self.per == "coords" else 1))


def _vector_input(n=None):
    return lambda prog, array, d: prog.input_vector(array, n or d)


STORAGE = {
    "J": Storage("body", 21, lambda J: [J[r][c] for r in range(6) for c in range(r, 6)],
                 lambda prog, array, d: _symmetric_input(prog, array),
                 "21 per body: the upper triangle of its 6 x 6 spatial inertia, row by row"),
    "U": Storage("coords", 6, lambda U: [x for col in U for x in col],
                 lambda prog, array, d: [prog.input_vector(array, 6 * d)[6 * c:6 * c + 6]
                                         for c in range(d)]),
    "L": Storage("ldl", 0, lambda solver: _solver_entries(solver),
                 lambda prog, array, d: _stored_solver(prog, d, array)),
    "z": Storage("body", 6, list, _vector_input(6), "6 per body: a wrench [n; f]"),
    "e": Storage("body", 6, list, _vector_input(6), "6 per body"),
    "tb": Storage("coords", 1, list, _vector_input()),
    "cb": Storage("coords", 1, list, _vector_input()),
    "qdd": Storage("coords", 1, list, _vector_input()),
}


@dataclass
class JointClass:
    index: int
    key: tuple
    dof: int
    root: bool
    pattern: tuple            # per entry of (R, t, S): the folded constant, or None (stored)
    kernels: dict = field(default_factory=dict)    # pass label -> Kernel

    @property
    def kin_size(self):
        return sum(p is None for p in self.pattern)


@dataclass
class Kernel:
    """A pass's per-body step unrolled for one joint class. params: (array, where, is_output) in
    C order:
    kin, the reads (a parent read is named array + "p"), the writes, and for a non-root class the
    share for the parent (array + "p")."""
    program: Program
    params: list


@dataclass
class Method2:
    prologue: Program          # inputs q, qd, tau; outputs kin (per body), tb (tau_bar)
    classes: list
    bodies: list               # per body: dict(parent, cls, koff, qs, dof, loff, name)
    nkin: int
    nl: int                    # stored LDL^T factors, all bodies
    initial: dict              # array -> per body, the packed entries it starts from (J, z)
    passes: tuple = recursions.ARTICULATED_PASSES
    storage: dict = field(default_factory=lambda: STORAGE)

    def kernel(self, cls, bp):
        return self.classes[cls].kernels[bp.label]

    def loop_counts(self):
        """Operations of the loops per call: every body runs its class's kernel of each pass,
        and adds its share into its parent's entry."""
        c = OpCounts()
        for bp in self.passes:
            for b in self.bodies:
                k = self.kernel(b["cls"], bp).program.op_counts()
                for f in ("mul", "add", "neg", "fn"):
                    setattr(c, f, getattr(c, f) + getattr(k, f))
                if bp.to_parent is not None and b["parent"] >= 0:
                    c.add += STORAGE[bp.to_parent].entries(b["dof"])
        return c


def sym_index(r, c):
    """Position of entry (r, c) of a symmetric 6x6 matrix in its 21-entry row-major upper
    triangle."""
    r, c = min(r, c), max(r, c)
    return r * 6 - r * (r - 1) // 2 + (c - r)


def ldl_size(d):
    return d * (d - 1) // 2 + d


def _entries(R, t, S):
    return [x for row in R for x in row] + list(t) + [x for row in S for x in row]


def _pattern(entries):
    return tuple(x if isinstance(x, float) and x in STRUCTURAL else None for x in entries)


def _class_kinematics(prog, cls):
    """(R, t, S, None) of a joint class, entries read from the kernel's kin[] where stored."""
    vals, k = [], 0
    for p in cls.pattern:
        if p is None:
            vals.append(prog.input("kin", k))
            k += 1
        else:
            vals.append(p)
    d = cls.dof
    R = [vals[0:3], vals[3:6], vals[6:9]]
    S = [vals[12 + r * d:12 + (r + 1) * d] for r in range(6)]
    return R, vals[9:12], S, None


def _symmetric_input(prog, array):
    return [[prog.input(array, sym_index(r, c)) for c in range(6)] for r in range(6)]


def _stored_solver(prog, d, array="L"):
    """The LDL^T factors of Omega read back from L[] (strict lower part by rows, then 1/d)."""
    L = [[0.0] * d for _ in range(d)]
    k = 0
    for i in range(d):
        for j in range(i):
            L[i][j] = prog.input(array, k)
            k += 1
    return recursions.SPDSolver.from_factors(L, [prog.input(array, k + i) for i in range(d)])


def _solver_entries(solver):
    d = solver.n
    return [solver.L[i][j] for i in range(d) for j in range(i)] + list(solver.inv_d)


def _class_kernel(name, cls, bp, number):
    """The kernel of one pass for one joint class: the pass's step on symbolic inputs."""
    d = cls.dof
    body = SimpleNamespace(parent=-1 if cls.root else 0, placement=None, dof=d,
                           armature=list(cls.key[3]) or None)
    prog = Program(f"{name}_k{cls.index}_{number}")
    kin = _class_kinematics(prog, cls)
    prog.set_section(f"{bp.label} for joint class {cls.index}")
    params, args = [("kin", "kin", False)], []
    for array, where in bp.reads:
        if where == "parent" and cls.root:
            args.append(None)
            continue
        pname = array + "p" if where == "parent" else array
        args.append(STORAGE[array].unpack(prog, pname, d))
        params.append((pname, where, False))
    results = bp.step(body, kin, *args)
    for (array, where), value in zip(bp.writes, results):
        prog.set_outputs(array, STORAGE[array].pack(value))
        params.append((array, where, True))
    if bp.to_parent is not None and not cls.root:
        prog.set_outputs(bp.to_parent + "p", STORAGE[bp.to_parent].pack(results[-1]))
        params.append((bp.to_parent + "p", "share", True))
    return Kernel(prog, params)


KERNEL_NAMES = ("articulated_inertia", "articulated_bias", "joint_acceleration")


def unroll_method2(tree, spec, name=None):
    """Forward dynamics by S&G Method II: (spec, the unrolled prologue, a Method2: one kernel per
    pass and joint class, and the tables the loops walk)."""
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    name = name or tree.name
    prog = Program(f"{name}_forward_dynamics")
    alg = ProgramAlgebra(prog)
    q = prog.input_vector("q", tree.nq)
    qd, tau = (prog.input_vector(a, tree.nv) for a in ("qd", "tau"))
    kins = recursions.joint_kinematics(tree, alg, q, qd)
    tau_bar = recursions.tau_bar_pass(tree, alg, kins, q, qd, tau)
    classes, by_key, bodies, stored = [], {}, [], []
    nl = 0
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"Method II: transform and S of joint {b.joint_name} for the loops",
                    "Method II: transform and S for the loops", b.index)
        entries = _entries(*recursions.joint_transform(b, kin), kin[2])
        pattern = _pattern(entries)
        key = (b.parent < 0, b.dof, pattern, tuple(b.armature or ()))
        if key not in by_key:
            by_key[key] = JointClass(len(classes), key, b.dof, b.parent < 0, pattern)
            classes.append(by_key[key])
        cls = by_key[key]
        bodies.append({"parent": b.parent, "cls": cls.index, "koff": len(stored), "qs": b.v_start,
                       "dof": b.dof, "loff": nl, "name": b.name})
        stored += [x for x, p in zip(entries, pattern) if p is None]
        nl += ldl_size(b.dof)
    prog.set_outputs("kin", stored)
    prog.set_outputs("tb", tau_bar)
    for cls in classes:
        cls.kernels = {bp.label: _class_kernel(name, cls, bp, kname)
                       for bp, kname in zip(recursions.ARTICULATED_PASSES, KERNEL_NAMES)}
    start = recursions.articulated_state(tree, tau_bar)
    initial = {a: [STORAGE[a].pack(start[a][b.index]) for b in tree.bodies]
               for bp in recursions.ARTICULATED_PASSES if bp.to_parent for a in [bp.to_parent]}
    return spec, prog, Method2(prog, classes, bodies, len(stored), nl, initial)


# ---- the mass matrix in loop form ---------------------------------------------------------------
@dataclass
class MassLoop:
    """M by world-frame columns: the unrolled prologue writes Sw and Fw component-major (6 x nv),
    and C loops form M_rc = Sw_r . Fw_c (recursions.mass_matrix_from_world_columns): the upper
    triangle row by row over `upper` ranges (r, first, end) of columns c >= r, the lower one as
    M_cr = Fw_c . Sw_r over `lower` ranges (c, first, end) of columns r < c, every inner loop
    contiguous (vectorised; a strided mirror of the upper triangle costs more)."""
    prologue: Program
    upper: list
    lower: list
    armature: list = field(default_factory=list)    # (r, a): M_rr += a after the loops

    def loop_counts(self):
        """Operations of the loops per call: one 6-term dot product per entry (+ the armature)."""
        n = sum(e - f for _, f, e in self.upper) + sum(e - f for _, f, e in self.lower)
        return OpCounts(mul=6 * n, add=5 * n + len(self.armature))


def unroll_mass_loop(tree, spec, name=None):
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    prog = Program(f"{name or tree.name}_mass_matrix")
    alg = ProgramAlgebra(prog)
    Sw, Fw = recursions.world_columns(tree, alg, prog.input_vector("q", tree.nq))
    prog.set_outputs("Sw", [Sw[c][k] for k in range(6) for c in range(tree.nv)])
    prog.set_outputs("Fw", [Fw[c][k] for k in range(6) for c in range(tree.nv)])
    upper_of = recursions.ancestor_ranges(tree)
    upper = [(r, first, end) for r, rr in enumerate(upper_of) for first, end in rr]
    below = [[] for _ in range(tree.nv)]
    for r, first, end in upper:
        for c in range(max(first, r + 1), end):
            below[c].append(r)
    lower = [(c, first, end) for c in range(tree.nv)
             for first, end in derivatives.consecutive_runs(below[c])]
    armature = [(b.v_start + k, a) for b in tree.bodies for k, a in enumerate(b.armature or ())
                if a != 0.0]                                  # recursions.add_armature
    return spec, prog, MassLoop(prog, upper, lower, armature)


# ---- the inverse dynamics' derivatives in loop form --------------------------------------------
@dataclass
class PairLoop:
    """The entries of the derivatives between each body and its strict descendants as C loops
    (derivatives.PAIR_PRODUCTS over derivatives.related_ranges): the unrolled prologue writes
    the blocks of each body's own coordinates into the outputs and the per-coordinate vectors
    (derivatives.PAIR_VECTORS) into arrays "v_<name>", entry k of coordinate c at k * nv + c,
    so that each loop over a range of columns reads contiguous memory. Straight-line code for
    these O(nv^2) dot products leaves the instruction cache from about 18 coordinates."""
    prologue: Program
    nv: int
    ranges: dict            # derivatives.related_ranges
    products: tuple         # (output array, a array, b array, terms, ranges), PAIR_PRODUCTS named
    outputs: tuple          # the output arrays (zeroed first where the pairs leave entries unset)
    full: bool              # own blocks and pairs cover every entry (a chain)
    vectors: tuple = ()     # (array, entries per coordinate) of the per-coordinate vectors

    def loop_counts(self):
        n = sum(terms * (e - f) for _, _, _, terms, which in self.products
                for _, f, e in self.ranges[which])
        return OpCounts(mul=n, add=n - sum(len(self.ranges[w]) for *_, w in self.products))


# The pairs (coordinate of a body, coordinate of a strict descendant) from which the derivatives
# form their entries between related bodies in loops (measured, docs/derivatives.md): RC20's 190
# pairs run faster as loops (0.51x -> 0.39x of Pinocchio's computeRNEADerivatives; RC50's 1225:
# 1.24x -> 0.45x), solo12's 84 slower (straight-line code folds the free flyer's structural zeros,
# which the loops multiply: 20.6k -> 33.7k instructions).
PAIR_LOOP_FROM_PAIRS = 120


def related_pairs(tree):
    """How many entries of dtau/dq lie between a body and a strict descendant (above the
    diagonal). A coupled tree's (mimic joints) reduced coordinates form one chain: all of them."""
    if tree.coupling is not None:
        return tree.nv * (tree.nv - 1) // 2
    return sum(e - f for _, f, e in derivatives.related_ranges(tree)["down"])


def pair_loops_pay(pairs):
    return pairs >= PAIR_LOOP_FROM_PAIRS


def vector_array(name):
    return f"v_{name}"


def _pair_prologue(prog, tree, blocks, vectors, names):
    """Stores of the pair loop's prologue: the own blocks of the outputs (names: derivative ->
    output array) and the vectors, vector-entry-major. Returns a PairLoop without prologue."""
    body_of = [b.index for b in tree.bodies for _ in range(b.dof)]
    nv = tree.nv
    for key, out in names.items():
        for r in range(nv):
            for c in range(nv):
                if body_of[r] == body_of[c]:
                    prog.outputs.append((out, r * nv + c, blocks[key][r][c]))
    for name, size in derivatives.PAIR_VECTORS.items():
        prog.set_outputs(vector_array(name), [vectors[name][c][k] for k in range(size)
                                             for c in range(nv)])
    ranges = derivatives.related_ranges(tree)
    products = tuple((names[o], vector_array(a), vector_array(b), terms, which)
                     for o, a, b, terms, which in derivatives.PAIR_PRODUCTS if o in names)
    own = sum(b.dof ** 2 for b in tree.bodies)
    pairs = sum(e - f for _, f, e in ranges["down"])
    vectors = tuple((vector_array(n), k) for n, k in derivatives.PAIR_VECTORS.items())
    return PairLoop(prog, nv, ranges, products, tuple(names.values()), own + 2 * pairs == nv * nv,
                    vectors)


def _loop_prologue(tree, spec, name):
    """(tree, program, its algebra, the input arrays) of a loop form's prologue."""
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    sizes = model_sizes(tree)
    prog = Program(f"{name or tree.name}_{spec.name}")
    alg = ProgramAlgebra(prog)
    args = [prog.input_vector(a.name, a.size(sizes)) for a in spec.inputs]
    tree, args = spec.prepared(tree, alg, args)
    return tree, prog, alg, args


def unroll_pair_loop(tree, spec, name=None):
    tree, prog, alg, args = _loop_prologue(tree, spec, name)
    dq, dqd, M, vectors = derivatives.inverse_dynamics_derivative_columns(tree, alg, *args)
    names = dict(zip(("dq", "dqd", "M"), (a.name for a in spec.outputs)))
    pl = _pair_prologue(prog, tree, {"dq": dq, "dqd": dqd, "M": M}, vectors, names)
    return spec, prog, pl


# ---- the mass matrix inverse in loop form -----------------------------------------------------
# Consecutive column steps of M^-1's loop form of one kind and dof go in runs of up to this many
# (MinvLoop.grouped_steps), four columns at a time with their P (or A) in registers over the run's
# steps: one step at a time loads and stores them at every step and spends its time, over short
# ranges, in its loop's entry and in the columns short of a vector of 4. Longer runs leave fewer
# groups of columns in flight at once for the CPU to overlap. M^-1, ns per call (Xeon, best of
# 15 samples, three alternating passes), runs of 1 (one step at a time) / 3 / 4 / 6 / 8 / 12 / 16:
# RC20 1,085 / 900 / 885 / 875 / 895 / 905 / 940; RC50 4,330 / 4,170 / 4,115 / 4,030 / 3,990 /
# 4,230 / 4,430; talos_reduced floating 2,710 / 2,485 / 2,455 / 2,360 / 2,365 / 2,395 / 2,440.
RUN_STEPS = 6

# A run's C code takes its columns in blocks of up to this many groups of four (minvsteps.c.j2
# *_block kernels), their P (or A) in registers over the run's steps: the groups' chains of
# dependent multiply-adds overlap. The compiler's SCL_COLUMN_GROUPS caps it at the target: 3 with
# AVX-512's 32 vector registers, 1 with 16 (a second group spills there). A step still computes
# the columns of a block outside its range, masked off, so a run takes fewer groups where its
# blocks would compute more than RUN_GROUPS_EXTRA more (step, column) pairs than blocks of one
# group (run_groups). M^-1, ns per call (Xeon, best of 25, three alternating passes), one group
# -> three groups everywhere: RC20 863 -> 803-820, RC50 3,770-3,920 -> 3,280-3,430 (run_groups
# takes three there too); talos_reduced floating (short ranges of columns between its limbs)
# 2,341-2,385 -> 2,495-2,528, with run_groups 2,456-2,546 (within the noise of one group).
RUN_GROUPS = 3
RUN_GROUPS_EXTRA = 0.1


# The column operations of MinvLoop.steps, each a tuple whose first field names its kind (so
# that a step still compares and indexes as the plain tuple it is)
# P over [first, end); carry: P updated for a parent (not at a root)
BackwardStep = namedtuple("BackwardStep", "kind dof offset v first end carry", defaults=(True,))
# A from column v on; at_rest: A still zero there (a root), X = W
ForwardStep = namedtuple("ForwardStep", "kind dof offset v at_rest", defaults=(False,))
SaveStep = namedtuple("SaveStep", "kind slot first")
RestoreStep = namedtuple("RestoreStep", "kind slot first")
ZeroStep = namedtuple("ZeroStep", "kind first")
MirrorStep = namedtuple("MirrorStep", "kind")
# kind: backward_run, forward_run
RunStep = namedtuple("RunStep", "kind dof first end steps groups")


def run_blocks(first, end, groups):
    """The blocks of columns [a, b) a run's C code takes, in its order (minvsteps.c.j2 *_run):
    from `end` down, blocks of `groups` groups of four while they fit, then of fewer groups, then
    single columns."""
    blocks, c = [], end
    for g in range(groups, 0, -1):
        while c - first >= 4 * g:
            blocks.append((c - 4 * g, c))
            c -= 4 * g
    return blocks + [(k, k + 1) for k in range(c - 1, first - 1, -1)]


def run_work(kind, steps, first, end, groups):
    """The (step, column) pairs a run computes in blocks of `groups`: a step skips only the
    blocks wholly outside its columns (a backward step's [first, end), a forward step's v on)."""
    def active(s, a, b):
        return s.first < b and s.end > a if kind == "backward" else s.v < b
    return sum(b - a for a, b in run_blocks(first, end, groups) for s in steps if active(s, a, b))


def run_groups(kind, steps, first, end):
    """The most groups of four columns (up to RUN_GROUPS) a run's blocks take without computing
    more than RUN_GROUPS_EXTRA more (step, column) pairs than blocks of one group."""
    least = run_work(kind, steps, first, end, 1)
    return max(g for g in range(1, RUN_GROUPS + 1)
               if run_work(kind, steps, first, end, g) <= (1 + RUN_GROUPS_EXTRA) * least)


@dataclass
class MinvLoop:
    """M^-1 by derivatives.articulated_mass_matrix_inverse with its column operations as C loops:
    the unrolled prologue writes each body's D^-1 S^T, U, D^-1 U^T and S (array "mb", 24 dof entries
    per body from offset[body]: SD d x 6, U 6 x d, UD d x 6, S 6 x d, row-major), the own
    blocks of the output and the initial P (6 x nv, entry-major); `steps` are the column
    operations in order: BackwardStep ("backward", dof, offset, v, first, end, carry),
    ForwardStep ("forward", dof, offset, v, at_rest), SaveStep ("save", slot, first),
    RestoreStep ("restore", slot, first), ZeroStep ("zero", first), MirrorStep ("mirror",)."""
    output: str
    nv: int
    steps: list = field(default_factory=list)
    saves: list = field(default_factory=list)       # per slot: its first column
    dofs: set = field(default_factory=set)
    unrelated: list = field(default_factory=list)   # unrelated_upper_ranges: zeroed first

    def grouped_steps(self):
        """The steps, each run of two to RUN_STEPS consecutive "backward" (or "forward") steps of
        one dof as one ("backward_run" | "forward_run", dof, first, end, steps, groups): the C
        code takes a run in blocks of `groups` groups of four columns, their P (or A) in registers
        over all the run's steps.
        Exact: a step changes only its own columns of P, A and the output, so the columns may go
        in any order as long as each column sees the steps in theirs. [first, end): the columns
        the run touches (a forward step's: its own first on; a backward step's: its range)."""
        out = []
        for step in self.steps:
            last = out[-1] if out else None
            if step.kind in ("backward", "forward") and getattr(last, "dof", None) == step.dof:
                if last.kind == step.kind:
                    out[-1] = self._run(step.kind, [last, step])
                    continue
                if last.kind == step.kind + "_run" and len(last.steps) < RUN_STEPS:
                    out[-1] = self._run(step.kind, last.steps + [step])
                    continue
            out.append(step)
        return out

    def _run(self, kind, steps):
        if kind == "backward":
            first, end = min(s.first for s in steps), max(s.end for s in steps)
        else:
            first, end = min(s.v for s in steps), self.nv
        return RunStep(kind + "_run", steps[0].dof, first, end, steps,
                       run_groups(kind, steps, first, end))

    def single_dofs(self, kind):
        """The dofs of the `kind` steps ("backward" or "forward") left out of runs (a one-step
        kernel each; an unused kernel would be a compiler warning)."""
        return sorted({s.dof for s in self.grouped_steps() if s.kind == kind})

    def run_dofs(self, kind):
        """The dofs of the `kind` runs ("backward" or "forward"; a run kernel each)."""
        return sorted({s.dof for s in self.grouped_steps() if s.kind == kind + "_run"})

    def loop_counts(self):
        n = 0
        in_runs = {id(s) for r in self.grouped_steps() if r.kind.endswith("_run") for s in r.steps}
        for step in self.steps:
            if step.kind not in ("backward", "forward"):
                continue
            # a root's step by itself skips half its work (no P for a parent, or A = 0); a run
            # computes all of it
            half = id(step) not in in_runs and (step.kind == "backward" and not step.carry
                                                or step.kind == "forward" and step.at_rest)
            columns = step.end - step.first if step.kind == "backward" else self.nv - step.v
            n += (6 if half else 12) * step.dof * columns
        return OpCounts(mul=n, add=n)


class LoopBlocks:
    """derivatives.ColumnBlocks recorded for the loop form: the prologue's stores, and a MinvLoop
    of the steps (scleron.backends.c templates/minvloop.c.j2 runs them)."""

    def __init__(self, prog, nv, output):
        self.prog, self.nv = prog, nv
        self.loop = MinvLoop(output, nv)
        self.offset, self.used = {}, 0

    def _body(self, b, axes):
        if b.index not in self.offset:
            S, U, Dinv, SD, UD = axes
            d = b.dof
            entries = ([x for row in SD for x in row]
                       + [U[a][r] for r in range(6) for a in range(d)]
                       + [x for row in UD for x in row]
                       + [S[a][r] for r in range(6) for a in range(d)])
            for k, x in enumerate(entries):
                self.prog.outputs.append(("mb", self.used + k, x))
            self.offset[b.index] = self.used
            self.used += len(entries)
            self.loop.dofs.add(d)
        return self.offset[b.index]

    def own_columns(self, b, axes):
        self._body(b, axes)
        for c, w, p in derivatives.own_column_values(b, axes):
            for a in range(b.dof):
                self.prog.outputs.append((self.loop.output, (b.v_start + a) * self.nv + c, w[a]))
            for r in range(6):
                self.prog.outputs.append(("P", r * self.nv + c, p[r]))

    def backward(self, b, axes, first, end, carry=True):
        self.loop.steps.append(BackwardStep("backward", b.dof, self._body(b, axes), b.v_start,
                                            first, end, carry))

    def forward(self, b, axes, at_rest=False):
        self.loop.steps.append(ForwardStep("forward", b.dof, self._body(b, axes), b.v_start,
                                           at_rest))

    def zero(self, first):
        self.loop.steps.append(ZeroStep("zero", first))

    def save(self, first):
        self.loop.saves.append(first)
        self.loop.steps.append(SaveStep("save", len(self.loop.saves) - 1, first))
        return len(self.loop.saves) - 1

    def restore(self, slot, first):
        self.loop.steps.append(RestoreStep("restore", slot, first))

    def mirrored(self):
        self.loop.steps.append(MirrorStep("mirror"))
        return None


def unrelated_upper_ranges(tree):
    """(row r, first, end): the columns c of the upper triangle (right of r's own block) whose
    body is not in the subtree of r's body. The column steps write every other entry of the
    output (own blocks, W leaves to root, X root to leaves, the mirror) but read these as W = 0
    root to leaves, so only they are cleared first (none on a chain)."""
    down = [set() for _ in range(tree.nv)]
    for r, first, end in derivatives.related_ranges(tree)["down"]:
        down[r].update(range(first, end))
    out = []
    for b in tree.bodies:
        for r in range(b.v_start, b.v_start + b.dof):
            cols = [c for c in range(b.v_start + b.dof, tree.nv) if c not in down[r]]
            out += [(r, first, end) for first, end in derivatives.consecutive_runs(cols)]
    return out


def minv_loops_pay(tree):
    return pair_loops_pay(related_pairs(tree))


def unroll_minv_loop(tree, spec, name=None):
    tree, prog, alg, (q,) = _loop_prologue(tree, spec, name)
    blocks = LoopBlocks(prog, tree.nv, spec.outputs[0].name)
    blocks.loop.unrelated = unrelated_upper_ranges(tree)
    derivatives.articulated_mass_matrix_inverse(tree, alg, q, blocks)
    return spec, prog, blocks.loop


# ---- the forward dynamics' derivatives in loop form ----------------------------------------------
@dataclass
class ProductLoop:
    """dqdd/dx = -M^-1 dtau/dx (derivatives.forward_dynamics_derivatives) with the products as C
    loops: the prologue writes M^-1 (an output) and dtau/dq, dtau/dqd (row-major nv x nv,
    arrays "Dq" and "Dqd": their own blocks, the entries between related bodies then formed by
    the loops of `pairs`, a PairLoop); the loops form each output row as a sum of rows of
    dtau/dx scaled by that row of M^-1, every inner loop contiguous (vectorised). Straight-line
    code for the products grows as nv^3 and leaves the instruction cache from about 18
    coordinates."""
    prologue: Program
    nv: int
    products: tuple         # ((factor array, output name), ...)
    minv: str               # the output that holds M^-1
    pairs: PairLoop = None  # None: the prologue writes Dq, Dqd (the entries the products read)
    minv_loop: MinvLoop = None  # None: the prologue writes M^-1
    fused: bool = False     # both products' rows at once (FUSED_PRODUCTS_UP_TO_NV)
    runs: tuple = None      # per product, the runs of columns its factor's rows can have
                            # nonzero (product_column_runs); None: every row of dtau/dx full
    full_rows: bool = True  # the runs (if any) are whole rows less skipped columns: the
                            # products read the entries between unrelated bodies too (zeros)
    chain: list = None      # derivatives.chain_bodies where the products go by prefix and suffix
                            # sums of the pairs' vectors instead (CHAIN_PRODUCTS_FROM_NV)
    free: tuple = ()        # (output, index): the entries of the free roots' columns in closed
                            # form (derivatives.free_root_columns), in the order of the array
                            # "Dfree" the prologue writes, copied over the products' zeros there

    @property
    def groups(self):
        """The products formed together (indices into products): all at once where fused."""
        n = len(self.products)
        return [tuple(range(n))] if self.fused else [(b,) for b in range(n)]

    @property
    def first_full(self):
        """Row 0 of every factor has no zero (a single root's, no free root's columns taken
        out): its term sets each output row."""
        return self.runs is None or all(r and tuple(r[0]) == (0, 0, self.nv) for r in self.runs)

    def row_runs(self, products, first_row):
        """The runs (k, first, end, products) the loops over rows k >= first_row of the factors
        walk, for the given products: a run two products share is one loop over both."""
        shared = {}
        for b in products:
            for k, first, end in self.runs[b]:
                if k >= first_row:
                    shared.setdefault((k, first, end), []).append(b)
        return [(k, first, end, bs) for (k, first, end), bs in sorted(shared.items())]

    def factor_names(self, products):
        """The factors of those products in words, for the generated code's comments."""
        names = {"Dq": "dtau/dq", "Dqd": "dtau/dqd"}
        if len(products) == len(self.products):
            return "dtau/dx"
        return ", ".join(names.get(self.products[b][0], self.products[b][0]) for b in products)

    def loop_counts(self):
        n = len(self.products) * self.nv ** 3 if self.chain is None else 45 * self.nv ** 2
        counts = OpCounts(mul=n, add=n)
        for part in (self.minv_loop,) if self.chain else (self.pairs, self.minv_loop):
            if part:
                c = part.loop_counts()
                counts = OpCounts(mul=counts.mul + c.mul, add=counts.add + c.add)
        return counts


# The products walk the runs of nonzero columns of each row of dtau/dx where at most this fraction
# of its entries can be nonzero (solo12: 67 %, 32,775 -> 28,361 instructions per call); panda's
# 98 % runs more instructions by runs (13,383) than by whole rows (12,539).
RUNS_UP_TO_FILL = 0.8


def related_column_runs(tree):
    """(row k, first, end): the columns of row k of dtau/dq, dtau/dqd (and M) that can be nonzero
    -- k's own body's, its ancestors' and its descendants' (derivatives.related_ranges) -- as runs
    of consecutive columns; None when the rows are full or nearly so (a chain; panda, whose two
    fingers' columns are all its zeros), where loops over whole rows do better."""
    cols = [set() for _ in range(tree.nv)]
    for b in tree.bodies:
        own = range(b.v_start, b.v_start + b.dof)
        for r in own:
            cols[r].update(own)
    for ranges in derivatives.related_ranges(tree).values():
        for r, first, end in ranges:
            cols[r].update(range(first, end))
    if sum(len(c) for c in cols) > RUNS_UP_TO_FILL * tree.nv ** 2:
        return None
    return [(k, f, e) for k in range(tree.nv)
            for f, e in derivatives.consecutive_runs(sorted(cols[k]))]


def zero_columns(free, output):
    """The columns of dtau/dq ("dq") or dtau/dqd ("dqd") that free_root_columns took out (zero
    there; the closed form writes those columns of the derivatives)."""
    return {column for key, _, column, _ in free if key == output}


def whole_zero_bodies(tree, zero):
    """The columns of the bodies all of whose columns are among `zero`."""
    out = set()
    for b in tree.bodies:
        own = range(b.v_start, b.v_start + b.dof)
        if all(c in zero for c in own):
            out.update(own)
    return out


def product_column_runs(tree, runs, skipped):
    """The runs of related_column_runs (rows full where None) less the columns `skipped` of a
    product's factor, zero throughout: a free root's (free_root_columns, which the closed form
    writes) where they are all of a body's columns (whole_zero_bodies). solo12's dtau/dq loses
    its 6 base columns, its dtau/dqd keeps the 3 translations: the runs then still start and
    end where a body's columns do, as the related runs, and the loops keep each output row in
    registers, a few columns to a vector, which runs cut inside a body's columns cut (solo12
    fdd per call: 2,335 ns; dtau/dq's base columns left out 2,200; dtau/dqd's translations too
    2,374)."""
    rows = runs if runs is not None else [(k, 0, tree.nv) for k in range(tree.nv)]
    out = []
    for k, first, end in rows:
        kept = [c for c in range(first, end) if c not in skipped]
        out += [(k, f, e) for f, e in derivatives.consecutive_runs(kept)]
    return out


def store_runs(prog, array, rows, runs):
    """Stores the entries of an unrolled factor the products read: those in the runs (every entry
    if None). The others, between unrelated bodies, are zero and never read: no memset."""
    nv = len(rows)
    if runs is None:
        prog.set_outputs(array, [x for row in rows for x in row])
        return
    for k, first, end in runs:
        for j in range(first, end):
            prog.outputs.append((array, nv * k + j, rows[k][j]))


# Up to this many coordinates the two products share each M^-1[i][k] and keep both rows i in
# registers; above, one product after the other (one row in registers, its factor in L1). Both
# products of random dense factors, instructions per call, fused / one at a time: nv = 18 6,169 /
# 8,162, 20 6,768 / 8,444, 24 10,878 / 13,295, 28 16,328 / 19,593, 32 27,423 / 27,511, 40
# 61,951 / 49,429 (the registers run out).
FUSED_PRODUCTS_UP_TO_NV = 28

# On a chain from this many coordinates, -M^-1 dtau/dx comes from the pairs' vectors by prefix
# and suffix sums (derivatives.chain_negated_products: 45 nv^2 multiply-adds, no dtau/dx between
# bodies) instead of the pairs and the two dense products (15 nv^2 + 2 nv^3). Instructions per
# fdd call (callgrind, -Os), dense / sums: RC20 45,871 / 46,639, RC30 92,890 / 89,871, RC50
# 228,577 / 195,839 (fastest of 35 timed samples: RC20 6.4 / 6.7 us, RC30 13.2 / 12.9, RC50
# 38.2 / 31.3). What the sums cost is per coordinate and row of M^-1, stores across columns of
# the outputs included; what the products cost grows with nv^3.
CHAIN_PRODUCTS_FROM_NV = 32


def unroll_product_loop(tree, spec, name=None):
    tree, prog, alg, args = _loop_prologue(tree, spec, name)
    dq_name, dqd_name, minv_name = (a.name for a in spec.outputs)
    fused = tree.nv <= FUSED_PRODUCTS_UP_TO_NV
    runs = related_column_runs(tree)
    chain = None
    blocks = LoopBlocks(prog, tree.nv, minv_name) if minv_loops_pay(tree) else None
    if blocks:
        blocks.loop.unrelated = unrelated_upper_ranges(tree)
    if pair_loops_pay(related_pairs(tree)):
        dq, dqd, vectors, Minv, free = derivatives.forward_dynamics_derivative_columns(
            tree, alg, *args, blocks=blocks)
        pairs = _pair_prologue(prog, tree, {"dq": dq, "dqd": dqd}, vectors,
                               {"dq": "Dq", "dqd": "Dqd"})
        if tree.nv >= CHAIN_PRODUCTS_FROM_NV:
            chain = derivatives.chain_bodies(tree)
    else:
        dq, dqd, Minv, free = derivatives.forward_dynamics_derivative_factors(tree, alg, *args)
        pairs = None
    full_rows = runs is None
    skipped = [whole_zero_bodies(tree, zero_columns(free, key)) for key in ("dq", "dqd")]
    if runs is not None or any(skipped):
        runs = tuple(product_column_runs(tree, runs, s) for s in skipped)
    if pairs is None:
        store_runs(prog, "Dq", dq, None if runs is None else runs[0])
        store_runs(prog, "Dqd", dqd, None if runs is None else runs[1])
    if blocks is None:
        prog.set_outputs(minv_name, [x for row in Minv for x in row])
    names = {"dq": dq_name, "dqd": dqd_name}
    closed = [(names[key], r * tree.nv + c, value) for key, r, c, value in free
              if not derivatives.is_zero(value)]
    prog.set_outputs("Dfree", [value for _, _, value in closed])
    return spec, prog, ProductLoop(prog, tree.nv, (("Dq", dq_name), ("Dqd", dqd_name)), minv_name,
                       pairs, blocks.loop if blocks else None, fused, runs, full_rows, chain,
                       tuple((out, i) for out, i, _ in closed))


# ---- the frame Jacobians in loop form -----------------------------------------------------------
@dataclass
class FrameLoop:
    """Every frame Jacobian J_f[:, c] = A_f Sw_c (frames.frame_jacobian_factors) with the
    products as C loops: the unrolled prologue writes the world motion axes Sw (6 x nv,
    component-major: Sw[k * nv + c], as MassLoop) and, per frame, the entries of its reference
    matrix A_f that are not one constant for every frame (array "A", `stored` per frame);
    `pattern` holds per entry of A (row-major 6 x 6) that constant, or None where it is stored.
    The loops walk `ranges` (frame, first, end), the columns that move each frame, and zero
    `gaps` (frame, first, end), the others. Straight-line code for the O(frames x nv) columns
    leaves the instruction cache on long chains (RC20: 210 columns)."""
    prologue: Program
    nv: int
    nframes: int
    pattern: tuple
    ranges: list
    gaps: list

    @property
    def stored(self):
        return sum(p is None for p in self.pattern)

    def row_terms(self, r):
        """The nonzero terms of row r of A: (k, constant or None)."""
        return [(k, p) for k, p in enumerate(self.pattern[6 * r:6 * r + 6]) if p != 0.0]

    def loop_counts(self):
        """Operations of the loops per call: row r of A times Sw_c for every column that moves a
        frame (a constant +-1 costs no product)."""
        n = sum(e - f for _, f, e in self.ranges)
        mul = add = 0
        for r in range(6):
            terms = self.row_terms(r)
            mul += n * sum(p not in (1.0, -1.0) for _, p in terms)
            add += n * max(len(terms) - 1, 0)
        return OpCounts(mul=mul, add=add)


# The frame columns (frames.frame_columns: the sum over frames of the coordinates that move each)
# from which frame_jacobians takes the loop form. Measured (benchmarks/run.py, ns per call,
# straight-line / loops): RC20 (210 columns) local_world_aligned 1294 / 625, local 4140 / 1210;
# solo12 (138) 566 / 599 and 994 / 1224 (a standalone loop); panda (65) 212 / 255 and 461 / 586.
FRAME_LOOP_FROM_COLUMNS = 150


def spec_reference(spec):
    """The reference a frame function's spec is generated for (its variant's option)."""
    return dict((o, v) for o, v, _ in spec.variant[1])["reference"]


def frame_loops_pay(columns):
    """(Never without a column: a loop form over no ranges would declare arrays of size 0.)"""
    return columns > 0 and columns >= FRAME_LOOP_FROM_COLUMNS


def reference_pattern(matrices):
    """Per entry of the 6 x 6 matrices (row-major), the constant all of them share, or None."""
    out = []
    for i in range(36):
        values = [A[i // 6][i % 6] for A in matrices]
        same = all(isinstance(x, float) and x == values[0] for x in values)
        out.append(values[0] if values and same else None)
    return tuple(out)


def unroll_frame_loop(tree, spec, name=None):
    tree, prog, alg, (q,) = _loop_prologue(tree, spec, name)
    Sw, A = frames.frame_jacobian_factors(tree, alg, q, spec_reference(spec))
    prog.set_outputs("Sw", [Sw[c][k] if Sw[c] is not None else 0.0
                            for k in range(6) for c in range(tree.nv)])
    pattern = reference_pattern(A)
    prog.set_outputs("A", [Af[i // 6][i % 6] for Af in A for i in range(36) if pattern[i] is None])
    ranges, gaps = [], []
    for f, (moving, still) in enumerate(frames.frame_jacobian_ranges(tree)):
        ranges += [(f, first, end) for first, end in moving]
        gaps += [(f, first, end) for first, end in still]
    return spec, prog, FrameLoop(prog, tree.nv, len(tree.frames), pattern, ranges, gaps)


# ---- the code forms -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Form:
    """One shape of a function's code: unroll(tree, spec, prefix) -> (the spec taken, the program,
    the loops: FunctionCode), its description in words (codegen's summary, the generated docs;
    `describe`, where the loops say more, takes them), the programs besides the main one whose
    nodes end up in the code, and whether it unrolls the recursions from the tree itself rather
    than through the spec's inputs (from_tree: refused for a spec that acts on the tree);
    unrolled_by: the option that gives the unrolled form instead, for a form a user asks for."""
    description: str
    unroll: object
    from_tree: bool = False
    describe: object = None
    extra_programs: object = None
    unrolled_by: str = "the default options"

    def words(self, loops):
        return self.describe(loops) if self.describe is not None else self.description

    def more_programs(self, loops):
        return self.extra_programs(loops) if self.extra_programs is not None else []


def _method2_kernels(m2):
    return [k.program for c in m2.classes for k in c.kernels.values()]


def _chained_words(chain):
    return (f"chained: calls {', '.join(c.function for c in chain.calls)} first "
            "(their operations on their own lines)")


def _chained_before(chain):
    return [chain.before] if chain.before is not None else []


def _product_loop_words(pl):
    return ("loop form: -M^-1 dtau/dx by prefix and suffix sums along the chain" if pl.chain
            else FORMS["product_loop"].description)


FORMS = {
    "unrolled": Form("unrolled", unroll_straight_line),
    "method2": Form("Method II: passes 4-6 as loops", unroll_method2, from_tree=True,
                    extra_programs=_method2_kernels, unrolled_by="--method 1, the default"),
    "mass_loop": Form("loop form: world-frame columns, dense products", unroll_mass_loop,
                      from_tree=True, unrolled_by="--mass-matrix unrolled, or auto, the "
                                                  "default, which takes it here"),
    "product_loop": Form("loop form: -M^-1 dtau/dx as dense products", unroll_product_loop,
                         describe=_product_loop_words),
    "pair_loop": Form("loop form: entries between related bodies as dot products",
                      unroll_pair_loop),
    "minv_loop": Form("loop form: the articulated-body solve by column ranges", unroll_minv_loop),
    "frame_loop": Form("loop form: world motion axes referred to each frame", unroll_frame_loop),
    "chained": Form("chained form: calls the functions it builds on, then the rest",
                    unroll_chained, describe=_chained_words, extra_programs=_chained_before),
}
