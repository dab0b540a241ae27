"""Helpers for lesson 01: a toy sentence's Q, K, V, scores between two sequences, a new
token's scores against cached keys, and a picture of vectors as arrows.

Lesson: ``notebooks/01_dot_product.ipynb``.
"""

from __future__ import annotations

import numpy as np

from .. import plots
from .._inputs import as_real_array
from ..scores import scores

TOY_TOKENS = ("I", "like", "tea")


def toy_projections(seed: int = 7, d: int = 4, d_k: int = 3, d_v: int = 2):
    """Token embeddings X and three projection matrices, all rounded to one decimal.

    Returns ``(tokens, X, W_Q, W_K, W_V)`` with X ``(3, d)`` (one row per token),
    W_Q and W_K ``(d, d_k)`` and W_V ``(d, d_v)``, so that ``Q = X @ W_Q`` and
    ``K = X @ W_K`` are ``(3, d_k)`` and ``V = X @ W_V`` is ``(3, d_v)``. The three
    lengths differ from each other by default.
    In a trained model the W are learned; here they are seeded random numbers,
    rounded so that a product can be redone by hand.
    """
    rng = np.random.default_rng(seed)
    # + 0.0 turns a rounded -0.0 into 0.0, which prints as "0." rather than "-0."
    X = np.round(rng.normal(size=(len(TOY_TOKENS), d)), 1) + 0.0
    W_Q, W_K = (np.round(rng.normal(size=(d, d_k)), 1) + 0.0 for _ in range(2))
    W_V = np.round(rng.normal(size=(d, d_v)), 1) + 0.0
    return TOY_TOKENS, X, W_Q, W_K, W_V


def cross_scores(X_q, X_kv, W_Q, W_K) -> np.ndarray:
    """Raw scores of the tokens of one sequence against the tokens of another.

    Formula: ``S = (X_q W_Q)(X_kv W_K)ᵀ``: queries from ``X_q``, keys from ``X_kv``, so
    ``S[i, j]`` is token i of ``X_q`` asking and token j of ``X_kv`` being found. With
    ``X_q = X_kv`` it is self-attention's ``Q Kᵀ``.

    Shapes: ``X_q`` (n_q, d), ``X_kv`` (n_k, d), ``W_Q`` and ``W_K`` (d, d_k) → (n_q, n_k).
    Lesson: ``notebooks/01_dot_product.ipynb`` (cross-attention, and the newest token's row).
    """
    arrays = {"X_q": X_q, "X_kv": X_kv, "W_Q": W_Q, "W_K": W_K}
    X_q, X_kv, W_Q, W_K = (as_real_array(a, name) for name, a in arrays.items())
    for name, a in zip(arrays, (X_q, X_kv, W_Q, W_K), strict=True):
        if a.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array, got shape {a.shape}.")
    d = X_q.shape[1]
    if X_kv.shape[1] != d:
        raise ValueError(
            f"X_q and X_kv must have embeddings of the same length d: X_q is {X_q.shape} "
            f"and X_kv is {X_kv.shape}."
        )
    for name, W in (("W_Q", W_Q), ("W_K", W_K)):
        if W.shape[0] != d:
            raise ValueError(
                f"{name} must have d = {d} rows, one per embedding entry; got {W.shape}."
            )
    if W_Q.shape != W_K.shape:
        raise ValueError(
            f"W_Q and W_K must have the same shape (d, d_k), so that queries and keys have the "
            f"same length: got {W_Q.shape} and {W_K.shape}."
        )
    return scores(X_q @ W_Q, X_kv @ W_K)


def new_token_scores(x_new, K_cache, W_Q, W_K) -> np.ndarray:
    """The scores of a newly arrived token against every key so far: one row of a KV cache.

    Formula: ``q = x_new W_Q``, ``K = [K_cache; x_new W_K]`` (its own key last), scores
    ``K q``. Equals the last row of ``Q Kᵀ`` for the whole sequence, without recomputing
    the earlier keys.

    Shapes: ``x_new`` (d,), ``K_cache`` (n, d_k), ``W_Q`` and ``W_K`` (d, d_k) → (n + 1,).
    Lesson: ``notebooks/01_dot_product.ipynb`` (the course's answer to its exercise).
    """
    x_new, K_cache = as_real_array(x_new, "x_new"), as_real_array(K_cache, "K_cache")
    if x_new.ndim != 1 or K_cache.ndim != 2:
        raise ValueError(
            f"x_new must be one embedding (d,) and K_cache a stack of keys (n, d_k); got "
            f"{x_new.shape} and {K_cache.shape}."
        )
    S = cross_scores(x_new[None, :], x_new[None, :], W_Q, W_K)  # checks W_Q and W_K
    k_new = x_new @ np.asarray(W_K, dtype=float)
    if K_cache.shape[1] != k_new.shape[0]:
        raise ValueError(
            f"The cached keys must have d_k = {k_new.shape[0]} entries, like W_K's columns; "
            f"K_cache is {K_cache.shape}."
        )
    q = x_new @ np.asarray(W_Q, dtype=float)
    return np.concatenate([K_cache @ q, S[0]])


