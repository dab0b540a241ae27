"""Exercises ``relative_bias`` (a learned bias per distance, read from a table),
``alibi_biases`` (ALiBi's distance penalty for H heads at once, one slope per head,
by broadcasting), ``causal_lower_right`` (the causal mask of the last n_q of n_k tokens)
and ``linear_attention`` (elu(x) + 1 features, multiplied in the order that never forms
an n × n matrix).

The feedback names the mistake and asks the question that leads to the fix; it does
not write the answer's index formula, slope formula or normaliser in code.

The checker sees results, not the order of the products, so ``linear_attention`` is
run once more, after it gives the right numbers on the small inputs, on 2000 queries
and keys while tracemalloc measures the memory NumPy allocates: an answer that forms
the (n, n) matrix φ(Q) φ(K)ᵀ needs about 31 MiB there, one that multiplies φ(K)ᵀ V
first well under 1 MiB. Where tracemalloc sees no NumPy memory, that part cannot fail.

Lesson: ``notebooks/09_attention_family.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..masks import causal_lower_right
from ..memory import measured_peak
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, bool_mask, matches, readable, softmax_rows
from .calling import call_answer, silenced
from .messages import CheckResult, Fail
from .registry import register

LESSON = "notebooks/09_attention_family.ipynb"


# The references, in NumPy only (the checker never imports matplotlib); the lesson's own
# versions in attnlab.lessons.family are tested to agree with them.
def elu_feature(x):
    """φ(x) = elu(x) + 1: x + 1 for x > 0, eˣ otherwise."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def relative_bias_reference(n, table):
    i = np.arange(n)
    return np.asarray(table, dtype=float)[i[:, None] - i[None, :] + n - 1]


def alibi_slopes_reference(H, first=1, exponent=lambda h, H: -8.0 * h / H):
    """ALiBi's slopes 2^(−8h/H) for h = ``first`` … ``first`` + H − 1: with the default
    h = 1 … H, the course's; the other arguments build the learner's slips."""
    h = np.arange(first, first + H, dtype=float)
    return 2.0 ** exponent(h, H)


def alibi_biases_reference(n, H):
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :]).astype(float)
    return -alibi_slopes_reference(H)[:, None, None] * distance


def linear_attention_reference(Q, K, V):
    fq, fk = elu_feature(Q), elu_feature(K)
    return (fq @ (fk.T @ np.asarray(V, dtype=float))) / (fq @ fk.sum(axis=0))[:, None]


# ----------------------------------------------------------------- relative_bias


def relative_cases() -> list[Case]:
    # Tables of distinct, readable numbers: 10 × (distance + n), so that a learner who
    # reads the feedback can tell which distance each entry came from.
    def table(n):
        return 10.0 * np.arange(1, 2 * n)

    rng = np.random.default_rng(909)
    return [
        Case("n = 3, table = [10, 20, 30, 40, 50] (b_-2 … b_2)", {"n": 3, "table": table(3)}),
        Case("n = 4, table = [10, 20, …, 70] (b_-3 … b_3)", {"n": 4, "table": table(4)}),
        Case(
            "n = 5, a table of 9 random biases",
            {"n": 5, "table": np.round(rng.normal(size=9), 2)},
        ),
        Case("n = 1, a single token: table = [7]", {"n": 1, "table": np.array([7.0])}),
    ]


def _table_at(n, table, index):
    return np.asarray(table, dtype=float)[index(np.arange(n)[:, None], np.arange(n)[None, :])]


# The table is in order of distance, so the fix is always "where does b_0 sit?". The
# messages ask it and leave the index to the learner.
_WHERE_B0 = (
    "The table lists b_-(n-1), …, b_0, …, b_(n-1) in order of distance. At which index "
    "does b_0 sit, and which index does the key one place before the query, b_1, need?"
)

