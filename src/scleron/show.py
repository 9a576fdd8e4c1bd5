"""Views of a model and of the code scleron emits for it, for people to read.

- tree_text: the body tree with joint types and DOF per joint.
- joint_text: one joint's coordinates (meaning, chart), X_tree, Q(q), G = X_tree Q(q), S and Sdot.
- function_text: the unrolled straight-line program of one function (fd, id, mass, bias),
  grouped by recursion pass and body as the section labels of the recursions name them (with
  Si & Guenter's equation numbers), each group with its operation counts, and the totals
  before and after simplification.

"Before" counts the operations of the recursion as written, run generically: the recursion
code of scleron.dynamics evaluated on a counting scalar that counts every +, -, *, /, negation
and function call, including those with a constant 0 or 1 operand and those on the model's
constants, with the fixed placements applied even where they are the identity. "After" is the
live operations of the unrolled program (Program.op_counts: folded, hash-consed, dead code
removed) -- exactly what the generated C computes.

Every format is plain text built here; LaTeX output escapes all names from the model file, so
a name cannot inject TeX commands.
"""
import re
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
import sympy as sp

from .backends.c.printer import CStatements
from .backends.c.render import c_comment, c_identifier
from .errors import ModelError, name_list, short_name
from .dynamics.frames import REFERENCES
from .functions import FRAME_FUNCTIONS, function_spec, model_sizes
from .unroll import FORMS, code_tree, fastest_recursion
from .joints import joint_model
from .joints.registry import joint_type
from .model import WORLD
from .algebra import Algebra, Section

FORMATS = ("text", "latex", "c")


# ---- the body tree ------------------------------------------------------------------------------
def tree_text(model):
    """The body tree, one body a line under its parent, with the joint that moves it (name,
    type, DOF). Siblings hang off `├─` and the last of them off `└─`; `│` continues the
    line of a parent that has further children below."""
    children = {}
    for j in model.joints:
        children.setdefault(j.parent, []).append(j)
    nq, nv = getattr(model, "nq", model.nv), model.nv
    sizes = f"nq = nv = {nv}" if nq == nv else f"nq = {nq}, nv = {nv}"
    lines = [f"{model.name}: {len(model.bodies)} bodies, {sizes}", WORLD]
    # depth first, iteratively (a long chain must not hit the recursion limit); the stack holds
    # (joint, indent of its line, whether it is its parent's last child), next to draw on top
    stack = []

    def push(parent, indent):
        below = children.get(parent, [])
        stack.extend((j, indent, k == len(below) - 1) for k, j in reversed(list(enumerate(below))))

    push(WORLD, "")
    while stack:
        j, indent, last = stack.pop()
        branch = "└─" if last else "├─"
        lines.append(f"{indent}{branch} {j.child}  [{j.name}: {j.type}, {_dof_text(j)}]")
        push(j.child, indent + ("   " if last else "│  "))
    return "\n".join(lines)


def _dof_text(j):
    """'1 DOF', or for a coupled mimic joint what it follows (no coordinate of its own)."""
    mimic = getattr(j, "mimic", None)
    if mimic is None:
        return f"{j.dof} DOF"
    leader, a, b = mimic
    return f"mimics {leader}: q = {a:g} q_{leader}" + (
        f" {'+' if b >= 0 else '-'} {abs(b):g}" if b else "")


# ---- LaTeX helpers ------------------------------------------------------------------------------
_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&",
                "#": r"\#", "^": r"\^{}", "_": r"\_", "%": r"\%", "~": r"\~{}",
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': "''"}


def latex_text(text):
    """Any text as safe LaTeX body text: specials escaped, control and non-ASCII characters
    replaced by '?' (plain pdflatex has no glyphs for most of them)."""
    out = []
    for ch in str(text):
        if ch in _TEX_SPECIAL:
            out.append(_TEX_SPECIAL[ch])
        elif ch == "\n":
            out.append(" ")
        elif not (32 <= ord(ch) < 127):
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


LATEX_PREAMBLE = ("\\documentclass[10pt]{article}\n\\usepackage{amsmath}\n"
                  "\\setlength{\\textwidth}{16cm}\\setlength{\\oddsidemargin}{0cm}\n"
                  "\\allowdisplaybreaks\n\\setcounter{MaxMatrixCols}{20}\n\\begin{document}\n")
LATEX_END = "\\end{document}\n"


# ---- joints -------------------------------------------------------------------------------------
def _chart_text(chart, n=3, first=0):
    """The chart of n Euler angles q[first], q[first + 1], ... (numbered from 1)."""
    axes = [f"R_{a}(q{first + k + 1})" for k, a in enumerate(chart[:n])]
    if n == 2:
        return (f"chart {chart[:2]}: R = {' '.join(axes)}, intrinsic (about {chart[0]}, then the "
                f"rotated {chart[1]})")
    kind = (f"proper Euler, singular where sin q{first + 2} = 0" if chart[0] == chart[2]
            else f"Tait-Bryan, singular where cos q{first + 2} = 0")
    return (f"chart {chart}: R = {' '.join(axes)}, intrinsic (about {chart[0]}, then the rotated "
            f"{chart[1]}, then the twice-rotated {chart[2]}; read right to left: extrinsic "
            f"{chart[::-1]} about fixed axes); {kind}")


