"""The C backend: C99 through jinja2 templates, compiled with cffi, plus a METH_FASTCALL
CPython extension for single-state calls. printer.py prints programs as C, context.py turns
function specs into template data, render.py fills templates/, build.py compiles and loads."""
from .. import Backend
from .build import compile_folder, load_package
from .context import function_context, helpers_context, variants_context
from .render import c_comment, render_files, template_texts


class CBackend(Backend):
    name = "c"

    def render(self, gen):
        """Files of the generated folder, and per function (statements, OpCounts)."""
        functions, nchunks = [], 0
        for code in gen.functions:
            f = function_context(code, gen.name, gen.chunk, nchunks)
            nchunks += len(f["chunks"])
            functions.append(f)
        ctx = {                        # the guard keeps the name's case: ur5 and UR5 in one program
            "name": gen.name, "NAME": gen.name.upper(), "guard": f"SCLERON_{gen.name}_DYNAMICS_H",
            "model_name": c_comment(gen.model_name), "source": c_comment(gen.source),
            "version": gen.version, "nq": gen.nq, "nv": gen.nv, "hash": gen.key,
            "module": f"_{gen.name}_{gen.key[:12]}",
            "coordinates": [c_comment(c) for c in gen.coordinate_descriptions],   # (the header's)
            "coordinate_descriptions": list(gen.coordinate_descriptions),       # (Python's, as is)
            "velocity_descriptions": list(gen.velocity_descriptions),
            "coordinate_names": gen.coordinate_names,
            "velocities": [c_comment(v) for v in gen.velocity_descriptions],
            "velocity_names": gen.velocity_names, "known_functions": gen.known_functions,
            "mimic_unavailable": gen.mimic_unavailable,
            "aliases": gen.aliases,
            "joint_names": gen.joint_names, "gravity": " ".join(f"{g:g}" for g in gen.gravity),
            "gravity_list": list(gen.gravity), "functions": functions,
            "variants": variants_context(functions, gen.option_names),
            "frame_names": list(gen.frame_names),
            "frame_comments": [c_comment(f) for f in gen.frame_names],
            "wrench_frame_names": list(gen.wrench_frame_names),
            "wrench_frame_comments": ([c_comment(f) for f in gen.wrench_frame_names]
                                      if gen.wrench_frame_names != gen.frame_names else []),
            "neutral": [float(x) for x in gen.neutral], "quaternions": list(gen.quaternions),
            "helpers": helpers_context([p for code in gen.functions for p in code.programs]),
            "cflags": repr(gen.cflags), "nchunks": nchunks, "method": gen.method,
            "any_sincos": any(f["sincos"] for f in functions),
        }
        stats = {f["name"]: (f["statements"], f["counts"]) for f in functions}
        return render_files(ctx), stats

    def template_texts(self):
        return template_texts()

    def compile(self, folder, name, progress=None):
        return compile_folder(folder, name, progress)

    def load(self, folder, expect=None):
        return load_package(folder, expect)
