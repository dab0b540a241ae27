"""What every course widget shares: a figure shown as an image, and a fallback note.

A widget's figure is a plain matplotlib ``Figure`` (not pyplot, so the
notebook never shows a stray static copy of it), rendered to PNG into an
``ipywidgets.Image``. This needs no matplotlib widget backend, so it works the
same in JupyterLab, on Binder and in headless tests.

Speed comes from blitting: the parts of the figure that never change (axes,
ticks, labels, colorbars) are drawn once and kept as a background; on each
change only the artists registered with :meth:`FigureView.animate` are drawn
over it. A full draw of a small figure takes tens of milliseconds, most of it
text layout; a blit takes a few.
"""

from __future__ import annotations

import io

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

FALLBACK_NOTE = "[Interactive widget: run this cell to use it.]"

_SHAPE_WORDS = {1: "one row of numbers (1-D)", 2: "a matrix (2-D, one row per token)"}


def learner_array(x, name: str, ndim: int) -> np.ndarray:
    """A learner's data for a widget as float64, or a TypeError/ValueError naming it.

    Each factory then checks the sizes its picture can show.
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, for example
        raise TypeError(f"{name} could not be turned into a NumPy array: {exc}") from None
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, but it has dtype {arr.dtype}.")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {_SHAPE_WORDS[ndim]}, but it has shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}).")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must hold finite numbers: no NaN or inf.")
    return arr.astype(np.float64)


class FigureView:
    """A matplotlib figure shown in an ``ipywidgets.Image``, redrawn by blitting."""

    def __init__(self, ncols=1, nrows=1, *, figsize=(6.0, 3.0), dpi=80, **subplot_kw):
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.axes = self.figure.subplots(nrows, ncols, squeeze=False, **subplot_kw)
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="auto"))
        self._animated: list = []
        self._background = None

    def animate(self, *artists) -> None:
        """Register artists that change with the controls (images, bars, lines, texts)."""
        for artist in artists:
            if isinstance(artist, (list, tuple)) or hasattr(artist, "patches"):
                self.animate(*getattr(artist, "patches", artist))
                continue
            artist.set_animated(True)
            self._animated.append(artist)

    def redraw(self, *, full: bool = False) -> None:
        """Show the figure as it is now.

        Pass ``full=True`` after changing anything that is not animated (axis
        limits, titles, tick labels): the background is then drawn anew.
        """
        if full or self._background is None:
            self.canvas.draw()  # animated artists are left out of this draw
            if self.figure.get_layout_engine() is not None:
                # The constrained layout is solved once; later frames keep it,
                # so the axes do not jump while a slider moves.
                self.figure.set_layout_engine("none")
            self._background = self.canvas.copy_from_bbox(self.figure.bbox)
        else:
            self.canvas.restore_region(self._background)
        renderer = self.canvas.get_renderer()
        for artist in self._animated:
            if artist.get_visible():
                artist.draw(renderer)
        self.image.value = self.png()

    def png(self) -> bytes:
        """The canvas as PNG bytes (fast compression: these images live for a moment)."""
        buffer = io.BytesIO()
        rgba = Image.frombuffer("RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba())
        rgba.save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


class CourseWidget(widgets.VBox):
    """A lesson widget: its controls by name, its figure view, and a plain-text fallback.

    ``controls`` maps a name to each control, so code (and the tests) can set
    ``w.controls["d_k"].value = 64`` and see the view change. Before its cell
    has run, a saved notebook shows ``FALLBACK_NOTE`` instead of an error.
    """

    def __init__(self, children, controls: dict, view: FigureView | None = None, **kwargs):
        super().__init__(children, **kwargs)
        self.controls = controls
        self.view = view

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle:
            bundle["text/plain"] = FALLBACK_NOTE
        return bundle
