"""The exponential and logarithm of SE(3) for placements and twists, with numpy: what a task-space
cost needs beside the generated frame functions (a placement error log6(oMd^-1 oMf) and its
Jacobian Jlog6 times the frame's local Jacobian).

    log6(M)   (..., 4, 4) -> (..., 6)      the twist xi = [w; v] with exp6(xi) = M
    exp6(xi)  (..., 6)    -> (..., 4, 4)   the placement reached by the twist xi in unit time
    Jlog6(M)  (..., 4, 4) -> (..., 6, 6)   d log6(M exp6(d)) / dd at d = 0 (SE(3)'s inverse right
                                           Jacobian at log6(M))

Twists are scleron's [w; v], angular first (the frame Jacobians' rows); Pinocchio's log6, exp6
and Jlog6 are the same maps with [v; w]. The formulas are the ones the free flyer's integrate,
difference and their Jacobians are generated from (scleron.joints.manifolds, evaluated here in
floats): one copy, with the same series near the identity and the same half-turn rule."""
import numpy as np

from .joints import manifolds
from .program.algebra import FloatAlgebra

_ALG = FloatAlgebra()
_IDENTITY = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]      # a free flyer's q at the identity
_ORTHONORMAL = 1e-6                                  # |R^T R - I| allowed (single-precision data)


def log6(M):
    """The twist [w; v] whose exponential is the placement M ([[R, p], [0, 1]])."""
    return _map_placements(M, lambda q: _angular_first(
        manifolds.difference("se3", _ALG, _IDENTITY, q)), (6,))


def exp6(xi):
    """The placement [[R, p], [0, 1]] a twist xi = [w; v] reaches in unit time."""
    xi = _as_array(xi, (6,), "xi")
    out = np.empty(xi.shape[:-1] + (4, 4))
    for k in np.ndindex(xi.shape[:-1]):
        w, v = list(xi[k][:3]), list(xi[k][3:])
        out[k] = _placement(manifolds.integrate("se3", _ALG, _IDENTITY, v + w))
    return out


def Jlog6(M):
    """d log6(M exp6(d)) / dd at d = 0, rows and columns [w; v]: J_r(log6(M))^-1 (Barfoot)."""
    def jacobian(q):
        xi = manifolds.difference("se3", _ALG, _IDENTITY, q)            # [v; w]
        J = np.array(manifolds.se3_right_jacobian_inverse(_ALG, xi))
        order = [3, 4, 5, 0, 1, 2]
        return J[np.ix_(order, order)]
    return _map_placements(M, jacobian, (6, 6))


# ---- helpers --------------------------------------------------------------------------------------
def _as_array(x, tail, name):
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if a.shape[a.ndim - len(tail):] != tail or a.ndim < len(tail):
        raise ValueError(f"{name} must have shape {tail} or (..., {', '.join(map(str, tail))}), "
                         f"got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} has entries that are not finite (nan or inf)")
    return a


def _map_placements(M, f, tail):
    """f(q) for each placement of M, q its free-flyer coordinates [p; quaternion x, y, z, w]."""
    M = _as_array(M, (4, 4), "M")
    R = M[..., :3, :3]
    error = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(initial=0.0)
    if error > _ORTHONORMAL:
        raise ValueError(f"M's rotation block is not orthonormal: |R^T R - I| = {error:.2g} "
                         f"(at most {_ORTHONORMAL:g})")
    out = np.empty(M.shape[:-2] + tail)
    for k in np.ndindex(M.shape[:-2]):
        out[k] = f(list(M[k][:3, 3]) + _quaternion(M[k][:3, :3]))
    return out


def _angular_first(xi):
    return xi[3:] + xi[:3]


def _quaternion(R):
    """[x, y, z, w] of a rotation matrix, from its largest diagonal combination (Shepperd 1978:
    no division by a small number), normalised."""
    t = np.trace(R)
    k = int(np.argmax([R[0, 0], R[1, 1], R[2, 2], t]))
    if k == 3:
        q = [R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], 1.0 + t]
    else:
        i, j, m = k, (k + 1) % 3, (k + 2) % 3
        q = [0.0] * 4
        q[i] = 1.0 + 2.0 * R[i, i] - t
        q[j] = R[j, i] + R[i, j]
        q[m] = R[m, i] + R[i, m]
        q[3] = R[m, j] - R[j, m]
    q = np.array(q)
    return list(q / np.linalg.norm(q))


def _placement(q):
    M = np.eye(4)
    x, y, z, w = q[3:]
    M[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    M[:3, 3] = q[:3]
    return M
