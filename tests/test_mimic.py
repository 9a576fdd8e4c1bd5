"""<mimic> joints honoured (docs/mimic.md): load_urdf(..., mimic="couple") gives a mimic joint
no coordinate of its own, q_m = a q + b of the joint it follows. Oracle: Pinocchio 4 built with
mimic=True (its RNEA and CRBA; its ABA refuses mimic joints, so forward dynamics is solved from
them) on a small URDF with couplings across branches, offsets and a prismatic-to-revolute
multiplier (tests/data/urdf/mimic_gripper.urdf); the robots of example-robot-data with <mimic>
are in tests/test_erd_walk.py. Errors: a mimic of a missing joint, a cycle, a spring."""
import os
import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions
from scleron.dynamics.tree import Tree
from scleron.errors import ModelError
from scleron.model.urdf import MimicWarning, load_urdf_string
from scleron.program import FloatAlgebra

pin = pytest.importorskip("pinocchio")

HERE = os.path.dirname(__file__)
GRIPPER = os.path.join(HERE, "data", "urdf", "mimic_gripper.urdf")
TOL = 1e-9
FUNCTIONS = ["forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces",
             "kinetic_energy", "potential_energy", "center_of_mass"]


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def full_q(q, floating):
    """The gripper's configuration with a coordinate per joint, its <mimic> lines written out:
    j2 = -1.5 j1 + 0.01, j3 = 0.5 j0 + 0.2, j4 = 20 j1 - 0.3."""
    base, (q0, q1) = list(q[:7 * floating]), q[7 * floating:]
    return np.array(base + [q0, q1, -1.5 * q1 + 0.01, 0.5 * q0 + 0.2, 20 * q1 - 0.3])


def pinocchio_reference(pm, pd, q, v, a, tau, floating):
    """Pinocchio's RNEA and CRBA with mimic joints; its ABA, energies and centre of mass refuse
    them: forward dynamics solved from M and nle, T = 1/2 v^T M v, V and the centre of mass
    from its model without mimic at the full configuration."""
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(pm, pd, q, v)
    plain = pin.buildModelFromUrdf(GRIPPER, *((pin.JointModelFreeFlyer(),) if floating else ()))
    data, qf = plain.createData(), full_q(q, floating)
    return {"inverse_dynamics": pin.rnea(pm, pd, q, v, a), "mass_matrix": M, "bias_forces": h,
            "forward_dynamics": np.linalg.solve(M, tau - h), "kinetic_energy": 0.5 * v @ M @ v,
            "potential_energy": pin.computePotentialEnergy(plain, data, qf),
            "center_of_mass": pin.centerOfMass(plain, data, qf)}


def ours(tree, q, v, a, tau):
    alg, q, v, a, tau = FloatAlgebra(), list(q), list(v), list(a), list(tau)
    return {"inverse_dynamics": recursions.inverse_dynamics(tree, alg, q, v, a),
            "mass_matrix": recursions.mass_matrix(tree, alg, q),
            "bias_forces": recursions.bias_forces(tree, alg, q, v),
            "forward_dynamics": recursions.forward_dynamics(tree, alg, q, v, tau),
            "kinetic_energy": recursions.kinetic_energy(tree, alg, q, v),
            "potential_energy": recursions.potential_energy(tree, alg, q),
            "center_of_mass": recursions.center_of_mass(tree, alg, q)}


@pytest.mark.parametrize("floating", [False, True])
def test_coupled_gripper_equals_pinocchio_with_mimic(floating, rng):
    model = scleron.load_model(GRIPPER, floating=floating, mimic="couple")
    root = (pin.JointModelFreeFlyer(),) if floating else ()
    pm = pin.buildModelFromUrdf(GRIPPER, *root, mimic=True)
    pd = pm.createData()
    tree = Tree(model)
    assert (model.nq, model.nv) == (tree.nq, tree.nv) == (pm.nq, pm.nv) == (2 + 7 * floating, 2 + 6 * floating)
    assert tree.joint_names == ["root_joint"] * floating + ["j0_base", "j1_finger_a"]
    assert tree.full.nv == tree.nv + 3
    for _ in range(3):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a, tau = (rng.uniform(-1, 1, pm.nv) for _ in range(3))
        ref, got = pinocchio_reference(pm, pd, q, v, a, tau, floating), ours(tree, q, v, a, tau)
        for f in FUNCTIONS:
            assert rel_err(got[f], ref[f]) < TOL, f


