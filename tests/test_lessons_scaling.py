"""Tests for lesson 03's experiments (``attnlab.lessons.scaling``) and its exercises.

The Monte-Carlo tests use fixed seeds and generous tolerances: a few hundred rows
per d_k pin a mean weight or entropy to within a few hundredths.
"""

import math

import matplotlib
import numpy as np
import pytest

import attnlab
from attnlab.exercises import check, exercise_ids, solution, solutions
from attnlab.exercises import ex03_scaling as exercise
from attnlab.exercises.registry import get_exercise
from attnlab.lessons import scaling as lesson

matplotlib.use("Agg")


# ------------------------------------------------------------------ entropy


def test_entropy_of_one_hot_uniform_and_known_rows():
    p = np.array([[1.0, 0.0, 0.0, 0.0], [0.25] * 4, [0.5, 0.5, 0.0, 0.0]])
    np.testing.assert_allclose(lesson.entropy(p), [0.0, math.log(4), math.log(2)], atol=1e-15)


def test_entropy_handles_zeros_without_warnings(recwarn):
    p = np.zeros((3, 5))
    p[:, 2] = 1.0
    assert np.array_equal(lesson.entropy(p), np.zeros(3))
    assert not recwarn.list


def test_entropy_axis_shapes_and_float32():
    rng = np.random.default_rng(0)
    p = attnlab.softmax(rng.normal(size=(2, 3, 4)))
    assert lesson.entropy(p).shape == (2, 3)
    np.testing.assert_allclose(lesson.entropy(p, axis=0), lesson.entropy(np.moveaxis(p, 0, -1)))
    assert lesson.entropy(p.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    ("p", "error", "phrase"),
    [
        (np.array([0.5, np.nan]), ValueError, "NaN or inf"),
        (np.array([1.5, -0.5]), ValueError, "negative"),
        (np.float64(0.3), ValueError, "at least one dimension"),
        (np.array(["a"]), TypeError, "real numbers"),
    ],
)
def test_entropy_refuses_what_is_not_probabilities(p, error, phrase):
    with pytest.raises(error, match=phrase):
        lesson.entropy(p)


# --------------------------------------------------------------- experiments


def test_random_score_rows_have_variance_d_k():
    for d_k in (1, 16, 256):
        S = lesson.random_score_rows(d_k, n_keys=16, n_rows=1000, seed=1)
        assert S.shape == (1000, 16)
        assert abs(S.mean()) < 0.1 * math.sqrt(d_k)
        assert S.var() == pytest.approx(d_k, rel=0.1)
    a = lesson.random_score_rows(8, seed=4)
    assert np.array_equal(a, lesson.random_score_rows(8, seed=4))


@pytest.mark.parametrize("sigma_q, sigma_k", [(0.5, 0.5), (3.0, 0.2), (math.sqrt(1 / 3),) * 2])
def test_random_score_rows_with_other_spreads(sigma_q, sigma_k):
    # Lesson 02, Section 7: Var(q·k) = σ_q² σ_k² d_k; the same draws, only rescaled.
    S = lesson.random_score_rows(64, n_rows=1000, seed=2, sigma_q=sigma_q, sigma_k=sigma_k)
    assert S.var() == pytest.approx((sigma_q * sigma_k) ** 2 * 64, rel=0.1)
    unit = lesson.random_score_rows(64, n_rows=1000, seed=2)
    np.testing.assert_allclose(S, sigma_q * sigma_k * unit, rtol=1e-9, atol=1e-9)


def test_score_rows_are_drawn_like_random_score_rows():
    # √(χ²_{d_k}) · z per key: the same distribution as q · k_j, without the vectors.
    for d_k in (1, 16, 256):
        fast = lesson.score_rows(d_k, n_keys=16, n_rows=20_000, seed=d_k)
        slow = lesson.random_score_rows(d_k, n_keys=16, n_rows=4000, seed=d_k)
        assert fast.shape == (20_000, 16)
        assert fast.var() == pytest.approx(d_k, rel=0.05)
        top = [attnlab.softmax(S).max(axis=-1).mean() for S in (fast, slow)]
        assert top[0] == pytest.approx(top[1], abs=0.02)
    assert np.array_equal(lesson.score_rows(8, seed=3), lesson.score_rows(8, seed=3))


def test_the_constant_in_front_of_root_d_k_sets_a_variance_free_of_d_k():
    # Lesson 03: dividing by c√d_k gives variance 1/c² at every d_k.
    for d_k in (16, 256, 1024):
        S = lesson.random_score_rows(d_k, n_rows=2000, seed=d_k)
        assert (S / (2 * math.sqrt(d_k))).var() == pytest.approx(0.25, rel=0.08)


def test_gap_sweep_goes_from_uniform_to_one_hot():
    top, ent = lesson.gap_sweep([0.0, 5.0, 30.0], n_keys=16)
    assert top[0] == pytest.approx(1 / 16) and ent[0] == pytest.approx(math.log(16))
    assert top[1] == pytest.approx(math.exp(5) / (math.exp(5) + 15))
    assert top[2] > 0.999999 and ent[2] < 1e-9
    assert np.all(np.diff(top) > 0) and np.all(np.diff(ent) < 0)


def test_raw_rows_saturate_and_scaled_rows_do_not():
    sat = lesson.saturation_by_dk()
    assert list(sat.d_ks) == [2**i for i in range(11)]
    # Raw: the largest weight climbs towards 1, the entropy falls towards 0.
    assert np.all(np.diff(sat.max_weight_raw) > 0)
    assert np.all(np.diff(sat.entropy_raw) < 0)
    assert sat.max_weight_raw[-1] > 0.9 and sat.entropy_raw[-1] < 0.2
    # Scaled: the same numbers for every d_k, within Monte-Carlo noise.
    assert np.ptp(sat.max_weight_scaled) < 0.06
    assert np.ptp(sat.entropy_scaled) < 0.1
    assert np.all(sat.entropy_scaled < math.log(16))
    # d_k = 1: dividing by √1 changes nothing.
    assert sat.max_weight_raw[0] == sat.max_weight_scaled[0]
    # The scores' standard deviation is √d_k.
    np.testing.assert_allclose(sat.score_std, np.sqrt(sat.d_ks), rtol=0.1)
    # The Jacobian collapses for raw rows only.
    assert sat.jacobian_raw[-1] < 1e-3 < 0.1 < sat.jacobian_scaled.min()
    assert np.all(sat.jacobian_scaled <= 0.25) and np.all(sat.jacobian_raw <= 0.25)
    assert sat.at(512)["max_weight_raw"] == sat.max_weight_raw[9]


