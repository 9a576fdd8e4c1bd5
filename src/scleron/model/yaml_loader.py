"""The native model format: a YAML file listing bodies, parents first (docs/model-format.md).

load_yaml(path) reads a file, model_from_dict(data, source) builds a model from already parsed
data (plain dicts and lists, or what the line-tracking loader made), model_to_dict(model)
writes a model back in the same form. Parsing uses yaml.SafeLoader only (no Python tags, no
eval); a subclass records the line of every mapping, sequence and key so that each error names
file, line, element and problem. Unknown keys are rejected at every level.
"""
import math
import os
import re
from pathlib import Path

import numpy as np
import yaml
from yaml.nodes import ScalarNode

from ..errors import ModelError
from . import params as P
from .joint_types import (JOINT_TYPES, SPRING_KEYS, composite_part_problem,
                          composite_part_types, joint_dof, joint_nq)
from .load import MAX_BODIES, MAX_DEPTH, describe, read_source, sanitize_identifier
from .model import (NAME_LENGTH, WORLD, Inertia, Model, Transform, check_inertia,
                    rotation_from_rpy)

TOP_KEYS = ("name", "gravity", "bodies", "frames", "initial")
BODY_KEYS = ("name", "parent", "joint", "mass", "com", "inertia", "wrench", "frames")
FRAME_KEYS = ("name", "xyz", "rpy", "rotation")
PLACEMENT_KEYS = ("name", "type", "xyz", "rpy", "rotation")
INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
INITIAL_KEYS = ("q", "qd")
AXIS_TYPES = tuple(t for t, (_, allowed) in JOINT_TYPES.items() if "axis" in allowed)
# what a YAML joint may be: every type but the one the OpenSim reader builds (its functions are
# the .osim file's objects)
YAML_JOINT_TYPES = tuple(t for t in JOINT_TYPES if t != "opensim")
DEFAULT_AXIS = (0.0, 0.0, 1.0)


# ---- line-tracking safe loader ---------------------------------------------------------------
class LineDict(dict):
    """A mapping from the YAML file that remembers its line and the line of each key."""
    line = None
    key_lines = {}


class LineList(list):
    """A sequence from the YAML file that remembers its line and the line of each item."""
    line = None
    item_lines = ()


class _TooDeep(Exception):
    def __init__(self, line, problem=None):
        super().__init__(line)
        self.line = line
        self.problem = problem or f"the YAML nests deeper than {MAX_DEPTH} levels"


# The most entries of one YAML list or mapping: a model's longest are its bodies (MAX_BODIES)
# and a spline's data; checked while the text streams, before any object is built (a 20 MB list
# of 6.5 million numbers took minutes and gigabytes before "com must be 3 numbers")
MAX_ENTRIES = 10 * MAX_BODIES


class _LineConstructor:
    """Constructors that make LineDict / LineList and refuse duplicate keys (mixed into a
    loader)."""

    def construct_line_map(self, node):
        data = LineDict()
        data.line = node.start_mark.line + 1
        yield data
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key_node.value[:40]!r}", key_node.start_mark)
                seen.add(key_node.value)
        data.update(self.construct_mapping(node))
        lines = {}
        for key_node, _ in node.value:               # flattened: merged keys included
            if isinstance(key_node, ScalarNode):
                key = self.construct_object(key_node)
                if isinstance(key, str):
                    lines.setdefault(key, key_node.start_mark.line + 1)
        data.key_lines = lines

    def flatten_mapping(self, node):
        """Merge keys ('<<'), keeping one entry per key: without this, nested merges of merged
        mappings grow exponentially (a "billion laughs" through merge keys)."""
        super().flatten_mapping(node)
        last = {}
        for i, (key_node, _) in enumerate(node.value):
            if isinstance(key_node, ScalarNode):
                last[(key_node.tag, key_node.value)] = i
        if len(last) < len(node.value):
            node.value = [kv for i, kv in enumerate(node.value)
                          if not isinstance(kv[0], ScalarNode)
                          or last[(kv[0].tag, kv[0].value)] == i]

    def construct_line_seq(self, node):
        data = LineList()
        data.line = node.start_mark.line + 1
        yield data
        data.extend(self.construct_sequence(node))
        data.item_lines = tuple(n.start_mark.line + 1 for n in node.value)


class _PyLoader(_LineConstructor, yaml.SafeLoader):
    """The pure-Python safe loader; it bounds the nesting depth while composing."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_LOADERS = [_PyLoader]
if getattr(yaml, "__with_libyaml__", False):
    class _CLoader(_LineConstructor, yaml.CSafeLoader):
        """libyaml's safe loader (about 4x faster); parse_yaml_text checks the depth first."""
    _LOADERS.append(_CLoader)
