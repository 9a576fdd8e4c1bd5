"""Body frames turned about their joints' axes (dynamics.body_frames) and near-exact placements
snapped (dynamics.tree.constant_placement): the code gets sparser, the results stay the model's.
Oracles: the same model without turns (the numeric reference, nothing compiled) and Pinocchio
on example-robot-data's so101, whose CAD frames are turned by 1.5708 (not pi/2) and 3.14159."""
import math

import numpy as np
import pytest

import scleron
from scleron.dynamics import frames as F
from scleron.dynamics import recursions
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.model.yaml_loader import load_yaml_string

from conftest import robots_dir

ALG = FloatAlgebra()
TOL = 1e-10


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def cad_chain(tmp_path):
    """Four hinges whose link frames are turned about the hinge axes by 1.5708 and 3.14159,
    a slider, and a tool frame on the last body."""
    text = """name: cad
gravity: [0, 0, -9.81]
bodies:
  - {name: a, parent: world, joint: {name: ja, type: revolute, axis: [0, 0, 1], xyz: [0, 0, 0.1]},
     mass: 1.0, com: [0.1, 0.02, 0], inertia: {ixx: 0.01, iyy: 0.02, izz: 0.03, ixy: 0.001, ixz: 0, iyz: 0}}
  - {name: b, parent: a, joint: {name: jb, type: revolute, axis: [0, 0, 1], xyz: [0.3, 0.01, 0],
     rpy: [0, 0, 1.5708]}, mass: 0.8, com: [0.15, 0, 0.01], inertia: {ixx: 0.01, iyy: 0.02, izz: 0.02, ixy: 0, ixz: 0.002, iyz: 0}}
  - {name: c, parent: b, joint: {name: jc, type: revolute, axis: [0, 0, 1], xyz: [0.25, 0, 0],
     rpy: [0, 0, 3.14159]}, mass: 0.6, com: [0.1, 0, 0], inertia: [0.004, 0.01, 0.01]}
  - {name: d, parent: c, joint: {name: jd, type: prismatic, axis: [0, 0, 1], xyz: [0.2, 0, 0],
     rpy: [0, 0, -1.5708]}, mass: 0.3, com: [0, 0, 0.05], inertia: [0.001, 0.001, 0.002],
     frames: [{name: tool, xyz: [0.02, 0.01, 0.1], rpy: [0.3, 0, 0]}]}
"""
    path = tmp_path / "cad.yaml"
    path.write_text(text)
    return scleron.load_model(str(path))


def multiplications(R):
    return sum(1 for row in R for x in row if x not in (0.0, 1.0, -1.0))


def test_turned_frames_fold_cad_placements_and_keep_every_result(tmp_path, rng):
    model = cad_chain(tmp_path)
    turned, plain = Tree(model), Tree(model, turn_frames=False)
    assert any(not np.allclose(C, np.eye(3)) for C in turned.body_turns)
    # the placements of b, c, d were Rz(1.5708), Rz(3.14159), Rz(-1.5708): now signed permutations
    # (frames turned about the hinge axes, or the turn moved into the hinge's motion)
    for b in turned.bodies:
        assert multiplications(b.placement[0]) == 0, b.name
    # the plain tree's Rz(+-1.5708) keep cos = -3.7e-6 and sin = 1 - 6.7e-12 (snapping the sin
    # alone would leave no rotation: body_frames.snapped_rotation), Rz(3.14159) likewise
    assert sum(multiplications(b.placement[0]) for b in plain.bodies[1:]) == 12
    for b in plain.bodies + turned.bodies:
        R = np.asarray(b.placement[0])
        assert np.abs(R.T @ R - np.eye(3)).max() < 1e-15, b.name
    assert_same_results(turned, plain, model.nv, rng)


