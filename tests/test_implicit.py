"""The linearly implicit Euler integrator (`--integrator implicit`, issue 11): on a chain with
stiff joint springs it stays stable at 10 times the largest step at which RK4 does, it converges
to RK4's trajectory at first order, and the derivatives it is built on include the springs and
dampers (central differences of the generated inverse dynamics)."""
import os

import numpy as np
import pytest

import scleron
from scleron.simulate import SimulationError, simulate
from scleron.simulate.cli import main as simulate_main
from scleron.simulate.integrators import linearly_implicit_euler_step

N_LINKS = 5
STIFFNESS, DAMPING = 1000.0, 0.2        # N m / rad, N m s / rad on every hinge


def stiff_chain(n=N_LINKS, k=STIFFNESS, d=DAMPING):
    """n 0.3 m links of 1 kg hanging on y hinges, each with a stiff spring (rest 0) and a light
    damper, released from a bent configuration (docs/images/stiff_chain.yaml is the same)."""
    lines = ["name: stiff_chain", "bodies:"]
    for i in range(n):
        parent = "world" if i == 0 else f"l{i - 1}"
        xyz = [0, 0, 0] if i == 0 else [0, 0, -0.3]
        lines.append(f"  - {{name: l{i}, parent: {parent}, mass: 1, com: [0, 0, -0.15], "
                     f"inertia: [0.01, 0.01, 0.002], joint: {{name: j{i}, type: revolute, "
                     f"axis: [0, 1, 0], xyz: {xyz}, stiffness: {k}, damping: {d}}}}}")
    bent = [0.5, -0.3, 0.2, 0.4, -0.2, 0.1, -0.4, 0.3][:n]
    lines.append(f"initial: {{q: {bent}}}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def chain(tmp_path_factory, build_dir):
    path = tmp_path_factory.mktemp("stiff") / "stiff_chain.yaml"
    path.write_text(stiff_chain())
    return str(path), os.path.join(str(build_dir), "stiff_chain_sim")


def run(chain, integrator, dt, duration):
    path, out = chain
    return simulate(path, duration, dt, integrator=integrator, progress=False, out_dir=out)


def bounded(chain, integrator, dt, duration=2.0):
    """The run ends with a finite state and its energy never rises above E(0) (the springs and
    dampers only take energy out) by more than 1e-3 of max(|E(0)|, max kinetic energy)."""
    try:
        traj = run(chain, integrator, dt, duration)
    except SimulationError:             # the state became non-finite
        return False
    scale = max(abs(traj.energy[0]), np.max(traj.kinetic))
    return bool(np.all(np.isfinite(traj.energy))
                and np.max(traj.energy - traj.energy[0]) <= 1e-3 * scale)


def rk4_limit(chain, lo=1e-3, hi=2e-2, halvings=8):
    """The largest step at which RK4 stays bounded over 2 s, by bisection on log h (to a factor
    (hi/lo)^(2^-halvings), 1.2 % here): (bounded lo, unbounded hi)."""
    assert bounded(chain, "rk4", lo) and not bounded(chain, "rk4", hi)
    for _ in range(halvings):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if bounded(chain, "rk4", mid) else (lo, mid)
    return lo, hi


def test_implicit_is_stable_at_ten_times_rk4s_largest_step(chain):
    lo, hi = rk4_limit(chain)
    # measured: RK4 bounded at 5.52e-3 s, not at 5.59e-3 s (about 2.83 / 510 rad/s,
    # the fastest mode of the springs)
    assert 3e-3 < lo < hi < 8e-3
    h = 10 * hi
    assert not bounded(chain, "rk4", h)
    traj = run(chain, "implicit", h, 2.0)
    assert traj.integrator == "implicit" and traj.steps == int(np.ceil(2.0 / h - 1e-9))
    assert np.all(np.isfinite(traj.q)) and np.all(np.isfinite(traj.energy))
    assert np.max(traj.energy - traj.energy[0]) <= 0.0        # the energy never rises
    # the damped chain settles: the final state is the static equilibrium (K q = gravity torque)
    # of the same dynamics, where the accelerations vanish
    assert np.max(np.abs(traj.qd[-1])) < 0.05
    assert traj.energy[-1] < traj.energy[0]


def test_implicit_converges_to_rk4_at_first_order(chain):
    T = 0.02                             # about two periods of the fastest mode
    ref = run(chain, "rk4", 2.5e-5, T)
    errors = []
    for h in (1e-4, 5e-5, 2.5e-5):
        traj = run(chain, "implicit", h, T)
        errors.append(np.max(np.abs(traj.q[-1] - ref.q[-1])))
    ratios = [a / b for a, b in zip(errors, errors[1:])]
    # measured: errors 0.048, 0.026, 0.014 rad (of a motion of 0.5 rad), ratios 1.85, 1.92;
    # the reference is within 1e-10 of RK4 at 1e-5
    assert all(1.8 < r < 2.2 for r in ratios), (errors, ratios)        # first order: halves
    assert errors[-1] < 0.02, errors


def test_the_derivatives_include_the_springs_and_dampers(chain):
    """d tau/dq and d tau/dqd of the generated inverse dynamics (what the implicit step uses, at
    qdd = 0 and elsewhere) against central differences: the springs' K and the dampers' D are
    in them (without them the error would be K = 1000 on the diagonal)."""
    traj = run(chain, "implicit", 0.05, 0.05)
    dyn = scleron.load_generated(os.path.join(traj.build_dir, "stiff_chain_implicit"))
    rng = np.random.default_rng(11)
    eps = 1e-6
    for qdd in (np.zeros(N_LINKS), rng.normal(size=N_LINKS)):
        q, qd = rng.normal(size=N_LINKS), rng.normal(size=N_LINKS)
        dq, dqd, M = dyn.inverse_dynamics_derivatives(q, qd, qdd)
        E = np.eye(N_LINKS) * eps
        num_q = np.array([dyn.inverse_dynamics(q + e, qd, qdd) - dyn.inverse_dynamics(q - e, qd, qdd)
                          for e in E]).T / (2 * eps)
        num_qd = np.array([dyn.inverse_dynamics(q, qd + e, qdd) - dyn.inverse_dynamics(q, qd - e, qdd)
                           for e in E]).T / (2 * eps)
        assert np.allclose(dq, num_q, rtol=1e-6, atol=1e-5)
        assert np.allclose(dqd, num_qd, rtol=1e-6, atol=1e-6)
        assert np.allclose(M, M.T) and np.all(np.linalg.eigvalsh(M) > 0)


def test_the_step_on_a_linear_spring():
    """One step on q'' = -k q (r = -k q, Hq = k, Hv = 0, M = 1): the closed form
    v1 = (v - h k q) / (1 + h^2 k), q1 = q + h v1, whose amplification factors have modulus
    1 / sqrt(1 + k h^2) < 1 at any step."""
    k, h = 1e6, 0.1

    def derivs(t, q, v, a0):
        return -k * q, np.array([[k]]), np.zeros((1, 1)), np.eye(1)
    q1, v1 = linearly_implicit_euler_step(derivs, 0.0, np.array([1.0]), np.array([2.0]), h)
    assert np.isclose(v1[0], (2.0 - h * k) / (1 + h * h * k))
    assert np.isclose(q1[0], 1.0 + h * v1[0])
    step = np.array([[1.0, h], [-h * k, 1.0]]) / (1 + h * h * k)        # (q, v) -> (q1, v1)
    assert np.allclose(step @ [1.0, 2.0], [q1[0], v1[0]])
    assert np.allclose(np.abs(np.linalg.eigvals(step)), 1 / np.sqrt(1 + k * h * h))


def test_the_command_line_takes_implicit(chain, capsys):
    path, out = chain
    assert simulate_main([path, "--duration", "0.5", "--dt", "0.05", "--integrator", "implicit",
                          "--build-dir", out, "-q"]) == 0
    text = capsys.readouterr().out
    assert "implicit, dt = 0.05 s, t = 0.5 s in 10 steps" in text


def test_rk45_says_when_the_state_diverged(chain):
    """Loose tolerances let rk45's unstable steps through on the stiff chain until a step
    overflowed; the step then shrank to nothing and the message advised larger tolerances,
    which make it worse (an outside tester): it says the state diverged, and what helps."""
    path, out = chain
    with pytest.raises(SimulationError, match=r"the state diverged by t = .* try smaller "
                                              r"--rtol/--atol, or --integrator implicit"):
        simulate(path, 0.1, 1e-2, integrator="rk45", rtol=1.0, atol=1.0, progress=False,
                 out_dir=out)
    with pytest.raises(SimulationError, match=r"step size underflow at t = 0 s \(the tolerances "
                                              r"cannot be met; try a larger"):     # (not "diverged")
        simulate(path, 0.1, 1e-2, integrator="rk45", rtol=1e-60, atol=1e-60, progress=False,
                 out_dir=out)
    with pytest.raises(ValueError, match="rtol and atol set the error control of rk45, not of "
                                         "implicit"):
        simulate(path, 0.1, 1e-2, integrator="implicit", rtol=1e-3, atol=5.0, progress=False,
                 out_dir=out)
