"""The `scleron` command: codegen, show, draw, charts.

Every error is one line on stderr and exit status 2, never a traceback (SCLERON_DEBUG=1
shows the traceback of an unexpected one). A failed command writes nothing: codegen installs
its output folder only when everything succeeded (and removes the parent folders it created
for it), draw writes its picture whole or not at all.
"""
import argparse
import contextlib
import glob
import json
import math
import os
import re
import signal
import sys
import threading
import time
import warnings

from . import __version__
from .errors import (BuildError, ForeignTargetError, ModelError, command_start, name_list, one_line,
                     short_name)

with command_start():                   # Ctrl-C while these import: one line, not a traceback
    from .model.load import add_load_arguments, load_arguments
    from .functions import FUNCTIONS
    from .show import one_frame_families
    from .simulate import add_parser as add_simulate_parser


class CommandError(Exception):
    """A bad command line (a one-line error, exit status 2)."""


# A value such as -1e-3, -.5 or -inf is a (negative) number, not an option: argparse's own test
# knows only -1 and -1.5 and answers "expected one argument" for the others.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.I)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is in --help), and negative numbers
    in scientific notation are values (NEGATIVE_NUMBER)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message):
        raise CommandError(f"{message} (see `{self.prog} --help`)")


def _load(path, args):
    from .model import load_model
    return load_model(path, **load_arguments(args))


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


def _binaries(folder):
    """The compiled modules in a folder, with their modification times."""
    out = {}
    for pattern in ("*.so", "*.pyd"):
        for path in glob.glob(os.path.join(glob.escape(folder), pattern)):
            try:
                out[path] = os.path.getmtime(path)
            except OSError:
                pass
    return out


def _stored_functions(folder):
    """({function: (statements, operations)}, {function: code form}) as scleron.json of a
    generated folder records them (empty where it does not)."""
    try:
        with open(os.path.join(folder, "scleron.json")) as fh:
            functions = json.load(fh).get("functions") or {}
        functions = {str(f): v for f, v in functions.items() if isinstance(v, dict)}
        return ({f: (v.get("statements", "?"), v.get("ops", "?")) for f, v in functions.items()},
                {f: str(v.get("code", "")) for f, v in functions.items()})
    except (OSError, ValueError, AttributeError):
        return {}, {}


# a one-frame function's C name: its family, the frame's index, the reference
# (frame_jacobian_7_local)
ONE_FRAME_NAME = re.compile(r"(frame_[a-z]+?)_(\d+)(_[a-z]+)?")


def _operations(counts):
    """Multiplications + additions + function calls of an operation count ('21m + 11a + 2 fn'),
    or None: the operations the summary's other rows show (negations, which C folds into
    subtractions, are counted by `scleron show` only)."""
    m = re.fullmatch(r"\s*(\d+)m \+ (\d+)a \+ (\d+) fn\s*", str(counts))
    return sum(int(g) for g in m.groups()) if m else None


def _grouped(rows, forms):
    """The summary's rows with the one-frame functions of a family (frame_jacobian_0_local,
    frame_jacobian_1_local, ...) as one row: frame_jacobian_<k>_local, the statements of all
    of them, the operations of one call (the fewest and the most over the frames)."""
    out, groups = {}, {}
    for fname, (stmts, counts) in rows.items():
        m = ONE_FRAME_NAME.fullmatch(fname)
        if m is None:
            out[fname] = (stmts, counts, (forms or {}).get(fname, ""))
            continue
        key = f"{m.group(1)}_<k>{m.group(3) or ''}"
        groups.setdefault(key, []).append((stmts, counts, (forms or {}).get(fname, "")))
        out.setdefault(key, None)
    for key, members in groups.items():
        stmts = [s for s, _, _ in members]
        ops = [_operations(c) for _, c, _ in members]
        total = sum(stmts) if all(isinstance(s, int) for s in stmts) else "?"
        if None in ops:
            per = f"{len(members)} frame{'s' if len(members) > 1 else ''}"
        elif len(members) == 1:
            per = f"1 frame, {ops[0]} ops"
        else:
            per = f"{len(members)} frames, {min(ops)}-{max(ops)} ops each"
        forms_seen = sorted({f for _, _, f in members})
        out[key] = (total, per, forms_seen[0] if len(forms_seen) == 1 else ", ".join(forms_seen))
    return out


