"""Two widgets of lesson 04.

**Softmax row**: one row of scores with a slider on the first key's score. Raising it
takes weight from every other key in proportion, so the ratios among the others,
``p_i / p_j = e^{x_i − x_j}``, never move. A second panel shows the log-weights,
``log p_i = x_i − logsumexp(x)``: raising one score lowers every other log-weight by the
same amount, the rise of ``logsumexp(x)``.

**Softmax explorer**: a temperature slider over one row of scores, and the gradient it leaves.

Formula: weights ``p = softmax(s / τ)``. With respect to the raw scores s the Jacobian is
``∂p_i/∂s_j = J_ij / τ`` with ``J = diag(p) - p pᵀ`` (the chain rule through ``s / τ``).
Low temperatures make p one-hot and the gradient vanish; high ones make p uniform and
shrink the gradient by the factor 1/τ.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..softmax import softmax, softmax_jacobian
from ._base import CourseWidget, temperature_slider
from ._check import learner_array

DEFAULT_SCORES = (2.0, 1.0, 0.5, 0.0, -1.0)
MAX_KEYS = 8
# Jacobian cells get their values written in up to this many cells (4 keys); beyond (the
# default has 5 keys), the colour bar reads them: each written value costs ~1 ms a frame.
ANNOTATE_UP_TO = 16
# |J_ij| <= 1/4 for every softmax: p(1 - p) <= 1/4 and p_i p_j <= 1/4.
JACOBIAN_LIMIT = 0.25
TEMPERATURES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
# Every position of the slider: 10**-1 to 10**1 in steps of 0.02 in the exponent.
SLIDER_TAUS = 10.0 ** np.linspace(-1.0, 1.0, 101)


def row_of_scores(scores: Any, fewest: int) -> np.ndarray:
    """A learner's row of scores (``fewest`` to ``MAX_KEYS`` finite numbers), or the default.

    Raises a TypeError or ValueError that names ``scores``.
    """
    x = learner_array(DEFAULT_SCORES if scores is None else scores, "scores", ndim=1)
    if not fewest <= x.size <= MAX_KEYS:
        raise ValueError(
            f"scores must hold between {fewest} and {MAX_KEYS} numbers (one per key), got {x.size}."
        )
    return x


def raw_score_jacobian(scores: np.ndarray, tau: float) -> np.ndarray:
    """∂p_i/∂s_j for ``p = softmax(s / τ)``: the softmax Jacobian divided by τ.

    Shapes: ``scores`` (n,) → (n, n). Lesson: ``notebooks/04_softmax.ipynb``.
    """
    return softmax_jacobian(softmax(scores / tau)) / tau


def colour_limit(scores: np.ndarray) -> float:
    """The largest |∂p_i/∂s_j| over every slider position, so the colours never rescale.

    Never below ``JACOBIAN_LIMIT``, the bound at τ = 1.
    """
    largest = max(float(np.abs(raw_score_jacobian(scores, t)).max()) for t in SLIDER_TAUS)
    return max(JACOBIAN_LIMIT, largest)


class SoftmaxExplorer(CourseWidget):
    """Bars of softmax(s / τ) and its gradient ∂p/∂s, for the temperature τ on the slider.

    ``shown``: ``"weights"``, ``"jacobian"`` (∂p_i/∂s_j with respect to the raw scores,
    ``J / τ``) and ``"annotated"`` (whether the cells have their values written in,
    rounded to two decimals). ``limit`` is the fixed ± range of the colour scale.
    """

    ncols = 2
    figsize = (7.4, 3.1)

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores
        self.limit = colour_limit(scores)
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        slider = temperature_slider([*TEMPERATURES, 1.0])
        return {"temperature": slider}

    def arrange(self) -> list[Any]:
        return [self.controls["temperature"], self.view.image]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_p, ax_j = axes[0]
        s, n = self.scores, self.scores.size
        labels = [f"k{j}" for j in range(n)]
        # Each key's score sits under its bar, so the title stays short for any learner data.
        self.bars = plots.bars(
            np.zeros(n),
            ax_p,
            labels=[f"{k}\n{v:.2g}" for k, v in zip(labels, s, strict=True)],
            title="weights softmax(s / τ)",
            ylabel="weight",
            ylim=(0, 1.12),
        )
        ax_p.axhline(1 / n, color="grey", lw=0.8, ls=":")
        ax_p.set_xlabel("key and its score s  (dotted: uniform weight 1/n)", fontsize=8)
        ax_p.tick_params(axis="x", labelsize=8 if n <= 5 else 7)
        ax_p.title.set_fontsize(9)
        self.status = ax_p.text(
            0.02, 0.97, "", transform=ax_p.transAxes, ha="left", va="top", fontsize=8
        )
        self.heat = plots.heatmap(
            np.zeros((n, n)),
            ax_j,
            title=r"gradient $\partial p_i / \partial s_j = J_{ij}/\tau$ (raw scores s)",
            xlabel="j (raw score)",
            ylabel="i (weight)",
            row_labels=labels,
            col_labels=labels,
            cmap=plots.SIGNED_CMAP,
            vmin=-self.limit,
            vmax=self.limit,
            annotate=n * n <= ANNOTATE_UP_TO,
            fmt="{:.2f}",
        )
        ax_j.title.set_fontsize(9)
        return [self.bars, self.heat.image, *self.heat.texts, self.status]

    def update(self, temperature: float) -> None:
        weights = softmax(self.scores / temperature)
        jac = softmax_jacobian(weights) / temperature  # with respect to the raw scores s
        for bar, height in zip(self.bars.patches, weights, strict=True):
            bar.set_height(height)
        annotated = bool(self.heat.texts)
        # Rounded as shown, and + 0.0 turns -0.0 into 0.0, so no cell reads "-0.00".
        self.heat.update(np.round(jac, 2) + 0.0 if annotated else jac)
        self.status.set_text(
            f"max weight {weights.max():.3f}    ‖∂p/∂s‖ = ‖J‖/τ = {np.linalg.norm(jac):.3f}"
        )
        self.shown = {"weights": weights, "jacobian": jac, "annotated": annotated}


def softmax_explorer(scores: Any = None) -> SoftmaxExplorer:
    """Bars of ``softmax(scores / τ)`` with a log-scale slider for τ, and their gradient.

    The heatmap is ∂p_i/∂s_j, the gradient with respect to the raw scores s, which is the
    softmax Jacobian divided by τ.
    ``scores``: optional 1-D array of 2 to 8 finite numbers (default ``[2, 1, 0.5, 0, -1]``).
    The bars stay on 0..1 and the heatmap's colours on one fixed range (the largest entry
    over all slider positions), so what you see change is the weights, never the scale.
    ``controls``: ``"temperature"``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    return SoftmaxExplorer(row_of_scores(scores, fewest=2))


