"""Exercises ``softmax``, ``softmax_jacobian`` and ``causal_mask``.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

import numpy as np

from ..masks import causal_mask
from ..softmax import softmax, softmax_jacobian
from . import solutions
from .arrays import (
    ArrayCheck,
    Case,
    Mistake,
    bool_mask,
    overflow_hint,
    readable,
    softmax_columns,
    softmax_rows,
    softmax_unnormalised,
    softmax_unshifted,
)
from .messages import Fail
from .registry import register

LESSON = "notebooks/04_softmax.ipynb"

_SHIFT = (
    "Softmax doesn't change when you subtract the same number from a whole row (the factor "
    "exp(-that number) cancels). Which number, subtracted from each row, keeps every "
    "exponent ≤ 0?"
)

# ---------------------------------------------------------------- softmax

_UNNORMALISED = (
    "Your rows don't sum to 1: exponentials alone aren't probabilities yet. What could you "
    "divide each row by so that it adds up to 1?"
)

_WHOLE_SUM = (
    "You divided by the sum of the whole array, so the entire array sums to 1 instead of "
    "each row. Along which axis should the sum run, so that each row is divided by its own "
    "total?"
)

_NO_KEEPDIMS = (
    "Each row should be shifted by its own maximum and divided by its own sum, but "
    "`.max(axis=-1)` and `.sum(axis=-1)` give a 1-D array of shape (n,), and NumPy lines a "
    "1-D array up with the *last* axis: entry (i, j) meets row j's number, not row i's. How "
    "can you keep each row's number as a column of shape (n, 1)? (What does the `keepdims` "
    "argument do?)"
)


def _rows_sum_to_one(e: np.ndarray) -> np.ndarray:
    return e / e.sum(axis=-1, keepdims=True)


def softmax_cases() -> list[Case]:
    rng = np.random.default_rng(404)
    # Large entries are multiples of 1/4, which float32 holds exactly, so an answer
    # computed in float32 loses nothing on them.
    offsets = np.array([[-10_000.0], [0.0], [10_000.0]])
    far_apart = offsets + rng.integers(-8, 9, size=(3, 4)) / 4
    wide = np.array(
        [[-10_000.0, -2_500.0, 0.0, 7_500.0, 10_000.0], [3.5, -10_000.0, 10_000.0, 9_999.0, 0.0]]
    )
    # The square case comes first: a sum or max without keepdims runs there (and can be
    # named), where on other shapes it stops with a broadcasting error.
    return [
        Case("square x (3×3) with small entries", {"x": readable(rng, 3, 3, scale=2.0)}),
        Case("x (3×4) with rows near -10000, 0 and +10000", {"x": far_apart}),
        Case("x (2×5) with rows spanning -10000 to +10000", {"x": wide}),
        Case("a single row, x (1×6)", {"x": readable(rng, 1, 6, scale=2.0)}),
    ]


SOFTMAX_MISTAKES = (
    Mistake(
        "Your softmax normalises each column (axis 0) instead of each row. Which axis holds "
        "the keys of one row, and do your max and your sum both run along it?",
        softmax_columns,
    ),
    Mistake(
        "Your softmax overflows: exp(10000) is inf in floating point, and inf / inf is NaN. "
        + _SHIFT,
        softmax_unshifted,
    ),
    Mistake(
        "You subtracted one maximum for the whole array instead of one per row. A row far "
        "below it underflows: exp(-20000) is too small for floating point and becomes 0, so "
        "the row is 0 / 0 = NaN. Each row may be shifted by a number of its own: which one "
        "puts that row's largest exponent at exactly 0?",
        lambda x: _rows_sum_to_one(np.exp(x - x.max())),
    ),
    Mistake(
        "You subtracted each column's maximum (axis 0) instead of each row's. Softmax "
        "ignores one number subtracted from a whole row, but a different number in each "
        "column changes the weights. Along which axis do the entries of one row lie?",
        lambda x: _rows_sum_to_one(np.exp(x - x.max(axis=0, keepdims=True))),
    ),
    Mistake(_WHOLE_SUM, lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum()),
    Mistake(_WHOLE_SUM, lambda x: softmax_unnormalised(x) / softmax_unnormalised(x).sum()),
    Mistake(_UNNORMALISED, softmax_unnormalised),
    Mistake(_UNNORMALISED, np.exp),
    Mistake(
        _NO_KEEPDIMS,
        lambda x: softmax_unnormalised(x) / softmax_unnormalised(x).sum(axis=-1),
    ),
    Mistake(_NO_KEEPDIMS, lambda x: _rows_sum_to_one(np.exp(x - x.max(axis=-1)))),
    Mistake(
        _NO_KEEPDIMS,
        lambda x: np.exp(x - x.max(axis=-1)) / np.exp(x - x.max(axis=-1)).sum(axis=-1),
    ),
)


_softmax_overflow_hint = overflow_hint(
    "Your softmax returned NaN or inf on rows with large entries: exp(10000) overflows to "
    "inf, and exp(-10000) underflows (is too small for floating point and becomes 0). " + _SHIFT,
    lambda inputs: np.abs(inputs["x"]).max(),
)


def _softmax_sum_hint(got, want, inputs):
    dtype = got.dtype
    got = got.astype(np.float64)
    if got.shape != want.shape or got.ndim != 2 or not np.isfinite(got).all():
        return None
    if (got < 0).any():
        return "Your softmax has negative entries, but probabilities are never negative."
    rows = got.sum(axis=-1)
    if np.allclose(rows, 1.0, atol=1e-4):
        return None
    if np.allclose(got.sum(axis=0), 1.0, atol=1e-4):
        return (
            "Your softmax's columns sum to 1, but its rows should. Along which axis do the "
            "entries of one row lie?"
        )
    # Enough digits to show the gap even when it is a float16 rounding error.
    sums = np.array2string(rows, precision=6, floatmode="maxprec", suppress_small=True)
    if dtype.kind == "f" and dtype.itemsize < 4:
        return (
            f"Each row of a softmax sums to 1, but your rows sum to {sums}. Your result is "
            f"{dtype}, which keeps only about 3 significant digits. Where does your code "
            "change the dtype, and which dtype did x have?"
        )
    return f"Each row of a softmax sums to 1, but your rows sum to {sums}."


# ------------------------------------------------------- softmax_jacobian


def jacobian_cases() -> list[Case]:
    rng = np.random.default_rng(414)
    return [
        Case(
            "P (2×3), rows [0.2, 0.3, 0.5] and [0.6, 0.3, 0.1]",
            {"P": np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])},
        ),
        Case("P (4×5) of softmax rows", {"P": softmax_rows(readable(rng, 4, 5))}),
        Case(
            "P (2×4), a one-hot row and a uniform row",
            {"P": np.array([[0.0, 1.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])},
        ),
        Case("a single row, P (1×3)", {"P": np.array([[0.5, 0.25, 0.25]])}),
    ]


def _products(P: np.ndarray) -> np.ndarray:
    """p_i p_j for each row of P: (n, m) → (n, m, m)."""
    return P[:, :, None] * P[:, None, :]


def _diagonal(P: np.ndarray) -> np.ndarray:
    """diag(p) for each row of P: (n, m) → (n, m, m)."""
    return np.eye(P.shape[-1]) * P[:, None, :]


JACOBIAN_MISTAKES = (
    Mistake(
        "Your Jacobians are missing a term on the diagonal: x_i appears in p_i's own "
        "numerator, so ∂p_i/∂x_i has something extra that ∂p_i/∂x_j (j ≠ i) has not. What "
        "is it?",
        lambda P: -_products(P),
    ),
    Mistake(
        "Your Jacobians have the sign flipped. Raising x_i raises p_i: should the diagonal "
        "be positive or negative?",
        lambda P: _products(P) - _diagonal(P),
    ),
    Mistake(
        "You returned the products p_i p_j only. Raising x_i raises p_i and lowers every "
        "other weight: which of your entries should be negative, and what belongs on the "
        "diagonal?",
        _products,
    ),
    Mistake(
        "Your Jacobians have p_i on the diagonal and 0 everywhere else. Raising one score "
        "lowers every other weight, because each row still sums to 1. So what is ∂p_i/∂x_j "
        "for j ≠ i, and what does that take away on the diagonal too?",
        _diagonal,
    ),
    Mistake(
        "Your Jacobians have only their diagonal, p_i (1 - p_i). Raising x_j lowers every "
        "other weight p_i: what is ∂p_i/∂x_j for j ≠ i?",
        lambda P: np.eye(P.shape[-1]) * (P - P * P)[:, None, :],
    ),
    Mistake(
        "You returned p_i (1 - p_i) for each weight, shape (n, m): only the diagonals. "
        "Each row of P needs its whole m × m matrix of ∂p_i/∂x_j.",
        lambda P: P * (1 - P),
    ),
    Mistake(
        "Your diagonal is 1 - p_i², but ∂p_i/∂x_i is p_i times something. Where you used "
        "the identity matrix, what should stand on the diagonal?",
        lambda P: np.eye(P.shape[-1]) - _products(P),
    ),
    Mistake(
        "You subtracted p_j² (the same row of squares in every row of J), not the products "
        "p_i p_j. Which product has one index from the row of J and one from the column?",
        lambda P: _diagonal(P) - (P * P)[:, None, :],
    ),
    Mistake(
        "Your diagonal is right, but off the diagonal you have p_i (1 - p_j), which is "
        "positive, while raising x_j should lower p_i. Where does the Kronecker delta δ_ij "
        "belong?",
        lambda P: P[:, :, None] * (1 - P[:, None, :]),
    ),
)


def _jacobian_hint(got, want, inputs):
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    if not np.allclose(got, np.swapaxes(got, -1, -2), atol=1e-6):
        return (
            "One of your Jacobians isn't symmetric, but J[i, j] = p_i (δ_ij - p_j) equals "
            "J[j, i]. Which of your terms has its two indices the wrong way round, or mixes "
            "up rows of P?"
        )
    if not np.allclose(got.sum(axis=-1), 0.0, atol=1e-6):
        return (
            "The rows of your Jacobians don't sum to 0, but they should: adding the same "
            "number to every score changes no weight. Which entries are too large?"
        )
    return None


# ------------------------------------------------------------ causal_mask


def mask_cases() -> list[Case]:
    return [
        Case("4 tokens", {"n": 4}),
        Case("6 tokens", {"n": 6}),
        Case("a single token", {"n": 1}),
    ]


MASK_MISTAKES = (
    Mistake(
        "Your causal mask is transposed: it is True above the diagonal, which lets each query "
        "see later keys. Query i is row i and key j is column j: on which side of the "
        "diagonal is j ≤ i?",
        lambda n: np.triu(np.ones((n, n), dtype=bool)),
    ),
    Mistake(
        "Your causal mask leaves out the diagonal (j < i instead of j ≤ i). May a token "
        "attend to itself? Without the diagonal, the first row has no True at all, so its "
        "softmax would be 0 / 0.",
        lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1),
    ),
    Mistake(
        "Your mask is inverted: it is True at the blocked (future) positions j > i. Here True "
        'means "may attend": where should it be True?',
        lambda n: np.triu(np.ones((n, n), dtype=bool), k=1),
    ),
    Mistake(
        "Your mask is True everywhere, so nothing is masked: query i would see keys from the "
        "future. Which pairs (i, j) should stay allowed?",
        lambda n: np.ones((n, n), dtype=bool),
    ),
)


def _additive_mask(values: np.ndarray) -> None:
    if values.dtype.kind == "f" and np.isin(values, (0.0, -np.inf)).all():
        raise Fail(
            "You returned an additive mask (0 where allowed, -inf where blocked). This "
            "exercise asks for the bool mask, True where query i may attend to key j (j ≤ i). "
            "Which comparison gives True and False directly?"
        )


_AS_BOOL_MASK = bool_mask(
    "`~mask` and `mask & other` mean "
    '"not" and "and" only on booleans (on integers they work bit by bit, '
    "and on floats they fail). Use `dtype=bool` or a comparison such as `j <= i`.",
    label="causal mask",
    other_forms=_additive_mask,
)


# --------------------------------------------------------------- register

register(
    LESSON,
    solutions.softmax,
    "softmax(x) -> probabilities, softmax over the last axis of a 2-D x",
    ArrayCheck(
        softmax_cases,
        reference=softmax,
        shape_rule="the same shape as x, one probability per entry",
        mistakes=SOFTMAX_MISTAKES,
        hints=(_softmax_overflow_hint, _softmax_sum_hint),
        shape_hint=(
            "`.max(axis=-1)` and `.sum(axis=-1)` drop the last axis: for x of shape (n, m) "
            "they have shape (n,), which NumPy lines up with the last axis, of length m. How "
            "can you keep each row's maximum and sum as a column, (n, 1)? (What does the "
            "`keepdims` argument do?)"
        ),
    ),
)
register(
    LESSON,
    solutions.softmax_jacobian,
    "softmax_jacobian(P) -> (n, m, m), the Jacobian of each softmax row of P (n, m)",
    ArrayCheck(
        jacobian_cases,
        reference=softmax_jacobian,
        shape_rule="one (m, m) Jacobian for each of the n rows of P, (n, m, m)",
        mistakes=JACOBIAN_MISTAKES,
        hints=(_jacobian_hint,),
        shape_hint=(
            "`np.diag` and `np.outer` work on one 1-D row at a time (given a 2-D array, "
            "`np.diag` even returns its diagonal instead). P is 2-D, shape (n, m): what shapes "
            "would two views of P need so that their product broadcasts to (n, m, m), with "
            "entry [r, i, j] equal to p_i p_j of row r?"
        ),
    ),
)
register(
    LESSON,
    solutions.causal_mask,
    "causal_mask(n) -> bool (n, n), True where key j ≤ query i",
    ArrayCheck(
        mask_cases,
        reference=causal_mask,
        shape_rule="one row per query and one column per key, (n, n)",
        mistakes=MASK_MISTAKES,
        prepare=_AS_BOOL_MASK,
    ),
)
