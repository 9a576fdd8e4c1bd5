"""Inertias: point masses and massless links are valid bodies, impossible inertias are not, and a
model whose mass matrix is singular is refused with the joint named (issue 9's defects).

Oracles: Pinocchio's crba on example-robot-data's icub_reduced.urdf (it accepts the point
masses), and M = m r^2 by hand for a point mass on an arm.
"""
import math
import os
import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.checks import (check_model_dynamics, check_nonsingular, coupled_blocks,
                                     ldl_pivots)
from scleron.dynamics import recursions
from scleron.dynamics.recursions import mass_matrix
from scleron.dynamics.tree import Tree
from scleron.errors import ModelError
from scleron.model import Model

from conftest import robots_dir

ICUB = "icub_description/robots/icub_reduced.urdf"


def icub_path():
    base = robots_dir()
    if base is None:
        pytest.fail("example-robot-data is not installed: pip install -e .[test]")
    return os.path.join(base, ICUB)


def M_of(model, q):
    return np.array(mass_matrix(Tree(model), FloatAlgebra(), [float(x) for x in q]))


# ---- point masses ------------------------------------------------------------------------------
def test_icub_reduced_loads_and_matches_pinocchio_crba():
    pin = pytest.importorskip("pinocchio")
    path = icub_path()
    model = scleron.load_model(path)
    r_hip_1 = model.bodies[model.body_names.index("r_hip_1")].inertia
    assert r_hip_1.mass == pytest.approx(0.754) and not np.any(r_hip_1.inertia)     # a point mass
    pm = pin.buildModelFromUrdf(path)
    assert [pm.names[i] for i in range(1, pm.njoints)] == [j.name for j in model.joints]
    assert pm.nq == pm.nv == model.nv                      # revolute joints only: q maps 1:1
    check_nonsingular(Tree(model), source=path)
    data = pm.createData()
    rng = np.random.default_rng(9)
    for q in [np.zeros(model.nv)] + [rng.uniform(-1.5, 1.5, model.nv) for _ in range(3)]:
        Mp = pin.crba(pm, data, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T                # crba fills the upper triangle
        M = M_of(model, q)
        assert np.abs(M - Mp).max() <= 1e-9 * np.abs(Mp).max()


POINT_ARM = """\
name: point_arm
bodies:
  - name: link
    parent: world
    joint: {name: shoulder, type: revolute, axis: [0, 0, 1]}
    mass: 0
    inertia: [0, 0, 0]
  - name: ball
    parent: link
    joint: {name: weld, type: fixed, xyz: [0.4, 0, 0]}
    mass: 2.5
    com: [0, 0.3, 0]
    inertia: [0, 0, 0]
  - name: bob
    parent: link
    joint: {name: slide, type: prismatic, axis: [1, 0, 0]}
    mass: 0.5
    inertia: {ixx: 0, iyy: 0, izz: 0}
"""


def test_point_masses_in_yaml_are_accepted(tmp_path):
    """Point masses (inertia 0) welded and on a slider, on a massless, inertia-free link: M by hand."""
    path = tmp_path / "point_arm.yaml"
    path.write_text(POINT_ARM)
    model = scleron.load_model(str(path))
    assert [b.name for b in model.bodies] == ["link", "bob"]
    check_nonsingular(Tree(model))
    for q in ([0.0, 0.0], [0.7, 0.2], [-1.1, -0.3]):
        # the ball at (0.4, 0.3) in the link frame (r^2 = 0.25), the bob at (x, 0) sliding along x
        x = q[1]
        expected = np.array([[2.5 * 0.25 + 0.5 * x * x, 0.0], [0.0, 0.5]])
        np.testing.assert_allclose(M_of(model, q), expected, atol=1e-14)


def test_rounding_noise_below_zero_is_accepted():
    """A zero moment exported as -5.42101e-20 (icub's r_hip_2) is rounding, not a negative moment."""
    m = Model("noise")
    m.add_body("a", mass=0.526, com=(0, 0, 0.03), inertia=(-5.42101e-20, -5.42101e-20, 0.0))
    m.validate()


# ---- impossible inertias: ModelError naming file, element and problem ---------------------------
BASE = """\
name: m
bodies:
  - name: a
    parent: world
    joint: {name: ja, type: revolute}
    mass: 1.0
    com: [0.3, 0, 0]
    inertia: [0.1, 0.1, 0.1]
  - name: b
    parent: a
    joint: {name: jb, type: revolute, axis: [0, 1, 0], xyz: [0.5, 0, 0]}
    mass: 1.0
    com: [0.2, 0, 0]
    inertia: [0.01, 0.02, 0.02]
"""
BAD_YAML = {
    "negative_eigenvalue": ("inertia: [0.01, 0.02, 0.02]",
                            "inertia: [[0.02, 0.03, 0], [0.03, 0.02, 0], [0, 0, 0.02]]",
                            ["body 'b'", "negative", "-0.01"]),
    "negative_moment": ("inertia: [0.01, 0.02, 0.02]", "inertia: [0.01, 0.02, -0.001]",
                        ["body 'b'", "not even semi-definite"]),
    "triangle": ("inertia: [0.01, 0.02, 0.02]", "inertia: [0.01, 0.01, 0.05]",
                 ["body 'b'", "triangle inequality", "by 60 % of itself"]),
    "triangle_of_a_rod": ("inertia: [0.01, 0.02, 0.02]", "inertia: [0, 0, 0.02]",
                          ["body 'b'", "triangle inequality", "by 100 % of itself"]),
    "nan_moment": ("inertia: [0.01, 0.02, 0.02]", "inertia: [0.01, .nan, 0.02]", ["body 'b'", "finite"]),
    "nan_product": ("inertia: [0.01, 0.02, 0.02]", "inertia: {ixx: 1, iyy: 1, izz: 1, ixy: .nan}",
                    ["body 'b'", "finite"]),
    "inf_mass": ("    mass: 1.0\n    com: [0.2", "    mass: .inf\n    com: [0.2", ["body 'b'", "finite"]),
    "nan_com": ("com: [0.2, 0, 0]", "com: [0.2, .nan, 0]", ["body 'b'", "finite"]),
    "negative_mass": ("    mass: 1.0\n    com: [0.2", "    mass: -0.5\n    com: [0.2", ["body 'b'", "mass must be positive"]),
    "inertia_without_mass": ("    mass: 1.0\n    com: [0.2", "    mass: 0\n    com: [0.2",
                             ["body 'b'", "mass must be positive", "rotational inertia"]),
}


@pytest.mark.parametrize("key", sorted(BAD_YAML))
def test_impossible_inertias_are_rejected_naming_the_body(tmp_path, key):
    old, new, fragments = BAD_YAML[key]
    assert old in BASE
    path = tmp_path / "bad.yaml"
    path.write_text(BASE.replace(old, new, 1))
    with pytest.raises(ModelError) as e:
        scleron.load_model(str(path))
    msg = str(e.value)
    assert msg.startswith(f"{path}:"), msg                 # file and line
    for frag in fragments:
        assert frag in msg, (frag, msg)


def urdf(inertia, mass="1.0"):
    return f"""<robot name="r">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0.2 0 0" rpy="0 0 0"/><mass value="{mass}"/>
    <inertia {inertia}/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/></joint>
</robot>
"""


@pytest.mark.parametrize("inertia, fragment", [
    ('ixx="1" iyy="1" izz="-1" ixy="0" ixz="0" iyz="0"', "not positive semi-definite"),
    ('ixx="1" iyy="1" izz="3" ixy="0" ixz="0" iyz="0"', "triangle inequality"),
    ('ixx="1" iyy="nan" izz="1" ixy="0" ixz="0" iyz="0"', "inertia iyy"),
])
def test_impossible_urdf_inertias_are_rejected_naming_the_link(tmp_path, inertia, fragment):
    path = tmp_path / "bad.urdf"
    path.write_text(urdf(inertia))
    with pytest.raises(ModelError) as e:
        scleron.load_model(str(path))
    msg = str(e.value)
    assert msg.startswith(f"{path}:") and "link 'arm'" in msg and fragment in msg, msg


def test_urdf_point_mass_is_accepted(tmp_path):
    path = tmp_path / "point.urdf"
    path.write_text(urdf('ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"', mass="2.0"))
    model = scleron.load_model(str(path))
    np.testing.assert_allclose(M_of(model, [0.3]), [[2.0 * 0.04]], atol=1e-15)


def test_python_api_rejects_nan_and_negative_inertia():
    m = Model("api")
    with pytest.raises(ModelError, match="body 'a': .*finite"):
        m.add_body("a", mass=1.0, inertia=(1.0, float("nan"), 1.0))
    with pytest.raises(ModelError, match="body 'a': .*not even semi-definite"):
        m.add_body("a", mass=1.0, inertia=(1.0, 1.0, -1.0))
    m.add_body("a", mass=1.0, inertia=(0.0, 0.0, 0.0))    # a point mass
    m.add_body("b", "a", mass=0.0, inertia=(0.0, 0.0, 0.0), xyz=(1, 0, 0))    # massless, for now


# ---- singular mass matrices ---------------------------------------------------------------------
def test_massless_leaf_is_rejected_by_validate_naming_the_joint(tmp_path):
    text = BASE.replace("    mass: 1.0\n    com: [0.2, 0, 0]\n    inertia: [0.01, 0.02, 0.02]",
                        "    mass: 0\n    inertia: [0, 0, 0]")
    path = tmp_path / "leaf.yaml"
    path.write_text(text)
    with pytest.raises(ModelError) as e:
        scleron.load_model(str(path))
    msg = str(e.value)
    assert "joint 'jb'" in msg and "body 'b'" in msg and "singular" in msg and msg.startswith(f"{path}:"), msg


def test_massless_subtree_names_its_top_joint():
    m = Model("sub")
    m.add_body("a", mass=1.0, com=(0.3, 0, 0), inertia=(0.1, 0.1, 0.1))
    m.add_body("b", "a", joint="spherical", mass=0.0, inertia=(0, 0, 0), xyz=(0.5, 0, 0))
    m.add_body("c", "b", mass=0.0, inertia=(0, 0, 0), xyz=(0.5, 0, 0))
    with pytest.raises(ModelError, match=r"body 'b': joint 'b_joint' moves nothing with mass: "
                                         r"body 'b' and the 1 body beyond it have no mass"):
        m.validate()


def test_check_nonsingular_names_the_joint_of_a_massless_leaf():
    """A massless leaf on a revolute joint (built through the Python API, never validated)."""
    m = Model("leaf")
    m.add_body("upper", mass=1.0, com=(0.3, 0, 0), inertia=(0.01, 0.02, 0.02))
    m.add_body("lower", "upper", joint_name="elbow", mass=0.0, inertia=(0, 0, 0), xyz=(0.5, 0, 0),
               axis=(0, 1, 0))
    with pytest.raises(ModelError) as e:
        check_nonsingular(Tree(m), source="leaf.py")
    msg = str(e.value)
    assert msg.startswith("leaf.py: joint 'elbow': the mass matrix is singular: coordinate elbow "
                          "(angle about the axis (rad)) of this revolute joint"), msg


@pytest.mark.parametrize("case", ["point_mass_on_axis", "point_mass_at_ball_centre", "coaxial_joints"])
def test_check_nonsingular_finds_what_validate_cannot(case):
    """Mass is there but the coordinate cannot move it: M is singular at every q."""
    m = Model(case)
    m.add_body("base", mass=1.0, com=(0.3, 0, 0), inertia=(0.01, 0.02, 0.02))
    if case == "point_mass_on_axis":            # a point mass on the hinge's axis
        m.add_body("bead", "base", joint_name="spin", mass=0.2, com=(0, 0, 0.1), inertia=(0, 0, 0),
                   xyz=(0.5, 0, 0))
        bad = "coordinate spin "
    elif case == "point_mass_at_ball_centre":   # three angles turning a point at the centre
        m.add_body("bead", "base", joint="spherical", joint_name="ball", mass=0.2, inertia=(0, 0, 0),
                   xyz=(0.5, 0, 0))
        bad = "coordinate ball[0] (XYZ angle 1 (rad))"
    else:                                       # two hinges on one axis, nothing between them
        m.add_body("spacer", "base", joint_name="first", mass=0.0, inertia=(0, 0, 0), xyz=(0.5, 0, 0))
        m.add_body("tip", "spacer", joint_name="second", mass=1.0, com=(0.2, 0, 0),
                   inertia=(0.01, 0.02, 0.02))
        bad = "coordinate second "
    m.validate()                                # every joint moves some mass
    with pytest.raises(ModelError) as e:
        check_nonsingular(Tree(m))
    assert bad in str(e.value), str(e.value)


def test_chart_singularity_at_zero_is_not_a_singular_model():
    """A ZYZ ball is in gimbal lock at q = 0 (M singular there), not everywhere: accepted."""
    m = Model("gimbal")
    m.add_body("ball", joint="spherical", chart="ZYZ", mass=1.0, com=(0.1, 0.2, 0.3),
               inertia=(0.01, 0.02, 0.02))
    tree = Tree(m)
    d, scale = ldl_pivots(mass_matrix(tree, FloatAlgebra(), [0.0, 0.0, 0.0]))
    assert min(d) <= 1e-12 * scale                  # singular at q = 0 ...
    check_nonsingular(tree)                         # ... but not a singular model


def test_a_floated_massless_base_is_named_as_the_likely_cause():
    """An outside tester: RC20's URDF floated (its base link massless) was told to give link1
    mass off its axis, which it has; the base's free flyer turns what joint1 turns."""
    from conftest import EXAMPLES
    model = scleron.load_model(os.path.join(EXAMPLES, "rc20.urdf"), floating=True)
    with pytest.raises(ModelError, match=r"joint 'joint1': the mass matrix is singular: .* More "
                                         r"likely here: body 'base', which this joint hangs from, "
                                         r"has neither mass nor inertia, so its own joint "
                                         r"'root_joint' \(free_flyer\)"):
        check_nonsingular(Tree(model))
    m = Model("heavy_base")             # a base with mass: the hint does not apply
    m.add_body("a", joint="revolute", axis=(0, 0, 1), mass=1.0, com=(0, 0, 0.1),
               inertia=(0.1, 0.1, 0.1))
    m.add_body("b", "a", joint="revolute", axis=(0, 0, 1), mass=0.0, inertia=(0, 0, 0),
               allow_massless=True)
    m.add_body("c", "b", joint="fixed", mass=0.0, inertia=(0, 0, 0), allow_massless=True)
    with pytest.raises(ModelError) as e:
        check_nonsingular(Tree(m))
    assert "More likely here" not in str(e.value)
    m = Model("own_axis")               # a massless parent, but the child's own coordinate moves
    m.add_body("p", joint="revolute", axis=(0, 0, 1), mass=0.0, inertia=(0, 0, 0),  # nothing
               allow_massless=True)     # (its point mass on its axis): not the parent's fault
    m.add_body("b", "p", joint="revolute", axis=(1, 0, 0), mass=1.0, com=(0.5, 0, 0),
               inertia=(0, 0, 0), allow_massless=True)
    with pytest.raises(ModelError, match="joint 'b_joint'") as e:
        check_nonsingular(Tree(m))
    assert "More likely here" not in str(e.value)


def test_ldl_pivots_match_cholesky():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(6, 6))
    M = A @ A.T
    d, scale = ldl_pivots(M)
    np.testing.assert_allclose(d, np.diag(np.linalg.cholesky(M)) ** 2, rtol=1e-12)
    assert scale == pytest.approx(np.diag(M).max())
    M[3, :] = M[:, 3] = 0.0
    d, _ = ldl_pivots(M)
    assert d[3] == 0.0 and min(d[:3] + d[4:]) > 0 and math.isfinite(sum(d))


