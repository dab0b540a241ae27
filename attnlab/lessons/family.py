"""The attention family: other ways to score, to position and to mix.

Additive (Bahdanau) scores and their cost; relative position biases (T5's buckets,
ALiBi's linear penalty, one slope per head); sparse masks (local window, blocks,
global tokens) and how many scores they keep; linear attention with the feature map
elu(x) + 1, in both orders of multiplication; the causal mask aligned at the bottom
right; and the attention entropy of the model of lesson 08 during training. The figure
functions only draw numbers the notebook computed in the cell that calls them.

Lesson: ``notebooks/09_attention_family.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..masks import causal_lower_right  # noqa: F401 - the notebook uses it
from ..softmax import entropy, softmax
from .cost_and_tiling import peak_bytes  # noqa: F401 - the notebook uses it
from .heads_and_masks import plot_patterns  # noqa: F401 - the notebook uses it

# ---------------------------------------------------------------------- additive scores


def additive_params(d_k: int, d_a: int, rng: np.random.Generator):
    """Random parameters of an additive scorer: ``W_q``, ``W_k`` ``(d_k, d_a)``, ``v`` ``(d_a,)``.

    Entries are normal with variance ``1/d_k`` (the projections) and ``1/d_a`` (``v``),
    the usual variance-preserving start.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    W_q = rng.normal(size=(d_k, d_a)) / np.sqrt(d_k)
    W_k = rng.normal(size=(d_k, d_a)) / np.sqrt(d_k)
    v = rng.normal(size=d_a) / np.sqrt(d_a)
    return W_q, W_k, v


def additive_scores(Q, K, W_q, W_k, v) -> np.ndarray:
    """Bahdanau's additive scores: ``S[i, j] = vᵀ tanh(W_qᵀ q_i + W_kᵀ k_j)``.

    Shapes: ``Q (n_q, d_k)``, ``K (n_k, d_k)``, ``W_q, W_k (d_k, d_a)``, ``v (d_a,)``
    → ``(n_q, n_k)``. The sum inside the tanh is an ``(n_q, n_k, d_a)`` array: every
    pair gets its own vector of ``d_a`` numbers before ``v`` reduces it to one score,
    so the work is ``n_q · n_k · d_a`` tanh evaluations and multiply-adds, with no
    matrix product to hand the pairs to. Since ``|tanh| ≤ 1``, ``|S[i, j]| ≤ ‖v‖₁``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    hidden = np.tanh((Q @ W_q)[:, None, :] + (K @ W_k)[None, :, :])  # (n_q, n_k, d_a)
    return hidden @ v


def score_spreads(d_ks: Sequence[int], d_a: int = 64, n: int = 128, seed: int = 0) -> dict:
    """Standard deviation of unscaled dot products, scaled ones and additive scores, per d_k.

    ``n`` random queries and keys with N(0, 1) entries for each ``d_k``; the additive
    scorer has :func:`additive_params` of width ``d_a``. Returns arrays over ``d_ks``:
    ``"dot"``, ``"scaled"``, ``"additive"`` (standard deviations), ``"bound"`` (‖v‖₁)
    and ``"largest_additive"`` (the largest |score|).

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {
        k: [] for k in ("dot", "scaled", "additive", "bound", "largest_additive")
    }
    for d_k in d_ks:
        Q, K = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k))
        S = Q @ K.T
        W_q, W_k, v = additive_params(d_k, d_a, rng)
        A = additive_scores(Q, K, W_q, W_k, v)
        out["dot"].append(float(S.std()))
        out["scaled"].append(float((S / np.sqrt(d_k)).std()))
        out["additive"].append(float(A.std()))
        out["largest_additive"].append(float(np.abs(A).max()))
        out["bound"].append(float(np.abs(v).sum()))
    return {k: np.array(v) for k, v in out.items()}


