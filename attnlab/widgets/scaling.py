"""Scaling strip: one row of raw scores, divided by d_k^p for p from 0 (÷1) to 1/2 (÷√d_k).

Formula: weights ``softmax(s / d_k^p)``. At p = 0 the raw scores q·k (standard
deviation √d_k) make the row nearly one-hot; at p = 1/2 they have standard
deviation 1 and the weights spread out.

Lesson: ``notebooks/03_scaling.ipynb``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..lessons.scaling import entropy
from ..softmax import softmax
from ._base import CourseWidget, FigureView, learner_array

DEFAULT_D_K = 256
DEFAULT_KEYS = 10
SEED = 7
# Every weight cell has its value written in; each written value costs ~1 ms a frame.
MAX_KEYS = 16
EXPONENTS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5)


def _check_d_k(d_k) -> int:
    if isinstance(d_k, (bool, np.bool_)) or not isinstance(d_k, numbers.Integral):
        raise TypeError(f"d_k must be a whole number (the length of q and k), got {d_k!r}.")
    if d_k < 1:
        raise ValueError(f"d_k must be at least 1, got {d_k}.")
    return int(d_k)


def _check_scores(scores) -> np.ndarray:
    arr = learner_array(scores, "scores", ndim=1)
    if not 2 <= arr.size <= MAX_KEYS:
        raise ValueError(
            f"scores must hold between 2 and {MAX_KEYS} numbers (one per key), got {arr.size}."
        )
    return arr


def example_scores(d_k: int = DEFAULT_D_K, n_keys: int = DEFAULT_KEYS, seed: int = SEED):
    """One query dotted with ``n_keys`` keys, all entries ~ N(0, 1): scores of variance d_k."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)
    K = rng.standard_normal((n_keys, d_k))
    return K @ q


def _status(p: np.ndarray) -> str:
    return f"largest {p.max():.3f}    entropy {float(entropy(p)):.2f} nats"


def _divisor_html(s: np.ndarray, divisor: float, d_k: int) -> str:
    if divisor == 1.0:
        which = " (the raw scores)"
    elif np.isclose(divisor, np.sqrt(d_k)):
        which = " = √d_k"
    else:
        which = ""
    return f"scores ÷ <b>{divisor:.2f}</b>{which}: they now run from {s.min():.1f} to {s.max():.1f}"


def scaling_strip(scores=None, d_k=None) -> CourseWidget:
    """A strip of softmax weights for one score row, with a slider dividing the scores by d_k^p.

    ``scores``: optional 1-D array of 2 to 16 finite raw scores; pass ``d_k`` with them.
    ``d_k``: optional whole number ≥ 1 (default 256); alone, it makes a built-in row of
    10 scores q·k of that length (seeded). The slider moves p from 0 (÷1, the raw scores)
    to 0.5 (÷√d_k). ``controls``: ``"p"``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    import ipywidgets as widgets

    from .. import plots

    if scores is None:
        d_k = DEFAULT_D_K if d_k is None else _check_d_k(d_k)
        s = example_scores(d_k)
    else:
        s = _check_scores(scores)
        if d_k is None:
            raise ValueError(
                "d_k is needed with your scores: the slider divides them by d_k^p, up to "
                "√d_k. Pass the length of your query and key vectors, e.g. "
                "scaling_strip(scores=s, d_k=64)."
            )
        d_k = _check_d_k(d_k)
    n = s.size
    root = np.sqrt(d_k)

    slider = widgets.FloatSlider(
        value=0.0,
        min=0.0,
        max=0.5,
        step=0.025,
        description="divide by d_k^p,  p =",
        readout_format=".3f",
        continuous_update=True,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="420px"),
    )
    slider.example_values = list(EXPONENTS)
    ends = widgets.HTML(
        f"p = 0: ÷ 1, the raw scores &nbsp;…&nbsp; p = 0.5: ÷ √d_k = ÷ {root:.2f} (d_k = {d_k})"
    )

    label = widgets.HTML()
    view = FigureView(nrows=2, figsize=(7.0, 2.5), dpi=80)
    ax_w, ax_s = view.axes[:, 0]
    strip = plots.weight_strip(softmax(s), ax_w, xlabel="")
    ax_w.set_title(
        f"softmax weights (uniform row: entropy log {n} = {np.log(n):.2f})", loc="left", fontsize=9
    )
    ax_w.set_title("")  # weight_strip's centred title: the left one above replaces it
    ax_w.set_xticks([])
    status = ax_w.text(
        1.0,
        1.04,
        "",
        transform=ax_w.transAxes,
        ha="right",
        va="bottom",
        fontsize=9,
        fontweight="bold",
    )
    # The colours keep the raw scores' range, so the scores visibly fade as they shrink.
    limit = float(np.abs(s).max()) or 1.0
    scores_strip = plots.heatmap(
        s,
        ax_s,
        cmap=plots.SIGNED_CMAP,
        vmin=-limit,
        vmax=limit,
        annotate=False,
        colorbar=False,
        xlabel="key",
        ylabel="",
    )
    ax_s.set_title(
        r"scores ÷ $d_k^{\,p}$ (colours on the raw scores' scale)", loc="left", fontsize=9
    )
    ax_s.set_yticks([])
    view.animate(strip.image, *strip.texts, scores_strip.image, status)

    def show(change=None) -> None:
        divisor = float(d_k) ** slider.value
        scaled = s / divisor
        weights = softmax(scaled)
        strip.update(weights)
        scores_strip.update(scaled)
        status.set_text(_status(weights))
        label.value = _divisor_html(scaled, divisor, d_k)
        view.redraw()

    slider.observe(show, names="value")
    show()
    widget = CourseWidget([slider, ends, label, view.image], controls={"p": slider}, view=view)
    # For tests and curious learners: the raw row, and what the view shows now.
    widget.scores, widget.d_k = s, d_k
    widget.strip, widget.status, widget.label = strip, status, label
    return widget
