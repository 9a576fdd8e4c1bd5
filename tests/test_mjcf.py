"""The MJCF reader (model.mjcf) against MuJoCo itself.

Oracle: MuJoCo (pip install mujoco) on the same file with contacts, constraints (joint limits,
equalities) and actuation disabled and fluid forces and tendon springs off, i.e. the dynamics
scleron reads: mj_forward's qacc at qfrc_applied = tau, mj_fullM, mj_inverse's qfrc_inverse, and
the world poses of bodies and sites (xpos, xmat, site_xpos). Compared in MuJoCo's own qpos /
qvel layout through MujocoLayout (ball and free joints, README "MJCF"). The models: MJCF written
here (every joint kind, joint anchors and refs, several joints on one body, armature, damping,
springs, sites, welded bodies) and the real ones dm_control's suite ships (cartpole, cheetah,
walker, hopper, finger, fish, manipulator, quadruped, humanoid; humanoid_CMU and dog slow),
skipped where dm_control is absent.
"""
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions
from scleron.dynamics.tree import Tree
from scleron.errors import ModelError
from scleron.model.mjcf import MjcfWarning, MujocoLayout
from scleron.program import FloatAlgebra

mujoco = pytest.importorskip("mujoco")
ALG = FloatAlgebra()
TOL = 1e-9

# every joint kind; a hinge and a slide with ref, both on one body, the hinge off the body origin;
# a ball with an anchor; a free root; armature, damping, a spring with springref; sites; a body
# without joints (welded); gravity not along z
ALL_KINDS = """<mujoco model="kinds">
  <option gravity="0.3 -0.2 -9.81"/>
  <worldbody>
    <site name="ground_mark" pos="1 2 0"/>
    <body name="base" pos="0.1 0.2 1" quat="0.9 0.1 0.3 0.2">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05" mass="3"/>
      <body name="a" pos="0.2 0 0" euler="10 20 30">
        <joint name="h1" type="hinge" axis="0 1 0.3" pos="0.05 0.01 0" ref="0.3" damping="0.2"
               armature="0.05" stiffness="2" springref="0.4"/>
        <joint name="s1" type="slide" axis="1 0 0" ref="0.1" armature="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <body name="b" pos="0.3 0 0">
          <joint name="ball" type="ball" pos="0.02 0 0.01" damping="0.1" armature="0.02"/>
          <geom type="sphere" size="0.05" pos="0.1 0.02 0"/>
          <site name="tip" pos="0.15 0 0" euler="0 30 0"/>
          <body name="c" pos="0.2 0 0">
            <geom type="ellipsoid" size="0.05 0.03 0.02" pos="0.05 0 0"/>
            <body name="d" pos="0.1 0 0">
              <joint name="h2" type="hinge" axis="0 0 1"/>
              <joint name="h3" type="hinge" axis="1 0 0" pos="0 0.02 0"/>
              <geom type="box" size="0.03 0.02 0.01" pos="0.04 0 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

# a fixed-base arm of hinges with the compiler's defaults (inertias from geoms, degrees)
ARM = """<mujoco model="arm">
  <default><joint damping="0.05" armature="0.01"/><geom type="capsule" size="0.03"/></default>
  <worldbody>
    <body name="l1" pos="0 0 0.1"><joint name="j1" axis="0 0 1"/>
      <geom fromto="0 0 0 0 0 0.3"/>
      <body name="l2" pos="0 0 0.3"><joint name="j2" axis="0 1 0" ref="20"/>
        <geom fromto="0 0 0 0.3 0 0"/>
        <body name="l3" pos="0.3 0 0"><joint name="j3" axis="0 1 0" stiffness="3" springref="10"/>
          <geom fromto="0 0 0 0.25 0 0"/><site name="ee" pos="0.25 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def write(tmp_path, text, name="m.xml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def oracle(path):
    """MuJoCo's model and data of the file, with what scleron does not read switched off (its
    compiler's warnings, e.g. cheetah's settotalmass, taken here: no MUJOCO_LOG.TXT)."""
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda text: None)
    try:
        m = mujoco.MjModel.from_xml_path(path)
    finally:
        mujoco.set_mju_user_warning(previous)
    off = mujoco.mjtDisableBit
    m.opt.disableflags |= int(off.mjDSBL_CONTACT) | int(off.mjDSBL_CONSTRAINT) | \
        int(off.mjDSBL_ACTUATION)
    m.opt.density = m.opt.viscosity = 0.0
    m.tendon_stiffness[:] = 0.0
    m.tendon_damping[:] = 0.0
    return m, mujoco.MjData(m)


def full_mass_matrix(m, d):
    M = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, M)                # MuJoCo 4
    except TypeError:
        mujoco.mj_fullM(m, M, d.qM)             # MuJoCo 3
    return M


def random_qpos(m, rng, spread=0.5):
    """qpos0 moved by up to `spread` in every hinge and slide, random unit quaternions."""
    qpos = m.qpos0 + rng.uniform(-spread, spread, m.nq)
    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (free, ball):
            a = m.jnt_qposadr[j] + (3 if int(m.jnt_type[j]) == free else 0)
            quat = rng.normal(size=4)
            qpos[a:a + 4] = quat / np.linalg.norm(quat)
    return qpos


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - b) / max(np.linalg.norm(b), 1e-300))


def load_quiet(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MjcfWarning)
        return scleron.load_model(path, **kw)


def compare_dynamics(model, path, evaluate, nstates=3, seed=0):
    """Forward dynamics, mass matrix and inverse dynamics at random states against MuJoCo, in
    MuJoCo's layout. evaluate(name, *args) runs scleron's function (reference or compiled)."""
    m, d = oracle(path)
    layout = MujocoLayout(model)
    assert (layout.nq, layout.nv) == (m.nq, m.nv)
    rng = np.random.default_rng(seed)
    for _ in range(nstates):
        d.qpos[:] = random_qpos(m, rng)
        d.qvel[:] = rng.uniform(-1, 1, m.nv)
        d.qfrc_applied[:] = rng.uniform(-1, 1, m.nv)
        mujoco.mj_forward(m, d)
        q = layout.q(d.qpos)
        v = layout.v(q, d.qvel)
        qdd = evaluate("forward_dynamics", q, v, layout.tau(q, d.qfrc_applied))
        assert rel(layout.qacc(q, v, qdd), d.qacc) <= TOL
        M = layout.mass_matrix(q, evaluate("mass_matrix", q))
        assert rel(M, full_mass_matrix(m, d)) <= TOL
        d.qacc[:] = rng.uniform(-1, 1, m.nv)
        mujoco.mj_inverse(m, d)
        tau = evaluate("inverse_dynamics", q, v, layout.vdot(q, v, d.qacc))
        assert rel(layout.qfrc(q, tau), d.qfrc_inverse) <= TOL
    return m, d


