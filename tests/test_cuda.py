"""The CUDA backend: the .cu renders for every function, compiles with nvcc, loads without a GPU;
a missing nvcc or GPU is one clear line; on a GPU the results equal the CPU's (AoS and SoA).

Tests that compile need nvcc (skipped without it); tests that run kernels need a CUDA device
and CuPy (skipped without them). Compiling is kept to a few functions of RC20 and a quaternion
chain in the default suite (about 15 s of nvcc); every function of RC20 is a slow test."""
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import scleron
from scleron.backends import cuda as cuda_backend
from scleron.errors import BuildError
from scleron.functions import FUNCTIONS, named_only

from conftest import EXAMPLES, example

ARCH = {"arch": "sm_90"}                       # one architecture: half the nvcc time of auto
RC20_FUNCTIONS = ("forward_dynamics", "inverse_dynamics", "mass_matrix", "kinetic_energy",
                  "integrate")          # random_inputs draws q through integrate
QBALL_FUNCTIONS = ("forward_dynamics", "mass_matrix", "integrate", "frame_placements")

QBALL = """
name: qball_cuda
bodies:
  - {name: base, parent: world, mass: 3, com: [0.1, 0, 0], inertia: [0.2, 0.3, 0.4],
     joint: {type: free_flyer}}
  - {name: arm, parent: base, mass: 1, com: [0, 0, -0.3], inertia: [0.05, 0.06, 0.01],
     joint: {type: spherical_quat, xyz: [0.2, 0.1, 0], rpy: [0.3, 0, 0.2]}}
  - {name: hand, parent: arm, mass: 0.5, com: [0, 0.05, 0], inertia: [0.01, 0.01, 0.02],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, -0.6]}}
"""


def have_nvcc():
    try:
        cuda_backend.find_nvcc()
        return True
    except BuildError:
        return False


needs_nvcc = pytest.mark.skipif(not have_nvcc(), reason="nvcc (the CUDA toolkit) is not installed")


def gpu_ready():
    if cuda_backend.cuda_device_count() < 1:
        return False
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


needs_gpu = pytest.mark.skipif(not gpu_ready(), reason="no CUDA device (or CuPy) on this machine")


@pytest.fixture(scope="module")
def rc20(generated):
    if not have_nvcc():
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    return generated(example("rc20.yaml"), "rc20_cuda", functions=RC20_FUNCTIONS, cuda=ARCH)[1]


@pytest.fixture(scope="module")
def rc5(generated, tmp_path_factory):
    """What the tests without a GPU compile through nvcc: RC5 (RC20's joint class, a quarter of its
    nvcc time); the GPU's tests compare RC20 itself."""
    if not have_nvcc():
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    sys.path.insert(0, EXAMPLES)
    from make_examples import rc_yaml
    path = tmp_path_factory.mktemp("rc5") / "rc5.yaml"
    path.write_text(rc_yaml(5))
    return generated(str(path), "rc5_cuda", functions=RC20_FUNCTIONS, cuda=ARCH)[1]


@pytest.fixture(scope="module")
def qball(generated, tmp_path_factory):
    if not have_nvcc():
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    path = tmp_path_factory.mktemp("qball") / "qball.yaml"
    path.write_text(QBALL)
    return generated(str(path), "qball_cuda", functions=QBALL_FUNCTIONS, cuda=ARCH)[1]


def folder_of(dyn):
    return os.path.dirname(dyn.__file__)


