"""The `scleron` command: codegen, show, draw, charts.

Every error is one line on stderr and exit status 2, never a traceback (SCLERON_DEBUG=1
shows the traceback of an unexpected one). A failed command writes nothing: codegen installs
its output folder only when everything succeeded (and removes the parent folders it created
for it), draw writes its picture whole or not at all.
"""
import argparse
import os
import sys
import time

from . import __version__
from .errors import BuildError, ModelError
from .simulate import add_parser as add_simulate_parser


class CommandError(Exception):
    """A bad command line (a one-line error, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is in --help)."""

    def error(self, message):
        raise CommandError(f"{message} (see `{self.prog} --help`)")


def _load(path, args):
    from .model import load_model
    kw = {}
    if getattr(args, "floating", False):
        kw["floating"] = True
    return load_model(path, **kw)


def _missing_ancestors(path):
    """The folders above path that do not exist yet, deepest first."""
    out = []
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        out.append(parent)
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    return out


def _remove_empty(folders):
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            pass


def cmd_codegen(args):
    from .pipeline import Report, generate
    if args.chunk < 1:
        raise CommandError(f"--chunk must be a positive number of statements, got {args.chunk}")
    t0 = time.perf_counter()
    model = _load(args.model, args)
    t_load = time.perf_counter() - t0
    report = Report(model.name, model.nv)
    out = args.output or os.path.join("generated", args.name or model.name)
    created = _missing_ancestors(out)
    try:
        cflags = None
        if args.opt is not None:
            from .pipeline import DEFAULT_CFLAGS
            cflags = [f"-O{args.opt}" if f.startswith("-O") else f for f in DEFAULT_CFLAGS]
        generate(model, out, args.name, chunk=args.chunk, force=args.force,
                 compile=not args.no_compile, report=report, cflags=cflags,
                 method=int(args.method), mass_matrix=args.mass_matrix)
    except BaseException:
        _remove_empty(created)
        raise
    print(f"{model.name}: {len(model.bodies)} bodies, nq = nv = {model.nv} -> {out}")
    if report.cache_hit:
        print("up to date (cache hit: same model, options and scleron version)")
        return 0
    print(f"{'function':<18} {'statements':>10}  {'operations per call':<30} code")
    for fname, (stmts, counts) in report.functions.items():
        print(f"{fname:<18} {stmts:>10}  {str(counts):<30} {report.forms.get(fname, '')}")
    times = {"load": t_load, **report.times}
    print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items())
          + f", total {sum(times.values()):.2f} s")
    return 0


def cmd_show(args):
    from .show import show
    if args.body is not None and args.function is None:
        raise CommandError("--body NAME needs --function (fd, id, mass or bias)")
    if args.tree and (args.function or args.joint):
        raise CommandError("--tree cannot be combined with --function or --joint")
    if args.function and args.joint:
        raise CommandError("give --function or --joint, not both")
    model = _load(args.model, args)
    text = show(model, joint=args.joint, what=args.what, fmt=args.format, tree=args.tree,
                function=args.function, body=args.body)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_draw(args):
    from .draw import draw
    model = _load(args.model, args)
    draw(model, args.output, q=args.q, elev=args.elev, azim=args.azim,
         labels=False if args.no_labels else None)
    print(f"wrote {args.output}")
    return 0


def cmd_charts(args):
    from .joints.charts import write_charts
    for path in write_charts(args.output):
        print(path)
    return 0


