"""Timing loops: the C harnesses sampled round-robin (so the noise of a shared machine falls on
all of them alike), the Python calls of scleron, Pinocchio and MuJoCo, and the choice of a
tool's fastest variant. Times are ns per call; results are {min, median, max, n} (common.stats)."""
import shutil
import time

import numpy as np

from .common import FULL_NAME, FUNCS, NBATCH, NSTATES, stats
from .harnesses import parse_samples, run_harness


def best_variant(tool_res, variants):
    """(name, stats) of the variant with the least median among those measured, or (None, None)."""
    cands = [(tool_res[v]["median"], v) for v in variants if tool_res.get(v)]
    if not cands:
        return None, None
    _, v = min(cands)
    return v, tool_res[v]


# ----------------------------------------------------------------------------------------------
# C harnesses


def placed_copy(cmd, k):
    """cmd with its binary copied afresh to a file of its own for round k. Where a program's
    code lies in physical memory changes its time: one harness binary, copied byte for byte to
    eight files, ran panda's inverse-dynamics derivatives (45 kB of straight-line code, more
    than the 32 kB L1 instruction cache) at 632-642 ns from six of them and at 700 and 1,023
    from the others (AMD EPYC, 2026-11-29); one file for all rounds measured 955 (0.30 of
    Pinocchio's instead of 0.20). A copy per round spreads the rounds over placements, and the
    median over them is the typical one."""
    copy = f"{cmd[0]}.round{k}"
    shutil.copy2(cmd[0], copy)
    return [copy] + list(cmd[1:])


def harness_rounds(cmds, rounds, args_of, on_failure):
    """Samples of several harnesses taken round by round (a, b, c, a, b, c, ...): {name: {function:
    [ns per call]}}, each round from fresh copies of the binaries (placed_copy). cmds: {name:
    argv or None}; args_of(name): the harness arguments; a harness that fails is reported with
    on_failure(name, exception) and not run again."""
    cmds = dict(cmds)
    samples = {name: {} for name in cmds}
    for k in range(rounds):
        for name, cmd in cmds.items():
            if cmd is None:
                continue
            try:
                got = parse_samples(run_harness(placed_copy(cmd, k), args_of(name)))
            except Exception as exc:
                on_failure(name, exc)
                cmds[name] = None
                continue
            for f, xs in got.items():
                samples[name].setdefault(f, []).extend(xs)
    return samples


# ----------------------------------------------------------------------------------------------
# Python


def py_samples(fn, R, per):
    """R samples of fn() (after one warm-up call), each in ns divided by `per` calls."""
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
    ffi, lib = getattr(dyn, "ffi", None), getattr(dyn, "lib", None)
    names = [n for n in dir(lib) if n.endswith(f"_{FULL_NAME[f]}_batch")] if lib is not None else []
    if not names:
        return None
    fn = getattr(lib, names[0])
    ins = {"fd": (sysobj.qb, sysobj.vb, sysobj.ub), "id": (sysobj.qb, sysobj.vb, sysobj.ub),
           "M": (sysobj.qb,), "h": (sysobj.qb, sysobj.vb)}[f]
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in ins] + [np.empty((NBATCH,) + shape)]
    ptrs = [ffi.cast("double *", ffi.from_buffer(a)) for a in arrays]
    return lambda arrays=arrays: fn(NBATCH, *ptrs)      # the default keeps the arrays alive


def bound_call_stats(dyn, f, sysobj, shape, R):
    """The call bound once with dyn.bind(name, *inputs, out) and called with no arguments."""
    Q, V, U = sysobj.q, sysobj.v, sysobj.u
    ins = {"fd": (Q[0], V[0], U[0]), "id": (Q[0], V[0], U[0]), "M": (Q[0],), "h": (Q[0], V[0])}[f]
    bound = dyn.bind(FULL_NAME[f], *[np.array(x) for x in ins], np.empty(shape))

    def bound_loop(bound=bound):
        for _ in range(NSTATES):
            bound()
    return stats(py_samples(bound_loop, R, NSTATES))


