"""Straight-line programs: SSA temporaries, constant folding, hash-consing, operation counts.

Nothing here knows about robots: a Program is a list of scalar assignments built by evaluating
ordinary arithmetic on Var objects (see program.program), in an algebra that follows the
protocol of scleron.algebra."""
from ..algebra import (Algebra, Dual, DualAlgebra, FloatAlgebra, Helper, MATH_FUNCTIONS,
                       Section, seeded)
from .algebra import ProgramAlgebra
from .program import OpCounts, Program, Var
