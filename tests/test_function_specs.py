"""The shape every generated function takes: specs, the program IR, the algebra protocol.

Each check here is against something that does not share the code under test: the generated
module's signatures against the spec table, Program.evaluate against the float recursion,
forward-mode dual numbers against finite differences and against other generated functions
(dT/dqd = M qd, dV/dq = h(q, 0)), and show's view of a custom joint with atan against the
reference.
"""
import os
import re

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions as rec
from scleron.dynamics.tree import Tree
from scleron.functions import FUNCTIONS, Argument, FunctionSpec, function_spec, model_sizes
from scleron.program import Dual, DualAlgebra, FloatAlgebra, Helper, Program, ProgramAlgebra, seeded
from scleron.show import function_text
from scleron.unroll import unroll

from conftest import example

ATAN_JOINT = """
name: atan_slider
gravity: [0, 0, -9.81]
bodies:
- name: slider
  parent: world
  joint:
    name: slide
    type: custom
    coordinates: [a]
    translation: ["0.2*a", "0", "atan(a)"]
  mass: 1.5
  com: [0.1, 0, 0]
  inertia: [0.01, 0.02, 0.03]
- name: arm
  parent: slider
  joint: {name: hinge, type: revolute, axis: [0, 1, 0], xyz: [0.3, 0, 0]}
  mass: 0.7
  com: [0.2, 0, 0]
  inertia: [0.002, 0.01, 0.01]
"""


# a small tree for the spec checks: a quaternion ball at the root (nq = 4 != nv = 3), a branch,
# a universal-like pair of hinges and a slider; every function is generated for it
SPEC_TREE = """
name: spec_tree
gravity: [0, 0, -9.81]
bodies:
- {name: torso, parent: world, joint: {name: root, type: spherical_quat},
   mass: 2.0, com: [0, 0, 0.1], inertia: [0.02, 0.03, 0.04]}
- {name: arm, parent: torso, joint: {name: shoulder, type: revolute, axis: [0, 1, 0], xyz: [0.2, 0, 0.3]},
   mass: 0.8, com: [0.15, 0, 0], inertia: [0.002, 0.01, 0.01]}
- {name: hand, parent: arm, joint: {name: wrist, type: prismatic, axis: [1, 0, 0], xyz: [0.3, 0, 0]},
   mass: 0.3, com: [0.05, 0, 0], inertia: [0.001, 0.001, 0.001]}
- {name: leg, parent: torso, joint: {name: hip, type: revolute, axis: [1, 0, 0], xyz: [0, 0.1, -0.2]},
   mass: 1.1, com: [0, 0, -0.2], inertia: [0.01, 0.01, 0.002]}
"""


@pytest.fixture(scope="module")
def spec_tree_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec_tree") / "spec_tree.yaml"
    path.write_text(SPEC_TREE)
    return str(path)


@pytest.fixture(scope="module")
def atan_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("atan") / "atan.yaml"
    path.write_text(ATAN_JOINT)
    return scleron.load_model(str(path))


def state(rng, tree):
    return (rng.uniform(-1, 1, tree.nq), rng.uniform(-1, 1, tree.nv),
            rng.uniform(-1, 1, tree.nv))


# ---- the spec table and what is generated from it ----------------------------------------------
def test_every_spec_has_a_unique_name_and_aliases():
    names = [n for f in FUNCTIONS.values() for n in (f.name,) + f.aliases]
    assert len(names) == len(set(names))
    for f in FUNCTIONS.values():
        assert function_spec(f.name) is f
        for a in f.aliases:
            assert function_spec(a) is f
    with pytest.raises(ValueError, match="unknown function 'nope'.*kinetic_energy"):
        function_spec("nope")


