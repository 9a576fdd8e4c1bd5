"""The configuration spaces of the joints: integrate a velocity, take the difference of two
configurations, in any algebra (floats, or program nodes for the generated integrate and
difference). Pinocchio's definitions, so that arrays move between the two as they are:

- "vector" (every joint with nq = nv: hinges, Euler charts, splines, ...): q + v, q1 - q0;
- "quaternion" (spherical_quat, q = [x, y, z, w]): q exp(v) with v the angular velocity in the
  child frame, and log(q0* q1);
- "se3" (free_flyer, q = [p; quaternion], v = [linear; angular] in the body frame):
  M0 exp6(v) and log6(M0^-1 M1), the exponential and logarithm of SE(3) (Murray, Li & Sastry
  (2.36); Pinocchio's exp6 / log6).

After a product the quaternion gets Pinocchio's first-order normalisation q (3 - |q|^2) / 2, and
a free flyer's stays in the half of the sphere of the q it started from, as Pinocchio's does.
The logarithm is taken of the relative quaternion u + w: theta = 2 atan(|u| / w), so that it
needs no branch; at exactly half a turn (w = 0) it gives theta = pi about u.

Their Jacobians in the tangent spaces (Pinocchio's dIntegrate and dDifference), with J_r the
right Jacobian of the exponential (Barfoot, "State Estimation for Robotics", 7.1.5 and 7.86;
SE(3) ordered [linear; angular] as here):
- integrate q (+) v: d/dq = Ad of exp(v)^-1 (SO(3): R(exp v)^T), d/dv = J_r(v);
- difference v = q1 (-) q0: d/dq1 = J_r(v)^-1, d/dq0 = -J_r(-v)^-1.
"""
import math

from ..algebra import Helper
from .special import ExpA, ExpB, ExpC, ExpDB, ExpDC


def _series_helper(name, coeffs, below, closed, closed_c, doc):
    """A one-argument Helper: its Taylor series in x below `below`, the closed form above."""
    def numeric(x):
        if x < below:
            return sum(c * x ** k for k, c in enumerate(coeffs))
        return closed(x)
    series = f"{coeffs[-1]!r}"
    for c in reversed(coeffs[:-1]):
        series = f"({c!r} + x * {series})"
    body = (f"if (x < {below!r}) {{", f"    return {series};", "}",
            "const double th = sqrt(x);", f"return {closed_c};")
    return Helper(name, numeric, body, doc)


# atan(sqrt(y)) / sqrt(y): exact to rounding in closed form except at y = 0
ATAN_RATIO = _series_helper(
    "scl_atan_ratio", [1.0, -1 / 3, 1 / 5, -1 / 7, 1 / 9], 1e-4,
    lambda y: math.atan(math.sqrt(y)) / math.sqrt(y), "atan(th) / th",
    "scl_atan_ratio: atan(sqrt(y)) / sqrt(y), series below y = 1e-4")

# (1 - th sin th / (2 (1 - cos th))) / th^2 with x = th^2: the [w]^2 factor of SE(3)'s inverse
# left Jacobian, log6's translation part (Murray, Li & Sastry 2.36 inverted)
_D = [1 / 12, 1 / 720, 1 / 30240, 1 / 1209600, 1 / 47900160, 691 / 1307674368000,
      1 / 74724249600, 3617 / 10670622842880000, 43867 / 5109094217170944000]
SE3_D = _series_helper(
    "scl_se3_d", _D, 0.1,
    lambda x: (1 - math.sqrt(x) * math.sin(math.sqrt(x)) / (2 * (1 - math.cos(math.sqrt(x))))) / x,
    "(1.0 - th * sin(th) / (2.0 * (1.0 - cos(th)))) / x",
    "scl_se3_d: (1 - th sin th / (2 (1 - cos th))) / th^2, series below th^2 = 0.1")


# the sign of x, +1 at 0: which half of the quaternion sphere a product landed in
HEMISPHERE = Helper("scl_hemisphere", lambda x: -1.0 if x < 0.0 else 1.0,
                    ("return x < 0.0 ? -1.0 : 1.0;",),
                    "scl_hemisphere: -1 where x < 0, else 1", lambda alg, x: 0.0)


# ---- small vector and quaternion algebra on lists of scalars ------------------------------------
def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def quaternion_product(a, b):
    """a b for quaternions stored [x, y, z, w]."""
    u, w = a[:3], a[3]
    v, s = b[:3], b[3]
    c = _cross(u, v)
    return [w * v[k] + s * u[k] + c[k] for k in range(3)] + [w * s - _dot(u, v)]


def quaternion_rotate(q, v):
    """R(q) v = v + 2 w (u x v) + 2 u x (u x v) for a unit quaternion q = [u; w]."""
    u, w = q[:3], q[3]
    t = [2 * x for x in _cross(u, v)]
    c = _cross(u, t)
    return [v[k] + w * t[k] + c[k] for k in range(3)]


def conjugate(q):
    return [-q[0], -q[1], -q[2], q[3]]


def first_order_normalize(q):
    """q (3 - |q|^2) / 2: one Newton step towards |q| = 1 (Pinocchio's firstOrderNormalize)."""
    s = (3 - (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])) * 0.5
    return [s * x for x in q]


