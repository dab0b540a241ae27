"""Known wrong answers: how to compute them, and what to tell a learner who made them.

The building blocks here (softmax written in the ways learners get it wrong)
are shared by the softmax and attention exercises of lessons 04 and 05.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Mistake:
    """A classic mistake: ``compute`` takes the exercise's inputs and returns the wrong
    result it leads to; ``message`` names it and says in one sentence why it's wrong."""

    message: str
    compute: Callable[..., Any]


def softmax_rows(S: np.ndarray) -> np.ndarray:
    """Correct softmax over the last axis."""
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_columns(S: np.ndarray) -> np.ndarray:
    """Softmax over the first axis: each column sums to 1."""
    e = np.exp(S - S.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def softmax_unshifted(S: np.ndarray) -> np.ndarray:
    """Softmax without subtracting the maximum: overflows to inf/inf = NaN for large S."""
    e = np.exp(S)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_unnormalised(S: np.ndarray) -> np.ndarray:
    """exp(S - row max) without dividing by the row sums."""
    return np.exp(S - S.max(axis=-1, keepdims=True))


def blocked_to_minus_inf(S: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The scores with the keys a bool mask blocks set to -inf (nothing when mask is None)."""
    return S if mask is None else np.where(mask, S, -np.inf)
