"""Lesson 03: what large scores do to softmax, and why the divisor is exactly √d_k.

Experiments (NumPy only) and the lesson's figures for ``notebooks/03_scaling.ipynb``.
A "score row" is one query compared with ``n_keys`` keys: ``s_j = q · k_j`` with
every entry of q and k drawn independently from N(0, 1), so each score has mean 0
and variance d_k. Every experiment takes a seed, so its numbers are the same on
every run. Matplotlib is imported only by the figure functions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..softmax import entropy, softmax, softmax_jacobian
from ..softmax import saturated_share as share_above

# Key dimensions the experiments sweep: 1, 2, 4, ..., 1024.
DK_GRID = 2 ** np.arange(11)

# The exponents α of the divisors d_k^α of the "why exactly √d_k?" experiment.
POWERS = (1 / 3, 1 / 2, 2 / 3)
POWER_NAMES = ("1/3", "1/2", "2/3")

# Legend labels of the two curves every comparison draws.
RAW = r"raw scores $q\cdot k$"
SCALED = r"scaled $q\cdot k\,/\sqrt{d_k}$"

# Rows are drawn this many at a time, so that d_k = 1024 needs only a few MB.
_CHUNK = 100


# ------------------------------------------------------------------- math


def random_score_rows(
    d_k: int,
    n_keys: int = 16,
    n_rows: int = 400,
    seed: int = 0,
    *,
    sigma_q: float = 1.0,
    sigma_k: float = 1.0,
):
    """Raw scores of ``n_rows`` independent queries, each against its own ``n_keys`` keys.

    Formula: ``S[r, j] = q_r · k_{r,j}`` with every entry of q ~ N(0, σ_q²) and of
    k ~ N(0, σ_k²), so each score has mean 0 and variance σ_q² σ_k² d_k (lesson 02);
    with the default σ_q = σ_k = 1 that is d_k.

    Shapes: → ``(n_rows, n_keys)``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    rng = np.random.default_rng(seed)
    S = np.empty((n_rows, n_keys))
    for start in range(0, n_rows, _CHUNK):
        m = min(_CHUNK, n_rows - start)
        q = sigma_q * rng.standard_normal((m, d_k, 1))
        K = sigma_k * rng.standard_normal((m, n_keys, d_k))
        S[start : start + m] = (K @ q)[..., 0]
    return S


def score_rows(d_k: int, n_keys: int = 16, n_rows: int = 400, seed: int = 0):
    """Raw score rows with the distribution of :func:`random_score_rows`, drawn cheaply.

    Given q, the scores q · k_j with independent keys of N(0, 1) entries are independent
    N(0, |q|²), and |q|² is χ² with d_k degrees of freedom. So each row is
    ``√(χ²_{d_k}) · z`` with one z ~ N(0, 1) per key: exact, and no d_k-long vectors.

    Shapes: → ``(n_rows, n_keys)``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    rng = np.random.default_rng(seed)
    norms = np.sqrt(rng.chisquare(d_k, size=(n_rows, 1)))
    return norms * rng.standard_normal((n_rows, n_keys))


def largest_jacobian_entry(p) -> np.ndarray:
    """The largest |entry| of the softmax Jacobian ``J = diag(p) − p pᵀ`` of each row of p.

    It measures how strongly the weights react to a small change of the scores:
    near 0, the gradient flowing back through this softmax is near 0 too. This version
    builds J; Section 7 of the lesson derives J and shows which entry is the largest,
    and its exercise computes that entry without building J.

    Shapes: ``p (..., n)`` → ``(...)``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    return np.abs(softmax_jacobian(p)).max(axis=(-2, -1))


def _top_entry(p) -> np.ndarray:
    """:func:`largest_jacobian_entry` without building J: p_max (1 − p_max), as Section 7
    of the lesson proves. Much faster for many rows."""
    p_max = np.asarray(p).max(axis=-1)
    return p_max * (1 - p_max)