def _joint_notes(j):
    """Lines describing a joint's parameters (axis, chart, pitch, parts)."""
    p = j.params
    notes = []
    if "axis" in p:
        notes.append("axis " + " ".join(f"{x:g}" for x in p["axis"]))
    if "normal" in p:
        notes.append("plane normal " + " ".join(f"{x:g}" for x in p["normal"]))
    if "pitch" in p:
        notes.append(f"pitch {p['pitch']:g} (m/rad)")
    angles = joint_type(j.type).euler_angles_of(p)
    if angles:
        first, n, chart = angles
        notes.append(_chart_text(chart, n, first))
    if joint_type(j.type).switch == "exp":
        notes.append("exponential coordinates: R = exp([q]), the rotation vector q")
    if j.type == "composite":
        k = 0
        for n, part in enumerate(p.get("parts", [])):
            d = joint_model(part["type"], part.get("params") or {}).dof
            sub = f"q{k + 1}..q{k + d}" if d > 1 else f"q{k + 1}"
            pp = part.get("params") or {}
            extra = f" {pp['chart']}" if "chart" in pp else ""
            if "axis" in pp:
                extra += " about/along " + " ".join(f"{x:g}" for x in pp["axis"])
            notes.append(f"part {n + 1}: {part['type']}{extra} ({sub})")
            k += d
        notes.append("Q = Q1 Q2 ... (the parts composed, Sueda 2.53)")
    return notes


def _round_floats(expr, digits=12):
    """Floats printed as their shortest decimal after rounding to `digits` significant digits;
    in a matrix, a constant term below 1e-14 of its entry's largest coefficient is left out
    (rounding residue, as the 2.2e-16 of cos(q) + 2.2e-16 from a normalised axis)."""
    if isinstance(expr, sp.MatrixBase):
        expr = expr.applyfunc(_without_residue)
    reps = {}
    for f in expr.atoms(sp.Float):
        x = float(f)
        r = float(f"{x:.{digits}g}")
        reps[f] = sp.Integer(int(r)) if r.is_integer() and abs(r) < 1e15 else sp.Float(repr(r), "")
    return expr.xreplace(reps) if reps else expr


def _without_residue(entry):
    """entry less its constant term where that is below 1e-14 of its largest coefficient."""
    if not isinstance(entry, sp.Add):
        return entry
    scale = max(abs(float(t.as_coeff_Mul()[0])) for t in entry.args)
    kept = [t for t in entry.args if not (t.is_Number and abs(float(t)) < 1e-14 * scale)]
    return sp.Add(*kept) if len(kept) < len(entry.args) else entry


def _placement_matrix(origin):
    """X_tree as a 4x4 sympy matrix, with entries within 1e-12 of an integer made exact."""
    M = np.eye(4)
    M[:3, :3] = origin.rotation
    M[:3, 3] = origin.translation

    def num(x):
        x = float(x)
        if abs(x - round(x)) <= 1e-12:
            return sp.Integer(int(round(x)))
        return sp.Float(x)
    return sp.Matrix(4, 4, lambda r, c: num(M[r, c]))


class _SympyPieces:
    """The algebra in which a piecewise piece (max(x, 0), steps: joints.special) writes its
    branch-free formula, as the generated code computes it."""
    sqrt = staticmethod(sp.sqrt)

    @classmethod
    def piece(cls, kind, x):
        return kind.formula(cls, x)


def _elementary(e):
    """e with each piecewise piece written out in +, *, / and sqrt (C has no PosPart3)."""
    from .joints.special import Piece
    return e.replace(lambda x: isinstance(x, Piece),
                     lambda x: type(x).formula(_SympyPieces, x.args[0]))


def _ccode(e):
    """C of a joint expression; the series-guarded helpers of the ball joint print as the C
    helpers of the generated code (scl_exp_a, ...), defined by _c_helpers."""
    from .joints.special import GUARDED
    funcs = {cls.__name__: cname for cname, cls in GUARDED.items()}
    return sp.ccode(_elementary(e), user_functions=funcs)


def _c_helpers(helpers):
    """What a printed C function needs to compile on its own: math.h and the helpers it calls
    (scleron.algebra.Helper), as the generated file defines them."""
    lines = ["#include <math.h>"]
    for h in helpers:
        lines += [f"static double {h.name}(double x)      /* {c_comment(h.doc)} */", "{"]
        lines += [f"    {line}" for line in h.c_body] + ["}"]
    return lines


def _guarded_helpers(matrices):
    """The Helpers of the guarded functions the joint's expressions call, by name."""
    from .joints.special import GUARDED
    kinds = tuple(GUARDED.values())
    used = {type(a).helper.name: type(a).helper for M in matrices
            for a in sp.Matrix(M).atoms(sp.Function) if isinstance(a, kinds)}
    return [used[n] for n in sorted(used)]


def _c_matrix(name, M):
    """C assignments of a matrix's entries."""
    lines = []
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            lines.append(f"{name}[{r}][{c}] = {_ccode(M[r, c])};")
    return "\n".join(lines)


def _entries_of(model, j):
    """(q_at, v_at, source) for a joint's coordinates in the model's arrays: q_at(k) names the
    entry of q its k-th coordinate is ("q[4] = a_elbow[0]"), v_at(k) that of qd, source(k, array)
    the C expression that reads it (a mimic joint's: its leader's entry, scaled and offset)."""
    leader = j
    if getattr(j, "mimic", None) is not None:
        leader = next(o for o in model.joints if o.name == j.mimic[0])
    iq = iv = 0
    for o in model.joints:
        if o is leader:
            break
        if o.mimic is None:
            iq, iv = iq + o.nq, iv + o.dof
    names = model.coordinate_names(), model.coordinate_names(velocities=True)

    def source(k, array="q"):
        entry = f"{array}[{(iq if array == 'q' else iv) + k}]"
        if leader is j:
            return entry
        multiplier, offset = float(j.mimic[1]), float(j.mimic[2])
        shift = f" {'-' if offset < 0 else '+'} {abs(offset)!r}" if offset and array == "q" else ""
        return f"{multiplier!r} * {entry}{shift}"

    def q_at(k, array="q"):
        i = (iq if array == "q" else iv) + k
        named = f"{array}[{i}] = {names[array == 'qd'][i]}"
        return named if leader is j else f"{source(k, array)}, {named}"
    return q_at, lambda k: q_at(k, "qd"), source


