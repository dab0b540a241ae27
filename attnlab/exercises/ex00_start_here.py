"""Exercise ``scale_factor``: the 1/√d_k of the formula, a warm-up for how exercises work.

Lesson: ``notebooks/00_start_here.ipynb``.
"""

import numpy as np

from . import solutions
from .arrays import ArrayCheck, Case, Mistake
from .registry import register


def cases() -> list[Case]:
    # d_k = 4 is the tiny example of the lesson; 64 and 512 are sizes real models use.
    # None of them is 1 or 2, where several slips below give the right number by luck.
    return [Case(f"d_k = {d_k}", {"d_k": d_k}) for d_k in (4, 64, 512)]


MISTAKES = (
    Mistake(
        "You returned √d_k itself. The scores are *divided* by √d_k, so the factor they "
        "are multiplied by is its reciprocal, `1 / np.sqrt(d_k)`.",
        lambda d_k: np.sqrt(d_k),
    ),
    Mistake(
        "You returned 1/d_k: that divides by d_k, not by its square root. Use `1 / np.sqrt(d_k)`.",
        lambda d_k: 1 / d_k,
    ),
    # `d_k ** -1/2` and `1 / d_k ** 1/2` give the same number, so one message names both.
    Mistake(
        "Python read `d_k ** -1/2` as `(d_k ** -1) / 2`, because ** binds tighter than /. "
        "Write `d_k ** -0.5` or `1 / np.sqrt(d_k)`. (`1 / d_k ** 1/2` is read the same "
        "way, as `(1 / d_k) / 2`.)",
        lambda d_k: d_k**-1 / 2,
    ),
)

register(
    "notebooks/00_start_here.ipynb",
    solutions.scale_factor,
    "scale_factor(d_k) -> the number 1/√d_k",
    ArrayCheck(
        cases,
        reference=solutions.scale_factor,
        shape_rule="one factor for one d_k, not an array",
        mistakes=MISTAKES,
    ),
)


# ---------------------------------------------------- exercise: output_shape


def shape_cases() -> list[Case]:
    # Every size different from the others, so that each slip gives a different shape.
    sizes = [(2, 5, 3, 4), (6, 3, 8, 2), (1, 7, 4, 5)]
    return [
        Case(
            f"n_q = {n_q}, n_k = {n_k}, d_k = {d_k}, d_v = {d_v}",
            {"n_q": n_q, "n_k": n_k, "d_k": d_k, "d_v": d_v},
        )
        for n_q, n_k, d_k, d_v in sizes
    ]


_SHAPES = (
    "Follow the shapes: Q Kᵀ is (n_q, d_k) @ (d_k, n_k) → (n_q, n_k); the softmax keeps "
    "that shape; then (n_q, n_k) @ V (n_k, d_v) → (n_q, d_v)."
)

SHAPE_MISTAKES = (
    Mistake(
        "That is the shape of the scores and of the weights, one row per query and one "
        f"column per key. The last step multiplies the weights by V. {_SHAPES}",
        lambda n_q, n_k, d_k, d_v: (n_q, n_k),
    ),
    Mistake(
        "The output's rows are mixtures of value rows, so they have the values' length "
        f"d_v, not the keys' length d_k. {_SHAPES}",
        lambda n_q, n_k, d_k, d_v: (n_q, d_k),
    ),
    Mistake(
        "There is one output row per query, not per key: each query gets its own mixture "
        f"of the values. {_SHAPES}",
        lambda n_q, n_k, d_k, d_v: (n_k, d_v),
    ),
    Mistake(
        f"Your two numbers are the right ones, in the wrong order: rows first. {_SHAPES}",
        lambda n_q, n_k, d_k, d_v: (d_v, n_q),
    ),
)

register(
    "notebooks/00_start_here.ipynb",
    solutions.output_shape,
    "output_shape(n_q, n_k, d_k, d_v) -> (rows, columns) of the attention output",
    ArrayCheck(
        shape_cases,
        reference=solutions.output_shape,
        shape_rule="two numbers, (rows, columns), like the `.shape` of a matrix",
        mistakes=SHAPE_MISTAKES,
    ),
)
