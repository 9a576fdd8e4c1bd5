"""The scleron command: codegen, show, charts, and one-line errors with exit status 2."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, example


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "scleron", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=600)


def test_codegen_prints_summary_and_the_result_imports(tmp_path):
    out = tmp_path / "branched_cli"
    r = run("codegen", example("branched.yaml"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "nq = nv = 20" in r.stdout
    for fn in ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces"):
        assert fn in r.stdout
    assert "derive" in r.stdout and "unroll" in r.stdout and "compile" in r.stdout
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import branched_cli as m; "
            "q = np.full(m.nv, 0.1); print(m.nv, float(m.mass_matrix(q)[0, 0]) > 0)")
    r2 = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert r2.stdout.split() == ["20", "True"], r2.stderr
    again = run("codegen", example("branched.yaml"), "-o", str(out))
    assert again.returncode == 0 and "up to date" in again.stdout


def test_show_joint_tree_and_latex():
    r = run("show", example("branched.yaml"), "--joint", "a_elbow", "--what", "S")
    assert r.returncode == 0, r.stderr
    assert "cos(q₂)" in r.stdout and "universal" in r.stdout
    r = run("show", example("branched.yaml"), "--tree")
    assert r.returncode == 0 and "a_hand" in r.stdout and "ball_exp" in r.stdout
    r = run("show", example("rc20.yaml"), "--joint", "joint3", "--format", "latex")
    assert r.returncode == 0 and r.stdout.startswith("\\documentclass")


def test_charts_writes_c_and_python(tmp_path):
    r = run("charts", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    names = set(os.listdir(tmp_path))
    assert {"euler_charts.c", "euler_charts.h", "euler_charts.py"} <= names


@pytest.mark.parametrize("content,needle", [
    (None, "No such file"),
    ("bodies: [\n", "yaml"),
    ("bodies:\n  - {name: a, parent: nowhere, mass: 1, inertia: [1, 1, 1]}\n", "nowhere"),
    ("bodies:\n  - {name: a, parent: world, mass: -1, inertia: [1, 1, 1]}\n", "mass"),
    ("bodies:\n  - {name: a, parent: world, mass: 1, inertia: [1, 1, 1], joint: {type: warp}}\n", "warp"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, content, needle):
    path = tmp_path / "bad.yaml"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out"
    r = run("codegen", str(path), "-o", str(out))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert needle.lower() in lines[0].lower()
    assert "bad.yaml" in lines[0]
    assert not out.exists()


def test_codegen_method_and_mass_matrix_options(tmp_path):
    import json
    out = tmp_path / "rc20_m2"
    r = run("codegen", example("rc20.yaml"), "-o", str(out), "--method", "2", "--mass-matrix", "loop",
            "--no-compile")
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "scleron.json").read_text())
    assert meta["method"] == 2 and meta["mass_matrix"] == "loop"
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert "Method II" in lines["forward_dynamics"] and "loop form" in lines["mass_matrix"]
    assert lines["inverse_dynamics"].rstrip().endswith("unrolled")
    bad = run("codegen", example("rc20.yaml"), "-o", str(tmp_path / "x"), "--method", "3")
    assert bad.returncode == 2 and "--method" in bad.stderr
