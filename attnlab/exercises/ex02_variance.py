"""Exercises ``scaled_scores`` (Q Kᵀ / √d_k); ``std_512``, a number: the standard
deviation of the difference q·k₁ − q·k₂ of two scores of the same query for d_k = 512,
which the learner assigns to ``answer_std_512``; ``uniform_divisor(d_k)``, the number c
such that q·k / c has variance 1 when the entries are uniform on [−1, 1]; and
``var_pytorch``, a number: the variance of q·k / √d_k when W_Q and W_K have
the initialisation of PyTorch's ``nn.MultiheadAttention`` (Xavier-uniform on the packed
(3·d_model, d_model) in-projection weight) and the tokens have entries of variance 1.

Lesson: ``notebooks/02_variance.ipynb``.
"""

import math

import numpy as np

from ..scores import scaled_scores
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, readable, softmax_rows
from .messages import CheckResult
from .numbers import NumberCheck, Slip
from .registry import register

SHAPE_HINT = (
    "Q is (n_q, d_k) and K is (n_k, d_k), so the two d_k axes must meet: "
    "`Q @ K.T` is (n_q, d_k) @ (d_k, n_k)."
)

LESSON = "notebooks/02_variance.ipynb"
_WHY = (
    "a dot product of d_k terms of variance 1 has variance d_k, so dividing by its "
    "standard deviation √d_k brings it back to 1"
)


def cases() -> list[Case]:
    # d_k, n_q, n_k, d_k/2 and 2·d_k all differ (and d_k isn't n²), so each wrong
    # scale gives different numbers from every other one.
    rng = np.random.default_rng(202)
    shapes = [
        ("Q (2×3) and K (4×3): 2 queries, 4 keys, d_k = 3", 2, 4, 3),
        ("Q (3×5) and K (2×5): more queries than keys, d_k = 5", 3, 2, 5),
        ("Q (3×7) and K (3×7): as many queries as keys, d_k = 7", 3, 3, 7),
        ("a single query: Q (1×6) and K (5×6)", 1, 5, 6),
    ]
    return [
        Case(label, {"Q": readable(rng, n_q, d_k), "K": readable(rng, n_k, d_k)})
        for label, n_q, n_k, d_k in shapes
    ]


MISTAKES = (
    Mistake(
        f"You forgot to scale: these are the raw scores Q Kᵀ. Divide them by √d_k; {_WHY}.",
        lambda Q, K: Q @ K.T,
    ),
    Mistake(
        f"You divided by d_k instead of √d_k: {_WHY}. Which NumPy function takes a square root?",
        lambda Q, K: Q @ K.T / Q.shape[-1],
    ),
    Mistake(
        "You wrote `d_k ** 1/2`, which Python reads as `(d_k ** 1) / 2`: powers bind "
        "tighter than division. Write `d_k ** 0.5` or `np.sqrt(d_k)`.",
        lambda Q, K: Q @ K.T / (Q.shape[-1] / 2),
    ),
    Mistake(
        "You wrote `/ d_k ** 1/2`, which Python reads as `/ d_k / 2`: powers bind tighter "
        "than division. Write `/ np.sqrt(d_k)` or `/ d_k ** 0.5`.",
        lambda Q, K: Q @ K.T / Q.shape[-1] / 2,
    ),
    Mistake(
        f"You multiplied by √d_k instead of dividing by it: {_WHY}.",
        lambda Q, K: Q @ K.T * np.sqrt(Q.shape[-1]),
    ),
    Mistake(
        "You divided by √n, the square root of the number of keys (`len(K)` or `K.shape[0]`). "
        "d_k is the size of each query and key, its number of entries: `Q.shape[-1]`.",
        lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]),
    ),
    Mistake(
        "You divided by √n, the square root of the number of queries (`len(Q)` or "
        "`Q.shape[0]`). d_k is the size of each query and key, its number of entries: "
        "`Q.shape[-1]`.",
        lambda Q, K: Q @ K.T / np.sqrt(Q.shape[0]),
    ),
    Mistake(
        "Your scaled scores are transposed: you computed K Qᵀ / √d_k, with one row per key. "
        "Row i should belong to query i: which matrix has to come first in the product?",
        lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]),
    ),
    Mistake(
        "Your result has NaN where a score is negative: the square root was taken of the "
        "scores themselves, and the square root of a negative number is not a real number "
        "(NumPy gives NaN). Only d_k belongs under the root; where do your brackets close?",
        lambda Q, K: np.sqrt(Q @ K.T / Q.shape[-1]),
    ),
    *(
        Mistake(
            f"You divided every score by √{d} = {np.sqrt(d):.4g}, whatever the inputs: your "
            f"function uses a d_k of {d} from outside it (a variable left over from an earlier "
            "cell, or a number typed in). These test inputs have other d_k: where in Q or K "
            "can your function read it?",
            lambda Q, K, d=d: Q @ K.T / np.sqrt(d),
        )
        for d in (64, 512)
    ),
    Mistake(
        "√d_k is rounded down to a whole number (`int(...)` or `//`) before you divide. "
        "Divide by the unrounded `np.sqrt(d_k)`: √d_k need not be whole.",
        lambda Q, K: Q @ K.T / int(np.sqrt(Q.shape[-1])),
    ),
    Mistake(
        "√d_k is rounded to the nearest whole number (`round` or `np.round`) before you "
        "divide. Divide by the unrounded `np.sqrt(d_k)`: √d_k need not be whole.",
        lambda Q, K: Q @ K.T / np.round(np.sqrt(Q.shape[-1])),
    ),
    Mistake(
        "You divided by the measured spread of these scores, `.std()`. The divisor is √d_k, "
        "the standard deviation that the variances give for any input; a spread measured on "
        "a handful of scores changes from input to input.",
        lambda Q, K: Q @ K.T / (Q @ K.T).std(),
    ),
    Mistake(
        "You divided by √(`Q.size`): `Q.size` counts every entry of Q, n_q·d_k. d_k is the "
        "number of entries in one query, `Q.shape[-1]`.",
        lambda Q, K: Q @ K.T / np.sqrt(Q.size),
    ),
    Mistake(
        "Your rows sum to 1: you applied a softmax. This exercise asks for the scaled scores "
        "themselves, the numbers that go *into* the softmax.",
        lambda Q, K: softmax_rows(Q @ K.T / np.sqrt(Q.shape[-1])),
    ),
)


