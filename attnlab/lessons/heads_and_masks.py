"""Experiments and figures for the lesson on heads, masks and patterns.

What is here: constructions of queries and keys that give the classic attention
patterns; padding masks and their combination with the causal mask; dropout on
the weights; and the size of a key/value cache. The figure functions only draw
numbers the notebook computed in the cell that calls them.

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..masks import causal_mask, padding_causal_mask, padding_mask  # noqa: F401 - the notebook uses them
from ..softmax import entropy, softmax

# ----------------------------------------------------------------------------- patterns

PATTERNS = ("local", "vertical", "horizontal", "block", "global")
SHARPNESS = 4.0  # β: how much higher a preferred key scores than the others
SEGMENT = 4  # tokens per segment of the block pattern
WIDE_QUERY = 5  # the query that attends uniformly in the horizontal pattern
GLOBAL_TOKEN = 0  # the token that sees and is seen by every token in the global pattern
N_FREQUENCIES = 4


def position_features(n: int, n_frequencies: int = N_FREQUENCIES) -> np.ndarray:
    """Sinusoidal position codes of unit length: ``p_i = (cos ω_f i, sin ω_f i)_f / √F``.

    With frequencies ``ω_f = π / 2^f`` (f = 1 … F), the dot product
    ``p_i · p_j = (1/F) Σ_f cos(ω_f (i − j))`` depends only on the distance
    ``i − j`` and is largest (1) at distance 0.

    Shapes: returns ``(n, 2F)``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    pos = np.arange(n)[:, None]
    freqs = np.pi / 2.0 ** np.arange(1, n_frequencies + 1)
    return np.hstack([np.cos(pos * freqs), np.sin(pos * freqs)]) / np.sqrt(n_frequencies)


