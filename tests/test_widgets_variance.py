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
    # It starts at 16, where both panels already show something: a visible histogram on
    # the left, and a raw row that has begun to pile up on one key on the right.
    assert slider.value == 16 and widget.shown["d_k"] == 16
    assert widget.shown["median_top_raw"] > 5 * widget.shown["median_top_scaled"]
    assert widget.view.image.value  # drawn once at build time


def test_moving_the_slider_redraws_and_updates_the_numbers(widget):
    slider = widget.controls["d_k"]
    slider.value = 1
    before = widget.view.image.value
    small_raw, small_edges = widget.shown["raw"], widget.shown["raw_edges"]
    slider.value = 512
    assert widget.view.image.value != before
    assert widget.shown["d_k"] == 512
    std = widget.shown["raw_std"]
    assert abs(std - np.sqrt(512)) < 0.05 * np.sqrt(512)
    # The raw histogram is a density on a shared axis: it spreads out over a much wider
    # range, and its peak drops like 1/√d_k (√512 ≈ 23 times lower than at d_k = 1).
    wide_raw, wide_edges = widget.shown["raw"], widget.shown["raw_edges"]

    def spread(raw, edges):  # how wide the range where the density is above 1/10 of its peak
        return np.diff(edges)[raw > 0.1 * raw.max()].sum()

    assert spread(wide_raw, wide_edges) > 10 * spread(small_raw, small_edges)
    assert wide_raw.max() == pytest.approx(1 / np.sqrt(2 * np.pi * 512), rel=0.15)
    assert small_raw.max() > 10 * wide_raw.max()
    assert (wide_raw * np.diff(wide_edges)).sum() == pytest.approx(1.0, abs=0.01)
    slider.value = 1
    assert widget.view.image.value == before


def test_learner_data():
    w = variance_explorer([3, 100], n_samples=2000, dist="rademacher", seed=5)
    slider = w.controls["d_k"]
    assert list(slider.options) == [3, 100]
    assert slider.value == 3  # 16 is not on this slider: it starts at the smallest d_k
    before = w.view.image.value
    slider.value = 100
    assert w.view.image.value != before
    assert w.shown["d_k"] == 100
    assert abs(w.shown["raw_std"] - 10.0) < 1.0
    assert "2000 dot products" in w.readout.value and "±1 (Rademacher)" in w.readout.value


def test_small_d_k_shows_the_sharp_peak_of_a_product(widget):
    # Section 8: a single product XY (d_k = 1), and still the sum of two, peak far above
    # the normal curve at 0. Coarse bins would average the peak away and draw the
    # histogram *below* the curve; a quarter of √d_k wide, they show it.
    for d in (1, 2):
        frame = widget.frames[d]
        assert np.diff(frame["raw_edges"]).max() <= np.sqrt(d) / 4 + 1e-9
        assert frame["raw"].max() > 1.5 / np.sqrt(2 * np.pi * d)
        assert (frame["raw"] * np.diff(frame["raw_edges"])).sum() == pytest.approx(1.0)
    # From d_k = 64 on, the 80 bins of the whole axis are already fine enough.
    assert np.allclose(np.diff(widget.frames[512]["raw_edges"]), 2.0)
    assert np.allclose(np.diff(widget.frames[64]["raw_edges"]), 2.0)
    # The axes fit the tallest normal curve; d_k = 1's peak rises above them, and the
    # readout says how high.
    top = widget.view.axes[0, 0].get_ylim()[1]
    assert top == widget.top and 1 / np.sqrt(2 * np.pi) < top < widget.frames[1]["raw"].max()
    slider = widget.controls["d_k"]
    slider.value = 1
    assert f"peak, {widget.frames[1]['raw'].max():.2f}, is cut off" in widget.readout.value
    slider.value = 2
    assert "cut off" not in widget.readout.value
    slider.value = 16


