"""The course as instructors and learners receive it.

    python tools/course.py release      # student versions under release/ (nbgrader)
    python tools/course.py autograde    # grade submitted/, write grades.csv (nbgrader)
    python tools/course.py feedback     # feedback/<student>/<lesson>/*.html (nbgrader)
    python tools/course.py learner      # a learner's own copies under workspace/

The notebooks in notebooks/ are the instructor versions, with solutions and
hidden tests. nbgrader works one assignment per lesson: the assignment id is
the notebook's name (``04_softmax``), its source source/04_softmax/04_softmax.ipynb.

A learner's copy is the same student version nbgrader releases (solutions
replaced by a stub, hidden tests removed, outputs cleared), made here without
nbgrader so that `make lab` and Binder need no grading machinery;
tests/test_grading.py checks that the two agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ROOT / "notebooks"
CODE_STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]
MANIFEST = ".attnlab-copies.json"


def lessons(folder: Path | None = None) -> list[Path]:
    return sorted((folder or LESSONS).glob("[0-9][0-9]_*.ipynb"))


# --- student versions, by nbgrader's rules ---------------------------------------


def _without_region(lines: list[str], begin: str, end: str, stub: list[str] | None) -> list[str]:
    kept, inside = [], False
    for line in lines:
        if begin in line:
            inside = True
            if stub is not None:
                indent = re.match(r"\s*", line).group(0)
                kept += [indent + s for s in stub]
        elif end in line:
            inside = False
        elif not inside:
            kept.append(line)
    return kept


def student_version(nb):
    """What a learner gets: no solutions, no hidden tests, no outputs."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))  # a deep copy
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        lines = cell.source.split("\n")
        lines = _without_region(lines, "BEGIN SOLUTION", "END SOLUTION", CODE_STUB)
        lines = _without_region(lines, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", None)
        cell.source = "\n".join(lines)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        graded = cell.metadata.get("nbgrader", {})
        if graded.get("solution") or graded.get("grade") or graded.get("locked"):
            cell.metadata["deletable"] = False  # as nbgrader: graded cells stay
        if graded.get("locked"):
            cell.metadata["editable"] = False  # the checks cannot be changed
    return nb


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def overwrite_with_student_versions(folder: Path) -> None:
    """Replace the lessons in ``folder`` by their student versions (a throw-away copy
    of the course, as on Binder)."""
    for lesson in lessons(folder):
        nbformat.write(student_version(nbformat.read(lesson, as_version=4)), lesson)


def learner_copies(dest: Path) -> list[str]:
    """Create or update a learner's copies in ``dest``; never overwrite their work.

    A copy the learner has not touched is replaced by a newer version; one they
    have edited is left alone, and the newer version is put beside it as
    ``<lesson>.updated.ipynb``.
    """
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    notes = []
    for lesson in lessons():
        text = nbformat.writes(student_version(nbformat.read(lesson, as_version=4))) + "\n"
        new = _digest(text.encode())
        target = dest / lesson.name
        given = manifest.get(lesson.name)
        if not target.exists():
            target.write_text(text)
            manifest[lesson.name] = new
        elif new == given:
            continue
        elif _digest(target.read_bytes()) == given:
            target.write_text(text)  # untouched by the learner: safe to update
            manifest[lesson.name] = new
            notes.append(f"updated {lesson.name}")
        else:
            beside = target.with_suffix(".updated.ipynb")
            if not beside.exists() or _digest(beside.read_bytes()) != new:
                beside.write_text(text)
                notes.append(f"a newer {lesson.name} is in {beside.name}; yours is unchanged")
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return notes


# --- nbgrader: release and autograde ----------------------------------------------


def nbgrader_api(root: Path, **config):
    try:
        from nbgrader.apps import NbGraderAPI
    except ImportError:
        sys.exit(
            "nbgrader is not installed: grading needs Python 3.11 or newer "
            "and `make env` (the `grading` extra)."
        )
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    # nbgrader runs the `alembic` command to set up its gradebook: make sure the
    # one beside this Python is found even when the environment is not activated.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])

    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    cfg.CourseDirectory.root = str(root)
    for key, value in config.items():
        section, name = key.split("__")
        cfg.merge(Config({section: {name: value}}))
    return NbGraderAPI(config=cfg)


def sync_sources(root: Path, source: Path | None = None) -> list[str]:
    """Copy each lesson to <root>/source/<id>/<id>.ipynb, nbgrader's layout."""
    ids = []
    for lesson in lessons(source):
        target = root / "source" / lesson.stem / lesson.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lesson, target)
        ids.append(lesson.stem)
    return ids


def release(root: Path = ROOT, **config) -> list[str]:
    ids = sync_sources(root)
    api = nbgrader_api(root, **config)
    for assignment in ids:
        result = api.generate_assignment(assignment, force=True, create=True)
        if not result["success"]:
            sys.exit(f"nbgrader could not release {assignment}:\n{result['log']}")
    return ids


def autograde(root: Path = ROOT, **config) -> Path:
    api = nbgrader_api(root, **config)
    submitted = sorted((root / "submitted").glob("*/*/"))
    if not submitted:
        sys.exit(f"nothing to grade: no {root / 'submitted'}/<student>/<assignment>/ folders")
    for folder in submitted:
        student, assignment = folder.parent.name, folder.name
        result = api.autograde(assignment, student, force=True, create=True)
        if not result["success"]:
            sys.exit(f"autograding {student}/{assignment} failed:\n{result['log']}")
    grades = root / "grades.csv"
    subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", str(grades)],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return grades


def feedback(root: Path = ROOT) -> int:
    api = nbgrader_api(root)
    graded = sorted((root / "autograded").glob("*/*/"))
    for folder in graded:
        result = api.generate_feedback(folder.name, folder.parent.name, force=True)
        if not result["success"]:
            sys.exit(f"feedback for {folder.parent.name}/{folder.name} failed:\n{result['log']}")
    return len(graded)


def points(lesson: Path) -> float:
    """The points a lesson's exercises are worth (nbgrader metadata of its check cells)."""
    nb = nbformat.read(lesson, as_version=4)
    return sum(
        c.metadata.get("nbgrader", {}).get("points", 0)
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["release", "autograde", "feedback", "learner"])
    parser.add_argument(
        "--into",
        type=Path,
        default=ROOT / "workspace",
        help="folder for the learner's copies (step `learner`)",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="step `learner`: turn notebooks/ itself into student versions "
        "(for Binder's throw-away copy of the course)",
    )
    args = parser.parse_args(argv)
    if args.step == "release":
        ids = release()
        print(f"released {len(ids)} assignments to release/:")
        for lesson in lessons():
            print(f"  {lesson.stem:28} {points(lesson):g} points")
    elif args.step == "autograde":
        print(f"grades written to {autograde().relative_to(ROOT)}")
    elif args.step == "feedback":
        print(f"feedback written for {feedback()} submissions under feedback/")
    elif args.in_place:
        overwrite_with_student_versions(LESSONS)
    else:
        for note in learner_copies(args.into):
            print(note)


if __name__ == "__main__":
    main()
