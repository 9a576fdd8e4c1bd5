"""pyproject.toml names every package and every folder of templates: setuptools installs only the
packages listed there, so a package left out works in the editable checkout and is missing
from a wheel (the chart writer's backend, scleron.backends.charts, was nearly one)."""
import os

import pytest

from conftest import ROOT

tomllib = pytest.importorskip("tomllib")      # (Python 3.11 on)


def setuptools_table():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def source_packages():
    """Every folder under src/ with an __init__.py, as a dotted name."""
    src = os.path.join(ROOT, "src")
    return {os.path.relpath(d, src).replace(os.sep, ".")
            for d, _, files in os.walk(src) if "__init__.py" in files}


def test_every_package_is_listed():
    assert source_packages() == set(setuptools_table()["packages"])


def test_every_template_folder_is_package_data():
    data = setuptools_table()["package-data"]
    src = os.path.join(ROOT, "src")
    for d, _, files in os.walk(src):
        if os.path.basename(d) == "templates" and any(f.endswith(".j2") for f in files):
            package = os.path.relpath(os.path.dirname(d), src).replace(os.sep, ".")
            assert "templates/*.j2" in data.get(package, []), package
