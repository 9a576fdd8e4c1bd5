"""scleron.simulate: integrate a model's generated dynamics in time.

    traj = scleron.simulate("robot.yaml", duration=2.0, dt=1e-3)        # RK4, zero torque
    traj.t, traj.q, traj.qd, traj.energy, traj.switches, traj.charts

and on the command line `scleron simulate MODEL --duration T --dt H [...]` (add_parser /
cmd_simulate). See docs/simulation.md.

The state is (q, q̇) in the model's minimal coordinates; accelerations come from the generated
forward dynamics (one compiled variant per combination of Euler charts visited). Three integrators:
classic RK4, semi-implicit (symplectic) Euler and adaptive Dormand–Prince RK45 with error control.

Coordinate charts (Sueda §2.5.5, §2.5.8):

* spherical and free joints written in one of the 12 Euler charts switch chart after a step in
  which |det S| of their chart fell below `switch_threshold`. The new chart is the one with the
  largest |det S| at the current rotation (always ≥ sqrt(2/3), so there is no chattering); q comes
  from Table 3 (charts.q_from_R) and q̇ from eq. 2.40 (S_new q̇_new = S_old q̇, what
  charts.switch_chart computes, here without its symbolic derivation), which keep R and the
  body (hence world) angular velocity. The generated code is specialised per chart, so each
  combination of charts gets its own generated module (a copy of the model with the joints'
  `chart` changed), generated when first visited and cached by content hash.
* the exp-coordinate ball joint reparameterises when ‖q‖ > `exp_limit` (π): q ← (1 − 2π/‖q‖) q,
  the same rotation, and q̇ ← S(q_new)⁻¹ S(q) q̇, the same angular velocity (Grassia).

Every switch is recorded (time, joint, old → new).
"""
import argparse
import copy
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import BuildError, ModelError

INTEGRATORS = ("rk4", "semi-implicit", "rk45")
DEFAULT_SWITCH_THRESHOLD = 0.2      # |det S| below which an Euler chart is switched
EXP_LIMIT = math.pi                 # ‖q‖ above which an exp-coordinate ball joint is reparameterised
MAX_STEPS = 100_000_000
# chart "ABC": det S = ±cos q2 (Tait-Bryan, A != C) or -sin q2 (proper Euler, A == C), Sueda Table 3
_TRIG = {True: math.sin, False: math.cos}


class SimulationError(RuntimeError):
    """The integration cannot go on (non-finite state, step-size underflow, a jump over a singularity)."""


# ---------------------------------------------------------------------------------------------------
# results

@dataclass
class Switch:
    """One change of coordinates: at `time`, joint `joint` went from chart `old` to chart `new`
    (for a ball_exp joint old and new are "exp": q was replaced by (1 - 2π/‖q‖) q)."""
    time: float
    joint: str
    old: str
    new: str
    step: int = 0

    def __str__(self):
        return f"t = {self.time:.6g} s: {self.joint} {self.old} -> {self.new}"


@dataclass
class Trajectory:
    """A simulated trajectory, one row per recorded step.

    t (N,), q (N, nq), qd (N, nv) in the charts current at each sample (charts (N, J), the chart of
    each joint in chart_joints), energy = kinetic + potential (N,) in J, switches (list of Switch).
    """
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    energy: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    switches: list
    charts: np.ndarray
    chart_joints: list
    joint_names: list = field(default_factory=list)
    coordinate_names: list = field(default_factory=list)
    model_name: str = ""
    integrator: str = ""
    dt: float = 0.0
    steps: int = 0                  # accepted steps
    rejected: int = 0               # rejected RK45 steps
    wall_time: float = 0.0

    @property
    def energy_drift(self):
        """max |E(t) - E(0)| relative to max(|E(0)|, max kinetic energy)."""
        if self.energy.size == 0:
            return 0.0
        scale = max(abs(float(self.energy[0])), float(np.max(np.abs(self.kinetic))), 1e-300)
        return float(np.max(np.abs(self.energy - self.energy[0]))) / scale

    def save(self, path):
        """Write the trajectory to a .npz file (numbers and unicode strings: no pickle needed)."""
        def strings(xs):
            return np.array(list(xs), dtype=str) if len(xs) else np.zeros(0, dtype="<U1")
        sw = self.switches
        with open(path, "wb") as fh:
            np.savez(fh, t=self.t, q=self.q, qd=self.qd, energy=self.energy, kinetic=self.kinetic,
                     potential=self.potential, charts=self.charts,
                     chart_joints=strings(self.chart_joints), joint_names=strings(self.joint_names),
                     coordinate_names=strings(self.coordinate_names),
                     switch_time=np.array([s.time for s in sw], dtype=float),
                     switch_step=np.array([s.step for s in sw], dtype=np.int64),
                     switch_joint=strings([s.joint for s in sw]), switch_old=strings([s.old for s in sw]),
                     switch_new=strings([s.new for s in sw]), model_name=np.array(self.model_name),
                     integrator=np.array(self.integrator), dt=np.array(self.dt),
                     steps=np.array(self.steps), rejected=np.array(self.rejected))
        return path

    @classmethod
    def load(cls, path):
        with np.load(path, allow_pickle=False) as z:
            sw = [Switch(float(t), str(j), str(o), str(n), int(k)) for t, j, o, n, k in
                  zip(z["switch_time"], z["switch_joint"], z["switch_old"], z["switch_new"],
                      z["switch_step"])]
            return cls(z["t"], z["q"], z["qd"], z["energy"], z["kinetic"], z["potential"], sw,
                       z["charts"], [str(x) for x in z["chart_joints"]],
                       [str(x) for x in z["joint_names"]], [str(x) for x in z["coordinate_names"]],
                       str(z["model_name"]), str(z["integrator"]), float(z["dt"]), int(z["steps"]),
                       int(z["rejected"]))


