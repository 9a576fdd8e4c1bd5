"""The general joints (docs/joints.md): custom expression joints, contact joints on spheres,
ellipsoids and tori, points on surfaces and curves, spline joints; joint springs and dampers;
external body wrenches.

Oracles that share nothing with the sympy derivation: central finite differences of the 4x4
transform G(q) for S and Sdot; Sueda's recursive Alg. 3 (with the B~' erratum fixed) and Alg. 4
written out here in numpy with their own SE(3) exp/log; virtual work through finite
differences of the forward kinematics for body wrenches; an RK4 energy balance for springs
and dampers. And the security promise: a malicious expression is rejected, nothing runs.
"""
import builtins
import math
import os
import re
import time

import numpy as np
import pytest
import sympy
import yaml

import scleron
from scleron.dynamics import recursions as rec
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.errors import ModelError
from scleron.joints import joint_model
from scleron.joints.expressions import ExpressionError, parse_expression
from scleron.kinematics import world_poses
from scleron.model import joint_dof
from scleron.model.yaml_loader import load_yaml_string, model_from_dict, model_to_dict
from scleron.unroll import unroll

H = 1e-6
TOL = 1e-8

SPHERE = {"shape": "sphere", "radius": 0.5}
ELLIPSOID = {"shape": "ellipsoid", "semi_axes": (0.6, 0.4, 0.3)}
TORUS = {"shape": "torus", "major_radius": 1.0, "minor_radius": 0.25}
SHAPES = {"sphere": SPHERE, "ellipsoid": ELLIPSOID, "torus": TORUS}
RZ90 = ((0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))


def placed(spec, **placement):
    return {**spec, **placement}


def spline_frames(n=7):
    """Control frames along a wavy 3-D path, each turned a little more than the last."""
    from scleron.model import rotation_from_rpy
    return [{"xyz": (float(k), math.sin(k), 0.3 * k * k),
             "rotation": tuple(map(tuple, rotation_from_rpy((0.3 * k, -0.2 * k, 0.5 * k))))}
            for k in range(n)]


def spline_control(shape=(5, 5), seed=3):
    rng = np.random.default_rng(seed)
    ctrl = {c: (rng.normal(size=shape) * 0.3).tolist() for c in ("x", "y", "z", "rx", "ry", "rz")}
    ctrl["x"] = (np.add.outer(np.arange(shape[0]), np.zeros(shape[1])) + np.asarray(ctrl["x"])).tolist()
    return ctrl


CUSTOM_PRODUCT = {"coordinates": ("a", "b"), "constants": {"r": 0.3},
                  "rotation": (("z", "a"), ("x", "0.5*b"), ((1.0, 2.0, 2.0), "sin(a)*b")),
                  "translation": ("r*cos(a) + sqrt(2 + b**2)/10", "r*sin(a) - log(2 + cos(b))",
                                  "b + exp(-b**2) + tanh(a) + abs(1.5 + sin(b))")}
CUSTOM_MATRIX = {"coordinates": ("c",),
                 "rotation": (("cos(c)", "-sin(c)*cos(0.5)", "sin(c)*sin(0.5)"),
                              ("sin(c)", "cos(c)*cos(0.5)", "-cos(c)*sin(0.5)"),
                              (0, "sin(0.5)", "cos(0.5)")),
                 "translation": ("asin(0.5*sin(c))", "atan(c) - acos(0.3*cos(c))",
                                 "(1 + c**2)**1.5/10 + (2 + sin(c))**0.7 + sinh(c) - cosh(c/2) + pi")}

# the surface pairs of the slow run only (each shape stays a parent and a child in the default
# run, ellipsoid-ellipsoid the most general pair)
SLOW_PAIRS = {("sphere", "sphere"), ("sphere", "ellipsoid"), ("torus", "ellipsoid"),
              ("ellipsoid", "torus")}

# (type, parameters, range of the random coordinates)
CASES = [
    ("custom", CUSTOM_PRODUCT, 1.2),
    ("custom", CUSTOM_MATRIX, 1.2),
] + [
    ("surface_surface", {"parent_surface": SHAPES[a],
                         "child_surface": placed(SHAPES[b], xyz=(0.1, 0.2, 0.3), rotation=RZ90)}, 1.2)
    for a in SHAPES for b in SHAPES if (a, b) not in SLOW_PAIRS
] + [
    ("surface_surface", {"parent_surface": placed(TORUS, xyz=(0.0, 0.0, -1.25), rotation=RZ90),
                         "child_surface": SPHERE, "spin": True}, 1.2),
    ("surface_surface", {"parent_surface": ELLIPSOID, "child_surface": ELLIPSOID, "spin": True}, 1.2),
    ("surface_point", {"surface": ELLIPSOID, "chart": "ZYX"}, 1.2),
    ("surface_point", {"surface": placed(TORUS, xyz=(0.0, 0.5, 0.0))}, 1.2),
    ("surface_point", {"surface": SPHERE, "chart": "XYX"}, 1.2),
    ("curve_point", {"curve": {"shape": "helix", "radius": 0.5, "rise": 0.1}, "chart": "XYZ"}, 1.2),
    ("curve_point", {"curve": {"shape": "circle", "radius": 0.5}}, 3.0),
    ("spline_curve", {"frames": spline_frames()}, None),
    ("spline_surface", {"control": spline_control()}, None),
    ("spline_surface", {"control": spline_control((4, 6), seed=5)}, None),
]

SLOW_CASES = [("surface_surface", {"parent_surface": SHAPES[a], "child_surface": SHAPES[b], "spin": True}, 1.2)
              for a in SHAPES for b in SHAPES] + [
    ("surface_surface", {"parent_surface": SHAPES[a],
                         "child_surface": placed(SHAPES[b], xyz=(0.1, 0.2, 0.3), rotation=RZ90)}, 1.2)
    for a, b in sorted(SLOW_PAIRS)]


def _id(case):
    jtype, p, _ = case
    if jtype == "surface_surface":
        return f"{p['parent_surface']['shape']}-{p['child_surface']['shape']}" + ("-spin" if p.get("spin") else "")
    if jtype == "custom":
        return "custom-" + ("matrix" if len(p["rotation"]) == 3 and len(p["rotation"][0]) == 3 else "product")
    extra = p.get("chart", "")
    shape = (p.get("surface") or p.get("curve") or {}).get("shape", "")
    if jtype == "spline_surface":
        shape = "x".join(map(str, np.shape(p["control"]["x"])))
    return f"{jtype}-{shape}{extra}"


def vee(T):
    return np.array([T[2, 1], T[0, 2], T[1, 0], T[0, 3], T[1, 3], T[2, 3]])


def S_fd(jm, q):
    Ginv = np.linalg.inv(jm.numeric("G", q))
    cols = []
    for k in range(jm.dof):
        e = np.zeros(jm.dof)
        e[k] = H
        cols.append(vee(Ginv @ (jm.numeric("G", q + e) - jm.numeric("G", q - e)) / (2 * H)))
    return np.array(cols).T


def random_coordinates(jtype, p, rng, qrange):
    if jtype == "spline_curve":
        return rng.uniform(0.05, len(p["frames"]) - 3.05, 1)
    if jtype == "spline_surface":
        m, n = np.shape(p["control"]["x"])
        return np.array([rng.uniform(0.05, m - 3.05), rng.uniform(0.05, n - 3.05)])
    d = joint_dof(jtype, p)
    return rng.uniform(-qrange, qrange, d)


