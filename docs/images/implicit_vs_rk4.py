"""Draws docs/images/implicit_vs_rk4.png: the total energy of the stiff chain (stiff_chain.yaml,
5 links with 1000 N m/rad hinge springs) under RK4 just below and just above its largest stable
step, and under the linearly implicit integrator at 10 times that step.

    python docs/images/implicit_vs_rk4.py          # about 10 s with the dynamics cached

The step limit is found as in tests/test_implicit.py (bisection on log h, RK4 over 2 s).
"""
import os
import sys

import numpy as np

import scleron
from scleron.simulate import SimulationError

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "stiff_chain.yaml")
T = 2.0


def run(integrator, dt, duration=T):
    return scleron.simulate(MODEL, duration, dt, integrator=integrator, progress=False)


def bounded(dt):
    try:
        traj = run("rk4", dt)
    except SimulationError:
        return False
    scale = max(abs(traj.energy[0]), np.max(traj.kinetic))
    return bool(np.max(traj.energy - traj.energy[0]) <= 1e-3 * scale)


def rk4_limit(lo=1e-3, hi=2e-2, halvings=8):
    for _ in range(halvings):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if bounded(mid) else (lo, mid)
    return lo, hi


def until_blowup(integrator, dt):
    """The run up to the last step before the state becomes non-finite (bisection on the number
    of steps), and the time of that step."""
    good, bad = 1, int(round(T / dt))
    try:
        return run(integrator, dt, bad * dt), None
    except SimulationError:
        pass
    while bad - good > 1:
        mid = (good + bad) // 2
        try:
            run(integrator, dt, mid * dt)
            good = mid
        except SimulationError:
            bad = mid
    return run(integrator, dt, good * dt), bad * dt


def main(out=os.path.join(HERE, "implicit_vs_rk4.png")):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lo, hi = rk4_limit()
    h = 10 * hi
    rest = run("implicit", 0.5, 20.0).energy[-1]        # the static equilibrium's energy
    unstable, t_hi = until_blowup("rk4", hi)
    blowup, t_h = until_blowup("rk4", h)
    runs = [(run("rk4", 1e-4), "RK4, h = 1e-4 s (reference)", "k", "-"),
            (run("rk4", lo), f"RK4, h = {lo:.3g} s (largest stable step)", "C0", "-"),
            (unstable, f"RK4, h = {hi:.3g} s: non-finite at t = {t_hi:.3g} s", "C3", "--"),
            (blowup, f"RK4, h = {h:.3g} s (10x): non-finite at t = {t_h:.3g} s", "C3", "-"),
            (run("implicit", lo), f"implicit, h = {lo:.3g} s", "C2", "--"),
            (run("implicit", h), f"implicit, h = {h:.3g} s (10x)", "C2", "-")]
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=90)
    for traj, label, colour, style in runs:
        ax.plot(traj.t, np.maximum(traj.energy - rest, 1e-3), color=colour, linestyle=style,
                label=label, marker="o" if traj.steps < 60 else None, markersize=3)
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1e12)
    ax.set_xlim(0, T)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("E(t) - E(rest) (J)")
    ax.set_title("5-link chain, hinge springs 1000 N m/rad: total energy", fontsize=11)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    print(f"RK4 stable at {lo:.4g} s, not at {hi:.4g} s; E(rest) = {rest:.6g} J; implicit at {h:.4g} s: "
          f"E(0) = {runs[-1][0].energy[0]:.6g} J, max E = {np.max(runs[-1][0].energy):.6g} J, "
          f"E(end) = {runs[-1][0].energy[-1]:.6g} J; wrote {out}")
    return out


if __name__ == "__main__":
    main(*sys.argv[1:])
