"""Tests for the lesson 02 widget ``variance_explorer``, built headless."""

import numpy as np
import pytest

from attnlab.widgets import variance_explorer


def texts(w):
    return [t.get_text() for ax in w.view.figure.axes for t in ax.texts]


def band_width(w):
    band = [p for p in w.view.figure.axes[0].patches if p.get_alpha() == pytest.approx(0.18)]
    return band[0].get_width()


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
    small_raw = widget.view.figure.axes[0].patches[0].get_data().values.copy()
    slider.value = 512
    assert widget.view.image.value != before
    raw_text, scaled_text = texts(widget)
    assert "d_k = 512" in raw_text and f"√d_k = {np.sqrt(512):.2f}" in raw_text
    std = float(raw_text.split("measured std ")[1].split()[0])
    assert abs(std - np.sqrt(512)) < 0.05 * np.sqrt(512)
    scaled_std = float(scaled_text.split("measured std ")[1])
    assert abs(scaled_std - 1.0) < 0.05
    # The shaded band is ± the measured std.
    assert band_width(widget) == pytest.approx(2 * std, rel=0.01)
    # The raw histogram spreads out: far fewer samples in its tallest bin's neighbourhood.
    wide_raw = widget.view.figure.axes[0].patches[0].get_data().values
    assert (wide_raw > 0.05).sum() > 5 * (small_raw > 0.05).sum()
    slider.value = 1
    assert widget.view.image.value == before


def test_every_d_k_gives_a_scaled_std_near_one(widget):
    slider = widget.controls["d_k"]
    for d in slider.options:
        slider.value = d
        scaled_std = float(texts(widget)[1].split("measured std ")[1])
        assert abs(scaled_std - 1.0) < 0.05, d
    slider.value = 1


def test_learner_data():
    w = variance_explorer([3, 100], n_samples=2000, dist="rademacher", seed=5)
    slider = w.controls["d_k"]
    assert list(slider.options) == [3, 100]
    before = w.view.image.value
    slider.value = 100
    assert w.view.image.value != before
    assert "d_k = 100" in texts(w)[0]
    assert w.view.figure.axes[0].get_xlim() == (-40.0, 40.0)  # 3.5·√100 = 35 → 40
    assert "2000 dot products" in w.children[2].value


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
        ({"dist": "cauchy"}, ValueError, "dist must be one of"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        variance_explorer(**kwargs)
