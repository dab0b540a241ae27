"""Widget for ``notebooks/00_start_here.ipynb``: the whole formula, with a scale slider.

``formula_explorer()`` shows the attention weights softmax(s · Q Kᵀ) of a tiny
example as a heatmap, and the selected query's output row next to the value
rows it mixes. The scale s runs from 0 (all weights equal: every output is the
plain average of the values) through the formula's 1/√d_k to 5 (in the built-in
example, every row gives at least 0.98 of its weight to its best-matching key).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Rectangle

from .. import plots
from ..softmax import softmax
from ._base import CourseWidget
from ._check import all_or_none, labels_for, learner_array

# The Okabe-Ito colours after the course's first two: one per value row. Vermillion
# (plots.SECOND) is left out, as it frames the selected query; near-black comes last, as it
# is hard to tell from the zero line.
_VALUE_COLOURS = (plots.THIRD, "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "0.15")
MAX_SCALE = 5.0
MAX_TOKENS = 8
MAX_D_V = 12
_ANNOTATE_CELLS = 16


class FormulaExplorer(CourseWidget):
    """softmax(scale · Q Kᵀ) as a heatmap, and one query's output next to the values.

    ``shown``: ``"weights"`` (n_q, n_k) and ``"output"`` (the framed query's row, d_v).
    """

    ncols = 2
    figsize = (7.0, 3.0)
    dpi = 100
    subplot_kw = {"gridspec_kw": {"width_ratios": [1.0, 1.1]}}

    def __init__(self, Q: np.ndarray, K: np.ndarray, V: np.ndarray, keys: list[str]) -> None:
        self.Q, self.K, self.V, self.key_labels = Q, K, V, keys
        n_q, n_k = Q.shape[0], K.shape[0]
        self.queries = keys if n_q == n_k else [f"q{i}" for i in range(n_q)]
        self.raw = Q @ K.T
        self.default_scale = 1.0 / np.sqrt(Q.shape[1])
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        scale = widgets.FloatSlider(
            value=self.default_scale,
            min=0.0,
            max=MAX_SCALE,
            step=0.05,
            description="scale",
            readout_format=".2f",
            layout=widgets.Layout(width="360px"),
        )
        query = widgets.ToggleButtons(
            options=[(label, i) for i, label in enumerate(self.queries)],
            value=0,
            description="query",
            style={"button_width": "60px"},
        )
        return {"scale": scale, "query": query}

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_o = axes[0]
        n_q, n_k, d_v = self.Q.shape[0], self.K.shape[0], self.V.shape[1]
        self.heat = plots.heatmap(
            np.zeros((n_q, n_k)),
            ax_w,
            row_labels=self.queries,
            col_labels=self.key_labels,
            # On one line the title is wider than the heatmap and its colour bar, and the
            # constrained layout would clip it rather than make room.
            title="weights =\nsoftmax(scale · Q Kᵀ)",
            vmin=0.0,
            vmax=1.0,
            annotate=n_q * n_k <= _ANNOTATE_CELLS,
        )
        if self.heat.colorbar is not None:
            self.heat.colorbar.set_label("weight")
        self.frame = Rectangle(
            (-0.5, -0.5), n_k, 1, fill=False, edgecolor=plots.SECOND, linewidth=2.5
        )
        ax_w.add_patch(self.frame)

        columns = np.arange(d_v)
        self.bars = ax_o.bar(
            columns,
            np.zeros(d_v),
            width=0.5,
            color=plots.ACCENT,
            alpha=0.75,
            label="output (framed query)",
        )
        marks = []
        for j in range(n_k):
            marks += ax_o.plot(
                columns,
                self.V[j],
                linestyle="none",
                marker="_",
                markersize=14,
                markeredgewidth=2.5,
                color=_VALUE_COLOURS[j % len(_VALUE_COLOURS)],
                label=f"value of '{self.key_labels[j]}'",
            )
        low, high = min(float(self.V.min()), 0.0), max(float(self.V.max()), 0.0)
        pad = 0.12 * (high - low or 1.0)
        ax_o.set_ylim(low - pad, high + pad)
        ax_o.axhline(0.0, color="0.4", linewidth=0.8)
        ax_o.set_xticks(columns, [str(c) for c in columns])
        ax_o.set_xlabel("column of V")
        ax_o.set_ylabel("entry")
        ax_o.set_title("output = weights · V")
        ax_o.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        # The value marks never move, but they are animated too so that they are drawn
        # over the bars (animated artists are drawn after the still background).
        return [self.heat.image, *self.heat.texts, self.frame, self.bars, *marks]

    def update(self, scale: float, query: int) -> None:
        weights = softmax(self.raw * scale)
        out = weights[query] @ self.V
        self.heat.update(weights)
        self.frame.set_y(query - 0.5)
        for bar, height in zip(self.bars.patches, out, strict=True):
            bar.set_height(height)
        self.shown = {"weights": weights, "output": out}
        name = html.escape(self.queries[query])
        row = " + ".join(f"{w:.2f}" for w in weights[query])
        d_k = self.Q.shape[1]
        self.readout.value = (
            f"<span style='font-family: monospace'>scale = {scale:.2f} "
            f"(the formula uses 1/√d_k = 1/√{d_k} = {self.default_scale:.2f})<br>"
            f"weights of {name}: {row} = {weights[query].sum():.2f}<br>"
            f"output of {name}: [{', '.join(f'{v:.2f}' for v in out)}]</span>"
        )


def formula_explorer(
    Q: Any = None, K: Any = None, V: Any = None, tokens: Sequence[str] | None = None
) -> FormulaExplorer:
    """Explore softmax(scale · Q Kᵀ) V: a scale slider and a query selector.

    Q ``(n_q, d_k)``, K ``(n_k, d_k)``, V ``(n_k, d_v)``, all or none (the
    built-in example: 3 tokens, d_k = d_v = 4); ``tokens``: one label per key
    (also used for the queries when n_q = n_k). At most 8 tokens and 12 value
    columns. The scale runs from 0 to 5 and starts at the formula's 1/√d_k.
    ``controls``: ``"scale"``, ``"query"``.

    Lesson: ``notebooks/00_start_here.ipynb``.
    """
    if not all_or_none({"Q": Q, "K": K, "V": V}):
        from ..lessons.start_here import tiny_example

        example_tokens, Q, K, V = tiny_example()
        tokens = example_tokens if tokens is None else tokens
    Q, K, V = (learner_array(x, name, ndim=2) for x, name in ((Q, "Q"), (K, "K"), (V, "V")))
    if Q.shape[1] != K.shape[1]:
        raise ValueError(
            f"Q and K must have the same number of columns d_k, but Q is {Q.shape} "
            f"and K is {K.shape}."
        )
    if V.shape[0] != K.shape[0]:
        raise ValueError(
            f"V needs one row per key: K has {K.shape[0]} rows but V has {V.shape[0]}."
        )
    if max(Q.shape[0], K.shape[0]) > MAX_TOKENS:
        raise ValueError(
            f"Q and K may have at most {MAX_TOKENS} rows each here, so the heatmap "
            f"stays readable; got {Q.shape[0]} and {K.shape[0]}."
        )
    if V.shape[1] > MAX_D_V:
        raise ValueError(f"V may have at most {MAX_D_V} columns here; got {V.shape[1]}.")
    return FormulaExplorer(Q, K, V, labels_for(tokens, K.shape[0], "tokens", "k"))
