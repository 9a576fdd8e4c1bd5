"""results.md from a run's results dict R (the one written to results.json): one function per
section, tables made by md_table from rows of cells."""
import os

from .common import (FRAME_FUNCS, FRAME_TARGET, FRAME_TITLE, FUNCS, MJ_VARIANTS, NBATCH, PIN_FRAME, PIN_VARIANTS,
                     TITLE, write_text)
from .timing import best_variant
from .variants import VARIANT_COMPARISONS, VARIANT_SYSTEMS, variant_metrics, variant_rows

# ../shared/design/BENCHMARKS.md: Pinocchio's CppADCodeGen code / plain Pinocchio, same run
CPPADCG_RATIO = {"panda": {"fd": 0.26, "id": 0.19, "M": 0.53},
                 "rc20": {"fd": 0.27, "id": 0.16, "M": 0.50},
                 "rc50": {"fd": 0.29, "id": 0.18, "M": 0.63},
                 "rc100": {"fd": 0.30, "id": 0.18, "M": 0.93}}
DASH = "—"


# ----------------------------------------------------------------------------------------------
# Markdown and number formatting


def md_row(cells):
    """| a | b | ... | (an empty cell is written | |)."""
    return "|" + "|".join(f" {c} " if c != "" else " " for c in cells) + "|"


def md_table(header, rows):
    """The lines of a Markdown table: header, separator, one line per row of cells."""
    return [md_row(header), "|" + "---|" * len(header)] + [md_row(r) for r in rows]


def fmt_ns(x):
    if x is None:
        return DASH
    if x >= 100000:
        return f"{x / 1000:,.0f} µs"
    if x >= 10000:
        return f"{x / 1000:.1f} µs"
    return f"{x:,.0f}"


def fmt_st(st):
    """median (min–max) of a timing's stats."""
    if not st:
        return DASH
    return f"{fmt_ns(st['median'])} ({fmt_ns(st['min'])}–{fmt_ns(st['max'])})"


def fmt_med_min(st):
    """median (min) of a timing's stats."""
    return f"{fmt_ns(st['median'])} ({fmt_ns(st['min'])})" if st else DASH


def fmt_med(st):
    return fmt_ns(st["median"]) if st else DASH


def ratio_cell(a, b):
    """**median / median** (min / min) of two timings' stats."""
    if not a or not b:
        return DASH
    return f"**{a['median'] / b['median']:.2f}** ({a['min'] / b['min']:.2f})"


def with_variant(st, variant, variants):
    """A timing cell naming the chosen variant where the tool has several."""
    return fmt_st(st) + (f" `{variant}`" if variant and len(variants) > 1 else "")


# ----------------------------------------------------------------------------------------------
# head: machine, settings, what is timed


def machine_section(R, argv):
    mi, s, l = R["machine"], R["settings"], R["machine"]["lscpu"]
    return [
        "# scleron benchmarks: generated C against Pinocchio and MuJoCo\n",
        f"`{' '.join(argv)}` — {R['date']}, {R['wall_s']:.0f} s wall "
        f"({'quick' if s['quick'] else 'full'} run).\n",
        "## Machine\n",
        f"- CPU: {l.get('Model name', '?')}, {l.get('CPU(s)', '?')} CPUs "
        f"({l.get('Core(s) per socket', '?')} cores/socket, {l.get('Thread(s) per core', '?')} thread/core), "
        f"L1d {l.get('L1d cache', '?')}, L2 {l.get('L2 cache', '?')}, L3 {l.get('L3 cache', '?')}; "
        f"hypervisor {l.get('Hypervisor vendor', 'none')}",
        f"- `uname -a`: {mi['uname']}",
        f"- {mi['gcc']}; Python {mi['python']}; " + ", ".join(
            f"{k} {v}" for k, v in mi["versions"].items() if v) + f"; {mi['valgrind'] or 'no valgrind'}",
        f"- {s['nstates']} random states per pass; C: {s['rounds']} rounds × {s['repeats_per_round']} "
        f"samples per function, each sample ≥ {s['target_ms']} ms of back-to-back calls, harnesses "
        f"interleaved round by round and pinned with `taskset` to one CPU. A noisy shared 2-core box: "
        f"**min and median are the figures to read**, ratios only within this run.\n",
    ]


