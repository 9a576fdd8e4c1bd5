"""`scleron show` (functions, joints, tree) and `scleron draw`: what they print is right.

The printed statements are evaluated and compared with the numeric recursions; the C output
compiles; the LaTeX output is a balanced standalone document (compiled with pdflatex where it
is installed); the counts add up; the stick figure's kinematics equal Pinocchio's.
"""
import math
import os
from dataclasses import replace
import warnings
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import scleron
from scleron import show as S
from scleron.cli import main
from scleron.dynamics import derivatives, frames, recursions, spatial
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.joints.special import GUARDED
from scleron.functions import function_spec
from scleron.unroll import unroll

from conftest import ROOT, example, robot_urdf

SMALL = """\
name: small
bodies:
  - name: base
    parent: world
    joint: {name: slide, type: prismatic, axis: [1, 0, 0]}
    mass: 2.0
    com: [0, 0, 0.1]
    inertia: [0.02, 0.03, 0.04]
  - name: arm
    parent: base
    joint: {name: shoulder, type: spherical, chart: ZYX, xyz: [0, 0, 0.3], rpy: [0.1, 0, 0]}
    mass: 1.0
    com: [0.25, 0, 0]
    inertia: [0.005, 0.02, 0.02]
  - name: hand
    parent: arm
    joint: {name: wrist, type: ball_exp, xyz: [0.5, 0, 0]}
    mass: 0.3
    com: [0.05, 0.01, 0]
    inertia: [0.001, 0.001, 0.0015]
"""
FUNCS = {"fd": ("forward_dynamics", "q qd tau", "qdd"), "id": ("inverse_dynamics", "q qd qdd", "tau"),
         "mass": ("mass_matrix", "q", "M"), "bias": ("bias_forces", "q qd", "h")}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("show") / "small.yaml"
    path.write_text(SMALL)
    return str(path)


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "scleron", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def one_line_error(r, needle):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], lines[0]


def run_text(text, inputs, nv):
    """Executes the statements of `show --format text` in Python (our own output, in a test)."""
    env = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "sqrt": math.sqrt, "exp": math.exp,
           "log": math.log, "pow": math.pow, **{name: cls.numeric for name, cls in GUARDED.items()}}
    env.update({k: list(v) for k, v in inputs.items()})
    env.update(sq=[None] * nv, cq=[None] * nv)
    out = {}
    section = None
    for line in text.splitlines():
        if line.startswith("== "):
            section = line
            continue
        m = re.fullmatch(r"(sq|cq)\[(\d+)\] = ((sin|cos)\(q\[\2\]\))", line)
        if m and section != "== outputs":
            env[m.group(1)][int(m.group(2))] = eval(m.group(3), {"__builtins__": {}}, env)
            continue
        m = re.fullmatch(r"(t\d+) = (.+)", line)
        if m:
            env[m.group(1)] = eval(m.group(2), {"__builtins__": {}}, env)
            continue
        m = re.fullmatch(r"(\w+)\[(\d+)\](?:\[(\d+)\])? = (.+)", line)
        if m and section == "== outputs":
            idx = int(m.group(2)) * nv + int(m.group(3)) if m.group(3) else int(m.group(2))
            out.setdefault(m.group(1), {})[idx] = eval(m.group(4), {"__builtins__": {}}, env)
    return [arr[i] for arr in out.values() for i in range(len(arr))]    # arrays in output order


def test_the_helpers_the_statements_call_are_listed_with_what_they_compute(tmp_path):
    """A quaternion joint's integrate calls scl_exp_a, ... : the text output named them nowhere
    (only --format c defined them; an outside tester). Each called one is listed, with its
    closed form, and the statements evaluate with the helpers' own values."""
    path = tmp_path / "ball.yaml"
    path.write_text("name: ball\nbodies:\n  - {name: b, parent: world, mass: 1, inertia: [1, 2, 3],"
                    " joint: {name: j, type: spherical_quat}}\n")
    model = scleron.load_model(str(path))
    text = S.function_text(model, "integrate")
    called = set(re.findall(r"\b(scl_\w+)\(", text.split("operations by pass")[1]))
    listed = dict(re.findall(r"^  (scl_\w+)\(x\): (.+)$", text, re.MULTILINE))
    assert called and called == set(listed), (called, listed)
    assert listed["scl_exp_a"].startswith("sin(th) / th with th = sqrt(x)")


def reference(tree, fname, inputs):
    args = [list(inputs[a]) for a in FUNCS[fname][1].split()]
    res = getattr(recursions, FUNCS[fname][0])(tree, FloatAlgebra(), *args)
    return np.ravel(res)


