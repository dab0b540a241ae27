"""Softmax explorer: a temperature slider over one row of scores, and the Jacobian it leaves.

Formula: weights ``p = softmax(x / T)``; Jacobian ``J = diag(p) - p pᵀ`` (∂p_i/∂z_j with
``z = x / T``). Low temperatures make p one-hot and J vanish; high ones make p uniform.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

import numpy as np

from ..softmax import softmax, softmax_jacobian
from ._base import CourseWidget, FigureView, learner_array

DEFAULT_SCORES = (2.0, 1.0, 0.5, 0.0, -1.0)
MAX_KEYS = 8
# Jacobian cells get their values written in up to this many cells (4 keys); beyond (the
# default has 5 keys), the colour bar reads them: each written value costs ~1 ms a frame.
ANNOTATE_UP_TO = 16
# |J_ij| <= 1/4 for every softmax: p(1 - p) <= 1/4 and p_i p_j <= 1/4.
JACOBIAN_LIMIT = 0.25
TEMPERATURES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


def _check_scores(scores) -> np.ndarray:
    arr = learner_array(scores, "scores", ndim=1)
    if not 2 <= arr.size <= MAX_KEYS:
        raise ValueError(
            f"scores must hold between 2 and {MAX_KEYS} numbers (one per key), got {arr.size}."
        )
    return arr


def _status(p: np.ndarray, J: np.ndarray) -> str:
    return f"max weight {p.max():.3f}    Jacobian norm ‖J‖ = {np.linalg.norm(J):.3f}"


def softmax_explorer(scores=None) -> CourseWidget:
    """Bars of ``softmax(scores / T)`` with a log-scale temperature slider, and their Jacobian.

    ``scores``: optional 1-D array of 2 to 8 finite numbers (default ``[2, 1, 0.5, 0, -1]``).
    The bars stay on 0..1 and the Jacobian's colours on ±0.25, so what you see change is
    the weights, never the scale. ``controls``: ``"temperature"``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    import ipywidgets as widgets

    from .. import plots

    x = _check_scores(DEFAULT_SCORES if scores is None else scores)
    n = x.size
    labels = [f"k{j}" for j in range(n)]

    slider = widgets.FloatLogSlider(
        value=1.0,
        base=10,
        min=-1,
        max=1,
        step=0.02,
        description="temperature T",
        readout_format=".2f",
        continuous_update=True,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="420px"),
    )
    # Values a learner would try, for the latency benchmark (which cannot guess a log scale).
    slider.example_values = [*TEMPERATURES, 1.0]

    view = FigureView(ncols=2, figsize=(7.4, 3.1), dpi=80)
    ax_p, ax_j = view.axes[0]
    p = softmax(x / slider.value)
    J = softmax_jacobian(p)

    # Each key's score sits under its bar, so the title stays short for any learner data.
    bars = plots.bars(
        p,
        ax_p,
        labels=[f"{k}\n{v:.2g}" for k, v in zip(labels, x, strict=True)],
        title="weights softmax(x / T)",
        ylabel="weight",
        ylim=(0, 1.12),
    )
    ax_p.axhline(1 / n, color="grey", lw=0.8, ls=":")
    ax_p.set_xlabel("key and its score x  (dotted: uniform weight 1/n)", fontsize=8)
    ax_p.tick_params(axis="x", labelsize=8 if n <= 5 else 7)
    ax_p.title.set_fontsize(9)
    status = ax_p.text(
        0.02, 0.97, _status(p, J), transform=ax_p.transAxes, ha="left", va="top", fontsize=8
    )

    heat = plots.heatmap(
        J,
        ax_j,
        title=r"Jacobian $\partial p_i / \partial z_j$,  z = x / T",
        xlabel="j (score)",
        ylabel="i (weight)",
        row_labels=labels,
        col_labels=labels,
        cmap=plots.SIGNED_CMAP,
        vmin=-JACOBIAN_LIMIT,
        vmax=JACOBIAN_LIMIT,
        annotate=n * n <= ANNOTATE_UP_TO,
        fmt="{:.2f}",
    )
    ax_j.title.set_fontsize(9)
    view.animate(bars, heat.image, *heat.texts, status)

    def show(change=None) -> None:
        weights = softmax(x / slider.value)
        jac = softmax_jacobian(weights)
        for bar, height in zip(bars.patches, weights, strict=True):
            bar.set_height(height)
        # Rounded as shown, and + 0.0 turns -0.0 into 0.0, so no cell reads "-0.00".
        heat.update(np.round(jac, 2) + 0.0 if heat.texts else jac)
        status.set_text(_status(weights, jac))
        view.redraw()

    slider.observe(show, names="value")
    show()
    return CourseWidget([slider, view.image], controls={"temperature": slider}, view=view)
