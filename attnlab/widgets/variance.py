"""Widget for lesson 02: how the spread of q·k grows with d_k, and how 1/√d_k undoes it.

Lesson: ``notebooks/02_variance.ipynb``. The samples come from
``attnlab.lessons.variance.samples_by_dk``, drawn once when the widget is built.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Rectangle

from .. import plots
from .._inputs import is_whole_number
from ..lessons.variance import (
    DISTRIBUTION_LABELS,
    DISTRIBUTIONS,
    largest_softmax_weights,
    samples_by_dk,
)
from ._base import CourseWidget
from ._check import whole_number

DEFAULT_D_KS = tuple(2**i for i in range(10))  # 1, 2, 4, ..., 512
LARGEST_D_K = 4096
SAMPLES_RANGE = (100, 100_000)
RAW_BINS = 80
SCALED_LIMIT = 5.0
SCALED_BINS = 50
SCALED_TOP = 1.1  # at least this tall: the normal curve (0.4) and d_k = 1's spike fit
ROW_KEYS = 256  # the readout: one query against this many keys, the largest softmax weight,
ROW_QUERIES = 200  # as the median over this many queries


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
            raise TypeError(f"d_ks must hold whole numbers (the lengths of q and k), got {d!r}.")
        if not 1 <= d <= LARGEST_D_K:
            raise ValueError(f"every value in d_ks must be between 1 and {LARGEST_D_K}, got {d}.")
    if len(set(values)) != len(values):
        raise ValueError(f"d_ks must not repeat a value, got {values}.")
    return tuple(sorted(int(d) for d in values))


def _raw_limit(largest_d_k: int) -> float:
    # 3.5 standard deviations of the widest histogram, rounded up to a multiple of 10.
    return float(max(10.0, np.ceil(3.5 * np.sqrt(largest_d_k) / 10.0) * 10.0))


class VarianceExplorer(CourseWidget):
    """Histograms of q·k (raw, and ÷ √d_k) for the d_k on the slider and the entries'
    distribution in the dropdown.

    ``samples`` maps each distribution to ``{d_k: samples}``; ``n_samples`` is the number
    of samples per d_k, for the note under the figure. ``shown``: ``"d_k"``, ``"dist"``,
    ``"raw_std"`` and ``"scaled_std"`` (measured on the samples shown), ``"raw"`` and
    ``"scaled"`` (the bar heights of each histogram, both densities, each on one y-axis
    shared by every d_k and distribution), and, when ``top_weights`` maps each
    ``(dist, d_k)`` to a pair (raw, scaled), ``"top_weight_raw"`` and ``"top_weight_scaled"``:
    the median largest softmax weight in a row of ``ROW_KEYS`` keys.
    """

    ncols = 2
    figsize = (7.6, 3.0)

    def __init__(
        self,
        samples: dict[str, dict[int, np.ndarray]],
        dist: str,
        n_samples: int,
        top_weights: dict[tuple[str, int], tuple[float, float]] | None = None,
    ) -> None:
        self.samples = samples
        self.top_weights = top_weights or {}
        self.dist, self.n_samples = dist, n_samples
        self.d_ks = sorted(samples[dist])
        self.raw_limit = _raw_limit(self.d_ks[-1])
        raw_edges = np.linspace(-self.raw_limit, self.raw_limit, RAW_BINS + 1)
        scaled_edges = np.linspace(-SCALED_LIMIT, SCALED_LIMIT, SCALED_BINS + 1)
        # Everything the slider shows is computed here, once.
        self.frames: dict[tuple[str, int], dict[str, Any]] = {}
        for name, by_dk in samples.items():
            for d, s in by_dk.items():
                raw_counts, _ = np.histogram(s, bins=raw_edges)
                scaled = s / np.sqrt(d)
                scaled_counts, _ = np.histogram(scaled, bins=scaled_edges)
                self.frames[name, d] = {
                    "d_k": d,
                    "dist": name,
                    # A density on one shared axis: the peak drops like 1/√d_k as it widens.
                    "raw": raw_counts / (s.size * np.diff(raw_edges)),
                    "scaled": scaled_counts / (s.size * np.diff(scaled_edges)),
                    "raw_std": float(np.std(s, ddof=1)),
                    "scaled_std": float(np.std(scaled, ddof=1)),
                }
        # Each distribution's axes fit all its frames: ±1 entries at d_k = 1 put all the
        # scaled samples in two bins, far above the normal curve. Switching the
        # distribution redraws the figure with its own axes (see ``refresh``).
        self.tops = {}
        for name in samples:
            frames = [f for (n, _), f in self.frames.items() if n == name]
            self.tops[name] = (
                1.1
                * max(
                    max(float(f["raw"].max()) for f in frames),
                    1 / np.sqrt(2 * np.pi * self.d_ks[0]),
                ),
                max(SCALED_TOP, 1.1 * max(float(f["scaled"].max()) for f in frames)),
            )
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        slider = widgets.SelectionSlider(
            options=self.d_ks,
            value=self.d_ks[0],
            description="d_k",
            layout=widgets.Layout(width="420px"),
        )
        dropdown = widgets.Dropdown(
            options=[(DISTRIBUTION_LABELS[d], d) for d in self.samples],
            value=self.dist,
            description="entries",
            layout=widgets.Layout(width="260px"),
        )
        return {"d_k": slider, "dist": dropdown}

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_raw, ax_scaled = axes[0]
        first, limit = self.d_ks[0], self.raw_limit
        self.raw_hist = plots.histogram(
            self.samples[self.dist][first],
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
        raw_top, scaled_top = self.tops[self.dist]
        ax_raw.set_ylim(0, raw_top)
        # A Rectangle spanning the axes' height, as axvspan makes it from matplotlib 3.9 on
        # (before, axvspan makes a Polygon, which has no set_x / set_width).
        self.band = ax_raw.add_patch(
            Rectangle(
                (-1.0, 0.0),
                2.0,
                1.0,
                transform=ax_raw.get_xaxis_transform(),
                color=plots.SECOND,
                alpha=0.18,
                linewidth=0,
            )
        )
        self.raw_text = ax_raw.text(
            0.03, 0.95, "", transform=ax_raw.transAxes, va="top", fontsize=9
        )

        self.scaled_hist = plots.histogram(
            self.samples[self.dist][first] / np.sqrt(first),
            ax_scaled,
            bins=SCALED_BINS,
            range=(-SCALED_LIMIT, SCALED_LIMIT),
            title="scaled scores q·k / √d_k",
            xlabel="q·k / √d_k",
        )
        x = np.linspace(-SCALED_LIMIT, SCALED_LIMIT, 300)
        ax_scaled.plot(
            x,
            np.exp(-0.5 * x**2) / np.sqrt(2 * np.pi),
            color=plots.SECOND,
            linewidth=1.2,
            label="normal, std 1",
        )
        ax_scaled.legend(loc="upper right", fontsize=8)
        ax_scaled.set_xlim(-SCALED_LIMIT, SCALED_LIMIT)
        ax_scaled.set_ylim(0, scaled_top)
        self.scaled_text = ax_scaled.text(
            0.03, 0.95, "", transform=ax_scaled.transAxes, va="top", fontsize=9
        )
        return [
            self.raw_hist.patch,
            self.raw_curve,
            self.band,
            self.raw_text,
            self.scaled_hist.patch,
            self.scaled_text,
        ]

    def refresh(self) -> None:
        # The axes are drawn for one distribution: another one gets a new figure.
        dist = self.controls["dist"].value
        if dist != self.dist:
            self.dist = dist
            self.rebuild()  # draws the axes for self.dist, then refreshes
            return
        super().refresh()

    def _normal(self, d_k: int) -> np.ndarray:
        # The normal density with standard deviation √d_k: its peak is 1 / √(2π d_k).
        return np.exp(-0.5 * self.raw_x**2 / d_k) / np.sqrt(2 * np.pi * d_k)

    def update(self, d_k: int, dist: str) -> None:
        frame = self.frames[dist, d_k]
        self.raw_hist.patch.set_data(frame["raw"])
        self.raw_curve.set_ydata(self._normal(d_k))
        std = frame["raw_std"]
        self.band.set_x(-std)
        self.band.set_width(2 * std)
        self.raw_text.set_text(f"d_k = {d_k}\nmeasured std {std:.2f}\n√d_k = {np.sqrt(d_k):.2f}")
        self.scaled_hist.patch.set_data(frame["scaled"])
        self.scaled_text.set_text(f"measured std {frame['scaled_std']:.2f}")
        self.shown = dict(frame)
        self.readout.value = (
            f"{self.n_samples} dot products per d_k ({dist} entries: "
            f"{DISTRIBUTION_LABELS[dist]}, mean 0, variance 1). "
            "Shaded: ± one measured standard deviation."
        )
        if (dist, d_k) in self.top_weights:
            raw, scaled = self.top_weights[dist, d_k]
            self.shown.update(top_weight_raw=raw, top_weight_scaled=scaled)
            self.readout.value += (
                f"<br>What softmax makes of it: one query against {ROW_KEYS} keys gives its "
                f"largest weight <b>{raw:.2f}</b> with raw scores and <b>{scaled:.2f}</b> with "
                f"scaled ones (median over {ROW_QUERIES} queries; an even spread gives "
                f"{1 / ROW_KEYS:.3f} to each key)."
            )


def variance_explorer(
    d_ks: Iterable[int] | None = None,
    *,
    n_samples: int = 10_000,
    dist: str = "normal",
    seed: int = 2,
) -> VarianceExplorer:
    """Two histograms of q·k for a d_k chosen with a slider: raw, and divided by √d_k.

    ``d_ks``: the d_k values on the slider (whole numbers from 1 to 4096; default the
    powers of two 1, 2, ..., 512). ``n_samples``: dot products per d_k (100 to 100 000).
    ``dist``: how the entries of q and k are drawn at first, "normal", "uniform" or
    "rademacher" (each with mean 0 and variance 1); the dropdown switches between them.
    ``seed`` fixes the samples. ``controls``: ``"d_k"`` and ``"dist"``.

    The left panel keeps fixed axes, wide enough for the largest d_k and tall enough
    for the smallest: each histogram is a density, so as it widens like √d_k its peak
    drops like 1/√d_k (the curve is the normal density with standard deviation √d_k);
    the shaded band is ± one measured standard deviation. The right panel shows the
    same samples divided by √d_k, as a density on fixed axes. The readout under the
    figure gives what softmax makes of such scores: the median largest weight in a row
    of 256 keys, raw and scaled (drawn once, from a generator of its own).

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    checked = _check_d_ks(d_ks)
    n_samples = whole_number(n_samples, "n_samples", "dot products per d_k", *SAMPLES_RANGE)
    if dist not in DISTRIBUTIONS:
        raise ValueError(
            f"dist must be one of {', '.join(map(repr, DISTRIBUTIONS))}, got {dist!r}."
        )
    # The same seed for each distribution: the one chosen gets the samples it always had.
    samples = {
        name: samples_by_dk(checked, n_samples, np.random.default_rng(seed), name)
        for name in DISTRIBUTIONS
    }
    # The readout's rows come from a generator of their own, so the samples above stay
    # the same whatever the readout draws.
    rows_rng = np.random.default_rng([seed, 1])
    top_weights = {}
    for name in DISTRIBUTIONS:
        for d in checked:
            raw, scaled = largest_softmax_weights(d, ROW_KEYS, ROW_QUERIES, rows_rng, name)
            top_weights[name, d] = (float(np.median(raw)), float(np.median(scaled)))
    return VarianceExplorer(samples, dist, n_samples, top_weights)
