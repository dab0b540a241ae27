"""Tests for lesson 06's experiments (``attnlab.lessons.heads_and_masks``) and its exercises
``multi_head_attention``, ``kv_cache_bytes`` and ``padding_causal_mask``
(``attnlab.exercises.ex06_heads_and_masks``).
"""

import math

import matplotlib
import numpy as np
import pytest

import attnlab
from attnlab.exercises import check, exercise_ids, solution, solutions
from attnlab.exercises import ex06_heads_and_masks as exercise
from attnlab.exercises.registry import get_exercise
from attnlab.lessons import heads_and_masks as lesson
from attnlab.multihead import merge_heads, split_heads

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
    np.testing.assert_allclose(W["previous-token"][lesson.WIDE_QUERY], 1 / n)
    previous = np.maximum(np.arange(n) - 1, 0)
    others = np.delete(W["previous-token"][np.arange(n), previous], lesson.WIDE_QUERY)
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


def test_kv_cache_bytes():
    assert lesson.kv_cache_bytes(1, 4096, 32, 128, 1) == 2 * 4096 * 32 * 128
    assert lesson.kv_cache_bytes(32, 4096, 8, 128, 2) == 32 * 2 * 4096 * 8 * 128 * 2
    assert lesson.kv_cache_bytes(3, 10, 32, 64, 4) == 32 * lesson.kv_cache_bytes(3, 10, 1, 64, 4)


def test_padding_causal_mask_is_padding_and_causal():
    lengths = np.array([3, 1, 4])
    mask = lesson.padding_causal_mask(lengths, 4)
    assert mask.shape == (3, 4, 4) and mask.dtype == bool
    np.testing.assert_array_equal(
        mask, lesson.padding_mask(lengths, 4)[:, None, :] & attnlab.causal_mask(4)
    )
    by_loops = [[[j < L and j <= i for j in range(4)] for i in range(4)] for L in lengths]
    np.testing.assert_array_equal(mask, np.array(by_loops))


# -------------------------------------------------------------------- figures


def test_figures_have_titles_and_labels():
    n = 8
    W = {name: lesson.pattern_weights(*lesson.pattern_qk(name, n)) for name in lesson.PATTERNS}
    mask = attnlab.causal_mask(n)
    figures = [
        lesson.plot_patterns(W, suptitle="patterns"),
        lesson.plot_masks({"causal": mask}, W["local"]),
        lesson.plot_dropout({"row": W["local"][3], "dropped": W["local"][3] * 1.2}),
        lesson.plot_heads(np.ones((n, 8)), np.full((4, n, n), 1 / n), np.ones((n, 8))),
        lesson.plot_head_groups(6, (6, 2, 1)),
        lesson.plot_one_vs_two_heads(
            W["local"], np.ones((n, 2)), np.ones((n, 2)), np.ones((n, 2)), np.arange(n), np.zeros(n)
        ),
    ]
    for fig in figures:
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            assert ax.get_title(), ax
            assert ax.get_xlabel() or ax.get_ylabel() or ax.get_title()
        matplotlib.pyplot.close(fig)


def test_broad_rows_are_outlined_and_labelled():
    W = {name: lesson.pattern_weights(*lesson.pattern_qk(name, 12)) for name in lesson.PATTERNS}
    fig = lesson.plot_patterns(W, broad_rows={"previous-token": lesson.WIDE_QUERY})
    ax = fig.axes[lesson.PATTERNS.index("previous-token")]
    assert len(ax.patches) == 1
    assert any(t.get_text() == "0.083 each" for t in ax.texts)
    matplotlib.pyplot.close(fig)


