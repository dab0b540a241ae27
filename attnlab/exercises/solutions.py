"""Reference solutions, written the way a learner would write them.

``attnlab.solution(id)`` shows a function's source, so each one is short,
plain NumPy with no input checking. The checkers compare answers with the
validated functions of ``attnlab``; the tests check that these pass too.
Lessons: 01_dot_product (scores), 02_variance (scaled_scores), 04_softmax
(softmax, softmax_jacobian, causal_mask), 05_values (attention, masked_attention).
"""

import numpy as np


def scores(Q, K):
    return Q @ K.T  # S[i, j] = q_i · k_j


def scaled_scores(Q, K):
    d_k = Q.shape[-1]
    return Q @ K.T / np.sqrt(d_k)  # keeps the scores' variance near 1


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)  # every exponent <= 0, so exp can't overflow
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_jacobian(p):
    return np.diag(p) - np.outer(p, p)  # J[i, j] = p_i (δ_ij - p_j)


def causal_mask(n):
    i = np.arange(n)[:, None]  # query positions, down the rows
    j = np.arange(n)[None, :]  # key positions, across the columns
    return j <= i


def attention(Q, K, V):
    d_k = Q.shape[-1]
    weights = softmax(Q @ K.T / np.sqrt(d_k))  # (n_q, n_k), each row sums to 1
    return weights @ V  # (n_q, d_v)


def masked_attention(Q, K, V, mask):
    d_k = Q.shape[-1]
    S = Q @ K.T / np.sqrt(d_k)
    S = np.where(mask, S, -np.inf)  # blocked keys get exp(-inf) = 0 weight
    return softmax(S) @ V
