"""The dot-product explorer of lesson 01: two arrows, their angle and lengths."""

import numpy as np
import pytest

from attnlab.widgets import dot_product_explorer


def readout(widget) -> dict:
    return {name: widget.shown[name] for name in ("dot", "lengths", "cos")}


def test_builds_with_no_arguments():
    w = dot_product_explorer()
    assert set(w.controls) == {"angle", "q_length", "k_length"}
    shown = readout(w)
    q, k = w.shown["q"], w.shown["k"]
    assert shown["dot"] == pytest.approx(q @ k, abs=0.005)
    assert shown["dot"] == pytest.approx(shown["lengths"] * shown["cos"], abs=0.01)


def test_right_angle_gives_zero_and_past_it_negative():
    w = dot_product_explorer()
    before = w.view.image.value
    w.controls["angle"].value = 90
    assert w.view.image.value != before
    assert readout(w)["dot"] == pytest.approx(0.0, abs=0.005)
    assert readout(w)["cos"] == pytest.approx(0.0, abs=0.005)
    w.controls["angle"].value = 150
    assert readout(w)["dot"] < 0
    q, k = w.shown["q"], w.shown["k"]
    np.testing.assert_allclose(
        np.degrees(np.arccos(q @ k / np.linalg.norm(q) / np.linalg.norm(k))), 150
    )


def test_dot_product_scales_with_each_length():
    w = dot_product_explorer()
    first = readout(w)["dot"]
    before = w.view.image.value
    w.controls["q_length"].value = w.controls["q_length"].value / 2
    assert w.view.image.value != before
    assert readout(w)["dot"] == pytest.approx(first / 2, abs=0.01)
    assert readout(w)["cos"] == pytest.approx(0.5, abs=0.005)
    before = w.view.image.value
    w.controls["k_length"].value = 0.0
    assert w.view.image.value != before
    assert readout(w)["dot"] == pytest.approx(0.0, abs=0.005)


def test_vectors_follow_the_sliders():
    w = dot_product_explorer()
    w.controls["angle"].value = 0
    w.controls["q_length"].value = 1.0
    w.controls["k_length"].value = 2.0
    q, k = w.shown["q"], w.shown["k"]
    np.testing.assert_allclose([np.linalg.norm(q), np.linalg.norm(k)], [1.0, 2.0])
    np.testing.assert_allclose(k, 2.0 * q, atol=1e-12)  # θ = 0: the same direction
    assert readout(w)["dot"] == pytest.approx(2.0)


def test_learner_vectors_start_where_they_are():
    q, k = np.array([3.0, 4.0]), np.array([1.0, -2.0])
    w = dot_product_explorer(q=q, k=k)
    assert w.controls["q_length"].value == pytest.approx(5.0)
    assert w.controls["k_length"].value == pytest.approx(np.sqrt(5))
    assert w.controls["q_length"].max >= 5.0
    shown_q, shown_k = w.shown["q"], w.shown["k"]
    np.testing.assert_allclose(shown_q, q, atol=1e-12)
    np.testing.assert_allclose(shown_k, k, atol=1e-12)
    assert readout(w)["dot"] == pytest.approx(q @ k)
    before = w.view.image.value
    w.controls["angle"].value = 90
    assert w.view.image.value != before
    assert readout(w)["dot"] == pytest.approx(0.0, abs=0.005)


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"q": [1.0, 0.0]}, ValueError, "Pass q, k together \\(missing: k\\)"),
        ({"q": [1.0, 0.0, 2.0], "k": [1.0, 1.0]}, ValueError, "q must be a 2-D vector"),
        ({"q": [1.0, 0.0], "k": [0.0, 0.0]}, ValueError, "k is the zero vector"),
        ({"q": [np.inf, 0.0], "k": [1.0, 1.0]}, ValueError, "q must hold finite numbers"),
        ({"q": ["a", "b"], "k": [1.0, 1.0]}, TypeError, "q must hold real numbers"),
        ({"q": [[1.0, 0.0]], "k": [1.0, 1.0]}, ValueError, "q must be one row"),
    ],
)
def test_bad_vectors_are_refused_by_name(kwargs, error, named):
    with pytest.raises(error, match=named):
        dot_product_explorer(**kwargs)


@pytest.mark.parametrize(("q_length", "k_length"), [(0.5, 1.2), (2.0, 0.3), (1.0, 1.0)])
def test_a_right_angle_reads_zero_without_a_minus_sign(q_length, k_length):
    # cos 90° is about 6e-17 in floating point, and q·k can land on either side of 0.
    w = dot_product_explorer()
    w.controls["q_length"].value, w.controls["k_length"].value = q_length, k_length
    w.controls["angle"].value = 90
    text = w.numbers.get_text()
    assert "q·k = 0.00" in text and "cos θ = 0.00" in text
    assert "-0.00" not in text