def _table(rows, forms=None):
    rows = _grouped(rows, forms)
    width = max([18] + [len(f) for f in rows])
    print(f"{'function':<{width}} {'statements':>10}  {'operations per call':<30} code")
    for fname, (stmts, counts, form) in rows.items():
        print(f"{fname:<{width}} {stmts:>10}  {str(counts):<30} {form}".rstrip())


class CodegenProgress:
    """codegen's progress lines on stderr: `scleron: 12.3 s: unroll: mass_matrix (3 of 7, ...)`.

    A model of LOUD_FROM bodies or more gets every line at once. A smaller one stays silent
    (its output is the summary alone) unless the run passes QUIET_FOR seconds: then the stage
    it is in is printed, and the lines after it. While a stage runs, a line repeats it every
    HEARTBEAT seconds with the time spent in it."""
    LOUD_FROM = 300
    QUIET_FOR = 10.0
    HEARTBEAT = 15.0

    def __init__(self, bodies, stream=None):
        self.stream = stream or sys.stderr
        self.loud = bodies >= self.LOUD_FROM
        self.t0 = time.perf_counter()
        self.message, self.since, self.printed = None, self.t0, None
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def __call__(self, message):
        with self.lock:
            self.message, self.since = message, time.perf_counter()
            if self.loud or self.since - self.t0 >= self.QUIET_FOR:
                self._print(message)

    def _print(self, text):
        now = time.perf_counter()
        self.printed = now
        try:
            self.stream.write(f"scleron: {now - self.t0:.1f} s: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def _beat(self):
        while not self.done.wait(1.0):
            with self.lock:
                now = time.perf_counter()
                if self.message is None or (not self.loud and now - self.t0 < self.QUIET_FOR):
                    continue
                if self.printed is None:
                    self._print(self.message)
                elif now - self.printed >= self.HEARTBEAT:
                    self._print(f"{self.message} (still running, {now - self.since:.0f} s)")

    def close(self):
        self.done.set()
        self.thread.join()


def _comma_list(text, option):
    """A comma-separated option as a list of names (None when not given); a name that holds a
    comma writes it as \\, (URDF link names may hold any character)."""
    if text is None:
        return None
    parts = [n.strip().replace("\\,", ",") for n in re.split(r"(?<!\\),", text)]
    if not any(parts):
        raise CommandError(f"{option} needs at least one name")
    if not all(parts):
        raise CommandError(f"{option} {text!r}: an empty name between commas")
    return parts


def _frames_option(text, model, option="--frames"):
    """--frames (or --wrench-frames) as a list of names (_comma_list, which strips the spaces
    around each name); a name that several frames give once stripped (' sp' and 'sp') is
    refused rather than one of them taken (' sp' silently gave the frame 'sp': an outside
    tester)."""
    names = _comma_list(text, option)
    twice = sorted({n for n in names or () if names.count(n) > 1})
    if twice:
        raise CommandError(f"{option} names {', '.join(map(repr, twice))} more than once: name "
                           "each frame once")
    every = model.frame_names()
    for name in names or ():
        same = [f for f in every if f.strip() == name]
        if len(same) > 1:
            raise CommandError(f"{option} {short_name(name)!r} names frames that differ only by "
                               f"spaces around them ({name_list(map(repr, same))}): select them "
                               "by their exact names with scleron.generate(..., "
                               f"{option[2:].replace('-', '_')}=[...])")
    return names


def cmd_codegen(args):
    from .pipeline import Report, generate
    if args.chunk < 1:
        raise CommandError(f"--chunk must be a positive number of statements, got {args.chunk}")
    for option, value in (("-o", args.output), ("--name", args.name)):
        if value is not None and not value.strip():      # (an empty value meant the default)
            raise CommandError(f"{option} is empty: give a "
                               f"{'folder' if option == '-o' else 'name'}, "
                               "or leave the option out for the default")
    t0 = time.perf_counter()
    model = _load(args.model, args)
    t_load = time.perf_counter() - t0
    report = Report(model.name, model.nv)
    from .pipeline import c_identifier
    # (the folder is the package's import name: a model named numpy gets generated/numpy_model,
    # whose import does not shadow numpy)
    out = args.output or os.path.join("generated", c_identifier(args.name or model.name))
    # said first: what is generated where (the work after it may take minutes)
    sizes = f"nq = nv = {model.nv}" if model.nq == model.nv else f"nq = {model.nq}, nv = {model.nv}"
    asked = args.name or model.name
    renamed = (f" (module and C prefix {c_identifier(asked)}: {asked!r} is not usable as a C "
               "and Python name)" if c_identifier(asked) != asked else "")
    print(f"{model.name}: {len(model.bodies)} bodies, {sizes} -> {out}{renamed}", flush=True)
    created = _missing_ancestors(out)
    before = _binaries(out)
    previous = _generated_from(out)
    try:
        cflags = None
        if args.opt is not None or args.march is not None:
            from .pipeline import cflags_at, cflags_for, default_cflags
            cflags = cflags_at(args.opt) if args.opt is not None else default_cflags()
            if args.march is not None:
                cflags = cflags_for(args.march, cflags)
                if args.no_compile and args.march != "native":
                    _warn_unknown_march(args.march)
        t0 = time.perf_counter()
        progress = CodegenProgress(len(model.bodies))
        foreign = None
        try:
            generate(model, out, args.name, chunk=args.chunk, force=args.force,
                     compile=not args.no_compile, report=report, cflags=cflags,
                     method=int(args.method), mass_matrix=args.mass_matrix,
                     functions=_comma_list(args.functions, "--functions"),
                     frames=_frames_option(args.frames, model), progress=progress,
                     cuda=_cuda_options(args),
                     wrench_frames=_frames_option(args.wrench_frames, model, "--wrench-frames"))
        except ForeignTargetError as e:     # built for the --march CPU: what was asked for
            foreign = e
        finally:
            progress.close()
        t_generate = time.perf_counter() - t0
    except BaseException:
        _remove_empty(created)
        raise
    if foreign is not None:
        print(f"scleron: warning: {foreign}", file=sys.stderr)
    _say_import_name(out)
    if (previous and not report.cache_hit
            and os.path.realpath(previous) != os.path.realpath(args.model)):
        why = ("" if args.output else " (models whose names make one identifier share a default "
               "folder: give -o or --name)")
        print(f"note: {out} held the code generated from {previous}; replaced{why}")
    if report.stale:
        print(f"regenerated: {report.stale}")
    if report.edited:
        print(f"regenerated: {', '.join(report.edited)} differed from what scleron wrote "
              "(edited by hand?); the folder now holds the generated sources again")
    if report.cache_hit:
        print("up to date (cache hit: same model, options and scleron version; --force "
              "regenerates)")
        stored, forms = _stored_functions(out)
        _table(stored, forms)
        _say_left_out(args, stored, model)
        _say_wrench_frames(args, stored, model)
        # a folder of sources only (a clone of the repository, --no-compile): loading it
        # compiled it just now
        compiled = not args.no_compile and _binaries(out) != before
        print(f"time: load {t_load:.2f} s, "
              + ("compile (the folder had no usable compiled module for this Python and CPU)"
                 if compiled else "check and load") + f" {t_generate:.2f} s, "
              f"total {t_load + t_generate:.2f} s")
        return 0
    _table(report.functions, report.forms)
    _say_left_out(args, report.functions, model)
    _say_wrench_frames(args, report.functions, model)
    times = {"load": t_load, **report.times}
    print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items())
          + f", total {sum(times.values()):.2f} s")
    return 0