def test_independent_mimic_joints_warn_and_keep_their_coordinates():
    with pytest.warns(MimicWarning, match="3 <mimic> joints .*j2_finger_b"):
        model = scleron.load_model(GRIPPER)
    assert model.nv == 5 and all(j.mimic is None for j in model.joints)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scleron.load_model(GRIPPER, mimic="couple").nv == 2


def gripper_text(old, new):
    with open(GRIPPER) as f:
        text = f.read()
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize("old, new, words", [
    ('<mimic joint="j0_base"', '<mimic joint="j9_none"', "names joint 'j9_none', which does not exist"),
    ('<mimic joint="j0_base" multiplier="0.5"', '<mimic joint="j0_base" multiplier="x"',
     "mimic multiplier must be 1 number"),
    ('<mimic joint="j0_base"', '<mimic joint="j4_spin"', "<mimic> joints form a cycle"),
])
def test_bad_mimics_are_refused_naming_the_joint(old, new, words):
    text = gripper_text(old, new)
    if "cycle" in words:      # j3 -> j4 -> j1 is no cycle: close one j1 -> j3 -> j1
        text = text.replace('<axis xyz="0 1 0"/><limit lower="0" upper="0.05" effort="10" velocity="1"/>\n  </joint>',
                            '<axis xyz="0 1 0"/><limit lower="0" upper="0.05" effort="10" velocity="1"/>\n'
                            '    <mimic joint="j3_wrist"/>\n  </joint>', 1)
    with pytest.raises(ModelError) as e:
        load_urdf_string(text, "gripper.urdf", mimic="couple")
    assert "gripper.urdf:" in str(e.value) and "joint '" in str(e.value) and words in str(e.value)


def test_a_mimic_cycle_is_named_by_its_own_joints():
    """j1 mimics j2, which mimics itself: the error blamed j1 ("j1 -> j2 -> j2"), which is in
    no cycle (an outside tester)."""
    link = ('<link name="{}"><inertial><origin xyz="0.1 0 0"/><mass value="1.0"/><inertia ixx="0.01" '
            'iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    joint = ('<joint name="{}" type="revolute"><parent link="{}"/><child link="{}"/><origin xyz="0 0 0.5"/>'
             '<axis xyz="0 0 1"/><mimic joint="j2"/></joint>')
    text = ('<robot name="r">' + "".join(link.format(n) for n in ("base", "l1", "l2"))
            + joint.format("j1", "base", "l1") + joint.format("j2", "l1", "l2") + "</robot>")
    with pytest.raises(ModelError, match=r"joint 'j2'.*<mimic> joints form a cycle: j2 -> j2$"):
        load_urdf_string(text, "self.urdf", mimic="couple")


def test_a_mimic_of_no_joint_is_refused_only_where_it_would_be_used():
    """alex_psyonic_hands.urdf's <mimic joint="index_q1"> names no joint (the file's is
    'Left_index_q1'): Pinocchio loads the file, and scleron refused it even with mimic=
    'independent', which reads no <mimic> at all (an outside tester); a MimicWarning names it."""
    text = gripper_text('<mimic joint="j0_base"', '<mimic joint="j9_none"')
    with pytest.warns(MimicWarning, match=r"<mimic> of joint j\w+ -> j9_none names a joint that does not exist"):
        model = load_urdf_string(text, "gripper.urdf", mimic="independent")
    assert all(j.mimic is None for j in model.joints)
    with pytest.raises(ModelError, match="names joint 'j9_none', which does not exist"):
        load_urdf_string(text, "gripper.urdf", mimic="couple")


def test_a_mimic_on_a_fixed_joint_is_ignored_and_a_chain_is_composed():
    text = gripper_text('<mimic joint="j1_finger_a" multiplier="20" offset="-0.3"/>',
                        '<mimic joint="j3_wrist" multiplier="2" offset="0.1"/>')
    model = load_urdf_string(text, "gripper.urdf", mimic="couple")
    spin = next(j for j in model.joints if j.name == "j4_spin")
    assert spin.mimic == ("j0_base", 1.0, 2 * 0.2 + 0.1)       # 2 (0.5 q + 0.2) + 0.1
    fixed = gripper_text('name="j2_finger_b" type="prismatic"', 'name="j2_finger_b" type="fixed"')
    assert load_urdf_string(fixed, "g.urdf", mimic="couple").nv == 2


