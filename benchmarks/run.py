#!/usr/bin/env python3
"""The benchmark suite of issue 4: scleron's generated C against Pinocchio and MuJoCo.

    python benchmarks/run.py [--quick] [--systems rc20,panda,...] [--out benchmarks/results]

One command builds everything it needs under benchmarks/build/ (cached by content hash), checks
that the three tools compute the same dynamics, times them in C/C++ and from Python, counts
instructions with callgrind, compares operation counts with Featherstone's Table 10.1, times code
generation (scleron against sympy.physics.mechanics' KanesMethod), compares scleron's code
generation variants (forward dynamics Method I / II, mass matrix unrolled / loop; --no-variants
skips them) and writes
OUT/results.md, OUT/results.json and OUT/time_vs_dof.png. benchmarks/README.md says exactly what
is timed. Needs: scleron (pip install -e .), gcc/g++, and for the peers pin, cmeel-eigen,
mujoco, example-robot-data; valgrind for the instruction counts; matplotlib for the plot. A peer
or a step that is missing is reported and skipped.
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HARNESS = os.path.join(HERE, "harness")
ALL_SYSTEMS = ["rc20", "rc50", "rc100", "panda", "ur5", "solo12"]
QUICK_SYSTEMS = ["rc20", "panda"]
VARIANT_SYSTEMS = ["rc20", "rc50", "rc100", "panda"]     # the code generation variants section
QUICK_VARIANT_SYSTEMS = ["rc20"]
FUNCS = ["fd", "id", "M", "h"]
TITLE = {"fd": "forward dynamics", "id": "inverse dynamics", "M": "mass matrix", "h": "bias forces"}
PIN_NAME = {"fd": "aba", "id": "rnea", "M": "crba", "h": "nonLinearEffects"}
PIN_VARIANTS = {"fd": ["aba_local", "aba_world"], "id": ["rnea"], "M": ["crba_local", "crba_world"],
                "h": ["nle"]}
MJ_VARIANTS = {"fd": ["fd_min", "forward"], "id": ["id_min", "inverse"], "M": ["M"], "h": ["h"]}
# Featherstone, RBDA Table 10.1, best rows (GU(n) chain): (multiplications, additions)
TABLE_10_1 = {
    "id": ("RNEA, Balafoutis & Patel 1991", lambda n: (93 * n - 108, 81 * n - 100)),
    "M": ("CRBA, Featherstone 2005", lambda n: (10 * n * n + 22 * n - 32, 6 * n * n + 37 * n - 43)),
    "fd": ("ABA, McMillan et al. 1995", lambda n: (224 * n - 259, 205 * n - 248)),
}
# ../shared/design/BENCHMARKS.md: Pinocchio's CppADCodeGen code / plain Pinocchio, same run
CPPADCG_RATIO = {"panda": {"fd": 0.26, "id": 0.19, "M": 0.53},
                 "rc20": {"fd": 0.27, "id": 0.16, "M": 0.50},
                 "rc50": {"fd": 0.29, "id": 0.18, "M": 0.63},
                 "rc100": {"fd": 0.30, "id": 0.18, "M": 0.93}}
NSTATES = 100          # states per timing pass
NBATCH = 1000          # states per batched Python call
QUADRUPEDS = ["solo_description/robots/solo12.urdf", "solo_description/urdf/solo12.urdf",
              "anymal_b_simple_description/robots/anymal.urdf",
              "anymal_c_simple_description/urdf/anymal.urdf"]
RC_INERTIA = (1 / 600, 101 / 1200, 101 / 1200)
PIN_DEFINES = ["-DNDEBUG", "-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
               "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12"]
# valgrind 3.19 cannot decode AVX-512 (EVEX) instructions, which gcc emits under -march=native on
# this CPU; the binaries run under callgrind are built with these flags added.
NO_AVX512 = ["-mno-avx512f"]

_print_lock = threading.Lock()
T_START = time.perf_counter()


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


def stats(samples):
    if not samples:
        return None
    return {"min": min(samples), "median": statistics.median(samples), "max": max(samples),
            "n": len(samples)}


# ----------------------------------------------------------------------------------------------
# environment


def cmeel_prefix():
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


def robots_dir():
    pre = cmeel_prefix()
    if pre:
        d = os.path.join(pre, "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    return None


def run_text(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:
        return ""


def machine_info():
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
        for label, argv in steps:
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
                return info
        with open(stamp, "w") as fh:
            json.dump(info, fh, indent=1)
        parent = os.path.dirname(out_dir)          # drop older builds of the same thing
        for other in os.listdir(parent):
            old = os.path.join(parent, other)
            if other != key and os.path.isfile(os.path.join(old, "build.json")):
                shutil.rmtree(old, ignore_errors=True)
        return info


def pin_build_steps(cg=False):
    pre = cmeel_prefix()
    if not pre:
        return None, "the pin wheel (cmeel.prefix) was not found"
    eigen = None
    for cand in [os.path.join(pre, "include", "eigen3"), "/usr/include/eigen3"]:
        if os.path.isfile(os.path.join(cand, "Eigen", "Core")):
            eigen = cand
            break
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


def scleron_build_steps(folder, name, cg=False):
    meta = json.loads(read(os.path.join(folder, "scleron.json")))
    cflags = meta.get("cflags") or ["-O2", "-g0", "-march=native", "-fno-math-errno", "-std=c99"]
    cflags = list(cflags) + (NO_AVX512 if cg else [])
    template = read(os.path.join(HARNESS, "scleron_bench.c.in"))
    main_src = template.replace("@NAME_UPPER@", name.upper()).replace("@NAME@", name)
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


# ----------------------------------------------------------------------------------------------
# models


def rc_yaml(n):
    lines = [f"name: rc{n}", "gravity: [0, 0, -9.81]", "bodies:"]
    for i in range(1, n + 1):
        parent = "world" if i == 1 else f"link{i - 1}"
        place = "" if i == 1 else ", xyz: [1, 0, 0], rotation: [[1, 0, 0], [0, 0, -1], [0, 1, 0]]"
        lines += [f"  - name: link{i}", f"    parent: {parent}",
                  f"    joint: {{name: joint{i}, type: revolute, axis: [0, 0, 1]{place}}}",
                  "    mass: 1.0", "    com: [0.5, 0, 0]",
                  "    inertia: [" + ", ".join(repr(x) for x in RC_INERTIA) + "]"]
    return "\n".join(lines) + "\n"


def rc_model_path(n, build_dir):
    ex = os.path.join(ROOT, "examples", f"rc{n}.yaml")
    if os.path.isfile(ex):
        return ex
    path = os.path.join(build_dir, "models", f"rc{n}.yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = rc_yaml(n)
    if not os.path.isfile(path) or read(path) != text:
        with open(path, "w") as fh:
            fh.write(text)
    return path


def rc_pin(n):
    import pinocchio as pin
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0, 0, -9.81]), np.zeros(3))
    rx = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    inertia = pin.Inertia(1.0, np.array([0.5, 0, 0]), np.diag(RC_INERTIA))
    parent = 0
    for i in range(1, n + 1):
        X = pin.SE3.Identity() if i == 1 else pin.SE3(rx, np.array([1.0, 0, 0]))
        parent = model.addJoint(parent, pin.JointModelRZ(), X, f"joint{i}")
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    return model


def rc_mjcf(n):
    c = math.cos(math.pi / 4)
    out = [f'<mujoco model="rc{n}">', '  <compiler angle="radian" autolimits="true"/>',
           '  <option gravity="0 0 -9.81"/>', "  <worldbody>"]
    for i in range(1, n + 1):
        ind = "  " * (i + 1)
        pos, quat = ("0 0 0", "1 0 0 0") if i == 1 else ("1 0 0", f"{c!r} {c!r} 0 0")
        out += [f'{ind}<body name="link{i}" pos="{pos}" quat="{quat}">',
                f'{ind}  <joint name="joint{i}" type="hinge" axis="0 0 1" damping="0" armature="0"/>',
                f'{ind}  <inertial pos="0.5 0 0" mass="1" diaginertia="'
                + " ".join(repr(x) for x in RC_INERTIA) + '"/>']
    for i in range(n, 0, -1):
        out.append("  " * (i + 1) + "</body>")
    out += ["  </worldbody>", "</mujoco>"]
    return "\n".join(out) + "\n"


def urdf_for_mujoco(path):
    """The URDF without visual/collision elements (MuJoCo cannot resolve package:// meshes)."""
    import xml.etree.ElementTree as ET
    root = ET.parse(path).getroot()
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for e in root.findall("mujoco"):
        root.remove(e)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", {"discardvisual": "true", "fusestatic": "true",
                                   "balanceinertia": "false", "inertiafromgeom": "false"})
    return ET.tostring(root, encoding="unicode")


def mj_disable_all(m):
    import mujoco
    bits = 0
    for name in ["mjDSBL_CONSTRAINT", "mjDSBL_EQUALITY", "mjDSBL_FRICTIONLOSS", "mjDSBL_LIMIT",
                 "mjDSBL_CONTACT", "mjDSBL_SPRING", "mjDSBL_DAMPER", "mjDSBL_ACTUATION",
                 "mjDSBL_SENSOR", "mjDSBL_CLAMPCTRL"]:
        bit = getattr(mujoco.mjtDisableBit, name, None)
        if bit is not None:
            bits |= int(bit)
    m.opt.disableflags = m.opt.disableflags | bits
    m.opt.enableflags = 0


def pin_short(jm):
    return jm.shortname().replace("JointModel", "")


def export_pin_model(model, path):
    lines = [str(model.njoints - 1)]
    for j in range(1, model.njoints):
        jm = model.joints[j]
        t = pin_short(jm)
        axis = np.zeros(3)
        if "Unaligned" in t:
            axis = np.asarray(jm.extract().axis, dtype=float)
        X = model.jointPlacements[j]
        I = model.inertias[j]
        Ic = np.asarray(I.inertia)
        vals = list(np.asarray(X.rotation).ravel()) + list(np.asarray(X.translation)) + list(axis) \
            + [I.mass] + list(np.asarray(I.lever)) \
            + [Ic[0, 0], Ic[0, 1], Ic[1, 1], Ic[0, 2], Ic[1, 2], Ic[2, 2]]
        lines.append(f"{t} {model.parents[j]} " + " ".join(repr(float(v)) for v in vals))
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def rot_xyz(a, b, c):
    ca, sa, cb, sb, cc, sc = math.cos(a), math.sin(a), math.cos(b), math.sin(b), math.cos(c), math.sin(c)
    rx = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
    ry = np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    rz = np.array([[cc, -sc, 0], [sc, cc, 0], [0, 0, 1]])
    return rx @ ry @ rz


def pin_q_from_ours(pmodel, q):
    """Our coordinates -> Pinocchio's: continuous joints become (cos, sin); a free joint's XYZ
    angles become a quaternion (x, y, z, w)."""
    import pinocchio as pin
    out, k = [], 0
    for j in range(1, pmodel.njoints):
        jm = pmodel.joints[j]
        t = pin_short(jm)
        if t == "FreeFlyer":
            R = rot_xyz(*q[k + 3:k + 6])
            quat = pin.Quaternion(R)
            out += list(q[k:k + 3]) + [quat.x, quat.y, quat.z, quat.w]
            k += 6
        elif t.startswith("RUB"):
            out += [math.cos(q[k]), math.sin(q[k])]
            k += 1
        else:
            out += list(q[k:k + jm.nq])
            k += jm.nq
    return np.array(out)