@pytest.mark.parametrize("fname", list(FUNCS))
def test_printed_statements_compute_the_function(small, fname, rng):
    model = scleron.load_model(small)
    tree = Tree(model)
    text = S.function_text(model, fname, tree=tree)
    inputs = {"q": rng.uniform(-1, 1, tree.nv), "qd": rng.uniform(-1, 1, tree.nv),
              "tau": rng.uniform(-1, 1, tree.nv), "qdd": rng.uniform(-1, 1, tree.nv)}
    got = run_text(text, inputs, tree.nv)
    ref = reference(tree, fname, inputs)
    assert len(got) == ref.size
    assert np.allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_groups_counts_and_totals(small):
    model = scleron.load_model(small)
    tree = Tree(model)
    spec, prog, groups, before = S.analyse(tree, "forward_dynamics")
    # every live operation is in exactly one group; the groups' counts add up to the totals
    ids = [i for g in groups for i in g.ids]
    assert sorted(ids) == [i for i in prog.live() if prog.ops[i] != "in"]
    assert sum((g.after for g in groups), S.Counts()).total == prog.op_counts().total
    assert sum((g.before for g in groups), S.Counts()) == sum(before.values(), S.Counts())
    # this small arm's forward dynamics is the mass matrix's LTDL solve (fewer estimated
    # cycles: unroll.fastest_recursion), shown as such; the articulated-body passes by the spec
    # without alternatives: passes 1-3, then the mass matrix's columns and factors, or passes 4-6
    assert spec.recursion is recursions.forward_dynamics_by_mass_matrix
    aba = S.analyse(tree, replace(function_spec("fd"), alternatives=()))
    assert aba[0].recursion is recursions.forward_dynamics
    for shown, later in ((groups, []), (aba[2], [(4, "27-28"), (5, "31-33"), (6, "34-35")])):
        notes = [g.note for g in shown]
        for n, eqs in [(1, "18-20"), (2, "21-23"), (3, "24-25")] + later:
            for b in tree.bodies:
                assert any(note.startswith(f"pass {n} (S&G {eqs})") and g.body == b.index
                           for note, g in zip(notes, shown)), (n, b.name)
    notes = [g.note for g in groups]
    for b in tree.bodies:
        if b.dof:
            assert any(n.startswith(f"mass matrix (Featherstone Table 6.2): column of joint {b.joint_name}")
                       for n in notes), b.name
    assert "mass matrix: M = L^T D L (Featherstone 6.5, Table 6.3)" in notes
    assert not any(n.startswith("pass 4") for n in notes)
    assert any(n.startswith("joint shoulder (spherical)") and "(S&G 9, 12)" in n for n in notes)
    # folding only removes work
    for g in groups:
        assert g.after.total <= g.before.total, g.note
    text = S.function_text(model, "fd", tree=tree)
    after = prog.op_counts()
    m = re.search(r"after simplification:\s+(\d+) ops \((\d+) mul, (\d+) add, (\d+) neg, (\d+) fn\)", text)
    assert [int(x) for x in m.groups()] == [after.total, after.mul, after.add, after.neg, after.fn]
    m = re.search(r"before simplification: (\d+) ops", text)
    assert int(m.group(1)) == sum(before.values(), S.Counts()).total > 3 * after.total
    assert text.count("\n== ") == len(groups) + 1             # groups, then the outputs


def test_counting_scalar_counts_every_operation():
    tally = S._Tally()
    x = S.Counted(tally)
    tally.section = "s"
    spatial.dot([x, x, x], [0.0, 1.0, x])           # 3 mul, 3 add (from 0.0: no folding)
    _ = -x, 1.0 * x, x / 1.0, 0.0 + x, x - 0.0
    S.CountingAlgebra(tally).sin(x)
    c = tally.by_section["s"]
    assert (c.mul, c.add, c.neg, c.fn) == (5, 5, 1, 1)
    # identical bodies of a chain cost the same before folding, whatever their constants
    tree = Tree(scleron.load_model(example("rc20.yaml")))
    before = {sec.text: c for sec, c in S.count_before(tree, "inverse_dynamics").items()}
    per_body = [before[f"pass 1 (S&G 18-20): velocity of body link{k}, joint joint{k}"].total for k in (3, 7, 12)]
    assert len(set(per_body)) == 1 and per_body[0] > 0


def test_body_filter(small):
    model = scleron.load_model(small)
    text = S.function_text(model, "id", body="arm")
    heads = [ln for ln in text.splitlines() if ln.startswith("== ")]
    assert heads[-1] == "== outputs"
    for h in heads[:-1]:
        assert "body arm" in h or "joint shoulder" in h, h
    assert any(h.startswith("== pass 3") for h in heads)
    outs = [ln.split(" = ")[0] for ln in text.split("== outputs")[1].splitlines() if " = " in ln]
    assert outs == ["tau[1]", "tau[2]", "tau[3]"]               # the shoulder's coordinates
    assert S.function_text(model, "id", body="shoulder") == text  # a joint names its body too
    assert S.function_text(model, "id", body="ARM") == text       # other letter case, as --frame
    with pytest.raises(scleron.ModelError, match="no body or joint named 'elbow'"):
        S.function_text(model, "id", body="elbow")
    tooled = scleron.load_model(small)                      # a frame names its body
    tooled.add_frame("tool", "hand", xyz=(0.1, 0, 0))
    with pytest.raises(scleron.ModelError, match="'tool' is a frame on body 'hand'.*--body hand"):
        S.function_text(tooled, "id", body="tool")
    # an output not indexed by coordinates (the centre of mass) is every body's: it was left out
    # where its entries' numbers were no coordinate of the body, an empty "== outputs" (a tester)
    com = S.function_text(model, "com", body="hand")
    assert [ln.split(" = ")[0] for ln in com.split("== outputs")[1].splitlines() if " = " in ln] \
        == ["com[0]", "com[1]", "com[2]"]
    # a Jacobian's columns are coordinates: its body's columns only (all 3 x nv were printed)
    jcom = S.function_text(model, "jcom", body="arm")
    shown = [ln.split(" = ")[0] for ln in jcom.split("== outputs")[1].splitlines() if " = " in ln]
    nv = Tree(model).nv
    assert shown and all(int(re.findall(r"\[(\d+)\]", o)[-1]) in (1, 2, 3) for o in shown)
    assert len(shown) == 9 and nv > 3
    c = S.function_text(model, "mass", body="hand", fmt="c")
    assert "composite inertia of body hand" in c and "body arm" not in c
    assert all(re.match(r"\s*M\[(\d+)\]", ln) is None or int(re.match(r"\s*M\[(\d+)\]", ln).group(1)) // 7 in (4, 5, 6)
               for ln in c.splitlines())