def test_functions_without_coupling_say_so():
    from scleron.dynamics import frames
    tree = Tree(scleron.load_model(GRIPPER, mimic="couple"))
    with pytest.raises(ModelError, match="not available yet for a model with mimic joints"):
        frames.frame_placements(tree, FloatAlgebra(), [0.1, 0.02])

    with pytest.raises(ModelError, match=r"load the URDF with mimic='independent' \(--mimic independent\)"):
        frames.frame_placements(tree, FloatAlgebra(), [0.1, 0.02])


def test_all_functions_of_a_coupled_tree_are_those_it_can_have(tmp_path):
    """functions="all" on a mimic-coupled tree: each function whose spec says with_mimic, and
    each builds; every other function is refused by name (an outside reviewer: "all" had been
    the defaults, without minv, dint and ddiff, which build when named)."""
    from scleron.functions import FUNCTIONS
    from scleron.pipeline import selected_functions
    model = scleron.load_model(GRIPPER, mimic="couple")
    tree = Tree(model)
    got = selected_functions("all", tree)
    assert set(selected_functions(None, tree)) < set(got)
    assert {"mass_matrix_inverse", "integrate_jacobians", "difference_jacobians"} <= set(got)
    scleron.generate(model, str(tmp_path / "all"), compile=False, functions="all")
    for name in sorted(set(FUNCTIONS) - set(got)):
        with pytest.raises(ModelError, match="not available yet for a model with mimic joints"):
            FUNCTIONS[name].program(tree)


MIMIC_YAML = """\
name: mim
bodies:
  - {name: a, parent: world, joint: {type: revolute, axis: [0, 0, 1]}, mass: 1.0, inertia: [0.1, 0.2, 0.2]}
  - {name: b, parent: a, mass: 0.5, com: [0.1, 0, 0], inertia: [0.1, 0.1, 0.1],
     joint: {type: revolute, axis: [0, 1, 0], xyz: [0.3, 0, 0], mimic: {joint: a_joint, multiplier: -0.5}}}
"""


def test_a_yaml_model_is_told_to_leave_out_its_mimic_entries(tmp_path):
    """The refusal of a function a coupled model does not have told a YAML model to load "the
    URDF with mimic='independent'", which YAML refuses (an outside tester)."""
    from scleron.dynamics import frames
    path = tmp_path / "mim.yaml"
    path.write_text(MIMIC_YAML)
    tree = Tree(scleron.load_model(str(path)))
    with pytest.raises(ModelError, match="leave out the joints' mimic: entries") as e:
        frames.frame_placements(tree, FloatAlgebra(), [0.1])
    assert "URDF" not in str(e.value)


def test_a_coupled_model_compiles_and_equals_its_reference(generated, rng):
    """The unrolled C of the coupled functions (M_r = G^T M G, its LDL^T for forward dynamics)
    equals the numeric reference, which equals Pinocchio above."""
    model, dyn = generated(GRIPPER, "mimic_gripper", load_options={"mimic": "couple"},
                           functions=FUNCTIONS)
    tree = Tree(model)
    assert (dyn.nq, dyn.nv) == (2, 2)
    for _ in range(3):
        q, v, a, tau = (rng.uniform(-1, 1, 2) for _ in range(4))
        want = ours(tree, q, v, a, tau)
        for f, args in (("inverse_dynamics", (q, v, a)), ("mass_matrix", (q,)),
                        ("bias_forces", (q, v)), ("forward_dynamics", (q, v, tau)),
                        ("kinetic_energy", (q, v)), ("potential_energy", (q,)),
                        ("center_of_mass", (q,))):
            assert rel_err(getattr(dyn, f)(*args), want[f]) < 1e-12, f
    # a function coupling cannot have yet: how to get it, not --functions +it, which codegen
    # refuses for this model (an outside tester)
    for attr in ("frame_jacobians", "forward_dynamics_derivatives", "frame_jacobian"):
        with pytest.raises(AttributeError, match=f"'{attr}' is not available yet for a model "
                                                 "with coupled mimic joints.*--mimic independent"):
            getattr(dyn, attr)
    with pytest.raises(ValueError, match="bind: 'com_jacobian' is not available yet for a model "
                                         "with coupled mimic joints.*--mimic independent"):
        dyn.bind("com_jacobian", np.zeros(2), np.zeros((3, 2)))


