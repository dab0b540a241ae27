"""Gradients of softmax and of attention, derived by hand.

Lesson: ``notebooks/08_does_scaling_matter.ipynb`` (training one attention
layer in NumPy); the softmax Jacobian itself is in ``notebooks/04_softmax.ipynb``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._inputs import as_real_array, check_flag, check_qkv, check_scale, compute_dtype
from .fast import attention


def softmax_backward(p: ArrayLike, grad_p: ArrayLike) -> np.ndarray:
    """Backpropagate through softmax along the last axis.

    Formula: with ``p = softmax(x)`` and ``g = ∂L/∂p``,
    ``∂L/∂x = Jᵀ g = p ⊙ (g − Σ_j g_j p_j)`` (J = diag(p) − p pᵀ is symmetric),
    which never forms the n × n Jacobian.

    Shapes: p and grad_p ``(..., n)`` → ``(..., n)``.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    p = as_real_array(p, "p")
    g = as_real_array(grad_p, "grad_p")
    if p.shape != g.shape:
        raise ValueError(f"p has shape {p.shape} but grad_p has shape {g.shape}; they must match.")
    return p * (g - np.sum(g * p, axis=-1, keepdims=True))


def _sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Undo broadcasting: sum ``grad`` over the dimensions an input was stretched along."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


def attention_backward(
    Q: ArrayLike,
    K: ArrayLike,
    V: ArrayLike,
    grad_out: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    scale: float | None = None,
    weights: ArrayLike | None = None,
    check_finite: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of scaled dot-product attention with respect to Q, K and V.

    Formula: with ``S = scale·Q Kᵀ (+ mask)``, ``P = softmax(S)``, ``O = P V``
    and ``G = ∂L/∂O``::

        ∂L/∂V = Pᵀ G
        ∂L/∂P = G Vᵀ
        ∂L/∂S = P ⊙ (∂L/∂P − rowsum(∂L/∂P ⊙ P))      (softmax_backward)
        ∂L/∂Q = scale · ∂L/∂S K
        ∂L/∂K = scale · (∂L/∂S)ᵀ Q

    Shapes: as :func:`attnlab.attention`; ``grad_out`` has the output's shape
    ``(..., n_q, d_v)``. Returns ``(dQ, dK, dV)`` with the shapes of Q, K and V
    (gradients of broadcast inputs are summed over the broadcast dimensions).
    ``weights``: the P that a forward pass on the same inputs returned
    (``attention(..., return_weights=True)``), to save computing it again; the mask, if
    any, is already in it. ``check_finite=False`` skips the scan of Q, K and V for NaN
    and inf, as in :func:`attnlab.fast.attention`.

    Lesson: ``notebooks/08_does_scaling_matter.ipynb``.
    """
    check_finite = check_flag(check_finite, "check_finite")
    if weights is None:
        out, P = attention(
            Q, K, V, mask, causal=causal, scale=scale, return_weights=True,
            check_finite=check_finite,
        )  # fmt: skip
        out_shape, out_dtype = out.shape, out.dtype
    else:
        Q, K, V, batch = check_qkv(Q, K, V, check_finite=check_finite)
        P = as_real_array(weights, "weights")
        out_shape = (*batch, Q.shape[-2], V.shape[-1])
        if P.shape != (*batch, Q.shape[-2], K.shape[-2]):
            raise ValueError(
                f"weights has shape {P.shape}, but attention on these Q, K and V gives "
                f"weights of shape {(*batch, Q.shape[-2], K.shape[-2])}."
            )
        out_dtype = compute_dtype(Q, K, V)[1]
    Q, K, V = (as_real_array(a, n) for a, n in ((Q, "Q"), (K, "K"), (V, "V")))
    G = as_real_array(grad_out, "grad_out")
    if G.shape != out_shape:
        raise ValueError(f"grad_out has shape {G.shape} but the output has shape {out_shape}.")
    scale = check_scale(scale, Q.shape[-1])
    dV = np.swapaxes(P, -1, -2) @ G
    dS = softmax_backward(P, G @ np.swapaxes(V, -1, -2))
    dQ = scale * (dS @ K)
    dK = scale * (np.swapaxes(dS, -1, -2) @ Q)
    return (
        _sum_to_shape(dQ, Q.shape).astype(out_dtype, copy=False),
        _sum_to_shape(dK, K.shape).astype(out_dtype, copy=False),
        _sum_to_shape(dV, V.shape).astype(out_dtype, copy=False),
    )
