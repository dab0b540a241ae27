"""Lesson 06's widgets: a mask builder for a padded batch, and a gallery of attention patterns.

``mask_builder``: a batch of three sequences of chosen lengths, padded to n tokens
at the end or at the start; the mask of each sequence (padding AND causal, or
either alone, or neither) and the weights ``softmax(Q Kᵀ/√d_k)`` that one head gives the
chosen sequence under its mask.

``pattern_gallery``: weights ``W = softmax(β Q Kᵀ / τ)`` with β = 4 and the
temperature τ from the slider; next to them, the entropy of each row,
``-Σ_j W_ij log W_ij``, from 0 (one key) to log n (uniform). The constructions of
Q and K are those of ``attnlab.lessons.heads_and_masks.pattern_qk``.

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Rectangle

from .. import plots
from ..attention import attention
from ..lessons.heads_and_masks import GLOBAL_TOKEN, PATTERNS, SHARPNESS, WIDE_QUERY, pattern_qk
from ..masks import causal_mask
from ..softmax import entropy, softmax
from ._base import CourseWidget, temperature_slider
from ._check import token_matrix, whole_number

MIN_TOKENS, MAX_TOKENS = 6, 24
DEFAULT_TOKENS = 12
MAX_DIM = 64
TEMPERATURES = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0)
YOURS = "yours"

DESCRIPTIONS = {
    "local": "Q = K = sinusoidal position codes: their dot product depends only on the "
    "distance i − j and is largest at 0, so each query looks at its neighbours.",
    "vertical": "Every query is the same direction u, and only key 0 has it: every row "
    "puts its weight on the first token (an attention sink).",
    "previous-token": f"Each query looks one token back (query i is key i − 1's one-hot "
    f"code; query 0, with no token before it, is key 0's), except query {WIDE_QUERY}, which "
    f"is the zero vector: all its scores are 0, so its row spreads evenly over the sequence.",
    "block": "One-hot of the segment (4 tokens each): a query scores its own segment's "
    "keys high and all of them equally.",
    "global": f"The local pattern plus one global token, {GLOBAL_TOKEN}: its query is zero, so "
    f"it attends to every token (a row), and every query scores its key as high as its own "
    f"position (a column), as in Longformer and BigBird.",
    YOURS: "Your Q and K.",
}


class PatternGallery(CourseWidget):
    """The weights of the chosen pattern at the chosen temperature, and each row's entropy.

    ``scores``: pattern name → its scores β Q Kᵀ, all (n, n). ``shown``:
    ``"weights"`` (n, n) and ``"entropy"`` (n,) of the pattern shown.
    """

    ncols = 2
    figsize = (7.2, 3.3)
    subplot_kw = {"gridspec_kw": {"width_ratios": [1.25, 1.0]}}

    def __init__(self, scores: dict[str, np.ndarray]) -> None:
        self.scores = scores
        self.n = next(iter(scores.values())).shape[0]
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        names = list(self.scores)
        picker = widgets.ToggleButtons(
            options=names, value=names[0], description="pattern", style={"button_width": "104px"}
        )
        slider = temperature_slider([*TEMPERATURES, 1.0])
        return {"pattern": picker, "temperature": slider}

    def arrange(self) -> list[Any]:
        return [*self.controls.values(), self.view.image, self.readout]

    def draw(self, axes: np.ndarray) -> list[Any]:
        ax_w, ax_h = axes[0]
        n = self.n
        log_n = float(np.log(n))
        self.heat = plots.heatmap(
            np.zeros((n, n)),
            ax_w,
            title="weights softmax(β Q Kᵀ / τ)",
            vmin=0.0,
            vmax=1.0,
            annotate=False,
        )
        ticks = range(0, n, 3 if n <= 15 else 4)
        ax_w.set_xticks(ticks, ticks)
        ax_w.set_yticks(ticks, ticks)
        ax_w.set_title(ax_w.get_title(), fontsize=10, pad=14)
        self.bars = ax_h.barh(np.arange(n), np.zeros(n), color=plots.ACCENT, height=0.7)
        ax_h.set_ylim(n - 0.5, -0.5)  # query 0 at the top, as in the heatmap
        ax_h.set_xlim(0, log_n * 1.45)
        ax_h.set_yticks(ticks, ticks)
        ax_h.axvline(log_n, color="grey", lw=1, ls=":")
        ax_h.text(log_n, n - 0.6, " log n\n uniform", color="grey", fontsize=7, va="bottom")
        # The changing numbers sit in the gap the title's padding leaves above the axes.
        ax_h.set_title("entropy of each row", fontsize=10, pad=14)
        ax_h.set_xlabel("nats")
        ax_h.set_ylabel("query")
        self.status = ax_h.text(
            0.5,
            1.015,
            "",
            transform=ax_h.transAxes,
            ha="center",
            va="bottom",
            fontsize=8,
            color=plots.ACCENT,
        )
        return [self.heat.image, self.bars, self.status]

    def update(self, pattern: str, temperature: float) -> None:
        weights = softmax(self.scores[pattern] / temperature)
        row_entropy = entropy(weights)
        self.heat.update(weights)
        for bar, width in zip(self.bars.patches, row_entropy, strict=True):
            bar.set_width(width)
        self.status.set_text(
            f"mean {row_entropy.mean():.2f} nats,  "
            f"mean largest weight {weights.max(axis=1).mean():.2f}"
        )
        self.readout.value = f"<b>{html.escape(pattern)}</b>: {html.escape(DESCRIPTIONS[pattern])}"
        self.shown = {"weights": weights, "entropy": row_entropy}


def _matrix(x: Any, name: str) -> np.ndarray:
    return token_matrix(x, name, (MIN_TOKENS, MAX_TOKENS), MAX_DIM, "the gallery")


def pattern_gallery(n: int | None = None, Q: Any = None, K: Any = None) -> PatternGallery:
    """The weights of a chosen pattern at a chosen temperature, with each row's entropy.

    ``n``: optional number of tokens for the built-in patterns, 6 to 24 (default 12).
    ``Q``, ``K``: optional, your own queries and keys, both ``(n, d)`` with 6 to 24
    rows and at most 64 columns; they appear as the pattern "yours", with weights
    ``softmax(4 Q Kᵀ / τ)`` like the others.
    The colour scale stays at 0..1 and the entropy axis at 0..log n, so what changes
    is the pattern, never the scale. ``controls``: ``"pattern"``, ``"temperature"``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    if (Q is None) != (K is None):
        missing = "K" if K is None else "Q"
        raise ValueError(f"Pass both Q and K for your own pattern; {missing} is missing.")
    yours = None
    if Q is not None:
        Q, K = _matrix(Q, "Q"), _matrix(K, "K")
        if Q.shape != K.shape:
            raise ValueError(
                f"Q and K must have the same shape (n tokens, d features) for a "
                f"square pattern; Q has {Q.shape}, K has {K.shape}."
            )
        if n is not None and n != Q.shape[0]:
            raise ValueError(
                f"n={n} disagrees with your Q and K, which have {Q.shape[0]} rows; leave n out."
            )
        n, yours = Q.shape[0], SHARPNESS * (Q @ K.T)
    elif n is None:
        n = DEFAULT_TOKENS
    else:
        n = whole_number(n, "n", "a number of tokens", MIN_TOKENS, MAX_TOKENS)
    scores = {}
    for name in PATTERNS:
        Qp, Kp = pattern_qk(name, n)
        scores[name] = SHARPNESS * (Qp @ Kp.T)
    if yours is not None:
        scores[YOURS] = yours
    return PatternGallery(scores)


