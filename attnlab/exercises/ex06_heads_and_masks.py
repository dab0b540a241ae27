"""Exercises ``multi_head_attention``, ``grouped_query_attention``, ``kv_cache_bytes``
and ``padding_causal_mask``.

``multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads)``: split the projected
queries, keys and values into heads, attend within each head, put the heads
side by side and multiply by W_O. ``grouped_query_attention(Q, K, V)``: H query
heads on H_kv key/value heads, each shared by a run of H/H_kv neighbouring query
heads. ``kv_cache_bytes(n_layers, n_tokens, n_heads,
n_kv_heads, d_head, bytes_per_number)``: the size of a key/value cache, where only
the key/value heads count. ``padding_causal_mask(lengths, n)``: a batch's padding
mask on the key axis, combined with the causal mask by AND.

Lesson: ``notebooks/06_heads_and_masks.ipynb``.
"""

import re
from typing import Any

import numpy as np

from ..masks import padding_causal_mask
from ..multihead import grouped_query_attention, multi_head_attention
from ..multihead import merge_heads as _merge
from ..multihead import split_heads as _split
from . import solutions
from .arrays import (
    ArrayCheck,
    Case,
    Mistake,
    bool_mask,
    matches,
    ratio_hint,
    readable,
    softmax_along,
    softmax_columns,
    softmax_rows,
)
from .messages import Fail, array_block
from .registry import register

LESSON = "notebooks/06_heads_and_masks.ipynb"

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
           project=lambda heads, W_O: heads @ W_O, inputs=lambda W: W):  # fmt: skip
    """Multi-head attention with one part done wrong: the split or merge of the heads, the
    number of heads, the scale (``divisor(d_model, d_head)`` instead of d_head), the
    softmax, the input projections (``inputs(W)`` for each of W_Q, W_K, W_V) or the
    output projection."""

    def compute(X, W_Q, W_K, W_V, W_O, n_heads):
        Q, K, V = (split(X @ inputs(W), 1 if one_head else n_heads) for W in (W_Q, W_K, W_V))
        d = Q.shape[-1] if divisor is None else divisor(W_Q.shape[1], Q.shape[-1])
        return project(merge(weights(Q @ K.transpose(0, 2, 1) / np.sqrt(d)) @ V), W_O)

    return compute


def _heads_over_tokens(X, W_Q, W_K, W_V, W_O, n_heads):
    """Each head takes d_head *rows* (tokens) with all d_model columns, as ``Q[s]`` does
    for ``s = slice(h·d_head, (h+1)·d_head)``; the heads are stacked back over the rows."""
    d_head = X.shape[1] // n_heads
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    heads = []
    for h in range(n_heads):
        s = slice(h * d_head, (h + 1) * d_head)
        if len(Q[s]):
            S = Q[s] @ K[s].T / np.sqrt(Q.shape[1])  # attention divides by its last axis
            heads.append(softmax_rows(S) @ V[s])
    return np.vstack(heads) @ W_O


def _diagonal_blocks(X, W_Q, W_K, W_V, W_O, n_heads):
    """Head h projects only its own columns of X, with one diagonal block of each W:
    ``X[:, s] @ W_Q[s, s]``."""
    d_head = X.shape[1] // n_heads
    heads = []
    for h in range(n_heads):
        s = slice(h * d_head, (h + 1) * d_head)
        Q, K, V = (X[:, s] @ W[s, s] for W in (W_Q, W_K, W_V))
        heads.append(softmax_rows(Q @ K.T / np.sqrt(d_head)) @ V)
    return np.hstack(heads) @ W_O


def _output_blocks(X, W_Q, W_K, W_V, W_O, n_heads, *, input_blocks=False):
    """Each head's output times its own diagonal block of W_O, ``head_h @ W_O[s, s]``, into
    its own columns of the result (with ``input_blocks``, the projections too, as in
    ``_diagonal_blocks``)."""
    d_head = X.shape[1] // n_heads
    outs = []
    for h in range(n_heads):
        s = slice(h * d_head, (h + 1) * d_head)
        if input_blocks:
            Q, K, V = (X[:, s] @ W[s, s] for W in (W_Q, W_K, W_V))
        else:
            Q, K, V = ((X @ W)[:, s] for W in (W_Q, W_K, W_V))
        outs.append(softmax_rows(Q @ K.T / np.sqrt(d_head)) @ V @ W_O[s, s])
    return np.hstack(outs)


def _heads_averaged(X, W_Q, W_K, W_V, W_O, n_heads):
    """Each head's output times its own block of rows of W_O, then the mean over the heads:
    ``(1/H) Σ_h head_h W_O[s_h, :]``, which is the right result divided by H."""
    d_head = X.shape[1] // n_heads
    Q, K, V = (_split(X @ W, n_heads) for W in (W_Q, W_K, W_V))
    Z = softmax_rows(Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)) @ V  # (H, n, d_head)
    return np.mean([Z[h] @ W_O[h * d_head : (h + 1) * d_head] for h in range(n_heads)], axis=0)