RELATIVE_MISTAKES = (
    Mistake(
        "You indexed the table with i − j itself. Where i − j is negative (keys after the "
        "query) NumPy does not complain: `table[-1]` is the *last* entry, so those keys "
        "silently got the biases of large positive distances. The other indices are off "
        "too: on the diagonal, i − j = 0, you read `table[0]`, which is b_-(n-1), the bias "
        "of the key furthest *after* the query. " + _WHERE_B0,
        lambda n, table: _table_at(n, table, lambda i, j: i - j),
    ),
    Mistake(
        "Your matrix is the transpose of the right one: you read b_(j−i), key minus "
        "query. Row i is query i and column j key j, and B[i, j] = b_(i−j): the key one "
        "place *before* the query (j = i − 1) gets b_1. Work out B[1, 0] by hand: which "
        "distance is it, and which table entry does your code read for it?",
        lambda n, table: _table_at(n, table, lambda i, j: j - i + n - 1),
    ),
    Mistake(
        "You used the distance without its sign, |i − j|: keys before and after the "
        "query at the same distance got the same bias. A relative bias can tell them "
        "apart, which is why the table has 2n − 1 entries and not n. With n = 3, which "
        "entries should B[2, 0] (b_2) and B[0, 2] (b_-2) read, and do they differ?",
        lambda n, table: _table_at(n, table, lambda i, j: np.abs(i - j) + n - 1),
    ),
    Mistake(
        "Your diagonal, where the key is the query itself, reads b_-1 instead of b_0: each "
        "of your indices is one too small, and where one reached −1 (query 0, the last key) "
        "NumPy did not complain but read the table's *last* entry. Which index holds b_0, "
        "and which index does your formula give at i = j?",
        lambda n, table: _table_at(n, table, lambda i, j: i - j + n - 2),
    ),
    Mistake(
        "Your diagonal, where the key is the query itself, reads b_1 instead of b_0: all "
        "your indices are 0 or below, and NumPy reads a negative index from the end of the "
        "table without complaint, so most entries land one place after the right one. Which "
        "index holds b_0, and which index does your formula give at i = j?",
        lambda n, table: _table_at(n, table, lambda i, j: i - j - (n - 1)),
    ),
)


register(
    LESSON,
    solutions.relative_bias,
    "relative_bias(n, table) -> B with B[i, j] = b_(i−j) read from the table, shape (n, n)",
    ArrayCheck(
        relative_cases,
        reference=relative_bias_reference,
        shape_rule="one bias per (query, key) pair: (n, n)",
        mistakes=RELATIVE_MISTAKES,
        shape_hint=(
            "Index the table with an (n, n) array of whole numbers, one per (query, key) "
            "pair: NumPy then returns an (n, n) array. A column of the n positions minus a "
            "row of them broadcasts to the (n, n) differences i − j. How do you turn "
            "`np.arange(n)`, of shape (n,), into a column of shape (n, 1) and a row of "
            "shape (1, n)?"
        ),
        index_hint=(
            "One of your indices is past the end of the table. What is the largest index "
            "your formula builds (at i = n − 1, j = 0), and what is the table's last index?"
        ),
    ),
)


# ------------------------------------------------------------------ alibi_biases


def alibi_cases() -> list[Case]:
    # H = 4 first: there every slip below gives its own numbers (with H = 2, dividing by
    # h and reversing the heads happen to agree), so the first failure names the right one.
    # H = 16 is the one case where 8/H is not a whole number: floor division (//) in the
    # exponent gives the right slopes for H = 1, 2, 4 and 8, and wrong ones there.
    return [
        Case("n = 3 tokens, H = 4 heads", {"n": 3, "H": 4}),
        Case("n = 2 tokens, H = 8 heads", {"n": 2, "H": 8}),
        Case("n = 4 tokens, H = 2 heads", {"n": 4, "H": 2}),
        Case("n = 2 tokens, H = 16 heads", {"n": 2, "H": 16}),
        Case("n = 1, a single token, and H = 1 head", {"n": 1, "H": 1}),
    ]


def _distance(n, signed=False):
    i = np.arange(n)
    d = (i[:, None] - i[None, :]).astype(float)
    return d if signed else np.abs(d)


def _stack(slopes, n, signed=False):
    """−m_h times the (n, n) distances, one matrix per slope: what each slip builds."""
    return -np.asarray(slopes, dtype=float)[:, None, None] * _distance(n, signed)


def _causal(n, H, fill):
    """The biases with the keys after the query (j > i) set to ``fill``: the decoder's form."""
    i = np.arange(n)
    return np.where(i[None, :] > i[:, None], fill, alibi_biases_reference(n, H))


