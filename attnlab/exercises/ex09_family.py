"""Exercises ``relative_bias`` (a learned bias per distance, read from a table),
``alibi_bias`` (ALiBi's distance penalty) and ``linear_attention``
(elu(x) + 1 features, multiplied in the order that never forms an n × n matrix).

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

from ..memory import measured_peak
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, readable, softmax_rows
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


def alibi_bias_reference(n, slope):
    i = np.arange(n)
    return -slope * np.abs(i[:, None] - i[None, :]).astype(float)


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


_WHERE_B0 = (
    "The table lists b_-(n-1), …, b_0, …, b_(n-1) in order, so b_0 sits at index n − 1 "
    "and b_(i−j) at index i − j + n − 1."
)

RELATIVE_MISTAKES = (
    Mistake(
        "You indexed the table with i − j itself. Where i − j is negative (keys after the "
        "query) NumPy does not complain: `table[-1]` is the *last* entry, so those keys "
        "silently got the biases of large positive distances. " + _WHERE_B0,
        lambda n, table: _table_at(n, table, lambda i, j: i - j),
    ),
    Mistake(
        "Your matrix is the transpose of the right one: you read b_(j−i), key minus "
        "query. Row i is query i, so B[i, j] = b_(i−j): the key one place *before* the "
        "query (j = i − 1) gets b_1. " + _WHERE_B0,
        lambda n, table: _table_at(n, table, lambda i, j: j - i + n - 1),
    ),
    Mistake(
        "You used the distance without its sign, |i − j|: keys before and after the "
        "query at the same distance got the same bias. A relative bias can tell them "
        "apart, which is why the table has 2n − 1 entries and not n. " + _WHERE_B0,
        lambda n, table: _table_at(n, table, lambda i, j: np.abs(i - j) + n - 1),
    ),
)


register(
    LESSON,
    solutions.relative_bias,
    "relative_bias(n, table) -> B with B[i, j] = b_(i−j) = table[i − j + n − 1], shape (n, n)",
    ArrayCheck(
        relative_cases,
        reference=relative_bias_reference,
        shape_rule="one bias per (query, key) pair: (n, n)",
        mistakes=RELATIVE_MISTAKES,
        shape_hint=(
            "Index the table with an (n, n) array of whole numbers, one per (query, key) "
            "pair: NumPy then returns an (n, n) array. A column `np.arange(n)[:, None]` "
            "minus a row `np.arange(n)[None, :]` broadcasts to every i − j."
        ),
    ),
)


# -------------------------------------------------------------------- alibi_bias


def alibi_cases() -> list[Case]:
    return [
        Case("n = 4, slope = 0.5", {"n": 4, "slope": 0.5}),
        Case("n = 5, slope = 0.25", {"n": 5, "slope": 0.25}),
        Case("n = 3, slope = 2.0", {"n": 3, "slope": 2.0}),
        Case("n = 1, slope = 1.0 (a single token)", {"n": 1, "slope": 1.0}),
    ]


def _distance(n, signed=False):
    i = np.arange(n)
    d = i[:, None] - i[None, :]
    return d if signed else np.abs(d)


ALIBI_MISTAKES = (
    Mistake(
        "Your bias has the wrong sign: it grows with the distance, so far keys score "
        "*higher* than near ones. ALiBi subtracts: B[i, j] = −m · |i − j|, so the "
        "further a key, the lower its score.",
        lambda n, slope: slope * _distance(n),
    ),
    Mistake(
        "You used i − j without the absolute value. Below the diagonal that is right, but "
        "above it (keys after the query) i − j is negative, so −m (i − j) becomes a "
        "*reward* for looking ahead. Use the distance |i − j|: `np.abs(i - j)`.",
        lambda n, slope: -slope * _distance(n, signed=True),
    ),
    Mistake(
        "You used j − i without the absolute value: keys before the query get a reward "
        "and keys after it a penalty, the wrong way round for a distance. Use "
        "|i − j|, `np.abs(i - j)`, so both sides are penalised alike.",
        lambda n, slope: slope * _distance(n, signed=True),
    ),
    Mistake(
        "You forgot the slope: your bias is −|i − j|, one unit per token for every slope. "
        "Multiply by the slope m, which sets how fast the penalty grows.",
        lambda n, slope: -1.0 * _distance(n),
    ),
    Mistake(
        "You divided by the slope instead of multiplying: B[i, j] = −m · |i − j|. "
        "A small slope should mean a *gentle* penalty, one that lets the head look far.",
        lambda n, slope: -_distance(n) / slope,
    ),
    Mistake(
        "Your bias is 0 above the diagonal: you applied the causal rule too. The exercise "
        "asks for the bias of every pair, −m · |i − j|; the mask that hides the future is "
        "a separate step (with it, only j ≤ i is ever used).",
        lambda n, slope: np.tril(-slope * _distance(n)),
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
        if normalise == "count":
            return out / K.shape[0]
        if normalise == "total":
            return out / (fq @ fk.sum(axis=0)).sum()
        return out

    return compute


# A pointer to the next step, not the answer: one mistake must not hand over the solution.
_ORDER = (
    "Work in this order: φ of Q and of K; the (d_k, d_v) summary φ(K)ᵀ V and the d_k "
    "numbers φ(K)ᵀ 1; then each query's row, divided by its own normaliser."
)

LINEAR_MISTAKES = (
    Mistake(
        "You forgot to normalise: φ(Q) (φ(K)ᵀ V) alone is a weighted *sum* of the values, "
        "with weights that don't add up to 1. Divide each row by φ(q_i) · Σ_j φ(k_j), "
        "which is φ(Q) (φ(K)ᵀ 1). " + _ORDER,
        _with(elu_feature, normalise=None),
    ),
    Mistake(
        "You divided by the number of keys, as if every query's weights summed to n_k. "
        "Each query has its own normaliser, φ(q_i) · Σ_j φ(k_j): divide row i by it. " + _ORDER,
        _with(elu_feature, normalise="count"),
    ),
    Mistake(
        "You divided by one number for the whole matrix. Each query's weights must sum "
        "to 1 on their own, so row i is divided by its own φ(q_i) · Σ_j φ(k_j), "
        "`(phi(Q) @ phi(K).sum(axis=0))[:, None]`.",
        _with(elu_feature, normalise="total"),
    ),
    Mistake(
        "You used Q and K without the feature map. Then q·k can be negative or 0, the "
        "'weights' can be negative and the normaliser can vanish. φ(x) = elu(x) + 1 is "
        "positive everywhere, so every weight is too. " + _ORDER,
        _with(lambda x: x),
    ),
    Mistake(
        "You used elu(x) without the + 1: elu is negative for x < 0, so weights can be "
        "negative. φ(x) = elu(x) + 1 is x + 1 for x > 0 and eˣ otherwise, always positive.",
        _with(lambda x: np.where(x > 0, x, np.exp(x) - 1.0)),
    ),
    Mistake(
        "Your φ is x + 1 everywhere. That is elu(x) + 1 only for x > 0; for x ≤ 0 it must "
        "be eˣ, which stays positive where x + 1 goes negative: `np.where(x > 0, x + 1, "
        "np.exp(x))`.",
        _with(lambda x: x + 1.0),
    ),
    Mistake(
        "Your φ is max(x, 0) (ReLU). The feature map here is elu(x) + 1: x + 1 for x > 0 "
        "and eˣ otherwise, `np.where(x > 0, x + 1, np.exp(x))`.",
        _with(lambda x: np.maximum(x, 0.0)),
    ),
    Mistake(
        "Your φ is eˣ. The feature map here is elu(x) + 1: eˣ only for x ≤ 0, and x + 1 "
        "for x > 0, `np.where(x > 0, x + 1, np.exp(x))`.",
        _with(np.exp),
    ),
    Mistake(
        "You applied φ to V as well. Only the queries and keys go through the feature map; "
        "the values are averaged as they are. " + _ORDER,
        lambda Q, K, V: _with(elu_feature)(Q, K, elu_feature(V)),
    ),
    Mistake(
        "That is softmax attention, softmax(Q Kᵀ/√d_k) V. Linear attention replaces "
        "exp(q·k/√d_k) by φ(q)·φ(k) with φ(x) = elu(x) + 1, so that the products can be "
        "regrouped. " + _ORDER,
        lambda Q, K, V: softmax_rows(Q @ K.T / np.sqrt(Q.shape[1])) @ V,
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
                f"{LARGE_N} × {LARGE_N} matrix is {matrix / 2**20:.0f} MiB: it forms the "
                f"(n_q, n_k) matrix φ(Q) φ(K)ᵀ, the quadratic order. Multiply φ(K)ᵀ V "
                f"first, a (d_k, d_v) matrix, and φ(K)ᵀ 1, a vector of d_k numbers "
                f"(`phi(K).sum(axis=0)`); then each query needs only those. " + _ORDER,
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
    solutions.alibi_bias,
    "alibi_bias(n, slope) -> B with B[i, j] = −slope · |i − j|, shape (n, n)",
    ArrayCheck(
        alibi_cases,
        reference=alibi_bias_reference,
        shape_rule="one bias per (query, key) pair: (n, n)",
        mistakes=ALIBI_MISTAKES,
        shape_hint=(
            "Build the (n, n) matrix of differences i − j the way you did for "
            "`relative_bias`, queries down the rows and keys across, then take its size."
        ),
    ),
)
register(
    LESSON,
    solutions.linear_attention,
    "linear_attention(Q, K, V) -> φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1) with φ(x) = elu(x) + 1, "
    "shape (n_q, d_v), without an (n_q, n_k) matrix",
    LinearMemoryCheck(
        linear_cases,
        reference=linear_attention_reference,
        shape_rule="one output row per query, d_v columns like V: (n_q, d_v)",
        mistakes=LINEAR_MISTAKES,
        shape_hint=(
            "φ(K)ᵀ V is (d_k, n_k) times (n_k, d_v): a (d_k, d_v) matrix; φ(Q) times it is "
            "(n_q, d_v). The normaliser φ(Q) φ(K).sum(axis=0) is (n_q,): add an axis, "
            "`[:, None]`, to divide the rows."
        ),
    ),
)
