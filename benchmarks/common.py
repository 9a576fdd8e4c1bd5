"""What every benchmark module shares: paths, the four functions compared and their names in each
tool, small helpers (log, content hash, statistics, relative error) and the state of one run."""
import dataclasses
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HARNESS = os.path.join(HERE, "harness")
RUN_SCRIPT = os.path.join(HERE, "run.py")

FUNCS = ["fd", "id", "M", "h"]
TITLE = {"fd": "forward dynamics", "id": "inverse dynamics", "M": "mass matrix", "h": "bias forces"}
# the generated module's function of each (scleron.json, NAME_<function>_batch, dyn.<function>)
FULL_NAME = {"fd": "forward_dynamics", "id": "inverse_dynamics", "M": "mass_matrix", "h": "bias_forces"}
# the harnesses' timed variants of each function (harness/pin_bench.cpp, harness/mujoco_bench.c)
PIN_VARIANTS = {"fd": ["aba_local", "aba_world"], "id": ["rnea"], "M": ["crba_local", "crba_world"],
                "h": ["nle"]}
MJ_VARIANTS = {"fd": ["fd_min", "forward"], "id": ["id_min", "inverse"], "M": ["M"], "h": ["h"]}
# frame kinematics (issue 10), fixed-base systems: the scleron harness's labels, their titles, the
# generated C function of each, and the Pinocchio harness's equivalent (harness/pin_bench.cpp):
# forwardKinematics + updateFramePlacements; computeJointJacobians + getFrameJacobian of every
# frame (LOCAL_WORLD_ALIGNED, LOCAL); jacobianCenterOfMass; computeCentroidalMap
FRAME_FUNCS = ["placements", "jacobians", "jacobians_local", "com_jacobian", "centroidal_map"]
FRAME_TITLE = {"placements": "frame placements", "jacobians": "frame Jacobians (LOCAL_WORLD_ALIGNED)",
               "jacobians_local": "frame Jacobians (LOCAL)", "com_jacobian": "centre-of-mass Jacobian",
               "centroidal_map": "centroidal momentum matrix"}
FRAME_FULL_NAME = {"placements": "frame_placements", "jacobians": "frame_jacobians",
                   "jacobians_local": "frame_jacobians_local", "com_jacobian": "com_jacobian",
                   "centroidal_map": "centroidal_momentum_matrix"}
PIN_FRAME = {"placements": "fk_frames", "jacobians": "jac_frames_lwa", "jacobians_local": "jac_frames_local",
             "com_jacobian": "jcom", "centroidal_map": "cmap"}
FRAME_TARGET = 0.3     # issue 10: scleron / Pinocchio, medians, at most this
NSTATES = 100          # states per timing pass
NBATCH = 1000          # states per batched Python call

_print_lock = threading.Lock()
T_START = time.perf_counter()


def comma_list(item, what):
    """An argparse type: a comma-separated list, each entry through item(text) (which raises
    ValueError to refuse it), none empty and none twice; refused before any work starts (a
    typo used to cost a full run, or to write an empty results file)."""
    import argparse

    def parse(text):
        words = [w.strip() for w in str(text).split(",")]
        if not str(text).strip() or "" in words:
            raise argparse.ArgumentTypeError(f"an empty {what} in {text!r}")
        twice = next((w for i, w in enumerate(words) if w in words[:i]), None)
        if twice is not None:
            raise argparse.ArgumentTypeError(f"{what} {twice!r} given twice")
        try:
            return [item(w) for w in words]
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def one_of(choices, what):
    """comma_list's item check: one of `choices`."""
    def check(word):
        if word not in choices:
            raise ValueError(f"unknown {what} {word!r} (one of {', '.join(choices)})")
        return word
    return check


