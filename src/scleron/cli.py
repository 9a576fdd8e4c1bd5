"""The `scleron` command: codegen, show, charts.

Errors in the input are one line on stderr and exit status 2, never a traceback.
"""
import argparse
import os
import sys
import time

from . import __version__
from .errors import BuildError, ModelError


def _load(path, args):
    from .model import load_model
    kw = {}
    if getattr(args, "floating", False):
        kw["floating"] = True
    return load_model(path, **kw)


def cmd_codegen(args):
    from .pipeline import Report, generate
    t0 = time.perf_counter()
    model = _load(args.model, args)
    t_load = time.perf_counter() - t0
    report = Report(model.name, model.nv)
    out = args.output or os.path.join("generated", args.name or model.name)
    generate(model, out, args.name, chunk=args.chunk, force=args.force,
             compile=not args.no_compile, report=report)
    print(f"{model.name}: {len(model.bodies)} bodies, nq = nv = {model.nv} -> {out}")
    if report.cache_hit:
        print("up to date (cache hit: same model, options and scleron version)")
        return 0
    print(f"{'function':<18} {'statements':>10}  operations")
    for fname, (stmts, counts) in report.functions.items():
        print(f"{fname:<18} {stmts:>10}  {counts}")
    times = {"load": t_load, **report.times}
    print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items())
          + f", total {sum(times.values()):.2f} s")
    return 0


def cmd_show(args):
    from .show import show
    model = _load(args.model, args)
    print(show(model, joint=args.joint, what=args.what, fmt=args.format, tree=args.tree))
    return 0


def cmd_charts(args):
    from .joints.charts import write_charts
    for path in write_charts(args.output):
        print(path)
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="scleron", description="Linear-time dynamics code generation "
                                "for multibody systems with general scleronomic joints.")
    p.add_argument("--version", action="version", version=f"scleron {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("codegen", help="generate, compile and load C dynamics for a model")
    c.add_argument("model", help="model file (.yaml, .yml, .urdf)")
    c.add_argument("-o", "--output", help="output folder (default generated/<name>)")
    c.add_argument("--name", help="C prefix and package name (default: the model's name)")
    c.add_argument("--floating", action="store_true", help="URDF: add a free joint at the root")
    c.add_argument("--chunk", type=int, default=1000, help="statements per C function chunk")
    c.add_argument("--force", action="store_true", help="regenerate even if up to date")
    c.add_argument("--no-compile", action="store_true", help="write the sources only")
    c.set_defaults(func=cmd_codegen)

    s = sub.add_parser("show", help="print a joint's derived quantities or the body tree")
    s.add_argument("model")
    s.add_argument("--joint", help="joint name (default: all joints)")
    s.add_argument("--what", default="all", choices=["all", "G", "S", "Sdot"])
    s.add_argument("--format", default="text", choices=["text", "latex"])
    s.add_argument("--tree", action="store_true", help="print the body tree")
    s.add_argument("--floating", action="store_true", help="URDF: add a free joint at the root")
    s.set_defaults(func=cmd_show)

    h = sub.add_parser("charts", help="write the 12 Euler charts (Sueda App. A) as C and Python")
    h.add_argument("-o", "--output", default="charts", help="output folder (default charts/)")
    h.set_defaults(func=cmd_charts)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ModelError, BuildError) as exc:
        print(f"scleron: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scleron: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"scleron: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
