"""Experiments and figures for the lesson on cost, tiling and precision.

What is here: measurements of the time and memory of :func:`attnlab.attention` and
:func:`attnlab.tiled_attention` as the sequence grows, stage by stage, with BLAS on one
thread; the bytes plain attention holds at its peak; the online softmax written out block
by block, and the merge of two blocks' running maximum and sum; a bfloat16 emulation in
NumPy, with what rounding the scores, the weights and a long running sum costs. The figure
functions only draw numbers the notebook computed in the cell that calls them (the tile
diagram draws no numbers at all).

Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..attention import attention
from ..blas import one_blas_thread
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


def _process_time_tick(samples: int = 3, cap: float = 0.05) -> float:
    """The smallest step seen in ``time.process_time``, in seconds; infinity if it never moved.

    Spins until the processor-time clock changes, ``samples`` times, giving up after ``cap``
    seconds of wall time. The reported resolution cannot be trusted: Windows reports 1e-7 s,
    but its processor time moves in steps of about 15.6 ms.
    """
    steps: list[float] = []
    end = time.perf_counter() + cap
    last = time.process_time()
    while len(steps) < samples and time.perf_counter() < end:
        now = time.process_time()
        if now != last:
            steps.append(now - last)
            last = now
    return min(steps) if steps else math.inf


@functools.cache
def _clock():
    """The processor time this program has used, if it ticks finely, else the wall clock.

    Processor time (``time.process_time``) leaves out the time spent waiting while other
    programs use the processor, so it is far steadier on a shared machine. It is used only
    where its measured tick (:func:`_process_time_tick`) is at most 10 microseconds, and
    never on Windows, where it moves every 15.6 ms; elsewhere the wall clock
    ``time.perf_counter`` is used. Chosen once per session.
    """
    if sys.platform != "win32" and _process_time_tick() <= 1e-5:
        return time.process_time
    return time.perf_counter


def best_time(fn, *args, repeats: int = 5, budget: float = 0.3, **kwargs) -> float:
    """The fastest of up to ``repeats`` runs of ``fn(*args, **kwargs)``, in seconds.

    Each run is timed in processor time where the system counts it finely (see
    :func:`_clock`). Stops after two runs once ``budget`` seconds of wall time are spent.
    Other programs only ever slow a run down, so the fastest run is the best estimate of
    the cost itself.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    clock = _clock()
    runs: list[float] = []
    spent = time.perf_counter()
    while len(runs) < max(1, repeats):
        start = clock()
        fn(*args, **kwargs)
        runs.append(clock() - start)
        if len(runs) >= 2 and time.perf_counter() - spent > budget:
            break
    return max(min(runs), 1e-9)


@dataclass
class Cost:
    """Seconds (best of the repeats) and peak bytes of :func:`attnlab.attention`, per n."""

    ns: np.ndarray
    seconds: np.ndarray
    peak_bytes: np.ndarray
    d: int
    one_thread: bool = False  # whether BLAS really ran on one thread (see one_blas_thread)


def measure_cost(
    ns, d: int = 64, repeats: int = 5, budget: float = 0.3, timed: bool = True
) -> Cost:
    """Measure the peak memory of ``attention(Q, K, V)`` and, if ``timed``, time it.

    Each n is timed with :func:`best_time` (``repeats`` runs at most, two once ``budget``
    seconds are spent) with BLAS on one thread (:func:`one_blas_thread`); with
    ``timed=False`` the seconds are NaN and only the memory is measured. The peak memory
    comes from one call traced by tracemalloc, in float32: inside the call the (n, n)
    scores and weights exist whether or not the weights are returned, so the peak is the
    same either way. One untimed call first warms up NumPy's and the processor's caches.
    ``Cost.one_thread`` says whether BLAS really was limited to one thread.

    Shapes: ``ns`` a list of sequence lengths; Q, K, V are (n, d) each.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb`` (memory only; its three stages are
    timed by :func:`measure_stages`).
    """
    ns = np.asarray(ns, dtype=int)
    seconds, peaks = [], []
    with one_blas_thread() as one_thread:
        attention(*random_qkv(int(ns[0]), d))  # warm-up, not timed
        for n in ns:
            Q, K, V = random_qkv(int(n), d)
            peaks.append(peak_bytes(attention, Q, K, V))
            if timed:
                seconds.append(best_time(attention, Q, K, V, repeats=repeats, budget=budget))
            else:
                seconds.append(np.nan)
    return Cost(ns, np.array(seconds), np.array(peaks, dtype=np.int64), d, one_thread)


STAGES = ("Q Kᵀ", "softmax", "P V")


