"""Tests for lesson 08's model and experiments (``attnlab.lessons.ablation``) and its
``softmax_backward`` exercise.

The gradient checks compare the hand-derived backward pass of the whole model with
central differences, in float64, on a tiny instance. Training tests use short runs.
"""

import dataclasses
import types

import matplotlib
import numpy as np
import pytest

import attnlab
from attnlab.exercises import check, exercise_ids, solution, solutions
from attnlab.exercises import ex08_ablation as exercise
from attnlab.exercises.arrays import matches, wrong_result
from attnlab.exercises.registry import get_exercise
from attnlab.lessons import ablation as lesson
from attnlab.lessons import retrieval, workers

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def tiny():
    task = lesson.make_task(n_keys=5, n_values=4, n_pairs=3, d_model=4, seed=3)
    params = lesson.init_params(task, d_k=3, seeds=(0, 1), d_v=2)
    rng = np.random.default_rng(11)
    batch = lesson.stack([lesson.sample_batch(task, rng, 4) for _ in range(2)])
    return task, params, batch


def central_differences(params, task, batch, scale, h=1e-6):
    numeric = {}
    for name, value in params.items():
        grad = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            up = {k: v.copy() for k, v in params.items()}
            down = {k: v.copy() for k, v in params.items()}
            up[name][index] += h
            down[name][index] -= h
            grad[index] = (
                lesson.loss_only(up, task, batch, scale).sum()
                - lesson.loss_only(down, task, batch, scale).sum()
            ) / (2 * h)
        numeric[name] = grad
    return numeric


# ---------------------------------------------------------- gradient check


@pytest.mark.parametrize("backward", ["loss_and_grads", "loss_and_grads_factored"])
@pytest.mark.parametrize(
    "scale",
    [1 / np.sqrt(3), 1.0, 3.0, np.array([1.0, 0.25])],
    ids=["scaled", "unscaled", "sharp", "one scale per model"],
)
def test_every_parameter_gradient_matches_central_differences(tiny, scale, backward):
    """Both backward passes: the plain one, and the factored one the lesson's runs use."""
    task, params, batch = tiny
    _, grads, _ = getattr(lesson, backward)(params, task, batch, scale)
    numeric = central_differences(params, task, batch, scale)
    assert set(grads) == set(lesson.PARAMETERS)
    for name in lesson.PARAMETERS:
        assert grads[name].dtype == np.float64 and grads[name].shape == params[name].shape
        np.testing.assert_allclose(grads[name], numeric[name], rtol=1e-5, atol=1e-9, err_msg=name)


def test_one_query_attention_is_attnlabs_attention():
    rng = np.random.default_rng(13)
    u, X = 4 * rng.normal(size=(3, 5, 1, 8)), rng.normal(size=(3, 5, 6, 8))
    grad = rng.normal(size=(3, 5, 1, 8))
    xbar, p = retrieval.one_query_attention(u, X)
    out, weights = attnlab.attention(u, X, X, scale=1.0, return_weights=True)
    np.testing.assert_allclose(xbar, out, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(p, weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        retrieval.one_query_attention_backward(X, p, grad),
        attnlab.attention_backward(u, X, X, grad, scale=1.0)[0],
        rtol=1e-10,
        atol=1e-14,
    )


@pytest.mark.parametrize(("d_model", "d_k"), [(32, 256), (32, 16), (8, 8), (64, 4)])
def test_the_factored_model_is_the_model(d_model, d_k):
    """Same logits, weights, loss, gradients and stats as the plain forward and backward
    passes, whether d_k is larger or smaller than d_model, with one scale per model."""
    task = lesson.make_task(d_model=d_model, seed=5)
    params = lesson.init_params(task, d_k, seeds=(0, 1, 2))
    rng = np.random.default_rng(12)
    batch = lesson.stack([lesson.sample_batch(task, rng, 16) for _ in range(3)])
    scales = np.array([1 / np.sqrt(d_k), 1.0, 0.5])
    plain, factored = (
        lesson.forward(params, task, batch, scales),
        lesson.forward_factored(params, task, batch, scales),
    )
    np.testing.assert_allclose(factored.logits, plain.logits, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(factored.weights, plain.weights, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(factored.o, plain.o, rtol=1e-10, atol=1e-12)
    loss, grads, stats = lesson.loss_and_grads(params, task, batch, scales)
    loss_f, grads_f, stats_f = lesson.loss_and_grads_factored(params, task, batch, scales)
    np.testing.assert_allclose(loss_f, loss, rtol=1e-12)
    for name in lesson.PARAMETERS:
        scale = np.abs(grads[name]).max()
        np.testing.assert_allclose(grads_f[name], grads[name], rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(stats_f["entropy"], stats["entropy"], rtol=1e-10)
    np.testing.assert_array_equal(stats_f["accuracy"], stats["accuracy"])


def test_gradient_check_reports_small_errors_and_catches_a_wrong_gradient(tiny, monkeypatch):
    task, params, batch = tiny
    errors = lesson.gradient_check(params, task, batch, 1.0)
    assert set(errors) == set(lesson.PARAMETERS)
    assert max(errors.values()) < 1e-5
    # A backward pass that forgets the scale on ∂L/∂Q must be caught.
    real = retrieval.attention_backward

    def wrong(Q, K, V, grad_out, scale=None, weights=None, check_finite=True):
        dQ, dK, dV = real(Q, K, V, grad_out, scale=scale, weights=weights)
        return dQ / scale, dK, dV

    monkeypatch.setattr(retrieval, "attention_backward", wrong)
    assert lesson.gradient_check(params, task, batch, 0.5)["W_Q"] > 0.1


def test_gradient_check_of_the_factored_backward_pass(tiny, monkeypatch):
    task, params, batch = tiny
    factored = lesson.loss_and_grads_factored
    errors = lesson.gradient_check(params, task, batch, 0.5, backward=factored)
    assert set(errors) == set(lesson.PARAMETERS) and max(errors.values()) < 1e-5
    # A slip in the one-query attention's backward pass must be caught.
    real = retrieval.one_query_attention_backward
    monkeypatch.setattr(retrieval, "one_query_attention_backward", lambda *a: 2 * real(*a))
    assert lesson.gradient_check(params, task, batch, 0.5, backward=factored)["W_K"] > 0.1


def test_models_with_different_scales_are_independent(tiny):
    task, params, batch = tiny
    scales = np.array([0.5, 2.0])
    loss, grads, stats = lesson.loss_and_grads(params, task, batch, scales)
    for m, scale in enumerate(scales):
        one = {k: v[m : m + 1] for k, v in params.items()}
        part = lesson.Batch(
            *(getattr(batch, n)[m : m + 1] for n in ("keys", "values", "query", "target"))
        )
        loss_m, grads_m, stats_m = lesson.loss_and_grads(one, task, part, float(scale))
        np.testing.assert_allclose(loss[m], loss_m[0], rtol=1e-12)
        for name in lesson.PARAMETERS:
            np.testing.assert_allclose(grads[name][m], grads_m[name][0], rtol=1e-10, atol=1e-14)
        assert stats["accuracy"][m] == stats_m["accuracy"][0]


# ---------------------------------------------------------------- pieces


def test_softmax_cross_entropy_is_minus_log_p_and_its_gradient_is_p_minus_onehot():
    rng = np.random.default_rng(0)
    z = rng.normal(scale=3.0, size=(2, 5, 4))
    y = rng.integers(0, 4, size=(2, 5))
    loss, grad = lesson.softmax_cross_entropy(z, y)
    p = attnlab.softmax(z)
    expected = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0]).mean(axis=1)
    np.testing.assert_allclose(loss, expected, rtol=1e-12)
    np.testing.assert_allclose(grad, (p - np.eye(4)[y]) / 5, atol=1e-15)
    # Through softmax_backward: ∂(−log p_y)/∂p is −1/p_y at the target.
    g = -np.eye(4)[y] / p
    np.testing.assert_allclose(attnlab.softmax_backward(p, g) / 5, grad, atol=1e-14)


def test_softmax_cross_entropy_survives_huge_logits(recwarn):
    z = np.array([[[1000.0, -1000.0, 0.0]]])
    loss, grad = lesson.softmax_cross_entropy(z, np.array([[1]]))
    assert np.isfinite(loss).all() and np.isfinite(grad).all()
    assert loss[0] == pytest.approx(2000.0)
    assert not recwarn.list


def test_linear_and_its_backward_against_einsum():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 7, 5, 4))
    W = rng.normal(size=(3, 4, 600))  # wide enough to be summed in several chunks
    g = rng.normal(size=(3, 7, 5, 600))
    np.testing.assert_allclose(lesson.linear(x, W), np.einsum("mbni,mij->mbnj", x, W), rtol=1e-12)
    grad_x, grad_W = lesson.linear_backward(x, W, g)
    np.testing.assert_allclose(grad_W, np.einsum("mbni,mbnj->mij", x, g), rtol=1e-10)
    np.testing.assert_allclose(grad_x, np.einsum("mbnj,mij->mbni", g, W), rtol=1e-10)
    assert lesson.linear_backward(x, W, g, grad_input=False)[0] is None


def test_sequences_have_distinct_keys_and_the_right_answer():
    task = lesson.make_task()
    b = lesson.sample_batch(task, np.random.default_rng(2), 500)
    assert b.keys.shape == b.values.shape == (500, task.n_pairs)
    assert all(len(set(row)) == task.n_pairs for row in b.keys)
    for keys, values, q, y in zip(b.keys, b.values, b.query, b.target, strict=True):
        (where,) = np.flatnonzero(keys == q)
        assert values[where] == y
    assert b.keys.max() < task.n_keys and b.values.max() < task.n_values
    assert "query k" in lesson.describe(b) and "→ answer v" in lesson.describe(b)
    with pytest.raises(ValueError, match="n_pairs"):
        lesson.make_task(n_keys=4, n_pairs=5)