# ---------------------------------------------------------------------------------------------------
# kinematics and energy

def _joint_prop(joint, key, default):
    """A joint property that may be an attribute (stiffness, rest, damping) or a parameter."""
    value = getattr(joint, key, None)
    if value is None and isinstance(getattr(joint, "params", None), dict):
        value = joint.params.get(key)
    return default if value is None else value


def _per_coordinate(value, dof):
    a = np.asarray(value, dtype=float).reshape(-1)
    if a.size == 1:
        return np.full(dof, float(a[0]))
    if a.size != dof:
        raise ValueError(f"expected 1 or {dof} numbers, got {a.size}")
    return a


def elementary(axis, angle):
    """Active rotation by `angle` about the coordinate axis 'X', 'Y' or 'Z' (numpy)."""
    c, s = math.cos(angle), math.sin(angle)
    if axis == "X":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == "Y":
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def euler_R(chart, q):
    """R = R_A(q1) R_B(q2) R_C(q3) of chart "ABC" (the convention of joints.charts), numerically."""
    return elementary(chart[0], q[0]) @ elementary(chart[1], q[1]) @ elementary(chart[2], q[2])


_UNIT = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}


def euler_S(chart, q):
    """The body-frame S (3x3, omega = S q̇) of chart "ABC": columns (R_B R_C)ᵀ e_A, R_Cᵀ e_B, e_C.
    The same matrix as charts.S3_num, without deriving the chart symbolically."""
    RC = elementary(chart[2], q[2])
    RBC = elementary(chart[1], q[1]) @ RC
    return np.column_stack([RBC.T @ _UNIT[chart[0]], RC.T @ _UNIT[chart[1]], _UNIT[chart[2]]])


def exp_R(q):
    """R = exp([q]) (Rodrigues, series-guarded near q = 0)."""
    q = np.asarray(q, dtype=float)
    x = float(q @ q)
    if x < 1e-8:
        a, b = 1.0 - x / 6.0, 0.5 - x / 24.0
    else:
        th = math.sqrt(x)
        a, b = math.sin(th) / th, (1.0 - math.cos(th)) / x
    K = np.array([[0.0, -q[2], q[1]], [q[2], 0.0, -q[0]], [-q[1], q[0], 0.0]])
    return np.eye(3) + a * K + b * (K @ K)


def _elementary_batch(axis, a):
    """(N, 3, 3) active rotations about a coordinate axis by the angles a (N,)."""
    c, s = np.cos(a), np.sin(a)
    o, z = np.ones_like(a), np.zeros_like(a)
    if axis == "X":
        M = [[o, z, z], [z, c, -s], [z, s, c]]
    elif axis == "Y":
        M = [[c, z, s], [z, o, z], [-s, z, c]]
    else:
        M = [[c, -s, z], [s, c, z], [z, z, o]]
    return np.transpose(np.array(M), (2, 0, 1))


def euler_R_batch(chart, Q):
    """euler_R for N coordinate triples Q (N, 3): (N, 3, 3)."""
    return (_elementary_batch(chart[0], Q[:, 0]) @ _elementary_batch(chart[1], Q[:, 1])
            @ _elementary_batch(chart[2], Q[:, 2]))


def exp_R_batch(Q):
    """exp_R for N rotation vectors Q (N, 3): (N, 3, 3)."""
    x = np.einsum("ni,ni->n", Q, Q)
    small = x < 1e-8
    th = np.sqrt(np.where(small, 1.0, x))
    a = np.where(small, 1.0 - x / 6.0, np.sin(th) / th)
    b = np.where(small, 0.5 - x / 24.0, (1.0 - np.cos(th)) / np.where(small, 1.0, x))
    z = np.zeros_like(x)
    K = np.transpose(np.array([[z, -Q[:, 2], Q[:, 1]], [Q[:, 2], z, -Q[:, 0]],
                               [-Q[:, 1], Q[:, 0], z]]), (2, 0, 1))
    return np.eye(3) + a[:, None, None] * K + b[:, None, None] * (K @ K)


def joint_transform_function(jm):
    """A fast numeric (R (3x3), t (3,)) = Q(q) of a JointModel: the same expressions that
    JointModel.numeric("G", q) evaluates, lambdified once (numeric() rebuilds its sympy matrix on
    every call, about a millisecond)."""
    import sympy as sp

    from .joints.special import GUARDED
    mods = [{c.__name__: c.numeric for c in GUARDED.values()}, "numpy"]
    fR = sp.lambdify(jm.q, jm.R, modules=mods)
    ft = sp.lambdify(jm.q, jm.t, modules=mods)

    def Q(q):
        return np.asarray(fR(*q), dtype=float), np.asarray(ft(*q), dtype=float).reshape(3)
    return Q


