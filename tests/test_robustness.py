"""Generated output is never lost, half-written or stale; compiler trouble is one clear line;
nothing from a model file is run as code, in Python or in the generated C.

All on a 2-body model written here (a compile takes about a second).
"""
import ast
import copy
import glob
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tokenize

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import scleron
from scleron import pipeline
from scleron.backends import folders as build
from scleron.dynamics import recursions
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree

from conftest import ROOT

SRC = os.path.join(ROOT, "src", "scleron")

TINY = """\
name: tiny
bodies:
  - name: a
    parent: world
    joint: {{name: ja, type: revolute, axis: [0, 0, 1]}}
    mass: 1.0
    com: [0.1, 0, 0]
    inertia: [0.01, 0.02, 0.02]
  - name: b
    parent: a
    joint: {{name: jb, type: revolute, axis: [0, 1, 0], xyz: [0.5, 0, 0]}}
    mass: {mass}
    com: [0.2, 0, 0.05]
    inertia: [0.01, 0.02, 0.02]
"""
Q = np.array([0.3, -0.7])
# what the build and cache tests generate: their subject is the folder, not the functions (the
# defaults of a two-coordinate model would triple each compile)
FEW = ["forward_dynamics", "mass_matrix"]
FEW_CLI = ["--functions", "fd,mass"]


def tiny(tmp_path, mass=2.0, fname="tiny.yaml"):
    path = tmp_path / fname
    path.write_text(TINY.format(mass=mass))
    return str(path)


def reference_M(path):
    tree = Tree(scleron.load_model(path))
    return np.array(recursions.mass_matrix(tree, FloatAlgebra(), list(Q)))


def cli(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "scleron", *args], capture_output=True, text=True,
                          env=env, cwd=cwd or ROOT, timeout=300)


def one_line_error(r):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("scleron: error: ")
    return lines[0]


