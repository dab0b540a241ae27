"""Tests for lesson 05's tool ``attnlab.lessons.values.output_change``: Z = A V is linear
in V, so a change δ of value row j moves output row i by A[i, j] δ."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attnlab
from attnlab.exercises import solutions
from attnlab.lessons.values import output_change


@given(
    n_q=st.integers(1, 5),
    n_k=st.integers(1, 5),
    d_v=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    data=st.data(),
)
def test_output_change_matches_running_attention_again(n_q, n_k, d_v, seed, data):
    j = data.draw(st.integers(0, n_k - 1))
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(n_q, 3)), rng.normal(size=(n_k, 3))
    V, delta = rng.normal(size=(n_k, d_v)), rng.normal(size=d_v)
    Z, A = attnlab.attention(Q, K, V, return_weights=True)
    V2 = V.copy()
    V2[j] += delta
    want = attnlab.attention(Q, K, V2) - Z
    np.testing.assert_allclose(output_change(A, j, delta), want, atol=1e-12)
    np.testing.assert_allclose(solutions.output_change(A, j, delta), want, atol=1e-12)


def test_a_masked_key_reaches_no_query_that_cannot_see_it():
    mask = attnlab.causal_mask(4)
    rng = np.random.default_rng(0)
    _, A = attnlab.attention(*rng.normal(size=(3, 4, 2)), mask=mask, return_weights=True)
    change = output_change(A, 2, np.ones(2))
    assert np.all(change[:2] == 0) and np.all(change[2:] > 0)


@pytest.mark.parametrize(
    "args, phrase",
    [
        ((np.ones(3), 0, np.ones(2)), "A must be a 2-D array"),
        ((np.ones((2, 3)), 0, np.ones((1, 2))), "delta must be a 1-D"),
        ((np.ones((2, 3)), 3, np.ones(2)), "j must be a key index from 0 to 2"),
        ((np.ones((2, 3)), True, np.ones(2)), "j must be a key index"),
    ],
)
def test_output_change_names_the_bad_argument(args, phrase):
    with pytest.raises(ValueError, match=phrase):
        output_change(*args)


def test_matrices_row_can_share_one_colour_scale_and_one_set_of_labels():
    import matplotlib.pyplot as plt

    from attnlab.lessons.values import matrices_row

    small, large = np.full((2, 3), 0.5), np.full((2, 3), 2.0)
    weights = np.full((2, 2), 0.5)
    mats = {"small": small, "large": large, "weights": weights}
    labels = ["a", "b", "c"]
    for shared, want in [(False, [0.5, 2.0]), (True, [2.0, 2.0])]:
        fig = matrices_row(mats, ["t0", "t1"], labels, weights=("weights",), shared_scale=shared)
        limits = [ax.images[0].get_clim() for ax in fig.axes[:2]]
        assert [hi for _, hi in limits] == want and all(lo == -hi for lo, hi in limits)
        assert fig.axes[2].images[0].get_clim() == (0.0, 1.0)  # weights keep their own scale
        for ax in fig.axes[:2]:
            assert [t.get_text() for t in ax.get_xticklabels()] == labels
        plt.close(fig)
    fig = matrices_row(mats, ["t0", "t1"], labels, weights=("weights",), xlabels={"small": "q/k"})
    assert [ax.get_xlabel() for ax in fig.axes[:2]] == ["q/k", "feature"]
    plt.close(fig)


def test_the_maximum_of_the_whole_array_is_named():
    from attnlab import check

    def global_max(Q, K, V):
        S = Q @ K.T / np.sqrt(Q.shape[-1])
        e = np.exp(S - S.max())
        return e / e.sum(axis=-1, keepdims=True) @ V

    message = check("attention", global_max).message
    assert "largest score of the whole array" in message


@pytest.mark.parametrize("value", [2.18, 2.19, 2.1901])
def test_weights_rounded_to_two_decimals_pass_the_by_hand_question(value):
    from attnlab import check

    assert check("attention_by_hand", value).passed


@pytest.mark.parametrize("value", [-25.98, 0.5, 8.5, 12.0, 1e7])
def test_a_by_hand_answer_outside_the_values_range_is_told_so(value):
    # -25.98 is a log-softmax, 12 no named slip: both leave the range the exercise asks
    # the learner to predict.
    from attnlab import check

    result = check("attention_by_hand", value)
    assert not result.passed and "outside [1, 8]" in result.message


@pytest.mark.parametrize("value", [1.0098, 1.01])
def test_scores_multiplied_by_the_root_are_named_in_the_by_hand_question(value):
    from attnlab import check

    result = check("attention_by_hand", value)
    assert not result.passed and "multiplied the scores by √4 = 2" in result.message


@pytest.mark.parametrize(
    "value, phrase",
    [
        # q·k_0 = 4 instead of 2: the -1 of k_0's last entry dropped
        (1.525, "Check q·k_0"),
        (1.5255, "Check q·k_0"),
        # every score negated: the weights favour the key that opposes q
        (6.06, "opposes q most"),
        (6.063, "opposes q most"),
        # q·k_2 = -1 instead of -2
        (2.54, "Check q·k_2 once more"),
        (2.543, "Check q·k_2 once more"),
    ],
)
def test_score_sign_slips_are_named_in_the_by_hand_question(value, phrase):
    from attnlab import check

    result = check("attention_by_hand", value)
    assert not result.passed and phrase in result.message


@pytest.mark.parametrize("value", [2.5, 7.92, 8.0])
def test_a_by_hand_answer_inside_the_range_is_not_called_outside(value):
    from attnlab import check

    result = check("attention_by_hand", value)
    assert not result.passed and "outside" not in result.message


def _scaled_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])


def _without_keepdims_max(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    E = np.exp(S - S.max(axis=-1))
    return E / E.sum(axis=-1, keepdims=True) @ V


def _without_keepdims_sum(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1) @ V


def _whole_array_sum(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    E = np.exp(S - S.max())
    return E / E.sum() @ V


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (_without_keepdims_max, "keeps the reduced axis"),
        (_without_keepdims_sum, "keeps the reduced axis"),
        (_whole_array_sum, "sum of every exp in the whole array"),
        (
            lambda Q, K, V: attnlab.softmax(Q @ K.T * np.sqrt(Q.shape[-1])) @ V,
            "multiplied the scores by √d_k",
        ),
        (
            lambda Q, K, V: attnlab.softmax(Q @ K.T) / np.sqrt(Q.shape[-1]) @ V,
            "divided the weights by √d_k after the softmax",
        ),
        (
            # S / d_k ** 1/2 is (S / d_k) / 2
            lambda Q, K, V: attnlab.softmax(Q @ K.T / Q.shape[-1] ** 1 / 2) @ V,
            "You divided by 2·d_k",
        ),
    ],
)
def test_attention_names_the_slip(answer, phrase):
    from attnlab import check

    result = check("attention", answer)
    assert not result.passed and phrase in result.message
    assert "Q is (n_q, d_k)" not in result.message  # the specific hint, not the general one


def _log_softmax_weights(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -1e9)
    S = S - S.max(axis=-1, keepdims=True)
    return (S - np.log(np.exp(S).sum(axis=-1, keepdims=True))) @ V


def _tanh_weights(Q, K, V, mask=None):
    weights = np.tanh(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
    return (weights if mask is None else np.where(mask, weights, 0.0)) @ V


@pytest.mark.parametrize("name", ["attention", "masked_attention"])
@pytest.mark.parametrize("answer", [_log_softmax_weights, _tanh_weights])
def test_an_output_outside_the_range_of_its_value_column_is_told_so(name, answer):
    # Section 1's bound: no weights that are >= 0 and sum to 1 leave a column's range.
    from attnlab import check

    result = check(name, answer)
    assert not result.passed and "the range of column" in result.message
    assert "weights that are ≥ 0 and sum to 1 can never" in result.message


@pytest.mark.parametrize("name", ["attention", "masked_attention"])
def test_a_softmax_on_v_is_pointed_at_what_the_weights_multiply(name):
    # The weights are right here, so the hint must not stop at "check your weights".
    from attnlab import check

    def softmax_on_v(Q, K, V, mask=None):
        S = _scaled_scores(Q, K)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        return attnlab.softmax(S) @ attnlab.softmax(V)

    result = check(name, softmax_on_v)
    assert not result.passed and "the range of column" in result.message
    assert "is it V itself, unchanged?" in result.message


def _flat_weights(Q, K, V, mask=None):
    S = np.zeros_like(_scaled_scores(Q, K))  # every score the same
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    return attnlab.softmax(S) @ V


def test_equal_weights_over_every_key_name_the_scores_and_the_mask():
    from attnlab import check

    def answer(Q, K, V, mask):
        return attnlab.softmax(np.zeros_like(_scaled_scores(Q, K))) @ V  # mask ignored too

    result = check("masked_attention", answer)
    assert not result.passed and "plain mean of all the value rows" in result.message
    assert "Two things are missing" in result.message


def _nan_to_zero(after_the_product):
    def answer(Q, K, V, mask=None):
        S = _scaled_scores(Q, K)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        with np.errstate(all="ignore"):
            E = np.exp(S)  # no shift: overflows on the large scores
            W = E / E.sum(axis=-1, keepdims=True)
            return np.nan_to_num(W @ V) if after_the_product else np.nan_to_num(W) @ V

    return answer


@pytest.mark.parametrize("name", ["attention", "masked_attention"])
@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (_flat_weights, "plain mean of the value rows"),
        (_nan_to_zero(False), "Row 0 of your output is exactly 0"),
        (_nan_to_zero(True), "turned the NaN into 0"),
    ],
)
def test_flat_weights_and_an_overflow_hidden_by_nan_to_num_are_named(name, answer, phrase):
    from attnlab import check

    result = check(name, answer)
    assert not result.passed and phrase in result.message


def _clipped(c, low=True):
    def answer(Q, K, V, mask=None):
        S = np.clip(_scaled_scores(Q, K), -c if low else None, c)  # no overflow, other weights
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        E = np.exp(S)
        return E / E.sum(axis=-1, keepdims=True) @ V

    return answer


@pytest.mark.parametrize("name", ["attention", "masked_attention"])
@pytest.mark.parametrize("answer", [_clipped(50), _clipped(100, low=False)])
def test_scores_clipped_before_the_softmax_are_named(name, answer):
    from attnlab import check

    result = check(name, answer)
    assert not result.passed and "clip the scores to a finite range" in result.message


def test_a_mask_handed_to_the_course_softmax_is_named_and_one_written_out_passes():
    from attnlab import check

    def mask_passed_on(Q, K, V, mask):
        return attnlab.softmax(_scaled_scores(Q, K), mask=mask) @ V

    def mask_written_out(Q, K, V, mask):
        return attnlab.softmax(np.where(mask, _scaled_scores(Q, K), -np.inf)) @ V

    result = check("masked_attention", mask_passed_on)
    assert not result.passed and "passes the mask to the course's `softmax`" in result.message
    assert check("masked_attention", mask_written_out).passed


def test_a_right_answer_in_float32_is_not_called_outside_the_range():
    from attnlab import check

    def in_float32(Q, K, V):
        S = (Q @ K.T / np.sqrt(Q.shape[-1])).astype(np.float32)
        E = np.exp(S - S.max(axis=-1, keepdims=True))
        return E / E.sum(axis=-1, keepdims=True) @ V.astype(np.float32)

    assert check("attention", in_float32).passed


def _loops_over_batch_and_heads(Q, K, V, mask):
    out = np.empty(Q.shape[:-1] + V.shape[-1:])
    for b in range(Q.shape[0]):
        for h in range(Q.shape[1]):
            S = np.where(mask, Q[b, h] @ K[b, h].T / np.sqrt(Q.shape[-1]), -np.inf)
            out[b, h] = attnlab.softmax(S) @ V[b, h]
    return out


def _unpacks_four_axes(Q, K, V, mask):
    b, h, n, d = Q.shape
    S = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(d), -np.inf)
    return attnlab.softmax(S) @ V


def _unpacks_two_axes(Q, K, V, mask):
    n, d = Q.shape
    S = np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(d), -np.inf)
    return attnlab.softmax(S) @ V


def _einsum_with(subscripts):
    def answer(Q, K, V, mask):
        S = np.where(mask, np.einsum(subscripts, Q, K) / np.sqrt(Q.shape[-1]), -np.inf)
        return attnlab.softmax(S) @ V

    return answer


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (_unpacks_four_axes, "counts on more axes"),
        (_einsum_with("bhqd,bhkd->bhqk"), "counts on more axes"),
        (_unpacks_two_axes, "counts on fewer axes"),
        (_einsum_with("qd,kd->qk"), "counts on fewer axes"),
    ],
)
def test_masked_attention_names_a_fixed_number_of_axes(answer, phrase):
    from attnlab import check

    result = check("masked_attention", answer)
    assert not result.passed and phrase in result.message
    assert "none, one or two leading" in result.message or "without them too" in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (_loops_over_batch_and_heads, "none, one or two leading axes"),
        # np.dot on batched arrays: its error also names V's shape, which must not be read
        # as a row total without keepdims
        (
            lambda Q, K, V, mask: (
                attnlab.softmax(
                    np.where(
                        mask, np.dot(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1]), -np.inf
                    )
                )
                @ V
            ),
            "not a batched product",
        ),
        (
            lambda Q, K, V, mask: (
                attnlab.softmax(np.where(mask.T, _scaled_scores(Q, K), -np.inf)) @ V
            ),
            "Your mask is transposed",
        ),
        (
            lambda Q, K, V, mask: (
                attnlab.softmax(
                    np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-2]), -np.inf)
                )
                @ V
            ),
            "`K.shape[-2]`",
        ),
        (
            lambda Q, K, V, mask: (
                attnlab.softmax(
                    np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[0]), -np.inf)
                )
                @ V
            ),
            "`K.shape[0]`",
        ),
    ],
)
def test_masked_attention_names_the_slip(answer, phrase):
    from attnlab import check

    result = check("masked_attention", answer)
    assert not result.passed and phrase in result.message


def _column_softmax(S, shift_by_row):
    e = np.exp(S - S.max(axis=-1 if shift_by_row else -2, keepdims=True))
    return e / e.sum(axis=-2, keepdims=True)


@pytest.mark.parametrize("shift_by_row", [False, True])
def test_a_softmax_down_the_columns_is_named_despite_the_nan_of_a_fully_blocked_key(
    shift_by_row,
):
    from attnlab import check

    def answer(Q, K, V, mask):
        S = np.where(mask, _scaled_scores(Q, K), -np.inf)
        return _column_softmax(S, shift_by_row) @ V

    result = check("masked_attention", answer)
    assert not result.passed
    assert "runs over the queries" in result.message and "Key 1 is blocked" in result.message


def test_an_answer_that_is_nan_everywhere_is_not_called_a_column_softmax():
    from attnlab import check

    result = check(
        "masked_attention", lambda Q, K, V, mask: np.full(Q.shape[:-1] + V.shape[-1:], np.nan)
    )
    assert not result.passed and "runs over the queries" not in result.message


def test_writing_into_the_mask_points_to_np_where():
    from attnlab import check

    def answer(Q, K, V, mask):
        mask[...] = ~mask  # inverted in place: the caller's mask changes
        return attnlab.softmax(np.where(mask, -np.inf, _scaled_scores(Q, K))) @ V

    result = check("masked_attention", answer)
    assert not result.passed
    assert "wrote into its input mask" in result.message
    assert "np.where(mask, S, -np.inf)" in result.message and "mask / c" not in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda A, j, delta: np.outer(A[j], delta), "row j of A"),
        (lambda A, j, delta: np.outer(np.full(len(A), A[:, j].sum()), delta), "total weight"),
        (lambda A, j, delta: np.tile(delta, (len(A), 1)), "the whole change"),
        (lambda A, j, delta: 2 * np.outer(A[:, j], delta), "2 times the right one"),
        (lambda A, j, delta: np.outer(A[:, j] ** 2, delta), "wrong in rows 0, 1, 2"),
    ],
)
def test_output_change_names_the_slip(answer, phrase):
    from attnlab import check

    result = check("output_change", answer)
    assert not result.passed and phrase in result.message
    # The expected change, a column of A times δ, could be read off next to A.
    assert "Expected" not in result.message and "expected" not in result.message.lower()


@pytest.mark.parametrize(
    "answer",
    [lambda A, j, delta: A[:, j] * delta, lambda A, j, delta: A @ delta],
)
def test_output_change_shape_hint_asks_without_naming_the_product(answer):
    from attnlab import check

    result = check("output_change", answer)
    assert not result.passed and "pairwise products" in result.message
    assert "np.outer" not in result.message and "None]" not in result.message


@pytest.mark.parametrize("shift", [0.0, 7.5, -100.0])
def test_scores_for_accepts_any_constant_and_float32(shift):
    from attnlab import check

    def shifted(V, z):
        return (solutions.scores_for(V, z) + shift).astype(np.float32)

    assert check("scores_for", shifted).passed


@given(seed=st.integers(0, 2**16), d_v=st.integers(1, 3))
def test_scores_for_reaches_every_point_inside_the_simplex(seed, d_v):
    from attnlab.lessons.values import scores_for

    rng = np.random.default_rng(seed)
    V = rng.normal(size=(d_v + 1, d_v))
    if abs(np.linalg.det(np.vstack([V.T, np.ones(d_v + 1)]))) < 0.1:
        return  # nearly flat: the weights are badly determined
    w = rng.dirichlet(np.ones(d_v + 1)) * 0.9 + 0.1 / (d_v + 1)
    z = w @ V
    np.testing.assert_allclose(attnlab.softmax(scores_for(V, z)) @ V, z, atol=1e-9)


def _weights_for(V, z):
    return np.linalg.solve(np.r_[V.T, np.ones((1, len(V)))], np.r_[z, 1])


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda V, z: np.zeros(len(V)), "Is your function still a placeholder?"),
        (
            lambda V, z: np.log(np.linalg.solve(np.c_[V, np.ones(len(V))], np.r_[z, 1])),
            "transposed",
        ),
        (lambda V, z: np.full(len(V), np.nan), "NaN or -inf"),
        (lambda V, z: np.log2(_weights_for(V, z)), "log2(w), a logarithm"),
        (lambda V, z: np.log10(_weights_for(V, z)), "log10(w), a logarithm"),
        (lambda V, z: np.arange(len(V), dtype=float), "which scores does a softmax turn into"),
        (
            lambda V, z: np.exp(np.linalg.solve(np.r_[V.T, np.ones((1, len(V)))], np.r_[z, 1])),
            "undoes an exponential",
        ),
    ],
)
def test_scores_for_feedback(answer, phrase):
    from attnlab import check

    result = check("scores_for", answer)
    assert not result.passed and phrase in result.message
    assert "The softmax of your scores gives the weights" in result.message or "NaN" in phrase
    assert "Expected" not in result.message  # the scores would give the answer away


def _barycentric_by_areas(V, z):
    a, b, c = V  # three rows: a triangle only

    def area(p, q, r):
        return abs((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))

    w = np.array([area(z, b, c), area(a, z, c), area(a, b, z)])
    return np.log(w / w.sum())


def _barycentric_by_indexing(V, z):
    v0, v1, v2 = V[0], V[1], V[2]  # IndexError on the segment, which has two rows
    b = np.linalg.solve(np.column_stack([v1 - v0, v2 - v0]), z - v0)
    return np.log(np.r_[1 - b.sum(), b])


def _two_edges_solved(V, z):
    # on the segment the two edges make a 1×2 matrix: "must be square"
    b = np.linalg.solve(np.column_stack([V[1] - V[0], V[-1] - V[0]]), z - V[0])
    return np.log(np.r_[1 - b.sum(), b])


def _least_squares_then_normalised(V, z):
    w = np.linalg.lstsq(V.T, z, rcond=None)[0]
    return np.log(w / w.sum())


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (_barycentric_by_areas, "also tries a segment, V (2×1), and a tetrahedron"),
        (_barycentric_by_indexing, "also tries a segment, V (2×1), and a tetrahedron"),
        (_two_edges_solved, "also tries a segment, V (2×1), and a tetrahedron"),
        (_least_squares_then_normalised, "without the equation that they sum to 1"),
        (
            lambda V, z: np.log(np.abs(np.linalg.lstsq(V.T, z, rcond=None)[0])),
            "which taking |w| only hides",
        ),
        (lambda V, z: 2 * np.log(_weights_for(V, z)), "c · log w with c = 2, "),
        (lambda V, z: np.log(_weights_for(V, z)) / np.sqrt(2), "with c = 0.707, "),
    ],
)
def test_scores_for_names_triangle_code_a_missing_sum_and_a_temperature(answer, phrase):
    from attnlab import check

    result = check("scores_for", answer)
    assert not result.passed and phrase in result.message
    assert "do not sum to 1" not in result.message


def test_stacked_attention_collapses_without_the_residual_only():
    from attnlab.lessons.values import relative_spread, stacked_attention

    Z0 = np.random.default_rng(0).normal(size=(6, 2))
    plain = [relative_spread(Z) / relative_spread(Z0) for Z in stacked_attention(Z0, 3)]
    kept = [
        relative_spread(Z) / relative_spread(Z0) for Z in stacked_attention(Z0, 3, residual=True)
    ]
    assert plain[0] == kept[0] == 1.0
    assert plain[3] < 0.01 < 0.9 < min(kept)
    # Without the residual, every layer's points lie in the hull of the layer before.
    from attnlab.lessons.values import convex_hull, inside_hull

    layers = stacked_attention(Z0, 3)
    for before, after in zip(layers, layers[1:], strict=False):
        assert inside_hull(after, convex_hull(before), tol=1e-9).all()


def test_spread_shows_each_layer_shrinking_more_and_the_residual_stretching():
    from attnlab.lessons.values import spread, stacked_attention, width_ratio

    Z0 = np.random.default_rng(0).normal(size=(6, 2))
    plain = stacked_attention(Z0, 3)
    step = [spread(b) / spread(a) for a, b in zip(plain, plain[1:], strict=False)]
    assert 0.4 < step[0] < 0.6 and step[2] < step[1] < step[0]  # faster and faster
    grown = stacked_attention(Z0, 3, residual=True)
    assert all(spread(b) > spread(a) for a, b in zip(grown, grown[1:], strict=False))
    widths = [width_ratio(Z) for Z in grown]
    assert widths == sorted(widths, reverse=True) and widths[-1] < 0.2
    assert spread(np.ones((3, 2))) == 0.0 and width_ratio(np.ones((3, 2))) == 0.0


def test_the_residual_slows_the_collapse_and_seed_13_collapses_only_relatively():
    from attnlab.lessons.values import relative_spread, stacked_attention

    starts = [np.random.default_rng(seed).normal(size=(6, 2)) for seed in range(20)]
    kept = [
        relative_spread(stacked_attention(Z, 6, residual=True)[-1]) / relative_spread(Z)
        for Z in starts
    ]
    assert np.median(kept) > 0.8 and int(np.argmin(kept)) == 13 and min(kept) < 0.05
    # Seed 13's points keep their distances after layer 3; only their shared part grows,
    # by a factor that settles at 2 per layer (the lesson's optional note says so).
    layers = stacked_attention(starts[13], 10, residual=True)
    spreads = [np.linalg.norm(Z - Z.mean(axis=0)) for Z in layers[3:]]
    assert np.ptp(spreads) < 1e-6 * spreads[0] and 15.1 < spreads[0] < 15.3
    means = [np.linalg.norm(Z.mean(axis=0)) for Z in layers]
    assert abs(means[10] / means[9] - 2) < 0.01


def test_collapse_picture_shares_the_axes_along_each_row():
    import matplotlib.pyplot as plt

    from attnlab.lessons.values import collapse_picture, stacked_attention

    Z0 = np.random.default_rng(0).normal(size=(6, 2))
    runs = {"plain": stacked_attention(Z0, 3), "residual": stacked_attention(Z0, 3, residual=True)}
    fig = collapse_picture(runs)
    rows = np.array(fig.axes).reshape(2, 4)
    for row in rows:
        assert len({ax.get_xlim() for ax in row}) == 1 and len({ax.get_ylim() for ax in row}) == 1
    assert rows[0, 0].get_xlim() != rows[1, 0].get_xlim()
    plt.close(fig)


def test_the_residual_stack_never_brings_two_points_closer(capsys):
    # z ↦ z + ∇φ(z) with φ convex (log-sum-exp) for Q = K = V: distances cannot shrink.
    from attnlab.lessons.values import seed_survey, stacked_attention

    for seed in range(50):
        Z = np.random.default_rng(seed).normal(size=(5, 3)) * (1 + seed % 4)
        run = stacked_attention(Z, 6, residual=True)
        for before, after in zip(run, run[1:], strict=False):
            d0 = np.linalg.norm(before[:, None] - before[None], axis=-1)
            d1 = np.linalg.norm(after[:, None] - after[None], axis=-1)
            assert np.all(d1 >= d0 * (1 - 1e-9))
    seed_survey()
    printed = capsys.readouterr().out
    assert "seeds above 1% of their spread: [3, 6, 14]" in printed
    # The lesson's note: a bound near 1 at layer 0 does not single out the slow seeds.
    assert "above 0.99 for seeds [2, 3, 6, 8, 9, 13, 14, 18]" in printed
    # The note's reason seed 13 moves as one: from layer 3 on, point 0 takes all the weight.
    assert "layers 3 to 10: smallest weight a query puts on point 0: 1.000" in printed
    # ... so once each token is scaled to length 1 (RMSNorm's effect) they nearly coincide
    assert "divided by its length: relative spread 0.80 at layer 0, 0.0004 at layer 10" in printed
    assert "no distance between two points shrank: True" in printed
    # Summary bullet 4: the residual stack stretches along one direction on every seed
    assert "width ratio fell in 20 of 20 seeds, median 0.49 at layer 0, 0.14 at layer 3" in printed


def test_hull_picture_marks_the_mean_away_from_every_label():
    import matplotlib.pyplot as plt

    from attnlab.lessons.values import hull_picture

    V = np.array([[0.0, 0.0], [3.0, -0.5], [2.5, 2.5], [0.5, 3.0], [0.8, 2.0]])
    ax = hull_picture(V, {"flat": np.tile(V.mean(axis=0), (3, 1))})
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "mean of the rows" in labels
    # Section 1's v4 sits well away from the mean, where the flat outputs gather.
    assert np.linalg.norm(V[4] - V.mean(axis=0)) > 0.5
    plt.close(ax.figure)


def test_nearest_row_distance_and_the_rows_that_hold_the_weight():
    from attnlab.lessons.values import nearest_row_distance, rows_holding

    V = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    Z = np.array([[0.0, 0.1], [3.0, 4.0], [1.5, 0.0]])
    np.testing.assert_allclose(nearest_row_distance(Z, V), [0.1, 3.0, 1.5])
    A = np.array([[0.96, 0.02, 0.02], [0.5, 0.0, 0.5], [0.4, 0.3, 0.3], [0.02, 0.48, 0.5]])
    assert rows_holding(A, 0.95, ["v0", "v1", "v2"]) == ["v0", "v0+v2", "3 or more rows", "v1+v2"]


def test_sharp_outputs_of_section_1_sit_near_value_rows_including_the_inner_one():
    # Section 1's claim: at τ = 0.2 the outputs lie close to a value row or between two,
    # the inner row v4 among them, and the commonest pair v0+v4 is no edge of the hull.
    from collections import Counter

    from attnlab.lessons.values import nearest_row_distance, rows_holding

    rng = np.random.default_rng(5)
    V2 = np.array([[0.0, 0.0], [3.0, -0.5], [2.5, 2.5], [0.5, 3.0], [0.8, 2.0]])
    K2 = rng.normal(size=(5, 4))
    Qs = np.random.default_rng(6).normal(size=(200, 4))
    Z, A = attnlab.attention(Qs, K2, V2, scale=5.0, return_weights=True)
    assert np.median(nearest_row_distance(Z, V2)) < 0.1
    held = Counter(rows_holding(A, 0.95, [f"v{j}" for j in range(5)]))
    pairs = [rows for rows, _ in held.most_common() if "+" in rows]
    assert pairs[0] == "v0+v4" and held["v4"] > 0
    # No weight sits within 1e-3 of the share, so the counts do not depend on rounding.
    top = -np.sort(-A, axis=1)
    assert np.abs(top[:, 0] - 0.95).min() > 1e-3 and np.abs(top[:, :2].sum(1) - 0.95).min() > 1e-3
