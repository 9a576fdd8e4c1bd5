"""Model loaders: native YAML, URDF, load_model; good files, bad files, fuzzing."""
import os
import math
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scleron.pipeline
from scleron.errors import ModelError
from scleron.kinematics import world_poses
from scleron.model import (WORLD, Transform, load_model, load_urdf, load_yaml, model_from_dict,
                           rotation_from_rpy)
from scleron.model.urdf import load_urdf_string
from scleron.model.yaml_loader import load_yaml_string, model_to_dict

REPO = Path(__file__).resolve().parents[1]


# ---- helpers -----------------------------------------------------------------------------------
def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def error_of(path, **kw):
    with pytest.raises(ModelError) as info:
        load_model(path, **kw)
    return str(info.value)


def robots_dir():
    try:
        import example_robot_data
        d = Path(example_robot_data.getModelPath("panda_description/urdf/panda.urdf"))
        if (d / "panda_description").is_dir():
            return d
        if (d / "robots" / "panda_description").is_dir():
            return d / "robots"
    except Exception:
        pass
    candidates = []
    try:
        import pinocchio
        candidates.append(Path(pinocchio.__file__).resolve().parents[4])   # .../cmeel.prefix
    except Exception:
        pass
    import site
    import sys
    for sp in list(site.getsitepackages()) + sys.path:
        candidates.append(Path(sp) / "cmeel.prefix")
    for c in candidates:
        d = c / "share" / "example-robot-data" / "robots"
        if (d / "panda_description").is_dir():
            return d
    return None


# ---- the native YAML format ------------------------------------------------------------------
BRANCHED = """\
name: rc3
gravity: [0, 0, -9.81]
bodies:
  - name: torso
    parent: world
    joint:
      name: root
      type: composite
      parts: [{type: translational}, {type: spherical, chart: ZYX}]
    mass: 10
    com: [0, 0, 0.1]
    inertia: {ixx: 0.4, iyy: 0.4, izz: 0.2, ixy: 0.01}
  - name: arm
    parent: torso
    joint: {name: shoulder, type: spherical, chart: XYZ, xyz: [0.2, 0, 0.3], rpy: [0.1, 0.2, 0.3]}
    mass: 2.0
    com: [0.25, 0, 0]
    inertia: [0.01, 0.05, 0.05]
  - name: leg
    parent: torso
    joint:
      name: hip
      axis: [0, 2, 0]
      xyz: [0, 0, -0.3]
      rotation: [[1, 0, 0], [0, 0, -1], [0, 1, 0]]
    mass: 1.5e0
    com: [0, 0, -0.2]
    inertia: [[2e-2, 0, 0], [0, 2e-2, 0], [0, 0, 1e-3]]
initial:
  q: {root: [0, 0, 1, 0.1, 0.2, 0.3], hip: 0.5}
  qd: [0, 0, 0, 0, 0, 0, 1, 2, 3, 4]
"""