def write_states(path, q, v, u):
    q, v, u = (np.ascontiguousarray(x, dtype=np.float64) for x in (q, v, u))
    with open(path, "wb") as fh:
        fh.write(np.array([q.shape[0], q.shape[1], v.shape[1]], dtype=np.int32).tobytes())
        fh.write(q.tobytes())
        fh.write(v.tobytes())
        fh.write(u.tobytes())


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


class System:
    """One benchmark system in the three tools, with its random states."""

    def __init__(self, key, build_dir):
        self.key = key
        self.dir = os.path.join(build_dir, key)
        os.makedirs(self.dir, exist_ok=True)
        self.notes = []
        self.verification = {}
        self.floating = False
        self.pin_model = None
        self.mj_model = None
        self.mj_note = None
        m = re.fullmatch(r"rc(\d+)", key)
        robots = robots_dir()
        if m:
            self.n = int(m.group(1))
            self.kind = "rc"
            self.source = rc_model_path(self.n, build_dir)
            self.label = f"RC{self.n}"
        else:
            self.kind = "urdf"
            if robots is None:
                raise RuntimeError("example-robot-data not found (pip install example-robot-data)")
            if key == "panda":
                rel = "panda_description/urdf/panda.urdf"
            elif key == "ur5":
                rel = "ur_description/urdf/ur5_robot.urdf"
            elif key in ("solo12", "quadruped"):
                rel = next((r for r in QUADRUPEDS if os.path.isfile(os.path.join(robots, r))), None)
                if rel is None:
                    raise RuntimeError("no quadruped URDF found in example-robot-data")
                self.floating = True
            else:
                raise RuntimeError(f"unknown system {key}")
            self.source = os.path.join(robots, rel)
            self.label = os.path.splitext(os.path.basename(rel))[0] + (" (floating)" if self.floating else "")
        import scleron
        self.model = scleron.load_model(self.source, floating=self.floating) if self.floating \
            else scleron.load_model(self.source)
        self.name = key if key != "quadruped" else "quadruped"
        self.nv = self.model.nv
        rng = np.random.default_rng(int(sha(key), 16) % (2 ** 32))
        q = rng.uniform(-math.pi, math.pi, (NSTATES, self.nv))
        if self.floating:
            q[:, :6] = rng.uniform(-1, 1, (NSTATES, 6))
        self.q = q
        self.v = rng.uniform(-1, 1, (NSTATES, self.nv))
        self.u = rng.uniform(-1, 1, (NSTATES, self.nv))
        self.qb = rng.uniform(-math.pi, math.pi, (NBATCH, self.nv))
        if self.floating:
            self.qb[:, :6] = rng.uniform(-1, 1, (NBATCH, 6))
        self.vb = rng.uniform(-1, 1, (NBATCH, self.nv))
        self.ub = rng.uniform(-1, 1, (NBATCH, self.nv))
        self.states_path = os.path.join(self.dir, "states.bin")
        write_states(self.states_path, self.q, self.v, self.u)

    # -- Pinocchio ------------------------------------------------------------------------------
    def setup_pin(self):
        import pinocchio as pin
        if self.kind == "rc":
            self.pin_model = rc_pin(self.n)
        elif self.floating:
            self.pin_model = pin.buildModelFromUrdf(self.source, pin.JointModelFreeFlyer())
        else:
            self.pin_model = pin.buildModelFromUrdf(self.source)
        pm = self.pin_model
        self.pin_data = pm.createData()
        if pm.nv != self.nv:
            raise RuntimeError(f"Pinocchio has nv = {pm.nv}, scleron {self.nv}")
        self.pq = np.array([pin_q_from_ours(pm, q) for q in self.q])
        self.pqb = np.array([pin_q_from_ours(pm, q) for q in self.qb])
        self.pin_states_path = os.path.join(self.dir, "pin_states.bin")
        write_states(self.pin_states_path, self.pq, self.v, self.u)
        self.pin_model_path = os.path.join(self.dir, "pin_model.txt")
        export_pin_model(pm, self.pin_model_path)

    def pin_eval(self, q, v, u):
        import pinocchio as pin
        pm, pd = self.pin_model, self.pin_data
        fd = pin.aba(pm, pd, q, v, u).copy()
        tau = pin.rnea(pm, pd, q, v, u).copy()
        M = pin.crba(pm, pd, q).copy()
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(pm, pd, q, v).copy()
        return {"fd": fd, "id": tau, "M": M, "h": h}

    # -- MuJoCo ---------------------------------------------------------------------------------
    def setup_mujoco(self):
        import mujoco
        if self.kind == "rc":
            xml = rc_mjcf(self.n)
            with open(os.path.join(self.dir, "model.xml"), "w") as fh:
                fh.write(xml)
            m = mujoco.MjModel.from_xml_string(xml)
        else:
            xml = urdf_for_mujoco(self.source)
            with open(os.path.join(self.dir, "model_for_mujoco.urdf"), "w") as fh:
                fh.write(xml)
            if self.floating:
                spec = mujoco.MjSpec.from_string(xml)
                spec.worldbody.first_body().add_freejoint()
                m = spec.compile()
            else:
                m = mujoco.MjModel.from_xml_string(xml)
        mj_disable_all(m)
        self.mj_model = m
        self.mj_data = mujoco.MjData(m)
        # MuJoCo joint order -> Pinocchio joint (by name; the free joint <-> the free flyer)
        pm = self.pin_model
        pin_names = list(pm.names)
        qmap, vmap = [], []
        for jj in range(m.njnt):
            jt = int(m.jnt_type[jj])
            name = m.joint(jj).name
            if jt == int(mujoco.mjtJoint.mjJNT_FREE):
                pj = next(j for j in range(1, pm.njoints) if pin_short(pm.joints[j]) == "FreeFlyer")
            else:
                if name not in pin_names:
                    raise RuntimeError(f"MuJoCo joint {name!r} not in the Pinocchio model")
                pj = pin_names.index(name)
            jm = pm.joints[pj]
            iq, iv = jm.idx_q, jm.idx_v
            if jt == int(mujoco.mjtJoint.mjJNT_FREE):
                qmap.append(("free", iq))
                vmap += list(range(iv, iv + 6))
            elif pin_short(jm).startswith("RUB"):
                qmap.append(("rub", iq))
                vmap.append(iv)
            else:
                qmap.append(("copy", iq))
                vmap.append(iv)
        if len(vmap) != pm.nv or m.nv != pm.nv:
            raise RuntimeError(f"MuJoCo has nv = {m.nv}, Pinocchio {pm.nv}")
        self.mj_qmap, self.mj_vmap = qmap, np.array(vmap)
        self.mq = np.array([self.mj_q_from_pin(q) for q in self.pq])
        self.mv = self.v[:, self.mj_vmap]
        self.mu = self.u[:, self.mj_vmap]
        self.mj_states_path = os.path.join(self.dir, "mj_states.bin")
        write_states(self.mj_states_path, self.mq, self.mv, self.mu)
        self.mjb_path = os.path.join(self.dir, "model.mjb")
        mujoco.mj_saveModel(m, self.mjb_path, None)

    def mj_q_from_pin(self, pq):
        out = []
        for how, iq in self.mj_qmap:
            if how == "free":
                x, y, z, w = pq[iq + 3:iq + 7]
                out += list(pq[iq:iq + 3]) + [w, x, y, z]
            elif how == "rub":
                out.append(math.atan2(pq[iq + 1], pq[iq]))
            else:
                out.append(pq[iq])
        return np.array(out)

    def mj_eval(self, mq, mv, mu):
        import mujoco
        m, d = self.mj_model, self.mj_data
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = mq, mv, mu
        mujoco.mj_forward(m, d)
        fd = d.qacc.copy()
        h = d.qfrc_bias.copy()
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        d.qacc[:] = mu
        mujoco.mj_inverse(m, d)
        return {"fd": fd, "id": d.qfrc_inverse.copy(), "M": M, "h": h}

    def verify_mujoco(self):
        """MuJoCo's M and bias against Pinocchio's crba and nle (and aba, rnea) at a random state.
        A free joint's velocity means something else in each tool, so at that state the base
        orientation is the identity and the base velocity zero, where they coincide."""
        pq, v, u = self.pq[0].copy(), self.v[0].copy(), self.u[0].copy()
        for j in range(1, self.pin_model.njoints):
            jm = self.pin_model.joints[j]
            if pin_short(jm) == "FreeFlyer":
                pq[jm.idx_q + 3:jm.idx_q + 7] = [0, 0, 0, 1]
                v[jm.idx_v:jm.idx_v + 6] = 0
        ref = self.pin_eval(pq, v, u)
        got = self.mj_eval(self.mj_q_from_pin(pq), v[self.mj_vmap], u[self.mj_vmap])
        P = self.mj_vmap
        errs = {"M": rel_err(got["M"], ref["M"][np.ix_(P, P)]), "h": rel_err(got["h"], ref["h"][P]),
                "fd": rel_err(got["fd"], ref["fd"][P]), "id": rel_err(got["id"], ref["id"][P])}
        self.verification["mujoco vs pinocchio (python)"] = errs
        ok = errs["M"] <= 1e-9 and errs["h"] <= 1e-9
        return ok, errs

    def verify_scleron_vs_pin(self, dyn):
        ours = {"fd": dyn.forward_dynamics(self.q[0], self.v[0], self.u[0]),
                "id": dyn.inverse_dynamics(self.q[0], self.v[0], self.u[0]),
                "M": dyn.mass_matrix(self.q[0]), "h": dyn.bias_forces(self.q[0], self.v[0])}
        if self.floating:
            self.verification["scleron vs pinocchio (python)"] = \
                "not compared: free-joint coordinates differ (Euler XYZ + coordinate rates vs quaternion + body twist)"
            return ours
        ref = self.pin_eval(self.pq[0], self.v[0], self.u[0])
        self.verification["scleron vs pinocchio (python)"] = {f: rel_err(ours[f], ref[f]) for f in FUNCS}
        return ours


# ----------------------------------------------------------------------------------------------
# harness runs


def harness_cmd(tool, sysobj, builds, cg=False):
    b = builds.get((tool, cg))
    if not b or not b.get("ok"):
        return None
    if tool == "scleron":
        return [os.path.join(b["dir"], "scleron_bench"), sysobj.states_path]
    if tool == "pinocchio":
        return [os.path.join(b["dir"], "pin_bench"), sysobj.pin_model_path, sysobj.pin_states_path]
    return [os.path.join(b["dir"], "mujoco_bench"), sysobj.mjb_path, sysobj.mj_states_path]


def taskset():
    return ["taskset", "-c", str(os.cpu_count() - 1)] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []


def run_harness(cmd, args, timeout=600):
    proc = subprocess.run(taskset() + cmd + args, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0])} {' '.join(args)} failed ({proc.returncode}): "
                           f"{proc.stderr[-1000:]}")
    return proc.stdout


def parse_samples(text):
    out = {}
    for line in text.splitlines():
        p = line.split()
        if p and p[0] == "SAMPLES":
            out[p[1]] = [float(x) for x in p[3:]]
    return out


def parse_out(text):
    out = {}
    for line in text.splitlines():
        p = line.split()
        if p and p[0] == "OUT":
            out[p[1]] = np.array([float(x) for x in p[2:]])
    return out


def callgrind_ir(cmd, func, K, tmpdir):
    fn = os.path.join(tmpdir, f"cg.{os.getpid()}.{func}.{K}.out")
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={fn}"] + cmd
                          + ["calls", str(K), func], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or not os.path.isfile(fn):
        raise RuntimeError(f"valgrind failed: {proc.stderr[-800:]}")
    total = None
    for line in read(fn).splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            total = int(line.split()[1])
    return total, fn


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


