"""Tests for lesson 06's experiments (``attnlab.lessons.full_attention``) and its exercises
``multi_head_attention`` and ``online_softmax`` (``attnlab.exercises.ex06_full_attention``).
"""

import math

import matplotlib
import numpy as np
import pytest

import attnlab
from attnlab.exercises import check, exercise_ids, solution, solutions
from attnlab.exercises import ex06_full_attention as exercise
from attnlab.exercises.registry import get_exercise
from attnlab.lessons import full_attention as lesson

matplotlib.use("Agg")


# ------------------------------------------------------------------ patterns


def test_position_features_have_unit_length_and_depend_only_on_distance():
    P = lesson.position_features(16)
    assert P.shape == (16, 2 * lesson.N_FREQUENCIES)
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0)
    G = P @ P.T
    for offset in range(-15, 16):
        diagonal = np.diagonal(G, offset)
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-12)
    # Largest at distance 0, and the neighbours next.
    assert np.all(np.argmax(G, axis=1) == np.arange(16))
    assert G[8, 7] > np.delete(G[8], [7, 8, 9]).max()


def test_each_pattern_has_its_shape():
    n = 12
    W = {name: lesson.pattern_weights(*lesson.pattern_qk(name, n)) for name in lesson.PATTERNS}
    for Wp in W.values():
        assert Wp.shape == (n, n)
        np.testing.assert_allclose(Wp.sum(axis=1), 1.0)
    assert np.all(np.argmax(W["local"], axis=1) == np.arange(n))
    assert np.all(W["vertical"][:, 0] > 0.8)
    beta = lesson.SHARPNESS
    np.testing.assert_allclose(W["vertical"][:, 0], math.exp(beta) / (math.exp(beta) + n - 1))
    np.testing.assert_allclose(W["horizontal"][lesson.WIDE_QUERY], 1 / n)
    previous = np.maximum(np.arange(n) - 1, 0)
    others = np.delete(W["horizontal"][np.arange(n), previous], lesson.WIDE_QUERY)
    assert others.min() > 0.8  # every other query looks one token back
    segments = np.arange(n) // lesson.SEGMENT
    same = segments[:, None] == segments[None, :]
    assert (W["block"] * same).sum(axis=1).min() > 0.95
    # Global: the global token's row is uniform, and every other row gives its column as
    # much as its own position, which is more than any other key gets.
    g = lesson.GLOBAL_TOKEN
    np.testing.assert_allclose(W["global"][g], 1 / n)
    rows = np.delete(np.arange(n), g)
    np.testing.assert_allclose(W["global"][rows, g], W["global"][rows, rows])
    assert W["global"][rows, g].min() > 0.3
    entropy = {name: lesson.row_entropy(Wp).mean() for name, Wp in W.items()}
    assert max(entropy.values()) < math.log(n) - 0.5


def test_block_pattern_with_a_short_last_segment_and_unknown_names():
    Q, K = lesson.pattern_qk("block", 10)
    assert Q.shape == (10, 3)
    with pytest.raises(ValueError, match="Unknown pattern 'diagonal'"):
        lesson.pattern_qk("diagonal")


def test_row_entropy():
    W = np.array([[1.0, 0.0, 0.0, 0.0], [0.25] * 4, [0.5, 0.5, 0.0, 0.0]])
    np.testing.assert_allclose(lesson.row_entropy(W), [0.0, math.log(4), math.log(2)])


# --------------------------------------------------------------- masks, dropout


def test_padding_mask_from_lengths():
    mask = lesson.padding_mask([3, 1, 4], 4)
    assert mask.dtype == bool
    np.testing.assert_array_equal(mask.astype(int), [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]])


def test_dropout_keeps_the_expected_value():
    rng = np.random.default_rng(0)
    row = attnlab.softmax(np.array([2.0, 1.0, 0.0, -1.0, 3.0]))
    draws = lesson.dropout(np.broadcast_to(row, (40000, 5)), 0.3, rng)
    assert set(np.unique(draws[:, 0]).round(12)) == {0.0, round(row[0] / 0.7, 12)}
    assert (draws == 0).mean() == pytest.approx(0.3, abs=0.01)
    np.testing.assert_allclose(draws.mean(axis=0), row, atol=0.01)
    np.testing.assert_array_equal(lesson.dropout(row, 0.0, rng), row)
    with pytest.raises(ValueError, match="p must be in"):
        lesson.dropout(row, 1.0, rng)