WHAT_IS_TIMED = [
    "## What is timed\n",
    "- **scleron**: `NAME_forward_dynamics`, `_inverse_dynamics`, `_mass_matrix` (full n×n, row-major), "
    "`_bias_forces`, compiled with the generated folder's own cflags (scleron's default `-Os "
    "-march=native -fno-math-errno`, recorded in scleron.json), called from a C harness (`-O2 -march=native`).",
    "- **Pinocchio** (C++, header-only templates, `-O3 -march=native -DNDEBUG`, same states; "
    "the model is rebuilt in C++ from the one `pin.buildModelFromUrdf`/the RC builder made in Python): "
    "`aba` (LOCAL and WORLD convention), `rnea`, `crba` (LOCAL and WORLD; fills the upper triangle only), "
    "`nonLinearEffects`. The ratio uses the faster convention.",
    "- **MuJoCo** (C API of the wheel's libmujoco, contacts/constraints/limits/passive/actuation "
    "disabled; every call first copies the state into mjData): FD = `fd_min` (mj_kinematics, mj_comPos, "
    "mj_makeM, mj_factorM, mj_comVel, mj_rne(flg_acc=0), mj_solveM) or `forward` (mj_forward); "
    "ID = `id_min` (mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=1)) or `inverse` (mj_inverse); "
    "M = mj_kinematics + mj_comPos + mj_makeM (sparse, no mj_fullM); h = mj_kinematics + mj_comPos + "
    "mj_comVel + mj_rne(flg_acc=0). The ratio uses the faster variant.",
    "- **ratio** = scleron / peer (median / median; `min` = min / min). Below 1 means scleron is faster.\n",
]


# ----------------------------------------------------------------------------------------------
# C / C++ timings


def pinocchio_ratios(R):
    """[(median ratio, min ratio, "SYSTEM function", CppADCodeGen's ratio or None)] of scleron
    against the faster Pinocchio convention, every system and function timed by both."""
    out = []
    for key, S in R["systems"].items():
        c = S.get("c", {})
        for f in FUNCS:
            o = c.get("scleron", {}).get(f)
            _, p = best_variant(c.get("pinocchio", {}), PIN_VARIANTS[f])
            if o and p:
                rmin = o["min"] / min(c["pinocchio"][v]["min"] for v in PIN_VARIANTS[f] if c["pinocchio"].get(v))
                out.append((o["median"] / p["median"], rmin, f"{S['label']} {TITLE[f]}",
                            CPPADCG_RATIO.get(key, {}).get(f)))
    return out


def summary_section(R):
    ratios = pinocchio_ratios(R)
    if not ratios:
        return []
    lo, hi = min((r, w) for r, _, w, _ in ratios), max((r, w) for r, _, w, _ in ratios)
    lo_m, hi_m = min((r, w) for _, r, w, _ in ratios), max((r, w) for _, r, w, _ in ratios)
    md = ["## Summary\n",
          f"- scleron / Pinocchio C++ (same run), median / median: from **{lo[0]:.2f}** ({lo[1]}) to "
          f"**{hi[0]:.2f}** ({hi[1]}); min / min: from **{lo_m[0]:.2f}** ({lo_m[1]}) to "
          f"**{hi_m[0]:.2f}** ({hi_m[1]})."]
    comparable = [(r, rmin, cg) for r, rmin, _, cg in ratios if cg is not None]
    if comparable:
        beat = sum(r < cg for r, _, cg in comparable)
        beat_min = sum(rmin < cg for _, rmin, cg in comparable)
        n = len(comparable)
        md.append(f"- Below the ratio Pinocchio's own CppADCodeGen code reached (BENCHMARKS.md) in "
                  f"**{beat} of {n}** comparable cells by medians, **{beat_min} of {n}** by minima "
                  f"(RC20/50/100 and panda; ABA, RNEA, CRBA).")
    return md + [""]


def c_timing_row(key, S, f):
    c = S.get("c", {})
    ours = c.get("scleron", {}).get(f)
    pv, pst = best_variant(c.get("pinocchio", {}), PIN_VARIANTS[f])
    mv, mst = best_variant(c.get("mujoco", {}), MJ_VARIANTS[f])
    cg = CPPADCG_RATIO.get(key, {}).get(f)
    return [S["label"], S["nv"], TITLE[f], fmt_st(ours), with_variant(pst, pv, PIN_VARIANTS[f]),
            ratio_cell(ours, pst), with_variant(mst, mv, MJ_VARIANTS[f]), ratio_cell(ours, mst),
            f"{cg:.2f}" if cg is not None else DASH]


def c_timings_section(R):
    header = ["system", "DOF", "function", "scleron median (min–max)", "Pinocchio median (min–max)",
              "**ratio** (min)", "MuJoCo median (min–max)", "**ratio** (min)",
              "CppADCodeGen/Pinocchio (BENCHMARKS.md)"]
    rows = [c_timing_row(key, S, f) for key, S in R["systems"].items() for f in FUNCS]
    return ["## C / C++ timings (ns per call)\n"] + md_table(header, rows) + [
        "\nThe last column is the ratio Pinocchio's own CppADCodeGen code reached against plain Pinocchio "
        "on this machine (BENCHMARKS.md, medians): scleron beats that generated code where its ratio "
        "against Pinocchio is below that number.\n"]


