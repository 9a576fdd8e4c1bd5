"""The C/C++ harnesses under harness/ (scleron's generated C, Pinocchio's C++ templates, MuJoCo's
C API): their builds (cached by content hash), running them, parsing what they print, checking
them against the tools' Python, and callgrind's instruction counts."""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from .common import FUNCS, HARNESS, NSTATES, cmeel_prefix, log, read, rel_err, run_text, sha

PIN_DEFINES = ["-DNDEBUG", "-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
               "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]
# valgrind 3.19 cannot decode AVX-512 (EVEX) instructions, which gcc emits under -march=native on
# this CPU; the binaries run under callgrind are built with these flags added.
NO_AVX512 = ["-mno-avx512f"]
BINARY = {"scleron": "scleron_bench", "pinocchio": "pin_bench", "mujoco": "mujoco_bench"}


# ----------------------------------------------------------------------------------------------
# building (cached by content hash)


class Builder:
    """Runs shell build steps, one background worker so that a build overlaps the main thread's
    work (the machine has 2 cores). Results are cached under build/<what>/<hash>/."""

    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def is_cached(self, what, key, outputs):
        out_dir = os.path.join(self.build_dir, what, key)
        return os.path.isfile(os.path.join(out_dir, "build.json")) and \
            all(os.path.exists(os.path.join(out_dir, o)) for o in outputs)

    def submit(self, *args, **kw):
        return self.pool.submit(self.build, *args, **kw)

    def build(self, what, key, steps, outputs):
        """steps: list of (label, argv); returns {ok, dir, seconds: {label: s}, cached, error}."""
        out_dir = os.path.join(self.build_dir, what, key)
        stamp = os.path.join(out_dir, "build.json")
        if os.path.isfile(stamp):
            info = json.loads(read(stamp))
            if all(os.path.exists(os.path.join(out_dir, o)) for o in outputs):
                info["cached"] = True
                return info
        os.makedirs(out_dir, exist_ok=True)
        info = {"ok": True, "dir": out_dir, "seconds": {}, "cached": False, "error": None,
                "commands": []}
        slow = "; minutes of g++, cached for later runs" if what.startswith("pinocchio") else ""
        log(f"building {what} ({', '.join(label for label, _ in steps)}{slow})")
        for label, argv in steps:
            if not self._run_step(info, out_dir, label, argv):
                return info
        log(f"built {what} in {sum(info['seconds'].values()):.0f} s")
        with open(stamp, "w") as fh:
            json.dump(info, fh, indent=1)
        self._drop_older_builds(out_dir, key)
        return info

    @staticmethod
    def _run_step(info, out_dir, label, argv):
        """Runs one step in out_dir, recording its command and seconds; False when it failed."""
        argv = [a.replace("{OUT}", out_dir) for a in argv]
        info["commands"].append(" ".join(argv))
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=out_dir)
        info["seconds"][label] = time.perf_counter() - t0
        if proc.returncode != 0:
            info["ok"] = False
            info["error"] = f"{label} failed: " + (proc.stderr or proc.stdout)[-3000:]
            with open(os.path.join(out_dir, "build.log"), "w") as fh:
                fh.write(proc.stdout + proc.stderr)
            return False
        return True

    @staticmethod
    def _drop_older_builds(out_dir, key):
        parent = os.path.dirname(out_dir)
        for other in os.listdir(parent):
            old = os.path.join(parent, other)
            if other != key and os.path.isfile(os.path.join(old, "build.json")):
                shutil.rmtree(old, ignore_errors=True)


def find_eigen(prefix):
    for cand in [os.path.join(prefix, "include", "eigen3"), "/usr/include/eigen3"]:
        if os.path.isfile(os.path.join(cand, "Eigen", "Core")):
            return cand
    return None


