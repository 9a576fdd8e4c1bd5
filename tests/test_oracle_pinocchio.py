"""Generated C = numpy reference = Pinocchio, on the Panda, the UR5, RC20 and the quadruped.

Pinocchio is an independent implementation (C++, its own URDF parser, its own joint models), so
agreement to ~1e-12 pins down the dynamics, the URDF reading (fixed-joint merging, rpy) and the
joint ordering. Its coordinates differ from ours in two places, mapped here by joint name:

- a continuous joint has two coordinates (cos, sin) and one velocity;
- the free flyer has q = (p, quaternion) and v = [v; w] (linear first, local frame), where our
  free joint (chart XYZ) has q = (p, r1, r2, r3), R = Rx(r1) Ry(r2) Rz(r3) and the body twist
  [w; v] = S(q) qd. So v_pin = J qd and a_pin = J qdd + Jdot qd with J = P S, Jdot = P Sdot,
  P swapping the angular and linear halves; tau_ours = J^T tau_pin, M_ours = J^T M_pin J,
  h_ours = J^T (nle_pin + M_pin Jdot qd) and qdd_ours = J^-1 (aba(J^-T tau) - Jdot qd).

The RC2 / RC5 / RC20 values of ../shared/data/rc_reference.json (computed with Pinocchio and
cross-checked with MuJoCo) are checked against the generated code without Pinocchio.
"""
import json
import math
import os

import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions as rec
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.joints import joint_model

from conftest import ROOT, example, robot_urdf

TOL = 1e-9                       # relative to the norm of the Pinocchio value
NSTATES = 5
# a copy of ../shared/data/rc_reference.json, so the test runs from any checkout
RC_REFERENCE = os.path.join(ROOT, "tests", "data", "rc_reference.json")
RX90 = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
RC_INERTIA = (1 / 600, 101 / 1200, 101 / 1200)


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def rot(axis, angle):
    c, s = math.cos(angle), math.sin(angle)
    return {"x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
            "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


# ---- Pinocchio models ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pin():
    return pytest.importorskip("pinocchio")


def pin_rc(pin, n):
    """The RC-n chain of BENCHMARKS.md, built by hand."""
    m = pin.Model()
    parent = 0
    for i in range(1, n + 1):
        placement = pin.SE3.Identity() if i == 1 else pin.SE3(RX90, np.array([1.0, 0, 0]))
        jid = m.addJoint(parent, pin.JointModelRZ(), placement, f"joint{i}")
        m.appendBodyToJoint(jid, pin.Inertia(1.0, np.array([0.5, 0, 0]), np.diag(RC_INERTIA)),
                            pin.SE3.Identity())
        parent = jid
    return m


LEGS = {"fl": (0.3, 0.15), "fr": (0.3, -0.15), "hl": (-0.3, 0.15), "hr": (-0.3, -0.15)}


def pin_quadruped(pin):
    """examples/quadruped.yaml (see make_examples.py), built by hand on a free flyer."""
    m = pin.Model()
    I = pin.SE3.Identity

    def body(jid, mass, com, inertia):
        m.appendBodyToJoint(jid, pin.Inertia(mass, np.array(com, dtype=float), np.diag(inertia)), I())
    root = m.addJoint(0, pin.JointModelFreeFlyer(), I(), "root")
    body(root, 12.0, (0.01, 0, 0), (0.08, 0.3, 0.33))
    for leg, (x, y) in LEGS.items():
        side = 1 if y > 0 else -1
        hip = m.addJoint(root, pin.JointModelRX(), pin.SE3(np.eye(3), np.array([x, y, 0.0])),
                         f"{leg}_hip_joint")
        body(hip, 0.7, (0, 0.03 * side, 0), (0.0006, 0.0008, 0.0006))
        thigh = m.addJoint(hip, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0, 0.08 * side, 0])),
                           f"{leg}_thigh_joint")
        body(thigh, 1.0, (0, 0, -0.1), (0.005, 0.005, 0.0008))
        knee = m.addJoint(thigh, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0, 0, -0.2])),
                          f"{leg}_knee_joint")
        body(knee, 0.2, (0, 0, -0.1), (0.002, 0.002, 0.0001))
    return m


