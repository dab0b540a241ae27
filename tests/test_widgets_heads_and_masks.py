"""Tests for the pattern gallery widget (``attnlab.widgets.pattern_gallery``), run headless.

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import attnlab
from attnlab.lessons.heads_and_masks import PATTERNS, SHARPNESS, pattern_qk, row_entropy
from attnlab.widgets import pattern_gallery


def heat_data(w):
    return w.shown["weights"]


def bar_widths(w):
    return w.shown["entropy"]


def expected(name, T, n=12):
    Q, K = pattern_qk(name, n)
    return attnlab.softmax(SHARPNESS * Q @ K.T / T)


def test_builds_with_no_arguments_and_shows_the_local_pattern():
    w = pattern_gallery()
    assert set(w.controls) == {"pattern", "temperature"}
    assert list(w.controls["pattern"].options) == list(PATTERNS)
    assert w.controls["pattern"].value == "local"
    assert w.controls["temperature"].value == 1.0
    W = expected("local", 1.0)
    np.testing.assert_allclose(heat_data(w), W)
    np.testing.assert_allclose(bar_widths(w), row_entropy(W))
    assert "sinusoidal" in w.readout.value


@pytest.mark.parametrize("name", PATTERNS[1:])
def test_choosing_a_pattern_shows_it(name):
    w = pattern_gallery()
    before = bytes(w.view.image.value)
    w.controls["pattern"].value = name
    assert bytes(w.view.image.value) != before
    W = expected(name, 1.0)
    np.testing.assert_allclose(heat_data(w), W)
    np.testing.assert_allclose(bar_widths(w), row_entropy(W))
    assert f"<b>{name}</b>" in w.readout.value


@pytest.mark.parametrize("temperature", [0.1, 0.4, 2.5, 10.0])
def test_temperature_changes_the_weights(temperature):
    w = pattern_gallery()
    w.controls["pattern"].value = "block"
    before = bytes(w.view.image.value)
    w.controls["temperature"].value = temperature
    assert bytes(w.view.image.value) != before
    np.testing.assert_allclose(heat_data(w), expected("block", temperature))


def test_low_temperature_hardens_and_high_temperature_flattens():
    w = pattern_gallery()
    w.controls["pattern"].value = "vertical"
    w.controls["temperature"].value = 0.1
    assert heat_data(w)[:, 0].min() > 0.999
    assert bar_widths(w).max() < 0.01
    w.controls["temperature"].value = 10.0
    np.testing.assert_allclose(bar_widths(w), np.log(12), atol=0.02)


def test_zero_queries_ignore_the_temperature():
    w = pattern_gallery()
    for pattern, row in (("horizontal", 5), ("global", 0)):
        w.controls["pattern"].value = pattern
        for temperature in (0.1, 1.0, 10.0):
            w.controls["temperature"].value = temperature
            np.testing.assert_allclose(heat_data(w)[row], 1 / 12)


def test_entropies_stay_between_zero_and_log_n():
    w = pattern_gallery()
    for name in PATTERNS:
        w.controls["pattern"].value = name
        for temperature in (0.1, 10.0):
            w.controls["temperature"].value = temperature
            assert bar_widths(w).min() >= -1e-12
            assert bar_widths(w).max() <= np.log(12) + 1e-12


def test_sequence_length():
    assert heat_data(pattern_gallery(n=np.int64(8))).shape == (8, 8)
    w = pattern_gallery(n=20)
    assert heat_data(w).shape == (20, 20)
    assert len(bar_widths(w)) == 20
    w.controls["pattern"].value = "block"
    np.testing.assert_allclose(heat_data(w), expected("block", 1.0, n=20))


def test_learner_q_and_k_become_the_pattern_yours():
    rng = np.random.default_rng(3)
    Q, K = rng.normal(size=(8, 3)), rng.normal(size=(8, 3))
    w = pattern_gallery(Q=Q, K=K)
    assert list(w.controls["pattern"].options) == [*PATTERNS, "yours"]
    w.controls["pattern"].value = "yours"
    w.controls["temperature"].value = 2.0
    np.testing.assert_allclose(heat_data(w), attnlab.softmax(SHARPNESS * Q @ K.T / 2.0))
    assert "Your Q and K" in w.readout.value
    w.controls["pattern"].value = "local"
    assert heat_data(w).shape == (8, 8)


def test_learner_lists_of_integers_work():
    Q = [[1, 0]] * 6
    K = [[1, 0]] + [[0, 1]] * 5
    w = pattern_gallery(Q=Q, K=K)
    w.controls["pattern"].value = "yours"
    np.testing.assert_allclose(heat_data(w)[:, 0], np.exp(4) / (np.exp(4) + 5))


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"Q": np.ones((8, 2))}, ValueError, "K is missing"),
        ({"K": np.ones((8, 2))}, ValueError, "Q is missing"),
        ({"Q": np.ones((8, 2)), "K": np.ones((8, 3))}, ValueError, "same shape"),
        ({"Q": np.ones(8), "K": np.ones(8)}, ValueError, "2-D"),
        ({"Q": np.ones((3, 2)), "K": np.ones((3, 2))}, ValueError, "6 to 24"),
        ({"Q": np.ones((30, 2)), "K": np.ones((30, 2))}, ValueError, "6 to 24"),
        ({"Q": np.full((8, 2), np.nan), "K": np.ones((8, 2))}, ValueError, "finite"),
        ({"Q": [["a", "b"]] * 8, "K": np.ones((8, 2))}, TypeError, "real numbers"),
        ({"Q": np.ones((8, 2), bool), "K": np.ones((8, 2))}, TypeError, "real numbers"),
        ({"Q": np.ones((8, 2)), "K": np.ones((8, 2)), "n": 10}, ValueError, "disagrees"),
        ({"n": 4}, ValueError, "between 6 and 24"),
        ({"n": 40}, ValueError, "between 6 and 24"),
        ({"n": 12.0}, TypeError, "whole number"),
        ({"n": True}, TypeError, "whole number"),
    ],
)
def test_bad_learner_data_raises_a_clear_error(kwargs, error, words):
    with pytest.raises(error) as info:
        pattern_gallery(**kwargs)
    assert words in str(info.value)
    names = {"Q", "K", "n"} & set(kwargs)
    assert any(name in str(info.value) for name in names)
