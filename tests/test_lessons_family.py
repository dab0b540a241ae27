"""Tests for the attention family lesson's functions (``attnlab.lessons.family``) and its
exercises' checker.

Lesson: ``notebooks/09_attention_family.ipynb``.
"""

import os
import re

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnlab
from attnlab.exercises import check, get_exercise, solutions
from attnlab.exercises import ex09_family as ex
from attnlab.lessons import family


def test_additive_scores_match_a_loop_and_stay_below_the_l1_norm_of_v(rng):
    Q, K = rng.normal(size=(3, 5)) * 10, rng.normal(size=(4, 5)) * 10
    W_q, W_k, v = family.additive_params(5, 7, rng)
    S = family.additive_scores(Q, K, W_q, W_k, v)
    loop = [[v @ np.tanh(q @ W_q + k @ W_k) for k in K] for q in Q]
    np.testing.assert_allclose(S, loop)
    assert np.abs(S).max() <= np.abs(v).sum()


def test_score_spreads_grow_like_root_d_k_for_the_dot_product_only():
    s = family.score_spreads([16, 256])
    np.testing.assert_allclose(s["dot"], [4, 16], rtol=0.1)
    np.testing.assert_allclose(s["scaled"], 1, rtol=0.1)
    assert (s["largest_additive"] <= s["bound"]).all() and (s["additive"] < 1).all()


def test_score_costs():
    c = family.score_costs(10, 20, d_k=4, d_a=3, d_model=5)
    # like for like: both with the projections that make their inputs; only v is extra
    assert c["dot_params"] == 2 * 5 * 4 and c["additive_params"] == 2 * 5 * 3 + 3
    assert c["dot_madds"] == 30 * 5 * 4 + 10 * 20 * 4
    assert c["additive_madds"] == 30 * 5 * 3 + 10 * 20 * 3
    assert c["additive_adds"] == c["additive_tanh"] == 10 * 20 * 3  # one of each per entry
    assert c["additive_largest"] == 10 * 20 * 3
    same = family.score_costs(10, 20, d_k=4, d_a=4)
    assert same["additive_params"] - same["dot_params"] == 4


def test_relative_bias_reads_the_table_by_distance():
    table = np.arange(7.0)  # distances -3 … 3
    B = family.relative_bias(4, table)
    assert B[0, 0] == 3 and B[3, 0] == 6 and B[0, 3] == 0
    with pytest.raises(ValueError, match="2n - 1"):
        family.relative_bias(4, np.ones(5))


def test_t5_buckets_follow_the_t5_rule():
    # Exact below 8 (of 16 per direction), log-spaced up to 128, the last bucket after.
    assert list(family.t5_bucket(-np.arange(8))) == list(range(8))
    assert family.t5_bucket(np.array(-1000)) == 15
    assert family.t5_bucket(np.array(3)) == 16 + 3
    assert family.t5_bucket(np.array(0)) == 0
    far = family.t5_bucket(-np.arange(200))
    assert (np.diff(far) >= 0).all() and far.max() == 15
    causal = family.t5_bucket(np.array([5, -5, -500]), bidirectional=False)
    assert list(causal) == [0, 5, 31]


