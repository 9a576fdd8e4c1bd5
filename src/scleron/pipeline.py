"""scleron.generate: model -> joints -> recursions -> programs -> C -> compiled module.

The one place that wires the layers together. Each stage is timed; the result is cached by a
content hash of (model, options, scleron version, templates), so regenerating an unchanged
model costs only the hash.
"""
import hashlib
import json
import os
import time
from dataclasses import dataclass, field

from . import __version__
from .backends import backend as get_backend
from .backends.c.render import c_comment, c_identifier  # noqa: F401  (names for C and Python)
from .backends.folders import discard_temp_folder, install_folder, make_temp_folder
from .dynamics.tree import Tree
from .functions import FUNCTIONS
from .model import model_to_dict
from .unroll import function_code

# -fno-math-errno and -fno-trapping-math change no result (no errno, no FP traps are used);
# they let gcc inline and vectorise floor/sqrt; -ffp-contract=fast allows FMA.
DEFAULT_CFLAGS = ["-O2", "-g0", "-march=native", "-fno-math-errno", "-fno-trapping-math",
                  "-ffp-contract=fast", "-std=c99"]
DOCS = {name: spec.doc for name, spec in FUNCTIONS.items()}
FORM_NAMES = {"unrolled": "unrolled", "method2": "Method II: passes 4-6 as loops",
              "mass_loop": "loop form: world-frame columns"}


@dataclass
class Report:
    """What a generation did: sizes and times (seconds)."""
    name: str
    nv: int
    cache_hit: bool = False
    functions: dict = field(default_factory=dict)     # name -> (statements, OpCounts)
    forms: dict = field(default_factory=dict)         # name -> how its code is shaped
    times: dict = field(default_factory=dict)         # derive, unroll, render, compile


def template_texts(backend="c"):
    return get_backend(backend).template_texts()


