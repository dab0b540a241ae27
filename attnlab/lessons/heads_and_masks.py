"""Experiments and figures for the lesson on heads, masks and patterns.

What is here: figures of multi-head attention (the split into heads, each head's
weights, the merge), of which key/value head each query head reads, and of what one
head loses against two; constructions of queries and keys that give the classic
attention patterns; padding masks and their combination with the causal mask;
dropout on the weights; and the size of a key/value cache. The figure functions only draw
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

PATTERNS = ("local", "vertical", "previous-token", "block", "global")
SHARPNESS = 4.0  # β: how much higher a preferred key scores than the others
SEGMENT = 4  # tokens per segment of the block pattern
WIDE_QUERY = 5  # the query that attends uniformly in the previous-token pattern (its broad row)
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
    - ``previous-token`` (with one broad row): each query looks one token back
      (one-hot codes, ``q_i = e_{i−1}``, and ``q_0 = e_0`` since token 0 has no
      token before it), except query ``WIDE_QUERY``, which is zero and so spreads
      its weight evenly over the whole sequence: a broad row.
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
    if name == "previous-token":
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


def plot_patterns(weights: dict, suptitle: str = "", broad_rows: dict | None = None):
    """The weight matrices of several patterns side by side, on one 0..1 colour scale.

    ``broad_rows``: panel title → a row to outline and label with its (uniform) weight,
    so that a row spread thin over all n keys, 1/n each, still shows on the 0..1 scale.
    Shapes: each value of ``weights`` is ``(n, n)``; the keys are the panel titles.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    broad_rows = broad_rows or {}
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
        if title in broad_rows:
            row = broad_rows[title]
            ax.add_patch(
                plt.Rectangle((-0.5, row - 0.5), n_k, 1, fill=False, edgecolor="white", lw=1.5)
            )
            ax.text((n_k - 1) / 2, row, f"{np.mean(W[row]):.3f} each", color="white",
                    ha="center", va="center", fontsize=7)  # fmt: skip
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# ----------------------------------------------------------------------------- heads


