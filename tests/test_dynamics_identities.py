"""Identities every correct dynamics code satisfies, on every example and two real robots.

M symmetric positive definite; M FD(tau) + h = tau; ID(FD(tau)) = tau; ID = M qdd + h; the
generated C equals the numpy reference; batched calls equal looped single calls; the calling
conventions (out=, shapes, dtypes, lists); energy balance dE/dt = qd^T tau along the motion;
and Featherstone's 6-link planar oracle (RBDA Fig. 10.3).
"""
import copy
import inspect
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions as rec
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.joints import joint_model

from conftest import example, robot_urdf

NSTATES = 4
TOL = 1e-9

# name -> (path, range of the random coordinates); the branched tree and the quadruped carry
# Euler-angle / exponential charts, kept away from their singularities
SYSTEMS = [
    pytest.param(("rc20", lambda: example("rc20.yaml"), math.pi), id="rc20"),
    pytest.param(("branched", lambda: example("branched.yaml"), 1.2), id="branched"),
    pytest.param(("quadruped", lambda: example("quadruped.yaml"), 1.2), id="quadruped"),
    pytest.param(("panda", lambda: robot_urdf("panda"), math.pi), id="panda"),
    pytest.param(("ur5", lambda: robot_urdf("ur5"), math.pi), id="ur5"),
    pytest.param(("rc50", lambda: example("rc50.yaml"), math.pi), id="rc50", marks=pytest.mark.slow),
    pytest.param(("rc100", lambda: example("rc100.yaml"), math.pi), id="rc100", marks=pytest.mark.slow),
]


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def states(rng, nv, qrange, n=NSTATES):
    for _ in range(n):
        yield (rng.uniform(-qrange, qrange, nv), rng.uniform(-1.5, 1.5, nv),
               rng.uniform(-2, 2, nv), rng.uniform(-5, 5, nv))


@pytest.fixture(params=SYSTEMS)
def system(request, generated):
    name, path, qrange = request.param
    model, dyn = generated(path(), name)
    return name, model, dyn, qrange


# ---- algebraic identities ---------------------------------------------------------------------------
def test_module_metadata(system):
    name, model, dyn, _ = system
    assert dyn.nv == dyn.nq == model.nv
    assert dyn.joint_names == [j.name for j in model.joints]
    assert len(dyn.coordinate_names) == model.nv


def test_mass_matrix_symmetric_positive_definite(system, rng):
    name, model, dyn, qrange = system
    for q, _, _, _ in states(rng, model.nv, qrange):
        M = dyn.mass_matrix(q)
        assert M.shape == (model.nv, model.nv)
        assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max()
        np.linalg.cholesky(M)                       # raises LinAlgError unless positive definite
        assert np.all(np.diag(M) > 0)


def test_forward_inverse_mass_bias_agree(system, rng):
    name, model, dyn, qrange = system
    for q, qd, qdd, tau in states(rng, model.nv, qrange):
        M, h = dyn.mass_matrix(q), dyn.bias_forces(q, qd)
        a = dyn.forward_dynamics(q, qd, tau)
        assert rel_err(M @ a + h, tau) <= TOL, "M FD(tau) + h != tau"
        assert rel_err(dyn.inverse_dynamics(q, qd, a), tau) <= TOL, "ID(FD(tau)) != tau"
        assert rel_err(dyn.inverse_dynamics(q, qd, qdd), M @ qdd + h) <= TOL, "ID != M qdd + h"
        assert rel_err(dyn.forward_dynamics(q, qd, M @ qdd + h), qdd) <= 1e-8, "FD(M qdd + h) != qdd"
        assert rel_err(dyn.inverse_dynamics(q, qd, np.zeros(model.nv)), h) <= TOL, "ID(q, qd, 0) != h"
        # column k of M is ID(q, 0, e_k) - ID(q, 0, 0)
        g = dyn.bias_forces(q, np.zeros(model.nv))
        k = int(rng.integers(model.nv))
        e = np.zeros(model.nv)
        e[k] = 1.0
        assert rel_err(dyn.inverse_dynamics(q, np.zeros(model.nv), e) - g, M[:, k]) <= 1e-8


def test_generated_equals_numpy_reference(system, rng):
    name, model, dyn, qrange = system
    tree, alg = Tree(model), FloatAlgebra()
    nstates = 2 if model.nv > 20 else NSTATES
    for q, qd, qdd, tau in states(rng, model.nv, qrange, nstates):
        pairs = [(dyn.forward_dynamics(q, qd, tau), rec.forward_dynamics(tree, alg, q, qd, tau)),
                 (dyn.inverse_dynamics(q, qd, qdd), rec.inverse_dynamics(tree, alg, q, qd, qdd)),
                 (dyn.mass_matrix(q), rec.mass_matrix(tree, alg, q)),
                 (dyn.bias_forces(q, qd), rec.bias_forces(tree, alg, q, qd))]
        for fname, (gen, ref) in zip(["FD", "ID", "M", "h"], pairs):
            ref = np.asarray(ref, dtype=float).reshape(gen.shape)
            assert rel_err(gen, ref) <= 1e-12, f"{name} {fname}: {rel_err(gen, ref):.3g}"