def _softmax_each_column(S):
    return np.stack([softmax_columns(s) for s in S])


def _softmax_whole_head(S):
    """One softmax over each head's whole (n, n) scores: a head's n² weights sum to 1."""
    flat = S.reshape(*S.shape[:-2], -1)
    return softmax_rows(flat).reshape(S.shape)


def _softmax_causal(S):
    """Each head's weights with a causal mask, as if by habit: key j > query i blocked."""
    n_q, n_k = S.shape[-2:]
    return softmax_rows(np.where(np.tril(np.ones((n_q, n_k), dtype=bool)), S, -np.inf))


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
    # The single head first: an answer that fails only once there are several heads is
    # then known to be right with one, and the hint below can say where to look.
    return cases[-1:] + cases[:-1]


def _several_heads_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """For a wrong answer with several heads: the single-head case, checked first, passed."""
    if inputs["n_heads"] == 1:
        return None
    return (
        f"Your function is right with a single head (n_heads = 1) but not with "
        f"n_heads = {inputs['n_heads']}: look at the split or the merge. Which columns of Q, K "
        f"and V does head 1 use, and where do its outputs land in the merged (n, d_model) "
        f"array?"
    )


_CAUSAL_BY_HABIT = (
    "Each of your queries reads only itself and the tokens before it, as with a causal "
    "mask. Does this exercise's formula have a mask, and which keys may every query "
    "read here?"
)

_HEAD_COLUMNS = (
    "Head h owns one block of d_head neighbouring columns of Q = X W_Q (and of K and V). "
    "Which columns are head 1's when d_head = 3?"
)

