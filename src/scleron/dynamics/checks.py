"""Checks of a model that need its dynamics: is the mass matrix regular?

Model.validate (model/) already rejects the plain case, a joint whose whole subtree has no mass
and no inertia. What it cannot see without kinematics is a coordinate that moves only mass it
cannot accelerate: a revolute joint turning a point mass that sits on its axis, a prismatic
joint whose subtree is massless but has rotational inertia, a joint that moves its subtree
exactly as the joint before it does. Each of these makes M(q) singular at every q, so forward
dynamics would divide by zero. check_nonsingular finds them numerically: the LDL^T of M at a
few configurations (the numeric reference recursion, FloatAlgebra): singular at every one of
them, the model is refused, naming the coordinate whose pivot vanishes most often.
"""
import math
import random
import warnings

import numpy as np

from ..errors import ModelError
from ..algebra import FloatAlgebra
from ..joints.registry import coordinate_unit
from .body_frames import INERTIA_FLOOR, SNAP_INERTIA, SNAP_MOMENT
from .configuration import normalized
from .recursions import (bias_forces, composite_inertias, expand, joint_kinematics, mass_matrix,
                         mass_matrix_factors)

# a pivot below this fraction of its coordinate's own diagonal entry M_kk counts as zero: the
# coordinate moves only what the coordinates before it already move (two hinges on one axis;
# rounding leaves ~1e-16 of M_kk)
PIVOT_RTOL = 1e-12
# an M_kk below PIVOT_RTOL of the numbers it is computed from, |S_k|^2 times the largest entry
# of the composite inertia its joint moves, counts as zero: the coordinate moves nothing with
# mass (a point mass on its axis, 1000 m out: M_kk 4e-17, pure rounding of terms of 1e6)
# and a diagonal entry below DIAGONAL_RTOL of the largest does too. Not the largest diagonal
# entry alone: a light joint under a heavy one is regular, and the recursions are exact for it
# (a 50 g camera panning on a 100 t crane's boom: M_kk 1.6e-13 of the largest, forward
# dynamics to 1e-13, as Pinocchio's; it was refused as singular at 1e-12 of it)
DIAGONAL_RTOL = 1e-15
# the tree keeps entries of the spatial inertias below this as exact zeros
# (dynamics.body_frames.snapped_inertia)
ROUNDED_TO_ZERO = INERTIA_FLOOR
SAMPLES = 2                     # random configurations besides q = 0
SEED = 20240531
# a joint's S whose smallest singular value is below this fraction of its largest has dependent
# columns there: a singularity of its coordinates (gimbal lock), not of the masses
S_RANK_RTOL = 1e-9


class SingularConfigurationWarning(UserWarning):
    """The mass matrix is singular at the initial configuration because of how the masses sit
    there (point masses on joint axes), not because of the joints' coordinates."""


def ldl_pivots(M, floors=None):
    """(pivots d_k of M = L D L^T without pivoting, scale = the largest |M_kk|) for a symmetric
    positive semi-definite M (nested lists or an array). A vanishing pivot (_vanishes, with
    floors[k] the least M_kk that is more than rounding: default PIVOT_RTOL * scale) eliminates
    nothing: for a semi-definite M its column of the remaining block is zero up to rounding, so
    every coordinate gets a pivot of its own. Each of M's diagonal blocks (coupled_blocks: a
    scene's free bodies) is eliminated on its own, which gives the same pivots in O(block^3)."""
    A = np.array(M, dtype=float)
    n = A.shape[0]
    scale = float(np.abs(np.diag(A)).max()) if n else 0.0
    if not 0.0 < scale < math.inf:              # zero, or not finite: nothing to eliminate
        return np.diag(A).tolist(), scale
    floors = np.full(n, PIVOT_RTOL * scale) if floors is None else np.asarray(floors, dtype=float)
    # eliminate in units of the scale: the entries of a semi-definite A / scale are at most 1,
    # |A_jk|^2 <= A_jj A_kk, and a pivot used is at least PIVOT_RTOL A_kk, so no product
    # overflows however large M is
    A /= scale
    diagonal, floors = np.diag(A).copy(), floors / scale
    d = np.zeros(n)
    with np.errstate(all="ignore"):             # an indefinite M (extreme inertias) may
        for block in coupled_blocks(A):         # overflow: its pivots come out inf or nan,
            B = A[np.ix_(block, block)]         # and nan counts as vanishing below
            for j, k in enumerate(block):
                d[k] = B[j, j]
                if not _vanishes(d[k], diagonal[k], floors[k]):
                    B[j + 1:, j + 1:] -= np.outer(B[j + 1:, j], B[j, j + 1:]) / d[k]
        return (d * scale).tolist(), scale