def test_plus_minus_one_entries_get_one_bin_per_possible_score():
    # ±1 entries give whole-number scores of d_k's parity, 2 apart: one bin of width 2
    # around each, so the bars are neither a comb of empty bins nor merged values.
    w = variance_explorer([1, 2, 5, 64], n_samples=4000, dist="rademacher")
    for d, frame in w.frames.items():
        edges, raw = frame["raw_edges"], frame["raw"]
        assert np.allclose(np.diff(edges), 2.0)
        centres = (edges[:-1] + edges[1:])[raw > 0] / 2
        assert np.all(centres % 2 == d % 2)  # each filled bin centred on a possible score
        assert raw.max() < w.top  # lattice bins never rise above the axes
    # At d_k = 1 each score ±1 has chance ½, a density ½ / 2 close to the normal curve's.
    assert w.frames[1]["raw"].max() == pytest.approx(0.25, abs=0.02)


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
        ({"d_ks": [1, 4], "start": 16}, ValueError, "start must be one of"),
        ({"start": True}, ValueError, "start must be one of"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        variance_explorer(**kwargs)


def test_dist_chooses_the_entries_and_the_slider_is_the_only_control():
    w = variance_explorer([1, 64], n_samples=2000, seed=3)
    assert list(w.controls) == ["d_k"]
    assert "entries normal N(0, 1)" in w.readout.value
    assert w.readout.value.count("normal") == 1  # the label once, not "normal entries: normal"
    w = variance_explorer([1, 64], n_samples=2000, seed=3, dist="rademacher")
    assert "entries ±1 (Rademacher)" in w.readout.value
    w.controls["d_k"].value = 1
    # ±1 entries at d_k = 1: every sample is -1 or +1, in two bins.
    assert (w.shown["raw"] > 0).sum() == 2
    assert set(np.unique(w.samples[1])) == {-1.0, 1.0}
    w.controls["d_k"].value = 64
    assert abs(w.shown["raw_std"] - 8.0) < 0.5


def test_the_right_panel_shows_the_largest_weights_of_many_rows(widget):
    # 200 fixed queries against 256 fixed keys: raw scores hand one key more and more of
    # each row as d_k grows, scaled ones keep the rows spread out whatever d_k is.
    slider = widget.controls["d_k"]
    slider.value = 1
    np.testing.assert_array_equal(widget.shown["top_raw"], widget.shown["top_scaled"])  # √1 = 1
    np.testing.assert_array_equal(widget.shown["top_raw"], widget.shown["top_over_dk"])
    medians, above, flat = [], [], []
    for d in slider.options:
        slider.value = d
        shown = widget.shown
        assert shown["top_raw"].shape == shown["top_scaled"].shape == (200,)
        assert shown["top_over_dk"].shape == (200,)
        for label in ("raw", "scaled", "over_dk"):
            top = shown[f"top_{label}"]
            assert np.all((top >= 1 / 256 - 1e-12) & (top <= 1))  # between an even spread and 1
            assert shown[f"top_hist_{label}"].sum() == pytest.approx(1.0)  # every row in a bin
            assert shown[f"median_top_{label}"] == np.median(top)
            assert shown[f"above_half_{label}"] == np.mean(top > 0.5)
        medians.append((shown["median_top_raw"], shown["median_top_scaled"]))
        above.append(shown["above_half_scaled"])
        flat.append(shown["median_top_over_dk"])
    raw = [m for m, _ in medians]
    assert all(a < b for a, b in zip(raw, raw[1:], strict=False))  # the trend, d_k by d_k
    assert raw[-1] > 0.9 and max(s for _, s in medians) < 0.1 and max(above) == 0
    # Dividing by d_k shrinks the scores like 1/√d_k: the rows flatten towards 1/256.
    assert all(a > b for a, b in zip(flat[1:], flat[2:], strict=False))
    assert flat[-1] < 1.2 / 256
    # The lesson asks from which d_k on the median raw row gives one key more than half its
    # weight: 32 (the median scaled row never does). Its next cell prints the medians of
    # every d_k from ``frames``: the same numbers the slider shows.
    assert min(d for d, (m, _) in zip(slider.options, medians, strict=True) if m > 0.5) == 32
    for d, (raw_median, scaled_median) in zip(slider.options, medians, strict=True):
        assert widget.frames[d]["median_top_raw"] == raw_median
        assert widget.frames[d]["median_top_scaled"] == scaled_median
    assert "200 fixed queries" in widget.readout.value and "256 fixed keys" in widget.readout.value
    assert "divided by d_k" in widget.readout.value
    slider.value = 1


def test_the_readout_does_not_change_the_histograms():
    # The rows of the right panel come from a generator of their own.
    from attnlab.lessons.variance import samples_by_dk

    w = variance_explorer([4, 64], n_samples=500, seed=7)
    expected = samples_by_dk([4, 64], 500, np.random.default_rng(7), "normal")
    for d in (4, 64):
        np.testing.assert_array_equal(w.samples[d], expected[d])