MHA_MISTAKES = (
    Mistake(
        "You returned the heads side by side but left out the last step of the formula. "
        "Which matrix lets the heads' results mix into every output feature?",
        _wrong(project=lambda heads, W_O: heads),
    ),
    Mistake(
        "You ran one attention over all d_model columns instead of splitting them into "
        "n_heads heads. Each head attends with its own d_head = d_model / n_heads columns and "
        "its own weights. " + _HEAD_COLUMNS,
        _wrong(one_head=True),
    ),
    Mistake(
        "You scaled each head's scores by √d_model. Inside one head, how many terms does "
        "each dot product have?",
        _wrong(divisor=lambda d_model, d_head: d_model),
    ),
    Mistake(
        "Your heads' scores are not scaled. What does each head's Q Kᵀ need before the "
        "softmax, and by what width?",
        _wrong(divisor=lambda d_model, d_head: 1.0),
    ),
    Mistake(
        "Your heads' scores are divided by d_head, √d_head twice: once by your code and once "
        "more inside `attention`, which divides by the square root of its inputs' last axis "
        "itself. If you call `attention`, what should you hand it: scaled or raw Q and K?",
        _wrong(divisor=lambda d_model, d_head: d_head**2),
    ),
    Mistake(
        "Your heads are slices of *rows*, `Q[h*d_head:(h+1)*d_head]`: each head gets a few "
        "tokens with all their features, and the tokens no longer see each other across "
        "heads. In Q, a row is a token and a column is a feature: which axis should the "
        "heads cut?",
        _heads_over_tokens,
    ),
    Mistake(
        "Each of your heads projects only its own columns of X with one diagonal block of "
        "the weights, like `X[:, s] @ W_Q[s, s]`. The heads split Q = X W_Q, not X: every "
        "column of Q mixes all d_model features of X. Which columns of W_Q does head h "
        "need, and which rows?",
        _diagonal_blocks,
    ),
    Mistake(
        "Your heads are right, but each one goes through its own diagonal block of W_O, "
        "like `head_h @ W_O[s, s]`, and fills only its own columns of the output. W_O "
        "multiplies the merged heads as a whole, so every output column can mix every "
        "head. Which rows of W_O meet head h's output, and which columns of the output can "
        "it reach?",
        _output_blocks,
    ),
    Mistake(
        "Each of your heads uses only diagonal blocks of the weights: its own columns of X "
        "with `W_Q[s, s]` (and W_K, W_V), and `W_O[s, s]` for its output. Only the columns "
        "of Q, K and V are split into heads: every column of Q = X W_Q mixes all d_model "
        "features of X, and W_O mixes all heads into every output column. Which rows and "
        "columns of each W does head h need?",
        lambda *args: _output_blocks(*args, input_blocks=True),
    ),
    Mistake(
        "You made d_head heads of n_heads columns each: n_heads and d_head are swapped. "
        "With d_model = n_heads × d_head, which of the two counts the heads, and which is "
        "each head's width?",
        _wrong(split=lambda M, n_heads: _split(M, M.shape[-1] // n_heads)),
    ),
    Mistake(
        "Your result is the right one divided by n_heads: you averaged the heads' "
        "contributions. Putting the heads side by side and multiplying by W_O *adds* what "
        "each head's block of rows of W_O makes of it. Do the heads share one output, or "
        "does each keep its own columns until W_O?",
        _heads_averaged,
    ),
    Mistake(
        "You projected X with W_Q, W_K and W_V transposed. Every W in this course "
        "multiplies from the right, as in Q = X W_Q: which way round do they go?",
        _wrong(inputs=lambda W: W.T),
    ),
    Mistake(
        "You split the heads by reshaping Q straight to (n_heads, n, d_head), and merged "
        "them the same way. A reshape keeps the numbers in memory order, row after row of Q, "
        "so each 'head' mixes pieces of different tokens. Which shape keeps each token's row "
        "whole while cutting it into heads, and how do you then bring the head axis to the "
        "front?",
        _wrong(split=_split_no_transpose, merge=_merge_no_transpose),
    ),
    Mistake(
        "You split the heads by reshaping Q straight to (n_heads, n, d_head). A reshape "
        "keeps the numbers in memory order, row after row of Q, so each 'head' mixes pieces "
        "of different tokens. Which shape keeps each token's row whole while cutting it "
        "into heads?",
        _wrong(split=_split_no_transpose),
    ),
    Mistake(
        "Your heads are right, but you merged them by reshaping (n_heads, n, d_head) "
        "straight to (n, d_model). A reshape keeps memory order, so the rows get mixed up "
        "across tokens. Which axis must come first before the heads can sit side by side "
        "in one token's row?",
        _wrong(merge=_merge_no_transpose),
    ),
    Mistake(
        "Your heads take every n_heads-th column (columns h, h + n_heads, …). " + _HEAD_COLUMNS,
        _wrong(split=_split_strided, merge=_merge_strided),
    ),
    Mistake(
        "Inside each head, your softmax runs down the columns, over the queries. Whose "
        "weights must sum to 1: one query's over the keys, or one key's over the queries?",
        _wrong(weights=_softmax_each_column),
    ),
    Mistake(
        "Each of your heads takes one softmax over all its n × n scores, so all n² weights "
        "of a head sum to 1 together. Which weights must sum to 1: all of a head's, or one "
        "query's over the keys?",
        _wrong(weights=_softmax_whole_head),
    ),
    Mistake(
        "Your weights are those of the transposed scores: query i's row holds what key i "
        "scores against every query, as if Q and K had swapped places (W_Q and W_K "
        "swapped, or K Qᵀ for Q Kᵀ). Which of Q and K stands on the left of the scores, "
        "so that each row belongs to one query?",
        lambda X, W_Q, W_K, W_V, W_O, n_heads: _wrong()(X, W_K, W_Q, W_V, W_O, n_heads),
    ),
    Mistake(_CAUSAL_BY_HABIT, _wrong(weights=_softmax_causal)),
    Mistake(
        "You multiplied by W_O transposed. Every W in this course multiplies from the "
        "right, as in X W_Q: which way round does W_O go?",
        _wrong(project=lambda heads, W_O: heads @ W_O.T),
    ),
)

# ------------------------------------------------------ grouped_query_attention


def gqa_cases() -> list[Case]:
    rng = np.random.default_rng(616)

    def case(label, lead, n_heads, n_kv_heads, n_q, n_k, d_k, d_v):
        return Case(
            label,
            {
                "Q": readable(rng, *lead, n_heads, n_q, d_k),
                "K": readable(rng, *lead, n_kv_heads, n_k, d_k),
                "V": readable(rng, *lead, n_kv_heads, n_k, d_v),
            },
        )

    return [
        # No batch axis first: a loop that indexes Q[h] is right here and fails only on
        # the batched inputs, where the index hint below can say why.
        case("no batch axis; 6 query heads share 2 key/value heads, in groups of 3; "
             "3 tokens, d_k = 2, d_v = 3", (), 6, 2, 3, 3, 2, 3),
        case("2 sequences; 4 query heads share 2 key/value heads; 4 tokens, d_k = 3, "
             "d_v = 2", (2,), 4, 2, 4, 4, 3, 2),
        case("multi-query: 4 query heads share 1 key/value head; 1 new query, 5 keys",
             (), 4, 1, 1, 5, 3, 2),
        case("multi-head: 3 query heads, each with its own key/value head; 2 queries, 4 keys",
             (), 3, 3, 2, 4, 2, 2),
        case("2 × 2 sequences (two batch axes); 6 query heads share 2 key/value heads; "
             "3 tokens", (2, 2), 6, 2, 3, 3, 2, 2),
    ]  # fmt: skip


def _gqa_wrong(*, arrange="repeat", divisor=None, weights=softmax_rows):
    """Grouped-query attention with one slip: how the key/value heads are lined up with
    the query heads (``arrange``), the scale, or the softmax."""

    def compute(Q, K, V):
        H, H_kv = Q.shape[-3], K.shape[-3]
        group = H // H_kv
        if arrange == "shared_queries":  # the queries of each group averaged, like K and V
            *lead, _, n_q, d_k = Q.shape
            mean = Q.reshape(*lead, H_kv, group, n_q, d_k).mean(axis=-3, keepdims=True)
            Q = np.broadcast_to(mean, (*lead, H_kv, group, n_q, d_k)).reshape(Q.shape)
        if arrange == "tile":  # copies of all heads one after another: 0, 1, 0, 1, …
            K, V = (np.concatenate([A] * group, axis=-3) for A in (K, V))
        elif arrange == "first":  # every query head reads head 0
            K, V = K[..., :1, :, :], V[..., :1, :, :]
        elif arrange == "mean":  # the key/value heads averaged into one
            K, V = K.mean(axis=-3, keepdims=True), V.mean(axis=-3, keepdims=True)
        else:
            K, V = np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3)
        d = Q.shape[-1] if divisor is None else divisor(Q, V)
        out = weights(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)) @ V
        if arrange == "mean_queries":  # one output per group: its query heads averaged
            *lead, _, n_q, d_v = out.shape
            out = out.reshape(*lead, H_kv, group, n_q, d_v).mean(axis=-3)
        return out

    return compute