def test_batched_equals_looped(system, rng):
    name, model, dyn, qrange = system
    N, nv = 7, model.nv
    Q = rng.uniform(-qrange, qrange, (N, nv))
    QD, QDD, TAU = (rng.uniform(-2, 2, (N, nv)) for _ in range(3))
    calls = {"forward_dynamics": (Q, QD, TAU), "inverse_dynamics": (Q, QD, QDD),
             "mass_matrix": (Q,), "bias_forces": (Q, QD)}
    for fname, args in calls.items():
        f = getattr(dyn, fname)
        batch = f(*args)
        looped = np.array([f(*(a[k] for a in args)) for k in range(N)])
        assert batch.shape == looped.shape == ((N, nv, nv) if fname == "mass_matrix" else (N, nv))
        scale = max(1.0, np.abs(looped).max())
        assert np.abs(batch - looped).max() <= 1e-15 * scale, fname
        # a batch of one and an empty batch
        assert f(*(a[:1] for a in args)).shape == (1,) + batch.shape[1:]
        np.testing.assert_array_equal(f(*(a[:1] for a in args))[0], looped[0])
        assert f(*(a[:0] for a in args)).shape == (0,) + batch.shape[1:]


def test_out_argument_and_input_checks(system, rng):
    name, model, dyn, qrange = system
    nv = model.nv
    q, qd, qdd, tau = next(states(rng, nv, qrange, 1))
    # out= is filled in place and returned
    out = np.full(nv, np.nan)
    res = dyn.forward_dynamics(q, qd, tau, out=out)
    assert res is out
    np.testing.assert_array_equal(out, dyn.forward_dynamics(q, qd, tau))
    outM = np.empty((nv, nv))
    assert dyn.mass_matrix(q, out=outM) is outM
    np.testing.assert_array_equal(outM, dyn.mass_matrix(q))
    outB = np.empty((3, nv, nv))
    Q = np.stack([q, 2 * q, -q])
    assert dyn.mass_matrix(Q, out=outB) is outB
    np.testing.assert_array_equal(outB[1], dyn.mass_matrix(2 * q))
    outh = np.empty((3, nv))
    assert dyn.bias_forces(Q, np.stack([qd] * 3), out=outh) is outh
    np.testing.assert_array_equal(outh[2], dyn.bias_forces(-q, qd))
    # any layout: a strided view, a block of a larger matrix, Fortran order (an MPC tester
    # filled the blocks of its A matrix through copies of its own)
    strided = np.full(2 * nv, np.nan)
    assert dyn.inverse_dynamics(q, qd, qdd, out=strided[::2]) is not None
    np.testing.assert_array_equal(strided[::2], dyn.inverse_dynamics(q, qd, qdd))
    assert np.isnan(strided[1::2]).all()                    # nothing written between
    A = np.full((nv + 2, 2 * nv), np.nan)
    block = A[1:nv + 1, nv:]
    assert dyn.mass_matrix(q, out=block) is block
    np.testing.assert_array_equal(A[1:nv + 1, nv:], dyn.mass_matrix(q))
    assert np.isnan(A[0]).all() and np.isnan(A[1:nv + 1, :nv]).all()
    F = np.empty((3, nv, nv), order="F")
    dyn.mass_matrix(Q, out=F)
    np.testing.assert_array_equal(F, outB)
    # wrong out: shape, dtype, read-only
    bad_outs = [np.empty(nv + 1), np.empty((1, nv)), np.empty(nv, dtype=np.float32),
                np.empty(nv, dtype=np.int64), [0.0] * nv]
    ro = np.empty(nv)
    ro.flags.writeable = False
    bad_outs.append(ro)
    for bad in bad_outs:
        with pytest.raises(ValueError, match="out"):
            dyn.inverse_dynamics(q, qd, qdd, out=bad)
    with pytest.raises(ValueError, match="out"):
        dyn.mass_matrix(q, out=np.empty(nv * nv))
    with pytest.raises(ValueError, match="out"):
        dyn.mass_matrix(Q, out=np.empty((3, nv, nv), dtype=np.float32))
    # wrong input shapes name the argument
    with pytest.raises(ValueError, match="qd"):
        dyn.forward_dynamics(q, qd[:-1], tau)
    with pytest.raises(ValueError, match="tau"):
        dyn.forward_dynamics(q, qd, np.append(tau, 0.0))
    with pytest.raises(ValueError, match="qdd"):
        dyn.inverse_dynamics(q, qd, qdd.reshape(1, 1, nv))
    with pytest.raises(ValueError, match="q"):
        dyn.mass_matrix(np.zeros((2, nv + 1)))
    with pytest.raises(ValueError, match="q"):
        dyn.mass_matrix(5.0)
    # non-real inputs name the argument instead of being cast
    with pytest.raises(ValueError, match="qd"):
        dyn.forward_dynamics(q, qd + 0j, tau)
    with pytest.raises(ValueError, match="tau"):
        dyn.forward_dynamics(q, qd, ["x"] * nv)
    with pytest.raises(ValueError, match="q"):
        dyn.mass_matrix([None] * nv)
    # single and batched inputs mixed, or batches of different lengths
    with pytest.raises(ValueError, match="qd"):
        dyn.bias_forces(np.stack([q, q]), qd)
    with pytest.raises(ValueError, match="qd"):
        dyn.bias_forces(np.stack([q, q]), np.stack([qd, qd, qd]))
    with pytest.raises(ValueError, match="tau"):
        dyn.forward_dynamics(q, qd, np.stack([tau, tau]))
    # lists, float32, integer and non-contiguous inputs are accepted and converted
    want = dyn.forward_dynamics(q, qd, tau)
    np.testing.assert_array_equal(dyn.forward_dynamics(list(q), list(qd), list(tau)), want)
    q32, qd32, tau32 = (x.astype(np.float32) for x in (q, qd, tau))
    got32 = dyn.forward_dynamics(q32, qd32, tau32)
    assert got32.dtype == np.float64
    np.testing.assert_array_equal(got32, dyn.forward_dynamics(*(x.astype(np.float64) for x in (q32, qd32, tau32))))
    np.testing.assert_array_equal(dyn.mass_matrix(np.zeros(nv, dtype=int)), dyn.mass_matrix(np.zeros(nv)))
    strided = np.empty((nv, 2))
    strided[:, 0] = q
    np.testing.assert_array_equal(dyn.mass_matrix(strided[:, 0]), dyn.mass_matrix(q))
    np.testing.assert_array_equal(dyn.mass_matrix(np.asfortranarray(Q)), dyn.mass_matrix(Q))
    # inputs are not modified
    q_copy = q.copy()
    dyn.forward_dynamics(q, qd, tau)
    np.testing.assert_array_equal(q, q_copy)


