"""Tests for the 12 Euler / Tait-Bryan charts (scleron.joints.charts), checked against Sueda's tables."""
import ctypes
import importlib.util
import itertools
import shutil
import subprocess

import numpy as np
import pytest
import sympy as sp

from scleron.charts import write_charts
from scleron.joints import charts
from scleron.model.joint_types import EULER_CHARTS

q1, q2, q3 = charts.Q_SYMBOLS
d1, d2, d3 = charts.QD_SYMBOLS
c1, c2, c3 = sp.cos(q1), sp.cos(q2), sp.cos(q3)
s1, s2, s3 = sp.sin(q1), sp.sin(q2), sp.sin(q3)
M = sp.Matrix

# Sueda Tables 1 and 2: top 3 rows of S and Sdot, transcribed by hand.
TABLE_S = {
    "XYX": (M([[c2, 0, 1], [s2 * s3, c3, 0], [c3 * s2, -s3, 0]]),
            M([[-d2 * s2, 0, 0],
               [d2 * c2 * s3 + d3 * c3 * s2, -d3 * s3, 0],
               [d2 * c2 * c3 - d3 * s2 * s3, -d3 * c3, 0]])),
    "XZX": (M([[c2, 0, 1], [-c3 * s2, s3, 0], [s2 * s3, c3, 0]]),
            M([[-d2 * s2, 0, 0],
               [d3 * s2 * s3 - d2 * c2 * c3, d3 * c3, 0],
               [d2 * c2 * s3 + d3 * c3 * s2, -d3 * s3, 0]])),
    "YZY": (M([[c3 * s2, -s3, 0], [c2, 0, 1], [s2 * s3, c3, 0]]),
            M([[d2 * c2 * c3 - d3 * s2 * s3, -d3 * c3, 0],
               [-d2 * s2, 0, 0],
               [d2 * c2 * s3 + d3 * c3 * s2, -d3 * s3, 0]])),
    "YXY": (M([[s2 * s3, c3, 0], [c2, 0, 1], [-c3 * s2, s3, 0]]),
            M([[d2 * c2 * s3 + d3 * c3 * s2, -d3 * s3, 0],
               [-d2 * s2, 0, 0],
               [d3 * s2 * s3 - d2 * c2 * c3, d3 * c3, 0]])),
    "ZXZ": (M([[s2 * s3, c3, 0], [c3 * s2, -s3, 0], [c2, 0, 1]]),
            M([[d2 * c2 * s3 + d3 * c3 * s2, -d3 * s3, 0],
               [d2 * c2 * c3 - d3 * s2 * s3, -d3 * c3, 0],
               [-d2 * s2, 0, 0]])),
    "ZYZ": (M([[-c3 * s2, s3, 0], [s2 * s3, c3, 0], [c2, 0, 1]]),
            M([[d3 * s2 * s3 - d2 * c2 * c3, d3 * c3, 0],
               [d2 * c2 * s3 + d3 * c3 * s2, -d3 * s3, 0],
               [-d2 * s2, 0, 0]])),
    "XYZ": (M([[c2 * c3, s3, 0], [-c2 * s3, c3, 0], [s2, 0, 1]]),
            M([[-d2 * c3 * s2 - d3 * c2 * s3, d3 * c3, 0],
               [d2 * s2 * s3 - d3 * c2 * c3, -d3 * s3, 0],
               [d2 * c2, 0, 0]])),
    "XZY": (M([[c2 * c3, -s3, 0], [-s2, 0, 1], [c2 * s3, c3, 0]]),
            M([[-d2 * c3 * s2 - d3 * c2 * s3, -d3 * c3, 0],
               [-d2 * c2, 0, 0],
               [d3 * c2 * c3 - d2 * s2 * s3, -d3 * s3, 0]])),
    "YZX": (M([[s2, 0, 1], [c2 * c3, s3, 0], [-c2 * s3, c3, 0]]),
            M([[d2 * c2, 0, 0],
               [-d2 * c3 * s2 - d3 * c2 * s3, d3 * c3, 0],
               [d2 * s2 * s3 - d3 * c2 * c3, -d3 * s3, 0]])),
    "YXZ": (M([[c2 * s3, c3, 0], [c2 * c3, -s3, 0], [-s2, 0, 1]]),
            M([[d3 * c2 * c3 - d2 * s2 * s3, -d3 * s3, 0],
               [-d2 * c3 * s2 - d3 * c2 * s3, -d3 * c3, 0],
               [-d2 * c2, 0, 0]])),
    "ZXY": (M([[-c2 * s3, c3, 0], [s2, 0, 1], [c2 * c3, s3, 0]]),
            M([[d2 * s2 * s3 - d3 * c2 * c3, -d3 * s3, 0],
               [d2 * c2, 0, 0],
               [-d2 * c3 * s2 - d3 * c2 * s3, d3 * c3, 0]])),
    "ZYX": (M([[-s2, 0, 1], [c2 * s3, c3, 0], [c2 * c3, -s3, 0]]),
            M([[-d2 * c2, 0, 0],
               [d3 * c2 * c3 - d2 * s2 * s3, -d3 * s3, 0],
               [-d2 * c3 * s2 - d3 * c2 * s3, -d3 * c3, 0]])),
}

