"""Tests for lesson 07's experiments (``attnlab.lessons.cost_and_tiling``) and its exercises
``longest_sequence``, ``merge_states`` and ``online_softmax``
(``attnlab.exercises.ex07_cost_and_tiling``).
"""

import math
import time

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import attnlab
from attnlab import blas
from attnlab.exercises import check, exercise_ids, solution, solutions
from attnlab.exercises import ex07_cost_and_tiling as exercise
from attnlab.exercises.registry import get_exercise
from attnlab.lessons import cost_and_tiling as lesson

matplotlib.use("Agg")


def _softmax(S, axis=-1):
    e = np.exp(S - S.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------------ cost


def test_peak_bytes_sees_numpy_arrays():
    assert lesson.peak_bytes(np.ones, 10**6) >= 8 * 10**6
    assert lesson.peak_bytes(np.ones, 10**6) < 9 * 10**6


def test_measure_cost_and_tiled_peaks():
    cost = lesson.measure_cost([64, 256], d=8, repeats=2)
    assert list(cost.ns) == [64, 256] and cost.d == 8
    assert np.all(cost.seconds > 0)
    # The weights alone are n² float32 numbers.
    assert np.all(cost.peak_bytes >= cost.ns**2 * 4)
    assert cost.peak_bytes[1] > 8 * cost.peak_bytes[0]
    memory_only = lesson.measure_cost([64, 256], d=8, timed=False)
    assert np.all(np.isnan(memory_only.seconds))
    assert np.all(memory_only.peak_bytes >= memory_only.ns**2 * 4)
    tiled = lesson.tiled_peaks([1024], d=8)
    full = lesson.peak_bytes(attnlab.attention, *lesson.random_qkv(1024, 8), return_weights=True)
    assert tiled[0] < full / 4


def test_one_blas_thread_restores_the_setting_and_products_still_work():
    a = np.ones((64, 64), dtype=np.float32)
    with lesson.one_blas_thread() as pinned:
        assert isinstance(pinned, bool)
        assert float((a @ a)[0, 0]) == 64.0
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    with lesson.one_blas_thread() as pinned:
        # True exactly when a BLAS library is found and runs on one thread.
        assert pinned == bool(blas)
        if blas:
            assert all(
                p["num_threads"] == 1
                for p in threadpoolctl.threadpool_info()
                if p["user_api"] == "blas"
            )
    assert [
        p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"
    ] == [p["num_threads"] for p in blas]


def test_one_blas_thread_says_no_when_no_blas_is_found(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [])
    with lesson.one_blas_thread() as pinned:
        assert pinned is False
    cost = lesson.measure_cost([32, 64], d=4, repeats=1)
    assert cost.one_thread is False
    fig = lesson.plot_cost(cost)
    assert "one BLAS thread" not in fig.axes[0].get_title()
    matplotlib.pyplot.close(fig)
    functions = blas._openblas_thread_functions()
    if functions is not None:
        before = functions[0]()
        with lesson.one_blas_thread():
            assert functions[0]() == 1
        assert functions[0]() == before


class _FakeProcessTime:
    """A processor-time clock that advances 1 µs per call but reports it in steps of ``tick``."""

    def __init__(self, tick):
        self.tick, self.calls = tick, 0

    def __call__(self):
        self.calls += 1
        return math.floor(self.calls * 1e-6 / self.tick) * self.tick if self.tick else 0.0


@pytest.fixture
def fresh_clock():
    lesson._clock.cache_clear()
    yield
    lesson._clock.cache_clear()


@pytest.mark.parametrize(
    ("platform", "tick", "expected"),
    [
        ("linux", 1e-6, "process"),  # fine steps: processor time
        ("linux", 0.015625, "wall"),  # coarse steps, whatever the reported resolution
        ("linux", 0.0, "wall"),  # a clock that never moves
        ("win32", 1e-6, "wall"),  # never processor time on Windows
    ],
)
def test_clock_measures_the_real_tick(monkeypatch, fresh_clock, platform, tick, expected):
    fake = _FakeProcessTime(tick)
    monkeypatch.setattr(lesson.sys, "platform", platform)
    monkeypatch.setattr(lesson.time, "process_time", fake)
    chosen = lesson._clock()
    assert chosen is (fake if expected == "process" else time.perf_counter)
    assert lesson._clock() is chosen  # chosen once
    if tick:
        assert lesson._process_time_tick(cap=1.0) == pytest.approx(tick, rel=1e-6)


def test_best_time_keeps_the_fastest_run():
    calls = []
    assert lesson.best_time(calls.append, 1, repeats=3) >= 0
    assert calls == [1, 1, 1]
    calls.clear()
    lesson.best_time(lambda: calls.append(time.sleep(0.02)), repeats=10, budget=0.01)
    assert len(calls) == 2  # the budget stops it after two runs


def test_measure_stages_and_full_against_tiled():
    stages = lesson.measure_stages([64, 128], d=8, repeats=1)
    assert stages.seconds.shape == (2, len(lesson.STAGES)) and np.all(stages.seconds > 0)
    full, tiled = lesson.time_full_and_tiled(n=128, d=8, block_size=32)
    assert full > 0 and tiled > 0


def test_fitted_slope_recovers_a_power():
    ns = np.array([10, 20, 40, 80])
    assert lesson.fitted_slope(ns, 3.0 * ns**2) == pytest.approx(2.0)
    assert lesson.fitted_slope(ns, ns**0.5) == pytest.approx(0.5)


def test_random_qkv_is_seeded():
    a = lesson.random_qkv(5, 3, seed=2)
    b = lesson.random_qkv(5, 3, seed=2)
    assert all(np.array_equal(x, y) and x.dtype == np.float32 for x, y in zip(a, b, strict=True))
    assert lesson.random_qkv(5, 3, dtype=np.float64)[0].dtype == np.float64


# -------------------------------------------------------------- online softmax


def test_online_softmax_steps_give_attention():
    rng = np.random.default_rng(1)
    s = rng.normal(scale=3.0, size=11)
    v = rng.normal(size=11)
    steps = lesson.online_softmax_steps(s, v, block_size=4)
    assert [st.keys for st in steps] == [(0, 4), (4, 8), (8, 11)]
    assert steps[0].rescale == 0.0
    for k, st in enumerate(steps):
        seen = s[: st.keys[1]]
        assert st.m == seen.max()
        assert st.l == pytest.approx(np.exp(seen - st.m).sum())
        assert float(st.o) == pytest.approx(np.exp(seen - st.m) @ v[: st.keys[1]])
        if k:
            assert st.rescale == pytest.approx(math.exp(steps[k - 1].m - st.m))
    assert float(steps[-1].o) / steps[-1].l == pytest.approx(attnlab.softmax(s) @ v)


def test_online_softmax_steps_with_vector_values_and_huge_scores():
    s = np.array([1000.0, 1002.0, 999.0, 1010.0, 1005.0])
    V = np.arange(10.0).reshape(5, 2)
    last = lesson.online_softmax_steps(s, V, block_size=2)[-1]
    np.testing.assert_allclose(last.o / last.l, attnlab.softmax(s) @ V)


# ------------------------------------------------------------------ precision


def test_bfloat16_keeps_representable_values_and_clears_the_low_bits():
    exact = np.array([0.0, -0.0, 1.0, -2.5, 1 + 2**-7, 2.0**100, 2.0**-100], dtype=np.float32)
    np.testing.assert_array_equal(lesson.to_bfloat16(exact), exact)
    x = np.random.default_rng(2).normal(scale=100.0, size=1000).astype(np.float32)
    b = lesson.to_bfloat16(x)
    assert b.dtype == np.float32 and b.shape == x.shape
    assert np.all(b.view(np.uint32) & 0xFFFF == 0)
    assert np.all(np.abs(b - x) <= np.abs(x) * 2.0**-8)


def test_bfloat16_rounds_to_nearest_with_ties_to_even():
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)], dtype=np.float32)
    np.testing.assert_array_equal(lesson.to_bfloat16(ties), [1.0, 1 + 2**-6, -1.0])
    above = np.float32(1 + 2**-8 + 2**-20)
    assert lesson.to_bfloat16(above) == np.float32(1 + 2**-7)


