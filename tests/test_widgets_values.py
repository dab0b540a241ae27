"""qkv_explorer: built headless, driven from code (no timing assertions)."""

import numpy as np
import pytest

import attnlab
from attnlab.data import worked_example
from attnlab.widgets import qkv_explorer
from attnlab.widgets.values import format_matrix, parse_matrix


def test_default_shows_the_worked_example():
    w = qkv_explorer()
    ex = worked_example()
    out, weights = attnlab.attention(ex.Q, ex.K, ex.V, return_weights=True)
    assert set(w.controls) == {"query", "sharpen"}
    assert set(w.inputs) == {"Q", "K", "V", "apply", "message"}
    np.testing.assert_allclose(w.shown["weights"], weights[0])
    np.testing.assert_allclose(w.shown["output"], out[0])
    assert f"query {ex.labels[0]}" in w.readout.value


def test_query_control_changes_view_and_numbers():
    w = qkv_explorer()
    ex = worked_example()
    out, weights = attnlab.attention(ex.Q, ex.K, ex.V, return_weights=True)
    before = w.view.image.value
    for i in (2, 1, 3):
        w.controls["query"].value = i
        after = w.view.image.value
        assert after != before
        before = after
        np.testing.assert_allclose(w.shown["raw"], ex.Q[i] @ ex.K.T, atol=1e-12)
        np.testing.assert_allclose(w.shown["scaled"], ex.Q[i] @ ex.K.T / np.sqrt(8), atol=1e-12)
        np.testing.assert_allclose(w.shown["weights"], weights[i])
        np.testing.assert_allclose(w.shown["output"], out[i])
        assert f"query {ex.labels[i]}" in w.readout.value
        assert f"{out[i][0]:.3f}" in w.readout.value
        # The output lies within the range of V's rows: a convex combination.
        assert np.all(w.shown["output"] >= ex.V.min(axis=0) - 1e-12)
        assert np.all(w.shown["output"] <= ex.V.max(axis=0) + 1e-12)


def test_learner_data_and_labels():
    Q = [[1.0, 0.0], [0.0, 1.0]]
    K = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    V = [[1.0], [2.0], [3.0]]
    w = qkv_explorer(Q, K, V, labels=["a", "b", "c"])
    # Two queries and three keys: the queries get their own names.
    assert [o[0] for o in w.controls["query"].options] == ["q0", "q1"]
    assert "·v<sub>a</sub>" in w.readout.value
    first = w.view.image.value
    w.controls["query"].value = 1
    assert w.view.image.value != first
    out = attnlab.attention(np.array(Q), np.array(K), np.array(V))
    np.testing.assert_allclose(w.shown["output"], out[1])
    assert f"{out[1, 0]:.3f}" in w.readout.value


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"Q": np.ones((2, 3))}, ValueError, "together"),
        (
            {"Q": np.ones((2, 3)), "K": np.ones((2, 4)), "V": np.ones((2, 2))},
            ValueError,
            "same number of columns as Q",
        ),
        (
            {"Q": np.ones((2, 3)), "K": np.ones((2, 3)), "V": np.ones((3, 2))},
            ValueError,
            "one row per key",
        ),
        ({"Q": np.ones(3), "K": np.ones((2, 3)), "V": np.ones((2, 2))}, ValueError, "Q must"),
        (
            {"Q": np.ones((2, 3)), "K": [["a", "b", "c"]] * 2, "V": np.ones((2, 2))},
            TypeError,
            "K must hold real numbers",
        ),
        (
            {"Q": np.ones((2, 3)), "K": np.ones((2, 3)), "V": [[1.0, np.nan]] * 2},
            ValueError,
            "V must hold finite",
        ),
        (
            {"Q": np.ones((9, 3)), "K": np.ones((2, 3)), "V": np.ones((2, 2))},
            ValueError,
            "Q has 9 rows",
        ),
        ({"labels": ["a", "b"]}, ValueError, "labels must be a list of 4 labels"),
        ({"labels": "abcd"}, TypeError, "labels must be a list"),
    ],
)
def test_bad_data_raises_clear_errors(kwargs, error, words):
    with pytest.raises(error, match=words):
        qkv_explorer(**kwargs)


