"""S and Sdot of every joint type against central finite differences of its transform G(q).

S_k = vee(G^-1 dG/dq_k) (S&G 9) and Sdot = sum_k dS/dq_k qd_k (S&G 12) are checked with
finite differences of the 4x4 transform, which shares nothing with the sympy derivation.
"""
import numpy as np
import pytest
import sympy as sp

from scleron.joints import joint_model
from scleron.model import EULER_CHARTS, JOINT_TYPES

H = 1e-6
TOL = 1e-8

CASES = [
    ("revolute", {"axis": (0, 0, 1)}),
    ("revolute", {"axis": (1, 0, 0)}),
    ("revolute", {"axis": (0, -1, 0)}),
    ("revolute", {"axis": tuple(np.array([1, 2, 3]) / np.sqrt(14))}),
    ("continuous", {"axis": (0.6, 0.8, 0.0)}),
    ("prismatic", {"axis": (0, 0, 1)}),
    ("prismatic", {"axis": tuple(np.array([1, -1, 2]) / np.sqrt(6))}),
    ("helical", {"axis": (0, 0, 1), "pitch": 0.05}),
    ("helical", {"axis": (0.6, 0.0, 0.8), "pitch": -0.2}),
    ("cylindrical", {"axis": (0, 1, 0)}),
    ("planar", {}),
    ("planar", {"normal": (1, 0, 0)}),
    ("free2d", {}),
    ("translational", {}),
    ("universal", {}),
    ("universal", {"chart": "ZXY"}),
    ("ball_exp", {}),
    ("free", {"chart": "XYZ"}),
    ("free", {"chart": "ZYZ"}),
    ("composite", {"parts": [{"type": "prismatic", "params": {"axis": (1, 0, 0)}},
                             {"type": "revolute", "params": {"axis": (0, 0, 1)}},
                             {"type": "universal", "params": {}}]}),
] + [("spherical", {"chart": c}) for c in EULER_CHARTS]


def vee(T):
    return np.array([T[2, 1], T[0, 2], T[1, 0], T[0, 3], T[1, 3], T[2, 3]])


def G_of(jm, q):
    return jm.numeric("G", q)


def S_fd(jm, q):
    G = G_of(jm, q)
    Ginv = np.linalg.inv(G)
    cols = []
    for k in range(jm.dof):
        e = np.zeros(jm.dof)
        e[k] = H
        dG = (G_of(jm, q + e) - G_of(jm, q - e)) / (2 * H)
        cols.append(vee(Ginv @ dG))
    return np.array(cols).T


def _ids(case):
    return f"{case[0]}-{case[1].get('chart', '')}{np.round(case[1].get('axis', case[1].get('normal', ())), 2)}"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_S_and_Sdot_match_finite_differences(case):
    jtype, params = case
    jm = joint_model(jtype, params)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = rng.uniform(-1.2, 1.2, jm.dof)
        qd = rng.normal(size=jm.dof)
        S = jm.numeric("S", q)
        assert S.shape == (6, jm.dof)
        np.testing.assert_allclose(S, S_fd(jm, q), atol=TOL, rtol=0)
        # Sdot: central difference of S along the path q + s qd
        Sdot_fd = (jm.numeric("S", q + H * qd) - jm.numeric("S", q - H * qd)) / (2 * H)
        np.testing.assert_allclose(jm.numeric("Sdot", q, qd), Sdot_fd, atol=TOL, rtol=0)


@pytest.mark.parametrize("axis", [(0, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, -1), (0.6, 0.8, 0.0)])
def test_revolute_S_is_constant_unit_column_and_Sdot_exactly_zero(axis):
    jm = joint_model("revolute", {"axis": axis})
    assert all(e.is_number for e in jm.S), jm.S
    np.testing.assert_allclose(np.array(jm.S, dtype=float).ravel(), list(axis) + [0, 0, 0], atol=1e-15)
    assert jm.Sdot == sp.zeros(6, 1)
    assert jm.Sdot_qd == sp.zeros(6, 1)