def _softmax_over_queries(S):
    return softmax_along(S, -2)


def _heads_first(Q, K, V):
    return np.moveaxis(_gqa_wrong()(Q, K, V), -3, 0)


GQA_MISTAKES = (
    Mistake(
        "Your query head h reads key/value head h mod H_kv: the copies of the key/value heads "
        "come in the order 0, 1, 0, 1, …, as `np.tile` or joining copies of K end to end "
        "arranges them. The convention here, as in Llama and PyTorch's `enable_gqa`, makes "
        "each group a run of *neighbouring* query heads: with groups of g = H/H_kv, which "
        "key/value head should query heads 0 … g − 1 read, and which the next g?",
        _gqa_wrong(arrange="tile"),
    ),
    Mistake(
        "Every query head reads key/value head 0, so the other key/value heads are never "
        "used. That is multi-query attention, right only when H_kv = 1. How many query heads "
        "should share each of the H_kv key/value heads?",
        _gqa_wrong(arrange="first"),
    ),
    Mistake(
        "You averaged the key/value heads into one and let every query head read the "
        "average. The heads are not blended: each key/value head stays whole and serves its "
        "own group of query heads. Which query heads belong to key/value head 1?",
        _gqa_wrong(arrange="mean"),
    ),
    Mistake(
        "You returned one output per key/value head, the average of its group's query "
        "heads. Every query head keeps its own output, even though it shares its keys and "
        "values: how many heads should the result have?",
        _gqa_wrong(arrange="mean_queries"),
    ),
    Mistake(
        "The query heads of each group all give the same output, as if they shared one "
        "query: the average of the group's queries. Only the keys and values are shared; "
        "each query head keeps its own queries. Which queries should query head h score "
        "against its group's keys?",
        _gqa_wrong(arrange="shared_queries"),
    ),
    Mistake(
        "Your scores are not scaled. Each query head still compares d_k-long vectors, so "
        "what do its scores need before the softmax?",
        _gqa_wrong(divisor=lambda Q, V: 1.0),
    ),
    Mistake(
        "Your scores are divided by d_k, √d_k twice: once by your code and once more inside "
        "`attention`, which divides by the square root of its inputs' last axis itself. If "
        "you call `attention`, what should you hand it: scaled or raw Q and K?",
        _gqa_wrong(divisor=lambda Q, V: Q.shape[-1] ** 2),
    ),
    Mistake(
        "You scaled by √d_v, the width of the values. The scores are dot products of a query "
        "with a key: how many terms does each of those sums have?",
        _gqa_wrong(divisor=lambda Q, V: V.shape[-1]),
    ),
    Mistake(_CAUSAL_BY_HABIT, _gqa_wrong(weights=_softmax_causal)),
    Mistake(
        "Your softmax runs over the queries (axis −2), so each column of weights sums to 1. "
        "Which weights should sum to 1: those one query gives the keys, or those one key "
        "receives?",
        _gqa_wrong(weights=_softmax_over_queries),
    ),
    Mistake(
        "Your head axis came out first, in front of the batch axis. Where does Q keep its "
        "heads, and where should the result keep them?",
        _heads_first,
    ),
)


