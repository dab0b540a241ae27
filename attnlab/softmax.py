"""Softmax: turning a row of scores into a probability distribution.

Lesson: ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import as_real_array, compute_dtype, is_whole_number


def _check_axis(axis, ndim: int) -> int:
    if not is_whole_number(axis):
        raise TypeError(f"axis must be a whole number, got {axis!r}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis={axis} is out of range for x with {ndim} dimension(s).")
    return int(axis) % ndim


def softmax(x: ArrayLike, axis: int = -1, mask: ArrayLike | None = None) -> np.ndarray:
    """Numerically stable softmax along one axis.

    Formula: ``softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m)`` with ``m = max_j x_j``.
    Subtracting the maximum changes nothing mathematically (the factor
    ``exp(-m)`` cancels) but keeps every exponent ≤ 0, so nothing overflows.

    ``mask`` (bool, broadcastable to ``x``, True = keep) sends the dropped
    entries to -inf. A row that is all -inf (everything masked) becomes all
    zeros rather than NaN. NaN and +inf in ``x`` are refused.

    Shapes: any ``x`` with at least one dimension; the result has its shape.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    x = as_real_array(x, "x")
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension; softmax of a single number is 1.")
    axis = _check_axis(axis, x.ndim)
    if np.isnan(x).any():
        raise ValueError(
            "x contains NaN; softmax needs numbers (use -inf to drop an entry). A NaN often "
            "comes from 0 * inf, e.g. multiplying a mask by -inf: use np.where to set the "
            "dropped entries to -inf instead."
        )
    if np.isposinf(x).any():
        raise ValueError("x contains +inf; softmax is undefined there (use -inf to drop an entry).")
    work, out = compute_dtype(x)
    z = x.astype(work, copy=True)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be bool (True = keep), but it has dtype {mask.dtype}.")
        try:
            keep = np.broadcast_to(mask, z.shape)
        except ValueError:
            raise ValueError(
                f"mask has shape {mask.shape}, which does not broadcast to x's shape {z.shape}."
            ) from None
        np.copyto(z, -np.inf, where=~keep)
    if z.shape[axis] == 0:
        return z.astype(out)
    m = np.max(z, axis=axis, keepdims=True)
    # A row with nothing left has max -inf; shifting by 0 instead keeps
    # exp(-inf - (-inf)) = NaN out of it, and its exponentials are all 0.
    m[np.isneginf(m)] = 0
    z -= m
    np.exp(z, out=z)
    total = np.sum(z, axis=axis, keepdims=True)
    total[total == 0] = 1
    z /= total
    return z.astype(out, copy=False)


def softmax_jacobian(p: ArrayLike) -> np.ndarray:
    """Jacobian of softmax, written in terms of its output p.

    Formula: ``∂p_i/∂x_j = p_i (δ_ij − p_j)``, i.e. ``J = diag(p) − p pᵀ``.
    J is symmetric, each of its rows sums to 0 (shifting every score by the
    same amount changes nothing), and it vanishes when p is one-hot.

    Shapes: p ``(..., n)`` → ``(..., n, n)``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    p = as_real_array(p, "p")
    if p.ndim == 0:
        raise ValueError("p must have at least one dimension (a probability vector).")
    if not np.isfinite(p).all():
        raise ValueError("p contains NaN or inf; it should be a probability vector.")
    work, out = compute_dtype(p)
    p = p.astype(work, copy=False)
    J = -p[..., :, None] * p[..., None, :]
    idx = np.arange(p.shape[-1])
    J[..., idx, idx] += p
    return J.astype(out, copy=False)


def entropy(p: ArrayLike, axis: int = -1) -> np.ndarray:
    """Entropy in nats of the probability rows of ``p``: how spread out each softmax row is.

    Formula: ``H(p) = -Σ_j p_j log p_j``, with the convention ``0 · log 0 = 0``
    (the limit of x log x as x → 0), so zero weights add nothing and no NaN
    appears. H is 0 for a one-hot row and log(n) for a uniform row of n entries.

    Shapes: ``p (..., n)`` → ``(...)`` (the axis ``axis`` is summed away).

    Lesson: ``notebooks/03_scaling.ipynb``.
    """
    p = as_real_array(p, "p")
    if p.ndim == 0:
        raise ValueError("p must have at least one dimension (a row of probabilities).")
    axis = _check_axis(axis, p.ndim)
    if not np.isfinite(p).all():
        raise ValueError("p contains NaN or inf; it should hold probabilities.")
    if (p < 0).any():
        raise ValueError("p has negative entries; probabilities are never negative.")
    work, out = compute_dtype(p)
    p = p.astype(work, copy=False)
    # log(1) = 0, so the entries with p = 0 contribute exactly 0 and log never sees a 0.
    logs = np.log(np.where(p > 0, p, 1.0))
    return (-(p * logs).sum(axis=axis)).astype(out, copy=False)


def saturated_share(p: ArrayLike, threshold: float = 0.99) -> float:
    """The share of softmax rows whose largest weight is above ``threshold``.

    A row above 0.99 (the default) is what the course calls *saturated*: almost all its
    weight on one key, and almost no gradient back to its scores. Other thresholds ask
    other questions, e.g. 0.5: does one key get most of the weight?

    Shapes: ``p (..., n)``, rows of weights → a float between 0 and 1.

    Lessons: ``notebooks/02_variance.ipynb``, ``notebooks/03_scaling.ipynb``,
    ``notebooks/08_does_scaling_matter.ipynb``.
    """
    p = as_real_array(p, "p")
    if p.ndim == 0:
        raise ValueError("p must have at least one dimension (a row of weights).")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be a weight in [0, 1), got {threshold!r}.")
    return float((p.max(axis=-1) > threshold).mean())
