"""The derivatives and the frame functions on example-robot-data's robots, fixed base and free
flyer, against Pinocchio: computeABADerivatives, computeRNEADerivatives, computeMinverse; the
placement, the three Jacobians, the twist and the classical acceleration of every link (welded
ones included), the centre of mass and its Jacobian.

Compared through the numeric reference (the recursions the C is unrolled from, evaluated in
floats; tests/test_derivatives.py and tests/test_frames.py hold the compiled code to that
reference and to Pinocchio on a few robots), so a robot takes under a second (tiago_dual's 107
coordinates two) and nothing is compiled. The default run takes a quadruped, a quadruped with
an arm, a humanoid, an arm whose axes are not at right angles and a model with continuous
joints; the whole walk (37 s) is slow, and so is the last test, the compiled code of a humanoid
against Pinocchio.

Mimic joints are read as independent coordinates here (mimic="independent", as Pinocchio's
model without mimic=True): tests/test_erd_walk.py checks the coupled dynamics. Pinocchio's
continuous joints have q = (cos, sin) and one tangent coordinate, so the derivatives' columns
(tangent space) and every other output compare as they are. The forward dynamics' derivatives
and M^-1 compare by their residual |M (X - X_ref)| / (|M| |X_ref|): icub's point masses make M
ill-conditioned (cond 4e7), which scales the difference of two correct results by cond(M)."""
import math
import os
import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics import derivatives, frames, recursions
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree

from conftest import robots_dir
from test_erd_walk import all_urdfs, refusal

pin = pytest.importorskip("pinocchio")

TOL = 1e-9
ALG = FloatAlgebra()
REFS = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
# (file, floating) of the default run
QUICK = [("anymal_b_simple_description/robots/anymal.urdf", True),
         ("b1_description/urdf/b1-z1.urdf", True),
         ("talos_data/robots/talos_reduced.urdf", True),
         ("xarm_description/urdf/xarm7.urdf", False),
         ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", True)]


def rel_err(a, ref, floor=0.0):
    """|a - ref| / max(|ref|, floor): floor is the norm of a related output where ref can be
    zero (iris's rotors spin about their own axes: their dtau/dq is zero, Pinocchio's 1e-17)."""
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), floor, 1e-300))


def backward_err(M, a, ref, floor=0.0):
    """|M (a - ref)| / (|M| max(|ref|, floor)): the error of an output of M^-1 as the residual
    it leaves, not as cond(M) times that."""
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    scale = np.linalg.norm(M, 2) * max(np.linalg.norm(ref), floor, 1e-300)
    return float(np.linalg.norm(M @ (a - ref)) / scale)


def swap(m):
    """Pinocchio's [v; w] rows as scleron's [w; v]."""
    m = np.asarray(m)
    return np.concatenate([m[3:], m[:3]])


def symmetric(upper):
    return np.triu(upper) + np.triu(upper, 1).T