def test_kv_cache_floats():
    assert lesson.kv_cache_floats(4096, 32, 128) == 2 * 4096 * 32 * 128
    assert lesson.kv_cache_floats(4096, 8, 128, n_layers=32) == 32 * 2 * 4096 * 8 * 128
    assert lesson.kv_cache_floats(10, 32, 64) == 32 * lesson.kv_cache_floats(10, 1, 64)


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
    tiled = lesson.tiled_peaks([1024], d=8)
    full = lesson.peak_bytes(attnlab.attention, *lesson.random_qkv(1024, 8), return_weights=True)
    assert tiled[0] < full / 4


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


def test_figures_have_titles_and_labels():
    n = 8
    W = {name: lesson.pattern_weights(*lesson.pattern_qk(name, n)) for name in lesson.PATTERNS}
    cost = lesson.measure_cost([32, 64, 128], d=4, repeats=1)
    mask = attnlab.causal_mask(n)
    figures = [
        lesson.plot_patterns(W, suptitle="patterns"),
        lesson.plot_masks({"causal": mask}, W["local"]),
        lesson.plot_dropout({"row": W["local"][3], "dropped": W["local"][3] * 1.2}),
        lesson.plot_cost(cost),
        lesson.plot_memory(cost.ns, cost.peak_bytes, cost.peak_bytes / 2),
    ]
    for fig in figures:
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            assert ax.get_title(), ax
            assert ax.get_xlabel() or ax.get_ylabel() or ax.get_title()
        matplotlib.pyplot.close(fig)


# ------------------------------------------------- exercise: multi_head_attention


def mha_einsum(X, W_Q, W_K, W_V, W_O, n_heads):
    n, d = X.shape
    dh = d // n_heads
    Q, K, V = ((X @ W).reshape(n, n_heads, dh) for W in (W_Q, W_K, W_V))
    S = np.einsum("qhd,khd->hqk", Q, K) / np.sqrt(dh)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A /= A.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", A, V).reshape(n, d) @ W_O


def mha_sum_of_projections(X, W_Q, W_K, W_V, W_O, n_heads):
    # concat(heads) @ W_O is the sum of head_h @ (rows of W_O that belong to head h).
    dh = W_Q.shape[1] // n_heads
    total = 0
    for h in range(n_heads):
        c = slice(h * dh, (h + 1) * dh)
        total = total + attnlab.attention(X @ W_Q[:, c], X @ W_K[:, c], X @ W_V[:, c]) @ W_O[c]
    return total


def mha_split_heads(X, W_Q, W_K, W_V, W_O, n_heads):
    from attnlab.multihead import merge_heads, split_heads

    heads = [split_heads(X @ W, n_heads) for W in (W_Q, W_K, W_V)]
    return merge_heads(attnlab.attention(*heads)) @ W_O


MHA_CORRECT = [
    solutions.multi_head_attention,
    mha_einsum,
    mha_sum_of_projections,
    mha_split_heads,
    lambda X, W_Q, W_K, W_V, W_O, n_heads: attnlab.multi_head_attention(
        X, W_Q, W_K, W_V, W_O, n_heads
    ),
    lambda *args: solutions.multi_head_attention(
        *(a.astype(np.float32) for a in args[:5]), args[5]
    ),
    lambda *args: solutions.multi_head_attention(*args).tolist(),
]


@pytest.mark.parametrize("answer", MHA_CORRECT)
def test_correct_multi_head_attention_answers_pass(answer):
    result = check("multi_head_attention", answer)
    assert result.passed, result.message
    assert result.message.startswith("Well done!")


