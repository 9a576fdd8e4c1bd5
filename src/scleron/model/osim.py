"""OpenSim reader: load_osim(path) -> Model, from the .osim XML (OpenSim 4 format), without OpenSim.

Read: the model's gravity; every Body's mass, mass centre and inertia (about the mass centre,
body axes: Ixx Iyy Izz Ixy Ixz Iyz); PhysicalOffsetFrames (translation, then orientation as
body-fixed X-Y-Z angles), in a joint's <frames>, a body's or the model's <components>, chained
to any depth; the joints of the JointSet with their Coordinates (names, order, default values
and speeds, ranges). Each joint with coordinates becomes one `opensim` joint (joints.opensim):
CustomJoint's SpatialTransform as written, and
    PinJoint       R_z(q)                         SliderJoint  translation q along x
    UniversalJoint R_x(q1) R_y(q2)                GimbalJoint, BallJoint  R_x(q1) R_y(q2) R_z(q3)
    FreeJoint      (rx, ry, rz, tx, ty, tz): translation in the parent frame, R_x R_y R_z
    PlanarJoint    (rz, tx, ty)                   EllipsoidJoint  R_x R_y R_z on the ellipsoid
of the joint frames F (parent) and M (child), as Simbody moves them; a WeldJoint is fixed.
Everything uses q-dot as velocities (Simbody's Ball, Free and Ellipsoid use the angular
velocity instead: docs/opensim.md converts).

The body frame of a scleron body is its joint's child frame M. Where M is not the OpenSim body
frame, the joint moves a massless body named after M and the OpenSim body hangs from it, fixed:
merging the fixed joints folds its inertia in and keeps the OpenSim body as a frame of its own
name at its OpenSim placement.

Not read, and said so in one OsimWarning: forces (muscles, springs, actuators...), markers,
contact geometry, controllers, probes; constraints (a CoordinateCouplerConstraint is named with
the coordinates it would couple: here they stay independent); locked, clamped and prescribed
coordinates (they stay free); a joint's <reverse> (ignored by OpenSim 4 too). Refused with a
ModelError naming the element: OpenSim 3 files, other joint types, other functions (GCVSpline,
PiecewiseLinearFunction...), reversed joints, bodies without a joint or with two, frames that
lead nowhere.

The XML is read with expat, as the URDF reader does: no document type or entity declarations,
at most MAX_DEPTH levels, files up to the size load.read_source allows.
"""
import math
import os
import re
import warnings
from collections import Counter
from xml.parsers import expat

import numpy as np

from ..errors import ModelError
from ..joints.opensim import KINDS, function_value, is_zero, spline_coefficients
from .load import MAX_BODIES, MAX_DEPTH, malformed_xml, read_source, xml_declaration_first
from .model import INERTIA_CHECKS, WORLD, Model, Transform

GROUND = "ground"
FUNCTION_TAGS = {"Constant": "constant", "LinearFunction": "linear",
                 "PolynomialFunction": "polynomial", "SimmSpline": "spline",
                 "MultiplierFunction": "multiplier"}
KNOWN_UNSUPPORTED_FUNCTIONS = ("GCVSpline", "NaturalCubicSpline", "PiecewiseLinearFunction",
                               "PiecewiseConstantFunction", "StepFunction", "Sine",
                               "ExpressionBasedFunction", "FunctionAdapter",
                               "MultivariatePolynomialFunction")
X, Y, Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
# joint tag -> (number of coordinates, [(axis, coordinate index)] rotations, translations)
JOINTS = {
    "PinJoint": (1, [(Z, 0)], []),
    "SliderJoint": (1, [], [(X, 0)]),
    "UniversalJoint": (2, [(X, 0), (Y, 1)], []),
    "GimbalJoint": (3, [(X, 0), (Y, 1), (Z, 2)], []),
    "BallJoint": (3, [(X, 0), (Y, 1), (Z, 2)], []),
    "EllipsoidJoint": (3, [(X, 0), (Y, 1), (Z, 2)], []),
    "FreeJoint": (6, [(X, 0), (Y, 1), (Z, 2)], [(X, 3), (Y, 4), (Z, 5)]),
    "PlanarJoint": (3, [(Z, 0)], [(X, 1), (Y, 2)]),
    "WeldJoint": (0, [], []),
    "CustomJoint": (None, None, None),
}
FRAME_TAGS = ("PhysicalOffsetFrame",)
# the names OpenSim gives these components where the file gives none (their socket paths use them)
DEFAULT_NAMES = {"Ground": "ground", "BodySet": "bodyset", "JointSet": "jointset",
                 "ForceSet": "forceset", "MarkerSet": "markerset", "ConstraintSet": "constraintset",
                 "ContactGeometrySet": "contactgeometryset", "ControllerSet": "controllerset",
                 "ProbeSet": "probeset"}
# OpenSim's SimmSpline takes every knot spacing as at least this (its TINY_NUMBER)
OPENSIM_TINY_NUMBER = 1e-7
# Simbody's SignificantReal (eps^(7/8)): OpenSim's Body takes a mass this small as none and then
# resets a nonzero inertia to zero, with a warning (Body::getInertia)
SIMBODY_SIGNIFICANT_REAL = float(np.finfo(float).eps) ** 0.875
# a SimmSpline's knots at most: its branch-free formula has a clamp per knot, which every
# derivative carries (128 knots: 10 s to generate; 1,000: 3 min and 1 GB; OpenSim's models: ~20)
MAX_SPLINE_KNOTS = 128
# a PolynomialFunction's coefficients: its Horner form nests one level per coefficient, and
# sympy's derivatives recurse through it (60 exceeded Python's recursion limit; OpenSim's own
# models use a handful)
MAX_POLYNOMIAL_COEFFICIENTS = 32
# a Coordinate's <range> where the file gives none (OpenSim 4.6's Coordinate: [-10, 10])
DEFAULT_RANGE = (-10.0, 10.0)
AXES = ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3")
# sets of the model whose contents are not read (reported by count and type)
IGNORED_SETS = {"ForceSet": "forces", "MarkerSet": "markers",
                "ContactGeometrySet": "contact geometry", "ControllerSet": "controllers",
                "ProbeSet": "probes", "ConstraintSet": "constraints"}
