"""URDF loader: load_urdf(path, floating=False) -> Model.

The XML is read with the standard library's expat parser, configured so that a document type
declaration (and with it every entity declaration) is refused as soon as it starts: a
"billion laughs" file fails at once instead of expanding. Only the elements dynamics needs are
read (<link>/<inertial>, <joint> with <origin>, <parent>, <child>, <axis>, <mimic>); <limit>,
<dynamics>, <visual>, <collision>, <transmission>, <gazebo>, <material> and any other element
are ignored.

<mimic joint= multiplier= offset=> couples a joint to another (docs/mimic.md): with
mimic="couple" its coordinate is multiplier * q_joint + offset, one coordinate for both, as
pinocchio.buildModelFromUrdf(..., mimic=True); with mimic="independent" (Pinocchio's default)
it keeps a coordinate of its own and a warning says so. A <mimic> on a fixed joint is ignored.

Inertias (docs/inertia-checks.md): a link welded to another by fixed joints is no rigid body of
its own; the body it is merged into is checked (Model.validate), and the welded link's own
problems, harmless once merged, are one InertiaWarning. inertia="relaxed" accepts any finite
inertia with mass >= 0, with warnings.

Joint order: bodies are added depth-first from the root link; the children of a link are taken
in the order of their joint names, which is the order urdfdom (and hence
pinocchio.buildModelFromUrdf) uses, so that coordinates line up with Pinocchio's. order="file"
takes them in the order the joints appear in the file instead.
"""
import math
import os
import re
from pathlib import Path
from xml.parsers import expat

import numpy as np

import warnings

from ..errors import ModelError
from . import params as P
from .load import (MAX_BODIES, MAX_DEPTH, describe_argument, is_bool, malformed_xml,
                   read_source, sanitize_identifier, xml_declaration_first)
from .joint_types import joint_dof
from .model import (INERTIA_CHECKS, WORLD, Inertia, InertiaWarning, Model, Transform,
                    inertia_problems, quaternion_matrix, rotation_from_rpy)

_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

# URDF joint type -> scleron joint type
JOINT_MAP = {"revolute": "revolute", "continuous": "continuous", "prismatic": "prismatic",
             "fixed": "fixed", "floating": "free_flyer", "planar": "planar"}
# floating= of the loaders -> the root joint (Pinocchio's quaternion free flyer; "free": the
# Euler-angle free joint, chart XYZ)
ROOT_JOINT = "root_joint"        # the floating root joint's name (Pinocchio's)
ROOT_JOINTS = {True: ("free_flyer", {}), "free_flyer": ("free_flyer", {}),
               "free": ("free", {"chart": "XYZ"})}
# mimic= of the loader: "couple" honours <mimic> (docs/mimic.md), "independent" gives the joint a
# coordinate of its own (Pinocchio's default, mimic=False), with a MimicWarning
MIMIC = ("couple", "independent")
MIMIC_DEFAULT = "independent"
# damping= of the loader: <dynamics damping> "ignore"d (Pinocchio's dynamics ignore it too) or
# "read" as the joint's damper, tau = -d qd on each of its coordinates (friction is not read)
DAMPING = ("ignore", "read")
ORDERS = ("pinocchio", "file")          # sibling links by joint name (urdfdom's) or as written


class MimicWarning(UserWarning):
    """<mimic> elements read as independent joints (load_urdf(..., mimic="independent"))."""


class _El:
    """A parsed XML element: tag, attributes, children and the line where it starts."""
    __slots__ = ("tag", "attrib", "children", "line")

    def __init__(self, tag, attrib, line):
        self.tag, self.attrib, self.children, self.line = tag, attrib, [], line

    def find(self, tag):
        """The first child with this tag (urdfdom reads the first one too), or None."""
        for c in self.children:
            if c.tag == tag:
                return c
        return None

    def findall(self, tag):
        return [c for c in self.children if c.tag == tag]


class _Refused(Exception):
    pass