def test_typed_matrices_replace_the_data():
    w = qkv_explorer()
    before = w.view.image.value
    w.inputs["Q"].value = "1 0\n0 1\n1 1"
    w.inputs["K"].value = "1, 0; 0, 1; 2, 2"
    w.inputs["V"].value = "[[1, 2, 3], [4, 5, 6], [-1, 0, 1]]"
    w.inputs["apply"].click()
    assert "Showing your matrices" in w.inputs["message"].value
    assert w.view.image.value != before
    assert [o[1] for o in w.controls["query"].options] == [0, 1, 2]
    # Three keys, not four: the default names t0..t2 are used.
    assert "<th>t2</th>" in w.readout.value
    Q = np.array([[1, 0], [0, 1], [1, 1]], float)
    K = np.array([[1, 0], [0, 1], [2, 2]], float)
    V = np.array([[1, 2, 3], [4, 5, 6], [-1, 0, 1]], float)
    out = attnlab.attention(Q, K, V)
    w.controls["query"].value = 2
    assert f"{out[2, 2]:.3f}" in w.readout.value
    np.testing.assert_allclose(w.shown["output"], out[2])
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(Q[2] @ K.T / np.sqrt(2)))


@pytest.mark.parametrize(
    ("box", "text", "words"),
    [
        ("K", "1 2; 3 4", "K needs the same number of columns as Q (d_k = 8)"),
        ("V", "1 2\n3 4", "V needs one row per key"),
        ("Q", "1 2 x", "'x' is not a number"),
        ("Q", "1 2\n3", "every row needs the same number of entries"),
        ("Q", "", "Q is empty"),
        ("K", "nan 1", "finite"),
    ],
)
def test_bad_typed_text_shows_a_message_and_keeps_the_view(box, text, words):
    w = qkv_explorer()
    before = w.view.image.value
    w.inputs[box].value = text
    shown = w.shown
    w.inputs["apply"].click()  # must not raise
    assert words in w.inputs["message"].value
    assert w.view.image.value == before
    assert w.shown is shown
    w.controls["query"].value = 1
    assert w.view.image.value != before


def test_parse_and_format_round_trip():
    M = worked_example().V
    parsed, problem = parse_matrix(format_matrix(M), "V")
    assert problem is None
    np.testing.assert_array_equal(parsed, M)
    assert parse_matrix(None, "Q")[1] is not None


def test_sharpening_moves_each_output_from_the_mean_towards_one_value_row():
    w = qkv_explorer()
    ex = worked_example()
    scaled = ex.Q @ ex.K.T / np.sqrt(ex.Q.shape[1])
    nearest = []
    for factor in (0.25, 1.0, 16.0):
        w.controls["sharpen"].value = factor
        # The scaled panel shows what enters the softmax: c · q·k / √d_k.
        np.testing.assert_allclose(w.shown["scaled"], factor * scaled[0], atol=1e-12)
        np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(factor * scaled[0]))
        np.testing.assert_allclose(w.shown["output"], w.shown["weights"] @ ex.V)
        nearest.append(np.linalg.norm(ex.V - w.shown["output"], axis=1).min())
        # However sharp or flat, the output stays inside the range of V's rows.
        assert np.all(w.shown["output"] >= ex.V.min(axis=0) - 1e-12)
        assert np.all(w.shown["output"] <= ex.V.max(axis=0) + 1e-12)
    assert nearest[0] > nearest[1] > nearest[2]
    assert "scores × 16" in w.readout.value
    assert f"τ = √8 / c = {np.sqrt(8) / 16:.3g}" in w.readout.value
    # Stretched past the raw panel's axis, a bar stops at the edge under a marker.
    lim = w.lim
    heights = [bar.get_height() for bar in w.scaled_bars.patches]
    assert max(np.abs(heights)) <= lim + 1e-12
    up, down = (marks.get_xdata() for marks in w.clipped)
    np.testing.assert_array_equal(up, np.flatnonzero(16.0 * scaled[0] > lim))
    np.testing.assert_array_equal(down, np.flatnonzero(16.0 * scaled[0] < -lim))
    assert len(up) + len(down) > 0
    # Choosing another query keeps the factor.
    w.controls["query"].value = 2
    np.testing.assert_allclose(w.shown["weights"], attnlab.softmax(16.0 * scaled[2]))