def test_prismatic_and_helical_are_constant():
    assert joint_model("prismatic", {"axis": (0, 0, 1)}).S.T.tolist() == [[0, 0, 0, 0, 0, 1]]
    hel = joint_model("helical", {"axis": (0, 0, 1), "pitch": 0.25})
    assert [float(x) for x in hel.S] == [0, 0, 1, 0, 0, 0.25]
    assert hel.Sdot == sp.zeros(6, 1)


def test_ball_exp_small_angle_series_is_smooth():
    """Exponential coordinates near q = 0: the series branch and the closed form agree, and
    S -> identity (Sueda 2.47-2.52; the digest's small-angle note)."""
    jm = joint_model("ball_exp")
    np.testing.assert_allclose(jm.numeric("S", np.zeros(3))[:3], np.eye(3), atol=1e-15)
    np.testing.assert_allclose(jm.numeric("R", np.zeros(3)), np.eye(3), atol=1e-15)
    d = np.array([0.3, -0.2, 0.5])
    d /= np.linalg.norm(d)
    for s in (1e-9, 1e-5, 0.316, 0.317, 0.9):     # both sides of the series threshold
        q = s * d
        np.testing.assert_allclose(jm.numeric("S", q), S_fd(jm, q) if s > 1e-4 else jm.numeric("S", q),
                                   atol=1e-8)
    # continuity across the switch at x = theta^2 = SERIES_BELOW
    from scleron.joints.special import GUARDED, SERIES_BELOW
    for f in GUARDED.values():
        lo, hi = f.numeric(SERIES_BELOW * (1 - 1e-12)), f.numeric(SERIES_BELOW * (1 + 1e-12))
        assert abs(lo - hi) <= 1e-12 * max(1.0, abs(lo)), f.c_name


def test_ball_exp_rotation_is_rodrigues():
    jm = joint_model("ball_exp")
    q = np.array([0.4, -1.1, 0.7])
    th = np.linalg.norm(q)
    K = np.array([[0, -q[2], q[1]], [q[2], 0, -q[0]], [-q[1], q[0], 0]]) / th
    R = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
    np.testing.assert_allclose(jm.numeric("R", q), R, atol=1e-14)


def test_every_model_joint_type_is_implemented():
    for jtype in JOINT_TYPES:
        if jtype == "composite":
            continue
        jm = joint_model(jtype, {})
        assert jm.dof == JOINT_TYPES[jtype][0]
        assert jm.S.shape == (6, jm.dof)


def test_tape_replays_the_evaluator_operation_for_operation():
    """A joint's R, t, S and Sdot qd come from a Tape recorded once (joints.symbolic.Tape): the
    same floats, bit for bit, as a direct Evaluator walk of the sympy trees, the same program
    node for node, and the same dual numbers, on a spline curve, a torus contact, a composite
    joint, a quaternion ball and a custom joint with |x|, sqrt and atan."""
    import scleron
    from scleron.dynamics.tree import Tree
    from scleron.joints.symbolic import Evaluator
    from scleron.program import FloatAlgebra, ProgramAlgebra
    from scleron.algebra import DualAlgebra, seeded
    from scleron.program.program import Program
    from conftest import example

    def direct(j, alg, q, qd):
        ev = Evaluator(alg, dict(zip(j.q + j.qd, list(q) + list(qd))))
        return ev.matrix(j.R), ev.vector(j.t), ev.matrix(j.S), ev.vector(j.Sdot_qd)

    def plain(x):
        """Nested lists of Duals as nested lists of (value, tangents)."""
        if isinstance(x, (list, tuple)):
            return [plain(e) for e in x]
        return (x.a, list(x.b)) if hasattr(x, "b") else x

    def program(j, how):
        prog = Program()
        q = [prog.input("q", i) for i in range(j.nq)]
        qd = [prog.input("qd", i) for i in range(j.dof)]
        out = how(j, ProgramAlgebra(prog), q, qd)
        return prog.ops, [tuple(map(repr, a)) for a in prog.args], repr(out)

    custom = joint_model("custom", {"coordinates": ["a"], "rotation": [["z", "a"]],
                                    "translation": ["abs(a - 0.3)", "sqrt(1 + a**2)", "atan(a)"]})
    joints = [b.joint for name in ("spline_chain", "branched")
              for b in Tree(scleron.load_model(example(f"{name}.yaml"))).bodies] + [
        joint_model("spherical_quat", {}), custom]
    kinds = set()
    rng = np.random.default_rng(3)
    for j in joints:
        kinds.add(j.type)
        q = list(rng.uniform(0.1, 0.5, j.nq))
        qd = list(rng.uniform(-1, 1, j.dof))
        assert repr(j.kinematics(FloatAlgebra(), q, qd)) == repr(direct(j, FloatAlgebra(), q, qd))
        tape = j._tape[-1]
        assert program(j, lambda j, *a: j.kinematics(*a)) == program(j, direct)
        assert j._tape[-1] is tape                                 # recorded once
        dual, qx = DualAlgebra(), seeded(q)
        got, want = j.kinematics(dual, qx, qd), direct(j, dual, qx, qd)
        assert repr(plain(got)) == repr(plain(want))
    assert {"spline_curve", "surface_surface", "composite", "spherical_quat", "custom"} <= kinds
    with pytest.raises(ValueError, match="coordinates"):
        custom.kinematics(FloatAlgebra(), [0.1, 0.2], [0.0])


