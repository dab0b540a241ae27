"""The scaling strip of lesson 03: one score row, divided by d_k^α from ÷1 to ÷√d_k."""

import numpy as np
import pytest

from attnlab import softmax
from attnlab.lessons.scaling import entropy
from attnlab.widgets import scaling_strip
from attnlab.widgets.scaling import ALPHAS, mean_entropy_curve


def status(widget) -> dict:
    return {"largest": widget.shown["largest"], "entropy": widget.shown["entropy"]}


def shown_weights(widget) -> np.ndarray:
    return widget.shown["weights"]


def test_builds_with_no_arguments_from_raw_scores():
    w = scaling_strip()
    assert set(w.controls) == {"alpha", "d_k", "c"}
    assert w.controls["c"].value == 1.0 and w.shown["c"] == 1.0
    assert w.controls["alpha"].value == 0.0
    assert w.controls["alpha"].min == 0.0 and w.controls["alpha"].max == 1.0
    assert w.d_k == 256 and w.scores.shape == (10,)
    # Raw q·k with d_k = 256: scores spread over tens, softmax nearly one-hot.
    assert np.ptp(w.scores) > 20
    np.testing.assert_allclose(shown_weights(w), softmax(w.scores))
    assert status(w)["largest"] > 0.95
    assert "(the raw scores)" in w.readout.value
    np.testing.assert_allclose(w.shown["scores"], w.scores)


def test_moving_to_sqrt_d_k_spreads_the_spike():
    w = scaling_strip()
    before_image, before = w.view.image.value, status(w)
    w.controls["alpha"].value = 0.5
    assert w.view.image.value != before_image
    weights = softmax(w.scores / 16.0)
    np.testing.assert_allclose(shown_weights(w), weights)
    after = status(w)
    assert after["largest"] == pytest.approx(weights.max())
    assert after["entropy"] == pytest.approx(float(entropy(weights)))
    assert after["largest"] < before["largest"] - 0.3
    assert after["entropy"] > before["entropy"] + 1.0
    assert "÷ <b>16.00</b> = √d_k" in w.readout.value
    np.testing.assert_allclose(w.shown["scores"], w.scores / 16.0)


def test_every_step_divides_by_d_k_to_the_alpha_and_entropy_grows():
    w = scaling_strip()
    entropies = []
    for alpha in (0.1, 0.2, 0.3, 0.4, 0.5):
        w.controls["alpha"].value = alpha
        divisor = 256.0**alpha
        np.testing.assert_allclose(shown_weights(w), softmax(w.scores / divisor))
        assert f"÷ <b>{divisor:.2f}</b>" in w.readout.value
        entropies.append(status(w)["entropy"])
    assert entropies == sorted(entropies)


def test_d_k_alone_builds_a_row_of_that_size():
    small, large = scaling_strip(d_k=4), scaling_strip(d_k=1024)
    assert small.d_k == 4 and large.d_k == 1024
    assert np.abs(small.scores).max() < np.abs(large.scores).max()
    large.controls["alpha"].value = 0.5
    assert "÷ <b>32.00</b> = √d_k" in large.readout.value


def test_learner_scores_with_their_d_k():
    s = np.array([12.0, -4.0, 3.0, 0.0, 8.0])
    w = scaling_strip(scores=s, d_k=64)
    np.testing.assert_allclose(shown_weights(w), softmax(s))
    w.controls["alpha"].value = 0.5
    np.testing.assert_allclose(shown_weights(w), softmax(s / 8.0))
    # Integers and lists are fine too; 16 keys is the most.
    w16 = scaling_strip(scores=list(range(16)), d_k=9)
    assert w16.scores.dtype == float and w16.shown["weights"].shape == (16,)