# ------------------------------------------------------------------------ mask builder

MASK_SEQUENCES = 3
MASK_MIN_TOKENS, MASK_MAX_TOKENS = 4, 12
MASK_DEFAULT_TOKENS = 8
MASK_D_K = 4
PAD_END, PAD_START = "at the end", "at the start"
# The mask panels' four kinds of cell, as values 0..3: blocked or allowed (+1), and a
# padding position's row or column (+2), shaded grey so that it shows even when allowed.
MASK_COLOURS = ListedColormap(["#f7fbff", "#2b7bba", "#d9d9d9", "#8ea3b5"])


def _positions(rows: np.ndarray) -> str:
    return ", ".join(str(int(r)) for r in rows) if rows.size else "none"


class MaskBuilder(CourseWidget):
    """The masks of a padded batch of three sequences, and one head's weights under them.

    ``tokens``: (3, n, d_k) the real tokens' vectors (token t of a sequence keeps its
    vector wherever the padding puts it); ``pad``: (d_k,) the padding token's vector;
    ``W_QK``: (2, d_k, d_k) the head's query and key projections.
    ``shown``: ``"mask"`` (3, n, n) bool, ``"real"`` (3, n) bool,
    ``"weights"`` (n, n) of the chosen sequence, ``"rows_padding_changes"`` (the rows
    of its mask that differ from the mask without padding), ``"padding_weight"``
    (the largest weight on a padding key, in any row), ``"padding_weight_real"`` and
    ``"padding_weight_padding"`` (the same, in the real queries' rows only and in the
    padding queries' rows only), ``"empty_rows"`` (rows with no allowed key, whose
    weights are all 0) and ``"real_vs_unpadded"`` (the largest difference between the
    real queries' weights on the real keys and the weights of the same real tokens run
    alone, without padding, under the same causal setting).
    """

    ncols = MASK_SEQUENCES + 1
    figsize = (10.4, 3.0)

    def __init__(
        self, tokens: np.ndarray, pad: np.ndarray, W_QK: np.ndarray, lengths: tuple[int, ...]
    ) -> None:
        self.tokens, self.pad, self.W_QK, self.start_lengths = tokens, pad, W_QK, lengths
        self.n = tokens.shape[1]
        super().__init__()

    def make_controls(self) -> dict[str, Any]:
        controls: dict[str, Any] = {}
        for b, length in enumerate(self.start_lengths):
            controls[f"length {b}"] = widgets.IntSlider(
                value=length,
                min=1,
                max=self.n,
                description=f"length {b}",
                layout=widgets.Layout(width="230px"),
            )
        controls["padding"] = widgets.ToggleButtons(
            options=[PAD_END, PAD_START],
            value=PAD_END,
            description="padding",
            style={"button_width": "88px"},
        )
        controls["mask padding"] = widgets.Checkbox(value=True, description="mask padding")
        controls["causal"] = widgets.Checkbox(value=True, description="causal mask")
        controls["sequence"] = widgets.ToggleButtons(
            options=list(range(MASK_SEQUENCES)),
            value=1,
            description="weights of",
            style={"button_width": "40px"},
        )
        return controls

    def arrange(self) -> list[Any]:
        lengths = [c for name, c in self.controls.items() if name.startswith("length")]
        rest = [self.controls[name] for name in ("padding", "mask padding", "causal", "sequence")]
        return [
            widgets.HBox(lengths),
            rest[0],
            widgets.HBox(rest[1:3]),
            rest[3],
            self.view.image,
            self.readout,
        ]

    def draw(self, axes: np.ndarray) -> list[Any]:
        n = self.n
        blank = np.zeros((n, n))
        ticks = range(0, n, 2 if n <= 8 else 3)
        self.mask_maps, self.frames = [], []
        for b, ax in enumerate(axes[0][:MASK_SEQUENCES]):
            heat = plots.heatmap(
                blank, ax, cmap=MASK_COLOURS, vmin=-0.5, vmax=3.5, annotate=False, colorbar=False
            )
            ax.set_xticks(ticks, ticks)
            ax.set_yticks(ticks, ticks)
            ax.set_aspect("equal")
            if b:
                ax.set_ylabel("")
            # Fixed titles, drawn once; the chosen sequence gets a frame. Text is the
            # slowest thing to draw, and the sliders already say each length.
            ax.set_title(f"sequence {b}", fontsize=9)
            self.mask_maps.append(heat)
            self.frames.append(
                ax.add_patch(
                    Rectangle((0, 0), 1, 1, transform=ax.transAxes, fill=False,
                              edgecolor="black", linewidth=4, clip_on=False)
                )
            )  # fmt: skip
        ax_w = axes[0][-1]
        # Colour only: 64 printed weights would be redrawn on every change, several times
        # the cost of the rest of the figure; the readout gives the numbers that matter.
        self.weights_map = plots.heatmap(
            blank, ax_w, vmin=0.0, vmax=1.0, annotate=False, colorbar=False
        )
        ax_w.set_xticks(ticks, ticks)
        ax_w.set_yticks(ticks, ticks)
        ax_w.set_aspect("equal")
        ax_w.set_ylabel("")
        ax_w.set_title("weights, framed sequence", fontsize=9)
        return [
            *(h.image for h in self.mask_maps),
            *self.frames,
            self.weights_map.image,
        ]

    def _real(self, lengths: list[int], padding: str) -> np.ndarray:
        j = np.arange(self.n)[None, :]
        L = np.asarray(lengths)[:, None]
        return j < L if padding != PAD_START else j >= self.n - L

    def update(self, padding: str, causal: bool, sequence: int, **lengths_and_mask: int) -> None:
        lengths = dict(lengths_and_mask)
        mask_padding = bool(lengths.pop("mask padding"))
        n = self.n
        L = [int(lengths[f"length {b}"]) for b in range(MASK_SEQUENCES)]
        real = self._real(L, padding)  # where the real tokens sit
        allowed = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
        keys = real if mask_padding else np.ones_like(real)
        mask = keys[:, None, :] & allowed  # (3, n, n)
        padding_cells = ~real[:, :, None] | ~real[:, None, :]  # a padding query or key
        for b in range(MASK_SEQUENCES):
            self.mask_maps[b].update(mask[b] + 2.0 * padding_cells[b])
            self.frames[b].set_visible(b == sequence)
        # Token t of the sequence keeps its vectors wherever the padding puts it.
        X = np.broadcast_to(self.pad, (n, self.pad.size)).copy()
        X[real[sequence]] = self.tokens[sequence, : L[sequence]]
        Q, K = X @ self.W_QK[0], X @ self.W_QK[1]
        _, weights = attention(Q, K, X, mask=mask[sequence], return_weights=True)
        self.weights_map.update(weights)
        changed = np.flatnonzero((mask[sequence] != allowed).any(axis=1))
        padded = ~real[sequence]
        on_padding = weights[:, padded]
        padding_weight = float(on_padding.max()) if padded.any() else 0.0
        in_real = float(on_padding[~padded].max()) if padded.any() else 0.0
        in_padding = float(on_padding[padded].max()) if padded.any() else 0.0
        empty = np.flatnonzero(~mask[sequence].any(axis=1))
        # The same real tokens alone, with no padding at all: what the real rows should be.
        alone = X[real[sequence]]
        _, unpadded = attention(
            alone @ self.W_QK[0],
            alone @ self.W_QK[1],
            alone,
            mask=causal_mask(L[sequence]) if causal else None,
            return_weights=True,
        )
        kept = weights[np.ix_(real[sequence], real[sequence])]
        real_vs_unpadded = float(np.abs(kept - unpadded).max())
        self.shown = {
            "mask": mask,
            "real": real,
            "weights": weights,
            "rows_padding_changes": changed,
            "padding_weight": padding_weight,
            "padding_weight_real": in_real,
            "padding_weight_padding": in_padding,
            "empty_rows": empty,
            "real_vs_unpadded": real_vs_unpadded,
        }
        where = _positions(np.flatnonzero(real[sequence]))
        lines = [
            f"<b>sequence {sequence}</b>: real tokens at positions {where}. "
            f"Rows of its mask that padding changes: {_positions(changed)}."
        ]
        if not mask_padding and padded.any():
            lines.append(
                f"Padding is not masked: the real queries' rows put up to {in_real:.2f} "
                f"weight on a padding key; the padding queries' rows (thrown away) up to "
                f"{in_padding:.2f}."
            )
        if empty.size:
            lines.append(
                f"Rows with no allowed key: {_positions(empty)} (their weights are all 0)."
            )
        lines.append(
            f"Real queries' weights on real keys, against the same tokens without padding: "
            f"largest difference {real_vs_unpadded:.2f}."
        )
        self.readout.value = " ".join(lines)


