"""Coordinate charts during a simulation (Sueda §2.5.5, §2.5.8).

* A spherical or free joint written in one of the 12 Euler charts switches chart after a step in
  which |det S| of its chart fell below the switch threshold. The new chart is the one with the
  largest |det S| at the current rotation (always >= sqrt(2/3), so there is no chattering); q comes
  from Sueda's Table 3 (joints.charts.q_from_R) and q̇ from eq. 2.40,
  S_new q̇_new = S_old q̇_old, which keeps R and the body (hence world) angular velocity.
* An exp-coordinate ball joint is re-parameterised when ‖q‖ > exp_limit (π):
  q <- (1 - 2π/‖q‖) q, the same rotation, and q̇ <- S(q_new)^-1 S(q) q̇, the same angular
  velocity (Grassia 1998, §4).

R(q) and S(q) are the joint library's own (joint_model("spherical", chart) / ("ball_exp")).
"""
import math
from dataclasses import dataclass

import numpy as np

from ..joints import charts, joint_dof, joint_model
from ..joints.registry import joint_type

# chart "ABC": det S = ±cos q2 (Tait-Bryan, A != C) or -sin q2 (proper Euler, A == C),
# Sueda Table 3
_TRIG = {True: math.sin, False: math.cos}


def chart_det(chart, q2):
    """sin q2 (proper Euler chart ABA) or cos q2 (Tait-Bryan): ±det S of the chart (Sueda Table 3).
    |det S| < threshold triggers a switch; a change of sign within one step is a jump over the
    singularity."""
    return _TRIG[chart[0] == chart[2]](q2)


def crosses_singularity(chart, a, b):
    """Whether the middle angle moving from a to b passes a zero of the chart's det S (sin q2 at
    k pi, cos q2 at pi/2 + k pi): counted, not by the sign at both ends, which an even number of
    zeros passed in one step (a blown-up implicit step: 14 of them) leaves unchanged. False for
    a non-finite angle: the run's finiteness check says what happened."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    first = 0.0 if chart[0] == chart[2] else math.pi / 2
    return math.floor((a - first) / math.pi) != math.floor((b - first) / math.pi)


def det_name(chart):
    """The formula of ±det S in words: "sin(q2)" or "cos(q2)"."""
    return "sin(q2)" if chart[0] == chart[2] else "cos(q2)"


def exp_det(q3):
    """det S of exponential coordinates q (S = the right Jacobian of SO(3)): 2 (1 - cos θ) / θ²,
    θ = |q|; 1 at θ = 0, 0 at θ = 2π k (k > 0), where the coordinates are singular."""
    theta = float(np.linalg.norm(q3))
    return 1.0 if theta < 1e-8 else 2.0 * (1.0 - math.cos(theta)) / theta ** 2


def chart_R(chart, q3):
    """Rotation of Euler chart `chart` at angles q3 (3x3), from the joint library."""
    return joint_model("spherical", {"chart": chart}).numeric("R", q3)


def chart_S(chart, q3):
    """Body-frame S (3x3, ω = S q̇) of Euler chart `chart` at q3, from the joint library."""
    return joint_model("spherical", {"chart": chart}).numeric("S", q3)[:3]


def best_chart(R):
    """The Euler chart with the largest |det S| at rotation R, and its coordinates (Table 3)."""
    best = None
    for c in charts.CHARTS:
        qc = charts.q_from_R(c, R)
        d = abs(chart_det(c, qc[1]))
        if best is None or d > best[0] + 1e-12:
            best = (d, c, qc)
    return best[1], best[2]


def switch_euler(old, q3, qd3):
    """(new chart, q, q̇) of a spherical state (chart `old`, angles q3, rates qd3) in the best
    chart.

    q from Table 3 (charts.q_from_R), q̇ from eq. 2.40: S_new q̇_new = S_old q̇_old, the same
    body angular velocity (charts.switch_chart computes the same; tests compare them)."""
    q3, qd3 = np.asarray(q3, dtype=float), np.asarray(qd3, dtype=float)
    new, q_new = best_chart(chart_R(old, q3))
    qd_new = np.linalg.solve(chart_S(new, q_new), chart_S(old, q3) @ qd3)
    return new, np.asarray(q_new, dtype=float), qd_new


def reparameterise_exp(q3, qd3):
    """Grassia's re-parameterisation of exponential coordinates: the same rotation with
    ‖q‖ replaced by 2π - ‖q‖ (q <- (1 - 2π/‖q‖) q), and the same angular velocity
    S(q) q̇; from ‖q‖ > 3π (a huge step) by ‖q‖ - 2πk, k the nearest whole number of
    turns, so ‖q_new‖ <= π."""
    jm = joint_model("ball_exp")
    q3 = np.asarray(q3, dtype=float)
    theta = float(np.linalg.norm(q3))
    turns = max(1, round(theta / (2.0 * math.pi)))
    q_new = (1.0 - 2.0 * math.pi * turns / theta) * q3
    qd_new = np.linalg.solve(jm.numeric("S", q_new)[:3],
                             jm.numeric("S", q3)[:3] @ np.asarray(qd3, dtype=float))
    return q_new, qd_new


# --------------------------------------------------------------------------------------------------
# which joints switch

@dataclass
class Switchable:
    joint: int          # index in model.joints
    name: str
    kind: str           # "euler" or "exp"
    start: int          # index of the first rotational coordinate in q
    chart: str          # current chart ("exp" for ball_exp)
    v_start: int = None  # its index in qd (start, unless a quaternion joint comes before)


@dataclass
class KeptChart:
    """A rotation's chart (Euler, or "exp": a ball_exp joint's exponential coordinates) that
    never switches: its singularity is watched, not left."""
    name: str           # the joint's
    start: int          # index in q of the chart's first angle
    chart: str
    why: str            # why it keeps its chart

    def det(self, q):
        """|det S| of the chart at the state's q (0 at its singularity)."""
        if self.chart == "exp":
            return exp_det(q[self.start:self.start + 3])
        return abs(chart_det(self.chart, q[self.start + 1]))

    def came_near(self, d):
        """Where the chart came near its singularity, in words, at |det S| = d."""
        if self.chart == "exp":
            return (f"|θ| = 2π, where its exponential coordinates are singular (det S = "
                    f"2(1 - cos θ)/θ² = {d:.2g}")
        return f"the gimbal lock of its chart {self.chart} (|{det_name(self.chart)}| = {d:.2g}"