def test_fast_extension_is_the_public_function_and_equals_cffi(system, rng):
    """The METH_FASTCALL extension's functions are the public ones; they equal the cffi call of
    the same C function and hand everything else to the checked Python functions."""
    name, model, dyn, qrange = system
    nv = model.nv
    assert dyn._fast is not None, "the fast extension was not built"
    assert dyn.forward_dynamics is dyn._fast.forward_dynamics
    q, qd, qdd, tau = next(states(rng, nv, qrange, 1))
    ffi, lib = dyn.ffi, dyn.lib
    c_name = next(n for n in dir(lib) if n.endswith("_inverse_dynamics"))
    via_cffi = np.empty(nv)
    getattr(lib, c_name)(*(ffi.from_buffer("double[]", a) for a in (q, qd, qdd)),
                         ffi.from_buffer("double[]", via_cffi, True))
    np.testing.assert_array_equal(dyn.inverse_dynamics(q, qd, qdd), via_cffi)
    out = np.empty(nv)
    assert dyn.inverse_dynamics(q, qd, qdd, out=out) is out
    np.testing.assert_array_equal(dyn.inverse_dynamics(q, qd, qdd, out=None, threads=1), via_cffi)
    with pytest.raises(TypeError):
        dyn.inverse_dynamics(q, qd, qdd, outt=out)
    with pytest.raises(TypeError):
        dyn.inverse_dynamics(q, qd)
    assert list(inspect.signature(dyn.mass_matrix).parameters) == ["q", "out", "threads"]


# ---- energy balance ------------------------------------------------------------------------------------
def body_transforms(model, q):
    """World 4x4 transform of every body: G_i = G_parent * origin_i * Q_i(q_i)."""
    G, k = [], 0
    index = {b.name: i for i, b in enumerate(model.bodies)}
    for j in model.joints:
        X = np.eye(4)
        X[:3, :3], X[:3, 3] = j.origin.rotation, j.origin.translation
        parent = np.eye(4) if j.parent == "world" else G[index[j.parent]]
        G.append(parent @ X @ joint_model(j.type, j.params).numeric("G", q[k:k + j.dof]))
        k += j.dof
    return G


def potential_energy(model, q):
    V = 0.0
    for body, G in zip(model.bodies, body_transforms(model, q)):
        c = G[:3, :3] @ np.asarray(body.inertia.com, dtype=float) + G[:3, 3]
        V -= body.inertia.mass * float(np.dot(model.gravity, c))
    return V


def test_energy_balance(system, rng):
    """dE/dt = qd^T tau along q(s) = q + s qd + s^2/2 qdd, qdd = FD(q, qd, tau) (central difference)."""
    name, model, dyn, qrange = system
    for q, qd, _, tau in states(rng, model.nv, qrange, 2):
        qdd = dyn.forward_dynamics(q, qd, tau)

        def energies(s):
            qs, qds = q + s * qd + 0.5 * s * s * qdd, qd + s * qdd
            return 0.5 * qds @ dyn.mass_matrix(qs) @ qds, potential_energy(model, qs)
        h = 1e-4 / max(1.0, np.abs(qdd).max())
        (Tp, Vp), (Tm, Vm) = energies(h), energies(-h)
        dT, dV = (Tp - Tm) / (2 * h), (Vp - Vm) / (2 * h)
        power = float(qd @ tau)
        scale = max(abs(power), abs(dT), abs(dV))
        assert abs(dT + dV - power) <= 1e-6 * scale, (name, dT, dV, power)


def test_potential_energy_matches_gravity_forces(system, rng):
    """The gravity part of h (at qd = 0) is dV/dq: checks the forward kinematics used above too."""
    name, model, dyn, qrange = system
    q = rng.uniform(-qrange, qrange, model.nv)
    g = dyn.bias_forces(q, np.zeros(model.nv))
    eps = 1e-6
    ks = np.sort(rng.choice(model.nv, size=min(model.nv, 8), replace=False))   # keeps RC100 fast
    grad = np.array([(potential_energy(model, q + eps * e) - potential_energy(model, q - eps * e)) / (2 * eps)
                     for e in np.eye(model.nv)[ks]])
    assert np.abs(grad - g[ks]).max() <= 1e-6 * max(1.0, np.abs(g).max())
    # static_forces is h(q, 0) generated on its own (the velocity terms folded away)
    assert rel_err(dyn.static_forces(q), g) <= 1e-12