@pytest.mark.parametrize(
    ("kwargs", "error", "phrase"),
    [
        ({"scores": [1.0, 2.0]}, ValueError, "d_k is needed"),
        ({"scores": [[1.0, 2.0]], "d_k": 4}, ValueError, "scores must be one row"),
        ({"scores": [1.0], "d_k": 4}, ValueError, "between 2 and 16"),
        ({"scores": np.arange(17.0), "d_k": 4}, ValueError, "between 2 and 16"),
        ({"scores": [1.0, np.nan], "d_k": 4}, ValueError, "scores must hold finite"),
        ({"scores": ["a", "b"], "d_k": 4}, TypeError, "scores must hold real numbers"),
        ({"scores": [True, False], "d_k": 4}, TypeError, "scores must hold real numbers"),
        ({"d_k": 0}, ValueError, "d_k must be at least 1"),
        ({"d_k": 2.5}, TypeError, "d_k must be a whole number"),
        ({"d_k": True}, TypeError, "d_k must be a whole number"),
        ({"scores": [1.0, 2.0], "d_k": "64"}, TypeError, "d_k must be a whole number"),
    ],
)
def test_bad_data_raises_a_clear_error(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        scaling_strip(**kwargs)


def test_past_sqrt_d_k_the_row_flattens_towards_uniform():
    w = scaling_strip()
    w.controls["alpha"].value = 0.5
    at_half = status(w)["entropy"]
    w.controls["alpha"].value = 1.0
    assert w.shown["divisor"] == pytest.approx(256.0)
    assert "= d_k" in w.readout.value
    assert status(w)["entropy"] > at_half
    assert shown_weights(w).max() < 1.5 / 10  # close to uniform over 10 keys


def test_the_built_in_row_follows_d_k():
    w = scaling_strip()
    assert list(w.controls["d_k"].options) == [4, 16, 64, 256, 1024]
    largest = {}
    for d_k in (4, 1024):
        w.controls["d_k"].value = d_k
        w.controls["alpha"].value = 0.0
        assert w.d_k == d_k and w.shown["d_k"] == d_k
        largest[d_k] = status(w)["largest"]
        w.controls["alpha"].value = 0.5
        np.testing.assert_allclose(shown_weights(w), softmax(w.scores / np.sqrt(d_k)))
    assert largest[1024] > largest[4]


def test_a_learners_own_scores_keep_their_d_k():
    w = scaling_strip(scores=[3.0, 1.0, -2.0], d_k=64)
    assert list(w.controls["d_k"].options) == [64] and w.controls["d_k"].disabled


def test_the_panel_shows_raw_rows_sharpen_with_d_k_and_scaled_rows_do_not():
    # Lesson 03's claim before the widget, for the mean of 400 rows (the panel's dot)
    # and for the built-in row, whose shorter vectors are prefixes of the longer ones.
    w = scaling_strip()
    mean, row = {}, {}
    for alpha in (0.0, 0.5):
        w.controls["alpha"].value = alpha
        for d_k in (4, 16, 64, 256, 1024):
            w.controls["d_k"].value = d_k
            mean[alpha, d_k] = w.shown["mean_entropy"]
            row[alpha, d_k] = w.shown["entropy"]
    d_ks = (4, 16, 64, 256, 1024)
    at_zero = [mean[0.0, d] for d in d_ks]
    assert at_zero == sorted(at_zero, reverse=True) and at_zero[0] - at_zero[-1] > 1.0
    assert np.ptp([mean[0.5, d] for d in d_ks]) < 0.1
    row_at_zero = [row[0.0, d] for d in d_ks]
    assert row_at_zero == sorted(row_at_zero, reverse=True)
    assert min(row[0.5, d] for d in d_ks) > max(row_at_zero[1:])


def test_built_in_rows_are_prefixes_of_one_long_row():
    from attnlab.widgets.scaling import example_scores

    rng = np.random.default_rng(18)
    q, K = rng.standard_normal(1024), rng.standard_normal((10, 1024))
    for d_k in (4, 64, 1024):
        np.testing.assert_allclose(example_scores(d_k), K[:, :d_k] @ q[:d_k])


def test_the_panel_reveals_a_grey_curve_only_for_each_d_k_visited():
    # The lesson asks to predict, then move: the first frame must not answer it.
    w = scaling_strip()
    assert w.shown["grey_curves"] == (256,) and not w.shown["half_line"]
    first = w.view.image.value
    w.controls["d_k"].value = 4
    assert w.shown["grey_curves"] == (4, 256) and not w.shown["half_line"]
    assert w.view.image.value != first
    w.controls["d_k"].value = 1024
    assert set(w.shown["grey_curves"]) >= {4, 256, 1024} and w.shown["half_line"]
    # A learner's own row has one curve, and nothing to find: the line is there at once.
    own = scaling_strip(scores=[3.0, 1.0, -2.0], d_k=64)
    assert own.shown["grey_curves"] == (64,) and own.shown["half_line"]


def test_the_constant_c_moves_the_curves_but_not_where_they_cross():
    # Lesson 03: the variance argument fixes the exponent ½, not the constant in front.
    w = scaling_strip()
    for d_k in (4, 1024):
        w.controls["d_k"].value = d_k
    w.controls["alpha"].value = 0.5
    at_half = {}
    for c in (0.5, 1.0, 2.0):
        w.controls["c"].value = c
        assert w.shown["c"] == c and w.shown["divisor"] == pytest.approx(c * 32.0)
        np.testing.assert_allclose(shown_weights(w), softmax(w.scores / (c * 32.0)))
        grey = {d: line.get_ydata() for d, (line, _) in w.grey.items() if line.get_visible()}
        assert set(grey) == {4, 256, 1024}
        np.testing.assert_allclose(grey[1024], mean_entropy_curve(1024, 10, c))
        # d_k = 4 is flatter below α = ½ and sharper above it, whatever c is.
        low, high = np.searchsorted(ALPHAS, 0.4), np.searchsorted(ALPHAS, 0.65)
        assert grey[4][low] > grey[1024][low] and grey[4][high] < grey[1024][high]
        at_half[c] = w.shown["mean_entropy"]
    assert at_half[0.5] < at_half[1.0] < at_half[2.0]
    assert "÷ <b>64.00</b> = 2 √d_k" in w.readout.value
    assert "÷ 2 d_k = ÷ 2048" in w.ends.value


def test_the_blue_curves_grey_label_is_hidden_under_it():
    w = scaling_strip()
    w.controls["d_k"].value = 4
    labels = {d: label.get_visible() for d, (_, label) in w.grey.items()}
    assert labels == {4: False, 16: False, 64: False, 256: True, 1024: False}
    assert w.label.get_text() == "blue: $d_k$ = 4"