def test_embeddings_have_unit_variance_and_the_initial_scores_spread_like_root_d_k():
    task = lesson.make_task()
    X, x_q = lesson.embed(task, lesson.sample_batch(task, np.random.default_rng(3), 400))
    assert X.shape == (400, task.n_pairs, task.d_model) and x_q.shape == (400, 1, task.d_model)
    assert X.var() == pytest.approx(1.0, abs=0.15)
    spreads = []
    for d_k in lesson.D_KS:
        s = lesson.initial_scores(task, d_k)
        assert s["var_q"] == pytest.approx(1.0, abs=0.25)
        assert s["var_k"] == pytest.approx(1.0, abs=0.25)
        assert s["score_std"] / np.sqrt(d_k) == pytest.approx(1.0, abs=0.3)
        assert s["entropy_raw"] < s["entropy_scaled"] - 0.5
        spreads.append(s["entropy_raw"])
    assert spreads == sorted(spreads, reverse=True)


def test_divisors_by_name():
    assert lesson.divisor_value("1", 64) == 1.0
    assert lesson.divisor_value("√d_k", 64) == 8.0
    assert lesson.divisor_value("0.5√d_k", 64) == 4.0
    assert lesson.divisor_value("2√d_k", 16) == 8.0
    assert lesson.divisor_value("4√d_k", 64) == 32.0
    assert lesson.divisor_value("d_k", 64) == 64.0
    with pytest.raises(ValueError, match="divisor must be one of"):
        lesson.divisor_value("3", 16)


def test_adam_first_step_moves_every_entry_by_the_learning_rate():
    params = {"w": np.array([1.0, -2.0, 0.5])}
    adam = lesson.Adam(params, lr=0.1)
    adam.step(params, {"w": np.array([1e-4, -30.0, 2.0])})
    np.testing.assert_allclose(params["w"], [0.9, -1.9, 0.4], atol=1e-4)


def test_step_controls_by_name_keep_their_divisor():
    for name in lesson.STEP_CONTROLS:
        assert lesson.divisor_value(name, 64) == 8.0


def test_adam_rates_scale_one_parameters_steps_per_model():
    params = {"w": np.ones((2, 1, 3)), "b": np.ones((2, 3))}
    adam = lesson.Adam(params, lr=0.1, rates={"w": np.array([1.0, 4.0]).reshape(2, 1, 1)})
    grads = {"w": np.full((2, 1, 3), 0.5), "b": np.full((2, 3), 0.5)}
    adam.step(params, grads)
    np.testing.assert_allclose(params["w"][0], 0.9, atol=1e-6)
    np.testing.assert_allclose(params["w"][1], 0.6, atol=1e-6)
    np.testing.assert_allclose(params["b"], 0.9, atol=1e-6)  # no rate: lr as usual


def test_step_controls_change_only_the_learning_rate_of_W_Q_and_W_K(monkeypatch):
    seen = {}
    real = retrieval.Adam.__init__

    def spy(self, params, lr=lesson.LEARNING_RATE, betas=(0.9, 0.999), eps=1e-8, rates=None):
        seen.update({k: np.asarray(v).ravel() for k, v in (rates or {}).items()})
        real(self, params, lr, betas, eps, rates)

    monkeypatch.setattr(retrieval.Adam, "__init__", spy)
    monkeypatch.setattr(workers, "_UNAVAILABLE", True)  # a worker would not see the spy
    task = lesson.make_task(n_keys=5, n_values=4, n_pairs=3, d_model=4, seed=3)
    names = ("√d_k", "√d_k, lr × d_k^¼", "√d_k, init × d_k^¼", "√d_k, large steps")
    runs = lesson.train_divisors(task, 16, names, seeds=(0, 1), steps=2, batch_size=4, keep=(0,))
    assert set(seen) == {"W_Q", "W_K"}
    for factors in seen.values():  # per model: the seeds' models, once per setting
        np.testing.assert_allclose(factors, [1, 1, 2, 2, 1, 1, 4, 4])
    assert [runs[n].scale for n in names] == [0.25] * 4
    # Only the init control starts W_Q and W_K larger (d_k^¼ = 2); nothing else changes.
    start = {n: runs[n].weights[0] for n in names}
    for name in names:
        factor = 2.0 if name == "√d_k, init × d_k^¼" else 1.0
        for k in lesson.PARAMETERS:
            want = start["√d_k"][k] * (factor if k in ("W_Q", "W_K") else 1.0)
            np.testing.assert_array_equal(start[name][k], want)


def test_the_twin_follows_the_unscaled_model():
    np.testing.assert_allclose(lesson.unscaled_as_scaled(16), [2.0, 2.0, 2.0])
    task = lesson.make_task()
    unscaled, twin = lesson.twin_losses(task, d_k=64, steps=8, seeds=(0, 1))
    assert unscaled.shape == twin.shape == (2, 8)
    np.testing.assert_allclose(twin, unscaled, atol=1e-3)
    # Without the factor on the learning rate the two part at once.
    _, _, curves, _ = lesson._fit(task, 64, ("1", "√d_k, init × d_k^¼"), (0, 1), 8, 32, 0.01)
    assert np.abs(curves["loss"][:2, 1:] - curves["loss"][2:, 1:]).max() > 1e-2


def test_init_gain_scales_every_weight_matrix():
    task = lesson.make_task(n_keys=5, n_values=4, n_pairs=3, d_model=4, seed=3)
    one, gentle = (lesson.init_params(task, 8, (0,), gain=g) for g in (1.0, 0.5))
    for k in ("W_Q", "W_K", "W_V", "W_O"):
        np.testing.assert_allclose(gentle[k], 0.5 * one[k])


def test_a_scaled_step_moves_the_scores_further_as_d_k_grows():
    task = lesson.make_task()
    moved = {d_k: lesson.score_change(task, d_k, seeds=(0, 1)) for d_k in (16, 256)}
    scaled = {d_k: m["√d_k"].mean() for d_k, m in moved.items()}
    assert 2 < scaled[256] / scaled[16] < 6  # about √(256 / 16) = 4
    for d_k, m in moved.items():
        assert m["1"].mean() > np.sqrt(d_k) / 2 * m["√d_k"].mean()


def test_steps_matched_starts_as_lr_fixed_and_steps_as_the_scaled_model():
    task = lesson.make_task()
    matched, lr_fixed = lesson.STEPS_MATCHED, lesson.TWIN_CORNERS[2]
    assert lesson.STEP_CONTROLS[matched] == ("√d_k", -0.25, 0.25)
    assert lesson.TWIN_RUNS == (*lesson.TWIN_CORNERS[:3], matched, "1")
    # The start of ÷1, lr fixed (W_Q, W_K × d_k^¼): the same first-step entropy, seed by seed.
    runs = lesson.run_ablation(
        task, d_ks=(64,), divisors=(lr_fixed, matched), seeds=(0, 1), steps=2
    )
    np.testing.assert_allclose(
        runs[(64, matched)].entropy[:, 0], runs[(64, lr_fixed)].entropy[:, 0]
    )
    # The scaled model's first step, within the factor 1.25 the lesson checks; lr fixed's is
    # about d_k^¼ = 4 times larger at d_k = 256.
    moved = lesson.score_change(task, 256, ("√d_k", lr_fixed, matched), steps=1, seeds=(0, 1))
    scaled = moved["√d_k"].mean()
    assert 1 / 1.25 < moved[matched].mean() / scaled < 1.25
    assert 3 < moved[lr_fixed].mean() / scaled < 5


def test_smoothed_curves_and_steps_to_a_level():
    acc = np.array([np.linspace(0, 1, 50), np.full(50, 0.5)])
    run = lesson.Run(16, "√d_k", 0.25, (0, 1), 6, acc, acc, acc, np.ones(2), np.zeros(2))
    smooth = run.smoothed("accuracy", window=5)
    assert smooth.shape == (2, 46)
    np.testing.assert_allclose(smooth[0, 0], acc[0, :5].mean())
    np.testing.assert_allclose(smooth[0, -1], acc[0, -5:].mean())
    steps = run.steps_to(0.9, window=5)
    first = 5 + int(np.argmax(smooth[0] >= 0.9))
    assert steps[0] == first and np.isnan(steps[1])
    assert lesson.steps_text(steps) == f"{first} / never"
    assert lesson.spread([0.5, 1.0, 0.75]) == "0.750 [0.500 – 1.000]"
    assert lesson.spread([0.25]) == "0.250"


# -------------------------------------------------------------- training


@pytest.fixture(scope="module")
def short_runs():
    return lesson.run_ablation(d_ks=(16, 64), divisors=("1", "√d_k"), seeds=(0, 1), steps=80)


def test_the_scaled_model_learns_the_task(short_runs):
    run = short_runs[(16, "√d_k")]
    assert run.loss.shape == run.accuracy.shape == run.entropy.shape == (2, 80)
    assert run.loss[:, 0].mean() == pytest.approx(np.log(16), abs=0.5)
    assert (run.final_accuracy > 0.9).all()
    assert (run.loss[:, -10:].mean(axis=1) < 0.3).all()
    assert run.scale == 0.25 and run.seeds == (0, 1) and run.n_pairs == 6


def test_unscaled_attention_starts_sharper(short_runs):
    for d_k in (16, 64):
        raw, scaled = short_runs[(d_k, "1")], short_runs[(d_k, "√d_k")]
        assert raw.entropy[:, 0].mean() < scaled.entropy[:, 0].mean() - 0.5
    assert short_runs[(64, "1")].entropy[:, 0].mean() < short_runs[(16, "1")].entropy[:, 0].mean()


