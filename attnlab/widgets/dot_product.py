"""Widget for ``notebooks/01_dot_product.ipynb``: keys competing for one query.

``dot_product_explorer()`` draws a query q and three keys in the plane: k₁ short
and close to q, k₂ longer and further off, k₃ pointing away. One slider turns q,
another stretches k₂. On the right, each key's score q·k_j = ‖q‖‖k_j‖ cos θ_j is a
bar between dashed lines at ±‖q‖‖k_j‖ (the most and the least a key of that length
can score), and the highest bar is filled, so the learner sees that which key wins
depends on angle and length at once: a longer key can beat a better-aligned one.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ._base import CourseWidget
from ._check import learner_array

_DEFAULT_Q = 1.5 * np.array([np.cos(np.radians(20.0)), np.sin(np.radians(20.0))])
# k₁ at 30°, length 1; k₂ at 70°, length 1.25; k₃ at 130°, length 1.5.
_DEFAULT_KEYS = np.array(
    [
        length * np.array([np.cos(np.radians(a)), np.sin(np.radians(a))])
        for a, length in ((30.0, 1.0), (70.0, 1.25), (130.0, 1.5))
    ]
)
_KEY_COLOURS = (plots.SECOND, plots.THIRD, "#CC79A7", "#E69F00")  # Okabe-Ito
_SUBSCRIPTS = "₁₂₃₄"
_HALF_WIDTH = 0.38  # of a bar, and of its dashed bounds


def _vector(x: Any, name: str) -> np.ndarray:
    arr = learner_array(x, name, ndim=1)
    if arr.shape != (2,):
        raise ValueError(
            f"{name} must be a 2-D vector, two numbers like [1.0, 0.5]; got shape {arr.shape}."
        )
    if not np.any(arr):
        raise ValueError(f"{name} is the zero vector, which has no direction; give it a length.")
    return arr


def _keys(x: Any) -> np.ndarray:
    arr = learner_array(x, "keys", ndim=2)
    if arr.shape[1] != 2 or not 2 <= arr.shape[0] <= len(_SUBSCRIPTS):
        raise ValueError(
            f"keys must be 2 to {len(_SUBSCRIPTS)} keys of two numbers each, shape (m, 2), "
            f"like [[1.0, 0.5], [0.2, 1.5]]; got shape {arr.shape}."
        )
    if not np.all(np.any(arr, axis=1)):
        raise ValueError("keys holds a zero vector, which has no direction; give it a length.")
    return arr


class DotProductExplorer(CourseWidget):
    """A query q and a few keys as arrows, and each key's score q·k_j as a bar.

    ``shown``: ``"q"`` (its coordinates), ``"keys"`` (one row per key), ``"scores"``
    (q·k_j), ``"bounds"`` (‖q‖‖k_j‖), ``"winner"`` (the index of the highest score).
    """

    ncols = 2
    figsize = (7.0, 3.2)
    subplot_kw = {"gridspec_kw": {"width_ratios": [1.0, 1.0]}}

    def __init__(self, q: np.ndarray, keys: np.ndarray) -> None:
        self.q_length = float(np.linalg.norm(q))
        self.q_angle = float(np.degrees(np.arctan2(q[1], q[0]))) % 360.0
        self.key_vectors = keys.copy()
        lengths = np.linalg.norm(keys, axis=1)
        self.k2_start, self.k2_unit = float(lengths[1]), keys[1] / lengths[1]
        # Room for k₂ at up to twice its length, and for every arrow as it is.
        self.k2_top = float(np.ceil(2 * self.k2_start * 4) / 4)
        self.reach = max(self.q_length, self.k2_top, float(lengths.max()))
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        # Learner vectors start exactly where they are: a slider keeps a value off its
        # step until it is moved.
        return {
            "q_angle": widgets.FloatSlider(
                value=self.q_angle,
                min=0,
                max=360,
                step=1,
                description="q's angle (°)",
                readout_format=".0f",
                style={"description_width": "initial"},
            ),
            "k2_length": widgets.FloatSlider(
                value=self.k2_start,
                min=0.0,
                max=self.k2_top,
                step=0.05,
                description="‖k₂‖",
                readout_format=".2f",
            ),
        }

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_v, ax_s = axes[0]
        m = len(self.key_vectors)
        top = 1.2 * self.reach
        ax_v.set_xlim(-top, top)
        ax_v.set_ylim(-top, top)
        ax_v.set_aspect("equal")
        ax_v.axhline(0, color="0.85", linewidth=0.8, zorder=0)
        ax_v.axvline(0, color="0.85", linewidth=0.8, zorder=0)
        ax_v.set_title("q and the keys as arrows")
        ax_v.set_xlabel("first coordinate")
        ax_v.set_ylabel("second coordinate")
        self.arrows = ax_v.quiver(
            np.zeros(m + 1),
            np.zeros(m + 1),
            np.ones(m + 1),
            np.zeros(m + 1),
            color=[plots.ACCENT, *_KEY_COLOURS[:m]],
            angles="xy",
            scale_units="xy",
            scale=1,
            width=0.018,
        )
        label = {"fontsize": 11, "fontweight": "bold", "ha": "center", "va": "center"}
        names = ["q", *(f"k{_SUBSCRIPTS[j]}" for j in range(m))]
        colours = [plots.ACCENT, *_KEY_COLOURS[:m]]
        self.arrow_labels = [
            ax_v.text(0, 0, name, color=colour, **label)
            for name, colour in zip(names, colours, strict=True)
        ]

        limit = 1.15 * self.q_length * self.reach
        ax_s.set_xlim(-0.6, m - 0.4)
        ax_s.set_ylim(-limit, limit)
        ax_s.set_xticks(range(m), names[1:])
        ax_s.axhline(0, color="0.4", linewidth=0.8)
        ax_s.set_title("scores q·k, the highest filled\n(dashed: ±‖q‖ ‖k‖ for each key)")
        ax_s.set_ylabel("q·k")
        # ±‖q‖‖k_j‖ over each bar: the most and the least a key of that length can score.
        (self.bound_lines,) = ax_s.plot([], [], color="0.45", linestyle="--", linewidth=1)
        self.bars = ax_s.bar(
            range(m),
            np.zeros(m),
            width=2 * _HALF_WIDTH,
            edgecolor=_KEY_COLOURS[:m],
            linewidth=2,
        )
        self.score_texts = [ax_s.text(j, 0, "", ha="center", fontsize=9) for j in range(m)]
        return [self.bound_lines, self.arrows, *self.arrow_labels, self.bars, *self.score_texts]

    def update(self, q_angle: float, k2_length: float) -> None:
        rad = np.radians(q_angle)
        q = self.q_length * np.array([np.cos(rad), np.sin(rad)])
        keys = self.key_vectors.copy()
        keys[1] = k2_length * self.k2_unit
        vectors = np.vstack([q, keys])
        self.arrows.set_UVC(vectors[:, 0], vectors[:, 1])
        for text, vec in zip(self.arrow_labels, vectors, strict=True):
            length = float(np.linalg.norm(vec))
            direction = vec / length if length else self.k2_unit
            tip = vec + 0.14 * self.reach * direction
            text.set_position(np.clip(tip, -1.1 * self.reach, 1.1 * self.reach))

        scores = keys @ q
        bounds = self.q_length * np.linalg.norm(keys, axis=1)
        winner = int(np.argmax(scores))
        xs: list[float] = []
        ys: list[float] = []
        for j, bound in enumerate(bounds):
            # Two short dashes per key, the NaN lifting the pen between them.
            xs += [j - _HALF_WIDTH, j + _HALF_WIDTH, np.nan] * 2
            ys += [bound, bound, np.nan, -bound, -bound, np.nan]
        self.bound_lines.set_data(xs, ys)
        pad = 0.04 * self.q_length * self.reach
        for j, (bar, text, score) in enumerate(
            zip(self.bars, self.score_texts, scores, strict=True)
        ):
            bar.set_height(score)
            bar.set_facecolor(_KEY_COLOURS[j] if j == winner else "white")
            # Rounded, and + 0.0 turns -0.0 into 0.0: a key at a right angle reads 0.00.
            text.set_text(f"{round(float(score), 2) + 0.0:.2f}")
            text.set_position((j, score + pad if score >= 0 else score - pad))
            text.set_va("bottom" if score >= 0 else "top")
        self.shown = {
            "q": q,
            "keys": keys,
            "scores": scores,
            "bounds": bounds,
            "winner": winner,
        }


def dot_product_explorer(q: Any = None, keys: Any = None) -> DotProductExplorer:
    """A query q and a few keys as arrows; each key's score q·k_j as a bar.

    ``q``: optional 2-D vector (shape (2,), not zero); ``keys``: optional (m, 2) array
    of 2 to 4 keys, none zero. Either may be left out for the built-in one. One slider
    turns q (keeping its length), another stretches k₂ (keeping its direction). Each
    bar stands between dashed lines at ±‖q‖‖k_j‖, and the highest score's bar is
    filled. ``controls``: ``"q_angle"``, ``"k2_length"``.

    Lesson: ``notebooks/01_dot_product.ipynb``.
    """
    q_arr = _DEFAULT_Q if q is None else _vector(q, "q")
    keys_arr = _DEFAULT_KEYS if keys is None else _keys(keys)
    return DotProductExplorer(q_arr, keys_arr)
