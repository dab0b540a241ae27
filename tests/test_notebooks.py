"""What every lesson notebook, as committed, must be.

nbval (in `make test`) re-runs each notebook and compares outputs; these
tests check the saved file itself: what a learner sees on opening it fresh,
and what nbgrader needs to release and grade it.
"""

import json
import os
import re
import tempfile
from pathlib import Path

import nbformat
import pytest

import attnlab
from attnlab.exercises import exercise_ids
from attnlab.widgets._base import FALLBACK_NOTE

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def load(path):
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_the_lessons_are_there():
    names = [p.name for p in NOTEBOOKS]
    assert names and names[0] == "00_start_here.ipynb"
    assert names == sorted(names)


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.name)
def nb(request):
    return load(request.param)


def test_saved_with_outputs_from_one_fresh_run(nb):
    counts = [c.execution_count for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), "re-run with `make notebooks`"


def test_each_stream_is_saved_in_one_piece(nb):
    # How the kernel splits a cell's printing into messages depends on timing; saved in
    # one piece, the outputs are the same on every machine.
    for cell in code_cells(nb):
        kinds = [(o.output_type, o.get("name")) for o in cell.outputs]
        pairs = zip(kinds, kinds[1:], strict=False)
        assert not any(a == b and a[0] == "stream" for a, b in pairs), cell.source[:80]


def test_no_errors_no_stderr(nb):
    for cell in code_cells(nb):
        for out in cell.outputs:
            assert out.output_type != "error", cell.source[:80]
            assert not (out.output_type == "stream" and out.name == "stderr"), cell.source[:80]


def test_no_local_paths_in_outputs(nb):
    places = [
        str(ROOT),
        os.path.expanduser("~") + "/",
        tempfile.gettempdir() + "/",
        "site-packages",
    ]
    text = json.dumps([c.outputs for c in code_cells(nb)])
    for place in places:
        assert place not in text


def test_no_stale_widget_state(nb):
    """Opened fresh (on Binder, say) a widget cell shows a note, never an error or a repr."""
    assert "widgets" not in nb.metadata
    for cell in code_cells(nb):
        for out in cell.outputs:
            data = out.get("data", {})
            assert WIDGET_VIEW not in data
            plain = "".join(data.get("text/plain", ""))
            assert not re.match(r"^(VBox|HBox|Box|[A-Z]\w*Widget)\(", plain), plain[:80]


def test_has_a_widget(nb):
    notes = [
        c
        for c in code_cells(nb)
        for o in c.outputs
        if FALLBACK_NOTE in "".join(o.get("data", {}).get("text/plain", ""))
    ]
    assert notes, "every lesson has at least one widget"


def test_goals_and_check_yourself(nb):
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown").lower()
    assert "learning goals" in text or "you will learn" in text
    assert "check yourself" in text
    assert "summary" in text


def test_nbval_ignore_output_says_why(nb):
    # The reason lives in the cell's metadata, where maintainers find it, and not in the
    # code a learner reads; a cell whose output is not compared must say why.
    for cell in code_cells(nb):
        assert "nbval-ignore-output" not in cell.source, cell.source[:80]
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            why = cell.metadata.get("attnlab", {}).get("output_varies", "")
            assert len(why.split()) >= 4, f"say why this output varies: {cell.source[:80]}"


def graded(nb):
    return [c for c in nb.cells if "nbgrader" in c.metadata]


def test_nbgrader_cells_are_well_formed(nb):
    cells = graded(nb)
    ids = [c.metadata.nbgrader["grade_id"] for c in cells]
    assert len(ids) == len(set(ids)), "grade_ids must be unique"
    for cell in cells:
        meta = cell.metadata.nbgrader
        assert meta["schema_version"] == 3
        if meta["solution"]:
            assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
            assert not meta["grade"] and not meta["locked"]
        if meta["grade"]:
            assert meta["locked"] and meta.get("points", 0) > 0
            assert "check(" in cell.source and "assert" in cell.source


def test_each_answer_is_followed_by_its_check(nb):
    cells = nb.cells
    for i, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            exercise = meta["grade_id"].removesuffix("_answer")
            after = cells[i + 1].metadata.get("nbgrader", {})
            assert after.get("grade_id") == f"{exercise}_check"
            assert exercise in exercise_ids()
            assert re.search(rf"check\(\s*[\"']{exercise}[\"']", cells[i + 1].source)


def test_has_a_graded_exercise(nb):
    assert any(c.metadata.nbgrader.get("grade") for c in graded(nb))


def test_learner_function_carries_the_exercise_name(nb):
    for cell in graded(nb):
        meta = cell.metadata.nbgrader
        if meta["solution"]:
            exercise = meta["grade_id"].removesuffix("_answer")
            # a function for a function exercise, `answer_<id> = …` for a numeric question
            pattern = rf"^(def {exercise}\(|answer_{exercise}\s*=)"
            assert re.search(pattern, cell.source, re.M), exercise


def test_every_registered_exercise_is_used_by_a_lesson():
    used = {
        c.metadata.nbgrader["grade_id"].removesuffix("_answer")
        for p in NOTEBOOKS
        for c in graded(load(p))
        if c.metadata.nbgrader["solution"]
    }
    assert set(exercise_ids()) <= used, set(exercise_ids()) - used
    assert attnlab.check  # the checker the notebooks import


def test_no_cell_relies_on_a_trailing_semicolon(nb):
    """nbval runs cells without storing history, and IPython then cannot see a final `;`:
    the cell's value would be shown after all. End plotting cells with plt.show()."""
    for cell in code_cells(nb):
        last = cell.source.rstrip().split("\n")[-1].strip() if cell.source.strip() else ""
        assert not (last.endswith(";") and not last.startswith("#")), cell.source[:80]


def test_widget_cells_print_nothing_else(nb):
    """A widget cell's only output is the widget, so nbval's strict mode compares the note."""
    for cell in code_cells(nb):
        texts = ["".join(o.get("data", {}).get("text/plain", "")) for o in cell.outputs]
        if any(FALLBACK_NOTE in t for t in texts):
            assert len(cell.outputs) == 1, cell.source[:80]


def test_hidden_tests_are_no_stricter_than_the_checker(nb):
    # An answer that check() passes must not lose its points to a hidden test, so the
    # hidden tests allow at least the checker's tolerances (float32 answers pass both).
    from attnlab.exercises.arrays import ATOL, RTOL

    floor = {"rtol": RTOL, "atol": ATOL}
    for cell in code_cells(nb):
        source = cell.source
        if "BEGIN HIDDEN TESTS" not in source:
            continue
        hidden = source[source.index("BEGIN HIDDEN TESTS") :]
        for name, value in re.findall(r"\b(rtol|atol)=([0-9.]+(?:e-?[0-9]+)?)\b", hidden):
            assert float(value) >= floor[name], f"{name}={value} in: {hidden[:120]}"


def _site_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_tool", ROOT / "tools" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_gets_alt_text_that_says_something(path):
    # The book's alt text is the figure's title and the prose just before it (tools/site.py);
    # a markdown cell that ends a folded <details> note must still give words, not a tag.
    figure_alt = _site_tool().figure_alt
    cells = load(path)["cells"]
    for index, cell in enumerate(cells):
        outputs = cell.get("outputs", []) if cell["cell_type"] == "code" else []
        if any("image/png" in output.get("data", {}) for output in outputs):
            alt = figure_alt(cells, index)
            assert alt.startswith("Figure") and len(alt.split()) >= 5, (index, alt)
            assert "<" not in alt, (index, alt)
