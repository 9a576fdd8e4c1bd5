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
needs no branch; it is undefined only at exactly half a turn (w = 0).
"""
import math

from ..program.algebra import Helper
from .special import ExpA, ExpB, ExpC


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


def quaternion_log(alg, q):
    """The rotation vector of q = [u; w]: theta u / |u| with theta = 2 atan(|u| / w), written
    2 atan_ratio(|u|^2 / w^2) u / w, which also takes the short way when w < 0."""
    u, w = q[:3], q[3]
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
