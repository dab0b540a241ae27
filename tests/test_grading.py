"""The grading round trip: release, submit, autograde, export, with nbgrader.

Everything happens in a throw-away course folder with its own gradebook, and
every nbgrader step runs with force, so results of an earlier run can never
make this one pass.
"""

import csv
import re
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbgrader", reason="grading needs nbgrader, which needs Python 3.11+")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from nbgrader.validator import Validator  # noqa: E402

# attnlab's tests turn RuntimeWarnings into errors; nbgrader's database layer
# emits SQLAlchemy warnings (a RuntimeWarning subclass) that are not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

LESSONS = course.lessons()
# One lesson with several exercises carries the per-exercise cases.
PROBE = "04_softmax"
# Seconds a cell may run before nbgrader interrupts it (an endless loop): the course's
# own limit (nbgrader_config.py). The slowest legitimate cell, lesson 07's cost sweep,
# takes a few seconds alone but several times that on a loaded machine.
CELL_TIMEOUT = 60


def graded_cells(nb, kind):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get(kind)]


def points(nb) -> dict[str, float]:
    return {
        c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
        for c in graded_cells(nb, "grade")
    }


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    course.release(root, Execute__timeout=CELL_TIMEOUT)
    return root


def released(root, lesson: Path):
    return nbformat.read(root / "release" / lesson.stem / lesson.name, as_version=4)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_release_has_no_solutions_hidden_tests_or_outputs(root, lesson):
    source = nbformat.read(lesson, as_version=4)
    student = released(root, lesson)
    text = "\n".join(c.source for c in student.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert all(not c.outputs for c in student.cells if c.cell_type == "code")
    for cell in graded_cells(student, "solution"):
        assert "raise NotImplementedError()" in cell.source
    for cell in graded_cells(source, "solution"):
        body = cell.source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
        for line in body.splitlines():
            if line.strip() and not line.strip().startswith("#"):
                assert line not in text, f"solution line released: {line!r}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_learner_copies_match_nbgrader_release(root, lesson):
    ours = course.student_version(nbformat.read(lesson, as_version=4))
    theirs = released(root, lesson)
    assert [c.source for c in ours.cells] == [c.source for c in theirs.cells]
    for a, b in zip(ours.cells, theirs.cells, strict=True):
        for flag in ("editable", "deletable"):
            assert a.metadata.get(flag, True) == b.metadata.get(flag, True), (flag, a.source[:60])


def validate(source: Path, released: Path) -> tuple[dict, dict]:
    """nbgrader's Validator on the source, and inverted on the student version, with the
    course's settings (nbgrader_config.py), as `nbgrader validate` in the course folder."""
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course.ROOT)).load_config()
    return (
        Validator(config=cfg).validate(str(source)),
        Validator(config=cfg, invert=True).validate(str(released)),
    )


def test_source_validates_and_release_fails_every_exercise(root):
    released = [root / "release" / lesson.stem / lesson.name for lesson in LESSONS]
    # Two lessons at a time, one per core; in processes, because the Validator keeps
    # its state in an environment variable.
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = pool.map(validate, LESSONS, released)
        for lesson, (source, student) in zip(LESSONS, results, strict=True):
            assert not source.get("failed") and not source.get("errored"), (lesson.name, source)
            assert not student.get("passed"), (lesson.name, student["passed"])


def submit(root, student: str, lesson: Path, nb) -> None:
    folder = root / "submitted" / student / lesson.stem
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / lesson.name)


def with_answer(nb, exercise: str, source: str):
    answers = [
        cell
        for cell in graded_cells(nb, "solution")
        if cell.metadata.nbgrader["grade_id"] == f"{exercise}_answer"
    ]
    assert len(answers) == 1, f"the probe lesson has no answer cell for {exercise!r}"
    answers[0].source = source
    return nb


WRONG_SOFTMAX = """def softmax(x):
    e = np.exp(x)  # no maximum subtracted: overflows for large scores
    return e / e.sum(axis=-1, keepdims=True)"""
