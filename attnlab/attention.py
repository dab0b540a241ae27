"""Scaled dot-product attention, the whole formula: softmax(Q Kᵀ / √d_k) V.

This is the version to read: each line is one step of the lessons. The same
result, computed faster over cache-sized tiles, is :func:`attnlab.fast.attention`.

Lesson: ``notebooks/05_values.ipynb`` (the ·V step and the worked example),
``notebooks/06_heads_and_masks.ipynb`` (batches, heads, masks) and
``notebooks/07_cost_and_tiling.ipynb`` (cost).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import check_flag, check_qkv, check_scale, compute_dtype
from .masks import attention_mask
from .scores import scaled_scores
from .softmax import softmax


def attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention.

    Formula: ``softmax(Q Kᵀ · scale + mask) V`` with ``scale = 1/√d_k`` by default.

    Shapes: Q ``(..., n_q, d_k)``, K ``(..., n_k, d_k)``, V ``(..., n_k, d_v)``;
    the leading (batch, head) dimensions broadcast. Returns the output
    ``(..., n_q, d_v)``, and with ``return_weights=True`` also the weights
    ``(..., n_q, n_k)``, each row ≥ 0 and summing to 1.

    ``mask``: bool, True = may attend (PyTorch's convention), or float,
    added to the scaled scores (-inf allowed); broadcastable to
    ``(..., n_q, n_k)``. ``causal=True`` lets query i see only keys j ≤ i and
    combines with ``mask`` by AND. A query that may attend to no key at all
    gets all-zero weights and an all-zero output row, never NaN.

    Integer and bool inputs compute in float64; float16 computes in float32
    and is returned as float16.

    Lesson: ``notebooks/05_values.ipynb``.
    """
    # Every argument is checked before any arithmetic, so a mistake is named at once.
    return_weights = check_flag(return_weights, "return_weights")
    Q, K, V, batch = check_qkv(Q, K, V)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    scale = check_scale(scale, Q.shape[-1])
    keep, bias, batch = attention_mask(mask, causal, batch, n_q, n_k)
    work, result = compute_dtype(Q, K, V)  # float16 is computed in float32

    S = scaled_scores(Q.astype(work), K.astype(work), scale)  # (..., n_q, n_k)
    if bias is not None:
        S = S + bias  # a float mask is added to the scores
    S = np.broadcast_to(S, (*batch, n_q, n_k))
    W = softmax(S, mask=keep)  # blocked keys get weight 0; a row with none left is all 0
    out = W @ V.astype(work)  # each output row: a weighted average of the value rows
    if return_weights:
        return out.astype(result, copy=False), W.astype(result, copy=False)
    return out.astype(result, copy=False)
