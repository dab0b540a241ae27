"""Exercises ``longest_sequence``, ``merge_states`` and ``online_softmax``.

``longest_sequence(memory_bytes, d, bytes_per_number)``: the longest sequence whose
attention peak, ``(2n² + 4nd)`` numbers, fits in a memory budget: the n² wall turned
round. Counts are compared exactly, so n ± 1 on a large budget fails too.
``merge_states(m1, l1, o1, m2, l2, o2)``: the running maximum, sum and output sum of two
parts of a row combined into those of the whole row (the split-KV merge); a plain softmax
cannot fake it, and every slip of the rescaling, of l or of o, shows in the returned numbers.
``online_softmax(scores, block_size)``: the softmax of one
row computed block by block with a running maximum and a running sum, as tiled
attention does. The checker tests rows whose maximum arrives early, in the middle or late,
with scores too large for a plain exp, ragged last blocks, block_size 1 and a single block,
and names the classic slips of the running statistics. A right result is then run once more
on a row that counts the scores each maximum or sum takes in at once, and the order in which
the blocks are read: a plain softmax of the whole row (more than block_size at once) fails,
and so does a two-pass one that finds every block's maximum (or the row's, with Python's
max) before it sums a block; a check on the finished weights (``weights.sum()``) reads no
score and is not counted. Slices, copies and a row padded with -inf and reshaped into
blocks keep each score's position, so they are followed; so are ``np.asarray(scores)`` and
``np.array(scores)``, which return the counting row itself while the answer runs on it. A row
turned into a list, or into an array some other way (``np.ascontiguousarray``), hides its
reads and is asked to work on ``scores`` directly. An
answer that runs the course's ``tiled_attention`` (or ``fast.attention``) is told so.

Lesson: ``notebooks/07_cost_and_tiling.ipynb``.
"""

import contextlib
import math
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import fast
from ..softmax import softmax
from ..tiled import tiled_attention
from . import solutions
from .arrays import EXP_LIMIT, ArrayCheck, Case, Mistake, overflow_hint, softmax_rows
from .calling import COURSE_SPY, call_answer, run_with_time_limit
from .messages import CheckResult, Fail, TooSlow
from .registry import register

LESSON = "notebooks/07_cost_and_tiling.ipynb"

# ------------------------------------------------------------- longest_sequence


def peak_bytes(n, d, bytes_per_number):
    """Attention's peak for n tokens: ``(2 n² + 4 n d) · bytes_per_number`` (lesson 07)."""
    return (2 * n * n + 4 * n * d) * bytes_per_number


