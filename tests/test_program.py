"""The straight-line program: folding, hash-consing, dead code, and what unrolling makes of
simple joints (a hinge about z contributes one entry to S^T J S; sin/cos computed once)."""
import math

import numpy as np

from scleron.dynamics.tree import Tree
from scleron.model import Model
from scleron.program import Program
from scleron.unroll import unroll


def test_constants_fold_and_identities_vanish():
    p = Program()
    x, y = p.input_vector("q", 2)
    assert 2.0 * 3.0 == 6.0                       # plain floats stay plain
    assert (x * 0.0) == 0.0 and (0.0 * x) == 0.0
    assert (x * 1.0) is x and (x + 0.0) is x and (0.0 + x) is x and (x - 0.0) is x
    assert -(-x) is x
    assert (x - x) == 0.0
    assert (2.0 * (3.0 * x)) is (6.0 * x)          # constant factors merge, then hash-cons
    assert (x + y) is (y + x) and (x * y) is (y * x)
    assert (x - (-y)) is (x + y)
    assert ((-x) * (-y)) is (x * y)


def test_hash_consing_shares_subexpressions():
    p = Program()
    q = p.input_vector("q", 1)[0]
    a = p.unary("sin", q) * p.unary("cos", q)
    b = p.unary("cos", q) * p.unary("sin", q)
    assert a is b
    p.set_outputs("out", [a, b, a + b])
    ops = [p.ops[i] for i in p.live()]
    assert ops.count("sin") == 1 and ops.count("cos") == 1 and ops.count("mul") == 1


def test_dead_code_is_removed_and_evaluation_matches():
    p = Program()
    x, y = p.input_vector("q", 2)
    unused = p.unary("exp", x * y)                 # noqa: F841 never reaches an output
    out = p.unary("sin", x) * y + 3.0
    p.set_outputs("r", [out])
    assert "exp" not in [p.ops[i] for i in p.live()]
    assert math.isclose(p.evaluate({"q": [0.3, 2.0]})["r"][0], math.sin(0.3) * 2.0 + 3.0)


def _one_hinge(axis=(0, 0, 1)):
    m = Model("one", gravity=(0, 0, 0))
    m.add_body("b", mass=2.0, com=(0.3, 0.1, 0.0), inertia=(0.1, 0.2, 0.3), axis=axis)
    return m


def test_hinge_about_z_mass_matrix_is_one_constant_entry():
    """S = e3 makes S^T J S the single entry J[2][2] = Izz + m (cx^2 + cy^2): no arithmetic."""
    prog = unroll(Tree(_one_hinge()), "mass_matrix")
    (_, _, value), = prog.outputs
    assert not hasattr(value, "op"), "M of one z-hinge must fold to a number"
    assert math.isclose(value, 0.3 + 2.0 * (0.3 ** 2 + 0.1 ** 2))
    assert prog.op_counts().total == 0


def test_sin_and_cos_of_each_coordinate_once(rng):
    m = Model("chain")
    parent = "world"
    for i in range(5):
        m.add_body(f"b{i}", parent, mass=1.0, com=(0.5, 0, 0), inertia=(0.01, 0.1, 0.1),
                   xyz=(1.0 if i else 0.0, 0, 0), rpy=(math.pi / 2 if i else 0.0, 0, 0))
        parent = f"b{i}"
    for fn in ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces"):
        prog = unroll(Tree(m), fn)
        live_ops = [prog.ops[i] for i in prog.live()]
        assert live_ops.count("sin") <= 5 and live_ops.count("cos") <= 5, fn
        # the first joint's angle cannot matter to a chain hanging from a vertical axis... but
        # the program must still evaluate to the reference on numbers
        vals = {"q": rng.normal(size=5), "qd": rng.normal(size=5), "tau": rng.normal(size=5),
                "qdd": rng.normal(size=5)}
        from scleron.dynamics import recursions
        from scleron.dynamics.algebra import FloatAlgebra
        ref = getattr(recursions, fn)(Tree(m), FloatAlgebra(),
                                      *[vals[a] for a in {"forward_dynamics": "q qd tau",
                                                          "inverse_dynamics": "q qd qdd",
                                                          "mass_matrix": "q",
                                                          "bias_forces": "q qd"}[fn].split()])
        got = list(prog.evaluate(vals).values())[0]
        np.testing.assert_allclose(np.ravel(got), np.ravel(ref), rtol=1e-12, atol=1e-12)


def test_rpy_quarter_turn_folds_to_a_permutation():
    """Rx(pi/2) from rpy is cleaned to exact 0/1/-1, so the placement costs no multiplications."""
    tree = Tree(_one_hinge())
    m = Model("two")
    m.add_body("a", mass=1.0, inertia=(1, 1, 1))
    m.add_body("b", "a", mass=1.0, inertia=(1, 1, 1), rpy=(math.pi / 2, 0, 0), xyz=(1, 0, 0))
    tree = Tree(m)
    R = tree.bodies[1].placement[0]
    assert sorted(abs(x) for row in R for x in row) == [0.0] * 6 + [1.0] * 3