@dataclass
class StageTimes:
    """Seconds (best of the repeats) of the three stages of attention, one row per n.

    ``seconds[i, j]`` is stage ``STAGES[j]`` at length ``ns[i]``.
    """

    ns: np.ndarray
    seconds: np.ndarray  # (len(ns), 3)
    d: int
    one_thread: bool = False  # whether BLAS really ran on one thread (see one_blas_thread)


def _softmax_into(S: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``S`` written into ``out`` (same shape), allocating only (n, 1) arrays.

    Formula: ``out = exp(S - max_j S) / Σ_j exp(S - max_j S)``, the same numbers as
    :func:`attnlab.softmax`, but without making a new (n, n) array.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    np.subtract(S, S.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)
    return out


def measure_stages(ns, d: int = 64, repeats: int = 5, budget: float = 0.3) -> StageTimes:
    """Time the three stages of attention separately, with BLAS on one thread.

    ``S = (Q/√d) Kᵀ`` (a matrix product, n² d multiply-adds), ``P = softmax(S)`` (a few
    passes over n² numbers, no multiply-adds), ``O = P V`` (another n² d multiply-adds), all
    in float32, each timed with :func:`best_time`. Each stage writes into an output array
    made before the timer starts (``np.matmul(..., out=...)``, :func:`_softmax_into`), so
    the time is the stage's own work, not the system handing over fresh memory.

    Shapes: ``ns`` a list of sequence lengths; Q, K, V (n, d); returns (len(ns), 3) seconds.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    ns = np.asarray(ns, dtype=int)
    rows = []
    with one_blas_thread() as one_thread:
        for n in ns:
            Q, K, V = random_qkv(int(n), d)
            A = Q * np.float32(1 / math.sqrt(d))
            S = A @ K.T  # also the buffer the first stage writes into
            P = _softmax_into(S, np.empty_like(S))
            O = P @ V
            rows.append(
                [
                    best_time(np.matmul, A, K.T, out=S, repeats=repeats, budget=budget),
                    best_time(_softmax_into, S, P, repeats=repeats, budget=budget),
                    best_time(np.matmul, P, V, out=O, repeats=repeats, budget=budget),
                ]
            )
    return StageTimes(ns, np.array(rows), d, one_thread)


def time_full_and_tiled(n: int = 2048, d: int = 64, block_size: int = 128) -> tuple[float, float]:
    """Seconds (best of a few runs, BLAS on one thread) of ``attention`` and ``tiled_attention``.

    The same float32 Q, K, V of shape (n, d); the weights are not returned.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    Q, K, V = random_qkv(n, d)
    with one_blas_thread():
        attention(Q, K, V)  # warm-up, not timed
        full = best_time(attention, Q, K, V)
        tiled = best_time(tiled_attention, Q, K, V, block_size=block_size)
    return full, tiled


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


def memory_traffic(n: int, d: int, block_q: int) -> tuple[int, int]:
    """Numbers moved between main memory and the chip: plain attention against tiled.

    Formula: plain attention reads Q, K, V and writes O (``4 n d``), and writes S, reads it
    back for the softmax, writes P and reads it back for the product with V (``4 n²``):
    ``4 n² + 4 n d``. Tiled attention with ``block_q`` queries per block (queries in the
    outer loop, as in FlashAttention-2) reads each block of Q and writes its O once
    (``2 n d``) and reads all of K and V once per block of queries (``2 n d · n / block_q``);
    its tiles of scores never leave the chip. For long sequences the ratio is about
    ``2 block_q / d``, whatever n is.

    Shapes: whole numbers in, two whole numbers (counts of numbers) out.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    query_blocks = -(-n // block_q)  # the last block may be shorter
    return 4 * n * n + 4 * n * d, 2 * n * d + 2 * n * d * query_blocks


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


def plot_cost(cost: Cost, stages: StageTimes | None = None):
    """Time per score and peak memory of attention against n.

    Left: nanoseconds per score, ``seconds / n² · 1e9``, against n on a log axis; a level
    line is a cost growing like n², a line that falls or rises is the machine bending it.
    With ``stages``, it shows Q Kᵀ, the softmax and P V, each timed on its own, and the
    three added up; without, the time of the whole ``attention`` call (``cost.seconds``).
    Right: peak memory on log-log axes with a fit, where a straight line of slope p means
    growth like n^p. The title says "one BLAS thread" only if the timings ran on one.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(9.5, 3.8), layout="constrained")
    if stages is None:
        ns = np.asarray(cost.ns, float)
        ax_t.plot(ns, cost.seconds / ns**2 * 1e9, "o-", color=plots.ACCENT, label="whole attention")
        one_thread = cost.one_thread
    else:
        ns = np.asarray(stages.ns, float)
        total = stages.seconds.sum(axis=1) / ns**2 * 1e9
        ax_t.plot(ns, total, "o-", color=plots.ACCENT, label="the three stages added up")
        # Wide to narrow, so that lines lying on top of each other all stay visible.
        styles = (("#7b5ea7", "s", 5, 9), ("#c0392b", "^", 2.5, 6), ("#16a085", "D", 1, 4))
        for name, style, column in zip(STAGES, styles, stages.seconds.T, strict=True):
            color, marker, width, size = style
            ax_t.plot(
                ns, column / ns**2 * 1e9, marker=marker, ms=size, lw=width, color=color, label=name
            )
        one_thread = stages.one_thread
    threads = "one BLAS thread" if one_thread else "BLAS threads as found"
    ax_t.set_xscale("log", base=2)
    ax_t.set_xticks(ns, [str(int(n)) for n in ns])
    ax_t.minorticks_off()
    ax_t.set_ylim(bottom=0)
    ax_t.set_title(f"time per score (d = {cost.d}, float32, {threads})")
    ax_t.set_xlabel("sequence length n (log scale)")
    ax_t.set_ylabel("nanoseconds per score")
    ax_t.legend(fontsize=8, loc="best")
    _fit_line(ax_m, cost.ns, cost.peak_bytes / 2**20, plots.SECOND, "measured (tracemalloc)")
    ax_m.plot(
        cost.ns,
        cost.ns.astype(float) ** 2 * 4 / 2**20,
        color="grey",
        lw=1,
        ls=":",
        label="the n × n float32 weights alone",
    )
    _log_axes(ax_m, cost.ns, "peak memory of attention", "MiB")
    return fig


