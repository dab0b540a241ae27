"""Monte-Carlo experiments and figures for the lesson on why dot products grow.

Random queries and keys with independent, zero-mean entries give dot products
q·k whose variance is σ_q² σ_k² d_k. The functions here draw such dot products
(vectorised, in chunks so memory stays small), measure their variances, and
draw the lesson's figures with the course's look (``attnlab.plots``).

Lesson: ``notebooks/02_variance.ipynb`` (the widget ``variance_explorer`` draws its
rows with ``unit_components``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

# Components with mean 0 and variance 1: the lesson shows Var(q·k) = d_k for each.
DISTRIBUTIONS = ("normal", "uniform", "rademacher")
DISTRIBUTION_LABELS = {
    "normal": "normal N(0, 1)",
    "uniform": "uniform on [-√3, √3]",
    "rademacher": "±1 (Rademacher), equal chance",
}

# About this many numbers are drawn at once (8 MB of float64 per matrix), so that
# 20 000 samples at d_k = 512 never hold two 80 MB matrices in memory.
_CHUNK_ENTRIES = 2**20


def unit_components(shape, rng: np.random.Generator, dist: str = "normal") -> np.ndarray:
    """Independent random numbers with mean 0 and variance 1, as a float64 array of ``shape``.

    ``dist`` is ``"normal"`` (standard normal), ``"uniform"`` (uniform on [-√3, √3],
    whose variance is (2√3)²/12 = 1) or ``"rademacher"`` (-1 or +1 with probability 1/2).

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    if dist == "normal":
        return rng.standard_normal(shape)
    if dist == "uniform":
        edge = np.sqrt(3.0)
        return rng.uniform(-edge, edge, shape)
    if dist == "rademacher":
        return rng.integers(0, 2, shape).astype(np.float64) * 2.0 - 1.0
    raise ValueError(f"dist must be one of {', '.join(map(repr, DISTRIBUTIONS))}, got {dist!r}.")


def dot_product_samples(
    d_k: int,
    n: int,
    rng: np.random.Generator,
    dist: str = "normal",
    *,
    sigma_q: float = 1.0,
    sigma_k: float = 1.0,
) -> np.ndarray:
    """``n`` independent dot products q·k of random vectors with ``d_k`` entries each.

    Formula: each sample is ``Σ_i q_i k_i`` with every q_i = σ_q·X and k_i = σ_k·Y,
    X and Y drawn independently by :func:`unit_components` (mean 0, variance 1), so
    in theory ``Var(q·k) = σ_q² σ_k² d_k``.

    Shapes: returns a float64 array of shape ``(n,)``. Rows are drawn in chunks,
    so memory stays near 16 MB whatever ``d_k`` and ``n``.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    d_k, n = int(d_k), int(n)
    if d_k < 1 or n < 1:
        raise ValueError(f"d_k and n must be at least 1, got d_k={d_k} and n={n}.")
    out = np.empty(n)
    rows = max(1, _CHUNK_ENTRIES // d_k)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        q = sigma_q * unit_components((stop - start, d_k), rng, dist)
        k = sigma_k * unit_components((stop - start, d_k), rng, dist)
        out[start:stop] = np.einsum("ij,ij->i", q, k)  # one dot product per row pair
    return out


def samples_by_dk(
    d_ks: Iterable[int], n: int, rng: np.random.Generator, dist: str = "normal", **sigmas
) -> dict[int, np.ndarray]:
    """``{d_k: dot_product_samples(d_k, n, rng, dist)}`` for every d_k, in the given order.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    return {int(d): dot_product_samples(d, n, rng, dist, **sigmas) for d in d_ks}


