"""Tests for lesson 06's widgets, run headless: the pattern gallery
(``attnlab.widgets.pattern_gallery``) and the mask builder
(``attnlab.widgets.heads_and_masks.mask_builder``).

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import attnlab
from attnlab.lessons.heads_and_masks import PATTERNS, SHARPNESS, pattern_qk, row_entropy
from attnlab.widgets import pattern_gallery
from attnlab.widgets._base import FALLBACK_NOTE
from attnlab.widgets.heads_and_masks import PAD_END, PAD_START, mask_builder


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
    for pattern, row in (("previous-token", 5), ("global", 0)):
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


# ------------------------------------------------------------------------ mask builder


JPEG = b"\xff\xd8\xff"  # the start of every JPEG file


def on_page(box):
    found = []
    for child in getattr(box, "children", ()):
        found += [child, *on_page(child)]
    return found


def test_mask_builder_has_named_controls_on_the_page_and_a_picture():
    w = mask_builder()
    assert list(w.controls) == [
        "length 0", "length 1", "length 2", "padding", "mask padding", "causal", "sequence"
    ]  # fmt: skip
    assert bytes(w.view.image.value).startswith(JPEG)
    parts = on_page(w)
    for name, control in w.controls.items():
        assert any(part is control for part in parts), name
    assert w._repr_mimebundle_()["text/plain"] == FALLBACK_NOTE
    doc = mask_builder.__doc__
    assert "Lesson: ``notebooks/06_heads_and_masks.ipynb``" in doc and "controls" in doc


def test_mask_builder_default_is_padding_at_the_end_and_causal():
    w = mask_builder()
    n = 8
    lengths = np.array([w.controls[f"length {b}"].value for b in range(3)])
    np.testing.assert_array_equal(w.shown["mask"], attnlab.masks.padding_causal_mask(lengths, n))
    # A causal model padded at the end: padding changes only the padding queries' rows.
    L = lengths[w.controls["sequence"].value]
    np.testing.assert_array_equal(w.shown["rows_padding_changes"], np.arange(L, n))
    np.testing.assert_allclose(w.shown["weights"].sum(axis=1), 1.0)
    assert w.shown["padding_weight"] == 0.0
    assert "Rows of its mask that padding changes" in w.readout.value


def test_left_padding_changes_every_row_and_leaves_some_rows_empty():
    w = mask_builder()
    w.controls["sequence"].value = 2
    w.controls["length 2"].value = 3
    w.controls["padding"].value = PAD_START
    real = w.shown["real"][2]
    np.testing.assert_array_equal(real, np.arange(8) >= 5)
    np.testing.assert_array_equal(w.shown["rows_padding_changes"], np.arange(8))
    # Padding queries before the first real token have no allowed key: zero weights.
    np.testing.assert_array_equal(w.shown["empty_rows"], np.arange(5))
    assert not w.shown["weights"][:5].any()
    np.testing.assert_allclose(w.shown["weights"][5:].sum(axis=1), 1.0)
    assert w.shown["weights"][:, ~real].max() == 0.0


def test_unmasked_padding_gets_weight_and_no_causal_mask_shows_the_whole_past_and_future():
    w = mask_builder()
    w.controls["mask padding"].value = False
    assert w.shown["padding_weight"] > 0.01
    assert "not masked" in w.readout.value
    w.controls["causal"].value = False
    assert w.shown["mask"].all()
    w.controls["mask padding"].value = True
    lengths = [w.controls[f"length {b}"].value for b in range(3)]
    np.testing.assert_array_equal(
        w.shown["mask"], np.broadcast_to(w.shown["real"][:, None, :], (3, 8, 8))
    )
    # Without a causal mask, padding at the end blocks keys in every row.
    seq = w.controls["sequence"].value
    if lengths[seq] < 8:
        np.testing.assert_array_equal(w.shown["rows_padding_changes"], np.arange(8))


def test_every_mask_builder_control_changes_the_picture_and_back_restores_it():
    w = mask_builder()
    others = {
        "length 0": [3, 5],
        "length 1": [1, 8],
        "length 2": [6, 8],
        "padding": [PAD_START],
        "mask padding": [False],
        "causal": [False],
        "sequence": [0, 2],
    }
    for name, values in others.items():
        control = w.controls[name]
        start, picture = control.value, bytes(w.view.image.value)
        for value in values:
            control.value = value
            assert bytes(w.view.image.value) != picture, (name, value)
        control.value = start
        assert bytes(w.view.image.value) == picture, name


@pytest.mark.parametrize("n", [4, 12, np.int64(6)])
def test_mask_builder_takes_a_padded_length(n):
    w = mask_builder(n=n)
    assert w.shown["mask"].shape == (3, int(n), int(n))
    assert w.controls["length 0"].max == int(n)


@pytest.mark.parametrize("n", [3, 13, 2.5, "8"])
def test_mask_builder_refuses_bad_lengths_kindly(n):
    with pytest.raises((ValueError, TypeError)):
        mask_builder(n=n)


def test_unmasked_padding_at_the_end_leaves_a_causal_models_real_rows_alone():
    w = mask_builder()
    assert w.controls["padding"].value == PAD_END and w.controls["causal"].value
    w.controls["mask padding"].value = False
    # The weight on padding keys sits only in the padding queries' rows.
    assert w.shown["padding_weight_real"] == 0.0
    assert w.shown["padding_weight_padding"] > 0.01
    assert "real queries' rows put up to 0.00" in w.readout.value
    # The real queries' rows are exactly those of the masked version.
    real = w.shown["real"][w.controls["sequence"].value]
    unmasked = w.shown["weights"][real]
    w.controls["mask padding"].value = True
    np.testing.assert_array_equal(unmasked, w.shown["weights"][real])


@pytest.mark.parametrize("causal", [True, False])
def test_unmasked_padding_changes_the_real_rows_at_the_start_or_without_causal(causal):
    w = mask_builder()
    w.controls["padding"].value = PAD_START if causal else PAD_END
    w.controls["causal"].value = causal
    w.controls["mask padding"].value = False
    assert w.shown["padding_weight_real"] > 0.01
    assert "thrown away" in w.readout.value


@pytest.mark.parametrize("padding", [PAD_END, PAD_START])
def test_mask_panels_shade_the_padding_even_when_it_is_not_masked(padding):
    w = mask_builder()
    w.controls["padding"].value = padding
    w.controls["mask padding"].value = False
    for b in range(3):
        cells = np.asarray(w.mask_maps[b].image.get_array())
        real = w.shown["real"][b]
        # Allowed or blocked (0/1) as the mask says, plus 2 on a padding query's row or a
        # padding key's column: where the padding sits shows although it is not masked.
        np.testing.assert_array_equal(cells % 2, w.shown["mask"][b])
        np.testing.assert_array_equal(cells >= 2, ~real[:, None] | ~real[None, :])
    # Two lengths give the same (causal) mask unmasked, but not the same panel.
    before = np.array(w.mask_maps[1].image.get_array())
    w.controls["length 1"].value -= 1
    np.testing.assert_array_equal(w.shown["mask"][1], attnlab.causal_mask(8))
    assert not np.array_equal(np.asarray(w.mask_maps[1].image.get_array()), before)


@pytest.mark.parametrize("padding", [PAD_END, PAD_START])
@pytest.mark.parametrize("causal", [True, False])
def test_masked_padding_leaves_the_real_rows_as_without_padding(padding, causal):
    w = mask_builder()
    w.controls["padding"].value = padding
    w.controls["causal"].value = causal
    assert w.shown["real_vs_unpadded"] < 1e-12
    assert "without padding: largest difference 0.00." in w.readout.value
    w.controls["mask padding"].value = False
    # Unmasked, only padding at the end under the causal mask stays out of the real rows.
    if padding == PAD_END and causal:
        assert w.shown["real_vs_unpadded"] < 1e-12
    else:
        assert w.shown["real_vs_unpadded"] > 0.01
        assert "largest difference 0.00." not in w.readout.value
