"""The ablation-curves widget of lesson 07: learning curves and entropy per d_k and divisor."""

import dataclasses
import re

import numpy as np
import pytest

from attnlab.lessons import ablation as lesson
from attnlab.widgets import ablation_curves


@pytest.fixture(scope="module")
def runs():
    """A learner's own (short) ablation: two d_k, two divisors, two seeds."""
    return lesson.run_ablation(d_ks=(16, 64), divisors=("1", "√d_k"), seeds=(0, 1), steps=40)


def shown(widget, name):
    line = widget.artists[f"{name}_line"]
    return np.asarray(line.get_xdata()), np.asarray(line.get_ydata())


def test_builds_with_no_arguments_from_a_built_in_run():
    w = ablation_curves()
    assert set(w.controls) == {"d_k", "divisor"}
    assert list(w.controls["d_k"].options) == list(lesson.D_KS)
    assert [v for _, v in w.controls["divisor"].options] == list(lesson.DIVISORS)
    assert w.controls["d_k"].value == 256 and w.controls["divisor"].value == "1"
    assert w.view.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(w.results) == len(lesson.D_KS) * len(lesson.DIVISORS)
    run = w.results[(256, "1")]
    x, y = shown(w, "acc")
    np.testing.assert_allclose(y, run.smoothed("accuracy").mean(axis=0))
    assert x[0] == lesson.WINDOW
    assert "one seed" in w.label.value


def test_each_control_changes_the_view_and_the_numbers(runs):
    w = ablation_curves(runs)
    assert w.controls["d_k"].value == 64 and w.controls["divisor"].value == "1"
    image, acc_text = w.view.image.value, w.artists["acc_text"].get_text()

    w.controls["divisor"].value = "√d_k"
    assert w.view.image.value != image
    run = runs[(64, "√d_k")]
    np.testing.assert_allclose(shown(w, "acc")[1], run.smoothed("accuracy").mean(axis=0))
    np.testing.assert_allclose(shown(w, "ent")[1], run.entropy.mean(axis=0))
    assert w.artists["acc_text"].get_text() != acc_text
    assert f"final accuracy {lesson.spread(run.final_accuracy)}" in w.artists["acc_text"].get_text()
    assert f"first step {run.entropy[:, 0].mean():.2f}" in w.artists["ent_text"].get_text()
    # The dashed reference is the ÷√d_k run itself here, so it is hidden.
    assert not w.artists["acc_ref"].get_visible()
    assert "scale = 0.1250" in w.label.value

    image = w.view.image.value
    w.controls["d_k"].value = 16
    assert w.view.image.value != image
    np.testing.assert_allclose(
        shown(w, "acc")[1], runs[(16, "√d_k")].smoothed("accuracy").mean(axis=0)
    )
    assert "d_k = 16" in w.label.value and "2 seeds" in w.label.value


def test_the_band_spans_the_seeds_and_the_reference_is_the_scaled_run(runs):
    w = ablation_curves(runs)
    w.controls["d_k"].value = 16
    run, ref = runs[(16, "1")], runs[(16, "√d_k")]
    vertices = w.artists["ent_band"].get_paths()[0].vertices
    low, high = run.entropy.min(axis=0), run.entropy.max(axis=0)
    assert vertices[:, 1].min() == pytest.approx(low.min())
    assert vertices[:, 1].max() == pytest.approx(high.max())
    assert w.artists["ent_ref"].get_visible()
    np.testing.assert_allclose(w.artists["ent_ref"].get_ydata(), ref.entropy.mean(axis=0))
    steps = re.search(r"90% after steps: (.*)", w.artists["acc_text"].get_text()).group(1)
    assert steps == lesson.steps_text(run.steps_to(0.9))


def test_axes_never_change(runs):
    w = ablation_curves(runs)
    ax_a, ax_e = w.view.axes[0]
    limits = (ax_a.get_xlim(), ax_a.get_ylim(), ax_e.get_xlim(), ax_e.get_ylim())
    for d_k in (16, 64):
        for divisor in ("√d_k", "1"):
            w.controls["d_k"].value, w.controls["divisor"].value = d_k, divisor
            assert (ax_a.get_xlim(), ax_a.get_ylim(), ax_e.get_xlim(), ax_e.get_ylim()) == limits


def test_a_single_configuration_works():
    one = {(16, "√d_k"): lesson.train(lesson.make_task(), 16, "√d_k", seeds=(3,), steps=20)}
    w = ablation_curves(one)
    assert not w.artists["acc_ref"].get_visible()
    assert list(w.controls["d_k"].options) == [16]


def _shorter(run, steps):
    return dataclasses.replace(
        run,
        loss=run.loss[:, :steps],
        accuracy=run.accuracy[:, :steps],
        entropy=run.entropy[:, :steps],
    )


@pytest.mark.parametrize(
    ("make", "error", "phrase"),
    [
        (lambda r: [1, 2], TypeError, "results must be the dict"),
        (lambda r: {}, TypeError, "results must be the dict"),
        (lambda r: {16: r[(16, "1")]}, ValueError, "keys must be \\(d_k, divisor\\)"),
        (lambda r: {(16, "3√d_k"): r[(16, "1")]}, ValueError, "divisor one of"),
        (lambda r: {(16, "1"): r[(16, "1")].loss}, TypeError, "must be a Run"),
        (lambda r: {(16, "√d_k"): r[(16, "1")]}, ValueError, "holds the run of"),
        (lambda r: {**r, (64, "1"): _shorter(r[(64, "1")], 30)}, ValueError, "equal length"),
        (lambda r: {k: _shorter(v, 5) for k, v in r.items()}, ValueError, "too short"),
        (
            lambda r: {k: v for k, v in r.items() if k != (64, "1")},
            ValueError,
            "every divisor for every d_k",
        ),
    ],
)
def test_bad_results_raise_a_clear_error(runs, make, error, phrase):
    with pytest.raises(error, match=phrase):
        ablation_curves(make(runs))
