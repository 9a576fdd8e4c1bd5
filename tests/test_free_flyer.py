"""Quaternion joints (free_flyer, spherical_quat) in Pinocchio's layout: q and v go to and from
Pinocchio as they are, nq != nv everywhere. Oracles: Pinocchio 4 (its own joint models, its own
integrate / difference / neutral) on solo12 from example-robot-data and on a hand-built chain with
a quaternion ball; identities of the exponential map."""
import warnings

import numpy as np
import pytest

import scleron
from scleron.errors import ModelError

from conftest import robots_dir

TOL = 1e-9
ROBOTS = {"solo12": "solo_description/robots/solo12.urdf",
          "anymal": "anymal_b_simple_description/robots/anymal.urdf",
          "talos": "talos_data/robots/talos_reduced.urdf"}
FUNCTIONS = ["forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces",
             "center_of_mass", "com_jacobian", "frame_placements", "frame_jacobians",
             "frame_accelerations", "integrate", "difference", "centroidal_momentum_matrix",
             "centroidal_momentum", "centroidal_momentum_rate", "static_forces"]


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def swap(m):
    m = np.asarray(m)
    return np.concatenate([m[3:], m[:3]])


@pytest.fixture(scope="module")
def pin():
    return pytest.importorskip("pinocchio")


