"""Widget for lesson 02: how the spread of q·k grows with d_k, and what softmax makes of it
when the scores are divided by 1, by √d_k or by d_k.

Lesson: ``notebooks/02_variance.ipynb``. The samples come from
``attnlab.lessons.variance.samples_by_dk``, drawn once when the widget is built; the rows of
the right panel from a generator of their own, also once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets
import numpy as np

from .. import plots
from .._inputs import is_whole_number
from ..lessons.variance import (
    DISTRIBUTION_LABELS,
    DISTRIBUTIONS,
    samples_by_dk,
    unit_components,
)
from ..softmax import softmax
from ._base import CourseWidget
from ._check import whole_number

DEFAULT_D_KS = tuple(2**i for i in range(10))  # 1, 2, 4, ..., 512
LARGEST_D_K = 4096
START_D_K = 16  # where the slider starts, when it is on the slider: both panels show an effect
SAMPLES_RANGE = (100, 100_000)
RAW_BINS = 80
TOP_ROOM = 1.3  # the left panel's height, as a multiple of the tallest normal curve's peak
ROW_KEYS = 256  # the right panel: ROW_COUNT fixed queries, each against the same
ROW_COUNT = 200  # ROW_KEYS fixed keys, and the largest softmax weight of each row
# The largest weight of a row of ROW_KEYS lies between 1/ROW_KEYS (an even spread) and 1:
# bins half a power of two wide on a log scale, from 1/256 = 2⁻⁸ to 1 = 2⁰.
TOP_EDGES = np.arange(-8.0, 0.01, 0.5)
# The right panel's three divisors of the scores: a key of the frames, a label, a colour.
DIVISORS = (
    ("raw", "raw q·k", plots.ACCENT),
    ("scaled", "q·k / √d_k", plots.SECOND),
    ("over_dk", "q·k / d_k", plots.THIRD),
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


def _raw_limit(largest_d_k: int) -> float:
    # 3.5 standard deviations of the widest histogram, rounded up to a multiple of 10.
    return float(max(10.0, np.ceil(3.5 * np.sqrt(largest_d_k) / 10.0) * 10.0))


def _raw_edges(d_k: int, limit: float, dist: str) -> np.ndarray:
    """The left panel's bin edges at ``d_k``, from ``-limit`` to ``limit``.

    ±1 entries give whole-number scores of d_k's parity, 2 apart: one bin of width 2
    around each, so no bin is empty by construction. Other entries: ``RAW_BINS`` bins, or
    finer ones a quarter of √d_k wide when those are narrower, so that a narrow histogram
    (d_k = 1's sharp peak at 0) is not averaged away in one coarse bar.
    """
    if dist == "rademacher":
        first = -limit - 1 if (limit + d_k) % 2 == 0 else -limit  # an edge between two scores
        return np.arange(first, limit + 1.5, 2.0)
    bins = max(RAW_BINS, int(np.ceil(2 * limit / (np.sqrt(d_k) / 4))))
    return np.linspace(-limit, limit, bins + 1)


class VarianceExplorer(CourseWidget):
    """Left: a histogram of q·k for the d_k on the slider. Right: what softmax makes of
    such scores, over ``ROW_COUNT`` rows, divided by 1, by √d_k and by d_k.

    ``samples`` is ``{d_k: samples}``, with entries drawn from ``dist`` (a key of
    ``DISTRIBUTION_LABELS``); ``n_samples`` is the number of samples per d_k, for the note
    under the figure. ``rows`` is a pair ``(Q, K)``: ``ROW_COUNT`` queries with
    ``max(d_ks)`` entries and ``ROW_KEYS`` keys, of which each d_k uses the first d_k
    entries, so the slider changes d_k, not the rows. ``frames`` maps each d_k to what the
    view shows there, computed once. ``shown``: ``"d_k"``, ``"raw_std"`` (the standard
    deviation of the samples shown, kept for checking, not drawn), ``"raw"`` (the
    histogram's bar heights, a density on one y-axis shared by every d_k) and
    ``"raw_edges"`` (its bin edges, finer at small d_k: see ``_raw_edges``), and for each
    divisor label ``L`` of ``DIVISORS`` (``"raw"``: ÷ 1, ``"scaled"``: ÷ √d_k,
    ``"over_dk"``: ÷ d_k): ``"top_L"`` (the largest weight of each row of
    ``softmax(q·k_j / divisor)``, shape ``(ROW_COUNT,)``), ``"top_hist_L"`` (the share of
    rows in each bin of ``TOP_EDGES``, log₂ of the weight), ``"median_top_L"`` and
    ``"above_half_L"`` (the share of rows whose largest weight is above 0.5).
    """

    ncols = 2
    figsize = (7.6, 3.0)

    def __init__(
        self,
        samples: dict[int, np.ndarray],
        dist: str,
        n_samples: int,
        rows: tuple[np.ndarray, np.ndarray],
        start: int,
    ) -> None:
        self.samples = samples
        self.dist, self.n_samples = dist, n_samples
        self.d_ks = sorted(samples)
        self.start = start
        self.raw_limit = _raw_limit(self.d_ks[-1])
        # Everything the slider shows is computed here, once.
        self.frames: dict[int, dict[str, Any]] = {}
        Q, K = rows
        for d, s in samples.items():
            raw_edges = _raw_edges(d, self.raw_limit, dist)
            raw_counts, _ = np.histogram(s, bins=raw_edges)
            scores = Q[:, :d] @ K[:, :d].T  # ROW_COUNT rows of q·k_j, one per query
            frame: dict[str, Any] = {
                "d_k": d,
                # A density on one shared axis: the peak drops like 1/√d_k as it widens.
                "raw": raw_counts / (s.size * np.diff(raw_edges)),
                "raw_edges": raw_edges,
                "raw_std": float(np.std(s, ddof=1)),
            }
            divisors = {"raw": 1.0, "scaled": np.sqrt(d), "over_dk": float(d)}
            for label, divisor in divisors.items():
                top = softmax(scores / divisor).max(axis=1)  # each row's largest weight
                counts, _ = np.histogram(np.log2(top), bins=TOP_EDGES)
                frame[f"top_{label}"] = top
                frame[f"top_hist_{label}"] = counts / top.size
                frame[f"median_top_{label}"] = float(np.median(top))
                frame[f"above_half_{label}"] = float(np.mean(top > 0.5))
            self.frames[d] = frame
        # The left axes fit the tallest normal curve with room above it. A histogram may
        # rise higher (a single product XY peaks far above the curve at 0): it is cut at
        # the top, and the readout gives its height.
        self.top = TOP_ROOM / np.sqrt(2 * np.pi * self.d_ks[0])
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        slider = widgets.SelectionSlider(
            options=self.d_ks,
            value=self.start,
            description="d_k",
            layout=widgets.Layout(width="420px"),
        )
        return {"d_k": slider}

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_raw, ax_row = axes[0]
        first, limit = self.d_ks[0], self.raw_limit
        self.raw_hist = plots.histogram(
            self.samples[first],
            ax_raw,
            bins=RAW_BINS,
            range=(-limit, limit),
            title="raw scores q·k",
            xlabel="q·k",
        )
        self.raw_x = np.linspace(-limit, limit, 400)
        (self.raw_curve,) = ax_raw.plot(
            self.raw_x,
            self._normal(first),
            color=plots.SECOND,
            linewidth=1.2,
            label="normal, std √d_k",
        )
        ax_raw.legend(loc="upper right", fontsize=8)
        ax_raw.set_xlim(-limit, limit)
        ax_raw.set_ylim(0, self.top)

        # ROW_COUNT rows of ROW_KEYS keys: how their largest weights spread on a log scale,
        # for each divisor (each bin split in three, in the order of DIVISORS).
        left, step = TOP_EDGES[:-1], float(TOP_EDGES[1] - TOP_EDGES[0])
        width = 0.3 * step
        zeros = np.zeros(left.size)
        self.row_bars = [
            ax_row.bar(left + (0.05 + 0.3 * i) * step, zeros, width, align="edge",
                       color=color, label=label)
            for i, (_, label, color) in enumerate(DIVISORS)
        ]  # fmt: skip
        ax_row.axvline(-1.0, color="0.35", linestyle=":", linewidth=1.0)  # a weight of 0.5
        ax_row.text(
            -1.1, 0.55, "weight 0.5", ha="right", va="center", rotation=90, fontsize=8,
            color="0.35", transform=ax_row.get_xaxis_transform(),
        )  # fmt: skip
        ax_row.set_xlim(TOP_EDGES[0], TOP_EDGES[-1])
        ax_row.set_ylim(0, 1.05)
        ticks = np.arange(-8, 1, 2)
        ax_row.set_xticks(ticks, ["1/256", "1/64", "1/16", "1/4", "1"])
        ax_row.set_xlabel(f"largest weight in a row of {ROW_KEYS} keys (log scale)")
        ax_row.set_ylabel(f"share of the {ROW_COUNT} rows")
        ax_row.set_title(f"largest weight of {ROW_COUNT} rows")
        # The legend and the medians sit side by side above the middle bins, where no bar
        # of any d_k reaches half the height (the tall ones are at 1/256 and at 1).
        ax_row.legend(loc="upper left", bbox_to_anchor=(0.16, 1.0), fontsize=8)
        self.row_text = ax_row.text(
            0.6, 0.96, "", transform=ax_row.transAxes, va="top", ha="left", fontsize=8
        )
        return [
            self.raw_hist.patch,
            self.raw_curve,
            *(patch for bars in self.row_bars for patch in bars.patches),
            self.row_text,
        ]

    def _normal(self, d_k: int) -> np.ndarray:
        # The normal density with standard deviation √d_k: its peak is 1 / √(2π d_k).
        return np.exp(-0.5 * self.raw_x**2 / d_k) / np.sqrt(2 * np.pi * d_k)

    def update(self, d_k: int) -> None:
        frame = self.frames[d_k]
        self.raw_hist.patch.set_data(frame["raw"], frame["raw_edges"])
        self.raw_curve.set_ydata(self._normal(d_k))
        for bars, (key, _, _) in zip(self.row_bars, DIVISORS, strict=True):
            for bar, share in zip(bars.patches, frame[f"top_hist_{key}"], strict=True):
                bar.set_height(float(share))
        self.row_text.set_text(
            f"median\nraw {frame['median_top_raw']:.2f}\n÷ √d_k {frame['median_top_scaled']:.2f}"
            f"\n÷ d_k {frame['median_top_over_dk']:.3f}"
        )
        self.shown = dict(frame)
        peak = float(frame["raw"].max())
        cut = (
            f" The histogram's peak, {peak:.2f}, is cut off at the top of the plot."
            if peak > self.top
            else ""
        )
        self.readout.value = (
            f"d_k = {d_k}. Left: {self.n_samples} dot products per d_k (entries "
            f"{DISTRIBUTION_LABELS[self.dist]}, mean 0, variance 1).{cut} Right: {ROW_COUNT} fixed "
            f"queries, each against the same {ROW_KEYS} fixed keys (the first d_k entries of "
            f"each vector); the largest softmax weight of each row, from 1/{ROW_KEYS} (an even "
            f"spread) to 1; dotted: 0.5. Rows whose largest weight is above 0.5: "
            f"{frame['above_half_raw']:.0%} raw, {frame['above_half_scaled']:.0%} divided by "
            f"√d_k, {frame['above_half_over_dk']:.0%} divided by d_k."
        )


def variance_explorer(
    d_ks: Iterable[int] | None = None,
    *,
    start: int | None = None,
    n_samples: int = 10_000,
    dist: str = "normal",
    seed: int = 2,
) -> VarianceExplorer:
    """A histogram of q·k for a d_k chosen with a slider, and the largest softmax weights of
    200 rows at that d_k, with the scores divided by 1, by √d_k and by d_k.

    ``d_ks``: the d_k values on the slider (whole numbers from 1 to 4096; default the
    powers of two 1, 2, ..., 512). ``start``: the d_k the slider starts at, one of ``d_ks``
    (default 16 if ``d_ks`` holds it, else the smallest). ``n_samples``: dot products per
    d_k (100 to 100 000).
    ``dist``: how the entries of q and k are drawn, "normal", "uniform" or "rademacher"
    (each with mean 0 and variance 1). ``seed`` fixes the samples. ``controls``: ``"d_k"``.
    ``frames[d_k]`` holds the numbers shown at each d_k, among them ``"median_top_raw"``,
    ``"median_top_scaled"`` and ``"median_top_over_dk"``, the median largest weight of the
    rows for each divisor.

    The left panel keeps fixed axes, wide enough for the largest d_k and tall enough
    for the normal curve of the smallest: each histogram is a density, so as it widens
    like √d_k its peak drops like 1/√d_k (the curve is the normal density with standard
    deviation √d_k). At small d_k the bins are a quarter of √d_k wide, so the sharp peak
    of a single product shows; where it rises above the top, the readout gives its height.
    The right panel shows what softmax makes of such scores: 200 fixed queries, each
    against the same 256 fixed keys, and a histogram (log scale, from 1/256 to 1) of each
    row's largest weight, of ``softmax(q·k_j)``, ``softmax(q·k_j / √d_k)`` and
    ``softmax(q·k_j / d_k)`` (three bars in each bin, in that order), with the median and
    the share of rows above 0.5 for each. The rows are drawn once,
    seeded, from a generator of their own, and every d_k's histograms are computed when
    the widget is built; each d_k uses the first d_k entries of the same vectors.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    checked = _check_d_ks(d_ks)
    if start is None:
        start = START_D_K if START_D_K in checked else checked[0]
    elif not is_whole_number(start) or start not in checked:
        raise ValueError(
            f"start must be one of the d_ks on the slider {list(checked)}, got {start!r}."
        )
    n_samples = whole_number(n_samples, "n_samples", "dot products per d_k", *SAMPLES_RANGE)
    if dist not in DISTRIBUTIONS:
        raise ValueError(
            f"dist must be one of {', '.join(map(repr, DISTRIBUTIONS))}, got {dist!r}."
        )
    samples = samples_by_dk(checked, n_samples, np.random.default_rng(seed), dist)
    # The rows come from a generator of their own, so the samples above stay the same.
    rows_rng = np.random.default_rng([seed, 1])
    longest = checked[-1]
    rows = (
        unit_components((ROW_COUNT, longest), rows_rng, dist),
        unit_components((ROW_KEYS, longest), rows_rng, dist),
    )
    return VarianceExplorer(samples, dist, n_samples, rows, int(start))