def _divided_by_a_shape(message: str, inputs: dict) -> bool:
    # `/ np.sqrt(Q.shape)` divides the (n_q, n_k) scores by two numbers, one per axis of Q.
    n_q, n_k = len(inputs["Q"]), len(inputs["K"])
    said = message.replace(" ", "")  # NumPy writes the shapes as "(2,4)(2,)"
    return "couldnotbebroadcast" in said and f"({n_q},{n_k})(2,)" in said


SHAPE_TUPLE_HINT = (
    "Your scores have the right shape, but you divide them by two numbers at once: "
    "`Q.shape` is the whole shape of Q, a pair (n_q, d_k). Which of the two is d_k, "
    "and how do you pick it out of the pair?"
)

register(
    LESSON,
    solutions.scaled_scores,
    "scaled_scores(Q, K) -> Q Kᵀ / √d_k, shape (n_q, n_k)",
    ArrayCheck(
        cases,
        reference=scaled_scores,
        shape_rule="one row per query and one column per key, (n_q, n_k)",
        mistakes=MISTAKES,
        shape_hint=SHAPE_HINT,
        error_hints=((_divided_by_a_shape, SHAPE_TUPLE_HINT),),
    ),
)

# ------------------------------------------------------------------ std_512

D_K = 512
# The answer, √(2 d_k) = 32, is a whole number that `np.sqrt(1024)` gives exactly (and
# `np.sqrt(2) * np.sqrt(512)` to the last bits): the window is that narrow so that a measured
# std, off by about 0.2 with 20,000 samples, does not pass by luck.
TOLERANCE = 1e-6
# A named slip matches within 1 % of its value, so a rounded one (45 for 2·√512 = 45.25,
# 22.6 for √512) still gets its own message.
RELATIVE = 0.01


def _near(value: float) -> float:
    return RELATIVE * abs(value)


_STD = math.sqrt(2 * D_K)
_ONE = math.sqrt(D_K)  # the standard deviation of one score q·k
_RULE = (
    "Write the difference as one dot product, q·k₁ − q·k₂ = q·(k₁ − k₂), a sum of d_k terms "
    "q_i (k₁ᵢ − k₂ᵢ). What is E[(k₁ᵢ − k₂ᵢ)²]? Section 2's steps then give the variance of one "
    "term, Section 3 says the terms' variances add, and the standard deviation is the square "
    "root of the total."
)