# ---- Featherstone's 6-link planar zigzag (RBDA Fig. 10.3) ---------------------------------------------
def featherstone_six_link():
    m = scleron.Model("featherstone6", gravity=(0, 0, 0))
    for i in range(1, 7):
        m.add_body(f"link{i}", "world" if i == 1 else f"link{i - 1}", joint="revolute",
                   joint_name=f"joint{i}", axis=(0, 0, 1), xyz=(0, 0, 0) if i == 1 else (1, 0, 0),
                   mass=1.0, com=(0.5, 0, 0), inertia=(1 / 12, 1 / 12, 1 / 12))
    return m


def test_featherstone_six_link(generated):
    model, dyn = generated(featherstone_six_link(), "featherstone6")
    q = np.radians([75, -75, 75, -75, 75, -75])
    zero = np.zeros(6)
    tau = dyn.inverse_dynamics(q, zero, np.ones(6))
    np.testing.assert_allclose(tau, [126.4936, 97.4663, 69.9762, 43.7998, 21.9371, 6.1646], rtol=0, atol=1e-3)
    np.testing.assert_allclose(dyn.mass_matrix(q) @ np.ones(6), tau, rtol=1e-12)
    qdd = dyn.forward_dynamics(q, zero, [126, 97.5, 70.0, 43.8, 21.9, 6.16])
    np.testing.assert_allclose(qdd, [0.6592, 1.3654, 1.3808, 0.5894, 0.9057, 1.0705], rtol=0, atol=1e-4)
    assert 700 < np.linalg.cond(dyn.mass_matrix(q)) < 750          # RBDA: cond(H) = 725


def test_bind_is_the_same_computation(system, rng):
    """dyn.bind(name, *inputs, out) -> a no-argument callable on those arrays."""
    name, model, dyn, qrange = system
    nv = model.nv
    q, qd, qdd, tau = next(states(rng, nv, qrange, 1))
    out = np.empty(nv)
    fd = dyn.bind("forward_dynamics", q, qd, tau, out)
    fd()
    np.testing.assert_array_equal(out, dyn.forward_dynamics(q, qd, tau))
    q[:] = q + 0.1                       # inputs are read at call time
    fd()
    np.testing.assert_array_equal(out, dyn.forward_dynamics(q, qd, tau))
    M = np.empty((nv, nv))
    dyn.bind(dyn.mass_matrix, q, M)()            # the function itself, as well as its name
    np.testing.assert_array_equal(M, dyn.mass_matrix(q))
    with pytest.raises(ValueError, match="out"):
        dyn.bind("bias_forces", q, qd, np.empty(nv + 1))
    with pytest.raises(ValueError, match="qd"):
        dyn.bind("bias_forces", q, qd.astype(np.float32), np.empty(nv))
    with pytest.raises(ValueError, match="unknown function"):
        dyn.bind("jacobian", q, np.empty(nv))
    with pytest.raises(ValueError, match=r"did you mean mass_matrix\b"):
        dyn.bind("mass_matrx", q, M)             # (not the whole list: it was every function)
    dyn.bind("mass", q, M)()                       # an alias, as `scleron show --function mass`
    np.testing.assert_array_equal(M, dyn.mass_matrix(q))
    frozen = np.empty(nv)
    frozen.flags.writeable = False                 # said as such (it said "C-contiguous float64")
    with pytest.raises(ValueError, match=r"out \(h\) must be a C-contiguous writeable"):
        dyn.bind("bias_forces", q, qd, frozen)
    with pytest.raises(TypeError, match="does not pickle"):     # not cffi's "_cffi_backend.Lib"
        pickle.dumps(fd)
    assert copy.copy(fd) is fd
    # a deep copy of an object holding the arrays and the callable computes on the copy's
    # arrays: it ran on the original's, which it changed (an outside tester)
    holder = {"q": q, "qd": qd, "tau": tau, "out": out, "step": fd}
    clone = copy.deepcopy(holder)
    clone["q"][:] = q + 0.2
    before = out.copy()
    clone["step"]()
    np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(clone["out"], dyn.forward_dynamics(q + 0.2, qd, tau))
    with pytest.raises(TypeError, match="takes no arguments"):
        fd(q)
    # bind's callable is the extension's C object where it was built: it cost more than a call
    # with out= through cffi (an outside tester); out= and threads= are keywords only: a fourth
    # array was taken as out and overwritten
    assert dyn._fast is None or type(fd).__name__ == "Bound"
    with pytest.raises(TypeError, match="positional argument"):
        dyn.forward_dynamics(q, qd, tau, out)

    def forward_dynamics(*args):       # another module's function of the same name: bind ran
        pass                           # this module's on the arrays, silently (an outside tester)
    with pytest.raises(ValueError, match="not this module's function"):
        dyn.bind(forward_dynamics, q, qd, tau, out)