def test_the_gradient_with_respect_to_the_raw_scores():
    # Lesson 03, Section 7: the scaled rows pass J / √d_k to the raw scores s = q·k.
    sat = lesson.saturation_by_dk()
    np.testing.assert_allclose(sat.jacobian_scaled_wrt_raw, sat.jacobian_scaled / np.sqrt(sat.d_ks))
    assert sat.at(64)["jacobian_scaled_wrt_raw"] == sat.jacobian_scaled_wrt_raw[6]
    # With the divisor it falls like 1/√d_k: J itself stays within a narrow band.
    assert np.ptp(sat.jacobian_scaled[4:]) < 0.02
    # Without it, more gradient up to d_k = 128, less from 256 on, far less at 1024.
    ratio = sat.jacobian_raw / sat.jacobian_scaled_wrt_raw
    assert np.all(ratio[1:7] > 1.5) and ratio[7] > 1.1
    assert np.all(ratio[8:] < 0.9) and ratio[-1] < 1e-2
    # The chain rule: nudging the raw scores of a scaled row gives J / √d_k.
    s = lesson.random_score_rows(64, n_keys=5, n_rows=1, seed=2)[0]
    h, J = 1e-6, attnlab.softmax_jacobian(attnlab.softmax(s / 8.0))
    for j in range(5):
        e = np.zeros(5)
        e[j] = h
        column = (attnlab.softmax((s + e) / 8.0) - attnlab.softmax((s - e) / 8.0)) / (2 * h)
        np.testing.assert_allclose(column, J[:, j] / 8.0, atol=1e-8)


def test_sequence_scores_and_the_share_of_saturated_rows():
    S = lesson.sequence_scores(64, n_tokens=128, n_sequences=3, seed=1)
    assert S.shape == (3, 128, 128)
    assert S.var() == pytest.approx(64, rel=0.1)
    third = lesson.sequence_scores(
        64, n_tokens=128, n_sequences=3, seed=1, sigma_q=0.5, sigma_k=2 / 3
    )
    np.testing.assert_allclose(third, S / 3, rtol=1e-12, atol=1e-12)
    assert lesson.saturated_share(np.array([[10.0, 0.0], [1.0, 0.0]])) == 0.5
    assert lesson.saturated_share(np.array([[10.0, 0.0]]), threshold=0.99999) == 0.0
    # Lesson 03, Section 6: unit variance saturates more the larger d_k; ÷√d_k never does;
    # PyTorch's default (σ_q σ_k = 1/3) saturates few rows at d_k = 64.
    shares = [lesson.saturated_share(lesson.sequence_scores(d, seed=d)) for d in (64, 256, 1024)]
    assert shares == sorted(shares) and shares[0] > 0.05 and shares[-1] > 0.5
    S = lesson.sequence_scores(1024, seed=1024)
    assert lesson.saturated_share(S / 32.0) == 0.0
    assert lesson.saturated_share(lesson.sequence_scores(64, seed=64) / 3) < 0.02


def test_mean_entropy_by_exponent_matches_rows_drawn_in_full():
    # The χ² shortcut draws the same distribution as q · k_j with every entry N(0, 1).
    alphas = np.array([0.0, 0.25, 0.5, 1.0])
    for d_k in (4, 64):
        quick = lesson.mean_entropy_by_exponent(d_k, 10, alphas, n_rows=4000, seed=1)
        S = lesson.random_score_rows(d_k, n_keys=10, n_rows=4000, seed=2)
        full = [float(lesson.entropy(attnlab.softmax(S / d_k**a)).mean()) for a in alphas]
        np.testing.assert_allclose(quick, full, atol=0.05)
    # At α = 1/2 the mean entropy is the same for every d_k; at α = 0 it falls with d_k.
    at = {d: lesson.mean_entropy_by_exponent(d, 10, [0.0, 0.5]) for d in (4, 64, 1024)}
    assert at[4][0] > at[64][0] > at[1024][0]
    assert np.ptp([at[d][1] for d in at]) < 0.1


def test_largest_jacobian_entry():
    assert lesson.largest_jacobian_entry(np.array([1.0, 0.0, 0.0])) == 0.0
    assert lesson.largest_jacobian_entry(np.array([0.5, 0.5])) == pytest.approx(0.25)
    assert lesson.largest_jacobian_entry(np.full((3, 4), 0.25)).shape == (3,)


def test_power_variances_follow_d_k_to_the_one_minus_two_p():
    d_ks = lesson.DK_GRID
    measured = lesson.power_variances(d_ks)
    assert measured.shape == (3, d_ks.size)
    for p, row in zip(lesson.POWERS, measured, strict=True):
        np.testing.assert_allclose(row, d_ks ** (1 - 2 * p), rtol=0.15)
    np.testing.assert_allclose(measured[1], 1.0, rtol=0.15)


