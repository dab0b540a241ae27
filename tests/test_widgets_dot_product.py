"""The key race of lesson 01: one query, a few keys, and which key scores highest."""

import numpy as np
import pytest

from attnlab.widgets import dot_product_explorer


def test_builds_with_no_arguments_and_k1_wins():
    w = dot_product_explorer()
    assert set(w.controls) == {"q_angle", "k2_length"}
    q, keys = w.shown["q"], w.shown["keys"]
    np.testing.assert_allclose(w.shown["scores"], keys @ q)
    np.testing.assert_allclose(w.shown["bounds"], np.linalg.norm(q) * np.linalg.norm(keys, axis=1))
    assert w.shown["winner"] == 0
    # The highest bar is the one filled.
    assert [bar.get_facecolor() != (1.0, 1.0, 1.0, 1.0) for bar in w.bars] == [True, False, False]


def test_a_longer_key_beats_a_better_aligned_one_until_it_shrinks():
    w = dot_product_explorer()
    before = w.view.image.value
    w.controls["q_angle"].value = 40  # 10° from k₁, 30° from k₂
    assert w.view.image.value != before
    assert w.shown["winner"] == 1
    w.controls["k2_length"].value = 0.9
    assert w.shown["winner"] == 0
    np.testing.assert_allclose(np.linalg.norm(w.shown["keys"][1]), 0.9)


@pytest.mark.parametrize("angle", [0, 90, 200, 310])
def test_no_score_leaves_its_dashed_bounds(angle):
    w = dot_product_explorer()
    w.controls["q_angle"].value = angle
    assert np.all(np.abs(w.shown["scores"]) <= w.shown["bounds"] + 1e-12)
    _, ys = w.bound_lines.get_data()
    ys = np.asarray(ys, float)
    np.testing.assert_allclose(ys[0::6], w.shown["bounds"])
    np.testing.assert_allclose(ys[3::6], -w.shown["bounds"])


def test_learner_vectors_start_where_they_are():
    q, keys = np.array([3.0, 4.0]), np.array([[1.0, -2.0], [0.5, 1.5], [-1.0, 0.0]])
    w = dot_product_explorer(q=q, keys=keys)
    np.testing.assert_allclose(w.shown["q"], q, atol=1e-12)
    np.testing.assert_allclose(w.shown["keys"], keys, atol=1e-12)
    np.testing.assert_allclose(w.shown["scores"], keys @ q)
    assert w.controls["k2_length"].value == pytest.approx(np.hypot(0.5, 1.5))
    assert w.shown["winner"] == 1
    assert len(w.bars) == 3


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"q": [1.0, 0.0, 2.0]}, ValueError, "q must be a 2-D vector"),
        ({"q": [0.0, 0.0]}, ValueError, "q is the zero vector"),
        ({"keys": [[1.0, 0.0]]}, ValueError, "keys must be 2 to 4 keys"),
        ({"keys": [[1.0, 0.0, 1.0]] * 3}, ValueError, "keys must be 2 to 4 keys"),
        ({"keys": [[1.0, 0.0], [0.0, 0.0]]}, ValueError, "keys holds a zero vector"),
        ({"q": [np.inf, 0.0]}, ValueError, "q must hold finite numbers"),
        ({"q": ["a", "b"]}, TypeError, "q must hold real numbers"),
        ({"keys": [1.0, 0.0]}, ValueError, "keys must be a matrix"),
    ],
)
def test_bad_vectors_are_refused_by_name(kwargs, error, named):
    with pytest.raises(error, match=named):
        dot_product_explorer(**kwargs)


def test_a_key_at_a_right_angle_reads_zero_without_a_minus_sign():
    # k₃ is at 130°: with q at 40°, cos 90° is about 6e-17 and q·k₃ can land below 0.
    w = dot_product_explorer()
    w.controls["q_angle"].value = 40
    assert w.score_texts[2].get_text() == "0.00"