# ---- rendering (no nvcc) -------------------------------------------------------------------------
def test_every_function_has_cuda_launchers(tmp_path):
    """Every generated function (all specs, the per-frame ones included) gets a device function,
    AoS and SoA kernels and both extern "C" launchers, and cuda.py a Python function."""
    model = scleron.load_model(example("branched.yaml"))
    scleron.generate(model, str(tmp_path / "b"), compile=False, functions=["+dint", "ddiff"],
                     cuda=True)          # the defaults and integrate's, difference's Jacobians
    cu = (tmp_path / "b" / "branched_dynamics.cu").read_text()
    names = [n for n in re.findall(r'^    "(\w+)": \(\(', (tmp_path / "b" / "cuda.py").read_text(),
                                     re.M)]
    by_default = {n for n, spec in FUNCTIONS.items() if spec.by_default is not named_only}
    assert by_default - {"mass_matrix_inverse", "inverse_dynamics_derivatives",
                         "forward_dynamics_derivatives"} <= set(names)
    assert any(n.startswith("frame_jacobian_0") for n in names)          # per-frame functions
    for f in names:
        assert f'extern "C" int branched_{f}_cuda(int n, ' in cu, f
        assert f'extern "C" int branched_{f}_cuda_soa(int n, ' in cu, f
        assert f"void __launch_bounds__(SCLERON_CUDA_MAX_BLOCK) branched_{f}_soa(int n" in cu, f
    assert "double w[" not in cu                  # registers, not a local work array
    assert "sincos(q_" in cu


