"""load_model(path): read a model file (native YAML or URDF) into a merged, validated Model.

Also the limits and small helpers that both loaders share: every loader reads its file through
read_source(), which refuses missing, unreadable, non-regular and oversized files with a
ModelError before anything is parsed, so time and memory stay bounded on hostile input.
"""
import hashlib
import io
import os
import re
import stat
import sys
import warnings
from pathlib import Path

from ..errors import ModelError

MAX_FILE_BYTES = 20 * 1024 * 1024   # refuse larger model files before parsing them
MAX_DEPTH = 50                      # deepest nesting of YAML collections / XML elements
MAX_BODIES = 1000                   # generating more takes too long (README, Limits: measured)

YAML_SUFFIXES = (".yaml", ".yml")

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
        raise ModelError(f"cannot read the file ({getattr(e, 'strerror', None) or e})",
                         source=name) from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelError("not a regular file", source=name)
    if st.st_size > MAX_FILE_BYTES:
        raise ModelError(f"the file is {st.st_size} bytes, more than the limit of "
                         f"{MAX_FILE_BYTES // (1024 * 1024)} MB", source=name)
    try:
        data = _read_regular(name)
    except OSError as e:
        raise ModelError(f"cannot read the file ({e.strerror or e})", source=name) from None
    if data is None:            # replaced by a pipe or device since the stat above
        raise ModelError("not a regular file", source=name)
    if len(data) > MAX_FILE_BYTES:
        raise ModelError(f"the file is more than the limit of {MAX_FILE_BYTES // (1024 * 1024)} MB",
                         source=name)
    return data


