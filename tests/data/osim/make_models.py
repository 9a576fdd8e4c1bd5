"""Writes the .osim test models of tests/test_osim.py with the OpenSim API (pip install opensim).

    python tests/data/osim/make_models.py        # rewrites joints.osim and walker_knee.osim here

joints.osim: a chain through every joint type the reader maps (Free, Pin, Slider, Universal,
Gimbal, Ball, Planar, Ellipsoid, Weld) and a CustomJoint of every function kind on its
translations (Constant, LinearFunction, PolynomialFunction, SimmSpline, MultiplierFunction),
with offset frames off the body origins, non-zero default values and OpenSim's gravity.
walker_knee.osim: Rajagopal's walker knee in miniature: three rotations and two translations of
one coordinate (splines, a multiplier, a polynomial), whose velocity terms Simbody gets wrong.
"""
import os

import opensim as osim

HERE = os.path.dirname(os.path.abspath(__file__))


def vec(*v):
    return osim.Vec3(*v)


def body(model, name, k):
    b = osim.Body(name, 1.0 + 0.3 * k, vec(0.05 * k, -0.1, 0.02),
                  osim.Inertia(0.03 + 0.002 * k, 0.03, 0.025, 0.001, -0.002, 0.0015))
    model.addBody(b)
    return b


def name_coordinates(joint, names, defaults=None):
    for k, n in enumerate(names):
        c = joint.upd_coordinates(k)
        c.setName(n)
        if defaults:
            c.setDefaultValue(defaults[k])


def spline(xs, ys):
    s = osim.SimmSpline()
    for x, y in zip(xs, ys):
        s.addPoint(x, y)
    return s


def multiplier(f, scale):
    m = osim.MultiplierFunction()
    inner = f.clone()
    inner.thisown = False               # the MultiplierFunction owns (and deletes) it
    m.setFunction(inner)
    m.setScale(scale)
    return m


def linear(*coefficients):
    a = osim.ArrayDouble()
    for c in coefficients:
        a.append(c)
    return osim.LinearFunction(a)


def polynomial(*coefficients):
    return osim.PolynomialFunction(osim.Vector(list(coefficients)))


def spatial_transform(axes, coordinates, functions):
    st = osim.SpatialTransform()
    for i in range(6):
        ta = st.updTransformAxis(i)
        ta.setAxis(vec(*axes[i]))
        names = osim.ArrayStr()
        for c in coordinates[i]:
            names.append(c)
        ta.setCoordinateNames(names)
        ta.set_function(functions[i])
    return st


KNEE_X = [-2.0944, -1.74533, -1.39626, -1.0472, -0.698132, -0.349066, -0.174533, 0.197344,
          0.337395, 0.490178, 1.52146, 2.0944]
KNEE_TX = [-0.0032, 0.00179, 0.00411, 0.0041, 0.00212, -0.001, -0.0031, -0.005227, -0.005435,
           -0.005574, -0.005435, -0.00525]
KNEE_Y = [-2.0944, -1.22173, -0.523599, -0.349066, -0.174533, 0.159149, 2.0944]
KNEE_TY = [-0.4226, -0.4082, -0.399, -0.3976, -0.3966, -0.395264, -0.396]


