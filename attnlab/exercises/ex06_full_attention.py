"""Exercises ``multi_head_attention`` and ``online_softmax``.

``multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads)``: split the projected
queries, keys and values into heads, attend within each head, put the heads
side by side and multiply by W_O. ``online_softmax(scores, block_size)``: the
softmax of one row computed block by block with a running maximum and a running
sum, as tiled attention does. The checker sees only the result, so it tests
rows whose maximum arrives late, with scores too large for a plain exp, ragged
last blocks, block_size 1 and a single block, and names the classic slips of
the running statistics.

Lesson: ``notebooks/06_full_attention.ipynb``.
"""

from typing import Any

import numpy as np

from ..multihead import merge_heads as _merge
from ..multihead import multi_head_attention
from ..multihead import split_heads as _split
from ..softmax import softmax
from . import solutions
from .arrays import (
    EXP_LIMIT,
    ArrayCheck,
    Case,
    Mistake,
    overflow_hint,
    readable,
    softmax_columns,
    softmax_rows,
)
from .registry import register

LESSON = "notebooks/06_full_attention.ipynb"

# --------------------------------------------------------- multi_head_attention


def _split_no_transpose(M, n_heads):
    n, width = M.shape
    return M.reshape(n_heads, n, width // n_heads)


def _merge_no_transpose(heads):
    h, n, d = heads.shape
    return heads.reshape(n, h * d)


def _split_strided(M, n_heads):
    """Head h gets every H-th column: h, h + H, h + 2H, …"""
    n, width = M.shape
    return M.reshape(n, width // n_heads, n_heads).transpose(2, 0, 1)


def _merge_strided(heads):
    h, n, d = heads.shape
    return heads.transpose(1, 2, 0).reshape(n, d * h)


def _wrong(*, split=_split, merge=_merge, one_head=False, divisor=None, weights=softmax_rows,
           project=lambda heads, W_O: heads @ W_O):  # fmt: skip
    """Multi-head attention with one part done wrong: the split or merge of the heads, the
    number of heads, the scale (``divisor(d_model)`` instead of d_head), the softmax or
    the output projection."""

    def compute(X, W_Q, W_K, W_V, W_O, n_heads):
        Q, K, V = (split(X @ W, 1 if one_head else n_heads) for W in (W_Q, W_K, W_V))
        d = Q.shape[-1] if divisor is None else divisor(W_Q.shape[1])
        return project(merge(weights(Q @ K.transpose(0, 2, 1) / np.sqrt(d)) @ V), W_O)

    return compute


def _softmax_each_column(S):
    return np.stack([softmax_columns(s) for s in S])


def mha_cases() -> list[Case]:
    rng = np.random.default_rng(606)
    shapes = [
        ("X (5×6), d_model = 6, n_heads = 2, so d_head = 3", 5, 6, 2),
        ("X (4×8), d_model = 8, n_heads = 4, so d_head = 2", 4, 8, 4),
        ("X (6×6), d_model = 6, n_heads = 3, so d_head = 2", 6, 6, 3),
        ("X (3×4), d_model = 4, a single head (n_heads = 1)", 3, 4, 1),
    ]
    cases = []
    for label, n, d_model, n_heads in shapes:
        inputs: dict[str, Any] = {"X": readable(rng, n, d_model)}
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            inputs[name] = readable(rng, d_model, d_model, scale=0.7)
        inputs["n_heads"] = n_heads
        cases.append(Case(label, inputs))
    return cases


_HEAD_COLUMNS = (
    "Head h owns the block of columns h·d_head to (h+1)·d_head − 1 of Q = X W_Q (and of K "
    "and V): `Q[:, h*d_head:(h+1)*d_head]`, or all heads at once with "
    "`Q.reshape(n, n_heads, d_head).transpose(1, 0, 2)`."
)

MHA_MISTAKES = (
    Mistake(
        "You returned the heads side by side but forgot the output projection: multiply the "
        "concatenated heads, shape (n, d_model), by W_O. W_O is what lets the heads' results "
        "mix into every output feature.",
        _wrong(project=lambda heads, W_O: heads),
    ),
    Mistake(
        "You ran one attention over all d_model columns instead of splitting them into "
        "n_heads heads. Each head attends with its own d_head = d_model / n_heads columns and "
        "its own weights. " + _HEAD_COLUMNS,
        _wrong(one_head=True),
    ),
    Mistake(
        "You scaled each head's scores by √d_model instead of √d_head. Inside a head the dot "
        "products have d_head terms, so divide by `np.sqrt(d_head)` with "
        "d_head = d_model // n_heads.",
        _wrong(divisor=lambda d_model: d_model),
    ),
    Mistake(
        "You forgot to scale each head's scores: divide Q Kᵀ by √d_head before the softmax.",
        _wrong(divisor=lambda d_model: 1.0),
    ),
    Mistake(
        "You split the heads with `reshape(n_heads, n, d_head)` and merged them back with "
        "`reshape(n, d_model)`, without transposing. A reshape keeps the numbers in memory "
        "order, row after row of Q, so each 'head' mixes pieces of different tokens. Reshape "
        "to (n, n_heads, d_head) first, then move the head axis to the front with "
        "`.transpose(1, 0, 2)`; to merge, transpose back before reshaping to (n, d_model).",
        _wrong(split=_split_no_transpose, merge=_merge_no_transpose),
    ),
    Mistake(
        "You split the heads with `reshape(n_heads, n, d_head)`, without transposing. A "
        "reshape keeps the numbers in memory order, row after row of Q, so each 'head' mixes "
        "pieces of different tokens. Reshape to (n, n_heads, d_head), then "
        "`.transpose(1, 0, 2)`.",
        _wrong(split=_split_no_transpose),
    ),
    Mistake(
        "Your heads are right, but you merged them with `heads.reshape(n, d_model)` straight "
        "from shape (n_heads, n, d_head). A reshape keeps memory order, so the rows get mixed "
        "up across tokens. Transpose to (n, n_heads, d_head) first, `heads.transpose(1, 0, "
        "2).reshape(n, d_model)`, or `np.concatenate(list_of_heads, axis=-1)`.",
        _wrong(merge=_merge_no_transpose),
    ),
    Mistake(
        "Your heads take every n_heads-th column (columns h, h + n_heads, …), as "
        "`reshape(n, d_head, n_heads)` does. " + _HEAD_COLUMNS,
        _wrong(split=_split_strided, merge=_merge_strided),
    ),
    Mistake(
        "Inside each head, your softmax runs down the columns (over the queries). Each "
        "query's row of weights must sum to 1: softmax over the last axis, `axis=-1`.",
        _wrong(weights=_softmax_each_column),
    ),
    Mistake(
        "You multiplied by W_O transposed: the concatenated heads (n, d_model) times W_O "
        "(d_model, d_model) is `heads @ W_O`, not `heads @ W_O.T`.",
        _wrong(project=lambda heads, W_O: heads @ W_O.T),
    ),
)

# ---------------------------------------------------------------- online_softmax


def _blocks(scores, block_size):
    return [scores[k : k + block_size] for k in range(0, len(scores), block_size)]


def _no_rescale(scores, block_size):
    """The running sum is never rescaled when the maximum grows."""
    m, l = -np.inf, 0.0
    for block in _blocks(scores, block_size):
        m = max(m, block.max())
        l = l + np.exp(block - m).sum()
    return np.exp(scores - m) / l


def _rescale_upside_down(scores, block_size):
    """The rescale factor is exp(m_new − m) instead of exp(m − m_new)."""
    m, l = -np.inf, 0.0
    for block in _blocks(scores, block_size):
        m_new = max(m, block.max())
        factor = np.exp(m_new - m) if np.isfinite(m) else 0.0
        l = l * factor + np.exp(block - m_new).sum()
        m = m_new
    return np.exp(scores - m) / l


def _stale_exponentials(scores, block_size):
    """Each block's exponentials kept with the maximum of their time, never rescaled."""
    m, l, parts = -np.inf, 0.0, []
    for block in _blocks(scores, block_size):
        m_new = max(m, block.max())
        l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()
        m = m_new
        parts.append(np.exp(block - m))
    return np.concatenate(parts) / l


def _first_block_max(scores, block_size):
    """The maximum of the first block, never updated: later, larger scores overflow exp."""
    m = _blocks(scores, block_size)[0].max()
    e = np.exp(scores - m)
    return e / e.sum()


def _online_without_max(scores, block_size):
    l = sum(np.exp(block).sum() for block in _blocks(scores, block_size))
    return np.exp(scores) / l


def _per_block(scores, block_size):
    return np.concatenate([softmax_rows(b) for b in _blocks(scores, block_size)])


def _per_block_averaged(scores, block_size):
    blocks = _blocks(scores, block_size)
    return np.concatenate([softmax_rows(b) for b in blocks]) / len(blocks)


def online_cases() -> list[Case]:
    return [
        Case(
            "7 scores in blocks of 3 (3 + 3 + 1), the largest in the last block",
            {"scores": np.array([0.5, -1.2, 0.3, 2.0, 1.1, 1.5, 3.4]), "block_size": 3},
        ),
        Case(
            "5 scores near 1000, rising block after block, block_size = 2",
            {"scores": np.array([998.0, 1000.0, 999.5, 1001.0, 1003.0]), "block_size": 2},
        ),
        Case(
            "6 scores, small ones first and 800 later, block_size = 4 (4 + 2)",
            {"scores": np.array([-3.0, 0.5, 1.0, -2.0, 800.0, 801.5]), "block_size": 4},
        ),
        Case(
            "4 scores near -1000, block_size = 1 (one score per block)",
            {"scores": np.array([-1000.0, -998.5, -1001.0, -997.0]), "block_size": 1},
        ),
        Case(
            "5 scores, block_size = 8: one block holds them all",
            {"scores": np.array([3.0, -2.0, 0.0, 1.5, -0.5]), "block_size": 8},
        ),
    ]


_RUNNING = (
    "When a block raises the maximum from m to m_new, every exp(s − m) already in the "
    "running sum l has to become exp(s − m_new): multiply l by exp(m − m_new) before adding "
    "the new block, `l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()`."
)

ONLINE_MISTAKES = (
    Mistake(
        "You forgot to rescale the running sum when the maximum changes: the sum l still holds "
        "terms exp(s − m) computed with an older, smaller maximum, so it is too large and "
        "your weights don't sum to 1. " + _RUNNING,
        _no_rescale,
    ),
    Mistake(
        "Your rescale factor is upside down: when the maximum grows from m to m_new, the old "
        "terms must shrink, by exp(m − m_new) ≤ 1, not grow by exp(m_new − m). " + _RUNNING,
        _rescale_upside_down,
    ),
    Mistake(
        "You divided each block's exponentials, computed with the maximum of their time, by "
        "the final sum: exponentials from blocks before the maximum grew are too large. Once "
        "all blocks are seen, compute the weights with the final maximum, "
        "`np.exp(scores - m) / l`.",
        _stale_exponentials,
    ),
    Mistake(
        "You kept the maximum of the first block and never updated it, so a later, larger "
        "score overflows exp (exp(800) = inf, and inf / inf is NaN). Keep a running maximum, "
        "`m_new = max(m, block.max())`, and rescale the sum when it grows. " + _RUNNING,
        _first_block_max,
    ),
    Mistake(
        "Your softmax overflows: without subtracting a maximum, exp(1000) is inf (and "
        "exp(-1000) is 0), so you get inf / inf or 0 / 0, which is NaN. Keep a running "
        "maximum m and sum exp(s − m) instead. " + _RUNNING,
        _online_without_max,
    ),
    Mistake(
        "You normalised each block on its own, so every block sums to 1 and the whole row "
        "sums to the number of blocks. The softmax divides by one sum over the whole row: "
        "keep a running sum across the blocks and divide only at the end.",
        _per_block,
    ),
    Mistake(
        "You normalised each block on its own and then divided by the number of blocks. The "
        "row sums to 1 now, but each block got the same total weight, 1 / n_blocks, whatever "
        "its scores. Keep one running sum across the blocks and divide only at the end.",
        _per_block_averaged,
    ),
    Mistake(
        "You forgot to divide by the sum: exp(s − m) alone are not weights. Divide by the "
        "running sum l at the end, `np.exp(scores - m) / l`.",
        lambda scores, block_size: np.exp(scores - scores.max()),
    ),
)


def _per_block_hint(got, want, inputs):
    scores, size = inputs["scores"], inputs["block_size"]
    if got.shape != want.shape or got.ndim != 1 or size >= len(scores):
        return None
    sums = np.array([b.sum() for b in _blocks(got.astype(np.float64), size)])
    if np.isfinite(sums).all() and np.allclose(sums, 1.0, atol=1e-6):
        return (
            "Each block of your weights sums to 1 on its own: you normalised per block. The "
            "softmax divides by one sum over the whole row; keep a running sum across the "
            "blocks and divide only at the end."
        )
    return None


_overflow_hint = overflow_hint(
    "Your weights contain NaN or inf for scores this large: exp(1000) overflows to "
    "inf and exp(-1000) underflows to 0. Subtract the running maximum before exp. " + _RUNNING,
    lambda inputs: np.abs(inputs["scores"]).max(),
)


def _nan_hint(got, want, inputs):
    if np.isfinite(got.astype(np.float64)).all() or np.abs(inputs["scores"]).max() > EXP_LIMIT:
        return None
    return (
        "Your weights contain NaN even though these scores are small. Look at the first "
        "block, where the running maximum starts at -inf: exp(m - m_new) = exp(-inf) = 0 is "
        "fine, but exp(m_new - m) = inf, and inf · 0 or inf - inf is NaN."
    )


def _sum_hint(got, want, inputs):
    got = got.astype(np.float64)
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    if (got < 0).any():
        return "Some of your weights are negative, but exp never is."
    total = got.sum()
    if abs(total - 1.0) > 1e-4:
        return (
            f"Your weights sum to {total:.4g}, not 1. If the maximum changes between blocks, "
            "the running sum must follow it. " + _RUNNING
        )
    return None


register(
    LESSON,
    solutions.multi_head_attention,
    "multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads) -> concat(head_1, …, head_H) W_O, "
    "shape (n, d_model)",
    ArrayCheck(
        mha_cases,
        reference=multi_head_attention,
        shape_rule="one row per token and d_model columns, like X: (n, d_model)",
        mistakes=MHA_MISTAKES,
        shape_hint=(
            "X is (n, d_model). Each head's Q, K and V are (n, d_head) with "
            "d_head = d_model // n_heads, and each head's output is (n, d_head); side "
            "by side the heads are (n, d_model) again, and `@ W_O` keeps that shape."
        ),
        shown_inputs=("X", "n_heads"),
    ),
)
register(
    LESSON,
    solutions.online_softmax,
    "online_softmax(scores, block_size) -> softmax of a 1-D row, computed block by block "
    "with a running maximum and a running sum",
    ArrayCheck(
        online_cases,
        reference=lambda scores, block_size: softmax(scores),
        shape_rule="one weight per score, (n,)",
        mistakes=ONLINE_MISTAKES,
        hints=(_overflow_hint, _nan_hint, _per_block_hint, _sum_hint),
        shape_hint=(
            "scores is 1-D, shape (n,): a block is `scores[start:start + block_size]`, "
            "and its maximum and sum are single numbers."
        ),
    ),
)
