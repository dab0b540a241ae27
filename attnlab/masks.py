"""Masks: which keys each query may attend to.

Lesson: ``notebooks/04_softmax.ipynb`` (masking with -inf, the causal mask),
``notebooks/06_heads_and_masks.ipynb`` (padding and causal masks) and
``notebooks/10_in_practice.ipynb`` (the causal mask aligned at the bottom right).
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


def causal_lower_right(n_q: int, n_k: int) -> np.ndarray:
    """The causal mask aligned at the bottom right: ``M[i, j] = (j <= i + (n_k - n_q))``.

    The right mask when the ``n_q`` queries are the *last* ``n_q`` of the ``n_k``
    tokens (decoding with a key/value cache). ``causal_mask`` and PyTorch's
    ``is_causal=True`` align at the top left instead, ``j <= i``; the two agree when
    ``n_q == n_k``. PyTorch's bottom-right version is
    ``torch.nn.attention.bias.causal_lower_right``.

    Shapes: returns bool ``(n_q, n_k)``.

    Lesson: ``notebooks/10_in_practice.ipynb``.
    """
    n_q, n_k = check_size(n_q, "n_q"), check_size(n_k, "n_k")
    return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + (n_k - n_q)


def padding_mask(lengths: ArrayLike, n: int) -> np.ndarray:
    """Which keys are real tokens: ``mask[b, j] = (j < lengths[b])``.

    Shapes: ``lengths`` ``(batch,)`` → bool ``(batch, n)``. Add axes with
    ``mask[:, None, :]`` so it broadcasts over the queries, or
    ``mask[:, None, None, :]`` over heads and queries.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    n = check_size(n, "n")
    lengths = np.asarray(lengths)
    return np.arange(n)[None, :] < lengths[:, None]


def padding_causal_mask(lengths: ArrayLike, n: int) -> np.ndarray:
    """Padding AND causal: ``mask[b, i, j] = (j < lengths[b]) and (j <= i)``.

    Query i of sequence b may attend to key j when j is a real token of that sequence
    (padding is on the *key* axis) and j is not in its future. Padding queries keep
    their rows; their outputs are ignored later.

    Shapes: ``lengths`` ``(batch,)`` → bool ``(batch, n, n)``.

    Lesson: ``notebooks/06_heads_and_masks.ipynb``.
    """
    return padding_mask(lengths, n)[:, None, :] & causal_mask(n)


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
