"""The generated dynamics of a simulation: one module per combination of Euler charts visited
(the generated code is specialised per chart), generated when first visited into
build_dir/<name>_<charts> and cached there by content hash (pipeline.generate)."""
import copy
import hashlib
import math
import os

import numpy as np

from ..pipeline import c_identifier
from .charts import chart_det

GIMBAL_LOCK = 1e-6      # |det S| of a chart below which its generation is not checked there

# What the simulator calls (the energies for the record, integrate for quaternion joints); the
# implicit integrator adds the inverse dynamics and its derivatives, into a folder of its own
# (<name>[_charts]_implicit) so that switching integrators does not regenerate a cached one.
SIMULATED = ("forward_dynamics", "integrate", "kinetic_energy", "potential_energy")
DERIVATIVES = ("inverse_dynamics", "inverse_dynamics_derivatives")


def regular_angles(chart):
    """Three angles of an Euler chart away from its gimbal lock: the middle angle pi/2 for a
    proper-Euler chart (first axis = last), 0 for a Tait-Bryan one."""
    return [0.0, math.pi / 2 if chart[0] == chart[2] else 0.0, 0.0]


def default_build_dir(name):
    """$XDG_CACHE_HOME/scleron/<name>, else ~/.cache/scleron/<name>."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "scleron", name)


class Variants:
    """Generated modules by chart combination (a tuple with one chart per Euler joint)."""

    def __init__(self, model, build_dir, euler, progress, log=None, derivatives=False, name=None):
        self.model = model
        self.base = name or c_identifier(model.name)     # (a floated URDF's: NAME_floating)
        self.build_dir = build_dir
        self.euler = euler
        self.progress = progress
        self.log = log
        self.functions = SIMULATED + (DERIVATIVES if derivatives else ())
        self.suffix = ("implicit",) if derivatives else ()
        self.modules = {}
        self.reports = {}

    def name(self, key):
        """base_XYZ_ZYX...[_implicit]: the C name and folder of a chart combination (hashed when
        long, so that two combinations never share a folder)."""
        if not key and not self.suffix:
            return self.base
        full = "_".join([self.base, *key, *self.suffix])
        if len(full) <= 64:
            return full
        return f"{self.base[:48]}_{hashlib.sha256(full.encode()).hexdigest()[:12]}"

    def model_for(self, key):
        """A copy of the model with each Euler joint's chart set from key. Generation checks a
        model at its initial configuration, and q = 0 is the gimbal lock of a proper-Euler chart
        (XYX, ZXZ, ...: the middle angle 0): a joint switched to another chart than the
        model's starts, in the copy, at a regular point of its chart (the same for every switch,
        so the generated variant stays cached)."""
        if not key:
            return self.model
        m = copy.deepcopy(self.model)
        q0 = np.array(m.q0 if m.q0 is not None else m.neutral(), dtype=float)
        qd0 = np.zeros(m.nv) if m.qd0 is None else np.array(m.qd0, dtype=float)
        for sw, chart in zip(self.euler, key):
            joint = m.joints[sw.joint]
            if (chart != joint.params.get("chart", "XYZ")
                    or abs(chart_det(chart, q0[sw.start + 1])) < GIMBAL_LOCK):
                # (the model's own chart at its gimbal lock at q0: the run switches away at t = 0)
                q0[sw.start:sw.start + 3] = regular_angles(chart)
                v = sw.start if sw.v_start is None else sw.v_start
                qd0[v:v + 3] = 0.0          # at rest there: the copy's recorded initial state
            joint.params = dict(joint.params, chart=chart)
        m.q0, m.qd0 = q0, qd0
        return m

    def get(self, key):
        mod = self.modules.get(key)
        if mod is None:
            from ..pipeline import Report, generate_covering
            if not self.modules and self.log is not None:
                self.log(f"generated dynamics: {self.build_dir} (cached there, one folder per "
                         f"chart combination; --build-dir / out_dir= to change)")
            name = self.name(key)
            self.progress.note(f"generating dynamics {name} ...")
            m = self.model_for(key)
            report = Report(name, m.nv)
            folder = os.path.join(self.build_dir, name)
            mod = generate_covering(m, folder, name, self.functions, report=report)
            self.modules[key] = mod
            self.reports[key] = report
        return mod
