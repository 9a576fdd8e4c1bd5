"""`scleron simulate MODEL ...` (add_parser and cmd_simulate, used by scleron.cli) and
`python -m scleron.simulate ...` (main)."""
import argparse
import sys

import numpy as np

from ..errors import BuildError, ModelError, one_line
from ..model.load import add_load_arguments, load_arguments
from .api import DEFAULT_SWITCH_THRESHOLD, simulate
from .integrators import INTEGRATORS
from .plot import require_matplotlib
from .trajectory import SimulationError

SHOWN_SWITCHES = 10


def add_parser(subparsers):
    """Adds `scleron simulate` to an argparse subparsers object."""
    p = subparsers.add_parser(
        "simulate", help="integrate the model's dynamics from its initial state",
        description="Integrate the model's generated dynamics from its initial state (zero or "
                    "constant joint torque), switching Euler charts and reparameterising "
                    "exponential coordinates as needed; write the trajectory and a plot. The "
                    "generated dynamics are cached in ~/.cache/scleron/<name> (--build-dir).")
    p.add_argument("model", help="model file (.yaml, .yml, .urdf, .osim; .xml or .mjcf: URDF or "
                                 "MJCF by its root element)")
    p.add_argument("--duration", type=float, required=True, metavar="T", help="simulated time (s)")
    p.add_argument("--dt", type=float, required=True, metavar="H",
                   help="time step (s); for rk45 the first and largest step")
    p.add_argument("--integrator", choices=INTEGRATORS, default="rk4",
                   help="rk4 (default), semi-implicit (symplectic Euler), rk45 (Dormand-Prince, "
                        "error control) or implicit (linearly implicit Euler with the generated "
                        "derivatives: for stiff joint springs and dampers)")
    p.add_argument("--rtol", type=float, help="rk45 relative tolerance (1e-8)")
    p.add_argument("--atol", type=float, help="rk45 absolute tolerance (1e-10)")
    p.add_argument("--tau", type=float, nargs="+", metavar="X",
                   help="constant joint forces: nv numbers, or one for all (default 0); a "
                        "spherical, free or ball_exp joint with a force on its rotation keeps "
                        "its coordinates (no chart switch or reparameterisation)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="plot coordinates and energy (needs matplotlib)")
    p.add_argument("-o", "--output", metavar="FILE.npz", help="write the trajectory (.npz)")
    add_load_arguments(p, "URDF: put a free_flyer joint at the root link")
    p.add_argument("--build-dir", metavar="DIR",
                   help="folder for the generated dynamics (default ~/.cache/scleron/<name>)")
    p.add_argument("--switch-threshold", type=float, metavar="D",
                   help=f"switch an Euler chart when |det S| < D "
                        f"(default {DEFAULT_SWITCH_THRESHOLD})")
    p.add_argument("--every", type=_positive_int, default=1, metavar="N",
                   help="record every N-th step (and the last)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_simulate)
    return p


def _positive_int(text):
    """--every's type: argparse names the option in its error."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


_positive_int.__name__ = "positive integer"      # argparse: "invalid positive integer value"


_one_line = one_line                # (errors.one_line: the line a command prints)


def _say(text):
    print(text, flush=True)


def summary(traj):
    """The lines `scleron simulate` prints after a run."""
    e0 = float(traj.energy[0])
    nq, nv = traj.q.shape[1], traj.qd.shape[1]
    sizes = f"nq = nv = {nv}" if nq == nv else f"nq = {nq}, nv = {nv}"
    lines = [f"{traj.model_name}: {sizes}, {traj.integrator}, "
             f"dt = {traj.dt:g} s{_last_step(traj)}, "
             f"t = {traj.t[-1]:g} s in {traj.steps} step{'' if traj.steps == 1 else 's'}"
             + (f" ({traj.rejected} rejected)" if traj.rejected else "")
             + f", {traj.wall_time:.2f} s",
             f"energy: E(0) = {e0:.10g} J, E(end) = {float(traj.energy[-1]):.10g} J, max relative "
             f"{'change' if traj.work else 'drift'} {traj.energy_drift:.3e}" + _over(traj)
             + (f" ({'; '.join(traj.work)})" if traj.work else ""),
             f"chart switches: {len(traj.switches)}"]
    overflow = np.flatnonzero(~np.isfinite(traj.energy))
    if overflow.size:                       # (the state stayed finite: the run checks it)
        lines.insert(2, f"  the energy overflowed double precision (first at t = "
                        f"{float(traj.t[overflow[0]]):g} s), the state did not: the model's "
                        "magnitudes (its gravity, masses, lengths) are too large for it; rescale "
                        "its units")
    lines += [f"  {s}" for s in traj.switches[:SHOWN_SWITCHES]]
    if len(traj.switches) > SHOWN_SWITCHES:
        lines.append(f"  ... and {len(traj.switches) - SHOWN_SWITCHES} more")
    return lines


def _last_step(traj):
    """A fixed-step run's last step ends at the duration: said where it is not dt."""
    if traj.integrator == "rk45" or traj.steps < 1:
        return ""
    last = float(traj.t[-1]) - (traj.steps - 1) * traj.dt
    rounding = 1e-9 * traj.dt + 1e-12 * abs(float(traj.t[-1]))     # of (steps - 1) * dt
    return f" (the last step {last:g} s)" if abs(last - traj.dt) > rounding else ""


def _over(traj):
    """Where the drift was measured, when not at every step (--every N)."""
    n = len(traj.t)
    return f" at the {n} recorded states" if n < traj.steps + 1 else ""


def cmd_simulate(args):
    """Runs `scleron simulate`; errors are one line on stderr and exit status 2."""
    try:
        tolerances = {k: v for k, v in (("rtol", args.rtol), ("atol", args.atol)) if v is not None}
        if tolerances and args.integrator != "rk45":      # (simulate() says it too, without --)
            raise ValueError(f"--{' and --'.join(tolerances)} set{'s' * (len(tolerances) == 1)} "
                             f"the error control of rk45, not of {args.integrator} (its error is "
                             "set by --dt)")
        if args.build_dir == "":
            raise ValueError("--build-dir: an empty name")
        if args.plot:
            require_matplotlib()
        traj = simulate(args.model, args.duration, args.dt, integrator=args.integrator,
                        tau=args.tau, plot=args.plot, output=args.output,
                        progress=not args.quiet, out_dir=args.build_dir, **tolerances,
                        switch_threshold=args.switch_threshold,
                        record_every=args.every, log=_say, **load_arguments(args))
    except KeyboardInterrupt as exc:
        if type(exc) is not KeyboardInterrupt or not getattr(exc, "written", None):
            raise                           # (scleron's own: "interrupted", 130; SIGTERM's)
        print(f"scleron: interrupted; {exc.written}", file=sys.stderr)
        return 130
    except (ModelError, BuildError, SimulationError, ValueError, OSError) as exc:
        text = _one_line(exc)
        if type(exc) is ValueError:         # the Python argument's name as the option's
            for name, option in OPTION_NAMES.items():
                if text.startswith((name + ":", name + " ")):
                    text = option + text[len(name):]
                    break
        print(f"scleron: error: {text}", file=sys.stderr)
        return 2
    for line in summary(traj):
        print(line)
    for path in (args.output, args.plot):
        if path:
            print(f"wrote {path}")
    return 0


# simulate()'s arguments that its errors name, and the options they are on the command line
OPTION_NAMES = {"switch_threshold": "--switch-threshold", "rtol": "--rtol", "atol": "--atol",
                "record_every": "--every"}


def main(argv=None):
    """`python -m scleron.simulate ...`: `scleron simulate ...` itself (its one-line errors, its
    Ctrl-C, its exit statuses)."""
    from ..cli import main as scleron_main   # (scleron.cli imports this module: not at the top)
    return scleron_main(["simulate", *(sys.argv[1:] if argv is None else argv)])