def measured_variances(
    d_ks: Iterable[int] | Mapping[int, np.ndarray],
    n: int | None = None,
    rng: np.random.Generator | None = None,
    dist: str = "normal",
    *,
    scale: bool = False,
    **sigmas,
) -> np.ndarray:
    """The sample variance of q·k for each d_k (of q·k / √d_k when ``scale``).

    Pass either d_k values with ``n`` and ``rng`` (samples are drawn with
    :func:`dot_product_samples`), or a mapping ``{d_k: samples}`` from
    :func:`samples_by_dk` to measure samples drawn already.

    Shapes: returns a float64 array with one variance per d_k.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    if isinstance(d_ks, Mapping):
        samples = {int(d): np.asarray(s, dtype=float) for d, s in d_ks.items()}
    else:
        if n is None or rng is None:
            raise ValueError("measured_variances needs n and rng to draw new samples.")
        samples = samples_by_dk(d_ks, n, rng, dist, **sigmas)
    # ddof=1: the unbiased sample variance; with 20 000 samples the choice hardly shows.
    return np.array([np.var(s / np.sqrt(d) if scale else s, ddof=1) for d, s in samples.items()])


def score_pairs(
    d_k: int, n: int, rng: np.random.Generator, dist: str = "normal"
) -> tuple[np.ndarray, np.ndarray]:
    """Two scores of the same query, ``(q·k₁, q·k₂)``, for ``n`` independent draws.

    Formula: q, k₁ and k₂ have independent entries with mean 0 and variance 1 (see
    :func:`unit_components`); in theory each score has variance d_k, the two scores are
    uncorrelated although they share q, and ``Var(q·k₁ − q·k₂) = 2 d_k``.

    Shapes: returns two float64 arrays of shape ``(n,)``, drawn in chunks.

    Lesson: ``notebooks/02_variance.ipynb`` (the question on the spread of a difference).
    """
    d_k, n = int(d_k), int(n)
    if d_k < 1 or n < 1:
        raise ValueError(f"d_k and n must be at least 1, got d_k={d_k} and n={n}.")
    first, second = np.empty(n), np.empty(n)
    rows = max(1, _CHUNK_ENTRIES // d_k)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        q, k1, k2 = unit_components((3, stop - start, d_k), rng, dist)
        first[start:stop] = np.einsum("ij,ij->i", q, k1)
        second[start:stop] = np.einsum("ij,ij->i", q, k2)
    return first, second


def share_of_dominated_rows(
    d_k: int,
    n_keys: int,
    n_rows: int,
    rng: np.random.Generator,
    *,
    scale: bool = False,
    above: float = 0.5,
) -> float:
    """The share of softmax rows in which one key gets more than ``above`` of the weight.

    Formula: ``n_rows`` queries q and ``n_keys`` keys k with independent N(0, 1) entries;
    each row is ``softmax(q·k_j)`` over the keys (``softmax(q·k_j / √d_k)`` when ``scale``),
    and a row counts when its largest weight exceeds ``above``.

    Shapes: Q ``(n_rows, d_k)``, K ``(n_keys, d_k)``, the scores ``(n_rows, n_keys)``.
    Returns a float between 0 and 1.

    Lesson: ``notebooks/02_variance.ipynb`` (what √d_k-sized scores do to one row).
    """
    from ..softmax import saturated_share, softmax

    Q = rng.standard_normal((int(n_rows), int(d_k)))
    K = rng.standard_normal((int(n_keys), int(d_k)))
    scores = Q @ K.T / (np.sqrt(d_k) if scale else 1.0)
    return saturated_share(softmax(scores), above)


def shared_matrix_scores(
    d_k: int, n_rows: int, rng: np.random.Generator, n_keys: int = 256
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scaled scores when queries and keys come from one shared matrix, W_Q = W_K.

    Formula: then a token's key is its own query, so its self-score is q·q = ‖q‖², whose
    mean is d_k; scaled, ``own = ‖q‖² / √d_k`` has mean √d_k. A score against another
    token's key behaves like one against an independent key, ``other = q·k / √d_k``
    (mean 0, variance 1). ``weight`` is the softmax weight each query gives itself in a
    row with ``n_keys − 1`` independent keys: e^own / (e^own + Σ_j e^other_j).
    Entries of q and k are independent N(0, 1).

    Shapes: Q ``(n_rows, d_k)``, the other keys ``(n_keys − 1, d_k)``; returns ``own`` and
    ``weight`` of shape ``(n_rows,)`` and ``other`` of shape ``(n_rows, n_keys − 1)``.

    Lesson: ``notebooks/02_variance.ipynb`` (where the argument stops applying).
    """
    from ..softmax import softmax

    d_k, n_rows, n_keys = int(d_k), int(n_rows), int(n_keys)
    if d_k < 1 or n_rows < 1 or n_keys < 2:
        raise ValueError(
            f"d_k and n_rows must be at least 1 and n_keys at least 2, got d_k={d_k}, "
            f"n_rows={n_rows} and n_keys={n_keys}."
        )
    Q = rng.standard_normal((n_rows, d_k))
    K = rng.standard_normal((n_keys - 1, d_k))
    own = np.einsum("ij,ij->i", Q, Q) / np.sqrt(d_k)
    other = Q @ K.T / np.sqrt(d_k)
    weight = softmax(np.concatenate([own[:, None], other], axis=1))[:, 0]
    return own, other, weight


