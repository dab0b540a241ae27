"""Tests for the exercise checker, ``attnlab.exercises``: check() and solution().

Every exercise must accept correct answers in any style, reject each mistake it
declares with the message that names it, and turn anything an answer can do wrong
(raise, hang, return None, change its input) into a FAIL. The mistakes come from the
registry, so an exercise added to a lesson module is tested here without an edit.
"""

import inspect
import json
import math
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import attnlab
from attnlab import softmax as course_softmax
from attnlab.exercises import CheckResult, check, exercise_ids, get_exercise, solution, solutions
from attnlab.exercises.arrays import ArrayCheck, matches, wrong_result
from attnlab.exercises.numbers import NumberCheck

IDS = (
    "best_key",
    "scaled_scores",
    "largest_jacobian_entry",
    "softmax",
    "softmax_jacobian",
    "masked_softmax",
    "attention",
    "masked_attention",
    "scores_for",
    "merge_states",
    "online_softmax",
    "unscaled_as_scaled",
)


def stable_softmax(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------ correct answers


def scores_loop(Q, K):
    S = np.zeros((len(Q), len(K)))
    for i in range(len(Q)):
        for j in range(len(K)):
            for d in range(Q.shape[1]):
                S[i, j] += Q[i, d] * K[j, d]
    return S


def scaled_scores_loop(Q, K):
    d_k = Q.shape[1]
    return [
        [
            sum(q * k for q, k in zip(Q[i], K[j], strict=True)) / math.sqrt(d_k)
            for j in range(len(K))
        ]
        for i in range(len(Q))
    ]


def softmax_loop(x):
    out = []
    for row in x.tolist():
        m = max(row)
        e = [math.exp(v - m) for v in row]
        out.append([v / sum(e) for v in e])
    return out


def softmax_logsumexp(x):
    m = x.max(axis=1)[:, None]
    return np.exp(x - m - np.log(np.exp(x - m).sum(axis=1))[:, None])


def jacobian_loop(P):
    m = len(P[0])
    return [
        [[p[i] * ((1.0 if i == j else 0.0) - p[j]) for j in range(m)] for i in range(m)] for p in P
    ]


def jacobian_rows(P):
    return np.stack([np.diag(p) - np.outer(p, p) for p in P])


def jacobian_broadcast(P):
    m = len(P[0])  # one row read alone is not a loop
    return P[:, :, None] * (np.eye(m) - P[:, None, :])


def jacobian_identity_by_hand(P):
    m = P.shape[1]  # a comprehension over the keys, not the rows, is fine
    eye = np.array([[1.0 if i == j else 0.0 for j in range(m)] for i in range(m)])
    return P[:, :, None] * (eye - P[:, None, :])


def jacobian_index_rows(P):
    P = np.asarray(P)
    J = np.zeros((P.shape[0], P.shape[1], P.shape[1]))
    for r in range(P.shape[0]):
        J[r] = np.diag(P[r]) - np.outer(P[r], P[r])
    return J


def masked_loop_rows(x, mask):
    keep = np.broadcast_to(mask, x.shape)
    out = np.zeros(x.shape)
    for r in range(x.shape[0]):
        kept = x[r][keep[r]]
        if kept.size:  # a row with no key left stays all zeros
            e = np.exp(kept - kept.max())
            out[r][keep[r]] = e / e.sum()
    return out


def masked_divide_where(x, mask):
    m = np.max(x, axis=-1, keepdims=True, where=mask, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(np.where(mask, x - m, -np.inf))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def attention_loop(Q, K, V):
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q):
        s = np.array([q @ k for k in K]) / np.sqrt(len(q))
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ V
    return out


def attention_einsum(Q, K, V):
    S = np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[-1])
    return np.einsum("qk,kv->qv", stable_softmax(S), V)


def masked_loop(Q, K, V, mask):
    if Q.ndim > 2:  # one sequence (and head) at a time
        return [masked_loop(q, k, v, mask) for q, k, v in zip(Q, K, V, strict=True)]
    out = []
    for i in range(len(Q)):
        keys = [j for j in range(len(K)) if mask[i, j]]
        s = np.array([Q[i] @ K[j] for j in keys]) / np.sqrt(Q.shape[1])
        w = np.exp(s - s.max())
        out.append(list((w / w.sum()) @ V[keys]))
    return out


def masked_fill(Q, K, V, mask):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    S[..., ~mask] = -np.inf
    return stable_softmax(S) @ V


def rope_loop(X, start=0):
    out = []
    for i, row in enumerate(X):
        turned = []
        for f in range(len(row) // 2):  # one pair at a time, with its own angle
            a = (start + i) * 10000.0 ** (-2 * f / len(row))
            x, y = row[2 * f], row[2 * f + 1]
            turned += [x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a)]
        out.append(turned)
    return out


def alibi_loop(n, H):
    return [
        [[-(2.0 ** (-8 * (h + 1) / H)) * abs(i - j) for j in range(n)] for i in range(n)]
        for h in range(H)
    ]