ENDLESS_MASKED_SOFTMAX = """def masked_softmax(x, mask):
    while True:
        pass"""


@pytest.fixture(scope="module")
def grades(root):
    probe = next(p for p in LESSONS if p.stem == PROBE)
    for lesson in LESSONS:
        submit(root, "alice", lesson, nbformat.read(lesson, as_version=4))  # the solutions
        submit(root, "bob", lesson, released(root, lesson))  # nothing answered
    source = lambda: nbformat.read(probe, as_version=4)  # noqa: E731
    submit(root, "carol", probe, with_answer(source(), "softmax", WRONG_SOFTMAX))
    emptied = source()
    for cell in graded_cells(emptied, "locked"):
        cell.source = ""
    submit(root, "dave", probe, emptied)
    submit(root, "erin", probe, with_answer(source(), "masked_softmax", ENDLESS_MASKED_SOFTMAX))
    csv_path = course.autograde(root, Execute__timeout=CELL_TIMEOUT)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {}
        for lesson in LESSONS:
            for sub in gb.assignment_submissions(lesson.stem):
                nb = gb.find_submission_notebook(lesson.stem, lesson.stem, sub.student_id)
                scores[sub.student_id, lesson.stem] = {g.name: g.score for g in nb.grades}
    return scores, csv_path


def test_solutions_score_full_marks(grades):
    scores, _ = grades
    for lesson in LESSONS:
        expected = points(nbformat.read(lesson, as_version=4))
        assert scores["alice", lesson.stem] == expected, lesson.stem


def test_unsolved_release_scores_zero_everywhere(grades):
    scores, _ = grades
    for lesson in LESSONS:
        assert all(v == 0 for v in scores["bob", lesson.stem].values()), lesson.stem


def test_one_wrong_answer_loses_exactly_its_points(grades):
    scores, _ = grades
    full = points(nbformat.read(ROOT / "notebooks" / f"{PROBE}.ipynb", as_version=4))
    expected = {k: (0 if k == "softmax_check" else v) for k, v in full.items()}
    assert scores["carol", PROBE] == expected


def test_emptied_test_cells_are_restored(grades):
    scores, _ = grades
    full = points(nbformat.read(ROOT / "notebooks" / f"{PROBE}.ipynb", as_version=4))
    assert scores["dave", PROBE] == full


def test_endless_loop_times_out_and_the_rest_is_graded(grades):
    scores, _ = grades
    full = points(nbformat.read(ROOT / "notebooks" / f"{PROBE}.ipynb", as_version=4))
    expected = {k: (0 if k == "masked_softmax_check" else v) for k, v in full.items()}
    assert scores["erin", PROBE] == expected


def test_unsolved_release_runs_every_cell_but_the_checks(root, grades):
    """Executed unanswered, every check fails and nothing outside the exercises does: each
    lesson carries on with attnlab's own function after an exercise. (An answer that is a
    number, not a function, fails in its own cell: nbgrader's stub raises there.)"""
    for lesson in LESSONS:
        nb = nbformat.read(root / "autograded" / "bob" / lesson.stem / lesson.name, as_version=4)
        for cell in nb.cells:
            failed = any(o.output_type == "error" for o in cell.get("outputs", []))
            graded = cell.metadata.get("nbgrader", {})
            if graded.get("grade"):
                assert failed, (lesson.stem, "check passed unanswered", cell.source[:80])
            elif failed:
                assert graded.get("solution"), (lesson.stem, "cell failed", cell.source[:80])


def test_grades_csv_lists_every_submission(grades):
    scores, csv_path = grades
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    seen = {(r["student_id"], r["assignment"]) for r in rows}
    assert set(scores) <= seen
    alice = [r for r in rows if r["student_id"] == "alice"]
    assert all(float(r["score"]) == float(r["max_score"]) for r in alice)
    assert re.match(r"\d", rows[0]["max_score"])
    shutil.rmtree(csv_path.parent / "autograded", ignore_errors=True)
