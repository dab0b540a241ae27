"""Exercises ``softmax``, ``softmax_jacobian``, ``masked_softmax`` and ``qk_norm_scores``.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..softmax import softmax, softmax_jacobian
from . import solutions
from .arrays import (
    EXP_LIMIT,
    ArrayCheck,
    Case,
    Mistake,
    overflow_hint,
    readable,
    softmax_columns,
    softmax_rows,
    softmax_unnormalised,
    softmax_unshifted,
)
from .calling import run_with_time_limit, silenced
from .messages import CheckResult
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

_LARGEST_IS_ONE = (
    "Your rows don't sum to 1, and the largest weight of each row is exactly 1: that is "
    "exp(x - max) not divided by anything yet, or the exponentials divided by the row's "
    "largest one. What should each row be divided by so that it adds up to 1?"
)

_HALF_SHIFTED = (
    "You shifted the exponentials in the numerator but not the ones in the sum (or the other "
    "way round). The shift changes nothing only when numerator and denominator are both "
    "multiplied by the same exp(-max), so that it cancels. Are the exponentials you add up "
    "the same ones you divide?"
)

_WHOLE_SUM = (
    "You divided by the sum of the whole array, so the entire array sums to 1 instead of "
    "each row. Along which axis should the sum run, so that each row is divided by its own "
    "total?"
)

# Python's built-in max compares whole rows of a 2-D array (the built-in sum adds them up).
# The error quotes the learner's line: the hint is given only when that line calls it.
_BUILTIN_MAX = (
    lambda error, inputs: (
        "truth value of an array with more than one element is ambiguous" in error
        and re.search(r"(?<![.\w])(max|min)\(", error) is not None
    ),
    "Python's built-in `max` (or `min`) goes through a 2-D array row by row and compares "
    "whole rows, and `row_a > row_b` is a row of True/False, not one answer: that is the "
    "error. (The built-in `sum` runs, but it adds up the rows, giving one total per column.) "
    "NumPy's `x.max` and `x.sum` take an `axis`: along which axis do the entries of one "
    "row lie?",
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
    Mistake(
        "You divided each score by its row's total, x / Σx: the exponential is missing. "
        "Then a negative score can get a negative weight, and a row whose scores add up to 0 "
        "is divided by 0. Which step makes every entry positive before you divide?",
        lambda x: x / x.sum(axis=-1, keepdims=True),
    ),
    Mistake(
        _HALF_SHIFTED,
        lambda x: np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x).sum(axis=-1, keepdims=True),
    ),
    Mistake(
        _HALF_SHIFTED,
        lambda x: np.exp(x) / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True),
    ),
    Mistake(_WHOLE_SUM, lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum()),
    Mistake(_WHOLE_SUM, lambda x: softmax_unnormalised(x) / softmax_unnormalised(x).sum()),
    Mistake(_LARGEST_IS_ONE, softmax_unnormalised),
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
        if (got <= 0).all() and np.allclose(np.exp(got).sum(axis=-1), 1.0, atol=1e-4):
            return (
                "Your softmax has negative entries, but probabilities are never negative. "
                "Your rows look like log p, the logarithm of the weights: what turns them "
                "into p?"
            )
        return "Your softmax has negative entries, but probabilities are never negative."
    rows = got.sum(axis=-1)
    if np.allclose(rows, 1.0, atol=1e-4):
        return None
    # A row of zeros where the plain exp overflows or underflows: the NaN of inf / inf or
    # 0 / 0, cleaned up afterwards (np.nan_to_num), is 0, not a weight.
    lost = (got == 0).all(axis=-1) & (np.abs(inputs["x"]).max(axis=-1) > EXP_LIMIT)
    if lost.any():
        rows_lost = [str(r) for r in np.flatnonzero(lost)]
        which = _which_rows(
            rows_lost,
            "of your result is all zeros. Its scores are",
            "of your result are all zeros. Their scores are",
        )
        return (
            f"{which} far too large or too negative for a plain exp: exp(10000) overflows "
            "to inf and exp(-10000) underflows to 0, so the division is inf / inf or 0 / 0, "
            "NaN, and turning that NaN into 0 afterwards doesn't give the weights back. " + _SHIFT
        )
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


def _which_rows(rows: list[str], one: str, many: str) -> str:
    """The start of a message about some rows: "Row 2 <one>" or "Rows 1, 2 and 4 <many>"."""
    if len(rows) == 1:
        return f"Row {rows[0]} {one}"
    return f"Rows {', '.join(rows[:-1])} and {rows[-1]} {many}"


def _softmax_flat_row_hint(got, want, inputs):
    """Rows of equal weights where the scores differ: most often the scores were clipped
    (``np.clip``) to keep exp in range, which erases their gaps."""
    if got.shape != want.shape or got.ndim != 2 or not np.isfinite(got.astype(np.float64)).all():
        return None
    if got.dtype.kind == "f" and got.dtype.itemsize < 4:  # float16 has its own message
        return None
    got = got.astype(np.float64)
    flat = (np.ptp(got, axis=-1) < 1e-9) & (np.ptp(want, axis=-1) > 1e-3)
    if not flat.any():
        return None
    rows = [str(r) for r in np.flatnonzero(flat)]
    which = _which_rows(
        rows,
        "of your result gives every key the same weight, but its scores differ",
        "of your result give every key the same weight, but their scores differ",
    )
    return (
        f"{which}, and softmax depends on exactly those differences. Did you clip the scores "
        "(`np.clip`) to keep `np.exp` in range? Clipping changes the gaps between scores: "
        "a row whose scores all lie beyond the clip becomes a row of equal scores. Which "
        "number, subtracted from each row, keeps every exponent ≤ 0 and changes no gap?"
    )


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
        "Your entries are δ_ij - p_j: the bracket is right, but every entry of row i of J "
        "is p_i times it. Which view of P, shape (n, m, 1) or (n, 1, m), gives each row of "
        "J its own p_i?",
        lambda P: np.eye(P.shape[-1]) - P[:, None, :],
    ),
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
    Mistake(
        "Your Jacobians have the right form, but for softmax(P), not for P. P is already "
        "weights, the output of a softmax: which numbers does the formula p_i (δ_ij - p_j) "
        "need?",
        lambda P: softmax_jacobian(softmax_rows(P)),
    ),
)


_ROW_LOOP = (
    "Right numbers, but with a Python loop over the rows of P. The point of this exercise "
    "is to build all n Jacobians at once: which views of P, with an axis of length 1 in "
    "the right place, broadcast to (n, m, m)?"
)


def _loops_over(param: str, tree: ast.AST) -> bool:
    """Whether a loop or comprehension in ``tree`` runs over the rows of ``param``:
    ``for p in P``, ``enumerate(P)``, ``range(len(P))`` or ``range(P.shape[0])``."""

    def rows(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id == param
        if isinstance(node, ast.Subscript):  # P.shape[0]
            return (
                isinstance(node.value, ast.Attribute)
                and node.value.attr == "shape"
                and rows(node.value.value)
                and isinstance(node.slice, ast.Constant)
                and node.slice.value == 0
            )
        if isinstance(node, ast.Call):  # range(len(P)), enumerate(P), zip(P, ...)
            return any(rows(arg) for arg in node.args)
        return False

    loops = (n for n in ast.walk(tree) if isinstance(n, ast.For | ast.comprehension))
    return any(rows(loop.iter) for loop in loops)


def _row_loop_in_source(answer: Any) -> bool:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(answer)))
        param = next(iter(inspect.signature(answer).parameters))
    except (OSError, TypeError, SyntaxError, ValueError, StopIteration):
        return False
    return _loops_over(param, tree)


def _row_loop_when_run(answer: Any, P: np.ndarray, timeout: float | None) -> bool:
    """Run the answer on a P that notes which of its rows are taken one at a time
    (iterating, ``P[r]``, ``np.apply_along_axis``, ``np.vectorize``): more than one is a loop."""
    seen: set[int] = set()

    class Rows(np.ndarray):
        def __iter__(self) -> Any:
            if self.ndim == 2:
                seen.update(range(len(self)))
            return super().__iter__()

        def __getitem__(self, key: Any) -> Any:
            first = key[0] if isinstance(key, tuple) and key else key
            if self.ndim == 2 and isinstance(first, int | np.integer):
                seen.add(int(first) % len(self))
            return super().__getitem__(key)

    try:
        with silenced():
            run_with_time_limit(lambda: answer(np.copy(P).view(Rows)), timeout)
    except Exception:
        return False
    return len(seen) > 1


_DIAG_OUTER_SHAPES = (
    "`np.diag` and `np.outer` work on one 1-D row at a time (given a 2-D array, "
    "`np.diag` even returns its diagonal instead). P is 2-D, shape (n, m): what shapes "
    "would two views of P need so that their product broadcasts to (n, m, m), with "
    "entry [r, i, j] equal to p_i p_j of row r?"
)


def _broadcast_hint(error: str) -> str:
    """The shape hint for an answer that does not call ``np.diag`` or ``np.outer``: the
    shapes NumPy could not line up, if its message names them, and a question about them."""
    # NumPy's "could not be broadcast together with shapes (2,3,3) (1,2,3)", up to the
    # learner's line of code, which may hold parentheses of its own.
    named = error.split("shapes", 1)[1].split("`", 1)[0] if "shapes" in error else ""
    shapes = re.findall(r"\(\d[\d,]*\)", named)
    if len(shapes) >= 2:
        return (
            f"NumPy lines {shapes[0]} and {shapes[1]} up from the right, and only an axis of "
            "length 1 stretches to fit another length: which of the two is missing an axis "
            "of length 1, and where should it go, so that the result broadcasts to (n, m, m)?"
        )
    return (
        "NumPy lines shapes up from the right, and only an axis of length 1 stretches to "
        "fit another length: which of your arrays is missing an axis of length 1, and where "
        "should it go, so that the result broadcasts to (n, m, m)?"
    )


def _calls_diag_or_outer(answer: Any) -> bool:
    """Whether the answer's own source calls ``diag`` or ``outer`` (True if it can't be read)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(answer)))
    except (OSError, TypeError, SyntaxError):
        return True
    return any(
        (isinstance(n, ast.Attribute) and n.attr in {"diag", "outer"})
        or (isinstance(n, ast.Name) and n.id in {"diag", "outer"})
        for n in ast.walk(tree)
    )