def elu_plus_one(x):
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def linear_attention_loop(Q, K, V):
    """One query at a time, from the (d_k, d_v) summary: linear in memory too."""
    phi_k = elu_plus_one(K)
    summary, z = phi_k.T @ V, phi_k.sum(axis=0)
    return np.array([elu_plus_one(q) @ summary / (elu_plus_one(q) @ z) for q in Q])


def linear_attention_einsum(Q, K, V):
    fq, fk = elu_plus_one(Q), elu_plus_one(K)
    kv = np.einsum("nd,ne->de", fk, V)
    return np.einsum("qd,de->qe", fq, kv) / np.einsum("qd,d->q", fq, fk.sum(0))[:, None]


CORRECT = [
    ("best_key", lambda q, length: length * q / math.sqrt(sum(x * x for x in q))),
    ("best_key", lambda q, length: (q * length / np.linalg.norm(q)).astype(np.float32)),
    (
        "new_token_scores",
        lambda x, K_cache, W_Q, W_K: np.append(K_cache @ (x @ W_Q), (x @ W_Q) @ (x @ W_K)),
    ),
    (
        "new_token_scores",
        lambda x, K_cache, W_Q, W_K: [float(k @ (x @ W_Q)) for k in [*K_cache, x @ W_K]],
    ),
    (
        "new_token_scores",
        lambda x, K_cache, W_Q, W_K: np.concatenate([K_cache, [x @ W_K]]) @ W_Q.T @ x,
    ),
    ("score_matrix", lambda W_Q, W_K: W_Q @ W_K.T),
    ("score_matrix", lambda W_Q, W_K: (W_K @ W_Q.T).T),
    ("score_matrix", lambda W_Q, W_K: np.einsum("ik,jk->ij", W_Q, W_K)),
    ("score_matrix", lambda W_Q, W_K: scores_loop(W_Q, W_K)),
    ("scaled_scores", lambda Q, K: Q @ K.T / np.sqrt(K.shape[-1])),
    ("scaled_scores", scaled_scores_loop),
    ("scaled_scores", lambda Q, K: np.einsum("id,jd->ij", Q, K) * Q.shape[1] ** -0.5),
    ("scaled_scores", lambda Q, K: (Q @ K.T / np.sqrt(Q.shape[1])).astype(np.float32)),
    ("scaled_scores", lambda Q, K: tuple(Q @ K.T / math.sqrt(len(Q[0])))),
    ("softmax", softmax_loop),
    ("softmax", softmax_logsumexp),
    ("softmax", lambda x: stable_softmax(x.astype(np.float32))),
    ("softmax", lambda x: stable_softmax(x).astype(np.float32)),
    ("softmax", lambda x: stable_softmax(x).tolist()),
    ("softmax_jacobian", lambda P: np.eye(P.shape[1]) * P[:, None] - np.einsum("ri,rj->rij", P, P)),
    ("softmax_jacobian", lambda P: P[..., None] * (np.eye(P.shape[-1]) - P[..., None, :])),
    ("softmax_jacobian", lambda P: jacobian_broadcast(P).astype(np.float32)),
    ("softmax_jacobian", jacobian_identity_by_hand),
    ("masked_softmax", masked_loop_rows),
    ("masked_softmax", masked_divide_where),
    ("masked_softmax", lambda x, mask: masked_divide_where(x, mask).astype(np.float32)),
    ("masked_softmax", lambda x, mask: masked_loop_rows(x, mask).tolist()),
    ("attention", attention_loop),
    ("attention", attention_einsum),
    ("attention", lambda Q, K, V: (attention_einsum(Q, K, V)).tolist()),
    ("attention", lambda Q, K, V: attention_einsum(Q, K, V).astype(np.float32)),
    ("masked_attention", masked_loop),
    ("masked_attention", masked_fill),
    (
        "masked_attention",
        lambda Q, K, V, mask: (
            stable_softmax(
                Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + np.where(mask, 0.0, -1e9)
            )
            @ V
        ),
    ),
    (
        "masked_attention",
        lambda Q, K, V, mask: (
            stable_softmax(
                np.where(
                    mask, np.einsum("...id,...jd->...ij", Q, K) / np.sqrt(Q.shape[-1]), -np.inf
                )
            )
            @ V
        ).astype(np.float32),
    ),
    ("output_change", lambda A, j, delta: A[:, j, None] * delta[None, :]),
    ("output_change", lambda A, j, delta: A @ np.outer(np.eye(A.shape[1])[j], delta)),
    ("rope", rope_loop),
    ("alibi_biases", alibi_loop),
    (
        "alibi_biases",
        lambda n, H: (
            -np.logspace(-8 / H, -8, H, base=2)[:, None, None]
            * np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
        ),
    ),
    (
        "alibi_biases",
        lambda n, H: [
            (-(2.0 ** (-8 * h / H)) * np.abs(np.arange(n)[:, None] - np.arange(n))).tolist()
            for h in range(1, H + 1)
        ],
    ),
    (
        "alibi_biases",
        lambda n, H: np.einsum(
            "h,ij->hij",
            -np.geomspace(2.0 ** (-8 / H), 2.0**-8, H),
            np.abs(np.arange(n)[:, None] - np.arange(n)),
        ).astype(np.float32),
    ),
    ("causal_lower_right", lambda n_q, n_k: np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)),
    (
        "causal_lower_right",
        lambda n_q, n_k: [[j - (n_k - n_q) <= i for j in range(n_k)] for i in range(n_q)],
    ),
    ("causal_lower_right", lambda n_q, n_k: np.tri(n_q, n_k, n_k - n_q).astype(bool)),
    ("linear_attention", linear_attention_loop),
    ("linear_attention", linear_attention_einsum),
    ("linear_attention", lambda Q, K, V: linear_attention_einsum(Q, K, V).astype(np.float32)),
]