def peer_variants_section(R):
    pin_vs = [v for f in FUNCS for v in PIN_VARIANTS[f]]
    mj_vs = [v for f in FUNCS for v in MJ_VARIANTS[f]]
    header = ["system"] + pin_vs + ["mj " + v for v in mj_vs]
    rows = []
    for S in R["systems"].values():
        c = S.get("c", {})
        rows.append([S["label"]] + [fmt_med_min(c.get("pinocchio", {}).get(v)) for v in pin_vs]
                    + [fmt_med_min(c.get("mujoco", {}).get(v)) for v in mj_vs])
    return ["### All peer variants (median ns, min in parentheses)\n"] + md_table(header, rows) + [""]


# ----------------------------------------------------------------------------------------------
# frames and Jacobians (issue 10)


PIN_FRAME_CALLS = {"placements": "`forwardKinematics` + `updateFramePlacements`",
                   "jacobians": "`computeJointJacobians` + `getFrameJacobian(LOCAL_WORLD_ALIGNED)` per frame",
                   "jacobians_local": "`computeJointJacobians` + `getFrameJacobian(LOCAL)` per frame",
                   "com_jacobian": "`jacobianCenterOfMass`",
                   "centroidal_map": "`computeCentroidalMap`"}

FRAMES_INTRO = (
    "scleron: `NAME_frame_placements` (nframes × 4 × 4), `NAME_frame_jacobians` (local_world_aligned) and "
    "`NAME_frame_jacobians_local` (nframes × 6 × nv, rows [ω; v]), `NAME_com_jacobian` (3 × nv), "
    "`NAME_centroidal_momentum_matrix` (6 × nv, rows [k; l]; no issue's target), every frame of "
    "the module's `frame_names` (bodies, URDF links merged by fixed joints, the fixed root link), from a folder "
    "generated with only the frame functions (`functions=[\"frame_placements\", \"frame_jacobians\", "
    "\"com_jacobian\", \"centroidal_momentum_matrix\"]`, build/SYSTEM/frames/) and a harness of its own. "
    "Pinocchio C++: the same frames (`model.getFrameId(name)` in the Python model, added to the C++ model "
    "with `addFrame` in that order; the C++ model holds no other frame but the universe), "
    + "; ".join(f"{FRAME_TITLE[f]}: {PIN_FRAME_CALLS[f]}" for f in FRAME_FUNCS)
    + " (each frame's 6 × nv matrix zeroed once before timing: `getFrameJacobian` writes its support columns). "
    "Same harness processes, states and rounds as the table above. Checked before timing, in scleron's layout "
    "(Pinocchio's Jacobian rows [v; ω] reordered): scleron's Python against Pinocchio's Python at 5 states, "
    "both harnesses at state 0 against Pinocchio's Python and against each other (≤ 1e-9, else not timed; "
    f"see the table below). Ratio = scleron / Pinocchio: median / median (min / min – max / max); target ≤ {FRAME_TARGET} "
    "(issue 10, medians).\n")


def frame_ratio_cell(o, p):
    if not o or not p:
        return DASH
    return (f"**{o['median'] / p['median']:.2f}** ({o['min'] / p['min']:.2f} – {o['max'] / p['max']:.2f})")


def frame_row(S, f):
    c, cg = S.get("c", {}), S.get("callgrind", {})
    o, p = c.get("scleron_frames", {}).get(f), c.get("pinocchio", {}).get(PIN_FRAME[f])
    met = DASH if not (o and p) else ("yes" if o["median"] / p["median"] <= FRAME_TARGET else "**no**")
    io, ip = cg.get("scleron_frames", {}).get(f), cg.get("pinocchio", {}).get(PIN_FRAME[f])
    ir = (f"{io:,.0f} / {ip:,.0f} ({io / ip:.2f})" if io and ip else f"{io:,.0f} / —" if io else DASH)
    return [S["label"], S["nv"], S["frames"]["nframes"], FRAME_TITLE[f], fmt_st(o), fmt_st(p),
            frame_ratio_cell(o, p), met, ir]