def joint_text(model, j, what="all", fmt="text"):
    """One joint: coordinates with their meaning (and chart), X_tree, Q(q), G, S, Sdot."""
    jm = joint_model(j.type, j.params)
    Q = sp.Matrix(sp.BlockMatrix([[jm.R, jm.t], [sp.zeros(1, 3), sp.ones(1, 1)]]))
    X = _placement_matrix(j.origin)
    identity = X == sp.eye(4)
    G = Q if identity else (X * Q if jm.light else (X * Q).applyfunc(sp.expand))
    head = f"joint {j.name}: {j.type}, parent {j.parent} -> body {j.child}, {_dof_text(j)}"
    if getattr(j, "mimic", None) is not None:
        head += " (that q is q1 below)"
    q_at, v_at, source = _entries_of(model, j)
    entries = (joint_type(j.type).configuration_entries if jm.nq != jm.dof else jm.coordinates)
    coords = [(sym, f"{q_at(k)}: {meaning}") for k, (sym, meaning) in enumerate(zip(jm.q, entries))]
    velocities = [(qd, f"{v_at(k)}: {meaning}" if jm.nq != jm.dof else v_at(k))
                  for k, (qd, meaning) in enumerate(zip(jm.qd, jm.coordinates))]
    if jm.nq != jm.dof:                 # a quaternion joint: q's entries, then v's
        coords += velocities
    items = []
    if what in ("all", "G"):
        if not identity:
            items.append(("X_tree (fixed placement of the joint in the parent body)", X))
        items.append(("Q(q) (the joint's motion)", Q))
        items.append(("G = X_tree Q(q) (body frame in the parent frame)" if not identity
                      else "G = Q(q) (X_tree is the identity)", G))
    if what in ("all", "S"):
        items.append(("S (6 x d, twists [w; v] in body coordinates, S&G 9)", jm.S))
    if what in ("all", "Sdot"):
        items.append(("Sdot = sum_k dS/dq_k qd_k (S&G 12)", jm.Sdot))
    notes = _joint_notes(j)
    if jm.notes:
        notes.append(jm.notes)

    if jm.light:
        # spline joints and ellipsoid contacts: entries are DAGs that print exponentially long
        # as trees, so show them in common-subexpression form (x0 = ..., then the matrix);
        # order="none": cse's canonical ordering counts the nodes of every argument as a tree,
        # which took minutes on a spline curve (12 min for spline_chain's slide, now seconds)
        shared = []
        for k, (label, M) in enumerate(items):
            reps, (reduced,) = sp.cse([M], symbols=sp.numbered_symbols(f"x{k}_"), order="none")
            shared.append(reps)
            items[k] = (label, reduced)
    else:
        shared = [[] for _ in items]
    if fmt == "text":
        parts = [head]
        parts += [f"  {n}" for n in notes]
        parts.append("coordinates:" if coords else "coordinates: none")
        parts += [f"  {sym}: {meaning}" for sym, meaning in coords]
        for (label, M), reps in zip(items, shared):
            where = "".join(f"  {x} = {sp.sstr(e)}\n" for x, e in reps)
            parts.append(f"{label} =\n{where}"
                         f"{sp.pretty(_round_floats(M), use_unicode=True, wrap_line=False)}")
        return "\n".join(parts)
    if fmt == "latex":
        parts = [f"\\section*{{{latex_text(head)}}}"]
        if notes:
            parts.append("\\begin{itemize}\n" + "\n".join(f"\\item {latex_text(n)}" for n in notes)
                         + "\n\\end{itemize}")
        if coords:
            parts.append("Coordinates:\n\\begin{itemize}\n"
                         + "\n".join(f"\\item ${sp.latex(sym)}$: {latex_text(meaning)}"
                                     for sym, meaning in coords) + "\n\\end{itemize}")
        for (label, M), reps in zip(items, shared):
            for x, e in reps:
                parts.append(f"\\[ {sp.latex(x)} = {sp.latex(e)} \\]")
            parts.append(f"{latex_text(label)}:\n\\[ {sp.latex(_round_floats(M))} \\]")
        return "\n".join(parts)
    if fmt == "c":
        parts = [f"/* {c_comment(head)} */"]
        parts += [f"/* {c_comment(n)} */" for n in notes]
        parts += _c_helpers(_guarded_helpers([M for _, M in items]
                                             + [sp.Matrix([e for _, e in r]) for r in shared if r]))
        parts += [f"const double {sym} = {source(k)};      /* {c_comment(meaning)} */"
                  for k, (sym, meaning) in enumerate(coords[:jm.nq])]
        if what in ("all", "Sdot") or jm.nq != jm.dof:
            parts += [f"const double {qd} = {source(k, 'qd')};      /* {c_comment(meaning)} */"
                      for k, (qd, meaning) in enumerate(velocities)]
        names = {"X_tree": "X", "Q(q)": "Q", "G ": "G", "S ": "S", "Sdot": "Sdot"}
        for (label, M), reps in zip(items, shared):
            parts += [f"const double {x} = {_ccode(e)};" for x, e in reps]
            var = next(v for k, v in names.items() if label.startswith(k))
            parts.append(f"/* {c_comment(label)} */\n{_c_matrix(var, M)}")
        return "\n".join(parts)
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


