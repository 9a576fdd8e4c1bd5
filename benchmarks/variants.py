"""Code generation variants of one system: forward dynamics Method I / II and the mass matrix
unrolled / loop. Each variant is generated in a fresh process, compiled (gcc timed), checked
against the default's C harness and timed with the variants interleaved round by round."""
import os

from .common import FUNCS, log, rel_err, stats
from . import scleron_internals
from .generation import gen_worker_args, run_worker
from .harnesses import dynamics_compile_command, parse_out, run_harness, scleron_build_steps, time_compile
from .timing import harness_rounds

VARIANT_SYSTEMS = ["rc20", "rc50", "rc100", "panda"]     # the code generation variants section
QUICK_VARIANT_SYSTEMS = ["rc20"]

# harness function -> (scleron.json function, title, [(label, the config name of that row)])
VARIANT_COMPARISONS = {
    "fd": ("forward_dynamics", "forward dynamics: Method I (fully unrolled: the passes, or the mass "
           "matrix's factors where the estimate takes them) vs Method II (passes 4-6 as loops over the "
           "bodies, one kernel per joint class)",
           [("Method I", lambda V: "default"), ("Method II", lambda V: "method2")]),
    "M": ("mass_matrix", "mass matrix: unrolled (every entry straight-line code) vs loop (world-frame "
          "columns unrolled, dense dot-product loops)",
          [("unrolled", lambda V: "default" if V["default_mass"] == "unrolled" else "mass_unrolled"),
           ("loop", lambda V: "default" if V["default_mass"] == "loop" else "mass_loop")]),
}


def variant_configs(model):
    """{name: (method, mass_matrix)}: the default configuration, Method II, and the mass-matrix
    form the default does not use (scleron_internals.default_mass_form)."""
    other = "unrolled" if scleron_internals.default_mass_form(model) == "loop" else "loop"
    return {"default": (1, "auto"), "method2": (2, "auto"), f"mass_{other}": (1, other)}


def generate_variant(S, vname, method, mass):
    """build_sources of one variant in a fresh process, written to build/SYSTEM/variants/VARIANT/
    generated/: (its config entry, folder, None), or (None, None, why it failed)."""
    folder = os.path.join(S.dir, "variants", vname, "generated")
    g = run_worker(gen_worker_args(S.source, S.floating, S.key, method, mass, folder), timeout=1800)
    if "total_s" not in g:
        return None, None, "generation failed: " + (g.get("error") or "timeout")[-500:]
    meta = g.pop("meta", {}) or {}
    fm = meta.get("functions", {})
    cfg = {"method": meta.get("method", method), "mass_matrix": meta.get("mass_matrix", mass),
           "generation": g, "generate_s": g["total_s"], "c_file_bytes": g.get("dynamics_c_bytes"),
           "statements": {f: m.get("statements") for f, m in fm.items()},
           "ops": {f: m.get("ops") for f, m in fm.items()}}
    return cfg, folder, None


def build_variant(S, builder, build_dir, vname, cfg, folder, errors):
    """Builds the variant's scleron harness and times its gcc compile into cfg: the harness
    argv, or None when the build failed."""
    key, steps = scleron_build_steps(folder, S.key)
    b = builder.build(f"{S.key}/variants/{vname}/bench", key, steps, ["scleron_bench"])
    if not b.get("ok"):
        errors.append(f"{vname}: build failed: {b.get('error', '')[-600:]}")
        log(f"{S.key} variant {vname}: build failed")
        return None
    try:
        if b.get("cached"):
            cfg["compile_s"] = time_compile(steps, build_dir)
        else:                               # least of the build's compile and one more
            cfg["compile_s"] = min(b["seconds"]["compile"], time_compile(steps, build_dir, 1))
    except Exception as exc:
        errors.append(f"{vname}: timed compile failed: {exc}")
    cfg["compile_command"] = dynamics_compile_command(b)
    return [os.path.join(b["dir"], "scleron_bench"), S.states_path]


