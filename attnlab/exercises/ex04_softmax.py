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
    "Subtract each row's maximum first, `x - x.max(axis=-1, keepdims=True)`: that leaves "
    "the result unchanged (the factor exp(-max) cancels) and keeps every exponent ≤ 0."
)

# ---------------------------------------------------------------- softmax

_UNNORMALISED = (
    "You forgot to divide by the row sums: exponentials alone aren't probabilities. "
    "Divide each row by its sum, `e / e.sum(axis=-1, keepdims=True)`, so it adds up to 1."
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
        "Your softmax normalises each column (axis 0) instead of each row. Use `axis=-1` "
        "(the last axis) with `keepdims=True` in both the max and the sum, so that every "
        "row becomes a probability distribution.",
        softmax_columns,
    ),
    Mistake(
        "Your softmax overflows: exp(10000) is inf in floating point, and inf / inf is NaN. "
        + _SHIFT,
        softmax_unshifted,
    ),
    Mistake(
        "You subtracted the maximum of the whole array instead of each row's maximum. A row "
        "far below it underflows: exp(-20000) is 0 and 0 / 0 is NaN. Subtract each row's "
        "own maximum, `x.max(axis=-1, keepdims=True)`.",
        lambda x: _rows_sum_to_one(np.exp(x - x.max())),
    ),
    Mistake(
        "You subtracted each column's maximum (axis 0) instead of each row's. Softmax stays "
        "the same only when one number is subtracted from a whole row; a different number "
        "per column changes the result. Use `x.max(axis=-1, keepdims=True)`.",
        lambda x: _rows_sum_to_one(np.exp(x - x.max(axis=0, keepdims=True))),
    ),
    Mistake(
        "You divided by the sum of the whole array, so the entire array sums to 1 instead of "
        "each row. Sum along the last axis: `e.sum(axis=-1, keepdims=True)`.",
        lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
    ),
    Mistake(
        _UNNORMALISED,
        softmax_unnormalised,
    ),
    Mistake(
        _UNNORMALISED,
        np.exp,
    ),
    Mistake(
        "A sum without `keepdims=True`: `e.sum(axis=-1)` has shape (n,), which broadcasts "
        "along the wrong axis, so column j is divided by row j's sum. Use "
        "`e.sum(axis=-1, keepdims=True)` (or `[:, None]`) to keep it a column.",
        lambda x: softmax_unnormalised(x) / softmax_unnormalised(x).sum(axis=-1),
    ),
    Mistake(
        "A max without `keepdims=True`: `x.max(axis=-1)` has shape (n,), which broadcasts "
        "along the wrong axis: entry (i, j) gets row j's maximum subtracted. Use "
        "`x.max(axis=-1, keepdims=True)` (or `[:, None]`) to keep it a column.",
        lambda x: _rows_sum_to_one(np.exp(x - x.max(axis=-1))),
    ),
)


_softmax_overflow_hint = overflow_hint(
    "Your softmax returned NaN or inf on rows with large entries: exp(10000) "
    "overflows to inf (and exp(-10000) underflows to 0). " + _SHIFT,
    lambda inputs: np.abs(inputs["x"]).max(),
)


def _softmax_sum_hint(got, want, inputs):
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
            "Your softmax's columns sum to 1, but its rows should: normalise along the last "
            "axis, `axis=-1`."
        )
    sums = np.array2string(np.round(rows, 3), precision=3, suppress_small=True)
    return f"Each row of a softmax sums to 1, but your rows sum to {sums}."


# ------------------------------------------------------- softmax_jacobian


def jacobian_cases() -> list[Case]:
    rng = np.random.default_rng(414)
    return [
        Case("p = [0.2, 0.3, 0.5]", {"p": np.array([0.2, 0.3, 0.5])}),
        Case("p of length 5", {"p": softmax_rows(readable(rng, 5))}),
        Case("a one-hot p = [0, 1, 0, 0]", {"p": np.array([0.0, 1.0, 0.0, 0.0])}),
        Case("a uniform p of length 4", {"p": np.full(4, 0.25)}),
    ]


_JACOBIAN = "J = `np.diag(p) - np.outer(p, p)`, i.e. J[i, j] = p_i (δ_ij - p_j)"

