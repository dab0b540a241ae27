"""Widget for ``notebooks/01_dot_product.ipynb``: the dot product of two arrows.

``dot_product_explorer()`` draws a query q and a key k in the plane. Sliders
set the angle θ between them and their lengths; the plot on the right traces
q·k = ‖q‖‖k‖ cos θ against θ, so the learner sees the dot product fall to 0 at
90°, turn negative past it, and grow with either length.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from .. import plots
from .._inputs import as_real_array
from ._base import CourseWidget, FigureView

_DEFAULT_Q_LENGTH = 1.5
_DEFAULT_Q_DIRECTION = 20.0  # degrees from the first axis
_DEFAULT_K_LENGTH = 1.2
_DEFAULT_ANGLE = 60.0
_ARC_RADIUS = 0.35
_THETAS = np.linspace(0.0, 180.0, 181)


def _vector(x, name: str) -> np.ndarray:
    arr = as_real_array(x, name).astype(float)
    if arr.shape != (2,):
        raise ValueError(
            f"{name} must be a 2-D vector, two numbers like [1.0, 0.5]; got shape {arr.shape}."
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf; it needs two finite numbers.")
    if not np.any(arr):
        raise ValueError(f"{name} is the zero vector, which has no direction; give it a length.")
    return arr


def _start(q, k):
    """(q direction in degrees, ‖q‖, ‖k‖, angle between in degrees, side k lies on: ±1)."""
    if q is None and k is None:
        return _DEFAULT_Q_DIRECTION, _DEFAULT_Q_LENGTH, _DEFAULT_K_LENGTH, _DEFAULT_ANGLE, 1.0
    if q is None or k is None:
        raise ValueError(
            "Pass q and k together (two 2-D vectors), or neither for the built-in example."
        )
    q, k = _vector(q, "q"), _vector(k, "k")
    direction = float(np.degrees(np.arctan2(q[1], q[0])))
    cos = float(q @ k / (np.linalg.norm(q) * np.linalg.norm(k)))
    angle = float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
    side = -1.0 if q[0] * k[1] - q[1] * k[0] < 0 else 1.0
    return direction, float(np.linalg.norm(q)), float(np.linalg.norm(k)), angle, side


def dot_product_explorer(q=None, k=None) -> CourseWidget:
    """Two arrows q and k; sliders for the angle between them and for each length.

    ``q``, ``k``: optional 2-D vectors (shape (2,), not zero), both or neither.
    The sliders start at their lengths and the angle between them; q keeps its
    direction and k turns around it. Shows q·k (computed from the coordinates),
    ‖q‖‖k‖ and cos θ.

    Lesson: ``notebooks/01_dot_product.ipynb``.
    """
    direction, q_len, k_len, angle0, side = _start(q, k)
    top = max(2.0, float(np.ceil(1.25 * max(q_len, k_len) * 2) / 2))
    u = np.array([np.cos(np.radians(direction)), np.sin(np.radians(direction))])

    view = FigureView(ncols=2, figsize=(7.0, 3.2), gridspec_kw={"width_ratios": [1.0, 1.15]})
    ax_v, ax_c = view.axes[0]
    ax_v.set_xlim(-top, top)
    ax_v.set_ylim(-top, top)
    ax_v.set_aspect("equal")
    ax_v.axhline(0, color="0.85", linewidth=0.8, zorder=0)
    ax_v.axvline(0, color="0.85", linewidth=0.8, zorder=0)
    ax_v.axline((0, 0), tuple(u), color=plots.ACCENT, linestyle=":", linewidth=1, alpha=0.6)
    ax_v.set_title("q and k as arrows")
    ax_v.set_xlabel("first coordinate")
    ax_v.set_ylabel("second coordinate")
    arrows = ax_v.quiver(
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
    (shadow,) = ax_v.plot(
        [],
        [],
        color=plots.THIRD,
        linewidth=5,
        alpha=0.7,
        solid_capstyle="butt",
        label="shadow of k on q's line: ‖k‖ cos θ",
    )
    (drop,) = ax_v.plot([], [], color="0.4", linestyle="--", linewidth=1)
    (arc,) = ax_v.plot([], [], color="0.2", linewidth=1)
    q_label = ax_v.text(
        0, 0, "q", color=plots.ACCENT, fontsize=11, fontweight="bold", ha="center", va="center"
    )
    k_label = ax_v.text(
        0, 0, "k", color=plots.SECOND, fontsize=11, fontweight="bold", ha="center", va="center"
    )
    theta_label = ax_v.text(0, 0, "θ", fontsize=9, ha="center", va="center")
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
    (curve,) = ax_c.plot([], [], color=plots.ACCENT, linewidth=1.5)
    (point,) = ax_c.plot([], [], marker="o", markersize=8, color=plots.SECOND, linestyle="none")
    readout = ax_c.text(
        0.97,
        0.96,
        "",
        transform=ax_c.transAxes,
        ha="right",
        va="top",
        fontsize=9,
        bbox={"facecolor": "white", "edgecolor": "0.8", "alpha": 0.9},
    )
    view.animate(shadow, drop, arc, arrows, q_label, k_label, theta_label, curve, point, readout)

    # Learner vectors start exactly where they are: a slider keeps a value off its step
    # until it is moved.
    angle = widgets.FloatSlider(
        value=angle0, min=0, max=180, step=1, description="θ (°)", readout_format=".0f"
    )
    q_length = widgets.FloatSlider(
        value=q_len, min=0.0, max=top, step=0.05, description="‖q‖", readout_format=".2f"
    )
    k_length = widgets.FloatSlider(
        value=k_len, min=0.0, max=top, step=0.05, description="‖k‖", readout_format=".2f"
    )

    def vectors():
        theta = np.radians(direction + side * angle.value)
        q_vec = q_length.value * u
        k_vec = k_length.value * np.array([np.cos(theta), np.sin(theta)])
        return q_vec, k_vec

    def show(_change=None) -> None:
        q_vec, k_vec = vectors()
        arrows.set_UVC([q_vec[0], k_vec[0]], [q_vec[1], k_vec[1]])
        # The shadow runs beside q's line, on the side away from k, so q's arrow
        # does not hide it when θ < 90°.
        beside = -side * 0.07 * top * np.array([-u[1], u[0]])
        foot = (k_vec @ u) * u + beside
        shadow.set_data([beside[0], foot[0]], [beside[1], foot[1]])
        drop.set_data([k_vec[0], foot[0]], [k_vec[1], foot[1]])
        phis = np.radians(direction + side * np.linspace(0, angle.value, 40))
        arc.set_data(_ARC_RADIUS * np.cos(phis), _ARC_RADIUS * np.sin(phis))
        middle = np.radians(direction + side * angle.value / 2)
        theta_label.set_position(1.8 * _ARC_RADIUS * np.array([np.cos(middle), np.sin(middle)]))
        for label, vec in ((q_label, q_vec), (k_label, k_vec)):
            length = np.linalg.norm(vec)
            tip = vec + 0.18 * top * (vec / length if length else u)
            label.set_position(np.clip(tip, -0.93 * top, 0.93 * top))
        product = float(q_vec @ k_vec)
        lengths = q_length.value * k_length.value
        cos = float(np.cos(np.radians(angle.value)))
        curve.set_data(_THETAS, lengths * np.cos(np.radians(_THETAS)))
        point.set_data([angle.value], [product])
        readout.set_text(f"q·k = {product:.2f}\n‖q‖ ‖k‖ = {lengths:.2f}\ncos θ = {cos:.2f}")
        view.redraw()

    for control in (angle, q_length, k_length):
        control.observe(show, names="value")
    show()
    widget = CourseWidget(
        [widgets.HBox([angle, q_length, k_length]), view.image],
        controls={"angle": angle, "q_length": q_length, "k_length": k_length},
        view=view,
    )
    widget.readout, widget.arrows, widget.point = readout, arrows, point
    widget.vectors = vectors
    return widget