def gap_sweep(gaps, n_keys: int = 16):
    """Largest weight and entropy of ``softmax([g, 0, ..., 0])`` for each gap g.

    One score pulls ahead of ``n_keys − 1`` equal ones by g.

    Shapes: ``gaps (m,)`` → ``(max_weight (m,), entropy (m,))``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    gaps = np.asarray(gaps, dtype=float)
    rows = np.zeros((gaps.size, n_keys))
    rows[:, 0] = gaps
    p = softmax(rows)
    return p.max(axis=-1), entropy(p)


@dataclass(frozen=True)
class Saturation:
    """Typical softmax rows of random scores, raw and divided by √d_k, for each d_k.

    Each array has one entry per d_k in ``d_ks``: the mean largest weight, the mean
    entropy (nats) and the median largest |Jacobian entry| over the rows. The Jacobian
    ``J = diag(p) − p pᵀ`` is the derivative of the weights with respect to the softmax's
    own input: the raw scores s for the raw rows, s / √d_k for the scaled ones.
    ``jacobian_scaled_wrt_raw`` is the scaled rows' derivative with respect to the raw
    scores s = q · k: their softmax sees s / √d_k, so by the chain rule it is J / √d_k.
    """

    d_ks: np.ndarray
    n_keys: int
    n_rows: int
    score_std: np.ndarray
    max_weight_raw: np.ndarray
    max_weight_scaled: np.ndarray
    entropy_raw: np.ndarray
    entropy_scaled: np.ndarray
    jacobian_raw: np.ndarray
    jacobian_scaled: np.ndarray

    @property
    def jacobian_scaled_wrt_raw(self) -> np.ndarray:
        """Median largest |∂p_i/∂s_j| of the scaled rows, with s the raw scores: J / √d_k."""
        return self.jacobian_scaled / np.sqrt(self.d_ks)

    def at(self, d_k: int) -> dict:
        """The numbers measured for one d_k of the grid, by name."""
        i = int(np.flatnonzero(self.d_ks == d_k)[0])
        names = (
            "score_std",
            "max_weight_raw",
            "max_weight_scaled",
            "entropy_raw",
            "entropy_scaled",
            "jacobian_raw",
            "jacobian_scaled",
            "jacobian_scaled_wrt_raw",
        )
        return {name: float(getattr(self, name)[i]) for name in names}


def saturation_by_dk(d_ks=DK_GRID, n_keys: int = 16, n_rows: int = 20_000, seed: int = 3):
    """Measure how far softmax saturates on random score rows, raw and scaled, per d_k.

    For each d_k: ``n_rows`` rows from :func:`score_rows`, then softmax of S
    (raw) and of S / √d_k (scaled). Returns a :class:`Saturation`.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    d_ks = np.asarray(d_ks, dtype=int)
    stats: dict[str, list[float]] = {k: [] for k in ("std", "mr", "ms", "hr", "hs", "jr", "js")}
    for i, d_k in enumerate(d_ks):
        S = score_rows(int(d_k), n_keys, n_rows, seed=seed + i)
        raw, scaled = softmax(S), softmax(S / np.sqrt(d_k))
        stats["std"].append(S.std())
        stats["mr"].append(raw.max(axis=-1).mean())
        stats["ms"].append(scaled.max(axis=-1).mean())
        stats["hr"].append(entropy(raw).mean())
        stats["hs"].append(entropy(scaled).mean())
        # The median: a typical row. A few rows with two near-equal top scores keep a
        # large Jacobian and would dominate a mean.
        stats["jr"].append(np.median(_top_entry(raw)))
        stats["js"].append(np.median(_top_entry(scaled)))
    a = {k: np.array(v) for k, v in stats.items()}
    return Saturation(
        d_ks, n_keys, n_rows, a["std"], a["mr"], a["ms"], a["hr"], a["hs"], a["jr"], a["js"]
    )


