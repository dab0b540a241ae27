"""Experiments and figures for the full-attention lesson: heads, masks, patterns, cost, tiling.

What is here: constructions of queries and keys that give the classic attention
patterns; dropout on the weights; the size of a key/value cache; measurements
of the time and memory of :func:`attnlab.attention` and :func:`attnlab.tiled_attention`
as the sequence grows; the online softmax written out block by block; and a
bfloat16 emulation in NumPy. The figure functions only draw numbers the
notebook computed in the cell that calls them.

Lesson: ``notebooks/06_full_attention.ipynb``.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..attention import attention
from ..softmax import entropy, softmax
from ..tiled import tiled_attention

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
    Lesson: ``notebooks/06_full_attention.ipynb``.
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
    Lesson: ``notebooks/06_full_attention.ipynb``.
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
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    return softmax(beta * (np.asarray(Q, float) @ np.asarray(K, float).T))


def row_entropy(W) -> np.ndarray:
    """Entropy of each row in nats, ``-Σ_j w_j log w_j`` (0 log 0 = 0): 0 one-hot, log n uniform.

    Shapes: ``(..., n)`` → ``(...)``.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    return entropy(np.asarray(W, dtype=float))


def plot_patterns(weights: dict, suptitle: str = ""):
    """The weight matrices of several patterns side by side, on one 0..1 colour scale.

    Shapes: each value of ``weights`` is ``(n, n)``; the keys are the panel titles.
    Lesson: ``notebooks/06_full_attention.ipynb``.
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


def padding_mask(lengths, n: int) -> np.ndarray:
    """Which keys are real tokens: ``mask[b, j] = j < lengths[b]``.

    Shapes: ``lengths`` ``(batch,)`` → bool ``(batch, n)``. Add axes with
    ``mask[:, None, :]`` so it broadcasts over the queries, or
    ``mask[:, None, None, :]`` over heads and queries.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    lengths = np.asarray(lengths)
    return np.arange(n)[None, :] < lengths[:, None]


def plot_masks(panels: dict, weights=None, weights_title: str = "weights"):
    """Bool masks (True = may attend) as 0/1 heatmaps, and optionally the weights they give.

    Shapes: each mask in ``panels`` and ``weights`` is ``(n_q, n_k)``.
    Lesson: ``notebooks/06_full_attention.ipynb``.
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
    Lesson: ``notebooks/06_full_attention.ipynb``.
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
    Lesson: ``notebooks/06_full_attention.ipynb``.
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


def kv_cache_floats(n_tokens: int, n_kv_heads: int, d_head: int, n_layers: int = 1) -> int:
    """How many numbers a key/value cache holds: ``2 · layers · tokens · H_kv · d_head``.

    The 2 counts keys and values. Query heads don't appear: with multi-query
    (H_kv = 1) or grouped-query attention, several query heads read one cached
    key/value head.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    return 2 * n_layers * n_tokens * n_kv_heads * d_head


# ------------------------------------------------------------------------------- cost


def peak_bytes(fn, *args, **kwargs) -> int:
    """Peak of the memory allocated while ``fn(*args, **kwargs)`` runs, in bytes (tracemalloc).

    NumPy reports its array buffers to tracemalloc, so this counts every
    temporary array; memory allocated before the call is not counted.
    The garbage collector is run first and paused during the call: otherwise it
    may free earlier garbage (a notebook's closed figures, say) in the middle of
    the call, and the figure would depend on when it happened to run.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    was_tracing, was_collecting = tracemalloc.is_tracing(), gc.isenabled()
    gc.collect()
    gc.disable()
    if not was_tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if not was_tracing:
            tracemalloc.stop()
        if was_collecting:
            gc.enable()


def random_qkv(n: int, d: int, seed: int = 0, dtype=np.float32):
    """Q, K, V of shape (n, d) with standard normal entries, in ``dtype``."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d), dtype=np.float32).astype(dtype) for _ in range(3))


@dataclass
class Cost:
    """Seconds (best of the repeats) and peak bytes of :func:`attnlab.attention`, per n."""

    ns: np.ndarray
    seconds: np.ndarray
    peak_bytes: np.ndarray
    d: int