def test_figures_have_titles_and_labels():
    sat = lesson.saturation_by_dk(d_ks=(1, 4, 16), n_rows=50)
    gaps = np.linspace(0, 10, 11)
    figures = [
        lesson.plot_softmax_rows(
            attnlab.softmax(np.array([[2.0, 1, 1], [20, 10, 10]])), ["a", "b"]
        ),
        lesson.plot_gap_sweep(gaps, *lesson.gap_sweep(gaps), n_keys=16),
        lesson.plot_saturation(sat),
        lesson.plot_power_variances((1, 4, 16), lesson.power_variances((1, 4, 16), n_samples=100)),
        lesson.plot_temperatures(np.array([3.0, 1.0, -2.0]), [1.0, 2.0], ["τ = 1", "τ = 2"]),
        lesson.plot_jacobian(sat),
    ]
    for fig in figures:
        for ax in fig.axes:
            assert ax.get_title() or ax.get_title(loc="left") or fig.get_suptitle()
            assert ax.get_xlabel()
        matplotlib.pyplot.close(fig)


# ------------------------------------------------ temperature_for_entropy exercise


def test_a_bisection_that_moves_the_wrong_way_is_told_so():
    def reversed_bisection(scores, target):
        low, high = 1e-3, 1e3
        for _ in range(60):
            tau = np.sqrt(low * high)
            if lesson.entropy(attnlab.softmax(scores / tau)) > target:  # the wrong way round
                low = tau
            else:
                high = tau
        return np.sqrt(low * high)

    message = check("temperature_for_entropy", reversed_bisection).message
    assert "one end of your search interval" in message and "wrong way" in message


@pytest.mark.parametrize("n, target", [(5, 0.3), (8, 1.0), (16, 2.5)])
def test_temperature_for_entropy_hits_the_target(n, target):
    s = np.random.default_rng(n).normal(scale=3.0, size=n)
    tau = lesson.temperature_for_entropy(s, target)
    assert float(lesson.entropy(attnlab.softmax(s / tau))) == pytest.approx(target, abs=1e-9)
    # A larger target needs a larger temperature.
    assert lesson.temperature_for_entropy(s, target * 0.9) < tau


def test_the_fast_largest_entry_agrees_with_the_jacobian_built_in_full():
    rng = np.random.default_rng(12)
    for scale in (0.1, 2.0, 40.0):
        p = attnlab.softmax(rng.normal(scale=scale, size=(50, 9)))
        np.testing.assert_allclose(
            lesson._top_entry(p), lesson.largest_jacobian_entry(p), rtol=1e-12, atol=1e-15
        )


def test_raw_and_scaled_gradients_at_the_scores_cross_between_128_and_256():
    # Lesson 03, Section 7: for rows of 16 keys the unscaled softmax passes more gradient
    # to its raw scores than J / √d_k up to d_k = 128, and less from d_k = 256 on.
    sat = lesson.saturation_by_dk(d_ks=[64, 128, 256, 1024])
    ratio = sat.jacobian_raw / sat.jacobian_scaled_wrt_raw
    assert ratio[0] > 2 and ratio[1] > 1.1 and ratio[2] < 0.9 and ratio[3] < 0.01


def test_temperature_feedback_tells_close_numbers_apart():
    # Numbers that agree to 3 decimals are printed with 6 significant digits.
    assert exercise._digits(2.18613, 2.18642) == ".6g"
    assert exercise._digits(2.044, 2.043) == ".4g"

    def close(scores, target):
        return lesson.temperature_for_entropy(scores, target) * (1 + 3e-4)

    message = check("temperature_for_entropy", close).message
    assert "How fine is your search" in message and "grid" in message
    assert "Expected" not in message  # its 3 decimals would show both numbers alike


def test_a_search_sized_by_the_row_that_moves_the_wrong_way_is_told_so():
    # The solution's interval, spread / 1000 … spread · 1000, searched the wrong way round:
    # it ends at spread · 1000, an end of the interval though no round number.
    def reversed_search(scores, target):
        spread = scores.max() - scores.min()
        low, high = spread * 1e-3, spread * 1e3
        for _ in range(100):
            tau = np.sqrt(low * high)
            if lesson.entropy(attnlab.softmax(scores / tau)) > target:
                low = tau
            else:
                high = tau
        return np.sqrt(low * high)

    message = check("temperature_for_entropy", reversed_search).message
    assert "one end of your search interval" in message and "wrong way" in message, message


def test_a_search_that_compares_the_largest_weight_is_asked_what_it_compares():
    # The largest weight (at most 1, here below the target 1) sends τ to the bottom end.
    def largest_weight_search(scores, target):
        low, high = 1e-3, 1e3
        for _ in range(100):
            tau = np.sqrt(low * high)
            if attnlab.softmax(scores / tau).max() > target:
                low = tau
            else:
                high = tau
        return np.sqrt(low * high)

    message = check("temperature_for_entropy", largest_weight_search).message
    assert "wrong way" in message and "such as the largest weight" in message, message


def _walks_away(compare):
    """A bisection on log τ in 0.001 … 1000, right for the entropy, that compares
    ``compare(scores, tau)`` with the target instead."""

    def search(scores, target):
        low, high = 1e-3, 1e3
        for _ in range(100):
            tau = np.sqrt(low * high)
            if compare(scores, tau) < target:
                low = tau
            else:
                high = tau
        return np.sqrt(low * high)

    return search


@pytest.mark.parametrize(
    "compare",
    [
        lambda scores, tau: lesson.entropy(attnlab.softmax(scores * tau)),  # multiplies
        lambda scores, tau: attnlab.softmax(scores / tau).max(),  # the largest weight
    ],
)
def test_a_search_that_walks_to_the_far_end_is_asked_about_multiplying_and_the_largest_weight(
    compare,
):
    # Both walk to τ = 1000 for targets near the first input's, though not for one near 0.
    message = check("temperature_for_entropy", _walks_away(compare)).message
    assert "τ = 1000 stays put" in message and "one end of your search interval" in message
    assert "`scores * tau`" in message and "largest weight" in message, message
    assert "No formula gives" not in message