def test_vectorised_sincos_matches_libm(generated):
    """The generated code computes sin/cos of all coordinates at once (scl_sincos); a
    pendulum's gravity torque checks it against numpy over a wide range of angles, including
    the libm fallback beyond |q| = 1e5 and non-finite input."""
    m = scleron.Model("pendulum_sincos", gravity=(0.0, 0.0, -1.0))
    m.add_body("arm", joint="revolute", axis=(0, 1, 0), mass=1.0, com=(1.0, 0.0, 0.0),
               inertia=(0.1, 0.1, 0.1))
    m.add_body("arm2", "arm", joint="revolute", axis=(0, 0, 1), mass=1.0, com=(0.0, 1.0, 0.0),
               inertia=(0.1, 0.1, 0.1), xyz=(1.0, 0.0, 0.0))
    _, dyn = generated(m, "pendulum_sincos")
    rng = np.random.default_rng(5)
    q1 = np.concatenate([rng.uniform(-10, 10, 4000), rng.uniform(-1e5, 1e5, 1000),
                         [0.0, np.pi / 2, -np.pi, 1e5, -1e5 + 0.5, 1e7, 3e12]])
    q = np.stack([q1, rng.uniform(-4, 4, q1.size)], axis=1)
    h = dyn.bias_forces(q, np.zeros_like(q))
    tree, alg = Tree(m), FloatAlgebra()
    ref = np.array([rec.bias_forces(tree, alg, qq, [0.0, 0.0]) for qq in q])
    np.testing.assert_allclose(h, ref, rtol=0, atol=4e-15 * np.abs(ref).max())
    bad = dyn.bias_forces(np.array([np.nan, 0.3]), np.zeros(2))
    assert np.isnan(bad).any()


def test_sincos_of_seven_angles_ends_with_an_overlapping_vector(generated):
    """Seven angles: scl_sincos takes 0-3 and then 3-6 as two vectors (the overlap computed
    twice); a chain of seven hinges about alternating axes needs every sine and cosine for its
    gravity torques, checked against numpy through the reference, with angles past the libm
    fallback at the first, the overlapped and the last coordinate."""
    m = scleron.Model("chain_sincos7", gravity=(0.0, 0.0, -9.81))
    parent = "world"
    for k in range(7):
        m.add_body(f"l{k}", parent, joint="revolute", axis=[(0, 1, 0), (0, 0, 1), (1, 0, 0)][k % 3],
                   mass=1.0 + 0.1 * k, com=(0.3, 0.05 * k, 0.02), inertia=(0.1, 0.1, 0.1),
                   xyz=(0.5, 0.0, 0.1) if k else (0.0, 0.0, 0.0))
        parent = f"l{k}"
    _, dyn = generated(m, "chain_sincos7", functions=["bias_forces"])
    rng = np.random.default_rng(7)
    q = rng.uniform(-10, 10, (300, 7))
    for row, k in ((0, 0), (1, 3), (2, 6), (3, 4)):
        q[row, k] = rng.choice([-1, 1]) * rng.uniform(1e5, 1e9)
    h = dyn.bias_forces(q, np.zeros_like(q))
    tree, alg = Tree(m), FloatAlgebra()
    ref = np.array([rec.bias_forces(tree, alg, list(qq), [0.0] * 7) for qq in q])
    np.testing.assert_allclose(h, ref, rtol=0, atol=4e-15 * np.abs(ref).max())
    bad = dyn.bias_forces(np.array([0.1, 0.2, 0.3, np.inf, 0.5, 0.6, 0.7]), np.zeros(7))
    assert np.isnan(bad).any()


def test_threaded_batch_equals_single_threaded(system, rng):
    name, model, dyn, qrange = system
    Q = rng.uniform(-1, 1, (103, model.nv))
    for fn, args in (("forward_dynamics", (Q, Q, Q)), ("mass_matrix", (Q,)), ("bias_forces", (Q, Q))):
        f = getattr(dyn, fn)
        np.testing.assert_array_equal(f(*args, threads=3), f(*args))