JACOBIAN_MISTAKES = (
    Mistake(
        "Your Jacobian is missing the diagonal term diag(p): on the diagonal, ∂p_i/∂x_i = "
        f"p_i (1 - p_i) has an extra p_i, because x_i appears in p_i's numerator. {_JACOBIAN}.",
        lambda p: -np.outer(p, p),
    ),
    Mistake(
        "Your Jacobian has the sign flipped: you computed p pᵀ - diag(p). Raising x_i raises "
        f"p_i, so the diagonal is positive. {_JACOBIAN}.",
        lambda p: np.outer(p, p) - np.diag(p),
    ),
    Mistake(
        "You returned p pᵀ only. The Jacobian is diag(p) minus that outer product: raising x_i "
        f"raises p_i and lowers every other p_j. {_JACOBIAN}.",
        lambda p: np.outer(p, p),
    ),
    Mistake(
        "You returned diag(p) only and forgot to subtract p pᵀ: raising x_i lowers every "
        f"other p_j, because the probabilities still sum to 1. {_JACOBIAN}.",
        np.diag,
    ),
    Mistake(
        "Your Jacobian has only its diagonal, p_i (1 - p_i). The off-diagonal entries are "
        f"∂p_i/∂x_j = -p_i p_j: raising one score lowers every other probability. {_JACOBIAN}.",
        lambda p: np.diag(p - p * p),
    ),
    Mistake(
        "You returned only the diagonal entries p (1 - p) as a vector. The Jacobian is the "
        f"full n × n matrix of ∂p_i/∂x_j. {_JACOBIAN}.",
        lambda p: p * (1 - p),
    ),
    Mistake(
        "You subtracted `p @ p.T`, but for a 1-D p, `.T` changes nothing and `p @ p` is the "
        f"single number p·p. Use the outer product, `np.outer(p, p)`. {_JACOBIAN}.",
        lambda p: np.diag(p) - p @ p,
    ),
    Mistake(
        "You subtracted `p * p`, which is elementwise (p_j², broadcast over the rows), not "
        f"the outer product p pᵀ. Use `np.outer(p, p)` or `p[:, None] * p[None, :]`. "
        f"{_JACOBIAN}.",
        lambda p: np.diag(p) - p * p,
    ),
    Mistake(
        "You used the identity matrix where diag(p) belongs: ∂p_i/∂x_i = p_i (1 - p_i), not "
        f"1 - p_i². {_JACOBIAN}.",
        lambda p: np.eye(p.shape[0]) - np.outer(p, p),
    ),
)


def _jacobian_hint(got, want, inputs):
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    if not np.allclose(got, got.T, atol=1e-6):
        return (
            "Your Jacobian isn't symmetric, but J[i, j] = p_i (δ_ij - p_j) equals J[j, i]. "
            f"{_JACOBIAN}."
        )
    if not np.allclose(got.sum(axis=-1), 0.0, atol=1e-6):
        return (
            "The rows of your Jacobian don't sum to 0, but they should: adding the same "
            f"number to every score changes no probability. {_JACOBIAN}."
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
        "Your causal mask is transposed: True above the diagonal (the upper triangle) lets "
        "each query see later keys. Query i is row i and may attend to keys j ≤ i: the lower "
        "triangle, e.g. `np.tril(np.ones((n, n), dtype=bool))`.",
        lambda n: np.triu(np.ones((n, n), dtype=bool)),
    ),
    Mistake(
        "Your causal mask leaves out the diagonal (j < i instead of j ≤ i): each token may "
        "attend to itself, and without it the first row has no True at all, so its softmax "
        "would be 0 / 0.",
        lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1),
    ),
    Mistake(
        "Your mask is inverted: it is True at the blocked (future) positions j > i. Here True "
        'means "may attend", so it should be True where j ≤ i.',
        lambda n: np.triu(np.ones((n, n), dtype=bool), k=1),
    ),
    Mistake(
        "Your mask is True everywhere, so nothing is masked: query i would see keys from the "
        "future. It should be True only where key j ≤ query i.",
        lambda n: np.ones((n, n), dtype=bool),
    ),
)


def _additive_mask(values: np.ndarray) -> None:
    if values.dtype.kind == "f" and np.isin(values, (0.0, -np.inf)).all():
        raise Fail(
            "You returned an additive mask (0 where allowed, -inf where blocked). This "
            "exercise asks for the bool mask, True where query i may attend to key j (j ≤ i); "
            "`np.where(mask, 0.0, -np.inf)` turns it into the additive one when you need it."
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
            "`x.max(axis=-1)` and `e.sum(axis=-1)` drop the last axis; keep it with "
            "`keepdims=True` (or add `[:, None]`) so that each row's maximum and sum line "
            "up with that row."
        ),
    ),
)
register(
    LESSON,
    solutions.softmax_jacobian,
    "softmax_jacobian(p) -> J of shape (n, n), J = diag(p) - p pᵀ",
    ArrayCheck(
        jacobian_cases,
        reference=softmax_jacobian,
        shape_rule="one row and one column per entry of p, (n, n)",
        mistakes=JACOBIAN_MISTAKES,
        hints=(_jacobian_hint,),
        shape_hint=(
            "p is 1-D, shape (n,): `np.outer(p, p)` or `p[:, None] * p[None, :]` makes "
            "the (n, n) matrix p pᵀ."
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
