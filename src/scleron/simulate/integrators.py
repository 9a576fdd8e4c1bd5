"""One step of each integrator for q̇ = v, v̇ = a(t, q, v), the acceleration a from the
generated forward dynamics. Pure functions: the driver (simulator.py) handles charts and records.

`advance(q, dq)` moves a configuration by a velocity times a time: q + dq for coordinates in a
vector space, the generated integrate (q exp(dq) on quaternions, Pinocchio's) where the model
has quaternion joints. There the steps are Runge-Kutta-Munthe-Kaas (Munthe-Kaas 1998; Hairer,
Lubich & Wanner, Geometric Numerical Integration IV.8): q = q0 exp(Omega) with Omega' =
dexp^-1(v) = v + [Omega, v]/2 + [Omega, [Omega, v]]/12 - ad_Omega^4 v / 720 (the body velocity v
is left-trivialised), so rk4 keeps its order 4 on the rotations (tests/test_simulate.py measures
it); `bracket` is the Lie bracket of the velocities (zero on vector coordinates).

rk4: classic Runge-Kutta, 4th order (Hairer, Nørsett & Wanner I, Table 1.2).
semi-implicit: symplectic Euler, v+ = v + h a(t, q, v), q+ = q + h v+ (1st order, Hairer,
    Lubich & Wanner, Geometric Numerical Integration, eq. I.1.10); symplectic in (q, p) only,
    so in (q, v) only where M is constant: with M(q) its energy drifts (docs/simulation.md).
    A free joint's linear velocity steps in the parent frame (FreeJointFrames).
rk45: Dormand-Prince 5(4) with FSAL, error control on the 5th-order solution (HNW I, Table 5.2,
    step-size rule eq. II.4.13).
implicit: linearly implicit Euler, backward Euler (BDF1, Sueda §3.4.1 eq. 3.60) with the
    forces linearised at the current state, from the generated inverse-dynamics derivatives
    (Sueda §2.6 eqs. 2.82-2.86, after Baraff & Witkin 1998); 1st order, stable on stiff springs.
"""
import functools
import math

import numpy as np

INTEGRATORS = ("rk4", "semi-implicit", "rk45", "implicit")
NEEDS_DERIVATIVES = ("implicit",)     # their step takes derivs(t, q, v, a0), not accel


def vector_advance(q, dq):
    return q + dq


def dexp_inverse(bracket, omega, v):
    """Omega' for q = q0 exp(Omega) moving with body velocity v: v + [Omega, v]/2
    + [Omega, [Omega, v]]/12 - ad^4 v / 720 (Bernoulli numbers); v itself without a bracket."""
    if bracket is None:
        return v
    c1 = bracket(omega, v)
    c2 = bracket(omega, c1)
    c4 = bracket(omega, bracket(omega, c2))
    return v + 0.5 * c1 + c2 / 12.0 - c4 / 720.0


def velocity_bracket(groups):
    """The Lie bracket [x, y] of two velocity vectors, joint by joint: groups lists (kind, first
    index in qd) of the joints that are not vector spaces -- "so3" (angular velocity: x cross y)
    or "se3" (v = [linear; angular]: [w_x cross l_y - w_y cross l_x; w_x cross w_y]). None when
    there are none (the bracket is zero)."""
    if not groups:
        return None

    def bracket(x, y):
        out = np.zeros_like(y)
        xs, ys = x.tolist(), y.tolist()      # (np.cross on 3-vectors: 40x the arithmetic)
        for kind, k in groups:
            if kind == "so3":
                out[k:k + 3] = cross3(xs[k:k + 3], ys[k:k + 3])
            else:
                lx, wx, ly, wy = xs[k:k + 3], xs[k + 3:k + 6], ys[k:k + 3], ys[k + 3:k + 6]
                out[k:k + 3] = [a - b for a, b in zip(cross3(wx, ly), cross3(wy, lx))]
                out[k + 3:k + 6] = cross3(wx, wy)
        return out
    return bracket


def cross3(a, b):
    """a x b of two 3-vectors (lists of floats)."""
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def rk4_step(accel, t, q, v, h, advance=vector_advance, bracket=None):
    """(q, v) after one classic RK4 step of size h (RKMK with a bracket: see the module)."""
    a1 = accel(t, q, v)
    k1 = v
    q2, v2 = advance(q, 0.5 * h * k1), v + 0.5 * h * a1
    a2 = accel(t + 0.5 * h, q2, v2)
    k2 = dexp_inverse(bracket, 0.5 * h * k1, v2)
    q3, v3 = advance(q, 0.5 * h * k2), v + 0.5 * h * a2
    a3 = accel(t + 0.5 * h, q3, v3)
    k3 = dexp_inverse(bracket, 0.5 * h * k2, v3)
    q4, v4 = advance(q, h * k3), v + h * a3
    a4 = accel(t + h, q4, v4)
    k4 = dexp_inverse(bracket, h * k3, v4)
    return (advance(q, (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)),
            v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4))