def euler_angles(jtype, params):
    """((first index in q, number, chart) of a joint's Euler-chart angles, or None; and how a
    simulation may leave its chart: "euler", "exp" or "") as the joint registry declares them."""
    jt = joint_type(jtype)
    return jt.euler_angles_of(params), jt.switch


def kept_charts(model, tau=None):
    """The Euler-chart rotations that keep their chart, in model order: a spherical or free joint
    with a spring, an armature or a constant force on its rotation (_keeps_chart), the angles of
    surface_point and curve_point joints with a chart, and the spherical and free parts of
    composite joints (their coordinates are the joint's own)."""
    out, k, kv = [], 0, 0
    constant = tau is not None and not callable(tau)
    for j in model.joints:
        if j.mimic is not None:             # no coordinates of its own
            continue
        angles, switch = euler_angles(j.type, j.params)
        skip = angles[0] if angles else 0
        own = np.asarray(tau, dtype=float)[kv:kv + j.dof] if constant else None
        if switch == "euler" and _keeps_chart(j, skip, own):
            out.append(KeptChart(j.name, k + skip, angles[2],
                                 "a spring, an armature or a constant force on it keeps its chart"))
        elif switch == "exp" and _keeps_chart(j, skip, own):     # (its |θ| -> 2π: an outside
            out.append(KeptChart(j.name, k, "exp",                # tester's run ended non-finite)
                                 "a spring, an armature or a constant force on it keeps its chart"))
        elif angles and angles[1] == 3 and not switch:   # a point's (two have no singularity)
            out.append(KeptChart(j.name, k + skip, angles[2],
                                 f"a {j.type} joint's angles keep their chart"))
        for at, part in _composite_parts(j, k):
            part_angles, part_switch = euler_angles(part["type"], part.get("params", {}))
            if part_switch == "euler":
                out.append(KeptChart(j.name, at + part_angles[0], part_angles[2],
                                     "a composite joint's parts keep their charts"))
        k += j.nq
        kv += j.dof
    return out


def _composite_parts(joint, k):
    """(index in q of its first coordinate, part) of each part of a composite joint at q[k]."""
    out = []
    if joint.type == "composite":
        for part in joint.params.get("parts", []):
            out.append((k, part))
            k += joint_dof(part["type"], part.get("params", {}))
    return out


def _rotation_carries(values, skip):
    """Whether per-coordinate values (one number for all, or one per coordinate) are not all
    zero on the three rotation coordinates from `skip`."""
    if values is None:
        return False
    v = np.asarray(values, dtype=float)
    return bool(np.any((v if v.ndim == 0 else v[skip:skip + 3]) != 0))


def _keeps_chart(joint, skip, tau=None):
    """Whether a joint carries a spring, an armature or a constant joint force on its rotation
    coordinates: its spring ½ k (q - rest)², its armature's ½ a q-dot² and the generalised force
    tau (the work tau . dq) are written in the chart's angles and rates, which a switch changes
    (the energy jumped by 2 % at a switch with armature; a constant tau became another torque)."""
    k = getattr(joint, "stiffness", None)
    if k is None and isinstance(getattr(joint, "params", None), dict):
        k = joint.params.get("stiffness")
    return (_rotation_carries(k, skip) or _rotation_carries(getattr(joint, "armature", None), skip)
            or _rotation_carries(tau, skip))


def switchables(model, tau=None):
    """The joints whose coordinates may switch, in model order; a joint with a spring, an
    armature or a constant joint force (tau: nv numbers, or None) on its rotation keeps its
    chart (_keeps_chart: switching would change the physics)."""
    out, k, kv = [], 0, 0
    constant = tau is not None and not callable(tau)
    for i, j in enumerate(model.joints):
        if j.mimic is not None:             # no coordinates of its own (q skips it)
            continue
        angles, switch = euler_angles(j.type, j.params)
        skip = angles[0] if angles else 0
        own = np.asarray(tau, dtype=float)[kv:kv + j.dof] if constant else None
        if not _keeps_chart(j, skip, own):
            if switch == "euler":
                out.append(Switchable(i, j.name, "euler", k + skip, angles[2], kv + skip))
            elif switch == "exp":
                out.append(Switchable(i, j.name, "exp", k, "exp", kv))
        k += j.nq
        kv += j.dof
    return out