def test_generated_module_follows_the_specs(generated, rng, spec_tree_path):
    """Names, C declarations, input and output shapes of every generated function come from
    its spec; scalar results are floats, batches add an axis, out= works for each."""
    model, dyn = generated(spec_tree_path, "spec_tree",
                           functions=[*FUNCTIONS, "frame_placement", "frame_jacobian"])
    tree = Tree(model)
    sizes = model_sizes(tree)
    folder = os.path.dirname(dyn.__file__)
    assert (tree.nq, tree.nv) == (7, 6)
    header = open(os.path.join(folder, "spec_tree_dynamics.h")).read()
    per_frame = [f for f in dyn.FUNCTIONS if f not in FUNCTIONS]   # frame_jacobian_<k>, ...
    assert f"#define SPEC_TREE_NFRAMES {len(dyn.frame_names)}\n" in header
    assert all(f" *   {k}: {name}\n" in header for k, name in enumerate(dyn.frame_names))
    assert dyn.FUNCTIONS[:len(FUNCTIONS)] == tuple(FUNCTIONS)
    assert per_frame and all(re.fullmatch(r"frame_(placement|jacobian)_\d+(_local|_world)?", f)
                             for f in per_frame)
    for spec in FUNCTIONS.values():
        params = ", ".join([f"const double \\*{a.name}" for a in spec.inputs]
                           + [f"double \\*{a.name}" for a in spec.outputs])
        assert re.search(rf"void spec_tree_{spec.name}\({params}\);", header), spec.name
        sized = ", ".join(f"{a.name}[{a.size(sizes)}]" for a in spec.inputs)   # its sizes above it
        assert re.search(rf"\* {re.escape(sized)} -> {spec.outputs[0].name}\[\d+\].*\*/\n"
                         rf"void spec_tree_{spec.name}\(", header), spec.name
        args = [rng.uniform(-1, 1, a.size(sizes)) for a in spec.inputs]
        single = getattr(dyn, spec.name)(*args)
        results = single if len(spec.outputs) > 1 else (single,)
        for out, value in zip(spec.outputs, results):
            if out.shape:
                assert np.shape(value) == out.dims(sizes)
            else:
                assert isinstance(value, float)
        batch = getattr(dyn, spec.name)(*[np.stack([a, a, a]) for a in args])
        batch = batch if len(spec.outputs) > 1 else (batch,)
        for out, value, one in zip(spec.outputs, batch, results):
            assert value.shape == (3,) + out.dims(sizes)
            np.testing.assert_allclose(value[1], one, rtol=1e-15)
        # the program of the spec, evaluated in Python, gives the same numbers
        prog = spec.program(tree)
        got = prog.evaluate({a.name: x for a, x in zip(spec.inputs, args)})
        for out, one in zip(spec.outputs, results):
            np.testing.assert_allclose(np.reshape(got[out.name], np.shape(one)), one, rtol=1e-12,
                                       atol=1e-12 * max(1.0, np.abs(one).max()))


def test_scalar_out_and_bad_out(generated, rng):
    model, dyn = generated(example("branched.yaml"), "branched")
    Q, QD = rng.uniform(-1, 1, (4, dyn.nq)), rng.uniform(-1, 1, (4, dyn.nv))
    out = np.empty(4)
    assert dyn.kinetic_energy(Q, QD, out=out) is out
    np.testing.assert_allclose(out, [dyn.kinetic_energy(q, v) for q, v in zip(Q, QD)], rtol=1e-15)
    with pytest.raises(ValueError, match=r"out \(T\) must be .* shape \(4,\)"):
        dyn.kinetic_energy(Q, QD, out=np.empty(5))
    with pytest.raises(ValueError, match="threads must be a positive int"):
        dyn.kinetic_energy(Q, QD, threads="2")
    want = dyn.kinetic_energy(Q[0], QD[0])
    for T in (np.empty(1), np.empty(())):      # a single state's number: (1,) or 0-d, both ways
        call = dyn.bind("kinetic_energy", Q[0], QD[0], T)
        call()
        assert T.reshape(()) == want
        T[...] = 0.0
        assert dyn.kinetic_energy(Q[0], QD[0], out=T) is T and T.reshape(()) == want
    with pytest.raises(ValueError, match=r"out \(T\) must be .* shape \(\) or \(1,\)"):
        dyn.kinetic_energy(Q[0], QD[0], out=np.empty(2))
    with pytest.raises(ValueError, match=r"out \(T\) must be .* shape \(1,\) or \(\)"):
        dyn.bind("kinetic_energy", Q[0], QD[0], np.empty(2))
    # a one-entry input (integrate's dt) as a 0-d array too, as a scalar output is (a reviewer)
    _, stepper = generated(example("branched.yaml"), "branched_integrate", functions=["integrate"])
    q = np.empty(dyn.nq)
    stepper.bind("integrate", Q[0], QD[0], np.array(0.3), q)()
    np.testing.assert_array_equal(q, stepper.integrate(Q[0], QD[0], 0.3))
    # ... or as a number, bound as a constant, as every other call takes dt (an outside tester)
    for dt in (0.3, np.float64(0.3), 1):
        q[...] = 0.0
        stepper.bind("integrate", Q[0], QD[0], dt, q)()
        np.testing.assert_array_equal(q, stepper.integrate(Q[0], QD[0], dt))
    with pytest.raises(ValueError, match=r"dt must be a C-contiguous float64 array"):
        stepper.bind("integrate", Q[0], QD[0], True, q)
    with pytest.raises(ValueError, match=r"q must be a C-contiguous float64 array"):
        stepper.bind("integrate", 0.3, QD[0], 0.3, q)       # (only a one-number input)