def parse_xml(data, source=None):
    """Parse XML bytes/str into an _El tree; DTDs, entities and deep nesting are refused."""
    parser = expat.ParserCreate()
    try:
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    except (AttributeError, expat.ExpatError):   # pragma: no cover - very old expat
        pass
    stack, root = [], []

    def refuse_dtd(*_):
        raise _Refused("a document type declaration (<!DOCTYPE>) is not allowed in a URDF file")

    def refuse_entity(*_):
        raise _Refused("entity declarations are not allowed in a URDF file")

    def start(tag, attrib):
        if len(stack) >= MAX_DEPTH:
            raise _Refused(f"the XML nests deeper than {MAX_DEPTH} levels")
        el = _El(tag, attrib, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(el)
        else:
            root.append(el)
        stack.append(el)

    def end(_tag):
        stack.pop()

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_entity
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(xml_declaration_first(data), True)
    except _Refused as e:
        raise ModelError(str(e), source=source, line=parser.CurrentLineNumber) from None
    except expat.ExpatError as e:
        raise ModelError(malformed_xml(e, data), source=source, line=e.lineno) from None
    except (ValueError, LookupError, OverflowError) as e:     # UnicodeError is a ValueError;
        raise ModelError(f"malformed XML: {e}", source=source) from None    # LookupError: encoding=
    if not root:
        raise ModelError("the file has no XML element", source=source)
    return root[0]


# ---- public API ------------------------------------------------------------------------------
def load_urdf(path, floating=False, *, merge_fixed=True, order="pinocchio", mimic=MIMIC_DEFAULT,
              inertia="physical", damping="ignore"):
    """Load a URDF file.

    floating=True adds a free joint ("root_joint") between the world and the root link: the
    quaternion free flyer (Pinocchio's q = [x, y, z, qx, qy, qz, qw], v = [linear; angular] in
    the body frame), or with floating="free" the Euler-angle free joint (chart XYZ); otherwise the
    root link is the fixed world and its inertia is dropped. Returns the model
    with fixed joints merged and validated; merge_fixed=False returns the tree with its fixed
    joints (one body per link, not validated as a whole). order: "pinocchio" (siblings by joint
    name, as urdfdom and Pinocchio order them) or "file" (siblings in file order). mimic:
    "couple" (a <mimic> joint follows the joint it names, docs/mimic.md) or "independent".
    inertia: "physical" or "relaxed" (docs/inertia-checks.md). damping: "ignore" (the default, as
    Pinocchio's dynamics) or "read" (<dynamics damping=d> becomes the joint's damper, tau = -d qd).
    """
    data = read_source(path)
    source = os.fsdecode(os.fspath(path))
    return model_from_urdf(parse_xml(data, source), source, floating=floating,
                           merge_fixed=merge_fixed, order=order, mimic=mimic, inertia=inertia,
                           damping=damping)


def load_urdf_string(text, source="<string>", floating=False, *, merge_fixed=True,
                     order="pinocchio", mimic=MIMIC_DEFAULT, inertia="physical", damping="ignore"):
    """Like load_urdf, for URDF text already in memory."""
    if isinstance(text, (str, bytes)) and len(text) > 20 * 1024 * 1024:
        raise ModelError("the URDF text is more than 20 MB", source=source)
    return model_from_urdf(parse_xml(text, source), source, floating=floating,
                           merge_fixed=merge_fixed, order=order, mimic=mimic, inertia=inertia,
                           damping=damping)


# ---- building the model ----------------------------------------------------------------------
class _Ctx:
    def __init__(self, source, element=None, line=None, version=(1, 0), said=None):
        self.source, self.element, self.line = source, element, line
        self.version = version              # <robot version>: (1, 0) or (1, 1)
        self.said = set() if said is None else said     # warnings given, once per file

    def at(self, element=None, line=None):
        return _Ctx(self.source, element or self.element, line or self.line, self.version,
                    self.said)

    def error(self, problem, line=None):
        return ModelError(problem, source=self.source, element=self.element, line=line or self.line)


# elements whose attributes scleron never reads: a $(...) left in a Gazebo plugin's parameter
# does not make the file a xacro source
_UNREAD = {"gazebo", "transmission", "visual", "collision", "material"}
_XACRO_EXPRESSION = re.compile(r"\$\{|\$\(")


def _refuse_xacro(robot, ctx):
    """An unexpanded xacro source (<xacro:...> elements, ${...} or $(...) in what scleron reads)
    is refused: its macros, conditionals and includes would silently drop links or leave
    unreadable values. (An expanded file keeps its xmlns:xacro attribute: not refused.)"""
    cure = "expand it first: `xacro FILE > robot.urdf` (ROS's xacro package)"
    stack = [(robot, False)]
    while stack:
        el, unread = stack.pop()
        if el.tag.startswith("xacro:"):
            raise ctx.error(f"<{el.tag[:40]}>: an unexpanded xacro file, not URDF; {cure}", el.line)
        unread = unread or el.tag in _UNREAD
        if not unread:
            for key, value in el.attrib.items():
                if _XACRO_EXPRESSION.search(value):
                    raise ctx.error(f"<{el.tag[:40]} {key[:40]}=\"{value[:60]}\">: a xacro "
                                    f"expression in an unexpanded xacro file, not URDF; {cure}",
                                    el.line)
        stack.extend((c, unread) for c in reversed(el.children))


def _floats(text, n, what, ctx):
    if text is None:
        raise ctx.error(f"{what} is missing")
    tokens = text.strip(" \t\r\n").split(" ")   # XML's white space only (the parser made it
    tokens = [t for t in tokens if t]               # spaces): a no-break space is not a separator,
                                                    # as in urdfdom
    shown = text if len(text) <= 60 else text[:60] + "..."
    if len(tokens) != n or not all(_NUMBER.fullmatch(t) for t in tokens):
        raise ctx.error(f"{what} must be {n} number{'s' if n > 1 else ''}, got {shown!r}")
    values = [float(t) for t in tokens]
    if not all(math.isfinite(v) for v in values):
        raise ctx.error(f"{what} must be finite, got {shown!r}")
    return values


_VERSION = re.compile(r"([0-9]+)\.([0-9]+)")
VERSIONS = ((1, 0), (1, 1))     # urdfdom's: 1.1 adds <origin quat_xyzw> (and capsules)


def _urdf_version(robot, ctx):
    """<robot version="x.y">, (1, 0) where it is not given; another or a malformed one refused,
    as urdfdom refuses it."""
    text = robot.attrib.get("version")
    if text is None:
        return (1, 0)
    m = _VERSION.fullmatch(text.strip())
    if m is None:
        raise ctx.error(f"<robot version=\"{text[:40]}\">: a URDF version is major.minor, as "
                        "\"1.0\" or \"1.1\"", robot.line)
    version = (int(m[1]), int(m[2]))
    if version not in VERSIONS:
        raise ctx.error(f"<robot version=\"{text[:40]}\">: URDF {version[0]}.{version[1]} is not "
                        "supported (1.0 and 1.1 are, as in urdfdom)", robot.line)
    return version


def _origin(el, ctx):
    """The Transform of an element's <origin xyz rpy> (identity if there is none); in URDF 1.1
    its rotation may be the quaternion quat_xyzw = "x y z w" instead (normalised), which a 1.0
    file does not have: there it is left out with a warning, as urdfdom leaves it out."""
    o = el.find("origin")
    if o is None:
        return Transform()
    oc = ctx.at(line=o.line)
    xyz = _floats(o.attrib.get("xyz", "0 0 0"), 3, "origin xyz", oc)
    quat = o.attrib.get("quat_xyzw")
    if quat is not None and ctx.version < (1, 1):
        if "quat_xyzw" not in ctx.said:
            ctx.said.add("quat_xyzw")
            warnings.warn(f"{ctx.source}:{o.line}: <origin quat_xyzw> is URDF 1.1 and this file "
                          "does not say <robot version=\"1.1\">: its quaternions are left out "
                          "(the rpy or the identity is read), as urdfdom leaves them out",
                          stacklevel=4)
        quat = None
    if quat is None:
        rpy = _floats(o.attrib.get("rpy", "0 0 0"), 3, "origin rpy", oc)
        return Transform(rotation_from_rpy(rpy), np.array(xyz))
    if "rpy" in o.attrib:
        raise oc.error("<origin> has both rpy and quat_xyzw: give one of them")
    x, y, z, w = _floats(quat, 4, "origin quat_xyzw", oc)
    if not x * x + y * y + z * z + w * w > 1e-12:
        raise oc.error(f"origin quat_xyzw {quat[:60]!r} is no rotation (zero length)")
    return Transform(quaternion_matrix(w, x, y, z), np.array(xyz))


def _link_inertia(link, ctx):
    """Mass, com and inertia about the com in link axes; None for a massless link.

    A link is massless without <inertial> or with mass 0 and inertia 0. Otherwise the mass must
    be finite and not negative and the inertia finite; whether it is physically valid (positive
    semi-definite, triangle inequality, no inertia without mass) is checked on the merged bodies
    by Model.validate() (a link welded by fixed joints is no body of its own: _warn_welded), and
    so is that every moving joint moves some mass. A point mass (mass > 0, inertia 0) is valid.
    """
    inertial = link.find("inertial")
    if inertial is None:
        return None
    ictx = ctx.at(line=inertial.line)
    X = _origin(inertial, ictx)
    m = inertial.find("mass")
    if m is None:
        raise ictx.error("<inertial> has no <mass>")
    mass = _floats(m.attrib.get("value"), 1, "mass value", ictx.at(line=m.line))[0]
    if mass < 0:
        raise ictx.error(f"mass must not be negative, got {mass!r}", m.line)
    i = inertial.find("inertia")
    if i is None:
        raise ictx.error("<inertial> has no <inertia>")
    v = {k: _floats(i.attrib.get(k), 1, f"inertia {k}", ictx.at(line=i.line))[0]
         for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    I0 = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                   [v["ixy"], v["iyy"], v["iyz"]],
                   [v["ixz"], v["iyz"], v["izz"]]])
    if mass == 0 and not np.any(I0):
        return None                      # an explicit zero inertial: massless, like no <inertial>
    R = X.rotation
    I = R @ I0 @ R.T                     # rotate the inertial frame's axes into the link frame
    return Inertia(mass, X.translation.copy(), 0.5 * (I + I.T))


