"""The learners' copies of the lessons, and the ``attnlab lab`` command.

    attnlab lab              # copies the lessons into ./attnlab-lessons/, starts JupyterLab
    python -m attnlab lab    # the same

A learner's copy of a lesson is its student version, made by nbgrader's rules
without nbgrader: every ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region
becomes ``# YOUR CODE HERE`` / ``raise NotImplementedError()``, hidden tests are
removed, outputs are cleared, graded cells cannot be deleted and the checks
cannot be edited. A copy the learner has edited is never overwritten: a newer
version goes beside it as ``<lesson>.updated.ipynb``.

The same code serves ``make lab`` (tools/course.py, from notebooks/), the wheel
(whose build puts the student versions in ``attnlab/notebooks/``) and the
in-browser site. It needs the standard library only, so that the wheel's build
can load it before NumPy is installed.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

CODE_STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]
MANIFEST = ".attnlab-copies.json"
LESSON_GLOB = "[0-9][0-9]_*.ipynb"
DEFAULT_FOLDER = "attnlab-lessons"
FIRST_LESSON = "00_start_here.ipynb"

# Inside the wheel: the student versions, written there by the build (setup.py).
PACKAGED = Path(__file__).resolve().parent / "notebooks"
# In a clone of the repository (an editable install): the instructor versions.
REPOSITORY = Path(__file__).resolve().parents[1] / "notebooks"


def lesson_paths(folder: Path) -> list[Path]:
    """The lessons in ``folder``, in course order (``00_…`` to ``07_…``)."""
    return sorted(Path(folder).glob(LESSON_GLOB))


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _without_region(lines: list[str], begin: str, end: str, stub: list[str] | None) -> list[str]:
    kept, inside = [], False
    for line in lines:
        if begin in line:
            inside = True
            if stub is not None:
                indent = line[: len(line) - len(line.lstrip())]
                kept += [indent + s for s in stub]
        elif end in line:
            inside = False
        elif not inside:
            kept.append(line)
    return kept


def student_version(nb: dict, keep_outputs: bool = False) -> dict:
    """What a learner gets: no solutions, no hidden tests, no outputs.

    ``nb`` is a notebook as a JSON dict (nbformat 4); it is not changed. With
    ``keep_outputs``, the saved outputs stay (the book of the course shows them),
    except in the answer and check cells, whose outputs came from the solution.
    """
    nb = copy.deepcopy(dict(nb))
    nb.setdefault("metadata", {}).pop("widgets", None)
    for cell in nb.get("cells", []):
        lines = _source(cell).split("\n")
        lines = _without_region(lines, "BEGIN SOLUTION", "END SOLUTION", CODE_STUB)
        lines = _without_region(lines, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", None)
        cell["source"] = "\n".join(lines)
        metadata = cell.setdefault("metadata", {})
        graded = metadata.get("nbgrader", {})
        if cell.get("cell_type") == "code":
            answer_or_check = graded.get("solution") or graded.get("grade")
            if not keep_outputs or answer_or_check:
                cell["outputs"] = []
                cell["execution_count"] = None
        if graded.get("solution") or graded.get("grade") or graded.get("locked"):
            metadata["deletable"] = False  # as nbgrader: graded cells stay
        if graded.get("locked"):
            metadata["editable"] = False  # the checks cannot be changed
    return nb


def notebook_text(nb: dict) -> str:
    """A notebook as saved on disk (nbformat's layout: sorted keys, indent 1)."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def read_notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_student_versions(source: Path, dest: Path) -> list[Path]:
    """Write the student version of every lesson in ``source`` into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for lesson in lesson_paths(source):
        target = dest / lesson.name
        target.write_text(notebook_text(student_version(read_notebook(lesson))), encoding="utf-8")
        written.append(target)
    return written


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def learner_copies(dest: Path, lessons: Iterable[Path]) -> list[str]:
    """Create or update a learner's copies of ``lessons`` in ``dest``; never overwrite their work.

    A copy the learner has not touched is replaced by a newer version; one they
    have edited is left alone, and the newer version is put beside it as
    ``<lesson>.updated.ipynb`` (once: not again on every start). Returns what
    changed, one line each, for the learner to read.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    notes = []
    for lesson in lessons:
        text = notebook_text(student_version(read_notebook(lesson)))
        new = _digest(text.encode())
        target = dest / lesson.name
        given = manifest.get(lesson.name)
        if not target.exists():
            target.write_text(text, encoding="utf-8")
            manifest[lesson.name] = new
        elif new == given:
            continue
        elif _digest(target.read_bytes()) == given:
            target.write_text(text, encoding="utf-8")  # untouched by the learner: safe to update
            manifest[lesson.name] = new
            notes.append(f"updated {lesson.name}")
        else:
            beside = target.with_suffix(".updated.ipynb")
            if not beside.exists() or _digest(beside.read_bytes()) != new:
                beside.write_text(text, encoding="utf-8")
                notes.append(f"a newer {lesson.name} is in {beside.name}; yours is unchanged")
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return notes


def bundled_lessons() -> list[Path]:
    """The lessons this installation carries: the wheel's, or a clone's notebooks/."""
    for folder in (PACKAGED, REPOSITORY):
        found = lesson_paths(folder)
        if found:
            return found
    raise FileNotFoundError(
        f"no lessons found in {PACKAGED} or {REPOSITORY}: reinstall attnlab with "
        "`pip install --force-reinstall attnlab`"
    )


def _has_jupyterlab() -> bool:
    import importlib.util

    return importlib.util.find_spec("jupyterlab") is not None


def lab_command(folder: Path, port: int | None = None) -> list[str]:
    """The command that starts JupyterLab on ``folder`` at the first lesson."""
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={folder}",
        f"--LabApp.default_url=/lab/tree/{FIRST_LESSON}",
    ]
    if port is not None:
        command.append(f"--ServerApp.port={port}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # Jupyter refuses root otherwise (containers, CI)
    return command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="attnlab",
        description="attnlab, an interactive course on scaled dot-product attention.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    lab = commands.add_parser(
        "lab", help="copy the lessons into a folder of your own and open them in JupyterLab"
    )
    lab.add_argument(
        "folder",
        nargs="?",
        type=Path,
        default=Path(DEFAULT_FOLDER),
        help=f"where your copies of the lessons go (default: ./{DEFAULT_FOLDER})",
    )
    lab.add_argument("--port", type=int, default=None, help="JupyterLab's port")
    lab.add_argument(
        "--no-start", action="store_true", help="only copy the lessons; do not start JupyterLab"
    )
    args = parser.parse_args(argv)

    folder = args.folder.resolve()
    lessons = bundled_lessons()
    fresh = not (folder / MANIFEST).exists()
    notes = learner_copies(folder, lessons)
    if fresh:
        print(f"Your copies of the {len(lessons)} lessons are in {folder}")
    for note in notes:
        print(note)
    if args.no_start:
        return 0
    if not _has_jupyterlab():
        print(
            "JupyterLab is not installed. Install it with\n"
            '    python -m pip install "attnlab[lab]"\n'
            "and run `attnlab lab` again (or open the lessons in any Jupyter you have).",
            file=sys.stderr,
        )
        return 1
    print("Starting JupyterLab; Ctrl-C stops it.")
    try:
        return subprocess.call(lab_command(folder, args.port))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
