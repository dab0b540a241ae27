"""Widget for ``notebooks/01_dot_product.ipynb``: the dot product of two arrows.

``dot_product_explorer()`` draws a query q and a key k in the plane. Sliders
set the angle θ between them and their lengths; the plot on the right traces
q·k = ‖q‖‖k‖ cos θ against θ between the dashed lines ±‖q‖‖k‖ (the best and the
worst key of these lengths), so the learner sees the dot product fall to 0 at 90°,
turn negative past it, and grow with either length.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ._base import CourseWidget
from ._check import all_or_none, learner_array

_DEFAULT_Q_LENGTH = 1.5
_DEFAULT_Q_DIRECTION = 20.0  # degrees from the first axis
_DEFAULT_K_LENGTH = 1.2
_DEFAULT_ANGLE = 60.0
_ARC_RADIUS = 0.35
_THETAS = np.linspace(0.0, 180.0, 181)


def _vector(x: Any, name: str) -> np.ndarray:
    arr = learner_array(x, name, ndim=1)
    if arr.shape != (2,):
        raise ValueError(
            f"{name} must be a 2-D vector, two numbers like [1.0, 0.5]; got shape {arr.shape}."
        )
    if not np.any(arr):
        raise ValueError(f"{name} is the zero vector, which has no direction; give it a length.")
    return arr


class DotProductExplorer(CourseWidget):
    """q and k as arrows, and q·k against the angle between them.

    ``shown``: ``"q"``, ``"k"`` (the arrows' coordinates), ``"dot"`` (q·k),
    ``"lengths"`` (‖q‖‖k‖), ``"cos"`` (cos θ).
    """

    ncols = 2
    figsize = (7.0, 3.2)
    subplot_kw = {"gridspec_kw": {"width_ratios": [1.0, 1.15]}}

    def __init__(
        self, direction: float, q_length: float, k_length: float, angle: float, side: float
    ) -> None:
        # q keeps its direction (degrees); k lies on ``side`` (±1) of it, ``angle`` away.
        self.direction, self.side = direction, side
        self.start = {"angle": angle, "q_length": q_length, "k_length": k_length}
        self.top = max(2.0, float(np.ceil(1.25 * max(q_length, k_length) * 2) / 2))
        rad = np.radians(direction)
        self.u = np.array([np.cos(rad), np.sin(rad)])
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        # Learner vectors start exactly where they are: a slider keeps a value off its
        # step until it is moved.
        start, top = self.start, self.top
        return {
            "angle": widgets.FloatSlider(
                value=start["angle"],
                min=0,
                max=180,
                step=1,
                description="θ (°)",
                readout_format=".0f",
            ),
            "q_length": widgets.FloatSlider(
                value=start["q_length"],
                min=0.0,
                max=top,
                step=0.05,
                description="‖q‖",
                readout_format=".2f",
            ),
            "k_length": widgets.FloatSlider(
                value=start["k_length"],
                min=0.0,
                max=top,
                step=0.05,
                description="‖k‖",
                readout_format=".2f",
            ),
        }

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_v, ax_c = axes[0]
        top = self.top
        ax_v.set_xlim(-top, top)
        ax_v.set_ylim(-top, top)
        ax_v.set_aspect("equal")
        ax_v.axhline(0, color="0.85", linewidth=0.8, zorder=0)
        ax_v.axvline(0, color="0.85", linewidth=0.8, zorder=0)
        ax_v.axline(
            (0, 0), tuple(self.u), color=plots.ACCENT, linestyle=":", linewidth=1, alpha=0.6
        )
        ax_v.set_title("q and k as arrows")
        ax_v.set_xlabel("first coordinate")
        ax_v.set_ylabel("second coordinate")
        self.arrows = ax_v.quiver(
            [0, 0],
            [0, 0],
            [1, 1],
            [0, 0],
            color=[plots.ACCENT, plots.SECOND],
            angles="xy",
            scale_units="xy",
            scale=1,
            width=0.02,
        )
        (self.shadow,) = ax_v.plot(
            [],
            [],
            color=plots.THIRD,
            linewidth=5,
            alpha=0.7,
            solid_capstyle="butt",
            label="shadow of k on q's line: ‖k‖ cos θ",
        )
        (self.drop,) = ax_v.plot([], [], color="0.4", linestyle="--", linewidth=1)
        (self.arc,) = ax_v.plot([], [], color="0.2", linewidth=1)
        label = {"fontsize": 11, "fontweight": "bold", "ha": "center", "va": "center"}
        self.q_label = ax_v.text(0, 0, "q", color=plots.ACCENT, **label)
        self.k_label = ax_v.text(0, 0, "k", color=plots.SECOND, **label)
        self.theta_label = ax_v.text(0, 0, "θ", fontsize=9, ha="center", va="center")
        ax_v.legend(loc="lower left", fontsize=7, frameon=False)

        limit = top * top * 1.08
        ax_c.set_xlim(0, 180)
        ax_c.set_ylim(-limit, limit)
        ax_c.set_xticks([0, 45, 90, 135, 180])
        ax_c.axhline(0, color="0.4", linewidth=0.8)
        ax_c.axvline(90, color="0.6", linewidth=0.8, linestyle=":")
        ax_c.set_title("q·k = ‖q‖ ‖k‖ cos θ")
        ax_c.set_xlabel("angle θ between q and k (degrees)")
        ax_c.set_ylabel("q·k")
        # ±‖q‖‖k‖: the most and the least any key of this length can score (θ = 0°, 180°).
        (self.envelope,) = ax_c.plot(
            [], [], color="0.45", linestyle="--", linewidth=1, label="±‖q‖ ‖k‖: best, worst"
        )
        (self.curve,) = ax_c.plot([], [], color=plots.ACCENT, linewidth=1.5)
        (self.point,) = ax_c.plot(
            [], [], marker="o", markersize=8, color=plots.SECOND, linestyle="none"
        )
        self.numbers = ax_c.text(
            0.97,
            0.96,
            "",
            transform=ax_c.transAxes,
            ha="right",
            va="top",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "0.8", "alpha": 0.9},
        )
        ax_c.legend(loc="lower left", fontsize=7, frameon=False)
        return [
            self.envelope,
            self.shadow,
            self.drop,
            self.arc,
            self.arrows,
            self.q_label,
            self.k_label,
            self.theta_label,
            self.curve,
            self.point,
            self.numbers,
        ]

    def update(self, angle: float, q_length: float, k_length: float) -> None:
        direction, side, u, top = self.direction, self.side, self.u, self.top
        theta = np.radians(direction + side * angle)
        q = q_length * u
        k = k_length * np.array([np.cos(theta), np.sin(theta)])
        self.arrows.set_UVC([q[0], k[0]], [q[1], k[1]])
        # The shadow runs beside q's line, on the side away from k, so q's arrow
        # does not hide it when θ < 90°.
        beside = -side * 0.07 * top * np.array([-u[1], u[0]])
        foot = (k @ u) * u + beside
        self.shadow.set_data([beside[0], foot[0]], [beside[1], foot[1]])
        self.drop.set_data([k[0], foot[0]], [k[1], foot[1]])
        phis = np.radians(direction + side * np.linspace(0, angle, 40))
        self.arc.set_data(_ARC_RADIUS * np.cos(phis), _ARC_RADIUS * np.sin(phis))
        middle = np.radians(direction + side * angle / 2)
        self.theta_label.set_position(
            1.8 * _ARC_RADIUS * np.array([np.cos(middle), np.sin(middle)])
        )
        for label, vec in ((self.q_label, q), (self.k_label, k)):
            length = np.linalg.norm(vec)
            tip = vec + 0.18 * top * (vec / length if length else u)
            label.set_position(np.clip(tip, -0.93 * top, 0.93 * top))
        dot = float(q @ k)
        lengths = q_length * k_length
        cos = float(np.cos(np.radians(angle)))
        self.curve.set_data(_THETAS, lengths * np.cos(np.radians(_THETAS)))
        # One line drawn twice, the NaN lifting the pen between +‖q‖‖k‖ and -‖q‖‖k‖.
        self.envelope.set_data(
            [0, 180, np.nan, 0, 180], [lengths, lengths, np.nan, -lengths, -lengths]
        )
        self.point.set_data([angle], [dot])
        # At 90° the dot product is a rounding error away from 0, on either side: show 0.00,
        # never -0.00, whatever the CPU's last bits.
        readout = {name: round(x, 2) + 0.0 for name, x in (("dot", dot), ("cos", cos))}
        self.numbers.set_text(
            f"q·k = {readout['dot']:.2f}\n‖q‖ ‖k‖ = {lengths:.2f}\ncos θ = {readout['cos']:.2f}"
        )
        self.shown = {"q": q, "k": k, "dot": dot, "lengths": lengths, "cos": cos}


def dot_product_explorer(q: Any = None, k: Any = None) -> DotProductExplorer:
    """Two arrows q and k; sliders for the angle between them and for each length.

    ``q``, ``k``: optional 2-D vectors (shape (2,), not zero), both or neither.
    The sliders start at their lengths and the angle between them; q keeps its
    direction and k turns around it. Shows q·k (computed from the coordinates),
    ‖q‖‖k‖ and cos θ. ``controls``: ``"angle"``, ``"q_length"``, ``"k_length"``.

    Lesson: ``notebooks/01_dot_product.ipynb``.
    """
    if not all_or_none({"q": q, "k": k}):
        return DotProductExplorer(
            _DEFAULT_Q_DIRECTION, _DEFAULT_Q_LENGTH, _DEFAULT_K_LENGTH, _DEFAULT_ANGLE, 1.0
        )
    q, k = _vector(q, "q"), _vector(k, "k")
    q_length, k_length = float(np.linalg.norm(q)), float(np.linalg.norm(k))
    cos = float(q @ k / (q_length * k_length))
    return DotProductExplorer(
        direction=float(np.degrees(np.arctan2(q[1], q[0]))),
        q_length=q_length,
        k_length=k_length,
        angle=float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))),
        side=-1.0 if q[0] * k[1] - q[1] * k[0] < 0 else 1.0,
    )