def longest_sequence(memory_bytes, d, bytes_per_number):
    """The reference: the largest n with ``peak_bytes(n, d, b) ≤ memory_bytes``.

    ``2n² + 4nd ≤ N`` (N whole numbers fit) is ``(n + d)² ≤ N/2 + d²``; in whole numbers,
    ``n = isqrt(N // 2 + d²) − d``, exact for any size.
    """
    numbers = int(memory_bytes) // int(bytes_per_number)
    return max(math.isqrt(numbers // 2 + int(d) * int(d)) - int(d), 0)


def _largest(fits):
    """The largest n ≥ 0 with ``fits(n)``, for a ``fits`` that is true up to some n."""
    low, high = 0, 1
    while fits(high):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def longest_cases() -> list[Case]:
    return [
        Case("1 MiB, d = 64, float32", {"memory_bytes": 2**20, "d": 64, "bytes_per_number": 4}),
        Case(
            "exactly the peak of 100 tokens, d = 16, float16",
            {"memory_bytes": peak_bytes(100, 16, 2), "d": 16, "bytes_per_number": 2},
        ),
        Case(
            "one byte less than the peak of a single token, d = 8, float32",
            {"memory_bytes": peak_bytes(1, 8, 4) - 1, "d": 8, "bytes_per_number": 4},
        ),
        # At about 12 million tokens, only a root exact to the token (float64, math.isqrt)
        # lands on n: a float32 root keeps about 7 significant digits and gives n + 1 here.
        Case(
            "exactly the peak of 12,345,678 tokens, d = 128, float16",
            {"memory_bytes": peak_bytes(12_345_678, 128, 2), "d": 128, "bytes_per_number": 2},
        ),
        Case(
            "one byte less than the peak of 12,345,678 tokens, d = 128, float16",
            {"memory_bytes": peak_bytes(12_345_678, 128, 2) - 1, "d": 128, "bytes_per_number": 2},
        ),
        Case(
            "10¹⁵ bytes, d = 128, float16: about 16 million tokens",
            {"memory_bytes": 10**15, "d": 128, "bytes_per_number": 2},
        ),
    ]


LONGEST_MISTAKES = (
    Mistake(
        "You left out the 4 n d numbers of Q, K, V and O. The two n × n matrices are most of "
        "the peak, but not all of it: solve 2n² + 4nd ≤ (numbers that fit), not 2n² ≤ it.",
        lambda memory_bytes, d, bytes_per_number: math.isqrt(memory_bytes // bytes_per_number // 2),
    ),
    Mistake(
        "You solved 2n² + 2nd ≤ (numbers that fit): the part of the peak that tracemalloc "
        "measured inside `attention` (S, P, O and its copy of V). That leaves out Q and K, "
        "made before the call. The budget must hold the whole peak, 2n² + 4nd numbers.",
        lambda memory_bytes, d, bytes_per_number: _largest(
            lambda n: (2 * n * n + 2 * n * d) * bytes_per_number <= memory_bytes
        ),
    ),
    Mistake(
        "You allowed for one n × n matrix, but two are alive at once, S and P: the peak is "
        "(2n² + 4nd) numbers.",
        lambda memory_bytes, d, bytes_per_number: _largest(
            lambda n: (n * n + 4 * n * d) * bytes_per_number <= memory_bytes
        ),
    ),
    Mistake(
        "You treated the budget as a count of numbers. It is in bytes: divide it by "
        "bytes_per_number first (or multiply the peak's numbers by it).",
        lambda memory_bytes, d, bytes_per_number: _largest(
            lambda n: 2 * n * n + 4 * n * d <= memory_bytes
        ),
    ),
    Mistake(
        "You rounded up (or to the nearest whole number, which rounds this root up). The n "
        "you return must fit, so round *down*: one token more than the exact root already "
        "needs more memory than there is.",
        lambda memory_bytes, d, bytes_per_number: max(
            math.ceil(math.sqrt(memory_bytes / bytes_per_number / 2 + d * d) - d), 0
        ),
    ),
    Mistake(
        "Your n is about d tokens too many, at every budget. Completing the square gives "
        "(n + d)² ≤ (numbers that fit) / 2 + d², so its square root is n + d, not n: what "
        "is left to do to get n itself?",
        lambda memory_bytes, d, bytes_per_number: math.isqrt(
            memory_bytes // bytes_per_number // 2 + d * d
        ),
    ),
    Mistake(
        "Your n is about 2d tokens too many, at every budget: a sign slip. When you solve "
        "the quadratic 2n² + 4nd = (numbers that fit) for n, which sign does the d outside "
        "the square root carry?",
        lambda memory_bytes, d, bytes_per_number: max(
            math.floor(math.sqrt(memory_bytes / bytes_per_number / 2 + d * d) + d), 0
        ),
    ),
    Mistake(
        "You turned the budget into GiB (or another unit) before solving. memory_bytes is "
        "already in bytes, the same unit as (2n² + 4nd) · bytes_per_number: compare the two "
        "as they are.",
        lambda memory_bytes, d, bytes_per_number: _largest(
            lambda n: peak_bytes(n, d, bytes_per_number) <= memory_bytes / 2**30
        ),
    ),
    Mistake(
        "You kept the sequences whose peak is strictly *below* the budget. A peak equal to "
        "the memory still fits: use ≤.",
        lambda memory_bytes, d, bytes_per_number: _largest(
            lambda n: peak_bytes(n, d, bytes_per_number) < memory_bytes
        ),
    ),
)


def _not_whole_hint(got, want, inputs):
    value = float(got) if got.ndim == 0 else None
    if value is not None and np.isfinite(value) and value != int(value):
        return (
            f"You returned {value:.6g}, the exact root of the inequality; a sequence has a "
            f"whole number of tokens. Round down: the largest whole n that fits."
        )
    return None


def _budget_hint(got, want, inputs):
    """A whole number of tokens that no named mistake explains: how far off it is."""
    if got.ndim != 0 or not np.isfinite(got) or float(got) != int(got):
        return None
    n, memory, right = int(got), inputs["memory_bytes"], int(want)
    need = peak_bytes(n, inputs["d"], inputs["bytes_per_number"])
    if right > 0 and abs(n - right) > max(2, right // 100):
        return (
            f"Your `longest_sequence` gives {n:,} tokens, {n / right:.3g} times the right "
            f"number. Write the peak of n tokens in numbers, then in bytes, and set it ≤ "
            f"memory_bytes: which factor does your inequality leave out or add?"
        )
    # A few tokens off at millions of tokens: most likely a root not exact to the token.
    precision = (
        f" The right n here, {right:,}, has {len(str(right))} digits: a float32 square root keeps "
        f"only about 7 significant digits (float64 about 16), so it can land on the wrong "
        f"whole number. Is every step of yours exact to the token (float64, or math.isqrt)?"
        if right >= 10**6 and abs(n - right) <= 2
        else ""
    )
    if need > memory:
        return (
            f"Your `longest_sequence` gives {n:,} tokens, which need {need:,} bytes: more than "
            f"the {memory:,} there are. Where does your method stop: at the last n that fits, "
            f"or one step later?" + precision
        )
    return (
        f"Your `longest_sequence` gives {n:,} tokens, but {right:,} still fit. Where does "
        f"your method stop: does it keep a peak exactly equal to the budget, and does it "
        f"round down only once?" + precision
    )


SLOW_SEARCH = (
    "This budget is not tiny: n runs to about 12 million here and about 16 million at "
    "10¹⁵ bytes, so counting n up one at a time takes that many steps. Can you get there in "
    "a few dozen instead: double n "
    "until it no longer fits, then halve the gap between the last n that fits and the "
    "first that does not? (Or solve the inequality for n directly.)"
)


@dataclass(frozen=True)
class LongestCheck(ArrayCheck):
    """An ArrayCheck whose time-limit message, on a large budget, points to a faster search."""

    def _answer_on(self, answer, case: Case, want, name: str, timeout, notes) -> np.ndarray:
        try:
            return super()._answer_on(answer, case, want, name, timeout, notes)
        except TooSlow as slow:
            if case.inputs["memory_bytes"] < 10**9:
                raise
            message = slow.message
            head, _, _ = message.partition(" Is there an endless loop?")
            background = message[message.find(" It is still running") :]
            tail = background if " It is still running" in message else ""
            raise TooSlow(f"{head} {SLOW_SEARCH}{tail}") from None


# ---------------------------------------------------------------- merge_states


def merge_states(m1, l1, o1, m2, l2, o2):
    """The reference: ``m = max(m1, m2)``; each part's l and o rescaled by ``e^(m_i − m)``."""
    m = max(m1, m2)
    if m == -np.inf:  # two empty parts: nothing to rescale
        return m, 0.0, 0.0
    a, b = np.exp(m1 - m), np.exp(m2 - m)
    return m, l1 * a + l2 * b, o1 * a + o2 * b


def merge_cases() -> list[Case]:
    def case(label, m1, l1, o1, m2, l2, o2):
        return Case(label, {"m1": m1, "l1": l1, "o1": o1, "m2": m2, "l2": l2, "o2": o2})

    return [
        case("the second part has the larger maximum", 2.0, 1.5, 0.6, 3.0, 1.25, -0.5),
        case("the first part has the larger maximum", 5.0, 2.0, -1.2, 1.0, 3.0, 2.1),
        case("equal maxima", 0.5, 1.25, 0.8, 0.5, 2.0, -0.4),
        case("both maxima below 0", -4.0, 1.1, 0.3, -2.5, 1.7, 1.4),
        case(
            "an empty first part (m1 = -inf, l1 = 0, o1 = 0), as before the first block",
            -np.inf,
            0.0,
            0.0,
            1.5,
            2.2,
            -0.9,
        ),
        case("maxima far apart, the larger second: 3 and 1000", 3.0, 1.8, 1.1, 1000.0, 1.0, 0.7),
        case("maxima far apart, the larger first: 1000 and 3", 1000.0, 1.0, 0.7, 3.0, 1.8, 1.1),
    ]


_MERGE_RESCALE = (
    "l1 and o1 are sums of e^(s − m1) (times v for o1), l2 and o2 sums of e^(s − m2); the "
    "merged l and o must be sums of e^(s − m). Since e^(s − m) = e^(s − m1) · e^(m1 − m), by "
    "what must each part's sums be multiplied?"
)


def _merged_with(new_m, factors):
    """A merge that takes ``new_m(m1, m2)`` as m and multiplies part 1's and part 2's sums by
    the two numbers ``factors(m1, m2, m)`` returns: each slip below differs in one of them."""

    def merge(m1, l1, o1, m2, l2, o2):
        m = new_m(m1, m2)
        a, b = factors(m1, m2, m)
        return m, l1 * a + l2 * b, o1 * a + o2 * b

    return merge


MERGE_MISTAKES = (
    Mistake(
        "You added the two parts' l and o as they are. They were taken against different "
        "maxima, so their terms are on different scales. " + _MERGE_RESCALE,
        lambda m1, l1, o1, m2, l2, o2: (max(m1, m2), l1 + l2, o1 + o2),
    ),
    Mistake(
        "Your m and l are right, but you added o1 and o2 as they are. o is a sum of "
        "e^(s − m_i) v_j, taken against the same maximum as l: which factor did l need, and "
        "does o need it too?",
        lambda m1, l1, o1, m2, l2, o2: (
            max(m1, m2),
            merge_states(m1, l1, o1, m2, l2, o2)[1],
            o1 + o2,
        ),
    ),
    Mistake(
        "Your rescale factors are upside down: a part whose maximum is below m must "
        "shrink, by e^(m_i − m) ≤ 1, not grow by e^(m − m_i). " + _MERGE_RESCALE,
        _merged_with(max, lambda m1, m2, m: (np.exp(m - m1), np.exp(m - m2))),
    ),
    Mistake(
        "You rescaled the first part's sums but left the second part's as they are. The "
        "second part's maximum can be below m too (here the first part holds the largest "
        "score). " + _MERGE_RESCALE,
        _merged_with(max, lambda m1, m2, m: (np.exp(m1 - m), 1.0)),
    ),
    Mistake(
        "You rescaled the second part's sums but left the first part's as they are. When "
        "the second part brings a larger maximum, the first part's terms must shrink to "
        "match it. " + _MERGE_RESCALE,
        _merged_with(max, lambda m1, m2, m: (1.0, np.exp(m2 - m))),
    ),
    Mistake(
        "Your third number is o / l, the attention output itself. Keep o unnormalised, a "
        "sum like l: the merged state may be merged again with the next block, and only "
        "the very last o is divided by l.",
        lambda m1, l1, o1, m2, l2, o2: (
            max(m1, m2),
            merge_states(m1, l1, o1, m2, l2, o2)[1],
            merge_states(m1, l1, o1, m2, l2, o2)[2] / merge_states(m1, l1, o1, m2, l2, o2)[1],
        ),
    ),
    Mistake(
        "Your m is m1 + m2. The merged m is the largest score of the whole row, and the "
        "largest of all the scores is the larger of the two parts' largest: which "
        "function gives that?",
        lambda m1, l1, o1, m2, l2, o2: (m1 + m2, *merge_states(m1, l1, o1, m2, l2, o2)[1:]),
    ),
    Mistake(
        "You started the maximum at 0 (max(0, m1, m2)): when every score is below 0, that "
        "is not the largest score of the row. The merged m must be the largest score "
        "itself, so that the largest term of l is exactly 1.",
        _merged_with(
            lambda m1, m2: max(0.0, m1, m2),
            lambda m1, m2, m: (np.exp(m1 - m), np.exp(m2 - m)),
        ),
    ),
    Mistake(
        "You took the second part's maximum as the new m, even when the first part's is "
        "larger. Then e^(m1 − m2) can overflow (e^997 is inf). A running maximum never goes "
        "down: which m do both parts' scores stay below?",
        _merged_with(lambda m1, m2: m2, lambda m1, m2, m: (np.exp(m1 - m2), 1.0)),
    ),
)


_merge_overflow_hint = overflow_hint(
    "Your result holds NaN or inf where a maximum is as large as 1000: e^1000 overflows to "
    "inf, and inf / inf is NaN. Do you take e of a maximum on its own somewhere? Take it only "
    "of a difference m_i − m, which is never above 0, so that e^(m_i − m) ≤ 1.",
    lambda inputs: max((abs(m) for m in (inputs["m1"], inputs["m2"]) if np.isfinite(m)), default=0),
)


_EMPTY_PART = (
    "An empty part has l = 0 (and o = 0), so dividing by l1 or l2 fails on it. The merge "
    "never needs to divide by l: l and o are sums, and two sums merge with their rescale "
    "factors alone. Where does your code divide, and what does it compute without it?"
)


@dataclass(frozen=True)
class MergeCheck(ArrayCheck):
    """An ArrayCheck that, when the answer returns None on one test input but not on
    another, names that input: a path through an if/elif that ends without a return."""

    def _answer_on(self, answer, case: Case, want, name: str, timeout, notes) -> np.ndarray:
        try:
            return super()._answer_on(answer, case, want, name, timeout, notes)
        except TooSlow:
            raise
        except Fail as fail:
            if not fail.message.startswith(f"Your `{name}` returned None."):
                raise
            for other in self.cases():
                if other.label == case.label:
                    continue
                try:
                    value = call_answer(answer, other.inputs, name=name, timeout=timeout)
                except Fail:  # TooSlow too: that input says nothing about this one
                    continue
                if value is not None:
                    m1, m2 = case.inputs["m1"], case.inputs["m2"]
                    raise Fail(
                        f'On the test input "{case.label}" (m1 = {m1}, m2 = {m2}) your '
                        f'`{name}` returned None, though on "{other.label}" it returns '
                        f"numbers. Some path through your code ends without a `return`: does "
                        f"your if/elif have a branch for this case?"
                    ) from None
            raise


def _empty_part_hint(got, want, inputs):
    """NaN or inf where one part is empty: most often a division by its l = 0."""
    empty = inputs["m1"] == -np.inf or inputs["m2"] == -np.inf
    if not empty or np.isfinite(got.astype(np.float64)).all():
        return None
    return (
        "Your result holds NaN or inf when one part is empty (m = -inf, l = 0, o = 0). Two "
        "things give NaN there: dividing by its l (0 / 0), and multiplying its l = 0 by "
        "e^(m − (−inf)) = inf. The merge needs neither: l and o are sums, and two sums merge "
        "with their rescale factors e^(m_i − m) alone, which for the empty part is "
        "e^(−inf) = 0. Where does your code divide by l, or subtract the empty part's m?"
    )


def _merge_hint(got, want, inputs):
    if got.shape != (3,) or not np.isfinite(got.astype(np.float64)).all():
        return None
    got, want = got.astype(np.float64), want.astype(np.float64)
    if not np.allclose(got, want) and np.allclose(np.sort(got), np.sort(want)):
        return (
            "Your three numbers are right, but in another order. The state is returned as "
            "`return m, l, o`: the maximum, the sum, then the output sum."
        )
    if abs(got[0] - want[0]) > 1e-9 * max(1.0, abs(want[0])):
        return (
            f"Your m is {got[0]:.4g}. The merged m is the largest score of the whole "
            "row, both parts together: which of m1 and m2 is it here?"
        )
    if not np.isclose(got[1], want[1]):
        return f"Your m is right, but your l is not. {_MERGE_RESCALE}"
    return f"Your m and l are right, but your o is not. {_MERGE_RESCALE}"


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


def _block_own_max(scores, block_size):
    """The old sum is rescaled to m_new, but the new block's terms are taken against the
    block's own maximum."""
    m, l = -np.inf, 0.0
    for block in _blocks(scores, block_size):
        m_new = max(m, block.max())
        l = l * np.exp(m - m_new) + np.exp(block - block.max()).sum()
        m = m_new
    return np.exp(scores - m) / l


def _first_block_max(scores, block_size):
    """The maximum of the first block, never updated: later, larger scores overflow exp."""
    m = _blocks(scores, block_size)[0].max()
    e = np.exp(scores - m)
    return e / e.sum()


def _running_state(blocks, m=-np.inf):
    """The (m, l) of the online softmax after ``blocks``, its running maximum started at ``m``."""
    l = 0.0
    for block in blocks:
        m_new = max(m, block.max())
        l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()
        m = m_new
    return m, l


def _max_from_zero(scores, block_size):
    """The running maximum started at 0 instead of -inf: a row far below 0 underflows."""
    m, l = _running_state(_blocks(scores, block_size), m=0.0)
    return np.exp(scores - m) / l


def _last_block_skipped(scores, block_size):
    """Only full blocks: a shorter last block never enters the maximum or the sum."""
    starts = range(0, len(scores) - block_size + 1, block_size)
    m, l = _running_state(scores[k : k + block_size] for k in starts)
    return np.exp(scores - m) / l


def _stops_one_short(scores, block_size):
    """The loop runs over range(0, len(scores) - 1, block_size): a last block of 1 is lost."""
    starts = range(0, len(scores) - 1, block_size)
    m, l = _running_state(scores[k : k + block_size] for k in starts)
    return np.exp(scores - m) / l


def _exp_against_last_block(scores, block_size):
    """The running sum is right, but the weights are taken against the last block's maximum."""
    blocks = _blocks(scores, block_size)
    _, l = _running_state(blocks)
    return np.exp(scores - blocks[-1].max()) / l


def _block_max_as_running_max(scores, block_size):
    """The "running" maximum is only the current block's maximum: it can go down."""
    m, l = -np.inf, 0.0
    for block in _blocks(scores, block_size):
        m_new = block.max()
        l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()
        m = m_new
    return np.exp(scores - m) / l


def _stale_final_max(scores, block_size):
    """The running sum is right, but the final weights use the maximum from before the last
    block's update: every weight is too large by the same factor."""
    m_old, m, l = -np.inf, -np.inf, 0.0
    for block in _blocks(scores, block_size):
        m_old, m = m, max(m, block.max())
        l = l * np.exp(m_old - m) + np.exp(block - m).sum()
    return np.exp(scores - m_old) / l


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
        Case(
            "5 scores, the largest in the first block and the rest about 1000 lower, "
            "block_size = 2",
            {"scores": np.array([1000.0, 999.0, -5.0, -6.0, -7.0]), "block_size": 2},
        ),
        Case(
            "8 scores, the largest near 900 in the middle block, block_size = 3 (3 + 3 + 2)",
            {
                "scores": np.array([-2.0, 1.0, 0.5, 900.0, 899.0, 3.0, -1.0, 2.0]),
                "block_size": 3,
            },
        ),
    ]


_RUNNING = (
    "When a block raises the maximum from m to m_new, every term exp(s − m) already in the "
    "running sum l was computed with the old maximum. By what factor must each of them "
    "change to become exp(s − m_new), and when do you apply it (Section 2's update)?"
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
        "all blocks are seen, which maximum must every exponential be taken against, so "
        "that they match the terms in l?",
        _stale_exponentials,
    ),
    Mistake(
        "You rescaled the old sum l to the new maximum, but took the new block's own terms "
        "against the block's own maximum, exp(s − max of the block). When that block's "
        "maximum is below the running m, its terms come out too large. They must be sums "
        "against m_new like the rest of l: by which factor, as in Exercise 2's "
        "merge_states, does a part's sum taken against its own maximum m_B become one "
        "against m_new?",
        _block_own_max,
    ),
    Mistake(
        "You kept the maximum of the first block and never updated it, so a later, larger "
        "score overflows exp (exp(800) = inf, and inf / inf is NaN). What must happen to the "
        "maximum each time a block comes in? " + _RUNNING,
        _first_block_max,
    ),
    Mistake(
        "Your running sum l is right, but at the end you took exp(s − ·) against the last "
        "block's maximum, not the maximum of the whole row. When the largest score sits in "
        "an earlier block, that exp overflows. Against which maximum was every term of l "
        "taken?",
        _exp_against_last_block,
    ),
    Mistake(
        "Your running sum l is right, but your weights are all too large by the same "
        "factor, so they sum to more than 1: the final exp(s − m) uses a maximum from "
        "before the last block raised it, while your l was rescaled to the new one. Do the "
        "final exp(s − m) and your l use the same m, the one after the last block?",
        _stale_final_max,
    ),
    Mistake(
        "Your running maximum is only the current block's maximum, so it goes down after a "
        "block of smaller scores, and exp(m − m_new) = exp(1000) overflows. The running "
        "maximum is the largest score seen so far: what should m_new be when every score "
        "of the new block is below m?",
        _block_max_as_running_max,
    ),
    Mistake(
        "Your softmax overflows: without subtracting a maximum, exp(1000) is inf (and "
        "exp(-1000) is 0), so you get inf / inf or 0 / 0, which is NaN. Keep a running "
        "maximum m and sum exp(s − m) instead. " + _RUNNING,
        _online_without_max,
    ),
    Mistake(
        "You started the running maximum at 0. For a row whose scores all lie far below 0, "
        "near -1000 say, every exp(s − 0) underflows to 0, and 0 / 0 is NaN. Which starting "
        "value does the first block's maximum always replace, whatever its scores?",
        _max_from_zero,
    ),
    Mistake(
        "Your loop leaves out the last block when it is shorter than block_size (7 scores in "
        "blocks of 3 end with a block of 1). Its scores never enter the maximum or the sum. "
        "Which range of starts visits every block, the short one too?",
        _last_block_skipped,
    ),
    Mistake(
        "Your loop stops one start too early, as range(0, len(scores) - 1, block_size) "
        "does: when the last block starts at the last score (blocks of 1, say), it is never "
        "visited, and that score never enters the maximum or the sum. Which stop makes "
        "range reach every start?",
        _stops_one_short,
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
        "You forgot to divide by the sum: exp(s − m) alone are not weights. What did you "
        "keep the running sum l for?",
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
    ratio = got / want.astype(np.float64)
    if abs(total - 1.0) > 1e-4 and np.isfinite(ratio).all() and np.allclose(ratio, ratio[0]):
        head = (
            f"Your weights sum to {total:.4g}, not 1, but they are proportional to the right "
            "ones: every weight is off by the same factor, so your l is "
        )
        if total > 1:
            return head + (
                "too small. Either some scores never entered it (do your slices "
                "scores[start:start + block_size] cover every score once?) or your final "
                "exp(s − m) uses an older m than your l, not the one after the last block."
            )
        return head + (
            "too large. Either some scores entered it more than once (do your slices "
            "scores[start:start + block_size] overlap?) or your final exp(s − m) uses a "
            "larger m than your l."
        )
    if abs(total - 1.0) > 1e-4:
        return (
            f"Your weights sum to {total:.4g}, not 1. If the maximum changes between blocks, "
            "the running sum must follow it. " + _RUNNING
        )
    return None


# The result alone cannot tell an online softmax from a plain one, which takes the maximum and
# the sum of the whole row at once, or from a two-pass one, which finds every block's maximum
# before it sums any. So an answer that passes is run once more on a row that notes how many
# scores one maximum or sum takes in at a time (more than block_size means the answer needed
# the whole row before it started), and in which order it read the blocks: a sum over a block
# after a later block's maximum (or scores) was read is a second pass over the row.

_ROW_MAXIMA = (np.maximum, np.fmax, np.minimum, np.fmin)
_ROW_SUMS = (np.add, np.logaddexp)
# NumPy functions that look at every score they are given, as a maximum does.
_ROW_LOOKS = {
    np.argmax,
    np.argmin,
    np.sort,
    np.argsort,
    np.partition,
    np.argpartition,
    np.nanargmax,
    np.nanargmin,
    np.ptp,
}


class _Score(np.float64):
    """One score read on its own from the counting row (or from an array computed from it).

    It notes in the row's ``events`` each time it is compared ("cmp") or used in arithmetic
    ("use"), so that a row copied score by score into a list (read far ahead of any use), or
    whose maximum is taken by Python's max before any arithmetic, can be told from a loop.
    A term of an array computed from the row (``reads`` set) notes each addition as a sum of
    its position, as Python's sum over ``np.exp(s - m)`` does.
    """

    def _noted(self, kind: str) -> None:
        events = self.__dict__.get("events")
        position = self.__dict__.get("position", -1)
        if events is not None:
            events.append((kind, position))
        reads = self.__dict__.get("reads")
        if reads is not None and kind == "sum":
            reads.append(("sum", position, position))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs:
            if isinstance(x, _Score):
                x._noted("use")
        plain = [_plain(x) for x in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)

    __hash__ = np.float64.__hash__


def _plain(x: Any) -> Any:
    """x as a plain float64 if it is a _Score (without calling its own __float__)."""
    return np.float64(float.__float__(x)) if isinstance(x, _Score) else x


def _noting(name: str, kind: str):
    base = getattr(np.float64, name)

    def method(self, *args):
        for x in (self, *args):
            if isinstance(x, _Score):
                x._noted(kind)
        plain = [_plain(x) for x in args]
        return base(_plain(self), *plain)

    return method


for _names, _kind in (
    ("__add__ __radd__", "sum"),
    ("__sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __pow__ __rpow__", "use"),
    ("__neg__ __float__", "use"),
    ("__lt__ __le__ __gt__ __ge__ __eq__ __ne__ __bool__", "cmp"),
):
    for _name in _names.split():
        setattr(_Score, _name, _noting(_name, _kind))


class _CountingRow(np.ndarray):
    """An array of scores that notes the most entries a max or sum reduced at once.

    Every array computed from it (slices, ``s - m``, ``np.exp(...)``) shares the same
    records: ``widest[0]``, and ``reads``, the order of its maxima ("max", also argmax, sort
    and reading scores one by one) and sums ("sum", also reading one by one an array computed
    from the row, such as ``np.exp(s - m)``, as Python's sum does), each with the first and
    last position in the row it took in. ``positions`` holds each entry's position in the
    original row (None once that is lost); ``derived`` says whether the array was computed
    from the row rather than cut or copied from it. ``events`` notes each score read on its
    own from the row ("read") and its first use ("use"), and whole-row ``tolist()`` copies
    ("copy"). Everything else behaves as a plain float array.
    """

    widest: list[int]
    reads: list[tuple[str, int, int]]
    events: list[tuple[str, int]]
    positions: np.ndarray | None
    derived: bool
    final: np.ndarray | None  # the right weights of the whole row

    def __array_finalize__(self, obj: Any) -> None:
        self.widest = getattr(obj, "widest", [0])
        self.reads = getattr(obj, "reads", [])
        self.events = getattr(obj, "events", [])
        self.derived = getattr(obj, "derived", False)
        self.final = getattr(obj, "final", None)
        self.positions = None

    def _is_final(self) -> bool:
        """Whether this array holds the finished weights at its positions. A check on them
        after the pass (``weights.sum()``, ``max(weights)``) reads no score: not counted."""
        if not self.derived or self.positions is None or self.final is None:
            return False
        here = np.asarray(self.positions)
        if here.size == 0 or (here < 0).any():
            return False
        values = np.asarray(self, dtype=np.float64)
        return bool(np.allclose(values, self.final[here], rtol=1e-9, atol=1e-12))

    def _note(self, kind: str, count: int, positions: Any) -> None:
        self.widest[0] = max(self.widest[0], count)
        if positions is not None:
            scores = np.asarray(positions)[np.asarray(positions) >= 0]  # not the padding
            if scores.size:
                self.reads.append((kind, int(scores.min()), int(scores.max())))

    def __getitem__(self, key):
        result = super().__getitem__(key)
        here = self.positions
        if here is None:
            return result
        try:
            picked = here[key]
        except (IndexError, TypeError, ValueError):
            return result
        if isinstance(result, _CountingRow):
            result.positions = picked if np.shape(picked) == result.shape else None
        elif np.ndim(picked) == 0 and picked < 0:  # padding added to the row, not a score
            return result
        elif np.ndim(picked) == 0 and self.derived and self._is_final():
            return result  # one of the finished weights: reading it reads no score
        elif np.ndim(picked) == 0 and self.derived:  # a term, e.g. of Python's sum
            result = _Score(result)
            result.reads, result.position = self.reads, int(picked)
        elif np.ndim(picked) == 0:  # one score read on its own, as a loop or Python's max does
            self._note("max", 1, picked)
            self.events.append(("read", int(picked)))
            result = _Score(result)
            result.events, result.position = self.events, int(picked)
        return result

    def __iter__(self):
        if self.ndim == 0 or self.positions is None:
            yield from super().__iter__()
            return
        for k in range(self.shape[0]):  # a row of scores, or of blocks after a reshape
            yield self[k]

    def tolist(self):
        if self.ndim != 1 or self.positions is None or not self.positions.size:
            return super().tolist()
        if self.derived:  # its terms still note being summed
            return [self[k] for k in range(self.shape[0])]
        self._note("max", 0, self.positions)
        first, last = int(np.min(self.positions)), int(np.max(self.positions))
        self.events.extend([("copy", first), ("copy", last)])
        return super().tolist()

    def astype(self, *args, **kwargs):
        return self._same_positions(super().astype(*args, **kwargs))

    def copy(self, *args, **kwargs):
        return self._same_positions(super().copy(*args, **kwargs))

    def _same_positions(self, result):
        # A converted or copied row is still the learner's row: keep following its reads.
        if isinstance(result, _CountingRow) and result.shape == self.shape:
            result.positions = self.positions
        return result

    def _moved(self, name: str, *args, **kwargs):
        # The row cut into blocks (a padded row reshaped to (n_blocks, block_size), say):
        # every entry keeps its position in the row, so its reads are still followed.
        result = getattr(super(), name)(*args, **kwargs)
        if isinstance(result, _CountingRow) and self.positions is not None:
            try:
                moved = getattr(self.positions, name)(*args, **kwargs)
            except (TypeError, ValueError):
                moved = None
            result.positions = moved if np.shape(moved) == result.shape else None
        return result

    def reshape(self, *args, **kwargs):
        return self._moved("reshape", *args, **kwargs)

    def ravel(self, *args, **kwargs):
        return self._moved("ravel", *args, **kwargs)

    def flatten(self, *args, **kwargs):
        return self._moved("flatten", *args, **kwargs)

    def argmax(self, *args, **kwargs):
        self._note("max", self.size, self.positions)
        return np.asarray(self).argmax(*args, **kwargs)

    def argmin(self, *args, **kwargs):
        self._note("max", self.size, self.positions)
        return np.asarray(self).argmin(*args, **kwargs)

    def sort(self, *args, **kwargs):
        self._note("max", self.size, self.positions)
        np.asarray(self).sort(*args, **kwargs)

    def argsort(self, *args, **kwargs):
        self._note("max", self.size, self.positions)
        return np.asarray(self).argsort(*args, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func in _ROW_LOOKS and args and isinstance(args[0], _CountingRow):
            args[0]._note("max", args[0].size, args[0].positions)
            plain = (np.asarray(args[0]), *args[1:])
            return func(*plain, **kwargs)
        if func is np.pad and args and isinstance(args[0], _CountingRow):
            return _padded(args[0], args[1:], kwargs)
        if func is np.copy and args and isinstance(args[0], _CountingRow):
            return args[0].copy()  # still the learner's row: its reads are followed
        result = super().__array_function__(func, types, args, kwargs)
        if func is np.concatenate and args and type(result) in (np.ndarray, _CountingRow):
            parts = list(args[0])
            if any(isinstance(p, _CountingRow) for p in parts):
                result = result.view(_CountingRow)
                _joined(result, parts, kwargs.get("axis", args[1] if len(args) > 1 else 0))
        return result

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(x) if isinstance(x, _CountingRow) else x for x in inputs]
        # Arithmetic on a block (``np.exp(block - m)``) uses its scores, even if they were
        # also read one by one first, as ``np.max([m, *block])`` does: not a copy of the row.
        for x in inputs:
            if isinstance(x, _CountingRow) and x.positions is not None:
                self.events.extend(("use", int(p)) for p in np.ravel(x.positions) if p >= 0)
        finished = isinstance(inputs[0], _CountingRow) and inputs[0]._is_final()
        if method == "reduce" and ufunc in (*_ROW_MAXIMA, *_ROW_SUMS) and plain[0].ndim:
            axis = kwargs.get("axis", 0)
            axes = range(plain[0].ndim) if axis is None else np.atleast_1d(axis)
            count = math.prod(plain[0].shape[int(a)] for a in axes)
            first = inputs[0] if isinstance(inputs[0], _CountingRow) else self
            kind = "max" if ufunc in _ROW_MAXIMA else "sum"
            if not finished:  # a check on the finished weights reads no score
                self._note(kind, count, first.positions)
        if "out" in kwargs:
            kwargs["out"] = tuple(
                np.asarray(o) if isinstance(o, _CountingRow) else o for o in kwargs["out"]
            )
        result = getattr(ufunc, method)(*plain, **kwargs)
        # An elementwise result keeps the positions of the input it has the shape of.
        source = next(
            (
                x.positions
                for x in inputs
                if isinstance(x, _CountingRow)
                and x.positions is not None
                and method == "__call__"
                and x.shape == np.shape(result)
            ),
            None,
        )

        def counted(r):
            if type(r) is np.ndarray:
                r = r.view(_CountingRow)
                r.widest, r.reads, r.positions = self.widest, self.reads, source
                r.events, r.derived, r.final = self.events, True, self.final
            return r

        return tuple(counted(r) for r in result) if isinstance(result, tuple) else counted(result)


def _joined(result: _CountingRow, parts: list[Any], axis: Any) -> None:
    """Give ``np.concatenate(parts, axis)`` the records of the row its parts came from, and
    each entry its position in that row (-1 for entries added to it, such as -inf padding)."""
    rows = [p for p in parts if isinstance(p, _CountingRow)]
    result.widest, result.reads, result.events = rows[0].widest, rows[0].reads, rows[0].events
    result.derived = any(p.derived for p in rows)
    result.final = rows[0].final
    if any(p.positions is None for p in rows):
        return
    here: list[Any] = [
        p.positions if isinstance(p, _CountingRow) else np.full(np.shape(p), -1) for p in parts
    ]
    try:
        joined: np.ndarray = np.concatenate(here, axis=axis)
    except (TypeError, ValueError):
        return
    result.positions = joined if joined.shape == result.shape else None


def _padded(row: _CountingRow, args: tuple, kwargs: dict) -> Any:
    """``np.pad(row, *args, **kwargs)``, keeping the row's records; with the default
    constant padding, every score keeps its position and the padding gets -1."""
    plain = np.pad(np.asarray(row), *args, **kwargs)
    padded = plain.view(_CountingRow)
    _joined(padded, [row], 0)
    padded.positions = None
    if (
        row.positions is not None
        and kwargs.get("mode", args[1] if len(args) > 1 else "constant") == "constant"
    ):
        width = kwargs.get("pad_width", args[0] if args else 0)
        try:
            here = np.pad(row.positions, width, mode="constant", constant_values=-1)
        except (TypeError, ValueError):
            return padded
        padded.positions = here if here.shape == padded.shape else None
    return padded


_WHOLE_ATTENTION = {
    tiled_attention.__code__: "attnlab.tiled_attention",
    fast.attention.__code__: "attnlab.fast.attention",
}

ONE_PASS_ROW = np.array([0.5, -1.2, 0.3, 2.0, 1.1, 1.5, 3.4, -0.7, 0.9, 2.6])
ONE_PASS_BLOCK = 3


def _following(convert, copy_by_default: bool):
    """``np.asarray`` or ``np.array`` (``convert``) that, called by the learner's code on the
    counting row, returns the row itself (or a copy of it) rather than a plain array: the
    row's reads are still followed. Called from NumPy or attnlab, or with arguments other
    than ``dtype`` and ``copy``, it is ``convert`` itself."""

    def follow(a, *args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if (
            not isinstance(a, _CountingRow)
            or len(args) > 1
            or set(kwargs) - {"dtype", "copy"}
            or caller.split(".")[0] in ("numpy", "attnlab")
        ):
            return convert(a, *args, **kwargs)
        dtype = args[0] if args else kwargs.get("dtype")
        copy = kwargs.get("copy", copy_by_default)
        return a.astype(a.dtype if dtype is None else dtype, copy=bool(copy))

    return follow


@contextlib.contextmanager
def _conversions_followed() -> Iterator[None]:
    """While the answer runs on the counting row, ``np.asarray(scores)`` and
    ``np.array(scores)`` keep following its reads, as ``scores.copy()`` does."""
    asarray, array = np.asarray, np.array
    np.asarray, np.array = _following(asarray, False), _following(array, True)
    try:
        yield
    finally:
        np.asarray, np.array = asarray, array


def _run_on_counting_row(answer, scores, block_size, timeout) -> _CountingRow | None:
    """The counting row after ``answer(row, block_size)``; None if the answer fails on it
    (it then passed on plain arrays, so the result stands)."""
    row = np.array(scores, dtype=np.float64).view(_CountingRow)
    row.widest, row.reads, row.positions = [0], [], np.arange(row.size)
    row.events, row.derived = [], False
    row.final = softmax(np.asarray(scores, dtype=np.float64))

    def run():
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return answer(row, block_size)

    try:
        with _conversions_followed():
            run_with_time_limit(run, timeout)
    except (Exception, SystemExit):  # the counting row is the checker's business, not theirs
        return None
    return row


def widest_reduction(answer, scores=ONE_PASS_ROW, block_size=ONE_PASS_BLOCK, timeout=None):
    """The most scores one maximum or sum of ``answer(scores, block_size)`` took in at once.

    None if the answer fails on the counting row (it then passed on plain arrays, so the
    result stands).
    """
    row = _run_on_counting_row(answer, scores, block_size, timeout)
    return None if row is None else row.widest[0]


def _never_read(row: _CountingRow) -> bool:
    """Whether the answer took no maximum or sum of the row it was given, and read none of
    its scores: it converted the row first in a way that is not followed
    (``np.ascontiguousarray``, ``asarray`` imported on its own), so the order of its reads is
    hidden."""
    return not row.reads and row.widest[0] == 0


def _copied_ahead(row: _CountingRow, block_size: int) -> bool:
    """Whether the answer copied more than one block of the row before using it: a whole-row
    ``tolist()``, or ``list(scores)`` / ``[x for x in scores]`` (a score of a later block read
    while one of an earlier block was still unused). The copy hides the order of its reads."""
    unused: set[int] = set()
    copied: list[int] = []
    for kind, position in row.events:
        if kind == "copy":
            copied.append(position)
        elif kind != "read":
            unused.discard(position)
        else:
            if any(q // block_size < position // block_size for q in unused):
                return True
            unused.add(position)
    return any(
        b // block_size > a // block_size for a, b in zip(copied[::2], copied[1::2], strict=True)
    )


def _whole_max_first(row: _CountingRow, block_size: int) -> bool:
    """Whether the answer read every block's scores one by one (as Python's max does) before
    it used any score in arithmetic or a sum: a maximum of the whole row first, a first pass."""
    blocks, every = set(), -(-row.size // block_size)
    for kind, position in row.events:
        if kind in ("use", "sum"):
            return False
        if kind == "read":
            blocks.add(position // block_size)
            if len(blocks) == every:
                return True
    return False


def _read_twice(row: _CountingRow, block_size: int) -> bool:
    furthest = -1  # the last block whose scores were read so far
    for kind, _first, last in row.reads:
        if kind == "sum" and furthest > last // block_size:
            return True
        furthest = max(furthest, last // block_size)
    return False


def two_passes(answer, scores=ONE_PASS_ROW, block_size=ONE_PASS_BLOCK, timeout=None) -> bool:
    """Whether ``answer`` summed a block after it had read a later block's scores.

    One pass reads block 1's maximum, sums block 1, then reads block 2, and so on. An
    answer that first finds the maximum of every block (or of the row, with Python's max,
    argmax or a sort), then sums block by block, makes two passes over the row.
    """
    row = _run_on_counting_row(answer, scores, block_size, timeout)
    return row is not None and _read_twice(row, block_size)


@dataclass(frozen=True)
class OnePassCheck(ArrayCheck):
    """An ArrayCheck that, once the result is right, also checks that no maximum or sum took
    in more than one block of scores at once, and that no block was summed after a later
    block had been read."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        spy = COURSE_SPY.get()
        if spy is not None and spy.versions:
            # The course's attention functions do the online softmax too: one called on a
            # row of scores (keys of width 1) answers the exercise without practising it.
            spy.versions.update(_WHOLE_ATTENTION)
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed or (spy is not None and spy.used):
            return result  # an answer that runs the course's own softmax is told so by check
        row = _run_on_counting_row(answer, ONE_PASS_ROW, ONE_PASS_BLOCK, timeout)
        if row is None:
            return result
        widest, n = row.widest[0], ONE_PASS_ROW.size
        if widest > ONE_PASS_BLOCK:
            return CheckResult(
                False,
                f"Your `{name}` gives the right weights, but not block by block: on {n} scores "
                f"in blocks of {ONE_PASS_BLOCK}, one of its maxima or sums took in {widest} "
                f"scores at once. That needs the whole row before it starts, which is what the "
                f"online softmax avoids. Which running quantities can you update from one "
                f"block at a time, so that only the final weights, exp(s − m) / l, touch the "
                f"whole row?",
                name,
            )
        hidden = _never_read(row)
        copied = hidden or _copied_ahead(row, ONE_PASS_BLOCK)
        if _read_twice(row, ONE_PASS_BLOCK) or (
            not copied and _whole_max_first(row, ONE_PASS_BLOCK)
        ):
            return CheckResult(
                False,
                f"Your `{name}` gives the right weights, but in two passes over the row: on "
                f"{n} scores in blocks of {ONE_PASS_BLOCK}, it read the scores of later blocks "
                f"(their maximum) before it summed an earlier one. A first pass that finds "
                f"the maximum of the whole row needs every score before the sum can start, "
                f"which is what the online softmax avoids: it reads each block once, and "
                f"folds its maximum and its sum into m and l before the next block. When a "
                f"later block raises m, what must happen to the l you have summed so far?",
                name,
            )
        if hidden:
            return CheckResult(
                False,
                f"Your `{name}` gives the right weights, but the checker cannot see how it "
                f"reads the row: your code made a new array from `scores` before reading it "
                f"(`np.ascontiguousarray(scores)`, say, or an `asarray` imported on its own), "
                f"and that new array hides which score is which, so the order in which you "
                f"read the blocks is lost. `scores` is already a float array: read each block "
                f"straight from it, `scores[start:start + block_size]`, and run both cells "
                f"again.",
                name,
            )
        if copied:
            return CheckResult(
                False,
                f"Your `{name}` gives the right weights, but the checker cannot see how it "
                f"reads the row, because it copied the row into a list first "
                f"(`scores.tolist()`, `list(scores)` or `[x for x in scores]`): the copy "
                f"hides the order in which you read the blocks. `scores` is already a float "
                f"array: read each block straight from it, `scores[start:start + block_size]`, "
                f"and run both cells again.",
                name,
            )
        return result


register(
    LESSON,
    solutions.longest_sequence,
    "longest_sequence(memory_bytes, d, bytes_per_number) -> the largest n whose peak "
    "(2n² + 4nd) · bytes_per_number fits in memory_bytes",
    LongestCheck(
        longest_cases,
        reference=longest_sequence,
        shape_rule="one whole number of tokens, not an array",
        mistakes=LONGEST_MISTAKES,
        hints=(_not_whole_hint, _budget_hint),
        exact=True,
    ),
)
register(
    LESSON,
    solutions.merge_states,
    "merge_states(m1, l1, o1, m2, l2, o2) -> (m, l, o): the running maximum, sum and output "
    "sum of two parts of a row, combined into those of the whole row",
    MergeCheck(
        merge_cases,
        reference=merge_states,
        shape_rule="three numbers, (m, l, o): the merged maximum, sum and output sum",
        mistakes=MERGE_MISTAKES,
        hints=(_merge_overflow_hint, _empty_part_hint, _merge_hint),
        error_hints=((lambda message, inputs: "ZeroDivisionError" in message, _EMPTY_PART),),
    ),
)
register(
    LESSON,
    solutions.online_softmax,
    "online_softmax(scores, block_size) -> softmax of a 1-D row, computed block by block "
    "with a running maximum and a running sum",
    OnePassCheck(
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
