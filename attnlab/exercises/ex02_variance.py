"""Exercise ``scaled_scores``: Q Kᵀ / √d_k, scores whose variance doesn't grow with d_k.

Lesson: ``notebooks/02_variance.ipynb``.
"""

from __future__ import annotations

import numpy as np

from ..scores import scaled_scores as reference_scaled_scores
from . import solutions
from .arraycheck import ArrayCheck, Case
from .inputs import generator, readable
from .mistakes import Mistake
from .registry import Exercise, register

LESSON = "notebooks/02_variance.ipynb"

_WHY = (
    "a dot product of d_k terms of variance 1 has variance d_k, so dividing by its "
    "standard deviation √d_k brings it back to 1"
)


def cases() -> list[Case]:
    # d_k, n_q, n_k, d_k/2 and 2·d_k all differ (and d_k isn't n²), so each wrong
    # scale gives different numbers from every other one.
    rng = generator(202)
    return [
        Case(
            "Q (2×3) and K (4×3): 2 queries, 4 keys, d_k = 3",
            {"Q": readable(rng, 2, 3), "K": readable(rng, 4, 3)},
        ),
        Case(
            "Q (3×5) and K (2×5): more queries than keys, d_k = 5",
            {"Q": readable(rng, 3, 5), "K": readable(rng, 2, 5)},
        ),
        Case(
            "Q (3×7) and K (3×7): as many queries as keys, d_k = 7",
            {"Q": readable(rng, 3, 7), "K": readable(rng, 3, 7)},
        ),
        Case(
            "a single query: Q (1×6) and K (5×6)",
            {"Q": readable(rng, 1, 6), "K": readable(rng, 5, 6)},
        ),
    ]


def _d_k(Q: np.ndarray) -> int:
    return Q.shape[-1]


MISTAKES = (
    Mistake(
        f"You forgot to scale: these are the raw scores Q Kᵀ. Divide them by √d_k; {_WHY}.",
        lambda Q, K: Q @ K.T,
    ),
    Mistake(
        f"You divided by d_k instead of √d_k (use `np.sqrt(d_k)`): {_WHY}.",
        lambda Q, K: Q @ K.T / _d_k(Q),
    ),
    Mistake(
        "You wrote `d_k ** 1/2`, which Python reads as `(d_k ** 1) / 2`: powers bind "
        "tighter than division. Write `d_k ** 0.5` or `np.sqrt(d_k)`.",
        lambda Q, K: Q @ K.T / (_d_k(Q) / 2),
    ),
    Mistake(
        "You wrote `/ d_k ** 1/2`, which Python reads as `/ d_k / 2`: powers bind tighter "
        "than division. Write `/ np.sqrt(d_k)` or `/ d_k ** 0.5`.",
        lambda Q, K: Q @ K.T / _d_k(Q) / 2,
    ),
    Mistake(
        f"You multiplied by √d_k instead of dividing by it: {_WHY}.",
        lambda Q, K: Q @ K.T * np.sqrt(_d_k(Q)),
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
        lambda Q, K: K @ Q.T / np.sqrt(_d_k(Q)),
    ),
)

register(
    Exercise(
        id="scaled_scores",
        lesson=LESSON,
        signature="scaled_scores(Q, K) -> Q Kᵀ / √d_k, shape (n_q, n_k)",
        checker=ArrayCheck(
            name="scaled_scores",
            cases=cases,
            reference=reference_scaled_scores,
            shape_rule="one row per query and one column per key, (n_q, n_k)",
            mistakes=MISTAKES,
            shape_hint=(
                "Q is (n_q, d_k) and K is (n_k, d_k), so the length-d_k axes must meet: "
                "`Q @ K.T` is (n_q, d_k) @ (d_k, n_k)."
            ),
        ),
        solution=solutions.scaled_scores,
    )
)
