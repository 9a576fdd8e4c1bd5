"""Method II (S&G section 4): forward dynamics with passes 4-6 as loops over the bodies, one
kernel per joint class. It must give Method I's accelerations (and so the reference's) for
every joint kind, and generate less code."""
import json
import os

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions as rec
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.pipeline import build_sources
from scleron.unroll import unroll_method2

from conftest import example

# rc20: one class repeated; branched: revolute, spherical (ZYX), universal, helical, cylindrical,
# composite, ball_exp, planar, translational; quadruped: a 6-DOF free root (XYZ chart)
MODELS = ["rc20", "branched", "quadruped"]


@pytest.fixture(scope="module")
def pair(request, build_dir, generated):
    cache = {}

    def get(name):
        if name not in cache:
            model, m1 = generated(example(f"{name}.yaml"), name)
            m2 = scleron.generate(model, os.path.join(build_dir, f"{name}_m2"), f"{name}_m2", method=2)
            cache[name] = (model, m1, m2)
        return cache[name]
    return get


@pytest.mark.parametrize("name", MODELS)
def test_method2_equals_method1_and_reference(pair, name, rng):
    model, m1, m2 = pair(name)
    tree = Tree(model)
    for _ in range(5):
        q, qd, tau = (rng.uniform(-1.2, 1.2, model.nv) for _ in range(3))
        a1, a2 = m1.forward_dynamics(q, qd, tau), m2.forward_dynamics(q, qd, tau)
        ref = np.array(rec.forward_dynamics(tree, FloatAlgebra(), list(q), list(qd), list(tau)))
        scale = max(1.0, np.abs(ref).max())
        assert np.abs(a2 - a1).max() / scale <= 1e-11
        assert np.abs(a2 - ref).max() / scale <= 1e-11
        # M qdd + h = tau, with M and h of the same module (unrolled in both methods)
        assert np.abs(m2.mass_matrix(q) @ a2 + m2.bias_forces(q, qd) - tau).max() <= 1e-9 * scale


def test_method2_batch_equals_single(pair, rng):
    model, _, m2 = pair("branched")
    Q, QD, T = (rng.uniform(-1, 1, (7, model.nv)) for _ in range(3))
    batch = m2.forward_dynamics(Q, QD, T)
    for k in range(7):
        np.testing.assert_array_equal(batch[k], m2.forward_dynamics(Q[k], QD[k], T[k]))


def test_joint_classes_share_kernels():
    tree = Tree(scleron.load_model(example("rc20.yaml")))
    m2 = unroll_method2(tree)
    # RC: identical placements and joints: the root's class and one class for the other 19
    assert [c.root for c in m2.classes] == [True, False]
    assert [b["cls"] for b in m2.bodies] == [0] + [1] * 19
    # Rx(90) Rz(q) has 4 non-structural entries (cos, sin twice); t = (1,0,0) and S = e_z fold
    assert m2.classes[1].kin_size == 4 and m2.nkin == 80
    # quadruped: the free root, then hip (x axis), thigh and knee (y axes) shared by all four legs
    tree = Tree(scleron.load_model(example("quadruped.yaml")))
    m2 = unroll_method2(tree)
    assert [b["cls"] for b in m2.bodies] == [0] + [1, 2, 3] * 4
    assert sum(len(c.kernels) for c in m2.classes) == 3 * len(m2.classes)


def test_method2_code_is_smaller_and_recorded():
    model = scleron.load_model(example("rc20.yaml"))
    f1, _, k1 = build_sources(model, "rc20")
    f2, _, k2 = build_sources(model, "rc20", method=2)
    assert k1 != k2                                        # a separate cache entry
    s1 = json.loads(f1["scleron.json"])["functions"]["forward_dynamics"]["statements"]
    meta = json.loads(f2["scleron.json"])
    s2 = meta["functions"]["forward_dynamics"]["statements"]
    assert meta["method"] == 2 and s2 < 0.6 * s1
    assert "Method II" in f2["rc20_dynamics.c"] and "rc20_k1_articulated_inertia" in f2["rc20_dynamics.c"]
    # the other three functions are unchanged
    for fn in ("inverse_dynamics", "mass_matrix", "bias_forces"):
        assert meta["functions"][fn] == json.loads(f1["scleron.json"])["functions"][fn]


def test_method_must_be_known():
    with pytest.raises(ValueError, match="method"):
        build_sources(scleron.load_model(example("rc20.yaml")), "rc20", method=3)
