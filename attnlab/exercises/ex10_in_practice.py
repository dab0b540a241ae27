"""Exercises ``linear_attention`` (elu(x) + 1 features, multiplied in the order that
never forms an n × n matrix), ``causal_lower_right`` (the causal mask of the last n_q of
n_k tokens) and ``head_entropy`` (the mean attention entropy of each head, with masked
keys whose weight is exactly 0).

The feedback names the mistake and asks the question that leads to the fix; it does
not write the answer's normaliser, offset or logarithm in code.

The checker sees results, not the order of the products, so ``linear_attention`` is
run once more, after it gives the right numbers on the small inputs, on 2000 queries
and keys while tracemalloc measures the memory NumPy allocates: an answer that forms
the (n, n) matrix φ(Q) φ(K)ᵀ needs about 31 MiB there, one that multiplies φ(K)ᵀ V
first well under 1 MiB. Where tracemalloc sees no NumPy memory, that part cannot fail.
Memory is not work: a loop over the queries, each scored against every key, stays in
linear memory while doing n_q × n_k work. Timing cannot tell the two apart reliably on
a busy machine (the linear order's time from n to 4n grows by 4 to 8 at these sizes,
such a loop's by about 10), so the PASS certifies the memory only and asks the learner
about the work.

Lesson: ``notebooks/10_in_practice.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..masks import causal_lower_right
from ..memory import measured_peak
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, bool_mask, readable, softmax_rows
from .calling import call_answer, silenced
from .messages import CheckResult, Fail
from .registry import register

LESSON = "notebooks/10_in_practice.ipynb"


# The references, in NumPy only (the checker never imports matplotlib); the lesson's own
# versions in attnlab.lessons.in_practice are tested to agree with them.
def elu_feature(x):
    """φ(x) = elu(x) + 1: x + 1 for x > 0, eˣ otherwise."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention_reference(Q, K, V):
    fq, fk = elu_feature(Q), elu_feature(K)
    return (fq @ (fk.T @ np.asarray(V, dtype=float))) / (fq @ fk.sum(axis=0))[:, None]


# -------------------------------------------------------------- linear_attention


def linear_cases() -> list[Case]:
    rng = np.random.default_rng(808)
    shapes = [
        ("Q (3×2), K and V (4×2)", 3, 4, 2, 2),
        ("Q (2×3), K (5×3), V (5×2): d_v differs from d_k", 2, 5, 3, 2),
        ("Q, K and V (4×4), one query with large entries", 4, 4, 4, 4),
        ("a single query and a single key (1×3)", 1, 1, 3, 3),
    ]
    cases = []
    for label, n_q, n_k, d_k, d_v in shapes:
        Q = readable(rng, n_q, d_k)
        if "large" in label:
            Q[0] *= 6.0
        cases.append(
            Case(label, {"Q": Q, "K": readable(rng, n_k, d_k), "V": readable(rng, n_k, d_v)})
        )
    return cases


def _with(phi, normalise="rows"):
    """Linear attention with the feature map ``phi`` and one way of normalising."""

    def compute(Q, K, V):
        fq, fk = phi(Q), phi(K)
        out = fq @ (fk.T @ V)
        if normalise == "rows":
            return out / (fq @ fk.sum(axis=0))[:, None]
        if normalise == "mean":
            return out / (fq @ fk.mean(axis=0))[:, None]
        if normalise == "count":
            return out / K.shape[0]
        if normalise == "total":
            return out / (fq @ fk.sum(axis=0)).sum()
        return out

    return compute


# A pointer back to the lesson's formula, not the answer: the learner works out that both
# sums of o_i can start from the key side. No message writes the denominator in code.
_FROM_THE_FORMULA = (
    "Go back to the lesson's o_i = Σ_j κ(q_i, k_j) v_j / Σ_j κ(q_i, k_j) with "
    "κ(q, k) = φ(q)·φ(k): φ(q_i) does not depend on j. What is left inside each of the "
    "two sums once it is taken out, and does it depend on i?"
)
# Softmax attention divides its scores by √d_k; linear attention has no such factor.
_NO_ROOT_D = (
    "Linear attention has no such factor: its similarity is κ(q, k) = φ(q)·φ(k), with "
    "φ(x) = elu(x) + 1 applied to the queries and keys as they are. Which part of the "
    "lesson's o_i asks for √d_k?"
)