def quaternion_exp(alg, v):
    """exp of a rotation vector v as a quaternion: [sin(th/2) v / th; cos(th/2)], th = |v|, in
    terms of y = th^2 / 4: sin(th/2)/th = A(y)/2, cos(th/2) = 1 - y B(y)."""
    y = _dot(v, v) * 0.25
    half_sinc = 0.5 * alg.call(ExpA.helper, y)
    return [half_sinc * x for x in v] + [1 - y * alg.call(ExpB.helper, y)]


# w kept at least 1e-100 from 0 (+1e-100 at 0): the logarithm's w at half a turn, where
# |u|^2 / w^2 would be inf (w = 0, as a hand-typed [0, 0, 1, 0] has) or overflow (|w| < 1e-154)
AWAY_FROM_ZERO = Helper("scl_away_from_zero",
                        lambda x: x if abs(x) >= 1e-100 else (-1e-100 if x < 0.0 else 1e-100),
                        ("return fabs(x) >= 1e-100 ? x : (x < 0.0 ? -1e-100 : 1e-100);",),
                        "scl_away_from_zero: x, or +-1e-100 where |x| < 1e-100 (+ at 0)",
                        lambda alg, x: 1.0)


def quaternion_log(alg, q):
    """The rotation vector of q = [u; w]: theta u / |u| with theta = 2 atan(|u| / w), written
    2 atan_ratio(|u|^2 / w^2) u / w, which also takes the short way when w < 0. At half a turn
    (w = 0) w is taken as 1e-100: theta = pi about u, as Pinocchio's log3 gives."""
    u, w = q[:3], alg.call(AWAY_FROM_ZERO, q[3])
    f = 2 * alg.call(ATAN_RATIO, _dot(u, u) / (w * w)) / w
    return [f * x for x in u]


# ---- the three configuration spaces -------------------------------------------------------------
def integrate(kind, alg, q, v):
    """The configuration reached from q by the velocity v in unit time."""
    if kind == "vector":
        return [a + b for a, b in zip(q, v)]
    if kind == "quaternion":
        return first_order_normalize(quaternion_product(q, quaternion_exp(alg, v)))
    if kind == "se3":
        lin, w = v[:3], v[3:]
        x = _dot(w, w)
        # exp6 translation: V(w) lin = lin + B [w] lin + C [w]^2 lin (Murray, Li & Sastry 2.36)
        wl = _cross(w, lin)
        wwl = _cross(w, wl)
        B, C = alg.call(ExpB.helper, x), alg.call(ExpC.helper, x)
        step = [lin[k] + B * wl[k] + C * wwl[k] for k in range(3)]
        moved = quaternion_rotate(q[3:], step)
        # q exp(w) and -q exp(w) are one rotation; Pinocchio's free flyer returns the one in q's
        # half of the sphere (q . q exp(w) = |q|^2 cos(|w| / 2) >= 0), so past half a turn the sign
        # flips, where its spherical joint (and "quaternion" here) keeps q exp(w) as it is
        e = quaternion_exp(alg, w)
        side = alg.call(HEMISPHERE, e[3])
        quat = first_order_normalize([side * x for x in quaternion_product(q[3:], e)])
        return [q[k] + moved[k] for k in range(3)] + quat
    raise ValueError(f"unknown configuration space {kind!r}")


def difference(kind, alg, q0, q1):
    """The velocity that integrate() turns q0 into q1 with in unit time."""
    if kind == "vector":
        return [b - a for a, b in zip(q0, q1)]
    if kind == "quaternion":
        return quaternion_log(alg, quaternion_product(conjugate(q0), q1))
    if kind == "se3":
        inv0 = conjugate(q0[3:])
        w = quaternion_log(alg, quaternion_product(inv0, q1[3:]))
        p = quaternion_rotate(inv0, [q1[k] - q0[k] for k in range(3)])      # R0^T (p1 - p0)
        # log6 translation: V(w)^-1 p = p - [w] p / 2 + D [w]^2 p
        wp = _cross(w, p)
        wwp = _cross(w, wp)
        D = alg.call(SE3_D, _dot(w, w))
        return [p[k] - 0.5 * wp[k] + D * wwp[k] for k in range(3)] + w
    raise ValueError(f"unknown configuration space {kind!r}")


# ---- Jacobians of integrate and difference in the tangent spaces ---------------------------------
# 3 x 3 matrices as lists of rows of scalars (any algebra)
def _identity():
    return [[1.0 if i == j else 0.0 for j in range(3)] for i in range(3)]


def _skew(w):
    """[w], the matrix of w x ."""
    return [[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]]