def test_hull_panel_follows_the_output_inside_the_hull_of_the_value_rows():
    from attnlab.lessons.values import convex_hull, inside_hull

    rng = np.random.default_rng(5)
    V = np.array([[0.0, 0.0], [3.0, 0.5], [2.5, 2.5], [0.5, 3.0], [1.4, 1.2]])
    K = rng.normal(size=(5, 4))
    Q = np.random.default_rng(6).normal(size=(3, 4))
    w = qkv_explorer(Q, K, V)
    hull = convex_hull(V)
    np.testing.assert_allclose(w.shown["point"], w.shown["output"])  # d_v = 2: the output itself
    # The path runs from near the mean (c = 1/4) towards one corner (c = 16), inside the hull.
    path = w.shown["path"]
    assert inside_hull(path, hull).all()
    to_mean = np.linalg.norm(path - V.mean(axis=0), axis=1)
    assert to_mean[0] < to_mean[-1]
    before = w.view.image.value
    points = []
    for factor in (0.25, 1.0, 4.0, 16.0):
        w.controls["sharpen"].value = factor
        assert w.view.image.value != before
        before = w.view.image.value
        assert inside_hull(w.shown["point"], hull).all()
        points.append(np.linalg.norm(V - w.shown["point"], axis=1).min())
    assert points[0] > points[-1]  # sharper: nearer a value row
    first = w.shown["point"]
    w.controls["query"].value = 2  # another query's output jumps elsewhere
    assert w.view.image.value != before
    assert np.linalg.norm(w.shown["point"] - first) > 0.1
    np.testing.assert_allclose(
        w.shown["point"], attnlab.attention(Q, K, V, scale=16.0 / 2.0)[2], atol=1e-12
    )


@pytest.mark.parametrize("d_v", [1, 3])
def test_hull_panel_projects_other_widths(d_v):
    V = np.arange(3.0 * d_v).reshape(3, d_v) % 4
    w = qkv_explorer(np.eye(2), np.eye(2)[[0, 1, 0]], V)
    assert w.shown["point"].shape == (2,)
    np.testing.assert_allclose(w.shown["point"][0], w.shown["output"][0])


def test_changing_one_value_row_moves_the_outputs_and_nothing_else():
    # The lesson's task: on Section 1's data, add 1 to the first entry of v2 in the V box.
    # The scores and weights stay; q0's output moves by its weight on v2, at any factor c.
    rng = np.random.default_rng(5)
    V = np.array([[0.0, 0.0], [3.0, -0.5], [2.5, 2.5], [0.5, 3.0], [0.8, 2.0]])
    K = rng.normal(size=(5, 4))
    Q = np.random.default_rng(6).normal(size=(200, 4))[:6]
    w = qkv_explorer(Q, K, V, labels=[f"v{j}" for j in range(5)])
    assert w.inputs["V"].value.splitlines()[2] == "2.5 2.5"
    # Labels that already name the value rows are not prefixed twice in the formula.
    assert "·v<sub>2</sub>" in w.readout.value and "v<sub>v" not in w.readout.value
    for factor in (1.0, 0.25):
        w.controls["sharpen"].value = factor
        before = {k: np.array(v) for k, v in w.shown.items()}
        w.inputs["V"].value = format_matrix(V + np.outer(np.eye(5)[2], [1.0, 0.0]))
        w.inputs["apply"].click()
        assert w.controls["query"].value == 0 and w.controls["sharpen"].value == factor
        # The Q and K boxes were not touched: they keep their exact matrices, not 4 decimals.
        for stage in ("raw", "scaled", "weights"):
            np.testing.assert_array_equal(w.shown[stage], before[stage])
        move = w.shown["output"] - before["output"]
        np.testing.assert_allclose(move, [before["weights"][2], 0.0], atol=1e-12)
        assert f"{before['weights'][2]:.3f}" in w.readout.value
        w.inputs["V"].value = format_matrix(V)
        w.inputs["apply"].click()
        np.testing.assert_array_equal(w.shown["output"], before["output"])
    # A box that was typed into is read from its text; K, untouched, stays exact.
    w.inputs["Q"].value = format_matrix(np.round(Q, 2))
    w.inputs["apply"].click()
    np.testing.assert_allclose(w.shown["raw"], np.round(Q, 2)[0] @ K.T, atol=1e-12)