def floating_option(floating, source):
    """floating= as False or a key of ROOT_JOINTS (True, "free_flyer", "free"); None is False, a
    numpy bool a bool, anything else (0, 1, "quaternion", a list) a ModelError."""
    if floating is None or is_bool(floating):
        return bool(floating)
    if isinstance(floating, str) and floating in ROOT_JOINTS:
        return floating
    raise ModelError(f"floating= must be True, False, 'free_flyer' or 'free', not "
                     f"{describe_argument(floating)}", source=source)


def model_from_urdf(robot, source=None, floating=False, *, merge_fixed=True, order="pinocchio",
                    mimic=MIMIC_DEFAULT, inertia="physical", damping="ignore"):
    """Build a Model from a parsed URDF element tree (see parse_xml)."""
    for option, value, choices in (("damping", damping, DAMPING), ("order", order, ORDERS),
                                   ("mimic", mimic, MIMIC), ("inertia", inertia, INERTIA_CHECKS)):
        if not isinstance(value, str) or value not in choices:
            raise ModelError(f"{option}= must be one of {', '.join(choices)}, not "
                             f"{describe_argument(value)}", source=source)
    if not is_bool(merge_fixed):
        raise ModelError(f"merge_fixed= must be True or False, not "
                         f"{describe_argument(merge_fixed)}",
                         source=source)
    floating = floating_option(floating, source)
    ctx = _Ctx(source)
    if robot.tag != "robot":
        raise ctx.error(f"the root element is <{robot.tag[:40]}>, not <robot>", robot.line)
    _refuse_xacro(robot, ctx)
    ctx.version = _urdf_version(robot, ctx)
    name = robot.attrib.get("name") or (Path(source).stem if source else None)
    model = Model(sanitize_identifier(name), source=source)
    model.inertia_checks = inertia

    links = {}                                    # name -> _El, in file order
    for link in robot.findall("link"):
        lname = link.attrib.get("name")
        if not lname:
            raise ctx.error("a <link> has no name", link.line)
        lctx = ctx.at(element=f"link '{lname[:200]}'", line=link.line)
        if lname in links:
            raise lctx.error(f"two links are named '{lname[:200]}' (the other one is on line "
                             f"{links[lname].line})")
        links[lname] = link
    if not links:
        raise ctx.error("the robot has no <link>", robot.line)
    if len(links) > MAX_BODIES + 1:
        raise ctx.error(f"{len(links)} links is more than the limit of {MAX_BODIES + 1} (the "
                        f"root link and {MAX_BODIES} more)", robot.line)

    joints, child_of, children = {}, {}, {n: [] for n in links}
    for j in robot.findall("joint"):
        jname = j.attrib.get("name")
        if not jname:
            raise ctx.error("a <joint> has no name", j.line)
        jctx = ctx.at(element=f"joint '{jname[:200]}'", line=j.line)
        if jname in joints:
            raise jctx.error(f"two joints are named '{jname[:200]}' (the other one is on line "
                             f"{joints[jname][0].line})")
        jtype = j.attrib.get("type")
        if jtype not in JOINT_MAP:
            raise jctx.error(f"unsupported joint type {jtype[:40]!r} "
                             f"(supported: {', '.join(JOINT_MAP)})"
                             if jtype else "the joint has no type")
        ends = []
        for tag in ("parent", "child"):
            e = j.find(tag)
            lname = e.attrib.get("link") if e is not None else None
            if not lname:
                raise jctx.error(f"the joint has no <{tag} link=...>",
                                 e.line if e is not None else None)
            if lname not in links:
                raise jctx.error(f"{tag} link '{lname[:200]}' does not exist", e.line)
            ends.append(lname)
        parent, child = ends
        if parent == child:
            raise jctx.error(f"link '{parent[:200]}' cannot be its own parent")
        if child in child_of:
            raise jctx.error(f"link '{child[:200]}' is already the child of joint "
                             f"'{child_of[child][:200]}': in a tree every link has one parent")
        joints[jname] = (j, jtype, parent, child)
        child_of[child] = jname
        children[parent].append(jname)

    roots = [n for n in links if n not in child_of]
    if not roots:
        raise ctx.error("no root link: every link is the child of a joint, so the joints form a "
                        "cycle", robot.line)
    if len(roots) > 1:
        shown = ", ".join(f"'{r[:100]}' (line {links[r].line})" for r in roots[:5])
        raise ctx.error(f"the links are not connected into one tree: {len(roots)} links have no "
                        f"parent joint ({shown}{', ...' if len(roots) > 5 else ''})", robot.line)
    root = roots[0]
    for lname, link in links.items():
        if lname == WORLD and lname != root:
            raise ctx.at(element=f"link '{WORLD}'", line=link.line).error(
                f"only the root link may be named '{WORLD}'")

    # the root link
    root_ctx = ctx.at(element=f"link '{root[:200]}'", line=links[root].line)
    if floating:
        if root == WORLD:
            raise root_ctx.error(f"the root link is '{WORLD}', which cannot float (scleron "
                                 f"keeps '{WORLD}' for the fixed world; Pinocchio floats the "
                                 "link): leave out --floating (floating=False), or rename the "
                                 "link in a copy of the file")
        if ROOT_JOINT in joints:
            raise ctx.at(element=f"joint '{ROOT_JOINT}'", line=joints[ROOT_JOINT][0].line).error(
                f"floating (--floating) adds a joint named '{ROOT_JOINT}' (Pinocchio's name) above "
                "the root link, and the file has a joint of that name: rename it")
        inertia = _link_inertia(links[root], root_ctx)
        jtype, jparams = ROOT_JOINTS[floating]
        _add(model, root, WORLD, jtype, ROOT_JOINT, inertia, Transform(), dict(jparams), root_ctx)
        top = root
    else:
        _link_inertia(links[root], root_ctx)                 # parse it; its inertia is dropped
        top = WORLD
        model.add_frame(root, WORLD)                         # the fixed root link stays a frame

    # depth first from the root; siblings by joint name (urdfdom/Pinocchio) or file order
    def kids(lname):
        names = children[lname]
        return sorted(names) if order == "pinocchio" else names

    reached = {root}
    stack = [(top, n) for n in reversed(kids(root))]
    while stack:
        parent_body, jname = stack.pop()
        j, jtype, _parent, child = joints[jname]
        jctx = ctx.at(element=f"joint '{jname[:200]}'", line=j.line)
        lctx = ctx.at(element=f"link '{child[:200]}'", line=links[child].line)
        origin = _origin(j, jctx)
        params = {}
        if jtype in ("revolute", "continuous", "prismatic", "planar"):
            a = j.find("axis")
            axis = _floats(a.attrib.get("xyz", "1 0 0"), 3, "axis xyz", jctx.at(line=a.line)) \
                if a is not None else [1.0, 0.0, 0.0]
            line = a.line if a is not None else None
            params["normal" if jtype == "planar" else "axis"] = P.axis(
                axis, "axis", lambda problem: jctx.error(problem, line))
        _add(model, child, parent_body, JOINT_MAP[jtype], jname, _link_inertia(links[child], lctx),
             origin, params, jctx)
        model.joint_lines[jname] = j.line
        reached.add(child)
        stack.extend((child, n) for n in reversed(kids(child)))
    _mimic(model, joints, ctx, mimic)

    if len(reached) != len(links):
        lost = [n for n in links if n not in reached]
        shown = ", ".join(f"'{n[:100]}'" for n in lost[:5])
        raise ctx.error(f"links {shown}{', ...' if len(lost) > 5 else ''} are not connected to the "
                        f"root link '{root[:200]}': their joints form a cycle", links[lost[0]].line)
    if damping == "read":
        _damping(model, joints, ctx)
    if merge_fixed:
        merged = _validate(model.merged_fixed(), model, links, joints, source)
        _warn_welded(model, merged, links, source)
        model = merged
    return model


