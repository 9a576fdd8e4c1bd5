"""Unrolls the recursions for one model into straight-line programs (S&G Method I).

The recursion code of scleron.dynamics is run on program Vars instead of floats: every
scalar operation becomes a node of a Program, with the model's constants folded in.
"""
from dataclasses import dataclass, field
from types import SimpleNamespace

from .dynamics import recursions
from .dynamics.tree import Tree
from .functions import FUNCTIONS, function_spec
from .program import Program, ProgramAlgebra


@dataclass
class FunctionCode:
    """How one function's code is shaped for a backend: form "unrolled" (program computes the
    outputs), "method2" (program = the prologue of S&G Method II, loops = its Method2 tables and
    kernels) or "mass_loop" (program = the world-frame columns, loops = the MassLoop ranges)."""
    spec: object
    form: str
    program: Program
    sizes: dict
    loops: object = None

    @property
    def programs(self):
        """Every program whose nodes end up in the generated code."""
        extra = [k for c in self.loops.classes for k in c.kernels.values()] if self.form == "method2" else []
        return [self.program] + extra


def function_code(tree, spec, prefix, form="unrolled"):
    """The FunctionCode of a spec in a form (unrolled, method2, mass_loop)."""
    sizes = {"nq": tree.nq, "nv": tree.nv}
    if form == "method2":
        m2 = unroll_method2(tree, prefix)
        return FunctionCode(spec, form, m2.prologue, sizes, m2)
    if form == "mass_loop":
        ml = unroll_mass_loop(tree, prefix)
        return FunctionCode(spec, form, ml.prologue, sizes, ml)
    return FunctionCode(spec, form, spec.program(tree, prefix), sizes)


def unroll(tree, function):
    """The Program of one function (a name or alias of scleron.functions.FUNCTIONS) for one tree."""
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    return function_spec(function).program(tree)


# ---- Method II: passes 4-6 as numeric loops over bodies (S&G section 4) -------------------------
# Passes 1-3 stay unrolled (the "prologue"); they also store, per body, the entries of its joint
# transform (placement and Q(q) combined) and of S that are not structurally 0, 1 or -1. Passes
# 4-6 become loops in C over the bodies; each iteration calls a small kernel: the per-body step
# of scleron.dynamics.recursions, unrolled once on symbolic inputs for every joint class (bodies
# whose transform and S have the same pattern of structural 0/1/-1 and the same root-ness).
STRUCTURAL = (0.0, 1.0, -1.0)


@dataclass
class JointClass:
    index: int
    key: tuple
    dof: int
    root: bool
    pattern: tuple            # per entry of (R, t, S): the folded constant, or None (stored)
    kernels: dict = field(default_factory=dict)    # "articulated_inertia" ... -> Program

    @property
    def kin_size(self):
        return sum(p is None for p in self.pattern)


@dataclass
class Method2:
    prologue: Program          # inputs q, qd, tau; outputs kin (per body), tb (tau_bar)
    classes: list
    bodies: list               # per body: dict(parent, cls, koff, qs, dof, loff, name)
    nkin: int
    nl: int                    # stored LDL^T factors, all bodies
    inertia: list              # per body: the 21 upper-triangle entries of its spatial inertia


def sym_index(r, c):
    """Position of entry (r, c) of a symmetric 6x6 matrix in its 21-entry row-major upper triangle."""
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


def _stored_solver(prog, d):
    """The LDL^T factors of Omega read back from L[] (strict lower part by rows, then 1/d)."""
    L = [[0.0] * d for _ in range(d)]
    k = 0
    for i in range(d):
        for j in range(i):
            L[i][j] = prog.input("L", k)
            k += 1
    return recursions.SPDSolver.from_factors(L, [prog.input("L", k + i) for i in range(d)])


def _solver_entries(solver):
    d = solver.n
    return [solver.L[i][j] for i in range(d) for j in range(i)] + list(solver.inv_d)


