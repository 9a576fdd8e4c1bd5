"""A 3-D stick figure of a model at a configuration (matplotlib, an optional extra).

Forward kinematics is scleron.kinematics: the body frame of body i in the world is
    T_i = T_parent(i) · X_tree,i · Q_i(q_i)
with X_tree the joint's fixed placement (model.joints[i].origin) and Q_i(q_i) the joint
library's own transform (joint_model(type, params).R, .t).

The picture: each joint is a dot at its body's frame origin, with a short red segment along
its axis where it has one (revolute, prismatic, helical, cylindrical); each link is a blue
segment from the parent's joint to the child's joint (a leaf body, which has no child joint,
gets a lighter one from its joint to its centre of mass); each centre of mass is a small green
cross joined to its joint by a dotted line; the world origin is a black square with a small
x/y/z (red/green/blue) triad, and a dashed grey line joins it to each root body (unless the
robot stands more than ORIGIN_IN_VIEW of its sizes and ORIGIN_ALWAYS_WITHIN metres away: then
the title says where the origin is).
Axes are scaled equally, so lengths and angles are true.
"""
import os

import numpy as np

from .kinematics import Kinematics, configuration
from .outputs import format_problem, literal_text, writable_formats, write_all


class MissingDependency(RuntimeError):
    """An optional dependency (matplotlib) is not installed."""


