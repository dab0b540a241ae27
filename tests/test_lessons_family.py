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


def test_alibi_exponent_multiplied_by_the_head_count_is_named():
    # 2^(−8hH): slopes 2^(−32), 2^(−64), … all differ, though all lie within 1e-9 of 0
    result = check(
        "alibi_biases", _alibi_with_slopes(lambda H: 2.0 ** (-8 * np.arange(1, H + 1) * H))
    )
    assert not result.passed
    assert "you multiplied by H where the formula" in result.message
    assert "same slope" not in result.message


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
    ("answer", "phrase"),
    [
        # an integer base to a negative integer power: NumPy refuses it
        (
            lambda n, H: (
                -(2 ** (-8 * np.arange(1, H + 1) // H))[:, None, None]
                * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
            ),
            "Which of the two should be a float",
        ),
        # H − 1 slopes reshaped into H heads
        (
            lambda n, H: (
                -(2.0 ** (-8 * np.arange(1, H) / H)).reshape(H, 1, 1)
                * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
            ),
            "one head short",
        ),
        # a loop over h = 1 … H − 1 into an (H, n, n) array: the last head stays zero
        (
            lambda n, H: np.concatenate(
                [
                    -(2.0 ** (-8 * np.arange(1, H) / H))[:, None, None]
                    * np.abs(np.subtract.outer(np.arange(n), np.arange(n))),
                    np.zeros((1, n, n)),
                ]
            ),
            "never reached the last head",
        ),
    ],
)
def test_alibi_errors_and_a_missing_last_head_are_named(answer, phrase):
    result = check("alibi_biases", answer)
    assert not result.passed
    assert phrase in result.message


def _alibi_with_slopes(slopes):
    return lambda n, H: (
        -np.asarray(slopes(H))[:, None, None]
        * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    )


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        # slopes written for 8 heads: right at H = 8 only
        (_alibi_with_slopes(lambda H: 0.5 ** np.arange(1, H + 1)), "only when H = 8"),
        (_alibi_with_slopes(lambda H: [0.5**h for h in range(1, H + 1)]), "only when H = 8"),
        (_alibi_with_slopes(lambda H: 0.5 ** np.arange(H)), "Your head 0 has slope 1, and"),
        # the right exponent on base e
        (_alibi_with_slopes(lambda H: np.exp(-8 * np.arange(1, H + 1) / H)), "powers of e"),
    ],
)
def test_alibi_slopes_for_8_heads_or_on_base_e_are_named(answer, phrase):
    result = check("alibi_biases", answer)
    assert not result.passed
    assert phrase in result.message


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


def feedback_texts(exercise):
    checker = get_exercise(exercise).checker
    hints = [checker.shape_hint, checker.index_hint, getattr(checker, "whole_numbers_hint", "")]
    return [m.message for m in checker.mistakes] + [h for h in hints if h]


@pytest.mark.parametrize(
    ("exercise", "answer_code"),
    [
        ("alibi_biases", ("[:, None, None]", "(H, 1, 1)", "h + 1", "arange(1, H + 1)")),
        ("reach", ("> 0", "matrix_power", "@ M", "@ step", "range(L", "astype")),
        ("rope", ("0::2] =", "1::2] =", "[:, None] *", "np.stack(", "np.empty_like")),
    ],
)
def test_feedback_names_the_mistake_without_writing_the_answer(exercise, answer_code):
    for text in feedback_texts(exercise):
        for code in answer_code:
            assert code not in text, (exercise, code, text)


@pytest.mark.parametrize("exercise", ["alibi_biases", "rope", "reach"])
def test_each_mistake_message_ends_with_a_question_or_a_pointer(exercise):
    for text in feedback_texts(exercise):
        assert text.rstrip().endswith("?"), text


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


def test_random_keys_shorten_the_path_across_a_window():
    M = family.random_keys_mask(64, 2, 2, seed=0)
    local = family.local_mask(64, 2)
    assert (M >= local).all()  # the window is kept
    assert ((M & ~local).sum(axis=1) <= 2).all()  # at most 2 extra keys per query
    np.testing.assert_array_equal(M, family.random_keys_mask(64, 2, 2, seed=0))
    assert family.layers_to_connect(M) < family.layers_to_connect(local) // 4


