"""Tests for lesson 02's experiments (``attnlab.lessons.variance``) and its number exercise.

The Monte-Carlo tests use fixed seeds and tolerances of several standard errors:
with n samples of a variable with variance v, the sample variance has a standard
error near v·√(2/n) (more for heavy tails), so 20 000 samples land within about 3 %.
"""

import math

import matplotlib
import numpy as np
import pytest

from attnlab.exercises import check, solution, solutions
from attnlab.exercises.registry import get_exercise
from attnlab.lessons import variance as lesson

matplotlib.use("Agg")

D_KS = (1, 2, 4, 16, 64, 512)


# ---------------------------------------------------------------- the samples


@pytest.mark.parametrize("dist", lesson.DISTRIBUTIONS)
def test_components_have_mean_zero_and_variance_one(dist):
    x = lesson.unit_components((200_000,), np.random.default_rng(1), dist)
    assert x.shape == (200_000,) and x.dtype == np.float64
    assert abs(x.mean()) < 0.01
    assert abs(x.var() - 1.0) < 0.02


def test_component_values_match_each_distribution():
    rng = np.random.default_rng(2)
    assert set(np.unique(lesson.unit_components((1000,), rng, "rademacher"))) == {-1.0, 1.0}
    uniform = lesson.unit_components((1000,), rng, "uniform")
    assert np.all(np.abs(uniform) <= math.sqrt(3))


def test_unknown_distribution_is_a_clear_error():
    with pytest.raises(ValueError, match="dist must be one of"):
        lesson.dot_product_samples(4, 10, np.random.default_rng(0), "cauchy")


def test_dot_product_samples_are_dot_products():
    # The same seed draws q then k chunk by chunk, so a small case can be rebuilt by hand.
    rng = np.random.default_rng(3)
    got = lesson.dot_product_samples(5, 7, rng)
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((7, 5)), rng.standard_normal((7, 5))
    np.testing.assert_allclose(got, (q * k).sum(axis=1))


def test_samples_are_reproducible_and_chunking_keeps_the_count():
    a = lesson.dot_product_samples(4096, 600, np.random.default_rng(4))
    b = lesson.dot_product_samples(4096, 600, np.random.default_rng(4))
    assert a.shape == (600,)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("bad", [{"d_k": 0, "n": 5}, {"d_k": 3, "n": 0}])
def test_sizes_below_one_are_rejected(bad):
    with pytest.raises(ValueError, match="at least 1"):
        lesson.dot_product_samples(rng=np.random.default_rng(0), **bad)


# ---------------------------------------------------------------- the claims


@pytest.mark.parametrize("dist", lesson.DISTRIBUTIONS)
def test_variance_of_q_dot_k_is_d_k(dist):
    variances = lesson.measured_variances(D_KS, 20_000, np.random.default_rng(5), dist)
    np.testing.assert_allclose(variances, D_KS, rtol=0.06)


def test_product_of_two_unit_variables_has_variance_one():
    x = lesson.dot_product_samples(1, 100_000, np.random.default_rng(6))
    assert abs(x.mean()) < 0.02
    assert abs(x.var() - 1.0) < 0.04


def test_unequal_variances_multiply():
    rng = np.random.default_rng(7)
    variances = lesson.measured_variances([4, 64], 20_000, rng, sigma_q=2.0, sigma_k=3.0)
    np.testing.assert_allclose(variances, [36 * 4, 36 * 64], rtol=0.06)


def test_scaled_variances_stay_near_one():
    samples = lesson.samples_by_dk(D_KS, 20_000, np.random.default_rng(8))
    scaled = lesson.measured_variances(samples, scale=True)
    np.testing.assert_allclose(scaled, 1.0, rtol=0.06)
    raw = lesson.measured_variances(samples)
    np.testing.assert_allclose(raw / np.array(D_KS), scaled)


def test_measured_variances_needs_samples_or_a_generator():
    with pytest.raises(ValueError, match="needs n and rng"):
        lesson.measured_variances([1, 2])


def test_samples_by_dk_keeps_the_order_and_sizes():
    samples = lesson.samples_by_dk([8, 1, 2], 50, np.random.default_rng(9))
    assert list(samples) == [8, 1, 2]
    assert all(s.shape == (50,) for s in samples.values())