def reference(model):
    """scleron's numeric reference (the recursions on floats) as evaluate() takes it."""
    tree = Tree(model)
    return lambda name, *args: np.array(getattr(recursions, name)(tree, ALG, *map(list, args)))


# ---- MJCF written here ---------------------------------------------------------------------------
def test_every_joint_kind_equals_mujoco(tmp_path):
    path = write(tmp_path, ALL_KINDS)
    model = load_quiet(path)
    assert [j.type for j in model.joints] == ["free_flyer", "revolute", "prismatic",
                                             "spherical_quat", "revolute", "revolute"]
    assert [j.name for j in model.joints] == ["root", "h1", "s1", "ball", "h2", "h3"]
    compare_dynamics(model, path, reference(model))


def test_descriptions_name_the_files_body_of_each_joint(tmp_path):
    """A body with several joints moves massless bodies named after its joints: the coordinate
    and velocity descriptions said "joint of body shoulder" for a joint of body arm (an outside
    tester)."""
    path = write(tmp_path, '<mujoco><worldbody><body name="arm" pos="0 0 1"><joint name="shoulder" '
                           'axis="0 0 1" pos="0.1 0 0"/><joint name="elbow" axis="0 1 0"/><geom '
                           'size=".1" pos=".2 0 0" contype="0" conaffinity="0"/></body>'
                           '</worldbody></mujoco>')
    dyn = scleron.generate(load_quiet(path), str(tmp_path / "arm"), functions=["mass"])
    assert dyn.coordinate_descriptions == [
        "shoulder: revolute joint of body arm, angle about the axis (rad)",
        "elbow: revolute joint of body arm, angle about the axis (rad)"]
    assert dyn.velocity_descriptions[0] == "shoulder: revolute joint of body arm, rate of " \
                                           "shoulder (rad/s)"


def test_bias_forces_map_to_mujocos_as_the_docs_say(tmp_path, rng):
    """docs/mjcf.md: qfrc_bias - qfrc_passive = layout.qfrc(q, h + M vdot(q, v, 0)) (an outside
    tester found the obvious layout.qfrc(q, h) off by 7.6 on a free base, and no word on it)."""
    path = write(tmp_path, ALL_KINDS)
    model = load_quiet(path)
    evaluate = reference(model)
    m, d = oracle(path)
    layout = MujocoLayout(model)
    for _ in range(3):
        d.qpos[:] = rng.uniform(-1, 1, m.nq)
        mujoco.mj_normalizeQuat(m, d.qpos)
        d.qvel[:] = rng.uniform(-1, 1, m.nv)
        mujoco.mj_forward(m, d)
        q = layout.q(d.qpos)
        v = layout.v(q, d.qvel)
        vdot0 = layout.vdot(q, v, np.zeros(m.nv))
        h = evaluate("bias_forces", q, v) + evaluate("mass_matrix", q) @ vdot0
        want = d.qfrc_bias - d.qfrc_passive
        assert np.abs(layout.qfrc(q, h) - want).max() < 1e-12 * max(1.0, np.abs(want).max())
        assert np.abs(d.qfrc_passive).max() > 0.01           # (the springs and dampers count)


@pytest.mark.parametrize("flags", ['damper="disable"', 'spring="disable"', 'damper="disable" spring="disable"'])
def test_disabled_springs_and_dampers_are_not_read(tmp_path, flags):
    """<option><flag damper="disable"/> (or spring=) turns MuJoCo's joint dampers (springs) off:
    scleron reads none either (it read them: h off by K (q - q_spring) + D qd)."""
    text = ALL_KINDS.replace('<option gravity="0.3 -0.2 -9.81"/>',
                             f'<option gravity="0.3 -0.2 -9.81"><flag {flags}/></option>')
    path = write(tmp_path, text)
    model = load_quiet(path)
    h1 = next(j for j in model.joints if j.name == "h1")
    assert (h1.damping is None) == ("damper" in flags) and (h1.stiffness is None) == ("spring" in flags)
    compare_dynamics(model, path, reference(model))


def test_the_initial_state_is_mujocos_qpos0(tmp_path):
    """The model's q0 (where scleron simulate starts) is MuJoCo's qpos0, as mj_resetData starts:
    the free body at its <body pos>, the hinge and slide at their ref (it started at q = 0)."""
    path = write(tmp_path, ALL_KINDS)
    model = load_quiet(path)
    m, _ = oracle(path)
    assert np.array_equal(MujocoLayout(model).qpos(model.q0), m.qpos0)
    assert model.q0[:3].tolist() == [0.1, 0.2, 1.0] and model.q0[8] == pytest.approx(0.1)


def test_a_free_joint_with_armature_equals_mujoco(tmp_path):
    """MuJoCo applies a free joint's armature to the world-frame linear acceleration: a (dv/dt + w x v)
    in the free flyer's body-frame coordinates (the w x v term was missing: 2e-4 off in h)."""
    text = ALL_KINDS.replace('<freejoint name="root"/>', '<joint name="root" type="free" armature="0.3"/>')
    path = write(tmp_path, text)
    model = load_quiet(path)
    assert model.joints[0].type == "free_flyer" and model.joints[0].armature[:3] == (0.3, 0.3, 0.3)
    compare_dynamics(model, path, reference(model))