def pattern_qk(name: str, n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys whose weights ``softmax(β Q Kᵀ)`` show one classic pattern.

    - ``local``: Q = K = sinusoidal position codes; the score falls with |i − j|.
    - ``vertical``: every query is the same direction u, and only key 0 has it
      (an "attention sink" on the first token): a column.
    - ``horizontal``: each query looks one token back (one-hot codes, query i equal
      to key i − 1), except query ``WIDE_QUERY``, which is zero and so spreads its
      weight evenly over the whole sequence: a row.
    - ``block``: one-hot of the segment (``SEGMENT`` tokens each): uniform
      within a segment, almost nothing outside.
    - ``global`` (as in Longformer and BigBird): the local pattern, plus one global
      token, ``GLOBAL_TOKEN``, that attends to every token (its query is zero) and that
      every token attends to (its key is a direction that every query shares, so every
      query scores it as high as its own position): a row plus a column on top of the band.

    Shapes: returns Q ``(n, d)`` and K ``(n, d)``; n ≥ 6.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    pos = np.arange(n)
    if name == "local":
        P = position_features(n)
        return P, P
    if name == "vertical":
        return np.ones((n, 1)), (pos == 0).astype(float)[:, None]
    if name == "horizontal":
        onehot = np.eye(n)
        previous = onehot[np.maximum(pos - 1, 0)]  # query i = key i - 1
        return previous * (pos != WIDE_QUERY)[:, None], onehot
    if name == "block":
        segment = np.eye(-(-n // SEGMENT))[pos // SEGMENT]
        return segment, segment
    if name == "global":
        P = position_features(n)
        is_global = (pos == GLOBAL_TOKEN).astype(float)[:, None]
        Q = np.hstack([P, np.ones((n, 1))]) * (1 - is_global)  # the global query is zero
        # The global key is the shared direction alone: every query scores it as high as
        # its own position, wherever it is.
        K = np.hstack([P * (1 - is_global), is_global])
        return Q, K
    raise ValueError(f"Unknown pattern {name!r}; choose one of {', '.join(PATTERNS)}.")


def pattern_weights(Q, K, beta: float = SHARPNESS) -> np.ndarray:
    """The weights ``softmax(β Q Kᵀ)``, one row per query.

    β stands for everything that multiplies the raw dot products: the 1/√d_k,
    the size of learned projections, and 1/temperature.

    Shapes: Q ``(n_q, d)``, K ``(n_k, d)`` → ``(n_q, n_k)``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    return softmax(beta * (np.asarray(Q, float) @ np.asarray(K, float).T))


def row_entropy(W) -> np.ndarray:
    """Entropy of each row in nats, ``-Σ_j w_j log w_j`` (0 log 0 = 0): 0 one-hot, log n uniform.

    Shapes: ``(..., n)`` → ``(...)``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    return entropy(np.asarray(W, dtype=float))


def plot_patterns(weights: dict, suptitle: str = ""):
    """The weight matrices of several patterns side by side, on one 0..1 colour scale.

    Shapes: each value of ``weights`` is ``(n, n)``; the keys are the panel titles.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    fig, axs = plt.subplots(
        1, len(weights), figsize=(2.6 * len(weights) + 0.6, 3.2), layout="constrained"
    )
    for k, (ax, (title, W)) in enumerate(zip(np.atleast_1d(axs), weights.items(), strict=True)):
        n_q, n_k = np.shape(W)
        heat = plots.heatmap(
            W, ax, title=title, vmin=0.0, vmax=1.0, annotate=False, colorbar=k == len(weights) - 1
        )
        ticks = range(0, max(n_q, n_k), 3)
        ax.set_xticks([t for t in ticks if t < n_k], [t for t in ticks if t < n_k])
        ax.set_yticks([t for t in ticks if t < n_q], [t for t in ticks if t < n_q])
        ax.set_aspect("equal")
        if k:
            ax.set_ylabel("")
        if heat.colorbar is not None:
            heat.colorbar.set_label("weight")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# ------------------------------------------------------------------------------- masks


def plot_masks(panels: dict, weights=None, weights_title: str = "weights"):
    """Bool masks (True = may attend) as 0/1 heatmaps, and optionally the weights they give.

    Shapes: each mask in ``panels`` and ``weights`` is ``(n_q, n_k)``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    count = len(panels) + (weights is not None)
    fig, axs = plt.subplots(1, count, figsize=(2.9 * count + 0.5, 3.1), layout="constrained")
    axs = np.atleast_1d(axs)
    for k, (ax, (title, mask)) in enumerate(zip(axs, panels.items(), strict=False)):
        mask = np.asarray(mask, dtype=bool)
        heat = plots.heatmap(
            mask.astype(float),
            ax,
            title=title,
            cmap="Blues",
            vmin=0,
            vmax=1.6,
            fmt="{:.0f}",
            colorbar=False,
        )
        for text, keep in zip(heat.texts, mask.ravel(), strict=True):
            text.set_color("white" if keep else "black")
        if k:
            ax.set_ylabel("")
    if weights is not None:
        plots.heatmap(weights, axs[-1], title=weights_title, vmin=0, vmax=1, fmt="{:.2f}")
        axs[-1].set_ylabel("")
        for text in axs[-1].texts:
            text.set_fontsize(6)
    return fig


# ----------------------------------------------------------------------------- dropout


def dropout(weights, p: float, rng: np.random.Generator) -> np.ndarray:
    """Attention dropout at training time: zero each weight with probability p, scale the rest.

    Formula: ``w_j · b_j / (1 − p)`` with ``b_j ~ Bernoulli(1 − p)``; since
    ``E[b_j] = 1 − p`` the expected value of every weight is unchanged. At
    evaluation time dropout is the identity.

    Shapes: any; the result has the shape of ``weights``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    if not 0 <= p < 1:
        raise ValueError(f"p must be in [0, 1), got {p}.")
    weights = np.asarray(weights, dtype=float)
    keep = rng.random(weights.shape) >= p
    return np.where(keep, weights / (1 - p), 0.0)


def plot_dropout(rows: dict):
    """Rows of weights as strips of cells (0 white … 1 dark), one strip per entry.

    Shapes: each value is a 1-D row of the same length n; values above 1 (dropout
    rescales the survivors) are written in the cell and drawn as fully dark.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    fig, axs = plt.subplots(
        len(rows), 1, figsize=(7.5, 0.95 * len(rows) + 0.4), layout="constrained"
    )
    for ax, (title, row) in zip(np.atleast_1d(axs), rows.items(), strict=True):
        plots.weight_strip(row, ax, title=title, xlabel="", fmt="{:.2f}")
        ax.title.set_fontsize(9)
        for text in ax.texts:
            text.set_fontsize(7)
    np.atleast_1d(axs)[-1].set_xlabel("key")
    return fig


# --------------------------------------------------------------------------- KV cache


def kv_cache_bytes(
    n_layers: int, n_tokens: int, n_kv_heads: int, d_head: int, bytes_per_number: int
) -> int:
    """Bytes of a key/value cache: ``2 · layers · tokens · H_kv · d_head · bytes per number``.

    The 2 counts keys and values. Query heads don't appear: with multi-query
    (H_kv = 1) or grouped-query attention, several query heads read one cached
    key/value head. The cache is per sequence; a batch multiplies it again.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    return 2 * n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number