def test_head_groups_wire_runs_of_neighbouring_query_heads():
    fig = lesson.plot_head_groups(6, (2,))
    ends = sorted(tuple(line.get_xdata()) for line in fig.axes[0].lines)
    # Query heads 0, 1, 2 go to the first K/V head (x = 1), heads 3, 4, 5 to the second (x = 4).
    assert ends == [(0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (3.0, 4.0), (4.0, 4.0), (5.0, 4.0)]
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


def _mha_causal(X, W_Q, W_K, W_V, W_O, n_heads):
    Q, K, V = (split_heads(X @ W, n_heads) for W in (W_Q, W_K, W_V))
    heads = attnlab.attention(Q, K, V, mask=attnlab.causal_mask(X.shape[0]))
    return merge_heads(heads) @ W_O


MHA_MISTAKES = [
    (lambda *a: _mha(*a, project=False), "left out the last step"),
    (_one_big_head, "one attention over all d_model columns"),
    (lambda *a: _mha(*a, divisor="model"), "scaled each head's scores by √d_model"),
    (lambda *a: _mha(*a, divisor="none"), "scores are not scaled"),
    (
        lambda *a: _mha(*a, split="no transpose", merge="no transpose"),
        "and merged them the same way",
    ),
    (lambda *a: _mha(*a, split="no transpose"), "cutting it into heads?"),
    (lambda *a: _mha(*a, merge="no transpose"), "merged them by reshaping"),
    (lambda *a: _mha(*a, split="strided"), "every n_heads-th column"),
    (lambda *a: _mha(*a, axis=-2), "runs down the columns"),
    (lambda *a: _mha(*a, transpose_o=True), "W_O transposed"),
    (_mha_causal, "as with a causal mask"),
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
    assert "What shape is one head's Q, K and V" in message


def test_dot_t_on_heads_gets_the_all_axes_hint():
    def dot_t(X, W_Q, W_K, W_V, W_O, n_heads):
        Q, K, V = (split_heads(X @ W, n_heads) for W in (W_Q, W_K, W_V))
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        return merge_heads(attnlab.softmax(S) @ V) @ W_O

    message = check("multi_head_attention", dot_t).message
    assert "`.T` reverses *all* of them" in message, message
    assert "What shape is one head's Q, K and V" not in message

    def gqa_dot_t(Q, K, V):
        K, V = (np.repeat(M, Q.shape[-3] // K.shape[-3], axis=-3) for M in (K, V))
        return attnlab.softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V

    message = check("grouped_query_attention", gqa_dot_t).message
    assert "`.T` reverses *all* of them" in message and "`Q[h]` picks a sequence" in message


# ---------------------------------------------- exercise: grouped_query_attention


def gqa_loop(Q, K, V):
    group = Q.shape[-3] // K.shape[-3]
    heads = [
        attnlab.attention(Q[..., h, :, :], K[..., h // group, :, :], V[..., h // group, :, :])
        for h in range(Q.shape[-3])
    ]
    return np.stack(heads, axis=-3)


def gqa_grouped_reshape(Q, K, V):
    *lead, H, n_q, d_k = Q.shape
    H_kv = K.shape[-3]
    # (…, H_kv, group, n_q, d_k) against (…, H_kv, 1, n_k, d_k): the group broadcasts.
    grouped = Q.reshape(*lead, H_kv, H // H_kv, n_q, d_k)
    out = attnlab.attention(grouped, K[..., None, :, :], V[..., None, :, :])
    return out.reshape(*lead, H, n_q, -1)


@pytest.mark.parametrize(
    "answer", [solutions.grouped_query_attention, gqa_loop, gqa_grouped_reshape]
)
def test_correct_grouped_query_attention_answers_pass(answer):
    result = check("grouped_query_attention", answer)
    assert result.passed, result.message


def _gqa_tile(Q, K, V):
    copies = Q.shape[-3] // K.shape[-3]
    K, V = (np.concatenate([A] * copies, axis=-3) for A in (K, V))
    return attnlab.attention(Q, K, V)


def _gqa_head_4_reads_head_0(Q, K, V):
    out = gqa_loop(Q, K, V)
    if Q.shape[-3] == 6:
        out[..., 4, :, :] = attnlab.attention(Q[..., 4, :, :], K[..., 0, :, :], V[..., 0, :, :])
    return out


def _gqa_head_0_output_copied(Q, K, V):
    group = Q.shape[-3] // K.shape[-3]
    out = attnlab.attention(Q, np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3))
    return np.repeat(out[..., :1, :, :], Q.shape[-3], axis=-3)  # every head gets head 0's


def _gqa_mean(Q, K, V):
    return attnlab.attention(Q, K.mean(-3, keepdims=True), V.mean(-3, keepdims=True))


def _gqa_group_averages_its_queries(Q, K, V):
    group = Q.shape[-3] // K.shape[-3]
    shape = (*Q.shape[:-3], K.shape[-3], group, *Q.shape[-2:])
    mean = Q.reshape(shape).mean(axis=-3, keepdims=True)
    Q = np.broadcast_to(mean, shape).reshape(Q.shape)
    return attnlab.attention(Q, np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3))


def _gqa_scaled_twice(Q, K, V):
    group = Q.shape[-3] // K.shape[-3]
    K, V = np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3)
    return attnlab.attention(Q / np.sqrt(Q.shape[-1]), K, V)  # attention scales again


def _gqa_causal(Q, K, V):
    group = Q.shape[-3] // K.shape[-3]
    K, V = np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3)
    return attnlab.attention(Q, K, V, causal=True)  # a mask by habit


GQA_MISTAKES = [
    (_gqa_group_averages_its_queries, "each query head keeps its own queries"),
    (_gqa_scaled_twice, "√d_k twice"),
    (_gqa_tile, "h mod H_kv"),
    (lambda Q, K, V: attnlab.attention(Q, K[..., :1, :, :], V[..., :1, :, :]), "head 0"),
    (_gqa_mean, "averaged"),
    (lambda Q, K, V: attnlab.attention(Q, K, V), "How many copies"),
    (lambda Q, K, V: gqa_loop(Q, K, V)[..., :-1, :, :], "one output per query head"),
    (_gqa_head_4_reads_head_0, "Query heads 0, 1, 2, 3, 5 are right, but head 4 is not"),
    (
        _gqa_head_0_output_copied,
        "Query head 0 is right, but head 1 is not. Head 1 returns the output that head 0 "
        "should return",
    ),
    (_gqa_causal, "as with a causal mask"),
]


def _gqa_keys_only(Q, K, V):
    return attnlab.attention(Q, np.repeat(K, Q.shape[-3] // K.shape[-3], axis=-3), V)


def _gqa_keys_only_by_hand(Q, K, V):
    K = np.repeat(K, Q.shape[-3] // K.shape[-3], axis=-3)
    W = attnlab.softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return W @ V


@pytest.mark.parametrize("answer", [_gqa_keys_only, _gqa_keys_only_by_hand])
def test_values_left_with_h_kv_heads_get_their_own_hint(answer):
    message = check("grouped_query_attention", answer).message
    assert "your values still have only H_kv heads" in message, message
    assert "Which of the two does NumPy's error name?" not in message


def test_an_unnamed_grouped_query_slip_is_shown_the_first_wrong_head():
    def scaled_by_keys(Q, K, V):  # √n_k, the number of keys, instead of √d_k
        group = Q.shape[-3] // K.shape[-3]
        K, V = np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3)
        return attnlab.softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2])) @ V

    message = check("grouped_query_attention", scaled_by_keys).message
    assert "in every query head. For query head 0, the output should be" in message, message
    assert "and yours is" in message and "what are its scores divided by" in message
    assert "by hand" not in message  # no inputs are shown to trace by hand
    # Only that head's numbers: the exercise still prints no whole arrays.
    assert "returned," not in message and "Expected" not in message


def test_a_slip_in_one_sequence_names_the_sequence_of_the_wrong_head():
    def second_sequence_off(Q, K, V):
        out = gqa_loop(Q, K, V).copy()
        if Q.ndim == 4:
            out[1] += 1.0  # every head of sequence 1
        return out

    message = check("grouped_query_attention", second_sequence_off).message
    assert "For query head 0 of sequence 1, the output should be" in message, message


def test_keys_and_values_both_left_alone_keep_the_general_hint():
    message = check("grouped_query_attention", lambda Q, K, V: attnlab.attention(Q, K, V)).message
    assert "your values still have only H_kv heads" not in message, message


@pytest.mark.parametrize(("answer", "phrase"), GQA_MISTAKES)
def test_classic_grouped_query_attention_mistakes_fail_and_are_named(answer, phrase):
    result = check("grouped_query_attention", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def test_grouped_query_attention_is_multi_head_attention_with_shared_heads(rng):
    X = rng.normal(size=(2, 5, 12))
    W_Q, W_O = rng.normal(size=(12, 12)), rng.normal(size=(12, 12))
    W_K, W_V = rng.normal(size=(12, 4)), rng.normal(size=(12, 4))  # 2 key/value heads of 2
    Q, K, V = split_heads(X @ W_Q, 6), split_heads(X @ W_K, 2), split_heads(X @ W_V, 2)
    heads = attnlab.grouped_query_attention(Q, K, V)
    np.testing.assert_allclose(heads, gqa_loop(Q, K, V), rtol=1e-12)
    np.testing.assert_allclose(
        merge_heads(heads) @ W_O,
        attnlab.multi_head_attention(X, W_Q, W_K, W_V, W_O, 6, n_kv_heads=2),
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((6, 3, 2), (4, 3, 2), (4, 3, 2)), "not a multiple"),
        (((6, 3, 2), (2, 3, 2), (3, 3, 2)), "V has 3"),
        (((3, 2), (1, 3, 2), (1, 3, 2)), "Q must have at least 3 dimensions"),
    ],
)
def test_grouped_query_attention_names_bad_head_counts(shapes, message):
    Q, K, V = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        attnlab.grouped_query_attention(Q, K, V)


# ------------------------------------------------------- exercise: kv_cache_bytes


KV_CORRECT = [
    solutions.kv_cache_bytes,
    lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
        n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number * 2.0
    ),
    lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: np.prod(
        [2, n_layers, n_tokens, n_kv_heads, d_head, bytes_per_number], dtype=np.int64
    ),
]