# ----------------------------------------------------------------------------------------------
# Python timings


def py_samples(fn, R, per):
    fn()
    out = []
    for _ in range(R):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / per)
    return out


def interleaved_samples(fns, R, per):
    """Samples of several calls taken round-robin (a, b, c, a, b, c, ...), so that the noise of
    this shared machine falls on all of them alike and their ratios mean something."""
    for fn in fns.values():
        fn()
    out = {k: [] for k in fns}
    for _ in range(R):
        for k, fn in fns.items():
            t0 = time.perf_counter_ns()
            fn()
            out[k].append((time.perf_counter_ns() - t0) / per)
    return {k: stats(v) for k, v in out.items()}


def c_batch_call(dyn, f, sysobj, shape):
    """The generated NAME_<function>_batch called directly through cffi on the same N states
    and a preallocated output: the C cost of a batch (each state writes its own output, so large
    mass matrices are bound by memory bandwidth here, unlike the one-buffer C harness)."""
    full = {"fd": "forward_dynamics", "id": "inverse_dynamics", "M": "mass_matrix", "h": "bias_forces"}[f]
    ffi, lib = getattr(dyn, "ffi", None), getattr(dyn, "lib", None)
    names = [n for n in dir(lib) if n.endswith(f"_{full}_batch")] if lib is not None else []
    if not names:
        return None
    fn = getattr(lib, names[0])
    ins = {"fd": (sysobj.qb, sysobj.vb, sysobj.ub), "id": (sysobj.qb, sysobj.vb, sysobj.ub),
           "M": (sysobj.qb,), "h": (sysobj.qb, sysobj.vb)}[f]
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in ins] + [np.empty((NBATCH,) + shape)]
    ptrs = [ffi.cast("double *", ffi.from_buffer(a)) for a in arrays]
    return lambda arrays=arrays: fn(NBATCH, *ptrs)      # the default keeps the arrays alive


