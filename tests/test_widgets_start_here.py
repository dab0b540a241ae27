"""The formula explorer of lesson 00, and the environment check that lesson runs."""

import numpy as np
import pytest

import attnlab
from attnlab.lessons import start_here as env
from attnlab.lessons.start_here import tiny_example
from attnlab.widgets import formula_explorer


def bar_heights(widget):
    return np.array([bar.get_height() for bar in widget.bars.patches])


def test_builds_with_no_arguments():
    w = formula_explorer()
    assert set(w.controls) == {"scale", "query"}
    assert w.view.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    tokens, Q, K, V = tiny_example()
    out, weights = attnlab.attention(Q, K, V, return_weights=True)
    # The slider starts at 1/√d_k, so the view shows the formula's own weights.
    assert w.controls["scale"].value == pytest.approx(1 / np.sqrt(Q.shape[1]))
    np.testing.assert_allclose(w.heat.image.get_array(), weights, atol=1e-12)
    np.testing.assert_allclose(bar_heights(w), out[0], atol=1e-12)
    assert [t.get_text() for t in w.heat.texts[:3]] == [f"{x:.2f}" for x in weights[0]]
    assert tokens[0] in w.readout.value


def test_scale_zero_gives_uniform_weights_and_the_average_value():
    w = formula_explorer()
    before = w.view.image.value
    w.controls["scale"].value = 0.0
    assert w.view.image.value != before
    np.testing.assert_allclose(w.heat.image.get_array(), np.full((3, 3), 1 / 3))
    _, _, _, V = tiny_example()
    np.testing.assert_allclose(bar_heights(w), V.mean(axis=0))
    assert "0.33 + 0.33 + 0.33 = 1.00" in w.readout.value


def test_larger_scale_sharpens_the_weights():
    w = formula_explorer()
    w.controls["scale"].value = 0.5
    peak_low = np.asarray(w.heat.image.get_array()).max(axis=1)
    before = w.view.image.value
    w.controls["scale"].value = 2.0
    peak_high = np.asarray(w.heat.image.get_array()).max(axis=1)
    assert w.view.image.value != before
    assert np.all(peak_high > peak_low)
    assert "scale = 2.00" in w.readout.value


def test_query_selector_moves_the_frame_and_the_output_row():
    w = formula_explorer()
    tokens, Q, K, V = tiny_example()
    out = attnlab.attention(Q, K, V)
    before = w.view.image.value
    w.controls["query"].value = 2
    assert w.view.image.value != before
    assert w.frame.get_y() == pytest.approx(1.5)
    np.testing.assert_allclose(bar_heights(w), out[2], atol=1e-12)
    assert f"output of {tokens[2]}" in w.readout.value


def test_learner_data_with_more_keys_than_queries():
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    w = formula_explorer(Q=Q, K=K, V=V, tokens=["a", "b", "c", "d"])
    assert [label for label, _ in w.controls["query"].options] == ["q0", "q1"]
    assert [t.get_text() for t in w.heat.ax.get_xticklabels()] == ["a", "b", "c", "d"]
    w.controls["scale"].value = 1.0
    w.controls["query"].value = 1
    expected = attnlab.attention(Q, K, V, scale=1.0)
    np.testing.assert_allclose(bar_heights(w), expected[1], atol=1e-12)


def test_large_matrices_are_not_annotated():
    rng = np.random.default_rng(6)
    Q = K = V = rng.normal(size=(5, 2))
    w = formula_explorer(Q=Q, K=K, V=V)
    assert w.heat.texts == []
    assert [label for label, _ in w.controls["query"].options] == ["q0", "q1", "q2", "q3", "q4"]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"Q": np.ones((2, 3)), "K": np.ones((2, 3))}, "missing: V"),
        ({"Q": np.ones((2, 3)), "K": np.ones((2, 4)), "V": np.ones((2, 2))}, "d_k"),
        ({"Q": np.ones((2, 3)), "K": np.ones((2, 3)), "V": np.ones((3, 2))}, "V needs one row"),
        ({"Q": np.ones(3), "K": np.ones((2, 3)), "V": np.ones((2, 2))}, "Q must be a matrix"),
        ({"Q": [[np.nan]], "K": [[1.0]], "V": [[1.0]]}, "Q must hold finite numbers"),
        ({"Q": np.ones((9, 2)), "K": np.ones((9, 2)), "V": np.ones((9, 2))}, "at most 8 rows"),
        ({"tokens": ["only", "two"]}, "tokens must be a list of 3"),
        ({"tokens": "abc"}, "tokens must be a list of 3"),
    ],
)
def test_bad_data_is_refused_by_name(kwargs, named):
    with pytest.raises(ValueError, match=named):
        formula_explorer(**kwargs)