def test_compiled_module_equals_mujoco_and_places_bodies_and_sites(tmp_path, generated):
    """The generated C of the file, and every MuJoCo body and named site as a frame at
    MuJoCo's world pose (xpos, xmat, site_xpos, site_xmat)."""
    path = write(tmp_path, ALL_KINDS)
    model, dyn = generated(load_quiet(path), "mjcf_kinds",
                           functions=["forward_dynamics", "inverse_dynamics", "mass_matrix",
                                      "frame_placements"])
    compare_dynamics(model, path, lambda name, *a: getattr(dyn, name)(*a))
    m, d = oracle(path)
    layout = MujocoLayout(model)
    q0, qd0 = dyn.initial_state()                       # MuJoCo's qpos0, at rest
    assert np.array_equal(layout.qpos(q0), m.qpos0) and not np.array_equal(q0, dyn.neutral())
    assert qd0.shape == (dyn.nv,) and not qd0.any()
    d.qpos[:] = random_qpos(m, np.random.default_rng(3))
    mujoco.mj_kinematics(m, d)
    P = dyn.frame_placements(layout.q(d.qpos))
    names = list(dyn.frame_names)
    for b in range(1, m.nbody):
        X = P[names.index(m.body(b).name)]
        assert np.abs(X[:3, 3] - d.xpos[b]).max() <= 1e-12
        assert np.abs(X[:3, :3] - d.xmat[b].reshape(3, 3)).max() <= 1e-12
    for s in range(m.nsite):
        X = P[names.index(m.site(s).name)]
        assert np.abs(X[:3, 3] - d.site_xpos[s]).max() <= 1e-12
        assert np.abs(X[:3, :3] - d.site_xmat[s].reshape(3, 3)).max() <= 1e-12


def test_arm_with_compiler_defaults(tmp_path):
    path = write(tmp_path, ARM)
    model = load_quiet(path)
    assert model.nv == 3 and model.joints[0].armature == (0.01,)
    assert model.joints[2].stiffness == (3.0,)
    assert model.joints[2].rest == pytest.approx((math.radians(10),))
    compare_dynamics(model, path, reference(model), nstates=4)


