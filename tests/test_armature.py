"""Joint armature (MuJoCo's rotor inertia, per coordinate): M(q) + diag(a) in every function.

Oracles: the same model without armature (M differs by exactly diag(a)), the identities
M FD(tau) + h = tau, ID(FD(tau)) = tau, T = 1/2 qd' M qd, Minv M = I, the analytical derivatives'
M; the compiled loop forms (Method II forward dynamics, the mass matrix in loop form) against the
numeric reference. MuJoCo itself is the oracle of tests/test_mjcf.py (armature in every model).
"""
import numpy as np
import pytest

import scleron
from scleron.dynamics import derivatives, recursions
from scleron.dynamics.tree import Tree
from scleron.errors import ModelError
from scleron.program import FloatAlgebra

ALG = FloatAlgebra()

YAML = """
name: armed
gravity: [0, -2, -9.81]
bodies:
  - name: a
    parent: world
    joint: {name: ja, type: revolute, axis: [0, 0, 1], armature: 0.3, damping: 0.1}
    mass: 1.0
    com: [0.1, 0, 0]
    inertia: [0.01, 0.02, 0.03]
  - name: b
    parent: a
    joint: {name: jb, type: prismatic, axis: [1, 0, 0], xyz: [0.2, 0, 0], armature: 0.2}
    mass: 0.5
    com: [0.1, 0.1, 0]
    inertia: [0.01, 0.02, 0.03]
  - name: c
    parent: b
    joint: {name: jc, type: spherical_quat, xyz: [0.2, 0, 0], armature: [0.1, 0.2, 0.3]}
    mass: 0.5
    com: [0.1, 0.1, 0]
    inertia: [0.01, 0.02, 0.03]
  - name: d
    parent: c
    joint: {name: jd, type: revolute, axis: [0, 1, 0], xyz: [0.2, 0, 0], armature: 0.05}
    mass: 0.4
    com: [0.1, 0, 0]
    inertia: [0.01, 0.02, 0.03]
  - name: e
    parent: d
    joint: {name: je, type: revolute, axis: [0, 1, 0], xyz: [0.2, 0, 0]}
    mass: 0.4
    com: [0.1, 0, 0]
    inertia: [0.01, 0.02, 0.03]
"""
ARMATURE = [0.3, 0.2, 0.1, 0.2, 0.3, 0.05, 0.0]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("armature") / "armed.yaml"
    path.write_text(YAML)
    return scleron.load_model(str(path))


def state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = np.array(model.neutral(), dtype=float)
    q[:2] = rng.uniform(-1, 1, 2)
    quat = rng.normal(size=4)
    q[2:6] = quat / np.linalg.norm(quat)
    q[6:] = rng.uniform(-1, 1, 2)
    return [list(x) for x in (q, rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv))]


def without_armature(model):
    import copy
    bare = copy.deepcopy(model)
    for j in bare.joints:
        j.armature = None
    return bare


def test_read_from_yaml(model):
    assert [j.armature for j in model.joints] == [(0.3,), (0.2,), (0.1, 0.2, 0.3), (0.05,), None]


def test_mass_matrix_gains_exactly_the_diagonal(model):
    q, _, _ = state(model)
    M = np.array(recursions.mass_matrix(Tree(model), ALG, q))
    M0 = np.array(recursions.mass_matrix(Tree(without_armature(model)), ALG, q))
    assert np.array_equal(M - M0 - np.diag(ARMATURE), np.zeros_like(M)) or \
        np.abs(M - M0 - np.diag(ARMATURE)).max() <= 1e-15
    Mw = np.array(recursions.mass_matrix_world(Tree(model), ALG, q))
    assert np.abs(Mw - M).max() <= 1e-14


def test_identities_with_armature(model):
    tree = Tree(model)
    for seed in range(3):
        q, qd, tau = state(model, seed)
        M = np.array(recursions.mass_matrix(tree, ALG, q))
        h = np.array(recursions.bias_forces(tree, ALG, q, qd))
        qdd = np.array(recursions.forward_dynamics(tree, ALG, q, qd, tau))
        assert np.abs(M @ qdd + h - tau).max() <= 1e-13
        assert np.abs(np.array(recursions.inverse_dynamics(tree, ALG, q, qd, list(qdd))) - tau).max() <= 1e-13
        T = recursions.kinetic_energy(tree, ALG, q, qd)
        assert T == pytest.approx(0.5 * np.array(qd) @ M @ np.array(qd), rel=1e-13)
        Minv = np.array(derivatives.mass_matrix_inverse(tree, ALG, q))
        assert np.abs(Minv @ M - np.eye(model.nv)).max() <= 1e-12
        dq, dqd, M2 = derivatives.inverse_dynamics_derivatives(tree, ALG, q, qd, list(qdd))
        assert np.abs(np.array(M2) - M).max() <= 1e-14
        # the forward dynamics' derivatives take q'' = M^-1 (tau - h) (armature in M^-1, not in h)
        fq, fqd, Minv2 = (np.array(x) for x in derivatives.forward_dynamics_derivatives(tree, ALG, q, qd, tau))
        for got, ref in ((fq, -Minv @ np.array(dq)), (fqd, -Minv @ np.array(dqd)), (Minv2, Minv)):
            assert np.abs(got - ref).max() <= 1e-11 * max(1.0, np.abs(ref).max())


def test_compiled_loop_forms_carry_the_armature(model, generated):
    """Method II (the joint classes of the loops must keep bodies of different armature apart)
    and the mass matrix in loop form, compiled, against the reference."""
    _, dyn = generated(model, "armed_loops", functions=["forward_dynamics", "mass_matrix"],
                       method=2, mass_matrix="loop")
    tree = Tree(model)
    for seed in range(3):
        q, qd, tau = state(model, seed)
        ref = np.array(recursions.forward_dynamics(tree, ALG, q, qd, tau))
        assert np.abs(dyn.forward_dynamics(q, qd, tau) - ref).max() <= 1e-12 * np.abs(ref).max()
        M = np.array(recursions.mass_matrix(tree, ALG, q))
        assert np.abs(dyn.mass_matrix(q) - M).max() <= 1e-13


@pytest.mark.parametrize("value, problem", [(-0.1, "armature must not be negative"),
                                            ("x", "armature")])
def test_bad_armature_is_refused(value, problem):
    m = scleron.Model("bad")
    with pytest.raises(ModelError, match=problem) as info:
        m.add_body("a", joint="revolute", mass=1, armature=value)
    assert "joint 'a_joint'" in str(info.value)
