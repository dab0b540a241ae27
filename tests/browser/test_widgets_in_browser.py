"""Every lesson widget, in a real JupyterLab in a real Chromium.

For each lesson with a widget (a code cell whose saved output is the fallback
note), the notebook is opened as a learner first sees it, run with Run → Run
All Cells, and then every widget must have rendered its picture, and every
slider, moved with the keyboard, must change that picture. The first widget
of each lesson is saved as ``.browser/<lesson>.png`` for the README.

Run with ``make test-browser``; it needs Debian's Chromium (``apt-get install
chromium``). Waits are on events in the page, never fixed sleeps.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from attnlab.widgets._base import FALLBACK_NOTE

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
SCREENSHOTS = REPO / ".browser"  # git-ignored

PAGE_LOAD_TIMEOUT = 90_000  # ms: first opening of JupyterLab, kernel start included
RUN_ALL_TIMEOUT = 120_000  # ms: a lesson takes up to about 20 s to run
WIDGET_TIMEOUT = 15_000  # ms: one redraw of a widget after a key press or click
KEY_PRESSES = 3
MAX_SCREENSHOT_WIDTH = 900  # px

# Seen before any cell has run: a broken widget set-up, or a widget's repr.
FORBIDDEN_BEFORE_RUN = [
    "Error displaying widget",
    "model not found",
    "Loading widget...",
]
RAW_WIDGET_REPR = re.compile(
    r"\b(?:VBox|HBox|Box|GridBox|Image|[A-Za-z]+Slider)\(\s*(?:children|value)="
)
# What an output shows when its cell failed or its widget could not be displayed.
# (Only outputs are searched: the lessons' own text may name these messages.)
ERROR_OUTPUT = re.compile(r"Traceback|Error displaying widget|model not found")
STDERR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'

NOTEBOOK = ".jp-NotebookPanel .jp-Notebook"
WIDGET_VIEW = ".jp-OutputArea-output > .jupyter-widgets"
WIDGET_IMAGE = "img.widget-image"
SLIDER_HANDLE = ".widget-slider .noUi-handle"
EXECUTION_INDICATOR = ".jp-Notebook-ExecutionIndicator"


def _cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _widget_cells(notebook: dict) -> list[int]:
    """Indices of the code cells whose saved output is a widget's fallback note."""
    return [
        index
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "code" and FALLBACK_NOTE in json.dumps(cell.get("outputs", []))
    ]


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def widget_notebooks() -> list[str]:
    """The lessons with at least one widget, found in notebooks/ (not a fixed list)."""
    found = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        try:
            if _widget_cells(_load(path)):
                found.append(path.name)
        except (OSError, ValueError, KeyError):
            # A lesson being written right now may be half-saved; it is not a widget
            # lesson yet. (test_notebooks checks every lesson is a valid notebook.)
            continue
    return found


WIDGET_NOTEBOOKS = widget_notebooks()


def test_lessons_have_widgets():
    """The course has widgets; without this, an empty discovery would pass silently."""
    assert WIDGET_NOTEBOOKS, (
        f"no lesson in {NOTEBOOKS} has a widget cell (a saved output with {FALLBACK_NOTE!r})"
    )


# -- small helpers on the page ---------------------------------------------------------


