"""scleron: linear-time dynamics code generation for multibody systems with general
scleronomic joints (Si & Guenter), compiled to C and loaded back as numpy callables."""
__version__ = "0.1.0"

from .errors import BuildError, ModelError, command_start       # noqa: E402

with command_start():       # the imports below take a second or two (sympy)
    from .model import Model, Transform                          # noqa: E402
    from .simulate import Trajectory, simulate                   # noqa: E402
    from . import charts                                  # noqa: E402,F401  (scleron.charts.derive)
    from . import lie                                     # noqa: E402,F401  (log6, exp6, Jlog6)
    # the warnings reading a model may give (to filter them: warnings.simplefilter(..., category))
    from .model.model import InertiaWarning                      # noqa: E402,F401
    from .model.urdf import MimicWarning                         # noqa: E402,F401
    from .model.mjcf import MjcfWarning                          # noqa: E402,F401
    from .model.osim import OsimWarning                          # noqa: E402,F401
    from .simulate import SimulationWarning                      # noqa: E402,F401
    from .simulate import SimulationError                        # noqa: E402,F401
    from .dynamics.checks import SingularConfigurationWarning     # noqa: E402,F401


def load_model(path, **kwargs):
    """Load a model file; returns the Model with fixed joints merged, validated. The format
    follows the file: .yaml/.yml (scleron's own, docs/model-format.md), .urdf, .xml/.mjcf (URDF
    or MJCF by the root element; MJCF needs the `mujoco` extra), .osim (OpenSim 4).

    Options (the command line's of the same names; each applies to the formats named):
    floating=True (URDF: a quaternion free flyer at the root link, Pinocchio's layout;
    floating="free" the Euler-angle free joint), inertia="physical" | "relaxed" (URDF, MJCF,
    .osim: docs/inertia-checks.md), mimic="independent" | "couple" (URDF, docs/mimic.md),
    damping="ignore" | "read" (URDF <dynamics damping>), order="pinocchio" | "file" (URDF:
    siblings by joint name or in file order), merge_fixed=False (the tree with its fixed joints,
    not validated as a whole). Bad input raises ModelError naming the file and the element."""
    from .model.load import load_model as _load
    return _load(path, **kwargs)


def generate(model, out_dir=None, name=None, **kwargs):
    """Derives, unrolls, renders and compiles a model's dynamics into out_dir (default
    generated/<name>) and returns the generated module (as `scleron codegen`, cached: an
    unchanged model with the same options is not rebuilt). model: a Model or a model file's path;
    name: the module and C prefix (default the model's). Keyword options (scleron.pipeline.
    generate has them all): functions=[...] (names or aliases; "+name" first adds to the
    defaults; "all": every function the model can have, above 24 coordinates
    without the frames' derivatives and the fext derivatives that grow with the frames),
    frames=[...] (of the frame functions), wrench_frames=[...] (fext's rows; default: frames),
    cflags="..." or a list (default -Os -march=native ...),
    compile=False (sources only), force=True, mass_matrix="auto" | "unrolled" | "loop",
    method=1 | 2, progress=print, cuda=True. Raises ModelError or BuildError in one line."""
    from .pipeline import generate as _generate
    return _generate(model, out_dir, name, **kwargs)


def load_generated(folder):
    """The dynamics module of a folder `scleron codegen` or `generate` wrote (its functions,
    FUNCTIONS, frame_names, ...; `.cuda` where it has CUDA code), loaded under a private name,
    so that two folders of one model name load side by side; needs no sympy. A folder written
    with --no-compile is compiled at this first load. Loading a folder whose files have not
    changed since gives the module it gave (its state, e.g. an attribute set on it, shared);
    a regenerated folder gives a new one. FileNotFoundError where the folder is missing or not
    a generated one."""
    from .pipeline import load_generated as _load
    return _load(folder)

