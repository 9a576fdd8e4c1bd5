"""Spatial algebra on plain nested lists of scalars, for any scalar type.

Scalars are floats (the numeric reference) or program Vars (the unrolled program); constants
are always plain floats, so zeros and ones fold away as the program is built. Twists are
[w; v] and wrenches [n; f], angular first, in body coordinates (S&G section 3).

A placement (R, t) maps points p_parent = R p_child + t. With G = (R, t):
  Ad_{G^-1} [w; v]   = [R^T w; R^T (v - t x w)]          (parent twist -> child frame)
  Ad_{G^-1}^T [n; f] = [R n + t x (R f); R f]            (child wrench -> parent frame)
  Ad_G [w; v]        = [R w; R v + t x (R w)]            (child twist -> parent frame)
"""
import numpy as np


def vadd(a, b):
    return [x + y for x, y in zip(a, b)]


def vsub(a, b):
    return [x - y for x, y in zip(a, b)]


def vscale(s, a):
    return [s * x for x in a]


def dot(a, b):
    total = 0.0
    for x, y in zip(a, b):
        total = total + x * y
    return total


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def matvec(M, x):
    return [dot(row, x) for row in M]


def mat_t_vec(M, x):
    """M^T x."""
    return [dot([M[r][c] for r in range(len(M))], x) for c in range(len(M[0]))]


def transpose(M):
    return [list(col) for col in zip(*M)]


def matmul(A, B):
    Bt = transpose(B)
    return [[dot(row, col) for col in Bt] for row in A]


def columns(M):
    return [[M[r][c] for r in range(len(M))] for c in range(len(M[0]))] if M and M[0] else []


# ---- adjoint maps ---------------------------------------------------------------------------
def twist_to_child(R, t, x):
    """Ad_{G^-1} x for G = (R, t): a twist in the parent frame seen in the child frame."""
    w, v = x[:3], x[3:]
    return mat_t_vec(R, w) + mat_t_vec(R, vsub(v, cross(t, w)))


def twist_to_parent(R, t, x):
    """Ad_G x for G = (R, t): a twist in the child frame seen in the parent frame."""
    Rw = matvec(R, x[:3])
    return Rw + vadd(matvec(R, x[3:]), cross(t, Rw))


def wrench_to_parent(R, t, f):
    """Ad_{G^-1}^T f for G = (R, t): a wrench in the child frame seen in the parent frame."""
    n, fl = f[:3], f[3:]
    Rf = matvec(R, fl)
    return vadd(matvec(R, n), cross(t, Rf)) + Rf


def ad(x, y):
    """S&G (3): ad_x y = [w x w_y; v x w_y + w x v_y]  (Featherstone's x cross y)."""
    w, v = x[:3], x[3:]
    return cross(w, y[:3]) + vadd(cross(v, y[:3]), cross(w, y[3:]))


def ad_star(x, f):
    """ad_x^T f  (S&G's ad*_x; Featherstone's x cross* f is -ad_x^T f)."""
    w, v = x[:3], x[3:]
    n, fl = f[:3], f[3:]
    # ad_x = [[W, 0], [V, W]] with W = [w], V = [v];  ad_x^T = [[-W, -V], [0, -W]]
    return vscale(-1.0, vadd(cross(w, n), cross(v, fl))) + vscale(-1.0, cross(w, fl))


def adjoint_inverse_matrix(R, t):
    """The 6x6 matrix Ad_{G^-1} = [[R^T, 0], [-R^T [t], R^T]] for G = (R, t)."""
    Rt = transpose(R)
    tx = [[0.0, -t[2], t[1]], [t[2], 0.0, -t[0]], [-t[1], t[0], 0.0]]
    low = [[-x for x in row] for row in matmul(Rt, tx)]
    X = [[0.0] * 6 for _ in range(6)]
    for r in range(3):
        for c in range(3):
            X[r][c] = Rt[r][c]
            X[r + 3][c + 3] = Rt[r][c]
            X[r + 3][c] = low[r][c]
    return X


def congruence(X, A):
    """X^T A X for symmetric A, computing only the upper triangle (the result is symmetric)."""
    n = len(X[0])
    AX = matmul(A, X)
    out = [[0.0] * n for _ in range(n)]
    for i in range(n):
        col_i = [X[k][i] for k in range(len(X))]
        for j in range(i, n):
            out[i][j] = dot(col_i, [AX[k][j] for k in range(len(X))])
            out[j][i] = out[i][j]
    return out


