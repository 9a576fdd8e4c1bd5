"""Fuzz: valid-looking but degenerate models get a ModelError naming the body or joint at fault,
never a crash, a numpy warning, a hang or a silent NaN (issue 14).

The models are built with the Python API (Model.add_body, which runs the loaders' checks) and
generated with pipeline.build_sources: derivation, the checks of the dynamics, unrolling and
rendering, without the compiler and writing nothing, so an example takes a fraction of a
second. A few examples are compiled as well and their results checked finite.

What the strategy draws (a few degenerate bodies among plain ones, so that deep chains are
reached): chains and trees of 1..20 bodies on random joint types and placements; massless
leaves and subtrees; point masses, some on their joint's axis; coaxial revolute, prismatic,
helical or cylindrical pairs through a massless body; custom joints with a coordinate that
moves nothing and composites of more than 6 coordinates; proper Euler charts, in gimbal lock at
the initial q = 0; masses, inertias, lengths and gravity from 1e-300 to 1e300; zero-length, tiny
and huge axes; nan and inf in any number.

Every other exception (ZeroDivisionError, KeyError, sympy's, a RuntimeWarning turned error)
fails the test with hypothesis's minimal example; each defect the fuzzing found has a plain
regression test at the end of this file, on that minimal model.
"""
import contextlib
import math
import signal
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st

import scleron
from scleron.dynamics.checks import SingularConfigurationWarning, ldl_pivots
from scleron.errors import ModelError
from scleron.joints.registry import EULER_CHARTS
from scleron.pipeline import build_sources

JOINTS = ["revolute", "prismatic", "spherical", "ball_exp", "free", "free_flyer", "spherical_quat",
          "helical", "cylindrical", "planar", "universal"]
AXIAL = ["revolute", "prismatic", "helical", "cylindrical"]       # joints with one axis
# a few fixed axes, so that sympy derives each joint once per session, not once per example
AXES = [(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, -1.0), (1.0, 1.0, 0.0),
        (0.3, -0.5, 0.8)]
BAD_AXES = [(0.0, 0.0, 0.0), (1e-300, 0.0, 0.0), (1e-13, 0.0, 0.0), (1e-11, 0.0, 0.0),
            (1e300, 1e300, 0.0), (1e308, 0.0, 0.0), (math.nan, 0.0, 1.0), (0.0, math.inf, 0.0)]
NONFINITE = [math.nan, math.inf, -math.inf]
EXTREME = [1e-300, 1e-200, 1e-100, 1e-20, 1e20, 1e100, 1e200, 1e300]
LENGTHS = [1e-200, 1e-100, 1e-20, 1e20, 1e100, 1e154, 1e155, 1e200]
GRAVITIES = [(0.0, 0.0, -9.81), (0.0, 0.0, 0.0), (1.0, -2.0, -9.81)]
BAD_GRAVITIES = [(0.0, 0.0, -1e300), (1e200, 0.0, 0.0), (0.0, 1e-300, 0.0), (math.nan, 0.0, 0.0),
                 (0.0, 0.0, -math.inf)]
PER_EXAMPLE_S = 120        # a hang: no example of at most 20 bodies comes near this

# the degenerate kinds of body: a model has a few of them among plain bodies, so that most
# examples get past the checks of add_body and many past those of generation
SPECIAL = ["massless", "point", "on_axis", "coaxial", "idle", "composite", "extreme", "bad_axis",
           "far", "nonfinite", "gimbal", "gravity"]
# the plain bodies' Euler charts are Tait-Bryan ones, regular at q = 0; the proper Euler charts,
# in gimbal lock there, make the special kind "gimbal"
TAIT_BRYAN = [c for c in EULER_CHARTS if len(set(c)) == 3]
PROPER_EULER = ["ZYZ", "XZX"]
MAX_SPECIAL = 3

# ---- strategies ----------------------------------------------------------------------------------
unit = st.floats(-1.0, 1.0, allow_nan=False)
vec3 = st.tuples(unit, unit, unit)
positive = st.floats(0.05, 5.0)


@st.composite
def box_inertia(draw, mass):
    """The rotational inertia of a solid box of this mass: always physically possible."""
    x, y, z = draw(positive), draw(positive), draw(positive)
    return (mass / 12 * (y * y + z * z), mass / 12 * (x * x + z * z), mass / 12 * (x * x + y * y))