def test_bfloat16_range_overflow_and_nan():
    assert lesson.BFLOAT16_MAX == (2 - 2**-7) * 2.0**127
    assert lesson.to_bfloat16(lesson.BFLOAT16_MAX) == lesson.BFLOAT16_MAX
    special = lesson.to_bfloat16(np.array([np.finfo(np.float32).max, -np.inf, np.nan]))
    assert special[0] == np.inf and special[1] == -np.inf and np.isnan(special[2])
    assert lesson.to_bfloat16(3.0).shape == ()
    assert lesson.BFLOAT16_EPS == 2.0**-7


def test_rounding_errors_grow_with_the_size_of_the_scores():
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(16, 32)), rng.normal(size=(40, 32)), rng.normal(size=(40, 8))
    small = lesson.rounding_errors(Q, K, V, scale=1 / 8)
    large = lesson.rounding_errors(Q, K, V, scale=1.0)
    assert set(small) == {"float32", "float16", "bfloat16"}
    assert small["float16"][0] <= 2.0**-11 and small["bfloat16"][0] <= 2.0**-8
    # Multiplying by 8 is exact: the scores' relative errors are the same ...
    assert small["bfloat16"][0] == pytest.approx(large["bfloat16"][0])
    # ... but the output's error grows with the size of the scores,
    for fmt in small:
        assert large[fmt][1] > 3 * small[fmt][1]
    # and the coarser the format, the larger the error.
    assert small["float32"][1] < small["float16"][1] < small["bfloat16"][1]


# -------------------------------------------------------------------- figures


def test_weights_round_more_gently_than_scores():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(m, 16)) for m in (8, 32, 32))
    for scale in (1.0, 2.0):  # scores of spread 4 and 8: |s| > 1, where ε·|s| > ε
        for via_s, via_p in lesson.weight_rounding_errors(Q, K, V, scale).values():
            assert 0 < via_p < via_s


def test_running_sum_loses_small_terms_in_16_bits():
    ones = np.ones(600)
    assert lesson.running_sum(ones, "float64") == 600
    assert lesson.running_sum(ones, "float32") == 600
    assert lesson.running_sum(ones, "bfloat16") == 256  # 256 + 1 rounds back to 256
    assert lesson.running_sum(ones, "float16") == 600  # float16 counts exactly to 2048
    assert lesson.running_sum(np.ones(3000), "float16") == 2048


def test_error_against_spread_grows_and_marks_the_overflow():
    stds = np.array([0.5, 2.0, 8.0])
    errors, largest = lesson.error_against_spread(stds, n_q=8, n_k=32, d=16)
    assert set(errors) == {"float32", "float16", "bfloat16"}
    assert np.all(np.diff(largest) > 0)
    assert errors["bfloat16"][-1] > errors["bfloat16"][0]
    assert np.all(errors["float32"] < errors["float16"])


def test_figures_have_titles_and_labels():
    cost = lesson.measure_cost([32, 64, 128], d=4, repeats=1)
    stages = lesson.measure_stages([32, 64, 128], d=4, repeats=1)
    stds = np.array([1.0, 6.0])
    figures = [
        lesson.plot_cost(cost),
        lesson.plot_cost(cost, stages),
        lesson.plot_tiles(),
        lesson.plot_error_against_spread(stds, *lesson.error_against_spread(stds, n_k=32)),
        lesson.plot_memory(cost.ns, cost.peak_bytes, cost.peak_bytes / 2),
    ]
    # With the stages, the time panel shows them and their sum, not the whole call.
    labels = [line.get_label() for line in figures[1].axes[0].get_lines()]
    assert labels == ["the three stages added up", *lesson.STAGES]
    for fig in figures:
        for ax in fig.axes:
            assert ax.get_title(), ax
            assert ax.get_xlabel() or ax.get_ylabel()
        matplotlib.pyplot.close(fig)


