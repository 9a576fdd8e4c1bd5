"""The program builder's algebra: the recursions evaluated on program nodes (scleron.algebra
has the protocol and the other algebras)."""
from ..algebra import Algebra, Section


class ProgramAlgebra(Algebra):
    """Builds a Program: functions and helper calls become nodes; sections label the nodes
    (pass, joint, body) for the comments of the generated code and for `scleron show`."""

    def __init__(self, prog):
        self.prog = prog

    def function(self, name, x):
        return self.prog.unary(name, x)

    def call(self, helper, x):
        return self.prog.call(helper, x)

    def section(self, text, pass_=None, body=None):
        self.prog.set_section(Section(text, pass_ or text, body))

    def current_section(self):
        return self.prog.section

    def restore_section(self, section):
        self.prog.set_section(section)
