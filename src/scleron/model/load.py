"""load_model(path): read a model file (native YAML or URDF) into a merged, validated Model.

Also the limits and small helpers that both loaders share: every loader reads its file through
read_source(), which refuses missing, unreadable, non-regular and oversized files with a
ModelError before anything is parsed, so time and memory stay bounded on hostile input.
"""
import os
import re
import stat
from pathlib import Path

from ..errors import ModelError

MAX_FILE_BYTES = 20 * 1024 * 1024   # refuse larger model files before parsing them
MAX_DEPTH = 50                      # deepest nesting of YAML collections / XML elements
MAX_BODIES = 1000                   # generating more takes too long (README, Limits: measured)

YAML_SUFFIXES = (".yaml", ".yml")
URDF_SUFFIXES = (".urdf", ".xml")

_C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while""".split())


def read_source(path):
    """The bytes of a model file; a ModelError (naming the file) if it cannot be read."""
    try:
        name = os.fspath(path)
    except TypeError:
        raise ModelError(f"a model path must be a file name, got {type(path).__name__}") from None
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise ModelError("no such file", source=name) from None
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot read the file ({getattr(e, 'strerror', None) or e})", source=name) from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelError("not a regular file", source=name)
    if st.st_size > MAX_FILE_BYTES:
        raise ModelError(f"the file is {st.st_size} bytes, more than the limit of "
                         f"{MAX_FILE_BYTES // (1024 * 1024)} MB", source=name)
    try:
        with open(name, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ModelError(f"cannot read the file ({e.strerror or e})", source=name) from None
    if len(data) > MAX_FILE_BYTES:
        raise ModelError(f"the file is more than the limit of {MAX_FILE_BYTES // (1024 * 1024)} MB",
                         source=name)
    return data


def sanitize_identifier(name, default="model"):
    """A valid C (and Python) identifier made from name: other characters become '_'."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name)) if name is not None else ""
    if not s or not s.strip("_"):
        s = default
    if s[0].isdigit():
        s = "_" + s
    if s in _C_KEYWORDS:
        s += "_"
    return s


def describe(value, limit=40):
    """A short description of a value for an error message (never expands big structures)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, dict):
        return f"a mapping with {len(value)} keys"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} items"
    if isinstance(value, str):
        return repr(value[:limit] + ("..." if len(value) > limit else ""))
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= limit else text[:limit] + "..."
    return f"a value of type {type(value).__name__}"


def load_model(path, **kw):
    """Load a model file and return it with fixed joints merged and validated.

    The suffix chooses the format: .yaml/.yml is the native format (docs/model-format.md),
    .urdf/.xml is URDF (keyword `floating=True` adds a free joint at the root link).
    """
    from .urdf import load_urdf
    from .yaml_loader import load_yaml

    try:
        suffix = Path(os.fsdecode(os.fspath(path))).suffix.lower()
    except TypeError:
        raise ModelError(f"a model path must be a file name, got {type(path).__name__}") from None
    if suffix in YAML_SUFFIXES:
        if kw.pop("floating", False):
            raise ModelError("floating=True applies to URDF files; in YAML give the root body a "
                             "'free' joint", source=os.fsdecode(os.fspath(path)))
        model = load_yaml(path, **kw)
    elif suffix in URDF_SUFFIXES:
        model = load_urdf(path, **kw)
    else:
        raise ModelError(f"unknown model file type {suffix or '(no suffix)'!r}: expected "
                         + ", ".join(YAML_SUFFIXES + URDF_SUFFIXES), source=os.fsdecode(os.fspath(path)))
    return model.merged_fixed().validate()