def _menu(page: Page, menu: str, command: str) -> None:
    """Click a command in JupyterLab's menu bar, as a learner would."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{menu}$")).click()
    item = page.locator(f'.lm-Menu-item[data-command="{command}"]')
    item.click()
    expect(item).to_have_count(0)  # the menu closed: the command has been dispatched


def _dismiss_toasts(page: Page) -> None:
    """Close any notification toast (the news prompt is switched off; this is a backstop)."""
    for close in page.locator(".Toastify__toast .Toastify__close-button, .jp-toast-close").all():
        if close.is_visible():
            close.click()


def _image_sources(cell: Locator) -> list[str]:
    return cell.locator(WIDGET_IMAGE).evaluate_all("imgs => imgs.map(img => img.src)")


def _wait_for_new_picture(page: Page, cell: Locator, before: list[str], what: str) -> None:
    try:
        page.wait_for_function(
            """([cell, before]) => {
                const now = [...cell.querySelectorAll('img.widget-image')].map(i => i.src);
                return now.length === before.length && now.some((src, i) => src !== before[i]);
            }""",
            arg=[cell.element_handle(), before],
            timeout=WIDGET_TIMEOUT,
        )
    except PlaywrightTimeoutError:
        changed = False
    else:
        changed = True
    assert changed, (
        f"{what} did not change the widget's picture within {WIDGET_TIMEOUT / 1000:.0f} s"
    )


def _wait_until_run(page: Page, executed: list[bool]) -> None:
    """Wait until the kernel is idle and every non-empty code cell has a number.

    ``executed[i]`` says whether the i-th code cell must get an execution count
    (JupyterLab does not send empty cells to the kernel). A cell that fails
    stops Run All: the wait then ends early, and the error is reported below.
    """
    page.wait_for_function(
        """([selector, indicator, stderr, executed]) => {
            const prompts = [...document.querySelectorAll(selector)].map(p => p.innerText.trim());
            if (prompts.length !== executed.length || prompts.includes('[*]:')) return false;
            const status = document.querySelector(indicator);
            if (status && status.dataset.status !== 'idle') return false;
            const failed = [...document.querySelectorAll(stderr)]
                .some(o => /Traceback|Error/.test(o.innerText));
            return failed
                || executed.every((must, i) => !must || /^\\[\\d+\\]:$/.test(prompts[i]));
        }""",
        arg=[
            f"{NOTEBOOK} .jp-CodeCell .jp-InputPrompt",
            EXECUTION_INDICATOR,
            STDERR_OUTPUT,
            executed,
        ],
        timeout=RUN_ALL_TIMEOUT,
        polling=100,
    )


def _slider_name(handle: Locator) -> str:
    label = handle.locator("xpath=ancestor::*[contains(@class, 'widget-slider')][1]")
    text = label.locator(".widget-label").first.inner_text().strip()
    return f"slider {text!r}" if text else "a slider"


def _move_slider(page: Page, cell: Locator, handle: Locator, where: str) -> None:
    name = f"{where}: {_slider_name(handle)}"
    value = handle.get_attribute("aria-valuenow")
    at_end = float(value) >= float(handle.get_attribute("aria-valuemax"))
    key = "ArrowLeft" if at_end else "ArrowRight"
    before = _image_sources(cell)
    handle.scroll_into_view_if_needed()
    handle.focus()
    expect(handle).to_be_focused()
    for _ in range(KEY_PRESSES):
        page.keyboard.press(key)
    expect(handle, f"{key} did not move {name}").not_to_have_attribute(
        "aria-valuenow", value, timeout=WIDGET_TIMEOUT
    )
    _wait_for_new_picture(page, cell, before, f"Moving {name} with {key}")


def _screenshot(page: Page, widget: Locator, path: Path) -> dict:
    """A picture of one widget, cropped to what it draws, at most MAX_SCREENSHOT_WIDTH wide."""
    widget.scroll_into_view_if_needed()
    box = widget.evaluate(
        """(el) => {
            // The widget's box spans the whole output area; its contents may not.
            let left = Infinity, top = Infinity, right = -Infinity, bottom = -Infinity;
            for (const child of el.querySelectorAll('*')) {
                if (child.children.length) continue;
                const r = child.getBoundingClientRect();
                if (r.width === 0 || r.height === 0) continue;
                left = Math.min(left, r.left); top = Math.min(top, r.top);
                right = Math.max(right, r.right); bottom = Math.max(bottom, r.bottom);
            }
            const outer = el.getBoundingClientRect();
            if (!isFinite(left)) return {x: outer.left, y: outer.top,
                                         width: outer.width, height: outer.height};
            const pad = 8;
            left = Math.max(outer.left, left - pad); top = Math.max(outer.top, top - pad);
            right = Math.min(outer.right, right + pad);
            bottom = Math.min(outer.bottom, bottom + pad);
            return {x: left + window.scrollX, y: top + window.scrollY,
                    width: right - left, height: bottom - top};
        }"""
    )
    box["width"] = min(box["width"], MAX_SCREENSHOT_WIDTH)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), clip=box)
    return box


# -- the test --------------------------------------------------------------------------


@pytest.mark.parametrize("name", WIDGET_NOTEBOOKS)
def test_widgets_render_and_respond(name, lab, page):
    # A fresh copy of the lesson as it is now (lessons are still being edited).
    source = NOTEBOOKS / name
    text = source.read_text(encoding="utf-8")
    try:
        notebook = json.loads(text)
    except ValueError as error:
        pytest.fail(f"{source} is not a valid notebook (half-saved?): {error}")
    (lab.root / name).write_text(text, encoding="utf-8")
    widget_cells = _widget_cells(notebook)
    assert widget_cells, f"{name} no longer has a widget cell"
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    executed = [bool(_cell_text(cell).strip()) for cell in code_cells]
    log = page.attnlab_log

    # a. A learner's first sight, before anything runs: the fallback note, no errors.
    page.goto(lab.notebook_url(name), timeout=PAGE_LOAD_TIMEOUT)
    cells = page.locator(f"{NOTEBOOK} .jp-Cell")
    expect(cells).to_have_count(len(notebook["cells"]), timeout=PAGE_LOAD_TIMEOUT)
    for index in widget_cells:
        expect(cells.nth(index).locator(".jp-OutputArea-output")).to_contain_text(FALLBACK_NOTE)
    first_note = cells.nth(widget_cells[0]).get_by_text(FALLBACK_NOTE, exact=True)
    first_note.scroll_into_view_if_needed()
    expect(first_note).to_be_visible()
    # The kernel is up (no kernel-selection dialog stands in the way).
    expect(page.locator(f'{EXECUTION_INDICATOR}[data-status="idle"]')).to_have_count(
        1, timeout=PAGE_LOAD_TIMEOUT
    )
    dialogs = page.locator(".jp-Dialog")
    assert dialogs.count() == 0, f"{name}: a dialog is open: {dialogs.first.inner_text()!r}"
    _dismiss_toasts(page)
    # Outputs only: the lessons' own text may well name "Error displaying widget".
    first_sight = "\n".join(page.locator(f"{NOTEBOOK} .jp-OutputArea-output").all_inner_texts())
    for phrase in FORBIDDEN_BEFORE_RUN:
        assert phrase not in first_sight, f"{name} shows {phrase!r} before any cell has run"
    raw = RAW_WIDGET_REPR.search(first_sight)
    assert raw is None, f"{name} shows a raw widget repr before running: {raw.group(0)!r}"

    # b. Run → Run All Cells, on cleared outputs so that old counts cannot pass for new.
    _menu(page, "Edit", "editmenu:clear-all")
    expect(cells.nth(widget_cells[0]).locator(".jp-OutputArea-output")).to_have_count(0)
    _menu(page, "Run", "runmenu:run-all")
    _wait_until_run(page, executed)

    # c. No error outputs; every widget rendered, with a picture that loaded.
    outputs = page.locator(f"{NOTEBOOK} .jp-OutputArea-output").all_inner_texts()
    stderr = page.locator(f"{NOTEBOOK} {STDERR_OUTPUT}").all_inner_texts()
    errors = list(
        dict.fromkeys(  # an error output is also a stderr output: list it once
            [text for text in outputs if ERROR_OUTPUT.search(text)]
            + [text for text in stderr if "Error" in text or "Traceback" in text]
        )
    )
    assert not errors, f"{name}: error output after Run All:\n" + "\n---\n".join(errors)
    prompts = page.locator(f"{NOTEBOOK} .jp-CodeCell .jp-InputPrompt").all_inner_texts()
    not_run = [
        i
        for i, (must, p) in enumerate(zip(executed, prompts, strict=True))
        if must and not re.fullmatch(r"\[\d+\]:", p.strip())
    ]
    assert not not_run, f"{name}: code cells {not_run} did not run"

    n_sliders = n_choices = 0
    for number, index in enumerate(widget_cells):
        cell = cells.nth(index)
        where = f"{name}, cell {index} ({_cell_text(notebook['cells'][index]).strip()!r})"
        expect(cell.locator(WIDGET_VIEW).first, f"{where}: no widget").to_be_visible()
        images = cell.locator(WIDGET_IMAGE)
        expect(images.first, f"{where}: the widget has no picture").to_be_attached()
        for image in images.all():
            image.scroll_into_view_if_needed()
            expect(image).to_have_js_property("complete", True)
            width = image.evaluate("img => img.naturalWidth")
            assert width > 0, f"{where}: a widget picture did not load"
        assert FALLBACK_NOTE not in cell.inner_text(), f"{where}: still the fallback note"

        # e. The lesson's first widget as it first appears, for the README.
        if number == 0:
            box = _screenshot(
                page, cell.locator(WIDGET_VIEW).first, SCREENSHOTS / f"{Path(name).stem}.png"
            )
            assert 0 < box["width"] <= MAX_SCREENSHOT_WIDTH and box["height"] > 0

        # d. Every slider, moved with the keyboard, redraws the picture.
        handles = cell.locator(SLIDER_HANDLE).all()
        for handle in handles:
            _move_slider(page, cell, handle, where)
        n_sliders += len(handles)
        # Toggle buttons and dropdowns: pick another option, the picture changes.
        for group in cell.locator(".widget-toggle-buttons").all():
            others = group.locator("button.widget-toggle-button:not(.mod-active)")
            if others.count():
                before = _image_sources(cell)
                others.first.click()
                _wait_for_new_picture(page, cell, before, f"{where}: a toggle button")
                n_choices += 1
        for select in cell.locator(".widget-dropdown select").all():
            options = select.locator("option").evaluate_all("os => os.map(o => o.value)")
            other = [value for value in options if value != select.input_value()]
            if other:
                before = _image_sources(cell)
                select.select_option(other[0])
                _wait_for_new_picture(page, cell, before, f"{where}: a dropdown")
                n_choices += 1

    # No errors in the browser console while all this happened.
    console = [message for message in log.console_errors if not _benign(message)]
    assert not log.page_errors, f"{name}: uncaught errors in the page:\n" + "\n".join(
        log.page_errors
    )
    assert not console, f"{name}: errors in the browser console:\n" + "\n".join(console)
    print(
        f"{name}: {len(widget_cells)} widget(s), {n_sliders} slider(s) moved, "
        f"{n_choices} toggle/dropdown choice(s) made"
    )


def _benign(message: str) -> bool:
    """Console errors that are no fault of the course (none are known yet)."""
    return False