def measure_cost(ns, d: int = 64, repeats: int = 5, budget: float = 0.3) -> Cost:
    """Time ``attention(Q, K, V, return_weights=True)`` and measure its peak memory.

    Each n is run ``repeats`` times (but only twice once ``budget`` seconds are
    spent on that n) and the fastest run kept: other programs only ever slow a run down. The
    first run of each n is also traced by tracemalloc for the peak memory, with the
    (n, n) weights returned, in float32 (tracing a handful of large arrays costs
    next to nothing). One untimed call first warms up NumPy's and the processor's
    caches.

    Shapes: ``ns`` a list of sequence lengths; Q, K, V are (n, d) each.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    ns = np.asarray(ns, dtype=int)
    seconds, peaks = [], []
    attention(*random_qkv(int(ns[0]), d))  # warm-up, not timed
    for n in ns:
        Q, K, V = random_qkv(int(n), d)
        runs: list[float] = []
        spent = time.perf_counter()
        while len(runs) < max(1, repeats):
            start = time.perf_counter()
            if runs:
                attention(Q, K, V, return_weights=True)
            else:
                peaks.append(peak_bytes(attention, Q, K, V, return_weights=True))
            runs.append(time.perf_counter() - start)
            if len(runs) >= 2 and time.perf_counter() - spent > budget:
                break
        seconds.append(min(runs))
    return Cost(ns, np.array(seconds), np.array(peaks, dtype=np.int64), d)


def tiled_peaks(ns, d: int = 64, block_size: int = 128) -> np.ndarray:
    """Peak bytes of :func:`attnlab.tiled_attention` for each n (float32, Q, K, V (n, d)).

    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    peaks = []
    for n in np.asarray(ns, dtype=int):
        Q, K, V = random_qkv(int(n), d)
        peaks.append(peak_bytes(tiled_attention, Q, K, V, block_size=block_size))
    return np.array(peaks, dtype=np.int64)


def fitted_slope(ns, values) -> float:
    """The slope of the straight line through ``(log n, log value)``: the power p in value ∝ n^p.

    Fitted by least squares, ``np.polyfit(log n, log value, 1)``.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    slope, _ = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(values, float)), 1)
    return float(slope)


def _fit_line(ax, ns, values, color, label):
    ns = np.asarray(ns, float)
    slope, intercept = np.polyfit(np.log(ns), np.log(np.asarray(values, float)), 1)
    ax.plot(
        ns,
        np.exp(intercept) * ns**slope,
        color=color,
        lw=1,
        ls="--",
        label=f"fit: slope {slope:.2f}",
    )
    return ax.plot(ns, values, "o-", color=color, label=label)


def _log_axes(ax, ns, title, ylabel):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.minorticks_off()
    ax.set_title(title)
    ax.set_xlabel("sequence length n (log scale)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, loc="upper left")


def plot_cost(cost: Cost):
    """Time and peak memory of attention (weights returned) against n on log-log axes, with fits.

    A straight line of slope p on log-log axes means the quantity grows like n^p.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9.5, 3.5), layout="constrained")
    _fit_line(ax_t, cost.ns, cost.seconds * 1e3, plots.ACCENT, "measured")
    _log_axes(ax_t, cost.ns, f"time, weights returned (d = {cost.d}, float32)", "milliseconds")
    _fit_line(ax_m, cost.ns, cost.peak_bytes / 2**20, plots.SECOND, "measured (tracemalloc)")
    ax_m.plot(
        cost.ns,
        cost.ns.astype(float) ** 2 * 4 / 2**20,
        color="grey",
        lw=1,
        ls=":",
        label="the n × n float32 weights alone",
    )
    _log_axes(ax_m, cost.ns, "peak memory, weights returned", "MiB")
    return fig