def frames_section(R):
    done = [S for S in R["systems"].values() if (S.get("frames") or {}).get("nframes")]
    skipped = [(S["label"], S["frames"]["skipped"]) for S in R["systems"].values()
               if (S.get("frames") or {}).get("skipped")]
    if not done and not skipped:
        return []
    header = ["system", "DOF", "frames", "function", "scleron median (min–max)", "Pinocchio median (min–max)",
              "**ratio** (min – max)", f"≤ {FRAME_TARGET}", "callgrind Ir scleron / Pinocchio (ratio)"]
    rows = [frame_row(S, f) for S in done for f in FRAME_FUNCS]
    md = ["## Frames and Jacobians: C / C++ timings (ns per call)\n", FRAMES_INTRO] + md_table(header, rows) + [""]
    vrows = [[S["label"], check] + [f"{errs[f]:.1e}" if isinstance(errs.get(f), float) else DASH for f in FRAME_FUNCS]
             for S in done for check, errs in S["frames"].get("verification", {}).items()]
    md += ["Frame checks (max |difference| / max(1, max |reference|)):\n"] + md_table(
        ["system", "check"] + [FRAME_TITLE[f] for f in FRAME_FUNCS], vrows) + [""]
    md += [f"- {label}: not compared: {why}" for label, why in skipped]
    return md + [""]


# ----------------------------------------------------------------------------------------------
# callgrind


CALLGRIND_INTRO = (
    "`valgrind --tool=callgrind` on the harness running exactly K = 100 calls, minus a K = 0 run, "
    "divided by K (binaries rebuilt with `-mno-avx512f` added, as valgrind 3.19 cannot decode "
    "AVX-512; glibc's memset kept off `rep stosb`, which callgrind counts once per byte: "
    "`GLIBC_TUNABLES=glibc.cpu.x86_rep_stosb_threshold=1073741824`). Repeatable, unlike the times; instructions are not cycles (sin/cos, divisions and "
    "cache misses cost more per instruction). The last column, min time / Ir, shows how fast each "
    "instruction stream runs (lower = more work per instruction or more instructions per cycle; "
    "Eigen's SIMD code does several flops per instruction).\n")


def least_ir(tool_cg, variants):
    """(Ir, variant) of the variant with the fewest instructions, or (None, None)."""
    return min(((tool_cg.get(v), v) for v in variants if tool_cg.get(v)), default=(None, None))


def callgrind_row(S, f):
    cg, c = S.get("callgrind", {}), S.get("c", {})
    o = cg.get("scleron", {}).get(f)
    pv = least_ir(cg.get("pinocchio", {}), PIN_VARIANTS[f])
    mv = least_ir(cg.get("mujoco", {}), MJ_VARIANTS[f])
    to = (c.get("scleron", {}).get(f) or {}).get("min")
    tp = (c.get("pinocchio", {}).get(pv[1]) or {}).get("min") if pv[1] else None
    speed = (f"{to / o * 1000:.0f} / {tp / pv[0] * 1000:.0f}" if o and to and pv[0] and tp else
             f"{to / o * 1000:.0f} / —" if o and to else DASH)
    return [S["label"], TITLE[f], f"{o:,.0f}" if o else DASH,
            f"{pv[0]:,.0f} `{pv[1]}`" if pv[0] else DASH, f"{o / pv[0]:.2f}" if o and pv[0] else DASH,
            f"{mv[0]:,.0f} `{mv[1]}`" if mv[0] else DASH, f"{o / mv[0]:.2f}" if o and mv[0] else DASH, speed]


def profiles_part(R):
    prof = R.get("profiles", {})
    if not prof:
        return []
    md = ["### Where scleron's instructions go (`callgrind_annotate --inclusive=no`, K = 100 run minus K = 0 run, per call)\n"]
    for title, p in prof.items():
        md.append(f"**{title}** — {p['per_call_ir']:,.0f} Ir per call: generated straight-line code "
                  f"{p['own_share'] * 100:.1f} %, sine/cosine {p['trig_share'] * 100:.1f} %, "
                  f"other {p['other_share'] * 100:.1f} %.\n")
        md += md_table(["Ir per call", "function"], [[f"{ir:,.1f}", f"`{fn}`"] for ir, fn in p["top"][:8]])
        md.append("")
    return md


def callgrind_section(R):
    skipped = R["settings"].get("callgrind_skipped")
    if skipped:                         # (a table of dashes said nothing)
        return ["## callgrind: instructions per call\n", f"Not run ({skipped}).\n"]
    header = ["system", "function", "scleron Ir", "Pinocchio Ir", "ratio", "MuJoCo Ir", "ratio",
              "ns per 1000 Ir: scleron / Pinocchio"]
    rows = [callgrind_row(S, f) for S in R["systems"].values() for f in FUNCS]
    return (["## callgrind: instructions per call\n", CALLGRIND_INTRO] + md_table(header, rows) + [""]
            + profiles_part(R))


