"""Tests for the lesson on attention in practice (``attnlab.lessons.in_practice``) and its
exercises' checker: linear attention and its causal recurrence, the bottom-right causal
mask, the weights of SDPA.

Lesson: ``notebooks/10_in_practice.ipynb``.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnlab
from attnlab.exercises import check, get_exercise, solutions
from attnlab.exercises import ex10_in_practice as ex
from attnlab.lessons import in_practice


def feedback_texts(exercise):
    checker = get_exercise(exercise).checker
    hints = [checker.shape_hint, checker.index_hint]
    return [m.message for m in checker.mistakes] + [h for h in hints if h]


def test_linear_feedback_leaves_the_denominator_to_the_learner():
    # The key-side part of the denominator is what the learner works out.
    for text in feedback_texts("linear_attention"):
        assert "d_k numbers" not in text and "key-side part" not in text, text


def test_causal_masks_top_left_and_bottom_right():
    np.testing.assert_array_equal(in_practice.causal_lower_right(4, 4), attnlab.causal_mask(4))
    M = in_practice.causal_lower_right(2, 5)
    np.testing.assert_array_equal(M.sum(axis=1), [4, 5])
    assert attnlab.causal_mask(2, 5).sum() == 3


def test_elu_feature_is_positive_and_quiet():
    x = np.array([-1000.0, -1.0, 0.0, 2.0])
    np.testing.assert_allclose(in_practice.elu_feature(x), [0.0, np.exp(-1), 1.0, 3.0])
    assert (in_practice.elu_feature(np.linspace(-30, 30, 61)) > 0).all()


finite = st.floats(-5, 5, allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n_q: st.integers(1, 6).flatmap(
            lambda n_k: st.tuples(
                arrays(np.float64, (n_q, 3), elements=finite),
                arrays(np.float64, (n_k, 3), elements=finite),
                arrays(np.float64, (n_k, 2), elements=finite),
            )
        )
    )
)
def test_linear_attention_two_orders_agree(qkv):
    Q, K, V = qkv
    fast = in_practice.linear_attention(Q, K, V)
    np.testing.assert_allclose(fast, in_practice.linear_attention_quadratic(Q, K, V), atol=1e-9)
    np.testing.assert_allclose(fast, solutions.linear_attention(Q, K, V), atol=1e-9)
    np.testing.assert_allclose(fast, ex.linear_attention_reference(Q, K, V), atol=1e-9)
    # a convex combination of the values: inside their range, column by column
    assert (fast >= V.min(axis=0) - 1e-9).all() and (fast <= V.max(axis=0) + 1e-9).all()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            arrays(np.float64, (n, 3), elements=finite),
            arrays(np.float64, (n, 3), elements=finite),
            arrays(np.float64, (n, 2), elements=finite),
        )
    )
)
def test_causal_linear_attention_is_the_masked_quadratic_order(qkv):
    Q, K, V = qkv
    n = len(Q)
    step = in_practice.causal_linear_attention(Q, K, V)
    np.testing.assert_allclose(
        step,
        in_practice.linear_attention_quadratic(Q, K, V, mask=attnlab.causal_mask(n)),
        atol=1e-9,
    )
    # row i sees only the first i + 1 tokens: it is full linear attention on that prefix
    for i in range(n):
        np.testing.assert_allclose(
            step[i],
            in_practice.linear_attention(Q[i : i + 1], K[: i + 1], V[: i + 1])[0],
            atol=1e-9,
        )


def test_linear_weights_cannot_become_one_hot(rng):
    K = rng.normal(size=(8, 16))
    q = K[2]
    curves = in_practice.sharpness(q, K, [1.0, 1e3])
    assert curves["softmax_max"][-1] > 0.999
    assert curves["linear_max"][-1] < 0.5
    np.testing.assert_allclose(
        in_practice.linear_attention_weights((1e6 * q)[None], K)[0],
        in_practice.linear_limit(q, K),
        atol=1e-5,
    )


def test_linear_costs():
    c = in_practice.linear_costs(np.array([10, 100]), 8)
    np.testing.assert_array_equal(c["quadratic_madds"], [1600, 160000])
    # the normalisers are left out of both orders alike: the ratio is n / d
    np.testing.assert_array_equal(c["linear_madds"], [2 * 10 * 64, 2 * 100 * 64])
    np.testing.assert_array_equal(c["quadratic_madds"] / c["linear_madds"], [10 / 8, 100 / 8])
    # the quadratic order holds φ(Q) (n, d) too: at n = 4 < d it is the largest array
    np.testing.assert_array_equal(
        in_practice.linear_costs(np.array([4]), 8)["quadratic_largest"], [32]
    )


def test_entropy_curves_draw_the_median_and_the_band_of_every_run():
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from attnlab.lessons.ablation import Run

    seeds, steps = 3, 4
    runs = {
        name: Run(
            d_k=256,
            divisor=name,
            scale=1.0,
            seeds=tuple(range(seeds)),
            n_pairs=6,
            loss=np.ones((seeds, steps)),
            accuracy=np.linspace(0, 1, seeds * steps).reshape(seeds, steps),
            entropy=np.full((seeds, steps), 0.5),
            final_accuracy=np.ones(seeds),
            final_entropy=np.zeros(seeds),
        )
        for name in ("√d_k", "1")
    }
    fig = in_practice.plot_entropy_curves(runs, n_pairs=6, n_values=16)
    entropy_axes, loss_axes, accuracy_axes = fig.axes
    assert [line.get_label() for line in accuracy_axes.lines] == ["÷ √d_k", "÷ 1"]
    # The accuracy line is the median over the seeds, the band spans all of them.
    np.testing.assert_allclose(
        accuracy_axes.lines[0].get_ydata(), np.median(runs["1"].accuracy, axis=0)
    )
    bands = [c for c in accuracy_axes.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(ys.min(), 0) and np.isclose(ys.max(), 1)
    plt.close(fig)


def test_sdpa_backends_math_runs_everything():
    torch = pytest.importorskip("torch")
    x = torch.ones(1, 4, 2)
    found = in_practice.sdpa_backends({"plain": {"query": x, "key": x, "value": x}})
    assert "math" in found["plain"]


def test_sdpa_choice_names_a_backend_that_can_run_the_call(monkeypatch):
    torch = pytest.importorskip("torch")
    x = torch.ones(1, 4, 2)
    call = {"query": x, "key": x, "value": x}
    picked = in_practice.sdpa_choice(call)
    if picked is not None:  # the private function exists in this version
        assert picked in in_practice.sdpa_backends({"plain": call})["plain"]
    # Where PyTorch has no such function, the answer is None, not an error.
    monkeypatch.delattr(torch, "_fused_sdp_choice", raising=False)
    assert in_practice.sdpa_choice(call) is None


def quadratic_answer(Q, K, V):
    A = ex.elu_feature(Q) @ ex.elu_feature(K).T
    return A / A.sum(axis=1, keepdims=True) @ V


def test_linear_attention_in_the_quadratic_order_fails_on_memory():
    result = check("linear_attention", quadratic_answer)
    assert not result.passed
    assert "right numbers" in result.message
    # it names the left-to-right order of a chain of @, the usual way into this order
    assert "from left to right" in result.message and "brackets" in result.message
    # it points at the key side of both sums, without writing the denominator's code
    assert "denominator" in result.message and result.message.rstrip().endswith("?")
    for code in ("sum(axis=0)", "[:, None]", "φ(K)ᵀ 1", "phi(", "d_k numbers"):
        assert code not in result.message


def test_a_chain_of_at_signs_is_told_it_runs_left_to_right():
    def chained(Q, K, V):
        phi_q, phi_k = ex.elu_feature(Q), ex.elu_feature(K)
        return phi_q @ phi_k.T @ V / (phi_q @ phi_k.sum(axis=0))[:, None]

    result = check("linear_attention", chained)
    assert not result.passed
    assert "A chain of `@` is evaluated from left to right" in result.message


def test_linear_attention_in_the_linear_order_passes_and_says_so():
    result = check("linear_attention", solutions.linear_attention)
    assert result.passed, result.message
    assert "does no work per pair" in result.message and "peak memory" in result.message


def test_an_answer_fixed_to_the_small_sizes_fails_on_the_large_input():
    def small_only(Q, K, V):
        out = solutions.linear_attention(Q, K, V)
        return out if len(Q) < 100 else np.zeros_like(out)

    result = check("linear_attention", small_only)
    assert not result.passed and "2000" in result.message


@pytest.mark.parametrize(("n_q", "n_k"), [(1, 1), (2, 5), (4, 4), (1, 9), (3, 8)])
def test_the_lower_right_mask_agrees_with_numpy_and_the_solution(n_q, n_k):
    from attnlab.exercises import solutions

    mask = in_practice.causal_lower_right(n_q, n_k)
    assert mask.dtype == bool and mask.shape == (n_q, n_k)
    np.testing.assert_array_equal(mask, np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q))
    np.testing.assert_array_equal(mask, solutions.causal_lower_right(n_q, n_k))
    assert mask[-1].all()  # the newest token sees every key, its own included


def _offset_mask(offset):
    def answer(n_q, n_k):
        return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + offset(n_q, n_k)

    return answer


@pytest.mark.parametrize(
    ("answer", "named", "not_named"),
    [
        # A fixed offset of 3 gives the 'offset n_q' mask on 3 new tokens, but not on the
        # others: it must get the first-wrong-row question, not that mistake's name.
        (_offset_mask(lambda n_q, n_k: 3), "Row 0 of your mask", "number of new tokens"),
        (_offset_mask(lambda n_q, n_k: n_k // 2), "Row 0 of your mask", "own key"),
        (_offset_mask(lambda n_q, n_k: n_q), "number of new tokens", "Row 0"),
        (_offset_mask(lambda n_q, n_k: 0), "aligned at the top left", "Row 0"),
    ],
)
def test_a_mistake_is_named_only_when_it_explains_every_test_input(answer, named, not_named):
    result = check("causal_lower_right", answer)
    assert not result.passed
    assert named in result.message and not_named not in result.message, result.message


def test_a_wrong_lower_right_mask_is_not_shown_the_expected_mask():
    message = check("causal_lower_right", _offset_mask(lambda n_q, n_k: 0)).message
    assert "Your `causal_lower_right` returned, shape (3, 8)" in message
    assert "Expected" not in message


def test_a_torch_mask_object_is_named_not_misread():
    torch = pytest.importorskip("torch")
    from torch.nn.attention.bias import causal_lower_right as torch_mask

    message = check("causal_lower_right", torch_mask).message
    assert "PyTorch `CausalBias`" in message
    ones = check("causal_lower_right", lambda n_q, n_k: torch.ones(n_q, n_k).tril(n_k - n_q))
    assert not ones.passed and "right pattern" in ones.message, ones.message
    bools = check(
        "causal_lower_right",
        lambda n_q, n_k: torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q),
    )
    assert bools.passed, bools.message


@pytest.mark.parametrize("dtype", [float, int, np.float32])
def test_a_mask_of_numbers_with_the_right_pattern_fails(dtype):
    # Passed to PyTorch as attn_mask, a 0/1 float mask is added and an int one refused.
    answer = _offset_mask(lambda n_q, n_k: n_k - n_q)
    result = check("causal_lower_right", lambda n_q, n_k: answer(n_q, n_k).astype(dtype))
    assert not result.passed
    assert "right pattern" in result.message and "*added*" in result.message
    assert np.dtype(dtype).name in result.message


def test_a_mask_of_numbers_with_a_wrong_pattern_gets_the_patterns_name():
    answer = _offset_mask(lambda n_q, n_k: 0)
    message = check("causal_lower_right", lambda n_q, n_k: answer(n_q, n_k) * 1.0).message
    assert "aligned at the top left" in message and "right pattern" not in message


def test_an_additive_mask_is_told_the_exercise_wants_the_bool_form():
    def additive(n_q, n_k):
        keep = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)
        return np.where(keep, 0.0, -np.inf)

    message = check("causal_lower_right", additive).message
    assert "additive form" in message and "bool form" in message


@pytest.mark.parametrize(
    ("exercise", "answer_code"),
    [
        ("linear_attention", ("sum(axis=0)", "[:, None]", "np.exp(x)", "φ(K)ᵀ 1", "phi(")),
        ("sdpa_weights", ("np.where", "swapaxes", "np.tril", "-np.inf", "raise ", "S + ")),
        ("linear_attention_step", ("np.outer", "np.zeros", "S +", "z +", "cumsum")),
    ],
)
def test_feedback_names_the_mistake_without_writing_the_answer(exercise, answer_code):
    for text in feedback_texts(exercise):
        for code in answer_code:
            assert code not in text, (exercise, code, text)


@pytest.mark.parametrize("exercise", ["linear_attention", "sdpa_weights", "linear_attention_step"])
def test_each_mistake_message_ends_with_a_question_or_a_pointer(exercise):
    for text in feedback_texts(exercise):
        assert text.rstrip().endswith("?"), text


def test_figures_draw():
    import matplotlib.pyplot as plt

    curves = in_practice.sharpness(np.ones(3), np.eye(3), [1, 2])
    for fig in (
        in_practice.plot_sharpness([1, 2], curves, 0.5),
        in_practice.plot_sharpness([1, 2], curves, 0.5, n_keys=3),
    ):
        assert fig.axes
        plt.close(fig)


# ------------------------------------------------------------------ sdpa_weights


def test_sdpa_weights_follows_attnlabs_conventions(rng):
    q, k = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    keep = rng.random((3, 5)) < 0.6
    keep[:, 0] = True
    bias = rng.normal(size=(2, 1, 5))
    eye = np.eye(5)
    for options, weights in [
        ({}, attnlab.attention(q, k, eye)),
        ({"attn_mask": keep}, attnlab.attention(q, k, eye, keep)),
        ({"attn_mask": bias}, attnlab.attention(q, k, eye, bias)),
        ({"is_causal": True}, attnlab.attention(q, k, eye, causal=True)),
        ({"scale": 0.3}, attnlab.attention(q, k, eye, scale=0.3)),
    ]:
        got = in_practice.sdpa_weights(q, k, **options)
        np.testing.assert_allclose(got, weights, atol=1e-12)
        np.testing.assert_allclose(solutions.sdpa_weights(q, k, **options), got, atol=1e-12)
        np.testing.assert_allclose(ex.sdpa_weights_reference(q, k, **options), got, atol=1e-12)
    # The course's own version refuses both options at once, as PyTorch does.
    with pytest.raises(ValueError, match="not both"):
        in_practice.sdpa_weights(q, k, attn_mask=keep, is_causal=True)


def test_sdpa_weights_passes_the_reference():
    for answer in (solutions.sdpa_weights, ex.sdpa_weights_reference):
        result = check("sdpa_weights", answer)
        assert result.passed, result.message


def sdpa_loop(q, k, attn_mask=None, is_causal=False, scale=None):
    assert not (is_causal and attn_mask is not None), "attn_mask or is_causal, not both"
    q, k = np.asarray(q), np.asarray(k)
    c = scale if scale is not None else q.shape[-1] ** -0.5
    out = np.zeros(q.shape[:-1] + (k.shape[-2],))
    for h in np.ndindex(*q.shape[:-2]):  # every head, of every batch entry
        for i in range(q.shape[-2]):
            s = [c * float(q[h][i] @ k[h][j]) for j in range(k.shape[-2])]
            for j in range(k.shape[-2]):
                if is_causal and j > i:
                    s[j] = -np.inf
                elif attn_mask is not None:
                    m = np.broadcast_to(attn_mask, out.shape)[h][i, j]
                    s[j] = (s[j] if m else -np.inf) if m.dtype == bool else s[j] + m
            e = np.exp(np.array(s) - max(s))
            out[h][i] = e / e.sum()
    return out


def test_another_right_answer_passes():
    result = check("sdpa_weights", sdpa_loop)
    assert result.passed, result.message


def test_zeroing_the_weights_after_the_softmax_is_named():
    def after(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if is_causal:
            attn_mask = attnlab.causal_mask(*S.shape[-2:])
        if attn_mask is not None and attn_mask.dtype == bool:
            return attnlab.softmax(S) * attn_mask  # rows no longer sum to 1
        return attnlab.softmax(S if attn_mask is None else S + attn_mask)

    result = check("sdpa_weights", after)
    assert not result.passed
    assert "*after* the softmax" in result.message and "less than 1" in result.message


@pytest.mark.parametrize(("zero_bool", "zero_causal"), [(True, False), (False, True), (True, True)])
def test_zeroing_the_hidden_scores_is_named_wherever_it_happens(zero_bool, zero_causal):
    # `S * attn_mask` or `np.tril(S)`: the hidden keys score 0, and e⁰ = 1.
    def zeroed(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if is_causal:
            S = (
                np.tril(S)
                if zero_causal
                else np.where(attnlab.causal_mask(*S.shape[-2:]), S, -np.inf)
            )
        if attn_mask is not None and attn_mask.dtype == bool:
            S = S * attn_mask if zero_bool else np.where(attn_mask, S, -np.inf)
        elif attn_mask is not None:
            S = S + attn_mask
        return attnlab.softmax(S)

    result = check("sdpa_weights", zeroed)
    assert not result.passed
    assert result.message.startswith("Your hidden keys got a score of 0"), result.message
    assert "-inf" not in result.message and "−∞" not in result.message.split("\n\n")[0]


@pytest.mark.parametrize("mistake", ex.SDPA_MISTAKES, ids=lambda m: m.message[:30])
def test_each_sdpa_slip_is_named(mistake):
    def answer(q, k, attn_mask=None, is_causal=False, scale=None):
        return mistake.compute(q, k, attn_mask, is_causal, scale)

    result = check("sdpa_weights", answer)
    assert not result.passed
    assert result.message.startswith(mistake.message), result.message


@pytest.mark.parametrize("own_causal", ["consistent", "inverted too", "none"])
def test_a_bool_mask_read_as_ignore_is_named_whatever_the_causal_path(own_causal):
    # nn.MultiheadAttention's reading, True = ignore. Its own causal mask may follow the
    # same reading (True above the diagonal: then that case is right), be PyTorch's and so
    # come out inverted too, or be missing; the inverted bool mask is named in every case.
    def mha_style(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if is_causal and own_causal == "consistent":
            attn_mask = np.triu(np.ones(S.shape[-2:], dtype=bool), k=1)  # True = ignore
        elif is_causal and own_causal == "inverted too":
            attn_mask = attnlab.causal_mask(*S.shape[-2:])
        if attn_mask is not None and attn_mask.dtype == bool:
            S = np.where(attn_mask, -np.inf, S)
        elif attn_mask is not None:
            S = S + attn_mask
        return attnlab.softmax(S)

    result = check("sdpa_weights", mha_style)
    assert not result.passed
    assert result.message.startswith(ex.SDPA_MISTAKES[0].message), result.message


@pytest.mark.parametrize("causal_path", ["adds it too", "hides with -inf"])
def test_a_bool_mask_added_as_numbers_is_named_whatever_the_causal_path(causal_path):
    # No branch on the dtype: every attn_mask is added, so True adds 1. The causal mask may
    # be added the same way (a slip of the reference) or hidden with −∞ (no single slip).
    def adds_every_mask(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        causal = attnlab.causal_mask(*S.shape[-2:])
        if is_causal and causal_path == "adds it too":
            S = S + causal
        elif is_causal:
            S = np.where(causal, S, -np.inf)
        if attn_mask is not None:
            S = S + attn_mask
        return attnlab.softmax(S)

    result = check("sdpa_weights", adds_every_mask)
    assert not result.passed
    assert result.message.startswith(ex._BOOL_ADDED), result.message


@pytest.mark.parametrize("other_options", ["handled", "ignored too"])
def test_a_bool_mask_never_applied_is_named(other_options):
    # The bool branch left out: the keys marked False keep their weight. The causal rule
    # and the float mask may be handled (no single slip of the reference) or not.
    def skips_bool(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if other_options == "handled":
            if is_causal:
                S = np.where(attnlab.causal_mask(*S.shape[-2:]), S, -np.inf)
            if attn_mask is not None and attn_mask.dtype != bool:
                S = S + attn_mask
        return attnlab.softmax(S)

    result = check("sdpa_weights", skips_bool)
    assert not result.passed
    assert result.message.startswith(ex._BOOL_IGNORED), result.message


@pytest.mark.parametrize("causal", ["handled", "ignored too"])
def test_a_float_mask_never_applied_is_named(causal):
    # Only a bool branch: a float mask leaves the scores as they are.
    def skips_float(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if is_causal and causal == "handled":
            attn_mask = attnlab.causal_mask(*S.shape[-2:])
        if attn_mask is not None and attn_mask.dtype == bool:
            S = np.where(attn_mask, S, -np.inf)
        return attnlab.softmax(S)

    result = check("sdpa_weights", skips_float)
    assert not result.passed
    assert result.message.startswith(ex._FLOAT_IGNORED), result.message


def test_sdpa_weights_with_k_T_or_a_missing_option_gets_a_specific_hint():
    def k_t(q, k, attn_mask=None, is_causal=False, scale=None):
        return attnlab.softmax(q @ k.T)

    def adds_none(q, k, attn_mask=None, is_causal=False, scale=None):
        return attnlab.softmax(q @ np.swapaxes(k, -1, -2) * scale)

    assert "swap only the last two" in check("sdpa_weights", k_t).message
    assert "arrives as None" in check("sdpa_weights", adds_none).message


def _sdpa_with(*, factor_from=-1, causal=None, softmax=True, swap=None):
    """An sdpa_weights answer with one slip: the default factor from another axis of q,
    its own causal mask ``causal(n_q, n_k)``, no softmax, or its own swap of k's axes."""

    def answer(q, k, attn_mask=None, is_causal=False, scale=None):
        c = 1 / np.sqrt(q.shape[factor_from]) if scale is None else scale
        S = q @ (swap(k) if swap else np.swapaxes(k, -1, -2)) * c
        if is_causal:
            attn_mask = (causal or attnlab.causal_mask)(*S.shape[-2:])
        if attn_mask is not None:
            m = np.asarray(attn_mask)
            S = np.where(m, S, -np.inf) if m.dtype == np.bool_ else S + m
        return attnlab.softmax(S) if softmax else S

    return answer