def test_a_refused_out_says_what_it_got(generated, rng):
    """Every refused out= had one text, which for a read-only or a big-endian float64 array of
    the right shape read as if it fitted (an outside tester)."""
    model, dyn = generated(example("branched.yaml"), "branched")
    q, qd = rng.uniform(-1, 1, dyn.nq), rng.uniform(-1, 1, dyn.nv)
    frozen = np.empty(dyn.nv)
    frozen.flags.writeable = False
    for out, said in ((frozen, rf"shape \({dyn.nv},\), dtype float64, read-only"),
                      (np.empty(dyn.nv, ">f8"), r"dtype >f8 \(byte order not native\)"),
                      (np.empty(dyn.nv, np.float32), "dtype float32"),
                      ([0.0] * dyn.nv, "a list")):
        with pytest.raises(ValueError, match=rf"out \(h\) must be a writeable float64 array of shape "
                                             rf"\({dyn.nv},\); got .*{said}"):
            dyn.bias_forces(q, qd, out=out)


def test_a_batch_beyond_the_c_count_runs_in_pieces(generated, rng, monkeypatch):
    """The C batch functions count states in an int: 2**31 states and more ended in cffi's
    OverflowError (an outside tester). They run in pieces of MAX_BATCH states, here made small,
    with and without threads= and out=."""
    model, dyn = generated(example("branched.yaml"), "branched")
    Q, QD = rng.uniform(-1, 1, (23, dyn.nq)), rng.uniform(-1, 1, (23, dyn.nv))
    want_h, want_M = dyn.bias_forces(Q, QD), dyn.mass_matrix(Q)
    monkeypatch.setattr(dyn, "MAX_BATCH", 5)
    counts, batch = [], dyn._batch                 # (a reviewer: results alone could not fail)
    monkeypatch.setattr(dyn, "_batch", lambda b, p, arrays, *rest: (
        counts.append(len(arrays[0])), batch(b, p, arrays, *rest))[1])
    np.testing.assert_array_equal(dyn.bias_forces(Q, QD), want_h)
    assert counts == [5, 5, 5, 5, 3]
    np.testing.assert_array_equal(dyn.bias_forces(Q, QD, threads=2), want_h)
    out = np.full((23, dyn.nv, dyn.nv), np.nan)
    assert dyn.mass_matrix(Q, out=out, threads=3) is out
    np.testing.assert_array_equal(out, want_M)


def test_out_may_be_an_input(generated, rng):
    """out= q computes from the q given (an outside tester: inverse_dynamics(q, qd, qdd, out=q)
    was 28 off, C writing its output while it read its input), on the fast path and the checked
    one (batches); bind refuses the aliasing it cannot copy."""
    model, dyn = generated(example("branched.yaml"), "branched")
    q, qd, qdd = (rng.uniform(-1, 1, dyn.nv) for _ in range(3))
    want = dyn.inverse_dynamics(q, qd, qdd)
    a = q.copy()
    dyn.inverse_dynamics(a, qd, qdd, out=a)                 # the fast path
    np.testing.assert_array_equal(a, want)
    a = q.copy()
    with pytest.raises(TypeError, match="3 positional arguments but 4"):   # out= is a keyword:
        dyn.inverse_dynamics(q, qd, qdd, a)     # a 4th array was written over (an outside tester)
    np.testing.assert_array_equal(a, q)
    a = qdd.copy()
    dyn.inverse_dynamics(q, qd, a, out=a)
    np.testing.assert_array_equal(a, want)
    Q, QD, QDD = (np.stack([x, x]) for x in (q, qd, qdd))
    A = Q.copy()
    dyn.inverse_dynamics(A, QD, QDD, out=A)
    np.testing.assert_array_equal(A, np.stack([want, want]))
    with pytest.raises(ValueError, match="bind: an output array shares memory with an input"):
        dyn.bind("inverse_dynamics", q, qd, qdd, q)


