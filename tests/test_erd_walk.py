"""Every URDF example-robot-data ships, as a new user would load it (issue 13): each either loads,
passes the checks generation makes (dynamics.checks.check_model_dynamics) and agrees with
Pinocchio to 1e-9 (relative) on forward and inverse dynamics and the mass matrix, fixed base and
free-flyer; or is refused with the error REFUSED names. Compared through the numeric reference
(the recursions that get unrolled), nothing compiled: the whole walk takes a few seconds.

Oracles, independent of scleron's loader: Pinocchio 4 built with mimic=True (its RNEA and CRBA
take mimic joints; its ABA does not, so forward dynamics is M^-1 (tau - nle) from them); where
Pinocchio refuses the file with mimic=True (romeo, talos_full_v2: "The parent joint of the mimic
joint is not in the kinematic tree", a mimicked joint after its mimic in Pinocchio's order), its
model without mimic and the coupling read here with ElementTree: tau_r = G^T tau(G q + b, G qd,
G qdd), M_r = G^T M G. Continuous joints: Pinocchio's q holds (cos, sin), scleron's the angle."""
import glob
import math
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import scleron
from scleron.dynamics import recursions
from scleron.dynamics.checks import check_model_dynamics
from scleron.dynamics.tree import Tree
from scleron.errors import ModelError
from scleron.program import FloatAlgebra

from conftest import robots_dir

pin = pytest.importorskip("pinocchio")

TOL = 1e-9
# (file, floating) -> words of the error; floating None: both ways. Why each is right: docs/inertia-checks.md
REFUSED = {
    # the root link is 'world': there is nothing to float
    **{(f, True): "the root link is 'world', which cannot float" for f in (
        "asr_twodof_description/urdf/TwoDofs.urdf", "xarm_description/urdf/xarm7.urdf",
        "z1_description/urdf/z1.urdf", "ur_description/urdf/ur10_joint_limited_robot.urdf",
        "ur_description/urdf/ur10_robot.urdf", "ur_description/urdf/ur3_gripper.urdf",
        "ur_description/urdf/ur3_joint_limited_robot.urdf", "ur_description/urdf/ur3_robot.urdf",
        "ur_description/urdf/ur5_gripper.urdf", "ur_description/urdf/ur5_joint_limited_robot.urdf",
        "ur_description/urdf/ur5_robot.urdf")},
    # <mimic joint="index_q1">: the file's joint is 'Left_index_q1' (the walk couples mimics;
    # mimic="independent" reads no <mimic>, and loads the file with a warning: below)
    ("alex_description/urdf/alex_psyonic_hands.urdf", None):
        "<mimic> names joint 'index_q1', which does not exist",
    # a single link on a fixed base: nothing moves
    ("hector_description/robots/quadrotor_base.urdf", False): "the model has no moving bodies",
    ("iris_description/robots/iris_simple.urdf", False): "the model has no moving bodies",
    # an empty <robot> (xacro output with everything commented out)
    ("ur_description/urdf/ur3.urdf", None): "the robot has no <link>",
    # the hands: LHand and the 14 finger joints that mimic it move no mass at all
    ("romeo_description/urdf/romeo.urdf", None):
        "joint 'LHand': the mass matrix is singular: coordinate LHand",
    # negative principal moments of 5 % and 22 % of the largest (not rounding)
    ("romeo_description/urdf/romeo_laas_small.urdf", False):
        "link 'LHipPitch_link': inertia matrix is not positive semi-definite",
    # (floating: the massless base_link took body's inertia; the message names body, line 327)
    ("romeo_description/urdf/romeo_laas_small.urdf", True):
        "romeo_laas_small.urdf:327: link 'body': inertia matrix is not positive semi-definite",
    # largest moment 80 % above the sum of the others: the inertia about the link origin, not the com
    ("romeo_description/urdf/romeo_small.urdf", None):
        "link 'RShoulderYawLink': principal moments [0.000661782, 0.000679363, 0.00656531] "
        "violate the triangle inequality",
}
# accepted only with inertia="relaxed" (and then equal to Pinocchio, which checks nothing)
RELAXABLE = ["romeo_description/urdf/romeo_small.urdf"]
# the cases to run first (mimic through Pinocchio and through G, continuous joints, point masses,
# welded links with bad inertias); the whole walk is in the default run too (~10 s on one core)
QUICK = ["panda_description/urdf/panda.urdf", "pr2_description/urdf/pr2.urdf",
         "talos_data/robots/talos_full_v2.urdf", "tiago_description/robots/tiago.urdf",
         "icub_description/robots/icub.urdf", "solo_description/robots/solo12.urdf",
         "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
         "kinova_description/robots/kinova.urdf", "baxter_description/urdf/baxter.urdf"]