# ---- counting the recursion as written ----------------------------------------------------------
@dataclass
class Counts:
    """Operation counts: multiplications and divisions, additions and subtractions, negations,
    function calls."""
    mul: int = 0
    add: int = 0
    neg: int = 0
    fn: int = 0

    @property
    def total(self):
        return self.mul + self.add + self.neg + self.fn

    def __add__(self, o):
        return Counts(self.mul + o.mul, self.add + o.add, self.neg + o.neg, self.fn + o.fn)

    def __str__(self):
        return f"{self.total} ops ({self.mul} mul, {self.add} add, {self.neg} neg, {self.fn} fn)"

    @classmethod
    def of(cls, c):
        return cls(c.mul, c.add, c.neg, c.fn)


class _Tally:
    def __init__(self):
        self.section = Section("")
        self.by_section = {}

    def bump(self, kind):
        c = self.by_section.get(self.section)
        if c is None:
            c = self.by_section[self.section] = Counts()
        setattr(c, kind, getattr(c, kind) + 1)


class Counted:
    """A scalar whose value does not matter: every operation on it is counted, constants and
    all. (All results are the same token; only the tally changes.)"""
    __slots__ = ("tally",)

    def __init__(self, tally):
        self.tally = tally

    def _op(self, kind):
        self.tally.bump(kind)
        return self

    def __add__(self, o): return self._op("add")
    __radd__ = __sub__ = __rsub__ = __add__
    def __mul__(self, o): return self._op("mul")
    __rmul__ = __truediv__ = __rtruediv__ = __mul__
    def __pow__(self, o): return self._op("mul")
    def __neg__(self): return self._op("neg")
    def __pos__(self): return self


class CountingAlgebra(Algebra):
    """Counts every function and helper call; sections say where the counts go."""

    def __init__(self, tally):
        self.tally = tally

    def function(self, name, x):
        self.tally.bump("fn")
        return x if isinstance(x, Counted) else Counted(self.tally)

    def call(self, helper, x):
        return self.function(helper.name, x)

    def section(self, text, pass_=None, body=None):
        self.tally.section = Section(text, pass_ or text, body)

    def current_section(self):
        return self.tally.section

    def restore_section(self, section):
        self.tally.section = section


def count_before(tree, spec):
    """{Section: Counts} of the recursion run generically (see the module docstring)."""
    spec = function_spec(spec) if isinstance(spec, str) else spec
    tally = _Tally()
    tok = Counted(tally)
    generic = replace_tree(tree, tok)
    sizes = model_sizes(tree)
    args = [[tok] * a.size(sizes) for a in spec.inputs]
    spec.run(generic, CountingAlgebra(tally), *args)
    return tally.by_section


def replace_tree(tree, tok):
    """A shallow copy of a Tree whose constants (inertias, placements, gravity) are counting
    tokens, and whose identity placements are explicit."""
    import copy
    new = copy.copy(tree)
    eye = [[tok] * 3 for _ in range(3)], [tok] * 3
    new.bodies = [replace(b, inertia=[[tok] * 6 for _ in range(6)],
                          placement=eye) for b in tree.bodies]
    new.gravity = [tok] * 3
    return new


# ---- the unrolled program -----------------------------------------------------------------------
INPUT_TEX = {"q": "q", "qd": r"\dot{q}", "qdd": r"\ddot{q}", "tau": r"\tau", "h": "h", "M": "M"}


def _fmt_const(x):
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return f"{x:.1f}"
    return repr(x)


class _Printer:
    """Renders program nodes as expressions; single-use temporaries of the same group are
    inlined (with parentheses that keep C's evaluation order), so a statement reads like the
    formula it computes. Temporaries keep the names of the generated C (t0, t1, ...)."""
    PREC = {"add": 1, "sub": 1, "mul": 2, "div": 2, "neg": 3}
    SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/"}

    def __init__(self, prog, name_of, group_of, uses, fmt, shapes):
        self.prog, self.name_of, self.group_of, self.uses = prog, name_of, group_of, uses
        self.fmt, self.shapes = fmt, shapes
        self.trig = {}
        self.inline = set()

    def inlined(self, i, group):
        return i in self.inline and self.group_of.get(i) == group

    def plan(self, live, max_depth=6):
        """Which temporaries are written inside their single user: used once, in the same
        group, and not making the user's expression deeper than max_depth operations."""
        from .program.program import Var
        self.inline, depth = set(), {}
        for i in live:
            d = 1 + max([depth[a.id] for a in self.prog.args[i]
                         if isinstance(a, Var) and a.id in self.inline] + [0])
            depth[i] = d
            if (self.uses.get(i, 0) == 1 and d < max_depth and self.prog.ops[i] != "in"
                    and i not in self.trig
                    and self.group_of.get(i) == self.group_of.get(self.user.get(i))):
                self.inline.add(i)

    def name(self, i):
        if self.fmt == "latex":
            return f"t_{{{self.name_of[i][1:]}}}"
        return self.name_of[i]

    def atom(self, x, group):
        """(text, precedence) of an operand."""
        from .program.program import Var
        if not isinstance(x, Var):
            text = _fmt_const(x)
            return text, (3 if text.startswith("-") else 9)
        i = x.id
        if self.prog.ops[i] == "in":
            arr, idx = self.prog.args[i]
            if self.fmt == "latex":
                return f"{INPUT_TEX.get(arr, arr)}_{{{idx}}}", 9
            return f"{arr}[{idx}]", 9
        if i in self.trig:
            if self.fmt == "latex":
                return self.expr(i, group)
            return self.name_of[i], 9
        if self.inlined(i, group):
            return self.expr(i, group)
        return self.name(i), 9

    def expr(self, i, group):
        op, args = self.prog.ops[i], self.prog.args[i]
        latex = self.fmt == "latex"
        if op in self.SYMBOL:
            p = self.PREC[op]
            (a, pa), (b, pb) = self.atom(args[0], group), self.atom(args[1], group)
            if latex and op == "div":
                return f"\\frac{{{a}}}{{{b}}}", 9
            if pa < p:
                a = f"({a})" if not latex else f"\\left({a}\\right)"
            if pb <= p or b.startswith("-"):
                b = f"({b})" if not latex else f"\\left({b}\\right)"
            if latex:
                sym = {"add": " + ", "sub": " - ", "mul": " \\, "}[op]
            else:
                sym = f" {self.SYMBOL[op]} " if p == 1 else self.SYMBOL[op]
            return f"{a}{sym}{b}", p
        if op == "neg":
            a, pa = self.atom(args[0], group)
            if pa <= 3:
                a = f"({a})" if not latex else f"\\left({a}\\right)"
            return f"-{a}", 3
        if op == "pow":
            a, _ = self.atom(args[0], group)
            b, _ = self.atom(args[1], group)
            return (f"\\left({a}\\right)^{{{b}}}", 9) if latex else (f"pow({a}, {b})", 9)
        a, _ = self.atom(args[0], group)
        if op.startswith("call:"):
            fname = op[5:]
            if latex:
                return f"\\operatorname{{{latex_text(fname)}}}\\left({a}\\right)", 9
            return f"{fname}({a})", 9
        if latex:
            if op == "sqrt":
                return f"\\sqrt{{{a}}}", 9
            return f"\\{op}\\left({a}\\right)", 9
        return f"{op}({a})", 9

    def output_name(self, array, idx):
        shape = self.shapes.get(array, ())
        tex = INPUT_TEX.get(array, array)
        if len(shape) == 2:
            r, c = divmod(idx, shape[1])
            return f"{tex}_{{{r},{c}}}" if self.fmt == "latex" else f"{array}[{r}][{c}]"
        if not shape:
            return tex if self.fmt == "latex" else array
        return f"{tex}_{{{idx}}}" if self.fmt == "latex" else f"{array}[{idx}]"


