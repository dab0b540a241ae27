"""Softmax explorer: a temperature slider over one row of scores, and the Jacobian it leaves.

Formula: weights ``p = softmax(x / τ)``; Jacobian ``J = diag(p) - p pᵀ`` (∂p_i/∂z_j with
``z = x / τ``). Low temperatures make p one-hot and J vanish; high ones make p uniform.
With respect to the raw scores x the Jacobian is J / τ, so a very flat row passes little
gradient too.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..softmax import softmax, softmax_jacobian
from ._base import CourseWidget
from ._check import learner_array

DEFAULT_SCORES = (2.0, 1.0, 0.5, 0.0, -1.0)
MAX_KEYS = 8
# Jacobian cells get their values written in up to this many cells (4 keys); beyond (the
# default has 5 keys), the colour bar reads them: each written value costs ~1 ms a frame.
ANNOTATE_UP_TO = 16
# |J_ij| <= 1/4 for every softmax: p(1 - p) <= 1/4 and p_i p_j <= 1/4.
JACOBIAN_LIMIT = 0.25
TEMPERATURES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


class SoftmaxExplorer(CourseWidget):
    """Bars of softmax(x / τ) and its Jacobian, for the temperature τ on the slider.

    ``shown``: ``"weights"``, ``"jacobian"`` and ``"annotated"`` (whether the Jacobian's
    cells have their values written in, rounded to two decimals).
    """

    ncols = 2
    figsize = (7.4, 3.1)

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
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
        # Values a learner would try, for the latency benchmark (which cannot guess a log scale).
        slider.example_values = [*TEMPERATURES, 1.0]
        return {"temperature": slider}

    def arrange(self) -> list[Any]:
        return [self.controls["temperature"], self.view.image]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_p, ax_j = axes[0]
        x, n = self.scores, self.scores.size
        labels = [f"k{j}" for j in range(n)]
        # Each key's score sits under its bar, so the title stays short for any learner data.
        self.bars = plots.bars(
            np.zeros(n),
            ax_p,
            labels=[f"{k}\n{v:.2g}" for k, v in zip(labels, x, strict=True)],
            title="weights softmax(x / τ)",
            ylabel="weight",
            ylim=(0, 1.12),
        )
        ax_p.axhline(1 / n, color="grey", lw=0.8, ls=":")
        ax_p.set_xlabel("key and its score x  (dotted: uniform weight 1/n)", fontsize=8)
        ax_p.tick_params(axis="x", labelsize=8 if n <= 5 else 7)
        ax_p.title.set_fontsize(9)
        # Top right: a peaked row's tall bar is key k0, on the left.
        self.status = ax_p.text(
            0.98, 0.97, "", transform=ax_p.transAxes, ha="right", va="top", fontsize=8
        )
        self.heat = plots.heatmap(
            np.zeros((n, n)),
            ax_j,
            title=r"Jacobian $\partial p_i / \partial z_j$,  z = x / τ",
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
        return [self.bars, self.heat.image, *self.heat.texts, self.status]

    def update(self, temperature: float) -> None:
        weights = softmax(self.scores / temperature)
        jac = softmax_jacobian(weights)
        for bar, height in zip(self.bars.patches, weights, strict=True):
            bar.set_height(height)
        annotated = bool(self.heat.texts)
        # Rounded as shown, and + 0.0 turns -0.0 into 0.0, so no cell reads "-0.00".
        self.heat.update(np.round(jac, 2) + 0.0 if annotated else jac)
        norm = float(np.linalg.norm(jac))
        self.status.set_text(
            f"max weight {weights.max():.3f}\n‖∂p/∂z‖ = ‖J‖ = {norm:.3f}\n"
            f"‖∂p/∂x‖ = ‖J‖/τ = {norm / temperature:.3f}"
        )
        self.shown = {
            "weights": weights,
            "jacobian": jac,
            "annotated": annotated,
            "gradient_norm": norm / temperature,  # ‖∂p/∂x‖, with respect to the raw scores
        }


def softmax_explorer(scores: Any = None) -> SoftmaxExplorer:
    """Bars of ``softmax(scores / τ)`` with a log-scale temperature slider, and their Jacobian.

    ``scores``: optional 1-D array of 2 to 8 finite numbers (default ``[2, 1, 0.5, 0, -1]``).
    The bars stay on 0..1 and the Jacobian's colours on ±0.25, so what you see change is
    the weights, never the scale. ``controls``: ``"temperature"``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    x = learner_array(DEFAULT_SCORES if scores is None else scores, "scores", ndim=1)
    if not 2 <= x.size <= MAX_KEYS:
        raise ValueError(
            f"scores must hold between 2 and {MAX_KEYS} numbers (one per key), got {x.size}."
        )
    return SoftmaxExplorer(x)
