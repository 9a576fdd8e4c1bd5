"""The stages of one benchmark run, in the order run.py calls them. Each takes the BenchRun
(common.py) and records what it measured in run.R, the results dict written to results.json."""
import datetime
import json
import os
import shutil
import tempfile
import time
import traceback

import numpy as np

from .common import (FRAME_FUNCS, FUNCS, MJ_VARIANTS, NBATCH, NSTATES, PIN_FRAME, PIN_VARIANTS,
                     ROOT, T_START, TITLE, BenchRun, log, machine_info, read, rel_err, stats)
from . import frames, harnesses, scleron_internals
from .generation import gen_worker_args, op_counts, run_worker, PYDY_WORKER
from .plot import make_plot
from .report import fmt_ns, write_report
from .systems import System, rc_model_path, rc_pin
from .timing import best_variant, harness_rounds, python_timings
from .variants import VARIANT_COMPARISONS, run_variants, variant_rows

FINAL_NOTES = [
    "pinocchio::urdf::buildModel is not used in the C++ harness: a test harness built with it at "
    "-O3 -march=native segfaulted while loading panda.urdf (most likely an Eigen ABI mismatch: with "
    "AVX-512 Eigen aligns to 64 bytes, while libpinocchio_parsers/libpinocchio_default in the wheel are "
    "generic x86-64 builds with 16-byte alignment, and the parser hands Model pieces across that boundary), "
    "and the parser added ~3 min of g++. Instead the model that pin.buildModelFromUrdf (or the RC builder) "
    "made in Python is written out joint by joint (type, parent, placement, inertia) and rebuilt in C++ "
    "with Model::addJoint/appendBodyToJoint; the harness check above shows it equals the Python model.",
    "The Pinocchio timings are its header templates compiled -O3 -march=native in this run; the pin wheel's "
    "precompiled library (what `import pinocchio` calls) is generic x86-64 and is only timed through Python.",
    "MuJoCo's free joint uses a world-frame linear velocity and Pinocchio's a body-frame one; scleron's "
    "free_flyer is Pinocchio's (q = [x, y, z, qx, qy, qz, qw], v = body-frame [linear; angular]), so scleron "
    "and Pinocchio get the same states and are cross-checked on the floating robot too, MuJoCo states of the "
    "same distribution (MuJoCo vs Pinocchio cross-checked at identity base orientation, zero base velocity).",
    "MuJoCo's mass matrix is its sparse M (mj_makeM); Pinocchio's crba fills the upper triangle; scleron "
    "writes the full dense n×n matrix.",
]


def new_run(settings):
    """The run's state: R with the date, the machine and the settings, and a Builder."""
    s = settings
    os.makedirs(s.out_dir, exist_ok=True)
    os.makedirs(s.build_dir, exist_ok=True)
    R = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(),
         "settings": {"quick": s.quick, "systems": s.systems, "nstates": NSTATES, "nbatch": NBATCH,
                      "rounds": s.rounds, "repeats_per_round": s.per_round, "target_ms": s.target_ms,
                      "python_repeats": s.py_repeats, "pydy_cap_s": s.pydy_cap_s, "pydy_max_n": s.pydy_max_n,
                      "variants": s.variant_keys, "mass_loop_from_nv": scleron_internals.mass_loop_from_nv(),
                      "variants_skipped": "--no-variants" if s.no_variants else None,
                      "callgrind_skipped": ("--no-callgrind" if s.no_callgrind else
                                            None if s.callgrind else "valgrind not found")},
         "systems": {}, "notes": [], "scaling": {"scleron": [], "pydy": []}, "profiles": {}}
    run = BenchRun(settings=s, R=R, builder=harnesses.Builder(s.build_dir))
    if not s.callgrind and not s.no_callgrind:
        run.notes.append("valgrind not found: no instruction counts")
    return run


def cg_flags(run):
    """[False] or, with callgrind, [False, True]: the builds of each harness (True = for valgrind)."""
    return [False, True] if run.settings.callgrind else [False]


# ----------------------------------------------------------------------------------------------
# 1. builds of the peer harnesses, in the background


