"""The loop forms of the generated code.

Method II (S&G section 4): forward dynamics with passes 4-6 as loops over the bodies, one
kernel per joint class. It must give Method I's accelerations (and so the reference's) for
every joint kind, and generate less code.

The mass matrix in loop form (world-frame columns, dense products): it must equal the
unrolled body-frame CRBA, on chains (every upper entry) and branched trees (zeros between
branches), and the auto choice must pick it for large trees only.

The derivatives in loop form (the entries between related bodies as dot products of
per-coordinate vectors, and the products -M^-1 dtau/dx, as C loops): they must equal the
reference recursion, from PRODUCT_LOOP_FROM_NV coordinates on, zeros between branches included."""
import json
import os

import numpy as np
import pytest

import scleron
from scleron.dynamics import configuration, derivatives, recursions as rec
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.functions import function_spec
from scleron.model.yaml_loader import model_from_dict
from scleron.pipeline import (MASS_LOOP_FROM_NV, PRODUCT_LOOP_FROM_NV, build_sources, code_form, mass_form,
                              mass_matrix_entries, model_mass_form)
from scleron.unroll import (PAIR_LOOP_FROM_PAIRS, related_pairs, unroll_mass_loop, unroll_method2,
                            unroll_minv_loop)

from conftest import DYNAMICS, example