def semi_implicit_euler_step(accel, t, q, v, h, advance=vector_advance, bracket=None,
                             frames=None):
    """(q, v) after one symplectic Euler step: the new velocity moves q. frames: None, or the
    model's FreeJointFrames (the free joints' linear velocities)."""
    a = accel(t, q, v)
    v_new = v + h * a
    if frames is not None:
        frames.semi_implicit(v, a, v_new, h)
    return advance(q, h * v_new), v_new


class FreeJointFrames:
    """A free joint's linear velocity l is in its child frame, which turns with the joint's
    angular velocity w: l' = a_l holds -w x l. Stepped as it stands, explicit Euler turns l by
    h|w| and lengthens it by sqrt(1 + (h|w|)^2) a step (a tester's spinning free flyer gained
    107 % of its energy in 3 s at dt = 1e-3; MuJoCo's free joint, its linear velocity in the
    world frame, does not), and backward Euler shortens it by as much (the tester's spinning
    body lost 136 %, and a free flyer carrying an arm diverged). Both steps therefore take l in
    the frame it has at the step's start (l0 = R0^T R l, whose rate is the frame-free a_l + w x l)
    and turn the result exactly into the frame the step ends in, exp(h [w_new]) (q <- q
    exp(h v_new)): l_new = exp(-h [w_new]) (l + h (a_l + w x l)). `free`: the first index in v
    of each free joint (groups of kind "se3")."""

    def __init__(self, free):
        self.free = list(free)

    def semi_implicit(self, v, a, v_new, h):
        """Sets v_new's linear parts after semi-implicit Euler's v_new = v + h a."""
        for k in self.free:
            l, w = v[k:k + 3].tolist(), v[k + 3:k + 6].tolist()
            moved = [l[i] + h * (a[k + i] + c) for i, c in enumerate(cross3(w, l))]
            v_new[k:k + 3] = rotated(moved, [-h * x for x in v_new[k + 3:k + 6].tolist()])

    def start_frame_derivatives(self, derivs, t, q, v):
        """derivs' (r, Hq, Hv, M) for the linearly implicit step in the start frame: the
        accelerations are v's less w x l in the linear rows (the inverse dynamics at that
        offset, Hv with its derivative in v), and the linear rows' force r_l, which the frame
        turns by h w_new x r_l over the step, adds [r_l]x to Hq's columns of w."""
        offset, d_offset = np.zeros(len(v)), np.zeros((len(v), len(v)))
        for k in self.free:
            l, w = v[k:k + 3], v[k + 3:k + 6]
            offset[k:k + 3] = -np.array(cross3(w.tolist(), l.tolist()))
            d_offset[k:k + 3, k:k + 3] = -skew3(w)           # d(w x l)/dl = [w]x
            d_offset[k:k + 3, k + 3:k + 6] = skew3(l)        # d(w x l)/dw = -[l]x
        r, Hq, Hv, M = derivs(t, q, v, offset)
        Hq = Hq.copy()
        for k in self.free:
            Hq[k:k + 3, k + 3:k + 6] += skew3(r[k:k + 3])
        return r, Hq, Hv + M @ d_offset, M

    def turn(self, v_new, h):
        """The linear parts of v_new taken into the frame the step turns to."""
        for k in self.free:
            v_new[k:k + 3] = rotated(v_new[k:k + 3].tolist(),
                                     [-h * x for x in v_new[k + 3:k + 6].tolist()])


def free_joint_frames(groups):
    """FreeJointFrames of a model's se3 groups, or None without free joints."""
    free = [k for kind, k in groups if kind == "se3"]
    return FreeJointFrames(free) if free else None