def test_training_is_deterministic_and_seeds_are_independent(short_runs):
    task = lesson.make_task()
    again = lesson.train(task, 16, "1", seeds=(1,), steps=80)
    np.testing.assert_array_equal(again.loss[0], short_runs[(16, "1")].loss[1])
    np.testing.assert_array_equal(again.final_accuracy[0], short_runs[(16, "1")].final_accuracy[1])


def test_run_ablation_orders_and_reuses_runs(short_runs):
    assert list(short_runs) == [(16, "1"), (16, "√d_k"), (64, "1"), (64, "√d_k")]
    kept = {(16, "1"): short_runs[(16, "1")]}
    more = lesson.run_ablation(
        d_ks=(16,), divisors=("1", "2√d_k"), seeds=(0, 1), steps=80, reuse=kept
    )
    assert more[(16, "1")] is kept[(16, "1")]
    assert list(more) == [(16, "1"), (16, "2√d_k")]


def test_the_models_split_into_two_groups_as_evenly_as_a_cut_allows():
    divisors, seeds = ("1", "√d_k", "2√d_k", "d_k"), (0, 1, 2)
    assert lesson._groups(divisors, seeds) == [(divisors[:2], seeds), (divisors[2:], seeds)]
    assert lesson._groups(("√d_k",), seeds) == [(("√d_k",), (0,)), (("√d_k",), (1, 2))]
    assert lesson._groups(divisors[:3], (0, 1)) == [(divisors[:3], (0,)), (divisors[:3], (1,))]


@pytest.mark.skipif(workers._cores() < 2, reason="the second process runs only on 2 cores")
def test_a_second_process_gives_the_numbers_of_one_process(monkeypatch):
    # Small enough to run in a moment, big enough to be split into two groups.
    monkeypatch.setattr(lesson, "_GROUP_WORK", 1)
    task = lesson.make_task()
    divisors, seeds = ("1", "√d_k", "2√d_k"), (0, 1)
    runs = {}
    replies = []
    answer = workers._answer

    def answer_and_note(*args):
        replies.append(answer(*args))
        return replies[-1]

    monkeypatch.setattr(workers, "_answer", answer_and_note)
    for in_processes in (False, True):
        # Without the worker, all the models train here in one pass.
        monkeypatch.setattr(workers, "_WORKER", None)
        monkeypatch.setattr(workers, "_UNAVAILABLE", not in_processes)
        monkeypatch.setattr(workers, "_GREETED", False)
        sent = workers._JOB
        runs[in_processes] = lesson.train_divisors(task, 16, divisors, seeds, steps=6, keep=(0, 3))
        # With the worker, a group really went to it, and came back trained (not handed back).
        assert (workers._JOB > sent and workers._WORKER is not None) == in_processes
        assert [reply[0] for reply in replies] == [True] * in_processes
        workers._stop()
    for d in divisors:
        one, two = runs[False][d], runs[True][d]
        assert one.seeds == two.seeds == seeds and one.scale == two.scale
        for name in ("loss", "accuracy", "entropy", "final_accuracy", "final_entropy"):
            np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
        for t in (0, 3):
            for name in lesson.PARAMETERS:
                np.testing.assert_array_equal(one.weights[t][name], two.weights[t][name])


@pytest.mark.parametrize(
    "divisors, seeds",
    [(("1", "1"), (0, 1)), (("√d_k",), (2, 2, 0)), (("1", "1", "2√d_k"), (1, 0))],
)
def test_a_divisor_or_seed_given_twice_keeps_its_rows_when_the_models_split(
    monkeypatch, divisors, seeds
):
    # The split's bookkeeping alone, on any number of cores: the groups train one after
    # the other here, and their rows must come back in the order of one pass.
    monkeypatch.setattr(lesson, "available", lambda: True)
    monkeypatch.setattr(lesson, "run_in_two", lambda f, jobs: [f(*job) for job in jobs])
    task = lesson.make_task()
    runs = {}
    for split in (False, True):
        monkeypatch.setattr(lesson, "_GROUP_WORK", 1 if split else 1 << 62)
        runs[split] = lesson._fit_on_cores(task, 16, divisors, seeds, 4, 8, 1e-2, (3,), 1.0)
    for name in ("loss", "accuracy"):
        np.testing.assert_array_equal(runs[False][2][name], runs[True][2][name])
    for name in lesson.PARAMETERS:
        np.testing.assert_array_equal(runs[False][3][3][name], runs[True][3][3][name])
    assert not np.array_equal(runs[True][2]["loss"][0], runs[True][2]["loss"][-1])


def test_a_model_trained_in_a_group_is_the_model_trained_alone(monkeypatch):
    monkeypatch.setattr(lesson, "_GROUP_WORK", 1)
    task = lesson.make_task()
    grouped = lesson.train_divisors(task, 16, ("√d_k", "2√d_k"), (0, 1), steps=6)
    for d in ("√d_k", "2√d_k"):
        for seed in (0, 1):
            alone = lesson.train_divisors(task, 16, (d,), (seed,), steps=6)[d]
            # The same seed's weights and batches, and nothing shared between models:
            # the same numbers to the last bit.
            np.testing.assert_array_equal(alone.loss[0], grouped[d].loss[seed])
            np.testing.assert_array_equal(alone.final_accuracy[0], grouped[d].final_accuracy[seed])
            np.testing.assert_array_equal(alone.final_entropy[0], grouped[d].final_entropy[seed])


def test_evaluation_does_not_depend_on_how_many_models_there_are():
    task = lesson.make_task()
    params = lesson.init_params(task, 16, seeds=tuple(range(10)))
    batch = lesson.evaluation_batch(task, 10, size=100)
    scales = np.linspace(0.1, 1.0, 10)
    every = lesson.evaluate(params, task, batch, scales)
    for m in (0, 7, 9):
        one = lesson.evaluate(
            {k: v[m : m + 1] for k, v in params.items()},
            task,
            lesson.evaluation_batch(task, 1, size=100),
            scales[m : m + 1],
        )
        assert one["accuracy"][0] == every["accuracy"][m]
        assert one["entropy"][0] == every["entropy"][m]


def test_evaluation_in_chunks_matches_one_pass(short_runs):
    task = lesson.make_task()
    params = lesson.init_params(task, 16, seeds=(0, 1))
    batch = lesson.evaluation_batch(task, 2, size=100)
    whole = lesson.evaluate(params, task, batch, 0.25, chunk=100)
    parts = lesson.evaluate(params, task, batch, 0.25, chunk=30)
    np.testing.assert_allclose(whole["accuracy"], parts["accuracy"])
    np.testing.assert_allclose(whole["entropy"], parts["entropy"], rtol=1e-12)


def test_start_of_training_shows_saturated_rows_without_scaling():
    task = lesson.make_task()
    raw = lesson.start_of_training(task, 256, "1")
    scaled = lesson.start_of_training(task, 256, "√d_k")
    assert raw["saturated"] > 0.3 and scaled["saturated"] < 0.05
    assert raw["median_grad_s"] < scaled["median_grad_s"] / 10


def test_tables_and_figures(short_runs, capsys):
    lesson.print_table(short_runs, divisors=("√d_k", "1"))
    out = capsys.readouterr().out
    assert "steps to 90%" in out and out.count("\n") == 2 + 4
    rows = lesson.summary_rows(short_runs)
    assert [(r["d_k"], r["divisor"]) for r in rows] == list(short_runs)
    fig = lesson.plot_curves(short_runs, title="t")
    assert len(fig.axes) == 4
    assert fig.axes[0].get_ylabel() == "accuracy (fresh batches)"
    fig = lesson.plot_curves(short_runs, entropy_row=False)
    assert len(fig.axes) == 2
    fig = lesson.plot_divisor_summary(short_runs)
    assert len(fig.axes[0].get_legend().get_texts()) == 2
    matplotlib.pyplot.close("all")


def _with(run, **changes):
    """A copy of a Run with some of its curves replaced (to contradict a claim)."""
    return dataclasses.replace(run, **changes)


def test_claims_hold_on_the_lessons_runs_and_each_one_can_fail(short_runs):
    # Three sizes: the claims compare the smallest, the middle and the largest d_k.
    runs = dict(short_runs)
    runs.update(lesson.run_ablation(d_ks=(256,), divisors=("1", "√d_k"), seeds=(0, 1), steps=80))
    texts = [c.text for c in lesson.claims(runs)]
    assert len(texts) == 4  # the two about divisors need all four divisors
    # Each claim is a real test: a run that contradicts it turns it to False.
    scaled, raw = runs[(256, "√d_k")], runs[(256, "1")]
    slow = _with(scaled, accuracy=np.zeros_like(scaled.accuracy))
    same = _with(raw, final_accuracy=scaled.final_accuracy.copy())
    shaky = _with(runs[(16, "1")], final_accuracy=np.array([0.5, 1.0]))
    early = _with(runs[(64, "1")], accuracy=np.ones_like(runs[(64, "1")].accuracy))
    for key, broken, index in [
        ((16, "1"), shaky, 0),
        ((64, "1"), early, 1),
        ((256, "√d_k"), slow, 2),
        ((256, "1"), same, 3),
    ]:
        claims = lesson.claims({**runs, key: broken})
        assert not claims[index].holds, texts[index]


def test_claims_print_a_mark_for_each(short_runs, capsys):
    runs = dict(short_runs)
    runs[(256, "1")], runs[(256, "√d_k")] = runs[(64, "1")], runs[(64, "√d_k")]
    lesson.print_claims(runs)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert all(line.startswith(("✓ ", "✗ (not on this run) ")) for line in lines)


@pytest.fixture(scope="module")
def twins():
    # As in the lesson: the fifth run (steps matched) at the two larger sizes only.
    kw = dict(seeds=(0, 1), steps=60)
    runs = lesson.run_ablation(d_ks=(16,), divisors=lesson.TWIN_CORNERS, **kw)
    return lesson.run_ablation(d_ks=(64, 256), divisors=lesson.TWIN_RUNS, reuse=runs, **kw)