# name -> (our model file, Pinocchio model builder, range of the random angles)
SYSTEMS = {
    "panda": (lambda: robot_urdf("panda"), lambda pin: pin.buildModelFromUrdf(robot_urdf("panda")), math.pi),
    "ur5": (lambda: robot_urdf("ur5"), lambda pin: pin.buildModelFromUrdf(robot_urdf("ur5")), math.pi),
    "rc20_urdf": (lambda: example("rc20.urdf"), lambda pin: pin.buildModelFromUrdf(example("rc20.urdf")),
                  math.pi),
    "rc20": (lambda: example("rc20.yaml"), lambda pin: pin_rc(pin, 20), math.pi),
    "quadruped": (lambda: example("quadruped.yaml"), pin_quadruped, 1.2),
}


# ---- coordinate mapping -------------------------------------------------------------------------
def coordinate_slices(model):
    out, k = {}, 0
    for j in model.joints:
        out[j.name] = (k, j)
        k += j.dof
    return out


def pin_state(pin, pm, model, q, qd):
    """q_pin, J, Jdot (nv x nv): v_pin = J qd, a_pin = J qdd + Jdot qd."""
    slices = coordinate_slices(model)
    q_pin = np.zeros(pm.nq)
    J, Jdot = np.zeros((pm.nv, model.nv)), np.zeros((pm.nv, model.nv))
    for jid in range(1, pm.njoints):
        name = pm.names[jid]
        iq, iv, nq, nv = pm.idx_qs[jid], pm.idx_vs[jid], pm.nqs[jid], pm.nvs[jid]
        k, joint = slices[name]
        if nq == 1 and nv == 1 and joint.dof == 1:
            q_pin[iq] = q[k]
            J[iv, k] = 1.0
        elif nq == 2 and nv == 1 and joint.dof == 1:            # continuous: (cos, sin)
            q_pin[iq:iq + 2] = math.cos(q[k]), math.sin(q[k])
            J[iv, k] = 1.0
        elif nq == 7 and nv == 6 and joint.type == "free":
            assert joint.params.get("chart", "XYZ") == "XYZ"
            qr, qdr = np.asarray(q[k:k + 6]), np.asarray(qd[k:k + 6])
            R = rot("x", qr[3]) @ rot("y", qr[4]) @ rot("z", qr[5])
            jm = joint_model("free", joint.params)
            G = jm.numeric("G", qr)
            np.testing.assert_allclose(G[:3, :3], R, atol=1e-14)
            np.testing.assert_allclose(G[:3, 3], qr[:3], atol=1e-14)
            quat = pin.Quaternion(R)
            quat.normalize()
            q_pin[iq:iq + 3] = qr[:3]
            q_pin[iq + 3:iq + 7] = quat.coeffs()                   # (x, y, z, w)
            S, Sdot = jm.numeric("S", qr), jm.numeric("Sdot", qr, qdr)
            P = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])
            J[iv:iv + 6, k:k + 6] = P @ S
            Jdot[iv:iv + 6, k:k + 6] = P @ Sdot
        else:
            raise AssertionError(f"no mapping for joint {name} (pin nq={nq}, nv={nv}, ours {joint.type})")
    return q_pin, J, Jdot


def pin_dynamics(pin, pm, pdata, model, q, qd, qdd, tau):
    """(ID, FD, M, h) in our coordinates, from Pinocchio."""
    q_pin, J, Jdot = pin_state(pin, pm, model, q, qd)
    v = J @ qd
    rnea = pin.rnea(pm, pdata, q_pin, v, J @ qdd + Jdot @ qd)
    tau_id = J.T @ rnea
    a = pin.aba(pm, pdata, q_pin, v, np.linalg.solve(J.T, tau))
    qdd_fd = np.linalg.solve(J, a - Jdot @ qd)
    Mp = np.array(pin.crba(pm, pdata, q_pin))
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    M = J.T @ Mp @ J
    nle = pin.nonLinearEffects(pm, pdata, q_pin, v)
    h = J.T @ (nle + Mp @ (Jdot @ qd))
    return tau_id, qdd_fd, M, h