def skew3(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def rotated(x, rotation_vector):
    """exp([r]) x by Rodrigues' formula, r a rotation vector (lists of floats)."""
    angle = math.sqrt(sum(c * c for c in rotation_vector))
    if angle == 0.0:
        return list(x)
    if not math.isfinite(angle):        # a diverged run: the simulator says so after the step
        return [math.nan] * len(x)
    axis = [c / angle for c in rotation_vector]
    c, s = math.cos(angle), math.sin(angle)
    along = sum(a * b for a, b in zip(axis, x)) * (1.0 - c)
    return [x[i] * c + cr * s + axis[i] * along for i, cr in enumerate(cross3(axis, x))]


def fixed_step(integrator, groups):
    """The step function of a fixed-step integrator for a model whose non-vector joints are
    groups ((kind, first index in qd), simulator.lie_groups)."""
    step = FIXED_STEPS[integrator]
    if step in (semi_implicit_euler_step, linearly_implicit_euler_step):
        return functools.partial(step, frames=free_joint_frames(groups))
    return step


def linearly_implicit_euler_step(derivs, t, q, v, h, advance=vector_advance, bracket=None,
                                 frames=None):
    """(q, v) after one linearly implicit Euler step. derivs(t, q, v, a0) -> (r, Hq, Hv, M):
    the joint force r = tau - h(q, v) - M a0 that accelerates the system beyond a0 (springs,
    dampers, gravity and Coriolis forces in h), the derivatives Hq = dh/dq + d(M a0)/dq
    (tangent space, nv columns: along advance(q, dq) at dq = 0) and Hv = dh/dv, and the mass
    matrix M, all at (q, v), tau held at its value there: the inverse dynamics' derivatives at
    qdd = a0 (zero, or the free joints' frame offset below).

    Backward Euler (Sueda 3.60): M (v1 - v) = h r(q1, v1), q1 = advance(q, h v1). With r
    linearised at (q, v), r(q1, v1) ~ r - Hq (h v1) - Hv dv (q1 - q = h v1 in the tangent
    space, v1 = v + dv) and M frozen at q, the step is linear in dv:
        (M + h Hv + h^2 Hq) dv = h (r - h Hq v)
    Sueda 2.84-2.86 (Baraff & Witkin 1998 eq. 6) with the springs' K and the dampers' D in Hq
    and Hv, generalised to every force of h. Hq, Hv and M from the generated derivatives. On a
    spring q'' = -k q the step's amplification factors have modulus 1/sqrt(1 + k h^2) < 1 for
    every h. (Linearising the acceleration FD(q, v) instead, with the forward dynamics'
    derivatives, adds -M^-1 (dM/dq) a to df/dq: with stiff springs a is large and that term
    makes the step blow up at the steps this one is meant for; docs/simulation.md.)
    frames: None, or the model's FreeJointFrames: the free joints' linear velocities are
    stepped in the frame of the step's start, then turned exactly into the step's end frame."""
    if frames is None:
        r, Hq, Hv, M = derivs(t, q, v, np.zeros(len(v)))
    else:
        r, Hq, Hv, M = frames.start_frame_derivatives(derivs, t, q, v)
    lhs = M + h * Hv + (h * h) * Hq
    dv = np.linalg.solve(lhs, h * (r - h * (Hq @ v)))
    v_new = v + dv
    if frames is not None:
        frames.turn(v_new, h)
    return advance(q, h * v_new), v_new


FIXED_STEPS = {"rk4": rk4_step, "semi-implicit": semi_implicit_euler_step,
               "implicit": linearly_implicit_euler_step}

# Dormand-Prince 5(4) (HNW I, Table 5.2)
DP_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
DP_A = ((),
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
        (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
DP_B5 = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
DP_B4 = np.array([5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40])
DP_E = DP_B5 - DP_B4


def derivative(accel, t, y, n, bracket=None):
    """ẏ = (v, a(t, q, v)) of the first-order state y = (q, v), n = nv; with a bracket, y =
    (Omega, v) and Omega' = dexp_inverse(Omega, v) (RKMK)."""
    return np.concatenate([dexp_inverse(bracket, y[:n], y[n:]), accel(t, y[:n], y[n:])])


def dopri_step(accel, t, y, f0, h, bracket=None):
    """One Dormand-Prince attempt from y (with ẏ = f0 there): (y_new, error estimate, ẏ at
    y_new).
    The 7th stage is evaluated at y_new, so an accepted step's last stage is the next f0 (FSAL)."""
    n = y.size // 2
    K = np.empty((7, y.size))
    K[0] = f0
    for i in range(1, 7):
        K[i] = derivative(accel, t + DP_C[i] * h, y + h * (np.asarray(DP_A[i]) @ K[:i]), n, bracket)
    return y + h * (DP_B5 @ K), h * (DP_E @ K), K[6].copy()


def error_norm(err_vec, y, y_new, rtol, atol):
    """RMS of the error relative to atol + rtol max(|y|, |y_new|) (HNW I, eq. II.4.11); inf for a
    non-finite error (the step overflowed), so that the step is rejected."""
    if err_vec.size == 0:
        return 0.0
    scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
    err = float(np.sqrt(np.mean((err_vec / scale) ** 2)))
    return err if np.isfinite(err) else math.inf


def step_factor(err, fac_max=5.0):
    """h_new / h = min(fac_max, max(0.2, 0.9 err^(-1/5))) (HNW I, eq. II.4.13, order 4 + 1)."""
    if err <= 0:
        return fac_max
    return min(fac_max, max(0.2, 0.9 * err ** -0.2))
