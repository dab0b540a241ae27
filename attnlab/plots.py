"""The course's pictures: labelled heatmaps, weight strips, histograms, and matrix
products drawn to scale.

One look for every lesson: titled axes, labelled ticks, values written in the
cells of small matrices, and colour-blind-safe colormaps (viridis for weights,
the ColorBrewer red-blue diverging map for signed scores). Each function draws
into the ``ax`` it is given (or a new one) and returns a small object whose
``update`` method changes the data in place, which is what the widgets use.

Used throughout the lessons; first in ``notebooks/00_start_here.ipynb``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

WEIGHTS_CMAP = "viridis"
SIGNED_CMAP = "RdBu_r"
STRIP_CMAP = "Blues"
ACCENT = "#0072B2"  # Okabe-Ito blue
SECOND = "#D55E00"  # Okabe-Ito vermillion
THIRD = "#009E73"  # Okabe-Ito green

# Matrices up to this many cells get their values written in.
ANNOTATE_UP_TO = 100


def axes(ax=None, figsize=(4.5, 3.5)):
    """Return ``ax``, or a new axes on a new pyplot figure."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _text_colours(M, image) -> list[str]:
    """Black on light cells, white on dark ones, so every written value stays readable."""
    rgba = image.cmap(image.norm(M.ravel()))
    light = rgba[:, :3] @ np.array([0.299, 0.587, 0.114]) > 0.55
    return np.where(light, "black", "white").tolist()


class Heatmap:
    """A matrix drawn as coloured cells, optionally with its values written in."""

    def __init__(
        self,
        M,
        ax=None,
        *,
        row_labels=None,
        col_labels=None,
        title="",
        xlabel="key",
        ylabel="query",
        cmap=None,
        vmin=None,
        vmax=None,
        annotate=None,
        fmt="{:.2f}",
        colorbar=True,
    ):
        M = np.asarray(M, dtype=float)
        if M.ndim == 1:
            M = M[None, :]
        self.ax = axes(ax)
        signed = M.min() < 0 if M.size else False
        self.cmap = cmap or (SIGNED_CMAP if signed else WEIGHTS_CMAP)
        if vmin is None and vmax is None and signed and self.cmap == SIGNED_CMAP:
            vmax = float(np.abs(M).max()) or 1.0
            vmin = -vmax
        self.fmt = fmt
        self.image = self.ax.imshow(M, cmap=self.cmap, vmin=vmin, vmax=vmax, aspect="auto")
        n_rows, n_cols = M.shape
        self.ax.set_xticks(range(n_cols), col_labels if col_labels is not None else range(n_cols))
        self.ax.set_yticks(range(n_rows), row_labels if row_labels is not None else range(n_rows))
        self.ax.set_title(title)
        self.ax.set_xlabel(xlabel)
        self.ax.set_ylabel(ylabel)
        if n_cols > 20:
            self.ax.tick_params(axis="x", labelrotation=90)
        annotate = M.size <= ANNOTATE_UP_TO if annotate is None else annotate
        self.texts = []
        if annotate:
            for i, j in np.ndindex(M.shape):
                self.texts.append(self.ax.text(j, i, "", ha="center", va="center", fontsize=8))
        self.colorbar = (
            self.ax.figure.colorbar(self.image, ax=self.ax, shrink=0.8) if colorbar else None
        )
        self.update(M)

    def update(self, M, *, rescale=False):
        """Show new values in the same cells (same shape), without redrawing the axes."""
        M = np.asarray(M, dtype=float)
        if M.ndim == 1:
            M = M[None, :]
        self.image.set_data(M)
        if rescale:
            if self.cmap == SIGNED_CMAP:
                v = float(np.abs(M).max()) or 1.0
                self.image.set_clim(-v, v)
            else:
                self.image.set_clim(float(M.min()), float(M.max()) or 1.0)
        if self.texts:
            colours = _text_colours(M, self.image)
            for text, value, colour in zip(self.texts, M.ravel(), colours, strict=True):
                text.set_text(self.fmt.format(value))
                text.set_color(colour)
        return self