def _mul(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def _combination(*terms):
    """sum of c M over the (c, M) terms."""
    return [[sum(c * M[i][j] for c, M in terms) for j in range(3)] for i in range(3)]


def _transpose(A):
    return [list(row) for row in zip(*A)]


def _rotation_matrix(e):
    """R of a unit quaternion e [x, y, z, w]: its columns are R e_k."""
    return _transpose([quaternion_rotate(e, [1.0 if i == k else 0.0 for i in range(3)])
                       for k in range(3)])


def so3_right_jacobian(alg, w):
    """J_r(w) = I - B [w] + C [w]^2 (Barfoot 7.77a, at -w; B, C of theta^2 = w.w)."""
    x = _dot(w, w)
    W = _skew(w)
    return _combination((1.0, _identity()), (-alg.call(ExpB.helper, x), W),
                        (alg.call(ExpC.helper, x), _mul(W, W)))


def so3_right_jacobian_inverse(alg, w):
    """J_r(w)^-1 = I + [w] / 2 + D [w]^2, D = (1 - theta sin theta / (2 (1 - cos theta))) /
    theta^2 (Barfoot 7.77b, at -w)."""
    W = _skew(w)
    return _combination((1.0, _identity()), (0.5, W), (alg.call(SE3_D, _dot(w, w)), _mul(W, W)))


def se3_left_q(alg, rho, phi):
    """Barfoot's Q(rho, phi) (7.86b), the coupling block of SE(3)'s left Jacobian
    [[J_l, Q], [0, J_l]] (linear first), with its three coefficients of theta^2 = phi.phi as
    the guarded helpers: (theta - sin)/theta^3 = C, (theta^2 + 2 cos - 2)/(2 theta^4) = DB + C/2,
    (2 theta - 3 sin + theta cos)/(2 theta^5) = -DC."""
    x = _dot(phi, phi)
    P, R = _skew(phi), _skew(rho)
    PR, RP, PP = _mul(P, R), _mul(R, P), _mul(P, P)
    PRP = _mul(PR, P)
    c1, db, dc = (alg.call(h.helper, x) for h in (ExpC, ExpDB, ExpDC))
    c2 = db + 0.5 * c1
    return _combination((0.5, R), (c1, PR), (c1, RP), (c1, PRP),
                        (c2, _mul(PP, R)), (c2, _mul(R, PP)), (-3.0 * c2, PRP),
                        (-dc, _mul(PRP, P)), (-dc, _mul(PP, RP)))


def _blocks(A, B, C, D):
    """[[A, B], [C, D]] of 3 x 3 blocks as 6 x 6."""
    return [ra + rb for ra, rb in zip(A, B)] + [rc + rd for rc, rd in zip(C, D)]


def se3_right_jacobian(alg, xi):
    """J_r(xi) = J_l(-xi) = [[J_r(phi), Q(-rho, -phi)], [0, J_r(phi)]], xi = [rho; phi]."""
    rho, phi = xi[:3], xi[3:]
    J = so3_right_jacobian(alg, phi)
    Q = se3_left_q(alg, [-x for x in rho], [-x for x in phi])
    return _blocks(J, Q, [[0.0] * 3] * 3, J)


def se3_right_jacobian_inverse(alg, xi):
    """J_r(xi)^-1 = [[J^-1, -J^-1 Q J^-1], [0, J^-1]] of the block triangular J_r."""
    rho, phi = xi[:3], xi[3:]
    Ji = so3_right_jacobian_inverse(alg, phi)
    Q = se3_left_q(alg, [-x for x in rho], [-x for x in phi])
    return _blocks(Ji, _combination((-1.0, _mul(_mul(Ji, Q), Ji))), [[0.0] * 3] * 3, Ji)


def integrate_jacobians(kind, alg, q, v):
    """(d/dq, d/dv) of integrate(kind, q, v) in the tangent spaces, dof x dof lists of rows."""
    n = len(v)
    if kind == "vector":
        eye = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
        return eye, [row[:] for row in eye]
    if kind == "quaternion":
        Rt = _transpose(_rotation_matrix(quaternion_exp(alg, v)))
        return Rt, so3_right_jacobian(alg, v)
    if kind == "se3":
        lin, w = v[:3], v[3:]
        x = _dot(w, w)
        wl = _cross(w, lin)
        B, C = alg.call(ExpB.helper, x), alg.call(ExpC.helper, x)
        p = [lin[k] + B * wl[k] + C * _cross(w, wl)[k] for k in range(3)]    # exp6's translation
        Rt = _transpose(_rotation_matrix(quaternion_exp(alg, w)))
        Ad_inverse = _blocks(Rt, _combination((-1.0, _mul(Rt, _skew(p)))), [[0.0] * 3] * 3, Rt)
        return Ad_inverse, se3_right_jacobian(alg, v)
    raise ValueError(f"unknown configuration space {kind!r}")


def difference_jacobians(kind, alg, q0, q1):
    """(d/dq0, d/dq1) of difference(kind, q0, q1) in the tangent spaces, dof x dof rows."""
    if kind == "vector":
        n = len(q0)
        eye = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
        return [[-x for x in row] for row in eye], eye
    if kind not in ("quaternion", "se3"):
        raise ValueError(f"unknown configuration space {kind!r}")
    inverse = so3_right_jacobian_inverse if kind == "quaternion" else se3_right_jacobian_inverse
    v = difference(kind, alg, q0, q1)
    back = inverse(alg, [-x for x in v])
    return [[-x for x in row] for row in back], inverse(alg, v)
