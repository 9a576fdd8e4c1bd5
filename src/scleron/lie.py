"""The exponential and logarithm of SE(3) for placements and twists, with numpy: what a task-space
cost needs beside the generated frame functions (a placement error log6(oMd^-1 oMf) and its
Jacobian Jlog6 times the frame's local Jacobian).

    log6(M)   (..., 4, 4) -> (..., 6)      the twist xi = [w; v] with exp6(xi) = M
    exp6(xi)  (..., 6)    -> (..., 4, 4)   the placement reached by the twist xi in unit time
    Jlog6(M)  (..., 4, 4) -> (..., 6, 6)   d log6(M exp6(d)) / dd at d = 0 (SE(3)'s inverse right
                                           Jacobian at log6(M))

Twists are scleron's [w; v], angular first (the frame Jacobians' rows); Pinocchio's log6, exp6
and Jlog6 are the same maps with [v; w]. The formulas are the ones the free flyer's integrate,
difference and their Jacobians are generated from (scleron.joints.manifolds), evaluated here on
numpy arrays of all the placements at once: one copy, with the same series near the identity
and the same half-turn rule."""
import math

import numpy as np

from .joints import manifolds
from .algebra import MATH_FUNCTIONS, FloatAlgebra

_IDENTITY = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]      # a free flyer's q at the identity
_TOLERANCE = 1e-6               # |R^T R - I|, |det R - 1| and the last row's allowed (float32 data)
_ANGULAR_FIRST = [3, 4, 5, 0, 1, 2]


class _ArrayAlgebra(FloatAlgebra):
    """The recursions' float algebra with numpy arrays for numbers: one entry per placement;
    the guarded helpers (series near 0) entry by entry."""

    def function(self, name, x):
        return getattr(np, name)(x) if hasattr(np, name) else np.vectorize(MATH_FUNCTIONS[name])(x)

    def call(self, helper, x):
        return np.vectorize(helper.numeric, otypes=[float])(x)


_ARRAYS, _FLOATS = _ArrayAlgebra(), FloatAlgebra()
_ARRAYS_FROM = 8        # placements at once: below, one at a time on floats (numpy's cost per
                        # call outweighs the formulas': 19 against 130 us for one log6)


def _batched(f, n):
    """f(alg, k) for the n items: on arrays of them all at once, or item by item on floats
    (k: an index or a slice into the items; the result an (n, ...) array)."""
    if n >= _ARRAYS_FROM:
        return f(_ARRAYS, slice(None))
    return np.stack([f(_FLOATS, k) for k in range(n)]) if n else None


def log6(M):
    """The twist [w; v] whose exponential is the placement M ([[R, p], [0, 1]])."""
    M, lead = _placements(M)
    q = _coordinates(M)

    def twist(alg, k):
        xi = manifolds.difference("se3", alg, _IDENTITY, [c[k] for c in q])     # [v; w]
        xi = _stack(xi, len(M)) if alg is _ARRAYS else np.array(xi)
        return xi[..., _ANGULAR_FIRST]
    out = _batched(twist, len(M))
    return (out if out is not None else np.zeros((0, 6))).reshape(lead + (6,))


def exp6(xi):
    """The placement [[R, p], [0, 1]] a twist xi = [w; v] reaches in unit time."""
    xi = _as_array(xi, (6,), "xi")
    lead = xi.shape[:-1]
    x = xi.reshape(-1, 6)

    def placement(alg, k):
        q = manifolds.integrate("se3", alg, _IDENTITY, [x[k, c] for c in (3, 4, 5, 0, 1, 2)])
        if alg is _ARRAYS:
            return _matrices(_stack(q, len(x)))
        return _matrices(np.array([q]))[0]
    out = _batched(placement, len(x))
    return (out if out is not None else np.zeros((0, 4, 4))).reshape(lead + (4, 4))


def Jlog6(M):
    """d log6(M exp6(d)) / dd at d = 0, rows and columns [w; v]: J_r(log6(M))^-1 (Barfoot)."""
    M, lead = _placements(M)
    q = _coordinates(M)

    def jacobian(alg, k):
        xi = manifolds.difference("se3", alg, _IDENTITY, [c[k] for c in q])     # [v; w]
        J = manifolds.se3_right_jacobian_inverse(alg, xi)
        J = np.stack([_stack(row, len(M)) for row in J], axis=1) if alg is _ARRAYS else np.array(J)
        return J[..., _ANGULAR_FIRST, :][..., _ANGULAR_FIRST]
    out = _batched(jacobian, len(M))
    return (out if out is not None else np.zeros((0, 6, 6))).reshape(lead + (6, 6))