def debris(folder):
    """Temporary or displaced folders generation may leave next to folder."""
    parent, base = os.path.split(os.path.abspath(folder))
    return sorted(n for n in os.listdir(parent) if n.startswith(f".{base}.tmp-") or n.startswith(f".{base}.old-"))


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# ---- atomic install, concurrency, kill -9 --------------------------------------------------------
def test_concurrent_codegen_into_one_folder(tmp_path):
    """Three `scleron codegen` processes on one model and folder at once, while a fourth
    process keeps loading the folder: all succeed, one valid result, no debris."""
    path = tiny(tmp_path)
    out = tmp_path / "gen" / "tiny"
    reader = subprocess.Popen([sys.executable, "-c", """
import sys, time, scleron
out, stop = sys.argv[1], sys.argv[2]
import os
loads = 0
while not os.path.exists(stop):
    if os.path.exists(os.path.join(out, "scleron.json")) or loads:
        m = scleron.load_generated(out)      # must never see a folder mid-swap
        assert m.nv == 2
        loads += 1
    time.sleep(0.01)
print(loads)
""", str(out), str(tmp_path / "stop")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs = [subprocess.Popen([sys.executable, "-m", "scleron", "codegen", path, "-o", str(out), "--force",
                               *FEW_CLI],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    (tmp_path / "stop").write_text("")
    r_out, r_err = reader.communicate(timeout=60)
    for stdout, stderr, rc in results:
        assert rc == 0, stderr
        assert "nq = nv = 2" in stdout
    assert reader.returncode == 0, r_err
    assert int(r_out) >= 1
    assert debris(out) == []
    assert os.listdir(out) and not [n for n in os.listdir(out) if n.startswith(("_build", "build.log"))]
    meta = json.loads((out / "scleron.json").read_text())
    dyn = scleron.load_generated(str(out))
    assert dyn.HASH == meta["hash"]
    assert np.allclose(dyn.mass_matrix(Q), reference_M(path), rtol=1e-12, atol=1e-14)


def test_a_folder_replaced_during_its_import_or_generation_is_said_so(tmp_path):
    """An outside tester: a plain `import` that read the old __init__.py while a concurrent
    codegen swapped the folder compiled the new code for nothing and died of an IndexError; a
    generate() whose folder another generation replaced returned the other model; and the
    model-file record could name the wrong model. Replayed deterministically here."""
    from scleron.backends.c.build import load_package
    from scleron.backends.folders import MODEL_FILE_RECORD, record_model_file
    out = tmp_path / "gen" / "tiny"
    light, heavy = tiny(tmp_path), tiny(tmp_path, mass=5.0, fname="heavy.yaml")
    scleron.generate(light, str(out), functions=FEW)
    old_init = (out / "__init__.py").read_text()
    key = json.loads((out / "scleron.json").read_text())["hash"]
    scleron.generate(heavy, str(out), functions=FEW)          # another generation in its place
    (out / "stale_init.py").write_text(old_init)              # the __init__.py Python had read
    spec = importlib.util.spec_from_file_location("stale_tiny", out / "stale_init.py",
                                                  submodule_search_locations=[str(out)])
    with pytest.raises(ImportError, match="was replaced by a new generation .* import it again"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert not [n for n in os.listdir(out) if n.startswith((".build-", "_build"))]
    (out / "stale_init.py").unlink()
    with pytest.raises(scleron.BuildError, match="replaced by another generation while this one ran"):
        load_package(str(out), expect=key)
    record = json.loads((out / MODEL_FILE_RECORD).read_text())
    record_model_file(str(out), light, key)                   # the light model's record: not here
    assert json.loads((out / MODEL_FILE_RECORD).read_text()) == record
    assert record["path"].endswith("heavy.yaml")


def test_the_edit_warning_says_whether_the_module_holds_the_edits(tmp_path):
    """An outside tester: after the README's `python build_NAME.py` by hand on an edited source,
    load_generated warned that the edits were not in the module, which held them."""
    out = tmp_path / "gen" / "tiny"
    scleron.generate(tiny(tmp_path), str(out), functions=FEW)
    c_file = out / "tiny_dynamics.c"
    c_file.write_text(c_file.read_text().replace("/* ", "/* edited: ", 1))
    built = max(os.stat(p).st_mtime_ns for p in glob.glob(str(out / "_tiny_*.so")))
    os.utime(c_file, ns=(built + 10**6, built + 10**6))     # edited just after the build
    with pytest.warns(UserWarning, match="older than the edits and does not hold them"):
        scleron.load_generated(str(out))
    r = subprocess.run([sys.executable, "build_tiny.py"], cwd=out, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with pytest.warns(UserWarning, match="compiled after the last edit .* and holds it"):
        scleron.load_generated(str(out))


def test_a_bad_build_jobs_variable_is_one_line(tmp_path):
    """SCLERON_BUILD_JOBS=abc: codegen said `compiling tiny failed: ValueError: invalid literal
    ...` from inside the build script (scleron itself ignored the value); now both name it."""
    out = tmp_path / "gen" / "tiny"
    env = dict(os.environ, SCLERON_BUILD_JOBS="abc")
    line = one_line_error(cli("codegen", tiny(tmp_path), "-o", str(out), *FEW_CLI, env=env))
    assert "SCLERON_BUILD_JOBS must be a whole number of compiles at once (0: one per core), got 'abc'" in line
    assert not out.exists() and (not out.parent.exists() or debris(out) == [])
    assert cli("codegen", tiny(tmp_path), "-o", str(out), *FEW_CLI, "--no-compile").returncode == 0
    r = subprocess.run([sys.executable, "build_tiny.py"], cwd=out, capture_output=True, text=True,
                       env=dict(os.environ, SCLERON_BUILD_JOBS="-2"))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "SCLERON_BUILD_JOBS must be a whole number of compiles at once (0: one per core), got '-2'" in r.stderr
    r = subprocess.run([sys.executable, "build_tiny.py"], cwd=out, capture_output=True, text=True,
                       env=dict(os.environ, SCLERON_BUILD_JOBS="0"))     # 0: one per core, as before
    assert r.returncode == 0, r.stderr


def test_an_output_folder_name_of_250_characters(tmp_path):
    """An outside tester: names of 242-255 characters were refused ("File name too long"): the
    hidden sibling .NAME.tmp-XXXXXXXX was longer than a name may be."""
    out = tmp_path / ("a" * 250)
    for functions in (FEW, FEW + ["inverse_dynamics"]):        # generated, then replaced
        scleron.generate(tiny(tmp_path), str(out), functions=functions, compile=False)
        assert (out / "scleron.json").is_file()
    assert sorted(os.listdir(tmp_path)) == sorted(["tiny.yaml", "a" * 250])


def test_kill_9_during_compile_keeps_the_previous_result(tmp_path):
    path = tiny(tmp_path, mass=2.0)
    out = str(tmp_path / "tiny")
    scleron.generate(scleron.load_model(path), out, functions=FEW)
    before = json.loads(open(os.path.join(out, "scleron.json")).read())["hash"]
    M_before = scleron.load_generated(out).mass_matrix(Q)

    tiny(tmp_path, mass=3.0)                                  # a change: codegen must rebuild
    marker = tmp_path / "compiling"
    slowcc = script(tmp_path, "slowcc", f'touch "{marker}"\nsleep 60\nexec gcc "$@"\n')
    env = dict(os.environ, CC=slowcc)
    p = subprocess.Popen([sys.executable, "-m", "scleron", "codegen", path, "-o", out, *FEW_CLI], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        while not marker.exists():
            assert p.poll() is None, "codegen ended before it compiled"
            assert time.time() < deadline, "the compiler never started"
            time.sleep(0.05)
        assert debris(out), "the build must happen in a temporary folder"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)                      # the orphaned compiler
        except ProcessLookupError:
            pass

    # the previous result is intact and loadable; the killed run's folder is not mistaken for it
    assert json.loads(open(os.path.join(out, "scleron.json")).read())["hash"] == before
    dyn = scleron.load_generated(out)
    assert np.array_equal(dyn.mass_matrix(Q), M_before)
    left = debris(out)
    assert left and all(".tiny.tmp-" in n for n in left)

    # the next run rebuilds (the model changed) and removes the dead run's folder at once (its
    # owner process is gone: tests/test_bounded_runs.py has the rules)
    dyn = scleron.generate(scleron.load_model(path), out, functions=FEW)
    assert not np.allclose(dyn.mass_matrix(Q), M_before)
    assert np.allclose(dyn.mass_matrix(Q), reference_M(path), rtol=1e-12, atol=1e-14)
    assert debris(out) == []


def test_stale_temporary_folders(tmp_path):
    out = str(tmp_path / "m")
    stale = tmp_path / ".m.tmp-dead"
    fresh = tmp_path / ".m.tmp-young"
    other = tmp_path / ".other.tmp-dead"
    for f in (stale, fresh, other):
        f.mkdir()
        (f / "scleron.json").write_text("{}")
    old = time.time() - 2 * build.STALE_AFTER
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    held = build.make_temp_folder(out)           # this process's own build folder ...
    os.utime(held, (old, old))                   # ... is never removed, however old
    assert not stale.exists()                    # make_temp_folder cleaned the stale one
    assert fresh.exists() and other.exists() and os.path.isdir(held)
    assert build.clean_stale(out) == []
    # a stale folder is never loaded as a result
    with pytest.raises(FileNotFoundError):
        scleron.load_generated(out)
    build._release(held)
    shutil.rmtree(held)


def test_an_output_path_through_a_file_names_the_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    line = one_line_error(cli("codegen", tiny(tmp_path), "-o", str(tmp_path / "afile" / "sub"),
                              "--no-compile", *FEW_CLI))
    assert f"{tmp_path / 'afile'} is a file" in line and "Errno" not in line
    assert (tmp_path / "afile").read_text() == "x"


def test_build_folders_a_killed_compile_left_inside_are_cleaned(tmp_path):
    """A compile on import killed with kill -9 leaves its .build-* folder inside the generated
    folder; the next codegen (a cache hit) removes it once it is old, a young one stays."""
    out = tmp_path / "tiny"
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW)
    dead, young = out / ".build-dead", out / "_build-young"
    for f in (dead, young):
        f.mkdir()
        (f / "part.o").write_bytes(b"\0" * 64)
    old = time.time() - 2 * build.STALE_AFTER
    os.utime(dead, (old, old))
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW)   # cache hit
    assert not dead.exists() and young.exists()


def test_compile_on_import_without_a_compiler_is_one_clear_import_error(tmp_path):
    """A --no-compile folder imported where CC names no program: an ImportError naming the
    folder and the compiler, not a FileNotFoundError from subprocess."""
    out = tmp_path / "tiny"
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW, compile=False)
    r = subprocess.run([sys.executable, "-c", "import tiny"], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "CC": "no-such-cc-here"}, timeout=120)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode != 0 and last.startswith("ImportError: ") and str(out) in last
    assert "CC='no-such-cc-here'" in last and not list(out.glob(".build-*"))


def _compiled_once(tmp_path):
    out = tmp_path / "tiny"
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW)
    return out


def _imports_and_computes(folder):
    code = ("import tiny, numpy as np; print(repr(float(tiny.mass_matrix(np.array([0.3, -0.7]))"
            "[0, 0])), tiny._fast is not None)")
    r = subprocess.run([sys.executable, "-c", code], cwd=folder.parent, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    value, fast = r.stdout.split()
    assert np.isclose(float(value), reference_M(str(folder.parent / "tiny.yaml"))[0, 0], rtol=1e-12)
    assert fast == "True"


def _modules(out):
    return sorted(p.name for p in out.glob("*.so"))


def test_a_module_compiled_for_another_cpu_or_python_is_not_loaded_but_compiled_again(tmp_path):
    """-march=native code run on a CPU without its instructions ends the process with SIGILL (a
    folder copied to another machine; an outside tester): each build records, per Python, the
    modules it made (new names each build) and what they need of the CPU; a CPU that lacks it,
    another Python, or a record that does not read compiles the folder again (on import, as
    through scleron) instead of loading what may not run."""
    out = _compiled_once(tmp_path)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (record_path,) = out.glob("*" + suffix[:-len(".so")] + ".*.target.json")     # one per CPU kind
    record = json.loads(record_path.read_text())
    assert "-march=native" in record["cflags"] and sorted(record["modules"]) == _modules(out)
    if record["features"] is None:
        pytest.skip("the compiler names no instruction sets here")
    assert "sse2" in record["features"] or record["machine"] != "x86_64"

    from scleron.backends.c.build import _target
    meta = json.loads((out / "scleron.json").read_text())
    record_path.write_text("{not json")                           # this Python's: said so
    assert "does not read as one" in _target(str(out), meta).problem()
    record_path.write_text(json.dumps(record))

    def spoil(value):
        before = _modules(out)
        record_path.write_text(value if isinstance(value, str) else json.dumps(value))
        return before
    other_cpu = dict(record, features=record["features"] + ["avx512f", "fma4", "xop", "sve2"])
    cases = [other_cpu, dict(record, features=[["x"]]), dict(record, machine="riscv128"),
             "{not json", dict(record, modules=["../elsewhere.so"])]
    for k, value in enumerate(cases):
        before = spoil(value)
        if k % 2:
            scleron.load_generated(str(out))                      # compiled again by scleron
        else:
            _imports_and_computes(out)                            # or on import
        assert _modules(out) != before and len(_modules(out)) == 2, value
        assert json.loads(record_path.read_text())["modules"] == _modules(out)
    os.remove(record_path)                                        # and without a record at all
    before = _modules(out)
    _imports_and_computes(out)
    assert _modules(out) != before
    for p in out.glob("*" + suffix):                              # only another Python's
        p.rename(str(p)[:-len(suffix)] + suffix.replace(sys.implementation.cache_tag, "cpython-30"))
    record_path.rename(str(record_path).replace(sys.implementation.cache_tag, "cpython-30"))
    _imports_and_computes(out)
    assert len(list(out.glob("*" + suffix))) == 2 and len(list(out.glob("*.target.json"))) == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_record_that_is_a_pipe_is_no_wait(tmp_path):
    """A FIFO at the record's place made every import wait for a writer."""
    out = _compiled_once(tmp_path)
    record_path = next(out.glob("*.target.json"))
    os.remove(record_path)
    os.mkfifo(record_path)
    r = subprocess.run([sys.executable, "-c", "import tiny"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr                  # (compiled again: the pipe replaced)


def test_a_folder_built_for_a_cpu_this_one_is_not_is_refused_here_not_run(tmp_path):
    """codegen --march bdver1 (AMD's FMA4 and XOP) built, and the first call ended the process
    in SIGILL (an outside tester): the record names what the named CPU has, and here the load
    says what this one lacks; the folder is written, for a machine that runs it (codegen warns
    and succeeds; a load raises)."""
    flags = open("/proc/cpuinfo").read() if os.path.isfile("/proc/cpuinfo") else ""
    if " xop" in flags or " fma4" in flags or "flags" not in flags:
        pytest.skip("this CPU has XOP/FMA4, or its features cannot be read")
    out = tmp_path / "tiny"
    r = cli("codegen", tiny(tmp_path), "-o", str(out), "--march", "bdver1", *FEW_CLI)
    if "unrecognized" in r.stderr or "bad value" in r.stderr:
        pytest.skip("this compiler has no bdver1")
    # what was asked for: a warning, exit 0 (it was an error: a CI job building for another CPU
    # failed; an outside tester)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    line, = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert line.startswith("scleron: warning: ") and "-> " in r.stdout
    assert "compiled for a CPU with instructions this one lacks (" in line and "fma4" in line
    assert "the folder is written" in line and _modules(out)
    built = _modules(out)
    done = subprocess.run([sys.executable, "-c", "import tiny"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1 and "ImportError" in done.stderr and "fma4" in done.stderr
    assert "it does not run here" in done.stderr and _modules(out) == built   # no compile: futile
    with pytest.raises(scleron.BuildError, match="it does not run here"):
        scleron.load_generated(str(out))
    assert _modules(out) == built


def test_where_the_cpu_cannot_be_read_a_native_build_loads_on_its_own_machine(tmp_path):
    """An outside reviewer: where /proc/cpuinfo cannot be read (macOS, Windows), a native
    build's record named no processor, and every import compiled again and failed 'on another
    processor (None)'. Simulated by a target script whose cpu_features() reads nothing."""
    out = tmp_path / "tiny"
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW, compile=False)
    script = out / "tiny_target.py"
    script.write_text(script.read_text().replace('def cpu_features():\n', 'def cpu_features():\n'
                                                 '    return None\n', 1))
    meta = json.loads((out / "scleron.json").read_text())
    del meta["sources"]                             # (compiling the edited script on purpose)
    (out / "scleron.json").write_text(json.dumps(meta))
    _imports_and_computes(out)                      # compiles
    built = _modules(out)
    (record_path,) = out.glob("*.target.json")
    assert json.loads(record_path.read_text())["cpu"]
    _imports_and_computes(out)                      # and loads, without compiling again
    assert _modules(out) == built


@pytest.mark.skipif(build.fcntl is None, reason="no flock here")
def test_a_hand_run_build_holds_the_folder_and_clears_what_killed_builds_left(tmp_path):
    """`python build_NAME.py` took no lock (a concurrent codegen removed its build folder
    mid-compile); it waits for the folder's holder now, and removes the .build-* folders of
    builds killed an hour ago (not CUDA's, which take no lock)."""
    out = _compiled_once(tmp_path)
    old, cuda = out / ".build-killed", out / ".build-cuda-killed"
    for d in (old, cuda):
        d.mkdir()
        os.utime(d, (time.time() - 7200, time.time() - 7200))
    fd = os.open(out, os.O_RDONLY)
    build.fcntl.flock(fd, build.fcntl.LOCK_EX)
    try:
        hand = subprocess.Popen([sys.executable, "build_tiny.py"], cwd=out,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with pytest.raises(subprocess.TimeoutExpired):
            hand.wait(timeout=2)                    # waits for the holder
    finally:
        os.close(fd)
    assert hand.wait(timeout=300) == 0, hand.stderr.read()[-2000:]
    assert not old.exists() and cuda.exists()
    _imports_and_computes(out)


def test_a_compiler_that_lists_no_macros_or_a_folder_at_the_records_place(tmp_path):
    """An outside tester: where `cc -dM -E` failed, the record named no instruction sets and a
    --march bdver1 build loaded on an Intel CPU (SIGILL); a native build now records this CPU's
    features, a named CPU's unknown needs refuse the load. A folder at the record's place made
    every compile fail."""
    nodm = tmp_path / "nodm"
    nodm.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = -dM ] && exit 1; done\n'
                    f'exec {shutil.which("gcc") or "cc"} "$@"\n')
    nodm.chmod(0o755)
    env = dict(os.environ, CC=str(nodm))
    out = tmp_path / "tiny"
    assert cli("codegen", tiny(tmp_path), "-o", str(out), *FEW_CLI, env=env).returncode == 0
    (record_path,) = out.glob("*.target.json")
    record = json.loads(record_path.read_text())
    if os.path.isfile("/proc/cpuinfo"):
        assert record["features"] and "sse2" in record["features"] or record["machine"] != "x86_64"
    _imports_and_computes(out)
    other = tmp_path / "other" / "tiny"
    r = cli("codegen", tiny(tmp_path), "-o", str(other), "--march", "x86-64-v2", *FEW_CLI, env=env)
    # an error, not the warning of a folder built for another CPU: this one loads nowhere
    assert "could not be listed when it was compiled" in one_line_error(r)
    for p in out.glob("*.target.json"):                 # a folder where the record goes
        p.unlink()
        p.mkdir()
    _imports_and_computes(out)
    assert all(p.is_file() for p in out.glob("*.target.json"))


def test_a_folder_without_its_records_script_or_json_is_named_and_a_lock_that_fails_is_no_error(tmp_path):
    """An outside reviewer: load_generated of a folder without scleron.json compiled inside the
    package's __init__ while holding the parent's lock (the opposite order to an install's:
    a deadlock); an older scleron's folder (no NAME_target.py) compiled, then gave wrong advice;
    a flock that fails (NFS) was a raw OSError on import."""
    out = _compiled_once(tmp_path)
    flocks_fail = ("import fcntl\ndef flock(*a):\n    raise OSError(9, 'Bad file descriptor')\n"
                   "fcntl.flock = flock\nimport tiny, numpy as np\n"
                   "print(tiny.mass_matrix(np.array([0.3, -0.7]))[0, 0])\n")
    for p in out.glob("*.target.json"):
        p.unlink()                                  # (so that the import compiles)
    r = subprocess.run([sys.executable, "-c", flocks_fail], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    (out / "tiny_target.py").unlink()              # as an older scleron wrote it: not a source
    meta = json.loads((out / "scleron.json").read_text())
    del meta["sources"]["tiny_target.py"]
    (out / "scleron.json").write_text(json.dumps(meta))
    with pytest.raises(scleron.BuildError, match="tiny_target.py is missing or does not load.*codegen --force"):
        scleron.load_generated(str(out))
    (out / "scleron.json").unlink()
    with pytest.raises(scleron.BuildError, match="scleron.json is missing or does not read"):
        scleron.load_generated(str(out))


def test_a_failed_compile_on_import_is_an_import_error_and_march_picks_the_target(tmp_path):
    """The package's compile on import raised RuntimeError when the compiler failed (an
    `except ImportError` around the import missed it); --march builds for a named CPU."""
    out = tmp_path / "tiny"
    r = cli("codegen", tiny(tmp_path), "-o", str(out), "--no-compile", "--march", "x86-64-v2",
            *FEW_CLI)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert "'-march=x86-64-v2'" in (out / "build_tiny.py").read_text()
    # a name this machine's compiler does not know: written (another architecture's CPU is
    # such a name), with a warning (it was silent, and the folder failed at its import)
    r = cli("codegen", tiny(tmp_path), "-o", str(tmp_path / "odd"), "--no-compile", "--march",
            "nonexistentcpu", *FEW_CLI)
    assert r.returncode == 0 and (tmp_path / "odd" / "build_tiny.py").is_file()
    assert r.stderr.startswith("scleron: warning: --march nonexistentcpu: this machine's C "
                               "compiler does not know it") and len(r.stderr.splitlines()) == 1
    failing = tmp_path / "failing-cc"
    failing.write_text("#!/bin/sh\necho 'cc: error: no' >&2\nexit 1\n")
    failing.chmod(0o755)
    r = subprocess.run([sys.executable, "-c", "import tiny"], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "CC": str(failing)}, timeout=120)
    last = r.stderr.strip().splitlines()
    assert any(ln.startswith("ImportError: ") and "compiling it failed" in ln for ln in last), r.stderr
    assert "RuntimeError" not in r.stderr
    one_line_error(cli("codegen", tiny(tmp_path), "-o", str(out), "--march", "x86-64;ls"))


@pytest.mark.skipif(build.fcntl is None, reason="no flock here")
def test_a_load_that_compiles_leaves_the_folders_siblings_free(tmp_path, monkeypatch):
    """load_generated of a folder without its module compiled under the lock of the folder's
    parent: every codegen and load beside it waited for the whole compile (minutes for a large
    model; an outside tester: 48 s instead of 4). The compile now holds the folder itself."""
    import threading
    out = tmp_path / "tiny"
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW, compile=False)
    started, release = tmp_path / "started", tmp_path / "release"
    wrapper = tmp_path / "slow-cc"
    wrapper.write_text(f"#!/bin/sh\ntouch {started}\nwhile [ ! -e {release} ]; do sleep 0.05; done\n"
                       f"exec {shutil.which('gcc') or 'cc'} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    loaded = {}
    worker = threading.Thread(target=lambda: loaded.update(m=scleron.load_generated(str(out))))
    worker.start()
    try:
        for _ in range(1200):
            if started.exists():
                break
            time.sleep(0.05)
        assert started.exists(), "the compiler never started"
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            build.fcntl.flock(fd, build.fcntl.LOCK_EX | build.fcntl.LOCK_NB)   # free: no wait
        finally:
            os.close(fd)
    finally:
        release.touch()
        worker.join(300)
    assert np.isclose(loaded["m"].mass_matrix(Q)[0, 0], reference_M(str(tmp_path / "tiny.yaml"))[0, 0],
                      rtol=1e-12)


def test_interrupted_install_is_repaired(tmp_path):
    """A run killed between `out -> .out.old-*` and `tmp -> out` leaves no out folder: the next
    load (or install) puts the previous result back."""
    path = tiny(tmp_path)
    out = str(tmp_path / "tiny")
    scleron.generate(scleron.load_model(path), out, compile=False)
    os.rename(out, str(tmp_path / ".tiny.old-deadbeef"))
    dyn = scleron.load_generated(out)            # recovered (and compiled on first load)
    assert dyn.nv == 2 and debris(out) == []
    assert np.allclose(dyn.mass_matrix(Q), reference_M(path), rtol=1e-12, atol=1e-14)
    assert not [n for n in os.listdir(out) if n.startswith(("_build", "build.log"))]
    # the next generation, too, finds it before its cache check: no new generation (an outside
    # tester: codegen regenerated and recompiled everything, then put the old folder back
    # only to replace it)
    os.rename(out, str(tmp_path / ".tiny.old-0badcafe"))
    report = pipeline.Report("tiny", 2)
    scleron.generate(scleron.load_model(path), out, compile=False, report=report)
    assert report.cache_hit and debris(out) == []


def test_never_replaces_a_folder_scleron_did_not_write(tmp_path):
    precious = tmp_path / "docs"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(scleron.BuildError, match="refusing to replace"):
        scleron.generate(scleron.load_model(tiny(tmp_path)), str(precious), compile=False)
    assert (precious / "thesis.tex").read_text() == "years of work"
    assert debris(precious) == []
    r = cli("codegen", tiny(tmp_path), "-o", str(precious), "--no-compile")
    assert "refusing to replace" in one_line_error(r)
    # `-o build/` for build/NAME (an outside tester): the way out is said
    assert f"a new one inside it, such as {precious / 'NAME'}, is fine" in one_line_error(r)
    assert sorted(os.listdir(precious)) == ["thesis.tex"]


def test_never_deletes_what_the_user_put_into_a_generated_folder(tmp_path):
    """A generated folder the user keeps the model, notes or a .git in is refused, not
    replaced (replacing it used to delete them silently); a link to a folder is named as one."""
    out = tmp_path / "keep"
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW)
    (out / "my_model.yaml").write_text(open(tiny(tmp_path)).read())
    (out / ".git").mkdir()
    (out / "NOTES.txt").write_text("mine")
    line = one_line_error(cli("codegen", str(out / "my_model.yaml"), "-o", str(out), "--force",
                              *FEW_CLI))
    assert "scleron did not write (.git, NOTES.txt, my_model.yaml)" in line
    assert {"my_model.yaml", ".git", "NOTES.txt", "scleron.json"} <= set(os.listdir(out))
    assert scleron.load_generated(str(out)).nv == 2 and debris(out) == []
    for name in (".git", "NOTES.txt", "my_model.yaml"):       # scleron's own files alone: replaced
        shutil.rmtree(out / name) if name == ".git" else os.remove(out / name)
    assert cli("codegen", tiny(tmp_path), "-o", str(out), "--force", *FEW_CLI).returncode == 0
    link = tmp_path / "link"
    link.symlink_to(out, target_is_directory=True)
    line = one_line_error(cli("codegen", tiny(tmp_path), "-o", str(link), "--force", *FEW_CLI))
    assert "is a symbolic link" in line and "no scleron.json" not in line


def test_a_full_disk_is_named_in_a_failed_compile():
    """A compile on a full disk failed with the error of a later step (cffi reading back the
    file it could not write: "No such file or directory"), the cause only in the log (an outside
    tester, on a 400 kB file system). The one-line message names it now."""
    from scleron.backends.c.build import _hint, first_error
    log = ("generating /out/_build-x/_small.c\nTraceback (most recent call last):\n"
           "FileNotFoundError: [Errno 2] No such file or directory: '/out/_build-x/_small.c'\n"
           "During handling of the above exception, another exception occurred:\n"
           "    f1.write(output)\nOSError: [Errno 28] No space left on device\n")
    assert first_error(log) == "OSError: [Errno 28] No space left on device"
    assert "disk holding the output folder is full" in _hint(log)
    assert _hint("error: expected ';'") is None


def test_a_scleron_json_of_the_users_own_protects_the_folder(tmp_path):
    """Only a scleron.json scleron wrote makes a folder scleron's to replace (an outside tester:
    a folder with a scleron.json of its own, or of a scleron that listed no sources, was wiped
    with its notes, data and .git, silently); a record without its list of sources protects
    every other entry."""
    for text in ("not json at all", '{"my": "settings"}', "[1, 2]"):
        out = tmp_path / "mine"
        out.mkdir()
        (out / "scleron.json").write_text(text)
        (out / "notes.txt").write_text("mine")
        with pytest.raises(scleron.BuildError, match="scleron did not write.*refusing to replace"):
            scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW,
                             compile=False)
        assert sorted(os.listdir(out)) == ["notes.txt", "scleron.json"]
        assert (out / "scleron.json").read_text() == text and debris(out) == []
        shutil.rmtree(out)
    out = tmp_path / "old"                  # a generated folder as a scleron before 11-23 left it
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(out), functions=FEW, compile=False)
    meta = json.loads((out / "scleron.json").read_text())
    del meta["sources"]
    (out / "scleron.json").write_text(json.dumps(meta))
    (out / "data.csv").write_text("1, 2")
    before = sorted(os.listdir(out))
    line = one_line_error(cli("codegen", tiny(tmp_path, mass=3.0), "-o", str(out), *FEW_CLI))
    assert "does not list the files scleron wrote" in line and "data.csv" in line, line
    assert sorted(os.listdir(out)) == before and debris(out) == []


# ---- the cache -----------------------------------------------------------------------------------
def test_cache_hit_only_when_nothing_changed(tmp_path, monkeypatch):
    path = tiny(tmp_path, mass=2.0)
    out = str(tmp_path / "tiny")

    def gen(p=path, **kw):
        rep = pipeline.Report("tiny", 2)
        dyn = scleron.generate(scleron.load_model(p), out, report=rep, **{"functions": FEW, **kw})
        return rep.cache_hit, dyn

    hit, dyn = gen()
    assert not hit
    M2 = dyn.mass_matrix(Q)
    hit, dyn = gen()
    assert hit and np.array_equal(dyn.mass_matrix(Q), M2)
    # a model change: regenerated, and the numbers follow
    hit, dyn = gen(tiny(tmp_path, mass=5.0))
    assert not hit
    M5 = dyn.mass_matrix(Q)
    assert not np.allclose(M5, M2) and np.allclose(M5, reference_M(path), rtol=1e-12, atol=1e-14)
    # option changes (no compile needed to see the decision)
    assert not gen(chunk=7, compile=False)[0]
    assert gen(chunk=7, compile=False)[0]
    assert not gen(cflags=["-O1", "-std=c99"], compile=False)[0]
    assert gen(cflags="-O1  -std=c99", compile=False)[0]     # one string: the same flags (it
    with pytest.raises(TypeError, match="cflags must be"):   # was gcc '-' 'O' '1' ...)
        gen(cflags=1, compile=False)
    with pytest.raises(TypeError, match="functions must be"):
        gen(functions=5, compile=False)
    # a scleron version change, a template change
    monkeypatch.setattr(pipeline, "__version__", "999.0")
    assert not gen(compile=False)[0]
    texts = pipeline.template_texts()
    monkeypatch.setattr(pipeline, "template_texts", lambda: {**texts, "x.j2": "changed"})
    assert not gen(compile=False)[0]
    monkeypatch.undo()
    # a change to the generating code (a recursion, a spec, a printer), not to the templates
    monkeypatch.setattr(pipeline, "source_fingerprint", lambda: "other code")
    assert not gen(compile=False)[0]
    monkeypatch.undo()
    # back to the first state: loads compile what --no-compile left
    hit, dyn = gen(tiny(tmp_path, mass=2.0))
    assert not hit and np.allclose(dyn.mass_matrix(Q), M2, rtol=1e-13, atol=1e-15)


def test_cache_key_covers_every_model_field(tmp_path):
    model = scleron.load_model(tiny(tmp_path))
    opts = {"name": "tiny", "chunk": 1000, "cflags": []}
    key = pipeline.cache_key(model, opts)

    def changed(edit):
        m = scleron.load_model(tiny(tmp_path))
        edit(m)
        return pipeline.cache_key(m, opts) != key

    assert pipeline.cache_key(scleron.load_model(tiny(tmp_path)), opts) == key
    edits = {
        "mass": lambda m: setattr(m.bodies[1].inertia, "mass", 2.0000001),
        "com": lambda m: m.bodies[1].inertia.com.__setitem__(2, 0.0500001),
        "inertia": lambda m: m.bodies[0].inertia.inertia.__setitem__((0, 0), 0.0100001),
        "gravity": lambda m: m.gravity.__setitem__(2, -9.80),
        "axis": lambda m: m.joints[1].params.__setitem__("axis", (0.0, 0.0, 1.0)),
        "type": lambda m: setattr(m.joints[1], "type", "prismatic"),
        "origin_t": lambda m: m.joints[1].origin.translation.__setitem__(0, 0.5000001),
        "origin_R": lambda m: setattr(m.joints[1].origin, "rotation", m.joints[1].origin.rotation[[1, 0, 2]]),
        "parent": lambda m: setattr(m.joints[1], "parent", "world"),
        "body_name": lambda m: setattr(m.bodies[1], "name", "c"),
        "joint_name": lambda m: setattr(m.joints[1], "name", "jc"),
        "model_name": lambda m: setattr(m, "name", "tiny2"),
    }
    for what, edit in edits.items():
        assert changed(edit), what
    for opt in ({"name": "tiny2"}, {"chunk": 999}, {"cflags": ["-O3"]}):
        assert pipeline.cache_key(model, {**opts, **opt}) != key, opt


# ---- a missing or failing C compiler -------------------------------------------------------------
def test_missing_compiler_is_one_clear_line(tmp_path, monkeypatch):
    path = tiny(tmp_path)
    out = tmp_path / "made" / "for" / "tiny"
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(scleron.BuildError) as e:
        scleron.generate(scleron.load_model(path), str(out))
    assert "/nonexistent/cc" in str(e.value) and "install" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "made").exists()                  # no folder, no parents, no debris
    monkeypatch.delenv("CC")

    # no CC and no compiler on PATH: the command line says what to install
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    env["PATH"] = str(tmp_path / "empty-bin")
    out = tmp_path / "new" / "deeper" / "tiny"
    line = one_line_error(cli("codegen", path, "-o", str(out), env=env))
    assert "no C compiler found" in line and "apt-get install gcc" in line
    assert not (tmp_path / "new").exists()                   # nothing left, not even parents


