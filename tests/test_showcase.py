"""The showcase systems of Si & Guenter section 5 (examples/, written by make_showcase.py):
TC10, TC20 (torus chains), WM (windmill), the spline chain and the spline surface.

They load with the DOF BENCHMARKS.md gives, generate and compile, their generated forward
dynamics equals M^-1 (tau - h) from the generated mass matrix and bias forces and the numeric
reference, and they conserve energy under RK4 (no damping, no torque). TC10 is compiled once
per session through the `generated` fixture; TC20 and WM compile in the slow tests (about 20 s
each), their numeric reference runs always.
"""
import importlib.util
import math

import numpy as np
import pytest
import yaml

import scleron
from scleron.dynamics import recursions as rec
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree

from conftest import EXAMPLES, example
from test_general_joints import forward_kinematics, potential_energy

DOF = {"tc10": 38, "tc20": 78, "windmill": 73, "spline_chain": 13, "spline_surface": 5}
TOL = 1e-9


def rel(a, b):
    return float(np.linalg.norm(np.subtract(a, b)) / max(np.linalg.norm(b), 1e-300))


def load(name):
    return scleron.load_model(example(f"{name}.yaml"))


# ---- the files ----------------------------------------------------------------------------------
FITTED = {"spline_chain.yaml", "spline_surface.yaml"}     # numbers out of a least-squares fit