def inertia_to_parent(R, t, A):
    """Ad_{G^-1}^T A Ad_{G^-1}: a (articulated) inertia in the child frame seen in the parent.
    For a pure turn about a coordinate axis (a revolute joint's Q(q)) that is blockdiag(R, R) A
    blockdiag(R, R)^T, block by block (rotate_about_axis)."""
    turn = costly_turn(R)
    if turn is None:
        return congruence(adjoint_inverse_matrix(R, t), A)
    if not all(_is_constant(x, 0.0) for x in t):     # G = (1, t) (R, 0): turn, then move
        return congruence(adjoint_inverse_matrix(IDENTITY3, t), inertia_to_parent(R, [0.0] * 3, A))
    top = rotate_about_axis([row[:3] for row in A[:3]], *turn, symmetric=True)
    corner = rotate_about_axis([row[3:] for row in A[:3]], *turn, symmetric=False)
    low = rotate_about_axis([row[3:] for row in A[3:]], *turn, symmetric=True)
    return [top[r] + corner[r] for r in range(3)] + \
        [[corner[c][r] for c in range(3)] + low[r] for r in range(3)]


IDENTITY3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


# ---- turns about a coordinate axis: a revolute joint's Q(q) about x, y or z -------------------
def _is_constant(x, value):
    return isinstance(x, (int, float)) and x == value


def _is_folding(x):
    """A constant 0, 1 or -1: no multiplication."""
    return isinstance(x, (int, float)) and x in (0.0, 1.0, -1.0)


def _same(a, b):
    return a is b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def coordinate_rotation(R):
    """(k, c, s) where R is the turn about coordinate axis k by an angle of cosine c and sine s,
    read off its entries: R[k][k] = 1, the rest of row and column k 0, and on the other two axes
    (i, j) = (k + 1, k + 2) mod 3 the block [[c, -s], [s, c]]; None where R is not so (or its
    entries do not show it: then the general products apply)."""
    for k in range(3):
        i, j = (k + 1) % 3, (k + 2) % 3
        if not (_is_constant(R[k][k], 1.0) and
                all(_is_constant(R[k][m], 0.0) and _is_constant(R[m][k], 0.0) for m in (i, j))):
            continue
        c, s = R[i][i], R[j][i]
        if _same(R[j][j], c) and _same(R[i][j], -s):
            return k, c, s
    return None


def costly_turn(R):
    """coordinate_rotation(R) where its cosine or sine costs multiplications; None also for a
    signed permutation, which the general products fold to a reordering (the block formulas
    would leave a - (a - d) where the entry is d)."""
    turn = coordinate_rotation(R)
    if turn is None or all(_is_folding(x) for x in turn[1:]):
        return None
    return turn


def rotation_product(A, B):
    """A B for rotations A and B; two turns about one coordinate axis compose by the sum of
    their angles (c = c1 c2 - s1 s2, s = s1 c2 + c1 s2), so the product still reads as a turn."""
    ta, tb = coordinate_rotation(A), coordinate_rotation(B)
    if ta is None or tb is None or ta[0] != tb[0]:
        return matmul(A, B)
    (k, c1, s1), (_, c2, s2) = ta, tb
    c, s = c1 * c2 - s1 * s2, s1 * c2 + c1 * s2
    i, j = (k + 1) % 3, (k + 2) % 3
    R = [[0.0] * 3 for _ in range(3)]
    R[k][k], R[i][i], R[j][j], R[i][j], R[j][i] = 1.0, c, c, -s, s
    return R


def rotate_about_axis(M, k, c, s, symmetric):
    """R M R^T for a 3x3 M and R the turn (k, c, s) of coordinate_rotation: entry (k, k) stays,
    row and column k turn by the angle as 2-vectors, and the block on the other two axes by
    twice the angle (its symmetric part does; the rest is invariant), written with c^2, s^2 and
    cs, which every block of the body shares. A symmetric block costs 8 multiplications, a
    general one 15, against 21 and 36 by the two products."""
    i, j = (k + 1) % 3, (k + 2) % 3
    cc, ss, cs = c * c, s * s, c * s
    out = [[None] * 3 for _ in range(3)]
    out[k][k] = M[k][k]
    out[i][k] = c * M[i][k] - s * M[j][k]
    out[j][k] = s * M[i][k] + c * M[j][k]
    if symmetric:
        out[k][i], out[k][j] = out[i][k], out[j][k]
    else:
        out[k][i] = c * M[k][i] - s * M[k][j]
        out[k][j] = s * M[k][i] + c * M[k][j]
    a, b, b2, d = M[i][i], M[i][j], M[j][i], M[j][j]
    u = a - d
    shift = u * ss + (b + b2) * cs          # what moves from the i-i entry to the j-j entry
    out[i][i], out[j][j] = a - shift, d + shift
    p = u * cs
    if symmetric:
        out[i][j] = out[j][i] = p + b * (cc - ss)
    else:
        out[i][j] = p + b * cc - b2 * ss
        out[j][i] = p + b2 * cc - b * ss
    return out


