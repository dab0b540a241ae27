"""Lesson 08's widget: the untrained model's attention.

``initial_attention``: pick d_k and whether the scores are divided by √d_k; the view
shows the untrained model's attention weights on a few held-out sequences, and each
row's entropy. It computes only forward passes of untrained models.

Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from ..lessons import ablation as lesson
from ..softmax import entropy, softmax
from ._base import CourseWidget
from ._check import whole_number

REFERENCE = "√d_k"
INITIAL_D_KS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
SATURATED = 0.99


class InitialAttention(CourseWidget):
    """The untrained model's weights ``softmax(raw / τ)`` for the chosen d_k and divisor.

    ``shown``: ``"weights"`` ``(n_sequences, n_pairs)``, ``"entropy"`` ``(n_sequences,)``
    and ``"tau"``.
    """

    ncols = 2
    figsize = (7.4, 3.0)

    def __init__(self, raw: dict[int, np.ndarray], right: np.ndarray) -> None:
        self.raw, self.right = raw, right
        self.n_sequences, self.n_pairs = next(iter(raw.values())).shape
        # Taller for more sequences, so that each row keeps its label.
        self.figsize = (7.4, max(3.0, 1.4 + 0.15 * self.n_sequences))
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        style = {"description_width": "initial"}
        d_k = widgets.SelectionSlider(
            options=list(self.raw), value=64, description="d_k", style=style
        )
        divisor = widgets.ToggleButtons(
            options=[(lesson.LABELS[d], d) for d in (REFERENCE, "1")],
            value="1",
            description="divide scores by:",
            style=style,
        )
        return {"d_k": d_k, "divisor": divisor}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.view.image, self.readout]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_h = axes[0]
        self.heat = ax_w.imshow(
            np.zeros((self.n_sequences, self.n_pairs)), vmin=0.0, vmax=1.0, aspect="auto"
        )
        rows = np.arange(self.n_sequences)
        # Animated too, so that the rings are drawn over the weights, not under them.
        rings = ax_w.scatter(
            self.right, rows, s=80, facecolors="none", edgecolors="#D55E00", lw=1.6
        )
        ax_w.set(
            xticks=range(self.n_pairs),
            yticks=rows,
            xlabel="pair (ring: the right one)",
            ylabel="held-out sequence",
        )
        ax_w.figure.colorbar(self.heat, ax=ax_w, label="weight")
        self.bars = ax_h.barh(rows, np.zeros(self.n_sequences), color="#0072B2", height=0.7)
        uniform = np.log(self.n_pairs)
        ax_h.axvline(uniform, color="grey", ls="--", lw=1)
        ax_h.set(
            xlim=(0, uniform * 1.1),
            ylim=(self.n_sequences - 0.5, -0.5),
            yticks=rows,
            xlabel=f"row entropy (dashed: uniform, log {self.n_pairs})",
        )
        return [self.heat, rings, self.bars]

    def update(self, d_k: int, divisor: str) -> None:
        tau = lesson.divisor_value(divisor, d_k)
        weights = softmax(self.raw[d_k] / tau)
        rows_entropy = entropy(weights)
        self.heat.set_data(weights)
        for bar, width in zip(self.bars.patches, rows_entropy, strict=True):
            bar.set_width(width)
        largest = weights.max(axis=-1)
        self.readout.value = (
            f"<b>d_k = {d_k}, scores ÷ {lesson.LABELS[divisor][2:]}</b> (τ = {tau:.2f}): "
            f"raw scores spread {self.raw[d_k].std():.1f} (√d_k = {np.sqrt(d_k):.1f}); "
            f"mean largest weight {largest.mean():.2f}; rows with a weight above "
            f"{SATURATED}: {int((largest > SATURATED).sum())} of {self.n_sequences}; "
            f"largest weight on the right pair: "
            f"{int((weights.argmax(axis=-1) == self.right).sum())} of {self.n_sequences}."
        )
        self.shown = {"weights": weights, "entropy": rows_entropy, "tau": tau}


def initial_attention(task: Any = None, n_sequences: int = 16) -> InitialAttention:
    """The untrained model's attention weights for a chosen d_k, with or without ÷√d_k.

    ``task``: the lesson's task (``lesson.make_task()``, the default); ``n_sequences``:
    how many held-out sequences to show, 2 to 16 (with 16, the default, the readout's
    mean largest weight and its count of saturated rows grow over d_k = 16, 64, 256 and
    1024 without the divisor; a handful of sequences can buck that trend). One seed's
    initial weights per d_k in
    ``INITIAL_D_KS``; nothing is trained. ``controls``: ``"d_k"`` and ``"divisor"``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    n = whole_number(n_sequences, "n_sequences", "how many sequences to show", 2, 16)
    task = lesson.make_task() if task is None else task
    if not isinstance(task, lesson.Task):
        raise TypeError(
            f"task must be the lesson's task, lesson.make_task(); got {type(task).__name__}."
        )
    found = {d_k: lesson.initial_attention(task, d_k, n) for d_k in INITIAL_D_KS}
    right = found[INITIAL_D_KS[0]][1]
    return InitialAttention({d_k: raw for d_k, (raw, _) in found.items()}, right)