# Sueda Table 3, column 2 (its rows "XXX" and "YYZ" are XYX and YZY).
TABLE_DET = {
    "XYX": -s2, "XZX": -s2, "YZY": -s2, "YXY": -s2, "ZXZ": -s2, "ZYZ": -s2,
    "XYZ": c2, "XZY": -c2, "YZX": c2, "YXZ": -c2, "ZXY": c2, "ZYX": -c2,
}

# Eq. (2.33): R for XYZ.  Eq. (3.24): dR/dq for XYZ.  Eq. (3.27): dS/dq and dSdot/dq for XYZ (top rows).
XYZ_R = M([[c2 * c3, -c2 * s3, s2],
           [c1 * s3 + c3 * s1 * s2, c1 * c3 - s1 * s2 * s3, -c2 * s1],
           [s1 * s3 - c1 * c3 * s2, c3 * s1 + c1 * s2 * s3, c1 * c2]])
XYZ_DRDQ = [
    M([[0, 0, 0],
       [c1 * c3 * s2 - s1 * s3, -c3 * s1 - c1 * s2 * s3, -c1 * c2],
       [c1 * s3 + c3 * s1 * s2, c1 * c3 - s1 * s2 * s3, -c2 * s1]]),
    M([[-c3 * s2, s2 * s3, c2], [c2 * c3 * s1, -c2 * s1 * s3, s1 * s2], [-c1 * c2 * c3, c1 * c2 * s3, -c1 * s2]]),
    M([[-c2 * s3, -c2 * c3, 0],
       [c1 * c3 - s1 * s2 * s3, -c1 * s3 - c3 * s1 * s2, 0],
       [c3 * s1 + c1 * s2 * s3, c1 * c3 * s2 - s1 * s3, 0]]),
]
XYZ_DSDQ = [sp.zeros(3, 3),
            M([[-c3 * s2, 0, 0], [s2 * s3, 0, 0], [c2, 0, 0]]),
            M([[-c2 * s3, c3, 0], [-c2 * c3, -s3, 0], [0, 0, 0]])]
XYZ_DSDOTDQ = [sp.zeros(3, 3),
               M([[d3 * s2 * s3 - d2 * c2 * c3, 0, 0], [d2 * c2 * s3 + d3 * c3 * s2, 0, 0], [-d2 * s2, 0, 0]]),
               M([[d2 * s2 * s3 - d3 * c2 * c3, -d3 * s3, 0], [d2 * c3 * s2 + d3 * c2 * s3, -d3 * c3, 0], [0, 0, 0]])]


def _zero(expr):
    return sp.simplify(sp.expand(expr)) == 0


