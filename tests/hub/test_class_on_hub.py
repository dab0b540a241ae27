"""A class on JupyterHub, end to end, as real Unix users (`make test-hub`).

The instructor releases lesson 02 through nbgrader's exchange; students fetch,
answer and submit (three from the command line, one in Chromium from the
Assignments panel, thirty at once for load); the instructor collects,
autogrades, returns feedback; every grade is checked against the points in the
lesson's own nbgrader metadata. The tests run in file order and share one hub.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from hubsetup import (
    BROWSER_STUDENT,
    CHROMIUM_ARGS,
    COURSE_ID,
    EXCHANGE,
    INSTRUCTOR,
    LESSON,
    LOAD_STUDENTS,
    REPOSITORY,
    STUDENTS,
    TIMES,
    hubenv,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SOURCE = hubenv.ROOT / "notebooks" / f"{LESSON}.ipynb"
OUTBOUND = EXCHANGE / COURSE_ID / "outbound" / LESSON
INBOUND = EXCHANGE / COURSE_ID / "inbound"
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = hubenv.ROOT / ".browser" / "hub-student.png"


def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def exercises() -> list[tuple[str, str, float]]:
    """(answer cell id, its solution, points of the checks that follow it) per exercise."""
    nb = nbformat.read(SOURCE, as_version=4)
    found: list[list] = []
    for cell in nb.cells:
        meta = _meta(cell)
        if meta.get("solution"):
            lines = [x for x in cell.source.splitlines() if "### " not in x or "SOLUTION" not in x]
            found.append([meta["grade_id"], "\n".join(lines), 0.0])
        elif meta.get("grade") and found:
            found[-1][2] += meta["points"]
    assert len(found) >= 2, f"{LESSON} needs two graded exercises for a half-solved answer"
    return [tuple(x) for x in found]


def expected(solved: set[str]) -> float:
    return sum(points for grade_id, _, points in exercises() if grade_id in solved)


ALL = {grade_id for grade_id, _, _ in exercises()}
FIRST = exercises()[0][0]
LAST = exercises()[-1][0]
# Which exercises each student answers with the instructor's solution.
ANSWERS = {
    STUDENTS["solved"]: ALL,
    STUDENTS["half"]: {FIRST},
    STUDENTS["blank"]: set(),
    BROWSER_STUDENT: {LAST},  # typed into the answer cell in the browser
}
for i, name in enumerate(LOAD_STUDENTS):
    ANSWERS[name] = ALL if i % 2 else set()


def answer(hub, student: str, solved: set[str], marker: str = "") -> None:
    """Edit the student's fetched notebook: the instructor's solution in the chosen cells."""
    path = hub.home(student) / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    solutions = {grade_id: code for grade_id, code, _ in exercises()}
    for cell in nb.cells:
        grade_id = _meta(cell).get("grade_id")
        if _meta(cell).get("solution") and grade_id in solved:
            cell.source = solutions[grade_id] + (f"\n# {marker}" if marker else "")
    nbformat.write(nb, path)
    record = pwd.getpwnam(student)
    os.chown(path, record.pw_uid, record.pw_gid)


def _answer_saved(path: Path, index: int, typed: str) -> bool:
    """Whether cell ``index`` of the saved notebook holds ``typed``. The cell's lines are
    separate strings in the file, so a multi-line answer is looked for in the parsed cell;
    a file caught half-written counts as not saved yet."""
    try:
        return typed in nbformat.read(path, as_version=4).cells[index].source
    except Exception:
        return False


def inbound(student: str) -> list[Path]:
    return sorted(INBOUND.glob(f"{student}+{LESSON}+*"))


def test_instructor_releases(hub):
    t = time.perf_counter()
    hub.nbgrader(INSTRUCTOR, "generate_assignment", LESSON, "--force", cwd=hub.course)
    hub.nbgrader(INSTRUCTOR, "release_assignment", LESSON, cwd=hub.course)
    TIMES["instructor: generate and release"] = time.perf_counter() - t
    released = nbformat.read(OUTBOUND / f"{LESSON}.ipynb", as_version=4)
    text = "\n".join(c.source for c in released.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text


def test_students_fetch(hub):
    for student in [*STUDENTS.values()]:
        hub.nbgrader(student, "fetch_assignment", LESSON)
        fetched = hub.home(student) / LESSON / f"{LESSON}.ipynb"
        assert fetched.owner() == student
        assert fetched.read_bytes() == (OUTBOUND / f"{LESSON}.ipynb").read_bytes()


def test_student_in_browser_fetches_edits_and_submits(hub):
    if not CHROMIUM.exists():
        pytest.fail(f"No Chromium at {CHROMIUM} (apt-get install chromium)", pytrace=False)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)  # a shared, busy machine: JupyterLab loads slowly
    t = time.perf_counter()
    user = BROWSER_STUDENT
    lesson_file = hub.home(user) / LESSON / f"{LESSON}.ipynb"
    solution = dict((g, code) for g, code, _ in exercises())[LAST]
    typed = "\n".join(x for x in solution.splitlines() if not x.lstrip().startswith("#"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        SCREENSHOT.parent.mkdir(exist_ok=True)
        _sign_in(page, hub, user)
        page.wait_for_url(f"**/user/{user}/lab**", timeout=180_000)
        _open_assignment_list(page)
        page.locator("#released_assignments_list button", has_text="Fetch").click()
        expect(page.locator("#fetched_assignments_list")).to_contain_text(LESSON)
        assert lesson_file.exists() and lesson_file.owner() == user

        page.goto(f"{hub.url}user/{user}/lab/tree/{LESSON}/{LESSON}.ipynb")
        cells = page.locator(".jp-Notebook .jp-Cell")
        expect(cells.first).to_be_visible()
        nb = nbformat.read(lesson_file, as_version=4)
        index = next(i for i, c in enumerate(nb.cells) if _meta(c).get("grade_id") == LAST)
        editor = cells.nth(index).locator(".cm-content")
        editor.scroll_into_view_if_needed()
        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(typed)
        page.keyboard.press("Control+S")
        deadline, saved_again = time.monotonic() + 30, False
        while not _answer_saved(lesson_file, index, typed):
            if time.monotonic() > deadline:
                page.screenshot(path=str(SCREENSHOT))
                raise AssertionError(f"the edited notebook was not saved; see {SCREENSHOT}")
            if not saved_again and time.monotonic() > deadline - 20:
                page.keyboard.press("Control+S")  # a busy server can miss the first one
                saved_again = True
            time.sleep(0.5)

        _open_assignment_list(page)
        page.locator("#fetched_assignments_list button", has_text="Submit").click()
        expect(page.locator("#submitted_assignments_list")).to_contain_text(LESSON)
        browser.close()
    TIMES["browser: sign in, fetch, edit, submit"] = time.perf_counter() - t
    assert len(inbound(user)) == 1
    submitted = next((inbound(user)[0]).glob("*.ipynb"))
    assert _answer_saved(submitted, index, typed)


def _sign_in(page, hub, user: str) -> None:
    page.goto(f"{hub.url}hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.password)
    page.click("#login_submit")


def _open_assignment_list(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.locator("#released_assignments_list").wait_for()


def test_students_answer_and_submit(hub):
    for student in STUDENTS.values():
        if student == STUDENTS["solved"]:
            # A first, blank submission; the later, solved one must be what counts.
            hub.nbgrader(student, "submit", LESSON)
            time.sleep(1.1)  # nbgrader's submissions are told apart by their time stamp
        answer(hub, student, ANSWERS[student], marker="final answer")
        hub.nbgrader(student, "submit", LESSON)


def test_resubmission_keeps_the_earlier_one_until_collect(hub):
    kept = inbound(STUDENTS["solved"])
    assert len(kept) == 2
    first, second = (next(k.glob("*.ipynb")).read_text() for k in kept)
    assert "final answer" not in first and "final answer" in second


def _as(hub, user: str, code: str):
    return hub.run_as(user, "python", "-c", code, check=False)


def test_student_cannot_read_others_or_the_instructors_files(hub):
    intruder = STUDENTS["blank"]
    victim = STUDENTS["solved"]
    probe = "import os, sys\ntry:\n    {}\nexcept PermissionError:\n    sys.exit(13)\n"
    source = hub.course / "source" / LESSON / f"{LESSON}.ipynb"
    targets = {
        "the exchange's inbound listing": f"os.listdir({str(INBOUND)!r})",
        "another student's working copy": f"os.listdir({str(hub.home(victim))!r})",
        "the instructor's source": f"open({str(source)!r}).read()",
        "the instructor's course folder": f"os.listdir({str(hub.course)!r})",
        "the gradebook (hidden tests and grades)": (
            f"open({str(hub.course / 'gradebook.db')!r}, 'rb').read()"
        ),
    }
    for what, code in targets.items():
        result = _as(hub, intruder, probe.format(code))
        assert result.returncode == 13, f"a student could read {what}: {result.stderr[-500:]}"
    # nbgrader's inbound cannot be listed, and each submission's folder name ends
    # in a random part, so a student cannot find another's submission to open it.
    for folder in inbound(victim):
        assert len(folder.name.rsplit("+", 1)[-1]) >= 8
    # Nothing a student can read anywhere in the exchange holds a hidden test.
    walk = (
        f"import os\nfor d, _, fs in os.walk({str(EXCHANGE)!r}):\n    for f in fs:\n"
        "        p = os.path.join(d, f)\n"
        "        if os.access(p, os.R_OK) and b'HIDDEN TESTS' in open(p, 'rb').read():\n"
        "            print(p)\n"
    )
    assert _as(hub, intruder, walk).stdout == ""


def test_student_cannot_overwrite_a_release(hub):
    student = STUDENTS["half"]
    release = OUTBOUND / f"{LESSON}.ipynb"
    before = release.read_bytes()
    attempts = {
        "overwrite": f"open({str(release)!r}, 'w').write('x')",
        "delete": f"os.remove({str(release)!r})",
        "add a file": f"open({str(OUTBOUND / 'extra.ipynb')!r}, 'w').write('x')",
        "rename": f"os.rename({str(OUTBOUND)!r}, {str(OUTBOUND) + '.old'!r})",
    }
    probe = "import os, sys\ntry:\n    {}\nexcept PermissionError:\n    sys.exit(13)\n"
    for what, code in attempts.items():
        result = _as(hub, student, probe.format(code))
        assert result.returncode == 13, f"a student could {what} the release"
    assert release.read_bytes() == before


def test_thirty_students_submit_at_once(hub):
    t = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:  # fetching is not what is measured: a few at a time
        list(pool.map(lambda s: hub.nbgrader(s, "fetch_assignment", LESSON), LOAD_STUDENTS))
    for student in LOAD_STUDENTS:
        answer(hub, student, ANSWERS[student])
    TIMES[f"{len(LOAD_STUDENTS)} students fetch"] = time.perf_counter() - t
    t = time.perf_counter()
    with ThreadPoolExecutor(len(LOAD_STUDENTS)) as pool:
        results = list(
            pool.map(
                lambda s: hub.nbgrader(s, "submit", LESSON, check=False).returncode,
                LOAD_STUDENTS,
            )
        )
    TIMES[f"{len(LOAD_STUDENTS)} concurrent submissions"] = time.perf_counter() - t
    assert results == [0] * len(LOAD_STUDENTS)
    assert all(len(inbound(s)) == 1 for s in LOAD_STUDENTS)


def test_instructor_collects_grades_and_returns_feedback(hub):
    t = time.perf_counter()
    hub.nbgrader(INSTRUCTOR, "collect", LESSON, cwd=hub.course)
    submitted = {p.parent.name for p in (hub.course / "submitted").glob(f"*/{LESSON}")}
    hub.nbgrader(INSTRUCTOR, "autograde", LESSON, "--force", cwd=hub.course)
    TIMES[f"collect and autograde {len(ANSWERS)} submissions"] = time.perf_counter() - t
    t = time.perf_counter()
    hub.nbgrader(INSTRUCTOR, "generate_feedback", LESSON, "--force", cwd=hub.course)
    hub.nbgrader(INSTRUCTOR, "release_feedback", LESSON, cwd=hub.course)
    hub.nbgrader(INSTRUCTOR, "export", "--to", "grades.csv", cwd=hub.course)
    TIMES["feedback and export"] = time.perf_counter() - t
    assert submitted == set(ANSWERS)


def test_students_fetch_their_feedback(hub):
    for student in [*STUDENTS.values(), BROWSER_STUDENT]:
        hub.nbgrader(student, "fetch_feedback", LESSON)
        pages = list((hub.home(student) / LESSON / "feedback").glob(f"*/{LESSON}.html"))
        assert len(pages) == 1, f"{student} got no feedback page"
        assert pages[0].owner() == student


def test_grades_are_exactly_right(hub):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}") as gb:
        scores = {s: gb.find_submission(LESSON, s).score for s in ANSWERS}
    want = {s: expected(solved) for s, solved in ANSWERS.items()}
    assert scores == want
    with open(hub.course / "grades.csv") as f:
        rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(f)}
    assert {s: rows[s] for s in ANSWERS} == want
    total = expected(ALL)
    assert want[STUDENTS["solved"]] == total and want[STUDENTS["blank"]] == 0
    assert 0 < want[STUDENTS["half"]] < total and 0 < want[BROWSER_STUDENT] < total
    graded = sum(1 for s in LOAD_STUDENTS if s in scores)
    print(
        f"\n{graded} of {len(LOAD_STUDENTS)} concurrent submissions collected and graded;"
        f" lesson {LESSON}: {total:g} points"
    )
    print(json.dumps({s: scores[s] for s in [*STUDENTS.values(), BROWSER_STUDENT]}))


def test_formgrader_lists_the_submissions(hub):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=90_000)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(60_000)
        _sign_in(page, hub, INSTRUCTOR)
        page.wait_for_url(f"**/user/{INSTRUCTOR}/lab**", timeout=180_000)
        page.goto(f"{hub.url}user/{INSTRUCTOR}/formgrader/manage_submissions/{LESSON}")
        for student in [*STUDENTS.values(), BROWSER_STUDENT]:
            expect(page.locator("body")).to_contain_text(student)
        browser.close()


def test_nbgitpuller_link_opens_the_lesson_on_the_hub(hub):
    """The link tools/gitpuller_link.py prints, followed by a signed-in user."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(hubenv.ROOT / "tools"))
    from gitpuller_link import gitpuller_link

    link = gitpuller_link(hub.url, f"file://{REPOSITORY}", LESSON)
    name = REPOSITORY.name.removesuffix(".git")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        _sign_in(page, hub, INSTRUCTOR)
        page.wait_for_url(f"**/user/{INSTRUCTOR}/lab**", timeout=180_000)
        page.goto(link)
        page.wait_for_url(
            f"**/user/{INSTRUCTOR}/lab/tree/{name}/notebooks/{LESSON}.ipynb", timeout=120_000
        )
        browser.close()
    pulled = hub.home(INSTRUCTOR) / name / "notebooks" / f"{LESSON}.ipynb"
    assert pulled.read_bytes() == (hubenv.ROOT / "notebooks" / f"{LESSON}.ipynb").read_bytes()
    assert pulled.owner() == INSTRUCTOR
