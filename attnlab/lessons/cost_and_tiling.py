"""Experiments and figures for the lesson on cost, tiling and precision.

What is here: measurements of the time and memory of :func:`attnlab.attention` and
:func:`attnlab.tiled_attention` as the sequence grows; the bytes plain attention
holds at its peak; the online softmax written out block by block; and a bfloat16
emulation in NumPy. The figure functions only draw numbers the notebook computed
in the cell that calls them.

Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..attention import attention
from ..memory import measured_peak
from ..softmax import softmax
from ..tiled import tiled_attention

# ------------------------------------------------------------------------------- cost


def peak_bytes(fn, *args, **kwargs) -> int:
    """Peak of the memory allocated while ``fn(*args, **kwargs)`` runs, in bytes.

    Every temporary NumPy array counts; memory allocated before the call does not
    (see :func:`attnlab.memory.measured_peak`).
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    return measured_peak(lambda: fn(*args, **kwargs))[1]


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
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
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

    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    peaks = []
    for n in np.asarray(ns, dtype=int):
        Q, K, V = random_qkv(int(n), d)
        peaks.append(peak_bytes(tiled_attention, Q, K, V, block_size=block_size))
    return np.array(peaks, dtype=np.int64)


def fitted_slope(ns, values) -> float:
    """The slope of the straight line through ``(log n, log value)``: the power p in value ∝ n^p.

    Fitted by least squares, ``np.polyfit(log n, log value, 1)``.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    slope, _ = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(values, float)), 1)
    return float(slope)


def attention_peak_bytes(n: int, d: int, bytes_per_number: int) -> int:
    """Bytes plain attention holds at its peak, for n queries and n keys of width d.

    Formula: ``(2 n² + 4 n d) · bytes_per_number``: the scores S and the weights P,
    two n × n matrices alive at once inside the softmax, plus the four n × d arrays
    Q, K, V and the output O. For long sequences the n² part is nearly all of it.

    Shapes: numbers in, one whole number of bytes out.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    return (2 * n * n + 4 * n * d) * bytes_per_number


def longest_sequence(memory_bytes: int, d: int, bytes_per_number: int) -> int:
    """The longest sequence whose attention peak fits in ``memory_bytes``.

    The largest whole ``n`` with ``attention_peak_bytes(n, d, b) ≤ memory_bytes``:
    ``2n² + 4nd ≤ N`` (``N`` the whole numbers that fit) is ``(n + d)² ≤ N/2 + d²``, so
    ``n = isqrt(N // 2 + d²) − d``, exact for budgets of any size. Doubling the memory
    gives about √2 times the sequence, not twice.

    Shapes: whole numbers in, one whole number of tokens out.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    numbers = int(memory_bytes) // int(bytes_per_number)
    return math.isqrt(numbers // 2 + int(d) * int(d)) - int(d)


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
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
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
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(6.2, 3.6), layout="constrained")
    _fit_line(ax, ns, np.asarray(full) / 2**20, plots.SECOND, "attention, weights returned")
    _fit_line(ax, ns, np.asarray(tiled) / 2**20, plots.THIRD, "tiled_attention")
    _log_axes(ax, list(ns), "peak memory: full against tiled", "MiB")
    return fig


# ---------------------------------------------------------------------- online softmax


EXAMPLE_SEED = 64
EXAMPLE_BLOCK_SIZE = 4


def example_row() -> tuple[np.ndarray, np.ndarray]:
    """One query's 12 scores and one value number per key, with a late, large score.

    Scores are normal with standard deviation 2 and values standard normal, both rounded
    to one decimal (seed ``EXAMPLE_SEED``); score 9 is set to 6.0, so the running
    maximum jumps in the last block of 4.

    Shapes: returns scores ``(12,)`` and values ``(12,)``.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    rng = np.random.default_rng(EXAMPLE_SEED)
    scores = np.round(rng.normal(scale=2.0, size=12), 1)
    values = np.round(rng.normal(size=12), 1)
    scores[9] = 6.0
    return scores, values


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
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
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
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
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
    Returns ``{format: (median relative error of the scores, largest absolute error of the
    output)}``. The output's error is absolute, not relative to the output's size: an
    unscaled, peaky softmax copies single value rows and so has larger outputs, and
    dividing by their size would hide part of the damage.

    Shapes: Q ``(n_q, d_k)``, K ``(n_k, d_k)``, V ``(n_k, d_v)``.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    S = scale * (Q @ K.T)
    exact = softmax(S) @ V
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
            float(np.abs(output - exact).max()),
        )
    return out