def test_byte_swapped_and_unaligned_arrays_are_converted_or_refused(generated, rng):
    """The single-state fast path hands float64 arrays to C as they lie in memory: one in the
    other byte order ('>f8' here), or unaligned, must take the checked path (converted as an
    input, refused as out=), never be read or written raw."""
    model, dyn = generated(example("branched.yaml"), "branched")
    q, qd, tau = rng.uniform(-1, 1, dyn.nq), rng.uniform(-1, 1, dyn.nv), rng.uniform(-1, 1, dyn.nv)
    want = dyn.forward_dynamics(q, qd, tau)
    swapped = q.astype(q.dtype.newbyteorder())
    assert swapped.dtype.kind == "f" and swapped.dtype.itemsize == 8 and not swapped.dtype.isnative
    np.testing.assert_array_equal(dyn.forward_dynamics(swapped, qd, tau), want)
    raw = bytearray(8 * dyn.nq + 1)
    unaligned = np.frombuffer(raw, np.float64, dyn.nq, 1)
    unaligned[:] = q
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(dyn.forward_dynamics(unaligned, qd, tau), want)
    with pytest.raises(ValueError, match="out"):
        dyn.forward_dynamics(q, qd, tau, out=np.empty(dyn.nv, want.dtype.newbyteorder()))


def test_coordinate_names_are_names(generated):
    model, dyn = generated(example("branched.yaml"), "branched")
    assert dyn.coordinate_names == Tree(model).coordinate_names()
    assert all(re.fullmatch(r"[A-Za-z0-9_]+(\[\d\])?", n) for n in dyn.coordinate_names)
    assert len(dyn.coordinate_descriptions) == dyn.nv
    assert "spherical joint of body" in " ".join(dyn.coordinate_descriptions)
    # each velocity with its unit (an outside tester: "rate of hub_turn" had none)
    assert dyn.velocity_descriptions[0] == ("hub_turn: revolute joint of body hub, rate of "
                                            "hub_turn (rad/s)")
    from scleron.pipeline import _velocity_doc
    chain = scleron.load_model(example("spline_chain.yaml"))
    spline = _velocity_doc(Tree(chain), chain)
    assert any(d.endswith("rate of slide (1/s)") for d in spline)