def assert_same_numbers(a, b, where="", atol=1e-9):
    """a and b alike in structure, strings and integers; floats equal to atol (absolute)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for k in a:
            assert_same_numbers(a[k], b[k], f"{where}.{k}", atol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_numbers(x, y, f"{where}[{i}]", atol)
    elif isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) <= atol, (where, a, b)
    else:
        assert a == b, where


def header(text):
    return [line for line in text.splitlines() if line.startswith("#")]


def test_files_are_the_generator_output():
    """The committed files are make_showcase.py's output: to the byte where the numbers are
    closed-form, to 1e-9 where they come out of a fit (the spline chain's frames: a converged,
    well-conditioned Levenberg-Marquardt fit; the spline surface's rotation controls: lstsq),
    whose last digits depend on the BLAS."""
    spec = importlib.util.spec_from_file_location("make_showcase", f"{EXAMPLES}/make_showcase.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    texts = mod.texts()
    assert sorted(texts) == sorted(f"{n}.yaml" for n in DOF)
    for fname, text in texts.items():
        with open(f"{EXAMPLES}/{fname}") as fh:
            committed = fh.read()
        stale = f"examples/{fname} is stale: run python examples/make_showcase.py"
        if fname not in FITTED:
            assert committed == text, stale
        else:
            assert header(committed) == header(text), stale
            assert_same_numbers(yaml.safe_load(committed), yaml.safe_load(text), fname)


def test_same_numbers_sees_a_small_change():
    a = {"frames": [{"xyz": [1.0, 2.0], "rotation": [[1.0, 0.0], [0.0, 1.0]]}], "n": 3}
    b = yaml.safe_load(yaml.safe_dump(a, sort_keys=False))
    assert_same_numbers(a, b)
    b["frames"][0]["rotation"][1][0] = 1e-6
    with pytest.raises(AssertionError):
        assert_same_numbers(a, b)
    with pytest.raises(AssertionError):
        assert_same_numbers(a, {**a, "n": 4})


@pytest.mark.parametrize("name", sorted(DOF))
def test_showcase_loads_with_its_dof(name):
    m = load(name)
    assert m.nv == DOF[name]
    assert m.q0 is not None and m.q0.shape == (m.nv,) and m.qd0.shape == (m.nv,)


def test_torus_chains_are_built_as_benchmarks_says():
    for n in (10, 20):
        m = load(f"tc{n}")
        assert len(m.bodies) == n and m.nv == 2 + 4 * (n - 1)
        assert m.joints[0].type == "universal" and m.joints[0].parent == "world"
        for j in m.joints[1:]:
            assert j.type == "surface_surface" and not j.params.get("spin")
            for key in ("parent_surface", "child_surface"):
                assert j.params[key] == {"shape": "torus", "major_radius": 1.0, "minor_radius": 0.25}
        for b in m.bodies:
            assert b.inertia.mass == 1.0
            np.testing.assert_allclose(sorted(np.linalg.eigvalsh(b.inertia.inertia)),
                                       [0.5 + 5 / 8 * 0.0625, 0.5 + 5 / 8 * 0.0625, 1 + 0.75 * 0.0625])
        # torus 1's joint sits on its rim: the outer equator, R + a from the centre
        assert np.linalg.norm(m.bodies[0].inertia.com) == pytest.approx(1.25)


def test_windmill_is_built_as_benchmarks_says():
    m = load("windmill")
    assert m.joints[0].type == "revolute" and len(m.bodies) == 19
    pairs = set()
    for j in m.joints[1:]:
        assert j.type == "surface_surface" and j.dof == 4
        pairs.add(frozenset((j.params["parent_surface"]["shape"], j.params["child_surface"]["shape"])))
    for pair in [("sphere", "sphere"), ("sphere", "ellipsoid"), ("sphere", "torus"), ("torus", "torus"),
                 ("torus", "ellipsoid")]:
        assert frozenset(pair) in pairs
    assert sum(j.parent == "hub" for j in m.joints) == 6
    # contacts start on the equators, away from the poles of spheres and ellipsoids
    k = 1
    for j in m.joints[1:]:
        q = m.q0[k:k + 4]
        assert abs(q[1]) < 0.2 and abs(q[3]) < 0.2
        k += 4


# ---- dynamics ------------------------------------------------------------------------------------
def states(model, rng, n=3):
    yield model.q0, model.qd0, rng.normal(size=model.nv)
    for _ in range(n - 1):
        yield (model.q0 + rng.normal(scale=0.1, size=model.nv), rng.normal(size=model.nv),
               rng.normal(size=model.nv))


def check_generated(model, dyn, rng):
    tree = Tree(model)
    for q, qd, tau in states(model, rng):
        M, h, a = dyn.mass_matrix(q), dyn.bias_forces(q, qd), dyn.forward_dynamics(q, qd, tau)
        assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max()
        np.linalg.cholesky(M)
        assert rel(a, np.linalg.solve(M, tau - h)) <= TOL
        # M a + h = tau: relative to the larger of tau and h (h ~ 1e5 for a fast 20-torus chain)
        scale = max(np.linalg.norm(tau), np.linalg.norm(h))
        assert np.linalg.norm(M @ a + h - tau) <= TOL * scale
        assert np.linalg.norm(dyn.inverse_dynamics(q, qd, a) - tau) <= TOL * scale
        assert rel(a, rec.forward_dynamics(tree, FloatAlgebra(), list(q), list(qd), list(tau))) <= TOL


def test_tc10_generated_dynamics(generated, rng):
    model, dyn = generated(example("tc10.yaml"), "tc10")
    assert dyn.nv == 38
    check_generated(model, dyn, rng)


# the windmill's surface-pair joints take ~9 s of sympy to derive: slow; tc20 (torus pairs) stays
@pytest.mark.parametrize("name", ["tc20", pytest.param("windmill", marks=pytest.mark.slow)])
def test_numeric_reference_of_tc20_and_windmill(name, rng):
    """Without compiling: the numeric reference's forward dynamics = M^-1 (tau - h) of its own
    mass matrix and bias forces (the generated code runs the same recursions)."""
    model = load(name)
    tree, alg = Tree(model), FloatAlgebra()
    for q, qd, tau in list(states(model, rng))[:2]:
        M = np.array(rec.mass_matrix(tree, alg, list(q)))
        h = np.array(rec.bias_forces(tree, alg, list(q), list(qd)))
        a = np.array(rec.forward_dynamics(tree, alg, list(q), list(qd), list(tau)))
        np.linalg.cholesky(M)
        assert rel(a, np.linalg.solve(M, tau - h)) <= TOL
        assert np.linalg.norm(M @ a + h - tau) <= TOL * max(np.linalg.norm(tau), np.linalg.norm(h))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tc20", "windmill"])
def test_tc20_and_windmill_generated_dynamics(name, generated, rng):
    model, dyn = generated(example(f"{name}.yaml"), name)
    assert dyn.nv == DOF[name]
    check_generated(model, dyn, rng)


# ---- simulation: energy under RK4 -----------------------------------------------------------------
def simulate(model, dyn, duration=2.0, dt=1e-4, every=200, watch=None):
    """RK4 from the model's initial state with tau = 0; returns the largest |E - E0| and the
    energy scale max(|E0|, max T) and the coordinates seen (every `every` steps)."""
    q, qd = model.q0.copy(), model.qd0.copy()
    tau = np.zeros(model.nv)
    fd = dyn.forward_dynamics

    def energy(q, qd):
        T = 0.5 * qd @ dyn.mass_matrix(q) @ qd
        return T, T + potential_energy(model, q)
    T0, E0 = energy(q, qd)
    worst, scale, seen = 0.0, max(abs(E0), T0), [q]
    for step in range(int(round(duration / dt))):
        k1q, k1v = qd, fd(q, qd, tau)
        k2q, k2v = qd + dt / 2 * k1v, fd(q + dt / 2 * k1q, qd + dt / 2 * k1v, tau)
        k3q, k3v = qd + dt / 2 * k2v, fd(q + dt / 2 * k2q, qd + dt / 2 * k2v, tau)
        k4q, k4v = qd + dt * k3v, fd(q + dt * k3q, qd + dt * k3v, tau)
        q = q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        qd = qd + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        if step % every == every - 1:
            assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd))
            T, E = energy(q, qd)
            worst, scale = max(worst, abs(E - E0)), max(scale, T)
            seen.append(q)
    return worst, scale, np.array(seen)


def test_tc10_conserves_energy(generated):
    """2 s of RK4 at dt = 1e-4 without damping or torque: |E - E0| <= 1e-6 of the energy scale."""
    model, dyn = generated(example("tc10.yaml"), "tc10")
    worst, scale, seen = simulate(model, dyn)
    assert worst <= 1e-6 * scale, (worst, scale)
    assert np.ptp(seen, axis=0).max() > 0.1, "the chain should move"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tc20", "windmill"])
def test_tc20_and_windmill_conserve_energy(name, generated):
    model, dyn = generated(example(f"{name}.yaml"), name)
    worst, scale, _ = simulate(model, dyn)
    assert worst <= 1e-6 * scale, (worst, scale)


def test_spline_chain_first_link_generated_dynamics(generated, rng):
    """The spline chain's joint (a torus sliding along a spline curve) in generated code, on the
    chain's first link alone: the default run's check of spline_curve code (the whole chain and
    its simulation is the slow test below)."""
    data = yaml.safe_load(open(example("spline_chain.yaml")))
    data["bodies"] = data["bodies"][:1]
    data["initial"] = {"q": {"slide": data["initial"]["q"]["slide"]}}
    model = scleron.model.model_from_dict(data, "spline_chain_first.yaml")
    assert model.joints[0].type == "spline_curve"
    model, dyn = generated(model, "spline_chain_first")
    check_generated(model, dyn, rng)


@pytest.mark.slow      # ~7 s compile + simulation; spline joints' S, Sdot and code are checked in test_general_joints
def test_spline_chain_slides_and_conserves_energy(generated):
    model, dyn = generated(example("spline_chain.yaml"), "spline_chain")
    worst, scale, seen = simulate(model, dyn)
    assert worst <= 1e-6 * scale, (worst, scale)
    s = seen[:, 0]
    assert np.ptp(s) > 0.2, "torus 1 should slide along the curve"
    assert 0.0 < s.min() and s.max() < 4.0, "it stays on the spline's 4 segments"


def test_spline_chain_torus_axis_follows_the_tangent():
    """The curve passes through torus 1's centre (its body origin) and its main axis (body x)
    stays along the tangent of the curve (to 2.5 degrees: the spline interpolates frames, and
    make_showcase.py fits only the directions of the control frames' x axes: 2.3 degrees)."""
    model = load("spline_chain")
    jm = Tree(model).bodies[0].joint
    for s in np.linspace(0.0, 4.0, 41):
        G = jm.numeric("G", [s])
        tangent = jm.numeric("G", [s + 1e-6])[:3, 3] - jm.numeric("G", [s - 1e-6])[:3, 3]
        cos = G[:3, 0] @ tangent / np.linalg.norm(tangent)
        assert math.degrees(math.acos(min(1.0, cos))) < 2.5, s
    # the torus surface of torus 1 has its symmetry axis along body x
    R = np.asarray(model.joints[1].origin.rotation)
    np.testing.assert_allclose(R @ [0, 0, 1], [1, 0, 0], atol=1e-12)


def test_spline_surface_board_slides_in_the_tangent_plane(generated):
    model, dyn = generated(example("spline_surface.yaml"), "spline_surface")
    worst, scale, seen = simulate(model, dyn)
    assert worst <= 1e-6 * scale, (worst, scale)
    uv = seen[:, :2]
    assert np.ptp(uv, axis=0).min() > 0.05, "the board should move over the surface"
    assert uv.min() > 0.0 and uv.max() < 2.0, "it stays on the 2 x 2 patches"
    jm = Tree(model).bodies[0].joint
    for u, v in [(0.2, 0.3), (1.0, 1.0), (1.6, 1.0), (1.9, 0.1), (0.5, 1.7)]:
        G = jm.numeric("G", [u, v])
        pu = jm.numeric("G", [u + 1e-6, v])[:3, 3] - jm.numeric("G", [u - 1e-6, v])[:3, 3]
        pv = jm.numeric("G", [u, v + 1e-6])[:3, 3] - jm.numeric("G", [u, v - 1e-6])[:3, 3]
        n = np.cross(pu, pv)
        assert math.degrees(math.acos(min(1.0, G[:3, 2] @ n / np.linalg.norm(n)))) < 0.2


def test_forward_kinematics_of_the_chains_hang_down():
    """A sanity check of the initial states: every torus of TC10 and of the spline chain hangs
    below its parent (centres descend by about 2.3 m, the contacts sit on the outer rims)."""
    for name in ("tc10", "spline_chain"):
        model = load(name)
        G = forward_kinematics(model, model.q0)
        z = [(g[:3, :3] @ b.inertia.com + g[:3, 3])[2] for b, g in zip(model.bodies, G)]
        assert np.all(np.diff(z) < -2.0), (name, z)
