"""Errors raised on bad input. The lowest layer: everything may import it."""


class ModelError(ValueError):
    """A model file or model description is invalid.

    The message names the file, the element (body, joint, line where known) and the problem,
    so that the command line can print it as one line. `body` and `joint` name the model
    element the problem is about, for code that adds context (a loader adding the line of a
    body): it reads these, never the wording of the message.
    """

    def __init__(self, problem, *, source=None, element=None, line=None, body=None, joint=None):
        self.problem = problem
        self.source = source
        self.element = element
        self.line = line
        self.body = body
        self.joint = joint
        super().__init__(self._format())

    def _format(self):
        where = []
        if self.source:
            where.append(str(self.source) + (f":{self.line}" if self.line else ""))
        if self.element:
            where.append(str(self.element))
        return (": ".join(where) + ": " if where else "") + str(self.problem)


class BuildError(RuntimeError):
    """The C compiler is missing or failed; the message says what to install or where the log is."""
