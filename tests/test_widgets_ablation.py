"""The ablation-curves widget of lesson 08: learning curves and entropy per d_k and divisor."""

import dataclasses
import re

import numpy as np
import pytest

import attnlab
from attnlab.lessons import ablation as lesson
from attnlab.widgets import ablation_curves, initial_attention
from attnlab.widgets.ablation import INITIAL_D_KS


def test_needs_the_lesson_s_results_and_says_how_to_get_them():
    with pytest.raises(TypeError, match=r"results = lesson\.run_ablation\(\)"):
        ablation_curves()


def test_starts_at_the_largest_d_k_without_scaling(ablation_runs):
    w = ablation_curves(ablation_runs)
    assert set(w.controls) == {"d_k", "divisor"}
    assert list(w.controls["d_k"].options) == [16, 64]
    assert [v for _, v in w.controls["divisor"].options] == ["1", "√d_k"]
    assert w.controls["d_k"].value == 64 and w.controls["divisor"].value == "1"
    run = ablation_runs[(64, "1")]
    steps, mean, low, high = w.shown["accuracy"]
    assert steps[0] == lesson.WINDOW
    np.testing.assert_allclose(mean, run.smoothed("accuracy").mean(axis=0))
    np.testing.assert_allclose(w.shown["reference"][1], ablation_runs[(64, "√d_k")].entropy.mean(0))
    assert "d_k = 64" in w.readout.value and "2 seeds" in w.readout.value


def test_each_control_changes_the_view_and_the_numbers(ablation_runs):
    runs = ablation_runs
    w = ablation_curves(runs)
    image = w.view.image.value

    w.controls["divisor"].value = "√d_k"
    assert w.view.image.value != image
    run = runs[(64, "√d_k")]
    np.testing.assert_allclose(w.shown["accuracy"][1], run.smoothed("accuracy").mean(axis=0))
    np.testing.assert_allclose(w.shown["entropy"][1], run.entropy.mean(axis=0))
    # The dashed reference is the ÷√d_k run itself here, so there is none.
    assert w.shown["reference"] is None
    assert "scale = 0.1250" in w.readout.value

    image = w.view.image.value
    w.controls["d_k"].value = 16
    assert w.view.image.value != image
    np.testing.assert_allclose(
        w.shown["accuracy"][1], runs[(16, "√d_k")].smoothed("accuracy").mean(axis=0)
    )
    assert "d_k = 16" in w.readout.value


def test_the_band_spans_the_seeds(ablation_runs):
    w = ablation_curves(ablation_runs)
    w.controls["d_k"].value = 16
    run = ablation_runs[(16, "1")]
    steps, mean, low, high = w.shown["entropy"]
    np.testing.assert_allclose(low, run.entropy.min(axis=0))
    np.testing.assert_allclose(high, run.entropy.max(axis=0))
    assert np.all(low <= mean) and np.all(mean <= high)
    assert len(steps) == run.steps


def test_a_single_seed_and_a_single_configuration(ablation_runs):
    run = ablation_runs[(16, "√d_k")]
    one_seed = dataclasses.replace(
        run,
        seeds=run.seeds[:1],
        **{name: getattr(run, name)[:1] for name in ("loss", "accuracy", "entropy")},
        final_accuracy=run.final_accuracy[:1],
        final_entropy=run.final_entropy[:1],
    )
    w = ablation_curves({(16, "√d_k"): one_seed})
    assert list(w.controls["d_k"].options) == [16]
    assert w.shown["reference"] is None
    assert "one seed" in w.readout.value
    steps, mean, low, high = w.shown["accuracy"]
    np.testing.assert_allclose(low, high)


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
def test_bad_results_raise_a_clear_error(ablation_runs, make, error, phrase):
    with pytest.raises(error, match=phrase):
        ablation_curves(make(ablation_runs))


def test_the_numbers_above_the_curves_are_the_run_s(ablation_runs):
    w = ablation_curves(ablation_runs)
    text = w.readout.value
    assert f"τ = {lesson.divisor_value('1', 64):.2f}" in text
    assert re.search(r"scale = 1\.0000", text)


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