# ---------------------------------------------------------------- the figures


def test_figures_are_labelled():
    import matplotlib.pyplot as plt

    d_ks = [1, 4, 16]
    samples = lesson.samples_by_dk(d_ks, 2000, np.random.default_rng(10))
    ax = lesson.plot_variance_vs_dk(d_ks, {"normal": lesson.measured_variances(samples)})
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    fig = lesson.plot_histograms(samples, d_ks)
    assert len(fig.axes) == 3
    assert all(a.get_title().startswith("d_k = ") for a in fig.axes)
    assert fig.axes[0].get_xlim() == (-20.0, 20.0)  # 3.5·√16 = 14, rounded up to 20
    fig = lesson.plot_histograms(samples, d_ks, scaled=True)
    assert fig.axes[-1].get_xlim() == (-5.0, 5.0)
    plt.close("all")


# ------------------------------------- exercise std_512: the spread of a difference


def judge(value):
    return check("std_512", value)


STD = math.sqrt(2 * 512)  # Var(q·k₁ − q·k₂) = 2 d_k = 1024, so the answer is 32
ONE = math.sqrt(512)  # the standard deviation of one score


@pytest.mark.parametrize(
    "value",
    [STD, 32, 32.0, np.sqrt(1024), np.sqrt(2 * 512), np.sqrt(2) * np.sqrt(512),
     np.float32(STD), np.array(STD), np.int64(32), 1024**0.5],
)  # fmt: skip
def test_right_numbers_pass(value):
    result = judge(value)
    assert result.passed, result.message
    assert "1024" in result.message and "32" in result.message


@pytest.mark.parametrize(
    "value, phrase",
    [
        (ONE, "ONE score"),
        (22.63, "ONE score"),
        (2 * ONE, "added the two standard deviations"),
        (45.25, "added the two standard deviations"),
        (45, "added the two standard deviations"),  # a rounded 2·√512: slips match within 1 %
        (0, "does not cancel"),
        (1024, "the variance of the difference"),
        (np.int64(1024), "the variance of the difference"),
        (512, "variance of one score"),
        (1024**1 / 2, "powers bind tighter than division"),  # `1024 ** 1/2`
        (2048, "4·d_k"),
        (16, "√256"),
        (math.sqrt(2), "after dividing"),
        (1, "one scaled score"),
        (-STD, "never negative"),
        (1 / STD, "below 1"),
        (8, "√64"),
        (2, "variance of the difference after dividing both scores by √d_k"),
        (2.0, "variance of the difference after dividing both scores by √d_k"),
        # measured-looking values: within 2 % of 32 but not it
        (31.734, "looks like a measured value"),
        (32.613, "looks like a measured value"),
        # ... unless it has at most two decimals: a guess, not told that it is close
        (31.7, "Not quite: 31.7 is not it"),
        (32.3, "Not quite: 32.3 is not it"),
        (31.5, "Not quite: 31.5 is not it"),
        (32.64, "Not quite: 32.64 is not it"),
        (32.04, "Not quite: 32.04 is not it"),
        (32.01, "Not quite: 32.01 is not it"),
        (1.41 * 22.6, "rounded steps"),  # √2 · √512 from rounded factors: 31.87
        # further off, or a whole number near 32: a guess, which learns nothing more
        (33.5, "Not quite: 33.5 is not it"),
        (30.5, "Not quite: 30.5 is not it"),
        (33.9, "Not quite: 33.9 is not it"),
        (31, "Not quite: 31 is not it"),
        (33, "Not quite: 33 is not it"),
        (np.int64(31), "Not quite: 31 is not it"),
        (math.sqrt(2) * 512, "reached the 2 but not d_k"),
        (724, "reached the 2 but not d_k"),
        (math.sqrt(3 * 512), "three variances, one each for q, k₁ and k₂"),
        (39.2, "three variances, one each for q, k₁ and k₂"),
        (100, "Not quite"),
        (22.72, "ONE score"),
        (23, "rounded to a whole number: the standard deviation of ONE score"),  # round(√512)
        (24, "Not quite"),
    ],
)
def test_classic_wrong_numbers_are_named(value, phrase):
    result = judge(value)
    assert not result.passed
    assert phrase in result.message
    echo = f"{float(value):g} is not it"  # the learner's own number, said back
    assert "32" not in result.message.replace("√", "").replace(echo, "")  # never the answer
    assert "percent" not in result.message  # nor how close to it the number is