def random_state(rng, nv, qrange):
    return (rng.uniform(-qrange, qrange, nv), rng.uniform(-1.5, 1.5, nv),
            rng.uniform(-2, 2, nv), rng.uniform(-5, 5, nv))


# ---- tests ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("system", list(SYSTEMS))
def test_joint_names_and_order(pin, generated, system):
    path, build, _ = SYSTEMS[system]
    model, dyn = generated(path(), system)
    pm = build(pin)
    names = list(pm.names)[1:]
    assert dyn.joint_names == names == [j.name for j in model.joints]
    assert dyn.nv == model.nv == pm.nv
    assert dyn.nq == dyn.nv and len(dyn.coordinate_names) == dyn.nv
    # the velocity slices come in the same order as ours (nothing to permute but the free flyer halves)
    slices = coordinate_slices(model)
    assert [pm.idx_vs[j] for j in range(1, pm.njoints)] == [slices[n][0] for n in names]
    assert [pm.nvs[j] for j in range(1, pm.njoints)] == [j.dof for j in model.joints]


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_generated_equals_reference_equals_pinocchio(pin, generated, rng, system):
    path, build, qrange = SYSTEMS[system]
    model, dyn = generated(path(), system)
    pm = build(pin)
    pdata = pm.createData()
    tree, alg = Tree(model), FloatAlgebra()
    errs = {}
    for _ in range(NSTATES):
        q, qd, qdd, tau = random_state(rng, model.nv, qrange)
        pin_vals = pin_dynamics(pin, pm, pdata, model, q, qd, qdd, tau)
        ours = {"ID": (dyn.inverse_dynamics(q, qd, qdd), rec.inverse_dynamics(tree, alg, q, qd, qdd)),
                "FD": (dyn.forward_dynamics(q, qd, tau), rec.forward_dynamics(tree, alg, q, qd, tau)),
                "M": (dyn.mass_matrix(q), rec.mass_matrix(tree, alg, q)),
                "h": (dyn.bias_forces(q, qd), rec.bias_forces(tree, alg, q, qd))}
        for (key, (gen, ref)), want in zip(ours.items(), pin_vals):
            gen, ref = np.asarray(gen), np.asarray(ref, dtype=float).reshape(np.shape(want))
            assert gen.shape == want.shape
            e = max(rel_err(gen, want), rel_err(ref, want))
            errs[key] = max(errs.get(key, 0.0), e)
            assert rel_err(gen, want) <= TOL, f"{system} {key}: generated vs Pinocchio {rel_err(gen, want):.3g}"
            assert rel_err(ref, want) <= TOL, f"{system} {key}: reference vs Pinocchio {rel_err(ref, want):.3g}"
            assert rel_err(gen, ref) <= TOL, f"{system} {key}: generated vs reference {rel_err(gen, ref):.3g}"
        # h(q, 0): gravity alone (the quadruped's Euler-angle root maps to Pinocchio's free
        # flyer, so there its h(q, 0), checked against Pinocchio's nle above)
        want = (pin.computeGeneralizedGravity(pm, pdata, q) if pm.nq == model.nq
                else np.array(rec.bias_forces(tree, alg, q, [0.0] * model.nv)))
        assert rel_err(dyn.static_forces(q), want) <= TOL
        assert rel_err(np.array(rec.static_forces(tree, alg, q)), want) <= TOL
    print(f"\n{system}: max relative error vs Pinocchio " + ", ".join(f"{k} {v:.2e}" for k, v in errs.items()))


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_energies_equal_pinocchio(pin, generated, rng, system):
    """kinetic_energy / potential_energy (generated and reference) = Pinocchio's
    computeKineticEnergy / computePotentialEnergy; batched calls give the same values."""
    path, build, qrange = SYSTEMS[system]
    model, dyn = generated(path(), system)
    pm = build(pin)
    pdata = pm.createData()
    tree, alg = Tree(model), FloatAlgebra()
    scale = sum(b.inertia.mass for b in model.bodies) * 9.81     # V of the total mass 1 m up
    Q, QD = [], []
    for _ in range(NSTATES):
        q, qd, _, _ = random_state(rng, model.nv, qrange)
        q_pin, J, _ = pin_state(pin, pm, model, q, qd)
        T = pin.computeKineticEnergy(pm, pdata, q_pin, J @ qd)
        V = pin.computePotentialEnergy(pm, pdata, q_pin)
        for ours in (dyn.kinetic_energy(q, qd), rec.kinetic_energy(tree, alg, list(q), list(qd))):
            assert abs(ours - T) <= TOL * abs(T), f"{system} T: {ours} vs Pinocchio {T}"
        for ours in (dyn.potential_energy(q), rec.potential_energy(tree, alg, list(q))):
            assert abs(ours - V) <= TOL * max(abs(V), scale), f"{system} V: {ours} vs Pinocchio {V}"
        assert isinstance(dyn.kinetic_energy(q, qd), float)
        Q.append(q)
        QD.append(qd)
    Q, QD = np.array(Q), np.array(QD)
    np.testing.assert_allclose(dyn.kinetic_energy(Q, QD), [dyn.kinetic_energy(q, v) for q, v in zip(Q, QD)],
                               rtol=1e-14)
    np.testing.assert_allclose(dyn.potential_energy(Q), [dyn.potential_energy(q) for q in Q], rtol=1e-14)


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_center_of_mass_equals_pinocchio(pin, generated, rng, system):
    path, build, qrange = SYSTEMS[system]
    model, dyn = generated(path(), system)
    pm = build(pin)
    pdata = pm.createData()
    for _ in range(NSTATES):
        q, qd, _, _ = random_state(rng, model.nv, qrange)
        q_pin, _, _ = pin_state(pin, pm, model, q, qd)
        want = pin.centerOfMass(pm, pdata, q_pin)
        got = dyn.center_of_mass(q)
        assert got.shape == (3,)
        assert np.linalg.norm(got - want) <= TOL * max(np.linalg.norm(want), 1.0), f"{system}: {got} vs {want}"