def test_newton_steps_that_divide_by_a_zero_slope_are_told_where_the_zero_comes_from():
    def newton_in_beta(scores, target):
        beta = 1.0
        for _ in range(50):
            # rounded, so that the one-hot row's slope is exactly 0 on every platform
            p = np.round(attnlab.softmax(scores * beta), 12)
            h = float(lesson.entropy(p))
            variance = float((p * scores**2).sum() - (p * scores).sum() ** 2)
            beta = beta - (h - target) / (-beta * variance)
        return 1 / beta

    message = check("temperature_for_entropy", newton_in_beta).message
    assert "raised ZeroDivisionError" in message, message
    assert "slope dH/dβ = −β·Var_p(s)" in message and "one-hot" in message
    assert "halves that interval" in message


def test_newton_steps_whose_numpy_division_by_a_zero_slope_gives_inf_are_told_why():
    def newton_in_beta(scores, target):
        beta = np.float64(1.0)
        for _ in range(50):
            p = np.round(attnlab.softmax(scores * beta), 12)
            h = lesson.entropy(p)
            variance = (p * scores**2).sum() - (p * scores).sum() ** 2
            with np.errstate(divide="ignore", invalid="ignore"):
                beta = beta - (h - target) / (-beta * variance)
        return 1 / beta

    message = check("temperature_for_entropy", newton_in_beta).message
    assert "x contains +inf" in message, message
    assert "NumPy number divided by 0" in message and "one-hot" in message
    assert "halves that interval" in message


@pytest.mark.parametrize("tau", [0.1, 10.0])
def test_temperature_feedback_spots_an_end_of_a_narrow_bracket(tau):
    message = check("temperature_for_entropy", lambda scores, target: tau).message
    assert "one end of your search interval" in message


def test_a_correct_search_in_too_narrow_an_interval_is_told_to_widen_it():
    # One test input needs τ ≈ 0.072, below the interval 0.1 … 10: the search is right.
    def narrow_bisection(scores, target, low=0.1, high=10.0):
        for _ in range(60):
            tau = np.sqrt(low * high)
            if lesson.entropy(attnlab.softmax(scores / tau)) < target:
                low = tau
            else:
                high = tau
        return np.sqrt(low * high)

    message = check("temperature_for_entropy", narrow_bisection).message
    assert "outside your interval, below it" in message and "wrong way" not in message
    assert "-0.000" not in message


def _linear_bisection(scores, target, low, high, wrong_way=False):
    for _ in range(80):
        tau = (low + high) / 2
        too_sharp = lesson.entropy(attnlab.softmax(scores / tau)) < target
        if too_sharp != wrong_way:
            low = tau
        else:
            high = tau
    return (low + high) / 2


@pytest.mark.parametrize(
    ("low", "high", "side"), [(0.01, 1.0, "above"), (1.0, 10.0, "below"), (10.0, 100.0, "below")]
)
def test_a_right_search_in_an_interval_that_misses_the_answer_is_told_where_it_is(low, high, side):
    # The test inputs need τ of 0.07 to 44: each interval misses one of them, whatever its ends.
    message = check(
        "temperature_for_entropy", lambda s, t: _linear_bisection(s, t, low, high)
    ).message
    assert f"outside your interval, {side} it" in message, message
    assert "wrong way" not in message


def test_the_visible_inputs_need_every_temperature_the_hidden_test_needs():
    # The notebook's hidden test (cell after the exercise): a search confined to an interval
    # that passes the visible check must pass it too, so the visible τ range covers its own.
    visible = [
        lesson.temperature_for_entropy(**case.inputs) for case in exercise.temperature_cases()
    ]
    rng = np.random.default_rng(3030)
    hidden = [
        lesson.temperature_for_entropy(rng.normal(scale=4.0, size=n), target)
        for n, target in [(4, 0.7), (12, 2.0), (30, 0.2)]
    ]
    hidden.append(lesson.temperature_for_entropy(np.array([0.0, -2.0, -1.0, -800.0]), 0.5))
    assert min(visible) < min(hidden) and max(hidden) < max(visible)
    assert max(visible) > 40  # so a hard-coded 0 … 5 or 0 … 10 fails visibly


@pytest.mark.parametrize("high", [3.0, 5.0, 10.0])
def test_a_search_in_a_fixed_small_interval_fails_the_visible_check(high):
    message = check(
        "temperature_for_entropy", lambda s, t: _linear_bisection(s, t, 0.0, high)
    ).message
    assert "outside your interval, above it: widen the interval" in message, message


def test_an_interval_that_ends_just_short_of_the_answer_is_not_told_to_keep_narrowing():
    # 0.1 … 1.95 ends within 5 % of the first input's τ = 2.043: narrowing cannot reach it.
    message = check(
        "temperature_for_entropy", lambda s, t: _linear_bisection(s, t, 0.1, 1.95)
    ).message
    assert "outside your interval, above it" in message, message
    assert "Close" not in message and "narrowing" not in message


def test_a_one_hot_row_reads_as_entropy_0_not_minus_0():
    # τ = 1.234e-5 makes the first input's row one-hot: entropy -0.0, printed as 0.000.
    message = check("temperature_for_entropy", lambda s, t: 1.234e-5).message
    assert "entropy is 0.000 nats" in message and "-0.000" not in message, message


@pytest.mark.parametrize(("low", "high"), [(0.01, 1.0), (1.0, 10.0), (10.0, 100.0), (1e-3, 1e3)])
def test_a_search_that_moves_the_wrong_way_is_told_so_whatever_its_interval(low, high):
    def reversed_search(s, t):
        return _linear_bisection(s, t, low, high, wrong_way=True)

    message = check("temperature_for_entropy", reversed_search).message
    assert "one end of your search interval" in message and "wrong way" in message, message
    assert "outside your interval" not in message


def test_a_fixed_rule_is_told_its_temperature_ignores_the_target():
    message = check("temperature_for_entropy", lambda s, t: float(np.sqrt(len(s)))).message
    assert "for the target 1 and for 0.5 too" in message, message


