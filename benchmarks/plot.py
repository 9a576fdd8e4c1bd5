"""OUT/time_vs_dof.png: C/C++ time per call against DOF for the four functions, generation time
against DOF, and the operation counts against Featherstone's Table 10.1."""
import os

from .common import FUNCS, MJ_VARIANTS, PIN_VARIANTS, TITLE
from .generation import TABLE_10_1
from .timing import best_variant

COLORS = {"scleron": "C0", "pinocchio": "C1", "mujoco": "C2"}


def nice_log_axes(ax, xticks):
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    if xticks:
        ax.set_xticks(xticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


def tool_points(R, tool, variants):
    """([(DOF, median ns, label)] of the RC chains sorted, and of the other systems) of a tool's
    fastest variant."""
    rc, other = [], []
    for key, S in R["systems"].items():
        _, st = best_variant(S.get("c", {}).get(tool, {}), variants)
        if st:
            (rc if key.startswith("rc") else other).append((S["nv"], st["median"], S["label"]))
    return sorted(rc), other


def plot_function_times(ax, R, f):
    for tool, variants in [("scleron", [f]), ("pinocchio", PIN_VARIANTS[f]), ("mujoco", MJ_VARIANTS[f])]:
        rc, other = tool_points(R, tool, variants)
        if rc:
            ax.plot([x[0] for x in rc], [x[1] / 1000 for x in rc], "o-", color=COLORS[tool], label=tool)
        for x in other:
            ax.plot(x[0], x[1] / 1000, "s", color=COLORS[tool], mfc="none", label=None if rc else tool)
            if tool == "scleron":
                ax.annotate(x[2].split()[0], (x[0], x[1] / 1000), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    nice_log_axes(ax, sorted({S["nv"] for S in R["systems"].values()}))
    ax.set_xlabel("DOF")
    ax.set_ylabel("µs per call (median)")
    ax.set_title(f"{TITLE[f]} (C/C++; ● RC-n, □ robots)")
    ax.grid(True, which="both", alpha=0.3)
    legend(ax)


def legend(ax):
    """The panel's legend, where it has labelled lines (a run of one system may have none)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def plot_generation_times(ax, R):
    sc = R.get("scaling", {})
    g = sorted((x["n"], x["total_s"]) for x in sc.get("scleron", []) if "total_s" in x)
    if g:
        ax.plot([x[0] for x in g], [x[1] for x in g], "o-", color="C0", label="scleron generate (4 functions)")
    comp = sorted((S["nv"], S["compile"]["seconds"]) for k, S in R["systems"].items()
                  if k.startswith("rc") and S.get("compile", {}).get("seconds"))
    if comp:
        ax.plot([x[0] for x in comp], [x[1] for x in comp], "o--", color="C4", label="scleron gcc compile")
    p = sorted((x["n"], x["total_s"]) for x in sc.get("pydy", []) if "total_s" in x)
    if p:
        ax.plot([x[0] for x in p], [x[1] for x in p], "^-", color="C3", label="sympy.mechanics KanesMethod")
    to = [x["n"] for x in sc.get("pydy", []) if x.get("timeout")]
    if to:
        ax.axhline(R["settings"]["pydy_cap_s"], color="C3", ls=":", label=f"PyDy cap (n = {to[0]} stopped)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    nice_log_axes(ax, sorted({x[0] for x in g + comp + p}))
    ax.set_xlabel("DOF (RC-n chain)")
    ax.set_ylabel("seconds")
    ax.set_title("generation time vs DOF")
    ax.grid(True, which="both", alpha=0.3)
    legend(ax)


def plot_op_counts(ax, R):
    for f, mk in [("fd", "o-"), ("id", "s-"), ("M", "^-")]:
        pts = sorted((S["nv"], S["ops"][f]["ratio"]) for k, S in R["systems"].items()
                     if k.startswith("rc") and S.get("ops", {}).get(f, {}).get("ratio"))
        if pts:
            ax.plot([x[0] for x in pts], [x[1] for x in pts], mk, label=f"{TITLE[f]} / {TABLE_10_1[f][0].split(',')[0]}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("DOF (RC-n chain)")
    ax.set_ylabel("(m+a) scleron / Table 10.1")
    ax.set_title("operation counts vs Featherstone Table 10.1")
    ax.grid(True, alpha=0.3)
    legend(ax)


def make_plot(R, out_dir):
    """Writes OUT/time_vs_dof.png (a note in R instead when matplotlib is missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:
        R["notes"].append(f"no plot: matplotlib not importable ({exc}); pip install matplotlib")
        return
    fig, axes = plt.subplots(2, 3, figsize=(15, 9))
    for ax, f in zip(axes.flat, FUNCS):
        plot_function_times(ax, R, f)
    plot_generation_times(axes.flat[4], R)
    plot_op_counts(axes.flat[5], R)
    fig.suptitle("scleron vs Pinocchio vs MuJoCo — " + R["machine"]["lscpu"].get("Model name", ""))
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "time_vs_dof.png"), dpi=110)
    plt.close(fig)