def test_the_fast_extension_is_optional_and_the_wrappers_unoptimised_only_beside_it(tmp_path, monkeypatch):
    """The fast extension compiles beside the parts; where it fails, the cffi module alone
    serves every call, its wrappers then compiled with the optimised flags (the hot path)."""
    monkeypatch.delenv("SCLERON_OPT", raising=False)       # the shipped flags
    path = tiny(tmp_path)
    log = tmp_path / "cc.log"
    logcc = script(tmp_path, "logcc", f'echo "$@" >> "{log}"\nexec gcc "$@"\n')
    nofast = script(tmp_path, "nofast", f'echo "$@" >> "{log}"\n'
                    'case "$*" in *_python.c*) exit 1;; esac\nexec gcc "$@"\n')
    want = reference_M(path)
    for cc, fast in ((logcc, True), (nofast, False)):
        log.write_text("")
        out = str(tmp_path / ("fast" if fast else "alone"))
        r = cli("codegen", path, "-o", out, *FEW_CLI, env=dict(os.environ, CC=cc))
        assert r.returncode == 0, r.stderr
        dyn = scleron.load_generated(out)
        assert (dyn._fast is not None) == fast
        assert np.allclose(dyn.mass_matrix(Q), want, rtol=1e-12, atol=1e-14)
        assert np.allclose(dyn.mass_matrix(np.stack([Q, Q]))[1], want, rtol=1e-12, atol=1e-14)
        wrapper = [ln for ln in log.read_text().splitlines()
                   if re.search(r"_tiny_\w+\.c\b", ln) and " -c " in f" {ln} "]
        # compiled beside the parts at -O0, and once more optimised where the fast one failed
        assert len(wrapper) == (1 if fast else 2), log.read_text()
        assert ("-O0" in wrapper[-1].split()) == fast and ("-Os" in wrapper[-1].split()) != fast
    # a fast extension the record names but the folder lost is built again, not silently
    # left out (calls were about 1 us slower with no word); one that never built is not sought
    for p in (tmp_path / "fast").glob("*_py.*.so"):
        p.unlink()
    assert scleron.load_generated(str(tmp_path / "fast"))._fast is not None
    before = sorted(p.name for p in (tmp_path / "alone").glob("*.so"))
    assert scleron.load_generated(str(tmp_path / "alone"))._fast is None
    assert sorted(p.name for p in (tmp_path / "alone").glob("*.so")) == before
    # without the fast extension a masked single state went to C as its hidden data (an
    # outside tester); and a masked out= kept its mask over the results: both refused, either way
    for folder in ("alone", "fast"):
        dyn = scleron.load_generated(str(tmp_path / folder))
        with pytest.raises(ValueError, match="q has masked entries"):
            dyn.mass_matrix(np.ma.masked_array(Q, mask=np.arange(Q.size) == 0))
        with pytest.raises(ValueError, match=r"out \(M\) has masked entries"):
            dyn.mass_matrix(Q, out=np.ma.masked_array(np.zeros_like(want), mask=want > want.min()))
        assert np.allclose(dyn.mass_matrix(np.ma.masked_array(Q)), want, rtol=1e-12, atol=1e-14)
        unmasked = np.ma.masked_array(np.zeros_like(want))
        assert dyn.mass_matrix(Q, out=unmasked) is unmasked
        assert np.allclose(unmasked, want, rtol=1e-12, atol=1e-14) and not np.ma.is_masked(unmasked)
        # bind took masked arrays and wrote under the mask (an outside tester)
        with pytest.raises(ValueError, match=r"out \(M\) is a masked array"):
            dyn.bind("mass_matrix", np.array(Q), np.ma.masked_array(np.zeros_like(want)))
        # a deep copy of a holder of the arrays and the bound callable: on the copy's arrays
        q, M = np.array(Q), np.zeros_like(want)
        clone = copy.deepcopy({"q": q, "M": M, "run": dyn.bind("mass_matrix", q, M)})
        clone["run"]()
        assert not M.any() and np.allclose(clone["M"], want, rtol=1e-12, atol=1e-14)