else:                                                   # pragma: no cover
    _CLoader = None

# Numbers as YAML 1.2 (its core schema) writes them, not PyYAML's YAML 1.1: 1e-3 is a number
# (1.1: a string), 010 is ten (1.1: octal 8), 1:30 and 1_000 are strings (1.1: 90 and 1000),
# refused where a number belongs instead of read as another one.
_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_INT_12 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_12 = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


def _construct_int_12(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith(("0x", "0o")):
        return int(text[2:], 16 if text[1] == "x" else 8)
    return int(text, 10)


for _cls in _LOADERS:
    _cls.add_constructor("tag:yaml.org,2002:map", _LineConstructor.construct_line_map)
    _cls.add_constructor("tag:yaml.org,2002:seq", _LineConstructor.construct_line_seq)
    _cls.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    # (before floats: 10 is an int)
    _cls.add_implicit_resolver(_INT, _INT_12, list("-+0123456789"))
    _cls.add_implicit_resolver(_FLOAT, _FLOAT_12, list("-+0123456789."))
    _cls.add_constructor(_INT, _construct_int_12)


def _check_depth(text, loader_cls):
    """Stream the parse events (no recursion) and stop at the first one nested too deep, or at
    the first list or mapping of more than MAX_ENTRIES entries."""
    limits, counts = [], []         # per open collection: its most child events, and so far
    for event in yaml.parse(text, Loader=loader_cls):
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            limits.pop()
            counts.pop()
            continue
        if counts:
            counts[-1] += 1         # a scalar or a collection's start: one item, key or value
            if counts[-1] > limits[-1]:
                raise _TooDeep(event.start_mark.line + 1, f"a YAML list or mapping of more than "
                               f"{MAX_ENTRIES} entries (no model has so many)")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            mapping = isinstance(event, yaml.MappingStartEvent)
            limits.append(2 * MAX_ENTRIES if mapping else MAX_ENTRIES)     # (a key and a value)
            counts.append(0)
            if len(counts) > MAX_DEPTH:
                raise _TooDeep(event.start_mark.line + 1)


def parse_yaml_text(text, source=None):
    """Parse YAML text (str or bytes) with a safe, line-tracking loader; ModelError on failure.

    Only yaml.SafeLoader / yaml.CSafeLoader are used: no Python tags, nothing is evaluated.
    """
    loader = None
    try:
        if _CLoader is not None:
            _check_depth(text, _CLoader)     # libyaml composes recursively: bound the depth first
            loader = _CLoader(text)
        else:                                # pragma: no cover
            loader = _PyLoader(text)
        return loader.get_single_data()
    except _TooDeep as e:
        raise ModelError(e.problem, source=source, line=e.line) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = " ".join(str(p) for p in (e.context, e.problem) if p) or "invalid YAML"
        raise ModelError(f"malformed YAML: {_short(problem)}", source=source,
                         line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise ModelError(f"malformed YAML: {_short(e)}", source=source) from None
    except (ValueError, TypeError, OverflowError, RecursionError, UnicodeError,
            AttributeError) as e:
        digits = rb"\d{4301,}" if isinstance(text, bytes) else r"\d{4301,}"
        long = re.search(digits, text) if "integer string conversion" in str(e) else None
        if long:                             # (Python's limit on int("...") of many digits)
            raise ModelError(f"a number of {long.end() - long.start()} digits, more than an "
                             "integer may have here (4300): write it in floating point (e.g. "
                             "1.5e300) if it is meant", source=source,
                             line=text.count(b"\n" if isinstance(text, bytes) else "\n", 0,
                                             long.start()) + 1) from None
        # e.g. an impossible !!timestamp (2001-13-45) or a bad explicit !!int / !!float
        raise ModelError(f"malformed YAML: {_short(e)}", source=source) from None
    finally:
        if loader is not None:
            loader.dispose()


def _short(e, limit=200):
    text = str(e).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


# ---- public API ------------------------------------------------------------------------------
def load_yaml(path, *, merge_fixed=True):
    """Load a native YAML model file.

    Returns the model with fixed joints merged and validated; merge_fixed=False returns the tree
    exactly as the file lists it (fixed joints kept, not validated as a whole).
    """
    data = read_source(path)
    source = os.fsdecode(os.fspath(path))
    return model_from_dict(parse_yaml_text(data, source), source, merge_fixed=merge_fixed)


def load_yaml_string(text, source="<string>", *, merge_fixed=True):
    """Like load_yaml, for YAML text already in memory."""
    if isinstance(text, (str, bytes)) and len(text) > 20 * 1024 * 1024:
        raise ModelError("the YAML text is more than 20 MB", source=source)
    return model_from_dict(parse_yaml_text(text, source), source, merge_fixed=merge_fixed)


def model_from_dict(data, source=None, *, merge_fixed=True):
    """Build a Model from the native format already parsed into dicts and lists."""
    return _Builder(source).build(data, merge_fixed)


# ---- builder ---------------------------------------------------------------------------------
class _Where:
    """Where in the file a value is: element name and line, for error messages."""

    def __init__(self, source, element=None, line=None):
        self.source, self.element, self.line = source, element, line

    def at(self, element=None, line=None):
        return _Where(self.source, element or self.element, line or self.line)

    def error(self, problem, line=None):
        return ModelError(problem, source=self.source, element=self.element, line=line or self.line)


def _key_line(mapping, key):
    return getattr(mapping, "key_lines", {}).get(key) or getattr(mapping, "line", None)


def _item_line(seq, i):
    lines = getattr(seq, "item_lines", ())
    return lines[i] if i < len(lines) else getattr(seq, "line", None)


def _mapping(value, what, where, allowed, required=()):
    if not isinstance(value, dict):
        raise where.error(f"{what} must be a mapping, got {describe(value)}")
    for key in value:
        if not isinstance(key, str) or key not in allowed:
            shown = describe(key) if not isinstance(key, str) else repr(key[:40])
            raise where.error(f"unknown key {shown} in {what} (allowed: {', '.join(allowed)})",
                              _key_line(value, key))
    for key in required:
        if key not in value:
            raise where.error(f"{what} lacks the required key '{key}'")
    return value


MIMIC_KEYS = ("joint", "multiplier", "offset")


def _mimic(value, where):
    """A joint's `mimic: {joint: NAME, multiplier: a, offset: b}` (docs/mimic.md): its coordinate
    is a q_NAME + b, one coordinate for both (URDF's <mimic> with mimic="couple")."""
    m = _mapping(value, "mimic", where, MIMIC_KEYS, required=("joint",))
    return (_name(m["joint"], "mimic's joint", where),
            _number(m.get("multiplier", 1.0), "mimic's multiplier", where),
            _number(m.get("offset", 0.0), "mimic's offset", where))


def _number(value, what, where):
    return P.number(value, what, where.error)


def _numbers(value, n, what, where):
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.size <= 64 else None
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise where.error(f"{what} must be a list of {n} numbers, got {describe(value)}")
    return [_number(x, f"{what}[{i}]", where.at(line=_item_line(value, i)))
            for i, x in enumerate(value)]


def _matrix3(value, what, where):
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.size <= 64 else None
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise where.error(f"{what} must be a 3x3 matrix (a list of 3 rows of 3 numbers), "
                          f"got {describe(value)}")
    return np.array([_numbers(row, 3, f"{what} row {i}", where.at(line=_item_line(value, i)))
                     for i, row in enumerate(value)])


def _name(value, what, where):
    if not isinstance(value, str) or not value:
        raise where.error(f"{what} must be a non-empty string, got {describe(value)}")
    if len(value) > NAME_LENGTH or not value.isprintable():
        raise where.error(f"{what} must be at most {NAME_LENGTH} printable characters, got "
                          f"{describe(value)}")
    return value


class _Builder:
    def __init__(self, source):
        self.source = None if source is None else os.fsdecode(os.fspath(source)) \
            if isinstance(source, (str, bytes, os.PathLike)) else str(source)
        self.where = _Where(self.source)
        self.body_names, self.joint_names, self.frame_names = set(), set(), set()
        self.body_lines = {}

    def build(self, data, merge_fixed):
        where = self.where
        if data is None:
            raise where.error("the file is empty (expected a mapping with 'bodies')")
        top = _mapping(data, "the top level", where, TOP_KEYS, required=("bodies",))
        if "name" in top:
            name = _name(top["name"], "name", where.at(line=_key_line(top, "name")))
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise where.error(f"name {name!r} must be an identifier (letters, digits, '_', "
                                  "not starting with a digit)", _key_line(top, "name"))
        else:
            name = sanitize_identifier(Path(self.source).stem if self.source else None)
        gravity = (0.0, 0.0, -9.81)
        if "gravity" in top:
            gravity = _numbers(top["gravity"], 3, "gravity",
                               where.at(line=_key_line(top, "gravity")))
        model = Model(name, gravity, self.source)

        bodies = top["bodies"]
        bwhere = where.at(line=_key_line(top, "bodies"))
        if not isinstance(bodies, (list, tuple)) or not bodies:
            raise bwhere.error(f"'bodies' must be a non-empty list, got {describe(bodies)}")
        if len(bodies) > MAX_BODIES:
            raise bwhere.error(f"{len(bodies)} bodies is more than the limit of {MAX_BODIES}")
        all_names = {}
        for i, b in enumerate(bodies):
            if isinstance(b, dict) and isinstance(b.get("name"), str):
                all_names.setdefault(b["name"], (i, _item_line(bodies, i)))
        for i, b in enumerate(bodies):
            self.add_body(model, b, i, _item_line(bodies, i), all_names)

        if "frames" in top:                 # frames fixed to the world, placed in it
            self.frames(model, WORLD, top["frames"], where.at(line=_key_line(top, "frames")))
        if "initial" in top:
            self.initial(model, top["initial"],
                         where.at(element="initial", line=_key_line(top, "initial")))
        if merge_fixed:
            model = model.merged_fixed()
            try:
                model.validate()
            except ModelError as e:
                raise ModelError(e.problem, source=self.source, element=e.element,
                                 line=e.line or self.body_lines.get(e.body), body=e.body,
                                 joint=e.joint) from None
        return model

    # ---- one body ----
    def add_body(self, model, b, i, line, all_names):
        where = self.where.at(element=f"bodies[{i}]", line=getattr(b, "line", None) or line)
        if isinstance(b, dict) and isinstance(b.get("name"), str) and b["name"]:
            where = where.at(element=f"body '{b['name'][:200]}'")
        b = _mapping(b, "a body", where, BODY_KEYS, required=("name", "parent", "mass", "inertia"))
        name = _name(b["name"], "the body name", where)
        if name == WORLD:
            raise where.error(f"'{WORLD}' is reserved for the fixed base; choose another body name")
        if name in self.body_names:
            first = all_names.get(name, (None, None))[1]
            raise where.error("two bodies have this name"
                              + (f" (the first is on line {first})" if first else ""))
        parent = b["parent"]
        pline = _key_line(b, "parent")
        if not isinstance(parent, str) or not parent:
            raise where.error(f"parent must be '{WORLD}' or the name of an earlier body, "
                              f"got {describe(parent)}", pline)
        if parent != WORLD and parent not in self.body_names:
            if parent == name:
                raise where.error("a body cannot be its own parent", pline)
            if parent in all_names:
                later = all_names[parent][1]
                raise where.error(
                    f"parent '{parent[:200]}' is defined later in the list"
                    + (f" (line {later})" if later else "")
                    + ": parents must come before their children, so a parent listed after its "
                      "child means the list is out of order or the bodies form a cycle", pline)
            raise where.error(f"parent '{parent[:200]}' does not exist (it must be '{WORLD}' or an "
                              "earlier body); a body whose chain does not reach the world is not "
                              "connected", pline)

        mass = _number(b["mass"], "mass", where.at(line=_key_line(b, "mass")))
        com = (_numbers(b["com"], 3, "com", where.at(line=_key_line(b, "com")))
               if "com" in b else [0.0, 0.0, 0.0])
        iwhere = where.at(line=_key_line(b, "inertia"))
        inertia = self.inertia(b["inertia"], iwhere)

        jdata = b.get("joint", None)
        if "joint" in b and jdata is None:
            raise where.error("joint must be a mapping (leave the key out for the default "
                              "revolute joint about z)", _key_line(b, "joint"))
        jtype, jname, origin, params, jwhere, springs, mimic = self.joint(
            jdata if jdata is not None else {}, name, where.at(line=_key_line(b, "joint")))
        wrench = (P.wrench(b["wrench"], where.at(line=_key_line(b, "wrench")).error)
                  if "wrench" in b else None)
        if jname in self.joint_names:
            raise jwhere.error("two joints have this name")
        mline = _key_line(b, "mass")            # (a problem of the mass alone: said at its line)
        check_inertia(Inertia(mass, np.array(com), inertia), lambda problem: iwhere.error(
            problem, mline if problem.startswith("mass must be") else None), hint="")
        try:
            model.add_body(name, parent, joint=jtype, joint_name=jname, mass=mass, com=com,
                           inertia=inertia, origin=origin, wrench=wrench,
                           **springs, **params)
        except ModelError as e:
            raise ModelError(e.problem, source=self.source, element=e.element,
                             line=e.line or where.line, body=e.body, joint=e.joint) from None
        model.joints[-1].mimic = mimic          # (checked with the whole model: validate)
        self.body_names.add(name)
        self.joint_names.add(jname)
        self.body_lines[name] = where.line
        model.joint_lines[jname] = _key_line(b, "joint") or where.line
        if "frames" in b:
            self.frames(model, name, b["frames"], where.at(line=_key_line(b, "frames")))

    def frames(self, model, body, value, where):
        """A body's extra frames: [{name, xyz, rpy or rotation}], placed in the body's frame."""
        if not isinstance(value, (list, tuple)):
            raise where.error(f"frames must be a list of {{name, xyz, rpy}} mappings, "
                              f"got {describe(value)}")
        for k, f in enumerate(value):
            on = "the world" if body == WORLD else f"body '{body}'"
            fwhere = where.at(element=f"frames[{k}] of {on}", line=_item_line(value, k))
            f = _mapping(f, "a frame", fwhere, FRAME_KEYS, required=("name",))
            fname = _name(f["name"], "the frame name", fwhere)
            fwhere = fwhere.at(element=f"frame '{fname[:200]}' ({on})")
            xyz = (_numbers(f["xyz"], 3, "xyz", fwhere.at(line=_key_line(f, "xyz"))) if "xyz" in f
                   else [0.0] * 3)
            if "rpy" in f and "rotation" in f:
                raise fwhere.error("give either rpy or rotation, not both",
                                   _key_line(f, "rotation"))
            if "rotation" in f:
                R = _rotation(f["rotation"], fwhere.at(line=_key_line(f, "rotation")))
            elif "rpy" in f:
                R = rotation_from_rpy(_numbers(f["rpy"], 3, "rpy",
                                               fwhere.at(line=_key_line(f, "rpy"))))
            else:
                R = np.eye(3)
            if fname == WORLD and (body != WORLD or any(xyz) or not np.array_equal(R, np.eye(3))):
                # (a URDF's root link 'world', dumped: the world's own frame, at its origin)
                raise fwhere.error(f"'{WORLD}' is reserved for the fixed base; choose another "
                                   "frame name")
            if fname in self.body_names or fname in self.frame_names:
                raise fwhere.error("a body or another frame has this name")
            self.frame_names.add(fname)
            model.add_frame(fname, body, origin=Transform(R, np.array(xyz)))

    def inertia(self, value, where):
        if isinstance(value, dict):
            m = _mapping(value, "inertia", where, INERTIA_KEYS, required=("ixx", "iyy", "izz"))
            v = {k: _number(m[k], f"inertia {k}", where.at(line=_key_line(m, k))) if k in m else 0.0
                 for k in INERTIA_KEYS}
            return np.array([[v["ixx"], v["ixy"], v["ixz"]],
                             [v["ixy"], v["iyy"], v["iyz"]],
                             [v["ixz"], v["iyz"], v["izz"]]])
        if (isinstance(value, (list, tuple)) and len(value) == 3
                and all(isinstance(r, (list, tuple)) for r in value)):
            return _matrix3(value, "inertia", where)
        if isinstance(value, (list, tuple)) and len(value) == 3:
            return np.diag(_numbers(value, 3, "inertia", where))
        raise where.error("inertia must be [ixx, iyy, izz], a mapping "
                          "{ixx, iyy, izz, ixy, ixz, iyz} "
                          f"or a 3x3 matrix, got {describe(value)}")

    # ---- one joint ----
    def joint(self, j, body_name, where):
        if isinstance(j, dict) and isinstance(j.get("name"), str) and j["name"]:
            where = where.at(element=f"joint '{j['name'][:200]}' (body '{body_name}')",
                             line=getattr(j, "line", None))
        else:
            where = where.at(element=f"joint of body '{body_name}'", line=getattr(j, "line", None))
        if not isinstance(j, dict):
            raise where.error(f"joint must be a mapping, got {describe(j)}")
        jtype = j.get("type", "revolute")
        if not isinstance(jtype, str) or jtype not in YAML_JOINT_TYPES:
            raise where.error(f"unknown joint type {describe(jtype)} "
                              f"(known: {', '.join(YAML_JOINT_TYPES)})"
                              + ("; 'opensim' is the joint the .osim reader builds from a "
                                 "CustomJoint: load the .osim file, or write a custom joint"
                                 if jtype == "opensim" else ""), _key_line(j, "type"))
        own = tuple(sorted(JOINT_TYPES[jtype][1]))
        # a custom joint's `rotation` is its motion (expressions); its placement takes rpy
        placement_keys = tuple(k for k in PLACEMENT_KEYS if k not in own)
        if jtype == "fixed":
            for key in SPRING_KEYS:
                if key in j:
                    raise where.error(f"{key}: a fixed joint has no coordinates (no spring, damper "
                                      "or armature)", _key_line(j, key))
        allowed = placement_keys + own + (SPRING_KEYS + ("mimic",) if jtype != "fixed" else ())
        _mapping(j, f"a {jtype} joint", where, allowed)
        jname = (_name(j["name"], "the joint name", where.at(line=_key_line(j, "name")))
                 if "name" in j else f"{body_name}_joint")
        xyz = (_numbers(j["xyz"], 3, "xyz", where.at(line=_key_line(j, "xyz")))
               if "xyz" in j else [0.0, 0.0, 0.0])
        if "rpy" in j and "rotation" in j and "rotation" in placement_keys:
            raise where.error("give either rpy or rotation, not both", _key_line(j, "rotation"))
        if "rotation" in j and "rotation" in placement_keys:
            R = _rotation(j["rotation"], where.at(line=_key_line(j, "rotation")))
        elif "rpy" in j:
            R = rotation_from_rpy(_numbers(j["rpy"], 3, "rpy", where.at(line=_key_line(j, "rpy"))))
        else:
            R = np.eye(3)
        params = _params(j, jtype, where)
        springs = {}
        dof = _dof_for_springs(jtype, params)
        for key in SPRING_KEYS:
            if key in j:
                kw = where.at(line=_key_line(j, key))
                if dof == 0:
                    raise kw.error(f"{key}: a {jtype} joint has no coordinates")
                if key in ("stiffness", "rest") and joint_nq(jtype, params) != dof:
                    raise kw.error(f"{key}: a {jtype} joint's q holds a quaternion: "
                                   f"{P.QUATERNION_SPRING}")
                springs[key] = P.per_coordinate(j[key], dof, key, kw.error)
                if key != "rest" and min(springs[key]) < 0:     # (here: the key's own line)
                    raise kw.error(f"{key} must not be negative, got {list(springs[key])}")
        mimic = _mimic(j["mimic"], where.at(line=_key_line(j, "mimic"))) if "mimic" in j else None
        return jtype, jname, Transform(R, np.array(xyz)), params, where, springs, mimic

    # ---- initial state ----
    def initial(self, model, data, where):
        init = _mapping(data, "initial", where, INITIAL_KEYS)
        for key in INITIAL_KEYS:
            vec = model.neutral() if key == "q" else np.zeros(model.nv)
            if key in init:
                kw = where.at(element=f"initial {key}", line=_key_line(init, key))
                vec = self.state(model, init[key], key, kw)
                if key == "q":
                    vec = model.unit_quaternions(vec, kw.error)
            setattr(model, "q0" if key == "q" else "qd0", vec)

    def state(self, model, value, key, where):
        nq = model.nq if key == "q" else model.nv
        if isinstance(value, (list, tuple)):
            return np.array(_numbers(value, nq, f"{key} (a flat list over all {nq} coordinates)",
                                     where))
        if not isinstance(value, dict):
            raise where.error(f"{key} must be a mapping from joint names to values or a list of "
                              f"{nq} numbers, got {describe(value)}")
        offsets, k = {}, 0
        for jt in model.joints:
            size = 0 if jt.mimic is not None else jt.nq if key == "q" else jt.dof
            offsets[jt.name] = (k, size)
            k += size
        vec = model.neutral() if key == "q" else np.zeros(nq)
        for jname, v in value.items():
            line = _key_line(value, jname)
            if not isinstance(jname, str) or jname not in offsets:
                raise where.error(f"no joint is named {describe(jname)}", line)
            start, dof = offsets[jname]
            jw = where.at(element=f"initial {key} of joint '{jname}'", line=line)
            if dof == 0:
                mimic = next(jt.mimic for jt in model.joints if jt.name == jname)
                raise jw.error(f"it mimics joint '{mimic[0]}' and has no coordinate of its own"
                               if mimic else "a fixed joint has no coordinates")
            if isinstance(v, (list, tuple)):
                vec[start:start + dof] = _numbers(v, dof, "the value", jw)
            elif dof == 1:
                vec[start] = _number(v, "the value", jw)
            else:
                raise jw.error(f"this joint has {dof} coordinates: give a list of {dof} numbers, "
                               f"got {describe(v)}")
        return vec


def _rotation(value, where):
    R = _matrix3(value, "rotation", where)
    problem = P.rotation_problem(R, "rotation")
    if problem:
        raise where.error(problem)
    if np.abs(R @ R.T - np.eye(3)).max() <= 1e-12:     # (a dumped model's: loaded as it was)
        return R
    u, _, vt = np.linalg.svd(R)      # nearest exact rotation: remove rounding in the file
    return u @ vt


def _params(j, jtype, where):
    """The joint parameters of a joint (or composite part) mapping, checked, with defaults."""
    params = {}
    for key in sorted(JOINT_TYPES[jtype][1]):
        if key not in j:
            continue
        v, kw = j[key], where.at(line=_key_line(j, key))
        if key in ("axis", "normal"):      # (numbers on their own lines, then as Model's)
            params[key] = P.axis(_numbers(v, 3, key, kw), key, kw.error)
        elif key == "pitch":
            params[key] = _number(v, "pitch", kw)
        elif key == "chart":
            params[key] = P.chart(v, kw.error)
        elif key == "parts":
            params[key] = _parts(v, kw)
        elif key in ("parent_surface", "child_surface", "surface"):
            params[key] = P.surface(v, key, kw.error)
        elif key == "curve":
            params[key] = P.curve(v, "curve", kw.error)
        elif key == "spin":
            params[key] = P.boolean(v, "spin", kw.error)
        elif key == "frames":
            params[key] = P.frames(v, kw.error)
        elif key == "control":
            params[key] = P.control(v, kw.error)
        elif key in ("coordinates", "constants", "rotation", "translation"):
            params[key] = v                       # checked as a whole below
    if jtype == "custom":
        if "coordinates" not in params:
            raise where.error("a custom joint needs 'coordinates', a list of coordinate names")
        def custom_error(problem):        # on the line of the key the problem is about
            key = next((k for k in ("rotation", "translation", "constant")
                        if problem.startswith(k)),
                       "coordinates")
            key = "constants" if key == "constant" else key
            return where.at(line=_key_line(j, key if key in j else "coordinates")).error(problem)
        params = P.custom(params, custom_error)
    if jtype in AXIS_TYPES and "axis" not in params:
        params["axis"] = DEFAULT_AXIS
    if jtype == "planar" and "normal" not in params:
        params["normal"] = DEFAULT_AXIS
    if jtype == "composite" and "parts" not in params:
        raise where.error("a composite joint needs 'parts', a non-empty list of joints")
    return params


def _dof_for_springs(jtype, params):
    try:
        return joint_dof(jtype, params)
    except (KeyError, TypeError, AttributeError):
        return 0


def _parts(value, where):
    if not isinstance(value, (list, tuple)) or not value:
        raise where.error(f"parts must be a non-empty list of joints, got {describe(value)}")
    if len(value) > 64:
        raise where.error(f"a composite joint has at most 64 parts, got {len(value)}")
    parts = []
    for k, part in enumerate(value):
        pw = where.at(element=f"{where.element}, part {k}", line=_item_line(value, k))
        if not isinstance(part, dict):
            raise pw.error(f"a part must be a mapping with a 'type', got {describe(part)}")
        ptype = part.get("type")
        if not isinstance(ptype, str) or ptype not in JOINT_TYPES:
            raise pw.error(f"unknown or missing part type {describe(ptype)} "
                           f"(parts: {', '.join(composite_part_types())})", _key_line(part, "type"))
        problem = composite_part_problem(ptype)
        if problem:
            raise pw.error(problem, _key_line(part, "type"))
        _mapping(part, f"a {ptype} part", pw, ("type",) + tuple(sorted(JOINT_TYPES[ptype][1])))
        parts.append({"type": ptype, "params": _params(part, ptype, pw)})
    return parts


# ---- writing ---------------------------------------------------------------------------------
def model_to_dict(model):
    """The native-format dict of a model (plain lists and floats; yaml.safe_dump can write it).
    A joint type the YAML format does not take (`opensim`, which the .osim reader builds) is a
    ModelError: a file that would not load again is never written."""
    for j in model.joints:
        if j.type not in YAML_JOINT_TYPES:
            raise ModelError(f"an '{j.type}' joint has no YAML form (the .osim reader builds it): "
                             "keep the model in its .osim file", source=model.source,
                             element=f"joint '{j.name}'")
    def vec(a):
        return [float(x) for x in np.asarray(a, dtype=float).reshape(-1)]

    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple, np.ndarray)):
            return [plain(x) for x in v]
        if isinstance(v, np.generic):
            return v.item()
        return v

    def part_dict(jtype, params):
        d = {"type": jtype}
        for k, v in params.items():
            if k == "parts":
                d[k] = [part_dict(p["type"], p.get("params", {})) for p in v]
            elif k in ("axis", "normal"):
                d[k] = vec(v)
            else:
                d[k] = plain(v)
        return d

    bodies = []
    for body, j in zip(model.bodies, model.joints):
        jd = {"name": j.name, **part_dict(j.type, j.params), "xyz": vec(j.origin.translation)}
        if j.type == "custom":              # its `rotation` is the motion: the placement as rpy
            jd["rpy"] = _rpy_of(np.asarray(j.origin.rotation))
        else:
            jd["rotation"] = [vec(r) for r in j.origin.rotation]
        for key in SPRING_KEYS:
            if getattr(j, key, None) is not None:
                jd[key] = vec(getattr(j, key))
        if j.mimic is not None:
            jd["mimic"] = _mimic_dict(j, model)
        I = body.inertia
        bd = {"name": body.name, "parent": j.parent, "joint": jd, "mass": float(I.mass),
              "com": vec(I.com), "inertia": [vec(r) for r in I.inertia]}
        if getattr(body, "wrench", None) is not None:
            bd["wrench"] = vec(body.wrench)
        frames = [{"name": f.name, "xyz": vec(f.origin.translation),
                   "rotation": [vec(r) for r in f.origin.rotation]}
                  for f in getattr(model, "frames", []) if f.body == body.name]
        if frames:
            bd["frames"] = frames
        bodies.append(bd)
    out = {"name": model.name, "gravity": vec(model.gravity), "bodies": bodies}
    world = [{"name": f.name, "xyz": vec(f.origin.translation),
              "rotation": [vec(r) for r in f.origin.rotation]}
             for f in getattr(model, "frames", []) if f.body == WORLD]
    if world:                           # the top level's frames: on the world
        out["frames"] = world
    init = {}
    if model.q0 is not None:
        init["q"] = vec(model.q0)
    if model.qd0 is not None:
        init["qd"] = vec(model.qd0)
    if init:
        out["initial"] = init
    _check_loads_again(out, model)
    return out


