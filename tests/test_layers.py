"""Imports go one way (README, "How the code is organised"): each layer imports only the layers
below it. The algebra protocol is the bottom; joints, models and recursions know nothing of
programs, the program knows nothing of robots, and a backend knows programs (and the output
folders), never joints, models or recursions."""
import ast
import os

from conftest import ROOT

SRC = os.path.join(ROOT, "src", "scleron")
BELOW = {
    "errors": set(),
    "algebra": set(),
    "joints": {"errors", "algebra"},
    "model": {"errors", "algebra", "joints"},
    "dynamics": {"errors", "algebra", "joints", "model"},
    "program": {"errors", "algebra"},
    "functions": {"errors", "algebra", "joints", "model", "dynamics", "program"},
    "unroll": {"errors", "algebra", "joints", "model", "dynamics", "program", "functions"},
    "backends": {"errors", "algebra", "program"},
}


def imported_layers(path, package):
    """The top-level scleron modules a file imports (relative imports resolved)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] == "scleron" and len(parts) > 1:
                    out.add(parts[1])
            else:
                up = package[:len(package) - (node.level - 1)]
                target = up + (node.module.split(".") if node.module else [])
                out.add(target[0] if target else node.names[0].name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "scleron" and len(parts) > 1:
                    out.add(parts[1])
    return out


def test_imports_go_one_way():
    wrong = []
    for folder, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
            layer = rel[0]
            if layer not in BELOW:
                continue                        # the tools on top may import anything
            package = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
            for target in imported_layers(path, package) - {layer}:
                if target not in BELOW[layer]:
                    wrong.append(f"{'/'.join(rel)}.py imports {target}")
    assert not wrong, "imports against the layering: " + "; ".join(sorted(wrong))


def test_the_check_sees_a_wrong_import(tmp_path):
    bad = tmp_path / "x.py"
    bad.write_text("from ...dynamics import recursions\nfrom scleron.model import Model\n")
    assert imported_layers(str(bad), ["backends", "c"]) == {"dynamics", "model"}
