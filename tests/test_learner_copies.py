"""`make lab` gives learners their own exercise versions and never overwrites their work."""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402


@pytest.fixture
def lessons(tmp_path, monkeypatch):
    """A small course of two lessons in a temporary folder."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("00_start_here.ipynb", "04_softmax.ipynb"):
        (folder / name).write_bytes((ROOT / "notebooks" / name).read_bytes())
    monkeypatch.setattr(course, "LESSONS", folder)
    return folder


def edit_source(path: Path, marker: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += f"\n\n{marker}"
    nbformat.write(nb, path)


def test_first_run_copies_student_versions(lessons, tmp_path):
    workspace = tmp_path / "workspace"
    course.learner_copies(workspace)
    copy = nbformat.read(workspace / "04_softmax.ipynb", as_version=4)
    text = "\n".join(c.source for c in copy.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text
    assert all(not c.outputs for c in copy.cells if c.cell_type == "code")


def test_untouched_copy_is_updated(lessons, tmp_path):
    workspace = tmp_path / "workspace"
    course.learner_copies(workspace)
    edit_source(lessons / "04_softmax.ipynb", "A clarification from the authors.")
    notes = course.learner_copies(workspace)
    assert "A clarification" in (workspace / "04_softmax.ipynb").read_text()
    assert notes == ["updated 04_softmax.ipynb"]
    assert not (workspace / "04_softmax.updated.ipynb").exists()


def test_edited_copy_is_never_overwritten(lessons, tmp_path):
    workspace = tmp_path / "workspace"
    course.learner_copies(workspace)
    edit_source(workspace / "04_softmax.ipynb", "my notes")
    mine = (workspace / "04_softmax.ipynb").read_bytes()
    assert course.learner_copies(workspace) == []  # nothing new: nothing to say
    edit_source(lessons / "04_softmax.ipynb", "A clarification from the authors.")
    notes = course.learner_copies(workspace)
    assert (workspace / "04_softmax.ipynb").read_bytes() == mine
    beside = workspace / "04_softmax.updated.ipynb"
    assert "A clarification" in beside.read_text()
    assert any("04_softmax.updated.ipynb" in n for n in notes)
    assert course.learner_copies(workspace) == []  # said once, not on every start


def test_deleted_copy_comes_back(lessons, tmp_path):
    workspace = tmp_path / "workspace"
    course.learner_copies(workspace)
    (workspace / "00_start_here.ipynb").unlink()
    course.learner_copies(workspace)
    assert (workspace / "00_start_here.ipynb").exists()


def test_binder_conversion_in_place(lessons):
    course.overwrite_with_student_versions(lessons)
    nb = nbformat.read(lessons / "04_softmax.ipynb", as_version=4)
    assert "BEGIN SOLUTION" not in "\n".join(c.source for c in nb.cells)
