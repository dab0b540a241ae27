"""Lesson 08's widget: the attention of the model as it trains.

``training_attention``: pick d_k, a training step and whether the scores are divided
by √d_k; the view shows one seed's attention weights on held-out sequences at that
step, and each row's weight on the pair that holds the answer. It shows weights kept
during one training run (``lesson.attention_maps(..., keep=...)``); the runs of another
d_k train the first time it is picked.

Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from ..lessons import ablation as lesson
from ._base import CourseWidget

REFERENCE = "√d_k"
SATURATED = 0.99


class TrainingAttention(CourseWidget):
    """One seed's attention weights after a chosen number of training steps, scaled or not.

    ``shown``: ``"weights"`` ``(n_sequences, n_pairs)``, ``"on_right"``
    ``(n_sequences,)`` (each row's weight on the right pair) and ``"step"``.
    """

    ncols = 2
    figsize = (7.4, 3.0)

    def __init__(self, maps: Any, task: Any) -> None:
        self.maps = maps
        self.task = task
        self.by_d_k = {maps.d_k: maps}  # the runs of other d_k train when first picked
        self.n_sequences, self.n_pairs = maps.start[REFERENCE].shape
        self.figsize = (7.4, max(3.0, 1.4 + 0.15 * self.n_sequences))
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        style = {"description_width": "initial"}
        d_k = widgets.ToggleButtons(
            options=sorted({*lesson.D_KS, self.maps.d_k}),
            value=self.maps.d_k,
            description="d_k:",
            style=style,
        )
        step = widgets.SelectionSlider(
            options=sorted(self.maps.steps), value=0, description="training step", style=style
        )
        divisor = widgets.ToggleButtons(
            options=[(lesson.LABELS[d], d) for d in (REFERENCE, "1")],
            value="1",
            description="divide scores by:",
            style=style,
        )
        return {"d_k": d_k, "step": step, "divisor": divisor}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.view.image, self.readout]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_r = axes[0]
        self.heat = ax_w.imshow(
            np.zeros((self.n_sequences, self.n_pairs)), vmin=0.0, vmax=1.0, aspect="auto"
        )
        rows = np.arange(self.n_sequences)
        # Animated too, so that the rings are drawn over the weights, not under them.
        rings = ax_w.scatter(
            self.maps.right, rows, s=80, facecolors="none", edgecolors="#D55E00", lw=1.6
        )
        ax_w.set(
            xticks=range(self.n_pairs),
            yticks=rows,
            xlabel="pair (ring: the right one)",
            ylabel="held-out sequence",
        )
        ax_w.figure.colorbar(self.heat, ax=ax_w, label="weight")
        self.bars = ax_r.barh(rows, np.zeros(self.n_sequences), color="#0072B2", height=0.7)
        ax_r.axvline(SATURATED, color="grey", ls="--", lw=1)
        ax_r.set(
            xlim=(0, 1.05),
            ylim=(self.n_sequences - 0.5, -0.5),
            yticks=rows,
            xlabel=f"weight on the right pair (dashed: {SATURATED})",
        )
        return [self.heat, rings, self.bars]

    def maps_for(self, d_k: int) -> Any:
        """The weights of the runs at ``d_k``, trained like the first ones if not yet."""
        if d_k not in self.by_d_k:
            self.readout.value = f"Training the two models at d_k = {d_k} (a few seconds)…"
            kept = sorted(self.maps.steps)
            self.by_d_k[d_k] = lesson.attention_maps(
                self.task, d_k, n_sequences=self.n_sequences, steps=kept[-1], keep=tuple(kept)
            )
        return self.by_d_k[d_k]

    def update(self, d_k: int, step: int, divisor: str) -> None:
        maps = self.maps_for(d_k)
        weights = maps.steps[step][divisor]
        rows = np.arange(self.n_sequences)
        on_right = weights[rows, self.maps.right]
        self.heat.set_data(weights)
        for bar, width in zip(self.bars.patches, on_right, strict=True):
            bar.set_width(width)
        largest = weights.max(axis=-1)
        n = self.n_sequences
        self.readout.value = (
            f"<b>d_k = {d_k}, scores ÷ {lesson.LABELS[divisor][2:]}, after {step} "
            f"training steps</b>: mean largest weight {largest.mean():.2f}; rows with a "
            f"weight above {SATURATED}: {int((largest > SATURATED).sum())} of {n}; largest "
            f"weight on the right pair: {int((weights.argmax(axis=-1) == self.maps.right).sum())} "
            f"of {n}."
        )
        self.shown = {"weights": weights, "on_right": on_right, "step": step, "d_k": d_k}


def training_attention(maps: Any = None, task: Any = None) -> TrainingAttention:
    """One seed's attention weights during training, with and without ÷√d_k, at a
    chosen d_k.

    ``maps``: ``lesson.attention_maps(task, d_k, keep=...)``, the weights of a scaled and
    an unscaled model (``"√d_k"`` and ``"1"``) on the same held-out sequences, kept at
    several step counts; by default the lesson's, ``lesson.attention_maps(lesson.make_task(),
    256, keep=lesson.MAP_STEPS)``, which trains two models for a few seconds.
    ``task``: the task ``maps`` was trained on (by default the lesson's,
    ``lesson.make_task()``); picking another d_k (``lesson.D_KS``) trains its two models
    on it the first time, with the same seed, sequences and kept steps.
    ``controls``: ``"d_k"``, ``"step"`` (the kept step counts) and ``"divisor"``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    if maps is None:
        maps = lesson.attention_maps(lesson.make_task(), 256, keep=lesson.MAP_STEPS)
    if not isinstance(maps, lesson.AttentionMaps):
        raise TypeError(
            "maps must come from lesson.attention_maps(task, d_k, keep=...); "
            f"got {type(maps).__name__}."
        )
    missing = {REFERENCE, "1"} - set(maps.start)
    if missing:
        raise ValueError(
            "maps must hold the scaled and the unscaled model, divisors ('√d_k', '1'); "
            f"{sorted(missing)} missing."
        )
    return TrainingAttention(maps, lesson.make_task() if task is None else task)
