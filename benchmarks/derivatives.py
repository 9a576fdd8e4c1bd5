#!/usr/bin/env python3
"""Analytical derivatives against Pinocchio, C level (issue 11).

    python -m benchmarks.derivatives [--systems rc20,rc50,panda,ur5,solo12] [--out benchmarks/results]
                                     [--rc100-generation] [--no-callgrind]

scleron's generated C `NAME_forward_dynamics_derivatives` (dqdd/dq, dqdd/dqd, Minv),
`NAME_inverse_dynamics_derivatives` (dtau/dq, dtau/dqd, M) and `NAME_mass_matrix_inverse`
against Pinocchio's `computeABADerivatives`, `computeRNEADerivatives` and `computeMinverse`, in
the same C++ harness as its aba/rnea/crba (harness/pin_bench.cpp), and against scleron's own
`NAME_forward_dynamics` in the same binary (the issue's "<= 3x own FD"). The floating quadruped
uses the quaternion free-flyer on both sides with the same q (no mapping: Pinocchio's layout).

Before anything is timed, at NCHECK random states scleron's Python results are compared with
Pinocchio's Python, and at state 0 both harnesses' outputs with their own tool's Python; a
system that disagrees by more than TOL (max |a - b| / max(1, max |b|)) is reported and not timed.
Times: the two harnesses sampled round by round (benchmarks/timing.harness_rounds), pinned to
one CPU; ns per call; medians with min-max. With valgrind: callgrind instructions per call.
--rc100-generation also times scleron.generate of the three derivative functions for RC100 in a
fresh process with an empty cache (the issue's <= 60 s).

Writes OUT/derivatives.md and OUT/derivatives.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import (HERE, NSTATES, at_least, log, out_folder, rel_err, sha,  # noqa: E402
                               shipped_flags_only, stats, write_text)
from benchmarks import harnesses                                                   # noqa: E402
from benchmarks.systems import (export_pin_model, locate_system, pin_q_from_ours,  # noqa: E402
                                random_coordinates, rc_pin, system_names, write_states)
from benchmarks.timing import harness_rounds                                       # noqa: E402

SYSTEMS = ["rc20", "rc50", "panda", "ur5", "solo12"]
FUNCTIONS = ["fd", "id", "mass", "bias", "fdd", "idd", "minv"]   # the derivative folder's functions
NCHECK = 5
TOL = 1e-9
# the rows: scleron harness label, Pinocchio harness label, what, target ratio to Pinocchio
ROWS = [("fdd", "aba_derivs", "forward-dynamics derivatives (dqdd/dq, dqdd/dqd, Minv)", 0.25),
        ("idd", "rnea_derivs", "inverse-dynamics derivatives (dtau/dq, dtau/dqd, M)", 0.25),
        ("minv", "minv", "mass-matrix inverse", 0.3)]
OWN_FD_TARGET = 3.0            # fdd / scleron's own fd, robots up to 12 DOF


# ----------------------------------------------------------------------------------------------
# the system in both tools


def pin_model_of(kind, n, source, floating):
    import pinocchio as pin
    if kind == "rc":
        return rc_pin(n)
    return pin.buildModelFromUrdf(source, pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(source)


def random_states(rng, count, nq, nv, floating):
    """systems.random_coordinates (a free-flyer's random unit quaternion included); velocities and
    forces in [-1, 1]."""
    return random_coordinates(rng, count, nq, floating), rng.uniform(-1, 1, (count, nv)), \
        rng.uniform(-1, 1, (count, nv))


class System:
    def __init__(self, key, build_dir):
        import scleron
        self.key = key
        self.dir = os.path.join(build_dir, "derivatives", key)
        os.makedirs(self.dir, exist_ok=True)
        kind, n, self.source, self.label, self.floating = locate_system(key, build_dir)
        self.model = scleron.load_model(self.source, floating=True) if self.floating \
            else scleron.load_model(self.source)
        self.pm = pin_model_of(kind, n, self.source, self.floating)
        self.pd = self.pm.createData()
        self.nv = self.model.nv
        if self.pm.nv != self.nv:
            raise RuntimeError(f"Pinocchio has nv = {self.pm.nv}, scleron {self.nv}")
        rng = np.random.default_rng(int(sha(key), 16) % 2 ** 32)
        self.q, self.v, self.u = random_states(rng, NSTATES, self.model.nq, self.nv, self.floating)
        self.pq = np.array([pin_q_from_ours(self.pm, q) for q in self.q])
        self.states_path = os.path.join(self.dir, "states.bin")
        self.pin_states_path = os.path.join(self.dir, "pin_states.bin")
        self.pin_model_path = os.path.join(self.dir, "pin_model.txt")
        write_states(self.states_path, self.q, self.v, self.u)
        write_states(self.pin_states_path, self.pq, self.v, self.u)
        export_pin_model(self.pm, self.pin_model_path)


def symmetric(upper):
    return np.triu(upper) + np.triu(upper, 1).T


def pin_reference(S, s):
    """Pinocchio's Python at state s: {label: (three nv x nv arrays) or one}."""
    import pinocchio as pin
    pm, pd, q, v, u = S.pm, S.pd, S.pq[s], S.v[s], S.u[s]
    fdd = tuple(np.array(x) for x in pin.computeABADerivatives(pm, pd, q, v, u))
    idd = tuple(np.array(x) for x in pin.computeRNEADerivatives(pm, pd, q, v, u))
    idd = idd[:2] + (symmetric(idd[2]),)
    fdd = fdd[:2] + (symmetric(fdd[2]),)
    return {"fdd": fdd, "idd": idd, "minv": symmetric(np.array(pin.computeMinverse(pm, pd, q)))}


def scleron_python(dyn, S, s):
    q, v, u = S.q[s], S.v[s], S.u[s]
    return {"fdd": dyn.forward_dynamics_derivatives(q, v, u),
            "idd": dyn.inverse_dynamics_derivatives(q, v, u), "minv": dyn.mass_matrix_inverse(q)}


def errors(a, b):
    return {f: max(rel_err(np.asarray(x), np.asarray(y)) for x, y in
                   zip(*(t if isinstance(t, tuple) else (t,) for t in (a[f], b[f]))))
            for f in ("fdd", "idd", "minv")}


def worst(errs):
    return max(max(e.values()) for e in errs.values())


# ----------------------------------------------------------------------------------------------
# harnesses


def harness_outputs(out, nv):
    """Both harnesses' check outputs in one form: {label: (arrays) or array}."""
    sq = lambda x: x.reshape(nv, nv)                                          # noqa: E731
    if "fdd_dq" in out:                                  # scleron's harness
        return {"fdd": (sq(out["fdd_dq"]), sq(out["fdd_dqd"]), sq(out["fdd_minv"])),
                "idd": (sq(out["idd_dq"]), sq(out["idd_dqd"]), sq(out["idd_M"])),
                "minv": sq(out["minv"])}
    three = lambda x: tuple(sq(p) for p in np.split(x, 3))                    # noqa: E731
    return {"fdd": three(out["aba_derivs"]), "idd": three(out["rnea_derivs"]), "minv": sq(out["minv"])}


def build(S, builder, cg=False):
    """The two harness builds of a system: {tool: build info}."""
    key, steps = harnesses.scleron_build_steps(S.folder, S.key, cg=cg, dynamics=True, derivatives=True)
    scl = builder.build("scleron_derivatives_cg" if cg else "scleron_derivatives", key, steps, ["scleron_bench"])
    pin_steps, why = harnesses.pin_build_steps(cg=cg)
    if pin_steps is None:
        raise RuntimeError(why)
    pin = builder.build("pinocchio_cg" if cg else "pinocchio", pin_steps[0], pin_steps[1], ["pin_bench"])
    for name, b in (("scleron", scl), ("pinocchio", pin)):
        if not b.get("ok"):
            raise RuntimeError(f"{name} harness build failed: {b.get('error')}")
    return {"scleron": [os.path.join(scl["dir"], "scleron_bench"), S.states_path],
            "pinocchio": [os.path.join(pin["dir"], "pin_bench"), S.pin_model_path, S.pin_states_path]}


# ----------------------------------------------------------------------------------------------
# one system


def generate(S):
    import scleron
    S.folder = os.path.join(S.dir, S.key)
    t0 = time.perf_counter()
    dyn = scleron.generate(S.model, out_dir=S.folder, name=S.key, functions=FUNCTIONS)
    log(f"{S.key}: scleron generate {time.perf_counter() - t0:.1f} s (cached after the first run)")
    return dyn


def measure(S, builder, args):
    entry = {"label": S.label, "nv": S.nv, "nq": S.model.nq}
    dyn = generate(S)
    ver = {}
    e = {f: 0.0 for f in ("fdd", "idd", "minv")}
    for s in range(NCHECK):
        got = errors(scleron_python(dyn, S, s), pin_reference(S, s))
        e = {f: max(e[f], got[f]) for f in e}
    ver[f"scleron (python) vs pinocchio (python), {NCHECK} states"] = e
    cmds = build(S, builder)
    scl = harness_outputs(harnesses.parse_out(harnesses.run_harness(cmds["scleron"], ["check"])), S.nv)
    pin = harness_outputs(harnesses.parse_out(harnesses.run_harness(cmds["pinocchio"], ["check"])), S.nv)
    ref0, ours0 = pin_reference(S, 0), scleron_python(dyn, S, 0)
    ver["scleron C harness vs scleron python"] = errors(scl, ours0)
    ver["pinocchio C++ harness vs pinocchio python"] = errors(pin, ref0)
    ver["scleron C harness vs pinocchio C++ harness"] = errors(scl, pin)
    entry["verification"] = ver
    log(f"{S.key}: checks, worst relative difference {worst(ver):.1e}")
    if worst(ver) > TOL:
        entry["skipped"] = f"a check exceeds {TOL:g} ({worst(ver):.1e}): not timed"
        return entry
    samples = harness_rounds(cmds, args.rounds,
                             lambda t: ["time", str(args.per_round), str(args.target_ms)]
                             + (["fd", "fdd", "idd", "minv"] if t == "scleron"
                                else ["aba_local", "aba_derivs", "rnea_derivs", "minv"]),
                             lambda t, exc: entry.setdefault("notes", []).append(f"{t} timing failed: {exc}"))
    entry["c"] = {t: {f: stats(xs) for f, xs in fs.items()} for t, fs in samples.items()}
    if args.callgrind:
        try:
            cg = build(S, builder, cg=True)
            with tempfile.TemporaryDirectory() as tmp:
                entry["callgrind"] = {
                    "scleron": harnesses.callgrind_per_call(cg["scleron"], ["fd", "fdd", "idd", "minv"], tmp),
                    "pinocchio": harnesses.callgrind_per_call(cg["pinocchio"], ["aba_local", "aba_derivs",
                                                                                "rnea_derivs", "minv"], tmp)}
        except Exception as exc:
            entry.setdefault("notes", []).append(f"callgrind failed: {type(exc).__name__}: {exc}")
    log(f"{S.key}: " + " ".join(f"{t}.{f} {st['median']:.0f} ns" for t, fs in entry["c"].items()
                                for f, st in fs.items()))
    return entry


# ----------------------------------------------------------------------------------------------
# RC100: generation + compile of the derivative functions


RC100_SCRIPT = r"""
import sys, time
t0 = time.perf_counter()
import scleron
m = scleron.load_model(sys.argv[1])
dyn = scleron.generate(m, out_dir=sys.argv[2], name="rc100", functions=["fdd", "idd", "minv"])
print(time.perf_counter() - t0)
"""


def rc100_generation(build_dir):
    """Seconds of scleron.generate (derivation, C, compile) of the three derivative functions for
    RC100 in a fresh process, into an empty folder (nothing cached)."""
    _, _, source, _, _ = locate_system("rc100", build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", RC100_SCRIPT, source, os.path.join(tmp, "rc100")],
                              capture_output=True, text=True, timeout=1800)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
    return {"wall_s": wall, "inside_s": float(proc.stdout.split()[-1])}


# ----------------------------------------------------------------------------------------------
# report


def fmt(st):
    return f"{st['median']:.0f} ({st['min']:.0f}–{st['max']:.0f})" if st else "—"


def ratio(a, b):
    if not (a and b):
        return "—", None
    r = a["median"] / b["median"]
    return f"**{r:.2f}** ({a['min'] / b['min']:.2f} – {a['max'] / b['max']:.2f})", r


def report(R):
    md = ["# Analytical derivatives: scleron vs Pinocchio, C level\n",
          f"Written by `{R['command']}` on {R['date']} ({R['cpu']}). {__doc__.split(chr(10) + chr(10))[2]}\n",
          "Times in ns per call: median (min–max) of the samples; ratio = scleron / Pinocchio, "
          "median / median (min / min – max / max). A shared 2-core machine: samples of one system can "
          "spread 2× or more (solo12, RC50 here); the callgrind column (instructions per call) is the repeatable "
          "figure (both harnesses with glibc's memset kept off `rep stosb`, which callgrind counts once per "
          "byte: benchmarks/harnesses.py CALLGRIND_ENV).\n"]
    header = ["system", "DOF", "function", "scleron", "Pinocchio", "ratio", "target", "met",
              "callgrind Ir scleron / Pinocchio"]
    rows = []
    for S in R["systems"].values():
        if "c" not in S:
            continue
        sc, pc = S["c"].get("scleron", {}), S["c"].get("pinocchio", {})
        cg = S.get("callgrind") or {}
        for f, pf, title, target in ROWS:
            text, r = ratio(sc.get(f), pc.get(pf))
            ir = "—"
            if cg:
                a, b = cg["scleron"].get(f), cg["pinocchio"].get(pf)
                ir = f"{a:.0f} / {b:.0f} ({a / b:.2f})" if a and b else "—"
            rows.append([S["label"], S["nv"], title, fmt(sc.get(f)), fmt(pc.get(pf)), text, f"≤ {target}",
                         "—" if r is None else ("yes" if r <= target else "**no**"), ir])
        text, r = ratio(sc.get("fdd"), sc.get("fd"))
        ir = "—"
        if cg and cg["scleron"].get("fd"):
            ir = f"{cg['scleron']['fdd']:.0f} / {cg['scleron']['fd']:.0f} ({cg['scleron']['fdd'] / cg['scleron']['fd']:.2f})"
        rows.append([S["label"], S["nv"], "forward-dynamics derivatives / scleron's own forward dynamics",
                     fmt(sc.get("fdd")), f"scleron FD {fmt(sc.get('fd'))}", text,
                     f"≤ {OWN_FD_TARGET} (≤ 12 DOF)",
                     "—" if r is None or S["nv"] > 12 else ("yes" if r <= OWN_FD_TARGET else "**no**"), ir])
        text, r = ratio(pc.get("aba_derivs"), pc.get("aba_local"))
        rows.append([S["label"], S["nv"], "(Pinocchio's own: computeABADerivatives / aba)", fmt(pc.get("aba_derivs")),
                     f"aba {fmt(pc.get('aba_local'))}", text, "", "", ""])
    md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    md += ["", "## Checks (maximum relative difference, max |a − b| / max(1, max |b|))\n",
           "| system | check | fdd | idd | minv |", "|---|---|---|---|---|"]
    for S in R["systems"].values():
        for check, e in (S.get("verification") or {}).items():
            md.append(f"| {S['label']} | {check} | " + " | ".join(f"{e[f]:.1e}" for f in ("fdd", "idd", "minv")) + " |")
    notes = [f"- {S['label']}: {n}" for S in R["systems"].values()
             for n in ([S["skipped"]] if S.get("skipped") else []) + S.get("notes", []) + ([S["error"]] if S.get("error") else [])]
    if notes:
        md += ["", "## Notes\n"] + notes
    if R.get("rc100_generation"):
        g = R["rc100_generation"]
        md += ["", "## RC100: generation + compile of the derivative functions\n",
               f"`scleron.generate(rc100, functions=['fdd', 'idd', 'minv'])` in a fresh process with an "
               f"empty cache: **{g['wall_s']:.1f} s** wall (target ≤ 60 s)." if "wall_s" in g
               else g.get("note") or f"not finished: {g.get('error') or g}"]
    return "\n".join(md) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", default=",".join(SYSTEMS), type=system_names(),
                    help="comma-separated benchmark systems (default %(default)s)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="folder of derivatives.md and derivatives.json (default: the committed "
                         "results; pass another for a trial run)")
    ap.add_argument("--build", default=os.path.join(HERE, "build"),
                    help="build cache of the harnesses (default %(default)s)")
    ap.add_argument("--rounds", type=at_least(1, "--rounds"), default=5,
                    help="interleaved rounds (default 5)")
    ap.add_argument("--per-round", type=at_least(1, "--per-round"), default=11,
                    help="samples per round (default 11)")
    ap.add_argument("--target-ms", type=at_least(1e-3, "--target-ms", float), default=5.0,
                    help="time per sample (default 5)")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    ap.add_argument("--rc100-generation", action="store_true",
                    help="also time generation + compile of RC100's derivative functions")
    ap.add_argument("--report-only", action="store_true", help="rewrite OUT/derivatives.md from OUT/derivatives.json")
    return ap.parse_args(argv)


def main(argv=None):
    import platform
    args = parse_args(argv)
    out_folder(args.out)
    shipped_flags_only()
    if args.report_only:
        path = os.path.join(args.out, "derivatives.json")
        if not os.path.isfile(path):
            raise SystemExit(f"--report-only: {path} does not exist (run the benchmark first)")
        R = json.loads(open(path).read())
        write_text(os.path.join(args.out, "derivatives.md"), report(R))
        return
    args.callgrind = not args.no_callgrind and harnesses.shutil.which("valgrind") is not None
    build_dir = os.path.abspath(args.build)
    builder = harnesses.Builder(build_dir)
    R = {"command": "python -m benchmarks.derivatives " + " ".join(argv if argv is not None else sys.argv[1:]),
         "date": time.strftime("%Y-%m-%d"), "cpu": platform.processor() or platform.machine(), "systems": {}}
    try:
        R["cpu"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    for key in args.systems:
        try:
            S = System(key, build_dir)
            R["systems"][key] = measure(S, builder, args)
        except Exception as exc:
            log(f"{key}: failed: {type(exc).__name__}: {exc}")
            R["systems"][key] = {"label": key, "nv": "?", "error": f"{type(exc).__name__}: {exc}"}
    if args.rc100_generation:
        try:
            R["rc100_generation"] = rc100_generation(build_dir)
        except Exception as exc:
            R["rc100_generation"] = {"error": f"{type(exc).__name__}: {exc}"[-2000:]}
    if all("error" in S for S in R["systems"].values()):     # (keep the results there were)
        raise SystemExit(f"every system failed: nothing written to {args.out}")
    os.makedirs(args.out, exist_ok=True)
    write_text(os.path.join(args.out, "derivatives.json"), json.dumps(R, indent=1, default=float))
    write_text(os.path.join(args.out, "derivatives.md"), report(R))
    log(f"wrote {os.path.join(args.out, 'derivatives.md')}")


if __name__ == "__main__":
    main()