def test_complex_input_is_refused():
    with pytest.raises(TypeError, match="K must hold real numbers"):
        formula_explorer(Q=np.ones((2, 2)), K=np.ones((2, 2)) * 1j, V=np.ones((2, 2)))


# --- environment report ------------------------------------------------------------------

GOOD = {
    "numpy": "2.4.6",
    "matplotlib": "3.11.2",
    "ipywidgets": "8.1.9",
    "jupyterlab": "4.6.6",
    "jupyterlab_widgets": "3.0.17",
}


def fake_environment(monkeypatch, versions, importable=None):
    monkeypatch.setattr(env, "installed_version", lambda dist, module=None: versions.get(dist))
    present = set(versions) if importable is None else importable
    monkeypatch.setattr(env, "importable", lambda module: module in present)


def test_report_on_a_working_setup_has_no_version_numbers(monkeypatch):
    fake_environment(monkeypatch, GOOD)
    lines = env.environment_report()
    assert all(line.startswith("✓") for line in lines[:-1])
    assert lines[-1] == "Everything the course needs is in place."
    assert not any("2.4.6" in line or "8.1.9" in line for line in lines)


def test_report_on_this_machine_passes():
    lines = env.environment_report()
    assert lines[-1] == "Everything the course needs is in place."


def test_missing_widget_extension_is_reported_with_the_fix(monkeypatch):
    versions = dict(GOOD)
    del versions["jupyterlab_widgets"]
    fake_environment(monkeypatch, versions)
    lines = env.environment_report()
    (line,) = [line for line in lines if "extension" in line]
    assert line.startswith("✗")
    assert "pip install 'jupyterlab_widgets>=3,<4' and restart JupyterLab" in line
    assert lines[-1].startswith("Fix the ✗ lines")


def test_extension_that_is_not_importable_counts_as_missing(monkeypatch):
    fake_environment(monkeypatch, GOOD, importable=set(GOOD) - {"jupyterlab_widgets"})
    line, ok = env.extension_line()
    assert not ok and "missing" in line


def test_extension_for_the_wrong_ipywidgets_is_reported(monkeypatch):
    fake_environment(monkeypatch, {**GOOD, "jupyterlab_widgets": "1.1.7"})
    lines = env.environment_report()
    (line,) = [line for line in lines if line.startswith("✗")]
    assert "jupyterlab_widgets 1.1.7 does not match ipywidgets 8.1.9" in line
    assert "pip install 'jupyterlab_widgets>=3,<4' and restart JupyterLab" in line


def test_old_and_missing_packages_are_reported(monkeypatch):
    versions = {**GOOD, "numpy": "1.21.6"}
    del versions["matplotlib"]
    fake_environment(monkeypatch, versions)
    text = "\n".join(env.environment_report())
    assert "✗ numpy 1.21.6 is too old (≥ 1.24 needed)" in text
    assert (
        "✗ matplotlib is not installed (≥ 3.7 needed). Fix: pip install 'matplotlib>=3.7'"
    ) in text


def test_jupyterlab_in_another_environment_is_a_note_not_an_error(monkeypatch):
    versions = {k: v for k, v in GOOD.items() if not k.startswith("jupyterlab")}
    fake_environment(monkeypatch, versions)
    lines = env.environment_report()
    assert sum(line.startswith("⚠") for line in lines) == 2
    assert any("cannot be checked from this kernel" in line for line in lines)
    assert lines[-1] == "Everything the course needs is in place."


def test_version_without_metadata_falls_back_to_the_module(monkeypatch):
    from importlib import metadata

    def no_metadata(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", no_metadata)
    assert env.installed_version("numpy", "numpy") == np.__version__
    assert env.installed_version("numpy") is None
    assert env.installed_version("no_such_package_here", "no_such_package_here") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8.1.9", (8, 1, 9)), ("4.0rc1", (4, 0)), ("3", (3,)), ("2.0.0.dev0", (2, 0, 0)), ("", ())],
)
def test_version_tuple(text, expected):
    assert env.version_tuple(text) == expected