@pytest.mark.parametrize("answer", KV_CORRECT)
def test_correct_kv_cache_bytes_answers_pass(answer):
    result = check("kv_cache_bytes", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("factor", "phrase"),
    [
        (lambda L, T, H, Hkv, d, b: L * T * Hkv * d * b, "half the right one"),
        (lambda L, T, H, Hkv, d, b: 2 * L * T * H * d * b, "counted the query heads"),
        (lambda L, T, H, Hkv, d, b: 2 * L * T * H * Hkv * d * b, "both n_heads and n_kv_heads"),
        (lambda L, T, H, Hkv, d, b: 2 * T * Hkv * d * b, "You counted one layer"),
        (lambda L, T, H, Hkv, d, b: 2 * L * T * Hkv * d, "counted numbers, not bytes"),
        (lambda L, T, H, Hkv, d, b: 3 * L * T * Hkv * d * b, "Queries are not cached"),
        (lambda L, T, H, Hkv, d, b: (2 * Hkv + H) * L * T * d * b, "cached the queries too"),
    ],
)
def test_classic_kv_cache_mistakes_fail_and_are_named(factor, phrase):
    result = check("kv_cache_bytes", factor)
    assert not result.passed
    assert phrase in result.message, result.message
    # The failing example lists all six arguments, so the call can be retyped.
    for argument in ("n_layers", "n_tokens", "n_heads", "n_kv_heads", "d_head", "bytes_per_number"):
        assert f"\n{argument} = " in result.message, (argument, result.message)