@pytest.mark.parametrize(
    ("exercise", "answer"), CORRECT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(CORRECT)]
)
def test_correct_answers_in_any_style_pass(exercise, answer):
    result = check(exercise, answer)
    assert result.passed, result.message
    assert result.message.startswith("Well done!")


@pytest.mark.parametrize("exercise", IDS)
def test_reference_solution_passes_its_own_check(exercise):
    result = check(exercise, getattr(solutions, exercise))
    assert result.passed, result.message
    assert "Note:" not in result.message


@pytest.mark.parametrize(
    ("answer", "dtype"),
    [
        (lambda n_q, n_k: np.tri(n_q, n_k, n_k - n_q, dtype=int), "int64"),
        (lambda n_q, n_k: np.tri(n_q, n_k, n_k - n_q), "float64"),
    ],
)
def test_causal_mask_of_zeros_and_ones_fails_as_pytorch_would_add_it(answer, dtype):
    # The mask is meant for PyTorch's attn_mask, which adds a float mask and refuses an int one.
    result = check("causal_lower_right", answer)
    assert not result.passed
    assert f"right pattern, but it holds the numbers 0 and 1 (dtype {dtype})" in result.message


# ------------------------------------------- every declared mistake, from the registry


def declared_mistakes():
    """(id, mistake) for every mistake of every function exercise."""
    for exercise in exercise_ids():
        checker = get_exercise(exercise).checker
        if isinstance(checker, ArrayCheck):
            yield from ((exercise, m) for m in checker.mistakes)


def declared_slips():
    """(id, wrong number, message) for every slip of every numeric question; a slip
    within the pass tolerance (a number rounded too coarsely) is tried just outside it."""
    for exercise in exercise_ids():
        checker = get_exercise(exercise).checker
        if isinstance(checker, NumberCheck):
            for slip in checker.slips():
                value = slip.value
                if abs(value - checker.want) <= checker.tolerance:
                    value = checker.want + (checker.tolerance + slip.tolerance) / 2
                yield exercise, value, slip.message


MISTAKES = list(declared_mistakes())
SLIPS = list(declared_slips())


def test_every_exercise_declares_mistakes():
    with_mistakes = {e for e, _ in MISTAKES} | {e for e, _, _ in SLIPS}
    assert with_mistakes == set(exercise_ids())


@pytest.mark.parametrize(
    ("exercise", "mistake"), MISTAKES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(MISTAKES)]
)
def test_each_declared_mistake_is_caught_and_named(exercise, mistake):
    checker = get_exercise(exercise).checker
    # It really is a mistake: on some test input it differs from the reference.
    assert any(
        (wrong := wrong_result(mistake, case.inputs)) is not None
        and not matches(wrong, np.asarray(checker.reference(*case.inputs.values())))
        for case in checker.cases()
    )
    result = check(exercise, mistake.compute)
    assert not result.passed
    assert mistake.message in result.message
    # ...and the learner sees the input and what their function returned, and what it
    # should have returned unless that would give the answer away.
    assert "\nTest input: " in result.message
    assert ("\nExpected, " in result.message) == checker.show_expected
    assert (f"\nYour `{exercise}` returned, " in result.message) == checker.show_returned


@pytest.mark.parametrize(
    ("exercise", "value", "message"), SLIPS, ids=[f"{e}={v:g}" for e, v, _ in SLIPS]
)
def test_each_declared_wrong_number_is_caught_and_named(exercise, value, message):
    checker = get_exercise(exercise).checker
    assert abs(value - checker.want) > checker.tolerance
    result = check(exercise, value)
    assert not result.passed
    assert message in result.message


# A mask of the wrong kind is refused before any numbers are compared.
@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda n_q, n_k: np.where(np.tri(n_q, n_k, n_k - n_q) > 0, 0.0, -np.inf), "additive"),
        (lambda n_q, n_k: 2 * np.tri(n_q, n_k, n_k - n_q), "only True and False"),
    ],
)
def test_a_mask_of_the_wrong_kind_is_refused(answer, phrase):
    result = check("causal_lower_right", answer)
    assert not result.passed
    assert phrase in result.message


def test_a_right_masked_softmax_that_warns_on_an_empty_row_fails():
    def warns(x, mask):
        kept = np.where(mask, x, -np.inf)
        e = np.exp(kept - kept.max(axis=-1, keepdims=True))  # -inf - (-inf) on an empty row
        return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))

    result = check("masked_softmax", warns)
    assert not result.passed
    assert "NumPy warns along the way" in result.message
    assert "every key of row 1 blocked" in result.message