def joints_model():
    m = osim.Model()
    m.setName("joints")
    m.setGravity(vec(0, -9.81, 0))
    g = m.getGround()
    b = [body(m, f"b{k}", k) for k in range(11)]
    P, C = vec(0.1, -0.2, 0.05), vec(0.3, -0.1, 0.2)
    loc, ori = vec(0.02, 0.1, -0.03), vec(-0.1, 0.15, 0.05)
    joints = [
        osim.FreeJoint("free", g, vec(0, 1, 0), vec(0, 0, 0), b[0], loc, ori),
        osim.PinJoint("pin", b[0], vec(0, -0.3, 0), P, b[1], loc, C),
        osim.SliderJoint("slider", b[1], vec(0.1, -0.3, 0), P, b[2], vec(0, 0, 0), vec(0, 0, 0)),
        osim.UniversalJoint("universal", b[2], vec(0, -0.2, 0.1), C, b[3], loc, ori),
        osim.GimbalJoint("gimbal", b[3], vec(0.1, -0.2, 0), P, b[4], loc, C),
        osim.BallJoint("ball", b[4], vec(0, -0.25, 0), ori, b[5], loc, P),
        osim.PlanarJoint("planar", b[5], vec(0, -0.2, 0.1), C, b[6], loc, ori),
        osim.EllipsoidJoint("ellipsoid", b[6], vec(0, -0.3, 0), P, b[7], loc, C,
                            vec(0.05, 0.08, 0.12)),
        osim.WeldJoint("weld", b[7], vec(0.05, -0.1, 0), C, b[8], loc, ori),
    ]
    names = {"free": ["rx", "ry", "rz", "tx", "ty", "tz"], "pin": ["pin_q"],
             "slider": ["slide"], "universal": ["u1", "u2"], "gimbal": ["g1", "g2", "g3"],
             "ball": ["ball1", "ball2", "ball3"], "planar": ["pl_rz", "pl_tx", "pl_ty"],
             "ellipsoid": ["e1", "e2", "e3"], "weld": []}
    defaults = {"pin": [0.3], "ball": [0.1, -0.2, 0.3], "free": [0, 0, 0, 0, 1.2, 0]}
    for j in joints:
        name_coordinates(j, names[j.getName()], defaults.get(j.getName()))
        m.addJoint(j)
    # a CustomJoint of every function kind: the gait models' knee and more
    axes = [(0, 0, 1), (0, 1, 0), (1, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    coords = [["knee"], [], ["hip"], ["knee"], ["knee"], ["hip"]]
    functions = [osim.LinearFunction(1.0, 0.0), osim.Constant(0.0), linear(0.8, 0.1),
                 spline(KNEE_X, KNEE_TX), multiplier(spline(KNEE_Y, KNEE_TY), 1.07),
                 polynomial(0.02, -0.01, 0.03)]
    knee = osim.CustomJoint("custom", b[8], vec(0, -0.3, 0), P, b[9], loc, C,
                            spatial_transform(axes, coords, functions))
    m.addJoint(knee)
    # two coordinates on one axis (a LinearFunction of both) and a constant rotation
    axes2 = [(0.3, 0.5, 0.8), (1, 0, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    coords2 = [["c1", "c2"], [], [], ["c2"], [], []]
    functions2 = [linear(0.7, -0.4, 0.2), osim.Constant(0.25), osim.Constant(0.0),
                  osim.LinearFunction(0.5, 0.01), osim.Constant(0.03), osim.Constant(0.0)]
    two = osim.CustomJoint("two_coords", b[9], vec(0.05, -0.4, 0), ori, b[10], loc, P,
                           spatial_transform(axes2, coords2, functions2))
    m.addJoint(two)
    return m


def walker_knee_model():
    m = osim.Model()
    m.setName("walker_knee")
    m.setGravity(vec(0, -9.81, 0))
    femur, tibia = body(m, "femur", 0), body(m, "tibia", 1)
    hip = osim.PinJoint("hip", m.getGround(), vec(0, 1, 0), vec(0, 0, 0), femur, vec(0, 0.2, 0),
                        vec(0, 0, 0))
    name_coordinates(hip, ["hip_flexion"])
    m.addJoint(hip)
    axes = [(0.99, 0.1, 0.0), (0, 0, 1), (0.1, 0.99, 0.05), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    coords = [["knee_angle"]] * 5 + [[]]
    functions = [spline([0, 0.5, 1.0, 1.5, 2.0, 2.1], [0, 0.02, 0.05, 0.07, 0.08, 0.081]),
                 osim.LinearFunction(1.0, 0.0),
                 multiplier(spline([0, 0.3, 0.9, 1.2, 1.7, 2.1], [0, 0.05, 0.09, 0.1, 0.12, 0.11]),
                            0.9),
                 polynomial(0.004, -0.01, 0.002), spline(KNEE_Y, KNEE_TY), osim.Constant(0.01)]
    knee = osim.CustomJoint("walker_knee", femur, vec(0, -0.2, 0), vec(0.05, -0.1, 0.02),
                            tibia, vec(0.01, 0.3, 0), vec(0, 0.1, 0),
                            spatial_transform(axes, coords, functions))
    m.addJoint(knee)
    return m


if __name__ == "__main__":
    for name, make in (("joints", joints_model), ("walker_knee", walker_knee_model)):
        model = make()
        model.finalizeConnections()
        model.printToXML(os.path.join(HERE, f"{name}.osim"))
        print("wrote", os.path.join(HERE, f"{name}.osim"))
