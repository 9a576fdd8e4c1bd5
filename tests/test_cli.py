"""The scleron command: codegen, show, charts, and one-line errors with exit status 2."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import scleron

from conftest import ROOT, example


def one_body_model(tmp_path, name="one"):
    """A YAML model of one body on a hinge (where a flag or a message is tested, not the code)."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nbodies:\n  - {{name: a, parent: world, mass: 1.0, com: [0.5, 0, 0],\n"
                    "     inertia: [0.1, 0.1, 0.1], joint: {name: j, type: revolute, axis: [0, 0, 1]}}\n")
    return str(path)


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "scleron", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=600)


# a small branched tree (3 bodies, 4 coordinates) for the codegen round trip: compiled three times
SMALL_TREE = """
name: small_tree
gravity: [0, 0, -9.81]
bodies:
- {name: base, parent: world, joint: {name: yaw, type: revolute, axis: [0, 0, 1]},
   mass: 1.0, com: [0, 0, 0.1], inertia: [0.01, 0.01, 0.01]}
- {name: left, parent: base, joint: {name: left_hinge, type: revolute, axis: [0, 1, 0], xyz: [0, 0.2, 0]},
   mass: 0.5, com: [0.2, 0, 0], inertia: [0.001, 0.005, 0.005]}
- {name: right, parent: base, joint: {name: right_universal, type: universal, xyz: [0, -0.2, 0]},
   mass: 0.5, com: [0.2, 0, 0], inertia: [0.001, 0.005, 0.005]}
"""


def test_codegen_prints_summary_and_the_result_imports(tmp_path):
    model = tmp_path / "small_tree.yaml"
    model.write_text(SMALL_TREE)
    out = tmp_path / "small_cli"
    few = ("--functions", "fd,id,mass,bias")       # the defaults would triple the compile time
    r = run("codegen", str(model), "-o", str(out), *few)
    assert r.returncode == 0, r.stderr
    assert "nq = nv = 4" in r.stdout
    for fn in ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces"):
        assert fn in r.stdout
    assert "derive" in r.stdout and "unroll" in r.stdout and "compile" in r.stdout
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import small_cli as m; "
            "q = np.full(m.nv, 0.1); print(m.nv, float(m.mass_matrix(q)[0, 0]) > 0)")
    r2 = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert r2.stdout.split() == ["4", "True"], r2.stderr
    again = run("codegen", str(model), "-o", str(out), *few)
    assert again.returncode == 0 and "up to date" in again.stdout
    assert "forward_dynamics" in again.stdout and "compile" not in again.stdout
    # the same table as the first run's, its code column included, and a time line
    first_rows = [line for line in r.stdout.splitlines() if line.startswith("forward_dynamics")]
    assert first_rows and first_rows[0] in again.stdout.splitlines() and "unrolled" in first_rows[0]
    assert again.stdout.splitlines()[-1].startswith("time: load ")
    # an up-to-date folder without its compiled module (a clone's generated/, --no-compile) is
    # compiled by codegen, which says so, rather than later and silently on import
    for name in os.listdir(out):
        if name.endswith((".so", ".pyd")):
            os.remove(out / name)
    third = run("codegen", str(model), "-o", str(out), *few)
    assert third.returncode == 0 and "up to date" in third.stdout, third.stderr
    assert "compile (the folder had no usable compiled module" in third.stdout
    assert any(name.endswith((".so", ".pyd")) for name in os.listdir(out))


def test_show_joint_tree_and_latex():
    r = run("show", example("branched.yaml"), "--joint", "a_elbow", "--what", "S")
    assert r.returncode == 0, r.stderr
    assert "cos(q₂)" in r.stdout and "universal" in r.stdout
    r = run("show", example("branched.yaml"), "--tree")
    assert r.returncode == 0 and "a_hand" in r.stdout and "ball_exp" in r.stdout
    r = run("show", example("rc20.yaml"), "--joint", "joint3", "--format", "latex")
    assert r.returncode == 0 and r.stdout.startswith("\\documentclass")


@pytest.mark.slow      # ~8 s of sympy in a child process; write_charts itself is tested in test_charts
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


