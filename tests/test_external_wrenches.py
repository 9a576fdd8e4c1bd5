"""External wrenches on the frames (fext): forward and inverse dynamics and their derivatives.

Oracles that share no code with scleron.dynamics.frames.with_external_wrenches:
- Pinocchio's aba, rnea, computeABADerivatives and computeRNEADerivatives with fext (a Force per
  joint in the joint's frame): each scleron frame's wrench is moved onto its Pinocchio frame's
  parent joint with the frame's placement there (URDF links, welded ones included);
- the principle of virtual work on general joints: tau(fext) = tau(0) - sum_f J_f^T fext_f with
  the frames' LOCAL Jacobians, and qdd(tau, fext) = qdd(tau + sum_f J_f^T fext_f, 0);
- central finite differences of the forward and inverse dynamics along integrate(q, v) for the
  derivatives of general joints, the wrenches held fixed in their frames.

Compared through the numeric reference (the recursions the C is unrolled from, in floats); the
last tests compile one model and hold its C to that reference, and check the array shapes
fext takes: (nframes, 6) or flattened, a batch's leading axis, bind."""
import os
import warnings

import numpy as np
import pytest
import yaml

import scleron
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.functions import FUNCTIONS

from conftest import example, robots_dir

ALG = FloatAlgebra()
FEXT_FUNCTIONS = ["forward_dynamics", "inverse_dynamics", "forward_dynamics_fext",
                  "inverse_dynamics_fext", "forward_dynamics_derivatives_fext",
                  "inverse_dynamics_derivatives_fext"]


def evaluate(name, tree, *args):
    out = FUNCTIONS[name].evaluate(tree, ALG, *[np.ravel(a) for a in args])
    return tuple(np.array(x) for x in out) if isinstance(out, tuple) else np.array(out)


def rel(a, ref):
    return float(np.linalg.norm(np.asarray(a) - ref) / max(np.linalg.norm(ref), 1e-300))


def framed_branched(tmp_path):
    """examples/branched.yaml (spherical chart, universal, helical, cylindrical, composite,
    ball_exp, planar, translational joints) with frames placed off their bodies' origins, turned,
    and one fixed to the world."""
    with open(example("branched.yaml")) as fh:
        data = yaml.safe_load(fh)
    extra = {"a_hand": [{"name": "a_tool", "xyz": [0.1, 0.02, -0.03], "rpy": [0.3, -0.2, 1.1]}],
             "b_lower": [{"name": "b_mid", "xyz": [-0.2, 0.05, 0.0], "rpy": [1.0, 0.4, 0.0]}],
             "c_tip": [{"name": "c_probe", "xyz": [0.0, 0.0, 0.15], "rpy": [0.0, 0.0, 0.7]}]}
    for body in data["bodies"]:
        body["frames"] = extra.get(body["name"], [])
    data["frames"] = [{"name": "camera", "xyz": [1.0, 0.0, 2.0], "rpy": [0.0, 0.5, 0.0]}]
    path = tmp_path / "branched_framed.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def framed(tmp_path):
    return Tree(scleron.load_model(framed_branched(tmp_path)))


def state(tree, rng):
    """q a step from the zero configuration, qd, qdd or tau, and a wrench per frame."""
    q = evaluate("integrate", tree, np.zeros(tree.nq), rng.uniform(-0.8, 0.8, tree.nv), 1.0)
    return q, rng.normal(size=tree.nv), rng.normal(size=tree.nv), rng.normal(size=(len(tree.frames), 6))


def local_jacobians(tree, q):
    return evaluate("frame_jacobians_local", tree, q).reshape(len(tree.frames), 6, tree.nv)