def plot_memory(ns, full, tiled):
    """Peak memory of full attention and of tiled attention against n.

    Shapes: ``ns``, ``full`` and ``tiled`` (bytes) have one entry per sequence length.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(6.2, 3.6), layout="constrained")
    _fit_line(ax, ns, np.asarray(full) / 2**20, plots.SECOND, "attention")
    _fit_line(ax, ns, np.asarray(tiled) / 2**20, plots.THIRD, "tiled_attention")
    _log_axes(ax, list(ns), "peak memory: full against tiled", "MiB")
    return fig


def plot_tiles(n_query_blocks: int = 4, n_key_blocks: int = 6, current: tuple[int, int] = (1, 3)):
    """A diagram of tiled attention: query blocks × key blocks, and the state kept per query.

    The grid is the n × n score matrix cut into tiles; only the current tile's scores exist
    at any time. Tiles left of it in its row are done (folded into m, l, o), tiles right of
    it are still to come. Beside each query block: its running maximum m and sum l (one
    number per query) and its running output o (one row of d_v numbers per query).
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    from matplotlib.patches import Rectangle

    qi, kj = current
    fig, ax = plt.subplots(figsize=(6.6, 3.6), layout="constrained")
    for i in range(n_query_blocks):
        for j in range(n_key_blocks):
            if (i, j) == current:
                face, label = plots.ACCENT, "now"
            elif i == qi and j < kj:
                face, label = "#bcd7ee", "done"
            elif i < qi:
                face, label = "#e6e6e6", "done"
            else:
                face, label = "white", ""
            y = n_query_blocks - 1 - i
            ax.add_patch(Rectangle((j, y), 1, 1, facecolor=face, edgecolor="black", lw=1))
            color = "white" if (i, j) == current else "#555555"
            ax.text(j + 0.5, y + 0.5, label, ha="center", va="center", fontsize=8, color=color)
    for k, name in enumerate(["m", "l", "o"]):
        x = n_key_blocks + 0.6 + k * 0.75
        width = 0.3 if name != "o" else 0.7
        for i in range(n_query_blocks):
            y = n_query_blocks - 1 - i
            face = "#fde2c8" if i == qi else "white"
            ax.add_patch(Rectangle((x, y + 0.05), width, 0.9, facecolor=face, edgecolor="black"))
        ax.text(x + width / 2, n_query_blocks + 0.15, name, ha="center", fontsize=11)
    for j in range(n_key_blocks):
        ax.text(j + 0.5, n_query_blocks + 0.15, f"K{j}", ha="center", fontsize=9)
    ax.text(
        n_key_blocks + 0.6,
        -0.45,
        "per query: m and l one number each,\no one row of d_v numbers",
        fontsize=8,
        va="top",
    )
    ax.text(
        kj + 0.5,
        -0.45,
        "only this tile of scores exists:\nblock_q × block_k numbers",
        fontsize=8,
        ha="center",
        va="top",
        color=plots.ACCENT,
    )
    ax.set_xlim(-0.2, n_key_blocks + 3.4)
    ax.set_ylim(-1.3, n_query_blocks + 0.6)
    ax.set_xticks([])
    ax.set_yticks(
        np.arange(n_query_blocks) + 0.5, [f"Q{i}" for i in reversed(range(n_query_blocks))]
    )
    ax.tick_params(length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("blocks of keys (with their values), visited left to right in every row")
    ax.set_ylabel("blocks of queries")
    ax.set_title("tiled attention: one tile of scores at a time, m, l, o kept per query")
    ax.set_aspect("equal")
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


def block_state(scores, values) -> tuple[float, float, float]:
    """The online softmax's state of one block on its own: ``(m, l, o)``.

    Formula: ``m = max s``, ``l = Σ e^(s_j − m)``, ``o = Σ e^(s_j − m) v_j``.

    Shapes: ``scores`` and ``values`` 1-D of the same length (one value number per key,
    as in the lesson's table), at least one entry.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    s, v = np.asarray(scores, dtype=float), np.asarray(values, dtype=float)
    m = float(s.max())
    e = np.exp(s - m)
    return m, float(e.sum()), float(e @ v)


def merge_states(
    m1: float, l1: float, o1: float, m2: float, l2: float, o2: float
) -> tuple[float, float, float]:
    """Merge the states ``(m, l, o)`` of two parts of a row into the state of the whole row.

    Formula: ``m = max(m1, m2)``, ``l = l1 e^(m1 − m) + l2 e^(m2 − m)``,
    ``o = o1 e^(m1 − m) + o2 e^(m2 − m)``: each part's sums were taken against its own
    maximum, and ``e^(s − m) = e^(s − m_i) e^(m_i − m)``. An empty part is ``(-inf, 0, 0)``.
    Every step of the online softmax is such a merge, of the keys seen so far with the new
    block; two halves of the keys handled apart (as split-KV decoding does on a GPU) are
    merged the same way, and any split of the row merges to the same state. ``o / l`` is
    the attention output.

    Shapes: six numbers in, three out (``o1``, ``o2`` may also be rows of d_v numbers).
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    m = max(m1, m2)
    if m == -np.inf:
        return m, 0.0, 0.0 * o1
    a, b = np.exp(m1 - m), np.exp(m2 - m)
    return m, float(l1 * a + l2 * b), o1 * a + o2 * b


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


def weight_rounding_errors(Q, K, V, scale: float) -> dict[str, tuple[float, float]]:
    """Output error from rounding the scores S, against rounding the weights P instead.

    Everything else in float64, as in :func:`rounding_errors`. A relative error ε in a
    score s becomes an error of about ε·|s| in the exponent, so a *relative* error ε·|s|
    in the weight; rounding the weight itself gives it a relative error ε, whatever its size.
    Returns ``{format: (largest output error rounding S, largest output error rounding P)}``
    for float16 and bfloat16.

    Shapes: Q ``(n_q, d_k)``, K ``(n_k, d_k)``, V ``(n_k, d_v)``.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    S = scale * (Q @ K.T)
    P = softmax(S)
    exact = P @ V
    rounders = {"float16": lambda x: x.astype(np.float16), "bfloat16": to_bfloat16}
    out = {}
    for name, rnd in rounders.items():
        via_s = softmax(rnd(S).astype(np.float64)) @ V
        via_p = rnd(P).astype(np.float64) @ V
        out[name] = (float(np.abs(via_s - exact).max()), float(np.abs(via_p - exact).max()))
    return out


def grid_qkv(seed: int, n_q: int = 64, n_k: int = 256, d: int = 64):
    """Q ``(n_q, d)``, K and V ``(n_k, d)``, standard normal on a grid of steps of 2^-12.

    On that grid every product and sum of the scores is exact in float64, so the scores
    (and what rounding them costs) are the same on every processor.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    rng = np.random.default_rng(seed)
    return tuple(np.round(rng.normal(size=(m, d)) * 2**12) / 2**12 for m in (n_q, n_k, n_k))


def input_rounding_errors(Q, K, V, scale: float) -> dict[str, tuple[float, float, float]]:
    """Output error when Q and K arrive in a 16-bit format, with S kept in float32 or not.

    For float16 and bfloat16: the largest output error (against the exact float64 output)
    when only ``S`` is stored in the format; when ``Q`` and ``K`` are rounded to the format
    and ``S = scale · Q Kᵀ`` is then computed exactly (a float32 S adds nothing measurable);
    and when ``Q``, ``K`` and ``S`` are all rounded. Softmax and ``· V`` are in float64, as in
    :func:`rounding_errors`. Returns ``{format: (S only, Q and K, Q, K and S)}``.

    Shapes: Q ``(n_q, d_k)``, K ``(n_k, d_k)``, V ``(n_k, d_v)``.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    exact = softmax(scale * (Q @ K.T)) @ V
    rounders = {
        "float16": lambda x: x.astype(np.float16).astype(np.float64),
        "bfloat16": lambda x: to_bfloat16(x).astype(np.float64),
    }
    out = {}
    for name, rnd in rounders.items():
        S_in = scale * (rnd(Q) @ rnd(K).T)
        errors = [
            np.abs(softmax(rnd(scale * (Q @ K.T))) @ V - exact).max(),
            np.abs(softmax(S_in) @ V - exact).max(),
            np.abs(softmax(rnd(S_in)) @ V - exact).max(),
        ]
        out[name] = (float(errors[0]), float(errors[1]), float(errors[2]))
    return out


def running_sum(values, fmt: str) -> float:
    """Add ``values`` one after another, rounding the running total to ``fmt`` after each step.

    ``fmt`` is "float64", "float32", "float16" or "bfloat16" (emulated with
    :func:`to_bfloat16`: each sum is formed in float32 and rounded). Once the total is
    large, a term less than half the spacing between neighbouring numbers of the format
    near the total is lost, and every other term is rounded to that spacing, so the total
    falls behind. Returns the total as a Python float.

    Shapes: ``values`` 1-D.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    rounders = {
        "float64": np.float64,
        "float32": np.float32,
        "float16": np.float16,
        "bfloat16": lambda x: to_bfloat16(np.float32(x))[()],
    }
    rnd = rounders[fmt]
    total = rnd(0.0)
    for v in np.asarray(values, dtype=np.float64):
        total = rnd(np.float32(total) + np.float32(rnd(v))) if fmt != "float64" else total + v
    return float(total)


def error_against_spread(stds, seed: int = 3, n_q: int = 64, n_k: int = 256, d: int = 64):
    """Largest output error from storing S in each format, for scores of growing spread.

    Q and K are standard normal (on a grid of 2^-12, so every score is exact in float64),
    V standard normal; the scores ``Q Kᵀ · c`` are scaled by ``c`` so that their standard
    deviation is each entry of ``stds``. Returns ``(errors, largest)``: ``errors[fmt]`` an
    array over ``stds`` (as :func:`rounding_errors`), and ``largest`` the largest score at
    each spread.

    Shapes: ``stds`` 1-D; Q (n_q, d), K and V (n_k, d).
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    Q, K, V = grid_qkv(seed, n_q, n_k, d)
    raw_std = float((Q @ K.T).std())
    errors: dict[str, list[float]] = {"float32": [], "float16": [], "bfloat16": []}
    largest = []
    for std in np.asarray(stds, dtype=float):
        scale = std / raw_std
        for fmt, (_, out_err) in rounding_errors(Q, K, V, scale).items():
            errors[fmt].append(out_err)
        largest.append(float(np.abs(scale * (Q @ K.T)).max()))
    return {k: np.array(v) for k, v in errors.items()}, np.array(largest)


def plot_error_against_spread(stds, errors, largest=None):
    """Output error against the scores' standard deviation, one line per format (log y).

    Dotted lines mark spread 1 (scores scaled by 1/√d_k) and spread 8 (unscaled, d_k = 64).
    ``largest`` (the largest score at each spread) may be passed but is not drawn: it does
    not matter here, since the softmax subtracts each row's maximum first.
    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    colors = {"float32": "grey", "float16": plots.SECOND, "bfloat16": plots.ACCENT}
    for fmt, err in errors.items():
        ax.plot(stds, err, "o-", ms=3, color=colors[fmt], label=f"S stored in {fmt}")
    for spread, label in [(1.0, " scaled\n (÷√64)"), (8.0, " unscaled\n (d_k = 64)")]:
        if min(stds) <= spread <= max(stds):
            ax.axvline(spread, color="black", ls=":", lw=1)
            ax.text(spread, 0.04, label, fontsize=7, transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    ax.set_xlabel("standard deviation of the scores")
    ax.set_ylabel("largest output error")
    ax.set_title("what storing S in 16 bits costs, by the spread of the scores")
    ax.legend(fontsize=8, loc="center right")
    return fig