def test_twin_table_claims_and_figure(twins, capsys):
    lesson.print_twins(twins)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 3 * len(lesson.TWIN_CORNERS) + 2
    table = "\n".join(lines)
    assert "÷1, lr fixed         × d_k^¼   × 1" in table
    assert "÷1, init fixed       × 1       × d_k^¼" in table
    assert "÷1 (no scaling)      × d_k^¼   × d_k^¼" in table
    assert "÷1, steps matched    × d_k^¼   ÷ d_k^¼" in table
    assert not any(line.startswith("  16  ÷1, steps matched") for line in lines)
    assert "final accuracy" in lines[0]
    found = lesson.twin_claims(twins)
    assert len(found) == 7
    lesson.print_claims(found)
    assert len(capsys.readouterr().out.splitlines()) == 7
    four = {k: r for k, r in twins.items() if k[1] != lesson.STEPS_MATCHED}
    assert len(lesson.twin_claims(four)) == 5  # no fifth run, no claims about it
    fig = lesson.plot_curves(twins, divisors=lesson.TWIN_RUNS, entropy_row=False)
    assert len(fig.axes[0].get_lines()) >= len(lesson.TWIN_CORNERS)
    # The legend names all five runs once, in the order asked for, though d_k = 16 has four.
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [lesson.PLOT_LABELS[d] for d in lesson.TWIN_RUNS]
    matched = lesson.PLOT_LABELS[lesson.STEPS_MATCHED]
    assert matched not in [line.get_label() for line in fig.axes[0].get_lines()]
    assert {line.get_label(): line.get_linestyle() for line in fig.axes[1].get_lines()}[
        matched
    ] == "--"
    # The middle corners are dashed, without bands, and labelled in mathtext.
    styles = {line.get_label(): line.get_linestyle() for line in fig.axes[0].get_lines()}
    for corner in lesson.TWIN_CORNERS[1:3]:
        assert styles[lesson.PLOT_LABELS[corner]] == "--"
        assert "$" in lesson.PLOT_LABELS[corner]
    assert len(fig.axes[0].collections) == 2  # the bands of ÷√d_k and ÷1 only
    matplotlib.pyplot.close("all")


def test_each_twin_claim_can_hold_and_fail(twins):
    lr, init = lesson.TWIN_CORNERS[1], lesson.TWIN_CORNERS[2]

    def with_accuracy(runs, changes, finals=()):
        out = dict(runs)
        for key, run in runs.items():
            value = changes.get(key, 0.9)
            if isinstance(value, tuple):  # (accuracy over the first 50 steps, after them)
                accuracy = np.full_like(run.accuracy, value[1])
                accuracy[:, :50] = value[0]
            else:
                accuracy = np.full_like(run.accuracy, value)
            final = np.full_like(run.final_accuracy, dict(finals).get(key, 0.99))
            out[key] = _with(run, accuracy=accuracy, final_accuracy=final)
        return out

    ideal = {(d, "√d_k"): 0.9 for d in (16, 64, 256)}
    ideal.update({(64, lr): 0.89, (64, init): 0.8, (256, lr): (0.7, 0.7), (256, init): 0.6})
    ideal.update({(16, lr): 0.9, (16, init): 0.85, (16, "1"): 0.85, (64, "1"): 0.7})
    ideal[(256, "1")] = 0.6
    matched = lesson.STEPS_MATCHED
    ideal.update({(64, matched): 0.75, (256, matched): 0.45})  # ÷1 at 256: 0.3 below ÷√d_k
    finals = {(256, lr): 0.9, (256, "1"): 0.88, (256, init): 0.98}
    assert all(c.holds for c in lesson.twin_claims(with_accuracy(twins, ideal, finals)))
    for change, final, index in [
        ({(64, lr): 0.8}, {}, 0),
        ({(64, init): 0.87}, {}, 1),
        ({(256, lr): (0.85, 0.85)}, {}, 2),
        ({(256, lr): (0.62, 0.7)}, {}, 3),
        ({}, {(256, lr): 0.96}, 4),
        ({}, {(256, "1"): 0.96}, 4),
        ({(64, matched): 0.85}, {}, 5),
        ({(256, matched): 0.85}, {}, 5),
        ({(256, matched): 0.58}, {}, 6),
    ]:
        broken = with_accuracy(twins, {**ideal, **change}, {**finals, **final})
        assert not lesson.twin_claims(broken)[index].holds, index


def test_learning_rate_sweep_and_its_claims(capsys):
    task = lesson.make_task()
    kw = dict(d_ks=(16,), seeds=(0, 1), steps=20)
    sweep = lesson.lr_sweep(task, lrs=(0.01, 0.03), **kw)
    assert set(sweep) == {(16, "√d_k"), (16, "1")}
    assert list(sweep[(16, "1")]) == [0.01, 0.03]
    run = lesson.train_divisors(task, 16, ("1",), seeds=(0, 1), steps=20, lr=0.03)["1"]
    found = sweep[(16, "1")][0.03]
    np.testing.assert_allclose(lesson.mean_accuracy(found), lesson.mean_accuracy(run))
    np.testing.assert_allclose(found.final_accuracy, run.final_accuracy)
    # A grid per divisor; runs at the lesson's rate are taken from the ablation's.
    ablation = lesson.run_ablation(task, divisors=("√d_k", "1"), **kw)
    fake = {
        k: _with(r, accuracy=np.full_like(r.accuracy, 0.5), final_accuracy=np.full(2, 0.25))
        for k, r in ablation.items()
    }
    grids = lesson.lr_sweep(task, lrs={"√d_k": (0.01,), "1": (0.003, 0.01)}, reuse=fake, **kw)
    assert list(grids[(16, "√d_k")]) == [0.01] and list(grids[(16, "1")]) == [0.003, 0.01]
    assert grids[(16, "1")][0.01] is fake[(16, "1")]
    assert not np.allclose(lesson.mean_accuracy(grids[(16, "1")][0.003]), 0.5)
    lesson.print_sweep(grids)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and "lr 0.003" in out[0] and "final accuracy" in out[1]
    assert out[2].split()[2] == "-" and "0.500 / 0.250" in out[3]

    def faked(means, finals=None):  # (d_k, divisor) → {lr: mean accuracy}, {lr: final}
        finals = finals or {}

        def run(key, lr, m):
            final = finals.get(key, {}).get(lr, 0.999)
            return _with(
                ablation[(16, "1")],
                accuracy=np.full((2, 20), m),
                final_accuracy=np.full(2, final),
            )

        return {k: {lr: run(k, lr, m) for lr, m in v.items()} for k, v in means.items()}

    good = {
        (64, "√d_k"): {0.01: 0.91, 0.03: 0.93},
        (64, "1"): {0.003: 0.7, 0.01: 0.8},
        (256, "√d_k"): {0.01: 0.92, 0.03: 0.9},
        (256, "1"): {0.003: 0.7, 0.01: 0.68},
    }
    good_finals = {(64, "√d_k"): {0.03: 0.97}, (256, "√d_k"): {0.03: 0.98}}
    assert [c.holds for c in lesson.sweep_claims(faked(good, good_finals))] == [True] * 4
    for change, final, index in [
        ({(64, "1"): {0.003: 0.7, 0.01: 0.86}}, {}, 0),
        ({}, {(256, "1"): {0.003: 0.9, 0.01: 0.85}}, 1),
        ({(64, "√d_k"): {0.01: 0.93, 0.03: 0.92}}, {}, 2),
        ({}, {(64, "√d_k"): {0.03: 0.995}}, 2),
        ({(256, "√d_k"): {0.01: 0.92, 0.03: 0.925}}, {}, 3),
        ({}, {(256, "√d_k"): {0.03: 1.0}}, 3),
    ]:
        broken = faked({**good, **change}, {**good_finals, **final})
        assert not lesson.sweep_claims(broken)[index].holds, index
    # With one grid for both divisors at one d_k, only the first two claims are made.
    assert len(lesson.sweep_claims(sweep)) == 2


def test_initialisation_gaps_and_their_claims(twins, capsys):
    def gapped(gaps):
        out = {}
        for d_k, gap in gaps.items():
            for divisor, acc in (("√d_k", 0.9), ("1", 0.9 - gap)):
                run = twins[(d_k, divisor)]
                out[(d_k, divisor)] = _with(run, accuracy=np.full_like(run.accuracy, acc))
        return out

    unit = gapped({16: 0.03, 64: 0.13, 256: 0.25})
    gentle = gapped({16: 0.0, 64: 0.05, 256: 0.15})
    assert all(c.holds for c in lesson.gap_claims(unit, gentle))
    for gaps, index in [
        ({16: 0.05, 64: 0.05, 256: 0.15}, 0),
        ({16: 0.0, 64: 0.12, 256: 0.15}, 1),
        ({16: 0.0, 64: 0.05, 256: 0.05}, 2),
    ]:
        assert not lesson.gap_claims(unit, gapped(gaps))[index].holds
    lesson.print_gaps(unit, gentle)
    out = capsys.readouterr().out
    assert out.count("\n") == 3 and "PyTorch's default variance: 0.150" in out


def test_saturation_after_starts_where_start_of_training_does_and_grows_without_scaling():
    task = lesson.make_task()
    for gain in (1.0, 1 / np.sqrt(3)):
        share = lesson.saturation_after(task, 256, "1", steps=10, init_gain=gain)
        start = lesson.start_of_training(task, 256, "1", init_gain=gain)["saturated"]
        assert share["start"] == start
        assert share["after"] > max(share["start"], 0.5)
        assert 0.0 < share["saturated_right"] < 1.0 and 0.0 < share["right"] < 1.0
    scaled = lesson.saturation_after(task, 256, "√d_k", steps=10)
    assert scaled["start"] == 0.0 and scaled["after"] < 0.2
    # The scaled model finds the right pair first.
    assert scaled["right"] > lesson.saturation_after(task, 256, "1", steps=10)["right"]