@st.composite
def joint_of(draw, jtype, charts=TAIT_BRYAN):
    """Parameters of a joint of this type: a fixed axis, a chart (among `charts`) or a pitch."""
    params = {}
    if jtype in AXIAL:
        params["axis"] = draw(st.sampled_from(AXES))
    if jtype == "planar":
        params["normal"] = draw(st.sampled_from(AXES))
    if jtype in ("spherical", "universal", "free"):
        params["chart"] = draw(st.sampled_from(charts))
    if jtype == "helical":
        params["pitch"] = draw(st.sampled_from([0.0, 0.1, -2.0, 1e-300, 1e300]))
    return params


@st.composite
def plain_body(draw, charts=TAIT_BRYAN):
    jtype = draw(st.sampled_from(JOINTS))
    mass = draw(positive)
    return {"joint": jtype, "params": draw(joint_of(jtype, charts)), "mass": mass,
            "com": draw(vec3), "inertia": draw(box_inertia(mass)),
            "xyz": draw(vec3), "rpy": draw(st.tuples(*[st.floats(-math.pi, math.pi)] * 3))}


def massless(body):
    return dict(body, mass=0.0, com=(0.0, 0.0, 0.0), inertia=(0.0, 0.0, 0.0))


@st.composite
def body_specs(draw, kind, charts=TAIT_BRYAN):
    """One body, or a few (a coaxial pair), of this kind: a list of add_body keyword dicts
    without name and parent (the first hangs where the caller says, the others each from the
    one before)."""
    body = draw(plain_body(charts))
    if kind == "massless":
        return [massless(body)]
    if kind == "point":
        return [dict(body, inertia=(0.0, 0.0, 0.0))]
    if kind == "on_axis":                   # a point mass on its own joint's axis
        jtype = draw(st.sampled_from(AXIAL))
        axis = draw(st.sampled_from(AXES))
        s = draw(unit)
        return [dict(body, joint=jtype, params=dict(draw(joint_of(jtype)), axis=axis),
                     com=tuple(s * a for a in axis), inertia=(0.0, 0.0, 0.0))]
    if kind == "coaxial":                   # two joints about one axis through a massless body
        jtype = draw(st.sampled_from(AXIAL))
        axis = draw(st.sampled_from(AXES))
        first = dict(massless(body), joint=jtype, params=dict(draw(joint_of(jtype)), axis=axis))
        child = draw(plain_body(charts))
        s = draw(unit)
        second = dict(child, joint=draw(st.sampled_from([jtype, "revolute", "prismatic"])),
                      params={"axis": axis}, xyz=tuple(s * a for a in axis), rpy=(0.0, 0.0, 0.0))
        return [first, second]
    if kind == "idle":                      # a custom coordinate that appears nowhere
        translation = draw(st.sampled_from([["a", "0", "0"], ["0", "0", "0"], ["a", "a", "0"]]))
        rotation = draw(st.sampled_from([None, [["z", "a"]], [["x", "0*b"]]]))
        params = {"coordinates": ["a", "b"], "translation": translation}
        if rotation:
            params["rotation"] = rotation
        return [dict(body, joint="custom", params=params)]
    if kind == "composite":                 # 3..9 coordinates: over 6, S has dependent columns
        parts = draw(st.lists(st.sampled_from(["spherical", "translational", "planar", "revolute"]),
                              min_size=3, max_size=3))
        return [dict(body, joint="composite",
                     params={"parts": [{"type": p, "params": {}} for p in parts]})]
    if kind == "extreme":                   # masses and inertias from 1e-300 to 1e300
        m = draw(st.sampled_from(EXTREME))
        i = draw(st.sampled_from(EXTREME + [0.0]))
        return [dict(body, mass=m, inertia=(i, i, i))]
    if kind == "bad_axis":
        key = "normal" if body["joint"] == "planar" else "axis"
        jtype = body["joint"] if key == "normal" else draw(st.sampled_from(AXIAL))
        return [dict(body, joint=jtype, params=dict(draw(joint_of(jtype)),
                                                    **{key: draw(st.sampled_from(BAD_AXES))}))]
    if kind == "far":                       # lengths from 1e-200 to 1e200
        s = draw(st.sampled_from(LENGTHS)) * draw(st.sampled_from([1.0, -1.0]))
        which = draw(st.sampled_from(["xyz", "com", "both"]))
        out = dict(body)
        if which in ("xyz", "both"):
            out["xyz"] = (s, 0.0, 0.5 * s)
        if which in ("com", "both"):
            out["com"] = (0.0, s, 0.0)
        return [out]
    if kind == "gimbal":                    # a proper Euler chart: M singular at q = 0
        jtype = draw(st.sampled_from(["spherical", "free"]))
        return [dict(body, joint=jtype, params={"chart": draw(st.sampled_from(PROPER_EULER))})]
    if kind == "nonfinite":                 # nan or inf in one number of the body
        key = draw(st.sampled_from(["mass", "com", "inertia", "xyz", "rpy"]))
        bad = draw(st.sampled_from(NONFINITE))
        value = bad if key == "mass" else (bad,) + tuple(body[key][1:])
        return [dict(body, **{key: value})]
    return [body]


