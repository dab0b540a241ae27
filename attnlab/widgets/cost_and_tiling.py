"""Online-softmax stepper: one query's softmax and output, computed one block of keys at a time.

Formula, after each block B of keys: ``m' = max(m, max_B s)``,
``l' = e^{m − m'} l + Σ_B e^{s_j − m'}``, ``o' = e^{m − m'} o + Σ_B e^{s_j − m'} v_j``.
The weights so far are ``e^{s_j − m} / l`` over the keys seen, and ``o / l`` is the
attention output over those keys; after the last block both are the usual
``softmax(s)`` and ``softmax(s) · v``. The steps are those of
``attnlab.lessons.cost_and_tiling.online_softmax_steps``.

Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..lessons.cost_and_tiling import EXAMPLE_BLOCK_SIZE, example_row, online_softmax_steps
from ..softmax import softmax
from ._base import CourseWidget
from ._check import all_or_none, learner_array, whole_number

MIN_KEYS, MAX_KEYS = 2, 32
BLOCK_SIZES = (1, 2, 3, 4, 6, 8)
UNSEEN = "#d9d9d9"


class OnlineSoftmaxStepper(CourseWidget):
    """The blocks seen so far: scores, running maximum m, and the weights so far against the final.

    ``scores`` and ``values``: one number per key, (n,). ``shown``: ``"m"``, ``"l"``,
    ``"o"``, ``"output"`` (o / l), ``"weights"`` (n,) (zero for keys not yet seen),
    ``"final_weights"`` (n,) and ``"final_output"`` after the blocks seen.
    """

    ncols = 2
    figsize = (7.6, 3.3)

    def __init__(self, scores: np.ndarray, values: np.ndarray, block_size: int) -> None:
        self.scores, self.key_values = scores, values
        self.n = scores.size
        self.block_size = block_size
        self.final_weights = softmax(scores)
        self.final_output = float(self.final_weights @ values)
        super().__init__()

    def n_blocks(self, block_size: int) -> int:
        return -(-self.n // block_size)

    def make_controls(self) -> dict[str, Any]:
        sizes = sorted({s for s in BLOCK_SIZES if s < self.n} | {self.block_size})
        picker = widgets.ToggleButtons(
            options=sizes,
            value=self.block_size,
            description="block size",
            style={"button_width": "44px"},
        )
        slider = widgets.IntSlider(
            value=1,
            min=1,
            max=self.n_blocks(self.block_size),
            description="blocks seen",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="360px"),
        )
        return {"block_size": picker, "blocks": slider}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.view.image, self.readout]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_s, ax_w = axes[0]
        n, keys = self.n, np.arange(self.n)
        low, high = min(0.0, float(self.scores.min())), max(0.0, float(self.scores.max()))
        pad = 0.12 * (high - low or 1.0)
        self.score_bars = ax_s.bar(keys, self.scores, color=UNSEEN, width=0.75)
        ax_s.axhline(0, color="grey", lw=0.6)
        ax_s.set_ylim(low - pad, high + 2 * pad)
        ax_s.set_xlim(-0.6, n - 0.4)
        ax_s.set_title("scores s, block by block", fontsize=10, pad=14)
        ax_s.set_xlabel("key")
        ax_s.set_ylabel("score")
        # One separator between every two keys; only the block boundaries are shown.
        self.separators = [ax_s.axvline(j - 0.5, color="grey", lw=0.8, ls=":") for j in range(1, n)]
        (self.max_line,) = ax_s.plot([-0.6, n - 0.4], [0, 0], color=plots.SECOND, lw=1.4, ls="--")
        self.max_text = ax_s.text(
            0.02, 0.97, "", transform=ax_s.transAxes, va="top", fontsize=8, color=plots.SECOND
        )
        ax_w.bar(
            keys, self.final_weights, width=0.75, facecolor="none", edgecolor="grey", lw=1.0,
            label="softmax(s), all keys",
        )  # fmt: skip
        self.weight_bars = ax_w.bar(
            keys, np.zeros(n), width=0.5, color=plots.ACCENT, label="e^(s − m) / l, keys seen"
        )
        ax_w.set_ylim(0, 1.05)
        ax_w.set_xlim(-0.6, n - 0.4)
        ax_w.set_title("weights so far and final", fontsize=10, pad=14)
        ax_w.set_xlabel("key")
        ax_w.set_ylabel("weight")
        ax_w.legend(fontsize=7, loc="upper left")
        self.status = ax_w.text(
            0.5, 1.015, "", transform=ax_w.transAxes, ha="center", va="bottom", fontsize=8,
            color=plots.ACCENT,
        )  # fmt: skip
        return [
            self.score_bars,
            *self.separators,
            self.max_line,
            self.max_text,
            self.weight_bars,
            self.status,
        ]

    def update(self, block_size: int, blocks: int) -> None:
        slider = self.controls["blocks"]
        with self.paused():  # a new block size may leave fewer blocks than the slider shows
            slider.max = self.n_blocks(block_size)
        blocks = min(blocks, slider.max)
        steps = online_softmax_steps(self.scores, self.key_values, block_size)
        step = steps[blocks - 1]
        seen = step.keys[1]
        weights = np.zeros(self.n)
        weights[:seen] = np.exp(self.scores[:seen] - step.m) / step.l
        output = float(step.o) / step.l
        for j, bar in enumerate(self.score_bars.patches):
            in_last = step.keys[0] <= j < seen
            bar.set_color(plots.ACCENT if in_last else plots.THIRD if j < seen else UNSEEN)
        for j, line in enumerate(self.separators, start=1):
            line.set_visible(j % block_size == 0)
        self.max_line.set_ydata([step.m, step.m])
        self.max_text.set_text(
            f"block {blocks} of {len(steps)}: keys {step.keys[0]}–{seen - 1}\n"
            f"running max m = {step.m:.2f}"
        )
        for bar, height in zip(self.weight_bars.patches, weights, strict=True):
            bar.set_height(height)
        self.status.set_text(
            f"o / l = {output:.4f};  final softmax(s) · v = {self.final_output:.4f}"
        )
        self.readout.value = (
            f"After block {blocks} of {len(steps)} (keys 0–{seen - 1}): "
            f"m = {step.m:.3f}, the old l and o were multiplied by "
            f"e<sup>m<sub>old</sub> − m</sup> = {step.rescale:.4f}, "
            f"l = Σ e<sup>s<sub>j</sub> − m</sup> = {step.l:.4f}, "
            f"o = {float(step.o):.4f}, so o / l = <b>{output:.4f}</b>"
            + (" = softmax(s) · v." if seen == self.n else html.escape(" (keys seen so far)."))
        )
        self.shown = {
            "blocks": blocks,
            "m": step.m,
            "l": step.l,
            "o": float(step.o),
            "output": output,
            "weights": weights,
            "final_weights": self.final_weights,
            "final_output": self.final_output,
        }


def online_softmax_stepper(
    scores: Any = None, values: Any = None, block_size: int | None = None
) -> OnlineSoftmaxStepper:
    """One query's softmax and output, computed block by block, as tiled attention does.

    ``scores``, ``values``: optional, your own row of scores and one value number per
    key, both 1-D with 2 to 32 entries (pass both or neither); the default is the
    lesson's row of 12 scores with a late, large one. ``block_size``: optional, keys per
    block to start with (default 4), a whole number from 1 to the number of keys.
    ``controls``: ``"block_size"`` (keys per block) and ``"blocks"`` (how many blocks
    have been seen). The left panel shows the scores (the last block seen in blue, the
    blocks before it in green) and the running maximum m; the right panel the weights
    ``e^{s − m} / l`` over the keys seen so far against the final ``softmax(s)``.

    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    if all_or_none({"scores": scores, "values": values}, "the lesson's example row"):
        s = learner_array(scores, "scores", ndim=1)
        v = learner_array(values, "values", ndim=1)
        if not MIN_KEYS <= s.size <= MAX_KEYS:
            raise ValueError(
                f"scores has {s.size} entries; the stepper takes {MIN_KEYS} to {MAX_KEYS}."
            )
        if v.size != s.size:
            raise ValueError(
                f"values must have one number per score: scores has {s.size}, values {v.size}."
            )
    else:
        s, v = example_row()
    if block_size is None:
        size = min(EXAMPLE_BLOCK_SIZE, s.size)
    else:
        size = whole_number(block_size, "block_size", "keys per block", 1, s.size)
    return OnlineSoftmaxStepper(s, v, size)