def test_saturation_after_counts_right_rows_by_the_query_key():
    task = lesson.make_task()
    share = lesson.saturation_after(task, 16, "1", steps=0, seeds=(0,), size=64)
    params = lesson.init_params(task, 16, (0,))
    batch = lesson.evaluation_batch(task, 1, 64, seed=99)
    w = lesson.forward(params, task, batch, 1.0).weights[..., 0, :]
    right = w.argmax(axis=-1) == np.argmax(batch.keys == batch.query[..., None], axis=-1)
    full = w.max(axis=-1) > 0.99
    assert share["right"] == right.mean() and share["saturated_right"] == right[full].mean()
    assert np.isnan(lesson.saturation_after(task, 16, "√d_k", 0, (0,), 64)["saturated_right"])


def test_width_ablation_reuses_the_narrow_runs_and_its_claims_can_fail(capsys):
    task = lesson.make_task(d_model=8)
    kw = dict(d_k=16, seeds=(0, 1), steps=30)
    widths = lesson.width_ablation(task, wide=32, lrs=(0.01, 0.003), **kw)
    assert list(widths) == [
        (8, 0.01, "√d_k"),
        (8, 0.01, "1"),
        (32, 0.01, "√d_k"),
        (32, 0.01, "1"),
        (32, 0.003, "√d_k"),
        (32, 0.003, "1"),
    ]
    # The wide model is the lesson's own task at d_model = 32: the same runs.
    same = lesson.train(lesson.make_task(), 16, "1", seeds=(0, 1), steps=30, lr=0.003)
    np.testing.assert_array_equal(widths[(32, 0.003, "1")].loss, same.loss)
    # The narrow runs come from the ablation's runs where they are given.
    ablation = lesson.run_ablation(task, d_ks=(16,), divisors=("√d_k", "1"), seeds=(0, 1), steps=30)
    again = lesson.width_ablation(task, ablation, wide=32, lrs=(0.003,), **kw)
    assert again[(8, 0.01, "1")] is ablation[(16, "1")]
    lesson.print_widths(widths)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 6 and "steps to 90%" in lines[0] and "0.003" in lines[-1]

    def faked(auc, final, steps_in):
        out = {}
        for key, run in widths.items():
            accuracy = np.full_like(run.accuracy, 0.0)
            accuracy[:, steps_in[key] :] = 1.0  # reaches 90% there
            accuracy += auc[key] - accuracy.mean(axis=1, keepdims=True)
            out[key] = _with(
                run,
                accuracy=accuracy,
                final_accuracy=np.full_like(run.final_accuracy, final[key]),
            )
        return out

    keys = list(widths)
    auc = dict(zip(keys, (0.9, 0.8, 0.9, 0.5, 0.9, 0.8), strict=True))
    final = dict(zip(keys, (1.0, 0.97, 0.94, 0.6, 1.0, 0.96), strict=True))
    steps_in = dict(zip(keys, (5, 15, 5, 25, 5, 15), strict=True))
    good = faked(auc, final, steps_in)
    assert all(c.holds for c in lesson.width_claims(good))
    for auc_change, final_change, steps_change, index in [
        ({(32, 0.01, "1"): 0.75}, {}, {}, 0),
        ({}, {}, {(32, 0.003, "1"): 4}, 1),
        ({(32, 0.003, "1"): 0.88}, {}, {}, 2),
        ({}, {(32, 0.01, "√d_k"): 0.99}, {}, 3),
    ]:
        broken = faked(
            {**auc, **auc_change}, {**final, **final_change}, {**steps_in, **steps_change}
        )
        assert not lesson.width_claims(broken)[index].holds, index


def test_attention_maps_before_and_after_training():
    task = lesson.make_task()
    maps = lesson.attention_maps(task, d_k=64, n_sequences=6, steps=120)
    assert set(maps.start) == set(maps.end) == {"√d_k", "1"}
    assert maps.start["1"].shape == maps.end["√d_k"].shape == (6, task.n_pairs)
    np.testing.assert_allclose(maps.end["1"].sum(axis=-1), 1.0)
    # The right pair holds the query's key: the trained scaled model finds it.
    assert (maps.end["√d_k"].argmax(axis=-1) == maps.right).all()
    # Unscaled rows start sharper than scaled ones.
    assert maps.start["1"].max(axis=-1).mean() > maps.start["√d_k"].max(axis=-1).mean()
    found = lesson.map_claims(maps)
    assert len(found) == 4 and found[2].holds
    wrong = dataclasses.replace(maps, right=(maps.right + 1) % task.n_pairs)
    assert not lesson.map_claims(wrong)[2].holds and not lesson.map_claims(wrong)[3].holds


def test_attention_maps_keep_the_weights_along_the_way():
    task = lesson.make_task()
    maps = lesson.attention_maps(task, d_k=64, n_sequences=6, steps=30, keep=(0, 5, 20))
    assert sorted(maps.steps) == [0, 5, 20, 30]
    for d in ("√d_k", "1"):
        np.testing.assert_array_equal(maps.steps[0][d], maps.start[d])
        np.testing.assert_array_equal(maps.steps[30][d], maps.end[d])
    # The weights after 20 steps are those of a run that stops there.
    short = lesson.attention_maps(task, d_k=64, n_sequences=6, steps=20)
    np.testing.assert_allclose(maps.steps[20]["√d_k"], short.end["√d_k"])
    # With step 20 kept, a claim about it joins in, third.
    found = lesson.map_claims(maps)
    assert len(found) == 5 and "after 20 steps" in found[2].text
    onehot = np.eye(task.n_pairs)
    right, wrong = onehot[maps.right], onehot[(maps.right + 1) % task.n_pairs]
    for scaled, unscaled, holds in [
        (right, wrong, True),
        (right, right, False),
        (wrong, wrong, False),
    ]:
        early = dataclasses.replace(maps, steps={**maps.steps, 20: {"√d_k": scaled, "1": unscaled}})
        assert lesson.map_claims(early)[2].holds == holds
    with pytest.raises(ValueError, match="keep must hold step counts"):
        lesson.attention_maps(task, d_k=64, steps=10, keep=(11,))
    # The static figure: ÷1 above ÷√d_k, one column per step asked for.
    fig = lesson.plot_maps(maps, steps=(0, 5, 30))
    assert len(fig.axes) == 2 * 3 + 1  # the maps and one colour bar
    np.testing.assert_array_equal(fig.axes[1].images[0].get_array(), maps.steps[5]["1"])
    np.testing.assert_array_equal(fig.axes[5].images[0].get_array(), maps.end["√d_k"])
    with pytest.raises(ValueError, match="were not kept"):
        lesson.plot_maps(maps, steps=(0, 10))
    matplotlib.pyplot.close("all")


def test_a_nudge_grows_without_scaling_and_stays_small_with_it():
    task = lesson.make_task()
    growth = lesson.nudge_growth(task, d_k=256, steps=100)
    assert set(growth) == {"√d_k", "1"} and growth["1"].shape == (100,)
    assert growth["√d_k"].max() < 1e-8 < 0.1 < growth["1"].max()
    found = lesson.nudge_claims(growth)
    assert [c.holds for c in found] == [True, True] and "in all 100 steps" in found[1].text
    flat = {"√d_k": growth["√d_k"], "1": np.full(100, 1e-9)}
    assert not lesson.nudge_claims(flat)[0].holds
    assert not lesson.nudge_claims({**growth, "√d_k": growth["1"]})[1].holds
    # Without a nudge the two copies of a run are the same, to the last bit.
    same = lesson.nudge_growth(task, d_k=16, steps=5, nudge=0.0)
    assert not any(v.any() for v in same.values())
    fig = lesson.plot_nudge_growth(growth)
    assert len(fig.axes[0].lines) == 2 + 1  # two runs and the size of the nudge
    matplotlib.pyplot.close("all")


# --------------------------------------------------- exercise: softmax_backward


def correct_formula(p, grad_p):
    return p * (grad_p - np.sum(grad_p * p, axis=1, keepdims=True))


def correct_loop_of_jacobians(p, grad_p):
    out = np.zeros_like(p)
    for r in range(p.shape[0]):
        J = np.diag(p[r]) - np.outer(p[r], p[r])
        out[r] = J.T @ grad_p[r]
    return out


def correct_batched_jacobian(p, grad_p):
    J = p[:, :, None] * (np.eye(p.shape[1]) - p[:, None, :])
    return np.einsum("rij,ri->rj", J, grad_p)


def correct_column_of_dots(p, grad_p):
    dots = np.array([g @ q for g, q in zip(grad_p, p, strict=True)])
    return p * (grad_p - dots[:, None])


def correct_float32(p, grad_p):
    return correct_formula(p.astype(np.float32), grad_p.astype(np.float32))


@pytest.mark.parametrize(
    "answer",
    [
        correct_formula,
        correct_loop_of_jacobians,
        correct_batched_jacobian,
        correct_column_of_dots,
        correct_float32,
        solutions.softmax_backward,
    ],
)
def test_correct_answers_in_any_style_pass(answer):
    result = check("softmax_backward", answer)
    assert result.passed, result.message
    assert "all 4 test inputs" in result.message


def wrong_unchanged(p, grad_p):
    return grad_p


def wrong_no_p_factor(p, grad_p):
    return grad_p - (grad_p * p).sum(axis=-1, keepdims=True)


def wrong_no_subtraction(p, grad_p):
    return p * grad_p


def wrong_sign(p, grad_p):
    return p * ((grad_p * p).sum(axis=-1, keepdims=True) - grad_p)


