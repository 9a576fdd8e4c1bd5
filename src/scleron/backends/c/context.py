"""Template data of the C + cffi backend, read from the function specs and their programs.

Every signature, stride, shape and docstring of the generated files comes from a
FunctionSpec's inputs and outputs (scleron.functions); nothing here knows a function by name.
The loop forms (Method II, the mass matrix's, the derivatives' pairs and products) add the
tables their C loops walk.
"""
import re
from dataclasses import dataclass

from .printer import c_literal, print_program
from .render import c_comment



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


def _loop_argument(m2, name, param):
    """The C argument of a kernel parameter inside the loop over bodies k (parent p)."""
    array, where, _ = param
    if where == "kin":
        return f"kin + {name}_m2_koff[k]"
    if where == "share":
        return array
    base = array[:-1] if where == "parent" else array
    st = m2.storage[base]
    if st.per == "ldl":
        return f"{array} + {name}_m2_loff[k]"
    if st.per == "coords":
        return (f"{array} + {name}_m2_qs[k]" if st.size == 1
                else f"{array} + {st.size} * {name}_m2_qs[k]")
    return f"{base} + {st.size} * {'p' if where == 'parent' else 'k'}"


def _method2_context(m2, name, nv, public):
    """Template data of forward dynamics by Method II: kernels, the loop of each pass, tables,
    the arrays between passes and their initial values."""
    kernels, passes = [], []
    for bp in m2.passes:
        calls = []
        for cls in m2.classes:
            kernel = cls.kernels[bp.label]
            prog = kernel.program
            kf = print_program(prog, prog.name, [(a, out) for a, _, out in kernel.params],
                               chunk=10 ** 9)
            body = "\n".join(kf.chunks[0].lines)
            # (a kernel takes its pass's arrays; one joint class's needs not all:
            # -Wunused-parameter)
            unused = [str(a) for a, _, _ in kernel.params
                      if not re.search(rf"\b{re.escape(str(a))}\b", body)]
            kernels.append({"name": prog.name, "params": kf.chunk_params,
                            "lines": kf.chunks[0].lines,
                            "statements": kf.statements, "label": bp.label, "cls": cls.index,
                            "unused": unused})
            calls.append({"cls": cls.index, "kernel": prog.name,
                          "args": ", ".join(_loop_argument(m2, name, p) for p in kernel.params)})
        share = bp.to_parent and {"array": bp.to_parent, "size": m2.storage[bp.to_parent].size}
        passes.append({"label": bp.label, "leaves_first": bp.leaves_first, "calls": calls,
                       "share": share})
    sizes = {"body": len(m2.bodies), "coords": nv}
    arrays = sorted({a for bp in m2.passes for a, _ in bp.reads + bp.writes} - set(public)
                    - {"kin", "tb"})
    st = m2.storage
    local = [{"name": a, "size": m2.nl if st[a].per == "ldl" else st[a].size * sizes[st[a].per]}
             for a in arrays]
    local += [{"name": bp.to_parent + "p", "size": st[bp.to_parent].size}
              for bp in m2.passes if bp.to_parent]
    initial = [{"name": a, "zero": all(x == 0.0 for v in values for x in v),
                "layout": c_comment(st[a].layout) if a in st else "",
                "values": [", ".join(c_literal(x) for x in v) for v in values]}
               for a, values in m2.initial.items()]
    bodies = m2.bodies
    return {
        "nb": len(bodies), "nkin": m2.nkin, "kernels": kernels, "passes": passes,
        "local": local, "initial": initial,
        "classes": [{"index": c.index, "root": c.root, "dof": c.dof, "stored": c.kin_size,
                     "members": [c_comment(b["name"]) for b in bodies if b["cls"] == c.index]}
                    for c in m2.classes],
        "parent": ", ".join(str(b["parent"]) for b in bodies),
        "cls": ", ".join(str(b["cls"]) for b in bodies),
        "koff": ", ".join(str(b["koff"]) for b in bodies),
        "qs": ", ".join(str(b["qs"]) for b in bodies),
        "loff": ", ".join(str(b["loff"]) for b in bodies),
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
            "armature": [(r * nv + r, repr(float(a))) for r, a in ml.armature],
            "full": entries == nv * (nv + 1) // 2}


def _pair_loop_context(pl):
    """Template data of the entries between related bodies in loop form (unroll.PairLoop): the
    ranges tables, the vector arrays, and the calls of the products, those that share their
    first vector and ranges in one loop (kernels: the terms of each product of a call)."""
    tables = {which: {"n": len(r), "row": ", ".join(str(x) for x, _, _ in r),
                      "first": ", ".join(str(f) for _, f, _ in r),
                      "end": ", ".join(str(e) for _, _, e in r)}
              for which, r in pl.ranges.items()}
    groups = {}                     # the products sharing a vector and ranges: one loop
    for o, a, b, t, w in pl.products:
        if tables[w]["n"]:
            groups.setdefault((a, w), []).append((o, b, t))
    calls = [{"a": a, "which": w, "kernel": "_".join(str(t) for _, _, t in g),
              "bs": [b for _, b, _ in g], "outs": [o for o, _, _ in g]}
             for (a, w), g in groups.items()]
    kernels = {c["kernel"]: [t for _, _, t in groups[c["a"], c["which"]]] for c in calls}
    return {"tables": tables,
            "vectors": [{"name": n, "size": k * pl.nv} for n, k in pl.vectors],
            "kernels": [{"id": k, "terms": ts} for k, ts in kernels.items()],
            "calls": calls, "outputs": pl.outputs, "full": pl.full, "nv": pl.nv}


def _frame_loop_context(fl):
    """Template data of the frame Jacobians in loop form (unroll.FrameLoop): the ranges and gaps
    tables and, per row of J, its C expression in the columns s0..s5 of Sw and the stored
    entries a0.. of the frame's reference matrix."""
    def table(ranges):
        return {"n": len(ranges), "frame": ", ".join(str(x) for x, _, _ in ranges),
                "first": ", ".join(str(f) for _, f, _ in ranges),
                "end": ", ".join(str(e) for _, _, e in ranges)}
    stored = {i: n for n, i in enumerate(i for i, p in enumerate(fl.pattern) if p is None)}
    rows = []
    for r in range(6):
        expr = ""
        for k, p in fl.row_terms(r):
            factor = (f"a{stored[6 * r + k]} * " if p is None else "" if abs(p) == 1.0
                      else f"{c_literal(abs(p))} * ")
            sign = "-" if p is not None and p < 0 else "+"
            expr += (f" {sign} " if expr else ("-" if sign == "-" else "")) + f"{factor}s{k}[c]"
        rows.append(expr or "0.0")
    return {"ranges": table(fl.ranges), "gaps": table(fl.gaps), "stored": fl.stored,
            "rows": rows, "nv": fl.nv, "nframes": fl.nframes,
            "columns": sum(e - f for _, f, e in fl.ranges)}


def _minv_mb(code):
    """Entries of the per-body factors array (mb) the prologue of a MinvLoop writes."""
    return 1 + max((i for a, i, _ in code.program.outputs if a == "mb"), default=0)


def _printed(code, prefix, chunk, first_index):
    """The CFunction of one function's code: its program printed with the spec's inputs and the
    arrays its form writes, the loops' operations counted."""
    spec = code.spec
    arrays = [(a.name, False) for a in spec.inputs] + C_FORMS[code.form].arrays(code)
    fname = f"{prefix}_{spec.name}"
    cf = print_program(code.program, fname, arrays, chunk=chunk, first_index=first_index,
                       sincos_of="q")
    if code.loops is not None:
        add_counts(cf.counts, code.loops.loop_counts())
    return cf


# a function's nv x nv local arrays (the chained form's, the product loop's factors) go on the
# heap (one malloc) above this many doubles in all: RC1000's would be 16-24 MB of stack, over
# the 8 MB of a thread (RC400's 3.8 MB still ran, in threads too)
STACK_DOUBLES = 1 << 16


def heap_layout(arrays):
    """(doubles, {name: offset}) of one allocation holding the (name, entries) arrays, each at
    whole cache lines, where they are more than STACK_DOUBLES in all; (0, {}) otherwise: the
    arrays stay on the stack (templates/heap.c.j2)."""
    heap, at = 0, {}
    if sum(n for _, n in arrays) > STACK_DOUBLES:
        for a, n in arrays:
            at[a] = heap
            heap += -(-n // 8) * 8
    return heap, at


def _pointer(a, out):
    return f"double *{a.name}" if out else f"const double *{a.name}"


# ---- each code form's C (scleron.unroll.FORMS) ------------------------------------------------
@dataclass(frozen=True)
class CForm:
    """A code form in C: the template that writes its public function (dynamics.c.j2 includes
    it), the arrays its program takes after the spec's inputs (code -> [(name, written)]), and
    its template data (data(code, prefix, cf, chunking) -> dict over FORM_DATA; cf the printed
    program, chunking (chunk, first_index) for a program of its own)."""
    template: str
    arrays: object
    data: object = None


# the template data every function has, each form's own where it has them
FORM_DATA = {"method2": None, "mass_loop": None, "product_loop": None, "minv_loop": None,
             "frame_loop": None, "pairs": None, "calls": None, "made": (), "rule": None,
             "heap": 0, "unused_inputs": (), "before_chunks": ()}


def _outputs(code):
    return [(a.name, True) for a in code.spec.outputs]


def _unrolled_data(code, prefix, cf, chunking):
    """The inputs the public function passes to none of its chunks (frame 0's placement, fixed
    to the world, reads no q): each gets a (void) for -Wunused-parameter."""
    passed = {name.strip() for c in cf.chunks for name in c.args.split(",")}
    return {"unused_inputs": [a.name for a in code.spec.inputs if a.name not in passed
                              and not (cf.sincos and a.name == "q")]}


def _method2_data(code, prefix, cf, chunking):
    method2 = _method2_context(code.loops, prefix, code.sizes["nv"],
                               [a.name for a in code.spec.outputs])
    cf.statements += method2["statements"]          # (its kernels' statements are the function's)
    return {"method2": method2}


def _mass_loop_data(code, prefix, cf, chunking):
    return {"mass_loop": _mass_loop_context(code.sizes["nv"], code.loops)}


def _product_loop_arrays(code):
    pl = code.loops
    arrays = [(a, True) for a, _ in pl.products] + [(pl.minv, True)]
    arrays += [("Dfree", True)] if pl.free else []
    if pl.pairs:
        arrays += [(v["name"], True) for v in _pair_loop_context(pl.pairs)["vectors"]]
    if pl.minv_loop:
        arrays += [("mb", True), ("P", True)]
    return arrays


def _product_loop_data(code, prefix, cf, chunking):
    """The loops, their pairs and M^-1's column steps (if any), and the nv x nv factors
    (dtau/dq, dtau/dqd), on the heap where too many."""
    pl = code.loops
    arrays = [(factor, code.sizes["nv"] ** 2) for factor, _ in pl.products]
    heap, at = heap_layout(arrays)
    return {"product_loop": pl, "minv_loop": pl.minv_loop,
            "pairs": _pair_loop_context(pl.pairs) if pl.pairs else None, "heap": heap,
            "factors": [{"name": a, "size": n, "at": at.get(a)} for a, n in arrays]}


def _pair_loop_arrays(code):
    return _outputs(code) + [(v["name"], True)
                             for v in _pair_loop_context(code.loops)["vectors"]]


def _pair_loop_data(code, prefix, cf, chunking):
    return {"pairs": _pair_loop_context(code.loops)}


def _minv_loop_data(code, prefix, cf, chunking):
    return {"minv_loop": code.loops}


def _frame_loop_data(code, prefix, cf, chunking):
    return {"frame_loop": _frame_loop_context(code.loops)}


def _chained_arrays(code):
    chain = code.loops
    arrays = [(a, False) for c in chain.calls for a, _ in c.arrays]
    return arrays + ([(a, True) for a, _ in chain.rule.made] if chain.rule is not None
                     else _outputs(code))


def _chained_data(code, prefix, cf, chunking):
    """The generated functions the chained form calls first (into local arrays), the chunks of
    its before-program (run first) and the arrays that makes. heap: the doubles of one
    allocation holding them all, where they are too many for the stack (0: none); each array's
    `at` is then its offset there, in whole cache lines."""
    chain, spec = code.loops, code.spec
    rule = chain.rule
    before = []
    if chain.before is not None:
        printed = print_program(chain.before, f"{prefix}_{spec.name}_before",
                                [(a.name, False) for a in spec.inputs]
                                + [(a, True) for a, _ in chain.made],
                                chunk=chunking[0], first_index=chunking[1])
        before = printed.chunks
        cf.nwork = max(cf.nwork, printed.nwork)
        add_counts(cf.counts, printed.counts)
    heap, at = heap_layout(list(chain.made) + [a for c in chain.calls for a in c.arrays]
                           + list(rule.made if rule is not None else ()))

    def local(a, n):
        return {"name": a, "size": n, "at": at.get(a)}
    return {"before_chunks": before,
            "calls": [{"function": c.function,
                       "args": ", ".join(list(c.inputs) + [a for a, _ in c.arrays]),
                       "arrays": [local(a, n) for a, n in c.arrays]}
                      for c in chain.calls],
            "made": [local(a, n) for a, n in chain.made], "heap": heap,
            "rule": None if rule is None else {
                "nv": rule.nv, "nbodies": len(rule.bodies),
                "first": ", ".join(str(f) for f, _, _ in rule.bodies),
                "dof": ", ".join(str(d) for _, d, _ in rule.bodies),
                "at": ", ".join(str(a) for _, _, a in rule.bodies),
                "made": [local(a, n) for a, n in rule.made],
                "dq": rule.reads[0], "dqd": rule.reads[1], "Minv": rule.reads[2],
                "Fx": spec.outputs[0].name, "Fu": spec.outputs[1].name}}


C_FORMS = {
    "unrolled": CForm("unrolled.c.j2", _outputs, _unrolled_data),
    "method2": CForm("method2.c.j2", lambda code: [("kin", True), ("tb", True)], _method2_data),
    "mass_loop": CForm("massloop.c.j2", lambda code: [("Sw", True), ("Fw", True)],
                       _mass_loop_data),
    "product_loop": CForm("productloop.c.j2", _product_loop_arrays, _product_loop_data),
    "pair_loop": CForm("pairloop.c.j2", _pair_loop_arrays, _pair_loop_data),
    "minv_loop": CForm("minvloop.c.j2", lambda code: _outputs(code) + [("mb", True), ("P", True)],
                       _minv_loop_data),
    "frame_loop": CForm("frameloop.c.j2", lambda code: [("Sw", True), ("A", True)],
                        _frame_loop_data),
    "chained": CForm("chained.c.j2", _chained_arrays, _chained_data),
}


def function_context(code, prefix, chunk, first_index):
    """Template data of one generated function (and its statistics)."""
    spec, sizes = code.spec, code.sizes
    shape = C_FORMS[code.form]
    cf = _printed(code, prefix, chunk, first_index)
    data = {**FORM_DATA, **shape.data(code, prefix, cf, (chunk, first_index))}
    ins, outs = spec.inputs, spec.outputs
    args = [(a, False) for a in ins] + [(a, True) for a in outs]
    return {
        "name": spec.name,
        # (a per-frame function's doc holds the frame's name, from the model file)
        "doc": c_comment(spec.doc + ("" if code.form == "unrolled" else f" ({code.description})")),
        "template": shape.template, **data, "nwork": cf.nwork,
        "chunks": list(data["before_chunks"]) + cf.chunks, "after_chunks": cf.chunks,
        "minv_mb": _minv_mb(code),
        "sincos": cf.sincos, "statements": cf.statements, "counts": cf.counts,
        "public_params": ", ".join(_pointer(a, o) for a, o in args),
        "batch_args": ", ".join(f"{a.name} + (long long)k * {a.size(sizes)}" for a, _ in args),
        "inputs": [{"name": a.name, "size": a.size(sizes), "doc": a.doc, "scalar": not a.shape,
                    "shape": a.dims(sizes)} for a in ins],
        "outputs": [{"name": a.name, "size": a.size(sizes), "shape": a.dims(sizes),
                     "doc": a.doc} for a in outs],
        "output": outs[0].name,
        "py_args": ", ".join(a.name for a in ins),
        "variant": spec.variant,
    }


def variants_context(functions, named=None):
    """The generated Python functions that choose a generated function by options
    (FunctionSpec.variant): name, inputs, the options (name, default or None, the values in
    order, and `known`: every value a caller may name, generated or not, from named = {option:
    values}, e.g. all the model's frames where --frames generated some) and the table (option
    values) -> function name."""
    out = {}
    for f in functions:
        if f["variant"] is None:
            continue
        name, options = f["variant"]
        v = out.setdefault(name, {"name": name, "py_args": f["py_args"], "table": {},
                                  "options": [{"name": o, "default": d, "values": []}
                                              for o, _, d in options],
                                  "doc": f["doc"].split(", reference")[0].split(" of frame ")[0],
                                  "outputs": f["outputs"]})
        for slot, (_, value, _) in zip(v["options"], options):
            if value not in slot["values"]:
                slot["values"].append(value)
        v["table"][tuple(value for _, value, _ in options)] = f["name"]
    for v in out.values():
        for slot in v["options"]:
            slot["known"] = list((named or {}).get(slot["name"]) or slot["values"])
        # the values as they appear in the docstring: names from the model file, made harmless
        v["shown"] = {s["name"]: ", ".join(c_comment(repr(x)) for x in s["values"][:6])
                      + (", ..." if len(s["values"]) > 6 else "") for s in v["options"]}
        v["example"] = "".join(f", {s['name']}={c_comment(repr(s['values'][-1]))}"
                               for s in v["options"])
    return list(out.values())

