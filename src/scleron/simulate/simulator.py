"""The driver: steps an integrator, switches charts after each accepted step, records states."""
import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .charts import (chart_det, crosses_singularity, det_name, kept_charts, reparameterise_exp,
                     switch_euler, switchables)
from .energy import energies
from ..joints.registry import coordinate_unit
from ..model.joint_types import joint_configuration, joint_ranges
from .integrators import (NEEDS_DERIVATIVES, derivative, dopri_step, error_norm, fixed_step,
                          step_factor, velocity_bracket)
from .progress import Progress
from .trajectory import SimulationError, SimulationWarning, Switch, Trajectory
from .variants import Variants

MAX_STEPS = 100_000_000      # steps of a run, fixed (checked before it) or adaptive (rk45)
# What the recorded states of a run may take in memory, bytes: a list entry of each state's q and
# qd arrays, then the stacked arrays and energies, about record_bytes(nq, nv) a state
MAX_RECORD_BYTES = 4e9


# A run whose energy, with nothing doing work on it, rose above E(0) by more than this many
# times its initial scale max(|E(0)|, T(0), |V(0)|) has run away: energy_drift cannot say so,
# a blow-up's kinetic energy being its scale (an outside tester's implicit run, 35.8 J to
# 2.4e24 J, exited with "drift 1.000e+00" and no word). Only rises count (the implicit step
# damps on purpose), and only above 1e-6 of the largest kinetic energy and 1e-12 J (round-off:
# a reviewer's pendulum nudged by 1e-9 rad from E = 0 rose by 4.9e-18 J).
RUNAWAY_RISE = 10.0


def ran_away(traj):
    """Whether a run's energy rose beyond what integration error explains (RUNAWAY_RISE)."""
    if traj.work or traj.energy.size == 0:
        return False
    initial = max(abs(float(traj.energy[0])), float(traj.kinetic[0]), abs(float(traj.potential[0])))
    rise = float(np.max(traj.energy)) - float(traj.energy[0])
    return rise > max(RUNAWAY_RISE * initial, 1e-6 * float(np.max(traj.kinetic)), 1e-12)


def runaway_energy(traj):
    """The warning of a run whose energy ran away."""
    return (f"the energy of this conservative run rose from {float(traj.energy[0]):.6g} J to "
            f"{float(np.max(traj.energy)):.6g} J: the integration is unstable; try a smaller "
            f"dt or rk45")


def record_bytes(nq, nv):
    return 400 + 16 * (nq + nv)


def coordinate_units(dyn, nq):
    """"rad", "m" or "" per coordinate, as the generated module's coordinate descriptions
    (the joint library's meanings) say (joints.registry.coordinate_unit)."""
    texts = list(getattr(dyn, "coordinate_descriptions", []))[:nq]
    units = [coordinate_unit(text) for text in texts]
    return [u if u in ("rad", "m") else "" for u in units] + [""] * (nq - len(units))


def lie_groups(model):
    """(kind, first index in qd) of the joints whose configurations are not vector spaces."""
    out, k = [], 0
    for j in model.joints:
        if j.mimic is not None:             # no coordinates of its own (qd skips it)
            continue
        space = joint_configuration(j.type)
        if space != "vector":
            out.append(("so3" if space == "quaternion" else "se3", k))
        k += j.dof
    return out


@dataclass(frozen=True)
class RangedCoordinate:
    """A coordinate of q its joint holds only in [low, high] (a spline's parameter)."""
    joint: str
    type: str
    name: str
    index: int
    low: float
    high: float

    def left(self, x):
        """How far x lies outside [low, high] (0 inside)."""
        return max(self.low - x, x - self.high, 0.0)


def ranged_coordinates(model):
    """The RangedCoordinate of each coordinate whose joint is valid only in a range."""
    out, k, names = [], 0, model.coordinate_names()
    for j in model.joints:
        if j.mimic is not None:             # no coordinates of its own (q skips it)
            continue
        for i, (low, high) in enumerate(joint_ranges(j.type, j.params) or []):
            out.append(RangedCoordinate(j.name, j.type, names[k + i], k + i, low, high))
        k += j.nq
    return out