def test_rope_decay_figure_starts_at_one_and_decays():
    import matplotlib.pyplot as plt

    fig = family.plot_rope_decay(d=64, max_distance=1000)
    y = fig.axes[0].lines[0].get_ydata()
    assert y[0] < 1 and y[-200:].mean() < 0.5 * y[:5].mean()
    plt.close(fig)


@pytest.mark.parametrize(
    ("exercise", "answer", "phrase"),
    [
        (
            "alibi_biases",
            lambda n, H: np.broadcast_to(
                family.alibi_slopes(H)[:, None, None] * np.arange(n), (H, n, n)
            ),
            "key's position",
        ),
    ],
)
def test_per_key_alibi_is_named(exercise, answer, phrase):
    feedback = check(exercise, answer)
    assert not feedback
    assert phrase in feedback.message


def test_figures_draw(rng):
    import matplotlib.pyplot as plt

    s = family.score_spreads([4, 16], n=16)
    for fig in (family.plot_spreads([4, 16], s),):
        assert fig.axes
        plt.close(fig)


def test_rope_matches_the_two_by_two_rotation_and_depends_only_on_the_distance(rng):
    n, d = 12, 8
    Q, K = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    R = family.rope(Q)
    theta = family.rope_angles(d)
    np.testing.assert_allclose(theta, 10000.0 ** (-np.arange(4) / 4))
    for i in (0, 5):
        for f in range(d // 2):
            want = family.rotation(i * theta[f]) @ Q[i, 2 * f : 2 * f + 2]
            np.testing.assert_allclose(R[i, 2 * f : 2 * f + 2], want, atol=1e-12)
    S = R @ family.rope(K).T
    np.testing.assert_allclose(family.rope(Q, start=50) @ family.rope(K, start=50).T, S, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(R, axis=1), np.linalg.norm(Q, axis=1))
    with pytest.raises(ValueError, match="even"):
        family.rope_angles(7)


def test_reach_explorer_random_pattern_is_the_window_plus_two_random_keys():
    from attnlab.widgets import reach_explorer

    w = reach_explorer()
    w.controls["pattern"].value = "random"
    M = family.random_keys_mask(32, 2, 2, seed=0)
    np.testing.assert_array_equal(w.shown["mask"], M)
    # the shortcuts connect every token in far fewer layers than the window alone (16)
    assert w.shown["connected_after"] == family.layers_to_connect(M) < 16


# ------------------------------------------------------------------ the reach exercise


def reach_loop(M, L):
    """Reach by following the paths: the set of keys each query has heard from, layer by layer."""
    n = len(M)
    heard = [{j for j in range(n) if M[i, j]} for i in range(n)]
    for _ in range(L - 1):
        heard = [{j for k in range(n) if M[i, k] for j in heard[k]} for i in range(n)]
    return np.array([[j in heard[i] for j in range(n)] for i in range(n)])


@pytest.mark.parametrize(
    ("M", "L"),
    [
        (family.local_mask(9, 2), 2),
        (family.random_keys_mask(12, 1, 2, seed=5), 3),
        (np.tri(6, dtype=bool), 1),
        (family.block_mask(8, 4), 5),
        (family.global_mask(10, 1, (0,)), 2),
    ],
)
def test_every_version_of_reach_follows_the_paths(M, L):
    want = reach_loop(M, L)
    for version in (family.reach, solutions.reach, ex.reach_reference):
        np.testing.assert_array_equal(version(M, L), want)


@pytest.mark.parametrize(
    "answer",
    [
        lambda M, L: np.linalg.matrix_power(M, L),  # bool matrix products stay bool
        lambda M, L: np.linalg.matrix_power(M.astype(float), L) > 0,
        reach_loop,
        lambda M, L: (np.linalg.matrix_power(M.astype(float), L) > 0).astype(int).tolist(),
        solutions.reach,  # integers, but kept at 0/1 after every product
    ],
)
def test_right_reach_in_any_style_passes(answer):
    result = check("reach", answer)
    assert result.passed, result.message


def test_reach_as_zeros_and_ones_passes_with_a_note():
    result = check("reach", lambda M, L: (np.linalg.matrix_power(M.astype(float), L) > 0) * 1)
    assert result.passed and "0/1 numbers" in result.message


def _int_loop(M, L):
    paths = M.astype(np.int64)
    for _ in range(L - 1):
        paths = paths @ M.astype(np.int64)  # counts, never brought back to 0/1
    return paths > 0


@pytest.mark.parametrize(
    "answer",
    [
        lambda M, L: np.linalg.matrix_power(M.astype(np.int64), L) > 0,
        lambda M, L: np.linalg.matrix_power(M.astype(np.int32), L) > 0,
        lambda M, L: np.linalg.matrix_power(M.astype(np.uint8), L) > 0,
        _int_loop,
    ],
)
def test_integer_path_counts_that_overflow_get_the_overflow_hint(answer):
    result = check("reach", answer)
    assert not result.passed
    assert "L = 32 layers" in result.message  # right on the small cases, wrong on the long one
    assert "wrap around silently" in result.message and "1.2·10^21" in result.message
    assert result.message.split("\n\n")[0].rstrip().endswith("?")


def test_the_long_reach_case_overflows_int64_but_not_the_references():
    case = ex.reach_cases()[-1]
    M, L = case.inputs["M"], case.inputs["L"]
    counts = np.linalg.matrix_power(M.astype(float), L)
    assert counts.max() > np.iinfo(np.int64).max  # int64 counts wrap around here
    want = reach_loop(M, L)
    assert want.all()  # 32 layers of w = 2 just connect 64 tokens
    for version in (family.reach, solutions.reach, ex.reach_reference):
        np.testing.assert_array_equal(version(M, L), want)


def _layers_loop(start_with_identity=False, extra=0):
    def answer(M, L):
        R = np.eye(len(M), dtype=int) if start_with_identity else M.astype(int)
        for _ in range(L - 1 + extra):
            R = R @ M.astype(int)
        return R > 0

    return answer


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda M, L: np.linalg.matrix_power(M.astype(int), L), "Your result holds counts"),
        (_layers_loop(start_with_identity=True), "one layer short"),
        (_layers_loop(extra=1), "one layer too far"),
        (lambda M, L: np.linalg.matrix_power(M.T.astype(int), L) > 0, "the transpose"),
        (lambda M, L: M**L, "the mask itself, whatever L is"),
        (lambda M, L: M * L > 0, "the mask itself, whatever L is"),
        # L ignored altogether gives the same result: the message asks about L first
        (lambda M, L: M, "Does your code use L at all?"),
        (lambda M, L: M | M, "entry by entry"),
        (lambda M, L: M @ M, "what two layers reach, whatever L is"),
        # counts of the wrong power: no slip names both, the hint points at the counts
        (lambda M, L: np.linalg.matrix_power(M.astype(int), L + 1), "numbers up to"),
        # a right power with the keys after each query dropped: the first pair that differs
        (
            lambda M, L: np.linalg.matrix_power(M, L) & np.tri(len(M), dtype=bool),
            "Your R[0, 1] is False, but key 1 can reach query 0 in 2 layers",
        ),
        (lambda M, L: -np.linalg.matrix_power(M.astype(int), L), "only True and False"),
    ],
)
def test_wrong_reach_is_named(answer, phrase):
    result = check("reach", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def test_reach_cases_tell_the_transpose_and_the_layer_count_apart():
    cases = ex.reach_cases()
    assert any(not np.array_equal(c.inputs["M"], c.inputs["M"].T) for c in cases)
    assert any(c.inputs["L"] == 1 for c in cases)
    for case in cases:  # every mask lets a token read itself
        assert np.diag(case.inputs["M"]).all()
    for case in cases[:-1]:  # small enough to read; the last is the long overflow case
        assert len(case.inputs["M"]) <= 8


def test_position_costs_count_parameters_biases_and_rope_work():
    c = family.position_costs(2048, 12, 64)
    assert c["table_params"] == 4095 * 12 and c["t5_params"] == 32 * 12
    assert c["alibi_params"] == c["rope_params"] == 0
    assert c["bias_numbers"] == 12 * 2048**2  # one bias per head and pair
    assert c["bias_numbers"] * 4 == 192 * 2**20  # 192 MiB in float32
    # RoPE: 2 multiplications per entry of Q and of K, n · H · d_head entries each
    assert c["rope_mults"] == 2 * 2 * 2048 * 12 * 64
    assert c["score_madds"] == 12 * 2048**2 * 64
    assert c["rope_mults"] / c["score_madds"] == 4 / 2048  # like n, against n²


def _alibi_with_distance(distance):
    def answer(n, H):
        i = np.arange(n)
        slopes = 2.0 ** (-8 * np.arange(1, H + 1) / H)
        return -slopes[:, None, None] * distance(i[:, None], i[None, :])

    return answer


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        # key minus query, as in T5's code, without the absolute value
        (_alibi_with_distance(lambda i, j: j - i), "multiplied the slopes by j − i"),
        (_alibi_with_distance(lambda i, j: (i - j) ** 2), "square of the distance"),
        (_alibi_with_distance(lambda i, j: np.square(j - i)), "square of the distance"),
    ],
)
def test_alibi_signed_key_minus_query_and_squared_distances_are_named(answer, phrase):
    result = check("alibi_biases", answer)
    assert not result.passed
    assert phrase in result.message, result.message