def test_a_new_spec_needs_only_a_recursion():
    """A function defined outside the table (here: the joint-space momentum M qd, two outputs)
    unrolls and evaluates through the same spec machinery."""
    def momentum(tree, alg, q, qd):
        M = rec.mass_matrix(tree, alg, q)
        p = [sum(M[r][c] * qd[c] for c in range(tree.nv)) for r in range(tree.nv)]
        return p, rec.kinetic_energy(tree, alg, q, qd)
    spec = FunctionSpec("momentum", (Argument("q", ("nq",)), Argument("qd", ("nv",))),
                        (Argument("p", ("nv",)), Argument("T", ())), momentum, "M qd and T")
    tree = Tree(scleron.load_model(example("rc20.yaml")))
    rng = np.random.default_rng(3)
    q, qd, _ = state(rng, tree)
    got = spec.program(tree).evaluate({"q": q, "qd": qd})
    M = np.array(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
    np.testing.assert_allclose(got["p"], M @ qd, rtol=1e-12)
    assert got["T"][0] == pytest.approx(0.5 * qd @ M @ qd, rel=1e-12)


# ---- the program IR: helpers live in it ---------------------------------------------------------
def test_program_evaluates_helper_calls(rng):
    """The exp-coordinate ball joint's series-guarded helpers are part of the program: the
    branched example's mass matrix (it has a ball_exp joint) evaluates in Python."""
    tree = Tree(scleron.load_model(example("branched.yaml")))
    prog = unroll(tree, "mass")
    assert {h.name for h in prog.used_helpers()} >= {"scl_exp_a", "scl_exp_b"}
    for scale in (1e-3, 1.0):                      # below and above the series threshold
        q = scale * rng.uniform(-1, 1, tree.nq)
        got = np.reshape(prog.evaluate({"q": q})["M"], (tree.nv, tree.nv))
        ref = np.array(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def test_helper_folds_constants_and_rejects_a_name_clash():
    twice = Helper("twice", lambda x: 2.0 * x, ("return 2.0 * x;",), "2x")
    prog = Program("p")
    alg = ProgramAlgebra(prog)
    assert alg.call(twice, 1.5) == 3.0                 # a constant folds at once
    x = prog.input("x", 0)
    y = alg.call(twice, x)
    prog.set_outputs("y", [y])
    assert prog.evaluate({"x": [4.0]})["y"] == [8.0]
    other = Helper("twice", lambda x: 3.0 * x, ("return 3.0 * x;",), "3x")
    with pytest.raises(ValueError, match="two different helpers named twice"):
        alg.call(other, x)


# ---- the algebra protocol -------------------------------------------------------------------------
def test_dual_numbers_match_finite_differences():
    alg = DualAlgebra()
    x = Dual(0.7, [1.0])
    f = lambda a, v: a.atan(a.sqrt(v * v + 1.0)) * a.exp(-v) / (a.cos(v) + 2.0) - a.log(v + 3.0)
    d = f(alg, x).b[0]
    h = 1e-6
    fd = (f(FloatAlgebra(), 0.7 + h) - f(FloatAlgebra(), 0.7 - h)) / (2 * h)
    assert d == pytest.approx(fd, rel=1e-8)


def test_dual_recursions_give_M_qd_and_gravity_forces(rng):
    """Forward mode through the recursions, checked against other generated quantities:
    dT/dqd = M(q) qd and dV/dq = h(q, 0) (gravity only: the example has no springs), on a tree
    with an exponential-coordinate ball joint (helper derivatives) and a spherical joint."""
    model = scleron.load_model(example("branched.yaml"))
    tree, alg, fl = Tree(model), DualAlgebra(), FloatAlgebra()
    assert all(b.stiffness is None for b in tree.bodies)
    q, qd, _ = state(rng, tree)
    T = rec.kinetic_energy(tree, alg, list(q), seeded(list(qd)))
    M = np.array(rec.mass_matrix(tree, fl, list(q)))
    np.testing.assert_allclose(T.b, M @ qd, rtol=1e-11, atol=1e-12)
    V = rec.potential_energy(tree, alg, seeded(list(q)))
    g = rec.bias_forces(tree, fl, list(q), [0.0] * tree.nv)
    np.testing.assert_allclose(V.b, g, rtol=1e-10, atol=1e-11)


# ---- show reads the program ------------------------------------------------------------------------
def test_show_handles_atan_and_every_function(atan_model, rng):
    """A custom joint with atan in its transform: every function shows (text and C), and the
    printed text statements compute the reference values."""
    tree = Tree(atan_model)
    for spec in FUNCTIONS.values():
        text = function_text(atan_model, spec.name, tree=tree)
        assert text.startswith(f"{atan_model.name} {spec.name}:")
        c = function_text(atan_model, spec.aliases[0], fmt="c", tree=tree)
        assert f"void atan_slider_{spec.name}(" in c
    text = function_text(atan_model, "pe", tree=tree)      # V needs the slider's position atan(a)
    assert "atan(q[0])" in text
    c = function_text(atan_model, "pe", fmt="c", tree=tree)
    assert re.search(r"^    V\[0\] = t\d+;$", c, re.M), c[-400:]


def test_show_body_filter_on_a_scalar_function(atan_model):
    tree = Tree(atan_model)
    text = function_text(atan_model, "ke", body="arm", tree=tree)
    assert "showing body arm" in text
    assert "body slider" not in text.split("operations by pass")[1].split("== outputs")[0]
    assert re.search(r"^T = ", text, re.M)           # the scalar output is shown


def test_dual_numbers_over_program_nodes_unroll_a_derivative(rng):
    """Duals whose parts are program nodes: the unrolled program of dV/dq, evaluated, equals
    the gravity forces h(q, 0) of the float recursion (the derivatives issue builds on this)."""
    tree = Tree(scleron.load_model(example("quadruped.yaml")))
    prog = Program("dV")
    alg = DualAlgebra(ProgramAlgebra(prog))
    q = prog.input_vector("q", tree.nq)
    V = rec.potential_energy(tree, alg, seeded(q))
    prog.set_outputs("dV", list(V.b))
    x = rng.uniform(-1, 1, tree.nq)
    got = prog.evaluate({"q": x})["dV"]
    want = rec.bias_forces(tree, FloatAlgebra(), list(x), [0.0] * tree.nv)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