def score_costs(n_q: int, n_k: int, d_k: int, d_a: int, d_model: int | None = None) -> dict:
    """Parameters, multiply-adds and the largest intermediate array, dot product vs additive,
    each with the projections that make its inputs from embeddings of width ``d_model``.

    Dot product: ``W^Q`` and ``W^K``, ``2 d_model d_k`` parameters and ``(n_q + n_k)
    d_model d_k`` multiply-adds, then ``n_q n_k d_k`` for the scores; largest array the
    ``(n_q, n_k)`` scores. Additive, ``vᵀ tanh(W_q q + W_k k)``: ``W_q`` and ``W_k`` do the
    same job, ``2 d_model d_a`` parameters and ``(n_q + n_k) d_model d_a`` multiply-adds;
    only ``v`` is extra (``d_a`` parameters), with ``n_q n_k d_a`` additions, tanh
    evaluations and multiply-adds with ``v``; largest array ``(n_q, n_k, d_a)``.
    ``d_model`` defaults to ``d_k``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    d = d_k if d_model is None else d_model
    return {
        "dot_params": 2 * d * d_k,
        "additive_params": 2 * d * d_a + d_a,
        "dot_madds": (n_q + n_k) * d * d_k + n_q * n_k * d_k,
        "additive_madds": (n_q + n_k) * d * d_a + n_q * n_k * d_a,
        "additive_tanh": n_q * n_k * d_a,
        "additive_adds": n_q * n_k * d_a,  # W_q q + W_k k, for every pair
        "dot_largest": n_q * n_k,
        "additive_largest": n_q * n_k * d_a,
    }


def plot_spreads(d_ks, spreads: dict):
    """The spread of the three kinds of scores against d_k, on log-log axes.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(5.6, 3.4), layout="constrained")
    d_ks = np.asarray(d_ks)
    ax.plot(d_ks, spreads["dot"], "o-", color=plots.SECOND, label="q·k, unscaled")
    ax.plot(d_ks, np.sqrt(d_ks), ":", color="grey", label="√d_k")
    ax.plot(d_ks, spreads["scaled"], "o-", color=plots.ACCENT, label="q·k / √d_k")
    ax.plot(d_ks, spreads["additive"], "s-", color=plots.THIRD, label="additive vᵀtanh(…)")
    ax.plot(d_ks, spreads["bound"], "--", color=plots.THIRD, lw=1, label="bound ‖v‖₁")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("d_k")
    ax.set_ylabel("standard deviation of the scores")
    ax.set_title("how the scores spread as d_k grows")
    ax.legend(fontsize=8)
    return fig


# -------------------------------------------------------------------- relative position


def rotation(angle: float) -> np.ndarray:
    """The 2 × 2 matrix that turns a vector by ``angle`` radians, anticlockwise.

    RoPE turns each pair of features of the query at position i by iθ and of the key
    at position j by jθ; since ``rotation(a).T @ rotation(b) == rotation(b − a)``, the
    dot product of the two depends only on j − i.

    Shapes: → ``(2, 2)``. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


def relative_bias(n: int, table) -> np.ndarray:
    """A learned bias per distance: ``B[i, j] = table[i − j + n − 1]``.

    Shapes: ``table (2n − 1,)``, the biases of the distances ``−(n − 1) … n − 1`` in
    order → ``(n, n)``. Every diagonal of B is constant: the bias depends on ``i − j``
    only, like the dot products of lesson 06's sinusoidal codes.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    table = np.asarray(table, dtype=float)
    if table.shape != (2 * n - 1,):
        raise ValueError(f"table must have 2n - 1 = {2 * n - 1} entries, got {table.shape}.")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return table[i - j + n - 1]


