"""scleron.lie: log6, exp6 and Jlog6 of placements and twists ([w; v]) against Pinocchio's
(rows [v; w]) on random placements, near half a turn and near the identity; Jlog6 against
central differences of log6 where Pinocchio's series is less accurate than 1e-9 (rotations
of 1e-4 to 1e-3 rad: Pinocchio 2e-5 off central differences at 3e-4, scleron 5e-10)."""
import numpy as np
import pytest

from scleron import lie

pin = pytest.importorskip("pinocchio")
ORDER = [3, 4, 5, 0, 1, 2]


def placement(rng, angle=None):
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0, np.pi) if angle is None else angle
    return pin.SE3(pin.exp3(axis * angle), rng.normal(size=3))


def central_jlog6(H, h=1e-6):
    J = np.zeros((6, 6))
    for k in range(6):
        d = np.zeros(6)
        d[k] = h
        J[:, k] = (lie.log6(H @ lie.exp6(d)) - lie.log6(H @ lie.exp6(-d))) / (2 * h)
    return J


@pytest.mark.parametrize("angles", ["random", "half_turn", "small"])
def test_matches_pinocchio(angles, rng):
    for _ in range(40):
        angle = {"random": None, "half_turn": np.pi - 10 ** rng.uniform(-7, -1),
                 "small": 10 ** rng.uniform(-2.5, -1)}[angles]
        M = placement(rng, angle)
        H = M.homogeneous
        xi = pin.log6(M).vector
        assert np.allclose(lie.log6(H), np.r_[xi[3:], xi[:3]], rtol=0, atol=1e-9)
        assert np.allclose(lie.Jlog6(H), pin.Jlog6(M)[np.ix_(ORDER, ORDER)], rtol=0, atol=1e-9)
        twist = rng.normal(size=6)
        assert np.allclose(lie.exp6(twist), pin.exp6(pin.Motion(np.r_[twist[3:], twist[:3]])).homogeneous,
                           rtol=0, atol=1e-14)
        assert np.allclose(lie.exp6(lie.log6(H)), H, rtol=0, atol=1e-12)


def test_jlog6_is_the_derivative_of_log6_near_the_identity(rng):
    for angle in (1e-4, 3e-4, 1e-3, 1e-2, 1.0, 3.0):
        H = placement(rng, angle).homogeneous
        assert np.abs(lie.Jlog6(H) - central_jlog6(H)).max() < 3e-9


def test_identity_and_batches(rng):
    assert np.array_equal(lie.log6(np.eye(4)), np.zeros(6))
    assert np.array_equal(lie.Jlog6(np.eye(4)), np.eye(6))
    assert np.array_equal(lie.exp6(np.zeros(6)), np.eye(4))
    H = np.stack([[placement(rng).homogeneous for _ in range(3)] for _ in range(2)])
    logs = lie.log6(H)
    assert logs.shape == (2, 3, 6) and np.array_equal(logs[1, 2], lie.log6(H[1, 2]))
    assert lie.Jlog6(H).shape == (2, 3, 6, 6) and lie.exp6(logs).shape == (2, 3, 4, 4)


def test_a_batch_is_its_placements_one_by_one(rng):
    """From 8 placements on, the formulas run on arrays of them all at once: the same numbers as
    one at a time (on floats)."""
    H = np.stack([placement(rng, angle).homogeneous
                  for angle in [None] * 9 + [np.pi - 1e-9, 1e-9, 0.0, 0.05]])
    twists = np.random.default_rng(5).normal(size=(13, 6))
    for f, x in ((lie.log6, H), (lie.Jlog6, H), (lie.exp6, twists)):
        together = f(x)
        assert np.allclose(together, np.stack([f(one) for one in x]), rtol=0, atol=1e-13)
    assert lie.log6(np.zeros((0, 4, 4))).shape == (0, 6)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"M must have shape \(4, 4\)"):
        lie.log6(np.eye(3))
    with pytest.raises(ValueError, match="not orthonormal"):
        lie.log6(np.diag([2.0, 1.0, 1.0, 1.0]))
    reflection = np.diag([1.0, 1.0, -1.0, 1.0])           # an outside reviewer: taken silently
    with pytest.raises(ValueError, match="not a rotation"):
        lie.Jlog6(reflection)
    with pytest.raises(ValueError, match=r"last row is not \[0, 0, 0, 1\]"):
        lie.log6(np.vstack([np.eye(4)[:3], [5.0, 5.0, 5.0, 0.0]]))
    with pytest.raises(ValueError, match="not finite"):
        lie.exp6([0, 0, np.nan, 0, 0, 0])
    with pytest.raises(ValueError, match=r"xi must have shape \(6,\)"):
        lie.exp6(np.zeros(5))
