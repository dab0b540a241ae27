"""Scores: every query compared with every key by a dot product.

Lessons: ``notebooks/01_dot_product.ipynb`` (Q Kᵀ) and
``notebooks/02_variance.ipynb`` (why we divide by √d_k).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import check_qkv, check_scale, compute_dtype


def _keys_t(K: np.ndarray) -> np.ndarray:
    return np.swapaxes(K, -1, -2)


def scores(Q: ArrayLike, K: ArrayLike) -> np.ndarray:
    """Raw attention scores, one dot product per (query, key) pair.

    Formula: ``S = Q Kᵀ``, so ``S[i, j] = q_i · k_j``.

    Shapes: Q ``(..., n_q, d_k)``, K ``(..., n_k, d_k)`` → ``(..., n_q, n_k)``;
    leading dimensions broadcast.

    Lesson: ``notebooks/01_dot_product.ipynb``.
    """
    Q, K, _, _ = check_qkv(Q, K)
    work, out = compute_dtype(Q, K)
    with np.errstate(all="ignore"):
        return (Q.astype(work, copy=False) @ _keys_t(K.astype(work, copy=False))).astype(
            out, copy=False
        )


def scaled_scores(Q: ArrayLike, K: ArrayLike, scale: float | None = None) -> np.ndarray:
    """Scaled attention scores.

    Formula: ``Q Kᵀ · scale`` with ``scale = 1/√d_k`` by default, which keeps
    the scores' variance at 1 when the entries of Q and K have variance 1.
    A score too large for the dtype is capped near its largest value instead
    of becoming inf (softmax of such a row is one-hot either way).

    Shapes: Q ``(..., n_q, d_k)``, K ``(..., n_k, d_k)`` → ``(..., n_q, n_k)``.

    Lesson: ``notebooks/02_variance.ipynb``.
    """
    Q, K, _, _ = check_qkv(Q, K)
    scale = check_scale(scale, Q.shape[-1])
    work, out = compute_dtype(Q, K)
    A, B = overflow_free_factors(Q, K, scale, work)
    with np.errstate(all="ignore"):
        return (A @ _keys_t(B)).astype(out, copy=False)


def _largest_magnitude(X: np.ndarray) -> float:
    """max |x| over X (0 for an empty X), from its largest and smallest entries: no array
    of absolute values is made."""
    if X.size == 0:
        return 0.0
    return float(max(np.max(X), -np.min(X)))


def overflow_free_factors(
    Q: np.ndarray, K: np.ndarray, scale: float, work: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Return (A, B) with ``A Bᵀ = scale · Q Kᵀ`` that cannot overflow in ``work``.

    Usually A = scale·Q and B = K. When the entries are so large that a dot
    product could pass the dtype's maximum, both sides are normalised and the
    factor is capped near that maximum: softmax is already one-hot there, so
    the weights are unchanged, and no inf - inf turns into NaN.
    """
    d_k = max(Q.shape[-1], 1)
    limit = float(np.finfo(work).max) / (4.0 * d_k)
    q_max, k_max = _largest_magnitude(Q), _largest_magnitude(K)
    with np.errstate(all="ignore"):
        if q_max * k_max * abs(scale) < limit:
            A = Q.astype(work, copy=True)
            A *= work.type(scale)
            return A, K.astype(work, copy=False)
        factor = np.sign(scale) * min(q_max * k_max * abs(scale), limit)
        A = (Q.astype(np.float64) / q_max * factor).astype(work)
        B = (K.astype(np.float64) / k_max).astype(work)
    return A, B
