"""scleron.simulate: integrators, energy, chart switching of Euler-chart free/spherical joints,
reparameterisation of exp-coordinate ball joints, the .npz / PNG outputs and the command line."""
import argparse
import io
import math
import os
import re
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest

import scleron
from scleron.pipeline import Report
from scleron.kinematics import joint_transform
from scleron.outputs import write_all
from scleron.simulate import (SimulationError, Switch, Trajectory, add_parser, best_chart, chart_det,
                              cmd_simulate, reparameterise_exp, simulate, switch_euler)
from scleron.simulate.charts import chart_R as euler_R
from scleron.simulate.charts import chart_S as euler_S
from scleron.simulate.charts import switchables
from scleron.simulate.plot import coordinate_panels, trajectory_figure
from scleron.simulate.progress import Progress

from conftest import ROOT, example

# One free body (6 DOF: x, y, z, then XYZ Tait-Bryan angles) with an asymmetric inertia and an
# offset centre of mass, thrown upwards and spinning so that its orientation passes within a few
# degrees of the XYZ chart's gimbal lock (middle angle ±90°, det S = cos q2 = 0) after 0.5 s.
TUMBLER = """\
name: tumbler
gravity: [0, 0, -9.81]
bodies:
  - name: body
    parent: world
    joint: {name: root, type: free, chart: XYZ}
    mass: 2.0
    com: [0.1, -0.05, 0.08]
    inertia: [0.12, 0.2, 0.3]
initial:
  q: {root: [0, 0, 1, 0, 0, 0]}
  qd: {root: [0.5, 0.2, 3, 3, 1, 2]}
"""

# A 3-link pendulum on y hinges, links 0.5 m along -z.
CHAIN = """\
name: chain3
gravity: [0, 0, -9.81]
bodies:
  - name: l1
    parent: world
    joint: {name: j1, type: revolute, axis: [0, 1, 0]}
    mass: 1.0
    com: [0, 0, -0.25]
    inertia: [0.021, 0.021, 0.001]
  - name: l2
    parent: l1
    joint: {name: j2, type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.5]}
    mass: 0.8
    com: [0.02, 0, -0.25]
    inertia: [0.017, 0.017, 0.001]
  - name: l3
    parent: l2
    joint: {name: j3, type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.5]}
    mass: 0.6
    com: [0, 0, -0.2]
    inertia: [0.01, 0.012, 0.003]
initial:
  q: [1.2, -0.6, 0.9]
  qd: [0, 0.5, -1]
"""

# One body on an exp-coordinate ball joint, centre of mass at the joint: a torque-free rotor.
SPINNER = """\
name: spinner
bodies:
  - name: top
    parent: world
    joint: {name: ball, type: ball_exp, xyz: [0, 0, 1]}
    mass: 1.5
    inertia: [0.05, 0.08, 0.11]
initial:
  q: {ball: [0.2, -0.1, 0.3]}
  qd: {ball: [1.0, 2.5, 3.0]}
"""


def exp_R(q):
    """R of exp coordinates (one q (3,) -> (3, 3), or N rows -> (N, 3, 3)) from the joint library."""
    R, _ = joint_transform("ball_exp")(np.atleast_2d(q))
    return R[0] if np.ndim(q) == 1 else R


def euler_R_rows(charts, Q):
    """R (N, 3, 3) of Euler angles Q (N, 3), row k in chart charts[k] (scleron.kinematics, batched
    per chart)."""
    charts = np.asarray(charts)
    R = np.empty((len(Q), 3, 3))
    for c in set(charts):
        rows = charts == c
        R[rows] = joint_transform("spherical", {"chart": str(c)})(np.asarray(Q)[rows])[0]
    return R


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sim_models")
    out = {}
    for name, text in (("tumbler", TUMBLER), ("chain3", CHAIN), ("spinner", SPINNER)):
        (d / f"{name}.yaml").write_text(text)
        out[name] = str(d / f"{name}.yaml")
    return out


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """One build folder for the module: each chart variant is compiled once."""
    return str(tmp_path_factory.mktemp("sim_build"))


def tumbler_quantities(model, traj, every=8):
    """World angular momentum about the centre of mass (R I_c ω_body), centre of mass, total energy,
    computed here from every `every`-th sample of the trajectory without the simulator's energy code
    (R and S of each sample's chart are the joint library's)."""
    body = model.bodies[0].inertia
    L, com, E = [], [], []
    for q, qd, (chart,) in zip(traj.q[::every], traj.qd[::every], traj.charts[::every]):
        R, w = euler_R(chart, q[3:]), euler_S(chart, q[3:]) @ qd[3:]
        v = qd[:3] + R @ np.cross(w, body.com)
        c = q[:3] + R @ body.com
        L.append(R @ body.inertia @ w)
        com.append(c)
        E.append(0.5 * body.mass * v @ v + 0.5 * w @ body.inertia @ w - body.mass * model.gravity @ c)
    return np.array(L), np.array(com), np.array(E)


# -------------------------------------------------------------------------------------------------
# chart numerics against the symbolic charts module


def test_euler_S_is_the_body_angular_velocity_of_euler_R_for_all_charts(rng):
    from scleron.joints import charts
    for chart in charts.CHARTS:
        q, qd = rng.uniform(-1.2, 1.2, 3), rng.normal(size=3)
        h = 1e-6
        Rdot = (euler_R(chart, q + h * qd) - euler_R(chart, q - h * qd)) / (2 * h)
        W = euler_R(chart, q).T @ Rdot
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        assert np.allclose(w, euler_S(chart, q) @ qd, atol=1e-8), chart
        assert abs(abs(np.linalg.det(euler_S(chart, q))) - abs(chart_det(chart, q[1]))) < 1e-12, chart
        Rs = np.array(charts.rotation(chart, *q).evalf(), dtype=float)
        assert np.allclose(Rs, euler_R(chart, q), atol=1e-14), chart
        R = euler_R(chart, q)
        assert np.allclose(euler_R(chart, charts.q_from_R(chart, R)), R, atol=1e-12), chart


def test_switch_euler_matches_switch_chart_and_best_chart_is_far_from_singular(rng):
    from scleron.joints import charts
    q = np.array([0.3, math.pi / 2 - 0.05, -0.7])          # XYZ close to gimbal lock
    qd = rng.normal(size=3)
    new, q_new, qd_new = switch_euler("XYZ", q, qd)
    assert new != "XYZ" and abs(chart_det(new, q_new[1])) > math.sqrt(2 / 3) - 1e-12
    ref_q, ref_qd = charts.switch_chart("XYZ", new, q, qd)
    assert np.allclose(q_new, ref_q, atol=1e-13) and np.allclose(qd_new, ref_qd, atol=1e-12)
    assert np.allclose(euler_R(new, q_new), euler_R("XYZ", q), atol=1e-14)
    assert np.allclose(euler_S(new, q_new) @ qd_new, euler_S("XYZ", q) @ qd, atol=1e-12)
    assert abs(charts.det_S("XYZ", q)) == pytest.approx(abs(chart_det("XYZ", q[1])), abs=1e-14)
    for _ in range(20):                                      # any rotation has a good chart
        R = euler_R("ZXZ", rng.uniform(-3, 3, 3))
        chart, qc = best_chart(R)
        assert abs(chart_det(chart, qc[1])) >= math.sqrt(2 / 3) - 1e-12
        assert np.allclose(euler_R(chart, qc), R, atol=1e-12)


def test_exp_reparameterisation_keeps_rotation_and_angular_velocity(rng):
    from scleron.joints import joint_model
    jm = joint_model("ball_exp")
    axis = rng.normal(size=3)
    q = (math.pi + 0.01) * axis / np.linalg.norm(axis)
    qd = rng.normal(size=3)
    q_new, qd_new = reparameterise_exp(q, qd)
    assert np.linalg.norm(q_new) == pytest.approx(math.pi - 0.01, abs=1e-12)
    assert np.allclose(jm.numeric("R", q_new), jm.numeric("R", q), atol=1e-12)
    assert np.allclose(jm.numeric("S", q_new)[:3] @ qd_new, jm.numeric("S", q)[:3] @ qd, atol=1e-12)
    # after a huge step (|q| = 109.28 rad: 2 pi - |q| was 103 rad, still past pi): whole turns
    q = 109.28 * axis / np.linalg.norm(axis)
    q_new, qd_new = reparameterise_exp(q, qd)
    assert np.linalg.norm(q_new) == pytest.approx(abs(109.28 - 2 * math.pi * 17), abs=1e-12)
    assert np.allclose(jm.numeric("R", q_new), jm.numeric("R", q), atol=1e-12)
    assert np.allclose(jm.numeric("S", q_new)[:3] @ qd_new, jm.numeric("S", q)[:3] @ qd, atol=1e-9)


# -------------------------------------------------------------------------------------------------
# the free-falling tumbling body through gimbal lock


@pytest.mark.parametrize("integrator,dt,kw,tol", [
    pytest.param("rk4", 1e-3, {}, 1e-8, marks=pytest.mark.slow),     # 4000 steps; rk45 covers it fast
    ("rk45", 0.05, {"rtol": 1e-12, "atol": 1e-12}, 1e-10),
])
def test_tumbling_free_body_switches_charts_and_conserves_momentum(files, build, integrator, dt, kw, tol):
    model = scleron.load_model(files["tumbler"])
    traj = simulate(model, 4.0, dt, integrator=integrator, out_dir=build, progress=False, **kw)
    # chart switches happen (through XYZ's gimbal lock, and a return to a chart visited before)
    assert len(traj.switches) >= 2
    assert traj.switches[0].joint == "root" and traj.switches[0].old == "XYZ"
    assert all(s.new != s.old for s in traj.switches)
    seen = ["XYZ"] + [s.new for s in traj.switches]
    assert any(c in seen[:k] for k, c in enumerate(seen))     # a chart visited again: cached variant
    assert {tuple(c) for c in traj.charts} >= {("XYZ",), (traj.switches[-1].new,)}
    # every recorded state is well inside its chart
    assert min(abs(chart_det(c, q[4])) for (c,), q in zip(traj.charts, traj.q)) > 0.15
    # ... although the orientation itself came within a few degrees of XYZ's gimbal lock
    R13 = euler_R_rows(traj.charts[:, 0], traj.q[:, 3:])[:, 0, 2]
    assert np.sqrt(1 - R13 ** 2).min() < 0.06                  # |cos q2| of the XYZ chart
    L, com, E = tumbler_quantities(model, traj)
    assert np.abs(L - L[0]).max() / np.linalg.norm(L[0]) <= tol
    v0 = np.array([0.5, 0.2, 3]) + np.cross(np.array([3.0, 1, 2]), model.bodies[0].inertia.com)
    t = traj.t[::8]
    parabola = com[0] + np.outer(t, v0) + 0.5 * np.outer(t ** 2, model.gravity)
    assert np.abs(com - parabola).max() <= 1e-8
    assert np.allclose(traj.energy[::8], E, rtol=0, atol=1e-10 * abs(E[0]))   # generated energy = hand
    assert traj.energy_drift <= 1e-9
    assert traj.t[0] == 0 and traj.t[-1] == pytest.approx(4.0, abs=1e-14)


