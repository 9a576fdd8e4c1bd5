"""The benchmark commands refuse bad options before any work (an outside tester: an unknown
system wrote an empty derivatives table over the committed one and exited 0; `--systems ''` ran
every system; benchmarks.gpu's --n abc or --functions xx were tracebacks after minutes of nvcc)."""
import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, ROOT)
from benchmarks import derivatives, gpu, run  # noqa: E402


@pytest.mark.parametrize("parse, argv, said", [
    (derivatives.parse_args, ["--systems", "nosuch"], "unknown system 'nosuch'"),
    (derivatives.parse_args, ["--systems", ""], "an empty system"),
    (derivatives.parse_args, ["--systems", "rc20,,ur5"], "an empty system"),
    (derivatives.parse_args, ["--systems", "rc20,rc20"], "system 'rc20' given twice"),
    (derivatives.parse_args, ["--rounds", "0"], "--rounds must be at least 1"),
    (derivatives.parse_args, ["--target-ms", "inf"], "--target-ms must be finite"),   # (cast to long in C)
    (run.parse_args, ["--systems", "panda,nosuch"], "unknown system 'nosuch'"),
    (run.parse_args, ["--systems", ""], "an empty system"),
    (run.parse_args, ["--pydy-cap", "-1"], "--pydy-cap must be at least 1"),     # ran in full
    (run.parse_args, ["--pydy-max-n", "0"], "--pydy-max-n must be at least 2"),  # silently 10
    (gpu.parse_args, ["--n", "abc"], "--n must be a number"),
    (gpu.parse_args, ["--functions", "fd,xx"], "unknown function 'xx'"),
    (gpu.parse_args, ["--systems", "rc0"], "unknown system 'rc0'"),
    (gpu.parse_args, ["--layouts", "foo"], "unknown layout 'foo'"),
    (gpu.parse_args, ["--block", "0"], "--block must be at least 1"),
    (gpu.parse_args, ["--block", "128,512"], "--block must be at most 256"),
    (gpu.parse_args, ["--repeat", "0"], "--repeat must be at least 1"),
    (gpu.parse_args, ["--split", "x"], "--split takes auto or a number"),
])
def test_bad_options_are_refused_by_argparse(parse, argv, said, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2 and said in capsys.readouterr().err


def test_pydy_max_n_is_taken_as_given():
    assert run.settings_from(run.parse_args(["--pydy-max-n", "3"])).pydy_max_n == 3
    assert run.settings_from(run.parse_args(["--quick"])).pydy_max_n == 5


def test_good_options_parse_to_lists():
    args = gpu.parse_args(["--systems", "rc7,panda", "--n", "1e3,20", "--split", "auto,0,500"])
    assert (args.systems, args.n, args.split) == (["rc7", "panda"], [1000, 20], ["auto", "0", "500"])
    assert derivatives.parse_args([]).systems == derivatives.SYSTEMS
    assert run.parse_args([]).systems is None and run.parse_args(["--systems", "ur5"]).systems == ["ur5"]


def test_no_results_are_written_when_every_system_fails(tmp_path, monkeypatch):
    def fail(*_):
        raise RuntimeError("no harness here")
    monkeypatch.setattr(derivatives, "System", fail)
    monkeypatch.setenv("SCLERON_OPT", "0")          # (restored after the test)
    with pytest.raises(SystemExit, match="every system failed: nothing written"):
        derivatives.main(["--systems", "rc2", "--out", str(tmp_path / "out"),
                          "--build", str(tmp_path / "build"), "--no-callgrind"])
    assert not os.path.exists(tmp_path / "out")
    # the tables time the shipped flags: SCLERON_OPT=0 made them time -O0 code (an outside tester)
    assert "SCLERON_OPT" not in os.environ
    # a file at --out is said before anything is measured (it was, after all of it)
    (tmp_path / "file").write_text("")
    for main in (derivatives.main, run.main):
        with pytest.raises(SystemExit, match="--out .*file: a file is there, not a folder"):
            main(["--systems", "rc2", "--out", str(tmp_path / "file")])
    with pytest.raises(SystemExit, match="does not exist"):
        derivatives.main(["--report-only", "--out", str(tmp_path / "out")])


def test_rc1_has_no_table_10_1_row():
    """`run.py --systems rc1` ended in ZeroDivisionError: Table 10.1's formulas count 0 or fewer
    operations at nv = 1 (an outside tester). No table row there, and none divided by."""
    from benchmarks.generation import op_counts
    meta = {"functions": {f: {"statements": 3, "ops": "5m + 2a + 1 fn"} for f in
                          ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces")}}
    assert all("table" not in o and "ratio" not in o for o in op_counts(meta, "rc", 1).values())
    assert op_counts(meta, "rc", 20)["fd"]["table"]["m"] > 0


def test_each_round_runs_a_fresh_copy_of_a_harness(tmp_path):
    """Where a binary's code lies in physical memory changed a harness's time by up to 1.6x
    (benchmarks.timing.placed_copy): each round runs its own copy, so the rounds' median is
    over placements."""
    from benchmarks.timing import harness_rounds
    fake = tmp_path / "bench"
    fake.write_text('#!/bin/sh\necho "SAMPLES $(basename "$0") 1 5.0"\n')
    fake.chmod(0o755)
    failures = []
    samples = harness_rounds({"a": [str(fake)]}, 3, lambda name: [],
                             lambda name, exc: failures.append(exc))
    assert not failures and samples == {"a": {f"bench.round{k}": [5.0] for k in range(3)}}
