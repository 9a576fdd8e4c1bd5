"""The two recursions of the forward dynamics timed against each other in one C harness: S&G's
articulated-body passes 1-6 and the mass matrix's LTDL solve (recursions.forward_dynamics,
forward_dynamics_by_mass_matrix), with the estimate that picks one (unroll.fastest_recursion).

    python -m benchmarks.fd_forms --systems xarm7,so101,ur5,panda,branched,rc20 [--out DIR]

Each recursion's code is generated alone (the spec with that recursion and no alternatives),
compiled with scleron's default flags, checked against the other, and timed in turns: the
minimum and median over 41 samples of 20,000 calls on 64 random states, pinned to one CPU where
taskset exists; instructions per call by callgrind where valgrind exists (built without
AVX-512, which valgrind 3.19 cannot decode)."""
import argparse
import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import replace

import numpy as np

from .common import ROOT, cmeel_prefix
from .harnesses import CALLGRIND_ENV
from .systems import ROBOT_URDFS

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
void NAME_forward_dynamics(const double *q, const double *qd, const double *tau, double *qdd);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
enum { S = 64, N = 64, SAMPLES = 41, CALLS = 20000 };
int main(int argc, char **argv) {
    int nq = atoi(argv[1]), nv = atoi(argv[2]), K = argc > 3 ? atoi(argv[3]) : -1;
    static double q[S][N], qd[S][N], tau[S][N], qdd[N], t[SAMPLES];
    double sink = 0;
    for (int s = 0; s < S; s++)                 /* states read from stdin: q, qd, tau */
        for (int i = 0; i < nq + 2 * nv; i++) {
            double x; if (scanf("%lf", &x) != 1) return 2;
            if (i < nq) q[s][i] = x; else if (i < nq + nv) qd[s][i - nq] = x; else tau[s][i - nq - nv] = x;
        }
    if (K >= 0) {                               /* K calls, for callgrind */
        for (int k = 0; k < K; k++) { NAME_forward_dynamics(q[k % S], qd[k % S], tau[k % S], qdd); sink += qdd[0]; }
        printf("%g\n", sink); return 0;
    }
    for (int s = 0; s < S; s++) {               /* the results, to compare the two */
        NAME_forward_dynamics(q[s], qd[s], tau[s], qdd);
        for (int i = 0; i < nv; i++) printf("%.17g ", qdd[i]);
    }
    printf("\n");
    for (int r = 0; r < SAMPLES; r++) {
        double t0 = now();
        for (int k = 0; k < CALLS; k++) { NAME_forward_dynamics(q[k % S], qd[k % S], tau[k % S], qdd); sink += qdd[0]; }
        t[r] = (now() - t0) / CALLS;
    }
    qsort(t, SAMPLES, sizeof t[0], cmp);
    printf("%.2f %.2f %g\n", t[0], t[SAMPLES / 2], sink);
    return 0;
}
"""

# in a fresh process: the forward dynamics of one system with one recursion only
GENERATE = r"""
import sys, warnings
from dataclasses import replace
warnings.simplefilter("ignore")
import scleron
from scleron import functions
from scleron.dynamics import recursions
path, floating, recursion, out = sys.argv[1:5]
spec = functions.FUNCTIONS["forward_dynamics"]
functions.FUNCTIONS["forward_dynamics"] = replace(spec, recursion=getattr(recursions, recursion), alternatives=())
kw = {"floating": True} if floating == "1" else {}
scleron.generate(scleron.load_model(path, **kw), out, functions=["fd"], force=True, compile=False)
"""

RECURSIONS = {"passes": "forward_dynamics", "factors": "forward_dynamics_by_mass_matrix"}


def system_path(key):
    """(model file, floating) of a system name: an example-robot-data robot, solo12 floating,
    or an example of this repository (rc20, branched, quadruped, ...)."""
    robots = os.path.join(cmeel_prefix(), "share", "example-robot-data", "robots")
    if key in ROBOT_URDFS:
        return os.path.join(robots, ROBOT_URDFS[key]), False
    if key == "solo12":
        return os.path.join(robots, "solo_description/robots/solo12.urdf"), True
    return os.path.join(ROOT, "examples", key + ".yaml"), False


def estimate(path, floating):
    """{recursion: (operations, critical path, estimated cycles)} and the one chosen."""
    import scleron
    from scleron.dynamics.tree import Tree
    from scleron.functions import function_spec
    from scleron.unroll import fastest_recursion
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = Tree(scleron.load_model(path, **({"floating": True} if floating else {})))
    spec = function_spec("fd")
    out = {}
    for label, name in RECURSIONS.items():
        from scleron.dynamics import recursions
        prog = replace(spec, recursion=getattr(recursions, name), alternatives=()).program(tree)
        out[label] = (prog.op_counts().total, prog.critical_path(), prog.estimated_cycles())
    chosen = fastest_recursion(tree, spec)[0].recursion.__name__
    return out, next(k for k, v in RECURSIONS.items() if v == chosen), tree.nq, tree.nv


def build(key, path, floating, label, folder):
    """Generates and compiles one recursion's harness: (timing binary, callgrind binary)."""
    out = os.path.join(folder, key, label)
    subprocess.run([sys.executable, "-c", GENERATE, path, "1" if floating else "0", RECURSIONS[label], out],
                   check=True, cwd=ROOT)
    c = next(f for f in os.listdir(out) if f.endswith("_dynamics.c"))
    name = c[:-len("_dynamics.c")]
    with open(os.path.join(out, "harness.c"), "w") as f:
        f.write(HARNESS.replace("NAME", name))
    bins = []
    for tag, extra in (("time", []), ("callgrind", ["-mno-avx512f"])):
        exe = os.path.join(out, f"harness_{tag}")
        subprocess.run(["gcc", "-Os", "-march=native", "-fno-math-errno", *extra, os.path.join(out, c),
                        os.path.join(out, "harness.c"), "-lm", "-o", exe], check=True)
        bins.append(exe)
    return bins