# T5's rule with the defaults: 8 exact buckets per direction, then bucket
# 8 + floor(8 · log2(n/8) / log2(16)) up to the last, 15. Here 8 · log2(n/8) / 4 =
# log2(n²/64), so the floor is the bit length of n² // 64, less 1: exact integer arithmetic.
def t5_rule(n):
    return min(8 + (n * n // 64).bit_length() - 1, 15)


@pytest.mark.parametrize(
    ("n", "bucket"),
    [
        (15, 9),
        (16, 10),
        (31, 11),
        (32, 12),
        (63, 13),
        (64, 14),
        (90, 14),
        (91, 15),
        (127, 15),
        (128, 15),
        (129, 15),
        (10_000, 15),
    ],
)
def test_t5_buckets_at_the_boundaries_in_both_directions(n, bucket):
    # 16, 32 and 64 sit exactly on a boundary: a log a hair low would move them down one.
    assert t5_rule(n) == bucket
    assert family.t5_bucket(np.array(-n)) == bucket  # the key n tokens before the query
    assert family.t5_bucket(np.array(n)) == 16 + bucket  # n tokens after it


def test_t5_buckets_match_the_rule_at_every_distance():
    n = np.arange(8, 5001)
    want = np.array([t5_rule(int(k)) for k in n])
    np.testing.assert_array_equal(family.t5_bucket(-n), want)
    np.testing.assert_array_equal(family.t5_bucket(n), 16 + want)


def test_rotated_scores_depend_only_on_the_distance():
    # RoPE, lesson 09: R(a)ᵀ R(b) = R(b − a), so (R(iθ) q) · (R(jθ) k) depends on i − j only.
    rng = np.random.default_rng(4)
    q, k = rng.normal(size=(2, 2))
    scores = [
        (family.rotation(i * 0.3) @ q) @ (family.rotation(j * 0.3) @ k)
        for i, j in ((3, 1), (40, 38))
    ]
    assert scores[0] == pytest.approx(scores[1], abs=1e-12)
    R = family.rotation(0.7)
    np.testing.assert_allclose(R.T @ R, np.eye(2), atol=1e-15)
    np.testing.assert_allclose(
        family.rotation(0.2).T @ family.rotation(0.9), family.rotation(0.7), atol=1e-15
    )


def test_relative_bias_reads_one_table_entry_per_diagonal():
    table = np.arange(1.0, 8.0)  # n = 4: b_-3 … b_3 are 1 … 7, so b_0 = 4
    B = family.relative_bias(4, table)
    assert np.all(np.diag(B) == 4) and B[3, 0] == 7 and B[0, 3] == 1
    np.testing.assert_array_equal(B, solutions.relative_bias(4, table))
    np.testing.assert_array_equal(B, ex.relative_bias_reference(4, table))
    with pytest.raises(ValueError, match="table must have 2n - 1 = 7 entries"):
        family.relative_bias(4, table[:-1])


def test_alibi_slopes_and_bias():
    np.testing.assert_allclose(family.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    np.testing.assert_allclose(family.alibi_slopes(4), 2.0 ** (-2 * np.arange(1, 5)))
    B = family.alibi_bias(4, 0.5)
    assert B[3, 0] == -1.5 and B[0, 3] == -1.5 and np.all(np.diag(B) == 0)


def alibi_biases_loop(n, H):
    """One entry at a time: head h (from 0) is the formula's head h + 1."""
    B = np.empty((H, n, n))
    for h in range(H):
        slope = 2.0 ** (-8 * (h + 1) / H)
        for i in range(n):
            for j in range(n):
                B[h, i, j] = -slope * abs(i - j)
    return B


@pytest.mark.parametrize(("n", "H"), [(1, 1), (3, 4), (2, 8), (5, 2), (4, 16)])
def test_alibi_biases_match_a_loop_and_every_version_agrees(n, H):
    want = alibi_biases_loop(n, H)
    for version in (family.alibi_biases, solutions.alibi_biases, ex.alibi_biases_reference):
        np.testing.assert_allclose(version(n, H), want, rtol=1e-15, atol=0)
    # each head is the one-head bias with that head's slope, steepest first
    for h, m in enumerate(family.alibi_slopes(H)):
        np.testing.assert_array_equal(family.alibi_biases(n, H)[h], family.alibi_bias(n, m))


def test_alibi_biases_first_and_last_head():
    B = family.alibi_biases(3, 4)
    assert B.shape == (4, 3, 3)
    assert B[0, 0, 1] == -(2.0**-2) and B[-1, 2, 0] == -2 * 2.0**-8


@pytest.mark.parametrize(
    ("n", "H", "named"),
    [
        (4, 6, "H a power of 2"),
        (4, 0, "number of heads H must be a whole number >= 1, got 0"),
        (4, 2.0, "number of heads H must be a whole number >= 1, got 2.0"),
        (0, 4, "number of tokens n must be a whole number >= 1, got 0"),
        (2.5, 4, "number of tokens n must be a whole number >= 1, got 2.5"),
    ],
)
def test_alibi_biases_name_what_is_wrong_with_n_or_h(n, H, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        family.alibi_biases(n, H)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 6).map(lambda k: 2**k))
def test_alibi_biases_properties(n, H):
    B = family.alibi_biases(n, H)
    assert B.shape == (H, n, n)
    assert (B <= 0).all() and (np.diagonal(B, axis1=1, axis2=2) == 0).all()
    np.testing.assert_array_equal(B, np.swapaxes(B, 1, 2))  # |i − j| = |j − i|
    if n > 1:
        slopes = -B[:, 1, 0]
        np.testing.assert_allclose(slopes[0], 2.0 ** (-8 / H))
        np.testing.assert_allclose(slopes[-1], 2.0**-8)
        np.testing.assert_allclose(slopes[1:] / slopes[:-1], 2.0 ** (-8 / H))  # geometric
        # every diagonal is constant: the bias depends on i − j only
        for k in range(-n + 1, n):
            d = np.diagonal(B, offset=k, axis1=1, axis2=2)
            np.testing.assert_allclose(d, d[:, :1] * np.ones_like(d))


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        # one slope, but not the first head's: the hint still sees the heads are all alike
        (
            lambda n, H: (
                -(2.0**-8)
                * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
                * np.ones((H, 1, 1))
            ),
            "have the same slope",
        ),
        # slopes growing linearly: no named slip, but each head is a multiple of |i − j|
        (
            lambda n, H: (
                -np.arange(1, H + 1)[:, None, None]
                * 2.0 ** (-8 / H)
                * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
            ),
            "the slopes are not ALiBi's",
        ),
        # no axes added: (H,) against (n, n) cannot broadcast
        (
            lambda n, H: (
                -(2.0 ** (-8 * np.arange(1, H + 1) / H))
                * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
            ),
            "Broadcasting lines shapes up",
        ),
        # one head only
        (
            lambda n, H: -(2.0 ** (-8 / H)) * np.abs(np.subtract.outer(np.arange(n), np.arange(n))),
            "one (n, n) bias matrix per head, heads first: (H, n, n)",
        ),
    ],
)
def test_alibi_biases_wrong_answers_no_slip_explains_get_a_pointer(answer, phrase):
    result = check("alibi_biases", answer)
    assert not result.passed
    assert phrase in result.message