def _query_draws(d_k: int, n_keys: int, n_rows: int, seed: int, init_std: float):
    """The random draws of :func:`query_gradient_rows` for one d_k, in one fixed order.

    Returns the raw scores ``s = |q| a`` and ``a`` (both ``(n_rows, n_keys)``), the
    upstream gradient ∂L/∂p ``(n_rows, n_keys)`` and σ² χ²_(d_k − 1) ``(n_rows,)``.
    """
    rng = np.random.default_rng(seed)
    q_length = init_std * np.sqrt(rng.chisquare(d_k, size=(n_rows, 1)))
    along = init_std * rng.standard_normal((n_rows, n_keys))  # a_j: keys along q
    grad_p = rng.standard_normal((n_rows, n_keys))  # ∂L/∂p
    # the keys' parts across q: their χ² with d_k − 1 degrees of freedom
    across = init_std**2 * rng.chisquare(max(d_k - 1, 1), size=n_rows) * (d_k > 1)
    return q_length * along, along, grad_p, across


def query_gradient_rows(
    d_ks=(16, 64, 256, 1024),
    alphas=(0.0, 0.5, 1.0),
    n_keys: int = 16,
    n_rows: int = 2000,
    seed: int = 20,
    init_std: float = 1.0,
) -> np.ndarray:
    """Length of the gradient that reaches the query, row by row, for divisors τ = d_k^α.

    For each row: a query q and ``n_keys`` keys K (rows k_j) with N(0, σ²) entries,
    σ = ``init_std`` (1: unit variance; 1/√3: ``nn.Linear``'s default, lesson 02), the
    weights ``p = softmax(K q / τ)`` with τ = d_k^α (α = 0: the raw scores, ½: ÷ √d_k,
    1: ÷ d_k), and a random upstream gradient ∂L/∂p ~ N(0, I) at the weights. The chain
    rule through the softmax Jacobian J = diag(p) − p pᵀ (symmetric) and s = K q gives
    ``g = ∂L/∂s = J ∂L/∂p / τ = p ⊙ (∂L/∂p − p · ∂L/∂p) / τ`` and ``∂L/∂q = Kᵀ g``.
    The keys have length about σ√d_k, so while J stays away from 0 the result scales
    like √d_k / d_k^α = d_k^(½ − α).

    No d_k-long vector is drawn, so any d_k and ``n_keys`` cost the same: split each key
    into its part along q, ``a_j = k_j · q/|q|`` ~ N(0, σ²), and the rest, which is
    independent of the scores ``s_j = |q| a_j``. Then
    ``‖∂L/∂q‖² = (g · a)² + σ² ‖g‖² χ²_(d_k − 1)`` exactly in distribution, with
    ``|q|² = σ² χ²_(d_k)``. Every α and every σ sees the same draws.

    Shapes: ``d_ks (m,)``, ``alphas (a,)`` → ``(a, m, n_rows)``: ‖∂L/∂q‖ of every row.

    Lesson: ``notebooks/03_scaling.ipynb`` (Section 7).
    """
    norms = np.empty((len(alphas), len(d_ks), n_rows))
    for i, d_k in enumerate(d_ks):
        s, along, grad_p, across = _query_draws(d_k, n_keys, n_rows, seed + i, init_std)
        for row, alpha in enumerate(alphas):
            tau = float(d_k) ** alpha
            p = softmax(s / tau)
            grad_s = p * (grad_p - (p * grad_p).sum(axis=-1, keepdims=True)) / tau
            squared = (grad_s * along).sum(axis=-1) ** 2 + across * (grad_s**2).sum(axis=-1)
            norms[row, i] = np.sqrt(squared)
    return norms