def test_pivots_block_by_block_are_the_whole_matrix_pivots():
    """ldl_pivots eliminates each diagonal block of M on its own (a scene of 1000 free bodies,
    nv 6000, took minutes whole, an outside tester): interleaved blocks, a semi-definite one
    and a block of one give the pivots of the dense elimination, and coupled_blocks finds
    them."""
    rng = np.random.default_rng(7)
    order = rng.permutation(10)
    blocks = [order[:4], order[4:7], order[7:9], order[9:]]     # interleaved coordinates
    M = np.zeros((10, 10))
    for b in blocks:
        A = rng.normal(size=(len(b), len(b)))
        M[np.ix_(b, b)] = A @ A.T
    b = np.sort(blocks[1])
    M[b[1], b] = M[b, b[1]] = 0.0                                # a zero pivot inside one block
    M[b[1], b[1]] = 0.0
    expected = [tuple(sorted(x)) for x in blocks[:1] + blocks[2:]] + [(b[0], b[2]), (b[1],)]
    assert sorted(tuple(x) for x in coupled_blocks(M)) == sorted(expected)
    dense = np.array(M) / np.abs(np.diag(M)).max()
    d_dense = np.zeros(10)
    for k in range(10):                                         # the elimination, whole
        d_dense[k] = dense[k, k]
        if d_dense[k] > 1e-12 * max(dense[k, k], 1e-300):
            dense[k + 1:, k + 1:] -= np.outer(dense[k + 1:, k], dense[k, k + 1:]) / d_dense[k]
    d, scale = ldl_pivots(M)
    np.testing.assert_allclose(np.array(d) / scale, d_dense, rtol=1e-12, atol=1e-15)
    assert d[b[1]] == 0.0