def test_layout_round_trips(tmp_path):
    """MujocoLayout's conversions are inverse pairs, and T^T M T keeps M's power: qvel' M_mj
    qvel = v' M v."""
    model = load_quiet(write(tmp_path, ALL_KINDS))
    layout = MujocoLayout(model)
    m, _ = oracle(str(tmp_path / "m.xml"))
    rng = np.random.default_rng(5)
    qpos, qvel, a = random_qpos(m, rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    q = layout.q(qpos)
    assert np.allclose(layout.qpos(q), qpos, atol=0, rtol=0)
    v = layout.v(q, qvel)
    assert np.allclose(layout.qvel(q, v), qvel, atol=1e-15)
    assert np.allclose(layout.qacc(q, v, layout.vdot(q, v, a)), a, atol=1e-14)
    assert np.allclose(layout.qfrc(q, layout.tau(q, a)), a, atol=1e-15)
    M = np.array(recursions.mass_matrix(Tree(model), ALG, list(q)))
    assert qvel @ layout.mass_matrix(q, M) @ qvel == pytest.approx(v @ M @ v, rel=1e-13)


# ---- what is not read, and what is refused ----------------------------------------------------
def test_what_is_not_read_is_reported_in_one_line(tmp_path):
    text = ARM.replace("</worldbody>", """</worldbody>
  <tendon><fixed name="t"><joint joint="j2" coef="1"/><joint joint="j3" coef="-1"/></fixed></tendon>
  <equality><joint joint1="j2" joint2="j3"/></equality>
  <actuator><motor joint="j1"/><position joint="j2" kp="10"/></actuator>""")
    text = text.replace('<joint name="j1" axis="0 0 1"/>',
                        '<joint name="j1" axis="0 0 1" range="-1 1" limited="true" frictionloss="0.1"/>')
    with pytest.warns(MjcfWarning) as record:
        scleron.load_model(write(tmp_path, text))
    assert len(record) == 1
    line = str(record[0].message)
    for what in ("colliding geoms (contacts)", "1 joint limit", "1 tendon",
                 "1 equality constraint", "2 actuators", "1 joint's friction loss"):
        assert what in line
    assert line.startswith(str(tmp_path / "m.xml"))


def test_center_of_mass_is_that_of_the_moving_bodies(tmp_path):
    """A static body (no joint, below the world) is merged into the world: the centre of mass
    is MuJoCo's subtree_com of the moving subtree, not subtree_com[0] (Pinocchio's convention,
    README)."""
    path = write(tmp_path, """<mujoco><worldbody>
  <body name="base" pos="1 0 0"><geom type="box" size=".2 .2 .2" mass="5"/></body>
  <body name="arm" pos="0 0 0.5"><joint axis="0 0 1"/><geom type="sphere" pos="0.3 0.1 0" size=".05" mass="1"/>
    <body pos="0.3 0 0"><joint axis="0 1 0"/><geom type="sphere" pos="0 0 0.2" size=".05" mass="2"/></body>
  </body></worldbody></mujoco>""")
    model = load_quiet(path)
    m, d = oracle(path)
    q = np.array([0.4, -0.7])
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    com = recursions.center_of_mass(Tree(model), ALG, list(q))
    assert np.allclose(com, d.subtree_com[m.body("arm").id], rtol=0, atol=1e-14)
    assert not np.allclose(com, d.subtree_com[0], atol=1e-3)


def test_an_error_in_an_included_file_names_the_included_files(tmp_path):
    """MuJoCo reports an element of an included file at line 0 of the main file; the message
    then names the files it includes."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "part.xml").write_text('<mujoco><default><joint damping="abc"/></default>'
                                               "</mujoco>")
    path = write(tmp_path, ARM.replace("<worldbody>", '<include file="sub/part.xml"/><worldbody>', 1))
    with pytest.raises(ModelError, match=r"line 0.*includes.*sub/part\.xml"):
        load_quiet(path)


@pytest.mark.parametrize("flags", ['contact="disable"', 'constraint="disable" actuation="disable"',
                                   'contact="disable" limit="disable" actuation="disable"'])
def test_what_flags_switch_off_is_not_reported(tmp_path, flags):
    """<flag contact="disable"/> and the like: MuJoCo computes none of it, so none is left out."""
    text = ARM.replace("<worldbody>", f"<option><flag {flags}/></option><worldbody>", 1)
    if "limit" in flags or "constraint" in flags:
        text = text.replace('<joint name="j1" axis="0 0 1"/>',
                            '<joint name="j1" axis="0 0 1" range="-1 1" limited="true"/>')
        text = text.replace("</worldbody>", '</worldbody><actuator><motor joint="j1"/></actuator>')
    with warnings.catch_warnings():
        warnings.simplefilter("error", MjcfWarning)
        scleron.load_model(write(tmp_path, text))


@pytest.mark.parametrize("text, problem", [
    ("<mujoco><worldbody><body><joint type='hinge' axis='0 0 0'/><geom size='.1'/></body>"
     "</worldbody></mujoco>", "MuJoCo cannot compile it"),
    ("<mujoco><worldbody><body><geom size='.1'/><body><freejoint name='f'/><geom size='.1'/>"
     "</body></body></worldbody></mujoco>", "free"),
    ("<mujoco><worldbody><body><joint name='f' type='free' damping='1'/><geom size='.1'/></body>"
     "</worldbody></mujoco>".replace("damping='1'", "armature='1'"), None),
    ("<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>", "no moving bodies"),
    ('<!DOCTYPE m [<!ENTITY p "0 0 1">]><mujoco><worldbody><body pos="&p;"><joint/><geom '
     "size='.1'/></body></worldbody></mujoco>", "document type and entity declarations"),
    ("<mujoco><worldbody><body", "MuJoCo cannot compile it"),
])
def test_refused_with_a_clear_error(tmp_path, text, problem):
    path = write(tmp_path, text)
    if problem is None:                     # isotropic armature on a free joint is fine
        load_quiet(path)
        return
    with pytest.raises(ModelError, match=problem) as info:
        load_quiet(path)
    assert str(tmp_path / "m.xml") in str(info.value)


def test_free_joint_with_anisotropic_damping_is_refused(tmp_path):
    path = write(tmp_path, "<mujoco><worldbody><body><freejoint name='f'/><geom size='.1'/>"
                           "</body></worldbody></mujoco>")
    import scleron.model.mjcf as mj
    m = mujoco.MjModel.from_xml_path(path)
    m.dof_damping[:3] = (1.0, 2.0, 1.0)
    with pytest.raises(ModelError, match="damping .* three linear axes"):
        mj._joint_spec(m, 0, mj.FREE, "f", path)


def test_xml_files_go_to_the_reader_their_root_names(tmp_path):
    urdf = write(tmp_path, """<robot name="r"><link name="a"/><link name="b"><inertial>
        <mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
        </link><joint name="j" type="revolute"><parent link="a"/><child link="b"/>
        <axis xyz="0 0 1"/></joint></robot>""", "robot.xml")
    assert scleron.load_model(urdf).joints[0].name == "j"
    assert load_quiet(write(tmp_path, ARM, "arm.mjcf")).nv == 3


def test_compiler_warnings_are_warnings_not_a_log_file(tmp_path, monkeypatch):
    """MuJoCo writes its warnings to MUJOCO_LOG.TXT in the working directory unless a handler
    takes them: the reader takes them and says them as an MjcfWarning."""
    if int(mujoco.__version__.split(".")[0]) < 4:
        pytest.skip("settotalmass warns from MuJoCo 4 on")
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, ARM.replace("<worldbody>", '<compiler settotalmass="2"/><worldbody>'))
    with pytest.warns(MjcfWarning, match="MuJoCo's compiler warns: compiler attribute 'settotalmass'"):
        model = scleron.load_model(path)
    assert sum(b.inertia.mass for b in model.bodies) == pytest.approx(2.0)
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()


def test_missing_mujoco_is_one_clear_line(tmp_path, monkeypatch):
    import builtins
    path = write(tmp_path, ARM)
    real_import = builtins.__import__

    def no_mujoco(name, *args, **kw):
        if name == "mujoco":
            raise ImportError("no mujoco")
        return real_import(name, *args, **kw)
    monkeypatch.setattr(builtins, "__import__", no_mujoco)
    with pytest.raises(ModelError, match=r"pip install 'scleron\[mjcf\]'"):
        scleron.load_model(path)


# ---- real models: dm_control's suite -------------------------------------------------------------
def suite(name):
    spec = importlib.util.find_spec("dm_control")
    if spec is None:
        pytest.skip("dm_control is not installed (the test extra installs it)")
    path = os.path.join(spec.submodule_search_locations[0], "suite", name + ".xml")
    if not os.path.exists(path):
        pytest.skip(f"dm_control has no suite/{name}.xml")
    return path


@pytest.mark.parametrize("name", [
    "cartpole", "acrobot", "cheetah", "walker", "hopper", "finger", "fish", "manipulator",
    "quadruped", "humanoid",
    pytest.param("humanoid_CMU", marks=pytest.mark.slow), pytest.param("dog", marks=pytest.mark.slow),
])
def test_dm_control_suite_model_equals_mujoco(name):
    path = suite(name)
    model = load_quiet(path)
    compare_dynamics(model, path, reference(model), nstates=2)


def test_dm_control_humanoid_compiled(generated):
    """The real humanoid (free root, 21 hinges, armature, damping) generated and compiled."""
    path = suite("humanoid")
    model, dyn = generated(load_quiet(path), "mjcf_humanoid",
                           functions=["forward_dynamics", "inverse_dynamics", "mass_matrix"])
    compare_dynamics(model, path, lambda name, *a: getattr(dyn, name)(*a), nstates=2)


def test_floating_applies_to_urdf_only(tmp_path):
    with pytest.raises(ModelError, match="in MJCF give the root body a <freejoint/>"):
        scleron.load_model(write(tmp_path, ARM), floating=True)


def test_cli_says_what_is_not_read_in_one_line(tmp_path, capsys):
    from scleron.cli import main
    text = ARM.replace("</worldbody>", "</worldbody><actuator><motor joint='j1'/></actuator>")
    assert main(["show", write(tmp_path, text), "--tree"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scleron: warning: ")
    assert "not read: " in err[0] and "1 actuator " in err[0]


# an actuator's armature and damping (MuJoCo 4) on every joint kind, through joint= and
# jointinparent=, two on one slide, gear of either sign; MuJoCo applies them with actuation
# disabled too (as the oracle runs it)
ACTUATED = """<mujoco model="actuated robot"><option gravity="0 0 -9.81"/><worldbody>
  <body name="root" pos="0 0 1"><freejoint name="root"/><inertial pos="0 0 0" mass="2" diaginertia="0.1 0.2 0.3"/>
    <body name="a" pos="0.2 0 0"><joint name="h" axis="0 1 0" damping="0.3"/>
      <inertial pos="0.3 0 0" mass="1" diaginertia="0.01 0.02 0.03"/>
      <body name="b" pos="0.4 0 0"><joint name="s" type="slide" axis="1 0 0"/>
        <inertial pos="0 0.1 0" mass="0.5" diaginertia="0.01 0.01 0.01"/>
        <body name="c" pos="0.1 0 0"><joint name="ball" type="ball" damping="0.1"/>
          <inertial pos="0 0 0.2" mass="0.7" diaginertia="0.02 0.01 0.01"/></body></body></body></body>
</worldbody><actuator>
  <motor joint="root" gear="1.5 0 0 0 0 0" armature="0.2" damping="0.4"/>
  <motor joint="h" gear="2" armature="0.1" damping="0.5"/>
  <general jointinparent="s" gear="3" armature="0.2" damping="0.7"/>
  <motor joint="s" gear="-1" armature="0.05" damping="0.1"/>
  <motor joint="ball" gear="2 1 0 0 0 0" armature="0.3" damping="0.2"/>
</actuator></mujoco>"""


@pytest.mark.skipif(not hasattr(mujoco.MjModel, "actuator_armature"), reason="MuJoCo before 4")
@pytest.mark.parametrize("flags", ["", '<option><flag damper="disable"/></option>'])
def test_actuator_armature_and_damping_equal_mujoco(tmp_path, flags):
    """An outside tester: a motor's armature= and damping= (MuJoCo 4) changed MuJoCo's mass
    matrix and passive force and scleron dropped both silently (M 0.1 for MuJoCo's 0.5)."""
    path = write(tmp_path, ACTUATED.replace("<worldbody>", flags + "<worldbody>", 1))
    model = load_quiet(path)
    by_name = {j.name: j for j in model.joints}
    assert by_name["h"].armature == (4 * 0.1,)
    assert by_name["s"].armature == (9 * 0.2 + 0.05,)
    assert by_name["ball"].armature == (4 * 0.3,) * 3
    compare_dynamics(model, path, reference(model))


@pytest.mark.parametrize("axis", ["0.5 1 1e200", "1e300 0 0"])
def test_an_axis_mujoco_cannot_normalise_is_said_to_overflow(tmp_path, axis):
    """MuJoCo refuses a zero axis itself; one whose length overflows it compiles to a zero
    axis, which scleron called "zero length (|axis| = 0)", contradicting the file (an outside
    tester)."""
    text = (f'<mujoco><worldbody><body><joint name="h" axis="{axis}"/><inertial pos="0.3 0 0" '
            'mass="1" diaginertia="0.01 0.01 0.01"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match=r"joint 'h'.*compiled axis is zero: the file's axis= "
                       "overflowed"):
        scleron.load_model(write(tmp_path, text))


@pytest.mark.skipif(not hasattr(mujoco.MjModel, "actuator_armature"), reason="MuJoCo before 4")
@pytest.mark.parametrize("joint, motor, said", [
    ("", 'name="m" damping="-5" gear="3"', "actuator 'm': damping -5 on joint 'j' makes the "
     "joint's damping negative (-45"),
    ('armature="1"', 'armature="-1" gear="2"', "actuator 0 (unnamed): armature -1 on joint 'j' "
     "makes the joint's armature negative (-3"),
    ('damping="2" armature="1"', 'damping="-0.5" armature="-0.01"', None),  # totals >= 0
    ("", 'damping="-5" gear="0"', None)])                                  # adds nothing
def test_negative_actuator_loads_name_the_actuator(tmp_path, joint, motor, said):
    """An outside tester: a motor's damping -5 with gear 3 was refused as "joint 'j': damping
    must not be negative, got [-45.0]", a number the file does not hold, on an element that is
    not at fault. A negative value whose total stays >= 0 is MuJoCo's model, and read (a
    reviewer: the first fix refused those too)."""
    text = (f'<mujoco><worldbody><body><joint name="j" axis="0 1 0" {joint}/><inertial '
            'pos="0.3 0 0" mass="1" diaginertia="0.01 0.01 0.01"/></body></worldbody><actuator>'
            f'<motor joint="j" {motor}/></actuator></mujoco>')
    path = write(tmp_path, text)
    if said is not None:
        with pytest.raises(ModelError, match=re.escape(said)):
            scleron.load_model(path)
        return
    model = load_quiet(path)
    compare_dynamics(model, path, reference(model))


@pytest.mark.skipif(not hasattr(mujoco.MjModel, "dof_dampingpoly"), reason="MuJoCo before 4")
@pytest.mark.parametrize("joint, said", [
    ('damping="0.5 2 0"', "1 degree of freedom's polynomial damping (only the linear term is read)"),
    ('stiffness="3 0 4"', "1 joint's polynomial stiffness (only the linear term is read)"),
    ('stiffness="20" springyield="0.05"', "1 joint's spring yield (plastic springs)"),
])
def test_mujoco4_passive_forces_scleron_does_not_model_are_named(tmp_path, joint, said):
    """An outside tester: polynomial damping and stiffness and plastic springs were dropped with
    no word (qacc 3.3 for MuJoCo's -46.7)."""
    text = ('<mujoco><worldbody><body><joint name="h" axis="0 1 0" ' + joint + '/><inertial '
            'pos="0.3 0 0" mass="1" diaginertia="0.01 0.01 0.01"/></body></worldbody></mujoco>')
    with pytest.warns(MjcfWarning, match=r"not read: .*" + re.escape(said)):
        scleron.load_model(write(tmp_path, text))


def test_the_not_read_warning_counts_contact_pairs_and_only_forces_mujoco_applies(tmp_path):
    """An outside tester: an explicit <contact><pair> (MuJoCo's qacc 124.5 against -9.81 in free
    fall) was dropped without a word, while gravity compensation without gravity, and wind in
    no fluid, were reported though MuJoCo applies neither."""
    body = ('<worldbody><geom name="floor" type="plane" size="1 1 .1" contype="0" '
            'conaffinity="0"/><body pos="0 0 1" gravcomp="1"><freejoint/><geom name="ball" '
            'size=".1" contype="0" conaffinity="0"/></body></worldbody>')
    pair = '<contact><pair geom1="floor" geom2="ball"/></contact>'
    with pytest.warns(MjcfWarning, match=r"not read: 1 explicit contact pair \(<contact><pair>\), "
                                         r"1 body's gravity compensation$"):
        scleron.load_model(write(tmp_path, f"<mujoco>{body}{pair}</mujoco>"))
    for option in ('<option gravity="0 0 0" wind="1 0 0"/>',
                   '<option wind="0 2 0"><flag gravity="disable"/></option>'):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scleron.load_model(write(tmp_path, f"<mujoco>{option}{body}</mujoco>"))


def test_an_include_that_is_no_regular_file_is_refused(tmp_path):
    """An outside tester: <include file="fifo.xml"> (or /dev/stdin) blocked MuJoCo's compiler
    for ever; a FIFO among the files an MJCF names is refused before MuJoCo opens it."""
    os.mkfifo(tmp_path / "fifo.xml")
    body = '<worldbody><body><joint/><geom size="0.1" pos=".1 0 0"/></body></worldbody>'
    (tmp_path / "inner.xml").write_text('<mujoco><include file="fifo.xml"/></mujoco>')
    for outer in ('<include file="fifo.xml"/>', '<include file="inner.xml"/>'):
        path = write(tmp_path, f"<mujoco>{outer}{body}</mujoco>")
        with pytest.raises(ModelError, match=r'<include file="fifo.xml">: .*fifo.xml is not a '
                                             "regular file"):
            scleron.load_model(path)


def stl(scale):
    """A binary STL of a tetrahedron with edges `scale` along the axes."""
    import struct
    triangles = [((0, 0, 0), (1, 0, 0), (0, 1, 0)), ((0, 0, 0), (0, 1, 0), (0, 0, 1)),
                 ((0, 0, 0), (0, 0, 1), (1, 0, 0)), ((1, 0, 0), (0, 0, 1), (0, 1, 0))]
    out = bytearray(80) + struct.pack("<I", len(triangles))
    for tri in triangles:
        out += struct.pack("<3f", 0, 0, 0)
        for v in tri:
            out += struct.pack("<3f", *(scale * c for c in v))
        out += b"\0\0"
    return bytes(out)


def test_an_oversized_mesh_is_refused_before_mujoco_reads_it(tmp_path):
    """A 1.9 GB (sparse) STL cost MuJoCo 9 s and 2 GB before its own error (an outside tester):
    a file an MJCF names is refused above the limit, without reading it."""
    from scleron.model.mjcf import MAX_ASSET_BYTES
    with open(tmp_path / "big.stl", "wb") as f:
        f.truncate(MAX_ASSET_BYTES + 1)             # sparse: no disk used
    path = write(tmp_path, '<mujoco><asset><mesh file="big.stl"/></asset><worldbody><body>'
                           '<joint/><geom type="mesh" mesh="big"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match=r'<mesh file="big.stl">: .*big.stl is \d+ bytes, more '
                                         r"than the limit of 256 MB"):
        scleron.load_model(path)
    # a large file of the same name where MuJoCo does not read it (not in the meshdir) is not
    # a reason to refuse the model (the check refused it while any place held one)
    (tmp_path / "md").mkdir()
    (tmp_path / "md" / "big.stl").write_bytes(stl(0.2))
    path = write(tmp_path, '<mujoco><compiler meshdir="md"/><asset><mesh file="big.stl"/></asset>'
                           '<worldbody><body><joint/><geom type="mesh" mesh="big"/></body>'
                           '</worldbody></mujoco>')
    assert load_quiet(path).included == [os.path.realpath(tmp_path / "md" / "big.stl")]


def test_a_fifo_named_in_any_spelling_or_folder_is_refused(tmp_path):
    """The check read file= by a pattern: an apostrophe inside double quotes, a character
    reference (file="fi&#102;o.xml") and a meshdir set in an included file each got past it, and
    MuJoCo then waited on the FIFO for ever (an outside tester). Loaded in a child process: a
    check that misses one hangs that child, not the suite."""
    os.mkfifo(tmp_path / "it's.xml")
    os.mkfifo(tmp_path / "fifo.xml")
    (tmp_path / "md").mkdir()
    os.mkfifo(tmp_path / "md" / "m.stl")
    (tmp_path / "comp.xml").write_text('<mujoco><compiler meshdir="md"/></mujoco>')
    body = '<worldbody><body><joint/><geom size="0.1" pos=".1 0 0"/></body></worldbody>'
    cases = {"apostrophe.xml": ('<include file="it\'s.xml"/>', "it's.xml"),
             "reference.xml": ('<include file="fi&#102;o.xml"/>', "fifo.xml"),
             "meshdir.xml": ('<include file="comp.xml"/><asset><mesh name="m" file="m.stl"/></asset>',
                             "md/m.stl"),
             # a cube texture's faces (fileright= ...: the pattern took file= alone) and a second
             # file attribute of one element (an outside tester)
             "cube.xml": ('<asset><texture name="t" type="cube" fileright="it.png" fileleft="fifo.xml" '
                          'fileup="it.png" filedown="it.png" filefront="it.png" fileback="it.png"/></asset>',
                          "fifo.xml")}
    (tmp_path / "it.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    for fname, (inner, named) in cases.items():
        path = write(tmp_path, f"<mujoco>{inner}{body}</mujoco>", fname)
        code = ("import scleron, sys\ntry:\n    scleron.load_model(sys.argv[1])\n"
                "except scleron.ModelError as e:\n    print(e)\n")
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                              text=True, timeout=120)
        assert f"{named} is not a regular file" in done.stdout, (fname, done.stdout, done.stderr[-500:])


def test_file_attributes_are_found_past_quoted_angle_brackets():
    """Where ElementTree cannot parse the file (an entity MuJoCo's parser takes), the patterns
    alone find the file attributes: a start tag cut at a quoted '>' hid them (a reviewer)."""
    from scleron.model.mjcf import _file_references
    assert _file_references(b'<mujoco><include file="x>y.xml"/><bad & </mujoco>')[0] == \
        [("include", "file", "x>y.xml")]
    assert _file_references(b"<mujoco><texture name='a>b'\n fileright=\"f\" fileleft='g'/>&x;</mujoco>")[0] == \
        [("texture", "fileright", "f"), ("texture", "fileleft", "g")]


def test_a_mujoco_that_does_not_load_is_said_with_the_file(tmp_path):
    """A mujoco whose library fails to load raised its OSError with no file named (the CLI:
    'scleron: error: libmujoco.so...'); it is a ModelError naming the file, with the fix."""
    fake = tmp_path / "fake" / "mujoco"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise OSError('libmujoco.so.4: cannot open shared object file')\n")
    path = write(tmp_path, '<mujoco><worldbody><body><joint/><geom size="0.1"/></body></worldbody></mujoco>')
    done = subprocess.run([sys.executable, "-m", "scleron", "show", "--tree", str(path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"scleron: error: {path}: the mujoco package does not load "
                                  "(OSError: libmujoco.so.4"), done.stderr
    assert "pip install --force-reinstall mujoco" in done.stderr


def test_mujoco_layout_refuses_what_is_not_one_state(tmp_path):
    """MujocoLayout rolled a (3, 7) batch as one flat vector and took 5 numbers for nq = 7
    without a word (an outside tester); it converts one state at a time."""
    model = load_quiet(write(tmp_path, '<mujoco><worldbody><body><freejoint/><geom size="0.1"/>'
                                       '</body></worldbody></mujoco>'))
    layout = MujocoLayout(model)
    for call, needle in ((lambda: layout.q(np.zeros(5)), r"qpos must be one state, an array of shape \(7,\)"),
                         (lambda: layout.q(np.zeros((3, 7))), r"got shape \(3, 7\)"),
                         (lambda: layout.v(model.neutral(), np.zeros(5)), "qvel must be one state"),
                         (lambda: layout.mass_matrix(model.neutral(), np.eye(5)), "M must be one state")):
        with pytest.raises(ValueError, match=needle):
            call()


def test_tendon_armature_is_named_among_what_is_not_read(tmp_path):
    """A tendon's armature changes MuJoCo's mass matrix (87 % in a tester's model); the report
    said only "1 tendon"."""
    text = ('<mujoco><worldbody><body><joint name="h" axis="0 1 0"/><geom size="0.1" pos=".1 0 0"/>'
            '</body></worldbody><tendon><fixed name="t" armature="0.5"><joint joint="h" coef="1"/>'
            '</fixed></tendon></mujoco>')
    with pytest.warns(MjcfWarning, match=r"not read: .*1 tendon, 1 tendon's armature \(MuJoCo adds it to M\)"):
        scleron.load_model(write(tmp_path, text))


def test_the_model_name_is_the_files(tmp_path):
    """<mujoco model="..."> names the model (it was always the file's stem: MuJoCo 4's
    mj_id2name has no model object); a file that names none keeps its stem."""
    assert load_quiet(write(tmp_path, ACTUATED)).name == "actuated robot"
    assert load_quiet(write(tmp_path, ACTUATED.replace(' model="actuated robot"', ""),
                            "stem.xml")).name == "stem"


def test_an_edited_include_warns_on_import(tmp_path):
    """An outside tester: the import-time warning of a changed model file hashed the main MJCF
    file only; an edited <include>d file left stale code without a word."""
    (tmp_path / "body.xml").write_text('<mujoco><worldbody><body name="b"><joint name="h" '
                                       'axis="0 1 0"/><inertial pos="0.3 0 0" mass="1" '
                                       'diaginertia="0.01 0.01 0.01"/></body></worldbody></mujoco>')
    main = write(tmp_path, '<mujoco model="inc"><include file="body.xml"/></mujoco>', "main.xml")
    out = str(tmp_path / "inc")
    scleron.generate(load_quiet(main), out, functions=["forward_dynamics"])
    record = json.loads((tmp_path / "inc" / "model_file.json").read_text())
    assert [e["path"] for e in record["also"]] == [os.path.join("..", "body.xml")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scleron.load_generated(out)
    with open(tmp_path / "body.xml", "a") as fh:
        fh.write("<!-- a new mass soon -->\n")
    with pytest.warns(UserWarning, match=r"generated from .*main.xml \(.*body.xml changed\), which "
                                         "has changed since"):
        scleron.load_generated(out)
    (tmp_path / "body.xml").rename(tmp_path / "renamed.xml")     # gone: changed too
    with pytest.warns(UserWarning, match=r"\(.*body.xml changed\)"):
        scleron.load_generated(out)


def test_an_empty_file_attribute_and_a_folder_are_left_to_mujoco(tmp_path):
    """The scan for FIFOs took `file=""` (a builtin texture's) as the model's folder and refused
    a valid file (the review); only FIFOs and devices are refused before MuJoCo."""
    (tmp_path / "models").mkdir()
    path = write(tmp_path, '<mujoco><asset><texture name="t" type="2d" builtin="checker" '
                           'width="8" height="8" file=""/></asset><worldbody><body><joint/><geom '
                           'size="0.1" pos=".1 0 0"/></body></worldbody></mujoco>', "models/m.xml")
    assert load_quiet(path).nv == 1


# ---- found by an outside tester against MuJoCo 4 (2026-11-27) ------------------------------------
NAMES = """<mujoco model="names">
  <worldbody>
    <body name="x" pos="0 0 1"><geom type="sphere" size="0.1"/></body>
    <body pos="0 0 1"><joint axis="0 1 0"/><geom type="sphere" size="0.1" pos="0.1 0 0"/>
      <body name="body2" pos="0.2 0 0"><joint name="x_weld" axis="1 0 0"/>
        <joint name="body1_joint0" axis="0 0 1"/><geom type="sphere" size="0.1" pos="0.1 0 0"/>
        <site name="body1"/></body>
    </body>
  </worldbody>
</mujoco>"""


def test_the_files_names_are_kept_and_made_up_names_avoid_them(tmp_path):
    """Unnamed bodies and joints, and welds, were named in MuJoCo's order: a made-up `x_weld`,
    `body1_joint0` or `body1` took the name of a joint, body or site the file gave later, and that
    one became `x_weld_2` (a lookup by the file's name gave another object)."""
    model = load_quiet(write(tmp_path, NAMES))
    joints = [j.name for j in model.joints]
    assert "x_weld" in joints and "body1_joint0" in joints and len(set(joints)) == len(joints)
    assert "body1" in model.frame_names() and "body2" in model.body_names
    made_up = [name for name in joints if name not in ("x_weld", "body1_joint0")]
    assert made_up and all(n not in ("x_weld", "body1_joint0", "body1", "body2") for n in made_up)
    assert "body2_2" in model.body_names        # the unnamed body 2 (body2 is the file's)
    dyn = scleron.generate(model, str(tmp_path / "names"), functions=["frame_placements"])
    m, d = oracle(str(tmp_path / "m.xml"))
    d.qpos[:] = [0.3, -0.2, 0.5]
    mujoco.mj_kinematics(m, d)
    placements = dict(zip(dyn.frame_names, dyn.frame_placements(MujocoLayout(model).q(d.qpos))))
    assert np.abs(placements["body1"][:3, 3] - d.site_xpos[m.site("body1").id]).max() < 1e-12
    assert np.abs(placements["body2"][:3, 3] - d.xpos[m.body("body2").id]).max() < 1e-12


def test_a_name_that_is_not_utf8_is_one_clear_error(tmp_path):
    path = tmp_path / "latin1.xml"
    path.write_bytes(b'<mujoco><worldbody><body name="\xe9"><joint axis="0 1 0"/>'
                     b'<geom size="0.1" pos=".1 0 0"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match=r"latin1.xml: body 1: its name is not UTF-8 text"):
        load_quiet(path)


def test_an_mjcf_with_entities_is_refused_as_mjcf(tmp_path):
    """ElementTree refuses nested entities before the root: the file went to the URDF reader,
    which refused it as a URDF file."""
    entities = '<!ENTITY e0 "lol">' + "".join(f'<!ENTITY e{k} "{f"&e{k - 1};" * 10}">'
                                                for k in range(1, 10))
    path = write(tmp_path, f'<?xml version="1.0"?>\n<!DOCTYPE m [{entities}]>'
                           '\n<mujoco model="&e9;"><worldbody/></mujoco>')
    with pytest.raises(ModelError, match="not allowed in an MJCF file"):
        scleron.load_model(path)


def test_an_include_of_a_folder_names_the_include(tmp_path):
    (tmp_path / "adir").mkdir()
    path = write(tmp_path, '<mujoco><include file="adir"/><worldbody><body><joint/>'
                           '<geom size="0.1" pos=".1 0 0"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match=r'm.xml: <include file="adir">: .*adir is a folder'):
        scleron.load_model(path)


def test_a_mesh_is_among_the_files_the_staleness_check_hashes(tmp_path):
    """A rescaled mesh changes the body's inertia: the import-time warning hashed the MJCF and its
    includes only, and stale code loaded without a word."""
    (tmp_path / "tet.stl").write_bytes(stl(0.2))
    path = write(tmp_path, '<mujoco><asset><mesh name="t" file="tet.stl"/></asset><worldbody>'
                           '<body pos="0 0 1"><joint axis="0 1 0"/><geom type="mesh" mesh="t"/>'
                           '</body></worldbody></mujoco>')
    model = load_quiet(path)
    assert model.included == [os.path.realpath(tmp_path / "tet.stl")]
    out = str(tmp_path / "mesh")
    scleron.generate(model, out, functions=["mass_matrix"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scleron.load_generated(out)
    (tmp_path / "tet.stl").write_bytes(stl(0.4))
    with pytest.warns(UserWarning, match=r"\(.*tet.stl changed\), which has changed since"):
        scleron.load_generated(out)


def test_a_file_of_too_many_bodies_is_refused_before_mujoco_compiles_it(tmp_path):
    """50,000 bodies (5 MB, under the size limit) kept MuJoCo's compile running for minutes
    before the body limit was checked (an outside tester); the <body> elements are counted
    first (comments aside)."""
    import time
    body = '<body><joint/><geom size="0.1" pos=".1 0 0"/></body>'
    path = write(tmp_path, "<mujoco><worldbody>" + body * 5001 + "</worldbody></mujoco>")
    start = time.perf_counter()
    with pytest.raises(ModelError, match=r"m.xml: 5001 <body> elements is more than the limit "
                                         r"of 5000 \(at most 1000 of them moving"):
        scleron.load_model(path)
    assert time.perf_counter() - start < 5
    commented = write(tmp_path, "<mujoco><!--" + body * 5001 + "--><worldbody>" + body * 3
                      + "</worldbody></mujoco>")
    assert len(load_quiet(commented).bodies) == 3


def test_replicated_included_and_attached_bodies_count_towards_the_limit(tmp_path):
    """The limit counted only the <body> tags written in the main file: 230 bytes of nested
    <replicate> made 30,000 bodies, and so did an included file, which MuJoCo then compiled for
    half a minute (an outside tester); then an include inside a <replicate> and a model attached
    twice counted once (a reviewer). Now each body counts once per copy MuJoCo makes."""
    import time
    leaf = '<body><geom size="0.01"/></body>'
    moving = '<body><joint/><geom size="0.1"/></body>'
    replicated = write(tmp_path, f'<mujoco><worldbody><replicate count="200" offset="0.1 0 0">'
                                 f'<replicate count="150" offset="0 0.1 0">{leaf}</replicate>'
                                 f'</replicate>{moving}</worldbody></mujoco>', "rep.xml")
    write(tmp_path, "<mujoco><worldbody>" + leaf * 5001 + "</worldbody></mujoco>", "part.xml")
    write(tmp_path, "<mujoco><worldbody>" + leaf * 3000 + "</worldbody></mujoco>", "half.xml")
    write(tmp_path, '<mujoco><worldbody><body name="r">' + leaf * 3000 + "</body></worldbody>"
                    "</mujoco>", "sub.xml")
    included = write(tmp_path, f'<mujoco><worldbody>{moving}</worldbody><include file="part.xml"/>'
                               '</mujoco>', "inc.xml")
    twice = write(tmp_path, f'<mujoco><worldbody>{moving}<replicate count="2" offset="1 0 0">'
                            '<include file="half.xml"/></replicate></worldbody></mujoco>', "twice.xml")
    attached = write(tmp_path, '<mujoco><asset><model name="p" file="sub.xml"/></asset><worldbody>'
                               f'{moving}<attach model="p" body="r" prefix="a_"/>'
                               '<attach model="p" body="r" prefix="b_"/></worldbody></mujoco>', "att.xml")
    for path, count in ((replicated, 30001), (included, 5002), (twice, 6001), (attached, 6003)):
        start = time.perf_counter()
        with pytest.raises(ModelError, match=rf"{count} <body> elements is more than the limit "
                                             r"of 5000 .*<replicate> copies and included and "
                                             r"attached files counted"):
            scleron.load_model(path)
        assert time.perf_counter() - start < 5
    once = write(tmp_path, '<mujoco><asset><model name="p" file="sub.xml"/></asset><worldbody>'
                           f'{moving}<attach model="p" body="r" prefix="a_"/></worldbody></mujoco>',
                 "once.xml")
    assert len(load_quiet(once).bodies) == 1         # (3001 bodies: under the limit, compiled)
    few = write(tmp_path, f'<mujoco><worldbody><replicate count="3" offset="0.3 0 0">{moving}'
                          '</replicate></worldbody></mujoco>', "few.xml")
    assert len(load_quiet(few).bodies) == 3          # (replicas of a moving body: MuJoCo's own)