def _mimic_dict(j, model):
    """A mimic joint's YAML entry from its (leader, multiplier, offset)."""
    try:
        leader, multiplier, offset = j.mimic
        return {"joint": leader, "multiplier": float(multiplier), "offset": float(offset)}
    except (TypeError, ValueError):
        raise ModelError(f"mimic must be (leader joint, multiplier, offset), got {j.mimic!r}"[:200],
                         source=model.source, element=f"joint '{j.name}'") from None


def _check_loads_again(data, model):
    """ModelError unless the dict reads back as a model, as load_model reads a YAML file: a
    model built in Python, or read with inertia="relaxed" (YAML takes physical inertias only),
    may hold what no YAML file may (a name 'my-robot', a body name with a newline, a mimic of a
    joint it does not have, no moving body, an inertia breaking the triangle inequality)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model_from_dict(data, "<the dumped model>")
    except ModelError as e:
        element = e.element if e.element and e.element.isprintable() and len(e.element) < 100 \
            else None
        raise ModelError(f"dump_yaml: the model would not load again from YAML: {e.problem}",
                         source=model.source, element=element) from None


def _rpy_of(R):
    """URDF roll, pitch, yaw of a rotation (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    pitch = math.asin(max(-1.0, min(1.0, -R[2, 0])))
    if abs(R[2, 0]) < 1 - 1e-12:
        roll, yaw = math.atan2(R[2, 1], R[2, 2]), math.atan2(R[1, 0], R[0, 0])
    else:                                            # gimbal lock: put everything in yaw
        roll, yaw = 0.0, math.atan2(-R[0, 1], R[1, 1])
    return [roll, pitch, yaw]


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting the strings that YAML 1.2 reads as numbers too (a name
    "0o7" or "1e5" written plain came back as a number)."""


_Dumper.add_implicit_resolver(_INT, _INT_12, list("-+0123456789"))
_Dumper.add_implicit_resolver(_FLOAT, _FLOAT_12, list("-+0123456789."))


def dump_yaml(model, path):
    """Write a model in the native format (the inverse of load_yaml, up to rounding)."""
    data = model_to_dict(model)          # (refused before the file is opened)
    with open(path, "w", encoding="utf-8") as f:
        yaml.dump(data, f, Dumper=_Dumper, sort_keys=False, default_flow_style=None)


__all__ = ["load_yaml", "load_yaml_string", "model_from_dict", "model_to_dict", "dump_yaml",
           "parse_yaml_text"]