def all_urdfs():
    base = robots_dir()
    if base is None:
        return []
    return sorted(os.path.relpath(p, base) for p in glob.glob(f"{base}/**/*.urdf", recursive=True))


def refusal(name, floating):
    return REFUSED.get((name, floating), REFUSED.get((name, None)))


def rel_err(a, ref):
    a, ref = np.asarray(a, dtype=float), np.asarray(ref, dtype=float)
    return float(np.linalg.norm(a - ref) / max(np.linalg.norm(ref), 1e-300))


def read_mimics(path):
    """joint -> (mimicked joint, multiplier, offset) of the moving joints, chains composed."""
    out = {}
    for j in ET.parse(path).getroot().iter("joint"):
        m = j.find("mimic")
        if m is not None and j.get("type") != "fixed":
            out[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1)),
                                  float(m.get("offset", 0)))
    for name in out:
        target, a, b = out[name]
        while target in out:
            t, a2, b2 = out[target]
            target, a, b = t, a * a2, a * b2 + b
        out[name] = (target, a, b)
    return out


class Oracle:
    """Pinocchio's RNEA, CRBA and forward dynamics in scleron's coordinates (independent joints
    in Pinocchio's order, angles for continuous joints)."""

    def __init__(self, path, floating, tree, mimic=True):
        root = (pin.JointModelFreeFlyer(),) if floating else ()
        self.pm = pin.buildModelFromUrdf(path, *root)         # a coordinate per joint
        self.pd = self.pm.createData()
        mimics = read_mimics(path) if mimic else {}
        names = [self.pm.names[i] for i in range(1, self.pm.njoints)]
        self.names = [n for n in names if n not in mimics]
        assert tree.joint_names == self.names
        # G and b: Pinocchio's full velocity index -> (scleron's index, multiplier)
        own_v, own_q = {}, {}
        for b in tree.bodies:
            own_v[b.joint_name], own_q[b.joint_name] = b.v_start, b.q_start
        self.G = np.zeros((self.pm.nv, tree.nv))
        self.joints = []                     # (pin joint, q index in scleron's q, a, b)
        for i, n in enumerate(names, 1):
            src, a, off = mimics.get(n, (n, 1.0, 0.0))
            self.G[self.pm.idx_vs[i]:self.pm.idx_vs[i] + self.pm.nvs[i],
                   own_v[src]:own_v[src] + self.pm.nvs[i]] = a * np.eye(self.pm.nvs[i])
            self.joints.append((i, own_q[src], a, off))

    def pin_q(self, q):
        """Pinocchio's full q of scleron's q (a mimic joint: a q + b of the joint it follows)."""
        out = np.zeros(self.pm.nq)
        for i, k, a, b in self.joints:
            j, nq, nv = self.pm.idx_qs[i], self.pm.nqs[i], self.pm.nvs[i]
            if nv == 1:
                angle = a * q[k] + b
                out[j:j + nq] = (math.cos(angle), math.sin(angle)) if nq == 2 else angle
            else:                                                    # free flyer
                out[j:j + nq] = q[k:k + nq]
        return out

    def random_q(self, tree):
        """A random q of scleron: Pinocchio's random configuration's independent joints."""
        qp = pin.randomConfiguration(self.pm, -np.ones(self.pm.nq), np.ones(self.pm.nq))
        q = np.zeros(tree.nq)
        for b in tree.bodies:
            i = self.pm.getJointId(b.joint_name)
            j = self.pm.idx_qs[i]
            q[b.q_start:b.q_start + b.nq] = [math.atan2(qp[j + 1], qp[j])] \
                if (self.pm.nqs[i], self.pm.nvs[i]) == (2, 1) else qp[j:j + b.nq]
        return q

    def id_m_fd(self, q, v, a, tau):
        qp, G = self.pin_q(q), self.G
        M = pin.crba(self.pm, self.pd, qp)
        M = G.T @ (np.triu(M) + np.triu(M, 1).T) @ G
        rnea = G.T @ pin.rnea(self.pm, self.pd, qp, G @ v, G @ a)
        h = G.T @ pin.nonLinearEffects(self.pm, self.pd, qp, G @ v)
        return rnea, M, np.linalg.solve(M, tau - h)