def _mimic(model, joints, ctx, how):
    """Joint.mimic from each moving joint's <mimic joint= multiplier=1 offset=0>, chains composed
    to the joint at their end (q_c = a_c (a_b q_a + b_b) + b_c); "independent": none, a warning."""
    read, dangling = {}, []
    for jname, (j, jtype, _, _) in joints.items():
        m = j.find("mimic")
        if m is None or jtype == "fixed":
            continue
        mctx = ctx.at(element=f"joint '{jname[:200]}'", line=m.line)
        target = m.attrib.get("joint")
        if not target:
            raise mctx.error("<mimic> has no joint=")
        a = _floats(m.attrib.get("multiplier", "1"), 1, "mimic multiplier", mctx)[0]
        b = _floats(m.attrib.get("offset", "0"), 1, "mimic offset", mctx)[0]
        if target not in joints:
            if how != "independent":
                raise mctx.error(f"<mimic> names joint '{target[:200]}', which does not exist")
            dangling.append(f"{jname[:200]} -> {target[:200]}")  # (unused: Pinocchio loads it)
            continue
        read[jname] = (target, a, b, mctx)
    if dangling:
        warnings.warn(f"{ctx.source}: <mimic> of joint{'s' if len(dangling) > 1 else ''} "
                      + ", ".join(dangling[:5]) + (", ..." if len(dangling) > 5 else "")
                      + " names a joint that does not exist: not used (mimic='independent'; "
                      "mimic='couple' refuses it)", MimicWarning, stacklevel=4)
    if not read:
        return
    if how == "independent":
        warnings.warn(f"{ctx.source}: {len(read)} <mimic> joint{'s' if len(read) > 1 else ''} ("
                      + ", ".join(list(read)[:5]) + (", ..." if len(read) > 5 else "")
                      + ") read as independent coordinates (mimic='independent')", MimicWarning,
                      stacklevel=4)
        return
    by_name = {j.name: j for j in model.joints}
    for jname, (target, a, b, mctx) in read.items():
        seen = [jname]
        while target in read:                       # compose a chain of mimics
            if target in seen:                      # (named at the cycle's first joint)
                cycle = seen[seen.index(target):] + [target]
                raise read[cycle[0]][3].error("<mimic> joints form a cycle: " + " -> ".join(cycle))
            seen.append(target)
            t2, a2, b2, _ = read[target]
            target, a, b = t2, a * a2, a * b2 + b
        by_name[jname].mimic = (target, a, b)