LINEAR_MISTAKES = (
    Mistake(
        "You left out the denominator: the numerator alone is a weighted *sum* of the "
        "values, with weights φ(q_i)·φ(k_j) that don't add up to 1, so your rows are not "
        "averages. The lesson's o_i divides by Σ_j φ(q_i)·φ(k_j). φ(q_i) comes out of that "
        "sum just as it came out of the numerator: what is left inside, which shape has it, "
        "and can you compute it once for all the queries?",
        _with(elu_feature, normalise=None),
    ),
    Mistake(
        "You divided every row by the number of keys, as if each weight φ(q_i)·φ(k_j) were "
        "1 on average. Row i must be divided by the sum of its own weights, "
        "Σ_j φ(q_i)·φ(k_j), a number that changes from query to query. Once φ(q_i) is "
        "taken out of that sum, what is left inside, and does it depend on i?",
        _with(elu_feature, normalise="count"),
    ),
    Mistake(
        "Each of your rows is n_k times the right one, n_k being the number of keys: your "
        "denominator is n_k times too small. The lesson's denominator, Σ_j φ(q_i)·φ(k_j), "
        "is a sum over the keys. Does yours add up over the keys, or average over them?",
        _with(elu_feature, normalise="mean"),
    ),
    Mistake(
        "You divided the whole output by one number, the total of every query's weights. "
        "The weights of each query must add up to 1 on their own, so you need n_q "
        "denominators, one per row: Σ_j φ(q_i)·φ(k_j) for each i. Which step of your code "
        "also added up over the queries?",
        _with(elu_feature, normalise="total"),
    ),
    Mistake(
        "You used Q and K without the feature map. Then q·k can be negative or 0, the "
        "'weights' can be negative and the denominator can vanish. φ(x) = elu(x) + 1 is "
        "positive everywhere, so every weight is too. Where in your code do Q and K go "
        "through φ?",
        _with(lambda x: x),
    ),
    Mistake(
        "You used elu(x) without the + 1: elu is negative for x < 0, so weights can be "
        "negative. φ(x) = elu(x) + 1 is x + 1 for x > 0 and eˣ for x ≤ 0, positive "
        "everywhere. What does your φ give at x = −1, and what should it give?",
        _with(lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0.0)) - 1.0)),
    ),
    Mistake(
        "Your φ is x + 1 everywhere. That is elu(x) + 1 only for x > 0; for x ≤ 0 it is "
        "eˣ, which stays positive where x + 1 reaches 0 and goes negative. What does your "
        "φ give at x = −2, and what should it give?",
        _with(lambda x: x + 1.0),
    ),
    Mistake(
        "Your φ is max(x, 0), the ReLU: it is 0 for every x ≤ 0, so weights can be 0, and "
        "a whole row of them too (then the row is 0/0). φ(x) = elu(x) + 1 is x + 1 for "
        "x > 0 and eˣ for x ≤ 0, positive everywhere. What should φ(−1) and φ(1) be, and "
        "what does yours give?",
        _with(lambda x: np.maximum(x, 0.0)),
    ),
    Mistake(
        "Your φ is max(x, 0) + 1, the ReLU plus 1: positive, but 1 for every x ≤ 0, so all "
        "negative entries look alike. φ(x) = elu(x) + 1 is eˣ for x ≤ 0, which still tells "
        "−1 from −3. What should φ(−1) be, and what does yours give?",
        _with(lambda x: np.maximum(x, 0.0) + 1.0),
    ),
    Mistake(
        "Your φ is eˣ for every x. elu(x) + 1 is eˣ only for x ≤ 0; for x > 0 it is x + 1, "
        "which grows along a straight line where eˣ explodes, so your weights are far too "
        "sharp for a query with large entries. What should φ(2) be, and what does yours "
        "give?",
        _with(np.exp),
    ),
    Mistake(
        "You applied φ to V as well. Only the queries and keys go through the feature map, "
        "inside κ(q_i, k_j); the values are averaged as they are. In the lesson's o_i, "
        "which vectors sit inside κ?",
        lambda Q, K, V: _with(elu_feature)(Q, K, elu_feature(V)),
    ),
    Mistake(
        "That is softmax attention, softmax(Q Kᵀ/√d_k) V. Linear attention replaces "
        "exp(q·k/√d_k) by κ(q, k) = φ(q)·φ(k) with φ(x) = elu(x) + 1, so that the products "
        "can be regrouped. " + _FROM_THE_FORMULA,
        lambda Q, K, V: softmax_rows(Q @ K.T / np.sqrt(Q.shape[1])) @ V,
    ),
    Mistake(
        "That is softmax attention, softmax(Q Kᵀ) V, here even without its 1/√d_k. Linear "
        "attention replaces the exponential by κ(q, k) = φ(q)·φ(k) with φ(x) = elu(x) + 1, "
        "so that the products can be regrouped. " + _FROM_THE_FORMULA,
        lambda Q, K, V: softmax_rows(Q @ K.T) @ V,
    ),
    Mistake(
        "You divided the queries by √d_k before the feature map, as softmax attention "
        "divides its scores. " + _NO_ROOT_D,
        lambda Q, K, V: _with(elu_feature)(Q / np.sqrt(Q.shape[1]), K, V),
    ),
    Mistake(
        "Each of your rows is 1/√d_k times the right one: you divided the numerator by "
        "√d_k, as softmax attention divides its scores. " + _NO_ROOT_D,
        lambda Q, K, V: _with(elu_feature)(Q, K, V) / np.sqrt(Q.shape[1]),
    ),
)

