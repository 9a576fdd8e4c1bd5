"""The 12 Euler / Tait-Bryan charts as a standalone C library and Python module (`scleron
charts`): euler_charts.h, euler_charts.c and euler_charts.py, for code outside scleron that
switches a spherical joint's chart (Sueda 2.5.5, Table 3, eq. 2.40).

What each chart holds is derived by scleron.joints.charts (emitted: sympy expressions and Table 3
as data; scleron.charts.write_charts passes it in). Here each quantity's entries are reduced by
sympy's common-subexpression elimination and printed by sympy's C99 and Python printers, and the
files are filled from this folder's jinja2 templates. The layouts are joints.charts' (3x3 blocks
row-major double[9], derivative stacks double[27]).
"""
import errno
import os
import tempfile
from pathlib import Path

import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.pycode import PythonCodePrinter

from ..c.render import environment

TEMPLATES = Path(__file__).resolve().parent / "templates"
FILES = ("euler_charts.h", "euler_charts.c", "euler_charts.py")   # each from its NAME.j2


class _MathPrinter(PythonCodePrinter):
    """Python printer that writes math.sin(...) and so on, for scalar float inputs."""


def quantity_code(chart, key, needs_qd, stack, entries, printers):
    """One quantity of a chart for the templates: its entries after sympy's CSE, printed in each
    language of printers ({"c": ..., "py": ...}), and the coordinates they read."""
    repl, reduced = sp.cse(entries, symbols=sp.numbered_symbols("x"), order="none")
    used = set().union(*(e.free_symbols for _, e in repl),
                       *(e.free_symbols for e in reduced if isinstance(e, sp.Basic)))
    inputs = [(sym.name, array, k) for array in ("q", "qd")
              for k, sym in enumerate(chart[array]) if sym in used]
    code = {"key": key, "needs_qd": needs_qd, "scalar": key == "detS", "size": len(entries),
            "inputs": inputs}
    for lang, printer in printers.items():
        code[lang] = {"temps": [(sym.name, printer.doprint(e)) for sym, e in repl],
                      "outputs": [printer.doprint(e) for e in reduced]}
    rows = ["[" + ", ".join(code["py"]["outputs"][3 * r:3 * r + 3]) + "]"
            for r in range(len(entries) // 3)]
    code["py"]["rows"] = (["[" + ", ".join(rows[3 * s:3 * s + 3]) + "]" for s in range(3)]
                          if stack else rows)
    return code


def entry(signed_index):
    """(negated, row, column), 0-based, of a signed 1-based entry of R (-31: -R_31)."""
    i, j = divmod(abs(signed_index), 10)
    return signed_index < 0, i - 1, j - 1


def chart_code(chart, printers):
    """A chart (scleron.joints.charts.emitted) for the templates: its quantities and its Table 3
    (q from R) as entries of R."""
    (a, b), (kind, m), (c, d) = chart["q_from_R"]
    sc, sd = chart["singular_q3"]
    return {"name": chart["name"],
            "quantities": [quantity_code(chart, *q, printers) for q in chart["quantities"]],
            "q_from_R": {"a": entry(a), "b": entry(b), "kind": kind, "m": entry(m),
                         "c": entry(c), "d": entry(d), "sc": entry(sc), "sd": entry(sd)}}


def render_charts(charts):
    """file name -> text of the three files, for the charts (scleron.joints.charts.emitted)."""
    printers = {"c": C99CodePrinter(), "py": _MathPrinter({"standard": "python3"})}
    context = {"charts": [chart_code(chart, printers) for chart in charts],
               "gimbal_lock": repr(charts[0]["gimbal_lock"])}
    env = environment(TEMPLATES)
    return {fname: env.get_template(fname + ".j2").render(context) for fname in FILES}


def write_charts(outdir, charts):
    """Write euler_charts.c, euler_charts.h and euler_charts.py into outdir: all three or none,
    each written beside its place and renamed into it. charts: a callable giving the charts
    (scleron.joints.charts.emitted, each), called once the places are checked (sympy takes
    seconds). Returns the paths."""
    os.makedirs(outdir, exist_ok=True)
    paths = {fname: os.path.join(outdir, fname) for fname in FILES}
    for path in paths.values():         # all three or none (a folder at one left the others
        if os.path.isdir(path) or (os.path.islink(path) and not os.path.exists(path)):  # written)
            raise OSError(errno.EISDIR if os.path.isdir(path) else errno.ENOENT,
                          "a folder is there" if os.path.isdir(path)
                          else "a dangling link is there",
                          path)
    files = render_charts(list(charts()))
    temps = []
    try:
        for fname, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{fname}.", dir=outdir)
            temps.append((tmp, paths[fname]))
            with os.fdopen(fd, "w") as f:
                f.write(text if text.endswith("\n") else text + "\n")
            os.chmod(tmp, 0o644)
        for tmp, path in temps:
            os.replace(tmp, path)
        temps = []
    finally:
        for tmp, _ in temps:
            try:
                os.remove(tmp)
            except OSError:
                pass
    return list(paths.values())