def test_the_summary_names_a_short_last_step_only():
    """--duration 100 --dt 1e-5 said "(the last step 1e-05 s)": rounding of (steps - 1) dt."""
    from types import SimpleNamespace
    from scleron.simulate.cli import _last_step
    run = lambda T, dt: _last_step(SimpleNamespace(integrator="rk4", t=np.array([T]), dt=dt,    # noqa: E731
                                                   steps=int(math.ceil(T / dt - 1e-9))))
    assert run(100.0, 1e-5) == run(0.5, 1e-3) == ""
    assert run(1.0, 0.3) == " (the last step 0.1 s)"


def test_a_jump_over_a_singularity_is_counted_not_read_from_signs():
    """Zeros of det S passed by the middle angle: cos q2 at pi/2 + k pi, sin q2 at k pi."""
    from scleron.simulate.charts import crosses_singularity
    assert crosses_singularity("XYZ", 1.5, 1.6) and crosses_singularity("XYZ", -1.6, -1.5)
    assert crosses_singularity("XYZ", 1.0, 1.0 + 2 * math.pi)          # cos: same sign, 2 zeros
    assert not crosses_singularity("XYZ", -1.5, 1.5) and not crosses_singularity("XYZ", 1.6, 4.7)
    assert crosses_singularity("ZXZ", -0.1, 0.1) and crosses_singularity("ZXZ", 0.1, 6.4)
    assert not crosses_singularity("ZXZ", 0.1, 3.1) and not crosses_singularity("ZXZ", 3.2, 6.2)
    for bad in (math.nan, math.inf, -math.inf):     # the finiteness check's to say (a reviewer:
        assert not crosses_singularity("XYZ", 0.3, bad)      # "cannot convert float NaN")


def test_rk4_refuses_to_jump_over_a_singularity_and_rk45_steps_around_it(files, build):
    model = scleron.load_model(files["tumbler"])
    spin = np.array([0, 0, 0, 0, 4.0, 0])          # steady spin about the body's y axis: q2 = 4 t
    with pytest.raises(SimulationError, match="jumped over the singularity"):
        simulate(model, 1.0, 0.3, qd0=spin, out_dir=build, progress=False)
    # q2 from 0 to about 6 in one step passes two zeros of cos q2 and keeps its sign: a jump too
    # (an implicit step on an Euler chart that blew up passed 14 and went on without a word)
    with pytest.raises(SimulationError, match="jumped over the singularity"):
        simulate(model, 1.5, 1.5, qd0=spin, out_dir=build, progress=False)
    traj = simulate(model, 1.0, 0.3, integrator="rk45", qd0=spin, out_dir=build, progress=False,
                    rtol=1e-10, atol=1e-10)
    assert traj.rejected >= 1 and len(traj.switches) == 1
    t_s = traj.switches[0].time
    assert abs(math.cos(4.0 * t_s)) < 0.2 < abs(math.cos(4.0 * (t_s - 0.08)))  # switched in time
    # in the free fall the orientation is exactly R_y(4 t)
    expected = euler_R_rows(["XYZ"] * len(traj.t), np.outer(traj.t, [0, 4.0, 0]))
    assert np.allclose(euler_R_rows(traj.charts[:, 0], traj.q[:, 3:]), expected, atol=1e-8)


# -------------------------------------------------------------------------------------------------
# energy and integrators on a 3-link pendulum


def test_chain_energy_rk4_2s_dt_1e4(files, build):
    traj = simulate(files["chain3"], 2.0, 1e-4, out_dir=build, progress=False)
    assert traj.steps == 20000 and traj.q.shape == (20001, 3) and not traj.switches
    assert traj.energy_drift <= 1e-6
    assert np.abs(traj.energy - traj.energy[0]).max() / abs(traj.energy[0]) <= 1e-6
    assert np.ptp(traj.kinetic) > 1.0                 # it really swings
    # the potential is the hand-computed one: heights of the three centres of mass
    q = traj.q[-1]
    a1, a2, a3 = q[0], q[0] + q[1], q[0] + q[1] + q[2]

    def height(a, c):                                 # R_y(a) c, z component
        return -math.sin(a) * c[0] + math.cos(a) * c[2]
    z = [height(a1, (0, 0, -0.25)), height(a1, (0, 0, -0.5)) + height(a2, (0.02, 0, -0.25)),
         height(a1, (0, 0, -0.5)) + height(a2, (0, 0, -0.5)) + height(a3, (0, 0, -0.2))]
    assert traj.potential[-1] == pytest.approx(9.81 * (1.0 * z[0] + 0.8 * z[1] + 0.6 * z[2]), abs=1e-12)


def test_constant_torque_does_work_tau_dot_dq(files, build):
    tau = np.array([0.3, -0.2, 0.1])
    traj = simulate(files["chain3"], 1.0, 1e-3, tau=tau, out_dir=build, progress=False)
    work = tau @ (traj.q[-1] - traj.q[0])
    assert abs(work) > 0.05
    assert (traj.energy[-1] - traj.energy[0]) == pytest.approx(work, abs=1e-9)


@pytest.mark.parametrize("integrator", ["rk4", "rk45", "implicit"])
@pytest.mark.parametrize("tau, needle", [
    (lambda t, q, qd: np.full(3, np.nan) if t > 0.01 else np.zeros(3), "returned nan for coordinate 0 (and 2 more)"),
    (lambda t, q, qd: np.zeros(2), "returned shape (2,), not (3,)"),
    (lambda t, q, qd: ["a", 0, 0], "did not return numbers"),
])
def test_a_bad_tau_function_is_named_not_blamed_on_the_step(files, build, integrator, tau, needle):
    """A tau(t, q, qd) returning NaN, the wrong shape or no numbers is the function's fault:
    the error says so (it said 'the state became non-finite ... a smaller --dt')."""
    with pytest.raises(SimulationError, match=re.escape(needle)) as info:
        simulate(files["chain3"], 0.05, 1e-3, integrator=integrator, tau=tau, out_dir=build,
                 progress=False)
    assert "tau(t, q, qd) at t = " in str(info.value) and "dt" not in str(info.value)


RUNAWAY_PENDULUM = """
name: pend
bodies:
  - {name: a, parent: world, mass: 1.0, com: [0.5, 0, 0], inertia: [0.01, 0.01, 0.01],
     joint: {name: j1, type: revolute, axis: [0, 1, 0]}}
  - {name: b, parent: a, mass: 1.0, com: [0.5, 0, 0], inertia: [0.01, 0.01, 0.01],
     joint: {name: j2, type: revolute, axis: [0, 1, 0], xyz: [1, 0, 0]}}
initial:
  qd: [3.0, -2.0]
"""


def test_a_runaway_energy_is_warned(tmp_path, build):
    """An outside tester: a run whose energy went from 35.8 J to 2.4e24 J printed "drift
    1.000e+00" (the largest kinetic energy is the drift's scale) and nothing else. A
    conservative run whose energy rises beyond ten times its initial scale is warned now; an
    accurate run, a run damped by the implicit step and a reviewer's pendulum nudged by 1e-9
    rad from zero energy (its rise, 5e-18 J, is round-off) are not."""
    path = tmp_path / "pend.yaml"
    path.write_text(RUNAWAY_PENDULUM)
    with pytest.warns(scleron.SimulationWarning, match="rose from 7.3 J to .*unstable"):
        tr = simulate(str(path), 2.2, 0.1, out_dir=build, progress=False)
    assert tr.energy.max() > 1e100
    quiet = [dict(duration=10.0, dt=0.01), dict(duration=10.0, dt=0.05, integrator="implicit"),
             dict(duration=5.0, dt=1e-3, q0=[1e-9, 0.0], qd0=[0.0, 0.0])]
    for kw in quiet:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            simulate(str(path), out_dir=build, progress=False, **kw)


def test_a_tau_function_that_raises_keeps_the_run_so_far(files, build, tmp_path):
    """An outside tester: an exception of tau(t, q, qd) went up as it was, with no trajectory
    and nothing written. Now it stops the run as a SimulationError, which names it and keeps
    the states so far (written to `output`), the function's exception as its cause."""
    def tau(t, q, qd):
        if t > 0.005:
            raise RuntimeError("sensor lost")
        return np.zeros(3)
    out = tmp_path / "partial.npz"
    with pytest.raises(SimulationError, match="raised RuntimeError: sensor lost") as info:
        simulate(files["chain3"], 0.05, 1e-3, tau=tau, output=str(out), out_dir=build,
                 progress=False)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.trajectory.t[-1] == pytest.approx(0.005)
    assert np.load(out)["t"][-1] == pytest.approx(0.005)


def test_integrator_orders(files, build):
    model = scleron.load_model(files["chain3"])
    ref = simulate(model, 0.5, 0.01, integrator="rk45", out_dir=build, progress=False,
                   rtol=1e-13, atol=1e-13)

    def err(integrator, dt):
        tr = simulate(model, 0.5, dt, integrator=integrator, out_dir=build, progress=False)
        assert tr.t[-1] == pytest.approx(0.5, abs=1e-15)
        return np.abs(np.concatenate([tr.q[-1] - ref.q[-1], tr.qd[-1] - ref.qd[-1]])).max()
    r4 = err("rk4", 1.25e-3) / err("rk4", 6.25e-4)
    r1 = err("semi-implicit", 2e-3) / err("semi-implicit", 1e-3)
    assert 13 < r4 < 19, r4                         # 4th order: 16
    assert 1.6 < r1 < 2.5, r1                       # 1st order: 2
    loose = simulate(model, 0.5, 0.01, integrator="rk45", out_dir=build, progress=False,
                     rtol=1e-6, atol=1e-8)
    e = np.abs(loose.q[-1] - ref.q[-1]).max()
    assert 1e-11 < e < 1e-5 and loose.steps < ref.steps