@pytest.mark.parametrize("scale", [1e-9, 1e-6, 1e3])
def test_a_tiny_custom_joint_keeps_its_terms(scale):
    """A reviewer: S was chopped at an absolute 1e-12, so a nanometre cam's 0.5 pm radius
    (r cos c, r sin c) left S's linear rows empty and M 1e-3 off. S and Sdot are now derived in
    the joint's own length unit (symbolic.length_unit): they scale with the joint's lengths.
    Oracle: the same joint at 1 m, scaled; round-off is still chopped in the joint's unit."""
    def cam(s):
        return joint_model("custom", {       # constants are floats (numbers in text are exact)
            "coordinates": ["c", "b"], "rotation": [["z", "c"], ["x", "0.5*b"]],
            "constants": {"r": 5e-4 * s, "h": 0.2 * s, "k": 1.5707963267948966},
            "translation": ["r*cos(c) + h*cos(k)*b", "r*sin(c)", "h*b"]})
    small, unit = cam(scale), cam(1.0)
    q, qd = [0.4, -0.3], [0.7, 1.1]
    for what in ("S", "Sdot"):
        got, ref = small.numeric(what, q, qd), unit.numeric(what, q, qd)
        ref[3:] *= scale
        assert np.allclose(got, ref, rtol=1e-14, atol=0), what
    # round-off (0.2 cos(pi/2) = 1.2e-17 of the joint's size) is chopped at every scale
    assert all(abs(x) > 1e-6 * scale for e in small.S[3:, :] for x in e.atoms(sp.Float))
    assert str(small.S).count("cos") == str(unit.S).count("cos")
    # a reviewer: a float constant inside a function, sin(k a) with k = 1e-13 (the unit now
    # comes from the translation's derivatives, not its outer coefficients)
    inner = joint_model("custom", {"coordinates": ["a"], "constants": {"k": 1e-13 * scale},
                                   "translation": ["sin(k*a)", "0", "0"]})
    assert abs(inner.numeric("S", [0.3])[3, 0] - 1e-13 * scale) < 1e-25 * scale


def test_a_composite_joints_tiny_terms_are_kept():
    """A reviewer: a composite joint's S is simplified again after its parts', in metres, and a
    helical part of pitch 1e-13 m/rad lost its linear rows (the helical joint alone kept them).
    Its linear rows now scale with the pitch: the same composite at pitch 0.1, scaled."""
    def composite(pitch):
        return joint_model("composite", {"parts": [
            {"type": "helical", "params": {"axis": [0, 0, 1], "pitch": pitch}},
            {"type": "revolute", "params": {"axis": [1, 0, 0]}}]})
    q, qd = [0.4, 0.7], [0.3, -1.2]
    for what in ("S", "Sdot"):
        tiny, ref = composite(1e-13).numeric(what, q, qd), composite(0.1).numeric(what, q, qd)
        ref[3:] *= 1e-12
        assert np.abs(tiny[3:]).max() > 0, what
        assert np.allclose(tiny, ref, rtol=1e-12, atol=1e-30), what