def check_S_Sdot(case, n=3):
    jtype, params, qrange = case
    jm = joint_model(jtype, params)
    assert jm.dof == joint_dof(jtype, params) == len(jm.coordinates)
    rng = np.random.default_rng(11)
    for _ in range(n):
        q = random_coordinates(jtype, params, rng, qrange)
        qd = rng.normal(size=jm.dof)
        G = jm.numeric("G", q)
        np.testing.assert_allclose(G[:3, :3].T @ G[:3, :3], np.eye(3), atol=1e-12)
        S = jm.numeric("S", q)
        assert S.shape == (6, jm.dof)
        scale = max(1.0, np.abs(S).max())
        np.testing.assert_allclose(S, S_fd(jm, q), atol=TOL * scale, rtol=0)
        Sdot_fd = (jm.numeric("S", q + H * qd) - jm.numeric("S", q - H * qd)) / (2 * H)
        np.testing.assert_allclose(jm.numeric("Sdot", q, qd), Sdot_fd, atol=TOL * scale, rtol=0)
        assert np.linalg.matrix_rank(S, tol=1e-9) == jm.dof, "S lost rank at a generic point"
    return jm


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_S_and_Sdot_match_finite_differences(case):
    check_S_Sdot(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=[_id(c) for c in SLOW_CASES])
def test_every_surface_pair_with_spin_and_the_rest_without(case):
    check_S_Sdot(case, n=2)


def test_torus_torus_S_is_compact_and_exact():
    """The fully simplified contact of two tori: a handful of operations (expansion and sin^2 + cos^2 = 1 pay), and
    the u2 column (the child spinning about its own symmetry axis) exactly constant."""
    jm = joint_model("surface_surface", {"parent_surface": TORUS, "child_surface": TORUS})
    assert not jm.light
    assert sum(sympy.count_ops(e) for e in jm.S) < 100, jm.S
    assert list(jm.S[:, 2]) == [0, 0, -1, 0, 0, 0]


# ---- splines against Sueda's recursive algorithms -----------------------------------------------
BASIS = np.array([[1, -3, 3, -1], [4, 0, -6, 3], [1, 3, 3, -3], [0, 0, 0, 1]]) / 6.0   # Sueda (2.68)