def sym_add(A, B):
    return [[A[i][j] + B[i][j] for j in range(len(A))] for i in range(len(A))]


# ---- rigid-body inertias in compact form (Featherstone 2.13: m, h = m c, I about the origin) ----
def rigid_parts(J):
    """(m, h, Ibar) of a 6x6 rigid-body inertia J = [[Ibar, [h]], [[h]^T, m 1]]."""
    m = J[3][3]
    h = [J[2][4], J[0][5], J[1][3]]
    Ibar = [row[:3] for row in J[:3]]
    return m, h, Ibar


def body_wrench(J, alpha, v):
    """J alpha - ad*_v J v (S&G 21 and 23; Featherstone's I a + v x* I v) for a rigid-body
    inertia J, by the Newton-Euler equations about the centre of mass c (Featherstone 2.15):
    F = m a_c with a_c = a + dw x c + w x (v + w x c) the classical acceleration of the centre,
    N = Ic dw + w x (Ic w) + c x F about the origin, Ic = Ibar + m [c]^2 the inertia about c.
    The same wrench as the 6x6 products, with about a fifth fewer operations (51 multiplications
    and 42 additions against 66 and 54 for a general c and Ic)."""
    m, h, Ibar = rigid_parts(J)
    w, dw = v[:3], alpha[:3]
    if m == 0.0:                        # no mass (a rotor alone, or a first moment as well:
        # dynamics.regroup). With a = alpha + w x v the origin's classical acceleration, the
        # 6x6 products reduce (Jacobi: w x (h x v) + v x (w x h) = h x (w x v)) to
        # N = Ibar dw + w x Ibar w + h x a, F = dw x h + w x (w x h)
        a = vadd(alpha[3:], cross(w, v[3:]))
        N = vadd(vadd(matvec(Ibar, dw), cross(w, matvec(Ibar, w))), cross(h, a))
        return N + vadd(cross(dw, h), cross(w, cross(w, h)))
    c = [x / m for x in h]
    cc = dot(c, c)
    Ic = [[Ibar[r][k] + m * (c[r] * c[k] - (cc if r == k else 0.0)) for k in range(3)]
          for r in range(3)]
    vc = vadd(v[3:], cross(w, c))                                          # velocity of c
    F = vscale(m, vadd(vadd(alpha[3:], cross(dw, c)), cross(w, vc)))     # m a_c
    N = vadd(vadd(matvec(Ic, dw), cross(w, matvec(Ic, w))), cross(c, F))
    return N + F


def rigid_matrix(m, h, Ibar):
    """The 6x6 rigid-body inertia from (m, h, Ibar)."""
    hx = [[0.0, -h[2], h[1]], [h[2], 0.0, -h[0]], [-h[1], h[0], 0.0]]
    J = [[0.0] * 6 for _ in range(6)]
    for r in range(3):
        for c in range(3):
            J[r][c] = Ibar[r][c]
            J[r][c + 3] = hx[r][c]
            J[r + 3][c] = hx[c][r]
        J[r + 3][r + 3] = m
    return J


def rotate_symmetric(R, A):
    """R A R^T for symmetric 3x3 A (upper triangle computed, mirrored)."""
    turn = costly_turn(R)
    if turn is not None:
        return rotate_about_axis(A, *turn, symmetric=True)
    RA = matmul(R, A)
    out = [[0.0] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i, 3):
            out[i][j] = out[j][i] = dot(RA[i], R[j])
    return out


def constant_rigid_inertia_to_parent(R, t, J):
    """rigid_inertia_to_parent for a constant inertia J (floats; the body's own), by its centre of
    mass: with Ic the inertia about the centre (a constant), h' = R h + m t = m c (c the moved
    centre) and (Featherstone 2.63) Ibar' = R Ic R^T + m [c]^T [c], i.e.
    Ibar'_ii = (R Ic R^T)_ii + sum over k != i of h'_k^2 / m,
    Ibar'_ij = (R Ic R^T)_ij - h'_i h'_j / m
    (h' as a sum, not m times c: products of a scaled value take two multiplications), and
    R Ic R^T in Ic's principal form (rotate_principal). For a dense R (the bodies' world poses)
    about half the work of the general form (RC20: 95 -> 34 operations per body); other J
    (symbolic, massless) take rigid_inertia_to_parent."""
    central = central_inertia(J)
    if central is None or costly_turn(R) is not None:
        return rigid_inertia_to_parent(R, t, J)
    m, h, moments, axes = central
    h2 = vadd(matvec(R, h), vscale(m, t))
    I = rotate_principal(R, moments, axes)
    hh = [[h2[i] * h2[j] for j in range(3)] for i in range(3)]          # m^2 c_i c_j
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        I[i][i] = I[i][i] + (hh[j][j] + hh[k][k]) / m
    for i, j in ((0, 1), (0, 2), (1, 2)):
        I[i][j] = I[j][i] = I[i][j] - hh[i][j] / m
    return rigid_matrix(m, h2, I)


