"""Derivatives of the dynamics: M^-1, the inverse and the forward dynamics' derivatives.

Oracles that share no code with scleron's: Pinocchio (computeMinverse, computeRNEADerivatives,
computeABADerivatives; its own URDF parser and algorithms) on arms, the four-fingered allegro hand
and solo12 with a free flyer; central finite differences of the generated inverse and forward dynamics, on the manifold
(q moved by integrate(q, +-h e_k), the tangent convention of the q columns), for every joint type;
identities between functions computed apart (M^-1 M = I); and for the general joints the same
derivatives by dual numbers through the inverse dynamics recursion itself (exact, so the
analytical route is held to 1e-12 there).
"""
import os

import numpy as np
import pytest

import scleron
from scleron.dynamics import configuration, derivatives, recursions
from scleron.dynamics.tree import Tree, coordinate_ancestors, coordinate_parents
from scleron.functions import DERIVATIVES_BY_DEFAULT_NV, FRAME_FUNCTIONS, function_spec
from scleron.pipeline import default_cflags, selected_functions
from scleron.program import FloatAlgebra

from conftest import example, robot_urdf, robots_dir

TOL = 1e-9
FD_TOL = 1e-6
ALG = FloatAlgebra()
# every model of this file is compiled once with these (the session cache of `generated`)
FUNCTIONS = ["inverse_dynamics", "mass_matrix", "mass_matrix_inverse",
             "inverse_dynamics_derivatives", "integrate", "forward_dynamics",
             "forward_dynamics_derivatives"]
# without the forward dynamics' derivatives (TC10, nv = 38: their unrolled code is large)
NO_FDD = FUNCTIONS[:5]
SOLO12 = "solo_description/robots/solo12.urdf"
# four fingers on a fixed palm: four roots, 16 coordinates, rows of dtau/dx a quarter full (the
# products -M^-1 dtau/dx walk each row's runs of related columns, both rows at once)
ALLEGRO = "allegro_hand_description/urdf/allegro_right_hand.urdf"


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def symmetric(upper):
    """Pinocchio fills the upper triangle of M and M^-1 only."""
    return np.triu(upper) + np.triu(upper, 1).T


@pytest.fixture(scope="module")
def pin():
    return pytest.importorskip("pinocchio")


def pinocchio_robot(pin, which):
    """(path, load options, Pinocchio model) of panda, ur5, allegro (fixed) or solo12 (free
    flyer)."""
    if which == "solo12":
        path = f"{robots_dir()}/{SOLO12}"
        return path, {"floating": True}, pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    path = f"{robots_dir()}/{ALLEGRO}" if which == "allegro" else robot_urdf(which)
    return path, None, pin.buildModelFromUrdf(path)


def robot_functions(robot):
    return FUNCTIONS


# ---- M^-1 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("robot", ["panda", "ur5", "solo12"])
def test_mass_matrix_inverse_equals_pinocchio(robot, pin, generated):
    path, options, pm = pinocchio_robot(pin, robot)
    _, dyn = generated(path, robot, load_options=options, functions=robot_functions(robot))
    pd = pm.createData()
    Q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(4)])
    Minv = dyn.mass_matrix_inverse(Q)                      # a batch: (N, nv, nv)
    assert Minv.shape == (4, pm.nv, pm.nv)
    for q, got in zip(Q, Minv):
        assert rel_err(got, symmetric(pin.computeMinverse(pm, pd, q))) < TOL
        assert np.array_equal(got, got.T)
        assert np.allclose(got @ dyn.mass_matrix(q), np.eye(pm.nv), rtol=0, atol=1e-9)
        assert np.array_equal(dyn.mass_matrix_inverse(q), got)


QBALL = """
name: qball
bodies:
  - {name: base, parent: world, mass: 3, com: [0.1, 0, 0], inertia: [0.2, 0.3, 0.4],
     joint: {type: free_flyer}}
  - {name: arm, parent: base, mass: 1, com: [0, 0, -0.3], inertia: [0.05, 0.06, 0.01],
     joint: {type: spherical_quat, xyz: [0.2, 0.1, 0], rpy: [0.3, 0, 0.2]}}
  - {name: hand, parent: arm, mass: 0.5, com: [0, 0.05, 0], inertia: [0.01, 0.01, 0.02],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.6], stiffness: 2, damping: 0.3}}
  - {name: finger, parent: base, mass: 0.2, com: [0.05, 0, 0], inertia: [0.001, 0.002, 0.002],
     joint: {type: prismatic, axis: [1, 0, 0], xyz: [0.3, 0, 0.1], damping: 0.1}}
"""


@pytest.fixture(scope="module")
def qball(tmp_path_factory):
    """A free flyer carrying a quaternion ball with a hinge (spring, damper) and a slider."""
    path = tmp_path_factory.mktemp("qball") / "qball.yaml"
    path.write_text(QBALL)
    return str(path)


def general_models(qball, two_roots=None):
    """Every joint type: branched (ball_exp, composite, cylindrical, helical, planar, prismatic,
    spherical ZYX, translational, universal), quadruped (the Euler-angle free joint), the spline
    chain (spline curve, torus-torus contacts), the quaternion joints; and a tree with two roots
    whose bodies are not in depth-first order (each root's subtree in its own frame), with
    external wrenches on two bodies."""
    return {"branched": example("branched.yaml"), "quadruped": example("quadruped.yaml"),
            "spline_chain": example("spline_chain.yaml"), "qball": qball, "two_roots": two_roots,
            "windmill": example("windmill.yaml")}


@pytest.fixture(scope="module")
def two_roots(tmp_path_factory):
    from test_loop_forms import out_of_order_yaml
    path = tmp_path_factory.mktemp("two_roots") / "out_of_order.yaml"
    path.write_text(out_of_order_yaml(wrenches=True))
    return str(path)


