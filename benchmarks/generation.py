"""Code generation measurements: scleron's build_sources and sympy.physics.mechanics' KanesMethod
on the RC-n chain, each in a fresh process (its time and peak memory are its own), and the
operation counts of the generated code against Featherstone's Table 10.1."""
import json
import os
import re
import resource
import subprocess
import sys
import time

from .common import ROOT, RUN_SCRIPT, read
from . import scleron_internals

# Featherstone, RBDA Table 10.1, best rows (GU(n) chain): (multiplications, additions)
TABLE_10_1 = {
    "id": ("RNEA, Balafoutis & Patel 1991", lambda n: (93 * n - 108, 81 * n - 100)),
    "M": ("CRBA, Featherstone 2005", lambda n: (10 * n * n + 22 * n - 32, 6 * n * n + 37 * n - 43)),
    "fd": ("ABA, McMillan et al. 1995", lambda n: (224 * n - 259, 205 * n - 248)),
}
GEN_WORKER, PYDY_WORKER = "--_gen-worker", "--_pydy-worker"


# ----------------------------------------------------------------------------------------------
# memory of this process


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


# ----------------------------------------------------------------------------------------------
# the workers (run.py --_gen-worker / --_pydy-worker), each printing one RESULT line


def gen_worker(path, floating, name, method=1, mass_matrix="auto", out_dir=None):
    """build_sources timed in this (fresh) process; with out_dir the files are written there
    afterwards (not timed). method / mass_matrix other than the defaults select a code
    generation variant (see the variants section)."""
    t0 = time.perf_counter()
    import scleron
    scleron_internals.import_internals()
    model = scleron.load_model(path, floating=True) if floating else scleron.load_model(path)
    t_import = time.perf_counter() - t0
    base = reset_peak_rss()
    report = scleron_internals.new_report(name, model.nv)
    kw = {}
    if method != 1:
        kw["method"] = method
    if mass_matrix != "auto":
        kw["mass_matrix"] = mass_matrix
    t1 = time.perf_counter()
    files, report = scleron_internals.build_sources(model, name, report, **kw)
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
        scleron_internals.write_sources(files, out_dir)
    print("RESULT " + json.dumps(out))


def rc_chain_mechanics(n):
    """The RC-n chain in sympy.physics.mechanics: (q, u, N, bodies, loads, kinematic equations)."""
    import sympy as sp
    from sympy.physics import mechanics as me
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
    return q, u, N, bodies, loads, kd


def mass_matrix_check(MM, q, n):
    """M at q_i = 0.1 i (not timed), for the check against Pinocchio's crba."""
    import sympy as sp
    subs = {q[i]: sp.Float(0.1 * (i + 1)) for i in range(n)}
    return {"M_check_q": [0.1 * (i + 1) for i in range(n)],
            "M_check": [[float(MM[i, j].subs(subs).evalf()) for j in range(n)] for i in range(n)]}


def pydy_worker(n):
    """KanesMethod on the RC-n chain timed in this (fresh) process: setup, kanes_equations, the
    mass matrix and forcing."""
    t0 = time.perf_counter()
    import sympy as sp  # noqa: F401
    from sympy.physics import mechanics as me
    t_import = time.perf_counter() - t0
    base = reset_peak_rss()
    t1 = time.perf_counter()
    q, u, N, bodies, loads, kd = rc_chain_mechanics(n)
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
    if n <= 5:
        out.update(mass_matrix_check(MM, q, n))
    print("RESULT " + json.dumps(out))


def run_worker(args, timeout):
    """Runs run.py with a worker flag in a fresh process: its RESULT dict with wall_s, or
    {timeout: True} / {error: the end of its output}."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, RUN_SCRIPT] + args, capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"timeout": True, "wall_s": time.perf_counter() - t0}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            r["wall_s"] = time.perf_counter() - t0
            return r
    return {"error": (proc.stderr or proc.stdout)[-1500:], "wall_s": time.perf_counter() - t0}


def gen_worker_args(path, floating, name, method=None, mass_matrix=None, out_dir=None):
    """run.py arguments of a generation worker (method, mass_matrix and out_dir go together)."""
    args = [GEN_WORKER, path, "1" if floating else "0", name]
    if method is not None:
        args += [str(method), mass_matrix, out_dir]
    return args


def run_worker_from_argv(argv):
    """Runs the worker that argv (run.py's arguments) names; False if argv names none."""
    if argv and argv[0] == GEN_WORKER:
        gen_worker(argv[1], argv[2] == "1", argv[3], *([int(argv[4])] + argv[5:7] if len(argv) > 4 else []))
        return True
    if argv and argv[0] == PYDY_WORKER:
        pydy_worker(int(argv[1]))
        return True
    return False


# ----------------------------------------------------------------------------------------------
# operation counts


def parse_ops(text):
    """(multiplications, additions, function calls) of scleron.json's "12m + 34a + 5 fn"."""
    m = re.search(r"(\d+)m\s*\+\s*(\d+)a(?:\s*\+\s*(\d+)\s*fn)?", text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def op_counts(meta, kind, nv):
    """{function: {statements, ops, and for RC chains table (Table 10.1's m, a), ratio (m+a) ours /
    table, ratio_m, ratio_a}} from a generated folder's scleron.json."""
    ops = {}
    for fname, f in [("forward_dynamics", "fd"), ("inverse_dynamics", "id"), ("mass_matrix", "M"),
                     ("bias_forces", "h")]:
        fm = meta["functions"].get(fname, {})
        o = {"statements": fm.get("statements"), "ops": fm.get("ops")}
        p = parse_ops(fm.get("ops"))
        src, formula = TABLE_10_1.get(f, (None, None))
        tm, ta = formula(nv) if formula is not None else (0, 0)
        # (Table 10.1's formulas hold for longer chains: at nv = 1 they count 0 or fewer
        # operations, so RC1 has no table row, and no ratio)
        if kind == "rc" and p and tm > 0 and ta > 0:
            o["table"] = {"m": tm, "a": ta, "source": src}
            o["ratio"] = (p[0] + p[1]) / (tm + ta)
            o["ratio_m"], o["ratio_a"] = p[0] / tm, p[1] / ta
        ops[f] = o
    return ops