def coupled_blocks(A):
    """The diagonal blocks of a symmetric matrix: index arrays (increasing) of the connected
    components of its nonzero pattern (a NaN couples). The mass matrix of a scene of free bodies
    (1000 of them: nv 6000, a dense elimination of minutes) has one per body; eliminating or
    solving block by block gives what the whole matrix gives."""
    coupled = np.asarray(A) != 0
    n = coupled.shape[0]
    seen = np.zeros(n, dtype=bool)
    blocks = []
    for i in range(n):
        if seen[i]:
            continue
        seen[i] = True
        members, frontier = [i], np.array([i])
        while frontier.size:
            frontier = np.flatnonzero(coupled[frontier].any(axis=0) & ~seen)
            seen[frontier] = True
            members += frontier.tolist()
        blocks.append(np.array(sorted(members)))
    return blocks


def _vanishes(pivot, diagonal, floor):
    """Whether a pivot of M = L D L^T counts as zero: below PIVOT_RTOL of its diagonal entry M_kk,
    or M_kk not above its floor (not a number: vanishing too)."""
    return not (pivot > PIVOT_RTOL * diagonal and diagonal > floor)


def rounding_floors(tree, alg, q, scale):
    """The least M_kk of each coordinate that is more than rounding: PIVOT_RTOL of what the
    terms of M_kk = S_k^T Ic S_k can reach, for S_k = [w; v] and the blocks of the composite
    inertia Ic its joint moves, each block at least what the moved masses make at their levers
    (lever_moments: the rounding of a mass 1000 m out, slid onto its axis by the body frames,
    stays in M_kk):
        |w|^2 max(max|I|, sum m l^2) + 2 |w| |v| max(max|[c]|, sum m l) + |v|^2 m,
    in kg m^2 for a hinge and kg for a slider whatever the model's scale (the largest entry of
    Ic times |S_k|^2 mixed kg with kg m^2 and refused every model of micrometre bodies, an
    outside tester); and DIAGONAL_RTOL of the largest M_kk. A tree with mimic joints (M of its
    independent coordinates): DIAGONAL_RTOL of the largest M_kk alone."""
    if tree.coupling is not None:
        return [DIAGONAL_RTOL * scale] * tree.nv
    kins = joint_kinematics(tree, alg, q, None)
    Ic = composite_inertias(tree, alg, kins)
    first, second = lever_moments(tree)
    floors = []
    for b, kin in zip(tree.bodies, kins):
        A = np.abs(np.array(Ic[b.index], dtype=float))
        mass = A[3:, 3:].max()
        rotational = max(A[:3, :3].max(), second[b.index])
        coupling = max(A[:3, 3:].max(), first[b.index])
        for col in np.array(kin[2], dtype=float).T:
            w, v = math.hypot(*col[:3]), math.hypot(*col[3:])
            reach = w * w * rotational + 2.0 * w * v * coupling + v * v * mass
            if not math.isfinite(reach):              # (levers beyond floats: the blocks alone)
                reach = w * w * A[:3, :3].max() + 2.0 * w * v * A[:3, 3:].max() + v * v * mass
            floors.append(max(PIVOT_RTOL * float(reach), DIAGONAL_RTOL * scale))
    return floors


def lever_moments(tree):
    """Per body, (sum m l, sum m l^2) over the bodies its joint moves: each one's mass m at its
    lever l from the joint, the path of placements between them plus its frame's slide along
    its axis (body_frames) and its centre of mass (m). A light body far out weighs by its own
    mass, not the subtree's (a reviewer: a 10 kg hub and a 1 g tip 100 km out were refused);
    a body's own placement is not a lever (a hinge 1e155 m from the world turns its mass about
    itself)."""
    first, second = [0.0] * len(tree.bodies), [0.0] * len(tree.bodies)
    slides = getattr(tree, "body_slides", None)
    for d in tree.bodies:
        m = d.inertia[3][3]
        if not m > 0.0:
            continue
        lever = (math.hypot(d.inertia[2][4], d.inertia[0][5], d.inertia[1][3]) / m
                 + (math.hypot(*slides[d.index]) if slides is not None else 0.0))
        b = d
        while True:
            first[b.index] += m * lever
            second[b.index] += m * lever * lever
            if b.parent < 0:
                break
            lever += math.hypot(*b.placement[1]) if b.placement is not None else 0.0
            b = tree.bodies[b.parent]
    return first, second


