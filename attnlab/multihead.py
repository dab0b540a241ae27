"""Multi-head attention: several attentions side by side, on learned projections.

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import as_real_array, check_flag, check_whole_number, require_finite, require_ndim
from .attention import attention


def _check_weight(W: ArrayLike, name: str, rows: int, cols: int | None = None) -> np.ndarray:
    W = as_real_array(W, name)
    if W.ndim != 2 or W.shape[0] != rows or (cols is not None and W.shape[1] != cols):
        want = f"({rows}, {'…' if cols is None else cols})"
        raise ValueError(f"{name} must have shape {want}, but it has shape {W.shape}.")
    require_finite(W, name)
    return W


def split_heads(X: np.ndarray, n_heads: int) -> np.ndarray:
    """``(..., n, n_heads·d_head)`` → ``(..., n_heads, n, d_head)``."""
    *lead, n, width = X.shape
    return np.moveaxis(X.reshape(*lead, n, n_heads, width // n_heads), -2, -3)


def merge_heads(X: np.ndarray) -> np.ndarray:
    """``(..., n_heads, n, d_head)`` → ``(..., n, n_heads·d_head)``: the heads side by side."""
    *lead, h, n, d = X.shape
    return np.moveaxis(X, -3, -2).reshape(*lead, n, h * d)


def grouped_query_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Attention of H query heads on H_kv shared key/value heads (grouped-query attention).

    Formula: query head h reads key/value head ``h // (H / H_kv)``: the first
    H/H_kv query heads share key/value head 0, the next H/H_kv head 1, and so on,
    as in Llama and PyTorch's ``enable_gqa=True``. H_kv = 1 is multi-query attention,
    H_kv = H ordinary multi-head attention.

    Shapes: Q ``(..., H, n_q, d_k)``, K ``(..., H_kv, n_k, d_k)``, V
    ``(..., H_kv, n_k, d_v)``; returns ``(..., H, n_q, d_v)``. ``mask``, ``causal``
    and ``return_weights`` (the weights, ``(..., H, n_q, n_k)``) are as in ``attention``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    Q, K, V = (as_real_array(A, name) for A, name in ((Q, "Q"), (K, "K"), (V, "V")))
    for A, name, axes in (
        (Q, "Q", "H, n_q, d_k"),
        (K, "K", "H_kv, n_k, d_k"),
        (V, "V", "H_kv, n_k, d_v"),
    ):
        require_ndim(A, name, 3, f"(..., {axes})")
    n_heads, n_kv = Q.shape[-3], K.shape[-3]
    if V.shape[-3] != n_kv:
        raise ValueError(f"K has {n_kv} key/value heads but V has {V.shape[-3]}.")
    if n_heads % n_kv:
        raise ValueError(
            f"Q has {n_heads} query heads, not a multiple of K's {n_kv} key/value heads."
        )
    # np.repeat, not np.tile: copies of one key/value head must sit next to each other,
    # so that each group of neighbouring query heads reads the same one.
    K = np.repeat(K, n_heads // n_kv, axis=-3)
    V = np.repeat(V, n_heads // n_kv, axis=-3)
    return attention(Q, K, V, mask, causal=causal, return_weights=return_weights)


def multi_head_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    n_kv_heads: int | None = None,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Multi-head self-attention, with multi-query and grouped-query variants.

    Formula: ``head_h = attention(X W_Q^h, X W_K^h, X W_V^h)``,
    ``output = concat(head_1, …, head_H) W_O``.

    Shapes: X ``(..., n, d_model)``; W_Q ``(d_model, H·d_head)``; W_K and W_V
    ``(d_model, H_kv·d_head)`` with ``H_kv = n_kv_heads`` (default H; 1 is
    multi-query attention: every query head shares one key and one value
    head); W_O ``(H·d_head, d_model)``; mask ``(..., n, n)``, one per sequence
    like X, and every head uses its sequence's mask. Returns ``(..., n, d_model)``,
    and with ``return_weights=True`` also the weights ``(..., H, n, n)``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    X = as_real_array(X, "X")
    require_ndim(X, "X", 2, "(..., n, d_model)")
    require_finite(X, "X")
    n_heads = check_whole_number(n_heads, "n_heads", minimum=1)
    n_kv = n_heads if n_kv_heads is None else check_whole_number(n_kv_heads, "n_kv_heads", 1)
    return_weights = check_flag(return_weights, "return_weights")
    if n_heads % n_kv:
        raise ValueError(f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv}.")
    d_model = X.shape[-1]
    W_Q = _check_weight(W_Q, "W_Q", d_model)
    if W_Q.shape[1] % n_heads:
        raise ValueError(f"W_Q has {W_Q.shape[1]} columns, not a multiple of n_heads={n_heads}.")
    d_head = W_Q.shape[1] // n_heads
    W_K = _check_weight(W_K, "W_K", d_model, n_kv * d_head)
    W_V = _check_weight(W_V, "W_V", d_model, n_kv * d_head)
    W_O = _check_weight(W_O, "W_O", n_heads * d_head)

    Q = split_heads(X @ W_Q, n_heads)  # (..., H, n, d_head)
    K = split_heads(X @ W_K, n_kv)  # (..., H_kv, n, d_head)
    V = split_heads(X @ W_V, n_kv)
    if mask is not None and np.ndim(mask) > 2:
        # A mask of shape (batch, n, n) would otherwise line its batch axis up with the
        # heads axis of (batch, H, n, n), silently when batch == H: give it a heads axis.
        mask = np.expand_dims(np.asarray(mask), -3)
    # Each group of H / H_kv query heads reads the same key and value head.
    result = grouped_query_attention(Q, K, V, mask, causal=causal, return_weights=return_weights)
    if isinstance(result, tuple):  # return_weights=True
        heads, weights = result
        return merge_heads(heads) @ W_O, weights
    return merge_heads(result) @ W_O
