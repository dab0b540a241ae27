"""``pip install attnlab``: the wheel, installed where no repository is around it.

The wheel (``python -m build``) must carry the learners' versions of the lessons;
``attnlab lab`` copies them into ./attnlab-lessons/ (never overwriting a lesson
the learner edited) and, without JupyterLab, says how to install it; and a
lesson copied that way runs under nbval once its exercise is answered. The
metadata must pass ``twine check``. Run with ``make test-wheel``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LESSON = "00_start_here.ipynb"


def run(*command, cwd=None, env=None, check=True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True
    )
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", out, REPO)
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (found,) = dist.glob("attnlab-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A fresh venv, outside the repository, with the wheel (no `lab` extra) and nbval."""
    home = tmp_path_factory.mktemp("learner")
    env_dir = home / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # The course's pins, so that pip takes what its cache already holds.
    run(python, "-m", "pip", "install", "--quiet", "-c", REPO / "constraints.txt", wheel)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    return home, env_dir / "bin", env


def test_the_wheel_carries_the_learners_lessons(wheel):
    lessons = sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    with zipfile.ZipFile(wheel) as archive:
        packaged = {
            Path(n).name: n for n in archive.namelist() if n.startswith("attnlab/notebooks/")
        }
        assert sorted(packaged) == lessons
        for name, member in packaged.items():
            text = archive.read(member).decode()
            assert "BEGIN SOLUTION" not in text, f"{name}: a solution is in the wheel"
            assert "BEGIN HIDDEN TESTS" not in text, f"{name}: hidden tests are in the wheel"
            cells = json.loads(text)["cells"]
            assert not any(c.get("outputs") for c in cells), f"{name}: saved outputs"
        entry_points = next(n for n in archive.namelist() if n.endswith("entry_points.txt"))
        assert "attnlab = attnlab.course:main" in archive.read(entry_points).decode()


def test_metadata_is_ready_for_publishing(dist):
    done = run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()))
    assert done.stdout.count("PASSED") == 2, done.stdout  # the wheel and the sdist
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as archive:
        metadata = archive.read(
            next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        ).decode()
    for field in ("Classifier: ", "Project-URL: ", "License-Expression: MIT", "License-File: "):
        assert field in metadata, f"{field!r} missing from the wheel's metadata"
    assert "Description-Content-Type: text/markdown" in metadata


def test_attnlab_lab_copies_the_lessons_and_keeps_edits(installed):
    home, bin_dir, env = installed
    done = run(bin_dir / "attnlab", "lab", cwd=home, env=env, check=False)
    # No JupyterLab without the `lab` extra: the lessons are copied, and it says how.
    assert done.returncode == 1
    assert 'pip install "attnlab[lab]"' in done.stderr
    folder = home / "attnlab-lessons"
    copied = sorted(p.name for p in folder.glob("*.ipynb"))
    assert copied == sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    lesson = json.loads((folder / LESSON).read_text())
    assert any("raise NotImplementedError()" in "".join(c["source"]) for c in lesson["cells"])

    # An edited lesson is never overwritten, even by `python -m attnlab lab`.
    edited = (folder / LESSON).read_text().replace("# YOUR CODE HERE", "return 1.0  # my try", 1)
    (folder / LESSON).write_text(edited)
    run(bin_dir / "python", "-m", "attnlab", "lab", "--no-start", cwd=home, env=env)
    assert (folder / LESSON).read_text() == edited


def test_a_copied_lesson_runs_under_nbval(installed):
    home, bin_dir, env = installed
    run(
        bin_dir / "python",
        "-m",
        "pip",
        "install",
        "--quiet",
        "-c",
        REPO / "constraints.txt",
        "nbval",
        "ipykernel",
        env=env,
    )
    work = home / "nbval"
    run(bin_dir / "attnlab", "lab", work, "--no-start", cwd=home, env=env)
    # The learner answers the exercise: the instructor's solution goes into the answer cell.
    instructor = {
        c["metadata"]["nbgrader"]["grade_id"]: c
        for c in json.loads((REPO / "notebooks" / LESSON).read_text())["cells"]
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }
    path = work / LESSON
    learner = json.loads(path.read_text())
    answered = 0
    for cell in learner["cells"]:
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if grading.get("solution"):
            lines = "".join(instructor[grading["grade_id"]]["source"]).split("\n")
            cell["source"] = "\n".join(line for line in lines if "SOLUTION" not in line)
            answered += 1
    assert answered >= 1
    path.write_text(json.dumps(learner, indent=1))
    # `import attnlab` must find the installed wheel, not a repository.
    where = run(
        bin_dir / "python", "-c", "import attnlab; print(attnlab.__file__)", cwd=work, env=env
    )
    assert str(REPO) not in where.stdout and "site-packages" in where.stdout
    done = run(
        bin_dir / "python",
        "-m",
        "pytest",
        "--nbval-lax",
        "-p",
        "no:cacheprovider",
        "--confcutdir",
        work,
        "-q",
        LESSON,
        cwd=work,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