def _masked_shift_fixed_divisor_not(x, mask):
    kept = np.where(mask, x, -np.inf)
    m = kept.max(axis=-1, keepdims=True)
    e = np.exp(kept - np.where(m > -np.inf, m, 0.0))
    return e / e.sum(axis=-1, keepdims=True)  # 0 / 0 on an empty row


def _masked_unshifted_empty_row(x, mask):
    kept = np.where(mask, x, -np.inf)
    e = np.exp(kept - kept.max(axis=-1, keepdims=True))  # -inf - (-inf) on an empty row
    return e / e.sum(axis=-1, keepdims=True)


def _masked_with_ma(x, mask):
    xm = np.ma.masked_array(x, mask=~np.broadcast_to(mask, x.shape))
    e = np.ma.exp(xm - xm.max(axis=-1, keepdims=True))  # exp of the blocked scores too
    return (e / e.sum(axis=-1, keepdims=True)).filled(0.0)


def _masked_boolean_index(x, mask):
    x = x.copy()
    x[~mask] = -np.inf  # an IndexError for a 1-D mask
    return np.nan_to_num(masked_divide_where(x, np.isfinite(x)))


def _masked_loop_mask_i(x, mask):
    out = np.zeros(x.shape)
    for i in range(x.shape[0]):
        row = np.where(mask[i], x[i], -np.inf)  # a 1-D mask: the flag of key i
        if np.isfinite(row).any():
            e = np.exp(row - row.max())
            out[i] = e / e.sum()
    return out


def _masked_shift_at_least_zero(x, mask):
    kept = np.where(mask, x, -np.inf)
    m = np.maximum(kept.max(axis=-1, keepdims=True), 0.0)  # a row topped by -998 shifts by 0
    e = np.exp(kept - m)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


@pytest.mark.parametrize(
    ("answer", "said", "not_said"),
    [
        (_masked_shift_at_least_zero, "Your shift is not that row's maximum", "largest difference"),
        (_masked_shift_fixed_divisor_not, "Your shift is fine there", "-inf - (-inf)"),
        (_masked_unshifted_empty_row, "-inf - (-inf) is NaN", "Your shift is fine"),
        (_masked_with_ma, "overflow encountered in exp", "every key blocked"),
        (_masked_boolean_index, "one flag per key, shared by every row", "keepdims"),
        (_masked_loop_mask_i, "`mask[i]` is then the flag of key i", "where do the blocked"),
    ],
)
def test_masked_softmax_feedback_names_the_step_that_fails(answer, said, not_said):
    result = check("masked_softmax", answer)
    assert not result.passed
    assert said in result.message
    assert not_said not in result.message


def _mask_by_arithmetic(x, mask):
    kept = x * mask + (~mask) * -np.inf  # False · (-inf) is nan
    e = np.exp(kept - kept.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mask_after_exp(x, mask):
    m = np.where(mask, x, -np.inf).max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(m > -np.inf, m, 0.0)) * mask  # inf · False is nan
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


@pytest.mark.parametrize("answer", [_mask_by_arithmetic, _mask_after_exp])
def test_a_masked_softmax_that_multiplies_by_the_mask_is_told_to_use_where(answer):
    result = check("masked_softmax", answer)
    assert not result.passed
    assert "np.where(mask, x, -np.inf)" in result.message
    assert "is nan, not 0" in result.message


def test_example_is_small_and_rounded_to_three_decimals():
    message = check("scaled_scores", lambda Q, K: Q @ K.T / Q.shape[1]).message
    assert "Test input: Q (2×3) and K (4×3)" in message
    numbers = [
        w
        for line in message.splitlines()
        if line.startswith("    ")
        for w in line.replace("[", " ").replace("]", " ").split()
    ]
    assert numbers and all(len(w.split(".")[-1]) <= 3 for w in numbers if "." in w)


def test_feedback_is_deterministic():
    def wrong(Q, K):
        return K @ Q.T

    assert check("scaled_scores", wrong).message == check("scaled_scores", wrong).message


def test_overflow_message_teaches_the_fix():
    message = check("softmax", lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)).message
    assert "exp(10000) is inf" in message
    assert "keeps every exponent ≤ 0" in message
    assert "rows near -10000, 0 and +10000" in message


@pytest.mark.parametrize(
    "answer",
    [
        jacobian_loop,
        jacobian_rows,
        jacobian_index_rows,
        lambda P: np.apply_along_axis(lambda p: np.diag(p) - np.outer(p, p), 1, P),
        lambda P: np.array(list(map(lambda p: np.diag(p) - np.outer(p, p), P))),
    ],
)
def test_a_right_jacobian_built_row_by_row_is_refused_kindly(answer):
    result = check("softmax_jacobian", answer)
    assert not result.passed
    assert "Right numbers, but with a Python loop over the rows" in result.message
    assert "np.newaxis" not in result.message and "None]" not in result.message


def test_a_jacobian_of_softmax_of_p_is_told_p_is_already_weights():
    result = check("softmax_jacobian", lambda P: jacobian_rows(course_softmax(P)))
    assert not result.passed
    assert "P is already weights" in result.message


def test_a_log_softmax_is_asked_what_turns_log_p_into_p():
    def log_softmax(x):
        z = x - x.max(axis=-1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))

    result = check("softmax", log_softmax)
    assert not result.passed
    assert "look like log p" in result.message