def projections(
    X, weights, names=("Q", "K", "V"), row_labels=None, highlight_row=None, cell: float = 0.42
):
    """Draw ``X @ W`` for several W at once, to scale, with X drawn only once.

    Formula: each product ``X W`` (one per W) sits right of X and below its W, as in a
    product written out by hand: row i of a product lines up with row i of X (it depends on
    that row alone), and its columns line up with W's columns.

    Shapes: ``X`` (n, d); ``weights``: a list of W, each (d, d_out); ``names``: one name per W
    ("Q" gives the titles ``W_Q`` and ``Q = X W_Q``). ``row_labels``: n names for X's rows;
    ``highlight_row``: a row outlined in X and in every product. Every matrix with negative
    entries is drawn on one colour scale; ``cell`` is a cell's side in inches. Returns the figure.
    Lesson: ``notebooks/01_dot_product.ipynb`` (where the queries, keys and values come from).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    X = np.asarray(X, float)
    weights = [np.asarray(W, float) for W in weights]
    if X.ndim != 2 or any(W.ndim != 2 or W.shape[0] != X.shape[1] for W in weights):
        raise ValueError(
            f"X must be (n, d) and every W (d, d_out) with d = X.shape[1]; got X {X.shape} "
            f"and W {[W.shape for W in weights]}."
        )
    if len(names) != len(weights):
        raise ValueError(f"Give one name per W: {len(weights)} W and {len(names)} names.")
    products = [X @ W for W in weights]
    signed = [M for M in (X, *weights, *products) if M.min() < 0]
    lim = max((float(np.abs(M).max()) for M in signed), default=1.0) or 1.0

    n, d = X.shape
    left, gap, first_gap, top, middle, bottom, pad = 0.75, 0.45, 0.6, 0.5, 0.55, 0.15, 0.25
    widths = [W.shape[1] * cell for W in weights]
    fig_w = left + d * cell + first_gap + sum(widths) + gap * (len(weights) - 1) + pad
    fig_h = top + d * cell + middle + n * cell + bottom
    fig = plt.figure(figsize=(fig_w, fig_h))

    def panel(M, x, y, title, fmt, labels=None):
        # x, y: the panel's lower left corner in inches
        ax = fig.add_axes(
            (x / fig_w, y / fig_h, M.shape[1] * cell / fig_w, M.shape[0] * cell / fig_h)
        )
        scale = {"vmin": -lim, "vmax": lim} if M.min() < 0 else {}
        plots.heatmap(M, ax, row_labels=labels, title="", xlabel="", ylabel="",
                      colorbar=False, fmt=fmt, **scale)  # fmt: skip
        ax.set_title(f"{title}\n({M.shape[0]}, {M.shape[1]})", fontsize=9)
        ax.set_xticks([])
        if labels is None:
            ax.set_yticks([])
        return ax

    def outline(ax, width):
        if highlight_row is not None:
            corner = (-0.5, highlight_row - 0.5)
            ax.add_patch(Rectangle(corner, width, 1, fill=False, edgecolor="#E69F00", linewidth=3))

    y_low = bottom
    y_high = bottom + n * cell + middle
    ax_x = panel(X, left, y_low, "X", "{:.1f}", labels=row_labels)
    outline(ax_x, d)
    x = left + d * cell + first_gap
    for W, C, name, w in zip(weights, products, names, widths, strict=True):
        panel(W, x, y_high, f"W_{name}", "{:.1f}")
        outline(panel(C, x, y_low, f"{name} = X W_{name}", "{:.2f}"), C.shape[1])
        x += w + gap
    return fig


def arrows(q, keys, labels, ax=None, title="one query, three keys"):
    """Draw a 2-D query and some 2-D keys as arrows from the origin, q·k in each key's label.

    ``q``: shape (2,); ``keys``: shape (n, 2); ``labels``: n names. Returns the axes.
    """
    q, keys = np.asarray(q, float), np.asarray(keys, float)
    ax = plots.axes(ax, figsize=(4.2, 4.0))
    colours = (plots.SECOND, plots.THIRD, "#CC79A7", "0.3")
    reach = 1.2 * max(np.abs(q).max(), np.abs(keys).max())
    ax.quiver(
        0,
        0,
        q[0],
        q[1],
        angles="xy",
        scale_units="xy",
        scale=1,
        color=plots.ACCENT,
        width=0.02,
        label="q",
    )
    for key, label, colour in zip(keys, labels, colours, strict=False):
        ax.quiver(
            0,
            0,
            key[0],
            key[1],
            angles="xy",
            scale_units="xy",
            scale=1,
            color=colour,
            width=0.012,
            label=f"{label}:  q·k = {q @ key:.2f}",
        )
    ax.set_xlim(-reach, reach)
    ax.set_ylim(-reach, reach)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.85", linewidth=0.8, zorder=0)
    ax.axvline(0, color="0.85", linewidth=0.8, zorder=0)
    ax.set_xlabel("first coordinate")
    ax.set_ylabel("second coordinate")
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize=8)
    return ax