def queue_peer_builds(run):
    """The Pinocchio (~3 min of g++ the first time) and MuJoCo harnesses start building in the
    background; their callgrind builds wait until after the scleron builds (--quick: only if cached)."""
    for tool, steps_of in [("pinocchio", harnesses.pin_build_steps), ("mujoco", harnesses.mujoco_build_steps)]:
        for cg in cg_flags(run):
            spec, why = steps_of(cg=cg)
            if spec is None:
                if not cg:
                    run.notes.append(f"{tool} C harness not built: {why}")
                continue
            key, steps = spec
            out = harnesses.BINARY[tool]
            what = f"{tool}{'_cg' if cg else ''}"
            if cg:
                if run.settings.quick and tool == "pinocchio" and not run.builder.is_cached(what, key, [out]):
                    run.notes.append("--quick: the callgrind build of the Pinocchio harness (~3 min of g++) "
                                     "was not cached, so Pinocchio has no instruction counts in this run")
                    continue
                run.peer_cg.append(((tool, cg), what, key, steps, [out]))
                continue
            run.futures[(tool, cg)] = run.builder.submit(what, key, steps, [out])
            log(f"queued {tool} harness build")


def queue_peer_callgrind_builds(run):
    for k, what, key, steps, outs in run.peer_cg:
        run.futures[k] = run.builder.submit(what, key, steps, outs)
        log(f"queued {k[0]} harness build (callgrind variant)")


# ----------------------------------------------------------------------------------------------
# 2. systems: models, states, peers, verification, scleron generate


def system_entry(S):
    return {"label": S.label, "nv": S.nv,
            "source": os.path.relpath(S.source, ROOT) if S.source.startswith(ROOT) else S.source,
            "floating": S.floating, "notes": S.notes, "verification": S.verification}


def setup_peers(S):
    """Pinocchio's model, then MuJoCo's, checked against Pinocchio (not timed if they disagree)."""
    try:
        S.setup_pin()
    except Exception as exc:
        S.pin_model = None
        S.notes.append(f"Pinocchio model not built: {type(exc).__name__}: {exc}")
        return
    try:
        S.setup_mujoco()
        ok, errs = S.verify_mujoco()
        if not ok:
            S.notes.append(f"MuJoCo disagrees with Pinocchio (M {errs['M']:.1e}, h {errs['h']:.1e} > 1e-9): "
                           "MuJoCo not timed")
            S.mj_model = None
        log(f"{S.key}: MuJoCo vs Pinocchio M {errs['M']:.1e} h {errs['h']:.1e} fd {errs['fd']:.1e} id {errs['id']:.1e}")
    except Exception as exc:
        S.mj_model = None
        S.notes.append(f"MuJoCo not run: {type(exc).__name__}: {exc}")
        log(f"{S.key}: MuJoCo skipped ({exc})")


def generate_scleron(S, entry):
    """scleron.generate into build/SYSTEM/generated/SYSTEM (cached by scleron): the module, or None."""
    import scleron
    rep = scleron_internals.new_report(S.key, S.nv)
    t0 = time.perf_counter()
    folder = os.path.join(S.dir, "generated", S.key)
    try:
        dyn = scleron.generate(S.model, out_dir=folder, name=S.key, report=rep)
    except Exception as exc:
        S.notes.append(f"scleron generate failed: {type(exc).__name__}: {exc}")
        log(f"{S.key}: generate failed: {exc}")
        return None
    entry["generate_wall_s"] = time.perf_counter() - t0
    entry["cache_hit"] = rep.cache_hit
    if not rep.cache_hit and "compile" in rep.times:
        entry["cffi_compile_s"] = rep.times["compile"]
    log(f"{S.key}: scleron generate {'(cached)' if rep.cache_hit else ''} {entry['generate_wall_s']:.1f} s")
    S.folder = folder
    return dyn


def prepare_system(run, key):
    try:
        S = System(key, run.settings.build_dir)
    except Exception as exc:
        run.notes.append(f"system {key} skipped: {type(exc).__name__}: {exc}")
        log(f"{key}: skipped ({exc})")
        return
    run.sysobjs[key] = S
    entry = run.R["systems"][key] = system_entry(S)
    setup_peers(S)
    if S.pin_model is not None:
        entry["pin_nq"] = S.pin_model.nq
    dyn = generate_scleron(S, entry)
    if dyn is None:
        return
    run.dyns[key] = dyn
    try:
        S.ours0 = S.verify_scleron_vs_pin(dyn) if S.pin_model is not None else None
    except Exception as exc:
        S.notes.append(f"scleron vs Pinocchio check failed to run: {exc}")
        S.ours0 = None
    entry["ops"] = op_counts(json.loads(read(os.path.join(S.folder, "scleron.json"))), S.kind, S.nv)
    for cg in cg_flags(run):
        k, steps = harnesses.scleron_build_steps(S.folder, key, cg=cg)
        run.futures[(("scleron", key), cg)] = run.builder.submit(
            f"{key}/scleron{'_cg' if cg else ''}", k, steps, ["scleron_bench"])
    try:
        nframes = frames.setup_frames(S, entry)
    except Exception as exc:
        nframes = frames.skip(S, entry, f"setup failed: {type(exc).__name__}: {exc}")
    for cg in cg_flags(run) if nframes else []:
        k, steps = harnesses.scleron_build_steps(S.frames_folder, key, cg=cg, nframes=nframes, dynamics=False)
        run.futures[(("scleron_frames", key), cg)] = run.builder.submit(
            f"{key}/scleron_frames{'_cg' if cg else ''}", k, steps, ["scleron_bench"])