def _mat_equal(a, b):
    return a.shape == b.shape and all(_zero(x - y) for x, y in zip(a, b))


def _vee(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def _random_q(name, rng):
    """Random chart coordinates at least ~0.3 rad away from the chart's singularity (principal ranges)."""
    if name in charts.PROPER_EULER:
        qm = rng.uniform(0.3, np.pi - 0.3)
    else:
        qm = rng.uniform(-np.pi / 2 + 0.3, np.pi / 2 - 0.3)
    return np.array([rng.uniform(-np.pi + 0.01, np.pi - 0.01), qm, rng.uniform(-np.pi + 0.01, np.pi - 0.01)])


def test_chart_names_and_mapping():
    assert charts.CHARTS == EULER_CHARTS and len(set(charts.CHARTS)) == 12
    d = charts.derive("XYZ")
    assert charts.derive("XYZ") is d                           # cached
    assert set(d.keys()) == {"R", "dRdq", "Rdot", "dRdotdq", "S", "detS", "dSdq", "Sdot", "dSdotdq"}
    assert d.name == "XYZ" and len(d.q) == 3 and len(d.qdot) == 3
    assert d["S"].shape == (6, 3) and d["Sdot"].shape == (6, 3) and d.S3.shape == (3, 3)
    assert d["S"][3:, :] == sp.zeros(3, 3) and d["Sdot"][3:, :] == sp.zeros(3, 3)
    for key in ("dRdq", "dRdotdq", "dSdq", "dSdotdq"):
        assert isinstance(d[key], list) and len(d[key]) == 3
    with pytest.raises(ValueError):
        charts.derive("XXX")


@pytest.mark.parametrize("name", EULER_CHARTS)
def test_matches_sueda_tables(name):
    d = charts.derive(name)
    S_tab, Sdot_tab = TABLE_S[name]
    assert d.S3 == S_tab or _mat_equal(d.S3, S_tab)
    assert _mat_equal(d.Sdot3, Sdot_tab)
    assert _zero(d["detS"] - TABLE_DET[name])
    assert sp.count_ops(d["detS"]) <= 2                        # simplified to -sin q2 / +-cos q2
    for k in range(3):                                         # S is in Sueda's short form
        for i in range(3):
            assert sp.count_ops(d.S3[i, k]) <= sp.count_ops(S_tab[i, k]) + 1
    assert d["R"].subs({q1: 0, q2: 0, q3: 0}) == sp.eye(3)


def test_xyz_worked_example():
    d = charts.derive("XYZ")
    assert _mat_equal(d["R"], XYZ_R)
    assert _mat_equal(charts.rotation("XYZ", q1, q2, q3), XYZ_R)
    for k in range(3):
        assert _mat_equal(d["dRdq"][k], XYZ_DRDQ[k])
        assert _mat_equal(d.dSdq3[k], XYZ_DSDQ[k])
        assert _mat_equal(d.dSdotdq3[k], XYZ_DSDOTDQ[k])


def test_elementary_rotations_are_active():
    t = sp.Symbol("t")
    for axis, e in zip("XYZ", [sp.eye(3)[:, i] for i in range(3)]):
        Rt = charts.elementary(axis, t)
        assert _mat_equal(Rt.T * Rt, sp.eye(3))
        assert _mat_equal(Rt * e, e)                           # the axis is fixed
    # a small positive angle about Z moves x towards y (active, right-handed)
    assert charts.elementary("Z", t)[1, 0] == sp.sin(t)
    assert charts.elementary("X", t)[2, 1] == sp.sin(t)
    assert charts.elementary("Y", t)[0, 2] == sp.sin(t)


@pytest.mark.parametrize("name", EULER_CHARTS)
def test_against_finite_differences(name):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    d = charts.derive(name)
    args = (d.q, d.qdot)
    f = {k: sp.lambdify(args, d[k], "numpy") for k in ("R", "Rdot", "S", "Sdot", "detS")}
    fl = {k: [sp.lambdify(args, m, "numpy") for m in d[k]] for k in ("dRdq", "dRdotdq", "dSdq", "dSdotdq")}
    h = 1e-5
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, 3)
        qd = rng.normal(size=3)
        R = np.array(f["R"](q, qd), dtype=float)
        S = np.array(f["S"](q, qd), dtype=float)
        assert np.allclose(R.T @ R, np.eye(3), atol=1e-13)
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            dR = (np.array(f["R"](q + e, qd)) - np.array(f["R"](q - e, qd))) / (2 * h)
            assert np.allclose(np.array(fl["dRdq"][k](q, qd)), dR, atol=1e-8)
            assert np.allclose(S[:3, k], _vee(R.T @ dR), atol=1e-8)
            dRdot = (np.array(f["Rdot"](q + e, qd)) - np.array(f["Rdot"](q - e, qd))) / (2 * h)
            assert np.allclose(np.array(fl["dRdotdq"][k](q, qd)), dRdot, atol=1e-8)
            dSdot = (np.array(f["Sdot"](q + e, qd)) - np.array(f["Sdot"](q - e, qd))) / (2 * h)
            assert np.allclose(np.array(fl["dSdotdq"][k](q, qd)), dSdot, atol=1e-8)
        Rdot_fd = (np.array(f["R"](q + h * qd, qd)) - np.array(f["R"](q - h * qd, qd))) / (2 * h)
        assert np.allclose(np.array(f["Rdot"](q, qd)), Rdot_fd, atol=1e-8)
        Sdot_fd = (np.array(f["S"](q + h * qd, qd)) - np.array(f["S"](q - h * qd, qd))) / (2 * h)
        assert np.allclose(np.array(f["Sdot"](q, qd), dtype=float), Sdot_fd, atol=1e-8)
        assert np.isclose(f["detS"](q, qd), np.linalg.det(S[:3, :]), atol=1e-12)
        assert np.isclose(charts.det_S(name, q), np.linalg.det(S[:3, :]), atol=1e-12)