# the OpenSim classes whose names end so are forces (Thelen2003Muscle, CoordinateActuator,
# HuntCrossleyForce, PointToPointSpring, Blankevoort1991Ligament): in a model's <components>
# they act as the ForceSet's do (Moco's 2D_gait.osim holds its muscles there), and are reported
# as forces, not read
FORCE_SUFFIXES = ("Muscle", "Actuator", "Force", "Spring", "Damper", "Ligament")
_NUMBER = re.compile(r"[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
                     r"|inf|infinity|nan)", re.IGNORECASE)        # (OpenSim writes Infinity)


def words(text):
    """The words of an element's text apart by ASCII white space, as OpenSim splits them (str.split
    also splits at a no-break space or U+2003, where OpenSim reads the number before as the
    whole: an outside tester's <translation> of "0.1<U+00A0>0.2 0.3" was placed at 0 there)."""
    return [w for w in re.split(r"[ \t\r\n]+", text) if w]


class OsimWarning(UserWarning):
    """What an .osim file holds that the dynamics do not use (one line per file)."""


# ---- XML ---------------------------------------------------------------------------------------
class _Node:
    """An XML element: tag, name attribute, children, text and line."""
    __slots__ = ("tag", "name", "children", "text", "line", "path", "version", "file")

    def __init__(self, tag, attrib, line):
        self.tag, self.name, self.children = tag, attrib.get("name"), []
        self.text, self.line = "", line
        self.path, self.version = None, attrib.get("Version")
        self.file = attrib.get("file")      # an object OpenSim reads from another file

    def child(self, tag):
        return next((c for c in self.children if c.tag == tag), None)

    def all(self, tag):
        return [c for c in self.children if c.tag == tag]

    def objects(self):
        """The elements of a Set (inside its <objects>)."""
        objs = self.child("objects")
        return objs.children if objs is not None else []


class _Refused(Exception):
    pass


def parse_xml(data, source):
    """Parse XML into _Nodes; DTDs, entities and nesting deeper than MAX_DEPTH are refused."""
    parser = expat.ParserCreate()
    try:
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    except (AttributeError, expat.ExpatError):   # pragma: no cover - very old expat
        pass
    stack, root, text = [], [], []

    def refuse(*_):
        raise _Refused("document type and entity declarations are not allowed in an .osim file")

    def start(tag, attrib):
        if len(stack) >= MAX_DEPTH:
            raise _Refused(f"the XML nests deeper than {MAX_DEPTH} levels")
        if stack:
            stack[-1].text += "".join(text)
        text.clear()
        node = _Node(tag, attrib, parser.CurrentLineNumber)
        (stack[-1].children if stack else root).append(node)
        stack.append(node)

    def end(_tag):
        stack.pop().text += "".join(text)
        text.clear()

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text.append
    try:
        parser.Parse(xml_declaration_first(data), True)
    except _Refused as e:
        raise ModelError(str(e), source=source, line=parser.CurrentLineNumber) from None
    except expat.ExpatError as e:
        raise ModelError(malformed_xml(e, data), source=source, line=e.lineno) from None
    except (ValueError, LookupError, OverflowError) as e:     # an unknown or non-text encoding=
        raise ModelError(f"malformed XML: {e}", source=source) from None
    if not root:
        raise ModelError("the file has no XML element", source=source)
    return root[0]


class _Ctx:
    """The file being read, for error messages."""
    def __init__(self, source):
        self.source = source

    def error(self, node, problem):
        what = f"<{node.tag}" + (f" name='{node.name}'" if node.name else "") + ">"
        return ModelError(problem, source=self.source, element=what, line=node.line)

    def numbers(self, node, tag, n=None, default=None, infinite=False):
        """The numbers in child <tag> (n of them when n is given), apart by spaces, each with
        at most a comma after it ("0, 0.1, 0", which OpenSim reads alike; it reads "0,0.1,0"
        or "0 ,0.1" as zeros, and other forms its own way: refused here); finite ones only,
        unless infinite (a <range>)."""
        el = node.child(tag)
        if el is None and default is not None:
            return list(default)
        if el is None or not el.text.strip():   # (OpenSim refuses an empty one: "convertOK")
            raise self.error(node, f"<{tag}> is " + ("missing" if el is None else "empty"))
        values = [w[:-1] if w.endswith(",") else w for w in words(el.text)]
        if not all(_NUMBER.fullmatch(w) for w in values):
            odd = re.search(r"[^\S \t\r\n]", el.text)        # white space OpenSim does not split at
            raise self.error(el, f"<{tag}> must hold numbers, got {el.text.strip()[:40]!r}" + (
                f": numbers go apart by ASCII spaces, tabs or line breaks, not U+{ord(odd[0]):04X}"
                if odd else ""))
        out = [float(w) for w in values]
        if not all(math.isfinite(v) or (infinite and math.isinf(v)) for v in out):
            what = "hold numbers, not nan" if infinite else "be finite"
            raise self.error(el, f"<{tag}> must {what}, got {el.text.strip()[:40]!r}")
        if n is not None and len(out) != n:
            raise self.error(el, f"<{tag}> must hold {n} number{'s' if n != 1 else ''}, "
                                 f"got {len(out)}")
        return out

    def text(self, node, tag, default=""):
        el = node.child(tag)
        return el.text.strip() if el is not None else default