def _heads_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Which query heads are right: names the first wrong one, so that the learner can
    trace which key/value head their code gave it."""
    if got.shape != want.shape or got.ndim < 3:
        return None
    H, H_kv = inputs["Q"].shape[-3], inputs["K"].shape[-3]
    right = [matches(np.take(got, h, axis=-3), np.take(want, h, axis=-3)) for h in range(H)]
    if all(right) or not any(right):
        return None
    wrong = right.index(False)
    correct = [h for h in range(H) if right[h]]
    if len(correct) == 1:
        start = f"Query head {correct[0]} is right, but head {wrong} is not."
    else:
        start = f"Query heads {', '.join(map(str, correct))} are right, but head {wrong} is not."
    theirs = np.take(got, wrong, axis=-3)
    # An output copied from another head: the keys are not the problem, the queries are.
    copied = [h for h in range(H) if h != wrong and matches(theirs, np.take(want, h, axis=-3))]
    if copied:
        return (
            f"{start} Head {wrong} returns the output that head {copied[0]} should return: "
            f"does each query head use its own queries, and is each head's own output what "
            f"ends up in its place?"
        )
    return (
        f"{start} With {H} query heads sharing {H_kv} key/value heads in groups of "
        f"{H // H_kv}, which key/value head should head {wrong} read, and which one does "
        f"your code give it?"
    )


def _kv_heads_read(got: np.ndarray, inputs: dict[str, Any]) -> list[int | None]:
    """For each query head h, the key/value head k whose plain attention
    ``attention(Q_h, K_k, V_k)`` gives the learner's output for h; None if none does."""
    Q, K, V = inputs["Q"], inputs["K"], inputs["V"]
    read: list[int | None] = []
    for h in range(Q.shape[-3]):
        theirs = np.take(got, [h], axis=-3)
        q = np.take(Q, [h], axis=-3)
        found = []
        for k in range(K.shape[-3]):
            k_h, v_h = np.take(K, [k], axis=-3), np.take(V, [k], axis=-3)
            if matches(theirs, np.asarray(grouped_query_attention(q, k_h, v_h))):
                found.append(k)
        read.append(found[0] if len(found) == 1 else None)
    return read