# ----------------------------------------------------- exercise: longest_sequence


def longest_by_search(memory_bytes, d, bytes_per_number):
    n = 0
    while lesson.attention_peak_bytes(n + 1, d, bytes_per_number) <= memory_bytes:
        n += 1
    return n


LONGEST_CORRECT = [
    solutions.longest_sequence,
    # the float root, truncated: exact at these sizes
    lambda memory_bytes, d, bytes_per_number: int(
        math.sqrt(memory_bytes / bytes_per_number / 2 + d * d) - d
    ),
    # returned as a float that is a whole number
    lambda memory_bytes, d, bytes_per_number: float(
        math.isqrt(memory_bytes // bytes_per_number // 2 + d * d) - d
    ),
]


@pytest.mark.parametrize("answer", LONGEST_CORRECT)
def test_correct_longest_sequence_answers_pass(answer):
    result = check("longest_sequence", answer)
    assert result.passed, result.message


@settings(max_examples=60, deadline=None)
@given(
    memory=hst.integers(0, 10**7),
    d=hst.integers(1, 256),
    b=hst.sampled_from([1, 2, 4, 8]),
)
def test_longest_sequence_is_the_largest_n_that_fits(memory, d, b):
    n = lesson.longest_sequence(memory, d, b)
    assert n >= 0
    assert n == 0 or lesson.attention_peak_bytes(n, d, b) <= memory
    assert lesson.attention_peak_bytes(n + 1, d, b) > memory
    assert n == exercise.longest_sequence(memory, d, b) == solutions.longest_sequence(memory, d, b)


def test_longest_sequence_matches_a_plain_search_on_small_budgets():
    for memory in (0, 135, 136, 2**12, 10**5):
        assert lesson.longest_sequence(memory, 8, 4) == longest_by_search(memory, 8, 4)


def test_a_slow_search_on_a_large_budget_is_told_to_double_and_halve():
    def count_up(memory_bytes, d, bytes_per_number):
        if memory_bytes < 10**9:
            return lesson.longest_sequence(memory_bytes, d, bytes_per_number)
        while True:  # as slow as counting up to tens of millions
            time.sleep(0.01)

    result = check("longest_sequence", count_up, timeout=0.2)
    assert not result.passed
    assert "double n" in result.message and "endless loop" not in result.message
    assert "about 12 million here" in result.message and "Expected" not in result.message

    def endless(memory_bytes, d, bytes_per_number):
        while True:
            time.sleep(0.01)

    result = check("longest_sequence", endless, timeout=0.2)
    assert "endless loop" in result.message and "double n" not in result.message


def test_off_by_one_on_a_large_budget_fails_although_within_tolerance():
    def one_more(memory_bytes, d, bytes_per_number):
        n = lesson.longest_sequence(memory_bytes, d, bytes_per_number)
        return n + 1 if memory_bytes > 10**9 else n

    result = check("longest_sequence", one_more)
    assert not result.passed
    assert "more than the" in result.message and "12,345,678 tokens" in result.message


def test_a_float32_root_fails_on_a_large_budget_and_is_told_about_its_digits():
    # Exact for float64 below 2**52, but float32 keeps about 7 digits: n + 1 at 12 million.
    def float32_root(memory_bytes, d, bytes_per_number):
        return int(np.floor(np.sqrt(np.float32(memory_bytes / bytes_per_number / 2 + d * d)) - d))

    result = check("longest_sequence", float32_root)
    assert not result.passed
    assert "float32 square root" in result.message and "math.isqrt" in result.message

    def float64_root(memory_bytes, d, bytes_per_number):
        numbers = memory_bytes // bytes_per_number
        return max(math.floor(math.sqrt(numbers / 2 + d * d) - d), 0)

    assert check("longest_sequence", float64_root).passed
    # A small slip at a small budget is not blamed on the root's digits.
    result = check("longest_sequence", lambda m, d, b: lesson.longest_sequence(m, d, b) + 1)
    assert "float32 square root" not in result.message


def test_forgetting_to_subtract_d_is_named():
    result = check(
        "longest_sequence",
        lambda memory_bytes, d, bytes_per_number: math.isqrt(
            memory_bytes // bytes_per_number // 2 + d * d
        ),
    )
    assert not result.passed and "about d tokens too many" in result.message


def test_the_measured_part_of_the_peak_is_named():
    # Cell 9's 2n² + 2nd, what tracemalloc sees inside attention, leaves out Q and K.
    result = check(
        "longest_sequence",
        lambda memory_bytes, d, bytes_per_number: (
            math.isqrt(memory_bytes // bytes_per_number // 2 + d * d // 4) - d // 2
        ),
    )
    assert not result.passed and "leaves out Q and K" in result.message, result.message


def test_an_unrounded_root_is_told_to_round_down():
    result = check(
        "longest_sequence",
        lambda memory_bytes, d, bytes_per_number: (
            math.sqrt(memory_bytes / bytes_per_number / 2 + d * d) - d
        ),
    )
    assert not result.passed and "Round down" in result.message


def test_the_extra_n_d_at_the_peak_is_the_copy_of_v_not_of_q():
    # S, P, the copy of V into the working dtype and O: 2 n² + 2 n d_v numbers; d_k has no effect.
    n = 1024
    for d_k, d_v in [(64, 8), (8, 64)]:
        rng = np.random.default_rng(0)
        Q, K = (rng.standard_normal((n, d_k), dtype=np.float32) for _ in range(2))
        V = rng.standard_normal((n, d_v), dtype=np.float32)
        measured = lesson.peak_bytes(attnlab.attention, Q, K, V, return_weights=True)
        assert abs(measured - (2 * n * n + 2 * n * d_v) * 4) < 0.02 * measured


def test_memory_traffic_ratio_is_about_2_block_q_over_d():
    plain, tiled = lesson.memory_traffic(4096, 64, 128)
    assert plain == 4 * 4096**2 + 4 * 4096 * 64
    assert tiled == 2 * 4096 * 64 + 2 * 4096 * 64 * 32
    for n in (2**12, 2**15, 2**17):
        plain, tiled = lesson.memory_traffic(n, 64, 128)
        assert 3.9 < plain / tiled < 4.0
    assert lesson.memory_traffic(100, 8, 64)[1] == 2 * 100 * 8 * (1 + 2)  # a short last block


def test_sixteen_bit_inputs_already_cost_16_bit_accuracy():
    Q, K, V = lesson.grid_qkv(0)
    assert all(np.array_equal(a, np.round(a * 2**12) / 2**12) for a in (Q, K, V))
    for s_only, qk, both in lesson.input_rounding_errors(Q, K, V, 1 / 8).values():
        assert 0 < qk and qk < both  # a second rounding, of S, adds to the first
        assert 0.1 < qk / s_only < 10  # the inputs' rounding is of the same size


def test_on_the_lessons_draw_a_float32_s_on_16_bit_inputs_stays_near_16_bit_error():
    # Lesson 07's "The fix": with 16-bit Q and K, S in float32 lowers the output error, but
    # it stays about that of storing S in 16 bits, far above float32's.
    Q, K, V = lesson.grid_qkv(69)
    float32_error = lesson.rounding_errors(Q, K, V, 1 / 8)["float32"][1]
    for s_only, qk, both in lesson.input_rounding_errors(Q, K, V, 1 / 8).values():
        assert qk < both < 3 * qk
        assert 0.5 < qk / s_only < 1
        assert qk > 1000 * float32_error


def test_the_peak_model_is_close_to_the_measured_peak_for_long_sequences():
    # tracemalloc sees what attention allocates; Q, K and V exist before the call.
    n, d = 1024, 16
    measured = lesson.peak_bytes(attnlab.attention, *lesson.random_qkv(n, d), return_weights=True)
    model = lesson.attention_peak_bytes(n, d, 4) - 3 * n * d * 4
    assert abs(measured - model) < 0.1 * model


# ------------------------------------------------------- exercise: online_softmax


def online_python_floats(scores, block_size):
    m, total = -math.inf, 0.0
    for start in range(0, len(scores), block_size):
        block = [float(x) for x in scores[start : start + block_size]]
        new = max(m, max(block))
        total = total * math.exp(m - new) + sum(math.exp(x - new) for x in block)
        m = new
    return [math.exp(float(x) - m) / total for x in scores]


def online_first_block_starts(scores, block_size):
    m = scores[:block_size].max()
    total = np.exp(scores[:block_size] - m).sum()
    for start in range(block_size, len(scores), block_size):
        block = scores[start : start + block_size]
        new = max(m, block.max())
        total = total * np.exp(m - new) + np.exp(block - new).sum()
        m = new
    return np.exp(scores - m) / total


def online_stores_and_rescales_parts(scores, block_size):
    parts, maxima, m, total = [], [], -np.inf, 0.0
    for start in range(0, len(scores), block_size):
        block = scores[start : start + block_size]
        new = max(m, block.max())
        total = total * np.exp(m - new) + np.exp(block - new).sum()
        m = new
        parts.append(np.exp(block - m))
        maxima.append(m)
    return np.concatenate([p * np.exp(mi - m) for p, mi in zip(parts, maxima, strict=True)]) / total


ONLINE_CORRECT = [
    solutions.online_softmax,
    online_python_floats,
    online_first_block_starts,
    online_stores_and_rescales_parts,
    lambda scores, block_size: solutions.online_softmax(scores.astype(np.float32), block_size),
]


@pytest.mark.parametrize("answer", ONLINE_CORRECT)
def test_correct_online_softmax_answers_pass(answer):
    result = check("online_softmax", answer)
    assert result.passed, result.message


def _online(scores, block_size, *, rescale="right"):
    m, total = -np.inf, 0.0
    for start in range(0, len(scores), block_size):
        block = scores[start : start + block_size]
        new = max(m, block.max())
        if rescale == "right":
            total = total * np.exp(m - new)
        elif rescale == "upside down":
            total = total * np.exp(new - m) if start else 0.0
        elif rescale == "upside down, unguarded":
            total = total * np.exp(new - m)
        total = total + np.exp(block - new).sum()
        m = new
    return np.exp(scores - m) / total


def _stale(scores, block_size):
    m, total, parts = -np.inf, 0.0, []
    for start in range(0, len(scores), block_size):
        block = scores[start : start + block_size]
        new = max(m, block.max())
        total = total * np.exp(m - new) + np.exp(block - new).sum()
        m = new
        parts.append(np.exp(block - m))
    return np.concatenate(parts) / total


def _first_max(scores, block_size):
    m = scores[:block_size].max()
    e = np.exp(scores - m)
    return e / e.sum()


def _no_max(scores, block_size):
    total = 0.0
    for start in range(0, len(scores), block_size):
        total += np.exp(scores[start : start + block_size]).sum()
    return np.exp(scores) / total


def _per_block(scores, block_size, average=False):
    blocks = [scores[k : k + block_size] for k in range(0, len(scores), block_size)]
    out = np.concatenate([_softmax(b) for b in blocks])
    return out / len(blocks) if average else out


ONLINE_MISTAKES = [
    (lambda s, b: _online(s, b, rescale="never"), "forgot to rescale the running sum"),
    (lambda s, b: _online(s, b, rescale="upside down"), "upside down"),
    (lambda s, b: _online(s, b, rescale="upside down, unguarded"), "starts at -inf"),
    (_stale, "maximum of their time"),
    (_first_max, "maximum of the first block"),
    (_no_max, "overflows"),
    (lambda s, b: np.exp(s) / np.exp(s).sum(), "overflows"),
    (_per_block, "normalised each block on its own"),
    (lambda s, b: _per_block(s, b, average=True), "divided by the number of blocks"),
    (lambda s, b: np.exp(s - s.max()), "forgot to divide by the sum"),
    (exercise._exp_against_last_block, "last block's maximum"),
    (exercise._block_max_as_running_max, "only the current block's maximum"),
    (exercise._stops_one_short, "stops one start too early"),
    (exercise._last_block_skipped, "leaves out the last block"),
    (exercise._block_own_max, "against the block's own maximum"),
]


@pytest.mark.parametrize(("answer", "phrase"), ONLINE_MISTAKES)
def test_classic_online_softmax_mistakes_fail_and_are_named(answer, phrase):
    result = check("online_softmax", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    assert "Your `online_softmax` returned" in result.message


def test_online_softmax_hints_for_unnamed_mistakes():
    def per_block_scaled(scores, block_size):
        # Each block sums to 1, but not the way a known mistake computes it.
        blocks = [scores[k : k + block_size] for k in range(0, len(scores), block_size)]
        return np.concatenate([np.full(len(b), 1 / len(b)) for b in blocks])

    message = check("online_softmax", per_block_scaled).message
    assert "Each block of your weights sums to 1" in message
    message = check("online_softmax", lambda s, b: 2 * attnlab.softmax(s)).message
    assert "sum to 2" in message and "proportional to the right ones" in message
    assert "l is too small" in message

    def sliced(step):
        # Blocks of block_size + step scores, started every block_size: l misses or repeats some.
        def answer(scores, block_size):
            m, l = -np.inf, 0.0
            for start in range(0, scores.size, block_size):
                block = scores[start : start + block_size + step]
                if block.size:
                    m_new = max(m, block.max())
                    l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()
                    m = m_new
            return np.exp(scores - m) / l

        return answer

    message = check("online_softmax", sliced(-1)).message
    assert "l is too small" in message and "cover every score once" in message, message
    message = check("online_softmax", sliced(+1)).message
    assert "l is too large" in message and "overlap" in message, message
    shape = check("online_softmax", lambda s, b: attnlab.softmax(s)[None, :]).message
    assert "one weight per score" in shape


def test_odd_answers_fail_kindly():
    assert "returned None" in check("online_softmax", lambda s, b: None).message
    assert not check("online_softmax", lambda s, b: 1 / 0).passed

    def changes_input(scores, block_size):
        scores -= scores.max()
        return attnlab.softmax(scores)

    assert "in place" in check("online_softmax", changes_input).message


# --------------------------------------------------------- exercise: merge_states


def merge_in_arrays(m1, l1, o1, m2, l2, o2):
    m = np.maximum(m1, m2)
    a, b = np.exp(m1 - m), np.exp(m2 - m)
    return np.array([m, l1 * a + l2 * b, o1 * a + o2 * b])


def merge_by_cases(m1, l1, o1, m2, l2, o2):
    if m1 >= m2:
        f = math.exp(m2 - m1)
        return m1, l1 + l2 * f, o1 + o2 * f
    f = math.exp(m1 - m2)
    return m2, l1 * f + l2, o1 * f + o2


def merge_as_list(m1, l1, o1, m2, l2, o2):
    m = max(m1, m2)
    factors = [math.exp(m1 - m), math.exp(m2 - m)]
    return [m, l1 * factors[0] + l2 * factors[1], o1 * factors[0] + o2 * factors[1]]


@pytest.mark.parametrize(
    "answer",
    [solutions.merge_states, merge_in_arrays, merge_by_cases, merge_as_list],
)
def test_correct_merge_states_answers_pass(answer):
    result = check("merge_states", answer)
    assert result.passed, result.message


def test_merge_states_gives_the_state_of_the_whole_row():
    rng = np.random.default_rng(5)
    for _ in range(20):
        s, v = rng.normal(size=10) * 30, rng.normal(size=10)
        cut = int(rng.integers(1, 10))
        parts = [lesson.block_state(s[:cut], v[:cut]), lesson.block_state(s[cut:], v[cut:])]
        m, total, o = solutions.merge_states(*parts[0], *parts[1])
        assert m == s.max()
        assert total == pytest.approx(np.exp(s - s.max()).sum())
        assert o / total == pytest.approx(attnlab.softmax(s) @ v)
        assert lesson.merge_states(*parts[0], *parts[1]) == pytest.approx((m, total, o))


def test_merge_states_with_rows_of_values_and_two_empty_parts():
    s, V = np.array([1.0, 700.0, -3.0, 2.0]), np.arange(8.0).reshape(4, 2)
    e1, e2 = np.exp(s[:2] - 700.0), np.exp(s[2:] - 2.0)
    m, total, o = solutions.merge_states(700.0, e1.sum(), e1 @ V[:2], 2.0, e2.sum(), e2 @ V[2:])
    np.testing.assert_allclose(o / total, attnlab.softmax(s) @ V)
    assert lesson.merge_states(-np.inf, 0.0, 0.0, -np.inf, 0.0, 0.0) == (-np.inf, 0.0, 0.0)


def _merge_with_o_unnormalised_twice(m1, l1, o1, m2, l2, o2):
    m, total, o = solutions.merge_states(m1, l1, o1, m2, l2, o2)
    return m, total, 2 * o


def _merge_swapped(m1, l1, o1, m2, l2, o2):
    m, total, o = solutions.merge_states(m1, l1, o1, m2, l2, o2)
    return total, m, o


def _merge_through_weights(m1, l1, o1, m2, l2, o2):
    m = max(m1, m2)
    a, b = np.exp(m1 - m), np.exp(m2 - m)
    return m, l1 * a + l2 * b, (o1 / l1) * l1 * a + (o2 / l2) * l2 * b  # o / l of an empty part


def _merge_through_weights_in_numpy(m1, l1, o1, m2, l2, o2):
    m = max(m1, m2)
    a, b = np.exp(m1 - m) * l1, np.exp(m2 - m) * l2
    return m, a + b, a * o1 / l1 + b * o2 / l2  # NumPy's 0 / 0 is NaN, not an error


def _merge_unshifted(m1, l1, o1, m2, l2, o2):
    m = max(m1, m2)
    a, b = np.exp(m1) / np.exp(m), np.exp(m2) / np.exp(m)
    return m, l1 * a + l2 * b, o1 * a + o2 * b


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [(m.compute, m.message[:40]) for m in exercise.MERGE_MISTAKES]
    + [
        (
            lambda m1, l1, o1, m2, l2, o2: (max(m1, m2), l1 + 2 * l2, o1),
            "Your m is right, but your l is not",
        ),
        (lambda m1, l1, o1, m2, l2, o2: (min(m1, m2), l1 + l2, o1), "which of m1 and m2"),
        (_merge_with_o_unnormalised_twice, "Your m and l are right, but your o is not"),
        (_merge_swapped, "in another order"),
        (_merge_unshifted, "e^1000 overflows"),
        (lambda m1, l1, o1, m2, l2, o2: (max(m1, m2), l1 + l2), "three numbers, (m, l, o)"),
        (_merge_through_weights, "An empty part has l = 0"),
        (_merge_through_weights_in_numpy, "NaN or inf when one part is empty"),
    ],
)
def test_merge_states_mistakes_fail_and_are_named(answer, phrase):
    result = check("merge_states", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def _merge_without_equal_maxima(m1, l1, o1, m2, l2, o2):
    if m1 > m2:
        f = math.exp(m2 - m1)
        return m1, l1 + l2 * f, o1 + o2 * f
    elif m2 > m1:  # the slip: no branch for m1 == m2
        f = math.exp(m1 - m2)
        return m2, l1 * f + l2, o1 * f + o2


def test_a_merge_that_returns_none_on_one_case_names_that_case():
    message = check("merge_states", _merge_without_equal_maxima).message
    assert 'On the test input "equal maxima" (m1 = 0.5, m2 = 0.5)' in message
    assert "ends without a `return`" in message
    # An answer that never returns anything is still asked whether it forgot `return`.
    assert "Did you forget `return`?" in check("merge_states", lambda *args: None).message


def _plain_softmax(scores, block_size):
    e = np.exp(scores - scores.max())
    return e / e.sum()


def _online_then_full_sum(scores, block_size):
    m = -np.inf
    for start in range(0, len(scores), block_size):
        m = max(m, scores[start : start + block_size].max())
    e = np.exp(scores - m)
    return e / np.sum(e)  # the maximum was found block by block, but l over the whole row


def _online_with_checks_and_reductions(scores, block_size):
    m, total = -np.inf, 0.0
    for start in range(0, len(scores), block_size):
        block = scores[start : start + block_size]
        new = np.maximum.reduce(block, axis=0)  # a reduction, but of one block
        new = max(m, new)
        total = total * np.exp(m - new) + np.add.reduce(np.exp(block - new))
        m = new
    weights = np.exp(scores - m) / total
    assert np.isfinite(weights).all() and (weights >= 0).all()  # not a max or sum
    return weights


@pytest.mark.parametrize("answer", [_plain_softmax, _online_then_full_sum])
def test_a_softmax_of_the_whole_row_is_told_to_go_block_by_block(answer):
    result = check("online_softmax", answer)
    assert not result.passed
    assert "not block by block" in result.message and "10 scores at once" in result.message


def _checked_at_the_end(check_weights):
    def answer(scores, block_size):
        weights = solutions.online_softmax(scores, block_size)
        check_weights(weights)
        return weights

    return answer


def _assert_sum(w):
    assert abs(w.sum() - 1) < 1e-6


def _assert_python_sum_and_max(w):
    assert abs(sum(w) - 1) < 1e-6 and max(w) <= 1


def _assert_np_sum_and_max(w):
    assert np.isclose(np.sum(w), 1) and np.max(w) <= 1


@pytest.mark.parametrize(
    "check_weights", [_assert_sum, _assert_python_sum_and_max, _assert_np_sum_and_max]
)
def test_a_check_on_the_finished_weights_is_not_a_second_pass(check_weights):
    answer = _checked_at_the_end(check_weights)
    assert exercise.widest_reduction(answer) <= exercise.ONE_PASS_BLOCK
    assert not exercise.two_passes(answer)
    result = check("online_softmax", answer)
    assert result.passed, result.message


def _normalised_at_the_end(scores, block_size):
    m = -np.inf
    for start in range(0, len(scores), block_size):
        m = max(m, scores[start : start + block_size].max())
    e = np.exp(scores - m)
    return e / e.sum()  # a sum over the whole row that is not yet the weights: still counted


def test_a_sum_over_the_row_before_the_weights_are_finished_still_counts():
    assert exercise.widest_reduction(_normalised_at_the_end) == exercise.ONE_PASS_ROW.size
    assert not check("online_softmax", _normalised_at_the_end).passed


@pytest.mark.parametrize("answer", [*ONLINE_CORRECT, _online_with_checks_and_reductions])
def test_block_by_block_answers_take_in_one_block_at_a_time(answer):
    assert exercise.widest_reduction(answer) <= exercise.ONE_PASS_BLOCK
    assert check("online_softmax", answer).passed


def _row_max_then_block_sums(find_max):
    def answer(scores, block_size):
        m, total = find_max(scores, block_size), 0.0
        for start in range(0, len(scores), block_size):
            total += np.exp(scores[start : start + block_size] - m).sum()  # never rescaled
        return np.exp(scores - m) / total

    return answer


def _blockwise_max(scores, block_size):
    m = -np.inf
    for start in range(0, len(scores), block_size):
        m = max(m, scores[start : start + block_size].max())
    return m


@pytest.mark.parametrize(
    ("find_max", "phrase"),
    [
        (_blockwise_max, "in two passes over the row"),  # every block's max, then the sums
        (lambda s, b: max(s), "in two passes over the row"),  # Python's max, score by score
        (lambda s, b: max(s.tolist()), "in two passes over the row"),
        (lambda s, b: s[np.argmax(s)], "10 scores at once"),
        (lambda s, b: s[s.argmax()], "10 scores at once"),
        (lambda s, b: np.sort(s)[-1], "10 scores at once"),
    ],
)
def test_a_maximum_found_before_the_sums_is_a_second_pass(find_max, phrase):
    answer = _row_max_then_block_sums(find_max)
    row = exercise.ONE_PASS_ROW
    assert np.allclose(answer(row, 3), attnlab.softmax(row))
    result = check("online_softmax", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def _converted_first(answer, convert=np.ascontiguousarray):
    def converted(scores, block_size):
        return answer(convert(scores), block_size)

    return converted


@pytest.mark.parametrize(
    "convert",
    [  # looked up when called, as in the learner's code
        lambda s: np.asarray(s),
        lambda s: np.asarray(s).copy(),
        lambda s: np.asarray(s, dtype=float),
        lambda s: np.asarray(s, float),
        lambda s: np.array(s, dtype=np.float64),
        lambda s: np.array(s),
    ],
)
def test_an_answer_that_converts_scores_with_np_asarray_or_np_array_is_still_followed(convert):
    # np.asarray(scores) is a reflex the course's own code teaches: it must not hide the reads.
    assert check("online_softmax", _converted_first(solutions.online_softmax, convert)).passed
    result = check("online_softmax", _converted_first(_plain_softmax, convert))
    assert not result.passed
    assert "10 scores at once" in result.message, result.message
    two_pass = _row_max_then_block_sums(_blockwise_max)
    result = check("online_softmax", _converted_first(two_pass, convert))
    assert not result.passed
    assert "in two passes over the row" in result.message, result.message


def test_np_asarray_and_np_array_are_restored_after_the_check():
    asarray, array = np.asarray, np.array
    check("online_softmax", _converted_first(solutions.online_softmax, lambda s: np.asarray(s)))
    assert np.asarray is asarray and np.array is array


@pytest.mark.parametrize(
    "answer",
    [
        _converted_first(_plain_softmax),  # no blocks at all
        _converted_first(_row_max_then_block_sums(_blockwise_max)),  # two passes
        _converted_first(solutions.online_softmax),  # one pass, but hidden
    ],
)
def test_an_answer_that_converts_scores_first_is_asked_to_work_on_them_directly(answer):
    result = check("online_softmax", answer)
    assert not result.passed
    assert "made a new array from `scores`" in result.message
    assert "read each block straight from it" in result.message


def _padded_blocks(join):
    """The online softmax over the row padded with -inf and reshaped to (n_blocks, block_size)."""

    def answer(scores, block_size):
        n_blocks = -(-len(scores) // block_size)
        blocks = join(scores, n_blocks * block_size - len(scores)).reshape(n_blocks, block_size)
        m, total = -np.inf, 0.0
        for block in blocks:
            new = max(m, block.max())
            total = total * np.exp(m - new) + np.exp(block - new).sum()
            m = new
        return np.exp(scores - m) / total

    return answer


PADDINGS = [
    lambda s, k: np.concatenate([s, np.full(k, -np.inf)]),
    lambda s, k: np.append(s, np.full(k, -np.inf)),
    lambda s, k: np.r_[s, np.full(k, -np.inf)],
    lambda s, k: np.pad(s, (0, k), constant_values=-np.inf),
]


@pytest.mark.parametrize("join", PADDINGS)
def test_a_padded_row_cut_into_blocks_by_reshape_passes(join):
    result = check("online_softmax", _padded_blocks(join))
    assert result.passed, result.message


def test_a_padded_row_still_has_its_passes_followed():
    def two_passes(scores, block_size):
        n_blocks = -(-len(scores) // block_size)
        padded = np.concatenate([scores, np.full(n_blocks * block_size - len(scores), -np.inf)])
        blocks = padded.reshape(n_blocks, block_size)
        m = -np.inf
        for block in blocks:  # every block's maximum first ...
            m = max(m, block.max())
        total = sum(np.exp(block - m).sum() for block in blocks)  # ... then the sums
        return np.exp(scores - m) / total

    result = check("online_softmax", two_passes)
    assert not result.passed and "in two passes over the row" in result.message
    whole = check("online_softmax", lambda s, b: _plain_softmax(np.concatenate([s, []]), b))
    assert not whole.passed and "not block by block" in whole.message


def test_np_copy_of_the_row_still_passes():
    assert check("online_softmax", lambda s, b: solutions.online_softmax(np.copy(s), b)).passed


def test_an_answer_built_on_the_courses_tiled_attention_is_told_so():
    def through_tiled(scores, block_size):
        keys = scores.reshape(-1, 1)  # one query of 1 against keys of width 1: q · k = s
        out = attnlab.tiled_attention(
            np.ones((1, 1)), keys, np.eye(len(scores)), scale=1.0, block_size=block_size
        )
        return out[0]

    result = check("online_softmax", through_tiled)
    assert not result.passed
    assert "runs the course's own `attnlab.tiled_attention`" in result.message


def _builtin_plain_softmax(scores, block_size):
    e = np.exp(scores - max(scores))  # Python's max and sum read the row score by score
    return e / sum(e)


def _plain_softmax_of(to_list):
    def answer(scores, block_size):
        s = to_list(scores)
        m = max(s)
        e = [math.exp(x - m) for x in s]
        return [x / sum(e) for x in e]

    return answer


def _scalar_loop(scores, block_size):
    m, total = -math.inf, 0.0
    for s in scores:
        new = max(m, s)
        total = total * math.exp(m - new) + math.exp(s - new)
        m = new
    return [math.exp(s - m) / total for s in scores]


def _builtin_blocks(scores, block_size):
    m, total = -np.inf, 0.0
    for start in range(0, len(scores), block_size):
        block = list(scores[start : start + block_size])  # one block copied is fine
        new = max(m, max(block))
        total = total * math.exp(m - new) + sum(np.exp(np.array(block) - new))
        m = new
    return (np.exp(scores - m) / total).tolist()


def _block_unpacked_into_max(scores, block_size):
    m, total = -np.inf, 0.0
    for start in range(0, len(scores), block_size):
        block = scores[start : start + block_size]
        new = np.max([m, *block])  # one block read score by score: not a copy of the row
        total = total * np.exp(m - new) + np.exp(block - new).sum()
        m = new
    return np.exp(scores - m) / total


def _python_two_pass(scores, block_size):
    m = max(scores)  # every score read before any is used
    total = sum(math.exp(s - m) for s in scores)
    return [math.exp(s - m) / total for s in scores]


def _sum_of_tolist(scores, block_size):
    e = np.exp(scores - max(scores))
    return e / sum(e.tolist())


@pytest.mark.parametrize("answer", [_builtin_plain_softmax, _python_two_pass, _sum_of_tolist])
def test_a_plain_softmax_with_python_builtins_is_a_second_pass(answer):
    row = exercise.ONE_PASS_ROW
    assert np.allclose(answer(row, 3), attnlab.softmax(row))
    result = check("online_softmax", answer)
    assert not result.passed and "in two passes over the row" in result.message


@pytest.mark.parametrize(
    "to_list", [lambda s: s.tolist(), lambda s: list(s), lambda s: [x for x in s]]
)
def test_a_row_copied_into_a_list_is_asked_to_work_on_scores_directly(to_list):
    result = check("online_softmax", _plain_softmax_of(to_list))
    assert not result.passed
    assert "copied the row into a list" in result.message
    assert "read each block straight from it" in result.message


def _scalar_loop_normalised_by(finish):
    def answer(scores, block_size):
        m, total = -math.inf, 0.0
        for s in scores:
            new = max(m, s)
            total = total * math.exp(m - new) + math.exp(s - new)
            m = new
        return finish(np.exp(scores - m), total)

    return answer


@pytest.mark.parametrize(
    "answer",
    [
        _scalar_loop,
        _builtin_blocks,
        _block_unpacked_into_max,
        _scalar_loop_normalised_by(lambda e, total: [x / total for x in e]),
        _scalar_loop_normalised_by(lambda e, total: list(e / total)),
    ],
)
def test_one_pass_answers_in_plain_python_still_pass(answer):
    assert check("online_softmax", answer).passed


def test_a_copied_or_converted_row_still_has_its_reads_followed():
    two_pass = _row_max_then_block_sums(_blockwise_max)
    for convert in (lambda s: s.astype(float), lambda s: s.copy()):
        assert exercise.two_passes(lambda s, b, c=convert: two_pass(c(s), b))
        assert not exercise.two_passes(lambda s, b, c=convert: solutions.online_softmax(c(s), b))


def test_a_stale_maximum_in_the_final_weights_is_named():
    def stale(scores, block_size):
        m, total = -np.inf, 0.0
        for start in range(0, len(scores), block_size):
            block = scores[start : start + block_size]
            m_old, m = m, max(m, block.max())
            total = total * np.exp(m_old - m) + np.exp(block - m).sum()
        return np.exp(scores - m_old) / total

    message = check("online_softmax", stale).message
    assert "the same m, the one after the last block" in message
    assert "Your running sum l is right" in message


@pytest.mark.parametrize("answer", [*ONLINE_CORRECT, _online_with_checks_and_reductions])
def test_one_pass_answers_are_not_taken_for_two_passes(answer):
    assert not exercise.two_passes(answer)


def test_the_counting_row_behaves_as_a_plain_array():
    row = np.arange(6.0).view(exercise._CountingRow)
    row.widest = [0]
    assert row[:2].max() == 1.0 and row.widest == [2]
    e = np.exp(row - 5.0)
    assert isinstance(e, exercise._CountingRow) and e.sum() == pytest.approx(
        np.exp(np.arange(6.0) - 5).sum()
    )
    assert row.widest == [6]
    out = np.empty(6)
    np.multiply(row, 2.0, out=out)
    assert np.array_equal(out, 2 * np.arange(6.0))
    # An answer that breaks on the counting row keeps its pass: the result was right.
    assert exercise.widest_reduction(lambda s, b: 1 / 0) is None
    assert not exercise.two_passes(lambda s, b: 1 / 0)


def test_the_counting_row_records_the_order_of_its_reads():
    row = np.arange(6.0).view(exercise._CountingRow)
    row.widest, row.reads, row.positions = [0], [], np.arange(6)
    np.exp(row[2:4] - 1.0).sum()
    row[5:].max()
    assert row.reads == [("sum", 2, 3), ("max", 5, 5)]


def test_exercises_are_registered_for_lesson_07_with_their_solutions():
    for exercise_id in ("longest_sequence", "merge_states", "online_softmax"):
        assert exercise_id in exercise_ids()
        assert get_exercise(exercise_id).lesson == "notebooks/07_cost_and_tiling.ipynb"
        code = solution(exercise_id)
        assert code.startswith(f"def {exercise_id}(") and "return" in code
    assert solution("online_softmax").uses == ()


def test_every_mistake_differs_from_the_reference_on_some_case():
    for cases, mistakes, reference in [
        (exercise.longest_cases(), exercise.LONGEST_MISTAKES, lesson.longest_sequence),
        (exercise.online_cases(), exercise.ONLINE_MISTAKES, lambda s, b: attnlab.softmax(s)),
        (exercise.merge_cases(), exercise.MERGE_MISTAKES, exercise.merge_states),
    ]:
        for mistake in mistakes:
            with np.errstate(all="ignore"):
                differs = [
                    not np.allclose(
                        mistake.compute(*c.inputs.values()),
                        reference(*c.inputs.values()),
                        equal_nan=True,
                    )
                    for c in cases
                ]
            assert any(differs), mistake.message[:60]


def test_example_row_is_the_lessons_row():
    s, v = lesson.example_row()
    assert s.shape == v.shape == (12,)
    assert s[9] == 6.0 == s.max()
    assert lesson.online_softmax_steps(s, v, lesson.EXAMPLE_BLOCK_SIZE)[-1].keys == (8, 12)