def slips() -> list[Slip]:
    found = [
        Slip(
            _ONE,
            f"That is √{D_K}, the standard deviation of ONE score q·k. The question asks about "
            "the difference of two scores, q·k₁ − q·k₂. Is a difference of two random "
            "numbers more spread out than either of them, or less? " + _RULE,
            _near(_ONE),
        ),
        Slip(
            float(round(_ONE)),
            f"That is √{D_K} ≈ 22.6 rounded to a whole number: the standard deviation of ONE "
            "score q·k. The question asks about the difference of two scores, q·k₁ − q·k₂. "
            + _RULE,
            0.01,
        ),
        Slip(
            2 * _ONE,
            f"That is 2·√{D_K}: you added the two standard deviations (or took √(4·d_k)). "
            "Standard deviations do not add; variances do, when the covariance is 0. Is "
            "Cov(q·k₁, q·k₂) zero, even though both scores share q?",
            _near(2 * _ONE),
        ),
        Slip(
            -_STD,
            "A standard deviation is never negative: it is the square root of the variance, "
            "and the square root of a positive number is taken to be positive.",
            _near(_STD),
        ),
        Slip(
            0.0,
            "0 would mean the difference never changes. The shared q does not cancel: "
            "q·k₁ − q·k₂ = q·(k₁ − k₂), and k₁ − k₂ is a random vector, not zero. "
            "How spread out is one of its entries?",
            0.01,
        ),
        Slip(
            2.0 * D_K,
            f"That is the variance of the difference, 2·d_k = {2 * D_K}. The question asks for "
            "its standard deviation: what turns a variance into a standard deviation?",
            _near(2.0 * D_K),
        ),
        Slip(
            float(D_K),
            f"{D_K} is the variance of one score q·k, and it is not a standard deviation. "
            "The difference of two scores has its own variance: do the two scores' "
            "variances add, or cancel? Then take the square root. (Or, if you wrote "
            f"`{2 * D_K} ** 1/2`: Python reads it as `({2 * D_K} ** 1) / 2`, because powers "
            "bind tighter than division.)",
            _near(D_K),
        ),
        Slip(
            4.0 * D_K,
            f"That is 4·d_k = (√{D_K} + √{D_K})²: the standard deviations added, then squared. "
            "For uncorrelated numbers the variances add, not the standard deviations; and "
            "the question asks for a standard deviation.",
            _near(4.0 * D_K),
        ),
        Slip(
            _ONE / math.sqrt(2),
            f"That is √{D_K} / √2 = √{D_K // 2}. Does subtracting a second random score make "
            "the result less spread out, or more? Write the variance of a difference of two "
            "uncorrelated numbers.",
            _near(_ONE / math.sqrt(2)),
        ),
        Slip(
            math.sqrt(2),
            "√2 is the standard deviation of the difference after dividing both scores by "
            f"√d_k. The question asks about the raw scores, before dividing by √{D_K}.",
            _near(math.sqrt(2)),
        ),
        Slip(
            2.0,
            "2 is the variance of the difference after dividing both scores by √d_k "
            "(2·d_k / d_k). The question asks for the standard deviation of the raw "
            "difference, before any division.",
            0.02,
        ),
        Slip(
            1.0,
            "1 is the standard deviation of one scaled score q·k / √d_k. The question asks "
            "about the difference of two raw scores, q·k₁ − q·k₂.",
            _near(1.0),
        ),
        Slip(
            1 / _STD,
            "That number is below 1, and the spread of q·k₁ − q·k₂ grows with d_k rather "
            "than shrinking. " + _RULE,
            _near(1 / _STD),
        ),
    ]
    # √d for another common d_k, such as the lesson's d_k = 64 (√2, √4 = 2, √256, √512,
    # √2048 have their own messages above, and √1024 is the answer).
    found += [
        Slip(
            math.sqrt(d),
            f"That is √{d}. The question is about d_k = {D_K}, and about the difference of "
            f"two scores. " + _RULE,
            _near(math.sqrt(d)),
        )
        for d in (2**i for i in range(1, 13))
        if d not in (2, 4, D_K // 2, D_K, 2 * D_K, 4 * D_K, 4096)
    ]
    found.append(
        Slip(
            64.0,
            "64 is the d_k of Section 5 (and √4096). The question is about "
            f"d_k = {D_K}, and about the difference of two scores. " + _RULE,
            _near(64.0),
        )
    )
    found += [
        Slip(
            math.sqrt(2) * D_K,
            f"That is √2 · {D_K}: the square root reached the 2 but not d_k. The standard "
            "deviation is the square root of the whole variance, not of one factor of it.",
            _near(math.sqrt(2) * D_K),
        ),
        Slip(
            math.sqrt(3 * D_K),
            f"That is √(3·{D_K}): you added three variances, one each for q, k₁ and k₂. But "
            "q·k₁ − q·k₂ = q·(k₁ − k₂) is a sum of products q_i (k₁ᵢ − k₂ᵢ), and for "
            "independent factors with mean 0 the variance of a product is the product of "
            "their variances (Section 2). What are those two variances?",
            _near(math.sqrt(3 * D_K)),
        ),
    ]
    # A value within 2 % of the answer looks measured (or worked out from rounded steps).
    # The window is narrow so that it does not tell a guess how close it is: further off,
    # and for every whole number but the answer (none lies within 2 % of 32), the generic
    # hint says only that it is not the answer.
    measured = (
        "That looks like a measured value, or one worked out from rounded steps, but the "
        "question asks for the exact standard deviation, which follows from the variances "
        "alone. " + _RULE
    )
    # A number with at most two decimals in that window (32.3, 31.5) is more likely a guess
    # than a measurement: it gets the generic hint, so it is not told that it is close.
    cents = range(math.ceil(0.98 * _STD * 100), math.floor(1.02 * _STD * 100) + 1)
    guesses = [
        Slip(c / 100, f"Not quite: {c / 100:g} is not it. {_RULE}", 1e-9)
        for c in cents
        if abs(c / 100 - _STD) > TOLERANCE  # nearer still, the answer passes
    ]
    return [*found, *guesses, Slip(_STD, measured, 0.02 * _STD)]


def _passed(value: float) -> str:
    return (
        f"Right: q·k₁ − q·k₂ = q·(k₁ − k₂), a sum of d_k terms q_i(k₁ᵢ − k₂ᵢ) of variance "
        f"1 · 2 each, so its variance is 2·d_k = {2 * D_K} and its standard deviation "
        f"√{2 * D_K} = {_STD:g} "
        f"(you gave {value:g}), √2 times the spread of one score. Softmax only sees such "
        f"differences; after dividing by √{D_K}, their standard deviation is √2 ≈ 1.41."
    )


register(
    LESSON,
    solutions.std_512,
    f"answer_std_512 = a number: the standard deviation of q·k₁ − q·k₂ for d_k = {D_K}",
    NumberCheck(
        _STD,
        TOLERANCE,
        slips,
        _passed,
        generic_hint=_RULE,
        what="the standard deviation of q·k₁ − q·k₂",
        many_hint="If you measured it from samples, `np.std(samples)` turns them into one; "
        "but the question asks for the exact value.",
    ),
)

# ------------------------------------------------------------- uniform_divisor


def uniform_cases() -> list[Case]:
    # d_k = 9 is left out: there √d_k / 3, d_k / 9 and 3 / √d_k are all 1, so those slips
    # could not be told apart from the answer. d_k = 36 gives a whole number, 2.
    return [Case(f"d_k = {d_k}", {"d_k": d_k}) for d_k in (4, 36, 64, 512)]


_UNIFORM = (
    "Two steps: what is Var(q·k) for entries uniform on [−1, 1] (Section 6 gives the variance "
    "of one entry, Section 7 how σ_q², σ_k² and d_k combine), and if dividing by c divides a "
    "variance by c², which c brings it to 1?"
)

UNIFORM_MISTAKES = (
    Mistake(
        "That is √d_k, the divisor for entries of variance 1. Entries uniform on [−1, 1] "
        "have a smaller variance, and q·k / √d_k keeps the factor σ_q² σ_k² (Section 7): "
        f"its variance is not 1 here. {_UNIFORM}",
        lambda d_k: np.sqrt(d_k),
    ),
    Mistake(
        "That is Var(q·k) itself. Dividing by c divides the variance by c², not by c: "
        "which c makes Var(q·k) / c² equal to 1?",
        lambda d_k: d_k / 9,
    ),
    Mistake(
        "That is the number to multiply q·k by, not to divide it by: your c is upside "
        "down. q·k / c should have variance 1.",
        lambda d_k: 3 / np.sqrt(d_k),
    ),
    Mistake(
        "You used the entry variance 1/3 once, but both q and k have it: every product "
        f"q_i k_i has variance σ_q² σ_k². {_UNIFORM}",
        lambda d_k: np.sqrt(d_k / 3),
    ),
    Mistake(
        "That is d_k / 3: the entry variance used once, and no square root. Dividing by c "
        f"divides the variance by c². {_UNIFORM}",
        lambda d_k: d_k / 3,
    ),
    Mistake(
        "That is d_k, the variance for entries of variance 1, and dividing by it divides the "
        f"variance by d_k². {_UNIFORM}",
        lambda d_k: float(d_k),
    ),
    Mistake(
        "That is 3·√d_k: larger than √d_k, as if uniform entries on [−1, 1] spread more "
        "than entries of variance 1. Do they? Their variance is below 1, so the divisor "
        f"should be smaller than √d_k. {_UNIFORM}",
        lambda d_k: 3 * np.sqrt(d_k),
    ),
    Mistake(
        "That is √d_k · σ_q² σ_k²: the variances of the entries where their standard "
        "deviations belong. Var(q·k) = σ_q² σ_k² d_k; what is its square root?",
        lambda d_k: np.sqrt(d_k) / 9,
    ),
    Mistake(
        "Your function gives the same number for every d_k: that is σ_q σ_k, the spread "
        "of ONE product q_i k_i. How many products does q·k add up, and what does that do "
        "to its variance?",
        lambda d_k: 1 / 3,
    ),
    Mistake(
        "That is √d_k / 12: a variance of 1/12, which belongs to an interval of width 1 "
        f"such as [0, 1]. What is the width of [−1, 1]? {_UNIFORM}",
        lambda d_k: np.sqrt(d_k) / 12,
    ),
    Mistake(
        "That is √(2·d_k / 3): you added the two variances, σ_q² + σ_k² = 1/3 + 1/3. For "
        "a product of independent numbers with mean 0, do the variances add or multiply? "
        "(Section 7 derived it.)",
        lambda d_k: np.sqrt(2 * d_k / 3),
    ),
    Mistake(
        "That is √(d_k / 12): a variance of 1/12 belongs to an interval of width 1, such as "
        "[0, 1], and you used it once, but both q and k have it. What is the width of "
        f"[−1, 1], and how many entry variances go into each product q_i k_i? {_UNIFORM}",
        lambda d_k: np.sqrt(d_k / 12),
    ),
    Mistake(
        "That is √d_k · 2/3, which an entry variance of 2/3 gives. ∫₋₁¹ x² dx = 2/3 leaves "
        "out the density: a uniform variable on [−1, 1] has density ½ there, so "
        "E[X²] = ½ · 2/3 (Section 6's w²/12 gives the same). What does that make σ_q σ_k?",
        lambda d_k: np.sqrt(d_k) * 2 / 3,
    ),
    Mistake(
        "You wrote `d_k ** 1/2 / 3`, which Python reads as `d_k / 2 / 3`: powers bind "
        "tighter than division. Write `d_k ** 0.5` or `np.sqrt(d_k)`.",
        lambda d_k: d_k / 6,
    ),
    Mistake(
        "Your function returns d_k / 18: `(d_k / 9) ** 1/2` is read by Python as "
        "`((d_k / 9) ** 1) / 2`, because powers bind tighter than division. Write "
        "`np.sqrt(d_k / 9)` or `(d_k / 9) ** 0.5`.",
        lambda d_k: d_k / 18,
    ),
    *(
        Mistake(
            f"Your function returns {np.sqrt(d) / 3:.4g} whatever d_k it is given: it "
            f"seems to use a d_k of {d} from outside it (a variable left over from an "
            "earlier cell, or a number typed in). Use the argument `d_k` it receives.",
            lambda d_k, d=d: np.sqrt(d) / 3,
        )
        for d in (64, 512)
    ),
    Mistake(
        "Your number is rounded down to a whole number, by `//` (floor division) or by "
        "`int(...)`. A divisor need not be whole: divide with `/` and keep the fraction.",
        lambda d_k: np.sqrt(d_k) // 3,
    ),
    Mistake(
        "Your number is rounded to the nearest whole number (by `round` or `np.round`). "
        "A divisor need not be whole: return it unrounded.",
        lambda d_k: np.round(np.sqrt(d_k) / 3),
    ),
    Mistake(
        "Your function uses `//`, floor division, which rounds down to a whole number before "
        "the square root (for d_k = 4 it gives 0). Which division keeps the fraction?",
        lambda d_k: (d_k // 9) ** 0.5,
    ),
)


def _rounded_hint(got: np.ndarray, want: np.ndarray, inputs: dict) -> str | None:
    # `round(c, 2)` or `np.round(c, 3)`: the right divisor, cut to a few decimals.
    if got.shape != () or not np.isfinite(got.astype(np.float64)):
        return None
    value, exact = float(got), float(want)
    for decimals in (1, 2, 3):
        rounded = round(exact, decimals)  # np.round may differ in the last bit: compare loosely
        if abs(value - rounded) <= 1e-9 * max(1.0, abs(exact)) and abs(rounded - exact) > 1e-9:
            return (
                f"Your number is rounded, to {decimals} decimal{'s' if decimals > 1 else ''} "
                "(by `round` or `np.round`). A divisor need not be a round number: return "
                "it unrounded."
            )
    return None


def _estimate_hint(got: np.ndarray, want: np.ndarray, inputs: dict) -> str | None:
    # An answer within a few percent that matches no slip is most likely a simulation; the
    # message says so without saying how close it is.
    if got.shape != () or not np.isfinite(got.astype(np.float64)) or float(want) == 0:
        return None
    if abs(float(got) / float(want) - 1) <= 0.02:
        return (
            "Your number looks like an estimate from random samples. The function should "
            "return the exact divisor; derive it from the variance of one uniform entry."
        )
    return None


def _two_steps_hint(got: np.ndarray, want: np.ndarray, inputs: dict) -> str | None:
    # Any other single number: point at the two steps, without the numbers.
    if got.shape != () or not np.isfinite(got.astype(np.float64)):
        return None
    return f"Your function returns {float(got):.4g} for d_k = {inputs['d_k']}. {_UNIFORM}"


class ExplainedCheck(ArrayCheck):
    """An ``ArrayCheck`` whose PASS also says why the answer is right (``UNIFORM_WHY``)."""

    def __call__(self, answer, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed:
            return result
        return CheckResult(True, f"{result.message}\n\n{UNIFORM_WHY}", name)


UNIFORM_WHY = (
    "Right: an entry uniform on [−1, 1] has variance 2²/12 = 1/3, so Var(q·k) = "
    "σ_q² σ_k² d_k = d_k/9 and c = √(d_k/9) = √d_k/3. The usual √d_k would leave these "
    "scores with variance 1/9 (standard deviation 1/3)."
)

register(
    LESSON,
    solutions.uniform_divisor,
    "uniform_divisor(d_k) -> c such that q·k / c has variance 1, entries uniform on [-1, 1]",
    ExplainedCheck(
        uniform_cases,
        reference=solutions.uniform_divisor,
        shape_rule="one number for one d_k",
        mistakes=UNIFORM_MISTAKES,
        hints=(_rounded_hint, _estimate_hint, _two_steps_hint),
        # The expected number (2 for d_k = 36) would give the formula away.
        show_expected=False,
    ),
)

# ----------------------------------------------------------------- var_pytorch

D_MODEL = 768
# nn.MultiheadAttention draws its packed in_proj_weight, shape (3·d_model, d_model), with
# xavier_uniform_: U(±a), a = √(6/(fan_in + fan_out)), fan_in = d_model, fan_out = 3·d_model.
_PT_FAN_OUT = 3 * D_MODEL
_PT_A2 = 6 / (D_MODEL + _PT_FAN_OUT)  # a² = 1/512
_PT_VAR_W = _PT_A2 / 3  # width 2a: (2a)²/12 = a²/3 = 1/1536
_PT_VAR_Q = D_MODEL * _PT_VAR_W  # q_i = Σ_j x_j W_ji: d_model terms of variance 1 · var_w
# The question asks for the variance σ_q² σ_k² = 1/4, not the standard deviation σ_q σ_k:
# that would be 1/2, the same number as Var(q_i), and a learner who stopped after the
# second step would pass.
_PT_VAR = _PT_VAR_Q * _PT_VAR_Q
# The answer is exactly 0.25: 0.250 passes, 0.247 and 0.253 do not.
PT_TOLERANCE = 0.002
_PT_RULE = (
    "Three steps. The weight matrix has shape (3·768, 768): what are fan_in and fan_out, "
    "and so a and the variance of one weight (Section 6: w²/12 for a uniform distribution "
    "of width w, here w = 2a)? An entry of q, q_i = Σ_j x_j (W_Q)_ji, is a dot product of "
    f"d_model = {D_MODEL} terms, so Section 7's rule gives its variance from Var(x_j) = 1. "
    "Then Section 7 once more: q·k / √d_k has variance σ_q² σ_k²."
)


def _var_q_with(fan_in: int, fan_out: int, divide: float = 3.0) -> float:
    # Var(q_i) when the weights come from U(±√(6/(fan_in + fan_out))) and their
    # variance is taken as a² / divide (3 is right).
    return D_MODEL * 6 / (fan_in + fan_out) / divide


def pytorch_slips() -> list[Slip]:
    def rel(value: float) -> float:
        return 0.02 * abs(value)

    def both(var_q: float, message: str) -> list[Slip]:
        # A wrong Var(q_i) gives itself (stopping there) and its square (all three steps).
        return [Slip(v, message, rel(v)) for v in (var_q**2, var_q)]

    per_head = _var_q_with(D_MODEL, 64)  # fan_out = d_k
    only_out = D_MODEL * 2 / _PT_FAN_OUT  # 2/fan_out alone: Var(q_i) = 2/3
    only_in = D_MODEL * 2 / D_MODEL  # 2/fan_in alone: Var(q_i) = 2
    return [
        Slip(
            _PT_VAR_Q,
            "That is Var(q_i), the variance of one entry of q (and of k). A score multiplies "
            "entries of q by entries of k, and Section 7's rule for the variance of "
            "q·k / √d_k has both σ_q² and σ_k². (If you took a square root at the end: the "
            "question asks for the variance, not the standard deviation.)",
            rel(_PT_VAR_Q),
        ),
        Slip(
            math.sqrt(_PT_VAR_Q),
            "That is σ_q, the standard deviation of one entry of q. The question asks for "
            "the variance of q·k / √d_k, and Section 7's rule for it has both σ_q² and σ_k².",
            rel(math.sqrt(_PT_VAR_Q)),
        ),
        Slip(
            _PT_VAR_Q**4,
            "That squares Var(q_i) once too often: Var(q_i) already is σ_q², and Section "
            "7's rule multiplies σ_q² by σ_k².",
            rel(_PT_VAR_Q**4),
        ),
        Slip(
            1.0,
            f"1 is what a square {D_MODEL} × {D_MODEL} matrix would give, fan_out = "
            f"{D_MODEL}: then Xavier keeps every variance at 1, the assumption of Sections 1 "
            "to 6. But in_proj_weight holds W_Q, W_K and W_V together: its shape is "
            f"(3·{D_MODEL}, {D_MODEL}). What is its fan_out?",
            0.01,
        ),
        *both(
            per_head,
            f"That is what fan_out = d_k = 64 gives, as if each head's W_Q were drawn on its "
            f"own. PyTorch draws the whole packed matrix at once, of shape (3·{D_MODEL}, "
            f"{D_MODEL}): fan_out is its number of rows.",
        ),
        # fan_out = 2·768 in Xavier's bound gives the same Var(q_i) = 2/3 as 2/fan_out
        # alone, so one message names both routes.
        *both(
            only_out,
            f"That is what Var(q_i) = 2/3 leads to. Two routes give it: fan_out = 2·{D_MODEL}, "
            "as if in_proj_weight held only W_Q and W_K (it holds W_V too: count its rows "
            "again), or 2/fan_out alone as the variance of a weight (Xavier's bound uses both "
            "sizes: a² = 6/(fan_in + fan_out)).",
        ),
        Slip(
            _PT_VAR_Q**2 * 8,
            "That divides the variance of q·k by √d_k. Dividing a number by c divides its "
            "variance by c² (Section 4): dividing the scores by √d_k divides their variance "
            "by d_k.",
            rel(_PT_VAR_Q**2 * 8),
        ),
        # 4 is also σ_q σ_k √d_k, the standard deviation of the raw scores: name both routes.
        Slip(
            only_in**2,
            "If 4 is the standard deviation of the raw scores q·k, σ_q σ_k √d_k: the question "
            "asks for the variance of the scaled scores q·k / √d_k, so divide by √d_k, then "
            "square. If you took 2/fan_in alone as the variance of a weight: Xavier's bound "
            "uses both sizes, a² = 6/(fan_in + fan_out).",
            rel(only_in**2),
        ),
        Slip(
            1 / 9,
            f"That is what nn.Linear's default U(±1/√{D_MODEL}) gives. This question is about "
            "nn.MultiheadAttention, whose bound a = √(6/(fan_in + fan_out)) is another "
            f"number. {_PT_RULE}",
            rel(1 / 9),
        ),
        # 1/3 is two slips at once: nn.Linear's Var(q_i) (or its σ_q σ_k), not the answer's.
        Slip(
            1 / 3,
            f"That is Var(q_i) under nn.Linear's default U(±1/√{D_MODEL}) (and also σ_q σ_k "
            "there): two slips. This question is about nn.MultiheadAttention, whose bound "
            "a = √(6/(fan_in + fan_out)) is another number; and the question asks for the "
            f"variance of q·k / √d_k, which multiplies σ_q² by σ_k². {_PT_RULE}",
            rel(1 / 3),
        ),
        Slip(
            _PT_VAR_Q**2 * 64,
            "That is the variance of the raw scores q·k, d_k = 64 times too large: the "
            "question asks about q·k / √d_k.",
            rel(_PT_VAR_Q**2 * 64),
        ),
        Slip(
            64.0,
            "64 = d_k is the variance of raw scores whose entries have variance 1. "
            f"Here the entries of q and k come out of PyTorch's layer. {_PT_RULE}",
            0.5,
        ),
        Slip(
            math.sqrt(_PT_A2),
            f"That is a, the bound of the weights. An entry of q adds up {D_MODEL} products "
            f"x_j W_ji, and their variances add. {_PT_RULE}",
            rel(math.sqrt(_PT_A2)),
        ),
        Slip(
            math.sqrt(_PT_VAR_W),
            f"That is the standard deviation of one weight, a/√3. An entry of q adds up "
            f"{D_MODEL} products x_j W_ji, and their variances add. {_PT_RULE}",
            rel(math.sqrt(_PT_VAR_W)),
        ),
        Slip(
            _PT_VAR_W,
            f"That is the variance of one weight, a²/3, as if an entry of q were a single "
            f"weight. It adds up {D_MODEL} products x_j W_ji, and their variances add.",
            rel(_PT_VAR_W),
        ),
        *both(
            _var_q_with(D_MODEL, _PT_FAN_OUT, 12),
            "That is what weights of variance a²/12 give: the uniform distribution on "
            "[−a, a] has width 2a, so its variance is (2a)²/12 = a²/3.",
        ),
        *both(
            _var_q_with(D_MODEL, _PT_FAN_OUT, 1),
            "That is what weights of variance a² give: a is the bound of the uniform "
            "distribution, not its standard deviation. On [−a, a] (width 2a) the variance "
            "is (2a)²/12 = a²/3.",
        ),
        # A number with at most two decimals within 5 % of the answer (0.24, 0.26) is more
        # likely a guess than a measurement: the generic hint, not told that it is close.
        *(
            Slip(c / 100, f"Not quite: {c / 100:g} is not it. {_PT_RULE}", 1e-9)
            for c in range(math.ceil(95 * _PT_VAR), math.floor(105 * _PT_VAR) + 1)
            if abs(c / 100 - _PT_VAR) > PT_TOLERANCE
        ),
        # Last: a value within 5 % of the answer looks measured or worked out from rounded
        # steps (the named slips above are all further off).
        Slip(
            _PT_VAR,
            "That looks like a measured value, or one worked out from rounded steps, but the "
            "question asks for the exact variance, which follows from the matrix's shape and "
            f"Var(x_j) = 1 alone. {_PT_RULE}",
            0.05 * _PT_VAR,
        ),
    ]


def _pytorch_passed(value: float) -> str:
    return (
        f"Right: in_proj_weight has fan_in = {D_MODEL} and fan_out = 3·{D_MODEL} = "
        f"{_PT_FAN_OUT}, so a² = 6/{D_MODEL + _PT_FAN_OUT} = 1/512 and a weight has variance "
        f"a²/3 = 1/1536. Then q_i, a sum of {D_MODEL} products x_j W_ji, has variance "
        f"{D_MODEL}/1536 = 1/2, and so has k_i. The scaled scores have variance "
        f"σ_q² σ_k² = 1/4 (you gave {value:g}), a quarter of the 1 this lesson started "
        "from, and standard deviation 1/2."
    )


register(
    LESSON,
    solutions.var_pytorch,
    "answer_var_pytorch = a number: the variance of q·k / √d_k under PyTorch's "
    "nn.MultiheadAttention initialisation",
    NumberCheck(
        _PT_VAR,
        PT_TOLERANCE,
        pytorch_slips,
        _pytorch_passed,
        generic_hint=_PT_RULE,
        what="the variance of q·k / √d_k",
        many_hint="If you measured it from samples, `np.var(samples)` turns them into one; "
        "but the question asks for the exact value.",
    ),
)
