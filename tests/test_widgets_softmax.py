"""Tests for the softmax explorer widget (``attnlab.widgets.softmax_explorer``), run headless.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import attnlab
from attnlab.widgets import softmax_explorer, softmax_row
from attnlab.widgets.softmax import DEFAULT_SCORES, JACOBIAN_LIMIT, SLIDER_TAUS


def bar_heights(w):
    return w.shown["weights"]


def jacobian_image(w):
    return w.shown["jacobian"]


def test_builds_with_no_arguments_and_shows_the_default_scores():
    w = softmax_explorer()
    assert set(w.controls) == {"temperature"}
    assert w.controls["temperature"].value == 1.0
    p = attnlab.softmax(np.array(DEFAULT_SCORES))
    np.testing.assert_allclose(bar_heights(w), p)
    np.testing.assert_allclose(jacobian_image(w), attnlab.softmax_jacobian(p))


@pytest.mark.parametrize("temperature", [0.1, 0.3, 2.0, 10.0])
def test_temperature_changes_the_view(temperature):
    w = softmax_explorer()
    before = bytes(w.view.image.value)
    w.controls["temperature"].value = temperature
    assert bytes(w.view.image.value) != before
    p = attnlab.softmax(np.array(DEFAULT_SCORES) / temperature)
    J = attnlab.softmax_jacobian(p)
    np.testing.assert_allclose(bar_heights(w), p)
    # The gradient with respect to the raw scores x: the chain rule through x / τ gives J / τ.
    np.testing.assert_allclose(jacobian_image(w), J / temperature)


def test_low_temperature_peaks_the_weights_and_shrinks_the_jacobian():
    w = softmax_explorer()
    norm_at_1 = np.linalg.norm(jacobian_image(w))
    w.controls["temperature"].value = 0.1
    assert bar_heights(w).max() > 0.99
    assert np.linalg.norm(jacobian_image(w)) < norm_at_1 / 10
    w.controls["temperature"].value = 10.0
    np.testing.assert_allclose(bar_heights(w), 1 / len(DEFAULT_SCORES), atol=0.05)


def test_the_shown_gradient_is_the_derivative_with_respect_to_the_raw_scores():
    x, tau, h = np.array(DEFAULT_SCORES), 0.5, 1e-6
    w = softmax_explorer()
    w.controls["temperature"].value = tau
    numeric = np.empty((x.size, x.size))
    for j in range(x.size):
        step = np.zeros_like(x)
        step[j] = h
        numeric[:, j] = (attnlab.softmax((x + step) / tau) - attnlab.softmax((x - step) / tau)) / (
            2 * h
        )
    np.testing.assert_allclose(jacobian_image(w), numeric, atol=1e-8)


@pytest.mark.parametrize("scores", [[8.0, -8.0, 0.0], list(DEFAULT_SCORES), [0.0, 0.0]])
def test_the_gradient_stays_within_its_fixed_colour_scale(scores):
    w = softmax_explorer(scores=scores)
    assert w.limit >= JACOBIAN_LIMIT
    for temperature in SLIDER_TAUS:
        w.controls["temperature"].value = temperature
        assert np.abs(jacobian_image(w)).max() <= w.limit + 1e-12


def test_learner_scores_with_four_keys_get_written_values():
    scores = [3.0, -1.0, 0.5, 0.0]
    w = softmax_explorer(scores=scores)
    assert w.shown["annotated"]
    before = w.view.image.value
    w.controls["temperature"].value = 0.5
    assert w.view.image.value != before
    p = attnlab.softmax(np.array(scores) / 0.5)
    np.testing.assert_allclose(bar_heights(w), p)
    np.testing.assert_allclose(jacobian_image(w), attnlab.softmax_jacobian(p) / 0.5)


def test_learner_scores_as_integers_and_eight_keys():
    w = softmax_explorer(scores=np.arange(8))
    np.testing.assert_allclose(bar_heights(w), attnlab.softmax(np.arange(8.0)))
    assert not w.shown["annotated"]  # 64 cells: the colour bar reads them


@pytest.mark.parametrize(
    ("scores", "error", "words"),
    [
        ([[1.0, 2.0], [3.0, 4.0]], ValueError, "1-D"),
        ([1.0], ValueError, "between 2 and 8"),
        (np.zeros(9), ValueError, "between 2 and 8"),
        ([1.0, np.nan, 0.0], ValueError, "finite"),
        ([1.0, np.inf], ValueError, "finite"),
        (["a", "b"], TypeError, "real numbers"),
        ([True, False], TypeError, "real numbers"),
        ([1 + 2j, 0], TypeError, "real numbers"),
    ],
)
def test_bad_scores_raise_a_clear_error(scores, error, words):
    with pytest.raises(error, match="scores") as info:
        softmax_explorer(scores=scores)
    assert words in str(info.value)


# ------------------------------------------------------------------------ softmax row


def test_softmax_row_starts_at_the_default_scores():
    w = softmax_row()
    assert set(w.controls) == {"score"}
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(np.array(DEFAULT_SCORES)))
    assert "k1 / k2 = 1.649" in w.readout.value  # e^(1 - 0.5)


def test_raising_k0_takes_weight_from_the_others_but_keeps_their_ratios():
    w = softmax_row()
    before = w.shown["weights"]
    w.controls["score"].value = 6.0
    after = w.shown["weights"]
    assert after[0] > before[0] and (after[1:] < before[1:]).all()
    np.testing.assert_allclose(after[1:] / after[1:].sum(), before[1:] / before[1:].sum())
    np.testing.assert_allclose(w.shown["ratio"], np.exp(0.5))
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(w.shown["scores"]))


def test_softmax_row_log_weights_all_move_down_by_the_rise_of_logsumexp():
    w = softmax_row()
    before = w.shown["log_weights"]
    np.testing.assert_allclose(np.exp(before), w.shown["weights"])
    np.testing.assert_allclose(before, w.shown["scores"] - w.shown["logsumexp"])
    image = bytes(w.view.image.value)
    w.controls["score"].value = 6.0
    assert bytes(w.view.image.value) != image
    after = w.shown["log_weights"]
    drop = before[1:] - after[1:]
    np.testing.assert_allclose(drop, drop[0])  # the same amount for every other key
    assert drop[0] > 0
    lse = np.log(np.exp(w.shown["scores"]).sum())
    np.testing.assert_allclose(w.shown["logsumexp"], lse)
    assert f"logsumexp(x) = {lse:.2f}" in w.readout.value


def test_softmax_row_log_panel_holds_every_slider_position():
    w = softmax_row(scores=[0.0, -3.0, 1.0])
    low = w.view.axes[0, 1].get_ylim()[0]
    for score in (-4.0, 0.0, 8.0):
        w.controls["score"].value = score
        assert w.shown["log_weights"].min() >= low


@pytest.mark.parametrize(
    ("scores", "error"),
    [([1.0, 2.0], ValueError), ([[1.0, 2.0, 3.0]], ValueError), ("abc", TypeError)],
)
def test_softmax_row_names_bad_scores(scores, error):
    with pytest.raises(error, match="scores"):
        softmax_row(scores)
