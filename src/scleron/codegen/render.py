"""Renders the generated folder's files from the jinja2 templates in templates/."""
import re
from pathlib import Path
from importlib import resources

import jinja2

C_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
              "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
              "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
              "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main"}


def c_identifier(name):
    """A valid, harmless C (and Python) identifier made from any text."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).strip("_") or "model"
    if ident[0].isdigit():
        ident = "m_" + ident
    if ident in C_KEYWORDS:
        ident += "_model"
    return ident[:64]


def c_comment(text):
    """Text safe inside a C block comment and inside a Python docstring or string literal
    (names from model files end up in both): one line of printable characters without
    comment delimiters, double quotes or backslashes."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    text = text.replace("\\", "/").replace('"', "'")
    while "*/" in text or "/*" in text:
        text = text.replace("*/", "* /").replace("/*", "/ *")
    return text


def template_dir():
    """templates/ of the installed package, or of the source tree when run uninstalled."""
    try:
        return resources.files("scleron.templates")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[3] / "templates"


def environment():
    loader = jinja2.FileSystemLoader(str(template_dir()))
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    env.filters["pyrepr"] = repr
    return env


def template_texts():
    """Name -> text of every template (part of the cache key)."""
    root = template_dir()
    return {p.name: p.read_text() for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".j2")}


def render_files(ctx):
    """filename -> text for the generated folder, from a context dict."""
    env = environment()
    name = ctx["name"]
    return {
        f"{name}_dynamics.h": env.get_template("dynamics.h.j2").render(ctx),
        f"{name}_dynamics.c": env.get_template("dynamics.c.j2").render(ctx),
        f"build_{name}.py": env.get_template("build.py.j2").render(ctx),
        "__init__.py": env.get_template("__init__.py.j2").render(ctx),
        f"{name}_python.c": env.get_template("python_ext.c.j2").render(ctx),
    }
