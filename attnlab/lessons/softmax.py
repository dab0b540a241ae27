"""Figures for the softmax lesson: weights against scores, saturation, Jacobians, masks.

Each function only draws: the numbers it shows are computed in the notebook
cell that calls it, so the learner sees every computation.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import plots

# Every entry of a softmax Jacobian lies in [-1/4, 1/4]: the diagonal p(1 - p) and the
# off-diagonal -p_i p_j are both at most 1/4 in size. Fixed limits make maps comparable.
JACOBIAN_LIMIT = 0.25


def scores_vs_weights(scores, weights, labels=None):
    """Three panels: the scores, their softmax weights, and weight ratios against score gaps.

    The third panel checks ``p_top / p_j = exp(x_top - x_j)``: each key j gives one measured
    point (its score gap below the top key, the ratio of weights) on the curve ``exp(Δ)``.

    Shapes: ``scores`` and ``weights`` are 1-D of the same length n.
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    scores = np.asarray(scores, float)
    weights = np.asarray(weights, float)
    labels = labels if labels is not None else [f"k{j}" for j in range(scores.size)]
    fig, (ax_s, ax_w, ax_r) = plt.subplots(1, 3, figsize=(10.5, 3.2), layout="constrained")
    plots.bars(scores, ax_s, labels=labels, title="scores x", ylabel="score")
    ax_s.axhline(0, color="black", lw=0.8)
    ax_s.set_xlabel("key")
    plots.bars(
        weights,
        ax_w,
        labels=labels,
        title="weights softmax(x)",
        ylabel="weight",
        color=plots.SECOND,
        ylim=(0, 1),
    )
    ax_w.set_xlabel("key")
    for j, w in enumerate(weights):
        ax_w.text(j, w + 0.02, f"{w:.2f}", ha="center", va="bottom", fontsize=8)
    top = int(np.argmax(scores))
    gaps = scores[top] - scores
    grid = np.linspace(0, max(float(gaps.max()), 1.0) * 1.1, 200)
    ax_r.plot(grid, np.exp(grid), color=plots.ACCENT, label=r"$e^{\Delta}$")
    ax_r.plot(
        gaps, weights[top] / weights, "o", color=plots.SECOND, label="measured from the weights"
    )
    ax_r.set_yscale("log")
    ax_r.set_title("exp turns score gaps into ratios")
    ax_r.set_xlabel(f"score gap Δ below {labels[top]}")
    ax_r.set_ylabel(f"weight of {labels[top]} / weight of key (log)")
    ax_r.legend(fontsize=8, loc="upper left")
    return fig


def saturation_plot(xs, first, threshold, x_cross, n_keys=4):
    """The first weight of ``softmax([x, 0, ..., 0])`` and its slope ``p(1 - p)`` against x.

    Marks where the weight first exceeds ``threshold`` (at ``x_cross``, computed by the
    caller); ``n_keys`` is the length of the score vector.
    Shapes: ``xs`` and ``first`` are 1-D of the same length.
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    xs = np.asarray(xs, float)
    first = np.asarray(first, float)
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    ax.plot(xs, first, color=plots.ACCENT, lw=2, label="first weight $p_1$")
    ax.plot(
        xs,
        first * (1 - first),
        color=plots.SECOND,
        lw=2,
        ls="--",
        label=r"its slope $\partial p_1/\partial x = p_1(1-p_1)$",
    )
    ax.axhline(threshold, color="grey", lw=0.8, ls=":")
    ax.axvline(x_cross, color="grey", lw=0.8, ls=":")
    ax.annotate(
        f"$p_1$ > {threshold} from x = {x_cross:.2f}",
        (x_cross, threshold),
        xytext=(x_cross + 0.4, 0.6),
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": "grey"},
    )
    ax.set_ylim(0, 1.02)
    ax.set_xlim(xs.min(), xs.max())
    ax.set_xlabel("x, the first score (the other scores are 0)")
    ax.set_ylabel("value")
    ax.set_title(f"softmax([x, {', '.join(['0'] * (n_keys - 1))}]) saturates")
    ax.legend(fontsize=8, loc="center right")
    return fig


def jacobian_pair(jacobians, titles, fmt="{:.3f}"):
    """Softmax Jacobians side by side on the same fixed colour scale, ±``JACOBIAN_LIMIT``.

    Shapes: each Jacobian is (n, n), rows i (weight p_i), columns j (score x_j).
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    fig, axs = plt.subplots(
        1, len(jacobians), figsize=(4.3 * len(jacobians), 3.6), layout="constrained"
    )
    for k, (ax, J, title) in enumerate(zip(np.atleast_1d(axs), jacobians, titles, strict=True)):
        heat = plots.heatmap(
            J,
            ax,
            title=title,
            xlabel="j (score $x_j$)",
            ylabel="i (weight $p_i$)",
            cmap=plots.SIGNED_CMAP,
            vmin=-JACOBIAN_LIMIT,
            vmax=JACOBIAN_LIMIT,
            fmt=fmt,
            colorbar=k == len(jacobians) - 1,
        )
        # A tiny negative entry would read "-0.000"; written as zero, it says what it is.
        for text in heat.texts:
            if float(text.get_text()) == 0:
                text.set_text(fmt.format(0.0))
    return fig


