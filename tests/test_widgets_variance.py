"""Tests for the lesson 02 widget ``variance_explorer``, built headless."""

import numpy as np
import pytest

from attnlab.widgets import variance_explorer


@pytest.fixture(scope="module")
def widget():
    return variance_explorer()


def test_default_slider_is_powers_of_two(widget):
    slider = widget.controls["d_k"]
    assert list(slider.options) == [2**i for i in range(10)]
    assert slider.value == 1
    assert widget.view.image.value  # drawn once at build time


def test_moving_the_slider_redraws_and_updates_the_numbers(widget):
    slider = widget.controls["d_k"]
    slider.value = 1
    before = widget.view.image.value
    small_raw = widget.shown["raw"]
    slider.value = 512
    assert widget.view.image.value != before
    assert widget.shown["d_k"] == 512
    std = widget.shown["raw_std"]
    assert abs(std - np.sqrt(512)) < 0.05 * np.sqrt(512)
    assert abs(widget.shown["scaled_std"] - 1.0) < 0.05
    # The raw histogram spreads out over many more bins; its tallest bar stays at 1.
    wide_raw = widget.shown["raw"]
    assert wide_raw.max() == small_raw.max() == 1.0
    assert (wide_raw > 0.05).sum() > 5 * (small_raw > 0.05).sum()
    # The scaled histogram is a density: it integrates to about 1 on its range.
    assert widget.shown["scaled"].sum() * 10 / 50 == pytest.approx(1.0, abs=0.01)
    slider.value = 1
    assert widget.view.image.value == before


def test_every_d_k_gives_a_scaled_std_near_one(widget):
    slider = widget.controls["d_k"]
    for d in slider.options:
        slider.value = d
        assert abs(widget.shown["scaled_std"] - 1.0) < 0.05, d
    slider.value = 1


def test_learner_data():
    w = variance_explorer([3, 100], n_samples=2000, dist="rademacher", seed=5)
    slider = w.controls["d_k"]
    assert list(slider.options) == [3, 100]
    before = w.view.image.value
    slider.value = 100
    assert w.view.image.value != before
    assert w.shown["d_k"] == 100
    assert abs(w.shown["raw_std"] - 10.0) < 1.0
    assert "2000 dot products" in w.readout.value and "rademacher" in w.readout.value


def test_unsorted_d_ks_are_sorted():
    w = variance_explorer((64, 1, 8), n_samples=500)
    assert list(w.controls["d_k"].options) == [1, 8, 64]


@pytest.mark.parametrize(
    "kwargs, error, phrase",
    [
        ({"d_ks": []}, ValueError, "at least one"),
        ({"d_ks": 64}, TypeError, "d_ks must be a list"),
        ({"d_ks": "64"}, TypeError, "d_ks must be a list"),
        ({"d_ks": [1, 2.5]}, TypeError, "whole numbers"),
        ({"d_ks": [1, True]}, TypeError, "whole numbers"),
        ({"d_ks": [0, 4]}, ValueError, "between 1 and"),
        ({"d_ks": [1, 100_000]}, ValueError, "between 1 and"),
        ({"d_ks": [4, 4]}, ValueError, "must not repeat"),
        ({"n_samples": 10}, ValueError, "n_samples must be between"),
        ({"n_samples": 5000.0}, TypeError, "n_samples must be a whole number"),
        ({"n_samples": True}, TypeError, "n_samples must be a whole number"),
        ({"dist": "cauchy"}, ValueError, "dist must be one of"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        variance_explorer(**kwargs)