def vanishing_pivots(tree, alg, q, M=None):
    """(the coordinates k whose pivot of M(q) = L D L^T counts as zero, the pivots, the
    diagonal, the scale); every coordinate where M is zero or not finite. M: M(q) where the
    caller has it (n^2 work in Python: 4 s a matrix at 1000 bodies)."""
    M = mass_matrix(tree, alg, q) if M is None else M
    diagonal = [float(x) for x in np.diag(np.array(M, dtype=float))]
    scale = max((abs(x) for x in diagonal), default=0.0)
    if not 0.0 < scale < math.inf:
        return list(range(len(diagonal))), diagonal, diagonal, scale
    floors = rounding_floors(tree, alg, q, scale)
    d, scale = ldl_pivots(M, floors)
    return ([k for k, dk in enumerate(d) if _vanishes(dk, diagonal[k], floors[k])], d, diagonal,
            scale)


def _samples(tree, samples, seed):
    rng = random.Random(seed)
    out = [list(tree.neutral)]
    # coordinates in (0.1, 0.9): inside every spline's parameter range, away from the Euler
    # charts' singular angles (0, pi/2, pi) and from the surfaces' poles; unit quaternions
    for _ in range(samples):
        out.append(normalized(tree, [rng.uniform(0.1, 0.9) for _ in range(tree.nq)]))
    return out


# The forward dynamics by the mass matrix's factors (recursions.forward_dynamics_by_mass_matrix)
# forms each pivot D_k of M = L^T D L as M_kk less the shares of the coordinates below k: where
# D_k is a small fraction of M_kk they cancel, and about eps M_kk / D_k of q'' is rounding (a
# 50 g gimbal carrying a 100 t body 10 um off its axis: D / M_kk 1e-12, q'' 2e-4 off; a
# gimbal whose axes line up at q = -0.5 rad: 3e-7; outside testers and reviewers). The
# articulated-body passes form D_k without that subtraction; they are kept wherever a pivot
# falls below this fraction of its M_kk at one of FACTORS_SAMPLES configurations (the arms of
# example-robot-data, over 3,000 of them: 0.016 (xarm7) and more), which bounds the factors'
# rounding there to about 1e2 eps. Every angle (a coordinate in rad: hinges, universal,
# planar, Euler and rotation-vector joints; every coordinate of a custom or OpenSim joint,
# which says no unit) is drawn from the whole turn, where a gimbal may line up, in strata (each
# of FACTORS_SAMPLES equal parts of the turn once per angle: a band of a few degrees around a
# line-up is not missed by chance); other coordinates, as check_nonsingular's, from (0.1, 0.9).
FACTORS_PIVOT_RTOL = 1e-2
FACTORS_SAMPLES = 64


def factors_are_accurate(tree, configurations=None):
    """Whether every pivot D_k of M's leaves-first LTDL factors is at least FACTORS_PIVOT_RTOL of
    its M_kk at q = 0 and FACTORS_SAMPLES configurations (_turning_samples; an uncoupled tree).
    Not where M cannot be factored at one of them (a pivot 0, a joint undefined there, as
    log(a) at a = 0: the model's own checks say whether that is an error)."""
    alg = FloatAlgebra()
    for q in configurations or _turning_samples(tree, FACTORS_SAMPLES, SEED):
        try:
            M = mass_matrix(tree, alg, q)
            _, inv_d, _ = mass_matrix_factors(tree, alg, M)
            ratios = [1.0 / (float(x) * float(M[k][k])) for k, x in enumerate(inv_d)]
        except (ArithmeticError, ValueError):        # 1 / 0, math domain, overflow
            return False
        if not all(r >= FACTORS_PIVOT_RTOL for r in ratios):       # (nan: not accurate)
            return False
    return True