def _floor_exponent(exponent):
    """Slopes 2^exponent(h, H) for h = 1 … H, the exponent worked out in integers."""
    return lambda n, H: _stack(2.0 ** exponent(np.arange(1, H + 1), H), n)


# Following the paper, which writes ALiBi for a decoder, a learner may leave out the keys
# after the query; the exercise asks for every pair.
_EVERY_PAIR = (
    "The exercise asks for the bias of every pair, keys after the query included; the "
    "causal mask, when a model uses one, is applied separately. What should B[h, 0, 2], "
    "for the key two tokens after the first query, be?"
)


def _causal_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Right on and below the diagonal, wrong above it: a causal form with another fill."""
    n = inputs["n"]
    if got.shape != want.shape or n < 2:
        return None
    lower = np.tri(n, dtype=bool)  # j <= i, broadcast over the heads
    if not matches(np.where(lower, got.astype(float), 0.0), np.where(lower, want, 0.0)):
        return None
    return (
        "Your biases are right on and below the diagonal, for the keys up to the query, "
        "but not above it: did you apply the causal part yourself? " + _EVERY_PAIR
    )


def _slopes_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Every head a multiple of |i − j|, but with slopes no known slip explains."""
    n, H = inputs["n"], inputs["H"]
    if got.shape != want.shape or n < 2:
        return None
    slopes = -got.astype(float)[:, 1, 0]  # the key one token before the query: −m_h · 1
    if not matches(got, _stack(slopes, n)):
        return None
    if H > 1 and np.allclose(slopes, slopes[0]):
        return (
            f"All your {H} heads have the same slope, {slopes[0]:.4g}: each head is meant "
            f"to have its own, so that some look near and some far. Which array of {H} "
            f"slopes does the formula give, and does each of them reach its own head?"
        )
    return (
        f"Each of your heads is a multiple of the distances |i − j|, as it should be, but "
        f"the slopes are not ALiBi's. Yours, read from B[h, 1, 0] (the key one token "
        f"before the query, whose bias is −m_h), are {np.array2string(slopes, precision=4)}. "
        f"Compare them with B[h, 1, 0] of the expected result below: which heads are off, "
        f"and by what factor?"
    )


