"""Derivatives of the frames' twists and classical accelerations (frame_velocity_derivatives,
frame_acceleration_derivatives), in the three references, q columns along integrate(q, v).

Oracles: Pinocchio's getFrameVelocityDerivatives and getFrameAccelerationDerivatives (after
computeForwardKinematicsDerivatives) on a floating quadruped and an arm with welded frames: in
LOCAL and WORLD as they are, the classical acceleration's w x v term composed by hand from its
velocity derivatives; in LOCAL_WORLD_ALIGNED Pinocchio holds the frame's origin where it is
(its derivative leaves out the origin's own motion, w x dp/dq and dw/dt x dp/dq, which the
central differences of its getFrameVelocity do include), so those terms are added to it. And
central differences of the generated functions' reference on general joints, with frames off
their bodies' origins. The last test compiles a small model and holds its C to the reference."""
import os
import warnings

import numpy as np
import pytest

import scleron
from scleron.dynamics.algebra import FloatAlgebra
from scleron.dynamics.tree import Tree
from scleron.functions import FUNCTIONS

from conftest import robots_dir
from test_external_wrenches import framed_branched, scleron_and_pinocchio

ALG = FloatAlgebra()
REFERENCES = ("local_world_aligned", "local", "world")


def named(base, reference):
    return base if reference == "local_world_aligned" else f"{base}_{reference}"


def evaluate(name, tree, *args):
    out = FUNCTIONS[name].evaluate(tree, ALG, *[np.ravel(a) for a in args])
    return tuple(np.array(x) for x in out) if isinstance(out, tuple) else np.array(out)


def rel(a, ref):
    return float(np.linalg.norm(np.asarray(a) - ref) / max(np.linalg.norm(ref), 1e-300))


@pytest.mark.parametrize("reference", REFERENCES)
def test_central_differences_on_general_joints(reference, tmp_path, rng):
    model = scleron.load_model(framed_branched(tmp_path))
    tree = Tree(model)
    n = tree.nv
    q = evaluate("integrate", tree, np.zeros(tree.nq), rng.uniform(-0.8, 0.8, n), 1.0)
    qd, qdd = rng.normal(size=n), rng.normal(size=n)
    vq, vqd = evaluate(named("frame_velocity_derivatives", reference), tree, q, qd)
    aq, aqd, aqdd = evaluate(named("frame_acceleration_derivatives", reference), tree, q, qd, qdd)
    vel = lambda q_, qd_: evaluate(named("frame_velocities", reference), tree, q_, qd_)
    acc = lambda q_, qd_, qdd_: evaluate(named("frame_accelerations", reference), tree, q_, qd_, qdd_)
    h = 1e-6
    cols = {name: [] for name in ("vq", "vqd", "aq", "aqd", "aqdd")}
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        qp, qm = (evaluate("integrate", tree, q, s * e, 1.0) for s in (1, -1))
        cols["vq"].append((vel(qp, qd) - vel(qm, qd)) / (2 * h))
        cols["vqd"].append((vel(q, qd + e) - vel(q, qd - e)) / (2 * h))
        cols["aq"].append((acc(qp, qd, qdd) - acc(qm, qd, qdd)) / (2 * h))
        cols["aqd"].append((acc(q, qd + e, qdd) - acc(q, qd - e, qdd)) / (2 * h))
        cols["aqdd"].append((acc(q, qd, qdd + e) - acc(q, qd, qdd - e)) / (2 * h))
    for name, ours in zip(cols, (vq, vqd, aq, aqd, aqdd)):
        assert rel(ours, np.stack(cols[name], axis=-1)) < 1e-6, name
    J = evaluate(named("frame_jacobians", reference), tree, q)
    assert rel(vqd, J) < 1e-14 and rel(aqdd, J) < 1e-14


pin = pytest.importorskip("pinocchio")
PIN = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


def swap(m):
    """Pinocchio's [v; w] rows as scleron's [w; v]."""
    return np.vstack([m[3:], m[:3]])


def pinocchio_reference(pm, pd, fid, reference):
    """(dv/dq, dv/dqd, da/dq, da/dqd, da/dqdd) of the frame's twist and classical acceleration,
    Pinocchio's rows [v; w], from its derivative functions (see the module's docstring)."""
    frame = PIN[reference]
    vq, vv = pin.getFrameVelocityDerivatives(pm, pd, fid, frame)
    _, aq, av, aa = pin.getFrameAccelerationDerivatives(pm, pd, fid, frame)
    vel = pin.getFrameVelocity(pm, pd, fid, frame)
    w, v = vel.angular, vel.linear
    if reference == "local_world_aligned":           # the origin moves: dp/dq = J's linear rows
        J = pin.getFrameJacobian(pm, pd, fid, frame)
        dw = pin.getFrameAcceleration(pm, pd, fid, frame).angular
        vq, aq = vq.copy(), aq.copy()
        vq[:3] += np.cross(w, J[:3].T).T
        aq[:3] += np.cross(dw, J[:3].T).T
    aq, av = aq.copy(), av.copy()                      # classical: + w x v, differentiated
    aq[:3] += np.cross(vq[3:].T, v).T + np.cross(w, vq[:3].T).T
    av[:3] += np.cross(vv[3:].T, v).T + np.cross(w, vv[:3].T).T
    return vq, vv, aq, av, aa


@pytest.mark.parametrize("file, floating", [("solo_description/robots/solo12.urdf", True),
                                            ("panda_description/urdf/panda.urdf", False)],
                         ids=["solo12", "panda"])
def test_matches_pinocchio(file, floating, rng):
    tree, pm, pd = scleron_and_pinocchio(file, floating)
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    qd, qdd = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    pin.computeForwardKinematicsDerivatives(pm, pd, q, qd, qdd)
    pin.updateFramePlacements(pm, pd)
    for reference in REFERENCES:
        ours = (*evaluate(named("frame_velocity_derivatives", reference), tree, q, qd),
                *evaluate(named("frame_acceleration_derivatives", reference), tree, q, qd, qdd))
        for k, f in enumerate(tree.frames):
            theirs = pinocchio_reference(pm, pd, pm.getFrameId(f.name, pin.BODY), reference)
            for a, b in zip(ours, theirs):
                assert rel(a[k], swap(b)) < 1e-9, (reference, f.name)


def test_generated_code_matches_the_reference(generated, rng):
    path = os.path.join(robots_dir(), "ur_description/urdf/ur5_robot.urdf")
    functions = ["frame_velocity_derivatives", "frame_velocity_derivatives_local",
                 "frame_acceleration_derivatives"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, dyn = generated(path, "ur5_fkd", functions=functions, frames=["tool0", "wrist_3_link"])
    tree = Tree(model, ["tool0", "wrist_3_link"])
    q, qd, qdd = rng.uniform(-2, 2, 6), rng.normal(size=6), rng.normal(size=6)
    vq, vqd = dyn.frame_velocity_derivatives(q, qd, reference="local")
    assert vq.shape == (2, 6, 6)
    for a, b in zip((vq, vqd), evaluate("frame_velocity_derivatives_local", tree, q, qd)):
        assert rel(a, b) < 1e-13
    for a, b in zip(dyn.frame_acceleration_derivatives(q, qd, qdd),
                    evaluate("frame_acceleration_derivatives", tree, q, qd, qdd)):
        assert rel(a, b) < 1e-13
