"""Exercises ``alibi_biases`` (ALiBi's distance penalty for H heads at once, one slope
per head, by broadcasting), ``rope`` (RoPE: each pair of features of row i turned by
(start + i) θ_f) and ``reach`` (which tokens a sparse mask connects after L layers: a
boolean matrix power).

The feedback names the mistake and asks the question that leads to the fix; it does
not write the answer's slope formula or rotation in code.

Lesson: ``notebooks/09_attention_family.ipynb``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import solutions
from .arrays import ArrayCheck, Case, Mistake, matches
from .messages import Fail
from .registry import register

LESSON = "notebooks/09_attention_family.ipynb"


# The references, in NumPy only (the checker never imports matplotlib); the lesson's own
# versions in attnlab.lessons.family are tested to agree with them.
def alibi_slopes_reference(H, first=1, exponent=lambda h, H: -8.0 * h / H):
    """ALiBi's slopes 2^(−8h/H) for h = ``first`` … ``first`` + H − 1: with the default
    h = 1 … H, the course's; the other arguments build the learner's slips."""
    h = np.arange(first, first + H, dtype=float)
    return 2.0 ** exponent(h, H)


def alibi_biases_reference(n, H):
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :]).astype(float)
    return -alibi_slopes_reference(H)[:, None, None] * distance


@dataclass(frozen=True)
class FractionsCheck(ArrayCheck):
    """An ArrayCheck that names a result of whole numbers where the answer has fractions,
    before any mistake and before the "only zeros" message: an integer array the learner
    filled (made with ``dtype=int``, or ``np.zeros_like`` of integer positions or
    distances) keeps only the whole part of every value stored in it, and small biases
    all become 0, which is not a placeholder."""

    whole_numbers_hint: str = ""

    def _diagnosis(self, got, want, case: Case, name: str, elsewhere=lambda: []) -> str:
        fractions = want.dtype.kind == "f" and not np.array_equal(want, np.trunc(want))
        same_shape = got.shape == want.shape  # a wrong shape is named first
        if self.whole_numbers_hint and got.dtype.kind in "iu" and fractions and same_shape:
            return self.whole_numbers_hint
        return super()._diagnosis(got, want, case, name, elsewhere)


_FILLED_AN_INTEGER_ARRAY = (
    "every value was rounded toward 0 on the way{zeros}. An array made with `dtype=int`, "
    "or with `np.zeros_like` of an array of whole numbers such as {whole}, keeps only the "
    "whole part of every value you store in it, without a warning. Which array did you "
    "fill, and what is its dtype?"
)


@dataclass(frozen=True)
class ShapeHintCheck(FractionsCheck):
    """A FractionsCheck that adds ``shape_hint`` to a result of the wrong shape too, not
    only to an error: ALiBi's heads on the middle axis, (n, H, n), or flattened, (H, n²),
    return without complaint. Only to the general wrong-shape message, the one that
    states ``shape_rule``: a named mistake or hint already says what went wrong, and may
    have nothing to do with broadcasting (one head short)."""

    def _diagnosis(self, got, want, case: Case, name: str, elsewhere=lambda: []) -> str:
        message = super()._diagnosis(got, want, case, name, elsewhere)
        general = self.shape_rule in message
        if got.shape != want.shape and general and self.shape_hint not in message:
            message = f"{message} {self.shape_hint}"
        return message


# ------------------------------------------------------------------ alibi_biases


def alibi_cases() -> list[Case]:
    # H = 4 first: there every slip below gives its own numbers (with H = 2, dividing by
    # h and reversing the heads happen to agree), so the first failure names the right one.
    # H = 16 is the one case where 8/H is not a whole number: floor division (//) in the
    # exponent gives the right slopes for H = 1, 2, 4 and 8, and wrong ones there.
    return [
        Case("n = 3 tokens, H = 4 heads", {"n": 3, "H": 4}),
        Case("n = 2 tokens, H = 8 heads", {"n": 2, "H": 8}),
        Case("n = 4 tokens, H = 2 heads", {"n": 4, "H": 2}),
        Case("n = 2 tokens, H = 16 heads", {"n": 2, "H": 16}),
        Case("n = 1, a single token, and H = 1 head", {"n": 1, "H": 1}),
    ]


def _distance(n, signed=False):
    i = np.arange(n)
    d = (i[:, None] - i[None, :]).astype(float)
    return d if signed else np.abs(d)


def _stack(slopes, n, signed=False):
    """−m_h times the (n, n) distances, one matrix per slope: what each slip builds."""
    return -np.asarray(slopes, dtype=float)[:, None, None] * _distance(n, signed)


def _causal(n, H, fill):
    """The biases with the keys after the query (j > i) set to ``fill``: the decoder's form."""
    i = np.arange(n)
    return np.where(i[None, :] > i[:, None], fill, alibi_biases_reference(n, H))


def _floor_exponent(exponent):
    """Slopes 2^exponent(h, H) for h = 1 … H, the exponent worked out in integers."""
    return lambda n, H: _stack(2.0 ** exponent(np.arange(1, H + 1), H), n)