class Simulator:
    def __init__(self, model, *, build_dir, integrator, dt, duration, q0, qd0, tau, rtol, atol,
                 switch_threshold, exp_limit, record_every, progress, log=None, name=None):
        self.model = model
        self.nv = model.nv
        self.integrator = integrator
        self.dt, self.duration = dt, duration
        self.rtol, self.atol = rtol, atol
        self.threshold, self.exp_limit = switch_threshold, exp_limit
        self.record_every = record_every
        self.max_records = int(MAX_RECORD_BYTES // record_bytes(model.nq, model.nv))
        self.progress = Progress(duration, progress)
        sw = switchables(model, tau)
        self.euler = [s for s in sw if s.kind == "euler"]
        self.exp = [s for s in sw if s.kind == "exp"]
        self.kept = kept_charts(model, tau)
        self.nearest = {}          # kept chart's joint -> (smallest |det S| met, t, KeptChart)
        self.ranged = ranged_coordinates(model)
        self.outside = {}          # RangedCoordinate -> (t when it first left, farthest value)
        self.variants = Variants(model, build_dir, self.euler, self.progress, log,
                                 derivatives=integrator in NEEDS_DERIVATIVES, name=name)
        self.tau = tau
        self.q, self.qd = q0.copy(), qd0.copy()
        self.manifold = model.nq != model.nv        # quaternion joints: q moves by integrate
        self.groups = lie_groups(model)
        self.bracket = velocity_bracket(self.groups)
        self.switches = []
        self.fd_calls = 0
        self.rec = {"t": [], "q": [], "qd": [], "charts": []}
        self.key = tuple(s.chart for s in self.euler)
        self.dyn = self.variants.get(self.key)

    # -- dynamics --------------------------------------------------------------------------------
    def tau_at(self, t, q, qd):
        """The joint forces at (t, q, qd): the constant, or the user's tau(t, q, qd), which must
        give nv finite numbers (its fault named as its own, not as the step's). An exception it
        raises stops the run as a SimulationError (the states so far kept and written; the
        function's exception is its __cause__)."""
        if not callable(self.tau):
            return self.tau
        try:
            value = self.tau(t, q, qd)
        except Exception as exc:
            raise SimulationError(f"tau(t, q, qd) at t = {t:.6g} s raised "
                                  f"{type(exc).__name__}: {exc}") from exc
        try:
            tau = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise SimulationError(f"tau(t, q, qd) at t = {t:.6g} s did not return numbers: "
                                  f"{exc}") from None
        if tau.shape != (self.nv,):
            raise SimulationError(f"tau(t, q, qd) at t = {t:.6g} s returned shape {tau.shape}, "
                                  f"not ({self.nv},): one force per velocity coordinate")
        if not np.all(np.isfinite(tau)):
            bad = [i for i in range(self.nv) if not math.isfinite(tau[i])]
            raise SimulationError(f"tau(t, q, qd) at t = {t:.6g} s returned {tau[bad[0]]} for "
                                  f"coordinate {bad[0]}"
                                  + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
        return tau

    def qdd(self, t, q, qd):
        """q̈ = M⁻¹ (τ - h) from the generated forward dynamics of the current charts."""
        self.fd_calls += 1
        return self.dyn.forward_dynamics(q, qd, self.tau_at(t, q, qd))

    def force_derivatives(self, t, q, qd, qdd):
        """(τ - ID, ∂ID/∂q, ∂ID/∂q̇, M) at (q, q̇, q̈): the generated inverse dynamics
        and its derivatives (ID(q, q̇, 0) = h; q columns in the tangent space, as advance moves q),
        τ held at its value at (t, q, q̇)."""
        self.fd_calls += 1
        dh_dq, dh_dqd, M = self.dyn.inverse_dynamics_derivatives(q, qd, qdd)
        return self.tau_at(t, q, qd) - self.dyn.inverse_dynamics(q, qd, qdd), dh_dq, dh_dqd, M

    def advance(self, q, dq):
        """q moved by the velocity-times-time dq: on the joints' manifolds (the generated
        integrate) when the model has quaternion joints, else q + dq."""
        return self.dyn.integrate(q, dq, 1.0) if self.manifold else q + dq

    # -- charts ----------------------------------------------------------------------------------
    def dets(self, q):
        return [chart_det(s.chart, q[s.start + 1]) for s in self.euler]

    def crossed(self, q_old, q_new):
        """The first Euler joint whose middle angle passed a zero of its det S during a step (a
        jump over its singularity), or None."""
        for s in self.euler:
            if crosses_singularity(s.chart, q_old[s.start + 1], q_new[s.start + 1]):
                return s
        return None

    def switch(self, t, step):
        """Switch every joint that needs it; True if anything changed."""
        changed = False
        for s, d in zip(self.euler, self.dets(self.q)):
            if abs(d) < self.threshold:
                sl, vl = slice(s.start, s.start + 3), slice(s.v_start, s.v_start + 3)
                new, qn, qdn = switch_euler(s.chart, self.q[sl], self.qd[vl])
                why = f"near gimbal lock: |{det_name(s.chart)}| = {abs(d):.4f} < {self.threshold:g}"
                self.switches.append(Switch(t, s.name, s.chart, new, step, why))
                self.q[sl], self.qd[vl] = qn, qdn
                s.chart = new
                changed = True
        for s in self.exp:
            sl, vl = slice(s.start, s.start + 3), slice(s.v_start, s.v_start + 3)
            theta = float(np.linalg.norm(self.q[sl]))
            if theta > self.exp_limit:
                qn, qdn = reparameterise_exp(self.q[sl], self.qd[vl])
                limit = "π" if self.exp_limit == math.pi else f"{self.exp_limit:.4g}"
                why = (f"|θ| = {theta:.4f} rad > {limit}, "
                       f"now {float(np.linalg.norm(qn)):.4f} rad: the same rotation")
                self.switches.append(Switch(t, s.name, "exp", "exp", step, why))
                self.q[sl], self.qd[vl] = qn, qdn
                changed = True
        if changed:
            self.key = tuple(s.chart for s in self.euler)
            self.dyn = self.variants.get(self.key)
        return changed

    # -- recording -------------------------------------------------------------------------------
    def record(self, t):
        r = self.rec
        if len(r["t"]) >= self.max_records:     # rk45 (fixed steps are checked before the run)
            raise SimulationError(
                f"{len(r['t'])} states recorded by t = {t:.6g} s, about "
                f"{MAX_RECORD_BYTES / 1e9:.0f} GB: keep every n-th step (--every / record_every), "
                "or larger --rtol/--atol")
        r["t"].append(t)
        r["q"].append(self.q.copy())
        r["qd"].append(self.qd.copy())
        r["charts"].append(self.key)

    def energies(self, Q, QD):
        """Kinetic and potential energy of the recorded states, batched per chart combination
        (each state's energies come from the module of its charts)."""
        keys = self.rec["charts"]
        ke, pe = np.empty(len(keys)), np.empty(len(keys))
        for key in dict.fromkeys(keys):
            idx = np.array([i for i, k in enumerate(keys) if k == key], dtype=np.intp)
            ke[idx], pe[idx] = energies(self.variants.get(key), Q[idx], QD[idx])
        return ke, pe

    def check_finite(self, t):
        """SimulationError once the state is not finite (after a step), naming a kept chart's
        singularity where one was met; else notes how near the kept charts came to theirs."""
        for c in self.ranged:
            x = float(self.q[c.index])
            if c.left(x) > 0:                       # (not NaN: the check below says so)
                first, far = self.outside.get(c, (t, x))
                self.outside[c] = (first, max(far, x, key=c.left))
        if not np.isfinite(self.q.sum() + self.qd.sum()):
            near = self.near_singularities()
            raise SimulationError(f"the state became non-finite at t = {t:.6g} s" +
                                  (f": {near}" if near else
                                   " (a smaller --dt, rk45, or the implicit integrator for stiff "
                                   "springs and dampers may help)"))
        for c in self.kept:
            d = c.det(self.q)
            if d < self.nearest.get(c.name, (math.inf,))[0]:
                self.nearest[c.name] = (d, t, c)

    def near_singularities(self):
        """What the kept charts' singularities, and the coordinates that left the range of their
        joint, did to the run, or "" (none came near, none left)."""
        near = [(d, t, c) for d, t, c in self.nearest.values() if d < self.threshold]
        return "; ".join([
            f"joint '{c.name}' came near {c.came_near(d)} at t = {t:.6g} s; {c.why}): the run "
            f"is inaccurate there; a spherical_quat or free_flyer joint has no such point"
            for d, t, c in near] + [
            f"coordinate '{c.name}' of joint '{c.joint}' ({c.type}) left its range "
            f"[{c.low:g}, {c.high:g}] at t = {t:.6g} s (reaching {far:.6g}): outside it the "
            f"joint's motion fades out (S tends to 0, the mass matrix to singular) and the body "
            f"no longer follows the spline; keep the motion inside the range"
            for c, (t, far) in self.outside.items()])

    # -- the loops -------------------------------------------------------------------------------
    def run_fixed(self):
        """rk4, semi-implicit or linearly implicit Euler with the fixed step dt (the last step
        ends at duration)."""
        step = fixed_step(self.integrator, self.groups)
        rhs = self.force_derivatives if self.integrator in NEEDS_DERIVATIVES else self.qdd
        n = max(1, int(math.ceil(self.duration / self.dt - 1e-9)))
        t = 0.0
        for k in range(1, n + 1):
            t_next = self.duration if k == n else k * self.dt
            q_new, qd_new = self.checked_step(step, rhs, t, t_next - t)
            s = self.crossed(self.q, q_new)
            if s is not None:
                raise SimulationError(
                    f"joint '{s.name}' jumped over the singularity of chart {s.chart} in one step "
                    f"at t = {t:.6g} s: use a smaller --dt (|angular velocity| * dt must stay "
                    f"below the switch threshold {self.threshold:g}) or rk45")
            self.q, self.qd = q_new, qd_new
            t = t_next
            self.check_finite(t)
            self.switch(t, k)
            if k % self.record_every == 0 or k == n:
                self.record(t)
            self.done = (k, 0)
            self.progress.update(t, f"switches {len(self.switches)}")
        return n, 0

    def checked_step(self, step, rhs, t, h):
        try:
            return step(rhs, t, self.q, self.qd, h, self.advance, self.bracket)
        except np.linalg.LinAlgError:
            raise SimulationError(f"the implicit step's matrix M + h dh/dqd + h^2 dh/dq is "
                                  f"singular at t = {t:.6g} s (try a smaller --dt)") from None

    def local_state(self):
        """(y, accel, q of y) for Dormand-Prince: y = (q, qd), or with quaternion joints y =
        (dq, qd) with q = integrate(q_now, dq), the step taken in the tangent space at q_now."""
        if not self.manifold:
            return np.concatenate([self.q, self.qd]), self.qdd, lambda y: y[:self.nv]
        base = self.q.copy()

        def q_of(y):
            return self.advance(base, y[:self.nv])
        return (np.concatenate([np.zeros(self.nv), self.qd]),
                lambda t, dq, v: self.qdd(t, self.advance(base, dq), v), q_of)

    def underflow(self, t, y, diverging):
        """The message of a step that shrank to nothing: the tolerances cannot be met (too
        tight), or, where the shortest trial steps miss even tolerances of 1e-6, the state has
        diverged (loose tolerances let unstable steps through: larger ones would make it worse)."""
        if diverging:
            return (f"the state diverged by t = {t:.6g} s "
                    f"(max |q̇| = {np.max(np.abs(y[self.nv:])):.3g}; "
                    "the shortest steps' errors exceed 1e-6): try smaller --rtol/--atol, or "
                    "--integrator implicit for stiff springs")
        return (f"step size underflow at t = {t:.6g} s (the tolerances cannot be met; try a "
                "larger --rtol/--atol)")

    def run_rk45(self):
        """Dormand-Prince with error control; a step over a chart singularity is rejected too."""
        n, T = self.nv, self.duration
        t, h = 0.0, min(self.dt, T)
        y, accel, q_of = self.local_state()
        f0 = derivative(accel, t, y, n, self.bracket)
        accepted = rejected = 0
        diverging = False
        fac_max = 5.0
        # at least one step, however short the duration (as the fixed-step integrators)
        while t < T and (accepted == 0 or T - t > 1e-15 * max(1.0, T)):
            h = min(h, self.dt, T - t)
            if T - (t + h) <= 1e-6 * h:         # reach T now, not after a sliver of rounding
                h = T - t
            if accepted + rejected >= MAX_STEPS:
                raise SimulationError(f"rk45 took {MAX_STEPS} steps by t = {t:.6g} s of {T:g} s "
                                      f"(h = {h:.3g} s): a shorter --duration, or larger "
                                      f"--rtol/--atol")
            if h < 1e-14 * max(1.0, abs(t)) and h < T - t:
                raise SimulationError(self.underflow(t, y, diverging))
            y_new, err_vec, f_new = dopri_step(accel, t, y, f0, h, self.bracket)
            err = error_norm(err_vec, y, y_new, self.rtol, self.atol)
            # even at tolerances of 1e-6, not met: the trial steps blow up, the state diverges
            diverging = error_norm(err_vec, y, y_new, max(self.rtol, 1e-6),
                                   max(self.atol, 1e-6)) > 1
            if err > 1.0 or self.crossed(q_of(y), q_of(y_new)) is not None:
                rejected += 1
                h *= 0.5 if err <= 1.0 else step_factor(err)
                fac_max = 1.0                   # no growth right after a rejection (HNW I, II.4)
                continue
            t = t + h if T - (t + h) > 1e-15 * max(1.0, T) else T
            accepted += 1
            self.q, self.qd = np.array(q_of(y_new)), y_new[n:].copy()
            self.check_finite(t)
            if self.switch(t, accepted):        # new coordinates: restart the FSAL chain
                y, accel, q_of = self.local_state()
                f0 = derivative(accel, t, y, n, self.bracket)
            elif self.manifold:                 # the next step from Omega = 0 (same qdd)
                y, accel, q_of = self.local_state()
                f0 = np.concatenate([self.qd, f_new[n:]])
            else:
                y, f0 = y_new, f_new
            if accepted % self.record_every == 0 or t >= T:
                self.record(t)
            self.done = (accepted, rejected)
            self.progress.update(t, f"h = {h:.2e}  switches {len(self.switches)}")
            h *= step_factor(err, fac_max)
            fac_max = 5.0
        return accepted, rejected

    def run(self):
        """The Trajectory of the whole run. A SimulationError or a Ctrl-C (KeyboardInterrupt)
        along the way carries the states recorded until then as its `trajectory` (None before
        the first)."""
        t_start = time.perf_counter()
        self.done = (0, 0)
        try:
            self.switch(0.0, 0)
            self.record(0.0)
            self.progress.start()
            # a state running off to infinity is caught by check_finite (one error that says
            # when), not announced first by numpy's overflow warnings along the way
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                if self.integrator == "rk45":
                    steps, rejected = self.run_rk45()
                else:
                    steps, rejected = self.run_fixed()
            self.progress.update(self.duration, f"switches {len(self.switches)}", force=True)
        except (SimulationError, KeyboardInterrupt) as exc:
            exc.trajectory = self.partial_trajectory(time.perf_counter() - t_start)
            raise
        finally:
            self.progress.close()
        if self.near_singularities():
            warnings.warn(self.near_singularities(), SimulationWarning, stacklevel=3)
        traj = self.trajectory(steps, rejected, time.perf_counter() - t_start)
        if ran_away(traj):
            warnings.warn(runaway_energy(traj), SimulationWarning, stacklevel=3)
        return traj

    def partial_trajectory(self, wall_time):
        """The states recorded before a run stopped (an interrupt may fall between the lists'
        appends: the whole records only), or None where there are none."""
        r = self.rec
        whole = min(len(r[key]) for key in ("t", "q", "qd", "charts"))
        if whole == 0:
            return None
        for key in ("t", "q", "qd", "charts"):
            del r[key][whole:]
        try:
            return self.trajectory(*self.done, wall_time)
        except Exception:           # (the run's own error is the one to see)
            return None

    def trajectory(self, steps, rejected, wall_time):
        r = self.rec
        Q, QD = np.array(r["q"]).reshape(-1, self.model.nq), np.array(r["qd"]).reshape(-1, self.nv)
        ke, pe = self.energies(Q, QD)
        charts = (np.array(r["charts"], dtype="<U3") if self.euler
                  else np.zeros((len(r["t"]), 0), dtype="<U3"))
        return Trajectory(np.array(r["t"]), Q, QD, ke + pe, ke, pe,
                          self.switches, charts, [s.name for s in self.euler],
                          [j.name for j in self.model.joints], self.model.coordinate_names(),
                          self.model.name, self.integrator, self.dt, steps, rejected, wall_time,
                          coordinate_units=coordinate_units(self.dyn, self.model.nq),
                          build_dir=self.variants.build_dir, work=self.work(),
                          velocity_names=self.model.coordinate_names(velocities=True))

    def work(self):
        """What adds or takes energy (for the summary): the joint forces, the dampers, the
        external wrenches; springs and gravity are in the potential energy."""
        out = []
        if callable(self.tau):
            out.append("tau(t, q, qd) does work")
        elif np.any(self.tau != 0):
            out.append("tau is not zero: work is done")
        dampers = [j.name for j in self.model.joints if j.damping is not None and any(j.damping)]
        if dampers:
            out.append(f"dampers dissipate ({_names(dampers)})")
        wrenches = [b.name for b in self.model.bodies if b.wrench is not None and any(b.wrench)]
        if wrenches:
            out.append(f"external wrenches do work ({_names(wrenches)})")

        return out


def _names(names, shown=3):
    return ", ".join(names[:shown]) + (
        f" and {len(names) - shown} more" if len(names) > shown else "")