@st.composite
def models(draw, max_bodies=20, charts=TAIT_BRYAN, max_special=MAX_SPECIAL):
    """(gravity, bodies): each body a dict of add_body keywords with its name and parent.
    Plain bodies, and up to max_special degenerate ones at random places (none: shrinking
    removes them first), one of which may be a bad gravity. `charts`: the charts of the plain
    chart joints (each chart is one more sympy derivation per joint type, about 0.4 s)."""
    count = draw(st.integers(1, max_bodies))
    special = draw(st.dictionaries(st.integers(0, count - 1), st.sampled_from(SPECIAL),
                                   max_size=max_special))
    gravity = draw(st.sampled_from(BAD_GRAVITIES if "gravity" in special.values() else GRAVITIES))
    bodies = []
    while len(bodies) < count:
        group = draw(body_specs(special.get(len(bodies), "plain"), charts))
        # a chain (the body before) or a tree (any earlier body, or the world)
        parent = "world" if not bodies else draw(st.sampled_from(
            [bodies[-1]["name"]] * 3 + [b["name"] for b in bodies] + ["world"]))
        for spec in group[:count - len(bodies)]:
            name = f"b{len(bodies)}"
            bodies.append(dict(spec, name=name, parent=parent, joint_name=f"j{len(bodies)}"))
            parent = name
    return gravity, bodies


# ---- running one example -------------------------------------------------------------------------
class Hang(BaseException):
    """An example ran past PER_EXAMPLE_S (BaseException: no `except Exception` swallows it)."""


@contextlib.contextmanager
def strict(seconds=PER_EXAMPLE_S):
    """Warnings (numpy's RuntimeWarnings above all) become errors, and a hang an exception."""
    def alarm(signum, frame):
        raise Hang(f"no result after {seconds} s")
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def build(example):
    gravity, bodies = example
    model = scleron.Model("fuzz", gravity=gravity)
    for spec in bodies:
        spec = dict(spec)
        params = spec.pop("params")
        model.add_body(spec.pop("name"), spec.pop("parent"), **spec, **params)
    return model


def assert_names_element(error, example):
    """The error names a body or joint of the model (as data, or quoted in its message), or
    the gravity when that is what is wrong."""
    _, bodies = example
    names = {b["name"] for b in bodies} | {b["joint_name"] for b in bodies}
    text = str(error)
    named = ({getattr(error, "body", None), getattr(error, "joint", None)} & names
             or any(f"'{n}'" in text for n in names) or "gravity" in text)
    assert named, f"ModelError names no body, joint or gravity: {text}"


def generate_or_refuse(example, functions=None):
    """The model, if it builds and generates; None after a ModelError naming its element, or
    after the SingularConfigurationWarning naming a joint of a model singular at its initial
    configuration alone (scleron.dynamics.checks.check_regular_at_start). Any other exception,
    a warning or a hang propagates and fails the test."""
    with strict():
        try:
            model = build(example)
        except ModelError as e:
            assert_names_element(e, example)
            event("refused while building")
            return None
        try:
            build_sources(model, functions=functions)
        except ModelError as e:
            assert_names_element(e, example)
            event("refused at generation")
            return None
        except SingularConfigurationWarning as w:   # regular elsewhere, singular at q0 (a massless
            assert_names_element(w, example)        # link between coinciding joints): said, named
            event("warned: singular at the initial configuration")
            return None
    event(f"generated ({len(model.bodies) // 5 * 5}+ bodies)")
    return model


# what the default-suite fuzz unrolls and renders: forward dynamics (every pass of the
# recursions), the mass matrix, a configuration function and a frame function, a quarter of the
# time of everything; the slow variant generates every function
FUZZ_FUNCTIONS = ("forward_dynamics", "mass_matrix", "integrate", "frame_jacobians")

# the default suite's Tait-Bryan charts (the proper Euler ones come with the kind "gimbal")
FEW_CHARTS = ("XYZ", "ZYX")
COMMON = dict(deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=15, **COMMON)
@given(models(charts=FEW_CHARTS))
def test_degenerate_models_give_a_named_model_error(example):
    generate_or_refuse(example, FUZZ_FUNCTIONS)