def prepare_systems(run):
    for key in run.settings.systems:
        prepare_system(run, key)


# ----------------------------------------------------------------------------------------------
# 3. generation timings and PyDy (subprocesses), while the builds run on the other core


def time_generation(run):
    """build_sources of RC-n for n = 2..pydy_max_n and the RC systems, then of the other systems."""
    R, sysobjs = run.R, run.sysobjs
    gen_ns = sorted(set(range(2, run.settings.pydy_max_n + 1)) | {S.n for S in sysobjs.values() if S.kind == "rc"})
    for n in gen_ns:
        r = run_worker(gen_worker_args(rc_model_path(n, run.settings.build_dir), False, f"rc{n}"), timeout=1800)
        r["n"] = n
        R["scaling"]["scleron"].append(r)
        if f"rc{n}" in R["systems"]:
            R["systems"][f"rc{n}"]["generation"] = r
        log(f"scleron generation rc{n}: {r.get('total_s', float('nan')):.3f} s, peak {r.get('rss_peak_mb', 0):.0f} MB"
            + (f" ERROR {r['error'][-300:]}" if r.get("error") else ""))
    for key, S in sysobjs.items():
        if S.kind != "rc":
            r = run_worker(gen_worker_args(S.source, S.floating, key), timeout=1800)
            R["systems"][key]["generation"] = r
            log(f"scleron generation {key}: {r.get('total_s', float('nan')):.3f} s")


def check_pydy_mass_matrix(r, n):
    """PyDy's M at the check state against Pinocchio's crba (into r, replacing M_check)."""
    try:
        import pinocchio as pin
        pm = rc_pin(n)
        Mp = pin.crba(pm, pm.createData(), np.array(r["M_check_q"]))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        r["M_check_vs_pinocchio"] = rel_err(np.array(r["M_check"]), Mp)
    except Exception as exc:
        r["M_check_vs_pinocchio"] = f"not compared: {exc}"
    r.pop("M_check")


def time_pydy(run):
    """KanesMethod for n = 2, 3, ... until one derivation exceeds the cap or fails."""
    try:
        import sympy.physics.mechanics  # noqa: F401
        have_pydy = not run.settings.no_pydy
    except Exception as exc:
        have_pydy = False
        run.notes.append(f"sympy.physics.mechanics not importable ({exc}): no PyDy comparison")
    if not have_pydy:
        return
    for n in range(2, run.settings.pydy_max_n + 1):
        r = run_worker([PYDY_WORKER, str(n)], timeout=run.settings.pydy_cap_s)
        r["n"] = n
        if r.get("M_check"):
            check_pydy_mass_matrix(r, n)
        run.R["scaling"]["pydy"].append(r)
        log(f"PyDy n = {n}: " + ("TIMEOUT" if r.get("timeout") else
                                  f"{r.get('total_s', float('nan')):.2f} s" + (f" ERROR {r['error'][-300:]}" if r.get('error') else "")))
        if r.get("timeout") or r.get("error"):
            break
    if run.settings.quick:
        run.notes.append(f"--quick: PyDy only up to n = {run.settings.pydy_max_n}")


# ----------------------------------------------------------------------------------------------
# 4. the builds


def wait_for_builds(run):
    for k, fut in run.futures.items():
        try:
            run.builds[k] = fut.result()
        except Exception as exc:
            run.builds[k] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        b = run.builds[k]
        label = k[0] if isinstance(k[0], str) else f"{k[0][0]} {k[0][1]}"
        if not b.get("ok"):
            msg = f"build of {label}{' (callgrind variant)' if k[1] else ''} failed: {b.get('error', '')[-600:]}"
            run.notes.append(msg)
            log(msg)
        else:
            log(f"built {label}{' (cg)' if k[1] else ''}: "
                + ("cached" if b.get("cached") else " ".join(f"{a} {s:.1f}s" for a, s in b["seconds"].items())))
    for tool in ("pinocchio", "mujoco"):
        b = run.builds.get((tool, False))
        if b and b.get("ok"):
            run.R[f"{tool}_harness_build"] = {"cached": b.get("cached"), "seconds": b.get("seconds"),
                                              "command": b.get("commands")}