@pytest.mark.parametrize("name", EULER_CHARTS)
def test_q_from_R_round_trip(name):
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = _random_q(name, rng)
        R = charts.R_num(name, q)
        q_back = charts.q_from_R(name, R)
        assert np.allclose(charts.R_num(name, q_back), R, atol=1e-12)
        assert np.allclose(q_back, q, atol=1e-10)              # principal ranges: the same q comes back
        # any q (outside the principal ranges, but off the singular set) still round-trips R
        qa = rng.uniform(-4, 4, 3)
        if abs(charts.det_S(name, qa)) > 0.1:
            Ra = charts.R_num(name, qa)
            assert np.allclose(charts.R_num(name, charts.q_from_R(name, Ra)), Ra, atol=1e-12)
    for R in _gimbal_locked(name, rng):       # Table 3's q1 and q3 were atan2 of (±0, ±0) there:
        assert np.allclose(charts.R_num(name, charts.q_from_R(name, R)), R, atol=1e-12)   # ZYZ
        # of Rz(1) gave Rz(pi) (an outside tester)


def _gimbal_locked(name, rng, n=6):
    """Rotations at the chart's singularity (q2 = 0, pi or ±pi/2), with the zeros exact."""
    q2s = [0.0, np.pi] if name[0] == name[2] else [np.pi / 2, -np.pi / 2]
    out = []
    for k in range(n):
        R = charts.R_num(name, [rng.uniform(-3, 3), q2s[k % 2], rng.uniform(-3, 3)])
        out.append(np.where(np.abs(R) < 1e-15, 0.0, R))
    return out


