"""Figures and small tools for the softmax lesson: masks, temperature, and query-dependent
scaling (QK-norm).

The figure functions only draw: the numbers they show are computed in the notebook cell
that calls them, so the learner sees every computation. ``qk_norm_scores`` and
``largest_weight_bound`` compute, each with its formula.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import plots


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


def temperature_gradient_plot(taus, norm_J, norm_grad, marks=()):
    """``‖J‖`` and ``‖∂p/∂s‖ = ‖J‖/τ`` against the temperature τ (log scale).

    ``marks``: τ values to mark with a dotted line (e.g. the rows of a printed table).
    Shapes: ``taus``, ``norm_J`` and ``norm_grad`` are 1-D of the same length.
    Lesson: ``notebooks/04_softmax.ipynb`` (temperature).
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    ax.plot(taus, norm_J, color="grey", lw=1.5, ls="--", label=r"$\|J\|$ (w.r.t. $s/\tau$)")
    ax.plot(
        taus,
        norm_grad,
        color=plots.ACCENT,
        lw=2,
        label=r"$\|\partial p/\partial s\| = \|J\|/\tau$ (w.r.t. the raw scores $s$)",
    )
    for tau in marks:
        ax.axvline(tau, color="grey", lw=0.8, ls=":")
        ax.annotate(
            f"τ = {tau:g}",
            (tau, 0.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, 4),
            textcoords="offset points",
            fontsize=8,
            color="grey",
        )
    ax.set_xscale("log")
    ax.set_xlabel(r"temperature $\tau$ (log scale)")
    ax.set_ylabel("norm")
    ax.set_title(r"How much gradient reaches the scores, $p = $ softmax$(s/\tau)$")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def qk_norm_scores(Q, K, g):
    """QK-norm scores ``S = g · (Q/‖q‖)(K/‖k‖)ᵀ``, so ``S_ij = g cos θ_ij`` lies in [-g, g].

    Each query row and each key row is divided by its own length before the dot product;
    the learned scale ``g`` then sets the sharpness, a temperature of 1/g on cos θ. No
    ÷√d_k: g replaces it.

    Shapes: ``Q`` (n_q, d), ``K`` (n_k, d), ``g`` a number → (n_q, n_k).
    Lesson: ``notebooks/04_softmax.ipynb`` (query-dependent scaling).
    """
    Q = np.asarray(Q, float)
    K = np.asarray(K, float)
    Qn = Q / np.linalg.norm(Q, axis=-1, keepdims=True)
    Kn = K / np.linalg.norm(K, axis=-1, keepdims=True)
    return g * Qn @ Kn.T


def largest_weight_bound(g, n):
    """The largest weight scores in [-g, g] can give one of n keys: ``1 / (1 + (n-1) e^{-2g})``.

    Reached when one score is g and the other n - 1 are -g.
    Shapes: ``g`` a number or array, ``n`` a whole number → like ``g``.
    Lesson: ``notebooks/04_softmax.ipynb`` (query-dependent scaling).
    """
    return 1.0 / (1.0 + (n - 1) * np.exp(-2.0 * np.asarray(g, float)))


def query_scaling_plot(cs, plain_max, qk_max_by_g):
    """The largest weight of one query's row when the query is multiplied by c (log x).

    One curve for plain scaled dot products ``(c q) · k / √d_k``, which sharpen as c grows (a
    temperature τ/c), and one flat line per QK-norm scale g, which ignores c: the query's
    length drops out, and g and the angles set its height.
    Shapes: ``cs``, ``plain_max`` 1-D of one length; ``qk_max_by_g`` a dict {g: 1-D of that
    length}, at most three entries.
    Lesson: ``notebooks/04_softmax.ipynb`` (query-dependent scaling).
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    ax.plot(cs, plain_max, color=plots.ACCENT, lw=2, label=r"plain: $(c\,q)\cdot k/\sqrt{d_k}$")
    # colour and dash both differ, so the lines stay apart in greyscale too
    styles = ((plots.SECOND, "--"), (plots.THIRD, "-."), ("#CC79A7", ":"))
    for (g, qk_max), (colour, dash) in zip(qk_max_by_g.items(), styles, strict=False):
        ax.plot(cs, qk_max, color=colour, lw=2, ls=dash, label=f"QK-norm, g = {g:g}")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("c, the factor on the query (log scale)")
    ax.set_ylabel("largest weight of the row")
    ax.set_title("Plain: q's length is a temperature τ/c.\nQK-norm: the query's length drops out")
    ax.legend(fontsize=8, loc="upper left")
    return fig


def qk_norm_bound_plot(gs, measured_max, bound, measured_label=None):
    """QK-norm's cap on sharpness: the largest weight measured at each g, under the bound.

    ``bound`` is ``1 / (1 + (n-1) e^{-2g})`` (``largest_weight_bound``); ``measured_label``
    names the measured points (what the maximum runs over), by default "largest weight
    measured".
    Shapes: ``gs``, ``measured_max``, ``bound`` 1-D of one length.
    Lesson: ``notebooks/04_softmax.ipynb`` (query-dependent scaling, optional part).
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    ax.plot(gs, bound, color="grey", lw=1.5, label=r"bound $1/(1+(n-1)e^{-2g})$")
    label = measured_label or "largest weight measured"
    ax.plot(gs, measured_max, "o", color=plots.SECOND, ms=4, label=label)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("g, the learned scale of QK-norm")
    ax.set_ylabel("largest weight")
    ax.set_title(r"QK-norm: scores $g\cos\theta$ cap the sharpness")
    ax.legend(fontsize=8, loc="lower right")
    return fig