# ----------------------------------------------------------------------------------------------
# Python


PYTHON_INTRO = (
    "scleron: `dyn.f(q, ...)` one state per call (100 states, each a contiguous float64 array made "
    "before timing), the same with a preallocated `out=`, a call bound "
    "once with `dyn.bind(name, *arrays, out)` and then called with no arguments (the same fixed state each "
    f"time; where the generated module has `bind`), and one call on a batch of N = {NBATCH} states "
    "(with and without `out=`, and with `out=` and `threads=2`); \"C batch\" is the generated "
    "`NAME_f_batch` called directly through cffi on the same states (the C cost of a batch: every "
    "state writes its own output, so big mass matrices are memory-bound there, unlike the "
    "one-buffer C harness); batch `out=`, C batch and `threads=2` are sampled round-robin, so their "
    "ratios see the same machine noise. `threads=2` uses OpenMP threads in C (libgomp's default "
    "wait policy). Pinocchio: `pin.aba(model, data, q, v, tau)` "
    f"etc. one state per call (\"batch\" = a Python loop over {NBATCH} states; pin has no batch call). "
    "MuJoCo: assign `d.qpos`/`d.qvel`/… then `mj_forward` / `mj_inverse` / "
    "`mj_kinematics+mj_comPos+mj_makeM` / `…+mj_comVel+mj_rne`.\n")


def python_row(S, f):
    p = S.get("python", {})
    o = p.get("scleron", {}).get(f, {})
    pp = p.get("pinocchio", {}).get(f, {})
    mm = p.get("mujoco", {}).get(f, {})

    def ratio(a, b):
        return f"{o[a]['median'] / o[b]['median']:.2f}" if o.get(a) and o.get(b) else DASH
    r = f"{o['single']['median'] / pp['single']['median']:.2f}" if o.get("single") and pp.get("single") else DASH
    charness = S.get("c", {}).get("scleron", {}).get(f)
    extra = (f"{o['single_out']['median'] - charness['median']:+.0f} "
             f"({o['single_out']['min'] - charness['min']:+.0f}) ns"
             if o.get("single_out") and charness else DASH)
    return [S["label"], TITLE[f], fmt_med(o.get("single")), fmt_med(o.get("single_out")),
            fmt_med(o.get("bound")), fmt_med(o.get("batch")), fmt_med(o.get("batch_out")),
            fmt_med(o.get("c_batch")), ratio("batch_out", "c_batch"), fmt_med(o.get("batch_threads2")),
            ratio("batch_out", "batch_threads2"), extra, fmt_med(pp.get("single")),
            fmt_med(pp.get("batch")), fmt_med(mm.get("single")), r]


def python_section(R):
    header = ["system", "function", "scleron single", "single `out=`", "`bind()`", "batch", "batch `out=`",
              "C batch", "batch `out=` / C batch", "`threads=2`", "speed-up",
              "single `out=` − C harness, median (min)", "Pinocchio single", "Pinocchio loop",
              "MuJoCo single", "ratio single (scleron/pin)"]
    rows = [python_row(S, f) for S in R["systems"].values() for f in FUNCS]
    return ["## From Python (ns per state)\n", PYTHON_INTRO] + md_table(header, rows) + [""]


# ----------------------------------------------------------------------------------------------
# operation counts, generation


def ops_section(R):
    rows = []
    for S in R["systems"].values():
        for f in FUNCS:
            o = S.get("ops", {}).get(f)
            if not o:
                continue
            t = o.get("table")
            rows.append([S["label"], TITLE[f], f"{o['statements']:,}", o["ops"],
                         f"{t['m']}m + {t['a']}a ({t['source']})" if t else DASH,
                         f"{o['ratio']:.2f}" if o.get("ratio") else DASH])
    return ["## Operation counts against Featherstone's Table 10.1\n",
            "From the generated folder's scleron.json (m = multiplications/divisions, a = additions/"
            "subtractions, fn = sin/cos/sqrt… calls; Table 10.1 excludes sin/cos). Table 10.1's best "
            "rows for GU(n): RNEA (93n−108)m+(81n−100)a, CRBA (10n²+22n−32)m+(6n²+37n−43)a, "
            "ABA (224n−259)m+(205n−248)a. Ratio = (m+a) ours / (m+a) table.\n"] + md_table(
        ["system", "function", "statements", "scleron ops", "Table 10.1", "ratio (m+a)"], rows) + [""]


