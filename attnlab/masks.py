"""Masks: which keys each query may attend to.

Lesson: ``notebooks/04_softmax.ipynb`` (masking with -inf, the causal mask)
and ``notebooks/06_full_attention.ipynb`` (padding and causal masks).
"""

from __future__ import annotations

import numpy as np

from ._inputs import check_mask, check_size


def causal_mask(n_q, n_k=None) -> np.ndarray:
    """The causal mask: query i may attend to key j only when j <= i.

    Formula: ``M[i, j] = (j <= i)``, aligned at the top left like PyTorch's
    ``is_causal=True``.

    Shapes: returns bool ``(n_q, n_k)``; ``n_k`` defaults to ``n_q``.

    Lesson: ``notebooks/04_softmax.ipynb``.
    """
    n_q = check_size(n_q, "n_q")
    n_k = n_q if n_k is None else check_size(n_k, "n_k")
    return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]


class MaskTiles:
    """A user's mask and/or the causal rule, served one tile at a time.

    Attention works on tiles of queries and keys, so the full (n_q, n_k) mask
    (1 GiB of bools for 32768 x 32768) never has to exist: the causal part is
    generated per tile and a user's mask is only ever sliced as a view.
    """

    def __init__(self, mask, causal: bool, batch: tuple, n_q: int, n_k: int):
        if not isinstance(causal, (bool, np.bool_)):
            raise TypeError(f"causal must be True or False, got {causal!r}.")
        self.causal = bool(causal)
        self.kind = None
        self.batch = batch
        if mask is not None:
            self.kind, mask, self.batch = check_mask(mask, batch, n_q, n_k)
            # A view with the full trailing shape, so tiles slice it uniformly.
            mask = (
                np.broadcast_to(mask, mask.shape[:-2] + (n_q, n_k))
                if mask.ndim >= 2
                else (np.broadcast_to(mask, (n_q, n_k)))
            )
        self.mask = mask

    @property
    def active(self) -> bool:
        return self.causal or self.mask is not None

    def skips(self, q0: int, q1: int, k0: int, k1: int) -> bool:
        """True when the causal rule blocks the whole tile (every key after every query)."""
        return self.causal and k0 > q1 - 1

    def tile(self, q0: int, q1: int, k0: int, k1: int):
        """Return (blocked, bias) for the tile: a bool array of forbidden pairs and a float
        array to add to the scores; either may be None."""
        blocked = bias = None
        if self.mask is not None:
            part = self.mask[..., q0:q1, k0:k1]
            if self.kind == "bool":
                blocked = ~part
            else:
                bias = part
        if self.causal:
            after = np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None]
            blocked = after if blocked is None else (blocked | after)
        return blocked, bias
