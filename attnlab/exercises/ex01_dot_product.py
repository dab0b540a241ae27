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


# ---------------------------------------------------- exercise: score_matrix


def matrix_cases() -> list[Case]:
    # d (the embedding length) differs from d_k, so a missing or extra transpose shows up
    # as a wrong shape; the square case first, where they run and can be named.
    rng = np.random.default_rng(111)
    return [
        Case(
            "square W_Q and W_K (3×3)",
            {"W_Q": readable(rng, 3, 3), "W_K": readable(rng, 3, 3)},
        ),
        Case(
            "W_Q and W_K of shape (4, 2): d = 4, d_k = 2",
            {"W_Q": readable(rng, 4, 2), "W_K": readable(rng, 4, 2)},
        ),
        Case(
            "W_Q and W_K of shape (2, 5): d = 2, d_k = 5",
            {"W_Q": readable(rng, 2, 5), "W_K": readable(rng, 2, 5)},
        ),
    ]


_EXPAND = (
    "Write S with the projections: S = Q Kᵀ = (X W_Q)(X W_K)ᵀ, and use (A B)ᵀ = Bᵀ Aᵀ "
    "on the second factor"
)

MATRIX_MISTAKES = (
    Mistake(
        "Yours is the transpose of M: W_K W_Qᵀ gives Sᵀ, where row i holds key i's scores. "
        f"{_EXPAND}.",
        lambda W_Q, W_K: W_K @ W_Q.T,
    ),
    Mistake(
        "W_Qᵀ W_K is (d_k, d_k): it compares the features of queries with the features of "
        f"keys, but M must sit between two embeddings, X M Xᵀ, so it is (d, d). {_EXPAND}.",
        lambda W_Q, W_K: W_Q.T @ W_K,
    ),
    Mistake(
        "W_Q W_K without a transpose only runs because the matrices happen to be square. "
        f"{_EXPAND}.",
        lambda W_Q, W_K: W_Q @ W_K,
    ),
    Mistake(
        "You used W_Q twice: W_Q W_Qᵀ is what a model with one shared projection would use, "
        f"and it is symmetric. The keys are X W_K. {_EXPAND}.",
        lambda W_Q, W_K: W_Q @ W_Q.T,
    ),
)

register(
    "notebooks/01_dot_product.ipynb",
    solutions.score_matrix,
    "score_matrix(W_Q, W_K) -> M of shape (d, d) with S = X M Xᵀ",
    ArrayCheck(
        matrix_cases,
        reference=solutions.score_matrix,
        shape_rule="(d, d): X M Xᵀ must be (n, d) @ (d, d) @ (d, n)",
        mistakes=MATRIX_MISTAKES,
        shape_hint=(
            "W_Q and W_K are both (d, d_k). M goes between X (n, d) and Xᵀ (d, n), so it "
            "must be (d, d): (d, d_k) @ (d_k, d)."
        ),
    ),
)
