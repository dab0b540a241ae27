"""The course environment is pinned once (constraints.txt); the conda and Binder
files must carry the same versions, and the package itself only lower bounds."""

import re

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
BINDER_PYTHON = "3.11"
# conda-forge splits matplotlib; its library lives in matplotlib-base.
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib"}


def lock_for(python: str) -> dict[str, str]:
    pins = {}
    env = {"python_version": python, "python_full_version": python + ".0"}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        req = Requirement(line)
        if req.marker is None or Marker(str(req.marker)).evaluate(env):
            (spec,) = req.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(req.name)] = spec.version
    return pins


def conda_pins(path: Path) -> dict[str, str]:
    pins = {}
    for dep in yaml.safe_load(path.read_text())["dependencies"]:
        if isinstance(dep, str) and "=" in dep:
            name, version = re.split(r"=+", dep, maxsplit=1)
            pins[canonicalize_name(CONDA_TO_PYPI.get(name, name))] = version
    return pins


@pytest.mark.parametrize("path", ["environment.yml", "binder/environment.yml"])
def test_conda_pins_match_the_lock(path):
    pins = conda_pins(ROOT / path)
    assert pins.pop("python") == BINDER_PYTHON
    lock = lock_for(BINDER_PYTHON)
    mismatched = {
        name: (version, lock.get(name))
        for name, version in pins.items()
        if lock.get(name) != version
    }
    assert not mismatched, f"{path} disagrees with constraints.txt: {mismatched}"


def test_binder_pins_lab_and_widgets_together():
    pins = conda_pins(ROOT / "binder/environment.yml")
    assert pins["jupyterlab"].startswith("4.")
    assert pins["ipywidgets"].startswith("8.")
    assert pins["jupyterlab-widgets"].startswith("3.")  # the extension of ipywidgets 8


def test_binder_post_build_installs_the_package_without_deps():
    text = (ROOT / "binder/postBuild").read_text()
    assert "python -m pip install --no-deps -e ." in text
    assert "-e ." not in (ROOT / "binder/environment.yml").read_text()


def test_package_declares_lower_bounds_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    for text in reqs:
        for spec in Requirement(text).specifier:
            assert spec.operator in (">=", "<", ">"), f"exact pin in pyproject.toml: {text}"


def test_every_direct_dependency_is_locked_for_every_python():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [Requirement(t) for t in project["dependencies"]]
    for extra in ("lab", "test", "grading", "browser", "binder"):
        names += [Requirement(t) for t in project["optional-dependencies"][extra]]
    for python in ("3.10", "3.11", "3.12", "3.13"):
        lock = lock_for(python)
        env = {"python_version": python, "python_full_version": python + ".0"}
        for req in names:
            if req.marker is None or Marker(str(req.marker)).evaluate(env):
                assert canonicalize_name(req.name) in lock, (python, req.name)
                assert lock[canonicalize_name(req.name)] in req.specifier, (python, req)