def test_compiler_error_names_the_log_and_keeps_the_old_result(tmp_path):
    path = tiny(tmp_path)
    out = str(tmp_path / "tiny")
    scleron.generate(scleron.load_model(path), out, functions=FEW)
    old_hash = json.loads(open(os.path.join(out, "scleron.json")).read())["hash"]
    badcc = script(tmp_path, "badcc", 'echo "tiny_dynamics.c:12:3: error: the sky is falling" >&2\nexit 1\n')
    env = dict(os.environ, CC=badcc)
    line = one_line_error(cli("codegen", path, "-o", out, "--force", *FEW_CLI, env=env))
    assert "compiling tiny failed" in line and "the sky is falling" in line
    log = re.search(r"full compiler output in (\S+\.build\.log)", line).group(1)
    text = open(log).read()
    assert "the sky is falling" in text and badcc in text      # the full output, commands too
    os.remove(log)
    # the previous result is untouched, no debris
    assert json.loads(open(os.path.join(out, "scleron.json")).read())["hash"] == old_hash
    assert scleron.load_generated(out).nv == 2 and debris(out) == []
    # a compiler error on a fresh folder leaves no folder at all
    fresh = tmp_path / "fresh" / "tiny"
    one_line_error(cli("codegen", path, "-o", str(fresh), *FEW_CLI, env=env))
    assert not (tmp_path / "fresh").exists()
    for f in os.listdir(os.path.dirname(log)):
        if f.startswith("scleron-tiny-") and f.endswith(".build.log"):
            os.remove(os.path.join(os.path.dirname(log), f))


