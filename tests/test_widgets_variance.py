"""Tests for the lesson 02 widget ``variance_explorer``, built headless."""

import numpy as np
import pytest

from attnlab.softmax import softmax
from attnlab.widgets import variance_explorer
from attnlab.widgets.variance import SCALES


@pytest.fixture(scope="module")
def widget():
    return variance_explorer()


def test_default_controls_are_powers_of_two_and_three_scales(widget):
    slider = widget.controls["d_k"]
    assert list(slider.options) == [2**i for i in range(10)]
    assert list(widget.controls) == ["d_k", "scale"]
    assert [value for _, value in widget.controls["scale"].options] == [1.0, 0.5, 1 / 3]
    # It starts at 16 and σ_q σ_k = 1, where a raw row has begun to pile up on one key.
    assert slider.value == 16 and widget.shown["d_k"] == 16 and widget.shown["scale"] == 1.0
    assert widget.shown["median_top_raw"] > 5 * widget.shown["median_top_scaled"]
    assert widget.view.image.value  # drawn once at build time


def test_each_control_redraws_and_updates_the_numbers(widget):
    slider, scale = widget.controls["d_k"], widget.controls["scale"]
    before = widget.view.image.value
    slider.value = 512
    assert widget.view.image.value != before and widget.shown["d_k"] == 512
    wide = widget.view.image.value
    scale.value = 1 / 3
    assert widget.view.image.value != wide and widget.shown["scale"] == 1 / 3
    assert "σ_q σ_k = 1/3" in widget.readout.value
    scale.value = 1.0
    slider.value = 16
    assert widget.view.image.value == before


def test_the_scale_multiplies_every_score():
    # σ_q σ_k = s gives the rows of softmax(s · q·k / divisor), from the same fixed rows.
    w = variance_explorer([4, 64], seed=7)
    Q, K = w.rows
    for d in (4, 64):
        unit = Q[:, :d] @ K[:, :d].T
        for _, s in SCALES:
            frame = w.frames[d, s]
            np.testing.assert_allclose(frame["top_raw"], softmax(s * unit).max(axis=1))
            np.testing.assert_allclose(
                frame["top_scaled"], softmax(s * unit / np.sqrt(d)).max(axis=1)
            )


def test_learner_data():
    w = variance_explorer([3, 100], dist="rademacher", seed=5)
    slider = w.controls["d_k"]
    assert list(slider.options) == [3, 100]
    assert slider.value == 3  # 16 is not on this slider: it starts at the smallest d_k
    before = w.view.image.value
    slider.value = 100
    assert w.view.image.value != before
    assert w.shown["d_k"] == 100
    assert "±1 (Rademacher)" in w.readout.value
    assert set(np.unique(w.rows[0])) == {-1.0, 1.0}


def test_unsorted_d_ks_are_sorted():
    w = variance_explorer((64, 1, 8))
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
        ({"dist": "cauchy"}, ValueError, "dist must be one of"),
        ({"d_ks": [1, 4], "start": 16}, ValueError, "start must be one of"),
        ({"start": True}, ValueError, "start must be one of"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, error, phrase):
    with pytest.raises(error, match=phrase):
        variance_explorer(**kwargs)


def test_dist_is_named_once_in_the_readout():
    w = variance_explorer([1, 64], seed=3)
    assert "entries normal N(0, 1)" in w.readout.value
    assert w.readout.value.count("normal") == 1  # the label once, not "normal entries: normal"


def test_the_rows_show_the_largest_weights_for_each_divisor_and_scale(widget):
    # 200 fixed queries against 256 fixed keys: raw scores hand one key more and more of
    # each row as d_k grows, scaled ones keep the rows spread out whatever d_k is.
    slider, scale = widget.controls["d_k"], widget.controls["scale"]
    slider.value = 1
    np.testing.assert_array_equal(widget.shown["top_raw"], widget.shown["top_scaled"])  # √1 = 1
    passes = {}
    for _, s in SCALES:
        scale.value = s
        medians, above = [], []
        for d in slider.options:
            slider.value = d
            shown = widget.shown
            assert shown["top_raw"].shape == shown["top_scaled"].shape == (200,)
            assert "top_over_dk" not in shown  # two divisors: ÷ 1 and ÷ √d_k
            for label in ("raw", "scaled"):
                top = shown[f"top_{label}"]
                assert np.all((top >= 1 / 256 - 1e-12) & (top <= 1))  # even spread to 1
                assert shown[f"top_hist_{label}"].sum() == pytest.approx(1.0)  # all binned
                assert shown[f"median_top_{label}"] == np.median(top)
                assert shown[f"above_half_{label}"] == np.mean(top > 0.5)
                assert widget.frames[d, s][f"median_top_{label}"] == np.median(top)
            medians.append((shown["median_top_raw"], shown["median_top_scaled"]))
            above.append(shown["above_half_scaled"])
        raw = [m for m, _ in medians]
        assert all(a < b for a, b in zip(raw, raw[1:], strict=False))  # the trend, d_k by d_k
        assert max(sc for _, sc in medians) < 0.1 and max(above) == 0
        passes[s] = min(d for d, m in zip(slider.options, raw, strict=True) if m > 0.5)
    # The lesson asks from which d_k on the median raw row gives one key more than half
    # its weight: 32 at σ_q σ_k = 1, 128 at 1/2 (nn.MultiheadAttention's start), 256 at 1/3
    # (nn.Linear's), which the learner reads off the widget's readout.
    assert passes == {1.0: 32, 0.5: 128, 1 / 3: 256}
    assert "200 fixed queries" in widget.readout.value and "256 fixed keys" in widget.readout.value
    assert (
        "divided by √d_k." in widget.readout.value and "divided by d_k" not in widget.readout.value
    )
    scale.value = 1.0
    slider.value = 16


def test_summary_figure_and_takeover_d_k(widget):
    # Most raw rows pass 0.5 later for a smaller σ_q σ_k; the scaled rows never do.
    firsts = [widget.takeover_d_k(s) for _, s in SCALES]
    assert firsts == sorted(firsts) and firsts[0] < firsts[-1]
    assert variance_explorer([1, 2], seed=3).takeover_d_k(1 / 3) is None
    fig = widget.plot_summary()
    left, right = fig.axes
    # one line per σ_q σ_k and divisor, on each panel, with a point per d_k
    assert len(left.get_lines()) >= 6 and len(right.get_lines()) >= 6
    assert all(len(line.get_xdata()) == len(widget.d_ks) for line in right.get_lines()[:6])
    import matplotlib.pyplot as plt

    plt.close(fig)