def generation_row(S):
    g = S.get("generation") or {}
    t = g.get("times", {})
    comp = S.get("compile", {})
    cs = comp.get("seconds")
    return [S["label"], S["nv"], f"{t.get('derive', 0):.2f} s", f"{t.get('unroll', 0):.2f} s",
            f"{t.get('render', 0):.2f} s", f"{g.get('total_s', 0):.2f} s",
            f"{g.get('rss_peak_mb', 0):.0f} ({g.get('rss_base_mb', 0):.0f})", f"{g.get('c_bytes', 0) / 1e6:.1f} MB",
            (f"{cs:.1f} s" if cs else DASH) + (" (cached)" if comp.get("cached") else ""),
            f"{S['cffi_compile_s']:.1f} s" if S.get("cffi_compile_s") else "— (cached)"]


def generation_section(R):
    header = ["system", "DOF", "derive", "unroll", "render", "generate total", "peak RSS MB", "C size",
              "gcc compile", "cffi build (generate)"]
    return ["## Generation and compile time\n",
            "scleron: `build_sources` (derive + unroll + render of all four functions) in a fresh "
            "subprocess, peak RSS of that process (`ru_maxrss`, after-import baseline in parentheses); "
            "compile = gcc of NAME_dynamics.c alone with the folder's cflags (the cffi module build "
            "compiles the same file once more, its time from `generate()` is listed when it ran this time). "
            "Compiles run on one core while another single-threaded job may run on the other.\n"
            ] + md_table(header, [generation_row(S) for S in R["systems"].values()]) + [""]


def pydy_row(p, gens, cap):
    n = p["n"]
    g = gens.get(n)
    gtxt = f"{g['total_s']:.3f} s" if g and g.get("total_s") else DASH
    if p.get("timeout"):
        return [n, "", "", "", f"> {cap:.0f} s (stopped)", "", gtxt, "", ""]
    if p.get("error"):
        return [n, f"error: {p['error'][-120:]!r}", "", "", "", "", "", "", ""]
    ratio_txt = f"{p['total_s'] / g['total_s']:.1f}×" if g and g.get("total_s") else DASH
    chk = p.get("M_check_vs_pinocchio")
    chk_txt = f"{chk:.1e}" if isinstance(chk, float) else (chk or DASH)
    return [n, f"{p['setup_s']:.2f} s", f"{p['kanes_equations_s']:.2f} s", f"{p['mass_matrix_s']:.3f} s",
            f"{p['total_s']:.2f} s", f"{p['rss_peak_mb']:.0f} ({p.get('rss_base_mb', 0):.0f})", gtxt,
            ratio_txt, chk_txt]


def pydy_section(R):
    sc, cap = R.get("scaling", {}), R["settings"]["pydy_cap_s"]
    gens = {g["n"]: g for g in sc.get("scleron", []) if "n" in g}
    header = ["n", "PyDy setup", "kanes_equations", "mass matrix", "PyDy total",
              "PyDy peak RSS MB (after imports)", "scleron generate", "ratio PyDy/scleron",
              "PyDy M vs Pinocchio crba"]
    return ["### Symbolic derivation against sympy.physics.mechanics (KanesMethod)\n",
            "The RC-n chain built with `sympy.physics.mechanics` (frames rotated by Rx(90°) and q_i about z, "
            "points 1 m along x, masses at 0.5 m, the RC inertia, gravity), timed: setup + "
            "`KanesMethod(...).kanes_equations(bodies, loads)` + `mass_matrix`/`forcing`, each n in a fresh "
            f"process capped at {cap:.0f} s. scleron: `build_sources` for the same chain "
            "(all four functions, simplified C).\n"] + md_table(
        header, [pydy_row(p, gens, cap) for p in sc.get("pydy", [])]) + [""]


def scleron_scaling_section(R):
    rows = []
    for g in sorted(R.get("scaling", {}).get("scleron", []), key=lambda g: g.get("n", 0)):
        if "total_s" not in g:
            continue
        st = g.get("statements", {})
        rows.append([g["n"], f"{g['total_s']:.3f} s", f"{g['rss_peak_mb']:.0f}",
                     " / ".join(f"{st.get(f, 0):,}" for f in ["forward_dynamics", "inverse_dynamics",
                                                              "mass_matrix", "bias_forces"])])
    return ["scleron generation for RC-n (n in the table above and the RC systems run):\n"] + md_table(
        ["n", "generate", "peak RSS MB", "statements FD / ID / M / h"], rows) + [""]


