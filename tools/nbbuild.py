"""Write lesson notebooks from Python: prose, code and nbgrader exercise cells.

A new lesson can be drafted as a short script::

    from nbbuild import md, code, answer, check, write
    write("notebooks/09_new.ipynb", [
        md("# A new lesson ..."),
        code("import numpy as np"),
        answer("softmax", SOFTMAX_ANSWER),  # def softmax(x): ### BEGIN SOLUTION ...
        check("softmax", 2, 'feedback = check("softmax", softmax)\\n...'),
    ])

then ``python tools/run_notebooks.py notebooks/09_new.ipynb`` executes and
saves it. After that the .ipynb file is the source: edit it in JupyterLab.
"""

from __future__ import annotations

from textwrap import dedent

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

NBGRADER_SCHEMA = 3


def md(text: str):
    return new_markdown_cell(dedent(text).strip("\n"))


def code(source: str, *, tags=()):
    cell = new_code_cell(dedent(source).strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def _nbgrader(cell, grade_id, *, solution, grade, locked, points=None):
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": NBGRADER_SCHEMA,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def answer(exercise_id: str, source: str):
    """The learner's answer cell: the reference solution between BEGIN/END SOLUTION."""
    return _nbgrader(
        code(source), f"{exercise_id}_answer", solution=True, grade=False, locked=False
    )


def check(exercise_id: str, points: int, source: str):
    """The locked test cell after an answer: the visible check and the hidden tests."""
    return _nbgrader(
        code(source), f"{exercise_id}_check", solution=False, grade=True, locked=True, points=points
    )


def write(path, cells) -> None:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, str(path))