def random_configuration(model, dyn, rng, scale=0.5):
    """A configuration near the model's initial one (q0, or neutral): q0 (+) v for a random v,
    so quaternions stay unit quaternions and spline parameters inside their range."""
    q0 = model.q0 if model.q0 is not None else dyn.neutral()
    return dyn.integrate(q0, rng.uniform(-scale, scale, dyn.nv), 1.0)


# ---- inverse dynamics derivatives ----------------------------------------------------------------
@pytest.mark.parametrize("robot", ["panda", "ur5", "solo12"])
def test_inverse_dynamics_derivatives_equal_pinocchio(robot, pin, generated, rng):
    """dtau/dq (tangent columns: solo12's free flyer has 6 for its 7 coordinates), dtau/dqd and
    M against computeRNEADerivatives; batched calls and out= take a tuple of (N, nv, nv)."""
    path, options, pm = pinocchio_robot(pin, robot)
    _, dyn = generated(path, robot, load_options=options, functions=robot_functions(robot))
    pd = pm.createData()
    Q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(3)])
    V, A = rng.uniform(-2, 2, (2, 3, pm.nv))
    out = tuple(np.empty((3, pm.nv, pm.nv)) for _ in range(3))
    assert dyn.inverse_dynamics_derivatives(Q, V, A, out=out) is out
    for k, (q, v, a) in enumerate(zip(Q, V, A)):
        dq, dv, M = pin.computeRNEADerivatives(pm, pd, q, v, a)
        assert rel_err(out[0][k], dq) < TOL
        assert rel_err(out[1][k], dv) < TOL
        assert rel_err(out[2][k], symmetric(M)) < TOL
        one = dyn.inverse_dynamics_derivatives(q, v, a)
        assert all(np.array_equal(x, y[k]) for x, y in zip(one, out))
        assert rel_err(one[2], dyn.mass_matrix(q)) < 1e-13


def tangent_moves(dyn, q, h):
    """integrate(q, +-h e_k) for every velocity coordinate k: the manifold's central steps."""
    E = np.eye(dyn.nv)
    Q = np.tile(q, (dyn.nv, 1))
    return dyn.integrate(Q, E, h), dyn.integrate(Q, E, -h)


def central_differences(f, q, qd, x, dyn, h=1e-5):
    """(df/dq, df/dqd) of f(q, qd, x) by central differences: q moved on its manifold."""
    n = dyn.nv
    Qp, Qm = tangent_moves(dyn, q, h)
    Xs = np.tile(x, (n, 1))
    dq = (f(Qp, np.tile(qd, (n, 1)), Xs) - f(Qm, np.tile(qd, (n, 1)), Xs)).T / (2 * h)
    E = h * np.eye(n)
    dqd = (f(np.tile(q, (n, 1)), qd + E, Xs) - f(np.tile(q, (n, 1)), qd - E, Xs)).T / (2 * h)
    return dq, dqd


def test_inverse_dynamics_derivatives_match_finite_differences(qball, generated, rng):
    """A free flyer carrying a quaternion ball, a hinge with a spring and a damper, a slider:
    the generated derivatives against central differences of the generated inverse dynamics,
    q moved along integrate (the q columns are the free flyer's and the ball's velocities)."""
    model, dyn = generated(qball, "qball", functions=FUNCTIONS)
    assert (dyn.nq, dyn.nv) == (13, 11)
    for _ in range(3):
        q = random_configuration(model, dyn, rng, 1.0)
        qd, qdd = rng.uniform(-2, 2, (2, dyn.nv))
        dq, dqd, M = dyn.inverse_dynamics_derivatives(q, qd, qdd)
        fdq, fdqd = central_differences(dyn.inverse_dynamics, q, qd, qdd, dyn)
        assert rel_err(dq, fdq) < FD_TOL
        assert rel_err(dqd, fdqd) < FD_TOL
        assert rel_err(M, dyn.mass_matrix(q)) < 1e-13
        Minv = dyn.mass_matrix_inverse(q)
        assert np.abs(Minv @ M - np.eye(dyn.nv)).max() < 1e-12 * np.linalg.cond(M)


def float_state(model, tree, rng, scale=0.5):
    q0 = model.q0 if model.q0 is not None else tree.neutral
    v = list(rng.uniform(-scale, scale, tree.nv))
    q = configuration.integrate(tree, ALG, list(q0), v, [1.0])
    return q, list(rng.uniform(-2, 2, tree.nv)), list(rng.uniform(-2, 2, tree.nv))


@pytest.mark.parametrize("name", ["branched", "quadruped", "spline_chain", "qball", "two_roots",
                                  pytest.param("windmill", marks=pytest.mark.slow)])
def test_general_joints_derivatives_of_the_reference(name, qball, two_roots, rng):
    """Every joint type, in the numeric reference (the recursion the C is unrolled from; the
    generated code of these models is checked in the slow test below): M^-1 M = I; the
    analytical route (world frame, the joints' own dS/dq and d(Sdot qd)/dq by dual numbers)
    equals forward mode through recursions.inverse_dynamics to rounding, and central
    differences of the inverse dynamics to 1e-6."""
    model = scleron.load_model(general_models(qball, two_roots)[name])
    tree = Tree(model)
    for _ in range(2):
        q, qd, qdd = float_state(model, tree, rng)
        Minv = np.array(derivatives.mass_matrix_inverse(tree, ALG, q))
        M = np.array(recursions.mass_matrix(tree, ALG, q))
        assert np.array_equal(Minv, Minv.T)
        assert np.abs(Minv @ M - np.eye(tree.nv)).max() < 1e-12 * np.linalg.cond(M)
        dq, dqd, Mi = (np.array(x) for x in
                       derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, qdd))
        rq, rqd = derivatives.inverse_dynamics_jacobians_by_duals(tree, ALG, q, qd, qdd)
        assert rel_err(dq, rq) < 1e-12 and rel_err(dqd, rqd) < 1e-12
        assert rel_err(Mi, M) < 1e-13
        tau = lambda x, y: np.array(recursions.inverse_dynamics(tree, ALG, list(x), list(y), qdd))
        h = 1e-5
        fdq = np.array([tau(configuration.integrate(tree, ALG, q, list(e), [h]), qd)
                        - tau(configuration.integrate(tree, ALG, q, list(e), [-h]), qd)
                        for e in np.eye(tree.nv)]).T / (2 * h)
        fdqd = np.array([tau(q, np.array(qd) + h * e) - tau(q, np.array(qd) - h * e)
                         for e in np.eye(tree.nv)]).T / (2 * h)
        assert rel_err(dq, fdq) < FD_TOL and rel_err(dqd, fdqd) < FD_TOL


