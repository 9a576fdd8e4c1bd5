"""GPU benchmark (issue 12): scleron's CUDA functions against MJX and scleron's multi-threaded CPU
batch, on RC20, RC50, RC100, panda and a floating quadruped, N = 1k ... 1M states, fp64.

    python -m benchmarks.gpu                          # everything the machine has (see --help)
    python -m benchmarks.gpu --systems rc20 --n 1000000 --functions fd
    python -m benchmarks.gpu --systems rc50,rc100 --split auto,0,1000,2000 --functions fd,id
    python -m benchmarks.gpu --registers             # ptxas's registers and spills only: no GPU

Per system, function, layout (aos, soa), split and N it reports the kernel time per state (CUDA
events, median of --repeat runs after a warm-up), the time with transfers (numpy in, host -> device,
kernel, device -> host, numpy out), the largest relative difference to the CPU functions, and
the kernels' registers and local (spill) bytes. MJX: jax.vmap(mjx.forward) with contacts,
constraints, limits, passive forces and actuation off, fp64 (jax_enable_x64), inputs on the device
(and with transfers). CPU: the generated batch function over all cores (threads=os.cpu_count()).
Missing pieces are skipped with a note: no GPU (then only --registers runs), no CuPy, no MJX
(pip install mujoco-mjx), no example-robot-data (panda, quadruped).

Targets (H100/H200, fp64, N = 1M; issue 12) are checked at the end: RC20 FD >= 1.5e9 states/s,
RC50 FD <= 4 ns/state, RC100 FD <= 10 ns/state, ID no slower than FD, mass matrix <= 2 ns/state at
RC20 (SoA), >= 100x MJX, max relative difference to the CPU <= 1e-12. Results go to
benchmarks/results/gpu-<device>.json and .md.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from benchmarks.common import at_least, comma_list, one_of
from benchmarks.systems import system_names
from scleron.backends.cuda import MAX_BLOCK

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FUNCS = {"fd": "forward_dynamics", "id": "inverse_dynamics", "M": "mass_matrix", "h": "bias_forces"}
SYSTEMS = ["rc20", "rc50", "rc100", "panda", "quadruped"]
SIZES = [1000, 10_000, 100_000, 1_000_000]
TARGETS = [   # (system, function, layout or None (best), what, limit)
    ("rc20", "fd", None, "ns_per_state", 1 / 1.5),
    ("rc50", "fd", None, "ns_per_state", 4.0),
    ("rc100", "fd", None, "ns_per_state", 10.0),
    ("rc20", "M", "soa", "ns_per_state", 2.0),
]
SPEEDUP_OVER_MJX = 100.0
MAX_REL_DIFF = 1e-12


def log(message):
    print(message, file=sys.stderr, flush=True)


def _split(word):
    """--split's item: auto, or a number of statements per kernel (0: one kernel per function)."""
    if word == "auto":
        return word
    try:
        return str(at_least(0, "--split")(word))
    except argparse.ArgumentTypeError:
        raise ValueError(f"--split takes auto or a number of statements per kernel (0 or more), "
                         f"got {word!r}") from None


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    # (every option is checked here, before minutes of nvcc builds, GPU or not)
    p.add_argument("--systems", default=",".join(SYSTEMS), type=system_names(),
                   help=f"comma-separated (default {','.join(SYSTEMS)}; rcN for any N)")
    p.add_argument("--functions", default="fd,id,M", type=comma_list(one_of(list(FUNCS), "function"),
                                                                     "function"),
                   help="of fd, id, M, h (default fd,id,M)")
    p.add_argument("--n", default=",".join(str(n) for n in SIZES),
                   type=comma_list(at_least(1, "--n", at_most=2**31 - 1), "size"),
                   help="states per call, comma-separated (default 1000,...,1000000)")
    p.add_argument("--layouts", default="aos,soa", type=comma_list(one_of(["aos", "soa"], "layout"),
                                                                  "layout"),
                   help="aos, soa or both (default)")
    p.add_argument("--split", default="auto", type=comma_list(_split, "split"),
                   help="CUDA kernel split(s) to build and compare: auto, 0 (one kernel per "
                        "function) or statements per kernel, comma-separated (default auto)")
    p.add_argument("--arch", default="auto", help="nvcc architecture (default auto: this GPU)")
    p.add_argument("--block", default="128",
                   type=comma_list(at_least(1, "--block", at_most=MAX_BLOCK), "block"),
                   help="threads per block, comma-separated (default 128)")
    p.add_argument("--repeat", type=at_least(1, "--repeat"), default=7,
                   help="timed runs per point (default 7)")
    p.add_argument("--no-mjx", action="store_true", help="skip MJX")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU batch")
    p.add_argument("--registers", action="store_true",
                   help="only build and print ptxas's registers and spills (needs nvcc, no GPU)")
    p.add_argument("--build-dir", default=os.path.join(HERE, "build", "gpu-bench"),
                   help="where the generated folders and models go (default "
                        "benchmarks/build/gpu-bench, beside the other benchmarks' builds)")
    p.add_argument("--out", default=os.path.join(HERE, "results"), help="results folder")
    return p.parse_args(argv)