# ------------------------------------------------------------------------ softmax row

SCORE_RANGE = (-4.0, 8.0)


def logsumexp(x: np.ndarray) -> float:
    """``log Σ_j e^{x_j}``, computed as ``m + log Σ_j e^{x_j − m}`` with ``m = max x``.

    Shapes: ``x`` (n,) → a number. Lesson: ``notebooks/04_softmax.ipynb``.
    """
    m = float(np.max(x))
    return m + float(np.log(np.sum(np.exp(x - m))))


def log_weight_floor(scores: np.ndarray) -> float:
    """The lowest log-weight anywhere on the slider, so the log panel never rescales."""
    lowest = 0.0
    for score in SCORE_RANGE:
        x = scores.copy()
        x[0] = score
        lowest = min(lowest, float((x - logsumexp(x)).min()))
    return lowest


class SoftmaxRow(CourseWidget):
    """The weights of one row, and their logs, while the first key's score moves.

    ``shown``: ``"scores"``, ``"weights"`` and ``"log_weights"`` (n,), ``"logsumexp"``
    (a number: ``log_weights = scores - logsumexp``), and ``"ratio"``, ``p_1 / p_2``.
    """

    ncols = 2
    figsize = (8.4, 2.9)

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores
        self.floor = log_weight_floor(scores)
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        return {
            "score": widgets.FloatSlider(
                value=float(np.clip(self.scores[0], *SCORE_RANGE)),
                min=SCORE_RANGE[0],
                max=SCORE_RANGE[1],
                step=0.1,
                description="score of k0",
                readout_format=".1f",
                style={"description_width": "initial"},
                layout=widgets.Layout(width="420px"),
            )
        }

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax, ax_log = axes[0]
        n = self.scores.size
        labels = [f"k{j}" for j in range(n)]
        self.bars = plots.bars(
            np.zeros(n),
            ax,
            labels=labels,
            title="weights softmax(x)",
            ylabel="weight",
            ylim=(0, 1.12),
        )
        ax.title.set_fontsize(9)
        self.status = ax.text(0.98, 0.97, "", transform=ax.transAxes, ha="right", va="top")
        self.status.set_fontsize(8)
        self.log_bars = plots.bars(
            np.zeros(n),
            ax_log,
            labels=labels,
            title="log-weights log p = x − logsumexp(x)",
            ylabel="log weight",
            color=plots.SECOND,
            ylim=(1.08 * self.floor - 0.1, 0.0),
        )
        ax_log.title.set_fontsize(9)
        self.log_status = ax_log.text(
            0.02, 0.03, "", transform=ax_log.transAxes, ha="left", va="bottom", fontsize=8
        )
        return [self.bars, self.status, self.log_bars, self.log_status]

    def update(self, score: float) -> None:
        x = self.scores.copy()
        x[0] = score
        weights = softmax(x)
        lse = logsumexp(x)
        log_weights = x - lse
        for bar, height in zip(self.bars.patches, weights, strict=True):
            bar.set_height(height)
        for bar, height in zip(self.log_bars.patches, log_weights, strict=True):
            bar.set_height(height)
        ratio = weights[1] / weights[2]
        self.status.set_text(f"k0: {weights[0]:.3f}   k1 / k2 = {ratio:.3f}")
        self.log_status.set_text(f"logsumexp(x) = {lse:.2f}")
        others = ", ".join(f"{v:g}" for v in x[1:])
        self.readout.value = (
            f"scores x = [{score:.1f}, {others}]; weight of k0 {weights[0]:.3f}, of all the "
            f"others together {1 - weights[0]:.3f}; k1 / k2 = {ratio:.3f}. "
            f"logsumexp(x) = {lse:.2f}, so log p_i = x_i − {lse:.2f} for every key."
        )
        self.shown = {
            "scores": x,
            "weights": weights,
            "log_weights": log_weights,
            "logsumexp": lse,
            "ratio": ratio,
        }


def softmax_row(scores: Any = None) -> SoftmaxRow:
    """One row of softmax weights, with a slider on the score of the first key, k0.

    ``scores``: optional 1-D array of 3 to 8 finite numbers (default
    ``[2, 1, 0.5, 0, -1]``); the slider starts at the first one and runs from −4 to 8.
    The readout prints the ratio of the next two weights, which the slider never changes.
    The right panel shows the log-weights ``log p_i = x_i − logsumexp(x)``: moving k0
    shifts every other bar there by the same amount.
    ``controls``: ``"score"``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    return SoftmaxRow(row_of_scores(scores, fewest=3))
