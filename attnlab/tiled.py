"""Tiled attention: the online softmax behind FlashAttention, in NumPy.

Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import check_whole_number
from .fast import apply_mask, prepare

# Queries per tile: with block_size=128 keys a tile of scores is 512 x 128
# numbers, small enough to stay in cache.
_QUERY_TILE = 512


def tiled_attention(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    block_size: int = 128,
) -> np.ndarray:
    """Scaled dot-product attention computed over blocks of keys.

    Same result as :func:`attnlab.attention`, but the n_q × n_k score matrix
    is never formed. For each block of keys it keeps, per query, a running
    maximum ``m``, a running sum ``l`` of ``exp(s − m)`` and an unnormalised
    output ``o``; when a block raises the maximum from ``m`` to ``m'``, the
    old ``l`` and ``o`` are rescaled by ``exp(m − m')``::

        m' = max(m, max_j s_j)
        l' = exp(m − m') l + Σ_j exp(s_j − m')
        o' = exp(m − m') o + Σ_j exp(s_j − m') v_j
        output = o / l

    Shapes and arguments as :func:`attnlab.attention`; ``block_size`` is the
    number of keys per block (an integer ≥ 1). Memory grows with
    n_q × block_size instead of n_q × n_k.

    Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
    """
    block_size = check_whole_number(block_size, "block_size", minimum=1)
    p = prepare(Q, K, V, mask, causal, scale)
    out = np.zeros((*p.batch, p.n_q, p.d_v), dtype=p.work)
    with np.errstate(all="ignore"):
        for q0 in range(0, p.n_q, _QUERY_TILE):
            q1 = min(q0 + _QUERY_TILE, p.n_q)
            A = p.A[..., q0:q1, :]
            m = np.full((*p.batch, q1 - q0, 1), -np.inf, dtype=p.work)
            l = np.zeros_like(m)
            o = np.zeros((*p.batch, q1 - q0, p.d_v), dtype=p.work)
            for k0 in range(0, p.n_k, block_size):
                k1 = min(k0 + block_size, p.n_k)
                if p.masks.skips(q0, q1, k0, k1):
                    break  # causal: this block and every later one lie after every query
                S = A @ p.Bt[..., :, k0:k1]
                if p.masks.active:
                    apply_mask(S, *p.masks.tile(q0, q1, k0, k1))
                m_new = np.maximum(m, np.max(S, axis=-1, keepdims=True))
                # Rows that have seen no allowed key yet keep m = -inf; shift them by 0.
                shift = np.where(np.isneginf(m_new), 0, m_new)
                rescale = np.exp(m - shift)
                S -= shift
                np.exp(S, out=S)
                l *= rescale
                l += np.sum(S, axis=-1, keepdims=True)
                o *= rescale
                o += S @ p.V[..., k0:k1, :]
                m = m_new
            l[l == 0] = 1
            o /= l
            out[..., q0:q1, :] = o
        return out.astype(p.out, copy=False)