def _figure(**kw):
    """A matplotlib Figure on the Agg canvas: files only, no display, and the caller's pyplot
    backend left as it was (matplotlib.use("Agg") changed it, a notebook's included)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependency("scleron draw needs matplotlib: pip install matplotlib "
                                "(or pip install 'scleron[plot]')") from None
    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig


ORIGIN_IN_VIEW = 2.0        # the world origin is drawn within this many robot sizes of the robot,
ORIGIN_ALWAYS_WITHIN = 2.0  # and always within this many metres (a small arm on a 1 m pedestal)


def forward_kinematics(model, q=None):
    """(joint frames, body frames): for every body i, the 4x4 world pose of its joint's
    placement frame T_parent X_tree,i and of its body frame T_parent X_tree,i Q_i(q_i)
    (scleron.kinematics, the one numeric forward kinematics)."""
    joint_frames, body_frames = Kinematics(model).frames(configuration(model, q))
    return list(joint_frames), list(body_frames)


def draw(model, path, q=None, elev=20.0, azim=-60.0, labels=None, title=None):
    """Writes a PNG (or any format matplotlib knows from the file's extension) of the model at
    configuration q. The file is written whole or not at all. Returns the path."""
    source = f"{model.source}: " if getattr(model, "source", None) else ""
    try:
        q = configuration(model, q)
    except ValueError as exc:
        raise ValueError(f"{source}{exc}") from None
    if os.path.isdir(path) or str(path).endswith(("/", os.sep)):
        raise ValueError(f"{path} is a folder: give the picture's file name")
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if not ext:
        raise ValueError(f"{path}: give the picture a file extension (.png, .pdf, .svg)")
    fig = _figure(figsize=(8, 8), dpi=100)
    problem = format_problem(path, ext, writable_formats(fig.canvas))
    if problem:
        raise ValueError(problem)
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        problem = (f"{folder} is a file, not a folder" if os.path.exists(folder)
                   else f"the folder {folder} does not exist")
        raise FileNotFoundError(f"{path}: {problem}")
    with literal_text():                # (names drawn as written: a $ is no math markup)
        _plot(fig, model, q, elev, azim, labels, title, source)
        write_all([("picture", path, lambda tmp: fig.savefig(tmp, format=ext))])
    return path


FARTHEST_DRAWN = 1e9        # metres from the world origin a drawn body may stand


def _plot(fig, model, q, elev, azim, labels, title, source=""):
    at = f"at this q (entries up to {max(abs(float(x)) for x in q):.3g})"
    try:
        with np.errstate(all="ignore"):
            joint_frames, body_frames = forward_kinematics(model, q)
    except (OverflowError, ZeroDivisionError):   # (finite q whose kinematics overflow)
        raise ValueError(f"{source}the kinematics overflow {at}: draw it at another --q") from None
    for body, joint, T in zip(model.bodies, model.joints, body_frames):
        if not np.all(np.isfinite(T)):  # (numpy's NaN: a custom joint's 1/q at 0, a log at -1)
            raise ValueError(f"{source}body '{body.name}': its pose is not finite {at}: its "
                             f"{joint.type} joint '{joint.name}' or one above it is singular or "
                             "overflows there; draw it at another --q")
    origins = np.array([T[:3, 3] for T in body_frames])
    coms = np.array([T[:3, :3] @ b.inertia.com + T[:3, 3]
                     for T, b in zip(body_frames, model.bodies)])
    far = float(np.max(np.abs(np.vstack([origins, coms])))) if len(origins) else 0.0
    if not far <= FARTHEST_DRAWN:       # (a slider at 1e308 made matplotlib's limits inf; from
        raise ValueError(              #  1e15 m the doubles' spacing is of a robot's size)
            f"{source}the bodies stand up to {far:.3g} m from the world origin {at}, beyond "
            f"what a picture resolves ({FARTHEST_DRAWN:g} m): draw it at another --q")
    ax = fig.add_subplot(projection="3d")
    # the world origin is in the view unless the robot stands far from it (a floating base at
    # x = 20 m was drawn a few pixels wide beside the origin): then a note says where it is
    robot = np.vstack([origins, coms])
    size = max(float((robot.max(axis=0) - robot.min(axis=0)).max()), 0.05)
    gap = float(np.linalg.norm(np.maximum(0.0, np.maximum(robot.min(axis=0), -robot.max(axis=0)))))
    world = gap <= max(ORIGIN_IN_VIEW * size, ORIGIN_ALWAYS_WITHIN)
    points = np.vstack([robot, np.zeros((1, 3))]) if world else robot
    lo, hi = points.min(axis=0), points.max(axis=0)
    center = (lo + hi) / 2
    half = max(float((hi - lo).max()) / 2 * 1.15, 0.05)
    lengths = [np.linalg.norm(origins[i] - origins[model.parent_index(i)])
               for i in range(len(model.bodies)) if model.parent_index(i) >= 0]
    lengths = [x for x in lengths if x > 1e-9]
    tick = half * 0.08                                   # length of axis marks and the triad
    if lengths:
        tick = min(tick, 0.3 * float(np.median(lengths)))
    small = len(model.bodies) > 12

    # links: parent joint -> child joint; root bodies hang from the world origin (dashed)
    for i, j in enumerate(model.joints):
        p = model.parent_index(i)
        a = np.zeros(3) if p < 0 else origins[p]
        b = origins[i]
        if p < 0:
            if world and np.linalg.norm(b - a) > 1e-12:
                ax.plot(*np.c_[a, b], color="0.6", lw=1.0, ls="--")
        else:
            ax.plot(*np.c_[a, b], color="tab:blue", lw=3.0, solid_capstyle="round")
        # a joint that translates its body: show the joint frame -> body frame offset
        jpos = joint_frames[i][:3, 3]
        if np.linalg.norm(b - jpos) > 1e-9 and p >= 0:
            ax.plot(*np.c_[jpos, b], color="tab:blue", lw=1.0, ls=":")
        # the joint axis
        axis = j.params.get("axis") if isinstance(j.params, dict) else None
        if axis is not None:
            d = joint_frames[i][:3, :3] @ np.asarray(axis, dtype=float)
            ax.plot(*np.c_[b - tick * d, b + tick * d], color="tab:red", lw=2.0)
    # centres of mass, joined to their body's joint; a leaf body (no child to draw a link to)
    # gets a lighter link from its joint to its centre of mass
    parents = {model.parent_index(i) for i in range(len(model.bodies))}
    for i in range(len(model.bodies)):
        if i not in parents:
            ax.plot(*np.c_[origins[i], coms[i]], color="tab:blue", lw=2.0, alpha=0.4,
                    solid_capstyle="round")
        ax.plot(*np.c_[origins[i], coms[i]], color="tab:green", lw=0.8, ls=":")
    ax.scatter(*coms.T, marker="x", s=12 if small else 25, color="tab:green",
               label="centre of mass", depthshade=False)
    ax.scatter(*origins.T, s=20 if small else 40, color="tab:orange", edgecolors="k",
               linewidths=0.5, label="joint", depthshade=False, zorder=5)
    # world origin and triad
    if world:
        ax.scatter([0], [0], [0], marker="s", s=40, color="k", label="world origin",
                   depthshade=False)
        for k, c in enumerate(("tab:red", "tab:green", "tab:blue")):
            e = np.zeros(3)
            e[k] = 2 * tick
            ax.plot(*np.c_[np.zeros(3), e], color=c, lw=1.5)
    if labels is None:
        labels = len(model.bodies) <= 12
    if labels:                                  # one label per point: coincident joints share it
        spots = {}
        for i, b in enumerate(model.bodies):
            key = tuple(np.round(origins[i] / (tick * 0.05)).astype(int))
            spots.setdefault(key, (origins[i], []))[1].append(b.name)
        for pos, names in spots.values():
            ax.text(*(pos + tick * 0.4), ", ".join(names), fontsize=7, color="0.2")

    ax.set_xlim(center[0] - half, center[0] + half)
    ax.set_ylim(center[1] - half, center[1] + half)
    ax.set_zlim(center[2] - half, center[2] + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    ax.view_init(elev=elev, azim=azim)
    vals = [f"{x:.3g}" for x in q]
    if len(vals) > 12:
        vals = vals[:5] + ["..."] + vals[-5:]
    qtext = "[" + ", ".join(vals) + "]"
    away = "" if world else f"\n(the world origin is off the picture, {gap:.3g} m away)"
    ax.set_title((title or f"{model.name}: {len(model.bodies)} bodies, nq = {model.nq}\n"
                           f"q = {qtext}")
                 + away, fontsize=9)
    ax.legend(loc="upper left", fontsize=7, frameon=False)