def test_alibi_floor_division_in_the_exponent_is_caught_at_h_16():
    def floored(n, H):
        slopes = 2.0 ** (-8 * np.arange(1, H + 1) // H)  # right whenever 8/H is whole
        return -slopes[:, None, None] * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))

    result = check("alibi_biases", floored)
    assert not result.passed
    assert "`-8 * 1 // 16`" in result.message and "H = 16 heads" in result.message


def causal_alibi(fill):
    def answer(n, H):
        i = np.arange(n)
        slopes = 2.0 ** (-8 * np.arange(1, H + 1) / H)
        B = -slopes[:, None, None] * (i[:, None] - i[None, :])  # the paper's −m (i − j)
        return np.where(i[None, :] > i[:, None], fill, B)

    return answer


@pytest.mark.parametrize(
    ("fill", "phrase"),
    [
        (0.0, "your biases are 0"),
        (-np.inf, "your biases are −inf"),
        (-1e9, "right on and below the diagonal"),
    ],
)
def test_alibi_in_its_causal_form_is_told_every_pair_is_asked_for(fill, phrase):
    result = check("alibi_biases", causal_alibi(fill))
    assert not result.passed
    assert phrase in result.message and "What should B[h, 0, 2]" in result.message
    assert "NaN or inf" not in result.message  # −inf is named, not the generic message


@pytest.mark.parametrize(
    ("answer", "hint", "not_hint"),
    [
        # the offset one too large: the last row's first entry is past the end of the table
        (
            lambda n, table: table[np.subtract.outer(np.arange(n), np.arange(n)) + n],
            "index_hint",
            "shape_hint",
        ),
        # two index arrays for a 1-D table: a question of shapes, not of range
        (
            lambda n, table: table[np.arange(n)[:, None], np.arange(n)[None, :]],
            "shape_hint",
            "index_hint",
        ),
    ],
)
def test_relative_bias_index_errors_get_the_hint_for_their_kind(answer, hint, not_hint):
    checker = get_exercise("relative_bias").checker
    result = check("relative_bias", answer)
    assert not result.passed and "raised IndexError" in result.message
    assert getattr(checker, hint) in result.message
    assert getattr(checker, not_hint) not in result.message
    if hint == "index_hint":
        assert "What is the largest index your formula builds" in result.message


def test_index_hint_is_added_only_where_an_exercise_gives_one():
    from attnlab.exercises.arrays import ArrayCheck, Case

    def past_the_end(x):
        return x[np.arange(len(x)) + 1]

    def cases():
        return [Case("x = [1, 2, 3]", {"x": np.array([1.0, 2.0, 3.0])})]

    plain = ArrayCheck(cases, reference=lambda x: x, shape_rule="like x")
    hinted = ArrayCheck(cases, reference=lambda x: x, shape_rule="like x", index_hint="Which?")
    without = plain(past_the_end, name="f", timeout=None).message
    with_hint = hinted(past_the_end, name="f", timeout=None).message
    assert "raised IndexError: index 3 is out of bounds" in without
    assert without.endswith("when called with x of shape (3,).")
    assert with_hint == without + " Which?"


