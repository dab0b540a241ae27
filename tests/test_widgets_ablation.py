"""The widget of lesson 08: the attention of one seed's models during training."""

import numpy as np
import pytest

from attnlab.lessons import ablation as lesson
from attnlab.widgets import training_attention
from attnlab.widgets._base import FALLBACK_NOTE

# ---------------------------------------------------- the attention during training


@pytest.fixture(scope="module")
def short_maps():
    task = lesson.make_task()
    return lesson.attention_maps(task, d_k=64, n_sequences=6, steps=30, keep=(0, 5, 20))


def test_training_attention_shows_the_kept_weights(short_maps):
    w = training_attention(short_maps)
    assert set(w.controls) == {"d_k", "step", "divisor"}
    assert list(w.controls["d_k"].options) == [16, 64, 256] and w.controls["d_k"].value == 64
    assert list(w.controls["step"].options) == [0, 5, 20, 30]
    rows = np.arange(6)
    for step in (0, 20, 30):
        for divisor in ("√d_k", "1"):
            before = bytes(w.view.image.value)
            w.controls["step"].value, w.controls["divisor"].value = step, divisor
            weights = short_maps.steps[step][divisor]
            np.testing.assert_array_equal(w.shown["weights"], weights)
            np.testing.assert_array_equal(w.shown["on_right"], weights[rows, short_maps.right])
            assert f"after {step} training steps" in w.readout.value
            assert f"{int((weights.argmax(axis=-1) == short_maps.right).sum())} of 6" in (
                w.readout.value
            )
            if (step, divisor) != (0, "1"):
                assert bytes(w.view.image.value) != before
    assert w._repr_mimebundle_()["text/plain"] == FALLBACK_NOTE


def test_training_attention_trains_another_d_k_when_first_picked(short_maps):
    task = lesson.make_task()
    w = training_attention(short_maps, task)
    w.controls["step"].value, w.controls["divisor"].value = 5, "1"
    w.controls["d_k"].value = 16
    # Trained like the first maps: the same seed, sequences and kept steps.
    again = lesson.attention_maps(task, d_k=16, n_sequences=6, steps=30, keep=(0, 5, 20))
    np.testing.assert_array_equal(w.shown["weights"], again.steps[5]["1"])
    np.testing.assert_array_equal(w.by_d_k[16].right, short_maps.right)
    assert w.shown["d_k"] == 16 and "d_k = 16" in w.readout.value
    trained = w.by_d_k[16]
    w.controls["d_k"].value = 64
    w.controls["d_k"].value = 16
    assert w.by_d_k[16] is trained  # trained once only
    np.testing.assert_array_equal(w.shown["weights"], again.steps[5]["1"])


def test_training_attention_by_default_shows_the_lesson_story():
    w = training_attention()
    assert list(w.controls["step"].options) == list(lesson.MAP_STEPS)
    right = {}
    for step in (0, 200):
        for divisor in ("√d_k", "1"):
            w.controls["step"].value, w.controls["divisor"].value = step, divisor
            right[(step, divisor)] = (w.shown["weights"].argmax(axis=-1) == w.maps.right).mean()
            if step == 0:
                # The divisor changes how sharp a row is, not which pair it favours.
                assert right[(0, divisor)] <= 1 / 3
    w.controls["step"].value = 0
    sharp = {}
    for divisor in ("√d_k", "1"):
        w.controls["divisor"].value = divisor
        sharp[divisor] = w.shown["weights"].max(axis=-1).mean()
    assert sharp["1"] > 0.8 > 0.5 > sharp["√d_k"]
    assert right[(200, "√d_k")] == 1.0 and right[(200, "1")] >= 0.5


@pytest.mark.parametrize(
    "maps, error, match",
    [
        ("maps", TypeError, "maps must come from lesson.attention_maps"),
        ({"start": {}}, TypeError, "maps must come from lesson.attention_maps"),
    ],
)
def test_training_attention_rejects_bad_arguments(maps, error, match):
    with pytest.raises(error, match=match):
        training_attention(maps)


def test_training_attention_needs_both_models():
    one = lesson.attention_maps(lesson.make_task(), 16, divisors=("√d_k",), steps=5)
    with pytest.raises(ValueError, match="'1'"):
        training_attention(one)