def test_free_flyer_mapping_is_consistent(pin):
    """The quadruped mapping itself: J is invertible, and the root block of J is [[0, R^T], [S_R, 0]]."""
    model = scleron.load_model(example("quadruped.yaml"))
    rng = np.random.default_rng(7)
    q, qd, _, _ = random_state(rng, model.nv, 1.2)
    _, J, _ = pin_state(pin, pin_quadruped(pin), model, q, qd)
    R = rot("x", q[3]) @ rot("y", q[4]) @ rot("z", q[5])
    np.testing.assert_allclose(J[:3, :3], R.T, atol=1e-14)      # v_local = R^T p-dot
    np.testing.assert_allclose(J[:3, 3:6], 0, atol=1e-14)
    np.testing.assert_allclose(J[3:6, :3], 0, atol=1e-14)
    # w_body of R = Rx Ry Rz: R^T dR/dt = [w]; check it by a finite difference of R
    r, rd, h = q[3:6], qd[3:6], 1e-6
    Rp = rot("x", r[0] + h * rd[0]) @ rot("y", r[1] + h * rd[1]) @ rot("z", r[2] + h * rd[2])
    Rm = rot("x", r[0] - h * rd[0]) @ rot("y", r[1] - h * rd[1]) @ rot("z", r[2] - h * rd[2])
    W = R.T @ (Rp - Rm) / (2 * h)
    np.testing.assert_allclose(J[3:6, 3:6] @ rd, [W[2, 1], W[0, 2], W[1, 0]], atol=1e-8)
    assert abs(np.linalg.det(J)) > 1e-3