def test_a_placement_turned_about_its_hinge_moves_the_turn_into_the_motion(rng):
    """so101's wrist roll: the placement's rotation is Rx(-pi/2) Rz(0.0487) (rpy -pi/2, 0.0487,
    0), a turn about the hinge's own axis after a right angle. The turn leaves the placement for the hinge's motion,
    Q(q) Rot(z, 0.0487) = Q(q + 0.0487) (body_frames.offset_motions): the placement becomes a
    signed permutation, the body's frame (its inertia, its child's placement, its user frame)
    stays the model's, and every result stays the plain tree's."""
    model = scleron.Model("offset")
    model.add_body("a", joint="revolute", axis=[0, 0, 1], xyz=[0, 0, 0.1], com=[0.1, 0.02, 0.0],
                   inertia=[0.01, 0.02, 0.03])
    model.add_body("b", "a", joint="revolute", axis=[0, 0, 1], xyz=[0.3, 0.0, 0.0],
                   rpy=[-math.pi / 2, 0.0487, 0.0], com=[0.1, 0.0, 0.01], inertia=[0.01, 0.02, 0.02])
    model.add_frame("tool", "b", xyz=[0.02, 0.01, 0.1], rpy=[0.3, 0, 0])
    model.add_body("c", "b", joint="revolute", axis=[0, 0, 1], xyz=[0.2, 0.0, 0.0],
                   rpy=[math.pi / 2, 0.0, 0.0], com=[0.05, 0.0, 0.0], inertia=[0.001, 0.002, 0.002])
    tree, plain = Tree(model), Tree(model, turn_frames=False)
    b, b0 = tree.bodies[1], plain.bodies[1]
    assert multiplications(b0.placement[0]) == 4
    assert multiplications(b.placement[0]) == 0 and b.turn_after is not None
    assert np.allclose(tree.body_turns[1], np.eye(3)) and np.allclose(b.inertia, b0.inertia)
    assert np.allclose(tree.bodies[2].placement[0], plain.bodies[2].placement[0])
    tool, tool0 = ([f for f in t.frames if f.name == "tool"][0] for t in (tree, plain))
    assert np.allclose(tool.placement[0], tool0.placement[0])
    assert_same_results(tree, plain, model.nv, rng)


def assert_same_results(tree, plain, nv, rng):
    """FD, ID, M and every frame function of two trees of one model agree at random states."""
    for _ in range(3):
        q, qd, qdd, tau = (list(rng.uniform(-1, 1, nv)) for _ in range(4))
        for fn, args in ((recursions.forward_dynamics, (q, qd, tau)),
                         (recursions.inverse_dynamics, (q, qd, qdd)),
                         (recursions.mass_matrix, (q,))):
            assert rel_err(fn(tree, ALG, *args), fn(plain, ALG, *args)) < TOL, fn.__name__
        assert rel_err(F.frame_placements(tree, ALG, q), F.frame_placements(plain, ALG, q)) < TOL
        for ref in ("local", "world", "local_world_aligned"):
            assert rel_err(F.frame_jacobians(tree, ALG, q, ref),
                           F.frame_jacobians(plain, ALG, q, ref)) < TOL, ref
            assert rel_err(F.frame_accelerations(tree, ALG, q, qd, qdd, ref),
                           F.frame_accelerations(plain, ALG, q, qd, qdd, ref)) < TOL, ref
        assert rel_err(F.com_jacobian(tree, ALG, q), F.com_jacobian(plain, ALG, q)) < TOL


def test_frames_slid_along_their_axes_keep_every_result(rng):
    """A hinge whose centre of mass and child sit 0.05 up its axis: its frame slides up by 0.05
    (the child's placement and the inertia lose their axial entries); the slider's frame moves
    along its own axis. The dynamics, a constant wrench (its moment re-taken about the new origin),
    a user frame and the frame functions stay the unslid tree's."""
    model = scleron.Model("slid")
    model.add_body("a", joint="revolute", axis=[0, 0, 1], xyz=[0, 0, 0.1], com=[0.1, 0.0, 0.05],
                   inertia=[0.01, 0.02, 0.03])
    model.add_frame("tool", "a", xyz=[0.02, 0.01, 0.1], rpy=[0.3, 0, 0])
    model.add_body("b", "a", joint="prismatic", axis=[1, 0, 0], xyz=[0.3, 0, 0.05], com=[0.2, 0.0, 0.0],
                   inertia=[0.01, 0.02, 0.02], wrench=[0.1, -0.2, 0.3, 1.0, 2.0, -0.5])
    model.add_body("c", "b", joint="revolute", axis=[0, 1, 0], xyz=[0.45, 0.0, 0.0], rpy=[0.2, 0, 0],
                   com=[0.0, 0.1, 0.0], inertia=[0.004, 0.01, 0.01])
    slid, plain = Tree(model), Tree(model, turn_frames=False)
    assert np.allclose(slid.body_slides[0], [0, 0, 0.05]) and slid.body_slides[1][0] != 0
    assert slid.bodies[1].placement[1][2] == 0.0 and slid.bodies[0].inertia[1][3] == 0.0   # m c_z
    assert_same_results(slid, plain, 3, rng)