# -------------------------------------------------------------------------------------------------
# exp-coordinate ball joint through ‖q‖ = π


def test_ball_exp_reparameterises_through_pi_and_rotation_is_continuous(files, build):
    from scleron.joints import joint_model
    model = scleron.load_model(files["spinner"])
    traj = simulate(model, 3.0, 1e-3, out_dir=build, progress=False)
    assert len(traj.switches) >= 2 and all(s.joint == "ball" and s.old == "exp" for s in traj.switches)
    norms = np.linalg.norm(traj.q, axis=1)
    assert norms.max() <= math.pi and norms.max() > math.pi - 0.01
    R = exp_R(traj.q)
    dR = np.linalg.norm(R[1:] @ np.transpose(R[:-1], (0, 2, 1)) - np.eye(3), axis=(1, 2))
    dq = np.linalg.norm(np.diff(traj.q, axis=0), axis=1)
    assert dR.max() < 0.01                          # the rotation never jumps ...
    assert dq.max() > 6.0                           # ... while q jumps by ~2π at each switch
    assert np.sum(dq > 1.0) == len(traj.switches)
    jm = joint_model("ball_exp")
    Ic = model.bodies[0].inertia.inertia
    L = np.array([exp_R(q) @ Ic @ (jm.numeric("S", q)[:3] @ qd) for q, qd in zip(traj.q[::25], traj.qd[::25])])
    assert "exponential coordinates re-parameterised (|θ| = 3.14" in str(traj.switches[0])
    assert np.abs(L - L[0]).max() / np.linalg.norm(L[0]) < 1e-9
    assert traj.energy_drift < 1e-9
    # a steady spin about a principal axis: R(t) = R_z(3 t) exactly, through several switches
    spin = simulate(model, 3.0, 1e-3, q0=np.zeros(3), qd0=[0, 0, 5.0], out_dir=build, progress=False)
    assert [round(s.time, 3) for s in spin.switches] == [0.629, 1.885]   # 5 t = π, 3π
    for t, R in zip(spin.t[::50], exp_R(spin.q[::50])):
        assert np.allclose(R, euler_R("XYZ", (0, 0, 5.0 * t)), atol=1e-9)


# -------------------------------------------------------------------------------------------------
# outputs and the command line


def parse(argv):
    p = argparse.ArgumentParser(prog="scleron")
    add_parser(p.add_subparsers(dest="command", required=True))
    return p.parse_args(["simulate", *argv])


def test_cli_writes_npz_and_png(files, build, tmp_path, capsys):
    npz, png = tmp_path / "traj.npz", tmp_path / "traj.png"
    args = parse([files["tumbler"], "--duration", "3", "--dt", "2e-3", "--output", str(npz),
                  "--plot", str(png), "--build-dir", build])
    assert args.func is cmd_simulate
    assert cmd_simulate(args) == 0
    out = capsys.readouterr()
    assert "chart switches: " in out.out and out.err == ""
    # where it builds, said once, first; the switches in words
    assert out.out.splitlines()[0].startswith(f"generated dynamics: {build} ")
    assert out.out.count("generated dynamics:") == 1
    assert re.search(r"t = [\d.]+ s: joint root: Euler chart XYZ -> [XYZ]{3} "
                     r"\(near gimbal lock: \|cos\(q2\)\| = 0\.1\d{3} < 0\.2\)", out.out), out.out
    with np.load(npz, allow_pickle=False) as z:
        assert z["q"].shape == (1501, 6) and z["t"][-1] == pytest.approx(3.0)
        assert z["energy"].shape == (1501,) and z["charts"].shape == (1501, 1)
        assert len(z["switch_time"]) >= 1 and z["switch_old"][0] == "XYZ"
        assert "near gimbal lock" in z["switch_detail"][0]
        assert list(z["coordinate_units"]) == ["m", "m", "m", "rad", "rad", "rad"]
        assert list(z["coordinate_names"])[:1] == ["root[0]"]
    traj = Trajectory.load(npz)
    assert traj.switches[0].old == "XYZ" and traj.integrator == "rk4" and traj.steps == 1500
    assert "near gimbal lock" in str(traj.switches[0])
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_cli_bad_model_path_is_one_line_exit_2(tmp_path):
    code = "import sys; from scleron.simulate import main; sys.exit(main())"
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "missing.yaml"), "--duration", "1",
                        "--dt", "0.1", "--build-dir", str(tmp_path / "b")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "missing.yaml" in lines[0] and "no such file" in lines[0].lower()
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("argv,needle", [
    (["--duration", "-1", "--dt", "0.1"], "duration"),
    (["--duration", "1", "--dt", "0"], "dt"),
    (["--duration", "100000001", "--dt", "1"],                     # (it said 1e+08 steps)
     "duration / dt = 100,000,001 steps is more than 100,000,000"),
    (["--duration", "1", "--dt", "0.1", "--tau", "1", "2"], "tau"),
    (["--duration", "1", "--dt", "0.1", "--rtol", "1e-6"], "--rtol sets the error control of rk45, not of rk4"),
    (["--duration", "1", "--dt", "0.1", "-o", "{tmp}/out.csv"], "written as numpy's .npz"),
    (["--duration", "1", "--dt", "0.1", "--plot", "{tmp}/p"], "give the picture a file extension"),
    (["--duration", "1", "--dt", "0.1", "--switch-threshold", "0.3"],
     "error: --switch-threshold: chain3 has no Euler-angle joint whose chart may switch"),
    # the options' names, not simulate()'s arguments' (an outside tester)
    (["--duration", "1", "--dt", "0.1", "--switch-threshold", "nan"],
     "error: --switch-threshold must be a positive finite number"),
    (["--duration", "1", "--dt", "0.1", "--integrator", "rk45", "--rtol", "0"],
     "error: --rtol must be a positive finite number"),
    (["--duration", "1", "--dt", "0.1", "-o", ""], "output: an empty name"),    # (an outside
    (["--duration", "1", "--dt", "0.1", "--plot", ""], "plot: an empty name"),  # tester)
])
def test_cli_bad_options_are_one_line_exit_2(files, build, capsys, tmp_path, argv, needle):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cmd_simulate(parse([files["chain3"], *argv, "--build-dir", build, "-q"])) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err and err.startswith("scleron: error:")