ARMED = """
name: armed
gravity: [0, 0, 0]
bodies:
  - {name: hull, parent: world, mass: 2, com: [0.1, -0.05, 0.02], inertia: [0.2, 0.3, 0.4],
     joint: {type: free_flyer, armature: [0.3, 0.1, 0.2, 0, 0, 0]}}
"""


def test_a_free_flyers_linear_armature_turns_with_it(tmp_path, rng):
    """Armature on a free flyer's body-frame linear velocity v (MuJoCo's free joint, equal on the
    axes, or any diagonal A: an added mass in the body's axes) is a momentum A v at the body origin
    that turns with it. The physics, not the formula: a free body in no gravity keeps its world
    spatial momentum, the rigid body's and the armature's, along q'' = FD (it drifted at O(1)
    without the turning terms); the analytical derivatives equal forward mode through the
    recursion and central differences. (Armature on the angular velocity is MuJoCo's, a diagonal
    of M without a turning term, as MuJoCo's ball and free joints have it.)"""
    path = tmp_path / "armed.yaml"
    path.write_text(ARMED)
    model = scleron.load_model(str(path))
    tree = Tree(model)
    (hull,) = tree.bodies
    q, qd, tau = float_state(model, tree, rng)
    qdd = recursions.forward_dynamics(tree, ALG, q, qd, [0.0] * 6)

    def world_momentum(t):
        """At q(t) = q (+) (qd t + qdd t^2 / 2): [n; f] about the world origin."""
        x = configuration.integrate(tree, ALG, q, list((np.array(qd) + np.array(qdd) * t / 2) * t), [1.0])
        v = np.array(qd) + np.array(qdd) * t                        # [linear; angular], body frame
        twist = np.concatenate([v[3:], v[:3]])                      # scleron's [w; v]
        body = np.array(hull.inertia) @ twist + np.concatenate([[0, 0, 0], np.multiply(hull.linear_armature, v[:3])])
        R = np.array(frame_rotation(x))
        return np.concatenate([R @ body[:3] + np.cross(x[:3], R @ body[3:]), R @ body[3:]])

    h = 1e-5
    rate = (world_momentum(h) - world_momentum(-h)) / (2 * h)
    assert np.abs(rate).max() < 1e-8 * np.abs(world_momentum(0.0)).max()
    qdd = recursions.forward_dynamics(tree, ALG, q, qd, tau)
    dq, dqd, _ = (np.array(x) for x in derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, qdd))
    rq, rqd = derivatives.inverse_dynamics_jacobians_by_duals(tree, ALG, q, qd, qdd)
    assert rel_err(dq, rq) < 1e-12 and rel_err(dqd, rqd) < 1e-12
    ID = lambda y: np.array(recursions.inverse_dynamics(tree, ALG, q, list(y), qdd))
    fdqd = np.array([ID(np.array(qd) + h * e) - ID(np.array(qd) - h * e) for e in np.eye(tree.nv)]).T / (2 * h)
    assert rel_err(dqd, fdqd) < FD_TOL


def frame_rotation(q):
    """R of a free flyer's q = [x, y, z, qx, qy, qz, qw]."""
    x, y, z, w = q[3:7]
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


@pytest.mark.parametrize("name,knots", [("spline_surface.yaml", [2.0, 1.0]), ("spline_chain.yaml", [1.0]),
                                         ("spline_surface.yaml", [0.0, 0.0])])
def test_spline_joint_derivatives_at_the_knots(name, knots, rng):
    """A spline parameter on a knot (an integer; 0 is the neutral q): the derivatives are finite
    and equal central differences (the symmetric derivative: the third derivative of the cubic
    pieces jumps there), where sqrt(x * x) differentiated at its kink gave 0 * inf = NaN."""
    model = scleron.load_model(example(name))
    tree = Tree(model)
    q = list(model.q0)
    q[:len(knots)] = knots                       # the spline joint is each model's first
    qd, qdd = list(rng.uniform(-1, 1, tree.nv)), list(rng.uniform(-1, 1, tree.nv))
    dq, dqd, _ = (np.array(x) for x in derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, qdd))
    assert np.isfinite(dq).all() and np.isfinite(dqd).all()
    tau = lambda x: np.array(recursions.inverse_dynamics(tree, ALG, list(x), qd, qdd))
    h = 1e-6
    fdq = np.array([tau(np.array(q) + h * e) - tau(np.array(q) - h * e) for e in np.eye(tree.nv)]).T / (2 * h)
    assert rel_err(dq, fdq) < 1e-5
    tau = qdd                                   # any joint forces: the derivatives of q'' = FD
    dqdd, _, _ = (np.array(x) for x in derivatives.forward_dynamics_derivatives(tree, ALG, q, qd, tau))
    fd = lambda x: np.array(recursions.forward_dynamics(tree, ALG, list(x), qd, tau))
    fdqdd = np.array([fd(np.array(q) + h * e) - fd(np.array(q) - h * e) for e in np.eye(tree.nv)]).T / (2 * h)
    assert np.isfinite(dqdd).all() and rel_err(dqdd, fdqdd) < 1e-5