def test_a_slide_beyond_floats_is_not_taken():
    """A hinge placed 1e155 m away (found by tests/test_fuzz.py): the slide that zeroes its axial
    coordinate would move the inertia by 5e154 m, whose square overflows (a RuntimeWarning, and
    inf or NaN in the cost that picks the slide); it is not taken, no floating-point warning is
    raised, and the code is generated."""
    model = scleron.Model("far")
    model.add_body("b0", joint="revolute", axis=[0, 0, 1], xyz=[1e155, 0, 5e154],
                   inertia=[1 / 6, 1 / 6, 1 / 6])
    with np.errstate(all="raise"):
        tree = Tree(model)
    assert np.array_equal(tree.body_slides[0], np.zeros(3))
    files, _, _ = scleron.pipeline.build_sources(model, functions=["forward_dynamics"])
    assert "far_forward_dynamics" in files["far_dynamics.c"]


def test_a_nanometre_custom_joint_off_its_axis_is_not_turned():
    """A reviewer: a custom joint turning about z after a 0.03 nm offset, in a nanometre model,
    passed for one whose axis runs through its frame (the offset was compared with 1e-10 m),
    and turning its body put M 3 % off. Oracle: the same model without turned frames, and the
    model a billion times larger, scaled back (M scales as m L^2)."""
    def model(s):
        return load_yaml_string(f"""
name: nano
gravity: [0, 0, 0]
bodies:
  - {{name: b0, parent: world, mass: 1.0e-21, com: [{0.5 * s}, {0.1 * s}, 0],
     inertia: [{1e-21 * s * s}, {1e-21 * s * s}, {1e-21 * s * s}],
     joint: {{name: j0, type: revolute, axis: [0, 0, 1], rpy: [0.2, 0.1, 0.5]}}}}
  - {{name: b1, parent: b0, mass: 1.0e-21, com: [{0.4 * s}, {0.2 * s}, {0.1 * s}],
     inertia: [{1e-21 * s * s}, {2e-21 * s * s}, {3e-21 * s * s}],
     joint: {{name: j1, type: custom, coordinates: [a], rotation: [[z, a]],
             translation: ["{0.03 * s}", "0", "0"], xyz: [{s}, 0, 0], rpy: [0.3, 0.4, 0.7]}}}}
""", "nano.yaml")
    q = [0.3, -0.7]
    nano = model(1e-9)
    M = np.array(recursions.mass_matrix(Tree(nano), FloatAlgebra(), q))
    kept = np.array(recursions.mass_matrix(Tree(nano, turn_frames=False), FloatAlgebra(), q))
    big = np.array(recursions.mass_matrix(Tree(model(1.0)), FloatAlgebra(), q)) * 1e-18
    assert np.abs(M - kept).max() <= 1e-12 * np.abs(kept).max()
    assert np.abs(M - big).max() <= 1e-12 * np.abs(big).max()