def _softmax(S, axis=-1):
    e = np.exp(S - S.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _mha(
    X,
    W_Q,
    W_K,
    W_V,
    W_O,
    n_heads,
    *,
    split="right",
    merge="right",
    divisor="head",
    axis=-1,
    project=True,
    transpose_o=False,
):
    n, d = X.shape
    dh = d // n_heads

    def split_heads(M):
        if split == "no transpose":
            return M.reshape(n_heads, n, dh)
        if split == "strided":
            return M.reshape(n, dh, n_heads).transpose(2, 0, 1)
        return M.reshape(n, n_heads, dh).transpose(1, 0, 2)

    Q, K, V = (split_heads(X @ W) for W in (W_Q, W_K, W_V))
    scale = {"head": np.sqrt(dh), "model": np.sqrt(d), "none": 1.0}[divisor]
    heads = _softmax(Q @ K.transpose(0, 2, 1) / scale, axis=axis) @ V
    if merge == "no transpose":
        merged = heads.reshape(n, d)
    elif split == "strided":
        merged = heads.transpose(1, 2, 0).reshape(n, d)
    else:
        merged = heads.transpose(1, 0, 2).reshape(n, d)
    if not project:
        return merged
    return merged @ (W_O.T if transpose_o else W_O)


def _one_big_head(X, W_Q, W_K, W_V, W_O, n_heads):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return _softmax(Q @ K.T / np.sqrt(Q.shape[1])) @ V @ W_O


MHA_MISTAKES = [
    (lambda *a: _mha(*a, project=False), "forgot the output projection"),
    (_one_big_head, "one attention over all d_model columns"),
    (lambda *a: _mha(*a, divisor="model"), "√d_model instead of √d_head"),
    (lambda *a: _mha(*a, divisor="none"), "forgot to scale"),
    (lambda *a: _mha(*a, split="no transpose", merge="no transpose"), "without transposing"),
    (lambda *a: _mha(*a, split="no transpose"), "`reshape(n_heads, n, d_head)`, without"),
    (lambda *a: _mha(*a, merge="no transpose"), "merged them with `heads.reshape(n, d_model)`"),
    (lambda *a: _mha(*a, split="strided"), "every n_heads-th column"),
    (lambda *a: _mha(*a, axis=-2), "runs down the columns"),
    (lambda *a: _mha(*a, transpose_o=True), "W_O transposed"),
]


@pytest.mark.parametrize(("answer", "phrase"), MHA_MISTAKES)
def test_classic_multi_head_attention_mistakes_fail_and_are_named(answer, phrase):
    result = check("multi_head_attention", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    assert "Expected" in result.message and "Your `multi_head_attention` returned" in result.message


def test_multi_head_attention_shape_errors_get_the_hint():
    def averages_heads(X, W_Q, W_K, W_V, W_O, n_heads):
        heads = _mha(X, W_Q, W_K, W_V, W_O, n_heads, project=False)
        n, d = X.shape
        return heads.reshape(n, n_heads, d // n_heads).mean(axis=1) @ W_O

    message = check("multi_head_attention", averages_heads).message
    assert "d_head = d_model // n_heads" in message


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
    lambda scores, block_size: attnlab.softmax(scores),  # the checker only sees results
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
    assert "sum to 2" in message
    shape = check("online_softmax", lambda s, b: attnlab.softmax(s)[None, :]).message
    assert "one weight per score" in shape


def test_odd_answers_fail_kindly():
    assert "returned None" in check("online_softmax", lambda s, b: None).message
    assert not check("online_softmax", lambda s, b: 1 / 0).passed
    assert "haven't written" in check("multi_head_attention", _not_written).message

    def changes_input(scores, block_size):
        scores -= scores.max()
        return attnlab.softmax(scores)

    assert "in place" in check("online_softmax", changes_input).message


def _not_written(*args):
    raise NotImplementedError


def test_exercises_are_registered_for_lesson_06_with_their_solutions():
    for exercise_id in ("multi_head_attention", "online_softmax"):
        assert exercise_id in exercise_ids()
        assert get_exercise(exercise_id).lesson == "notebooks/06_full_attention.ipynb"
        code = solution(exercise_id)
        assert code.startswith(f"def {exercise_id}(") and "return" in code
    assert solution("multi_head_attention").uses == ("attention",)
    assert solution("online_softmax").uses == ()


def test_every_mistake_differs_from_the_reference_on_some_case():
    for cases, mistakes, reference in [
        (exercise.mha_cases(), exercise.MHA_MISTAKES, attnlab.multi_head_attention),
        (exercise.online_cases(), exercise.ONLINE_MISTAKES, lambda s, b: attnlab.softmax(s)),
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