def plot_memory(ns, full, tiled):
    """Peak memory of full attention (weights returned) and of tiled attention against n.

    Shapes: ``ns``, ``full`` and ``tiled`` (bytes) have one entry per sequence length.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(6.2, 3.6), layout="constrained")
    _fit_line(ax, ns, np.asarray(full) / 2**20, plots.SECOND, "attention, weights returned")
    _fit_line(ax, ns, np.asarray(tiled) / 2**20, plots.THIRD, "tiled_attention")
    _log_axes(ax, list(ns), "peak memory: full against tiled", "MiB")
    return fig


# ---------------------------------------------------------------------- online softmax


@dataclass
class OnlineStep:
    """The state of the online softmax after one block of keys."""

    block: int
    keys: tuple[int, int]  # first and one-past-last key of the block
    block_max: float
    m: float  # running maximum after this block
    rescale: float  # exp(m_before - m): how much the old sum and output shrink
    l: float  # running sum of exp(s_j - m) over the keys seen so far
    o: np.ndarray  # running output Σ exp(s_j - m) v_j, not yet divided by l


def online_softmax_steps(scores, values, block_size: int) -> list[OnlineStep]:
    """The online softmax of one row of scores, block by block, with every intermediate state.

    For each block B: ``m' = max(m, max_B s)``, ``l' = e^{m − m'} l + Σ_B e^{s_j − m'}``,
    ``o' = e^{m − m'} o + Σ_B e^{s_j − m'} v_j``. After the last block,
    ``o / l`` is the attention output and ``e^{s − m} / l`` the weights.

    Shapes: ``scores`` ``(n,)``, ``values`` ``(n,)`` or ``(n, d_v)``.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    s = np.asarray(scores, dtype=float)
    v = np.asarray(values, dtype=float)
    m, l = -np.inf, 0.0
    o = np.zeros(v.shape[1:])
    steps = []
    for b, k0 in enumerate(range(0, s.size, block_size)):
        k1 = min(k0 + block_size, s.size)
        m_new = max(m, float(s[k0:k1].max()))
        rescale = float(np.exp(m - m_new))  # exp(-inf) = 0 on the first block
        e = np.exp(s[k0:k1] - m_new)
        l = rescale * l + float(e.sum())
        o = rescale * o + e @ v[k0:k1]
        m = m_new
        steps.append(OnlineStep(b, (k0, k1), float(s[k0:k1].max()), m, rescale, l, o.copy()))
    return steps


# ---------------------------------------------------------------------------- precision


def to_bfloat16(x) -> np.ndarray:
    """Round to the nearest bfloat16 (ties to even), returned as float32 holding that value.

    bfloat16 is the top half of a float32: the sign, all 8 exponent bits, and 7 of
    the 23 mantissa bits. Rounding adds ``0x7FFF`` plus the lowest kept bit to the
    32-bit pattern (so a tie rounds to an even kept part), then clears the low 16
    bits. Too large a value rounds to ±inf, like a real bfloat16; NaN stays NaN.

    Shapes: any; the result has the shape of ``x`` and dtype float32.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    x32 = np.array(x, dtype=np.float32, ndmin=1, copy=True)
    bits = x32.view(np.uint32)
    lowest_kept = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lowest_kept) & np.uint32(0xFFFF0000)
    rounded = np.where(np.isnan(x32), bits | np.uint32(0x00400000), rounded).astype(np.uint32)
    return rounded.view(np.float32).reshape(np.shape(x))


BFLOAT16_MAX = float(np.array(0x7F7F0000, dtype=np.uint32).view(np.float32))  # 0 11111110 1111111
BFLOAT16_EPS = 2.0**-7  # spacing of the 7 stored mantissa bits just above 1


def relative_error(approx, exact) -> np.ndarray:
    """``|approx − exact| / |exact|`` entry by entry (exact must have no zeros)."""
    exact = np.asarray(exact, dtype=np.float64)
    return np.abs(np.asarray(approx, dtype=np.float64) - exact) / np.abs(exact)


def rounding_errors(Q, K, V, scale: float) -> dict[str, tuple[float, float]]:
    """What rounding the scores to a number format does to the scores and to the output.

    ``S = scale · Q Kᵀ`` and ``O = softmax(S) V`` are computed in float64 (the exact
    result). For each format (float32, float16, bfloat16) the scores are rounded to it,
    as if ``S`` were stored in that format, and the softmax and the product with V
    are then computed in float64 from the rounded scores, so that every difference
    comes from the rounding of the scores alone.
    Returns ``{format: (median relative error of the scores, largest error of the output
    relative to the output's root mean square)}``.

    Shapes: Q ``(n_q, d_k)``, K ``(n_k, d_k)``, V ``(n_k, d_v)``.
    Lesson: ``notebooks/06_full_attention.ipynb``.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    S = scale * (Q @ K.T)
    exact = softmax(S) @ V
    size = np.sqrt(np.mean(exact**2))
    rounded = {
        "float32": S.astype(np.float32),
        "float16": S.astype(np.float16),
        "bfloat16": to_bfloat16(S),
    }
    out = {}
    for name, R in rounded.items():
        output = softmax(R.astype(np.float64)) @ V
        out[name] = (
            float(np.median(relative_error(R[S != 0], S[S != 0]))),
            float(np.abs(output - exact).max() / size),
        )
    return out