def compared_functions(V, vname):
    """The harness functions in whose comparison the variant has a row."""
    return [f for f, (fname, _, rows) in VARIANT_COMPARISONS.items()
            if any(pick(V) == vname for _, pick in rows)]


def check_against_default(S, V, cmds):
    """Each variant's C harness output at state 0 against the default's, all four functions;
    a variant off by more than 1e-9 (or whose check fails) is dropped from cmds."""
    ref = None
    if "default" in cmds:
        try:
            ref = parse_out(run_harness(cmds["default"], ["check"]))
        except Exception as exc:
            V["errors"].append(f"default harness check failed: {exc}")
    for vname, cmd in list(cmds.items()):
        if vname == "default" or ref is None:
            continue
        try:
            out = parse_out(run_harness(cmd, ["check"]))
            errs = {f: rel_err(out[f], ref[f]) for f in FUNCS}
            S.verification[f"variant {vname} C harness vs default C harness"] = errs
            if max(errs.values()) > 1e-9:
                V["errors"].append(f"{vname} disagrees with the default ({max(errs.values()):.1e}): not timed")
                del cmds[vname]
        except Exception as exc:
            V["errors"].append(f"{vname}: harness check failed: {exc}")
            del cmds[vname]


def run_variants(S, builder, build_dir, rounds, per_round, target_ms):
    """Generates (fresh process, build_sources timed), compiles (gcc timed) and times (the
    scleron C harness, the variants interleaved round by round) each code generation variant
    of one system. Returns the system's results["variants"] entry."""
    V = {"default_mass": scleron_internals.default_mass_form(S.model), "configs": {}, "errors": []}
    cmds, funcs = {}, {}
    for vname, (method, mass) in variant_configs(S.model).items():
        cfg, folder, error = generate_variant(S, vname, method, mass)
        if cfg is None:
            V["errors"].append(f"{vname}: {error}")
            log(f"{S.key} variant {vname}: generation failed")
            continue
        V["configs"][vname] = cfg
        cmd = build_variant(S, builder, build_dir, vname, cfg, folder, V["errors"])
        if cmd is None:
            continue
        cmds[vname] = cmd
        funcs[vname] = compared_functions(V, vname)
        log(f"{S.key} variant {vname} (method {cfg['method']}, mass {cfg['mass_matrix']}): generate "
            f"{cfg['generate_s']:.2f} s, compile {cfg.get('compile_s', float('nan')):.1f} s, "
            f"{(cfg['c_file_bytes'] or 0) / 1e6:.2f} MB")
    check_against_default(S, V, cmds)
    samples = harness_rounds(cmds, rounds,
                             lambda v: ["time", str(per_round), str(target_ms)] + funcs[v],
                             lambda v, exc: V["errors"].append(f"{v}: timing failed: {exc}"))
    for vname, fs in samples.items():
        V["configs"][vname]["c"] = {f: stats(xs) for f, xs in fs.items()}
        V["configs"][vname]["c_samples"] = fs
    return V


def variant_rows(V, comp):
    """[(label, config name, config, is default)] of one comparison, in VARIANT_COMPARISONS order."""
    _, _, rows = VARIANT_COMPARISONS[comp]
    out = []
    for label, pick in rows:
        vname = pick(V)
        cfg = V["configs"].get(vname)
        if cfg:
            out.append((label, vname, cfg, vname == "default"))
    return out


def variant_metrics(cfg, comp):
    """The compared function's statements, the C file's size, generate and compile seconds, and
    its median and least ns per call, of one variant."""
    fname = VARIANT_COMPARISONS[comp][0]
    t = (cfg.get("c") or {}).get(comp) or {}
    return {"statements": cfg["statements"].get(fname), "C size": cfg.get("c_file_bytes"),
            "generate": cfg.get("generate_s"), "compile": cfg.get("compile_s"),
            "time": t.get("median"), "time_min": t.get("min")}