@pytest.mark.parametrize(
    "answer",
    [
        lambda M, L: M * L,
        lambda M, L: M.astype(float) * L,
        lambda M, L: L * M.astype(int),
    ],
)
def test_reach_times_l_is_told_it_is_entrywise(answer):
    result = check("reach", answer)
    assert not result.passed
    assert "the mask times L" in result.message and "entrywise" in result.message
    assert "counts paths" not in result.message


def _alibi_in_zeros_like_the_distances(n, H):
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :])  # whole numbers: an integer array
    B = np.zeros_like(distance, shape=(H, n, n))
    for h in range(H):
        B[h] = -(2.0 ** (-8 * (h + 1) / H)) * distance
    return B


@pytest.mark.parametrize(
    ("exercise", "answer"),
    [
        ("alibi_biases", _alibi_in_zeros_like_the_distances),
        ("alibi_biases", lambda n, H: solutions.alibi_biases(n, H).astype(np.int32)),
        ("rope", lambda X, start=0: solutions.rope(X, start).astype(int)),
    ],
)
def test_biases_stored_in_an_integer_array_are_named_not_called_a_placeholder(exercise, answer):
    result = check(exercise, answer)
    assert not result.passed
    assert result.message.startswith("Your result holds only whole numbers"), result.message
    assert "what is its dtype?" in result.message
    assert "placeholder" not in result.message


