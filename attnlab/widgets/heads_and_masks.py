"""Pattern gallery: five constructed attention patterns (and yours) under a temperature slider.

Formula: weights ``W = softmax(β Q Kᵀ / τ)`` with β = 4 and the temperature τ
from the slider; next to them, the entropy of each row, ``-Σ_j W_ij log W_ij``,
from 0 (one key) to log n (uniform). The constructions of Q and K are those of
``attnlab.lessons.heads_and_masks.pattern_qk``.

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..lessons.heads_and_masks import GLOBAL_TOKEN, PATTERNS, SHARPNESS, WIDE_QUERY, pattern_qk
from ..softmax import entropy, softmax
from ._base import CourseWidget
from ._check import learner_array, whole_number

MIN_TOKENS, MAX_TOKENS = 6, 24
DEFAULT_TOKENS = 12
MAX_DIM = 64
TEMPERATURES = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0)
YOURS = "yours"

DESCRIPTIONS = {
    "local": "Q = K = sinusoidal position codes: their dot product depends only on the "
    "distance i − j and is largest at 0, so each query looks at its neighbours.",
    "vertical": "Every query is the same direction u, and only key 0 has it: every row "
    "puts its weight on the first token (an attention sink).",
    "horizontal": f"Each query looks one token back (query i is key i − 1's one-hot code), "
    f"except query {WIDE_QUERY}, which is the zero vector: all its scores are 0, so its row "
    f"spreads evenly over the sequence.",
    "block": "One-hot of the segment (4 tokens each): a query scores its own segment's "
    "keys high and all of them equally.",
    "global": f"The local pattern plus one global token, {GLOBAL_TOKEN}: its query is zero, so "
    f"it attends to every token (a row), and every query scores its key as high as its own "
    f"position (a column), as in Longformer and BigBird.",
    YOURS: "Your Q and K.",
}


class PatternGallery(CourseWidget):
    """The weights of the chosen pattern at the chosen temperature, and each row's entropy.

    ``scores``: pattern name → its scores β Q Kᵀ, all (n, n). ``shown``:
    ``"weights"`` (n, n) and ``"entropy"`` (n,) of the pattern shown.
    """

    ncols = 2
    figsize = (7.2, 3.3)
    subplot_kw = {"gridspec_kw": {"width_ratios": [1.25, 1.0]}}

    def __init__(self, scores: dict[str, np.ndarray]) -> None:
        self.scores = scores
        self.n = next(iter(scores.values())).shape[0]
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        names = list(self.scores)
        picker = widgets.ToggleButtons(
            options=names, value=names[0], description="pattern", style={"button_width": "82px"}
        )
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
        slider.example_values = [*TEMPERATURES, 1.0]  # for the latency benchmark (a log scale)
        return {"pattern": picker, "temperature": slider}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.view.image, self.readout]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_h = axes[0]
        n = self.n
        log_n = float(np.log(n))
        self.heat = plots.heatmap(
            np.zeros((n, n)),
            ax_w,
            title="weights softmax(β Q Kᵀ / τ)",
            vmin=0.0,
            vmax=1.0,
            annotate=False,
        )
        ticks = range(0, n, 3 if n <= 15 else 4)
        ax_w.set_xticks(ticks, ticks)
        ax_w.set_yticks(ticks, ticks)
        ax_w.set_title(ax_w.get_title(), fontsize=10, pad=14)
        self.bars = ax_h.barh(np.arange(n), np.zeros(n), color=plots.ACCENT, height=0.7)
        ax_h.set_ylim(n - 0.5, -0.5)  # query 0 at the top, as in the heatmap
        ax_h.set_xlim(0, log_n * 1.45)
        ax_h.set_yticks(ticks, ticks)
        ax_h.axvline(log_n, color="grey", lw=1, ls=":")
        ax_h.text(log_n, n - 0.6, " log n\n uniform", color="grey", fontsize=7, va="bottom")
        # The changing numbers sit in the gap the title's padding leaves above the axes.
        ax_h.set_title("entropy of each row", fontsize=10, pad=14)
        ax_h.set_xlabel("nats")
        ax_h.set_ylabel("query")
        self.status = ax_h.text(
            0.5,
            1.015,
            "",
            transform=ax_h.transAxes,
            ha="center",
            va="bottom",
            fontsize=8,
            color=plots.ACCENT,
        )
        return [self.heat.image, self.bars, self.status]

    def update(self, pattern: str, temperature: float) -> None:
        weights = softmax(self.scores[pattern] / temperature)
        row_entropy = entropy(weights)
        self.heat.update(weights)
        for bar, width in zip(self.bars.patches, row_entropy, strict=True):
            bar.set_width(width)
        self.status.set_text(
            f"mean {row_entropy.mean():.2f} nats,  "
            f"mean largest weight {weights.max(axis=1).mean():.2f}"
        )
        self.readout.value = f"<b>{html.escape(pattern)}</b>: {html.escape(DESCRIPTIONS[pattern])}"
        self.shown = {"weights": weights, "entropy": row_entropy}


def _matrix(x: Any, name: str) -> np.ndarray:
    arr = learner_array(x, name, ndim=2)
    if not MIN_TOKENS <= arr.shape[0] <= MAX_TOKENS:
        raise ValueError(
            f"{name} has {arr.shape[0]} rows; the gallery shows "
            f"{MIN_TOKENS} to {MAX_TOKENS} tokens."
        )
    if not 1 <= arr.shape[1] <= MAX_DIM:
        raise ValueError(f"{name} has {arr.shape[1]} columns; the gallery takes 1 to {MAX_DIM}.")
    return arr


def pattern_gallery(n: int | None = None, Q: Any = None, K: Any = None) -> PatternGallery:
    """The weights of a chosen pattern at a chosen temperature, with each row's entropy.

    ``n``: optional number of tokens for the built-in patterns, 6 to 24 (default 12).
    ``Q``, ``K``: optional, your own queries and keys, both ``(n, d)`` with 6 to 24
    rows and at most 64 columns; they appear as the pattern "yours", with weights
    ``softmax(4 Q Kᵀ / τ)`` like the others.
    The colour scale stays at 0..1 and the entropy axis at 0..log n, so what changes
    is the pattern, never the scale. ``controls``: ``"pattern"``, ``"temperature"``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    if (Q is None) != (K is None):
        missing = "K" if K is None else "Q"
        raise ValueError(f"Pass both Q and K for your own pattern; {missing} is missing.")
    yours = None
    if Q is not None:
        Q, K = _matrix(Q, "Q"), _matrix(K, "K")
        if Q.shape != K.shape:
            raise ValueError(
                f"Q and K must have the same shape (n tokens, d features) for a "
                f"square pattern; Q has {Q.shape}, K has {K.shape}."
            )
        if n is not None and n != Q.shape[0]:
            raise ValueError(
                f"n={n} disagrees with your Q and K, which have {Q.shape[0]} rows; leave n out."
            )
        n, yours = Q.shape[0], SHARPNESS * (Q @ K.T)
    elif n is None:
        n = DEFAULT_TOKENS
    else:
        n = whole_number(n, "n", "a number of tokens", MIN_TOKENS, MAX_TOKENS)
    scores = {}
    for name in PATTERNS:
        Qp, Kp = pattern_qk(name, n)
        scores[name] = SHARPNESS * (Qp @ Kp.T)
    if yours is not None:
        scores[YOURS] = yours
    return PatternGallery(scores)