def cache_key(model, options):
    blob = json.dumps({"model": model_to_dict(model), "options": options, "version": __version__,
                       "templates": template_texts()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


METHODS = (1, 2)
MASS_FORMS = ("auto", "unrolled", "loop")
# "auto" picks the loop form from this many coordinates on (benchmarks/results/results.md,
# "Code generation variants"; README "The generated code")
MASS_LOOP_FROM_NV = 30


def mass_form(nv, form="auto"):
    """'unrolled' (Featherstone's CRBA in body frames, every entry straight-line code: fastest
    for small trees, code grows as n^2) or 'loop' (world-frame columns unrolled in O(n), the
    n^2/2 dot products as vectorised loops)."""
    if form not in MASS_FORMS:
        raise ValueError(f"mass matrix form must be one of {MASS_FORMS}, not {form!r}")
    if form == "auto":
        return "loop" if nv >= MASS_LOOP_FROM_NV else "unrolled"
    return form


def _options(name, chunk, cflags, method, mass):
    opts = {"name": name, "chunk": chunk, "cflags": cflags}
    if method != 1:
        opts["method"] = method
    if mass != "unrolled":
        opts["mass_matrix"] = mass
    return opts


def code_form(spec, method, mass):
    """The form of a function's code the options ask for, among those its spec offers."""
    wanted = {"method2"} if method == 2 else set()
    if mass == "loop":
        wanted.add("mass_loop")
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
    coordinate_names: list
    coordinate_descriptions: list
    gravity: list
    functions: list
    chunk: int
    cflags: list
    method: int
    mass_form: str


def build_sources(model, name=None, chunk=1000, cflags=None, report=None, method=1,
                  mass_matrix="auto", backend="c"):
    """Derive, unroll and render: returns (files dict, report, cache key). Nothing is written.

    method: 1 = everything unrolled (S&G Method I); 2 = forward dynamics' passes 4-6 as loops
    over the bodies calling one small kernel per joint class (S&G Method II).
    mass_matrix: 'unrolled', 'loop' or 'auto' (see mass_form)."""
    name = c_identifier(name or model.name)
    cflags = list(cflags or DEFAULT_CFLAGS)
    report = report or Report(name, model.nv)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive number of statements, not {chunk!r}")
    mass = mass_form(model.nv, mass_matrix)
    key = cache_key(model, _options(name, chunk, cflags, method, mass))
    t0 = time.perf_counter()
    tree = Tree(model)
    t1 = time.perf_counter()
    report.times["derive"] = t1 - t0
    codes = [function_code(tree, spec, name, code_form(spec, method, mass))
             for spec in FUNCTIONS.values()]
    t2 = time.perf_counter()
    report.times["unroll"] = t2 - t1
    gen = Generation(
        name=name, model_name=model.name,
        source=os.path.basename(str(model.source)) if model.source else "Python model",
        version=__version__, key=key, nq=tree.nq, nv=tree.nv, joint_names=tree.joint_names,
        coordinate_names=tree.coordinate_names(), coordinate_descriptions=_coordinate_doc(tree),
        gravity=tree.gravity, functions=codes, chunk=chunk, cflags=cflags, method=method,
        mass_form=mass)
    files, stats = get_backend(backend).render(gen)
    for code in codes:
        report.functions[code.spec.name] = stats[code.spec.name]
        report.forms[code.spec.name] = FORM_NAMES[code.form]
    files["scleron.json"] = json.dumps({
        "name": name, "model": model.name, "hash": key, "scleron_version": __version__,
        "nq": tree.nq, "nv": tree.nv, "joint_names": tree.joint_names, "cflags": cflags,
        "method": method, "mass_matrix": mass,
        "functions": {f: {"statements": s, "ops": str(c)} for f, (s, c) in report.functions.items()},
        "ops_note": "statements as written; ops executed per call (loops counted per iteration)",
    }, indent=1) + "\n"
    report.times["render"] = time.perf_counter() - t2
    return files, report, key


def _coordinate_doc(tree):
    out = []
    for b in tree.bodies:
        for k, meaning in enumerate(b.joint.coordinates):
            label = b.joint_name if b.dof == 1 else f"{b.joint_name}[{k}]"
            out.append(f"{label}: {b.joint.type} joint of body {b.name}, {meaning}")
    return out


def _cached(out_dir, key):
    meta = os.path.join(out_dir, "scleron.json")
    try:
        with open(meta) as fh:
            return json.load(fh).get("hash") == key
    except (OSError, ValueError):
        return False


def write_sources(files, folder):
    for fname, text in files.items():
        with open(os.path.join(folder, fname), "w") as fh:
            fh.write(text)


def generate(model, out_dir=None, name=None, *, chunk=1000, cflags=None, force=False,
             compile=True, report=None, method=1, mass_matrix="auto"):
    """Derive, unroll, render and compile the model's dynamics into out_dir; load it back.

    Returns the generated module: nq, nv, joint_names, forward_dynamics, inverse_dynamics,
    mass_matrix, bias_forces. Cached: an unchanged model with the same options is not rebuilt.
    """
    if isinstance(model, (str, os.PathLike)):
        from .model import load_model
        model = load_model(model)
    name = c_identifier(name or model.name)
    out_dir = out_dir or os.path.join("generated", name)
    cflags = list(cflags or DEFAULT_CFLAGS)
    report = report if report is not None else Report(name, model.nv)
    key = cache_key(model, _options(name, chunk, cflags, method, mass_form(model.nv, mass_matrix)))
    if not force and _cached(out_dir, key):
        report.cache_hit = True
        return get_backend("c").load(out_dir) if compile else None
    files, report, key = build_sources(model, name, chunk, cflags, report, method, mass_matrix)
    tmp = make_temp_folder(out_dir)
    try:
        write_sources(files, tmp)
        if compile:
            t0 = time.perf_counter()
            get_backend("c").compile(tmp, name)
            report.times["compile"] = time.perf_counter() - t0
        install_folder(tmp, out_dir)
    finally:
        discard_temp_folder(tmp)
    return get_backend("c").load(out_dir) if compile else None


def load_generated(folder):
    """The dynamics module of a generated folder (no sympy needed)."""
    return get_backend("c").load(folder)