@pytest.mark.parametrize("name", ["branched", "quadruped", "qball", "two_roots", "tc10"])
def test_mass_matrix_inverse_by_factorisation_and_by_articulated_solve(name, qball, two_roots, rng):
    """The two routes to M^-1 share nothing but the model: the straight-line code's LTDL
    factorisation of the CRBA mass matrix, whose factor keeps the tree's sparsity (no entry
    between branches: the roots of two_roots, branched's arms), and the loop form's
    articulated-body columns (here on lists); and the factors' solve of M x = b against numpy."""
    models = {**general_models(qball, two_roots), "tc10": example("tc10.yaml")}
    model = scleron.load_model(models[name])
    tree = Tree(model)
    parents = coordinate_parents(tree)
    assert len(parents) == tree.nv and all(p < k for k, p in enumerate(parents))
    q, _, _ = float_state(model, tree, rng)
    M = recursions.mass_matrix(tree, ALG, q)
    ancestors = [coordinate_ancestors(parents, k) for k in range(tree.nv)]
    L, _ = derivatives.ltdl_factors(ALG, M, ancestors)
    for k in range(tree.nv):
        for i in range(k):
            if i not in ancestors[k]:
                assert L[k][i] == M[k][i] == 0.0, (k, i)       # untouched: no fill-in
    # the forward dynamics' derivatives factor M formed from the root-frame inertias
    zeros = [0.0] * tree.nv
    world = derivatives.world_dynamics(tree, ALG, recursions.joint_kinematics(tree, ALG, q, zeros),
                                       zeros, zeros)
    assert rel_err(derivatives.composite_mass_matrix(tree, ALG, world), M) < 1e-13
    by_factors = np.array(derivatives.mass_matrix_inverse(tree, ALG, q))
    by_columns = np.array(derivatives.articulated_mass_matrix_inverse(tree, ALG, q))
    assert rel_err(by_factors, by_columns) < 1e-14 * np.linalg.cond(M)
    assert np.abs(by_factors @ np.array(M) - np.eye(tree.nv)).max() < 1e-12 * np.linalg.cond(M)
    # the factors' sparse solves (q'' = M^-1 (tau - h) in the forward dynamics' derivatives)
    b = rng.normal(size=tree.nv)
    x = derivatives.ltdl_solve(*derivatives.mass_matrix_factors(tree, ALG, M), list(b))
    assert rel_err(np.array(x), np.linalg.solve(np.array(M), b)) < 1e-14 * np.linalg.cond(M)


@pytest.mark.parametrize("name", ["branched", "quadruped", "qball", "two_roots"])
def test_forward_dynamics_derivatives_by_product_and_by_articulated_solve(name, qball, two_roots,
                                                                        rng, monkeypatch):
    """The two routes to -M^-1 dtau/dx (the product with M^-1 below SOLVE_FROM_NV coordinates,
    the articulated-body solve of its columns above) agree, and equal -M^-1 dtau/dx at
    qdd = FD(q, qd, tau) formed with numpy."""
    model = scleron.load_model(general_models(qball, two_roots)[name])
    tree = Tree(model)
    q, qd, tau = float_state(model, tree, rng)

    def fdd():
        return [np.array(x) for x in
                derivatives.forward_dynamics_derivatives(tree, ALG, q, qd, tau)]
    monkeypatch.setattr(derivatives, "SOLVE_FROM_NV", 10 ** 6)
    by_product = fdd()
    monkeypatch.setattr(derivatives, "SOLVE_FROM_NV", 0)
    by_solve = fdd()
    qdd = recursions.forward_dynamics(tree, ALG, q, qd, tau)
    dq, dqd, _ = derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, qdd)
    Minv = np.linalg.inv(recursions.mass_matrix(tree, ALG, q))
    for got in (by_product, by_solve):
        assert rel_err(got[0], -Minv @ dq) < 1e-10 and rel_err(got[1], -Minv @ dqd) < 1e-10
        assert rel_err(got[2], Minv) < 1e-10


FREE_ROOT = """
name: free_root
gravity: [1.0, -2.0, -9.0]
bodies:
  - {name: base, parent: world, mass: 3, com: [0.1, 0.05, -0.02], inertia: [0.2, 0.3, 0.4],
     wrench: [0.3, -0.2, 0.1, 1.5, 0.5, -2.0], joint: {type: free_flyer ROOT_EXTRA}}
  - {name: arm, parent: base, mass: 1, com: [0, 0, -0.3], inertia: [0.05, 0.06, 0.01],
     joint: {type: spherical_quat, xyz: [0.2, 0.1, 0], rpy: [0.3, 0, 0.2], armature: [0.1, 0, 0]}}
  - {name: hand, parent: arm, mass: 0.5, com: [0, 0.05, 0], inertia: [0.01, 0.01, 0.02],
     wrench: [0, 0.1, 0, 0.5, 0, 0.2],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.6], stiffness: 2, damping: 0.3}}
"""


@pytest.mark.parametrize("extra", ["", ", damping: [0, 0, 0, 0.4, 0.5, 0.6]",
                                   ", armature: [0.2, 0.2, 0.2, 0, 0, 0]"])
