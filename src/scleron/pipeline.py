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
from .codegen.build import (compile_folder, discard_temp_folder, install_folder, load_package,
                            make_temp_folder)
from .codegen.c_printer import c_literal, print_program
from .codegen.render import c_comment, c_identifier, render_files, template_texts
from .dynamics.tree import Tree
from .joints.special import CLOSED_FORM, SERIES, SERIES_BELOW
from .model import model_to_dict
from .unroll import FUNCTIONS, unroll, unroll_mass_loop, unroll_method2

# -fno-math-errno and -fno-trapping-math change no result (no errno, no FP traps are used);
# they let gcc inline and vectorise floor/sqrt; -ffp-contract=fast allows FMA.
DEFAULT_CFLAGS = ["-O2", "-g0", "-march=native", "-fno-math-errno", "-fno-trapping-math",
                  "-ffp-contract=fast", "-std=c99"]
DOCS = {
    "forward_dynamics": "qdd = M(q)^-1 (tau - h(q, qd)), Si & Guenter passes 1-6",
    "inverse_dynamics": "tau = M(q) qdd + h(q, qd), recursive Newton-Euler (S&G passes 1-3)",
    "mass_matrix": "M(q), row-major nv x nv, composite rigid bodies",
    "bias_forces": "h(q, qd) = C(q, qd) qd + phi(q), so that M qdd + h = tau",
}
PY_ARGS = {"q": "q", "qd": "qd", "tau": "tau", "qdd": "qdd"}


@dataclass
class Report:
    """What a generation did: sizes and times (seconds)."""
    name: str
    nv: int
    cache_hit: bool = False
    functions: dict = field(default_factory=dict)     # name -> (statements, OpCounts)
    forms: dict = field(default_factory=dict)         # name -> how its code is shaped
    times: dict = field(default_factory=dict)         # derive, unroll, render, compile