def plot_heads(Q, weights, merged, suptitle: str = ""):
    """One sequence through multi-head attention: the split, every head's weights, the merge.

    Left, ``Q = X W_Q`` with a line between the heads' blocks of d_head columns; then
    the weights ``softmax(Q_h K_hᵀ / √d_head)`` of each head h; right, the heads'
    outputs side by side (``merge_heads``), each head's block under its own label.

    Shapes: ``Q`` and ``merged`` ``(n, H·d_head)``, ``weights`` ``(H, n, n)``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    Q, weights, merged = (np.asarray(a, dtype=float) for a in (Q, weights, merged))
    n_heads, n, _ = weights.shape
    width = Q.shape[1]
    d_head = width // n_heads
    side = min(width / n, 1.8)  # the wide panels, in widths of one head's panel
    fig, axs = plt.subplots(
        1,
        n_heads + 2,
        figsize=(1.5 * (n_heads + 2 * side) + 0.4, 3.0),
        layout="constrained",
        gridspec_kw={"width_ratios": [side, *([1.0] * n_heads), side]},
    )
    for ax, M, title in (
        (axs[0], Q, "Q = X W_Q, split into heads"),
        (axs[-1], merged, "heads merged"),
    ):
        plots.heatmap(M, ax, title=title, xlabel="column", annotate=False, colorbar=False)
        ax.set_xticks(
            [h * d_head + (d_head - 1) / 2 for h in range(n_heads)],
            [f"head {h}" for h in range(n_heads)],
            fontsize=9,
        )
        for h in range(1, n_heads):
            ax.axvline(h * d_head - 0.5, color="k", lw=1.5)  # white vanishes in pale cells
        ax.set_ylabel("token")
    for h in range(n_heads):
        ax = axs[h + 1]
        heat = plots.heatmap(
            weights[h], ax, title=f"head {h} weights", vmin=0.0, vmax=1.0, annotate=False,
            colorbar=False,
        )  # fmt: skip
        ax.set_aspect("equal")
        if h:
            ax.set_ylabel("")
    fig.colorbar(heat.image, ax=list(axs[1:-1]), location="bottom", shrink=0.5, aspect=30,
                 label="weight (0 to 1)")  # fmt: skip
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def plot_head_groups(n_heads: int, kv_head_counts):
    """Which key/value head each query head reads, for several numbers of key/value heads.

    Query head h reads key/value head ``h // g`` with ``g = H / H_kv`` (runs of
    neighbouring query heads share one key/value head, as in Llama and PyTorch's
    ``enable_gqa``). One panel per H_kv: query heads on top, key/value heads below.

    Shapes: ``n_heads`` H, ``kv_head_counts`` a sequence of divisors of H.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    counts = list(kv_head_counts)
    fig, axs = plt.subplots(1, len(counts), figsize=(3.0 * len(counts), 2.3), layout="constrained")
    colours = plt.get_cmap("tab10")
    for ax, n_kv in zip(np.atleast_1d(axs), counts, strict=True):
        group = n_heads // n_kv
        q_x = np.arange(n_heads, dtype=float)
        kv_x = (np.arange(n_kv) + 0.5) * group - 0.5  # each K/V head under its group
        for h in range(n_heads):
            ax.plot([q_x[h], kv_x[h // group]], [1, 0], color=colours(h // group), lw=1.5)
        ax.scatter(q_x, np.ones(n_heads), s=160, color="white", edgecolor="black", zorder=3)
        ax.scatter(kv_x, np.zeros(n_kv), s=260, marker="s", zorder=3,
                   color=[colours(k) for k in range(n_kv)], edgecolor="black")  # fmt: skip
        for h in range(n_heads):
            ax.text(q_x[h], 1, str(h), ha="center", va="center", fontsize=8, zorder=4)
        for k in range(n_kv):
            ax.text(kv_x[k], 0, str(k), ha="center", va="center", fontsize=8, zorder=4,
                    color="white")  # fmt: skip
        kind = "multi-head" if n_kv == n_heads else "multi-query" if n_kv == 1 else "grouped-query"
        ax.set_title(f"{kind}: H = {n_heads}, H_kv = {n_kv}", fontsize=9)
        ax.set_xlim(-0.7, n_heads - 0.3)
        ax.set_ylim(-0.4, 1.4)
        ax.set_yticks([0, 1], ["K/V heads", "query heads"] if ax is np.atleast_1d(axs)[0] else [])
        ax.tick_params(axis="y", length=0)
        ax.set_xticks([])
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
    return fig


def plot_one_vs_two_heads(weights_one, values, one_head, two_heads, previous, first):
    """One head asked for two keys, against two heads that each take one.

    Left: the weights of the single head whose query asks for both the previous
    token and the first token: two bright cells per row, about half each. Then one
    panel per output column, for every query i: what was asked for (the number a of
    the token before it; the number b of token 0), the two heads' output (head A
    reads a with the previous-token weights, head B reads b with the first-token
    weights), and the single head's column, blended with its one set of weights,
    so it lands near an average.

    Shapes: ``weights_one`` ``(n, n)``; ``values`` ``(n, 2)`` (columns a and b);
    ``one_head`` and ``two_heads`` ``(n, 2)``; ``previous``, ``first`` ``(n,)``.
    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    n = len(values)
    one_head = np.asarray(one_head).reshape(n, -1)
    fig, (ax_w, *ax_cols) = plt.subplots(
        1, 3, figsize=(11.0, 3.4), layout="constrained",
        gridspec_kw={"width_ratios": [1.0, 1.15, 1.15]},
    )  # fmt: skip
    plots.heatmap(
        weights_one, ax_w, title="one head, asked for both keys", vmin=0, vmax=1, annotate=False
    )
    ax_w.set_aspect("equal")
    ticks = range(0, n, 3)
    ax_w.set_xticks(ticks, ticks)
    ax_w.set_yticks(ticks, ticks)
    i = np.arange(n)
    panels = (
        ("column a: a of token i − 1", previous, two_heads[:, 0], "head A", plots.ACCENT),
        ("column b: b of token 0", first, two_heads[:, 1], "head B", plots.SECOND),
    )
    for k, (ax, (title, asked, two, head, colour)) in enumerate(zip(ax_cols, panels, strict=True)):
        ax.plot(i, asked, "o", ms=11, mfc="none", color=colour, label="asked for")
        ax.plot(i, two, ".", ms=7, color=colour, label=f"two heads ({head})")
        ax.plot(i, one_head[:, k], "x--", color="black", lw=1, alpha=0.7, label="one head")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xticks(i, i, fontsize=8)
        ax.set_xlabel("query i")
        ax.set_title(title)
        ax.legend(fontsize=8)
    ax_cols[0].set_ylabel("value / output")
    ax_cols[1].sharey(ax_cols[0])
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
