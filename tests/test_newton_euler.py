"""The base inertial parameters (dynamics.regroup) and the inverse dynamics by Newton-Euler in
classical accelerations on them (dynamics.newton_euler), against S&G's passes on the tree's own
inertias (recursions.py), the 6x6 products, and the generated code."""
import numpy as np
import pytest

import scleron
from scleron.algebra import FloatAlgebra
from scleron.dynamics import newton_euler, recursions as rec
from scleron.dynamics.regroup import regrouped
from scleron.dynamics.tree import Tree
from scleron.functions import FUNCTIONS
from scleron.unroll import code_tree, fastest_recursion

from conftest import example, robot_urdf

# hinges about axes off the coordinate axes, sliders, a hinge whose joint frame sits up its own
# axis, springs, dampers, armature, a constant body wrench, gravity off the vertical, two roots
ARM = """
name: ne_arm
gravity: [0.5, -1.0, -9.6]
bodies:
  - {name: base, parent: world, mass: 2.0, com: [0.02, 0.01, 0.1], inertia: [0.02, 0.03, 0.025],
     joint: {type: revolute, axis: [0, 0, 1], stiffness: 3, damping: 0.2}}
  - {name: upper, parent: base, mass: 1.5, com: [0.2, 0.02, -0.01],
     inertia: {ixx: 0.004, iyy: 0.03, izz: 0.031, ixy: 0.001, ixz: -0.0005, iyz: 0.0002},
     joint: {type: revolute, axis: [0.3, 0.9, 0.1], xyz: [0, 0.05, 0.3], rpy: [0.4, -0.2, 0.1],
             armature: 0.05}}
  - {name: slide, parent: upper, mass: 0.7, com: [0.1, -0.03, 0.02], inertia: [0.002, 0.004, 0.005],
     joint: {type: prismatic, axis: [0.6, 0, 0.8], xyz: [0.4, 0, 0], damping: 0.4},
     wrench: [0.1, -0.2, 0.05, 1.0, 0.5, -2.0]}
  - {name: wrist, parent: slide, mass: 0.4, com: [0, 0.05, 0.03], inertia: [0.001, 0.0012, 0.0008],
     joint: {type: revolute, axis: [1, 0, 0], xyz: [0.2, 0.01, 0], rpy: [1.5708, 0, 0]}}
  - {name: finger, parent: wrist, mass: 0.1, com: [0.02, 0.0, 0.01],
     inertia: [0.0001, 0.0002, 0.0002],
     joint: {type: prismatic, axis: [0, 1, 0], xyz: [0.05, 0, 0.02]}}
  - {name: other, parent: world, mass: 0.9, com: [0.0, 0.1, 0.0], inertia: [0.003, 0.002, 0.004],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [1.0, 0, 0]}}
"""


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    path = tmp_path_factory.mktemp("ne_arm") / "ne_arm.yaml"
    path.write_text(ARM)
    return str(path)


def states(rng, n, count=4):
    for _ in range(count):
        yield rng.uniform(-3, 3, n), rng.uniform(-2, 2, n), rng.uniform(-3, 3, n)


def joint_space(tree, q, qd, qdd):
    """M, h, tau and T of S&G's passes on a tree: what regrouping must leave as it is."""
    alg = FloatAlgebra()
    return [np.array(rec.mass_matrix(tree, alg, q), dtype=float),
            np.array(rec.bias_forces(tree, alg, q, qd), dtype=float),
            np.array(rec.inverse_dynamics(tree, alg, q, qd, qdd), dtype=float),
            np.array(rec.forward_dynamics(tree, alg, q, qd, qdd), dtype=float),
            float(rec.kinetic_energy(tree, alg, q, qd))]