# ---- helpers -------------------------------------------------------------------------------------
def _as_array(x, tail, name):
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if a.ndim < len(tail) or a.shape[a.ndim - len(tail):] != tail:
        raise ValueError(f"{name} must have shape {tail} or (..., {', '.join(map(str, tail))}), "
                         f"got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has entries that are not finite (nan or inf)")
    return a


def _placements(M):
    """(M as (n, 4, 4), its leading shape), refused unless each is a rigid placement: R a
    rotation (orthonormal, det +1), last row [0, 0, 0, 1]."""
    M = _as_array(M, (4, 4), "M")
    lead = M.shape[:-2]
    M = M.reshape(-1, 4, 4)
    R = M[:, :3, :3]
    checks = (("its rotation block is not orthonormal: |R^T R - I|",
               np.abs(np.swapaxes(R, 1, 2) @ R - np.eye(3))),
              ("its rotation block is not a rotation (a reflection?): |det R - 1|",
               np.abs(np.linalg.det(R) - 1.0) if len(M) else np.zeros(0)),
              ("its last row is not [0, 0, 0, 1]: the largest difference",
               np.abs(M[:, 3] - [0.0, 0.0, 0.0, 1.0])))
    for what, error in checks:
        worst = error.max(initial=0.0)
        if worst > _TOLERANCE:
            raise ValueError(f"M is not a rigid placement: {what} = {worst:.2g} "
                             f"(at most {_TOLERANCE:g})")
    return M, lead


def _stack(values, n):
    """Entries that are arrays over n placements, or constants, as an (n, len) array."""
    return np.stack([np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in values], axis=1)


def _coordinates(M):
    """The free flyer's q = [p; x, y, z, w] of each placement, as a list of 7 arrays (of floats:
    their entries are Python floats, as the float algebra takes them)."""
    if len(M) >= _ARRAYS_FROM:
        r = [[M[:, i, j] for j in range(3)] for i in range(3)]
        diagonal, candidates = _shepperd(r)
        k = np.argmax(np.stack(diagonal, 1), axis=1)
        quat = np.stack([np.stack(c, 1) for c in candidates], 1)[np.arange(len(M)), k]
        quat = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        return [M[:, 0, 3], M[:, 1, 3], M[:, 2, 3]] + list(quat.T)
    out = []
    for m in M.tolist():                    # one at a time: numpy's cost per call outweighs
        diagonal, candidates = _shepperd(m)
        quat = candidates[max(range(4), key=diagonal.__getitem__)]
        norm = math.sqrt(sum(x * x for x in quat))
        out.append(m[0][3:] + m[1][3:] + m[2][3:] + [x / norm for x in quat])
    return [list(c) for c in zip(*out)]


def _shepperd(r):
    """(the diagonal and the trace, the four candidates for [x, y, z, w] times 4 times one of
    its entries) of a rotation r[i][j] (numbers or arrays): the candidate of the largest of the
    first four divides by no small number when normalised (Shepperd 1978)."""
    t = r[0][0] + r[1][1] + r[2][2]
    e = lambda i, j: r[i][j]                                        # noqa: E731
    return [r[0][0], r[1][1], r[2][2], t], [
        [1 + 2 * r[0][0] - t, e(1, 0) + e(0, 1), e(2, 0) + e(0, 2), e(2, 1) - e(1, 2)],
        [e(1, 0) + e(0, 1), 1 + 2 * r[1][1] - t, e(2, 1) + e(1, 2), e(0, 2) - e(2, 0)],
        [e(2, 0) + e(0, 2), e(2, 1) + e(1, 2), 1 + 2 * r[2][2] - t, e(1, 0) - e(0, 1)],
        [e(2, 1) - e(1, 2), e(0, 2) - e(2, 0), e(1, 0) - e(0, 1), 1 + t]]


def _matrices(q):
    """[[R, p], [0, 1]] of free-flyer coordinates (n, 7)."""
    x, y, z, w = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    M = np.zeros((len(q), 4, 4))
    M[:, 0, :3] = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], 1)
    M[:, 1, :3] = np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], 1)
    M[:, 2, :3] = np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], 1)
    M[:, :3, 3] = q[:, :3]
    M[:, 3, 3] = 1.0
    return M