def test_threads_with_and_without_openmp(tmp_path, monkeypatch, rng):
    """threads= runs OpenMP threads in C where the compiler has OpenMP (gcc here), and Python
    threads over the sequential batch function otherwise: the same numbers either way."""
    m = scleron.Model("omp")
    m.add_body("a", joint="revolute", axis=(0, 1, 0), mass=1.0, com=(0.3, 0, 0))
    m.add_body("b", "a", joint="universal", xyz=(0.5, 0, 0), mass=0.5, com=(0.2, 0, 0))
    few = ["forward_dynamics", "mass_matrix", "bias_forces"]
    with_omp = scleron.generate(m, str(tmp_path / "with"), "omp_with", functions=few)
    monkeypatch.setenv("SCLERON_NO_OPENMP", "1")
    without = scleron.generate(m, str(tmp_path / "without"), "omp_without", functions=few)
    assert with_omp._openmp and not without._openmp
    Q = rng.uniform(-1, 1, (57, m.nv))
    want = with_omp.forward_dynamics(Q, Q, Q)
    for dyn in (with_omp, without):
        np.testing.assert_array_equal(dyn.forward_dynamics(Q, Q, Q, threads=2), want)
        np.testing.assert_array_equal(dyn.mass_matrix(Q, threads=4), with_omp.mass_matrix(Q))
    # Python threads: a Ctrl-C in this thread's share waits for the others' (their outputs were
    # still being written after the KeyboardInterrupt, an outside tester)
    done = []

    def share(n, *ptrs):
        if len(done) == 0 and n and threading.current_thread() is threading.main_thread():
            raise KeyboardInterrupt
        time.sleep(0.2)
        done.append(n)
    with pytest.raises(KeyboardInterrupt):
        without._threaded(share, len(Q), [Q], [np.empty_like(Q)], 4)
    assert len(done) == 3
    # a pool thread that cannot start (a thread limit): its share was queued without a future
    # and ran twice at once, the second time after the call returned (a reviewer); now the pool
    # finishes what it was given, then this thread runs every share
    real_start, running, calls = threading.Thread.start, [], []

    def second_fails(thread):
        if thread.name.startswith("ThreadPoolExecutor") and thread.name.endswith("_1"):
            raise RuntimeError("can't start new thread")
        real_start(thread)

    def slow(n, *ptrs):                 # (the pool's shares slow, this thread's quick)
        running.append(n)
        time.sleep(0 if threading.current_thread() is threading.main_thread() else 0.1)
        calls.append(n)
        running.remove(n)
    monkeypatch.setattr(without, "_pool", None)
    monkeypatch.setattr(threading.Thread, "start", second_fails)
    without._threaded(slow, len(Q), [Q], [np.empty_like(Q)], 4)
    done = list(calls)
    time.sleep(0.3)
    assert calls == done and sum(done) >= len(Q)      # nothing ran after the call returned
    monkeypatch.setattr(threading.Thread, "start", real_start)
    # and from an atexit handler, where no thread can start (it raised "can't register atexit
    # after shutdown"): this thread runs every share
    code = ("import atexit, sys, numpy as np, scleron\n"
            f"dyn = scleron.load_generated({str(tmp_path / 'without')!r})\n"
            "atexit.register(lambda: print(dyn.mass_matrix(np.zeros((40, 3)), threads=4).shape))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "(40, 3, 3)\n", r.stderr
    # the C entry point takes any int: below 1 is one thread (OpenMP's num_threads(-1) aborted)
    got = np.empty_like(Q)
    fb = with_omp.ffi.from_buffer
    for threads in (0, -1):
        with_omp.lib.omp_with_forward_dynamics_batch_threads(
            len(Q), threads, fb("double[]", Q), fb("double[]", Q), fb("double[]", Q),
            fb("double[]", got))
        np.testing.assert_array_equal(got, want)


def test_newton_euler_about_the_centre_of_mass_equals_the_spatial_products(rng):
    """spatial.body_wrench (Newton-Euler about the centre of mass, what passes 2-3 run) against
    Featherstone's I a + v x* I v with numpy's 6x6 matrices: a general body, a point mass (no
    inertia about its centre), a massless rotor (inertia, no mass) and a massless inertia with a
    first moment (dynamics.regroup's base parameters)."""
    from scleron.dynamics.spatial import body_wrench

    def skew(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])

    def spatial_inertia(m, c, Ic):
        return np.block([[Ic - m * skew(c) @ skew(c), m * skew(c)], [-m * skew(c), m * np.eye(3)]])

    def cross_force(v):               # Featherstone's v x*: -(v x)^T
        X = np.block([[skew(v[:3]), np.zeros((3, 3))], [skew(v[3:]), skew(v[:3])]])
        return -X.T

    A = rng.normal(size=(3, 3))
    bodies = [(1.7, rng.normal(size=3), A @ A.T + np.eye(3)), (0.4, rng.normal(size=3), np.zeros((3, 3))),
              (0.0, np.zeros(3), np.diag([0.1, 0.2, 0.25]))]
    h = rng.normal(size=3)                  # no mass, a first moment: a body on the base
    massless = np.block([[A @ A.T, skew(h)], [-skew(h), np.zeros((3, 3))]])   # parameters
    for J in [spatial_inertia(m, c, Ic) for m, c, Ic in bodies] + [massless]:
        for _ in range(3):
            a, v = rng.normal(size=6), rng.normal(size=6)
            got = body_wrench(J.tolist(), list(a), list(v))
            want = J @ a + cross_force(v) @ J @ v
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_turns_about_a_coordinate_axis_equal_the_matrix_products(rng):
    """spatial.inertia_to_parent takes a turn about a coordinate axis (a hinge's Q(q), or a
    placement such as Rx(pi/2 - 3.7e-6)) block by block at twice the angle (rotate_about_axis)
    and a turned-and-moved placement as a turn, then a move: against numpy's X^T A X with
    X = Ad_{G^-1}, for each axis, a symmetric and a general block, and rotation_product of two
    turns about one axis against the matrix product."""
    from scleron.dynamics.spatial import (coordinate_rotation, inertia_to_parent,
                                          rotate_about_axis, rotation_product)

    def turn(k, angle):
        R, (i, j) = np.eye(3), ((k + 1) % 3, (k + 2) % 3)
        R[i, i] = R[j, j] = np.cos(angle)
        R[j, i], R[i, j] = np.sin(angle), -np.sin(angle)
        return R

    def skew(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])

    for k in range(3):
        for angle in (rng.uniform(-3, 3), np.pi / 2 - 3.7e-6):
            R = turn(k, angle)
            k_, c, s = coordinate_rotation(R.tolist())
            assert (k_, c, s) == (k, R[(k + 1) % 3, (k + 1) % 3], R[(k + 2) % 3, (k + 1) % 3])
            M = rng.normal(size=(3, 3))
            np.testing.assert_allclose(rotate_about_axis(M.tolist(), k, c, s, False), R @ M @ R.T,
                                       atol=1e-14)
            np.testing.assert_allclose(rotate_about_axis((M + M.T).tolist(), k, c, s, True),
                                       R @ (M + M.T) @ R.T, atol=1e-14)
            B = rng.normal(size=(6, 6))
            A = B @ B.T
            for t in (np.zeros(3), rng.normal(size=3)):
                X = np.block([[R.T, np.zeros((3, 3))], [-R.T @ skew(t), R.T]])
                np.testing.assert_allclose(inertia_to_parent(R.tolist(), t.tolist(), A.tolist()),
                                           X.T @ A @ X, atol=1e-12)
            np.testing.assert_allclose(rotation_product(R.tolist(), turn(k, 0.3).tolist()),
                                       turn(k, angle + 0.3), atol=1e-15)
    assert coordinate_rotation(turn(0, 0.2) @ turn(1, 0.3)) is None