@dataclass(frozen=True)
class NoRowLoopCheck(ArrayCheck):
    """An ArrayCheck that, once the numbers are right, refuses an answer that loops over
    the rows of P: the exercise is about broadcasting. Its shape hint speaks of `np.diag`
    and `np.outer` only to an answer that calls them."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed:
            head, found, tail = result.message.partition(" " + _DIAG_OUTER_SHAPES)
            if found and not _calls_diag_or_outer(answer):
                return CheckResult(False, f"{head} {_broadcast_hint(head)}{tail}", name)
            return result
        P = softmax_rows(np.random.default_rng(415).normal(size=(4, 3)))
        if _row_loop_in_source(answer) or _row_loop_when_run(answer, P, timeout):
            return CheckResult(False, _ROW_LOOP, name)
        return result


def _jacobian_hint(got, want, inputs):
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    if not np.allclose(got, np.swapaxes(got, -1, -2), atol=1e-6):
        return (
            "One of your Jacobians isn't symmetric, but J[i, j] = p_i (δ_ij - p_j) equals "
            "J[j, i]. Which of your terms has its two indices the wrong way round, mixes "
            "up rows of P, or is missing a factor?"
        )
    sums = got.sum(axis=-1)
    if not np.allclose(sums, 0.0, atol=1e-6):
        head = (
            "The rows of your Jacobians don't sum to 0, but they should: adding the same "
            "number to every score changes no weight."
        )
        if (sums <= 1e-6).all():
            return f"{head} Yours sum to less than 0: which entries are too small (the diagonal?)"
        if (sums >= -1e-6).all():
            return f"{head} Yours sum to more than 0: which entries are too large?"
        return f"{head} Which entries are off?"
    return None


# --------------------------------------------------------- masked_softmax


def _masked_reference(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return softmax(x, mask=np.asarray(mask, dtype=bool))


def masked_cases() -> list[Case]:
    rng = np.random.default_rng(424)
    # Every row keeps at least one key, and each row blocks different keys.
    keep = np.array(
        [[True, False, True, True], [False, True, True, False], [True, True, False, True]]
    )
    # The blocked keys have by far the largest scores: exp(0 - 800) underflows to 0.
    far = np.array([[0.0, 1.0, 800.0, 2.0], [1000.0, -999.0, -1000.0, -998.0]])
    far_keep = np.array([[True, True, False, True], [False, True, True, True]])
    # Row 1 has every key blocked.
    empty = np.array([[3.0, 1.0, 2.0], [0.5, -1.0, 2.0], [1.0, 4.0, 0.0]])
    empty_keep = np.array([[True, True, False], [False, False, False], [True, False, True]])
    # Kept scores near -1.3e36, below every usual finite fill (-1e4, -1e9, -9e15, -1e30):
    # such a fill becomes the row's maximum. Powers of 2, so float32 holds them exactly.
    deep = np.array([[-(2.0**120), -(2.0**120), 0.0, -(2.0**121)]])
    deep_keep = np.array([[True, True, False, True]])
    return [
        Case(
            "x (3×4) with small entries, one mask for each row",
            {"x": readable(rng, 3, 4, scale=2.0), "mask": keep},
        ),
        Case(
            "x (3×5) and a 1-D mask (5,), the same keys blocked in every row",
            {
                "x": readable(rng, 3, 5, scale=2.0),
                "mask": np.array([True, True, True, False, False]),
            },
        ),
        Case(
            "x (2×4) whose blocked keys have by far the largest scores",
            {"x": far, "mask": far_keep},
        ),
        Case("x (3×3) with every key of row 1 blocked", {"x": empty, "mask": empty_keep}),
        # Last, so that a plain -1e9 fill is first told about the row with no key left.
        Case("x (1×4) whose kept scores lie far below -1e9", {"x": deep, "mask": deep_keep}),
    ]


def _stable(z: np.ndarray) -> np.ndarray:
    """The plain shifted softmax of each row, with no care for an all -inf row."""
    with np.errstate(all="ignore"):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _renormalised(w: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return w / w.sum(axis=-1, keepdims=True)


def _zero_if_empty(e: np.ndarray) -> np.ndarray:
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


def _masked(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A right masked softmax, as a building block of wrong answers."""
    kept = np.where(mask, x, -np.inf)
    m = kept.max(axis=-1, keepdims=True)
    return _zero_if_empty(np.exp(kept - np.where(m > -np.inf, m, 0.0)))


