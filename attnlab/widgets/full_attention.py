"""Pattern gallery: five constructed attention patterns (and yours) under a temperature slider.

Formula: weights ``W = softmax(β Q Kᵀ / T)`` with β = 4 and the temperature T
from the slider; next to them, the entropy of each row, ``-Σ_j W_ij log W_ij``,
from 0 (one key) to log n (uniform). The constructions of Q and K are those of
``attnlab.lessons.full_attention.pattern_qk``.

Lesson: ``notebooks/06_full_attention.ipynb``.
"""

from __future__ import annotations

import html

import numpy as np

from ..lessons.full_attention import (
    PATTERNS,
    SHARPNESS,
    WIDE_QUERY,
    pattern_qk,
    row_entropy,
)
from ..softmax import softmax
from ._base import CourseWidget, FigureView, learner_array

MIN_TOKENS, MAX_TOKENS = 6, 24
MAX_DIM = 64
TEMPERATURES = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0)
YOURS = "yours"

DESCRIPTIONS = {
    "local": "Q = K = sinusoidal position codes: their dot product depends only on the "
    "distance i − j and is largest at 0, so each query looks at its neighbours.",
    "vertical": "Every query is the same direction u, and only key 0 has it: every row "
    "puts its weight on the first token (an attention sink).",
    "horizontal": f"One-hot positions, so each query picks its own key, except query "
    f"{WIDE_QUERY}, which is the zero vector: all its scores are 0, its row "
    f"is uniform.",
    "block": "One-hot of the segment (4 tokens each): a query scores its own segment's "
    "keys high and all of them equally.",
    "global": "Every query is the zero vector: every score is 0 and every row is "
    "uniform, whatever the temperature.",
    YOURS: "Your Q and K.",
}


def _check_matrix(x, name: str) -> np.ndarray:
    arr = learner_array(x, name, ndim=2)
    if not MIN_TOKENS <= arr.shape[0] <= MAX_TOKENS:
        raise ValueError(
            f"{name} has {arr.shape[0]} rows; the gallery shows "
            f"{MIN_TOKENS} to {MAX_TOKENS} tokens."
        )
    if not 1 <= arr.shape[1] <= MAX_DIM:
        raise ValueError(f"{name} has {arr.shape[1]} columns; the gallery takes 1 to {MAX_DIM}.")
    return arr


def _check_inputs(n, Q, K) -> tuple[int, np.ndarray | None]:
    """The sequence length and the learner's scores β Q Kᵀ (or None), after checking."""
    if (Q is None) != (K is None):
        missing = "K" if K is None else "Q"
        raise ValueError(f"Pass both Q and K for your own pattern; {missing} is missing.")
    if Q is not None:
        Q, K = _check_matrix(Q, "Q"), _check_matrix(K, "K")
        if Q.shape != K.shape:
            raise ValueError(
                f"Q and K must have the same shape (n tokens, d features) for a "
                f"square pattern; Q has {Q.shape}, K has {K.shape}."
            )
        if n is not None and n != Q.shape[0]:
            raise ValueError(
                f"n={n} disagrees with your Q and K, which have {Q.shape[0]} rows; leave n out."
            )
        return Q.shape[0], SHARPNESS * (Q @ K.T)
    if n is None:
        return 12, None
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be a whole number of tokens, got {n!r}.")
    if not MIN_TOKENS <= n <= MAX_TOKENS:
        raise ValueError(f"n must be between {MIN_TOKENS} and {MAX_TOKENS}, got {n}.")
    return int(n), None


def _summary(W: np.ndarray, H: np.ndarray) -> str:
    return f"mean {H.mean():.2f} nats,  mean largest weight {W.max(axis=1).mean():.2f}"