def test_a_float_placeholder_of_zeros_is_still_called_one():
    result = check("alibi_biases", lambda n, H: np.zeros((H, n, n)))
    assert not result.passed
    assert "placeholder" in result.message and "whole numbers" not in result.message


@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_alibi_bias_by_the_query_position_is_named(sign):
    def by_query(n, H):
        per_row = sign * family.alibi_slopes(H)[:, None, None] * np.arange(n)[:, None]
        return np.broadcast_to(per_row, (H, n, n))

    result = check("alibi_biases", by_query)
    assert not result.passed
    assert "query's position" in result.message and "changes no attention weight" in result.message


@pytest.mark.parametrize(
    ("answer", "shape"),
    [
        # the heads on the middle axis
        (lambda n, H: np.moveaxis(solutions.alibi_biases(n, H), 0, 1), "shape (3, 4, 3)"),
        # np.outer of the slopes and the (n, n) distances: (H, n²)
        (
            lambda n, H: (
                -np.outer(
                    family.alibi_slopes(H), np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
                )
            ),
            "shape (4, 9)",
        ),
    ],
)
def test_alibi_biases_of_the_wrong_shape_get_the_broadcasting_question(answer, shape):
    result = check("alibi_biases", answer)
    assert not result.passed
    assert f"returned {shape}" in result.message
    assert get_exercise("alibi_biases").checker.shape_hint in result.message


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        # the heads on the last axis: the message says where the heads go, once
        (lambda n, H: np.moveaxis(solutions.alibi_biases(n, H), 0, -1), "on the last axis"),
        # one head short: not a broadcasting fault at all
        (lambda n, H: solutions.alibi_biases(n, H)[:-1], "one head short"),
    ],
)
def test_a_named_wrong_shape_is_not_followed_by_the_broadcasting_paragraph(answer, named):
    result = check("alibi_biases", answer)
    assert not result.passed
    assert named in result.message
    assert get_exercise("alibi_biases").checker.shape_hint not in result.message
    assert result.message.count("Broadcasting lines shapes up") <= 1


