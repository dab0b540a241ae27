"""Widget for ``notebooks/00_start_here.ipynb``: the whole formula, with a scale slider.

``formula_explorer()`` shows the attention weights softmax(s · Q Kᵀ) of a tiny
example as a heatmap, and the selected query's output row next to the value
rows it mixes. The scale s runs from 0 (all weights equal: every output is the
plain average of the values) through the formula's 1/√d_k to 2 (weights piled
onto the best-matching key).
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Rectangle

from .. import plots
from ..softmax import softmax
from ._base import CourseWidget, FigureView, learner_array

# The Okabe-Ito colours after the course's first three: one per value row.
# Vermillion (plots.SECOND) is left out: it frames the selected query.
_VALUE_COLOURS = (plots.THIRD, "#CC79A7", "0.15", "#E69F00", "#56B4E9", "#F0E442")
_MAX_TOKENS = 8
_MAX_D_V = 12
_ANNOTATE_CELLS = 16


def _matrix(x, name: str) -> np.ndarray:
    return learner_array(x, name, ndim=2)


def _check_inputs(Q, K, V, tokens):
    from ..lessons.start_here import tiny_example

    given = [name for name, x in (("Q", Q), ("K", K), ("V", V)) if x is not None]
    if given and len(given) < 3:
        missing = [name for name in ("Q", "K", "V") if name not in given]
        raise ValueError(
            f"Pass Q, K and V together (missing: {', '.join(missing)}), or none "
            "of them for the built-in example."
        )
    if not given:
        default_tokens, Q, K, V = tiny_example()
        tokens = default_tokens if tokens is None else tokens
    Q, K, V = _matrix(Q, "Q"), _matrix(K, "K"), _matrix(V, "V")
    if Q.shape[1] != K.shape[1]:
        raise ValueError(
            f"Q and K must have the same number of columns d_k, but Q is {Q.shape} "
            f"and K is {K.shape}."
        )
    if V.shape[0] != K.shape[0]:
        raise ValueError(
            f"V needs one row per key: K has {K.shape[0]} rows but V has {V.shape[0]}."
        )
    if max(Q.shape[0], K.shape[0]) > _MAX_TOKENS:
        raise ValueError(
            f"Q and K may have at most {_MAX_TOKENS} rows each here, so the heatmap "
            f"stays readable; got {Q.shape[0]} and {K.shape[0]}."
        )
    if V.shape[1] > _MAX_D_V:
        raise ValueError(f"V may have at most {_MAX_D_V} columns here; got {V.shape[1]}.")
    n_q, n_k = Q.shape[0], K.shape[0]
    if tokens is None:
        keys = [f"k{j}" for j in range(n_k)]
        queries = [f"q{i}" for i in range(n_q)]
    else:
        if isinstance(tokens, str) or len(tokens) != n_k:
            raise ValueError(
                f"tokens must be a list of {n_k} labels, one per key (row of K); got {tokens!r}."
            )
        keys = [str(t) for t in tokens]
        queries = keys if n_q == n_k else [f"q{i}" for i in range(n_q)]
    return Q, K, V, queries, keys


def formula_explorer(Q=None, K=None, V=None, tokens=None) -> CourseWidget:
    """Explore softmax(scale · Q Kᵀ) V: a scale slider and a query selector.

    Q ``(n_q, d_k)``, K ``(n_k, d_k)``, V ``(n_k, d_v)``, all or none (the
    built-in example: 3 tokens, d_k = d_v = 4); ``tokens``: one label per key
    (also used for the queries when n_q = n_k). At most 8 tokens and 12 value
    columns. The scale starts at the formula's 1/√d_k.

    Lesson: ``notebooks/00_start_here.ipynb``.
    """
    Q, K, V, queries, keys = _check_inputs(Q, K, V, tokens)
    (n_q, d_k), (n_k, d_v) = Q.shape, V.shape
    raw = Q @ K.T
    default_scale = 1.0 / np.sqrt(d_k)

    view = FigureView(ncols=2, figsize=(7.0, 3.0), gridspec_kw={"width_ratios": [1.0, 1.1]})
    ax_w, ax_o = view.axes[0]
    heat = plots.heatmap(
        softmax(raw * default_scale),
        ax_w,
        row_labels=queries,
        col_labels=keys,
        title="weights = softmax(scale · Q Kᵀ)",
        vmin=0.0,
        vmax=1.0,
        annotate=n_q * n_k <= _ANNOTATE_CELLS,
    )
    frame = Rectangle((-0.5, -0.5), n_k, 1, fill=False, edgecolor=plots.SECOND, linewidth=2.5)
    ax_w.add_patch(frame)

    columns = np.arange(d_v)
    bars = ax_o.bar(
        columns,
        np.zeros(d_v),
        width=0.5,
        color=plots.ACCENT,
        alpha=0.75,
        label="output (framed query)",
    )
    marks = []
    for j in range(n_k):
        colour = _VALUE_COLOURS[j % len(_VALUE_COLOURS)]
        marks += ax_o.plot(
            columns,
            V[j],
            linestyle="none",
            marker="_",
            markersize=14,
            markeredgewidth=2.5,
            color=colour,
            label=f"value of '{keys[j]}'",
        )
    low, high = min(float(V.min()), 0.0), max(float(V.max()), 0.0)
    pad = 0.12 * (high - low or 1.0)
    ax_o.set_ylim(low - pad, high + pad)
    ax_o.axhline(0.0, color="0.4", linewidth=0.8)
    ax_o.set_xticks(columns, [str(c) for c in columns])
    ax_o.set_xlabel("column of V")
    ax_o.set_ylabel("value")
    ax_o.set_title("output = weights · V")
    ax_o.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    # The value marks never move, but they are animated too so that they are drawn
    # over the bars (animated artists are drawn after the still background).
    view.animate(heat.image, *heat.texts, frame, bars, *marks)

    scale = widgets.FloatSlider(
        value=default_scale,
        min=0.0,
        max=2.0,
        step=0.05,
        description="scale",
        readout_format=".2f",
        continuous_update=True,
        layout=widgets.Layout(width="360px"),
    )
    query = widgets.ToggleButtons(
        options=[(label, i) for i, label in enumerate(queries)],
        value=0,
        description="query",
        style={"button_width": "60px"},
    )
    readout = widgets.HTML()

    def show(_change=None) -> None:
        s, i = float(scale.value), int(query.value)
        weights = softmax(raw * s)
        out = weights @ V
        heat.update(weights)
        frame.set_y(i - 0.5)
        for bar, height in zip(bars.patches, out[i], strict=True):
            bar.set_height(height)
        view.redraw()
        row = " + ".join(f"{w:.2f}" for w in weights[i])
        readout.value = (
            f"<span style='font-family: monospace'>scale = {s:.2f} "
            f"(the formula uses 1/√d_k = 1/√{d_k} = {default_scale:.2f})<br>"
            f"weights of {html.escape(queries[i])}: {row} = {weights[i].sum():.2f}<br>"
            f"output of {html.escape(queries[i])}: "
            f"[{', '.join(f'{v:.2f}' for v in out[i])}]</span>"
        )

    scale.observe(show, names="value")
    query.observe(show, names="value")
    show()
    widget = CourseWidget(
        [widgets.HBox([scale, query]), view.image, readout],
        controls={"scale": scale, "query": query},
        view=view,
    )
    widget.heat, widget.bars, widget.frame, widget.readout = heat, bars, frame, readout
    return widget