def test_a_custom_joints_rounding_noise_does_not_stop_its_turn():
    """A reviewer: with the offset compared with the translation's own size alone, a custom
    joint's 0.2 cos(1.5707963267948966) = 1.2e-17 m counted as an offset off its axis, and its
    body was no longer turned (forward dynamics 586 -> 616 multiplications and additions).
    Below the model's length snap it is rounding: the same turns as with an exact 0."""
    def model(x):
        joint = ('{name: j%d, type: custom, coordinates: [c%d], rotation: [[z, c%d]], '
                 'translation: ["%s", "0", "0"], xyz: [0.3, 0, 0], rpy: [1.5708, 0, 0.%d]}')
        bodies = "".join(f"""
  - {{name: b{k}, parent: {'world' if k == 0 else f'b{k - 1}'}, mass: 1.0, com: [0.2, 0.1, 0.1],
     inertia: [0.1, 0.2, 0.3], joint: {joint % (k, k, k, x, k + 3)}}}""" for k in range(3))
        return load_yaml_string("name: noise\nbodies:" + bodies, "noise.yaml")
    noisy, exact = Tree(model("0.2*cos(1.5707963267948966)")), Tree(model("0"))
    assert any(not np.allclose(C, np.eye(3)) for C in exact.body_turns)
    for a, b in zip(noisy.body_turns, exact.body_turns):
        assert np.allclose(a, b, atol=1e-12)


def test_a_hinge_off_its_frames_origin_is_not_turned(rng):
    """A custom joint turning about z after a constant offset (0.3, 0.1, 0) has S = [e_z; 0], but
    its axis does not pass through the parent-side origin, so a turn about z does not commute with
    it (turning it anyway moved tau by 3.3). Its frame and motion stay; the hinges around it still
    turn, or move their placements' turns into their motions."""
    model = scleron.Model("offset")
    model.add_body("a", joint="revolute", axis=[0, 0, 1], com=[0.1, 0.2, 0.3], rpy=[0.3, 0.2, 0.1])
    model.add_body("b", "a", joint="custom", coordinates=["x"], rotation=[["z", "x"]],
                   translation=["0.3", "0.1", "0"], com=[0.2, 0.1, 0.05],
                   inertia=[[2, .1, .2], [.1, 2, .3], [.2, .3, 3]], rpy=[0.4, 0.1, 0.2], xyz=[0.1, 0.2, 0.3])
    model.add_body("c", "b", joint="revolute", axis=[1, 0, 0], com=[0.1, 0, 0], rpy=[0.5, 0.2, 0.3],
                   xyz=[0.2, 0.3, 0.1])
    turned, plain = Tree(model), Tree(model, turn_frames=False)
    assert np.array_equal(turned.body_turns[1], np.eye(3)) and turned.bodies[1].turn_after is None
    for k in (0, 2):
        assert not np.allclose(turned.body_turns[k], np.eye(3)) or turned.bodies[k].turn_after is not None
    for _ in range(3):
        q, qd, qdd = (list(rng.uniform(-1, 1, 3)) for _ in range(3))
        assert rel_err(recursions.inverse_dynamics(turned, ALG, q, qd, qdd),
                       recursions.inverse_dynamics(plain, ALG, q, qd, qdd)) < TOL


def test_generated_code_of_a_cad_chain_equals_the_plain_tree(tmp_path, generated, rng):
    model = cad_chain(tmp_path)
    _, dyn = generated(str(tmp_path / "cad.yaml"), "cad_turned", functions=["fd", "id", "frame_placements"])
    plain = Tree(model, turn_frames=False)
    for _ in range(3):
        q, qd, tau = (rng.uniform(-1, 1, model.nv) for _ in range(3))
        assert rel_err(dyn.forward_dynamics(q, qd, tau),
                       recursions.forward_dynamics(plain, ALG, list(q), list(qd), list(tau))) < TOL
        assert rel_err(dyn.frame_placements(q), F.frame_placements(plain, ALG, list(q))) < TOL


def test_near_exact_rotations_are_snapped():
    """kinova's rpy are pi/2 and pi to 11 digits: every placement folds to a signed permutation."""
    base = robots_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed")
    tree = Tree(scleron.load_model(f"{base}/kinova_description/robots/kinova.urdf"))
    for b in tree.bodies:
        if b.placement is not None:
            assert multiplications(b.placement[0]) == 0, b.name