@pytest.mark.parametrize("dt", ["-1e-3", "-.5", "-2E+1", "-inf"])
def test_cli_negative_dt_in_any_notation_is_a_value(files, capsys, dt):
    """argparse alone takes -1e-3 for an option ("expected one argument")."""
    from scleron.cli import main
    assert main(["simulate", files["chain3"], "--duration", "1", "--dt", dt, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scleron: error: dt must be a positive finite number, got -"), err


def test_cli_every_must_be_positive_naming_the_option(capsys):
    with pytest.raises(SystemExit) as info:
        parse(["m.yaml", "--duration", "1", "--every", "0"])
    assert info.value.code == 2 and "argument --every: invalid positive integer value: '0'" in \
        capsys.readouterr().err


def test_cli_plot_without_matplotlib_says_pip_install(files, build, tmp_path, capsys, monkeypatch):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib -> ImportError
    args = parse([files["chain3"], "--duration", "0.1", "--dt", "0.01", "--plot", str(tmp_path / "p.png"),
                  "--build-dir", build])
    assert cmd_simulate(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install matplotlib" in err[0]
    assert not (tmp_path / "p.png").exists()


def test_default_build_dir_is_the_user_cache(monkeypatch, tmp_path):
    from scleron.simulate import default_build_dir
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_build_dir("arm") == os.path.join(str(tmp_path), "scleron", "arm")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_build_dir("arm") == os.path.join(os.path.expanduser("~"), ".cache", "scleron", "arm")


def test_progress_bar_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        p = Progress(2.0, True, stream)
        p.update(1.0, force=True)
        p.close()
    assert "50.0%" in tty.getvalue() and "\r" in tty.getvalue() and pipe.getvalue() == ""
    quiet = Tty()
    p = Progress(2.0, False, quiet)
    p.update(1.0, force=True)
    assert quiet.getvalue() == ""


def test_the_generated_variants_are_cached(files, build):
    """A second run of the tumbler generates nothing: every chart variant is a cache hit."""
    first = simulate(files["tumbler"], 4.0, 2e-3, out_dir=build, progress=False)
    assert len(first.switches) >= 2
    names = sorted(os.listdir(build))
    assert "tumbler_XYZ" in names and sum(n.startswith("tumbler_") for n in names) >= 2
    before = {n: os.stat(os.path.join(build, n, "scleron.json")).st_mtime_ns for n in names
              if n.startswith("tumbler_")}
    simulate(files["tumbler"], 4.0, 2e-3, out_dir=build, progress=False)
    after = {n: os.stat(os.path.join(build, n, "scleron.json")).st_mtime_ns for n in before}
    assert before == after


SWINGER = """\
name: swinger
bodies:
  - name: a
    parent: world
    joint: {name: s, type: spherical, chart: ZYX}
    mass: 1.0
    com: [0.1, 0.05, -0.2]
    inertia: [0.01, 0.02, 0.03]
"""


def test_a_switch_to_a_proper_euler_chart_is_generated_and_conserves_energy(tmp_path, build):
    """Near ZYX's gimbal lock at q = (-2, 1.45, -1) the best chart is XYX, whose own gimbal lock
    is q = 0, the model's initial configuration: the variant must still be generated (it was
    refused as singular at q = 0), and the run conserve energy across the switch."""
    path = tmp_path / "swinger.yaml"
    path.write_text(SWINGER)
    traj = simulate(str(path), 0.5, 1e-3, q0=[-2.0, 1.45, -1.0], qd0=[1.0, 2.0, 0.5],
                    out_dir=build, progress=False)
    assert [(s.old, s.new) for s in traj.switches][:1] == [("ZYX", "XYX")]
    E = traj.kinetic + traj.potential
    assert np.abs(E - E[0]).max() <= 1e-8 * max(1.0, abs(E[0]))


def test_a_codegen_folder_as_build_folder_is_used_not_replaced(tmp_path):
    """simulate's build folder may hold `scleron codegen` output of the same model: a folder
    with more functions is loaded as it is, one with other functions keeps them (simulate used
    to replace either by its own four functions)."""
    path = tmp_path / "swinger.yaml"
    path.write_text(SWINGER.replace("chart: ZYX", "chart: ZYX, stiffness: 1.0"))   # no switching
    model = scleron.load_model(str(path))
    full = scleron.generate(model, str(tmp_path / "a" / "swinger"),
                            functions=["fd", "mass", "ke", "pe", "integrate"])
    meta = tmp_path / "a" / "swinger" / "scleron.json"
    stamp = meta.stat().st_mtime_ns
    traj = simulate(str(path), 0.05, 1e-3, out_dir=str(tmp_path / "a"), progress=False)
    assert meta.stat().st_mtime_ns == stamp and traj.q.shape[1] == 3
    other = scleron.generate(model, str(tmp_path / "b" / "swinger"), functions=["mass", "com"])
    simulate(str(path), 0.05, 1e-3, out_dir=str(tmp_path / "b"), progress=False)
    again = scleron.load_generated(str(tmp_path / "b" / "swinger"))
    assert {"mass_matrix", "center_of_mass", "forward_dynamics"} <= set(again.FUNCTIONS)
    q = np.array([0.3, -0.2, 0.1])
    np.testing.assert_allclose(again.mass_matrix(q), full.mass_matrix(q), rtol=1e-14)
    np.testing.assert_allclose(again.center_of_mass(q), other.center_of_mass(q), rtol=1e-14)


def test_the_generated_module_starts_where_the_model_file_does(tmp_path):
    """dyn.initial_state() is the file's `initial:` (where simulate starts), else the neutral q
    at rest. A changed initial state needs no new code: the cached generation records it (a
    first version put it in the code, and a changed `initial:` rebuilt every chart variant)."""
    path = tmp_path / "swinger.yaml"
    path.write_text(SWINGER + "initial:\n  q: {s: [0.1, 0.2, 0.3]}\n  qd: {s: [1, 2, 3]}\n")
    dyn = scleron.generate(scleron.load_model(str(path)), str(tmp_path / "g"), functions=["mass"])
    q0, qd0 = dyn.initial_state()
    assert q0.tolist() == [0.1, 0.2, 0.3] and qd0.tolist() == [1, 2, 3]
    path.write_text(SWINGER)
    report = Report("swinger", 3)
    again = scleron.generate(scleron.load_model(str(path)), str(tmp_path / "g"), functions=["mass"],
                             report=report)
    assert report.cache_hit and again is dyn            # the same code and module
    q0, qd0 = dyn.initial_state()
    assert q0.tolist() == dyn.neutral().tolist() == [0, 0, 0] and qd0.tolist() == [0, 0, 0]
    record = tmp_path / "g" / "initial_state.json"
    record.write_text('{"q": [0.5, 0.5, 0.5], "qd": [1, 1, 1]}')
    assert dyn.initial_state()[0].tolist() == [0.5, 0.5, 0.5]
    # a folder without it, or with one unreadable: neutral, at rest, and said (an outside
    # tester: a silent fallback started a controller from the wrong state)
    for text, said in ((None, "it is missing"), ("garbage", "it is unreadable (JSONDecodeError"),
                       ('{"q": [1, 2], "qd": [0, 0, 0]}', "its q has shape (2,) and its qd (3,), "
                        "not (3,) and (3,)"),
                       ('{"q": [[1, 2, 3]], "qd": [0, 0, 0]}', "its q has shape (1, 3)"),
                       ('{"q": [1, null, 3], "qd": [0, 0, 0]}', "it holds numbers that are not "
                        "finite"),
                       # an outside tester: the folder regenerated (another model, the same
                       # sizes) under a running process gave its new initial state to the old code
                       ('{"hash": "another", "q": [0.1, 0.1, 0.1], "qd": [0, 0, 0]}',
                        "it belongs to another generation of the folder")):
        if text is None:
            record.unlink()
        else:
            record.write_text(text)
        with pytest.warns(UserWarning, match=re.escape(f"initial_state.json: {said}")):
            q0, qd0 = dyn.initial_state()
        assert q0.tolist() == [0, 0, 0] and qd0.tolist() == [0, 0, 0]


@pytest.mark.parametrize("option, needle", [
    ({"output": "missing/run.npz"}, "output missing/run.npz: the folder"),
    ({"output": "."}, "is a folder"),
    ({"plot": "run.pngx"}, "matplotlib cannot write .pngx files"),
])
def test_outputs_are_checked_before_the_run(files, tmp_path, monkeypatch, option, needle):
    """A path that cannot be written is refused before anything is generated or run (it was
    found only after the whole run, whose result was then lost)."""
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=re.escape(needle)):
        simulate(files["chain3"], 0.01, 1e-3, out_dir=str(tmp_path / "build"), progress=False,
                 **option)
    assert not (tmp_path / "build").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_or_link_to_one_is_refused_not_replaced_and_odd_names_are_named(files, tmp_path):
    """Writing beside the destination, then renaming over it, turned a named pipe, and a device
    a link named (/dev/full), into a regular file (an outside tester); output=5 was a raw
    TypeError and a complex q0 lost its imaginary part with a numpy warning."""
    pipe = tmp_path / "pipe.npz"
    os.mkfifo(pipe)
    link = tmp_path / "link.png"
    link.symlink_to(pipe)
    for option, needle in (({"output": str(pipe)}, "is a named pipe, not a file"),
                           ({"output": tmp_path / "x.npz", "plot": str(link)}, "is a named pipe"),
                           ({"output": 5}, "output must be a file name, got int"),
                           ({"q0": [0.1j, 0, 0]}, "q0 must be real numbers"),
                           ({"q0": [[1, 2], [3]]}, "q0 must be numbers")):
        with pytest.raises(ValueError, match=re.escape(needle)):
            simulate(files["chain3"], 0.01, 1e-3, out_dir=str(tmp_path / "build"),
                     progress=False, **option)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode) and os.path.islink(link)
    assert not (tmp_path / "build").exists() and not list(tmp_path.glob(".scleron-*"))
    fig = {"written": False}
    with pytest.raises(ValueError, match="is a named pipe"):
        write_all([("picture", str(link), lambda tmp: fig.update(written=True))])
    assert not fig["written"] and stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_rk45_ends_at_the_duration_without_a_sliver_step(files, build):
    """2 s at dt = 1e-3 with loose tolerances: 2000 steps of 1e-3 sum to 2 - 1.1e-13 in floating
    point; the run used to take a 2001st step of 1.1e-13 s and record it as a sample."""
    traj = simulate(files["chain3"], 2.0, 1e-3, integrator="rk45", rtol=1e-3, atol=1e-3,
                    out_dir=build, progress=False)
    assert traj.t[-1] == 2.0 and traj.steps == 2000 and len(traj.t) == 2001
    assert np.diff(traj.t).min() > 0.5e-3


TWO_LINKS = """<robot name="two"><link name="base"><inertial><mass value="2"/>
<inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
<inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
<limit lower="-3" upper="3" effort="1" velocity="1"/></joint></robot>"""


def test_a_urdf_floated_and_fixed_keep_their_own_folders_in_one_build_dir(tmp_path):
    """With out_dir, a URDF run floating and fixed shared one folder, so each run regenerated
    the other's code (a reviewer): the floating one's folder is NAME_floating, as in the cache."""
    path = tmp_path / "two.urdf"
    path.write_text(TWO_LINKS)
    out = tmp_path / "b"
    fixed = simulate(str(path), 0.01, 1e-3, out_dir=str(out), progress=False)
    stamp = os.stat(out / "two" / "scleron.json").st_mtime_ns
    floated = simulate(str(path), 0.01, 1e-3, out_dir=str(out), progress=False, floating=True)
    assert sorted(os.listdir(out)) == ["two", "two_floating"]
    assert fixed.q.shape[1] == 1 and floated.q.shape[1] == 8
    simulate(str(path), 0.01, 1e-3, out_dir=str(out), progress=False)       # cached: not rebuilt
    assert os.stat(out / "two" / "scleron.json").st_mtime_ns == stamp


def test_the_simulation_error_and_warnings_are_the_packages():
    """scleron.SimulationError did not exist (an outside tester): the error and the warnings a
    user filters or catches are at the top level."""
    from scleron.dynamics.checks import SingularConfigurationWarning
    assert scleron.SimulationError is SimulationError
    assert scleron.SingularConfigurationWarning is SingularConfigurationWarning


@pytest.mark.parametrize("duration", [1e-16, 3e-15])
def test_rk45_takes_one_step_however_short_the_duration(files, build, duration):
    """A duration below 1e-15 s used to take no step at all (the trajectory ended at t = 0),
    while the fixed-step integrators take one."""
    traj = simulate(files["chain3"], duration, 1e-3, integrator="rk45", out_dir=build,
                    progress=False)
    assert traj.t[-1] == duration and traj.steps == 1 and len(traj.t) == 2


def test_rk45_is_bounded_in_steps_like_the_fixed_step_integrators(files, build, monkeypatch):
    """rk45 counts its steps against MAX_STEPS as the fixed-step integrators do before a run
    (a duration of 1e6 s ran for hours)."""
    import importlib
    simulator = importlib.import_module("scleron.simulate.simulator")   # (scleron.simulate: the function)
    monkeypatch.setattr(simulator, "MAX_STEPS", 40)
    with pytest.raises(SimulationError, match="rk45 took 40 steps by t = "):
        simulate(files["chain3"], 1e6, 1e-2, integrator="rk45", out_dir=build, progress=False,
                 record_every=1000)         # (every state: refused before the run, 50 GB)


def test_loading_what_is_not_a_trajectory_says_so(files, tmp_path):
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    for path in (tmp_path / "other.npz", files["chain3"]):
        with pytest.raises(ValueError, match=re.escape(f"{path}: not a trajectory written by "
                                                       "scleron simulate")):
            Trajectory.load(str(path))
    good = tmp_path / "good.npz"                 # a file cut short: zipfile's BadZipFile was raised
    simulate(files["chain3"], 0.01, 1e-3, progress=False, out_dir=str(tmp_path / "b"), output=str(good))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[:5000])
    with pytest.raises(ValueError, match=re.escape(f"{cut}: not a trajectory written by scleron")):
        Trajectory.load(str(cut))
    with pytest.raises(ValueError, match="dt must be a number, got True"):
        simulate(files["chain3"], 0.01, True, progress=False, out_dir=str(tmp_path / "b"))