def _square(n_q, n_k):
    return np.tril(np.ones((n_k, n_k), dtype=bool))


@pytest.mark.parametrize(
    ("answer", "said"),
    [(_sdpa_with(factor_from=1), "1/√3: 3 is q.shape[1], the number of queries"),
     (_sdpa_with(factor_from=0), "1/√2: 2 is q.shape[0], the number of heads"),
     (_sdpa_with(softmax=False), "Your rows add up to"),
     (_sdpa_with(causal=_square), "Your causal mask is square"),
     (_sdpa_with(causal=lambda n_q, n_k: attnlab.causal_mask(n_k)), "Your causal mask is square"),
     (_sdpa_with(swap=lambda k: k.transpose(0, 2, 1)), "two axes in front")],
)  # fmt: skip
def test_more_sdpa_slips_are_named(answer, said):
    message = check("sdpa_weights", answer).message
    assert said in message and "swap only the last two" not in message, message
    assert message.partition("\n\n")[0].rstrip().endswith("?")


# ------------------------------------------------------------ linear_attention_step


def _steps(step, Q, K, V):
    return ex.run_steps(step, Q, K, V)


def test_linear_attention_step_references_agree(rng):
    Q, K, V = rng.normal(size=(7, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    want = in_practice.causal_linear_attention(Q, K, V)
    np.testing.assert_allclose(ex.causal_linear_reference(Q, K, V), want, atol=1e-12)
    for step in (solutions.linear_attention_step, in_practice.linear_attention_step):
        np.testing.assert_allclose(_steps(step, Q, K, V), want, atol=1e-12)
    assert check("linear_attention_step", solutions.linear_attention_step).passed


def test_the_step_leaves_the_state_it_was_given_unchanged(rng):
    S, z = rng.random((3, 2)), rng.random(3)
    S0, z0 = S.copy(), z.copy()
    in_practice.linear_attention_step(S, z, *rng.normal(size=(2, 3)), rng.normal(size=2))
    np.testing.assert_array_equal(S, S0)
    np.testing.assert_array_equal(z, z0)


def _pair_by_pair(Q, K, V):
    # Right numbers, each pair scored on its own in Python: quadratic work.
    fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
    out = np.zeros((len(Q), V.shape[1]))
    for i in range(len(Q)):
        num, den = np.zeros(V.shape[1]), 0.0
        for j in range(len(K)):
            w = fq[i] @ fk[j]
            num, den = num + w * V[j], den + w
        out[i] = num / den
    return out


def test_work_per_pair_that_runs_out_of_time_is_told_so():
    message = check("linear_attention", _pair_by_pair, timeout=0.5).message
    assert "right numbers on the small inputs" in message and "time limit of 0.5 s" in message
    assert "one at a time" in message and "4 million" in message
    assert "endless loop" not in message and message.rstrip().endswith("?")


def _query_loop(read_summary):
    # Right numbers in linear memory, one query at a time in Python: against every key
    # (n_q × n_k work), or against the summary of the keys (linear work, but a loop).
    def answer(Q, K, V):
        fk = ex.elu_feature(K)
        summary, total = fk.T @ V, fk.sum(axis=0)
        rows = []
        for q in ex.elu_feature(Q):
            if read_summary:
                rows.append(q @ summary / (q @ total))
            else:
                w = fk @ q
                rows.append(w @ V / w.sum())
        return np.array(rows)

    return answer


def test_a_loop_over_the_queries_against_every_key_fails_however_fast():
    # Counted in bytes made per line of the learner's code, not timed: the same verdict
    # on any machine, with the line named.
    result = check("linear_attention", _query_loop(False), timeout=60)
    assert not result.passed
    assert "ran 2,000 times and made 4." in result.message  # 4 million and a little
    assert "`w = fk @ q`" in result.message and result.message.rstrip().endswith("?")


def test_a_loop_over_blocks_of_queries_fails_too():
    def blocks(Q, K, V):
        fk = ex.elu_feature(K)
        out = []
        for i in range(0, len(Q), 200):
            W = ex.elu_feature(Q[i : i + 200]) @ fk.T
            out.append(W @ V / W.sum(axis=1, keepdims=True))
        return np.concatenate(out)

    message = check("linear_attention", blocks, timeout=60).message
    assert "ran 10 times and made" in message and "million (query, key) pairs" in message


def test_a_loop_over_the_queries_that_reads_the_summary_passes():
    # Linear work, one query at a time: slow Python, but no work per pair.
    def comprehension(Q, K, V):
        fk = ex.elu_feature(K)
        s, t = fk.T @ V, fk.sum(axis=0)
        return np.array([q @ s / (q @ t) for q in ex.elu_feature(Q)])

    for answer in (_query_loop(True), comprehension):
        result = check("linear_attention", answer, timeout=60)
        assert result.passed, result.message


def test_the_regrouped_order_passes_with_memory_and_work_named():
    def einsum_answer(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        num = np.einsum("qd,dv->qv", fq, np.einsum("kd,kv->dv", fk, V))
        return num / np.einsum("qd,d->q", fq, fk.sum(axis=0))[:, None]

    for answer in (solutions.linear_attention, einsum_answer):
        result = check("linear_attention", answer)
        assert result.passed, result.message
        assert "no line of your code made a number per (query, key) pair" in result.message


def test_line_work_counts_only_the_learners_lines():
    work = ex.LineWork({}, {})
    ex.line_work(in_practice.linear_attention, work)(*np.ones((3, 4, 2)))
    assert work.runs == {}  # the library's own lines are not traced
    ex.line_work(_query_loop(False), work)(*np.ones((3, 50, 2)))
    (_, lineno), runs, made = work.busiest()
    assert runs == 50 and made >= 50 * 50 * 8  # an (n_k,) array for each of 50 queries


def test_keys_and_values_the_wrong_way_round_get_the_shape_hint():
    def wrong_way(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        return fq @ (V.T @ fk) / (fq @ fk.sum(axis=0))[:, None]

    message = check("linear_attention", wrong_way).message
    assert "Write down the shape of each piece" in message


@pytest.mark.parametrize(
    ("message", "step"), ex.CAUSAL_SLIPS, ids=[m[:30] for m, _ in ex.CAUSAL_SLIPS]
)
def test_each_step_slip_is_named(message, step):
    result = check("linear_attention_step", step)
    assert not result.passed
    assert result.message.startswith(message), result.message


def test_a_failed_step_shows_the_stacked_rows():
    message = check("linear_attention_step", ex.CAUSAL_SLIPS[1][1]).message
    assert "these tokens one at a time, from S = 0 and z = 0, and stacked the rows" in message
    assert "\nExpected, " in message and "\nYour `linear_attention_step` returned, " in message


@pytest.mark.parametrize("readout", ["v_i", "0.9 of the row"])
def test_a_wrong_readout_from_the_right_state_is_told_the_state_is_right(readout):
    # S and z updated right, o_i not read from them: rows of v_i look like a state reset at
    # every step, but the state says otherwise.
    def step(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S, z = S + np.outer(fk, v), z + fk
        return S, z, v if readout == "v_i" else 0.9 * (fq @ S) / (fq @ z)

    result = check("linear_attention_step", step)
    assert not result.passed
    assert result.message.startswith(ex._READ_NOT_FROM_STATE), result.message


@pytest.mark.parametrize("factor", [0.9, float(np.exp(-1.0)), 0.5])
def test_a_state_that_fades_is_told_this_recurrence_has_no_decay(factor):
    result = check("linear_attention_step", ex._decayed(factor))
    assert not result.passed
    assert result.message.startswith("Your rows match a state that fades"), result.message
    assert f"about {factor:.2f}" in result.message and "RetNet" in result.message


def test_a_state_reset_at_every_step_is_still_named():
    reset = dict(ex.CAUSAL_SLIPS)[ex._STATE_RESET]
    assert check("linear_attention_step", reset).message.startswith(ex._STATE_RESET)


def test_reading_before_the_update_with_a_guard_is_named():
    # The read-before-update slip, with an empty state special-cased so that no NaN shows it.
    def guarded(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        o = fq @ S / (fq @ z) if z.any() else np.zeros(len(v))
        return S + np.outer(fk, v), z + fk, o

    result = check("linear_attention_step", guarded)
    assert not result.passed
    assert "one token behind" in result.message and "special case" in result.message


def test_an_o_of_the_wrong_shape_is_asked_about_the_readout():
    def row_of_one(S, z, q, k, v):
        S, z, o = solutions.linear_attention_step(S, z, q, k, v)
        return S, z, o[None]

    message = check("linear_attention_step", row_of_one).message
    assert "The o your `linear_attention_step` returns is shape (1, 2)" in message
    assert "readout" in message and "φ(k) and v" not in message


def test_a_z_returned_as_one_number_is_named():
    def scalar_z(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S, z = S + np.outer(fk, v), np.sum(z) + fk.sum()
        return S, z, fq @ S / (fq.sum() * z)

    message = check("linear_attention_step", scalar_z).message
    assert "The z your `linear_attention_step` returns is one number" in message
    assert message.rstrip().endswith("?")


@pytest.mark.parametrize(
    ("returned", "words"),
    [(lambda S, z, o: o, "a ndarray"), (lambda S, z, o: (S, o), "a tuple of 2"),
     (lambda S, z, o: None, "returned None")],
)  # fmt: skip
def test_a_return_without_the_state_is_named(returned, words):
    def answer(S, z, q, k, v):
        return returned(*solutions.linear_attention_step(S, z, q, k, v))

    message = check("linear_attention_step", answer).message
    assert words in message and "`return S, z, o`" in message and message.rstrip().endswith("?")


@pytest.mark.parametrize(
    ("reorder", "said"),
    [(lambda S, z, o: (S, o, z), "S, o, z"), (lambda S, z, o: (z, S, o), "z, S, o"),
     (lambda S, z, o: (o, S, z), "o, S, z")],
)  # fmt: skip
def test_a_return_in_another_order_is_named(reorder, said):
    # The first case has d_k ≠ d_v, so the shapes tell S, z and o apart; the message is
    # about the order, not about the outer product the shape hint asks after.
    def answer(S, z, q, k, v):
        return reorder(*solutions.linear_attention_step(S, z, q, k, v))

    message = check("linear_attention_step", answer).message
    assert f"returned {said}, in that order" in message, message
    assert "`return S, z, o`" in message and "(d_k, d_v)?" not in message
    assert message.rstrip().endswith("?")


def test_an_outer_product_the_wrong_way_round_gets_the_shape_hint():
    def transposed(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S, z = S + np.outer(v, fk), z + fk
        return S, z, fq @ S / (fq @ z)

    result = check("linear_attention_step", transposed)
    assert not result.passed
    assert "(d_k, d_v)?" in result.message


def test_a_state_updated_in_place_is_told_to_return_new_arrays():
    def in_place(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S += np.outer(fk, v)
        z += fk
        return S, z, fq @ S / (fq @ z)

    message = check("linear_attention_step", in_place).message
    assert "changed its input S in place" in message


@pytest.mark.parametrize("mistake", ex.LINEAR_MISTAKES, ids=lambda m: m.message[:30])
def test_each_linear_slip_is_named(mistake):
    result = check("linear_attention", mistake.compute)
    assert not result.passed
    assert result.message.startswith(mistake.message), result.message


def test_an_array_used_as_a_condition_gets_a_hint():
    def truthy(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if attn_mask:
            S = S + attn_mask
        return attnlab.softmax(S)

    message = check("sdpa_weights", truthy).message
    assert "whether a mask was passed at all" in message and "not None?" in message


def test_a_denominator_of_the_query_features_alone_is_named():
    def query_sum(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        return fq @ (fk.T @ V) / fq.sum(axis=1)[:, None]

    result = check("linear_attention", query_sum)
    assert not result.passed
    assert "the sum of φ(q_i)'s own entries" in result.message


def test_a_denominator_per_feature_is_named():
    def per_feature(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        return fq @ ((fk.T @ V) / fk.sum(axis=0)[:, None])

    result = check("linear_attention", per_feature)
    assert not result.passed
    assert "belongs to each *query*, not to each feature" in result.message


def test_a_z_that_counts_the_tokens_is_named():
    def counting(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S = S + np.outer(fk, v)
        z = z + 1
        return S, z, fq @ S / (fq @ z)

    result = check("linear_attention_step", counting)
    assert not result.passed
    assert result.message.startswith("Your z counts the tokens"), result.message


def test_a_default_scale_of_one_over_d_k_is_named():
    def over_d_k(q, k, attn_mask=None, is_causal=False, scale=None):
        scale = 1 / q.shape[-1] if scale is None else scale
        return in_practice.sdpa_weights(q, k, attn_mask, is_causal, scale)

    result = check("sdpa_weights", over_d_k)
    assert not result.passed
    assert result.message.startswith("Your default factor is 1/d_k"), result.message


def test_sdpa_cases_include_a_float_mask_with_minus_infinity():
    masks = [case.inputs["attn_mask"] for case in ex.sdpa_cases()]
    floats = [m for m in masks if m is not None and m.dtype != bool]
    assert any(np.isneginf(m).any() for m in floats)
    for m in floats:  # no query is left without a key
        assert np.isfinite(m).any(axis=-1).all()


def test_sdpa_allocations_see_the_math_backends_two_matrices():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    math = in_practice.sdpa_allocations("math", 1024)
    flash = in_practice.sdpa_allocations("flash_attention", 1024)
    assert torch.get_num_threads() == threads  # put back as it was
    if math is None or flash is None:
        pytest.skip("this PyTorch's profiler reports no memory")
    matrix = 1024 * 1024 * 4 / 2**20  # one (1024, 1024) float32 matrix
    assert [mib for _, mib in math][:2] >= [0.9 * matrix] * 2  # the scores and the weights
    assert sum(mib for _, mib in flash) < 1


def test_read_back_softmax_finds_every_value_and_linear_spreads_its_weight():
    ns = np.array([4, 16, 64])
    found = in_practice.read_back(ns, c=64, seed=3)
    assert (found["softmax_right"] == 1).all() and (found["softmax_weight"] > 0.99).all()
    assert (found["linear_weight"] * ns < 2).all() and (np.diff(found["linear_weight"]) < 0).all()
    assert set(found) == {"softmax_right", "softmax_weight", "linear_right", "linear_weight"}


@pytest.mark.parametrize("own_softmax", [False, True])
def test_a_strict_causal_rule_is_named_whatever_the_softmax_makes_of_query_0(own_softmax):
    # j < i leaves query 0 no key: attnlab's softmax gives a row of zeros, a hand-written
    # one 0/0. Neither is the after-the-softmax slip, nor a generic NaN.
    def strict(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        if is_causal:
            i, j = np.arange(S.shape[-2])[:, None], np.arange(S.shape[-1])[None, :]
            attn_mask = j < i
        if attn_mask is not None and attn_mask.dtype == bool:
            S = np.where(attn_mask, S, -np.inf)
        elif attn_mask is not None:
            S = S + attn_mask
        if not own_softmax:
            return attnlab.softmax(S)
        with np.errstate(invalid="ignore"):
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)

    result = check("sdpa_weights", strict)
    assert not result.passed
    assert result.message.startswith(ex._STRICT_CAUSAL), result.message


def test_a_default_scale_written_as_a_number_fails():
    # Every case once had d_k = 4, where 0.5 is 1/√d_k.
    def fixed(q, k, attn_mask=None, is_causal=False, scale=None):
        return in_practice.sdpa_weights(q, k, attn_mask, is_causal, 0.5 if scale is None else scale)

    assert not check("sdpa_weights", fixed).passed


def test_a_division_before_a_matmul_is_told_about_precedence():
    def linear(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        return fq @ (fk.T @ V) / fq @ fk.sum(axis=0)

    def step(S, z, q, k, v):
        S, z = S + np.outer(ex.elu_feature(k), v), z + ex.elu_feature(k)
        return S, z, ex.elu_feature(q) @ S / ex.elu_feature(q) @ z

    for exercise, answer in (("linear_attention", linear), ("linear_attention_step", step)):
        message = check(exercise, answer).message
        assert "`/` and `@` bind equally tightly" in message, message
        assert "(d_k, d_v)?" not in message and "Write down the shape" not in message
    assert not ex._divides_before_matmul("fq @ S / (fq @ z)")
    assert not ex._divides_before_matmul("S, z, fq @ S / z.sum(), fq @ z")
    assert ex._divides_before_matmul("o = num / phi(q) @ z")


def test_a_shape_slip_in_the_readout_is_not_asked_about_the_outer_product():
    def readout(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S, z = S + np.outer(fk, v), z + fk
        o = fq @ S / (fq * z)
        return S, z, o

    message = check("linear_attention_step", readout).message
    assert "the one number φ(q_i)ᵀ z_i" in message and "(d_k, d_v)?" not in message, message


def test_a_one_line_step_whose_readout_fails_is_asked_about_the_readout():
    # The outer product on the same line is right; the `@` that fails is the readout's.
    def one_line(S, z, q, k, v):
        fq, fk = ex.elu_feature(q), ex.elu_feature(k)
        S = S + np.outer(fk, v); z = z + fk; return S, z, S @ fq / (fq @ z)  # noqa: E702  # fmt: skip

    message = check("linear_attention_step", one_line).message
    assert "the one number φ(q_i)ᵀ z_i" in message and "(d_k, d_v)?" not in message, message
    assert ex._outside_outer("S + np.outer(fk, v) @ (v)") == "S + np. @ (v)"