def default_gen_compile(S):
    """(generate s, gcc compile s, source) of the default configuration: the variants section's
    fresh measurements when it ran, else the main generation table's (its compile may be cached)."""
    cfg = ((S.get("variants") or {}).get("configs") or {}).get("default")
    if cfg and cfg.get("generate_s") and cfg.get("compile_s"):
        return cfg["generate_s"], cfg["compile_s"], "variants section"
    g, c = S.get("generation") or {}, S.get("compile") or {}
    if g.get("total_s") and c.get("seconds"):
        return g["total_s"], c["seconds"], "generation table" + (", compile cached" if c.get("cached") else "")
    return None


def default_totals_section(R):
    """The default configuration's generate + compile for RC50 and RC100 against the targets
    (RC100 <= 20 s, RC100/RC50 <= 2.3)."""
    tot = {k: default_gen_compile(S) for k, S in R["systems"].items() if k in ("rc50", "rc100")}
    tot = {k: v for k, v in tot.items() if v}
    if not tot:
        return []
    parts = [f"{R['systems'][k]['label']} {g:.2f} s + {c:.1f} s = **{g + c:.1f} s** ({src})"
             for k, (g, c, src) in tot.items()]
    line = "- " + "; ".join(parts)
    if "rc100" in tot:
        t100 = sum(tot["rc100"][:2])
        line += f". Target RC100 ≤ 20 s: {'met' if t100 <= 20 else 'not met'}"
        if "rc50" in tot:
            r = t100 / sum(tot["rc50"][:2])
            line += f"; RC100/RC50 = **{r:.2f}**, target ≤ 2.3: {'met' if r <= 2.3 else 'not met'}"
    return ["### Default configuration: generate + gcc compile\n", line + ".\n"]


# ----------------------------------------------------------------------------------------------
# code generation variants


def variants_intro(R):
    return ("Each variant is `scleron.pipeline.build_sources(model, name, method=..., mass_matrix=...)` "
            "in a fresh subprocess (generate = its time, all four functions), written to "
            "`build/SYSTEM/variants/VARIANT/generated/`; gcc compile = `NAME_dynamics.c` alone with the "
            "folder's cflags in one process (measured in this run); C size = `NAME_dynamics.c`; "
            "statements and ops (executed per call, loops counted per iteration) of the compared function "
            "from `scleron.json`; ns per call from the scleron C harness, the variants of a system "
            "interleaved round by round, pinned with `taskset`, same settings as the main table. "
            f"The default is `method=1, mass_matrix=\"auto\"` (loop on chains from nv ≥ "
            f"{R['settings'].get('mass_loop_from_nv', '?')}). Ratios = variant / default "
            "(time: median / median, min / min in parentheses). Each variant's C harness output at state 0 is "
            "checked against the default's (Verification; a variant off by more than 1e-9 is not timed).\n")


def variant_ratio_cells(m, dm):
    """variant / default of statements, C size, generate, compile and **time** (min)."""
    def rr(x):
        a, b = m.get(x), dm.get(x)
        return f"{a / b:.2f}" if a and b else DASH
    tm = (f"**{m['time'] / dm['time']:.2f}** ({m['time_min'] / dm['time_min']:.2f})"
          if m.get("time") and dm.get("time") else DASH)
    return [rr("statements"), rr("C size"), rr("generate"), rr("compile"), tm]


def variant_table_row(S, comp, label, cfg, is_default, dm):
    fname = VARIANT_COMPARISONS[comp][0]
    m = variant_metrics(cfg, comp)
    return [S["label"], S["nv"], f"{label}{' (default)' if is_default else ''}",
            f"{m['statements']:,}" if m.get("statements") is not None else DASH,
            cfg["ops"].get(fname) or DASH, f"{(m['C size'] or 0) / 1e6:.2f} MB", f"{m['generate']:.2f} s",
            f"{m['compile']:.1f} s" if m.get("compile") else DASH, fmt_st((cfg.get("c") or {}).get(comp))] + (
        ["default", "", "", "", ""] if is_default else variant_ratio_cells(m, dm))


def variant_comparison_table(R, vs, comp):
    title = VARIANT_COMPARISONS[comp][1]
    header = ["system", "DOF", "variant", "statements", "ops per call", "C size", "generate", "gcc compile",
              "ns per call median (min–max)", "ratio: statements", "C size", "generate", "compile",
              "**time** (min)"]
    rows = []
    for S in vs:
        V = S["variants"]
        dflt = V["configs"].get("default")
        dm = variant_metrics(dflt, comp) if dflt else {}
        rows += [variant_table_row(S, comp, label, cfg, is_default, dm)
                 for label, _, cfg, is_default in variant_rows(V, comp)]
    md = [f"### {title[0].upper() + title[1:]}\n"] + md_table(header, rows) + [""]
    sent = variant_sentence(R, comp)
    return md + ([sent + "\n"] if sent else [])