@dataclass
class Group:
    section: Section       # what the group computes: comment text, pass, body index
    ids: list              # live node ids, in order
    after: Counts
    before: Counts

    @property
    def note(self):
        return self.section.text

    @property
    def body(self):
        return self.section.body


def analyse(tree, spec):
    """(spec, Program, [Group], before-by-section): the unrolled program of one function
    grouped by section (pass and body), with each group's counts after and before
    simplification; spec: the one whose recursion the C code unrolls (fastest_recursion)."""
    spec = function_spec(spec) if isinstance(spec, str) else spec
    try:
        spec, prog = fastest_recursion(code_tree(tree, spec), spec)  # what the C code unrolls
    except ModelError as exc:           # which function (the recursions do not know), as codegen
        raise exc.but(problem=f"{spec.name}: {exc.problem}") from None
    before = count_before(tree, spec)
    live = [i for i in prog.live() if prog.ops[i] != "in"]
    out = []
    for sec, ids, again in section_runs(prog, live, before):
        counts = Counts() if again else before.get(sec, Counts())
        out.append(Group(sec, ids, Counts.of(prog.op_counts(ids)), counts))
    return spec, prog, out, before


def section_runs(prog, live, sections):
    """(section, ids, again) in evaluation order: the live statements in runs of one section, so
    that the printed groups compute in the order they are printed. A recursion that enters a
    section a second time (the derivatives run the inverse dynamics' passes after the forward
    dynamics' own) gives it a second run (again = True, its operations counted with the
    first). Sections without a live statement (everything folded) keep their place in the
    recursion's order (`sections`), after the run of the section before them."""
    runs = []
    for i in live:
        if runs and runs[-1][0] == prog.notes[i]:
            runs[-1][1].append(i)
        else:
            runs.append((prog.notes[i], [i], any(r[0] == prog.notes[i] for r in runs)))
    placed = {sec for sec, _, _ in runs}
    empty_after, last = {}, None
    for sec in sections:
        if sec in placed:
            last = sec
        else:
            empty_after.setdefault(last, []).append(sec)
    out = [(sec, [], False) for sec in empty_after.get(None, [])]
    for sec, ids, again in runs:
        out.append((sec, ids, again))
        if not again:
            out += [(e, [], False) for e in empty_after.pop(sec, [])]
    return out


def _codegen_form(tree, spec, model):
    """The form `scleron codegen` gives this function for this tree with its default options."""
    from .pipeline import code_form, model_mass_form
    from .dynamics.frames import frame_columns
    from .unroll import related_pairs
    columns = frame_columns(tree) if "frame_loop" in spec.forms else 0
    coupled = tree.coupling is not None
    return code_form(spec, 1, model_mass_form(model), tree.nv, related_pairs(tree),
                     columns, coupled=coupled)


def in_other_case(name, names, what):
    """The one of `names` that is `name` in other letter case (as --frame and the generated
    modules take it), None where none is; a ModelError where several are."""
    same = list(dict.fromkeys(n for n in names if n.lower() == name.lower()))
    if len(same) > 1:
        raise ModelError(f"{what} {short_name(name)!r} matches {' and '.join(map(repr, same))} in "
                         "other letter case: spell it as one of them")
    return same[0] if same else None