def t5_bucket(distance, n_buckets: int = 32, max_distance: int = 128, bidirectional=True):
    """T5's bucket of each relative position ``j − i`` (key minus query).

    Half the buckets (of each direction, if ``bidirectional``) hold one distance each,
    0, 1, 2, …; the rest cover the distances up to ``max_distance`` in logarithmically
    growing ranges, and everything beyond shares the last bucket. One learned bias per
    bucket (and per head) is added to the scores. Follows ``_relative_position_bucket``
    of the T5 code (Raffel et al. 2020). Without ``bidirectional`` (a decoder), keys in
    the future share bucket 0.

    Shapes: ``distance`` any shape of integers → int array of the same shape.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    rel = np.asarray(distance)
    bucket = np.zeros(rel.shape, dtype=int)
    far = -rel  # positive for keys before the query
    if bidirectional:
        n_buckets //= 2
        bucket += (rel > 0) * n_buckets
        far = np.abs(rel)
    else:
        far = np.maximum(far, 0)
    exact = n_buckets // 2
    # T5 takes this ratio of logs in natural logs; any base gives the same ratio. At
    # distances 16, 32 and 64 (with the defaults) the ratio times (n_buckets - exact) is
    # a whole number, where a log one ulp low on some CPU would move the distance down a
    # bucket. log2 is exact at powers of 2, so those boundaries are exact everywhere.
    with np.errstate(divide="ignore"):
        log_part = np.log2(np.maximum(far, 1) / exact) / np.log2(max_distance / exact)
    large = exact + (log_part * (n_buckets - exact)).astype(int)
    large = np.minimum(large, n_buckets - 1)
    return bucket + np.where(far < exact, far, large)


def alibi_slopes(n_heads: int) -> np.ndarray:
    """ALiBi's head slopes: ``m_h = 2^(−8h/H)`` for ``h = 1 … H``.

    A geometric sequence from ``2^(−8/H)`` down to ``2^(−8)``: some heads look far,
    others near. (Press et al. 2022; for H a power of 2.)

    Shapes: → ``(H,)``; ``slopes[0]`` is the formula's head 1. A ValueError names an
    ``n_heads`` that is not a power of 2. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    _check_power_of_two(n_heads)
    h = np.arange(1, n_heads + 1)
    return 2.0 ** (-8.0 * h / n_heads)


def _check_power_of_two(n_heads) -> None:
    if not (isinstance(n_heads, (int, np.integer)) and n_heads >= 1):
        raise ValueError(f"the number of heads H must be a whole number >= 1, got {n_heads!r}.")
    if n_heads & (n_heads - 1):
        raise ValueError(
            f"ALiBi's slopes 2^(-8h/H) are defined here for H a power of 2 (1, 2, 4, 8, …), "
            f"got H = {n_heads}. The paper trained only such head counts; for other H, its "
            f"authors' code takes the slopes of the power of 2 below H and adds every other "
            f"slope of the power of 2 above."
        )


def alibi_bias(n: int, slope: float) -> np.ndarray:
    """ALiBi's bias: ``B[i, j] = −m · |i − j|``, added to the scores before the softmax.

    With the causal mask only ``j ≤ i`` is used, where it is ``−m (i − j)``: the
    further back a key, the lower its score, by ``m`` per token.

    Shapes: → ``(n, n)``. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    i = np.arange(n)
    return -slope * np.abs(i[:, None] - i[None, :]).astype(float)


def alibi_biases(n: int, n_heads: int) -> np.ndarray:
    """ALiBi's biases of all heads at once: ``B[h, i, j] = −m_h · |i − j|``.

    ``m_h`` is :func:`alibi_slopes` ``(n_heads)[h]``, so head ``h = 0 … H − 1`` here is
    the formula's head ``h + 1``: head 0 is the steepest, slope ``2^(−8/H)``, and the
    last head the gentlest, ``2^(−8)``. The ``(H,)`` slopes, given the shape
    ``(H, 1, 1)``, broadcast against the ``(n, n)`` distances. ``B`` adds to scores of
    shape ``(H, n, n)``, one head per leading index; ``B[h]`` equals
    :func:`alibi_bias` ``(n, m_h)``.

    Shapes: → ``(H, n, n)``. A ValueError names an ``n`` below 1 or an ``n_heads`` that
    is not a power of 2. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"the number of tokens n must be a whole number >= 1, got {n!r}.")
    slopes = alibi_slopes(n_heads)  # validates n_heads
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :]).astype(float)  # (n, n)
    return -slopes[:, None, None] * distance  # (H, 1, 1) · (n, n) → (H, n, n)