def test_free_root_columns_in_closed_form(tmp_path, extra, rng, monkeypatch):
    """derivatives.free_root_columns: along a free flyer root's tangents (no spring, damper or
    armature of its own) dqdd/dq and dqdd/dqd (its translations) are the root's rows of
    -S^-1 (a_g x J_k) and -S^-1 (ov x J_k) and zero below, whatever the gravity, the body
    wrenches and the joints' springs and armature below; equal to -M^-1 dtau/dx formed with
    numpy from the inverse dynamics' derivatives. Where the root has a damper or an armature
    the identity does not hold and the columns are not taken. The straight-line code is smaller
    with them taken (the products' columns fold away)."""
    path = tmp_path / "free_root.yaml"
    path.write_text(FREE_ROOT.replace("ROOT_EXTRA", extra))
    model = scleron.load_model(str(path))
    tree = Tree(model)
    assert len(derivatives.free_roots(tree)) == (0 if extra else 1)
    for _ in range(3):
        q, qd, tau = float_state(model, tree, rng, scale=1.5)
        got = [np.array(x) for x in derivatives.forward_dynamics_derivatives(tree, ALG, q, qd, tau)]
        qdd = recursions.forward_dynamics(tree, ALG, q, qd, tau)
        dq, dqd, _ = derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, qdd)
        Minv = np.linalg.inv(recursions.mass_matrix(tree, ALG, q))
        assert rel_err(got[0], -Minv @ dq) < 1e-11 and rel_err(got[1], -Minv @ dqd) < 1e-11
        if not extra:                       # what the closed form says, zeros included
            assert np.abs((-Minv @ dq)[6:, :6]).max() < 1e-11 * np.abs(dq).max()
            assert np.abs((-Minv @ dqd)[6:, :3]).max() < 1e-11 * np.abs(dqd).max()
            assert np.abs(got[0][6:, :6]).max() == 0.0 and np.abs(got[1][6:, :3]).max() == 0.0
    if not extra:
        from scleron.unroll import unroll
        taken = unroll(tree, "forward_dynamics_derivatives").op_counts().total
        monkeypatch.setattr(derivatives, "free_roots", lambda tree: [])
        assert taken < unroll(tree, "forward_dynamics_derivatives").op_counts().total


HINGE_AND_FREE_ROOT = FREE_ROOT.replace("ROOT_EXTRA", "").replace("bodies:\n", (
    "bodies:\n  - {name: post, parent: world, mass: 2, com: [0.1, 0, 0.2], inertia: [0.1, 0.2, 0.3],\n"
    "     joint: {type: revolute, axis: [0, 0, 1], xyz: [0.5, 0, 0]}}\n"))
LINK = "mass: 1, com: [0, 0, 0.1], inertia: [0.1, 0.1, 0.1], joint: {type: revolute, "
FREE_CHAIN_AND_SIDE = "name: free_side\ngravity: [0.5, -1.0, -9.81]\nbodies:\n" + "\n".join(
    ["  - {name: base, parent: world, mass: 3, com: [0.1, 0.05, -0.02], inertia: [0.2, 0.3, 0.4],"
     " joint: {type: free_flyer}}"]
    + [f"  - {{name: l{k}, parent: {'base' if k == 1 else f'l{k - 1}'}, {LINK}axis: {axis}, xyz: [0, 0, 0.2]}}}}"
       for k, axis in enumerate(["[0, 0, 1]", "[0, 1, 0]", "[1, 0, 0]", "[0, 1, 0]"], 1)]
    + [f"  - {{name: side, parent: base, {LINK}axis: [0, 1, 0], xyz: [0.2, 0, 0]}}}}"]) + "\n"
TWO_LONE_FREE_BODIES = """
name: lone
gravity: [0, 0, -9.81]
bodies:
  - {name: a, parent: world, mass: 1.0, com: [0.05, -0.06, -0.09], inertia: [0.12, 0.16, 0.11], joint: {type: free_flyer}}
  - {name: b, parent: world, mass: 1.6, com: [-0.08, -0.09, 0.04], inertia: [0.15, 0.13, 0.14], joint: {type: free_flyer}}
"""


@pytest.mark.parametrize("which", ["second_root", "second_root_loops", "pair_loops", "lone_free_bodies"])
def test_products_skip_free_flyer_columns(tmp_path, rng, monkeypatch, which):
    """The C products leave out dtau/dq's columns of a free root (zero: the closed form writes
    them) and keep dtau/dqd's (only its translations are zero); every entry is still written
    (out= full of NaN) and equal to -M^-1 dtau/dx formed with numpy:
    - second_root: a hinge root, then a free flyer: the skipped columns are 1..6;
    - pair_loops: a free base with a chain and a side branch, rows nearly full (whole rows
      walked) and the pair loops forced: dtau/dx between unrelated bodies is read as zeros, so
      it must be cleared (an outside reviewer found it read uninitialised);
    - lone_free_bodies: two free flyers without children, nothing left of dtau/dq's rows to
      walk (generation raised IndexError);
    - second_root_loops: second_root with M^-1's column loops: each root's steps alone skip
      the P no parent reads and, A still zero, the product with it (the free flyer's after the
      hinge root's forward step has moved A, zeroed again)."""
    import scleron.unroll
    text = {"second_root": HINGE_AND_FREE_ROOT, "second_root_loops": HINGE_AND_FREE_ROOT,
            "pair_loops": FREE_CHAIN_AND_SIDE, "lone_free_bodies": TWO_LONE_FREE_BODIES}[which]
    if which in ("pair_loops", "second_root_loops"):
        monkeypatch.setattr(scleron.unroll, "PAIR_LOOP_FROM_PAIRS", 0)
    path = tmp_path / f"{which}.yaml"
    path.write_text(text)
    model = scleron.load_model(str(path))
    tree = Tree(model)
    assert len(derivatives.free_roots(tree)) == (2 if which == "lone_free_bodies" else 1)
    # locals filled with a pattern (a huge number) instead of what the stack held, often zeros:
    # an entry read before it is written shows (gcc >= 12, clang)
    dyn = scleron.generate(model, str(tmp_path / "build"), which, functions=["fdd"],
                           cflags=default_cflags() + ["-ftrivial-auto-var-init=pattern"])
    c = open(tmp_path / "build" / f"{which}_dynamics.c").read()
    if which == "second_root":
        assert "row 1 of dtau/dq: columns 0..0 (the others are zero)" in c
        assert "row 1 of dtau/dq: columns 7..10 (the others are zero)" in c
        assert "row 1 of dtau/dqd: columns 0..10 (the others are zero)" in c
    if which == "pair_loops":
        assert "_pairs_6_6(" in c and "memset(Dq, 0, " in c
    if which == "second_root_loops":
        assert f"{which}_forward_dynamics_derivatives_forward6(mb + 24, 1, 1, A, Minv);" in c
    for _ in range(3):
        q, qd, tau = float_state(model, tree, rng, scale=1.5)
        out = tuple(np.full((tree.nv, tree.nv), np.nan) for _ in range(3))
        dyn.forward_dynamics_derivatives(np.array(q), np.array(qd), np.array(tau), out=out)
        qdd = recursions.forward_dynamics(tree, ALG, q, qd, tau)
        dq, dqd, _ = derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, qdd)
        Minv = np.linalg.inv(recursions.mass_matrix(tree, ALG, q))
        assert rel_err(out[0], -Minv @ dq) < 1e-10 and rel_err(out[1], -Minv @ dqd) < 1e-10
        assert rel_err(out[2], Minv) < 1e-10