def _none_right_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Every query head reads one whole key/value head, but none reads its own: names the
    heads they read (not the ones they should), e.g. groups in reverse order."""
    if got.shape != want.shape or got.ndim < 3:
        return None
    H, H_kv = inputs["Q"].shape[-3], inputs["K"].shape[-3]
    if any(matches(np.take(got, h, axis=-3), np.take(want, h, axis=-3)) for h in range(H)):
        return None
    read = _kv_heads_read(got, inputs)
    if None in read:
        return None
    return (
        f"None of your query heads reads the right key/value head, though each reads one "
        f"whole key/value head: your query heads 0 … {H - 1} read key/value heads "
        f"{', '.join(str(k) for k in read)}. With {H} query heads sharing {H_kv} key/value "
        f"heads in groups of {H // H_kv} neighbours, which key/value head should query head 0 "
        f"read, and which should the last one read?"
    )


def _first_wrong_head_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """For an answer no named slip or head hint explains: the first wrong query head's
    output, expected and returned, so that the learner has numbers to compare (the
    exercise prints no whole arrays)."""
    if got.shape != want.shape or got.ndim < 3 or not np.isfinite(got.astype(float)).all():
        return None
    H = inputs["Q"].shape[-3]
    every = not any(matches(np.take(got, h, axis=-3), np.take(want, h, axis=-3)) for h in range(H))
    wrong = [i for i in np.ndindex(*got.shape[:-2]) if not matches(got[i], want[i])]
    if not wrong:
        return None
    index = wrong[0]
    *lead, h = index
    where = f"query head {h}"
    if lead:  # the batch axes in front of the heads
        where += f" of sequence {lead[0] if len(lead) == 1 else tuple(lead)}"
    return (
        f"Your `grouped_query_attention` returns the right shape but different numbers"
        f"{', in every query head' if every else ''}. For {where}, the output should be\n"
        f"{array_block(want[index])}\nand yours is\n{array_block(got[index])}\n"
        f"Check, for that head: which key/value head does it read, what are "
        f"its scores divided by, and which keys may each query read?"
    )


# --------------------------------------------------------------- kv_cache_bytes


def kv_cases() -> list[Case]:
    def case(label, n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
        return Case(
            label,
            {
                "n_layers": n_layers,
                "n_tokens": n_tokens,
                "n_heads": n_heads,
                "n_kv_heads": n_kv_heads,
                "d_head": d_head,
                "bytes_per_number": bytes_per_number,
            },
        )

    return [
        case(
            "grouped-query: 32 layers, 4096 tokens, 32 query heads sharing 8 key/value "
            "heads, d_head = 128, float32 (4 bytes)",
            32,
            4096,
            32,
            8,
            128,
            4,
        ),  # fmt: skip
        case(
            "multi-query: 6 layers, 100 tokens, 12 query heads sharing 1 key/value head, "
            "d_head = 64, float16 (2 bytes)",
            6,
            100,
            12,
            1,
            64,
            2,
        ),  # fmt: skip
        case(
            "multi-head: 3 layers, 10 tokens, 4 query heads with 4 key/value heads, "
            "d_head = 8, 1 byte",
            3,
            10,
            4,
            4,
            8,
            1,
        ),  # fmt: skip
    ]


_UNITS = (
    (2, 10, "KiB"),
    (2, 20, "MiB"),
    (2, 30, "GiB"),
    (10, 3, "kB"),
    (10, 6, "MB"),
    (10, 9, "GB"),
)


def _unit_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """A count returned in KiB, MiB, GiB (powers of 2) or kB, MB, GB (powers of 10) rather
    than in bytes: the ratio says which."""
    if got.shape != () or not np.isfinite(got.astype(np.float64)) or float(want) == 0:
        return None
    ratio = float(got) / float(want)
    for base, power, unit in _UNITS:
        if abs(ratio * base**power - 1) < 1e-3:
            return (
                f"Your number is {base}⁻{str(power).translate(_SUPERSCRIPT)} of the right "
                f"one: did you convert to {unit}? The function returns bytes; leave the units "
                f"to the cell that prints them."
            )
    return None


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")

_RATIO_HINT = ratio_hint(
    "Count a key vector and a value vector of d_head numbers for every token, every "
    "key/value head and every layer, then multiply by the bytes per number."
)


KV_MISTAKES = (
    Mistake(
        "Your count is half the right one. What two vectors does the cache keep for every "
        "token, key/value head and layer?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "You counted the query heads, n_heads. With grouped- or multi-query attention, "
        "several query heads read the same cached key/value head: how many heads' keys "
        "and values are stored?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            2 * n_layers * n_tokens * n_heads * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "You used the group size H/H_kv, the number of query heads that share one "
        "key/value head. How many key/value heads have their vectors cached?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            2 * n_layers * n_tokens * (n_heads // n_kv_heads) * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "You multiplied by both n_heads and n_kv_heads. Several query heads read each "
        "cached key/value head, but it is stored only once: which of the two counts the "
        "heads whose keys and values are stored?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            2 * n_layers * n_tokens * n_heads * n_kv_heads * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "You cached the queries too. A query is used once, by its own token, at its own "
        "step: does a later token ever need it?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            (2 * n_kv_heads + n_heads) * n_layers * n_tokens * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "Your count is 1.5 times the right one: three vectors per token, a query, a key and "
        "a value? Queries are not cached: each is used once, when its token arrives "
        "(Section 3). Which two vectors per token does the cache keep?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            3 * n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "You counted one layer. Does every layer have keys and values of its own?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            2 * n_tokens * n_kv_heads * d_head * bytes_per_number
        ),
    ),
    Mistake(
        "You counted numbers, not bytes. How many bytes does each number take?",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            2 * n_layers * n_tokens * n_kv_heads * d_head
        ),
    ),
    Mistake(
        "Your count is 8 times too big: bits, not bytes? bytes_per_number is already in bytes.",
        lambda n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number: (
            16 * n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number
        ),
    ),
)


def kv_cache_bytes(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
    """The reference: ``2 · layers · tokens · H_kv · d_head · bytes``; n_heads plays no part."""
    return 2 * n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number


# ---------------------------------------------------------- padding_causal_mask


def mask_cases() -> list[Case]:
    return [
        Case(
            "3 sequences of lengths 3, 1 and 4, padded to n = 4",
            {"lengths": np.array([3, 1, 4]), "n": 4},
        ),  # fmt: skip
        Case(
            "2 sequences of lengths 2 and 5, padded to n = 5", {"lengths": np.array([2, 5]), "n": 5}
        ),  # fmt: skip
        Case("1 sequence of length 1, padded to n = 3", {"lengths": np.array([1]), "n": 3}),
    ]


def _real_keys(lengths, n):
    return np.arange(n)[None, :] < np.asarray(lengths)[:, None]


def _causal(n):
    return np.tril(np.ones((n, n), dtype=bool))


MASK_MISTAKES = (
    Mistake(
        "You combined the two masks with OR, so a padding key in the past, or a future real "
        "key, gets through. How many of the two tests must a key pass?",
        lambda lengths, n: _real_keys(lengths, n)[:, None, :] | _causal(n),
    ),
    Mistake(
        "Your mask blocks the padding queries' rows (they are all False), which the "
        "exercise keeps: padding queries keep their causal rows, and their outputs are "
        "ignored later. Padding says which *keys* are real, so it acts on columns; with a "
        "causal mask as well, which rows does it change at all?",
        lambda lengths, n: _real_keys(lengths, n)[:, :, None] & _causal(n),
    ),
    Mistake(
        "Your padding mask lets one padding key through. Positions are counted from 0: "
        "which positions does a sequence of length L fill?",
        lambda lengths, n: (
            (np.arange(n)[None, :] <= np.asarray(lengths)[:, None])[:, None, :] & _causal(n)
        ),
    ),
    Mistake(
        "Your causal triangle is the wrong way round: each query sees the keys after it. "
        "Is key 0 in query 0's past or in its future?",
        lambda lengths, n: _real_keys(lengths, n)[:, None, :] & _causal(n).T,
    ),
    Mistake(
        "Your causal part leaves out the diagonal, so no token sees itself and the first "
        "query has no key at all. May a token attend to itself?",
        lambda lengths, n: _real_keys(lengths, n)[:, None, :] & np.tri(n, k=-1, dtype=bool),
    ),
    Mistake(
        "Your causal part reaches one diagonal too far: each query also sees the key just "
        "after it, as `np.tri(n, k=1)` or `np.tril(…, k=1)` gives (a sequence of length 1 "
        "hides it: its only real key is key 0). Is key i + 1 in query i's past?",
        lambda lengths, n: _real_keys(lengths, n)[:, None, :] & np.tri(n, k=1, dtype=bool),
    ),
    Mistake(
        "Your mask is True where a query may *not* attend: the opposite convention, the one "
        "PyTorch's nn.MultiheadAttention uses for a bool mask. In this course, and in "
        "F.scaled_dot_product_attention, True means *may attend*. What does one `~` do?",
        lambda lengths, n: ~(_real_keys(lengths, n)[:, None, :] & _causal(n)),
    ),
    Mistake(
        "Your padding mask drops the last real token of each sequence. A sequence of length "
        "L fills positions 0 … L − 1: is position L − 1 real?",
        lambda lengths, n: _real_keys(np.asarray(lengths) - 1, n)[:, None, :] & _causal(n),
    ),
    Mistake(
        "Your mask has the padding but not the causal part, so queries see later keys. "
        "Which second test must every key pass?",
        lambda lengths, n: np.broadcast_to(
            _real_keys(lengths, n)[:, None, :], (len(lengths), n, n)
        ).copy(),
    ),
    Mistake(
        "Your mask has the causal part but not the padding, so padding keys get through. "
        "Which keys of sequence b are real tokens?",
        lambda lengths, n: np.broadcast_to(_causal(n), (len(lengths), n, n)).copy(),
    ),
    Mistake(
        "Your mask puts the padding at the start (left padding): it treats the last L "
        "positions as the real tokens. In this exercise the padding comes at the end: which "
        "positions does a sequence of length L fill?",
        lambda lengths, n: (
            (np.arange(n)[None, :] >= n - np.asarray(lengths)[:, None])[:, None, :] & _causal(n)
        ),
    ),
    Mistake(
        "Your causal part lets only the future through: query i sees the keys after it and "
        "not the ones before it or itself. Which keys may query i see, j < i, j ≤ i or j > i?",
        lambda lengths, n: _real_keys(lengths, n)[:, None, :] & ~_causal(n),
    ),
)


def _sequence_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Some sequences' masks right, others not: names a right one and the first wrong one
    with their lengths, and the length whose mask the wrong one is, if it is one."""
    if got.shape != want.shape or got.ndim != 3:
        return None
    lengths, n = np.asarray(inputs["lengths"]), inputs["n"]
    right = [np.array_equal(got[b], want[b]) for b in range(len(lengths))]
    if all(right) or not any(right):
        return None
    good, bad = right.index(True), right.index(False)
    message = (
        f"Your mask is right for sequence {good} (length {lengths[good]}) but not for "
        f"sequence {bad} (length {lengths[bad]})."
    )
    for length in range(1, n + 1):
        if np.array_equal(got[bad], padding_causal_mask(np.array([length]), n)[0]):
            owners = [str(b) for b in range(len(lengths)) if lengths[b] == length]
            whose = f", the length of sequence {owners[0]}" if owners else ""
            return (
                f"{message} Its mask is the right one for length {length}{whose}. Does each "
                f"sequence b use its own length, lengths[b]?"
            )
    return f"{message} Compare your mask for sequence {bad} with the expected one below."