# ------------------------------------------------- feedback that does not give the answer


def feedback_texts(exercise):
    checker = get_exercise(exercise).checker
    hints = [checker.shape_hint, checker.index_hint]
    return [m.message for m in checker.mistakes] + [h for h in hints if h]


@pytest.mark.parametrize(
    ("exercise", "answer_code"),
    [
        ("relative_bias", ("+ n - 1", "+ n − 1", "n - 1]", "[:, None]", "[None, :]")),
        ("alibi_biases", ("[:, None, None]", "(H, 1, 1)", "h + 1", "arange(1, H + 1)")),
        ("linear_attention", ("sum(axis=0)", "[:, None]", "np.exp(x)", "φ(K)ᵀ 1", "phi(")),
    ],
)
def test_feedback_names_the_mistake_without_writing_the_answer(exercise, answer_code):
    for text in feedback_texts(exercise):
        for code in answer_code:
            assert code not in text, (exercise, code, text)


@pytest.mark.parametrize("exercise", ["relative_bias", "alibi_biases", "linear_attention"])
def test_each_mistake_message_ends_with_a_question_or_a_pointer(exercise):
    for text in feedback_texts(exercise):
        assert text.rstrip().endswith("?"), text


def test_linear_feedback_leaves_the_denominator_to_the_learner():
    # The key-side part of the denominator is what the learner works out.
    for text in feedback_texts("linear_attention"):
        assert "d_k numbers" not in text and "key-side part" not in text, text


def test_causal_masks_top_left_and_bottom_right():
    np.testing.assert_array_equal(family.causal_lower_right(4, 4), attnlab.causal_mask(4))
    M = family.causal_lower_right(2, 5)
    np.testing.assert_array_equal(M.sum(axis=1), [4, 5])
    assert attnlab.causal_mask(2, 5).sum() == 3


@pytest.mark.parametrize("n", [10, 17, 40])
@pytest.mark.parametrize("w", [0, 1, 3])
def test_scores_kept_matches_the_masks(n, w):
    assert family.scores_kept(n, "local", window=w) == family.local_mask(n, w).sum()
    for g in (1, 2):
        assert family.scores_kept(n, "global", window=w, n_global=g) == (
            family.global_mask(n, w, range(g)).sum()
        )
    assert family.scores_kept(20, "block", block=5) == family.block_mask(20, 5).sum()
    assert family.scores_kept(n, "full") == n * n
    with pytest.raises(ValueError):
        family.scores_kept(n, "diagonal")


def test_elu_feature_is_positive_and_quiet():
    x = np.array([-1000.0, -1.0, 0.0, 2.0])
    np.testing.assert_allclose(family.elu_feature(x), [0.0, np.exp(-1), 1.0, 3.0])
    assert (family.elu_feature(np.linspace(-30, 30, 61)) > 0).all()


finite = st.floats(-5, 5, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n_q: st.integers(1, 6).flatmap(
            lambda n_k: st.tuples(
                arrays(np.float64, (n_q, 3), elements=finite),
                arrays(np.float64, (n_k, 3), elements=finite),
                arrays(np.float64, (n_k, 2), elements=finite),
            )
        )
    )
)
def test_linear_attention_two_orders_agree(qkv):
    Q, K, V = qkv
    fast = family.linear_attention(Q, K, V)
    np.testing.assert_allclose(fast, family.linear_attention_quadratic(Q, K, V), atol=1e-9)
    np.testing.assert_allclose(fast, solutions.linear_attention(Q, K, V), atol=1e-9)
    np.testing.assert_allclose(fast, ex.linear_attention_reference(Q, K, V), atol=1e-9)
    # a convex combination of the values: inside their range, column by column
    assert (fast >= V.min(axis=0) - 1e-9).all() and (fast <= V.max(axis=0) + 1e-9).all()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            arrays(np.float64, (n, 3), elements=finite),
            arrays(np.float64, (n, 3), elements=finite),
            arrays(np.float64, (n, 2), elements=finite),
        )
    )
)
def test_causal_linear_attention_is_the_masked_quadratic_order(qkv):
    Q, K, V = qkv
    n = len(Q)
    step = family.causal_linear_attention(Q, K, V)
    np.testing.assert_allclose(
        step, family.linear_attention_quadratic(Q, K, V, mask=attnlab.causal_mask(n)), atol=1e-9
    )
    # row i sees only the first i + 1 tokens: it is full linear attention on that prefix
    for i in range(n):
        np.testing.assert_allclose(
            step[i], family.linear_attention(Q[i : i + 1], K[: i + 1], V[: i + 1])[0], atol=1e-9
        )


