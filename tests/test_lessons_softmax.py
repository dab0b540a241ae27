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
    fig = lesson.query_scaling_plot(cs, np.linspace(0.2, 1, 5), np.full(5, 0.4), 2.0)
    assert len(fig.axes) == 1
    plt.close(fig)
    fig = lesson.qk_norm_bound_plot(gs, np.full(4, 0.5), np.full(4, 0.9))
    assert len(fig.axes) == 1
    plt.close(fig)


def test_jacobian_pair_labels_its_colour_bar():
    J = attnlab.softmax_jacobian(attnlab.softmax(np.array([1.0, 0.0, -1.0])))
    fig = lesson.jacobian_pair([J, J], ["a", "b"])
    assert any("partial p_i" in ax.get_ylabel() for ax in fig.axes)
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
    assert "the most negative number of the type" in result.message
    assert "every key blocked" in result.message


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