# ---- loading -----------------------------------------------------------------------------------
def load_osim(path, *, inertia="physical", merge_fixed=True):
    """Load an OpenSim 4 .osim file (module docstring). Returns the model with fixed joints merged
    and validated (merge_fixed=False: one body per OpenSim body, not validated). inertia:
    "physical" or "relaxed" (docs/inertia-checks.md)."""
    data = read_source(path)
    source = os.fsdecode(os.fspath(path))
    if inertia not in INERTIA_CHECKS:
        raise ModelError(f"inertia must be one of {INERTIA_CHECKS}, got {inertia!r}", source=source)
    ctx = _Ctx(source)
    model = _build(parse_xml(data, source), ctx, inertia)
    return model.merged_fixed().validate() if merge_fixed else model


def _model_element(doc, ctx):
    if doc.tag != "OpenSimDocument":
        raise ctx.error(doc, "not an OpenSim model: the root element must be <OpenSimDocument>")
    try:
        version = int(doc.version or 0)
    except ValueError:
        raise ctx.error(doc, f"Version={doc.version[:40]!r} is not a version number (OpenSim 4 "
                        "writes Version=\"40000\" or later)") from None
    if version < 40000:
        raise ctx.error(doc, f"OpenSim 3 format (Version {version or 'missing'}): open and save "
                        "the model in OpenSim 4 to convert it (its joints are inside its bodies)")
    model = doc.child("Model")
    if model is None:
        raise ctx.error(doc, "no <Model> in the document")
    return model


# the parts of a <Model> the dynamics read (the rest: forces, controllers, ... named in a warning)
READ_PARTS = ("Ground", "BodySet", "JointSet")     # (and of <components>: bodies, joints, frames)


def _refuse_external_objects(el, ctx):
    """OpenSim reads an object with a file="..." attribute from that file (<JointSet
    file="joints.xml"/>); this reader does not: refused where the dynamics would read it, which
    otherwise looked like a model without joints or with a frame missing its parent."""
    comps = el.child("components")
    read = [c for c in (comps.children if comps is not None else [])
            if c.tag in FRAME_TAGS + ("Body",) or _is_joint(c)]
    stack = [el] + [c for c in el.children if c.tag in READ_PARTS] + read
    while stack:
        node = stack.pop()
        if node.file is not None:
            raise ctx.error(node, f"file=\"{node.file[:200]}\": an object OpenSim reads from "
                            "another file is not read here: copy that file's element into the "
                            "model file in its place")
        if node is not el:
            stack.extend(node.children)


def _misplaced_parts(el, ctx):
    """A Body or joint is read where OpenSim 4 files keep them: in the <objects> of the
    BodySet and JointSet and in the model's <components>. OpenSim builds one in the
    <components> of a body, frame or the Ground too; here it was dropped without a word (a
    body) or taken for a body without a joint: refused, naming where it is. One anywhere else
    (directly in a Body or a set, in a joint's <coordinates>) OpenSim ignores, and so does this
    reader: returns the ids of those elements, which are no frames either (_index)."""
    def placed(node):
        return node.tag == "Body" or _is_joint(node)
    allowed = {id(c) for tag in ("BodySet", "JointSet") for part in el.all(tag)
               for c in part.objects()}
    comps = el.child("components")
    allowed |= {id(c) for c in (comps.children if comps is not None else []) if placed(c)}

    def owner_of(c):
        if c.tag in READ_PARTS:
            return f"the {c.tag}"
        kind = c.tag.lower() if c.tag == "Body" else c.tag
        return f"{kind} '{c.name or DEFAULT_NAMES.get(c.tag, '')}'"
    stack = [(c, owner_of(c)) for c in el.children if c.tag in READ_PARTS]
    stack += [(c, owner_of(c)) for c in (comps.children if comps is not None else [])
              if c.tag in FRAME_TAGS or placed(c)]
    ignored = set()
    while stack:
        node, owner = stack.pop()
        for c in node.children:
            if placed(c) and id(c) not in allowed:
                if node.tag != "components":
                    ignored.add(id(c))
                    continue
                kind, where = ("body", "BodySet") if c.tag == "Body" else ("joint", "JointSet")
                raise ctx.error(c, f"a {kind} in the <components> of {owner} is not read: move "
                                f"it into the <objects> of the model's {where}")
            stack.append((c, owner_of(c) if c.tag in FRAME_TAGS or placed(c) else owner))
    return ignored


def _build(doc, ctx, inertia):
    el = _model_element(doc, ctx)
    _refuse_external_objects(el, ctx)
    ignored = _misplaced_parts(el, ctx)
    gravity = ctx.numbers(el, "gravity", 3, default=(0.0, -9.80665, 0.0))
    model = Model(el.name or "osim", gravity=gravity, source=ctx.source)
    model.inertia_checks = inertia
    _assign_paths(el, "")
    index = {"/ground": _Node("Ground", {"name": GROUND}, el.line)}   # a file may leave it out
    _index(el, index, ignored)
    frames = _Frames(index, ctx)
    bodies = _bodies(el, ctx)
    joints = _joints(el, ctx, frames, bodies)
    _add_tree(model, joints, bodies, frames, ctx)
    report = _report(el, joints, ctx)
    if report:
        warnings.warn(f"{ctx.source}: {report}", OsimWarning, stacklevel=3)
    return model


# ---- component paths and frames ------------------------------------------------------------------
def _assign_paths(node, path):
    """OpenSim component paths: every named element below the model is a component named by
    its ancestors' names (/bodyset/femur_r, /jointset/knee_r/femur_r_offset); unnamed list
    elements (<objects>, <frames>, <components>) add nothing; an unnamed Ground or set takes
    OpenSim's default name (DEFAULT_NAMES: /bodyset/b resolves with <BodySet> unnamed)."""
    node.path = path or "/"
    for c in node.children:
        name = c.name or DEFAULT_NAMES.get(c.tag)
        _assign_paths(c, f"{path}/{name}" if name else path)


def _index(node, out, ignored):
    if id(node) in ignored:             # (OpenSim builds no frame there: _misplaced_parts)
        return
    if node.tag in ("Ground", "Body") + FRAME_TAGS:
        out[node.path] = node
    for c in node.children:
        _index(c, out, ignored)


