"""Widget for lesson 02: what softmax makes of scores q·k as d_k grows, for entries of q and
k with σ_q σ_k = 1, 1/2 or 1/3, when the scores are divided by 1 or by √d_k.

Lesson: ``notebooks/02_variance.ipynb``. The rows come from
``attnlab.lessons.variance.unit_components``, drawn once, seeded, when the widget is built.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from .._inputs import is_whole_number
from ..lessons.variance import DISTRIBUTION_LABELS, DISTRIBUTIONS, unit_components
from ..softmax import softmax
from ._base import CourseWidget

DEFAULT_D_KS = tuple(2**i for i in range(10))  # 1, 2, 4, ..., 512
LARGEST_D_K = 4096
START_D_K = 16  # where the slider starts, when it is on the slider: a raw row has begun to tip
# σ_q σ_k: 1 keeps every variance at 1 (Sections 1 to 6, LeCun normal); 1/2 is the start of
# PyTorch's nn.MultiheadAttention (Section 7's exercise); 1/3 that of nn.Linear.
SCALES = (("1", 1.0), ("1/2", 0.5), ("1/3", 1 / 3))
ROW_KEYS = 256  # ROW_COUNT fixed queries, each against the same ROW_KEYS fixed keys,
ROW_COUNT = 200  # and the largest softmax weight of each row
# The largest weight of a row of ROW_KEYS lies between 1/ROW_KEYS (an even spread) and 1:
# bins half a power of two wide on a log scale, from 1/256 = 2⁻⁸ to 1 = 2⁰.
TOP_EDGES = np.arange(-8.0, 0.01, 0.5)
# The two divisors of the scores: a key of the frames, a label, a colour.
DIVISORS = (
    ("raw", "raw q·k", plots.ACCENT),
    ("scaled", "q·k / √d_k", plots.SECOND),
)


def _check_d_ks(d_ks: Any) -> tuple[int, ...]:
    if d_ks is None:
        return DEFAULT_D_KS
    if isinstance(d_ks, (str, bytes)) or not isinstance(d_ks, Iterable):
        raise TypeError(f"d_ks must be a list of whole numbers such as [1, 4, 16], got {d_ks!r}.")
    values = list(d_ks)
    if not values:
        raise ValueError("d_ks must contain at least one d_k, e.g. d_ks=[1, 4, 16, 64].")
    for d in values:
        if not is_whole_number(d):
            raise TypeError(f"d_ks must hold whole numbers (the sizes of q and k), got {d!r}.")
        if not 1 <= d <= LARGEST_D_K:
            raise ValueError(f"every value in d_ks must be between 1 and {LARGEST_D_K}, got {d}.")
    if len(set(values)) != len(values):
        raise ValueError(f"d_ks must not repeat a value, got {values}.")
    return tuple(sorted(int(d) for d in values))


class VarianceExplorer(CourseWidget):
    """What softmax makes of ``ROW_COUNT`` rows of scores at the d_k on the slider and the
    σ_q σ_k picked, divided by 1 and by √d_k.

    ``rows`` is a pair ``(Q, K)``: ``ROW_COUNT`` queries with ``max(d_ks)`` entries and
    ``ROW_KEYS`` keys, entries drawn from ``dist`` (a key of ``DISTRIBUTION_LABELS``) with
    variance 1, of which each d_k uses the first d_k entries, so the slider changes d_k,
    not the rows. σ_q σ_k multiplies every score (q = σ_q x, k = σ_k y). ``frames`` maps
    each ``(d_k, σ_q σ_k)`` (a value of ``SCALES``) to what the view shows there, computed
    once. ``shown``: ``"d_k"``, ``"scale"``, and for each divisor label ``L`` of
    ``DIVISORS`` (``"raw"``: ÷ 1, ``"scaled"``: ÷ √d_k):
    ``"top_L"`` (the largest weight of each row of ``softmax(σ_q σ_k q·k_j / divisor)``,
    shape ``(ROW_COUNT,)``), ``"top_hist_L"`` (the share of rows in each bin of
    ``TOP_EDGES``, log₂ of the weight), ``"median_top_L"`` and ``"above_half_L"`` (the
    share of rows whose largest weight is above 0.5).
    """

    figsize = (6.4, 3.0)

    def __init__(
        self, d_ks: tuple[int, ...], dist: str, rows: tuple[np.ndarray, np.ndarray], start: int
    ) -> None:
        self.d_ks, self.dist, self.start = list(d_ks), dist, start
        self.rows = rows
        self.scales = SCALES
        # Everything the controls show is computed here, once.
        self.frames: dict[tuple[int, float], dict[str, Any]] = {}
        Q, K = rows
        for d in self.d_ks:
            unit = Q[:, :d] @ K[:, :d].T  # ROW_COUNT rows of q·k_j, entries of variance 1
            divisors = {"raw": 1.0, "scaled": np.sqrt(d)}
            for _, scale in SCALES:
                frame: dict[str, Any] = {"d_k": d, "scale": scale}
                for label, divisor in divisors.items():
                    top = softmax(scale * unit / divisor).max(axis=1)  # each row's largest
                    counts, _ = np.histogram(np.log2(top), bins=TOP_EDGES)
                    frame[f"top_{label}"] = top
                    frame[f"top_hist_{label}"] = counts / top.size
                    frame[f"median_top_{label}"] = float(np.median(top))
                    frame[f"above_half_{label}"] = float(np.mean(top > 0.5))
                self.frames[d, scale] = frame
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        slider = widgets.SelectionSlider(
            options=self.d_ks,
            value=self.start,
            description="d_k",
            layout=widgets.Layout(width="420px"),
        )
        scale = widgets.ToggleButtons(
            options=list(SCALES),
            value=SCALES[0][1],
            description="σ_q σ_k:",
            style={"description_width": "initial", "button_width": "48px"},
        )
        return {"d_k": slider, "scale": scale}

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax = axes[0, 0]
        # ROW_COUNT rows of ROW_KEYS keys: how their largest weights spread on a log scale,
        # for each divisor (each bin split in two, in the order of DIVISORS).
        left, step = TOP_EDGES[:-1], float(TOP_EDGES[1] - TOP_EDGES[0])
        width = 0.45 * step
        zeros = np.zeros(left.size)
        self.row_bars = [
            ax.bar(left + (0.05 + 0.45 * i) * step, zeros, width, align="edge",
                   color=color, label=label)
            for i, (_, label, color) in enumerate(DIVISORS)
        ]  # fmt: skip
        ax.axvline(-1.0, color="0.35", linestyle=":", linewidth=1.0)  # a weight of 0.5
        ax.text(
            -1.1, 0.55, "weight 0.5", ha="right", va="center", rotation=90, fontsize=8,
            color="0.35", transform=ax.get_xaxis_transform(),
        )  # fmt: skip
        ax.set_xlim(TOP_EDGES[0], TOP_EDGES[-1])
        ax.set_ylim(0, 1.05)
        ticks = np.arange(-8, 1, 2)
        ax.set_xticks(ticks, ["1/256", "1/64", "1/16", "1/4", "1"])
        ax.set_xlabel(f"largest weight in a row of {ROW_KEYS} keys (log scale)")
        ax.set_ylabel(f"share of the {ROW_COUNT} rows")
        ax.set_title(f"largest weight of {ROW_COUNT} rows")
        # The legend and the medians sit side by side above the middle bins, where no bar
        # of any d_k reaches half the height (the tall ones are at 1/256 and at 1).
        ax.legend(loc="upper left", bbox_to_anchor=(0.12, 1.0), fontsize=8)
        self.row_text = ax.text(
            0.5, 0.96, "", transform=ax.transAxes, va="top", ha="left", fontsize=8
        )
        return [*(patch for bars in self.row_bars for patch in bars.patches), self.row_text]

    def update(self, d_k: int, scale: float) -> None:
        frame = self.frames[d_k, scale]
        for bars, (key, _, _) in zip(self.row_bars, DIVISORS, strict=True):
            for bar, share in zip(bars.patches, frame[f"top_hist_{key}"], strict=True):
                bar.set_height(float(share))
        label = {value: name for name, value in SCALES}[scale]
        self.row_text.set_text(
            f"d_k = {d_k}, σ_q σ_k = {label}\nmedian:\nraw {frame['median_top_raw']:.3f}"
            f"\n÷ √d_k {frame['median_top_scaled']:.3f}"
        )
        self.shown = dict(frame)
        self.readout.value = (
            f"d_k = {d_k}, σ_q σ_k = {label}: {ROW_COUNT} fixed queries, each against the "
            f"same {ROW_KEYS} fixed keys (the first d_k entries of each vector, entries "
            f"{DISTRIBUTION_LABELS[self.dist]} times σ_q or σ_k), so the scores have standard "
            f"deviation σ_q σ_k √d_k before any division. The largest softmax weight of each "
            f"row, from 1/{ROW_KEYS} (an even spread) to 1; dotted: 0.5. Rows whose largest "
            f"weight is above 0.5: {frame['above_half_raw']:.0%} raw, "
            f"{frame['above_half_scaled']:.0%} divided by √d_k."
        )

    def takeover_d_k(self, scale: float) -> int | None:
        """The smallest d_k on the slider from which more than half of the raw rows give
        one key more than 0.5 at this σ_q σ_k (a value of ``SCALES``); None if none does."""
        return next((d for d in self.d_ks if self.frames[d, scale]["above_half_raw"] > 0.5), None)

    def plot_summary(self):
        """Every frame in one figure, against d_k on a log₂ axis: left, the share of rows
        whose largest weight passes 0.5; right, the median largest weight (log scale). One
        line per σ_q σ_k and divisor (blue raw, orange ÷ √d_k, as in the widget); grey
        marks at each σ_q σ_k's ``takeover_d_k``. Returns the figure (pyplot).

        Lesson: ``notebooks/02_variance.ipynb``, Section 9.
        """
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(8.6, 3.3), layout="constrained")
        d = np.asarray(self.d_ks, dtype=float)
        styles = (
            {"ls": "-", "marker": "o"},
            {"ls": "--", "marker": "s"},
            {"ls": ":", "marker": "^"},
        )
        for (name, scale), style in zip(SCALES, styles, strict=True):
            for key, label, colour in DIVISORS:
                shares = [self.frames[k, scale][f"above_half_{key}"] for k in self.d_ks]
                medians = [self.frames[k, scale][f"median_top_{key}"] for k in self.d_ks]
                kw = {"color": colour, "markersize": 4, "linewidth": 1.3, **style}
                left.plot(d, shares, label=f"{label}, σ_q σ_k = {name}", **kw)
                right.plot(d, medians, **kw)
            first = self.takeover_d_k(scale)
            if first is not None:
                left.axvline(first, color="0.6", linewidth=0.8, zorder=0)
                left.text(first, 1.02, str(first), ha="center", va="bottom", fontsize=8,
                          color="0.35", transform=left.get_xaxis_transform())  # fmt: skip
        left.axhline(0.5, color="0.35", linestyle=":", linewidth=1.0)
        left.set(ylim=(-0.02, 1.0), ylabel="share of rows")
        left.set_title("largest weight above 0.5", pad=14)  # room for the marks' labels
        right.axhline(0.5, color="0.35", linestyle=":", linewidth=1.0)
        right.set_yscale("log", base=2)
        right.set_ylim(1 / ROW_KEYS, 1.0)
        right.set_yticks([1 / 256, 1 / 64, 1 / 16, 1 / 4, 1], ["1/256", "1/64", "1/16", "1/4", "1"])
        right.set_ylabel(f"weight (row of {ROW_KEYS} keys)")
        right.set_title("median row's largest weight", pad=14)
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_xticks(d, [f"{v:g}" for v in d])
            ax.minorticks_off()
            ax.set_xlabel("d_k")
            ax.grid(True, alpha=0.3)
        left.legend(fontsize=7, loc="upper left")
        fig.suptitle(f"All {ROW_COUNT} rows at every d_k and σ_q σ_k of the widget", fontsize=10)
        return fig


def variance_explorer(
    d_ks: Iterable[int] | None = None,
    *,
    start: int | None = None,
    dist: str = "normal",
    seed: int = 2,
) -> VarianceExplorer:
    """The largest softmax weights of 200 rows of scores q·k, for a d_k chosen with a slider
    and σ_q σ_k = 1, 1/2 or 1/3 chosen with buttons, with the scores divided by 1 and by
    √d_k.

    ``d_ks``: the d_k values on the slider (whole numbers from 1 to 4096; default the
    powers of two 1, 2, ..., 512). ``start``: the d_k the slider starts at, one of ``d_ks``
    (default 16 if ``d_ks`` holds it, else the smallest). ``dist``: how the entries of q
    and k are drawn before σ_q and σ_k multiply them, "normal", "uniform" or "rademacher"
    (each with mean 0 and variance 1). ``seed`` fixes the rows. ``controls``: ``"d_k"``
    and ``"scale"`` (σ_q σ_k). ``frames[d_k, scale]`` holds the numbers shown there,
    among them ``"median_top_raw"`` and ``"median_top_scaled"``, the median largest weight
    of the rows for each divisor; ``scales`` lists the
    (label, σ_q σ_k) pairs of the buttons.

    The view: 200 fixed queries, each against the same 256 fixed keys, and a histogram
    (log scale, from 1/256 to 1) of each row's largest weight, of
    ``softmax(σ_q σ_k q·k_j)`` and ``softmax(σ_q σ_k q·k_j / √d_k)`` (two bars in each
    bin, in that order), with the
    median and the share of rows above 0.5 for each. The rows are drawn once, seeded, and
    every histogram is computed when the widget is built; each d_k uses the first d_k
    entries of the same vectors.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    checked = _check_d_ks(d_ks)
    if start is None:
        start = START_D_K if START_D_K in checked else checked[0]
    elif not is_whole_number(start) or start not in checked:
        raise ValueError(
            f"start must be one of the d_ks on the slider {list(checked)}, got {start!r}."
        )
    if dist not in DISTRIBUTIONS:
        raise ValueError(
            f"dist must be one of {', '.join(map(repr, DISTRIBUTIONS))}, got {dist!r}."
        )
    # A generator of the rows' own, seeded from ``seed``.
    rows_rng = np.random.default_rng([seed, 1])
    longest = checked[-1]
    rows = (
        unit_components((ROW_COUNT, longest), rows_rng, dist),
        unit_components((ROW_KEYS, longest), rows_rng, dist),
    )
    return VarianceExplorer(checked, dist, rows, int(start))