# ---- systems -------------------------------------------------------------------------------------
def load_system(key):
    """(scleron Model, MJCF text for MuJoCo or None, label)."""
    import scleron
    sys.path.insert(0, ROOT)
    from benchmarks.systems import locate_system, rc_mjcf, urdf_for_mujoco
    if key.startswith("rc") and key[2:].isdigit():
        path = os.path.join(ROOT, "examples", f"{key}.yaml")
        if not os.path.isfile(path):
            from benchmarks.systems import rc_model_path
            path = rc_model_path(int(key[2:]), ARGS.build_dir)
        return scleron.load_model(path), rc_mjcf(int(key[2:])), key.upper()
    kind, _, path, label, floating = locate_system(key, ARGS.build_dir)
    model = scleron.load_model(path, floating=True) if floating else scleron.load_model(path)
    return model, ("urdf", urdf_for_mujoco(path), floating), label


def build(key, model, split, arch, functions):
    import scleron
    folder = os.path.join(ARGS.build_dir, f"{key}-split{split}")
    opts = {"arch": arch, "split": None if split == "0" else
            ("auto" if split == "auto" else int(split))}
    t = time.perf_counter()
    dyn = scleron.generate(model, folder, f"{key}_gpu", functions=[FUNCS[f] for f in functions] + ["integrate"],
                           cuda=opts)
    log(f"{key} split {split}: generated and built in {time.perf_counter() - t:.0f} s")
    return dyn


def states(dyn, n, rng):
    """n random states: q through integrate (quaternions stay unit), qd and tau in [-1, 1]."""
    v = rng.uniform(-1, 1, (n, dyn.nv))
    q = dyn.integrate(np.tile(dyn.neutral(), (n, 1)), v, np.ones((n, 1)))
    return q, rng.uniform(-1, 1, (n, dyn.nv)), rng.uniform(-1, 1, (n, dyn.nv))


def inputs_of(fn, q, qd, tau):
    return {"forward_dynamics": (q, qd, tau), "inverse_dynamics": (q, qd, tau),
            "mass_matrix": (q,), "bias_forces": (q, qd)}[fn]


# ---- timing --------------------------------------------------------------------------------------
def time_gpu(call, repeat):
    """Median seconds of call() between CUDA events, after one warm-up."""
    import cupy as cp
    call()
    cp.cuda.Device().synchronize()
    samples = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        call()
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return statistics.median(samples)