_EMPTY_ROW = (
    "Two steps can give NaN on such a row: the shift (the row is all -inf, so its maximum "
    "is -inf, and -inf - (-inf) is NaN) and the division (every exp is 0, so the sum is 0, "
    "and 0 / 0 is NaN). Which number could you shift such a row by, and what should you "
    "divide by when its sum is 0?"
)
_NAN_SLICE = (
    "`np.nanmax` warns on a row that is all nan, that is, a row with no key left, whatever "
    "you do with its result afterwards. Take each row's maximum of "
    "`np.where(mask, x, -np.inf)` instead. Then which number could you shift a row by when "
    "its maximum is -inf, and what should you divide by when its sum is 0?"
)
# The same, once a rerun with NumPy's errors raised has found the step that gives NaN.
_EMPTY_ROW_BY_STEP = {
    "subtract": (
        "Such a row is all -inf, so its maximum is -inf, and -inf - (-inf) is NaN. Which "
        "number could you shift such a row by instead? (Then look at its sum: what should "
        "you divide by when it is 0?)"
    ),
    "divide": (
        "Your shift is fine there, but after exp every entry of such a row is 0, so its sum "
        "is 0, and 0 / 0 is NaN. What could you divide by when a row's sum is 0, so that "
        "the row stays all zeros?"
    ),
    "nan slice": _NAN_SLICE,
}


def _nan_slice(error: str) -> bool:
    """Whether a warning is NumPy's about a nan-ignoring reduction of an all-nan row."""
    return "All-NaN slice" in error


def _has_empty_row(inputs: dict[str, Any]) -> bool:
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), np.shape(inputs["x"]))
    return not keep.any(axis=-1).all()


def _blocked_on_top(inputs: dict[str, Any]) -> bool:
    """Whether some row's largest score belongs to a blocked key."""
    x = np.asarray(inputs["x"], dtype=float)
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), x.shape)
    kept_top = np.where(keep, x, -np.inf).max(axis=-1)
    return bool((x.max(axis=-1) > kept_top).any())


def _warning_cause(error: str, inputs: dict[str, Any]) -> str:
    """Where a warning of a right answer comes from, from NumPy's message and the input."""
    if _nan_slice(error):
        return _NAN_SLICE
    if "overflow" in error:
        where = (
            " On this input a blocked key has by far the largest score of its row."
            if _blocked_on_top(inputs)
            else ""
        )
        return (
            f"An exp overflows on a score that your function throws away afterwards.{where} "
            "Does your code still take exp of the blocked scores? (`np.ma`, for one, computes "
            "every entry, masked or not.) Which value could a blocked score take before exp, "
            "so that exp gives exactly 0 without overflowing?"
        )
    if error.endswith("in log"):
        return (
            "`np.log` of the mask gives -inf where it is False, which is the fill you want, "
            "but log(0) is that divide by zero. `np.where(mask, x, -np.inf)` gives the same "
            "fill with no warning."
        )
    if _has_empty_row(inputs) and error.endswith("subtract"):
        return (
            "A row with every key blocked is where it happens: its maximum is -inf, and "
            "-inf - (-inf) is computed, then thrown away. Which number could you shift such "
            "a row by instead?"
        )
    if _has_empty_row(inputs) and error.endswith("divide"):
        return (
            "A row with every key blocked is where it happens: its sum is 0, and 0 / 0 is "
            "computed, then thrown away. What could you divide by when a row's sum is 0?"
        )
    if _has_empty_row(inputs):
        return (
            "A row with every key blocked is where it happens: -inf - (-inf) or 0 / 0 is "
            "computed, then thrown away. Can you pick the shift and the divisor of such a row "
            "so that neither is ever computed?"
        )
    return "Which step computes a value that is then thrown away, and can you avoid it?"