def test_a_measured_standard_deviation_does_not_pass():
    # 20,000 samples measure the std to about ±0.2: not the exact value the question asks for.
    passed = 0
    for seed in range(20):
        first, second = lesson.score_pairs(512, 20_000, np.random.default_rng(seed))
        result = judge(np.std(first - second))
        passed += result.passed
        if not result.passed and abs(np.std(first - second) - STD) < 0.02 * STD:
            assert "looks like a measured value" in result.message
    assert passed == 0


def test_every_slip_differs_from_the_answer():
    from attnlab.exercises.ex02_variance import TOLERANCE, slips

    *named, measured = slips()  # the last one catches values near the answer
    assert "measured value" in measured.message and measured.value == STD
    for slip in named:
        assert "measured" not in slip.message  # round guesses near 32 get the generic hint
        assert abs(slip.value - STD) > TOLERANCE, slip.message
        assert not judge(slip.value).passed


@pytest.mark.parametrize(
    "value, phrase",
    [
        (None, "is None"),
        (..., "still `...`"),
        ("22.6", "quotes"),
        ("twenty-two", "not a number"),
        (b"22.6", "quotes"),
        (True, "yes/no"),
        (np.bool_(False), "yes/no"),
        (np.array([STD]), "holding one number"),
        ([STD], "holding one number"),
        (np.ones(3), "holding 3 numbers"),
        ([1, 2], "holding 2 numbers"),
        (complex(STD, 1), "complex"),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
        ({"std": STD}, "not a number"),
        (object(), "not a number"),
    ],
)
def test_things_that_are_not_a_number_fail_kindly(value, phrase):
    result = judge(value)
    assert not result.passed
    assert phrase in result.message
    assert "answer_std_512" in result.message


def test_a_function_returning_the_number_is_accepted_too():
    assert judge(lambda: STD).passed
    assert "variance of one score" in judge(lambda: 512).message

    def raises():
        raise ValueError("oops")

    result = judge(raises)
    assert not result.passed and "ValueError" in result.message


def test_an_answer_cell_that_has_not_run_gets_a_friendly_message():
    result = judge(lambda: answer_std_512)  # noqa: F821
    assert not result.passed
    assert "isn't defined yet" in result.message and "NameError" not in result.message


def test_check_takes_the_number_itself():
    assert check("std_512", STD).passed
    assert "variance of one score" in check("std_512", 512).message
    assert "d_k of Section 5" in check("std_512", 64).message
    assert "is None" in check("std_512", None).message


def test_std_512_through_check_and_solution():
    assert check("std_512", lambda: STD).passed
    assert not check("std_512", lambda: 512).passed
    code = solution("std_512")
    assert "def std_512(" not in code and "np.sqrt" in code  # shown as the answer cell
    assert "answer_std_512 = " in code  # reads like the answer cell it stands for
    assert "02_variance" in code._repr_markdown_()


def test_the_reference_solution_passes():
    assert judge(solutions.std_512()).passed
    assert get_exercise("std_512").lesson == "notebooks/02_variance.ipynb"


def test_feedback_html_renders():
    html = judge(512)._repr_html_()
    assert "FAIL" in html and "q·k" in html
    html = judge(STD + 0.513)._repr_html_()
    assert "FAIL" in html and "measured value" in html


def test_initial_spread_follows_each_initialisation():
    spread = lesson.initial_spread(np.random.default_rng(0), d_model=256, d_k=32, n_tokens=64)
    assert list(spread) == list(lesson.INITIALISATIONS)
    # d · Var(W_ij) for entries of variance 1; Xavier on the packed (3d, d) matrix: 1/2
    expected_var_q = [1.0, 1 / 3, 1 / 2, 256 * 0.02**2]
    for s, var_q in zip(spread.values(), expected_var_q, strict=True):
        assert s["var_q"] == pytest.approx(var_q, rel=0.1)
        # Var(q·k / √d_k) = σ_q² σ_k², and the raw scores are √d_k times as spread.
        assert s["std_scaled"] == pytest.approx(var_q, rel=0.15)
        assert s["std_raw"] == pytest.approx(np.sqrt(32) * s["std_scaled"], rel=1e-9)
        assert 0 <= s["saturated_scaled"] <= s["saturated_raw"] <= 1
    unit = spread["LeCun normal, N(0, 1/d)"]
    assert unit["saturated_raw"] > 0 and unit["saturated_scaled"] == 0


