"""MJCF reader: load_mjcf(path) -> Model, through MuJoCo's own compiler (the `mujoco` extra).

The file is compiled by `mujoco.MjModel.from_xml_path`, so defaults, classes, includes, inertias
inferred from geoms, `fusestatic` and every other compiler option mean exactly what they mean in
MuJoCo; scleron reads the compiled model (docs/mjcf.md):

- the body tree (MuJoCo numbers bodies parents first, as scleron does), each body's placement in
  its parent (body_pos, body_quat), mass, centre of mass and inertia (body_ipos, body_iquat and the
  principal moments body_inertia);
- its joints, in order: hinge -> revolute, slide -> prismatic, ball -> spherical_quat, free ->
  free_flyer; a body without joints is welded to its parent (merged away, kept as a frame). A
  body moved by several joints gets one massless body per joint but the last, named after the
  joint, as MuJoCo composes them: each hinge or ball turns about its anchor (jnt_pos) in the frame
  the previous joints left, each slide moves along its axis.
- hinge and slide `ref` (qpos0): MuJoCo turns a hinge by qpos - ref; the constant turn by -ref is
  folded into the joint's placement, so q is MuJoCo's qpos unchanged;
- per degree of freedom `armature` (added to M's diagonal), `damping`, and per joint `stiffness`
  with `springref` (qpos_spring) for hinges and slides (none where <flag damper="disable"/> or
  spring="disable", as MuJoCo applies none); an actuator on a joint adds gear^2 times its own
  `armature` and `damping` to the joint's (MuJoCo 4);
- gravity (opt.gravity; zero when the model disables gravity); sites become frames;
- MuJoCo's initial configuration qpos0 (free bodies at their <body pos>, hinges at their ref) as
  the model's initial q, where `scleron simulate` starts, as mj_resetData does.

Where a joint's anchor is not at the body origin, the scleron body frame sits at the anchor of
the body's last joint and the MuJoCo body hangs from it, fixed: merging fixed joints folds the
inertia in and keeps the MuJoCo body as a frame of its own name, at MuJoCo's placement.

Layouts: hinges and slides are as MuJoCo's. A ball joint's qpos is [w, x, y, z] (MuJoCo), its q
[x, y, z, w] (Pinocchio's, scleron's); a free joint's qpos is [p, w, x, y, z] and qvel [linear
velocity in the world frame, angular velocity in the body frame], where scleron's free_flyer has
q = [p, x, y, z, w] and v = [linear, angular] both in the body frame. MujocoLayout converts
states, accelerations, forces and mass matrices between the two (README "MJCF").

Not read, and said so in one MjcfWarning: contacts, joint limits, tendons, equality
constraints, actuators' forces, friction loss, gravity compensation, fluid forces, flexes, the
stiffness of ball and free joints, bodies that are mocap bodies (fixed here), and MuJoCo 4's
polynomial damping and stiffness, spring yield, and actuator armature or damping on a tendon,
site or body transmission. Refused with a
ModelError: files MuJoCo cannot compile (its message quoted), a free joint below another body,
and free joints whose linear damping or armature differ between axes (MuJoCo applies them to the
world-frame velocity, scleron's free_flyer to the body-frame one: equal only when isotropic).
"""
import html
import math
import os
import re
import stat
import warnings
from xml.etree import ElementTree

import numpy as np

from ..errors import ModelError
from .joint_types import joint_configuration
from .load import MAX_BODIES, read_source
from .model import INERTIA_CHECKS, WORLD, Model, Transform, quaternion_matrix

HINGE, SLIDE, BALL, FREE = "hinge", "slide", "ball", "free"
MUJOCO_DEFAULT_NAME = "MuJoCo Model"         # the model's name where <mujoco> has no model=
MUJOCO_HINT = "reading MJCF needs MuJoCo: pip install 'scleron[mjcf]' (or pip install mujoco)"


class MjcfWarning(UserWarning):
    """What an MJCF model holds that the dynamics do not use (one line per file)."""


def axis_rotation(axis, angle):
    """Rodrigues: the rotation by `angle` about the unit `axis`."""
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def translation(p):
    """The pure translation by p."""
    return Transform(np.eye(3), np.asarray(p, dtype=float).copy())