def check_normalize(pin, dyn, pm, rng):
    """dyn.normalize scales each quaternion to unit length and nothing else, as pin.normalize;
    a batch row by row; a zero quaternion is refused."""
    Q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(3)])
    Q *= rng.uniform(0.5, 2.0, Q.shape)               # quaternions and the rest off their values
    want = np.array([pin.normalize(pm, q) for q in Q])
    np.testing.assert_allclose(dyn.normalize(Q), want, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(dyn.normalize(Q[1]), want[1], rtol=1e-15, atol=1e-15)
    assert dyn._QUATERNIONS and not np.array_equal(dyn.normalize(Q[0]), Q[0])
    zero = Q[0].copy()
    zero[dyn._QUATERNIONS[0]:dyn._QUATERNIONS[0] + 4] = 0.0
    with pytest.raises(ValueError, match=rf"^q\[{dyn._QUATERNIONS[0]}:\d+\] is a zero quaternion"):
        dyn.normalize(zero)
    batch = np.array([Q[1], zero, Q[2], zero])         # the state named (an outside tester)
    with pytest.raises(ValueError, match=rf"^q\[1, {dyn._QUATERNIONS[0]}:\d+\] \(state 1, and 1 "
                                         r"other state\) is a zero quaternion"):
        dyn.normalize(batch)
    batch[1, dyn._QUATERNIONS[0]] = np.nan
    with pytest.raises(ValueError, match=r"^q\[1, \d+:\d+\] \(state 1\) holds a non-finite number"):
        dyn.normalize(batch)
    k = dyn._QUATERNIONS[0]                            # no overflow nor underflow of the norm
    for scale in (1e200, 1e-170):
        far = Q[0].copy()
        far[k:k + 4] = np.array([3.0, 0.0, 0.0, 4.0]) * scale
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_allclose(dyn.normalize(far)[k:k + 4], [0.6, 0, 0, 0.8], rtol=1e-15)
    for bad in (np.nan, np.inf):                      # not called a zero quaternion, no warning
        broken = Q[0].copy()
        broken[dyn._QUATERNIONS[0] + 1] = bad
        with warnings.catch_warnings(), pytest.raises(ValueError, match=r"non-finite number"):
            warnings.simplefilter("error")            # a RuntimeWarning would fail the raises
            dyn.normalize(broken)
    for bad in ([None] * dyn.nq, ["a"] * dyn.nq):     # refused naming q, as by every function
        with pytest.raises(ValueError, match="q must hold real numbers"):
            dyn.normalize(bad)
    kept = Q[0].copy()
    dyn.normalize(kept)
    assert np.array_equal(kept, Q[0])                 # a new array; the input untouched


def check_against_pinocchio(pin, dyn, pm, rng, states=4):
    pd = pm.createData()
    assert (dyn.nq, dyn.nv) == (pm.nq, pm.nv)
    assert np.array_equal(dyn.neutral(), pin.neutral(pm))
    q0, qd0 = dyn.initial_state()                     # a file without one: neutral, at rest
    assert np.array_equal(q0, dyn.neutral()) and np.array_equal(qd0, np.zeros(dyn.nv))
    check_normalize(pin, dyn, pm, rng)
    for _ in range(states):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a, tau = (rng.uniform(-1, 1, pm.nv) for _ in range(3))
        assert rel_err(dyn.forward_dynamics(q, v, tau), pin.aba(pm, pd, q, v, tau)) < TOL
        assert rel_err(dyn.inverse_dynamics(q, v, a), pin.rnea(pm, pd, q, v, a)) < TOL
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert rel_err(dyn.mass_matrix(q), M) < TOL
        assert rel_err(dyn.bias_forces(q, v), pin.nle(pm, pd, q, v)) < TOL
        assert rel_err(dyn.static_forces(q), pin.computeGeneralizedGravity(pm, pd, q)) < TOL
        assert rel_err(dyn.center_of_mass(q), pin.centerOfMass(pm, pd, q)) < TOL
        assert rel_err(dyn.com_jacobian(q), pin.jacobianCenterOfMass(pm, pd, q)) < TOL
        # centroidal momentum: Pinocchio's rows are [l; k], scleron's [k; l]
        assert rel_err(dyn.centroidal_momentum_matrix(q), swap(pin.computeCentroidalMap(pm, pd, q))) < TOL
        pin.computeCentroidalMomentum(pm, pd, q, v)
        assert rel_err(dyn.centroidal_momentum(q, v), swap(pd.hg.vector)) < TOL
        pin.computeCentroidalMomentumTimeVariation(pm, pd, q, v, a)
        assert rel_err(dyn.centroidal_momentum_rate(q, v, a), swap(pd.dhg.vector)) < TOL
        pin.forwardKinematics(pm, pd, q, v, a)
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, q)
        ids = [pm.getFrameId(n) for n in dyn.frame_names]
        assert rel_err(dyn.frame_placements(q), [pd.oMf[i].homogeneous for i in ids]) < TOL
        for ref, pref in (("local", pin.LOCAL), ("world", pin.WORLD),
                          ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)):
            J = [swap(pin.getFrameJacobian(pm, pd, i, pref)) for i in ids]
            assert rel_err(dyn.frame_jacobians(q, reference=ref), J) < TOL, ref
            A = [swap(pin.getFrameClassicalAcceleration(pm, pd, i, pref).vector) for i in ids]
            assert rel_err(dyn.frame_accelerations(q, v, a, reference=ref), A) < TOL, ref
        dt = rng.uniform(0.01, 2.0)
        q1 = dyn.integrate(q, v, dt)
        assert rel_err(q1, pin.integrate(pm, q, v * dt)) < TOL
        # past half a turn the free flyer's quaternion keeps q's half of the sphere, as Pinocchio's
        spin = v.copy()
        spin[3:6] = 4.0 * rng.normal(size=3) + 2.0
        assert rel_err(dyn.integrate(q, spin, 1.0), pin.integrate(pm, q, spin)) < TOL
        q2 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        assert rel_err(dyn.difference(q, q2), pin.difference(pm, q, q2)) < TOL
        assert rel_err(dyn.difference(q, q1), v * dt) < 1e-12


def test_solo12_floating_equals_pinocchio_with_no_mapping(pin, generated, rng):
    path = f"{robots_dir()}/{ROBOTS['solo12']}"
    model, dyn = generated(path, "solo12", load_options={"floating": True}, functions=FUNCTIONS)
    assert model.joints[0].type == "free_flyer" and (dyn.nq, dyn.nv) == (19, 18)
    check_against_pinocchio(pin, dyn, pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()), rng)


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["anymal", "talos"])
def test_floating_robots_equal_pinocchio(robot, pin, generated, rng):
    path = f"{robots_dir()}/{ROBOTS[robot]}"
    _, dyn = generated(path, robot, load_options={"floating": True}, functions=FUNCTIONS)
    check_against_pinocchio(pin, dyn, pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()), rng, 2)