def test_constant_inertia_moved_by_its_centre_equals_the_congruence(rng):
    """spatial.constant_rigid_inertia_to_parent (a body's constant inertia moved by its centre of
    mass, Ic in principal form where diagonal: what the derivatives' world quantities use)
    against numpy's X^T J X with X = Ad_{G^-1}: bodies with three, two and one distinct central
    moments, a general Ic, a block-diagonal one, a point mass; a dense rotation and one turn about
    z (the fallback).
    And the saving it exists for: fewer operations than rigid_inertia_to_parent on a symbolic
    rotation."""
    from scleron.dynamics.spatial import (central_inertia, constant_rigid_inertia_to_parent,
                                          rigid_inertia_to_parent)
    from scleron.program.program import Program

    def skew(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])

    def spatial_inertia(m, c, Ic):
        return np.block([[Ic - m * skew(c) @ skew(c), m * skew(c)], [-m * skew(c), m * np.eye(3)]])

    A = rng.normal(size=(3, 3))
    block = np.array([[4.1e-4, 0, 0], [0, 4.1e-4, 4.7e-5], [0, 4.7e-5, 3e-5]])   # solo12's legs
    central = [np.diag([0.1, 0.2, 0.3]), np.diag([0.1, 0.3, 0.3]), np.diag([0.2, 0.2, 0.2]),
               A @ A.T + np.eye(3), block, np.zeros((3, 3))]
    dense, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    dense *= np.linalg.det(dense)
    turn_z = np.array([[np.cos(0.7), -np.sin(0.7), 0], [np.sin(0.7), np.cos(0.7), 0], [0, 0, 1]])
    for Ic in central:
        J = spatial_inertia(1.3, rng.normal(size=3), Ic)
        for R in (dense, turn_z):
            t = rng.normal(size=3)
            X = np.block([[R.T, np.zeros((3, 3))], [-R.T @ skew(t), R.T]])
            got = constant_rigid_inertia_to_parent(R.tolist(), t.tolist(), J.tolist())
            np.testing.assert_allclose(got, X.T @ J @ X, rtol=1e-13, atol=1e-13)

    def operations(move, Ic):
        prog = Program()
        R = [[prog.input("R", 3 * i + j) for j in range(3)] for i in range(3)]
        t = prog.input_vector("t", 3)
        Y = move(R, t, spatial_inertia(1.3, np.array([0.2, -0.1, 0.3]), Ic).tolist())
        prog.set_outputs("Y", [x for row in Y for x in row])
        return prog.op_counts().mul + prog.op_counts().add
    for Ic in central[:5]:
        assert operations(constant_rigid_inertia_to_parent, Ic) < operations(rigid_inertia_to_parent, Ic)
    # a point mass off the origin: Ibar - m [c]^T [c] leaves round-off (~1e-17) in Ic, which is
    # snapped to 0 rather than rotated as a general inertia
    point = spatial_inertia(1.3, np.array([0.2, -0.1, 0.3]), np.zeros((3, 3))).tolist()
    assert central_inertia(point)[2:] == ([0.0] * 3, np.eye(3).tolist())
    assert operations(constant_rigid_inertia_to_parent, np.zeros((3, 3))) < \
        operations(constant_rigid_inertia_to_parent, np.diag([0.2, 0.2, 0.2]))