def _exp_times_mask(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The kept maximum, but the mask multiplied in after exp: inf · False is NaN."""
    kept = np.where(mask, x, -np.inf)
    m = kept.max(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        return _zero_if_empty(np.exp(x - np.where(m > -np.inf, m, 0.0)) * mask)


_USE_WHERE = (
    "False · (−inf) is nan, not 0, and so is inf · False: use `np.where(mask, x, -np.inf)`, "
    "which picks each entry from one array or the other without multiplying."
)


def _mask_row_by_index(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A loop over the rows that takes ``mask[i]`` as row i's mask: right for a 2-D mask,
    but for a 1-D mask ``mask[i]`` is the one flag of key i, applied to the whole row."""
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim == 2:
        return _masked(x, mask)
    return np.stack(
        [_masked(x[i : i + 1], np.full(x.shape[-1], mask[i]))[0] for i in range(len(x))]
    )


_FINITE_FILL = (
    "You filled the blocked scores with a large finite number such as -1e9. That number is "
    "far below only the scores above it: here every kept score lies below it, so a blocked "
    "key has the largest score of its row, every kept exp(score - max) underflows to 0, and "
    "the kept keys get no weight at all. Which fill lies below every score x can hold, "
    "however negative?"
)


def _finite_fill_empty_rows_zeroed(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A -1e9 fill, with the rows that keep no key set to zeros afterwards."""
    keep = np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(x))
    return np.where(keep.any(axis=-1, keepdims=True), softmax_rows(np.where(keep, x, -1e9)), 0.0)


def _masked_whole_sum(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each row shifted by its kept maximum, then divided by the sum of the whole array."""
    kept = np.where(mask, x, -np.inf)
    m = kept.max(axis=-1, keepdims=True)
    e = np.exp(kept - np.where(m > -np.inf, m, 0.0))
    return e / e.sum()


def _masked_whole_sum_one_shift(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """One shift for the whole array, its largest kept score, and one sum: a softmax of all
    the kept scores of the array together."""
    kept = np.where(mask, x, -np.inf)
    e = np.exp(kept - kept.max())
    return e / e.sum()


_ONE_FLAG_PER_KEY = "Here the mask is 1-D, shape (m,): one flag per key, shared by every row."

MASKED_MISTAKES = (
    Mistake(
        "Your weights are nan where a blocked key's score lies far above the kept ones: you "
        "multiplied the mask in after `np.exp`, and exp of that blocked score overflows to "
        "inf. " + _USE_WHERE + " Then exp gives exactly 0 on the blocked keys.",
        _exp_times_mask,
    ),
    Mistake(
        "Your weights ignore the mask: the blocked keys still get weight. Which scores should "
        "become -inf before the softmax, so that exp gives exactly 0 there?",
        lambda x, mask: softmax_rows(x),
    ),
    Mistake(
        "Your weights are right for a mask of x's shape, but not for the 1-D mask, shape "
        "(m,): one flag per key, shared by every row. If you go row by row, `mask[i]` is then "
        "the flag of key i, not the mask of row i. What does `np.where(mask, x, -np.inf)` do "
        "with a mask of shape (m,)?",
        _mask_row_by_index,
    ),
    Mistake(
        "Your mask is the wrong way round: your blocked keys are the ones marked True. Here "
        'True means "may attend", as in `attnlab.softmax(x, mask=...)` and the bool '
        "`attn_mask` of PyTorch's `scaled_dot_product_attention` (`nn.MultiheadAttention` "
        "uses the opposite, lesson 10). Which keys keep their scores?",
        lambda x, mask: _masked(x, ~np.asarray(mask, dtype=bool)),
    ),
    Mistake(
        "You set the blocked scores to 0, not to -inf. exp(0) = 1, so a blocked key still gets "
        "a share. Which score has exp(score) = 0 exactly?",
        lambda x, mask: softmax_rows(np.where(mask, x, 0.0)),
    ),
    Mistake(
        "You set the blocked scores to 0 before the softmax, so they took a share "
        "(exp(0) = 1), and zeroing them afterwards leaves rows summing to less than 1. Which "
        "score has exp(score) = 0 exactly?",
        lambda x, mask: softmax_rows(np.where(mask, x, 0.0)) * mask,
    ),
    Mistake(
        "You zeroed the blocked weights after the softmax, so your rows sum to less than 1. "
        "The kept keys should share all of the weight: what would you have to divide by, and "
        "why is putting -inf into the scores before the softmax simpler?",
        lambda x, mask: softmax_rows(x) * mask,
    ),
    Mistake(
        "You zeroed the blocked weights after the softmax and then divided by the row sum. "
        "Where a blocked key has by far the largest score, the kept weights underflow to 0 "
        "first (exp(0 - 800) is too small for floating point), and the row becomes 0 / 0 = NaN. "
        "Could the blocked keys be removed before the softmax instead, so that the maximum "
        "is taken over the kept keys only?",
        lambda x, mask: _renormalised(softmax_rows(x) * mask),
    ),
    # A full softmax, zeroed and renormalised with a guard against 0 / 0, gives the same
    # numbers as a shift by the maximum of all scores: one message names both routes.
    Mistake(
        "Where a blocked key has by far the largest score of its row, your kept keys get no "
        "weight at all. Your row's maximum ran over *all* its scores, blocked ones included: "
        "either you shifted by that maximum, or you took a full softmax, zeroed the blocked "
        'weights and divided by the row sum (the recipe of the section "Could you mask after the '
        'softmax instead?", which breaks exactly here). Either way every kept '
        "exp(x - max) underflows to 0. Put -inf into the blocked scores first: over which keys "
        "does the maximum then run?",
        lambda x, mask: _zero_if_empty(np.exp(x - x.max(axis=-1, keepdims=True)) * mask),
    ),
    Mistake(
        "Your softmax is right wherever a row keeps a key, but a row with every key blocked "
        "comes out NaN. " + _EMPTY_ROW,
        lambda x, mask: _stable(np.where(mask, x, -np.inf)),
    ),
    Mistake(
        "You filled the blocked scores with a large finite number such as -1e9. That works "
        "while a row keeps a key scoring above the fill, but a row with every key blocked "
        "becomes a row of equal scores and spreads its weight evenly over keys it may not "
        "see. What should a query with nothing to attend to get, so that its output is the "
        "zero vector?",
        lambda x, mask: softmax_rows(np.where(mask, x, -1e9)),
    ),
    Mistake(
        "Your weights are right wherever a row keeps a key, but a row with every key blocked "
        "gets equal weights, spread over keys it may not see (a finite fill such as "
        "`np.finfo(x.dtype).min` does that: it turns such a row into a row of equal scores). "
        "What should a query with nothing to attend to get, so that its output is the zero "
        "vector?",
        lambda x, mask: softmax_rows(np.where(mask, x, np.finfo(np.asarray(x).dtype).min)),
    ),
    Mistake(_FINITE_FILL, lambda x, mask: softmax_rows(np.where(mask, x, -1e9)) * mask),
    Mistake(_FINITE_FILL, _finite_fill_empty_rows_zeroed),
    Mistake(_WHOLE_SUM, _masked_whole_sum),
    Mistake(_WHOLE_SUM, _masked_whole_sum_one_shift),
)


def _masked_sum_hint(got, want, inputs):
    if got.shape != want.shape or not np.isfinite(got.astype(np.float64)).all():
        return None
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    if (got[~keep] != 0).any():
        return (
            "Some of your blocked keys get a weight that is not exactly 0. exp(-inf) is "
            "exactly 0: where do the blocked scores become -inf?"
        )
    return None


def _masked_nan_hint(got, want, inputs):
    if got.shape != want.shape or np.isfinite(got.astype(np.float64)).all():
        return None
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    empty = ~keep.any(axis=-1)
    bad = ~np.isfinite(got.astype(np.float64)).all(axis=-1)
    if empty.any() and (bad <= empty).all():
        return "Your softmax returned NaN on a row with every key blocked. " + _EMPTY_ROW
    return None


def _masked_lost_row_hint(got, want, inputs):
    """A row that keeps a key came out all zeros: its shift was above its kept maximum."""
    if got.shape != want.shape or not np.isfinite(got.astype(np.float64)).all():
        return None
    x = np.asarray(inputs["x"], dtype=float)
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    lost = keep.any(axis=-1) & (got.sum(axis=-1) == 0) & (want.sum(axis=-1) > 0)
    if not lost.any():
        return None
    row = int(np.argmax(lost))
    top = float(np.where(keep, x, -np.inf)[row].max())
    return (
        f"Row {row} keeps a key, yet it came out all zeros: its kept scores are all very "
        f"negative (the largest is {top:.4g}), and every exp(score - shift) underflowed to 0. "
        "Your shift is not that row's maximum over its kept keys. A negative maximum is fine: "
        "which rows really need a shift other than their kept maximum?"
    )


def _masked_nan_on_blocked_hint(got, want, inputs):
    """NaN on blocked keys only, the kept keys right: the blocked scores were set to nan."""
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    bad = ~np.isfinite(got)
    if not bad.any() or (bad & keep).any() or not np.allclose(got[keep], want[keep]):
        return None
    return (
        "Your weights are right on the kept keys, but nan on blocked ones: a blocked score "
        "set to nan stays nan through exp. Which score has exp(score) = 0 exactly?"
    )


def _masked_overflow_hint(got, want, inputs):
    """NaN on a row that keeps a key whose kept scores lie too far apart for exp: its
    shift was not near the row's largest kept score (the smallest, say, or the mean)."""
    if got.shape != want.shape or np.isfinite(got.astype(np.float64)).all():
        return None
    x = np.broadcast_to(np.asarray(inputs["x"], dtype=float), want.shape)
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    spread = np.where(keep, x, -np.inf).max(axis=-1) - np.where(keep, x, np.inf).min(axis=-1)
    bad = ~np.isfinite(got.astype(np.float64)).all(axis=-1) & keep.any(axis=-1)
    wide = bad & (spread > EXP_LIMIT)
    if not wide.any():
        return None
    row = int(np.argmax(wide))
    return (
        f"Your weights are nan on row {row}, which keeps a key. Its kept scores lie about "
        f"{spread[row]:.3g} apart, so exp(score - shift) overflows to inf unless the shift is "
        "close to the row's largest kept score, and inf / inf is NaN. Which number should "
        "the shift be, so that every exponent is ≤ 0?"
    )


def _masked_scores_hint(got, want, inputs):
    """Entries outside [0, 1] and no NaN: scores (or exponentials) returned as weights."""
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    if np.isnan(got).any() or not ((got < 0).any() or (got > 1).any()):
        return None
    x = np.broadcast_to(np.asarray(inputs["x"], dtype=float), want.shape)
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    if np.allclose(got[keep], x[keep]):
        return (
            "Your function returns the masked scores, not weights: the raw scores on the kept "
            "keys and -inf or a fill on the blocked ones. The softmax of each row, over its "
            "kept keys, is still to come."
        )
    return (
        f"Weights lie between 0 and 1, but yours run from {got.min():.3g} to {got.max():.3g}. "
        "Do you return scores, or exponentials not yet divided by their row's sum? A weight "
        "is exp of a shifted score, divided by the sum of its row's kept exponentials."
    )


def _masked_multiply_hint(got, want, inputs):
    """NaN on rows that keep a key: most often the mask was multiplied in."""
    if got.shape != want.shape or np.isfinite(got.astype(np.float64)).all():
        return None
    keep = np.broadcast_to(np.asarray(inputs["mask"], dtype=bool), want.shape)
    bad = ~np.isfinite(got.astype(np.float64)).all(axis=-1)
    if (bad & keep.any(axis=-1)).any():
        return (
            "Your weights are nan on rows that keep a key. Did you multiply by the mask, "
            "as in `x * mask + (~mask) * -np.inf` or `np.exp(...) * mask`? " + _USE_WHERE
        )
    return None


@dataclass(frozen=True)
class NoWarningCheck(ArrayCheck):
    """An ArrayCheck, then the test inputs once more with NumPy's divide, invalid and
    overflow errors raised, and every RuntimeWarning too: a right answer that passes
    through 0 / 0 or -inf - (-inf) on the way, or calls ``np.nanmax`` on a row with no key
    left, would print a RuntimeWarning in the learner's notebook."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed:
            step = self._nan_step(answer, timeout) if _EMPTY_ROW in result.message else None
            if step is not None:
                message = result.message.replace(_EMPTY_ROW, _EMPTY_ROW_BY_STEP[step])
                return CheckResult(False, message, name)
            return result
        for case in self.cases():
            try:
                _raising(answer, case, timeout, divide="raise", invalid="raise", over="raise")
            except (FloatingPointError, RuntimeWarning) as error:
                return CheckResult(
                    False,
                    f"Your `{name}` returns the right weights, but on the test input "
                    f"{case.label!r} NumPy warns along the way ({error}), and that "
                    "RuntimeWarning would show under every cell that calls it. "
                    + _warning_cause(str(error), case.inputs),
                    name,
                )
            except Exception:  # already passed: any other trouble is not this check's
                continue
        if _silences_warnings(answer):
            return CheckResult(False, _SILENCED, name)
        return result

    def _nan_step(self, answer: Any, timeout: float | None) -> str | None:
        """The step that first gives NaN on a row with every key blocked: "subtract" (the
        shift), "divide" (by a zero sum) or "nan slice" (``np.nanmax`` of a row that is all
        nan); None when a rerun cannot tell."""
        for case in self.cases():
            if not _has_empty_row(case.inputs):
                continue
            try:
                _raising(answer, case, timeout, divide="raise", invalid="raise")
            except RuntimeWarning as error:
                return "nan slice" if _nan_slice(str(error)) else None
            except FloatingPointError as error:
                step = str(error).rsplit(" ", 1)[-1]
                return step if step in _EMPTY_ROW_BY_STEP else None
            except Exception:
                return None
        return None


_SILENCED = (
    "Right weights, but your function switches NumPy's warnings off (`np.errstate`, "
    "`np.seterr` or a `warnings` filter). What they would report is a -inf - (-inf), a 0 / 0 or an "
    "`np.nanmax` of nothing but nan, on a row with no key left. For such a row, which "
    "shift and which divisor keep every step an ordinary number, so that there is nothing "
    "to silence?"
)


def _silences_warnings(answer: Any) -> bool:
    """Whether the answer's own source calls ``np.errstate`` or ``np.seterr``, or sets a
    filter of Python's ``warnings``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(answer)))
    except (OSError, TypeError, SyntaxError):
        return False
    names = {"errstate", "seterr", "simplefilter", "filterwarnings"}
    return any(
        (isinstance(n, ast.Attribute) and n.attr in names)
        or (isinstance(n, ast.Name) and n.id in names)
        for n in ast.walk(tree)
    )


def _raising(answer: Any, case: Case, timeout: float | None, **errors: str) -> Any:
    """The answer on one test input, with NumPy's floating-point ``errors`` raised, and
    every RuntimeWarning (``np.nanmax`` of an all-nan row warns through Python's warnings,
    which ``np.errstate`` does not reach) raised as an exception too."""
    args = [np.copy(v) for v in case.inputs.values()]

    def run() -> Any:
        with warnings.catch_warnings(), np.errstate(**errors):  # type: ignore[arg-type]
            warnings.simplefilter("error", RuntimeWarning)
            return answer(*args)

    with silenced():
        return run_with_time_limit(run, timeout)


# --------------------------------------------------------- qk_norm_scores


def qk_norm_cases() -> list[Case]:
    rng = np.random.default_rng(434)
    # Lengths far apart, so that a vector left unnormalised changes the scores.
    lengths = np.array([[0.5], [4.0]])
    return [
        # Square first: lengths taken without keepdims still run there (and can be named),
        # where on other shapes they stop with a broadcasting error.
        Case(
            "square Q and K (3×3), g = 2",
            {"Q": readable(rng, 3, 3), "K": readable(rng, 3, 3), "g": 2.0},
        ),
        Case(
            "Q (2×4), a short query and a long one, K (5×4), g = 3",
            {"Q": lengths * readable(rng, 2, 4), "K": readable(rng, 5, 4, scale=3.0), "g": 3.0},
        ),
        Case(
            "a single query, Q (1×2), and K (3×2) with keys of lengths 0.2 to 5, g = 0.5",
            {
                "Q": np.array([[1.0, 2.0]]),
                "K": np.array([[0.2, 0.0], [3.0, -4.0], [-1.0, 1.0]]),
                "g": 0.5,
            },
        ),
    ]


def _qk_norm_reference(Q: np.ndarray, K: np.ndarray, g: float) -> np.ndarray:
    # Imported here: the lesson module draws figures, and importing the checker needs only
    # NumPy. A learner's call of the course's version is still caught (see registry.check).
    from ..lessons.softmax import qk_norm_scores

    return qk_norm_scores(Q, K, g)


def _unit_rows(A: np.ndarray, axis: int | None = -1) -> np.ndarray:
    return A / np.linalg.norm(A, axis=axis, keepdims=True)


def _rms_rows(A: np.ndarray) -> np.ndarray:
    """A divided by the root mean square of each row, as RMSNorm does: length √d, not 1."""
    return A / np.sqrt((A**2).mean(axis=-1, keepdims=True))


def _centred_unit_rows(A: np.ndarray) -> np.ndarray:
    """A with each row's mean subtracted, then divided by its length, as LayerNorm starts."""
    centred = A - A.mean(axis=-1, keepdims=True)
    return centred / np.linalg.norm(centred, axis=-1, keepdims=True)


def _standardised_rows(A: np.ndarray) -> np.ndarray:
    """A with each row's mean subtracted, then divided by its standard deviation: LayerNorm
    without its learned scale and shift."""
    centred = A - A.mean(axis=-1, keepdims=True)
    return centred / centred.std(axis=-1, keepdims=True)


def _no_keepdims(A: np.ndarray) -> np.ndarray:
    """A divided by its row lengths taken without keepdims: they line up with the columns."""
    return A / np.linalg.norm(A, axis=-1)


_QK_NO_KEEPDIMS = (
    "You divided by `np.linalg.norm(..., axis=-1)` without `keepdims`: the lengths come out "
    "as a 1-D array of shape (n,), which NumPy lines up with the *last* axis, so entry "
    "[i, j] is divided by the length of row j, not row i. How can you keep the lengths as "
    "a column, (n, 1)? (What does `keepdims` do?)"
)

QK_NORM_MISTAKES = (
    Mistake(
        "Your scores are cos θ_ij, in [-1, 1]: the angles are right, but the learned scale g "
        "is missing. Either nothing multiplies cos θ_ij by g, or g multiplied a query or a "
        "key before its division by its length, which divides g out again. At which step does "
        "g belong?",
        lambda Q, K, g: _unit_rows(Q) @ _unit_rows(K).T,
    ),
    Mistake(
        "Your scores are g cos θ_ij divided by √d_k. In this form of QK-norm, g replaces the "
        "÷√d_k: once both vectors have length 1, their dot product is already cos θ_ij, in "
        "[-1, 1], and g alone sets how large the scores get.",
        lambda Q, K, g: g * _unit_rows(Q) @ _unit_rows(K).T / np.sqrt(Q.shape[-1]),
    ),
    Mistake(
        "You divided each column of Q and K by its length (axis 0), but each query and each "
        "key is a row, of d numbers. Along which axis does one vector lie?",
        lambda Q, K, g: g * _unit_rows(Q, 0) @ _unit_rows(K, 0).T,
    ),
    Mistake(
        "You divided Q and K each by one number, the length of the whole matrix "
        "(`np.linalg.norm` with no axis). Each query and each key needs its own length: "
        "along which axis?",
        lambda Q, K, g: g * _unit_rows(Q, None) @ _unit_rows(K, None).T,
    ),
    Mistake(
        "Your keys each have length 1, but all your queries were divided by one number, the "
        "length of the whole matrix Q (`np.linalg.norm` with no axis). Each query needs its "
        "own length, as each key has: along which axis?",
        lambda Q, K, g: g * _unit_rows(Q, None) @ _unit_rows(K).T,
    ),
    Mistake(
        "Your queries each have length 1, but all your keys were divided by one number, the "
        "length of the whole matrix K (`np.linalg.norm` with no axis). Each key needs its "
        "own length, as each query has: along which axis?",
        lambda Q, K, g: g * _unit_rows(Q) @ _unit_rows(K, None).T,
    ),
    Mistake(
        "You multiplied by the unit keys without transposing them: in `Qn @ Kn`, entry [i, j] "
        "pairs query i with column j of the key matrix (the j-th number of every key), not "
        "with key j. Which product pairs every query with every key?",
        lambda Q, K, g: g * _unit_rows(Q) @ _unit_rows(K),
    ),
    Mistake(
        "Only your queries have length 1: the keys keep theirs, so a long key still gets "
        "large scores. What must happen to each key too, so that S[i, j] = g cos θ_ij?",
        lambda Q, K, g: g * _unit_rows(Q) @ K.T,
    ),
    Mistake(
        "Only your keys have length 1: the queries keep theirs, so a long query still gets a "
        "sharp row, the very thing QK-norm removes. What must happen to each query too?",
        lambda Q, K, g: g * Q @ _unit_rows(K).T,
    ),
    Mistake(_QK_NO_KEEPDIMS, lambda Q, K, g: g * _no_keepdims(Q) @ _no_keepdims(K).T),
    Mistake(_QK_NO_KEEPDIMS, lambda Q, K, g: g * _no_keepdims(Q) @ _unit_rows(K).T),
    Mistake(_QK_NO_KEEPDIMS, lambda Q, K, g: g * _unit_rows(Q) @ _no_keepdims(K).T),
    Mistake(
        "You divided entry [i, j] by |q_j| |k_j|: the two 1-D arrays of lengths multiply "
        "entry by entry, and NumPy lines the product up with the last axis, the keys. Entry "
        "[i, j] needs |q_i| |k_j|: how can the query lengths become a column?",
        lambda Q, K, g: g * (Q @ K.T) / (np.linalg.norm(Q, axis=-1) * np.linalg.norm(K, axis=-1)),
    ),
    Mistake(
        "You divided entry [i, j] by |q_i| |k_i|: both lengths are columns, (n, 1), so their "
        "product pairs query i with key i. Entry [i, j] needs |q_i| |k_j|: the query lengths "
        "as a column, (n_q, 1), and the key lengths as a row, (1, n_k). How do you turn the "
        "key lengths into a row?",
        lambda Q, K, g: (
            g
            * (Q @ K.T)
            / (
                np.linalg.norm(Q, axis=-1, keepdims=True)
                * np.linalg.norm(K, axis=-1, keepdims=True)
            )
        ),
    ),
    Mistake(
        "You divided each vector by the sum of its absolute values (the L1 norm, `ord=1`), "
        "which is not its length, so most of your vectors come out shorter than 1. The "
        "length is the square root of the sum of the squares: `np.linalg.norm`'s default.",
        lambda Q, K, g: (
            g * (Q / np.abs(Q).sum(-1, keepdims=True)) @ (K / np.abs(K).sum(-1, keepdims=True)).T
        ),
    ),
    Mistake(
        "You divided each vector by its squared length, the sum of its squares. A vector "
        "divided by its length has length 1: what is its length, in terms of that sum?",
        lambda Q, K, g: (
            g * (Q / (Q**2).sum(-1, keepdims=True)) @ (K / (K**2).sum(-1, keepdims=True)).T
        ),
    ),
    Mistake(
        "You divided each vector by its root mean square, as RMSNorm does. That gives every "
        "vector length √d, not 1 (its d squares add up to d), so your scores are d times "
        "g cos θ_ij and reach ±g·d. Divide each vector by its length, `np.linalg.norm`, "
        "instead.",
        lambda Q, K, g: g * _rms_rows(Q) @ _rms_rows(K).T,
    ),
    Mistake(
        "You subtracted each vector's mean before dividing by its length, as LayerNorm "
        "does. The QK-norm of the formula (Henry et al.) divides each vector by its length "
        "only, so that q_i · k_j becomes cos θ_ij. Which step can you leave out?",
        lambda Q, K, g: g * _centred_unit_rows(Q) @ _centred_unit_rows(K).T,
    ),
    Mistake(
        "You normalised each vector as LayerNorm does: subtracted its mean and divided by "
        "its standard deviation. That gives every vector length √d, not 1, and the mean "
        "should not be subtracted at all: the QK-norm of the formula (Henry et al.) divides "
        "each vector by its length only, so that q_i · k_j becomes cos θ_ij.",
        lambda Q, K, g: g * _standardised_rows(Q) @ _standardised_rows(K).T,
    ),
    Mistake(
        "You divided cos θ_ij by g, but the formula multiplies: the scores are g cos θ_ij, "
        "in [-g, g], so a larger g makes sharper rows.",
        lambda Q, K, g: _unit_rows(Q) @ _unit_rows(K).T / g,
    ),
    Mistake(
        "You applied np.cos to the dot products, but θ_ij is the angle between q_i and k_j, "
        "and the dot product of two vectors of length 1 already equals cos θ_ij (lesson 01): "
        "no np.cos is needed. Which two divisions make q_i · k_j equal cos θ_ij?",
        lambda Q, K, g: g * np.cos(Q @ K.T),
    ),
    Mistake(
        "Your queries and keys have length 1, so their dot product already is cos θ_ij: "
        "taking np.cos of it gives cos(cos θ_ij). Which step can you leave out?",
        lambda Q, K, g: g * np.cos(_unit_rows(Q) @ _unit_rows(K).T),
    ),
    Mistake(
        "You took the angle θ_ij itself with `np.arccos`, but the score is g cos θ_ij, not "
        "g θ_ij: the dot product of two vectors of length 1 already is cos θ_ij (lesson 01). "
        "Which step can you leave out?",
        lambda Q, K, g: g * np.arccos(np.clip(_unit_rows(Q) @ _unit_rows(K).T, -1.0, 1.0)),
    ),
    Mistake(
        "Your scores are transposed: row i should hold query i's scores, one column per key. "
        "Which matrix comes first in the product?",
        lambda Q, K, g: g * _unit_rows(K) @ _unit_rows(Q).T,
    ),
)


def _qk_norm_weights_hint(got, want, inputs):
    """Rows of non-negative numbers that sum to 1: a softmax was applied to the scores."""
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    if not np.isfinite(got).all() or (got < 0).any():
        return None
    if not np.allclose(got.sum(axis=-1), 1.0, rtol=0, atol=1e-4):
        return None
    return (
        "Every row of yours is non-negative and sums to 1: those are attention weights, a "
        "softmax of the scores. `qk_norm_scores` returns the scores themselves, g cos θ_ij, "
        "before any softmax. Which step can you leave out?"
    )


def _qk_norm_multiple_hint(got, want, inputs):
    """Every score the same multiple c ≠ 1 of g cos θ_ij: the angles are right, the scale not."""
    if got.shape != want.shape or not np.isfinite(got.astype(np.float64)).all():
        return None
    got, want = got.astype(np.float64), want.astype(np.float64)
    c = float((got * want).sum() / (want * want).sum())  # the best single factor
    if c <= 1e-6 or abs(c - 1) < 1e-3 or not np.allclose(got, c * want, rtol=1e-6, atol=1e-9):
        return None
    return (
        f"Every one of your scores is {c:.4g} times the right one, g cos θ_ij: the angles are "
        "right, only the scale is off. Two things set it: does every query and every key have "
        "length exactly 1, and is cos θ_ij multiplied by g, once?"
    )


def _qk_norm_range_hint(got, want, inputs):
    """Scores beyond [-g, g]: some query or key was not brought to length 1."""
    if got.shape != want.shape or not np.isfinite(got.astype(np.float64)).all():
        return None
    g = abs(float(inputs["g"]))
    if np.abs(got.astype(np.float64)).max() <= g * (1 + 1e-6):
        return None
    return (
        f"Some of your scores lie outside [-g, g] = [{-g:g}, {g:g}], but -1 ≤ cos θ ≤ 1, so "
        "every QK-norm score lies in [-g, g]. Does every query and every key have length 1 "
        "before the product?"
    )


_GENERIC = "returns the right shape but different numbers"


def _close(scaled: np.ndarray, base: np.ndarray) -> bool:
    """Equal within 1 % of the largest score: looser than the check itself, so that a guard
    such as ``norm + 1e-6`` against a zero-length vector passes on the shrunken inputs."""
    if scaled.shape != base.shape:
        return False
    scaled, base = scaled.astype(np.float64), base.astype(np.float64)
    if not (np.isfinite(scaled).all() and np.isfinite(base).all()):
        return np.array_equal(scaled, base, equal_nan=True)
    return bool(np.abs(scaled - base).max(initial=0.0) <= 1e-2 * max(1.0, np.abs(base).max()))


def _length_changes_it(answer: Any, timeout: float | None) -> tuple[str, float, str] | None:
    """("Q" or "K", the factor, the test input's label) when multiplying every query or
    every key by a positive number changes the answer's scores; None when the lengths drop
    out."""

    def run(Q: np.ndarray, K: np.ndarray, g: float) -> np.ndarray:
        # Copies, and by position: the learner's parameters may have other names.
        Q, K = np.copy(Q), np.copy(K)
        return np.asarray(run_with_time_limit(lambda: answer(Q, K, g), timeout))

    for case in qk_norm_cases():
        Q, K, g = case.inputs["Q"], case.inputs["K"], case.inputs["g"]
        try:
            with silenced():
                base = run(Q, K, g)
                for which in ("Q", "K"):
                    for c in (100.0, 0.01):
                        scaled = run(c * Q, K, g) if which == "Q" else run(Q, c * K, g)
                        if not _close(scaled, base):
                            return which, c, case.label
        except Exception:  # an answer that fails to run here is judged by the check itself
            continue
    return None


def _length_message(name: str, which: str, c: float, label: str) -> str:
    vector, vectors = ("query", "queries") if which == "Q" else ("key", "keys")
    change = "longer" if c > 1 else "shorter"
    return (
        f"Your scores change when the {vectors} get {change}: on the test input {label!r}, "
        f"multiplying `{which}` by {c:g} changes what your `{name}` returns. "
        f"In QK-norm a {vector}'s length should drop out, so that only the angle θ_ij "
        "and g set the score g cos θ_ij. What can you divide each "
        f"{vector} by so that its length no longer counts?"
    )


@dataclass(frozen=True)
class LengthFreeCheck(ArrayCheck):
    """An ArrayCheck that also multiplies Q, then K, by 100 and by 0.01: QK-norm scores
    must not change. It refuses an answer whose scores do, and for a wrong answer with no
    named mistake it says so in place of the bare "different numbers"."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not callable(answer):
            return result
        head, sep, example = result.message.partition("\n\n")
        if not result.passed and _GENERIC not in head and not head.startswith("Some of your"):
            return result
        found = _length_changes_it(answer, timeout)
        if found is None:
            return result
        message = _length_message(name, *found)
        if result.passed:
            return CheckResult(False, message, name)
        if head.startswith("Some of your"):  # the range hint: keep its finding, after the cause
            message = f"{message} {head.split(' Does every')[0]}"
        return CheckResult(False, f"{message}{sep}{example}", name)


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
        hints=(_softmax_overflow_hint, _softmax_sum_hint, _softmax_flat_row_hint),
        error_hints=(_BUILTIN_MAX,),
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
    NoRowLoopCheck(
        jacobian_cases,
        reference=softmax_jacobian,
        shape_rule="one (m, m) Jacobian for each of the n rows of P, (n, m, m)",
        mistakes=JACOBIAN_MISTAKES,
        hints=(_jacobian_hint,),
        shape_hint=_DIAG_OUTER_SHAPES,
    ),
)
register(
    LESSON,
    solutions.masked_softmax,
    "masked_softmax(x, mask) -> weights (n, m); exactly 0 where mask is False, a row with no "
    "key left all zeros",
    NoWarningCheck(
        masked_cases,
        reference=_masked_reference,
        shape_rule="the same shape as x, one weight per score",
        mistakes=MASKED_MISTAKES,
        hints=(
            _masked_nan_hint,
            _masked_scores_hint,
            _masked_sum_hint,
            _masked_lost_row_hint,
            _masked_nan_on_blocked_hint,
            _masked_overflow_hint,
            _masked_multiply_hint,
        ),
        error_hints=(
            _BUILTIN_MAX,
            (
                lambda error, inputs: "changed its input x in place" in error,
                "An indexed assignment such as `x[~mask] = -np.inf` writes into x as well; "
                "`np.where(mask, x, -np.inf)` makes a new array.",
            ),
            (
                lambda error, inputs: "IndexError" in error and np.ndim(inputs["mask"]) == 1,
                _ONE_FLAG_PER_KEY
                + " Boolean indexing such as `x[~mask]` needs a mask of x's own shape, while "
                "`np.where` broadcasts the mask over the rows. Which of the two fits a mask of "
                "shape (m,)?",
            ),
        ),
        shape_hint=(
            "The mask may be 1-D, one flag per key, while x is (n, m): `np.where(mask, x, ...)` "
            "broadcasts it over the rows. And a row's maximum or sum, taken with "
            "`axis=-1`, has shape (n,): how do you keep it as a column, (n, 1)?"
        ),
    ),
)
register(
    LESSON,
    solutions.qk_norm_scores,
    "qk_norm_scores(Q, K, g) -> (n_q, n_k), the scores g cos θ between every query and key",
    LengthFreeCheck(
        qk_norm_cases,
        reference=_qk_norm_reference,
        shape_rule="one score for each query (row) and each key (column), (n_q, n_k)",
        mistakes=QK_NORM_MISTAKES,
        hints=(_qk_norm_weights_hint, _qk_norm_multiple_hint, _qk_norm_range_hint),
        shape_hint=(
            "Each query and each key is a row, and each needs its own length. "
            "`np.linalg.norm(Q, axis=-1)` has shape (n_q,), which NumPy lines up with the last "
            "axis of Q, of length d: how do you keep the lengths as a column, (n_q, 1)? And "
            "which product of an (n_q, d) and an (n_k, d) array gives (n_q, n_k)?"
        ),
    ),
)
