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
    np.testing.assert_array_equal(c["linear_madds"], [2 * 10 * 64 + 160, 2 * 100 * 64 + 1600])
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
    assert "memory stays linear" in result.message and "not work" in result.message


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
    plain = check("causal_lower_right", lambda n_q, n_k: torch.ones(n_q, n_k).tril(n_k - n_q))
    assert plain.passed, plain.message


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
        ("causal_linear_attention", ("np.outer", "np.zeros", "S +", "z +", "cumsum")),
    ],
)
def test_feedback_names_the_mistake_without_writing_the_answer(exercise, answer_code):
    for text in feedback_texts(exercise):
        for code in answer_code:
            assert code not in text, (exercise, code, text)


@pytest.mark.parametrize(
    "exercise", ["linear_attention", "sdpa_weights", "causal_linear_attention"]
)
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
    for h in range(q.shape[0]):
        for i in range(q.shape[1]):
            s = [c * float(q[h, i] @ k[h, j]) for j in range(k.shape[1])]
            for j in range(k.shape[1]):
                if is_causal and j > i:
                    s[j] = -np.inf
                elif attn_mask is not None:
                    m = np.broadcast_to(attn_mask, out.shape)[h, i, j]
                    s[j] = (s[j] if m else -np.inf) if m.dtype == bool else s[j] + m
            e = np.exp(np.array(s) - max(s))
            out[h, i] = e / e.sum()
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


def test_sdpa_weights_with_k_T_or_a_missing_option_gets_a_specific_hint():
    def k_t(q, k, attn_mask=None, is_causal=False, scale=None):
        return attnlab.softmax(q @ k.T)

    def adds_none(q, k, attn_mask=None, is_causal=False, scale=None):
        return attnlab.softmax(q @ np.swapaxes(k, -1, -2) * scale)

    assert "swap only the last two" in check("sdpa_weights", k_t).message
    assert "arrives as None" in check("sdpa_weights", adds_none).message


# ------------------------------------------------------ causal_linear_attention


