"""What every lesson widget promises, checked through its named controls and its picture."""

import numpy as np
import pytest

import attnlab.widgets as widgets
from attnlab.widgets._base import FALLBACK_NOTE

JPEG = b"\xff\xd8\xff"  # the start of every JPEG file


@pytest.fixture(params=sorted(widgets.FACTORIES))
def widget(request):
    return getattr(widgets, request.param)()


def on_page(box):
    """Every widget inside a box, at any depth."""
    found = []
    for child in getattr(box, "children", ()):
        found += [child, *on_page(child)]
    return found


def other_values(control):
    """Up to three values of a control other than its current one."""
    if hasattr(control, "options"):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
    elif isinstance(control.value, bool):  # a checkbox
        values = [not control.value]
    else:
        values = list(np.linspace(control.min, control.max, 5))
    return [v for v in values if v != control.value][:3]


def test_factories_are_listed_and_documented():
    assert set(widgets.__all__) == set(widgets.FACTORIES)
    for name in widgets.FACTORIES:
        doc = getattr(widgets, name).__doc__
        assert "Lesson: ``notebooks/" in doc and "controls" in doc, name


def test_builds_a_picture_with_named_controls_and_what_it_shows(widget):
    assert bytes(widget.view.image.value).startswith(JPEG) and widget.view.image.format == "jpeg"
    assert widget.controls and all(isinstance(name, str) for name in widget.controls)
    assert widget.shown
    # The picture and every control are on the page.
    parts = on_page(widget)
    assert any(part is widget.view.image for part in parts)
    for name, control in widget.controls.items():
        assert any(part is control for part in parts), f"{name!r} is not on the page"


def test_a_saved_notebook_shows_the_note_not_the_widget(widget):
    bundle = widget._repr_mimebundle_()
    assert bundle["text/plain"] == FALLBACK_NOTE
    assert "application/vnd.jupyter.widget-view+json" in bundle


def visit_every_value(widget):
    for control in widget.controls.values():
        start = control.value
        for value in other_values(control):
            control.value = value
        control.value = start


def test_every_control_changes_the_picture_and_back_restores_it(widget):
    # A widget that reveals what the learner has visited (lesson 03's strip) restores its
    # picture only once those values have been seen: see them all first.
    if getattr(widget, "remembers_visits", False):
        visit_every_value(widget)
    for name, control in widget.controls.items():
        start, picture = control.value, bytes(widget.view.image.value)
        changed = 0
        for value in other_values(control):
            control.value = value
            changed += bytes(widget.view.image.value) != picture
        assert changed, f"moving {name!r} never changed the picture"
        control.value = start
        assert bytes(widget.view.image.value) == picture, f"{name!r} back: another picture"


def test_a_pillow_without_jpeg_gets_png_frames(monkeypatch):
    from PIL import Image

    save = Image.Image.save

    def no_jpeg(self, fp, format=None, **params):
        if format == "jpeg":
            raise OSError("encoder jpeg not available")
        return save(self, fp, format=format, **params)

    monkeypatch.setattr(Image.Image, "save", no_jpeg)
    w = widgets.softmax_row()
    assert w.view.image.format == "png"
    assert bytes(w.view.image.value).startswith(b"\x89PNG\r\n\x1a\n")