# ---- a hand-built chain with a quaternion ball --------------------------------------------------
BALL_CHAIN = """
name: qball
bodies:
  - {name: base, parent: world, mass: 3, com: [0.1, 0, 0], inertia: [0.2, 0.3, 0.4],
     joint: {type: free_flyer}}
  - {name: arm, parent: base, mass: 1, com: [0, 0, -0.3], inertia: [0.05, 0.06, 0.01],
     joint: {type: spherical_quat, xyz: [0.2, 0.1, 0], rpy: [0.3, 0, 0.2], damping: [0.1, 0.2, 0.3]}}
  - {name: hand, parent: arm, mass: 0.5, com: [0, 0.05, 0], inertia: [0.01, 0.01, 0.02],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.6]}}
"""


def pin_ball_chain(pin):
    m = pin.Model()
    m.gravity.linear = np.array([0, 0, -9.81])

    def inertia(mass, com, diag):
        return pin.Inertia(mass, np.array(com, dtype=float), np.diag(diag))
    j = m.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base_joint")
    m.appendBodyToJoint(j, inertia(3, [0.1, 0, 0], [0.2, 0.3, 0.4]), pin.SE3.Identity())
    place = pin.SE3(pin.rpy.rpyToMatrix(0.3, 0, 0.2), np.array([0.2, 0.1, 0]))
    j = m.addJoint(j, pin.JointModelSpherical(), place, "arm_joint")
    m.appendBodyToJoint(j, inertia(1, [0, 0, -0.3], [0.05, 0.06, 0.01]), pin.SE3.Identity())
    j = m.addJoint(j, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0, 0, -0.6])), "hand_joint")
    m.appendBodyToJoint(j, inertia(0.5, [0, 0.05, 0], [0.01, 0.01, 0.02]), pin.SE3.Identity())
    return m


def test_quaternion_ball_chain_equals_pinocchio(tmp_path, pin, generated, rng):
    path = tmp_path / "qball.yaml"
    path.write_text(BALL_CHAIN.replace("damping: [0.1, 0.2, 0.3]", "damping: [0, 0, 0]"))
    model, dyn = generated(str(path), "qball", functions=["forward_dynamics", "inverse_dynamics",
                                                          "mass_matrix", "bias_forces", "integrate",
                                                          "difference"])
    assert (model.nq, model.nv) == (12, 10)
    pm, = [pin_ball_chain(pin)]
    pd = pm.createData()
    assert np.array_equal(dyn.neutral(), pin.neutral(pm))
    for _ in range(4):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, tau = rng.uniform(-1, 1, pm.nv), rng.uniform(-1, 1, pm.nv)
        assert rel_err(dyn.forward_dynamics(q, v, tau), pin.aba(pm, pd, q, v, tau)) < TOL
        assert rel_err(dyn.bias_forces(q, v), pin.nle(pm, pd, q, v)) < TOL
        assert rel_err(dyn.integrate(q, v, 0.7), pin.integrate(pm, q, 0.7 * v)) < TOL
        # past half a turn Pinocchio's spherical joint keeps q exp(w) as it is (no flip)
        assert rel_err(dyn.integrate(q, 5.0 * v, 1.0), pin.integrate(pm, q, 5.0 * v)) < TOL
        q2 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        assert rel_err(dyn.difference(q, q2), pin.difference(pm, q, q2)) < TOL


def ball_chain_manifold(tmp_path, pin, generated):
    """(the generated integrate and difference with their Jacobians, Pinocchio's model) of the
    ball chain."""
    path = tmp_path / "qball.yaml"
    path.write_text(BALL_CHAIN)
    _, dyn = generated(str(path), "qball_jac", functions=["integrate", "difference", "dint",
                                                         "ddiff"])
    return dyn, pin_ball_chain(pin)