def tool_builds(run, key):
    """{(tool, cg): build} of one system: its scleron builds and the peers'."""
    return {(t, cg): run.builds.get(((t, key), cg)) for t in ("scleron", "scleron_frames") for cg in (False, True)} | \
        {(t, cg): run.builds.get((t, cg)) for t in ("pinocchio", "mujoco") for cg in (False, True)}


# ----------------------------------------------------------------------------------------------
# 5. harness checks against the Python side


def check_harnesses(run):
    for key, S in run.sysobjs.items():
        entry = run.R["systems"][key]
        tb = tool_builds(run, key)
        b = tb.get(("scleron", False))
        if b and b.get("ok"):
            entry["compile"] = {"seconds": b["seconds"].get("compile"), "cached": b.get("cached"),
                                "command": harnesses.dynamics_compile_command(b)}
        pin_out = None
        try:
            cmd = harnesses.harness_cmd("scleron", S, tb)
            if cmd and getattr(S, "ours0", None) is not None:
                harnesses.check_scleron_harness(S, cmd)
            cmd = harnesses.harness_cmd("pinocchio", S, tb)
            if cmd and S.pin_model is not None:
                pin_out = harnesses.check_pin_harness(S, cmd)
            frames.check_harnesses(S, entry, harnesses.harness_cmd("scleron_frames", S, tb),
                                   None if getattr(S, "pin_cpp_bad", False) else pin_out)
            cmd = harnesses.harness_cmd("mujoco", S, tb)
            if cmd and S.mj_model is not None:
                harnesses.check_mujoco_harness(S, cmd)
        except Exception as exc:
            S.notes.append(f"harness check failed: {type(exc).__name__}: {exc}")
            log(f"{key}: harness check failed: {exc}")
            S.frames_ok = False


# ----------------------------------------------------------------------------------------------
# 6. C timings, 7. Python timings


def pin_timed(S):
    """Whether Pinocchio's C++ is timed on the system (its model built and its harness agreeing)."""
    return S.pin_model is not None and not getattr(S, "pin_cpp_bad", False)


def c_log_line(c):
    summary = []
    for f in FUNCS + FRAME_FUNCS:
        if f in PIN_FRAME:
            o, p = c.get("scleron_frames", {}).get(f), c.get("pinocchio", {}).get(PIN_FRAME[f])
        else:
            o = c.get("scleron", {}).get(f)
            _, p = best_variant(c.get("pinocchio", {}), PIN_VARIANTS[f])
        if o and p:
            summary.append(f"{f} {o['median']:.0f}/{p['median']:.0f}={o['median'] / p['median']:.2f}")
    return ", ".join(summary)


def timed_functions(tool, S):
    """The harness functions timed on a system: the dynamics (every variant), and the frame
    functions where their checks passed (frames.timed); None for MuJoCo (all of its functions)."""
    with_frames = frames.timed(S)
    if tool == "scleron":
        return FUNCS
    if tool == "scleron_frames":
        return FRAME_FUNCS if with_frames else None
    if tool == "pinocchio":
        return [v for f in FUNCS for v in PIN_VARIANTS[f]] + ([PIN_FRAME[f] for f in FRAME_FUNCS] if with_frames else [])
    return None


def time_c_harnesses(run):
    """ns per call of every harness function, the three harnesses interleaved round by round."""
    s = run.settings
    for key, S in run.sysobjs.items():
        entry = run.R["systems"][key]
        tb = tool_builds(run, key)
        cmds = {"scleron": harnesses.harness_cmd("scleron", S, tb),
                "scleron_frames": harnesses.harness_cmd("scleron_frames", S, tb) if frames.timed(S) else None,
                "pinocchio": harnesses.harness_cmd("pinocchio", S, tb) if pin_timed(S) else None,
                "mujoco": harnesses.harness_cmd("mujoco", S, tb) if S.mj_model is not None else None}
        samples = harness_rounds(cmds, s.rounds,
                                 lambda t: ["time", str(s.per_round), str(s.target_ms)] + (timed_functions(t, S) or []),
                                 lambda t, exc: S.notes.append(f"{t} timing failed: {exc}"))
        entry["c"] = {t: {f: stats(xs) for f, xs in fs.items()} for t, fs in samples.items() if fs}
        entry["c_samples"] = samples
        log(f"{key}: C timings done: " + c_log_line(entry["c"]))