_AND_HINT = (
    "Python's `and` asks one array for a single True or False, which it cannot give. "
    "Use & for element-wise AND: `a & b` compares the two arrays entry by entry."
)


def _additive_mask(values: np.ndarray) -> None:
    """A mask of 0 and −inf (or a huge negative number): the additive convention."""
    if values.dtype.kind == "f" and 0 in values and values.min() < -1e3 and values.max() <= 0:
        raise Fail(
            "Your mask holds 0 and a large negative number (such as −inf): an additive mask, "
            "the kind some libraries add to the scores before the softmax, 0 where a query "
            "may attend and −inf where it may not. This exercise asks for a bool mask, True "
            "where query i may attend to key j. Which comparison turns your 0s into True?"
        )


_AS_BOOL_MASK = bool_mask(
    "`&` means AND only on booleans. Comparisons such as `j < length` give booleans directly.",
    other_forms=_additive_mask,
)


def _transposed_all_axes(message: str, inputs: dict[str, Any]) -> bool:
    """The answer stopped on a matrix product in a line that uses ``.T``."""
    line = re.search(r"at `([^`]*)`", message)
    return (
        "matmul" in message and line is not None and re.search(r"\.T\b", line.group(1)) is not None
    )


_DOT_T_HINT = (
    "The line it stopped on uses `.T`. On an array with more than two axes, `.T` reverses "
    "*all* of them (lesson 05): a (heads, n, d_head) array comes out as (d_head, n, heads). "
    "Which two axes do you want to swap for the scores, and how can you swap only those "
    "(Section 1 does it)?"
)
_DOT_T = ((_transposed_all_axes, _DOT_T_HINT),)
_GQA_DOT_T = (
    (
        _transposed_all_axes,
        _DOT_T_HINT + " (If you loop over the heads: they are on axis −3, behind any batch "
        "axes, so `Q[h]` picks a sequence when there is a batch.)",
    ),
)