def compile_mjcf(path):
    """(mujoco, MuJoCo's compiled model, the files the file <include>s) of an MJCF file, or a
    ModelError naming the file."""
    name = os.fsdecode(os.fspath(path))
    text = read_source(name)            # missing, unreadable or oversized: refused before MuJoCo
    prolog = re.sub(rb"<!--.*?-->", b"", text, flags=re.S).split(b"<mujoco", 1)[0]
    if b"<!DOCTYPE" in prolog or b"<!ENTITY" in prolog:   # (MuJoCo's parser would misreport them)
        raise ModelError("document type and entity declarations (<!DOCTYPE>, <!ENTITY>) are not "
                         "allowed in an MJCF file", source=name)
    included, texts = _refuse_special_files(name, text)
    _refuse_too_many_bodies(name, texts)
    try:
        import mujoco
    except ImportError:
        raise ModelError(MUJOCO_HINT, source=name) from None
    except Exception as e:              # installed, but its library does not load
        raise ModelError(f"the mujoco package does not load ({type(e).__name__}: "
                         f"{' '.join(str(e).split())[:300]}): reinstall it, `pip install "
                         "--force-reinstall mujoco`", source=name) from None
    said, previous = [], mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(said.append)    # its warnings here, not in ./MUJOCO_LOG.TXT
    try:
        m = mujoco.MjModel.from_xml_path(name)
    except Exception as e:              # MuJoCo's compiler errors are ValueErrors with its text
        said_text = " ".join(str(e).split())
        raise ModelError(f"MuJoCo cannot compile it: {said_text}{_include_hint(said_text, text)}",
                         source=name) from None
    finally:
        mujoco.set_mju_user_warning(previous)
    for text in said:
        warnings.warn(f"{name}: MuJoCo's compiler warns: {' '.join(text.split())}", MjcfWarning,
                      stacklevel=4)
    return mujoco, m, included


# <body> elements an MJCF file may hold before MuJoCo compiles it (its compile of 50,000 ran for
# minutes; scleron reads at most MAX_BODIES moving bodies, and the rest are welded ones)
MAX_BODY_ELEMENTS = 5 * MAX_BODIES
_BODY_ELEMENT = re.compile(rb"<body[\s/>]")


def _refuse_too_many_bodies(name, texts):
    """A ModelError before MuJoCo's compile for a model of more than MAX_BODY_ELEMENTS <body>
    elements (comments left out): its compile takes minutes, and the model is over the limit.
    texts: {file= value: text} of the files it includes or attaches, None: the file's own. A
    body counts once per copy MuJoCo makes: times the counts of the <replicate> elements around
    it, an <include>d file's bodies where it is included, an <attach>ed model's every time it is
    attached (all its bodies: an upper bound where one subtree is)."""
    models = {}                                 # <model name= file=> assets, by name
    for text in texts.values():
        for element in _elements(text) or ():
            if element.tag == "model" and element.get("name") and element.get("file"):
                models.setdefault(element.get("name"), element.get("file"))
    count = _body_elements(None, texts, models, {}, ())
    if count > MAX_BODY_ELEMENTS:
        raise ModelError(f"{count} <body> elements is more than the limit of "
                         f"{MAX_BODY_ELEMENTS} (at most {MAX_BODIES} of them moving; MuJoCo's "
                         "compile of so many takes minutes; <replicate> copies and included "
                         "and attached files counted)", source=name)


def _elements(text):
    """One MJCF file's elements, or None where the text does not parse or declares entities."""
    if b"<!DOCTYPE" in text or b"<!ENTITY" in text:
        return None
    try:
        return list(ElementTree.fromstring(text).iter())
    except (ElementTree.ParseError, ValueError, LookupError):
        return None


def _body_elements(key, texts, models, counted, opened):
    """The <body> elements of the file texts[key], with its replicas, includes and attachments
    (see _refuse_too_many_bodies; counted: {key: count} memo, opened: the includes on the way
    here, a cycle counting nothing more: MuJoCo refuses it). An explicit stack: a file may nest
    20,000 elements deep. Where the text does not parse: its <body> tags (MuJoCo then says what
    is wrong)."""
    if key in counted:
        return counted[key]
    text = texts[key]
    elements = _elements(text)
    if elements is None:
        return len(_BODY_ELEMENT.findall(re.sub(rb"<!--.*?-->", b"", text, flags=re.S)))
    total, stack = 0, [(elements[0], 1)]            # (iter() starts at the root)
    while stack:
        element, times = stack.pop()
        if element.tag == "replicate":
            times *= _replicate_count(element.get("count"))
        other = {"include": element.get("file"),
                 "attach": models.get(element.get("model"))}.get(element.tag)
        if element.tag == "body":
            total += times
        elif other is not None and other in texts and other not in opened:
            total += times * _body_elements(other, texts, models, counted, opened + (other,))
        stack.extend((child, times) for child in element)
    counted[key] = total
    return total


def _replicate_count(value):
    """A <replicate count=...> as a number of copies (a count MuJoCo refuses counts once)."""
    try:
        return max(int(str(value).strip()), 1)
    except ValueError:
        return 1


