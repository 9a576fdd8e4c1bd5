"""Renders the generated folder's files from this backend's jinja2 templates (templates/)."""
import functools
import keyword
import re
import sys
from pathlib import Path

import jinja2

C_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
              "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
              "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
              "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main"}


# names a generated package must not take: Python keywords and the modules it would shadow on
# sys.path (the standard library, and what a generated package or scleron imports)
def _standard_library():
    """The standard library's top-level module names (sys.stdlib_module_names from Python 3.10;
    before it, the built-in modules and those in the standard library's folder)."""
    if hasattr(sys, "stdlib_module_names"):
        return set(sys.stdlib_module_names)
    import pkgutil
    import sysconfig
    return set(sys.builtin_module_names) | {m.name for m in pkgutil.iter_modules(
        [sysconfig.get_path("stdlib")])}


PY_MODULES = _standard_library() | {"numpy", "cffi", "scleron", "sympy", "jinja2", "yaml",
                                    "setuptools", "pip",
                                    # what those import: cffi's compiled backend and parser
                                    # (an importing package compiles with them), sympy's and
                                    # jinja2's own, setuptools' hooks
                                    "_cffi_backend", "pycparser", "mpmath", "markupsafe",
                                    "pkg_resources", "_distutils_hack",
                                    # scleron's optional imports (readers, checks, plots, GPU)
                                    "mujoco", "opensim", "pinocchio", "matplotlib", "cupy",
                                    "pytest", "hypothesis"}
PY_RESERVED = set(keyword.kwlist) | PY_MODULES


def c_identifier(name):
    """A valid, harmless C and Python identifier made from any text: C and Python keywords
    and the names of modules it would shadow get "_model" appended (`numpy` -> `numpy_model`)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).strip("_") or "model"
    if ident[0].isdigit():
        ident = "m_" + ident
    if ident in C_KEYWORDS or ident in PY_RESERVED:
        ident += "_model"
    return ident[:64]


def c_comment(text):
    """Text safe inside a C block comment and inside a Python docstring or string literal
    (names from model files end up in both): one line of printable characters without
    comment delimiters, double quotes, backslashes or trigraphs (C99 reads "??/" as a backslash:
    a name "b1??/" warned under -Wall and lost its last character in a docstring)."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    text = text.replace("\\", "/").replace('"', "'")
    while "*/" in text or "/*" in text or "??" in text:
        text = text.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    return text


def template_dir():
    """This backend's templates/ folder (installed as package data beside this module)."""
    return Path(__file__).resolve().parent / "templates"


@functools.lru_cache(maxsize=None)
def environment(folder=None):
    """The jinja2 environment of a templates folder (default: this backend's), one per process:
    jinja2 compiles each template once per environment (a tenth of a second for this backend's
    set) and reloads a template whose file has changed."""
    loader = jinja2.FileSystemLoader(str(folder or template_dir()))
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    env.filters["pyrepr"] = repr
    return env


def template_texts():
    """Name -> text of every template (part of the cache key)."""
    root = template_dir()
    return {p.name: p.read_text() for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".j2")}


# generated file name (a format of the model's C name) -> template
FILES = {
    "{name}_dynamics.h": "dynamics.h.j2",
    "{name}_dynamics.c": "dynamics.c.j2",
    "build_{name}.py": "build.py.j2",
    "{name}_target.py": "target.py.j2",
    "__init__.py": "__init__.py.j2",
    "{name}_python.c": "python_ext.c.j2",
}


def render_files(ctx):
    """filename -> text for the generated folder, from a context dict."""
    env = environment()
    return {fname.format(name=ctx["name"]): env.get_template(template).render(ctx)
            for fname, template in FILES.items()}
