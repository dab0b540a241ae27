"""Deciding whether two results agree, and how they differ.

Used by every array-returning exercise, both to accept an answer and to match
it against the known wrong variants.
"""

from __future__ import annotations

import numpy as np

# Loose enough for an answer computed (or returned) in float32, tight enough that
# every known mistake on the test inputs is far outside it.
RTOL = 1e-4
ATOL = 1e-6


def matches(got: np.ndarray, want: np.ndarray) -> bool:
    """Same shape and the same values: exactly for bool arrays, within tolerance otherwise.

    NaN matches NaN, so an answer can be matched against a variant that overflows.
    """
    if got.shape != want.shape:
        return False
    if want.dtype == np.bool_ or got.dtype == np.bool_:
        return got.dtype == want.dtype and np.array_equal(got, want)
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    finite = np.abs(want[np.isfinite(want)])
    # The absolute tolerance grows with the size of the numbers involved.
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return bool(np.allclose(got, want, rtol=RTOL, atol=ATOL * scale, equal_nan=True))


def largest_difference(got: np.ndarray, want: np.ndarray) -> tuple[float, tuple[int, ...]]:
    """The largest |got - want| and where it is (same shapes, finite values)."""
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    index = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return float(diff[index]), tuple(int(i) for i in index)
