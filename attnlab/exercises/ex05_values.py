"""Exercises ``attention`` and ``masked_attention``, softmax(Q Kᵀ / √d_k) V,
``output_change``: Z = A V is linear in V, so adding δ to value row j adds A_ij δ to
output row i, through column j of A, ``scores_for``: scores whose softmax weights mix
the value rows into a given point of their hull, and ``attention_by_hand``: one query's
output, stage by stage, as one number.

Lesson: ``notebooks/05_values.ipynb``.
"""

import re
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._inputs import EXP_LIMIT
from ..attention import attention
from ..lessons.values import output_change, scores_for
from ..softmax import softmax as course_softmax
from . import solutions
from .arrays import (
    ArrayCheck,
    Case,
    Mistake,
    matches,
    overflow_hint,
    readable,
    softmax_along,
    softmax_rows,
    softmax_unnormalised,
    softmax_unshifted,
)
from .calling import COURSE_SPY, TimeLimitExceeded, run_with_time_limit, silenced
from .messages import CheckResult, Fail, array_block
from .numbers import NumberCheck, Slip
from .registry import register

LESSON = "notebooks/05_values.ipynb"

_SHAPES = (
    "Q is (n_q, d_k), K is (n_k, d_k) and V is (n_k, d_v). Write down the shape of each "
    "step: which product of Q and K gives one score per (query, key) pair, (n_q, n_k), and "
    "which product of the weights and V gives (n_q, d_v)?"
)


_UNNORMALISED = (
    "Your weights are the exponentials alone, so each query's weights don't sum to 1. What "
    "does a softmax divide each exponential by?"
)


def _scaled(Q, K, divisor=None):
    # swapaxes, not .T: the mistakes are computed on batched inputs too
    keys_t = np.swapaxes(K, -1, -2)
    return Q @ keys_t / (np.sqrt(Q.shape[-1]) if divisor is None else divisor)