def _find_body(tree, body):
    tree = tree.full        # a mimic-coupled tree's programs run over every body of the full one
    for b in tree.bodies:
        if b.name == body:
            return b
    for b in tree.bodies:
        if b.joint_name == body:
            return b
    other = in_other_case(body, [b.name for b in tree.bodies] + [b.joint_name for b in tree.bodies],
                          "body or joint")
    if other is not None:
        return _find_body(tree, other)
    frame = next((f for f in tree.frames if f.name == body), None)
    if frame is not None and frame.body >= 0:   # e.g. a link merged by a fixed joint, a site
        owner = tree.bodies[frame.body]
        raise ModelError(f"{body!r} is a frame on body {owner.name!r}, not a body with a joint of "
                         f"its own: use --body {owner.name}")
    if frame is not None:
        raise ModelError(f"{body!r} is a frame fixed to the world: no pass computes anything "
                         "for it")
    raise ModelError(f"no body or joint named {body!r} (bodies: "
                     + ", ".join(b.name for b in tree.bodies) + "; joints: "
                     + ", ".join(b.joint_name for b in tree.bodies) + ")")


def one_frame_families():
    """The names of the one-frame functions: frame_placement, frame_jacobian and
    frame_jacobian_local / _world (FRAME_FUNCTIONS, a reference suffix where referenced)."""
    names = {}
    for fam in FRAME_FUNCTIONS.values():
        refs = REFERENCES if fam.referenced else (None,)
        for ref in refs:
            suffix = "" if ref in (None, REFERENCES[0]) else f"_{ref}"
            names[fam.name + suffix] = (fam, ref)
    return names


def one_frame_spec(tree, function, frame):
    """The spec of the one-frame function `function` (one_frame_families) for the frame named
    `frame` (Tree.frames); ModelError naming the frames when there is no such frame."""
    fam, ref = one_frame_families()[function]
    frames = [f.name for f in tree.frames]
    if frame is None:
        raise ModelError(f"{function} computes one frame: give --frame NAME (frames: "
                         f"{name_list(frames)})")
    if frame not in frames:             # another letter case, where it names one frame only,
        same = in_other_case(frame, frames, "frame")                 # as the generated modules
        if same is None:
            raise ModelError(f"no frame named {short_name(frame)!r} (frames: {name_list(frames)})")
        frame = same
    want = {"frame": frame, **({"reference": ref} if ref else {})}
    return next(s for s in fam.specs(tree) if {o: v for o, v, _ in s.variant[1]} == want)


def resolve_function(tree, function, frame=None):
    """The spec `scleron show --function` prints: a name or alias of FUNCTIONS, or a one-frame
    function with its frame; ModelError naming the choices."""
    if function in one_frame_families():
        return one_frame_spec(tree, function, frame)
    if frame is not None:
        raise ModelError(f"--frame selects the frame of a one-frame function ("
                         + ", ".join(one_frame_families()) + f"), not of {function}")
    try:
        return function_spec(function)
    except ValueError as exc:
        raise ModelError(f"{exc}; one-frame functions: {', '.join(one_frame_families())} "
                         f"with --frame NAME") from None