def test_integrate_and_difference_jacobians_equal_pinocchio(tmp_path, pin, generated, rng):
    """dIntegrate and dDifference (an MPC user had to write them in numpy, 20x the cost of the
    generated dynamics derivatives): free flyer, quaternion ball and hinge blocks against
    Pinocchio at ordinary, small and zero velocities, and against central differences on the
    manifold of the generated integrate and difference."""
    dyn, pm = ball_chain_manifold(tmp_path, pin, generated)
    ARG0, ARG1 = pin.ArgumentPosition.ARG0, pin.ArgumentPosition.ARG1
    for scale in (1.0, 3.0, 1e-4, 0.0):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, dt = scale * rng.uniform(-1, 1, pm.nv), 0.7
        Jq, Jv = dyn.integrate_jacobians(q, v, dt)
        assert np.abs(Jq - pin.dIntegrate(pm, q, v * dt, ARG0)).max() < 1e-12
        assert np.abs(Jv - dt * pin.dIntegrate(pm, q, v * dt, ARG1)).max() < 1e-12
        q1 = pin.integrate(pm, q, scale * rng.uniform(-1, 1, pm.nv))
        J0, J1 = dyn.difference_jacobians(q, q1)
        assert np.abs(J0 - pin.dDifference(pm, q, q1, ARG0)).max() < 1e-12
        assert np.abs(J1 - pin.dDifference(pm, q, q1, ARG1)).max() < 1e-12
    h = 1e-6                              # central differences along the tangent space
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v, q1 = rng.uniform(-1, 1, pm.nv), pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    Jq, Jv = dyn.integrate_jacobians(q, v, 0.7)
    J0, J1 = dyn.difference_jacobians(q, q1)
    base = dyn.integrate(q, v, 0.7)
    for k in range(pm.nv):
        e = np.eye(pm.nv)[k] * h
        moved = [dyn.integrate(dyn.integrate(q, s * e, 1.0), v, 0.7) for s in (1, -1)]
        column = (dyn.difference(base, moved[0]) - dyn.difference(base, moved[1])) / (2 * h)
        assert np.abs(column - Jq[:, k]).max() < 1e-8
        moved = [dyn.integrate(q, v + s * e, 0.7) for s in (1, -1)]
        column = (dyn.difference(base, moved[0]) - dyn.difference(base, moved[1])) / (2 * h)
        assert np.abs(column - Jv[:, k]).max() < 1e-8
        for J, at in ((J0, lambda s: (dyn.integrate(q, s * e, 1.0), q1)),
                      (J1, lambda s: (q, dyn.integrate(q1, s * e, 1.0)))):
            column = (dyn.difference(*at(1)) - dyn.difference(*at(-1))) / (2 * h)
            assert np.abs(column - J[:, k]).max() < 1e-8


def test_difference_at_half_a_turn_equals_pinocchio(tmp_path, pin, generated):
    """q1 a hand-typed half turn from q0 ([0, 0, 1, 0]: w = 0) gave NaN from difference and its
    Jacobians, translation included, and |w| < 1e-154 a rotation of 0 without a word (an
    outside tester): theta = pi about u there, as Pinocchio's log."""
    dyn, pm = ball_chain_manifold(tmp_path, pin, generated)
    ARG0, ARG1 = pin.ArgumentPosition.ARG0, pin.ArgumentPosition.ARG1
    q0 = pin.neutral(pm)
    for w in (0.0, 1e-200, -1e-200, 1e-120):
        for quat in ([0, 0, 1, w], [0.6, 0, 0.8, w], [0, 1, 0, w]):
            q1 = q0.copy()
            q1[:3] = [0.3, -1.0, 2.0]
            q1[3:7] = quat                              # the free flyer's half turn
            q1[7:11] = quat[1:3] + [quat[0], w]         # and the ball's, about another axis
            d = dyn.difference(q0, q1)
            assert np.isfinite(d).all() and np.abs(d - pin.difference(pm, q0, q1)).max() < 1e-12
            assert np.allclose(dyn.integrate(q0, d, 1.0)[:3], q1[:3], atol=1e-12)
            J0, J1 = dyn.difference_jacobians(q0, q1)
            assert np.abs(J0 - pin.dDifference(pm, q0, q1, ARG0)).max() < 1e-10
            assert np.abs(J1 - pin.dDifference(pm, q0, q1, ARG1)).max() < 1e-10