def run(exe, states, *args):
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    return subprocess.run(pin + [exe, *map(str, args)], input=states, capture_output=True, text=True,
                          check=True, env={**os.environ, **CALLGRIND_ENV}).stdout


def instructions(exe, states, nq, nv):
    if not shutil.which("valgrind"):
        return None
    counts = []
    for K in (1000, 0):
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", exe,
                            str(nq), str(nv), str(K)], input=states, capture_output=True, text=True,
                           env={**os.environ, **CALLGRIND_ENV})
        line = next(ln for ln in r.stderr.splitlines() if "refs:" in ln)
        counts.append(int(line.split()[-1].replace(",", "")))
    return (counts[0] - counts[1]) / 1000


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", default="xarm7,so101,ur5,panda,branched,rc20")
    ap.add_argument("--out", default="/tmp/scleron-fd-forms")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(7)
    rows = []
    for key in args.systems.split(","):
        path, floating = system_path(key)
        est, chosen, nq, nv = estimate(path, floating)
        q = rng.uniform(-0.8, 0.8, (64, nq))
        if floating:                                        # a unit quaternion at q[3:7]
            q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
        x = np.hstack([q, rng.uniform(-1, 1, (64, nv)), rng.uniform(-2, 2, (64, nv))])
        states = "\n".join(" ".join(repr(float(v)) for v in row) for row in x) + "\n"
        bins = {label: build(key, path, floating, label, args.out) for label in RECURSIONS}
        out = {label: run(b[0], states, nq, nv).splitlines() for label, b in bins.items()}
        a, b = (np.array(out[k][0].split(), float) for k in RECURSIONS)
        err = np.abs(a - b).max() / max(1.0, np.abs(a).max())
        times = {k: [float(v) for v in out[k][1].split()[:2]] for k in RECURSIONS}
        ir = {k: instructions(bins[k][1], states, nq, nv) for k in RECURSIONS}
        rows.append((key, nv, est, times, ir, chosen, err))
        print(f"{key}: done", file=sys.stderr)
    print("| system | nv | operations passes → factors | critical path (cycles) | min time (ns) | "
          "median (ns) | instructions | taken | max rel. difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key, nv, est, times, ir, chosen, err in rows:
        p, f = est["passes"], est["factors"]
        irs = (f"{ir['passes']:,.0f} → {ir['factors']:,.0f}" if ir["passes"] is not None else "—")
        print(f"| {key} | {nv} | {p[0]:,} → {f[0]:,} | {p[1]:,} → {f[1]:,} | "
              f"{times['passes'][0]:.0f} → {times['factors'][0]:.0f} | "
              f"{times['passes'][1]:.0f} → {times['factors'][1]:.0f} | {irs} | {chosen} | {err:.1e} |")


if __name__ == "__main__":
    main()