def test_a_search_that_cannot_be_run_again_gets_both_readings_of_a_round_number():
    # Right on the first input only for that input's target; raises on any other.
    def picky(scores, target):
        if target != 1.0:
            raise ValueError("only target 1")
        return 10.0

    inputs = exercise.temperature_cases()[0].inputs
    token = exercise._ANSWER.set((picky, "temperature_for_entropy", 1.0))
    try:
        message = exercise._temperature_hint(10.0, 2.0, inputs)
    finally:
        exercise._ANSWER.reset(token)
    assert "Either the right τ lies outside your interval" in message and "wrong way" in message


def test_temperature_feedback_spots_the_target_returned():
    message = check("temperature_for_entropy", lambda scores, target: target).message
    assert "target entropy itself" in message
    for mistake in exercise.TEMPERATURE_MISTAKES:
        assert not check("temperature_for_entropy", mistake.compute).passed


def test_a_search_in_beta_that_returns_beta_is_asked_about_it():
    # The hint works with β = 1/τ; a learner who searches in β may return β itself.
    def returns_beta(scores, target):
        return 1 / _bisection(scores, target)

    message = check("temperature_for_entropy", returns_beta).message
    assert "reciprocal" in message and "β = 1/τ" in message and "multiply" in message


def _bisection(scores, target, steps=100, low=1e-3, high=1e3, log=np.log):
    """A learner's search on a linear scale; ``log`` is the logarithm of their entropy."""
    for _ in range(steps):
        tau = (low + high) / 2
        p = attnlab.softmax(scores / tau)
        h = -(p * log(np.where(p > 0, p, 1.0))).sum()
        if h < target:
            low = tau
        else:
            high = tau
    return (low + high) / 2


def _newton(scores, target):
    # Newton steps on τ from τ = 1, with a numerical slope: it overshoots below 0 on one input.
    def h(tau):
        return float(lesson.entropy(attnlab.softmax(scores / tau)))

    tau = 1.0
    for _ in range(50):
        slope = (h(tau + 1e-6) - h(tau - 1e-6)) / 2e-6
        tau = tau - (h(tau) - target) / slope
    return tau


@pytest.mark.parametrize(
    "answer",
    [
        solutions.temperature_for_entropy,
        _bisection,
        lambda scores, target: _bisection(scores, target, steps=60, low=1e-4, high=1e4),
    ],
)
def test_correct_temperature_answers_pass(answer):
    result = check("temperature_for_entropy", answer)
    assert result.passed, result.message


def test_the_course_temperature_function_does_not_pass():
    result = check("temperature_for_entropy", lesson.temperature_for_entropy)
    assert not result.passed and "course's own" in result.message


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda scores, target: float("nan"), "came out as nan"),
        (lambda scores, target: -0.84, "came out as -0.84"),
        (lambda scores, target: float("inf"), "came out as inf"),
        (_newton, "A Newton step can overshoot below 0"),
    ],
)
def test_a_temperature_that_is_no_positive_number_is_quoted(answer, says):
    message = check("temperature_for_entropy", answer).message
    assert says in message, message
    assert "Return one positive number" in message


def test_a_search_that_stops_too_soon_is_asked_about_its_last_interval():
    # 12 halvings of 0.001 … 1000 leave an interval 0.24 wide: τ = 2.076 against 2.043.
    message = check("temperature_for_entropy", lambda s, t: _bisection(s, t, steps=12)).message
    assert "How fine is your search" in message and "last interval" in message, message
    assert "smaller" not in message and "lower" not in message


def test_a_search_that_stops_well_short_is_still_called_close():
    # 10 halvings of 0.001 … 1000: τ = 2.44 against 2.04, nearly 20 % off, but it moves with the
    # target, so it is a search stopped too soon, not a rule.
    message = check("temperature_for_entropy", lambda s, t: _bisection(s, t, steps=10)).message
    assert message.startswith("Close") and "stop too early" in message, message
    assert "rule out a whole range" not in message


def test_a_slow_grid_of_temperatures_is_told_why_it_is_slow():
    def fine_grid(scores, target):
        taus = np.arange(0.001, 200, 0.001)
        found = [float(lesson.entropy(attnlab.softmax(scores / tau))) for tau in taus]
        return taus[int(np.argmin(np.abs(np.array(found) - target)))]

    message = check("temperature_for_entropy", fine_grid, timeout=0.5).message
    assert "took longer than 0.5 s" in message and "on a fine grid" in message, message
    assert "a few dozen tries" in message and "Is there an endless loop?" not in message


@pytest.mark.parametrize(
    "answer",
    [
        lambda scores, target: float(np.sqrt(len(scores))),  # a rule, not a search
        lambda scores, target: float(np.std(scores)),
        lambda scores, target: _bisection(scores, target) ** 2,
    ],
)
def test_a_wrong_temperature_is_not_told_the_method(answer):
    # The first reply asks a question; it names neither halving nor an interval.
    message = check("temperature_for_entropy", answer).message
    assert "rule out a whole range of τ" in message, message
    assert "halving" not in message and "interval" not in message
    assert "too flat, so τ must be smaller" in message or "too sharp" in message


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda s, t: float(round(_bisection(s, t))), "rounded to a whole number"),
        (lambda s, t: float(np.round(_bisection(s, t), 2)), "rounded to 2 decimals"),
    ],
)
def test_a_rounded_temperature_is_asked_whether_it_was_rounded(answer, says):
    # The first input's τ is 2.043: rounded, it is within 5 %, but narrowing is not the fix.
    message = check("temperature_for_entropy", answer).message
    assert says in message and "did you round τ" in message, message
    assert "Keep narrowing" not in message


def test_a_fixed_whole_number_is_not_taken_for_a_rounded_temperature():
    # τ = 2 is 2.043 rounded, but the answer gives 2 for half the target too.
    message = check("temperature_for_entropy", lambda s, t: 2.0).message
    assert "did you round" not in message, message


@pytest.mark.parametrize("wrap", [lambda tau: np.array([tau]), lambda tau: [[tau]]])
def test_a_temperature_in_an_array_of_one_entry_passes_with_a_note(wrap):
    result = check("temperature_for_entropy", lambda s, t: wrap(_bisection(s, t)))
    assert result.passed, result.message
    assert "return it as such, e.g. `float(tau)`" in result.message


