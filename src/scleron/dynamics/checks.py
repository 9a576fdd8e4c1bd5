"""Checks of a model that need its dynamics: is the mass matrix regular?

Model.validate (model/) already rejects the plain case, a joint whose whole subtree has no mass
and no inertia. What it cannot see without kinematics is a coordinate that moves only mass it
cannot accelerate: a revolute joint turning a point mass that sits on its axis, a prismatic
joint whose subtree is massless but has rotational inertia, a joint that moves its subtree
exactly as the joint before it does. Each of these makes M(q) singular at every q, so forward
dynamics would divide by zero. check_nonsingular finds them numerically: the LDL^T of M at a
few configurations (the numeric reference recursion, FloatAlgebra), and a coordinate whose
pivot vanishes at every one of them is named.
"""
import math
import random

import numpy as np

from ..errors import ModelError
from ..program.algebra import FloatAlgebra
from .recursions import bias_forces, mass_matrix

# a pivot below this fraction of the mass matrix's largest diagonal entry counts as zero
# (rounding leaves ~1e-16 of it; real robots' smallest pivots are above ~1e-10 of it)
PIVOT_RTOL = 1e-12
SAMPLES = 2                     # random configurations besides q = 0
SEED = 20240531


def ldl_pivots(M):
    """(pivots d_k of M = L D L^T without pivoting, scale = the largest |M_kk|) for a symmetric
    positive semi-definite M (nested lists or an array). A vanishing pivot (<= PIVOT_RTOL * scale)
    eliminates nothing: for a semi-definite M its column of the remaining block is zero up to
    rounding, so every coordinate gets a pivot of its own."""
    A = np.array(M, dtype=float)
    n = A.shape[0]
    scale = float(np.abs(np.diag(A)).max()) if n else 0.0
    d = np.zeros(n)
    for k in range(n):
        d[k] = A[k, k]
        if d[k] > PIVOT_RTOL * scale:
            A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:]) / d[k]
    return d.tolist(), scale


def _samples(tree, samples, seed):
    rng = random.Random(seed)
    out = [[0.0] * tree.nq]
    # coordinates in (0.1, 0.9): inside every spline's parameter range, away from the Euler
    # charts' singular angles (0, pi/2, pi) and from the surfaces' poles
    for _ in range(samples):
        out.append([rng.uniform(0.1, 0.9) for _ in range(tree.nq)])
    return out


def _owner(tree, k):
    for b in tree.bodies:
        if b.q_start <= k < b.q_start + b.dof:
            return b, k - b.q_start
    raise IndexError(k)                         # pragma: no cover


def check_nonsingular(tree, *, source=None, samples=SAMPLES, seed=SEED, configurations=None):
    """Raise ModelError naming the joint (and its coordinate) whose pivot in the LDL^T of the mass
    matrix vanishes, relative to the matrix's scale, at q = 0 and at `samples` random
    configurations (fixed seed). `tree` is a dynamics.tree.Tree; `source` (the model file) goes
    into the error. Returns None when M is regular at one of the configurations at least in
    every coordinate."""
    if tree.nv == 0:
        return
    alg = FloatAlgebra()
    vanishing = None                            # coordinates singular at every sample so far
    for q in configurations or _samples(tree, samples, seed):
        d, scale = ldl_pivots(mass_matrix(tree, alg, q))
        if scale <= 0.0 or not math.isfinite(scale):
            here = set(range(tree.nv))
        else:
            here = {k for k, dk in enumerate(d) if not dk > PIVOT_RTOL * scale}
        vanishing = here if vanishing is None else vanishing & here
        if not vanishing:
            return
    k = min(vanishing)
    b, c = _owner(tree, k)
    coordinate = b.joint_name if b.dof == 1 else f"{b.joint_name}[{c}]"
    meaning = b.joint.coordinates[c] if c < len(b.joint.coordinates) else ""
    raise ModelError(
        f"the mass matrix is singular: coordinate {coordinate} ({meaning}) of this {b.joint.type} "
        f"joint moves nothing with mass or inertia that the joints before it do not already move "
        f"(body '{b.name}' and the bodies beyond it; its pivot in M = L D L^T is below "
        f"{PIVOT_RTOL:g} of the matrix's scale at q = 0 and at {samples} random configurations). "
        "Give the body mass off the joint's axis or rotational inertia about it, or fix the joint",
        source=source, element=f"joint '{b.joint_name}'")


# ---- configurations where a joint or the dynamics are not finite --------------------------------
def _where(q):
    return "q = 0" if not any(q) else "q = [" + ", ".join(f"{x:.3g}" for x in q) + "]"


def check_joints_finite(tree, q, *, source=None):
    """Raise ModelError naming the first joint whose transform, S or Sdot is not finite (or
    cannot be evaluated: 1/a, log(a), sqrt(a) at a = 0) at the configuration q."""
    alg = FloatAlgebra()
    for b in tree.bodies:
        qs = q[b.q_start:b.q_start + b.dof]
        try:
            R, t, S, sdot = b.joint.kinematics(alg, qs, [1.0] * b.dof)
            values = [x for row in R for x in row] + list(t) + [x for row in S for x in row] + list(sdot)
            bad = not all(math.isfinite(float(x)) for x in values)
            why = "is not finite"
        except (ZeroDivisionError, ValueError, OverflowError) as e:
            bad, why = True, f"cannot be evaluated ({e})"
        if bad:
            raise ModelError(
                f"the {b.joint.type} joint is singular at {_where(qs)} (its coordinates): its "
                f"transform, S or Sdot {why} there; generated code would return NaN. Choose "
                "coordinates whose transform is smooth where the model is used, or an initial "
                "configuration away from the singularity",
                source=source, element=f"joint '{b.joint_name}'", joint=b.joint_name)


def check_finite(tree, q, *, source=None):
    """Raise ModelError when the model's numbers overflow: the mass matrix or the gravity and
    velocity forces are not finite at q (masses, inertias, lengths or gravity near 1e300)."""
    alg = FloatAlgebra()
    M = mass_matrix(tree, alg, q)
    h = bias_forces(tree, alg, q, [1.0] * tree.nv)
    if all(math.isfinite(x) for row in M for x in row) and all(math.isfinite(x) for x in h):
        return
    big = max(tree.bodies, key=lambda b: max(abs(x) for row in b.inertia for x in row))
    raise ModelError(
        f"the dynamics overflow double precision at {_where(q)}: the mass matrix or the forces "
        f"are not finite (largest numbers: body '{big.name}' inertia up to "
        f"{max(abs(x) for row in big.inertia for x in row):.3g}, gravity "
        f"{max(abs(g) for g in tree.gravity):.3g}); rescale the model's units",
        source=source, body=big.name)


def check_model_dynamics(tree, *, source=None, q0=None, samples=SAMPLES, seed=SEED):
    """Every check generation makes before it unrolls, at the initial configuration q0 (q = 0
    when the model has none) and `samples` random ones: every joint finite, the dynamics
    finite, the mass matrix regular."""
    configurations = _samples(tree, samples, seed)
    if q0 is not None:                      # the initial configuration replaces q = 0
        configurations[0] = [float(x) for x in q0]
    for q in configurations:
        check_joints_finite(tree, q, source=source)
    check_finite(tree, configurations[0], source=source)
    check_nonsingular(tree, source=source, configurations=configurations)