# rc20: one class repeated; branched: revolute, spherical (ZYX), universal, helical, cylindrical,
# composite, ball_exp, planar, translational; quadruped: a 6-DOF free root (XYZ chart)
MODELS = ["rc20", "branched", "quadruped"]
# compiling rc20 twice more costs ~35 s of the default suite; its one repeated class is also what
# test_joint_classes_share_kernels checks, so the compiled rc20 cases run with the slow ones;
# so do the quadruped's (23 s; its free root's loops are checked uncompiled, and branched keeps
# every other joint class compiled in the default run)
COMPILED_MODELS = [pytest.param("rc20", marks=pytest.mark.slow), "branched",
                   pytest.param("quadruped", marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def variant(build_dir, generated):
    """variant(name, suffix, **options) -> (model, default module, module built with options)."""
    cache = {}

    def get(name, suffix, **options):
        if (name, suffix) not in cache:
            model, default = generated(example(f"{name}.yaml"), name)
            other = scleron.generate(model, os.path.join(build_dir, f"{name}_{suffix}"),
                                     f"{name}_{suffix}", **{"functions": DYNAMICS, **options})
            cache[name, suffix] = (model, default, other)
        return cache[name, suffix]
    return get


@pytest.fixture(scope="module")
def pair(variant):
    return lambda name: variant(name, "m2", method=2)


@pytest.mark.parametrize("name", COMPILED_MODELS)
def test_method2_equals_method1_and_reference(pair, name, rng):
    model, m1, m2 = pair(name)
    tree = Tree(model)
    for _ in range(5):
        q, qd, tau = (rng.uniform(-1.2, 1.2, model.nv) for _ in range(3))
        a1, a2 = m1.forward_dynamics(q, qd, tau), m2.forward_dynamics(q, qd, tau)
        ref = np.array(rec.forward_dynamics(tree, FloatAlgebra(), list(q), list(qd), list(tau)))
        scale = max(1.0, np.abs(ref).max())
        assert np.abs(a2 - a1).max() / scale <= 1e-11
        assert np.abs(a2 - ref).max() / scale <= 1e-11
        # M qdd + h = tau, with M and h of the same module (unrolled in both methods)
        assert np.abs(m2.mass_matrix(q) @ a2 + m2.bias_forces(q, qd) - tau).max() <= 1e-9 * scale


def test_method2_batch_equals_single(pair, rng):
    model, _, m2 = pair("branched")
    Q, QD, T = (rng.uniform(-1, 1, (7, model.nv)) for _ in range(3))
    batch = m2.forward_dynamics(Q, QD, T)
    for k in range(7):
        np.testing.assert_array_equal(batch[k], m2.forward_dynamics(Q[k], QD[k], T[k]))


def test_joint_classes_share_kernels():
    tree = Tree(scleron.load_model(example("rc20.yaml")))
    _, _, m2 = unroll_method2(tree, function_spec("fd"))
    # RC: identical placements and joints: the root's class and one class for the other 19
    assert [c.root for c in m2.classes] == [True, False]
    assert [b["cls"] for b in m2.bodies] == [0] + [1] * 19
    # Rx(90) Rz(q) has 4 non-structural entries (cos, sin twice); t = (1,0,0) and S = e_z fold
    assert m2.classes[1].kin_size == 4 and m2.nkin == 80
    # quadruped: the free root, then hip (x axis), thigh and knee (y axes) shared by all four legs
    tree = Tree(scleron.load_model(example("quadruped.yaml")))
    _, _, m2 = unroll_method2(tree, function_spec("fd"))
    assert [b["cls"] for b in m2.bodies] == [0] + [1, 2, 3] * 4
    assert sum(len(c.kernels) for c in m2.classes) == 3 * len(m2.classes)


def test_method2_code_is_smaller_and_recorded():
    model = scleron.load_model(example("rc20.yaml"))
    f1, _, k1 = build_sources(model, "rc20")
    f2, _, k2 = build_sources(model, "rc20", method=2)
    assert k1 != k2                                        # a separate cache entry
    s1 = json.loads(f1["scleron.json"])["functions"]["forward_dynamics"]["statements"]
    meta = json.loads(f2["scleron.json"])
    s2 = meta["functions"]["forward_dynamics"]["statements"]
    assert meta["method"] == 2 and s2 < 0.6 * s1
    assert "Method II" in f2["rc20_dynamics.c"] and "rc20_k1_articulated_inertia" in f2["rc20_dynamics.c"]
    # the other three functions are unchanged
    for fn in ("inverse_dynamics", "mass_matrix", "bias_forces"):
        assert meta["functions"][fn] == json.loads(f1["scleron.json"])["functions"][fn]


def test_method_must_be_known():
    with pytest.raises(ValueError, match="method"):
        build_sources(scleron.load_model(example("rc20.yaml")), "rc20", method=3)


# ---- the mass matrix in loop form ----------------------------------------------------------------
@pytest.fixture(scope="module")
def mass_pair(variant):
    return lambda name: variant(name, "ml", mass_matrix="loop")


@pytest.mark.parametrize("name", COMPILED_MODELS)
def test_mass_loop_equals_unrolled(mass_pair, name, rng):
    model, unrolled, loop = mass_pair(name)
    Q = rng.uniform(-2.5, 2.5, (6, model.nv))
    for q in Q:
        A, B = unrolled.mass_matrix(q), loop.mass_matrix(q)
        assert np.abs(A - B).max() <= 1e-13 * np.abs(A).max()
        assert np.abs(B - B.T).max() <= 1e-13 * np.abs(B).max()
    # the batch and out= paths write every entry (zeros between branches included)
    out = np.full((6, model.nv, model.nv), np.nan)
    loop.mass_matrix(Q, out=out)
    np.testing.assert_array_equal(out, np.stack([loop.mass_matrix(q) for q in Q]))


@pytest.mark.parametrize("name", MODELS)
def test_world_columns_reference_equals_crba(name, rng):
    tree = Tree(scleron.load_model(example(f"{name}.yaml")))
    q = list(rng.uniform(-2.5, 2.5, tree.nv))
    A = np.array(rec.mass_matrix(tree, FloatAlgebra(), q))
    B = np.array(rec.mass_matrix_world(tree, FloatAlgebra(), q))
    assert np.abs(A - B).max() <= 1e-13 * np.abs(A).max()


def test_ancestor_ranges_cover_exactly_the_related_pairs():
    tree = Tree(scleron.load_model(example("branched.yaml")))
    body_of = [b.index for b in tree.bodies for _ in range(b.dof)]

    def ancestors(i):
        out = {i}
        while tree.bodies[i].parent >= 0:
            i = tree.bodies[i].parent
            out.add(i)
        return out
    want = {(r, c) for r in range(tree.nv) for c in range(r, tree.nv)
            if body_of[r] in ancestors(body_of[c])}
    _, _, ml = unroll_mass_loop(tree, function_spec("mass"))
    upper = {(r, c) for r, first, end in ml.upper for c in range(first, end)}
    lower = {(c, r) for r, first, end in ml.lower for c in range(first, end)}
    assert upper == want
    assert lower == {(r, c) for r, c in want if r != c}
    assert len(want) < tree.nv * (tree.nv + 1) // 2          # some pairs are unrelated


def test_related_ranges_cover_exactly_the_strict_pairs():
    """The derivatives' pair loops (derivatives.related_ranges): "down" rows r against the
    columns of the strict descendants of r's body, "up" the transposed pairs; with the blocks of
    the bodies' own coordinates they cover every related entry once."""
    tree = Tree(scleron.load_model(example("branched.yaml")))
    body_of = [b.index for b in tree.bodies for _ in range(b.dof)]

    def strict_ancestors(i):
        out = set()
        while tree.bodies[i].parent >= 0:
            i = tree.bodies[i].parent
            out.add(i)
        return out
    want = {(r, c) for r in range(tree.nv) for c in range(tree.nv)
            if body_of[r] in strict_ancestors(body_of[c])}
    ranges = derivatives.related_ranges(tree)
    down = [(r, c) for r, first, end in ranges["down"] for c in range(first, end)]
    up = [(r, c) for c, first, end in ranges["up"] for r in range(first, end)]
    assert len(down) == len(set(down)) and set(down) == want
    assert len(up) == len(set(up)) and set(up) == want
    assert any(tree.bodies[b].dof > 1 for b in body_of)       # rows of multi-coordinate joints


def test_mass_form_auto_and_recorded():
    assert mass_form(MASS_LOOP_FROM_NV - 1) == "unrolled" and mass_form(MASS_LOOP_FROM_NV) == "loop"
    assert mass_form(10, "loop") == "loop" and mass_form(100, "unrolled") == "unrolled"
    with pytest.raises(ValueError, match="mass matrix form"):
        mass_form(10, "dense")
    # a branched tree (a humanoid's limbs leave most of M zero) keeps the unrolled form longer
    assert mass_form(38, entries=369) == "unrolled" and mass_form(50, entries=567) == "unrolled"
    assert mass_form(60, entries=1275) == "loop" and mass_form(40, entries=700) == "loop"
    # many free bodies: their own 6 x 6 blocks are constants, not work for loops (MuJoCo's
    # humanoid100, 101 free bodies: the loops took 54 us, the unrolled CRBA 35; an outside tester)
    assert mass_form(420, entries=70 * 21, own=70 * 21) == "unrolled"
    bodies = [{"name": f"box{k}", "parent": "world", "joint": {"type": "free_flyer"},
               "mass": 1.0, "inertia": [0.1, 0.2, 0.3]} for k in range(70)]
    boxes = model_from_dict({"name": "boxes", "bodies": bodies})
    assert model_mass_form(boxes) == "unrolled" and mass_matrix_entries(boxes) == (1470, 0)
    files, _, _ = build_sources(scleron.load_model(example("rc50.yaml")), "rc50")
    meta = json.loads(files["scleron.json"])
    assert meta["mass_matrix"] == "loop"
    assert "rc50_mass_matrix_products" in files["rc50_dynamics.c"]
    # O(n) statements instead of O(n^2): RC50's unrolled mass matrix has 18,722
    assert meta["functions"]["mass_matrix"]["statements"] < 8000


# ---- every joint kind of the showcase (torus contacts, splines, springs): slow to compile ------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["tc10", "spline_chain", "spline_surface"])
def test_loop_forms_on_general_joints(build_dir, name, rng):
    model = scleron.load_model(example(f"{name}.yaml"))
    dyn = scleron.generate(model, os.path.join(build_dir, f"{name}_loops"), f"{name}_loops",
                           method=2, mass_matrix="loop")
    tree = Tree(model)
    for _ in range(3):
        q, qd, tau = (rng.uniform(-0.8, 0.8, model.nv) for _ in range(3))
        ref_a = np.array(rec.forward_dynamics(tree, FloatAlgebra(), list(q), list(qd), list(tau)))
        ref_M = np.array(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
        assert np.abs(dyn.forward_dynamics(q, qd, tau) - ref_a).max() <= 1e-10 * max(1.0, np.abs(ref_a).max())
        assert np.abs(dyn.mass_matrix(q) - ref_M).max() <= 1e-12 * np.abs(ref_M).max()


# ---- the forward dynamics' derivatives in loop form ---------------------------------------------
def loop_form_tree_yaml():
    """A tree past both loop thresholds: a chain of 16 revolute and prismatic joints with a 3-body
    branch off its third body (19 coordinates >= PRODUCT_LOOP_FROM_NV, 132 related pairs >=
    PAIR_LOOP_FROM_PAIRS, and unrelated entries between the branch and the chain below it)."""
    lines = ["name: fdd_loop", "gravity: [0, 0, -9.81]", "bodies:"]
    parents = ["world"] + [f"c{i}" for i in range(15)] + ["c2", "b0", "b1"]
    names = [f"c{i}" for i in range(16)] + ["b0", "b1", "b2"]
    axes = ["[0, 0, 1]", "[0, 1, 0]", "[1, 0, 0]", "[0, 0.6, 0.8]"]
    for k, (name, parent) in enumerate(zip(names, parents)):
        kind = "prismatic" if k in (4, 17) else "revolute"
        lines += [f"- {{name: {name}, parent: {parent}, mass: {1.0 + 0.1 * k}, com: [0.1, 0.02, 0],",
                  f"   inertia: [0.01, 0.02, 0.015], joint: {{name: j{k}, type: {kind}, "
                  f"axis: {axes[k % 4]}, xyz: [0.3, 0, 0.05]}}}}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def fdd_loop(generated, tmp_path_factory):
    path = tmp_path_factory.mktemp("fdd_loop") / "fdd_loop.yaml"
    path.write_text(loop_form_tree_yaml())
    return generated(str(path), "fdd_loop", functions=["fdd", "idd", "minv"])


def test_forward_dynamics_derivatives_loop_form_equals_the_reference(fdd_loop, rng):
    """From PRODUCT_LOOP_FROM_NV coordinates on, -M^-1 dtau/dx is formed by C loops; the result
    must be the float reference recursion's (which multiplies in Python), and Minv M = I."""
    model, dyn = fdd_loop
    tree = Tree(model)
    assert dyn.nv >= PRODUCT_LOOP_FROM_NV and related_pairs(tree) >= PAIR_LOOP_FROM_PAIRS
    folder = os.path.dirname(dyn.__file__)
    c = open(os.path.join(folder, "fdd_loop_dynamics.c")).read()
    assert "fdd_loop_forward_dynamics_derivatives_negated_products(Minv, Dq, Dqd, dqdd_dq, dqdd_dqd)" in c
    assert "loop form: -M^-1 dtau/dx as dense products" in c
    assert "fdd_loop_forward_dynamics_derivatives_pairs_9_9(v_YJ, v_dAdV, v_dAvJ" in c
    assert "fdd_loop_forward_dynamics_derivatives_forward_run1(mb, " in c     # M^-1's column steps
    for _ in range(3):
        q, qd, tau = (rng.uniform(-1, 1, dyn.nv) for _ in range(3))
        got = dyn.forward_dynamics_derivatives(q, qd, tau)
        ref = derivatives.forward_dynamics_derivatives(tree, FloatAlgebra(), list(q), list(qd), list(tau))
        for g, r in zip(got, ref):
            r = np.asarray(r, dtype=float)
            assert np.max(np.abs(g - r)) <= 1e-10 * max(1.0, np.max(np.abs(r)))
        M = rec.mass_matrix(tree, FloatAlgebra(), list(q))
        np.testing.assert_allclose(got[2] @ np.asarray(M), np.eye(dyn.nv), atol=1e-10)


def test_inverse_dynamics_derivatives_loop_form_equals_the_reference(fdd_loop, rng):
    """From PRODUCT_LOOP_FROM_NV coordinates on, the entries of dtau/dq, dtau/dqd and M between a
    body and its strict descendants are formed by C loops; the result must be the float reference
    recursion's, exact zeros between the branch and the chain below its root included."""
    model, dyn = fdd_loop
    tree = Tree(model)
    folder = os.path.dirname(dyn.__file__)
    c = open(os.path.join(folder, "fdd_loop_dynamics.c")).read()
    assert "fdd_loop_inverse_dynamics_derivatives_pairs_6_9_9(v_YJ, v_J, v_dAdV, v_dAvJ" in c
    assert "memset(dtau_dq, 0" in c                     # a branched tree: unrelated entries
    ranges = derivatives.related_ranges(tree)
    related = {(r, c) for r, f, e in ranges["down"] for c in range(f, e)}
    body_of = [b.index for b in tree.bodies for _ in range(b.dof)]
    unrelated = [(r, c) for r in range(tree.nv) for c in range(tree.nv)
                 if body_of[r] != body_of[c] and (r, c) not in related and (c, r) not in related]
    assert unrelated
    for _ in range(3):
        q, qd, qdd = (rng.uniform(-1, 1, dyn.nv) for _ in range(3))
        dq, dqd, M = dyn.inverse_dynamics_derivatives(q, qd, qdd)
        ref = derivatives.inverse_dynamics_derivatives(tree, FloatAlgebra(), list(q), list(qd), list(qdd))
        for g, r in zip((dq, dqd, M), ref):
            r = np.asarray(r, dtype=float)
            assert np.max(np.abs(g - r)) <= 1e-12 * max(1.0, np.max(np.abs(r)))
            assert all(g[i, j] == 0.0 for i, j in unrelated)
        ref_M = np.asarray(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
        assert np.max(np.abs(M - ref_M)) <= 1e-12 * np.max(np.abs(ref_M))


def test_mass_matrix_inverse_loop_form_equals_the_reference(fdd_loop, rng):
    """With the pair loops, M^-1 is formed by column operations in C loops
    (derivatives.mass_matrix_inverse on unroll.LoopBlocks): the accelerations of the columns
    saved at the branching body and restored for its second child. It must equal the float
    reference and invert the mass matrix."""
    model, dyn = fdd_loop
    tree = Tree(model)
    c = open(os.path.join(os.path.dirname(dyn.__file__), "fdd_loop_dynamics.c")).read()
    assert "fdd_loop_mass_matrix_inverse_backward_run1(mb, " in c and "A_saved0" in c
    for _ in range(3):
        q = rng.uniform(-1, 1, dyn.nv)
        got = dyn.mass_matrix_inverse(q)
        ref = np.asarray(derivatives.mass_matrix_inverse(tree, FloatAlgebra(), list(q)))
        assert np.max(np.abs(got - ref)) <= 1e-12 * np.max(np.abs(ref))
        assert np.array_equal(got, got.T)
        M = np.asarray(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
        np.testing.assert_allclose(got @ M, np.eye(dyn.nv), atol=1e-10)


def out_of_order_yaml(wrenches=False):
    """Bodies not in depth-first order (a's child after b), and a second root: the in-place
    accelerations of derivatives.mass_matrix_inverse must be restored for both. wrenches:
    constant external wrenches on c (a leaf) and e (the second root)."""
    bodies = [("a", "world", "[0, 0, 1]"), ("b", "a", "[0, 1, 0]"), ("c", "a", "[1, 0, 0]"),
              ("d", "b", "[0, 0, 1]"), ("e", "world", "[0, 1, 0]"), ("f", "c", "[0, 1, 0]"),
              ("g", "e", "[1, 0, 0]")]
    lines = ["name: out_of_order", "gravity: [0, 0, -9.81]", "bodies:"]
    for k, (name, parent, axis) in enumerate(bodies):
        lines += [f"- {{name: {name}, parent: {parent}, mass: {1.0 + 0.2 * k}, com: [0.1, 0.03, 0],",
                  f"   inertia: [0.02, 0.03, 0.025], joint: {{name: j{k}, type: revolute, "
                  f"axis: {axis}, xyz: [0.2, 0.1, 0.05]}}"
                  + (f", wrench: [0.3, -0.2, 0.1, 1.5, 0.5, -2.0]" if wrenches and name in "ce" else "")
                  + "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("n", [3, 8])
def test_mass_matrix_inverse_mirror_compiled(tmp_path, monkeypatch, rng, n):
    """M^-1's lower triangle by 4 x 4 blocks transposed in registers (minvsteps.c.j2, mirror):
    RC3 (entry by entry), RC8 (two diagonal blocks and one transposed, no remainder rows); the
    loop form forced. Exactly symmetric, the reference's to rounding, every entry of out= written."""
    import sys
    import scleron.unroll
    monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    sys.path.insert(0, os.path.dirname(example("rc20.yaml")))
    from make_examples import rc_yaml
    path = tmp_path / f"rc{n}.yaml"
    path.write_text(rc_yaml(n))
    model = scleron.load_model(str(path))
    dyn = scleron.generate(model, str(tmp_path / "build"), f"rc{n}", functions=["minv"])
    c = open(tmp_path / "build" / f"rc{n}_dynamics.c").read()
    assert f"rc{n}_mass_matrix_inverse_mirror(Minv);" in c
    assert ("SCL_SHUFFLE4(ab0, cd0, 0, 1, 4, 5)" in c) == (n >= 8)
    tree = Tree(model)
    for q in rng.uniform(-2, 2, (3, n)):
        out = np.full((n, n), np.nan)
        dyn.mass_matrix_inverse(q, out=out)
        ref = np.array(derivatives.mass_matrix_inverse(tree, FloatAlgebra(), list(q)))
        assert np.array_equal(out, out.T)
        assert np.max(np.abs(out - ref)) <= 1e-12 * np.max(np.abs(ref))


def ball_chain_yaml():
    """A chain of Euler ball joints (3 dof) between hinges and a slider, with a branch of two
    hinges off its second body: runs of column steps of dof 1 and 3, some of two branches."""
    lines = ["name: ball_chain", "gravity: [0, 0, -9.81]", "bodies:"]
    joints = ["spherical", "revolute", "spherical", "spherical", "revolute", "prismatic",
              "spherical", "revolute", "revolute", "revolute", "revolute"]
    parents = ["world"] + [f"c{i}" for i in range(8)] + ["c1", "c9"]
    for k, (kind, parent) in enumerate(zip(joints, parents)):
        axis = "" if kind == "spherical" else f", axis: [{k % 2}, 1, {0.5 * (k % 3)}]"
        lines += [f"- {{name: c{k}, parent: {parent}, mass: {1.0 + 0.1 * k}, com: [0.1, 0.02, 0.03],",
                  f"   inertia: [0.01, 0.02, 0.015], joint: {{name: j{k}, type: {kind}{axis}, "
                  f"xyz: [0.3, 0, 0.05]}}}}"]
    return "\n".join(lines) + "\n"


def test_mass_matrix_inverse_runs_of_column_steps(tmp_path, monkeypatch, rng):
    """Consecutive column steps go in runs, four columns at a time in registers over the run's
    steps (MinvLoop.grouped_steps, minvsteps.c.j2 *_run kernels): the runs keep the steps' order
    and hold 2 to RUN_STEPS steps of one dof; compiled (loop form forced), M^-1 and the forward
    dynamics' derivatives equal the reference, every entry of out= (NaN) written."""
    import scleron.unroll
    from scleron.unroll import RUN_STEPS
    monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    monkeypatch.setattr(scleron.pipeline, "PRODUCT_LOOP_FROM_NV", 1)
    path = tmp_path / "ball_chain.yaml"
    path.write_text(ball_chain_yaml())
    model = scleron.load_model(str(path))
    tree = Tree(model)
    _, _, ml = unroll_minv_loop(tree, function_spec("minv"))
    grouped = ml.grouped_steps()
    flat = [t for s in grouped for t in (s.steps if s.kind.endswith("_run") else [s])]
    assert flat == ml.steps                                     # same steps, same order
    runs = [s for s in grouped if s.kind.endswith("_run")]
    assert {(s.kind, s.dof) for s in runs} >= {("backward_run", 1), ("forward_run", 3), ("backward_run", 3)}
    assert all(2 <= len(s.steps) <= RUN_STEPS and {t.dof for t in s.steps} == {s.dof} for s in runs)
    streak = longest = 1                                        # consecutive steps of one kind and dof
    for a, b in zip(ml.steps, ml.steps[1:]):
        streak = streak + 1 if a[:2] == b[:2] and a.kind in ("backward", "forward") else 1
        longest = max(longest, streak)
    assert max(len(s.steps) for s in runs) == min(RUN_STEPS, longest)
    dyn = scleron.generate(model, str(tmp_path / "build"), "ball_chain", functions=["fdd", "minv"])
    c = open(tmp_path / "build" / "ball_chain_dynamics.c").read()
    assert "ball_chain_mass_matrix_inverse_backward_run3(mb, " in c
    assert "ball_chain_forward_dynamics_derivatives_forward_run1(mb, " in c
    for _ in range(3):
        q, qd, tau = (rng.uniform(-1.2, 1.2, tree.nv) for _ in range(3))
        out = np.full((tree.nv, tree.nv), np.nan)
        dyn.mass_matrix_inverse(q, out=out)
        ref = np.asarray(derivatives.mass_matrix_inverse(tree, FloatAlgebra(), list(q)))
        assert np.array_equal(out, out.T)
        assert np.max(np.abs(out - ref)) <= 1e-12 * np.max(np.abs(ref))
        fdd_out = tuple(np.full((tree.nv, tree.nv), np.nan) for _ in range(3))
        dyn.forward_dynamics_derivatives(q, qd, tau, out=fdd_out)
        fdd_ref = derivatives.forward_dynamics_derivatives(tree, FloatAlgebra(), list(q), list(qd), list(tau))
        for g, r in zip(fdd_out, fdd_ref):
            r = np.asarray(r, dtype=float)
            assert np.max(np.abs(g - r)) <= 1e-10 * max(1.0, np.max(np.abs(r)))


def test_run_blocks_cover_each_column_once():
    """A run's blocks (the C's walk, unroll.run_blocks) cover its columns once each, widest
    first; run_groups takes three groups of four where the steps fill the blocks (a chain's
    forward steps) and fewer where three groups would compute much outside the steps' columns."""
    from scleron.unroll import BackwardStep, ForwardStep, run_blocks, run_groups, run_work
    for first, end, groups in [(0, 50, 3), (3, 38, 2), (5, 16, 3), (7, 9, 3), (4, 4, 1)]:
        blocks = run_blocks(first, end, groups)
        assert sorted(c for a, b in blocks for c in range(a, b)) == list(range(first, end))
        widths = [b - a for a, b in blocks]
        assert widths == sorted(widths, reverse=True) and max(widths, default=4) <= 4 * groups
    chain = [ForwardStep("forward", 1, 24 * v, v) for v in range(6)]     # columns v..49 each
    assert run_groups("forward", chain, 0, 50) == 3
    assert run_work("forward", chain, 0, 50, 3) <= 1.1 * run_work("forward", chain, 0, 50, 1)
    # n steps on the top 4 of 12 columns, m on all 12: (step, column) pairs of blocks of one /
    # two / three groups; the most groups within 10 % of one group's
    for n, m, work, groups in [(2, 4, [56, 64, 72], 1), (1, 5, [64, 68, 72], 2), (1, 8, [100, 104, 108], 3)]:
        steps = [BackwardStep("backward", 1, 0, 20, 32, 36)] * n + [BackwardStep("backward", 1, 0, 19, 24, 36)] * m
        assert [run_work("backward", steps, 24, 36, g) for g in (1, 2, 3)] == work
        assert run_groups("backward", steps, 24, 36) == groups


def test_mass_matrix_inverse_column_groups_compiled(tmp_path, monkeypatch, rng):
    """The runs' blocks of one, two and three groups of four columns (SCL_COLUMN_GROUPS set for
    the compiler, whatever the CPU's registers): RC30's M^-1 (runs of 6 steps over up to 29
    columns) and the ball chain's (dof 3 and 1, short ranges of two branches) equal the
    reference, every entry of out= (NaN) written, bit for bit the same in the three builds (each
    column sees the same operations in the same order)."""
    import sys
    import scleron.unroll
    from scleron.pipeline import default_cflags
    monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    sys.path.insert(0, os.path.dirname(example("rc20.yaml")))
    from make_examples import rc_yaml
    for name, text in [("rc30", rc_yaml(30)), ("ball_chain", ball_chain_yaml())]:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        model = scleron.load_model(str(path))
        tree = Tree(model)
        qs = rng.uniform(-2, 2, (3, tree.nq))
        outs = []
        for groups in (1, 2, 3):
            dyn = scleron.generate(model, str(tmp_path / f"{name}{groups}"), name, functions=["minv"],
                                   cflags=default_cflags() + [f"-DSCL_COLUMN_GROUPS={groups}"])
            c = open(tmp_path / f"{name}{groups}" / f"{name}_dynamics.c").read()
            assert "_mass_matrix_inverse_backward_run1(mb, " in c
            out = np.full((len(qs), tree.nv, tree.nv), np.nan)
            dyn.mass_matrix_inverse(qs, out=out)
            outs.append(out)
        assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
        for q, out in zip(qs, outs[2]):
            ref = np.array(derivatives.mass_matrix_inverse(tree, FloatAlgebra(), list(q)))
            assert np.array_equal(out, out.T)
            assert np.max(np.abs(out - ref)) <= 1e-9 * np.max(np.abs(ref))


def test_column_step_kernels_compile_plain_and_without_unused_ones(tmp_path, monkeypatch):
    """An outside reviewer: the runs' block kernels (GCC vector types) were outside the guard of
    GCC's vectors, so a compiler without them stopped at 'unknown type name scl_v4' (the run
    kernels' scalar loops are the fallback); and every dof of a run got both run kernels, one
    unused (-Wunused-function) where a dof had only backward runs. Syntax-checked with
    -Wall -Werror, once as GCC and once with __GNUC__ undefined after the system headers."""
    import shutil
    import subprocess
    import scleron.unroll
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    # a ball root whose descendants' columns are not consecutive (a second root's between
    # them): two backward steps of dof 3, one forward step
    lines = ["name: split", "gravity: [0, 0, -9.81]", "bodies:"]
    for k, (name, parent, kind) in enumerate([("a", "world", "spherical"), ("b", "a", "revolute"),
                                              ("c", "world", "revolute"), ("d", "a", "revolute"),
                                              ("e", "d", "revolute")]):
        axis = "" if kind == "spherical" else ", axis: [0, 1, 0.5]"
        lines.append(f"- {{name: {name}, parent: {parent}, mass: {1 + 0.1 * k}, com: [0.1, 0.02, 0],"
                     f" inertia: [0.01, 0.02, 0.015], joint: {{type: {kind}{axis}, xyz: [0.3, 0, 0]}}}}")
    path = tmp_path / "split.yaml"
    path.write_text("\n".join(lines) + "\n")
    model = scleron.load_model(str(path))
    _, _, ml = unroll_minv_loop(Tree(model), function_spec("minv"))
    assert 3 in ml.run_dofs("backward") and 3 not in ml.run_dofs("forward")
    scleron.generate(model, str(tmp_path / "build"), "split", functions=["minv"], compile=False)
    (tmp_path / "build" / "plain.c").write_text(
        '#include <math.h>\n#include <string.h>\n#undef __GNUC__\n#include "split_dynamics.c"\n')
    for source, flags in [("split_dynamics.c", ["-Os", "-march=native"]), ("plain.c", [])]:
        r = subprocess.run([cc, "-std=c99", "-fsyntax-only", "-Wall", "-Werror", *flags, source],
                           cwd=tmp_path / "build", capture_output=True, text=True)
        assert r.returncode == 0, (source, r.stderr[-2000:])


def test_mass_matrix_inverse_column_steps_out_of_order(tmp_path, rng):
    """The column operations on lists (the unrolled and reference M^-1) and as recorded for the
    C loops, on a tree whose subtrees' columns are not consecutive and that has two roots:
    M^-1 M = I, and the recorded steps restore / zero the accelerations where needed."""
    path = tmp_path / "out_of_order.yaml"
    path.write_text(out_of_order_yaml())
    tree = Tree(scleron.load_model(str(path)))
    assert [b.parent for b in tree.bodies] == [-1, 0, 0, 1, -1, 2, 4]
    for _ in range(3):
        q = list(rng.uniform(-1.5, 1.5, tree.nv))
        Minv = np.asarray(derivatives.mass_matrix_inverse(tree, FloatAlgebra(), q))
        M = np.asarray(rec.mass_matrix(tree, FloatAlgebra(), q))
        np.testing.assert_allclose(Minv @ M, np.eye(tree.nv), atol=1e-11)
    _, _, ml = unroll_minv_loop(tree, function_spec("minv"))
    kinds = [s.kind for s in ml.steps]
    assert kinds.count("zero") == 1 and kinds.count("restore") == 4 and kinds[-1] == "mirror"


@pytest.mark.parametrize("fused", [True, False], ids=["fused_products", "row_products"])
def test_derivative_loops_compiled_out_of_order(tmp_path, rng, monkeypatch, fused):
    """The C loops of the derivatives (pairs, M^-1 column steps with restore and zero, products)
    on the out-of-order tree with two roots, the loop forms forced by a zero threshold; the
    products walk each row's runs of related columns (row 0 has zeros: no first-term start),
    both rows at once or one at a time."""
    import scleron.unroll
    monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    monkeypatch.setattr(scleron.unroll, "FUSED_PRODUCTS_UP_TO_NV", 16 if fused else 0)
    monkeypatch.setattr(scleron.pipeline, "PRODUCT_LOOP_FROM_NV", 1)
    path = tmp_path / "out_of_order.yaml"
    path.write_text(out_of_order_yaml())
    model = scleron.load_model(str(path))
    dyn = scleron.generate(model, str(tmp_path / "build"), "out_of_order",
                           functions=["fdd", "idd", "minv"])
    c = open(tmp_path / "build" / "out_of_order_dynamics.c").read()
    assert "A_saved3" in c and "out_of_order_mass_matrix_inverse_forward1(mb + " in c
    assert "out_of_order_inverse_dynamics_derivatives_pairs_6_6_6(v_J, v_dFdq, v_dFdv, v_YJ" in c
    assert f"row 0 of {'dtau/dx' if fused else 'dtau/dq'}: columns 0..3 (the others are zero)" in c
    tree = Tree(model)
    for _ in range(3):
        q, qd, u = (rng.uniform(-1.5, 1.5, tree.nv) for _ in range(3))
        pairs = [(dyn.mass_matrix_inverse(q), [derivatives.mass_matrix_inverse(tree, FloatAlgebra(), list(q))]),
                 (dyn.inverse_dynamics_derivatives(q, qd, u),
                  derivatives.inverse_dynamics_derivatives(tree, FloatAlgebra(), list(q), list(qd), list(u))),
                 (dyn.forward_dynamics_derivatives(q, qd, u),
                  derivatives.forward_dynamics_derivatives(tree, FloatAlgebra(), list(q), list(qd), list(u)))]
        # out= full of NaN: every entry written (M^-1 clears only the unrelated upper entries)
        minv_out = np.full((tree.nv, tree.nv), np.nan)
        dyn.mass_matrix_inverse(q, out=minv_out)
        fdd_out = tuple(np.full((tree.nv, tree.nv), np.nan) for _ in range(3))
        dyn.forward_dynamics_derivatives(q, qd, u, out=fdd_out)
        pairs += [(minv_out, pairs[0][1]), (fdd_out, pairs[2][1])]
        for got, ref in pairs:
            got = [got] if isinstance(got, np.ndarray) else got
            for g, r in zip(got, ref):
                r = np.asarray(r, dtype=float)
                assert np.max(np.abs(g - r)) <= 1e-11 * max(1.0, np.max(np.abs(r)))


def test_forward_dynamics_derivatives_form_auto():
    """The loop form from PRODUCT_LOOP_FROM_NV coordinates on (UR5 and panda take it), the
    unrolled one below; the CUDA code of a loop-form function is its unrolled program."""
    spec = function_spec("fdd")
    assert code_form(spec, 1, "unrolled", PRODUCT_LOOP_FROM_NV) == "product_loop"
    assert code_form(spec, 1, "unrolled", PRODUCT_LOOP_FROM_NV - 1) == "unrolled"
    idd = function_spec("idd")
    assert code_form(idd, 1, "unrolled", 20, pairs=PAIR_LOOP_FROM_PAIRS) == "pair_loop"
    assert code_form(idd, 1, "unrolled", 18, pairs=PAIR_LOOP_FROM_PAIRS - 1) == "unrolled"
    assert code_form(idd, 1, "unrolled", 16) == "pair_loop"           # a chain: 120 pairs
    assert code_form(idd, 1, "unrolled", 15) == "unrolled"            # 105
    tree = Tree(scleron.load_model(example("quadruped.yaml")))
    assert related_pairs(tree) < PAIR_LOOP_FROM_PAIRS <= related_pairs(
        Tree(scleron.load_model(example("rc20.yaml"))))
    assert code_form(function_spec("minv"), 1, "unrolled", 50) == "minv_loop"
    assert code_form(function_spec("minv"), 1, "unrolled", 18, pairs=84) == "unrolled"
    model = scleron.load_model(example("rc20.yaml"))
    files, _, _ = build_sources(model, functions=["fdd"], cuda=True)
    cu = next(text for name, text in files.items() if name.endswith(".cu"))
    assert "rc20_forward_dynamics_derivatives" in cu and "negated_product" not in cu
    c = next(text for name, text in files.items() if name.endswith("_dynamics.c"))
    assert "rc20_forward_dynamics_derivatives_negated_product" in c


# ---- -M^-1 dtau/dx by prefix and suffix sums on a chain -----------------------------------------
def mixed_chain(tmp_path, floating=False):
    """A chain of joints of 1, 2 and 3 coordinates (hinge, ball in an Euler chart, cylinder,
    slider, universal): the chain sums' step per number of coordinates. floating: on a free
    flyer (whose columns derivatives.free_root_columns writes in closed form)."""
    kinds = ["revolute", "spherical", "cylindrical", "prismatic", "universal", "revolute"]
    if floating:
        kinds[0] = "free_flyer"
    lines = ["name: mixed_chain", "gravity: [0, 0, -9.81]", "bodies:"]
    for k, kind in enumerate(kinds):
        parent = "world" if k == 0 else f"b{k - 1}"
        axis = ", axis: [0, 1, 0]" if kind in ("revolute", "prismatic", "cylindrical") else ""
        lines += [f"- {{name: b{k}, parent: {parent}, mass: {1.0 + 0.2 * k}, com: [0.1, 0.02, 0.01],",
                  f"   inertia: [0.01, 0.02, 0.015], joint: {{name: j{k}, type: {kind}{axis}, "
                  f"xyz: [0.3, 0, 0.05], rpy: [0.1, 0, 0.2]}}}}"]
    path = tmp_path / ("floating_chain.yaml" if floating else "mixed_chain.yaml")
    path.write_text("\n".join(lines) + "\n")
    return path


def chain_state(tree, rng):
    """q near the neutral configuration (quaternions kept unit), qd and a force."""
    alg = FloatAlgebra()
    q = configuration.integrate(tree, alg, list(tree.neutral),
                                list(rng.uniform(-0.3, 0.3, tree.nv)), [1.0])
    return q, list(rng.uniform(-1, 1, tree.nv)), list(rng.uniform(-1, 1, tree.nv))


def test_chain_products_equal_the_dense_products(tmp_path, rng):
    """derivatives.chain_negated_products (no dtau/dx between bodies) against -M^-1 dtau/dx
    formed whole, on RC20 and on a chain of 1-, 2- and 3-coordinate joints, fixed and on a free
    flyer."""
    alg = FloatAlgebra()
    for path in (example("rc20.yaml"), str(mixed_chain(tmp_path)),
                 str(mixed_chain(tmp_path, floating=True))):
        tree = Tree(scleron.load_model(path))
        chain = derivatives.chain_bodies(tree)
        assert chain is not None and sum(d for _, d in chain) == tree.nv
        q, qd, tau = chain_state(tree, rng)
        dq, dqd, vectors, Minv, free = derivatives.forward_dynamics_derivative_columns(
            tree, alg, q, qd, tau)
        got = derivatives.chain_negated_products(chain, Minv, {"dq": dq, "dqd": dqd}, vectors)
        got = dict(zip(("dq", "dqd"), (np.array(g) for g in got)))
        for key, r, c, value in free:                   # a free root's columns in closed form
            got[key][r, c] = value
        got = (got["dq"], got["dqd"])
        ref = derivatives.forward_dynamics_derivatives(tree, alg, q, qd, tau)[:2]
        for g, r in zip(got, ref):
            r = np.asarray(r)
            assert np.max(np.abs(np.asarray(g) - r)) <= 1e-12 * np.max(np.abs(r))
    branched = Tree(scleron.load_model(example("branched.yaml")))
    assert derivatives.chain_bodies(branched) is None


@pytest.mark.parametrize("floating", [False, True])
def test_chain_products_compiled(tmp_path, rng, monkeypatch, floating):
    """The C steps of the chain products (templates/chainproducts.c.j2), forced on the mixed
    chain (bodies of 1, 2 and 3 coordinates: a step each, chosen per body), fixed and on a
    free flyer (its columns copied in closed form after the sums): equal to the reference,
    every entry of out= written."""
    import scleron.unroll
    monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    monkeypatch.setattr(scleron.unroll, "CHAIN_PRODUCTS_FROM_NV", 1)
    monkeypatch.setattr(scleron.pipeline, "PRODUCT_LOOP_FROM_NV", 1)
    model = scleron.load_model(str(mixed_chain(tmp_path, floating)))
    dyn = scleron.generate(model, str(tmp_path / "build"), "chain", functions=["fdd"])
    c = open(tmp_path / "build" / "chain_dynamics.c").read()
    for d in (1, 2, 3) + ((6,) if floating else ()):
        assert f"chain_forward_dynamics_derivatives_chain_up{d}(s, Minv" in c
    assert "by prefix and suffix sums along the chain" in c and "_derivatives_negated_products" not in c
    assert ("= Dfree[" in c) == floating
    tree = Tree(model)
    for _ in range(3):
        q, qd, u = (np.array(x) for x in chain_state(tree, rng))
        ref = derivatives.forward_dynamics_derivatives(tree, FloatAlgebra(), list(q), list(qd), list(u))
        out = tuple(np.full((tree.nv, tree.nv), np.nan) for _ in range(3))
        dyn.forward_dynamics_derivatives(q, qd, u, out=out)
        for g, r in zip(out, ref):
            r = np.asarray(r, dtype=float)
            assert np.max(np.abs(g - r)) <= 1e-11 * max(1.0, np.max(np.abs(r)))


@pytest.mark.parametrize("name", ["rc20.yaml", "branched.yaml", "quadruped.yaml"])
def test_mass_matrix_entries_count_the_nonzeros_of_m(name, rng):
    """mass_matrix_entries (what picks the mass matrix's form, from the model's joints) counts
    the upper entries of M between related coordinates as the tree's own ranges do, and every
    entry the CRBA makes nonzero at a random configuration is one of them."""
    model = scleron.load_model(example(name))
    tree = Tree(model)
    own = sum(b.dof * (b.dof + 1) // 2 for b in tree.bodies)
    assert mass_matrix_entries(model) == (own, related_pairs(tree))
    entries = sum(mass_matrix_entries(model))
    q = rng.uniform(-1, 1, tree.nq)
    M = np.array(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
    assert entries - 10 < np.count_nonzero(np.triu(M)) <= entries
    assert (entries < tree.nv * (tree.nv + 1) // 2) == (name != "rc20.yaml")


def test_mass_matrix_entries_of_a_coupled_model_are_its_whole_upper_triangle():
    """Mimic-coupled reduced coordinates drive several joints each: every entry can be nonzero
    (and never more than the upper triangle)."""
    model = scleron.load_model(os.path.join(os.path.dirname(__file__), "data", "urdf",
                                            "mimic_gripper.urdf"), mimic="couple")
    assert mass_matrix_entries(model) == (0, model.nv * (model.nv + 1) // 2)


def test_every_code_form_has_its_c():
    """unroll.FORMS and the C backend's C_FORMS name the same forms, and each form's template
    is there: a form added to one table alone would fail at render time, on some model only."""
    from scleron.backends.c.context import C_FORMS
    from scleron.backends.c.render import template_dir
    from scleron.unroll import FORMS
    assert set(FORMS) == set(C_FORMS)
    for name, shape in C_FORMS.items():
        assert (template_dir() / shape.template).is_file(), name
