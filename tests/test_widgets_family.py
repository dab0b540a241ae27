"""Tests for the family explorer and reach explorer widgets (``attnlab.widgets.family``), run
headless.

Lessons: ``notebooks/09_attention_family.ipynb`` (reach), ``notebooks/10_in_practice.ipynb``
(family).
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import attnlab
from attnlab.lessons import family, in_practice
from attnlab.widgets import family_explorer, reach_explorer
from attnlab.widgets.family import family_weights


def default_qk():
    rng = np.random.default_rng(8)
    return rng.normal(size=(16, 8)), rng.normal(size=(16, 8))


def test_builds_with_no_arguments_and_shows_plain_softmax_attention():
    w = family_explorer()
    assert set(w.controls) == {"mixing", "slope", "sharpness"}
    Q, K = default_qk()
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(Q @ K.T / np.sqrt(8)))
    np.testing.assert_allclose(w.shown["entropy"], attnlab.entropy(w.shown["weights"]))
    assert "<b>softmax</b>" in w.readout.value


def test_linear_mixing_shows_the_lessons_linear_weights():
    w = family_explorer()
    w.controls["mixing"].value = "linear"
    Q, K = default_qk()
    np.testing.assert_allclose(w.shown["weights"], in_practice.linear_attention_weights(Q, K))
    np.testing.assert_allclose(w.shown["weights"].sum(axis=1), 1.0)
    assert "elu" in w.readout.value


def test_the_alibi_slope_is_added_to_the_scores():
    w = family_explorer()
    w.controls["slope"].value = 0.5
    Q, K = default_qk()
    want = attnlab.softmax(Q @ K.T / np.sqrt(8) + family.alibi_bias(16, 0.5))
    np.testing.assert_allclose(w.shown["weights"], want)


@pytest.mark.parametrize("mixing", ["softmax", "linear"])
def test_every_query_sees_every_key_whatever_the_settings(mixing):
    w = family_explorer()
    w.controls["mixing"].value = mixing
    w.controls["slope"].value = 2.0
    w.controls["sharpness"].value = 0.25
    assert (w.shown["weights"] > 0).all()
    np.testing.assert_allclose(w.shown["weights"].sum(axis=1), 1.0)
    assert "over all 16 keys" in w.readout.value


def test_the_lessons_answer_a_decay_sharpens_linear_attention_by_position_only():
    # The lesson's Answer: with m = 0, raising c from 1 to 16 barely moves linear
    # attention's mean largest weight; with m = 1 its rows are much sharper, and c still
    # changes almost nothing, where softmax's rows turn one-hot.
    w = family_explorer()

    def mean_largest(mixing, slope, sharpness):
        w.controls["mixing"].value = mixing
        w.controls["slope"].value = slope
        w.controls["sharpness"].value = sharpness
        return w.shown["largest"].mean()

    for slope in (0.0, 1.0):
        assert abs(mean_largest("linear", slope, 16.0) - mean_largest("linear", slope, 1.0)) < 0.05
    assert mean_largest("linear", 1.0, 1.0) > 4 * mean_largest("linear", 0.0, 1.0)
    assert mean_largest("softmax", 0.0, 16.0) > 3 * mean_largest("softmax", 0.0, 1.0)


def test_sharpness_makes_softmax_one_hot_but_not_linear_attention():
    w = family_explorer()
    w.controls["sharpness"].value = 16.0
    assert w.shown["largest"].mean() > 0.9
    w.controls["mixing"].value = "linear"
    assert w.shown["largest"].max() < 0.5


def test_a_large_slope_keeps_the_weights_near_the_diagonal():
    w = family_explorer()
    near = family.local_mask(16, 2)
    for mixing in ("softmax", "linear"):
        w.controls["mixing"].value = mixing
        w.controls["slope"].value = 0.0
        spread = (w.shown["weights"] * ~near).sum(axis=1).max()
        w.controls["slope"].value = 2.0
        assert (w.shown["weights"] * ~near).sum(axis=1).max() < min(0.05, spread), mixing


def test_the_ring_marks_the_content_key_and_the_status_counts_the_rows_on_it():
    # The lesson's Answer: under softmax with m = 1, the largest weight of most rows is near
    # the diagonal at c = 1 and on the ringed content key at c = 16.
    w = family_explorer()
    Q, K = default_qk()
    np.testing.assert_array_equal(w.shown["content_key"], (Q @ K.T).argmax(axis=1))
    w.controls["slope"].value = 1.0
    for sharpness in (1.0, 16.0):
        w.controls["sharpness"].value = sharpness
        top = w.shown["weights"].argmax(axis=1)
        assert w.shown["on_content"] == (top == w.shown["content_key"]).sum()
        assert f"on the ringed key in {w.shown['on_content']}/16 rows" in w.status.get_text()
    on_content_at_16 = w.shown["on_content"]
    w.controls["sharpness"].value = 1.0
    assert w.shown["on_content"] <= 4 < 14 <= on_content_at_16
    near = np.abs(w.shown["weights"].argmax(axis=1) - np.arange(16)) <= 1
    assert near.all()


def test_learner_q_and_k():
    Q = [[1, 0], [0, 1], [1, 1], [0, 0], [2, 0]]
    w = family_explorer(Q=Q, K=Q)
    assert w.shown["weights"].shape == (5, 5)
    Qa = np.array(Q, dtype=float)
    np.testing.assert_allclose(w.shown["weights"], family_weights(Qa, Qa, "softmax", 0.0, 1.0))


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"Q": np.ones((8, 2))}, ValueError, "K is missing"),
        ({"K": np.ones((8, 2))}, ValueError, "Q is missing"),
        ({"Q": np.ones((8, 2)), "K": np.ones((8, 3))}, ValueError, "same shape"),
        ({"Q": np.ones(8), "K": np.ones(8)}, ValueError, "2-D"),
        ({"Q": np.ones((2, 2)), "K": np.ones((2, 2))}, ValueError, "4 to 32"),
        ({"Q": np.ones((40, 2)), "K": np.ones((40, 2))}, ValueError, "4 to 32"),
        ({"Q": np.full((8, 2), np.nan), "K": np.ones((8, 2))}, ValueError, "finite"),
        ({"Q": [["a", "b"]] * 8, "K": np.ones((8, 2))}, TypeError, "real numbers"),
    ],
)
def test_bad_learner_data_raises_a_clear_error(kwargs, error, words):
    with pytest.raises(error) as info:
        family_explorer(**kwargs)
    assert words in str(info.value)


# ------------------------------------------------------------------- reach explorer


def test_reach_explorer_starts_with_one_layer_of_a_local_window():
    w = reach_explorer()
    assert set(w.controls) == {"pattern", "width", "layers"}
    np.testing.assert_array_equal(w.shown["mask"], family.local_mask(32, 2))
    np.testing.assert_array_equal(w.shown["reach"], family.local_mask(32, 2))
    assert w.shown["connected_after"] == 16  # ⌈31/2⌉ layers of a window of 2
    # the count the learner is asked to predict appears only once L reaches it
    assert "16 layers" not in w.readout.value and "not every token" in w.readout.value
    w.controls["layers"].value = 15
    assert not w.shown["reach"].all() and "not every token" in w.readout.value
    w.controls["layers"].value = 16
    assert w.shown["reach"].all() and "first after 16 layers" in w.readout.value
    assert w.controls["layers"].max == 31  # a window of 1 needs n - 1 layers


def test_each_layer_widens_the_band_by_the_window():
    w = reach_explorer()
    w.controls["width"].value = 3
    for layers in (1, 2, 4):
        w.controls["layers"].value = layers
        np.testing.assert_array_equal(w.shown["reach"], family.local_mask(32, 3 * layers))
    w.controls["layers"].value = 11  # ⌈31/3⌉
    assert w.shown["reach"].all() and w.shown["connected_after"] == 11


def test_a_global_token_connects_everything_in_two_layers_and_blocks_never_do():
    w = reach_explorer(n=16)
    w.controls["pattern"].value = "global"
    assert w.shown["connected_after"] == 2
    w.controls["layers"].value = 2
    assert w.shown["reach"].all()
    w.controls["pattern"].value = "block"
    w.controls["layers"].value = 16
    np.testing.assert_array_equal(w.shown["reach"], family.block_mask(16, 2))
    assert w.shown["connected_after"] is None
    assert "no path leaves a block" in w.readout.value


@pytest.mark.parametrize(("n", "error"), [(4, ValueError), (65, ValueError), (8.5, TypeError)])
def test_reach_explorer_names_a_bad_n(n, error):
    with pytest.raises(error, match="n"):
        reach_explorer(n=n)