@pytest.mark.parametrize("name", ["branched", *(pytest.param(n, marks=pytest.mark.slow) for n in
                                               ("quadruped", "spline_chain", "tc10", "windmill"))])
def test_generated_derivatives_of_general_joints_match_finite_differences(name, qball, generated,
                                                                         rng):
    """The generated code of every joint type against central differences of the generated
    inverse and forward dynamics (TC10, nv = 38: the inverse dynamics' only). The default run
    compiles branched (ball_exp, composite, cylindrical, helical, planar, prismatic, spherical,
    translational, universal); the others, the windmill among them, are slow."""
    path = example("tc10.yaml") if name == "tc10" else general_models(qball)[name]
    model, dyn = generated(path, name, functions=NO_FDD if name == "tc10" else FUNCTIONS)
    q = random_configuration(model, dyn, rng, 0.2)
    qd, qdd = rng.uniform(-1, 1, (2, dyn.nv))
    Minv = dyn.mass_matrix_inverse(q)
    assert np.abs(Minv @ dyn.mass_matrix(q) - np.eye(dyn.nv)).max() < 1e-12 * np.linalg.cond(Minv)
    dq, dqd, M = dyn.inverse_dynamics_derivatives(q, qd, qdd)
    fdq, fdqd = central_differences(dyn.inverse_dynamics, q, qd, qdd, dyn)
    assert rel_err(dq, fdq) < FD_TOL and rel_err(dqd, fdqd) < FD_TOL
    assert rel_err(M, dyn.mass_matrix(q)) < 1e-13
    if name != "tc10":
        dq, dqd, _ = dyn.forward_dynamics_derivatives(q, qd, qdd)        # qdd as tau
        fdq, fdqd = central_differences(dyn.forward_dynamics, q, qd, qdd, dyn)
        assert rel_err(dq, fdq) < FD_TOL and rel_err(dqd, fdqd) < FD_TOL


# ---- forward dynamics derivatives ----------------------------------------------------------------
@pytest.mark.parametrize("robot", ["panda", "ur5", "solo12", "allegro"])
def test_forward_dynamics_derivatives_equal_pinocchio(robot, pin, generated, rng):
    """dqdd/dq, dqdd/dqd, M^-1 against computeABADerivatives (its M^-1: upper triangle)."""
    path, options, pm = pinocchio_robot(pin, robot)
    _, dyn = generated(path, robot, load_options=options, functions=FUNCTIONS)
    pd = pm.createData()
    Q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(3)])
    V, T = rng.uniform(-2, 2, (2, 3, pm.nv))
    got = dyn.forward_dynamics_derivatives(Q, V, T)
    assert [x.shape for x in got] == [(3, pm.nv, pm.nv)] * 3
    for k, (q, v, tau) in enumerate(zip(Q, V, T)):
        dq, dv, Minv = pin.computeABADerivatives(pm, pd, q, v, tau)
        assert rel_err(got[0][k], dq) < TOL
        assert rel_err(got[1][k], dv) < TOL
        assert rel_err(got[2][k], symmetric(Minv)) < TOL
        assert rel_err(got[2][k], dyn.mass_matrix_inverse(q)) < 1e-13
    folder = os.path.dirname(dyn.__file__)
    if robot == "allegro":           # the products by runs of related columns, both rows at once
        c = open(os.path.join(folder, f"{robot}_dynamics.c")).read()
        assert "row 4 of dtau/dx: columns 4..7 (the others are zero)" in c and "c1[j] -= a * B1" in c
    if robot == "solo12":            # the free flyer's columns of dtau/dq (zero) skipped
        c = open(os.path.join(folder, f"{robot}_dynamics.c")).read()
        assert "row 0 of dtau/dq: columns 6..17 (the others are zero)" in c
        assert "row 0 of dtau/dqd: columns 0..17 (the others are zero)" in c
        outs = tuple(np.full((pm.nv, pm.nv), np.nan) for _ in range(3))   # the skipped columns
        dyn.forward_dynamics_derivatives(Q[0], V[0], T[0], out=outs)       # are written too
        assert all(np.array_equal(o, g[0]) for o, g in zip(outs, got))
    header = open(os.path.join(folder, f"{robot}_dynamics.h")).read()
    assert (f"void {robot}_forward_dynamics_derivatives(const double *q, const double *qd, "
            "const double *tau, double *dqdd_dq, double *dqdd_dqd, double *Minv);") in header