# ---- no code from model files --------------------------------------------------------------------
# Every call of a code-evaluating function in src/scleron, with why it never sees file text.
ALLOWED_CALLS = {
    # lambdify compiles our own derived expressions R, S, Sdot, G to numpy functions (for tools
    # and tests); model files only supply numbers and whitelisted names, never expressions text
    ("joints/charts.py", "lambdify"): "chart expressions derived by sympy",
    ("joints/library.py", "lambdify"): "JointModel.numeric: the joint's derived R, t, S, Sdot, G",
    ("kinematics.py", "lambdify"): "joint_transform: the joint library's derived R and t",
}
DANGEROUS = {"eval", "exec", "sympify", "parse_expr", "lambdify", "S", "__import__", "compile"}


def code_calls(path):
    """(name, line) of every call of a dangerous name, from the tokens (comments, strings and
    docstrings ignored; definitions like `def eval(` ignored)."""
    with open(path, "rb") as fh:
        toks = [t for t in tokenize.tokenize(fh.readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                  tokenize.DEDENT, tokenize.ENCODING)]
    out = []
    for k, t in enumerate(toks[:-1]):
        if t.type == tokenize.NAME and t.string in DANGEROUS and toks[k + 1].string == "(":
            prev = toks[k - 1].string if k else ""
            if prev in ("def", "class"):
                continue
            if t.string == "compile" and prev == ".":        # re.compile, ffi.compile
                continue
            if t.string == "S" and prev != ".":
                continue
            out.append((t.string, t.start[0]))
    return out


def test_no_eval_exec_sympify_on_file_text():
    found = {}
    for root, _, files in os.walk(SRC):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), SRC).replace(os.sep, "/")
                for name, line in code_calls(os.path.join(root, f)):
                    found.setdefault((rel, "sympify" if name == "S" else name), []).append(line)
    unexpected = {k: v for k, v in found.items() if k not in ALLOWED_CALLS}
    assert not unexpected, f"review these calls (eval/exec/sympify/... on file text?): {unexpected}"
    # the loaders parse with yaml.SafeLoader / defusedxml-style settings: never the unsafe loaders
    for root, _, files in os.walk(os.path.join(SRC, "model")):
        for f in files:
            if f.endswith(".py"):
                text = open(os.path.join(root, f)).read()
                assert not re.search(r"yaml\.(unsafe_)?load\(|FullLoader|UnsafeLoader|\bLoader=yaml\.Loader|pickle", text), f