def _damping(model, joints, ctx):
    """Joint.damping from <dynamics damping=d> of each moving joint: d on every coordinate of the
    joint (MuJoCo's and Gazebo's reading). A joint coupled as a mimic has no coordinate of its
    own to damp: its damping is not read (as Pinocchio's mimic=True), with a MimicWarning.
    <dynamics friction> (Coulomb friction, not smooth) is not read: a warning names the joints."""
    by_name = {j.name: j for j in model.joints}
    dropped, frictional = [], []
    for jname, (j, jtype, _, _) in joints.items():
        d = j.find("dynamics")
        if d is None or jtype == "fixed":
            continue
        dctx = ctx.at(element=f"joint '{jname[:200]}'", line=d.line)
        value = _floats(d.attrib.get("damping", "0"), 1, "dynamics damping", dctx)[0]
        try:                            # (not read: a malformed value is only said too)
            has_friction = float(d.attrib.get("friction", "0")) != 0.0
        except ValueError:
            has_friction = True
        if has_friction:
            frictional.append(jname)
        if value < 0:
            raise dctx.error(f"<dynamics damping={value:g}>: a damper takes no negative damping "
                             "(it would add energy)")
        if value and by_name[jname].mimic is not None:
            dropped.append(jname)
        elif value:
            joint = by_name[jname]
            joint.damping = (value,) * joint_dof(joint.type, joint.params)
    if dropped:
        warnings.warn(f"{ctx.source}: the <dynamics damping> of {len(dropped)} coupled <mimic> "
                      f"joint{'s' if len(dropped) > 1 else ''} ({', '.join(dropped[:5])}"
                      f"{', ...' if len(dropped) > 5 else ''}) not read: a coupled joint has no "
                      "coordinate of its own (mimic='independent' reads it)", MimicWarning,
                      stacklevel=4)
    if frictional:
        warnings.warn(f"{ctx.source}: the <dynamics friction> of {len(frictional)} joint"
                      f"{'s' if len(frictional) > 1 else ''} ({', '.join(frictional[:5])}"
                      f"{', ...' if len(frictional) > 5 else ''}) not read: Coulomb friction is "
                      "not smooth and the generated dynamics are (add friction to tau"
                      + ("" if all(by_name[j].mimic is not None for j in frictional)
                         else "; <dynamics damping> is read")
                      + ")", UserWarning, stacklevel=4)