def function_text(model, function, body=None, fmt="text", tree=None, frame=None):
    """The unrolled program of one generated function (a name or alias of
    scleron.functions.FUNCTIONS: fd, id, mass, bias, ke, pe, ..., or a one-frame function
    such as frame_jacobian with frame=) as text, LaTeX or C."""
    from .dynamics.tree import Tree
    if fmt not in FORMATS:
        raise ModelError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    tree = tree or Tree(model)
    spec = resolve_function(tree, function, frame)
    try:
        spec, prog, groups, before = analyse(tree, spec)
    except ZeroDivisionError:           # a constant pivot 0 (M singular): codegen's checks say
        from .dynamics.checks import check_model_dynamics       # which joint, as codegen does
        check_model_dynamics(tree, source=model.source, q0=model.q0)
        raise                           # (regular: a division by zero of ours, not the model's)
    target = _find_body(tree, body) if body is not None else None
    sizes = model_sizes(tree)
    shapes = {a.name: a.dims(sizes) for a in spec.inputs + spec.outputs}
    # each output's axis of coordinates and its shape: the rows of M, tau, ...; the columns of
    # a Jacobian (J, Jcom, A_G); none for the centre of mass or a frame's placement (shown
    # with every body)
    rows = {a.name: (_coordinate_axis(a.shape), a.dims(sizes), a.shape) for a in spec.outputs}
    after_total = Counts.of(prog.op_counts())
    before_total = sum(before.values(), Counts())
    cs = CStatements(prog, sincos_of="q")            # the generated C's names and sin/cos of q
    live, trig = [i for i in prog.live() if prog.ops[i] != "in"], cs.trig
    named = cs.live
    name_of = dict(cs.name_of)
    name_of.update({i: f"{arr}[{k}]" for i, (arr, k) in trig.items()})
    shown = [g for g in groups if target is None or g.body == target.index]
    outputs = [(a, k, v) for a, k, v in prog.outputs
               if target is None or _output_body(tree, rows[a], k) in (None, target.index)]

    if not after_total.total:
        ratio = "every output a constant"
    elif before_total.total >= after_total.total:
        ratio = f"{before_total.total / after_total.total:.1f}x fewer"
    else:                   # (rarely: the simplified program may take a few more)
        ratio = f"{after_total.total / before_total.total:.1f}x more"
    coupled = tree.coupling is not None     # (its recursions run on the full tree: docs/mimic.md)
    doc = spec.coupled_doc if coupled and spec.coupled_doc else spec.doc
    title = f"{tree.name} {spec.name}: {doc}"
    if coupled:
        title += " -- mimic-coupled: from the full tree's quantities through the coupling G " \
                 "(docs/mimic.md)"
    io = (", ".join(f"{a.name}[{a.size(sizes)}]" for a in spec.inputs) + " -> "
          + ", ".join(f"{a.name}[{a.size(sizes)}]" if a.shape else a.name for a in spec.outputs))
    summary = [f"statements: {len(named)}"
               + (f" (and {len(trig)} sin/cos of q, computed at once into sq[], cq[])"
                  if trig else ""),
               f"before simplification: {before_total}",
               f"after simplification:  {after_total}  ({ratio})"]
    if code_tree(tree, spec) is not tree:
        summary.append("inertias: the base inertial parameters (a hinge's mass and its parts "
                       "along the axis on the parent: dynamics/regroup.py)")
    form = _codegen_form(tree, spec, model)
    if form != "unrolled":
        summary.append(f"(the unrolled program; `scleron codegen` writes this function for this "
                       f"model in {FORMS[form].description}, which `codegen` counts)")
    per_pass = OrderedDict()
    for g in groups:
        a, b = per_pass.get(g.section.pass_, (Counts(), Counts()))
        per_pass[g.section.pass_] = (a + g.after, b + g.before)

    if fmt == "c":
        return _function_c(cs, spec, tree, groups, target, title, io, summary, per_pass, rows)

    group_of = {i: g.note for g in groups for i in g.ids}
    uses = {}
    for i in live:
        for x in prog.args[i]:
            if hasattr(x, "id"):
                uses[x.id] = uses.get(x.id, 0) + 1
    for _, _, v in prog.outputs:
        if hasattr(v, "id"):
            uses[v.id] = uses.get(v.id, 0) + 2       # outputs read named temporaries
    pr = _Printer(prog, name_of, group_of, uses, fmt, shapes)
    pr.trig = trig
    pr.user = {x.id: i for i in live for x in prog.args[i] if hasattr(x, "id")}
    pr.plan(live)

    if fmt == "text":
        lines = [title, f"inputs {io}", *summary]
        header = len(lines)         # (the helpers the shown statements call go here, below)
        if target is not None:
            mine_a = sum((g.after for g in shown), Counts())
            mine_b = sum((g.before for g in shown), Counts())
            lines.append(f"showing body {target.name} (joint {target.joint_name}) only: "
                         f"after {mine_a.total}, before {mine_b.total} ops")
        lines.append("")
        lines.append("operations by pass (after / before simplification)"
                     + (", whole function:" if target is not None else ":"))
        w = max([len(k) for k in per_pass] + [4])
        for k, (a, b) in per_pass.items():
            lines.append(f"  {k:<{w}}  {a.total:>7} / {b.total:>7}")
        for g in shown:
            lines.append("")
            lines.append(f"== {g.note}")
            lines.append(f"   after: {g.after}; before: {g.before}")
            for i in g.ids:
                if not pr.inlined(i, g.note):
                    lines.append(f"{name_of[i]} = {pr.expr(i, g.note)[0]}")
        lines.append("")
        lines.append("== outputs")
        if not outputs and target is not None:
            lines.append(_no_outputs_of(tree, target))
        for a, k, v in outputs:
            val = pr.atom(v, None)[0] if hasattr(v, "id") else _fmt_const(v)
            lines.append(f"{pr.output_name(a, k)} = {val}")
        called = set(re.findall(r"\b(\w+)\(", "\n".join(lines[header:])))
        helpers = [h for h in prog.used_helpers() if h.name in called]
        if helpers:                 # what the statements call besides Python's math functions
            lines[header:header] = ["helpers called (as in the generated C):"] + [
                f"  {h.name}(x): {h.doc.removeprefix(h.name + ': ')}" for h in helpers]
        return "\n".join(lines) + "\n"

    # latex
    parts = [LATEX_PREAMBLE, f"\\section*{{{latex_text(title)}}}",
             f"Inputs {latex_text(io)}.\\\\", *(latex_text(s) + "\\\\" for s in summary)]
    if target is not None:
        parts.append(f"Showing body {latex_text(target.name)} (joint "
                     f"{latex_text(target.joint_name)}) only.\\\\")
    parts.append("\\subsection*{Operations by pass (after / before simplification)}")
    parts.append("\\begin{tabular}{lrr}\n" + "\n".join(
        f"{latex_text(k)} & {a.total} & {b.total} \\\\" for k, (a, b) in per_pass.items())
        + "\n\\end{tabular}")
    for g in shown:
        parts.append(f"\\subsection*{{{latex_text(g.note)}}}")
        parts.append(f"After: {latex_text(str(g.after))}; before: {latex_text(str(g.before))}.")
        rows = [f"{pr.name(i)} &= {pr.expr(i, g.note)[0]}" for i in g.ids
                if not pr.inlined(i, g.note) and i not in trig]
        if rows:
            parts.append("\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}")
    parts.append("\\subsection*{Outputs}")
    rows = [f"{pr.output_name(a, k)} &= "
            f"{pr.atom(v, None)[0] if hasattr(v, 'id') else _fmt_const(v)}"
            for a, k, v in outputs]
    if rows:
        parts.append("\\begin{align*}\n" + " \\\\\n".join(rows) + "\n\\end{align*}")
    parts.append(LATEX_END)
    return "\n".join(parts)


def _coordinate_axis(shape):
    """The axis of an output's (symbolic) shape whose index is a coordinate: the first, where it
    is nv, nq or nx (qdd, M's rows, a step Jacobian's rows: q' then qd'), else the last where it
    is nv (a Jacobian's columns), else None."""
    if shape[:1] in (("nv",), ("nq",), ("nx",)):
        return 0
    return len(shape) - 1 if shape[-1:] == ("nv",) else None


def _no_outputs_of(tree, target):
    """Why no output entry is the shown body's: a mimic joint's coordinate is its leader's."""
    coupled = all(b.index != target.index for b in tree.bodies)
    if tree.coupling is not None and target.dof and coupled:
        leader = tree.coupling.v_map[target.v_start][0]
        owner = next(b for b in tree.bodies if b.v_start <= leader < b.v_start + b.dof)
        return (f"(none of body {target.name}'s own: joint {target.joint_name} is a mimic of "
                f"joint {owner.joint_name}, and what it adds is in the entries of that joint's "
                f"coordinate: --body {owner.name})")
    return f"(none of body {target.name}'s own: its joint {target.joint_name} has no coordinates)"


