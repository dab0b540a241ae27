"""The course's website, as a learner with no internet uses it.

For every lesson: the book page shows its figures, each with alt text, and
passes an axe-core audit (no serious or critical violations); its "Run in your
browser" link opens the lesson in JupyterLite, where Python runs in the page
(Pyodide); the cells up to the first exercise run without error; the lesson's
first widget redraws when its slider is dragged with the mouse; and check(...)
says PASS for the reference solution and FAIL, with a message, for a classic
mistake. Screenshots go to .site-test/ (git-ignored).

Run with ``make test-site``: it builds the site, then runs this inside a network
namespace with only the loopback. Waits are on events in the page, never sleeps.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from .conftest import REPO, SCREENSHOTS, SITE

NOTEBOOKS = REPO / "notebooks"
AXE = Path(
    os.environ.get(
        "ATTNLAB_AXE", REPO / ".site-cache" / "npm" / "axe-core-4.10.3" / "package" / "axe.min.js"
    )
)
TIMINGS = SCREENSHOTS / "timings.json"

KERNEL_TIMEOUT = 120_000  # ms: Pyodide and its packages load in about 30 s on 2 cores
RUN_TIMEOUT = 180_000  # ms: the cells before the first exercise, in WebAssembly
CELL_TIMEOUT = 90_000  # ms: one cell (the first `import attnlab` loads matplotlib)
WIDGET_TIMEOUT = 30_000  # ms: one redraw of a widget after a drag

NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"  # CSS, for the page's JS too
EXECUTION_INDICATOR = ".jp-Notebook-ExecutionIndicator"
WIDGET_IMAGE = "img.widget-image"
SLIDER_HANDLE = ".widget-slider .noUi-handle"
TOGGLE = ".widget-toggle-buttons button"  # a widget without a slider (05) has these
ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'

# A classic mistake for each lesson's first exercise, made from the reference
# solution by one substitution: (what the solution says, what the mistake says).
CLASSIC_MISTAKES = {
    "scale_factor": ("np.sqrt(d_k)", "d_k"),  # 1/d_k: the square root forgotten
    "best_key": ("length * direction", "direction"),  # length 1: the length forgotten
    "std_512": ("np.sqrt(2 * 512)", "np.sqrt(512)"),  # one score's spread, not the difference's
    "temperature_for_entropy": ("scores / tau)) < target", "scores / tau)) > target"),  # wrong way
    "softmax": ("x - x.max(axis=-1, keepdims=True)", "x"),  # no shift: overflows
    "attention_by_hand": ("[2, -1, -2]) / np.sqrt(4)", "[2, -1, -2])"),  # unscaled scores
    "longest_sequence": ("memory_bytes // bytes_per_number", "memory_bytes"),  # bytes as numbers
    "multi_head_attention": (".reshape(n, d_model) @ W_O", ".reshape(n, d_model)"),  # no W_O
    "alibi_biases": ("np.arange(1, H + 1)", "np.arange(H)"),  # heads counted from 0
    "linear_attention": ("phi_k.sum(axis=0)", "phi_k.mean(axis=0)"),  # a mean: rows n_k times off
    "softmax_backward": ("p * (grad_p - dot)", "p * grad_p"),  # the row term forgotten
}


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _lessons() -> list[str]:
    return [p.stem for p in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))]


LESSONS = _lessons()


class Lesson:
    """What the test needs to know about one lesson, read from its instructor version."""

    def __init__(self, stem: str):
        self.stem = stem
        self.cells = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
        graded = [c.get("metadata", {}).get("nbgrader", {}) for c in self.cells]
        self.graded = [bool(g.get("solution") or g.get("grade")) for g in graded]
        self.answer = next(i for i, g in enumerate(graded) if g.get("solution"))
        self.check = self.answer + 1
        assert graded[self.check].get("grade"), f"{stem}: no check cell after the first answer"
        self.exercise = re.search(r'check\("(\w+)"', _source(self.cells[self.check])).group(1)
        self.widget = next(
            i
            for i, c in enumerate(self.cells)
            if c["cell_type"] == "code" and re.search(r"\bwidgets\.\w+\(", _source(c))
        )
        self.figures = sum(
            "image/png" in out.get("data", {})
            for c in self.cells
            if c["cell_type"] == "code" and not graded[self.cells.index(c)]
            for out in c.get("outputs", [])
        )

    def reference_answer(self) -> str:
        """The answer cell with its solution in place (the markers removed)."""
        lines = _source(self.cells[self.answer]).split("\n")
        return "\n".join(line for line in lines if "### " not in line or "SOLUTION" not in line)

    def mistaken_answer(self) -> str:
        right, wrong = CLASSIC_MISTAKES[self.exercise]
        answer = self.reference_answer()
        assert right in answer, f"{self.stem}: the solution no longer contains {right!r}"
        return answer.replace(right, wrong, 1)


def test_every_first_exercise_has_a_classic_mistake():
    firsts = {Lesson(s).exercise for s in LESSONS}
    missing = firsts - set(CLASSIC_MISTAKES)
    assert not missing, f"no classic mistake for {sorted(missing)} in CLASSIC_MISTAKES"
    unused = set(CLASSIC_MISTAKES) - firsts  # e.g. an exercise since cut or moved
    assert not unused, f"CLASSIC_MISTAKES names exercises that are no first exercise: {unused}"


def test_landing_page_lists_every_lesson_and_the_three_ways(page, site):
    page.goto(f"{site.url}/index.html")
    main = page.locator("main")
    for way in ("In your browser", "from PyPI", "From the repository"):
        expect(main).to_contain_text(way)
    links = main.locator("a[href^='lessons/']").evaluate_all("as => as.map(a => a.href)")
    assert len({Path(link.split("#")[0]).stem for link in links}) == len(LESSONS)
    _audit(page, "index")


def test_search_finds_a_lesson(page, site):
    page.goto(f"{site.url}/search.html?q=softmax")
    results = page.locator("#search-results li")
    expect(results.first).to_be_visible(timeout=30_000)
    assert "softmax" in results.first.inner_text().lower() or results.count() > 1


def test_site_is_self_contained():
    """JupyterLite uses the site's own Pyodide, with no fallback to PyPI."""
    config = json.loads((SITE / "lite" / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.js"
    assert kernel["disablePyPIFallback"] is True
    lock = json.loads((SITE / "lite" / "static" / "pyodide" / "pyodide-lock.json").read_text())
    for name in ("numpy", "matplotlib", "pillow", "ipywidgets", "attnlab"):
        file = SITE / "lite" / "static" / "pyodide" / lock["packages"][name]["file_name"]
        assert file.exists(), f"{name} is in the lock but {file.name} is not in the site"


# -- helpers on the page ------------------------------------------------------------------


def _audit(page: Page, what: str) -> None:
    """axe-core on the page: no serious or critical violation."""
    assert AXE.exists(), f"no axe-core at {AXE}: `make test-site` fetches it from npm"
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """async () => {
            const r = await axe.run(document, {resultTypes: ['violations']});
            return r.violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => `${v.impact}: ${v.id} (${v.help}) at ` +
                          v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
        }"""
    )
    assert not result, f"{what}: accessibility violations:\n" + "\n".join(result)


def _cells(page: Page) -> Locator:
    return page.locator(f"{NOTEBOOK} .jp-Cell")


def _select_cell(page: Page, index: int) -> None:
    cell = _cells(page).nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").click()
    expect(cell).to_have_class(re.compile(r"\bjp-mod-active\b"))


def _menu(page: Page, menu: str, command: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{menu}$")).click()
    item = page.locator(f'.lm-Menu-item[data-command="{command}"]')
    item.click()
    expect(item).to_have_count(0)


def _wait_idle(page: Page, timeout: float) -> None:
    page.wait_for_function(
        """([selector, indicator]) => {
            const prompts = [...document.querySelectorAll(selector)].map(p => p.innerText.trim());
            const status = document.querySelector(indicator);
            return !prompts.includes('[*]:') && status && status.dataset.status === 'idle';
        }""",
        arg=[f"{NOTEBOOK} .jp-CodeCell .jp-InputPrompt", EXECUTION_INDICATOR],
        timeout=timeout,
        polling=200,
    )


# Printed once by matplotlib on its first import in a fresh browser (no font cache yet).
FONT_CACHE_NOTE = "Matplotlib is building the font cache"


def _errors(cells: Locator) -> list[str]:
    """Tracebacks and warnings: whatever the cells wrote to stderr."""
    texts = cells.locator(ERROR_OUTPUT).all_inner_texts()
    return [t for t in texts if t.strip() and not t.strip().startswith(FONT_CACHE_NOTE)]


def _set_source(page: Page, index: int, text: str) -> None:
    """Replace a cell's code, as a paste would (no auto-indent of typed lines)."""
    editor = _cells(page).nth(index).locator(".cm-content")
    editor.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(text)
    page.keyboard.press("Escape")  # back to command mode


def _run_cell(page: Page, index: int) -> str:
    """Run one cell (Run → Run Selected Cell) and return the text of its outputs."""
    _select_cell(page, index)
    cell = _cells(page).nth(index)
    before = cell.locator(".jp-InputPrompt").inner_text()
    _menu(page, "Run", "notebook:run-cell")
    page.wait_for_function(
        """([cell, before]) => {
            const p = cell.querySelector('.jp-InputPrompt').innerText.trim();
            return p !== before.trim() && /^\\[\\d+\\]:$/.test(p);
        }""",
        arg=[cell.element_handle(), before],
        timeout=CELL_TIMEOUT,
        polling=200,
    )
    return "\n".join(cell.locator(".jp-OutputArea-output").all_inner_texts())


def _drag(page: Page, handle: Locator, dx: float) -> None:
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y, steps=8)
    page.mouse.up()


def _record(stem: str, **timings: float) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    data = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    data[stem] = {key: round(value, 1) for key, value in timings.items()}
    TIMINGS.write_text(json.dumps(data, indent=1, sort_keys=True))


def _widget_responds(page: Page, lesson: Lesson, started: float) -> float:
    """Run the lesson's first widget; a slider dragged (or, without a slider, another
    button clicked) must redraw its picture. Returns seconds since ``started``."""
    _run_cell(page, lesson.widget)
    widget_cell = _cells(page).nth(lesson.widget)
    image = widget_cell.locator(WIDGET_IMAGE).first
    expect(image).to_be_visible(timeout=WIDGET_TIMEOUT)
    shown = time.monotonic() - started
    before = image.get_attribute("src")
    if widget_cell.locator(SLIDER_HANDLE).count():
        handle = widget_cell.locator(SLIDER_HANDLE).first
        value = handle.get_attribute("aria-valuenow")
        at_end = float(value) >= float(handle.get_attribute("aria-valuemax"))
        _drag(page, handle, -80 if at_end else 80)
        expect(handle, f"{lesson.stem}: dragging did not move the slider").not_to_have_attribute(
            "aria-valuenow", value, timeout=WIDGET_TIMEOUT
        )
    else:
        buttons = widget_cell.locator(TOGGLE)
        active = buttons.evaluate_all("bs => bs.map(b => b.classList.contains('mod-active'))")
        other = buttons.nth(active.index(False))
        other.click()
        expect(other, f"{lesson.stem}: the click did not select").to_have_class(
            re.compile(r"\bmod-active\b"), timeout=WIDGET_TIMEOUT
        )
    expect(image, f"{lesson.stem}: the picture did not change").not_to_have_attribute(
        "src", before, timeout=WIDGET_TIMEOUT
    )
    widget_cell.screenshot(path=str(SCREENSHOTS / f"lite-{lesson.stem}.png"))
    return shown


# -- every lesson ---------------------------------------------------------------------------


@pytest.mark.parametrize("stem", LESSONS)
def test_lesson(stem, page, site):
    lesson = Lesson(stem)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    # 1. The book page: every figure shown, each with alt text that says what it shows.
    page.goto(f"{site.url}/lessons/{stem}.html")
    figures = page.locator("main .cell_output img")
    expect(figures).to_have_count(lesson.figures)
    for figure in figures.all():
        figure.scroll_into_view_if_needed()
        expect(figure).to_have_js_property("complete", True)
        assert figure.evaluate("img => img.naturalWidth") > 0, f"{stem}: a figure did not load"
        alt = figure.get_attribute("alt") or ""
        assert alt.startswith("Figure") and len(alt.split()) >= 5, f"{stem}: alt text {alt!r}"
    page.wait_for_function("() => document.documentElement.dataset.attnlabMath", timeout=30_000)
    _audit(page, f"{stem} (book)")
    page.screenshot(path=str(SCREENSHOTS / f"book-{stem}.png"))

    # 2. "Run in your browser" opens the learner's version in JupyterLite.
    started = time.monotonic()
    page.get_by_role("link", name=re.compile("Run in your browser")).click()
    expect(_cells(page)).to_have_count(len(lesson.cells), timeout=KERNEL_TIMEOUT)
    expect(page.locator(f'{EXECUTION_INDICATOR}[data-status="idle"]')).to_have_count(
        1, timeout=KERNEL_TIMEOUT
    )
    kernel_ready = time.monotonic() - started
    cells = _cells(page)
    assert "raise NotImplementedError()" in cells.nth(lesson.answer).inner_text()

    # 3. The cells up to the first exercise run without error.
    _select_cell(page, lesson.answer)
    _menu(page, "Run", "notebook:run-all-above")
    _wait_idle(page, RUN_TIMEOUT)
    errors = _errors(cells)
    assert not errors, f"{stem}: errors before the first exercise:\n" + "\n---\n".join(errors)
    code_above = [
        i
        for i, c in enumerate(lesson.cells[: lesson.answer])
        if c["cell_type"] == "code" and _source(c).strip()
    ]
    for index in code_above:
        prompt = cells.nth(index).locator(".jp-InputPrompt").inner_text().strip()
        assert re.fullmatch(r"\[\d+\]:", prompt), f"{stem}: cell {index} did not run ({prompt})"

    # 4. The first widget responds to the mouse, if it comes before the first exercise.
    first_widget = None
    if lesson.widget < lesson.answer:
        first_widget = _widget_responds(page, lesson, started)

    # 5. check(...): FAIL with a message for a classic mistake, PASS for the reference.
    _set_source(page, lesson.answer, lesson.mistaken_answer())
    _run_cell(page, lesson.answer)
    feedback = _run_cell(page, lesson.check)
    assert "FAIL" in feedback, f"{stem}: the classic mistake passed: {feedback}"
    message = feedback.split("FAIL", 1)[1]
    assert len(message.split()) >= 5, f"{stem}: FAIL without a message: {feedback}"
    _set_source(page, lesson.answer, lesson.reference_answer())
    _run_cell(page, lesson.answer)
    feedback = _run_cell(page, lesson.check)
    assert "PASS" in feedback and "FAIL" not in feedback, f"{stem}: {feedback}"

    # 4, later: a widget after the first exercise may need the cells between them
    # (later exercises left unanswered: the lesson carries on with attnlab's own).
    if first_widget is None:
        for index in range(lesson.check + 1, lesson.widget):
            cell = lesson.cells[index]
            if cell["cell_type"] == "code" and _source(cell).strip() and not lesson.graded[index]:
                _run_cell(page, index)
        errors = _errors(cells)
        assert not errors, f"{stem}: errors before the widget:\n" + "\n---\n".join(errors)
        first_widget = _widget_responds(page, lesson, started)

    assert not page.site_log.page_errors, "\n".join(page.site_log.page_errors)
    _record(stem, kernel_ready_s=kernel_ready, first_widget_s=first_widget)
    print(f"{stem}: kernel ready {kernel_ready:.1f} s, first widget {first_widget:.1f} s")