def _say_wrench_frames(args, generated, model):
    """One line naming fext's rows where a function with fext was generated (an outside tester:
    --frames alone had made them that one frame, unnoticed until a shape error)."""
    if not any("fext" in f for f in generated):
        return
    names = (_comma_list(args.wrench_frames, "--wrench-frames") or
             _comma_list(args.frames, "--frames") or model.frame_names())
    option = ("--wrench-frames" if args.wrench_frames else
              "--frames; --wrench-frames chooses them" if args.frames else
              "every frame; --wrench-frames chooses them")
    shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
    print(f"fext: a row per frame of {shown} (wrench_frame_names, {option})")


def _say_import_name(out):
    """The folder's name is the package's import name: one `import` cannot spell (`my-robot`,
    `import`) is still loaded by importlib or scleron.load_generated, and the note says how."""
    import keyword
    package = os.path.basename(os.path.normpath(out))
    if "." in package or package == "__main__":    # (a submodule path; the running program)
        print(f"note: {package!r} is not a name importlib can load either ("
              + ("a dot separates a package from its module" if "." in package else
                 "the name of the running program's module") +
              f"): load the package with scleron.load_generated({out!r})")
    elif not package.isidentifier() or keyword.iskeyword(package):
        print(f"note: {package!r} is not a name `import` takes: load the package with "
              f"importlib.import_module({package!r}) (its parent folder on sys.path) or "
              f"scleron.load_generated({out!r})")