def _resolve(owner_path, ref):
    """An absolute component path from a socket's text, relative to the socket's owner; None
    where its ".." climb above the model (OpenSim finds no such frame: it did here, at /)."""
    parts = [] if ref.startswith("/") else [p for p in owner_path.split("/") if p]
    for p in ref.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(p)
    return "/" + "/".join(parts)


def _orientation(angles):
    """Body-fixed X-Y-Z angles: R = R_x(a) R_y(b) R_z(c) (OpenSim's frame orientation)."""
    out = np.eye(3)
    for k, a in enumerate(angles):
        c, s = math.cos(a), math.sin(a)
        i, j = [(1, 2), (2, 0), (0, 1)][k]
        R = np.eye(3)
        R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
        out = out @ R
    return out


class _Frames:
    """Each frame's base (a body path or /ground) and its placement in that base, resolved
    through chains of PhysicalOffsetFrames."""
    def __init__(self, index, ctx):
        self.index, self.ctx, self.done = index, ctx, {}

    def find(self, owner, ref, socket_node):
        path = _resolve(owner.path, ref)
        if path not in self.index:
            where = "its '..' climb above the model" if path is None else f"path {path}"
            raise self.ctx.error(socket_node, f"frame '{ref}' ({where}) is not a Ground, Body "
                                 "or PhysicalOffsetFrame of the model")
        return self.base(path)

    def base(self, path):
        """(base path, Transform of the frame in its base): the chain of offset frames walked
        down to a Body or Ground (in a loop, not by recursion: a chain of 987 frames exceeded
        Python's recursion limit), then composed back up."""
        chain, seen = [], set()
        while path not in self.done:
            node = self.index[path]
            if node.tag in ("Ground", "Body"):
                self.done[path] = (path if node.tag == "Body" else GROUND, Transform())
                break
            if path in seen:
                raise self.ctx.error(node, "its frames form a loop")
            seen.add(path)
            chain.append((path, node))
            sock = node.child("socket_parent")
            if sock is None or not sock.text.strip():
                raise self.ctx.error(node, "<socket_parent> is missing")
            ref = _resolve(node.path, sock.text.strip())
            if ref not in self.index:
                raise self.ctx.error(sock, f"frame '{sock.text.strip()}' is not a Ground, Body "
                                     "or PhysicalOffsetFrame of the model")
            path = ref
        where, X = self.done[path]
        for offset, node in reversed(chain):
            own = Transform(_orientation(self.ctx.numbers(node, "orientation", 3, (0, 0, 0))),
                            np.array(self.ctx.numbers(node, "translation", 3, (0, 0, 0))))
            X = X.compose(own)
            self.done[offset] = (where, X)
        return where, X


# ---- bodies --------------------------------------------------------------------------------------
def _is_joint(node):
    return node.tag in JOINTS or node.tag.endswith("Joint")


def _model_objects(el, set_tag, is_kind):
    """The objects of the model's BodySet or JointSet, then those of that kind among the model's
    <components> (OpenSim builds a Body or Joint wherever the model's components hold it)."""
    found = el.child(set_tag)
    comps = el.child("components")
    return ((found.objects() if found is not None else [])
            + [c for c in (comps.children if comps is not None else []) if is_kind(c)])


def _bodies(el, ctx):
    """OpenSim body path -> (name, mass, com, inertia 3x3, node)."""
    out, names = {}, {}
    for b in _model_objects(el, "BodySet", lambda c: c.tag == "Body"):
        if b.tag != "Body":
            raise ctx.error(b, f"<{b.tag}> is not a body type this reader knows (Body)")
        if not b.name:
            raise ctx.error(b, "a body needs a name")
        if b.name in names:
            raise ctx.error(b, f"a second body named '{b.name}' (the first: line "
                            f"{names[b.name].line}; OpenSim renames it '{b.name}_0' with a "
                            "warning): give each body its own name")
        names[b.name] = b
        mass = ctx.numbers(b, "mass", 1)[0]       # OpenSim too refuses a body without one
        com = ctx.numbers(b, "mass_center", 3, default=(0, 0, 0))
        moments = ctx.numbers(b, "inertia", 6, default=(0,) * 6)
        if (abs(mass) <= SIMBODY_SIGNIFICANT_REAL
                and np.linalg.norm(moments) > SIMBODY_SIGNIFICANT_REAL):
            warnings.warn(f"{ctx.source}: line {b.line}: <Body name='{b.name}'>: its mass "
                          f"{mass:g} is none to OpenSim, which then resets its nonzero <inertia> "
                          "to zero; so does this reader", OsimWarning, stacklevel=2)
            moments = (0.0,) * 6
        xx, yy, zz, xy, xz, yz = moments
        I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        out[b.path] = (b.name, mass, com, I, b)
    if len(out) > MAX_BODIES:
        raise ModelError(f"{len(out)} bodies is more than the limit of {MAX_BODIES}",
                         source=ctx.source)
    return out


# ---- joints, coordinates, functions ------------------------------------------------------------
class _Joint:
    """A joint as read: the scleron type and parameters, the frames it joins, its coordinates."""
    def __init__(self, node, params, parent, child, coords):
        self.node, self.params, self.coords = node, params, coords
        self.parent, self.child = parent, child        # (base path, Transform)
        self.name = node.name

    @property
    def type(self):
        return "fixed" if not self.coords else "opensim"


def _flag(text):
    """An OpenSim bool property as OpenSim reads it: true or 1 (any case, spaces around)."""
    return text.strip().lower() in ("true", "1")