def test_a_forked_child_runs_threaded_batches(generated, rng):
    """gcc's OpenMP runtime, used in a parent, hangs in a forked child (a fork Pool, Python's
    default on Linux): the child splits its batches over Python threads of its own instead,
    in a module loaded before the fork and in one loaded only in the child (an outside tester:
    the README's worker pattern, load_generated in each worker, waited forever)."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    _, dyn = generated(example("rc20.yaml"), "rc20")
    Q = rng.uniform(-1, 1, (64, 20))
    want = dyn.forward_dynamics(Q, Q, Q, threads=2)           # the parent uses OpenMP first
    pid = os.fork()
    if pid == 0:                                               # the child: 0 when it agrees
        try:
            again = scleron.load_generated(os.path.dirname(dyn.__file__))   # loaded after the fork
            same = [np.array_equal(m.forward_dynamics(Q, Q, Q, threads=2), want) for m in (dyn, again)]
            os._exit(0 if all(same) else 1)
        finally:
            os._exit(2)
    for _ in range(600):                                       # at most 30 s
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's threads=2 call did not return in 30 s")
    assert os.waitstatus_to_exitcode(status) == 0


def test_threads_beyond_four_per_core_run_as_that_many_and_a_ragged_input_is_named(generated, rng):
    """threads=40000 made the OpenMP runtime end the process ("Thread creation failed"; an
    outside tester); a ragged list gave numpy's message without the argument's name."""
    _, dyn = generated(example("rc20.yaml"), "rc20")
    Q = rng.uniform(-1, 1, (200, 20))
    assert dyn.MAX_THREADS == 4 * (os.cpu_count() or 1)
    np.testing.assert_array_equal(dyn.forward_dynamics(Q, Q, Q, threads=100),
                                  dyn.forward_dynamics(Q, Q, Q))
    with pytest.raises(ValueError, match="q must be an array of numbers"):
        dyn.forward_dynamics([[1.0, 2.0], [3.0]], Q[0], Q[0])
    # a masked entry was read as the number the mask hides (an outside tester); none masked: data
    hidden = np.ma.masked_array(Q[0], mask=np.arange(20) == 3)
    for args in ((hidden, Q[0], Q[0]), (Q[0], Q[0], hidden), (Q[:4], Q[:4], np.ma.vstack([hidden] * 4))):
        with pytest.raises(ValueError, match="has masked entries"):
            dyn.forward_dynamics(*args)
    np.testing.assert_array_equal(dyn.forward_dynamics(np.ma.masked_array(Q[0]), Q[0], Q[0]),
                                  dyn.forward_dynamics(Q[0], Q[0], Q[0]))
    _, small = generated(example("branched.yaml"), "branched_int", functions=["integrate"])
    Qs = rng.uniform(-1, 1, (3, small.nq))
    with pytest.raises(ValueError, match="dt must be an array of numbers"):
        small.integrate(Qs, Qs, [[0.1], [0.1, 0.2], [0.3]])
    with pytest.raises(ValueError, match="dt has masked entries"):
        small.integrate(Qs, Qs, np.ma.masked_array([0.1, 0.2, 0.3], mask=[0, 1, 0]))


def test_the_functions_pickle_by_the_packages_name(tmp_path):
    """A spawned process pool unpickles the functions it is sent: the fast extension's functions
    pickled as its private module (_NAME_<hash>_py), which no other process can import."""
    import subprocess
    import sys
    m = scleron.Model("pickled")
    m.add_body("a", joint="revolute", axis=(0, 1, 0), mass=1.0, com=(0.3, 0, 0))
    dyn = scleron.generate(m, str(tmp_path / "pickled"), "pickled", functions=["forward_dynamics"])
    dump = ("import pickle, sys, pickled; "
            "sys.stdout.buffer.write(pickle.dumps((pickled.forward_dynamics, pickled.bind)))")
    load = ("import pickle, sys, numpy as np; fd, bind = pickle.loads(sys.stdin.buffer.read()); "
            "print(fd(np.array([0.5]), np.zeros(1), np.zeros(1))[0])")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    data = subprocess.run([sys.executable, "-c", dump], capture_output=True, env=env, timeout=120)
    assert data.returncode == 0, data.stderr.decode()[-2000:]
    done = subprocess.run([sys.executable, "-c", load], input=data.stdout, capture_output=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    want = dyn.forward_dynamics(np.array([0.5]), np.zeros(1), np.zeros(1))[0]
    assert want != 0 and float(done.stdout) == want


def test_a_one_coordinate_models_batch_shape_is_stated_right(generated):
    """One coordinate: q of shape (N,) is refused (N single numbers or one state?); the message
    said "(N,) or (N, 1)", the shape it was refusing."""
    m = scleron.Model("one_dof")
    m.add_body("a", joint="revolute", axis=(0, 1, 0), mass=1.0, com=(0.3, 0, 0))
    _, dyn = generated(m, "one_dof", functions=["forward_dynamics", "mass_matrix"])
    Q = np.linspace(0, 1, 4)
    with pytest.raises(ValueError, match=r"q must be a number or of shape \(1,\) for one state, "
                                         r"of shape \(N, 1\) for N states; got \(4,\)"):
        dyn.mass_matrix(Q)
    np.testing.assert_array_equal(dyn.mass_matrix(Q[:, None])[:, 0, 0],
                                  [dyn.mass_matrix(np.array([x]))[0, 0] for x in Q])


def test_a_one_coordinate_models_single_state_is_no_batch(tmp_path):
    """nv = 1: qd, tau of one entry went through integrate's dt rule in a batch, a single
    state's (1,) or a scalar repeated for every state and (N,) taken as one per state, where
    nv > 1 refuses the mix (an outside tester); dt keeps its rule."""
    m = scleron.Model("pend")
    m.add_body("link", joint="revolute", axis=(0, 1, 0), mass=1.0, com=(0.5, 0, 0),
               inertia=(0.01, 0.01, 0.01))
    dyn = scleron.generate(m, str(tmp_path / "pend"), functions=["fd", "int"])
    Q = np.array([[0.1], [0.2], [0.3]])
    for qd, tau in ((np.array([0.5]), np.zeros((3, 1))), (0.5, np.zeros(3))):
        with pytest.raises(ValueError, match="give all single states or all N states"):
            dyn.forward_dynamics(Q, qd, tau)
    with pytest.raises(ValueError, match=r"tau must be one per state: shape \(N,\) or \(N, 1\) "
                                         r"with N = 3; got \(2,\)$"):
        dyn.forward_dynamics(Q, Q, np.zeros(2))
    # (N,) is one per state, as (N, 1) (a reviewer: it was refused by a message that named it)
    want = dyn.forward_dynamics(Q, Q, Q)
    assert want.shape == (3, 1)
    assert np.array_equal(dyn.forward_dynamics(Q, Q[:, 0], Q[:, 0]), want)
    assert np.array_equal(dyn.integrate(Q, Q, np.array([0.1, 0.2, 0.3])),
                          Q + Q * np.array([[0.1], [0.2], [0.3]]))
    assert np.array_equal(dyn.integrate(Q, Q, 0.1), Q + 0.1 * Q)
