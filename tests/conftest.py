"""Shared fixtures: generated models are compiled once per test session and cached by name."""
import os

import numpy as np
import pytest

import scleron

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
def generated(build_dir):
    """generated(model_or_path, name) -> the loaded module, compiled once per session."""
    cache = {}

    def get(model, name, **kw):
        if name not in cache:
            if isinstance(model, (str, os.PathLike)):
                model = scleron.load_model(model, **kw)
            cache[name] = (model, scleron.generate(model, os.path.join(build_dir, name), name))
        return cache[name]
    return get


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
