"""The formula explorer of lesson 00, and the environment check that lesson runs."""

import numpy as np
import pytest

import attnlab
from attnlab.lessons import start_here as env
from attnlab.lessons.start_here import tiny_example
from attnlab.widgets import formula_explorer


def test_builds_with_no_arguments_at_the_formula_scale():
    w = formula_explorer()
    assert set(w.controls) == {"scale", "query"}
    tokens, Q, K, V = tiny_example()
    out, weights = attnlab.attention(Q, K, V, return_weights=True)
    # The slider starts at 1/√d_k, so the view shows the formula's own weights.
    assert w.controls["scale"].value == pytest.approx(1 / np.sqrt(Q.shape[1]))
    np.testing.assert_allclose(w.shown["weights"], weights, atol=1e-12)
    np.testing.assert_allclose(w.shown["output"], out[0], atol=1e-12)
    assert f"weights of {tokens[0]}: " + " + ".join(f"{x:.2f}" for x in weights[0]) in (
        w.readout.value
    )
    assert [label for label, _ in w.controls["query"].options] == list(tokens)


def test_scale_zero_gives_uniform_weights_and_the_average_value():
    w = formula_explorer()
    before = w.view.image.value
    w.controls["scale"].value = 0.0
    assert w.view.image.value != before
    np.testing.assert_allclose(w.shown["weights"], np.full((3, 3), 1 / 3))
    _, _, _, V = tiny_example()
    np.testing.assert_allclose(w.shown["output"], V.mean(axis=0))
    assert "0.33 + 0.33 + 0.33 = 1.00" in w.readout.value


def test_larger_scale_sharpens_the_weights():
    w = formula_explorer()
    w.controls["scale"].value = 0.5
    peak_low = w.shown["weights"].max(axis=1)
    before = w.view.image.value
    w.controls["scale"].value = 2.0
    assert w.view.image.value != before
    assert np.all(w.shown["weights"].max(axis=1) > peak_low)
    assert "scale = 2.00" in w.readout.value


def test_at_the_largest_scale_every_output_is_close_to_one_value_row():
    # The lesson says: slide the scale up and each row piles its weight onto one key.
    w = formula_explorer()
    slider = w.controls["scale"]
    assert slider.max == 5.0
    slider.value = slider.max
    weights = w.shown["weights"]
    assert np.all(weights.max(axis=1) > 0.98)
    _, _, _, V = tiny_example()
    np.testing.assert_allclose(weights @ V, V[weights.argmax(axis=1)], atol=0.02)


def test_query_selector_shows_that_query_s_output():
    w = formula_explorer()
    tokens, Q, K, V = tiny_example()
    out = attnlab.attention(Q, K, V)
    weights = w.shown["weights"]
    before = w.view.image.value
    w.controls["query"].value = 2
    assert w.view.image.value != before
    np.testing.assert_allclose(w.shown["weights"], weights)  # the weights stay
    np.testing.assert_allclose(w.shown["output"], out[2], atol=1e-12)
    assert f"output of {tokens[2]}" in w.readout.value


def test_learner_data_with_more_keys_than_queries():
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    w = formula_explorer(Q=Q, K=K, V=V, tokens=["a", "b", "c", "d"])
    assert [label for label, _ in w.controls["query"].options] == ["q0", "q1"]
    w.controls["scale"].value = 1.0
    w.controls["query"].value = 1
    expected, weights = attnlab.attention(Q, K, V, scale=1.0, return_weights=True)
    np.testing.assert_allclose(w.shown["weights"], weights, atol=1e-12)
    np.testing.assert_allclose(w.shown["output"], expected[1], atol=1e-12)
    assert "output of q1" in w.readout.value


@pytest.mark.parametrize(
    ("kwargs", "error", "named"),
    [
        ({"Q": np.ones((2, 3)), "K": np.ones((2, 3))}, ValueError, "missing: V"),
        ({"Q": np.ones((2, 3)), "K": np.ones((2, 4)), "V": np.ones((2, 2))}, ValueError, "d_k"),
        (
            {"Q": np.ones((2, 3)), "K": np.ones((2, 3)), "V": np.ones((3, 2))},
            ValueError,
            "V needs one row",
        ),
        ({"Q": np.ones(3), "K": np.ones((2, 3)), "V": np.ones((2, 2))}, ValueError, "Q must be a"),
        ({"Q": [[np.nan]], "K": [[1.0]], "V": [[1.0]]}, ValueError, "Q must hold finite"),
        (
            {"Q": np.ones((9, 2)), "K": np.ones((9, 2)), "V": np.ones((9, 2))},
            ValueError,
            "at most 8 rows",
        ),
        ({"V": np.ones((3, 13)), "Q": np.ones((3, 2)), "K": np.ones((3, 2))}, ValueError, "12"),
        ({"tokens": ["only", "two"]}, ValueError, "tokens must be a list of 3"),
        ({"tokens": "abc"}, TypeError, "tokens must be a list of 3"),
        (
            {"Q": np.ones((2, 2)), "K": np.ones((2, 2)) * 1j, "V": np.ones((2, 2))},
            TypeError,
            "K must hold real numbers",
        ),
    ],
)
def test_bad_data_is_refused_by_name(kwargs, error, named):
    with pytest.raises(error, match=named):
        formula_explorer(**kwargs)


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


def test_in_jupyterlite_the_sites_own_extension_needs_no_fix(monkeypatch):
    versions = {k: v for k, v in GOOD.items() if k not in ("jupyterlab", "jupyterlab_widgets")}
    fake_environment(monkeypatch, versions, importable=set(versions))
    monkeypatch.setattr(env.sys, "platform", "emscripten")
    lines = env.environment_report()
    assert not any(line.startswith("✗") for line in lines)
    assert any("JupyterLite" in line and line.startswith("✓") for line in lines)
    assert lines[-1] == "Everything the course needs is in place."


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
    # It cannot promise what it could not see.
    assert lines[-1].startswith("Nothing is missing from this kernel. If widgets do not appear")


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
