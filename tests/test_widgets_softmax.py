"""Tests for the softmax explorer widget (``attnlab.widgets.softmax_explorer``), run headless.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import attnlab
from attnlab.widgets import softmax_explorer
from attnlab.widgets.softmax import DEFAULT_SCORES, JACOBIAN_LIMIT


def bar_heights(w):
    ax = w.view.axes[0, 0]
    return np.array([patch.get_height() for patch in ax.patches])


def status_text(w):
    return w.view.axes[0, 0].texts[-1].get_text()


def jacobian_image(w):
    return np.asarray(w.view.axes[0, 1].images[0].get_array())


def test_builds_with_no_arguments_and_shows_the_default_scores():
    w = softmax_explorer()
    assert set(w.controls) == {"temperature"}
    assert w.controls["temperature"].value == 1.0
    assert bytes(w.view.image.value).startswith(b"\x89PNG")
    p = attnlab.softmax(np.array(DEFAULT_SCORES))
    np.testing.assert_allclose(bar_heights(w), p)
    np.testing.assert_allclose(jacobian_image(w), attnlab.softmax_jacobian(p))
    assert f"max weight {p.max():.3f}" in status_text(w)


@pytest.mark.parametrize("temperature", [0.1, 0.3, 2.0, 10.0])
def test_temperature_changes_the_view_in_place(temperature):
    w = softmax_explorer()
    before = bytes(w.view.image.value)
    bars_before = list(w.view.axes[0, 0].patches)
    w.controls["temperature"].value = temperature
    assert bytes(w.view.image.value) != before
    # The same bar artists, new heights: the figure was updated, not rebuilt.
    assert list(w.view.axes[0, 0].patches) == bars_before
    p = attnlab.softmax(np.array(DEFAULT_SCORES) / temperature)
    J = attnlab.softmax_jacobian(p)
    np.testing.assert_allclose(bar_heights(w), p)
    np.testing.assert_allclose(jacobian_image(w), J)
    assert status_text(w) == (
        f"max weight {p.max():.3f}    Jacobian norm ‖J‖ = {np.linalg.norm(J):.3f}"
    )


def test_low_temperature_peaks_the_weights_and_shrinks_the_jacobian():
    w = softmax_explorer()
    norm_at_1 = np.linalg.norm(jacobian_image(w))
    w.controls["temperature"].value = 0.1
    assert bar_heights(w).max() > 0.99
    assert np.linalg.norm(jacobian_image(w)) < norm_at_1 / 10
    w.controls["temperature"].value = 10.0
    np.testing.assert_allclose(bar_heights(w), 1 / len(DEFAULT_SCORES), atol=0.05)


def test_scales_stay_fixed():
    w = softmax_explorer()
    ax_p, ax_j = w.view.axes[0]
    for temperature in (0.1, 10.0):
        w.controls["temperature"].value = temperature
        assert ax_p.get_ylim()[0] == 0 and ax_p.get_ylim()[1] >= 1
        assert ax_j.images[0].get_clim() == (-JACOBIAN_LIMIT, JACOBIAN_LIMIT)


def test_learner_scores_with_four_keys_get_written_values():
    scores = [3.0, -1.0, 0.5, 0.0]
    w = softmax_explorer(scores=scores)
    ax_j = w.view.axes[0, 1]
    assert len(ax_j.texts) == 16
    w.controls["temperature"].value = 0.5
    p = attnlab.softmax(np.array(scores) / 0.5)
    np.testing.assert_allclose(bar_heights(w), p)
    J = attnlab.softmax_jacobian(p)
    shown = [float(t.get_text()) for t in ax_j.texts]
    np.testing.assert_allclose(shown, J.ravel(), atol=0.006)
    assert not any(t.get_text() == "-0.00" for t in ax_j.texts)


def test_learner_scores_as_integers_and_eight_keys():
    w = softmax_explorer(scores=np.arange(8))
    np.testing.assert_allclose(bar_heights(w), attnlab.softmax(np.arange(8.0)))
    assert len(w.view.axes[0, 1].texts) == 0  # 64 cells: the colour bar reads them


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
