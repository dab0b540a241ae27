"""Helpers for lesson 01: a toy sentence's Q, K, V, and a picture of vectors as arrows.

Lesson: ``notebooks/01_dot_product.ipynb``.
"""

from __future__ import annotations

import numpy as np

from .. import plots

TOY_TOKENS = ("I", "like", "tea")


def toy_projections(seed: int = 7, d: int = 3):
    """Token embeddings X and three projection matrices, all rounded to one decimal.

    Returns ``(tokens, X, W_Q, W_K, W_V)`` with X ``(3, d)`` (one row per token)
    and each W ``(d, d)``, so that ``Q = X @ W_Q`` and friends are ``(3, d)``.
    In a trained model the W are learned; here they are seeded random numbers,
    rounded so that a product can be redone by hand.
    """
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(len(TOY_TOKENS), d)), 1)
    W_Q, W_K, W_V = (np.round(rng.normal(size=(d, d)), 1) for _ in range(3))
    return TOY_TOKENS, X, W_Q, W_K, W_V


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