# ---- virtual work on general joints ---------------------------------------------------------------
def test_wrenches_enter_as_the_transposed_local_jacobians(framed, rng):
    tree = framed
    assert {"a_tool", "b_mid", "c_probe", "camera"} <= {f.name for f in tree.frames}
    for _ in range(3):
        q, qd, x, W = state(tree, rng)
        JtW = np.einsum("kri,kr->i", local_jacobians(tree, q), W)
        tau = evaluate("inverse_dynamics_fext", tree, q, qd, x, W)
        assert rel(tau, evaluate("inverse_dynamics", tree, q, qd, x) - JtW) < 1e-12
        qdd = evaluate("forward_dynamics_fext", tree, q, qd, x, W)
        assert rel(qdd, evaluate("forward_dynamics", tree, q, qd, x + JtW)) < 1e-10


def test_a_world_frame_takes_its_wrench_into_the_ground(framed, rng):
    tree = framed
    q, qd, x, _ = state(tree, rng)
    W = np.zeros((len(tree.frames), 6))
    W[[f.name for f in tree.frames].index("camera")] = [1e3, -2e3, 5e2, 1e4, 3e3, -7e3]
    assert np.array_equal(evaluate("inverse_dynamics_fext", tree, q, qd, x, W),
                          evaluate("inverse_dynamics", tree, q, qd, x))


def test_zero_wrenches_change_nothing(framed, rng):
    tree = framed
    q, qd, x, W = state(tree, rng)
    Z = np.zeros_like(W)
    for name, ins in (("forward_dynamics", (q, qd, x)), ("inverse_dynamics", (q, qd, x))):
        assert rel(evaluate(f"{name}_fext", tree, *ins, Z), evaluate(name, tree, *ins)) < 1e-14
    for a, b in zip(evaluate("forward_dynamics_derivatives_fext", tree, q, qd, x, Z),
                    evaluate("forward_dynamics_derivatives", tree, q, qd, x)):
        assert rel(a, b) < 1e-12


