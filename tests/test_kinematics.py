"""scleron.kinematics: the one numeric forward kinematics (draw, simulate and the tests use it)."""
import numpy as np
import pytest

import scleron
from scleron.joints import joint_model
from scleron.kinematics import Kinematics, configuration, joint_transform, world_poses


def mixed_chain():
    m = scleron.Model("kin")
    m.add_body("a", joint="spherical", chart="ZXZ", xyz=(0, 0, 1))
    m.add_body("b", "a", joint="ball_exp", xyz=(1, 0, 0))
    m.add_body("c", "b", joint="revolute", axis=(0, 1, 1), xyz=(0, 1, 0), rpy=(0.1, 0.2, 0.3))
    m.add_body("d", "c", joint="free", chart="YZX")
    m.add_body("e", "d", joint="composite", parts=[{"type": "translational"},
                                                   {"type": "revolute", "axis": (1, 0, 0)}])
    m.add_body("f", "a", joint="helical", axis=(1, 0, 0), pitch=0.05, xyz=(0, 0.5, 0))
    return m


def test_joint_transforms_equal_joint_model_G(rng):
    for j in mixed_chain().joints:
        # random rows and one near q = 0 (the series-guarded branch of exp coordinates)
        Q = np.vstack([rng.uniform(-2, 2, (3, j.dof)), 1e-5 * rng.normal(size=(1, j.dof))])
        R, t = joint_transform(j.type, j.params)(Q)
        assert R.shape == (4, 3, 3) and t.shape == (4, 3)
        for k, q in enumerate(Q):
            G = joint_model(j.type, j.params).numeric("G", q)
            assert np.allclose(G[:3, :3], R[k], atol=1e-13), j.name
            assert np.allclose(G[:3, 3], t[k], atol=1e-13), j.name


def test_world_poses_compose_placements_and_joint_transforms(rng):
    """T_i = T_parent X_tree,i Q_i(q_i), composed here by hand from joint_model(...).numeric("G")."""
    m = mixed_chain()
    Q = rng.normal(size=(3, m.nq))
    batch = world_poses(m, Q)
    assert batch.shape == (3, len(m.bodies), 4, 4)
    for n in range(3):
        single = world_poses(m, Q[n])
        assert single.shape == (len(m.bodies), 4, 4)
        assert np.array_equal(batch[n], single)
        k, T = 0, []
        for i, j in enumerate(m.joints):
            X = np.eye(4)
            X[:3, :3], X[:3, 3] = j.origin.rotation, j.origin.translation
            p = m.parent_index(i)
            G = joint_model(j.type, j.params).numeric("G", Q[n, k:k + j.dof])
            T.append((np.eye(4) if p < 0 else T[p]) @ X @ G)
            k += j.dof
            assert np.allclose(single[i], T[i], atol=1e-12), j.name
    joint, body = Kinematics(m).frames(Q[0])
    assert np.allclose(joint[5], body[0] @ np.array([[1, 0, 0, 0], [0, 1, 0, 0.5], [0, 0, 1, 0],
                                                     [0, 0, 0, 1.0]]))
    # the helix (translation = pitch * angle): a turn by 2π moves it 2π pitch along its axis
    q = Q[0].copy()
    q[-1] += 2 * np.pi
    moved = world_poses(m, q)[5] - world_poses(m, Q[0])[5]
    assert np.allclose(moved[:3, 3], body[5][:3, :3] @ [2 * np.pi * 0.05, 0, 0], atol=1e-12)
    com = Kinematics(m).centres_of_mass(Q)
    assert com.shape == (3, len(m.bodies), 3)


def test_configuration_checks_q():
    m = mixed_chain()
    assert np.array_equal(configuration(m), np.zeros(m.nq))
    with pytest.raises(ValueError, match=r"nq = 18 numbers \(in order: a_joint\[0\]"):
        configuration(m, [0.0])
    with pytest.raises(ValueError, match="finite"):
        configuration(m, np.full(m.nq, np.nan))
