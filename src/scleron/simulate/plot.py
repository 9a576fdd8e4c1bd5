"""The simulation plot: the joint coordinates in panels a reader can compare, and the energy.

Coordinates are grouped by unit (angles in rad, lengths in m, others), and within a unit by
size: a coordinate whose values are more than RANGE_RATIO times larger than the smallest of its
panel (a helical joint at 300 rad beside elbows within ±2 rad) gets a panel of its own scale, so
no curve is flattened by another. Every panel has a legend with the coordinate names (outside
the axes, in columns when there are many). Chart switches are dotted vertical lines.
"""
import math
import os

import numpy as np

from ..outputs import format_problem, literal_text, writable_formats
from .trajectory import SimulationError

RANGE_RATIO = 10.0          # a panel's largest |q| over its smallest, at most
MAX_COORDINATE_PANELS = 4
NEGLIGIBLE = 1e-9           # of the largest size of a unit: "stays at zero up to rounding"
ROUNDING = 1e-12            # rad or m: below this a coordinate stays at zero up to rounding too
LEGEND_ROWS = 14            # legend entries per column
UNIT_WORDS = {"rad": "angles (rad)", "m": "lengths (m)", "": "coordinates"}


def require_matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise SimulationError("plotting needs matplotlib: pip install matplotlib") from None


def coordinate_panels(q, units):
    """[(unit, [coordinate indices])]: one group per unit (rad, m, other), split where a
    coordinate's size max|q| exceeds RANGE_RATIO times the smallest size in its group; at most
    MAX_COORDINATE_PANELS groups (the largest ones merged). Sizes below NEGLIGIBLE times the
    largest of their unit, or below ROUNDING (coordinates that stay at 0 up to rounding: a
    standing robot's legs at 1e-16), join the smallest group."""
    q = np.asarray(q, dtype=float).reshape(len(q), -1)
    units = list(units) + [""] * (q.shape[1] - len(units))
    size = np.abs(q).max(axis=0) if len(q) else np.zeros(q.shape[1])
    panels = []
    for unit in ("rad", "m", ""):
        members = [k for k in range(q.shape[1]) if units[k] == unit]
        if not members:
            continue
        floor = max(NEGLIGIBLE * float(size[members].max()), ROUNDING)
        group, smallest = [], None          # smallest: of the group's non-negligible sizes
        for k in sorted(members, key=lambda k: size[k]):
            s = float(size[k])
            if smallest is not None and s > RANGE_RATIO * smallest:
                panels.append((unit, sorted(group)))
                group, smallest = [], None
            if smallest is None and s > floor:
                smallest = s
            group.append(k)
        panels.append((unit, sorted(group)))
    # merge the largest two of one unit, else the last two
    while len(panels) > MAX_COORDINATE_PANELS:
        i = next((i for i in range(len(panels) - 1, 0, -1) if panels[i][0] == panels[i - 1][0]),
                 len(panels) - 1)
        unit = panels[i][0] if panels[i][0] == panels[i - 1][0] else ""
        panels[i - 1:i + 1] = [(unit, sorted(panels[i - 1][1] + panels[i][1]))]
    return panels


def _panel_label(unit, index, panels):
    same = [p for p in panels if p[0] == unit]
    text = UNIT_WORDS[unit]
    if len(same) > 1:
        order = [p[1] for p in same].index(panels[index][1])
        text += ", " + ("small" if order == 0 else "large" if order == len(same) - 1 else "medium")
    return text


def _plot_coordinates(ax, traj, indices, names):
    colors = [f"C{i}" for i in range(10)]
    styles = ("-", "--", ":", "-.")
    for n, k in enumerate(indices):
        ax.plot(traj.t, traj.q[:, k], lw=1.0, color=colors[n % 10], ls=styles[(n // 10) % 4],
                label=names[k])
    ncol = max(1, math.ceil(len(indices) / LEGEND_ROWS))
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small", ncol=ncol,
              frameon=False, handlelength=1.8, borderaxespad=0.0)


def check_plot_path(path):
    """Before a run: a path matplotlib can write a figure to (a known extension, an existing
    folder), else ValueError naming it."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    formats = writable_formats(FigureCanvasAgg(Figure()))
    if not ext:                      # matplotlib would write path + ".png", not path
        raise ValueError(f"plot {path}: give the picture a file extension (.png, .svg, .pdf, ...)")
    problem = format_problem(path, ext, formats)
    if problem:
        raise ValueError(f"plot {problem}")


def plot_trajectory(traj, path):
    """Writes trajectory_figure(traj) to path (PNG, or what the extension says); returns path."""
    with literal_text():
        trajectory_figure(traj).savefig(path, dpi=110)
    return path


def _count(n, word):
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith("ch") else "s")


def trajectory_figure(traj):
    """A matplotlib Figure: one or more panels of joint coordinates (see the module's docstring)
    and the total energy as E(t) - E(0), with E(0) and its largest relative change in the title
    ("drift" where nothing does work). Its texts are drawn as written (no $...$ math)."""
    require_matplotlib()
    with literal_text():
        return _trajectory_figure(traj)


def _trajectory_figure(traj):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    nq = traj.q.shape[1]
    names = list(traj.coordinate_names) or [f"q{k}" for k in range(nq)]
    panels = coordinate_panels(traj.q, traj.coordinate_units or [""] * nq)
    fig = Figure(figsize=(10, 2.3 * len(panels) + 2.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels) + 1, 1, sharex=True, squeeze=False,
                        height_ratios=[3] * len(panels) + [2.4])[:, 0]
    for i, (unit, indices) in enumerate(panels):
        _plot_coordinates(axes[i], traj, indices, names)
        axes[i].set_ylabel(_panel_label(unit, i, panels))
    axes[0].set_title(f"{traj.model_name}: {traj.integrator}, dt = {traj.dt:g} s, "
                      f"{_count(traj.steps, 'step')}, {_count(len(traj.switches), 'chart switch')}")
    ax_e = axes[-1]
    e0 = float(traj.energy[0]) if traj.energy.size else 0.0
    ax_e.plot(traj.t, traj.energy - e0, color="k", lw=1.2, label="E(t) - E(0)")
    ax_e.set_ylabel("energy change (J)")
    ax_e.set_xlabel("time (s)")
    # as the printed summary says it: where work is done E need not stay (a change, not a drift),
    # and with --every the change is measured at the recorded states only
    n = len(traj.t)
    over = f" at the {n} recorded states" if n < traj.steps + 1 else ""
    change = "change" if traj.work else "drift"
    ax_e.set_title(f"total energy E = T + V: E(0) = {e0:.10g} J, max relative {change} "
                   f"{traj.energy_drift:.2e}{over}" + "".join(f" ({w})" for w in traj.work),
                   fontsize="medium", wrap=True)
    for i, s in enumerate(traj.switches):
        for ax in axes:
            ax.axvline(s.time, color="0.5", ls=":", lw=0.8,
                       label="chart switch" if (i == 0 and ax is ax_e) else None)
    ax_e.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small", frameon=False,
                borderaxespad=0.0)
    ax_e.ticklabel_format(axis="y", useOffset=False, style="sci", scilimits=(-3, 4))
    return fig