def python_timings(sysobj, dyn, R):
    res = {}
    Q, V, U = sysobj.q, sysobj.v, sysobj.u
    nv = sysobj.nv
    # the states as separate contiguous arrays, made once: the timed loops then measure the
    # call, not numpy's row indexing (about 80 ns per Q[s])
    QL, VL, UL = ([np.ascontiguousarray(X[s]) for s in range(NSTATES)] for X in (Q, V, U))
    args = {"fd": list(zip(QL, VL, UL)), "id": list(zip(QL, VL, UL)), "M": [(q,) for q in QL],
            "h": list(zip(QL, VL))}
    calls = {"fd": (dyn.forward_dynamics, (nv,)), "id": (dyn.inverse_dynamics, (nv,)),
             "M": (dyn.mass_matrix, (nv, nv)), "h": (dyn.bias_forces, (nv,))}
    batch = {
        "fd": lambda **k: dyn.forward_dynamics(sysobj.qb, sysobj.vb, sysobj.ub, **k),
        "id": lambda **k: dyn.inverse_dynamics(sysobj.qb, sysobj.vb, sysobj.ub, **k),
        "M": lambda **k: dyn.mass_matrix(sysobj.qb, **k),
        "h": lambda **k: dyn.bias_forces(sysobj.qb, sysobj.vb, **k),
    }
    ours = {}
    for f in FUNCS:
        call, shape = calls[f]
        row = {}

        def single(call=call, states=args[f]):
            for a in states:
                call(*a)
        row["single"] = stats(py_samples(single, R, NSTATES))
        out = np.empty(shape)
        try:
            def single_out(call=call, out=out, states=args[f]):
                for a in states:
                    call(*a, out=out)
            row["single_out"] = stats(py_samples(single_out, R, NSTATES))
        except TypeError:
            row["single_out"] = None
        row["bound"] = None
        if hasattr(dyn, "bind"):     # the generated module's bind(name, *inputs, out) -> no-argument call
            try:
                full = {"fd": "forward_dynamics", "id": "inverse_dynamics", "M": "mass_matrix", "h": "bias_forces"}[f]
                ins = {"fd": (Q[0], V[0], U[0]), "id": (Q[0], V[0], U[0]), "M": (Q[0],), "h": (Q[0], V[0])}[f]
                bound = dyn.bind(full, *[np.array(x) for x in ins], np.empty(shape))

                def bound_loop(bound=bound):
                    for _ in range(NSTATES):
                        bound()
                row["bound"] = stats(py_samples(bound_loop, R, NSTATES))
            except Exception as exc:
                row["bound_error"] = f"{type(exc).__name__}: {exc}"
        row["batch"] = stats(py_samples(lambda f=f: batch[f](), max(3, R // 2), NBATCH))
        # batch with out=, the C batch function and threads=2, sampled round-robin
        bout = np.empty((NBATCH,) + shape)
        trio = {"batch_out": lambda f=f, bout=bout: batch[f](out=bout),
                "batch_threads2": lambda f=f, bout=bout: batch[f](out=bout, threads=2)}
        cb = c_batch_call(dyn, f, sysobj, shape)
        if cb is not None:
            trio["c_batch"] = cb
        try:
            row.update(interleaved_samples(trio, max(3, R // 2), NBATCH))
        except (TypeError, ValueError):
            row["batch_out"] = row["batch_threads2"] = row["c_batch"] = None
        ours[f] = row
    res["scleron"] = ours
    if sysobj.pin_model is not None:
        import pinocchio as pin
        pm, pd, PQ = sysobj.pin_model, sysobj.pin_data, sysobj.pq
        PL = [np.ascontiguousarray(PQ[s]) for s in range(NSTATES)]      # rows made once, as for scleron
        pc = {"fd": lambda s: pin.aba(pm, pd, PL[s], VL[s], UL[s]),
              "id": lambda s: pin.rnea(pm, pd, PL[s], VL[s], UL[s]),
              "M": lambda s: pin.crba(pm, pd, PL[s]),
              "h": lambda s: pin.nonLinearEffects(pm, pd, PL[s], VL[s])}
        pres = {}
        for f in FUNCS:
            def single(c=pc[f]):
                for s in range(NSTATES):
                    c(s)
            PQB = sysobj.pqb
            bc = {"fd": lambda s: pin.aba(pm, pd, PQB[s], sysobj.vb[s], sysobj.ub[s]),
                  "id": lambda s: pin.rnea(pm, pd, PQB[s], sysobj.vb[s], sysobj.ub[s]),
                  "M": lambda s: pin.crba(pm, pd, PQB[s]),
                  "h": lambda s: pin.nonLinearEffects(pm, pd, PQB[s], sysobj.vb[s])}[f]

            def loop(c=bc):
                for s in range(NBATCH):
                    c(s)
            pres[f] = {"single": stats(py_samples(single, R, NSTATES)),
                       "batch": stats(py_samples(loop, max(3, R // 2), NBATCH))}
        res["pinocchio"] = pres
    if sysobj.mj_model is not None:
        import mujoco
        m, d = sysobj.mj_model, sysobj.mj_data
        MQ, MV, MU = sysobj.mq, sysobj.mv, sysobj.mu

        def mfd(s):
            d.qpos[:] = MQ[s]; d.qvel[:] = MV[s]; d.qfrc_applied[:] = MU[s]
            mujoco.mj_forward(m, d)

        def mid(s):
            d.qpos[:] = MQ[s]; d.qvel[:] = MV[s]; d.qacc[:] = MU[s]
            mujoco.mj_inverse(m, d)

        def mM(s):
            d.qpos[:] = MQ[s]
            mujoco.mj_kinematics(m, d); mujoco.mj_comPos(m, d); mujoco.mj_makeM(m, d)

        def mh(s):
            d.qpos[:] = MQ[s]; d.qvel[:] = MV[s]
            mujoco.mj_kinematics(m, d); mujoco.mj_comPos(m, d); mujoco.mj_comVel(m, d)
            mujoco.mj_rne(m, d, 0, d.qfrc_bias)
        mres = {}
        for f, c in [("fd", mfd), ("id", mid), ("M", mM), ("h", mh)]:
            def single(c=c):
                for s in range(NSTATES):
                    c(s)
            mres[f] = {"single": stats(py_samples(single, R, NSTATES))}
        res["mujoco"] = mres
    return res


# ----------------------------------------------------------------------------------------------
# generation timing (workers run in subprocesses so that peak memory is theirs alone)


def _status_mb(field):
    try:
        for line in read("/proc/self/status").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss():
    """Resets the kernel's peak-RSS mark (Linux: 5 > /proc/self/clear_refs) so that the peak
    measured afterwards is the generation's, not the imports'; returns the RSS now (MB)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    return _status_mb("VmRSS") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss():
    return _status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def gen_worker(path, floating, name, method=1, mass_matrix="auto", out_dir=None):
    """build_sources timed in this (fresh) process; with out_dir the files are written there
    afterwards (not timed). method / mass_matrix other than the defaults select a code
    generation variant (see the variants section)."""
    t0 = time.perf_counter()
    import scleron
    from scleron import pipeline
    model = scleron.load_model(path, floating=True) if floating else scleron.load_model(path)
    t_import = time.perf_counter() - t0
    base = reset_peak_rss()
    report = pipeline.Report(name, model.nv)
    kw = {}
    if method != 1:
        kw["method"] = method
    if mass_matrix != "auto":
        kw["mass_matrix"] = mass_matrix
    t1 = time.perf_counter()
    try:
        files, report, _ = pipeline.build_sources(model, name, report=report, **kw)
    except TypeError:
        if kw:          # an older scleron without the variant options: fail, do not time the default
            raise
        files, report, _ = pipeline.build_sources(model, name)
    total = time.perf_counter() - t1
    peak = peak_rss()
    out = {"nv": model.nv, "import_and_load_s": t_import, "total_s": total,
           "times": {k: v for k, v in report.times.items()}, "rss_base_mb": base, "rss_peak_mb": peak,
           "c_bytes": sum(len(v) for k, v in files.items() if k.endswith(".c")),
           "dynamics_c_bytes": len(files.get(f"{name}_dynamics.c", "")),
           "statements": {f: s for f, (s, c) in report.functions.items()}}
    try:
        meta = json.loads(files["scleron.json"])
        out["meta"] = {k: meta.get(k) for k in ("method", "mass_matrix", "functions", "cflags")}
    except (KeyError, ValueError):
        pass
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        pipeline.write_sources(files, out_dir)
    print("RESULT " + json.dumps(out))


def pydy_worker(n):
    t0 = time.perf_counter()
    import sympy as sp
    from sympy.physics import mechanics as me
    t_import = time.perf_counter() - t0
    base = reset_peak_rss()
    t1 = time.perf_counter()
    q = me.dynamicsymbols(f"q1:{n + 1}")
    u = me.dynamicsymbols(f"u1:{n + 1}")
    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)
    bodies, loads = [], []
    parent_frame, parent_origin = N, O
    Ixx, Iyy = sp.Rational(1, 600), sp.Rational(101, 1200)
    for i in range(n):
        if i == 0:
            P, origin = N, O
        else:       # joint i+1 sits at (1, 0, 0) of body i, turned by Rx(+90 deg)
            P = parent_frame.orientnew(f"P{i + 1}", "Axis", [sp.pi / 2, parent_frame.x])
            origin = parent_origin.locatenew(f"O{i + 1}", parent_frame.x)
            origin.v2pt_theory(parent_origin, N, parent_frame)
        A = P.orientnew(f"A{i + 1}", "Axis", [q[i], P.z])
        A.set_ang_vel(P, u[i] * P.z)
        G = origin.locatenew(f"G{i + 1}", sp.Rational(1, 2) * A.x)
        G.v2pt_theory(origin, N, A)
        body = me.RigidBody(f"B{i + 1}", G, A, 1, (me.inertia(A, Ixx, Iyy, Iyy), G))
        bodies.append(body)
        loads.append((G, -sp.Float(9.81) * N.z))
        parent_frame, parent_origin = A, origin
    kd = [q[i].diff() - u[i] for i in range(n)]
    t_setup = time.perf_counter() - t1
    t2 = time.perf_counter()
    km = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kd)
    km.kanes_equations(bodies, loads)
    t_kane = time.perf_counter() - t2
    t3 = time.perf_counter()
    MM = km.mass_matrix
    forcing = km.forcing
    t_mm = time.perf_counter() - t3
    out = {"n": n, "import_s": t_import, "setup_s": t_setup, "kanes_equations_s": t_kane,
           "mass_matrix_s": t_mm, "total_s": t_setup + t_kane + t_mm,
           "rss_base_mb": base, "rss_peak_mb": peak_rss(),
           "mass_matrix_shape": list(MM.shape), "forcing_len": len(forcing)}
    if n <= 5:      # not timed: M at q_i = 0.1 i, for the check against Pinocchio's crba
        subs = {q[i]: sp.Float(0.1 * (i + 1)) for i in range(n)}
        out["M_check_q"] = [0.1 * (i + 1) for i in range(n)]
        out["M_check"] = [[float(MM[i, j].subs(subs).evalf()) for j in range(n)] for i in range(n)]
    print("RESULT " + json.dumps(out))


def run_worker(args, timeout):
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"timeout": True, "wall_s": time.perf_counter() - t0}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            r["wall_s"] = time.perf_counter() - t0
            return r
    return {"error": (proc.stderr or proc.stdout)[-1500:], "wall_s": time.perf_counter() - t0}


# ----------------------------------------------------------------------------------------------
# code generation variants: forward dynamics Method I / II, mass matrix unrolled / loop


def variant_configs(nv):
    """{name: (method, mass_matrix)}: the default configuration, Method II, and the mass-matrix
    form the default does not use (pipeline.mass_form: loop from MASS_LOOP_FROM_NV on)."""
    from scleron.pipeline import mass_form
    other = "unrolled" if mass_form(nv) == "loop" else "loop"
    return {"default": (1, "auto"), "method2": (2, "auto"), f"mass_{other}": (1, other)}


# harness function -> (scleron.json function, title, [(label, the config name of that row)])
VARIANT_COMPARISONS = {
    "fd": ("forward_dynamics", "forward dynamics: Method I (fully unrolled) vs Method II (passes 4-6 "
           "as loops over the bodies, one kernel per joint class)",
           [("Method I", lambda V: "default"), ("Method II", lambda V: "method2")]),
    "M": ("mass_matrix", "mass matrix: unrolled (every entry straight-line code) vs loop (world-frame "
          "columns unrolled, dense dot-product loops)",
          [("unrolled", lambda V: "default" if V["default_mass"] == "unrolled" else "mass_unrolled"),
           ("loop", lambda V: "default" if V["default_mass"] == "loop" else "mass_loop")]),
}


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


def run_variants(S, builder, build_dir, rounds, per_round, target_ms):
    """Generates (fresh process, build_sources timed), compiles (gcc timed) and times (the
    scleron C harness, the variants interleaved round by round) each code generation variant
    of one system. Returns the system's results["variants"] entry."""
    from scleron.pipeline import mass_form
    V = {"default_mass": mass_form(S.nv), "configs": {}, "errors": []}
    cmds, funcs = {}, {}
    for vname, (method, mass) in variant_configs(S.nv).items():
        folder = os.path.join(S.dir, "variants", vname, "generated")
        g = run_worker(["--_gen-worker", S.source, "1" if S.floating else "0", S.key, str(method), mass,
                        folder], timeout=1800)
        if "total_s" not in g:
            V["errors"].append(f"{vname}: generation failed: " + (g.get("error") or "timeout")[-500:])
            log(f"{S.key} variant {vname}: generation failed")
            continue
        meta = g.pop("meta", {}) or {}
        fm = meta.get("functions", {})
        cfg = {"method": meta.get("method", method), "mass_matrix": meta.get("mass_matrix", mass),
               "generation": g, "generate_s": g["total_s"], "c_file_bytes": g.get("dynamics_c_bytes"),
               "statements": {f: m.get("statements") for f, m in fm.items()},
               "ops": {f: m.get("ops") for f, m in fm.items()}}
        V["configs"][vname] = cfg
        key, steps = scleron_build_steps(folder, S.key)
        b = builder.build(f"{S.key}/variants/{vname}/bench", key, steps, ["scleron_bench"])
        if not b.get("ok"):
            V["errors"].append(f"{vname}: build failed: {b.get('error', '')[-600:]}")
            log(f"{S.key} variant {vname}: build failed")
            continue
        try:
            if b.get("cached"):
                cfg["compile_s"] = time_compile(steps, build_dir)
            else:                               # least of the build's compile and one more
                cfg["compile_s"] = min(b["seconds"]["compile"], time_compile(steps, build_dir, 1))
        except Exception as exc:
            V["errors"].append(f"{vname}: timed compile failed: {exc}")
        cfg["compile_command"] = dynamics_compile_command(b)
        cmds[vname] = [os.path.join(b["dir"], "scleron_bench"), S.states_path]
        funcs[vname] = [f for f, (fname, _, rows) in VARIANT_COMPARISONS.items()
                        if any(pick(V) == vname for _, pick in rows)]
        log(f"{S.key} variant {vname} (method {cfg['method']}, mass {cfg['mass_matrix']}): generate "
            f"{cfg['generate_s']:.2f} s, compile {cfg.get('compile_s', float('nan')):.1f} s, "
            f"{(cfg['c_file_bytes'] or 0) / 1e6:.2f} MB")
    # each variant's C harness against the default's, all four functions, state 0
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
    samples = {v: {} for v in cmds}
    for rnd in range(rounds):
        for vname, cmd in cmds.items():
            if cmd is None:
                continue
            try:
                got = parse_samples(run_harness(cmd, ["time", str(per_round), str(target_ms)] + funcs[vname]))
            except Exception as exc:
                V["errors"].append(f"{vname}: timing failed: {exc}")
                cmds[vname] = None
                continue
            for f, xs in got.items():
                samples[vname].setdefault(f, []).extend(xs)
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
    fname = VARIANT_COMPARISONS[comp][0]
    t = (cfg.get("c") or {}).get(comp) or {}
    return {"statements": cfg["statements"].get(fname), "C size": cfg.get("c_file_bytes"),
            "generate": cfg.get("generate_s"), "compile": cfg.get("compile_s"),
            "time": t.get("median"), "time_min": t.get("min")}


def variant_sentence(R, comp, tol=0.02):
    """One sentence, from the numbers: which of the two forms wins code size (statements of the
    function), gcc compile time and run time (median ns per call) on which systems. Ratios are
    second form / first form; within ±tol (times only) counts as no clear winner."""
    _, _, rows = VARIANT_COMPARISONS[comp]
    A, B = rows[0][0], rows[1][0]
    metrics = [("smaller code (statements)", "statements", 0.0), ("faster gcc compile", "compile", tol),
               ("faster run (median ns per call)", "time", tol)]
    per = {what: [] for what, _, _ in metrics}
    for S in R["systems"].values():
        V = S.get("variants")
        if not V:
            continue
        vr = {label: variant_metrics(cfg, comp) for label, _, cfg, _ in variant_rows(V, comp)}
        if A not in vr or B not in vr:
            continue
        for what, m, _ in metrics:
            a, b = vr[A][m], vr[B][m]
            if a and b:
                per[what].append((S["label"], b / a))
    clauses = []
    for what, _, t in metrics:
        rs = per[what]
        if not rs:
            continue
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
        clauses.append(f"{what}: " + (", ".join(segs[:-1]) + " and " + segs[-1] if len(segs) > 1 else segs[0]))
    if not clauses:
        return None
    return (f"**{TITLE[comp].capitalize()}, {B} vs {A}** (in parentheses {B} / {A}): "
            + "; ".join(clauses) + ".")


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


# ----------------------------------------------------------------------------------------------
# report


def fmt_ns(x):
    if x is None:
        return "—"
    if x >= 100000:
        return f"{x / 1000:,.0f} µs"
    if x >= 10000:
        return f"{x / 1000:.1f} µs"
    return f"{x:,.0f}"


def fmt_st(st):
    if not st:
        return "—"
    return f"{fmt_ns(st['median'])} ({fmt_ns(st['min'])}–{fmt_ns(st['max'])})"


def parse_ops(text):
    m = re.search(r"(\d+)m\s*\+\s*(\d+)a(?:\s*\+\s*(\d+)\s*fn)?", text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def best_variant(tool_res, variants):
    cands = [(tool_res[v]["median"], v) for v in variants if tool_res.get(v)]
    if not cands:
        return None, None
    _, v = min(cands)
    return v, tool_res[v]


def write_report(R, out_dir, argv):
    md = []
    mi = R["machine"]
    md.append("# scleron benchmarks: generated C against Pinocchio and MuJoCo\n")
    md.append(f"`{' '.join(argv)}` — {R['date']}, {R['wall_s']:.0f} s wall "
              f"({'quick' if R['settings']['quick'] else 'full'} run).\n")
    md.append("## Machine\n")
    l = mi["lscpu"]
    md.append(f"- CPU: {l.get('Model name', '?')}, {l.get('CPU(s)', '?')} CPUs "
              f"({l.get('Core(s) per socket', '?')} cores/socket, {l.get('Thread(s) per core', '?')} thread/core), "
              f"L1d {l.get('L1d cache', '?')}, L2 {l.get('L2 cache', '?')}, L3 {l.get('L3 cache', '?')}; "
              f"hypervisor {l.get('Hypervisor vendor', 'none')}")
    md.append(f"- `uname -a`: {mi['uname']}")
    md.append(f"- {mi['gcc']}; Python {mi['python']}; " + ", ".join(
        f"{k} {v}" for k, v in mi["versions"].items() if v) + f"; {mi['valgrind'] or 'no valgrind'}")
    s = R["settings"]
    md.append(f"- {s['nstates']} random states per pass; C: {s['rounds']} rounds × {s['repeats_per_round']} "
              f"samples per function, each sample ≥ {s['target_ms']} ms of back-to-back calls, harnesses "
              f"interleaved round by round and pinned with `taskset` to one CPU. A noisy shared 2-core box: "
              f"**min and median are the figures to read**, ratios only within this run.\n")
    md.append("## What is timed\n")
    md.append("- **scleron**: `NAME_forward_dynamics`, `_inverse_dynamics`, `_mass_matrix` (full n×n, row-major), "
              "`_bias_forces`, compiled with the generated folder's own cflags (`-O2 -march=native "
              "-fno-math-errno`), called from a C harness (`-O2 -march=native`).")
    md.append("- **Pinocchio** (C++, header-only templates, `-O3 -march=native -DNDEBUG`, same states; "
              "the model is rebuilt in C++ from the one `pin.buildModelFromUrdf`/the RC builder made in Python): "
              "`aba` (LOCAL and WORLD convention), `rnea`, `crba` (LOCAL and WORLD; fills the upper triangle only), "
              "`nonLinearEffects`. The ratio uses the faster convention.")
    md.append("- **MuJoCo** (C API of the wheel's libmujoco, contacts/constraints/limits/passive/actuation "
              "disabled; every call first copies the state into mjData): FD = `fd_min` (mj_kinematics, mj_comPos, "
              "mj_makeM, mj_factorM, mj_comVel, mj_rne(flg_acc=0), mj_solveM) or `forward` (mj_forward); "
              "ID = `id_min` (mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc=1)) or `inverse` (mj_inverse); "
              "M = mj_kinematics + mj_comPos + mj_makeM (sparse, no mj_fullM); h = mj_kinematics + mj_comPos + "
              "mj_comVel + mj_rne(flg_acc=0). The ratio uses the faster variant.")
    md.append("- **ratio** = scleron / peer (median / median; `min` = min / min). Below 1 means scleron is faster.\n")

    # summary
    cells, beat, beat_min, rng, rng_min = 0, 0, 0, [], []
    for key, S in R["systems"].items():
        c = S.get("c", {})
        for f in FUNCS:
            o = c.get("scleron", {}).get(f)
            _, p = best_variant(c.get("pinocchio", {}), PIN_VARIANTS[f])
            if o and p:
                r = o["median"] / p["median"]
                rmin = o["min"] / min(c["pinocchio"][v]["min"] for v in PIN_VARIANTS[f] if c["pinocchio"].get(v))
                rng.append((r, f"{S['label']} {TITLE[f]}"))
                rng_min.append((rmin, f"{S['label']} {TITLE[f]}"))
                cg = CPPADCG_RATIO.get(key, {}).get(f)
                if cg is not None:
                    cells += 1
                    beat += r < cg
                    beat_min += rmin < cg
    if rng:
        lo, hi = min(rng), max(rng)
        md.append("## Summary\n")
        lo_m, hi_m = min(rng_min), max(rng_min)
        md.append(f"- scleron / Pinocchio C++ (same run), median / median: from **{lo[0]:.2f}** ({lo[1]}) to "
                  f"**{hi[0]:.2f}** ({hi[1]}); min / min: from **{lo_m[0]:.2f}** ({lo_m[1]}) to "
                  f"**{hi_m[0]:.2f}** ({hi_m[1]}).")
        if cells:
            md.append(f"- Below the ratio Pinocchio's own CppADCodeGen code reached (BENCHMARKS.md) in "
                      f"**{beat} of {cells}** comparable cells by medians, **{beat_min} of {cells}** by minima "
                      f"(RC20/50/100 and panda; ABA, RNEA, CRBA).")
        md.append("")

    # main table
    md.append("## C / C++ timings (ns per call)\n")
    md.append("| system | DOF | function | scleron median (min–max) | Pinocchio median (min–max) | "
              "**ratio** (min) | MuJoCo median (min–max) | **ratio** (min) | CppADCodeGen/Pinocchio (BENCHMARKS.md) |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for key, S in R["systems"].items():
        c = S.get("c", {})
        for f in FUNCS:
            ours = c.get("scleron", {}).get(f)
            pv, pst = best_variant(c.get("pinocchio", {}), PIN_VARIANTS[f])
            mv, mst = best_variant(c.get("mujoco", {}), MJ_VARIANTS[f])

            def ratio(a, b):
                if not a or not b:
                    return "—"
                return f"**{a['median'] / b['median']:.2f}** ({a['min'] / b['min']:.2f})"
            cg = CPPADCG_RATIO.get(key, {}).get(f)
            md.append(f"| {S['label']} | {S['nv']} | {TITLE[f]} | {fmt_st(ours)} | "
                      f"{fmt_st(pst)}{' `' + pv + '`' if pv and len(PIN_VARIANTS[f]) > 1 else ''} | "
                      f"{ratio(ours, pst)} | {fmt_st(mst)}{' `' + mv + '`' if mv and len(MJ_VARIANTS[f]) > 1 else ''} | "
                      f"{ratio(ours, mst)} | {f'{cg:.2f}' if cg is not None else '—'} |")
    md.append("\nThe last column is the ratio Pinocchio's own CppADCodeGen code reached against plain Pinocchio "
              "on this machine (BENCHMARKS.md, medians): scleron beats that generated code where its ratio "
              "against Pinocchio is below that number.\n")

    # variants
    md.append("### All peer variants (median ns, min in parentheses)\n")
    md.append("| system | " + " | ".join(v for f in FUNCS for v in PIN_VARIANTS[f]) + " | "
              + " | ".join("mj " + v for f in FUNCS for v in MJ_VARIANTS[f]) + " |")
    md.append("|---|" + "---|" * (sum(len(PIN_VARIANTS[f]) + len(MJ_VARIANTS[f]) for f in FUNCS)))
    for key, S in R["systems"].items():
        c = S.get("c", {})
        cells = []
        for f in FUNCS:
            for v in PIN_VARIANTS[f]:
                st = c.get("pinocchio", {}).get(v)
                cells.append(f"{fmt_ns(st['median'])} ({fmt_ns(st['min'])})" if st else "—")
        for f in FUNCS:
            for v in MJ_VARIANTS[f]:
                st = c.get("mujoco", {}).get(v)
                cells.append(f"{fmt_ns(st['median'])} ({fmt_ns(st['min'])})" if st else "—")
        md.append(f"| {S['label']} | " + " | ".join(cells) + " |")
    md.append("")

    # callgrind
    md.append("## callgrind: instructions per call\n")
    md.append("`valgrind --tool=callgrind` on the harness running exactly K = 100 calls, minus a K = 0 run, "
              "divided by K (binaries rebuilt with `-mno-avx512f` added, as valgrind 3.19 cannot decode "
              "AVX-512). Repeatable, unlike the times; instructions are not cycles (sin/cos, divisions and "
              "cache misses cost more per instruction). The last column, min time / Ir, shows how fast each "
              "instruction stream runs (lower = more work per instruction or more instructions per cycle; "
              "Eigen's SIMD code does several flops per instruction).\n")
    md.append("| system | function | scleron Ir | Pinocchio Ir | ratio | MuJoCo Ir | ratio | ns per 1000 Ir: scleron / Pinocchio |")
    md.append("|---|---|---|---|---|---|---|---|")
    for key, S in R["systems"].items():
        cg = S.get("callgrind", {})
        for f in FUNCS:
            o = cg.get("scleron", {}).get(f)
            pv = min(((cg.get("pinocchio", {}).get(v), v) for v in PIN_VARIANTS[f]
                      if cg.get("pinocchio", {}).get(v)), default=(None, None))
            mv = min(((cg.get("mujoco", {}).get(v), v) for v in MJ_VARIANTS[f]
                      if cg.get("mujoco", {}).get(v)), default=(None, None))
            c = S.get("c", {})
            to = (c.get("scleron", {}).get(f) or {}).get("min")
            tp = (c.get("pinocchio", {}).get(pv[1]) or {}).get("min") if pv[1] else None
            speed = (f"{to / o * 1000:.0f} / {tp / pv[0] * 1000:.0f}" if o and to and pv[0] and tp else
                     f"{to / o * 1000:.0f} / —" if o and to else "—")
            md.append(f"| {S['label']} | {TITLE[f]} | {f'{o:,.0f}' if o else '—'} | "
                      f"{f'{pv[0]:,.0f} `{pv[1]}`' if pv[0] else '—'} | {f'{o / pv[0]:.2f}' if o and pv[0] else '—'} | "
                      f"{f'{mv[0]:,.0f} `{mv[1]}`' if mv[0] else '—'} | {f'{o / mv[0]:.2f}' if o and mv[0] else '—'} | {speed} |")
    md.append("")
    prof = R.get("profiles", {})
    if prof:
        md.append("### Where scleron's instructions go (`callgrind_annotate --inclusive=no`, K = 100 run minus K = 0 run, per call)\n")
        for title, p in prof.items():
            md.append(f"**{title}** — {p['per_call_ir']:,.0f} Ir per call: generated straight-line code "
                      f"{p['own_share'] * 100:.1f} %, sine/cosine {p['trig_share'] * 100:.1f} %, "
                      f"other {p['other_share'] * 100:.1f} %.\n")
            md.append("| Ir per call | function |")
            md.append("|---|---|")
            for ir, fn in p["top"][:8]:
                md.append(f"| {ir:,.1f} | `{fn}` |")
            md.append("")

    # python
    md.append("## From Python (ns per state)\n")
    md.append("scleron: `dyn.f(q, ...)` one state per call (100 states, each a contiguous float64 array made "
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
    md.append("| system | function | scleron single | single `out=` | `bind()` | batch | batch `out=` | C batch | "
              "batch `out=` / C batch | `threads=2` | speed-up | single `out=` − C harness, median (min) | Pinocchio single | "
              "Pinocchio loop | MuJoCo single | ratio single (scleron/pin) |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key, S in R["systems"].items():
        p = S.get("python", {})
        for f in FUNCS:
            o = p.get("scleron", {}).get(f, {})
            pp = p.get("pinocchio", {}).get(f, {})
            mm = p.get("mujoco", {}).get(f, {})

            def med(x):
                return fmt_ns(x["median"]) if x else "—"
            r = (f"{o['single']['median'] / pp['single']['median']:.2f}"
                 if o.get("single") and pp.get("single") else "—")
            def ratio(a, b):
                return f"{o[a]['median'] / o[b]['median']:.2f}" if o.get(a) and o.get(b) else "—"
            charness = S.get("c", {}).get("scleron", {}).get(f)
            extra = (f"{o['single_out']['median'] - charness['median']:+.0f} "
                     f"({o['single_out']['min'] - charness['min']:+.0f}) ns"
                     if o.get("single_out") and charness else "—")
            md.append(f"| {S['label']} | {TITLE[f]} | {med(o.get('single'))} | {med(o.get('single_out'))} | "
                      f"{med(o.get('bound'))} | {med(o.get('batch'))} | {med(o.get('batch_out'))} | "
                      f"{med(o.get('c_batch'))} | {ratio('batch_out', 'c_batch')} | {med(o.get('batch_threads2'))} | "
                      f"{ratio('batch_out', 'batch_threads2')} | {extra} | {med(pp.get('single'))} | "
                      f"{med(pp.get('batch'))} | {med(mm.get('single'))} | {r} |")
    md.append("")

    # op counts
    md.append("## Operation counts against Featherstone's Table 10.1\n")
    md.append("From the generated folder's scleron.json (m = multiplications/divisions, a = additions/"
              "subtractions, fn = sin/cos/sqrt… calls; Table 10.1 excludes sin/cos). Table 10.1's best "
              "rows for GU(n): RNEA (93n−108)m+(81n−100)a, CRBA (10n²+22n−32)m+(6n²+37n−43)a, "
              "ABA (224n−259)m+(205n−248)a. Ratio = (m+a) ours / (m+a) table.\n")
    md.append("| system | function | statements | scleron ops | Table 10.1 | ratio (m+a) |")
    md.append("|---|---|---|---|---|---|")
    for key, S in R["systems"].items():
        for f in FUNCS:
            o = S.get("ops", {}).get(f)
            if not o:
                continue
            t = o.get("table")
            tab = f"{t['m']}m + {t['a']}a ({t['source']})" if t else "—"
            rr = f"{o['ratio']:.2f}" if o.get("ratio") else "—"
            md.append(f"| {S['label']} | {TITLE[f]} | {o['statements']:,} | {o['ops']} | {tab} | {rr} |")
    md.append("")

    # generation
    md.append("## Generation and compile time\n")
    md.append("scleron: `build_sources` (derive + unroll + render of all four functions) in a fresh "
              "subprocess, peak RSS of that process (`ru_maxrss`, after-import baseline in parentheses); "
              "compile = gcc of NAME_dynamics.c alone with the folder's cflags (the cffi module build "
              "compiles the same file once more, its time from `generate()` is listed when it ran this time). "
              "Compiles run on one core while another single-threaded job may run on the other.\n")
    md.append("| system | DOF | derive | unroll | render | generate total | peak RSS MB | C size | gcc compile | cffi build (generate) |")
    md.append("|---|---|---|---|---|---|---|---|---|---|")
    for key, S in R["systems"].items():
        g = S.get("generation") or {}
        t = g.get("times", {})
        comp = S.get("compile", {})
        cs = comp.get("seconds")
        cffi_txt = f"{S['cffi_compile_s']:.1f} s" if S.get("cffi_compile_s") else "— (cached)"
        md.append(f"| {S['label']} | {S['nv']} | {t.get('derive', 0):.2f} s | {t.get('unroll', 0):.2f} s | "
                  f"{t.get('render', 0):.2f} s | {g.get('total_s', 0):.2f} s | "
                  f"{g.get('rss_peak_mb', 0):.0f} ({g.get('rss_base_mb', 0):.0f}) | "
                  f"{g.get('c_bytes', 0) / 1e6:.1f} MB | "
                  f"{f'{cs:.1f} s' if cs else '—'}{' (cached)' if comp.get('cached') else ''} | "
                  f"{cffi_txt} |")
    md.append("")
    sc = R.get("scaling", {})
    md.append("### Symbolic derivation against sympy.physics.mechanics (KanesMethod)\n")
    md.append("The RC-n chain built with `sympy.physics.mechanics` (frames rotated by Rx(90°) and q_i about z, "
              "points 1 m along x, masses at 0.5 m, the RC inertia, gravity), timed: setup + "
              "`KanesMethod(...).kanes_equations(bodies, loads)` + `mass_matrix`/`forcing`, each n in a fresh "
              f"process capped at {R['settings']['pydy_cap_s']:.0f} s. scleron: `build_sources` for the same chain "
              "(all four functions, simplified C).\n")
    md.append("| n | PyDy setup | kanes_equations | mass matrix | PyDy total | PyDy peak RSS MB (after imports) | scleron generate | ratio PyDy/scleron | PyDy M vs Pinocchio crba |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    gens = {g["n"]: g for g in sc.get("scleron", []) if "n" in g}
    for p in sc.get("pydy", []):
        n = p["n"]
        g = gens.get(n)
        gtxt = f"{g['total_s']:.3f} s" if g and g.get("total_s") else "—"
        if p.get("timeout"):
            md.append(f"| {n} | | | | > {R['settings']['pydy_cap_s']:.0f} s (stopped) | | {gtxt} | | |")
            continue
        if p.get("error"):
            md.append(f"| {n} | error: {p['error'][-120:]!r} | | | | | | | |")
            continue
        ratio_txt = f"{p['total_s'] / g['total_s']:.1f}×" if g and g.get("total_s") else "—"
        chk = p.get("M_check_vs_pinocchio")
        chk_txt = f"{chk:.1e}" if isinstance(chk, float) else (chk or "—")
        md.append(f"| {n} | {p['setup_s']:.2f} s | {p['kanes_equations_s']:.2f} s | {p['mass_matrix_s']:.3f} s | "
                  f"{p['total_s']:.2f} s | {p['rss_peak_mb']:.0f} ({p.get('rss_base_mb', 0):.0f}) | {gtxt} | {ratio_txt} | {chk_txt} |")
    md.append("")
    md.append("scleron generation for RC-n (n in the table above and the RC systems run):\n")
    md.append("| n | generate | peak RSS MB | statements FD / ID / M / h |")
    md.append("|---|---|---|---|")
    for g in sorted(sc.get("scleron", []), key=lambda g: g.get("n", 0)):
        if "total_s" not in g:
            continue
        st = g.get("statements", {})
        md.append(f"| {g['n']} | {g['total_s']:.3f} s | {g['rss_peak_mb']:.0f} | "
                  + " / ".join(f"{st.get(f, 0):,}" for f in ["forward_dynamics", "inverse_dynamics",
                                                             "mass_matrix", "bias_forces"]) + " |")
    md.append("")

    # default generate + compile totals (targets of the loop mass matrix / Method II work)
    tot = {k: default_gen_compile(S) for k, S in R["systems"].items() if k in ("rc50", "rc100")}
    tot = {k: v for k, v in tot.items() if v}
    if tot:
        md.append("### Default configuration: generate + gcc compile\n")
        parts = [f"{R['systems'][k]['label']} {g:.2f} s + {c:.1f} s = **{g + c:.1f} s** ({src})"
                 for k, (g, c, src) in tot.items()]
        line = "- " + "; ".join(parts)
        if "rc100" in tot:
            t100 = sum(tot["rc100"][:2])
            line += f". Target RC100 ≤ 20 s: {'met' if t100 <= 20 else 'not met'}"
            if "rc50" in tot:
                r = t100 / sum(tot["rc50"][:2])
                line += f"; RC100/RC50 = **{r:.2f}**, target ≤ 2.3: {'met' if r <= 2.3 else 'not met'}"
        md.append(line + ".\n")

    # code generation variants
    md.append("## Code generation variants\n")
    vs = [(k, S) for k, S in R["systems"].items() if S.get("variants")]
    if not vs:
        md.append(f"Not run ({R['settings'].get('variants_skipped') or 'no system of ' + ', '.join(VARIANT_SYSTEMS)}).\n")
    else:
        md.append("Each variant is `scleron.pipeline.build_sources(model, name, method=..., mass_matrix=...)` "
                  "in a fresh subprocess (generate = its time, all four functions), written to "
                  "`build/SYSTEM/variants/VARIANT/generated/`; gcc compile = `NAME_dynamics.c` alone with the "
                  "folder's cflags in one process (measured in this run); C size = `NAME_dynamics.c`; "
                  "statements and ops (executed per call, loops counted per iteration) of the compared function "
                  "from `scleron.json`; ns per call from the scleron C harness, the variants of a system "
                  "interleaved round by round, pinned with `taskset`, same settings as the main table. "
                  f"The default is `method=1, mass_matrix=\"auto\"` (loop from nv ≥ "
                  f"{R['settings'].get('mass_loop_from_nv', '?')}). Ratios = variant / default "
                  "(time: median / median, min / min in parentheses). Each variant's C harness output at state 0 is "
                  "checked against the default's (Verification; a variant off by more than 1e-9 is not timed).\n")
        for comp, (fname, title, _) in VARIANT_COMPARISONS.items():
            md.append(f"### {title[0].upper() + title[1:]}\n")
            md.append(f"| system | DOF | variant | statements | ops per call | C size | generate | gcc compile | "
                      f"ns per call median (min–max) | ratio: statements | C size | generate | compile | "
                      f"**time** (min) |")
            md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            for k, S in vs:
                V = S["variants"]
                dflt = V["configs"].get("default")
                dm = variant_metrics(dflt, comp) if dflt else {}
                for label, vname, cfg, is_default in variant_rows(V, comp):
                    m = variant_metrics(cfg, comp)
                    st = (cfg.get("c") or {}).get(comp)

                    def rr(x, fmt="{:.2f}", m=m):
                        a, b = m.get(x), dm.get(x)
                        return fmt.format(a / b) if a and b else "—"
                    if is_default:
                        ratios = "default | | | | "
                    else:
                        tm = (f"**{m['time'] / dm['time']:.2f}** ({m['time_min'] / dm['time_min']:.2f})"
                              if m.get("time") and dm.get("time") else "—")
                        ratios = f"{rr('statements')} | {rr('C size')} | {rr('generate')} | {rr('compile')} | {tm}"
                    comp_s = f"{m['compile']:.1f} s" if m.get("compile") else "—"
                    stmts = f"{m['statements']:,}" if m.get("statements") is not None else "—"
                    md.append(f"| {S['label']} | {S['nv']} | {label}{' (default)' if is_default else ''} | "
                              f"{stmts} | {cfg['ops'].get(fname) or '—'} | "
                              f"{(m['C size'] or 0) / 1e6:.2f} MB | {m['generate']:.2f} s | {comp_s} | "
                              f"{fmt_st(st)} | {ratios} |")
            md.append("")
            sent = variant_sentence(R, comp)
            if sent:
                md.append(sent + "\n")
        for k, S in vs:
            for e in S["variants"].get("errors", []):
                md.append(f"- {S['label']}: {e}")
        md.append("")

    # verification
    md.append("## Verification (max |difference| / max(1, max |reference|))\n")
    md.append("| system | check | fd | id | M | h |")
    md.append("|---|---|---|---|---|---|")
    for key, S in R["systems"].items():
        for check, errs in S.get("verification", {}).items():
            if isinstance(errs, dict):
                md.append(f"| {S['label']} | {check} | " + " | ".join(
                    f"{errs[f]:.1e}" if isinstance(errs.get(f), float) else "—" for f in FUNCS) + " |")
            else:
                md.append(f"| {S['label']} | {check} | {errs} | | | |")
    md.append("")

    # notes
    md.append("## Not measured, and notes\n")
    for n in R["notes"]:
        md.append(f"- {n}")
    for key, S in R["systems"].items():
        for n in S.get("notes", []):
            md.append(f"- {S['label']}: {n}")
    md.append("")
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write("\n".join(md))


def nice_log_axes(ax, xticks):
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    if xticks:
        ax.set_xticks(xticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


def make_plot(R, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:
        R["notes"].append(f"no plot: matplotlib not importable ({exc}); pip install matplotlib")
        return
    fig, axes = plt.subplots(2, 3, figsize=(15, 9))
    colors = {"scleron": "C0", "pinocchio": "C1", "mujoco": "C2"}
    for ax, f in zip(axes.flat, FUNCS):
        for tool, variants in [("scleron", [f]), ("pinocchio", PIN_VARIANTS[f]), ("mujoco", MJ_VARIANTS[f])]:
            rc, other = [], []
            for key, S in R["systems"].items():
                c = S.get("c", {}).get(tool, {})
                _, st = best_variant(c, variants)
                if st:
                    (rc if key.startswith("rc") else other).append((S["nv"], st["median"], S["label"]))
            rc.sort()
            if rc:
                ax.plot([x[0] for x in rc], [x[1] / 1000 for x in rc], "o-", color=colors[tool], label=tool)
            for x in other:
                ax.plot(x[0], x[1] / 1000, "s", color=colors[tool], mfc="none",
                        label=None if rc else tool)
                if tool == "scleron":
                    ax.annotate(x[2].split()[0], (x[0], x[1] / 1000), fontsize=7, xytext=(3, 3),
                                textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        nice_log_axes(ax, sorted({S["nv"] for S in R["systems"].values()}))
        ax.set_xlabel("DOF")
        ax.set_ylabel("µs per call (median)")
        ax.set_title(f"{TITLE[f]} (C/C++; ● RC-n, □ robots)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes.flat[4]
    sc = R.get("scaling", {})
    g = sorted((x["n"], x["total_s"]) for x in sc.get("scleron", []) if "total_s" in x)
    if g:
        ax.plot([x[0] for x in g], [x[1] for x in g], "o-", color="C0", label="scleron generate (4 functions)")
    comp = sorted((S["nv"], S["compile"]["seconds"]) for k, S in R["systems"].items()
                  if k.startswith("rc") and S.get("compile", {}).get("seconds"))
    if comp:
        ax.plot([x[0] for x in comp], [x[1] for x in comp], "o--", color="C4", label="scleron gcc compile")
    p = sorted((x["n"], x["total_s"]) for x in sc.get("pydy", []) if "total_s" in x)
    if p:
        ax.plot([x[0] for x in p], [x[1] for x in p], "^-", color="C3", label="sympy.mechanics KanesMethod")
    to = [x["n"] for x in sc.get("pydy", []) if x.get("timeout")]
    if to:
        ax.axhline(R["settings"]["pydy_cap_s"], color="C3", ls=":", label=f"PyDy cap (n = {to[0]} stopped)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    nice_log_axes(ax, sorted({x[0] for x in g + comp + p}))
    ax.set_xlabel("DOF (RC-n chain)")
    ax.set_ylabel("seconds")
    ax.set_title("generation time vs DOF")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax = axes.flat[5]
    for f, mk in [("fd", "o-"), ("id", "s-"), ("M", "^-")]:
        pts = sorted((S["nv"], S["ops"][f]["ratio"]) for k, S in R["systems"].items()
                     if k.startswith("rc") and S.get("ops", {}).get(f, {}).get("ratio"))
        if pts:
            ax.plot([x[0] for x in pts], [x[1] for x in pts], mk, label=f"{TITLE[f]} / {TABLE_10_1[f][0].split(',')[0]}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("DOF (RC-n chain)")
    ax.set_ylabel("(m+a) scleron / Table 10.1")
    ax.set_title("operation counts vs Featherstone Table 10.1")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("scleron vs Pinocchio vs MuJoCo — " + R["machine"]["lscpu"].get("Model name", ""))
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "time_vs_dof.png"), dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
# main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="rc20 and panda, fewer repeats, PyDy n <= 5 (< 3 min once built)")
    ap.add_argument("--systems", default=None, help="comma-separated: " + ",".join(ALL_SYSTEMS))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--build", default=os.path.join(HERE, "build"))
    ap.add_argument("--pydy-cap", type=float, default=120.0, help="seconds per PyDy derivation")
    ap.add_argument("--pydy-max-n", type=int, default=None)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-pydy", action="store_true")
    ap.add_argument("--no-variants", action="store_true",
                    help="skip the code generation variants section (Method I/II, mass matrix unrolled/loop; "
                         "run for " + ",".join(VARIANT_SYSTEMS) + " among --systems, rc20 only with --quick)")
    args = ap.parse_args(argv)
    argv_used = ["python", "benchmarks/run.py"] + (argv if argv is not None else sys.argv[1:])
    quick = args.quick
    systems = args.systems.split(",") if args.systems else (QUICK_SYSTEMS if quick else ALL_SYSTEMS)
    rounds = 3 if quick else 5
    per_round = 7 if quick else 15
    target_ms = 3.0 if quick else 5.0
    py_R = 5 if quick else 11
    pydy_max = args.pydy_max_n or (5 if quick else 10)
    variant_keys = [] if args.no_variants else \
        [k for k in (QUICK_VARIANT_SYSTEMS if quick else VARIANT_SYSTEMS) if k in systems]
    try:
        from scleron.pipeline import MASS_LOOP_FROM_NV
    except ImportError:
        MASS_LOOP_FROM_NV = None
    out_dir, build_dir = os.path.abspath(args.out), os.path.abspath(args.build)
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(build_dir, exist_ok=True)
    R = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine_info(),
         "settings": {"quick": quick, "systems": systems, "nstates": NSTATES, "nbatch": NBATCH,
                      "rounds": rounds, "repeats_per_round": per_round, "target_ms": target_ms,
                      "python_repeats": py_R, "pydy_cap_s": args.pydy_cap, "pydy_max_n": pydy_max,
                      "variants": variant_keys, "mass_loop_from_nv": MASS_LOOP_FROM_NV,
                      "variants_skipped": "--no-variants" if args.no_variants else None},
         "systems": {}, "notes": [], "scaling": {"scleron": [], "pydy": []}, "profiles": {}}
    notes = R["notes"]
    builder = Builder(build_dir)
    builds, futures = {}, {}
    have_valgrind = shutil.which("valgrind") is not None and not args.no_callgrind
    if not have_valgrind and not args.no_callgrind:
        notes.append("valgrind not found: no instruction counts")

    # 1. peer harnesses, in the background (the Pinocchio one takes ~3 min of g++ the first time);
    #    the callgrind variants are queued after the scleron builds (--quick: only if cached)
    peer_cg = []
    for tool, fn in [("pinocchio", pin_build_steps), ("mujoco", mujoco_build_steps)]:
        for cg in ([False, True] if have_valgrind else [False]):
            spec, why = fn(cg=cg)
            if spec is None:
                if not cg:
                    notes.append(f"{tool} C harness not built: {why}")
                continue
            key, steps = spec
            out = "pin_bench" if tool == "pinocchio" else "mujoco_bench"
            what = f"{tool}{'_cg' if cg else ''}"
            if cg:
                if quick and tool == "pinocchio" and not builder.is_cached(what, key, [out]):
                    notes.append("--quick: the callgrind build of the Pinocchio harness (~3 min of g++) "
                                 "was not cached, so Pinocchio has no instruction counts in this run")
                    continue
                peer_cg.append(((tool, cg), what, key, steps, [out]))
                continue
            futures[(tool, cg)] = builder.submit(what, key, steps, [out])
            log(f"queued {tool} harness build")

    # 2. systems: models, states, peers, verification, scleron generate
    import scleron
    from scleron.pipeline import Report
    sysobjs, dyns = {}, {}
    for key in systems:
        try:
            S = System(key, build_dir)
        except Exception as exc:
            notes.append(f"system {key} skipped: {type(exc).__name__}: {exc}")
            log(f"{key}: skipped ({exc})")
            continue
        sysobjs[key] = S
        entry = R["systems"][key] = {"label": S.label, "nv": S.nv, "source": os.path.relpath(S.source, ROOT)
                                     if S.source.startswith(ROOT) else S.source,
                                     "floating": S.floating, "notes": S.notes, "verification": S.verification}
        try:
            S.setup_pin()
            entry["pin_nq"] = S.pin_model.nq
        except Exception as exc:
            S.pin_model = None
            S.notes.append(f"Pinocchio model not built: {type(exc).__name__}: {exc}")
        if S.pin_model is not None:
            try:
                S.setup_mujoco()
                ok, errs = S.verify_mujoco()
                if not ok:
                    S.notes.append(f"MuJoCo disagrees with Pinocchio (M {errs['M']:.1e}, h {errs['h']:.1e} > 1e-9): "
                                   "MuJoCo not timed")
                    S.mj_model = None
                log(f"{key}: MuJoCo vs Pinocchio M {errs['M']:.1e} h {errs['h']:.1e} fd {errs['fd']:.1e} id {errs['id']:.1e}")
            except Exception as exc:
                S.mj_model = None
                S.notes.append(f"MuJoCo not run: {type(exc).__name__}: {exc}")
                log(f"{key}: MuJoCo skipped ({exc})")
        rep = Report(key, S.nv)
        t0 = time.perf_counter()
        folder = os.path.join(S.dir, "generated", key)
        try:
            dyn = scleron.generate(S.model, out_dir=folder, name=key, report=rep)
        except Exception as exc:
            S.notes.append(f"scleron generate failed: {type(exc).__name__}: {exc}")
            log(f"{key}: generate failed: {exc}")
            continue
        dyns[key] = dyn
        entry["generate_wall_s"] = time.perf_counter() - t0
        entry["cache_hit"] = rep.cache_hit
        if not rep.cache_hit and "compile" in rep.times:
            entry["cffi_compile_s"] = rep.times["compile"]
        log(f"{key}: scleron generate {'(cached)' if rep.cache_hit else ''} {entry['generate_wall_s']:.1f} s")
        S.folder = folder
        try:
            S.ours0 = S.verify_scleron_vs_pin(dyn) if S.pin_model is not None else None
        except Exception as exc:
            S.notes.append(f"scleron vs Pinocchio check failed to run: {exc}")
            S.ours0 = None
        meta = json.loads(read(os.path.join(folder, "scleron.json")))
        ops = {}
        for fname, f in [("forward_dynamics", "fd"), ("inverse_dynamics", "id"), ("mass_matrix", "M"),
                         ("bias_forces", "h")]:
            fm = meta["functions"].get(fname, {})
            o = {"statements": fm.get("statements"), "ops": fm.get("ops")}
            p = parse_ops(fm.get("ops"))
            if S.kind == "rc" and f in TABLE_10_1 and p:
                src, formula = TABLE_10_1[f]
                tm, ta = formula(S.nv)
                o["table"] = {"m": tm, "a": ta, "source": src}
                o["ratio"] = (p[0] + p[1]) / (tm + ta)
                o["ratio_m"], o["ratio_a"] = p[0] / tm, p[1] / ta
            ops[f] = o
        entry["ops"] = ops
        for cg in ([False, True] if have_valgrind else [False]):
            k, steps = scleron_build_steps(folder, key, cg=cg)
            futures[(("scleron", key), cg)] = builder.submit(f"{key}/scleron{'_cg' if cg else ''}", k, steps,
                                                             ["scleron_bench"])

    for k, what, key, steps, outs in peer_cg:
        futures[k] = builder.submit(what, key, steps, outs)
        log(f"queued {k[0]} harness build (callgrind variant)")

    # 3. generation timings (subprocesses) and PyDy, while the builds run on the other core
    gen_ns = sorted(set(range(2, pydy_max + 1)) | {S.n for S in sysobjs.values() if S.kind == "rc"})
    for n in gen_ns:
        path = rc_model_path(n, build_dir)
        r = run_worker(["--_gen-worker", path, "0", f"rc{n}"], timeout=1800)
        r["n"] = n
        R["scaling"]["scleron"].append(r)
        if f"rc{n}" in R["systems"]:
            R["systems"][f"rc{n}"]["generation"] = r
        log(f"scleron generation rc{n}: {r.get('total_s', float('nan')):.3f} s, peak {r.get('rss_peak_mb', 0):.0f} MB"
            + (f" ERROR {r['error'][-300:]}" if r.get("error") else ""))
    for key, S in sysobjs.items():
        if S.kind != "rc":
            r = run_worker(["--_gen-worker", S.source, "1" if S.floating else "0", key], timeout=1800)
            R["systems"][key]["generation"] = r
            log(f"scleron generation {key}: {r.get('total_s', float('nan')):.3f} s")
    try:
        import sympy.physics.mechanics  # noqa: F401
        have_pydy = not args.no_pydy
    except Exception as exc:
        have_pydy = False
        notes.append(f"sympy.physics.mechanics not importable ({exc}): no PyDy comparison")
    if have_pydy:
        for n in range(2, pydy_max + 1):
            r = run_worker(["--_pydy-worker", str(n)], timeout=args.pydy_cap)
            r["n"] = n
            if r.get("M_check"):
                try:
                    import pinocchio as pin
                    pm = rc_pin(n)
                    Mp = pin.crba(pm, pm.createData(), np.array(r["M_check_q"]))
                    Mp = np.triu(Mp) + np.triu(Mp, 1).T
                    r["M_check_vs_pinocchio"] = rel_err(np.array(r["M_check"]), Mp)
                except Exception as exc:
                    r["M_check_vs_pinocchio"] = f"not compared: {exc}"
                r.pop("M_check")
            R["scaling"]["pydy"].append(r)
            log(f"PyDy n = {n}: " + ("TIMEOUT" if r.get("timeout") else
                                      f"{r.get('total_s', float('nan')):.2f} s" + (f" ERROR {r['error'][-300:]}" if r.get('error') else "")))
            if r.get("timeout") or r.get("error"):
                break
        if quick:
            notes.append(f"--quick: PyDy only up to n = {pydy_max}")

    # 4. wait for the builds
    for k, fut in futures.items():
        try:
            builds[k] = fut.result()
        except Exception as exc:
            builds[k] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        b = builds[k]
        label = k[0] if isinstance(k[0], str) else f"{k[0][0]} {k[0][1]}"
        if not b.get("ok"):
            msg = f"build of {label}{' (callgrind variant)' if k[1] else ''} failed: {b.get('error', '')[-600:]}"
            notes.append(msg)
            log(msg)
        else:
            log(f"built {label}{' (cg)' if k[1] else ''}: "
                + ("cached" if b.get("cached") else " ".join(f"{a} {s:.1f}s" for a, s in b["seconds"].items())))
    for tool in ("pinocchio", "mujoco"):
        b = builds.get((tool, False))
        if b and b.get("ok"):
            R[f"{tool}_harness_build"] = {"cached": b.get("cached"), "seconds": b.get("seconds"),
                                          "command": b.get("commands")}

    def tool_builds(key):
        return {("scleron", cg): builds.get((("scleron", key), cg)) for cg in (False, True)} | \
            {(t, cg): builds.get((t, cg)) for t in ("pinocchio", "mujoco") for cg in (False, True)}

    # 5. harness checks against the Python side
    for key, S in sysobjs.items():
        entry = R["systems"][key]
        tb = tool_builds(key)
        b = tb.get(("scleron", False))
        if b and b.get("ok"):
            entry["compile"] = {"seconds": b["seconds"].get("compile"), "cached": b.get("cached"),
                                "command": dynamics_compile_command(b)}
        try:
            cmd = harness_cmd("scleron", S, tb)
            if cmd and getattr(S, "ours0", None) is not None:
                out = parse_out(run_harness(cmd, ["check"]))
                S.verification["scleron C harness vs scleron python"] = {
                    f: rel_err(out[f].reshape(np.shape(S.ours0[f])), S.ours0[f]) for f in FUNCS}
            cmd = harness_cmd("pinocchio", S, tb)
            if cmd and S.pin_model is not None:
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
            cmd = harness_cmd("mujoco", S, tb)
            if cmd and S.mj_model is not None:
                out = parse_out(run_harness(cmd, ["check"]))
                ref = S.mj_eval(S.mq[0], S.mv[0], S.mu[0])
                S.verification["mujoco C harness vs mujoco python"] = {
                    "fd": max(rel_err(out["forward"], ref["fd"]), rel_err(out["fd_min"], ref["fd"])),
                    "id": max(rel_err(out["inverse"], ref["id"]), rel_err(out["id_min"], ref["id"])),
                    "M": rel_err(out["M"].reshape(S.nv, S.nv), ref["M"]), "h": rel_err(out["h"], ref["h"])}
        except Exception as exc:
            S.notes.append(f"harness check failed: {type(exc).__name__}: {exc}")
            log(f"{key}: harness check failed: {exc}")

    # 6. C timings, the three harnesses interleaved round by round
    for key, S in sysobjs.items():
        entry = R["systems"][key]
        tb = tool_builds(key)
        cmds = {"scleron": harness_cmd("scleron", S, tb),
                "pinocchio": harness_cmd("pinocchio", S, tb) if S.pin_model is not None and not getattr(S, "pin_cpp_bad", False) else None,
                "mujoco": harness_cmd("mujoco", S, tb) if S.mj_model is not None else None}
        samples = {t: {} for t in cmds}
        for rnd in range(rounds):
            for tool, cmd in cmds.items():
                if cmd is None:
                    continue
                try:
                    got = parse_samples(run_harness(cmd, ["time", str(per_round), str(target_ms)]))
                except Exception as exc:
                    S.notes.append(f"{tool} timing failed: {exc}")
                    cmds[tool] = None
                    continue
                for f, xs in got.items():
                    samples[tool].setdefault(f, []).extend(xs)
        entry["c"] = {t: {f: stats(xs) for f, xs in fs.items()} for t, fs in samples.items() if fs}
        entry["c_samples"] = samples
        c = entry["c"]
        summary = []
        for f in FUNCS:
            o = c.get("scleron", {}).get(f)
            _, p = best_variant(c.get("pinocchio", {}), PIN_VARIANTS[f])
            if o and p:
                summary.append(f"{f} {o['median']:.0f}/{p['median']:.0f}={o['median'] / p['median']:.2f}")
        log(f"{key}: C timings done: " + ", ".join(summary))

    # 7. Python timings
    for key, S in sysobjs.items():
        if key not in dyns:
            continue
        try:
            R["systems"][key]["python"] = python_timings(S, dyns[key], py_R)
            log(f"{key}: Python timings done")
        except Exception as exc:
            S.notes.append(f"Python timings failed: {type(exc).__name__}: {exc}")
            traceback.print_exc()

    # 8. callgrind
    if have_valgrind:
        tmpdir = tempfile.mkdtemp(prefix="cg-", dir=build_dir)
        rc_keys = [k for k in sysobjs if sysobjs[k].kind == "rc"]
        smallest_rc = min(rc_keys, key=lambda k: sysobjs[k].nv) if rc_keys else None
        largest_rc = max(rc_keys, key=lambda k: sysobjs[k].nv) if rc_keys else None
        for key, S in sysobjs.items():
            tb = tool_builds(key)
            cg = {}
            for tool, funcs in [("scleron", FUNCS),
                                ("pinocchio", [v for f in FUNCS for v in PIN_VARIANTS[f]]),
                                ("mujoco", [v for f in FUNCS for v in MJ_VARIANTS[f]])]:
                if tool == "pinocchio" and (S.pin_model is None or getattr(S, "pin_cpp_bad", False)):
                    continue
                if tool == "mujoco" and S.mj_model is None:
                    continue
                cmd = harness_cmd(tool, S, tb, cg=True)
                if cmd is None:
                    continue
                try:
                    base, base_fn = callgrind_ir(cmd, funcs[0], 0, tmpdir)
                    res = {}
                    for f in funcs:
                        tot, fn = callgrind_ir(cmd, f, NSTATES, tmpdir)
                        res[f] = (tot - base) / NSTATES
                        if tool == "scleron" and (key == smallest_rc or (key == largest_rc and f == "M")
                                                  or (not rc_keys and f == "fd")):
                            prof = profile_from(fn, base_fn, key)
                            if prof:
                                R["profiles"][f"{S.label} {TITLE[f]}"] = prof
                        os.remove(fn)
                    os.remove(base_fn)
                    cg[tool] = res
                except Exception as exc:
                    S.notes.append(f"callgrind of {tool} failed: {exc}")
            R["systems"][key]["callgrind"] = cg
            log(f"{key}: callgrind done: " + ", ".join(f"{t} {f} {v:,.0f}" for t, r in cg.items()
                                                         for f, v in r.items() if t == "scleron"))
        shutil.rmtree(tmpdir, ignore_errors=True)

    # 9. code generation variants: Method I / II, mass matrix unrolled / loop
    for key in variant_keys:
        S = sysobjs.get(key)
        if S is None:
            continue
        try:
            V = run_variants(S, builder, build_dir, rounds, per_round, target_ms)
        except Exception as exc:
            S.notes.append(f"code generation variants failed: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        R["systems"][key]["variants"] = V
        summ = []
        for comp in VARIANT_COMPARISONS:
            rows = variant_rows(V, comp)
            summ.append(" / ".join(f"{label} {fmt_ns(((cfg.get('c') or {}).get(comp) or {}).get('median'))}"
                                   for label, _, cfg, _ in rows))
        log(f"{key}: variants done: " + "; ".join(summ))
    if quick and not args.no_variants:
        notes.append("--quick: code generation variants for rc20 only")

    # 10. output
    R["wall_s"] = time.perf_counter() - T_START
    R["notes"] += [
        "pinocchio::urdf::buildModel is not used in the C++ harness: a test harness built with it at "
        "-O3 -march=native segfaulted while loading panda.urdf (most likely an Eigen ABI mismatch: with "
        "AVX-512 Eigen aligns to 64 bytes, while libpinocchio_parsers/libpinocchio_default in the wheel are "
        "generic x86-64 builds with 16-byte alignment, and the parser hands Model pieces across that boundary), "
        "and the parser added ~3 min of g++. Instead the model that pin.buildModelFromUrdf (or the RC builder) "
        "made in Python is written out joint by joint (type, parent, placement, inertia) and rebuilt in C++ "
        "with Model::addJoint/appendBodyToJoint; the harness check above shows it equals the Python model.",
        "The Pinocchio timings are its header templates compiled -O3 -march=native in this run; the pin wheel's "
        "precompiled library (what `import pinocchio` calls) is generic x86-64 and is only timed through Python.",
        "MuJoCo's free joint uses a world-frame linear velocity and Pinocchio's a body-frame one; scleron's free "
        "joint uses XYZ Euler angles and their rates. For the floating robot the three tools get states of the "
        "same distribution, not the same physical state, and only MuJoCo vs Pinocchio is cross-checked "
        "(identity base orientation, zero base velocity).",
        "MuJoCo's mass matrix is its sparse M (mj_makeM); Pinocchio's crba fills the upper triangle; scleron "
        "writes the full dense n×n matrix.",
    ]
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump(R, fh, indent=1, default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o))
    make_plot(R, out_dir)
    write_report(R, out_dir, argv_used)
    log(f"wrote {os.path.join(out_dir, 'results.md')} ({R['wall_s']:.0f} s)")


def profile_from(fn, base_fn, name):
    """Exclusive Ir per function of a callgrind run of K calls minus those of the K = 0 run, per
    call; split into the generated functions, sine/cosine (scleron's vectorised scl_sincos or
    libm) and the rest (the harness loop, loader leftovers)."""
    rows, base = annotate_top(fn, limit=0), dict((f, ir) for ir, f in annotate_top(base_fn, limit=0))
    if not rows:
        return None
    diff = sorted(((ir - base.get(f, 0), f) for ir, f in rows), reverse=True)
    diff = [(ir / NSTATES, f) for ir, f in diff if ir > 0]
    fname = lambda f: f.split(":")[-1].strip()

    def kind(f):
        n = fname(f)
        if n.startswith(name + "_"):
            return "own"
        if re.search(r"sincos|(^|_)(sin|cos)($|_|\.)", n):
            return "trig"
        return "other"
    tot = sum(ir for ir, f in diff)
    share = {k: sum(ir for ir, f in diff if kind(f) == k) / tot if tot else 0.0 for k in ("own", "trig", "other")}
    return {"top": [(round(ir, 1), f) for ir, f in diff[:12]], "per_call_ir": tot,
            "own_share": share["own"], "trig_share": share["trig"], "other_share": share["other"]}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_gen-worker":
        gen_worker(sys.argv[2], sys.argv[3] == "1", sys.argv[4], *(
            [int(sys.argv[5])] + sys.argv[6:8] if len(sys.argv) > 5 else []))
    elif len(sys.argv) > 1 and sys.argv[1] == "--_pydy-worker":
        pydy_worker(int(sys.argv[2]))
    else:
        main()