def test_grep_finds_what_it_looks_for(tmp_path):
    """The scan above can fail: it sees calls, not comments or strings."""
    p = tmp_path / "x.py"
    p.write_text("import sympy as sp\n# eval(x)\ns = 'exec(y)'\ndef eval(a):\n    pass\n"
                 "sp.sympify(text)\nsp.S(text)\neval (t)\nre.compile('a')\n")
    assert [n for n, _ in code_calls(p)] == ["sympify", "S", "eval"]


PAYLOADS = ["__import__('os').system('touch PWNED')", "exec('import os')", "!!python/object/apply:os.system ['touch PWNED']",
            "1; import os", "${{7*7}}", "$(touch PWNED)", "`touch PWNED`"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_values_are_data_not_code(tmp_path, monkeypatch, payload):
    """Python or shell in any numeric field is a ModelError, never evaluated."""
    monkeypatch.chdir(tmp_path)
    fields = ["mass: 1.0", "com: [0.1, 0, 0]", "axis: [0, 0, 1]", "inertia: [0.01, 0.02, 0.02]"]
    for field in fields:
        key = field.split(":")[0]
        text = TINY.format(mass=1.0).replace(field, f"{key}: {json.dumps(payload)}", 1)
        (tmp_path / "m.yaml").write_text(text)
        with pytest.raises(scleron.ModelError):
            scleron.load_model(str(tmp_path / "m.yaml"))
    urdf = ('<robot name="r"><link name="base"/><link name="a"><inertial><mass value="{m}"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="a"/>'
            '<axis xyz="0 0 1"/></joint></robot>')
    from xml.sax.saxutils import quoteattr
    (tmp_path / "m.urdf").write_text(urdf.replace('"{m}"', quoteattr(payload)))
    with pytest.raises(scleron.ModelError):
        scleron.load_model(str(tmp_path / "m.urdf"))
    assert not (tmp_path / "PWNED").exists()


# ---- names are sanitised in the generated code ---------------------------------------------------
Q3 = '"' * 3                      # a triple quote, kept out of this file's own string syntax
EVIL_BODY = 'x; system("touch PWNED_BODY")'
EVIL_JOINT = '*/ int pwned = system("touch PWNED_C"); /*'
EVIL_BODY2 = Q3 + '; __import__("os").system("touch PWNED_PY"); ' + Q3
EVIL_JOINT2 = 'j2\\N{x}\\'                  # backslashes (a Unicode line separator: m2 below;
                                           # a YAML name must be printable)
EVIL_YAML = json.dumps({"name": "evil", "bodies": [
    {"name": EVIL_BODY, "parent": "world", "joint": {"name": EVIL_JOINT, "type": "revolute", "axis": [0, 0, 1]},
     "mass": 1.0, "com": [0.1, 0, 0], "inertia": [0.01, 0.02, 0.02]},
    {"name": EVIL_BODY2, "parent": EVIL_BODY,
     "joint": {"name": EVIL_JOINT2, "type": "spherical", "chart": "ZYX", "xyz": [0.5, 0, 0]},
     "mass": 1.0, "com": [0.2, 0, 0], "inertia": [0.01, 0.02, 0.02]}]})    # JSON is YAML
EVIL_FILE = 'a' + Q3 + '; __import__("os").system("touch PWNED_FILE"); ' + Q3 + ' \\N{x} \\.yaml'  # no "/" possible


def c_code_without_comments(text):
    """C text with comments and string literals blanked (a small C lexer)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            assert j >= 0, "unterminated comment"
            i = j + 2
            out.append(" ")
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def test_hostile_names_give_valid_harmless_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / EVIL_FILE
    path.write_text(EVIL_YAML)
    model = scleron.load_model(str(path))
    names = [j.name for j in model.joints]
    dyn = scleron.generate(model, str(tmp_path / "out" / "evil"))
    q = np.array([0.1, 0.2, 0.3, 0.4])
    M = dyn.mass_matrix(q)
    dyn.forward_dynamics(q, q, q)
    dyn.inverse_dynamics(q, q, q)
    dyn.bias_forces(q, q)
    ref = recursions.mass_matrix(Tree(model), FloatAlgebra(), list(q))
    assert np.allclose(M, ref, rtol=1e-12, atol=1e-14)
    assert dyn.joint_names == names                       # the names survive as data
    assert not [f for f in os.listdir(tmp_path) if f.startswith("PWNED")]

    folder = tmp_path / "out" / "evil"
    for f in os.listdir(folder):
        text = (folder / f).read_text(errors="replace") if not f.endswith(".so") else ""
        if f.endswith((".c", ".h")):
            code = c_code_without_comments(text)
            for bad in ("system", "pwned", "PWNED", "__import__", "touch"):
                assert bad not in code, (f, bad)
        elif f.endswith(".py"):
            tree = ast.parse(text)                        # valid Python
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    assert node.id not in ("__import__", "system"), (f, node.id)
                if isinstance(node, ast.Attribute):
                    assert node.attr != "system", f
            for tok in tokenize.tokenize(io.BytesIO(text.encode()).readline):
                if "PWNED" in tok.string:
                    assert tok.type == tokenize.STRING, (f, tok)

    # a model built in Python may have any name: the C prefix is sanitised too
    m2 = scleron.Model('x; system("touch PWNED_NAME") */ ' + Q3 + ' \\', source=str(path))
    m2.add_body("a", mass=1.0, inertia=(0.01, 0.02, 0.02),
                joint_name="*/ #include </etc/passwd> /*\\N{x}")
    with pytest.raises(scleron.ModelError, match="joint name must be printable"):  # (a line
        m2.add_body("b", "a", mass=1.0, inertia=(0.01, 0.02, 0.02),   # separator: refused)
                    joint_name="*/ #include </etc/passwd> /*\u2028\\N{x}")
    files, _, _ = pipeline.build_sources(m2)
    name = pipeline.c_identifier(m2.name)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
    for f, text in files.items():
        if f.endswith((".c", ".h")):
            code = c_code_without_comments(text)
            assert not re.search(r"\bsystem\s*\(", code) and "passwd" not in code, f
            assert set(re.findall(r"#include\s*\S+", code)) <= {"#include <math.h>", '#include ""',
                                                                  "#include <Python.h>",
                                                                  "#include <numpy/arrayobject.h>",
                                                                  "#include <string.h>",
                                                                  "#include <stdlib.h>"}, f
        elif f.endswith(".py"):
            ast.parse(text)
    # the Python module describes each coordinate by its exact name (the C comments' sanitised
    # text made the descriptions differ from coordinate_names: an outside tester)
    tree = ast.parse(files["__init__.py"])
    values = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    names = ast.literal_eval(values["coordinate_names"])
    for kind in ("coordinate_descriptions", "velocity_descriptions"):
        said = ast.literal_eval(values[kind])
        assert len(said) == len(names) and all(d.startswith(n + ": ") for d, n in zip(said, names))
    assert names[0] == "*/ #include </etc/passwd> /*\\N{x}"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('*/"\\\'\n\r\t\u2028\x00#{}$ aN?=(')) | st.characters(), max_size=40))
def test_c_comment_is_safe_in_c_comments_and_python_docstrings(text):
    out = pipeline.c_comment(text)
    assert "*/" not in out and "/*" not in out and '"' not in out and "\\" not in out
    assert "??" not in out                                   # no trigraph (??/ is a backslash)
    assert out.isprintable()
    ast.parse('"""x ' + out + ' y"""\nv = ' + repr(out))          # the __init__.py docstring


# ---- bad input: the cases of the list that tests/test_model_loaders.py leaves out ----------
YAML_BASE = TINY.format(mass=1.0).replace("name: tiny\n", "name: tiny\ngravity: [0, 0, -9.81]\n")
MORE_BAD_YAML = {
    "gravity_inf": ("gravity: [0, 0, -9.81]", "gravity: [0, 0, .inf]", ["gravity", "finite"]),
    "gravity_nan": ("gravity: [0, 0, -9.81]", "gravity: [.nan, 0, 0]", ["gravity", "finite"]),
    "inertia_nan": ("inertia: [0.01, 0.02, 0.02]\n  - name: b", "inertia: [0.01, .nan, 0.02]\n  - name: b",
                    ["body 'a'", "finite"]),
    "inertia_key_inf": ("inertia: [0.01, 0.02, 0.02]\n  - name: b", "inertia: {ixx: .inf, iyy: 1, izz: 1}\n  - name: b",
                        ["body 'a'", "ixx", "finite"]),
    "xyz_nan": ("xyz: [0.5, 0, 0]", "xyz: [.nan, 0, 0]", ["joint 'jb'", "finite"]),
    "rpy_inf": ("xyz: [0.5, 0, 0]", "xyz: [0.5, 0, 0], rpy: [0, .inf, 0]", ["joint 'jb'", "finite"]),
    "mass_zero": ("mass: 1.0\n    com: [0.2", "mass: 0\n    com: [0.2", ["body 'b'", "mass must be positive"]),
    "chart_lowercase": ("type: revolute, axis: [0, 1, 0]", "type: spherical, chart: zyx", ["joint 'jb'", "unknown Euler chart 'zyx'"]),
    "chart_number": ("type: revolute, axis: [0, 1, 0]", "type: spherical, chart: 3", ["joint 'jb'", "unknown Euler chart"]),
    "pitch_nan": ("type: revolute, axis: [0, 1, 0]", "type: helical, axis: [0, 1, 0], pitch: .nan", ["joint 'jb'", "pitch"]),
    "pitch_missing": ("type: revolute, axis: [0, 1, 0]", "type: helical, axis: [0, 1, 0]",
                      ["joint 'jb'", "a helical joint needs 'pitch'"]),
}
URDF_BASE = ('<robot name="r"><link name="base"/><link name="a"><inertial><origin xyz="0 0 0" rpy="0 0 0"/>'
             '<mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>\n'
             '<joint name="j" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0" rpy="0 0 0"/>'
             '<axis xyz="0 0 1"/></joint></robot>')
MORE_BAD_URDF = {
    "mass_zero": ('<mass value="1"/>', '<mass value="0"/>', ["link 'a'", "mass must be positive"]),
    "mass_minus_zero": ('<mass value="1"/>', '<mass value="-0"/>', ["link 'a'", "mass must be positive"]),
    "inertia_nan": ('ixx="1"', 'ixx="nan"', ["link 'a'", "ixx"]),
    "inertia_inf": ('ixx="1"', 'ixx="inf"', ["link 'a'", "ixx"]),
    "axis_nan": ('<axis xyz="0 0 1"/>', '<axis xyz="0 nan 1"/>', ["joint 'j'", "axis"]),
    "origin_inf": ('<origin xyz="0 0 0" rpy="0 0 0"/><axis', '<origin xyz="inf 0 0" rpy="0 0 0"/><axis', ["joint 'j'", "origin xyz"]),
}


@pytest.mark.parametrize("kind, key", [("yaml", k) for k in MORE_BAD_YAML] + [("urdf", k) for k in MORE_BAD_URDF])
def test_more_bad_input_is_a_model_error_naming_file_element_line(tmp_path, kind, key):
    base, cases = (YAML_BASE, MORE_BAD_YAML) if kind == "yaml" else (URDF_BASE, MORE_BAD_URDF)
    old, new, fragments = cases[key]
    assert old in base, key
    path = tmp_path / f"bad.{kind}"
    path.write_text(base.replace(old, new, 1))
    with pytest.raises(scleron.ModelError) as e:
        scleron.load_model(str(path))
    msg = str(e.value)
    assert re.match(re.escape(str(path)) + r":\d+: ", msg), msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


# ---- hand-edited generated sources ----------------------------------------------------------------
def test_edited_sources_are_not_served_from_the_cache(tmp_path):
    """scleron.json stores each generated file's sha256: an edited .c is no cache hit (codegen
    regenerates and says so), and a load that would compile edited sources refuses."""
    path = tiny(tmp_path)
    out = tmp_path / "gen" / "tiny"
    model = scleron.load_model(path)
    pipeline.generate(model, str(out), compile=False)
    c_file = out / "tiny_dynamics.c"
    original = c_file.read_text()
    # a load that would compile the edited C: a clear error, nothing compiled
    c_file.write_text(original.replace("/* ", "/* edited: ", 1))
    with pytest.raises(scleron.BuildError, match=r"tiny_dynamics\.c differs from what scleron generated"):
        scleron.load_generated(str(out))
    assert not glob.glob(str(out / "*.so"))
    # the package on its own (no scleron at run time) refuses the same way on import
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import tiny",
                        str(out.parent)], capture_output=True, text=True)
    assert r.returncode != 0 and "tiny_dynamics.c differs from what scleron generated" in r.stderr
    assert not glob.glob(str(out / "*.so"))
    # the CLI regenerates and names the file
    r = subprocess.run([sys.executable, "-m", "scleron.cli", "codegen", path, "-o", str(out),
                        "--no-compile"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "regenerated: tiny_dynamics.c differed" in r.stdout
    assert "cache hit" not in r.stdout
    assert c_file.read_text() == original
    # now untouched: a cache hit again
    report = pipeline.Report("tiny", model.nv)
    pipeline.generate(model, str(out), compile=False, report=report)
    assert report.cache_hit and report.edited == []


# ---- the Python API checks what the CLI checks ------------------------------------------------------
def test_python_api_checks_its_arguments(tmp_path):
    with pytest.raises(scleron.ModelError, match="no moving bodies"):
        scleron.generate(scleron.Model("empty"), str(tmp_path / "empty"), compile=False)
    model = scleron.load_model(tiny(tmp_path))
    model.bodies[0].inertia.mass = -5.0                 # changed after loading
    with pytest.raises(scleron.ModelError, match="mass"):
        scleron.generate(model, str(tmp_path / "neg"), compile=False)
    with pytest.raises(ValueError, match="chunk must be a positive number"):
        scleron.generate(scleron.load_model(tiny(tmp_path)), str(tmp_path / "c0"), chunk=0,
                         compile=False)
    with pytest.raises(scleron.ModelError, match="gravity must be finite"):
        scleron.Model("g", gravity=(float("nan"), 0, 0))
    with pytest.raises(scleron.ModelError, match="gravity must be 3 numbers"):
        scleron.Model("g", gravity=(0, 0))
    assert not any((tmp_path / n).exists() for n in ("empty", "neg", "c0"))


@pytest.mark.parametrize("name,package", [("numpy", "numpy_model"), ("class", "class_model"),
                                          ("None", "None_model"), ("os", "os_model")])
def test_model_names_that_would_shadow_modules_are_renamed(tmp_path, name, package):
    model = scleron.load_model(tiny(tmp_path))
    model.name = name
    files, _, _ = pipeline.build_sources(model)
    assert f"{package}_dynamics.c" in files and f"build_{package}.py" in files


def test_read_only_folder_without_binary_is_a_clear_error(tmp_path, monkeypatch):
    """A folder of sources whose binary is missing, where nothing can be written (checked by
    making the build folder's creation fail as a read-only folder does, since root may write)."""
    from scleron.backends.c import build as cbuild
    out = tmp_path / "ro" / "tiny"
    pipeline.generate(scleron.load_model(tiny(tmp_path)), str(out), compile=False)

    def refuse(*args, **kw):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(cbuild.tempfile, "mkdtemp", refuse)
    with pytest.raises(scleron.BuildError, match=r"cannot be compiled there \(Permission denied\)"):
        scleron.load_generated(str(out))


SINGULAR_CUSTOM = """name: sing
bodies:
- name: a
  parent: world
  joint: {name: ja, type: custom, coordinates: [a], translation: ["1/a", "log(a)", "sqrt(a)"]}
  mass: 1.0
  inertia: [0.1, 0.1, 0.1]
"""
HUGE = """name: huge
gravity: [0, 0, -1.0e300]
bodies:
- name: a
  parent: world
  joint: {name: ja, type: revolute, axis: [1, 0, 0]}
  mass: 1.0e300
  com: [0, 0.1, 0]
  inertia: [1, 1, 1]
"""


@pytest.mark.parametrize("text,needle", [
    (SINGULAR_CUSTOM, "joint 'ja': the custom joint is singular at q = 0"),
    (HUGE, "the dynamics overflow double precision at q = 0"),
    # a finite force no inertia can take: qdd = inf from every forward dynamics (an outside tester)
    (HUGE.replace("gravity: [0, 0, -1.0e300]\n", "").replace("mass: 1.0e300", "mass: 1.0")
     .replace("  inertia: [1, 1, 1]", "  inertia: [0.1, 0.1, 0.1]\n  wrench: [1.0e308, 0, 0, 0, 0, 0]"),
     "the forward dynamics overflow double precision at q = 0"),
    # a joint's own parameter: named among the largest numbers (it named the inertia and the
    # placement only: an outside tester)
    ("name: s\nbodies:\n- {name: a, parent: world, mass: 1.0, com: [0.1, 0, 0], inertia: [0.01, 0.01, 0.01],\n"
     "   joint: {name: ja, type: surface_point, surface: {shape: sphere, radius: 1.0e300}}}\n",
     "joint parameters up to 1e+300 (joint 'ja')"),
    (TINY.format(mass=2.0).replace("name: tiny", "name: tiny\ninitial: {q: {jb: 0.0}}", 1), None),
    # log(a) is fine where the model starts (a = 1): q = 0 is not required to be regular
    (SINGULAR_CUSTOM.replace('"1/a", "log(a)", "sqrt(a)"', '"log(a)", "0", "0"') + "initial: {q: {ja: 1.0}}\n",
     None),
])
def test_singular_or_overflowing_models_are_named_before_any_code(tmp_path, text, needle):
    """A transform that cannot be evaluated at the initial configuration, numbers that overflow:
    one line naming the joint or the numbers (CLI exit 2), nothing written."""
    path = tmp_path / "m.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    r = cli("codegen", str(path), "-o", str(out), "--no-compile")
    if needle is None:                    # the control: a regular model generates
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2 and "Traceback" not in r.stderr and "Warning" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "m.yaml" in lines[0], r.stderr
    assert not out.exists()


def test_a_folder_whose_path_has_glob_characters_loads(tmp_path):
    """The generated module finds its compiled library by a pattern in its own folder: a path
    with [ ], * or ? in it (a folder named after options, "build[-O1]") must still load, and
    the CLI's list of binaries must see it."""
    model = scleron.load_model(os.path.join(ROOT, "examples", "rc20.yaml"))
    folder = tmp_path / "out [a*?]" / "rc20"
    dyn = scleron.generate(model, str(folder), functions=["mass"])
    q = np.linspace(-1, 1, 20)
    ref = recursions.mass_matrix(Tree(model), FloatAlgebra(), list(q))
    assert np.allclose(dyn.mass_matrix(q), ref, rtol=1e-12, atol=1e-14)
    from scleron import cli
    assert cli._binaries(str(folder))


def test_loading_an_unchanged_folder_again_gives_its_module_not_another(tmp_path):
    """Each load_generated ran the folder's __init__ as one more module, all kept in sys.modules
    (300 loads of one folder: 305 modules, 87 MB; an outside tester): an unchanged folder now
    gives the module it gave, a regenerated one a new module."""
    import sys
    model = scleron.load_model(os.path.join(ROOT, "examples", "rc20.yaml"))
    folder = str(tmp_path / "rc20")
    dyn = scleron.generate(model, folder, functions=["mass"])
    count = len(sys.modules)
    assert all(scleron.load_generated(folder) is dyn for _ in range(20))
    # generate()'s cache hit rewrites the model-file record, not the code (a reviewer: each
    # call made a new module)
    assert all(scleron.generate(model, folder, functions=["mass"]) is dyn for _ in range(3))
    assert len(sys.modules) == count
    again = scleron.generate(model, folder, functions=["mass"], force=True)
    assert again is not dyn and scleron.load_generated(folder) is again
    q = np.linspace(-1, 1, 20)
    assert np.array_equal(again.mass_matrix(q), dyn.mass_matrix(q))


def test_a_terminated_first_import_leaves_no_build_folder(tmp_path):
    """`timeout` or a job manager sends SIGTERM while `import NAME` compiles: the process ends by
    that signal at once, through the build's cleanup (the compilers and what they started killed,
    the temporary .build-* folder removed), not leaving both behind. The compiler is made slow on
    purpose: a shell that sleeps, then runs cc."""
    scleron.generate(scleron.load_model(tiny(tmp_path)), str(tmp_path / "tiny"), functions=FEW,
                     compile=False)
    slow = tmp_path / "slowcc"
    slow.write_text("#!/bin/sh\nsleep 61.4142\nexec cc \"$@\"\n")      # a sleep to look for
    slow.chmod(0o755)
    env = dict(os.environ, CC=str(slow), SCLERON_NO_OPENMP="1")
    proc = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import tiny"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not glob.glob(str(tmp_path / "tiny" / ".build-*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)                                  # the compilers are started
    assert glob.glob(str(tmp_path / "tiny" / ".build-*")), "the build did not start"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and time.monotonic() - t0 < 10
    assert not glob.glob(str(tmp_path / "tiny" / ".build-*"))
    assert not glob.glob(str(tmp_path / "tiny" / "*.so"))
    deadline = time.monotonic() + 30                 # (a loaded machine: killed, not yet reaped)
    while True:
        survivors = subprocess.run(["pgrep", "-f", f"{slow}|sleep 61.4142"], capture_output=True,
                                   text=True).stdout
        if not survivors.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert survivors.strip() == "", survivors             # no compiler (nor its sleep) left running