def _warn_welded(unmerged, merged, links, source):
    """One InertiaWarning for the links welded into a moving body whose own inertia no rigid body
    can have (tiago's antennas: eigenvalue -3.5e-8 kg m^2 on a 1e-6 kg link): harmless, their
    body is valid (Model.validate passed), but the file's data is wrong."""
    moving = {b.name for b in merged.bodies}
    # (a link whose body took its inertia alone: validate checked it, by the link's name)
    named = set(getattr(merged, "inertia_sources", {}).values())
    home = unmerged.welded_homes()
    bad = []
    for body, j in zip(unmerged.bodies, unmerged.joints):
        if (j.type != "fixed" or home[body.name] not in moving or body.inertia.mass < 0
                or body.name in named):
            continue
        problems = inertia_problems(body.inertia) if body.inertia.mass or np.any(
            body.inertia.inertia) else []
        if problems:
            bad.append(f"'{body.name}' (line {links[body.name].line}, merged into "
                       f"'{home[body.name]}'): {problems[0][1]}")
    if bad:
        warnings.warn(f"{source}: {len(bad)} link{'s' if len(bad) > 1 else ''} welded by fixed "
                      "joints ha" + ("ve" if len(bad) > 1 else "s") + " an inertia no rigid body "
                      "can have, harmless once merged (the bodies they are merged into are valid): "
                      + "; ".join(bad[:5]) + ("; ..." if len(bad) > 5 else ""), InertiaWarning,
                      stacklevel=4)