@pytest.mark.slow
@settings(max_examples=1000, **COMMON)
@given(models())
def test_degenerate_models_give_a_named_model_error_many(example):
    generate_or_refuse(example)


# ---- compiled: finite results at the neutral and at random configurations ------------------------
COMPILED = ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces", "kinetic_energy",
            "potential_energy", "center_of_mass", "integrate")


def assert_finite_at(dyn, q, rng):
    qd, tau = rng.uniform(-1, 1, dyn.nv), rng.uniform(-1, 1, dyn.nv)
    values = {"forward_dynamics": dyn.forward_dynamics(q, qd, tau),
              "inverse_dynamics": dyn.inverse_dynamics(q, qd, tau),
              "mass_matrix": dyn.mass_matrix(q), "bias_forces": dyn.bias_forces(q, qd),
              "kinetic_energy": dyn.kinetic_energy(q, qd),
              "potential_energy": dyn.potential_energy(q),
              "center_of_mass": dyn.center_of_mass(q)}
    for name, value in values.items():
        assert np.all(np.isfinite(value)), f"{name} is not finite at q = {list(q)}: {value}"


# a refused model is discarded (assume): at most one degenerate body per model keeps that rare
# enough, and hypothesis's complaint about filtering is off
COMPILED_SETTINGS = dict(COMMON, suppress_health_check=COMMON["suppress_health_check"]
                         + [HealthCheck.filter_too_much])


def compile_and_check(example, seed):
    model = generate_or_refuse(example, COMPILED)
    assume(model is not None)                 # a refused model has nothing to compile
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp, strict():
        dyn = scleron.generate(model, tmp, functions=COMPILED, compile=True)
        q0 = np.asarray(dyn.neutral(), dtype=float)
        assert_finite_at(dyn, q0, rng)
        # random q on the manifold, within half a radian of the neutral (away from the Euler
        # charts' singular angles, which make M singular legitimately)
        q = dyn.integrate(q0, rng.uniform(-0.5, 0.5, dyn.nv), 1.0)
        assert_finite_at(dyn, np.asarray(q, dtype=float), rng)


@settings(max_examples=2, **COMPILED_SETTINGS)
@given(models(max_bodies=4, charts=FEW_CHARTS, max_special=1), st.integers(0, 2**32 - 1))
def test_compiled_degenerate_models_are_finite(example, seed):
    compile_and_check(example, seed)


@pytest.mark.slow
@settings(max_examples=25, **COMPILED_SETTINGS)
@given(models(max_bodies=12, max_special=1), st.integers(0, 2**32 - 1))
def test_compiled_degenerate_models_are_finite_many(example, seed):
    compile_and_check(example, seed)


# ---- regression tests: the minimal models of the defects the fuzzing found -----------------------
def refusal(model, functions=("forward_dynamics", "center_of_mass")):
    """The ModelError generating the model raises, with every warning an error."""
    with warnings.catch_warnings(), pytest.raises(ModelError) as e:
        warnings.simplefilter("error")
        build_sources(model, functions=functions)
    return e.value


def test_a_huge_axis_is_normalised_without_overflow():
    """|(1e300, 1e300, 0)|^2 overflowed (a numpy RuntimeWarning) and the axis became (0, 0, 0)."""
    m = scleron.Model("huge_axis")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.add_body("a", axis=(1e300, 1e300, 0.0), com=(0.0, 0.1, 0.0))
        with pytest.raises(ModelError, match="joint 'tiny_joint': axis has zero length"):
            m.add_body("tiny", axis=(1e-300, 0.0, 0.0))
    np.testing.assert_allclose(m.joints[0].params["axis"], (2 ** -0.5, 2 ** -0.5, 0.0))


def test_a_huge_urdf_axis_is_read_without_a_warning(tmp_path):
    """The URDF reader's own zero-length check squared (1e300, 1e300, 0) (numpy's overflow
    RuntimeWarning, an outside tester); the axis is normalised as in Model.add_body."""
    path = tmp_path / "huge.urdf"
    path.write_text('<robot name="h"><link name="a"/><link name="b"><inertial><mass value="1"/>'
                    '<origin xyz="0 0.1 0"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" '
                    'ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute">'
                    '<parent link="a"/><child link="b"/><axis xyz="1e300 1e300 0"/>'
                    '<limit effort="1" velocity="1"/></joint></robot>')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = scleron.load_model(str(path))
    np.testing.assert_allclose(m.joints[0].params["axis"], (2 ** -0.5, 2 ** -0.5, 0.0))