def pin_build_steps(cg=False):
    """((cache key, steps), None) of the Pinocchio harness, or (None, why it cannot be built)."""
    pre = cmeel_prefix()
    if not pre:
        return None, "the pin wheel (cmeel.prefix) was not found"
    eigen = find_eigen(pre)
    if eigen is None:
        return None, "Eigen headers not found (pip install cmeel-eigen)"
    if not os.path.isfile(os.path.join(pre, "include", "pinocchio", "multibody.hpp")):
        return None, "Pinocchio headers not found in the pin wheel"
    if not shutil.which("g++"):
        return None, "g++ not found"
    src = os.path.join(HARNESS, "pin_bench.cpp")
    flags = ["-O3", "-march=native"] + (NO_AVX512 if cg else []) + ["-std=c++17"] + PIN_DEFINES
    argv = ["g++"] + flags + [f"-I{pre}/include", f"-I{eigen}", f"-I{HARNESS}", src,
                              "-o", "{OUT}/pin_bench"]
    key = sha(read(src), read(os.path.join(HARNESS, "bench_common.h")), " ".join(argv),
              read(os.path.join(pre, "include", "pinocchio", "config.hpp")))
    return (key, [("compile", argv)]), None


def mujoco_build_steps(cg=False):
    """((cache key, steps), None) of the MuJoCo harness, or (None, why it cannot be built)."""
    try:
        import mujoco
    except Exception as exc:
        return None, f"mujoco not importable ({exc})"
    mdir = os.path.dirname(mujoco.__file__)
    inc = os.path.join(mdir, "include")
    libs = sorted(f for f in os.listdir(mdir) if f.startswith("libmujoco.so"))
    if not libs or not os.path.isfile(os.path.join(inc, "mujoco", "mujoco.h")):
        return None, "the mujoco wheel has no include/ or libmujoco.so"
    src = os.path.join(HARNESS, "mujoco_bench.c")
    argv = ["gcc", "-O2", "-march=native"] + (NO_AVX512 if cg else []) + [
        "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-DNDEBUG", f"-I{inc}", f"-I{HARNESS}", src,
        "-o", "{OUT}/mujoco_bench", f"-L{mdir}", f"-l:{libs[-1]}", f"-Wl,-rpath,{mdir}", "-lm"]
    key = sha(read(src), read(os.path.join(HARNESS, "bench_common.h")), " ".join(argv), mujoco.__version__)
    return (key, [("compile", argv)]), None


def scleron_build_steps(folder, name, cg=False, nframes=0, dynamics=True, derivatives=False):
    """(cache key, steps) of the scleron harness on a generated folder: NAME_dynamics.c compiled
    with the folder's own cflags (scleron.json), the harness main, linked. dynamics: it calls
    the four dynamics functions; nframes > 0: the frame functions (the folder's frame_names has
    nframes frames); derivatives: the three derivative functions (fdd, idd, minv)."""
    meta = json.loads(read(os.path.join(folder, "scleron.json")))
    cflags = meta.get("cflags") or ["-Os", "-g0", "-march=native", "-fno-math-errno", "-std=c99"]
    cflags = list(cflags) + (NO_AVX512 if cg else [])
    template = read(os.path.join(HARNESS, "scleron_bench.c.in"))
    main_src = template.replace("@NAME_UPPER@", name.upper()).replace("@NAME@", name) \
        .replace("@NFRAMES@", str(int(nframes))).replace("@DYNAMICS@", "1" if dynamics else "0") \
        .replace("@DERIVATIVES@", "1" if derivatives else "0")
    csrc = os.path.join(folder, f"{name}_dynamics.c")
    key = sha(meta["hash"], read(csrc, "rb"), main_src, read(os.path.join(HARNESS, "bench_common.h")),
              " ".join(cflags), cg)
    hflags = ["-O2", "-march=native"] + (NO_AVX512 if cg else []) + [
        "-std=c99", "-D_POSIX_C_SOURCE=200809L", f"-I{folder}", f"-I{HARNESS}"]
    steps = [
        ("write", [sys.executable, "-c",
                   "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
                   "{OUT}/scleron_bench.c", main_src]),
        ("compile", ["gcc"] + cflags + [f"-I{folder}", "-c", csrc, "-o", f"{{OUT}}/{name}_dynamics.o"]),
        ("harness", ["gcc"] + hflags + ["-c", "{OUT}/scleron_bench.c", "-o", "{OUT}/scleron_bench.o"]),
        ("link", ["gcc", "{OUT}/scleron_bench.o", f"{{OUT}}/{name}_dynamics.o", "-o",
                  "{OUT}/scleron_bench", "-lm"]),
    ]
    return key, steps


