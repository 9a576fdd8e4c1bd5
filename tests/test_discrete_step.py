"""One semi-implicit Euler step and its Jacobians (euler_step, euler_step_derivatives): the
discrete dynamics an MPC linearises at each node.

Oracles: Pinocchio's aba, integrate, computeABADerivatives and dIntegrate composed by hand on a
floating quadruped (quaternion free flyer); central differences of the step on the manifold
(q perturbed by integrate, the result compared by difference) for general joints and a
quaternion ball. The last test compiles a small floating model and holds its C to the numeric
reference (the recursions the C is unrolled from), a batch with a dt per state included."""
import os
import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.functions import FUNCTIONS

from conftest import example, robot_urdf, robots_dir

ALG = FloatAlgebra()
QBALL = """
name: qball_step
bodies:
  - {name: base, parent: world, mass: 3, com: [0.1, 0, 0], inertia: [0.2, 0.3, 0.4],
     joint: {type: free_flyer}}
  - {name: arm, parent: base, mass: 1, com: [0, 0, -0.3], inertia: [0.05, 0.06, 0.01],
     joint: {type: spherical_quat, xyz: [0.2, 0.1, 0], rpy: [0.3, 0, 0.2]}}
  - {name: hand, parent: arm, mass: 0.5, com: [0, 0.05, 0], inertia: [0.01, 0.01, 0.02],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.6], stiffness: 2, damping: 0.3}}
"""


def evaluate(name, tree, *args):
    out = FUNCTIONS[name].evaluate(tree, ALG, *[np.ravel(a) for a in args])
    return tuple(np.array(x) for x in out) if isinstance(out, tuple) else np.array(out)


def rel(a, ref):
    return float(np.linalg.norm(np.asarray(a) - ref) / max(np.linalg.norm(ref), 1e-300))


@pytest.fixture(scope="module")
def qball(tmp_path_factory):
    path = tmp_path_factory.mktemp("qball_step") / "qball_step.yaml"
    path.write_text(QBALL)
    return str(path)


def state(tree, model, rng):
    q = evaluate("integrate", tree, model.neutral(), rng.uniform(-0.8, 0.8, tree.nv), 1.0)
    return q, rng.normal(size=tree.nv), rng.normal(size=tree.nv)


def central_jacobians(tree, q, qd, tau, dt, h=1e-6, step=None):
    """(Fx, Fu) of euler_step (or step(q, qd, tau)) by central differences, q in and out in the
    tangent space."""
    n = tree.nv
    step = step or (lambda *x: evaluate("euler_step", tree, *x, dt))
    q_ref, _ = step(q, qd, tau)
    cols = []
    for k in range(3 * n):
        e = np.zeros(n)
        e[k % n] = h
        ends = []
        for s in (1, -1):
            args = [q, qd, tau]
            if k < n:
                args[0] = evaluate("integrate", tree, q, s * e, 1.0)
            else:
                args[1 + (k >= 2 * n)] = args[1 + (k >= 2 * n)] + s * e
            ends.append(step(*args))
        (qp, vp), (qm, vm) = ends
        dq = evaluate("difference", tree, q_ref, qp) - evaluate("difference", tree, q_ref, qm)
        cols.append(np.concatenate([dq, vp - vm]) / (2 * h))
    J = np.array(cols).T
    return J[:, :2 * n], J[:, 2 * n:]


@pytest.mark.parametrize("which", ["branched", "qball"])
def test_jacobians_are_the_steps_derivatives(which, qball, rng):
    path = example("branched.yaml") if which == "branched" else qball
    model = scleron.load_model(path)
    tree = Tree(model)
    q, qd, tau = state(tree, model, rng)
    for dt in (0.01, 0.2):
        Fx, Fu = evaluate("euler_step_derivatives", tree, q, qd, tau, dt)
        ref_x, ref_u = central_jacobians(tree, q, qd, tau, dt)
        assert Fx.shape == (2 * tree.nv, 2 * tree.nv) and Fu.shape == (2 * tree.nv, tree.nv)
        assert rel(Fx.reshape(2 * tree.nv, -1), ref_x) < 1e-6
        assert rel(Fu.reshape(2 * tree.nv, -1), ref_u) < 1e-6


