"""scleron.simulate(...): check the arguments, load the model, run the simulator."""
import math
import numbers
import os
import tempfile

import numpy as np

from ..outputs import destination_problem, write_all
from .integrators import INTEGRATORS
from .plot import check_plot_path, plot_trajectory
from .charts import switchables
from .simulator import MAX_RECORD_BYTES, MAX_STEPS, Simulator, record_bytes
from .trajectory import SimulationError
from .variants import default_build_dir

DEFAULT_SWITCH_THRESHOLD = 0.2      # |det S| below which an Euler chart is switched
EXP_LIMIT = math.pi                 # ‖q‖ above which an exp-coordinate ball joint is
                                    # reparameterised


def _vector(value, n, what, names=None, size="nv"):
    try:
        complex_ = np.iscomplexobj(value)   # (numpy would drop the imaginary part, warning)
        a = None if complex_ else np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, got {value!r}") from None
    if complex_:
        raise ValueError(f"{what} must be real numbers, got complex ones")
    if a.ndim > 1:
        raise ValueError(f"{what} must be a vector of {size} = {n} numbers, got an array of "
                         f"shape {a.shape}")
    a = a.reshape(-1)
    if a.size == 1 and n != 1 and what == "tau":
        a = np.full(n, float(a[0]))
    if a.size != n:
        order = (f" (in order: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})"
                 if names else "")
        raise ValueError(f"{what} must have {size} = {n} entries{order}, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be finite")
    return a


def _file_name(path, what):
    """A file name given as str, bytes or os.PathLike, as str (None stays None)."""
    if path is None:
        return None
    try:
        name = os.fsdecode(os.fspath(path))
    except TypeError:
        raise ValueError(f"{what} must be a file name, got {type(path).__name__}") from None
    if not name:
        raise ValueError(f"{what}: an empty name")
    return name


def _check_writable(path, what):
    folder = os.path.dirname(os.path.realpath(path))
    problem = destination_problem(path)
    if problem:
        raise ValueError(f"{what} {path} {problem}")
    if not os.path.isdir(folder):
        problem = (f"{folder} is a file, not a folder" if os.path.exists(folder)
                   else f"the folder {folder} does not exist")
        raise ValueError(f"{what} {path}: {problem}")
    try:            # (os.access says yes to root everywhere, /sys and /proc included)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".scleron-probe-")
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot write in the folder {folder} "
                         f"({exc.strerror or exc})") from None


def _check_record_size(samples, nq, nv, integrator):
    """Refuses before the run a trajectory that would not fit in memory: the recorded states
    of a fixed step, duration / dt / record_every of them, and at least as many of rk45, whose
    steps are at most dt long (the simulator stops rk45 where it records too many)."""
    size = (samples + 1) * record_bytes(nq, nv)
    if size > MAX_RECORD_BYTES:
        every = math.ceil(size / MAX_RECORD_BYTES)
        raise ValueError(f"the run would record {'at least' if integrator == 'rk45' else 'up to'} "
                         f"{samples:.3g} states, about {size / 1e9:.0f} "
                         f"GB: keep every n-th step (--every / record_every, {every} or more), or "
                         "a shorter duration")


def _write_files(traj, output, plot):
    """The trajectory (.npz) and the plot, both or neither (scleron.outputs.write_all); an
    error names the option and the file."""
    write_all([(what, path, write) for what, path, write in
               (("output", output, traj.save), ("plot", plot, lambda p: plot_trajectory(traj, p)))
               if path is not None])


