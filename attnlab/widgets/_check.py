"""Checking a learner's data for a widget: one clear TypeError/ValueError naming the argument.

Every widget factory validates its arguments here before anything is drawn, so
a mistake is reported by name and never as a traceback from matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._inputs import is_whole_number

_SHAPE_WORDS = {1: "one row of numbers (1-D)", 2: "a matrix (2-D, one row per token)"}


def learner_array(x: Any, name: str, ndim: int) -> np.ndarray:
    """A learner's data as a finite, non-empty float64 array of ``ndim`` dimensions.

    Raises a TypeError (not real numbers; booleans count as not) or a ValueError
    (wrong number of dimensions, empty, NaN or inf), naming ``name``.
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, for example
        raise TypeError(f"{name} could not be turned into a NumPy array: {exc}") from None
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, but it has dtype {arr.dtype}.")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {_SHAPE_WORDS[ndim]}, but it has shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}).")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must hold finite numbers: no NaN or inf.")
    return arr.astype(np.float64)


def token_matrix(
    x: Any, name: str, tokens: tuple[int, int], max_dim: int, shown_by: str
) -> np.ndarray:
    """``learner_array(x, name, 2)`` with ``tokens[0]..tokens[1]`` rows and 1..``max_dim``
    columns, or a ValueError naming ``name`` and what ``shown_by`` (e.g. "the gallery") shows."""
    arr = learner_array(x, name, ndim=2)
    low, high = tokens
    if not low <= arr.shape[0] <= high:
        raise ValueError(
            f"{name} has {arr.shape[0]} rows; {shown_by} shows {low} to {high} tokens."
        )
    if not 1 <= arr.shape[1] <= max_dim:
        raise ValueError(f"{name} has {arr.shape[1]} columns; {shown_by} takes 1 to {max_dim}.")
    return arr


def whole_number(x: Any, name: str, what: str, low: int, high: int | None = None) -> int:
    """``x`` as an int in ``low..high``, or a TypeError/ValueError naming ``name``.

    ``what`` says what the number counts, for the TypeError's message.
    """
    if not is_whole_number(x):
        raise TypeError(f"{name} must be a whole number ({what}), got {x!r}.")
    if high is None and x < low:
        raise ValueError(f"{name} must be at least {low}, got {x}.")
    if high is not None and not low <= x <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {x}.")
    return int(x)


def all_or_none(given: dict[str, Any], example: str = "the built-in example") -> bool:
    """Whether the arguments in ``given`` (name → value or None) were all passed.

    False when none was; a ValueError naming the missing ones when only some were.
    """
    missing = [name for name, value in given.items() if value is None]
    if missing and len(missing) < len(given):
        names = ", ".join(given)
        raise ValueError(
            f"Pass {names} together (missing: {', '.join(missing)}), or none of them for {example}."
        )
    return not missing


def labels_for(labels: Sequence[Any] | None, n: int, name: str, default: str) -> list[str]:
    """One label per token: ``labels`` as strings, or ``default`` + index when None."""
    if labels is None:
        return [f"{default}{j}" for j in range(n)]
    if isinstance(labels, str):
        raise TypeError(f"{name} must be a list of {n} labels, one per token, not one string.")
    names = [str(label) for label in labels]
    if len(names) != n:
        raise ValueError(f"{name} must be a list of {n} labels, one per token; got {len(names)}.")
    return names
