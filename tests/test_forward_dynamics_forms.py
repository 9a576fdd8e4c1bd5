"""Forward dynamics by the articulated-body passes or by the mass matrix's LTDL factors.

The generated forward dynamics unrolls whichever of the two recursions its program estimates
faster for the model (scleron.unroll.fastest_recursion, Program.estimated_cycles). Checked here:
the two recursions give the same qdd on every kind of joint (the float references, which share
only passes 1-3), the choice itself on robots whose timings decided the estimate
(docs/performance.md), and the estimate's critical path on a hand-counted program. The compiled
result of the choice is checked against Pinocchio where its robots are (test_oracle_pinocchio).
"""
import os
from dataclasses import replace

import numpy as np
import pytest

import scleron
from scleron.model import Model
from scleron.dynamics import checks, newton_euler, recursions
from scleron.dynamics.tree import Tree
from scleron.functions import function_spec
from scleron.program import FloatAlgebra, Program, ProgramAlgebra
from scleron.program.program import LATENCY
from scleron.unroll import code_tree, fastest_recursion

from conftest import example, robots_dir

ALG = FloatAlgebra()

# a free flyer carrying a quaternion ball, Euler and exponential joints, a slider, springs,
# dampers, armature and a body wrench: every term the two recursions must agree on
MIXED = """
name: mixed
gravity: [0, 0, -9.81]
bodies:
  - {name: base, parent: world, joint: {name: root, type: free_flyer}, mass: 4.0,
     com: [0.02, -0.01, 0.03], inertia: [0.1, 0.12, 0.08]}
  - {name: ball, parent: base, joint: {name: shoulder, type: spherical_quat, xyz: [0.1, 0, 0.2]},
     mass: 1.2, com: [0, 0.05, -0.1], inertia: [0.01, 0.012, 0.004]}
  - {name: wrist, parent: ball, joint: {name: wrist, type: spherical, chart: ZYX, xyz: [0, 0, -0.3],
     stiffness: [3, 2, 1], damping: 0.2}, mass: 0.6, com: [0.01, 0, -0.05],
     inertia: [0.004, 0.003, 0.002]}
  - {name: slide, parent: base, joint: {name: slide, type: prismatic, axis: [0, 0.6, 0.8],
     xyz: [-0.2, 0.1, 0], armature: 0.05}, mass: 0.8, com: [0, 0, 0.1],
     inertia: [0.002, 0.002, 0.001], wrench: [0, 0.1, 0, 1.0, 0, 0]}
  - {name: hinge, parent: slide, joint: {name: hinge, type: revolute, axis: [1, 0, 0],
     xyz: [0, 0, 0.2], rpy: [0.3, 0, 1.5708]}, mass: 0.5, com: [0, 0.1, 0],
     inertia: [0.003, 0.001, 0.003]}
  - {name: second_root, parent: world, joint: {name: rail, type: prismatic, axis: [1, 0, 0]},
     mass: 2.0, inertia: [0.01, 0.01, 0.01]}
  - {name: bracket, parent: second_root, joint: {name: weld, type: fixed, xyz: [0, 0.1, 0]},
     mass: 0.3, com: [0.05, 0, 0], inertia: [0.001, 0.001, 0.001]}
  - {name: cam, parent: bracket, joint: {name: cam, type: custom, coordinates: [a],
     rotation: [[[0, 0, 1], a]], translation: ["0.1*sin(a)", "0", "0.02*a"]},
     mass: 0.4, com: [0.02, 0.01, 0], inertia: [0.002, 0.001, 0.002]}
"""


def models(tmp_path):
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    out = [str(path)] + [example(n) for n in ("tc10.yaml", "spline_chain.yaml", "spline_surface.yaml",
                                              "branched.yaml", "quadruped.yaml")]
    base = robots_dir()
    if base is not None:
        out += [os.path.join(base, p) for p in ("xarm_description/urdf/xarm7.urdf",
                                                "so_arm_description/urdf/so101.urdf")]
    return out


def random_state(tree, rng):
    """(q, qd, tau) with unit quaternions where the tree has them."""
    q = rng.uniform(-0.8, 0.8, tree.nq)
    for b in tree.bodies:
        if b.nq == b.dof + 1:                    # a quaternion joint: its last four entries
            s = b.q_start + b.nq - 4
            q[s:s + 4] /= np.linalg.norm(q[s:s + 4])
    return q, rng.uniform(-1, 1, tree.nv), rng.uniform(-2, 2, tree.nv)