ALIBI_MISTAKES = (
    Mistake(
        "Your head 0 has slope 1, a penalty of a whole unit per token, and each other head "
        "has the slope meant for the head before it: you put Python's head numbers "
        "0 … H − 1 into m_h = 2^(−8h/H), which counts the heads from 1. Your head 0 should "
        "be the formula's first head, with slope 2^(−8/H). Which values of the formula's h "
        "must your array hold?",
        lambda n, H: _stack(alibi_slopes_reference(H, first=0), n),
    ),
    *(
        Mistake(
            "Your slopes for H = 16 heads are all whole powers of 2, but the formula's "
            "2^(−8h/16) = 2^(−h/2) is one only for even h: your exponent was rounded to a "
            "whole number. With 1, 2, 4 or 8 heads, 8/H is whole and nothing is lost; "
            "with 16 it is not. `//` is Python's floor division, which rounds down: what is "
            "`-8 * 1 // 16`, and what is `-8 * 1 / 16`?",
            _floor_exponent(exponent),
        )
        for exponent in (
            lambda h, H: -8 * h // H,
            lambda h, H: -(8 * h // H),
            lambda h, H: -8 // H * h,
        )
    ),
    Mistake(
        "Your slopes run the wrong way round: head 0 has the gentlest slope, 2^(−8), and the "
        "last head the steepest. ALiBi's head 0 is the steepest, and each head's slope is a "
        "constant factor smaller than the one before. Print your slopes for H = 4: do they "
        "fall from head 0 to head 3?",
        lambda n, H: _stack(alibi_slopes_reference(H)[::-1], n),
    ),
    Mistake(
        "Your slopes all lie between 1/2 and 1: the heads barely differ, and none of them "
        "looks far back. Your exponent has lost its factor 8. Which slope should the last "
        "head have, whatever H is, and which does yours have?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: -h / H), n),
    ),
    Mistake(
        "Your slopes rise from head to head, from 2^(−8) at head 0 up to 2^(−8/H) at the "
        "last, and not by a constant factor: you divided by the head number where the "
        "formula multiplies by it. Read the exponent of m_h = 2^(−8h/H) again: as h grows, "
        "does the slope grow or shrink?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: -8.0 / h), n),
    ),
    Mistake(
        "Your slopes are larger than 1, up to 2^8 = 256 for the last head, so there a key "
        "one token away already loses 256: the exponent of 2 has lost its minus sign. "
        "ALiBi's slopes are fractions, each a constant factor smaller than the one before. "
        "Where did the minus sign of the exponent go?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: 8.0 * h / H), n),
    ),
    Mistake(
        "Your biases are positive and grow with the distance, so the further a key, the "
        "*higher* its score: your slopes are right, but the minus sign of the bias is "
        "missing. ALiBi lowers the scores of far keys. Which sign must B[h, i, j] have "
        "when i ≠ j?",
        lambda n, H: -_stack(alibi_slopes_reference(H), n),
    ),
    Mistake(
        "All your heads have the same matrix, the first head's slope times |i − j|, H "
        "times over. The point of ALiBi's slopes is that each head gets its own, so that "
        "some heads look near and others far. You need an array of H slopes, each "
        "multiplying the whole (n, n) distance matrix: which shape must that array have "
        "to broadcast against (n, n) into (H, n, n)?",
        lambda n, H: _stack(np.full(H, 2.0 ** (-8.0 / H)), n),
    ),
    Mistake(
        "Above the diagonal your biases are positive: you multiplied the slopes by i − j, "
        "which is negative where the key comes after the query, so those keys are "
        "*rewarded* for being far. The bias uses the distance: a key two tokens after the "
        "query is as far away as one two tokens before it. What turns the (n, n) "
        "differences i − j into distances?",
        lambda n, H: _stack(alibi_slopes_reference(H), n, signed=True),
    ),
    Mistake(
        "Above the diagonal, for the keys after the query, your biases are 0: you applied "
        "the causal part yourself, as the paper's decoder does. " + _EVERY_PAIR,
        lambda n, H: _causal(n, H, 0.0),
    ),
    Mistake(
        "Above the diagonal, for the keys after the query, your biases are −inf: you "
        "applied the causal mask yourself. " + _EVERY_PAIR,
        lambda n, H: _causal(n, H, -np.inf),
    ),
    Mistake(
        "Your heads are on the last axis, B[i, j, h]. The exercise puts them first, "
        "B[h, i, j], so that B[h] is head h's (n, n) matrix and the stack adds to scores "
        "of shape (H, n, n). Broadcasting lines shapes up from the right: where must the "
        "slopes' axis sit, among three, to end up first?",
        lambda n, H: np.moveaxis(alibi_biases_reference(n, H), 0, -1),
    ),
    Mistake(
        "You returned H − 1 matrices, one head short: the formula's heads run from 1 to H, "
        "and a range that starts at 1 and stops before H leaves the last one out. How many "
        "numbers does your range of h hold, and which is the last?",
        lambda n, H: _stack(alibi_slopes_reference(H)[:-1], n),
    ),
)


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
            + f"\n\nAnd it runs in linear memory: on {LARGE_N} queries and keys its peak "
            f"was under {MEMORY_LIMIT / 2**20:.0f} MiB, where one {LARGE_N} × {LARGE_N} "
            f"matrix is {matrix / 2**20:.0f} MiB.",
            name,
        )


register(
    LESSON,
    solutions.alibi_biases,
    "alibi_biases(n, H) -> B with B[h, i, j] = −m_h · |i − j| for heads h = 0 … H − 1, "
    "ALiBi's slopes from the steepest, shape (H, n, n)",
    ArrayCheck(
        alibi_cases,
        reference=alibi_biases_reference,
        shape_rule="one (n, n) bias matrix per head, heads first: (H, n, n)",
        mistakes=ALIBI_MISTAKES,
        hints=(_slopes_hint, _causal_hint),
        shape_hint=(
            "Broadcasting lines shapes up from the right: against the (n, n) distances, an "
            "(H,) array of slopes lines the heads up with the keys' axis, and an (H, 1) "
            "array with the queries' axis. Which shape must the slopes have so that their "
            "axis becomes the first axis of an (H, n, n) result?"
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