def test_a_masked_softmax_that_silences_warnings_is_refused():
    def silenced(x, mask):
        with np.errstate(all="ignore"):
            kept = np.where(mask, x, -np.inf)
            e = np.exp(kept - kept.max(axis=-1, keepdims=True))
            return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))

    result = check("masked_softmax", silenced)
    assert not result.passed
    assert "switches NumPy's warnings off" in result.message


def test_unmatched_wrong_softmax_gets_a_property_hint():
    result = check("softmax", lambda x: stable_softmax(x) * 2)
    assert not result.passed
    assert "rows sum to" in result.message


def test_unmatched_wrong_jacobian_gets_a_property_hint():
    result = check("softmax_jacobian", lambda P: jacobian_rows(P) + 0.1 * np.eye(P.shape[1]))
    assert "don't sum to 0" in result.message
    result = check(
        "softmax_jacobian", lambda P: np.stack([np.diag(p) - np.outer(p, p**2) for p in P])
    )
    assert "isn't symmetric" in result.message


def test_wrong_numbers_without_a_known_cause_report_the_largest_difference():
    result = check("scaled_scores", lambda Q, K: Q @ K.T / np.sqrt(Q.shape[1]) + 1.0)
    assert "largest difference is 1" in result.message


# ------------------------------------------------- what an answer can do wrong


def raises_value_error(x):
    y = x[:, 0]
    return np.reshape(y, (7, 7))  # the line the message should point at


def test_exception_in_answer_is_reported_with_their_line_not_a_traceback():
    result = check("softmax", raises_value_error)
    assert not result.passed
    assert "raised ValueError" in result.message
    assert "np.reshape(y, (7, 7))" in result.message
    assert "in `raises_value_error`" in result.message
    assert "Traceback" not in result.message
    assert "attnlab/exercises" not in result.message
    assert "when called with x of shape (3, 3)" in result.message


def test_shape_error_in_answer_gets_the_exercise_hint():
    result = check("scaled_scores", lambda Q, K: Q @ K if Q.shape != K.shape else Q @ K.T)
    assert "raised ValueError" in result.message
    assert "`Q @ K.T` is (n_q, d_k) @ (d_k, n_k)" in result.message


def test_none_return_asks_about_return():
    def softmax(x):
        np.exp(x)

    result = check("softmax", softmax)
    assert not result.passed
    assert "returned None" in result.message
    assert "forget `return`" in result.message


def test_not_implemented_is_friendly():
    def attention(Q, K, V):
        raise NotImplementedError

    result = check("attention", attention)
    assert not result.passed
    assert "haven't written `attention` yet" in result.message
    assert "NotImplementedError" in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda Q, K: (Q @ K.T)[0], "returned shape (4,), but the result should have shape"),
        (lambda Q, K: np.zeros((2, 2)), "shape (2, 2)"),
        (lambda Q, K: 3.0, "a single number"),
        (lambda Q, K: np.ones((K.shape[0], Q.shape[0] + 1)), "one row per query"),
    ],
)
def test_wrong_shape_states_expected_and_got(answer, phrase):
    result = check("scaled_scores", answer)
    assert not result.passed
    assert phrase in result.message


def test_reversed_shape_hints_at_a_transpose():
    result = check("attention", lambda Q, K, V: np.zeros((V.shape[1], Q.shape[0])))
    assert "shape (5, 2)" in result.message and "shape (2, 5)" in result.message
    assert "transposed" in result.message


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (lambda x: "[[0.5, 0.5]]", "returned a string"),
        (lambda x: {"p": x}, "not numbers"),
        (lambda x: x + 0j, "complex numbers"),
        (lambda x: [[1.0, 2.0], [3.0]], "cannot turn into one array"),
        (lambda x: (stable_softmax(x), x), "returned 2 arrays"),
        # the output and its weights, of different shapes: still two things, not ragged rows
        (lambda x: (stable_softmax(x), stable_softmax(x)[..., None]), "returned 2 arrays"),
        (lambda x: np.full(x.shape, np.nan), "NaN or inf"),
        (lambda x: np.full(x.shape, np.inf), "NaN or inf"),
    ],
)
def test_wrong_kind_of_result_fails_with_a_message(answer, phrase):
    result = check("softmax", answer)
    assert not result.passed
    assert phrase in result.message


def test_changing_the_input_in_place_fails():
    def softmax(x):
        x -= x.max(axis=-1, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=-1, keepdims=True)
        return x

    result = check("softmax", softmax)
    assert not result.passed
    assert "changed its input x in place" in result.message
    assert "compute into a new array" in result.message


def test_changing_q_in_place_names_q():
    def attention(Q, K, V):
        Q /= np.sqrt(Q.shape[1])
        return stable_softmax(Q @ K.T) @ V

    assert "changed its input Q in place" in check("attention", attention).message


def test_endless_loop_is_stopped():
    def softmax(x):
        while True:
            pass

    result = check("softmax", softmax, timeout=0.5)
    assert not result.passed
    assert "took longer than 0.5 s" in result.message
    assert "endless loop" in result.message


