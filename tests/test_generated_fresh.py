"""The committed generated/ folders are what scleron generates today (sources only).

If this fails after a change to scleron, regenerate them (the dynamics functions only: the frame
functions would triple the committed C without adding much to read):
    for m in rc20 rc50 rc100 branched quadruped; do
        scleron codegen examples/$m.yaml -o generated/$m --no-compile --force \
            --functions fd,id,mass,bias,ke,pe,com,int,diff; done
"""
import os
import shutil
import subprocess

import pytest

import scleron
from scleron.pipeline import build_sources

from conftest import ROOT, example

SHIPPED = ["rc20", "rc50", "rc100", "branched", "quadruped"]
FUNCTIONS = ["fd", "id", "mass", "bias", "ke", "pe", "com", "int", "diff"]
BINARY_SUFFIXES = (".so", ".o", ".pyd", ".pyc")


@pytest.mark.parametrize("name", SHIPPED)
def test_committed_generated_sources_are_current(name, monkeypatch):
    monkeypatch.delenv("SCLERON_OPT", raising=False)   # committed with the shipped flags
    folder = os.path.join(ROOT, "generated", name)
    assert os.path.isdir(folder), f"generated/{name} is missing"
    files, _, _ = build_sources(scleron.load_model(example(f"{name}.yaml")), name,
                                functions=FUNCTIONS)
    for fname, text in files.items():
        path = os.path.join(folder, fname)
        assert os.path.isfile(path), f"generated/{name}/{fname} is missing"
        with open(path) as fh:
            current = fh.read() == text     # (a bare == in the assert: pytest diffs 100k-line files for minutes)
        assert current, f"generated/{name}/{fname} is stale: regenerate (see this file's docstring)"


def test_no_build_products_are_committed():
    import subprocess
    try:
        tracked = subprocess.run(["git", "ls-files", "generated"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    assert tracked, "generated/ has no tracked files"
    assert not [p for p in tracked if p.endswith(BINARY_SUFFIXES) or "__pycache__" in p]


MODELS_FOR_COMPILERS = [("branched", {"functions": ["+fdd", "idd", "minv"]}),
                        ("rc50", {"method": 2, "mass_matrix": "loop",
                                  "functions": ["fd", "id", "mass", "fdd", "idd", "minv",
                                                "frame_jacobians", "frame_placements"]})]


@pytest.fixture(scope="module")
def written_sources(tmp_path_factory):
    """NAME_dynamics.c/.h of models covering every function family and loop form: branched
    (every joint type, the default functions and the derivatives' product loops), rc50 (the frame
    loops, Method II, the mass, pair, chain product and M^-1 loops), each in a folder of its own."""
    root = tmp_path_factory.mktemp("sources")
    for name, options in MODELS_FOR_COMPILERS:
        files, _, _ = build_sources(scleron.load_model(example(f"{name}.yaml")), name, **options)
        (root / name).mkdir()
        for fname, text in files.items():
            if fname.endswith((".c", ".h")) and not fname.endswith("_python.c"):
                (root / name / fname).write_text(text)
    return root


def compiles_cleanly(command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr[:2000]


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="no gcc/g++")
def test_the_generated_c_compiles_without_warnings_as_c_and_cpp(written_sources):
    """-Wall -Wextra -pedantic, C99 and C++ (a C++-only build compiles NAME_dynamics.c as C++:
    `restrict` is the one word C++ lacks): an outside tester's -Werror build failed on
    unused parameters (a frame fixed to the world reads no q; Method II kernels of one joint
    class, the world-frame Jacobians' columns); a reviewer's, on M^-1's one-step kernels that
    every step's run made unused."""
    for name, _ in MODELS_FOR_COMPILERS:
        source = f"{name}/{name}_dynamics.c"
        # compiled, not -fsyntax-only: that does not see an unused static function
        compiles_cleanly(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-O0", "-c", "-o",
                          os.devnull, f"-I{name}", source], written_sources)
        compiles_cleanly(["g++", "-x", "c++", "-Wall", "-Wextra", "-fsyntax-only", f"-I{name}",
                          source], written_sources)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_two_models_whose_names_differ_in_case_declare_both(written_sources):
    """ur5 and UR5 in one program: both headers had the include guard UR5_DYNAMICS_H, so the
    second was skipped and its functions undeclared (an outside tester's C build)."""
    files, _, _ = build_sources(scleron.load_model(example("branched.yaml")), "Branched",
                                functions=["fd"])
    (written_sources / "Branched_dynamics.h").write_text(files["Branched_dynamics.h"])
    (written_sources / "both.c").write_text(
        '#include "Branched_dynamics.h"\n#include "branched/branched_dynamics.h"\n'
        "void f(const double *q, const double *qd, const double *tau, double *qdd)\n"
        "{ Branched_forward_dynamics(q, qd, tau, qdd); branched_forward_dynamics(q, qd, tau, qdd); }\n")
    compiles_cleanly(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-fsyntax-only",
                      "-Werror=implicit-function-declaration", "both.c"], written_sources)
    # two models of other sizes: their BRANCHED_NQ... would differ, an #error says so
    files, _, _ = build_sources(scleron.load_model(example("rc20.yaml")), "Branched",
                                functions=["fd"])
    (written_sources / "Branched_dynamics.h").write_text(files["Branched_dynamics.h"])
    done = subprocess.run(["gcc", "-std=c99", "-fsyntax-only", "both.c"], cwd=written_sources,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "BRANCHED_NQ/_NV/_NFRAMES/_NWRENCHES are defined otherwise " \
        "by another model's header, of a name that differs from 'branched' only in case" \
        in done.stderr


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_several_models_compile_as_one_translation_unit(written_sources):
    """A unity build (CMake's UNITY_BUILD) #includes several models' .c files in one: the shared
    static helpers (scl_sincos, the guarded series) were defined twice (an outside tester)."""
    unity = written_sources / "unity.c"
    unity.write_text("".join(f'#include "{n}/{n}_dynamics.c"\n' for n, _ in MODELS_FOR_COMPILERS))
    compiles_cleanly(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-fsyntax-only",
                      *[f"-I{n}" for n, _ in MODELS_FOR_COMPILERS], "unity.c"], written_sources)
    # as C++, with code after them that names a parameter restrict (an ordinary identifier
    # there, which the files' own #define restrict __restrict__ broke: an outside tester)
    unity = written_sources / "unity.cpp"
    unity.write_text("".join(f'#include "{n}/{n}_dynamics.c"\n' for n, _ in MODELS_FOR_COMPILERS)
                     + "static int after(int restrict) { return restrict; }\n"
                     + "int use_after(void) { return after(0); }\n")
    compiles_cleanly(["g++", "-Wall", "-Wextra", "-fsyntax-only",
                      *[f"-I{n}" for n, _ in MODELS_FOR_COMPILERS], "unity.cpp"], written_sources)