def test_forward_dynamics_derivatives_match_finite_differences(qball, generated, rng):
    """The free flyer with a quaternion ball, a spring and dampers: central differences on the
    manifold of the generated forward dynamics, and the identity dqdd/dx = -M^-1 dtau/dx at
    qdd = FD(q, qd, tau) with the inverse dynamics derivatives (computed apart)."""
    model, dyn = generated(qball, "qball", functions=FUNCTIONS)
    for _ in range(3):
        q = random_configuration(model, dyn, rng, 1.0)
        qd, tau = rng.uniform(-2, 2, (2, dyn.nv))
        dq, dqd, Minv = dyn.forward_dynamics_derivatives(q, qd, tau)
        fdq, fdqd = central_differences(dyn.forward_dynamics, q, qd, tau, dyn)
        assert rel_err(dq, fdq) < FD_TOL
        assert rel_err(dqd, fdqd) < FD_TOL
        assert rel_err(Minv, dyn.mass_matrix_inverse(q)) < 1e-13
        tq, tqd, M = dyn.inverse_dynamics_derivatives(q, qd, dyn.forward_dynamics(q, qd, tau))
        assert rel_err(dq, -Minv @ tq) < 1e-12 and rel_err(dqd, -Minv @ tqd) < 1e-12
        assert rel_err(M @ dq, -tq) < 1e-10
    # out=: three results into one array (or two overlapping views) would return mixed entries
    q, qd, tau = random_configuration(model, dyn, rng, 1.0), *rng.uniform(-2, 2, (2, dyn.nv))
    one = np.empty((dyn.nv, dyn.nv))
    with pytest.raises(ValueError, match="overlap"):
        dyn.forward_dynamics_derivatives(q, qd, tau, out=(one, one, one))
    big = np.empty((2 * dyn.nv, dyn.nv))
    with pytest.raises(ValueError, match="overlap"):
        dyn.forward_dynamics_derivatives(q, qd, tau, out=(big[:dyn.nv], big[1:dyn.nv + 1],
                                                          np.empty((dyn.nv, dyn.nv))))
    outs = (big[:dyn.nv], big[dyn.nv:], np.empty((dyn.nv, dyn.nv)))      # apart: fine
    assert dyn.forward_dynamics_derivatives(q, qd, tau, out=outs) is outs
    assert rel_err(outs[0], dq_at(dyn, q, qd, tau)) == 0.0
    # side by side in one matrix, [dqdd_dq | dqdd_dqd] as an MPC's B holds them: strided, apart
    wide = np.full((dyn.nv, 3 * dyn.nv), np.nan)
    blocks = tuple(wide[:, k * dyn.nv:(k + 1) * dyn.nv] for k in range(3))
    assert dyn.forward_dynamics_derivatives(q, qd, tau, out=blocks) is blocks
    assert all(np.array_equal(b, w) for b, w in zip(blocks, dyn.forward_dynamics_derivatives(q, qd, tau)))
    with pytest.raises(ValueError, match="overlap"):
        dyn.forward_dynamics_derivatives(q, qd, tau, out=(wide[:, :dyn.nv], wide[:, 1:dyn.nv + 1],
                                                          blocks[2]))


def test_an_out_tuple_takes_the_fast_path(qball, generated, rng, monkeypatch):
    """A single state with out=(three arrays) goes to C through the fast extension (it went
    through the checked Python path: ~10 us against ~1 us); anything else still reaches the
    checked path, which here raises."""
    model, dyn = generated(qball, "qball", functions=FUNCTIONS)
    if dyn._fast is None:
        pytest.skip("the fast extension was not built")
    q, qd, tau = random_configuration(model, dyn, rng, 1.0), *rng.uniform(-2, 2, (2, dyn.nv))
    want = dyn.forward_dynamics_derivatives(q, qd, tau)

    def checked_path(*args, **kw):
        raise AssertionError("the checked Python path was taken")
    monkeypatch.setattr(dyn, "_call", checked_path)
    outs = tuple(np.empty((dyn.nv, dyn.nv)) for _ in range(3))
    assert dyn.forward_dynamics_derivatives(q, qd, tau, out=outs) is outs
    assert all(np.array_equal(a, b) for a, b in zip(outs, want))
    one = np.empty((dyn.nv, dyn.nv))
    with pytest.raises(AssertionError, match="checked Python path"):     # overlap: checked there
        dyn.forward_dynamics_derivatives(q, qd, tau, out=(one, one, one))
    with pytest.raises(AssertionError, match="checked Python path"):     # a list, not a tuple
        dyn.forward_dynamics_derivatives(q, qd, tau, out=list(outs))


def test_a_number_for_dt_takes_the_fast_path(qball, generated, rng, monkeypatch):
    """integrate(q, v, 0.01), as the README writes it, goes to C through the fast extension (a
    float dt took the checked path: 7.9 us against 0.09 us for a one-entry array, an MPC
    tester's horizon loop ran slower than Pinocchio's); an int still reaches the checked path."""
    model, dyn = generated(qball, "qball", functions=FUNCTIONS)
    if dyn._fast is None:
        pytest.skip("the fast extension was not built")
    q, v = random_configuration(model, dyn, rng, 1.0), rng.uniform(-2, 2, dyn.nv)
    want = dyn.integrate(q, v, np.array([0.01]))
    assert np.array_equal(dyn.integrate(q, v, 1), dyn.integrate(q, v, 1.0))

    def checked_path(*args, **kw):
        raise AssertionError("the checked Python path was taken")
    monkeypatch.setattr(dyn, "_call", checked_path)
    for dt in (0.01, np.float64(0.01), np.array(0.01), np.array([0.01])):
        assert np.array_equal(dyn.integrate(q, v, dt), want), type(dt)
    out = np.empty(dyn.nq)
    assert dyn.integrate(q, v, 0.01, out=out) is out and np.array_equal(out, want)
    for other in (1, np.float32(0.01), np.array([0.01, 0.02])):
        with pytest.raises(AssertionError, match="checked Python path"):
            dyn.integrate(q, v, other)


