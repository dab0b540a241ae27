"""Exercises ``scale_factor`` (the number every score is multiplied by, a warm-up for how
exercises work) and ``output_shape`` (the shape the formula produces).

Lesson: ``notebooks/00_start_here.ipynb``.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from . import solutions
from .arrays import ArrayCheck, Case, Mistake
from .messages import Fail, shape_text
from .registry import register


def cases() -> list[Case]:
    # d_k = 4 is the tiny example of the lesson; 64 and 512 are sizes real models use.
    # None of them is 1 or 2, where several slips below give the right number by luck.
    return [Case(f"d_k = {d_k}", {"d_k": d_k}) for d_k in (4, 64, 512)]


MISTAKES = (
    Mistake(
        "You returned √d_k itself, the number the scores are divided *by*. Multiplying by "
        "which number has the same effect as dividing by √d_k?",
        lambda d_k: np.sqrt(d_k),
    ),
    Mistake(
        "You returned 1/d_k: multiplying by it divides the scores by d_k itself. What does "
        "the formula divide them by?",
        lambda d_k: 1 / d_k,
    ),
    # `d_k ** -1/2`, `1 / d_k ** 1/2` and `1/(2*d_k)` give the same number, so one message
    # names all three.
    Mistake(
        "If you wrote `d_k ** -1/2`: Python read it as `(d_k ** -1) / 2`, because ** binds "
        "tighter than /. "
        "Where do brackets (or a decimal) go so that the whole −½ is the power? "
        "(`1 / d_k ** 1/2` is read the same way, as `(1 / d_k) / 2`. If you wrote "
        "`1/(2*d_k)`, the same number: the formula divides by the square root of d_k, not "
        "by twice d_k.)",
        lambda d_k: d_k**-1 / 2,
    ),
    Mistake(
        "Your function returns 0: something rounded the fraction down to a whole number. "
        "`//` is floor division (`1 // 2` is 0), and `int(...)` or `round(...)` with no "
        "digits do the same. Which of them is in your function, and how do you keep the "
        "fraction?",
        lambda d_k: 1 // np.sqrt(d_k),
    ),
    Mistake(
        "Your function returns 0.5 whatever d_k is: the right number for the tiny "
        "example's d_k = 4, but not for other sizes. Does your function use its "
        "argument `d_k`?",
        lambda d_k: 0.5,
    ),
    # `1 / d_k**2` and `d_k ** -2`: a square where the formula has a square root.
    Mistake(
        "You returned 1/d_k²: multiplying by it divides the scores by d_k squared. The "
        "formula divides by the square *root* of d_k: which power of d_k is that?",
        lambda d_k: 1 / d_k**2,
    ),
)


def rounded(got, want, inputs) -> str | None:
    """The right number rounded, e.g. `round(..., 2)`: it passes d_k = 4 (0.5) by luck."""
    if got.shape != () or not np.isfinite(got.astype(np.float64)):
        return None
    for decimals in range(1, 6):
        if np.isclose(float(got), round(float(want), decimals), rtol=1e-9, atol=1e-12):
            return (
                f"Your number is the right one rounded to {decimals} decimal"
                f"{'s' * (decimals != 1)}. Rounding is for showing a number, and each digit "
                "you drop changes the scores a little. Where does your function round, and "
                "could it return the full number instead?"
            )
    return None


def another_number(got, want, inputs) -> str | None:
    """Any other wrong finite number. The example below the message shows the number, so
    the message itself does not repeat it."""
    if got.shape != () or not np.isfinite(got.astype(np.float64)):
        return None
    return (
        f"Your `scale_factor` returns a different number for d_k = {inputs['d_k']} (both "
        "numbers are shown below). Work out the factor for this d_k by hand: multiplying by "
        "it must do the same as dividing by √d_k. Which step of your function gives "
        "something else?"
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
        hints=(rounded, another_number),
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


# Each message names what is wrong and asks a question; the full chain of shapes is left
# to `solution("output_shape")`.
SHAPE_MISTAKES = (
    Mistake(
        "That is the shape of the weights, one row per query and one column per key. The "
        "last step multiplies the weights by V: what does that product do to the number of "
        "columns?",
        lambda n_q, n_k, d_k, d_v: (n_q, n_k),
    ),
    Mistake(
        "Your number of rows is right, but your columns are the size of a query or key, "
        "d_k. Each output row is a mix of value rows: how many entries does one value row have?",
        lambda n_q, n_k, d_k, d_v: (n_q, d_k),
    ),
    Mistake(
        "Your number of columns is right, but you gave one output row per key. Which get "
        "their own mix of the values: the queries or the keys?",
        lambda n_q, n_k, d_k, d_v: (n_k, d_v),
    ),
    Mistake(
        "Your two numbers are the right ones, in the wrong order. In a shape, which comes "
        "first, and what is one row of the output?",
        lambda n_q, n_k, d_k, d_v: (d_v, n_q),
    ),
    Mistake(
        "That is the shape of K. Which matrix decides how many rows the output has, and "
        "which decides how many entries each row has?",
        lambda n_q, n_k, d_k, d_v: (n_k, d_k),
    ),
    Mistake(
        "Your number of columns is right, but you used it for the rows too. How many rows "
        "do the weights have, and does multiplying them by V change that?",
        lambda n_q, n_k, d_k, d_v: (d_v, d_v),
    ),
    # Built from the tiny example's arrays, e.g. `(len(Q), V.shape[1])`, not from the arguments.
    Mistake(
        "Your function returns (3, 4) whatever its arguments are: that is the shape of the "
        "tiny example's output. Does your function use n_q, n_k, d_k and d_v, or the "
        "arrays Q and V from the tour?",
        lambda n_q, n_k, d_k, d_v: (3, 4),
    ),
    Mistake(
        "Your number of rows is right, but you used it for the columns too: the output is "
        "not square. Each output row is a mix of value rows: how many entries does one value "
        "row have?",
        lambda n_q, n_k, d_k, d_v: (n_q, n_q),
    ),
)


def rows_or_columns(got, want, inputs) -> str:
    """Which of the two numbers is off, for a shape no named slip explains."""
    if got.shape != (2,):
        return ""
    mine = f"You returned ({int(got[0])}, {int(got[1])})."
    if got[0] == want[0]:
        return (
            f"{mine} Your number of rows is right, the number of columns is not. Each output "
            "row is a mix of value rows: how many entries does one value row have?"
        )
    if got[1] == want[1]:
        return (
            f"{mine} Your number of columns is right, the number of rows is not. Every query "
            "gets its own output row: how many queries are there?"
        )
    return (
        f"{mine} Neither number is right. Write down the shape after each of the four "
        "steps: Q Kᵀ, the division, the softmax, and the product with V."
    )


def whole_numbers(got: np.ndarray, notes: list[str]) -> np.ndarray:
    """Fail a shape that is not a pair of whole numbers in a way the shape messages would
    misread: the output array itself, or floats such as (2.0, 4.0)."""
    if got.ndim >= 2 and got.size != 2:
        raise Fail(
            f"Your `output_shape` returned an array of {shape_text(got.shape)} rather than a "
            "shape. A shape is a pair of whole numbers, (rows, columns). If you built the "
            "output to measure it, what does its `.shape` give?"
        )
    if got.shape == (2,) and got.dtype.kind == "f":
        shown = ", ".join(repr(float(x)) for x in got)
        raise Fail(
            f"Your `output_shape` returned a float (a number with a decimal point) in its "
            f"pair, read as ({shown}). A shape counts rows and columns, so it holds whole "
            "numbers (ints), like the `.shape` of an array. Where does a float come in: a "
            "`/`, or a function that returns floats?"
        )
    return got


@dataclass(frozen=True)
class ShapeCheck(ArrayCheck):
    """An ArrayCheck whose answer is a shape. Text, a dict, a set or a generator is asked
    for the pair itself: the general messages, which ask for a number or an array of
    numbers, do not fit a shape."""

    def _refuse_returned(self, value, name: str) -> None:
        if isinstance(value, Iterator):  # a generator, map(...), zip(...), iter(...)
            what = (
                "a generator"
                if type(value).__name__ == "generator"
                else f"an iterator (`{type(value).__name__}`)"
            )
            raise Fail(
                f"Your `{name}` returned {what}, which hands out its numbers one at a time "
                "when something loops over it. The checker needs the pair itself: two whole "
                "numbers, `(rows, columns)`, like the `.shape` of an array. How do you "
                "return two numbers as a pair?"
            )
        if isinstance(value, (str, bytes, dict, set, frozenset)):
            what = "text" if isinstance(value, (str, bytes)) else f"a {type(value).__name__}"
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            unordered = (
                " A set has no order, and in a shape the order matters."
                if isinstance(value, (set, frozenset))
                else ""
            )
            raise Fail(
                f"Your `{name}` returned {what}, {shown}, where the checker needs the pair "
                "itself: two whole numbers, `(rows, columns)`, like the `.shape` of an "
                f"array.{unordered} How do you return two numbers as a pair?"
            )


register(
    "notebooks/00_start_here.ipynb",
    solutions.output_shape,
    "output_shape(n_q, n_k, d_k, d_v) -> (rows, columns) of the attention output",
    ShapeCheck(
        shape_cases,
        reference=solutions.output_shape,
        shape_rule="two numbers, (rows, columns), like the `.shape` of a matrix",
        mistakes=SHAPE_MISTAKES,
        hints=(rows_or_columns,),
        prepare=whole_numbers,
        # For an answer that builds arrays to measure them, e.g. `Q @ K` without the Kᵀ.
        shape_hint=(
            "`@` needs the left matrix's columns to match the right one's rows: (a, b) @ "
            "(b, c) gives (a, c). Write each matrix's shape next to it: which one does the "
            "formula transpose, and what shape does that give?"
        ),
        # A shape shown as an array, "(2,): [2 4]", reads worse than the hint's (2, 4).
        show_expected=False,
        show_returned=False,
    ),
)