def test_sprung_joints_keep_their_chart():
    """A sprung Euler joint (a `stiffness` attribute or parameter) is not switched: its spring
    ½ k (q - rest)² lives in its chart."""
    m = scleron.Model("springs", gravity=(0, 0, 0))
    m.add_body("a", joint="revolute", axis=(0, 0, 1), com=(0.3, 0, 0))
    m.add_body("b", "a", joint="spherical", chart="ZYX", xyz=(1, 0, 0))
    m.add_body("c", "b", joint="free")
    assert [s.name for s in switchables(m)] == ["b_joint", "c_joint"]
    m.joints[1].stiffness = [1.0, 2.0, 3.0]
    assert [s.name for s in switchables(m)] == ["c_joint"]
    m.joints[2].armature = [0.01, 0.0, 0.0, 0.0, 0.0, 0.0]  # on a translation: no matter
    assert [s.name for s in switchables(m)] == ["c_joint"]
    m.joints[2].armature = [0.0, 0.0, 0.0, 0.01, 0.0, 0.0]  # on a rotation: its ½ a q-dot²
    assert switchables(m) == []

    tau = np.zeros(m.nv)            # a: 0, b: 1-3, c: 4-6 translation, 7-9 angles
    m.joints[1].stiffness, m.joints[2].armature = None, None
    tau[2] = 0.5                    # b's second angle: a constant tau acts on the chart's rate
    assert [s.name for s in switchables(m, tau)] == ["c_joint"]
    tau[2], tau[5] = 0.0, 2.0       # a force on c's translation: it may switch
    assert [s.name for s in switchables(m, tau)] == ["b_joint", "c_joint"]
    tau[9] = 1.0                    # on c's third angle
    assert [s.name for s in switchables(m, tau)] == ["b_joint"]
    assert [s.name for s in switchables(m, lambda t, q, qd: tau)] == ["b_joint", "c_joint"]


def test_a_constant_tau_does_not_depend_on_the_switch_threshold(files, build):
    """Found by an outside tester: the tumbler's constant tau on its angles became another torque
    at each switch (the thresholds 0.1 and 0.3 ended 0.5 J apart); now its joint keeps its chart,
    and a threshold has nothing to switch."""
    tau = [0, 0, 0, 0, 0, 0.1]
    traj = simulate(files["tumbler"], 0.2, 1e-3, tau=tau, out_dir=build, progress=False)
    assert traj.switches == [] and traj.chart_joints == []
    with pytest.raises(ValueError, match="no Euler-angle joint whose chart may switch"):
        simulate(files["tumbler"], 0.2, 1e-3, tau=tau, switch_threshold=0.3, out_dir=build,
                 progress=False)


def test_a_proper_euler_joint_starting_at_its_gimbal_lock_switches_at_t0(tmp_path, build):
    """ZYZ at q = 0 is singular: the run switches chart at t = 0 instead of refusing to generate
    the model's chart there (found by an outside tester)."""
    path = tmp_path / "top.yaml"
    path.write_text(TUMBLER.replace("tumbler", "zyz_top").replace("chart: XYZ", "chart: ZYZ"))
    assert "q: {root: [0, 0, 1, 0, 0, 0]}" in TUMBLER       # the angles 0: ZYZ's gimbal lock
    traj = simulate(str(path), 0.02, 1e-3, out_dir=build, progress=False)
    assert traj.switches[0].time == 0.0 and traj.switches[0].old == "ZYZ"
    assert traj.energy_drift < 1e-9


def test_runs_too_long_or_too_large_are_refused_before_they_start(files):
    with pytest.raises(ValueError, match="duration / dt = 1e\\+15 steps"):
        simulate(files["chain3"], 1e12, 1e-3, integrator="rk45", progress=False)
    with pytest.raises(ValueError, match="would record up to 1e\\+08 states, about 5[0-9] GB: "
                                         "keep every n-th step"):
        simulate(files["chain3"], 1e5, 1e-3, progress=False)


def test_rk45_stops_where_its_record_would_not_fit(files, build, monkeypatch):
    """rk45 takes at least duration / dt steps, and may take many more: the check before the run
    is a lower bound, the simulator stops it where the record outgrows MAX_RECORD_BYTES."""
    import importlib
    simulator = importlib.import_module("scleron.simulate.simulator")
    monkeypatch.setattr(simulator, "MAX_RECORD_BYTES", 50 * simulator.record_bytes(3, 3))
    with pytest.raises(SimulationError, match="50 states recorded by t = .* keep every n-th step"):
        simulate(files["chain3"], 0.5, 1e-3, integrator="rk45", out_dir=build, progress=False)


def test_state_arguments_are_vectors_and_record_every_any_integer(files, build):
    with pytest.raises(ValueError, match=r"qd0 must be a vector of nv = 3 numbers, got an array of shape \(3, 1\)"):
        simulate(files["chain3"], 0.01, 1e-3, qd0=np.zeros((3, 1)), out_dir=build, progress=False)
    traj = simulate(files["chain3"], 0.01, 1e-3, record_every=np.int64(5), out_dir=build,
                    progress=False)
    assert len(traj.t) == 3


def test_output_and_plot_are_written_both_or_neither(files, build, tmp_path, monkeypatch):
    """A plot that fails after the run leaves no .npz behind, and the error names the option."""
    import importlib
    api = importlib.import_module("scleron.simulate.api")      # (scleron.simulate: the function)

    def broken(traj, path):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(api, "plot_trajectory", broken)
    npz, png = tmp_path / "t.npz", tmp_path / "t.png"
    with pytest.raises(ValueError, match=f"plot {png}: Permission denied"):
        simulate(files["chain3"], 0.01, 1e-3, out_dir=build, progress=False, output=str(npz),
                 plot=str(png))
    assert sorted(os.listdir(tmp_path)) == []
    monkeypatch.undo()
    simulate(files["chain3"], 0.01, 1e-3, out_dir=build, progress=False, output=str(npz))
    mask = os.umask(0)
    os.umask(mask)
    assert sorted(os.listdir(tmp_path)) == ["t.npz"]
    assert os.stat(npz).st_mode & 0o777 == 0o666 & ~mask        # as open() would have made it
    os.chmod(npz, 0o640)
    (tmp_path / "link.npz").symlink_to(npz)
    simulate(files["chain3"], 0.01, 1e-3, out_dir=build, progress=False, output=str(tmp_path / "link.npz"))
    assert (tmp_path / "link.npz").is_symlink() and os.stat(npz).st_mode & 0o777 == 0o640


def test_python_m_scleron_simulate_is_scleron_simulate(files):
    r = subprocess.run([sys.executable, "-m", "scleron.simulate", files["chain3"], "--duration", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "scleron: error: the following arguments are required: --dt (see `scleron simulate --help`)"]


SPRING = """\
name: spring1
gravity: [0, 0, 0]
bodies:
  - name: arm
    parent: world
    joint: {name: hinge, type: revolute, axis: [0, 0, 1], stiffness: 2.0, rest: 0.1}
    mass: 1.0
    com: [0.3, 0, 0]
    inertia: [0.01, 0.01, 0.02]
initial:
  q: [0.4]
"""


def test_spring_energy_comes_from_the_generated_potential(tmp_path, build):
    """The energies are the generated kinetic_energy / potential_energy: the spring's ½ k (q - rest)²
    is in V, T = ½ I_zz,O q̇² (I about the axis: 0.02 + m 0.3²), and their sum is conserved."""
    path = tmp_path / "spring1.yaml"
    path.write_text(SPRING)
    traj = simulate(str(path), 1.0, 1e-3, out_dir=build, progress=False)
    assert traj.potential == pytest.approx(0.5 * 2.0 * (traj.q[:, 0] - 0.1) ** 2, abs=1e-14)
    assert traj.kinetic == pytest.approx(0.5 * (0.02 + 0.09) * traj.qd[:, 0] ** 2, abs=1e-14)
    assert traj.potential[0] == pytest.approx(0.09) and np.ptp(traj.kinetic) > 0.05
    assert traj.energy_drift < 1e-9


def test_the_summary_names_what_does_work_and_where_the_drift_was_measured(tmp_path, build, capsys):
    """A damped spring loses energy: the summary says the dampers do it (as it says "tau is not
    zero" for a driven run); with --every the drift is that of the recorded states, and says so."""
    path = tmp_path / "damped1.yaml"
    path.write_text(SPRING.replace("name: spring1", "name: damped1").replace("rest: 0.1", "rest: 0.1, damping: 0.05"))
    assert cmd_simulate(parse([str(path), "--duration", "0.5", "--dt", "1e-3", "--every", "10",
                               "--build-dir", build, "-q"])) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("energy:"))
    assert "at the 51 recorded states (dampers dissipate (hinge))" in line, line
    assert float(line.split("change ")[1].split()[0]) > 1e-3       # and the energy did go down
    assert cmd_simulate(parse([str(path), "--duration", "0.5", "--dt", "1e-3", "--tau", "0.1",
                               "--build-dir", build, "-q"])) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("energy:"))
    assert line.endswith("(tau is not zero: work is done; dampers dissipate (hinge))"), line
    assert "recorded" not in line


# -------------------------------------------------------------------------------------------------
# the plot: every coordinate readable, with a legend