def hat6(xi):
    w, v = xi[:3], xi[3:]
    T = np.zeros((4, 4))
    T[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    T[:3, 3] = v
    return T


def expm(A):
    """Matrix exponential by scaling and squaring a Taylor series (no Rodrigues)."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(A).sum(axis=1).max(), 1e-300)))) + 1)
    B = A / 2 ** s
    E, term = np.eye(len(A)), np.eye(len(A))
    for k in range(1, 25):
        term = term @ B / k
        E = E + term
    for _ in range(s):
        E = E @ E
    return E


def log_se3(T):
    R, p = T[:3, :3], T[:3, 3]
    th = math.acos(max(-1.0, min(1.0, (np.trace(R) - 1) / 2)))
    W = (R - R.T) * (0.5 if th < 1e-9 else th / (2 * math.sin(th)))
    w = np.array([W[2, 1], W[0, 2], W[1, 0]])
    # v from p = V v, V = I + (1 - cos)/th^2 W + (th - sin)/th^3 W^2
    V = np.eye(3) + (1 - math.cos(th)) / th ** 2 * W + (th - math.sin(th)) / th ** 3 * W @ W \
        if th > 1e-9 else np.eye(3) + W / 2
    xi = np.concatenate([w, np.linalg.solve(V, p)])
    assert np.allclose(expm(hat6(xi)), T, atol=1e-12)
    return xi


def Ad(T):
    R, p = T[:3, :3], T[:3, 3]
    P = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    A = np.zeros((6, 6))
    A[:3, :3], A[3:, 3:], A[3:, :3] = R, R, P @ R
    return A


def ad(xi):
    w, v = xi[:3], xi[3:]
    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    V = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    A = np.zeros((6, 6))
    A[:3, :3], A[3:, 3:], A[3:, :3] = W, W, V
    return A


def cumulative(u):
    """B~1..4 and their first and second derivatives at u in [0, 1] (Sueda 2.72, 2.73)."""
    b = BASIS @ [1, u, u * u, u ** 3]
    db = BASIS @ [0, 1, 2 * u, 3 * u * u]
    ddb = BASIS @ [0, 0, 2, 6 * u]
    return ([b[i:].sum() for i in range(4)], [db[i:].sum() for i in range(4)], [ddb[i:].sum() for i in range(4)])


def algorithm3(frames, s, corrected=True):
    """Sueda's Alg. 3 on the segment of s: Q, S and dS/ds. corrected=False is the seed's line 10."""
    C = []
    for f in frames:
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = f["rotation"], f["xyz"]
        C.append(T)
    k = min(int(math.floor(s)), len(C) - 4)
    u = s - k
    C1, C2, C3, C4 = C[k:k + 4]
    dC = {2: log_se3(np.linalg.inv(C1) @ C2), 3: log_se3(np.linalg.inv(C2) @ C3),
          4: log_se3(np.linalg.inv(C3) @ C4)}
    Bt, dBt, ddBt = cumulative(u)
    Q = C1 @ expm(hat6(dC[2] * Bt[1]))
    S = dC[2] * dBt[1]
    dS = dC[2] * ddBt[1]
    for i in (3, 4):
        Qi = expm(hat6(dC[i] * Bt[i - 1]))
        Q = Q @ Qi
        A = Ad(np.linalg.inv(Qi))
        a = ad(S)
        dS = dC[i] * ddBt[i - 1] + A @ (dS + a @ dC[i] * (dBt[i - 1] if corrected else Bt[i - 1]))
        S = dC[i] * dBt[i - 1] + A @ S
    return Q, S, dS


def test_spline_curve_matches_sueda_algorithm_3():
    """Q, S and Sdot of the (branch-free, all-segment) spline curve joint equal Sueda's Alg. 3
    with the erratum fixed on every segment; the seed's line 10 (B~ for B~') does not."""
    frames = spline_frames()
    jm = joint_model("spline_curve", {"frames": frames})
    seen_wrong = 0.0
    for s in [0.0, 0.3, 0.99, 1.0, 1.5, 2.2, 3.0, 3.7, 4.0]:
        Q, S, dS = algorithm3(frames, s)
        qd = 0.7
        np.testing.assert_allclose(jm.numeric("G", [s]), Q, atol=1e-10, rtol=0)
        np.testing.assert_allclose(jm.numeric("S", [s])[:, 0], S, atol=1e-10, rtol=0)
        np.testing.assert_allclose(jm.numeric("Sdot", [s], [qd])[:, 0], dS * qd, atol=1e-10, rtol=0)
        _, _, dS_seed = algorithm3(frames, s, corrected=False)
        seen_wrong = max(seen_wrong, np.abs(dS_seed - dS).max())
    assert seen_wrong > 1e-2, "the seed's uncorrected line 10 should give a different dS/dq"


@pytest.mark.parametrize("scale", [1e-2, 1e-6])
def test_a_small_ellipsoid_keeps_its_motion(scale):
    """An outside tester: an ellipsoid of 5 mm semi-axes (not short fractions) lost terms of
    its frame's twists to chop's absolute 1e-12 (they carry powers of the semi-axes), and S, M
    and forward dynamics were wrong without a word (u2's angular z 0 for -1.336). Oracle: the
    same joint at 1 m, its linear rows scaled."""
    def joints(s):
        torus = {"shape": "torus", "major_radius": 0.4123457 * s, "minor_radius": 0.1234567 * s}
        pebble = {"shape": "ellipsoid", "semi_axes": [0.50685 * s, 0.36605 * s, 0.25565 * s]}
        return (joint_model("surface_surface", {"parent_surface": torus, "child_surface": pebble}),
                joint_model("surface_point", {"surface": pebble, "chart": "ZYX"}))
    q = [0.3, 0.4, 0.2, -0.3, 0.1]
    for small, unit in zip(joints(scale), joints(1.0)):
        qj = q[:small.nq]
        got, ref = small.numeric("S", qj), unit.numeric("S", qj)
        ref[3:] *= scale
        assert np.abs(got - ref).max() < 1e-13 * max(1.0, np.abs(ref).max()), small.type


@pytest.mark.parametrize("turn", [1e-8, 1.2e-8, 1e-6, 1e-4])
def test_nearly_aligned_spline_frames_give_the_curve(turn):
    """An outside tester: control frames turned by a tiny angle broke the frame differences'
    logarithm (acos of the trace, the closed form of V^-1): at 1.2e-8 rad the curve was shrunk
    by 35 %, at 1e-8 codegen failed on a division by zero, and the exponential's 1 - cos lost
    3e-9 m. Oracles: the curve ends on the last control frame (exactly, at s = n - 1), and
    scipy's matrix logarithm and exponential of the frame differences."""
    from scipy.linalg import expm, logm
    from scleron.joints.splines import frame_differences, frame_matrix, hat3
    frames = [{"xyz": [k, 0.3 * (k % 2), 0.2 - 0.05 * k], "rpy": [0, 0, turn * (k % 2)]}
              for k in range(5)]
    normal = [{"xyz": f["xyz"], "rotation": axis_rotation_z(f["rpy"][2])} for f in frames]
    jm = joint_model("spline_curve", {"frames": normal})
    for xi, (A, B) in zip(frame_differences(normal), zip(normal, normal[1:])):
        D = np.real(logm(np.linalg.inv(frame_matrix(A)) @ frame_matrix(B)))
        assert np.abs(xi - [D[2, 1], D[0, 2], D[1, 0], *D[:3, 3]]).max() < 1e-13
        X = np.zeros((4, 4))
        X[:3, :3], X[:3, 3] = hat3(xi[:3]), xi[3:]
        assert np.abs(expm(X) - np.linalg.inv(frame_matrix(A)) @ frame_matrix(B)).max() < 1e-14
    end = jm.numeric("G", [4.0])
    assert np.abs(end - frame_matrix(normal[-1])).max() < 1e-13


def axis_rotation_z(a):
    return [[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]]


def test_cumulative_basis_is_sueda_on_each_segment():
    from scleron.joints.special import PosPart3
    from scleron.joints.splines import cumulative_basis
    x = sympy.Symbol("x", real=True)
    beta = sympy.lambdify(x, cumulative_basis(x), modules=[{"PosPart3": PosPart3.numeric}, "numpy"])
    for u in np.linspace(0, 1, 7):
        Bt, _, _ = cumulative(u)
        assert abs(beta(u) - Bt[3]) < 1e-14 and abs(beta(u + 1) - Bt[2]) < 1e-14
        assert abs(beta(u + 2) - Bt[1]) < 1e-14
        assert beta(u - 1) == 0 and abs(beta(u + 3) - 1) < 1e-14


def algorithm4(control, u, v):
    """Sueda's Alg. 4 on the patch of (u, v): Q, S (6 x 2) and dS[:, i, j] = dS_i/dq_j."""
    m, n = np.shape(control["x"])
    ku, kv = min(int(math.floor(u)), m - 4), min(int(math.floor(v)), n - 4)
    s, t = u - ku, v - kv
    vec = lambda x: np.array([1, x, x * x, x ** 3])
    dvec = lambda x: np.array([0, 1, 2 * x, 3 * x * x])
    ddvec = lambda x: np.array([0, 0, 2, 6 * x])
    E = np.eye(6)[[3, 4, 5, 0, 1, 2]]                      # e1..3 linear, e4..6 angular (2.77)
    comps = ["x", "y", "z", "rx", "ry", "rz"]

    def f(k, a, b):
        C = np.asarray(control[comps[k]])[ku:ku + 4, kv:kv + 4]
        return a(s) @ BASIS.T @ C @ BASIS @ b(t)
    df = lambda k, i: f(k, dvec, vec) if i == 0 else f(k, vec, dvec)
    ddf = lambda k, i, j: (f(k, ddvec, vec) if i == j == 0 else f(k, vec, ddvec) if i == j == 1
                           else f(k, dvec, dvec))
    Q = expm(hat6(E[0] * f(0, vec, vec)))
    S = [E[0] * df(0, i) for i in range(2)]
    dS = [[E[0] * ddf(0, i, j) for j in range(2)] for i in range(2)]
    for k in range(1, 6):
        Qk = expm(hat6(E[k] * f(k, vec, vec)))
        Q = Q @ Qk
        A = Ad(np.linalg.inv(Qk))
        for i in range(2):
            a = ad(S[i])
            S[i] = E[k] * df(k, i) + A @ S[i]
            for j in range(2):
                dS[i][j] = E[k] * ddf(k, i, j) + A @ (dS[i][j] + a @ E[k] * df(k, j))
    return Q, np.array(S).T, np.array([[dS[i][j] for j in range(2)] for i in range(2)]).transpose(2, 0, 1)


@pytest.mark.parametrize("shape", [(5, 5), (4, 6)])
def test_spline_surface_matches_sueda_algorithm_4(shape):
    control = spline_control(shape, seed=5)
    jm = joint_model("spline_surface", {"control": control})
    rng = np.random.default_rng(2)
    points = [(0.0, 0.0), (shape[0] - 3.0, shape[1] - 3.0), (1.0, 0.5)] + \
        [(rng.uniform(0, shape[0] - 3), rng.uniform(0, shape[1] - 3)) for _ in range(4)]
    for u, v in points:
        Q, S, dS = algorithm4(control, u, v)
        qd = rng.normal(size=2)
        np.testing.assert_allclose(jm.numeric("G", [u, v]), Q, atol=1e-10, rtol=0)
        np.testing.assert_allclose(jm.numeric("S", [u, v]), S, atol=1e-10, rtol=0)
        np.testing.assert_allclose(jm.numeric("Sdot", [u, v], qd), dS @ qd, atol=1e-10, rtol=0)


# ---- custom joints: the expression language and its security ------------------------------------
CUSTOM_YAML = """\
name: cam
bodies:
  - name: slider
    parent: world
    joint:
      name: cam
      type: custom
      coordinates: [a, b]
      constants: {{r: 0.3}}
      rotation: [[z, "a"], [x, "0.5*b"]]
      translation: [{tx}, "r*sin(a)", "b"]
    mass: 1.0
    inertia: [0.1, 0.1, 0.1]
"""


def custom_text(tx):
    return CUSTOM_YAML.format(tx=yaml.safe_dump(tx, default_style='"').strip())


def test_malicious_expression_is_rejected_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    path = tmp_path / "evil.yaml"
    path.write_text(custom_text(payload))
    with pytest.raises(ModelError) as e:
        scleron.load_model(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:"), msg                       # the file and a line
    assert "joint 'cam'" in msg and "translation[0]" in msg and "'__import__'" in msg, msg
    # the same through the dict loader and the Python API
    with pytest.raises(ModelError, match="__import__"):
        model_from_dict(yaml.safe_load(custom_text(payload)), "evil.yaml")
    with pytest.raises(ModelError, match="__import__"):
        scleron.Model("m").add_body("b", joint="custom", coordinates=["a"], translation=[payload, 0, 0])
    assert not marker.exists()


@pytest.mark.parametrize("text, token", [
    ("().__class__", ")"), ("a.__class__", "."), ("a[0]", "["), ("'x'", "'"), ('"x"', '"'),
    ("lambda: 1", "lambda"), ("eval('1')", "eval"), ("os.system", "os"), ("a; b", ";"), ("a, b", ","),
    ("a if b else 1", "if"), ("1 +", None), ("2^3", "^"), ("sin", "sin"), ("a(1)", "a"), ("1.2.3", "1.2."),
    ("x" * 401, None), ("(" * 30 + "a" + ")" * 30, "("), ("a**100", "**"), ("((a**8)**8)**8", "**"),
    ("b @ a", "@"), ("__builtins__", "__builtins__"), ("1e999", "1e999"),
])
def test_bad_expressions_are_rejected_naming_the_token(text, token):
    with pytest.raises(ModelError) as e:
        load_yaml_string(custom_text(text), "bad.yaml")
    msg = str(e.value)
    assert msg.startswith("bad.yaml:") and "joint 'cam'" in msg, msg
    if token is not None:
        assert repr(token) in msg, msg


@pytest.mark.parametrize("tx, value", [("sqrt(a**2)", abs), ("(a**2)**1.5", lambda a: abs(a) ** 3),
                                       ("sqrt(sin(a)**2)*b", lambda a: abs(math.sin(a)) * 0.3)])
def test_sympys_own_abs_is_the_branch_free_abs(tx, value):
    """sympy writes sqrt(a**2) of a real coordinate as its Abs (then sign, DiracDelta): the
    model was refused ("cannot evaluate Abs in generated code", an outside tester). It is the
    abs() piece: placements as written, the Jacobian the central difference of them."""
    from scleron.dynamics import frames
    tree = Tree(load_yaml_string(custom_text(tx), "abs.yaml"))
    alg = FloatAlgebra()
    for a in (-0.7, 0.4):
        q = [a, 0.3]
        X = np.array(frames.frame_placements(tree, alg, q)[-1], dtype=float)
        assert X[0, 3] == pytest.approx(value(a), abs=1e-15)        # translation [tx, ., .]
        J = np.array(frames.frame_jacobians(tree, alg, q, "world")[-1], dtype=float)[3:, 0]
        h = 1e-6
        p = [np.array(frames.frame_placements(tree, alg, [a + s, 0.3])[-1], dtype=float)[:3, 3]
             for s in (h, -h)]
        origin = X[:3, 3]                       # world frame's linear rows: velocity at the origin
        w = np.array(frames.frame_jacobians(tree, alg, q, "world")[-1], dtype=float)[:3, 0]
        assert np.allclose(J + np.cross(w, origin), (p[0] - p[1]) / (2 * h), atol=1e-8)


def test_an_expression_that_ends_too_early_says_where():
    """'a*(2+' was "the expression ends too early", with no position (an outside tester)."""
    with pytest.raises(ModelError, match=r"translation\[0\]: the expression ends too early \(at "
                                         r"position 5: an operand is missing, or a parenthesis"):
        load_yaml_string(custom_text("a*(2+"), "bad.yaml")


def test_expression_parser_builds_sympy_without_eval(monkeypatch):
    """Loading custom joints never reaches eval, exec, sympify-on-a-string or parse_expr."""
    def forbidden(*args, **kw):
        raise AssertionError("eval/exec/parse_expr called while loading a model")
    import sys
    sympify_module = sys.modules["sympy.core.sympify"]
    real_sympify = sympify_module.sympify

    def guarded_sympify(a, *args, **kw):
        if isinstance(a, str):
            raise AssertionError("sympify called on a string")
        return real_sympify(a, *args, **kw)
    import sympy.parsing.sympy_parser as parser
    # sympy imports some of its modules at their first use (a module's code runs through exec):
    # one load first, so that the test alone sees the same sympy as after the others
    load_yaml_string(custom_text("r*cos(a) + 0.5*sqrt(1 + b**2) - atan(b)/pi"), "ok.yaml")
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(parser, "parse_expr", forbidden)
    monkeypatch.setattr(parser, "eval_expr", forbidden)
    monkeypatch.setattr(sympy, "sympify", guarded_sympify)
    monkeypatch.setattr(sympify_module, "sympify", guarded_sympify)
    m = load_yaml_string(custom_text("r*cos(a) + 0.5*sqrt(1 + b**2) - atan(b)/pi"), "ok.yaml")
    assert m.nq == 2
    with pytest.raises(ModelError):
        load_yaml_string(custom_text("__import__('os')"), "bad.yaml")


def test_expression_grammar():
    a, b = sympy.symbols("a b", real=True)
    names = {"a": a, "b": b, "r": sympy.Rational(3, 10)}
    cases = {"-a**2": -a ** 2, "2**-1": sympy.Rational(1, 2), "a**b**2": a ** (b ** 2),
             "a - b - 1": a - b - 1, "a/b/2": a / b / 2, "(a + b)*r": sympy.Rational(3, 10) * (a + b),
             "1e-3*a": a / 1000, ".5": sympy.Rational(1, 2), "+a": a, "--a": a, "pi*a": sympy.pi * a,
             "sqrt(a)**2": a}
    for text, want in cases.items():
        assert sympy.simplify(parse_expression(text, names) - want) == 0, text
    for bad in ["", " ", "a b", ")", "cos(a", "sin()", "a**", "1/0"]:
        with pytest.raises(ExpressionError):
            parse_expression(bad, names)


@pytest.mark.parametrize("rotation, problem", [
    ('[["cos(a)", "sin(a)", 0], ["sin(a)", "cos(a)", 0], [0, 0, 1]]', "not orthonormal"),
    ("[[1, 0, 0], [0, 1, 0], [0, 0, -1]]", "reflection"),
    ('[["2*cos(a)", "-sin(a)", 0], ["sin(a)", "cos(a)", 0], [0, 0, 1]]', "not orthonormal"),
    ('[[w, "a"]]', "unknown axis"),
    ('[[[0, 0, 0], "a"]]', "non-zero"),
    ('[[z, "a", 1]]', "pair"),
])
def test_custom_rotation_must_be_a_rotation(rotation, problem):
    text = custom_text("0").replace('rotation: [[z, "a"], [x, "0.5*b"]]', f"rotation: {rotation}")
    with pytest.raises(ModelError, match=problem) as e:
        load_yaml_string(text, "rot.yaml")
    assert "joint 'cam'" in str(e.value) and str(e.value).startswith("rot.yaml:")


def test_custom_transform_must_be_finite():
    with pytest.raises(ModelError, match="exp\\(exp\\(10\\)\\) at position 4 is not a finite real"):
        load_yaml_string(custom_text("exp(exp(exp(10)))"), "inf.yaml")
    with pytest.raises(ModelError, match="cannot be evaluated"):
        load_yaml_string(custom_text("sqrt(-1 - a**2)"), "nan.yaml")
    # which expression, where (it named neither: an outside tester)
    with pytest.raises(ModelError, match=r"cannot be evaluated .*\(last problem: translation\[0\] "
                                         r"at coordinates \[-?\d.*\]: math domain error\)"):
        load_yaml_string(custom_text("sqrt(a - 5)"), "nan.yaml")


@pytest.mark.parametrize("text, constant", [
    ("cos(exp(1e30))**3", "exp(1000000000000000000000000000000)"),
    ("a + sinh(cosh(100))", "-exp(-exp(100)/2"), ("a**exp(exp(exp(exp(5))))", "exp(exp(exp(5)))"),
    ("sqrt(exp(exp(exp(exp(5))))-1)", "exp(exp(exp(5)))"), ("sqrt(-1)**2*a", "I"),
    ("acos(3)**2 + a", "acos(3)"), ("a/(exp(exp(exp(exp(5))))-1)", "exp(exp(exp(5)))"),
    ("a*(-8)**(1/3)", "2*(-1)**(1/3)"), ("log(-1) + a", "I*pi"),
    ("cos(exp(700)*exp(700))*a", "cos(exp(1400))"),
    ("(1e200*1e200)**2*a", "1.00000000000000e+400")])
def test_a_constant_beyond_doubles_is_refused_at_once(text, constant):
    """An outside tester: constants of about e^(1e30) made sympy work at their precision and the
    loader never ended; complex ones (sqrt(-1), acos(3)) were an internal TypeError. Each
    constant is now computed in doubles as it is read, and refused by its text and position."""
    start = time.perf_counter()
    with pytest.raises(ModelError, match=re.escape(f"the constant {constant}")):
        load_yaml_string(custom_text(text), "big.yaml")
    assert time.perf_counter() - start < 5


def test_constants_within_doubles_are_kept():
    """The check of constants (a reviewer): sympy's tan(pi/2 + c) is -cot(c), and sums and
    products are not checked on the way (1e308*10/100 is 1e307), so these load as before."""
    for text, value in (("a + tan(pi/2 + 0.3)", -1 / math.tan(0.3)),
                        ("a + 1e308*10/100", 1e307), ("a + (-2)**3 + sqrt(2)**2", -6.0)):
        expr = scleron.joints.expressions.parse_expression(text, {"a": sympy.Symbol("a")})
        assert abs(float(expr.subs("a", 0)) - value) <= 1e-15 * abs(value), text
    # and through the loader, whose generated code has tan but no cot (a reviewer)
    for text in ("a + tan(pi/2 + 0.3)", "0.1*tan(a + pi/2 + 0.5)"):
        model = load_yaml_string(custom_text(text), "cot.yaml")
        assert model.joints[-1].type == "custom"


# ---- loader strictness for the new keys ---------------------------------------------------------
BASE = """\
name: m
bodies:
  - name: a
    parent: world
    joint: {JOINT}
    mass: 1.0
    inertia: [0.1, 0.1, 0.1]
  - name: b
    parent: a
    joint: {{name: jb, type: revolute}}
    mass: 1.0
    inertia: [0.1, 0.1, 0.1]
"""
TORUS_Y = "{shape: torus, major_radius: 1.0, minor_radius: 0.25}"
BAD_GENERAL = {
    "surface_unknown_key": ("{name: ja, type: surface_surface, parent_surface: {shape: sphere, radius: 1, colour: red}}",
                            ["'colour'", "parent_surface"]),
    "surface_unknown_shape": ("{name: ja, type: surface_point, surface: {shape: cube, radius: 1}}", ["'cube'"]),
    "surface_missing_radius": ("{name: ja, type: surface_point, surface: {shape: sphere}}", ["'radius'"]),
    "torus_fat": ("{name: ja, type: surface_point, surface: {shape: torus, major_radius: 1, minor_radius: 2}}",
                  ["minor radius"]),
    "ellipsoid_negative": ("{name: ja, type: surface_point, surface: {shape: ellipsoid, semi_axes: [1, -1, 1]}}",
                           ["positive"]),
    "spin_number": (f"{{name: ja, type: surface_surface, parent_surface: {TORUS_Y}, spin: 1}}", ["true or false"]),
    "curve_unknown": ("{name: ja, type: curve_point, curve: {shape: spiral, radius: 1}}", ["circle or helix"]),
    "curve_chart": ("{name: ja, type: curve_point, curve: {shape: circle, radius: 1}, chart: ABC}", ["chart"]),
    "frames_short": ("{name: ja, type: spline_curve, frames: [{xyz: [0, 0, 0]}, {xyz: [1, 0, 0]}]}", ["4 to 24", "grows with their square"]),
    "frames_half_turn": ("{name: ja, type: spline_curve, frames: [{xyz: [0, 0, 0]}, {xyz: [1, 0, 0], rpy: [0, 0, 3.1416]},"
                         " {xyz: [2, 0, 0]}, {xyz: [3, 0, 0]}]}", ["180.00 degrees", "at most 179.94 degrees (pi - 0.001 rad)"]),
    "frames_missing": ("{name: ja, type: spline_curve}", ["frames"]),
    "control_small": ("{name: ja, type: spline_surface, control: {z: [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}}", ["4 to 32"]),
    "control_component": ("{name: ja, type: spline_surface, control: {w: [[0]]}}", ["'w'"]),
    "control_shapes": ("{name: ja, type: spline_surface, control: {x: [[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]],"
                       " y: [[0,0,0,0,0],[0,0,0,0,0],[0,0,0,0,0],[0,0,0,0,0]]}}", ["4x5", "4x4"]),
    "stiffness_negative": ("{name: ja, type: revolute, stiffness: -1}", ["not be negative"]),
    "damping_length": ("{name: ja, type: universal, damping: [1, 2, 3]}", ["list of 2 numbers"]),
    "rest_string": ("{name: ja, type: revolute, rest: up}", ["rest must be a number"]),
    "stiffness_fixed": ("{name: ja, type: fixed, stiffness: 1}", ["stiffness: a fixed joint has no coordinates"]),
    "custom_part": ("{name: ja, type: composite, parts: [{type: custom, coordinates: [a]}]}", ["composite part"]),
    "custom_no_coordinates": ("{name: ja, type: custom, translation: [0, 0, 0]}", ["coordinates"]),
    "custom_reserved_name": ("{name: ja, type: custom, coordinates: [sin]}", ["reserved"]),
    "custom_duplicate_name": ("{name: ja, type: custom, coordinates: [a, a]}", ["same name"]),
    "custom_constant_string": ("{name: ja, type: custom, coordinates: [a], constants: {k: big}}", ["finite number"]),
    "custom_constant_clash": ("{name: ja, type: custom, coordinates: [a], constants: {a: 1}}", ["name of a coordinate"]),
    "custom_translation_length": ("{name: ja, type: custom, coordinates: [a], translation: [a, 0]}", ["3 expressions"]),
    "custom_placement_rotation": ("{name: ja, type: custom, coordinates: [a], rotation: [[1, 0, 0], [0, 1, 0]]}",
                                  ["pair"]),
}


@pytest.mark.parametrize("key", sorted(BAD_GENERAL))
def test_bad_general_joint_parameters(key):
    joint, fragments = BAD_GENERAL[key]
    with pytest.raises(ModelError) as e:
        load_yaml_string(BASE.format(JOINT=joint), "bad.yaml")
    msg = str(e.value)
    assert msg.startswith("bad.yaml:") and "joint 'ja'" in msg, msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


def test_wrench_key_is_checked():
    text = BASE.format(JOINT="{name: ja}").replace("    inertia: [0.1, 0.1, 0.1]\n  - name: b",
                                                    "    inertia: [0.1, 0.1, 0.1]\n    wrench: [1, 2]\n  - name: b")
    with pytest.raises(ModelError, match="wrench must be a list of 6") as e:
        load_yaml_string(text, "bad.yaml")
    assert "body 'a'" in str(e.value) and str(e.value).startswith("bad.yaml:")


def test_python_api_has_the_same_checks():
    m = scleron.Model("m")
    with pytest.raises(ModelError, match="minor radius"):
        m.add_body("a", joint="surface_point", surface={"shape": "torus", "major_radius": 1, "minor_radius": 1})
    with pytest.raises(ModelError, match="not be negative"):
        m.add_body("a", joint="revolute", damping=-0.1)
    with pytest.raises(ModelError, match="6 numbers"):
        m.add_body("a", joint="revolute", wrench=(1, 2, 3))
    b = m.add_body("a", joint="universal", stiffness=2.0, damping=(0.1, 0.2), rest=0.5, wrench=[0, 0, 1, 0, 0, 0])
    assert m.joints[0].stiffness == (2.0, 2.0) and m.joints[0].rest == (0.5, 0.5) and b.wrench[2] == 1.0


# ---- a compiled model with the new joints, springs and dampers ------------------------------------
MIXED = """\
name: mixed
gravity: [0, 0, -9.81]
bodies:
  - name: base
    parent: world
    joint:
      name: cam
      type: custom
      coordinates: [a, b]
      constants: {r: 0.3, k: 0.2}
      rotation: [[z, "a + 0.1*sin(b)"], [x, "atan(0.5*b) + 0.1*tanh(a)"], [y, "0.2*asin(0.5*sin(a)) - 0.1*acos(0.3*cos(b))"]]
      translation: ["r*cos(a) + 0.05*sqrt(2 + b**2)", "r*sin(a) + k*log(2 + cos(b))",
                    "0.1*b + 0.05*exp(-b**2) + 0.02*cosh(0.5*a) - 0.01*sinh(b) + 0.01*abs(1.5 + sin(b))"]
      stiffness: [3.0, 2.0]
      damping: [0.1, 0.2]
      rest: [0.1, -0.1]
      xyz: [0.05, 0, 0.1]
      rpy: [0.1, -0.2, 0.3]
    mass: 1.0
    com: [0.05, 0, 0]
    inertia: [0.02, 0.03, 0.04]
  - name: bead
    parent: base
    joint: {name: wire, type: curve_point, curve: {shape: helix, radius: 0.4, rise: 0.05}, chart: ZYX,
            stiffness: 1.0, damping: 0.05}
    mass: 0.5
    com: [0, 0.02, 0]
    inertia: [0.002, 0.003, 0.004]
  - name: puck
    parent: bead
    joint: {name: glide, type: surface_point, surface: {shape: sphere, radius: 0.3, xyz: [0, 0, -0.2]},
            damping: 0.1}
    mass: 0.4
    inertia: [0.001, 0.001, 0.0015]
  - name: arm
    parent: puck
    joint:
      name: bend
      type: custom
      coordinates: [c]
      rotation: [["cos(c)", "-sin(c)*cos(0.5)", "sin(c)*sin(0.5)"], ["sin(c)", "cos(c)*cos(0.5)", "-cos(c)*sin(0.5)"],
                 [0, "sin(0.5)", "cos(0.5)"]]
      translation: [0, "0.1*(1 + c**2)**1.5", "0.05*(2 + sin(c))**0.7"]
      stiffness: 5.0
      rest: 0.2
    mass: 0.3
    com: [0.1, 0, 0]
    inertia: [0.001, 0.002, 0.002]
  - name: ring
    parent: arm
    joint: {name: roll, type: surface_surface, parent_surface: {shape: sphere, radius: 0.2},
            child_surface: {shape: torus, major_radius: 0.3, minor_radius: 0.05}, xyz: [0.2, 0, 0]}
    mass: 0.2
    inertia: [0.005, 0.005, 0.009]
initial:
  q: {cam: [0.2, -0.3], wire: [0.5, 0.1, -0.2, 0.3], glide: [0.4, 0.3], bend: -0.2, roll: [0.1, 0.2, 3.0, -0.1]}
  qd: [0.5, -0.3, 0.2, 0.1, 0.3, -0.2, 0.4, -0.1, 0.2, 0.3, -0.2, 0.1, 0.2]
"""


@pytest.fixture(scope="module")
def mixed(generated):
    return generated(load_yaml_string(MIXED, "mixed.yaml"), "mixed")


def numeric_tree(model):
    return Tree(model), FloatAlgebra()


def test_mixed_generated_code_equals_numeric_reference(mixed, rng):
    """Custom joints with every function of the language, a bead on a helix, a puck on a
    sphere, a sphere-torus contact, springs and dampers: generated C = numeric reference,
    M SPD, M FD + h = tau, ID(FD) = tau."""
    model, dyn = mixed
    tree, alg = numeric_tree(model)
    assert model.nv == 13
    for _ in range(3):
        q = model.q0 + rng.normal(scale=0.2, size=model.nv)
        qd, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        M, h, a = dyn.mass_matrix(q), dyn.bias_forces(q, qd), dyn.forward_dynamics(q, qd, tau)
        np.linalg.cholesky(M)
        np.testing.assert_allclose(M @ a + h, tau, rtol=0, atol=1e-9 * np.abs(tau).max())
        np.testing.assert_allclose(dyn.inverse_dynamics(q, qd, a), tau, rtol=0, atol=1e-9 * np.abs(tau).max())
        a_ref = np.array(rec.forward_dynamics(tree, alg, list(q), list(qd), list(tau)))
        np.testing.assert_allclose(a, a_ref, rtol=0, atol=1e-9 * np.abs(a_ref).max())
        np.testing.assert_allclose(h, rec.bias_forces(tree, alg, list(q), list(qd)), rtol=0,
                                   atol=1e-10 * np.abs(h).max())


def test_springs_and_dampers_are_the_passive_force():
    """h(with springs/dampers) - h(without) = K (q - q_rest) + D qd, exactly (Sueda 2.79, 2.81)."""
    with_springs = load_yaml_string(MIXED, "mixed.yaml")
    plain = model_from_dict({**yaml.safe_load(MIXED)}, "plain.yaml")
    for j in plain.joints:
        j.stiffness = j.damping = j.rest = None
    K = np.concatenate([j.stiffness or np.zeros(j.dof) for j in with_springs.joints])
    D = np.concatenate([j.damping or np.zeros(j.dof) for j in with_springs.joints])
    rest = np.concatenate([j.rest or np.zeros(j.dof) for j in with_springs.joints])
    assert K.any() and D.any()
    rng = np.random.default_rng(4)
    n = with_springs.nv
    q, qd = with_springs.q0 + rng.normal(scale=0.1, size=n), rng.normal(size=n)
    h1 = rec.bias_forces(Tree(with_springs), FloatAlgebra(), list(q), list(qd))
    h0 = rec.bias_forces(Tree(plain), FloatAlgebra(), list(q), list(qd))
    np.testing.assert_allclose(np.subtract(h1, h0), K * (q - rest) + D * qd, atol=1e-12)


def forward_kinematics(model, q):
    """World 4x4 pose of every body: scleron.kinematics (joint library transforms composed with
    the placements, independent of the recursions)."""
    return list(world_poses(model, q))


def potential_energy(model, q):
    return -sum(b.inertia.mass * model.gravity @ (G[:3, :3] @ b.inertia.com + G[:3, 3])
                for b, G in zip(model.bodies, forward_kinematics(model, q)))


def spring_energy(model, q):
    E, k = 0.0, 0
    for j in model.joints:
        if j.stiffness is not None:
            rest = np.array(j.rest or np.zeros(j.dof))
            E += 0.5 * float(np.sum(np.array(j.stiffness) * (q[k:k + j.dof] - rest) ** 2))
        k += j.dof
    return E


def test_energy_balance_with_springs_dampers_and_torque(mixed):
    """RK4 on (q, qd, W) with dW/dt = tau.qd - qd^T D qd: E - W stays constant, E including the
    spring energy (Sueda 2.6: springs store energy, dampers dissipate, torques do work). The
    remaining difference is RK4's own error (it shrinks with dt), far below the change of E."""
    model, dyn = mixed
    n = model.nv
    D = np.concatenate([j.damping or np.zeros(j.dof) for j in model.joints])
    tau = np.linspace(-0.3, 0.3, n)

    def energy(q, qd):
        return 0.5 * qd @ dyn.mass_matrix(q) @ qd + potential_energy(model, q) + spring_energy(model, q)

    def f(x):
        q, qd = x[:n], x[n:2 * n]
        return np.concatenate([qd, dyn.forward_dynamics(q, qd, tau), [tau @ qd - qd @ (D * qd)]])
    x = np.concatenate([model.q0, model.qd0, [0.0]])
    E0 = energy(model.q0, model.qd0)
    dt, worst, change = 2.5e-4, 0.0, 0.0
    for step in range(2000):
        k1 = f(x)
        k2 = f(x + dt / 2 * k1)
        k3 = f(x + dt / 2 * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if step % 100 == 99:
            E = energy(x[:n], x[n:2 * n])
            worst = max(worst, abs(E - x[2 * n] - E0))
            change = max(change, abs(E - E0))
    assert change > 1.0, "the springs, dampers and torques should change E noticeably"
    assert worst <= 1e-7 * max(abs(E0), change), (worst, E0, change)


def test_power_balance_pointwise():
    """dE/dt (central differences along the motion, extrapolated) = tau.qd - qd^T D qd,
    with E = T + V_gravity + spring energy: no integration involved."""
    model = load_yaml_string(MIXED, "mixed.yaml")
    tree, alg = numeric_tree(model)
    n = model.nv
    D = np.concatenate([j.damping or np.zeros(j.dof) for j in model.joints])
    rng = np.random.default_rng(6)

    def energy(q, qd):
        M = np.array(rec.mass_matrix(tree, alg, list(q)))
        return 0.5 * qd @ M @ qd + potential_energy(model, q) + spring_energy(model, q)
    for _ in range(3):
        q, qd, tau = model.q0 + rng.normal(scale=0.2, size=n), rng.normal(size=n), rng.normal(size=n)
        a = np.array(rec.forward_dynamics(tree, alg, list(q), list(qd), list(tau)))
        def dE(h):           # central difference along the motion, O(h^2)
            return (energy(q + h * qd + h * h / 2 * a, qd + h * a)
                    - energy(q - h * qd + h * h / 2 * a, qd - h * a)) / (2 * h)
        dE = (4 * dE(5e-5) - dE(1e-4)) / 3          # Richardson: O(h^4)
        power = tau @ qd - qd @ (D * qd)
        assert abs(dE - power) <= 1e-6 * max(1.0, abs(power)), (dE, power)


WRENCH = """\
name: pushed
gravity: [0, 0, -9.81]
bodies:
  - name: a
    parent: world
    joint: {name: ja, type: surface_point, surface: {shape: ellipsoid, semi_axes: [1.0, 0.7, 0.5]}, chart: XYZ}
    mass: 1.0
    com: [0.1, 0, 0]
    inertia: [0.02, 0.03, 0.04]
    wrench: [0.3, -0.2, 0.5, 1.5, -1.0, 2.0]
  - name: b
    parent: a
    joint: {name: jb, type: custom, coordinates: [s], translation: ["0.3*cos(s)", "0.3*sin(s)", "0.1*s"],
            rotation: [[z, s]]}
    mass: 0.5
    inertia: [0.01, 0.01, 0.01]
  - name: tip
    parent: b
    joint: {type: fixed, xyz: [0.2, 0.1, 0], rpy: [0.3, 0.2, 0.1]}
    mass: 0.1
    inertia: [0.001, 0.001, 0.001]
    wrench: [0, 0.1, 0, 0.5, 0.2, -1.0]
"""


def test_external_wrench_by_virtual_work():
    """h(with wrenches) - h(without) = -sum_bodies J_b^T f_e, with J_b's columns the body twists
    (G_b^-1 dG_b/dq_k)^v from central differences of the forward kinematics. The fixed 'tip'
    body's wrench acts at its own frame (merged into body b)."""
    model = load_yaml_string(WRENCH, "pushed.yaml")
    plain = load_yaml_string(WRENCH.replace("    wrench: [0.3, -0.2, 0.5, 1.5, -1.0, 2.0]\n", "")
                             .replace("    wrench: [0, 0.1, 0, 0.5, 0.2, -1.0]\n", ""), "plain.yaml")
    assert plain.bodies[0].wrench is None and model.bodies[1].wrench is not None
    # the point where each wrench acts, as (body index, placement in that body's frame)
    from scleron.model import rotation_from_rpy
    Xtip = np.eye(4)
    Xtip[:3, :3], Xtip[:3, 3] = rotation_from_rpy((0.3, 0.2, 0.1)), (0.2, 0.1, 0.0)
    loads = [(0, np.eye(4), np.array([0.3, -0.2, 0.5, 1.5, -1.0, 2.0])),
             (1, Xtip, np.array([0, 0.1, 0, 0.5, 0.2, -1.0]))]
    rng = np.random.default_rng(8)
    for _ in range(3):
        q, qd = rng.uniform(-0.8, 0.8, model.nv), rng.normal(size=model.nv)
        dh = np.subtract(rec.bias_forces(Tree(model), FloatAlgebra(), list(q), list(qd)),
                         rec.bias_forces(Tree(plain), FloatAlgebra(), list(q), list(qd)))
        generalized = np.zeros(model.nv)
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = 1e-6
            Gp, Gm, G0 = forward_kinematics(model, q + e), forward_kinematics(model, q - e), forward_kinematics(model, q)
            for body, X, w in loads:
                A0 = G0[body] @ X
                V = vee(np.linalg.inv(A0) @ (Gp[body] @ X - Gm[body] @ X) / 2e-6)
                generalized[k] += w @ V                          # virtual work n.w + f.v
        np.testing.assert_allclose(dh, -generalized, atol=1e-8)
    # and the unrolled program carries the wrench like the numeric reference
    prog = unroll(Tree(model), "bias_forces")
    out = prog.evaluate({"q": list(q), "qd": list(qd)})["h"]
    np.testing.assert_allclose(out, rec.bias_forces(Tree(model), FloatAlgebra(), list(q), list(qd)), atol=1e-12)


def test_round_trip_and_cache_key_include_the_new_data():
    """model_to_dict -> model_from_dict keeps every new joint, spring and wrench; the code cache
    key (model.model_to_dict) changes when a spring is added."""
    from scleron.model.model import model_to_dict as canonical
    def same(a, b):          # equal, floats to rounding (a custom joint's placement goes via rpy)
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and a and all(isinstance(x, float) for x in a):
            return np.allclose(a, b, rtol=0, atol=1e-14)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        return a == b
    for text, name in [(MIXED, "mixed"), (WRENCH, "pushed")]:
        m = load_yaml_string(text, name)
        again = model_from_dict(yaml.safe_load(yaml.safe_dump(model_to_dict(m))), name)
        assert same(canonical(again), canonical(m))
        assert [j.params for j in again.joints] == [j.params for j in m.joints]
    m = load_yaml_string(WRENCH, "pushed")
    before = canonical(m)
    m.joints[1].stiffness = (1.0,)
    assert canonical(m) != before


def test_a_dumped_spline_and_surface_model_loads_exactly_as_it_was(tmp_path):
    """Spline control frames and surface placements came back from dump_yaml an ulp off (each
    rotation was made orthonormal again by an SVD), and again at each round, so the cache key
    never settled (an outside tester): an orthonormal rotation is kept as it is."""
    from scleron.model.model import model_to_dict as canonical
    from scleron.model.yaml_loader import dump_yaml
    for name in ("spline_chain.yaml", "spline_surface.yaml", "windmill.yaml"):
        m = scleron.load_model(os.path.join(os.path.dirname(__file__), "..", "examples", name))
        dump_yaml(m, tmp_path / name)
        assert canonical(scleron.load_model(str(tmp_path / name))) == canonical(m), name


def test_generated_rc_models_are_unchanged_by_springs_code():
    """Models without springs or wrenches describe themselves as before (the committed
    generated/ folders stay fresh): no new keys in the canonical dict."""
    from scleron.model.model import model_to_dict as canonical
    m = scleron.load_model(os.path.join(os.path.dirname(__file__), "..", "examples", "rc20.yaml"))
    d = canonical(m)
    assert all("wrench" not in b and "stiffness" not in b["joint"] for b in d["bodies"])


# ---- fuzzing: nothing but ModelError escapes the loader ---------------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ_VALUES = st.sampled_from([
    None, True, 0, -1, 1e400, 2.5, "", "a", "sin(a)", "__import__('os')", "a.b", "((", "x" * 500,
    [], [0], [1, 2], [1, 2, 3], [[1, 0, 0], [0, 1, 0], [0, 0, 1]], [["z", "a"]], [["q", "a"]],
    {}, {"shape": "torus"}, {"shape": "sphere", "radius": -1}, {"shape": "ellipsoid", "semi_axes": [1, 2]},
    {"shape": "helix", "radius": 1}, {"r": "x"}, {"x": [[0] * 4] * 4}, [{"xyz": [0, 0, 0]}] * 4,
    "ZYX", "ABC", [None] * 3, {"a": 1},
])
FUZZ_KEYS = ["coordinates", "constants", "rotation", "translation", "parent_surface", "child_surface",
             "surface", "curve", "spin", "chart", "frames", "control", "stiffness", "damping", "rest",
             "type", "xyz", "rpy", "wrench"]
FUZZ_TYPES = ["custom", "surface_surface", "surface_point", "curve_point", "spline_curve", "spline_surface"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzz_general_joint_parameters(data):
    doc = yaml.safe_load(MIXED)
    doc.pop("initial")
    for _ in range(data.draw(st.integers(1, 3))):
        body = doc["bodies"][data.draw(st.integers(0, len(doc["bodies"]) - 1))]
        key = data.draw(st.sampled_from(FUZZ_KEYS))
        target = body if key == "wrench" else body["joint"]
        if key == "type":
            target[key] = data.draw(st.sampled_from(FUZZ_TYPES))
        else:
            target[key] = data.draw(FUZZ_VALUES)
    try:
        model_from_dict(doc, "fuzz.yaml")
    except ModelError as e:
        assert "fuzz.yaml" in str(e)


def test_custom_joint_checks_are_exact_and_quick():
    """From a review: a constant factor keeps its exact 0 and +-1 (the structure the simplifier
    folds) and evaluates the rest to numbers; an axis within 1e-15 of x, y or z is elementary,
    one further off counts as general (8 of [1e-8, 0, 1] were accepted); a huge integer in a
    message is described, not printed (repr refuses 4300 digits)."""
    import sympy as sp
    from scleron.joints.custom import _axis_rotation, _constant_evaluated, validate_custom
    from scleron.joints.expressions import ExpressionError, short
    exact = _constant_evaluated(_axis_rotation("x", sp.pi / 2))
    assert all(e.is_Integer for e in exact) and exact[1, 2] == -1
    tilted = _constant_evaluated(_axis_rotation((0.6, 0.8, 0.0), sp.Rational(3, 10)))
    assert all(e.is_Number for e in tilted) and float(tilted[2, 2]) == math.cos(0.3)
    with pytest.raises(ExpressionError, match="8 rotations about axes other than x, y, z"):
        validate_custom({"coordinates": ["a"], "rotation": [[[1e-8, 0, 1], "a"]] * 8})
    assert validate_custom({"coordinates": ["a"], "rotation": [[[1e-16, 0, 1], "a"]] * 8})
    assert short(10 ** 5000) == "an integer of about 5000 digits"


def test_a_custom_tanh_stays_finite_where_exp_overflows(tmp_path):
    """tanh was written with exp, and its derivative 4 e^2a / (e^2a + 1)^2 was inf / inf = NaN
    above a = 355: the Jacobians, mass matrix and kinetic energy of a joint sliding by tanh(a)
    were NaN there, and 0 at a = -400 (an outside tester). tanh is C's now, its derivative
    1 / cosh^2 (0 where cosh overflows)."""
    path = tmp_path / "sat.yaml"
    path.write_text("name: sat\nbodies:\n  - name: slider\n    parent: world\n    joint:\n"
                    "      name: sat\n      type: custom\n      coordinates: [a]\n"
                    "      translation: [\"tanh(a)\", \"0\", \"0\"]\n"
                    "    mass: 1.0\n    inertia: [0.01, 0.02, 0.03]\n")
    dyn = scleron.generate(scleron.load_model(str(path)), str(tmp_path / "sat"),
                           functions=["mass", "ke", "frame_jacobians"])
    for a in (356.0, 400.0, 1000.0, -400.0, -1000.0):
        assert dyn.mass_matrix(np.array([a]))[0, 0] == 0.0
        assert dyn.kinetic_energy(np.array([a]), np.array([1.0])) == 0.0
        assert np.array_equal(dyn.frame_jacobians(np.array([a]))[0], np.zeros((6, 1)))
    a = 0.7                                  # and the same numbers as before in between
    assert dyn.mass_matrix(np.array([a]))[0, 0] == pytest.approx((1 - np.tanh(a) ** 2) ** 2,
                                                                  rel=1e-14)