# -------------------------------------------------- exercise: padding_causal_mask


def mask_loop(lengths, n):
    out = np.zeros((len(lengths), n, n), dtype=bool)
    for b, length in enumerate(lengths):
        for i in range(n):
            for j in range(n):
                out[b, i, j] = j < length and j <= i
    return out


MASK_CORRECT = [
    solutions.padding_causal_mask,
    mask_loop,
    lambda lengths, n: (
        np.tril(np.ones((n, n), dtype=bool)) & (np.arange(n) < np.asarray(lengths)[:, None, None])
    ),
    lambda lengths, n: np.stack(
        [np.tril(np.ones((n, n), dtype=bool)) & (np.arange(n) < length) for length in lengths]
    ),
    lambda lengths, n: solutions.padding_causal_mask(lengths, n).astype(int),
]


@pytest.mark.parametrize("answer", MASK_CORRECT)
def test_correct_padding_causal_mask_answers_pass(answer):
    result = check("padding_causal_mask", answer)
    assert result.passed, result.message


def _real(lengths, n):
    return np.arange(n)[None, :] < np.asarray(lengths)[:, None]


MASK_MISTAKES = [
    (lambda lengths, n: _real(lengths, n)[:, None, :] | attnlab.causal_mask(n), "with OR"),
    (
        lambda lengths, n: _real(lengths, n)[:, :, None] & attnlab.causal_mask(n),
        "blocks the padding queries' rows",
    ),
    (
        lambda lengths, n: (
            (np.arange(n) <= np.asarray(lengths)[:, None])[:, None, :] & attnlab.causal_mask(n)
        ),
        "lets one padding key through",
    ),
    (
        lambda lengths, n: _real(lengths, n)[:, None, :] & attnlab.causal_mask(n).T,
        "wrong way round",
    ),
    (lambda lengths, n: _real(lengths, n), "(batch, n, n)"),
    (lambda lengths, n: attnlab.causal_mask(n), "(batch, n, n)"),
    (
        lambda lengths, n: (
            (np.arange(n) >= n - np.asarray(lengths)[:, None])[:, None, :] & attnlab.causal_mask(n)
        ),
        "padding at the start",
    ),
    (
        lambda lengths, n: _real(lengths, n)[:, None, :] & ~attnlab.causal_mask(n),
        "lets only the future through",
    ),
    (
        lambda lengths, n: _real(lengths, n)[:, None, :] & np.tri(n, k=1, dtype=bool),
        "one diagonal too far",
    ),
    (
        lambda lengths, n: np.where(solutions.padding_causal_mask(lengths, n), 0.0, -np.inf),
        "an additive mask",
    ),
    (
        lambda lengths, n: np.where(solutions.padding_causal_mask(lengths, n), 0.0, -1e9),
        "an additive mask",
    ),
]


