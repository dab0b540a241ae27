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
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # attnlab from this clone, installed or not
from attnlab import course as _lessons  # noqa: E402

LESSONS = ROOT / "notebooks"


def lessons(folder: Path | None = None) -> list[Path]:
    return sorted((folder or LESSONS).glob("[0-9][0-9]_*.ipynb"))


# --- student versions, by nbgrader's rules ---------------------------------------
# One implementation, in the package, so that `attnlab lab` from the wheel and
# `make lab` from a clone give learners the same copies.


def student_version(nb):
    """What a learner gets: no solutions, no hidden tests, no outputs."""
    return nbformat.from_dict(_lessons.student_version(nb))


def overwrite_with_student_versions(folder: Path) -> None:
    """Replace the lessons in ``folder`` by their student versions (a throw-away copy
    of the course, as on Binder)."""
    for lesson in lessons(folder):
        nbformat.write(student_version(nbformat.read(lesson, as_version=4)), lesson)


def learner_copies(dest: Path) -> list[str]:
    """Create or update a learner's copies in ``dest``; never overwrite their work
    (see attnlab.course.learner_copies)."""
    return _lessons.learner_copies(dest, lessons())


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
