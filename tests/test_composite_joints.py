"""Composite joints Q = Q_1 Q_2 ... Q_m (Sueda 2.53-2.58), derived part by part: each part's own
S and Sdot carried into the child frame through the later parts (joints.symbolic.
composite_kinematics), never by differentiating the product.

Oracles: the old route (S&G 9 and 12 on the whole product, written here with the registry's
transform and sympy's derivatives) and central finite differences of the 4x4 transform G(q),
which share nothing with the part-by-part derivation. And the point of it: the cost is linear
in the number of parts (2 spherical parts took 3 s, 4 took 34 s, 8 did not finish before).
"""
import time

import numpy as np
import pytest
import sympy as sp

import scleron
from scleron.errors import ModelError
from scleron.joints import joint_model
from scleron.joints.registry import joint_type
from scleron.joints.symbolic import Evaluator, light_entry, motion_subspace, motion_subspace_rate
from scleron.algebra import FloatAlgebra

H = 1e-6
TOL = 1e-8


def part(jtype, **params):
    return {"type": jtype, "params": params}


def spheres(n, chart="XYZ"):
    return {"parts": [part("spherical", chart=chart)] * n}


# composites of 2-3 mixed parts: lower pairs (float axes too), Euler-chart joints, ball_exp
MIXED = {
    "prismatic-revolute": [part("prismatic", axis=(1, 0, 0)), part("revolute", axis=(0, 1, 0))],
    "revolute-spherical": [part("revolute", axis=(0.6, 0.8, 0.0)), part("spherical", chart="ZYX")],
    "spherical-prismatic": [part("spherical", chart="ZYZ"), part("prismatic", axis=(0, 0.6, 0.8))],
    "helical-universal-prismatic": [part("helical", axis=(0, 0.6, 0.8), pitch=0.1),
                                    part("universal", chart="ZXY"), part("prismatic", axis=(1, 0, 0))],
    "planar-spherical-revolute": [part("planar"), part("spherical", chart="YXZ"),
                                  part("revolute", axis=(1, 0, 0))],
    "ball_exp-cylindrical-spherical": [part("ball_exp"), part("cylindrical", axis=(0, 1, 0)),
                                       part("spherical")],
    "translational-spherical": [part("translational"), part("spherical", chart="XZX")],
}

_FLOATS = FloatAlgebra()


def evaluate(M, jm, q, qd):
    """A sympy matrix at (q, qd), through its shared subexpressions (light entries are DAGs)."""
    env = dict(zip(jm.q + jm.qd, [float(x) for x in q] + [float(x) for x in qd]))
    ev = Evaluator(_FLOATS, env)
    return np.array(ev.matrix(M), dtype=float).reshape(M.shape)


def old_route(params, jm):
    """S&G (9) and (12) on the whole product Q(q) (the registry's transform), as before."""
    R, t = joint_type("composite").transform(params, jm.q)
    S = motion_subspace(R, t, jm.q, light_entry)
    return R, t, S, motion_subspace_rate(S, jm.q, jm.qd, light_entry)


def vee(T):
    return np.array([T[2, 1], T[0, 2], T[1, 0], T[0, 3], T[1, 3], T[2, 3]])


def G_of(jm, q):
    G = np.eye(4)
    G[:3, :3] = evaluate(jm.R, jm, q, q)
    G[:3, 3] = evaluate(jm.t, jm, q, q).ravel()
    return G


def S_fd(jm, q):
    """S&G (9) by central differences: S_k = vee(G^-1 dG/dq_k)."""
    Ginv = np.linalg.inv(G_of(jm, q))
    cols = []
    for k in range(jm.dof):
        e = np.zeros(jm.dof)
        e[k] = H
        cols.append(vee(Ginv @ (G_of(jm, q + e) - G_of(jm, q - e)) / (2 * H)))
    return np.array(cols).T


def Sdot_fd(jm, q, qd):
    """S&G (12) by central differences: d/ds S(q + s qd) at s = 0."""
    return (evaluate(jm.S, jm, q + H * qd, qd) - evaluate(jm.S, jm, q - H * qd, qd)) / (2 * H)