@pytest.mark.parametrize(
    ("M", "layers_needed"),
    [
        (family.local_mask(32, 2), 16),  # ⌈31/2⌉
        (family.local_mask(20, 3), 7),  # ⌈19/3⌉
        (family.global_mask(32, 1, (0,)), 2),  # in through token 0, then out
        (np.ones((5, 5), dtype=bool), 1),
    ],
)
def test_reach_grows_layer_by_layer_until_everything_is_connected(M, layers_needed):
    assert family.layers_to_connect(M) == layers_needed
    before = family.reach(M, 1)
    np.testing.assert_array_equal(before, M)
    for layers in range(2, layers_needed + 2):
        now = family.reach(M, layers)
        assert (now >= before).all()  # what has reached a token stays reached
        assert now.all() == (layers >= layers_needed), layers
        before = now


def test_blocks_never_reach_outside_their_block():
    M = family.block_mask(16, 4)
    np.testing.assert_array_equal(family.reach(M, 10), M)
    assert family.layers_to_connect(M) is None


def test_linear_weights_cannot_become_one_hot(rng):
    K = rng.normal(size=(8, 16))
    q = K[2]
    curves = family.sharpness(q, K, [1.0, 1e3])
    assert curves["softmax_max"][-1] > 0.999
    assert curves["linear_max"][-1] < 0.5
    np.testing.assert_allclose(
        family.linear_attention_weights((1e6 * q)[None], K)[0], family.linear_limit(q, K), atol=1e-5
    )


def test_linear_costs():
    c = family.linear_costs(np.array([10, 100]), 8)
    np.testing.assert_array_equal(c["quadratic_madds"], [1600, 160000])
    np.testing.assert_array_equal(c["linear_madds"], [2 * 10 * 64 + 160, 2 * 100 * 64 + 1600])
    # the quadratic order holds φ(Q) (n, d) too: at n = 4 < d it is the largest array
    np.testing.assert_array_equal(family.linear_costs(np.array([4]), 8)["quadratic_largest"], [32])


def test_figures_draw(rng):
    import matplotlib.pyplot as plt

    s = family.score_spreads([4, 16], n=16)
    for fig in (
        family.plot_spreads([4, 16], s),
        family.plot_counts([8, 16], {"full": [64, 256]}),
        family.plot_sharpness([1, 2], family.sharpness(np.ones(3), np.eye(3), [1, 2]), 0.5),
        family.plot_linear_cost([8, 16], [1e3, 4e3], [1e2, 2e2]),
    ):
        assert fig.axes
        plt.close(fig)