# ---- stored Pinocchio / MuJoCo values ----------------------------------------------------------------
def rc_model(n):
    m = scleron.Model(f"rc{n}_hand")
    for i in range(1, n + 1):
        origin = scleron.Transform() if i == 1 else scleron.Transform(RX90.copy(), np.array([1.0, 0, 0]))
        m.add_body(f"link{i}", "world" if i == 1 else f"link{i - 1}", joint="revolute",
                   joint_name=f"joint{i}", origin=origin, axis=(0, 0, 1), mass=1.0,
                   com=(0.5, 0, 0), inertia=RC_INERTIA)
    return m


def rc_cases():
    with open(RC_REFERENCE) as fh:
        return json.load(fh)["cases"]


@pytest.mark.parametrize("case", rc_cases(), ids=lambda c: f"RC{c['n']}")
def test_rc_reference_values(generated, case):
    n = case["n"]
    if n == 20:
        systems = [generated(example("rc20.yaml"), "rc20"), generated(example("rc20.urdf"), "rc20_urdf")]
    else:
        systems = [generated(rc_model(n), f"rc{n}_hand")]
    q, v, u = (np.array(case[k]) for k in ("q", "v", "u"))
    for model, dyn in systems:
        assert dyn.nv == n
        got = {"M": dyn.mass_matrix(q), "nle": dyn.bias_forces(q, v),
               "rnea": dyn.inverse_dynamics(q, v, u), "aba": dyn.forward_dynamics(q, v, u)}
        for key, value in got.items():
            want = np.array(case[key])
            assert rel_err(value, want) <= TOL, f"RC{n} {key}: {rel_err(value, want):.3g}"


# robots of example-robot-data that no other test uses (fixed base), point masses included
OTHER_ROBOTS = ["z1_description/urdf/z1.urdf", "kinova_description/robots/kinova.urdf",
                "xarm_description/urdf/xarm7.urdf", "hyq_description/robots/hyq_no_sensors.urdf",
                "baxter_description/urdf/baxter.urdf", "icub_description/robots/icub_reduced.urdf"]


@pytest.mark.slow
@pytest.mark.parametrize("rel", OTHER_ROBOTS)
def test_energies_com_and_mass_matrix_on_other_robots(pin, generated, rng, rel):
    from conftest import robots_dir
    path = os.path.join(robots_dir(), rel)
    model, dyn = generated(path, "other_" + os.path.basename(rel).split(".")[0])
    pm = pin.buildModelFromUrdf(path)
    pdata = pm.createData()
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
        q_pin, J, _ = pin_state(pin, pm, model, q, qd)
        T = pin.computeKineticEnergy(pm, pdata, q_pin, J @ qd)
        V = pin.computePotentialEnergy(pm, pdata, q_pin)
        Mp = np.array(pin.crba(pm, pdata, q_pin))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert abs(dyn.kinetic_energy(q, qd) - T) <= TOL * abs(T)
        assert abs(dyn.potential_energy(q) - V) <= TOL * max(abs(V), 1.0)
        assert rel_err(dyn.center_of_mass(q), pin.centerOfMass(pm, pdata, q_pin)) <= TOL
        assert rel_err(dyn.mass_matrix(q), J.T @ Mp @ J) <= TOL


@pytest.mark.parametrize("damping", ["read", "ignore"])
def test_urdf_damping_read_on_request(pin, rng, damping):
    """<dynamics damping=d> is dropped by default (as Pinocchio's rnea/nle drop it) and, with
    damping="read" (--damping read), is the joint's damper: h = Pinocchio's nle + d qd, where
    Pinocchio keeps d in model.damping (panda: 0.003 on its arm, 0.3 on its fingers)."""
    path = robot_urdf("panda")
    with pytest.warns(UserWarning):                    # (its finger's <mimic>)
        model = scleron.load_model(path, damping=damping)
    pm = pin.buildModelFromUrdf(path)
    pd = pm.createData()
    assert np.any(pm.damping)
    tree = Tree(model)
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v = rng.uniform(-1, 1, pm.nv)
    h = np.array(rec.bias_forces(tree, FloatAlgebra(), list(q), list(v)))
    want = pin.nle(pm, pd, q, v) + (pm.damping * v if damping == "read" else 0.0)
    assert np.abs(h - want).max() <= 1e-12 * np.abs(want).max()
    with pytest.raises(scleron.ModelError, match="damping= \\(--damping\\) applies to URDF files"):
        scleron.load_model(example("rc20.yaml"), damping="read")