def test_endless_loop_that_swallows_exceptions_is_stopped():
    def softmax(x):
        while True:
            try:
                while True:
                    pass
            except Exception:
                pass

    assert "endless loop" in check("softmax", softmax, timeout=0.3).message


def test_time_limit_restores_the_previous_alarm_handler_and_timer():
    def previous_handler(signum, frame):
        pass

    old = signal.signal(signal.SIGALRM, previous_handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        check("softmax", solutions.softmax, timeout=2)
        assert signal.getsignal(signal.SIGALRM) is previous_handler
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 100.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_outside_the_main_thread_an_endless_loop_is_stopped_too():
    stop = threading.Event()
    results = []

    def softmax(x):
        while not stop.is_set():
            pass

    def run():
        results.append(check("softmax", softmax, timeout=0.3))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    stop.set()
    assert results and not results[0].passed
    assert "endless loop" in results[0].message
    assert "in the background" in results[0].message


def test_outside_the_main_thread_a_correct_answer_passes():
    results = []
    worker = threading.Thread(
        target=lambda: results.append(check("scaled_scores", solutions.scaled_scores))
    )
    worker.start()
    worker.join(10)
    assert results and results[0].passed


def test_no_time_limit_with_timeout_none():
    assert check("scaled_scores", solutions.scaled_scores, timeout=None).passed


def _no_threads(self):
    raise RuntimeError("can't start new thread")


def _no_timer(*args):
    raise OSError("setitimer is not supported")


@pytest.mark.parametrize("timer", ["missing", "failing"])
def test_without_signals_and_threads_answers_run_without_a_time_limit(monkeypatch, timer):
    # What Pyodide (JupyterLite) offers: no working setitimer, and no threads.
    if timer == "missing":
        monkeypatch.delattr(signal, "setitimer")
    else:
        monkeypatch.setattr(signal, "setitimer", _no_timer)
    monkeypatch.setattr(threading.Thread, "start", _no_threads)
    handler = signal.getsignal(signal.SIGALRM)
    assert check("softmax", solutions.softmax).passed
    assert (
        "transposed" in check("scaled_scores", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[1])).message
    )
    assert "raised ValueError" in check("softmax", raises_value_error).message
    assert signal.getsignal(signal.SIGALRM) is handler


def test_other_failures_never_raise():
    def calls_exit(x):
        raise SystemExit(1)

    def uses_undefined(x):
        return undefined_name(x)  # noqa: F821

    assert "not exit" in check("softmax", calls_exit).message
    assert "isn't defined" in check("softmax", uses_undefined).message
    wrong_parameters = check("attention", lambda Q, K: Q)
    assert "`attention(Q, K, V)`" in wrong_parameters.message

    def recurses(x):
        return recurses(x)

    assert "RecursionError" in check("softmax", recurses).message


def test_passing_a_result_instead_of_the_function_fails_kindly():
    result = check("scaled_scores", np.zeros((2, 2)))
    assert not result.passed
    assert "your function itself" in result.message


def test_warnings_from_the_answer_are_silenced(recwarn):
    check("softmax", lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True))
    check("attention", lambda Q, K, V: np.log(-np.ones((Q.shape[0], V.shape[1]))))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# ---------------------------------------------------------------- the API


def test_unknown_id_raises_value_error_listing_the_ids():
    with pytest.raises(ValueError, match="Unknown exercise id 'softmx'") as info:
        check("softmx", solutions.softmax)
    for exercise in IDS:
        assert repr(exercise) in str(info.value)
    assert "Did you mean 'softmax'?" in str(info.value)
    with pytest.raises(ValueError, match="Known ids"):
        solution("nope")


def test_all_ids_are_registered():
    assert set(IDS) <= set(exercise_ids())


def test_result_is_truthy_only_when_passed_and_prints_plainly():
    passed = check("scaled_scores", solutions.scaled_scores)
    failed = check("scaled_scores", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[1]))
    assert isinstance(passed, CheckResult)
    assert bool(passed) is True and bool(failed) is False
    assert str(passed).startswith("PASS: ") and repr(passed).startswith("PASS: ")
    assert str(failed).startswith("FAIL: ") and repr(failed).startswith("FAIL: ")
    assert passed.exercise == "scaled_scores"


def test_html_shows_pass_and_fail_boxes_and_escapes():
    passed = check("scaled_scores", solutions.scaled_scores)._repr_html_()
    assert "✔ PASS" in passed and "<code>scaled_scores</code>" in passed and "FAIL" not in passed
    failed = CheckResult(False, "Your <script>alert(1)</script> & `x < y`\n\n    [[1 2]]", "s")
    html = failed._repr_html_()
    assert "✘ FAIL" in html and "PASS" not in html
    assert "<script>" not in html
    assert "&lt;script&gt;" in html and "&amp;" in html
    assert "<code>x &lt; y</code>" in html
    assert "<pre" in html and "[[1 2]]" in html


def test_html_shows_emphasis_but_leaves_products_and_code_alone():
    message = "the *last* axis, not 2 * d_k or a*b; `x * y *z*` stays code"
    html = CheckResult(False, message, "s")._repr_html_()
    assert "the <em>last</em> axis" in html
    assert "2 * d_k" in html and "a*b" in html
    assert "<code>x * y *z*</code>" in html