def dq_at(dyn, q, qd, tau):
    return dyn.forward_dynamics_derivatives(q, qd, tau)[0]


# ---- which trees get them by default -------------------------------------------------------------
def test_derivatives_are_generated_by_default_for_small_trees_and_when_named():
    names = ["mass_matrix_inverse", "inverse_dynamics_derivatives", "forward_dynamics_derivatives"]
    aliases = {"minv": names[0], "idd": names[1], "id_derivatives": names[1], "fdd": names[2],
               "fd_derivatives": names[2]}
    assert all(function_spec(a).name == n for a, n in aliases.items())
    panda = Tree(scleron.load_model(robot_urdf("panda")))
    rc20 = Tree(scleron.load_model(example("rc20.yaml")))
    assert panda.nv <= DERIVATIVES_BY_DEFAULT_NV < rc20.nv
    assert set(names) <= set(selected_functions(None, panda))
    assert not set(names) & set(selected_functions(None, rc20))
    assert selected_functions(["fd_derivatives", "idd", "minv"], rc20) == names
    # a leading "+": the tree's defaults and these (an MPC user had to list every default)
    plus = selected_functions(["+fdd", "idd"], rc20)
    assert set(plus) == set(selected_functions(None, rc20)) | {names[1], names[2]}
    assert set(selected_functions("+minv", rc20)) == set(selected_functions(None, rc20)) | {names[0]}
    # one string "F,G", as on the command line (a Python user wrote functions="fd,jacobians")
    assert selected_functions("fd_derivatives, idd,minv", rc20) == names
    assert selected_functions("+fdd,idd", rc20) == plus
    for bad in (["fdd", "+idd"], ["+"]):          # a '+' later on, or naming nothing
        with pytest.raises(ValueError, match="functions: .*'\\+'"):
            selected_functions(bad, rc20)
    # "all": every function, the derivatives and every frame function of rc20 included
    every = selected_functions("all", rc20)
    assert set(names) <= set(every) and set(selected_functions(None, rc20)) < set(every)
    assert {"frame_jacobians_local", "frame_acceleration", "integrate_jacobians"} <= set(every)
    assert selected_functions(["all"], panda) == every and len(set(every)) == len(every)
    for bad in ("all,fd", "+all", ["fd", "all"]):
        with pytest.raises(ValueError, match="'all' stands alone"):
            selected_functions(bad, rc20)
    # the one-frame functions only up to 200 frames, as by default (an outside tester's RC1000
    # "all" made 10,039 functions and ran out of 12 GB); named, at any size
    chain = scleron.Model("rc201")
    for k in range(201):
        chain.add_body(f"b{k}", f"b{k - 1}" if k else "world", joint="revolute",
                       axis=[0, 0, 1] if k % 2 else [0, 1, 0], xyz=[0.1, 0, 0], com=[0.05, 0, 0],
                       inertia=[0.01, 0.01, 0.01])
    many = Tree(chain)
    assert not set(FRAME_FUNCTIONS) & set(selected_functions("all", many))
    assert "frame_jacobian" in selected_functions("frame_jacobian", many)
    # and codegen says so (a reviewer: it named only the derivatives it left out)
    import contextlib
    import io
    from types import SimpleNamespace
    from scleron.cli import _say_left_out
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        _say_left_out(SimpleNamespace(functions="all"), selected_functions("all", many), chain)
    assert "left out above 200 frames" in said.getvalue() and "frame_jacobian" in said.getvalue()


def test_codegen_names_what_a_default_generation_left_out(tmp_path, capsys):
    """rc20 (nv 20) gets no derivatives by default: codegen says so, and +fdd adds one to the
    defaults (an MPC user's floating quadruped got none, silently)."""
    from scleron.cli import main
    out = str(tmp_path / "rc20")
    assert main(["codegen", example("rc20.yaml"), "-o", out, "--no-compile"]) == 0
    said = capsys.readouterr().out
    assert ("not generated by default for this model: mass_matrix_inverse (minv), "
            "inverse_dynamics_derivatives (idd), forward_dynamics_derivatives (fdd); add them "
            "with --functions +NAME,...") in said
    assert main(["codegen", example("rc20.yaml"), "-o", out, "--no-compile", "--functions",
                 "+fdd"]) == 0
    said = capsys.readouterr().out
    assert "not generated by default" not in said
    rows = [line.split()[0] for line in said.splitlines()[2:] if line and not line.startswith("time")]
    assert "forward_dynamics_derivatives" in rows and "frame_jacobians" in rows
    assert "inverse_dynamics_derivatives" not in rows


@pytest.mark.slow
def test_generated_articulated_solve_route_equals_pinocchio(pin, generated, rng, monkeypatch):
    """The route of trees above SOLVE_FROM_NV coordinates (the articulated-body solve of the
    columns of -dtau/dx), generated for panda, against computeABADerivatives."""
    monkeypatch.setattr(derivatives, "SOLVE_FROM_NV", 0)
    path, options, pm = pinocchio_robot(pin, "panda")
    _, dyn = generated(path, "panda_solve", functions=["forward_dynamics_derivatives"])
    pd = pm.createData()
    for _ in range(3):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, tau = rng.uniform(-2, 2, (2, pm.nv))
        got = dyn.forward_dynamics_derivatives(q, v, tau)
        want = pin.computeABADerivatives(pm, pd, q, v, tau)
        assert rel_err(got[0], want[0]) < TOL and rel_err(got[1], want[1]) < TOL
