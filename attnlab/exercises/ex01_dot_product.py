"""Exercise ``scores``: S = Q Kᵀ, one dot product per (query, key) pair.

Lesson: ``notebooks/01_dot_product.ipynb``.
"""

import numpy as np

from ..scores import scores
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, readable
from .registry import register

# Q is (n_q, d_k) and K is (n_k, d_k): shared with lesson 02's scaled scores.
SHAPE_HINT = (
    "Q is (n_q, d_k) and K is (n_k, d_k), so the length-d_k axes must meet: "
    "`Q @ K.T` is (n_q, d_k) @ (d_k, n_k)."
)


def cases() -> list[Case]:
    # Square inputs first: there the classic slips (Q @ K, Q.T @ K, Q * K) run and can be
    # named, where on other shapes they stop with a shape error. After that, n_q, n_k
    # and d_k differ from each other, so every transposition shows up.
    rng = np.random.default_rng(101)
    return [
        Case("square Q and K (3×3)", {"Q": readable(rng, 3, 3), "K": readable(rng, 3, 3)}),
        Case(
            "Q (2×3) and K (4×3): 2 queries, 4 keys, d_k = 3",
            {"Q": readable(rng, 2, 3), "K": readable(rng, 4, 3)},
        ),
        Case(
            "Q (3×5) and K (2×5): more queries than keys",
            {"Q": readable(rng, 3, 5), "K": readable(rng, 2, 5)},
        ),
        Case(
            "a single query: Q (1×4) and K (5×4)",
            {"Q": readable(rng, 1, 4), "K": readable(rng, 5, 4)},
        ),
    ]


MISTAKES = (
    Mistake(
        "Your scores are transposed: you computed K Qᵀ, with one row per key. Row i of the "
        "scores belongs to query i, so compute `Q @ K.T`.",
        lambda Q, K: K @ Q.T,
    ),
    Mistake(
        "You computed Qᵀ K, which compares features with features (d_k × d_k). Attention "
        "compares tokens: `Q @ K.T` gives one row per query and one column per key.",
        lambda Q, K: Q.T @ K,
    ),
    Mistake(
        "You forgot to transpose K: `Q @ K` only runs here because K happens to be square. "
        "Each score is a query row dotted with a key row, so use `Q @ K.T`.",
        lambda Q, K: Q @ K,
    ),
    Mistake(
        "You multiplied Q and K entry by entry and summed each row: that pairs query i only "
        "with key i. Every query has to meet every key: `Q @ K.T`.",
        lambda Q, K: (Q * K).sum(axis=-1),
    ),
    Mistake(
        "You scaled the scores by 1/√d_k already. This exercise asks for the raw dot "
        "products Q Kᵀ; the scaling is the topic of the next lesson.",
        lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]),
    ),
)

register(
    "notebooks/01_dot_product.ipynb",
    solutions.scores,
    "scores(Q, K) -> S of shape (n_q, n_k)",
    ArrayCheck(
        cases,
        reference=scores,
        shape_rule="one row per query and one column per key, (n_q, n_k)",
        mistakes=MISTAKES,
        shape_hint=SHAPE_HINT,
    ),
)
