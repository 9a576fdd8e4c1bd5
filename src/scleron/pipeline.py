"""scleron.generate: model -> joints -> recursions -> programs -> C -> compiled module.

The one place that wires the layers together. Each stage is timed; the result is cached by a
content hash of (model, options, scleron version, templates), so regenerating an unchanged
model costs only the hash. `progress=` (a callable taking one line of text) hears each stage
start, each function's unrolling and the compiler's parts: a large model takes minutes.
"""
import hashlib
import json
import os
import re
import shlex
import time
from dataclasses import dataclass, field, replace

from . import __version__
from .backends import backend as get_backend
from .backends.c.printer import NonFiniteConstant
from .backends.c.render import (PY_MODULES, c_comment,  # noqa: F401  (names for C and Python)
                                c_identifier)
from .backends.cuda import cuda_options, find_nvcc
from .backends.folders import (clean_stale, dir_lock, discard_temp_folder, edited_sources,
                               install_folder, make_temp_folder, record_initial_state,
                               record_model_file, recover)
from .dynamics.checks import check_model_dynamics, overflow_error
from .errors import ModelError
from .dynamics.frames import frame_columns
from .dynamics.tree import Tree, configuration_meanings
from .functions import FRAME_FUNCTIONS, FUNCTIONS, frame_family, function_spec, uncoupled
from .joints.registry import coordinate_unit
from .model import model_to_dict
from .unroll import FORMS, frame_loops_pay, function_code, pair_loops_pay, related_pairs

# -fno-math-errno and -fno-trapping-math change no result (no errno, no FP traps are used);
# they let gcc inline and vectorise floor/sqrt; -ffp-contract=fast allows FMA. -Os rather than
# -O2: the straight-line code runs once per call, so its size is what the front end waits on
# (gcc 12, this machine; the loops keep -O3 by their own attribute). Against -O2, instructions
# per call (callgrind): panda FD 2,793 -> 2,306, its inverse-dynamics derivatives 8,395 -> 7,388,
# forward-dynamics derivatives 11,180 -> 9,820; the fastest of 40 timed samples, interleaved:
# panda FD 428 -> 394 ns, fdd 1,554 -> 1,385, solo12 fdd 4,601 -> 3,380, RC20 M 772 -> 562,
# RC50 fdd 60.6 -> 44.0 us; code 12 % smaller; solo12 compiles in 6.8 s instead of 9.4 s.
DEFAULT_CFLAGS = ["-Os", "-g0", "-march=native", "-fno-math-errno", "-fno-trapping-math",
                  "-ffp-contract=fast", "-std=c99"]

# the levels `scleron codegen --opt` and $SCLERON_OPT choose between: 0 compiles in about a tenth
# of the time and runs several times slower (for test suites and debugging the generated C)
OPT_LEVELS = ("0", "s", "1", "2", "3")


def cflags_at(level):
    """DEFAULT_CFLAGS with the optimisation level swapped for -O<level>, nothing else."""
    if level not in OPT_LEVELS:
        raise ValueError(f"optimisation level must be one of {', '.join(OPT_LEVELS)}, "
                         f"not {level!r}")
    return [f"-O{level}" if f.startswith("-O") else f for f in DEFAULT_CFLAGS]