def test_switch_chart_preserves_rotation_and_angular_motion():
    rng = np.random.default_rng(11)
    for old, new in itertools.product(EULER_CHARTS, EULER_CHARTS):
        done = 0
        while done < 2:
            q = _random_q(old, rng)
            qd, qdd = rng.normal(size=3), rng.normal(size=3)
            q_new = charts.q_from_R(new, charts.R_num(old, q))
            if abs(charts.det_S(new, q_new)) < 0.2:
                continue
            qn, qdn, qddn = charts.switch_chart(old, new, q, qd, qdd)
            qn2, qdn2 = charts.switch_chart(old, new, q, qd)
            assert np.allclose(qn, qn2) and np.allclose(qdn, qdn2)
            R_old, R_new = charts.R_num(old, q), charts.R_num(new, qn)
            assert np.allclose(R_old, R_new, atol=1e-12)
            w_old = R_old @ charts.S3_num(old, q) @ qd
            w_new = R_new @ charts.S3_num(new, qn) @ qdn
            assert np.allclose(w_old, w_new, atol=1e-10)
            a_old = R_old @ (charts.Sdot3_num(old, q, qd) @ qd + charts.S3_num(old, q) @ qdd)
            a_new = R_new @ (charts.Sdot3_num(new, qn, qdn) @ qdn + charts.S3_num(new, qn) @ qddn)
            assert np.allclose(a_old, a_new, atol=1e-9)
            if old == new:
                assert np.allclose(qn, q) and np.allclose(qdn, qd) and np.allclose(qddn, qdd)
            done += 1


def test_switch_chart_world_acceleration_by_finite_differences():
    """d/dt of the world angular velocity along the trajectory agrees in both charts."""
    rng = np.random.default_rng(3)
    old, new, h = "XYZ", "ZXZ", 1e-5
    q = _random_q(old, rng)
    qd, qdd = rng.normal(size=3), rng.normal(size=3)
    qn, qdn, qddn = charts.switch_chart(old, new, q, qd, qdd)

    def w(name, q, qd):
        return charts.R_num(name, q) @ charts.S3_num(name, q) @ qd

    acc_old = (w(old, q + h * qd + h * h / 2 * qdd, qd + h * qdd) -
               w(old, q - h * qd + h * h / 2 * qdd, qd - h * qdd)) / (2 * h)
    acc_new = (w(new, qn + h * qdn + h * h / 2 * qddn, qdn + h * qddn) -
               w(new, qn - h * qdn + h * h / 2 * qddn, qdn - h * qddn)) / (2 * h)
    assert np.allclose(acc_old, acc_new, atol=1e-6)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("charts")
    files = write_charts(str(out))
    return out, files


