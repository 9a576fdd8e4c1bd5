"""scleron: linear-time dynamics code generation for multibody systems with general
scleronomic joints (Si & Guenter), compiled to C and loaded back as numpy callables."""
__version__ = "0.1.0"

from .errors import BuildError, ModelError, command_start       # noqa: E402

with command_start():       # the imports below take a second or two (sympy)
    from .model import Model, Transform                          # noqa: E402
    from .simulate import Trajectory, simulate                   # noqa: E402
    from . import charts                                         # noqa: E402,F401  (scleron.charts.derive)
    # the warnings reading a model may give (to filter them: warnings.simplefilter(..., category))
    from .model.model import InertiaWarning                      # noqa: E402,F401
    from .model.urdf import MimicWarning                         # noqa: E402,F401
    from .model.mjcf import MjcfWarning                          # noqa: E402,F401
    from .model.osim import OsimWarning                          # noqa: E402,F401
    from .simulate import SimulationWarning                      # noqa: E402,F401


def load_model(path, **kwargs):
    """Load a model file (.yaml/.yml or .urdf); raises ModelError on bad input."""
    from .model.load import load_model as _load
    return _load(path, **kwargs)


def generate(model, out_dir=None, name=None, **kwargs):
    """Derive + unroll + render + compile + load; see scleron.generate.generate."""
    from .pipeline import generate as _generate
    return _generate(model, out_dir, name, **kwargs)


def load_generated(folder):
    """The dynamics module of a generated folder."""
    from .pipeline import load_generated as _load
    return _load(folder)