@pytest.mark.parametrize(("answer", "phrase"), MASK_MISTAKES)
def test_classic_padding_causal_mask_mistakes_fail_and_are_named(answer, phrase):
    result = check("padding_causal_mask", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def _not_written(*args):
    raise NotImplementedError


def test_odd_answers_fail_kindly():
    assert "haven't written" in check("multi_head_attention", _not_written).message
    assert "returned None" in check("kv_cache_bytes", lambda *a: None).message
    assert "returned None" in check("padding_causal_mask", lambda lengths, n: None).message


def test_exercises_are_registered_for_lesson_06_with_their_solutions():
    for exercise_id in (
        "multi_head_attention",
        "grouped_query_attention",
        "kv_cache_bytes",
        "padding_causal_mask",
    ):
        assert exercise_id in exercise_ids()
        assert get_exercise(exercise_id).lesson == "notebooks/06_heads_and_masks.ipynb"
        code = solution(exercise_id)
        assert code.startswith(f"def {exercise_id}(") and "return" in code
    assert solution("multi_head_attention").uses == ("attention",)


def test_every_mistake_differs_from_the_reference_on_some_case():
    for cases, mistakes, reference in [
        (exercise.mha_cases(), exercise.MHA_MISTAKES, attnlab.multi_head_attention),
        (exercise.kv_cases(), exercise.KV_MISTAKES, solutions.kv_cache_bytes),
        (exercise.mask_cases(), exercise.MASK_MISTAKES, lesson.padding_causal_mask),
    ]:
        for mistake in mistakes:
            with np.errstate(all="ignore"):
                differs = [
                    not np.array_equal(
                        np.asarray(mistake.compute(*c.inputs.values())),
                        np.asarray(reference(*c.inputs.values())),
                    )
                    and not np.allclose(
                        mistake.compute(*c.inputs.values()),
                        reference(*c.inputs.values()),
                        equal_nan=True,
                    )
                    for c in cases
                ]
            assert any(differs), mistake.message[:60]


def test_a_loop_that_divides_by_the_number_of_key_value_heads_is_asked_about_groups():
    def divides_by_h_kv(Q, K, V):
        H_kv = K.shape[-3]
        heads = [
            attnlab.attention(Q[..., h, :, :], K[..., h // H_kv, :, :], V[..., h // H_kv, :, :])
            for h in range(Q.shape[-3])
        ]
        return np.stack(heads, axis=-3)

    message = check("grouped_query_attention", divides_by_h_kv).message
    assert "IndexError" in message and "how many query heads share" in message


def test_heads_moved_in_front_of_the_batch_are_named():
    message = check(
        "grouped_query_attention", lambda Q, K, V: np.moveaxis(gqa_loop(Q, K, V), -3, 0)
    ).message
    assert "head axis came out first" in message


def test_a_float_mask_joined_with_and_gets_the_boolean_note():
    def float_causal(lengths, n):
        real = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
        return real[:, None, :] & np.tril(np.ones((n, n)))

    message = check("padding_causal_mask", float_causal).message
    assert "bitwise_and" in message and "comparison such as `j <= i`" in message


def test_one_token_too_many_in_the_cache_fails_with_the_gap_in_bytes():
    def one_more_token(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
        return solutions.kv_cache_bytes(
            n_layers, n_tokens + 1, n_heads, n_kv_heads, d_head, bytes_per_number
        )

    result = check("kv_cache_bytes", one_more_token)
    assert not result.passed
    # 32 layers × 1 token × 2 × 8 heads × 128 numbers × 4 bytes
    assert f"{32 * 2 * 8 * 128 * 4} more than the right one" in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda lengths, n: ~solutions.padding_causal_mask(lengths, n), "opposite convention"),
        (lambda lengths, n: _real(np.asarray(lengths) - 1, n)[:, None, :] & attnlab.causal_mask(n),
         "drops the last real token"),
        # Blocking padding on both axes gives the same mask as on rows alone.
        (lambda lengths, n: (_real(lengths, n)[:, :, None] & _real(lengths, n)[:, None, :])
         & attnlab.causal_mask(n), "which the exercise keeps"),
    ],
)  # fmt: skip
def test_more_mask_slips_are_named(answer, phrase):
    message = check("padding_causal_mask", answer).message
    assert phrase in message, message


def test_the_group_size_in_place_of_the_key_value_heads_is_named():
    def group_size(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
        return 2 * n_layers * n_tokens * (n_heads // n_kv_heads) * d_head * bytes_per_number

    assert "group size" in check("kv_cache_bytes", group_size).message


def test_a_float_size_used_as_an_index_gets_the_floor_division_question():
    def float_head_width(X, W_Q, W_K, W_V, W_O, n_heads):
        d_head = X.shape[1] / n_heads
        return X[:, :d_head]

    message = check("multi_head_attention", float_head_width).message
    assert "`//`" in message


def _list_of_rows(lengths, n):
    real = [np.arange(n) < length for length in lengths]
    return real[:, None, :] & attnlab.causal_mask(n)


def _tuple_of_rows(lengths, n):
    real = tuple(np.arange(n) < length for length in lengths)
    return real[None] & attnlab.causal_mask(n)


@pytest.mark.parametrize("answer", [_list_of_rows, _tuple_of_rows])
def test_a_list_indexed_like_an_array_is_told_it_is_a_list_not_a_float(answer):
    message = check("padding_causal_mask", answer).message
    assert "Python list" in message and "np.array" in message, message
    assert "float" not in message and "`//`" not in message, message


def test_a_list_indexed_by_a_float_still_gets_the_floor_division_question():
    def float_index(lengths, n):
        rows = [np.arange(n) < length for length in lengths]
        return np.stack([rows[b / 1] for b in range(len(lengths))])[:, None] & attnlab.causal_mask(
            n
        )

    message = check("padding_causal_mask", float_index).message
    assert "`//`" in message and "Python list" not in message, message


def test_grouped_query_failures_do_not_print_the_arrays():
    message = check("grouped_query_attention", lambda Q, K, V: gqa_loop(Q, K, V)[..., ::-1, :, :])
    assert "returned," not in message.message and "Expected" not in message.message


def test_a_head_loop_that_indexes_the_batch_axis_is_told_where_the_heads_are():
    def first_axis(Q, K, V):
        group = Q.shape[-3] // K.shape[-3]
        return np.stack(
            [attnlab.attention(Q[h], K[h // group], V[h // group]) for h in range(Q.shape[-3])]
        )

    message = check("grouped_query_attention", first_axis).message
    assert "axis −3" in message and "picks a sequence" in message


# ------------------------------------------- more multi-head slips, written as learners would


def _head_loop(X, W_Q, W_K, W_V, W_O, n_heads, *, scaled=False, rows=False, blocks=False,
               swapped=False, average=False, transpose_in=False):  # fmt: skip
    """A learner's loop over the heads, with one slip switched on."""
    d = X.shape[1]
    dh = n_heads if swapped else d // n_heads
    count = d // dh
    T = (lambda W: W.T) if transpose_in else (lambda W: W)
    outs = []
    for h in range(count):
        s = slice(h * dh, (h + 1) * dh)
        if blocks:
            Q, K, V = (X[:, s] @ W[s, s] for W in (W_Q, W_K, W_V))
        elif rows:
            Q, K, V = ((X @ W)[s] for W in (W_Q, W_K, W_V))
            if not len(Q):
                continue
        else:
            Q, K, V = ((X @ T(W))[:, s] for W in (W_Q, W_K, W_V))
        out = attnlab.attention(Q / np.sqrt(dh) if scaled else Q, K, V)
        outs.append(out @ W_O[s] if average else out)
    if average:
        return np.mean(outs, axis=0)
    return (np.vstack(outs) if rows else np.hstack(outs)) @ W_O


@pytest.mark.parametrize(
    ("slip", "phrase"),
    [
        ("scaled", "√d_head twice"),
        ("rows", "slices of *rows*"),
        ("blocks", "diagonal block"),
        ("swapped", "n_heads and d_head are swapped"),
        ("average", "averaged the heads"),
        ("transpose_in", "W_Q, W_K and W_V transposed"),
    ],
)
def test_head_loop_slips_are_named(slip, phrase):
    result = check("multi_head_attention", lambda *a: _head_loop(*a, **{slip: True}))
    assert not result.passed
    assert phrase in result.message, result.message


def _mha_weights_slip(X, W_Q, W_K, W_V, W_O, n_heads, *, slip):
    dh = X.shape[1] // n_heads
    outs = []
    for h in range(n_heads):
        Q, K, V = ((X @ W)[:, h * dh : (h + 1) * dh] for W in (W_Q, W_K, W_V))
        S = (K @ Q.T if slip == "K Qᵀ" else Q @ K.T) / np.sqrt(dh)
        E = np.exp(S - S.max())
        outs.append((E / E.sum() if slip == "whole" else _softmax(S)) @ V)
    return np.hstack(outs) @ W_O


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda *a: _mha_weights_slip(*a, slip="K Qᵀ"), "transposed scores"),
        (
            lambda X, W_Q, W_K, W_V, W_O, H: mha_einsum(X, W_K, W_Q, W_V, W_O, H),
            "transposed scores",
        ),
        (lambda *a: _mha_weights_slip(*a, slip="whole"), "all n² weights of a head sum to 1"),
    ],
)
def test_multi_head_weight_slips_are_named(answer, phrase):
    result = check("multi_head_attention", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def test_a_loop_right_for_one_head_only_is_told_to_look_at_the_split_or_the_merge():
    def heads_in_reverse(X, W_Q, W_K, W_V, W_O, n_heads):
        dh = X.shape[1] // n_heads
        outs = [
            attnlab.attention(*((X @ W)[:, h * dh : (h + 1) * dh] for W in (W_Q, W_K, W_V)))
            for h in range(n_heads)
        ]
        return np.hstack(outs[::-1]) @ W_O

    message = check("multi_head_attention", heads_in_reverse).message
    assert "right with a single head" in message and "split or the merge" in message, message


def _mha_output_blocks(X, W_Q, W_K, W_V, W_O, n_heads, *, input_blocks=False):
    """A learner's loop in which each head keeps to its own diagonal block of W_O."""
    dh = X.shape[1] // n_heads
    outs = []
    for h in range(n_heads):
        s = slice(h * dh, (h + 1) * dh)
        if input_blocks:
            Q, K, V = (X[:, s] @ W[s, s] for W in (W_Q, W_K, W_V))
        else:
            Q, K, V = ((X @ W)[:, s] for W in (W_Q, W_K, W_V))
        outs.append(attnlab.attention(Q, K, V) @ W_O[s, s])
    return np.hstack(outs)


@pytest.mark.parametrize(
    ("input_blocks", "phrase"),
    [(False, "its own diagonal block of W_O"), (True, "only diagonal blocks of the weights")],
)
def test_a_diagonal_block_of_w_o_per_head_is_named(input_blocks, phrase):
    result = check(
        "multi_head_attention", lambda *a: _mha_output_blocks(*a, input_blocks=input_blocks)
    )
    assert not result.passed
    assert phrase in result.message, result.message
    assert "split or the merge" not in result.message


def test_groups_in_reverse_order_are_told_which_heads_they_read():
    def reversed_groups(Q, K, V):
        group = Q.shape[-3] // K.shape[-3]
        K, V = (np.repeat(A[..., ::-1, :, :], group, axis=-3) for A in (K, V))
        return attnlab.attention(Q, K, V)

    message = check("grouped_query_attention", reversed_groups).message
    assert "None of your query heads reads the right key/value head" in message, message
    assert "read key/value heads 1, 1, 1, 0, 0, 0" in message
    assert "0, 0, 0, 1, 1, 1" not in message  # the right wiring is not given away


def test_the_single_head_case_is_checked_first():
    assert exercise.mha_cases()[0].inputs["n_heads"] == 1


@pytest.mark.parametrize(
    ("divisor", "unit"),
    [(2**10, "KiB"), (2**20, "MiB"), (2**30, "GiB"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB")],
)
def test_a_cache_size_in_mib_is_asked_about_units(divisor, unit):
    def in_units(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
        return (
            solutions.kv_cache_bytes(
                n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number
            )
            / divisor
        )

    message = check("kv_cache_bytes", in_units).message
    assert f"did you convert to {unit}?" in message, message


@pytest.mark.parametrize("container", [tuple, list])
def test_a_cache_size_returned_with_its_unit_is_asked_for_one_number(container):
    def labelled(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
        size = solutions.kv_cache_bytes(
            n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number
        )
        return container([size, "bytes"])

    message = check("kv_cache_bytes", labelled).message
    assert "return one number on its own" in message, message
    assert "list of lists" not in message


def _mask_with_lengths(pick):
    """A mask that gives every sequence the length ``pick(lengths)``."""

    def answer(lengths, n):
        return solutions.padding_causal_mask(np.full(len(lengths), pick(lengths)), n)

    return answer


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (
            _mask_with_lengths(lambda lengths: lengths[0]),
            "right for sequence 0 (length 3) but not for sequence 1 (length 1). Its mask is "
            "the right one for length 3, the length of sequence 0",
        ),
        (
            _mask_with_lengths(max),
            "right for sequence 2 (length 4) but not for sequence 0 (length 3). Its mask is "
            "the right one for length 4, the length of sequence 2",
        ),
    ],
)
def test_one_length_for_every_sequence_is_told_which_sequence_is_wrong(answer, phrase):
    message = check("padding_causal_mask", answer).message
    assert phrase in message, message
    assert "use its own length, lengths[b]?" in message


def test_a_mask_wrong_in_one_sequence_only_is_told_which():
    def one_entry_off(lengths, n):
        mask = solutions.padding_causal_mask(lengths, n)
        if len(lengths) > 1:
            mask[1, -1, 0] = False
        return mask

    message = check("padding_causal_mask", one_entry_off).message
    assert "right for sequence 0 (length 3) but not for sequence 1 (length 1)." in message
    assert "Compare your mask for sequence 1 with the expected one below." in message, message


def test_python_and_on_arrays_gets_the_ampersand_hint():
    def python_and(lengths, n):
        j = np.arange(n)
        return (j[None, :] < np.asarray(lengths)[:, None])[:, None, :] and (
            j[None, :] <= j[:, None]
        )

    message = check("padding_causal_mask", python_and).message
    assert "ambiguous" in message and "Use & for element-wise AND" in message, message