def _lambdified_batch(jm):
    """Q(q) of a JointModel for N coordinate rows at once: each entry of R and t lambdified on
    numpy arrays (entries with the scalar series-guarded exp functions go sample by sample)."""
    import sympy as sp

    from .joints.special import GUARDED
    exprs = list(jm.R) + list(jm.t)
    if any(e.has(*GUARDED.values()) for e in exprs):       # our own sympy matrices, no text
        single = joint_transform_function(jm)

        def by_sample(Q):
            pairs = [single(q) for q in Q]
            return (np.array([p[0] for p in pairs]).reshape(-1, 3, 3),
                    np.array([p[1] for p in pairs]).reshape(-1, 3))
        return by_sample
    fns = [sp.lambdify(jm.q, e, modules="numpy") for e in exprs]

    def batch(Q):
        n = Q.shape[0]
        cols = [Q[:, k] for k in range(Q.shape[1])]
        vals = np.empty((12, n))
        for i, fn in enumerate(fns):
            vals[i] = fn(*cols)
        return vals[:9].T.reshape(n, 3, 3), vals[9:].T.copy()
    return batch


def joint_transform(joint):
    """Q(q) of a model joint for N coordinate rows: Q (N, dof) -> (R (N, 3, 3), t (N, 3)).

    Spherical, free and ball_exp joints are written out numerically (their sympy derivation takes
    seconds per chart, and a cached re-run should not pay it); every other type is lambdified from
    joints.joint_model(type, params). tests check both against JointModel.numeric("G")."""
    if joint.type == "spherical":
        chart = joint.params.get("chart", "XYZ")
        return lambda Q: (euler_R_batch(chart, Q), np.zeros((Q.shape[0], 3)))
    if joint.type == "free":
        chart = joint.params.get("chart", "XYZ")
        return lambda Q: (euler_R_batch(chart, Q[:, 3:]), np.array(Q[:, :3], dtype=float))
    if joint.type == "ball_exp":
        return lambda Q: (exp_R_batch(Q), np.zeros((Q.shape[0], 3)))
    from .joints import joint_model
    return _lambdified_batch(joint_model(joint.type, joint.params))


class EnergyModel:
    """Total energy of model states: ½ q̇ᵀ M(q) q̇ + gravity potential + joint springs.

    Potential of gravity: -Σ m_i gᵀ p_com,i with p_com,i in world coordinates from forward
    kinematics (joint origin ∘ Q(q_i) composed along the parents). Springs: ½ Σ k (q - rest)² for
    joints that carry a `stiffness` (attribute or parameter; `rest` defaults to 0). All methods
    take one state or N states (rows) at once.
    """

    CHUNK = 4096                    # states per batched mass-matrix call

    def __init__(self, model):
        self.gravity = np.asarray(model.gravity, dtype=float)
        self.bodies = []
        k = 0
        for i, (body, j) in enumerate(zip(model.bodies, model.joints)):
            d = j.dof
            stiff = _per_coordinate(_joint_prop(j, "stiffness", 0.0), d) if d else np.zeros(0)
            rest = _per_coordinate(_joint_prop(j, "rest", 0.0), d) if d else np.zeros(0)
            self.bodies.append({
                "parent": model.parent_index(i), "Ro": np.asarray(j.origin.rotation, dtype=float),
                "to": np.asarray(j.origin.translation, dtype=float), "Q": joint_transform(j),
                "mass": float(body.inertia.mass), "com": np.asarray(body.inertia.com, dtype=float),
                "slice": slice(k, k + d), "stiffness": stiff, "rest": rest})
            k += d
        self.sprung = any(np.any(b["stiffness"]) for b in self.bodies)

    def world_poses(self, Q):
        """[(R (N, 3, 3), t (N, 3))] of every body frame in world coordinates, for states Q (N, nq)
        (or [(R, t)] for one state q)."""
        single = np.ndim(Q) == 1
        Q = np.atleast_2d(np.asarray(Q, dtype=float))
        poses = []
        for b in self.bodies:
            Rq, tq = b["Q"](Q[:, b["slice"]])
            t_local = tq @ b["Ro"].T + b["to"]                        # origin * Q: Ro tq + to
            if b["parent"] < 0:
                poses.append((b["Ro"] @ Rq, t_local))
            else:
                Rp, tp = poses[b["parent"]]
                poses.append((Rp @ b["Ro"] @ Rq, np.einsum("nij,nj->ni", Rp, t_local) + tp))
        return [(R[0], t[0]) for R, t in poses] if single else poses

    def potential(self, Q):
        single = np.ndim(Q) == 1
        Q = np.atleast_2d(np.asarray(Q, dtype=float))
        pe = np.zeros(Q.shape[0])
        for b, (R, t) in zip(self.bodies, self.world_poses(Q)):
            com = R @ b["com"] + t
            pe -= b["mass"] * (com @ self.gravity)
            if b["stiffness"].size:
                e = Q[:, b["slice"]] - b["rest"]
                pe += 0.5 * (e * e) @ b["stiffness"]
        return float(pe[0]) if single else pe

    def kinetic(self, dyn, Q, QD):
        """½ q̇ᵀ M(q) q̇ with M from the generated mass matrix `dyn` (of the charts of Q)."""
        if np.ndim(Q) == 1:
            QD = np.asarray(QD, dtype=float)
            return 0.5 * float(QD @ dyn.mass_matrix(Q) @ QD)
        Q, QD = np.asarray(Q, dtype=float), np.asarray(QD, dtype=float)
        out = np.empty(Q.shape[0])
        for a in range(0, Q.shape[0], self.CHUNK):
            M = dyn.mass_matrix(np.ascontiguousarray(Q[a:a + self.CHUNK]))
            v = QD[a:a + self.CHUNK]
            out[a:a + self.CHUNK] = 0.5 * np.einsum("ni,nij,nj->n", v, M, v)
        return out