def at_least(low, what, kind=int, at_most=None):
    """An argparse type, or comma_list's item check: a number (kind) of at least `low` (and at
    most `at_most`, where given)."""
    import argparse

    def check(word):
        try:
            value = kind(float(word)) if kind is int and float(word).is_integer() else kind(word)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {word!r}") from None
        if not value >= low:
            raise argparse.ArgumentTypeError(f"{what} must be at least {low}, got {word!r}")
        if kind is float and value == float("inf"):
            raise argparse.ArgumentTypeError(f"{what} must be finite, got {word!r}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"{what} must be at most {at_most}, got {word!r}")
        return value
    return check


def shipped_flags_only():
    """The benchmarks time scleron's default flags: $SCLERON_OPT (0 for quick test builds) is
    dropped, with a line saying so (it made the tables time -O0 code while they say -Os)."""
    level = os.environ.pop("SCLERON_OPT", None)
    if level is not None:
        log(f"SCLERON_OPT={level!r} ignored: the benchmarks time scleron's default flags")


def out_folder(path, option="--out"):
    """The results folder of a benchmark, checked before anything is measured: a file there
    (the results were measured, then lost at the end) is an argparse-style exit."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise SystemExit(f"{option} {path}: a file is there, not a folder")
    return path


def log(msg):
    with _print_lock:
        print(f"[{time.perf_counter() - T_START:7.1f}s] {msg}", flush=True)


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def read(path, mode="r"):
    with open(path, mode) as fh:
        return fh.read()


def write_text(path, text):
    with open(path, "w") as fh:
        fh.write(text)


def stats(samples):
    """{min, median, max, n} of a list of samples (None for no samples)."""
    if not samples:
        return None
    return {"min": min(samples), "median": statistics.median(samples), "max": max(samples),
            "n": len(samples)}


def rel_err(a, b):
    """max |a - b| / max(1, max |b|)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def run_text(cmd):
    """stdout of a command, stripped ("" when it fails)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:
        return ""


def cmeel_prefix():
    """The pin wheel's cmeel.prefix folder (Pinocchio's headers, example-robot-data), or None."""
    cands = [os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix")]
    try:
        import pinocchio
        p = os.path.abspath(pinocchio.__file__)
        while p != os.path.dirname(p):
            if os.path.basename(p) == "cmeel.prefix":
                cands.insert(0, p)
                break
            p = os.path.dirname(p)
    except Exception:
        pass
    for c in cands:
        if os.path.isdir(c):
            return c
    return None


def machine_info():
    """uname, a few lscpu fields, gcc, Python and the tools' versions, valgrind."""
    lscpu = run_text(["lscpu"])
    keep = ("Architecture", "Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
            "L1d cache", "L1i cache", "L2 cache", "L3 cache", "Hypervisor vendor", "CPU max MHz")
    info = {"uname": " ".join(platform.uname()), "lscpu": {}}
    for line in lscpu.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            if k.strip() in keep:
                info["lscpu"][k.strip()] = v.strip()
    info["gcc"] = run_text(["gcc", "--version"]).splitlines()[0] if shutil.which("gcc") else None
    info["python"] = sys.version.split()[0]
    vers = {"numpy": np.__version__}
    for mod, attr in [("scleron", "__version__"), ("pinocchio", "__version__"),
                      ("mujoco", "__version__"), ("sympy", "__version__"),
                      ("cffi", "__version__")]:
        try:
            vers[mod] = getattr(__import__(mod), attr)
        except Exception:
            vers[mod] = None
    info["versions"] = vers
    info["valgrind"] = run_text(["valgrind", "--version"]) if shutil.which("valgrind") else None
    return info


@dataclasses.dataclass
class Settings:
    """What the command line asked for, resolved (--quick picks the smaller numbers)."""
    quick: bool
    systems: list
    rounds: int                 # C timing rounds, the harnesses interleaved round by round
    per_round: int              # samples per function and round
    target_ms: float            # each sample at least this long
    py_repeats: int             # Python timing samples
    pydy_cap_s: float
    pydy_max_n: int
    no_pydy: bool
    callgrind: bool             # valgrind found and not --no-callgrind
    no_callgrind: bool
    variant_keys: list          # systems of the code generation variants section
    no_variants: bool
    out_dir: str
    build_dir: str


@dataclasses.dataclass
class BenchRun:
    """One run: its settings, the results dict R (written to results.json), the builder and the
    builds, and per system the System object and the loaded generated module."""
    settings: Settings
    R: dict
    builder: object
    futures: dict = dataclasses.field(default_factory=dict)     # (tool, cg) -> Future
    builds: dict = dataclasses.field(default_factory=dict)      # (tool, cg) -> build info
    peer_cg: list = dataclasses.field(default_factory=list)     # callgrind builds queued later
    sysobjs: dict = dataclasses.field(default_factory=dict)     # key -> systems.System
    dyns: dict = dataclasses.field(default_factory=dict)        # key -> generated module

    @property
    def notes(self):
        return self.R["notes"]
