"""The attention family: other scores, positions and sparse patterns.

Additive (Bahdanau) scores and their cost; relative position biases (T5's buckets,
ALiBi's linear penalty, one slope per head, RoPE's rotations); sparse masks (local
window, blocks, global tokens), how many scores they keep and how many layers they
need to connect every token. The figure functions only draw numbers the notebook
computed in the cell that calls them. Linear attention, PyTorch's kernel and the
entropy during training are in :mod:`attnlab.lessons.in_practice` (lesson 10).

Lesson: ``notebooks/09_attention_family.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..softmax import softmax
from .heads_and_masks import plot_patterns

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
    # drawn on top: it coincides with the unscaled line
    ax.plot(d_ks, np.sqrt(d_ks), ":", color="black", lw=1.5, zorder=3, label="√d_k")
    ax.plot(d_ks, spreads["scaled"], "o-", color=plots.ACCENT, label="q·k / √d_k")
    ax.plot(d_ks, spreads["additive"], "s-", color=plots.THIRD, label="additive vᵀtanh(…)")
    ax.plot(d_ks, spreads["bound"], "--", color=plots.THIRD, lw=1, label="bound ‖v‖₁")
    plots.log2_axes(
        ax,
        xlabel="d_k",
        ylabel="standard deviation of the scores",
        title="how the scores spread as d_k grows",
    )
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


def rope_angles(d: int, base: float = 10000.0) -> np.ndarray:
    """RoPE's angle per position for each of the ``d/2`` pairs: ``θ_f = base^(−2f/d)``.

    Pair 0 turns by 1 radian per token, the last pair by nearly ``1/base``: a geometric
    spread of frequencies, like lesson 06's sinusoidal codes. Shapes: → ``(d // 2,)``.
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    if d % 2:
        raise ValueError(f"RoPE rotates pairs of features, so d must be even; got d = {d}.")
    return base ** (-2.0 * np.arange(d // 2) / d)


def rope(X, start: int = 0, base: float = 10000.0) -> np.ndarray:
    """Rotary position embedding: turn each pair of features of row i by ``(start + i) θ_f``.

    The pairs are neighbouring features ``(2f, 2f + 1)``, as in Su et al. (2021); each is
    turned by ``rotation((start + i) * θ_f)`` with ``θ_f`` from :func:`rope_angles`. Then
    ``rope(Q) @ rope(K).T`` has scores that depend on the positions only through
    ``i − j``. Shapes: ``X (n, d)`` with d even → ``(n, d)``.

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    angles = (start + np.arange(n))[:, None] * rope_angles(d, base)[None, :]  # (n, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = X[:, 0::2], X[:, 1::2]  # the two features of each pair
    out = np.empty_like(X)
    out[:, 0::2] = x1 * cos - x2 * sin
    out[:, 1::2] = x1 * sin + x2 * cos
    return out


def plot_rope_decay(d: int = 64, max_distance: int = 1000):
    """RoPE's score against the distance for one fixed query and key, both all ones.

    ``score(t) = rope(q at position t) · rope(k at position 0) = Σ_f 2 cos(t θ_f)``, divided
    by its value ``d`` at ``t = 0``, for ``t = i − j = 0 … max_distance`` on a log x-axis:
    it oscillates, and its envelope shrinks with the distance (Su et al.'s long-term decay).

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    t = np.arange(max_distance + 1)
    score = 2 * np.cos(t[:, None] * rope_angles(d)[None, :]).sum(axis=1) / d
    fig, ax = plt.subplots(figsize=(5.6, 2.8), layout="constrained")
    ax.plot(t[1:], score[1:], color=plots.ACCENT, lw=1)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xscale("log")
    ax.set_xlabel("distance i − j (tokens)")
    ax.set_ylabel("score / score at 0")
    ax.set_title(f"RoPE, q = k = all ones, d = {d}")
    return fig


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


def position_costs(n: int, n_heads: int, d_head: int, n_buckets: int = 32) -> dict:
    """What each relative position scheme adds to one attention layer: n tokens, H heads.

    - ``"table_params"``: a learned bias per distance, ``b_(i−j)`` for ``i − j = −(n−1) …
      n − 1`` in every head, ``(2n − 1) · H`` numbers (per layer, if each layer has its own);
    - ``"t5_params"``: T5's ``n_buckets · H`` bucket biases, computed once and shared by
      every layer of a stack;
    - ALiBi's slopes are fixed and RoPE's angles too: 0 parameters for both;
    - ``"bias_numbers"``: a bias scheme (learned, T5 or ALiBi) adds ``H · n²`` numbers to
      the scores, one per head and pair: the ``(H, n, n)`` array, if it is built;
    - ``"rope_mults"``: RoPE turns each pair of features of every q and k, 2
      multiplications per entry (``x₁ cos − x₂ sin``), so ``2 · n · H · d_head`` for Q and
      as many for K;
    - ``"score_madds"``: ``H · n² · d_head``, the multiply-adds of ``QKᵀ`` itself, for scale.

    Integers, exact. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    return {
        "table_params": (2 * n - 1) * n_heads,
        "t5_params": n_buckets * n_heads,
        "alibi_params": 0,
        "rope_params": 0,
        "bias_numbers": n_heads * n * n,
        "rope_mults": 2 * (2 * n * n_heads * d_head),
        "score_madds": n_heads * n * n * d_head,
    }


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


def random_keys_mask(n: int, window: int, n_random: int, seed: int = 0) -> np.ndarray:
    """BigBird's idea without its global tokens: a local window plus random keys per query.

    ``M = local_mask(n, w)``, then for each query ``i`` the keys of ``n_random`` distinct
    positions drawn at random (seeded by ``seed``) set to True: ``M[i, j_1 … j_r] = True``.

    Shapes: → bool ``(n, n)``. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    rng = np.random.default_rng(seed)
    M = local_mask(n, window)
    for i in range(n):
        M[i, rng.choice(n, size=n_random, replace=False)] = True
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


def _then(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The boolean product: ``(A @ B) > 0``, in floats, which BLAS multiplies fast and which
    count paths exactly (a count of at most ``n`` paths, each 0 or 1 times 0 or 1)."""
    return (A.astype(np.float64) @ B.astype(np.float64)) > 0


def layers_to_connect(M: np.ndarray) -> int | None:
    """The fewest layers after which every token can have reached every other; None if never.

    The smallest ``L`` with ``reach(M, L)`` all True. A path between two of ``n`` tokens
    never needs more than ``n`` steps, so if ``n`` layers do not connect them, none will.
    When every token reads itself, ``reach(M, L)`` only grows with ``L``, and ``L`` is
    found by doubling: ``reach(M, 2L)`` is ``reach(M, L)`` times itself, so about
    ``2 log2 n`` products replace up to ``n``.

    Shapes: bool ``(n, n)`` → an int or None. Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    step = np.asarray(M, dtype=bool)
    n = len(step)
    if not np.diagonal(step).all():  # reach may shrink as L grows: try every L in turn
        each = step
        for layers in range(1, n + 1):
            if each.all():
                return layers
            each = _then(each, step)
        return None
    powers = [step]  # powers[k] = reach(M, 2^k)
    while 2 ** (len(powers) - 1) < n and not powers[-1].all():
        powers.append(_then(powers[-1], powers[-1]))
    if not powers[-1].all():
        return None
    # The largest L whose reach is not yet full, built from the largest power down.
    reached: np.ndarray | None = None
    layers = 0
    for k in reversed(range(len(powers))):
        longer = powers[k] if reached is None else _then(reached, powers[k])
        if not longer.all():
            reached, layers = longer, layers + 2**k
    return layers + 1


def masked_softmax_rows(S: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``softmax(S)`` over the keys each query may see (``mask`` True), 0 elsewhere.

    Shapes: ``S``, ``mask`` ``(n_q, n_k)`` → ``(n_q, n_k)``.
    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    return softmax(S, mask=mask)


def plot_masks(masks: dict, suptitle: str = ""):
    """Boolean masks side by side, 1 (bright) where a query may attend to a key.

    ``masks``: panel title → bool ``(n, n)``. Drawn with lesson 06's ``plot_patterns``,
    with a colour bar that reads "allowed (1) or not (0)".

    Lesson: ``notebooks/09_attention_family.ipynb``.
    """
    fig = plot_patterns({k: np.asarray(M, dtype=float) for k, M in masks.items()}, suptitle)
    fig.axes[-1].set_yticks([0, 1])
    fig.axes[-1].set_ylabel("allowed (1) or not (0)")
    return fig