def test_causal_linear_attention_references_agree(rng):
    Q, K, V = rng.normal(size=(7, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    want = in_practice.causal_linear_attention(Q, K, V)
    for fn in (solutions.causal_linear_attention, ex.causal_linear_reference):
        np.testing.assert_allclose(fn(Q, K, V), want, atol=1e-12)
    assert check("causal_linear_attention", solutions.causal_linear_attention).passed


def _prefix_sums(Q, K, V):
    # The running sums as cumulative sums, all tokens at once: right numbers, but a
    # (d_k, d_v) state for every token.
    fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
    S = np.cumsum(fk[:, :, None] * V[:, None, :], axis=0)  # (n, d_k, d_v)
    z = np.cumsum(fk, axis=0)
    return np.einsum("nk,nkv->nv", fq, S) / np.einsum("nk,nk->n", fq, z)[:, None]


def _every_state(Q, K, V):
    # The recurrence, with every S_i kept in a list.
    fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
    S, z, kept, out = np.zeros((K.shape[1], V.shape[1])), np.zeros(K.shape[1]), [], []
    for i in range(len(Q)):
        S, z = S + np.outer(fk[i], V[i]), z + fk[i]
        kept.append(S)
        out.append(fq[i] @ S / (fq[i] @ z))
    return np.array(out)


@pytest.mark.parametrize("answer", [_prefix_sums, _every_state])
def test_a_state_kept_for_every_token_fails_on_memory(answer):
    result = check("causal_linear_attention", answer)
    assert not result.passed
    message = result.message
    assert "right numbers" in message and "never forms an (n, n) array" in message
    assert "keep a matrix per token" in message and message.rstrip().endswith("?")
    assert f"{ex.STATE_N} tokens with d_k = d_v = {ex.STATE_D}" in message


def test_the_state_stage_leaves_room_on_both_sides():
    # One (d_k, d_v) matrix per token is at least twice the limit; the recurrence at that
    # size, copies of its inputs included, needs under a third of it.
    from attnlab.memory import measured_peak

    assert ex.STATE_N * ex.STATE_D**2 * 8 >= 2 * ex.MEMORY_LIMIT
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(size=(ex.STATE_N, ex.STATE_D)) for _ in range(3))
    for answer in (solutions.causal_linear_attention, in_practice.causal_linear_attention):
        _, peak = measured_peak(lambda: answer(Q.copy(), K.copy(), V.copy()))  # noqa: B023
        assert peak < ex.MEMORY_LIMIT / 3


def _pair_by_pair(causal):
    # Right numbers, each pair scored on its own in Python: quadratic work.
    def answer(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        out = np.zeros((len(Q), V.shape[1]))
        for i in range(len(Q)):
            num, den = np.zeros(V.shape[1]), 0.0
            for j in range(i + 1 if causal else len(K)):
                w = fq[i] @ fk[j]
                num, den = num + w * V[j], den + w
            out[i] = num / den
        return out

    return answer


@pytest.mark.parametrize(
    ("exercise", "causal", "count"),
    [("linear_attention", False, "4 million"), ("causal_linear_attention", True, "2 million")],
)
def test_work_per_pair_that_runs_out_of_time_is_told_so(exercise, causal, count):
    message = check(exercise, _pair_by_pair(causal), timeout=0.5).message
    assert "right numbers on the small inputs" in message and "time limit of 0.5 s" in message
    assert "one at a time" in message or "one j at a time" in message
    assert count in message and "endless loop" not in message
    assert message.rstrip().endswith("?")


def test_a_slow_state_update_still_passes_with_a_question():
    # The recurrence with S updated entry by entry: right, and its state is fixed, but too
    # slow for the d = 64 stage. It passes, with a question about whole-array operations.
    # (Entry by entry only at that size, so that the other inputs take no time at all.)
    def entry_by_entry(Q, K, V):
        if K.shape[1] < ex.STATE_D:
            return solutions.causal_linear_attention(Q, K, V)
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        S, z = np.zeros((K.shape[1], V.shape[1])), np.zeros(K.shape[1])
        out = np.empty((len(Q), V.shape[1]))
        for i in range(len(Q)):
            for a in range(K.shape[1]):
                z[a] += fk[i, a]
                for b in range(V.shape[1]):
                    S[a, b] += fk[i, a] * V[i, b]
            out[i] = fq[i] @ S / (fq[i] @ z)
        return out

    result = check("causal_linear_attention", entry_by_entry, timeout=1.0)
    assert result.passed, result.message
    assert "could not be measured" in result.message and "one entry at a time" in result.message


@pytest.mark.parametrize("mistake", ex.CAUSAL_MISTAKES, ids=lambda m: m.message[:30])
def test_each_recurrence_slip_is_named(mistake):
    result = check("causal_linear_attention", mistake.compute)
    assert not result.passed
    assert result.message.startswith(mistake.message), result.message


def test_the_masked_quadratic_order_fails_on_memory():
    def shortcut(Q, K, V):
        return in_practice.linear_attention_quadratic(Q, K, V, mask=attnlab.causal_mask(len(Q)))

    result = check("causal_linear_attention", shortcut)
    assert not result.passed
    assert "right numbers" in result.message and "(n, n) array" in result.message
    assert result.message.rstrip().endswith("?")


def test_the_recurrence_passes_and_its_memory_is_named():
    result = check("causal_linear_attention", solutions.causal_linear_attention)
    assert result.passed, result.message
    assert "memory stays linear" in result.message
    assert "state does not grow with the tokens" in result.message


def test_reading_before_the_update_with_a_guard_is_named():
    # The read-before-update slip, with row 0 special-cased so that no NaN shows it.
    def guarded(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        S, z = np.zeros((fk.shape[1], V.shape[1])), np.zeros(fk.shape[1])
        out = np.empty((len(Q), V.shape[1]))
        for i in range(len(Q)):
            out[i] = fq[i] @ S / (fq[i] @ z) if i else 0.0
            S, z = S + np.outer(fk[i], V[i]), z + fk[i]
        return out

    result = check("causal_linear_attention", guarded)
    assert not result.passed
    assert "one token behind" in result.message and "special case" in result.message


def test_a_z_kept_as_one_number_is_named_when_matmul_refuses_it():
    def scalar_z(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        S, z, out = np.zeros((K.shape[1], V.shape[1])), 0.0, []
        for i in range(len(Q)):
            S, z = S + np.outer(fk[i], V[i]), z + fk[i].sum()
            out.append(fq[i] @ S / (fq[i] @ z))
        return np.array(out)

    result = check("causal_linear_attention", scalar_z)
    assert not result.passed
    assert "a single number" in result.message and "Is it z?" in result.message


def test_an_outer_product_the_wrong_way_round_gets_the_shape_hint():
    def transposed(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        S, z, out = np.zeros((V.shape[1], K.shape[1])), np.zeros(K.shape[1]), []
        for i in range(len(Q)):
            S, z = S + np.outer(V[i], fk[i]), z + fk[i]
            out.append(fq[i] @ S / (fq[i] @ z))
        return np.array(out)

    result = check("causal_linear_attention", transposed)
    assert not result.passed
    assert "(d_k, d_v)?" in result.message


@pytest.mark.parametrize("mistake", ex.LINEAR_MISTAKES, ids=lambda m: m.message[:30])
def test_each_linear_slip_is_named(mistake):
    result = check("linear_attention", mistake.compute)
    assert not result.passed
    assert result.message.startswith(mistake.message), result.message


def test_the_recurrence_pass_asks_about_work():
    # Re-scoring every earlier key at each token is n²/2 work in linear memory: it passes,
    # and the PASS asks about it.
    def rescoring(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        out = np.empty((len(Q), V.shape[1]))
        for i in range(len(Q)):
            w = fk[: i + 1] @ fq[i]
            out[i] = w @ V[: i + 1] / w.sum()
        return out

    result = check("causal_linear_attention", rescoring)
    assert result.passed, result.message
    assert "not work" in result.message and "every earlier key" in result.message


def _short_loop(out_start):
    # The recurrence with `range(n - 1)`, into an array made by `out_start`.
    def answer(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        S, z = np.zeros((K.shape[1], V.shape[1])), np.zeros(K.shape[1])
        out = out_start((len(Q), V.shape[1]))
        for i in range(len(Q) - 1):
            S, z = S + np.outer(fk[i], V[i]), z + fk[i]
            out[i] = fq[i] @ S / (fq[i] @ z)
        return out

    return answer


@pytest.mark.parametrize("out_start", [np.zeros, lambda shape: np.full(shape, 7.0)])
def test_a_loop_that_misses_the_last_token_is_told_so(out_start):
    result = check("causal_linear_attention", _short_loop(out_start))
    assert not result.passed
    assert result.message.startswith("Your rows are right for every token but the last")


def test_a_state_of_whole_numbers_gets_a_dtype_hint():
    def int_state(Q, K, V):
        fq, fk = ex.elu_feature(Q), ex.elu_feature(K)
        S = np.zeros((K.shape[1], V.shape[1]), dtype=int)
        z = np.zeros(K.shape[1], dtype=int)
        out = np.empty((len(Q), V.shape[1]))
        for i in range(len(Q)):
            S += np.outer(fk[i], V[i])
            z += fk[i]
            out[i] = fq[i] @ S / (fq[i] @ z)
        return out

    message = check("causal_linear_attention", int_state).message
    assert "integer dtype" in message and message.rstrip().endswith("?")


def test_an_array_used_as_a_condition_gets_a_hint():
    def truthy(q, k, attn_mask=None, is_causal=False, scale=None):
        S = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if attn_mask:
            S = S + attn_mask
        return attnlab.softmax(S)

    message = check("sdpa_weights", truthy).message
    assert "whether a mask was passed at all" in message and "not None?" in message