def query_score_rows(
    d_ks=(16, 64, 256, 1024),
    n_keys: int = 16,
    n_rows: int = 2000,
    seed: int = 20,
    init_std: float = 1.0,
) -> np.ndarray:
    """The raw scores ``s_j = q · k_j`` of the rows of :func:`query_gradient_rows`.

    Same arguments and the same draws, so row r here is row r there: this tells you
    which scores a row with a large or a small ‖∂L/∂q‖ had.

    Shapes: ``d_ks (m,)`` → ``(m, n_rows, n_keys)``.

    Lesson: ``notebooks/03_scaling.ipynb`` (Section 7): the rows that carry the raw
    rows' gradient are those whose top two scores nearly tie.
    """
    return np.stack(
        [_query_draws(d_k, n_keys, n_rows, seed + i, init_std)[0] for i, d_k in enumerate(d_ks)]
    )


def query_gradient_norms(
    d_ks=(16, 64, 256, 1024),
    alphas=(0.0, 0.5, 1.0),
    n_keys: int = 16,
    n_rows: int = 2000,
    seed: int = 20,
    init_std: float = 1.0,
) -> np.ndarray:
    """Median over rows of :func:`query_gradient_rows`: the typical row's ‖∂L/∂q‖.

    Shapes: ``d_ks (m,)``, ``alphas (a,)`` → ``(a, m)``.

    Lesson: ``notebooks/03_scaling.ipynb`` (Section 7).
    """
    rows = query_gradient_rows(d_ks, alphas, n_keys, n_rows, seed, init_std)
    return np.median(rows, axis=-1)


def share_carrying_half(values) -> np.ndarray:
    """Smallest share of rows whose values add up to half of the total, per last axis.

    Formula: sort the non-negative values of a row in decreasing order, x_(1) ≥ x_(2) ≥ …;
    the answer is k/n for the smallest k with x_(1) + … + x_(k) ≥ ½ Σ x. Values that are
    all alike give about ½; a sum carried by a few large values gives a small share.

    Shapes: ``(..., n)`` → ``(...)``.

    Lesson: ``notebooks/03_scaling.ipynb`` (Section 7): how concentrated the raw rows'
    gradient at the query is.
    """
    return rows_carrying_half(values).mean(axis=-1)


def rows_carrying_half(values) -> np.ndarray:
    """Which rows are the fewest whose values add up to half of the total, per last axis.

    Formula: as :func:`share_carrying_half`, the k largest values of each row, with k
    the smallest number for which they reach ½ Σ x (ties broken by position).

    Shapes: ``(..., n)`` → boolean ``(..., n)``.

    Lesson: ``notebooks/03_scaling.ipynb`` (Section 7): which raw rows carry the gradient.
    """
    values = np.asarray(values, dtype=float)
    order = np.argsort(-values, axis=-1, kind="stable")
    cumulative = np.cumsum(np.take_along_axis(values, order, axis=-1), axis=-1)
    k = (cumulative < 0.5 * cumulative[..., -1:]).sum(axis=-1, keepdims=True) + 1
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(values.shape[-1]), axis=-1)
    return ranks < k


def power_variances(d_ks=DK_GRID, powers=POWERS, n_samples: int = 4000, seed: int = 5):
    """Monte-Carlo variance of ``q · k / d_k^α`` for each exponent α and each d_k.

    Prediction: ``Var(q·k / d_k^α) = Var(q·k) / d_k^(2α) = d_k^(1 − 2α)``.

    Shapes: → ``(len(powers), len(d_ks))``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    rng = np.random.default_rng(seed)
    d_ks = np.asarray(d_ks, dtype=int)
    out = np.empty((len(powers), d_ks.size))
    for j, d_k in enumerate(d_ks):
        q = rng.standard_normal((n_samples, d_k))
        k = rng.standard_normal((n_samples, d_k))
        dots = np.einsum("sd,sd->s", q, k)
        for i, alpha in enumerate(powers):
            out[i, j] = np.var(dots / float(d_k) ** alpha)
    return out


def sequence_scores(
    d_k: int,
    n_tokens: int = 256,
    n_sequences: int = 4,
    seed: int = 0,
    *,
    sigma_q: float = 1.0,
    sigma_k: float = 1.0,
):
    """Raw scores of whole sequences: every query against every key of its sequence.

    Formula: ``S[b, i, j] = q_{b,i} · k_{b,j}``, every entry of q ~ N(0, σ_q²) and of
    k ~ N(0, σ_k²): each score has variance σ_q² σ_k² d_k (lesson 02). Unlike
    :func:`random_score_rows`, the queries of a sequence share its keys, as in a layer.

    Shapes: → ``(n_sequences, n_tokens, n_tokens)``.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    rng = np.random.default_rng(seed)
    Q = sigma_q * rng.standard_normal((n_sequences, n_tokens, d_k))
    K = sigma_k * rng.standard_normal((n_sequences, n_tokens, d_k))
    return np.stack([q @ k.T for q, k in zip(Q, K, strict=True)])  # one 2-D product each