def _turning_samples(tree, samples, seed):
    """q = 0 and `samples` configurations: every angle (a coordinate whose joint says rad, and
    every coordinate of a custom or OpenSim joint) in (-pi, pi), stratified (a Latin hypercube:
    each angle visits each 1/samples of the turn once), every other coordinate in (0.1, 0.9);
    unit quaternions. A coordinate turned where its joint is not defined makes
    factors_are_accurate False: the passes, which is safe."""
    rng = random.Random(seed)
    angle = [False] * tree.nq
    for b in tree.bodies:
        if b.nq == b.dof:                           # (a quaternion joint's q are not angles)
            general = b.joint.type in ("custom", "opensim")
            for c, meaning in enumerate(b.joint.coordinates):
                angle[b.q_start + c] = general or coordinate_unit(meaning) == "rad"
    strata = []
    for is_angle in angle:
        order = list(range(samples))
        rng.shuffle(order)
        strata.append(order if is_angle else None)
    out = [list(tree.neutral)]
    for s in range(samples):
        out.append(normalized(tree, [
            -math.pi + 2 * math.pi * (order[s] + rng.random()) / samples if order is not None
            else rng.uniform(0.1, 0.9) for order in strata]))
    return out


def _owner(tree, k):
    for b in tree.bodies:
        if b.v_start <= k < b.v_start + b.dof:
            return b, k - b.v_start
    raise IndexError(k)                         # pragma: no cover


def _coordinate(tree, k):
    """(body, label, meaning) of velocity coordinate k: its joint's name, indexed where the
    joint has several."""
    b, c = _owner(tree, k)
    label = b.joint_name if b.dof == 1 else f"{b.joint_name}[{c}]"
    return b, label, b.joint.coordinates[c] if c < len(b.joint.coordinates) else ""


def check_nonsingular(tree, *, source=None, samples=SAMPLES, seed=SEED, configurations=None,
                      matrices=None):
    """Raise ModelError when the mass matrix is singular at q = 0 and at `samples` random
    configurations (fixed seed): some pivot of its LDL^T vanishes, relative to the matrix's
    scale, at every one of them. The error names the joint (and its coordinate) whose pivot
    vanishes most often. `tree` is a dynamics.tree.Tree; `source` (the model file) goes into
    the error. Returns None when M is regular at one of the configurations.

    Not "the same coordinate at every configuration": which pivot of a rank-deficient M
    vanishes depends on q (a revolute joint about x carrying a free flyer: the flyer's angle
    about x at q = 0, its angle about z at a random q, as the flyer's axes turn). matrices: M
    at each of the configurations, where the caller has them."""
    if tree.nv == 0:
        return
    alg = FloatAlgebra()
    configurations = configurations or _samples(tree, samples, seed)
    count = [0] * tree.nv                       # at how many configurations each pivot vanishes
    # each one's largest vanishing pivot, with M_kk and the largest diagonal entry of that same
    # configuration (the message)
    largest = [None] * tree.nv
    for q, M in zip(configurations, matrices or [None] * len(configurations)):
        here, d, diagonal, scale = vanishing_pivots(tree, alg, q, M)
        if not here:
            return                              # regular here: not a singular model
        for k in here:
            count[k] += 1
            here_k = (d[k], diagonal[k], scale)
            largest[k] = here_k if largest[k] is None else max(largest[k], here_k)
    k = max(range(tree.nv), key=lambda i: (count[i], -i))
    b, coordinate, meaning = _coordinate(tree, k)
    pivot, diagonal, scale = largest[k]
    if pivot < -PIVOT_RTOL * max(abs(diagonal), scale):   # not rounding: indefinite, not singular
        raise ModelError(
            f"the mass matrix is not positive definite: coordinate {coordinate} ({meaning}) of "
            f"this {b.joint.type} joint has a negative pivot in M = L D L^T at {count[k]} of the "
            f"{len(configurations)} configurations tried (at most {pivot:.3g}, its diagonal entry "
            f"M_kk {diagonal:.3g}): the kinetic energy is negative along it. An inertia that is "
            "not positive semi-definite (which --inertia relaxed lets through, "
            "docs/inertia-checks.md) does this: fix the inertia of body "
            f"'{b.name}' or a body beyond it", source=source, element=f"joint '{b.joint_name}'",
            joint=b.joint_name)
    raise ModelError(
        f"the mass matrix is singular: coordinate {coordinate} ({meaning}) of this {b.joint.type} "
        f"joint moves nothing with mass or inertia that the joints before it do not already move "
        f"(body '{b.name}' and the bodies beyond it): M = L D L^T has a vanishing pivot at each "
        f"of the {len(configurations)} configurations tried, this coordinate's at {count[k]} of "
        f"them (its pivot at most {largest[k][0]:.3g}, where its diagonal entry M_kk is "
        f"{largest[k][1]:.3g} and the largest one {largest[k][2]:.3g}). "
        "Give the body mass off the joint's axis or rotational inertia about it (masses and "
        f"inertias below {ROUNDED_TO_ZERO:g}, entries below {SNAP_INERTIA:g} of their block "
        f"of the body's inertia ({SNAP_MOMENT:g} for a positive moment), pivots below "
        f"{PIVOT_RTOL:g} of their M_kk, and M_kk below "
        f"{PIVOT_RTOL:g} of the inertia it moves or {DIAGONAL_RTOL:g} of the largest count as "
        "0), or fix the joint"
        # (where the coordinate moves some inertia, only what the joints before it move too)
        + (_massless_parent(tree, b) if largest[k][1] > DIAGONAL_RTOL * largest[k][2] else ""),
        source=source, element=f"joint '{b.joint_name}'", joint=b.joint_name)