def load(name, floating):
    path = os.path.join(robots_dir(), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # welded links' inertias, icub's q = 0
        model = scleron.load_model(path, floating=floating, mimic="independent")
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(path)
    return Tree(model), pm


def scleron_q(tree, pm, qp):
    """scleron's q of Pinocchio's q: a continuous joint's (cos, sin) as its angle."""
    q = np.zeros(tree.nq)
    for b in tree.bodies:
        i = pm.getJointId(b.joint_name)
        j = pm.idx_qs[i]
        q[b.q_start:b.q_start + b.nq] = [math.atan2(qp[j + 1], qp[j])] \
            if (pm.nqs[i], pm.nvs[i]) == (2, 1) else qp[j:j + b.nq]
    return list(q)


def derivative_errors(tree, pm, pd, qp, q, v, a, tau):
    """The largest errors of M^-1, the inverse and the forward dynamics' derivatives (those of
    dtau/dq and dtau/dqd relative to |M| at least, those of M^-1's products by their residual)."""
    M = symmetric(pin.crba(pm, pd, qp))
    Minv_ref = symmetric(pin.computeMinverse(pm, pd, qp))
    Minv = derivatives.mass_matrix_inverse(tree, ALG, q)
    errs = [backward_err(M, Minv, Minv_ref)]
    dq, dv, M_ = derivatives.inverse_dynamics_derivatives(tree, ALG, q, list(v), list(a))
    pin.computeRNEADerivatives(pm, pd, qp, v, a)
    floor = np.linalg.norm(M)
    errs += [rel_err(dq, pd.dtau_dq, floor), rel_err(dv, pd.dtau_dv, floor), rel_err(M_, M)]
    dq, dv, Mi = derivatives.forward_dynamics_derivatives(tree, ALG, q, list(v), list(tau))
    pin.computeABADerivatives(pm, pd, qp, v, tau)
    floor = np.linalg.norm(Minv_ref)
    errs += [backward_err(M, dq, pd.ddq_dq, floor), backward_err(M, dv, pd.ddq_dv, floor),
             backward_err(M, Mi, symmetric(pd.Minv))]
    return max(errs)


def frame_errors(tree, pm, pd, qp, q, v, a):
    """The largest errors of every link's placement, Jacobians, twist and classical
    acceleration in the three references, the centre of mass and its Jacobian."""
    pin.forwardKinematics(pm, pd, qp, v, a)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobians(pm, pd, qp)
    ids = [pm.getFrameId(f.name, pin.FrameType.BODY) for f in tree.frames]
    links = {f.name for f in pm.frames if f.type == pin.FrameType.BODY}
    assert {f.name for f in tree.frames} == links          # every link, welded ones too
    errs = [rel_err(frames.frame_placements(tree, ALG, q), [pd.oMf[i].homogeneous for i in ids])]
    for ref, pref in REFS.items():
        errs += [rel_err(frames.frame_jacobians(tree, ALG, q, reference=ref),
                         [swap(pin.getFrameJacobian(pm, pd, i, pref)) for i in ids]),
                 rel_err(frames.frame_velocities(tree, ALG, q, list(v), reference=ref),
                         [swap(pin.getFrameVelocity(pm, pd, i, pref).vector) for i in ids]),
                 rel_err(frames.frame_accelerations(tree, ALG, q, list(v), list(a), reference=ref),
                         [swap(pin.getFrameClassicalAcceleration(pm, pd, i, pref).vector)
                          for i in ids])]
    errs += [rel_err(recursions.center_of_mass(tree, ALG, q), pin.centerOfMass(pm, pd, qp)),
             rel_err(frames.com_jacobian(tree, ALG, q), pin.jacobianCenterOfMass(pm, pd, qp))]
    return max(errs)


def check(name, floating, rng):
    tree, pm = load(name, floating)
    pd = pm.createData()
    assert pm.nv == tree.nv
    order = [pm.idx_vs[pm.getJointId(b.joint_name)] for b in tree.bodies]
    assert order == sorted(order)                          # the same coordinate order
    qp = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    q = scleron_q(tree, pm, qp)
    v, a, tau = (rng.uniform(-1, 1, tree.nv) for _ in range(3))
    assert derivative_errors(tree, pm, pd, qp, q, v, a, tau) < TOL
    assert frame_errors(tree, pm, pd, qp, q, v, a) < TOL


@pytest.mark.parametrize("name, floating", QUICK)
def test_derivatives_and_frames_equal_pinocchio(name, floating, rng):
    check(name, floating, rng)


def walked():
    """Every (file, floating) the dynamics walk accepts (tiago_dual's 107 coordinates
    included), but QUICK."""
    out = []
    for name in all_urdfs():
        for floating in (False, True):
            if (name, floating) in QUICK or refusal(name, floating) is not None:
                continue
            out.append(pytest.param(name, floating, marks=pytest.mark.slow))
    return out


@pytest.mark.parametrize("name, floating", walked())
def test_every_robot_derivatives_and_frames_equal_pinocchio(name, floating, rng):
    check(name, floating, rng)


# ---- the compiled code on a humanoid -------------------------------------------------------------
COMPILED = ["forward_dynamics", "mass_matrix_inverse", "inverse_dynamics_derivatives",
            "forward_dynamics_derivatives", "frame_placements", "frame_jacobians",
            "frame_jacobians_local", "frame_jacobians_world", "frame_velocities",
            "frame_accelerations", "com_jacobian"]


@pytest.mark.slow
def test_compiled_humanoid_equals_pinocchio(generated, rng):
    """talos_reduced on a free flyer (38 coordinates, 60 links; its derivatives take the loop
    forms): the generated C against Pinocchio at five states (generation ~30 s)."""
    name = "talos_data/robots/talos_reduced.urdf"
    tree, pm = load(name, True)
    _, dyn = generated(os.path.join(robots_dir(), name), "talos_reduced_ff",
                       load_options={"floating": True, "mimic": "independent"}, functions=COMPILED)
    pd = pm.createData()
    ids = [pm.getFrameId(n, pin.FrameType.BODY) for n in dyn.frame_names]
    for _ in range(5):
        qp = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        q = np.array(scleron_q(tree, pm, qp))
        v, a, tau = (rng.uniform(-1, 1, tree.nv) for _ in range(3))
        M = symmetric(pin.crba(pm, pd, qp))
        Minv = symmetric(pin.computeMinverse(pm, pd, qp))
        assert backward_err(M, dyn.mass_matrix_inverse(q), Minv) < TOL
        dq, dv, M_ = dyn.inverse_dynamics_derivatives(q, v, a)
        pin.computeRNEADerivatives(pm, pd, qp, v, a)
        floor = np.linalg.norm(M)
        assert max(rel_err(dq, pd.dtau_dq, floor), rel_err(dv, pd.dtau_dv, floor),
                   rel_err(M_, M)) < TOL
        dq, dv, Mi = dyn.forward_dynamics_derivatives(q, v, tau)
        pin.computeABADerivatives(pm, pd, qp, v, tau)
        floor = np.linalg.norm(Minv)
        assert max(backward_err(M, dq, pd.ddq_dq, floor), backward_err(M, dv, pd.ddq_dv, floor),
                   backward_err(M, Mi, Minv)) < TOL
        pin.forwardKinematics(pm, pd, qp, v, a)
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        assert rel_err(dyn.frame_placements(q), [pd.oMf[i].homogeneous for i in ids]) < TOL
        for ref, pref in REFS.items():
            assert rel_err(dyn.frame_jacobians(q, reference=ref),
                           [swap(pin.getFrameJacobian(pm, pd, i, pref)) for i in ids]) < TOL
        lwa = pin.LOCAL_WORLD_ALIGNED
        assert rel_err(dyn.frame_velocities(q, v),
                       [swap(pin.getFrameVelocity(pm, pd, i, lwa).vector) for i in ids]) < TOL
        assert rel_err(dyn.frame_accelerations(q, v, a),
                       [swap(pin.getFrameClassicalAcceleration(pm, pd, i, lwa).vector)
                        for i in ids]) < TOL
        assert rel_err(dyn.com_jacobian(q), pin.jacobianCenterOfMass(pm, pd, qp)) < TOL
        qdd = np.linalg.solve(M, tau - pin.nonLinearEffects(pm, pd, qp, v))
        assert backward_err(M, dyn.forward_dynamics(q, v, tau), qdd) < TOL