def blocked_to_minus_inf(S: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The scores with the keys a bool mask blocks set to -inf (nothing when mask is None)."""
    return S if mask is None else np.where(mask, S, -np.inf)


_SHAPES_IN_ERROR = re.compile(r"\(([\d, ]*)\)")


def _error_shapes(message: str) -> list[tuple[int, ...]]:
    """The shapes NumPy names in a broadcast error, e.g. (2,4) (2,) → [(2, 4), (2,)].

    Only NumPy's own text counts: the checker's " on line …" and " when called with Q of
    shape …" that follow it name the inputs' shapes, which must not be read as the error's.
    """
    if "broadcast" not in message:
        return []
    for marker in (" on line ", " when called with ", " at "):
        message = message.split(marker, 1)[0]
    found = _SHAPES_IN_ERROR.findall(message)
    return [tuple(int(n) for n in shape.split(",") if n.strip()) for shape in found]


def _row_total_without_keepdims(message: str, inputs: dict[str, Any]) -> bool:
    shapes = _error_shapes(message)
    return any(len(a) >= 2 and b == a[:-1] for a in shapes for b in shapes)


def _dot_on_batches(message: str, inputs: dict[str, Any]) -> bool:
    """np.dot(Q, Kᵀ) on batched arrays: scores of shape Q.shape[:-1] + K.shape[:-2] + (n_k,)."""
    Q, K = inputs.get("Q"), inputs.get("K")
    if Q is None or K is None or Q.ndim < 3:
        return False
    return Q.shape[:-1] + K.shape[:-2] + K.shape[-2:-1] in _error_shapes(message)


_DOT_ON_BATCHES = (
    "One shape in that error has more axes than Q: the scores of `np.dot`, which on arrays "
    "with more than two axes is not a batched product: it pairs every sequence with every "
    "other. Which product in Section 6 acts on the last two axes only, batch by batch?"
)


def _mask_transposed(message: str, inputs: dict[str, Any]) -> bool:
    mask = inputs.get("mask")
    if mask is None or mask.shape[0] == mask.shape[1]:
        return False
    return mask.T.shape in _error_shapes(message)


def _keepdims(axes: str) -> str:
    return (
        f"The two shapes in that error are the scores, ({axes}n_q, n_k), and one number per "
        f"row, ({axes}n_q,): `max` and `sum` over the last axis drop that axis, and "
        "broadcasting lines shapes up from the right, so the row totals meet the keys' axis "
        "instead of their rows. Which argument of `max` and `sum` keeps the reduced axis, "
        "with length 1?"
    )


_LEADING_AXES = (
    "Your code seems to assume two leading axes, a batch and a head, as Section 6's loops "
    "do: on a 2-D Q, `Q[b, h]` is a single number. It must work with none, one or two "
    "leading axes. Which operations act on the last two axes whatever comes in front?"
)
# A fixed number of axes, from unpacking `Q.shape` or from an einsum without `...`: Python
# and NumPy say only "values to unpack" or "subscripts", not which assumption failed.
_MORE_AXES_ASSUMED = (
    "Your code counts on more axes than these inputs have: unpacking `Q.shape` into a fixed "
    "list of names, or an einsum with one letter per axis, fits only one number of axes. Q, "
    "K and V may come with none, one or two leading batch and head axes. Which index of "
    "`Q.shape` gives d_k whatever comes in front? (In an einsum, `...` stands for any "
    "leading axes.)"
)
_FEWER_AXES_ASSUMED = (
    "Your code counts on fewer axes than these inputs have: unpacking `Q.shape` into a fixed "
    "list of names, or an einsum with one letter per axis, fits only one number of axes. "
    "Here Q, K and V have batch or head axes in front, as in Section 6, and the same code "
    "must work without them too. Which index of `Q.shape` gives d_k whatever comes in "
    "front? (In an einsum, `...` stands for any leading axes.)"
)
_UNPACK = re.compile(r"(not enough|too many) values to unpack \(expected (\d+)")


def _shape_unpacked(fewer: bool):
    """Whether the error is unpacking Q's shape into the wrong number of names: more names
    than Q has axes (``fewer=False``) or fewer (``fewer=True``)."""

    def fits(message: str, inputs: dict[str, Any]) -> bool:
        found = _UNPACK.search(message)
        Q = inputs.get("Q")
        if found is None or Q is None:
            return False
        expected = int(found.group(2))
        return expected < Q.ndim if fewer else expected > Q.ndim

    return fits


# A transposed mask stops on the first test input, whose mask is not square: that error
# is where it gets named.
_TRANSPOSED_MASK = (
    "Your mask is transposed: `mask` is already (n_q, n_k), one row per query, like the "
    "scores. Which way round must it be to line up with S?"
)


def _attention_cases(seed: int, with_mask: bool) -> list[Case]:
    rng = np.random.default_rng(seed)
    shapes = [
        ("Q (2×3), K (4×3), V (4×5): 2 queries, 4 keys, d_k = 3, d_v = 5", 2, 4, 3, 5),
        ("Q (4×2), K (3×2), V (3×6): more queries than keys", 4, 3, 2, 6),
        ("Q (3×2), K (3×2), V (3×4): as many queries as keys", 3, 3, 2, 4),
    ]
    masks = [
        np.array([[1, 0, 1, 0], [0, 0, 1, 1]], dtype=bool),
        np.array([[1, 1, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=bool),
        np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=bool),
    ]
    cases = []
    for (label, n_q, n_k, d_k, d_v), mask in zip(shapes, masks, strict=True):
        inputs = {"Q": readable(rng, n_q, d_k), "K": readable(rng, n_k, d_k)}
        inputs["V"] = readable(rng, n_k, d_v)
        if with_mask:
            inputs["mask"] = mask
        cases.append(Case(label, inputs))
    # Scaled scores up to ±3200 overflow a plain exp. Entries are multiples of 10 and d_k = 4,
    # so the scaled scores are exact even in float32.
    Q = 10.0 * rng.integers(-4, 5, size=(3, 4))
    K = 10.0 * rng.integers(-4, 5, size=(5, 4))
    K[2] = [40.0, -40.0, 40.0, 40.0]
    Q[0] = K[2]
    big = {"Q": Q, "K": K, "V": readable(rng, 5, 2)}
    if with_mask:
        big["mask"] = np.array([[1, 0, 1, 1, 0], [0, 1, 0, 1, 1], [1, 1, 1, 0, 0]], dtype=bool)
    top = float(np.abs(Q @ K.T).max() / np.sqrt(Q.shape[1]))
    cases.append(Case(f"large scores, up to {top:g} after scaling: Q (3×4), K (5×4), V (5×2)", big))
    return cases


def attention_cases() -> list[Case]:
    return _attention_cases(505, with_mask=False)


def masked_attention_cases() -> list[Case]:
    # Every row of every mask allows some keys and blocks some, so an ignored or
    # inverted mask always changes the result. The last two cases carry batch and head
    # axes in front, as Section 6 does, with one (n_q, n_k) mask shared by all of them;
    # there `K.T` reverses every axis, where only the last two must swap.
    cases = _attention_cases(515, with_mask=True)
    rng = np.random.default_rng(525)
    single = {
        "Q": readable(rng, 1, 3),
        "K": readable(rng, 4, 3),
        "V": readable(rng, 4, 2),
        "mask": np.array([[1, 0, 1, 1]], dtype=bool),
    }
    cases.append(Case("a single query: Q (1×3), K (4×3), V (4×2)", single))
    # Query 0's allowed scaled scores are -3200 and -3000, far below any finite stand-in for -inf
    # (-10, -100): a blocked key given such a score would take nearly all the weight.
    low = {
        "Q": np.array([[-40.0, -40.0, -40.0, -40.0], [10.0, 0.0, 0.0, -10.0]]),
        "K": np.array(
            [
                [40.0, 40.0, 40.0, 40.0],
                [30.0, 40.0, 40.0, 40.0],
                [-10.0] * 4,
                [0.0, 10.0, -10.0, 0.0],
            ]
        ),
        "V": readable(rng, 4, 3),
        "mask": np.array([[1, 1, 0, 0], [1, 0, 1, 1]], dtype=bool),
    }
    cases.append(Case("allowed scores near -3000: Q (2×4), K (4×4), V (4×3)", low))
    causal = np.tril(np.ones((4, 4), dtype=bool))
    batched = {
        "Q": readable(rng, 2, 4, 3),
        "K": readable(rng, 2, 4, 3),
        "V": readable(rng, 2, 4, 2),
        "mask": causal,
    }
    cases.append(Case("a batch of 2 sequences: Q, K (2×4×3), V (2×4×2), a causal mask", batched))
    heads = {
        "Q": readable(rng, 2, 3, 3, 2),
        "K": readable(rng, 2, 3, 5, 2),
        "V": readable(rng, 2, 3, 5, 4),
        "mask": np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 0], [1, 0, 0, 1, 1]], dtype=bool),
    }
    cases.append(Case("batch 2 × 3 heads: Q (2×3×3×2), K (2×3×5×2), V (2×3×5×4), one mask", heads))
    return cases


def _exp_over_count(S):
    with np.errstate(all="ignore"):
        return np.exp(S) / S.shape[-1]


def _renormalised(W):
    with np.errstate(all="ignore"):
        return W / W.sum(axis=-1, keepdims=True)


def _global_maxsoftmax_rows(S):
    """The shift by the largest score of the whole array: rows far below it underflow to
    0 / 0 (NaN), where each row's own maximum keeps them finite."""
    with np.errstate(all="ignore"):
        e = np.exp(S - np.max(S))
        return e / e.sum(axis=-1, keepdims=True)


def _common_mistakes() -> tuple[Mistake, ...]:
    """Mistakes possible in both exercises. Each takes (Q, K, V, mask=None)."""
    m = blocked_to_minus_inf
    return (
        Mistake(
            "You subtracted the largest score of the whole array, not each row's own. A row "
            "whose scores all lie far below that maximum underflows: every exponential is 0, "
            "and 0 / 0 is NaN. Which maximum keeps each row's largest exponential at "
            "e⁰ = 1, and what do `axis` and `keepdims` have to do with it?",
            lambda Q, K, V, mask=None: _global_maxsoftmax_rows(m(_scaled(Q, K), mask)) @ V,
        ),
        Mistake(
            "You divided by the sum of every exp in the whole array, so the weights of all "
            "the queries together sum to 1. Whose weights must sum to 1, and which `axis` "
            "(with `keepdims`) gives one sum per row?",
            lambda Q, K, V, mask=None: softmax_along(m(_scaled(Q, K), mask), axis=None) @ V,
        ),
        Mistake(
            "You returned the attention weights softmax(Q Kᵀ / √d_k), shape (n_q, n_k): the "
            "·V step is missing. The output mixes the value rows with those weights; which "
            "product of the weights (n_q, n_k) and V (n_k, d_v) gives (n_q, d_v)?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K), mask)),
        ),
        Mistake(
            "You returned weights, not outputs, and unscaled ones: both the division by √d_k "
            "and the ·V step are missing. What does each query's output mix, and with "
            "which weights?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K, 1.0), mask)),
        ),
        Mistake(
            "Your scores are not scaled. Unscaled scores grow with d_k and push the softmax "
            "towards one-hot weights, where it barely learns (lessons 02 and 03). What must "
            "Q Kᵀ be divided by before the softmax?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K, 1.0), mask)) @ V,
        ),
        Mistake(
            "You multiplied the scores by √d_k instead of dividing: that makes them larger, "
            "where the scaling is there to bring them back to a spread of about 1 (lesson "
            "02). Which operation undoes the growth?",
            lambda Q, K, V, mask=None: (
                softmax_rows(m(_scaled(Q, K, 1 / np.sqrt(Q.shape[-1])), mask)) @ V
            ),
        ),
        Mistake(
            "You divided the weights by √d_k after the softmax, so each row sums to 1/√d_k, "
            "and the scores went into the softmax unscaled. Where does the division belong: "
            "before the softmax or after it?",
            lambda Q, K, V, mask=None: (
                softmax_rows(m(_scaled(Q, K, 1.0), mask)) / np.sqrt(Q.shape[-1]) @ V
            ),
        ),
        Mistake(
            "You divided the scores by d_k. A dot product of d_k unit-variance terms has "
            "variance d_k; what is its standard deviation, the number that brings it back "
            "to 1?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K, Q.shape[-1]), mask)) @ V,
        ),
        Mistake(
            "You divided by d_k / 2: did you write `d_k ** 1/2`? Python reads it as "
            "`(d_k ** 1) / 2`, because powers bind tighter than division. How do you write "
            "the square root so that Python reads it as one?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K, Q.shape[-1] / 2), mask)) @ V,
        ),
        Mistake(
            "You divided by 2·d_k: did you write `S / d_k ** 1/2`? Python reads it as "
            "`(S / d_k) / 2`: powers bind tighter than division, and two divisions run left "
            "to right. How do you write the square root so that Python reads it as one?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K, 2 * Q.shape[-1]), mask)) @ V,
        ),
        Mistake(
            "You scaled by the square root of the number of keys (`len(K)` or `K.shape[-2]`). "
            "d_k is the length of each query and key vector: which axis of Q holds it?",
            lambda Q, K, V, mask=None: (
                softmax_rows(m(_scaled(Q, K, np.sqrt(K.shape[-2])), mask)) @ V
            ),
        ),
        Mistake(
            "You scaled by the square root of the number of queries (`len(Q)` for a 2-D Q). "
            "d_k is the length of each query and key vector: which axis of Q holds it?",
            lambda Q, K, V, mask=None: (
                softmax_rows(m(_scaled(Q, K, np.sqrt(Q.shape[0])), mask)) @ V
            ),
        ),
        Mistake(
            "You scaled by √d_v, the width of the values. The scale belongs to the dot "
            "products of queries with keys: whose length is it, then?",
            lambda Q, K, V, mask=None: (
                softmax_rows(m(_scaled(Q, K, np.sqrt(V.shape[-1])), mask)) @ V
            ),
        ),
        Mistake(
            "Your softmax runs over the queries, down each key's column, so each key's "
            "column of weights sums to 1. Whose weights must sum to 1, and along which axis "
            "do they lie?",
            lambda Q, K, V, mask=None: softmax_along(m(_scaled(Q, K), mask), axis=-2) @ V,
        ),
        Mistake(
            "You multiplied the scaled scores themselves by V: scores can be negative and do "
            "not sum to 1, so they are not weights. What turns a row of scores into weights?",
            lambda Q, K, V, mask=None: (
                np.where(mask, _scaled(Q, K), 0.0) @ V if mask is not None else _scaled(Q, K) @ V
            ),
        ),
        Mistake(
            _UNNORMALISED,
            lambda Q, K, V, mask=None: softmax_unnormalised(m(_scaled(Q, K), mask)) @ V,
        ),
        Mistake(_UNNORMALISED, lambda Q, K, V, mask=None: np.exp(m(_scaled(Q, K), mask)) @ V),
        Mistake(
            "You multiplied the weights by K. The keys only decide the weights; what does the "
            "output mix?",
            lambda Q, K, V, mask=None: softmax_rows(m(_scaled(Q, K), mask)) @ K,
        ),
        Mistake(
            "Your output is transposed: one row per value feature. It should have one row "
            "per query, (n_q, d_v). Which order of the product gives that?",
            lambda Q, K, V, mask=None: (softmax_rows(m(_scaled(Q, K), mask)) @ V).T,
        ),
        Mistake(
            "You divided each exp by the number of keys, n_k, as if the weights were a plain "
            "average. Then a row's weights do not sum to 1. What must each exp be divided by "
            "so that they do?",
            lambda Q, K, V, mask=None: _exp_over_count(m(_scaled(Q, K), mask)) @ V,
        ),
        Mistake(
            "Each of your outputs is a copy of one value row, the one whose key scores highest: "
            "hard attention, the limit of weights sharpened until they are one-hot. A softmax "
            "gives every key with a finite score a share (it rounds to 0 only when the key "
            "scores hundreds below the best, lesson 04). "
            "How do the weights turn into one output row?",
            lambda Q, K, V, mask=None: np.asarray(V)[np.argmax(m(_scaled(Q, K), mask), axis=-1)],
        ),
        Mistake(
            "Your attention overflows on large scores: exp(800) is inf, and inf / inf is NaN. "
            "Lesson 04 showed a number you can subtract from every score of a row without "
            "changing its weights, which keeps every exponent ≤ 0. Which number is it?",
            lambda Q, K, V, mask=None: softmax_unshifted(m(_scaled(Q, K), mask)) @ V,
        ),
    )


def _flat(Q, K, V, mask=None):
    """Equal weights for every key a query may attend to: the softmax of equal scores."""
    return softmax_rows(blocked_to_minus_inf(np.zeros_like(_scaled(Q, K)), mask)) @ V


_FLAT = Mistake(
    "Every query's output is the plain mean of the value rows: your weights are all equal, "
    "as if every score were the same. Equal weights land exactly on the mean (the black + "
    "of Section 1). Which scores go into your softmax?",
    _flat,
)
_FLAT_MASKED = Mistake(
    "Every query's output is the plain mean of the value rows it may attend to: your weights "
    "are equal across the allowed keys, as if every allowed score were the same. Equal "
    "weights land exactly on the mean (the black + of Section 1). Which scores go into your "
    "softmax?",
    _flat,
)
_FLAT_UNMASKED = Mistake(
    "Every query's output is the plain mean of all the value rows, blocked ones included: "
    "your weights are equal across every key, as if every score were the same and the mask "
    "were not there. Two things are missing. Which scores go into your softmax, and what "
    "must a blocked key's score become so that its weight is exactly 0?",
    lambda Q, K, V, mask=None: _flat(Q, K, V),
)


def _zero_row_hint(got, want, inputs):
    """A row of the output exactly 0 where the right row is not, for a query whose plain exp
    overflows: inf / inf gave NaN, and something (np.nan_to_num, say) turned it into 0."""
    got = np.asarray(got, dtype=float)
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    S = blocked_to_minus_inf(_scaled(inputs["Q"], inputs["K"]), inputs.get("mask"))
    top = S.max(axis=-1)
    zero = ~got.any(axis=-1) & np.asarray(want, dtype=float).any(axis=-1) & (top > EXP_LIMIT)
    if not zero.any():
        return None
    index = tuple(int(k) for k in np.argwhere(zero)[0])
    row = str(index[0]) if len(index) == 1 else f"[{', '.join(map(str, index))}]"
    return (
        f"Row {row} of your output is exactly 0, where the right row is not. That query's "
        f"largest scaled score is {top[index]:g}: exp overflows to inf there, inf / inf is "
        "NaN, and something seems to have turned the NaN into 0 (`np.nan_to_num`, say). "
        "Which number can you subtract from every score of a row so that no exponent is "
        "above 0 (lesson 04)?"
    )


_BATCHED_SHAPES = (
    "Q is (..., n_q, d_k), K is (..., n_k, d_k) and V is (..., n_k, d_v), where ... are the "
    "batch and head axes, if any. Write down the shape of each step: which product of Q and "
    "K gives one score per (query, key) pair, (..., n_q, n_k), and which product of the "
    "weights and V gives (..., n_q, d_v)? For a 2-D K, `K.T` swaps its two axes; for a 3-D "
    "or 4-D K it reverses all of them, and a fixed list of axes fits only one number of "
    "them. How do you swap only the last two?"
)


BATCH_MISTAKES = (
    Mistake(
        "You scaled by the square root of `K.shape[0]`: for a 2-D K that is the number of "
        "keys, and with batch axes in front it is the batch size. d_k is the length of each "
        "query and key vector: which axis holds it, whatever comes in front?",
        lambda Q, K, V, mask: (
            softmax_rows(blocked_to_minus_inf(_scaled(Q, K, np.sqrt(K.shape[0])), mask)) @ V
        ),
    ),
    Mistake(
        "Right on the 2-D inputs, but with batch and head axes in front your softmax runs "
        "over the wrong axis: for a 2-D S, axis 1 holds the keys, and for a 3-D or 4-D S it "
        "holds something else. Which axis holds each query's keys, whatever comes in front?",
        lambda Q, K, V, mask: softmax_along(blocked_to_minus_inf(_scaled(Q, K), mask), axis=1) @ V,
    ),
    Mistake(
        "Right on the 2-D inputs, but with batch and head axes your scale is wrong: you "
        "took d_k from axis 1 of Q, which holds d_k only when Q is 2-D. Which index gives "
        "d_k whatever comes in front?",
        lambda Q, K, V, mask: (
            softmax_rows(blocked_to_minus_inf(_scaled(Q, K, np.sqrt(Q.shape[1])), mask)) @ V
        ),
    ),
)


MASK_MISTAKES = (
    Mistake(
        "You zeroed the blocked weights after the softmax and renormalised each row: the "
        "same weights in exact arithmetic, but here a row's allowed keys score so far below "
        "its blocked ones that their weights underflow to 0 first, and 0 / 0 is NaN (lesson "
        "04). What could you do to the scores before the softmax, so that nothing is left "
        "to renormalise?",
        lambda Q, K, V, mask: _renormalised(softmax_rows(_scaled(Q, K)) * mask) @ V,
    ),
    Mistake(
        "Your masked attention ignores the mask: blocked keys still get weight. Which score "
        "would make exp give a blocked key exactly 0, and where does it go in?",
        lambda Q, K, V, mask: softmax_rows(_scaled(Q, K)) @ V,
    ),
    Mistake(
        'Your mask is inverted: you blocked the keys marked True. Here True means "may '
        "attend\", as in PyTorch's `F.scaled_dot_product_attention` (its "
        "`nn.MultiheadAttention` uses the opposite). Which scores should you keep?",
        lambda Q, K, V, mask: softmax_along(np.where(mask, -np.inf, _scaled(Q, K)), -1) @ V,
    ),
    Mistake(
        "You set the blocked scores to 0 (e.g. `S * mask`). exp(0) = 1, so blocked keys "
        "still get weight. Which score gives exp(score) = 0?",
        lambda Q, K, V, mask: softmax_rows(_scaled(Q, K) * mask) @ V,
    ),
    Mistake(
        "You zeroed the blocked weights after the softmax, so the rows no longer sum to 1. "
        "Lesson 04 showed two ways to fix it: what does each do to the allowed keys' "
        "share of the weight?",
        lambda Q, K, V, mask: (softmax_rows(_scaled(Q, K)) * mask) @ V,
    ),
    Mistake(
        "You added the bool mask to the scores: that adds 1 to the allowed scores and blocks "
        "nothing. What should a blocked key's score become instead?",
        lambda Q, K, V, mask: softmax_rows(_scaled(Q, K) + mask) @ V,
    ),
)


def _leak_hint(got, want, inputs):
    """Blocked keys given a large but finite score, so each keeps some weight (e^-10 is
    4.5e-5, not 0); where the allowed scores are lower still, the blocked keys win."""
    mask = inputs.get("mask")
    got = np.asarray(got, dtype=float)
    if mask is None or got.shape != want.shape or not np.isfinite(got).all():
        return None
    S = _scaled(inputs["Q"], inputs["K"])
    fits = [
        blocked
        for blocked in (-5.0, -10.0, -15.0, -20.0, -50.0, -100.0)
        if np.allclose(got, softmax_rows(np.where(mask, S, blocked)) @ inputs["V"], 1e-6, 1e-9)
    ]
    if len(fits) == 1:
        blocked = fits[0]
        return (
            f"Close, but not exact: your blocked keys seem to get the score {blocked:g} "
            f"instead of -inf. e^({blocked:g}) is {np.exp(blocked):.1e}, not 0, so each "
            "blocked key still passes on a little of its value, more when the allowed "
            "scores are low too. Which score gives e^score exactly 0?"
        )
    if fits:
        return (
            "Your blocked keys seem to get a large but finite score instead of -inf. Here "
            f"the allowed scores are as low as {S[mask].min():.0f}, so a blocked key with a "
            "score like -10 or -100 outweighs them and takes nearly all the weight. Which "
            "score gives e^score exactly 0, however low the allowed scores are?"
        )
    return None


# Bounds a learner might clip the scores to, to keep exp from overflowing.
_CLIPS = (10.0, 20.0, 30.0, 50.0, 60.0, 80.0, 100.0, 200.0, 300.0, 500.0, 600.0, 700.0, 709.0)


def _clip_hint(got, want, inputs):
    """Scores clipped to a finite range (both sides, or only from above) before the
    softmax: no overflow, but every row with a score beyond the clip gets other weights."""
    got = np.asarray(got, dtype=float)
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    S, mask, V = _scaled(inputs["Q"], inputs["K"]), inputs.get("mask"), inputs["V"]
    for c in _CLIPS:
        for low in (-c, None):
            clipped = np.clip(S, low, c)
            for scores in (
                blocked_to_minus_inf(clipped, mask),
                np.clip(blocked_to_minus_inf(S, mask), low, c),
            ):
                if np.allclose(got, softmax_rows(scores) @ V, 1e-6, 1e-9):
                    return (
                        "You seem to clip the scores to a finite range before the softmax. "
                        "That keeps exp from overflowing, but here the scaled scores reach "
                        f"{np.abs(S).max():g}, and a row with a score beyond the clip gets "
                        "other weights. Which number can you subtract from every score of a "
                        "row without changing its weights (lesson 04), so that no exponent "
                        "is above 0?"
                    )
    return None


def _outside_values_hint(got, want, inputs):
    """An output entry outside the range of its column of V. Weights that are ≥ 0 and sum
    to 1 can never put it there (Section 1's bound), so the weights are wrong (log-softmax
    or tanh weights, say, which no mistake above names) or what they multiply is not V
    (a softmax applied to V as well)."""
    got = np.asarray(got, dtype=float)
    if got.shape != want.shape or not np.isfinite(got).all():
        return None
    V = np.asarray(inputs["V"], dtype=float)
    low, high = V.min(axis=-2, keepdims=True), V.max(axis=-2, keepdims=True)
    beyond = np.maximum(low - got, got - high)  # > 0 only outside the column's range
    # float32 answers and rounding stay far inside this slack; a wrong weighting does not
    if beyond.max() <= 1e-6 * (1.0 + float(np.abs(V).max())):
        return None
    index = tuple(int(k) for k in np.unravel_index(int(np.argmax(beyond)), got.shape))
    *front, _, c = index
    where = f"V[{', '.join(map(str, front))}]" if front else "V"
    bounds = (*front, 0, c)
    return (
        f"Entry [{', '.join(map(str, index))}] of your output is {got[index]:.3g}, outside "
        f"[{low[bounds]:.3g}, {high[bounds]:.3g}], the range of column {c} of {where}. By "
        "Section 1, weights that are ≥ 0 and sum to 1 can never take an output there. Print "
        "your weights for one query: are they all ≥ 0, and does each row sum to 1? If "
        "they are, look at what they multiply: is it V itself, unchanged?"
    )


_overflow_hint = overflow_hint(
    "Your attention returned NaN or inf for large scores: exp(800) overflows to inf. "
    "Which number can you subtract from every score of a row without changing its "
    "weights (lesson 04), so that every exponent is ≤ 0?",
    lambda inputs: np.abs(_scaled(inputs["Q"], inputs["K"])).max(),
)

register(
    LESSON,
    solutions.attention,
    "attention(Q, K, V) -> softmax(Q Kᵀ / √d_k) V, shape (n_q, d_v)",
    ArrayCheck(
        attention_cases,
        reference=attention,
        shape_rule="one row per query and one column per value feature, (n_q, d_v)",
        mistakes=(*_common_mistakes(), _FLAT),
        hints=(_overflow_hint, _zero_row_hint, _clip_hint, _outside_values_hint),
        shape_hint=_SHAPES,
        error_hints=((_row_total_without_keepdims, _keepdims("")),),
    ),
)
# ---------------------------------------------------------------- output_change


def output_change_cases() -> list[Case]:
    # A square, non-symmetric A comes first: there row j and column j of A differ but
    # have the same length, so reading the row gives numbers that can be named.
    rng = np.random.default_rng(505)
    square = np.round(softmax_rows(rng.normal(size=(3, 3)) * 1.5), 3)
    square[:, -1] = 1 - square[:, :-1].sum(axis=1)  # rows sum to 1 after rounding
    wide = softmax_rows(rng.normal(size=(2, 5)))
    causal = softmax_rows(np.where(np.tri(4, dtype=bool), rng.normal(size=(4, 4)), -np.inf))
    return [
        Case(
            "A (3×3), j = 0, δ = [1, -2]",
            {"A": square, "j": 0, "delta": np.array([1.0, -2.0])},
        ),
        Case(
            "A (2×5): 2 queries, 5 keys; j = 4, δ = [0.5, 0, 2]",
            {"A": wide, "j": 4, "delta": np.array([0.5, 0.0, 2.0])},
        ),
        Case(
            "causal A (4×4), j = 2: queries 0 and 1 give key 2 no weight",
            {"A": causal, "j": 2, "delta": np.array([3.0, 1.0])},
        ),
    ]


_LINEAR = (
    "Write row i of Z as Σ_k A_ik v_k: which of its terms change when v_j does, and by how much"
)

OUTPUT_CHANGE_MISTAKES = (
    Mistake(
        "You used row j of A, A[j]: that is how token j itself spreads its attention. "
        "What matters is how much each query attends *to* token j, column j, A[:, j]. "
        f"{_LINEAR}?",
        lambda A, j, delta: np.outer(A[j], delta),
    ),
    Mistake(
        "Every query got the whole change δ. But a query only passes on value row j in "
        f"proportion to its weight on j. {_LINEAR}?",
        lambda A, j, delta: np.tile(delta, (A.shape[0], 1)),
    ),
    Mistake(
        "Only row j of your result changed. Token j's value reaches every query that "
        f"attends to it, not only query j. {_LINEAR}?",
        lambda A, j, delta: np.outer(np.eye(A.shape[0], A.shape[1])[:, j] * A[:, j], delta),
    ),
    Mistake(
        "Only query j's output changed, and by the whole δ. But query j is not the only one "
        "that reads value row j: every query with some weight on token j mixes it in. "
        f"{_LINEAR}?",
        lambda A, j, delta: np.outer(np.eye(A.shape[0], A.shape[1])[:, j], delta),
    ),
    Mistake(
        "Your change reaches only the queries whose largest weight is on token j, and with "
        "the whole δ: hard attention. Softmax weights share: how much of v_j does a query "
        f"with weight A_ij on it pass on? {_LINEAR}?",
        lambda A, j, delta: np.outer((np.argmax(A, axis=1) == j).astype(float), delta),
    ),
    Mistake(
        "You divided column j of A by its sum. The rows of A sum to 1 (each query shares "
        "out its attention), but its columns need not: a key can get more or less than one "
        f"query's worth of attention in total. {_LINEAR}?",
        lambda A, j, delta: np.outer(A[:, j] / A[:, j].sum(), delta),
    ),
    Mistake(
        "Every query got the same change: the total weight on token j, Σ_i A_ij, times δ. "
        "That total is shared out among the queries, and each query passes on only its own "
        f"share of v_j. {_LINEAR}?",
        lambda A, j, delta: np.tile(A[:, j].sum() * delta, (A.shape[0], 1)),
    ),
)


def _change_hint(got, want, inputs):
    """For a wrong change that no mistake names: a multiple of the right one, or rows off."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape or not np.isfinite(got).all() or not want.any():
        return None
    ratio = float(np.vdot(got, want) / np.vdot(want, want))
    if abs(ratio - 1) > 1e-3 and np.allclose(got, ratio * want, rtol=1e-4, atol=1e-9):
        return (
            f"Every entry of your change is {ratio:.3g} times the right one: the pattern "
            "is right, the size is not. If query i gives weight A_ij to token j and v_j moves "
            "by δ, by how much does query i's output move?"
        )
    off = [int(i) for i in np.flatnonzero(~np.isclose(got, want, rtol=1e-4, atol=1e-6).all(axis=1))]
    if not off:
        return None
    rows = ", ".join(str(i) for i in off)
    return (
        f"Your change is wrong in row{'s' * (len(off) > 1)} {rows}: the output of "
        f"quer{'ies' if len(off) > 1 else 'y'} {rows}. {_LINEAR}?"
    )


register(
    LESSON,
    solutions.output_change,
    "output_change(A, j, delta) -> how Z = A V changes when delta is added to value row j, "
    "shape (n_q, d_v)",
    ArrayCheck(
        output_change_cases,
        reference=output_change,
        shape_rule="one row per query and one column per value feature, (n_q, d_v)",
        mistakes=OUTPUT_CHANGE_MISTAKES,
        hints=(_change_hint,),
        # The expected change is a column of A times δ, which the learner could read
        # off next to A; a failure shows what their function returned instead.
        show_expected=False,
        shape_hint=(
            "A is (n_q, n_k) and δ is (d_v,); the change is one row of d_v numbers per "
            "query, (n_q, d_v). Entry [i, c] says how far feature c of query i's output "
            "moves: which entry of A and which of δ decide it? And which NumPy product of two "
            "vectors gives the table of all their pairwise products?"
        ),
    ),
)
# ------------------------------------------------------------------- scores_for


def scores_for_cases() -> list[Case]:
    # Section 1's corners v1, v2, v3 first, a triangle around the origin, then the same
    # question on a segment (d_v = 1) and in a tetrahedron (d_v = 3). Every z lies strictly
    # inside, no two weights are equal, and every slip below differs from the answer on
    # each input (a slip whose weights come out negative gives NaN scores, named too).
    return [
        Case(
            "V (3×2), a triangle: Section 1's v1, v2, v3; z = [1.8, 2]",
            {"V": np.array([[3.0, -0.5], [2.5, 2.5], [0.5, 3.0]]), "z": np.array([1.8, 2.0])},
        ),
        Case(
            "V (3×2), a triangle around 0; z = [0.5, 0.5]",
            {"V": np.array([[-1.0, 2.0], [-2.0, -1.0], [2.0, 0.0]]), "z": np.array([0.5, 0.5])},
        ),
        Case(
            "V (2×1), a segment from 1 to 4; z = [2]",
            {"V": np.array([[1.0], [4.0]]), "z": np.array([2.0])},
        ),
        Case(
            "V (4×3), a tetrahedron; z = [0.7, 0.7, 1]",
            {
                "V": np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [2.0, 2.0, 2.0]]),
                "z": np.array([0.7, 0.7, 1.0]),
            },
        ),
    ]


def log_weights(s: np.ndarray) -> np.ndarray:
    """Scores shifted by a constant so that their exponentials sum to 1: log softmax(s).

    Scores that differ by a constant give the same weights, so answers are compared in
    this form. Scores that are not all finite are left as they are.
    """
    s = np.asarray(s, dtype=float)
    if s.ndim != 1 or not np.isfinite(s).all():
        return s
    top = s.max()
    return s - (top + np.log(np.exp(s - top).sum()))


def _barycentric(V, z):
    return np.linalg.solve(np.vstack([V.T, np.ones(len(V))]), np.append(z, 1.0))


@dataclass(frozen=True)
class ReachCheck(ArrayCheck):
    """An ArrayCheck for scores that are right up to a constant: scores s pass when
    softmax(s) @ V matches z. Answers and the mistakes are compared as :func:`log_weights`;
    a failure adds the weights the answer's scores give and the point they mix."""

    def _answer_on(self, answer, case, want, name, timeout, notes):
        got = super()._answer_on(answer, case, want, name, timeout, notes)
        return log_weights(got) if got.shape == want.shape else got

    def _check_case(self, answer, case, name, timeout, notes, cases) -> None:
        V, z = case.inputs["V"], case.inputs["z"]
        got = self._answer_on(answer, case, self._expected(case), name, timeout, notes)
        if got.shape == (len(V),) and np.isfinite(got).all():
            weights = np.exp(got)
            if matches(weights @ V, z):
                return
            where = (
                f"\n\nThe softmax of your scores gives the weights\n{array_block(weights)}\n"
                f"which mix the rows of V into\n{array_block(weights @ V)}\nnot z."
            )
        else:
            where = ""
        try:
            super()._check_case(answer, case, name, timeout, notes, cases)
        except Fail as fail:
            raise Fail(fail.message + where) from None


def _temperature_hint(got, want, inputs):
    # Scores c · log w (+ any constant): the right weights at the wrong temperature 1/c.
    # With two rows any two scores are of that form, so the segment says nothing.
    if got.shape != want.shape or len(got) < 3 or not np.isfinite(got).all():
        return None
    a, b = got - got.mean(), want - want.mean()
    c = float(a @ b / (b @ b))
    if c <= 0.05 or abs(c - 1) < 1e-3 or np.abs(a - c * b).max() > 1e-6 * (1 + np.abs(a).max()):
        return None
    return (
        f"Your scores are c · log w with c = {c:.3g}, where w are the right weights. The "
        "softmax of c · log w gives w^c / Σ_j w_j^c: the right weights at temperature 1/c, "
        f"{'sharper' if c > 1 else 'flatter'} than w. Which scores give exactly w?"
    )


def _reach_hint(got, want, inputs):
    if got.shape != want.shape:
        return None
    if not np.isfinite(got).all():
        return (
            "Some of your scores are NaN or -inf: `np.log` of a negative number or of 0. "
            "For a z strictly inside the hull every weight is positive. A negative weight "
            "means your weights solve another system: do they mix the rows into z, "
            "Σ_j w_j v_j = z, and sum to 1?"
        )
    if np.ptp(got) < 1e-9:
        return (
            "Your scores are all equal, so every row gets the same weight and the output is "
            "the plain mean of the rows, not z. Is your function still a placeholder?"
        )
    return (
        "Your scores don't mix the rows into z. Two steps: which weights w, positive and "
        "summing to 1, give Σ_j w_j v_j = z (d_v + 1 equations for d_v + 1 unknowns)? And "
        "which scores does a softmax turn into exactly those weights?"
    )


# Code fitted to a triangle (`a, b, c = V`, `V[2]`, `z[1]`, or a 2×2 solve with the edges
# v1 − v0 and v2 − v0) first fails on the segment or the tetrahedron, where Python says
# only "values to unpack", "index 2 is out of bounds" or "must be square".
_FIXED_ROWS = (
    "Your code takes a fixed number of rows or coordinates, which fits the triangles "
    "only. The check also tries a segment, V (2×1), and a tetrahedron, V (4×3): n = d_v + 1 "
    "value rows with d_v coordinates each. Which way of finding the weights works for any "
    "n? (Count the equations.)"
)


_TRIANGLE_ONLY = re.compile(r"values to unpack|index \d+ is out of bounds for axis|must be square")


def _unpacked_a_triangle(message: str, inputs: dict[str, Any]) -> bool:
    return inputs["V"].shape != (3, 2) and _TRIANGLE_ONLY.search(message) is not None


SCORES_FOR_MISTAKES = (
    Mistake(
        "You returned the weights w themselves as scores. The softmax exponentiates its "
        "input, so it turns w into e^w / Σ e^w, not w. Which scores s give e^s / Σ e^s = w?",
        lambda V, z: log_weights(_barycentric(V, z)),
    ),
    Mistake(
        "You returned z itself, a point with d_v coordinates. The answer is one score per "
        "value row: the softmax turns them into weights, and the weights mix the rows into "
        "z. How many scores, then, and what do they have to do?",
        lambda V, z: np.asarray(z, dtype=float).copy(),
    ),
    Mistake(
        "Your weights solve Σ_j w_j v_j = z alone (a least-squares solution of Vᵀ w = z), "
        "without the equation that they sum to 1. Once they are divided by their sum, by you "
        "or by the softmax, they mix the rows into z / Σ_j w_j, a point on the line from 0 "
        "through z, not z itself. Which equation must the system hold as well?",
        lambda V, z: log_weights(np.log(np.linalg.lstsq(V.T, z, rcond=None)[0])),
    ),
    Mistake(
        "Your weights solve Σ_j w_j v_j = z alone (a least-squares solution of Vᵀ w = z), "
        "without the equation that they sum to 1. On some inputs that gives a negative "
        "weight, which taking |w| only hides: the softmax then divides |w| by its sum, and "
        "that mix misses z. Which equation must the system hold as well?",
        lambda V, z: log_weights(np.log(np.abs(np.linalg.lstsq(V.T, z, rcond=None)[0]))),
    ),
    Mistake(
        "You solved the system with its matrix transposed: one row per value row, "
        "[v_j, 1], rather than one row per equation. Write the equations out: Σ_j w_j v_j "
        "= z gives one equation per coordinate of z, and Σ_j w_j = 1 one more. Which "
        "entries does each equation take from V?",
        lambda V, z: log_weights(
            np.log(np.linalg.solve(np.column_stack([V, np.ones(len(V))]), np.append(z, 1.0)))
        ),
    ),
    Mistake(
        "Your scores are the dot products v_j · z, as if z were a query and the value rows "
        "its keys. Those weights favour the rows that point the way z does, but the average "
        "they give is not z. Which weights mix the rows into exactly z?",
        lambda V, z: log_weights(V @ z),
    ),
    Mistake(
        "Your scores are e^w, the exponentials of the right weights w. The softmax "
        "exponentiates its input itself, so your weights come out as e^(e^w) / Σ e^(e^w), "
        "not w. Which step undoes an exponential, so that e^s = w?",
        lambda V, z: log_weights(np.exp(_barycentric(V, z))),
    ),
    *(
        Mistake(
            f"Your scores are {log}(w), a logarithm of the right weights w in another base. "
            "A softmax exponentiates with e, so which logarithm undoes that, giving e^s = w?",
            lambda V, z, log=log: log_weights(getattr(np, log)(_barycentric(V, z))),
        )
        for log in ("log2", "log10")
    ),
    Mistake(
        "Your scores have the wrong sign: -log w. The softmax then gives the most weight to "
        "the row that should get the least. Which scores s give e^s / Σ e^s = w?",
        lambda V, z: log_weights(-np.log(_barycentric(V, z))),
    ),
)

register(
    LESSON,
    solutions.scores_for,
    "scores_for(V, z) -> scores s, one per row of V, with softmax(s) @ V = z, shape (n,)",
    ReachCheck(
        scores_for_cases,
        reference=scores_for,
        shape_rule="one score per value row, (n,)",
        mistakes=SCORES_FOR_MISTAKES,
        hints=(_temperature_hint, _reach_hint),
        shape_hint=(
            "V is (n, d_v) with n = d_v + 1 and z is (d_v,). The weights solve d_v + 1 "
            "equations: Σ_j w_j v_j = z, one per coordinate (the matrix Vᵀ, (d_v, n)), and "
            "Σ_j w_j = 1 (a row of n ones). Stacked, that is an (n, n) system."
        ),
        # The expected scores would give the answer away; the failure says what the
        # learner's scores give instead.
        show_expected=False,
        show_returned=False,
        error_hints=((_unpacked_a_triangle, _FIXED_ROWS),),
    ),
)
# ----------------------------------------------------------- attention_by_hand

# One query, three keys and values, small enough for paper: d_k = 4, so √d_k = 2. Two of
# the scores are negative, and the key that scores lowest carries the largest value, so
# that how each key is handled shows in the answer. The numbers are chosen so that every
# slip below lands at least 0.11 from the answer, no two slips' windows overlap, and no
# earlier cell of the lesson prints these weights.
BY_HAND_Q = np.array([1.0, 1.0, 1.0, 1.0])
BY_HAND_K = np.array([[1.0, 1.0, 1.0, -1.0], [0.0, 1.0, -1.0, -1.0], [-1.0, -1.0, 0.0, 0.0]])
BY_HAND_V = np.array([[1.0, 0.0], [4.0, 2.0], [8.0, 1.0]])


def _by_hand(divisor=2.0, weigh=softmax_rows, entry=0, scores=None):
    """The first output entry (or ``entry``) with one stage changed, for the slips."""
    raw = BY_HAND_K @ BY_HAND_Q if scores is None else np.asarray(scores, dtype=float)
    weights = weigh(raw / divisor)
    return float(weights @ BY_HAND_V[: len(weights), entry])


def _last_score_changed(to):
    """The output when the last key's scaled score is ``to(scaled, raw)`` instead."""
    raw = BY_HAND_K @ BY_HAND_Q
    scaled = raw / 2.0
    scaled[-1] = to(scaled[-1], raw[-1])
    return _by_hand(divisor=1.0, scores=scaled)


_BY_HAND = _by_hand()
# The answer to two decimals is 2.19; weights rounded to two decimals on paper give 2.18.
# Both pass, and so does 2.20; every named slip lies at least 0.11 away.
_BY_HAND_TOLERANCE = 0.011
_STAGES = (
    "The four stages: the three scores q·k_j; each divided by √d_k; the softmax "
    "(exponentiate, then divide by the sum); the weighted sum of the values' first entries. "
    "Which stage gives a number you did not expect?"
)


def by_hand_slips() -> list[Slip]:
    def slip(value, message):
        return Slip(value, message, 0.004)

    raw = BY_HAND_K @ BY_HAND_Q
    first_weight = float(softmax_rows(raw / 2.0)[0])
    return [
        slip(_by_hand(divisor=1.0), "That is the output without the division by √d_k. With "
             "d_k = 4, what do the scores become?"),
        slip(_by_hand(divisor=0.5), "You multiplied the scores by √4 = 2 instead of "
             "dividing: that makes them larger, where the scaling is there to shrink them. "
             "What do the three scores become when you divide them by 2?"),
        slip(_by_hand(divisor=4.0), "You divided the scores by d_k = 4. By what does "
             "scaled dot-product attention divide them?"),
        slip(_by_hand(divisor=np.sqrt(3)), "You divided the scores by √3, the root of the "
             "number of keys. The scaling depends on the length of the vectors: what is d_k "
             "here?"),
        slip(_by_hand(weigh=lambda s: s / s.sum()), "You divided the scaled scores by their "
             "sum, without the exponential. What does a softmax do to each score before it "
             "divides?"),
        slip(_by_hand(weigh=lambda s: s), "You mixed the values with the scaled scores "
             "themselves. Weights must be positive and sum to 1: which step makes them so?"),
        slip(_by_hand(divisor=1.0, weigh=lambda s: s), "You mixed the values with the raw "
             "scores: no scaling and no softmax. Which two stages come between the scores "
             "and the values?"),
        slip(_by_hand(weigh=lambda s: np.full(3, 1 / 3)), "That is the plain mean of the "
             "values' first entries: equal weights. Do the three keys match the query "
             "equally well?"),
        slip(_by_hand(weigh=np.exp), "You used the exponentials as weights without dividing "
             "by their sum. What must the three weights add up to?"),
        slip(_by_hand(weigh=lambda s: (s == s.max()).astype(float)), "That is v_0's first "
             "entry alone: all the weight on the best key. A softmax is soft: what share do "
             "the other two keys get?"),
        slip(_by_hand(weigh=lambda s: np.round(softmax_rows(s), 1)), "Your weights look "
             "rounded to one decimal, which moves the result this far. Keep at least two "
             "decimals of each weight."),
        slip(_last_score_changed(lambda scaled, raw: -scaled), f"Check the sign of q·k_2: "
             f"k_2 = {_vector(BY_HAND_K[2])}, so does it agree with q or oppose it?"),
        slip(_by_hand(scores=raw * [1, -1, 1]), "Check the sign of q·k_1: k_1 = "
             f"{_vector(BY_HAND_K[1])}, so add its entries: do they come to +1 or -1?"),
        slip(_by_hand(scores=raw + [2, 0, 0]), "Check q·k_0: k_0 = "
             f"{_vector(BY_HAND_K[0])}, so what is the last of the four products, and what "
             "do the four add up to?"),
        slip(_by_hand(scores=-raw), "Your weights favour k_2, the key that opposes q most. "
             "Check the sign of each score: q·k_j is positive when k_j points the way q "
             "does. Which key should get the largest weight?"),
        # 1.953, next to the √3 slip's 1.961: a narrower window keeps the two apart.
        Slip(_by_hand(scores=raw + [0, 0, -1]), "Check q·k_2 once more: k_2 = "
             f"{_vector(BY_HAND_K[2])}, so the sum of q's entries times k_2's is what?",
             0.0035),
        slip(_by_hand(scores=raw + [0, 0, 1]), "Check q·k_2 once more: k_2 = "
             f"{_vector(BY_HAND_K[2])}, so the sum of q's entries times k_2's is what?"),
        slip(_last_score_changed(lambda scaled, raw: 0.0), "You gave k_2 the score 0. "
             "Multiply q and k_2 entry by entry and add: what do you get?"),
        slip(_last_score_changed(lambda scaled, raw: raw), "Your k_2 score was not divided "
             "by √d_k, while the other two were. Every score is scaled the same way."),
        slip(_by_hand(scores=raw[:2]), "You left k_2 out. Its score is the lowest, but a "
             "softmax still gives it a share: e to any number is positive. How much of v_2 "
             "does that share bring in?"),
        slip(float(softmax_rows(raw / 2.0)[:2] @ BY_HAND_V[:2, 0]), "Your sum leaves out v_2. "
             "Its weight is the smallest, but its first entry is the largest: what does the "
             "third term of Σ_j a_j v_j add?"),
        slip(first_weight, "That is the first *weight*, a_0, the share of k_0. The question "
             "asks for the first entry of the output z = Σ_j a_j v_j: what do the weights "
             "multiply?"),
        slip(_by_hand(entry=1), "That is the second entry of the output. The question asks "
             "for the first: which entries of v_0, v_1 and v_2 does it mix?"),
        slip(_by_hand() + _by_hand(entry=1), "That is the sum of the two entries of z. The "
             "question asks for the first entry alone."),
        Slip(_BY_HAND, "Close, but not close enough: give the answer to two decimals, and "
             "keep at least two decimals along the way (or let NumPy compute each stage).",
             0.07),
        *_outside_the_values(),
    ]  # fmt: skip


def _outside_the_values() -> list[Slip]:
    """Any other answer below the smallest or above the largest of the values' first entries.

    The exercise asks the learner to predict that the answer stays in that range, so an
    answer outside it is told so. A slip matches an interval of width 2 × tolerance: one
    interval ends just below the smallest entry, the other starts just above the largest.
    Listed last, so that every named slip out there is tried first.
    """
    low, high = float(BY_HAND_V[:, 0].min()), float(BY_HAND_V[:, 0].max())
    message = (
        f"That lies outside [{low:g}, {high:g}], the range of the values' first entries. "
        "Softmax weights are positive and sum to 1, so by the bound of Section 1 no output "
        "can land there. Which stage took your number out of that range?"
    )
    wide, gap = 1e9, 1e-4  # wide enough for any answer worth naming; gap above rounding
    return [Slip(low - gap - wide, message, wide), Slip(high + gap + wide, message, wide)]


def _vector(v) -> str:
    return "(" + ", ".join(f"{x:g}" for x in v) + ")"


def _by_hand_passed(value: float) -> str:
    raw = BY_HAND_K @ BY_HAND_Q
    scaled = raw / 2.0
    weights = softmax_rows(scaled)
    z = weights @ BY_HAND_V
    return (
        f"Right: {value:g}. The scores {', '.join(f'{s:g}' for s in raw)} divided by √4 = 2 "
        f"give {', '.join(f'{s:g}' for s in scaled)}; the softmax turns them into the "
        f"weights {', '.join(f'{w:.3f}' for w in weights)}; and the output is "
        f"z = ({z[0]:.3f}, {z[1]:.3f}). k_0 agrees most with q and takes most of the weight. "
        f"k_2 opposes q and gets the least, yet its value's first entry, "
        f"{BY_HAND_V[2, 0]:g}, still adds {weights[2] * BY_HAND_V[2, 0]:.2f} to the result: "
        f"without a mask, a softmax weight is 0 only if it underflows, when its score "
        f"lies hundreds below the row's largest (lesson 04)."
    )


register(
    LESSON,
    solutions.attention_by_hand,
    "answer_attention_by_hand = a number: the first entry of one query's output",
    NumberCheck(
        _BY_HAND,
        _BY_HAND_TOLERANCE,
        by_hand_slips,
        _by_hand_passed,
        generic_hint=_STAGES,
        what="the first entry of the output z",
        many_hint="Is that the whole output z, or the weights? Which single entry is asked for?",
    ),
)
_MASK_HANDED_OVER = (
    "Your `masked_attention` gives the right numbers, but it passes the mask to the course's "
    "`softmax` (`mask=`), which does the masking for you. Write that part yourself: which "
    "score gives a blocked key weight exactly 0, and does it go in before or after the "
    "softmax (lesson 04)? The course's `softmax` without `mask=` is fine."
)


def _passes_mask_to_softmax(answer: Any, inputs: dict[str, Any], timeout: float | None) -> bool:
    """Whether ``answer`` on ``inputs`` calls the course's softmax with a mask."""
    seen: list[bool] = []

    def hook(frame: Any, event: str, arg: Any) -> None:  # a sys.setprofile hook
        if event == "call" and frame.f_code is course_softmax.__code__:
            seen.append(frame.f_locals.get("mask") is not None)

    def run() -> None:
        previous = sys.getprofile()  # the profiler is per thread: set it where the answer runs
        sys.setprofile(hook)
        try:
            answer(*(np.copy(v) for v in inputs.values()))
        finally:
            sys.setprofile(previous)

    try:
        with silenced():
            run_with_time_limit(run, timeout)
    except (Exception, SystemExit, TimeLimitExceeded):
        return False  # it passed the check, so this does not happen; nothing to say if it does
    return any(seen)


def _over_queries(inputs: dict[str, Any]) -> list[np.ndarray]:
    """Outputs of a softmax down each key's column (shifted by the column's or the row's
    maximum); a key every query blocks gives 0 there, not the learner's NaN."""
    S = blocked_to_minus_inf(_scaled(inputs["Q"], inputs["K"]), inputs["mask"])
    with np.errstate(all="ignore"):
        e = np.exp(S - np.max(S, axis=-1, keepdims=True))
        by_row = np.nan_to_num(e / e.sum(axis=-2, keepdims=True))
    return [softmax_along(S, axis=-2) @ inputs["V"], by_row @ inputs["V"]]


_OVER_QUERIES_BLOCKED = (
    "Your softmax runs over the queries, down each key's column. Key {key} is blocked for "
    "every query, so a softmax down its column has nothing to share out and gives NaN "
    "(0 / 0, or -inf - (-inf)), which spreads to every output. Whose weights must sum to 1, "
    "and along which axis do they lie?"
)
_MASK_WRITTEN_INTO = (
    "Your `masked_attention` wrote into its input mask: an assignment such as "
    "`mask[...] = ...` or `mask &= ...` changes the caller's array, and whoever calls your "
    "function still needs the original mask. `np.where(mask, S, -np.inf)` only reads the "
    "mask and makes a new array of scores. Which of your lines writes into `mask`?"
)


@dataclass(frozen=True)
class MaskedAttentionCheck(ArrayCheck):
    """An ArrayCheck that, once the result is right, also fails an answer that hands the
    mask to the course's softmax: the exercise asks the learner to do the masking. It also
    names a softmax down the columns on an input where a key is blocked for every query
    (0 / 0 there, so no finite mistake matches), and says how not to write into a bool mask."""

    def _with_error_hint(self, fail: Fail, case: Case) -> Fail:
        if "changed its input mask in place" in fail.message:
            return Fail(_MASK_WRITTEN_INTO)
        return super()._with_error_hint(fail, case)

    def _diagnosis(self, got, want, case: Case, name: str, elsewhere=lambda: []) -> str:
        blocked = np.flatnonzero((~case.inputs["mask"]).all(axis=-2))
        if got.shape == want.shape and blocked.size and not np.isfinite(got).all():
            # The NaN alone could come from anything: the answer must also be a column
            # softmax on every other input where it is finite, and be finite on one.
            finite = [(c, theirs) for c, theirs in elsewhere() if np.isfinite(theirs).all()]
            if finite and all(
                any(matches(theirs, w) for w in _over_queries(c.inputs)) for c, theirs in finite
            ):
                return _OVER_QUERIES_BLOCKED.format(key=int(blocked[0]))
        return super()._diagnosis(got, want, case, name, elsewhere)

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        spy = COURSE_SPY.get()
        if not result.passed or (spy is not None and spy.used):
            return result  # an answer that runs the course's own attention is told so by check
        if _passes_mask_to_softmax(answer, self.cases()[0].inputs, timeout):
            return CheckResult(False, _MASK_HANDED_OVER, name)
        return result


register(
    LESSON,
    solutions.masked_attention,
    "masked_attention(Q, K, V, mask) -> attention where only keys with mask True count, "
    "shape (..., n_q, d_v)",
    MaskedAttentionCheck(
        masked_attention_cases,
        reference=attention,
        shape_rule="the leading batch and head axes of Q, then one row per query and one "
        "column per value feature, (..., n_q, d_v)",
        mistakes=(
            *BATCH_MISTAKES,
            *MASK_MISTAKES,
            *_common_mistakes(),
            _FLAT_MASKED,
            _FLAT_UNMASKED,
        ),
        hints=(_leak_hint, _overflow_hint, _zero_row_hint, _clip_hint, _outside_values_hint),
        shape_hint=_BATCHED_SHAPES,
        index_hint=(
            "Indexing S with the (n_q, n_k) mask works only while S is 2-D too. With batch "
            "and head axes in front, how do you apply one mask to every (n_q, n_k) slice? "
            "(Broadcasting lines shapes up from the right.)"
        ),
        # The mask is what most mistakes here are about; Q, K and V are too big to read.
        shown_inputs=("mask",),
        error_hints=(
            (_dot_on_batches, _DOT_ON_BATCHES),
            (_row_total_without_keepdims, _keepdims("..., ")),
            (_mask_transposed, _TRANSPOSED_MASK),
            (lambda message, inputs: "for @: 'numpy.float64'" in message, _LEADING_AXES),
            (lambda message, inputs: "too many indices for array" in message, _LEADING_AXES),
            (_shape_unpacked(fewer=False), _MORE_AXES_ASSUMED),
            (
                lambda message, inputs: "too many subscripts for operand" in message,
                _MORE_AXES_ASSUMED,
            ),
            (_shape_unpacked(fewer=True), _FEWER_AXES_ASSUMED),
            (lambda message, inputs: "no '...' ellipsis" in message, _FEWER_AXES_ASSUMED),
        ),
    ),
)