def test_regrouped_inertias_leave_the_joint_space_dynamics(arm, rng):
    """M, h, tau, qdd and T on the base parameters equal the tree's own, at random states, while
    the hinges' bodies lose their mass and the slides' their rotational inertia."""
    model = scleron.load_model(arm)
    tree = Tree(model)
    base = regrouped(tree)
    for q, qd, qdd in states(rng, tree.nv):
        for got, want in zip(joint_space(base, q, qd, qdd), joint_space(tree, q, qd, qdd)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    for b, own in zip(base.bodies, tree.bodies):
        J = np.array(b.inertia)
        if b.joint.type == "revolute":
            assert J[3, 3] == 0.0 and own.inertia[3][3] > 0.0
        else:
            assert not J[:3, :3].any() and np.array(own.inertia)[:3, :3].any()
    assert base.bodies[0].inertia != tree.bodies[0].inertia      # the tree's own are untouched
    assert tree.bodies[2].inertia == Tree(model).bodies[2].inertia


def test_a_body_the_regrouping_cannot_move_keeps_its_inertia(rng):
    """A ball joint's body keeps its own inertia (nothing of it is still under a ball); its
    hinge child's part moves onto it, and the dynamics stay."""
    m = scleron.Model("ball_hinge")
    m.add_body("a", "world", joint="spherical", chart="ZYX", mass=1.0, com=(0.1, 0, 0),
               inertia=(0.01, 0.02, 0.03))
    m.add_body("b", "a", joint="revolute", axis=(0, 0, 1), xyz=(0.3, 0, 0), mass=0.5,
               com=(0.0, 0.1, 0.05), inertia=(0.002, 0.003, 0.004))
    ball = Tree(m)
    assert newton_euler.applies(ball)           # (a root on any joint: root_motion)
    m.add_body("d", "b", joint="spherical", chart="ZYX", xyz=(0.2, 0, 0), mass=0.3,
               com=(0.05, 0, 0), inertia=(0.001, 0.002, 0.002))
    assert not newton_euler.applies(Tree(m))    # a ball below the root moves its origin
    m.bodies.pop(), m.joints.pop()
    base = regrouped(ball)
    assert base.bodies[1].inertia[3][3] == 0.0 and base.bodies[0].inertia[3][3] == 1.5
    for q, qd, qdd in states(rng, ball.nv):
        for got, want in zip(joint_space(base, q, qd, qdd), joint_space(ball, q, qd, qdd)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_newton_euler_equals_the_passes(arm, rng):
    """newton_euler's inverse dynamics, bias and static forces and its forward dynamics by M's
    factors (floats) against S&G's passes on the tree's own inertias: springs, dampers,
    armature, the body wrench and gravity off the vertical included."""
    tree = Tree(scleron.load_model(arm))
    assert newton_euler.applies(tree)
    alg = FloatAlgebra()
    for q, qd, qdd in states(rng, tree.nv):
        pairs = [(newton_euler.inverse_dynamics(tree, alg, q, qd, qdd),
                  rec.inverse_dynamics(tree, alg, q, qd, qdd)),
                 (newton_euler.bias_forces(tree, alg, q, qd), rec.bias_forces(tree, alg, q, qd)),
                 (newton_euler.static_forces(tree, alg, q), rec.static_forces(tree, alg, q)),
                 (newton_euler.forward_dynamics_by_mass_matrix(tree, alg, q, qd, qdd),
                  rec.forward_dynamics(tree, alg, q, qd, qdd))]
        for got, want in pairs:
            want = np.array(want, dtype=float)
            np.testing.assert_allclose(np.array(got, dtype=float), want, rtol=1e-12,
                                       atol=1e-12 * np.abs(want).max())


def test_the_unrolled_code_takes_newton_euler_where_it_is_cheaper(arm, rng, generated):
    """On UR5 and on the test arm the unrolled inverse dynamics is Newton-Euler's, with fewer
    operations than the passes' on the same base parameters (the static forces, with no
    velocities, take either), and the generated C equals the passes on the tree's own inertias;
    a tree with a free joint keeps the passes."""
    for path in (robot_urdf("ur5"), arm):
        tree = Tree(scleron.load_model(path))
        for name in ("inverse_dynamics", "bias_forces"):
            spec = FUNCTIONS[name]
            base = code_tree(tree, spec)
            assert base is not tree and base.bodies[0].inertia != tree.bodies[0].inertia
            taken, program = fastest_recursion(base, spec)
            assert "Newton-Euler in classical accelerations" in taken.doc
            assert program.op_counts().total < spec.program(base).op_counts().total
    model, dyn = generated(arm, "ne_arm")
    tree, alg = Tree(model), FloatAlgebra()
    for q, qd, qdd in states(rng, model.nv):
        for got, want in [(dyn.inverse_dynamics(q, qd, qdd),
                           rec.inverse_dynamics(tree, alg, q, qd, qdd)),
                          (dyn.bias_forces(q, qd), rec.bias_forces(tree, alg, q, qd)),
                          (dyn.static_forces(q), rec.static_forces(tree, alg, q))]:
            want = np.array(want, dtype=float)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    branched = Tree(scleron.load_model(example("branched.yaml")))    # balls below the root
    assert not newton_euler.applies(branched)
    assert fastest_recursion(branched, FUNCTIONS["inverse_dynamics"])[0].doc == \
        FUNCTIONS["inverse_dynamics"].doc


FLOATING = """
name: floating
gravity: [0.3, 0.0, -9.81]
bodies:
  - {name: base, parent: world, mass: 3, com: [0.1, 0.02, -0.01], inertia: [0.2, 0.3, 0.4],
     joint: {type: free_flyer}, wrench: [0.1, 0.2, 0.3, -1.0, 0.5, 2.0]}
  - {name: thigh, parent: base, mass: 1, com: [0, 0.02, -0.2], inertia: [0.05, 0.06, 0.01],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0.2, 0.1, 0], rpy: [0.3, 0, 0.2],
             damping: 0.2, armature: 0.01}}
  - {name: shank, parent: thigh, mass: 0.5, com: [0.01, 0, -0.15], inertia: [0.01, 0.01, 0.002],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.3], stiffness: 2}}
  - {name: slider, parent: base, mass: 0.2, com: [0.05, 0, 0], inertia: [0.001, 0.002, 0.002],
     joint: {type: prismatic, axis: [1, 0, 0], xyz: [0.3, 0, 0.1]}}
"""


def test_newton_euler_from_a_root_on_any_joint(tmp_path, rng):
    """A free flyer (quaternion) and an Euler-angle free joint at the root, hinges and a slide
    below: Newton-Euler starts from the root's own twist (root_motion) and equals the passes."""
    path = tmp_path / "floating.yaml"
    path.write_text(FLOATING)
    alg = FloatAlgebra()
    for model in (scleron.load_model(str(path)), scleron.load_model(example("quadruped.yaml"))):
        tree = Tree(model)
        assert newton_euler.applies(tree)
        for _ in range(3):
            q = np.array(model.neutral(), dtype=float) + rng.uniform(-0.8, 0.8, tree.nq)
            for _, k in model.quaternions():
                q[k:k + 4] /= np.linalg.norm(q[k:k + 4])
            qd, qdd = rng.uniform(-2, 2, tree.nv), rng.uniform(-3, 3, tree.nv)
            for got, want in [(newton_euler.inverse_dynamics(tree, alg, q, qd, qdd),
                               rec.inverse_dynamics(tree, alg, q, qd, qdd)),
                              (newton_euler.forward_dynamics_by_mass_matrix(tree, alg, q, qd, qdd),
                               rec.forward_dynamics(tree, alg, q, qd, qdd))]:
                want = np.array(want, dtype=float)
                np.testing.assert_allclose(np.array(got, dtype=float), want, rtol=1e-11,
                                           atol=1e-11 * np.abs(want).max())


def test_only_the_joint_space_functions_take_the_base_parameters(arm, rng, generated):
    """The potential energy, the centre of mass and the momenta need the bodies' own inertias
    (a hinge's mass moved onto the world would leave V and the centre of mass): their code is
    built on the tree itself, and the generated values equal the reference on it."""
    model = scleron.load_model(arm)
    tree = Tree(model)
    for name in ("potential_energy", "center_of_mass", "com_jacobian",
                 "centroidal_momentum_matrix", "frame_placements"):
        assert not FUNCTIONS[name].joint_space and code_tree(tree, FUNCTIONS[name]) is tree
    for name in ("forward_dynamics", "mass_matrix", "kinetic_energy", "mass_matrix_inverse",
                 "forward_dynamics_derivatives", "inverse_dynamics_fext"):
        assert FUNCTIONS[name].joint_space and code_tree(tree, FUNCTIONS[name]) is not tree
    _, dyn = generated(arm, "ne_arm", functions=["pe", "com", "ke", "fd"])
    alg = FloatAlgebra()
    for q, qd, qdd in states(rng, tree.nv, 2):
        pairs = [(dyn.potential_energy(q), rec.potential_energy(tree, alg, q)),
                 (dyn.center_of_mass(q), rec.center_of_mass(tree, alg, q)),
                 (dyn.kinetic_energy(q, qd), rec.kinetic_energy(tree, alg, q, qd)),
                 (dyn.forward_dynamics(q, qd, qdd), rec.forward_dynamics(tree, alg, q, qd, qdd))]
        for got, want in pairs:
            want = np.array(want, dtype=float)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_the_base_parameters_follow_the_tree_they_are_asked_for(arm):
    """code_tree regroups a tree once, and a copy of it (fext's trees are copies with wrenches
    on their bodies) gets its own: its wrench stays."""
    import copy
    tree = Tree(scleron.load_model(arm))
    spec = FUNCTIONS["inverse_dynamics"]
    assert code_tree(tree, spec) is code_tree(tree, FUNCTIONS["mass_matrix"])
    view = copy.copy(tree)
    view.bodies = [copy.copy(b) for b in tree.bodies]
    view.bodies[3].wrench = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    base = code_tree(view, spec)
    assert base is not code_tree(tree, spec) and base.bodies[3].wrench == view.bodies[3].wrench


SYMMETRIC = """
name: sym
gravity: [0, 0, 0]
bodies:
  - {name: p, parent: world, mass: 1.0, com: [0.2, 0, 0], inertia: [0.1, 0.1, 0.1],
     joint: {type: revolute, axis: [0, 0, 1]}}
  - {name: c, parent: p, mass: 1.0, com: [0, 0, 0], inertia: [1.0, 1.0, 0.9999999999995],
     joint: {type: revolute, axis: [1, 0, 0], xyz: [0.5, 0, 0]}}
"""


def test_a_small_difference_of_moments_is_kept(tmp_path):
    """c turns about x with Iyy - Izz = 5e-13 (a reviewer): the only part of M_pp that depends
    on q_c, and h_c at qd_p = 1, come from it. The regrouping leaves that difference on c
    (it used to snap it to 0 as noise)."""
    path = tmp_path / "sym.yaml"
    path.write_text(SYMMETRIC)
    tree = Tree(scleron.load_model(str(path)))
    base = regrouped(tree)
    alg = FloatAlgebra()
    q, qd = [0.0, 0.7], [1.0, 0.0]
    want = rec.bias_forces(tree, alg, q, qd)
    assert abs(want[1]) > 1e-13
    got = rec.bias_forces(base, alg, q, qd)       # (the rounding of moments of 1: 1e-16)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-15)
