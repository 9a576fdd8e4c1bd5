"""The session cache of compiled models (conftest.GeneratedModels): one module per distinct
model and options, never the first model's module for a second model under the same name.
A stand-in for scleron.generate records the builds, so nothing is compiled here."""
import os

import pytest

from conftest import GeneratedModels, example
from scleron.model import Model


def chain(n, mass=1.0):
    m = Model("chain")
    parent = "world"
    for i in range(n):
        m.add_body(f"b{i}", parent, mass=mass, com=(0.5, 0, 0), inertia=(0.1, 0.1, 0.1),
                   xyz=(1.0 if i else 0.0, 0, 0))
        parent = f"b{i}"
    return m


class FakeModule:
    def __init__(self, model, folder, name, options):
        self.nv, self.folder, self.name, self.options = model.nv, folder, name, options


@pytest.fixture
def cache(tmp_path):
    builds = []

    def generate(model, folder, name, **options):
        builds.append(folder)
        return FakeModule(model, folder, name, options)
    c = GeneratedModels(tmp_path, generate)
    c.builds = builds
    return c


def test_same_model_same_name_is_built_once(cache):
    m1, dyn1 = cache(chain(2), "chain")
    m2, dyn2 = cache(chain(2), "chain")          # an equal model, another object
    assert dyn2 is dyn1 and m2 is m1 and len(cache.builds) == 1
    assert os.path.basename(dyn1.folder) == "chain"


def test_different_models_under_one_name_are_not_shared(cache):
    """The bug: the cache was keyed by name only, so the second model got the first's module."""
    _, two = cache(chain(2), "chain")
    _, three = cache(chain(3), "chain")
    _, heavier = cache(chain(2, mass=2.0), "chain")  # same shape, different numbers
    assert (two.nv, three.nv) == (2, 3)
    assert len({two.folder, three.folder, heavier.folder}) == 3 and len(cache.builds) == 3
    assert os.path.basename(two.folder) == "chain"   # the first keeps the plain folder name
    assert cache(chain(3), "chain")[1] is three      # and each is still cached


def test_options_are_part_of_the_key(cache):
    _, default = cache(chain(2), "chain")
    _, method2 = cache(chain(2), "chain", method=2)
    assert method2 is not default and method2.options["method"] == 2
    assert method2.folder != default.folder
    assert cache(chain(2), "chain", method=2)[1] is method2


def test_model_files_are_loaded_and_keyed_by_content(cache):
    model, dyn = cache(example("branched.yaml"), "branched")
    assert dyn.nv == model.nv
    assert cache(example("branched.yaml"), "branched")[1] is dyn
    with pytest.raises(TypeError):
        cache(chain(2), "chain", load_options={"floating": True})