def time_python(run):
    for key, S in run.sysobjs.items():
        if key not in run.dyns:
            continue
        try:
            run.R["systems"][key]["python"] = python_timings(S, run.dyns[key], run.settings.py_repeats)
            log(f"{key}: Python timings done")
        except Exception as exc:
            S.notes.append(f"Python timings failed: {type(exc).__name__}: {exc}")
            traceback.print_exc()


# ----------------------------------------------------------------------------------------------
# 8. callgrind


def profiled_functions(run):
    """Which scleron runs get a per-function profile: every function of the smallest RC system,
    the mass matrix of the largest, forward dynamics when there is no RC system."""
    rc_keys = [k for k in run.sysobjs if run.sysobjs[k].kind == "rc"]
    smallest_rc = min(rc_keys, key=lambda k: run.sysobjs[k].nv) if rc_keys else None
    largest_rc = max(rc_keys, key=lambda k: run.sysobjs[k].nv) if rc_keys else None
    return lambda key, f: key == smallest_rc or (key == largest_rc and f == "M") or (not rc_keys and f == "fd")


def callgrind_system(run, key, S, tmpdir, profiled):
    """{tool: {harness function: Ir per call}} of one system; profiles into R["profiles"]."""
    tb = tool_builds(run, key)
    cg = {}

    def keep_profile(f, fn, base_fn):
        if f in TITLE and profiled(key, f):       # the dynamics functions only
            prof = harnesses.profile_from(fn, base_fn, key)
            if prof:
                run.R["profiles"][f"{S.label} {TITLE[f]}"] = prof
    for tool, funcs in [("scleron", FUNCS), ("scleron_frames", timed_functions("scleron_frames", S)),
                        ("pinocchio", timed_functions("pinocchio", S)),
                        ("mujoco", [v for f in FUNCS for v in MJ_VARIANTS[f]])]:
        if (tool == "pinocchio" and not pin_timed(S)) or (tool == "mujoco" and S.mj_model is None) or not funcs:
            continue
        cmd = harnesses.harness_cmd(tool, S, tb, cg=True)
        if cmd is None:
            continue
        try:
            cg[tool] = harnesses.callgrind_per_call(cmd, funcs, tmpdir,
                                                    keep_profile if tool == "scleron" else None)
        except Exception as exc:
            S.notes.append(f"callgrind of {tool} failed: {exc}")
    return cg


def measure_callgrind(run):
    if not run.settings.callgrind:
        return
    tmpdir = tempfile.mkdtemp(prefix="cg-", dir=run.settings.build_dir)
    profiled = profiled_functions(run)
    for key, S in run.sysobjs.items():
        cg = callgrind_system(run, key, S, tmpdir, profiled)
        run.R["systems"][key]["callgrind"] = cg
        log(f"{key}: callgrind done: " + ", ".join(f"{t} {f} {v:,.0f}" for t, r in cg.items()
                                                     for f, v in r.items() if t.startswith("scleron")))
    shutil.rmtree(tmpdir, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# 9. code generation variants, 10. output


def variants_log_line(V):
    """Median ns per call of each compared variant."""
    return "; ".join(" / ".join(f"{label} {fmt_ns(((cfg.get('c') or {}).get(comp) or {}).get('median'))}"
                                for label, _, cfg, _ in variant_rows(V, comp))
                     for comp in VARIANT_COMPARISONS)


def compare_variants(run):
    """Method I / II and the mass matrix unrolled / loop on the variant systems."""
    s = run.settings
    for key in s.variant_keys:
        S = run.sysobjs.get(key)
        if S is None:
            continue
        try:
            V = run_variants(S, run.builder, s.build_dir, s.rounds, s.per_round, s.target_ms)
        except Exception as exc:
            S.notes.append(f"code generation variants failed: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        run.R["systems"][key]["variants"] = V
        log(f"{key}: variants done: " + variants_log_line(V))
    if s.quick and not s.no_variants:
        run.notes.append("--quick: code generation variants for rc20 only")


def write_outputs(run, argv_used):
    """OUT/results.json (everything, with raw samples), OUT/time_vs_dof.png, OUT/results.md."""
    R, out_dir = run.R, run.settings.out_dir
    R["wall_s"] = time.perf_counter() - T_START
    R["notes"] += FINAL_NOTES
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump(R, fh, indent=1, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o))
    make_plot(R, out_dir)
    write_report(R, out_dir, argv_used)
    log(f"wrote {os.path.join(out_dir, 'results.md')} ({R['wall_s']:.0f} s)")