def scleron_function_row(dyn, f, sysobj, call, shape, states, batch, R):
    """One function's Python timings: single, single out=, bind(), batch, and (round-robin) batch
    out=, threads=2 and the C batch."""
    row = {}

    def single(call=call, states=states):
        for a in states:
            call(*a)
    row["single"] = stats(py_samples(single, R, NSTATES))
    out = np.empty(shape)
    try:
        def single_out(call=call, out=out, states=states):
            for a in states:
                call(*a, out=out)
        row["single_out"] = stats(py_samples(single_out, R, NSTATES))
    except TypeError:
        row["single_out"] = None
    row["bound"] = None
    if hasattr(dyn, "bind"):     # the generated module's bind(name, *inputs, out) -> no-argument call
        try:
            row["bound"] = bound_call_stats(dyn, f, sysobj, shape, R)
        except Exception as exc:
            row["bound_error"] = f"{type(exc).__name__}: {exc}"
    row["batch"] = stats(py_samples(lambda: batch(), max(3, R // 2), NBATCH))
    bout = np.empty((NBATCH,) + shape)
    trio = {"batch_out": lambda: batch(out=bout), "batch_threads2": lambda: batch(out=bout, threads=2)}
    cb = c_batch_call(dyn, f, sysobj, shape)
    if cb is not None:
        trio["c_batch"] = cb
    try:
        row.update(interleaved_samples(trio, max(3, R // 2), NBATCH))
    except (TypeError, ValueError):
        row["batch_out"] = row["batch_threads2"] = row["c_batch"] = None
    return row


def scleron_python_timings(sysobj, dyn, R):
    """{function: row} of the generated module's Python calls (see scleron_function_row)."""
    nv = sysobj.nv
    # the states as separate contiguous arrays, made once: the timed loops then measure the
    # call, not numpy's row indexing (about 80 ns per Q[s])
    QL, VL, UL = ([np.ascontiguousarray(X[s]) for s in range(NSTATES)] for X in (sysobj.q, sysobj.v, sysobj.u))
    args = {"fd": list(zip(QL, VL, UL)), "id": list(zip(QL, VL, UL)), "M": [(q,) for q in QL],
            "h": list(zip(QL, VL))}
    calls = {"fd": (dyn.forward_dynamics, (nv,)), "id": (dyn.inverse_dynamics, (nv,)),
             "M": (dyn.mass_matrix, (nv, nv)), "h": (dyn.bias_forces, (nv,))}
    qb, vb, ub = sysobj.qb, sysobj.vb, sysobj.ub
    batch = {"fd": lambda **k: dyn.forward_dynamics(qb, vb, ub, **k),
             "id": lambda **k: dyn.inverse_dynamics(qb, vb, ub, **k),
             "M": lambda **k: dyn.mass_matrix(qb, **k),
             "h": lambda **k: dyn.bias_forces(qb, vb, **k)}
    return {f: scleron_function_row(dyn, f, sysobj, calls[f][0], calls[f][1], args[f], batch[f], R)
            for f in FUNCS}


def loop_stats(call, count, R):
    """Samples of a Python loop of call(s) over count states, per state."""
    def loop():
        for s in range(count):
            call(s)
    return stats(py_samples(loop, R, count))


def pin_python_timings(sysobj, R):
    """pin.aba / rnea / crba / nonLinearEffects one state per call, and a loop over the batch."""
    import pinocchio as pin
    pm, pd = sysobj.pin_model, sysobj.pin_data
    PL, VL, UL = ([np.ascontiguousarray(X[s]) for s in range(NSTATES)] for X in (sysobj.pq, sysobj.v, sysobj.u))
    PQB = sysobj.pqb
    single = {"fd": lambda s: pin.aba(pm, pd, PL[s], VL[s], UL[s]),
              "id": lambda s: pin.rnea(pm, pd, PL[s], VL[s], UL[s]),
              "M": lambda s: pin.crba(pm, pd, PL[s]),
              "h": lambda s: pin.nonLinearEffects(pm, pd, PL[s], VL[s])}
    batch = {"fd": lambda s: pin.aba(pm, pd, PQB[s], sysobj.vb[s], sysobj.ub[s]),
             "id": lambda s: pin.rnea(pm, pd, PQB[s], sysobj.vb[s], sysobj.ub[s]),
             "M": lambda s: pin.crba(pm, pd, PQB[s]),
             "h": lambda s: pin.nonLinearEffects(pm, pd, PQB[s], sysobj.vb[s])}
    return {f: {"single": loop_stats(single[f], NSTATES, R), "batch": loop_stats(batch[f], NBATCH, max(3, R // 2))}
            for f in FUNCS}


def mujoco_python_timings(sysobj, R):
    """MuJoCo's Python API: assign the state, then mj_forward / mj_inverse / the M and h calls."""
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
    return {f: {"single": loop_stats(c, NSTATES, R)} for f, c in [("fd", mfd), ("id", mid), ("M", mM), ("h", mh)]}


def python_timings(sysobj, dyn, R):
    """{"scleron": ..., "pinocchio": ..., "mujoco": ...} of one system (the peers where set up)."""
    res = {"scleron": scleron_python_timings(sysobj, dyn, R)}
    if sysobj.pin_model is not None:
        res["pinocchio"] = pin_python_timings(sysobj, R)
    if sysobj.mj_model is not None:
        res["mujoco"] = mujoco_python_timings(sysobj, R)
    return res