def test_functions_generated_when_named_have_cuda_launchers(tmp_path):
    """Those only named (external wrenches, a (nframes, 6) input; the step's derivatives with
    fext, an output of three axes; the frames' derivatives) render for CUDA too."""
    named = sorted(n for n, spec in FUNCTIONS.items() if spec.by_default is named_only
                   and ("fext" in n or "step" in n or "derivatives_local" in n))
    assert "euler_step_derivatives_fext_local_world_aligned" in named
    scleron.generate(scleron.load_model(example("branched.yaml")), str(tmp_path / "n"),
                     compile=False, functions=named, cuda=True)
    cu = (tmp_path / "n" / "branched_dynamics.cu").read_text()
    for f in named:
        assert f'extern "C" int branched_{f}_cuda(int n, ' in cu, f
    # fext may come as (N, nframes, 6), or (nframes, 6, N) in soa, as the CPU batches take it
    import importlib.util
    spec = importlib.util.spec_from_file_location("branched_named_cuda", tmp_path / "n" / "cuda.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    nf, n = 9, 7
    for soa, shapes in ((False, [(n, 20)] * 3 + [(n, nf, 6)]), (True, [(20, n)] * 3 + [(nf, 6, n)])):
        arrays = [FakeDeviceArray(shape) for shape in shapes]
        assert module._inputs("forward_dynamics_fext", arrays, 0, soa)[1] == n
    with pytest.raises(ValueError, match=r"fext must have shape \(N, 54\) or \(N, 9, 6\)"):
        module._inputs("forward_dynamics_fext", [FakeDeviceArray((n, 20))] * 3
                       + [FakeDeviceArray((n, 6, nf))], 0, False)


def test_split_kernels_pass_values_through_scratch(tmp_path):
    model = scleron.load_model(example("rc20.yaml"))
    scleron.generate(model, str(tmp_path / "s"), compile=False, functions=["forward_dynamics"],
                     cuda={"split": 2000})
    cu = (tmp_path / "s" / "rc20_dynamics.cu").read_text()
    parts = re.findall(r"__launch_bounds__\(\w+\) (rc20_forward_dynamics_part\d+)_soa", cu)
    assert len(parts) >= 2
    assert parts == [f"rc20_forward_dynamics_part{k}" for k in range(len(parts))]
    assert "cudaMallocAsync" in cu and "cudaFreeAsync" in cu
    assert re.search(r"w\[\d+ \* ws\] = t\d+;", cu) and re.search(r"= w\[\d+ \* ws\];", cu)


def test_cuda_options_are_checked():
    assert cuda_backend.cuda_options(True)["arch"] == "auto"
    for bad in ({"arch": "sm90"}, {"arch": "fermi"}, {"split": 0}, {"block": 1024},
                {"blocks": 128}, {"arch": ""}, {"block": 0}, {"arch": "sm_90fa"}):
        with pytest.raises(ValueError):           # ("" and 0 were taken for the defaults; sm_90fa
            cuda_backend.cuda_options(bad)        # passed here and failed in nvcc's build script)
    assert cuda_backend.cuda_options({"arch": "sm_90a,sm_100f"})["arch"] == "sm_90a,sm_100f"
    # flags as one string were split into characters, and other values failed inside the build
    # (an outside tester): a list of strings, said at once
    for flags in ("-O3", ["-O3", 5], 5):
        with pytest.raises(ValueError, match="CUDA flags must be a list of nvcc's arguments"):
            cuda_backend.cuda_options({"flags": flags})
    for cuda in ("yes", 1):
        with pytest.raises(ValueError, match="cuda must be True or a dict of CUDA options"):
            cuda_backend.cuda_options(cuda)
    assert cuda_backend.cuda_options({"flags": ("-O3",)})["flags"] == ["-O3"]


def test_an_empty_dict_of_cuda_options_asks_for_cuda(tmp_path):
    """cuda={} (every option at its default) wrote no CUDA code at all, as an empty dict is
    false; only None and False mean no CUDA, and other values are refused before any work."""
    model = scleron.load_model(example("branched.yaml"))
    scleron.generate(model, str(tmp_path / "e"), compile=False, functions=["forward_dynamics"],
                     cuda={})
    assert (tmp_path / "e" / "cuda.py").is_file()
    assert [f for f in os.listdir(tmp_path / "e") if f.endswith(".cu")]
    with pytest.raises(ValueError, match="cuda must be True or a dict of CUDA options"):
        scleron.generate(model, str(tmp_path / "z"), compile=False, cuda=0)
    assert not (tmp_path / "z").exists()


def test_cuda_changes_the_cache_key_only_when_asked(tmp_path):
    from scleron.pipeline import _options
    plain = _options("m", 1000, ["-O2"], 1, "unrolled")
    assert "cuda" not in plain and _options("m", 1000, ["-O2"], 1, "unrolled", cuda=False) == plain
    assert _options("m", 1000, ["-O2"], 1, "unrolled", cuda=True)["cuda"]["arch"] == "auto"


# ---- a missing nvcc ------------------------------------------------------------------------------
def _no_nvcc(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("NVCC", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("scleron.backends.cuda.build.FALLBACKS", ())


def test_missing_nvcc_is_one_line(monkeypatch, tmp_path, capsys):
    _no_nvcc(monkeypatch, tmp_path)
    with pytest.raises(BuildError, match="no CUDA compiler: nvcc was not found") as err:
        scleron.generate(example("tc10.yaml"), str(tmp_path / "out"), cuda=True)
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()
    from scleron.cli import main
    assert main(["codegen", example("tc10.yaml"), "-o", str(tmp_path / "o2"), "--cuda"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "no CUDA compiler" in lines[0] and "CUDA toolkit" in lines[0]
    assert main(["codegen", example("tc10.yaml"), "--cuda-split", "100"]) == 2
    assert "need --cuda" in capsys.readouterr().err
    # a negative split was refused with the Python API's words ("None (one kernel ...)"),
    # which the option cannot take (an outside tester)
    for bad in ("-1", "x"):
        assert main(["codegen", example("tc10.yaml"), "--cuda", "--cuda-split", bad,
                     "--no-compile", "-o", str(tmp_path / "o3")]) == 2
        assert (f"--cuda-split must be auto, 0 (one kernel per function) or a positive number "
                f"of statements, got '{bad}'") in capsys.readouterr().err


# ---- compiled (nvcc), no GPU needed --------------------------------------------------------------
@needs_nvcc
def test_library_loads_without_a_gpu_and_exports_every_launcher(rc5, qball):
    for dyn in (rc5, qball):
        cu = dyn.cuda
        assert cu.FUNCTIONS == dyn.FUNCTIONS
        lib = ctypes.CDLL(os.path.join(folder_of(dyn), cu.LIBRARY))      # no driver needed
        for f in cu.FUNCTIONS:
            for suffix in ("_cuda", "_cuda_soa", "_cuda_info"):
                assert getattr(lib, f"{cu.PREFIX}_{f}{suffix}")
        assert isinstance(cu.device_count(), int)
        report = cu.resources()
        for f in cu.FUNCTIONS:
            assert re.search(rf"{cu.PREFIX}_{f}_soa \(sm_90\): \d+ registers", report), f


@needs_nvcc
def test_load_generated_has_cuda(rc5):
    again = scleron.load_generated(folder_of(rc5))
    assert again.cuda.FUNCTIONS == rc5.FUNCTIONS and again.cuda.LIBRARY == rc5.cuda.LIBRARY

    # imported as a plain package (what `import NAME` does; the test folder's name is not an
    # identifier): .cuda is there too, imported at first use (an outside tester)
    init = os.path.join(folder_of(rc5), "__init__.py")
    done = subprocess.run([sys.executable, "-c", "import importlib.util, sys\n"
                           f"spec = importlib.util.spec_from_file_location('rc5_plain', {init!r}, "
                           f"submodule_search_locations=[{folder_of(rc5)!r}])\n"
                           "m = sys.modules['rc5_plain'] = importlib.util.module_from_spec(spec)\n"
                           "spec.loader.exec_module(m)\nprint(m.cuda.LIBRARY)\n"
                           # not in sys.modules: no .cuda (hasattr False, not an ImportError)
                           f"spec = importlib.util.spec_from_file_location('rc5_alone', {init!r}, "
                           f"submodule_search_locations=[{folder_of(rc5)!r}])\n"
                           "m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n"
                           "assert not hasattr(m, 'cuda')"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == rc5.cuda.LIBRARY, done.stderr


def test_a_cuda_library_cut_short_is_built_again_not_loaded(rc5, tmp_path):
    """A CUDA library cut to half its size (an interrupted copy, a full disk) ended the first
    call with SIGBUS inside dlopen (an outside tester, for the C modules; the CUDA library had no
    check). Its loadable segments are checked against the file's end first: it is built again,
    here with no nvcc, so the error says what was found."""
    copy = tmp_path / "rc5_copy"
    shutil.copytree(folder_of(rc5), copy)
    library = copy / rc5.cuda.LIBRARY
    assert not rc5.cuda._cut_short(str(library))
    data = library.read_bytes()
    library.write_bytes(data[:len(data) // 2])
    assert rc5.cuda._cut_short(str(library))
    done = subprocess.run([sys.executable, "-c", "import scleron\n"
                           f"dyn = scleron.load_generated({str(copy)!r})\n"
                           "try:\n    dyn.cuda.library()\nexcept dyn.cuda.CudaError as e:\n"
                           "    print('CudaError:', e)\n"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, NVCC=str(tmp_path / "no-nvcc")))
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"CudaError: .*rc5_copy has a CUDA library cut short \(\S+\.so: a copy or a disk "
                     r"that filled up\) and no CUDA compiler: NVCC='.*no-nvcc' was not found", done.stdout)


def test_a_folder_regenerated_after_loading_gives_no_other_models_cuda(rc5, tmp_path):
    """A module loaded, then its folder regenerated for another model: dyn.cuda took the new
    folder's cuda.py, or built the new model's .cu under the old one's library name (an outside
    tester). The regeneration is mimicked by renaming the generation in the folder's files."""
    copy = tmp_path / "rc5_copy"
    shutil.copytree(folder_of(rc5), copy)
    dyn = scleron.load_generated(str(copy))
    for name in ("cuda.py", "__init__.py"):
        text = (copy / name).read_text()
        (copy / name).write_text(text.replace(rc5.HASH, "0" * len(rc5.HASH))
                                 .replace(rc5.cuda.LIBRARY, "_other_cuda.so"))
    (copy / rc5.cuda.LIBRARY).unlink()
    with pytest.raises(dyn.cuda.CudaError, match="rc5_copy was replaced by a new generation after "
                                                  "this module was loaded"):
        dyn.cuda.library()
    assert not (copy / rc5.cuda.LIBRARY).exists()            # nothing built under the old name
    with pytest.raises(dyn.cuda.CudaError, match="was replaced by a new generation"):
        dyn.cuda.resources()                     # (it read the other model's ptxas report)
    gone = tmp_path / "rc5_gone"                 # a folder removed, not replaced: said so
    shutil.copytree(folder_of(rc5), gone)
    dyn_gone = scleron.load_generated(str(gone))
    shutil.rmtree(gone)
    with pytest.raises(dyn_gone.cuda.CudaError, match="rc5_gone: its cuda.py cannot be read now "
                                                       r"\(.*\): the folder was removed, moved or "
                                                       "regenerated without CUDA code"):
        dyn_gone.cuda.library()
    assert dyn_gone.cuda.device_count() == 0     # ("never raises": it was FileNotFoundError)
    init = copy / "__init__.py"
    done = subprocess.run([sys.executable, "-c", "import importlib.util, sys\n"
                           f"spec = importlib.util.spec_from_file_location('rc5_plain', {str(init)!r}, "
                           f"submodule_search_locations=[{str(copy)!r}])\n"
                           "m = sys.modules['rc5_plain'] = importlib.util.module_from_spec(spec)\n"
                           "spec.loader.exec_module(m)\n"
                           f"open({str(init)!r}, 'a').write('\\n# another generation\\n')\n"
                           "import re\n"
                           f"t = open({str(init)!r}).read(); open({str(init)!r}, 'w').write("
                           "re.sub(r'\\nHASH = \"\\w+\"\\n', '\\nHASH = \"x\"\\n', t))\n"
                           "try:\n    m.cuda\nexcept AttributeError as e:\n    print(e)\n"],
                          capture_output=True, text=True, timeout=120)
    assert "was replaced by a new generation after this module was imported" in done.stdout, \
        done.stdout + done.stderr[-2000:]


def test_a_module_without_cuda_says_how_to_add_it(generated):
    """dyn.cuda of a folder generated without --cuda said only that the module has no attribute
    'cuda' (an outside tester)."""
    dyn = generated(example("branched.yaml"), "branched_no_cuda", functions=["fd"])[1]
    with pytest.raises(AttributeError, match=r"generated without CUDA code: `scleron codegen "
                                             r"MODEL --cuda` or scleron.generate\(model, ..., cuda=True\)"):
        dyn.cuda


class FakeDeviceArray:
    """An object with a __cuda_array_interface__ (what CuPy, PyTorch and Numba expose), each at
    a device address of its own (outputs sharing an input's memory are refused)."""
    next_address = 0x1000

    def __init__(self, shape, typestr="<f8", strides=None, readonly=False):
        address = FakeDeviceArray.next_address
        FakeDeviceArray.next_address += 1 << 30
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (address, readonly), "version": 3}


@needs_nvcc
def test_arrays_are_checked_before_any_launch(rc5):
    cu, n = rc5.cuda, 10
    q, v = FakeDeviceArray((n, 5)), FakeDeviceArray((n, 5))
    out = FakeDeviceArray((n, 5))
    with pytest.raises(ValueError, match="float64"):
        cu.forward_dynamics(FakeDeviceArray((n, 5), "<f4"), v, v, out=out)
    with pytest.raises(ValueError, match="C-contiguous"):
        cu.forward_dynamics(FakeDeviceArray((n, 5), strides=(8, 80)), v, v, out=out)
    with pytest.raises(ValueError, match=r"shape \(N, 5\)"):
        cu.forward_dynamics(FakeDeviceArray((5, n)), v, v, out=out)
    with pytest.raises(ValueError, match=r"shape \(5, N\) in layout soa"):
        cu.forward_dynamics(q, v, v, out=out, layout="soa")
    with pytest.raises(ValueError, match="same number of states"):
        cu.forward_dynamics(q, FakeDeviceArray((n + 1, 5)), v, out=out)
    with pytest.raises(ValueError, match="host array"):
        cu.forward_dynamics(np.zeros((n, 5)), v, v, out=out)
    with pytest.raises(ValueError, match=r"out \(qdd\).*\(10, 5\)"):
        cu.forward_dynamics(q, v, v, out=FakeDeviceArray((n, 4)))
    with pytest.raises(ValueError, match="writeable.*got a read-only one"):
        cu.forward_dynamics(q, v, v, out=FakeDeviceArray((n, 5), readonly=True))
    with pytest.raises(ValueError, match="unknown function 'nope'"):
        cu.kernel_info("nope")
    with pytest.raises(ValueError, match="layout"):
        cu.forward_dynamics(q, v, v, out=out, layout="rows")
    with pytest.raises(ValueError, match=r"out \(M\).*\(5, 5, 10\)"):
        cu.mass_matrix(FakeDeviceArray((5, n)), out=FakeDeviceArray((n, 5, 5)), layout="soa")


def cuda_module_with_fake_nvcc(tmp_path, monkeypatch, script, module, arch):
    """cuda.py of branched.yaml's --no-compile CUDA folder tmp_path/b, loaded alone as `module`,
    with $NVCC a shell script that runs `script` and fails."""
    import importlib.util
    fake = tmp_path / "nvcc"
    fake.write_text(f"#!/bin/sh\n{script}\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NVCC", str(fake))
    scleron.generate(scleron.load_model(example("branched.yaml")), str(tmp_path / "b"),
                     compile=False, functions=["forward_dynamics"], cuda={"arch": arch})
    spec = importlib.util.spec_from_file_location(module, tmp_path / "b" / "cuda.py")
    cu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cu)
    return cu


def test_device_count_never_builds_the_library(tmp_path, monkeypatch):
    """An outside tester: device_count() ("never raises") built a --no-compile folder's library
    with nvcc first (12 minutes for RC20) and raised nvcc's errors; it asks the driver now. (The
    nvcc here is a script that leaves a mark: with or without a CUDA toolkit, no build runs.)"""
    cu = cuda_module_with_fake_nvcc(tmp_path, monkeypatch, f"touch {tmp_path / 'nvcc-ran'}",
                                    "b_cuda_alone", "sm_10")
    assert cu.device_count() == cuda_backend.cuda_device_count()
    assert not (tmp_path / "nvcc-ran").exists() and not (tmp_path / "b" / cu.LIBRARY).exists()
    assert not [f for f in os.listdir(tmp_path / "b") if f.startswith(".build-cuda")]
    # resources() of such a folder said FileNotFoundError of its report (an outside tester): it
    # builds the library first, as the first call does (here the build fails, and says so)
    with pytest.raises(Exception) as info:
        cu.resources()
    assert not isinstance(info.value, FileNotFoundError) and (tmp_path / "nvcc-ran").exists()


def test_a_cuda_function_not_generated_says_how_to_add_it(tmp_path, monkeypatch):
    """dyn.cuda.<a function not generated> was a bare AttributeError (an outside tester); the
    CPU module's says how to add it, and so does this one now. (No library is loaded.)"""
    cu = cuda_module_with_fake_nvcc(tmp_path, monkeypatch, "true", "b_cuda_names", "sm_90")
    assert cu.FUNCTIONS == ("forward_dynamics",)
    with pytest.raises(AttributeError, match=r"'mass_matrix' is not among the CUDA functions "
                                             r"generated into .*\(forward_dynamics\); .*--cuda "
                                             r"--functions \+mass_matrix"):
        cu.mass_matrix
    assert not hasattr(cu, "__wrapped__")


def test_malformed_and_overlapping_device_arrays_are_refused(tmp_path, monkeypatch):
    """An outside tester: a malformed __cuda_array_interface__ gave raw TypeErrors, negative or
    boolean shapes and string pointers reached the launch, and out= overlapping an input was
    taken, where the kernels' __restrict__ pointers would race. All refused before any launch
    (cuda.py alone, no library: this runs without a GPU)."""
    cu = cuda_module_with_fake_nvcc(tmp_path, monkeypatch, "true", "b_cuda_arrays", "sm_90")
    n, nv = 4, 20                                               # (branched.yaml: nq = nv = 20)

    class Fake:
        def __init__(self, shape, ptr=0x1000, **extra):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f8", "strides": None,
                                             "data": (ptr, False), "version": 3, **extra}
    q, v, tau = Fake((n, nv), 0x10000), Fake((n, nv), 0x20000), Fake((n, nv), 0x30000)
    for bad, match in ((Fake((-4, nv)), "whole numbers, not negative"),
                       (Fake((True, nv)), "whole numbers"), (Fake((4.5, nv)), "whole numbers"),
                       (Fake((n, nv), ptr="x"), "whole numbers"),
                       (Fake((n, nv), mask=Fake((n, nv))), "masked array"),
                       (type("X", (), {"__cuda_array_interface__": 5})(), "is not one"),
                       (type("X", (), {"__cuda_array_interface__": {"shape": (n, nv)}})(),
                        "is not one")):
        with pytest.raises(ValueError, match=match):
            cu.forward_dynamics(bad, v, tau, out=Fake((n, nv), 0x40000))
    with pytest.raises(ValueError, match=r"out \(qdd\) shares device memory with q"):
        cu.forward_dynamics(q, v, tau, out=Fake((np.int64(n), np.int64(nv)), np.int64(0x10000)))
    for ptr in (0x10000, 0x10008, 0x30000 + 8 * n * nv - 8):       # on q, inside q, tau's end
        with pytest.raises(ValueError, match=r"out \(qdd\) shares device memory with (q|tau)"):
            cu.forward_dynamics(q, v, tau, out=Fake((n, nv), ptr))
    with pytest.raises(ValueError, match="shares device memory"):  # a state's width apart
        cu.forward_dynamics(q, v, tau, out=Fake((n, nv), 0x10000 - 8 * nv))


def test_a_failed_cuda_build_shows_nvccs_errors_not_its_resource_report(tmp_path, monkeypatch):
    """A reviewer: the build's -Xptxas -v report lines came first in nvcc's output and filled the
    2,000 characters the error keeps, so the real error (here at the end) was cut off."""
    report = "".join(f"echo 'ptxas info    : Used {k} registers, 400 bytes cmem[0]'\n" for k in range(60))
    cu = cuda_module_with_fake_nvcc(tmp_path, monkeypatch, report + "echo 'Fatal error: cannot "
                                    "create part0.o' >&2", "b_cuda_fails", "sm_90")
    with pytest.raises(cu.CudaError, match="building the CUDA library failed: nvcc failed: "
                                           "Fatal error: cannot create part0.o") as info:
        cu.library()
    assert "ptxas info" not in str(info.value)


@pytest.mark.skipif(not shutil.which("flock"), reason="needs util-linux flock")
def test_a_cuda_build_holds_its_folder(tmp_path, monkeypatch):
    """A CUDA library built at the first call did not take the folder's lock, so a concurrent
    `scleron codegen` could move the folder aside under the build (a reviewer). nvcc here is a
    script that tries the folder's flock without waiting: held, it is refused."""
    folder = tmp_path / "b"
    probe = f"flock -n {folder} true && touch {tmp_path / 'was-free'}; touch {tmp_path / 'ran'}"
    cu = cuda_module_with_fake_nvcc(tmp_path, monkeypatch, probe, "b_cuda_held", "sm_90")
    with pytest.raises(cu.CudaError, match="building the CUDA library failed"):
        cu.library()
    assert (tmp_path / "ran").exists() and not (tmp_path / "was-free").exists()
    # a folder regenerated without CUDA while the call waited: said before any build
    scleron.generate(scleron.load_model(example("branched.yaml")), str(folder), compile=False,
                     functions=["forward_dynamics"])
    (tmp_path / "ran").unlink()
    with pytest.raises(cu.CudaError, match="cuda.py cannot be read now"):
        cu._build()
    assert not (tmp_path / "ran").exists()


@needs_nvcc
def test_a_part_of_a_split_build_compiles_without_warnings(tmp_path):
    """The ball joint's series helpers are in every part of nvcc's parallel build: a part that
    used none of them warned #177 "declared but never referenced" (the build's log is dropped)."""
    import subprocess
    scleron.generate(scleron.load_model(example("branched.yaml")), str(tmp_path / "b"),
                     compile=False, functions=["forward_dynamics"], cuda=ARCH)
    nvcc = cuda_backend.find_nvcc()
    for part in (0, 59):
        r = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "-Xcompiler", "-Wall", "-c",
                            "-DSCLERON_PARTS=60", f"-DSCLERON_PART_INDEX={part}",
                            "branched_dynamics.cu", "-o", f"part{part}.o"],
                           cwd=tmp_path / "b", capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "warning" not in (r.stdout + r.stderr).lower(), r.stderr


@needs_nvcc
@pytest.mark.skipif(cuda_backend.cuda_device_count() > 0, reason="this machine has a GPU")
def test_no_gpu_is_one_clear_line(rc5):
    n = 4
    with pytest.raises(rc5.cuda.CudaError, match="no CUDA device") as err:
        rc5.cuda.forward_dynamics(FakeDeviceArray((n, 5)), FakeDeviceArray((n, 5)),
                                  FakeDeviceArray((n, 5)), out=FakeDeviceArray((n, 5)))
    assert "\n" not in str(err.value)


@needs_nvcc
@pytest.mark.slow
def test_every_function_of_rc20_compiles(generated):
    """Every default function of RC20 (the per-frame ones included) through nvcc: ~40 s on 2
    cores for one architecture."""
    _, dyn = generated(example("rc20.yaml"), "rc20_cuda_all", functions=None, cuda=ARCH)
    assert dyn.cuda.FUNCTIONS == dyn.FUNCTIONS


# ---- on a GPU: equal to the CPU's functions ------------------------------------------------------
def rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def random_inputs(dyn, function, n, rng):
    """n states of a function's inputs (q from the neutral configuration plus noise, normalised
    quaternions through integrate)."""
    inputs, _ = dyn.cuda._SIGNATURES[function]
    q = np.array([dyn.integrate(dyn.neutral(), rng.uniform(-1, 1, dyn.nv), 1.0) for _ in range(n)])
    out = []
    for name, width in inputs:
        if width == dyn.nq and name.startswith("q") and name not in ("qd", "qdd"):
            out.append(q)
        elif width == 1:
            out.append(rng.uniform(0.01, 0.5, n))
        else:
            out.append(rng.uniform(-1, 1, (n, width)))
    return out


@needs_gpu
@pytest.mark.parametrize("layout", ["aos", "soa"])
def test_cuda_equals_cpu(rc20, qball, rng, layout):
    import cupy as cp
    n = 1000
    for dyn in (rc20, qball):
        for f in dyn.cuda.FUNCTIONS:
            args = random_inputs(dyn, f, n, rng)
            want = getattr(dyn, f)(*[a if a.ndim == 2 else a[:, None] for a in args])
            wants = want if isinstance(want, tuple) else (want,)
            dev = [cp.asarray(a if layout == "aos" or a.ndim == 1 else np.ascontiguousarray(a.T))
                   for a in args]
            got = getattr(dyn.cuda, f)(*dev, layout=layout)
            gots = got if isinstance(got, tuple) else (got,)
            for g, w in zip(gots, wants):
                g = cp.asnumpy(g)
                if layout == "soa":
                    g = np.moveaxis(g, -1, 0)
                assert g.shape == np.shape(w), f
                assert rel_err(g, w) <= 1e-12, (f, layout)


@needs_gpu
def test_cuda_out_stream_and_torch(rc20, rng):
    import cupy as cp
    n = 300
    q, qd, tau = (rng.uniform(-1, 1, (n, 20)) for _ in range(3))
    want = rc20.forward_dynamics(q, qd, tau)
    out = cp.empty((20, n))
    stream = cp.cuda.Stream(non_blocking=True)
    args = [cp.asarray(np.ascontiguousarray(a.T)) for a in (q, qd, tau)]
    assert rc20.cuda.forward_dynamics(*args, out=out, stream=stream, layout="soa") is out
    stream.synchronize()
    assert rel_err(cp.asnumpy(out).T, want) <= 1e-12
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    t = [torch.as_tensor(a, device="cuda") for a in (q, qd, tau)]
    got = rc20.cuda.forward_dynamics(*t)
    assert isinstance(got, torch.Tensor) and rel_err(got.cpu().numpy(), want) <= 1e-12


@needs_nvcc
def test_a_cached_folder_written_without_compiling_gets_its_cuda_library(tmp_path):
    """An outside tester: `codegen --cuda` after `codegen --cuda --no-compile` said "up to date"
    and built only the C module; the CUDA library (and nvcc's errors) waited for the first GPU
    call. The cache hit builds it now."""
    path = tmp_path / "qball.yaml"
    path.write_text(QBALL)
    out = str(tmp_path / "qball")
    options = dict(functions=["forward_dynamics"], cuda=ARCH)
    scleron.generate(str(path), out, compile=False, **options)
    assert not glob.glob(os.path.join(out, "*.so"))
    report = scleron.pipeline.Report("qball", 3)
    dyn = scleron.generate(str(path), out, report=report, **options)
    assert report.cache_hit and "compile CUDA" in report.times
    assert os.path.isfile(os.path.join(out, dyn.cuda.LIBRARY))
