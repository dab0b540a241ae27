"""Scaling strip: one row of raw scores, divided by c · d_k^α for α from 0 (÷c) to 1 (÷c d_k).

Formula: weights ``softmax(s / (c · d_k^α))``. With c = 1: at α = 0 the raw scores q·k
(standard deviation √d_k) make the row nearly one-hot; at α = 1/2 they have standard
deviation 1 and the weights spread out; towards α = 1 they shrink to 0 and the row
flattens towards uniform. For the built-in row, d_k can move too. A panel beside the
row plots the mean entropy of 400 random rows against α for this d_k, with a dot at
the slider's α: one row varies by chance, the mean shows the rule. The panel keeps a
grey curve for each d_k the learner has visited, and marks α = 1/2 once both ends
(d_k = 4 and 1024) have been visited, so the lesson's "predict, then move" task is not
answered before the sliders move. The constant c (½, 1 or 2) moves every curve up or
down, but the curves still cross near α = 1/2: the variance argument fixes the
exponent, not the constant.

Lesson: ``notebooks/03_scaling.ipynb``.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from ..lessons.scaling import mean_entropy_by_exponent
from ..softmax import entropy, softmax
from ._base import CourseWidget
from ._check import learner_array, whole_number

DEFAULT_D_K = 256
DEFAULT_KEYS = 10
SEED = 18
# Every weight cell has its value written in; each written value costs ~1 ms a frame.
MAX_KEYS = 16
EXPONENTS = (0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0)
D_KS = (4, 16, 64, 256, 1024)
# The constant c in front of the divisor c · d_k^α: (label, value).
CONSTANTS = (("½", 0.5), ("1", 1.0), ("2", 2.0))
# The slider's steps; the panel's curves are computed at each of them.
ALPHA_STEP = 0.025
ALPHAS = np.linspace(0.0, 1.0, 41)
CURVE_ROWS = 400
# Where each grey curve's label sits (α), for each c: staggered where neighbouring curves
# lie apart. The lowest curve's label sits just below it, where no other curve runs.
LABEL_AT = {
    0.5: {4: 0.1, 16: 0.2, 64: 0.25, 256: 0.35, 1024: 0.45},
    1.0: {4: 0.1, 16: 0.1, 64: 0.2, 256: 0.3, 1024: 0.4},
    2.0: {4: 0.05, 16: 0.05, 64: 0.125, 256: 0.2, 1024: 0.3},
}
BELOW = D_KS[-1]


def example_scores(d_k: int = DEFAULT_D_K, n_keys: int = DEFAULT_KEYS, seed: int = SEED):
    """One query dotted with ``n_keys`` keys, all entries ~ N(0, 1): scores of variance d_k.

    The vectors for a smaller d_k are the first d_k entries of the same long query and
    keys, so moving d_k adds dimensions to one row instead of drawing a new one.
    """
    rng = np.random.default_rng(seed)
    size = max(d_k, *D_KS)
    q = rng.standard_normal(size)
    K = rng.standard_normal((n_keys, size))
    return K[:, :d_k] @ q[:d_k]


_CURVES: dict[tuple[int, int, float], np.ndarray] = {}


def mean_entropy_curve(d_k: int, n_keys: int, c: float = 1.0) -> np.ndarray:
    """Mean entropy of 400 random rows divided by c · d_k^α, at each α of ``ALPHAS`` (kept
    once computed)."""
    key = (d_k, n_keys, c)
    if key not in _CURVES:
        _CURVES[key] = mean_entropy_by_exponent(d_k, n_keys, ALPHAS, CURVE_ROWS, seed=d_k, c=c)
    return _CURVES[key]


class ScalingStrip(CourseWidget):
    """The softmax weights of one score row, and the scores, divided by c · d_k^α.

    ``scores`` and ``d_k``: the raw row and its d_k. ``shown``: ``"c"``, ``"divisor"``
    (c · d_k^α), ``"scores"`` (÷ the divisor), ``"weights"``, ``"largest"`` and
    ``"entropy"`` (of the weights, in nats), ``"mean_entropy"`` (of 400 random rows
    of the same d_k and number of keys at this α, the panel's dot), ``"grey_curves"`` (the d_k
    visited so far, whose curves the panel shows) and ``"half_line"`` (whether the line
    at α = 1/2 is shown).
    """

    nrows = 2
    ncols = 2
    figsize = (10.0, 2.9)
    subplot_kw = {"width_ratios": (1.75, 1.0)}
    # The picture shows what the learner has visited, so it keeps a history: a d_k
    # moved away from and back to gains the grey curves seen on the way.
    remembers_visits = True

    def __init__(self, scores: np.ndarray, d_k: int, built_in: bool = False) -> None:
        self.scores, self.d_k, self.built_in = scores, d_k, built_in
        self.visited = {d_k}  # the d_k whose grey curve the panel shows
        self.ends = widgets.HTML()
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        slider = widgets.FloatSlider(
            value=0.0,
            min=0.0,
            max=1.0,
            step=ALPHA_STEP,
            description="divide by c · d_k^α,  α =",
            readout_format=".3f",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="420px"),
        )
        slider.example_values = list(EXPONENTS)  # for the latency benchmark
        # A learner's own scores come with their d_k, which cannot change.
        options = D_KS if self.built_in else (self.d_k,)
        d_k = widgets.SelectionSlider(
            options=options,
            value=self.d_k,
            description="d_k",
            disabled=not self.built_in,
            style={"description_width": "initial"},
        )
        c = widgets.SelectionSlider(
            options=CONSTANTS,
            value=1.0,
            description="constant c",
            style={"description_width": "initial"},
        )
        return {"alpha": slider, "d_k": d_k, "c": c}

    def arrange(self) -> list[Any]:
        return [
            self.controls["alpha"],
            self.controls["d_k"],
            self.controls["c"],
            self.ends,
            self.readout,
            self.view.image,
        ]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_s = axes[:, 0]
        # The right column is one panel spanning both rows.
        grid = axes[0, 1].get_subplotspec().get_gridspec()
        axes[0, 1].remove()
        axes[1, 1].remove()
        panel = ax_w.figure.add_subplot(grid[:, 1])
        s, n = self.scores, self.scores.size
        self.strip = plots.weight_strip(softmax(s), ax_w, xlabel="")
        ax_w.set_title(
            f"softmax weights (uniform row: entropy log {n} = {np.log(n):.2f})",
            loc="left",
            fontsize=9,
        )
        ax_w.set_title("")  # weight_strip's centred title: the left one above replaces it
        ax_w.set_xticks([])
        self.status = ax_w.text(
            1.0,
            1.04,
            "",
            transform=ax_w.transAxes,
            ha="right",
            va="bottom",
            fontsize=9,
            fontweight="bold",
        )
        # The colours keep the raw scores' range, so the scores visibly fade as they shrink.
        limit = float(np.abs(s).max()) or 1.0
        self.scores_strip = plots.heatmap(
            s,
            ax_s,
            cmap=plots.SIGNED_CMAP,
            vmin=-limit,
            vmax=limit,
            annotate=False,
            colorbar=False,
            xlabel="key",
            ylabel="",
        )
        ax_s.set_title(
            r"scores ÷ $c\, d_k^{\,\alpha}$ (colours on the raw scores' scale)",
            loc="left",
            fontsize=9,
        )
        ax_s.set_yticks([])
        return [
            self.strip.image,
            *self.strip.texts,
            self.scores_strip.image,
            self.status,
            *self.draw_panel(panel, n),
        ]

    def draw_panel(self, ax: Any, n: int) -> list[Any]:
        """Mean entropy of random rows against α: blue for this d_k, grey for those visited.

        The grey curves, their labels and the line at α = 1/2 are drawn hidden; ``update``
        shows each curve once its d_k has been visited, and the line once both ends have.
        """
        d_ks = D_KS if self.built_in else (self.d_k,)
        self.grey: dict[int, list[Any]] = {}
        box = {"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"}
        for d_k in d_ks:
            (line,) = ax.plot(ALPHAS, mean_entropy_curve(d_k, n), color="0.7", lw=1, visible=False)
            label = ax.text(
                0.0,
                0.0,
                f"{d_k}",
                ha="center",
                va="top" if d_k == BELOW else "center",
                fontsize=7,
                color="0.35",
                bbox=box,
            )
            label.set_visible(False)
            self.grey[d_k] = [line, label]
        ax.axhline(np.log(n), color="grey", ls="--", lw=1)
        ax.text(1.0, np.log(n), f"uniform: log {n}", ha="right", va="bottom", fontsize=7)
        self.half = ax.axvline(0.5, color="grey", ls=":", lw=1, visible=False)
        ax.set(
            xlim=(-0.02, 1.02),
            ylim=(0.0, np.log(n) * 1.12),
            xticks=(0.0, 0.25, 0.5, 0.75, 1.0),
            xlabel=r"exponent $\alpha$",
            ylabel="entropy (nats)",
        )
        which = (
            "grey: each $d_k$ you visit" if self.built_in else "of your $d_k$ and number of keys"
        )
        ax.set_title(
            f"mean entropy of {CURVE_ROWS} random rows q·k,\n{which}", loc="left", fontsize=9
        )
        (self.curve,) = ax.plot([], [], color=plots.ACCENT, lw=2)
        # The blue curve's label, in the free corner: its grey label is hidden under it.
        self.label = ax.text(
            0.98,
            0.04,
            "",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=8,
            color=plots.ACCENT,
        )
        (self.dot,) = ax.plot([], [], "o", color=plots.ACCENT, ms=7)
        lines = [line for line, _ in self.grey.values()]
        labels = [label for _, label in self.grey.values()]
        return [*lines, *labels, self.half, self.curve, self.label, self.dot]

    def update(self, alpha: float, d_k: int, c: float) -> None:
        if d_k != self.d_k:  # the built-in row at another size d_k: new scores, new colours
            self.d_k, self.scores = d_k, example_scores(d_k)
            limit = float(np.abs(self.scores).max()) or 1.0
            self.scores_strip.image.set_clim(-limit, limit)
        times = "" if c == 1.0 else f"{c:g} "
        raw = "1, the raw scores" if c == 1.0 else f"{c:g}"
        self.ends.value = (
            f"α = 0: ÷ {raw} &nbsp;…&nbsp; α = 0.5: ÷ {times}√d_k = "
            f"÷ {c * np.sqrt(self.d_k):.2f} &nbsp;…&nbsp; α = 1: ÷ {times}d_k = "
            f"÷ {c * self.d_k:g}"
        )
        divisor = c * float(self.d_k) ** alpha
        scaled = self.scores / divisor
        weights = softmax(scaled)
        largest, ent = float(weights.max()), float(entropy(weights))
        self.strip.update(weights)
        self.scores_strip.update(scaled)
        self.status.set_text(f"largest {largest:.3f}    entropy {ent:.2f} nats")
        n = self.scores.size
        curve = mean_entropy_curve(self.d_k, n, c)
        mean_entropy = float(np.interp(alpha, ALPHAS, curve))
        self.curve.set_data(ALPHAS, curve)
        self.dot.set_data([alpha], [mean_entropy])
        self.visited.add(self.d_k)
        self.label.set_text(f"blue: $d_k$ = {self.d_k}")
        for d, (line, label) in self.grey.items():
            line.set_visible(d in self.visited)
            label.set_visible(d in self.visited and d != self.d_k)
            if d in self.visited:
                grey = mean_entropy_curve(d, n, c)
                line.set_ydata(grey)
                at = int(np.searchsorted(ALPHAS, LABEL_AT[c].get(d, 0.3) - 1e-9))
                label.set_position((ALPHAS[at], grey[at] - 0.05 * (d == BELOW)))
        half = not self.built_in or {D_KS[0], D_KS[-1]} <= self.visited
        self.half.set_visible(half)
        if divisor == 1.0:
            which = " (the raw scores)"
        elif alpha == 0.0:
            which = " = c"
        elif np.isclose(alpha, 0.5):
            which = f" = {times}√d_k"
        elif alpha == 1.0:
            which = f" = {times}d_k"
        else:
            which = ""
        self.readout.value = (
            f"scores ÷ <b>{divisor:.2f}</b>{which}: they now run from "
            f"{scaled.min():.1f} to {scaled.max():.1f}"
        )
        self.shown = {
            "c": c,
            "divisor": divisor,
            "scores": scaled,
            "weights": weights,
            "largest": largest,
            "entropy": ent,
            "mean_entropy": mean_entropy,
            "d_k": self.d_k,
            "grey_curves": tuple(d for d in self.grey if d in self.visited),
            "half_line": half,
        }


def scaling_strip(scores: Any = None, d_k: int | None = None) -> ScalingStrip:
    """A strip of softmax weights for one score row, with a slider dividing the scores by d_k^α.

    ``scores``: optional 1-D array of 2 to 16 finite raw scores; pass ``d_k`` with them.
    ``d_k``: optional whole number ≥ 1 (default 256); alone, it makes a built-in row of
    10 scores q·k of that size (seeded). The slider moves α from 0 (÷1, the raw scores)
    through 0.5 (÷√d_k) to 1 (÷d_k). ``controls``: ``"alpha"``; ``"d_k"``, which moves
    the built-in row through ``D_KS`` (for your own scores it stays at your d_k); and
    ``"c"``, a constant in front of the divisor, c · d_k^α, with c = ½, 1 or 2. Beside
    the row, the mean entropy of 400 random rows of the same d_k and number of keys
    against α, with a dot at the slider's α, and a grey curve for each d_k you have visited.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    what = "the size of q and k, their number of entries"
    if scores is None:
        d_k = DEFAULT_D_K if d_k is None else whole_number(d_k, "d_k", what, 1)
        return ScalingStrip(example_scores(d_k), d_k, built_in=d_k in D_KS)
    s = learner_array(scores, "scores", ndim=1)
    if not 2 <= s.size <= MAX_KEYS:
        raise ValueError(
            f"scores must hold between 2 and {MAX_KEYS} numbers (one per key), got {s.size}."
        )
    if d_k is None:
        raise ValueError(
            "d_k is needed with your scores: the slider divides them by d_k^α, from 1 "
            "(α = 0) to d_k (α = 1). Pass the size of your query and key vectors, their "
            "number of entries, e.g. scaling_strip(scores=s, d_k=64)."
        )
    return ScalingStrip(s, whole_number(d_k, "d_k", what, 1))