MIDDLE_MIMIC = """<robot name="middle_mimic">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><origin xyz="0.1 0 0"/><inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="2"/><origin xyz="0.1 0.05 0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"><inertial><mass value="1"/><origin xyz="0.1 0 0"/><inertia ixx="0.02" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.2 0 0"/><axis xyz="0 1 0"/><mimic joint="j1" multiplier="-0.5" offset="0.1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.2 0 0"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_a_mimic_joint_with_children_generates_by_default_what_coupling_has(tmp_path, generated, rng):
    """A mimic joint in the middle of a chain: the default functions are those a coupled tree
    has (frames and derivatives are not generated unasked, and refuse it when named), and they
    equal Pinocchio's with mimic=True (its RNEA, CRBA)."""
    path = tmp_path / "middle_mimic.urdf"
    path.write_text(MIDDLE_MIMIC)
    model, dyn = generated(str(path), "middle_mimic", load_options={"mimic": "couple"},
                           functions=None)                    # the default set
    assert set(dyn.FUNCTIONS) == set(FUNCTIONS) | {"integrate", "difference", "static_forces"}
    pm = pin.buildModelFromUrdf(str(path), mimic=True)
    pd = pm.createData()
    for _ in range(3):
        q, v, a = (rng.uniform(-1, 1, 2) for _ in range(3))
        assert rel_err(dyn.inverse_dynamics(q, v, a), pin.rnea(pm, pd, q, v, a)) < TOL
        assert rel_err(dyn.static_forces(q), pin.computeGeneralizedGravity(pm, pm.createData(), q)) < TOL
        # (a fresh Data: Pinocchio 4's crba with mimic joints on the Data its rnea just used
        # gave an off-diagonal entry that neither its own rnea nor ours has)
        M = pin.crba(pm, pm.createData(), q)
        assert rel_err(dyn.mass_matrix(q), np.triu(M) + np.triu(M, 1).T) < TOL
    with pytest.raises(ModelError, match="not available yet for a model with mimic joints"):
        scleron.generate(model, str(tmp_path / "jacobians"), functions=["frame_jacobians"])


def coupled_chain(n, every):
    """A URDF chain of n hinges, every `every`-th one mimicking its parent joint."""
    inertial = ('<inertial><origin xyz="0.1 0 0"/><mass value="1"/><inertia ixx="0.01" iyy="0.02" '
                'izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial>')
    links = "".join(f'<link name="l{k}">{inertial}</link>' for k in range(n + 1))
    joints = "".join(
        f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
        f'<origin xyz="0.2 0 0"/><axis xyz="0 {k % 2} {1 - k % 2}"/><limit effort="1" lower="-3" '
        f'upper="3" velocity="1"/>' + (f'<mimic joint="j{k - 1}" multiplier="0.5"/>' if k % every == 0 else "")
        + "</joint>" for k in range(1, n + 1))
    return f'<robot name="chain{n}">{links}{joints}</robot>'


def test_a_coupled_tree_gets_the_unrolled_forms(tmp_path):
    """From an outside tester: a 16-coordinate coupled chain's M^-1 reached the loop form and an
    internal IndexError, a 35-coordinate one failed default codegen (the mass matrix's 'auto'
    loop form). A coupled tree gets the unrolled forms; an option asking for another names it."""
    from scleron.pipeline import build_sources
    path = tmp_path / "chain40.urdf"
    path.write_text(coupled_chain(40, 8))
    model = scleron.load_model(str(path), mimic="couple")
    assert model.nv == 35
    files, report, _ = build_sources(model, "c40", functions=["mass", "minv"])
    assert set(report.forms) == {"mass_matrix", "mass_matrix_inverse"}
    assert set(report.forms.values()) == {"unrolled"}, report.forms
    with pytest.raises(ModelError, match=r"mass_matrix: the form asked for \(loop form.*--mass-matrix unrolled"):
        build_sources(model, "c40", functions=["mass"], mass_matrix="loop")
    with pytest.raises(ModelError, match=r"forward_dynamics: the form asked for \(Method II.*--method 1"):
        build_sources(model, "c40", functions=["fd"], method=2)
    from scleron.dynamics import derivatives
    tree, alg = Tree(model), FloatAlgebra()
    q = list(np.random.default_rng(3).uniform(-1, 1, model.nq))
    Minv = np.array(derivatives.mass_matrix_inverse(tree, alg, q), dtype=float)
    M = np.array(recursions.mass_matrix(tree, alg, q), dtype=float)
    assert np.abs(Minv @ M - np.eye(model.nv)).max() < 1e-10