def pattern_gallery(n=None, Q=None, K=None) -> CourseWidget:
    """The weights of a chosen pattern at a chosen temperature, with each row's entropy.

    ``n``: optional number of tokens for the built-in patterns, 6 to 24 (default 12).
    ``Q``, ``K``: optional, your own queries and keys, both ``(n, d)`` with 6 to 24
    rows and at most 64 columns; they appear as the pattern "yours", with weights
    ``softmax(4 Q Kᵀ / T)`` like the others.
    The colour scale stays at 0..1 and the entropy axis at 0..log n, so what changes
    is the pattern, never the scale. ``controls``: ``"pattern"``, ``"temperature"``.

    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    import ipywidgets as widgets

    from .. import plots

    n, yours = _check_inputs(n, Q, K)
    scores = {name: SHARPNESS * np.matmul(*_qk_t(name, n)) for name in PATTERNS}
    if yours is not None:
        scores[YOURS] = yours
    names = list(scores)
    log_n = float(np.log(n))

    picker = widgets.ToggleButtons(
        options=names, value=names[0], description="pattern", style={"button_width": "82px"}
    )
    slider = widgets.FloatLogSlider(
        value=1.0,
        base=10,
        min=-1,
        max=1,
        step=0.02,
        description="temperature T",
        readout_format=".2f",
        style={"description_width": "initial"},
        layout=widgets.Layout(width="420px"),
    )
    slider.example_values = [*TEMPERATURES, 1.0]  # for the latency benchmark (a log scale)
    note = widgets.HTML()

    view = FigureView(
        ncols=2, figsize=(7.2, 3.3), dpi=80, gridspec_kw={"width_ratios": [1.25, 1.0]}
    )
    ax_w, ax_h = view.axes[0]
    W = softmax(scores[picker.value] / slider.value)
    H = row_entropy(W)
    heat = plots.heatmap(
        W, ax_w, title="weights softmax(β Q Kᵀ / T)", vmin=0.0, vmax=1.0, annotate=False
    )
    ticks = range(0, n, 3 if n <= 15 else 4)
    ax_w.set_xticks(ticks, ticks)
    ax_w.set_yticks(ticks, ticks)
    ax_w.set_title(ax_w.get_title(), fontsize=10, pad=14)
    bars = ax_h.barh(np.arange(n), H, color=plots.ACCENT, height=0.7)
    ax_h.set_ylim(n - 0.5, -0.5)  # query 0 at the top, as in the heatmap
    ax_h.set_xlim(0, log_n * 1.45)
    ax_h.set_yticks(ticks, ticks)
    ax_h.axvline(log_n, color="grey", lw=1, ls=":")
    ax_h.text(log_n, n - 0.6, " log n\n uniform", color="grey", fontsize=7, va="bottom")
    # The changing numbers sit in the gap the title's padding leaves above the axes.
    ax_h.set_title("entropy of each row", fontsize=10, pad=14)
    ax_h.set_xlabel("nats")
    ax_h.set_ylabel("query")
    status = ax_h.text(
        0.5,
        1.015,
        _summary(W, H),
        transform=ax_h.transAxes,
        ha="center",
        va="bottom",
        fontsize=8,
        color=plots.ACCENT,
    )
    view.animate(heat.image, bars, status)

    def show(change=None) -> None:
        weights = softmax(scores[picker.value] / slider.value)
        entropy = row_entropy(weights)
        heat.update(weights)
        for bar, width in zip(bars.patches, entropy, strict=True):
            bar.set_width(width)
        status.set_text(_summary(weights, entropy))
        note.value = (
            f"<b>{html.escape(picker.value)}</b>: {html.escape(DESCRIPTIONS[picker.value])}"
        )
        view.redraw()

    picker.observe(show, names="value")
    slider.observe(show, names="value")
    show()
    return CourseWidget(
        [picker, slider, view.image, note],
        controls={"pattern": picker, "temperature": slider},
        view=view,
    )


def _qk_t(name: str, n: int):
    Q, K = pattern_qk(name, n)
    return Q, K.T