def check_against_finite_differences(jm, rng, n=2):
    for _ in range(n):
        q, qd = rng.uniform(-1.2, 1.2, jm.dof), rng.normal(size=jm.dof)
        S = evaluate(jm.S, jm, q, qd)
        np.testing.assert_allclose(S, S_fd(jm, q), atol=TOL, rtol=0)
        np.testing.assert_allclose(evaluate(jm.Sdot, jm, q, qd), Sdot_fd(jm, q, qd), atol=TOL, rtol=0)
        np.testing.assert_allclose(evaluate(jm.Sdot_qd, jm, q, qd).ravel(),
                                   evaluate(jm.Sdot, jm, q, qd) @ qd, atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_parts_equal_the_old_route_and_finite_differences(name):
    params = {"parts": MIXED[name]}
    jm = joint_model("composite", params)
    R, t, S, Sdot = old_route(params, jm)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd = rng.uniform(-1.2, 1.2, jm.dof), rng.normal(size=jm.dof)
        for new, old in ((jm.R, R), (jm.t, t), (jm.S, S), (jm.Sdot, Sdot)):
            np.testing.assert_allclose(evaluate(new, jm, q, qd), evaluate(old, jm, q, qd),
                                       atol=1e-12, rtol=0)
    check_against_finite_differences(jm, rng)


def test_numeric_agrees_with_the_evaluator():
    """JointModel.numeric (lambdify for small composites) gives the same S and Sdot."""
    jm = joint_model("composite", {"parts": MIXED["planar-spherical-revolute"]})
    q, qd = np.linspace(-0.9, 0.8, jm.dof), np.linspace(0.5, -0.4, jm.dof)
    np.testing.assert_allclose(jm.numeric("S", q), evaluate(jm.S, jm, q, qd), atol=1e-13)
    np.testing.assert_allclose(jm.numeric("Sdot", q, qd), evaluate(jm.Sdot, jm, q, qd), atol=1e-13)


def test_one_part_is_the_part_itself():
    for p in (part("spherical", chart="ZYX"), part("helical", axis=(0, 0.6, 0.8), pitch=0.1),
              part("ball_exp")):
        whole, single = joint_model("composite", {"parts": [p]}), joint_model(p["type"], p["params"])
        assert whole.dof == single.dof
        for what in ("R", "t", "S", "Sdot"):
            diff = (getattr(whole, what) - getattr(single, what)).applyfunc(sp.expand)
            assert diff == sp.zeros(*diff.shape), (p, what)


def test_constant_columns_stay_exact():
    """Small entries are simplified: a revolute after a prismatic along the same axis has a
    constant S and an exactly zero Sdot, as the parts alone have."""
    jm = joint_model("composite", {"parts": [part("prismatic", axis=(0, 0, 1)),
                                             part("revolute", axis=(0, 0, 1))]})
    assert jm.S == sp.Matrix([[0, 0], [0, 0], [0, 1], [0, 0], [0, 0], [1, 0]])
    assert jm.Sdot == sp.zeros(6, 2) and jm.Sdot_qd == sp.zeros(6, 1)
    assert not jm.light


def test_eight_spherical_parts_derive_in_seconds():
    """8 spherical parts did not finish in 200 s when the product was differentiated."""
    start = time.perf_counter()
    jm = joint_model("composite", spheres(8, "ZXY"))
    assert time.perf_counter() - start < 10.0
    assert jm.dof == 24 and jm.light          # entries as shared graphs, printed through CSE
    check_against_finite_differences(jm, np.random.default_rng(8), n=1)


def dag_nodes(exprs):
    """Distinct subexpressions (the size of the shared graph, not of the trees)."""
    seen, stack = set(), list(exprs)
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            stack.extend(e.args)
    return len(seen)


def test_the_shared_graph_grows_linearly_with_the_parts():
    """Twice the parts, about twice the graph (460 -> 1012 -> 2116 nodes for 4, 8, 16 parts);
    quadratic growth would be 4 times, the trees grow 3^m."""
    sizes = {}
    for n in (4, 8):
        jm = joint_model("composite", spheres(n, "YZX"))
        sizes[n] = dag_nodes([e for M in (jm.R, jm.t, jm.S, jm.Sdot_qd) for e in M])
    assert sizes[8] < 2.4 * sizes[4], sizes


@pytest.mark.slow
def test_sixty_four_parts_derive_within_a_minute():
    """The loaders' limit (64 parts)."""
    start = time.perf_counter()
    jm = joint_model("composite", {"parts": [part("spherical"), part("revolute", axis=(1, 0, 0)),
                                             part("prismatic", axis=(0, 1, 0)),
                                             part("universal", chart="ZYX")] * 16})
    assert time.perf_counter() - start < 60.0
    assert jm.dof == 16 * 7
    q, qd = np.random.default_rng(64).uniform(-1, 1, (2, jm.dof))
    np.testing.assert_allclose(evaluate(jm.S, jm, q, qd), S_fd(jm, q), atol=1e-7, rtol=0)


def test_more_than_six_coordinates_are_refused_in_seconds(tmp_path):
    """S is 6 x d: a composite of more than 6 coordinates always has a singular mass matrix.
    Building the model refuses it naming the joint, before anything is derived (16 parts)."""
    m = scleron.Model("many")
    start = time.perf_counter()
    with pytest.raises(ModelError, match="joint 'j'.*at most 6 coordinates.*singular"):
        m.add_body("b", joint="composite", joint_name="j", parts=[part("spherical")] * 16,
                   mass=1.0, com=(0.1, 0.2, 0.3), inertia=((0.1, 0, 0), (0, 0.2, 0), (0, 0, 0.3)))
    assert time.perf_counter() - start < 5.0 and not m.bodies