def _massless_parent(tree, b):
    """The likelier cause where the body b's joint hangs from has neither mass nor inertia (a
    URDF's massless base link, floated): its own joint moves the same bodies as b's."""
    if b.parent < 0:
        return ""
    p = tree.bodies[b.parent]
    if np.max(np.abs(np.array(p.inertia, dtype=float))) > ROUNDED_TO_ZERO:
        return ""
    return (f". More likely here: body '{p.name}', which this joint hangs from, has neither mass "
            f"nor inertia, so its own joint '{p.joint_name}' ({p.joint.type}) moves the same "
            f"bodies as this one; give '{p.name}' mass and inertia (a massless base link floats "
            "nothing of its own), or fix one of the two joints")


def _coordinates_singular(b, q):
    """Whether body b's joint has dependent columns of S at q (its coordinates are singular)."""
    S = np.array(b.joint.kinematics(FloatAlgebra(), q[b.q_start:b.q_start + b.nq],
                                    [0.0] * b.dof)[2], dtype=float)
    sv = np.linalg.svd(S, compute_uv=False)
    return not sv[-1] > S_RANK_RTOL * sv[0]


def check_regular_at_start(tree, q0, *, source=None, M=None):
    """Raise ModelError when the mass matrix is singular at the initial configuration q0 though
    regular elsewhere (check_nonsingular passed) because of a singularity of some joint's
    coordinates, such as the gimbal lock of the proper Euler charts (XYX ... ZYZ) at q = 0 (its
    S loses rank there). Forward dynamics there is NaN or huge, and a simulation from there
    fails at its first step. A singularity of the masses alone (icub's point-mass head, whose
    neck axes line up at q = 0) is a SingularConfigurationWarning: a configuration of the
    robot, like a kinematic singularity, which the model's data puts there."""
    vanishing = vanishing_pivots(tree, FloatAlgebra(), q0, M)[0]
    if not vanishing:
        return
    b, coordinate, meaning = _coordinate(tree, vanishing[0])
    if not any(_coordinates_singular(_owner(tree, k)[0], q0) for k in vanishing):
        warnings.warn(
            f"{source or tree.name}: the mass matrix is singular at the initial configuration "
            f"{_where(q0)} (coordinate {coordinate} of joint '{b.joint_name}' moves nothing the "
            "coordinates before it do not already move there: point masses, or masses on the "
            "joint axes, in that pose; regular elsewhere): forward dynamics is NaN or huge at "
            "exactly this configuration", SingularConfigurationWarning, stacklevel=3)
        return
    raise ModelError(
        f"the mass matrix is singular at the initial configuration {_where(q0)}: coordinate "
        f"{coordinate} ({meaning}) of this {b.joint.type} joint moves nothing the coordinates "
        "before it do not already move there (a singularity of the joint's coordinates, e.g. a "
        "proper Euler chart's gimbal lock at q = 0; the matrix is regular elsewhere), so forward "
        "dynamics is NaN or huge there. Give the model an initial configuration away from it (YAML "
        "initial: q; an .osim file's Coordinate <default_value>; Python model.q0) or coordinates "
        "regular there (a Tait-Bryan chart at q = 0)",
        source=source, element=f"joint '{b.joint_name}'", joint=b.joint_name)