# ---------------------------------------------------------------------------------------------------
# coordinate switching

@dataclass
class _Switchable:
    joint: int          # index in model.joints
    name: str
    kind: str           # "euler" or "exp"
    start: int          # index of the first rotational coordinate in q
    chart: str          # current chart ("exp" for ball_exp)


def _switchables(model):
    out, k = [], 0
    for i, j in enumerate(model.joints):
        sprung = np.any(np.asarray(_joint_prop(j, "stiffness", 0.0), dtype=float) != 0)
        if not sprung:      # a spring is written in its chart: switching would change the physics
            if j.type in ("spherical", "free"):
                out.append(_Switchable(i, j.name, "euler", k + (3 if j.type == "free" else 0),
                                       j.params.get("chart", "XYZ")))
            elif j.type == "ball_exp":
                out.append(_Switchable(i, j.name, "exp", k, "exp"))
        k += j.dof
    return out


def chart_det(chart, q2):
    """sin q2 (proper Euler chart ABA) or cos q2 (Tait-Bryan): ±det S of the chart (Sueda Table 3).
    |det S| < threshold triggers a switch; a change of sign within one step is a jump over the
    singularity."""
    return _TRIG[chart[0] == chart[2]](q2)


def best_chart(R):
    """The Euler chart with the largest |det S| at rotation R, and its coordinates."""
    from .joints import charts
    best = None
    for c in charts.CHARTS:
        qc = charts.q_from_R(c, R)
        d = abs(chart_det(c, qc[1]))
        if best is None or d > best[0] + 1e-12:
            best = (d, c, qc)
    return best[1], best[2]


def switch_euler(old, q3, qd3):
    """(new chart, q, q̇) of a spherical state (chart `old`, angles q3, rates qd3) in the best chart.

    q from Sueda's Table 3 (charts.q_from_R), q̇ from eq. 2.40: S_new q̇_new = S_old q̇_old, the same
    body angular velocity (charts.switch_chart computes the same; tests compare them)."""
    q3, qd3 = np.asarray(q3, dtype=float), np.asarray(qd3, dtype=float)
    new, q_new = best_chart(euler_R(old, q3))
    qd_new = np.linalg.solve(euler_S(new, q_new), euler_S(old, q3) @ qd3)
    return new, q_new, qd_new


def reparameterise_exp(q3, qd3):
    """Grassia's reparameterisation of exponential coordinates: the same rotation with
    ‖q‖ replaced by 2π - ‖q‖ (q ← (1 - 2π/‖q‖) q), and the same angular velocity S(q) q̇."""
    from .joints import joint_model
    jm = joint_model("ball_exp")
    q3 = np.asarray(q3, dtype=float)
    theta = float(np.linalg.norm(q3))
    q_new = (1.0 - 2.0 * math.pi / theta) * q3
    S_old = jm.numeric("S", q3)[:3]
    S_new = jm.numeric("S", q_new)[:3]
    qd_new = np.linalg.solve(S_new, S_old @ np.asarray(qd3, dtype=float))
    return q_new, qd_new


# ---------------------------------------------------------------------------------------------------
# generated dynamics, one variant per chart combination

def default_build_dir(name):
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "scleron", name)


class _Variants:
    def __init__(self, model, build_dir, euler, progress):
        from .codegen.render import c_identifier
        self.model = model
        self.base = c_identifier(model.name)
        self.build_dir = build_dir
        self.euler = euler
        self.progress = progress
        self.modules = {}
        self.reports = {}

    def name(self, key):
        """base_XYZ_ZYX...: the C name and folder of a chart combination (hashed when long, so
        that two combinations never share a folder)."""
        if not key:
            return self.base
        full = "_".join([self.base, *key])
        if len(full) <= 64:
            return full
        import hashlib
        return f"{self.base[:48]}_{hashlib.sha256(full.encode()).hexdigest()[:12]}"

    def model_for(self, key):
        if not key:
            return self.model
        m = copy.deepcopy(self.model)
        for sw, chart in zip(self.euler, key):
            m.joints[sw.joint].params = dict(m.joints[sw.joint].params, chart=chart)
        return m

    def get(self, key):
        mod = self.modules.get(key)
        if mod is None:
            from .pipeline import Report, generate
            name = self.name(key)
            self.progress.note(f"generating dynamics {name} ...")
            m = self.model_for(key)
            report = Report(name, m.nv)
            mod = generate(m, os.path.join(self.build_dir, name), name, report=report)
            self.modules[key] = mod
            self.reports[key] = report
        return mod