def test_the_two_recursions_give_the_same_accelerations(tmp_path, rng):
    import warnings
    for path in models(tmp_path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = Tree(scleron.load_model(path))
        for _ in range(3):
            q, qd, tau = (list(x) for x in random_state(tree, rng))
            aba = np.array(recursions.forward_dynamics(tree, ALG, q, qd, tau))
            crba = np.array(recursions.forward_dynamics_by_mass_matrix(tree, ALG, q, qd, tau))
            assert np.abs(crba - aba).max() <= 1e-10 * max(1.0, np.abs(aba).max()), path
            # and M qdd + h = tau, by the other functions' references
            M = np.array(recursions.mass_matrix(tree, ALG, q))
            h = np.array(recursions.bias_forces(tree, ALG, q, qd))
            assert np.abs(M @ crba + h - tau).max() <= 1e-10 * max(1.0, np.abs(tau).max()), path


def chosen(path, **kw):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = code_tree(Tree(scleron.load_model(path, **kw)), function_spec("fd"))
    spec, program = fastest_recursion(tree, function_spec("fd"))
    aba = replace(function_spec("fd"), alternatives=()).program(tree)
    return spec.recursion, program, aba


@pytest.mark.skipif(robots_dir() is None, reason="example-robot-data (pip install -e .[test])")
def test_small_arms_take_the_mass_matrix():
    # timed 2026-11-28 (docs/performance.md): xarm7 268 -> 217 ns by the factors
    base = robots_dir()
    # (h by Newton-Euler in classical accelerations, all their joints being hinges: newton_euler)
    recursion, program, aba = chosen(os.path.join(base, "xarm_description/urdf/xarm7.urdf"))
    assert recursion is newton_euler.forward_dynamics_by_mass_matrix
    assert program.estimated_cycles() < aba.estimated_cycles()
    assert program.critical_path() < 0.7 * aba.critical_path()    # the passes' chain of divisions
    for p in ("so_arm_description/urdf/so101.urdf", "ur_description/urdf/ur5_robot.urdf",
              "kinova_description/robots/kinova.urdf"):
        recursion, _, _ = chosen(os.path.join(base, p))
        assert recursion is newton_euler.forward_dynamics_by_mass_matrix, p
    recursion, _, _ = chosen(os.path.join(base, "solo_description/robots/solo12.urdf"), floating=True)
    assert recursion is recursions.forward_dynamics


def test_long_chains_and_ill_conditioned_trees_keep_the_articulated_bodies():
    # RC20 726 against 988 ns by the factors, the quadruped on its Euler free joint 409
    # against 444 ns: the estimate keeps the passes
    for name in ("rc20.yaml", "quadruped.yaml"):
        recursion, program, aba = chosen(example(name))
        assert recursion is recursions.forward_dynamics, name
        assert program.op_counts().total == aba.op_counts().total
    # fewer estimated cycles by the factors (938 against 1,202), but its planar joint's pivot
    # is 5e-3 of its M_kk at one configuration, its spherical (Euler) joint's 2e-4
    tree = Tree(scleron.load_model(example("branched.yaml")))
    assert not checks.factors_are_accurate(tree)
    assert fastest_recursion(tree, function_spec("fd"))[0].recursion is recursions.forward_dynamics
    # beyond MASS_MATRIX_SOLVE_UP_TO_NV the factors are not even unrolled
    rc50 = Tree(scleron.load_model(example("rc50.yaml")))
    assert not function_spec("fd").alternatives[0].applies(rc50)


def gimbal(line_up, first="revolute"):
    """Three axes, the first and third parallel where the second is at -line_up; 1 t carried."""
    m = Model("gimbal")
    m.add_body("a", joint=first, mass=0.05, inertia=(1e-5,) * 3,
               **({"axis": (0, 0, 1)} if first == "revolute" else {}))
    m.add_body("b", "a", joint="revolute", axis=(1, 0, 0), mass=0.05, inertia=(1e-5,) * 3)
    m.add_body("c", "b", joint="revolute", axis=(0, 0, 1), rpy=(line_up, 0, 0), mass=1e3,
               com=(1e-5, 0, 0), inertia=(1e3,) * 3)
    return Tree(m)


def test_gimbals_that_line_up_and_quaternions_below_the_root_keep_the_passes(rng):
    """Outside testers and reviewers: a gimbal whose first and third axes line up at q2 = -0.5
    rad (outside the (0.1, 0.9) of the model checks' samples) carrying 1 t: by the factors q''
    there was 3e-9 off, 6e4 times the passes' error; at other angles, and with a universal joint
    in front, 16 random samples missed the line-up, and custom joints' angles were never turned; a chain of two spherical_quat joints: with
    the lower quaternion 1e-6 off unit length the factors' q'' moved by 2e-6, as Pinocchio's
    crba and solve, the passes' by 8e-7, as its aba."""
    for line_up in np.linspace(-3.0, 3.0, 13):
        assert not checks.factors_are_accurate(gimbal(line_up)), line_up
        behind_a_universal = Model("universal_gimbal")    # its second axis lines up with c's
        behind_a_universal.add_body("a", joint="universal", chart="ZXY", mass=0.05, inertia=(1e-5,) * 3)
        behind_a_universal.add_body("c", "a", joint="revolute", axis=(0, 0, 1), rpy=(line_up, 0, 0),
                                    mass=1e3, com=(1e-5, 0, 0), inertia=(1e3,) * 3)
        assert not checks.factors_are_accurate(Tree(behind_a_universal)), line_up
        custom = Model("custom_gimbal")                    # the same gimbal of custom joints
        custom.add_body("a", joint="custom", coordinates=["a"], rotation=[["z", "a"]], mass=0.05,
                        inertia=(1e-5,) * 3)
        custom.add_body("b", "a", joint="custom", coordinates=["b"], rotation=[["x", "b"]],
                        mass=0.05, inertia=(1e-5,) * 3)
        custom.add_body("c", "b", joint="custom", coordinates=["c"], rotation=[["z", "c"]],
                        rpy=(line_up, 0, 0), mass=1e3, com=(1e-5, 0, 0), inertia=(1e3,) * 3)
        assert not checks.factors_are_accurate(Tree(custom)), line_up
    tree = gimbal(0.5)
    spec, program = fastest_recursion(tree, function_spec("fd"))
    for _ in range(3):
        q, qd, tau = (list(x) for x in rng.uniform(-1, 1, (3, 3)))
        q[1] = -0.5
        want = np.array(recursions.forward_dynamics(tree, ALG, q, qd, tau))
        got = np.array(program.evaluate({"q": q, "qd": qd, "tau": tau})["qdd"])
        assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
    balls = Model("balls")
    balls.add_body("upper", joint="spherical_quat", mass=1.0, com=(0.2, 0, 0), inertia=(0.01, 0.02, 0.02))
    balls.add_body("mid", "upper", joint="revolute", axis=(0, 1, 0), xyz=(0.5, 0, 0), mass=0.5,
                   com=(0.1, 0, 0), inertia=(0.003, 0.004, 0.004))
    balls.add_body("lower", "mid", joint="spherical_quat", xyz=(0.4, 0, 0), mass=0.3,
                   com=(0.1, 0.02, 0), inertia=(0.001, 0.002, 0.002))
    tree = Tree(balls)
    assert checks.factors_are_accurate(tree)             # well conditioned, yet:
    assert fastest_recursion(tree, function_spec("fd"))[0].recursion is recursions.forward_dynamics


def test_critical_path_and_estimate_of_a_hand_counted_program():
    prog = Program("p")
    alg = ProgramAlgebra(prog)
    a, b, c, d = prog.input_vector("x", 4)
    e = (a * b + c) / d                        # mul, add, div in a chain
    f = alg.sin(a)                             # a function alone: shorter
    prog.set_outputs("y", [e, f])
    assert prog.critical_path() == LATENCY["mul"] + LATENCY["add"] + LATENCY["div"]
    assert prog.estimated_cycles() == prog.critical_path()    # 5 operations: latency-bound
    wide = Program("w")
    xs = wide.input_vector("x", 200)
    wide.set_outputs("y", [x * x for x in xs])                # 200 independent products
    assert wide.critical_path() == LATENCY["mul"]
    assert wide.estimated_cycles() == pytest.approx(200 / 3.5)


def test_a_heavy_body_on_a_light_gimbal_keeps_the_passes():
    """An outside reviewer: a 50 g gimbal carrying a 100 t body whose axis is 10 um off the
    gimbal's. The LTDL pivot of the gimbal is M_kk less the heavy body's share, 1e-12 of M_kk:
    by the factors q'' came out 2e-4 off Pinocchio's aba, the articulated-body passes (which form
    that pivot without the subtraction) are exact. The factors are not taken where a pivot is
    below checks.FACTORS_PIVOT_RTOL of its M_kk; everything here against Pinocchio, built
    through its own API."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(3)
    for off in (1e-5, 1e-2, 0.3):
        m = Model("gimbal")
        m.add_body("light", joint_name="gimbal", mass=0.05, inertia=(5e-6,) * 3)
        m.add_body("heavy", "light", joint_name="drive", mass=1e5, com=(2, 0, 0),
                   inertia=(1e4, 8e6, 8e6), xyz=(off, 0, 0))
        tree = Tree(m)
        spec, program = fastest_recursion(tree, function_spec("fd"))
        pm = pin.Model()
        j1 = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "gimbal")
        pm.appendBodyToJoint(j1, pin.Inertia(0.05, np.zeros(3), np.diag([5e-6] * 3)), pin.SE3.Identity())
        j2 = pm.addJoint(j1, pin.JointModelRZ(), pin.SE3(np.eye(3), np.array([off, 0, 0.0])), "drive")
        pm.appendBodyToJoint(j2, pin.Inertia(1e5, np.array([2.0, 0, 0]), np.diag([1e4, 8e6, 8e6])),
                             pin.SE3.Identity())
        pm.gravity = pin.Motion(np.array([0, 0, -9.81, 0, 0, 0]))
        data = pm.createData()
        for _ in range(5):
            q, qd, tau = (rng.uniform(-1, 1, 2) for _ in range(3))
            got = np.array(program.evaluate({"q": q, "qd": qd, "tau": tau})["qdd"])
            want = pin.aba(pm, data, q, qd, tau)
            assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max(), (off, spec.recursion)
        if off < 1e-3:          # pivot / M_kk 1e-12 and 1e-6 of the gimbal's: the passes
            assert not checks.factors_are_accurate(tree)
            assert spec.recursion is recursions.forward_dynamics
