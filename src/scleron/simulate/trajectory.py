"""The result of a simulation: Trajectory (arrays, .npz round trip) and Switch (one change of
coordinates, told in words)."""
import zipfile
import zlib
from dataclasses import dataclass, field

import numpy as np

# what every file written by Trajectory.save holds (later additions are optional on load)
TRAJECTORY_KEYS = ("t", "q", "qd", "energy", "kinetic", "potential", "charts", "chart_joints",
                   "joint_names", "coordinate_names", "switch_time", "switch_step", "switch_joint",
                   "switch_old", "switch_new", "model_name", "integrator", "dt", "steps",
                   "rejected")


class SimulationError(RuntimeError):
    """The integration cannot go on (non-finite state, step-size underflow, a jump over a
    singularity)."""


class SimulationWarning(UserWarning):
    """The run went on, but part of it is inaccurate (a chart that does not switch came near its
    singularity)."""


@dataclass
class Switch:
    """One change of coordinates: at `time`, joint `joint` went from chart `old` to chart `new`
    ("exp" -> "exp" for an exp-coordinate ball joint whose q was replaced by (1 - 2π/‖q‖) q).
    `detail` says why, in words (the det S or ‖q‖ that triggered it)."""
    time: float
    joint: str
    old: str
    new: str
    step: int = 0
    detail: str = ""

    def __str__(self):
        if self.old == "exp":
            what = "exponential coordinates re-parameterised"
        else:
            what = f"Euler chart {self.old} -> {self.new}"
        return (f"t = {self.time:.6g} s: joint {self.joint}: {what}"
                + (f" ({self.detail})" if self.detail else ""))


def _strings(xs):
    return np.array(list(xs), dtype=str) if len(xs) else np.zeros(0, dtype="<U1")


@dataclass
class Trajectory:
    """A simulated trajectory, one row per recorded step.

    t (N,), q (N, nq), qd (N, nv) in the charts current at each sample (charts (N, J), the chart of
    each joint in chart_joints), energy = kinetic + potential (N,) in J, switches (list of Switch).
    coordinate_names: a name per column of q; velocity_names: per column of qd (they differ where
    nq != nv: a quaternion joint has 4 entries of q, 3 of qd).
    coordinate_units: "rad", "m" or "" per coordinate (what the plot groups by); build_dir: the
    folder of the generated dynamics (one subfolder per chart combination). work: what adds or
    takes energy, so that E need not stay constant ("tau is not zero: work is done", "dampers
    dissipate (...)", "external wrenches do work (...)").
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
    coordinate_units: list = field(default_factory=list)
    build_dir: str = ""
    work: list = field(default_factory=list)
    velocity_names: list = field(default_factory=list)     # qd's columns (nv; q's: nq)

    @property
    def energy_drift(self):
        """max |E(t) - E(0)| relative to max(|E(0)|, max kinetic energy)."""
        if self.energy.size == 0:
            return 0.0
        scale = max(abs(float(self.energy[0])), float(np.max(np.abs(self.kinetic))), 1e-300)
        return float(np.max(np.abs(self.energy - self.energy[0]))) / scale

    def save(self, path):
        """Write the trajectory to a .npz file (numbers and unicode strings: no pickle needed)."""
        sw = self.switches
        with open(path, "wb") as fh:
            np.savez(fh, t=self.t, q=self.q, qd=self.qd, energy=self.energy, kinetic=self.kinetic,
                     potential=self.potential, charts=self.charts,
                     chart_joints=_strings(self.chart_joints),
                     joint_names=_strings(self.joint_names),
                     coordinate_names=_strings(self.coordinate_names),
                     coordinate_units=_strings(self.coordinate_units),
                     velocity_names=_strings(self.velocity_names),
                     switch_time=np.array([s.time for s in sw], dtype=float),
                     switch_step=np.array([s.step for s in sw], dtype=np.int64),
                     switch_joint=_strings([s.joint for s in sw]),
                     switch_old=_strings([s.old for s in sw]),
                     switch_new=_strings([s.new for s in sw]),
                     switch_detail=_strings([s.detail for s in sw]),
                     model_name=np.array(self.model_name),
                     integrator=np.array(self.integrator), dt=np.array(self.dt),
                     steps=np.array(self.steps), rejected=np.array(self.rejected),
                     work=_strings(self.work))
        return path

    @classmethod
    def load(cls, path):
        """A trajectory written by save (files from before coordinate_units/switch_detail load too).
        Any other file is a ValueError naming it."""
        with open(path, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":          # every .npz is a zip archive
                raise ValueError(f"{path}: not a trajectory written by scleron simulate (not a "
                                 ".npz file)")
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = [k for k in TRAJECTORY_KEYS if k not in z]
                if missing:
                    raise ValueError(f"{path}: not a trajectory written by scleron simulate (no "
                                     f"{', '.join(missing[:4])})")
                return cls._from_arrays(z)
        except (ValueError, zipfile.BadZipFile, zlib.error, EOFError) as exc:   # (cut or corrupted)
            if isinstance(exc, ValueError) and str(exc).startswith(f"{path}:"):
                raise
            raise ValueError(f"{path}: not a trajectory written by scleron simulate (.npz): "
                             f"{exc}") from None

    @classmethod
    def _from_arrays(cls, z):
        """The Trajectory of the arrays of a saved file."""
        n_sw = len(z["switch_time"])
        details = [str(x) for x in z["switch_detail"]] if "switch_detail" in z else [""] * n_sw
        sw = [Switch(float(t), str(j), str(o), str(n), int(k), d) for t, j, o, n, k, d in
              zip(z["switch_time"], z["switch_joint"], z["switch_old"], z["switch_new"],
                  z["switch_step"], details)]
        units = [str(x) for x in z["coordinate_units"]] if "coordinate_units" in z else []
        work = [str(x) for x in z["work"]] if "work" in z else []
        velocity_names = [str(x) for x in z["velocity_names"]] if "velocity_names" in z else []
        return cls(z["t"], z["q"], z["qd"], z["energy"], z["kinetic"], z["potential"], sw,
                   z["charts"], [str(x) for x in z["chart_joints"]],
                   [str(x) for x in z["joint_names"]], [str(x) for x in z["coordinate_names"]],
                   str(z["model_name"]), str(z["integrator"]), float(z["dt"]), int(z["steps"]),
                   int(z["rejected"]), coordinate_units=units, work=work,
                   velocity_names=velocity_names)