@pytest.mark.parametrize("text, problem", [
    ('<robot name="n"><link name="base"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" '
     'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j1" type="revolute">'
     '<parent link="base"/><child link="b"/><axis xyz="0 0 1"/><dynamics damping="-1"/></joint></robot>',
     "joint 'j1': <dynamics damping=-1>: a damper takes no negative damping"),
    ('<robot name="c"><link name="base"/><link name="b"/><link name="c"/><joint name="j1" type="revolute">'
     '<parent link="b"/><child link="c"/><dynamics damping="0.1"/></joint><joint name="j2" '
     'type="revolute"><parent link="c"/><child link="b"/><dynamics damping="0.1"/></joint></robot>',
     "their joints form a cycle"),
])
def test_urdf_damping_read_refuses_what_it_cannot_read(text, problem):
    from scleron.model.urdf import load_urdf_string
    with pytest.raises(scleron.ModelError, match=problem):
        load_urdf_string(text, "d.urdf", damping="read")


def test_urdf_damping_of_a_coupled_mimic_joint_is_said_not_read(tmp_path):
    """A coupled <mimic> joint has no coordinate to damp: its <dynamics damping> is not read (as
    Pinocchio's mimic=True) and a MimicWarning names it, where it was dropped silently."""
    from scleron.model.urdf import MimicWarning
    link = ('<link name="{}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
            'ixy="0" ixz="0" iyz="0"/></inertial></link>')
    path = tmp_path / "mm.urdf"
    path.write_text('<robot name="mm"><link name="base"/>' + link.format("a") + link.format("b")
                    + '<joint name="j1" type="revolute"><parent link="base"/><child link="a"/>'
                    '<axis xyz="0 0 1"/><dynamics damping="0.7"/></joint><joint name="j2" '
                    'type="revolute"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/>'
                    '<axis xyz="0 0 1"/><mimic joint="j1" multiplier="-0.5"/><dynamics '
                    'damping="1.5"/></joint></robot>')
    with pytest.warns(MimicWarning, match=r"damping> of 1 coupled <mimic> joint \(j2\) not read"):
        model = scleron.load_model(str(path), mimic="couple", damping="read")
    assert [j.damping for j in model.joints] == [(0.7,), None]


