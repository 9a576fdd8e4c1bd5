"""Shared fixtures: generated models are compiled once per test run, cached by name and content
(and shared by the run's xdist workers)."""
import contextlib
import hashlib
import json
import os

import numpy as np
import pytest

import scleron
import scleron.model

# The suite builds its models at -O0 (a tenth of the compile time; SCLERON_OPT=s runs it on the
# shipped flags): the C it checks is the same, only the compiler's work differs. The tests of
# the default flags themselves remove it (monkeypatch.delenv), and the benchmarks never see it.
os.environ.setdefault("SCLERON_OPT", "0")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def example(name):
    return os.path.join(EXAMPLES, name)


ROBOTS = {"panda": "panda_description/urdf/panda.urdf",
          "ur5": "ur_description/urdf/ur5_robot.urdf"}


def robots_dir():
    """example-robot-data's robots/ folder (the pip package installs it under cmeel.prefix)."""
    import site
    import sysconfig
    for base in [sysconfig.get_paths()["purelib"], *site.getsitepackages()]:
        path = os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(path):
            return path
    return None


def robot_urdf(which):
    """Path of a URDF shipped by example-robot-data (a test extra: pip install .[test])."""
    base = robots_dir()
    if base is None:
        pytest.fail("example-robot-data is not installed: pip install -e .[test]")
    return os.path.join(base, ROBOTS[which])


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def shared_build_dir(tmp_path_factory):
    """One folder for all the xdist workers of this run (their base folders' parent is the run's):
    a model one worker compiled, the others load (a cache hit of scleron.generate)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp("generated-shared")
    path = tmp_path_factory.getbasetemp().parent / "generated-shared"
    path.mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def folder_lock(folder):
    """Held while one process builds or loads `folder`: the other workers wait for it, then find
    it built (POSIX flock; elsewhere no lock, and a second build of the same folder is harmless)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(folder + ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# what most tests call; a test of other functions names them (functions=[...], or None for all),
# which keeps the suite's compile time where it was before the frame functions
DYNAMICS = ("forward_dynamics", "inverse_dynamics", "mass_matrix", "bias_forces", "static_forces",
            "kinetic_energy", "potential_energy", "center_of_mass")


class GeneratedModels:
    """Compiled models shared by the tests of one session, keyed by what they are.

    get(model_or_path, name, load_options=None, **generate_options) -> (model, module).
    The key is the name plus a hash of the model's content (scleron.model.model_to_dict) and
    the options, so a second request for the same model and options under the same name
    returns the first module, while a different model (or options) under a name already used
    is built in a folder of its own (name-<hash>): never silently the first one's module."""

    def __init__(self, build_dir, generate=None, shared=False):
        self.build_dir = str(build_dir)
        self.generate = generate
        self.shared = shared     # build_dir shared by processes: folders name-<hash>, locked
        self.cache = {}          # (name, digest) -> (model, module)
        self.folders = {}        # name -> digest of the model built in folder `name`

    @staticmethod
    def digest(model, options):
        blob = json.dumps({"model": scleron.model.model_to_dict(model), "options": options},
                          sort_keys=True, default=repr)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def folder(self, name, digest):
        if self.shared:                     # another process may own the plain name
            return os.path.join(self.build_dir, f"{name}-{digest}")
        owner = self.folders.setdefault(name, digest)
        return os.path.join(self.build_dir, name if owner == digest else f"{name}-{digest}")

    def __call__(self, model, name, load_options=None, **generate_options):
        generate_options.setdefault("functions", DYNAMICS)    # functions=None: all of them
        if isinstance(model, (str, os.PathLike)):
            model = scleron.load_model(model, **(load_options or {}))
        elif load_options:
            raise TypeError("load_options apply to a model file, not to a Model")
        options = {**generate_options, "SCLERON_OPT": os.environ.get("SCLERON_OPT")}
        key = (name, self.digest(model, options))
        if key not in self.cache:
            generate = self.generate or scleron.generate
            folder = self.folder(*key)
            with folder_lock(folder) if self.shared else contextlib.nullcontext():
                module = generate(model, folder, name, **generate_options)
            self.cache[key] = (model, module)
        return self.cache[key]


@pytest.fixture(scope="session")
def generated(shared_build_dir):
    """generated(model_or_path, name, load_options=None, **generate_options) -> (model, module),
    compiled once per run per distinct model and options (GeneratedModels)."""
    return GeneratedModels(shared_build_dir, shared=True)


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
