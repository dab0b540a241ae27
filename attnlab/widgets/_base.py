"""What every course widget shares: a figure shown as an image, controls by name, a fallback note.

A lesson's widget is a small subclass of :class:`CourseWidget`. It declares

- its controls, in :meth:`~CourseWidget.make_controls` (a dict: name → ipywidgets control);
- its figure, in :meth:`~CourseWidget.draw`: everything drawn once, and the artists
  that change with the controls;
- :meth:`~CourseWidget.update`, called with the controls' values by name whenever one
  of them changes; it sets the changing artists' data and records what it shows in
  ``self.shown``.

The base class owns the rest: the figure, the blitting, the image sent to the
page, wiring the controls, and the plain-text note a saved notebook shows.

A widget's figure is a plain matplotlib ``Figure`` (not pyplot, so the
notebook never shows a stray static copy of it), rendered into an
``ipywidgets.Image`` (a JPEG, see :meth:`FigureView.frame`). This needs no matplotlib
widget backend, so it works the same in JupyterLab, on Binder and in headless tests.

Speed comes from blitting: the parts of the figure that never change (axes,
ticks, labels, colorbars) are drawn once and kept as a background; on each
change only the animated artists are drawn over it. A full draw of a small
figure takes tens of milliseconds, most of it text layout; a blit takes a few.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

# What a saved notebook shows in place of a widget. If it is still there after the cell
# has run, JupyterLab has no renderer for widgets: the extension is missing.
FALLBACK_NOTE = (
    "[Interactive widget: run this cell to use it. If this note is still here after the "
    "cell has run, the widget extension is missing: see the environment check in lesson 00.]"
)


class FigureView:
    """A matplotlib figure shown in an ``ipywidgets.Image``, redrawn by blitting.

    ``image``: an existing Image to draw into (a widget that rebuilds its figure
    keeps its place on the page); by default a new one.
    """

    def __init__(
        self,
        ncols: int = 1,
        nrows: int = 1,
        *,
        figsize: tuple[float, float] = (6.0, 3.0),
        dpi: int = 80,
        image: widgets.Image | None = None,
        **subplot_kw: Any,
    ) -> None:
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.axes: np.ndarray = self.figure.subplots(nrows, ncols, squeeze=False, **subplot_kw)
        self.image = image or widgets.Image(format="jpeg", layout=widgets.Layout(width="auto"))
        self._animated: list[Artist] = []
        self._background: Any = None

    def animate(self, *artists: Any) -> None:
        """Register artists that change with the controls (images, bars, lines, texts).

        A container (a list, or matplotlib's ``BarContainer``) registers each member.
        """
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
        # The format first, so that the page never reads these bytes as the old format.
        self.image.format, self.image.value = self.frame()

    def frame(self) -> tuple[str, bytes]:
        """The canvas as an image file: ``("jpeg", bytes)``, or PNG where Pillow has no JPEG.

        Encoding a frame as PNG takes 5-8 ms here, a quarter of the 30 ms a redraw may
        take; JPEG takes 1-2 ms for about the same size. At quality 90 with full colour
        resolution (no chroma subsampling) text and thin lines look the same as in a PNG,
        and these images live only until the next change.
        """
        rgba = Image.frombuffer("RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba())
        buffer = io.BytesIO()
        try:
            rgba.convert("RGB").save(buffer, format="jpeg", quality=90, subsampling=0)
            return "jpeg", buffer.getvalue()
        except (OSError, KeyError):  # a Pillow built without libjpeg
            buffer = io.BytesIO()
            rgba.save(buffer, format="png", compress_level=1)
            return "png", buffer.getvalue()


class CourseWidget(widgets.VBox):
    """A lesson widget: controls by name, a figure redrawn on every change, a fallback note.

    ``controls`` maps a name to each control, so code (and the tests) can set
    ``w.controls["d_k"].value = 64`` and see the view change. ``shown`` holds the
    numbers the view shows now (weights, outputs, ...), by name. ``readout`` is an
    HTML line under the figure for widgets that spell out their numbers. Before its
    cell has run, a saved notebook shows ``FALLBACK_NOTE`` instead of an error.

    Subclasses set the figure's shape (``ncols``, ``nrows``, ``figsize``, ``dpi``,
    ``subplot_kw``) and implement :meth:`make_controls`, :meth:`draw` and
    :meth:`update`; :meth:`arrange` places the parts when the default (controls in
    a row, then the figure, then the readout) does not suit.
    """

    ncols: int = 1
    nrows: int = 1
    figsize: tuple[float, float] = (6.0, 3.0)
    dpi: int = 80
    subplot_kw: Mapping[str, Any] = {}

    def __init__(self) -> None:
        self.shown: dict[str, Any] = {}
        self._paused = False
        self.readout = widgets.HTML()
        self.controls: dict[str, widgets.ValueWidget] = self.make_controls()
        self.view = self._new_view()
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        super().__init__(list(self.arrange()))
        self.refresh()

    # -- what a lesson's widget declares ------------------------------------------------

    def make_controls(self) -> dict[str, widgets.ValueWidget]:
        """The controls, by name, in the order they are shown."""
        raise NotImplementedError

    def draw(self, axes: np.ndarray) -> Iterable[Any]:
        """Draw what never changes on ``axes`` (``(nrows, ncols)``); return the changing artists."""
        raise NotImplementedError

    def update(self, *args: Any, **values: Any) -> None:
        """Set the changing artists for the controls' ``values`` (by name); fill ``self.shown``.

        A subclass names its controls as its parameters, ``update(self, d_k, divisor)``;
        it is always called with keywords.
        """
        raise NotImplementedError

    def arrange(self) -> Iterable[widgets.Widget]:
        """The widget's parts, top to bottom."""
        return [widgets.HBox(list(self.controls.values())), self.view.image, self.readout]

    # -- what the base class does ---------------------------------------------------------

    def values(self) -> dict[str, Any]:
        """Each control's current value, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def refresh(self) -> None:
        """Update the view for the controls' current values and send the new picture."""
        self.update(**self.values())
        self.view.redraw()

    def rebuild(self) -> None:
        """Draw the whole figure anew into the same image (after the data changed shape)."""
        self.view = self._new_view(image=self.view.image)
        self.refresh()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Change several controls at once (new options, say) without redrawing for each."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def _new_view(self, image: widgets.Image | None = None) -> FigureView:
        view = FigureView(
            self.ncols,
            self.nrows,
            figsize=self.figsize,
            dpi=self.dpi,
            image=image,
            **dict(self.subplot_kw),
        )
        view.animate(*self.draw(view.axes))
        return view

    def _changed(self, _change: Any = None) -> None:
        if not self._paused:
            self.refresh()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle:
            bundle["text/plain"] = FALLBACK_NOTE
        return bundle


def temperature_slider(example_values: Iterable[float]) -> widgets.FloatLogSlider:
    """A log slider for a softmax temperature τ from 0.1 to 10, starting at 1.

    ``example_values`` are values a learner would try, for the latency benchmark (which
    cannot guess a log scale).
    """
    slider = widgets.FloatLogSlider(
        value=1.0,
        base=10,
        min=-1,
        max=1,
        step=0.02,
        description="temperature τ",
        readout_format=".2f",
        style={"description_width": "initial"},
        layout=widgets.Layout(width="420px"),
    )
    slider.example_values = list(example_values)
    return slider
