"""Exercises ``scaled_scores`` (Q Kᵀ / √d_k) and ``std_512``, a number: the standard
deviation of q·k for d_k = 512, which the learner assigns to ``answer_std_512``.

Lesson: ``notebooks/02_variance.ipynb``.
"""

import math

import numpy as np

from ..scores import scaled_scores
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, readable
from .numbers import NumberCheck, Slip
from .registry import register

SHAPE_HINT = (
    "Q is (n_q, d_k) and K is (n_k, d_k), so the length-d_k axes must meet: "
    "`Q @ K.T` is (n_q, d_k) @ (d_k, n_k)."
)

LESSON = "notebooks/02_variance.ipynb"
_WHY = (
    "a dot product of d_k terms of variance 1 has variance d_k, so dividing by its "
    "standard deviation √d_k brings it back to 1"
)


def cases() -> list[Case]:
    # d_k, n_q, n_k, d_k/2 and 2·d_k all differ (and d_k isn't n²), so each wrong
    # scale gives different numbers from every other one.
    rng = np.random.default_rng(202)
    shapes = [
        ("Q (2×3) and K (4×3): 2 queries, 4 keys, d_k = 3", 2, 4, 3),
        ("Q (3×5) and K (2×5): more queries than keys, d_k = 5", 3, 2, 5),
        ("Q (3×7) and K (3×7): as many queries as keys, d_k = 7", 3, 3, 7),
        ("a single query: Q (1×6) and K (5×6)", 1, 5, 6),
    ]
    return [
        Case(label, {"Q": readable(rng, n_q, d_k), "K": readable(rng, n_k, d_k)})
        for label, n_q, n_k, d_k in shapes
    ]


MISTAKES = (
    Mistake(
        f"You forgot to scale: these are the raw scores Q Kᵀ. Divide them by √d_k; {_WHY}.",
        lambda Q, K: Q @ K.T,
    ),
    Mistake(
        f"You divided by d_k instead of √d_k (use `np.sqrt(d_k)`): {_WHY}.",
        lambda Q, K: Q @ K.T / Q.shape[-1],
    ),
    Mistake(
        "You wrote `d_k ** 1/2`, which Python reads as `(d_k ** 1) / 2`: powers bind "
        "tighter than division. Write `d_k ** 0.5` or `np.sqrt(d_k)`.",
        lambda Q, K: Q @ K.T / (Q.shape[-1] / 2),
    ),
    Mistake(
        "You wrote `/ d_k ** 1/2`, which Python reads as `/ d_k / 2`: powers bind tighter "
        "than division. Write `/ np.sqrt(d_k)` or `/ d_k ** 0.5`.",
        lambda Q, K: Q @ K.T / Q.shape[-1] / 2,
    ),
    Mistake(
        f"You multiplied by √d_k instead of dividing by it: {_WHY}.",
        lambda Q, K: Q @ K.T * np.sqrt(Q.shape[-1]),
    ),
    Mistake(
        "You divided by √n, the square root of the number of keys (`len(K)` or `K.shape[0]`). "
        "d_k is the length of each query and key vector: `Q.shape[-1]`.",
        lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]),
    ),
    Mistake(
        "You divided by √n, the square root of the number of queries (`len(Q)` or "
        "`Q.shape[0]`). d_k is the length of each query and key vector: `Q.shape[-1]`.",
        lambda Q, K: Q @ K.T / np.sqrt(Q.shape[0]),
    ),
    Mistake(
        "Your scaled scores are transposed: you computed K Qᵀ / √d_k, with one row per key. "
        "Row i belongs to query i: `Q @ K.T / np.sqrt(d_k)`.",
        lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]),
    ),
)

register(
    LESSON,
    solutions.scaled_scores,
    "scaled_scores(Q, K) -> Q Kᵀ / √d_k, shape (n_q, n_k)",
    ArrayCheck(
        cases,
        reference=scaled_scores,
        shape_rule="one row per query and one column per key, (n_q, n_k)",
        mistakes=MISTAKES,
        shape_hint=SHAPE_HINT,
    ),
)

# ------------------------------------------------------------------ std_512

D_K = 512
# Two decimals are enough (√512 rounded to 22.6 or 22.63 passes); 22 or 23 is too coarse.
TOLERANCE = 0.05
_STD = math.sqrt(D_K)
_RULE = (
    f"For d_k = {D_K} entries of variance 1, Var(q·k) = d_k, and the standard deviation is "
    f"the square root of the variance."
)


