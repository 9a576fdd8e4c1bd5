"""Template data of the C + cffi backend, read from the function specs and their programs.

Every signature, stride, shape and docstring of the generated files comes from a
FunctionSpec's inputs and outputs (scleron.functions); nothing here knows a function by name.
The loop forms (Method II, the mass matrix's loop form) add the tables their C loops walk.
"""
from ...program.program import OpCounts
from .printer import c_literal, print_program
from .render import c_comment

# Method II kernels: (inputs, outputs); the root's kernels lack Jp, zp, ep
KERNEL_ARRAYS = {
    "articulated_inertia": ("kin J", "U L Jp"),
    "articulated_bias": ("kin U L tb z", "cb zp"),
    "joint_acceleration": ("kin U L cb ep", "qdd e"),
}
FORM_DOCS = {"unrolled": "", "method2": " (Method II: passes 4-6 as loops)",
             "mass_loop": " (loop form: world-frame columns, dense products)"}


def helpers_context(programs):
    """The Helper functions the programs call, each once: name, C body lines, comment."""
    seen = {}
    for p in programs:
        for h in p.used_helpers():
            seen.setdefault(h.name, h)
    return [{"name": h.name, "body": list(h.c_body), "doc": c_comment(h.doc)}
            for _, h in sorted(seen.items())]


def add_counts(counts, other, times=1):
    for f in ("mul", "add", "neg", "fn"):
        setattr(counts, f, getattr(counts, f) + times * getattr(other, f))


def _method2_context(m2):
    """Template data of forward dynamics by Method II: kernels, body tables, constants."""
    kernels, classes = [], []
    for cls in m2.classes:
        names = {}
        for step, prog in cls.kernels.items():
            ins, outs = KERNEL_ARRAYS[step]
            skip = {"Jp", "zp", "ep"} if cls.root else set()
            arrays = ([(a, False) for a in ins.split() if a not in skip]
                      + [(a, True) for a in outs.split() if a not in skip])
            kf = print_program(prog, prog.name, arrays, chunk=10 ** 9)
            names[step] = prog.name
            kernels.append({"name": prog.name, "params": kf.chunk_params,
                            "lines": kf.chunks[0].lines, "statements": kf.statements,
                            "counts": kf.counts, "step": step, "cls": cls.index})
        members = [c_comment(b["name"]) for b in m2.bodies if b["cls"] == cls.index]
        classes.append({"index": cls.index, "root": cls.root, "dof": cls.dof,
                        "stored": cls.kin_size, "members": members, **names})
    bodies = m2.bodies
    return {
        "nb": len(bodies), "nkin": m2.nkin, "nl": m2.nl, "kernels": kernels, "classes": classes,
        "parent": ", ".join(str(b["parent"]) for b in bodies),
        "cls": ", ".join(str(b["cls"]) for b in bodies),
        "koff": ", ".join(str(b["koff"]) for b in bodies),
        "qs": ", ".join(str(b["qs"]) for b in bodies),
        "loff": ", ".join(str(b["loff"]) for b in bodies),
        "inertia": [", ".join(c_literal(x) for x in row) for row in m2.inertia],
        "body_names": [c_comment(b["name"]) for b in bodies],
        "statements": sum(k["statements"] for k in kernels),
    }


def _mass_loop_context(nv, ml):
    """Template data of the mass matrix in loop form: the upper and lower ranges."""
    def table(ranges):
        return {"n": len(ranges), "row": ", ".join(str(r) for r, _, _ in ranges),
                "first": ", ".join(str(f) for _, f, _ in ranges),
                "end": ", ".join(str(e) for _, _, e in ranges)}
    entries = sum(e - f for _, f, e in ml.upper)
    return {"upper": table(ml.upper), "lower": table(ml.lower), "entries": entries,
            "lower_entries": sum(e - f for _, f, e in ml.lower),
            "full": entries == nv * (nv + 1) // 2}


def _printed(code, prefix, chunk, first_index):
    """(CFunction, method2 context, mass-loop context) of one function's code."""
    spec = code.spec
    arrays = [(a.name, False) for a in spec.inputs]
    fname = f"{prefix}_{spec.name}"
    method2 = mass_loop = None
    if code.form == "method2":
        arrays += [("kin", True), ("tb", True)]
    elif code.form == "mass_loop":
        arrays += [("Sw", True), ("Fw", True)]
    else:
        arrays += [(a.name, True) for a in spec.outputs]
    cf = print_program(code.program, fname, arrays, chunk=chunk, first_index=first_index,
                       sincos_of="q")
    if code.form == "method2":
        method2 = _method2_context(code.loops)
        cf.statements += method2["statements"]
        for k in method2["kernels"]:           # each body runs its class's three kernels
            add_counts(cf.counts, k["counts"], sum(b["cls"] == k["cls"] for b in code.loops.bodies))
    elif code.form == "mass_loop":
        mass_loop = _mass_loop_context(code.sizes["nv"], code.loops)
        add_counts(cf.counts, code.loops.loop_counts())
    return cf, method2, mass_loop


def _pointer(a, out):
    return f"double *{a.name}" if out else f"const double *{a.name}"


def function_context(code, prefix, chunk, first_index):
    """Template data of one generated function (and its statistics)."""
    spec, sizes = code.spec, code.sizes
    cf, method2, mass_loop = _printed(code, prefix, chunk, first_index)
    ins, outs = spec.inputs, spec.outputs
    args = [(a, False) for a in ins] + [(a, True) for a in outs]
    return {
        "name": spec.name, "doc": spec.doc + FORM_DOCS[code.form],
        "method2": method2, "mass_loop": mass_loop, "chunks": cf.chunks, "nwork": cf.nwork,
        "sincos": cf.sincos, "statements": cf.statements, "counts": cf.counts,
        "chunk_params": cf.chunk_params, "chunk_args": cf.chunk_args,
        "public_params": ", ".join(_pointer(a, o) for a, o in args),
        "batch_args": ", ".join(f"{a.name} + (long)k * {a.size(sizes)}" for a, _ in args),
        "inputs": [{"name": a.name, "size": a.size(sizes), "doc": a.doc} for a in ins],
        "outputs": [{"name": a.name, "size": a.size(sizes), "shape": a.dims(sizes),
                     "doc": a.doc} for a in outs],
        "output": outs[0].name,
        "py_args": ", ".join(a.name for a in ins),
    }


def total_counts(functions):
    c = OpCounts()
    for f in functions:
        add_counts(c, f["counts"])
    return c