def chain_urdf(n, rpy):
    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><origin xyz="0 0.05 0"/>'
                    '<inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/>'
                    '</inertial></link>' for i in range(n + 1))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/>'
                     f'<child link="l{i + 1}"/><origin xyz="0 0.1 0.02" rpy="{rpy} 0 0"/>'
                     '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/>'
                     '</joint>' for i in range(n))
    return f'<robot name="chain">{links}{joints}</robot>'


def test_snapped_rotations_stay_within_a_budget_along_a_chain(tmp_path, rng):
    """40 joints at pi/2 + 9.5e-11 rad, each snapped to pi/2, moved the tip's frame by 3.8e-9
    (an outside tester): a model snaps only while the turns its snaps make sum to at most
    SNAP_BUDGET from the root to every body and frame; 7 of kinova's 4.9e-12 still snap."""
    from scleron.dynamics.tree import SNAP_BUDGET, SNAP_ROTATION, rotation_snap
    pin = pytest.importorskip("pinocchio")
    for n, snaps in ((1, True), (40, False)):
        path = tmp_path / f"chain{n}.urdf"
        path.write_text(chain_urdf(n, "1.57079632689"))
        model = scleron.load_model(str(path))
        assert (rotation_snap(model) == SNAP_ROTATION) is snaps
        tree = Tree(model)
        pm = pin.buildModelFromUrdf(str(path))
        pd = pm.createData()
        q = rng.uniform(-1, 1, pm.nq)
        pin.framesForwardKinematics(pm, pd, q)
        tip = [f.name for f in tree.frames].index(f"l{n}")
        P = F.frame_placements(tree, ALG, list(q))[tip]
        assert rel_err(P, pd.oMf[pm.getFrameId(f"l{n}")].homogeneous) < (SNAP_BUDGET if snaps
                                                                          else 1e-13)
    # 300 joints at pi/2 + 9e-13 rad: below the turned placements' own snap (body_frames.
    # TURNED), which followed the model's (a reviewer: the tip 2.7e-10 off where none snapped)
    path = tmp_path / "chain300.urdf"
    path.write_text(chain_urdf(300, "1.5707963267958"))
    tree = Tree(scleron.load_model(str(path)), ["l300"])
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, np.zeros(pm.nq))
    P = np.array(F.frame_placements(tree, ALG, [0.0] * pm.nq), dtype=float)[0]
    assert np.abs(P[:3, :3] - pd.oMf[pm.getFrameId("l300")].rotation).max() < 1e-12
    base = robots_dir()
    if base is not None:
        kinova = scleron.load_model(f"{base}/kinova_description/robots/kinova.urdf")
        assert rotation_snap(kinova) == SNAP_ROTATION


def test_so101_with_turned_frames_equals_pinocchio(rng):
    pin = pytest.importorskip("pinocchio")
    base = robots_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed")
    path = f"{base}/so_arm_description/urdf/so101.urdf"
    tree = Tree(scleron.load_model(path))
    assert sum(not np.allclose(C, np.eye(3)) for C in tree.body_turns) >= 2
    pm = pin.buildModelFromUrdf(path)
    pd = pm.createData()
    ids = [pm.getFrameId(f.name) for f in tree.frames]
    swap = lambda m: np.concatenate([np.asarray(m)[3:], np.asarray(m)[:3]])
    refs = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    for _ in range(3):
        q, qd, tau = (rng.uniform(-1.5, 1.5, pm.nv) for _ in range(3))
        pin.forwardKinematics(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, q)
        assert rel_err(F.frame_placements(tree, ALG, list(q)), [pd.oMf[i].homogeneous for i in ids]) < 1e-9
        for ref, pref in refs.items():
            assert rel_err(F.frame_jacobians(tree, ALG, list(q), ref),
                           [swap(pin.getFrameJacobian(pm, pd, i, pref)) for i in ids]) < 1e-9, ref
        assert rel_err(recursions.forward_dynamics(tree, ALG, list(q), list(qd), list(tau)),
                       pin.aba(pm, pd, q, qd, tau)) < 1e-9
        assert rel_err(recursions.mass_matrix(tree, ALG, list(q)), pin.crba(pm, pd, q)) < 1e-9