# ---------------------------------------------------------------------------------------------------
# progress bar

class _Progress:
    """A one-line progress bar on stderr, redrawn at most 10 times a second; silent unless enabled
    and stderr is a terminal."""

    def __init__(self, total, enabled=True, stream=None):
        self.stream = stream or sys.stderr
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.enabled = bool(enabled) and tty
        self.total = total
        self.last = 0.0
        self.drawn = False
        self.t0 = time.perf_counter()

    def start(self):
        """The clock of the time estimate starts now (after the first generation)."""
        self.t0 = time.perf_counter()

    def note(self, text):
        if self.enabled:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
            self.drawn = True

    def update(self, t, extra="", force=False):
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        frac = min(1.0, max(0.0, t / self.total)) if self.total > 0 else 1.0
        width = 30
        fill = int(round(frac * width))
        eta = f"{(now - self.t0) * (1 - frac) / frac:.1f} s" if frac >= 0.01 else "--"
        self.stream.write(f"\r\033[K[{'#' * fill}{'.' * (width - fill)}] {100 * frac:5.1f}%  "
                          f"t = {t:.4g}/{self.total:.4g} s  {extra}  eta {eta}")
        self.stream.flush()
        self.drawn = True

    def close(self):
        if self.enabled and self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()


# ---------------------------------------------------------------------------------------------------
# the integrators