def test_plot_panels_keep_a_large_coordinate_from_flattening_the_others():
    t = np.linspace(0, 1, 50)
    q = np.column_stack([np.sin(t), 0.5 * np.cos(t), 326 * t, 0.02 * t, 0.05 * np.sin(t)])
    panels = coordinate_panels(q, ["rad", "rad", "rad", "m", "m"])
    assert panels == [("rad", [0, 1]), ("rad", [2]), ("m", [3, 4])]
    assert coordinate_panels(q[:, :2], ["rad", "rad"]) == [("rad", [0, 1])]
    q[:, 3] *= 1e-16                                     # a length that stays at zero: no panel of its own
    assert coordinate_panels(q, ["rad", "rad", "rad", "m", "m"])[2] == ("m", [3, 4])
    noise = np.outer(t, [2e-16, 9e-16, 4e-17])           # a standing robot's legs: one panel
    assert coordinate_panels(noise, ["rad"] * 3) == [("rad", [0, 1, 2])]
    many = np.outer(t, 10.0 ** np.arange(8))          # 8 sizes a decade apart: merged to 4 panels
    assert len(coordinate_panels(many, ["rad"] * 8)) == 4
    assert sorted(k for _, ks in coordinate_panels(many, ["rad"] * 8) for k in ks) == list(range(8))
    traj = Trajectory(t, q, q, np.zeros(50), np.zeros(50), np.zeros(50), [Switch(0.5, "b", "exp", "exp")],
                      np.zeros((50, 0)), [], coordinate_names=["a", "b", "helix", "slide", "z"],
                      coordinate_units=["rad", "rad", "rad", "m", "m"], model_name="m")
    axes = trajectory_figure(traj).axes
    legends = [[x.get_text() for x in ax.get_legend().get_texts()] for ax in axes]
    assert legends[:3] == [["a", "b"], ["helix"], ["slide", "z"]]
    assert [ax.get_ylabel() for ax in axes[:3]] == ["angles (rad), small", "angles (rad), large",
                                                     "lengths (m)"]
    assert axes[1].get_ylim()[1] > 300 > 2 > axes[0].get_ylim()[1]


# -------------------------------------------------------------------------------------------------
# quaternion joints: the steps move q on the manifold (RKMK), no chart switching


QUATERNION_TUMBLER = """
name: qtumbler
gravity: [0, 0, 0]
bodies:
  - {name: box, parent: world, mass: 2, inertia: [0.1, 0.2, 0.3], joint: {type: free_flyer}}
  - {name: arm, parent: box, mass: 0.5, com: [0.2, 0, 0], inertia: [0.01, 0.02, 0.02],
     joint: {type: spherical_quat, xyz: [0.3, 0, 0]}}
initial:
  qd: {box_joint: [0.1, 0, -0.2, 1, 2, 0.5], arm_joint: [0.3, -1, 2]}
"""


def test_quaternion_joints_integrate_on_the_manifold_at_full_order(tmp_path, build):
    """A free body with a quaternion ball, no gravity: the quaternions stay unit, energy and the
    centre of mass's straight line are kept, and rk4 converges with order 4 (RKMK; 2 without the
    dexp correction), rk45 to its tolerance, semi-implicit Euler with order 1."""
    path = tmp_path / "qtumbler.yaml"
    path.write_text(QUATERNION_TUMBLER)
    model = scleron.load_model(str(path))
    ref = simulate(model, 1.0, 0.005, out_dir=build, progress=False)
    assert ref.q.shape[1] == model.nq == 11 and ref.qd.shape[1] == model.nv == 9
    assert len(ref.coordinate_names) == 11 and ref.velocity_names[-3:] == [     # (the .npz had
        "arm_joint[0]", "arm_joint[1]", "arm_joint[2]"]                       # no qd names)
    ref.save(tmp_path / "q.npz")
    assert Trajectory.load(tmp_path / "q.npz").velocity_names == ref.velocity_names
    assert np.allclose(np.linalg.norm(ref.q[:, 3:7], axis=1), 1, atol=1e-13)
    assert np.allclose(np.linalg.norm(ref.q[:, 7:11], axis=1), 1, atol=1e-13)
    assert ref.energy_drift < 1e-9 and not ref.switches

    def error(integrator, dt, **kw):
        tr = simulate(model, 1.0, dt, integrator=integrator, out_dir=build, progress=False, **kw)
        return np.abs(tr.q[-1] - ref.q[-1]).max()
    e1, e2 = error("rk4", 0.04), error("rk4", 0.02)
    assert 2 ** 3.6 < e1 / e2 < 2 ** 4.4
    s1, s2 = error("semi-implicit", 0.02), error("semi-implicit", 0.01)
    assert 1.7 < s1 / s2 < 2.3
    assert error("rk45", 0.05, rtol=1e-11, atol=1e-11) < 1e-8


FALLING_SPINNER = """
name: spinner
bodies:
  - {name: b, parent: world, mass: 1.3, inertia: [0.02, 0.05, 0.06], joint: {type: free_flyer}}
initial:
  qd: [0.5, 0.1, 3.0, 0.05, 4.0, -0.1]
"""


def spinner_fall(path, dt, integrator, build):
    """(trajectory, largest miss of the parabola after 3 s) of the thrown spinner."""
    tr = simulate(str(path), 3.0, dt, integrator=integrator, out_dir=build, progress=False)
    parabola = np.array([0.5, 0.1, 3.0 - 0.5 * 9.81 * 3.0]) * 3.0
    return tr, np.abs(tr.q[-1, :3] - parabola).max()


def test_semi_implicit_keeps_a_spinning_free_flyers_energy(tmp_path, build):
    """The free flyer's linear velocity is in its turning body frame: explicit Euler on its
    -w x v term lengthened it every step, and a thrown spinning body gained 107 % of its energy
    in 3 s at dt = 1e-3 (an outside tester; MuJoCo's Euler and scleron's Euler-angle free joint
    lose 3 %). Now it steps in the world frame: energy within 0.3 %, the centre falling on the
    parabola to first order in dt."""
    path = tmp_path / "spinner.yaml"
    path.write_text(FALLING_SPINNER)
    coarse, e1 = spinner_fall(path, 1e-3, "semi-implicit", build)
    fine, e2 = spinner_fall(path, 5e-4, "semi-implicit", build)
    assert coarse.energy_drift < 1e-3 and fine.energy_drift < 5e-4
    assert e1 < 0.1 and 1.8 < e1 / e2 < 2.2
    # spun up until the step diverges: the simulator's error, not "math domain error" from the
    # frames' cos(inf) (an outside tester)
    with pytest.raises(SimulationError, match="non-finite"):
        simulate(str(path), 1.0, 0.01, integrator="semi-implicit", out_dir=build, progress=False,
                 qd0=[0, 0, 0, 0, 1e300, 1])


def test_implicit_keeps_a_spinning_free_flyers_fall(tmp_path, build):
    """An outside tester: the linearly implicit step took the free flyer's linear velocity in
    its turning frame, where it turns by -w x v: backward Euler damped that turn, a body
    spinning at 10 rad/s fell 1.4 m short in 3 s and lost 136 % of its energy, and a free
    flyer carrying a ball-jointed arm (dt = 0.01) lost 4000 J, then diverged. Now the step is
    taken in the frame of the step's start, the turn exact: the fall on the parabola to first
    order in dt, and the arm's run bounded and dissipative (MuJoCo's implicit is bounded)."""
    spinner = tmp_path / "spinner.yaml"
    spinner.write_text(FALLING_SPINNER.replace("qd: [0.5, 0.1, 3.0, 0.05, 4.0, -0.1]",
                                               "qd: [0.5, 0.1, 3.0, 0.05, 10.0, -0.1]"))
    coarse, e1 = spinner_fall(spinner, 2e-3, "implicit", build)
    fine, e2 = spinner_fall(spinner, 1e-3, "implicit", build)
    assert e1 < 0.4 and 1.8 < e1 / e2 < 2.2 and fine.energy_drift < 1e-3
    arm = tmp_path / "ffarm.yaml"
    arm.write_text(FREE_FLYER_ARM)
    tr = simulate(str(arm), 15.0, 2e-3, integrator="implicit", out_dir=build, progress=False)
    assert tr.energy.max() <= tr.energy[0] + 1e-9 and tr.energy[-1] > tr.energy[0] - 10.0


FREE_FLYER_ARM = """
name: ffarm
bodies:
  - {name: base, parent: world, mass: 2.0, com: [0.03, 0.01, 0],
     inertia: [0.00833, 0.02833, 0.03333], joint: {name: root, type: free_flyer}}
  - {name: arm, parent: base, mass: 0.5, com: [0.15, 0.05, 0], inertia: [0.0008, 0.0045, 0.005],
     joint: {name: sh, type: spherical_quat, xyz: [0.2, 0, 0]}}
  - {name: fa, parent: arm, mass: 0.3, com: [0.1, 0, -0.05], inertia: [0.0003, 0.0012, 0.0012],
     joint: {name: el, type: revolute, axis: [0, 0, 1], xyz: [0.3, 0.1, 0]}}
initial:
  q: [0, 0, 1, 0.1032, 0.3097, 0.2065, 0.9225, 0, 0, 0, 1, 0]
  qd: [0.3, -0.2, 2.0, 1.5, -2.0, 3.0, 2.0, -1.0, 0.5, 4.0]
"""


COUPLED_THEN_BALL = """
name: coupled_ball
gravity: [0, 0, 0]
bodies:
  - {name: a, parent: world, mass: 1, inertia: [0.1, 0.1, 0.1], com: [0.1, 0, 0],
     joint: {name: ja, type: revolute, axis: [0, 0, 1]}}
  - {name: b, parent: a, mass: 1, inertia: [0.1, 0.1, 0.1], com: [0.1, 0, 0],
     joint: {name: jb, type: revolute, axis: [0, 1, 0], xyz: [0.3, 0, 0],
             mimic: {joint: ja, multiplier: 0.5, offset: 0.0}}}
  - {name: c, parent: b, mass: 1, inertia: [0.1, 0.2, 0.3], com: [0.1, 0, 0],
     joint: {name: jc, type: spherical, xyz: [0.3, 0, 0]}}
initial:
  qd: [0.2, 0.1, 3.0, 0.2]
"""


def test_a_chart_after_a_mimic_joint_switches_its_own_coordinates(tmp_path, build):
    """The switching and the Lie groups counted a mimic joint's coordinate, which q does not
    have: the ball's chart was read one entry late, and its switch failed with a bare TypeError.
    q = [ja, jc[0..2]]: the switch acts on q[1:4] and keeps the energy."""
    from scleron.simulate.charts import switchables
    from scleron.simulate.simulator import lie_groups
    path = tmp_path / "coupled_ball.yaml"
    path.write_text(COUPLED_THEN_BALL)
    model = scleron.load_model(str(path))
    assert model.coordinate_names() == ["ja", "jc[0]", "jc[1]", "jc[2]"]
    assert [(s.start, s.v_start) for s in switchables(model)] == [(1, 1)]
    model.joints[2].type, model.joints[2].params = "spherical_quat", {}
    assert lie_groups(model) == [("so3", 1)]
    traj = simulate(str(path), 2.0, 1e-3, out_dir=build, progress=False)
    assert [s.joint for s in traj.switches] == ["jc"] and traj.energy_drift < 1e-7


