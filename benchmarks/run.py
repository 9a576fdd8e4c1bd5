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

The modules beside this one: systems (the systems in the three tools), harnesses (the C/C++
harnesses, callgrind), timing (timing loops), generation (generation timing, op counts),
variants (code generation variants), report and plot (the outputs), stages (one run, in order),
scleron_internals (the only use of scleron's internals).
"""
import argparse
import os
import shutil
import sys

# run as a script: the modules beside this file are imported as the package `benchmarks`
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import HERE, Settings, at_least                          # noqa: E402
from benchmarks.generation import run_worker_from_argv                          # noqa: E402


def parse_args(argv):
    from benchmarks.systems import ALL_SYSTEMS, ARMS, HUMANOIDS, system_names
    from benchmarks.variants import VARIANT_SYSTEMS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="rc20 and panda, fewer repeats, PyDy n <= 5 (< 3 min once built)")
    ap.add_argument("--systems", default=None, type=system_names(),
                    help="comma-separated: " + ",".join(ALL_SYSTEMS)
                    + " (default), or the fixed-base arms of example-robot-data: "
                    + ",".join(ARMS) + ", or the floating humanoid: " + ",".join(HUMANOIDS))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--build", default=os.path.join(HERE, "build"))
    ap.add_argument("--pydy-cap", type=at_least(1.0, "--pydy-cap", float), default=120.0,
                    help="seconds per PyDy derivation")
    ap.add_argument("--pydy-max-n", type=at_least(2, "--pydy-max-n"), default=None,
                    help="largest chain PyDy derives (default 10, 5 with --quick)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-pydy", action="store_true")
    ap.add_argument("--no-variants", action="store_true",
                    help="skip the code generation variants section (Method I/II, mass matrix unrolled/loop; "
                         "run for " + ",".join(VARIANT_SYSTEMS) + " among --systems, rc20 only with --quick)")
    return ap.parse_args(argv)


def settings_from(args):
    """The run's settings; --quick: fewer systems, rounds, samples and PyDy sizes."""
    from benchmarks.systems import ALL_SYSTEMS, QUICK_SYSTEMS
    from benchmarks.variants import QUICK_VARIANT_SYSTEMS, VARIANT_SYSTEMS
    quick = args.quick
    systems = args.systems or (QUICK_SYSTEMS if quick else ALL_SYSTEMS)
    variant_keys = [] if args.no_variants else \
        [k for k in (QUICK_VARIANT_SYSTEMS if quick else VARIANT_SYSTEMS) if k in systems]
    return Settings(
        quick=quick, systems=systems, rounds=3 if quick else 5, per_round=7 if quick else 15,
        target_ms=3.0 if quick else 5.0, py_repeats=5 if quick else 11, pydy_cap_s=args.pydy_cap,
        pydy_max_n=args.pydy_max_n if args.pydy_max_n is not None else (5 if quick else 10), no_pydy=args.no_pydy,
        callgrind=shutil.which("valgrind") is not None and not args.no_callgrind,
        no_callgrind=args.no_callgrind, variant_keys=variant_keys, no_variants=args.no_variants,
        out_dir=os.path.abspath(args.out), build_dir=os.path.abspath(args.build))


def main(argv=None):
    from benchmarks import stages
    from benchmarks.common import out_folder, shipped_flags_only
    args = parse_args(argv)
    out_folder(args.out)
    shipped_flags_only()
    argv_used = ["python", "benchmarks/run.py"] + (argv if argv is not None else sys.argv[1:])
    run = stages.new_run(settings_from(args))
    stages.queue_peer_builds(run)             # Pinocchio's harness: ~3 min of g++ the first time
    stages.prepare_systems(run)               # models, states, peers, checks, scleron generate
    stages.queue_peer_callgrind_builds(run)
    stages.time_generation(run)               # fresh processes, while the builds run
    stages.time_pydy(run)
    stages.wait_for_builds(run)
    stages.check_harnesses(run)
    stages.time_c_harnesses(run)
    stages.time_python(run)
    stages.measure_callgrind(run)
    stages.compare_variants(run)
    stages.write_outputs(run, argv_used)


if __name__ == "__main__":
    if not run_worker_from_argv(sys.argv[1:]):
        main()