# ---- configurations where a joint or the dynamics are not finite --------------------------------
def _where(q):
    return "q = 0" if not any(q) else "q = [" + ", ".join(f"{x:.3g}" for x in q) + "]"


def check_joints_finite(tree, q, *, source=None):
    """Raise ModelError naming the first joint whose transform, S or Sdot is not finite (or
    cannot be evaluated: 1/a, log(a), sqrt(a) at a = 0) at the configuration q."""
    alg = FloatAlgebra()
    for b in tree.bodies:
        qs = q[b.q_start:b.q_start + b.nq]
        try:
            R, t, S, sdot = b.joint.kinematics(alg, qs, [1.0] * b.dof)
            values = ([x for row in R for x in row] + list(t) + [x for row in S for x in row]
                      + list(sdot))
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


def _largest_numbers(tree, q=None):
    """(body, text) for an overflow's message: the body with the largest inertia or placement
    (the one to blame), and the model's largest numbers of each kind."""
    def inertia(b):
        return max(abs(x) for row in b.inertia for x in row)

    def offset(b):
        return max((abs(x) for x in b.placement[1]), default=0.0) if b.placement else 0.0
    heavy, far = max(tree.bodies, key=inertia), max(tree.bodies, key=offset)
    text = (f"body '{heavy.name}' inertia up to {inertia(heavy):.3g}, body '{far.name}' placed "
            f"{offset(far):.3g} m from its parent, gravity {max(abs(g) for g in tree.gravity):.3g}")
    return (heavy if inertia(heavy) >= offset(far) else far), text + joint_numbers(tree, q)


def joint_numbers(tree, q=None):
    """The largest spring, damper, rest, armature and wrench numbers of the joints and bodies,
    and of the joints' motion subspaces at q (default: the neutral q), for an overflow's
    message ("" where the model has none)."""
    out = []
    for key in ("stiffness", "damping", "rest", "armature", "wrench"):
        values = [(abs(x), b) for b in tree.bodies for x in (getattr(b, key) or ()) if x != 0.0]
        if values:
            size, b = max(values, key=lambda v: v[0])
            out.append(f", {key} up to {size:.3g} ({'body' if key == 'wrench' else 'joint'} "
                       f"'{b.name if key == 'wrench' else b.joint_name}')")
    sizes = [(max(_parameter_numbers(getattr(b.joint, "params", None)), default=0.0), b)
             for b in tree.bodies]
    size, b = max(sizes, key=lambda v: v[0], default=(0.0, None))
    if size > 1e3:                  # (a sphere's radius, a spline's knots, a polynomial's terms)
        out.append(f", joint parameters up to {size:.3g} (joint '{b.joint_name}')")
    at = list(tree.neutral if q is None else q)
    size, b = max(((_motion_size(b, at[b.q_start:b.q_start + b.nq]), b) for b in tree.bodies),
                  key=lambda v: v[0], default=(0.0, None))
    if size > 1e3:                  # (a custom joint's expressions: "1e300*a")
        out.append(f", joint motion S up to {size:.3g} (joint '{b.joint_name}')")
    if tree.coupling is not None:   # mimic joints: q_m = a q_leader + b
        size, i = max((max(abs(a), abs(c)), i) for i, (_, a, c) in enumerate(tree.coupling.q_map))
        if size > 1e3:
            joint = next(f.joint_name for f in tree.full.bodies
                         if f.q_start <= i < f.q_start + f.nq)
            out.append(f", mimic multiplier or offset up to {size:.3g} (joint '{joint}')")
    return "".join(out)


