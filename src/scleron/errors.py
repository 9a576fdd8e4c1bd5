"""Errors raised on bad input. The lowest layer: everything may import it."""
import contextlib
import difflib
import os
import sys


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

    def but(self, **changes):
        """The same error with some of its fields changed (a caller adding the function's name
        to the problem, or the line it knows)."""
        fields = dict(problem=self.problem, source=self.source, element=self.element,
                      line=self.line, body=self.body, joint=self.joint)
        fields.update(changes)
        return ModelError(fields.pop("problem"), **fields)

    def _format(self):
        where = []
        if self.source:
            where.append(str(self.source) + (f":{self.line}" if self.line else ""))
        if self.element:                    # (a name's NUL or right-to-left override escaped,
            where.append(printable(str(self.element)))   # as the problem's own quoting does)
        return (": ".join(where) + ": " if where else "") + str(self.problem)


class BuildError(RuntimeError):
    """The C compiler is missing or failed; the message says what to install or where the log is."""


class ForeignTargetError(BuildError):
    """The folder is built, for a CPU this machine is not (--march): it does not load here."""


def name_list(names, most=20, width=60):
    """Names for a one-line message: the first `most`, each cut to `width` characters, and how
    many there are in all (a model may have a thousand frames, a name may be 5000 characters)."""
    names = list(names)
    shown = [n if len(n) <= width else n[:width] + "..." for n in map(str, names[:most])]
    return ", ".join(shown) + (f", ... ({len(names)} in all)" if len(names) > most else "")


def one_line(exc):
    """An exception (or a warning) as the one line a command prints: whitespace runs (newlines
    in names read from files included) made one space, and every other character that is not
    printable (an escape sequence, a right-to-left override, a zero-width space from a URDF's
    &#x202E;) written as its escape, so that a model's names cannot forge or reorder the
    terminal's output."""
    return printable(" ".join(str(exc).split())) or type(exc).__name__


def printable(text):
    """Text with each character that is not printable written as its escape (\\x00, \\u202e)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def close_names(name, names, most=1):
    """'did you mean ...? ' for the names that differ from `name` only in letter case, else
    the closest few by spelling (difflib); '' when none is close."""
    names = [str(n) for n in names]
    same = [n for n in names if n.lower() == str(name).lower()]
    close = same or difflib.get_close_matches(str(name), names, n=most, cutoff=0.75)
    return f"did you mean {' or '.join(map(repr, close))}? " if close else ""


def short_name(name, width=200):
    """A name the user gave, cut for a message."""
    name = str(name)
    return name if len(name) <= width else name[:width] + "..."


@contextlib.contextmanager
def command_start():
    """Around the imports of the `scleron` command's start (a second or two: sympy): Ctrl-C
    there ends the command as it does later, one line and exit status 130, not a traceback. In
    any other program that imports scleron the KeyboardInterrupt goes on as usual."""
    try:
        yield
    except KeyboardInterrupt:
        argv = list(getattr(sys, "orig_argv", []))       # python [-X dev -u ...] -m scleron
        command = (os.path.splitext(os.path.basename(sys.argv[0] or ""))[0] == "scleron"
                   or ("-m" in argv and argv[argv.index("-m") + 1:][:1] == ["scleron"]))
        if not command:
            raise
        print("scleron: interrupted", file=sys.stderr)
        sys.exit(130)