def mask_builder(n: int | None = None) -> MaskBuilder:
    """A padded batch of three sequences: their masks, and one head's weights under them.

    Move the three ``length`` sliders, pad ``at the end`` or ``at the start``, switch
    the ``mask padding`` and the ``causal`` masks on and off, and pick the
    ``sequence`` whose weights ``softmax(Q Kᵀ/√d_k)`` are shown (one head, d_k = 4,
    fixed random projections; its mask panel is framed). Each mask panel is blue where
    query i (row) may attend to key j (column); the padding positions' rows and columns
    are shaded grey, pale where blocked and greyish blue where allowed, whether or not
    the padding is masked.
    ``n``: optional padded length, 4 to 12 (default 8).
    ``controls``: ``"length 0"``, ``"length 1"``, ``"length 2"``, ``"padding"``,
    ``"mask padding"``, ``"causal"``, ``"sequence"``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    n = MASK_DEFAULT_TOKENS if n is None else whole_number(
        n, "n", "a padded length", MASK_MIN_TOKENS, MASK_MAX_TOKENS
    )  # fmt: skip
    rng = np.random.default_rng(606)
    tokens = rng.normal(size=(MASK_SEQUENCES, n, MASK_D_K))
    W_QK = rng.normal(size=(2, MASK_D_K, MASK_D_K))
    pad = np.full(MASK_D_K, 0.5)
    lengths = (n, max(1, n - n // 3), max(1, n // 3))
    return MaskBuilder(tokens, pad, W_QK, lengths)