def _motion_size(body, q):
    """The largest |entry| of a body's joint motion subspace S at q (0 where it cannot be
    evaluated)."""
    try:
        with np.errstate(all="ignore"):
            S = np.abs(np.asarray(body.joint.numeric("S", list(q)), dtype=float))
    except (AttributeError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return 0.0
    finite = S[np.isfinite(S)]
    return float(finite.max()) if finite.size else math.inf


def _parameter_numbers(value):
    """The magnitudes of the numbers in a joint's parameters (nested mappings and lists)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [abs(float(value))]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _parameter_numbers(v)]
    return []


def overflow_error(tree, source=None):
    """The ModelError of a constant that overflowed while the program was folded (the printer
    meets inf): the model's largest numbers, which to rescale."""
    body, text = _largest_numbers(tree)
    return ModelError(f"a constant of the generated code overflows double precision or is not "
                      f"a number (largest numbers: {text}); rescale the model's units",
                      source=source)


def check_finite(tree, q, *, source=None):
    """Raise ModelError when the model's numbers overflow: the mass matrix or the gravity and
    velocity forces are not finite at q (masses, inertias, lengths or gravity near 1e300).
    Returns (M, h) at q, h with qd = 1."""
    alg = FloatAlgebra()
    M = mass_matrix(tree, alg, q)
    h = bias_forces(tree, alg, q, [1.0] * tree.nv)
    with np.errstate(all="ignore"):
        if np.isfinite(np.array(M, dtype=float)).all() and np.isfinite(h).all():
            return M, h
    body, text = _largest_numbers(tree, q)
    raise ModelError(
        f"the dynamics overflow double precision at {_where(q)}: the mass matrix or the forces "
        f"are not finite (largest numbers: {text}); rescale the model's units",
        source=source, element=f"body '{body.name}'", body=body.name)


def check_accelerations_finite(tree, q, M, h, *, source=None):
    """Raise ModelError when the forward dynamics overflow at q (M regular there; M and h with
    qd = 1 from check_finite) with tau = 0: finite forces too large for their bodies' inertias
    (a constant wrench of 1e308 N gave qdd = inf from every generated forward dynamics)."""
    if tree.nv == 0:
        return
    M, h = np.array(M, dtype=float), np.array(h, dtype=float)
    qdd = np.zeros(tree.nv)
    with np.errstate(all="ignore"):
        for block in coupled_blocks(M):         # (a scene of free bodies: one body at a time)
            try:
                qdd[block] = np.linalg.solve(M[np.ix_(block, block)], -h[block])
            except np.linalg.LinAlgError:       # (check_regular_at_start has said it is regular)
                return
    if np.all(np.isfinite(qdd)):
        return
    body, text = _largest_numbers(tree, q)
    raise ModelError(
        f"the forward dynamics overflow double precision at {_where(q)} (qd = 1, tau = 0): forces "
        f"too large for the inertias they move (largest numbers: {text}); rescale the model's "
        "units or its forces", source=source, element=f"body '{body.name}'", body=body.name)


def check_total_mass(tree, *, source=None):
    """Raise ModelError when every body's mass rounds to zero (masses of 1e-300 kg: below
    ROUNDED_TO_ZERO the tree counts them as 0): the model has no mass, its centre of mass
    divides by zero. Validation cannot see it: such a mass is positive."""
    if sum(b.inertia[3][3] for b in tree.bodies) > 0.0:
        return
    body = max(tree.bodies, key=lambda b: max(abs(x) for row in b.inertia for x in row))
    raise ModelError(
        f"every moving body's mass is 0 or below {ROUNDED_TO_ZERO:g} kg, which the generated code "
        "counts as 0 (bodies welded to the world do not count): the model has no mass (its "
        "centre of mass is undefined); give a moving body its mass, or, if the masses are that "
        "small, rescale the model's units (grams, millimetres)",
        source=source, element=f"body '{body.name}'", body=body.name)


def check_model_dynamics(tree, *, source=None, q0=None, samples=SAMPLES, seed=SEED):
    """Every check generation makes before it unrolls, at the initial configuration q0 (q = 0
    when the model has none) and `samples` random ones: every joint finite, some mass, the
    dynamics finite, the mass matrix regular, and regular at q0 in particular."""
    configurations = _samples(tree, samples, seed)
    if q0 is not None:                      # the initial configuration replaces q = 0
        configurations[0] = [float(x) for x in q0]
    for q in configurations:                # every joint, the mimic ones too (docs/mimic.md)
        full = expand(tree, FloatAlgebra(), "q", q) if tree.coupling is not None else q
        check_joints_finite(tree.full, full, source=source)
    check_total_mass(tree.full, source=source)
    # at every configuration, not only the first: a rotated body may overflow where the
    # initial pose does not, and check_nonsingular needs a finite mass matrix at each
    finite = [check_finite(tree, q, source=source) for q in configurations]     # (M, h) at each
    check_nonsingular(tree, source=source, configurations=configurations,
                      matrices=[M for M, _ in finite])
    check_regular_at_start(tree, configurations[0], source=source, M=finite[0][0])
    check_accelerations_finite(tree, configurations[0], *finite[0], source=source)