def _generated_from(folder):
    """The model file a generated folder was made from (its model_file.json), or None."""
    from .backends.folders import MODEL_FILE_RECORD
    try:
        with open(os.path.join(folder, MODEL_FILE_RECORD)) as fh:
            return os.path.normpath(os.path.join(folder, json.load(fh)["path"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _say_left_out(args, generated, model):
    """One line naming the functions a default generation left out for this model (their
    spec's by_default said no: the derivatives above 12 coordinates, ...), with how to add them;
    nothing where --functions chose. On a mimic-coupled model only those its coupling has
    (with_mimic, docs/mimic.md): the others are refused when named (an outside tester)."""
    from .functions import (FRAME_FUNCTIONS, ONE_FRAME_FUNCTIONS_UP_TO_FRAMES,
                            STRAIGHT_LINE_DERIVATIVES_UP_TO_NV, named_only)
    coupled = any(j.mimic is not None for j in model.joints)
    if args.functions is not None and args.functions.strip() == "all":
        # (those a coupled tree lacks are refused when named: docs/mimic.md, not size)
        left = [f for f, spec in FUNCTIONS.items() if spec.in_all is not None
                and f not in generated and (spec.with_mimic or not coupled)]
        if left:
            print(f"all: left out above {STRAIGHT_LINE_DERIVATIVES_UP_TO_NV} coordinates, where "
                  f"their straight-line code grows with nv^2 times the frames: {', '.join(left)}; "
                  "name them (with --wrench-frames, or --frames, the contacts) to generate them")
        frames = [f for f in FRAME_FUNCTIONS if not any(g.startswith(f + "_") for g in generated)]
        if frames and not coupled:
            print(f"all: left out above {ONE_FRAME_FUNCTIONS_UP_TO_FRAMES} frames, four functions "
                  f"a frame: the one-frame functions {', '.join(frames)}; name them to generate "
                  "them (or --frames a,b,... for fewer frames)")
    if args.functions is not None:
        return
    have = set(generated)
    left = [f"{f} ({s.aliases[-1]})" if getattr(s, "aliases", None) else f
            for f, s in {**FUNCTIONS, **FRAME_FUNCTIONS}.items()
            if s.by_default not in (None, named_only) and getattr(s, "said_when_left_out", True)
            and (getattr(s, "variant", None) is None or s.variant[0] == f)
            and (not coupled or getattr(s, "with_mimic", False))
            and f not in have and not any(g.startswith(f + "_") for g in have)]
    if left:
        print(f"not generated by default for this model: {', '.join(left)}; add them with "
              "--functions +NAME,...")


def _cuda_options(args):
    """generate's cuda= from --cuda, --cuda-arch and --cuda-split (False without --cuda)."""
    if not args.cuda:
        if args.cuda_arch or args.cuda_split:
            raise CommandError("--cuda-arch and --cuda-split need --cuda")
        return False
    split = args.cuda_split or "auto"
    if split != "auto":
        try:
            split = int(split)
        except ValueError:
            split = -1
        if split < 0:
            raise CommandError(f"--cuda-split must be auto, 0 (one kernel per function) or a "
                               f"positive number of statements, got {args.cuda_split!r}")
        split = split or None                       # 0: one kernel per function
    return {"arch": args.cuda_arch, "split": split}


def cmd_show(args):
    from .show import show
    if args.body is not None and args.function is None:
        raise CommandError("--body NAME needs --function (" + ", ".join(
            f.aliases[0] for f in FUNCTIONS.values() if f.aliases) + ")")
    if args.frame is not None and args.function is None:
        raise CommandError("--frame NAME needs --function (" + ", ".join(one_frame_families())
                           + ")")
    if args.tree and (args.function or args.joint):
        raise CommandError("--tree cannot be combined with --function or --joint")
    if args.function and args.joint:
        raise CommandError("give --function or --joint, not both")
    model = _load(args.model, args)
    text = show(model, joint=args.joint, what=args.what, fmt=args.format, tree=args.tree,
                function=args.function, body=args.body, frame=args.frame)
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
    from .charts import write_charts
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise CommandError(f"-o {args.output}: is a file, not a folder")
    try:
        written = write_charts(args.output)
    except OSError as exc:          # (nothing written: all three files or none)
        where = exc.filename if exc.filename not in (None, args.output) else ""
        raise CommandError(f"-o {args.output}: {where + ': ' if where else ''}"
                           f"{exc.strerror or exc}") from None
    for path in written:
        print(path)
    return 0


def finite_float(text):
    """An option's number, finite (argparse's float takes nan and inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return value


def build_parser():
    p = _Parser(prog="scleron", description="Linear-time dynamics code generation "
                "for multibody systems with general scleronomic joints.")
    p.add_argument("--version", action="version", version=f"scleron {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND",
                           help="what to do (each command has its own --help)")

    c = sub.add_parser("codegen", help="generate, compile and load C dynamics for a model "
                       "(into generated/<name> unless -o DIR)",
                       description="Derive the model's joints, unroll its dynamics into "
                       "straight-line C, compile it and write an importable package (into "
                       "generated/<name> unless -o DIR); up to date folders are left as they are.")
    c.add_argument("model", help="model file (.yaml, .yml, .urdf, .osim; .xml or .mjcf: URDF or "
                                 "MJCF by its root element)")
    c.add_argument("-o", "--output", metavar="DIR",
                   help="output folder, a package imported by the folder's name (so not a "
                        "module's: -o build/numpy is refused); default generated/<name>, the name "
                        "made a Python and C identifier: my-bot -> my_bot, numpy -> numpy_model")
    c.add_argument("--name", help="C prefix and package name (default: the model's name)")
    add_load_arguments(c)
    c.add_argument("--chunk", type=int, default=1000, metavar="N",
                   help="statements per C function chunk (default 1000)")
    c.add_argument("--opt", choices=["0", "s", "1", "2", "3"], default=None,
                   help="gcc optimisation level (default s, or $SCLERON_OPT: the generated "
                        "straight-line code runs fastest and compiles fastest when small; 0 "
                        "compiles in a tenth of the time and runs slower, for tests and "
                        "debugging; 1, 2, 3 for comparison)")
    c.add_argument("--march", metavar="CPU", default=None,
                   help="the CPU the compiled code is for: native (default) uses this machine's "
                        "instruction sets, and on a CPU without them the package compiles its "
                        "own copy when first imported; a gcc -march name such as x86-64-v3 "
                        "builds a folder to ship to machines that cannot compile it")
    c.add_argument("--method", choices=["1", "2"], default="1",
                   help="forward dynamics: 1 = fully unrolled (fastest to run); 2 = passes 4-6 as "
                        "loops over the bodies with one kernel per joint class (Si & Guenter "
                        "Method II: smaller code, faster compile)")
    c.add_argument("--mass-matrix", choices=["auto", "unrolled", "loop"], default="auto",
                   help="mass matrix code: unrolled (every entry straight-line, fastest for "
                        "small trees, grows as n^2), loop (world-frame columns, vectorised dot "
                        "products: O(n) code), auto (loop where M has 465 entries between "
                        "related coordinates, a 30-coordinate chain's, and 3/4 of its upper "
                        "triangle, or 1,225 between different joints, a 50-coordinate "
                        "chain's; default)")
    c.add_argument("--functions", metavar="F,G,...",
                   help="generate only these functions (names or aliases, comma-separated); "
                        "+F,G,... generates the default ones and these; all: every function "
                        "the model can have (a mimic-coupled tree: those docs/mimic.md lists; "
                        "above 24 coordinates not those whose straight-line code grows with nv^2 "
                        "times the frames: the frames' derivatives fvd, fad, the world-axes fext's "
                        "derivatives, the step's derivatives with fext). Default: "
                        "every function "
                        "but the derivatives and M^-1 above 12 coordinates, the frame Jacobians "
                        "of many frames, the Jacobians of integrate and difference (dint, ddiff) "
                        "without a quaternion joint, and mimic-coupled trees' frame, derivative, "
                        "M^-1, centroidal and Jacobian functions (codegen names what it left "
                        "out and could add, but for dint and ddiff, constants there); the "
                        "dynamics under "
                        "external wrenches (fd_fext, id_fext, fdd_fext, idd_fext; _lwa: in world "
                        "axes), the Euler "
                        "step and its Jacobians (step, step_derivatives, and with fext), the "
                        "frames' velocity and acceleration derivatives (fvd, fad) and the "
                        "one-frame velocity and acceleration only when named")
    c.add_argument("--frames", metavar="A,B,...",
                   help="the frames the frame functions cover, in this order (default: every "
                        "body, URDF link and declared frame; a comma within a name as \\,)")
    c.add_argument("--wrench-frames", metavar="A,B,...",
                   help="the frames of the external wrenches' rows (fext: contacts), in this "
                        "order (default: those of --frames)")
    c.add_argument("--cuda", action="store_true",
                   help="also write NAME_dynamics.cu and build it with nvcc: every function on a "
                        "GPU, one thread per state (dyn.cuda; docs/cuda.md)")
    c.add_argument("--cuda-arch", metavar="ARCH", default=None,
                   help="with --cuda: GPU architectures, auto (default: this machine's GPU, else "
                        "sm_80 and sm_90), native, sm_90 or sm_80,sm_90")
    c.add_argument("--cuda-split", metavar="N", default=None,
                   help="with --cuda: cut each function into kernels of about N statements; 0: "
                        "one kernel per function; default auto (kernels of 1000 statements for "
                        "functions over 5500)")
    c.add_argument("--force", action="store_true", help="regenerate even if up to date")
    c.add_argument("--no-compile", action="store_true", help="write the sources only")
    c.set_defaults(func=cmd_codegen)

    s = sub.add_parser("show", help="print the emitted equations of a function, a joint's "
                       "derived quantities or the body tree",
                       description="Print the emitted equations of a generated function (grouped "
                       "by pass and body, with operation counts), a joint's derived coordinates, "
                       "G, S and Sdot, or the body tree; nothing is compiled.")
    s.add_argument("model", help="model file (.yaml, .yml, .urdf, .osim; .xml or .mjcf: URDF or "
                                 "MJCF by its root element)")
    aliases = [a for f in FUNCTIONS.values() for a in f.aliases]
    s.add_argument("--function", choices=aliases + list(FUNCTIONS) + list(one_frame_families()),
                   metavar="NAME",
                   help="print the unrolled program of this function (a name or alias: "
                        + ", ".join(f"{f.name} ({'/'.join(f.aliases)})" for f in FUNCTIONS.values()
                                    if f.variant is None or f.variant[0] == f.name)
                        + "; frame functions take _local or _world for the other references; "
                        "the one-frame functions " + ", ".join(one_frame_families())
                        + " with --frame), grouped by recursion pass and body, with operation "
                        "counts before and after simplification")
    s.add_argument("--body", metavar="NAME",
                   help="with --function: only the groups of this body (or joint)")
    s.add_argument("--frame", metavar="NAME",
                   help="with a one-frame --function (frame_jacobian, frame_placement): the frame")
    s.add_argument("--joint", metavar="NAME", help="print this joint's coordinates, G, S and Sdot "
                   "(default, without --function or --tree: every joint's)")
    s.add_argument("--what", default="all", choices=["all", "G", "S", "Sdot"],
                   help="which quantity of each joint shown (all joints, or --joint NAME)")
    s.add_argument("--format", default="text", choices=["text", "latex", "c"],
                   help="text, a standalone LaTeX document, or C")
    s.add_argument("--tree", action="store_true",
                   help="print the body tree: each body under its parent, with its joint's type "
                        "and DOF")
    add_load_arguments(s)
    s.set_defaults(func=cmd_show)

    d = sub.add_parser("draw", help="draw a 3-D stick figure of the model (needs matplotlib)",
                       description="Draw a 3-D stick figure of the model at q (a dot per "
                       "joint, a segment to each child, the joint axes) into a picture file; needs "
                       "matplotlib.")
    d.add_argument("model", help="model file (.yaml, .yml, .urdf, .osim; .xml or .mjcf: URDF or "
                                 "MJCF by its root element)")
    d.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="picture file (.png, .pdf, .svg)")
    d.add_argument("--q", nargs="+", type=float, metavar="X",
                   help="the nq coordinates in order (default: the model's initial q, else 0)")
    d.add_argument("--elev", type=finite_float, default=20.0, metavar="DEG",
                   help="view elevation in degrees (default 20)")
    d.add_argument("--azim", type=finite_float, default=-60.0, metavar="DEG",
                   help="view azimuth in degrees (default -60)")
    d.add_argument("--no-labels", action="store_true", help="do not write body names")
    add_load_arguments(d)
    d.set_defaults(func=cmd_draw)
    add_simulate_parser(sub)

    h = sub.add_parser("charts", help="write the 12 Euler charts (Sueda App. A) as C and Python "
                       "(euler_charts.c, .h, .py) into charts/ unless -o DIR",
                       description="Write the 12 Euler-angle charts of Sueda's Appendix A (each "
                       "chart's rotation, S, Sdot, their derivatives and the inverse map, derived "
                       "with sympy) as C and Python: "
                       "euler_charts.c, euler_charts.h and euler_charts.py, into charts/ unless "
                       "-o DIR.")
    h.add_argument("-o", "--output", default="charts", metavar="DIR",
                   help="output folder (default charts/ in the current folder)")
    h.set_defaults(func=cmd_charts)
    return p


# ---- the synopsis: README.md's command-line reference, written from the parser ------------------
SYNOPSIS_BEGIN = ("<!-- synopsis: written from scleron.cli.build_parser by "
                  "`python -m scleron.cli --synopsis README.md`; do not edit by hand -->")
SYNOPSIS_END = "<!-- end of synopsis -->"
SYNOPSIS_WIDTH = 100


def _metavar(action):
    if action.metavar is not None:
        return action.metavar
    if action.choices is not None:
        return "|".join(str(c) for c in action.choices)
    return action.dest.upper()


def _argument(action):
    """How one argument is written in a usage line: `MODEL`, `--chunk N`, `--q X ...`."""
    if isinstance(action, argparse._SubParsersAction):
        return f"{_metavar(action)} ..."
    if not action.option_strings:
        return _metavar(action)
    flag = action.option_strings[0]
    if action.nargs == 0:
        return flag
    meta = _metavar(action)
    if action.nargs in ("+", "*"):
        meta = f"{meta} ..."
    elif action.nargs == "?":
        meta = f"[{meta}]"
    return f"{flag} {meta}"


def _label(action):
    """How one argument is named in the option list: `-o, --output DIR`, `MODEL`."""
    if not action.option_strings:
        return _metavar(action)
    text = ", ".join(action.option_strings)
    return text if action.nargs == 0 else f"{text} {_argument(action).split(' ', 1)[1]}"


def _help(action, prog):
    text = action.help or ""
    try:                                           # argparse's %(default)s, %(prog)s, %%
        text = text % dict(vars(action), prog=prog)
    except (KeyError, TypeError, ValueError):
        pass
    return " ".join(text.split())


def _wrap(words, first, indent, width):
    """words joined by spaces into lines of at most width (a longer word gets a line of its
    own): the first line starts with first, the others with indent."""
    lines, line = [], first
    for word in words:
        if line.strip() and len(line) + 1 + len(word) > width and line != first:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line}{'' if line.endswith(' ') or not line.strip() else ' '}{word}"
    lines.append(line)
    return [ln.rstrip() for ln in lines]


def _visible(parser):
    return [a for a in parser._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]


def _command_text(parser, prog, summary, width, column):
    actions = _visible(parser)
    positionals = [a for a in actions if not a.option_strings]
    optionals = [a for a in actions if a.option_strings]
    commands = [a for a in positionals if isinstance(a, argparse._SubParsersAction)]
    positionals = [a for a in positionals if a not in commands]
    usage = ([_argument(a) for a in positionals]
             + [_argument(a) if a.required else f"[{_argument(a)}]" for a in optionals]
             + [_argument(a) for a in commands])
    lines = _wrap(usage, prog + " ", " " * (len(prog) + 1), width)
    if summary:
        lines += _wrap(summary.split(), "    ", "    ", width)
    for action in positionals + optionals + commands:
        head = f"    {_label(action)}"
        if len(head) + 2 > column:                 # a long name: its help on the next line
            lines.append(head)
            head = ""
        lines += _wrap(_help(action, prog).split(), head.ljust(column), " " * column, width)
    return lines


def synopsis(parser=None, width=SYNOPSIS_WIDTH, column=26):
    """Every command and every option of `scleron`, with its help text, as plain text.

    Written from the argparse parser (build_parser), so it cannot leave an option out;
    README.md carries it between SYNOPSIS_BEGIN and SYNOPSIS_END (tests/test_cli.py checks).
    """
    parser = parser or build_parser()
    prog = parser.prog
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    blocks = [_command_text(parser, prog, parser.description, width, column)]
    blocks[0].append("    -h, --help".ljust(column) + f"the full help of {prog} or of a command "
                     f"({prog} COMMAND --help)")
    for sub in commands:
        summaries = {c.dest: c.help for c in sub._choices_actions}
        for name, subparser in sub.choices.items():
            blocks.append(_command_text(subparser, f"{prog} {name}", summaries.get(name),
                                        width, column))
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"


def synopsis_block(parser=None):
    """The synopsis as README.md holds it: markers, and a fenced block between them."""
    return f"{SYNOPSIS_BEGIN}\n```\n{synopsis(parser)}```\n{SYNOPSIS_END}"


def readme_synopsis(text):
    """The text between the synopsis markers of a README, markers included, or None."""
    start = text.find(SYNOPSIS_BEGIN)
    end = text.find(SYNOPSIS_END, start)
    if start < 0 or end < 0:
        return None
    return text[start:end + len(SYNOPSIS_END)]


def update_readme(path):
    """Rewrites the synopsis between the markers of the README at path; True if it changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    old = readme_synopsis(text)
    if old is None:
        raise CommandError(f"{path}: no synopsis markers ({SYNOPSIS_BEGIN} ... {SYNOPSIS_END})")
    new = synopsis_block()
    if old == new:
        return False
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(old, new, 1))
    return True


_one_line = one_line                # (errors.one_line: the line a command prints)


def _warn_unknown_march(march):
    """--no-compile --march X where this machine's compiler does not know X: a warning (the
    folder is written, and compiles where a compiler knows X: another architecture's CPU)."""
    from .backends.c.build import march_problem
    problem = march_problem(march)
    if problem:
        warnings.warn(f"--march {march}: this machine's C compiler does not know it ({problem}); "
                      "the folder compiles only where a compiler does (at its first import)")


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A model's warnings (InertiaWarning, MimicWarning, MjcfWarning, OsimWarning...) as one
    line each, like the errors, instead of Python's file:line and source-line form."""
    print(f"scleron: warning: {_one_line(message)}", file=sys.stderr)


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, a job scheduler's timeout), raised like Ctrl-C so that the same clean-up
    runs: temporary files and folders removed, compilers stopped (a terminated simulate left
    its half-written .npz beside the output). The process then ends by the signal, as it would
    have without scleron's handler."""


def main(argv=None):
    owned = []                      # [True] while this call holds SIGTERM (_terminate_unwinds)
    try:
        with _terminate_unwinds(owned), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _main(argv)
    except Terminated:
        if not owned:               # another main() up the stack holds it: its clean-up too
            raise
        for stream, text in ((sys.stderr, "scleron: terminated\n"), (sys.stdout, "")):
            try:                    # what was printed is not lost: the signal ends the
                stream.write(text)  # process without flushing Python's buffers
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        if os.name == "posix":
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)      # the default handler again: ends here
        return 143


@contextlib.contextmanager
def _terminate_unwinds(owned):
    """SIGTERM raises Terminated while the command runs, only where nobody else handles it (the
    main thread of the main interpreter, the default handler: main() is also called in-process
    by other programs); a second SIGTERM waits for the clean-up. The default handler afterwards.
    owned gets True while the handler is this call's."""
    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    try:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
            owned.append(True)
            signal.signal(signal.SIGTERM, terminate)
    except (AttributeError, ValueError, OSError):     # no SIGTERM; a sub-interpreter
        owned.clear()
    try:
        yield
    finally:
        if owned:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _main(argv):
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except SystemExit as exc:            # --help, --version
        return exc.code
    except Terminated:
        raise                                # (main says so and ends by the signal)
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


def _synopsis_main(argv):
    """python -m scleron.cli --synopsis             prints the synopsis;
    python -m scleron.cli --synopsis README.md   rewrites it between the README's markers."""
    if not argv:
        sys.stdout.write(synopsis())
        return 0
    try:
        changed = update_readme(argv[0])
    except (OSError, CommandError) as exc:
        print(f"scleron: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    print(f"{argv[0]}: synopsis {'updated' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--synopsis"]:
        sys.exit(_synopsis_main(sys.argv[2:]))
    sys.exit(main())