def variants_section(R):
    vs = [S for S in R["systems"].values() if S.get("variants")]
    if not vs:
        why = R['settings'].get('variants_skipped') or 'no system of ' + ', '.join(VARIANT_SYSTEMS)
        return ["## Code generation variants\n", f"Not run ({why}).\n"]
    md = ["## Code generation variants\n", variants_intro(R)]
    for comp in VARIANT_COMPARISONS:
        md += variant_comparison_table(R, vs, comp)
    md += [f"- {S['label']}: {e}" for S in vs for e in S["variants"].get("errors", [])]
    return md + [""]


def variant_ratios(R, comp):
    """{metric: [(system label, second form / first form)]} of one comparison."""
    A, B = (label for label, _ in VARIANT_COMPARISONS[comp][2])
    per = {m: [] for m in ("statements", "compile", "time")}
    for S in R["systems"].values():
        V = S.get("variants")
        if not V:
            continue
        vr = {label: variant_metrics(cfg, comp) for label, _, cfg, _ in variant_rows(V, comp)}
        if A not in vr or B not in vr:
            continue
        for m in per:
            a, b = vr[A][m], vr[B][m]
            if a and b:
                per[m].append((S["label"], b / a))
    return per


def winners_clause(what, rs, A, B, t):
    """"what: B on X, Y (lo–hi), A on Z (r) and no clear winner on W (within ±t %)"."""
    won_b = [(l, r) for l, r in rs if r < 1 - t]
    won_a = [(l, r) for l, r in rs if r > 1 + t]
    tie = [(l, r) for l, r in rs if 1 - t <= r <= 1 + t]
    segs = []
    for who, grp in [(B, won_b), (A, won_a)]:
        if grp:
            lo, hi = min(r for _, r in grp), max(r for _, r in grp)
            rng = f"{lo:.2f}" if abs(hi - lo) < 0.005 else f"{lo:.2f}–{hi:.2f}"
            segs.append(f"{who} on {', '.join(l for l, _ in grp)} ({rng})")
    if tie:
        segs.append(f"equal on {', '.join(l for l, _ in tie)}" if t == 0 else
                    f"no clear winner on {', '.join(l for l, _ in tie)} (within ±{t * 100:.0f} %)")
    return f"{what}: " + (", ".join(segs[:-1]) + " and " + segs[-1] if len(segs) > 1 else segs[0])


def variant_sentence(R, comp, tol=0.02):
    """One sentence, from the numbers: which of the two forms wins code size (statements of the
    function), gcc compile time and run time (median ns per call) on which systems. Ratios are
    second form / first form; within ±tol (times only) counts as no clear winner."""
    A, B = (label for label, _ in VARIANT_COMPARISONS[comp][2])
    metrics = [("smaller code (statements)", "statements", 0.0), ("faster gcc compile", "compile", tol),
               ("faster run (median ns per call)", "time", tol)]
    per = variant_ratios(R, comp)
    clauses = [winners_clause(what, per[m], A, B, t) for what, m, t in metrics if per[m]]
    if not clauses:
        return None
    return (f"**{TITLE[comp].capitalize()}, {B} vs {A}** (in parentheses {B} / {A}): "
            + "; ".join(clauses) + ".")


# ----------------------------------------------------------------------------------------------
# verification, notes, the whole report


def verification_section(R):
    rows = []
    for S in R["systems"].values():
        for check, errs in S.get("verification", {}).items():
            if isinstance(errs, dict):
                rows.append([S["label"], check] + [f"{errs[f]:.1e}" if isinstance(errs.get(f), float) else DASH
                                                   for f in FUNCS])
            else:
                rows.append([S["label"], check, errs, "", "", ""])
    return ["## Verification (max |difference| / max(1, max |reference|))\n"] + md_table(
        ["system", "check", "fd", "id", "M", "h"], rows) + [""]


def notes_section(R):
    return (["## Not measured, and notes\n"] + [f"- {n}" for n in R["notes"]]
            + [f"- {S['label']}: {n}" for S in R["systems"].values() for n in S.get("notes", [])] + [""])


def report_lines(R, argv):
    return (machine_section(R, argv) + WHAT_IS_TIMED + summary_section(R) + c_timings_section(R)
            + peer_variants_section(R) + frames_section(R) + callgrind_section(R) + python_section(R) + ops_section(R)
            + generation_section(R) + pydy_section(R) + scleron_scaling_section(R)
            + default_totals_section(R) + variants_section(R) + verification_section(R) + notes_section(R))


def write_report(R, out_dir, argv):
    """OUT/results.md."""
    write_text(os.path.join(out_dir, "results.md"), "\n".join(report_lines(R, argv)))