def test_mimic_coupled_models_take_them_through_the_coupling(rng):
    """A mimic-coupled tree's tau is G^T tau_full: the same model read with a coordinate per
    joint, at the expanded state q_full = G q + b (docs/mimic.md), with the same wrenches."""
    path = os.path.join(os.path.dirname(__file__), "data", "urdf", "mimic_gripper.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coupled = Tree(scleron.load_model(path, mimic="couple"))
        full = Tree(scleron.load_model(path, mimic="independent"))
    G = np.zeros((full.nv, coupled.nv))
    for k, (r, a) in enumerate(coupled.coupling.v_map):
        G[k, r] = a
    q, qd, qdd = rng.normal(size=coupled.nq), rng.normal(size=coupled.nv), rng.normal(size=coupled.nv)
    q_full = [a * q[r] + b for r, a, b in coupled.coupling.q_map]
    W = rng.normal(size=(len(coupled.frames), 6))
    tau = evaluate("inverse_dynamics_fext", coupled, q, qd, qdd, W)
    ref = G.T @ evaluate("inverse_dynamics_fext", full, q_full, G @ qd, G @ qdd, W)
    assert rel(tau, ref) < 1e-12 and rel(tau, evaluate("inverse_dynamics", coupled, q, qd, qdd)) > 1e-3
    assert rel(evaluate("forward_dynamics_fext", coupled, q, qd, tau, W), qdd) < 1e-10


# ---- derivatives by central differences -----------------------------------------------------------
def central_columns(f, tree, q, v, h):
    """d f(integrate(q, e_k t)) / dt and d f(q, v + e_k t) / dt at 0, column by column."""
    dq, dv = [], []
    for k in range(tree.nv):
        e = np.zeros(tree.nv)
        e[k] = h
        dq.append((f(evaluate("integrate", tree, q, e, 1.0), v) -
                   f(evaluate("integrate", tree, q, -e, 1.0), v)) / (2 * h))
        dv.append((f(q, v + e) - f(q, v - e)) / (2 * h))
    return np.array(dq).T, np.array(dv).T


def test_derivatives_hold_the_wrenches_in_their_frames(framed, rng):
    tree = framed
    q, qd, x, W = state(tree, rng)
    dq, dv, M = evaluate("inverse_dynamics_derivatives_fext", tree, q, qd, x, W)
    ref_q, ref_v = central_columns(
        lambda q_, v_: evaluate("inverse_dynamics_fext", tree, q_, v_, x, W), tree, q, qd, 1e-6)
    assert rel(dq, ref_q) < 1e-6 and rel(dv, ref_v) < 1e-6
    tau = evaluate("inverse_dynamics_fext", tree, q, qd, x, W)
    fq, fv, Minv = evaluate("forward_dynamics_derivatives_fext", tree, q, qd, tau, W)
    ref_q, ref_v = central_columns(
        lambda q_, v_: evaluate("forward_dynamics_fext", tree, q_, v_, tau, W), tree, q, qd, 1e-6)
    assert rel(fq, ref_q) < 1e-6 and rel(fv, ref_v) < 1e-6
    assert rel(Minv @ M, np.eye(tree.nv)) < 1e-10
    assert rel(fq, -Minv @ dq) < 1e-9          # dqdd/dq = -M^-1 dtau/dq at qdd = FD (the same W)


# ---- Pinocchio ---------------------------------------------------------------------------------------
pin = pytest.importorskip("pinocchio")
ROBOTS = [("ur_description/urdf/ur5_robot.urdf", False),            # welded tool0, ee_link
          ("anymal_b_simple_description/robots/anymal.urdf", True)]  # free flyer, welded feet


def pinocchio_fext(pm, tree, W):
    """scleron's per-frame wrenches [n; f] as Pinocchio's per-joint Forces ([f; n], joint frame)."""
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for k, f in enumerate(tree.frames):
        frame = pm.frames[pm.getFrameId(f.name, pin.BODY)]
        fext[frame.parentJoint] = fext[frame.parentJoint] + frame.placement.act(
            pin.Force(W[k, 3:], W[k, :3]))
    return fext


def scleron_and_pinocchio(file, floating):
    """(Tree, Pinocchio model, its data) of an example-robot-data URDF, free flyer or fixed."""
    path = os.path.join(robots_dir(), file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = Tree(scleron.load_model(path, floating=floating))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(path)
    return tree, pm, pm.createData()


@pytest.mark.parametrize("file, floating", ROBOTS, ids=lambda x: str(x).split("/")[0])
def test_matches_pinocchio(file, floating, rng):
    tree, pm, pd = scleron_and_pinocchio(file, floating)
    for _ in range(2):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, tau = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        W = 10 * rng.normal(size=(len(tree.frames), 6))
        fext = pinocchio_fext(pm, tree, W)
        a = pin.aba(pm, pd, q, v, tau, fext).copy()
        assert rel(evaluate("forward_dynamics_fext", tree, q, v, tau, W), a) < 1e-9
        assert rel(evaluate("inverse_dynamics_fext", tree, q, v, a, W),
                   pin.rnea(pm, pd, q, v, a, fext)) < 1e-9
        pin.computeABADerivatives(pm, pd, q, v, tau, fext)
        fq, fv, _ = evaluate("forward_dynamics_derivatives_fext", tree, q, v, tau, W)
        assert rel(fq, pd.ddq_dq) < 1e-9 and rel(fv, pd.ddq_dv) < 1e-9
        pin.computeRNEADerivatives(pm, pd, q, v, a, fext)
        dq, dv, _ = evaluate("inverse_dynamics_derivatives_fext", tree, q, v, a, W)
        assert rel(dq, pd.dtau_dq) < 1e-9 and rel(dv, pd.dtau_dv) < 1e-9


# ---- the generated module ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compiled(generated, tmp_path_factory):
    path = framed_branched(tmp_path_factory.mktemp("fext"))
    return generated(path, "branched_fext", functions=FEXT_FUNCTIONS)


def test_generated_code_matches_the_reference(compiled, rng):
    model, dyn = compiled
    tree = Tree(model)
    for _ in range(2):
        q, qd, x, W = state(tree, rng)
        for name, ins in (("forward_dynamics_fext", (q, qd, x, W)),
                          ("inverse_dynamics_fext", (q, qd, x, W))):
            assert rel(getattr(dyn, name)(*ins), evaluate(name, tree, *ins)) < 1e-12
        for name in ("forward_dynamics_derivatives_fext", "inverse_dynamics_derivatives_fext"):
            for a, b in zip(getattr(dyn, name)(q, qd, x, W), evaluate(name, tree, q, qd, x, W)):
                assert rel(a, b) < 1e-11


def test_fext_takes_a_row_per_frame_or_flattened(compiled, rng):
    model, dyn = compiled
    tree = Tree(model)
    nf = len(dyn.frame_names)
    q, qd, tau, W = state(tree, rng)
    one = dyn.forward_dynamics_fext(q, qd, tau, W)
    assert np.array_equal(one, dyn.forward_dynamics_fext(q, qd, tau, W.ravel()))
    assert np.array_equal(one, dyn.forward_dynamics_fext(q, qd, tau, W.tolist()))
    batch = dyn.forward_dynamics_fext(np.array([q, q]), np.array([qd, qd]), np.array([tau, tau]),
                                      np.array([W, 0 * W]))
    assert batch.shape == (2, tree.nv) and np.array_equal(batch[0], one)
    assert np.allclose(batch[1], dyn.forward_dynamics(q, qd, tau), rtol=1e-12, atol=1e-12)
    flat = dyn.forward_dynamics_fext(np.array([q]), np.array([qd]), np.array([tau]), W.reshape(1, -1))
    assert np.array_equal(flat[0], one)
    out = np.empty(tree.nv)
    dyn.bind("forward_dynamics_fext", np.asarray(q), np.asarray(qd), np.asarray(tau), W, out)()
    assert np.array_equal(out, one)
    with pytest.raises(ValueError, match=rf"fext must have shape \({nf}, 6\) or \({6 * nf},\)"):
        dyn.forward_dynamics_fext(q, qd, tau, W[:-1])
    with pytest.raises(ValueError, match="fext must have shape"):
        dyn.forward_dynamics_fext(q, qd, tau, W.T)


def test_generated_only_when_named():
    tree = Tree(scleron.load_model(example("branched.yaml")))
    for name in ("forward_dynamics_fext", "inverse_dynamics_fext",
                 "forward_dynamics_derivatives_fext", "inverse_dynamics_derivatives_fext"):
        spec = FUNCTIONS[name]
        assert not spec.by_default(tree) and spec.inputs[-1].shape == ("nwrenches", 6)


def test_one_frame_batch_of_one(generated, tmp_path_factory, rng):
    """fext (1, 6) with a batch of one state is that state's one wrench (outside tester: it was
    taken for one state's and refused), and a single state's fext beside N states is refused
    in its own shape."""
    path = framed_branched(tmp_path_factory.mktemp("fext1"))
    model, dyn = generated(path, "branched_fext1", functions=["forward_dynamics_fext"],
                           frames=["a_tool"])
    tree = Tree(model, ["a_tool"])
    q, qd, tau, W = state(tree, rng)
    one = dyn.forward_dynamics_fext(q, qd, tau, W)
    assert W.shape == (1, 6)
    batch = dyn.forward_dynamics_fext(q[None], qd[None], tau[None], W)
    assert batch.shape == (1, tree.nv) and np.array_equal(batch[0], one)
    assert np.array_equal(dyn.forward_dynamics_fext(q[None], qd[None], tau[None], W[None])[0], one)
    two = [np.array([x, x]) for x in (q, qd, tau)]
    with pytest.raises(ValueError, match=r"fext has shape \(1, 6\), one state's, but the inputs "
                                         r"before it hold 2 states: give \(2, 1, 6\) or \(2, 6\)"):
        dyn.forward_dynamics_fext(*two, W)


# ---- wrenches in world axes (local_world_aligned): contact forces ---------------------------------
LWA = "_local_world_aligned"


def in_own_axes(tree, q, W):
    """World-axes wrenches at the frames' origins in the frames' axes: R_f^T n, R_f^T f."""
    R = evaluate("frame_placements", tree, q).reshape(-1, 4, 4)[:, :3, :3]
    return np.concatenate([np.einsum("kji,kj->ki", R, W[:, :3]),
                           np.einsum("kji,kj->ki", R, W[:, 3:])], axis=1)


def test_world_aligned_wrenches_keep_their_direction(framed, rng):
    tree = framed
    n = tree.nv
    q, qd, x, W = state(tree, rng)
    Wl = in_own_axes(tree, q, W)
    tau = evaluate("inverse_dynamics_fext" + LWA, tree, q, qd, x, W)
    assert rel(tau, evaluate("inverse_dynamics_fext", tree, q, qd, x, Wl)) < 1e-14
    assert rel(evaluate("forward_dynamics_fext" + LWA, tree, q, qd, tau, W), x) < 1e-10
    dq, dqd, M = evaluate("inverse_dynamics_derivatives_fext" + LWA, tree, q, qd, x, W)
    fq, fqd, Minv = evaluate("forward_dynamics_derivatives_fext" + LWA, tree, q, qd, tau, W)
    ref_q, ref_qd = central_columns(
        lambda q_, v_: evaluate("inverse_dynamics_fext" + LWA, tree, q_, v_, x, W), tree, q, qd, 1e-6)
    assert rel(dq, ref_q) < 1e-6 and rel(dqd, ref_qd) < 1e-6
    ref_q, ref_qd = central_columns(
        lambda q_, v_: evaluate("forward_dynamics_fext" + LWA, tree, q_, v_, tau, W), tree, q, qd, 1e-6)
    assert rel(fq, ref_q) < 1e-6 and rel(fqd, ref_qd) < 1e-6
    assert rel(fq, -Minv @ dq) < 1e-9 and rel(Minv @ M, np.eye(n)) < 1e-10
    # held in the frames' axes instead, d/dq differs (the frames turn): the option matters
    assert rel(evaluate("inverse_dynamics_derivatives_fext", tree, q, qd, x, Wl)[0], dq) > 1e-3


@pytest.mark.parametrize("file, floating", ROBOTS, ids=lambda x: str(x).split("/")[0])
def test_world_aligned_wrenches_match_pinocchio(file, floating, rng):
    """Pinocchio's aba and computeABADerivatives with the wrenches turned into the frames' axes,
    and M^-1 C added to its dqdd/dq, C = sum J_k^T [[n_k]x; [f_k]x] J_k,w with its LOCAL frame
    Jacobians (the frames turning under world-fixed wrenches)."""
    tree, pm, pd = scleron_and_pinocchio(file, floating)
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v, tau = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    W = 10 * rng.normal(size=(len(tree.frames), 6))
    pin.computeJointJacobians(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    ids = [pm.getFrameId(f.name, pin.BODY) for f in tree.frames]
    Wl = np.array([np.r_[pd.oMf[i].rotation.T @ w[:3], pd.oMf[i].rotation.T @ w[3:]]
                   for i, w in zip(ids, W)])
    fext = pinocchio_fext(pm, tree, Wl)
    a = pin.aba(pm, pd, q, v, tau, fext).copy()
    assert rel(evaluate("forward_dynamics_fext" + LWA, tree, q, v, tau, W), a) < 1e-9
    C = np.zeros((pm.nv, pm.nv))
    for i, w in zip(ids, Wl):
        J = swap(pin.getFrameJacobian(pm, pd, i, pin.LOCAL))          # rows [w; v]
        if pm.frames[i].parentJoint == 0:
            continue
        C += J.T @ np.vstack([skew(w[:3]) @ J[:3], skew(w[3:]) @ J[:3]])
    pin.computeABADerivatives(pm, pd, q, v, tau, fext)
    Minv = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
    fq, fv, _ = evaluate("forward_dynamics_derivatives_fext" + LWA, tree, q, v, tau, W)
    assert rel(fq, pd.ddq_dq + Minv @ C) < 1e-9 and rel(fv, pd.ddq_dv) < 1e-9


def swap(m):
    return np.vstack([m[3:], m[:3]])


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def test_world_aligned_generated_code_matches_the_reference(generated, tmp_path_factory, rng):
    path = framed_branched(tmp_path_factory.mktemp("fext_lwa"))
    names = ["fd_fext_lwa", "idd_fext_lwa", "fdd_fext_lwa"]
    model, dyn = generated(path, "branched_fext_lwa", functions=names)
    tree = Tree(model)
    q, qd, x, W = state(tree, rng)
    assert rel(dyn.forward_dynamics_fext_local_world_aligned(q, qd, x, W),
               evaluate("forward_dynamics_fext" + LWA, tree, q, qd, x, W)) < 1e-12
    for name in ("forward_dynamics_derivatives_fext", "inverse_dynamics_derivatives_fext"):
        for a, b in zip(getattr(dyn, name + LWA)(q, qd, x, W), evaluate(name + LWA, tree, q, qd, x, W)):
            assert rel(a, b) < 1e-11


def test_the_reference_takes_fext_in_its_declared_shape(framed, rng):
    """evaluate flattens fext (nframes, 6) as the C takes it (an outside reviewer: it sliced the
    rows of the matrix as if they were numbers, silently)."""
    q, qd, x, W = state(framed, rng)
    spec = FUNCTIONS["inverse_dynamics_fext"]
    assert np.array_equal(np.array(spec.evaluate(framed, ALG, q, qd, x, W)),
                          np.array(spec.evaluate(framed, ALG, q, qd, x, W.ravel())))


def test_fext_of_other_states_is_named_in_its_shape(compiled, rng):
    """fext (3, nframes, 6) beside 2 states, or (1, nframes, 6) beside one, was reported in the
    shape it had been flattened to, or as a wrong shape (an outside reviewer)."""
    model, dyn = compiled
    tree = Tree(model)
    q, qd, tau, W = state(tree, rng)
    nf = len(tree.frames)
    two = [np.array([x, x]) for x in (q, qd, tau)]
    with pytest.raises(ValueError, match=rf"fext has shape \(3, {nf}, 6\), 3 states', but the "
                                         rf"inputs before it hold 2 states"):
        dyn.forward_dynamics_fext(*two, np.array([W, W, W]))
    with pytest.raises(ValueError, match=rf"fext has shape \(1, {nf}, 6\), 1 state's, but the "
                                         r"inputs before it are one state's"):
        dyn.forward_dynamics_fext(q, qd, tau, W[None])


# ---- wrench frames of their own (wrench_frames, --wrench-frames) ---------------------------------
WRENCH_FRAMES = ["c_probe", "b_mid"]


def test_wrench_frames_are_rows_of_the_full_frame_list(tmp_path, rng):
    """fext's rows on wrench_frames, apart from the frame functions' frames, give what the same
    wrenches give as rows of every frame's fext (zeros elsewhere): the dynamics, the world-axes
    derivatives and the step's d/dfext (an MPC tester: a base-pose cost with foot forces needed
    the base among fext's rows)."""
    model = scleron.load_model(framed_branched(tmp_path))
    every = Tree(model)
    tree = Tree(model, ["camera", "a_tool"], wrench_frames=WRENCH_FRAMES)
    assert [f.name for f in tree.frames] == ["camera", "a_tool"]
    assert [f.name for f in tree.wrench_frames] == WRENCH_FRAMES
    q, qd, tau, _ = state(every, rng)
    W = rng.normal(size=(2, 6))
    rows = [[f.name for f in every.frames].index(n) for n in WRENCH_FRAMES]
    Wfull = np.zeros((len(every.frames), 6))
    Wfull[rows] = W
    for name in ("forward_dynamics_fext", "forward_dynamics_derivatives_fext" + LWA):
        for a, b in zip(np.atleast_1d(evaluate(name, tree, q, qd, tau, W)),
                        np.atleast_1d(evaluate(name, every, q, qd, tau, Wfull))):
            assert rel(a, b) < 1e-13
    Fx, Fu, Ff = evaluate("euler_step_derivatives_fext" + LWA, tree, q, qd, tau, 0.01, W)
    ref = evaluate("euler_step_derivatives_fext" + LWA, every, q, qd, tau, 0.01, Wfull)
    nx = 2 * tree.nv
    assert Ff.size == nx * 2 * 6
    assert rel(Ff.reshape(nx, 2, 6), ref[2].reshape(nx, -1, 6)[:, rows]) < 1e-13
    assert rel(Fx, ref[0]) < 1e-13 and rel(Fu, ref[1]) < 1e-13


def test_generated_wrench_frames(generated, tmp_path_factory, rng):
    path = framed_branched(tmp_path_factory.mktemp("fextw"))
    model, dyn = generated(path, "branched_fextw", functions=["forward_dynamics_fext",
                                                              "frame_placements"],
                           frames=["a_tool"], wrench_frames=WRENCH_FRAMES)
    assert dyn.frame_names == ["a_tool"] and dyn.wrench_frame_names == WRENCH_FRAMES
    tree = Tree(model, ["a_tool"], wrench_frames=WRENCH_FRAMES)
    q, qd, tau, _ = state(tree, rng)
    W = rng.normal(size=(2, 6))
    assert rel(dyn.forward_dynamics_fext(q, qd, tau, W),
               evaluate("forward_dynamics_fext", tree, q, qd, tau, W)) < 1e-12
    assert dyn.frame_placements(q).shape == (1, 4, 4)
    with pytest.raises(ValueError, match=r"fext must have shape \(2, 6\) or \(12,\)"):
        dyn.forward_dynamics_fext(q, qd, tau, np.zeros((1, 6)))
    header = open(os.path.join(dyn.HERE, "branched_fextw_dynamics.h")).read()
    assert "#define BRANCHED_FEXTW_NWRENCHES 2" in header and "1: b_mid" in header


def test_wrench_frames_without_wrenches_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"wrench_frames= \(--wrench-frames\) changes only "):
        scleron.pipeline.build_sources(scleron.load_model(framed_branched(tmp_path)),
                                       functions=["forward_dynamics"], wrench_frames=["b_mid"])
    with pytest.raises(scleron.ModelError, match="unknown frame 'nowhere'"):
        Tree(scleron.load_model(framed_branched(tmp_path)), wrench_frames=["nowhere"])


def test_pinocchio_forces_are_taken_angular_first(compiled, rng):
    """A list of pinocchio.Force converts to numpy as [f; n] (Pinocchio's order): taken as
    scleron's [n; f] rows it swapped torque and force silently (an outside tester)."""
    pin = pytest.importorskip("pinocchio")
    model, dyn = compiled
    tree = Tree(model)
    q, qd, tau, W = state(tree, rng)
    forces = [pin.Force(w[3:], w[:3]) for w in W]               # Force(linear, angular)
    one = dyn.forward_dynamics_fext(q, qd, tau, W)
    assert np.array_equal(dyn.forward_dynamics_fext(q, qd, tau, forces), one)
    rows = ", ".join(dyn.wrench_frame_names[:3])
    with pytest.raises(ValueError, match=rf"got \(2, 6\) \(a row per frame of "
                                         rf"wrench_frame_names: {rows}"):
        dyn.forward_dynamics_fext(q, qd, tau, forces[:2])
    nf = len(dyn.wrench_frame_names)
    with pytest.raises(ValueError, match=rf"of shape \({6 * nf},\) or \({nf}, 6\); got float64 of "
                                         r"shape \(3, 6\)"):
        dyn.bind("forward_dynamics_fext", q, qd, tau, W[:3], np.empty(tree.nv))


def test_an_unknown_frame_is_matched_to_the_close_ones(tmp_path):
    model = scleron.load_model(framed_branched(tmp_path))
    with pytest.raises(scleron.ModelError, match=r"unknown frame 'C_PROBE' in wrench_frames "
                                                 r"\(--wrench-frames\) \(did you mean "
                                                 r"'c_probe'\? the model's frames"):
        Tree(model, wrench_frames=["b_mid", "C_PROBE"])
    with pytest.raises(scleron.ModelError, match=r"unknown frame 'a_tol' \(did you mean 'a_tool'"):
        Tree(model, ["a_tol"])