def _coordinates(node, ctx):
    """name -> dict(default, speed, range, locked, clamped, prescribed) of a joint's Coordinates."""
    out = {}
    holder = node.child("coordinates")
    for c in holder.all("Coordinate") if holder is not None else []:
        if not c.name:
            raise ctx.error(c, "a coordinate needs a name")
        if c.name in out:
            raise ctx.error(c, f"coordinate '{c.name}' is declared twice in this joint (OpenSim "
                            f"renames the second '{c.name}_0' with a warning): give each its own "
                            "name")
        out[c.name] = {
            "default": ctx.numbers(c, "default_value", 1, (0.0,))[0],
            "speed": ctx.numbers(c, "default_speed_value", 1, (0.0,))[0],
            "range": tuple(ctx.numbers(c, "range", 2, DEFAULT_RANGE, infinite=True)),
            "locked": _flag(ctx.text(c, "locked")),
            "clamped": _flag(ctx.text(c, "clamped")),
            "prescribed": _flag(ctx.text(c, "prescribed")),
            "node": c}
        lo, hi = out[c.name]["range"]
        if out[c.name]["clamped"] and not lo <= out[c.name]["default"] <= hi:
            raise ctx.error(c, f"the coordinate is clamped and its default_value "
                            f"{out[c.name]['default']:g} is outside its range [{lo:g}, {hi:g}] "
                            "(OpenSim refuses it too)")
    return out


def _joints(el, ctx, frames, bodies):
    out, seen = [], {}
    for j in _model_objects(el, "JointSet", _is_joint):
        if j.tag not in JOINTS:
            raise ctx.error(j, f"joint type {j.tag} is not read (known: {', '.join(JOINTS)})")
        if not j.name:
            raise ctx.error(j, "a joint needs a name")
        if j.name in seen:
            raise ctx.error(j, f"a second joint named '{j.name}' (the first: line "
                            f"{seen[j.name].line}): give each joint its own name")
        seen[j.name] = j
        ends = []
        for tag in ("socket_parent_frame", "socket_child_frame"):
            sock = j.child(tag)
            if sock is None or not sock.text.strip():
                raise ctx.error(j, f"<{tag}> is missing")
            ends.append(frames.find(j, sock.text.strip(), sock))
        declared = _coordinates(j, ctx)
        if j.tag == "CustomJoint":
            names, params = _custom(j, ctx)
            unknown = [n for n in names if declared and n not in declared]
            if unknown:
                raise ctx.error(j, f"its SpatialTransform uses coordinate '{unknown[0]}', which "
                                f"the joint does not declare (its <coordinates>: "
                                f"{', '.join(declared)})")
            unused = [n for n in declared if n not in names]
            if unused:          # OpenSim keeps them: coordinates of a singular mass matrix
                warnings.warn(f"{ctx.source}: line {j.line}: <CustomJoint name='{j.name}'> "
                              f"declares coordinate{'s' if len(unused) > 1 else ''} "
                              f"{', '.join(unused)}, which no TransformAxis uses: not read "
                              "(OpenSim keeps such a coordinate; it moves nothing, and the mass "
                              "matrix is singular)", OsimWarning,
                              stacklevel=4)
        else:
            names, params = _fixed_form(j, ctx, declared)
        coords = []
        for name in names:
            info = declared.get(name) or {"default": 0.0, "speed": 0.0, "range": None,
                                          "locked": False, "clamped": False, "prescribed": False}
            coords.append(dict(info, name=name))
        if j.tag in ROTATION_SPEEDS_IN_PARENT:
            _speeds_to_rates(j, coords, ctx)
        for c in coords:
            if c["locked"]:                 # (OpenSim's initial state holds it still)
                c["speed"] = 0.0
        params["coordinates"] = tuple(names)
        params["ranges"] = tuple(tuple(c["range"]) if c["range"] else (-math.inf, math.inf)
                                 for c in coords)
        out.append(_Joint(j, params, ends[0], ends[1], coords))
    return out


# Simbody's speeds of these joints' rotations are the angular velocity in the parent frame
# (docs/opensim.md, "Velocities are q-dot"), so their default_speed_values are omega
ROTATION_SPEEDS_IN_PARENT = ("BallJoint", "FreeJoint", "EllipsoidJoint")


def _speeds_to_rates(j, coords, ctx):
    """The default speeds of a Ball, Free or Ellipsoid joint's three rotation coordinates (in
    place): Simbody's u = omega = E(q) q-dot, E = [x, R_x(q1) y, R_x(q1) R_y(q2) z], to q-dot.
    A locked coordinate's rate is 0, the others' those of the omega nearest the default speeds
    (least squares: OpenSim's initial state projects u onto its locks' constraints)."""
    u = np.array([c["speed"] for c in coords[:3]])
    if not u.any():
        return
    a, b = coords[0]["default"], coords[1]["default"]
    ca, sa, cb, sb = math.cos(a), math.sin(a), math.cos(b), math.sin(b)
    E = np.array([[1.0, 0.0, sb], [0.0, ca, -sa * cb], [0.0, sa, ca * cb]])
    free = [k for k in range(3) if not coords[k]["locked"]]
    rates = np.zeros(3)
    if free:
        rates[free] = np.linalg.lstsq(E[:, free], u, rcond=None)[0]
    if abs(cb) < 1e-6:
        warnings.warn(f"{ctx.source}: line {j.line}: <{j.tag} name='{j.name}'>: its default speeds "
                      f"are an angular velocity, and at the gimbal lock of its angles "
                      f"({coords[1]['name']} = {math.degrees(b):g} deg) no angle rates give it: "
                      "qd0 takes the nearest (least squares)", OsimWarning, stacklevel=2)
    for c, rate in zip(coords[:3], rates):
        c["speed"] = float(rate)


def _fixed_form(j, ctx, declared):
    n, rot, trans = JOINTS[j.tag]
    names = list(declared)
    if len(names) != n:          # (OpenSim refuses fewer too: more mobilities than coordinates)
        raise ctx.error(j, f"a {j.tag} has {n} coordinate{'s' if n != 1 else ''}, the file "
                        f"declares {len(names)} in its <coordinates>")

    def linear(k):
        return {"kind": "linear", "args": (k,), "coefficients": (1.0, 0.0)}
    params = {"rotation": tuple((a, linear(k)) for a, k in rot),
              "translation": tuple((a, linear(k)) for a, k in trans)}
    if j.tag == "EllipsoidJoint":
        params["ellipsoid"] = tuple(ctx.numbers(j, "radii_x_y_z", 3))
    return names, params


