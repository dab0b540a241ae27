"""Tests for the online-softmax stepper (``attnlab.widgets.online_softmax_stepper``), run headless.

Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import attnlab
from attnlab.lessons.cost_and_tiling import example_row
from attnlab.widgets import online_softmax_stepper


def test_builds_with_no_arguments_and_shows_the_first_block():
    w = online_softmax_stepper()
    assert set(w.controls) == {"block_size", "blocks"}
    assert w.controls["block_size"].value == 4
    assert w.controls["blocks"].value == 1 and w.controls["blocks"].max == 3
    s, v = example_row()
    assert w.shown["m"] == s[:4].max()
    np.testing.assert_allclose(w.shown["l"], np.exp(s[:4] - s[:4].max()).sum())
    np.testing.assert_allclose(w.shown["weights"][:4], attnlab.softmax(s[:4]))
    assert np.all(w.shown["weights"][4:] == 0)
    np.testing.assert_allclose(w.shown["output"], attnlab.softmax(s[:4]) @ v[:4])
    assert "keys seen so far" in w.readout.value


@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 6, 8])
def test_after_the_last_block_it_is_the_softmax(block_size):
    w = online_softmax_stepper()
    s, v = example_row()
    w.controls["block_size"].value = block_size
    w.controls["blocks"].value = w.controls["blocks"].max
    assert w.controls["blocks"].max == -(-12 // block_size)
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(s))
    np.testing.assert_allclose(w.shown["output"], attnlab.softmax(s) @ v)
    np.testing.assert_allclose(w.shown["output"], w.shown["final_output"])
    assert w.shown["m"] == s.max()
    assert "= softmax(s) · v" in w.readout.value


def test_every_step_is_the_softmax_of_the_keys_seen():
    w = online_softmax_stepper()
    s, v = example_row()
    for blocks in (1, 2, 3):
        before = bytes(w.view.image.value)
        w.controls["blocks"].value = blocks
        seen = 4 * blocks
        if blocks > 1:
            assert bytes(w.view.image.value) != before
        np.testing.assert_allclose(w.shown["weights"][:seen], attnlab.softmax(s[:seen]))
        np.testing.assert_allclose(w.shown["output"], attnlab.softmax(s[:seen]) @ v[:seen])
        assert w.shown["m"] == s[:seen].max()


def test_a_smaller_block_count_clamps_the_slider():
    w = online_softmax_stepper()
    w.controls["blocks"].value = 3
    w.controls["block_size"].value = 8
    assert w.controls["blocks"].max == 2 and w.controls["blocks"].value == 2
    assert w.shown["blocks"] == 2
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(example_row()[0]))


def test_learner_data_and_huge_scores():
    s = [1000.0, 1002.0, 999.0, 1010.0, 1005.0]
    w = online_softmax_stepper(scores=s, values=[1, 2, 3, 4, 5], block_size=2)
    assert w.controls["blocks"].max == 3
    assert 5 in w.controls["block_size"].options or 2 in w.controls["block_size"].options
    w.controls["blocks"].value = 3
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(np.array(s)))
    assert np.isfinite(w.shown["l"])


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"scores": [1.0, 2.0, 3.0]}, ValueError, "values"),
        ({"values": [1.0, 2.0, 3.0]}, ValueError, "scores"),
        ({"scores": [1.0, 2.0, 3.0], "values": [1.0, 2.0]}, ValueError, "one number per score"),
        ({"scores": [1.0], "values": [1.0]}, ValueError, "2 to 32"),
        ({"scores": np.ones(40), "values": np.ones(40)}, ValueError, "2 to 32"),
        ({"scores": np.ones((3, 2)), "values": np.ones(3)}, ValueError, "1-D"),
        ({"scores": [1.0, np.nan], "values": [1.0, 2.0]}, ValueError, "finite"),
        ({"scores": ["a", "b"], "values": [1.0, 2.0]}, TypeError, "real numbers"),
        ({"block_size": 0}, ValueError, "block_size"),
        ({"block_size": 13}, ValueError, "block_size"),
        ({"block_size": 2.5}, TypeError, "block_size"),
    ],
)
def test_bad_learner_data_raises_a_clear_error(kwargs, error, words):
    with pytest.raises(error) as info:
        online_softmax_stepper(**kwargs)
    assert words in str(info.value)
