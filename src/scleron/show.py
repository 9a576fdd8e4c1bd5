"""Text and LaTeX views of a model: the body tree, and each joint's G, S and Sdot."""
import sympy as sp

from .joints import joint_model
from .model import WORLD


def tree_text(model):
    children = {}
    for j in model.joints:
        children.setdefault(j.parent, []).append(j)
    lines = [f"{model.name}: {len(model.bodies)} bodies, nq = nv = {model.nv}", WORLD]

    def walk(parent, indent):
        for j in children.get(parent, []):
            lines.append(f"{indent}└─ {j.child}  [{j.name}: {j.type}, {j.dof} DOF]")
            walk(j.child, indent + "   ")
    walk(WORLD, "")
    return "\n".join(lines)


def _matrix(M, fmt):
    return sp.latex(M) if fmt == "latex" else sp.pretty(M, use_unicode=True)


def joint_text(model, j, what="all", fmt="text"):
    jm = joint_model(j.type, j.params)
    G = sp.Matrix(sp.BlockMatrix([[jm.R, jm.t], [sp.zeros(1, 3), sp.ones(1, 1)]]))
    parts = []
    head = f"joint {j.name}: {j.type}, parent {j.parent} -> body {j.child}, {jm.dof} DOF"
    parts.append(head if fmt == "text" else f"\\section*{{{head.replace('_', chr(92) + '_')}}}")
    for k, (sym, meaning) in enumerate(zip(jm.q, jm.coordinates)):
        parts.append(f"  {sym}: {meaning}" if fmt == "text" else f"${sp.latex(sym)}$: {meaning}\\\\")
    items = {"G": ("Q(q) (motion part of G = X_tree Q(q))", G), "S": ("S (6 x d, [w; v])", jm.S),
             "Sdot": ("Sdot", jm.Sdot)}
    for key, (label, M) in items.items():
        if what in ("all", key):
            if fmt == "text":
                parts.append(f"{label} =\n{_matrix(M, fmt)}")
            else:
                parts.append(f"{label}: \\[ {_matrix(M, fmt)} \\]")
    return "\n".join(parts)


def show(model, joint=None, what="all", fmt="text", tree=False):
    if tree:
        return tree_text(model)
    joints = model.joints if joint is None else [j for j in model.joints if j.name == joint]
    if not joints:
        from .errors import ModelError
        raise ModelError(f"no joint named '{joint}' (joints: {', '.join(j.name for j in model.joints)})",
                         source=model.source)
    body = "\n\n".join(joint_text(model, j, what, fmt) for j in joints)
    if fmt == "latex":
        return ("\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n"
                + body + "\n\\end{document}\n")
    return body