def excess_kurtosis(samples: ArrayLike) -> float:
    """The sample excess kurtosis E[(Z − μ)⁴] / σ⁴ − 3: 0 for a normal distribution.

    For q·k with N(0, 1) entries it is 6 / d_k in theory (a single product XY has
    E[X⁴] E[Y⁴] = 3 · 3 = 9, so 9 − 3 = 6, and a sum of d_k independent terms divides
    the excess kurtosis by d_k). Shapes: ``samples`` of shape ``(n,)``; returns a float.

    Lesson: ``notebooks/02_variance.ipynb`` (the central limit theorem at work).
    """
    z = np.asarray(samples, dtype=float)
    centred = z - z.mean()
    return float(np.mean(centred**4) / np.mean(centred**2) ** 2 - 3.0)


# E[X⁴] of one entry of each distribution (all have E[X²] = 1): 3 for a standard normal,
# a⁴/5 = 9/5 for uniform on [−a, a] with a = √3, and 1 for ±1.
FOURTH_MOMENTS = {"normal": 3.0, "uniform": 9 / 5, "rademacher": 1.0}


def relative_standard_error(d_ks: Sequence[int], n: int, fourth_moment: float = 3.0) -> np.ndarray:
    """The relative standard error of a variance of q·k measured from ``n`` samples.

    Formula: se = √((κ − 1) / n), with κ = E[(Z − μ)⁴] / σ⁴ the kurtosis of q·k; for d_k
    independent products of entries with E[X⁴] = ``fourth_moment`` (see ``FOURTH_MOMENTS``),
    κ = 3 + (E[X⁴]² − 3) / d_k. It is 0 for ±1 entries at d_k = 1, whose score is always ±1.

    Shapes: ``d_ks`` of shape ``(m,)``; returns a float64 array ``(m,)``.

    Lesson: ``notebooks/02_variance.ipynb`` (the band of the figure on three kinds of entries).
    """
    d = np.asarray(d_ks, dtype=float)
    return np.sqrt(np.maximum(2 + (fourth_moment**2 - 3) / d, 0.0) / n)


def standard_errors_off(
    d_ks: Sequence[int], variances: ArrayLike, n: int, fourth_moment: float = 3.0
) -> np.ndarray:
    """How many standard errors each measured variance of q·k lies from its theory, d_k.

    Formula: a variance measured from ``n`` samples has relative standard error
    se = √((κ − 1) / n), where κ = E[(Z − μ)⁴] / σ⁴ is the kurtosis of the samples; for q·k
    with d_k independent products of entries with E[X⁴] = ``fourth_moment`` (3 for normal,
    9/5 for uniform, 1 for ±1 entries), κ = 3 + (E[X⁴]² − 3) / d_k. Returns
    z = |variance / d_k − 1| / se, NaN where se is 0 (±1 entries at d_k = 1, whose score
    is always ±1, so its variance has no spread).

    Shapes: ``d_ks`` and ``variances`` of shape ``(m,)``; returns a float64 array ``(m,)``.

    Lesson: ``notebooks/02_variance.ipynb`` (the figure on three kinds of entries).
    """
    d = np.asarray(d_ks, dtype=float)
    ratio = np.asarray(variances, dtype=float) / d
    se = relative_standard_error(d_ks, n, fourth_moment)
    z = np.full(d.shape, np.nan)
    np.divide(np.abs(ratio - 1), se, out=z, where=se > 0)
    return z