def test_model_errors_name_their_element_as_data(tmp_path):
    """Loaders add context from the error's body/joint attributes, not from its wording: a
    massless leaf in YAML gets the body's line, and the error carries the joint's name."""
    path = tmp_path / "leaf.yaml"
    path.write_text("name: leaf\nbodies:\n- name: a\n  parent: world\n  joint: {name: j1, type: revolute}\n"
                    "  mass: 1.0\n  inertia: [0.1, 0.1, 0.1]\n"
                    "- name: b\n  parent: a\n  joint: {name: j2, type: revolute}\n  mass: 0.0\n"
                    "  inertia: [0, 0, 0]\n")
    with pytest.raises(scleron.ModelError) as e:
        scleron.load_model(str(path))
    assert (e.value.body, e.value.joint, e.value.line) == ("b", "j2", 8)


def test_the_commands_take_inertia_relaxed_and_mimic_and_warn_once(tmp_path, capsys):
    """The refusal says `--inertia relaxed`; the commands have it (and --mimic), a YAML file is
    told it takes neither, and each warning of a load is printed once (the reader and
    load_model both validated, so every relaxed body was announced twice)."""
    from scleron.cli import main
    path = tmp_path / "flat.urdf"
    path.write_text(urdf('ixx="1" iyy="1" izz="3" ixy="0" ixz="0" iyz="0"'))
    assert main(["show", str(path), "--tree"]) == 2
    assert "--inertia relaxed" in capsys.readouterr().err
    assert main(["show", str(path), "--tree", "--inertia", "relaxed"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "triangle inequality" in err[0] and "accepted" in err[0], err
    out = str(tmp_path / "flat_out")          # codegen validates again (build_sources): once too
    assert main(["codegen", str(path), "--inertia", "relaxed", "-o", out, "--no-compile"]) == 0
    err = capsys.readouterr().err
    assert err.count("triangle inequality") == 1, err
    # a YAML body's hair of a triangle inequality: the reader's warning names the line, the
    # merged model's check gave it again without (an outside tester): once, with the line
    hair = tmp_path / "hair.yaml"
    hair.write_text("name: t\nbodies:\n  - name: a\n    parent: world\n    mass: 1\n"
                    "    inertia: [1, 1, 2.0005]\n")
    assert main(["codegen", str(hair), "-o", str(tmp_path / "hair"), "--no-compile"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{hair}:6: body 'a'" in err[0], err
    gripper = os.path.join(os.path.dirname(__file__), "data", "urdf", "mimic_gripper.urdf")
    assert main(["show", gripper, "--tree", "--mimic", "couple"]) == 0
    coupled = capsys.readouterr().out
    assert main(["show", gripper, "--tree"]) == 0
    independent = capsys.readouterr().out
    assert coupled.splitlines()[0] != independent.splitlines()[0]      # fewer coordinates
    yaml_path = tmp_path / "m.yaml"
    yaml_path.write_text("bodies:\n- {name: a, parent: world, mass: 1, inertia: [1, 1, 1]}\n")
    assert main(["show", str(yaml_path), "--tree", "--inertia", "relaxed"]) == 2
    assert "applies to URDF, MJCF and OpenSim files, not to YAML" in capsys.readouterr().err


def test_the_refusal_offers_only_a_cure_that_applies(tmp_path):
    """A YAML file was told to load with inertia='relaxed', which YAML refuses (an outside
    tester): it gets no cure, a model built in Python is told of inertia_checks."""
    path = tmp_path / "flat.yaml"
    path.write_text("bodies:\n- {name: a, parent: world, mass: 1, inertia: [0.01, 0.01, 0.05]}\n")
    with pytest.raises(scleron.ModelError) as e:
        scleron.load_model(str(path))
    assert str(e.value).endswith("exceeds the sum of the other two by 60 % of itself)")
    m = scleron.Model("m")
    with pytest.raises(scleron.ModelError, match="set model.inertia_checks = 'relaxed' first"):
        m.add_body("a", inertia=[0.01, 0.01, 0.05])


def test_a_light_joint_under_a_heavy_one_is_regular():
    """A 50 g camera panning at the end of a 100 t crane's boom: M_kk of the pan is 1.6e-13 of the
    slew's (cond M 6e12), yet regular, and the recursions are exact for it (Pinocchio's aba to
    1e-13); it was refused as singular (pivots under 1e-12 of the largest diagonal entry counted
    as 0: an outside tester). A point mass 1e-9 m off the pan's axis, beside a 1 kg m^2 body,
    still is (M_kk 1e-18 of the largest, snapped to 0 by the tree), with the numbers said."""
    pin = pytest.importorskip("pinocchio")
    crane = Model("crane")
    crane.add_body("boom", joint_name="slew", mass=1e5, com=(15, 0, 0), inertia=(1e4, 8e6, 8e6))
    crane.add_body("cam", "boom", joint_name="pan", mass=0.05, inertia=(5e-6, 5e-6, 5e-6),
                   xyz=(30, 0, 0))
    tree = Tree(crane)
    check_nonsingular(tree)
    gripping = Model("crane_gripper")                # with a mimic pair elsewhere (coupled tree)
    gripping.add_body("boom", joint_name="slew", mass=1e5, com=(15, 0, 0), inertia=(1e4, 8e6, 8e6))
    gripping.add_body("cam", "boom", joint_name="pan", mass=0.05, inertia=(5e-6,) * 3, xyz=(30, 0, 0))
    for finger in ("fa", "fb"):
        gripping.add_body(finger, "boom", joint="prismatic", joint_name=finger, mass=1.0,
                          inertia=(0.01,) * 3, xyz=(1, 0, 0), axis=(0, 1, 0))
    gripping.joints[-1].mimic = ("fa", -1.0, 0.0)
    assert Tree(gripping).coupling is not None
    check_nonsingular(Tree(gripping))
    M = M_of(crane, [0.3, 0.2])
    assert M[1, 1] / M[0, 0] < 1e-12
    # Pinocchio's crba of the same model, built through its own API (no file in common)
    pm = pin.Model()
    j1 = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "slew")
    pm.appendBodyToJoint(j1, pin.Inertia(1e5, np.array([15.0, 0, 0]), np.diag([1e4, 8e6, 8e6])),
                         pin.SE3.Identity())
    j2 = pm.addJoint(j1, pin.JointModelRZ(), pin.SE3(np.eye(3), np.array([30.0, 0, 0])), "pan")
    pm.appendBodyToJoint(j2, pin.Inertia(0.05, np.zeros(3), np.diag([5e-6] * 3)), pin.SE3.Identity())
    Mp = pin.crba(pm, pm.createData(), np.array([0.3, 0.2]))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    assert np.abs(M - Mp).max() <= 1e-14 * np.abs(Mp).max()
    assert abs(M[1, 1] - Mp[1, 1]) <= 1e-12 * Mp[1, 1]          # the light entry to its own scale
    near = Model("near")
    near.add_body("base", mass=1.0, com=(0.3, 0, 0), inertia=(1.0, 1.0, 1.0))
    near.add_body("bead", "base", joint_name="spin", mass=1.0, com=(1e-9, 0, 0.1),
                  inertia=(0, 0, 0), xyz=(0.5, 0, 0))
    with pytest.raises(ModelError, match=r"coordinate spin .*where its diagonal entry M_kk is 0 and the largest one 1.3"):
        check_nonsingular(Tree(near))


def test_a_point_mass_far_along_its_axis_is_still_singular():
    """A reviewer: with M_kk measured against the largest diagonal entry only, a point mass on a
    hinge's axis 1000 m out passed (M_kk 4e-17, rounding of terms of 1e6, against a largest
    entry of 0.02) and forward dynamics returned 2.6e16. Measured against the inertia the joint
    moves, it is refused."""
    m = Model("bead")
    m.add_body("base", joint_name="j0", mass=0.1, com=(0.1, 0, 0), inertia=(0.01,) * 3, axis=(0, 0, 1))
    a = np.array([-4e-4, 1e-5, 1.0])
    a /= np.linalg.norm(a)
    m.add_body("bead", "base", joint_name="spin", mass=1.0, com=tuple(a * 1000), inertia=(0, 0, 0),
               xyz=(0.5, 0, 0), axis=tuple(a))
    with pytest.raises(ModelError, match="coordinate spin "):
        check_nonsingular(Tree(m))


def test_singular_message_takes_its_numbers_from_one_configuration():
    """An outside tester: RC20's URDF with a free flyer on its massless base (the flyer's turn
    about z and joint1 move the same) quoted M_kk from one configuration and the largest diagonal
    entry from another, "M_kk 2.67e+03, the matrix's largest 1.85e+03". Both now come from the
    configuration of the pivot quoted: M_kk at most the largest."""
    import re
    model = scleron.load_model(os.path.join(os.path.dirname(__file__), "..", "examples", "rc20.urdf"),
                               floating=True)
    with pytest.raises(ModelError) as err:
        check_nonsingular(Tree(model))
    m = re.search(r"M_kk is (\S+) and the largest one (\S+)\)", str(err.value))
    assert m and float(m.group(1)) <= float(m.group(2))


def test_moments_that_overflow_in_the_body_axes_say_so(tmp_path):
    """An outside tester: mass and moments 1e308, finite in the file, under a joint turned by
    rpy 1e300: turned into the body's axes the moments overflow, and the error blamed "a finite
    3x3 matrix" alone. It now says that the numbers may have overflowed and to rescale."""
    path = tmp_path / "big.urdf"
    path.write_text(
        '<robot name="r"><link name="base"/><link name="l1"><inertial><mass value="1e308"/>'
        '<inertia ixx="1e308" iyy="1e308" izz="1e308" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="j1" type="revolute"><origin rpy="1e300 0 0"/><parent link="base"/>'
        '<child link="l1"/><axis xyz="0 0 1"/></joint></robot>')
    with pytest.raises(ModelError, match=r"link 'l1'.*overflowed double precision: rescale"):
        scleron.load_model(str(path))


NOT_PSD = """<?xml version="1.0"?>
<robot name="npsd">
<link name="a"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
<link name="b"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0.5" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
<joint name="j" type="continuous"><parent link="a"/><child link="b"/></joint>
</robot>
"""


def test_an_indefinite_mass_matrix_is_not_called_singular(tmp_path):
    """A relaxed inertia with a negative eigenvalue (ixy 0.5 against 0.01 moments) on a floating
    base: M's pivot was -8.25, and the message said "singular ... moves nothing with mass" (an
    outside tester). It says not positive definite, and why."""
    path = tmp_path / "npsd.urdf"
    path.write_text(NOT_PSD)
    model = scleron.load_model(str(path), inertia="relaxed", floating=True)
    with pytest.raises(ModelError, match=r"not positive definite: coordinate root_joint\[\d\] .* "
                                         r"negative pivot .* --inertia relaxed") as e:
        scleron.generate(model, str(tmp_path / "g"), functions=["mass"])
    assert "singular" not in str(e.value)


NANO_URDF = """<robot name="nano">
  <link name="base"><inertial><mass value="1e-21"/><inertia ixx="1e-39" ixy="0" ixz="0"
    iyy="1e-39" iyz="0" izz="1e-39"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0 0 2e-9"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <link name="a"><inertial><origin xyz="1e-9 0 0"/><mass value="1e-21"/><inertia ixx="1e-39"
    ixy="0" ixz="0" iyy="2e-39" iyz="0" izz="2e-39"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
    <origin xyz="2e-9 8e-13 5e-13"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <link name="b"><inertial><origin xyz="1e-9 6e-13 0"/><mass value="1e-21"/><inertia
    ixx="1e-39" ixy="0" ixz="0" iyy="2e-39" iyz="0" izz="2e-39"/></inertial></link>
</robot>"""


def test_a_nanometre_arm_is_regular(tmp_path):
    """An outside tester: nanometre links of 1e-21 kg were refused as singular (the floor of
    M_kk took the moved mass in kg for kg m^2: a hidden 1 um); Pinocchio's M of it has condition
    number 2. The floor now scales with the model's lengths, and a mass far out on an axis is
    still refused (test_a_point_mass_far_along_its_axis_is_still_singular)."""
    path = tmp_path / "nano.urdf"
    path.write_text(NANO_URDF)
    tree = Tree(scleron.load_model(str(path)))
    check_model_dynamics(tree)                          # no ModelError
    M = np.array(mass_matrix(tree, FloatAlgebra(), [0.3, -0.7]))
    # body b: iyy 2e-39 and 1e-21 kg at 1e-9 m from j2's axis
    assert abs(M[1][1] - 3e-39) <= 1e-12 * 3e-39 and np.linalg.cond(M) < 10


def test_a_nanometre_arm_keeps_its_picometre_offsets(tmp_path):
    """Its 0.8 pm and 0.5 pm offsets were snapped to 0 (translations below 1e-12 m, whatever the
    model's size), which left M_01 57 % off. Oracle: Pinocchio's crba of the same arm a billion
    times longer and 1e21 times heavier, scaled back by 1e-39 (m L^2). Pinocchio cannot take
    the arm itself: adding a body of 1e-21 kg to a joint (appendBodyToJoint, its URDF reader
    too) divides the first moment by a floor on the mass, which puts the centre of mass at
    4.5e-15 m (2.0e-20 from the file) instead of 1e-9 m: its M_00 is 3.6e-39, not 1.2e-38."""
    pin = pytest.importorskip("pinocchio")
    big = (NANO_URDF.replace("e-9", "").replace("e-13", "e-4").replace("e-21", "")
           .replace("e-39", ""))
    (tmp_path / "nano.urdf").write_text(NANO_URDF)
    (tmp_path / "big.urdf").write_text(big)
    tree = Tree(scleron.load_model(str(tmp_path / "nano.urdf")))
    assert tree.length_snap < 1e-19
    q = [0.3, -0.7]
    model = pin.buildModelFromUrdf(str(tmp_path / "big.urdf"))
    expected = pin.crba(model, model.createData(), np.array(q)) * 1e-39
    expected = np.triu(expected) + np.triu(expected, 1).T
    M = np.array(mass_matrix(tree, FloatAlgebra(), q))
    assert abs(M[0][1] - expected[0][1]) <= 1e-9 * abs(expected[0][1])
    assert np.abs(M - expected).max() <= 1e-12 * np.abs(expected).max()


def test_a_light_mass_far_out_weighs_by_its_own_mass():
    """A reviewer: a 10 kg hub near its axis and a 1 g tip 100 km out (cond M 3.5e4) was refused
    when the floor took the subtree's mass at the longest lever; a mass of 1e154 kg overflowed
    the lever's norm (a RuntimeWarning, then "singular"), and one of 1e160 kg lost its first
    moment (forward dynamics 0 instead of -98.1)."""
    m = Model("mast")
    m.add_body("hub", joint_name="spin", axis=(0, 0, 1), mass=10.0, com=(0.05, 0, 0),
               inertia=(0.01,) * 3)
    m.add_body("tip", "hub", joint_name="tilt", axis=(1, 0, 0), xyz=(0, 0, 1e5), mass=1e-3,
               inertia=(1e-6,) * 3)
    check_model_dynamics(Tree(m))
    huge = Model("huge", gravity=(0, 0, 0))
    c = np.array([1, 1, -2]) / np.sqrt(6) * 0.8 * np.sqrt(3)
    huge.add_body("a", joint_name="ja", axis=(1, 1, 1), mass=1e154, com=tuple(c),
                  inertia=(1, 1, 1))
    with np.errstate(all="raise"):
        check_model_dynamics(Tree(huge))
    heavy = Model("heavy")
    heavy.add_body("a", joint_name="ja", axis=(1, 0, 0), mass=1e160, com=(0, 0.1, 0),
                   inertia=(1, 1, 1))
    qdd = recursions.forward_dynamics(Tree(heavy), FloatAlgebra(), [0.0], [0.0], [0.0])
    assert abs(qdd[0] + 98.1) < 1e-9


WELDED_TOOL = """<robot name="r">
  <link name="base"/>
  <link name="wrist"/>
  <joint name="turn" type="revolute"><parent link="base"/><child link="wrist"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="tool">
    <inertial><origin xyz="0.1 0.02 0" rpy="0.1 0 0"/><mass value="2"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="weld" type="fixed"><parent link="wrist"/><child link="tool"/>
    <origin xyz="0 0 0.2" rpy="0.3 0.2 0.1"/></joint>
</robot>"""


def test_a_welded_links_inertia_is_named_once_by_its_link(tmp_path):
    """A massless moving link that takes a welded link's inertia alone: the inertia is the
    welded link's, named by it and its line, once (a reviewer: relaxed, it was said twice, the
    second time as harmless once merged)."""
    path = tmp_path / "r.urdf"
    path.write_text(WELDED_TOOL)
    with pytest.raises(ModelError, match=r"r\.urdf:6: link 'tool': principal moments"):
        scleron.load_model(str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scleron.load_model(str(path), inertia="relaxed")
    said = [str(w.message) for w in caught if "tool" in str(w.message)]
    assert len(said) == 1 and "body 'tool': principal moments" in said[0], said
