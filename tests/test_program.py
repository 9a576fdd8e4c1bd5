"""The straight-line program: folding, hash-consing, dead code, and what unrolling makes of
simple joints (a hinge about z contributes one entry to S^T J S; sin/cos computed once)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scleron.dynamics.tree import Tree
from scleron.model import Model
from scleron.program import Helper, Program, Var
from scleron.unroll import unroll


def test_operations_on_constants_fold_to_floats_and_make_no_nodes():
    p = Program()
    x, y = p.input_vector("q", 2)
    n = len(p.ops)
    folded = [(p.add(2.0, 3), 5.0), (p.sub(2.0, 3.5), -1.5), (p.mul(2.0, 3.0), 6.0),
              (p.mul(-1, 0.25), -0.25), (p.div(1.0, 4.0), 0.25), (p.neg(2.5), -2.5),
              (p.power(3.0, 3), 27.0), (p.power(2.0, -2), 0.25), (p.power(x, 0), 1.0),
              (p.unary("sin", 0.5), math.sin(0.5)), (p.unary("sqrt", 2.0), math.sqrt(2.0)),
              (p.unary("atan", 1.0), math.pi / 4),
              # through Var arithmetic: a constant subexpression folds before it meets x
              ((x * 0.0) + 2.0 * 3.0, 6.0), (x - x + (y - y) * x, 0.0), (0.0 / x, 0.0)]
    for got, want in folded:
        assert type(got) is float and got == want, (got, want)
    assert len(p.ops) == n, "folding constants must not add nodes"
    assert (x / 4.0) is (0.25 * x) and (x / 1.0) is x and x ** 1 is x and (x / (-y)) is -(x / y)
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


def test_helper_calls_fold_on_constants_and_evaluate():
    sq = Helper("scl_test_sq", lambda v: v * v + 1.0, ("return x * x + 1.0;",))
    p = Program()
    x, = p.input_vector("q", 1)
    assert p.call(sq, 2.0) == 5.0
    c = p.call(sq, x)
    assert p.call(sq, x) is c and c.op == "call:scl_test_sq" and p.used_helpers() == []
    p.set_outputs("r", [c * x])
    assert p.used_helpers() == [sq]
    assert p.evaluate({"q": [3.0]}) == {"r": [30.0]}
    with pytest.raises(ValueError):
        p.call(Helper("scl_test_sq", abs, ("return fabs(x);",)), x)


def test_outputs_keep_their_order_and_constant_outputs():
    p = Program()
    x, y = p.input_vector("q", 2)
    p.set_outputs("a", [y, 2.0, x * y])
    p.set_outputs("b", [x - x])
    assert p.inputs == {"q": 2}
    assert p.evaluate({"q": [2.0, 5.0]}) == {"a": [5.0, 2.0, 10.0], "b": [0.0]}


# ---- random expressions: the program computes what Python computes --------------------------
NQ = 3
CONSTANTS = [0.0, 1.0, -1.0, 2.0, 0.5, -3.0]
GENERIC = [0.7310585786, -1.3862943611, 2.0943951024]


def expressions(depth=5):
    leaf = st.one_of(st.tuples(st.just("q"), st.integers(0, NQ - 1)),
                     st.tuples(st.just("c"), st.sampled_from(CONSTANTS)),
                     st.tuples(st.just("c"), st.floats(-4, 4, allow_nan=False)))

    def extend(inner):
        return st.one_of(st.tuples(st.sampled_from(["add", "sub", "mul", "div"]), inner, inner),
                         st.tuples(st.sampled_from(["neg", "sin", "cos", "atan", "exp"]), inner),
                         st.tuples(st.just("pow"), inner, st.integers(-2, 4)))
    return st.recursive(leaf, extend, max_leaves=12)


def build(e, q, unary, big):
    """The value of expression e with q[i] for the inputs and unary(fn, v) for functions, on
    floats or on Vars alike; divisions by (2 + sin d), so never by zero. big collects the
    magnitude of every value (for a tolerance: folding may reorder a rounding)."""
    op = e[0]
    if op == "q":
        v = q[e[1]]
    elif op == "c":
        v = e[1]
    elif op == "pow":
        v = build(e[1], q, unary, big)
        v = (unary("cos", v) + 1.5) ** e[2]           # a base in [0.5, 2.5]
    elif len(e) == 3:
        a, b = build(e[1], q, unary, big), build(e[2], q, unary, big)
        v = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
             "div": lambda: a / (2.0 + unary("sin", b))}[op]()
    else:
        a = build(e[1], q, unary, big)
        if op == "neg":
            v = -a
        elif op == "exp":
            v = unary("exp", unary("sin", a))         # bounded
        else:
            v = unary(op, a)
    if not isinstance(v, Var):
        big.append(abs(v))
    return v


@settings(max_examples=150, deadline=None)
@given(st.lists(expressions(), min_size=1, max_size=4),
       st.lists(st.floats(-3, 3, allow_nan=False), min_size=NQ, max_size=NQ))
def test_evaluate_equals_python_arithmetic(exprs, qs):
    check_program(exprs, qs)


def check_program(exprs, qs):
    """Build exprs on a Program twice (hash-consed), evaluate it at qs and at GENERIC against
    Python floats, and check live() and op_counts()."""
    p = Program()
    q = p.input_vector("q", NQ)
    outs = [build(e, q, p.unary, []) for e in exprs]
    nodes = len(p.ops)
    again = [build(e, q, p.unary, []) for e in exprs]
    for a, b in zip(outs, again):                     # hash-consing: the same nodes again
        assert a is b if isinstance(a, Var) else a == b
    assert len(p.ops) == nodes, "rebuilding an expression must reuse every node"
    p.set_outputs("r", outs)
    for point in (qs, GENERIC):       # hypothesis likes 0.0 and 1.0, which hide wrong signs
        got = p.evaluate({"q": point})["r"]
        for e, g in zip(exprs, got):
            big = []
            want = build(e, point, lambda fn, v: {"sin": math.sin, "cos": math.cos,
                                                  "atan": math.atan, "exp": math.exp}[fn](v), big)
            assert math.isclose(g, want, rel_tol=1e-9, abs_tol=1e-9 * (1 + max(big))), (e, g, want)
    # every live node is reachable from an output and appears after its arguments
    live = p.live()
    assert live == sorted(set(live))
    for i in live:
        if p.ops[i] != "in":
            assert all(a.id < i and a.id in live for a in p.args[i] if isinstance(a, Var))
    # op_counts counts the live nodes only, by kind
    c = p.op_counts()
    assert c.total == sum(p.ops[i] != "in" for i in live)


def random_expression(rng, depth):
    """A full random expression tree (hypothesis prefers small ones, which rarely reach rules
    such as a - (-b) -> a + b or -(a - b) -> b - a)."""
    if depth == 0 or rng.random() < 0.15:
        return ("q", int(rng.integers(NQ))) if rng.random() < 0.7 else \
            ("c", float(rng.choice(CONSTANTS)) if rng.random() < 0.5 else float(rng.normal()))
    kind = rng.random()
    if kind < 0.6:
        op = str(rng.choice(["add", "sub", "mul", "div"]))
        return (op, random_expression(rng, depth - 1), random_expression(rng, depth - 1))
    if kind < 0.9:
        op = str(rng.choice(["neg", "neg", "sin", "cos", "atan", "exp"]))
        return (op, random_expression(rng, depth - 1))
    return ("pow", random_expression(rng, depth - 1), int(rng.integers(-2, 5)))


def test_evaluate_equals_python_arithmetic_on_larger_expressions(rng):
    exprs = [random_expression(rng, 6) for _ in range(60)]
    for start in range(0, len(exprs), 4):
        check_program(exprs[start:start + 4], list(rng.normal(size=NQ)))


@settings(max_examples=100, deadline=None)
@given(expressions(), expressions())
def test_dead_branches_cost_nothing(kept, dead):
    """Nodes built but not reaching an output are left out of live() and of the counts."""
    p = Program()
    q = p.input_vector("q", NQ)
    out = build(kept, q, p.unary, [])
    p.set_outputs("r", [out])
    before = (p.live(), p.op_counts().total)
    build(dead, q, p.unary, [])
    assert (p.live(), p.op_counts().total) == before


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


def test_a_chunk_takes_the_arrays_it_only_clears():
    """A chunk whose only use of an output is zeroing part of it (scl_zero(Minv + 9, 3), as
    CStatements.zero_run writes, or a memset) takes that array as a parameter: it was left out,
    and gcc stopped at "'Minv' undeclared" (an outside reviewer's model: two free roots with
    children)."""
    from scleron.backends.c.printer import Chunk, _own_parameters
    pointers = [("Minv", "double *restrict Minv"), ("Minvx", "double *restrict Minvx"),
                ("w", "double *restrict w")]
    for clear in ("scl_zero(Minv + 9, 3);", "memset(Minv + 9, 0, 3 * sizeof(double));"):
        chunk = Chunk("part1", lines=[clear, "w[0] = 1.0;"])
        _own_parameters(chunk, pointers)
        assert chunk.params == "double *restrict Minv, double *restrict w" and chunk.args == "Minv, w"
