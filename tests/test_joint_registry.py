"""The joint registry (joints.registry) is complete: every declared type derives, its number of
coordinates agrees everywhere it is read, and the model layer's tables are a view of it.
Also the public chart entry point scleron.charts (ARCHITECTURE.md)."""
import ast
import os

import numpy as np
import pytest

import scleron
from scleron.joints import REGISTRY, JointType, coordinates_of, joint_model
from scleron.joints import charts as joint_charts
from scleron.model import EULER_CHARTS, JOINT_TYPES, Model, joint_dof
from scleron.model.joint_types import GENERAL_TYPES, composite_part_problem

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "scleron")

# parameters that change the number of coordinates, per type, and the number they give
VARIANTS = [
    ("composite", {"parts": [{"type": "prismatic", "params": {"axis": (1, 0, 0)}},
                             {"type": "spherical", "params": {"chart": "ZYX"}}]}, 4),
    ("custom", {"coordinates": ["a", "b"], "translation": ["a", "b", 0]}, 2),
    ("custom", {"coordinates": ["a"], "rotation": [["z", "a"]]}, 1),
    ("surface_surface", {"spin": True}, 5),
    ("surface_point", {"chart": "ZYX"}, 5),
    ("curve_point", {"chart": "XYZ"}, 4),
]


def test_model_tables_are_a_view_of_the_registry():
    assert list(JOINT_TYPES) == list(REGISTRY)
    for name, jt in REGISTRY.items():
        assert isinstance(jt, JointType) and jt.name == name
        assert JOINT_TYPES[name] == (jt.default_dof, set(jt.params))
    assert GENERAL_TYPES == tuple(n for n, jt in REGISTRY.items() if jt.general)
    assert EULER_CHARTS is joint_charts.CHARTS and len(set(EULER_CHARTS)) == 12


@pytest.mark.parametrize("name", [n for n in REGISTRY if n != "composite"])
def test_every_type_derives_with_its_default_parameters(name):
    jm = joint_model(name, {})
    d, nq = REGISTRY[name].default_dof, REGISTRY[name].nq_of({})
    assert jm.dof == d == len(jm.qd) == joint_dof(name, {}) and jm.nq == len(jm.q) == nq
    assert nq == d or REGISTRY[name].configuration in ("quaternion", "se3")
    assert len(jm.coordinates) == d and jm.coordinates == coordinates_of(name, {})
    assert jm.S.shape == (6, d) and jm.Sdot.shape == (6, d) and jm.Sdot_qd.shape == (6, 1)
    assert jm.notes == REGISTRY[name].notes
    if d:
        q = np.linspace(0.2, 0.6, nq)                # inside every spline's parameter range
        if nq != d:
            q[-4:] /= np.linalg.norm(q[-4:])          # a unit quaternion
        G = jm.numeric("G", q)
        np.testing.assert_allclose(G[:3, :3].T @ G[:3, :3], np.eye(3), atol=1e-12)
        assert np.linalg.matrix_rank(jm.numeric("S", q), tol=1e-9) == d


@pytest.mark.parametrize("name, params, d", VARIANTS, ids=[f"{v[0]}-{v[2]}" for v in VARIANTS])
def test_parameters_that_add_coordinates(name, params, d):
    jm = joint_model(name, params)
    assert jm.dof == joint_dof(name, params) == len(jm.coordinates) == d


def test_every_coordinate_says_what_it_means():
    """The lower pairs and chart joints give each coordinate a meaning with its unit."""
    for name, jt in REGISTRY.items():
        if jt.general or name == "composite":
            continue
        if jt.nq is not None:                       # quaternion joints: velocities, q entries
            assert all("(rad/s)" in m or "(m/s)" in m for m in jt.meanings({})), name
            assert len(jt.configuration_entries) == jt.nq, name
            continue
        for meaning in jt.meanings({}):
            assert "(rad)" in meaning or "(m)" in meaning, (name, meaning)
    assert coordinates_of("spherical", {"chart": "ZYX"}) == [f"ZYX angle {k} (rad)" for k in (1, 2, 3)]
    assert joint_model("free", {"chart": "ZYZ"}).coordinates[3:] == [f"ZYZ angle {k} (rad)" for k in (1, 2, 3)]
    parts = VARIANTS[0][1]
    assert coordinates_of("composite", parts) == (["displacement along the axis (m)"]
                                                  + [f"ZYX angle {k} (rad)" for k in (1, 2, 3)])


def test_unknown_type_is_a_key_error_naming_the_known_ones():
    with pytest.raises(KeyError, match="unknown joint type 'hinge'.*revolute"):
        joint_model("hinge", {})
    with pytest.raises(KeyError):
        joint_dof("hinge", {})


def test_composite_parts_follow_the_registry():
    for name, jt in REGISTRY.items():
        assert (composite_part_problem(name) is None) == jt.composite_part
    m = Model("parts")
    for name, jt in REGISTRY.items():
        if jt.composite_part:
            continue
        with pytest.raises(scleron.ModelError, match="a composite part cannot be"):
            m.add_body(f"b_{name}", joint="composite", parts=[{"type": name, "params": {}}])
    # an unknown part type lists the types a part may have, not every joint type (a tester)
    with pytest.raises(scleron.ModelError, match=r"unknown joint type 'hinge' \(parts: ") as err:
        m.add_body("b_hinge", joint="composite", parts=[{"type": "hinge"}])
    listed = str(err.value).split("(parts: ")[1].rstrip(")").split(", ")
    assert listed == [name for name, jt in REGISTRY.items() if jt.composite_part]


def _imports(path):
    tree = ast.parse(open(path).read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_registry_and_charts_import_nothing_above_joints():
    for fname in ("registry.py", "charts.py"):
        for mod in _imports(os.path.join(SRC, "joints", fname)):
            assert not any(layer in mod for layer in ("model", "dynamics", "program", "backends",
                                                      "codegen", "pipeline")), (fname, mod)


def test_public_charts_entry_point():
    import scleron.charts
    assert scleron.charts.derive is joint_charts.derive
    for name in scleron.charts.__all__:         # the derivations: the very same objects
        if name != "write_charts":              # (the files: printed by backends/charts)
            assert getattr(scleron.charts, name) is getattr(joint_charts, name)
    assert not hasattr(joint_charts, "write_charts")
    d = scleron.charts.derive("ZYX")
    assert d.name == "ZYX" and d["S"].shape == (6, 3)
    np.testing.assert_allclose(scleron.charts.R_num("ZYX", [0.1, 0.2, 0.3]),
                               joint_model("spherical", {"chart": "ZYX"}).numeric("R", [0.1, 0.2, 0.3]),
                               atol=1e-15)
