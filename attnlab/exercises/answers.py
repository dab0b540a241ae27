"""Turning what a learner's function returned into an array, or saying why it can't be.

Used by every array-returning exercise: lists, tuples of rows, NumPy arrays of
any dtype and array-likes (e.g. a CPU torch tensor) all become plain ndarrays;
None, strings, complex numbers and the like become a ``Fail``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .result import Fail

_NOT_NUMBERS = {
    "O": "Python objects",
    "U": "text",
    "S": "bytes",
    "V": "structured records",
    "M": "dates",
    "m": "time spans",
}


def as_answer_array(value: Any, name: str, expected_ndim: int) -> np.ndarray:
    """``value`` as a plain ndarray of real numbers (or booleans), else Fail."""
    if value is None:
        raise Fail(
            f"Your `{name}` returned None. Did you forget `return`? A function without a "
            f"`return` statement (or with only `pass` or `...`) gives back None."
        )
    if isinstance(value, (str, bytes)):
        raise Fail(
            f"Your `{name}` returned a string ({_short(value)}); return the array of numbers "
            f"itself, not text describing it."
        )
    if isinstance(value, tuple) and len(value) > 1 and _are_whole_arrays(value, expected_ndim):
        raise Fail(
            f"Your `{name}` returned {len(value)} arrays (a tuple, e.g. `return a, b`); "
            f"return only the result."
        )
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise Fail(
            f"Your `{name}` returned a {type(value).__name__} that NumPy cannot turn into one "
            f"array ({type(exc).__name__}: {exc}). Are some rows longer than others?"
        ) from None
    if type(arr) is not np.ndarray:  # np.matrix and masked arrays behave differently
        arr = arr.view(np.ndarray)
    kind = arr.dtype.kind
    if kind == "c":
        raise Fail(
            f"Your `{name}` returned complex numbers; the result should be real. A square "
            f"root of a negative number, or np.lib.scimath, can bring them in."
        )
    if kind in _NOT_NUMBERS:
        raise Fail(
            f"Your `{name}` returned a {type(value).__name__} holding "
            f"{_NOT_NUMBERS[kind]} ({_short(value)}), not numbers; return a NumPy array "
            f"(or a list of lists) of numbers."
        )
    return arr


def _are_whole_arrays(items: tuple, ndim: int) -> bool:
    # Rows of a result are arrays too, but with one dimension fewer than the result.
    return all(isinstance(v, np.ndarray) and v.ndim == ndim for v in items)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
