"""Tests for the softmax lesson's tools (``attnlab.lessons.softmax``).

Lesson: ``notebooks/04_softmax.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

import attnlab
from attnlab.lessons import softmax as lesson


def test_the_batched_jacobian_of_a_temperature_sweep_matches_row_by_row():
    # The notebook's sweep: ‖J‖ of softmax(s / τ) for many τ at once, then ‖J‖ / τ.
    s = np.array([2.0, 1.0, 0.5, 0.0, -1.0])
    taus = np.array([0.25, 1.0, 4.0])
    norm_J = np.linalg.norm(
        attnlab.softmax_jacobian(attnlab.softmax(s / taus[:, None])), axis=(1, 2)
    )
    for tau, nJ in zip(taus, norm_J, strict=True):
        p = attnlab.softmax(s / tau)
        assert nJ == pytest.approx(np.linalg.norm(np.diag(p) - np.outer(p, p)))


def test_qk_norm_scores_are_g_cos_theta_and_ignore_lengths():
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(4, 6)), rng.normal(size=(5, 6))
    S = lesson.qk_norm_scores(Q, K, 3.0)
    cos = (Q @ K.T) / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(K, axis=1))
    np.testing.assert_allclose(S, 3.0 * cos)
    np.testing.assert_allclose(lesson.qk_norm_scores(7.0 * Q, 0.5 * K, 3.0), S)
    assert np.abs(S).max() <= 3.0


@pytest.mark.parametrize(("g", "n"), [(0.5, 2), (2.0, 6), (4.0, 10)])
def test_largest_weight_bound_is_reached_by_one_g_and_the_rest_minus_g(g, n):
    scores = np.full(n, -g)
    scores[0] = g
    assert attnlab.softmax(scores).max() == pytest.approx(lesson.largest_weight_bound(g, n))
    rng = np.random.default_rng(1)
    for _ in range(200):
        s = rng.uniform(-g, g, size=n)
        assert attnlab.softmax(s).max() <= lesson.largest_weight_bound(g, n) + 1e-12


def test_new_figures_draw():
    taus = np.logspace(-1, 1, 11)
    W = attnlab.softmax(np.array([1.0, 0.0]) / taus[:, None])
    norm_J = np.linalg.norm(attnlab.softmax_jacobian(W), axis=(1, 2))
    norm_grad = norm_J / taus
    fig = lesson.temperature_gradient_plot(taus, norm_J, norm_grad, marks=(1.0,))
    assert len(fig.axes) == 1
    plt.close(fig)
    cs, gs = np.logspace(-1, 1, 5), np.linspace(0.5, 2, 4)
    fig = lesson.query_scaling_plot(
        cs,
        np.linspace(0.2, 1, 5),
        {1.0: np.full(5, 0.3), 2.0: np.full(5, 0.4), 4.0: np.full(5, 0.6)},
    )
    assert len(fig.axes) == 1
    assert len(fig.axes[0].get_lines()) == 4  # plain + one line per g
    plt.close(fig)
    fig = lesson.qk_norm_bound_plot(gs, np.full(4, 0.5), np.full(4, 0.9))
    assert len(fig.axes) == 1
    plt.close(fig)


def test_qk_norm_bound_plot_names_its_measured_points():
    fig = lesson.qk_norm_bound_plot(
        [1.0, 2.0], [0.5, 0.6], [0.9, 0.95], measured_label="max over 2000 queries, these 6 keys"
    )
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "max over 2000 queries, these 6 keys" in labels
    plt.close(fig)


# ---------------------------------------------------------------- the checkers


def _masked_nanmax_nan_to_num(x, mask):
    kept = np.where(mask, x, np.nan)
    m = np.nanmax(kept, axis=-1, keepdims=True)  # warns on a row with no key left
    e = np.exp(kept - m)
    return np.nan_to_num(e / np.nansum(e, axis=-1, keepdims=True))


def _masked_nanmax_fixed_up(x, mask):
    m = np.nanmax(np.where(mask, x, np.nan), axis=-1, keepdims=True)  # warns all the same
    m = np.where(np.isnan(m), 0.0, m)
    e = np.exp(np.where(mask, x, -np.inf) - m)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


@pytest.mark.parametrize("answer", [_masked_nanmax_nan_to_num, _masked_nanmax_fixed_up])
def test_a_masked_softmax_built_on_nanmax_is_told_that_nanmax_warns(answer):
    # Right weights, but np.nanmax warns through Python's warnings, not np.errstate: the
    # lesson's hidden test turns that warning into an error.
    result = attnlab.check("masked_softmax", answer)
    assert not result.passed
    assert "All-NaN slice" in result.message
    assert "`np.nanmax` warns on a row that is all nan" in result.message


def _masked_nanmax_silenced(x, mask):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _masked_nanmax_fixed_up(x, mask)


def test_a_masked_softmax_that_filters_warnings_out_is_refused():
    result = attnlab.check("masked_softmax", _masked_nanmax_silenced)
    assert not result.passed
    assert "switches NumPy's warnings off" in result.message


def _masked_nan_fill(x, mask):
    kept = np.where(mask, x, np.nan)  # exp(nan) is nan, not 0
    e = np.exp(kept - np.nanmax(kept, axis=-1, keepdims=True))
    return e / np.nansum(e, axis=-1, keepdims=True)


def test_a_masked_softmax_with_nan_on_the_blocked_keys_is_asked_for_minus_infinity():
    result = attnlab.check("masked_softmax", _masked_nan_fill)
    assert not result.passed
    assert "nan on blocked ones" in result.message
    assert "multiply" not in result.message


def _softmax_naive_cleaned_up(x):
    with np.errstate(all="ignore"):
        e = np.exp(x)
        return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))


def test_a_naive_softmax_with_its_nan_cleaned_up_is_told_about_overflow():
    result = attnlab.check("softmax", _softmax_naive_cleaned_up)
    assert not result.passed
    assert "Rows 0 and 2 of your result are all zeros" in result.message
    assert "keeps every exponent ≤ 0" in result.message
    assert "your rows sum to" not in result.message


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        # diag(p²) - p pᵀ: a zero diagonal, rows sum below 0
        (lambda P: np.stack([np.diag(p**2) - np.outer(p, p) for p in P]), "too small"),
        (
            lambda P: np.stack([np.diag(p) - np.outer(p, p) + 0.1 * np.eye(len(p)) for p in P]),
            "too large",
        ),
    ],
)
def test_the_jacobian_row_sum_hint_says_which_way_the_sums_are_off(answer, said):
    result = attnlab.check("softmax_jacobian", answer)
    assert not result.passed
    assert "don't sum to 0" in result.message
    assert said in result.message


def _softmax_clipped(x):
    e = np.exp(np.clip(x, -700, 700))  # no overflow, but the gaps are gone
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_clipped_then_shifted(x):
    z = np.clip(x, -500, 500)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("answer", [_softmax_clipped, _softmax_clipped_then_shifted])
def test_a_softmax_that_clips_the_scores_is_told_that_clipping_erases_the_gaps(answer):
    result = attnlab.check("softmax", answer)
    assert not result.passed
    assert "Rows 0 and 2 of your result give every key the same weight" in result.message
    assert "Clipping changes the gaps between scores" in result.message


def _softmax_divided_by_row_max(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.max(axis=-1, keepdims=True)


def test_a_softmax_divided_by_its_largest_exponential_is_not_told_it_divided_by_nothing():
    result = attnlab.check("softmax", _softmax_divided_by_row_max)
    assert not result.passed
    assert "the largest weight of each row is exactly 1" in result.message
    assert "divided by the row's largest one" in result.message


def _fill(value):
    def answer(x, mask):
        z = np.where(mask, x, value)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True) * mask  # zeroes a row with no key left

    return answer


def _fill_then_zero_empty_rows(x, mask):
    keep = np.broadcast_to(mask, x.shape)
    z = np.where(keep, x, -1e9)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return np.where(keep.any(axis=-1, keepdims=True), e / e.sum(axis=-1, keepdims=True), 0.0)


@pytest.mark.parametrize("answer", [_fill(-1e9), _fill(-1e30), _fill_then_zero_empty_rows])
def test_a_finite_fill_is_told_that_kept_scores_below_it_lose_their_weight(answer):
    # The exercise asks for scores of any size: kept scores below the fill lose to it.
    result = attnlab.check("masked_softmax", answer)
    assert not result.passed
    assert "far below only the scores above it" in result.message
    assert "kept scores lie far below -1e9" in result.message


def test_the_most_negative_number_of_the_type_as_fill_passes():
    assert attnlab.check("masked_softmax", _fill(np.finfo(np.float64).min)).passed


def test_a_most_negative_fill_without_care_for_empty_rows_is_asked_about_them():
    def answer(x, mask):
        z = np.where(mask, x, np.finfo(x.dtype).min)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    result = attnlab.check("masked_softmax", answer)
    assert not result.passed
    assert "a row with every key blocked gets equal weights" in result.message
    assert "np.finfo(x.dtype).min" in result.message


def test_equal_weights_on_an_empty_row_without_a_fill_are_told_the_symptom_first():
    # No finite fill at all: an empty row is given equal weights on purpose.
    def answer(x, mask):
        keep = np.broadcast_to(np.asarray(mask, dtype=bool), x.shape)
        kept = np.where(keep, x, -np.inf)
        m = kept.max(axis=-1, keepdims=True)
        m = np.where(m > -np.inf, m, 0.0)
        e = np.exp(kept - m)
        total = e.sum(axis=-1, keepdims=True)
        uniform = np.full(x.shape, 1.0 / x.shape[-1])
        return np.where(total > 0, e / np.where(total > 0, total, 1.0), uniform)

    result = attnlab.check("masked_softmax", answer)
    assert not result.passed
    assert result.message.startswith("Your weights are right wherever a row keeps a key")
    assert "You filled" not in result.message


def _masked_shift_by_kept_min(x, mask):
    m = np.where(mask, x, np.inf).min(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(mask, np.exp(np.where(mask, x, -np.inf) - m), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def test_a_masked_softmax_shifted_by_its_smallest_kept_score_is_told_about_overflow():
    result = attnlab.check("masked_softmax", _masked_shift_by_kept_min)
    assert not result.passed
    assert "overflows to inf unless the shift is close to" in result.message
    assert "multiply" not in result.message


def _masked_log_of_mask(x, mask):
    z = x + np.log(mask)  # log(False) = -inf, with NumPy's divide-by-zero warning
    m = z.max(axis=-1, keepdims=True)
    m = np.where(m > -np.inf, m, 0.0)
    e = np.exp(z - m)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def test_a_masked_softmax_that_adds_the_log_of_the_mask_is_told_where_the_warning_comes_from():
    result = attnlab.check("masked_softmax", _masked_log_of_mask)
    assert not result.passed
    assert "divide by zero encountered in log" in result.message
    assert "log(0) is that divide by zero" in result.message
    assert "`np.where(mask, x, -np.inf)` gives the same fill" in result.message
    assert "thrown away" not in result.message


def _jacobian_unbroadcast(P):
    return P[:, :, None] * (np.eye(P.shape[-1]) - P[None, :])  # (1, n, m) against (m, m)


def _jacobian_diag_outer(P):
    return np.diag(P) - np.outer(P, P)


def test_the_jacobian_shape_hint_speaks_of_diag_and_outer_only_to_answers_that_use_them():
    result = attnlab.check("softmax_jacobian", _jacobian_unbroadcast)
    assert not result.passed
    assert "NumPy lines (3,3) and (1,2,3) up from the right" in result.message
    assert "np.diag" not in result.message
    result = attnlab.check("softmax_jacobian", _jacobian_diag_outer)
    assert not result.passed
    assert "`np.diag` and `np.outer` work on one 1-D row at a time" in result.message


def _qk_norm_outer(Q, K, g):
    return g * (Q @ K.T) / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(K, axis=1))


def _qk_norm_loop(Q, K, g):
    S = np.zeros((len(Q), len(K)))
    for i in range(len(Q)):
        for j in range(len(K)):
            S[i, j] = g * Q[i] @ K[j] / (np.linalg.norm(Q[i]) * np.linalg.norm(K[j]))
    return S


def _qk_norm_float32(Q, K, g):
    Q, K = Q.astype(np.float32), K.astype(np.float32)
    Qn = Q / np.sqrt((Q**2).sum(axis=-1, keepdims=True))
    Kn = K / np.sqrt((K**2).sum(axis=-1, keepdims=True))
    return np.float32(g) * np.einsum("id,jd->ij", Qn, Kn)


@pytest.mark.parametrize("answer", [_qk_norm_outer, _qk_norm_loop, _qk_norm_float32])
def test_qk_norm_scores_in_any_style_pass(answer):
    result = attnlab.check("qk_norm_scores", answer)
    assert result.passed, result.message


def test_qk_norm_scores_that_call_the_course_version_are_refused():
    result = attnlab.check("qk_norm_scores", lambda Q, K, g: lesson.qk_norm_scores(Q, K, g))
    assert not result.passed
    assert "course's own `attnlab.lessons.softmax.qk_norm_scores`" in result.message


def test_qk_norm_scores_beyond_g_are_told_the_range():
    # Not normalised at all, only multiplied by g: scores far outside [-g, g].
    result = attnlab.check("qk_norm_scores", lambda Q, K, g: g * Q @ K.T)
    assert not result.passed
    assert "outside [-g, g] = [-2, 2]" in result.message


def _unit(A, axis=-1):
    return A / np.linalg.norm(A, axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda Q, K, g: g * _unit(Q) @ _unit(K), "without transposing them"),
        (lambda Q, K, g: g * _unit(Q, None) @ _unit(K).T, "length of the whole matrix Q"),
        (lambda Q, K, g: g * _unit(Q) @ _unit(K, None).T, "length of the whole matrix K"),
        (
            lambda Q, K, g: (
                g * (Q @ K.T) / (np.linalg.norm(Q, axis=1, keepdims=True) * _lengths_column(K))
            ),
            "the key lengths as a row, (1, n_k)",
        ),
        (
            lambda Q, K, g: (
                g
                * (Q / np.linalg.norm(Q, 1, axis=1, keepdims=True))
                @ (K / np.linalg.norm(K, 1, axis=1, keepdims=True)).T
            ),
            "the L1 norm",
        ),
        (lambda Q, K, g: attnlab.softmax(g * _unit(Q) @ _unit(K).T), "those are attention weights"),
        (lambda Q, K, g: g * np.cos(Q @ K.T), "no np.cos is needed"),
        (lambda Q, K, g: g * np.cos(_unit(Q) @ _unit(K).T), "gives cos(cos θ_ij)"),
        (lambda Q, K, g: g * np.arccos(_unit(Q) @ _unit(K).T), "the angle θ_ij itself"),
        (lambda Q, K, g: _unit(g * Q) @ _unit(K).T, "which divides g out again"),
        (
            lambda Q, K, g: attnlab.softmax(g * _unit(Q) @ _unit(K).T / np.sqrt(Q.shape[1])),
            "those are attention weights",
        ),
    ],
)
def test_qk_norm_scores_slips_are_named(answer, said):
    result = attnlab.check("qk_norm_scores", answer)
    assert not result.passed
    assert said in result.message
    assert "largest difference" not in result.message


def _lengths_column(K):
    return np.sqrt((K**2).sum(axis=1))[:, None]


def _masked_fill_in_place(x, mask):
    x[~mask] = -np.inf  # writes into the caller's array
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(m > -np.inf, m, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def test_a_masked_softmax_that_fills_x_by_indexing_is_told_that_this_is_in_place():
    result = attnlab.check("masked_softmax", _masked_fill_in_place)
    assert not result.passed
    assert "changed its input x in place" in result.message
    assert "`x[~mask] = -np.inf` writes into x as well" in result.message


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda x, mask: np.where(mask, x, -np.inf), "returns the masked scores, not weights"),
        (lambda x, mask: np.where(mask, x, -1e9), "returns the masked scores, not weights"),
        (lambda x, mask: np.where(mask, np.exp(x), 0.0), "Weights lie between 0 and 1"),
    ],
)
def test_a_masked_softmax_that_forgets_the_softmax_is_told_so(answer, said):
    with np.errstate(over="ignore"):
        result = attnlab.check("masked_softmax", answer)
    assert not result.passed
    assert said in result.message
    assert "multiply" not in result.message


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda x: x / x.sum(axis=-1, keepdims=True), "the exponential is missing"),
        (
            lambda x: (
                np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x).sum(axis=-1, keepdims=True)
            ),
            "numerator and denominator",
        ),
        (
            lambda x: (
                np.exp(x) / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)
            ),
            "numerator and denominator",
        ),
    ],
)
def test_softmax_slips_without_exp_or_with_half_a_shift_are_named(answer, said):
    with np.errstate(all="ignore"):
        result = attnlab.check("softmax", answer)
    assert not result.passed
    assert said in result.message


def _masked_after_softmax_renormalised(x, mask):
    # The recipe of "Could you mask after the softmax instead?", guarded against 0 / 0.
    p = attnlab.softmax(x) * mask
    total = p.sum(axis=-1, keepdims=True)
    return p / np.where(total > 0, total, 1.0)


def test_masking_after_the_softmax_and_renormalising_is_named_as_that_recipe():
    result = attnlab.check("masked_softmax", _masked_after_softmax_renormalised)
    assert not result.passed
    assert "zeroed the blocked weights and divided by the row sum" in result.message
    assert "Put -inf into the blocked scores first" in result.message


def _rms_rows(A):
    return A / np.sqrt((A**2).mean(axis=-1, keepdims=True))


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda Q, K, g: g**2 * _unit(Q) @ _unit(K).T, "is 2 times the right one"),
        (lambda Q, K, g: 0.5 * g * _unit(Q) @ _unit(K).T, "is 0.5 times the right one"),
        (
            lambda Q, K, g: g * _rms_rows(Q) @ _rms_rows(K).T,
            "as RMSNorm does. That gives every vector length √d",
        ),
    ],
)
def test_qk_norm_scores_off_by_a_factor_are_told_the_scale_not_the_range(answer, said):
    result = attnlab.check("qk_norm_scores", answer)
    assert not result.passed
    assert said in result.message
    assert "outside [-g, g]" not in result.message


def test_a_masked_softmax_that_fills_with_zero_then_zeroes_the_weights_is_told_both_steps():
    result = attnlab.check(
        "masked_softmax", lambda x, mask: attnlab.softmax(np.where(mask, x, 0.0)) * mask
    )
    assert not result.passed
    assert "set the blocked scores to 0 before the softmax" in result.message
    assert "largest difference" not in result.message


def _qk_norm_clamped_queries(Q, K, g):
    # Right on the test inputs, whose queries are all longer than 0.3, but a query shorter
    # than that keeps part of its length.
    Qn = Q / np.maximum(np.linalg.norm(Q, axis=-1, keepdims=True), 0.3)
    return g * Qn @ _unit(K).T


def test_qk_norm_scores_that_change_when_the_queries_shrink_are_refused():
    result = attnlab.check("qk_norm_scores", _qk_norm_clamped_queries)
    assert not result.passed
    assert "Your scores change when the queries get shorter" in result.message
    assert "multiplying `Q` by 0.01" in result.message
    assert "a query's length should drop out" in result.message


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda Q, K, g: g * np.tanh(Q @ K.T), "when the queries get longer"),
        (lambda Q, K, g: g * _unit(Q) @ np.tanh(K).T, "when the keys get longer"),
        (lambda Q, K, g: Q @ K.T / np.sqrt(Q.shape[1]), "outside [-g, g] = [-2, 2]"),
    ],
)
def test_qk_norm_scores_that_depend_on_the_lengths_are_told_the_length_should_drop_out(
    answer, said
):
    result = attnlab.check("qk_norm_scores", answer)
    assert not result.passed
    assert "length should drop out" in result.message
    assert said in result.message
    assert "largest difference" not in result.message


def _layernorm_rows(A):
    centred = A - A.mean(axis=-1, keepdims=True)
    return centred / centred.std(axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            lambda Q, K, g: (
                g
                * _unit(Q - Q.mean(axis=1, keepdims=True))
                @ _unit(K - K.mean(axis=1, keepdims=True)).T
            ),
            "subtracted each vector's mean before dividing by its length",
        ),
        (
            lambda Q, K, g: g * _layernorm_rows(Q) @ _layernorm_rows(K).T,
            "subtracted its mean and divided by its standard deviation",
        ),
    ],
)
def test_qk_norm_scores_normalised_as_layernorm_are_named(answer, said):
    result = attnlab.check("qk_norm_scores", answer)
    assert not result.passed
    assert said in result.message
    assert "Henry et al." in result.message


def test_qk_norm_scores_with_a_small_guard_against_zero_lengths_pass():
    # norm + 1e-6 is off by 5e-4 on the shortest key multiplied by 0.01: still accepted.
    def guarded(Q, K, g):
        Qn = Q / (np.linalg.norm(Q, axis=-1, keepdims=True) + 1e-6)
        return g * Qn @ (K / (np.linalg.norm(K, axis=-1, keepdims=True) + 1e-6)).T

    result = attnlab.check("qk_norm_scores", guarded)
    assert result.passed, result.message


def _masked_whole_sum(x, mask):
    kept = np.where(mask, x, -np.inf)
    m = kept.max(axis=-1, keepdims=True)
    e = np.exp(kept - np.where(m > -np.inf, m, 0.0))
    return e / e.sum()


def _masked_softmax_of_the_whole_array(x, mask):
    kept = np.where(mask, x, -np.inf)
    e = np.exp(kept - kept.max())
    return e / e.sum()


@pytest.mark.parametrize("answer", [_masked_whole_sum, _masked_softmax_of_the_whole_array])
def test_a_masked_softmax_divided_by_the_sum_of_the_whole_array_is_named(answer):
    with np.errstate(all="ignore"):
        result = attnlab.check("masked_softmax", answer)
    assert not result.passed
    assert "You divided by the sum of the whole array" in result.message


def _softmax_with_builtin_max(x):
    e = np.exp(x - max(x))
    return e / sum(e)


def _masked_softmax_with_builtin_max(x, mask):
    kept = np.where(mask, x, -np.inf)
    e = np.exp(kept - max(kept))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("name", "answer"),
    [("softmax", _softmax_with_builtin_max), ("masked_softmax", _masked_softmax_with_builtin_max)],
)
def test_python_s_built_in_max_on_rows_is_named(name, answer):
    result = attnlab.check(name, answer)
    assert not result.passed
    assert "built-in `max` (or `min`) goes through a 2-D array row by row" in result.message


def _softmax_with_an_if_on_the_array(x):
    if x > 0:  # the same NumPy error, but no built-in max
        return x
    return x


def test_the_built_in_max_hint_is_only_for_a_line_that_calls_max():
    result = attnlab.check("softmax", _softmax_with_an_if_on_the_array)
    assert not result.passed
    assert "truth value of an array" in result.message
    assert "built-in `max`" not in result.message
