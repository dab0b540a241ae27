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