def _custom(j, ctx):
    """A CustomJoint's coordinates (in order of first use by rotation1 ... translation3, as
    OpenSim numbers them) and its rotation and translation axes with their functions."""
    st = j.child("SpatialTransform")
    if st is None:
        raise ctx.error(j, "a CustomJoint needs a <SpatialTransform>")
    _warn_unread_axes(j, st, ctx)
    axes = []
    names = []
    for tag in AXES:
        ax = next((c for c in st.children if c.name == tag), None)
        used = words(ax.child("coordinates").text) if ax is not None and \
            ax.child("coordinates") is not None else []
        for name in used:
            if name not in names:
                names.append(name)
        axes.append((ax, used))
    if not 1 <= len(names) <= 6:
        raise ctx.error(j, f"a CustomJoint needs 1 to 6 coordinates, its axes use {len(names)}")
    out = []
    for k, (ax, used) in enumerate(axes):
        # a TransformAxis without <axis> turns or slides along x (OpenSim 4's default, whatever
        # its place: checked against OpenSim 4.6); an absent axis does nothing (Constant(0))
        default = [X, Y, Z][k % 3]
        axis = np.array(ctx.numbers(ax, "axis", 3, X) if ax is not None else default)
        f = _axis_function(ax, used, names, ctx) if ax is not None else \
            {"kind": "constant", "value": 0.0}
        norm = float(np.linalg.norm(axis))
        if norm < 1e-12:
            if not is_zero(f):
                raise ctx.error(ax, "the axis is zero but its function is not")
            axis, norm = np.array(default), 1.0
        out.append((tuple(float(v) for v in axis / norm), f))
    return names, {"rotation": tuple(out[:3]), "translation": tuple(out[3:])}


def _warn_unread_axes(j, st, ctx):
    """An OsimWarning for each TransformAxis that is not read: one of another name than the six,
    or a second one of a name (OpenSim 4.6 too reads the first and ignores the others)."""
    seen = set()
    for ax in st.all("TransformAxis"):
        if ax.name in AXES and ax.name not in seen:
            seen.add(ax.name)
            continue
        why = (f"a second one named '{ax.name}' (the first is read, as OpenSim does)"
               if ax.name in AXES else
               f"a SpatialTransform's axes are named {', '.join(AXES)}")
        what = "<TransformAxis" + (f" name='{ax.name}'" if ax.name else "") + ">"
        warnings.warn(f"{ctx.source}: line {ax.line}: {what} of <CustomJoint name='{j.name}'> "
                      f"is not read: {why}", OsimWarning, stacklevel=2)


def _axis_function(ax, used, names, ctx):
    """The function of a TransformAxis; where none is given, OpenSim 4's default Constant(0)
    (TransformAxis constructs its function property so: checked against OpenSim 4.6), said in
    an OsimWarning when the axis names a coordinate, which then does not move it."""
    f = _function_node(ax, ctx)
    args = tuple(names.index(n) for n in used)
    if f is None:
        if len(used) > 1:
            raise ctx.error(ax, "an axis of several coordinates needs a function")
        if used:
            warnings.warn(f"{ctx.source}: line {ax.line}: <TransformAxis name='{ax.name}'> names "
                          f"coordinate {used[0]} but has no function: OpenSim 4 gives it "
                          "Constant(0), so the coordinate does not move this axis (give it a "
                          "LinearFunction to make it follow; a coordinate that moves no axis "
                          "makes the mass matrix singular)", OsimWarning, stacklevel=2)
        return {"kind": "constant", "value": 0.0}
    return _function(f, args, ctx)


def _function_node(node, ctx):
    """The function element of an axis or multiplier: the one inside a <function> wrapper, or a
    child named by an object type (OpenSim's types are capitalised, its properties are not:
    an unnamed <LinearFunction> is the function, as OpenSim reads it, and so is a type this
    reader does not know, which _function then refuses by name)."""
    for c in node.children:
        if c.tag == "function":
            inner = [g for g in c.children]
            return inner[0] if inner else None
        if c.tag[:1].isupper() or c.name == "function":
            return c
    return None