# the attributes naming a file MuJoCo opens: file=, and a cube or skybox texture's six faces
FILE_ATTRIBUTES = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")
_START_TAG = re.compile(rb"""<(\w+)(\s(?:[^>"']|"[^"]*"|'[^']*')*)""")   # (a quoted > inside)
_FILE_ATTRIBUTE = re.compile(rb"""\b(file(?:right|left|up|down|front|back)?)\s*=\s*"""
                             rb"""(?:"([^"]*)"|'([^']*)')""")
_DIR_ATTRIBUTE = re.compile(rb"""\b(?:meshdir|texturedir|assetdir)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
DIR_ATTRIBUTES = ("meshdir", "texturedir", "assetdir")


def _file_references(text):
    """([(element, attribute, value)] of the FILE_ATTRIBUTES, [meshdir/texturedir/assetdir
    values]) of one MJCF file's text,
    each value as MuJoCo may read it: by an XML parser, character references decoded (a pattern
    missed file="fi&#102;o" and an apostrophe inside double quotes), and by patterns as well,
    whitespace kept (an XML parser reads a newline in a value as a space, MuJoCo's keeps it) and
    where the text does not parse (MuJoCo's compiler then says what is wrong)."""
    files, dirs = [], []
    if b"<!DOCTYPE" not in text and b"<!ENTITY" not in text:
        try:
            elements = list(ElementTree.fromstring(text).iter())
        except (ElementTree.ParseError, ValueError, LookupError):
            elements = []
        files = [(str(e.tag), k, e.get(k)) for e in elements for k in FILE_ATTRIBUTES
                 if e.get(k) is not None]
        dirs = [e.get(k) for e in elements for k in DIR_ATTRIBUTES if e.get(k) is not None]
    uncommented = re.sub(rb"<!--.*?-->", b"", text, flags=re.S)
    decode = lambda pair: html.unescape(os.fsdecode(pair[0] or pair[1]))
    files += [(tag.decode("ascii", "replace"), attr.decode("ascii"), decode(value))
              for tag, attributes in _START_TAG.findall(uncommented)
              for attr, *value in _FILE_ATTRIBUTE.findall(attributes)]
    dirs += [decode(value) for value in _DIR_ATTRIBUTE.findall(uncommented)]
    return list(dict.fromkeys(files)), list(dict.fromkeys(dirs))


def _refuse_special_files(name, text):
    """MuJoCo opens the files an MJCF names (<include>, meshes, textures, height fields) itself:
    a FIFO or a device among them (`file="/dev/stdin"`) would block its compiler. The file and
    those it includes (each once) are read first, for their compiler folders (an included
    file's meshdir holds for the whole model, as MuJoCo merges the files into one); then each
    non-empty file= value is looked up where MuJoCo may look (beside the file that names it,
    beside the main file, under any meshdir/texturedir/assetdir) and refused where it is such a
    special file. Returns the files the dynamics read besides this one (real paths): those it
    includes or attaches (<model file=>) and the meshes (a geom's mesh gives its body's
    inertia), for the generated code's staleness check; and {file= value: text} of those it
    includes or attaches, None: the file's own."""
    seen, files, dirs = {os.path.realpath(name)}, [(name, text)], [""]
    references, texts, by_path = [], {None: text}, {os.path.realpath(name): text}
    for path, content in files:                 # (grows as includes are found)
        found, folders = _file_references(content)
        dirs += [d for d in folders if d not in dirs]
        references += [(path, element, attr, value) for element, attr, value in found]
        for element, attr, value in found:
            if element not in ("include", "model"):   # (<model file=>: an <attach>ed model)
                continue
            candidates = _candidates(path, name, value, dirs)
            _refuse_large(path, element, attr, value, candidates)
            for candidate in candidates:
                mode = _special(path, element, attr, value, candidate)
                real = os.path.realpath(candidate)
                if stat.S_ISREG(mode) and real not in seen:
                    seen.add(real)
                    files.append((candidate, read_source(candidate)))
                    by_path[real] = files[-1][1]
                if real in by_path:             # (the same file under another name counts too)
                    texts.setdefault(value, by_path[real])
    for path, element, attr, value in references:
        candidates = _candidates(path, name, value, dirs)
        _refuse_large(path, element, attr, value, candidates)
        for candidate in candidates:
            mode = _special(path, element, attr, value, candidate)
            if (element == "mesh" and stat.S_ISREG(mode)
                    and os.stat(candidate).st_size <= MAX_ASSET_BYTES):   # (not one it reads)
                seen.add(os.path.realpath(candidate))
    return sorted(seen - {os.path.realpath(name)}), texts


def _candidates(path, main, value, dirs):
    """Where MuJoCo may look for a file= value (those that exist)."""
    if not value.strip():                       # (file="" beside builtin= textures)
        return []
    out = []
    for base in dict.fromkeys([os.path.dirname(path), os.path.dirname(main)]):
        for d in dirs:
            candidate = os.path.join(base, d, value)
            try:
                os.stat(candidate)
            except (OSError, ValueError):       # (missing: MuJoCo's own message)
                continue
            out.append(candidate)
    return out


# a mesh, texture or height-field file MuJoCo would read (a 1.9 GB STL took it 9 s and 2 GB)
MAX_ASSET_BYTES = 256 * 1024 * 1024


def _refuse_large(path, element, attr, value, candidates):
    """A ModelError where every place MuJoCo may read a file= value from holds a file larger
    than MAX_ASSET_BYTES (a large file of the same name in only one of them is not the one
    MuJoCo reads, or need not be)."""
    sizes = [(os.stat(c).st_size, c) for c in candidates if stat.S_ISREG(os.stat(c).st_mode)]
    if sizes and len(sizes) == len(candidates) and min(sizes)[0] > MAX_ASSET_BYTES:
        size, candidate = min(sizes)
        raise ModelError(f"<{element} {attr}=\"{value[:200]}\">: {candidate[:300]} is "
                         f"{size} bytes, more than the limit of "
                         f"{MAX_ASSET_BYTES // (1024 * 1024)} MB for a file a model names",
                         source=path)


def _special(path, element, attr, value, candidate):
    """The candidate's mode, after a ModelError where MuJoCo could not read it as a file."""
    mode = os.stat(candidate).st_mode
    if any(special(mode) for special in (stat.S_ISFIFO, stat.S_ISCHR, stat.S_ISBLK, stat.S_ISSOCK)):
        raise ModelError(f"<{element} {attr}=\"{value[:200]}\">: {candidate[:300]} is not a "
                         "regular file (a FIFO or a device: MuJoCo would block reading it)",
                         source=path)
    if element == "include" and stat.S_ISDIR(mode):
        raise ModelError(f"<include file=\"{value[:200]}\">: {candidate[:300]} is a folder, not a "
                         "file", source=path)
    return mode


def _include_hint(message, text):
    """Where MuJoCo's message says "line 0", the element came from an <include>d file, which
    MuJoCo does not name: the files this one includes, as written in it."""
    if not re.search(r"\bline 0\b", message):
        return ""
    uncommented = re.sub(rb"<!--.*?-->", b"", text, flags=re.S)
    files = re.findall(rb"<include\s[^>]*?file\s*=\s*[\"']([^\"']*)[\"']", uncommented)
    if not files:
        return ""
    names = ", ".join(dict.fromkeys(f.decode("utf-8", "replace") for f in files))
    return (f" (line 0: the element is probably in a file this one includes, directly or not: "
            f"{names})")


class _Names:
    """MuJoCo's names, with unnamed (empty) ones given one; unique within scleron's two
    namespaces: "body" (bodies and frames) and "joint". The file's own names come first: a made-up
    name (body3, p_joint0, x_weld, a_site) avoids every name the file gives, wherever it comes."""

    def __init__(self, mujoco, m, source):
        self.mujoco, self.m, self.source = mujoco, m, source
        self.used = {"body": {WORLD}, "joint": set()}
        given_bodies = ([self.raw("body", b) for b in range(1, m.nbody)]
                        + [self.raw("site", s) for s in range(m.nsite)])
        self.given = {"body": set(given_bodies) - {""},
                      "joint": {self.raw("joint", j) for j in range(m.njnt)} - {""}}

    def raw(self, kind, i):
        obj = getattr(self.mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
        try:
            return self.mujoco.mj_id2name(self.m, obj, i) or ""
        except UnicodeDecodeError as e:     # (MuJoCo takes any bytes; names here are text)
            raise ModelError(f"its name is not UTF-8 text (byte "
                             f"{e.object[e.start:e.start + 1].hex()} at {e.start}): save the "
                             "file as UTF-8", source=self.source, element=f"{kind} {i}") from None

    def unique(self, space, wanted, made_up=""):
        """The file's name `wanted`, or where it gives none the made-up one, free in `space`."""
        name, taken = ((wanted, self.used[space]) if wanted
                       else (made_up, self.used[space] | self.given[space]))
        base, k = name, 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        self.used[space].add(name)
        return name


def load_mjcf(path, *, inertia="physical", merge_fixed=True):
    """Load an MJCF file through MuJoCo's compiler (module docstring). Returns the model with fixed
    joints merged and validated (merge_fixed=False: one body per MuJoCo body and joint, not
    validated). inertia: "physical" or "relaxed" (docs/inertia-checks.md)."""
    name = os.fsdecode(os.fspath(path))
    if inertia not in INERTIA_CHECKS:
        raise ModelError(f"inertia must be one of {INERTIA_CHECKS}, got {inertia!r}", source=name)
    mujoco, m, included = compile_mjcf(name)
    names = _Names(mujoco, m, name)
    stem = os.path.splitext(os.path.basename(name))[0]
    gravity = (0.0, 0.0, 0.0) if m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY) \
        else tuple(float(g) for g in m.opt.gravity)
    model = Model(_model_name(m) or stem, gravity=gravity, source=name)
    model.inertia_checks = inertia
    model.included = included
    body_names = [WORLD] + [names.unique("body", names.raw("body", b), f"body{b}")
                            for b in range(1, m.nbody)]
    for b in range(1, m.nbody):
        _add_body(model, m, names, body_names, b, name)
    _add_sites(model, m, names, body_names)
    layout = MujocoLayout(model)
    if np.any(np.asarray(m.qpos0, dtype=float) != layout.qpos(model.neutral())):
        model.q0 = layout.q(m.qpos0)     # MuJoCo's initial state (mj_resetData): where simulate
                                         # starts
    report = _report(m)
    if report:
        warnings.warn(f"{name}: not read: {report}", MjcfWarning, stacklevel=3)
    if not merge_fixed:
        return model
    return model.merged_fixed().validate()


def _model_name(m):
    """<mujoco model="...">: the first of MuJoCo's names (mj_id2name has no model object in
    MuJoCo 4), or "" where the file gives none (MuJoCo's default name)."""
    raw = bytes(m.names[:m.nnames]).split(b"\0", 1)[0].decode("utf-8", "replace")
    return "" if raw == MUJOCO_DEFAULT_NAME else raw


def _add_body(model, m, names, body_names, b, source):
    """Body b of MuJoCo's model with its joints (module docstring)."""
    parent = int(m.body_parentid[b])
    parent_name = body_names[parent]
    place = Transform(quaternion_matrix(*m.body_quat[b]), np.array(m.body_pos[b], dtype=float))
    inertia = dict(mass=float(m.body_mass[b]), com=np.array(m.body_ipos[b], dtype=float),
                   inertia=_body_inertia(m, b))
    weld = names.unique("joint", "", f"{body_names[b]}_weld")
    first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
    if m.body_mocapid[b] >= 0 or count <= 0:
        model.add_body(body_names[b], parent_name, joint="fixed", origin=place, joint_name=weld,
                       **inertia)
        return
    anchor = np.zeros(3)
    for k, j in enumerate(range(first, first + count)):
        kind, raw = _joint_kind(m, j), names.raw("joint", j)
        shown = raw or f"joint {j} of body '{body_names[b]}'"
        if kind == FREE and parent != 0:
            raise ModelError(f"free joint {shown!r} is on a body below another body: scleron's "
                             "free_flyer is a root joint", source=source,
                             element=f"joint {shown!r}")
        a = np.array(m.jnt_pos[j], dtype=float) if kind in (HINGE, BALL) else np.zeros(3)
        origin = place.compose(translation(a - anchor)).compose(_ref_turn(m, j, kind))
        if kind == FREE:
            origin = Transform()        # MuJoCo sets a free body's pose from qpos alone
        joint_name = names.unique("joint", raw, f"{body_names[b]}_joint{k}")
        own = k == count - 1 and not a.any()
        body = (body_names[b] if own
                else names.unique("body", "", raw or f"{body_names[b]}_joint{k}"))
        model.add_body(body, parent_name, origin=origin, joint_name=joint_name,
                       **_joint_spec(m, j, kind, shown, source, names),
                       **(inertia if own else dict(mass=0.0, inertia=(0.0, 0.0, 0.0))))
        if not own:                     # (named after the joint: the file's body is b)
            model.joint_bodies[joint_name] = body_names[b]
        parent_name, place, anchor = body, Transform(), a
    if parent_name != body_names[b]:        # the MuJoCo body hangs from its last joint's body
        model.add_body(body_names[b], parent_name, joint="fixed", origin=translation(-anchor),
                       joint_name=weld, **inertia)


def _ref_turn(m, j, kind):
    """MuJoCo moves a hinge by qpos - ref and a slide by (qpos - ref) axis (ref = qpos0): the
    constant part, R(axis, -ref) or a shift by -ref axis, goes into the joint's placement."""
    if kind not in (HINGE, SLIDE):
        return Transform()
    ref = float(m.qpos0[m.jnt_qposadr[j]])
    axis = np.array(m.jnt_axis[j], dtype=float)
    if ref == 0.0:
        return Transform()
    if kind == HINGE:
        return Transform(axis_rotation(axis, -ref), np.zeros(3))
    return translation(-ref * axis)


def _body_inertia(m, b):
    R = quaternion_matrix(*m.body_iquat[b])
    return R @ np.diag(np.array(m.body_inertia[b], dtype=float)) @ R.T


def _joint_kind(m, j):
    return {0: FREE, 1: BALL, 2: SLIDE, 3: HINGE}[int(m.jnt_type[j])]


def _joint_spec(m, j, kind, err_name, source, names=None):
    """add_body's joint keywords of MuJoCo joint j: type, axis, damping, armature, stiffness."""
    dof, nv = int(m.jnt_dofadr[j]), {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}[kind]
    added_armature, added_damping = _actuator_loads(m, j)
    damping = [float(x) + added_damping for x in m.dof_damping[dof:dof + nv]]
    if _disabled(m, "mjDSBL_DAMPER"):             # <flag damper="disable"/>: MuJoCo applies none
        damping = [0.0] * nv
    armature = [float(x) + added_armature for x in m.dof_armature[dof:dof + nv]]
    for what, total in (("armature", armature), ("damping", damping)):
        if min(total) < 0:
            _refuse_negative_actuator_loads(m, j, what, min(total), err_name, source, names)
    spec = {}
    if kind == FREE:
        for what, vals in (("damping", damping), ("armature", armature)):
            if len(set(vals[:3])) > 1:
                raise ModelError(f"free joint {err_name!r} has {what} {vals[:3]} on its three "
                                 "linear axes: MuJoCo applies it to the world-frame velocity, "
                                 "scleron's free_flyer to the body-frame one (equal only when the "
                                 "three are the same)", source=source,
                                 element=f"joint {err_name!r}")
        spec["joint"] = "free_flyer"
    elif kind == BALL:
        spec["joint"] = "spherical_quat"
    else:
        spec["joint"] = "revolute" if kind == HINGE else "prismatic"
        spec["axis"] = tuple(float(x) for x in m.jnt_axis[j])
        if not np.linalg.norm(spec["axis"]) > 1e-12:     # (MuJoCo refuses an axis too small)
            raise ModelError("MuJoCo's compiled axis is zero: the file's axis= overflowed double "
                             "precision when MuJoCo normalised it (a component such as 1e200); "
                             "give the axis as a direction of moderate size", source=source,
                             element=f"joint {err_name!r}")
        stiffness = 0.0 if _disabled(m, "mjDSBL_SPRING") else float(m.jnt_stiffness[j])
        if stiffness:
            spec["stiffness"] = stiffness
            spec["rest"] = float(m.qpos_spring[m.jnt_qposadr[j]])
    if any(damping):
        spec["damping"] = damping
    if any(armature):
        spec["armature"] = armature
    return spec


def _actuator_loads(m, j):
    """The armature and damping MuJoCo's actuators add to joint j: an actuator with a joint
    transmission (joint= or jointinparent=) adds gear[0]^2 armature to the mass matrix's diagonal
    and gear[0]^2 damping to each of the joint's degrees of freedom (MuJoCo 4; with actuation
    disabled too, as MuJoCo; checked against mj_fullM and qfrc_passive in tests/test_mjcf.py)."""
    if not hasattr(m, "actuator_armature"):         # MuJoCo before 4: actuators add neither
        return 0.0, 0.0
    armature = damping = 0.0
    for a in _joint_actuators(m):
        if int(m.actuator_trnid[a][0]) == j:
            g2 = float(m.actuator_gear[a][0]) ** 2
            armature += g2 * float(m.actuator_armature[a])
            damping += g2 * float(m.actuator_damping[a])
    return armature, damping


def _refuse_negative_actuator_loads(m, j, what, total, err_name, source, names):
    """A ModelError naming the actuators whose negative armature or damping (gear^2 times it
    added to the joint's own) make joint j's negative: the joint was blamed, with the total,
    a number the file does not hold (an outside tester). Nothing where none is negative (the
    joint's own value is then at fault, and the model's check says so)."""
    if not hasattr(m, "actuator_armature"):
        return
    for a in _joint_actuators(m):
        value = float(getattr(m, f"actuator_{what}")[a])
        if int(m.actuator_trnid[a][0]) == j and value < 0 and float(m.actuator_gear[a][0]):
            name = names.raw("actuator", a) if names is not None else ""
            raise ModelError(f"{what} {value:g} on joint {err_name!r} makes the joint's "
                             f"{what} negative ({total:g}: MuJoCo adds gear^2 times it to the "
                             "joint's own)",
                             source=source, element=f"actuator {name!r}" if name
                             else f"actuator {a} (unnamed)")


def _joint_actuators(m):
    """The actuators whose transmission is a joint (mjTRN_JOINT, mjTRN_JOINTINPARENT)."""
    import mujoco
    joint = (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT))
    return [a for a in range(m.nu) if int(m.actuator_trntype[a]) in joint]


def _add_sites(model, m, names, body_names):
    """Every named site as a frame on its body (sites of the world: on the world); a site named
    as a body is the frame NAME_site."""
    for s in range(m.nsite):
        raw = names.raw("site", s)
        if not raw:
            continue
        b = int(m.site_bodyid[s])
        origin = Transform(quaternion_matrix(*m.site_quat[s]), np.array(m.site_pos[s], dtype=float))
        name = (names.unique("body", raw) if raw not in names.used["body"]
                else names.unique("body", "", f"{raw}_site"))     # (a body's namesake)
        model.add_frame(name, body_names[b], origin=origin)


def _disabled(m, flag):
    """Whether the model's <option><flag .../> disables `flag` (an mjtDisableBit name)."""
    import mujoco
    return bool(m.opt.disableflags & int(getattr(mujoco.mjtDisableBit, flag)))


def _report(m):
    """What the compiled model holds that scleron does not use, as one line (or "")."""
    parts = []

    def count(n, what):
        if n:
            parts.append(f"{n} {what if n > 1 else _singular(what)}")
    def on(*flags):         # what MuJoCo's <flag .../> switch off, it computes none of either
        return not any(_disabled(m, f) for f in flags)
    if on("mjDSBL_CONTACT", "mjDSBL_CONSTRAINT"):
        collide = int(np.count_nonzero((m.geom_contype != 0) | (m.geom_conaffinity != 0)))
        count(collide, "colliding geoms (contacts)")
        count(getattr(m, "npair", 0), "explicit contact pairs (<contact><pair>)")
    if on("mjDSBL_LIMIT", "mjDSBL_CONSTRAINT"):
        count(int(np.count_nonzero(m.jnt_limited)), "joint limits")
    count(m.ntendon, "tendons")
    count(int(np.count_nonzero(getattr(m, "tendon_armature", ()))),
          "tendons' armature (MuJoCo adds it to M)")
    if on("mjDSBL_EQUALITY", "mjDSBL_CONSTRAINT"):
        count(m.neq, "equality constraints")
    if on("mjDSBL_ACTUATION"):
        count(m.nu, "actuators (tau is the joint force)")
    if on("mjDSBL_FRICTIONLOSS", "mjDSBL_CONSTRAINT"):
        count(int(np.count_nonzero(m.dof_frictionloss)), "joints' friction loss")
    if on("mjDSBL_GRAVITY") and np.any(m.opt.gravity):     # (without gravity it is none)
        count(int(np.count_nonzero(m.body_gravcomp)), "bodies' gravity compensation")
    count(getattr(m, "nflex", 0), "flexes")
    count(m.nmocap, "mocap bodies (fixed here)")
    spring = [j for j in range(m.njnt) if m.jnt_type[j] in (0, 1) and m.jnt_stiffness[j]
              and not _disabled(m, "mjDSBL_SPRING")]
    count(len(spring), "ball/free joint stiffness")
    _count_mujoco4_passive(m, count, on)
    if m.opt.density or m.opt.viscosity:           # (wind alone moves no fluid of either)
        parts.append("fluid forces (density, viscosity, wind)")
    return ", ".join(parts)


_PLURALS = {"geoms": "geom", "pairs": "pair", "limits": "limit", "tendons": "tendon",
            "constraints": "constraint", "actuators": "actuator", "flexes": "flex",
            "bodies": "body", "joints": "joint", "degrees": "degree"}


def _singular(what):
    """The report's "geoms (contacts)", "bodies' gravity compensation" for one: its first plural
    made singular ("geom", "body's")."""
    return re.sub(r"\b(" + "|".join(_PLURALS) + r")\b(')?",
                  lambda w: _PLURALS[w.group(1)] + ("'s" if w.group(2) else ""), what, count=1)


def _count_mujoco4_passive(m, count, on):
    """MuJoCo 4's passive forces beyond linear springs and dampers, which scleron does not model:
    polynomial damping and stiffness, plastic springs (springyield), actuators' nonlinear damping
    and the armature or damping of actuators that move tendons, sites or bodies."""
    if not hasattr(m, "dof_dampingpoly"):
        return
    if on("mjDSBL_DAMPER"):
        count(int(np.count_nonzero(np.any(m.dof_dampingpoly != 0, axis=1))),
              "degrees of freedom's polynomial damping (only the linear term is read)")
        count(int(np.count_nonzero(np.any(m.actuator_dampingpoly != 0, axis=1))),
              "actuators' polynomial damping")
    if on("mjDSBL_SPRING"):
        count(int(np.count_nonzero(np.any(m.jnt_stiffnesspoly != 0, axis=1))),
              "joints' polynomial stiffness (only the linear term is read)")
        count(int(np.count_nonzero(m.jnt_springyield)), "joints' spring yield (plastic springs)")
    joint_moved = set(_joint_actuators(m))
    count(sum(1 for a in range(m.nu) if a not in joint_moved
              and (m.actuator_armature[a] or m.actuator_damping[a])),
          "actuators' armature or damping on a tendon, site or body transmission")


# ---- MuJoCo's qpos / qvel layout -------------------------------------------------------------
class MujocoLayout:
    """Conversions between MuJoCo's qpos, qvel, qacc, qfrc, M and scleron's q, v, vdot, tau, M
    for a model read by load_mjcf (same coordinate order; only ball and free joints differ):
    ball q = [x, y, z, w] from qpos [w, x, y, z]; free q = [p, x, y, z, w] from [p, w, x, y, z],
    v_lin = R^T qvel_lin (R the body's rotation), vdot_lin = R^T qacc_lin - w x v_lin,
    tau_lin = R^T qfrc_lin and M_mujoco = T^T M T with T = d v / d qvel. Single states
    (1-D arrays)."""

    def __init__(self, model):
        self.balls, self.frees = [], []
        iq = iv = 0
        for j in model.joints:
            space = joint_configuration(j.type)
            if space == "quaternion":
                self.balls.append(iq)
            elif space == "se3":
                self.frees.append((iq, iv))
            iq += j.nq
            iv += j.dof
        self.nq, self.nv = iq, iv

    def _state(self, x, name, size):
        """x as a new array of one state's shape (size,) or (size, size), else a ValueError (a
        batch of rows was rolled as one flat vector, silently wrong)."""
        a = np.array(x, dtype=float)
        if a.shape != size:
            raise ValueError(f"{name} must be one state, an array of shape {size}; got shape "
                             f"{a.shape} (MujocoLayout converts one state at a time)")
        return a

    def q(self, qpos):
        """scleron's q of MuJoCo's qpos."""
        q = self._state(qpos, "qpos", (self.nq,))
        for i in self.balls:
            q[i:i + 4] = np.roll(q[i:i + 4], -1)
        for i, _ in self.frees:
            q[i + 3:i + 7] = np.roll(q[i + 3:i + 7], -1)
        return q

    def qpos(self, q):
        """MuJoCo's qpos of scleron's q."""
        out = self._state(q, "q", (self.nq,))
        for i in self.balls:
            out[i:i + 4] = np.roll(out[i:i + 4], 1)
        for i, _ in self.frees:
            out[i + 3:i + 7] = np.roll(out[i + 3:i + 7], 1)
        return out

    def _rotations(self, q):
        q = self._state(q, "q", (self.nq,))
        return [(iv, quaternion_matrix(q[iq + 6], *q[iq + 3:iq + 6])) for iq, iv in self.frees]

    def v(self, q, qvel, name="qvel"):
        """scleron's velocity v at q of MuJoCo's qvel."""
        v = self._state(qvel, name, (self.nv,))
        for i, R in self._rotations(q):
            v[i:i + 3] = R.T @ v[i:i + 3]
        return v

    def qvel(self, q, v, name="v"):
        out = self._state(v, name, (self.nv,))
        for i, R in self._rotations(q):
            out[i:i + 3] = R @ out[i:i + 3]
        return out

    def vdot(self, q, v, qacc):
        """scleron's acceleration of MuJoCo's qacc (v: scleron's velocity at q)."""
        a, v = self._state(qacc, "qacc", (self.nv,)), self._state(v, "v", (self.nv,))
        for i, R in self._rotations(q):
            a[i:i + 3] = R.T @ a[i:i + 3] - np.cross(v[i + 3:i + 6], v[i:i + 3])
        return a

    def qacc(self, q, v, vdot):
        out, v = self._state(vdot, "vdot", (self.nv,)), self._state(v, "v", (self.nv,))
        for i, R in self._rotations(q):
            out[i:i + 3] = R @ (out[i:i + 3] + np.cross(v[i + 3:i + 6], v[i:i + 3]))
        return out

    def tau(self, q, qfrc):
        """scleron's joint forces of MuJoCo's generalised forces (same power along qvel)."""
        return self.v(q, qfrc, "qfrc")

    def qfrc(self, q, tau):
        return self.qvel(q, tau, "tau")

    def mass_matrix(self, q, M):
        """MuJoCo's M (qvel coordinates) of scleron's: T^T M T, T = d v / d qvel."""
        M = self._state(M, "M", (self.nv, self.nv))
        T = np.eye(self.nv)
        for i, R in self._rotations(q):
            T[i:i + 3, i:i + 3] = R.T
        return T.T @ M @ T
