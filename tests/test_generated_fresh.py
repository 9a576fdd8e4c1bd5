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


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
@pytest.mark.parametrize("name, options", [("branched", {}),
                                            ("rc50", {"method": 2, "mass_matrix": "loop"})])
def test_the_generated_c_compiles_as_cpp_too(name, options, tmp_path):
    """A C++-only build (a CMake project of C++ sources) compiles NAME_dynamics.c as C++: every
    function family (frames, derivatives, loop forms) passes g++ without a warning; C99's
    `restrict` is the one word C++ lacks."""
    files, _, _ = build_sources(scleron.load_model(example(f"{name}.yaml")), name, **options)
    for fname, text in files.items():
        if fname.endswith((".c", ".h")) and not fname.endswith("_python.c"):
            (tmp_path / fname).write_text(text)
    done = subprocess.run(["g++", "-fsyntax-only", "-Wall", "-x", "c++", f"{name}_dynamics.c"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr[:2000]