def central_inertia(J):
    """(m, h, moments, axes) of a constant rigid-body inertia J (all entries floats, m > 0): the
    principal moments and axes (unit 3-vectors) of its inertia about the centre of mass h / m,
    Ic = sum over k of moments[k] axes[k] axes[k]^T. Entries of Ic below SNAP_CENTRAL of the
    largest of Ic and Ibar are exactly 0 (the round-off of Ic = Ibar - m [com]^T [com]: a point
    mass off the origin, icub's legs, leaves ~1e-18 there); where Ic is then diagonal the axes
    are exactly the coordinate axes, else numpy's eigh, axis entries below SNAP_CENTRAL exactly
    0 (a block-diagonal Ic keeps its zeros). None for other J."""
    m, h, Ibar = rigid_parts(J)
    if not all(isinstance(x, float) for row in J for x in row) or m <= 0.0:
        return None
    com = [x / m for x in h]
    cc = sum(x * x for x in com)
    Ic = np.array([[Ibar[i][j] - m * ((cc if i == j else 0.0) - com[i] * com[j])
                    for j in range(3)] for i in range(3)])
    Ic[np.abs(Ic) <= SNAP_CENTRAL * max(np.abs(Ic).max(), np.abs(np.array(Ibar)).max())] = 0.0
    if not (Ic - np.diag(np.diag(Ic))).any():
        return (m, h, [float(x) for x in np.diag(Ic)],
                [[float(i == k) for i in range(3)] for k in range(3)])
    moments, U = np.linalg.eigh(Ic)
    U[np.abs(U) <= SNAP_CENTRAL] = 0.0
    return m, h, [float(x) for x in moments], [[float(x) for x in U[:, k]] for k in range(3)]


SNAP_CENTRAL = 1e-12


def rotate_principal(R, moments, axes):
    """R Ic R^T for a constant Ic = sum over k of d_k u_k u_k^T (moments d, unit axes u) and a
    rotation R (R R^T = 1): with b a base moment, R Ic R^T = b 1 + sum over the other k of
    (d_k - b) (R u_k)(R u_k)^T. b is a repeated moment where there is one (moments within
    SNAP_CENTRAL of each other count as one), else the one of the densest axis, whose R u is
    then not needed. Coordinate axes: 27 operations for three distinct moments, 12 for two, 0
    for one, against 39 by the two products; a general Ic 57 against 75."""
    d = list(moments)
    scale = max(abs(x) for x in d) or 1.0
    same = [[j for j in range(3) if abs(d[j] - d[k]) <= SNAP_CENTRAL * scale] for k in range(3)]
    dense = [sum(1 for x in u if x != 0.0) for u in axes]
    base = max(range(3), key=lambda k: (len(same[k]), dense[k]))
    b = d[base]
    out = [[b if i == j else 0.0 for j in range(3)] for i in range(3)]
    for k in range(3):
        if k in same[base]:
            continue
        Ru = matvec(R, axes[k])
        s = vscale(d[k] - b, Ru)
        for i in range(3):
            for j in range(i, 3):
                out[i][j] = out[i][j] + s[i] * Ru[j]
    for i in range(3):
        for j in range(i):
            out[i][j] = out[j][i]
    return out


def rigid_inertia_to_parent(R, t, J):
    """Ad_{G^-1}^T J Ad_{G^-1} for a rigid-body inertia J (not an articulated one), in compact
    form: h' = R h + m t, Ibar' = R Ibar R^T - ([y][t] + [t][y] + m [t]^2) with y = R h.
    About half the work of the general 6x6 congruence (Featherstone Tab. A.4)."""
    m, h, Ibar = rigid_parts(J)
    y = matvec(R, h)
    h2 = vadd(y, vscale(m, t))
    I2 = rotate_symmetric(R, Ibar)
    # [a][b] + [b][a] = b a^T + a b^T - 2 (a.b) 1 ;  [t]^2 = t t^T - (t.t) 1
    yt = dot(y, t)
    tt = dot(t, t)
    for i in range(3):
        for j in range(i, 3):
            corr = t[i] * y[j] + y[i] * t[j] + m * (t[i] * t[j])
            if i == j:
                corr = corr - 2.0 * yt - m * tt
            I2[i][j] = I2[j][i] = I2[i][j] - corr
    return rigid_matrix(m, h2, I2)