def test_urdf_friction_is_said_not_read_when_damping_is(tmp_path):
    """<dynamics friction> (Coulomb, not smooth) is not read: with damping="read", where the user
    asked for the file's dissipation, a warning names the joints whose friction is dropped."""
    from scleron.model.urdf import load_urdf_string
    text = ('<robot name="f"><link name="base"/><link name="a"><inertial><mass value="1"/><inertia '
            'ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint '
            'name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>'
            '<dynamics damping="0.2" friction="{}"/></joint></robot>')
    with pytest.warns(UserWarning, match=r"f.urdf: the <dynamics friction> of 1 joint \(j1\) not read"):
        model = load_urdf_string(text.format("0.5"), "f.urdf", damping="read")
    assert model.joints[0].damping == (0.2,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_urdf_string(text.format("0"), "f.urdf", damping="read")
        load_urdf_string(text.format("0.5"), "f.urdf")          # dynamics ignored, as Pinocchio
    with pytest.warns(UserWarning, match="friction> of 1 joint"):     # not read, so not refused
        load_urdf_string(text.format("x"), "f.urdf", damping="read")


def scaled_chain_urdf(L, m, n=5):
    """n links on revolute joints about x, y, z in turn, every length L and mass m, full
    rotational inertias (products included) of m L^2 scale."""
    axes = ["1 0 0", "0 1 0", "0 0 1"]
    parts = ['<robot name="scaled"><link name="l0"/>']
    for i in range(1, n + 1):
        I = [c * m * L * L for c in (0.1, 0.08, 0.05, 0.02, 0.01, -0.015)]
        parts.append(f'<link name="l{i}"><inertial><origin xyz="{0.3 * L!r} {0.1 * L!r} {0.5 * L!r}"/>'
                     f'<mass value="{m!r}"/><inertia ixx="{I[0]!r}" iyy="{I[1]!r}" izz="{I[2]!r}" '
                     f'ixy="{I[3]!r}" ixz="{I[4]!r}" iyz="{I[5]!r}"/></inertial></link>'
                     f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child '
                     f'link="l{i}"/><origin xyz="{0.2 * L!r} {0.1 * L!r} {L!r}"/><axis '
                     f'xyz="{axes[i % 3]}"/><limit effort="1" velocity="1" lower="-3" upper="3"/></joint>')
    return "".join(parts) + "</robot>"


@pytest.mark.parametrize("L, m", [(1e-3, 1e-8), (3e-6, 1.0), (1e-6, 1.0), (1.0, 1.0), (1e3, 1e6)])
def test_small_and_light_bodies_keep_their_inertia(pin, rng, L, m):
    """An outside tester: one snapping tolerance for the whole 6x6 inertia (1e-12 of its largest
    entry, at least 1e-15) mixed kg, kg m and kg m^2: a milligram-millimetre chain (cond(M) 61)
    had FD 25 % and ID 92 % off Pinocchio's, a 1 kg chain 1 um across was refused as singular.
    Each block now has its own scale."""
    from scleron.model.urdf import load_urdf_string
    text = scaled_chain_urdf(L, m)
    model = load_urdf_string(text, "scaled.urdf")
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    tree = Tree(model)
    for _ in range(3):
        q, qd, tau = (rng.uniform(-3, 3, pm.nv) for _ in range(3))
        M = np.array(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
        assert rel_err(M, pin.crba(pm, pd, q)) <= 1e-13
        scale = np.abs(M).max()
        fd = np.array(rec.forward_dynamics(tree, FloatAlgebra(), list(q), list(qd), list(tau * scale)))
        assert rel_err(fd, pin.aba(pm, pd, q, qd, tau * scale)) <= 1e-12


def test_a_thin_rod_along_its_axis_keeps_its_moment(pin):
    """An outside tester: a 1 kg rod on its hinge's axis, 1 m out, Izz = 5e-13 kg m^2 (1e-12 of
    its inertia about the hinge's origin), had that moment snapped to 0: M_00 2e-12 against
    Pinocchio's 2.5e-12, qdd 25 % off, and no warning. A diagonal moment is geometry."""
    from scleron.model.urdf import load_urdf_string
    link = ('<link name="{}"><inertial><origin xyz="0 0 {}"/><mass value="1"/><inertia ixx="0.1" '
            'ixy="0" ixz="0" iyy="0.1" iyz="0" izz="{}"/></inertial></link>')
    joint = ('<joint name="{}" type="revolute"><parent link="{}"/><child link="{}"/><origin '
             'xyz="0 0 {}"/><axis xyz="{}"/><limit lower="-3" upper="3" effort="1" '
             'velocity="1"/></joint>')
    text = ('<robot name="rod"><link name="base"/>' + link.format("rod", 1, 5e-13)
            + link.format("tip", 0, 2e-12) + joint.format("spin", "base", "rod", 0, "0 0 1")
            + joint.format("tilt", "rod", "tip", 2, "1 0 0") + "</robot>")
    tree = Tree(load_urdf_string(text, "rod.urdf"))
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    q, qd, tau = np.array([0.3, 0.0]), np.array([0.0, 0.0]), np.array([1e-12, 0.0])
    M = np.array(rec.mass_matrix(tree, FloatAlgebra(), list(q)))
    assert rel_err(M, pin.crba(pm, pd, q)) <= 1e-13 and M[0, 0] == pytest.approx(2.5e-12)
    fd = np.array(rec.forward_dynamics(tree, FloatAlgebra(), list(q), list(qd), list(tau)))
    assert rel_err(fd, pin.aba(pm, pd, q, qd, tau)) <= 1e-9
