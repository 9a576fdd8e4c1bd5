"""Inverse dynamics per call: scleron's generated code against OpenSim/Simbody's
InverseDynamicsSolver, on the OpenSim models gait2392 and arm26 (issue 13, docs/opensim.md).

    python -m benchmarks.opensim [--models DIR] [--states 200] [--repeat 20] [--build DIR]

Both sides are called from Python, one state per call, in the same run:
- scleron: dyn.inverse_dynamics(q, qd, qdd, out=tau), the generated C through cffi;
- Simbody: state.setQ, state.setU, then InverseDynamicsSolver.solve(state, udot), its forces
  (muscles) off so that both compute the same thing (gravity stays).
Each state is timed `repeat` times on each side (the median of those is the state's time); the
table gives the median over the states of each side's time and the min, median and max over the
states of the ratio Simbody / scleron. scleron's batched call (the loop in C, no Python per
state) is given as well. Before timing, the two results are compared at every state: a model
whose results differ by more than 1e-9 (relative) is not timed. Both models have only
CustomJoints (u = q-dot); gait2392's knees are functions of one coordinate each (splines).
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

# run as a script, this folder comes first on sys.path and `import opensim` would find this file
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

MODELS = ("arm26.osim", "gait2392_thelen2003muscle.osim")
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "osim"))


def simbody(path, names):
    """(model, state, solver, perm): OpenSim's model with its forces off; perm maps scleron's
    coordinate k to Simbody's q (= u) index."""
    import opensim as osim
    osim.Logger.removeFileSink()             # no opensim.log in the working directory
    osim.Logger.setLevelString("error")
    model = osim.Model(path)
    for k in range(model.getForceSet().getSize()):
        model.getForceSet().get(k).set_appliesForce(False)
    state = model.initSystem()
    n = state.getNQ()
    if n != state.getNU():
        raise SystemExit(f"{path}: quaternions in Simbody's state: not benchmarked here")
    perm = []
    coords = model.getCoordinateSet()
    for name in names:
        state.setQ(osim.Vector(n, 0.0))
        coords.get(name).setValue(state, 0.5, False)
        perm.append(int(np.flatnonzero(state.getQ().to_numpy())[0]))
    return model, state, osim.InverseDynamicsSolver(model), np.array(perm)


def timed(f, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def bench(path, build, nstates, repeat):
    import opensim as osim

    import scleron
    from scleron.model.osim import OsimWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OsimWarning)
        model = scleron.load_model(path)
    name = os.path.splitext(os.path.basename(path))[0].split("_")[0]
    t = time.perf_counter()
    dyn = scleron.generate(model, out_dir=os.path.join(build, name), name=name,
                           functions=["inverse_dynamics"])
    gen = time.perf_counter() - t
    names = [c for j in model.joints for c in j.params.get("coordinates", ())]
    osm, state, solver, perm = simbody(path, names)
    n = len(names)
    rng = np.random.default_rng(0)
    Q = model.q0 + rng.uniform(-0.8, 0.8, (nstates, n))
    Qd, Qdd = rng.uniform(-2, 2, (nstates, n)), rng.uniform(-3, 3, (nstates, n))
    tau = np.empty(n)
    ours, theirs, worst = [], [], 0.0
    for q, qd, qdd in zip(Q, Qd, Qdd):
        sq, su, sa = (np.empty(n) for _ in range(3))
        sq[perm], su[perm], sa[perm] = q, qd, qdd
        vq, vu, va = osim.Vector(list(sq)), osim.Vector(list(su)), osim.Vector(list(sa))

        def call_simbody():
            state.setQ(vq)
            state.setU(vu)
            return solver.solve(state, va)
        ref = call_simbody().to_numpy()[perm]
        dyn.inverse_dynamics(q, qd, qdd, out=tau)
        worst = max(worst, float(np.abs(tau - ref).max() / max(1.0, np.abs(ref).max())))
        ours.append(timed(lambda: dyn.inverse_dynamics(q, qd, qdd, out=tau), repeat))
        theirs.append(timed(call_simbody, repeat))
    if worst > 1e-9:
        print(f"{name}: results differ by {worst:.2g} (relative): not timed")
        return
    out = np.empty((nstates, n))
    batch = timed(lambda: dyn.inverse_dynamics(Q, Qd, Qdd, out=out), max(3, repeat // 4)) / nstates
    ratios = sorted(t / o for o, t in zip(ours, theirs))
    print(f"{name:10s} nv={n:3d}  max rel. diff {worst:.1e}  generate+compile {gen:6.1f} s")
    print(f"  scleron per call   {statistics.median(ours) * 1e6:8.2f} us   "
          f"(batched, per state {batch * 1e6:.3f} us)")
    print(f"  Simbody per call   {statistics.median(theirs) * 1e6:8.2f} us")
    print(f"  Simbody / scleron  median {statistics.median(ratios):.1f}x   min {ratios[0]:.1f}x   "
          f"max {ratios[-1]:.1f}x   over {nstates} states x {repeat} calls")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=DEFAULT_MODELS, help="folder with the .osim files")
    p.add_argument("--states", type=int, default=200)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--build", default=os.path.join("build", "opensim"))
    a = p.parse_args(argv)
    for m in MODELS:
        path = os.path.join(a.models, m)
        if not os.path.isfile(path):
            print(f"{path}: not here, skipped")
            continue
        bench(path, a.build, a.states, a.repeat)


if __name__ == "__main__":
    sys.exit(main())