def _add(model, body, parent, jtype, jname, inertia, origin, params, ctx):
    """add_body for one link; its inertia is checked later, on the merged model (validate())."""
    try:
        b = model.add_body(body, parent, joint=jtype, joint_name=jname, mass=0.0, com=(0, 0, 0),
                           inertia=np.zeros((3, 3)), origin=origin, **params)
    except ModelError as e:
        raise ModelError(e.problem, source=ctx.source, element=e.element, line=e.line or ctx.line,
                         body=e.body, joint=e.joint) from None
    if inertia is not None:
        b.inertia = inertia


def _validate(model, unmerged, links, joints, source):
    """model.validate(), with the link's line and the fixed links merged into a bad body, or
    the line of a bad joint (of its <mimic>, where it has one)."""
    try:
        return model.validate()
    except ModelError as e:
        if e.body is None and e.joint in joints and e.line is None:
            el = joints[e.joint][0]
            line = (el.find("mimic") or el).line
            raise ModelError(e.problem, source=source, element=e.element, line=line,
                             joint=e.joint) from None
        home = unmerged.welded_homes()
        bad = e.body
        if bad is None:
            raise
        merged = [n for n, h in home.items() if h == bad and n != bad]
        problem = e.problem
        if merged:
            problem += f" (after merging the fixed link{'s' if len(merged) > 1 else ''} " \
                       + ", ".join(f"'{n}'" for n in merged[:5]) \
                       + (", ..." if len(merged) > 5 else "") + ")"
        raise ModelError(problem, source=source, element=f"link '{bad}'",
                         line=links[bad].line if bad in links else None, body=bad) from None


__all__ = ["load_urdf", "load_urdf_string", "model_from_urdf", "parse_xml", "JOINT_MAP",
           "MimicWarning"]