def test_write_charts_python_module(generated):
    out, files = generated
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == ["euler_charts.c", "euler_charts.h", "euler_charts.py"]
    spec = importlib.util.spec_from_file_location("euler_charts_generated", str(out / "euler_charts.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(5)
    for name in EULER_CHARTS:
        d = charts.derive(name)
        fS = sp.lambdify((d.q,), d.S3, "numpy")
        fSd = sp.lambdify((d.q, d.qdot), d.Sdot3, "numpy")
        fdSd = [sp.lambdify((d.q, d.qdot), m, "numpy") for m in d.dSdotdq3]
        fdR = [sp.lambdify((d.q,), m, "numpy") for m in d["dRdq"]]
        q = _random_q(name, rng)
        qd = rng.normal(size=3)
        fns = mod.CHARTS[name]
        assert np.allclose(fns["S"](q), np.array(fS(q), dtype=float), atol=1e-14)
        assert np.allclose(fns["Sdot"](q, qd), np.array(fSd(q, qd), dtype=float), atol=1e-14)
        assert np.allclose(fns["dSdotdq"](q, qd), np.array([f(q, qd) for f in fdSd], dtype=float), atol=1e-14)
        assert np.allclose(fns["dRdq"](q), np.array([f(q) for f in fdR], dtype=float), atol=1e-14)
        assert np.allclose(fns["R"](q), charts.R_num(name, q), atol=1e-14)
        assert np.isclose(fns["detS"](q), charts.det_S(name, q), atol=1e-14)
        assert np.allclose(fns["q_from_R"](fns["R"](q)), q, atol=1e-10)
        for R in _gimbal_locked(name, rng):
            assert np.allclose(fns["R"](fns["q_from_R"](R)), R, atol=1e-12)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not available")
def test_write_charts_c_compiles_and_agrees(generated):
    out, _ = generated
    res = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-c", "euler_charts.c",
                          "-o", "euler_charts.o"], cwd=out, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == "", res.stderr                # no warnings either
    res = subprocess.run(["gcc", "-std=c99", "-O1", "-shared", "-fPIC", "euler_charts.c", "-o", "libcharts.so",
                          "-lm"], cwd=out, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lib = ctypes.CDLL(str(out / "libcharts.so"))
    dp = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
    rng = np.random.default_rng(9)
    for idx, name in enumerate(EULER_CHARTS):
        d = charts.derive(name)
        q = _random_q(name, rng)
        qd = rng.normal(size=3)
        fS = getattr(lib, f"scleron_chart_{name}_S")
        fS.argtypes, fS.restype = [dp, dp], None
        S = np.zeros(9)
        fS(q, S)
        assert np.allclose(S.reshape(3, 3), charts.S3_num(name, q), atol=1e-14)
        fSd = getattr(lib, f"scleron_chart_{name}_Sdot")
        fSd.argtypes, fSd.restype = [dp, dp, dp], None
        Sd = np.zeros(9)
        fSd(q, qd, Sd)
        assert np.allclose(Sd.reshape(3, 3), charts.Sdot3_num(name, q, qd), atol=1e-14)
        fdS = getattr(lib, f"scleron_chart_{name}_dSdq")
        fdS.argtypes, fdS.restype = [dp, dp], None
        dS = np.zeros(27)
        fdS(q, dS)
        ref = np.array([np.array(sp.lambdify((d.q,), m, "numpy")(q), dtype=float) for m in d.dSdq3])
        assert np.allclose(dS.reshape(3, 3, 3), ref, atol=1e-14)
        fdet = getattr(lib, f"scleron_chart_{name}_detS")
        fdet.argtypes, fdet.restype = [dp], ctypes.c_double
        assert np.isclose(fdet(q), charts.det_S(name, q), atol=1e-14)
        fR = getattr(lib, f"scleron_chart_{name}_R")
        fR.argtypes, fR.restype = [dp, dp], None
        R = np.zeros(9)
        fR(q, R)
        fq = getattr(lib, f"scleron_chart_{name}_q_from_R")
        fq.argtypes, fq.restype = [dp, dp], None
        qb = np.zeros(3)
        fq(R, qb)
        assert np.allclose(qb, q, atol=1e-10)
        for Rl in _gimbal_locked(name, rng):
            fq(np.ascontiguousarray(Rl.reshape(9)), qb)
            assert np.allclose(charts.R_num(name, qb), Rl, atol=1e-12)
        lib.scleron_chart_index.argtypes, lib.scleron_chart_index.restype = [ctypes.c_char_p], ctypes.c_int
        assert lib.scleron_chart_index(name.encode()) == idx
    assert lib.scleron_chart_index(b"XXX") == -1
    fsw = lib.scleron_chart_switch
    fsw.argtypes = [ctypes.c_int, ctypes.c_int] + [dp] * 6
    fsw.restype = ctypes.c_int
    for old, new in [("XYZ", "ZYX"), ("ZXZ", "YZX"), ("XZX", "YXY")]:
        q = _random_q(old, rng)
        qd, qdd = rng.normal(size=3), rng.normal(size=3)
        qn, qdn, qddn = (np.zeros(3) for _ in range(3))
        rc = fsw(EULER_CHARTS.index(old), EULER_CHARTS.index(new), q, qd, qdd, qn, qdn, qddn)
        if abs(charts.det_S(new, charts.q_from_R(new, charts.R_num(old, q)))) < 1e-6:
            continue
        assert rc == 0
        ref = charts.switch_chart(old, new, q, qd, qdd)
        assert np.allclose(qn, ref[0]) and np.allclose(qdn, ref[1]) and np.allclose(qddn, ref[2])
