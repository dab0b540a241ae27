"""Tests for lesson 01's tools in ``attnlab.lessons.dot_product``: the toy sentence's
projections, ``cross_scores``, the scores of one sequence's queries against another
sequence's keys, S = (X_q W_Q)(X_kv W_K)ᵀ, and ``new_token_scores``; and for the feedback
of the lesson's exercises."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlab import check
from attnlab.exercises import solutions
from attnlab.lessons.dot_product import cross_scores, new_token_scores, toy_projections


@given(
    n_q=st.integers(1, 5),
    n_k=st.integers(1, 5),
    d=st.integers(1, 4),
    d_k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_each_score_is_one_query_dotted_with_one_key(n_q, n_k, d, d_k, seed):
    rng = np.random.default_rng(seed)
    X_q, X_kv = rng.normal(size=(n_q, d)), rng.normal(size=(n_k, d))
    W_Q, W_K = rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k))
    want = np.array([[(x @ W_Q) @ (y @ W_K) for y in X_kv] for x in X_q])
    np.testing.assert_allclose(cross_scores(X_q, X_kv, W_Q, W_K), want, atol=1e-12)
    # the same through lesson 01's d × d matrix: X_q (W_Q W_Kᵀ) X_kvᵀ
    M = solutions.score_matrix(W_Q, W_K)
    np.testing.assert_allclose(X_q @ M @ X_kv.T, want, atol=1e-12)


def test_one_sequence_with_itself_is_self_attention():
    _, X, W_Q, W_K, _ = toy_projections()
    np.testing.assert_allclose(cross_scores(X, X, W_Q, W_K), (X @ W_Q) @ (X @ W_K).T)
    np.testing.assert_allclose(cross_scores(X[-1:], X, W_Q, W_K)[0], ((X @ W_Q) @ (X @ W_K).T)[-1])


@given(n=st.integers(0, 5), d=st.integers(1, 4), d_k=st.integers(1, 4), seed=st.integers(0, 99))
def test_a_new_token_against_the_cache_is_the_last_row_of_the_scores(n, d, d_k, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 1, d))
    W_Q, W_K = rng.normal(size=(d, d_k)), rng.normal(size=(d, d_k))
    last_row = cross_scores(X, X, W_Q, W_K)[-1]
    for answer in (new_token_scores, solutions.new_token_scores):
        np.testing.assert_allclose(answer(X[-1], X[:-1] @ W_K, W_Q, W_K), last_row, atol=1e-12)


def test_a_cache_of_the_wrong_size_is_named():
    with pytest.raises(ValueError, match="d_k = 3"):
        new_token_scores(np.ones(4), np.ones((2, 4)), np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="one embedding"):
        new_token_scores(np.ones((1, 4)), np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 3)))


def test_the_toy_sentence_has_three_different_lengths():
    tokens, X, W_Q, W_K, W_V = toy_projections()
    assert len(tokens) == 3
    assert (X.shape, W_Q.shape, W_K.shape, W_V.shape) == ((3, 4), (4, 3), (4, 3), (4, 2))
    # rounded to one decimal, so that a product can be redone by hand
    for M in (X, W_Q, W_K, W_V):
        np.testing.assert_array_equal(M, np.round(M, 1))


@pytest.mark.parametrize(
    ("arrays", "error", "match"),
    [
        ({"X_q": np.ones(4)}, ValueError, "X_q must be a 2-D array"),
        ({"X_kv": np.ones((2, 5))}, ValueError, "X_q and X_kv must have embeddings of the same"),
        ({"W_Q": np.ones((3, 3))}, ValueError, "W_Q must have d = 4 rows"),
        ({"W_K": np.ones((4, 2))}, ValueError, "W_Q and W_K must have the same shape"),
        ({"W_K": [["a"] * 3] * 4}, TypeError, "W_K must hold real numbers"),
    ],
)
def test_bad_arguments_are_named(arrays, error, match):
    given_arrays = {"X_q": np.ones((2, 4)), "X_kv": np.ones((3, 4))}
    given_arrays |= {"W_Q": np.ones((4, 3)), "W_K": np.ones((4, 3))} | arrays
    with pytest.raises(error, match=match):
        cross_scores(**given_arrays)


def test_products_are_drawn_to_scale_with_the_score_outlined():
    import matplotlib.pyplot as plt

    from attnlab.plots import products as plot_products

    A, B = np.arange(8.0).reshape(2, 4), np.ones((4, 5))
    fig = plot_products([dict(A=A, B=B, names=("A", "B", "C"), highlight=(1, 3))])
    ax_a, ax_b, ax_c = fig.axes
    # One cell is the same size in every panel: widths follow the columns, heights the rows.
    (wa, ha), (wb, hb), (wc, hc) = (
        ax.get_position().size * fig.get_size_inches() for ax in fig.axes
    )
    np.testing.assert_allclose([wa / 4, ha / 2, wb / 5, hb / 4, wc / 5, hc / 2], wa / 4)
    assert ax_c.get_title() == "C\n(2, 5)"
    assert [t.get_text() for t in ax_c.texts][1 * 5 + 3] == f"{(A @ B)[1, 3]:.2f}"
    # The outlines: row 1 of A, column 3 of B, entry (1, 3) of C.
    assert [p.get_xy() for p in ax_a.patches] == [(-0.5, 0.5)]
    assert [p.get_xy() for p in ax_b.patches] == [(2.5, -0.5)]
    assert [p.get_xy() for p in ax_c.patches] == [(2.5, 0.5)]
    plt.close(fig)


def test_projections_draw_x_once_with_each_w_above_its_product():
    import matplotlib.pyplot as plt

    from attnlab.lessons.dot_product import projections

    tokens, X, W_Q, W_K, W_V = toy_projections()
    fig = projections(X, [W_Q, W_K, W_V], row_labels=tokens, highlight_row=1)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "X\n(3, 4)",
        "W_Q\n(4, 3)",
        "Q = X W_Q\n(3, 3)",
        "W_K\n(4, 3)",
        "K = X W_K\n(3, 3)",
        "W_V\n(4, 2)",
        "V = X W_V\n(3, 2)",
    ]
    boxes = [ax.get_position() for ax in fig.axes]
    size = fig.get_size_inches()
    # One cell is the same size in every panel.
    cells = [
        (b.width * size[0] / M.shape[1], b.height * size[1] / M.shape[0])
        for b, M in zip(boxes, [X, W_Q, X @ W_Q, W_K, X @ W_K, W_V, X @ W_V], strict=True)
    ]
    np.testing.assert_allclose(cells, cells[0][0])
    # Each W stands above its product, column on column; the products share X's rows.
    for w, c in ((1, 2), (3, 4), (5, 6)):
        assert boxes[w].x0 == pytest.approx(boxes[c].x0) and boxes[w].y0 > boxes[c].y1
        assert boxes[c].y0 == pytest.approx(boxes[0].y0)
    # The highlighted row is outlined in X and in every product, not in the W.
    assert [len(ax.patches) for ax in fig.axes] == [1, 0, 1, 0, 1, 0, 1]
    plt.close(fig)
    with pytest.raises(ValueError, match="d = X.shape"):
        projections(X, [W_Q.T])
    with pytest.raises(ValueError, match="one name per W"):
        projections(X, [W_Q], names=("Q", "K"))


def test_best_key_hint_says_whether_the_direction_or_the_length_is_off():
    from attnlab import check

    too_long = check("best_key", lambda q, length: 3 * length * q / np.linalg.norm(q))
    assert "points exactly the way q does" in too_long.message
    turned = check("best_key", lambda q, length: length * np.roll(q, 1) / np.linalg.norm(q))
    assert "away from q" in turned.message and "cos θ" in turned.message
    # The expected key is never printed: it would show the rule.
    assert "Expected" not in turned.message


def test_the_widget_marks_the_best_and_worst_score_of_each_key():
    from attnlab.widgets import dot_product_explorer

    w = dot_product_explorer(q=[2.0, 1.0], keys=[[0.5, 1.5], [1.0, 0.0]])
    w.controls["k2_length"].value = 2.0
    bounds = float(np.hypot(2.0, 1.0)) * np.array([np.hypot(0.5, 1.5), 2.0])
    np.testing.assert_allclose(w.shown["bounds"], bounds)
    # no angle takes a score past its bounds
    for angle in range(0, 360, 15):
        w.controls["q_angle"].value = angle
        assert np.all(np.abs(w.shown["scores"]) <= bounds + 1e-12)


def test_unnamed_answers_get_specific_feedback():
    from attnlab import check

    own = check(
        "new_token_scores",
        lambda x, K, W_Q, W_K: np.append(K @ (x @ W_Q), (x @ W_Q) @ (x @ W_K) + 1),
    )
    assert "the new token against itself, is not" in own.message
    tripled = check("score_matrix", lambda W_Q, W_K: 3 * W_Q @ W_K.T).message
    assert "a multiple of the right one, 3 times it" in tripled
    other = check("score_matrix", lambda W_Q, W_K: W_Q @ W_K.T + 1).message
    assert "which rule turns the transpose of a product" in other and "eye" not in other


def test_the_query_written_before_the_stacked_keys_gets_its_own_hint():
    def q_before_keys(x_new, K_cache, W_Q, W_K):
        return (x_new @ W_Q) @ np.vstack([K_cache, x_new @ W_K])

    result = check("new_token_scores", q_before_keys)
    assert not result
    assert "the wrong way round" in result.message and "K @ q" in result.message


def test_the_column_vector_habit_and_a_shuffled_order_are_named():
    def columns(x_new, K_cache, W_Q, W_K):  # W @ x, as for a column vector
        return np.vstack([K_cache, W_K @ x_new]) @ (W_Q @ x_new)

    result = check("new_token_scores", columns)
    assert (
        "column-vector habit" in result.message and "W_Q @ x_new and W_K @ x_new" in result.message
    )
    for reorder in (lambda s: s[::-1], lambda s: np.r_[s[1::-1], s[2:]]):

        def shuffled(x_new, K_cache, W_Q, W_K, reorder=reorder):
            return reorder(solutions.new_token_scores(x_new, K_cache, W_Q, W_K))

        assert (
            "the right numbers, but in the wrong order"
            in check("new_token_scores", shuffled).message
        )


def test_an_entry_by_entry_product_and_the_l1_norm_are_named():
    star = check("score_matrix", lambda W_Q, W_K: W_Q * W_K.T).message
    assert "entry by entry" in star and "`@`" in star
    l1 = check("best_key", lambda q, length: length * q / np.linalg.norm(q, ord=1)).message
    assert "L1 norm" in l1


def test_cosine_similarity_and_turned_signs_are_named():
    def cosines(x_new, K_cache, W_Q, W_K):
        q, K = x_new @ W_Q, np.vstack([K_cache, x_new @ W_K])
        return K @ q / (np.linalg.norm(q) * np.linalg.norm(K, axis=1))

    cos = check("new_token_scores", cosines)
    assert not cos and "cosine similarity" in cos.message and "q·(2k) = 2 q·k" in cos.message

    def negated(x_new, K_cache, W_Q, W_K):
        return -solutions.new_token_scores(x_new, K_cache, W_Q, W_K)

    neg = check("new_token_scores", negated)
    assert not neg and "opposite sign" in neg.message


def test_a_key_at_a_right_angle_reads_zero_not_minus_zero():
    def at_right_angle(q, length):
        k = np.zeros_like(q)
        k[0], k[1] = -q[1], q[0]  # turned by 90° in the plane of the first two axes
        return length * k / np.linalg.norm(k)

    message = check("best_key", at_right_angle).message
    assert "90° away from q, so cos θ = 0.000 and its score is 0." in message
    assert "-0.000" not in message and "e-1" not in message


def test_scores_scaled_by_one_factor_get_the_factor_named():
    def by_root_d(x_new, K_cache, W_Q, W_K):  # √d, the embedding size, for √d_k
        return solutions.new_token_scores(x_new, K_cache, W_Q, W_K) / np.sqrt(len(x_new))

    root_d = check("new_token_scores", by_root_d)
    assert not root_d and "0.577 (1/√3) times the right one" in root_d.message
    assert "raw dot products" in root_d.message

    def halved(x_new, K_cache, W_Q, W_K):
        return solutions.new_token_scores(x_new, K_cache, W_Q, W_K) / 2

    half = check("new_token_scores", halved).message
    assert "0.5 times the right one" in half and "√" not in half.split("times")[0]

    def by_root_d_k(x_new, K_cache, W_Q, W_K):  # the named mistake wins over the hint
        return solutions.new_token_scores(x_new, K_cache, W_Q, W_K) / np.sqrt(W_Q.shape[1])

    assert "You divided by √d_k already" in check("new_token_scores", by_root_d_k).message


def test_a_key_off_in_direction_and_length_has_both_named():
    message = check("best_key", lambda q, length: length * np.sign(q)).message
    assert "8° away from q" in message and "Its length is also 2.83, not 2" in message
    turned = check("best_key", lambda q, length: length * np.roll(q, 1) / np.linalg.norm(q))
    assert "Its length is also" not in turned.message


def test_an_entry_by_entry_product_and_transposed_keys_are_named_for_new_scores():
    def star(x_new, K_cache, W_Q, W_K):
        return np.vstack([K_cache, x_new @ W_K]) * (x_new @ W_Q)

    assert "You used `*`" in check("new_token_scores", star).message

    def transposed(x_new, K_cache, W_Q, W_K):
        return np.vstack([K_cache, x_new @ W_K]).T @ (x_new @ W_Q)

    message = check("new_token_scores", transposed).message
    assert "meets it transposed" in message and "K.T @ q" in message
    assert "one more row" not in message


def test_named_score_matrix_mistakes_do_not_spell_out_the_answer():
    for wrong in (
        lambda W_Q, W_K: W_K @ W_Q.T,
        lambda W_Q, W_K: W_Q @ W_K,
        lambda W_Q, W_K: W_Q * W_K,
        lambda W_Q, W_K: W_Q @ W_K.T / np.sqrt(W_Q.shape[1]),
    ):
        message = check("score_matrix", wrong).message
        assert not check("score_matrix", wrong) and "between X and Xᵀ" not in message


def test_a_key_almost_along_q_is_not_called_zero_degrees_away():
    def nearly(q, length):
        turned = q + 1e-3 * np.roll(q, 1)  # a fraction of a degree off q
        return length * turned / np.linalg.norm(turned)

    result = check("best_key", nearly)
    assert not result.passed
    assert "almost, but not exactly, along q" in result.message
    assert " 0° away" not in result.message


def test_a_key_returned_with_its_score_is_told_to_return_the_key_alone():
    result = check("best_key", lambda q, length: (solutions.best_key(q, length), 1.0))
    assert not result.passed
    assert "Return only the key" in result.message


def test_negative_squared_distances_are_named_for_new_scores():
    def by_distance(x_new, K_cache, W_Q, W_K):
        K = np.vstack([K_cache, x_new @ W_K])
        return -((K - x_new @ W_Q) ** 2).sum(axis=1)

    result = check("new_token_scores", by_distance)
    assert not result.passed
    assert "minus the squared distances" in result.message


def test_the_symmetrised_sum_is_named_and_the_expected_matrix_is_hidden():
    result = check("score_matrix", lambda W_Q, W_K: W_Q @ W_K.T + W_K @ W_Q.T)
    assert not result.passed
    assert "you added W_Q W_Kᵀ and its transpose" in result.message
    assert "Expected" not in result.message


def test_a_sum_over_the_keys_is_not_called_a_missing_key():
    def over_keys(x_new, K_cache, W_Q, W_K):  # axis 0 runs over the keys, not along one
        return (np.vstack([K_cache, x_new @ W_K]) * (x_new @ W_Q)).sum(axis=0)

    result = check("new_token_scores", over_keys)
    assert not result.passed
    assert "added up over the keys (axis 0)" in result.message
    assert "new token's own key" not in result.message
