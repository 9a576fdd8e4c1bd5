"""Straight-line programs: SSA temporaries, constant folding, hash-consing, operation counts.

Nothing here knows about robots: a Program is a list of scalar assignments built by evaluating
ordinary arithmetic on Var objects (see program.program)."""
from .program import OpCounts, Program, ProgramAlgebra, Var