def test_codegen_method_and_mass_matrix_options(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SCLERON_OPT", raising=False)     # the shipped default flags
    import json
    from scleron.cli import main
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from make_examples import rc_yaml
    chain = tmp_path / "rc5.yaml"                  # (the forms, not their size: five links)
    chain.write_text(rc_yaml(5))
    out = tmp_path / "rc5_m2"
    assert main(["codegen", str(chain), "-o", str(out), "--method", "2", "--mass-matrix", "loop",
                 "--functions", "fd,id,mass", "--no-compile"]) == 0
    meta = json.loads((out / "scleron.json").read_text())
    assert meta["method"] == 2 and meta["mass_matrix"] == "loop"
    assert "-Os" in meta["cflags"] and not any(f in meta["cflags"] for f in ("-O1", "-O2", "-O3"))
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "Method II" in lines["forward_dynamics"] and "loop form" in lines["mass_matrix"]
    assert lines["inverse_dynamics"].rstrip().endswith("unrolled")
    bad = run("codegen", str(chain), "-o", str(tmp_path / "x"), "--method", "3")   # (argparse)
    assert bad.returncode == 2 and "--method" in bad.stderr
    one = one_body_model(tmp_path)                 # the flags alone: a one-body model is enough
    o2 = tmp_path / "one_o2"                       # --opt swaps the level, nothing else
    assert main(["codegen", one, "-o", str(o2), "--opt", "2", "--functions", "fd",
                 "--no-compile"]) == 0
    flags = json.loads((o2 / "scleron.json").read_text())["cflags"]
    assert flags == ["-O2" if f == "-Os" else f for f in meta["cflags"]]
    monkeypatch.setenv("SCLERON_OPT", "0")         # the environment's level, when no --opt
    o0 = tmp_path / "one_o0"
    assert main(["codegen", one, "-o", str(o0), "--functions", "fd", "--no-compile"]) == 0
    flags = json.loads((o0 / "scleron.json").read_text())["cflags"]
    assert flags == ["-O0" if f == "-Os" else f for f in meta["cflags"]]
    monkeypatch.setenv("SCLERON_OPT", "fast")
    capsys.readouterr()
    assert main(["codegen", one, "-o", str(tmp_path / "y"), "--functions", "fd"]) == 2
    err = capsys.readouterr().err
    assert "SCLERON_OPT='fast'" in err and "Traceback" not in err
    assert not (tmp_path / "y").exists()


BRANCHED_TREE = """\
branched: 9 bodies, nq = nv = 20
world
└─ hub  [hub_turn: revolute, 1 DOF]
   ├─ a_upper  [a_shoulder: spherical, 3 DOF]
   │  └─ a_lower  [a_elbow: universal, 2 DOF]
   │     └─ a_hand  [a_wrist: helical, 1 DOF]
   ├─ b_upper  [b_shoulder: cylindrical, 2 DOF]
   │  └─ b_lower  [b_elbow: composite, 2 DOF]
   │     └─ b_hand  [b_wrist: ball_exp, 3 DOF]
   └─ c_slider  [c_plane: planar, 3 DOF]
      └─ c_tip  [c_shift: translational, 3 DOF]
"""


def test_show_tree_draws_siblings_apart():
    """Siblings hang off ├─ and the last off └─; │ continues under a sibling with more below."""
    r = run("show", example("branched.yaml"), "--tree")
    assert r.returncode == 0, r.stderr
    assert r.stdout == BRANCHED_TREE


def test_tree_text_several_roots_and_a_long_chain():
    import scleron
    from scleron.show import tree_text
    m = scleron.Model("forest")
    for name, parent in [("a", "world"), ("a1", "a"), ("a2", "a"), ("b", "world")]:
        m.add_body(name, parent, joint="revolute", axis=(0, 0, 1), mass=1.0,
                   inertia=(0.1, 0.1, 0.1))
    assert tree_text(m) == "\n".join([
        "forest: 4 bodies, nq = nv = 4",
        "world",
        "├─ a  [a_joint: revolute, 1 DOF]",
        "│  ├─ a1  [a1_joint: revolute, 1 DOF]",
        "│  └─ a2  [a2_joint: revolute, 1 DOF]",
        "└─ b  [b_joint: revolute, 1 DOF]"])
    chain = scleron.Model("chain")                  # deeper than Python's recursion limit
    parent = "world"
    for k in range(1200):
        chain.add_body(f"l{k}", parent, joint="revolute", axis=(0, 0, 1), mass=1.0,
                       inertia=(0.1, 0.1, 0.1))
        parent = f"l{k}"
    lines = tree_text(chain).splitlines()
    assert len(lines) == 1202
    assert lines[-1] == " " * 3 * 1199 + "└─ l1199  [l1199_joint: revolute, 1 DOF]"


# ---- the README's synopsis is the parser's ------------------------------------------------------
def test_readme_synopsis_is_the_parsers():
    """README.md's command-line synopsis is written from scleron.cli.build_parser; a new or
    changed option makes this fail until the README is refreshed."""
    from scleron.cli import readme_synopsis, synopsis_block
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = readme_synopsis(readme)
    assert block is not None, "README.md has lost its synopsis markers"
    assert block == synopsis_block(), (
        "README.md's command-line synopsis differs from the parser's; refresh it with "
        "`python -m scleron.cli --synopsis README.md`")


def test_synopsis_names_every_command_and_option(monkeypatch):
    import argparse

    from scleron.cli import build_parser, synopsis
    monkeypatch.setenv("COLUMNS", "40")            # argparse's width must not matter
    text = synopsis()
    assert text == synopsis(build_parser())
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) >= {"codegen", "show", "draw", "simulate", "charts"}
    for name, subparser in sub.choices.items():
        block = text.split(f"\nscleron {name} ", 1)[1].split("\n\nscleron ", 1)[0]
        for action in subparser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert flag in block, (name, flag)
    assert all(len(line) <= 100 for line in text.splitlines())
    for needle in ("--floating", "--elev", "--azim", "--no-labels", "--tau", "--rtol", "--atol",
                   "--every", "--build-dir", "--switch-threshold", "~/.cache/scleron/<name>",
                   "charts/", "generated/<name>"):
        assert needle in text, needle