def _output_body(tree, rows, k):
    """The body whose coordinate an output entry belongs to (rows: the output's coordinate
    axis, shape and symbolic shape; None for a scalar or an output not indexed by
    coordinates)."""
    axis, shape, named = rows
    if axis is None or not shape:
        return None
    idx = int(np.unravel_index(k, shape)[axis])
    if named[axis] == "nq":                     # (an entry of q: a quaternion has 4 of them)
        return next((b.index for b in tree.bodies if b.q_start <= idx < b.q_start + b.nq), None)
    if named[axis] == "nx" and idx >= tree.nv:             # (the qd' rows after the q' rows)
        idx -= tree.nv
    for b in tree.bodies:
        if b.v_start <= idx < b.v_start + b.dof:
            return b.index
    return None


def _function_c(cs, spec, tree, groups, target, title, io, summary, per_pass, rows):
    """The function as C statements, printed from the program group by group (the statements
    of the generated C, in one piece, each group under a comment with its counts)."""
    prog = cs.prog
    fname = f"{c_identifier(tree.name)}_{spec.name}"
    params = ", ".join([f"const double *restrict {a.name}" for a in spec.inputs]
                       + [f"double *restrict {a.name}" for a in spec.outputs])
    head = [f"/* {c_comment(title)}", f" * inputs {c_comment(io)}"]
    head += [f" * {c_comment(s)}" for s in summary]
    head += [" * operations by pass (after / before simplification)"
             + (", whole function:" if target is not None else ":")]
    head += [f" *   {c_comment(k)}: {a.total} / {b.total}" for k, (a, b) in per_pass.items()]
    if target is not None:
        head.append(f" * showing body {c_comment(target.name)} (joint "
                    f"{c_comment(target.joint_name)}) only: a fragment, not a whole function")
    head.append(" */")
    lines = list(head)
    if target is None:
        lines += _c_helpers(prog.used_helpers())
        lines += [f"void {fname}({params})", "{"]
    start = len(lines)
    if cs.trig:
        lines.append("    /* sin and cos of the coordinates, all at once (scl_sincos in the "
                     "generated code) */")
        if target is None:                  # (only those it uses: -Wunused-variable)
            used = sorted({arr for arr, _ in cs.trig.values()}, reverse=True)
            lines.append("    double " + ", ".join(f"{a}[{tree.nq}]" for a in used) + ";")
        for i, (arr, k) in sorted(cs.trig.items(), key=lambda x: (x[1][1], x[1][0])):
            if target is None or target.q_start <= k < target.q_start + target.nq:
                lines.append(f"    {arr}[{k}] = {prog.ops[i]}(q[{k}]);")
    stores = cs.stores()
    for g in groups:
        if target is not None and g.body != target.index or not g.ids:
            continue
        lines.append(f"    /* {c_comment(g.note)}: after {g.after.total}, "
                     f"before {g.before.total} */")
        for i in g.ids:
            if i in cs.name_of:
                lines.append("    " + cs.statement(i))
                lines += [f"    {t} = {cs.name_of[i]};" for t in stores.get(i, ())
                          if _stored_here(tree, rows, t, target)]
    rest = [(t, v) for t, v in cs.other_outputs() if _stored_here(tree, rows, t, target)]
    if rest:
        lines.append("    /* outputs that are constants, inputs or sin/cos of q */")
        lines += [f"    {t} = {v};" for t, v in rest]
    if target is None:
        body = "\n".join(lines[start:])
        lines[start:start] = [f"    (void){a.name};      /* not needed here */" for a in spec.inputs
                              if not re.search(rf"\b{a.name}\[", body)]
        lines.append("}")
    return "\n".join(lines) + "\n"


def _stored_here(tree, rows, target_text, target):
    """Whether the output entry 'array[k]' belongs to the shown body (all when none is)."""
    if target is None:
        return True
    array, k = target_text[:-1].split("[")
    return _output_body(tree, rows[array], int(k)) in (None, target.index)


# ---- entry point --------------------------------------------------------------------------------
def show(model, joint=None, what="all", fmt="text", tree=False, function=None, body=None,
         frame=None):
    if fmt not in FORMATS:
        raise ModelError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if what != "all" and (tree or function is not None):
        raise ModelError(f"--what {what} selects a joint's quantity: it does not apply to "
                         + ("--tree" if tree else "--function"))
    if tree:
        if fmt != "text":
            raise ModelError(f"--tree prints text only, not --format {fmt}")
        return tree_text(model)
    if function is not None:
        return function_text(model, function, body=body, fmt=fmt, frame=frame)
    if frame is not None:
        raise ModelError("--frame selects the frame of a one-frame function: give --function too")
    if body is not None:
        raise ModelError("--body selects a body of --function's program: give --function too")
    if joint is not None and joint not in [j.name for j in model.joints]:
        joint = in_other_case(joint, [j.name for j in model.joints], "joint") or joint
    joints = model.joints if joint is None else [j for j in model.joints if j.name == joint]
    if not joints:
        raise ModelError(f"no joint named {joint!r} "
                         f"(joints: {', '.join(j.name for j in model.joints)})",
                         source=model.source)
    body_text = ("\n\n" if fmt != "latex" else "\n").join(joint_text(model, j, what, fmt)
                                                          for j in joints)
    if fmt == "latex":
        return LATEX_PREAMBLE + body_text + "\n" + LATEX_END
    return body_text
