"""Masks: which keys each query may attend to.

Lesson: ``notebooks/04_softmax.ipynb`` (masking with -inf, the causal mask)
and ``notebooks/06_heads_and_masks.ipynb`` (padding and causal masks).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import check_flag, check_mask, check_size


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """The causal mask: query i may attend to key j only when j <= i.

    Formula: ``M[i, j] = (j <= i)``, aligned at the top left like PyTorch's
    ``is_causal=True``.

    Shapes: returns bool ``(n_q, n_k)``; ``n_k`` defaults to ``n_q``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    n_q = check_size(n_q, "n_q")
    n_k = n_q if n_k is None else check_size(n_k, "n_k")
    return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]


def attention_mask(
    mask: ArrayLike | None, causal: bool, batch: tuple, n_q: int, n_k: int
) -> tuple[np.ndarray | None, np.ndarray | None, tuple]:
    """Check ``attention``'s mask arguments; return ``(keep, bias, batch)``.

    ``keep`` (bool, True = may attend) combines a bool mask and the causal
    rule by AND; ``bias`` is a float mask, added to the scaled scores. Either
    is None when absent. ``batch`` is the leading shape of the weights, which a
    mask with more leading dimensions than Q, K, V can extend.

    Shapes: ``mask`` broadcastable to ``(*batch, n_q, n_k)``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    causal = check_flag(causal, "causal")
    keep = bias = None
    if mask is not None:
        kind, mask, batch = check_mask(mask, batch, n_q, n_k)
        keep, bias = (mask, None) if kind == "bool" else (None, mask)
    if causal:
        keep = causal_mask(n_q, n_k) if keep is None else keep & causal_mask(n_q, n_k)
    return keep, bias, batch