# --- figures --------------------------------------------------------------------------------


def plot_variance_vs_dk(
    d_ks: Sequence[int],
    series: Mapping[str, ArrayLike],
    ax=None,
    *,
    theory: Mapping[str, ArrayLike] | None = None,
    title: str = "Measured variance of q·k",
    ylabel: str = "variance",
):
    """Measured variances (points) against d_k on log-log axes, with the theory as lines.

    ``series`` maps a label to one measured variance per d_k; ``theory`` maps a label
    to one predicted variance per d_k (default: ``{"theory: Var = d_k": d_ks}``),
    drawn as dashed lines. Returns the axes.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    from attnlab import plots

    ax = plots.axes(ax, figsize=(5.4, 3.6))
    d = np.asarray(d_ks, dtype=float)
    if theory is None:
        theory = {"theory: Var = d_k": d}
    for (label, values), line in zip(theory.items(), ["--", ":", "-."] * 3, strict=False):
        ax.plot(
            d,
            np.asarray(values, dtype=float),
            color="0.35",
            linestyle=line,
            linewidth=1.2,
            label=label,
            zorder=1,
        )
    # A filled circle, an open square and a cross stay distinguishable when they overlap.
    markers = [
        {"color": plots.ACCENT, "marker": "o", "markersize": 8, "alpha": 0.8},
        {
            "color": plots.SECOND,
            "marker": "s",
            "markersize": 7,
            "markerfacecolor": "none",
            "markeredgewidth": 1.5,
        },
        {"color": plots.THIRD, "marker": "x", "markersize": 6, "markeredgewidth": 1.5},
    ]
    shown = [np.asarray(v, dtype=float) for v in [*series.values(), *theory.values()]]
    for (label, values), style in zip(series.items(), markers * 3, strict=False):
        ax.plot(
            d, np.asarray(values, dtype=float), linestyle="none", label=label, zorder=2, **style
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(d, [f"{v:g}" for v in d])
    # Plain numbers on the y-axis too: powers of two, at most about six of them.
    lo = np.floor(np.log2(min(float(v.min()) for v in shown)))
    hi = np.ceil(np.log2(max(float(v.max()) for v in shown)))
    step = max(1, int(np.ceil((hi - lo) / 6)))
    ticks = 2.0 ** np.array([e for e in range(int(lo), int(hi) + 1) if e % step == 0])
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
    ax.minorticks_off()
    ax.set_xlabel("d_k (size of q and k)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_variance_ratios(
    d_ks: Sequence[int],
    series: Mapping[str, ArrayLike],
    n: int,
    fourth_moments: Mapping[str, float],
):
    """Measured Var(q·k) / d_k against d_k, one panel per distribution, with a ±2 SE band.

    ``series`` maps a distribution (a key of ``DISTRIBUTION_LABELS``, which titles its panel)
    to one measured variance per d_k; ``fourth_moments`` maps the same keys to E[X⁴] of one
    entry (see ``FOURTH_MOMENTS``). The band is 1 ± 2·se, with se from
    :func:`relative_standard_error` for ``n`` samples: if Var(q·k) = d_k holds, about 19 in
    20 measured ratios land inside it by chance. Returns the figure.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    import matplotlib.pyplot as plt

    from attnlab import plots

    d = np.asarray(d_ks, dtype=float)
    fig, axs = plt.subplots(
        1, len(series), figsize=(3.0 * len(series), 2.9), sharey=True, layout="constrained"
    )
    axs = np.atleast_1d(axs)
    colours = [plots.ACCENT, plots.SECOND, plots.THIRD]
    for i, (ax, (label, values)) in enumerate(zip(axs, series.items(), strict=True)):
        se = relative_standard_error(d_ks, n, fourth_moments[label])
        ax.fill_between(d, 1 - 2 * se, 1 + 2 * se, color="0.8", label="1 ± 2 standard errors")
        ax.axhline(1.0, color="0.35", linestyle="--", linewidth=1.0)
        ax.plot(
            d,
            np.asarray(values, dtype=float) / d,
            "o",
            color=colours[i % len(colours)],
            label="measured / d_k",
        )
        ax.set_xscale("log", base=2)
        ax.set_xticks(d[::3], [f"{v:g}" for v in d[::3]])
        ax.minorticks_off()
        ax.set_xlabel("d_k")
        ax.set_title(DISTRIBUTION_LABELS.get(label, label), fontsize=10)
        ax.grid(True, alpha=0.3)
    axs[0].set_ylabel("Var(q·k) / d_k")
    axs[0].legend(fontsize=7, loc="lower right")
    return fig