def test_snapped_rotations_stay_rotations():
    """pi/2 to 11 digits folds to the exact right angle; 1.57079 keeps its cos = 6.3e-6 and its
    sin = 1 - 2e-11 (snapped alone, that sin would scale the rotation); a rotation by 1.4e-5
    keeps its cos = 1 - 9.8e-11."""
    from scleron.dynamics.body_frames import rotation_about, snapped_rotation
    x = np.array([1.0, 0.0, 0.0])
    R = snapped_rotation(rotation_about(x, 1.57079632679))
    assert np.array_equal(R, [[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    for angle in (1.57079, 1.4e-5, -3.14159):
        R0 = rotation_about(x, angle)
        R = snapped_rotation(R0)
        assert np.abs(R - R0).max() <= 1e-15, angle
        assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-15, angle


def test_chains_of_small_turns_equal_pinocchio(tmp_path, rng):
    """Twelve hinges placed by rpy (1.4e-5, 1.4e-5, 1.4e-5) or (1.57079, 0, 1.4e-5): every
    placement keeps its geometry, inverse dynamics and frames agree with Pinocchio to rounding
    (1e-9 along such a chain when near-1 entries were snapped one by one)."""
    pin = pytest.importorskip("pinocchio")
    links = ['<link name="l0"/>']
    for i in range(1, 13):
        rpy = "1.4e-5 1.4e-5 1.4e-5" if i % 3 else "1.57079 0 1.4e-5"
        links.append(f'<link name="l{i}"><inertial><origin xyz="0.15 0.01 0"/><mass value="1.0"/>'
                     f'<inertia ixx="0.002" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        links.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<origin xyz="{0.3 if i > 1 else 0} 0 0" rpy="{rpy}"/><axis xyz="0 {i % 2} {1 - i % 2}"/>'
                     f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    path = tmp_path / "small_turns.urdf"
    path.write_text('<robot name="small_turns">' + "".join(links) + "</robot>")
    tree = Tree(scleron.load_model(str(path)))
    for b in tree.bodies:
        R = np.asarray(b.placement[0])
        assert np.abs(R.T @ R - np.eye(3)).max() < 1e-15, b.name
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    ids = [pm.getFrameId(f.name) for f in tree.frames]
    for _ in range(3):
        q, qd, qdd = (rng.uniform(-1.0, 1.0, pm.nv) for _ in range(3))
        pin.framesForwardKinematics(pm, pd, q)
        assert rel_err(recursions.inverse_dynamics(tree, ALG, list(q), list(qd), list(qdd)),
                       pin.rnea(pm, pd, q, qd, qdd)) < 1e-13
        assert rel_err(F.frame_placements(tree, ALG, list(q)), [pd.oMf[i].homogeneous for i in ids]) < 1e-13


def test_a_turned_rods_zero_moment_stays_zero_and_a_thin_ones_stays():
    """snapped_inertia: a rod's tensor 1 - u u^T turned so that u is x leaves about -5e-17 on its
    zero moment, of either sign (kept, it read as an inertia that is not positive: a reviewer),
    while a thin rod's moment of 1e-12 of the scale is geometry (it was snapped: M 25 % off
    Pinocchio's; an outside tester)."""
    from scleron.dynamics.body_frames import snapped_inertia
    from scleron.model.model import Inertia
    for deg in np.linspace(1, 89, 60):
        u = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
        R = np.array([u, [-u[1], u[0], 0.0], [0.0, 0.0, 1.0]])
        turned = R @ (np.eye(3) - np.outer(u, u)) @ R.T
        assert np.array(snapped_inertia(Inertia(1.0, np.zeros(3), turned).spatial()))[0, 0] == 0.0
    thin = np.diag([1e-12, 1.0, 1.0])
    assert np.array(snapped_inertia(Inertia(1.0, np.zeros(3), thin).spatial()))[0, 0] == 1e-12
