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
    # The raw histogram is a density on a shared axis: it spreads out over many more bins,
    # and its peak drops like 1/√d_k (√512 ≈ 23 times lower than a normal one at d_k = 1).
    wide_raw = widget.shown["raw"]
    assert (wide_raw > 0.1 * wide_raw.max()).sum() > 5 * (small_raw > 0.1 * small_raw.max()).sum()
    assert wide_raw.max() == pytest.approx(1 / np.sqrt(2 * np.pi * 512), rel=0.15)
    assert small_raw.max() > 10 * wide_raw.max()
    assert widget.shown["raw"].sum() * 160 / 80 == pytest.approx(1.0, abs=0.01)
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


def test_every_histogram_fits_under_the_top():
    # ±1 entries at d_k = 1 or 2 put the scaled samples in a few tall bins.
    w = variance_explorer([1, 2, 64], n_samples=2000, dist="rademacher")
    raw_top, scaled_top = w.tops["rademacher"]
    for (dist, _), frame in w.frames.items():
        if dist == "rademacher":
            assert frame["scaled"].max() < scaled_top
            assert frame["raw"].max() < raw_top
    assert w.view.axes[0, 1].get_ylim()[1] == scaled_top
    w.controls["dist"].value = "normal"  # its own, lower axes
    assert w.view.axes[0, 1].get_ylim()[1] == w.tops["normal"][1] < scaled_top


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


def test_the_dropdown_switches_the_entries_distribution():
    w = variance_explorer([1, 64], n_samples=2000, seed=3)
    assert w.controls["dist"].value == "normal" and "normal entries" in w.readout.value
    w.controls["d_k"].value = 1
    before = w.view.image.value
    w.controls["dist"].value = "rademacher"
    assert w.view.image.value != before
    assert w.shown["dist"] == "rademacher" and "rademacher entries" in w.readout.value
    # ±1 entries at d_k = 1: every scaled sample is -1 or +1, in two tall bins.
    assert (w.shown["scaled"] > 0).sum() == 2
    assert abs(w.shown["scaled_std"] - 1.0) < 0.05
    w.controls["d_k"].value = 64
    assert abs(w.shown["raw_std"] - 8.0) < 0.5


def test_the_readout_shows_what_softmax_makes_of_the_scores(widget):
    # One query against 256 keys: raw scores hand one key more and more of the row as d_k
    # grows, scaled ones keep the row spread out whatever d_k is.
    slider = widget.controls["d_k"]
    slider.value = 1
    assert widget.shown["top_weight_raw"] == widget.shown["top_weight_scaled"]  # √1 = 1
    raw, scaled = [], []
    for d in (16, 64, 512):
        slider.value = d
        raw.append(widget.shown["top_weight_raw"])
        scaled.append(widget.shown["top_weight_scaled"])
    assert raw[0] < raw[1] < raw[2] and raw[2] > 0.95
    assert max(scaled) < 0.1
    assert "256 keys" in widget.readout.value and f"{raw[2]:.2f}" in widget.readout.value
    slider.value = 1


def test_the_readout_does_not_change_the_histograms():
    # The readout's rows come from a generator of their own.
    from attnlab.lessons.variance import samples_by_dk

    w = variance_explorer([4, 64], n_samples=500, seed=7)
    expected = samples_by_dk([4, 64], 500, np.random.default_rng(7), "normal")
    for d in (4, 64):
        np.testing.assert_array_equal(w.samples["normal"][d], expected[d])