def _class_kernels(name, cls):
    d = cls.dof
    body = SimpleNamespace(parent=-1 if cls.root else 0, placement=None, dof=d)
    out = {}

    prog = Program(f"{name}_k{cls.index}_articulated_inertia")
    kin = _class_kinematics(prog, cls)
    prog.set_section(f"pass 4 (S&G 27-28) for joint class {cls.index}")
    U, solver, Ja = recursions.articulated_inertia_step(body, kin, _symmetric_input(prog, "J"))
    prog.set_outputs("U", [x for col in U for x in col])
    prog.set_outputs("L", _solver_entries(solver))
    if Ja is not None:
        prog.set_outputs("Jp", [Ja[r][c] for r in range(6) for c in range(r, 6)])
    out["articulated_inertia"] = prog

    prog = Program(f"{name}_k{cls.index}_articulated_bias")
    kin = _class_kinematics(prog, cls)
    prog.set_section(f"pass 5 (S&G 31-33) for joint class {cls.index}")
    U = [prog.input_vector("U", 6 * d)[6 * c:6 * c + 6] for c in range(d)]
    cbar, zp = recursions.articulated_bias_step(body, kin, U, _stored_solver(prog, d),
                                               prog.input_vector("tb", d), prog.input_vector("z", 6))
    prog.set_outputs("cb", cbar)
    if zp is not None:
        prog.set_outputs("zp", zp)
    out["articulated_bias"] = prog

    prog = Program(f"{name}_k{cls.index}_joint_acceleration")
    kin = _class_kinematics(prog, cls)
    prog.set_section(f"pass 6 (S&G 34-35) for joint class {cls.index}")
    U = [prog.input_vector("U", 6 * d)[6 * c:6 * c + 6] for c in range(d)]
    eta_parent = None if cls.root else prog.input_vector("ep", 6)
    qdd, eta = recursions.joint_acceleration_step(body, kin, U, _stored_solver(prog, d),
                                                  prog.input_vector("cb", d), eta_parent)
    prog.set_outputs("qdd", qdd)
    prog.set_outputs("e", eta)
    out["joint_acceleration"] = prog
    return out


def unroll_method2(tree, name=None):
    """Forward dynamics by S&G Method II: the unrolled prologue, one kernel set per joint class
    and the tables the C loops walk."""
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    name = name or tree.name
    prog = Program(f"{name}_forward_dynamics")
    alg = ProgramAlgebra(prog)
    q, qd, tau = (prog.input_vector(a, tree.nv) for a in ("q", "qd", "tau"))
    kins = recursions.joint_kinematics(tree, alg, q, qd)
    tau_bar = recursions.tau_bar_pass(tree, alg, kins, q, qd, tau)
    classes, by_key, bodies, stored = [], {}, [], []
    nl = 0
    for b, kin in zip(tree.bodies, kins):
        alg.section(f"Method II: transform and S of joint {b.joint_name} for the loops",
                    "Method II: transform and S for the loops", b.index)
        entries = _entries(*recursions.joint_transform(b, kin), kin[2])
        pattern = _pattern(entries)
        key = (b.parent < 0, b.dof, pattern)
        if key not in by_key:
            by_key[key] = JointClass(len(classes), key, b.dof, b.parent < 0, pattern)
            classes.append(by_key[key])
        cls = by_key[key]
        bodies.append({"parent": b.parent, "cls": cls.index, "koff": len(stored), "qs": b.q_start,
                       "dof": b.dof, "loff": nl, "name": b.name})
        stored += [x for x, p in zip(entries, pattern) if p is None]
        nl += ldl_size(b.dof)
    prog.set_outputs("kin", stored)
    prog.set_outputs("tb", tau_bar)
    for cls in classes:
        cls.kernels = _class_kernels(name, cls)
    inertia = [[b.inertia[r][c] for r in range(6) for c in range(r, 6)] for b in tree.bodies]
    return Method2(prog, classes, bodies, len(stored), nl, inertia)


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

    def loop_counts(self):
        """Operations of the loops per call: one 6-term dot product per entry."""
        from .program import OpCounts
        n = sum(e - f for _, f, e in self.upper) + sum(e - f for _, f, e in self.lower)
        return OpCounts(mul=6 * n, add=5 * n)


def _ranges(cols):
    out = []
    for c in cols:
        if out and out[-1][1] == c:
            out[-1][1] = c + 1
        else:
            out.append([c, c + 1])
    return [tuple(x) for x in out]


def unroll_mass_loop(tree, name=None):
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    prog = Program(f"{name or tree.name}_mass_matrix")
    alg = ProgramAlgebra(prog)
    Sw, Fw = recursions.world_columns(tree, alg, prog.input_vector("q", tree.nv))
    prog.set_outputs("Sw", [Sw[c][k] for k in range(6) for c in range(tree.nv)])
    prog.set_outputs("Fw", [Fw[c][k] for k in range(6) for c in range(tree.nv)])
    upper_of = recursions.ancestor_ranges(tree)
    upper = [(r, first, end) for r, rr in enumerate(upper_of) for first, end in rr]
    below = [[] for _ in range(tree.nv)]
    for r, first, end in upper:
        for c in range(max(first, r + 1), end):
            below[c].append(r)
    lower = [(c, first, end) for c in range(tree.nv) for first, end in _ranges(below[c])]
    return MassLoop(prog, upper, lower)