def cache_key(model, options):
    blob = json.dumps({"model": model_to_dict(model), "options": options, "version": __version__,
                       "templates": template_texts()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _helpers(programs):
    used = sorted({op[5:] for p in programs for i in p.live() for op in [p.ops[i]]
                   if op.startswith("call:")})
    out = []
    for name in used:
        coeffs = SERIES[name]
        series = "0.0"
        for c in reversed(coeffs):          # Horner form
            series = f"({c!r} + x * {series})" if series != "0.0" else f"{c!r}"
        out.append({"name": name, "threshold": repr(SERIES_BELOW), "series": series,
                    "closed": CLOSED_FORM[name],
                    "doc": f"{name}: exp-coordinate ball joint helper, series below x = {SERIES_BELOW}"})
    return out


KERNEL_ARRAYS = {   # Method II kernels: (inputs, outputs); the root's kernels lack Jp, zp, ep
    "articulated_inertia": ("kin J", "U L Jp"),
    "articulated_bias": ("kin U L tb z", "cb zp"),
    "joint_acceleration": ("kin U L cb ep", "qdd e"),
}
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


def _mass_loop_context(tree, ml):
    """Template data of the mass matrix in loop form: the upper and lower ranges."""
    nv = tree.nv

    def table(ranges):
        return {"n": len(ranges), "row": ", ".join(str(r) for r, _, _ in ranges),
                "first": ", ".join(str(f) for _, f, _ in ranges),
                "end": ", ".join(str(e) for _, _, e in ranges)}
    entries = sum(e - f for _, f, e in ml.upper)
    return {"upper": table(ml.upper), "lower": table(ml.lower), "entries": entries,
            "lower_entries": sum(e - f for _, f, e in ml.lower),
            "full": entries == nv * (nv + 1) // 2}


def _method2_context(m2):
    """Template data of forward dynamics by Method II: kernels, body tables, constants."""
    kernels, classes = [], []
    for cls in m2.classes:
        names = {}
        for step, prog in cls.kernels.items():
            ins, outs = KERNEL_ARRAYS[step]
            skip = {"Jp", "zp", "ep"} if cls.root else set()
            arrays = ([(a, False) for a in ins.split() if a not in skip]
                      + [(a, True) for a in outs.split() if a not in skip])
            kf = print_program(prog, prog.name, arrays, chunk=10 ** 9)
            names[step] = prog.name
            kernels.append({"name": prog.name, "params": kf.chunk_params,
                            "lines": kf.chunks[0].lines, "statements": kf.statements,
                            "counts": kf.counts, "step": step, "cls": cls.index})
        members = [c_comment(b["name"]) for b in m2.bodies if b["cls"] == cls.index]
        classes.append({"index": cls.index, "root": cls.root, "dof": cls.dof,
                        "stored": cls.kin_size, "members": members, **names})
    bodies = m2.bodies
    return {
        "nb": len(bodies), "nkin": m2.nkin, "nl": m2.nl, "kernels": kernels, "classes": classes,
        "parent": ", ".join(str(b["parent"]) for b in bodies),
        "cls": ", ".join(str(b["cls"]) for b in bodies),
        "koff": ", ".join(str(b["koff"]) for b in bodies),
        "qs": ", ".join(str(b["qs"]) for b in bodies),
        "loff": ", ".join(str(b["loff"]) for b in bodies),
        "inertia": [", ".join(c_literal(x) for x in row) for row in m2.inertia],
        "body_names": [c_comment(b["name"]) for b in bodies],
        "statements": sum(k["statements"] for k in kernels),
    }


def _add_counts(counts, other, times=1):
    for f in ("mul", "add", "neg", "fn"):
        setattr(counts, f, getattr(counts, f) + times * getattr(other, f))


def _function_code(tree, name, fname, method, mass, chunk, first_index):
    """One public function: its printed unrolled part (CFunction), the programs behind it, and
    the template data of the loops around it (Method II; the mass matrix's loop form), None
    where it is fully unrolled. The op counts are those executed per call."""
    inputs, output = FUNCTIONS[fname]
    arrays = [(a, False) for a in inputs.split()]
    method2 = mass_loop = None
    if method == 2 and fname == "forward_dynamics":
        m2 = unroll_method2(tree, name)
        programs = [m2.prologue] + [k for c in m2.classes for k in c.kernels.values()]
        cf = print_program(m2.prologue, f"{name}_{fname}", arrays + [("kin", True), ("tb", True)],
                           chunk=chunk, first_index=first_index, sincos_of="q")
        method2 = _method2_context(m2)
        cf.statements += method2["statements"]
        for k in method2["kernels"]:           # each body runs its class's three kernels
            _add_counts(cf.counts, k["counts"], sum(b["cls"] == k["cls"] for b in m2.bodies))
    elif mass == "loop" and fname == "mass_matrix":
        ml = unroll_mass_loop(tree, name)
        programs = [ml.prologue]
        cf = print_program(ml.prologue, f"{name}_{fname}", arrays + [("Sw", True), ("Fw", True)],
                           chunk=chunk, first_index=first_index, sincos_of="q")
        mass_loop = _mass_loop_context(tree, ml)
        n = mass_loop["entries"] + mass_loop["lower_entries"]     # one 6-term dot product each
        cf.counts.mul += 6 * n
        cf.counts.add += 5 * n
    else:
        prog = unroll(tree, fname)
        programs = [prog]
        cf = print_program(prog, f"{name}_{fname}", arrays + [(output, True)], chunk=chunk,
                           first_index=first_index, sincos_of="q")
    return cf, programs, method2, mass_loop


def build_sources(model, name=None, chunk=1000, cflags=None, report=None, method=1,
                  mass_matrix="auto"):
    """Derive, unroll and render: returns (files dict, report). Nothing is written.

    method: 1 = everything unrolled (S&G Method I); 2 = forward dynamics' passes 4-6 as loops
    over the bodies calling one small kernel per joint class (S&G Method II).
    mass_matrix: 'unrolled', 'loop' or 'auto' (see mass_form)."""
    name = c_identifier(name or model.name)
    cflags = list(cflags or DEFAULT_CFLAGS)
    report = report or Report(name, model.nv)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    mass = mass_form(model.nv, mass_matrix)
    key = cache_key(model, _options(name, chunk, cflags, method, mass))
    t0 = time.perf_counter()
    tree = Tree(model)
    t1 = time.perf_counter()
    report.times["derive"] = t1 - t0
    functions, programs = [], []
    nchunks = 0
    for fname, (inputs, output) in FUNCTIONS.items():
        cf, progs, method2, mass_loop = _function_code(tree, name, fname, method, mass, chunk, nchunks)
        programs += progs
        nchunks += len(cf.chunks)
        nv = tree.nv
        functions.append({
            "name": fname, "doc": DOCS[fname] + (" (Method II: passes 4-6 as loops)" if method2 else "")
            + (" (loop form: world-frame columns, dense products)" if mass_loop else ""),
            "method2": method2, "mass_loop": mass_loop, "chunks": cf.chunks, "nwork": cf.nwork,
            "sincos": cf.sincos,
            "statements": cf.statements, "counts": str(cf.counts),
            "chunk_params": cf.chunk_params, "chunk_args": cf.chunk_args,
            "public_params": ", ".join([f"const double *{a}" for a in inputs.split()] + [f"double *{output}"]),
            "batch_args": ", ".join([f"{a} + (long)k * {nv}" for a in inputs.split()]
                                    + [f"{output} + (long)k * {nv * nv if fname == 'mass_matrix' else nv}"]),
            "py_args": ", ".join(PY_ARGS[a] for a in inputs.split()),
            "py_inputs": ", ".join(f"({a}, '{a}')" for a in inputs.split()),
            "py_arg_list": [PY_ARGS[a] for a in inputs.split()],
            "out_const": "_M" if fname == "mass_matrix" else "_V",
            "nargs": len(inputs.split()) + 1,
            "arg_ndims": ", ".join(["1"] * len(inputs.split()) + ["2" if fname == "mass_matrix" else "1"]),
            "arg_sizes": ", ".join([str(nv)] * len(inputs.split())
                                   + [str(nv * nv if fname == "mass_matrix" else nv)]),
            "out_shape": f"({nv}, {nv})" if fname == "mass_matrix" else f"({nv},)",
            "output": output,
        })
        report.functions[fname] = (cf.statements, cf.counts)
        report.forms[fname] = ("Method II: passes 4-6 as loops" if method2 else
                               "loop form: world-frame columns" if mass_loop else "unrolled")
    t2 = time.perf_counter()
    report.times["unroll"] = t2 - t1
    ctx = {
        "name": name, "NAME": name.upper(), "guard": f"{name.upper()}_DYNAMICS_H",
        "model_name": c_comment(model.name),
        "source": c_comment(os.path.basename(str(model.source)) if model.source else "Python model"),
        "version": __version__, "nv": tree.nv, "hash": key, "module": f"_{name}_{key[:12]}",
        "coordinates": [c_comment(c) for c in _coordinate_doc(tree)],
        "joint_names": tree.joint_names, "gravity": " ".join(f"{g:g}" for g in tree.gravity),
        "gravity_list": list(tree.gravity), "functions": functions, "helpers": _helpers(programs),
        "cflags": repr(cflags), "nchunks": nchunks, "method": method, "mass_form": mass,
        "any_sincos": any(f["sincos"] for f in functions),
    }
    files = render_files(ctx)
    files["scleron.json"] = json.dumps({
        "name": name, "model": model.name, "hash": key, "scleron_version": __version__,
        "nq": tree.nv, "nv": tree.nv, "joint_names": tree.joint_names, "cflags": cflags,
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
        mod = load_package(out_dir) if compile else None
        return mod
    files, report, key = build_sources(model, name, chunk, cflags, report, method, mass_matrix)
    tmp = make_temp_folder(out_dir)
    try:
        write_sources(files, tmp)
        if compile:
            t0 = time.perf_counter()
            compile_folder(tmp, name)
            report.times["compile"] = time.perf_counter() - t0
        install_folder(tmp, out_dir)
    finally:
        discard_temp_folder(tmp)
    return load_package(out_dir) if compile else None


def load_generated(folder):
    """The dynamics module of a generated folder (no sympy needed)."""
    return load_package(folder)
