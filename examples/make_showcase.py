"""Writes the general-joint showcase models (run: python examples/make_showcase.py).

The systems of Si & Guenter section 5, built as ../shared/design/BENCHMARKS.md says:

  tc10.yaml, tc20.yaml  torus chains TC-n: DOF = 2 + 4 (n - 1) = 38, 78
  windmill.yaml         WM: a hub on a revolute joint with 6 arms of 3 bodies, every link a
                        4-DOF surface-surface joint: DOF = 1 + 18 * 4 = 73
  spline_chain.yaml     a torus chain whose first torus slides along a cubic B-spline curve
                        (7 control frames, the torus axis along the tangent)
  spline_surface.yaml   a board sliding on a bicubic B-spline surface (5 x 5 control values,
                        aligned with the tangent plane) with a pendulum hanging from it

Units SI. The committed files are this script's output. Solid-body inertias about the centre
of mass: torus (major radius R, tube radius a): m (R^2 + 3/4 a^2) about the symmetry axis and
m (R^2/2 + 5/8 a^2) about a diameter; sphere 2/5 m r^2; ellipsoid m/5 (b^2 + c^2) etc.; box
m/12 (b^2 + c^2) etc.
"""
import math
import os

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
PI2 = math.pi / 2

# ---- shapes -------------------------------------------------------------------------------------
TORUS_R, TORUS_A = 1.0, 0.25


def torus(R=TORUS_R, a=TORUS_A, **placement):
    return {"shape": "torus", "major_radius": R, "minor_radius": a, **placement}


def sphere(r, **placement):
    return {"shape": "sphere", "radius": r, **placement}


def ellipsoid(a, b, c, **placement):
    return {"shape": "ellipsoid", "semi_axes": [a, b, c], **placement}


def torus_inertia(m=1.0, R=TORUS_R, a=TORUS_A, axis=2):
    """Solid torus, diagonal, symmetry axis = body axis `axis`."""
    I = [m * (R ** 2 / 2 + 5 * a ** 2 / 8)] * 3
    I[axis] = m * (R ** 2 + 3 * a ** 2 / 4)
    return I


def shape_inertia(s, m):
    if s["shape"] == "sphere":
        return [0.4 * m * s["radius"] ** 2] * 3
    if s["shape"] == "ellipsoid":
        a, b, c = s["semi_axes"]
        return [m / 5 * (b * b + c * c), m / 5 * (a * a + c * c), m / 5 * (a * a + b * b)]
    return torus_inertia(m, s["major_radius"], s["minor_radius"])


