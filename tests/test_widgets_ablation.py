"""The widget of lesson 08: the untrained model's attention, per d_k and divisor."""

import numpy as np
import pytest

import attnlab
from attnlab.lessons import ablation as lesson
from attnlab.widgets import initial_attention
from attnlab.widgets.ablation import INITIAL_D_KS

# ------------------------------------------------------- the untrained model's attention


def test_initial_attention_shows_softmax_of_the_raw_scores_over_tau():
    task = lesson.make_task()
    w = initial_attention(task, n_sequences=6)
    assert set(w.controls) == {"d_k", "divisor"}
    assert list(w.controls["d_k"].options) == list(INITIAL_D_KS)
    for d_k in (4, 256):
        for divisor in ("√d_k", "1"):
            before = bytes(w.view.image.value)
            w.controls["d_k"].value, w.controls["divisor"].value = d_k, divisor
            raw, right = lesson.initial_attention(task, d_k, 6)
            tau = lesson.divisor_value(divisor, d_k)
            np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(raw / tau))
            np.testing.assert_allclose(w.shown["entropy"], attnlab.entropy(w.shown["weights"]))
            assert f"τ = {tau:.2f}" in w.readout.value
            if (d_k, divisor) != (4, "√d_k"):
                assert bytes(w.view.image.value) != before
    np.testing.assert_array_equal(w.right, right)


def test_without_the_divisor_rows_sharpen_as_d_k_grows():
    w = initial_attention()
    largest = {}
    for divisor in ("√d_k", "1"):
        w.controls["divisor"].value = divisor
        for d_k in (4, 1024):
            w.controls["d_k"].value = d_k
            largest[(divisor, d_k)] = w.shown["weights"].max(axis=-1).mean()
    assert largest[("1", 1024)] > 0.9 > largest[("1", 4)]
    assert max(largest[("√d_k", 4)], largest[("√d_k", 1024)]) < 0.6


def test_by_default_the_readout_sharpens_with_d_k_without_the_divisor():
    # The lesson's prose: divided by 1, rows are sharper the larger d_k. With the default
    # 16 sequences the readout's numbers follow that over the lesson's sizes and 1024
    # (neighbouring positions of the slider, a factor 2 apart, can still swap).
    w = initial_attention()
    assert w.n_sequences == 16
    w.controls["divisor"].value = "1"
    largest, saturated = [], []
    for d_k in (16, 64, 256, 1024):
        w.controls["d_k"].value = d_k
        weights = w.shown["weights"].max(axis=-1)
        largest.append(weights.mean())
        saturated.append((weights > 0.99).sum())
        assert f"of {w.n_sequences}" in w.readout.value
    assert largest == sorted(largest) and saturated == sorted(saturated)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_sequences": 1}, ValueError, "n_sequences must be between 2 and 16"),
        ({"n_sequences": 2.5}, TypeError, "n_sequences must be a whole number"),
        ({"task": "retrieval"}, TypeError, "task must be the lesson's task"),
    ],
)
def test_initial_attention_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        initial_attention(**kwargs)