def dynamics_compile_command(b):
    """The gcc -c NAME_dynamics.c command of a scleron harness build."""
    return next((c for c in b.get("commands", []) if c.startswith("gcc ") and " -c " in c
                 and "_dynamics.c" in c), None)


def time_compile(steps, build_dir, repeats=2):
    """Seconds of the scleron build's gcc -c of NAME_dynamics.c in one process, the least of
    `repeats` runs (single compiles on this shared box vary by +-25 %)."""
    argv = next(a for label, a in steps if label == "compile")
    best = None
    for _ in range(repeats):
        tmp = tempfile.mkdtemp(prefix="cc-", dir=build_dir)
        try:
            cmd = [a.replace("{OUT}", tmp) for a in argv]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            dt = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError("gcc failed: " + (proc.stderr or proc.stdout)[-1000:])
            best = dt if best is None else min(best, dt)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return best


# ----------------------------------------------------------------------------------------------
# running the harnesses


def harness_cmd(tool, sysobj, builds, cg=False):
    """argv of a tool's harness on a system's model and states (None if it was not built)."""
    b = builds.get((tool, cg))
    if not b or not b.get("ok"):
        return None
    if tool in ("scleron", "scleron_frames"):
        return [os.path.join(b["dir"], "scleron_bench"), sysobj.states_path]
    if tool == "pinocchio":
        return [os.path.join(b["dir"], "pin_bench"), sysobj.pin_model_path, sysobj.pin_states_path]
    return [os.path.join(b["dir"], "mujoco_bench"), sysobj.mjb_path, sysobj.mj_states_path]


def taskset():
    return ["taskset", "-c", str(os.cpu_count() - 1)] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []


def run_harness(cmd, args, timeout=600):
    """stdout of a harness run pinned to one CPU; raises on failure."""
    proc = subprocess.run(taskset() + cmd + args, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0])} {' '.join(args)} failed ({proc.returncode}): "
                           f"{proc.stderr[-1000:]}")
    return proc.stdout


def parse_samples(text):
    """{function: [ns per call, ...]} of the SAMPLES lines of `harness time`."""
    out = {}
    for line in text.splitlines():
        p = line.split()
        if p and p[0] == "SAMPLES":
            out[p[1]] = [float(x) for x in p[3:]]
    return out


def parse_out(text):
    """{function: array} of the OUT lines of `harness check` (outputs at state 0)."""
    out = {}
    for line in text.splitlines():
        p = line.split()
        if p and p[0] == "OUT":
            out[p[1]] = np.array([float(x) for x in p[2:]])
    return out


# ----------------------------------------------------------------------------------------------
# each harness against its tool's Python, at state 0


def check_scleron_harness(S, cmd):
    """The scleron C harness against the generated module's Python results at state 0."""
    out = parse_out(run_harness(cmd, ["check"]))
    S.verification["scleron C harness vs scleron python"] = {
        f: rel_err(out[f].reshape(np.shape(S.ours0[f])), S.ours0[f]) for f in FUNCS}


def check_pin_harness(S, cmd):
    """The Pinocchio C++ harness (both conventions) against pin's Python at state 0; a model
    that disagrees marks S.pin_cpp_bad (Pinocchio C++ is then not timed). Returns its outputs."""
    out = parse_out(run_harness(cmd, ["check"]))
    ref = S.pin_eval(S.pq[0], S.v[0], S.u[0])
    errs = {"fd": max(rel_err(out["aba_local"], ref["fd"]), rel_err(out["aba_world"], ref["fd"])),
            "id": rel_err(out["rnea"], ref["id"]),
            "M": max(rel_err(out["crba_local"].reshape(S.nv, S.nv), ref["M"]),
                     rel_err(out["crba_world"].reshape(S.nv, S.nv), ref["M"])),
            "h": rel_err(out["nle"], ref["h"])}
    S.verification["pinocchio C++ harness vs pinocchio python"] = errs
    if max(errs.values()) > 1e-9:
        S.notes.append("the C++ Pinocchio model disagrees with the Python one: Pinocchio C++ not timed")
        S.pin_cpp_bad = True
    return out