def test_entropy_curves_draw_the_median_and_the_band_of_every_run():
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from attnlab.lessons.ablation import Run

    seeds, steps = 3, 4
    runs = {
        name: Run(
            d_k=256,
            divisor=name,
            scale=1.0,
            seeds=tuple(range(seeds)),
            n_pairs=6,
            loss=np.ones((seeds, steps)),
            accuracy=np.linspace(0, 1, seeds * steps).reshape(seeds, steps),
            entropy=np.full((seeds, steps), 0.5),
            final_accuracy=np.ones(seeds),
            final_entropy=np.zeros(seeds),
        )
        for name in ("√d_k", "1")
    }
    fig = family.plot_entropy_curves(runs, n_pairs=6, n_values=16)
    entropy_axes, loss_axes, accuracy_axes = fig.axes
    assert [line.get_label() for line in accuracy_axes.lines] == ["÷ √d_k", "÷ 1"]
    # The accuracy line is the median over the seeds, the band spans all of them.
    np.testing.assert_allclose(
        accuracy_axes.lines[0].get_ydata(), np.median(runs["1"].accuracy, axis=0)
    )
    bands = [c for c in accuracy_axes.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(ys.min(), 0) and np.isclose(ys.max(), 1)
    plt.close(fig)


def test_sdpa_backends_math_runs_everything():
    torch = pytest.importorskip("torch")
    x = torch.ones(1, 4, 2)
    found = family.sdpa_backends({"plain": {"query": x, "key": x, "value": x}})
    assert "math" in found["plain"]


# ------------------------------------------------------- the checker's memory test


def quadratic_answer(Q, K, V):
    A = ex.elu_feature(Q) @ ex.elu_feature(K).T
    return A / A.sum(axis=1, keepdims=True) @ V


def test_linear_attention_in_the_quadratic_order_fails_on_memory():
    result = check("linear_attention", quadratic_answer)
    assert not result.passed
    assert "right numbers" in result.message
    # it names the left-to-right order of a chain of @, the usual way into this order
    assert "from left to right" in result.message and "brackets" in result.message
    # it points at the key side of both sums, without writing the denominator's code
    assert "denominator" in result.message and result.message.rstrip().endswith("?")
    for code in ("sum(axis=0)", "[:, None]", "φ(K)ᵀ 1", "phi(", "d_k numbers"):
        assert code not in result.message


def test_a_chain_of_at_signs_is_told_it_runs_left_to_right():
    def chained(Q, K, V):
        phi_q, phi_k = ex.elu_feature(Q), ex.elu_feature(K)
        return phi_q @ phi_k.T @ V / (phi_q @ phi_k.sum(axis=0))[:, None]

    result = check("linear_attention", chained)
    assert not result.passed
    assert "A chain of `@` is evaluated from left to right" in result.message


def test_linear_attention_in_the_linear_order_passes_and_says_so():
    result = check("linear_attention", solutions.linear_attention)
    assert result.passed, result.message
    assert "linear memory" in result.message


def test_an_answer_fixed_to_the_small_sizes_fails_on_the_large_input():
    def small_only(Q, K, V):
        out = solutions.linear_attention(Q, K, V)
        return out if len(Q) < 100 else np.zeros_like(out)

    result = check("linear_attention", small_only)
    assert not result.passed and "2000" in result.message


@pytest.mark.parametrize(("n_q", "n_k"), [(1, 1), (2, 5), (4, 4), (1, 9), (3, 8)])
def test_the_lower_right_mask_agrees_with_numpy_and_the_solution(n_q, n_k):
    from attnlab.exercises import solutions

    mask = family.causal_lower_right(n_q, n_k)
    assert mask.dtype == bool and mask.shape == (n_q, n_k)
    np.testing.assert_array_equal(mask, np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q))
    np.testing.assert_array_equal(mask, solutions.causal_lower_right(n_q, n_k))
    assert mask[-1].all()  # the newest token sees every key, its own included


def _offset_mask(offset):
    def answer(n_q, n_k):
        return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + offset(n_q, n_k)

    return answer


@pytest.mark.parametrize(
    ("answer", "named", "not_named"),
    [
        # A fixed offset of 3 gives the 'offset n_q' mask on 3 new tokens, but not on the
        # others: it must get the first-wrong-row question, not that mistake's name.
        (_offset_mask(lambda n_q, n_k: 3), "Row 0 of your mask", "number of new tokens"),
        (_offset_mask(lambda n_q, n_k: n_k // 2), "Row 0 of your mask", "own key"),
        (_offset_mask(lambda n_q, n_k: n_q), "number of new tokens", "Row 0"),
        (_offset_mask(lambda n_q, n_k: 0), "aligned at the top left", "Row 0"),
    ],
)
def test_a_mistake_is_named_only_when_it_explains_every_test_input(answer, named, not_named):
    result = check("causal_lower_right", answer)
    assert not result.passed
    assert named in result.message and not_named not in result.message, result.message


def test_a_wrong_lower_right_mask_is_not_shown_the_expected_mask():
    message = check("causal_lower_right", _offset_mask(lambda n_q, n_k: 0)).message
    assert "Your `causal_lower_right` returned, shape (3, 8)" in message
    assert "Expected" not in message


def test_a_torch_mask_object_is_named_not_misread():
    torch = pytest.importorskip("torch")
    from torch.nn.attention.bias import causal_lower_right as torch_mask

    message = check("causal_lower_right", torch_mask).message
    assert "PyTorch `CausalBias`" in message
    plain = check("causal_lower_right", lambda n_q, n_k: torch.ones(n_q, n_k).tril(n_k - n_q))
    assert plain.passed, plain.message


def test_an_additive_mask_is_told_the_exercise_wants_the_bool_form():
    def additive(n_q, n_k):
        keep = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)
        return np.where(keep, 0.0, -np.inf)

    message = check("causal_lower_right", additive).message
    assert "additive form" in message and "bool form" in message