# Following the paper, which writes ALiBi for a decoder, a learner may leave out the keys
# after the query; the exercise asks for every pair.
_EVERY_PAIR = (
    "The exercise asks for the bias of every pair, keys after the query included; the "
    "causal mask, when a model uses one, is applied separately. What should B[h, 0, 2], "
    "for the key two tokens after the first query, be?"
)


def _causal_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Right on and below the diagonal, wrong above it: a causal form with another fill."""
    n = inputs["n"]
    if got.shape != want.shape or n < 2:
        return None
    lower = np.tri(n, dtype=bool)  # j <= i, broadcast over the heads
    if not matches(np.where(lower, got.astype(float), 0.0), np.where(lower, want, 0.0)):
        return None
    return (
        "Your biases are right on and below the diagonal, for the keys up to the query, "
        "but not above it: did you apply the causal part yourself? " + _EVERY_PAIR
    )


def _slopes_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Every head a multiple of |i − j|, but with slopes multiplied by H, all alike, or off
    in a way no known slip explains."""
    n, H = inputs["n"], inputs["H"]
    if got.shape != want.shape or n < 2:
        return None
    slopes = -got.astype(float)[:, 1, 0]  # the key one token before the query: −m_h · 1
    if not matches(got, _stack(slopes, n)):
        return None
    heads = np.arange(1, H + 1)
    # Compared relatively: slopes like 2^(−32) and 2^(−64) are far apart, yet both within
    # any absolute tolerance of 0.
    if H > 1 and np.allclose(slopes, 2.0 ** (-8.0 * heads * H), rtol=1e-5, atol=0):
        return (
            f"Your slopes are 2^(−8hH): you multiplied by H where the formula m_h = "
            f"2^(−8h/H) divides by it. That makes them tiny, from 2^(−{8 * H}) down, so your "
            f"biases print as 0. What does 2^(−8h/H) give for the last head, "
            f"h = H, and what does yours give?"
        )
    if H > 1 and np.allclose(slopes, slopes[0], rtol=1e-5, atol=0):
        return (
            f"All your {H} heads have the same slope, {slopes[0]:.4g}: each head is meant "
            f"to have its own, so that some look near and some far. Which array of {H} "
            f"slopes does the formula give, and does each of them reach its own head?"
        )
    return (
        f"Each of your heads is a multiple of the distances |i − j|, as it should be, but "
        f"the slopes are not ALiBi's. Yours, read from B[h, 1, 0] (the key one token "
        f"before the query, whose bias is −m_h), are {np.array2string(slopes, precision=4)}. "
        f"Compare them with B[h, 1, 0] of the expected result below: which heads are off, "
        f"and by what factor?"
    )


def _integer_power(message: str, inputs: dict[str, Any]) -> bool:
    """NumPy's error for an integer array raised to a negative integer power."""
    return "Integers to negative integer powers" in message


_INTEGER_POWER_HINT = (
    "Both the base and the exponent of your power are integers, and NumPy refuses a "
    "negative integer power of an integer array: the result would not be a whole number. "
    "Which of the two should be a float, and is every step of your exponent a true "
    "division, so that −8h/H keeps its fraction?"
)

_ONE_HEAD_SHORT = (
    "You built H − 1 slopes, one head short: the formula's heads run from 1 to H, and a "
    "range that starts at 1 and stops before H leaves the last one out. How many numbers "
    "does your range of h hold, and which is the last?"
)


def _one_head_short_reshape(message: str, inputs: dict[str, Any]) -> bool:
    """A reshape of H − 1 slopes into H heads fails with "cannot reshape array of size H − 1"."""
    found = re.search(r"cannot reshape array of size (\d+)", message)
    return found is not None and int(found.group(1)) == inputs["H"] - 1