def time_host(call, repeat):
    call()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def rel_diff(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def bench_scleron(key, dyn, fn, n, layout, block, rng):
    import cupy as cp
    q, qd, tau = states(dyn, n, rng)
    host = inputs_of(fn, q, qd, tau)
    soa = layout == "soa"
    dev = [cp.asarray(np.ascontiguousarray(a.T) if soa else a) for a in host]
    f = getattr(dyn.cuda, fn)
    dyn.cuda.block_size(block)
    out = f(*dev, layout=layout)
    kernel = time_gpu(lambda: f(*dev, out=out, layout=layout), ARGS.repeat)

    def with_transfers():
        d = [cp.asarray(np.ascontiguousarray(a.T) if soa else a) for a in host]
        return cp.asnumpy(f(*d, layout=layout))
    total = time_host(with_transfers, max(3, ARGS.repeat // 2))
    got = cp.asnumpy(out)
    if soa:
        got = np.moveaxis(got, -1, 0)
    check = min(n, 2000)
    want = getattr(dyn, fn)(*[a[:check] for a in host])
    info = dyn.cuda.kernel_info(fn, layout)
    return {"system": key, "function": fn, "n": n, "layout": layout, "block": block,
            "ns_per_state": kernel / n * 1e9, "ns_per_state_transfers": total / n * 1e9,
            "states_per_s": n / kernel, "max_rel_diff": rel_diff(got[:check], want),
            "kernels": len(info), "registers": max(k["registers"] for k in info),
            "local_bytes": sum(k["local_bytes"] for k in info)}


def bench_cpu(key, dyn, fn, n, rng):
    threads = os.cpu_count() or 1
    q, qd, tau = states(dyn, n, rng)
    host = inputs_of(fn, q, qd, tau)
    f = getattr(dyn, fn)
    seconds = time_host(lambda: f(*host, threads=threads), max(3, ARGS.repeat // 2))
    return {"system": key, "function": fn, "n": n, "tool": f"scleron CPU ({threads} threads)",
            "ns_per_state": seconds / n * 1e9}


def mjx_model(mjcf):
    import mujoco
    from mujoco import mjx
    from benchmarks.systems import mj_disable_all
    if isinstance(mjcf, tuple):
        _, xml, floating = mjcf
        m = mujoco.MjModel.from_xml_string(xml)
        if floating:
            spec = mujoco.MjSpec.from_string(xml)
            spec.worldbody.first_body().add_freejoint()
            m = spec.compile()
    else:
        m = mujoco.MjModel.from_xml_string(mjcf)
    mj_disable_all(m)
    return m, mjx.put_model(m)


def bench_mjx(key, mjcf, n, rng):
    """jax.vmap(mjx.forward) over n states, fp64, on the device and with transfers."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from mujoco import mjx
    m, mx = mjx_model(mjcf)
    qpos = rng.uniform(-1, 1, (n, m.nq))
    qvel = rng.uniform(-1, 1, (n, m.nv))
    tau = rng.uniform(-1, 1, (n, m.nv))

    def forward(qp, qv, f):
        d = mjx.make_data(mx).replace(qpos=qp, qvel=qv, qfrc_applied=f)
        return mjx.forward(mx, d).qacc
    step = jax.jit(jax.vmap(forward))
    args = [jnp.asarray(a) for a in (qpos, qvel, tau)]
    kernel = time_host(lambda: step(*args).block_until_ready(), ARGS.repeat)
    total = time_host(lambda: np.asarray(step(*[jnp.asarray(a) for a in (qpos, qvel, tau)])),
                      max(3, ARGS.repeat // 2))
    return {"system": key, "function": "fd", "n": n, "tool": "MJX",
            "ns_per_state": kernel / n * 1e9, "ns_per_state_transfers": total / n * 1e9}


# ---- the run -------------------------------------------------------------------------------------
def device_name():
    try:
        import cupy as cp
        return cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:
        return "no-gpu"


def registers_only(systems, functions, splits):
    """ptxas's report of every kernel (needs nvcc, not a GPU)."""
    for key in systems:
        model, _, _ = load_system(key)
        for split in splits:
            dyn = build(key, model, split, ARGS.arch if ARGS.arch != "auto" else "sm_90", functions)
            for line in dyn.cuda.resources().splitlines():
                if "_soa" in line:
                    print(f"{key} split {split}: {line}")


def check_targets(rows, mjx_rows):
    lines = []
    big = [r for r in rows if r["n"] == max(r2["n"] for r2 in rows)]
    for system, fn, layout, what, limit in TARGETS:
        cand = [r for r in big if r["system"] == system and r["function"] == fn
                and (layout is None or r["layout"] == layout)]
        if cand:
            best = min(r[what] for r in cand)
            lines.append(f"{system} {fn} {layout or 'best layout'}: {best:.3g} ns/state "
                         f"(target <= {limit:.3g}): {'met' if best <= limit else 'NOT met'}")
    for system in {r["system"] for r in big}:
        fd = [r["ns_per_state"] for r in big if r["system"] == system and r["function"] == "fd"]
        idd = [r["ns_per_state"] for r in big if r["system"] == system and r["function"] == "id"]
        if fd and idd:
            lines.append(f"{system}: ID {min(idd):.3g} vs FD {min(fd):.3g} ns/state: "
                         f"{'met' if min(idd) <= min(fd) else 'NOT met'}")
        mj = [r["ns_per_state"] for r in mjx_rows if r["system"] == system
              and r["n"] == max(r2["n"] for r2 in rows)]
        if fd and mj:
            ratio = min(mj) / min(fd)
            lines.append(f"{system}: {ratio:.0f}x MJX (target >= {SPEEDUP_OVER_MJX:.0f}x): "
                         f"{'met' if ratio >= SPEEDUP_OVER_MJX else 'NOT met'}")
    worst = max((r["max_rel_diff"] for r in rows), default=0.0)
    lines.append(f"max relative difference to the CPU {worst:.2g} (target <= {MAX_REL_DIFF:g}): "
                 f"{'met' if worst <= MAX_REL_DIFF else 'NOT met'}")
    return lines


def main(argv=None):
    global ARGS
    ARGS = parse_args(argv)
    sys.path.insert(0, ROOT)
    systems, functions, splits = ARGS.systems, ARGS.functions, ARGS.split
    sizes, layouts, blocks = ARGS.n, ARGS.layouts, ARGS.block
    from scleron.backends.cuda import cuda_device_count
    if ARGS.registers:
        registers_only(systems, functions, splits)
        return 0
    if cuda_device_count() < 1:
        log("no CUDA device: nothing to time (python -m benchmarks.gpu --registers reports "
            "ptxas's registers and spills without one)")
        return 1
    try:
        import cupy  # noqa: F401
    except ImportError:
        log("CuPy is not installed (pip install -e .[cuda]): nothing to time")
        return 1
    rng = np.random.default_rng(12)
    rows, cpu_rows, mjx_rows, notes = [], [], [], []
    for key in systems:
        try:
            model, mjcf, label = load_system(key)
        except Exception as e:             # no example-robot-data, say
            notes.append(f"{key}: skipped ({e})")
            log(notes[-1])
            continue
        for split in splits:
            dyn = build(key, model, split, ARGS.arch, functions)
            for fn in functions:
                for n in sizes:
                    for layout in layouts:
                        for block in blocks:
                            r = bench_scleron(key, dyn, FUNCS[fn], n, layout, block, rng)
                            r.update(function=fn, split=split)
                            rows.append(r)
                            log(f"{key} {fn} split {split} {layout} block {block} N={n}: "
                                f"{r['ns_per_state']:.3g} ns/state "
                                f"({r['ns_per_state_transfers']:.3g} with transfers), "
                                f"rel diff {r['max_rel_diff']:.2g}, "
                                f"{r['registers']} registers, {r['local_bytes']} local B")
                    if not ARGS.no_cpu and split == splits[0]:
                        c = bench_cpu(key, dyn, FUNCS[fn], n, rng)
                        c["function"] = fn
                        cpu_rows.append(c)
        if not ARGS.no_mjx and "fd" in functions:
            try:
                for n in sizes:
                    mjx_rows.append(bench_mjx(key, mjcf, n, rng))
                    log(f"{key} MJX N={n}: {mjx_rows[-1]['ns_per_state']:.3g} ns/state")
            except ImportError:
                notes.append("MJX not installed (pip install mujoco-mjx): no MJX column")
            except Exception as e:
                notes.append(f"{key}: MJX failed ({type(e).__name__}: {e})")
    verdict = check_targets(rows, mjx_rows)
    device = device_name()
    os.makedirs(ARGS.out, exist_ok=True)
    stem = os.path.join(ARGS.out, "gpu-" + device.replace(" ", "_"))
    result = {"device": device, "host": platform.node(), "cpu_threads": os.cpu_count(),
              "argv": sys.argv[1:], "scleron": rows, "cpu": cpu_rows, "mjx": mjx_rows,
              "notes": sorted(set(notes)), "targets": verdict}
    with open(stem + ".json", "w") as fh:
        json.dump(result, fh, indent=1)
    with open(stem + ".md", "w") as fh:
        fh.write(markdown(result))
    print(markdown(result))
    return 0


def markdown(result):
    out = [f"# scleron CUDA on {result['device']}", "",
           "| system | function | split | layout | block | N | ns/state | with transfers | "
           "states/s | rel. diff | registers | local B |", "|" + "---|" * 12]
    for r in result["scleron"]:
        out.append(f"| {r['system']} | {r['function']} | {r['split']} | {r['layout']} | "
                   f"{r['block']} | {r['n']} | {r['ns_per_state']:.3g} | "
                   f"{r['ns_per_state_transfers']:.3g} | {r['states_per_s']:.3g} | "
                   f"{r['max_rel_diff']:.2g} | {r['registers']} | {r['local_bytes']} |")
    if result["cpu"] or result["mjx"]:
        out += ["", "| system | function | tool | N | ns/state | with transfers |",
                "|---" * 6 + "|"]
        for r in result["cpu"] + result["mjx"]:
            out.append(f"| {r['system']} | {r['function']} | {r['tool']} | {r['n']} | "
                       f"{r['ns_per_state']:.3g} | "
                       f"{r.get('ns_per_state_transfers', float('nan')):.3g} |")
    out += ["", "Targets:"] + [f"- {t}" for t in result["targets"]]
    out += [f"- note: {n}" for n in result["notes"]]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