COMPOSITE_BALL = """
name: composite_ball
gravity: [0, 0, -9.81]
bodies:
  - name: b
    parent: world
    joint: {name: j, type: composite, parts: [{type: translational}, {type: spherical, chart: XYZ}]}
    mass: 1.3
    inertia: [0.02, 0.05, 0.06]
initial:
  qd: [0, 0, 0, 0.001, 4.0, 0.0005]
"""


def test_a_composites_ball_near_gimbal_lock_is_named(tmp_path, build):
    """A composite's spherical part keeps its chart: through gimbal lock the run ended in "the
    state became non-finite" without a word of why, or, at a smaller step, finished wrong in
    silence (an outside tester). The error names the joint and its singularity, and a run that
    gets through warns."""
    path = tmp_path / "composite_ball.yaml"
    path.write_text(COMPOSITE_BALL)
    with pytest.raises(SimulationError,
                       match=r"non-finite at t = .*: joint 'j' came near the gimbal lock of its "
                             r"chart XYZ \(\|cos\(q2\)\| = "):
        simulate(str(path), 1.0, 1e-3, out_dir=build, progress=False)
    with pytest.warns(scleron.SimulationWarning, match="joint 'j' came near the gimbal lock.*"
                                                       "composite joint's parts keep"):
        simulate(str(path), 0.5, 1e-4, out_dir=build, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # away from it: no warning
        simulate(str(path), 0.3, 1e-3, out_dir=build, progress=False)
    from scleron.simulate.charts import kept_charts       # a free part: its angles after x, y, z
    free = COMPOSITE_BALL.replace("{type: translational}, {type: spherical, chart: XYZ}",
                                  "{type: free, chart: ZYX}")
    (tmp_path / "composite_free.yaml").write_text(free)
    watched = kept_charts(scleron.load_model(str(tmp_path / "composite_free.yaml")))
    assert [(c.name, c.start, c.chart) for c in watched] == [("j", 3, "ZYX")]


def test_a_point_joints_angles_near_gimbal_lock_are_named(tmp_path, build):
    """A surface_point's Euler angles passed within |cos q2| = 0.026 of ZYX's gimbal lock with
    no word (an outside tester; a spherical joint there switches chart): they keep their chart,
    and are watched as a composite's are."""
    from scleron.simulate.charts import kept_charts
    text = ("name: gimbal_sp\ngravity: [0, 0, 0]\nbodies:\n  - name: bead\n    parent: world\n"
            "    joint: {name: g, type: surface_point, surface: {shape: sphere, radius: 1.0}, "
            "chart: ZYX}\n    mass: 1.0\n    inertia: [0.01, 0.02, 0.03]\ninitial:\n"
            "  q: {g: [0.0, 0.0, 0.0, 1.3, 0.0]}\n  qd: {g: [0.0, 0.0, 0.3, 1.0, 0.5]}\n")
    path = tmp_path / "gimbal_sp.yaml"
    path.write_text(text)
    with pytest.warns(scleron.SimulationWarning, match=r"joint 'g' came near the gimbal lock of "
                                                       r"its chart ZYX .*surface_point joint's"):
        simulate(str(path), 0.4, 1e-3, out_dir=build, progress=False)
    curve = text.replace("surface_point, surface: {shape: sphere, radius: 1.0}",
                         "curve_point, curve: {shape: circle, radius: 1.0}").replace(
        "[0.0, 0.0, 0.0, 1.3, 0.0]", "[0.0, 0.0, 1.3, 0.0]").replace(
        "[0.0, 0.0, 0.3, 1.0, 0.5]", "[0.0, 0.3, 1.0, 0.5]")
    (tmp_path / "curve.yaml").write_text(curve)
    watched = kept_charts(scleron.load_model(str(tmp_path / "curve.yaml")))
    assert [(c.name, c.start, c.chart) for c in watched] == [("g", 1, "ZYX")]


def test_the_implicit_integrator_starts_on_a_spline_knot(build):
    """spline_surface's initial state sits on a knot of its surface (v = 1.0), where the
    derivatives the implicit integrator takes were NaN (sqrt(x * x) differentiated at x = 0):
    the run failed at its first step. It now follows rk4 to first order."""
    path = example("spline_surface.yaml")
    implicit = simulate(path, 0.05, 1e-3, integrator="implicit", out_dir=build, progress=False)
    rk4 = simulate(path, 0.05, 1e-3, out_dir=build, progress=False)
    assert implicit.steps == 50 and np.isfinite(implicit.q).all()
    assert np.abs(implicit.q[-1] - rk4.q[-1]).max() < 1e-3
    assert np.abs(implicit.q[-1] - implicit.q[0]).max() > 1e-3          # and it did move


def test_the_load_options_reach_load_model():
    """floating="free" is the Euler-angle free joint (whose charts switch), not the free flyer
    every other true value gives; options of reading a file are refused with a Model."""
    from scleron.simulate.api import _load
    assert _load(example("rc20.urdf"), "free").joints[0].type == "free"
    assert _load(example("rc20.urdf"), True).joints[0].type == "free_flyer"
    assert _load(example("rc20.urdf"), False).joints[0].type == "revolute"
    with pytest.raises(ValueError, match="damping= is an option of reading a model file"):
        _load(scleron.load_model(example("rc20.yaml")), False, damping="read")


def test_every_load_option_of_the_command_line_reaches_simulate(tmp_path, capsys):
    """`scleron simulate --order file` (or pinocchio) stopped at an internal error: the option
    reached simulate(), which had no order= (an outside tester). Every option of reading a
    file that the command line takes is now a keyword of simulate(), and --order decides the
    coordinates' order."""
    import inspect
    from scleron.cli import main
    from scleron.model.load import add_load_arguments, load_arguments
    parser = argparse.ArgumentParser()
    add_load_arguments(parser)
    every = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    given = load_arguments(parser.parse_args(
        [x for a in every for x in ([a.option_strings[0]] if a.nargs == 0 else
                                    [a.option_strings[0], a.choices[0]])]))
    assert set(given) == {a.dest for a in every}
    assert set(given) <= set(inspect.signature(simulate).parameters)
    link = ('<link name="{0}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" '
            'izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="{0}_j" '
            'type="revolute"><parent link="base"/><child link="{0}"/><axis xyz="0 0 1"/>'
            '<origin xyz="0.1 0 0"/></joint>')
    urdf = tmp_path / "two.urdf"
    urdf.write_text(f'<robot name="two"><link name="base"/>{link.format("b")}{link.format("a")}'
                    '</robot>')
    for order, names in (("file", ["b_j", "a_j"]), ("pinocchio", ["a_j", "b_j"])):
        out = tmp_path / f"{order}.npz"
        assert main(["simulate", str(urdf), "--duration", "0.002", "--dt", "1e-3", "-q",
                     "--order", order, "-o", str(out), "--build-dir",
                     str(tmp_path / "build" / order)]) == 0, capsys.readouterr().err
        assert Trajectory.load(str(out)).coordinate_names == names


def test_a_cached_simulation_records_the_file_it_now_comes_from(tmp_path):
    """Editing only a model's `initial:` leaves its generated code as it is (the code's hash
    ignores it), so the cache was loaded without a new record of the file: every later run
    warned that the file had changed, and a second file of the same model warned about the
    first (an outside tester). A covering cache hit now records the file it comes from."""
    text = ("name: swing\nbodies:\n  - {name: a, parent: world, mass: 1.0, com: [0.5, 0, 0], "
            "inertia: [0.01, 0.01, 0.01], joint: {name: j, type: revolute, axis: [0, 1, 0]}}\n"
            "initial:\n  q: {j: QQ}\n")
    first, second = tmp_path / "one.yaml", tmp_path / "two.yaml"
    build = str(tmp_path / "build")

    def run(path):
        r = subprocess.run([sys.executable, "-m", "scleron", "simulate", str(path), "--duration",
                            "0.002", "--dt", "1e-3", "-q", "--build-dir", build],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        return [line for line in r.stderr.splitlines() if "changed since" in line]

    first.write_text(text.replace("QQ", "0.1"))
    assert run(first) == []
    first.write_text(text.replace("QQ", "0.2"))             # the same code: a cache hit
    assert run(first) == []
    second.write_text(text.replace("QQ", "0.3"))
    assert run(second) == [] and run(first) == []


def test_an_empty_folder_name_and_a_string_step_are_refused(files, capsys, tmp_path):
    """--build-dir "" ran in the default cache folder, and simulate(dt="0.01") took a string
    for a number (an outside tester): both are refused now, naming the argument."""
    from scleron.cli import main
    assert main(["simulate", files["chain3"], "--duration", "1", "--dt", "0.1", "-q",
                 "--build-dir", ""]) == 2
    assert capsys.readouterr().err.startswith("scleron: error: --build-dir: an empty name")
    with pytest.raises(ValueError, match="out_dir: an empty name"):
        simulate(files["chain3"], 1.0, 0.1, out_dir="", progress=False)
    for what, args in (("dt", (1.0, "0.1")), ("duration", ("1", 0.1))):
        with pytest.raises(ValueError, match=f"{what} must be a number, got '"):
            simulate(files["chain3"], *args, out_dir=str(tmp_path / "b"), progress=False)


@pytest.mark.parametrize("duration, line", [("0.25", "dt = 0.1 s (the last step 0.05 s), t = 0.25 s in 3 steps"),
                                            ("0.05", "dt = 0.1 s (the last step 0.05 s), t = 0.05 s in 1 step"),
                                            ("0.3", "dt = 0.1 s, t = 0.3 s in 3 steps")])
def test_the_summary_names_a_shortened_last_step(files, build, capsys, duration, line):
    """A fixed-step run's last step ends at the duration; the summary said only the dt asked
    for (dt 0.1 s, duration 0.05 s: "dt = 0.1 s ... in 1 step")."""
    from scleron.cli import main
    assert main(["simulate", files["chain3"], "--duration", duration, "--dt", "0.1",
                 "--build-dir", build]) == 0
    assert line in capsys.readouterr().out


def test_the_summary_says_when_the_energy_overflows(tmp_path, capsys):
    """Gravity 1e200: the state stays finite (q near 1e195) while its energy overflows; the
    summary printed "E(end) = inf J, max relative drift nan" and nothing else (an outside
    tester)."""
    from scleron.cli import main
    path = tmp_path / "gh.yaml"
    path.write_text("name: gh\ngravity: [1.0e+200, 0, 1.0e+200]\nbodies:\n  - {name: a, parent: "
                    "world, joint: {type: revolute, axis: [0, 1, 0]}, mass: 1, com: [0.2, 0, 0], "
                    "inertia: [0.01, 0.01, 0.01]}\n")
    assert main(["simulate", str(path), "--duration", "0.01", "--dt", "0.001",
                 "--build-dir", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "the energy overflowed double precision (first at t = 0.001 s), the state did not" in out


SLIDER = """\
name: slider
gravity: [0, 0, -9.81]
bodies:
  - name: car
    parent: world
    joint:
      name: s
      type: spline_curve
      frames: [{xyz: [0, 0, 0]}, {xyz: [1, 0, 0]}, {xyz: [2, 0, 0]}, {xyz: [3, 0, 0]}, {xyz: [4, 0, 0]}]
    mass: 1.0
    inertia: [0.01, 0.01, 0.01]
initial:
  q: {s: 1.0}
  qd: {s: QD}
"""


def test_leaving_a_splines_range_is_said(tmp_path):
    """A spline's parameter run past [0, n - 3] (docs/joints.md: keep the motion inside) ended
    rk4 at "non-finite ... a smaller --dt may help" and let the implicit integrator finish with
    the energy gone (an outside tester); the run now says which coordinate left its range,
    when, and how far it went; a run that stays inside says nothing."""
    from scleron.simulate.simulator import ranged_coordinates
    path = tmp_path / "slider.yaml"
    path.write_text(SLIDER.replace("QD", "3.0"))
    model = scleron.load_model(str(path))
    (c,) = ranged_coordinates(model)
    assert (c.name, c.index, c.low, c.high) == ("s", 0, 0.0, 2.0) and c.left(2.5) == 0.5
    build = str(tmp_path / "b")
    with pytest.warns(scleron.SimulationWarning, match=r"coordinate 's' of joint 's' \(spline_curve\) "
                      r"left its range \[0, 2\] at t = 0\.3\d* s \(reaching 2\.\d+"):
        simulate(str(path), 0.5, 0.01, integrator="implicit", out_dir=build, progress=False)
    with pytest.raises(SimulationError, match=r"non-finite .*left its range \[0, 2\]"):
        simulate(str(path), 3.0, 0.01, out_dir=build, progress=False)
    path.write_text(SLIDER.replace("QD", "0.5"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traj = simulate(str(path), 0.5, 0.01, out_dir=build, progress=False)
    assert 1.0 < traj.q[-1, 0] < 2.0


def test_the_implicit_integrator_refuses_mimic_coupling_before_generating(tmp_path):
    """An outside tester: --integrator implicit on a coupled model generated and unrolled first,
    then failed in codegen's words (--functions minv), never naming the integrator."""
    path = tmp_path / "coupled_ball.yaml"
    path.write_text(COUPLED_THEN_BALL)
    with pytest.raises(ValueError, match=r"integrator implicit needs the inverse-dynamics "
                                         r"derivatives, .* mimic joints \(jb coupled\): use rk4"):
        scleron.simulate(str(path), 0.01, 1e-3, integrator="implicit",
                         out_dir=str(tmp_path / "build"))
    assert not (tmp_path / "build").exists()


def test_a_run_that_stops_keeps_what_it_recorded(files, build, tmp_path, capsys, monkeypatch):
    """A run that failed at t = 9.9 of 10 s, or that Ctrl-C stopped, wrote nothing: the states
    recorded until then are now written to the output (and carried by the exception), and the
    message says where."""
    out = tmp_path / "part.npz"

    def failing(t, q, qd):
        return np.full(3, np.nan) if t > 0.0305 else np.zeros(3)
    with pytest.raises(SimulationError, match=r"\(the 31 states recorded up to t = 0.03 s are in "
                                              + re.escape(str(out)) + r"\)") as info:
        simulate(files["chain3"], 0.05, 1e-3, tau=failing, output=str(out), out_dir=build,
                 progress=False)
    part = Trajectory.load(str(out))
    assert part.t[-1] == pytest.approx(0.03) and len(part.t) == 31 == len(info.value.trajectory.t)
    full = simulate(files["chain3"], 0.03, 1e-3, out_dir=build, progress=False)
    assert np.array_equal(part.q, full.q) and np.array_equal(part.qd, full.qd)

    def interrupted(t, q, qd):
        if t > 0.0205:
            raise KeyboardInterrupt
        return np.zeros(3)
    out.unlink()
    with pytest.raises(KeyboardInterrupt) as info:
        simulate(files["chain3"], 0.05, 1e-3, tau=interrupted, output=str(out), out_dir=build,
                 progress=False)
    assert info.value.written == f"the 21 states recorded up to t = 0.02 s are in {out}"
    assert len(Trajectory.load(str(out)).t) == 21
    # the command: one line, exit status 130 (as any Ctrl-C of scleron)
    import importlib
    from scleron.cli import main
    sim_cli = importlib.import_module("scleron.simulate.cli")

    def stopped(*args, **kw):
        raise info.value
    monkeypatch.setattr(sim_cli, "simulate", stopped)
    argv = ["simulate", files["chain3"], "--duration", "1", "--dt", "0.01", "-o", str(out)]
    assert main(argv) == 130
    assert capsys.readouterr().err == f"scleron: interrupted; {info.value.written}\n"


def test_names_with_dollars_are_drawn_as_written(tmp_path, build, capsys):
    """A joint or body named '$\\undefinedcmd$' (a valid name) went to matplotlib as math
    markup: its parse error ended simulate after the run, with neither -o nor --plot written,
    and draw (an outside tester). Now every text is drawn as written."""
    pytest.importorskip("matplotlib")
    from scleron.cli import main
    path = tmp_path / "dollars.yaml"
    path.write_text("name: t\nbodies:\n"
                    "  - {name: '$x^{$', parent: world, joint: {name: '$\\undefinedcmd$', "
                    "axis: [0, 1, 0]}, mass: 1, com: [0.5, 0, 0], inertia: [0.1, 0.1, 0.1]}\n")
    out, png = tmp_path / "run.npz", tmp_path / "run.png"
    assert main(["simulate", str(path), "--duration", "0.05", "--dt", "0.01", "-o", str(out),
                 "--plot", str(png), "--build-dir", build, "-q"]) == 0, capsys.readouterr().err
    assert out.stat().st_size and png.stat().st_size
    assert main(["draw", str(path), "-o", str(tmp_path / "d.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "d.png").stat().st_size


def test_chart_variant_starts_at_rest_where_its_angles_moved():
    """A chart variant's copy of the model (recorded beside its code as its initial state)
    starts a switched joint at a regular point of its chart and at rest there: the original
    rates belong to the original chart's angles. The other joints keep their q0 and qd0."""
    from scleron.simulate.variants import Variants
    m = scleron.Model("variant", gravity=(0, 0, -9.81))     # a quaternion joint first: the
    m.add_body("a", joint="spherical_quat", com=(0.3, 0, 0))   # Euler joint's q and qd indices
    m.add_body("b", "a", joint="spherical", chart="ZYX", xyz=(1, 0, 0), com=(0.2, 0, 0))  # differ
    q0, qd0 = [0.0, 0.0, 0.0, 1.0, 0.1, 0.2, 0.3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    m.q0, m.qd0 = np.array(q0), np.array(qd0)
    variants = Variants(m, "unused", switchables(m), progress=None)
    copy = variants.model_for(("ZYZ",))
    assert copy.q0.tolist() == q0[:4] + [0.0, math.pi / 2, 0.0]
    assert copy.qd0.tolist() == qd0[:3] + [0.0, 0.0, 0.0]
    assert m.qd0.tolist() == qd0                            # the model itself is untouched
    same = variants.model_for(("ZYX",))                     # its own chart, away from the lock
    assert same.q0.tolist() == q0 and same.qd0.tolist() == qd0


def test_a_kept_exponential_chart_near_two_pi_is_named(tmp_path, build):
    """A ball_exp joint with a spring keeps its exponential coordinates (no re-parameterisation
    at |θ| = π), and they are singular at |θ| = 2π: an outside reviewer's run ended in "the state
    became non-finite" with the generic advice. Watched now as the kept Euler charts are: the
    error names the joint and its singularity, and a run that gets near warns."""
    from scleron.simulate.charts import exp_det, kept_charts
    path = tmp_path / "kept_exp.yaml"
    path.write_text(SPINNER.replace("xyz: [0, 0, 1]}", "xyz: [0, 0, 1], stiffness: 1e-9}")
                    .replace("[0.2, -0.1, 0.3]", "[0.0, 0.0, 3.0]")
                    .replace("[1.0, 2.5, 3.0]", "[0.3, 0.2, 5.0]"))
    model = scleron.load_model(str(path))
    assert [(c.name, c.start, c.chart) for c in kept_charts(model)] == [("ball", 0, "exp")]
    assert exp_det([0, 0, 0]) == 1.0 and exp_det([0, 0, 2 * math.pi]) < 1e-30
    assert exp_det([0, 0, math.pi]) == pytest.approx(4 / math.pi ** 2)
    with pytest.raises(SimulationError, match=r"non-finite at t = .*: joint 'ball' came near "
                                              r"\|θ\| = 2π, where its exponential coordinates "
                                              r"are singular \(det S = 2\(1 - cos θ\)/θ² = "):
        simulate(model, 1.0, 1e-3, out_dir=build, progress=False)
    with pytest.warns(scleron.SimulationWarning, match=r"joint 'ball' came near \|θ\| = 2π.*a "
                                                       r"spring, an armature or a constant force"):
        simulate(model, 0.4, 1e-3, out_dir=build, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # away from it: no warning
        simulate(model, 0.1, 1e-3, out_dir=build, progress=False)