def wrong_axis(p, grad_p):
    return p * (grad_p - (grad_p * p).sum(axis=0, keepdims=True))


def wrong_no_keepdims(p, grad_p):
    return p * (grad_p - (grad_p * p).sum(axis=-1))


def wrong_first_row_jacobian(p, grad_p):
    J = np.diag(p[0]) - np.outer(p[0], p[0])
    return (J @ grad_p.T).T


def wrong_one_big_softmax(p, grad_p):
    flat = p.flatten()
    J = np.diag(flat) - np.outer(flat, flat)
    return (grad_p.flatten() @ J).reshape(p.shape)


def wrong_transposed(p, grad_p):
    return (p * (grad_p - (grad_p * p).sum(axis=-1, keepdims=True))).T


def wrong_plain_sum(p, grad_p):
    return p * (grad_p - grad_p.sum(axis=1, keepdims=True))


def wrong_mean(p, grad_p):
    return p * (grad_p - np.mean(grad_p, axis=-1, keepdims=True))


def wrong_jacobian_diagonal(p, grad_p):
    return p * (1 - p) * grad_p  # only the diagonal of diag(p) − p pᵀ


def wrong_softmax_of_p(p, grad_p):
    p = attnlab.softmax(p)  # p is already the softmax's output
    return p * (grad_p - (grad_p * p).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (wrong_unchanged, "returned grad_p unchanged"),
        (wrong_no_p_factor, "forgot the factor p ⊙"),
        (wrong_no_subtraction, "forgot to subtract Σ_j g_j p_j"),
        (wrong_sign, "sign is flipped"),
        (wrong_axis, "summed over the wrong axis"),
        (wrong_no_keepdims, "without `keepdims=True`"),
        (wrong_first_row_jacobian, "Jacobian of the first row for every row"),
        (wrong_one_big_softmax, "whole array as one softmax"),
        (wrong_transposed, "returned the transpose"),
        (wrong_plain_sum, "plain sum"),
        (wrong_mean, "mean of g"),
        (wrong_softmax_of_p, "applied softmax to p again"),
        (wrong_jacobian_diagonal, "only the diagonal of the Jacobian"),
    ],
)
def test_classic_mistakes_fail_and_are_named(answer, phrase):
    result = check("softmax_backward", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    assert "Expected" in result.message and "returned" in result.message


def test_every_mistake_differs_from_the_reference_on_the_first_input():
    case = exercise.backward_cases()[0]
    want = attnlab.softmax_backward(**case.inputs)
    for mistake in exercise.BACKWARD_MISTAKES:
        assert not np.allclose(mistake.compute(*case.inputs.values()), want), mistake.message


def test_an_unknown_wrong_answer_is_told_that_rows_sum_to_zero():
    result = check("softmax_backward", lambda p, grad_p: p * grad_p - 0.1 * p)
    assert not result.passed
    assert "should sum to 0" in result.message


def test_missing_keepdims_on_other_shapes_gets_the_shape_hint():
    def answer(p, grad_p):
        if p.shape[0] == p.shape[1]:
            return correct_formula(p, grad_p)
        return wrong_no_keepdims(p, grad_p)

    result = check("softmax_backward", answer)
    assert not result.passed
    assert "keepdims=True" in result.message


def test_the_exercise_is_registered_with_its_lesson_and_solution():
    assert "softmax_backward" in exercise_ids()
    record = get_exercise("softmax_backward")
    assert record.lesson == "notebooks/08_does_scaling_matter.ipynb"
    code = solution("softmax_backward")
    assert code.startswith("def softmax_backward(p, grad_p):")
    assert "return" in code and "raise" not in code
    assert "notebooks/08_does_scaling_matter.ipynb" in code._repr_markdown_()


def test_reference_inputs_are_softmax_rows():
    for case in exercise.backward_cases():
        p = case.inputs["p"]
        assert p.shape == case.inputs["grad_p"].shape and p.ndim == 2
        np.testing.assert_allclose(p.sum(axis=-1), 1.0)
        assert (p > 0).all()


def test_score_growth_starts_from_the_initial_weights_and_follows_training():
    task = lesson.make_task(n_keys=5, n_values=4, n_pairs=3, d_model=4, seed=3)
    runs = lesson.train_divisors(task, 8, ("√d_k", "1"), seeds=(0, 1), steps=3, keep=(0, 3))
    growth = lesson.score_growth(task, runs)
    scaled, raw = growth["√d_k"], growth["1"]
    np.testing.assert_array_equal(scaled["steps"], [0, 3])
    assert scaled["spread"].shape == (2, 2) and scaled["norm_W_Q"].shape == (2, 2)
    # The same initial weights: the same W_Q, and scores √8 times as spread without 1/√d_k.
    np.testing.assert_allclose(scaled["norm_W_Q"][:, 0], raw["norm_W_Q"][:, 0])
    np.testing.assert_allclose(raw["spread"][:, 0], np.sqrt(8) * scaled["spread"][:, 0])
    start = retrieval.init_params(task, 8, (0, 1))["W_Q"]
    np.testing.assert_allclose(scaled["norm_W_Q"][:, 0], np.linalg.norm(start, axis=(1, 2)))
    # Training moves W_Q.
    assert (scaled["norm_W_Q"][:, 1] != scaled["norm_W_Q"][:, 0]).all()


def test_kept_weights_are_those_of_a_shorter_run():
    # The first t steps of a longer run are a run of t steps: score_growth reads the
    # weights a run kept instead of training again.
    task = lesson.make_task(n_keys=5, n_values=4, n_pairs=3, d_model=4, seed=3)
    long = lesson.train_divisors(task, 8, ("1",), seeds=(0,), steps=4, keep=(2, 4))["1"]
    short = lesson.train_divisors(task, 8, ("1",), seeds=(0,), steps=2, keep=(2,))["1"]
    for name, value in short.weights[2].items():
        np.testing.assert_array_equal(long.weights[2][name], value)
    np.testing.assert_array_equal(long.loss[:, :2], short.loss)


def test_score_growth_needs_kept_weights():
    task = lesson.make_task(n_keys=5, n_values=4, n_pairs=3, d_model=4, seed=3)
    runs = lesson.train_divisors(task, 8, ("1",), seeds=(0,), steps=1)
    with pytest.raises(ValueError, match="keep"):
        lesson.score_growth(task, runs)
    with pytest.raises(ValueError, match="keep"):
        lesson.train_divisors(task, 8, ("1",), seeds=(0,), steps=1, keep=(2,))


def test_claims_about_the_other_divisors(short_runs):
    base = short_runs[(16, "√d_k")]
    accuracy = {"1": 0.7, "d_k": 0.85}
    fake = {
        (d_k, d): _with(
            base, d_k=d_k, divisor=d, accuracy=np.full_like(base.accuracy, accuracy.get(d, 0.9))
        )
        for d_k in (16, 64, 256)
        for d in lesson.DIVISORS
    }
    found = lesson.claims(fake)
    assert len(found) == 8 and all(c.holds for c in found[4:])
    for key, value, index in [((64, "4√d_k"), 0.8, 6), ((256, "d_k"), 0.89, 7)]:
        broken = {**fake, key: _with(fake[key], accuracy=np.full_like(base.accuracy, value))}
        assert not lesson.claims(broken)[index].holds


# ------------------------------------------------- exercise: attention_grad_q


grad_q = solutions.attention_grad_q  # not the course's own: the checker refuses that


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda Q, K, V, G, s: s * grad_q(Q, K, V, G, s), "applied `scale` twice"),
        (
            lambda Q, K, V, G, s: (
                s * attnlab.softmax_backward(attnlab.softmax(s * Q @ K.T), G @ V.T)
            ),
            "returned ∂L/∂S",
        ),
        (
            lambda Q, K, V, G, s: (
                s * attnlab.softmax_backward(attnlab.softmax(s * Q @ K.T, axis=0), G @ V.T) @ K
            ),
            "softmax down each column",
        ),
        (
            lambda Q, K, V, G, s: (
                s * attnlab.softmax_backward(G @ V.T, attnlab.softmax(s * Q @ K.T)) @ K
            ),
            "swapped the arguments of `softmax_backward`",
        ),
        (lambda Q, K, V, G, s: attnlab.softmax(s * Q @ K.T).T @ G, "which is ∂L/∂V"),
        (
            lambda Q, K, V, G, s: s * (attnlab.softmax(s * Q @ K.T) * (G @ V.T)) @ K,
            "stops at P ⊙ ∂L/∂P",
        ),
        (lambda Q, K, V, G, s: G @ V.T @ K, "skipped both the softmax step and the factor"),
        (
            lambda Q, K, V, G, s: (
                s * attnlab.softmax_backward(attnlab.softmax(Q @ K.T / s), G @ V.T) @ K
            ),
            "Your weights P come from softmax(Q Kᵀ / scale)",
        ),
        (
            lambda Q, K, V, G, s: (
                attnlab.softmax_backward(attnlab.softmax(Q @ K.T / s), G @ V.T) @ K / s
            ),
            "both in P = softmax(Q Kᵀ / scale) and in dividing",
        ),
        (
            lambda Q, K, V, G, s: (
                attnlab.softmax_backward(attnlab.softmax(Q @ K.T / s), G @ V.T) @ K
            ),
            "no factor comes back at the end",
        ),
        (
            lambda Q, K, V, G, s: s * attnlab.softmax(s * Q @ K.T) @ K,
            "used the weights P where the gradient ∂L/∂S belongs",
        ),
        (
            lambda Q, K, V, G, s: (  # O = P V where G = ∂L/∂O belongs
                s
                * attnlab.softmax_backward(
                    attnlab.softmax(s * Q @ K.T), attnlab.softmax(s * Q @ K.T) @ V @ V.T
                )
                @ K
            ),
            "from the attention output O = P V",
        ),
    ],
)
def test_attention_grad_q_names_new_mistakes(answer, phrase):
    result = check("attention_grad_q", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    # Every input is shown, and the scale as it is written.
    for name in ("Q =", "K =", "V =", "grad_O =", "scale = 0.577 (1/√3)"):
        assert name in result.message, name
    assert "np.float64" not in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda Q, K, V, G, s: -grad_q(Q, K, V, G, s), "with every sign flipped"),
        (lambda Q, K, V, G, s: 3 * grad_q(Q, K, V, G, s), "is 3 times the right one"),
        (
            lambda Q, K, V, G, s: (  # the softmax's step inline, subtracting the wrong way
                s
                * (lambda P, g: P * ((P * g).sum(-1, keepdims=True) - g))(
                    attnlab.softmax(s * Q @ K.T), G @ V.T
                )
                @ K
            ),
            "with every sign flipped",
        ),
    ],
)
def test_attention_grad_q_names_a_sign_or_a_constant_factor(answer, phrase):
    result = check("attention_grad_q", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    assert "largest difference" not in result.message


def test_attention_grad_q_names_v_for_k_in_the_last_product():
    def answer(Q, K, V, G, s):  # the shapes agree on the first input, where d_v = d_k
        return s * attnlab.softmax_backward(attnlab.softmax(s * Q @ K.T), G @ V.T) @ V

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "uses V where it needs K" in result.message, result.message


def test_attention_grad_q_returning_all_three_gradients_is_told_to_return_one():
    def answer(Q, K, V, G, s):  # all three, as attention_backward returns them
        P = attnlab.softmax(s * Q @ K.T)
        grad_S = attnlab.softmax_backward(P, G @ V.T)
        return s * grad_S @ K, s * grad_S.T @ Q, P.T @ G

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "returned 3 arrays" in result.message and "return only the result" in result.message
    assert "all of attention's backward pass" in result.message
    # As a list too, which NumPy cannot stack either.
    result = check("attention_grad_q", lambda *args: list(answer(*args)))
    assert not result.passed
    assert "all of attention's backward pass" in result.message, result.message


def test_attention_grad_q_inline_softmax_without_keepdims_gets_the_keepdims_hint():
    def answer(Q, K, V, G, s):
        P, grad_P = attnlab.softmax(s * Q @ K.T), G @ V.T
        return s * (P * (grad_P - (P * grad_P).sum(axis=-1))) @ K

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "one number per query" in result.message and "keeps it as a column" in result.message
    assert "Which product of G with V" not in result.message  # the general shape hint


def test_attention_grad_q_shape_hint_asks_rather_than_tells():
    def answer(Q, K, V, G, s):  # Gᵀ V for G Vᵀ: a shape error on the first input already
        return s * attnlab.softmax_backward(attnlab.softmax(s * Q @ K.T), G.T @ V) @ K

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "Test input" not in result.message  # it stopped on the first input, with a hint
    assert "which product turns (n_q, n_k) into (n_q, d_k)?" in result.message
    assert "G Vᵀ" not in result.message


def test_attention_grad_q_first_input_has_fewer_queries_than_keys():
    # A result with the shape of another gradient (∂L/∂K, ∂L/∂V) shows on the first input.
    first = exercise.grad_q_cases()[0].inputs
    n_q, n_k = first["Q"].shape[0], first["K"].shape[0]
    assert n_q < n_k


def test_attention_grad_q_names_a_final_factor_fixed_at_one_over_root_d_k():
    def answer(Q, K, V, G, s):  # P from `scale`, but the factor at the end from d_k
        P = attnlab.softmax(s * Q @ K.T)
        return attnlab.softmax_backward(P, G @ V.T) @ K / np.sqrt(Q.shape[1])

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "the factor at the end is 1/√d_k" in result.message, result.message
    assert "times the right one" not in result.message
    # Named on the input where scale is not 1/√d_k, the only kind that can tell.
    assert "scale = 1.0" in result.message


def test_every_grad_q_mistake_differs_from_the_reference_on_some_input():
    cases = exercise.grad_q_cases()
    for mistake in exercise.GRAD_Q_MISTAKES:
        assert any(
            (wrong := wrong_result(mistake, case.inputs)) is not None
            and not matches(wrong, exercise._reference_grad_q(**case.inputs))
            for case in cases
        ), mistake.message
    # The final factor fixed at 1/√d_k needs an input whose scale is something else.
    assert any(not np.isclose(c.inputs["scale"], c.inputs["Q"].shape[1] ** -0.5) for c in cases)


@pytest.mark.parametrize(
    ("exercise_id", "mistakes"),
    [
        ("softmax_backward", exercise.BACKWARD_MISTAKES),
        ("attention_grad_q", exercise.GRAD_Q_MISTAKES),
    ],
)
def test_each_named_mistake_is_told_its_own_message(exercise_id, mistakes):
    # No other mistake (nor the right answer) takes its place on the test inputs.
    for mistake in mistakes:
        result = check(exercise_id, mistake.compute)
        assert not result.passed, mistake.message
        assert result.message.startswith(mistake.message), (mistake.message, result.message)


def test_no_message_has_a_full_stop_after_a_question():
    messages = [m.message for m in exercise.BACKWARD_MISTAKES + exercise.GRAD_Q_MISTAKES]
    assert not any("?." in m for m in messages)


# ----------------------------------------------- exercise: unscaled_as_scaled


@pytest.mark.parametrize(
    "answer",
    [
        solutions.unscaled_as_scaled,
        lambda d_k: [d_k**0.25] * 3,
        lambda d_k: np.full(3, np.sqrt(np.sqrt(d_k)), dtype=np.float32),
    ],
)
def test_unscaled_as_scaled_passes_in_any_form(answer):
    result = check("unscaled_as_scaled", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda d_k: (d_k**0.5,) * 3, "multiplied each matrix by √d_k"),
        (lambda d_k: (d_k**0.25, d_k**0.25, 1), "left the learning rate as it is"),
        (lambda d_k: (d_k**0.25, d_k**0.25, d_k**-0.25), "upside down"),
        (lambda d_k: (d_k**0.5, 1, d_k**0.5), "rescaled only W_Q"),
        (lambda d_k: (d_k**-0.25,) * 3, "shrink the matrices"),
        (lambda d_k: (2.0, 3.0, 2.0), "times the unscaled model's; they should be the same"),
        (lambda d_k: (1.0, d_k**0.5, 1.0), "different factors"),
        (lambda d_k: (d_k**0.25, d_k**0.25, 3 * d_k**0.25), "learning rate factor is 3"),
        (lambda d_k: (-(d_k**0.25), -(d_k**0.25), d_k**0.25), "That twin works too"),
        (lambda d_k: (d_k**0.25, d_k**0.25, -(d_k**0.25)), "must stay positive"),
        (lambda d_k: (-(d_k**0.25), -(d_k**0.25), 1), "learning rate factor is 0.5"),
    ],
)
def test_unscaled_as_scaled_names_the_slips(answer, phrase):
    result = check("unscaled_as_scaled", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    assert "Expected" not in result.message  # the expected numbers are the answer


def test_unscaled_as_scaled_is_registered():
    assert get_exercise("unscaled_as_scaled").lesson == "notebooks/08_does_scaling_matter.ipynb"
    assert solution("unscaled_as_scaled").startswith("def unscaled_as_scaled(d_k):")


def test_twin_message_leaves_question_5_to_the_end():
    result = check("unscaled_as_scaled", lambda d_k: (d_k**0.25, d_k**0.25, d_k**0.5))
    assert not result.passed
    assert "Your learning rate factor is √d_k" in result.message
    assert "question" not in result.message and "gradient descent" not in result.message


# ------------------------------------------- softmax_backward and attention_grad_q, more


@pytest.mark.parametrize(
    "answer",
    [
        lambda p, g: p * g - p * g * p.sum(axis=-1, keepdims=True),  # cancels itself: Σp = 1
        lambda p, g: np.zeros_like(p),  # a placeholder
    ],
)
def test_softmax_backward_all_zeros_asks_about_a_formula_that_cancels(answer):
    result = check("softmax_backward", answer)
    assert not result.passed
    assert "does it cancel itself?" in result.message, result.message
    assert "still a placeholder" in result.message


def test_attention_grad_q_names_the_diagonal_only_jacobian():
    def answer(Q, K, V, G, s):
        P = attnlab.softmax(s * Q @ K.T)
        return s * (P * (1 - P) * (G @ V.T)) @ K

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "only the diagonal of the softmax's Jacobian" in result.message, result.message
    assert "largest difference" not in result.message


# -------------------------------------------------- exercise: predicted_move


def test_predicted_move_reference_is_the_lessons_function():
    for case in exercise.move_cases():
        np.testing.assert_allclose(
            exercise._reference_move(**case.inputs), lesson.predicted_move(**case.inputs)
        )
    np.testing.assert_allclose(lesson.predicted_move(64, 0.2, 0.8), [0.4, 3.2])
    np.testing.assert_allclose(lesson.predicted_move(16, 0.2, 0.8), [0.2, 0.8])


@pytest.mark.parametrize(
    "answer",
    [
        solutions.predicted_move,
        lambda d_k, s, u: [s * (d_k / 16) ** 0.5, u * d_k / 16],
        lambda d_k, s, u: np.array([s * np.sqrt(d_k / 16), u * d_k / 16], dtype=np.float32),
        # ÷1 from ÷√d_k's prediction times √d_k: the cases keep ÷1 at 4 times ÷√d_k
        lambda d_k, s, u: (s * (d_k / 16) ** 0.5, s * (d_k / 16) ** 0.5 * np.sqrt(d_k)),
    ],
)
def test_predicted_move_passes_in_any_form(answer):
    result = check("predicted_move", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda d_k, s, u: (s, u), "don't grow with d_k"),
        (lambda d_k, s, u: (s, u * (d_k / 16) ** 0.5), "equally far at every d_k"),
        (lambda d_k, s, u: (s * (d_k / 16) ** 0.5, u * (d_k / 16) ** 0.5), "how fast must ÷1's"),
        (lambda d_k, s, u: (s * d_k / 16, u * d_k / 16), "as if ÷√d_k took nothing back"),
        (lambda d_k, s, u: (s * d_k / 16, u * (d_k / 16) ** 0.5), "the wrong way round"),
        (lambda d_k, s, u: (s * d_k**0.5, u * d_k), "already those of d_k = 16"),
        (lambda d_k, s, u: (s * (16 / d_k) ** 0.5, u * 16 / d_k), "shrink as d_k grows"),
        (lambda d_k, s, u: (u * d_k / 16, s * (d_k / 16) ** 0.5), "in the wrong order"),
        (lambda d_k, s, u: (s * (d_k / 16) ** 0.75, u * (d_k / 16) ** 1.5), "the power 0.75"),
        (lambda d_k, s, u: (-s, u), "can't be 0 or negative"),
        # d_k // 16 is right at every multiple of 16: the case d_k = 100 catches it
        (lambda d_k, s, u: (s * (d_k // 16) ** 0.5, u * (d_k // 16)), "rounded d_k/16 down"),
        (lambda d_k, s, u: (s * int(d_k / 16) ** 0.5, u * int(d_k / 16)), "6.25 times 16"),
        (lambda d_k, s, u: (s * (d_k / 16) ** 0.5, u * (d_k // 16)), "uses 6 = d_k // 16"),
        (
            lambda d_k, s, u: (s * (d_k / 16) ** 0.5, u * d_k / 16) if d_k != 16 else (1.0, 1.0),
            "the prediction is the measurement itself",
        ),
    ],
)
def test_predicted_move_names_the_wrong_laws(answer, phrase):
    result = check("predicted_move", answer)
    assert not result.passed
    assert phrase in result.message, result.message
    assert "Expected" not in result.message  # the expected numbers give the laws away
    assert "Traceback" not in result.message


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        (lambda d_k, s, u: {"÷√d_k": s * (d_k / 16) ** 0.5, "÷1": u * d_k / 16}, "a dict"),
        (lambda d_k, s, u: {"scaled": s, "unscaled": u}, "a dict"),
        (
            lambda d_k, s, u: types.MappingProxyType({"scaled": s, "unscaled": u}),
            "a mapping (`mappingproxy`), like a dict",
        ),
    ],
)
def test_predicted_move_returning_a_dict_is_told_what_to_return(answer, what):
    result = check("predicted_move", answer)
    assert not result.passed
    assert f"returned {what} (" in result.message, result.message
    assert "by their position, not by a key" in result.message
    assert "the prediction for ÷√d_k, then the one for ÷1" in result.message
    assert "Python objects" not in result.message and "Expected" not in result.message


def test_predicted_move_is_registered():
    assert "predicted_move" in exercise_ids()
    assert get_exercise("predicted_move").lesson == "notebooks/08_does_scaling_matter.ipynb"
    code = solution("predicted_move")
    assert code.startswith("def predicted_move(d_k, scaled_16, unscaled_16):")
    assert "raise" not in code


def test_print_step_sizes_puts_predictions_beside_measurements(capsys):
    def moves(scaled, raw):
        return {"√d_k": np.array([scaled]), "1": np.array([raw]), "d_k": np.array([0.04])}

    lesson.print_step_sizes({16: moves(0.2, 0.8), 64: moves(0.3, 2.4)}, lesson.predicted_move)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[1].split()[:3] == ["16", "0.20", "-"]
    assert lines[2].split()[:5] == ["64", "0.30", "0.40", "0.037", "2.4"]
    assert lines[2].split()[5] == "3.2"
    assert lines[3].endswith("÷√d_k 0.75, ÷1 0.75")


def test_runs_at_the_same_fraction_of_root_d_k_reuse_the_unscaled_run(capsys):
    task = lesson.make_task()
    kw = dict(seeds=(0, 1), steps=20)
    unscaled = lesson.run_ablation(task, d_ks=(16, 64), divisors=("1",), **kw)
    runs = lesson.run_ablation(
        task, d_ks=(16, 64), divisors=lesson.BELOW_HALF_ROOT, reuse=unscaled, **kw
    )
    # τ = √16 / 4 = 1 and √64 / 8 = 1: the ÷1 runs themselves, under their own names.
    for d_k, name in ((16, "0.25√d_k"), (64, "0.125√d_k")):
        assert runs[(d_k, name)].divisor == name
        np.testing.assert_array_equal(runs[(d_k, name)].loss, unscaled[(d_k, "1")].loss)
    # The others are trained, and equal to a run trained without any reuse.
    alone = lesson.run_ablation(task, d_ks=(64,), divisors=("0.25√d_k",), **kw)[(64, "0.25√d_k")]
    np.testing.assert_allclose(runs[(64, "0.25√d_k")].loss, alone.loss, rtol=1e-9)
    # Other seeds are not the same run.
    other = lesson.run_ablation(
        task, d_ks=(16,), divisors=("0.25√d_k",), reuse=unscaled, seeds=(2,), steps=20
    )
    assert other[(16, "0.25√d_k")].seeds == (2,)
    # One row per fraction, one column per d_k, the unscaled runs marked.
    lesson.print_fractions(runs)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["τ", "/", "√d_k", "d_k", "=", "16", "d_k", "=", "64"]
    assert [line.split()[0] for line in lines[1:]] == ["1/16", "1/8", "1/4"]
    assert lines[3].count("(÷1)") == 1 and lines[2].count("(÷1)") == 1
    with pytest.raises(ValueError, match="0.25√d_k"):
        lesson.divisor_value("0.3√d_k", 16)


def test_each_fraction_claim_can_hold_and_fail():
    template = lesson.Run(
        16, "√d_k", 0.25, (0, 1), 6, *[np.zeros((2, 5))] * 3, np.ones(2), np.zeros(2)
    )

    def runs(table):  # {(d_k, name): mean accuracy over training}
        return {
            key: _with(template, d_k=key[0], divisor=key[1], accuracy=np.full((2, 5), acc))
            for key, acc in table.items()
        }

    ideal = {}
    for d_k in (16, 64, 256):
        ideal.update({(d_k, "0.25√d_k"): 0.86, (d_k, "0.125√d_k"): 0.8, (d_k, "0.0625√d_k"): 0.7})
    assert [c.holds for c in lesson.fraction_claims(runs(ideal))] == [True, True]
    assert [c.holds for c in lesson.fraction_claims(runs({**ideal, (64, "0.25√d_k"): 0.92}))] == [
        False,
        True,
    ]
    assert [c.holds for c in lesson.fraction_claims(runs({**ideal, (256, "0.125√d_k"): 0.69}))] == [
        True,
        False,
    ]
    assert [c.holds for c in lesson.fraction_claims(runs({**ideal, (16, "0.125√d_k"): 0.85}))] == [
        True,
        False,
    ]


# ------------------------------------------------ named slips added with the lesson's text


@pytest.mark.parametrize(
    ("factor", "phrase"),
    [(0.5, "0.5 times the right one"), (3.0, "3 times the right one")],
)
def test_softmax_backward_names_a_constant_factor(factor, phrase):
    result = check("softmax_backward", lambda p, grad_p: factor * correct_formula(p, grad_p))
    assert not result.passed
    assert phrase in result.message, result.message
    assert "Σ_i g_i p_i (δ_ij − p_j)" in result.message  # the softmax's own formula


def test_attention_grad_q_names_the_plain_row_sum_in_an_inline_softmax_step():
    def answer(Q, K, V, G, scale):
        S = scale * Q @ K.T
        P = np.exp(S - S.max(axis=-1, keepdims=True))
        P /= P.sum(axis=-1, keepdims=True)
        dP = G @ V.T
        return scale * (P * (dP - dP.sum(axis=-1, keepdims=True))) @ K

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert "plain row sum Σ_j g_j" in result.message, result.message


def test_predicted_move_names_the_growth_factors_alone():
    result = check("predicted_move", lambda d_k, s, u: ((d_k / 16) ** 0.5, d_k / 16))
    assert not result.passed
    assert "growth factors alone" in result.message, result.message
    assert "Expected" not in result.message


@pytest.mark.parametrize(
    "answer",
    [
        lambda d_k: {"W_Q": d_k**0.25, "W_K": d_k**0.25, "lr": d_k**0.25},
        lambda d_k: types.MappingProxyType({"q": 2.0, "k": 2.0, "lr": 2.0}),
    ],
)
def test_unscaled_as_scaled_returning_a_dict_is_told_the_order(answer):
    result = check("unscaled_as_scaled", answer)
    assert not result.passed
    assert "by their position, not by a key" in result.message, result.message
    assert "the factor on W_Q, on W_K, then on their learning rate" in result.message
    assert "Python objects" not in result.message and "Expected" not in result.message


@pytest.mark.parametrize(
    ("whole", "phrase"),
    [(False, "plain mean of ∂L/∂P"), (True, "one softmax over the whole matrix")],
)
def test_attention_grad_q_names_a_plain_mean_and_a_whole_matrix_softmax(whole, phrase):
    def answer(Q, K, V, G, scale):
        S = scale * Q @ K.T
        E = np.exp(S - S.max())
        P = E / (E.sum() if whole else E.sum(axis=-1, keepdims=True))
        dP = G @ V.T
        if whole:
            return scale * (P * (dP - (dP * P).sum(axis=-1, keepdims=True))) @ K
        return scale * (P * (dP - dP.mean(axis=-1, keepdims=True))) @ K

    result = check("attention_grad_q", answer)
    assert not result.passed
    assert phrase in result.message, result.message
