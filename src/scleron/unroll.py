"""Unrolls the recursions for one model into straight-line programs (S&G Method I).

The recursion code of scleron.dynamics is run on program Vars instead of floats: every
scalar operation becomes a node of a Program, with the model's constants folded in.
"""
from .dynamics import recursions
from .dynamics.tree import Tree
from .program import Program, ProgramAlgebra

# name -> (recursion, input arrays, output array, output size)
FUNCTIONS = {
    "forward_dynamics": ("q qd tau", "qdd"),
    "inverse_dynamics": ("q qd qdd", "tau"),
    "mass_matrix": ("q", "M"),
    "bias_forces": ("q qd", "h"),
}


def unroll(tree, function):
    """The Program of one function for one tree."""
    if not isinstance(tree, Tree):
        tree = Tree(tree)
    inputs, output = FUNCTIONS[function]
    prog = Program(f"{tree.name}_{function}")
    alg = ProgramAlgebra(prog)
    args = [prog.input_vector(name, tree.nv) for name in inputs.split()]
    result = getattr(recursions, function)(tree, alg, *args)
    if function == "mass_matrix":
        result = [x for row in result for x in row]        # row-major nv x nv
    prog.set_outputs(output, result)
    return prog