def cflags_for(march, flags):
    """flags with -march=native swapped for -march=<march>: the CPU the compiled code is for
    (native: this machine's instruction sets; a name such as x86-64-v3 for a folder shipped to
    machines that cannot compile it, gcc's -march values)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", march or ""):
        raise ValueError(f"--march must be a gcc -march name (native, x86-64-v3, armv8-a, ...), "
                         f"got {march!r}")
    return [f"-march={march}" if f == "-march=native" else f for f in flags]


def default_cflags(environ=os.environ):
    """The flags of a build that names none: DEFAULT_CFLAGS, at the level of $SCLERON_OPT when
    it is set (part of the cache key like any flags: changing it rebuilds)."""
    level = environ.get("SCLERON_OPT", "").strip()
    if not level:
        return list(DEFAULT_CFLAGS)
    try:
        return cflags_at(level)
    except ValueError as exc:
        raise ValueError(f"SCLERON_OPT={level!r}: {exc}") from None


@dataclass
class Report:
    """What a generation did: sizes and times (seconds)."""
    name: str
    nv: int
    cache_hit: bool = False
    edited: list = field(default_factory=list)        # sources changed since scleron wrote them
    functions: dict = field(default_factory=dict)     # name -> (statements, OpCounts)
    forms: dict = field(default_factory=dict)         # name -> how its code is shaped
    times: dict = field(default_factory=dict)         # derive, unroll, render, compile
    stale: str = ""     # why the folder's earlier generation was not up to date (_why_stale)


def template_texts(backend="c"):
    return get_backend(backend).template_texts()


# the code that decides what is generated (the tools around it -- cli, show, simulate, draw --
# do not): its text is part of the cache key
GENERATING_CODE = ("algebra.py", "functions.py", "unroll.py", "pipeline.py", "dynamics", "joints",
                   "program", "backends")


def source_fingerprint():
    """A hash of the code that generates (GENERATING_CODE: its .py files and templates): the
    generated code depends on the recursions, the specs and the printers as much as on the
    templates, so a folder generated by other code is never taken for up to date."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for part in GENERATING_CODE:
        top = os.path.join(root, part)
        paths = [top] if os.path.isfile(top) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs
            if f.endswith((".py", ".j2")))
        for path in paths:
            h.update(os.path.relpath(path, root).encode())
            with open(path, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def cache_key(model, options):
    blob = json.dumps({"model": model_to_dict(model), "options": options, "version": __version__,
                       "templates": template_texts(), "code": source_fingerprint()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


METHODS = (1, 2)
MASS_FORMS = ("auto", "unrolled", "loop")
# "auto" picks the loop form from this many entries of M's upper triangle that can be nonzero on
# (mass_matrix_entries; a chain's nv (nv + 1) / 2: 465 = 30 coordinates, benchmarks/results/
# results.md, "Code generation variants"; README "The generated code"), where at least
# MASS_LOOP_FILL of the upper triangle can be nonzero (a chain, or nearly). A branched tree takes
# the loop form from a 50-coordinate chain's 1,225 entries between different joints on (its
# 1,275 less the 50 of its joints' own blocks): its loops run over short ranges, and the unrolled
# CRBA folds what they multiply (a free flyer's structural zeros; a childless free body's block
# is constant). Measured, ns per call unrolled / loop: talos_reduced on a free flyer (nv 38, 369
# entries) 454 / 944, talos_full_v2 (nv 50, 567 entries, 44 %) 728 / 1,370; RC50 (1,275
# entries) 2,992 / 2,548; MuJoCo's humanoid100 (101 free bodies, nv 627, 2,400 entries of which
# 2,121 in the free bodies' own blocks; an outside tester) 35 / 54 us.
MASS_LOOP_FROM_NV = 30
MASS_LOOP_FROM_ENTRIES = MASS_LOOP_FROM_NV * (MASS_LOOP_FROM_NV + 1) // 2
MASS_LOOP_FILL = 0.75
MASS_LOOP_BRANCHED_FROM_PAIRS = 50 * 49 // 2
# the forward dynamics' derivatives multiply M^-1 by dtau/dx in loops (scleron.unroll.ProductLoop)
# from this many coordinates on (fewer instructions than straight-line products from 4: UR5 6,556
# -> 6,219 per call, panda 15,690 -> 13,593; 3 coordinates 1,212 against 1,272); the entries
# between related bodies and M^-1 take loops from
# unroll.PAIR_LOOP_FROM_PAIRS pairs on (docs/derivatives.md, "Speed against Pinocchio")
PRODUCT_LOOP_FROM_NV = 4
# a function with a chained form (FunctionSpec.calls: the Euler step's derivatives) calls the
# functions it builds on, in their own forms (the forward dynamics' derivatives in loop form),
# from this many coordinates on, rather than unrolling them into its own straight-line code
CHAINED_FROM_NV = 12


def mass_form(nv, form="auto", coupled=False, entries=None, own=0):
    """'unrolled' (Featherstone's CRBA in body frames, every entry straight-line code: fastest
    for small trees, code grows with the entries between related bodies) or 'loop' (world-frame
    columns unrolled in O(n), the n^2/2 dot products as vectorised loops). entries: those of
    M's upper triangle that can be nonzero (mass_matrix_entries; a chain's, all, by default),
    own of them in the joints' own blocks. A coupled tree (mimic joints) has no loop form:
    'auto' is 'unrolled' there."""
    if form not in MASS_FORMS:
        raise ValueError(f"mass matrix form must be one of {MASS_FORMS}, not {form!r}")
    if form != "auto":
        return form
    upper = nv * (nv + 1) // 2
    entries = upper if entries is None else entries
    dense = entries >= MASS_LOOP_FILL * upper
    loop = (entries >= MASS_LOOP_FROM_ENTRIES if dense
            else entries - own >= MASS_LOOP_BRANCHED_FROM_PAIRS)
    return "loop" if loop and not coupled else "unrolled"


def model_mass_form(model, form="auto"):
    """mass_form for a Model: its coordinates, its mimic coupling and its entries of M."""
    own, between = mass_matrix_entries(model)
    return mass_form(model.nv, form, is_coupled(model), own + between, own)


def mass_matrix_entries(model):
    """(own, between): the entries of M's upper triangle that can be nonzero, in each joint's
    own block and between its coordinates and those of every joint above it (M_rc = 0 between
    coordinates of bodies on different branches; Featherstone 6.2). A mimic-coupled model's
    reduced coordinates drive several joints each: all of its upper triangle, between."""
    if is_coupled(model):
        return 0, model.nv * (model.nv + 1) // 2
    dof = {j.child: j.dof for j in model.joints}
    parent = {j.child: j.parent for j in model.joints}
    own = between = 0
    for j in model.joints:
        above, p = 0, j.parent
        while p in parent:
            above, p = above + dof[p], parent[p]
        own += j.dof * (j.dof + 1) // 2
        between += j.dof * above
    return own, between


def is_coupled(model):
    """Whether the model has mimic joints coupled to others (docs/mimic.md)."""
    return any(getattr(j, "mimic", None) is not None for j in model.joints)


def compiler_flags(cflags):
    """The gcc flags of a build: a list, a string of them ("-O2 -march=native", split as a shell
    would), or None for default_cflags()."""
    if isinstance(cflags, str):
        cflags = shlex.split(cflags)
    if not cflags:
        return list(default_cflags())
    if not isinstance(cflags, (list, tuple)) or not all(isinstance(f, str) for f in cflags):
        raise TypeError(f"cflags must be a list of strings or one string of flags, got "
                        f"{cflags!r}"[:200])
    return list(cflags)


def wanted_cuda(cuda):
    """generate's cuda= as None (no CUDA: None or False) or its checked options: True and every
    dict, {} included (the defaults), ask for CUDA code; anything else is refused."""
    return None if cuda is None or cuda is False else cuda_options(cuda)


def _options(name, chunk, cflags, method, mass, functions=None, frames=None, cuda=None,
             wrench_frames=None):
    opts = {"name": name, "chunk": chunk, "cflags": cflags}
    if cuda:                                        # (absent otherwise: C-only keys unchanged)
        opts["cuda"] = cuda_options(cuda)
    if functions is not None:                       # else the defaults, a function of the model
        plus, named = _plus(functions)              # (+: the model's defaults and these)
        opts["functions"] = ["+"] * plus + selected_functions(named)
    if frames is not None:
        # one name, or several
        opts["frames"] = [frames] if isinstance(frames, str) else list(frames)
    if wrench_frames is not None:
        opts["wrench_frames"] = ([wrench_frames] if isinstance(wrench_frames, str)
                                 else list(wrench_frames))
    if method != 1:
        opts["method"] = method
    if mass != "unrolled":
        opts["mass_matrix"] = mass
    return opts


def selected_functions(functions=None, tree=None):
    """The names of the functions to generate, in FUNCTIONS then FRAME_FUNCTIONS order: those
    named (names or aliases; naming a function with variants, e.g. frame_jacobians, takes them
    all, and so does a one-frame function: frame_velocity_local names frame_velocity), or by
    default every function whose spec's by_default(tree) allows it (the frame Jacobians: their
    code grows with the frames' columns). A first name written "+name" adds the names to the
    defaults (`--functions +fdd,idd`); "all" alone names every function (every_function)."""
    every = {**FUNCTIONS, **FRAME_FUNCTIONS}
    if functions is None:
        return [f for f, s in every.items()
                if s.by_default is None or tree is None or s.by_default(tree)]
    plus, functions = _plus(functions)
    if "all" in functions:
        if plus or len(functions) > 1:
            raise ValueError("functions: 'all' stands alone (every function the model can have)")
        return every_function(tree)
    wanted = {frame_family(f) or function_spec(f).name for f in functions}
    if plus:                            # "+fdd,idd": the defaults for this tree, and these
        wanted |= set(selected_functions(None, tree))
    wanted |= {s.name for s in FUNCTIONS.values() if s.variant and s.variant[0] in wanted}
    if not wanted:
        raise ValueError("functions: name at least one function")
    return [f for f in every if f in wanted]


def every_function(tree=None):
    """functions="all": every function, but on a mimic-coupled tree, which refuses the frame,
    derivative and centroidal functions, those whose spec says with_mimic; and on a big tree
    not those whose spec's in_all leaves it out (functions.STRAIGHT_LINE_DERIVATIVES_UP_TO_NV)."""
    every = {**FUNCTIONS, **FRAME_FUNCTIONS}
    fits = [f for f, spec in every.items() if tree is None or getattr(spec, "in_all", None) is None
            or spec.in_all(tree)]
    if tree is None or uncoupled(tree):
        return fits
    return [f for f in fits if f in FUNCTIONS and FUNCTIONS[f].with_mimic]


def _plus(functions):
    """(additive, names) of a functions= list (or a string "F,G,...", as on the command line):
    a first name written "+name" (`--functions +fdd,idd`) adds the names to the tree's
    defaults; the "+" is dropped from every name."""
    names = functions.split(",") if isinstance(functions, str) else functions    # "fd,id" too
    if not isinstance(names, (list, tuple, set, frozenset)) or \
            not all(isinstance(f, str) for f in names):
        raise TypeError(f"functions must be a list of function names or one string "
                        f"'F,G,...', got {functions!r}"[:200])
    names = list(names)
    names = [f.strip() if isinstance(f, str) else f for f in names]
    additive = bool(names) and isinstance(names[0], str) and names[0].startswith("+")
    if any(isinstance(f, str) and f.startswith("+") for f in names[1:]):
        raise ValueError("functions: a '+' goes before the first name only (+F,G,...: the "
                         "defaults and F, G, ...)")
    names = [f[1:] if isinstance(f, str) and f.startswith("+") else f for f in names]
    if additive and not all(isinstance(f, str) and f.strip() for f in names):
        raise ValueError("functions: name a function after the '+' (+F,G,...: the defaults and "
                         "F, G, ...)")
    return additive, names


def function_specs(names, tree):
    """The specs of the selected functions for this tree: FUNCTIONS entries as they are, the
    per-frame families (FRAME_FUNCTIONS) one spec per frame and reference."""
    out = []
    for f in names:
        out += FRAME_FUNCTIONS[f].specs(tree) if f in FRAME_FUNCTIONS else [FUNCTIONS[f]]
    return out


def code_form(spec, method, mass, nv, pairs=None, frame_columns=0, coupled=False):
    """The form of a function's code the options ask for, among those its spec offers (pairs:
    the tree's unroll.related_pairs, a chain's by default; frame_columns: the tree's
    frames.frame_columns). A coupled tree gets the unrolled form but where an option asks for
    another (_unroll refuses that)."""
    wanted = {"method2"} if method == 2 else set()
    if mass == "loop":
        wanted.add("mass_loop")
    if coupled:
        return next((f for f in spec.forms if f in wanted), "unrolled")
    if nv >= PRODUCT_LOOP_FROM_NV:
        wanted.add("product_loop")
    if pair_loops_pay(nv * (nv - 1) // 2 if pairs is None else pairs):
        wanted |= {"pair_loop", "minv_loop"}
    if frame_loops_pay(frame_columns):
        wanted.add("frame_loop")
    if nv >= CHAINED_FROM_NV:
        wanted.add("chained")
    return next((f for f in spec.forms if f in wanted), "unrolled")


@dataclass
class Generation:
    """Everything a backend renders: the model's layout and one FunctionCode per function."""
    name: str
    model_name: str
    source: str
    version: str
    key: str
    nq: int
    nv: int
    joint_names: list
    frame_names: list
    wrench_frame_names: list    # the frames of fext's rows (the external wrenches)
    option_names: dict          # {option: every value a caller may name}: all the model's frames
    neutral: list
    quaternions: list           # the index in q of each quaternion joint's [x, y, z, w]
    coordinate_names: list
    coordinate_descriptions: list
    velocity_names: list        # a name and a meaning per entry of qd (qdd, tau): nv of them
    velocity_descriptions: list
    known_functions: list       # every function scleron generates, by name (the hints of errors)
    mimic_unavailable: list     # of those, the ones a mimic-coupled model cannot have yet (or [])
    aliases: dict               # short name -> function name (fd -> forward_dynamics), for bind
    gravity: list
    functions: list
    chunk: int
    cflags: list
    method: int
    mass_form: str


def initial_state(model):
    """(q, qd) where the model starts (its q0 and qd0, as its file's `initial:`, MJCF qpos0 or
    OpenSim's default values give them), else the neutral q at rest: the generated package's
    initial_state(), recorded beside its code (folders.INITIAL_STATE_RECORD)."""
    q = model.neutral() if model.q0 is None else model.q0
    qd = [0.0] * model.nv if model.qd0 is None else model.qd0
    return [float(x) for x in q], [float(x) for x in qd]


def _silent(message):
    pass


def check_options_apply(names, method, mass_matrix, frames, wrench_frames=None):
    """A ValueError for an option that none of the functions to generate takes (it would change
    nothing, silently): method=2 and a mass_matrix form without a function that has that code
    form (FunctionSpec.forms), frames without a function that covers frames, wrench_frames
    without one that takes external wrenches."""
    def taking(form):
        return [f for f, spec in FUNCTIONS.items() if form in spec.forms]
    # (a chained form's calls are generated too: method=2 applies to a called forward dynamics)
    names = list(names) + [f for n in names if n in FUNCTIONS for f, _ in FUNCTIONS[n].calls]
    def covering(size):
        return [f for f, spec in FUNCTIONS.items()
                if any(size in a.shape for a in spec.inputs + spec.outputs)]
    covering_frames = covering("nframes") + list(FRAME_FUNCTIONS)
    if wrench_frames is None:                       # (frames then chooses fext's rows too)
        covering_frames += covering("nwrenches")
    unused = [f"{option} changes only {', '.join(takes[:4])}{', ...' if len(takes) > 4 else ''}"
              for option, given, takes in (
                  ("method=2 (--method 2)", method == 2, taking("method2")),
                  (f"mass_matrix={mass_matrix!r} (--mass-matrix)", mass_matrix != "auto",
                   taking("mass_loop")),
                  ("frames= (--frames)", frames is not None, covering_frames),
                  ("wrench_frames= (--wrench-frames)", wrench_frames is not None,
                   covering("nwrenches")))
              if given and not set(takes) & set(names)]
    if unused:                                  # (every unused option at once: an outside tester)
        raise ValueError(f"{'; '.join(unused)}, and none is generated here (the functions: "
                         f"{', '.join(names[:6])}{', ...' if len(names) > 6 else ''})")


def _unroll(tree, names, prefix, method, mass, progress):
    """The FunctionCode of each named function, telling progress which one is unrolled."""
    codes = []
    specs = function_specs(names, tree)
    # (the frames' columns only where a frame function is asked for: a coupled tree has none)
    columns = frame_columns(tree) if any("frame_loop" in s.forms for s in specs) else 0
    pairs = related_pairs(tree)         # (once: 0.13 s on RC1000, and `all` has 10,039 specs)
    form_of = lambda spec: code_form(spec, method, mass, tree.nv, pairs, columns,
                                     coupled=tree.coupling is not None)
    for spec in list(specs):            # a chained form's calls are generated functions too
        if form_of(spec) == "chained":
            specs += [FUNCTIONS[f] for f, _ in spec.calls if FUNCTIONS[f] not in specs]
    for i, spec in enumerate(specs, 1):
        form = form_of(spec)
        if tree.coupling is not None and form != "unrolled":
            raise ModelError(f"{spec.name}: the form asked for ({FORMS[form].description}) is "
                             f"not available yet for a model with mimic joints (docs/mimic.md); "
                             f"the unrolled form is ({FORMS[form].unrolled_by})",
                             source=tree.source)
        if tree.coupling is not None and spec.coupled_doc:     # (the generated comments too)
            spec = replace(spec, doc=spec.coupled_doc)
        progress(f"unroll: {spec.name} ({i} of {len(specs)}, {FORMS[form].description})")
        try:
            codes.append(function_code(tree, spec, prefix, form))
        except ModelError as exc:       # which function: the recursions do not know their name
            raise exc.but(problem=f"{spec.name}: {exc.problem}") from None
    return codes


def build_sources(model, name=None, chunk=1000, cflags=None, report=None, method=1,
                  mass_matrix="auto", backend="c", functions=None, frames=None, progress=None,
                  cuda=None, wrench_frames=None):
    """Derive, unroll and render: returns (files dict, report, cache key). Nothing is written.

    method: 1 = everything unrolled (S&G Method I); 2 = forward dynamics' passes 4-6 as loops
    over the bodies calling one small kernel per joint class (S&G Method II).
    mass_matrix: 'unrolled', 'loop' or 'auto' (see mass_form).
    functions: the functions to generate (default all; selected_functions); frames: the frames
    the frame functions cover, by name (default every frame of the model); wrench_frames: the
    frames of the external wrenches' rows (fext; default: frames).
    progress: None, or a callable taking one line of text per stage and function."""
    progress = progress or _silent
    name = c_identifier(name or model.name)
    cflags = compiler_flags(cflags)
    cuda = wanted_cuda(cuda)
    report = report or Report(name, model.nv)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive number of statements, not {chunk!r}")
    model.validate()          # a model built or changed in Python gets the loaders' checks
    mass = model_mass_form(model, mass_matrix)
    options = _options(name, chunk, cflags, method, mass, functions, frames, cuda, wrench_frames)
    key = cache_key(model, options)
    t0 = time.perf_counter()
    progress(f"derive: {len(model.bodies)} bodies, nv = {model.nv}: the joints, then the checks "
             "of the dynamics before unrolling")
    tree = Tree(model, frames, wrench_frames=wrench_frames)
    try:
        check_model_dynamics(tree, source=model.source, q0=model.q0)   # clear errors, not NaNs
    except ModelError as e:             # the joint's line in the model file, where it is known
        line = getattr(model, "joint_lines", {}).get(e.joint) if e.line is None else None
        if line is None:
            raise
        raise e.but(line=line) from None
    t1 = time.perf_counter()
    report.times["derive"] = t1 - t0
    names = selected_functions(functions, tree)
    check_options_apply(names, method, mass_matrix, frames, wrench_frames)
    codes = _unroll(tree, names, name, method, mass, progress)
    t2 = time.perf_counter()
    report.times["unroll"] = t2 - t1
    gen = Generation(
        name=name, model_name=model.name,
        source=os.path.basename(str(model.source)) if model.source else "Python model",
        version=__version__, key=key, nq=tree.nq, nv=tree.nv, joint_names=tree.joint_names,
        frame_names=[f.name for f in tree.frames],
        wrench_frame_names=[f.name for f in tree.wrench_frames],
        option_names={"frame": model.frame_names()},
        neutral=tree.neutral, quaternions=tree.quaternions,
        coordinate_names=tree.coordinate_names(),
        coordinate_descriptions=_coordinate_doc(tree, model),
        velocity_names=tree.velocity_names(), velocity_descriptions=_velocity_doc(tree, model),
        known_functions=sorted({**FUNCTIONS, **FRAME_FUNCTIONS}),
        mimic_unavailable=[] if tree.coupling is None else sorted(
            [n for n, f in FUNCTIONS.items() if not f.with_mimic] + list(FRAME_FUNCTIONS)),
        aliases={a: f.name for f in FUNCTIONS.values() for a in f.aliases},
        gravity=tree.gravity, functions=codes, chunk=chunk, cflags=cflags, method=method,
        mass_form=mass)
    progress(f"render: {backend.upper()} code of {len(codes)} functions")
    try:
        files, stats = get_backend(backend).render(gen)
        if cuda:
            progress(f"render: CUDA code of {len(codes)} functions")
            files.update(_cuda_files(gen, tree, cuda))
    except NonFiniteConstant:
        raise overflow_error(tree, model.source) from None
    for code in codes:
        report.functions[code.spec.name] = stats[code.spec.name]
        report.forms[code.spec.name] = code.description
    sources = {f: hashlib.sha256(text.encode()).hexdigest() for f, text in sorted(files.items())}
    files["scleron.json"] = json.dumps({
        "name": name, "model": model.name, "hash": key, "scleron_version": __version__,
        "nq": tree.nq, "nv": tree.nv, "joint_names": tree.joint_names, "cflags": cflags,
        "method": method, "mass_matrix": mass,
        "functions": {f: {"statements": s, "ops": str(c), "code": report.forms.get(f, "")}
                      for f, (s, c) in report.functions.items()},
        "ops_note": "statements as written; ops executed per call (loops counted per iteration)",
        "options": options,              # what the hash was taken of, with the model (covering)
        "sources": sources,
    }, indent=1) + "\n"
    report.times["render"] = time.perf_counter() - t2
    return files, report, key


def _cuda_files(gen, tree, cuda):
    """The CUDA backend's files: every function as its unrolled program (a loop form, Method II
    or the mass matrix's, is the C code's; the device code is unrolled: docs/cuda.md)."""
    codes = [c if c.form == "unrolled" else function_code(tree, c.spec, gen.name)
             for c in gen.functions]
    files, _ = get_backend("cuda", cuda).render(replace(gen, functions=codes))
    return files


def _load(folder, expect=None):
    """The generated module of a folder, with .cuda when the folder has CUDA code; expect: the
    hash of the generation this run installed or found (load_package)."""
    module = get_backend("c").load(folder, expect)
    return get_backend("cuda").attach(module, folder)


def _moved_body(b, model):
    """The body a joint moves, as the model file names it (an MJCF body with several joints:
    its own, not the massless body in between that scleron names after the joint)."""
    return getattr(model, "joint_bodies", {}).get(b.joint_name, b.name)


def _coordinate_doc(tree, model):
    out = []
    for b in tree.bodies:
        for k, meaning in enumerate(configuration_meanings(b)):
            label = b.joint_name if b.nq == 1 else f"{b.joint_name}[{k}]"
            out.append(f"{label}: {b.joint.type} joint of body {_moved_body(b, model)}, {meaning}")
    return out


def _velocity_doc(tree, model):
    """What each entry of qd is: the rate of its coordinate, or a quaternion joint's angular
    (and a free flyer's linear) velocity, as the joint says."""
    out = []
    for b in tree.bodies:
        quaternion = b.nq != b.dof
        for k, meaning in enumerate(b.joint.coordinates):
            label = b.joint_name if b.dof == 1 else f"{b.joint_name}[{k}]"
            unit = coordinate_unit(meaning)
            what = meaning if quaternion else f"rate of {label}" + (f" ({unit}/s)" if unit else "")
            out.append(f"{label}: {b.joint.type} joint of body {_moved_body(b, model)}, {what}")
    return out


def _cached(out_dir, key):
    """(hit, edited): hit when out_dir holds the generation of this key with every source as
    scleron wrote it; edited lists the sources that differ (edited by hand, or missing)."""
    meta = os.path.join(out_dir, "scleron.json")
    try:
        with open(meta) as fh:
            stored = json.load(fh)
    except (OSError, ValueError):
        return False, []
    if not isinstance(stored, dict) or stored.get("hash") != key:
        return False, []
    edited = edited_sources(out_dir, stored)
    return not edited, edited


def _why_stale(meta, options, model):
    """Why a folder's generation (its scleron.json, or None) is not this one, in words: the
    options that differ where the folder holds this very model (its hash taken with its own
    options is the stored one), the compiler flags ($SCLERON_OPT, --opt) in any case, else
    scleron's version, else the model or scleron's code generator ("" where the folder holds
    none). Options worked out from the model (the mass matrix's form, the name) differ with it:
    said only when the model is the same (a reviewer)."""
    stored = meta.get("options") if meta else None
    if not isinstance(stored, dict):
        return ""
    same_model = cache_key(model, stored) == meta.get("hash")
    differ = sorted(k for k in set(stored) | set(options) if stored.get(k) != options.get(k))
    said = []
    if "cflags" in differ:
        old, new = list(map(str, stored.get("cflags") or [])), list(options["cflags"])
        said.append(f"its compiler flags differ ({' '.join(f for f in old if f not in new)} "
                    f"there, {' '.join(f for f in new if f not in old)} now: $SCLERON_OPT, "
                    "--opt, --march or cflags=)")
        differ.remove("cflags")
    if same_model:
        if differ:
            said.append(f"its options differ ({', '.join(differ)})")
    elif meta.get("scleron_version") != __version__:
        said.append(f"scleron {meta.get('scleron_version')} generated it, this is {__version__}")
    else:
        said.append("the model, or scleron's code generator, differs from its generation's")
    return "; ".join(said)


def write_sources(files, folder):
    for fname, text in files.items():
        path = os.path.join(folder, fname)
        try:
            with open(path, "w") as fh:
                fh.write(text)
        except OSError as exc:          # (a full disk's write names no file: this one)
            if exc.filename is not None:
                raise
            raise OSError(exc.errno, exc.strerror, path) from None


def check_package_folder(out_dir):
    """Refuses an output folder whose name is a module the generated package would shadow: the
    folder is a package imported by its name (`sys.path.insert(0, "build"); import rc20`), so
    `-o build/numpy` made `import numpy` load the generated code, which imports numpy; and one
    that holds the current folder (`-o .`: replaced as a whole, it was deleted under the shell)."""
    folder = os.path.basename(os.path.normpath(os.fspath(out_dir)))
    try:
        here, target = os.path.realpath(os.getcwd()), os.path.realpath(os.fspath(out_dir))
        holds_here = os.path.commonpath([here, target]) == target
    except (OSError, ValueError):        # no current folder (deleted), another drive
        holds_here = False
    if holds_here:
        raise ValueError(f"{out_dir}: the generated folder is replaced as a whole, and the "
                         f"current folder is in it (it would be deleted under you): give a "
                         f"folder below this one, e.g. -o build/{c_identifier(folder)}")
    if folder in PY_MODULES:
        raise ValueError(f"{out_dir}: the folder's name is the generated package's import name, "
                         f"and {folder!r} would shadow Python's module {folder} wherever the "
                         f"folder's parent is on sys.path; name the folder otherwise (e.g. "
                         f"{c_identifier(folder)})")


def generate(model, out_dir=None, name=None, *, chunk=1000, cflags=None, force=False,
             compile=True, report=None, method=1, mass_matrix="auto", functions=None,
             frames=None, progress=None, cuda=False, wrench_frames=None):
    """Derive, unroll, render and compile the model's dynamics into out_dir; load it back.

    Returns the generated module (None with compile=False: the sources only, which
    load_generated compiles): nq, nv, joint_names, forward_dynamics, inverse_dynamics,
    mass_matrix, bias_forces, ... (functions=: a selection, default the model's defaults, "all"
    every function it can have; frames=: the frames of the frame functions, default all;
    wrench_frames=: the frames of the external wrenches' rows, fext, default frames).
    Cached: an unchanged model with the same options is not rebuilt. progress: None, or a
    callable taking one line of text per stage, function and compiled part of the C code (a
    model of thousands of bodies takes minutes).
    cuda: True, or a dict of CUDA options (scleron.backends.cuda.cuda_options), also writes
    and builds the CUDA code with nvcc: the module's .cuda runs every function on a GPU.
    """
    if isinstance(model, (str, os.PathLike)):
        from .model import load_model
        model = load_model(model)
    _check_arguments(model, out_dir, name, report, progress)
    name = c_identifier(name or model.name)
    out_dir = out_dir or os.path.join("generated", name)
    check_package_folder(out_dir)
    cflags = compiler_flags(cflags)
    cuda = wanted_cuda(cuda)
    report = report if report is not None else Report(name, model.nv)
    progress = progress or _silent
    if cuda and compile:
        find_nvcc()                      # no nvcc: one line before any work
    options = _options(name, chunk, cflags, method, model_mass_form(model, mass_matrix),
                       functions, frames, cuda, wrench_frames)
    key = cache_key(model, options)
    if not force:
        recover(out_dir)                 # (a killed install's previous folder, put back)
    hit, report.edited = _cached(out_dir, key) if not force else (False, [])
    if not (force or hit or report.edited):
        report.stale = _why_stale(_meta(out_dir), options, model)
    if hit:
        report.cache_hit = True
        clean_stale(out_dir)             # what killed runs left next to the folder
        record_model_file(out_dir, model.source, key,    # (the file may differ in its comments)
                          included=getattr(model, "included", ()),
                          digests=getattr(model, "file_digests", None))
        record_initial_state(out_dir, key, *initial_state(model))     # (or in its `initial:`)
        if not compile:
            return None
        try:
            module = _load(out_dir, key)     # (compiles the C code of a --no-compile folder)
        except ImportError as e:             # a compiled module cut short or overwritten: made
            progress(f"cache: the compiled module does not load ({e}): building it again")
            report.cache_hit = False         # again (was an "internal error" until --force)
        else:
            if cuda:
                _compile_cuda_if_missing(module, out_dir, name, progress, report)
            return module
    files, report, key = build_sources(model, name, chunk, cflags, report, method, mass_matrix,
                                       functions=functions, frames=frames, progress=progress,
                                       cuda=cuda, wrench_frames=wrench_frames)
    tmp = make_temp_folder(out_dir)
    try:
        progress(f"write: {sum(len(t) for t in files.values()) / 1e6:.1f} MB of sources into {tmp}")
        write_sources(files, tmp)
        record_model_file(tmp, model.source, key, relative_to=out_dir,
                          included=getattr(model, "included", ()),
                          digests=getattr(model, "file_digests", None))
        record_initial_state(tmp, key, *initial_state(model))
        if compile:
            t0 = time.perf_counter()
            get_backend("c").compile(tmp, name, progress=progress)
            report.times["compile"] = time.perf_counter() - t0
            if cuda:
                t0 = time.perf_counter()
                get_backend("cuda").compile(tmp, name, progress=progress)
                report.times["compile CUDA"] = time.perf_counter() - t0
        install_folder(tmp, out_dir)
    finally:
        discard_temp_folder(tmp)
    return _load(out_dir, key) if compile else None


def _compile_cuda_if_missing(module, folder, name, progress, report):
    """A cached folder written by --cuda --no-compile gets its CUDA library now, as its C code
    got its module on load: nvcc's errors come from this codegen, not from the first GPU call.
    Under the folder's flock, as the first call's build (cuda.py) takes it: one builds, the
    other finds the library."""
    library = os.path.join(folder, module.cuda.LIBRARY)
    if os.path.isfile(library):
        return
    with dir_lock(folder):
        if not os.path.isfile(library):
            t0 = time.perf_counter()
            get_backend("cuda").compile(folder, name, progress=progress)
            report.times["compile CUDA"] = time.perf_counter() - t0


def _check_arguments(model, out_dir, name, report, progress):
    """A TypeError that names the argument of generate() given something of the wrong kind
    (they failed deep inside, as an AttributeError of None's .name or an int's .edited)."""
    from .model import Model
    from .model.load import describe_argument
    for ok, what, value in (
            (isinstance(model, Model), "model must be a Model or a model file's path", model),
            (out_dir is None or isinstance(out_dir, (str, os.PathLike)),
             "out_dir must be a folder's path", out_dir),
            (name is None or isinstance(name, str), "name must be a string", name),
            (report is None or isinstance(report, Report), "report must be a pipeline.Report",
             report),
            (progress is None or callable(progress),
             "progress must be a function taking one line of text", progress)):
        if not ok:
            raise TypeError(f"generate: {what}, not {describe_argument(value)}")


def generate_covering(model, out_dir, name, functions, **options):
    """generate() for a caller that needs at least these functions (the simulator's chart
    variants): a folder generated from this very model with these functions and more (under
    any options: `scleron codegen` output) is loaded as it is, and a folder generated with
    other functions keeps them when it is regenerated, so that a build folder shared with
    `scleron codegen` is neither rebuilt nor replaced by a smaller one."""
    check_package_folder(out_dir)
    wanted = selected_functions(functions)
    meta = _meta(out_dir)
    if meta is not None:
        if _covers(model, out_dir, meta, wanted):
            clean_stale(out_dir)
            # the file it now comes from (its `initial:` or comments may differ, or another
            # file of the same model: the import's warning compares with this record)
            record_model_file(out_dir, model.source, meta.get("hash"),
                              included=getattr(model, "included", ()),
                              digests=getattr(model, "file_digests", None))
            record_initial_state(out_dir, meta.get("hash"), *initial_state(model))
            return _load(out_dir)
        every = {**FUNCTIONS, **FRAME_FUNCTIONS}
        kept = [f for f in meta.get("functions") or {} if f in every]
        if kept:
            try:
                return generate(model, out_dir, name, functions=wanted + kept, **options)
            except ModelError:           # what it had cannot be generated for this model now
                pass
    return generate(model, out_dir, name, functions=wanted, **options)


def _meta(folder):
    try:
        with open(os.path.join(folder, "scleron.json")) as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _covers(model, folder, meta, wanted):
    """Whether folder holds an unedited generation of this model (its recorded options give
    its hash) with every function in wanted."""
    options = meta.get("options")
    return (isinstance(options, dict) and set(wanted) <= set(meta.get("functions") or {})
            and cache_key(model, options) == meta.get("hash")
            and not edited_sources(folder, meta))


def load_generated(folder):
    """The dynamics module of a generated folder (no sympy needed); .cuda when it has CUDA code."""
    return _load(folder)