def test_synopsis_refresh_rewrites_only_the_block(tmp_path):
    from scleron.cli import SYNOPSIS_BEGIN, SYNOPSIS_END, synopsis_block
    readme = tmp_path / "README.md"
    stale = f"{SYNOPSIS_BEGIN}\n```\nscleron old\n```\n{SYNOPSIS_END}"
    readme.write_text(f"# title\n\n{stale}\n\nrest\n", encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "scleron.cli", "--synopsis", str(readme)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "updated" in r.stdout, r.stderr
    assert readme.read_text(encoding="utf-8") == f"# title\n\n{synopsis_block()}\n\nrest\n"
    r = subprocess.run([sys.executable, "-m", "scleron.cli", "--synopsis", str(readme)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "up to date" in r.stdout


def test_the_shipped_flags_and_opt_0_compute_the_same(tmp_path, monkeypatch):
    """The suite builds at -O0 (conftest): the shipped -Os build of the same sources gives the
    same numbers (to rounding: -Os fuses multiply-adds), and is a different, cached build."""
    import numpy as np
    import scleron
    model = scleron.load_model(example("quadruped.yaml"))
    monkeypatch.delenv("SCLERON_OPT", raising=False)
    shipped = scleron.generate(model, str(tmp_path / "o_s"), "quad_os", functions=["fd", "mass"])
    monkeypatch.setenv("SCLERON_OPT", "0")
    quick = scleron.generate(model, str(tmp_path / "o0"), "quad_o0", functions=["fd", "mass"])
    flags = [json.loads((tmp_path / f / "scleron.json").read_text())["cflags"] for f in ("o_s", "o0")]
    assert "-Os" in flags[0] and "-O0" in flags[1]
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, qd, tau = (rng.uniform(-1, 1, model.nv) for _ in range(3))
        assert np.allclose(shipped.forward_dynamics(q, qd, tau), quick.forward_dynamics(q, qd, tau),
                           rtol=1e-11, atol=1e-11)
        assert np.allclose(shipped.mass_matrix(q), quick.mass_matrix(q), rtol=1e-12, atol=1e-13)


def test_the_summary_groups_the_one_frame_functions(capsys):
    """A robot with 60 frames got 180 summary rows of frame_jacobian_<k>[_local|_world]; each
    family is one row now: all its statements, one frame's operations from the fewest to the
    most."""
    from scleron.cli import _table
    rows = {"forward_dynamics": (100, "60m + 40a + 4 fn"),
            "frame_placement_0": (3, "2m + 1a + 0 fn"), "frame_placement_1": (7, "5m + 4a + 2 fn"),
            "frame_jacobian_0_local": (10, "6m + 4a + 0 fn"),
            "frame_jacobian_1_local": (20, "12m + 9a + 2 fn"),
            "frame_jacobian_2_local": (30, "20m + 10a + 2 fn")}
    _table(rows, {"forward_dynamics": "unrolled", "frame_placement_0": "unrolled",
                  "frame_placement_1": "unrolled"})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4, lines
    assert lines[1].split() == ["forward_dynamics", "100", "60m", "+", "40a", "+", "4", "fn", "unrolled"]
    # the fewest and most operations, sin/cos included (an outside tester: they were left out
    # here and counted by the other rows)
    assert lines[2].split() == ["frame_placement_<k>", "10", "2", "frames,", "3-11", "ops", "each",
                                "unrolled"]
    assert lines[3].split() == ["frame_jacobian_<k>_local", "60", "3", "frames,", "10-32", "ops",
                                "each"]


def test_a_comma_within_a_frame_name_is_written_with_a_backslash():
    """--frames a,b splits at commas; a URDF link named "arm,left" is written arm\\,left."""
    from scleron.cli import CommandError, _comma_list
    assert _comma_list(r"tool, arm\,left ,foot", "--frames") == ["tool", "arm,left", "foot"]
    assert _comma_list(None, "--frames") is None
    with pytest.raises(CommandError, match="--frames needs at least one name"):
        _comma_list(" , ", "--frames")


def test_a_name_made_into_an_identifier_is_said(tmp_path, capsys):
    """--name 1bad generates m_1bad_dynamics.c and the module m_1bad: the summary says so."""
    from scleron.cli import main
    assert main(["codegen", example("rc20.yaml"), "-o", str(tmp_path / "g"), "--name", "1bad",
                 "--functions", "fd", "--no-compile"]) == 0
    assert "(module and C prefix m_1bad: '1bad' is not usable as a C and Python name)" in capsys.readouterr().out
    assert (tmp_path / "g" / "m_1bad_dynamics.c").exists()
    assert main(["codegen", example("rc20.yaml"), "-o", str(tmp_path / "h"), "--functions", "fd",
                 "--no-compile"]) == 0
    assert "module and C prefix" not in capsys.readouterr().out


def test_the_default_folder_of_a_model_named_like_a_module_is_its_identifier(tmp_path, capsys,
                                                                              monkeypatch):
    """A robot named numpy went to generated/numpy, a package that shadows numpy wherever
    generated/ is on sys.path (found by an outside tester): the folder takes the identifier."""
    from scleron.cli import main
    text = open(example("rc20.yaml")).read().replace("name: rc20", "name: numpy", 1)
    (tmp_path / "numpy.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["codegen", "numpy.yaml", "--functions", "fd", "--no-compile"]) == 0
    assert "-> generated/numpy_model (module and C prefix numpy_model" in capsys.readouterr().out
    assert os.listdir(tmp_path / "generated") == ["numpy_model"]


def test_an_output_folder_named_like_a_module_is_refused(tmp_path, capsys):
    """-o build/numpy made a package `numpy` that broke `import numpy` wherever build/ was on
    sys.path, the generated code's own import of numpy included (an outside tester)."""
    import scleron
    from scleron.cli import main
    one = one_body_model(tmp_path)
    # mujoco: scleron's MJCF reader imports it; _cffi_backend, pycparser: the importing package
    # loads (and compiles) with them, and a folder of that name broke every import beside it
    for folder in ("numpy", "json", "mujoco", "_cffi_backend", "pycparser"):
        out = tmp_path / "build" / folder
        assert main(["codegen", str(one), "-o", str(out), "--no-compile"]) == 2
        err = capsys.readouterr().err
        assert f"would shadow Python's module {folder}" in err and len(err.splitlines()) == 1, err
        with pytest.raises(ValueError, match="shadow"):
            scleron.generate(scleron.load_model(str(one)), str(out) + "/", compile=False)
    assert not (tmp_path / "build").exists()
    assert main(["codegen", str(one), "-o", str(tmp_path / "build" / "numpy_model"),
                 "--no-compile"]) == 0


def test_an_output_folder_import_cannot_spell_is_said_with_how_to_load_it(tmp_path, capsys):
    """-o build/my-robot or build/import: the package works, but `import my-robot` cannot be
    written (an outside tester); codegen says how to load it, and that way works."""
    from scleron.cli import main
    one = one_body_model(tmp_path)
    for folder in ("my-robot", "import"):
        out = tmp_path / "build" / folder
        assert main(["codegen", str(one), "-o", str(out), "--no-compile"]) == 0
        said = capsys.readouterr().out
        assert f"note: {folder!r} is not a name `import` takes" in said, said
        assert f"importlib.import_module({folder!r})" in said
    for folder in ("a.b", "__main__"):         # importlib.import_module cannot load them either
        out = tmp_path / "build" / folder
        assert main(["codegen", str(one), "-o", str(out), "--no-compile"]) == 0
        said = capsys.readouterr().out
        assert f"note: {folder!r} is not a name importlib can load either" in said, said
        assert f"scleron.load_generated({str(out)!r})" in said and "import_module" not in said
    assert main(["codegen", str(one), "-o", str(tmp_path / "build" / "robot"), "--no-compile"]) == 0
    assert "is not a name" not in capsys.readouterr().out
    code = ("import importlib, sys; sys.path.insert(0, sys.argv[1]); "
            "print(importlib.import_module('my-robot').nv)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "build")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.split()[-1] == "1", done.stderr


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
def test_sigterm_cleans_up_as_ctrl_c_does(tmp_path):
    """kill (SIGTERM) ended Python at once, past every clean-up (a terminated simulate left its
    hidden .npz beside the output: an outside tester). SIGTERM now runs Ctrl-C's clean-up, says
    "terminated", and the process still ends by the signal."""
    one = one_body_model(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "scleron", "simulate", one, "--duration", "1e5",
                             "--dt", "1e-3", "--every", "100000", "-o", str(out / "t.npz"),
                             "--plot", str(out / "t.png")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"})
    assert proc.stdout.readline().startswith("generated dynamics:")    # the run has begun
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, err)
    assert err.strip().splitlines()[-1] == "scleron: terminated", err
    assert os.listdir(out) == []


def test_an_interrupted_write_leaves_neither_file(tmp_path):
    """scleron.outputs.write_all, which simulate's trajectory and plot and draw's picture go
    through: a write cut short (Ctrl-C or SIGTERM inside savefig) removes its temporary file and
    the other one's, and leaves what was at both paths as it was."""
    from scleron.outputs import write_all
    (tmp_path / "a.npz").write_bytes(b"old a")

    def whole(tmp):
        with open(tmp, "wb") as f:
            f.write(b"new")

    def half_then_interrupted(tmp):
        with open(tmp, "wb") as f:
            f.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_all([("output", str(tmp_path / "a.npz"), whole),
                   ("plot", str(tmp_path / "b.png"), half_then_interrupted)])
    assert sorted(os.listdir(tmp_path)) == ["a.npz"] and (tmp_path / "a.npz").read_bytes() == b"old a"


def test_a_cut_short_compiled_module_is_built_again(tmp_path, capsys):
    """A cached folder whose .so no longer loads (cut short, overwritten) was reported as an
    internal error on every codegen until --force (an outside tester); it is built again."""
    from scleron.cli import main
    one, out = one_body_model(tmp_path), str(tmp_path / "g")
    done = run("codegen", one, "-o", out, "--functions", "fd", "--opt", "0")  # (not loaded here:
    assert done.returncode == 0, done.stderr                    # cut short, a mapped .so is SIGBUS)
    for so in glob.glob(os.path.join(out, "*.so")):
        open(so, "w").close()
    capsys.readouterr()
    assert main(["codegen", one, "-o", out, "--functions", "fd", "--opt", "0"]) == 0
    assert "compile (the folder had no usable compiled module" in capsys.readouterr().out
    dyn = scleron.load_generated(out)
    assert np.allclose(dyn.forward_dynamics([0.0], [0.0], [1.0]), [1.0 / (0.1 + 0.25)])


@pytest.mark.parametrize("which", ["cffi module", "fast extension"])
def test_a_compiled_module_cut_in_half_is_built_again_not_loaded(tmp_path, which):
    """A .so cut to half its size (an interrupted copy, a full disk) ended codegen, import and
    load_generated with SIGBUS inside dlopen, before any check could run (an outside tester; only
    cut to nothing was caught). Each build records its modules' sizes; a module of another size
    is built again. (Subprocesses: a failure here would kill the test's process.)"""
    one, out = one_body_model(tmp_path), str(tmp_path / "g")
    assert run("codegen", one, "-o", out, "--functions", "fd", "--opt", "0").returncode == 0
    load = ("import scleron, numpy as np; d = scleron.load_generated({!r}); "
            "print(np.allclose(d.forward_dynamics([0.0], [0.0], [1.0]), [1 / (0.1 + 0.25)]))")

    def cut():
        so = [p for p in glob.glob(os.path.join(out, "*.so")) if ("_py." in p) == (which == "fast extension")]
        assert len(so) == 1, so
        os.truncate(so[0], os.path.getsize(so[0]) // 2)

    cut()
    done = subprocess.run([sys.executable, "-c", load.format(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "True", (done.returncode, done.stderr)
    cut()
    done = run("codegen", one, "-o", out, "--functions", "fd", "--opt", "0")
    assert done.returncode == 0 and "compile (the folder had no usable compiled module" in done.stdout, \
        (done.returncode, done.stdout, done.stderr)
    done = subprocess.run([sys.executable, "-c", load.format(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "True", (done.returncode, done.stderr)


def test_an_output_folder_holding_the_current_folder_is_refused(tmp_path, capsys, monkeypatch):
    """-o . replaced the current folder as a whole: the user's shell was left in a deleted
    folder, and the command ended in a bare "[Errno 2] No such file or directory"."""
    from scleron.cli import main
    one = one_body_model(tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    (tmp_path / "work" / "mine.txt").write_text("the user's")
    for out in (".", "..", str(tmp_path)):
        assert main(["codegen", str(one), "-o", out, "--no-compile"]) == 2
        err = capsys.readouterr().err
        assert "the current folder is in it" in err and len(err.splitlines()) == 1, err
    assert (tmp_path / "work" / "mine.txt").read_text() == "the user's"

@pytest.mark.parametrize("option, functions", [("--frames", "frame_placements"),
                                               ("--wrench-frames", "fd_fext")])
def test_an_unknown_frame_names_the_model_file(tmp_path, capsys, option, functions):
    from scleron.cli import main
    assert main(["codegen", example("rc20.yaml"), "-o", str(tmp_path / "x"), option, "nope",
                 "--functions", functions, "--no-compile"]) == 2
    assert f"scleron: error: {example('rc20.yaml')}: unknown frame 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("options, needle", [
    (["--method", "2", "--functions", "fdd"], "--method 2) changes only forward_dynamics"),
    (["--mass-matrix", "loop", "--functions", "fd,minv"], "changes only mass_matrix"),
    (["--frames", "link3", "--functions", "fd"], "changes only frame_placements, frame_jacobians"),
    (["--wrench-frames", "link3", "--functions", "fd,placements"],
     "(--wrench-frames) changes only forward_dynamics_fext")])
def test_an_option_no_generated_function_takes_is_refused(tmp_path, capsys, options, needle):
    """--method 2 without the forward dynamics, --mass-matrix without the mass matrix, --frames
    without a frame function changed nothing, silently."""
    from scleron.cli import main
    assert main(["codegen", example("rc20.yaml"), "-o", str(tmp_path / "x"), *options,
                 "--no-compile"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.startswith("scleron: error:") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_the_build_script_run_by_hand_leaves_the_package_importable(tmp_path):
    """`python build_NAME.py` (README, The generated code) left the cffi module in _build/, so
    that the import compiled everything again (found by an outside tester of the docs)."""
    from scleron.cli import main
    folder = tmp_path / "small"
    assert main(["codegen", example("branched.yaml"), "-o", str(folder), "--name", "small",
                 "--functions", "fd", "--no-compile"]) == 0
    r = subprocess.run([sys.executable, "build_small.py"], cwd=folder, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    built = sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir() if p.suffix == ".so")
    assert len(built) == 2 and not (folder / "_build").exists(), sorted(os.listdir(folder))
    r = subprocess.run([sys.executable, "-c", "import small, numpy as np; "
                        "print(small.forward_dynamics(np.zeros(small.nq), np.zeros(small.nv), np.zeros(small.nv))[-1])"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and abs(float(r.stdout) + 9.81) < 1e-12, r.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir()
                  if p.suffix == ".so") == built                                    # nothing rebuilt


def test_importing_code_whose_model_file_changed_warns(tmp_path):
    """The package records its model file's SHA-256 (model_file.json) and warns on import when
    the file changed since (stale code said nothing); codegen of the changed file clears it,
    by regenerating or, for a change that leaves the model alone, by a cache hit."""
    import warnings
    from scleron.cli import main
    model = tmp_path / "small.yaml"
    model.write_text(open(example("branched.yaml")).read().replace("name: branched", "name: small_w", 1))
    folder = tmp_path / "g"

    def import_warnings():
        code = ("import sys, warnings; warnings.simplefilter('always'); sys.path.insert(0, sys.argv[1]); "
                "import g")
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr
        return [line for line in r.stderr.splitlines() if "Warning" in line]

    assert main(["codegen", str(model), "-o", str(folder), "--functions", "fd"]) == 0
    record = json.loads((folder / "model_file.json").read_text())
    assert record["path"] == os.path.join("..", "small.yaml")
    assert import_warnings() == []
    model.write_text(model.read_text() + "# a comment\n")
    warned = import_warnings()
    assert len(warned) == 1 and f"generated from {model}, which has changed since" in warned[0]
    assert main(["codegen", str(model), "-o", str(folder), "--functions", "fd"]) == 0   # up to date
    assert import_warnings() == []
    # the file edited while the code was being made: the record is of the text read, so the
    # import warns (it recorded the edited file's hash: stale code, silently; an outside tester)
    import scleron
    read = scleron.load_model(str(model))
    model.write_text(model.read_text() + "# edited during codegen\n")
    scleron.generate(read, str(folder), functions=["fd"])
    warned = import_warnings()
    assert len(warned) == 1 and f"generated from {model}, which has changed since" in warned[0]


def test_draw_at_a_configuration_whose_kinematics_overflow_is_one_line(tmp_path, capsys):
    """A ball_exp coordinate of 1e160 (finite) overflowed inside the kinematics: an internal
    error (an outside tester); now the one-line refusal that NaN and inf get."""
    pytest.importorskip("matplotlib")
    from scleron.cli import main
    q = ["0"] * 20
    q[11] = "1e160"
    assert main(["draw", example("branched.yaml"), "-o", str(tmp_path / "x.png"), "--q", *q]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scleron: error: {example('branched.yaml')}: the kinematics overflow at "
                          "this q (entries up to 1e+160)") and "Numerical result" not in err
    assert not (tmp_path / "x.png").exists()
    # a slider at 1e308 m reached matplotlib ("Axis limits inf, inf cannot be infinite"), and at
    # 1e15 m drew a meaningless picture (an outside tester): refused, saying how far
    path = tmp_path / "slider.yaml"
    path.write_text("name: slider\nbodies:\n  - {name: a, parent: world, mass: 1, inertia: "
                    "[1, 1, 1], joint: {name: j, type: prismatic, axis: [1, 0, 0]}}\n")
    for x in ("1e308", "1e15"):
        assert main(["draw", str(path), "-o", str(tmp_path / "s.png"), "--q", x]) == 2
        err = capsys.readouterr().err
        assert f"the bodies stand up to {float(x):.3g} m from the world origin" in err and \
            len(err.splitlines()) == 1, err
    assert not (tmp_path / "s.png").exists()


def test_replacing_another_models_default_folder_is_said(tmp_path, capsys, monkeypatch):
    """An outside tester: <robot name="my-bot"> and <robot name="my_bot"> share generated/my_bot,
    and the second silently replaced the first."""
    from scleron.cli import main
    monkeypatch.chdir(tmp_path)
    link = ('<link name="base"/><link name="a"><inertial><mass value="1"/><inertia ixx="0.1" '
            'iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" '
            'type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>')
    for name, mass in (("my-bot", "1"), ("my_bot", "2")):
        (tmp_path / f"{name}.urdf").write_text(f'<robot name="{name}">'
                                               + link.replace('value="1"', f'value="{mass}"') + "</robot>")
    assert main(["codegen", "my-bot.urdf", "--no-compile", "--functions", "fd"]) == 0
    assert "note:" not in capsys.readouterr().out
    assert main(["codegen", "my_bot.urdf", "--no-compile", "--functions", "fd"]) == 0
    said = capsys.readouterr().out
    assert (f"note: {os.path.join('generated', 'my_bot')} held the code generated from "
            "my-bot.urdf; replaced (models whose names make one identifier share a default "
            "folder: give -o or --name)") in said
    assert main(["codegen", "my_bot.urdf", "--no-compile", "--functions", "fd"]) == 0   # up to date
    assert "note:" not in capsys.readouterr().out


def test_ctrl_c_while_the_command_starts_is_one_line(monkeypatch, capsys):
    """The command's imports take a second or two (sympy): Ctrl-C there printed a traceback
    (outside testers). scleron.errors.command_start, around them, ends the command as later
    (one line, status 130); in any other program the KeyboardInterrupt goes on."""
    from scleron.errors import command_start
    monkeypatch.setattr(sys, "argv", ["/usr/bin/scleron", "codegen"])
    with pytest.raises(SystemExit) as e, command_start():
        raise KeyboardInterrupt
    assert e.value.code == 130 and capsys.readouterr().err == "scleron: interrupted\n"
    monkeypatch.setattr(sys, "argv", ["my_controller.py"])
    monkeypatch.setattr(sys, "orig_argv", ["python", "my_controller.py"], raising=False)
    with pytest.raises(KeyboardInterrupt), command_start():
        raise KeyboardInterrupt


def test_empty_option_values_are_refused(tmp_path, capsys):
    """-o "", --name "" meant the defaults and an empty name between commas was skipped,
    without a word (an outside tester); charts -o a file said "[Errno 17] File exists"."""
    from scleron.cli import main
    one = one_body_model(tmp_path)
    for args, needle in ((["-o", ""], "-o is empty"), (["--name", " "], "--name is empty"),
                         (["--functions", "fd,,id", "-o", str(tmp_path / "o")],
                          "an empty name between commas"),
                         (["--frames", "a,", "-o", str(tmp_path / "o")], "an empty name between commas")):
        assert main(["codegen", one, "--no-compile", *args]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
    afile = tmp_path / "afile"
    afile.write_text("")
    assert main(["charts", "-o", str(afile)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    # a folder at one file's place left the others written, errno's words with no path (an
    # outside tester): all three or none now, the place named
    half = tmp_path / "half"
    (half / "euler_charts.c").mkdir(parents=True)
    assert main(["charts", "-o", str(half)]) == 2
    err = capsys.readouterr().err
    assert "euler_charts.c: a folder is there" in err and len(err.splitlines()) == 1, err
    assert sorted(os.listdir(half)) == ["euler_charts.c"]
    assert main(["charts", "-o", str(afile / "sub")]) == 2
    assert capsys.readouterr().err.startswith(f"scleron: error: -o {afile / 'sub'}: Not a directory")


def test_codegen_names_the_rows_of_fext(tmp_path, capsys):
    """--frames alone also chooses fext's rows: codegen says which (an outside tester found out
    from a shape error); a frame named twice is refused in the option's own words."""
    from scleron.cli import main
    assert main(["codegen", example("rc20.yaml"), "-o", str(tmp_path / "x"), "--frames", "link3",
                 "--functions", "fd_fext", "--no-compile"]) == 0
    assert ("fext: a row per frame of link3 (wrench_frame_names, --frames; --wrench-frames "
            "chooses them)") in capsys.readouterr().out
    assert main(["codegen", example("rc20.yaml"), "-o", str(tmp_path / "y"), "--wrench-frames",
                 "link1, link2,link1", "--functions", "fd_fext", "--no-compile"]) == 2
    assert ("scleron: error: --wrench-frames names 'link1' more than once"
            in capsys.readouterr().err)
