"""Template data of the CUDA backend, read from the function specs and their programs (as the
C backend's context.py: nothing here knows a function by name)."""
from ..c.context import helpers_context, variants_context
from ..c.render import c_comment
from .build import ARCH_PATTERN, MAX_BLOCK
from .printer import print_device


def _param(name, out):
    return f"double *__restrict__ {name}" if out else f"const double *__restrict__ {name}"


def function_context(code, prefix, split=None):
    """Template data of one function: its device parts, kernel and launcher parameters."""
    spec, sizes = code.spec, code.sizes
    fname = f"{prefix}_{spec.name}"
    dev = print_device(code.program, fname, split)
    ins = [{"name": a.name, "size": a.size(sizes), "doc": a.doc, "shape": a.dims(sizes)}
           for a in spec.inputs]
    outs = [{"name": a.name, "size": a.size(sizes), "shape": list(a.dims(sizes)),
             "doc": a.doc} for a in spec.outputs]
    arrays = [(a["name"], a["size"], False) for a in ins] + [(a["name"], a["size"], True)
                                                                 for a in outs]
    work = dev.nwork > 0
    return {
        "name": spec.name, "doc": c_comment(spec.doc), "statements": dev.statements,
        "counts": dev.counts, "parts": [{"name": p.name, "lines": p.lines} for p in dev.parts],
        "nwork": dev.nwork,
        # the device function of one state: pointers to its entry 0, the stride s between entries
        "device_params": ", ".join(_param(n, o) for n, _, o in arrays) + ", const scl_index s"
                         + (", double *__restrict__ w, const scl_index ws" if work else ""),
        "kernel_params": ", ".join(_param(n, o) for n, _, o in arrays)
                         + (", double *__restrict__ w" if work else ""),
        "public_params": ", ".join(f"double *{n}" if o else f"const double *{n}"
                                   for n, _, o in arrays),
        "args": ", ".join(n for n, _, _ in arrays),
        "kernel_args": ", ".join(n for n, _, _ in arrays) + (", w" if work else ""),
        "aos_args": ", ".join(f"{n} + (scl_index)k * {size}" for n, size, _ in arrays)
                    + ", 1" + (", w + k, n" if work else ""),
        "soa_args": ", ".join(f"{n} + k" for n, _, _ in arrays) + ", n"
                    + (", w + k, n" if work else ""),
        "inputs": ins, "outputs": outs, "variant": spec.variant,
        "py_args": ", ".join(a.name for a in spec.inputs),
    }


def generation_context(gen, library, options):
    """Template data of the whole .cu file, its build script and its Python module."""
    functions = [function_context(code, gen.name, options["split"]) for code in gen.functions]
    return {
        "name": gen.name, "model_name": c_comment(gen.model_name),
        "source": c_comment(gen.source), "version": gen.version, "hash": gen.key,
        "nq": gen.nq, "nv": gen.nv, "library": library, "functions": functions,
        "variants": variants_context(functions),
        "helpers": helpers_context([p for code in gen.functions for p in code.programs]),
        "arch": options["arch"], "arch_pattern": ARCH_PATTERN, "max_block": MAX_BLOCK,
        "flags": list(options["flags"]), "split": options["split"],
        "block": options["block"],
    }