LARGE_N, LARGE_D = 2000, 4
# An (n, n) float64 matrix at LARGE_N is 32 MB (31 MiB); the linear order needs a few (n, d) arrays.
MEMORY_LIMIT = 8 * 2**20


@dataclass(frozen=True)
class LinearMemoryCheck(ArrayCheck):
    """An ArrayCheck, then one large input on which the answer's peak memory must stay
    far below one (n, n) matrix: the order of the products, seen through its memory."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed:
            return result
        rng = np.random.default_rng(8080)
        inputs = {
            "Q": rng.normal(size=(LARGE_N, LARGE_D)),
            "K": rng.normal(size=(LARGE_N, LARGE_D)),
            "V": rng.normal(size=(LARGE_N, LARGE_D)),
        }
        try:
            with silenced():
                value, peak = measured_peak(
                    lambda: call_answer(answer, inputs, name=name, timeout=timeout)
                )
        except Fail as fail:
            return CheckResult(False, fail.message, name)
        matrix = LARGE_N * LARGE_N * 8
        if peak > MEMORY_LIMIT:
            return CheckResult(
                False,
                f"Your `{name}` gives the right numbers, but on {LARGE_N} queries and keys "
                f"(d = {LARGE_D}) it needed {peak / 2**20:.0f} MiB at its peak, where one "
                f"{LARGE_N} × {LARGE_N} matrix is {matrix / 2**20:.0f} MiB: somewhere it "
                f"forms an (n_q, n_k) array, such as φ(Q) φ(K)ᵀ or the weights: the "
                f"quadratic order. A chain of `@` is evaluated from left to right, so "
                f"`A @ B @ C` multiplies A by B first, whatever their sizes: where are the "
                f"brackets in your products? And in the lesson's o_i, φ(q_i) comes out of "
                f"both sums, the numerator's and the denominator's: what is left inside "
                f"each once it is taken out, and does it depend on i?",
                name,
            )
        want = linear_attention_reference(*inputs.values())
        if not np.allclose(np.asarray(value, dtype=float), want, rtol=1e-4, atol=1e-6):
            return CheckResult(
                False,
                f"Your `{name}` is right on the small inputs but not on {LARGE_N} queries "
                f"and keys; does it use a fixed size somewhere?",
                name,
            )
        return CheckResult(
            True,
            result.message
            + f"\n\nAnd its memory stays linear: on {LARGE_N} queries and keys its peak "
            f"was under {MEMORY_LIMIT / 2**20:.0f} MiB, where one {LARGE_N} × {LARGE_N} "
            f"matrix is {matrix / 2**20:.0f} MiB. Memory is what this check measures, not "
            f"work: does your function compute φ(q_i)·φ(k_j) for every pair anywhere, one "
            f"query or one block at a time? That still costs n_q × n_k products; the "
            f"regrouped order never forms a single one of them.",
            name,
        )


register(
    LESSON,
    solutions.linear_attention,
    "linear_attention(Q, K, V) -> o_i = Σ_j κ(q_i, k_j) v_j / Σ_j κ(q_i, k_j) with "
    "κ(q, k) = φ(q)·φ(k), φ(x) = elu(x) + 1, shape (n_q, d_v), without an (n_q, n_k) matrix",
    LinearMemoryCheck(
        linear_cases,
        reference=linear_attention_reference,
        shape_rule="one output row per query, d_v columns like V: (n_q, d_v)",
        mistakes=LINEAR_MISTAKES,
        shape_hint=(
            "Write down the shape of each piece: φ(Q) is (n_q, d_k), φ(K) is (n_k, d_k), V "
            "is (n_k, d_v), and the result is (n_q, d_v). In the lesson's o_i, what is left "
            "inside each sum once φ(q_i) is taken out, and does it depend on i? The "
            "denominator is one number per query: to divide row i of an (n_q, d_v) array by "
            "the i-th of n_q numbers, which shape must those numbers have?"
        ),
    ),
)


# ------------------------------------------------------------- causal_lower_right


def lower_right_cases() -> list[Case]:
    # 3 new tokens and 8 keys first: there every slip of the offset, the diagonal or the
    # triangle gives a mask of its own, so the feedback can name it. Then n_q = n_k, where
    # the two alignments agree, and one new token against a cache.
    return [
        Case("3 new tokens, 8 keys", {"n_q": 3, "n_k": 8}),
        Case("2 new tokens, 5 keys", {"n_q": 2, "n_k": 5}),
        Case("4 queries, 4 keys", {"n_q": 4, "n_k": 4}),
        Case("1 new token, 6 keys", {"n_q": 1, "n_k": 6}),
    ]


def _lower_right(offset):
    def mask(n_q, n_k):
        i, j = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
        return j <= i + offset(n_q, n_k)

    return mask


_WHICH_TOKEN = "Which token of the n_k is query 0, and which keys come up to it?"


def _additive_form(values):
    if np.isneginf(values).any() and set(values[np.isfinite(values)]) <= {0.0}:
        raise Fail(
            "Your mask holds 0 and -inf: the additive form, which is added to the scores "
            "(PyTorch's float `attn_mask`). This exercise asks for the bool form, True where "
            "a query may attend: which of your entries would be True?"
        )


def _first_wrong_row(got, want, inputs):
    # A mask no named slip explains: say which query's row is wrong, and ask about it.
    if got.shape != want.shape:
        return None
    rows = np.flatnonzero((np.asarray(got, dtype=bool) != want).any(axis=1))
    if rows.size == 0:
        return None
    i = int(rows[0])
    seen = np.flatnonzero(np.asarray(got, dtype=bool)[i]).tolist()
    return (
        f"Row {i} of your mask, query {i}, lets it see the keys {seen}. Query {i} is one of "
        f"the last {inputs['n_q']} of {inputs['n_k']} tokens: which token is it, and which "
        "keys come up to it, itself included?"
    )


LOWER_RIGHT_MISTAKES = (
    Mistake(
        "Your mask is aligned at the top left, j ≤ i: PyTorch's `is_causal`. Query i is not "
        "token i here: the n_q new queries are the *last* n_q of the n_k tokens. " + _WHICH_TOKEN,
        _lower_right(lambda n_q, n_k: 0),
    ),
    Mistake(
        "Your offset has the wrong sign: your new tokens see fewer keys than the top-left "
        "rule gives them, where they should see more. " + _WHICH_TOKEN,
        _lower_right(lambda n_q, n_k: n_q - n_k),
    ),
    Mistake(
        "Your offset is the number of new tokens, n_q, but how far the new tokens sit from "
        "the start does not depend on n_q alone. " + _WHICH_TOKEN,
        _lower_right(lambda n_q, n_k: n_q),
    ),
    Mistake(
        "Your mask leaves out each token's own key: the newest token does not see itself. "
        "That comes from a strict `<` where `<=` belongs, or from an offset one too small. "
        "A token may attend to itself: which keys, counted from 0, come up to the newest "
        "token, itself included?",
        _lower_right(lambda n_q, n_k: n_k - n_q - 1),
    ),
    Mistake(
        "Your mask is one key too generous: each new token also sees the token after it. "
        "What is the last key the newest token may see, and the one before it?",
        _lower_right(lambda n_q, n_k: n_k - n_q + 1),
    ),
    Mistake(
        "Your mask is True for every pair, so nothing is causal: a new token would see keys "
        "that come after it. " + _WHICH_TOKEN,
        lambda n_q, n_k: np.ones((n_q, n_k), dtype=bool),
    ),
    Mistake(
        "Your mask lets each query see the keys *after* it, the upper triangle, and not the "
        "ones before. Is key 0 in query 0's past or in its future?",
        lambda n_q, n_k: np.arange(n_k)[None, :] >= np.arange(n_q)[:, None] + (n_k - n_q),
    ),
    Mistake(
        'Your mask is inverted: True where a key lies in the future. Here True means "may '
        "attend\", as in `attnlab` and PyTorch's bool `attn_mask`. Which keys should be True?",
        lambda n_q, n_k: ~causal_lower_right(n_q, n_k),
    ),
)

register(
    LESSON,
    solutions.causal_lower_right,
    "causal_lower_right(n_q, n_k) -> bool (n_q, n_k), True where key j ≤ i + (n_k − n_q)",
    ArrayCheck(
        lower_right_cases,
        reference=causal_lower_right,
        shape_rule="one row per new query and one column per key, (n_q, n_k)",
        mistakes=LOWER_RIGHT_MISTAKES,
        hints=(_first_wrong_row,),
        prepare=bool_mask(
            "A mask is clearest as bool: a comparison such as `j <= i` gives one.",
            label="causal mask",
            other_forms=_additive_form,
        ),
        shape_hint=(
            "A column of query positions, shape (n_q, 1), compared with a row of key "
            "positions, shape (1, n_k), broadcasts to (n_q, n_k)."
        ),
        show_expected=False,  # the expected mask would show the offset
    ),
)


# ------------------------------------------------------------------ head_entropy


def head_entropy_reference(W):
    W = np.asarray(W, dtype=float)
    terms = W * np.log(np.where(W > 0, W, 1.0))
    return -terms.sum(axis=-1).mean(axis=-1)


def _rows(rng, H, n_q, n_k, keep):
    """Softmax rows of readable scores, with exact zeros where ``keep`` is False."""
    S = np.where(keep, readable(rng, H, n_q, n_k, scale=2.0), -np.inf)
    return softmax_rows(S)


def head_entropy_cases() -> list[Case]:
    # Causal and padding masks give the exact zeros of real attention; the first case has
    # n_q ≠ n_k so that an entropy taken over the wrong axis gives other numbers.
    rng = np.random.default_rng(1010)
    causal = causal_lower_right(3, 4)
    padded = np.arange(5)[None, :] < 3  # the last 2 of 5 keys are padding
    one_hot_and_uniform = np.array([[[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]])
    return [
        Case(
            "2 heads, 3 queries, 4 keys, causal: masked weights are exact zeros",
            {"W": _rows(rng, 2, 3, 4, causal)},
        ),  # fmt: skip
        Case(
            "3 heads, 2 queries, 5 keys, the last 2 keys padding (weight 0)",
            {"W": _rows(rng, 3, 2, 5, np.broadcast_to(padded, (2, 5)))},
        ),  # fmt: skip
        Case("1 head: a one-hot row and a uniform row of 4", {"W": one_hot_and_uniform}),
        Case("2 heads, 4 queries, 3 keys, no zeros", {"W": _rows(rng, 2, 4, 3, True)}),
    ]


def _entropy_terms(W, log=np.log):
    with np.errstate(all="ignore"):
        return W * log(np.where(W > 0, W, 1.0))


def _nan_from_zeros(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    if got.shape != want.shape or np.isfinite(got.astype(np.float64)).all():
        return None
    if not (np.asarray(inputs["W"]) == 0).any():
        return None
    return (
        "Your result is NaN (or inf) where a head has masked keys, whose weight is exactly 0: "
        "np.log(0) is −inf, and 0 · (−inf) is NaN, not 0. The entropy counts 0 · log 0 as 0, "
        "the limit of p log p as p → 0. How can the zero weights add exactly 0 without the "
        "logarithm ever seeing a 0?"
    )


HEAD_ENTROPY_MISTAKES = (
    Mistake(
        "Your numbers are negative: the entropy is −Σ_j w_ij log w_ij, and since every "
        "log w_ij ≤ 0, the sum without its minus sign is ≤ 0. Where does the minus sign go?",
        lambda W: _entropy_terms(W).sum(axis=-1).mean(axis=-1),
    ),
    Mistake(
        "Your numbers are about 1.44 times the right ones: that is log₂ instead of the natural "
        "logarithm, bits instead of nats. Lesson 03's entropy, and log n for a uniform row, "
        "are in nats: which NumPy logarithm gives them?",
        lambda W: -_entropy_terms(W, np.log2).sum(axis=-1).mean(axis=-1),
    ),
    Mistake(
        "You added up the entropies of a head's queries instead of averaging them, so a head "
        "with more queries looks more spread out. The mean over the queries keeps every "
        "head's number between 0 and log n_k: which reduction over the queries' axis gives it?",
        lambda W: -_entropy_terms(W).sum(axis=(-1, -2)),
    ),
    Mistake(
        "You averaged over the keys where the entropy *sums* over them: each row's entropy is "
        "−Σ_j w_ij log w_ij, a sum over the keys of that row, and only then is it averaged "
        "over the queries. Which axis do you sum, and which do you average?",
        lambda W: -_entropy_terms(W).mean(axis=-1).mean(axis=-1),
    ),
    Mistake(
        "You took the entropy down the columns, over the queries' axis, instead of along each "
        "row: W has shape (H, n_q, n_k), and a row of weights, one query's, runs along the "
        "last axis, the keys. Which axis must the sum over j run along?",
        lambda W: -_entropy_terms(W).sum(axis=-2).mean(axis=-1),
    ),
)

register(
    LESSON,
    solutions.head_entropy,
    "head_entropy(W) -> the mean over the queries of −Σ_j w_ij log w_ij, with 0 · log 0 = 0, "
    "one number per head: W (H, n_q, n_k) → (H,)",
    ArrayCheck(
        head_entropy_cases,
        reference=head_entropy_reference,
        shape_rule="one number per head: (H,)",
        mistakes=HEAD_ENTROPY_MISTAKES,
        hints=(_nan_from_zeros,),
        shape_hint=(
            "W has shape (H, n_q, n_k): heads, then queries, then keys. Each row's entropy "
            "reduces one axis, the average over the queries another: which two axes go, and "
            "which one is left?"
        ),
    ),
)