def _last_head_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Every head right but the last, which is all zeros: a loop over h = 1 … H − 1."""
    n, H = inputs["n"], inputs["H"]
    if got.shape != want.shape or n < 2 or H < 2 or got[-1].astype(float).any():
        return None
    if not matches(got[:-1], want[:-1]):
        return None
    return (
        "Every head is right except the last, which is all zeros: your loop or range of h "
        "never reached the last head. The formula's heads run from 1 to H; how many values "
        "does your range of h take, and which is the last?"
    )


ALIBI_MISTAKES = (
    Mistake(
        "Your head 0 has slope 1, a penalty of a whole unit per token, and each other head "
        "has the slope meant for the head before it: you put Python's head numbers "
        "0 … H − 1 into m_h = 2^(−8h/H), which counts the heads from 1. Your head 0 should "
        "be the formula's first head, with slope 2^(−8/H). Which values of the formula's h "
        "must your array hold?",
        lambda n, H: _stack(alibi_slopes_reference(H, first=0), n),
    ),
    *(
        Mistake(
            "Your slopes for H = 16 heads are all whole powers of 2, but the formula's "
            "2^(−8h/16) = 2^(−h/2) is one only for even h: your exponent was rounded to a "
            "whole number. With 1, 2, 4 or 8 heads, 8/H is whole and nothing is lost; "
            "with 16 it is not. `//` is Python's floor division, which rounds down: what is "
            "`-8 * 1 // 16`, and what is `-8 * 1 / 16`?",
            _floor_exponent(exponent),
        )
        for exponent in (
            lambda h, H: -8 * h // H,
            lambda h, H: -(8 * h // H),
            lambda h, H: -8 // H * h,
        )
    ),
    Mistake(
        "Your slopes run the wrong way round: head 0 has the gentlest slope, 2^(−8), and the "
        "last head the steepest. ALiBi's head 0 is the steepest, and each head's slope is a "
        "constant factor smaller than the one before. Print your slopes for H = 4: do they "
        "fall from head 0 to head 3?",
        lambda n, H: _stack(alibi_slopes_reference(H)[::-1], n),
    ),
    # A slope sequence written for 8 heads, 0.5 ** h: right at H = 8 only, so the checker's
    # first case (H = 4) names it.
    Mistake(
        "Your slopes halve from one head to the next, 1/2, 1/4, 1/8, …, whatever H is. "
        "That is ALiBi's sequence only when H = 8: with other head counts the formula "
        "m_h = 2^(−8h/H) shrinks by another factor per head, and its last head has the slope "
        "2^(−8) for every H. Where does H enter your slopes?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: -h), n),
    ),
    Mistake(
        "Your head 0 has slope 1, and the slopes halve from one head to the next whatever "
        "H is. The formula m_h = 2^(−8h/H) counts the heads from 1, so head 0 is never "
        "slope 1, and it halves from head to head only when H = 8. Where do h and H enter "
        "your slopes?",
        lambda n, H: _stack(alibi_slopes_reference(H, first=0, exponent=lambda h, H: -h), n),
    ),
    Mistake(
        "Your slopes have the right exponent, −8h/H, on the wrong base: they are powers of "
        "e, so every head is gentler than ALiBi's, and the last one has e^(−8) instead of "
        "2^(−8). Which number does the formula m_h = 2^(−8h/H) raise to that power?",
        lambda n, H: _stack(np.exp(-8.0 * np.arange(1, H + 1) / H), n),
    ),
    Mistake(
        "Your slopes all lie between 1/2 and 1: the heads barely differ, and none of them "
        "looks far back. Your exponent has lost its factor 8. Which slope should the last "
        "head have, whatever H is, and which does yours have?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: -h / H), n),
    ),
    Mistake(
        "Your slopes rise from head to head, from 2^(−8) at head 0 up to 2^(−8/H) at the "
        "last, and not by a constant factor: you divided by the head number where the "
        "formula multiplies by it. Read the exponent of m_h = 2^(−8h/H) again: as h grows, "
        "does the slope grow or shrink?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: -8.0 / h), n),
    ),
    Mistake(
        "Your slopes are larger than 1, up to 2^8 = 256 for the last head, so there a key "
        "one token away already loses 256: the exponent of 2 has lost its minus sign. "
        "ALiBi's slopes are fractions, each a constant factor smaller than the one before. "
        "Where did the minus sign of the exponent go?",
        lambda n, H: _stack(alibi_slopes_reference(H, exponent=lambda h, H: 8.0 * h / H), n),
    ),
    Mistake(
        "Your biases are positive and grow with the distance, so the further a key, the "
        "*higher* its score: your slopes are right, but the minus sign of the bias is "
        "missing. ALiBi lowers the scores of far keys. Which sign must B[h, i, j] have "
        "when i ≠ j?",
        lambda n, H: -_stack(alibi_slopes_reference(H), n),
    ),
    Mistake(
        "All your heads have the same matrix, the first head's slope times |i − j|, H "
        "times over. The point of ALiBi's slopes is that each head gets its own, so that "
        "some heads look near and others far. You need an array of H slopes, each "
        "multiplying the whole (n, n) distance matrix: which shape must that array have "
        "to broadcast against (n, n) into (H, n, n)?",
        lambda n, H: _stack(np.full(H, 2.0 ** (-8.0 / H)), n),
    ),
    Mistake(
        "Above the diagonal your biases are positive: you multiplied the slopes by i − j, "
        "which is negative where the key comes after the query, so those keys are "
        "*rewarded* for being far. The bias uses the distance: a key two tokens after the "
        "query is as far away as one two tokens before it. What turns the (n, n) "
        "differences i − j into distances?",
        lambda n, H: _stack(alibi_slopes_reference(H), n, signed=True),
    ),
    Mistake(
        "Below the diagonal, where the key comes before the query, your biases are positive "
        "and grow with the distance: you multiplied the slopes by j − i, key minus query, "
        "which is negative there, so the keys a causal model does see are *rewarded* for "
        "being far back. The bias uses the distance, the same for a key two tokens before "
        "the query as for one two tokens after it. What turns the (n, n) differences into "
        "distances?",
        lambda n, H: -_stack(alibi_slopes_reference(H), n, signed=True),
    ),
    Mistake(
        "Your penalty grows with the square of the distance: a key two tokens away loses "
        "4m rather than 2m, and one ten tokens away 100m. ALiBi's penalty is linear, m for "
        "every token of distance. Which step turns your differences i − j into distances, "
        "and does it keep a distance of 2 as 2?",
        lambda n, H: -alibi_slopes_reference(H)[:, None, None] * _distance(n) ** 2,
    ),
    Mistake(
        "Above the diagonal, for the keys after the query, your biases are 0: you applied "
        "the causal part yourself, as the paper's decoder does. " + _EVERY_PAIR,
        lambda n, H: _causal(n, H, 0.0),
    ),
    Mistake(
        "Above the diagonal, for the keys after the query, your biases are −inf: you "
        "applied the causal mask yourself. " + _EVERY_PAIR,
        lambda n, H: _causal(n, H, -np.inf),
    ),
    Mistake(
        "Your heads are on the last axis, B[i, j, h]. The exercise puts them first, "
        "B[h, i, j], so that B[h] is head h's (n, n) matrix and the stack adds to scores "
        "of shape (H, n, n). Broadcasting lines shapes up from the right: where must the "
        "slopes' axis sit, among three, to end up first?",
        lambda n, H: np.moveaxis(alibi_biases_reference(n, H), 0, -1),
    ),
    Mistake(
        "Your biases depend only on the key's position, m_h · j, not on the distance. On and "
        "below the diagonal that gives the same attention weights as −m_h · (i − j), because "
        "softmax ignores a number added to a whole row, and some causal models build ALiBi "
        "that way; but it is not the same bias matrix, and above the diagonal it rewards far "
        "keys. The exercise asks for −m_h · |i − j|: what should B[h, i, i] be for every i, "
        "and what is yours?",
        lambda n, H: np.broadcast_to(
            alibi_slopes_reference(H)[:, None, None] * np.arange(n, dtype=float), (H, n, n)
        ),
    ),
    # The mirror image: the query's position, −m_h · i, one bias for a whole row.
    *(
        Mistake(
            "Your biases depend only on the query's position, ±m_h · i, not on the distance: "
            "every key in row i gets the same bias. softmax ignores a number added to a "
            "whole row, so a bias like yours changes no attention weight at all, and no key "
            "is penalised for being far. The exercise asks for −m_h · |i − j|: what should "
            "B[h, 0, 0] and B[h, 0, 2] be, and are yours different?",
            lambda n, H, sign=sign: np.broadcast_to(
                sign
                * alibi_slopes_reference(H)[:, None, None]
                * np.arange(n, dtype=float)[:, None],
                (H, n, n),
            ),
        )
        for sign in (-1.0, 1.0)
    ),
    Mistake(
        "You returned H − 1 matrices, one head short: the formula's heads run from 1 to H, "
        "and a range that starts at 1 and stops before H leaves the last one out. How many "
        "numbers does your range of h hold, and which is the last?",
        lambda n, H: _stack(alibi_slopes_reference(H)[:-1], n),
    ),
)


register(
    LESSON,
    solutions.alibi_biases,
    "alibi_biases(n, H) -> B with B[h, i, j] = −m_h · |i − j| for heads h = 0 … H − 1, "
    "ALiBi's slopes from the steepest, shape (H, n, n)",
    ShapeHintCheck(
        alibi_cases,
        reference=alibi_biases_reference,
        shape_rule="one (n, n) bias matrix per head, heads first: (H, n, n)",
        mistakes=ALIBI_MISTAKES,
        hints=(_last_head_hint, _slopes_hint, _causal_hint),
        whole_numbers_hint=(
            "Your result holds only whole numbers, but ALiBi's slopes are fractions below 1, "
            "and so are most of its biases: "
            + _FILLED_AN_INTEGER_ARRAY.format(
                zeros=", most of them to 0", whole="the distances |i − j|"
            )
        ),
        error_hints=(
            (_integer_power, _INTEGER_POWER_HINT),
            (_one_head_short_reshape, _ONE_HEAD_SHORT),
        ),
        shape_hint=(
            "Broadcasting lines shapes up from the right: against the (n, n) distances, an "
            "(H,) array of slopes lines the heads up with the keys' axis, and an (H, 1) "
            "array with the queries' axis. Which shape must the slopes have so that their "
            "axis becomes the first axis of an (H, n, n) result?"
        ),
    ),
)


# -------------------------------------------------------------------------- rope


def rope_angles_reference(d):
    """RoPE's angle per position for each of the d/2 pairs: θ_f = 10000^(−2f/d)."""
    return 10000.0 ** (-2.0 * np.arange(d // 2) / d)


def _rotated(
    X,
    start,
    *,
    positions=lambda n, start: start + np.arange(n),
    sign=1.0,
    halves=False,
    swap=False,
    first_pair_only=False,
    overwrite=False,
    out_in_halves=False,
    one_angle=False,
):
    """Each pair (x, y) of row i turned by a = (start + i) θ_f; the keywords build the slips:
    other positions, the other way round, pairs (f, f + d/2), cos and sin swapped, only the
    first pair turned, x overwritten before y is computed, the result stored in halves, or
    every pair turned by pair 0's angle."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    theta = rope_angles_reference(d)
    if one_angle:
        theta = np.full_like(theta, theta[0])
    angles = sign * positions(n, start)[:, None] * theta[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    if swap:
        cos, sin = sin, cos
    x, y = (X[:, : d // 2], X[:, d // 2 :]) if halves else (X[:, 0::2], X[:, 1::2])
    new_x = x * cos - y * sin
    new_y = (new_x if overwrite else x) * sin + y * cos
    if first_pair_only:
        new_x = np.concatenate([new_x[:, :1], x[:, 1:]], axis=1)
        new_y = np.concatenate([new_y[:, :1], y[:, 1:]], axis=1)
    out = np.empty_like(X)
    if halves or out_in_halves:
        out[:, : d // 2], out[:, d // 2 :] = new_x, new_y
    else:
        out[:, 0::2], out[:, 1::2] = new_x, new_y
    return out


def rope_reference(X, start=0):
    return _rotated(X, start)


def rope_cases() -> list[Case]:
    # start = 0 first, where ignoring `start` changes nothing and every other slip gives
    # its own numbers (d = 4: two pairs, so pairs (f, f + d/2) differ from neighbours);
    # then a sequence that starts at position 5, which catches an ignored `start`.
    rng = np.random.default_rng(909)

    def X(n, d):
        return np.round(rng.normal(size=(n, d)), 1)

    return [
        Case("3 tokens of d = 4 features, start = 0", {"X": X(3, 4), "start": 0}),
        Case("4 tokens of d = 6 features, start = 5", {"X": X(4, 6), "start": 5}),
        Case(
            "2 tokens of d = 2 features, both (1, 0), start = 0",
            {"X": np.array([[1.0, 0.0], [1.0, 0.0]]), "start": 0},
        ),
        Case("5 tokens of d = 8 features, start = 0", {"X": X(5, 8), "start": 0}),
        Case("1 token of d = 8 features, start = 100", {"X": X(1, 8), "start": 100}),
    ]


def _length_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """A rotation keeps each pair's length: name the first pair whose length changed."""
    X = np.asarray(inputs["X"], dtype=float)
    if got.shape != want.shape:
        return None
    got = got.astype(float)
    before = np.hypot(X[:, 0::2], X[:, 1::2])
    after = np.hypot(got[:, 0::2], got[:, 1::2])
    changed = ~np.isclose(before, after, rtol=1e-4, atol=1e-6)
    if not changed.any():
        return None
    i, f = (int(k) for k in np.argwhere(changed)[0])
    return (
        f"A rotation keeps the length of every pair, but yours changes one: in row {i}, the "
        f"pair of features {2 * f} and {2 * f + 1} has length {before[i, f]:.3f} in X and "
        f"{after[i, f]:.3f} in your result. Compare each of your new features with the "
        "rotation in the exercise: does each use the old x and y, with the cos and sin of "
        "one and the same angle?"
    )


def _angle_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Every pair keeps its length, so each is turned: name the first one turned by the
    wrong angle, with the angle it was turned by and the one it should be."""
    X, start = np.asarray(inputs["X"], dtype=float), inputs["start"]
    if got.shape != want.shape:
        return None
    got = got.astype(float)
    x, y, new_x, new_y = X[:, 0::2], X[:, 1::2], got[:, 0::2], got[:, 1::2]
    turned = np.arctan2(x * new_y - y * new_x, x * new_x + y * new_y)  # from (x, y) to yours
    n, half = x.shape
    should = (start + np.arange(n))[:, None] * rope_angles_reference(2 * half)[None, :]
    off = np.abs(np.angle(np.exp(1j * (turned - should)))) > 1e-4  # compared modulo 2π
    off &= np.hypot(x, y) > 1e-9  # a pair (0, 0) has no angle
    if not off.any():
        return None
    i, f = (int(k) for k in np.argwhere(off)[0])
    a = should[i, f]
    wrapped = float(np.angle(np.exp(1j * a)))  # what an angle read off the pair can show
    same_as = "" if abs(wrapped - a) < 1e-9 else f", the same turn as {wrapped:.4f}"
    return (
        f"In row {i}, your result turns the pair of features {2 * f} and {2 * f + 1} by "
        f"{turned[i, f]:.4f} radians, but it should turn it by (start + i) θ_f = "
        f"({start} + {i}) · {rope_angles_reference(2 * half)[f]:.4g} = {a:.4f}{same_as}. "
        "Which position and which θ_f does your code use for that pair?"
    )


_NEIGHBOURS = (
    "The exercise pairs neighbouring features, (0, 1), (2, 3), …: which features does your "
    "code take as x and y?"
)

ROPE_MISTAKES = (
    Mistake(
        "You paired feature f with feature f + d/2, the first half of the features with the "
        "second. Some codebases do exactly that, and the idea is the same, but the pairs "
        "then differ, and so does every result: a model trained with one pairing needs its "
        "weights rearranged to run with the other. " + _NEIGHBOURS,
        lambda X, start: _rotated(X, start, halves=True),
    ),
    Mistake(
        "Your pairs turn the other way, by −a: (x cos a + y sin a, −x sin a + y cos a). "
        "The scores would still depend only on i − j, but with the other sign, and the "
        "exercise turns by +a, as `lesson.rotation(a)` does: (x cos a − y sin a, "
        "x sin a + y cos a). Which of your two lines has its sin term with the wrong sign?",
        lambda X, start: _rotated(X, start, sign=-1.0),
    ),
    Mistake(
        "Your row i turns by (start + i + 1) θ_f: you counted the positions from 1. The "
        "first row is the token at position `start`, and with start = 0 it is not turned "
        "at all. What should the first row of your result be when start = 0?",
        lambda X, start: _rotated(X, start, positions=lambda n, start: start + 1 + np.arange(n)),
    ),
    Mistake(
        "Your result is right when start = 0 and wrong otherwise: you left out `start`. Row "
        "i is the token at position start + i, as when the sequence continues an earlier "
        "one. Where do your positions come from, and where does `start` enter them?",
        lambda X, start: _rotated(X, start, positions=lambda n, start: np.arange(n)),
    ),
    Mistake(
        "Your cos and sin are swapped: with the angle a = 0 your pair (x, y) becomes "
        "(−y, x), a quarter turn, where it should stay as it is. A rotation by a is "
        "(x cos a − y sin a, x sin a + y cos a): which of cos 0 and sin 0 is 1?",
        lambda X, start: _rotated(X, start, swap=True),
    ),
    Mistake(
        "Only your first pair, features 0 and 1, is turned; the other pairs are left as they "
        "were. Every pair f turns, each by its own angle (start + i) θ_f. How many pairs "
        "does a row of d features hold, and does your code reach all of them?",
        lambda X, start: _rotated(X, start, first_pair_only=True),
    ),
    Mistake(
        "Every pair of yours turns by pair 0's angle, one radian per token. Each pair f has "
        "its own θ_f, from `lesson.rope_angles(d)`, the fast ones first and the slow ones "
        "last. Which array of d/2 angles multiplies your positions?",
        lambda X, start: _rotated(X, start, one_angle=True),
    ),
    Mistake(
        "Your new x is right, but your new y was computed from the *new* x: you stored "
        "x cos a − y sin a over x before computing x sin a + y cos a, which needs the old "
        "x. Both new values come from the old pair. Where can you keep the old x until "
        "both are computed?",
        lambda X, start: _rotated(X, start, overwrite=True),
    ),
    Mistake(
        "Your turned values are right, but in the wrong places: you returned all the new "
        "first features of the pairs, then all the new second ones, side by side. Each "
        "pair goes back where it came from, x to feature 2f and y to feature 2f + 1. How "
        "do you write an (n, d/2) array into every other column of the result?",
        lambda X, start: _rotated(X, start, out_in_halves=True),
    ),
)


register(
    LESSON,
    solutions.rope,
    "rope(X, start=0) -> X with each pair of features (2f, 2f + 1) of row i turned by "
    "(start + i) θ_f, shape (n, d)",
    FractionsCheck(
        rope_cases,
        reference=rope_reference,
        shape_rule="one turned row per row of X: (n, d), the shape of X",
        mistakes=ROPE_MISTAKES,
        hints=(_length_hint, _angle_hint),
        whole_numbers_hint=(
            "Your result holds only whole numbers, but the cos and sin of the angles turn "
            "the features into fractions: "
            + _FILLED_AN_INTEGER_ARRAY.format(
                zeros=", many of them to 0", whole="the positions (start + i)"
            )
        ),
        shape_hint=(
            "The angles form an (n, d/2) array, one per row and pair, the shape of "
            "`X[:, 0::2]`: a column of the n positions times a row of the d/2 angles θ_f "
            "broadcasts to it. Which of your arrays has another shape?"
        ),
    ),
)


# ------------------------------------------------------------------------- reach


def reach_reference(M, L):
    """(M^L)_ij > 0, the mask kept 0/1 after every product so that no count can grow."""
    step = np.asarray(M, dtype=bool).astype(np.int64)
    reached = step > 0
    for _ in range(L - 1):
        reached = (reached.astype(np.int64) @ step) > 0
    return reached


def _window(n, w, causal=False):
    """Query i may read key j when |i − j| ≤ w, or, causal, when 0 ≤ i − j ≤ w."""
    i = np.arange(n)
    d = i[:, None] - i[None, :]
    return (d >= 0) & (d <= w) if causal else np.abs(d) <= w


def reach_cases() -> list[Case]:
    # The symmetric window first: there a transposed answer is still right, and every other
    # slip differs. The causal masks next catch the transpose; L = 1 catches a product that
    # starts from the identity; blocks never fill up, whatever L is. The last case is the
    # lesson's own 64-token window at L = 32, where the path counts (up to about 10^21)
    # overflow int64: an integer matrix power wraps around silently there, and only there.
    random_keys = _window(8, 1)
    random_keys[np.arange(8), np.random.default_rng(909).integers(0, 8, size=8)] = True
    blocks = np.kron(np.eye(2, dtype=bool), np.ones((3, 3), dtype=bool))
    return [
        Case(
            "n = 5 tokens, a window of w = 1 on each side, L = 2 layers",
            {"M": _window(5, 1), "L": 2},
        ),
        Case(
            "n = 6 tokens, a causal window (each token reads itself and the token before it), "
            "L = 3 layers",
            {"M": _window(6, 1, causal=True), "L": 3},
        ),
        Case("n = 4 tokens, the causal mask, L = 1 layer", {"M": np.tri(4, dtype=bool), "L": 1}),
        Case("n = 6 tokens, two blocks of 3, L = 4 layers", {"M": blocks, "L": 4}),
        Case(
            "n = 8 tokens, a window of w = 1 plus one random key per query, L = 2 layers",
            {"M": random_keys, "L": 2},
        ),
        Case(
            "n = 64 tokens, a window of w = 2 on each side, L = 32 layers",
            {"M": _window(64, 2), "L": 32},
        ),
    ]


def _power(M, L, transpose=False):
    """M^L as numbers (floats, so no count overflows): what a product of 0/1 masks gives."""
    step = np.asarray(M, dtype=float)
    return np.linalg.matrix_power(step.T if transpose else step, L)


def _reached(M, L, transpose=False):
    """Where M^L > 0: what a slip in the number of layers, or in the mask's orientation,
    gives. Past 2^31 paths the slip's result depends on the learner's number type (int32
    and int64 counts wrap around, floats do not), so on such an input it explains nothing
    either way: raising leaves the input out when the slip is tested."""
    counts = _power(M, L, transpose)
    if counts.max() >= 2**31:
        raise OverflowError("counts past int32: the slip's result depends on the dtype")
    return counts > 0


def _as_checked(counts):
    """Counts as ``_as_reach`` hands them on: 0/1 become True/False, larger counts stay."""
    return counts.astype(bool) if counts.max() <= 1 else counts


_ZERO_ONE_NOTE = (
    "Note: your reach holds 0/1 numbers rather than True/False. That passes, but True/False "
    "says what it means: reached or not, like the mask you started from."
)


def _as_reach(got: np.ndarray, notes: list[str]) -> np.ndarray:
    """Accept bool; 0/1 numbers (with a note); leave whole counts ≥ 0 for the mistakes."""
    if got.dtype == np.bool_:
        return got
    values = np.unique(got)
    if got.dtype.kind in "iuf" and np.isin(values, (0, 1)).all():
        if _ZERO_ONE_NOTE not in notes:
            notes.append(_ZERO_ONE_NOTE)
        return got.astype(bool)
    if (
        got.dtype.kind in "iuf"
        and np.isfinite(values).all()
        and (values >= 0).all()
        and (values == np.round(values)).all()
    ):
        return got
    shown = np.array2string(values[:6], precision=3)
    raise Fail(
        f"Your reach should hold only True and False (or 0 and 1), but it holds "
        f"{shown}{' ...' if values.size > 6 else ''}. A product of 0/1 matrices holds whole "
        f"numbers of 0 or more: which step of yours brings in the others?"
    )


_ONLY_WHETHER = (
    "The question is only whether at least one path exists. Which comparison turns each "
    "count into True or False?"
)


def _counts_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Whole numbers above 1 that no named slip explains: still counts of paths."""
    if got.dtype == np.bool_ or got.shape != want.shape or got.max() <= 1:
        return None
    return (
        f"Your result holds numbers up to {got.max():.0f}, where the answer holds only True "
        "and False: a product of 0/1 matrices counts paths. Check first that the counts "
        "come from the right number of layers; then, the question is only whether at "
        "least one path exists. Which comparison turns each count into True or False?"
    )


# A count of paths this large or more can have wrapped around in some integer type (int8
# wraps at 2^7); an answer wrong only at such pairs is a count that overflowed.
_OVERFLOW_FROM = 2**7


def _powers_of_ten(x: float) -> str:
    """E.g. 9.2·10^18: a large count, readable at a glance."""
    exponent = int(np.floor(np.log10(x)))
    return f"{x / 10.0**exponent:.1f}·10^{exponent}"


def _overflow_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """Wrong only where the number of paths is large: an integer count wrapped around."""
    if got.dtype != np.bool_ or got.shape != want.shape:
        return None
    wrong = got != want
    counts = _power(inputs["M"], inputs["L"])  # floats: exact enough, and they never wrap
    if not wrong.any() or counts[wrong].min() < _OVERFLOW_FROM:
        return None
    return (
        f"Your result is wrong at {wrong.sum()} of the {got.size} pairs, and at each of "
        f"them the number of paths is large: on this input the counts reach about "
        f"{_powers_of_ten(counts.max())}, more than a 64-bit integer holds (at most about "
        f"{_powers_of_ten(float(np.iinfo(np.int64).max))}; smaller integer types hold "
        "less). NumPy's integers wrap around silently when they overflow, with no warning, "
        "to a negative number or 0, and those pairs then come out False. Only *whether* a "
        "path exists matters, not how many there are: how can you keep the numbers at 0 "
        "and 1 after each product?"
    )


def _pair_hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
    """True/False that no named slip explains: point at the first pair that differs."""
    if got.dtype != np.bool_ or got.shape != want.shape:
        return None
    i, j = (int(x) for x in np.argwhere(got != want)[0])
    L = inputs["L"]
    layers = f"{L} layer{'s' * (L != 1)}"
    if want[i, j]:
        return (
            f"Your R[{i}, {j}] is False, but key {j} can reach query {i} in {layers}. "
            f"Follow one path by hand, one allowed pair per layer, starting at key {j}: "
            f"which tokens can it pass through, and does your code count that path?"
        )
    return (
        f"Your R[{i}, {j}] is True, but no path of {layers} leads from key {j} to query "
        f"{i}: in one layer, query i hears only from the keys j with M[i, j] True. Which "
        f"tokens has query {i} heard from after one layer, and after two?"
    )


REACH_MISTAKES = (
    Mistake(
        "Your result holds counts, not True/False: a product of 0/1 matrices adds up, for "
        "each (query, key) pair, the number of paths of L allowed pairs between them. "
        + _ONLY_WHETHER,
        lambda M, L: _as_checked(_power(M, L)),
    ),
    Mistake(
        "Your result is one layer short: it is what L − 1 layers reach. After one layer "
        "(L = 1) a query has heard from exactly the keys the mask allows, so the reach is "
        "the mask itself. For L = 1, how many copies of M does your product multiply "
        "together, and how many should it?",
        lambda M, L: _reached(M, L - 1),
    ),
    Mistake(
        "Your result reaches one layer too far: it is what L + 1 layers reach. After one "
        "layer (L = 1) the reach is the mask itself. Count the products your code makes "
        "for L = 1: how many copies of M does it multiply together?",
        lambda M, L: _reached(M, L + 1),
    ),
    Mistake(
        "Your result is the transpose of the right one. R[i, j] says whether key j's "
        "information can have reached query i, and in one layer it moves the way the mask "
        "lets query i read key j. On a symmetric mask, such as a window on both sides, the "
        "transpose changes nothing; on this causal one it does. Which of M[i, j] and "
        "M[j, i] says that query i reads key j, and which way round does your product "
        "use the mask?",
        lambda M, L: _reached(M, L, transpose=True),
    ),
    Mistake(
        "Your result is the mask itself, whatever L is: what one layer reaches. Does your "
        "code use L at all? Each layer after the first must take the paths one step "
        "further. If it does use L, it combines the mask with itself entry by entry: "
        "`**`, `*` and `|` work on each entry on its own and keep 0/1 as 0/1, so no path "
        "through other tokens is ever followed. Information reaches query i from key j in "
        "two layers through some token k in between: which product adds up "
        "M[i, k] · M[k, j] over k?",
        lambda M, L: np.asarray(M, dtype=bool).copy(),
    ),
    Mistake(
        "Your result is the mask times L: every entry is 0 or L. An entrywise operation, "
        "such as `*`, works on each entry on its own, so no path through other tokens is "
        "ever followed, however many layers there are. Information reaches query i from "
        "key j in two layers through some token k in between: which product adds up "
        "M[i, k] · M[k, j] over k?",
        lambda M, L: _as_checked(np.asarray(M, dtype=np.int64) * L),
    ),
    Mistake(
        "Your result is what two layers reach, whatever L is: one product of the mask "
        "with itself. Each further layer adds one more step to the paths. Where does your "
        "code use L?",
        lambda M, L: _reached(M, 2),
    ),
)


register(
    LESSON,
    solutions.reach,
    "reach(M, L) -> R with R[i, j] True when key j can have reached query i after L "
    "layers of the mask M: (M^L)[i, j] > 0, bool, shape (n, n)",
    ArrayCheck(
        reach_cases,
        reference=reach_reference,
        shape_rule="one True or False per (query, key) pair, like the mask: (n, n)",
        mistakes=REACH_MISTAKES,
        hints=(_counts_hint, _overflow_hint, _pair_hint),
        prepare=_as_reach,
        shape_hint=(
            "A matrix product of two (n, n) arrays is (n, n). Does every step of your "
            "code keep that shape?"
        ),
    ),
)