def test_html_of_a_real_failure_escapes_the_learners_error():
    def softmax(x):
        raise ValueError("<bad>")

    html = check("softmax", softmax)._repr_html_()
    assert "&lt;bad&gt;" in html and "<bad>" not in html


@pytest.mark.parametrize("exercise", IDS)
def test_solution_returns_the_reference_source(exercise):
    code = solution(exercise)
    assert isinstance(code, str)
    if inspect.signature(get_exercise(exercise).solution).parameters:
        assert code.startswith(f"def {exercise}(")
        assert "return" in code
    else:  # a number to assign: shown as the answer cell would hold it
        assert "def " not in code and "return" not in code
        assert f"answer_{exercise} = " in code
    assert "raise" not in code  # no validation noise
    assert str(code) == repr(code) == code
    markdown = code._repr_markdown_()
    assert "```python\n" in markdown and code in markdown
    assert "notebooks/" in markdown


@pytest.mark.parametrize("exercise", ["std_512", "attention_by_hand"])
def test_a_number_solution_runs_as_an_answer_cell(exercise):
    cell: dict = {"np": np}
    exec(solution(exercise), cell)
    assert check(exercise, cell[f"answer_{exercise}"]).passed


def test_solution_mentions_the_functions_it_builds_on():
    assert solution("attention").uses == ("softmax",)
    assert "It calls `softmax`" in solution("attention")._repr_markdown_()
    assert solution("score_matrix").uses == ()


def test_exercises_know_their_lessons():
    lessons = {exercise: get_exercise(exercise).lesson for exercise in IDS}
    assert lessons == {
        "best_key": "notebooks/01_dot_product.ipynb",
        "scaled_scores": "notebooks/02_variance.ipynb",
        "largest_jacobian_entry": "notebooks/03_scaling.ipynb",
        "softmax": "notebooks/04_softmax.ipynb",
        "softmax_jacobian": "notebooks/04_softmax.ipynb",
        "masked_softmax": "notebooks/04_softmax.ipynb",
        "attention": "notebooks/05_values.ipynb",
        "masked_attention": "notebooks/05_values.ipynb",
        "scores_for": "notebooks/05_values.ipynb",
        "merge_states": "notebooks/07_cost_and_tiling.ipynb",
        "online_softmax": "notebooks/07_cost_and_tiling.ipynb",
        "unscaled_as_scaled": "notebooks/08_does_scaling_matter.ipynb",
    }
    for exercise in exercise_ids():
        lesson = Path(__file__).resolve().parents[1] / get_exercise(exercise).lesson
        assert lesson.exists(), exercise


NEW_LESSON = """
import numpy as np

from .arrays import ArrayCheck, Case, Mistake
from .registry import register


def double(x):
    return 2 * x


register(
    "notebooks/99_extra.ipynb",
    double,
    "double(x) -> 2 x",
    ArrayCheck(
        lambda: [Case("x = [1, 2]", {"x": np.array([1.0, 2.0])})],
        reference=lambda x: 2 * x,
        shape_rule="the shape of x",
        mistakes=(Mistake("You tripled x.", lambda x: 3 * x),),
    ),
)
"""

ADD_LESSON = """
import importlib.util, json, pathlib, sys
import attnlab
package = pathlib.Path(attnlab.__file__).parent / "exercises"
# The package as installed, with one more folder in which to find lesson modules.
spec = importlib.util.spec_from_file_location(
    "attnlab.exercises", package / "__init__.py",
    submodule_search_locations=[str(package), sys.argv[1]],
)
exercises = importlib.util.module_from_spec(spec)
sys.modules["attnlab.exercises"] = exercises
spec.loader.exec_module(exercises)
from attnlab.exercises.arrays import ArrayCheck
from attnlab.exercises.registry import register
try:
    taken_id = exercises.solutions.best_key
    register("notebooks/98_other.ipynb", taken_id, "", ArrayCheck(list, abs, ""))
except ValueError as exc:
    taken = str(exc)
print(json.dumps({
    "ids": exercises.exercise_ids(),
    "right": str(exercises.check("double", lambda x: x + x)),
    "wrong": str(exercises.check("double", lambda x: x * 3)),
    "solution": exercises.solution("double"),
    "taken": taken,
}))
"""