def _function(f, args, ctx):
    kind = FUNCTION_TAGS.get(f.tag)
    if kind is None:
        what = (f"function {f.tag} is not read" if f.tag in KNOWN_UNSUPPORTED_FUNCTIONS else
                f"<{f.tag}> is no function this reader knows")
        raise ctx.error(f, f"{what} (known: {', '.join(FUNCTION_TAGS)})")
    if kind == "constant":
        return {"kind": kind, "value": ctx.numbers(f, "value", 1, (0.0,))[0]}
    if kind == "multiplier":
        inner = _function_node(f, ctx)
        if inner is None:
            raise ctx.error(f, "a MultiplierFunction needs a function")
        return {"kind": kind, "scale": ctx.numbers(f, "scale", 1, (1.0,))[0],
                "function": _function(inner, args, ctx)}
    if not args:
        raise ctx.error(f, f"a {f.tag} needs a coordinate (its axis lists none)")
    if kind == "linear":
        cs = ctx.numbers(f, "coefficients", None, (1.0, 0.0))
        if len(cs) != len(args) + 1:
            raise ctx.error(f, f"a LinearFunction of {len(args)} coordinate(s) needs "
                            f"{len(args) + 1} coefficients, got {len(cs)}")
        return {"kind": kind, "args": args, "coefficients": tuple(cs)}
    if len(args) > 1:
        raise ctx.error(f, f"a {f.tag} is a function of one coordinate, its axis lists "
                        f"{len(args)}")
    if kind == "polynomial":
        cs = ctx.numbers(f, "coefficients")
        if len(cs) > MAX_POLYNOMIAL_COEFFICIENTS:
            raise ctx.error(f, f"a PolynomialFunction of {len(cs)} coefficients is more than the "
                            f"limit of {MAX_POLYNOMIAL_COEFFICIENTS}: fit a SimmSpline instead")
        return {"kind": kind, "args": args, "coefficients": tuple(cs)}
    x, y = ctx.numbers(f, "x"), ctx.numbers(f, "y")
    if len(x) != len(y) or len(x) < 2:
        raise ctx.error(f, f"a SimmSpline needs as many <x> as <y> values, at least 2 (got "
                        f"{len(x)} and {len(y)})")
    if len(x) > MAX_SPLINE_KNOTS:
        raise ctx.error(f, f"a SimmSpline of {len(x)} knots is more than the limit of "
                        f"{MAX_SPLINE_KNOTS} (the generated code grows with them): fit fewer")
    if any(b <= a for a, b in zip(x, x[1:])):
        raise ctx.error(f, "the SimmSpline's <x> values must increase")
    close = [k for k in range(len(x) - 1) if x[k + 1] - x[k] < OPENSIM_TINY_NUMBER]
    if close:
        a, b = x[close[0]], x[close[0] + 1]
        warnings.warn(f"{ctx.source}: line {f.line}: <SimmSpline>: its knots x = {a:.17g} and "
                      f"{b:.17g} are {b - a:.3g} apart, less than OpenSim's floor of "
                      f"{OPENSIM_TINY_NUMBER:g}: OpenSim computes the spline as if they were that "
                      "far apart (its curve differs from the spline through the knots, and "
                      "jumps at the second); scleron's is the spline through the knots. Merge "
                      "or spread them for both to agree", OsimWarning, stacklevel=2)
    with np.errstate(all="ignore"):
        try:
            finite = all(np.all(np.isfinite(c)) for c in spline_coefficients(x, y))
        except np.linalg.LinAlgError:
            finite = False
    if not finite:
        raise ctx.error(f, "the SimmSpline's cubic pieces overflow double precision (its slopes "
                        "or curvatures from these <x> and <y>): bring the values to a moderate "
                        "range")
    return {"kind": kind, "args": args, "x": tuple(x), "y": tuple(y)}


assert set(FUNCTION_TAGS.values()) == set(KINDS)


# ---- the tree ------------------------------------------------------------------------------------
def _reversal_hint(j, joints, bodies):
    """Why a second joint onto one child body is refused: where the joint's parent body is no
    joint's child, OpenSim 4 builds the joint reversed (the parent moved by it); otherwise the
    joints close a loop."""
    parent = j.parent[0]
    if parent in bodies and not any(k.child[0] == parent for k in joints):
        return (f" and its parent body '{bodies[parent][0]}' is no joint's child: OpenSim builds "
                "this joint reversed, which is not read (write the joint from the body nearer the "
                "ground to the other)")
    return " (closed loops are not read)"


def _tree_order(joints, bodies, ctx):
    """The joints parents first: the file's order where it already is, else each joint after
    the one moving its parent (stable)."""
    child_of = {}
    for j in joints:
        base = j.child[0]
        if base == GROUND or base not in bodies:
            raise ctx.error(j.node, "its child frame is on the ground: write the joint from "
                            "the ground to the body")
        if j.parent[0] == base:
            raise ctx.error(j.node, f"its parent and child frames are both on body "
                            f"'{bodies[base][0]}': a joint connects two bodies")
        if base in child_of:
            raise ctx.error(j.node, f"body '{bodies[base][0]}' is already the child of joint "
                            f"'{child_of[base].name}'" + _reversal_hint(j, joints, bodies))
        child_of[base] = j
    for path, (name, *_rest, node) in bodies.items():
        if path not in child_of:
            raise ctx.error(node, "the body has no joint (OpenSim would add a free joint to the "
                            "ground: add a FreeJoint)")
    placed, order, pending = {GROUND}, [], list(joints)
    while pending:
        j = next((j for j in pending if j.parent[0] in placed), None)
        if j is None:
            raise ctx.error(pending[0].node, "its parent frame is not connected to the ground")
        placed.add(j.child[0])
        order.append(j)
        pending.remove(j)
    return order


def _add_tree(model, joints, bodies, frames, ctx):
    names = {b[0] for b in bodies.values()}
    q0, qd0 = [], []
    for j in _tree_order(joints, bodies, ctx):
        name, mass, com, I, node = bodies[j.child[0]]
        parent = WORLD if j.parent[0] == GROUND else bodies[j.parent[0]][0]
        X_PF, X_BM = j.parent[1], j.child[1]
        inertia = dict(mass=mass, com=com, inertia=I)
        try:
            if j.type == "fixed":
                model.add_body(name, parent, joint="fixed", joint_name=j.name,
                               origin=X_PF.compose(X_BM.inverse()), **inertia)
                continue
            moving = name
            if not X_BM.is_identity(1e-15):
                _check_child_offset(j, X_BM, name, mass, com, ctx)
                moving = _unique(f"{name}_{j.name}_frame", names)
                model.add_body(moving, parent, joint="opensim", joint_name=j.name, origin=X_PF,
                               mass=0.0, com=(0, 0, 0), inertia=(0, 0, 0), **j.params)
                model.add_body(name, moving, joint="fixed", joint_name=f"{j.name}_child_frame",
                               origin=X_BM.inverse(), **inertia)
            else:
                model.add_body(name, parent, joint="opensim", joint_name=j.name, origin=X_PF,
                               **inertia, **j.params)
        except ModelError as e:
            raise ModelError(e.problem, source=ctx.source, element=e.element,
                             line=node.line if e.body == name else j.node.line,
                             body=e.body, joint=e.joint) from None
        q0 += [c["default"] for c in j.coords]
        qd0 += [c["speed"] for c in j.coords]
    model.q0, model.qd0 = np.array(q0), np.array(qd0)


