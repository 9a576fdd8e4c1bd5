"""Backends: each output language is one folder behind the Backend interface.

A backend turns the generation's programs (scleron.unroll.FunctionCode, one per function spec)
into the files of a generated folder, builds that folder and loads it back:

    render(generation) -> {file name: text}     print the programs, fill the templates
    template_texts()   -> {name: text}          part of the cache key
    compile(folder, name, progress=None)         build the binaries in the folder
    load(folder)                                 the loaded module
    attach(module, folder)                       a backend whose code joins another's package
                                                 (CUDA beside the C) adds itself to the module

`backends/c/` (C99 + cffi + a CPython fast extension) is the first, `backends/cuda/` (CUDA
device code beside the C, ctypes) the second; each one's printer, templates, build and loader
live in its folder. Output folders are written atomically by backends/folders.py,
which every backend shares.
"""


class Backend:
    """The interface every backend implements (see the module docstring)."""
    name = ""

    def render(self, generation):
        raise NotImplementedError

    def template_texts(self):
        raise NotImplementedError

    def compile(self, folder, name, progress=None):
        raise NotImplementedError

    def load(self, folder):
        raise NotImplementedError

    def attach(self, module, folder):
        """Nothing to add: the module is this backend's own (see the module docstring)."""
        return module


def backend(name="c", options=None):
    """The backend of an output language (options: the CUDA backend's, see cuda_options)."""
    if name == "c":
        from .c import CBackend
        return CBackend()
    if name == "cuda":
        from .cuda import CudaBackend
        return CudaBackend(True if options is None else options)
    raise ValueError(f"unknown backend {name!r} (one of: c, cuda)")