def test_a_new_lesson_is_one_module_found_without_any_other_edit(tmp_path):
    (tmp_path / "ex99_extra.py").write_text(NEW_LESSON)
    out = subprocess.run(
        [sys.executable, "-c", ADD_LESSON, str(tmp_path)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["ids"][-1] == "double" and "best_key" in seen["ids"]
    assert seen["right"].startswith("PASS")
    assert seen["wrong"].startswith("FAIL: You tripled x.")
    assert seen["solution"].startswith("def double(x):")
    assert "already used by notebooks/01_dot_product.ipynb" in seen["taken"]


def test_importing_the_checker_needs_only_numpy_and_the_standard_library():
    code = (
        "import json, sys, attnlab.exercises\n"
        "top = {m.split('.')[0] for m in sys.modules if not m.startswith('_')}\n"
        "print(json.dumps(sorted(top - set(sys.stdlib_module_names))))\n"
    )
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo
    )
    assert set(json.loads(out.stdout)) <= {"attnlab", "numpy"}


@pytest.mark.parametrize("timeout", [0, -1, "5", True])
def test_a_bad_timeout_is_the_callers_error(timeout):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        check("scaled_scores", solutions.scaled_scores, timeout=timeout)


@pytest.mark.parametrize("blocked", [-5.0, -10.0])
def test_masked_attention_names_a_finite_blocked_score(blocked):
    # e^-10 is not 0: the numbers are close enough to print alike, so the feedback must say why.
    def leaky(Q, K, V, mask):
        S = np.where(mask, Q @ K.T / np.sqrt(Q.shape[1]), blocked)
        return course_softmax(S) @ V

    result = check("masked_attention", leaky)
    assert not result
    assert f"score {blocked:g} instead of -inf" in result.message


def test_a_mask_multiplied_by_minus_inf_is_explained():
    def nan_mask(Q, K, V, mask):
        return course_softmax(Q @ K.T / np.sqrt(Q.shape[1]) + (-np.inf) * ~mask) @ V

    result = check("masked_attention", nan_mask)
    assert not result and "0 * inf" in result.message


def _masked(scores_of, fill=-np.inf, axis=-1):
    def answer(Q, K, V, mask):
        S = np.where(mask, scores_of(Q, K) / np.sqrt(Q.shape[-1]), fill)
        return course_softmax(S, axis=axis) @ V

    return answer


def test_masked_attention_works_for_batches_and_heads_and_says_why_not():
    swapped = _masked(lambda Q, K: Q @ np.swapaxes(K, -1, -2))
    assert check("masked_attention", swapped).passed
    assert check("masked_attention", _masked(lambda Q, K: Q @ np.swapaxes(K, -1, -2), -1e9))
    # K.T reverses every axis of a batched K: the shape hint asks which two must swap
    message = check("masked_attention", _masked(lambda Q, K: Q @ K.T)).message
    assert "raised ValueError" in message and "swap only the last two" in message
    # a softmax over axis 1 is right for 2-D scores only
    message = check("masked_attention", _masked(lambda Q, K: Q @ np.swapaxes(K, -1, -2), axis=1))
    assert "whatever comes in front" in message.message


@pytest.mark.parametrize("blocked", [-50.0, -100.0])
def test_a_finite_blocked_score_loses_to_very_low_allowed_scores(blocked):
    answer = _masked(lambda Q, K: Q @ np.swapaxes(K, -1, -2), blocked)
    result = check("masked_attention", answer)
    assert not result and "large but finite score" in result.message


def test_renormalising_after_the_softmax_is_named_where_it_gives_nan():
    def after(Q, K, V, mask):
        W = course_softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])) * mask
        return W / W.sum(axis=-1, keepdims=True) @ V

    result = check("masked_attention", after)
    assert not result and "0 / 0 is NaN" in result.message


@pytest.mark.parametrize("exercise", ["softmax", "alibi_biases", "score_matrix"])
def test_an_answer_of_only_zeros_is_asked_whether_it_is_a_placeholder(exercise):
    def zeros(*args):
        return np.zeros_like(np.asarray(get_exercise(exercise).solution(*args), dtype=float))

    message = check(exercise, zeros).message
    assert "returns only zeros" in message and "placeholder" in message


@pytest.mark.parametrize(
    ("exercise_id", "course_answer", "named"),
    [
        ("softmax", lambda x: attnlab.softmax(x), "attnlab.softmax"),
        ("attention", lambda Q, K, V: attnlab.attention(Q, K, V), "attnlab.attention"),
        ("online_softmax", lambda scores, block: attnlab.softmax(scores), "attnlab.softmax"),
    ],
)
def test_an_answer_that_runs_the_courses_own_function_is_told_to_write_it(
    exercise_id, course_answer, named
):
    result = check(exercise_id, course_answer)
    assert not result.passed
    assert f"runs the course's own `{named}`" in result.message
    assert sys.getprofile() is None  # the spy is gone after the check


def test_the_courses_functions_may_be_used_inside_another_exercise():
    # Lesson 05's attention may use the course's softmax: only the exercise's own job is off limits.
    def attention(Q, K, V):
        return attnlab.softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V

    assert check("attention", attention).passed


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda n_q, n_k, d_k, d_v: (n_q, n_k + 1), "rows is right, the number of columns is not"),
        (lambda n_q, n_k, d_k, d_v: (n_k + 1, d_v), "columns is right, the number of rows is not"),
        (lambda n_q, n_k, d_k, d_v: (n_k, n_q), "Neither number is right"),
    ],
)
def test_a_shape_no_named_slip_explains_is_told_which_number_is_off(answer, says):
    result = check("output_shape", answer)
    assert not result.passed
    assert says in result.message
    assert "Expected" not in result.message  # the answer is not shown as an array


def test_a_number_the_case_label_names_is_not_listed_again():
    message = check("scale_factor", lambda d_k: d_k**-1 / 2).message
    assert message.count("d_k = 4") == 1