@pytest.mark.parametrize("fname", ["fd", "mass", "dint"])
def test_c_format_compiles(small, tmp_path, fname):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    model = scleron.load_model(small)
    code = S.function_text(model, fname, fmt="c")
    # self-contained (an outside tester: no math.h, the ball joint's helpers undeclared, so
    # gcc 12 took them for int functions: forward dynamics off by 1e17)
    assert ("static double scl_exp_a(double x)" in code) == (fname != "dint")
    src = tmp_path / "f.c"
    src.write_text(code)
    # -Wextra: an input a function does not read gets a (void) (dint's constant Jacobians)
    r = subprocess.run([cc, "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    statements = int(re.search(r"statements: (\d+)", code).group(1))
    assert len(re.findall(r"const double t\d+ =", code)) == statements
    prog = unroll(Tree(model), {"dint": "integrate_jacobians"}.get(fname) or FUNCS[fname][0])
    trig = len([i for i in prog.live() if prog.ops[i] in ("sin", "cos") and prog.ops[prog.args[i][0].id] == "in"])
    written_as_sq_cq = trig if "sq[" in code or "cq[" in code else 0
    assert statements + written_as_sq_cq == len([i for i in prog.live() if prog.ops[i] != "in"])


def test_c_format_declares_only_the_sin_cos_arrays_it_uses(tmp_path):
    """A pendulum's forward dynamics reads cos(q) only: `double sq[1], cq[1];` failed -Werror
    (unused variable sq; a reviewer)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    m = scleron.Model("pend")
    m.add_body("link", joint="revolute", axis=(0, 1, 0), mass=1.0, com=(0.5, 0, 0),
               inertia=(0.01, 0.01, 0.01))
    code = S.function_text(m, "fd", fmt="c")
    assert "double cq[1];" in code and "double sq" not in code and "sq[0]" not in code
    src = tmp_path / "f.c"
    src.write_text(code)
    r = subprocess.run([cc, "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("example_name", ["spline_surface.yaml", "branched.yaml",
                                          pytest.param("spline_chain.yaml", marks=pytest.mark.slow)])
def test_a_joints_c_compiles(tmp_path, example_name):
    """show --format c of a joint: its file-scope lines (math.h, the helpers it calls), then the
    statements of a function body. The spline joints' PosPart3 had no C (an internal error).
    The spline chain's curve joint took 12 minutes in sympy's cse ordering (now ~15 s)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    model = scleron.load_model(example(example_name))
    for j in model.joints:
        code = S.joint_text(model, j, fmt="c").splitlines()
        first = next(i for i, line in enumerate(code) if line.startswith("const double"))
        src = tmp_path / "j.c"
        src.write_text("\n".join(code[:first]) + "\nvoid f(const double *q, const double *qd)\n{\n"
                       "    double X[4][4], Q[4][4], G[4][4], S[6][6], Sdot[6][6];\n"
                       + "\n".join(code[first:]) + "\n    (void)X; (void)Q; (void)G; (void)S; "
                       "(void)Sdot; (void)qd;\n}\n")
        r = subprocess.run([cc, "-std=c99", "-fsyntax-only", "-Wall", "-Werror",
                            "-Wno-unused-variable", str(src)], capture_output=True, text=True)
        assert r.returncode == 0, (j.name, r.stderr[:2000])


def latex_ok(doc, tmp_path):
    """A standalone document with balanced environments and braces; compiled by pdflatex when
    it is installed."""
    assert doc.startswith("\\documentclass") and doc.rstrip().endswith("\\end{document}")
    assert doc.count("\\begin{document}") == 1
    envs = re.findall(r"\\(begin|end)\{(\w+\*?)\}", doc)
    stack = []
    for kind, name in envs:
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, name
    assert not stack
    body = re.sub(r"\\[{}]", "", doc)
    depth = 0
    for ch in body:
        depth += ch == "{"
        depth -= ch == "}"
        assert depth >= 0
    assert depth == 0
    assert not re.search(r"[^\x00-\x7f]", doc), "plain pdflatex needs ASCII"
    if shutil.which("pdflatex"):
        (tmp_path / "doc.tex").write_text(doc)
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "doc.tex"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout[-2000:]
        assert (tmp_path / "doc.pdf").stat().st_size > 1000


def test_latex_function_document(small, tmp_path):
    model = scleron.load_model(small)
    doc = S.function_text(model, "bias", fmt="latex")
    assert "\\begin{align*}" in doc and "S\\&G" in doc and "\\dot{q}_{" in doc
    latex_ok(doc, tmp_path)


def test_joint_text_and_latex(small, tmp_path):
    model = scleron.load_model(small)
    text = S.show(model, joint="shoulder")
    assert "chart ZYX: R = R_Z(q1) R_Y(q2) R_X(q3), intrinsic" in text and "Tait-Bryan" in text
    first = model.coordinate_names().index("shoulder[0]")
    assert first > 0
    for k in (1, 2, 3):       # each with its entry of the model's q (was read as if from q[0])
        assert f"q{k}: q[{first + k - 1}] = shoulder[{k - 1}]: ZYX angle {k} (rad)" in text
    for label in ("X_tree", "Q(q)", "G = X_tree Q(q)", "S (6 x d", "Sdot ="):
        assert label in text, label
    assert "cos(q₁)" in text and "↪" not in text
    # G = X_tree Q(q) agrees with the numbers
    j = model.joints[1]
    jm = S.joint_model(j.type, j.params)
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = j.origin.rotation, j.origin.translation
    q = [0.3, -0.2, 0.5]
    G = np.array(S._placement_matrix(j.origin) @ jm.numeric("G", q), dtype=float)
    assert np.allclose(G, X @ jm.numeric("G", q))
    latex_ok(S.show(model, fmt="latex"), tmp_path)          # every joint, ball_exp included
    c = S.show(model, joint="wrist", fmt="c")
    wrist = model.coordinate_names().index("wrist[0]")
    assert "scl_exp_a(" in c and f"const double q1 = q[{wrist}];" in c
    assert f"const double qd1 = qd[{model.coordinate_names(velocities=True).index('wrist[0]')}];" in c


def test_a_skew_axis_prints_no_rounding_residue():
    """A revolute joint about (1, 1, 0): normalising the axis left cos(q1) + 2.22e-16 in Q(q)'s
    printout (a tester); a constant term below 1e-14 of its entry is left out of the text,
    a real one (0.5 - 0.5 cos(q1)) stays."""
    model = scleron.Model("skew")
    model.add_body("b", "world", joint="revolute", axis=(1, 1, 0), mass=1.0, com=(0, 0, 0),
                   inertia=(0.1, 0.1, 0.1))
    text = S.show(model, joint=model.joints[0].name)
    assert "e-16" not in text and "e-17" not in text
    assert "0.5 - 0.5⋅cos(q₁)" in text
    x = S.sp.Symbol("x")
    assert S._without_residue(x + 1e-13) != x and S._without_residue(1e-13 * x + 1e-16) != x


def test_body_filter_keeps_a_step_jacobians_rows_of_the_body():
    """Fx (2nv x 2nv: the q' rows, then the qd' rows) was listed whole under --body while Fu
    was cut to the body's columns (an outside tester): now the body's rows of both halves."""
    model = scleron.load_model(example("branched.yaml"))
    text = S.function_text(model, "step_derivatives", body="a_lower")
    rows = {int(m) for m in re.findall(r"^Fx\[(\d+)\]", text, re.M)}
    nv = Tree(model).nv
    assert rows == {4, 5, nv + 4, nv + 5}


def test_body_filter_reads_entries_of_q_by_the_bodys_q():
    """An output of nq entries (the step's q'): a quaternion joint has 4 of q's entries and 3
    of qd's, and --body took q's entries by the velocity's index (a reviewer: the forearm got
    the shoulder's w, the base the forearm's angle)."""
    model = scleron.Model("ballarm")
    model.add_body("base", joint="revolute", axis=(0, 0, 1), mass=2.0, inertia=(0.1, 0.2, 0.3),
                   com=(0.1, 0, 0.2))
    model.add_body("shoulder", parent="base", joint="spherical_quat", xyz=(0, 0, 0.3), mass=1.0,
                   inertia=(0.1, 0.2, 0.3), com=(0.2, 0.1, 0))
    model.add_body("forearm", parent="shoulder", joint="revolute", axis=(0, 1, 0),
                   xyz=(0.4, 0, 0), mass=1.0, inertia=(0.1, 0.2, 0.3), com=(0.2, 0, 0.1))
    for body, q_rows in (("base", {0}), ("shoulder", {1, 2, 3, 4}), ("forearm", {5})):
        text = S.function_text(model, "step", body=body)
        assert {int(m) for m in re.findall(r"^q_next\[(\d+)\]", text, re.M)} == q_rows, body


def test_a_coupled_forward_dynamics_title_names_its_recursion():
    """On a mimic-coupled tree the forward dynamics are passes 1-3 and G^T M G's LDL^T; the
    title said Si & Guenter passes 1-6 (an outside tester), and so did the header's comment."""
    model = scleron.Model("mimic")
    model.add_body("a", joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1),
                   com=(0.1, 0, 0), joint_name="ja")
    model.add_body("b", parent="a", joint="revolute", axis=(0, 1, 0), mass=1.0,
                   inertia=(0.1, 0.1, 0.1), com=(0.1, 0, 0), joint_name="jb")
    model.joints[-1].mimic = ("ja", 2.0, 0.0)
    title = S.function_text(model, "fd").splitlines()[0]
    assert "passes 1-6" not in title and "G^T M G" in title and "passes 1-3" in title, title
    files, _, _ = scleron.pipeline.build_sources(model, functions=["fd"])
    assert "M_r = G^T M G through the coupling G" in files["mimic_dynamics.h"]
    # and with fext, which keeps its sentence (a reviewer: the coupled doc had dropped it)
    title = S.function_text(model, "fd_fext").splitlines()[0]
    assert "G^T M G" in title and "external wrenches fext on the frames" in title, title


def test_a_quaternion_or_mimic_joints_c_reads_the_models_entries():
    """An outside reviewer: `show --joint --format c` numbered each joint's coordinates from
    q[0], and read a quaternion joint's velocities from q (qd1 = q[4])."""
    model = scleron.Model("qm")
    model.add_body("base", joint="free_flyer", mass=2.0, inertia=(0.1, 0.2, 0.3))
    model.add_body("arm", parent="base", joint="spherical_quat", mass=1.0, inertia=(0.1, 0.1, 0.1),
                   com=(0.1, 0, 0), joint_name="shoulder")
    c = S.show(model, joint="shoulder", what="S", fmt="c")
    for k in range(4):
        assert f"const double q{k + 1} = q[{7 + k}];" in c
    for k in range(3):
        assert f"const double qd{k + 1} = qd[{6 + k}];" in c
    # a mimic joint's coordinate is its leader's entry, scaled and offset
    model.add_body("hand", parent="arm", joint="revolute", axis=(0, 0, 1), mass=1.0,
                   inertia=(0.1, 0.1, 0.1), com=(0.1, 0, 0), joint_name="elbow")
    model.add_body("tip", parent="hand", joint="revolute", axis=(0, 1, 0), mass=1.0,
                   inertia=(0.1, 0.1, 0.1), com=(0.1, 0, 0), joint_name="wrist")
    model.joints[-1].mimic = ("elbow", -1.5, -0.3)
    c = S.show(model, joint="wrist", fmt="c")
    assert "const double q1 = -1.5 * q[11] - 0.3;" in c and "const double qd1 = -1.5 * qd[9];" in c
    assert "q1: -1.5 * q[11] - 0.3, q[11] = elbow" in S.show(model, joint="wrist")


def test_hostile_names_in_latex_and_c(tmp_path):
    model = scleron.Model("m")
    model.add_body("a}\\input{/etc/passwd}$^_%&#~\\", mass=1.0, inertia=(1, 1, 1),
                   joint_name="j */ system(x); /* \\write18{rm}")
    doc = S.function_text(model, "id", fmt="latex")
    assert "\\input{/etc" not in doc and "\\write18" not in doc
    latex_ok(doc, tmp_path)
    latex_ok(S.show(model, fmt="latex"), tmp_path)
    c = S.function_text(model, "id", fmt="c") + S.show(model, fmt="c")
    code = re.sub(r"/\*.*?\*/", " ", c, flags=re.S)           # what a C compiler reads
    assert "system" not in code and "/*" not in code and "*/" not in code, code


def test_tree_is_kept(small):
    text = S.show(scleron.load_model(small), tree=True)
    assert text.splitlines()[:3] == ["small: 3 bodies, nq = nv = 7", "world", "└─ base  [slide: prismatic, 1 DOF]"]


# ---- every alias, the derivatives and the one-frame functions (issues 10, 11) --------------------
ARM2 = """\
name: arm2
bodies:
  - {name: base, parent: world, mass: 2, com: [0, 0, 0.1], inertia: [0.02, 0.03, 0.04],
     joint: {name: slide, type: prismatic, axis: [1, 0, 0], damping: 0.3}}
  - {name: arm, parent: base, mass: 1, com: [0.25, 0, 0], inertia: [0.005, 0.02, 0.02],
     joint: {name: shoulder, type: revolute, axis: [0, 1, 0], xyz: [0, 0, 0.3], stiffness: 5}}
  - {name: hand, parent: arm, mass: 0.3, com: [0.05, 0.01, 0], inertia: [0.001, 0.001, 0.0015],
     joint: {name: wrist, type: revolute, axis: [0, 0, 1], xyz: [0.5, 0, 0]},
     frames: [{name: tool, xyz: [0.1, 0.02, 0]}]}
"""


@pytest.fixture(scope="module")
def arm2(tmp_path_factory):
    path = tmp_path_factory.mktemp("show") / "arm2.yaml"
    path.write_text(ARM2)
    model = scleron.load_model(str(path))
    return str(path), model, Tree(model)


def test_every_alias_and_name_is_a_choice():
    """`scleron show --function` takes each function's name and every alias (fd_derivatives and
    fdd alike), and the one-frame functions; they name the same spec."""
    from scleron.cli import build_parser
    from scleron.functions import FUNCTIONS
    parser = build_parser()
    for f in FUNCTIONS.values():
        for name in (f.name, *f.aliases):
            assert parser.parse_args(["show", "m.yaml", "--function", name]).function == name
            assert S.resolve_function(None, name) is f
    for name in ("frame_jacobian", "frame_jacobian_local", "frame_jacobian_world",
                 "frame_placement"):
        assert parser.parse_args(["show", "m.yaml", "--function", name,
                                  "--frame", "tool"]).frame == "tool"


@pytest.mark.parametrize("alias", ["fdd", "fd_derivatives"])
def test_show_prints_the_derivatives_like_the_others(arm2, alias, rng):
    """The forward dynamics' derivatives by an alias: passes, bodies, counts, and statements that
    compute what the recursion does (the springs and dampers of arm2 included)."""
    path, model, tree = arm2
    text = S.function_text(model, alias, tree=tree)
    assert text.startswith("arm2 forward_dynamics_derivatives: ")
    assert "operations by pass (after / before simplification):" in text
    assert "inverse dynamics derivatives: tangents" in text and "mass matrix inverse" in text
    assert "== outputs" in text
    assert "(the unrolled program" not in text                      # nv = 3: codegen unrolls it
    small = S.function_text(model, "fd", tree=tree)
    assert "(the unrolled program" not in small
    inputs = {"q": rng.uniform(-1, 1, 3), "qd": rng.uniform(-1, 1, 3), "tau": rng.uniform(-1, 1, 3)}
    got = run_text(text, inputs, tree.nv)
    ref = np.ravel(derivatives.forward_dynamics_derivatives(
        tree, FloatAlgebra(), *[list(inputs[a]) for a in ("q", "qd", "tau")]))
    assert np.allclose(got, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("function, reference", [("frame_jacobian", "local_world_aligned"),
                                                 ("frame_jacobian_world", "world")])
def test_show_prints_one_frame(arm2, function, reference, rng):
    """A one-frame function with --frame: the frame's Jacobian, computed by the printed
    statements, with fewer operations than every frame's (only the frame's ancestors)."""
    path, model, tree = arm2
    text = S.function_text(model, function, tree=tree, frame="tool")
    k = [f.name for f in tree.frames].index("tool")
    assert f"of frame tool, reference {reference}" in text.splitlines()[0]
    q = rng.uniform(-1, 1, 3)
    got = run_text(text, {"q": q}, tree.nv)
    ref = frames.frame_jacobians(tree, FloatAlgebra(), list(q), reference=reference)[k]
    assert np.allclose(got, np.ravel(ref), rtol=1e-10, atol=1e-12)
    every = S.function_text(model, "jacobians" + ("_world" if reference == "world" else ""),
                            tree=tree)

    def ops(t, when="after"):
        return int(re.search(when + r" simplification: +(\d+) ops", t).group(1))
    # the other frames' work is not done: a frame high in the tree costs less than every frame
    # (the tool's world Jacobian is its whole chain's columns, every other frame's among them)
    assert ops(text, "before") <= ops(every, "before") and ops(text) <= ops(every)
    arm = S.function_text(model, function, tree=tree, frame="arm")
    assert ops(arm, "before") < ops(every, "before") and ops(arm) < ops(every)
    with pytest.raises(scleron.ModelError, match="give --frame NAME .frames: base, arm, hand, tool"):
        S.function_text(model, function, tree=tree)
    with pytest.raises(scleron.ModelError, match="no frame named 'nope'"):
        S.function_text(model, function, tree=tree, frame="nope")
    # another letter case names the frame where it names one only, as the generated modules take
    # it (show said "no frame named 'TOOL'": an outside tester)
    assert S.function_text(model, function, tree=tree, frame="TOOL") == text
    with pytest.raises(scleron.ModelError, match="--frame selects the frame of a one-frame"):
        S.function_text(model, "fd", tree=tree, frame="tool")


def test_constant_outputs_say_so(arm2):
    """A function whose outputs all fold to constants prints no ratio of infinity."""
    path, model, tree = arm2
    text = S.function_text(model, "frame_placement", tree=tree, frame="base")
    assert "inf" not in text and "every output a constant" in text


# ---- the command line ----------------------------------------------------------------------------
def test_cli_show_function(small):
    r = cli("show", small, "--function", "fd", "--body", "hand")
    assert r.returncode == 0, r.stderr
    assert "pass 3 (S&G 24-25): force on body hand, joint wrist" in r.stdout
    assert "mass matrix (Featherstone Table 6.2): column of joint wrist" in r.stdout  # LTDL form
    assert "solved by its sparse LTDL factors" in r.stdout
    assert "before simplification" in r.stdout and "after simplification" in r.stdout
    r = cli("show", small, "--function", "mass", "--format", "c")
    assert r.returncode == 0 and r.stdout.startswith("/* small mass_matrix")
    # where codegen writes a loop form (the products of fdd from 4 coordinates), show says so
    text = S.function_text(scleron.load_model(small), "fdd")
    assert "(the unrolled program; `scleron codegen` writes this function for this model in " \
           "loop form: -M^-1 dtau/dx as dense products" in text


@pytest.mark.parametrize("args, needle", [
    (["show", "{small}", "--body", "arm"], "--body NAME needs --function"),
    (["show", "{small}", "--function", "fd", "--body", "nope"], "no body or joint named 'nope'"),
    (["show", "{small}", "--joint", "nope"], "no joint named 'nope'"),
    (["show", "{small}", "--function", "warp"], "invalid choice"),
    (["show", "{small}", "--frame", "arm"], "--frame NAME needs --function"),
    (["show", "{small}", "--function", "frame_jacobian"], "give --frame NAME"),
    (["show"], "the following arguments are required"),
    (["show", "{small}", "--tree", "--function", "fd"], "cannot be combined"),
    (["show", "{small}", "--tree", "--format", "latex"], "--tree prints text only"),
    (["show", "{small}", "--function", "fd", "--what", "S"], "does not apply to --function"),
    (["draw", "{small}", "-o", "{tmp}/x.png", "--q", "1", "2"], "nq = 7 numbers"),
    (["draw", "{small}", "-o", "{tmp}/x.unknownformat"], "cannot write .unknownformat"),
    (["draw", "{small}", "-o", "{tmp}/no/such/dir/x.png"], "does not exist"),
    (["draw", "{tmp}/missing.yaml", "-o", "{tmp}/x.png"], "missing.yaml"),
    (["codegen", "{small}", "--chunk", "0", "-o", "{tmp}/out"], "--chunk"),
])
def test_cli_errors_are_one_line(small, tmp_path, capsys, args, needle):
    """In this process (scleron.cli.main, as the entry point calls it; argparse's own errors
    exit): a second Python per case cost 2 s each. The first case also runs the real command."""
    args = [a.format(small=small, tmp=tmp_path) for a in args]
    try:
        code = main(args)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    one_line_error(subprocess.CompletedProcess(args, code, out, err), needle)
    if args[:3] == ["show", small, "--body"]:
        one_line_error(cli(*args), needle)
    assert os.listdir(tmp_path) == []                        # nothing written


def test_draw(small, tmp_path):
    out = tmp_path / "small.png"
    r = cli("draw", small, "-o", str(out), "--q", "0.1", "0.2", "-0.3", "0.4", "0.1", "0.2", "0.3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"wrote {out}"
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10000
    assert sorted(os.listdir(tmp_path)) == ["small.png"]      # no temporary file left


def test_draw_writes_through_links_keeps_modes_and_the_callers_backend(small, tmp_path, capsys):
    """An outside tester: draw() called matplotlib.use("Agg") (a notebook's pyplot backend
    changed under it), replaced a symbolic link by a file and an existing file's mode by the
    umask's, and took .pgf, which fails for want of xelatex after the work. simulate's files
    behaved; both write through scleron.outputs now."""
    target = tmp_path / "target.png"
    target.write_bytes(b"old")
    target.chmod(0o600)
    (tmp_path / "link.png").symlink_to(target)
    code = ("import sys, matplotlib; matplotlib.use('svg'); import matplotlib.pyplot; "
            "import scleron; from scleron.draw import draw; "
            "m = scleron.load_model(sys.argv[1]); draw(m, sys.argv[2]); "
            "print(matplotlib.get_backend())")
    r = subprocess.run([sys.executable, "-c", code, small, str(tmp_path / "link.png")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.split()[-1] == "svg", (r.stdout, r.stderr)
    assert (tmp_path / "link.png").is_symlink()
    assert target.read_bytes().startswith(b"\x89PNG") and (target.stat().st_mode & 0o777) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["link.png", "target.png"]
    for args in (["draw", small, "-o", str(tmp_path / "x.pgf")],
                 ["simulate", small, "--duration", "0.01", "--dt", "0.01", "--plot",
                  str(tmp_path / "x.pgf"), "-o", str(tmp_path / "x.npz")]):
        if shutil.which("xelatex") is None:           # (with it, .pgf is written)
            one_line_error(in_process(args, capsys), "matplotlib writes .pgf files through a TeX system")
    one_line_error(in_process(["draw", small, "-o", f"{tmp_path}/y.png/"], capsys), "is a folder")
    assert sorted(os.listdir(tmp_path)) == ["link.png", "target.png"]


def test_a_robot_far_from_the_world_origin_fills_the_picture():
    """solo12 drawn at x = 20 m was a few pixels beside the origin (an outside tester): the
    origin leaves the view where the robot stands more than two of its sizes away."""
    pytest.importorskip("matplotlib")
    from scleron.draw import _figure, _plot
    model = scleron.Model("flyer")
    model.add_body("base", mass=1.0, inertia=(0.1, 0.1, 0.1), joint="free_flyer", joint_name="root")
    model.add_body("leg", parent="base", mass=0.5, com=(0.0, 0.0, -0.1), inertia=(0.01, 0.01, 0.01),
                   joint="revolute", axis=(1, 0, 0), xyz=(0.0, 0.0, -0.2))
    for x, far in ((20.0, True), (0.3, False)):
        fig = _figure()
        _plot(fig, model, np.array([x, 0.0, 0.0, 0, 0, 0, 1, 0.2]), 20.0, -60.0, None, None)
        ax = fig.axes[0]
        assert (ax.get_xlim()[0] > 19.0) == far and ("off the picture" in ax.get_title()) == far


def in_process(args, capsys):
    """scleron's command line run in this process, as a CompletedProcess."""
    try:
        code = main(args)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def test_draw_kinematics():
    from scleron.draw import forward_kinematics
    model = scleron.load_model(example("rc20.yaml"))
    _, frames = forward_kinematics(model, np.zeros(model.nq))
    assert np.allclose(frames[0], np.eye(4))
    # by hand: a revolute about z at the root turned by 90 degrees carries the chain along y
    q = np.zeros(model.nq)
    q[0] = math.pi / 2
    _, turned = forward_kinematics(model, q)
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    for a, b in zip(frames, turned):
        assert np.allclose(b[:3, 3], Rz @ a[:3, 3])


def test_a_configuration_names_each_entry_of_q_and_wants_unit_quaternions():
    from scleron.kinematics import configuration
    model = scleron.Model("ball")
    model.add_body("a", mass=1.0, inertia=(0.1, 0.1, 0.1), joint="spherical_quat", joint_name="ball")
    with pytest.raises(ValueError, match=r"nq = 4 numbers \(in order: ball\[0\], ball\[1\], "
                                         r"ball\[2\], ball\[3\]\), got 1"):
        configuration(model, [1.0])
    with pytest.raises(ValueError, match="q: joint 'ball': its quaternion .* length 0"):
        configuration(model, [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(configuration(model, [0, 0, 0, 0.9999]), [0, 0, 0, 1.0], rtol=1e-15)


def test_draw_kinematics_match_pinocchio(rng):
    pin = pytest.importorskip("pinocchio")
    from scleron.draw import forward_kinematics
    path = robot_urdf("panda")
    model = scleron.load_model(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, model.nq)
        pin.forwardKinematics(pm, data, q)
        _, frames = forward_kinematics(model, q)
        for i, T in enumerate(frames):
            assert np.allclose(T, data.oMi[i + 1].homogeneous, atol=1e-12), model.bodies[i].name


@pytest.mark.parametrize("option", ["--azim", "--elev"])
def test_draw_view_angles_must_be_finite(small, tmp_path, option):
    r = subprocess.run([sys.executable, "-m", "scleron", "draw", small, "-o", str(tmp_path / "x.png"),
                        option, "nan"], capture_output=True, text=True, timeout=120)
    one_line_error(r, f"argument {option}: must be a finite number, not 'nan'")
    assert os.listdir(tmp_path) == []


def test_draw_without_matplotlib_is_one_line(small, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from scleron.cli import main; "
            f"sys.exit(main(['draw', {small!r}, '-o', {str(tmp_path / 'x.png')!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    one_line_error(r, "pip install matplotlib")
    assert os.listdir(tmp_path) == []


def test_docs_excerpt_is_current():
    """docs/inspecting.md quotes `scleron show examples/rc20.yaml --function fd`; if this fails
    after a change to scleron, paste the new first 40 lines of that command into the doc."""
    doc = open(os.path.join(ROOT, "docs", "inspecting.md")).read()
    m = re.search(r"the first 40 lines:\n\n```\n(.*?)\.\.\.\n```", doc, flags=re.S)
    assert m, "the excerpt is missing from docs/inspecting.md"
    model = scleron.load_model(example("rc20.yaml"))
    now = "".join(ln + "\n" for ln in S.function_text(model, "fd").splitlines()[:40])
    assert m.group(1) == now


def test_readme_excerpt_is_current():
    """README.md quotes the first 24 lines of `scleron show examples/rc20.yaml --function fd`."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    model = scleron.load_model(example("rc20.yaml"))
    now = "\n".join(S.function_text(model, "fd").splitlines()[:24])
    assert now + "\n..." in readme


def test_an_output_under_a_file_is_named_as_such(small, tmp_path, capsys):
    """`draw -o afile/d.png` and `simulate -o afile/x.npz` said the folder afile does not
    exist, where afile is a file."""
    (tmp_path / "afile").write_text("")
    for args in (["draw", small, "-o", f"{tmp_path}/afile/d.png"],
                 ["simulate", small, "--duration", "0.01", "--dt", "0.01", "-o",
                  f"{tmp_path}/afile/x.npz"]):
        try:
            code = main(args)
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        one_line_error(subprocess.CompletedProcess(args, code, out, err),
                       f"{tmp_path}/afile is a file, not a folder")


def test_draw_names_the_file_and_the_body_where_it_cannot_draw(small, tmp_path, capsys):
    """An outside tester: a pose that is NaN (a custom joint's 1/q at 0) gave numpy's warnings
    and matplotlib's "Axis limits cannot be NaN or Inf"; -o a folder named x.png showed the
    temporary file's name; a wrong --q count did not name the model file."""
    from scleron.cli import main
    model = tmp_path / "sing.yaml"
    model.write_text("name: sing\nbodies:\n  - {name: b1, parent: world, mass: 1.0, com: [0.1, 0, 0],\n"
                     "     inertia: [0.01, 0.02, 0.025], joint: {name: cj, type: custom,\n"
                     "     coordinates: [a], translation: ['1/a', '0', '0']}}\n")
    (tmp_path / "dir.png").mkdir()
    cases = (([str(model), "-o", str(tmp_path / "x.png")],
              f"{model}: body 'b1': its pose is not finite at this q"),
             ([str(model), "-o", str(tmp_path / "dir.png"), "--q", "1"], "dir.png is a folder"),
             ([small, "-o", str(tmp_path / "y.png"), "--q", "1"], f"{small}: q must have nq = 7"))
    for args, needle in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # (no numpy RuntimeWarning on the way)
            assert main(["draw", *args]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.splitlines()) == 1, err
    assert sorted(os.listdir(tmp_path)) == ["dir.png", "sing.yaml"] and not os.listdir(tmp_path / "dir.png")


def test_show_names_a_function_a_mimic_model_does_not_have():
    """"this function is not available yet ..." named no function, and its list left out the
    integrate/difference Jacobians, which a coupled model has (an outside tester)."""
    r = cli("show", os.path.join("tests", "data", "urdf", "mimic_gripper.urdf"), "--mimic",
            "couple", "--function", "jcom")
    one_line_error(r, "com_jacobian: this function is not available yet for a model with mimic "
                      "joints")
    assert "integrate and difference and their Jacobians" in r.stderr


def test_show_of_a_singular_model_names_the_joint(tmp_path):
    """An outside tester: `show --function fd` of a body without inertia about its hinge ended
    in an internal ZeroDivisionError (a constant pivot 0 folded as 1 / 0); codegen's ModelError."""
    path = tmp_path / "flat.yaml"
    path.write_text("name: flat\nbodies:\n- name: disc\n  parent: world\n"
                    "  joint: {name: spin, type: revolute, axis: [0, 0, 1]}\n"
                    "  mass: 1.0\n  inertia: [0.1, 0.1, 0.0]\n")
    r = cli("show", str(path), "--function", "fd")
    one_line_error(r, "joint 'spin': the mass matrix is singular")


def test_show_of_what_a_singular_or_partly_undefined_model_still_computes(tmp_path):
    """A singular M is worth seeing (mass, id have no division by its pivots), and a joint
    undefined at q = 0 but not at its initial q shows every function: the model checks run
    only where unrolling divides by zero (a reviewer: both were refused for a while)."""
    flat = tmp_path / "flat.yaml"
    flat.write_text("name: flat\nbodies:\n- name: disc\n  parent: world\n"
                    "  joint: {name: spin, type: revolute, axis: [0, 0, 1]}\n"
                    "  mass: 1.0\n  inertia: [0.1, 0.1, 0.0]\n")
    for f in ("mass", "id"):
        r = cli("show", str(flat), "--function", f)
        assert r.returncode == 0 and "after simplification" in r.stdout, (f, r.stderr)
    logj = tmp_path / "logj.yaml"
    logj.write_text("name: logj\nbodies:\n- name: a\n  parent: world\n"
                    "  joint: {name: ja, type: custom, coordinates: [a], translation: [\"log(a)\", \"0\", \"0\"]}\n"
                    "  mass: 1.0\n  inertia: [0.1, 0.1, 0.1]\ninitial: {q: {ja: 1.0}}\n")
    r = cli("show", str(logj), "--function", "fd")
    assert r.returncode == 0 and "logj forward_dynamics" in r.stdout, r.stderr


def test_a_mimic_body_says_where_its_entries_are():
    """--body of a mimic joint's body printed an empty outputs section without a word (a
    tester): its coordinate is its leader's, and so are the entries it adds to."""
    model = scleron.load_model(os.path.join(ROOT, "tests", "data", "urdf", "mimic_gripper.urdf"),
                               mimic="couple")
    text = S.function_text(model, "mass", body="finger_b")
    outputs = text.split("== outputs\n")[1].splitlines()
    assert outputs == ["(none of body finger_b's own: joint j2_finger_b is a mimic of joint "
                       "j1_finger_a, and what it adds is in the entries of that joint's "
                       "coordinate: --body finger_a)"]
    assert "M[" in S.function_text(model, "mass", body="finger_a").split("== outputs")[1]