def check_mujoco_harness(S, cmd):
    """The MuJoCo C harness (minimal and full call sequences) against mujoco's Python."""
    out = parse_out(run_harness(cmd, ["check"]))
    ref = S.mj_eval(S.mq[0], S.mv[0], S.mu[0])
    S.verification["mujoco C harness vs mujoco python"] = {
        "fd": max(rel_err(out["forward"], ref["fd"]), rel_err(out["fd_min"], ref["fd"])),
        "id": max(rel_err(out["inverse"], ref["id"]), rel_err(out["id_min"], ref["id"])),
        "M": rel_err(out["M"].reshape(S.nv, S.nv), ref["M"]), "h": rel_err(out["h"], ref["h"])}


# ----------------------------------------------------------------------------------------------
# callgrind


# callgrind counts every iteration of a `rep stosb` as an instruction: glibc's memset, which
# takes that path from 2 KiB on this CPU, would count one per byte cleared (2,592 for an 18 x 18
# output that the CPU clears in about 80 cycles). Under callgrind both harnesses run with the
# threshold raised, so memset runs its vector stores and counts what it does.
CALLGRIND_ENV = {"GLIBC_TUNABLES": "glibc.cpu.x86_rep_stosb_threshold=1073741824"}


def callgrind_ir(cmd, func, K, tmpdir):
    """(total Ir, callgrind output file) of the harness making exactly K calls of func."""
    fn = os.path.join(tmpdir, f"cg.{os.getpid()}.{func}.{K}.out")
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={fn}"] + cmd
                          + ["calls", str(K), func], capture_output=True, text=True, timeout=900,
                          env={**os.environ, **CALLGRIND_ENV})
    if proc.returncode != 0 or not os.path.isfile(fn):
        raise RuntimeError(f"valgrind failed: {proc.stderr[-800:]}")
    total = None
    for line in read(fn).splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            total = int(line.split()[1])
    return total, fn


def callgrind_per_call(cmd, funcs, tmpdir, on_run=None):
    """{function: Ir per call} = (Ir of K = NSTATES calls - Ir of K = 0) / K for each function;
    on_run(function, file, K = 0 file) may read a run's output before it is removed."""
    base, base_fn = callgrind_ir(cmd, funcs[0], 0, tmpdir)
    res = {}
    for f in funcs:
        tot, fn = callgrind_ir(cmd, f, NSTATES, tmpdir)
        res[f] = (tot - base) / NSTATES
        if on_run:
            on_run(f, fn, base_fn)
        os.remove(fn)
    os.remove(base_fn)
    return res


def annotate_top(fn, limit=12):
    """callgrind_annotate's per-function table: [(Ir, function)]."""
    if not shutil.which("callgrind_annotate"):
        return []
    text = run_text(["callgrind_annotate", "--inclusive=no", fn])
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(\S.*)$", line)
        if m and "PROGRAM TOTALS" not in line and ":" in m.group(2):
            rows.append((int(m.group(1).replace(",", "")), m.group(2).split(" [")[0]))
    return rows[:limit] if limit else rows


def _function_kind(f, name):
    """"own" (the generated NAME_* functions), "trig" (sin/cos, scl_sincos) or "other"."""
    n = f.split(":")[-1].strip()
    if n.startswith(name + "_"):
        return "own"
    if re.search(r"sincos|(^|_)(sin|cos)($|_|\.)", n):
        return "trig"
    return "other"


def profile_from(fn, base_fn, name):
    """Exclusive Ir per function of a callgrind run of K calls minus those of the K = 0 run, per
    call; split into the generated functions, sine/cosine (scleron's vectorised scl_sincos or
    libm) and the rest (the harness loop, loader leftovers)."""
    rows, base = annotate_top(fn, limit=0), dict((f, ir) for ir, f in annotate_top(base_fn, limit=0))
    if not rows:
        return None
    diff = sorted(((ir - base.get(f, 0), f) for ir, f in rows), reverse=True)
    diff = [(ir / NSTATES, f) for ir, f in diff if ir > 0]
    tot = sum(ir for ir, f in diff)
    share = {k: sum(ir for ir, f in diff if _function_kind(f, name) == k) / tot if tot else 0.0
             for k in ("own", "trig", "other")}
    return {"top": [(round(ir, 1), f) for ir, f in diff[:12]], "per_call_ir": tot,
            "own_share": share["own"], "trig_share": share["trig"], "other_share": share["other"]}