def test_a_step_of_zero_length_is_the_identity(qball, rng):
    model = scleron.load_model(qball)
    tree = Tree(model)
    q, qd, tau = state(tree, model, rng)
    q1, qd1 = evaluate("euler_step", tree, q, qd, tau, 0.0)
    assert np.array_equal(qd1, qd) and rel(q1, q) < 1e-15
    Fx, Fu = evaluate("euler_step_derivatives", tree, q, qd, tau, 0.0)
    assert rel(Fx.reshape(2 * tree.nv, -1), np.eye(2 * tree.nv)) < 1e-14 and not Fu.any()


pin = pytest.importorskip("pinocchio")


def test_matches_pinocchio_composed_by_hand(rng):
    path = os.path.join(robots_dir(), "solo_description/robots/solo12.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = Tree(scleron.load_model(path, floating=True))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pd = pm.createData()
    n, dt = pm.nv, 0.02
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v, tau = rng.normal(size=n), rng.normal(size=n)
    a = pin.aba(pm, pd, q, v, tau).copy()
    v1 = v + dt * a
    q1 = pin.integrate(pm, q, v1 * dt)
    got_q, got_v = evaluate("euler_step", tree, q, v, tau, dt)
    assert rel(got_v, v1) < 1e-9 and rel(got_q, q1) < 1e-12
    pin.computeABADerivatives(pm, pd, q, v, tau)
    Jq = pin.dIntegrate(pm, q, v1 * dt, pin.ARG0)
    Jv = pin.dIntegrate(pm, q, v1 * dt, pin.ARG1) * dt
    dv_dx = np.hstack([dt * pd.ddq_dq, np.eye(n) + dt * pd.ddq_dv])
    dq_dx = np.hstack([Jq, np.zeros((n, n))]) + Jv @ dv_dx
    Fx, Fu = evaluate("euler_step_derivatives", tree, q, v, tau, dt)
    assert rel(Fx.reshape(2 * n, -1), np.vstack([dq_dx, dv_dx])) < 1e-9
    Minv = pd.Minv.copy()
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    assert rel(Fu.reshape(2 * n, -1), np.vstack([Jv @ (dt * Minv), dt * Minv])) < 1e-9


def test_generated_step_matches_the_reference(generated, qball, rng):
    model, dyn = generated(qball, "qball_step", functions=["euler_step", "euler_step_derivatives"])
    tree = Tree(model)
    n = tree.nv
    q, qd, tau = state(tree, model, rng)
    q1, qd1 = dyn.euler_step(q, qd, tau, 0.05)
    ref_q, ref_v = evaluate("euler_step", tree, q, qd, tau, 0.05)
    assert rel(q1, ref_q) < 1e-13 and rel(qd1, ref_v) < 1e-13
    Fx, Fu = dyn.euler_step_derivatives(q, qd, tau, 0.05)
    assert Fx.shape == (2 * n, 2 * n) and Fu.shape == (2 * n, n)
    ref_x, ref_u = evaluate("euler_step_derivatives", tree, q, qd, tau, 0.05)
    assert rel(Fx, ref_x) < 1e-12 and rel(Fu, ref_u) < 1e-12
    Q, V, T = np.array([q, q]), np.array([qd, qd]), np.array([tau, tau])
    bq, bv = dyn.euler_step(Q, V, T, [0.05, 0.0])            # a dt per state
    assert np.array_equal(bq[0], q1) and rel(bq[1], q) < 1e-15 and np.array_equal(bv[1], qd)


# ---- with external wrenches: contact forces as controls -------------------------------------------
def central_fext_columns(tree, name, q, qd, tau, dt, W, h=1e-6):
    """d(q', qd')/dfext of the named step by central differences, (2nv, nframes, 6)."""
    q_ref, _ = evaluate(name, tree, q, qd, tau, dt, W)
    cols = []
    for k in range(W.size):
        E = np.zeros(W.size)
        E[k] = h
        (qp, vp), (qm, vm) = (evaluate(name, tree, q, qd, tau, dt, W.ravel() + s * E) for s in (1, -1))
        dq = evaluate("difference", tree, q_ref, qp) - evaluate("difference", tree, q_ref, qm)
        cols.append(np.concatenate([dq, vp - vm]) / (2 * h))
    return np.array(cols).T.reshape(2 * tree.nv, *W.shape)


@pytest.mark.parametrize("axes", ["", "_local_world_aligned"], ids=["frame_axes", "world_axes"])
def test_step_with_external_wrenches(axes, qball, rng):
    model = scleron.load_model(qball)
    tree = Tree(model)
    q, qd, tau = state(tree, model, rng)
    W = rng.normal(size=(len(tree.frames), 6))
    dt = 0.05
    step = lambda q_, qd_, tau_: evaluate("euler_step_fext" + axes, tree, q_, qd_, tau_, dt, W)
    q1, qd1 = step(q, qd, tau)
    accel = evaluate("forward_dynamics_fext" + axes, tree, q, qd, tau, W)
    assert rel(qd1, qd + dt * accel) < 1e-14
    Fx, Fu, Ff = evaluate("euler_step_derivatives_fext" + axes, tree, q, qd, tau, dt, W)
    n = tree.nv
    ref_x, ref_u = central_jacobians(tree, q, qd, tau, dt, step=step)
    assert rel(Fx, ref_x) < 1e-6 and rel(Fu, ref_u) < 1e-6
    assert Ff.shape == (2 * n, len(tree.frames), 6)
    assert rel(Ff, central_fext_columns(tree, "euler_step_fext" + axes, q, qd, tau, dt, W)) < 1e-6


def test_generated_step_with_contact_forces(generated, qball, rng):
    names = ["step_fext_lwa", "step_derivatives_fext_lwa"]
    model, dyn = generated(qball, "qball_step_fext", functions=names, frames=["hand", "arm"])
    tree = Tree(model, ["hand", "arm"])
    q, qd, tau = state(tree, model, rng)
    W = rng.normal(size=(2, 6))
    for got, ref in zip(dyn.euler_step_fext_local_world_aligned(q, qd, tau, 0.02, W),
                        evaluate("euler_step_fext_local_world_aligned", tree, q, qd, tau, 0.02, W)):
        assert rel(got, ref) < 1e-13
    got = dyn.euler_step_derivatives_fext_local_world_aligned(q, qd, tau, 0.02, W)
    assert got[2].shape == (2 * tree.nv, 2, 6)
    for a, b in zip(got, evaluate("euler_step_derivatives_fext_local_world_aligned", tree, q, qd,
                                  tau, 0.02, W)):
        assert rel(a, b) < 1e-12


def test_all_leaves_the_frame_derivatives_out_of_big_trees():
    """functions="all" on RC50 gave the step's derivatives unrolled at 500k statements, and with
    fext, chained, 0.8-1.3M (outside reviewers): above STRAIGHT_LINE_DERIVATIVES_UP_TO_NV
    coordinates "all" leaves out the functions whose straight-line code grows with nv^2 times
    the frames; named, they are generated."""
    from scleron.functions import STRAIGHT_LINE_DERIVATIVES_UP_TO_NV
    from scleron.pipeline import selected_functions
    big, small = (Tree(scleron.load_model(example(f))) for f in ("rc50.yaml", "branched.yaml"))
    assert small.nv <= STRAIGHT_LINE_DERIVATIVES_UP_TO_NV < big.nv
    left_out = {"frame_velocity_derivatives", "frame_acceleration_derivatives_world",
                "euler_step_derivatives_fext", "euler_step_derivatives_fext_local_world_aligned",
                "forward_dynamics_derivatives_fext_local_world_aligned",
                "inverse_dynamics_derivatives_fext_local_world_aligned"}
    assert not left_out & set(selected_functions(["all"], big))
    assert left_out <= set(selected_functions(["all"], small))
    kept = {"forward_dynamics_derivatives_fext", "euler_step", "euler_step_derivatives",
            "euler_step_fext"}         # (loop forms, or chained without nv^2 nframes products)
    assert kept <= set(selected_functions(["all"], big))
    assert selected_functions(["fvd_world"], big) == ["frame_velocity_derivatives_world"]


def test_chained_form_calls_the_forward_dynamics_derivatives(generated, rng):
    """From CHAINED_FROM_NV coordinates the step's derivatives call the generated forward
    dynamics and their derivatives (in loop form) rather than unrolling them again: the same
    numbers as the reference, and the called functions come along in the module."""
    from scleron.pipeline import CHAINED_FROM_NV
    model = scleron.load_model(example("branched.yaml"))
    tree = Tree(model)
    assert tree.nv >= CHAINED_FROM_NV
    names = ["step_derivatives", "step_derivatives_fext", "step_derivatives_fext_lwa",
             "fdd_fext_lwa"]
    _, dyn = generated(example("branched.yaml"), "branched_chained", functions=names,
                       frames=["a_hand", "c_tip"])
    assert {"forward_dynamics_derivatives", "forward_dynamics_fext"} <= set(dyn.FUNCTIONS)
    source = open(os.path.join(os.path.dirname(dyn.__file__), "branched_chained_dynamics.c")).read()
    assert "branched_chained_forward_dynamics_derivatives(q, qd, tau, c0_dqdd_dq" in source
    # world-axes fext: turned into the frames' axes before the frame-fixed functions are called
    assert "branched_chained_forward_dynamics_derivatives_fext(q, qd, tau, b_fext, c0_" in source
    # the chain rule is a loop over the called arrays, no statement per entry (RC100: 60,200
    # statements and 97 s of compiling, an outside tester; now 0 statements)
    start = source.index("void branched_chained_euler_step_derivatives(")
    body = source[start:source.index("\n}\n", start)]
    assert "the chain rule, row by row" in body and "Fx[" not in body
    tree = Tree(model, ["a_hand", "c_tip"])
    q, qd, tau = state(tree, model, rng)
    W = rng.normal(size=(2, 6))
    for name, args in (("euler_step_derivatives", (q, qd, tau, 0.03)),
                       ("euler_step_derivatives_fext", (q, qd, tau, 0.03, W)),
                       ("euler_step_derivatives_fext_local_world_aligned", (q, qd, tau, 0.03, W)),
                       ("forward_dynamics_derivatives_fext_local_world_aligned", (q, qd, tau, W))):
        for a, b in zip(getattr(dyn, name)(*args), evaluate(name, tree, *args)):
            assert rel(a, b) < 1e-12


def test_chained_arrays_too_many_for_the_stack_go_on_the_heap(tmp_path, monkeypatch, rng):
    """RC1000's chained step would hold 24 MB of the forward dynamics' derivatives on the stack:
    above STACK_DOUBLES they go into one malloc (here with the limit lowered), freed at the end,
    and so do the product loop's factors in the called derivatives, with the same numbers."""
    from scleron.backends.c import context
    monkeypatch.setattr(context, "STACK_DOUBLES", 100)
    model = scleron.load_model(example("branched.yaml"))
    dyn = scleron.generate(model, str(tmp_path / "branched_heap"),
                           functions=["step_derivatives"])
    source = open(os.path.join(os.path.dirname(dyn.__file__),
                               "branched_dynamics.c")).read()
    assert "double *scl_heap = (double *)malloc(sizeof(double) * " in source
    assert "double *c0_Minv = scl_heap + " in source and "free(scl_heap);" in source
    assert "double *Dq = scl_heap + 0;" in source      # (the derivatives' product loop)
    tree = Tree(model)
    q, qd, tau = state(tree, model, rng)
    for a, b in zip(dyn.euler_step_derivatives(q, qd, tau, 0.03),
                    evaluate("euler_step_derivatives", tree, q, qd, tau, 0.03)):
        assert rel(a, b) < 1e-12


def test_codegen_says_what_all_left_out(capsys):
    """codegen --functions all above 24 coordinates names the functions it left out (an outside
    tester: silent)."""
    from types import SimpleNamespace
    from scleron import cli
    from scleron.pipeline import selected_functions
    model = scleron.load_model(example("rc50.yaml"))
    cli._say_left_out(SimpleNamespace(functions="all"), selected_functions(["all"], Tree(model)),
                      model)
    said = capsys.readouterr().out
    assert "all: left out above 24 coordinates" in said and "frame_velocity_derivatives" in said
    # a mimic-coupled tree's all leaves out what its coupling lacks, whatever its size: not said
    # to be the size (an outside tester of the docs)
    coupled = scleron.load_model(robot_urdf("panda"), mimic="couple")
    cli._say_left_out(SimpleNamespace(functions="all"),
                      selected_functions(["all"], Tree(coupled)), coupled)
    assert "left out" not in capsys.readouterr().out
    assert "euler_step_derivatives," not in said and "euler_step_derivatives_fext" in said