def mask_and_weights(mask, weights):
    """A bool mask (True = may attend) next to the attention weights it produced.

    Shapes: ``mask`` and ``weights`` are (n_q, n_k).
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    mask = np.asarray(mask)
    fig, (ax_m, ax_w) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    heat = plots.heatmap(
        mask.astype(float),
        ax_m,
        title="causal mask (1 = may attend)",
        cmap="Blues",
        vmin=0,
        vmax=1.6,
        fmt="{:.0f}",
        colorbar=False,
    )
    for text, keep in zip(heat.texts, mask.ravel(), strict=True):
        text.set_color("white" if keep else "black")
    plots.heatmap(weights, ax_w, title="causal softmax weights", vmin=0, vmax=1)
    return fig


def qk_norm_scores(Q, K, gain: float) -> np.ndarray:
    """QK-norm: every query and key scaled to length 1, the cosines times a learned ``gain``.

    Formula: ``s_ij = g · (q_i / ‖q_i‖) · (k_j / ‖k_j‖) = g cos θ_ij``, so every score lies
    in [−g, g] whatever the vectors' lengths.
    Shapes: Q ``(n_q, d)``, K ``(n_k, d)`` → ``(n_q, n_k)``.
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    Qn = Q / np.linalg.norm(Q, axis=-1, keepdims=True)
    Kn = K / np.linalg.norm(K, axis=-1, keepdims=True)
    return gain * Qn @ Kn.T


def query_length_sweep(lengths, n_keys: int = 16, d_k: int = 64, gain: float = 2.0, seed=0):
    """The largest weight of one query's row as the query gets longer, with and without QK-norm.

    One random query direction and ``n_keys`` keys with N(0, 1) entries; the query is that
    direction scaled to each length in ``lengths``. Plain scaled attention uses
    ``q·k / √d_k``; QK-norm uses :func:`qk_norm_scores` with ``gain``.
    Returns ``(plain, qk_norm)``, the largest weight for each length, shapes
    ``(len(lengths),)``.
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    from ..softmax import softmax

    rng = np.random.default_rng(seed)
    u = rng.standard_normal(d_k)
    u /= np.linalg.norm(u)
    K = rng.standard_normal((n_keys, d_k))
    Q = np.asarray(lengths, dtype=float)[:, None] * u  # one query per length, same direction
    plain = softmax(Q @ K.T / np.sqrt(d_k)).max(axis=-1)
    normed = softmax(qk_norm_scores(Q, K, gain)).max(axis=-1)
    return plain, normed


def plot_query_length(lengths, plain, normed, gain: float, n_keys: int):
    """The largest weight against the query's length: plain attention and QK-norm, with the
    bound ``1 / (1 + (n − 1) e^(−2g))`` that QK-norm cannot pass.
    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(6.2, 3.3), layout="constrained")
    ax.plot(lengths, plain, color=plots.ACCENT, lw=2, label="q·k / √d_k")
    ax.plot(lengths, normed, color="#D55E00", lw=2, label=f"QK-norm, gain g = {gain:g}")
    bound = 1 / (1 + (n_keys - 1) * np.exp(-2 * gain))
    ax.axhline(bound, color="#D55E00", ls=":", lw=1.2, label=f"QK-norm's bound, {bound:.3f}")
    ax.axhline(1 / n_keys, color="grey", ls="--", lw=1, label=f"uniform, 1/{n_keys}")
    ax.set(
        xlabel="length ‖q‖ of the query",
        ylabel="largest weight of its row",
        ylim=(0, 1.05),
        title="a longer query sharpens its own row, unless q and k are normalised",
    )
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8, loc="center right")
    return fig