def log2_axes(ax, *, xlabel: str, ylabel: str, title: str) -> None:
    """Both axes on a base-2 log scale (doublings of n or d_k), labelled, with a legend:
    the finish of the course's "how does it grow?" figures (lessons 09 and 10)."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=8)


def heatmap(M, ax=None, **kwargs) -> Heatmap:
    """Draw a labelled heatmap of a matrix (queries down, keys across by default).

    Small matrices get their values written in each cell. Returns a
    :class:`Heatmap`; call ``.update(new_M)`` to change the values in place.
    """
    return Heatmap(M, ax, **kwargs)


def weight_strip(weights, ax=None, *, labels=None, title="softmax weights", **kwargs) -> Heatmap:
    """One row of weights as a strip of cells whose darkness is the weight (0 to 1)."""
    kwargs.setdefault("cmap", STRIP_CMAP)
    kwargs.setdefault("colorbar", False)
    heat = Heatmap(
        np.asarray(weights, float)[None, :],
        ax,
        col_labels=labels,
        title=title,
        xlabel=kwargs.pop("xlabel", "key"),
        ylabel="",
        vmin=0.0,
        vmax=1.0,
        **kwargs,
    )
    heat.ax.set_yticks([])
    return heat


class Histogram:
    """A histogram with fixed bins, drawn as one filled step outline that updates in place."""

    def __init__(
        self,
        samples,
        ax=None,
        *,
        bins=40,
        range=None,
        title="",
        xlabel="value",
        color=ACCENT,
        label=None,
        density=True,
    ):
        self.ax = axes(ax)
        samples = np.asarray(samples, dtype=float).ravel()
        if range is None:
            lo, hi = float(samples.min()), float(samples.max())
            range = (lo, hi if hi > lo else lo + 1.0)
        self.edges = np.linspace(*range, bins + 1)
        self.density = density
        # One StepPatch instead of one Rectangle per bin: a single artist to redraw.
        self.patch = self.ax.stairs(
            self.heights(samples), self.edges, fill=True, color=color, alpha=0.7, label=label
        )
        self.ax.set_title(title)
        self.ax.set_xlabel(xlabel)
        self.ax.set_ylabel("density" if density else "count")
        if label:
            self.ax.legend(loc="upper right", fontsize=8)

    def heights(self, samples):
        counts, _ = np.histogram(np.asarray(samples, float).ravel(), bins=self.edges)
        if self.density and counts.sum():
            return counts / (counts.sum() * np.diff(self.edges))
        return counts.astype(float)

    def update(self, samples):
        self.patch.set_data(self.heights(samples))
        return self


def histogram(samples, ax=None, **kwargs) -> Histogram:
    """Draw a histogram with fixed bins; ``.update(samples)`` re-counts in place."""
    return Histogram(samples, ax, **kwargs)


def bars(values, ax=None, *, labels=None, title="", ylabel="", color=ACCENT, ylim=None):
    """A labelled bar chart (one bar per key, say); returns the bar container."""
    ax = axes(ax)
    values = np.asarray(values, dtype=float)
    container = ax.bar(range(len(values)), values, color=color)
    ax.set_xticks(range(len(values)), labels if labels is not None else range(len(values)))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    return container


def products(rows, cell: float = 0.42, *, shared_scale: bool = False):
    """Matrix products drawn to scale, one per row: ``A @ B = C`` as three heatmaps whose
    cells are all the same size, so that the shapes show what a product keeps and drops.

    ``rows``: a list of dicts with keys ``A`` and ``B`` (2-D arrays), ``names`` (three
    titles), and optionally:

    - ``row_labels``: names for the rows of A, which are also the rows of C;
    - ``index_ticks``: True to number every row and column from 0;
    - ``highlight``: an ``(i, j)`` pair: row i of A, column j of B and entry (i, j) of C
      are outlined; ``highlight_row``: i alone, row i of A and of C;
    - ``fmt`` and ``fmt_out``: the number format of A's and B's cells, and of C's.

    ``cell`` is a cell's side in inches. With ``shared_scale``, every matrix with negative
    entries is drawn on one colour scale, so that equal numbers get equal colours across
    the panels; matrices without (weights) keep the 0-to-1 scale. Returns the figure.

    Lessons: ``notebooks/01_dot_product.ipynb`` (where Q, K and V come from, and the
    shapes of Q Kᵀ) and ``notebooks/05_values.ipynb`` (the weights times V).
    """
    from matplotlib.patches import Rectangle

    gap, left, top, pad, label_room = 0.55, 0.75, 0.55, 0.25, 0.45  # inches
    shapes = []
    for row in rows:
        A, B = np.asarray(row["A"], float), np.asarray(row["B"], float)
        shapes.append((A, B, A @ B))
    signed = [M for mats in shapes for M in mats if M.min() < 0]
    lim = max((float(np.abs(M).max()) for M in signed), default=1.0) or 1.0

    def room(row):  # C's row labels need space after the "=", index ticks a little
        if row.get("row_labels") is not None:
            return label_room
        return 0.2 if row.get("index_ticks") else 0.0

    widths = [
        sum(M.shape[1] for M in mats) * cell + 2 * (gap + room(row))
        for row, mats in zip(rows, shapes, strict=True)
    ]
    heights = [max(M.shape[0] for M in mats) * cell for mats in shapes]
    fig_w = left + max(widths) + pad
    fig_h = sum(heights) + len(rows) * (top + pad)
    fig = plt.figure(figsize=(fig_w, fig_h))
    y = fig_h
    for row, mats, height in zip(rows, shapes, heights, strict=True):
        y -= top + height
        x = left
        formats = (row.get("fmt", "{:.2f}"),) * 2 + (row.get("fmt_out", "{:.2f}"),)
        axes = []
        for k, (M, name) in enumerate(zip(mats, row["names"], strict=True)):
            w, h = M.shape[1] * cell, M.shape[0] * cell
            ax = fig.add_axes((x / fig_w, (y + (height - h) / 2) / fig_h, w / fig_w, h / fig_h))
            labels = row.get("row_labels") if k != 1 else None
            scale = {"vmin": -lim, "vmax": lim} if shared_scale and M.min() < 0 else {}
            heatmap(M, ax, row_labels=labels, title="", xlabel="", ylabel="",
                    colorbar=False, fmt=formats[k], **scale)  # fmt: skip
            ax.set_title(f"{name}\n({M.shape[0]}, {M.shape[1]})", fontsize=9)
            if not row.get("index_ticks"):
                ax.set_xticks([])
                if labels is None:
                    ax.set_yticks([])
            axes.append(ax)
            x += w
            if k < 2:
                # B has no row labels, only index ticks: its "@" needs the room then.
                extra = room(row) if (k == 1 or row.get("index_ticks")) else 0.0
                fig.text((x + (gap + extra) / 2) / fig_w, (y + height / 2) / fig_h, "@=" [k],
                         ha="center", va="center", fontsize=16)  # fmt: skip
                x += gap + extra
        A, B, C = mats

        def outline(ax, corner, width, height):
            box = Rectangle(corner, width, height, fill=False, edgecolor="#E69F00", linewidth=3)
            ax.add_patch(box)  # Okabe-Ito orange: visible on both colour maps

        if row.get("highlight") is not None:
            i, j = row["highlight"]
            outline(axes[0], (-0.5, i - 0.5), A.shape[1], 1)
            outline(axes[1], (j - 0.5, -0.5), 1, B.shape[0])
            outline(axes[2], (j - 0.5, i - 0.5), 1, 1)
        if row.get("highlight_row") is not None:
            i = row["highlight_row"]
            outline(axes[0], (-0.5, i - 0.5), A.shape[1], 1)
            outline(axes[2], (-0.5, i - 0.5), C.shape[1], 1)
        y -= pad
    return fig