# Dormand-Prince 5(4) (Hairer, Nørsett & Wanner, Table 5.2)
_DP_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_DP_A = ((),
         (1 / 5,),
         (3 / 40, 9 / 40),
         (44 / 45, -56 / 15, 32 / 9),
         (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
         (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
         (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_DP_B5 = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
_DP_B4 = np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])
_DP_E = _DP_B5 - _DP_B4


class _Simulator:
    def __init__(self, model, *, build_dir, integrator, dt, duration, q0, qd0, tau, rtol, atol,
                 switch_threshold, exp_limit, record_every, progress):
        self.model = model
        self.nv = model.nv
        self.integrator = integrator
        self.dt, self.duration = dt, duration
        self.rtol, self.atol = rtol, atol
        self.threshold, self.exp_limit = switch_threshold, exp_limit
        self.record_every = record_every
        self.progress = _Progress(duration, progress)
        sw = _switchables(model)
        self.euler = [s for s in sw if s.kind == "euler"]
        self.exp = [s for s in sw if s.kind == "exp"]
        self.variants = _Variants(model, build_dir, self.euler, self.progress)
        self.tau = tau
        self.q, self.qd = q0.copy(), qd0.copy()
        self.switches = []
        self.fd_calls = 0
        self.rec = {"t": [], "q": [], "qd": [], "charts": []}
        self.key = tuple(s.chart for s in self.euler)
        self.dyn = self.variants.get(self.key)

    # -- dynamics --------------------------------------------------------------------------------
    def tau_at(self, t, q, qd):
        if callable(self.tau):
            return np.asarray(self.tau(t, q, qd), dtype=float)
        return self.tau

    def qdd(self, t, q, qd):
        self.fd_calls += 1
        return self.dyn.forward_dynamics(q, qd, self.tau_at(t, q, qd))

    # -- charts ----------------------------------------------------------------------------------
    def dets(self, q):
        return [chart_det(s.chart, q[s.start + 1]) for s in self.euler]

    def crossed(self, q_old, q_new):
        """The first Euler joint whose det S changed sign during a step (a jump over its
        singularity), or None."""
        for s, a, b in zip(self.euler, self.dets(q_old), self.dets(q_new)):
            if a * b < 0:
                return s
        return None

    def switch(self, t, step):
        """Switch every joint that needs it; True if anything changed."""
        changed = False
        for s, d in zip(self.euler, self.dets(self.q)):
            if abs(d) < self.threshold:
                sl = slice(s.start, s.start + 3)
                new, qn, qdn = switch_euler(s.chart, self.q[sl], self.qd[sl])
                self.switches.append(Switch(t, s.name, s.chart, new, step))
                self.q[sl], self.qd[sl] = qn, qdn
                s.chart = new
                changed = True
        for s in self.exp:
            sl = slice(s.start, s.start + 3)
            if np.linalg.norm(self.q[sl]) > self.exp_limit:
                qn, qdn = reparameterise_exp(self.q[sl], self.qd[sl])
                self.switches.append(Switch(t, s.name, "exp", "exp", step))
                self.q[sl], self.qd[sl] = qn, qdn
                changed = True
        if changed:
            self.key = tuple(s.chart for s in self.euler)
            self.dyn = self.variants.get(self.key)
        return changed

    # -- recording -------------------------------------------------------------------------------
    def record(self, t):
        r = self.rec
        r["t"].append(t)
        r["q"].append(self.q.copy())
        r["qd"].append(self.qd.copy())
        r["charts"].append(self.key)

    def energies(self, Q, QD):
        """Kinetic and potential energy of the recorded states, batched per chart combination
        (the mass matrix and the forward kinematics are those of each state's charts)."""
        keys = self.rec["charts"]
        ke, pe = np.empty(len(keys)), np.empty(len(keys))
        for key in dict.fromkeys(keys):
            idx = np.array([i for i, k in enumerate(keys) if k == key], dtype=np.intp)
            em = EnergyModel(self.variants.model_for(key))
            ke[idx] = em.kinetic(self.variants.get(key), Q[idx], QD[idx])
            pe[idx] = em.potential(Q[idx])
        return ke, pe

    def check_finite(self, t):
        if not np.isfinite(self.q.sum() + self.qd.sum()):
            raise SimulationError(f"the state became non-finite at t = {t:.6g} s "
                                  f"(a smaller --dt or rk45 may help)")

    # -- steps -----------------------------------------------------------------------------------
    def step_rk4(self, t, h):
        q, v = self.q, self.qd
        a1 = self.qdd(t, q, v)
        q2, v2 = q + 0.5 * h * v, v + 0.5 * h * a1
        a2 = self.qdd(t + 0.5 * h, q2, v2)
        q3, v3 = q + 0.5 * h * v2, v + 0.5 * h * a2
        a3 = self.qdd(t + 0.5 * h, q3, v3)
        q4, v4 = q + h * v3, v + h * a3
        a4 = self.qdd(t + h, q4, v4)
        return (q + (h / 6.0) * (v + 2.0 * v2 + 2.0 * v3 + v4),
                v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4))

    def step_euler(self, t, h):
        v = self.qd + h * self.qdd(t, self.q, self.qd)
        return self.q + h * v, v

    def run_fixed(self):
        step_fn = self.step_rk4 if self.integrator == "rk4" else self.step_euler
        n = max(1, int(math.ceil(self.duration / self.dt - 1e-9)))
        t = 0.0
        for k in range(1, n + 1):
            t_next = self.duration if k == n else k * self.dt
            q_new, qd_new = step_fn(t, t_next - t)
            s = self.crossed(self.q, q_new)
            if s is not None:
                raise SimulationError(
                    f"joint '{s.name}' jumped over the singularity of chart {s.chart} in one step at "
                    f"t = {t:.6g} s: use a smaller --dt (|angular velocity| * dt must stay below the "
                    f"switch threshold {self.threshold:g}) or rk45")
            self.q, self.qd = q_new, qd_new
            t = t_next
            self.check_finite(t)
            self.switch(t, k)
            if k % self.record_every == 0 or k == n:
                self.record(t)
            self.progress.update(t, f"switches {len(self.switches)}")
        return n, 0

    def run_rk45(self):
        n = self.nv
        T = self.duration
        t = 0.0
        h = min(self.dt, T)
        y = np.concatenate([self.q, self.qd])
        f0 = np.concatenate([self.qd, self.qdd(t, self.q, self.qd)])
        K = np.empty((7, 2 * n))
        accepted = rejected = 0
        fac_max = 5.0
        while t < T * (1 - 1e-15) and T - t > 1e-15 * max(1.0, T):
            h = min(h, self.dt, T - t)
            if h < 1e-14 * max(1.0, abs(t)):
                raise SimulationError(f"step size underflow at t = {t:.6g} s (the tolerances "
                                      f"cannot be met; try a larger --rtol/--atol)")
            K[0] = f0
            for i in range(1, 7):
                yi = y + h * (np.asarray(_DP_A[i]) @ K[:i])
                K[i, :n] = yi[n:]
                K[i, n:] = self.qdd(t + _DP_C[i] * h, yi[:n], yi[n:])
            y_new = y + h * (_DP_B5 @ K)          # the 7th stage is at y_new (FSAL)
            err_vec = h * (_DP_E @ K)
            scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(y_new))
            err = float(np.sqrt(np.mean((err_vec / scale) ** 2))) if n else 0.0
            if not np.isfinite(err):
                err = 1e10
            if err <= 1.0 and self.crossed(y[:n], y_new[:n]) is None:
                t = t + h if T - (t + h) > 1e-15 * max(1.0, T) else T
                accepted += 1
                self.q, self.qd = y_new[:n].copy(), y_new[n:].copy()
                self.check_finite(t)
                if self.switch(t, accepted):
                    y = np.concatenate([self.q, self.qd])
                    f0 = np.concatenate([self.qd, self.qdd(t, self.q, self.qd)])
                else:
                    y = y_new
                    f0 = K[6].copy()
                if accepted % self.record_every == 0 or t >= T:
                    self.record(t)
                self.progress.update(t, f"h = {h:.2e}  switches {len(self.switches)}")
                grow = min(fac_max, max(0.2, 0.9 * err ** -0.2)) if err > 0 else fac_max
                h *= grow
                fac_max = 5.0
            else:
                rejected += 1
                h *= 0.5 if err <= 1.0 else max(0.2, 0.9 * err ** -0.2)
                fac_max = 1.0
        return accepted, rejected

    def run(self):
        t_start = time.perf_counter()
        try:
            self.switch(0.0, 0)
            self.record(0.0)
            self.progress.start()
            if self.integrator == "rk45":
                steps, rejected = self.run_rk45()
            else:
                steps, rejected = self.run_fixed()
            self.progress.update(self.duration, f"switches {len(self.switches)}", force=True)
        finally:
            self.progress.close()
        r = self.rec
        Q, QD = np.array(r["q"]).reshape(-1, self.nv), np.array(r["qd"]).reshape(-1, self.nv)
        ke, pe = self.energies(Q, QD)
        charts = (np.array(r["charts"], dtype="<U3") if self.euler
                  else np.zeros((len(r["t"]), 0), dtype="<U3"))
        coords = []
        for j in self.model.joints:
            coords += [j.name] if j.dof == 1 else [f"{j.name}[{k}]" for k in range(j.dof)]
        return Trajectory(np.array(r["t"]), Q, QD, ke + pe, ke, pe,
                          self.switches, charts, [s.name for s in self.euler],
                          [j.name for j in self.model.joints], coords, self.model.name,
                          self.integrator, self.dt, steps, rejected, time.perf_counter() - t_start)