# ------------------------------------------------------------------------ sparse masks


def local_mask(n: int, window: int) -> np.ndarray:
    """Sliding window: ``M[i, j] = |i − j| ≤ w``. Shapes: → bool ``(n, n)``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    i = np.arange(n)
    return np.abs(i[:, None] - i[None, :]) <= window


def block_mask(n: int, block: int) -> np.ndarray:
    """Blocks along the diagonal: ``M[i, j] = (i // b == j // b)``. Shapes: → bool ``(n, n)``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    i = np.arange(n) // block
    return i[:, None] == i[None, :]


def global_mask(n: int, window: int, global_tokens=(0,)) -> np.ndarray:
    """Longformer's pattern: a local window, plus global tokens that see and are seen by all.

    ``M = local_mask(n, w)``, then each global token's row and column set to True.

    Shapes: → bool ``(n, n)``. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    M = local_mask(n, window)
    g = list(global_tokens)
    M[g, :] = True
    M[:, g] = True
    return M


def scores_kept(n, kind: str, window: int = 0, block: int = 1, n_global: int = 0):
    """How many scores a pattern computes, in closed form (one head, one sequence).

    - ``"full"``: ``n²``;
    - ``"local"``: ``n (2w + 1) − w (w + 1)``: each row keeps ``2w + 1`` keys, except
      near the two ends, where ``1 + 2 + … + w = w (w + 1)/2`` fall off on each side;
    - ``"block"``: ``n b`` (``b`` divides ``n``);
    - ``"global"``: local, plus for each of the global tokens ``0 … g − 1`` the part of
      its row outside the window and the part of its column outside the window and
      outside the global rows.

    ``n``: an int or an integer array (then so is the result). Equal to ``mask.sum()``
    of :func:`local_mask`, :func:`block_mask`, :func:`global_mask` (for ``n > g + w``).

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    n = np.asarray(n, dtype=np.int64)
    w = window
    if kind == "full":
        return n * n
    local = n * (2 * w + 1) - w * (w + 1)
    if kind == "local":
        return local
    if kind == "block":
        return n * block
    if kind == "global":
        total = local
        for i in range(n_global):
            in_window = np.minimum(i + w, n - 1) - max(i - w, 0) + 1
            total = total + (n - in_window) + (n - np.maximum(n_global, i + w + 1))
        return total
    raise ValueError(f"kind must be full, local, block or global, got {kind!r}.")


def reach(M: np.ndarray, layers: int) -> np.ndarray:
    """Which tokens can have reached which after ``layers`` layers of the same mask.

    ``R = (M^L > 0)`` as a boolean matrix power: ``R[i, j]`` is True when token ``j``'s
    information can have reached token ``i`` along some path of ``L`` allowed pairs.
    (A mask that allows ``i → i``, as every mask here does, keeps what a layer already
    reached, so ``R`` only grows with ``L``.)

    Shapes: bool ``(n, n)`` → bool ``(n, n)``. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    step = np.asarray(M, dtype=bool).astype(np.int64)
    reached = step > 0
    for _ in range(layers - 1):
        reached = (reached.astype(np.int64) @ step) > 0
    return reached


def layers_to_connect(M: np.ndarray) -> int | None:
    """The fewest layers after which every token can have reached every other; None if never.

    The smallest ``L`` with ``reach(M, L)`` all True. A path between two of ``n`` tokens
    never needs more than ``n`` steps, so if ``n`` layers do not connect them, none will.

    Shapes: bool ``(n, n)`` → an int or None. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    step = np.asarray(M, dtype=bool).astype(np.int64)
    reached = step > 0
    for layers in range(1, len(step) + 1):
        if reached.all():
            return layers
        reached = (reached.astype(np.int64) @ step) > 0
    return None


def masked_softmax_rows(S: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``softmax(S)`` over the keys each query may see (``mask`` True), 0 elsewhere.

    Shapes: ``S``, ``mask`` ``(n_q, n_k)`` → ``(n_q, n_k)``.
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    return softmax(S, mask=mask)


def plot_counts(ns, counts: dict):
    """Scores computed against n, one line per pattern, on log-log axes.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(5.6, 3.4), layout="constrained")
    colours = [plots.SECOND, plots.ACCENT, plots.THIRD, "#CC79A7", "#E69F00"]
    for (name, c), colour in zip(counts.items(), colours, strict=False):
        ax.plot(ns, c, "o-", color=colour, label=name, ms=4)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("scores computed")
    ax.set_title("how many scores each pattern computes")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------- linear attention


def elu_feature(x) -> np.ndarray:
    """The feature map of Katharopoulos et al. (2020): ``φ(x) = elu(x) + 1``.

    ``elu(x) + 1`` is ``x + 1`` for ``x > 0`` and ``eˣ`` otherwise: always positive,
    so every weight it gives is positive. Shapes: any → the same.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention(Q, K, V) -> np.ndarray:
    """Linear attention: ``φ(Q) (φ(K)ᵀ V)`` divided row by row by ``φ(Q) (φ(K)ᵀ 1)``.

    ``φ`` is :func:`elu_feature`. ``φ(K)ᵀ V`` is a ``(d_k, d_v)`` summary of all keys
    and values and ``φ(K)ᵀ 1`` a ``(d_k,)`` one, so the work is ``O(n d_k d_v)`` and no
    ``(n_q, n_k)`` array is ever formed.

    Shapes: ``Q (n_q, d_k)``, ``K (n_k, d_k)``, ``V (n_k, d_v)`` → ``(n_q, d_v)``.
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    phi_q, phi_k = elu_feature(Q), elu_feature(K)
    summary = phi_k.T @ np.asarray(V, dtype=float)  # (d_k, d_v)
    normaliser = phi_q @ phi_k.sum(axis=0)  # (n_q,)
    return (phi_q @ summary) / normaliser[:, None]


def linear_attention_weights(Q, K, mask=None) -> np.ndarray:
    """The weights that linear attention uses implicitly: ``φ(q_i)·φ(k_j) / Σ_l φ(q_i)·φ(k_l)``.

    This is the other order of the products, ``(φ(Q) φ(K)ᵀ) V``: it forms the
    ``(n_q, n_k)`` matrix, like softmax attention. ``mask`` (bool ``(n_q, n_k)``, True
    where a query may look) zeroes the other pairs before each row is normalised.
    Shapes: → ``(n_q, n_k)``, rows sum to 1.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    A = elu_feature(Q) @ elu_feature(K).T
    if mask is not None:
        A = np.where(mask, A, 0.0)
    return A / A.sum(axis=1, keepdims=True)


def linear_attention_quadratic(Q, K, V, mask=None) -> np.ndarray:
    """Linear attention computed in the quadratic order, ``(φ(Q) φ(K)ᵀ) V`` normalised.

    Same result as :func:`linear_attention` up to rounding, at ``O(n² d)`` cost and
    ``(n_q, n_k)`` memory; ``mask`` as in :func:`linear_attention_weights`.
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    return linear_attention_weights(Q, K, mask) @ np.asarray(V, dtype=float)


def causal_linear_attention(Q, K, V) -> np.ndarray:
    """Causal linear attention as a recurrence: one fixed-size state, updated token by token.

    ``S_i = S_{i−1} + φ(k_i) v_iᵀ`` (a ``(d_k, d_v)`` matrix) and ``z_i = z_{i−1} + φ(k_i)``
    (``d_k`` numbers); then ``o_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i``. This equals
    :func:`linear_attention_quadratic` with the causal mask ``j ≤ i``, but each token
    costs ``O(d_k d_v)`` and the state never grows with ``n`` (Katharopoulos et al. 2020).

    Shapes: ``Q``, ``K (n, d_k)``, ``V (n, d_v)`` → ``(n, d_v)``.
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    phi_q, phi_k = elu_feature(Q), elu_feature(K)
    V = np.asarray(V, dtype=float)
    state = np.zeros((phi_k.shape[1], V.shape[1]))  # S: every key and value so far, summed
    normaliser = np.zeros(phi_k.shape[1])  # z: every key so far, summed
    out = np.empty((len(phi_q), V.shape[1]))
    for i in range(len(phi_q)):
        state += np.outer(phi_k[i], V[i])
        normaliser += phi_k[i]
        out[i] = phi_q[i] @ state / (phi_q[i] @ normaliser)
    return out


def linear_costs(n, d: int) -> dict[str, np.ndarray]:
    """Multiply-adds and largest intermediate array of the two orders, with d_k = d_v = d.

    Quadratic order: ``n² d`` for ``φ(Q)φ(K)ᵀ`` and ``n² d`` for the product with V, an
    ``(n, n)`` array. Linear order: ``n d²`` for ``φ(K)ᵀV``, ``n d²`` for ``φ(Q)`` times
    it, and ``2 n d`` for the normaliser, a ``(d, d)`` array. Either order also holds the
    ``(n, d)`` arrays φ(Q) and φ(K), so the largest array is never smaller than ``n d``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    n = np.asarray(n, dtype=np.int64)
    return {
        "quadratic_madds": 2 * n * n * d,
        "linear_madds": 2 * n * d * d + 2 * n * d,
        "quadratic_largest": np.maximum(n * n, n * d),  # the (n, n) scores, or φ(Q) itself
        "linear_largest": np.maximum(n * d, d * d),
    }


def sharpness(q, K, scales) -> dict[str, np.ndarray]:
    """Largest weight and entropy of one query's row as the query is multiplied by c.

    Softmax: ``softmax(c q·k_j)``; linear: ``φ(c q)·φ(k_j)`` normalised. Shapes: ``q
    (d,)``, ``K (n, d)``, ``scales (m,)`` → dict of ``(m,)`` arrays ``"softmax_max"``,
    ``"softmax_entropy"``, ``"linear_max"``, ``"linear_entropy"``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    soft = np.stack([softmax(c * (K @ q)) for c in scales])
    lin = np.stack([linear_attention_weights((c * q)[None, :], K)[0] for c in scales])
    return {
        "softmax_max": soft.max(axis=1),
        "softmax_entropy": entropy(soft),
        "linear_max": lin.max(axis=1),
        "linear_entropy": entropy(lin),
    }


def linear_limit(q, K) -> np.ndarray:
    """The weights linear attention tends to as the query grows, ``c → ∞``.

    ``φ(c q)`` is ``c q_f + 1`` on the features where ``q_f > 0`` and ``e^{c q_f} → 0``
    elsewhere, so ``φ(c q)/c → q⁺`` (the positive part of q) and the weights tend to
    ``q⁺·φ(k_j) / Σ_l q⁺·φ(k_l)``: a fixed row, never one-hot unless only one key has
    a positive feature where q has one. Shapes: ``q (d,)``, ``K (n, d)`` → ``(n,)``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    a = elu_feature(K) @ np.maximum(np.asarray(q, dtype=float), 0.0)
    return a / a.sum()


def plot_sharpness(scales, curves: dict, limit_max: float):
    """Largest weight and entropy of one row, softmax vs linear, against the query's scale.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8.4, 3.2), layout="constrained")
    for name, colour, label in (
        ("softmax", plots.ACCENT, "softmax"),
        ("linear", plots.SECOND, "linear, elu(x) + 1"),
    ):
        ax1.plot(scales, curves[f"{name}_max"], "o-", ms=3, color=colour, label=label)
        ax2.plot(scales, curves[f"{name}_entropy"], "o-", ms=3, color=colour, label=label)
    ax1.axhline(limit_max, color=plots.SECOND, ls=":", lw=1, label="linear's limit, c → ∞")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("query multiplied by c")
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel("largest weight")
    ax2.set_ylabel("entropy (nats)")
    ax1.legend(fontsize=8)
    ax1.set_title("can the row become one-hot?")
    ax2.set_title("how spread out the row is")
    return fig


def plot_linear_cost(ns, quadratic_bytes, linear_bytes):
    """Peak memory of the two orders of linear attention against n, log-log.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    fig, ax = plt.subplots(figsize=(5.4, 3.3), layout="constrained")
    ax.plot(ns, np.asarray(quadratic_bytes) / 2**20, "o-", color=plots.SECOND,
            label="(φ(Q) φ(K)ᵀ) V")  # fmt: skip
    ax.plot(ns, np.asarray(linear_bytes) / 2**20, "s-", color=plots.ACCENT,
            label="φ(Q) (φ(K)ᵀ V)")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("peak memory (MiB)")
    ax.set_title("one result, two orders of multiplication")
    ax.legend(fontsize=8)
    return fig


# ------------------------------------------------------------ entropy during training


def plot_entropy_curves(runs: dict, n_pairs: int, n_values: int):
    """Mean attention entropy, loss and accuracy per training step, one colour per run:
    the median over the seeds as a line, the lowest to the highest seed as a band.

    ``runs``: label → a :class:`attnlab.lessons.ablation.Run`; ``n_pairs`` and
    ``n_values`` mark a uniform row (log n_pairs) and a uniform guess (log n_values).
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    fig, axs = plt.subplots(1, 3, figsize=(11.5, 3.2), layout="constrained")
    colours = [plots.ACCENT, plots.SECOND, plots.THIRD]
    for (label, run), colour in zip(runs.items(), colours, strict=False):
        steps = np.arange(1, run.steps + 1)
        for ax, values in zip(axs, (run.entropy, run.loss, run.accuracy), strict=True):
            ax.fill_between(
                steps, values.min(axis=0), values.max(axis=0), color=colour, alpha=0.2, lw=0
            )
            ax.plot(steps, np.median(values, axis=0), color=colour, lw=1.3, label=f"÷ {label}")
    for ax, level, text in ((axs[0], np.log(n_pairs), "uniform row, log n"),
                            (axs[1], np.log(n_values), "uniform guess")):  # fmt: skip
        ax.axhline(level, color="grey", ls=":", lw=1)
        ax.text(run.steps, level, text + " ", color="grey", fontsize=8, va="bottom", ha="right")
    axs[0].set_ylim(0, np.log(n_pairs) * 1.15)
    axs[1].set_ylim(bottom=0)  # a saturated start can begin above the uniform guess
    titles = ("attention entropy", "loss", "accuracy")
    ylabels = ("mean entropy (nats)", "loss on the step's batch", "accuracy on the step's batch")
    for ax, title, ylabel in zip(axs, titles, ylabels, strict=True):
        ax.set_title(title)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
    axs[2].set_ylim(0, 1.05)
    axs[0].legend(fontsize=8, loc="center right")
    fig.suptitle(
        f"line: median of {run.entropy.shape[0]} seeds; band: lowest to highest", fontsize=9
    )
    return fig


# ----------------------------------------------------------------- PyTorch's backends


def sdpa_backends(calls: dict) -> dict[str, list[str]]:
    """Which of PyTorch's SDPA backends can run each call, on this machine (needs torch).

    ``calls``: a name → keyword arguments for ``F.scaled_dot_product_attention``
    (``query``, ``key``, ``value`` and the options). Each call is tried with one
    backend allowed at a time (``torch.nn.attention.sdpa_kernel``); the answer lists
    those that ran. The warnings PyTorch gives about a backend it cannot use are
    silenced: a refusal is recorded as a missing name.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    import warnings

    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
    found: dict[str, list[str]] = {}
    for label, kwargs in calls.items():
        found[label] = []
        for name in names:
            backend = getattr(SDPBackend, name, None)
            if backend is None:
                continue
            try:
                with warnings.catch_warnings(), sdpa_kernel(backend):
                    warnings.simplefilter("ignore")
                    F.scaled_dot_product_attention(**kwargs)
            except RuntimeError:
                continue
            found[label].append(name.lower())
    return found
