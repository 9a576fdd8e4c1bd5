"""The CUDA backend: the generation's straight-line programs as CUDA device code, one thread
per state, beside the C backend's files in the same folder.

printer.py prints programs as device code (the C printer's statements with strides, registers
instead of a work array, optional kernel parts), context.py turns function specs into template
data, templates/ holds the .cu, its nvcc build script and the Python module `cuda.py`
(ctypes + any array exposing __cuda_array_interface__ or DLPack), build.py runs nvcc.

Files added to a generated folder NAME/:
    NAME_dynamics.cu         every generated function as a __device__ function of one state,
                             AoS and SoA __global__ kernels and extern "C" launchers
    build_NAME_cuda.py       the nvcc build (also runnable by hand)
    cuda.py                  the Python side: `dyn.cuda.forward_dynamics(Q, Qd, Tau)`
    _NAME_HASH_cuda.so       the library (after compiling), NAME_cuda_resources.txt (ptxas)
"""
import importlib
import os
import re
from pathlib import Path

from .. import Backend
from ..c.render import environment
from .build import (ARCH_PATTERN, MAX_BLOCK, compile_cuda, cuda_device_count,  # noqa: F401
                    find_nvcc)                                                  # (public names)
from .context import generation_context

# nvcc flags: -O3 and fp64 as written (no fast-math: results must equal the CPU's to 1e-12);
# --fmad=true lets ptxas fuse a*b+c as gcc's -ffp-contract=fast does on the CPU
DEFAULT_FLAGS = ("-O3", "--fmad=true", "-std=c++17", "-lineinfo")
DEFAULT_BLOCK = 128
ARCH_CHOICES = "auto, native or sm_XX[,sm_YY...]"

FILES = {
    "{name}_dynamics.cu": "dynamics.cu.j2",
    "build_{name}_cuda.py": "build_cuda.py.j2",
    "cuda.py": "cuda.py.j2",
}


def cuda_options(cuda=True):
    """The CUDA options of a generation as a dict (part of the cache key): cuda is True (the
    defaults) or a dict of arch ("auto": native when a GPU is visible at build time, else
    sm_80 and sm_90; "native"; "sm_90"; "sm_80,sm_90"), split ("auto": printer.part_size;
    None: one kernel per function; K: kernels of about K statements), block (threads per block)
    and flags (nvcc flags)."""
    if cuda is not True and not isinstance(cuda, dict):
        raise ValueError(f"cuda must be True or a dict of CUDA options (arch, split, block, "
                         f"flags), not {cuda!r}")
    given = {} if cuda is True else dict(cuda)
    flags = given.get("flags")
    if flags is not None and (isinstance(flags, str) or not isinstance(flags, (list, tuple))
                              or not all(isinstance(f, str) for f in flags)):
        raise ValueError(f"CUDA flags must be a list of nvcc's arguments as strings (e.g. "
                         f"['-O3', '--use_fast_math']), not {flags!r}")
    unknown = set(given) - {"arch", "split", "block", "flags"}
    if unknown:
        raise ValueError(f"unknown CUDA option(s) {sorted(unknown)} (arch, split, block, flags)")
    # (None: the default; an empty arch or a block of 0 is refused, not taken for the default)
    opts = {"arch": "auto" if given.get("arch") is None else given["arch"],
            "split": given.get("split", "auto"),
            "block": DEFAULT_BLOCK if given.get("block") is None else given["block"],
            "flags": list(given.get("flags") or DEFAULT_FLAGS)}
    arch = opts["arch"]
    # (the generated build script checks with the same pattern)
    if not isinstance(arch, str) or not (arch in ("auto", "native") or all(
            re.fullmatch(ARCH_PATTERN, a.strip()) for a in arch.split(","))):
        raise ValueError(f"CUDA arch must be {ARCH_CHOICES}, not {arch!r}")
    split = opts["split"]
    if split not in (None, "auto") and (isinstance(split, bool) or not isinstance(split, int)
                                        or split < 1):
        raise ValueError("CUDA split must be 'auto', None (one kernel per function) or a positive "
                         f"number of statements per kernel, not {split!r}")
    block = opts["block"]
    if isinstance(block, bool) or not isinstance(block, int) or not 1 <= block <= MAX_BLOCK:
        raise ValueError(f"CUDA block must be a number of threads from 1 to {MAX_BLOCK}, "
                         f"not {block!r}")
    return opts


def template_dir():
    return Path(__file__).resolve().parent / "templates"


def template_texts():
    return {p.name: p.read_text() for p in sorted(template_dir().iterdir(), key=lambda p: p.name)
            if p.name.endswith(".j2")}


def library_name(gen):
    return f"_{gen.name}_{gen.key[:12]}_cuda.so"


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, options=True):
        self.options = cuda_options(options)

    def render(self, gen):
        """The CUDA files of the generated folder, and per function (statements, OpCounts).
        gen.functions must be unrolled programs (the CUDA code has no loop forms)."""
        forms = {code.form for code in gen.functions} - {"unrolled"}
        if forms:
            raise ValueError(f"the CUDA backend prints unrolled programs, not {sorted(forms)}")
        ctx = generation_context(gen, library_name(gen), self.options)
        env = environment(template_dir())
        files = {f.format(name=gen.name): env.get_template(t).render(ctx) for f, t in FILES.items()}
        stats = {f["name"]: (f["statements"], f["counts"]) for f in ctx["functions"]}
        return files, stats

    def template_texts(self):
        return template_texts()

    def compile(self, folder, name, progress=None):
        return compile_cuda(folder, name, progress)

    def load(self, folder):
        raise NotImplementedError("the CUDA code is loaded with its package: "
                                  "attach(module, folder)")

    @staticmethod
    def attach(module, folder):
        """Imports the folder's cuda.py as module.cuda when the folder has CUDA code (importing
        it needs no GPU and no nvcc: the library is loaded at the first call)."""
        if os.path.isfile(os.path.join(folder, "cuda.py")):
            module.cuda = importlib.import_module(module.__name__ + ".cuda")
        return module