def _values_not_lined_up(message: str, inputs: dict[str, Any]) -> bool:
    """The keys were lined up with the query heads but the values were not: `attention`
    names Q and K with the same leading axes and V with others, or the answer stopped on
    a product ``… @ V`` that does not broadcast."""
    shapes = re.search(r"Q \(([^)]*)\), K \(([^)]*)\), V \(([^)]*)\)", message)
    if shapes is not None:
        q, k, v = (tuple(part.split(",")[:-2]) for part in shapes.groups())
        return q == k != v
    line = re.search(r"at `([^`]*)`", message)
    return (
        "broadcast" in message
        and line is not None
        and re.search(r"@\s*V\b", line.group(1)) is not None
    )


_GQA_ERRORS = (
    *_GQA_DOT_T,
    (
        _values_not_lined_up,
        "Your keys reach every query head, but your values still have only H_kv heads. The "
        "weights of query head h must meet the values of the same key/value head its keys "
        "came from: what do V's heads need that you gave K's?",
    ),
)

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
        hints=(_several_heads_hint,),
        error_hints=_DOT_T,
        shape_hint=(
            "X is (n, d_model). What shape is one head's Q, K and V, and one head's "
            "output? And side by side, before and after W_O?"
        ),
        shown_inputs=("X", "n_heads"),
    ),
)
register(
    LESSON,
    solutions.grouped_query_attention,
    "grouped_query_attention(Q, K, V) -> (..., H, n_q, d_v); query head h reads key/value "
    "head h // (H / H_kv)",
    ArrayCheck(
        gqa_cases,
        reference=grouped_query_attention,
        shape_rule="one output per query head, (..., H, n_q, d_v), like Q with d_v columns",
        mistakes=GQA_MISTAKES,
        hints=(_heads_hint, _none_right_hint, _first_wrong_head_hint),
        error_hints=_GQA_ERRORS,
        shape_hint=(
            "Two things must line up: Q's last axis with K's (d_k, for the scores), and the "
            "head axes, −3. NumPy stretches an axis only when it has length 1, so with "
            "1 < H_kv < H the H_kv key/value heads cannot meet the H query heads by "
            "themselves. Which of the two does the error name? For the heads: how "
            "many copies of each key/value head do you need, and along which axis? (If you "
            "loop over the heads: they are on axis −3, behind any batch axes, so `Q[h]` "
            "picks a sequence when there is a batch.)"
        ),
        index_hint=(
            "An index past the end of an axis. If you loop over the heads: the heads are on "
            "axis −3, behind any batch axes, so `Q[h]` picks a sequence when there is a "
            "batch: how do you index axis −3 whatever stands in front of it? And how many "
            "query heads share each key/value head, so which one does query head H − 1 read?"
        ),
        # The head axis is what this exercise is about; the numbers are too many to read,
        # and the hint names the first wrong head.
        shown_inputs=(),
        show_expected=False,
        show_returned=False,
    ),
)
register(
    LESSON,
    solutions.kv_cache_bytes,
    "kv_cache_bytes(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number) "
    "-> bytes of the key/value cache",
    ArrayCheck(
        kv_cases,
        reference=kv_cache_bytes,
        shape_rule="one number of bytes, not an array",
        mistakes=KV_MISTAKES,
        hints=(_unit_hint, _RATIO_HINT),
        exact=True,  # a count of bytes: n_tokens ± 1 must not pass
        # All six arguments, even those the label names, so the call can be retyped.
        shown_inputs=(
            "n_layers",
            "n_tokens",
            "n_heads",
            "n_kv_heads",
            "d_head",
            "bytes_per_number",
        ),  # fmt: skip
    ),
)
register(
    LESSON,
    solutions.padding_causal_mask,
    "padding_causal_mask(lengths, n) -> bool (batch, n, n), True where key j < lengths[b] "
    "and j ≤ query i",
    ArrayCheck(
        mask_cases,
        reference=padding_causal_mask,
        shape_rule="one (n, n) mask per sequence: (batch, n, n)",
        mistakes=MASK_MISTAKES,
        hints=(_sequence_hint,),
        prepare=_AS_BOOL_MASK,
        error_hints=((lambda message, inputs: "truth value of an array" in message, _AND_HINT),),
        shape_hint=(
            "lengths is (batch,) and the positions 0 … n − 1 are (n,). Which shapes make a "
            "comparison of the two broadcast to (batch, n), and what axis does that need "
            "before `&` with the (n, n) causal mask?"
        ),
    ),
)