def rounded(x):
    """Plain lists and floats, round-off noise (|x| < 1e-14) written as 0."""
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [rounded(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return 0.0 if abs(x) < 1e-14 else float(x)
    return x


class Flow(list):
    """A list written in flow style ([a, b, c])."""


def _flow(dumper, data):
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


yaml.SafeDumper.add_representer(Flow, _flow)


def flows(x):
    """Leaf lists (numbers, strings, lists of those) in flow style, the rest in block style."""
    if isinstance(x, dict):
        return {k: flows(v) for k, v in x.items()}
    if isinstance(x, list):
        if all(not isinstance(v, (dict, list)) for v in x) or \
                all(isinstance(v, list) and all(not isinstance(w, (dict, list)) for w in v) for v in x):
            return Flow(x)
        return [flows(v) for v in x]
    return x


def render(header, model):
    """The file text: the header as comments, then the model in YAML."""
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.strip("\n").split("\n"))
    return comments + yaml.safe_dump(flows(rounded(model)), sort_keys=False, width=110)


# ---- TC-n ---------------------------------------------------------------------------------------
def torus_chain(n):
    """Torus 1 hangs from the world by a universal joint at the top of its outer rim (its ring in
    the x-z plane, its axis along body y, its centre 1.25 m below the joint); torus k+1 touches
    torus k through a torus-torus surface joint, hanging below it."""
    bodies = [{
        "name": "torus1", "parent": "world",
        "joint": {"name": "hook", "type": "universal"},
        "mass": 1.0, "com": [0.0, 0.0, -(TORUS_R + TORUS_A)],
        "inertia": torus_inertia(axis=1),
    }]
    q = {"hook": [0.3, -0.2]}
    for k in range(2, n + 1):
        joint = {"name": f"contact{k}", "type": "surface_surface",
                 "parent_surface": torus(), "child_surface": torus()}
        if k == 2:     # torus 1's surface frame in its body frame: centre below the hook, axis y
            joint.update(xyz=[0.0, 0.0, -(TORUS_R + TORUS_A)], rpy=[-PI2, 0.0, 0.0])
        bodies.append({"name": f"torus{k}", "parent": f"torus{k - 1}", "joint": joint,
                       "mass": 1.0, "inertia": torus_inertia(axis=2)})
        # hanging: the parent's lowest outer point touches the child's highest outer point.
        # Torus 1's local +y points down, and each contact turns the child's y around.
        u = PI2 if k % 2 == 0 else -PI2
        w = 0.15 * math.sin(1.7 * k)                 # a little twist so the motion is 3-D
        q[f"contact{k}"] = [u + w, 0.1 * math.cos(k), u - w, -0.1 * math.sin(k)]
    model = {"name": f"tc{n}", "gravity": [0.0, 0.0, -9.81], "bodies": bodies,
             "initial": {"q": q}}
    header = f"""TC{n}: torus chain of Si & Guenter (section 5, Table 1), built as BENCHMARKS.md says.
{n} tori (major radius 1, minor radius 0.25, mass 1, solid-torus inertia: 1.046875 about the axis,
0.5390625 about a diameter). Torus 1 hangs from the world by a universal joint (Rx(q1) Ry(q2)) at its
rim; torus k+1 touches torus k through a torus-torus surface joint (u1, v1, u2, v2): the points
S_k(u1, v1) and S_k+1(u2, v2) coincide, the outward normals are opposite, the u-tangents aligned.
DOF = 2 + 4 ({n} - 1) = {2 + 4 * (n - 1)}. Initial state: the chain hanging, slightly twisted.
Generated by make_showcase.py."""
    return model, header


# ---- windmill -----------------------------------------------------------------------------------
ARM_SHAPES = [
    [sphere(0.3), ellipsoid(0.45, 0.25, 0.2), torus(0.4, 0.1)],       # s-s, s-e, e-t
    [torus(0.4, 0.1), torus(0.35, 0.1), ellipsoid(0.45, 0.25, 0.2)],  # s-t, t-t, t-e
    [ellipsoid(0.45, 0.25, 0.2), sphere(0.3), torus(0.4, 0.1)],       # s-e, e-s, s-t
]
HUB_R = 0.5


def windmill():
    """A hub (a sphere) turns about the world y axis; 6 arms of 3 bodies leave it in the x-z
    plane, every link a 4-DOF surface-surface joint. The hub sphere's poles lie on the hub axis,
    so the contacts start on the equators (v = 0), far from the poles of the sphere and ellipsoid
    parametrisations; each arm body touches its parent at u = pi (its inner side) and its child
    at u = 0 (its outer side)."""
    bodies = [{"name": "hub", "parent": "world",
               "joint": {"name": "axle", "type": "revolute", "axis": [0.0, 1.0, 0.0]},
               "mass": 4.0, "inertia": [0.4 * 4.0 * HUB_R ** 2] * 3}]
    q = {"axle": 0.1}
    qd = {"axle": 0.5}
    hub = sphere(HUB_R)
    for k in range(6):
        shapes = ARM_SHAPES[k % 3]
        phi = k * math.pi / 3 + 0.2                  # the arm's direction in the x-z plane
        parent, parent_shape = "hub", hub
        for i, s in enumerate(shapes):
            name = f"arm{k}_{i + 1}"
            joint = {"name": f"{name}_contact", "type": "surface_surface",
                     "parent_surface": parent_shape, "child_surface": s}
            if parent == "hub":      # the hub sphere with its poles on the axle (body y)
                joint.update(rpy=[-PI2, 0.0, 0.0])
                u1 = -phi                            # local (cos u, sin u, 0) -> body (cos u, 0, -sin u)
            else:
                u1 = 0.0                             # the parent's outer side
            bodies.append({"name": name, "parent": parent, "joint": joint, "mass": 1.0,
                           "inertia": shape_inertia(s, 1.0)})
            dv = 0.05 * math.sin(3 * k + i)          # slightly out of the plane: 3-D motion
            q[joint["name"]] = [u1 + 0.1 * math.cos(k + i), dv, math.pi, -dv]
            parent, parent_shape = name, s
    model = {"name": "windmill", "gravity": [0.0, 0.0, -9.81], "bodies": bodies,
             "initial": {"q": q, "qd": qd}}
    header = """WM: the windmill of Si & Guenter (section 5, Fig. 2, Table 1), built as BENCHMARKS.md says.
A hub (sphere, radius 0.5, 4 kg) turns about the world y axis on a revolute joint; 6 arms of 3 bodies
(1 kg each) hang from it, every link a 4-DOF surface-surface joint (u1, v1, u2, v2). Across the 18
links the surface pairs are sphere-sphere, sphere-ellipsoid, sphere-torus, torus-torus and
torus-ellipsoid (and ellipsoid-torus, ellipsoid-sphere). DOF = 1 + 18 * 4 = 73.
Initial state: arms straight out in the x-z plane, slightly out of it, the hub turning.
Generated by make_showcase.py."""
    return model, header


# ---- spline chain --------------------------------------------------------------------------------
SPLINE_POINTS = [(-6.0, 0.0, 4.0), (-4.0, 0.4, 1.5), (-2.0, -0.4, 0.3), (0.0, 0.0, 0.0),
                 (2.0, 0.4, 0.3), (4.0, -0.4, 1.5), (6.0, 0.0, 4.0)]


def frame_x(x):
    """A frame with its x axis along x and z as close to world up as possible."""
    x = np.asarray(x, dtype=float) / np.linalg.norm(x)
    z = np.array([0.0, 0.0, 1.0]) - x[2] * x
    z /= np.linalg.norm(z)
    return np.column_stack([x, np.cross(z, x), z])


def _beta(x):
    """The cumulative cubic B-spline basis beta(x) of the curve joint, and its derivative."""
    p = [max(x - k, 0.0) for k in range(4)]
    return ((p[0] ** 3 - 3 * p[1] ** 3 + 3 * p[2] ** 3 - p[3] ** 3) / 6,
            (p[0] ** 2 - 3 * p[1] ** 2 + 3 * p[2] ** 2 - p[3] ** 2) / 2)


def _curve(frames, s, differences=None):
    """Q(s) of the spline curve joint (the branch-free product of docs/joints.md) and dQ/ds,
    numerically: d/ds exp(xi beta) = exp(xi beta) hat(xi) beta', by the product rule.
    differences: frame_differences(frames), when already known."""
    from scleron.joints.splines import frame_differences, frame_matrix, hat3, se3_exp
    Q, dQ = frame_matrix(frames[0]), np.zeros((4, 4))
    for i, xi in enumerate(differences or frame_differences(frames), start=1):
        b, db = _beta(s - i + 3)
        E = se3_exp(np.asarray(xi) * b)
        twist = np.zeros((4, 4))
        twist[:3, :3], twist[:3, 3] = hat3(xi[:3]), xi[3:]
        Q, dQ = Q @ E, dQ @ E + Q @ E @ twist * db
    return Q, dQ


def _direction(heading, elevation):
    return [math.cos(elevation) * math.cos(heading), math.cos(elevation) * math.sin(heading),
            math.sin(elevation)]


def aligned_frames(points, samples=17, tol=1e-13, max_iterations=100):
    """Control frames at the points whose spline frame keeps its x axis along the tangent of the
    spline's own path. The spline interpolates frames in SE(3), so x axes along the chord
    tangents of the points give the path's tangent only to about 11 degrees here. Each control
    frame is frame_x(d) (y horizontal, z up as far as it goes) and only its direction d
    (heading, elevation) is fitted: Levenberg-Marquardt on the residual x axis x unit tangent at
    `samples` parameters, run to convergence. The tangent is exact (_curve's dQ/ds), so the
    Jacobian (central differences) is accurate to ~1e-10; the 14 unknowns are well determined
    (condition number of J about 16) and the result does not depend on the starting point or on
    round-off to better than 1e-9. (A roll about x is deliberately not an unknown: it is nearly
    free, and a fit with it turned the first frame by almost pi, where the spline's logarithm of
    frame differences is not unique, and stopped at a point that depended on round-off.) The
    x axis then follows the path to about 2.3 degrees."""
    from scleron.joints.splines import frame_differences
    P = np.array(points, dtype=float)
    n = len(P)
    chords = [P[min(i + 1, n - 1)] - P[max(i - 1, 0)] for i in range(n)]
    a = np.array([[math.atan2(c[1], c[0]), math.atan2(c[2], math.hypot(c[0], c[1]))]
                  for c in chords]).ravel()
    params = np.linspace(0.0, n - 3.0, samples)

    def frames_of(a):
        return [{"xyz": P[i], "rotation": frame_x(_direction(a[2 * i], a[2 * i + 1]))}
                for i in range(n)]

    def residual(a):
        fr, out = frames_of(a), []
        differences = frame_differences(fr)
        for s in params:
            Q, dQ = _curve(fr, s, differences)
            out.extend(np.cross(Q[:3, 0], dQ[:3, 3] / np.linalg.norm(dQ[:3, 3])))
        return np.array(out)

    lam, r, h = 1e-3, residual(a), 1e-6
    for _ in range(max_iterations):
        J = np.array([(residual(a + h * e) - residual(a - h * e)) / (2 * h) for e in np.eye(len(a))]).T
        step = np.linalg.solve(J.T @ J + lam * np.eye(len(a)), -J.T @ r)
        r2 = residual(a + step)
        if r2 @ r2 <= r @ r:
            a, r, lam = a + step, r2, max(lam / 3, 1e-12)
            if np.linalg.norm(step) < tol:
                break
        else:
            lam *= 5
    else:
        raise RuntimeError("the spline frame fit did not converge")
    return [{"xyz": [float(c) for c in f["xyz"]], "rotation": f["rotation"].tolist()} for f in frames_of(a)]


def spline_chain(n_tori=4):
    frames = aligned_frames(SPLINE_POINTS)
    # torus 1: its centre on the curve, its axis along the tangent (body x): torus z -> body x
    bodies = [{"name": "torus1", "parent": "world",
               "joint": {"name": "slide", "type": "spline_curve", "frames": frames},
               "mass": 1.0, "inertia": torus_inertia(axis=0)}]
    q = {"slide": 0.9}
    for k in range(2, n_tori + 1):
        joint = {"name": f"contact{k}", "type": "surface_surface",
                 "parent_surface": torus(), "child_surface": torus()}
        if k == 2:
            joint.update(rpy=[0.0, PI2, 0.0])       # torus 1's surface: axis along body x
            u = 0.0                                  # its local +x is body -z: the lowest point
        else:
            u = math.pi if k % 2 else 0.0
        bodies.append({"name": f"torus{k}", "parent": f"torus{k - 1}", "joint": joint,
                       "mass": 1.0, "inertia": torus_inertia(axis=2)})
        q[f"contact{k}"] = [u + 0.1, 0.05 * k, u - 0.1, 0.0]
    model = {"name": "spline_chain", "gravity": [0.0, 0.0, -9.81], "bodies": bodies,
             "initial": {"q": q}}
    header = f"""Spline chain (Si & Guenter Fig. 3; Sueda 2.5.12): a chain of {n_tori} tori whose first torus slides
along a uniform cubic B-spline of 7 control frames (a valley; make_showcase.py tilts the frames so that
the spline frame's x axis follows the tangent of its path to about 2.3 degrees, control frames' y horizontal).
The curve passes through the centre of torus 1, whose main axis lies along the tangent (body x);
tori 2..{n_tori} hang from it by torus-torus surface joints.
The spline parameter s runs over [0, 4] (4 segments). DOF = 1 + 4 * {n_tori - 1} = {1 + 4 * (n_tori - 1)}.
Generated by make_showcase.py."""
    return model, header


# ---- spline surface -------------------------------------------------------------------------------
GRID = 5
SPACING = 1.5
BOWL = 0.25


def _basis_row(t):
    """The 5 cardinal cubic B-spline weights N(t - a + 3) of control rows a = 0..4 at t."""
    def N(x):
        p = lambda y: max(y, 0.0) ** 3
        return (p(x) - 4 * p(x - 1) + 6 * p(x - 2) - 4 * p(x - 3) + p(x - 4)) / 6

    def dN(x):
        p = lambda y: 3 * max(y, 0.0) ** 2
        return (p(x) - 4 * p(x - 1) + 6 * p(x - 2) - 4 * p(x - 3) + p(x - 4)) / 6
    return (np.array([N(t - a + 3) for a in range(GRID)]),
            np.array([dN(t - a + 3) for a in range(GRID)]))


def spline_surface():
    coord = [SPACING * (i - 2) for i in range(GRID)]
    X = [[coord[a]] * GRID for a in range(GRID)]
    Y = [[coord[b] for b in range(GRID)] for _ in range(GRID)]
    Z = [[BOWL * (coord[a] ** 2 + coord[b] ** 2) for b in range(GRID)] for a in range(GRID)]
    # orientation controls: least-squares fit of the tangent-plane angles of the position spline
    # (board normal Rx(a) Ry(b) e_z = surface normal: a = atan(z_y), b = -asin(z_x / |n|))
    rows, ta, tb = [], [], []
    Zm = np.array(Z)
    for u in np.linspace(0.0, 2.0, 17):
        Nu, dNu = _basis_row(u)
        for v in np.linspace(0.0, 2.0, 17):
            Nv, dNv = _basis_row(v)
            zu, zv = dNu @ Zm @ Nv, Nu @ Zm @ dNv
            zx, zy = zu / SPACING, zv / SPACING          # x = SPACING (u - 1), y = SPACING (v - 1)
            n = np.array([-zx, -zy, 1.0]) / math.sqrt(1 + zx * zx + zy * zy)
            ta.append(math.atan2(-n[1], n[2]))
            tb.append(math.asin(max(-1.0, min(1.0, n[0]))))
            rows.append(np.outer(Nu, Nv).ravel())
    A = np.array(rows)
    RX = np.linalg.lstsq(A, np.array(ta), rcond=None)[0].reshape(GRID, GRID)
    RY = np.linalg.lstsq(A, np.array(tb), rcond=None)[0].reshape(GRID, GRID)
    L, W, H = 0.6, 0.4, 0.05
    m = 2.0
    bodies = [
        {"name": "board", "parent": "world",
         "joint": {"name": "slide", "type": "spline_surface",
                   "control": {"x": X, "y": Y, "z": Z, "rx": RX.tolist(), "ry": RY.tolist()}},
         "mass": m, "com": [0.0, 0.0, H / 2],
         "inertia": [m / 12 * (W * W + H * H), m / 12 * (L * L + H * H), m / 12 * (L * L + W * W)]},
        {"name": "rod", "parent": "board",
         "joint": {"name": "hinge", "type": "universal", "xyz": [0.0, 0.0, H]},
         "mass": 0.3, "com": [0.0, 0.0, -0.25], "inertia": [0.3 * 0.25 / 12 + 1e-4, 0.3 * 0.25 / 12 + 1e-4, 1e-4]},
        {"name": "bob", "parent": "rod",
         "joint": {"name": "knee", "type": "revolute", "axis": [1.0, 0.0, 0.0], "xyz": [0.0, 0.0, -0.5]},
         "mass": 0.5, "com": [0.0, 0.0, -0.3], "inertia": [0.4 * 0.5 * 0.1 ** 2] * 3},
    ]
    model = {"name": "spline_surface", "gravity": [0.0, 0.0, -9.81], "bodies": bodies,
             "initial": {"q": {"slide": [1.6, 1.0], "hinge": [0.2, 0.0], "knee": 0.3},
                         "qd": {"slide": [0.0, 0.8]}}}
    header = """Spline surface (Si & Guenter Fig. 4; Sueda 2.5.13): a board (0.6 x 0.4 x 0.05 m, 2 kg) slides on a
bicubic B-spline surface of 5 x 5 control values per component: x, y on a 1.5 m grid, z a bowl
(0.25 (x^2 + y^2) at the control points); the rotation components rx, ry are least-squares fits of
the tangent-plane angles of the position spline, so the board lies in the tangent plane (to a
fraction of a degree). A two-link pendulum (universal joint, then a revolute knee) hangs from the
board. Parameters (u, v) in [0, 2] x [0, 2]; DOF = 2 + 2 + 1 = 5.
Generated by make_showcase.py."""
    return model, header


def texts():
    """File name -> text of every showcase model (what main() writes)."""
    out = {}
    for n in (10, 20):
        model, header = torus_chain(n)
        out[f"tc{n}.yaml"] = render(header, model)
    for name, make in (("windmill", windmill), ("spline_chain", spline_chain),
                       ("spline_surface", spline_surface)):
        model, header = make()
        out[f"{name}.yaml"] = render(header, model)
    return out


def main():
    for name, text in texts().items():
        with open(os.path.join(HERE, name), "w") as fh:
            fh.write(text)
        print("wrote", name)


if __name__ == "__main__":
    main()