def test_show_tree_says_what_a_mimic_joint_follows():
    from scleron.show import tree_text
    text = tree_text(scleron.load_model(GRIPPER, mimic="couple"))
    assert "[j2_finger_b: prismatic, mimics j1_finger_a: q = -1.5 q_j1_finger_a + 0.01]" in text
    assert "[j4_spin: revolute, mimics j1_finger_a: q = 20 q_j1_finger_a - 0.3]" in text
    assert "[j0_base: revolute, 1 DOF]" in text
    from scleron.show import joint_text            # and a joint's own page (a tester: "1 DOF")
    model = scleron.load_model(GRIPPER, mimic="couple")
    spin = next(j for j in model.joints if j.name == "j4_spin")
    assert joint_text(model, spin, "S").splitlines()[0].endswith(
        "mimics j1_finger_a: q = 20 q_j1_finger_a - 0.3 (that q is q1 below)")


def test_draw_kinematics_and_show_body_of_a_coupled_model(tmp_path, capsys):
    """An outside tester: `scleron draw --mimic couple` failed on every coupled model (its
    kinematics read a coordinate per joint) and `show --function fd --body <a mimic joint's
    body>` was an internal IndexError (it looked among the reduced tree's bodies)."""
    from scleron.cli import main
    from scleron.kinematics import Kinematics
    coupled = scleron.load_model(GRIPPER, mimic="couple")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MimicWarning)
        independent = scleron.load_model(GRIPPER)
    q = np.random.default_rng(3).uniform(-1, 1, coupled.nq)
    full = []
    for j in independent.joints:       # each joint's coordinate, a mimic's from its target
        mimic = next(c.mimic for c in coupled.joints if c.name == j.name)
        if mimic is None:
            k = [c.name for c in coupled.joints if c.mimic is None].index(j.name)
            full.append(q[k])
        else:
            k = [c.name for c in coupled.joints if c.mimic is None].index(mimic[0])
            full.append(mimic[1] * q[k] + mimic[2])
    np.testing.assert_allclose(Kinematics(coupled).poses(q), Kinematics(independent).poses(full),
                               rtol=0, atol=1e-15)
    assert main(["draw", GRIPPER, "--mimic", "couple", "-o", str(tmp_path / "g.png")]) == 0
    mimic_body = next(b.name for b, j in zip(coupled.bodies, coupled.joints) if j.mimic is not None)
    capsys.readouterr()
    assert main(["show", GRIPPER, "--mimic", "couple", "--function", "fd", "--body", mimic_body]) == 0
    assert f"showing body {mimic_body}" in capsys.readouterr().out


# ---- found by an outside tester (2026-11-27) -------------------------------------------------------
def test_a_coupled_model_round_trips_through_yaml(tmp_path):
    """dump_yaml wrote no mimic (YAML had no form of it): the file reloaded as another model,
    nq 2 -> 5 on a gripper. A joint's `mimic: {joint, multiplier, offset}` now."""
    from scleron.model.yaml_loader import dump_yaml
    model = scleron.load_model(GRIPPER, mimic="couple")
    model.q0 = np.array([0.2, 0.01])
    dump_yaml(model, tmp_path / "g.yaml")
    again = scleron.load_model(tmp_path / "g.yaml")
    assert again.nq == model.nq and again.q0.tolist() == [0.2, 0.01]
    assert [j.mimic for j in again.joints] == [j.mimic for j in model.joints]
    q = [0.3, -0.02]
    assert np.allclose(recursions.mass_matrix(Tree(again), FloatAlgebra(), q),
                       recursions.mass_matrix(Tree(model), FloatAlgebra(), q), rtol=0, atol=1e-14)


def yaml_mimic(mimic, initial="{a: 0.1}"):
    return f"""name: m
bodies:
  - {{name: l1, parent: world, mass: 1, com: [0.1, 0, 0], inertia: [0.01, 0.01, 0.01],
     joint: {{name: a, type: revolute, axis: [0, 0, 1]}}}}
  - {{name: l2, parent: l1, mass: 1, com: [0.1, 0, 0], inertia: [0.01, 0.01, 0.01],
     joint: {{name: b, type: revolute, axis: [0, 1, 0], xyz: [0.3, 0, 0], mimic: {mimic}}}}}
initial: {{q: {initial}}}
"""