def pinocchio_mimic(path, floating, q, v, a, tau, oracle):
    """Pinocchio's own mimic model (mimic=True) where it builds one: (tau, M, qdd) or None."""
    root = (pin.JointModelFreeFlyer(),) if floating else ()
    try:
        pm = pin.buildModelFromUrdf(path, *root, mimic=True)
    except ValueError:
        return None
    pd = pm.createData()
    names = [pm.names[i] for i in range(1, pm.njoints) if "Mimic" not in pm.joints[i].shortname()]
    qp = np.zeros(pm.nq)
    full = oracle.pin_q(q)
    for i in range(1, pm.njoints):      # the independent joints' entries of the full q
        if "Mimic" in pm.joints[i].shortname():
            continue
        k = oracle.pm.getJointId(pm.names[i])
        qp[pm.idx_qs[i]:pm.idx_qs[i] + pm.nqs[i]] = \
            full[oracle.pm.idx_qs[k]:oracle.pm.idx_qs[k] + pm.nqs[i]]
    assert names == [b for b in oracle.names]
    M = pin.crba(pm, pd, qp)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(pm, pd, qp, v)
    return pin.rnea(pm, pd, qp, v, a), M, np.linalg.solve(M, tau - h)


def walk(name, floating, rng, mimic="couple", **load):
    """Load (mimic joints honoured unless mimic="independent"), check and compare one robot;
    returns the largest relative error."""
    path = os.path.join(robots_dir(), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # welded links' inertias, icub's q = 0
        model = scleron.load_model(path, floating=floating, mimic=mimic, **load)
        tree = Tree(model)
        check_model_dynamics(tree, source=model.source, q0=model.q0)
    oracle = Oracle(path, floating, tree, mimic == "couple")
    alg, err = FloatAlgebra(), 0.0
    for _ in range(2):
        q = oracle.random_q(tree)
        v, a, tau = (rng.uniform(-1, 1, tree.nv) for _ in range(3))
        got = (recursions.inverse_dynamics(tree, alg, list(q), list(v), list(a)),
               recursions.mass_matrix(tree, alg, list(q)),
               recursions.forward_dynamics(tree, alg, list(q), list(v), list(tau)))
        refs = [oracle.id_m_fd(q, v, a, tau)]
        if tree.coupling is not None:
            mimic = pinocchio_mimic(path, floating, q, v, a, tau, oracle)
            if mimic is not None:
                refs.append(mimic)
        for tau_ref, M, qdd in refs:
            # forward dynamics by its backward error |M (qdd - qdd_ref)| / (|M| |qdd_ref|): icub's
            # point masses make M(q) ill-conditioned (cond up to 1e11 floating), which scales the
            # difference of two correct accelerations by cond(M), not this residual
            fd = float(np.linalg.norm(M @ (np.asarray(got[2]) - qdd))
                       / (np.linalg.norm(M, 2) * np.linalg.norm(qdd)))
            err = max(err, rel_err(got[0], tau_ref), rel_err(got[1], M), fd)
    return err


def check(name, floating, rng):
    expected = refusal(name, floating)
    if expected is not None:
        with pytest.raises(ModelError) as e:
            walk(name, floating, rng)
        assert expected in str(e.value)
    else:
        assert walk(name, floating, rng) < TOL


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("name", QUICK)
def test_robot_equals_pinocchio(name, floating, rng):
    check(name, floating, rng)


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("name", [n for n in all_urdfs() if n not in QUICK])
def test_every_robot_equals_pinocchio_or_is_refused(name, floating, rng):
    check(name, floating, rng)


@pytest.mark.parametrize("name", ["panda_description/urdf/panda.urdf", "pr2_description/urdf/pr2.urdf",
                                  "alex_description/urdf/alex_psyonic_hands.urdf"])
def test_mimic_independent_is_pinocchios_default_and_says_so(name, rng):
    """mimic="independent" (the loader's default for now, docs/mimic.md) gives each mimic joint
    a coordinate of its own, as pinocchio.buildModelFromUrdf without mimic=True, and warns."""
    from scleron.model.urdf import MimicWarning
    with pytest.warns(MimicWarning, match="read as independent coordinates|names a joint that does not exist"):
        scleron.load_model(os.path.join(robots_dir(), name))
    assert walk(name, False, rng, mimic="independent") < TOL


def test_the_walk_covers_every_urdf_of_example_robot_data():
    names = all_urdfs()
    assert len(names) >= 69
    assert {n for n, _ in REFUSED} <= set(names)


@pytest.mark.parametrize("floating", [False, True])
def test_a_relaxed_load_equals_pinocchio(floating, rng):
    """romeo_small's arm links violate the triangle inequality by 80 %: refused by default,
    accepted with inertia="relaxed" with a warning, and then the dynamics are Pinocchio's."""
    with pytest.warns(scleron.model.model.InertiaWarning, match="RShoulderYawLink"):
        scleron.load_model(os.path.join(robots_dir(), RELAXABLE[0]), inertia="relaxed")
    assert walk(RELAXABLE[0], floating, rng, inertia="relaxed") < TOL