def check_branched(m):
    assert m.name == "rc3"
    assert [b.name for b in m.bodies] == ["torso", "arm", "leg"]
    assert [j.name for j in m.joints] == ["root", "shoulder", "hip"]
    assert [j.parent for j in m.joints] == [WORLD, "torso", "torso"]
    assert [m.parent_index(i) for i in range(3)] == [-1, 0, 0]
    assert m.nq == 10
    root, shoulder, hip = m.joints
    assert root.type == "composite"
    assert root.params["parts"] == [{"type": "translational", "params": {}},
                                    {"type": "spherical", "params": {"chart": "ZYX"}}]
    assert shoulder.type == "spherical" and shoulder.params == {"chart": "XYZ"}
    assert np.allclose(shoulder.origin.rotation, rotation_from_rpy([0.1, 0.2, 0.3]))
    assert np.allclose(shoulder.origin.translation, [0.2, 0, 0.3])
    assert hip.type == "revolute" and np.allclose(hip.params["axis"], [0, 1, 0])
    assert np.allclose(hip.origin.rotation, [[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    torso = m.bodies[0].inertia
    assert torso.mass == 10 and np.allclose(torso.com, [0, 0, 0.1])
    assert np.allclose(torso.inertia, [[0.4, 0.01, 0], [0.01, 0.4, 0], [0, 0, 0.2]])
    assert np.allclose(m.bodies[1].inertia.inertia, np.diag([0.01, 0.05, 0.05]))
    assert np.allclose(m.bodies[2].inertia.inertia, np.diag([2e-2, 2e-2, 1e-3]))
    assert m.bodies[2].inertia.mass == 1.5
    assert np.allclose(m.gravity, [0, 0, -9.81])
    assert np.allclose(m.q0, [0, 0, 1, 0.1, 0.2, 0.3, 0, 0, 0, 0.5])
    assert np.allclose(m.qd0, [0, 0, 0, 0, 0, 0, 1, 2, 3, 4])


def test_yaml_branched_tree_round_trip(tmp_path):
    m = load_model(write(tmp_path, "rc3.yaml", BRANCHED))
    check_branched(m)
    # write it back in the native format and read it again: the same model
    text = yaml.safe_dump(model_to_dict(m), sort_keys=False)
    m2 = load_yaml(write(tmp_path, "again.yml", text))
    check_branched(m2)
    for a, b in zip(m.joints + m2.joints, m2.joints + m.joints):
        assert (a.name, a.type, a.parent, a.child) == (b.name, b.type, b.parent, b.child)
        assert np.allclose(a.origin.rotation, b.origin.rotation, atol=1e-12)
        assert np.allclose(a.origin.translation, b.origin.translation)
    for a, b in zip(m.bodies, m2.bodies):
        assert np.allclose(a.inertia.spatial(), b.inertia.spatial())
    # model_from_dict takes plain Python data too
    # (yaml.safe_load itself reads 1e-3 as a string: write plain decimals for it)
    plain = BRANCHED.replace("1.5e0", "1.5").replace("2e-2", "0.02").replace("1e-3", "0.001")
    check_branched(model_from_dict(yaml.safe_load(plain), "plain.yaml"))
    with pytest.raises(ModelError, match="plain.yaml: body 'leg': mass must be a number, got '1.5e0'"):
        model_from_dict(yaml.safe_load(BRANCHED), "plain.yaml")


def test_yaml_defaults_fixed_merge_and_massless(tmp_path):
    text = """\
bodies:
  - {name: a, parent: world, mass: 0, inertia: [0, 0, 0]}
  - {name: b, parent: a, mass: 2, com: [1, 0, 0], inertia: [1, 1, 1]}
  - name: c
    parent: b
    joint: {type: fixed, xyz: [1, 0, 0]}
    mass: 2
    inertia: [1, 1, 1]
"""
    m = load_model(write(tmp_path, "my-robot 2.yaml", text))
    assert m.name == "my_robot_2"
    assert m.q0 is None and m.qd0 is None
    assert [b.name for b in m.bodies] == ["a", "b"]
    j = m.joints[0]
    assert j.name == "a_joint" and j.type == "revolute" and j.params == {"axis": (0.0, 0.0, 1.0)}
    assert m.bodies[0].inertia.mass == 0          # massless, but b hangs from it
    b = m.bodies[1].inertia                       # b (com at x=1) + c (com at x=1): both at x=1
    assert b.mass == 4 and np.allclose(b.com, [1, 0, 0])
    assert np.allclose(b.inertia, 2 * np.eye(3))
    raw = load_yaml(write(tmp_path, "raw.yaml", text), merge_fixed=False)
    assert [jt.type for jt in raw.joints] == ["revolute", "revolute", "fixed"]


def test_docs_example_loads():
    doc = (REPO / "docs" / "model-format.md").read_text()
    example = re.search(r"```yaml\n(.*?)```", doc, re.S).group(1)
    m = model_from_dict(yaml.safe_load(example), "docs/model-format.md")
    assert [b.name for b in m.bodies] == ["torso", "arm", "leg"]     # hand merged into arm
    assert m.nq == 10 and len(m.q0) == 10 and np.isclose(m.q0[-1], 0.3)
    assert math.isclose(m.bodies[1].inertia.mass, 2.3)
    m2 = load_yaml_string(example, "docs.yaml")
    assert np.allclose(m2.qd0, m.qd0)


# ---- URDF --------------------------------------------------------------------------------------
def inertial(mass, xyz="0 0 0", rpy="0 0 0", ixx=0.01, iyy=0.02, izz=0.025, ixy=0, ixz=0, iyz=0):
    return (f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial>')


# Joints are listed children-first, a fixed link carries mass, a fixed link has children,
# a massless link hangs off a moving joint, origins have rpy, the continuous axis is skewed.
HANDMADE = f"""<?xml version="1.0"?>
<robot name="test-bot 1">
  <joint name="wrist" type="continuous">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0.4 0 0" rpy="0.1 -0.4 0.7"/>
    <axis xyz="1 2 -0.5"/>
    <limit effort="1" velocity="1"/><dynamics damping="0.1"/><mimic joint="shoulder"/>
  </joint>
  <link name="l2">{inertial(1.0, xyz="0 0.1 0", ixx=0.03, iyy=0.02, izz=0.02)}<visual><geometry><box size="1 1 1"/></geometry></visual></link>
  <link name="base">{inertial(5.0)}</link>
  <link name="l1">{inertial(2.0, xyz="0.1 0.2 0.3", rpy="0.3 -0.2 0.5", ixx=0.1, iyy=0.2, izz=0.25)}</link>
  <link name="tool">{inertial(0.5, xyz="0.05 0 0", rpy="0 0.3 0", ixx=0.001, iyy=0.002, izz=0.002)}</link>
  <link name="frame"/>
  <link name="l3">{inertial(0.3, ixx=0.001, iyy=0.001, izz=0.001)}</link>
  <joint name="slide" type="prismatic">
    <parent link="tool"/><child link="l3"/>
    <origin xyz="0 0 0.2" rpy="0 0 0.2"/><axis xyz="0 0 2"/><limit lower="0" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="tool_weld" type="fixed">
    <parent link="l1"/><child link="tool"/>
    <origin xyz="0.3 0 0.1" rpy="0 1.5707963267948966 0"/>
  </joint>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.5" rpy="0.2 0.1 0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="frame"/><child link="l4"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="to_frame" type="revolute">
    <parent link="l2"/><child link="frame"/><origin xyz="0.1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <link name="l4">{inertial(0.2, ixx=0.001, iyy=0.001, izz=0.001)}</link>
  <transmission name="t"><joint name="shoulder"/></transmission>
  <gazebo reference="l1"><material>Gazebo/Red</material></gazebo>
</robot>
"""


def test_urdf_handmade_structure(tmp_path):
    m = load_urdf(write(tmp_path, "bot.urdf", HANDMADE))
    assert m.name == "test_bot_1"
    # depth first from the root 'base'; the fixed 'tool' is merged into l1, 'slide' hangs from l1
    assert [j.name for j in m.joints] == ["shoulder", "slide", "wrist", "to_frame", "elbow"]
    assert [j.parent for j in m.joints] == [WORLD, "l1", "l1", "l2", "frame"]
    assert [j.type for j in m.joints] == ["revolute", "prismatic", "continuous", "revolute", "revolute"]
    assert m.nq == 5                                        # continuous: one coordinate
    wrist = m.joints[2]
    assert np.allclose(wrist.params["axis"], np.array([1, 2, -0.5]) / np.linalg.norm([1, 2, -0.5]))
    assert np.allclose(wrist.origin.rotation, rotation_from_rpy([0.1, -0.4, 0.7]))
    assert np.allclose(m.joints[1].params["axis"], [0, 0, 1])
    assert np.allclose(m.joints[3].params["axis"], [1, 0, 0])   # URDF default axis
    # slide's placement in l1 = tool_weld origin * slide origin
    Xw = Transform.from_xyz_rpy([0.3, 0, 0.1], [0, math.pi / 2, 0])
    Xs = Xw.compose(Transform.from_xyz_rpy([0, 0, 0.2], [0, 0, 0.2]))
    assert np.allclose(m.joints[1].origin.rotation, Xs.rotation)
    assert np.allclose(m.joints[1].origin.translation, Xs.translation)
    assert m.bodies[3].name == "frame" and m.bodies[3].inertia.mass == 0   # massless, has a child
    # order="file": siblings by their order in the file (slide is listed before wrist)
    mf = load_urdf(write(tmp_path, "bot2.urdf", HANDMADE), order="file")
    assert [j.name for j in mf.joints] == ["shoulder", "wrist", "to_frame", "elbow", "slide"]


def test_urdf_fixed_link_inertia_merged_by_hand(tmp_path):
    m = load_urdf(write(tmp_path, "bot.urdf", HANDMADE))
    l1 = m.bodies[0].inertia
    # link l1: inertia given in axes rotated by rpy (0.3, -0.2, 0.5) at com (0.1, 0.2, 0.3)
    R1 = rotation_from_rpy([0.3, -0.2, 0.5])
    m1, c1, I1 = 2.0, np.array([0.1, 0.2, 0.3]), R1 @ np.diag([0.1, 0.2, 0.25]) @ R1.T
    # link tool, welded at xyz (0.3, 0, 0.1), rpy (0, pi/2, 0); its inertial at (0.05,0,0) rpy (0,0.3,0)
    Rw, tw = rotation_from_rpy([0, math.pi / 2, 0]), np.array([0.3, 0, 0.1])
    Ri = rotation_from_rpy([0, 0.3, 0])
    m2 = 0.5
    c2 = Rw @ np.array([0.05, 0, 0]) + tw
    I2 = (Rw @ Ri) @ np.diag([0.001, 0.002, 0.002]) @ (Rw @ Ri).T
    mass = m1 + m2
    com = (m1 * c1 + m2 * c2) / mass
    I = np.zeros((3, 3))
    for mk, ck, Ik in ((m1, c1, I1), (m2, c2, I2)):   # parallel axis theorem to the joint com
        d = ck - com
        I += Ik + mk * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    assert math.isclose(l1.mass, 2.5)
    assert np.allclose(l1.com, com, atol=1e-14)
    assert np.allclose(l1.inertia, I, atol=1e-14)
    # the unmerged model keeps the fixed link with its own (rotated) inertia
    raw = load_urdf(write(tmp_path, "raw.urdf", HANDMADE), merge_fixed=False)
    tool = raw.bodies[[b.name for b in raw.bodies].index("tool")].inertia
    assert np.allclose(tool.inertia, Ri @ np.diag([0.001, 0.002, 0.002]) @ Ri.T)
    assert np.allclose(tool.com, [0.05, 0, 0])


def test_urdf_floating_planar_and_free_joints(tmp_path):
    m = load_urdf(write(tmp_path, "bot.urdf", HANDMADE), floating=True)
    assert m.joints[0].name == "root_joint" and m.joints[0].type == "free_flyer"
    assert m.bodies[0].name == "base" and m.bodies[0].inertia.mass == 5.0
    assert (m.nq, m.nv) == (12, 11) and list(m.neutral()[:7]) == [0, 0, 0, 0, 0, 0, 1]
    m = load_urdf(write(tmp_path, "bot.urdf", HANDMADE), floating="free")    # Euler angles
    assert m.joints[0].type == "free" and m.joints[0].params == {"chart": "XYZ"}
    assert m.nq == m.nv == 11
    with pytest.raises(ModelError, match="bot.urdf: floating= must be"):
        load_urdf(write(tmp_path, "bot.urdf", HANDMADE), floating="quaternion")
    text = f"""<robot name="p">
      <link name="ground"/>
      <link name="puck">{inertial(1)}</link>
      <link name="drone">{inertial(2)}</link>
      <joint name="slide2d" type="planar"><parent link="ground"/><child link="puck"/><axis xyz="0 0 3"/></joint>
      <joint name="fly" type="floating"><parent link="ground"/><child link="drone"/><origin xyz="0 0 1"/></joint>
    </robot>"""
    m = load_urdf(write(tmp_path, "p.urdf", text))
    assert [(j.name, j.type) for j in m.joints] == [("fly", "free_flyer"), ("slide2d", "planar")]
    assert np.allclose(m.joints[1].params["normal"], [0, 0, 1])
    assert (m.nq, m.nv) == (10, 9)


@pytest.mark.parametrize("option, value", [("order", "bad"), ("mimic", ["couple"]), ("inertia", None), ("floating", [1]),
                                           ("damping", "Read"), ("merge_fixed", "no"),
                                           ("floating", np.array([1, 2])), ("floating", 0), ("merge_fixed", None)])
def test_a_bad_load_option_value_is_a_model_error_naming_the_file(tmp_path, option, value):
    path = write(tmp_path, "bot.urdf", HANDMADE)
    with pytest.raises(ModelError, match=f"bot.urdf: {option}= must be"):
        load_model(path, **{option: value})


def test_load_options_take_numpy_bools_and_say_python_words(tmp_path):
    """An outside reviewer: floating=np.True_ was refused as "not a value of type bool", an
    array floating= was numpy's truth-value ValueError, floating=0 passed as False where 1 was
    refused, merge_fixed=None read "not null", and load_urdf took merge_fixed="no" as True."""
    path = write(tmp_path, "bot.urdf", HANDMADE)
    assert load_model(path, floating=np.True_).joints[0].type == "free_flyer"
    assert load_model(path, floating=np.False_, merge_fixed=np.True_).nq == load_model(path).nq
    assert load_model(path, floating=np.array(True), merge_fixed=np.array(True)).nq == 12
    with pytest.raises(ModelError, match="merge_fixed= must be True or False, not None$"):
        load_model(path, merge_fixed=None)
    with pytest.raises(ModelError, match="mimic= must be one of couple, independent, not True$"):
        load_model(path, mimic=True)
    with pytest.raises(ModelError, match="bot.urdf: merge_fixed= must be True or False, not 'no'"):
        load_urdf(path, merge_fixed="no")
    with pytest.raises(ModelError, match=r"floating= \(--floating\) applies to URDF files, not to YAML \(got a value of type ndarray\)"):
        load_model(write(tmp_path, "one.yaml", "name: one\nbodies:\n  - {name: a, parent: world, "
                         "joint: {type: revolute}, mass: 1.0, inertia: [0.1, 0.1, 0.1]}\n"),
                   floating=np.array([1, 2]))


def pin_compare(path, m, floating=False):
    """Same joint names in the same order, placements, inertias and forward kinematics as Pinocchio."""
    pin = pytest.importorskip("pinocchio")
    p = pin.buildModelFromUrdf(str(path))
    assert [j.name for j in m.joints] == list(p.names)[1:]
    assert m.nv == p.nv
    for i, j in enumerate(m.joints, start=1):
        assert np.allclose(j.origin.rotation, p.jointPlacements[i].rotation, atol=1e-12)
        assert np.allclose(j.origin.translation, p.jointPlacements[i].translation, atol=1e-12)
        I, PI = m.bodies[i - 1].inertia, p.inertias[i]
        assert math.isclose(I.mass, PI.mass, rel_tol=1e-12, abs_tol=1e-15)
        if I.mass > 0:
            assert np.allclose(I.com, PI.lever, atol=1e-12)
            assert np.allclose(I.inertia, PI.inertia, atol=1e-12)
    total = sum(p.inertias[i].mass for i in range(1, p.njoints))
    assert math.isclose(sum(b.inertia.mass for b in m.bodies), total, rel_tol=1e-12)
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, m.nq)
    pq = np.zeros(p.nq)
    for i, jm in enumerate(p.joints[1:]):
        if jm.nq == 2:                 # unbounded revolute: (cos, sin)
            pq[jm.idx_q:jm.idx_q + 2] = [math.cos(q[jm.idx_v]), math.sin(q[jm.idx_v])]
        else:
            pq[jm.idx_q] = q[jm.idx_v]
    d = p.createData()
    pin.forwardKinematics(p, d, pq)
    ours = world_poses(m, q)                        # scleron.kinematics against Pinocchio
    for i, j in enumerate(m.joints, start=1):
        assert np.allclose(ours[i - 1], d.oMi[i].homogeneous, atol=1e-10), j.name
    return p


def test_urdf_handmade_matches_pinocchio(tmp_path):
    path = write(tmp_path, "bot.urdf", HANDMADE)
    pin_compare(path, load_urdf(path))


BRANCHES = f"""<robot name="br">
 <link name="base"/>
 <link name="a">{inertial(1)}</link><link name="b">{inertial(1)}</link>
 <link name="c">{inertial(1)}</link><link name="d">{inertial(1)}</link>
 <joint name="z_j" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
 <joint name="m_j" type="revolute"><parent link="a"/><child link="c"/><origin xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
 <joint name="a_j" type="prismatic"><parent link="base"/><child link="b"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
 <joint name="b_j" type="continuous"><parent link="b"/><child link="d"/><origin xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_urdf_sibling_order_matches_pinocchio(tmp_path, capsys):
    path = write(tmp_path, "br.urdf", BRANCHES)
    m = load_urdf(path)
    assert [j.name for j in m.joints] == ["a_j", "b_j", "z_j", "m_j"]
    pin_compare(path, m)
    assert [j.name for j in load_urdf(path, order="file").joints] == ["z_j", "m_j", "a_j", "b_j"]
    # and from the commands (a pybullet user had only Python's order="file"); a YAML file has one
    from scleron.cli import main
    capsys.readouterr()
    for order, first in (("file", "z_j"), ("pinocchio", "a_j")):
        assert main(["show", str(path), "--tree", "--order", order]) == 0
        out = capsys.readouterr().out
        assert out.index(first) < min(out.index(j) for j in ("z_j", "m_j", "a_j", "b_j") if j != first)
    assert main(["show", str(path), "--tree", "--order", "name"]) == 2
    assert "invalid choice: 'name'" in capsys.readouterr().err


def test_blank_lines_before_the_xml_declaration(tmp_path, capsys):
    """pybullet's diff_ring.urdf starts with a blank line before <?xml ...?>: urdfdom, Pinocchio
    and OpenSim read such files, expat said 'XML or text declaration not at start of entity'.
    Read now, and the lines an error names are the file's."""
    text = "\n \n" + '<?xml version="1.0" encoding="utf-8"?>' + BRANCHES
    m = load_urdf(write(tmp_path, "ws.urdf", text))
    assert [j.name for j in m.joints] == ["a_j", "b_j", "z_j", "m_j"]
    bad = text.replace('<joint name="a_j" type="prismatic">', '<joint name="a_j" type="twisty">')
    msg = error_of(write(tmp_path, "bad.urdf", bad))
    line = bad[:bad.index("twisty")].count("\n") + 1
    assert f"bad.urdf:{line}:" in msg and "twisty" in msg
    assert load_urdf_string("\n" + '<?xml version="1.0"?>' + BRANCHES).nq == 4
    # a declaration after an element is still malformed
    msg = error_of(write(tmp_path, "late.urdf", BRANCHES + '<?xml version="1.0"?>'))
    assert "late.urdf" in msg and "malformed XML" in msg


@pytest.mark.parametrize("rel, nq", [("panda_description/urdf/panda.urdf", 9),
                                     ("ur_description/urdf/ur5_robot.urdf", 6)])
def test_example_robot_data(rel, nq):
    d = robots_dir()
    if d is None:
        pytest.skip("example-robot-data is not installed")
    path = d / rel
    m = load_model(path)
    assert m.nq == nq
    p = pin_compare(path, m)
    assert p.nv == nq
    # every leaf has mass, validate() passed; the fixed links (hand, tool frames) were merged
    names = [b.name for b in m.bodies]
    assert "panda_hand" not in names and "tool0" not in names and "ee_link" not in names


# ---- load_model --------------------------------------------------------------------------------
def test_load_model_dispatch_and_missing(tmp_path):
    assert load_model(write(tmp_path, "m.yml", BRANCHED)).nq == 10
    assert load_model(write(tmp_path, "m.xml", BRANCHES)).nq == 4
    msg = error_of(tmp_path / "nope.urdf")
    assert "nope.urdf" in msg and "no such file" in msg
    msg = error_of(write(tmp_path, "m.json", "{}"))
    assert "m.json" in msg and "unknown model file type" in msg
    (tmp_path / "dir.yaml").mkdir()
    msg = error_of(tmp_path / "dir.yaml")
    assert "dir.yaml" in msg and "not a regular file" in msg
    (tmp_path / "models").mkdir()                 # a folder without a suffix: said as such
    msg = error_of(tmp_path / "models")
    assert "models" in msg and "a folder, not a model file" in msg
    p = tmp_path / "huge.yaml"
    with open(p, "wb") as f:
        f.truncate(21 * 1024 * 1024)              # sparse: refused before it is read
    t = time.perf_counter()
    msg = error_of(p)
    assert "huge.yaml" in msg and "limit" in msg and time.perf_counter() - t < 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX pipes and devices")
def test_pipes_devices_and_huge_files_are_refused_before_they_are_read(tmp_path):
    """load_model hashed the file (for the staleness record) before any check: a FIFO waited
    forever, a link to /dev/zero was read until memory ran out, a sparse 3 GB file took 35 s
    and 3 GB (an outside tester). Each is refused at once now, in every format."""
    for suffix in (".urdf", ".yaml", ".osim", ".xml"):
        fifo = tmp_path / f"pipe{suffix}"
        os.mkfifo(fifo)
        zero = tmp_path / f"zero{suffix}"
        zero.symlink_to("/dev/zero")
        huge = tmp_path / f"huge{suffix}"
        with open(huge, "wb") as f:
            f.truncate(4 * 1024 ** 3)             # sparse: no disk, 4 GB if read
        for path, said in ((fifo, "not a regular file"), (zero, "not a regular file"),
                           (huge, "more than the limit")):
            t = time.perf_counter()
            msg = error_of(path)
            assert msg.startswith(str(path)) and said in msg, msg
            assert time.perf_counter() - t < 2
    from scleron.model.load import file_digest
    assert file_digest(tmp_path / "pipe.urdf") is None and file_digest(tmp_path / "zero.urdf") is None
    if os.path.exists("/proc/self/status"):       # a regular file whose size st_size does not say
        assert file_digest("/proc/self/status", limit=10) is None
        assert file_digest("/proc/self/status") is not None


def test_an_unknown_encoding_is_malformed_xml_in_every_xml_format(tmp_path):
    for name in ("e.urdf", "e.xml", "e.osim"):
        path = write(tmp_path, name, '<?xml version="1.0" encoding="bogus-enc"?><robot name="r"/>')
        assert error_of(path) == f"{path}: malformed XML: unknown encoding: bogus-enc"


# ---- bad YAML: one test per problem ------------------------------------------------------------
GOOD = """\
name: m
bodies:
  - name: a
    parent: world
    joint: {name: ja, type: revolute, axis: [0, 0, 1]}
    mass: 1.0
    inertia: [1, 1, 1]
  - name: b
    parent: a
    joint: {name: jb, type: spherical, chart: ZYX, xyz: [1, 0, 0]}
    mass: 1.0
    com: [0.5, 0, 0]
    inertia: [1, 1, 1]
"""

B_MASS = "    mass: 1.0\n    com: [0.5, 0, 0]"     # body b's mass line (unique in GOOD)
B_INERTIA = "    com: [0.5, 0, 0]\n    inertia: [1, 1, 1]"
JB = "joint: {name: jb, type: spherical, chart: ZYX, xyz: [1, 0, 0]}"

BAD_YAML = {
    # id: (replace what, with what, [fragments the message must contain])
    "malformed": ("    parent: a\n", "    parent: [a\n", ["malformed YAML"]),
    "tab_indent": ("  - name: b\n", "\t- name: b\n", ["malformed YAML"]),
    "unknown_top_key": ("name: m\n", "name: m\ncolour: red\n", ["unknown key 'colour'", ":2"]),
    "unknown_body_key": (B_MASS, B_MASS + "\n    colour: red", ["body 'b'", "unknown key 'colour'"]),
    "unknown_joint_key": (JB, "joint: {name: jb, type: spherical, limit: 3}", ["joint 'jb'", "unknown key 'limit'"]),
    "param_of_other_type": (JB, "joint: {name: jb, type: spherical, axis: [1, 0, 0]}", ["joint 'jb'", "'axis'"]),
    "unknown_inertia_key": (B_INERTIA, "    inertia: {ixx: 1, iyy: 1, izz: 1, ixyz: 0}", ["body 'b'", "'ixyz'"]),
    "unknown_part_key": (JB, "joint: {name: jb, type: composite, parts: [{type: revolute, chart: XYZ}]}",
                         ["joint 'jb'", "part 0", "'chart'"]),
    "part_composite": (JB, "joint: {name: jb, type: composite, parts: [{type: composite}]}", ["joint 'jb'", "part 0"]),
    "parts_empty": (JB, "joint: {name: jb, type: composite, parts: []}", ["joint 'jb'", "parts"]),
    "unknown_initial_key": (None, "initial: {q: [0, 0, 0, 0], qdd: [0]}", ["initial", "'qdd'"]),
    "missing_mass": (B_MASS, "    com: [0.5, 0, 0]", ["body 'b'", "required key 'mass'"]),
    "missing_name": ("  - name: b\n", "  - nom: b\n", ["bodies[1]", "unknown key 'nom'"]),
    "missing_name2": ("  - name: b\n", "  -\n", ["bodies[1]", "required key 'name'"]),
    "missing_bodies": ("bodies:", "bodys:", ["unknown key 'bodys'"]),
    "mass_string": (B_MASS, "    mass: heavy\n    com: [0.5, 0, 0]", ["body 'b'", "mass must be a number", "'heavy'"]),
    "com_wrong_length": (B_INERTIA, "    com: [0.5, 0]\n    inertia: [1, 1, 1]", ["body 'b'", "com must be a list of 3"]),
    "bodies_not_list": (None, None, ["must be a non-empty list"]),
    "gravity_string": ("name: m\n", "name: m\ngravity: down\n", ["gravity"]),
    "name_not_identifier": ("name: m\n", "name: my robot\n", ["identifier"]),
    "mass_nan": (B_MASS, "    mass: .nan\n    com: [0.5, 0, 0]", ["body 'b'", "finite"]),
    "com_inf": (B_INERTIA, "    com: [.inf, 0, 0]\n    inertia: [1, 1, 1]", ["body 'b'", "finite"]),
    "axis_nan": ("axis: [0, 0, 1]", "axis: [0, .NaN, 1]", ["joint 'ja'", "finite"]),
    "mass_bool": (B_MASS, "    mass: true\n    com: [0.5, 0, 0]", ["body 'b'", "must be a number, got true"]),
    "xyz_bool": ("xyz: [1, 0, 0]", "xyz: [1, no, 0]", ["joint 'jb'", "must be a number, got false"]),
    "parent_missing": ("    parent: a\n", "    parent: zzz\n", ["body 'b'", "parent 'zzz' does not exist"]),
    "parent_self": ("    parent: a\n", "    parent: b\n", ["body 'b'", "own parent"]),
    "cycle": ("    parent: world\n", "    parent: b\n", ["body 'a'", "parent 'b' is defined later", "cycle"]),
    "duplicate_body": ("  - name: b\n", "  - name: a\n", ["body 'a'", "two bodies have this name"]),
    "duplicate_joint": ("name: jb,", "name: ja,", ["joint 'ja'", "two joints have this name"]),
    "duplicate_default_joint": (JB, "joint: {name: b_joint}", None),     # fine: no clash
    "coordinate_name_clash": ("name: ja,", 'name: "jb[1]",', ["joint 'jb'", "its coordinate 'jb[1]'",
                                                             "a coordinate of joint 'jb[1]'"]),
    "world_body": ("  - name: b\n    parent: a", "  - name: world\n    parent: a", ["body 'world'", "reserved"]),
    "inertia_not_pd": (B_INERTIA, "    inertia: [1, 1, -1]", ["body 'b'", "not positive definite"]),
    "inertia_asymmetric": (B_INERTIA, "    inertia: [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]", ["body 'b'", "not symmetric"]),
    "inertia_triangle": (B_INERTIA, "    inertia: [1, 1, 3]", ["body 'b'", "triangle inequality"]),
    "inertia_bad_shape": (B_INERTIA, "    inertia: [1, 1]", ["body 'b'", "inertia must be"]),
    "mass_negative": (B_MASS, "    mass: -1\n    com: [0.5, 0, 0]", ["body 'b'", "mass must be positive"]),
    "massless_leaf": (B_MASS + "\n    inertia: [1, 1, 1]", "    mass: 0\n    com: [0.5, 0, 0]\n    inertia: [0, 0, 0]",
                      ["body 'b'", "mass must be positive"]),
    "axis_zero": ("axis: [0, 0, 1]", "axis: [0, 0, 0]", ["joint 'ja'", "axis has zero length"]),
    "unknown_chart": ("chart: ZYX", "chart: ZZZ", ["joint 'jb'", "unknown Euler chart 'ZZZ'"]),
    "unknown_type": ("type: revolute", "type: hinge", ["joint 'ja'", "unknown joint type 'hinge'"]),
    "rpy_and_rotation": ("xyz: [1, 0, 0]}", "rpy: [0, 0, 0], rotation: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}",
                         ["joint 'jb'", "not both"]),
    "rotation_reflection": ("xyz: [1, 0, 0]}", "rotation: [[1, 0, 0], [0, 1, 0], [0, 0, -1]]}", ["joint 'jb'", "reflection"]),
    "rotation_not_orthonormal": ("xyz: [1, 0, 0]}", "rotation: [[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]}",
                                 ["joint 'jb'", "orthonormal"]),
    "initial_unknown_joint": (None, "initial: {q: {jz: 1}}", ["initial q", "no joint is named 'jz'"]),
    "initial_wrong_length": (None, "initial: {q: {jb: [1, 2]}}", ["joint 'jb'", "3 numbers"]),
    "initial_flat_wrong_length": (None, "initial: {qd: [1, 2]}", ["initial qd", "4 numbers"]),
    "duplicate_key": ("    mass: 1.0\n    inertia: [1, 1, 1]\n",
                      "    mass: 1.0\n    mass: 2.0\n    inertia: [1, 1, 1]\n", ["duplicate key 'mass'", ":7"]),
    "python_tag": ("name: m\n", "name: !!python/object/apply:os.system [echo hi]\n", ["malformed YAML", "python"]),
    "top_is_list": (None, "- a\n- b\n", ["the top level must be a mapping"]),
    "empty": (None, "", ["empty"]),
    "two_documents": (None, GOOD + "---\n" + GOOD, ["malformed YAML"]),
    "deep": (None, "bodies: " + "[" * 60 + "]" * 60 + "\n", ["deeper than 50"]),
    "big_int": (B_MASS, "    mass: " + "9" * 400 + "\n    com: [0.5, 0, 0]", ["body 'b'", "mass"]),
    "bad_timestamp": ("name: m\n", "name: 2001-13-45\n", ["malformed YAML"]),
    # an outside tester's fuzzing: each was an internal error (TypeError, ValueError, OverflowError,
    # ZeroDivisionError) or accepted against the docs
    "huge_hex_int": (B_MASS, "    mass: 0x" + "f" * 3600 + "\n    com: [0.5, 0, 0]",
                     ["body 'b'", "mass is too large: an integer of 3600 hexadecimal digits"]),
    "surface_shape_list": (JB, "joint: {name: jb, type: surface_point, surface: {shape: [sphere], radius: 1}}",
                           ["joint 'jb'", "surface must be a mapping with shape", "a list of 1 item"]),
    "curve_shape_mapping": (JB, "joint: {name: jb, type: curve_point, curve: {shape: {a: 1}, radius: 1}}",
                            ["joint 'jb'", "curve must be a mapping with shape", "a mapping with 1 key"]),
    "custom_axis_overflow": (JB, "joint: {name: jb, type: custom, coordinates: [a], rotation: [[[1"
                             + "0" * 400 + ", 0, 0], a]]}", ["joint 'jb'", "rotation[0]: the axis must be finite"]),
    "custom_literal_underflow": (JB, 'joint: {name: jb, type: custom, coordinates: [a], '
                                 'translation: ["1e308/1e-400", a, 0]}',
                                 ["joint 'jb'", "'1e-400' is too small for a double"]),
    "list_too_long": (B_MASS, "    mass: 1.0\n    com: [" + "1, " * 10000 + "1]",
                      ["more than 10000 entries", ":12"]),      # refused while the text streams
    "mapping_too_long": (None, "extra: {" + ", ".join(f"k{i}: 1" for i in range(10001)) + "}",
                         ["more than 10000 entries"]),
    "name_not_printable": ("  - name: b\n", '  - name: "b\\x7fc"\n', ["200 printable characters"]),
    "name_bidi_override": ("  - name: b\n", '  - name: "b\\u202ec"\n', ["200 printable characters"]),
}


def yaml_case_text(key):
    old, new, _ = BAD_YAML[key]
    if key == "bodies_not_list":
        return "bodies: {a: 1}\n"
    if old is None:
        return new if key in ("top_is_list", "empty", "two_documents", "deep") else GOOD + new + "\n"
    assert old in GOOD, key
    return GOOD.replace(old, new, 1)


def test_joint_parameters_whose_derivation_overflows_are_a_model_error(tmp_path):
    """An ellipsoid of semi-axes 1e200 and 1e-200 loaded, then codegen died of an OverflowError
    in sympy (an outside tester): the joint is named now."""
    path = write(tmp_path, "ell.yaml", "name: ell\nbodies:\n  - {name: a, parent: world, mass: 1, "
                 "com: [0.1, 0.05, 0.02], inertia: [0.1, 0.12, 0.15],\n     joint: {name: j, type: "
                 "surface_point, surface: {shape: ellipsoid, semi_axes: [1.0e200, 1.0e-200, 1]}}}\n")
    with pytest.raises(ModelError, match=r"ell.yaml: joint 'j' \(surface_point\): its parameters "
                                         r"overflow double precision"):
        scleron.pipeline.build_sources(load_model(path))


def test_an_overflowing_custom_expression_is_named(tmp_path):
    """An outside tester: a custom joint's translation "1e300*a" overflowed the dynamics, and the
    message listed the placements ("placed 0 m from its parent") but not the joint. Its motion
    subspace S is among the largest numbers now."""
    path = write(tmp_path, "ovf.yaml", "name: ovf\nbodies:\n  - {name: a, parent: world, mass: 1, "
                 "com: [0.5, 0, 0], inertia: [0.01, 0.01, 0.01],\n     joint: {name: j1, type: "
                 "custom, coordinates: [a], translation: [\"1e300*a\", \"0\", \"0\"]}}\n")
    with pytest.raises(ModelError, match=r"joint motion S up to 1e\+300 \(joint 'j1'\)"):
        scleron.pipeline.build_sources(load_model(path))
    # a reviewer: S taken where the dynamics overflowed (here q = 1; at q = 0 this S is 0)
    path = write(tmp_path, "ovf2.yaml", "name: ovf2\nbodies:\n  - {name: a, parent: world, "
                 "mass: 1, com: [0.5, 0, 0], inertia: [0.01, 0.01, 0.01],\n     joint: {name: j1, "
                 "type: custom, coordinates: [a], translation: [\"1e300*a**2\", \"0\", \"0\"]}}"
                 "\ninitial: {q: {j1: 1.0}}\n")
    with pytest.raises(ModelError, match=r"at q = \[1\].*joint motion S up to 2e\+300 \(joint"):
        scleron.pipeline.build_sources(load_model(path))


def test_springs_set_on_a_loaded_model_are_checked_by_validate(tmp_path):
    """A number set as a loaded joint's armature passed validate() and ended generate in a
    TypeError (an outside tester): validate normalises and checks them as add_body does."""
    m = load_model(write(tmp_path, "good.yaml", GOOD))
    m.joints[0].armature, m.joints[0].damping = 0.1, 2
    m.validate()
    assert m.joints[0].armature == (0.1,) and m.joints[0].damping == (2.0,)
    m.joints[1].stiffness = -1.0
    with pytest.raises(ModelError, match="good.yaml: joint 'jb': stiffness must not be negative"):
        m.validate()


def test_a_model_changed_after_add_body_is_checked_again(tmp_path):
    """A joint axis set to (0, 0, 2) after add_body passed validate() and gave a non-rigid
    "rotation" and a wrong mass matrix; a renamed body ended generate in a bare ValueError
    (an outside tester). validate() checks every joint and the tree again."""
    m = scleron.Model("ax")
    m.add_body("a", "world", joint="revolute", axis=(0, 0, 1), mass=1.0, com=(0.3, 0, 0),
               inertia=(0.01, 0.02, 0.02))
    m.add_body("b", "a", joint="revolute", axis=(0, 1, 0), mass=1.0, inertia=(0.01, 0.01, 0.01))
    m.joints[0].params["axis"] = (0, 0, 2.0)
    m.validate()
    assert m.joints[0].params["axis"] == (0.0, 0.0, 1.0)
    m.joints[0].params["axis"] = (0, 0, 0)
    with pytest.raises(ModelError, match="joint 'a_joint': axis has zero length"):
        m.validate()
    m.joints[0].params["axis"] = (0, 0, 1.0)
    m.bodies[0].name = "renamed"
    with pytest.raises(ModelError, match="body 'renamed': its joint 'a_joint' moves 'a'"):
        m.validate()
    m.bodies[0].name, m.joints[0].child = "renamed", "renamed"
    with pytest.raises(ModelError, match="body 'b': its parent 'a' is not a body listed before it"):
        m.validate()
    m.joints[1].parent, m.joints[1].name = "renamed", "a_joint"
    with pytest.raises(ModelError, match="joint 'a_joint': two joints have this name"):
        m.validate()


def test_a_dumped_model_loads_back_bit_for_bit(tmp_path):
    """dump_yaml then load_model moved rotations by an ulp at every cycle (the reader projected
    every rotation onto the nearest one by an SVD) and the planar normal too, so the reloaded
    model regenerated its code (an outside tester)."""
    from scleron.model.yaml_loader import dump_yaml
    m = scleron.Model("rt")
    m.add_body("a", "world", joint="revolute", axis=(0.3, -0.4, 0.8), xyz=(0.1, 0.2, 0.3),
               rpy=(0.3, -1.1, 2.2), mass=1.0, inertia=(0.1, 0.2, 0.25))
    m.add_body("b", "a", joint="planar", normal=(1.0, 2.0, 3.0), xyz=(0.5, 0, 0),
               rpy=(1.0, 0.5, -0.7), mass=0.5, inertia=(0.1, 0.1, 0.1))
    dicts = [model_to_dict(m.validate())]
    for k in range(3):
        dump_yaml(m, str(tmp_path / f"m{k}.yaml"))
        m = load_model(str(tmp_path / f"m{k}.yaml"))
        dicts.append(model_to_dict(m))
    assert all(d == dicts[0] for d in dicts[1:])


def test_good_yaml_is_good(tmp_path):
    m = load_model(write(tmp_path, "good.yaml", GOOD))
    assert m.nq == 4 and [j.name for j in m.joints] == ["ja", "jb"]


@pytest.mark.parametrize("key", sorted(BAD_YAML))
def test_bad_yaml(tmp_path, key):
    path = write(tmp_path, "bad.yaml", yaml_case_text(key))
    fragments = BAD_YAML[key][2]
    if fragments is None:
        load_model(path)
        return
    msg = error_of(path)
    assert msg.startswith(str(path)), msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    if key not in ("empty", "top_is_list", "bad_timestamp"):
        assert re.match(re.escape(str(path)) + r":\d+: ", msg), msg       # a line number


def test_yaml_error_lines(tmp_path):
    path = write(tmp_path, "bad.yaml", GOOD.replace("inertia: [1, 1, 1]\n", "inertia: [1, 1, 3]\n"))
    assert f"{path}:7: body 'a': " in error_of(path)    # the line of body a's inertia
    path = write(tmp_path, "bad.yaml", GOOD.replace("    parent: a\n", "    parent: zzz\n"))
    assert f"{path}:9: body 'b': parent 'zzz'" in error_of(path)


def test_yaml_bombs_are_quick(tmp_path):
    merge = ["m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}"]
    for k in range(1, 12):           # nested merge keys: exponential without deduplication
        merge.append(f"m{k}: &m{k} {{<<: [{', '.join([f'*m{k - 1}'] * 10)}], z{k}: 1}}")
    alias = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    for k in range(1, 12):           # nested aliases: shared, never expanded
        alias.append(f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]")
    alias.append("bodies: *a11")
    for name, lines in (("merge", merge), ("alias", alias)):
        path = write(tmp_path, f"{name}.yaml", "\n".join(lines) + "\n")
        t = time.perf_counter()
        msg = error_of(path)
        assert f"{name}.yaml" in msg and time.perf_counter() - t < 5


CUSTOM_BODY = """bodies:
  - name: link
    parent: world
    mass: 1.0
    com: [0.1, 0.05, 0.02]
    inertia: [0.01, 0.012, 0.015]
    joint:
      type: custom
      coordinates: [a, b, c, d, e, f]
"""


def test_custom_joint_values_are_never_expanded_into_a_message(tmp_path):
    """An alias bomb as a constant (10^9 numbers) was repr'd in full (an outside tester: past 90 s,
    52 MB of message at 10^7); a 1 MB constant or name was echoed whole."""
    bomb = "&a0 [" + ", ".join(["1.0"] * 10) + "]"
    for k in range(1, 10):           # inline, nested: 10^10 numbers once expanded
        bomb = f"&a{k} [{bomb}, " + ", ".join([f"*a{k - 1}"] * 9) + "]"
    cases = {
        "bomb": "      constants: {r: " + bomb + "}\n      translation: [d, e, f]\n",
        "long_constant": "      constants: {r: '" + "x" * 10 ** 6 + "'}\n      translation: [d, e, f]\n",
        "list_as_expression": "      translation: [[1, 2], e, f]\n",
    }
    needles = {"bomb": "constant 'r' must be a finite number, got a list of 10 items",
               "long_constant": "got 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'",
               "list_as_expression": "translation[0]: expected an expression (a string or a number), got a list of 2 items"}
    for name, tail in cases.items():
        path = write(tmp_path, f"{name}.yaml", CUSTOM_BODY + tail)
        t = time.perf_counter()
        msg = error_of(path)
        assert time.perf_counter() - t < 5 and len(msg) < 400 and needles[name] in msg, msg


def test_custom_joint_of_many_moving_general_axes_is_refused_quickly(tmp_path):
    """8 rotations about axes other than x, y, z turning with coordinates took 175 s to derive
    (an outside tester); at most 6 now, with the composite joint named as the way."""
    axes = [[1, 1, 4], [5, -5, 4], [3, -2, 5], [1, 0, 1], [1, -5, 5], [1, 1, 2], [4, -5, 5], [2, 2, 4]]
    angles = "abcdefab"
    rotation = ", ".join(f"[{a}, {k}]" for a, k in zip(axes, angles))
    path = write(tmp_path, "h8.yaml", CUSTOM_BODY + f"      rotation: [{rotation}]\n")
    t = time.perf_counter()
    msg = error_of(path)
    assert time.perf_counter() - t < 10
    assert "8 rotations about axes other than x, y, z turn with a coordinate" in msg
    assert "composite joint of revolute parts" in msg
    # constant angles about general axes and coordinate angles about x, y, z do not count
    # (8 constant factors took minutes too, their cos and sin of exact rationals kept symbolic)
    fine = ", ".join([f"[{a}, 0.3]" for a in axes] + ["[x, a]", "[z, b]"])
    assert load_model(write(tmp_path, "fine.yaml", CUSTOM_BODY + f"      rotation: [{fine}]\n")).nq == 6
    # nor more than 8 turning factors of any axis (10 about x, y, z took two minutes, 16 did not
    # end in ten: an outside tester)
    turning = ", ".join(f"[{'xyz'[k % 3]}, {'abcdef'[k % 6]}]" for k in range(9))
    t = time.perf_counter()
    msg = error_of(write(tmp_path, "t9.yaml", CUSTOM_BODY + f"      rotation: [{turning}]\n"))
    assert time.perf_counter() - t < 10
    assert "9 of its factors turn with a coordinate (rotation[0], ...); at most 8" in msg


@pytest.mark.parametrize("joint, needle", [
    ("{type: opensim}", "'opensim' is the joint the .osim reader builds"),
    ("{name: j,\n   stiffness: -1}", "j.yaml:3: joint 'j' (body 'a'): stiffness must not be negative, got [-1.0]"),
    ("{type: fixed, stiffness: 1}", "stiffness: a fixed joint has no coordinates (no spring, damper or armature)"),
    ("{type: fixed, axis: [1, 0, 0]}", "unknown key 'axis' in a fixed joint (allowed: name, type, xyz, rpy, rotation)"),
])
def test_yaml_joint_types_and_keys_say_what_applies(tmp_path, joint, needle):
    text = f"bodies:\n- {{name: a, parent: world, mass: 1, inertia: [1, 1, 1], joint: {joint}}}\n"
    assert needle in error_of(write(tmp_path, "j.yaml", text))


def test_an_overflowing_constant_names_the_model_and_its_numbers(tmp_path):
    """gravity 1e308 or damping 1e308 overflowed only as the program was folded: the message was
    'non-finite constant -inf in a generated program', no file, no key (an outside tester)."""
    text = ("gravity: [0, 0, -1e308]\nbodies:\n- {name: a, parent: world, mass: 1, com: [0.1, 0, 0], "
            "inertia: [0.01, 0.01, 0.01], joint: {name: j, axis: [0, 1, 0], damping: 1e308}}\n")
    path = write(tmp_path, "huge.yaml", text)
    with pytest.raises(ModelError) as e:      # the checks before unrolling see qdd = inf now
        scleron.pipeline.build_sources(load_model(path), "huge", functions=["fdd"])
    msg = str(e.value)
    assert msg.startswith(f"{path}: body 'a': the forward dynamics overflow double precision")
    assert "gravity 1e+308" in msg and "damping up to 1e+308 (joint 'j')" in msg
    # what the printer raises for a constant that overflows as the program is folded
    from scleron.dynamics.checks import overflow_error
    from scleron.dynamics.tree import Tree
    msg = str(overflow_error(Tree(load_model(path)), source=str(path)))
    assert msg.startswith(f"{path}: a constant of the generated code overflows double precision")
    assert "gravity 1e+308" in msg and "damping up to 1e+308 (joint 'j')" in msg


# ---- bad URDF: one test per problem ------------------------------------------------------------
GOOD_URDF = f"""<?xml version="1.0"?>
<robot name="r">
  <link name="base"/>
  <link name="a">{inertial(1.0)}</link>
  <link name="b">{inertial(1.0)}</link>
  <joint name="ja" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <joint name="jb" type="revolute"><parent link="a"/><child link="b"/><origin xyz="1 0 0" rpy="0 0 0"/></joint>
</robot>
"""
LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<robot name="&lol9;"><link name="&lol9;"/></robot>
"""
LINK_B = f'<link name="b">{inertial(1.0)}</link>'
JB_URDF = '<joint name="jb" type="revolute"><parent link="a"/><child link="b"/><origin xyz="1 0 0" rpy="0 0 0"/></joint>'

BAD_URDF = {
    "billion_laughs": (None, LAUGHS, ["DOCTYPE"]),
    "external_entity": (None, '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
                              '<robot name="&x;"/>', ["DOCTYPE"]),
    "undefined_entity": ('<robot name="r">', '<robot name="&x;">', ["malformed XML", ":2"]),
    "malformed": ("</robot>", "</robt>", ["malformed XML"]),
    "not_robot": (None, "<model name='r'/>", ["not <robot>"]),
    "deep": ("</robot>", "<a>" * 60 + "</a>" * 60 + "</robot>", ["deeper than 50"]),
    "no_links": (None, "<robot name='r'/>", ["no <link>"]),
    "cycle": ('<joint name="ja" type="revolute"><parent link="base"/>',
              '<joint name="jz" type="revolute"><parent link="b"/><child link="base"/></joint>'
              '<joint name="ja" type="revolute"><parent link="base"/>', ["no root link", "cycle"]),
    "inner_cycle": ('<parent link="a"/><child link="b"/>', '<parent link="c"/><child link="b"/>',
                    ["not connected", "cycle"]),
    "two_roots": (JB_URDF, "", ["not connected into one tree", "'base'", "'b'"]),
    "unknown_parent": ('<parent link="a"/>', '<parent link="zz"/>', ["joint 'jb'", "parent link 'zz' does not exist"]),
    "no_child": ('<child link="b"/>', "", ["joint 'jb'", "<child link"]),
    "unknown_type": ('name="jb" type="revolute"', 'name="jb" type="ball"', ["joint 'jb'", "unsupported joint type 'ball'"]),
    "self_parent": ('<parent link="a"/><child link="b"/>', '<parent link="b"/><child link="b"/>', ["joint 'jb'", "own parent"]),
    "two_parents": ('<child link="a"/>', '<child link="b"/>', ["joint 'jb'", "already the child"]),
    "mass_text": ('<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1.0"/>',
                  '<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="heavy"/>', ["link 'b'", "mass value"]),
    "mass_nan": ('<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1.0"/>',
                 '<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="nan"/>', ["link 'b'", "mass value"]),
    "mass_overflow": ('<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1.0"/>',
                      '<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1e999"/>', ["link 'b'", "finite"]),
    "mass_negative": ('<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1.0"/>',
                      '<link name="b"><inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="-1"/>', ["link 'b'", "negative"]),
    "no_mass": (LINK_B, LINK_B.replace('<mass value="1.0"/>', ""), ["link 'b'", "no <mass>"]),
    "inertia_missing_attr": (LINK_B, LINK_B.replace('izz="0.025"', ""), ["link 'b'", "inertia izz is missing"]),
    "inertia_not_psd": (LINK_B, LINK_B.replace('izz="0.025"', 'izz="-0.5"'), ["link 'b'", "not positive semi-definite"]),
    "inertia_triangle": (LINK_B, LINK_B.replace('izz="0.025"', 'izz="0.5"'), ["link 'b'", "triangle inequality"]),
    "massless_leaf": (LINK_B, '<link name="b"/>', ["link 'b'", "mass must be positive"]),
    "axis_zero": ('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>', ["joint 'ja'", "zero length"]),
    "axis_short": ('<axis xyz="0 0 1"/>', '<axis xyz="0 1"/>', ["joint 'ja'", "axis xyz must be 3 numbers"]),
    "origin_bad": ('<origin xyz="1 0 0" rpy="0 0 0"/>', '<origin xyz="1 0 0" rpy="0 0 inf"/>', ["joint 'jb'", "origin rpy"]),
    "duplicate_link": (LINK_B, LINK_B + LINK_B, ["link 'b'", "two links"]),
    "duplicate_joint": (JB_URDF, JB_URDF + JB_URDF.replace('child link="b"', 'child link="base"'), ["joint 'jb'", "two joints"]),
    "world_link": ("</robot>", '<link name="world"/><joint name="jw" type="fixed"><parent link="b"/>'
                               '<child link="world"/></joint></robot>', ["link 'world'", "only the root link"]),
    "unnamed_joint": ('<joint name="jb"', '<joint', ["no name"]),
    "no_moving_body": (None, '<robot name="r"><link name="base"/></robot>', ["no moving bodies"]),
    "not_utf8": ('<robot name="r">', '<robot name="r\xff">',
                 ["malformed XML", "byte 0xff at column 15 is not UTF-8", "encoding="]),
    # a LookupError escaped as an internal error (an outside tester)
    "unknown_encoding": (None, '<?xml version="1.0" encoding="bogus-enc"?><robot name="r"/>',
                         ["malformed XML", "bogus-enc"]),
    "nbsp_separator": ('<origin xyz="1 0 0" rpy="0 0 0"/>', '<origin xyz="1\u00a00 0" rpy="0 0 0"/>',
                       ["joint 'jb'", "origin xyz must be 3 numbers"]),
    "codec_not_text": (None, '<?xml version="1.0" encoding="rot13"?><robot name="r"/>',
                       ["malformed XML", "rot13"]),
    # an unexpanded xacro source would lose the links of its macros and conditionals silently
    "xacro_element": (LINK_B, '<xacro:if value="true">' + LINK_B + '</xacro:if>',
                      [":5: <xacro:if>: an unexpanded xacro file", "xacro FILE > robot.urdf"]),
    "xacro_expression": ('<mass value="1.0"/>', '<mass value="${m}"/>',
                         ['<mass value="${m}">', "a xacro expression"]),
    "floating_root_joint_name": ('name="ja"', 'name="root_joint"',
                                 ["joint 'root_joint': floating (--floating) adds a joint named 'root_joint'"]),
}


def urdf_case_text(key):
    old, new, _ = BAD_URDF[key]
    if old is None:
        return new
    assert old in GOOD_URDF, key
    text = GOOD_URDF.replace(old, new, 1)
    if key == "inner_cycle":     # c <-> b cycle, a is a leaf of base
        text = text.replace("</robot>", '<link name="c"/><joint name="jc" type="fixed"><parent link="b"/>'
                                        '<child link="c"/></joint></robot>')
    return text


def test_good_urdf_is_good(tmp_path):
    m = load_model(write(tmp_path, "good.urdf", GOOD_URDF))
    assert m.nq == 2 and np.allclose(m.joints[1].params["axis"], [1, 0, 0])


@pytest.mark.parametrize("key", sorted(BAD_URDF))
def test_bad_urdf(tmp_path, key):
    path = tmp_path / "bad.urdf"
    text = urdf_case_text(key)
    path.write_bytes(text.encode("latin-1") if key == "not_utf8" else text.encode())
    t = time.perf_counter()
    msg = error_of(path, **({"floating": True} if key.startswith("floating") else {}))
    assert time.perf_counter() - t < 2, "bad input must fail quickly"
    assert msg.startswith(str(path)), msg
    for frag in BAD_URDF[key][2]:
        assert frag in msg, (frag, msg)


def test_an_xml_file_neither_urdf_nor_mjcf_says_so(tmp_path):
    path = write(tmp_path, "foo.xml", "<foo/>")
    assert error_of(path) == f"{path}: the root element is <foo>: neither URDF (<robot>) nor MJCF (<mujoco>)"


def test_urdf_expanded_from_xacro_is_read(tmp_path):
    """What xacro leaves behind (its namespace) and $(...) where scleron reads nothing (a mesh
    path, a Gazebo plugin) do not make a file a xacro source."""
    text = GOOD_URDF.replace('<robot name="r">', '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">')
    text = text.replace(LINK_B, LINK_B.replace("</link>", '<visual><geometry><mesh filename="$(find p)/b.stl"/>'
                                                          '</geometry></visual></link>'))
    text = text.replace("</robot>", '<gazebo><plugin filename="x.so"><ns>${ns}</ns><a v="$(arg x)"/></plugin>'
                                    '</gazebo></robot>')
    assert load_model(write(tmp_path, "expanded.urdf", text)).nq == 2


def test_urdf_mimic_errors_name_the_line(tmp_path):
    text = GOOD_URDF.replace('<origin xyz="1 0 0" rpy="0 0 0"/></joint>',
                             '<origin xyz="1 0 0" rpy="0 0 0"/>\n<mimic joint="jz"/></joint>')
    text = text.replace("</robot>", '<link name="c"/><joint name="jz" type="fixed"><parent link="b"/>'
                                    '<child link="c"/></joint></robot>')
    path = write(tmp_path, "mimic.urdf", text)
    assert f"{path}:8: joint 'jb': it mimics joint 'jz'" in error_of(path, mimic="couple")


def test_urdf_error_names_line(tmp_path):
    path = write(tmp_path, "bad.urdf", GOOD_URDF.replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'))
    assert f"{path}:6: joint 'ja': axis has zero length" in error_of(path)


# ---- fuzzing: only ModelError may escape -------------------------------------------------------
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))

scalars = (st.none() | st.booleans() | st.integers(-10, 10) | st.integers()
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
           | st.sampled_from(["world", "a", "b", "ja", "jb", "revolute", "spherical", "composite",
                              "fixed", "free", "ZYX", "XYZ", "translational"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(["name", "parent", "joint", "type", "mass", "com",
                                                         "inertia", "axis", "chart", "parts", "xyz", "rpy",
                                                         "rotation", "ixx", "iyy", "izz", "q", "qd", "x"])
                                        | st.text(max_size=4), inner, max_size=4), max_leaves=12)


def mutate(data, obj, depth=0):
    """One random change somewhere inside obj, usually deep inside (returns the new obj)."""
    descend = depth < 2 or (depth < 6 and data.draw(st.integers(0, 4)) > 0)
    if isinstance(obj, dict) and obj and descend:
        key = data.draw(st.sampled_from(sorted(obj, key=repr)))
        obj = dict(obj)
        obj[key] = mutate(data, obj[key], depth + 1)
        return obj
    if isinstance(obj, list) and obj and descend:
        i = data.draw(st.integers(0, len(obj) - 1))
        obj = list(obj)
        obj[i] = mutate(data, obj[i], depth + 1)
        return obj
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    if action == "replace" or not isinstance(obj, (dict, list)) or not obj:
        return data.draw(values)
    if action == "delete":
        if isinstance(obj, dict):
            key = data.draw(st.sampled_from(sorted(obj, key=repr)))
            return {k: v for k, v in obj.items() if k != key}
        return obj[:-1]
    if isinstance(obj, dict):
        return {**obj, data.draw(st.sampled_from(["name", "type", "axis", "mass", "initial", "x"])): data.draw(values)}
    return obj + [data.draw(values)]


TOKENS = st.sampled_from(["", "0", "-1", "1e-3", "1e400", ".nan", ".inf", "true", "null", "world", "a", "b",
                          "ja", "jb", "root", "torso", "arm", "leg", "hip", "shoulder", "fixed", "free",
                          "composite", "planar", "ZZZ", "[1, 2]", "{}", "[]", "*x", "&x 1", "!!str 1",
                          "[[1, 0, 0], [0, 1, 0]]", "[0, 0, 0]"]) | st.text(max_size=3)


def mutate_text(data, text, pattern, tokens, n):
    """Replace n random matches of pattern (tokens, attribute values) and maybe cut a line."""
    for _ in range(n):
        spans = [m.span(1) for m in re.finditer(pattern, text)]
        i, j = data.draw(st.sampled_from(spans))
        text = text[:i] + data.draw(tokens) + text[j:]
    if data.draw(st.booleans()):
        lines = text.split("\n")
        k = data.draw(st.integers(0, len(lines) - 1))
        if data.draw(st.booleans()):
            del lines[k]
        else:
            lines.insert(k, lines[data.draw(st.integers(0, len(lines) - 1))])
        text = "\n".join(lines)
    return text


def mutate_chars(data, text, pieces, n):
    for _ in range(n):
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 8)))
        text = text[:i] + data.draw(st.sampled_from(pieces) | st.text(max_size=3)) + text[j:]
    return text


@FUZZ
@given(st.data())
def test_fuzz_yaml_dicts(data):
    obj = yaml.safe_load(GOOD)
    del obj["name"]                      # (name has its own tests: fuzz the bodies)
    obj["bodies"][1]["joint"] = {"name": "jb", "type": "composite",
                                 "parts": [{"type": "revolute", "axis": [1, 0, 0]}, {"type": "spherical"}]}
    obj["initial"] = {"q": {"ja": 0.1, "jb": [1, 2, 3, 4]}, "qd": [0, 0, 0, 0, 0]}
    for _ in range(data.draw(st.integers(1, 3))):
        obj = mutate(data, obj)
    try:
        model_from_dict(obj, "fuzz.yaml")
    except ModelError as e:
        assert "fuzz.yaml" in str(e)


@FUZZ
@given(st.data())
def test_fuzz_yaml_text(data):
    kind = data.draw(st.integers(0, 3))
    if kind == 0:
        text = data.draw(st.text(max_size=200))
    elif kind == 1:
        text = mutate_chars(data, BRANCHED, ["", "[", "]", "{", ":", "-", " ", "\n", "*x", "&x ", "<<: ", "!!",
                                             "1e9", ".nan", "true", "\t", "'", "#"], data.draw(st.integers(1, 4)))
    else:
        text = mutate_text(data, BRANCHED, r"([A-Za-z0-9_.+-]+)", TOKENS, data.draw(st.integers(1, 3)))
    try:
        load_yaml_string(text, "fuzz.yaml")
    except ModelError as e:
        assert "fuzz.yaml" in str(e)


ATTR_VALUES = st.sampled_from(["", "0", "-1", "1 0", "0 0 0", "1 2 3", "nan", "inf", "1e999", "1e-300",
                               "base", "a", "b", "l1", "l2", "tool", "frame", "world", "fixed", "floating",
                               "planar", "continuous", "prismatic", "ball", "&amp;", "0.1 0.2 0.3 0.4"]) \
    | st.text(alphabet="0123456789 .-e", max_size=12)


@FUZZ
@given(st.data())
def test_fuzz_urdf_text(data):
    text = HANDMADE if data.draw(st.booleans()) else GOOD_URDF
    if data.draw(st.integers(0, 3)) == 0:
        text = mutate_chars(data, text, ["", "<", ">", "/>", "</link>", '"', "0", "-1", "nan", "&amp;", "&x;",
                                         "<!DOCTYPE r>", 'type="fixed"', 'link="a"', 'link="base"', "<joint>", " "],
                            data.draw(st.integers(1, 4)))
    else:                      # well-formed XML, wrong content: attribute values, lines cut or doubled
        text = mutate_text(data, text, r'="([^"]*)"', ATTR_VALUES, data.draw(st.integers(1, 3)))
    try:
        load_urdf_string(text, "fuzz.urdf", floating=data.draw(st.booleans()),
                         order=data.draw(st.sampled_from(["pinocchio", "file"])))
    except ModelError as e:
        assert "fuzz.urdf" in str(e)


# ---- the Python model API, as an outside tester scripting models used it -----------------------
def _python_and_yaml(tmp_path, body_yaml, build):
    """The model a YAML body describes, and the same built in Python by build(model)."""
    from scleron.model.yaml_loader import model_to_dict
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nbodies:\n" + body_yaml)
    m = scleron.Model("m")
    build(m)
    return model_to_dict(m.merged_fixed()), model_to_dict(scleron.load_model(str(path)))


def test_composite_parts_in_python_take_the_yaml_form(tmp_path):
    """parts=[{"type": "revolute", "axis": ...}] (the YAML form) lost its axes: the defaults were
    used without a word; a typo in a part was accepted; the caller's dicts were changed."""
    parts = [{"type": "revolute", "axis": (1, 0, 0)}, {"type": "prismatic", "axis": (0, 1, 0)}]
    python, from_yaml = _python_and_yaml(
        tmp_path, "  - {name: a, parent: world, mass: 1, inertia: [0.1, 0.1, 0.1],\n"
                  "     joint: {name: j, type: composite, parts: [{type: revolute, axis: [1, 0, 0]},"
                  " {type: prismatic, axis: [0, 1, 0]}]}}\n",
        lambda m: m.add_body("a", joint="composite", joint_name="j", parts=parts, mass=1.0,
                             inertia=(0.1, 0.1, 0.1)))
    assert python == from_yaml
    assert parts == [{"type": "revolute", "axis": (1, 0, 0)}, {"type": "prismatic", "axis": (0, 1, 0)}]
    m = scleron.Model("typo")
    with pytest.raises(scleron.ModelError, match="part 0: a revolute part takes no parameter axsi"):
        m.add_body("a", joint="composite", parts=[{"type": "revolute", "axsi": (1, 0, 0)}])
    with pytest.raises(scleron.ModelError, match="part 0: params must be a mapping"):
        m.add_body("a", joint="composite", parts=[{"type": "revolute", "params": None}])
    with pytest.raises(scleron.ModelError, match="beside 'type' or under 'params', not both"):
        m.add_body("a", joint="composite", parts=[{"type": "revolute", "axis": (1, 0, 0),
                                                   "params": {"axis": (1, 0, 0)}}])


def test_a_python_origin_is_a_proper_placement():
    """origin=Transform(R, t) was not checked: a reflection or 2 I made wrong energies without a
    word, and xyz/rpy beside origin were ignored."""
    from scleron.model import Transform
    m = scleron.Model("o")
    for R, problem in ((np.diag([1.0, 1.0, -1.0]), "a reflection"), (2 * np.eye(3), "not orthonormal")):
        with pytest.raises(scleron.ModelError, match=problem):
            m.add_body("a", origin=Transform(R, np.zeros(3)))
        with pytest.raises(scleron.ModelError, match=problem):
            m.add_frame("f", "world", origin=Transform(R, np.zeros(3)))
    with pytest.raises(scleron.ModelError, match="translation must be 3 numbers"):
        m.add_body("a", origin=Transform(np.eye(3), np.zeros(2)))
    with pytest.raises(scleron.ModelError, match="not both"):
        m.add_body("a", origin=Transform(), xyz=(1, 0, 0))
    with pytest.raises(scleron.ModelError, match="origin must be a Transform"):
        m.add_body("a", origin=((1, 0, 0), (0, 0, 0)))
    with pytest.raises(scleron.ModelError, match="com must be 3 numbers"):
        m.add_body("a", com=("0.1", "0", "0"))
    with pytest.raises(scleron.ModelError, match="axis must be 3 numbers"):
        m.add_body("a", axis=(True, False, False))


def test_a_body_welded_to_the_world_in_python_is_part_of_the_world():
    """Built in Python (the loaders merge fixed joints, generate did not), a body fixed to the
    world counted in the centre of mass and the potential energy (9.81 J became 58.86)."""
    from scleron.dynamics import recursions as rec
    from scleron.dynamics.algebra import FloatAlgebra
    from scleron.dynamics.tree import Tree
    m = scleron.Model("welded")
    m.add_body("plate", joint="fixed", mass=5.0, com=(0.0, 0.0, 0.5), inertia=(0.1, 0.1, 0.1))
    m.add_body("l1", "plate", joint="revolute", axis=(0, 0, 1), xyz=(0, 0, 1), mass=1.0,
               com=(0.1, 0.0, 0.0), inertia=(0.01, 0.01, 0.01))
    q, alg = [0.5], FloatAlgebra()
    com = rec.center_of_mass(Tree(m), alg, q)
    np.testing.assert_allclose(com, [0.1 * math.cos(0.5), 0.1 * math.sin(0.5), 1.0], atol=1e-15)
    assert rec.potential_energy(Tree(m), alg, q) == pytest.approx(9.81)
    # merging keeps the model's frame order (a review: a frame on a welded body moved)
    m.add_body("tool", "l1", joint="fixed", xyz=(0.2, 0, 0))
    m.add_frame("tcp", "tool")
    m.add_frame("pad", "l1")
    assert [f.name for f in Tree(m).frames] == m.frame_names() == ["plate", "l1", "pad", "tool", "tcp"]


def test_a_python_initial_state_is_checked():
    m = scleron.Model("q0")
    m.add_body("a", joint="spherical", chart="ZYZ", mass=1.0, com=(0.1, 0, 0), inertia=(0.1, 0.2, 0.25))
    for bad in ([0, 0.5, 0, 7, 8], [0, 0.5]):
        m.q0 = np.array(bad, dtype=float)
        with pytest.raises(scleron.ModelError, match=f"q0 must be 3 numbers .nq., got {len(bad)} numbers"):
            m.validate()
    for bad, problem in (([np.nan, 0.5, 0], "q0 must be finite"), (3.0, "got a single number"),
                         (["0", "1", "0"], "q0 must be 3 numbers, got"), ([[0, 0.5, 0]], "shape"),
                         ("abc", "q0 must be 3 numbers .nq., got the text 'abc'")):
        m.q0 = bad
        with pytest.raises(scleron.ModelError, match=problem):
            m.validate()
    m.q0 = np.array([0, 0.5, 0])
    m.validate()


@pytest.mark.parametrize("value", [7.5, 2.0, -0.1])
def test_an_initial_spline_parameter_out_of_its_range_is_refused(tmp_path, value):
    """An outside tester: 7.5 on a 4-frame spline (range [0, 1]) was called "a singularity of the
    joint's coordinates ... gimbal lock", and 2.0 was taken without a word."""
    text = ("name: s\nbodies:\n  - name: b\n    parent: world\n    joint: {type: spline_curve, "
            "frames: [{xyz: [0, 0, 0]}, {xyz: [1, 0, 0]}, {xyz: [2, 0, 0]}, {xyz: [3, 0, 0]}]}\n"
            f"    mass: 1\n    inertia: [1, 1, 1]\ninitial:\n  q: {{b_joint: {value}}}\n")
    with pytest.raises(ModelError, match=rf"s.yaml:3: joint 'b_joint': the initial value of its "
                                         rf"coordinate b_joint is {value:g}, outside \[0, 1\]"):
        scleron.load_model(write(tmp_path, "s.yaml", text))
    ok = scleron.load_model(write(tmp_path, "s.yaml",
                                  text.replace(f"b_joint: {value}", "b_joint: 1")))
    assert ok.q0.tolist() == [1.0]


@pytest.mark.parametrize("mass", ["-1.0", "0"])
def test_a_bad_mass_is_said_at_its_own_line(tmp_path, mass):
    """An outside tester: mass: -1 (or 0 with inertia) on line 5 was said at the inertia's line."""
    text = (f"name: m\nbodies:\n  - name: a\n    parent: world\n    mass: {mass}\n"
            "    com: [0, 0, 0]\n    inertia: [1, 1, 1]\n")
    with pytest.raises(ModelError, match=r"m.yaml:5: body 'a': mass must be positive"):
        scleron.load_model(write(tmp_path, "m.yaml", text))


def test_a_generation_error_names_the_joints_line(tmp_path):
    """A singular mass matrix found at generation named the file but no line (an outside
    tester): the joint's line, in YAML and URDF."""
    text = ("name: z\nbodies:\n  - name: a\n    parent: world\n    mass: 1\n    inertia: [1, 1, 1]\n"
            "    joint: {type: spherical, chart: ZYZ}\n")
    with pytest.raises(ModelError, match=r"zyz.yaml:7: joint 'a_joint': the mass matrix is singular"):
        scleron.generate(str(write(tmp_path, "zyz.yaml", text)), str(tmp_path / "out"),
                         functions=["fd"], compile=False)
    urdf = os.path.join(os.path.dirname(__file__), "..", "examples", "rc20.urdf")
    with pytest.raises(ModelError, match=r"rc20.urdf:\d+: joint 'joint1': the mass matrix is singular"):
        scleron.generate(scleron.load_model(urdf, floating=True), str(tmp_path / "out"),
                         functions=["fd"], compile=False)


def test_world_frames_survive_a_yaml_round_trip(tmp_path):
    """dump_yaml dropped the frames on the world (a URDF's root link among them): the format's
    top level takes them now."""
    from scleron.model.yaml_loader import dump_yaml
    m = scleron.Model("wf")
    m.add_frame("target", "world", xyz=(1.0, 2.0, 3.0), rpy=(0.1, 0.2, 0.3))
    m.add_body("a", joint="revolute", mass=1.0, com=(0.1, 0, 0))
    dump_yaml(m, tmp_path / "wf.yaml")
    back = scleron.load_model(str(tmp_path / "wf.yaml"))
    assert [f.name for f in back.frame_list()] == ["target", "a"]
    m.add_frame("0o7", "a")             # a name YAML 1.2 reads as a number is written quoted
    dump_yaml(m, tmp_path / "wf.yaml")
    assert scleron.load_model(str(tmp_path / "wf.yaml")).frame_names()[-1] == "0o7"
    np.testing.assert_allclose(back.frames[0].origin.translation, [1, 2, 3])
    np.testing.assert_allclose(back.frames[0].origin.rotation, m.frames[0].origin.rotation, atol=1e-15)


@pytest.mark.parametrize("model_name, body_name, needle", [
    ("my-robot", "base", "name 'my-robot' must be an identifier"),
    (None, "base", "name must be a non-empty string")])     # (a 201-character name: add_body
                                                          # refuses it now, test_names_are_...)
def test_dump_yaml_refuses_what_would_not_load_again(tmp_path, model_name, body_name, needle):
    """Model() and add_body take names a file may not hold: dump_yaml wrote them, and the file
    did not load (an outside tester). Refused now, before the file is opened."""
    from scleron.model.yaml_loader import dump_yaml
    m = scleron.Model(model_name)
    m.add_body(body_name, "world", mass=1.0, com=(0.1, 0, 0), inertia=(0.01, 0.01, 0.01))
    with pytest.raises(ModelError, match="dump_yaml: the model would not load again from YAML: "
                                         + re.escape(needle)):
        dump_yaml(m, tmp_path / "m.yaml")
    assert not (tmp_path / "m.yaml").exists()
    m.joints[0].mimic = ("elsewhere",)                      # a malformed mimic: not an IndexError
    with pytest.raises(ModelError, match="mimic must be"):
        dump_yaml(m, tmp_path / "m.yaml")



def test_dump_yaml_refuses_what_the_whole_model_checks_refuse(tmp_path):
    """The whole-model checks of loading too: a mimic of a joint the model lacks, no moving
    body (a reviewer), an inertia accepted as "relaxed" (YAML takes physical inertias only)."""
    from scleron.model.yaml_loader import dump_yaml
    inertia = dict(mass=1.0, com=(0.1, 0, 0), inertia=(0.01, 0.01, 0.01))
    welded = scleron.Model("welded")
    welded.add_body("a", "world", joint="fixed", **inertia)
    with pytest.raises(ModelError, match="would not load again from YAML: the model has no moving"):
        dump_yaml(welded, tmp_path / "w.yaml")
    m = scleron.Model("mimics")
    m.add_body("a", "world", **inertia)
    m.add_body("b", "a", **inertia)
    m.joints[1].mimic = ("nope", 1.0, 0.0)
    with pytest.raises(ModelError, match="would not load again from YAML: .*'nope'"):
        dump_yaml(m, tmp_path / "m.yaml")
    assert not (tmp_path / "w.yaml").exists() and not (tmp_path / "m.yaml").exists()
    relaxed = scleron.Model("relaxed")
    relaxed.inertia_checks = "relaxed"
    with pytest.warns(scleron.InertiaWarning):
        relaxed.add_body("a", "world", mass=1.0, inertia=(0.1, 0.1, 0.5))   # not I1 + I2 >= I3
    with pytest.raises(ModelError, match="would not load again from YAML: principal moments"):
        dump_yaml(relaxed, tmp_path / "r.yaml")


@pytest.mark.parametrize("written, read", [("010", 10.0), ("0x10", 16.0), ("1.5e0", 1.5),
                                           ("1:30", None), ("1_000", None)])
def test_yaml_numbers_are_read_as_yaml_1_2_writes_them(tmp_path, written, read):
    """PyYAML reads YAML 1.1: mass 1:30 was 90 (base 60), 010 was 8 (octal), silently."""
    path = tmp_path / "n.yaml"
    path.write_text(f"name: n\nbodies:\n  - name: a\n    parent: world\n    mass: {written}\n"
                    "    com: [0.1, 0, 0]\n    inertia: [0.1, 0.1, 0.1]\n")
    if read is None:
        with pytest.raises(scleron.ModelError, match=f"mass must be a number, got '{written}'"):
            scleron.load_model(str(path))
    else:
        assert scleron.load_model(str(path)).bodies[0].inertia.mass == read


def test_a_relaxed_python_models_inertia_warning_is_said_once():
    """add_body warned, and validate (generate) warned the same again."""
    import warnings
    m = scleron.Model("r")
    m.inertia_checks = "relaxed"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.add_body("a", mass=0.0, inertia=(0.1, 0.1, 0.1))
        m.add_body("b", "a", mass=1.0, com=(0.1, 0, 0))
        m.validate()
    assert len([w for w in caught if "mass must be positive" in str(w.message)]) == 1


def test_a_rest_position_without_a_spring_is_refused(tmp_path):
    """rest without stiffness changed nothing, without a word (an outside tester)."""
    path = tmp_path / "r.yaml"
    path.write_text("name: r\nbodies:\n  - name: a\n    parent: world\n    joint: {type: revolute, "
                    "rest: 0.5}\n    mass: 1.0\n    com: [0.1, 0, 0]\n    inertia: [0.1, 0.1, 0.1]\n")
    with pytest.raises(scleron.ModelError, match=r"r.yaml:3: joint 'a_joint': rest is the rest "
                                                 r"position of a spring: give stiffness too"):
        scleron.load_model(str(path))
    m = scleron.Model("r")
    with pytest.raises(scleron.ModelError, match="give stiffness too"):
        m.add_body("a", rest=0.5)
    m.add_body("a", rest=0.5, stiffness=0.0)        # a spring of stiffness 0, said so: accepted


def test_names_with_control_characters_are_refused_and_errors_print_them_escaped(tmp_path, capsys):
    """A URDF's character references put a newline, a carriage return or a right-to-left
    override into a link's name, which `scleron show` printed as they are (forged lines, text
    reversed: an outside tester). Names are printable characters now, from every reader and
    the Python API (YAML refused them already), and a command's one-line error writes what is
    not printable as its escape."""
    from scleron.cli import main
    from scleron.errors import one_line
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
                'ixz="0" iyz="0"/></inertial>')
    for bad, shown in (("&#10;", "\\n"), ("&#x202E;", "\\u202e"), ("&#x200B;", "\\u200b"),
                       ("&#9;", "\\t")):
        text = (f'<robot name="r"><link name="base"/><link name="a{bad}b">{inertial}</link>'
                f'<joint name="j" type="revolute"><parent link="base"/><child link="a{bad}b"/>'
                '<axis xyz="0 0 1"/></joint></robot>')
        path = write(tmp_path, "ctl.urdf", text)
        with pytest.raises(ModelError, match="body name must be printable characters"):
            load_model(path)
        assert main(["show", str(path), "--tree"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.isprintable() is False and \
            err.rstrip("\n").isprintable() and shown in err, err
    model = scleron.Model("m")
    for name, kind in (("a\u200bb", "body"),):
        with pytest.raises(ModelError, match=f"{kind} name must be printable"):
            model.add_body(name, joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(1, 1, 1))
    model.add_body("a", joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(1, 1, 1))
    with pytest.raises(ModelError, match="joint name must be printable"):
        model.add_body("b", parent="a", joint="revolute", joint_name="j\nk", axis=(0, 0, 1),
                       mass=1.0, inertia=(1, 1, 1))
    with pytest.raises(ModelError, match="frame name must be printable"):
        model.add_frame("t\u202eu", "a")
    assert one_line(ValueError("x\x1b[2Jy\u202ez\n w")) == "x\\x1b[2Jy\\u202ez w"


def test_names_are_at_most_200_characters_from_every_reader(tmp_path, capsys):
    """YAML capped names at 200 characters; a URDF did not (an outside tester: 2-million-
    character link names gave 100 MB of sources). Every reader and the API refuse longer now,
    in an error that shows the name cut short."""
    from scleron.cli import main
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" '
                'ixz="0" iyz="0"/></inertial>')

    def urdf(name, joint="j"):
        return write(tmp_path, "long.urdf", f'<robot name="r"><link name="base"/><link name="{name}">'
                     f'{inertial}</link><joint name="{joint}" type="revolute"><parent link="base"/>'
                     f'<child link="{name}"/><axis xyz="0 0 1"/></joint></robot>')
    assert load_model(urdf("a" * 200)).bodies[-1].name == "a" * 200
    with pytest.raises(ModelError, match="body name must be at most 200 characters, got 201"):
        load_model(urdf("a" * 201))
    with pytest.raises(ModelError, match="joint name must be at most 200 characters, got 100000"):
        load_model(urdf("a", joint="j" * 100000))
    assert main(["show", str(urdf("b" * 100000)), "--tree"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and len(err) < 600 and "got 100000" in err, err[:300]
    mjcf = write(tmp_path, "long.xml", f'<mujoco><worldbody><body name="{"c" * 201}"><joint '
                 'type="hinge"/><geom type="sphere" size="0.1"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match="at most 200 characters"):
        load_model(mjcf)
    model = scleron.Model("m")
    with pytest.raises(ModelError, match="frame name must be at most 200"):
        model.add_frame("f" * 201, "world")


def test_a_yaml_integer_of_too_many_digits_is_named_with_its_line(tmp_path):
    """An outside tester: mass: 999... (5000 digits) said "malformed YAML" with advice to call
    sys.set_int_max_str_digits, naming no line."""
    path = write(tmp_path, "big.yaml", "name: b\nbodies:\n  - {name: a, parent: world, joint: "
                 "{type: revolute}, mass: " + "9" * 5000 + ", inertia: [0.1, 0.1, 0.1]}\n")
    with pytest.raises(ModelError, match=r"big.yaml:3: a number of 5000 digits, more than an "
                                         r"integer may have here \(4300\)"):
        load_model(path)


def test_an_error_escapes_the_unprintable_characters_of_its_element(tmp_path):
    """An outside tester: str(ModelError) carried a body name's NUL or right-to-left override
    raw in its element part (only the CLI escaped it)."""
    path = write(tmp_path, "rlo.yaml", 'name: b\nbodies:\n  - {name: "b\\u202ec\\x00", parent: '
                 "world, joint: {type: revolute}, mass: 1, inertia: [0.1, 0.1, 0.1]}\n")
    with pytest.raises(ModelError) as caught:
        load_model(path)
    assert "\u202e" not in str(caught.value) and "\x00" not in str(caught.value)
    assert "body 'b\\u202ec\\x00'" in str(caught.value)


URDF_ORIGIN = """<robot name="r"{version}>
  <link name="base"/>
  <link name="a"><inertial><origin xyz="0.5 0 0"/><mass value="2"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0.5 0.1 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
    <origin xyz="1 0 0" {rotation}/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_urdf_1_1_quaternions_are_read_and_versions_checked():
    """URDF 1.1 (urdfdom) writes an origin's rotation as quat_xyzw="x y z w": it was read as
    the identity without a word, and <robot version> was not looked at (an outside tester).
    Now as urdfdom: read in a 1.1 file, left out with a warning in a 1.0 one, refused beside
    rpy; versions other than 1.0 and 1.1 refused."""
    quat = 'quat_xyzw="0.2 -0.3 0.1 0.9"'         # (normalised when read)
    q = np.array([0.2, -0.3, 0.1, 0.9]) / np.linalg.norm([0.2, -0.3, 0.1, 0.9])
    x, y, z, w = q
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    m = load_urdf_string(URDF_ORIGIN.format(version=' version="1.1"', rotation=quat), "q.urdf")
    assert np.allclose(m.joints[1].origin.rotation, R, atol=1e-15)
    with pytest.warns(UserWarning, match=r"q.urdf:10: <origin quat_xyzw> is URDF 1.1 and this "
                                         r"file does not say <robot version=\"1.1\">"):
        m = load_urdf_string(URDF_ORIGIN.format(version="", rotation=quat), "q.urdf")
    assert np.array_equal(m.joints[1].origin.rotation, np.eye(3))
    both = URDF_ORIGIN.format(version=' version="1.1"', rotation=quat + ' rpy="0 0 1"')
    with pytest.raises(ModelError, match="q.urdf:10: joint 'j2': <origin> has both rpy and "
                                         "quat_xyzw"):
        load_urdf_string(both, "q.urdf")
    zero = URDF_ORIGIN.format(version=' version="1.1"', rotation='quat_xyzw="0 0 0 0"')
    with pytest.raises(ModelError, match="is no rotation"):
        load_urdf_string(zero, "q.urdf")
    for version, problem in (("2.0", "URDF 2.0 is not supported"), ("1", "major.minor"),
                             ("abc", "major.minor"), ("1.0.0", "major.minor")):
        with pytest.raises(ModelError, match=re.escape(problem)):
            load_urdf_string(URDF_ORIGIN.format(version=f' version="{version}"', rotation=""),
                             "q.urdf")
    assert load_urdf_string(URDF_ORIGIN.format(version=' version="1.0"', rotation="")).nq == 2
    pin = pytest.importorskip("pinocchio")           # the mass matrix of urdfdom's reading
    from scleron.dynamics import recursions
    from scleron.dynamics.algebra import FloatAlgebra
    from scleron.dynamics.tree import Tree
    for version in ("", ' version="1.1"'):
        text = URDF_ORIGIN.format(version=version, rotation=quat)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm, ours = pin.buildModelFromXML(text), load_urdf_string(text)
        M = pin.crba(pm, pm.createData(), np.array([0.3, 0.4]))
        M = np.triu(M) + np.triu(M, 1).T
        mine = recursions.mass_matrix(Tree(ours), FloatAlgebra(), [0.3, 0.4])
        assert np.allclose(mine, M, rtol=1e-12, atol=1e-14) and abs(M[0, 1]) > 0.05


@pytest.mark.parametrize("data, column", [
    (b'\xef\xbb\xbf<robot name="r\x96"><link name="a"/></robot>', 15),    # (the BOM no column)
    (b'<?xml version="1.0"?>\r\n<robot name="r">\r\n<!-- ab \x96 -->\r\n</robot>\r\n', 9),
    ('<robot name="r">\n<link name="\u03b8\u03b8"/><!-- \u00e9'.encode()
     + b'\x96 -->\n</robot>', 24),
    (b'<?xml version="1.0" encoding="us-ascii"?>\n<robot name="r">\n<!-- \xe9 -->\n</robot>', None),
    (b'<?xml version="1.0" encoding="windows-1252"?>\n<robot name="r">\n<!-- \x81 -->\n</robot>',
     None),
    ('\ufeff<robot name="r">\n<1/>\n</robot>'.encode("utf-16-le"), None),
])
def test_a_byte_that_is_not_utf8_is_named_where_the_file_is_read_as_utf8(tmp_path, data, column):
    """A reviewer: the hint told a file declared windows-1252 to declare windows-1252, and a
    UTF-16 file's error was a byte 0xff; a BOM counted as a column."""
    path = tmp_path / "r.urdf"
    path.write_bytes(data)
    msg = error_of(path)
    assert "malformed XML" in msg
    if column is None:
        assert "not UTF-8" not in msg and "encoding=" not in msg, msg
    else:
        assert f"at column {column} is not UTF-8" in msg, msg


def test_joint_parameters_through_the_python_api_are_checked_as_in_yaml():
    """One check each for axis, pitch and chart (model/params), which Model.check_joint and the
    YAML reader wrote twice: a pitch is any real number (sympy's, a Fraction: accepted before,
    refused by the first shared check; a reviewer), never a bool, a string or nan; an axis of
    an int too large for a float is refused, not an OverflowError; a chart comes back a str."""
    import fractions
    import sympy
    from scleron.model.model import Model

    def helical(pitch):
        m = Model("m")
        m.add_body("b", joint="helical", axis=(0, 0, 2), pitch=pitch, mass=1.0, inertia=(1, 1, 1))
        return m.joints[0].params
    for given, value in ((sympy.Float(0.25), 0.25), (sympy.Rational(1, 4), 0.25),
                         (fractions.Fraction(1, 4), 0.25), (np.float32(0.5), 0.5), (2, 2.0)):
        params = helical(given)
        assert params["pitch"] == value and type(params["pitch"]) is float
        assert params["axis"] == (0.0, 0.0, 1.0)
    for bad, problem in ((True, "pitch must be a number"), (float("nan"), "pitch must be finite"),
                         ("0.1", "pitch must be a number"), (10 ** 400, "pitch is too large")):
        with pytest.raises(ModelError, match=problem):
            helical(bad)
    with pytest.raises(ModelError, match="axis must be 3 numbers"):
        Model("m").add_body("b", axis=[10 ** 400, 0, 0], mass=1.0, inertia=(1, 1, 1))
    m = Model("m")
    m.add_body("b", joint="spherical", chart=np.str_("ZYX"), mass=1.0, inertia=(1, 1, 1))
    assert type(m.joints[0].params["chart"]) is str
    with pytest.raises(ModelError, match="unknown Euler chart 'zyx'"):
        Model("m").add_body("b", joint="spherical", chart="zyx", mass=1.0, inertia=(1, 1, 1))