def test_damping_on_a_quaternion_ball_acts_on_its_angular_velocity(tmp_path, generated, rng):
    path = tmp_path / "qball.yaml"
    path.write_text(BALL_CHAIN)
    model, dyn = generated(str(path), "qball_damped", functions=["bias_forces"])
    q = model.neutral()
    v = rng.uniform(-1, 1, model.nv)
    free = tmp_path / "free.yaml"
    free.write_text(BALL_CHAIN.replace("damping: [0.1, 0.2, 0.3]", "damping: [0, 0, 0]"))
    _, undamped = generated(str(free), "qball_free", functions=["bias_forces"])
    extra = dyn.bias_forces(q, v) - undamped.bias_forces(q, v)
    assert np.allclose(extra[6:9], [0.1 * v[6], 0.2 * v[7], 0.3 * v[8]], rtol=0, atol=1e-14)
    assert np.allclose(np.delete(extra, [6, 7, 8]), 0.0, atol=1e-14)


@pytest.mark.parametrize("spring", ["stiffness: [1, 1, 1, 1]", "stiffness: [1, 1, 1]", "rest: 0.1"])
def test_a_spring_on_a_quaternion_ball_is_refused_first(tmp_path, spring):
    """A spring on a quaternion says so, whatever its length (it said "stiffness must be a list
    of 3 numbers" for 4, then refused the 3)."""
    path = tmp_path / "qspring.yaml"
    path.write_text(BALL_CHAIN.replace("damping: [0.1, 0.2, 0.3]", spring))
    with pytest.raises(ModelError, match="spherical_quat joint's q holds a quaternion: it takes "
                                         "damping but no stiffness or rest"):
        scleron.load_model(str(path))
    with pytest.raises(ModelError, match="holds a quaternion"):
        scleron.Model("qspring_py").add_body("ball", joint="spherical_quat", mass=1.0,
                                             inertia=(0.1, 0.1, 0.1), stiffness=1.0)


def test_integrate_batches_and_stays_on_the_unit_sphere(tmp_path, generated, rng):
    path = tmp_path / "qball.yaml"
    path.write_text(BALL_CHAIN)
    model, dyn = generated(str(path), "qball_damped", functions=["integrate", "difference"])
    Q = np.array([model.neutral()] * 6)
    V = rng.normal(size=(6, model.nv)) * np.array([[1e-9], [1e-4], [0.1], [1.0], [3.0], [10.0]])
    Q1 = dyn.integrate(Q, V, 0.5)                     # a scalar dt for every state
    assert Q1.shape == (6, model.nq)
    assert np.allclose(np.linalg.norm(Q1[:, 3:7], axis=1), 1.0, atol=1e-12)
    assert np.allclose(np.linalg.norm(Q1[:, 7:11], axis=1), 1.0, atol=1e-12)
    for k in range(6):
        assert np.allclose(Q1[k], dyn.integrate(Q[k], V[k], 0.5), rtol=0, atol=1e-15)
    # dt: a scalar or (1,) for every state, (N,) or (N, 1) one per state
    assert np.array_equal(dyn.integrate(Q, V, [0.5]), Q1)
    steps = np.linspace(0.1, 0.6, 6)
    per_state = np.array([dyn.integrate(Q[k], V[k], steps[k]) for k in range(6)])
    assert np.array_equal(dyn.integrate(Q, V, steps), per_state)
    assert np.array_equal(dyn.integrate(Q, V, steps[:, None]), per_state)
    with pytest.raises(ValueError, match=r"dt must be a number, or one per state: shape \(N,\)"):
        dyn.integrate(Q, V, steps[:4])
    # difference undoes integrate below half a turn, the small rotations included
    D = dyn.difference(Q, Q1)
    small = np.linalg.norm(V[:, 3:6], axis=1) * 0.5 < 3.0
    assert np.allclose(D[small], 0.5 * V[small], rtol=1e-10, atol=1e-18)


