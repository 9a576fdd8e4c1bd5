"""Building a generated folder's CUDA code with nvcc (the CUDA backend's build).

The same machinery as the C backend's build (scleron.backends.c.build): the folder's build
script (build_NAME_cuda.py) runs in a child process of its own process group, watched so that
no compiler outlives the run; its output goes to a log, a failure is one BuildError line naming
the first error and a kept copy of the log; a missing nvcc is one line before any work. The
library and ptxas's register and spill report (NAME_cuda_resources.txt) land in the folder,
which is then installed atomically with the rest (scleron.backends.folders).
"""
import ctypes
import os
import shutil
import tempfile

from ...errors import BuildError
from ..c.build import first_error, keep_log, run_child, short_line
from ..folders import discard_temp_folder, is_temp_folder

# where nvcc is looked for after NVCC, CUDA_HOME / CUDA_PATH and PATH
FALLBACKS = ("/usr/local/cuda/bin/nvcc",)
# one entry of a CUDA architecture list ("sm_90", "sm_90a", "sm_100f"): the options' check and the
# generated build script's (rendered into it) are this one pattern
ARCH_PATTERN = r"sm_\d+[af]?"
MAX_BLOCK = 256             # threads per block at most (the kernels' __launch_bounds__)
NVCC_HINT = ("install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads), put its "
             "bin/ on PATH or set NVCC or CUDA_HOME; or generate without --cuda")


def find_nvcc(environ=None):
    """The path of nvcc, or a BuildError of one line saying where it was looked for."""
    env = os.environ if environ is None else environ
    path = env.get("PATH", os.defpath)
    if env.get("NVCC"):
        found = shutil.which(env["NVCC"], path=path)
        if found:
            return found
        raise BuildError(f"no CUDA compiler: NVCC={env['NVCC']!r} was not found; {NVCC_HINT}")
    for home in filter(None, (env.get("CUDA_HOME"), env.get("CUDA_PATH"))):
        candidate = os.path.join(home, "bin", "nvcc")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("nvcc", path=path)
    if found:
        return found
    for candidate in FALLBACKS:
        if os.access(candidate, os.X_OK):
            return candidate
    raise BuildError("no CUDA compiler: nvcc was not found (NVCC, CUDA_HOME/bin, PATH, "
                     f"{', '.join(FALLBACKS) or 'no default place'}); {NVCC_HINT}")


def cuda_device_count():
    """The number of CUDA devices the driver reports; 0 without a driver or a device (never
    raises: the tests and benchmarks ask it to decide whether to run). The generated build
    script's device_count (templates/build_cuda.py.j2) asks the same, for a package without
    scleron."""
    for lib in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(lib)
        except OSError:
            continue
        count = ctypes.c_int(0)
        try:
            if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return 0
        except AttributeError:
            return 0
        return count.value
    return 0


def _silent(message):
    pass


def compile_cuda(folder, name, progress=None):
    """Compiles the folder's CUDA code with its build script (build_NAME_cuda.py) in a child
    process; the library and its resource report land in the folder. Returns the library."""
    folder = os.path.abspath(folder)
    try:
        return _compile(folder, name, progress or _silent)
    except BaseException:
        if is_temp_folder(folder):     # a make_temp_folder folder: nothing to keep
            discard_temp_folder(folder)
        raise


def _compile(folder, name, progress):
    script = os.path.join(folder, f"build_{name}_cuda.py")
    if not os.path.isfile(script):
        raise BuildError(f"{folder} has no CUDA build script build_{name}_cuda.py")
    env = dict(os.environ, NVCC=find_nvcc())
    build_dir = tempfile.mkdtemp(prefix="_build-cuda-", dir=folder)
    log_path = os.path.join(folder, "build_cuda.log")
    try:
        with open(log_path, "w") as log:
            log.write(f"# scleron: compiling {name}'s CUDA code in {folder}\n")
            log.flush()
            progress(f"compile: {name}'s CUDA code with {env['NVCC']}")
            returncode = run_child(script, build_dir, folder, env, log, name, progress)
        with open(log_path, errors="replace") as fh:
            text = fh.read()
        built = [ln[len("SCLERON_BUILT="):] for ln in text.splitlines()
                 if ln.startswith("SCLERON_BUILT=")]
        if returncode != 0 or not built or not os.path.isfile(built[-1]):
            kept = keep_log(log_path, name)
            os.remove(log_path)
            raise BuildError(f"compiling {name}'s CUDA code failed: "
                             f"{short_line(first_error(text))}; full nvcc output in {kept}")
        for produced in (built[-1], os.path.join(build_dir, f"{name}_cuda_resources.txt")):
            if os.path.isfile(produced):
                os.replace(produced, os.path.join(folder, os.path.basename(produced)))
        os.remove(log_path)
        return os.path.join(folder, os.path.basename(built[-1]))
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