def _open_regular(name):
    """The open file (binary) if name is a regular file, else None. Looked at before it is opened
    (opening a FIFO would release its writer into a broken pipe), opened without blocking (a
    swap to a pipe between the two looks) or becoming a controlling terminal, checked again on
    the open file, then set to blocking reads. A file under a write lease answers a non-blocking
    open with EAGAIN: opened again, waiting for the lease's break."""
    if not stat.S_ISREG(os.stat(name).st_mode):
        return None
    flags = os.O_RDONLY
    for flag in ("O_NOCTTY", "O_BINARY"):
        flags |= getattr(os, flag, 0)
    try:
        fd = os.open(name, flags | getattr(os, "O_NONBLOCK", 0))
    except BlockingIOError:
        fd = os.open(name, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        if hasattr(os, "set_blocking") and getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_regular(name):
    """Up to MAX_FILE_BYTES + 1 bytes of a regular file, None for anything else."""
    f = _open_regular(name)
    if f is None:
        return None
    with f:
        return f.read(MAX_FILE_BYTES + 1)


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
        return f"a mapping with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, str):
        return repr(value[:limit] + ("..." if len(value) > limit else ""))
    if isinstance(value, int) and value.bit_length() > 4 * limit:     # (repr of a 4300-digit
        return f"an integer of {len(hex(value)) - 2} hexadecimal digits"  # int raises ValueError)
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= limit else text[:limit] + "..."
    return f"a value of type {type(value).__name__}"


def describe_argument(value, limit=40):
    """describe() of a Python keyword argument's value: True, False and None as Python writes
    them (not YAML's true, false, null), a numpy scalar as its number."""
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        value = value.item()                # (np.array(True), np.float64(1.5): plain values)
    if value is None or isinstance(value, bool):
        return repr(value)
    return describe(value, limit)


def _off(floating):
    """floating= left at False or None (a numpy False too; an array is not "off")."""
    return floating is None or is_bool(floating) and not floating


def is_bool(value):
    """A Python or numpy bool (np.True_ or np.array(True) from an array of flags is a flag too)."""
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        return value.dtype == bool
    return isinstance(value, bool)


YAML_FORMAT, URDF_FORMAT, MJCF_FORMAT, OSIM_FORMAT = "YAML", "URDF", "MJCF", "OpenSim"
MJCF_SUFFIXES = (".xml", ".mjcf")
OSIM_SUFFIXES = (".osim",)


def xml_declaration_first(data):
    """XML text with a declaration (<?xml ...?>) that follows blank lines moved before them:
    urdfdom's and OpenSim's parsers read such files (pybullet's diff_ring.urdf has one), expat
    refuses them. The same characters precede the root element, so line numbers stay; a
    UTF-8 byte order mark stays before the declaration."""
    raw = isinstance(data, bytes)
    bom = b"\xef\xbb\xbf" if raw else "\ufeff"           # (a UTF-8 byte order mark stays first)
    bom = bom if data.startswith(bom) else data[:0]
    body = data[len(bom):]
    rest = body.lstrip(b" \t\r\n" if raw else " \t\r\n")
    start, end = (b"<?xml", b"?>") if raw else ("<?xml", "?>")
    if len(rest) == len(body) or not rest.startswith(start) or end not in rest:
        return data
    k = rest.index(end) + 2
    return bom + rest[:k] + body[:len(body) - len(rest)] + rest[k:]


def malformed_xml(error, data):
    """The problem an expat error reports, in words: "malformed XML: " and expat's, or for a byte
    that is not UTF-8 in a file read as UTF-8 (no BOM of another encoding, its declaration names
    none or UTF-8; a Windows-1252 en dash, 0x96, in OpenSim's own example files: an outside
    tester) that byte and its column."""
    from xml.parsers import expat
    problem = f"malformed XML: {expat.ErrorString(error.code)}"
    if error.code != expat.errors.codes[expat.errors.XML_ERROR_INVALID_TOKEN] or \
            not isinstance(data, bytes) or declared_encoding(data) not in ("", "utf-8", "utf8"):
        return problem
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    line = lines[error.lineno - 1] if 0 < error.lineno <= len(lines) else b""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        column = len(line[:bad.start].decode("utf-8")) + 1
        return (f"{problem}: byte 0x{line[bad.start]:02x} at column {column} is not UTF-8, the "
                "encoding the file is read in: save it as UTF-8, or name its encoding in its "
                "declaration (<?xml version=\"1.0\" encoding=\"windows-1252\"?>)")
    return problem


def declared_encoding(data):
    """The encoding an XML document's declaration names, lower case ('' for none), or 'utf-16'
    where it starts with a UTF-16 or UTF-32 byte order mark."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        return "utf-16"
    found = re.match(rb"(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']*)[\"']", data)
    return found[1].decode("ascii", "replace").lower() if found else ""


def xml_root_tag(path):
    """The name of an XML file's root element ('robot' for URDF, 'mujoco' for MJCF), read with the
    same size limit as every model file; None when the text is not XML."""
    import xml.etree.ElementTree as ET
    data = read_source(path)
    try:
        for _, element in ET.iterparse(io.BytesIO(data), events=("start",)):
            return element.tag
    except (ET.ParseError, LookupError, ValueError):      # (LookupError: encoding="bogus")
        # (a file that ElementTree refuses before its root, for a DTD's entities say, is still
        # named by its first tag: then the reader of its format refuses it in its own words)
        found = _FIRST_TAG.search(_PROLOG_PARTS.sub(b"", data))
        return found.group(1).decode("ascii") if found else None
    return None


_PROLOG_PARTS = re.compile(rb"<!--.*?-->|<\?.*?\?>|<!DOCTYPE(?:[^\[>]|\[.*?\])*>", re.S)
_FIRST_TAG = re.compile(rb"<([A-Za-z_][A-Za-z0-9_.:-]*)")


def model_format(path):
    """Which reader a file goes to: by suffix, and for .xml by the root element (<robot> is URDF,
    <mujoco> is MJCF)."""
    name = os.fsdecode(os.fspath(path))
    suffix = Path(name).suffix.lower()
    if suffix in YAML_SUFFIXES:
        return YAML_FORMAT
    if suffix in OSIM_SUFFIXES:
        return OSIM_FORMAT
    if suffix == ".urdf":
        return URDF_FORMAT
    if suffix in MJCF_SUFFIXES:
        root = xml_root_tag(name)
        local = root.rpartition("}")[2] if root is not None else None     # ({namespace}robot)
        if local == "mujoco":
            return MJCF_FORMAT
        if local not in (None, "robot"):
            raise ModelError(f"the root element is <{root[:40]}>: neither URDF (<robot>) nor MJCF "
                             "(<mujoco>)", source=name)
        return URDF_FORMAT      # <robot>, or not XML at all: the URDF reader names the problem
    if os.path.isdir(name):
        raise ModelError("a folder, not a model file", source=name)
    raise ModelError(f"unknown model file type {suffix or '(no suffix)'!r}: expected "
                     + ", ".join(YAML_SUFFIXES + (".urdf",) + MJCF_SUFFIXES + OSIM_SUFFIXES),
                     source=name)


# the options each reader takes (load_model's keywords), besides the path
LOAD_OPTIONS = {YAML_FORMAT: ("merge_fixed",),
                URDF_FORMAT: ("floating", "merge_fixed", "order", "mimic", "inertia", "damping"),
                MJCF_FORMAT: ("inertia", "merge_fixed"),
                OSIM_FORMAT: ("inertia", "merge_fixed")}


def add_load_arguments(parser, floating_help="URDF: put a free_flyer joint at the root link"):
    """The options of reading a model file (--floating, --inertia, --mimic, --damping, --order) on
    an argparse parser: every command that reads one takes them (load_arguments turns them into
    load_model's)."""
    from .model import INERTIA_CHECKS
    from .urdf import DAMPING, MIMIC, ORDERS
    parser.add_argument("--floating", action="store_true", help=floating_help)
    parser.add_argument("--inertia", choices=INERTIA_CHECKS,
                        help="URDF, MJCF, OpenSim: 'relaxed' accepts inertias that break the "
                             "triangle inequality (as Pinocchio does) with a warning (default "
                             "physical)")
    parser.add_argument("--mimic", choices=MIMIC,
                        help="URDF <mimic>: 'couple' makes the joint follow its leader (one "
                             "coordinate), 'independent' gives it its own (default, as "
                             "Pinocchio's)")
    parser.add_argument("--damping", choices=DAMPING,
                        help="URDF <dynamics damping=d>: 'read' makes it the joint's damper (tau = "
                             "-d qd), 'ignore' drops it (default, as Pinocchio's dynamics)")
    parser.add_argument("--order", choices=ORDERS,
                        help="URDF: the order of sibling links and so of the coordinates: "
                             "'pinocchio' by joint name, as urdfdom and Pinocchio (default), "
                             "'file' as written (pybullet's order)")


def load_arguments(args):
    """load_model's keywords from the parsed options of add_load_arguments (those given)."""
    kw = {"floating": True} if getattr(args, "floating", False) else {}
    for option in ("inertia", "mimic", "damping", "order"):
        if getattr(args, option, None):
            kw[option] = getattr(args, option)
    return kw


def load_model(path, **kw):
    """Load a model file and return it with fixed joints merged and validated.

    The format follows the file (docs/model-format.md): .yaml/.yml is the native format, .urdf is
    URDF (`floating=True` puts a free-flyer at the root link), .xml is URDF when its root element
    is <robot> and MJCF (read through MuJoCo's compiler, the `mujoco` extra) when it is <mujoco>,
    and .osim is an OpenSim model.
    """
    try:
        name = os.fsdecode(os.fspath(path))
    except TypeError:
        raise ModelError(f"a model path must be a file name, got {type(path).__name__}") from None
    fmt = model_format(name)
    if fmt != URDF_FORMAT and not _off(kw.get("floating", False)):
        where = {YAML_FORMAT: "in YAML give the root body a 'free_flyer' joint",
                 MJCF_FORMAT: "in MJCF give the root body a <freejoint/>",
                 OSIM_FORMAT: "in OpenSim give the root body a FreeJoint"}[fmt]
        raise ModelError(f"floating= (--floating) applies to URDF files, not to {fmt} (got "
                         f"{describe_argument(kw['floating'])}); {where}", source=name)
    if fmt != URDF_FORMAT:
        kw.pop("floating", None)
    for option in kw:
        if option not in LOAD_OPTIONS[fmt]:
            takes = [f for f, opts in LOAD_OPTIONS.items() if option in opts]
            raise ModelError(f"{option}= (--{option}) applies to "
                             + ((", ".join(takes[:-1]) + " and " if len(takes) > 1 else "")
                                + takes[-1] + " files"
                                if takes else "no model file")
                             + f", not to {fmt}", source=name)
    if not is_bool(kw.get("merge_fixed", True)):
        raise ModelError(f"merge_fixed= must be True or False, not "
                         f"{describe_argument(kw['merge_fixed'])}",
                         source=name)
    # the file as it was when reading began (an edit during a long codegen: the import warns)
    before = file_digest(name, limit=MAX_FILE_BYTES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _read(fmt, path, kw).merged_fixed().validate()
    _warn_once(caught)
    model.file_digests = {os.path.abspath(name): before,
                          **{os.path.abspath(p): file_digest(p)
                             for p in getattr(model, "included", ())}}
    return model


def file_digest(path, limit=None):
    """The SHA-256 of a regular file's bytes (hex), read in pieces (a mesh an MJCF file includes
    may be larger than a model file may be), or None where it is not a regular file, is larger
    than limit bytes, or cannot be read: a pipe or a device is not read at all (a FIFO waited
    forever, /dev/zero was read until memory ran out, before the reader could refuse them)."""
    try:
        f = _open_regular(path)
        if f is None:
            return None
        digest, size = hashlib.sha256(), 0
        with f:
            for piece in iter(lambda: f.read(1 << 20), b""):
                size += len(piece)
                if limit is not None and size > limit:    # (counted: st_size may not say)
                    return None
                digest.update(piece)
        return digest.hexdigest()
    except (OSError, ValueError):
        return None


def _read(fmt, path, kw):
    if fmt == YAML_FORMAT:
        from .yaml_loader import load_yaml
        return load_yaml(path, **kw)
    if fmt == URDF_FORMAT:
        from .urdf import load_urdf
        return load_urdf(path, **kw)
    if fmt == MJCF_FORMAT:
        from .mjcf import load_mjcf
        return load_mjcf(path, **kw)
    from .osim import load_osim
    return load_osim(path, **kw)


def _warn_once(caught):
    """The warnings of a load, each text once: the reader validates the model it reads and
    load_model the merged one, and a body both check gave the same InertiaWarning twice (the
    second without the file's line: the same text once that is left out, an outside tester).
    Each is said at the first line outside scleron that led here (the user's load_model or
    generate), not inside the reader."""
    seen = set()
    for w in caught:
        key = (w.category, re.sub(r"^([^\n]*?):\d+: ", r"\1: ", str(w.message), count=1))
        if key not in seen:
            seen.add(key)
            warnings.warn(w.message, w.category, stacklevel=_caller_level())


PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _caller_level():
    """The stacklevel, for a warning of _warn_once, of the first frame outside scleron (3, the
    caller of load_model, where every frame is scleron's: its command line)."""
    frame, level = sys._getframe(2), 2           # (_warn_once's frame is level 1)
    while (frame is not None
            and os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE + os.sep)):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 3