# ------------------------------------------- a row of scores, and the difference of two


def test_two_scores_of_one_query_are_uncorrelated_and_their_difference_has_variance_2_d_k():
    first, second = lesson.score_pairs(64, 20_000, np.random.default_rng(11))
    assert first.shape == second.shape == (20_000,)
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.03
    assert np.var(first - second) == pytest.approx(2 * 64, rel=0.05)
    with pytest.raises(ValueError, match="at least 1"):
        lesson.score_pairs(0, 5, np.random.default_rng(0))


def test_unscaled_rows_are_taken_over_by_one_key_and_scaled_ones_are_not():
    rng = np.random.default_rng(12)
    raw = [lesson.share_of_dominated_rows(d, 256, 500, rng) for d in (16, 64, 512)]
    assert raw[0] < raw[1] < raw[2] and raw[2] > 0.8
    assert lesson.share_of_dominated_rows(512, 256, 500, rng, scale=True) < 0.02


def test_excess_kurtosis_falls_like_6_over_d_k():
    rng = np.random.default_rng(13)
    assert abs(lesson.excess_kurtosis(rng.standard_normal(200_000))) < 0.05
    samples = lesson.samples_by_dk([1, 16], 200_000, rng)
    assert lesson.excess_kurtosis(samples[1]) == pytest.approx(6, rel=0.25)
    assert lesson.excess_kurtosis(samples[16]) == pytest.approx(6 / 16, abs=0.1)


def test_each_raw_panel_gets_bins_a_quarter_of_its_std_wide():
    import matplotlib.pyplot as plt

    samples = lesson.samples_by_dk([16, 512], 2000, np.random.default_rng(14))
    fig = lesson.plot_histograms(samples, [16, 512])
    widths = [float(np.diff(a.patches[0].get_data().edges)[0]) for a in fig.axes]
    assert widths[0] == pytest.approx(1.0, rel=0.05)  # √16 / 4
    assert widths[1] == pytest.approx(np.sqrt(512) / 4, rel=0.05)
    plt.close("all")