def _log_search(scores, target, low, high, h):
    """A learner's halving on a log scale, with ``h`` their entropy of a row of weights."""
    for _ in range(100):
        tau = np.sqrt(low * high)
        if h(attnlab.softmax(scores / tau)) < target:
            low = tau
        else:
            high = tau
    return np.sqrt(low * high)


def _naive_entropy(p):
    return -(p * np.log(p)).sum()  # 0 · log 0 = nan


def _growing_search(scores, target, h=_naive_entropy):
    low, high = 1.0, 1.0
    while h(attnlab.softmax(scores / high)) < target:
        high *= 10
    while h(attnlab.softmax(scores / low)) > target:
        low /= 10
    return _log_search(scores, target, low, high, h)


def _by_the_spread(scores, target, h=lesson.entropy):
    spread = scores.max() - scores.min()
    return _log_search(scores, target, spread * 1e-3, spread * 1e3, h)


@pytest.mark.parametrize(
    "answer",
    [
        lambda s, t: _log_search(s, t, 1e-3, 1e3, _naive_entropy),
        _growing_search,
        lambda s, t: _by_the_spread(s, t, _naive_entropy),
    ],
)
def test_a_search_whose_entropy_gives_nan_for_a_zero_weight_is_told_so(answer):
    # Only the fourth input, [0, -1, -800], has a weight that is exactly 0 near its τ; the
    # same searches with the course's `entropy` pass (see the test below and _bisection).
    result = check("temperature_for_entropy", answer)
    assert not result.passed
    message = result.message
    assert "without its score -800 (τ = 0.4297)" in message, message
    assert "-(p * np.log(p)).sum()" in message and "0 · log 0 as 0" in message
    assert "800 below the rest" in message


def test_a_search_sized_by_the_spread_is_told_the_right_tau_lies_below_it():
    # The model solution once did this: on [0, -1, -800] its interval starts at 0.8, above
    # the right τ = 0.43 (set by the top two scores, not by the spread).
    message = check("temperature_for_entropy", _by_the_spread).message
    assert "Your τ = 0.8 stays put" in message, message
    assert "outside your interval, below it" in message and "np.log(p)" not in message


def test_a_growing_search_with_the_courses_entropy_passes():
    result = check("temperature_for_entropy", lambda s, t: _growing_search(s, t, lesson.entropy))
    assert result.passed, result.message


def test_the_solution_finds_tau_when_one_score_lies_far_below_the_rest():
    for scores, target in [
        ([0.0, -1.0, -800.0], 0.3),
        ([2, 0.5, -1, -900], 0.3),
        ([1, 0, -3000], 0.2),
    ]:
        s = np.array(scores, dtype=float)
        assert solutions.temperature_for_entropy(s, target) == pytest.approx(
            lesson.temperature_for_entropy(s, target), rel=1e-9
        )


def test_a_search_that_measures_entropy_in_bits_is_told_so():
    message = check("temperature_for_entropy", lambda s, t: _bisection(s, t, log=np.log2)).message
    assert "in bits, not in nats" in message and "np.log2" in message, message


def test_temperature_for_entropy_is_registered_for_lesson_03_with_its_solution():
    assert get_exercise("temperature_for_entropy").lesson == "notebooks/03_scaling.ipynb"
    code = solution("temperature_for_entropy")
    assert code.startswith("def temperature_for_entropy(scores, target):")
    # It calls the course's softmax and entropy, no exercise of a later lesson.
    assert code.uses == () and "attnlab.entropy" in code
    assert "entropy" not in exercise_ids()  # entropy is given, not an exercise


def test_the_gradient_at_the_query_keeps_its_size_only_with_the_divisor():
    d_ks = (16, 64, 256, 1024)
    norms = lesson.query_gradient_norms(d_ks, n_rows=400)
    assert norms.shape == (3, 4)
    raw, scaled, linear = norms
    assert raw[0] / raw[-1] > 300  # the raw rows saturate and their J collapses
    assert np.all((scaled > 0.2) & (scaled < 0.35))  # the key's √d_k cancels 1/√d_k
    # ÷ d_k: no saturation, and the key's √d_k leaves d_k^(1/2 - 1) = 1/√d_k
    np.testing.assert_allclose(linear * np.sqrt(d_ks), linear[0] * 4, rtol=0.1)
    # the same draws for every exponent: ÷ √d_k alone gives the same numbers
    alone = lesson.query_gradient_norms(d_ks, alphas=(0.5,), n_rows=400)
    np.testing.assert_array_equal(alone[0], scaled)
    # the same numbers as the chain rule written out with the Jacobian built in full
    rng = np.random.default_rng(0)
    q, K, g = rng.standard_normal(8), rng.standard_normal((5, 8)), rng.standard_normal(5)
    p = attnlab.softmax(K @ q / np.sqrt(8))
    full = K.T @ (attnlab.softmax_jacobian(p).T @ g) / np.sqrt(8)
    short = K.T @ (p * (g - p @ g)) / np.sqrt(8)
    np.testing.assert_allclose(short, full, rtol=1e-12)


def test_the_query_gradient_without_d_k_long_vectors_matches_the_full_computation():
    # query_gradient_norms splits each key into its part along q and the rest; the medians
    # must be those of ∂L/∂q = Kᵀ g computed with q and K drawn in full.
    d_k, n_keys, n_rows = 32, 16, 20_000
    rng = np.random.default_rng(1)
    q = rng.standard_normal((n_rows, d_k))
    K = rng.standard_normal((n_rows, n_keys, d_k))
    grad_p = rng.standard_normal((n_rows, n_keys))
    s = np.einsum("rjd,rd->rj", K, q)
    full = []
    for tau in (1.0, np.sqrt(d_k), float(d_k)):
        p = attnlab.softmax(s / tau)
        grad_s = p * (grad_p - (p * grad_p).sum(axis=-1, keepdims=True)) / tau
        full.append(np.median(np.linalg.norm(np.einsum("rjd,rj->rd", K, grad_s), axis=-1)))
    fast = lesson.query_gradient_norms((d_k,), n_keys=n_keys, n_rows=n_rows)[:, 0]
    np.testing.assert_allclose(fast, full, rtol=0.05)