def test_two_models_of_one_name_loaded_rtld_global_compute_their_own(tmp_path):
    """With sys.setdlopenflags(RTLD_GLOBAL) (as some frameworks set it) the second of two
    packages with the same C prefix ran the first one's code, or corrupted the heap (an outside
    tester): the modules keep their NAME_* functions hidden."""
    for tag, mass in (("A", 1.0), ("B", 2.0)):
        m = scleron.Model("twin_rtld")
        m.add_body("a", joint="revolute", axis=(0, 1, 0), mass=mass, com=(0.3, 0, 0),
                   inertia=[0.01, 0.01, 0.01])
        scleron.generate(m, str(tmp_path / tag / "twin_rtld"), functions=["mass"])
    code = ("import sys, os, importlib.util, numpy as np\n"
            "sys.setdlopenflags(os.RTLD_GLOBAL | os.RTLD_NOW)\n"
            "for tag in 'AB':\n"
            "    spec = importlib.util.spec_from_file_location('twin' + tag, os.path.join(sys.argv[1], tag, 'twin_rtld', '__init__.py'))\n"
            "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "    print(float(m.mass_matrix(np.zeros(1))[0, 0]), float(m.mass_matrix(np.zeros((2, 1)))[1, 0, 0]))\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    (a, a_batch), (b, b_batch) = (map(float, line.split()) for line in r.stdout.split("\n")[:2])
    assert a == a_batch and b == b_batch and abs(b - 2 * a + 0.01) < 1e-12     # 0.01 + m 0.09


def test_generate_names_an_argument_of_the_wrong_kind(tmp_path):
    """generate(None) was an AttributeError of None's .name, out_dir=5 os.path's TypeError,
    report=5 and progress=5 failures deep inside, and name=5 was taken as 'm_5' (an outside
    tester); a 401-digit integer mass an OverflowError."""
    model = scleron.load_model(os.path.join(ROOT, "examples", "rc20.yaml"))
    out = str(tmp_path / "x")
    for kw, needle in ((dict(model=None), "model must be a Model or a model file's path, not None"),
                       (dict(out_dir=5), "out_dir must be a folder's path, not 5"),
                       (dict(report=5), "report must be a pipeline.Report"),
                       (dict(progress=5), "progress must be a function"),
                       (dict(name=5), "name must be a string, not 5"),
                       (dict(name=True), "name must be a string, not True")):
        args = {"model": model, "out_dir": out, **kw}
        with pytest.raises(TypeError, match=re.escape("generate: " + needle)):
            scleron.generate(args.pop("model"), **args, compile=False)
    assert not os.path.exists(out)
    m = scleron.Model("m")
    with pytest.raises(scleron.ModelError, match=r"mass must be a finite number, got an integer "
                                                 r"of 401 digits"):
        m.add_body("u", "world", joint="revolute", mass=10 ** 400, inertia=(1, 1, 1))
    with pytest.raises(scleron.ModelError, match="got an integer of 5001 digits"):
        m.add_body("u", "world", joint="revolute", mass=10 ** 5000, inertia=(1, 1, 1))


def test_a_full_disk_names_the_file(tmp_path, monkeypatch):
    """A full disk said only "[Errno 28] No space left on device" (an outside tester, codegen
    --no-compile on a 200 kB tmpfs): the write's error names the file it was writing."""
    import builtins
    import errno
    from scleron import pipeline

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(builtins, "open", lambda *a, **k: Full())
    with pytest.raises(OSError, match=r"No space left on device: '.*a\.c'"):
        pipeline.write_sources({"a.c": "int x;"}, str(tmp_path))


def test_codegen_says_why_it_regenerated(tmp_path, monkeypatch, capsys):
    """A folder generated before with other options, $SCLERON_OPT among them, was regenerated
    without a word: a user who had set SCLERON_OPT=0 (the README's advice for test suites) saw
    the committed generated/ folder rewritten (an outside tester). codegen now names what
    differed."""
    path, out = tiny(tmp_path), str(tmp_path / "tiny")

    from scleron.cli import main

    def codegen(*extra, opt=None):
        monkeypatch.delenv("SCLERON_OPT", raising=False)
        if opt is not None:
            monkeypatch.setenv("SCLERON_OPT", opt)
        assert main(["codegen", path, "-o", out, "--no-compile", *extra]) == 0
        return [line for line in capsys.readouterr().out.splitlines()
                if line.startswith("regenerated")]
    assert codegen() == []                                    # a new folder: nothing to say
    assert codegen(opt="0") == ["regenerated: its compiler flags differ (-Os there, -O0 now: "
                                "$SCLERON_OPT, --opt, --march or cflags=)"]
    assert codegen("--functions", "fd", opt="0") == [
        "regenerated: its options differ (functions)"]
    with open(path, "a") as fh:
        fh.write("\n# a comment: the same model\n")
    assert codegen("--functions", "fd", opt="0") == []         # up to date
    text = open(path).read().replace("mass: 1.0", "mass: 2.0", 1)
    assert text != open(path).read()
    with open(path, "w") as fh:
        fh.write(text)
    assert codegen("--functions", "fd", opt="0") == [
        "regenerated: the model, or scleron's code generator, differs from its generation's"]