@pytest.mark.parametrize("joint, problem", [
    ("{type: spherical_quat, stiffness: 1}", "no stiffness or rest"),
    ("{type: free_flyer, rest: [0, 0, 0, 0, 0, 0]}", "no stiffness or rest"),
])
def test_springs_on_quaternion_joints_are_refused(tmp_path, joint, problem):
    path = tmp_path / "bad.yaml"
    path.write_text(f"bodies:\n  - {{name: b, parent: world, mass: 1, inertia: [1, 1, 1], joint: {joint}}}\n")
    with pytest.raises(ModelError, match=problem):
        scleron.load_model(str(path))


def test_initial_state_of_a_quaternion_joint_has_nq_and_nv_entries(tmp_path):
    text = BALL_CHAIN + "initial:\n  q: {arm_joint: [0, 0, 0.6, 0.8]}\n  qd: {arm_joint: [1, 2, 3]}\n"
    path = tmp_path / "init.yaml"
    path.write_text(text)
    model = scleron.load_model(str(path))
    assert list(model.q0) == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0.6, 0.8, 0]     # neutral elsewhere
    assert list(model.qd0) == [0] * 6 + [1, 2, 3, 0]
    bad = tmp_path / "bad.yaml"
    bad.write_text(BALL_CHAIN + "initial:\n  q: {arm_joint: [1, 2, 3]}\n")
    with pytest.raises(ModelError, match="arm_joint"):
        scleron.load_model(str(bad))


def test_initial_quaternions_are_unit_or_refused(tmp_path):
    """A quaternion written to four digits is normalised; zeros (no rotation at all) or a length
    far from 1 name the joint (a zero free-flyer quaternion used to simulate garbage)."""
    path = tmp_path / "init.yaml"
    path.write_text(BALL_CHAIN + "initial:\n  q: {arm_joint: [0, 0, 0.7071, 0.7071]}\n")
    q = scleron.load_model(str(path)).q0
    np.testing.assert_allclose(q[7:11], [0, 0, 2 ** -0.5, 2 ** -0.5], rtol=1e-15)
    for quaternion in ("[0, 0, 0, 0]", "[0, 0, 0, 2]"):
        path.write_text(BALL_CHAIN + f"initial:\n  q: {{arm_joint: {quaternion}}}\n")
        with pytest.raises(ModelError, match="joint 'arm_joint': its quaternion .* not 1") as e:
            scleron.load_model(str(path))
        assert "init.yaml" in str(e.value)
    path.write_text(BALL_CHAIN)
    q0 = scleron.load_model(str(path)).neutral()
    q0[3:7] = 0.0                                          # the free flyer's
    with pytest.raises(ValueError, match="q0: joint .* has length 0"):
        scleron.simulate(str(path), 0.01, 1e-3, q0=q0, out_dir=str(tmp_path / "b"), progress=False)


def test_loop_forms_take_quaternion_configurations(tmp_path, pin, generated, rng):
    """Method II and the mass matrix's loop form read q (nq entries) apart from qd (nv)."""
    path = tmp_path / "qball.yaml"
    path.write_text(BALL_CHAIN.replace("damping: [0.1, 0.2, 0.3]", "damping: [0, 0, 0]"))
    _, dyn = generated(str(path), "qball_loops", method=2, mass_matrix="loop",
                       functions=["forward_dynamics", "mass_matrix"])
    pm = pin_ball_chain(pin)
    pd = pm.createData()
    for _ in range(3):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, tau = rng.uniform(-1, 1, pm.nv), rng.uniform(-1, 1, pm.nv)
        assert rel_err(dyn.forward_dynamics(q, v, tau), pin.aba(pm, pd, q, v, tau)) < TOL
        M = pin.crba(pm, pd, q)
        assert rel_err(dyn.mass_matrix(q), np.triu(M) + np.triu(M, 1).T) < TOL