def test_the_raw_rows_gradient_at_the_query_vanishes_for_most_rows_but_not_on_average():
    # Lesson 03, Section 7: the median raw row passes almost nothing at d_k = 1024, yet the
    # mean rises with d_k, carried by a few rows (those whose top two scores nearly tie).
    d_ks = (16, 1024)
    rows = lesson.query_gradient_rows(d_ks, n_rows=4000)
    assert rows.shape == (3, 2, 4000)
    np.testing.assert_array_equal(
        np.median(rows, axis=-1), lesson.query_gradient_norms(d_ks, n_rows=4000)
    )
    raw, scaled = rows[0], rows[1]
    assert np.median(raw[1]) < 0.01 * np.median(scaled[1])
    assert raw[1].mean() > raw[0].mean() > 2 * scaled[0].mean()
    assert raw[1].mean() > 3 * scaled[1].mean()
    half = lesson.share_carrying_half(rows)
    assert half.shape == (3, 2)
    assert half[0, 1] < 0.06 < 0.3 < half[1, 0] < half[1, 1] + 0.05


def test_the_rows_that_carry_the_raw_gradient_are_near_ties():
    # Lesson 03, Section 7: query_score_rows gives the same rows' raw scores, and the raw
    # rows carrying half of ‖∂L/∂q‖ at d_k = 1024 have nearly tied top two scores.
    rows = lesson.query_gradient_rows((16, 1024), alphas=(0.0,), n_rows=4000)
    S = lesson.query_score_rows((16, 1024), n_rows=4000)
    assert S.shape == (2, 4000, 16)
    p = attnlab.softmax(S[0])
    g = p * (1 - p)  # the 16-key rows: a large ‖∂L/∂q‖ goes with a large Jacobian
    assert np.corrcoef(rows[0, 0], g.max(axis=-1))[0, 1] > 0.3
    few = lesson.rows_carrying_half(rows[0, 1])
    assert few.mean() == lesson.share_carrying_half(rows[0, 1]) < 0.1
    top2 = np.sort(S[1], axis=-1)[:, -2:]
    gap = top2[:, 1] - top2[:, 0]
    assert np.median(gap[few]) < 0.2 * np.median(gap)


def test_rows_carrying_half():
    np.testing.assert_array_equal(
        lesson.rows_carrying_half([[3.0, 1.0, 1.0, 1.0], [0.0, 0.0, 9.0, 1.0]]),
        [[True, False, False, False], [False, False, True, False]],
    )
    assert lesson.rows_carrying_half([1.0, 1.0, 1.0, 1.0]).sum() == 2


def test_share_carrying_half():
    assert lesson.share_carrying_half([1.0, 1.0, 1.0, 1.0]) == 0.5
    assert lesson.share_carrying_half([0.0, 0.0, 9.0, 1.0]) == 0.25
    np.testing.assert_array_equal(
        lesson.share_carrying_half([[3.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]), [0.25, 0.5]
    )


def test_with_nn_linears_default_the_raw_rows_pass_more_gradient_to_the_query():
    d_ks = (16, 64, 256, 1024)
    unit = lesson.query_gradient_norms(d_ks, alphas=(0.5,), n_rows=400)
    # init_std scales the same draws of q and K; ∂L/∂p is drawn the same way too
    default = lesson.query_gradient_norms(d_ks, alphas=(0, 0.5), n_rows=400, init_std=3**-0.5)
    assert default.shape == (2, 4)
    raw, scaled = default
    assert np.all((scaled > 0.1) & (scaled < 0.18))  # still the same at every d_k
    assert np.all(scaled < unit[0])  # near-uniform rows and shorter keys pass less
    assert np.all(raw[1:] > 2 * scaled[1:])  # the raw rows are not collapsed yet at 1024
    assert raw[-1] < raw[1]  # but their gradient has started to fall
    # σ = 1 is the default
    np.testing.assert_array_equal(
        lesson.query_gradient_norms(d_ks, alphas=(0.5,), n_rows=400, init_std=1.0), unit
    )


# ------------------------------------------------- largest_jacobian_entry exercise


def jacobian_loop(p):
    out = np.zeros(p.shape[:-1])
    for index in np.ndindex(*p.shape[:-1]):
        row = p[index]
        out[index] = max(
            abs((i == j) * row[i] - row[i] * row[j])
            for i in range(len(row))
            for j in range(len(row))
        )
    return out


CORRECT_JACOBIAN = [
    solutions.largest_jacobian_entry,
    lambda p: (p * (1 - p)).max(axis=-1),
    lambda p: np.max(p - p**2, axis=-1),
    lambda p: 0.25 - (p.max(axis=-1) - 0.5) ** 2,
]


def own_jacobian(p):
    m = p.shape[-1]
    J = p[..., :, None] * (np.eye(m) - p[..., None, :])
    return np.abs(J).max(axis=(-2, -1))


@pytest.mark.parametrize(
    "answer", [own_jacobian, lambda p: np.abs(attnlab.softmax_jacobian(p)).max(axis=(-2, -1))]
)
def test_largest_jacobian_entry_answers_that_build_j_fail(answer):
    result = check("largest_jacobian_entry", answer)
    assert not result.passed
    assert "m×m Jacobian" in result.message or "course's own" in result.message


def test_the_loop_over_entries_is_right_on_small_rows():
    p = np.array([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25]])
    np.testing.assert_allclose(jacobian_loop(p), solutions.largest_jacobian_entry(p))