# ---------------------------------------------------------------------------------------------------
# the public function

def _vector(value, n, what):
    try:
        a = np.array(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, got {value!r}") from None
    if a.size == 1 and n != 1 and what == "tau":
        a = np.full(n, float(a[0]))
    if a.size != n:
        raise ValueError(f"{what} must have nv = {n} entries, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be finite")
    return a


def _positive(value, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return v


def require_matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise SimulationError("plotting needs matplotlib: pip install matplotlib") from None


def simulate(model_or_path, duration, dt, integrator="rk4", q0=None, qd0=None, tau=None, plot=None,
             output=None, progress=True, out_dir=None, *, rtol=1e-8, atol=1e-10,
             switch_threshold=DEFAULT_SWITCH_THRESHOLD, exp_limit=EXP_LIMIT, record_every=1,
             floating=False):
    """Integrate a model from its initial state and return a Trajectory.

    model_or_path: a Model or a model file (.yaml/.yml/.urdf; floating=True adds a free root to a
    URDF). duration, dt: seconds; dt is the step of rk4 and semi-implicit, and the first and
    largest step of rk45 (whose step is chosen by the error control: rtol, atol). q0, qd0: the
    initial state (default: the model's `initial`, else zeros). tau: constant joint forces (nv
    numbers or one for all; default 0) or a function tau(t, q, qd). plot: write a PNG of the joint
    coordinates and the total energy (needs matplotlib). output: write the trajectory as .npz.
    progress: a progress bar on stderr when it is a terminal. out_dir: where the generated
    dynamics live (one subfolder per chart combination; default ~/.cache/scleron/<name>).
    switch_threshold: |det S| below which an Euler chart is switched; exp_limit: ‖q‖ above which
    a ball_exp joint is reparameterised. record_every: keep every n-th step (and the last).
    """
    if integrator not in INTEGRATORS:
        raise ValueError(f"unknown integrator {integrator!r} (one of {', '.join(INTEGRATORS)})")
    duration = _positive(duration, "duration")
    dt = _positive(dt, "dt")
    if integrator != "rk45" and duration / dt > MAX_STEPS:
        raise ValueError(f"duration / dt = {duration / dt:.3g} steps is more than {MAX_STEPS}")
    rtol, atol = _positive(rtol, "rtol"), _positive(atol, "atol")
    switch_threshold = _positive(switch_threshold, "switch_threshold")
    if switch_threshold >= 0.8:
        raise ValueError("switch_threshold must be below 0.8 (a fresh chart has |det S| >= 0.816)")
    exp_limit = _positive(exp_limit, "exp_limit")
    if not (math.pi <= exp_limit < 2 * math.pi):
        raise ValueError("exp_limit must lie in [pi, 2 pi)")
    if not isinstance(record_every, int) or isinstance(record_every, bool) or record_every < 1:
        raise ValueError(f"record_every must be a positive integer, got {record_every!r}")
    if plot is not None:
        require_matplotlib()
    if isinstance(model_or_path, (str, os.PathLike)):
        from .model import load_model
        model = load_model(model_or_path, **({"floating": True} if floating else {}))
    else:
        model = model_or_path
        if any(j.type == "fixed" for j in model.joints):
            model = model.merged_fixed()
        model.validate()
    nv = model.nv
    q0 = _vector(q0 if q0 is not None else (model.q0 if model.q0 is not None else np.zeros(nv)), nv, "q0")
    qd0 = _vector(qd0 if qd0 is not None else (model.qd0 if model.qd0 is not None else np.zeros(nv)),
                  nv, "qd0")
    if tau is None:
        tau = np.zeros(nv)
    elif not callable(tau):
        tau = _vector(tau, nv, "tau")
    from .codegen.render import c_identifier
    build_dir = out_dir or default_build_dir(c_identifier(model.name) + ("_floating" if floating else ""))
    sim = _Simulator(model, build_dir=build_dir, integrator=integrator, dt=dt, duration=duration,
                     q0=q0, qd0=qd0, tau=tau, rtol=rtol, atol=atol, switch_threshold=switch_threshold,
                     exp_limit=exp_limit, record_every=record_every, progress=progress)
    traj = sim.run()
    if output is not None:
        traj.save(output)
    if plot is not None:
        plot_trajectory(traj, plot)
    return traj


def plot_trajectory(traj, path):
    """A PNG with two panels: the joint coordinates and the total energy (as E(t) - E(0), with
    E(0) in the title) over time; chart switches are marked by dotted vertical lines."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 6.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_q, ax_e = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    names = traj.coordinate_names or [f"q{k}" for k in range(traj.q.shape[1])]
    for k in range(traj.q.shape[1]):
        ax_q.plot(traj.t, traj.q[:, k], lw=1.0, label=names[k])
    ax_q.set_ylabel("joint coordinates q")
    if traj.q.shape[1] <= 12:
        ax_q.legend(fontsize="small", ncol=3 if traj.q.shape[1] > 6 else 2, loc="best")
    ax_q.set_title(f"{traj.model_name}: {traj.integrator}, dt = {traj.dt:g} s, {traj.steps} steps, "
                   f"{len(traj.switches)} chart switches")
    e0 = float(traj.energy[0]) if traj.energy.size else 0.0
    ax_e.plot(traj.t, traj.energy - e0, color="k", lw=1.2, label="total energy - E(0)")
    ax_e.set_ylabel("total energy - E(0) (J)")
    ax_e.set_xlabel("time (s)")
    ax_e.set_title(f"total energy: E(0) = {e0:.10g} J, max relative drift {traj.energy_drift:.2e}",
                   fontsize="medium")
    for i, s in enumerate(traj.switches):
        for ax in (ax_q, ax_e):
            ax.axvline(s.time, color="0.5", ls=":", lw=0.8,
                       label="chart switch" if (i == 0 and ax is ax_e) else None)
    if traj.switches:
        ax_e.legend(fontsize="small", loc="best")
    ax_e.ticklabel_format(axis="y", useOffset=False, style="sci", scilimits=(-3, 4))
    fig.savefig(path, dpi=110)
    return path


# ---------------------------------------------------------------------------------------------------
# command line

def add_parser(subparsers):
    """Adds `scleron simulate` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "simulate", help="integrate the model's dynamics from its initial state",
        description="Integrate the model's generated dynamics from its initial state (zero or "
                    "constant joint torque), switching Euler charts and reparameterising "
                    "exponential coordinates as needed; write the trajectory and a plot.")
    p.add_argument("model", help="model file (.yaml, .yml, .urdf)")
    p.add_argument("--duration", type=float, required=True, metavar="T", help="simulated time (s)")
    p.add_argument("--dt", type=float, required=True, metavar="H",
                   help="time step (s); for rk45 the first and largest step")
    p.add_argument("--integrator", choices=INTEGRATORS, default="rk4", help="default rk4")
    p.add_argument("--rtol", type=float, default=1e-8, help="rk45 relative tolerance (1e-8)")
    p.add_argument("--atol", type=float, default=1e-10, help="rk45 absolute tolerance (1e-10)")
    p.add_argument("--tau", type=float, nargs="+", metavar="X",
                   help="constant joint forces: nv numbers, or one for all (default 0)")
    p.add_argument("--plot", metavar="FILE.png", help="plot coordinates and energy (needs matplotlib)")
    p.add_argument("-o", "--output", metavar="FILE.npz", help="write the trajectory (.npz)")
    p.add_argument("--floating", action="store_true", help="URDF: add a free joint at the root")
    p.add_argument("--build-dir", metavar="DIR",
                   help="folder for the generated dynamics (default ~/.cache/scleron/<name>)")
    p.add_argument("--switch-threshold", type=float, default=DEFAULT_SWITCH_THRESHOLD, metavar="D",
                   help=f"switch an Euler chart when |det S| < D (default {DEFAULT_SWITCH_THRESHOLD})")
    p.add_argument("--every", type=int, default=1, metavar="N", help="record every N-th step")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_simulate)
    return p


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def cmd_simulate(args):
    """Runs `scleron simulate`; errors are one line on stderr and exit status 2."""
    try:
        if args.plot:
            require_matplotlib()
        traj = simulate(args.model, args.duration, args.dt, integrator=args.integrator,
                        tau=args.tau, plot=args.plot, output=args.output,
                        progress=not args.quiet, out_dir=args.build_dir, rtol=args.rtol,
                        atol=args.atol, switch_threshold=args.switch_threshold,
                        record_every=args.every, floating=args.floating)
    except (ModelError, BuildError, SimulationError, ValueError, OSError) as exc:
        print(f"scleron: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    e0 = float(traj.energy[0])
    print(f"{traj.model_name}: nq = nv = {traj.q.shape[1]}, {traj.integrator}, dt = {traj.dt:g} s, "
          f"t = {traj.t[-1]:g} s in {traj.steps} steps"
          + (f" ({traj.rejected} rejected)" if traj.rejected else "")
          + f", {traj.wall_time:.2f} s")
    driven = args.tau is not None and any(x != 0 for x in args.tau)
    print(f"energy: E(0) = {e0:.10g} J, E(end) = {float(traj.energy[-1]):.10g} J, max relative drift "
          f"{traj.energy_drift:.3e}" + (" (tau is not zero: work is done)" if driven else ""))
    print(f"chart switches: {len(traj.switches)}")
    for s in traj.switches[:10]:
        print(f"  {s}")
    if len(traj.switches) > 10:
        print(f"  ... and {len(traj.switches) - 10} more")
    if args.output:
        print(f"wrote {args.output}")
    if args.plot:
        print(f"wrote {args.plot}")
    return 0


def main(argv=None):
    """`python -m scleron.simulate ...` (the same as `scleron simulate ...`)."""
    parser = argparse.ArgumentParser(prog="scleron")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["simulate", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