def build_parser():
    p = _Parser(prog="scleron", description="Linear-time dynamics code generation "
                "for multibody systems with general scleronomic joints.")
    p.add_argument("--version", action="version", version=f"scleron {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("codegen", help="generate, compile and load C dynamics for a model")
    c.add_argument("model", help="model file (.yaml, .yml, .urdf)")
    c.add_argument("-o", "--output", help="output folder (default generated/<name>)")
    c.add_argument("--name", help="C prefix and package name (default: the model's name)")
    c.add_argument("--floating", action="store_true", help="URDF: add a free joint at the root")
    c.add_argument("--chunk", type=int, default=1000, help="statements per C function chunk")
    c.add_argument("--opt", choices=["1", "2", "3"], default=None,
                   help="gcc optimisation level (default 2; 1 compiles about twice as fast, "
                        "runs 5-15%% slower: for very large models)")
    c.add_argument("--method", choices=["1", "2"], default="1",
                   help="forward dynamics: 1 = fully unrolled (fastest to run); 2 = passes 4-6 as "
                        "loops over the bodies with one kernel per joint class (Si & Guenter "
                        "Method II: smaller code, faster compile)")
    c.add_argument("--mass-matrix", choices=["auto", "unrolled", "loop"], default="auto",
                   help="mass matrix code: unrolled (every entry straight-line, fastest for "
                        "small trees, grows as n^2), loop (world-frame columns, vectorised dot "
                        "products: O(n) code), auto (loop from 30 coordinates on; default)")
    c.add_argument("--force", action="store_true", help="regenerate even if up to date")
    c.add_argument("--no-compile", action="store_true", help="write the sources only")
    c.set_defaults(func=cmd_codegen)

    s = sub.add_parser("show", help="print the emitted equations of a function, a joint's "
                       "derived quantities or the body tree")
    s.add_argument("model")
    s.add_argument("--function", choices=["fd", "id", "mass", "bias", "forward_dynamics",
                                          "inverse_dynamics", "mass_matrix", "bias_forces"],
                   help="print the unrolled program of this function, grouped by recursion pass "
                        "and body, with operation counts before and after simplification")
    s.add_argument("--body", help="with --function: only the groups of this body (or joint)")
    s.add_argument("--joint", help="joint name (default: all joints)")
    s.add_argument("--what", default="all", choices=["all", "G", "S", "Sdot"],
                   help="with --joint: which quantity")
    s.add_argument("--format", default="text", choices=["text", "latex", "c"],
                   help="text, a standalone LaTeX document, or C")
    s.add_argument("--tree", action="store_true", help="print the body tree")
    s.add_argument("--floating", action="store_true", help="URDF: add a free joint at the root")
    s.set_defaults(func=cmd_show)

    d = sub.add_parser("draw", help="draw a 3-D stick figure of the model (needs matplotlib)")
    d.add_argument("model")
    d.add_argument("-o", "--output", required=True, help="picture file (.png, .pdf, .svg)")
    d.add_argument("--q", nargs="+", type=float, metavar="X",
                   help="the nq coordinates in order (default: the model's initial q, else 0)")
    d.add_argument("--elev", type=float, default=20.0, help="view elevation in degrees")
    d.add_argument("--azim", type=float, default=-60.0, help="view azimuth in degrees")
    d.add_argument("--no-labels", action="store_true", help="do not write body names")
    d.add_argument("--floating", action="store_true", help="URDF: add a free joint at the root")
    d.set_defaults(func=cmd_draw)

    h = sub.add_parser("charts", help="write the 12 Euler charts (Sueda App. A) as C and Python")
    h.add_argument("-o", "--output", default="charts", help="output folder (default charts/)")
    h.set_defaults(func=cmd_charts)
    add_simulate_parser(sub)
    return p


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except SystemExit as exc:            # --help, --version
        return exc.code
    except KeyboardInterrupt:
        print("scleron: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:              # `scleron show ... | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except (ModelError, BuildError, CommandError) as exc:
        print(f"scleron: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("SCLERON_DEBUG"):
            raise
        from .draw import MissingDependency
        if isinstance(exc, (OSError, ValueError, MissingDependency)):
            print(f"scleron: error: {_one_line(exc)}", file=sys.stderr)
        else:
            print(f"scleron: error: {type(exc).__name__}: {_one_line(exc)} (an internal error: "
                  "please report it; SCLERON_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