def _positive(value, what):
    if isinstance(value, (bool, str, bytes)):      # ("0.01" is a number only to float())
        raise ValueError(f"{what} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return v


def _load(model_or_path, floating, **options):
    """The model: a Model as it is, or a file read with load_model's options (those given)."""
    options = {k: v for k, v in options.items() if v}
    if isinstance(model_or_path, (str, os.PathLike)):
        from ..model import load_model
        return load_model(model_or_path, **({"floating": floating} if floating else {}), **options)
    if options:
        raise ValueError(f"{'= and '.join(options)}= "
                         f"{'are options' if len(options) > 1 else 'is an option'}"
                         " of reading a model file, not of a Model")
    model = model_or_path
    if any(j.type == "fixed" for j in model.joints):
        model = model.merged_fixed()
    model.validate()
    return model


def simulate(model_or_path, duration, dt, integrator="rk4", q0=None, qd0=None, tau=None, plot=None,
             output=None, progress=True, out_dir=None, *, rtol=None, atol=None,
             switch_threshold=None, exp_limit=EXP_LIMIT, record_every=1,
             floating=False, inertia=None, mimic=None, damping=None, order=None, log=None):
    """Integrate a model from its initial state and return a Trajectory.

    model_or_path: a Model or a model file (.yaml/.yml/.urdf; floating=True puts a free_flyer at
    a URDF's root; inertia=, mimic=, damping=, order=: load_model's, for a file). integrator:
    "rk4", "semi-implicit", "rk45" or "implicit" (linearly implicit Euler
    with the generated inverse-dynamics derivatives: stable on stiff joint springs at steps where
    rk4 blows up; first order). duration, dt: seconds; dt is the step of rk4, semi-implicit and
    implicit, and the first and largest step of rk45 (whose step is chosen by the error control:
    rtol, atol, default 1e-8, 1e-10, refused with the other integrators). q0, qd0: the
    initial state (default: the model's `initial`, else the neutral q -- zeros, identity
    quaternions -- and qd = 0). tau: constant joint forces (nv
    numbers or one for all; default 0) or a function tau(t, q, qd). plot: write a PNG of the joint
    coordinates and the total energy (needs matplotlib). output: write the trajectory as .npz.
    progress: a progress bar on stderr when it is a terminal. out_dir: where the generated
    dynamics live (one subfolder per chart combination; default ~/.cache/scleron/<name>, or
    $XDG_CACHE_HOME/scleron/<name>; the trajectory's build_dir says which). log: a function
    called with one line of text saying where the dynamics are generated (the CLI prints it).
    switch_threshold: |det S| below which an Euler chart is switched (default 0.2; another value
    for a model with no Euler-angle joint that may switch is refused: it would do nothing);
    exp_limit: ‖q‖ above which a ball_exp joint is reparameterised. record_every: keep every
    n-th step (and the last).
    """
    if integrator not in INTEGRATORS:
        raise ValueError(f"unknown integrator {integrator!r} (one of {', '.join(INTEGRATORS)})")
    duration, dt = _positive(duration, "duration"), _positive(dt, "dt")
    if duration / dt > MAX_STEPS:           # (rk45's steps are at most dt long, too)
        steps = duration / dt
        count = f"{math.ceil(steps - 1e-9):,}" if steps < 1e15 else f"{steps:.3g}"   # (1e8 + 1
        raise ValueError(f"duration / dt = {count} steps is more than {MAX_STEPS:,}")  # was 1e+08)
    tolerances = [k for k, v in (("rtol", rtol), ("atol", atol)) if v is not None]
    if tolerances and integrator != "rk45":
        raise ValueError(f"{' and '.join(tolerances)} set{'s' * (len(tolerances) == 1)} the error "
                         f"control of rk45, not of {integrator} (its error is set by dt)")
    rtol = _positive(1e-8 if rtol is None else rtol, "rtol")
    atol = _positive(1e-10 if atol is None else atol, "atol")
    # (the default: harmless)
    threshold_given = switch_threshold not in (None, DEFAULT_SWITCH_THRESHOLD)
    switch_threshold = _positive(switch_threshold if threshold_given else DEFAULT_SWITCH_THRESHOLD,
                                 "switch_threshold")
    if switch_threshold >= 0.8:
        raise ValueError("switch_threshold: must be below 0.8 (a fresh chart has |det S| >= 0.816)")
    exp_limit = _positive(exp_limit, "exp_limit")
    if not (math.pi <= exp_limit < 2 * math.pi):
        raise ValueError("exp_limit must lie in [pi, 2 pi)")
    if (not isinstance(record_every, numbers.Integral) or isinstance(record_every, bool)
            or record_every < 1):
        raise ValueError(f"record_every must be a positive integer, got {record_every!r}")
    record_every = int(record_every)
    output, plot = _file_name(output, "output"), _file_name(plot, "plot")
    for what, path in (("output", output), ("plot", plot)):
        if path is not None:
            _check_writable(path, what)         # before the run, not after it
    if output is not None and not output.lower().endswith(".npz"):
        raise ValueError(f"output {output}: a trajectory is written as numpy's .npz: name the "
                         "file ....npz (Trajectory.load reads it back)")
    if plot is not None:
        check_plot_path(plot)
    model = _load(model_or_path, floating, inertia=inertia, mimic=mimic, damping=damping,
                  order=order)
    coupled = [j.name for j in model.joints if j.mimic is not None]
    if integrator == "implicit" and coupled:    # (before any generation: docs/mimic.md)
        raise ValueError(f"integrator implicit needs the inverse-dynamics derivatives, not "
                         f"available yet for a model with mimic joints ({', '.join(coupled[:3])}"
                         f"{', ...' if len(coupled) > 3 else ''} coupled): use rk4, "
                         "semi-implicit or rk45, or give each mimic joint its own coordinate "
                         "(a URDF: --mimic independent, docs/mimic.md)")
    nv, names = model.nv, model.coordinate_names(velocities=True)
    _check_record_size(duration / dt / record_every, model.nq, nv, integrator)
    if tau is None:
        tau = np.zeros(nv)
    elif not callable(tau):
        tau = _vector(tau, nv, "tau", names)
    if threshold_given and not any(s.kind == "euler" for s in switchables(model, tau)):
        raise ValueError(f"switch_threshold: {model.name} has no Euler-angle joint whose chart may "
                         "switch (spherical or free with no spring, armature or constant tau on "
                         "its rotation), so it would change nothing")
    q0 = _vector(q0 if q0 is not None else (model.q0 if model.q0 is not None else model.neutral()),
                 model.nq, "q0", model.coordinate_names(), size="nq")
    q0 = model.unit_quaternions(q0, lambda problem: ValueError(f"q0: {problem}"))
    qd0 = _vector(qd0 if qd0 is not None
                  else (model.qd0 if model.qd0 is not None else np.zeros(nv)),
                  nv, "qd0", names)
    from ..pipeline import c_identifier
    if out_dir is not None:
        out_dir = _file_name(out_dir, "out_dir")    # ("" is refused, not read as the default)
    # a floated URDF's own name: its code and the fixed one's never share a folder, in the
    # default cache or in out_dir (where each run regenerated the other's)
    name = c_identifier(model.name) + ("_floating" if floating else "")
    build_dir = out_dir or default_build_dir(name)
    sim = Simulator(model, build_dir=os.fspath(build_dir), integrator=integrator, dt=dt,
                    duration=duration, q0=q0, qd0=qd0, tau=tau, rtol=rtol, atol=atol,
                    switch_threshold=switch_threshold, exp_limit=exp_limit,
                    record_every=record_every, progress=progress, log=log, name=name)
    try:
        traj = sim.run()
    except (SimulationError, KeyboardInterrupt) as exc:
        _write_partial(exc, output, plot)
        raise
    _write_files(traj, output, plot)
    return traj


def _write_partial(exc, output, plot):
    """A run that stopped (a SimulationError, Ctrl-C: not SIGTERM, whose exit is not delayed)
    still writes what it recorded to output and plot, as a trajectory that ends early; a
    SimulationError says so in its message, a KeyboardInterrupt in its `written`."""
    traj = getattr(exc, "trajectory", None)
    interrupted = isinstance(exc, KeyboardInterrupt)
    if traj is None or not (output or plot) or (interrupted and type(exc) is not KeyboardInterrupt):
        return
    try:
        _write_files(traj, output, plot)
    except Exception:                   # (the run's own error is the one to see)
        return
    said = ((f"the {len(traj.t)} states recorded up to" if len(traj.t) > 1 else
             "the one state recorded, at") + f" t = {traj.t[-1]:.6g} s"
            + (" are" if len(traj.t) > 1 else ", is") + " in "
            + " and ".join(p for p in (output, plot) if p))
    if interrupted:
        exc.written = said
    else:
        exc.args = (f"{exc.args[0]} ({said})" if exc.args else said,) + exc.args[1:]