@pytest.mark.parametrize("mimic, problem", [
    ("{joint: nowhere}", "it mimics joint 'nowhere', which the model does not have"),
    ("{joint: a, gain: 2}", "unknown key 'gain' in mimic"),
    ("{multiplier: 2}", "mimic lacks the required key 'joint'"),
    ("{joint: a, offset: x}", "mimic's offset must be a number"),
])
def test_yaml_mimics_are_checked(tmp_path, mimic, problem):
    (tmp_path / "m.yaml").write_text(yaml_mimic(mimic))
    with pytest.raises(ModelError, match=problem):
        scleron.load_model(tmp_path / "m.yaml")


def test_a_yaml_mimic_joint_takes_no_initial_value(tmp_path):
    (tmp_path / "m.yaml").write_text(yaml_mimic("{joint: a, multiplier: -1}", "{b: 0.1}"))
    with pytest.raises(ModelError, match="initial q of joint 'b'.*it mimics joint 'a' and has no "
                                         "coordinate of its own"):
        scleron.load_model(tmp_path / "m.yaml")


def test_a_simulated_coupled_model_names_its_own_coordinates(tmp_path):
    """The trajectory of a coupled gripper had 2 columns and 5 coordinate names: the plot
    labelled the second column with a mimic joint's name."""
    model = scleron.load_model(GRIPPER, mimic="couple")
    traj = scleron.simulate(model, duration=0.002, dt=0.001, integrator="rk4")
    followers = {j.name for j in model.joints if j.mimic is not None}
    assert traj.q.shape[1] == 2 and list(traj.coordinate_names) == Tree(model).coordinate_names()
    assert not followers & set(traj.coordinate_names)


def test_an_overflowing_mimic_multiplier_is_named(tmp_path):
    """A mimic multiplier of 1e300 overflowed the dynamics, and the message listed the bodies'
    numbers only, all small (an outside tester): it names the multiplier and its joint."""
    path = tmp_path / "huge.yaml"
    path.write_text("name: t\nbodies:\n"
                    "  - {name: a, parent: world, joint: {name: j1, axis: [0, 0, 1]}, mass: 1, "
                    "com: [0.5, 0, 0], inertia: [0.1, 0.1, 0.1]}\n"
                    "  - {name: b, parent: a, joint: {name: j2, axis: [0, 1, 0], xyz: [1, 0, 0], "
                    "mimic: {joint: j1, multiplier: 1e300}}, mass: 1, com: [0.5, 0, 0], "
                    "inertia: [0.1, 0.1, 0.1]}\n")
    with pytest.raises(ModelError, match=r"overflow double precision .*mimic multiplier or offset "
                                         r"up to 1e\+300 \(joint 'j2'\)"):
        scleron.generate(scleron.load_model(str(path)), str(tmp_path / "out"), compile=False)


def test_codegen_offers_a_coupled_model_only_what_it_can_add(tmp_path, capsys):
    """`codegen` named the functions a default generation left out, 13 of them on a coupled
    model, of which 12 are refused when added (an outside tester); it now names only those a
    coupled tree has (minv)."""
    from scleron.cli import main
    assert main(["codegen", GRIPPER, "--mimic", "couple", "-o", str(tmp_path / "g"),
                 "--no-compile"]) == 0
    left = [line for line in capsys.readouterr().out.splitlines() if "not generated" in line]
    assert left == ["not generated by default for this model: mass_matrix_inverse (minv); add "
                    "them with --functions +NAME,..."]


@pytest.mark.parametrize("options, hint", [({"method": 2}, "--method 1, the default"),
                                           ({"mass_matrix": "loop"}, "--mass-matrix unrolled")])
def test_a_loop_form_asked_for_a_coupled_tree_says_which_option_unrolls(options, hint):
    from scleron.pipeline import build_sources
    model = scleron.load_model(GRIPPER, mimic="couple")
    with pytest.raises(ModelError, match=rf"not available yet for a model with mimic joints "
                                         rf".*the unrolled form is \({hint}"):
        build_sources(model, "gripper", functions=["fd", "mass"], **options)
