"""Binder builds the course from binder/ (repo2docker), checked without Docker.

`repo2docker --no-build --no-run --debug` prints the Dockerfile it would build;
it needs no Docker daemon and no network.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPO2DOCKER = Path(sys.executable).parent / "jupyter-repo2docker"


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory) -> str:
    if not REPO2DOCKER.exists():
        pytest.fail("jupyter-repo2docker is missing: run `make env` (the `binder` extra)")
    # A clean copy of what is committed: repo2docker reads the whole folder.
    copy = tmp_path_factory.mktemp("repo") / "attnlab"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    result = subprocess.run(
        [str(REPO2DOCKER), "--no-build", "--no-run", "--debug", str(copy)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout + result.stderr


def test_installs_binder_environment_yml(dockerfile):
    assert "binder/environment.yml" in dockerfile
    assert '--file "binder/environment.yml"' in dockerfile


def test_runs_binder_post_build(dockerfile):
    assert "RUN ./binder/postBuild" in dockerfile


def test_ignores_the_top_level_environment_yml(dockerfile):
    # With binder/ present, repo2docker must not install the conda-user file.
    assert '--file "environment.yml"' not in dockerfile


def test_badge_opens_the_start_notebook_in_jupyterlab():
    readme = (ROOT / "README.md").read_text()
    assert (
        "https://mybinder.org/v2/gh/OWNER/REPO/HEAD?urlpath=lab/tree/notebooks/00_start_here.ipynb"
    ) in readme
    assert (ROOT / "notebooks" / "00_start_here.ipynb").exists()


def test_post_build_is_executable():
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111