# ------------------------------------------- the other exercises' named mistakes


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (lambda d_k: np.sqrt(d_k), "the divisor for entries of variance 1"),
        (lambda d_k: d_k / 9, "Var(q·k) itself"),
        (lambda d_k: 3 / np.sqrt(d_k), "upside down"),
        (lambda d_k: np.sqrt(d_k / 3), "used the entry variance 1/3 once"),
        (lambda d_k: np.sqrt(2 * d_k / 3), "added the two variances"),
        (lambda d_k: np.sqrt(d_k) // 3, "floor division"),
        (lambda d_k: int(np.sqrt(d_k) / 3), "`int(...)`"),
        (lambda d_k: round(np.sqrt(d_k) / 3), "nearest whole number"),
        (lambda d_k: np.round(np.sqrt(d_k) / 3), "nearest whole number"),
        (lambda d_k: (d_k // 9) ** 0.5, "floor division"),
        (lambda d_k: 1.007 * np.sqrt(d_k) / 3, "estimate"),
        (lambda d_k: round(np.sqrt(d_k) / 3, 2), "rounded, to 2 decimals"),
        (lambda d_k: np.round(np.sqrt(d_k) / 3, 3), "rounded, to 3 decimals"),
        (lambda d_k: round(float(np.sqrt(d_k) / 3), 1), "rounded, to 1 decimal"),
        (lambda d_k: 1.03 * np.sqrt(d_k) / 3, "Two steps"),  # 3 % off: not told it is close
        (lambda d_k: 1 / 3, "ONE product"),
        (lambda d_k: 0.7 * np.sqrt(d_k), "Two steps"),
        (lambda d_k: np.sqrt(d_k) * 2 / 3, "leaves out the density"),
        (lambda d_k: d_k**1 / 2 / 3, "powers bind tighter"),
        (lambda d_k: (d_k / 9) ** 1 / 2, "returns d_k / 18"),  # `(d_k/9) ** 1/2`
        (lambda d_k: np.sqrt(64) / 3, "a d_k of 64 from outside it"),
        (lambda d_k: np.sqrt(512) / 3, "a d_k of 512 from outside it"),
        (lambda d_k: np.sqrt(d_k / 12), "interval of width 1"),
    ],
)
def test_uniform_divisor_names_each_slip_without_the_answer(answer, phrase):
    result = check("uniform_divisor", answer)
    assert not result.passed
    assert phrase in result.message
    assert "Expected" not in result.message
    assert "percent" not in result.message  # an estimate is not told how close it is


def test_uniform_divisor_gives_unit_variance():
    result = check("uniform_divisor", solutions.uniform_divisor)
    assert result.passed
    assert "2²/12 = 1/3" in result.message and "√d_k/3" in result.message  # says why
    assert get_exercise("uniform_divisor").lesson == "notebooks/02_variance.ipynb"
    rng = np.random.default_rng(17)
    q, k = rng.uniform(-1, 1, size=(2, 20_000, 64))
    c = solutions.uniform_divisor(64)
    assert ((q * k).sum(axis=1) / c).var() == pytest.approx(1.0, rel=0.05)
    # The lesson module does not carry the answer: `lesson.uniform_divisor??` shows nothing.
    assert not hasattr(lesson, "uniform_divisor")


def test_normal_tail_is_the_share_beyond_t_standard_deviations():
    assert lesson.normal_tail(0) == 1.0
    assert lesson.normal_tail(1.96) == pytest.approx(0.05, abs=1e-3)
    assert lesson.normal_tail(4) == pytest.approx(6.334e-5, rel=1e-3)
    # A single product XY reaches far beyond: P(|XY| > 4) is about 0.65 %, a hundred times more.
    xy = lesson.dot_product_samples(1, 400_000, np.random.default_rng(20))
    assert np.mean(np.abs(xy) > 4) == pytest.approx(0.0065, rel=0.1)


def test_log_histograms_share_one_y_range_that_shows_a_single_sample():
    import matplotlib.pyplot as plt

    samples = lesson.samples_by_dk([1, 16], 2000, np.random.default_rng(21))
    fig = lesson.plot_histograms(samples, [1, 16], scaled=True, logy=True)
    assert all(a.get_yscale() == "log" for a in fig.axes)
    bottom, top = fig.axes[0].get_ylim()
    assert fig.axes[1].get_ylim() == (bottom, top)
    assert bottom == pytest.approx(0.5 / (2000 * 0.25))  # half the density of one sample
    assert top > 0.5  # above the sharp peak of a single product
    assert lesson.plot_histograms(samples, [1, 16], scaled=True).axes[0].get_yscale() == "linear"
    plt.close("all")


def test_dividing_by_the_whole_shape_is_named():
    result = check("scaled_scores", lambda Q, K: Q @ K.T / np.sqrt(Q.shape))
    assert not result.passed and "`Q.shape` is the whole shape" in result.message
    assert "`Q @ K.T` is" not in result.message  # not the matmul hint


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (lambda Q, K: Q @ K.T / int(np.sqrt(Q.shape[-1])), "rounded down to a whole number"),
        (lambda Q, K: Q @ K.T / (Q.shape[-1] ** 0.5 // 1), "rounded down to a whole number"),
        (lambda Q, K: Q @ K.T / np.round(np.sqrt(Q.shape[-1])), "rounded to the nearest"),
        (lambda Q, K: Q @ K.T / round(Q.shape[-1] ** 0.5), "rounded to the nearest"),
    ],
)
def test_a_rounded_square_root_of_d_k_is_named(answer, phrase):
    result = check("scaled_scores", answer)
    assert not result.passed and phrase in result.message


@pytest.mark.parametrize(
    "answer, phrase",
    [
        (lambda Q, K: Q @ K.T / (Q @ K.T).std(), "measured spread of these scores"),
        (lambda Q, K: Q @ K.T / np.sqrt(Q.size), "`Q.size` counts every entry"),
    ],
)
def test_other_divisors_than_the_square_root_of_d_k_are_named(answer, phrase):
    result = check("scaled_scores", answer)
    assert not result.passed and phrase in result.message


def test_a_square_root_of_the_scores_is_named():
    for answer in (
        lambda Q, K: np.sqrt(Q @ K.T / Q.shape[-1]),
        lambda Q, K: np.sqrt(Q @ K.T) / np.sqrt(Q.shape[-1]),
    ):
        result = check("scaled_scores", answer)
        assert not result.passed and "square root of a negative number" in result.message


# ------------------------------------------- where the argument stops: W_Q = W_K


def test_a_shared_matrix_keeps_the_scaled_self_score_near_sqrt_d_k():
    rng = np.random.default_rng(15)
    for d_k in (16, 256):
        own, other, weight = lesson.shared_matrix_scores(d_k, 1000, rng, n_keys=64)
        assert own.shape == weight.shape == (1000,) and other.shape == (1000, 63)
        assert own.mean() == pytest.approx(np.sqrt(d_k), rel=0.05)  # E‖q‖² / √d_k = √d_k
        assert other.std() == pytest.approx(1.0, abs=0.05)
        assert np.all((weight > 0) & (weight <= 1))
    assert np.median(weight) > 0.99  # at d_k = 256 each query attends almost only to itself
    with pytest.raises(ValueError, match="at least"):
        lesson.shared_matrix_scores(4, 10, rng, n_keys=1)


def test_scaled_rows_stay_spread_out_at_large_d_k():
    rng = np.random.default_rng(16)
    assert lesson.share_of_dominated_rows(512, 256, 500, rng, scale=True) < 0.02


# ------------------------------------------- how close to d_k: the ±2 standard-error band


def test_relative_standard_error_follows_the_kurtosis():
    d_ks = [1, 4, 512]
    normal = lesson.relative_standard_error(d_ks, 20_000, lesson.FOURTH_MOMENTS["normal"])
    np.testing.assert_allclose(normal, np.sqrt((2 + 6 / np.array(d_ks)) / 20_000))
    rademacher = lesson.relative_standard_error(d_ks, 20_000, lesson.FOURTH_MOMENTS["rademacher"])
    assert rademacher[0] == 0  # a ±1 score at d_k = 1 is always ±1: its variance cannot miss
    assert np.all(rademacher[1:] < normal[1:])
    # It matches the spread of many measured variances.
    rng = np.random.default_rng(18)
    ratios = [np.var(lesson.dot_product_samples(4, 2000, rng, "uniform"), ddof=1) / 4
              for _ in range(300)]  # fmt: skip
    se = lesson.relative_standard_error([4], 2000, lesson.FOURTH_MOMENTS["uniform"])[0]
    assert np.std(ratios) == pytest.approx(se, rel=0.15)


def test_ratio_figure_has_one_panel_per_distribution_with_a_band():
    import matplotlib.pyplot as plt

    d_ks = [1, 4, 16]
    by_dist = {d: lesson.measured_variances(d_ks, 2000, np.random.default_rng(19), d)
               for d in lesson.DISTRIBUTIONS}  # fmt: skip
    fig = lesson.plot_variance_ratios(d_ks, by_dist, 2000, lesson.FOURTH_MOMENTS)
    assert len(fig.axes) == 3
    for ax, dist in zip(fig.axes, lesson.DISTRIBUTIONS, strict=True):
        assert ax.get_title() and ax.get_xlabel() == "d_k"
        assert ax.collections  # the shaded band
        y = ax.lines[-1].get_ydata()
        np.testing.assert_allclose(y, by_dist[dist] / np.array(d_ks))
    assert fig.axes[0].get_ylabel() == "Var(q·k) / d_k"
    plt.close("all")


# ----------------------- exercise var_pytorch: nn.MultiheadAttention's first scores


PT_VAR = 1 / 4  # a² = 6/(768 + 3·768), Var(q_i) = 768 · a²/3 = 1/2, so σ_q² σ_k² = 1/4


@pytest.mark.parametrize("value", [PT_VAR, 0.25, 0.251, np.float32(PT_VAR), np.array(PT_VAR)])
def test_pytorch_var_right_numbers_pass(value):
    result = check("var_pytorch", value)
    assert result.passed, result.message
    assert "fan_out = 3·768" in result.message and "1/1536" in result.message


@pytest.mark.parametrize(
    "value, phrase",
    [
        # Stopping after Var(q_i), or giving the standard deviation σ_q σ_k: both are 1/2.
        (1 / 2, "That is Var(q_i)"),
        (0.5, "not the standard deviation"),
        (1 / math.sqrt(2), "That is σ_q"),
        (0.71, "That is σ_q"),
        (1 / 16, "squares Var(q_i) once too often"),
        (1, "a square 768 × 768 matrix"),
        ((768 * 2 / (768 + 64)) ** 2, "fan_out = d_k = 64"),
        (1.85, "fan_out = d_k = 64"),
        (4 / 9, "2/fan_out alone"),
        (2 / 3, "2/fan_out alone"),
        (0.444, "fan_out = 2·768"),  # only W_Q and W_K stacked: the same Var(q_i) = 2/3
        (0.67, "only W_Q and W_K"),
        (2, "divides the variance of q·k by √d_k"),
        (4, "2/fan_in alone"),
        (4.0, "standard deviation of the raw scores"),  # σ_q σ_k √d_k
        (4.01, "divide by √d_k, then square"),  # Section 7's table, read as the answer
        (1 / 9, "nn.Linear's default"),
        (1 / 3, "Var(q_i) under nn.Linear's default"),  # two slips: init and stopping early
        (1 / 3, "multiplies σ_q² by σ_k²"),
        (16, "the variance of the raw scores"),
        (64, "64 = d_k"),
        (1 / math.sqrt(512), "the bound of the weights"),
        (1 / math.sqrt(1536), "standard deviation of one weight"),
        (1 / 1536, "variance of one weight"),
        (1 / 64, "variance a²/12"),
        (1 / 8, "variance a²/12"),
        (2.25, "variance a² give"),
        (1.5, "variance a² give"),
        (0.4, "Not quite: 0.4 is not it"),
        # within 5 % of the answer but not it: measured, or from rounded steps
        (0.245, "looks like a measured value"),
        (0.255, "rounded steps"),
        # ... unless it has at most two decimals: a guess, not told that it is close
        (0.24, "Not quite: 0.24 is not it"),
        (0.26, "Not quite: 0.26 is not it"),
        (0.236, "Not quite: 0.236 is not it"),
        (0.264, "Not quite: 0.264 is not it"),
    ],
)
def test_pytorch_var_slips_are_named_without_the_answer(value, phrase):
    result = check("var_pytorch", value)
    assert not result.passed
    assert phrase in result.message
    assert "1/4" not in result.message and "0.25" not in result.message


def test_every_pytorch_slip_differs_from_the_answer():
    from attnlab.exercises.ex02_variance import PT_TOLERANCE, pytorch_slips

    *named, near = pytorch_slips()  # the last one catches values near the answer
    assert "measured value" in near.message and near.value == PT_VAR
    for slip in named:
        assert abs(slip.value - PT_VAR) > PT_TOLERANCE + slip.tolerance, slip.message


def test_pytorch_var_solution_matches_the_measured_table():
    assert check("var_pytorch", solutions.var_pytorch()).passed
    assert get_exercise("var_pytorch").lesson == "notebooks/02_variance.ipynb"
    code = solution("var_pytorch")
    assert "answer_var_pytorch = " in code and "def var_pytorch(" not in code
    spread = lesson.initial_spread(np.random.default_rng(20))
    assert spread["PyTorch MultiheadAttention, U(±√(6/4d))"]["std_scaled"] ** 2 == pytest.approx(
        PT_VAR, abs=0.02
    )
    # The table keeps nn.Linear's row: σ_q σ_k = 768 · (2/√768)²/12 = 1/3.
    assert spread["PyTorch nn.Linear, U(±1/√d)"]["std_scaled"] == pytest.approx(1 / 3, abs=0.02)
    # The prose: with these two recipes not one raw row is saturated ("none" in the table).
    for name in ("PyTorch nn.Linear, U(±1/√d)", "GPT-2, N(0, 0.02²)"):
        assert spread[name]["saturated_raw"] == 0