@pytest.mark.parametrize("answer", CORRECT_JACOBIAN)
def test_correct_largest_jacobian_entry_answers_pass(answer):
    result = check("largest_jacobian_entry", answer)
    assert result.passed, result.message


def _top_two(p):
    top = np.sort(p, axis=-1)
    return top[..., -1] * top[..., -2]


JACOBIAN_MISTAKES = [
    (lambda p: p.max(axis=-1), "the largest weight p_max itself"),
    (lambda p: p.max(axis=-1) ** 2, "p_max²"),
    (lambda p: np.full(p.shape[:-1], 0.25), "1/4 for every row"),
    (_top_two, "two largest weights"),
    (lambda p: (p * (1 - p)).sum(axis=-1), "trace of J"),
    (lambda p: 1 - p.max(axis=-1), "1 − p_max"),
    (lambda p: p.max(-1) * (1 - p.min(-1)), "p_max (1 − p_min)"),
    (lambda p: (p * (1 - p)).min(axis=-1), "smallest weight"),
    (lambda p: p.max(axis=0) * (1 - p.max(axis=0)), "axis 0"),
    (lambda p: (p * (1 - p)).max(axis=0), "axis 0"),
    (lambda p: p.argmax(-1) * (1 - p.argmax(-1)), "index of the largest weight"),
    (lambda p: (p * (1 - p)).max(axis=-1, keepdims=True), "keepdims"),
    (lambda p: p.max() * (1 - p.max()), "one number for the whole array"),
    (lambda p: -p.max(-1) * (1 - p.max(-1)), "negative"),
    (lambda p: p.max(-1) * (1 - p.max(-1)) * 1.7, "above 1/4"),
    (lambda p: np.full(p.shape[:-1], p.max() * (1 - p.max())), "whole array"),
    (lambda p: p.mean(-1) * (1 - p.mean(-1)), "mean of a softmax row is always 1/n"),
    (lambda p: np.full(p.shape[:-1], (p.shape[-1] - 1) / p.shape[-1] ** 2), "always 1/n"),
]


@pytest.mark.parametrize(("answer", "phrase"), JACOBIAN_MISTAKES)
def test_classic_largest_jacobian_entry_mistakes_fail_and_are_named(answer, phrase):
    result = check("largest_jacobian_entry", answer)
    assert not result.passed
    assert phrase in result.message, result.message


@pytest.mark.parametrize(
    "answer",
    [
        lambda p: (p.max(-1) * (1 - p.max(-1))).astype(int),
        lambda p: (p.max(-1) * (1 - p.max(-1))).astype(np.int32),
    ],
)
def test_an_integer_largest_jacobian_entry_is_told_about_its_dtype(answer):
    result = check("largest_jacobian_entry", answer)
    assert not result.passed
    assert "integer dtype" in result.message and "placeholder" not in result.message, result.message


def test_largest_jacobian_entry_feedback_does_not_show_the_expected_numbers():
    # The first input's expected numbers are p_max (1 − p_max) of rows the example prints.
    for answer in (lambda p: np.median(p, axis=-1), lambda p: p.mean(axis=-1)):
        message = check("largest_jacobian_entry", answer).message
        assert "Expected" not in message and "0.21" not in message, message
        assert "0.7" not in message.split("Test input")[0]  # the label names no top weight


def test_a_loop_over_all_pairs_is_told_why_it_is_slow():
    # Right on the small rows, too slow on rows of 1000 weights: 10⁶ pairs a row.
    result = check("largest_jacobian_entry", jacobian_loop, timeout=0.5)
    assert not result.passed
    assert "rows of 1000 weights" in result.message and "all pairs" in result.message
    assert "These inputs are tiny" not in result.message


def test_largest_jacobian_entry_is_registered_for_lesson_03():
    assert get_exercise("largest_jacobian_entry").lesson == "notebooks/03_scaling.ipynb"
    code = solution("largest_jacobian_entry")
    assert code.startswith("def largest_jacobian_entry(p):") and "softmax_jacobian" not in code
    # Every declared mistake gives other numbers than the reference on some test input.
    for mistake in exercise.JACOBIAN_MISTAKES:
        assert not check("largest_jacobian_entry", mistake.compute).passed


def test_the_constant_c_moves_the_crossing_up_or_down_but_keeps_it_near_one_half():
    # Lesson 03, the widget's c: Var = d_k^(1-2α) / c², the same for every d_k only at α = ½.
    crossings = {c: lesson.curves_cross(4, 1024, 10, c) for c in (0.5, 1.0, 2.0)}
    assert all(0.5 <= alpha < 0.54 for alpha, _ in crossings.values())
    heights = [height for _, height in crossings.values()]
    assert heights == sorted(heights) and heights[-1] - heights[0] > 0.5
    np.testing.assert_allclose(
        lesson.mean_entropy_by_exponent(64, 10, [0.5], c=2.0),
        lesson.mean_entropy_by_exponent(64, 10, [0.5 + np.log(2.0) / np.log(64)]),
    )


def _search(row_entropy):
    """A learner's bisection on log τ that compares ``row_entropy(scores, τ)`` with the target."""

    def answer(scores, target):
        lo, hi = 1e-3, 1e3
        for _ in range(60):
            tau = (lo * hi) ** 0.5
            if row_entropy(scores, tau) < target:
                lo = tau
            else:
                hi = tau
        return tau

    return answer


def test_an_entropy_of_the_scores_themselves_is_asked_about_the_softmax():
    result = check("temperature_for_entropy", _search(lambda s, tau: lesson.entropy(s / tau)))
    assert not result.passed
    assert "did you forget the softmax?" in result.message, result.message
    assert "Traceback" not in result.message


def test_dividing_the_weights_by_tau_is_named_among_the_wrong_directions():
    def weights_divided(scores, tau):
        return lesson.entropy(np.clip(attnlab.softmax(scores) / tau, 0, None))

    result = check("temperature_for_entropy", _search(weights_divided))
    assert not result.passed
    assert "not the weights after it (`softmax(scores) / tau`)" in result.message, result.message