def _check_child_offset(j, X_BM, name, mass, com, ctx):
    """A ModelError naming the joint where its child frame lies so far from the body that the
    body's inertia about that frame, m |r|^2, overflows (r: the mass centre seen from the
    frame): the error came later, naming the body the reader makes up for the frame."""
    r = math.hypot(*(float(x) for x in X_BM.inverse().translation))
    r += math.hypot(*(float(x) for x in com))
    if mass and not math.isfinite(abs(float(mass)) * r * r):
        raise ctx.error(j.node, f"its child frame is {r:.3g} m from the mass centre of body "
                        f"'{name}' ({float(mass):.3g} kg): the body's inertia about the frame "
                        "overflows double precision; rescale the model's units")


def _unique(name, used):
    out, k = name, 1
    while out in used:
        k += 1
        out = f"{name}{k}"
    used.add(out)
    return out


# ---- the report ----------------------------------------------------------------------------------
def _report(el, joints, ctx):
    """One line: what the file holds that is not read or not enforced."""
    parts = []
    for tag, what in IGNORED_SETS.items():
        s = el.child(tag)
        items = s.objects() if s is not None else []
        if tag == "ConstraintSet":
            for c in items:
                parts.append(_constraint(c, ctx, joints))
            continue
        if items:
            kinds = Counter(i.tag for i in items)
            parts.append(f"{len(items)} {what} (" + ", ".join(f"{n} {k}" for k, n in kinds.items())
                         + ")")
    others = _other_components(el)
    forces = [c for c in others if c.tag.endswith(FORCE_SUFFIXES)]
    for found, what in ((forces, "force"), ([c for c in others if c not in forces], "other")):
        if found:
            parts.append(f"{len(found)} {what} component{'s' if len(found) > 1 else ''} ("
                         + ", ".join(f"{n} {k}" for k, n in Counter(c.tag for c in found).items())
                         + ")")
    reversed_ = [j.node.name for j in joints if _flag(ctx.text(j.node, "reverse"))]
    if reversed_:           # OpenSim 3's property; OpenSim 4 reads the joint as written too
        parts.append(f"<reverse> of joint{'s' if len(reversed_) > 1 else ''} "
                     f"{', '.join(reversed_)} (OpenSim 4 has no such property and ignores it)")
    text = ("not read: " + "; ".join(parts)) if parts else ""
    loose = []
    for key, what in (("locked", "locked"), ("prescribed", "prescribed"),
                      ("clamped", "clamped to their ranges")):
        names = [c["name"] for j in joints for c in j.coords if c[key]]
        if names:
            loose.append(f"{what}: {', '.join(names)}")
    if loose:
        text += ("; " if text else "") + "coordinates left free (" + "; ".join(loose) + ")"
    repeated = Counter(c["name"] for j in joints for c in j.coords)
    repeated = sorted(name for name, n in repeated.items() if n > 1)
    if repeated:            # (OpenSim takes them too; arrays can then not be matched by name)
        text += (("; " if text else "") + "coordinate names used by more than one joint ("
                 + ", ".join(repeated) + "): match arrays with OpenSim's by joint and "
                 "coordinate, as dyn.coordinate_descriptions names them, not by name alone")
    return text


def _other_components(el):
    """The components that are not bodies, joints or frames, in the model's <components> and in
    those of the Ground, a body, joint or frame, where OpenSim builds them too (a spring on a
    body: it was left out without a word, an outside tester)."""
    def read(c):
        return c.tag in FRAME_TAGS + ("Body",) or _is_joint(c)
    comps = el.child("components")
    stack = [c for c in el.children if c.tag in READ_PARTS] + ([comps] if comps is not None else [])
    found = []
    while stack:
        node = stack.pop()
        for c in node.children:
            if node.tag == "components" and not read(c):
                found.append(c)
            else:
                stack.append(c)
    return found


def _constraint(c, ctx, joints):
    if c.tag == "CoordinateCouplerConstraint":
        indep = ctx.text(c, "independent_coordinate_names")
        dep = ctx.text(c, "dependent_coordinate_name")
        if not (indep and dep):             # (OpenSim refuses it too when it is enabled)
            missing = " and ".join(w for w, x in (("independent", indep), ("dependent", dep))
                                   if not x)
            return f"CoordinateCouplerConstraint '{c.name}' (it names no {missing} coordinate)"
        return (f"CoordinateCouplerConstraint '{c.name}' ({dep} as a function of {indep}: the "
                "coordinates stay independent" + _broken_coupling(c, ctx, joints) + ")")
    return f"{c.tag} '{c.name}'"


def _broken_coupling(c, ctx, joints):
    """', and their default values break it: ...' where an enforced coupler's dependent
    coordinate's default is not scale_factor f(independent defaults), which OpenSim assembles
    at its start and initial_state() does not (Leg39's tibia started 0.46 m off the femur; an
    outside tester); '' where it holds, is not enforced, or its function cannot be read."""
    defaults = {x["name"]: x["default"] for j in joints for x in j.coords}
    indep = words(ctx.text(c, "independent_coordinate_names"))
    dep = ctx.text(c, "dependent_coordinate_name")
    wrapper = c.child("coupled_coordinates_function")
    node = _function_node(wrapper, ctx) if wrapper is not None else None
    if not _flag(ctx.text(c, "isEnforced", "true")) or node is None or \
            not all(n in defaults for n in indep + [dep]):
        return ""
    try:
        with warnings.catch_warnings():     # (a spline's own warnings: scleron never uses it)
            warnings.simplefilter("ignore")
            f = _function(node, list(range(len(indep))), ctx)
        scale = ctx.numbers(c, "scale_factor", 1, (1.0,))[0]
    except ModelError:                      # (not read: the constraint is not enforced here)
        return ""
    value = scale * function_value(f, [defaults[n] for n in indep])
    if abs(value - defaults[dep]) <= 1e-6 * max(1.0, abs(value)):      # (rounded defaults)
        return ""
    return (f", and their default values break it: {dep} = {defaults[dep]:.6g} where it gives "
            f"{value:.6g}, so initial_state() starts there; OpenSim assembles it")