def slips() -> list[Slip]:
    found = [
        Slip(
            -_STD,
            "A standard deviation is never negative: it is the square root of the variance, "
            "and the square root of a positive number is taken to be positive.",
            TOLERANCE,
        ),
        Slip(
            float(D_K),
            f"That is the variance of q·k, not its standard deviation. The variance is d_k = "
            f"{D_K}; the standard deviation is its square root (`np.sqrt`).",
            0.01 * D_K,
        ),
        Slip(
            D_K / 2,
            f"That is d_k / 2. Did you write `{D_K} ** 1/2`? Python reads it as "
            f"`({D_K} ** 1) / 2`, because powers bind tighter than division. Write "
            f"`{D_K} ** 0.5` or `np.sqrt({D_K})`.",
            0.01 * D_K,
        ),
        Slip(
            float(D_K) ** 2,
            f"That is d_k squared. The variance is d_k = {D_K}, and the standard deviation is "
            f"its square root, not its square.",
            0.01 * D_K**2,
        ),
        Slip(
            1 / _STD,
            "That is 1/√d_k, the factor the scores are multiplied by, not the spread of q·k. "
            + _RULE,
            0.002,
        ),
        Slip(
            0.0,
            "0 is the mean of q·k (positive and negative products cancel on average), not its "
            "spread. The standard deviation measures how far q·k typically lands from 0. " + _RULE,
            0.01,
        ),
        Slip(
            1.0,
            "1 is the standard deviation of the scaled scores q·k / √d_k. The question asks "
            "about q·k itself, before dividing: how spread out are the raw dot products?",
            TOLERANCE,
        ),
    ]
    # √d_k for another common d_k, such as the lesson's d_k = 64.
    found += [
        Slip(
            math.sqrt(d),
            f"That is √{d}, the standard deviation of q·k for d_k = {d}. The question "
            f"asks about d_k = {D_K}.",
            min(TOLERANCE, 0.005 * math.sqrt(d)),
        )
        for d in (2**i for i in range(1, 13))
        if d != D_K
    ]
    close = (
        f"Close, but not close enough: √{D_K} is not a whole number. Give at least two "
        f"decimals, or let NumPy compute it: `np.sqrt({D_K})`."
    )
    return [*found, Slip(_STD, close, 1.0)]


def _passed(value: float) -> str:
    return (
        f"Right: the standard deviation of q·k for d_k = {D_K} is √{D_K} ≈ {_STD:.2f} (you "
        f"gave {value:g}). Its variance is {D_K}; dividing the scores by √{D_K} brings the "
        f"standard deviation back to 1."
    )


register(
    LESSON,
    solutions.std_512,
    f"answer_std_512 = a number: the standard deviation of q·k for d_k = {D_K}",
    NumberCheck(
        _STD,
        TOLERANCE,
        slips,
        _passed,
        generic_hint=_RULE,
        what="the standard deviation of q·k",
        many_hint="If you measured it from samples, `np.std(samples)` turns them into one.",
    ),
)

# ------------------------------------------------------- uniform_score_variance


def uniform_cases() -> list[Case]:
    # d_k = 9 and 27 make d_k/9 a whole number and the slips easy to tell apart.
    return [Case(f"d_k = {d_k}", {"d_k": d_k}) for d_k in (9, 27, 64, 512)]


_UNIFORM = (
    "Two steps: a uniform entry on [−1, 1] has variance w²/12 with width w = 2, so σ² = 1/3 "
    "for q and for k; then Var(q·k) = σ_q² σ_k² d_k"
)

UNIFORM_MISTAKES = (
    Mistake(
        "That is d_k, the variance for entries of variance 1. Entries uniform on [−1, 1] "
        f"are narrower than that. {_UNIFORM}.",
        lambda d_k: float(d_k),
    ),
    Mistake(
        "You used the variance 1/3 once, but both q and k have it: every product q_i k_i "
        f"has variance σ_q² σ_k² = 1/3 · 1/3. {_UNIFORM}.",
        lambda d_k: d_k / 3,
    ),
    Mistake(
        "That is the standard deviation, √(d_k / 9) = √d_k / 3; the question asks for the "
        f"variance. {_UNIFORM}.",
        lambda d_k: np.sqrt(d_k) / 3,
    ),
    Mistake(
        "1/12 is the variance of a uniform entry on an interval of width 1, such as "
        f"[0, 1]; [−1, 1] has width 2. {_UNIFORM}.",
        lambda d_k: d_k / 144,
    ),
)

register(
    LESSON,
    solutions.uniform_score_variance,
    "uniform_score_variance(d_k) -> Var(q·k) for entries uniform on [-1, 1]",
    ArrayCheck(
        uniform_cases,
        reference=solutions.uniform_score_variance,
        shape_rule="one number for one d_k",
        mistakes=UNIFORM_MISTAKES,
    ),
)