def saturated_share(S, threshold: float = 0.99) -> float:
    """The share of softmax rows of S whose largest weight is above ``threshold``.

    A row above 0.99 is *saturated*, as in lesson 02 (Section 7).

    Shapes: ``S (..., n_keys)`` → a float between 0 and 1.

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    return share_above(softmax(S), threshold)


def mean_entropy_by_exponent(
    d_k: int, n_keys: int, alphas, n_rows: int = 400, seed: int = 0, c: float = 1.0
) -> np.ndarray:
    """Mean entropy (nats) of ``softmax(s / (c · d_k^α))`` over random score rows, for each α.

    The rows are q · k_j with every entry N(0, 1), drawn exactly and cheaply for any
    d_k by :func:`score_rows`; ``c`` is a constant in front of the divisor.

    Shapes: ``alphas (m,)`` → ``(m,)``.

    Lesson: ``notebooks/03_scaling.ipynb`` (the panel of its widget).
    """
    S = score_rows(d_k, n_keys, n_rows, seed)
    alphas = np.asarray(alphas, dtype=float)
    divisors = c * float(d_k) ** alphas
    return entropy(softmax(S[None, :, :] / divisors[:, None, None])).mean(axis=-1)


def curves_cross(d_small: int, d_large: int, n_keys: int, c: float = 1.0) -> tuple[float, float]:
    """Where the mean-entropy curves of two d_k cross: (α, entropy there in nats).

    The curves are :func:`mean_entropy_by_exponent` with divisor c · d_k^α and seed d_k (as
    in the widget), on α = 0, 0.0025, …, 1; between grid points the crossing is
    interpolated linearly. The variance argument puts it near α = ½ for every c.

    Lesson: ``notebooks/03_scaling.ipynb`` (the constant c in its widget).
    """
    alphas = np.linspace(0.0, 1.0, 401)
    small, large = (
        mean_entropy_by_exponent(d, n_keys, alphas, seed=d, c=c) for d in (d_small, d_large)
    )
    gap = small - large  # above 0 at α = 0 (the smaller d_k is flatter), below 0 at α = 1
    i = int(np.flatnonzero(np.diff(np.sign(gap)) != 0)[0])
    t = gap[i] / (gap[i] - gap[i + 1])
    alpha = float(alphas[i] + t * (alphas[i + 1] - alphas[i]))
    return alpha, float(small[i] + t * (small[i + 1] - small[i]))


# ---------------------------------------------------------------- figures


def _pyplot():
    import matplotlib.pyplot as plt

    from .. import plots

    return plt, plots


def plot_softmax_rows(weights, row_labels, *, title="softmax of each row"):
    """The softmax weights of a few rows as one strip each (darker = more weight)."""
    plt, plots = _pyplot()
    weights = np.asarray(weights, dtype=float)
    fig, ax = plt.subplots(figsize=(6.0, 0.6 + 0.55 * len(weights)), layout="constrained")
    plots.heatmap(
        weights,
        ax,
        row_labels=row_labels,
        cmap=plots.STRIP_CMAP,
        vmin=0.0,
        vmax=1.0,
        fmt="{:.4f}",
        title=title,
        xlabel="key",
        ylabel="scores",
        colorbar=False,
    )
    return fig


def plot_gap_sweep(gaps, max_weight, ent, n_keys: int):
    """Largest weight and entropy of softmax([g, 0, ..., 0]) against the gap g."""
    plt, plots = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.0), layout="constrained")
    left.plot(gaps, max_weight, color=plots.ACCENT, lw=2)
    left.axhline(1.0, color="grey", ls=":", lw=1)
    left.axhline(1 / n_keys, color="grey", ls="--", lw=1, label=f"uniform: 1/{n_keys}")
    left.set(
        title="largest weight",
        xlabel="gap g between the top score and the rest",
        ylabel="weight",
        ylim=(0, 1.05),
    )
    left.legend(fontsize=8, loc="center right")
    right.plot(gaps, ent, color=plots.SECOND, lw=2)
    right.axhline(
        np.log(n_keys), color="grey", ls="--", lw=1, label=f"uniform: log {n_keys} (maximum)"
    )
    right.set(
        title="entropy",
        xlabel="gap g between the top score and the rest",
        ylabel="entropy (nats)",
        ylim=(0, np.log(n_keys) * 1.1),
    )
    right.legend(fontsize=8, loc="upper right")
    fig.suptitle(f"softmax([g, 0, ..., 0]) over {n_keys} keys")
    return fig


def plot_saturation(sat: Saturation):
    """Mean largest weight and mean entropy against d_k, raw scores versus scores ÷ √d_k."""
    plt, plots = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.2), layout="constrained")
    style = {"marker": "o", "ms": 4, "lw": 2}
    left.plot(sat.d_ks, sat.max_weight_raw, color=plots.SECOND, label=RAW, **style)
    left.plot(sat.d_ks, sat.max_weight_scaled, color=plots.ACCENT, label=SCALED, **style)
    left.axhline(1.0, color="grey", ls=":", lw=1, label="one-hot")
    left.set(title="mean largest weight", ylabel="weight", ylim=(0, 1.05))
    right.plot(sat.d_ks, sat.entropy_raw, color=plots.SECOND, label=RAW, **style)
    right.plot(sat.d_ks, sat.entropy_scaled, color=plots.ACCENT, label=SCALED, **style)
    right.axhline(
        np.log(sat.n_keys), color="grey", ls="--", lw=1, label=f"uniform: log {sat.n_keys}"
    )
    right.set(title="mean entropy", ylabel="entropy (nats)", ylim=(0, np.log(sat.n_keys) * 1.1))
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("$d_k$ (log scale)")
        ax.legend(fontsize=8, loc="center right")
    fig.suptitle(f"{sat.n_rows:,} random score rows of {sat.n_keys} keys for each $d_k$")
    return fig


def plot_power_variances(d_ks, variances, powers=POWERS, names=POWER_NAMES):
    """Measured variance of q·k / d_k^α (dots) against the prediction d_k^(1−2α) (lines)."""
    plt, plots = _pyplot()
    d_ks = np.asarray(d_ks, dtype=float)
    fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
    predicted = {"1/3": "d_k^{1/3}", "1/2": "d_k^{0} = 1", "2/3": "d_k^{-1/3}"}
    handles, labels = [], []
    for alpha, name, var, colour in zip(
        powers, names, variances, (plots.SECOND, plots.ACCENT, plots.THIRD), strict=True
    ):
        line = predicted.get(name, f"d_k^{{{1 - 2 * alpha:.2g}}}")
        (drawn,) = ax.plot(d_ks, d_ks ** (1 - 2 * alpha), color=colour, lw=1.5)
        (dots,) = ax.plot(d_ks, var, "o", color=colour, ms=5)
        handles.append((drawn, dots))  # one legend entry per exponent: line and dots
        labels.append(f"÷ $d_k^{{{name}}}$: predicted ${line}$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set(
        title=r"variance of $q\cdot k\,/\,d_k^{\,\alpha}$ (lines: prediction, dots: measured)",
        xlabel="$d_k$ (log scale)",
        ylabel="variance (log scale)",
    )
    ax.legend(handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def plot_temperatures(scores, taus, labels):
    """One row of scores through softmax(s / τ) for several temperatures τ, one strip each."""
    plt, plots = _pyplot()
    weights = np.stack([softmax(np.asarray(scores, float) / tau) for tau in taus])
    fig, ax = plt.subplots(figsize=(7.0, 0.6 + 0.55 * len(taus)), layout="constrained")
    plots.heatmap(
        weights,
        ax,
        row_labels=labels,
        cmap=plots.STRIP_CMAP,
        vmin=0.0,
        vmax=1.0,
        title="softmax(s / τ) of one score row",
        xlabel="key",
        ylabel="temperature",
        colorbar=False,
    )
    return fig


def plot_jacobian(sat: Saturation):
    """Median largest |∂p_i/∂x_j| against d_k: raw rows, and scaled rows with respect to
    their own input s / √d_k (J) and to the raw scores s (J / √d_k)."""
    plt, plots = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 3.6), layout="constrained")
    style = {"marker": "o", "ms": 4, "lw": 2}
    ax.plot(
        sat.d_ks,
        sat.jacobian_raw,
        color=plots.SECOND,
        label=r"÷1: $\partial p/\partial s = J$",
        **style,
    )
    ax.plot(
        sat.d_ks,
        sat.jacobian_scaled,
        color=plots.ACCENT,
        label=r"÷$\sqrt{d_k}$: $\partial p/\partial(s/\sqrt{d_k}) = J$",
        **style,
    )
    ax.plot(
        sat.d_ks,
        sat.jacobian_scaled_wrt_raw,
        color=plots.ACCENT,
        ls="--",
        label=r"÷$\sqrt{d_k}$: $\partial p/\partial s = J/\sqrt{d_k}$",
        **{**style, "marker": "s"},
    )
    # p_i (1 − p_i) is largest, 1/4, at p_i = 1/2: no entry of J can be larger.
    ax.axhline(0.25, color="grey", ls=":", lw=1, label=r"largest possible $|J_{ij}|$, 1/4")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(
        title="how strongly the weights react: median largest entry",
        xlabel="$d_k$ (log scale)",
        ylabel="largest |entry| (log scale)",
    )
    ax.legend(fontsize=8, loc="lower left")
    return fig


def temperature_for_entropy(scores, target: float, low: float = 1e-3, high: float = 1e3) -> float:
    """The temperature τ at which ``softmax(scores / τ)`` has entropy ``target`` (nats).

    For a row whose largest score is unique, the entropy rises steadily with τ, from
    near 0 (τ → 0, one-hot) to log n (τ → ∞, uniform), so one τ fits any target in
    between; bisection on log τ finds it. (With m scores tied for the largest, the
    entropy only falls to log m as τ → 0.)

    Shapes: ``scores`` ``(n,)`` → a float.
    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    s = np.asarray(scores, dtype=np.float64)
    lo, hi = np.log(low), np.log(high)

    def entropy_at(log_tau: float) -> float:
        return float(entropy(softmax(s / np.exp(log_tau))))

    # Widen the interval by factors of 10 until it holds the answer, so that rows of any
    # scale work (bounded: exp(±700) is still a finite float).
    while entropy_at(hi) < target and hi < 700:
        hi += np.log(10.0)
    while entropy_at(lo) > target and lo > -700:
        lo -= np.log(10.0)
    # Halve until the interval is far below any digit printed (about 45 halvings here).
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if entropy_at(mid) < target:
            lo = mid
        else:
            hi = mid
    return float(np.exp((lo + hi) / 2))