def test_an_inertia_about_the_origin_that_overflows_is_named():
    """m |c|^2 of a centre of mass 1e155 m away overflowed in check_inertia (RuntimeWarning)."""
    with warnings.catch_warnings(), pytest.raises(ModelError) as e:
        warnings.simplefilter("error")
        scleron.Model("far").add_body("a", mass=1.0, com=(1e155, 0.0, 0.0))
    assert e.value.body == "a" and "overflows double precision" in str(e.value)


def test_huge_mass_matrices_are_factored_without_overflow():
    """The LDL^T of a mass matrix of 1e200 overflowed (RuntimeWarning): a body 1e100 m out on a
    ball joint. Its pivots are 1e200 apart, so generation refuses the model, naming the joint."""
    m = scleron.Model("far")
    m.add_body("a", joint="spherical")
    m.add_body("b", "a", xyz=(1e100, 0.0, 0.0))
    assert refusal(m).joint == "b_joint"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d, scale = ldl_pivots([[1e300, 1e300], [1e300, 2e300]])
    assert scale == 2e300 and d == pytest.approx([1e300, 1e300])


def test_masses_that_round_to_zero_are_named():
    """A mass of 1e-300 kg is positive (validation accepts it) but the tree rounds it to 0:
    center_of_mass divided by a total mass of 0 (ZeroDivisionError while unrolling)."""
    m = scleron.Model("tiny")
    m.add_body("a", mass=1e-300, inertia=(1e20, 1e20, 1e20), com=(0.1, 0.0, 0.0))
    e = refusal(m)
    assert e.body == "a" and "every moving body's mass is 0 or below 1e-100 kg" in str(e)
    # a mass of 0 on the only moving body (relaxed inertia checks accept the file): the message
    # said only "rescale the units" (an outside tester)
    m = scleron.Model("massless")
    m.inertia_checks = "relaxed"
    m.add_body("a", mass=0.0, inertia=(0.1, 0.1, 0.1), com=(0.0, 0.0, 0.0))
    with warnings.catch_warnings(), pytest.raises(ModelError) as e:
        warnings.simplefilter("ignore")
        build_sources(m, functions=("forward_dynamics",))
    assert e.value.body == "a" and "give a moving body its mass" in str(e.value)


def test_a_joint_redundant_with_a_free_flyer_is_named():
    """A revolute joint about x carrying a free flyer: M is singular at every q, but the pivot
    that vanishes is the flyer's angle about x at q = 0 and its angle about z elsewhere, so
    no single coordinate vanished everywhere and the check passed; the articulated-body
    recursion then divided by a constant 0 while unrolling (ZeroDivisionError)."""
    m = scleron.Model("redundant")
    m.add_body("b0", axis=(1.0, 0.0, 0.0), mass=0.0, inertia=(0.0, 0.0, 0.0))
    m.add_body("b1", "b0", joint="free_flyer", mass=1.0, inertia=(1.0, 1.0, 1.0))
    e = refusal(m)
    assert e.joint == "b1_joint" and "the mass matrix is singular" in str(e)


def test_an_overflow_away_from_the_initial_configuration_is_named():
    """The dynamics were checked finite at q = 0 only: t = 1e200 a^2 is 0 there and overflows
    M at every other a, and the overflowing samples passed for regular (check_nonsingular
    returned at the regular q = 0)."""
    m = scleron.Model("slide")
    m.add_body("a", joint="custom", joint_name="slide", coordinates=["a"],
               translation=["1e200*a*a", "0", "0"], rotation=[["z", "a"]])
    e = refusal(m)
    assert e.body == "a" and "the dynamics overflow double precision at q = [" in str(e)


def test_a_model_singular_at_its_initial_configuration_is_named():
    """A free joint in a proper Euler chart is in gimbal lock at q = 0: M is singular there only,
    so the model passed every check and its compiled forward dynamics was NaN at the neutral
    configuration. Refused naming the joint; generated with an initial configuration away
    from the lock."""
    m = scleron.Model("gimbal")
    m.add_body("a", joint="free", chart="XYX", com=(0.1, 0.2, 0.3), inertia=(1.0, 2.0, 2.5))
    e = refusal(m)
    assert e.joint == "a_joint" and "singular at the initial configuration q = 0" in str(e)
    m.q0 = [0.0, 0.0, 0.0, 0.3, 0.4, 0.5]
    build_sources(m, functions=["forward_dynamics"])