def plot_histograms(
    samples: Mapping[int, np.ndarray],
    d_ks: Sequence[int],
    *,
    scaled: bool = False,
    limit: float | None = None,
    bins: int | None = None,
    logy: bool = False,
):
    """One histogram of q·k per d_k, side by side on the same x-range.

    Each panel is titled with d_k and the measured standard deviation, and shows
    the normal curve with the theory's standard deviation (√d_k, or 1 when
    ``scaled``, where the samples are divided by √d_k first). ``bins``: the number of
    bins in every panel; by default each panel gets its own, a quarter of its theory
    standard deviation wide, so a narrow histogram is not drawn as one coarse bar.
    ``logy``: a logarithmic density axis, on which rare values far from 0 (the tails)
    show and a normal curve is a downward parabola; it reaches down to half the height
    of a bin that holds a single sample. Returns the figure.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    from attnlab import plots

    if limit is None:
        limit = 5.0 if scaled else float(np.ceil(3.5 * np.sqrt(max(d_ks)) / 10) * 10)
    fig, axs = plt.subplots(
        1, len(d_ks), figsize=(3.3 * len(d_ks), 2.9), sharex=True, layout="constrained"
    )
    axs = np.atleast_1d(axs)
    x = np.linspace(-limit, limit, 400)
    what = "q·k / √d_k" if scaled else "q·k"
    tops: list[float] = []
    one_sample: list[float] = []
    for ax, d in zip(axs, d_ks, strict=True):
        values = samples[d] / np.sqrt(d) if scaled else samples[d]
        std = float(np.std(values, ddof=1))
        theory_std = 1.0 if scaled else np.sqrt(d)
        panel_bins = bins or int(np.clip(np.ceil(2 * limit / (theory_std / 4)), 20, 400))
        hist = plots.histogram(
            values,
            ax,
            bins=panel_bins,
            range=(-limit, limit),
            xlabel=what,
            title=f"d_k = {d}: measured std {std:.2f}",
        )
        peak = 1 / (theory_std * np.sqrt(2 * np.pi))  # the normal curve's height at 0
        ax.plot(
            x,
            peak * np.exp(-0.5 * (x / theory_std) ** 2),
            color=plots.SECOND,
            linewidth=1.3,
            label=f"normal, std {theory_std:.2f}",
        )
        ax.legend(fontsize=7, loc="upper right")
        ax.set_xlim(-limit, limit)
        top = max(float(hist.patch.get_data().values.max()), peak)
        ax.set_ylim(0, 1.3 * top)  # room for the legend above the peak
        tops.append(top)
        one_sample.append(1 / (values.size * (2 * limit / panel_bins)))  # density of one count
    if logy:
        for ax in axs:  # one y-range for every panel, so that the tails compare directly
            ax.set_yscale("log")
            ax.set_ylim(min(one_sample) / 2, 8 * max(tops))  # room for the legend on top
            # Eight unlabelled ticks per decade add nothing to read here, and each one
            # costs layout time every time the figure is drawn.
            ax.yaxis.set_minor_locator(NullLocator())
    return fig


def normal_tail(t: float) -> float:
    """P(|Z| > t) for a standard normal Z: erfc(t / √2), the share of a normal distribution
    more than ``t`` standard deviations from its mean (about 6.3e-5 for t = 4).

    Shapes: a float in, a float out. Lesson: ``notebooks/02_variance.ipynb`` (how far the
    tails of a single product XY reach, against a normal distribution's).
    """
    import math

    return math.erfc(float(t) / math.sqrt(2.0))


# How four common recipes initialise a projection W of shape (d_in, d_out): name → a
# function (rng, d_in, shape) drawing it.
INITIALISATIONS = {
    # LeCun normal, the default of Flax's nn.Dense (which truncates the normal and keeps
    # its variance 1/d_in): q = xW then has unit variance.
    "LeCun normal, N(0, 1/d)": lambda rng, d_in, shape: rng.normal(0, 1 / np.sqrt(d_in), shape),
    # PyTorch's default for nn.Linear, kaiming_uniform with a = √5: U(−1/√d_in, 1/√d_in),
    # whose variance is (2/√d_in)²/12 = 1/(3 d_in).
    "PyTorch nn.Linear, U(±1/√d)": lambda rng, d_in, shape: rng.uniform(
        -1 / np.sqrt(d_in), 1 / np.sqrt(d_in), shape
    ),
    # PyTorch's nn.MultiheadAttention: xavier_uniform_ on the packed in_proj_weight, which
    # stacks W_Q, W_K and W_V into one (3 d_in, d_in) matrix, so fan_in = d_in and
    # fan_out = 3 d_in: U(±a) with a = √(6/(fan_in + fan_out)), variance a²/3 = 1/(2 d_in).
    "PyTorch MultiheadAttention, U(±√(6/4d))": lambda rng, d_in, shape: rng.uniform(
        -np.sqrt(6 / (d_in + 3 * d_in)), np.sqrt(6 / (d_in + 3 * d_in)), shape
    ),
    "GPT-2, N(0, 0.02²)": lambda rng, d_in, shape: rng.normal(0, 0.02, shape),
}


def initial_spread(
    rng: np.random.Generator,
    d_model: int = 768,
    d_k: int = 64,
    n_tokens: int = 256,
    n_sequences: int = 8,
    saturated: float = 0.99,
) -> dict[str, dict[str, float]]:
    """Queries and keys of an untrained layer under each of ``INITIALISATIONS``.

    Tokens x have entries of mean 0 and variance 1 (as after LayerNorm); q = x W_Q and
    k = x W_K with both W drawn by the recipe. For each recipe: the variance of an entry
    of q, the standard deviation of the raw scores q·k and of q·k / √d_k, and the share
    of rows (one query against all ``n_tokens`` keys of its sequence) whose largest
    softmax weight is above ``saturated``, with and without the division.

    Shapes: x ``(n_sequences, n_tokens, d_model)``; W ``(d_model, d_k)``.
    Lesson: ``notebooks/02_variance.ipynb``.
    """
    from ..softmax import saturated_share, softmax

    x = rng.standard_normal((n_sequences, n_tokens, d_model))
    out = {}
    for name, draw in INITIALISATIONS.items():
        W_Q, W_K = draw(rng, d_model, (2, d_model, d_k))
        q, k = x @ W_Q, x @ W_K
        raw = q @ np.swapaxes(k, -1, -2)
        share = {
            label: saturated_share(softmax(s), saturated)
            for label, s in (("saturated_raw", raw), ("saturated_scaled", raw / np.sqrt(d_k)))
        }
        out[name] = {
            "var_q": float(q.var()),
            "std_raw": float(raw.std()),
            "std_scaled": float((raw / np.sqrt(d_k)).std()),
            **share,
        }
    return out