def _rope_written_as(
    pairs="neighbours",
    sign=1,
    first=0,
    use_start=True,
    swap=False,
    only_first_pair=False,
    overwrite=False,
    halves_out=False,
    theta=None,
):
    """A learner's `rope`, with one slip switched on by a keyword."""

    def answer(X, start=0):
        n, d = X.shape
        t = family.rope_angles(d) if theta is None else theta(d)
        a = sign * ((start if use_start else 0) + first + np.arange(n))[:, None] * t[None, :]
        cos, sin = (np.sin(a), np.cos(a)) if swap else (np.cos(a), np.sin(a))
        if pairs == "halves":
            x, y = X[:, : d // 2], X[:, d // 2 :]
        else:
            x, y = X[:, 0::2], X[:, 1::2]
        out = np.array(X, dtype=float)
        new_x = x * cos - y * sin
        if only_first_pair:
            new_x[:, 1:] = x[:, 1:]
        left = slice(0, d // 2) if pairs == "halves" or halves_out else slice(0, None, 2)
        right = slice(d // 2, None) if pairs == "halves" or halves_out else slice(1, None, 2)
        out[:, left] = new_x
        source = out[:, left] if overwrite else x
        new_y = source * sin + y * cos
        if only_first_pair:
            new_y[:, 1:] = y[:, 1:]
        out[:, right] = new_y
        return out

    return answer


def test_rope_references_agree_with_a_loop_of_two_by_two_rotations(rng):
    X = rng.normal(size=(5, 8))
    for start in (0, 3, 100):
        loop = np.array(
            [
                np.concatenate(
                    [
                        family.rotation((start + i) * t) @ X[i, 2 * f : 2 * f + 2]
                        for f, t in enumerate(family.rope_angles(8))
                    ]
                )
                for i in range(5)
            ]
        )
        for version in (family.rope, solutions.rope, ex.rope_reference):
            np.testing.assert_allclose(version(X, start=start), loop, atol=1e-12)


@pytest.mark.parametrize(
    "answer",
    [
        solutions.rope,
        _rope_written_as(),
        # pairs stacked on a last axis of 2, then flattened: interleaved again
        lambda X, start=0: np.stack(
            [
                X[:, 0::2]
                * np.cos(a := (start + np.arange(len(X)))[:, None] * family.rope_angles(X.shape[1]))
                - X[:, 1::2] * np.sin(a),
                X[:, 0::2] * np.sin(a) + X[:, 1::2] * np.cos(a),
            ],
            axis=-1,
        ).reshape(X.shape),
    ],
)
def test_right_rope_in_any_style_passes(answer):
    result = check("rope", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (_rope_written_as(pairs="halves"), "feature f with feature f + d/2"),
        (_rope_written_as(sign=-1), "turn the other way"),
        (_rope_written_as(first=1), "counted the positions from 1"),
        (_rope_written_as(use_start=False), "you left out `start`"),
        (_rope_written_as(swap=True), "cos and sin are swapped"),
        (_rope_written_as(only_first_pair=True), "Only your first pair"),
        (_rope_written_as(theta=lambda d: np.ones(d // 2)), "pair 0's angle"),
        (_rope_written_as(overwrite=True), "computed from the *new* x"),
        (_rope_written_as(halves_out=True), "in the wrong places"),
    ],
)
def test_rope_slips_are_named(answer, phrase):
    result = check("rope", answer)
    assert not result.passed
    assert phrase in result.message, result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        # θ_f from the feature index rather than the pair's: 10000^(−f/d)
        (
            _rope_written_as(theta=lambda d: 10000.0 ** (-np.arange(d // 2) / d)),
            "should turn it by (start + i) θ_f",
        ),
        # angles in degrees
        (
            _rope_written_as(theta=lambda d: np.deg2rad(family.rope_angles(d))),
            "should turn it by (start + i) θ_f",
        ),
        # not a rotation: every pair twice as long
        (lambda X, start=0: 2 * ex.rope_reference(X, start), "A rotation keeps the length"),
    ],
)
def test_rope_without_a_named_slip_is_pointed_at_a_pair(answer, phrase):
    result = check("rope", answer)
    assert not result.passed
    assert phrase in result.message, result.message


def test_rope_with_angles_that_do_not_broadcast_gets_the_shape_question():
    def flat_angles(X, start=0):
        n, d = X.shape
        a = (start + np.arange(n)) * family.rope_angles(d)  # (n,) times (d/2,)
        return np.concatenate([X[:, 0::2] * np.cos(a), X[:, 1::2] * np.sin(a)], axis=1)

    result = check("rope", flat_angles)
    assert not result.passed and "raised ValueError" in result.message
    assert get_exercise("rope").checker.shape_hint in result.message


def test_rope_that_calls_the_course_version_is_asked_to_write_its_own():
    result = check("rope", family.rope)
    assert not result.passed and "write `rope` yourself" in result.message
