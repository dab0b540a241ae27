"""Exercises ``entropy`` (how spread out each row of softmax weights is, in nats),
``divisor_for_variance`` and ``temperature_for_entropy`` (choosing the divisor τ).

H(p) = -Σ_j p_j log p_j for each row, with 0 · log 0 = 0. The lesson uses it to
measure how far softmax collapses onto one key when the scores are large.

Lesson: ``notebooks/03_scaling.ipynb``.
"""

import numpy as np

from ..lessons.scaling import divisor_for_variance, temperature_for_entropy
from ..softmax import entropy, softmax
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, ratio_hint, softmax_rows
from .registry import register


def _plogp(p: np.ndarray, log=np.log) -> np.ndarray:
    """p · log p entry by entry, with 0 · log 0 = 0 (the limit of x log x as x → 0)."""
    p = np.asarray(p, dtype=np.float64)
    return p * log(np.where(p > 0, p, 1.0))


def reference_entropy(p) -> np.ndarray:
    """Entropy in nats of each row of p (float64): ``attnlab.entropy``, the graded reference."""
    return entropy(np.asarray(p, dtype=np.float64))


def cases() -> list[Case]:
    # The square case comes first and has no zeros: there every slip of base, sign, axis
    # or sum gives its own numbers and can be named before 0 · log 0 comes into play.
    # Its columns don't sum to 1, so summing down the columns gives other numbers too.
    rng = np.random.default_rng(303)
    return [
        Case(
            "square p (3×3) without zeros",
            {"p": np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1], [0.25, 0.25, 0.5]])},
        ),
        Case(
            "p (3×4) with zeros: a one-hot row, a row with two zeros, a uniform row",
            {"p": np.array([[0.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0], [0.25] * 4])},
        ),
        Case(
            "p (2×5): more keys than rows",
            {"p": np.array([[0.1, 0.2, 0.3, 0.15, 0.25], [0.6, 0.1, 0.1, 0.1, 0.1]])},
        ),
        Case(
            "a single row of softmax weights, p (1×6)",
            {"p": softmax_rows(np.round(rng.normal(scale=2.0, size=(1, 6)), 1))},
        ),
    ]


_FORMULA = "H = `-(p * np.log(p)).sum(axis=-1)`, with entries where p = 0 counted as 0"

_ZERO_FIX = (
    "Replace the zeros before taking the log, e.g. `np.log(np.where(p > 0, p, 1.0))`: "
    "log 1 = 0, so those entries add exactly 0, which is the right value of 0 · log 0 "
    "(x log x goes to 0 as x goes to 0)."
)

MISTAKES = (
    Mistake(
        "Your entropy is NaN on the rows that contain a zero: 0 · log 0 came out as NaN, "
        "because `np.log(0)` is -inf and 0 · (-inf) is NaN, which spoils the row's sum. "
        "A weight of 0 contributes nothing to the entropy. " + _ZERO_FIX,
        lambda p: -(p * np.log(p)).sum(axis=-1),
    ),
    Mistake(
        "Your entropy is negative: the minus sign is missing. log p ≤ 0 for probabilities, "
        f"so -Σ p log p ≥ 0. {_FORMULA}.",
        lambda p: _plogp(p).sum(axis=-1),
    ),
    Mistake(
        "You used log base 2 (`np.log2`), which gives bits. This course measures entropy "
        "in nats, with the natural log `np.log`, so that a uniform row of n entries has "
        "entropy log(n), the reference line in the plots.",
        lambda p: -_plogp(p, np.log2).sum(axis=-1),
    ),
    Mistake(
        "You used log base 10 (`np.log10`). This course measures entropy in nats, with "
        "the natural log `np.log`.",
        lambda p: -_plogp(p, np.log10).sum(axis=-1),
    ),
    Mistake(
        "You summed over the wrong axis (axis 0, down the columns). Each row of p is one "
        "distribution, so sum along the last axis: `.sum(axis=-1)`.",
        lambda p: -_plogp(p).sum(axis=0),
    ),
    Mistake(
        "You summed over the whole array and got a single number; the result should have "
        "one entropy per row: `.sum(axis=-1)`. (If you dropped the zeros with `p[p > 0]`: "
        "that flattens a 2-D array into one long 1-D array, so the rows are lost. Use "
        "`np.where` instead.)",
        lambda p: -_plogp(p).sum(),
    ),
    Mistake(
        "You kept the summed axis (`keepdims=True`), so you return shape (n_rows, 1). "
        "Return one number per row, shape (n_rows,): sum with `.sum(axis=-1)` alone.",
        lambda p: -_plogp(p).sum(axis=-1, keepdims=True),
    ),
    Mistake(
        "You took the mean over each row instead of the sum: entropy adds up -p_j log p_j "
        f"over all entries j. {_FORMULA}.",
        lambda p: -_plogp(p).mean(axis=-1),
    ),
    Mistake(
        "You summed -log p without weighting each term by p. Entropy is the average of "
        f"-log p_j under the distribution p itself, so each term is -p_j log p_j. {_FORMULA}.",
        lambda p: -np.log(p).sum(axis=-1),
    ),
)


def _zero_rows_hint(got, want, inputs):
    """Right on the rows without zeros, wrong on the rows with zeros: 0 · log 0 again."""
    p = np.asarray(inputs["p"], dtype=np.float64)
    if got.shape != want.shape or got.ndim != 1 or p.ndim != 2:
        return None
    has_zero = (p == 0).any(axis=-1)
    if not has_zero.any():
        return None
    got = got.astype(np.float64)
    ok = np.isclose(got, want, rtol=1e-4, atol=1e-6)
    if ok[~has_zero].all() and not ok[has_zero].all():
        return (
            "Your entropy is right on the rows without zeros and wrong on the rows that "
            "contain p = 0, so the 0 · log 0 entries are the trouble. "
            + _ZERO_FIX
            + " (With `np.log(p, where=p > 0)`, also pass `out=np.zeros_like(p)`: without "
            "`out`, the skipped entries hold whatever happened to be in memory.)"
        )
    return None


def _range_hint(got, want, inputs):
    """Entropy of a row of n probabilities lies between 0 (one-hot) and log n (uniform)."""
    p = np.asarray(inputs["p"], dtype=np.float64)
    if got.shape != want.shape or got.ndim != 1:
        return None
    got = got.astype(np.float64)
    if not np.isfinite(got).all():
        return None
    if (got < -1e-9).any():
        return (
            "Some of your entropies are negative, but -Σ p log p is never negative "
            f"(every log p ≤ 0). Check the minus sign. {_FORMULA}."
        )
    if (got > np.log(p.shape[-1]) + 1e-6).any():
        return (
            f"Some of your entropies are larger than log(n) = {np.log(p.shape[-1]):.3f}, "
            "the entropy of a uniform row of n entries, which no row can exceed. "
            f"{_FORMULA}."
        )
    return None


register(
    "notebooks/03_scaling.ipynb",
    solutions.entropy,
    "entropy(p) -> one entropy in nats per row of a 2-D p, shape (n_rows,)",
    ArrayCheck(
        cases,
        reference=reference_entropy,
        shape_rule="one entropy per row of p, shape (n_rows,)",
        mistakes=MISTAKES,
        hints=(_zero_rows_hint, _range_hint),
        shape_hint=(
            "p is (n_rows, n): compute p · log p entry by entry (shape (n_rows, n)), "
            "then sum along the last axis, `.sum(axis=-1)`, for shape (n_rows,)."
        ),
    ),
)


# ------------------------------------------------------- divisor_for_variance


def divisor_cases() -> list[Case]:
    # The first case has σ_q = σ_k = 1, so a slip in the square root or in the target is
    # named before the spread of the entries comes in. After it, targets other than 1,
    # d_k that are not squares and σ_q ≠ σ_k, so each slip gives its own number. (A slip
    # that first shows on the σ_q = σ_k case, such as keeping σ_q alone, is told apart
    # from its look-alikes on the σ_q ≠ σ_k case: the checker tests it there too.)
    rows = [
        (128, 4.0, 1.0, 1.0),
        (512, 0.25, 0.4, 0.4),
        (96, 2.0, 3.0, 0.2),
        (1000, 1.0, np.sqrt(1 / 3), np.sqrt(1 / 3)),
    ]
    return [
        Case(
            f"d_k = {d_k}, target variance {v:g}, σ_q = {sq:.4g}, σ_k = {sk:.4g}",
            {"d_k": d_k, "target_variance": v, "sigma_q": sq, "sigma_k": sk},
        )
        for d_k, v, sq, sk in rows
    ]


_RULE = (
    "Lesson 02 gives Var(q·k) = σ_q² σ_k² d_k, and Var(s / τ) = Var(s) / τ², so "
    "Var(s / τ) = σ_q² σ_k² d_k / τ². Set that equal to the target and solve for τ"
)

DIVISOR_MISTAKES = (
    Mistake(
        f"You forgot the square root: dividing by τ divides the variance by τ². {_RULE}.",
        lambda d_k, v, sq, sk: (sq * sk) ** 2 * d_k / v,
    ),
    Mistake(
        "You left out the spread of the entries: your τ is right only when σ_q = σ_k = 1. "
        f"Wider entries make wider scores, which need a larger divisor. {_RULE}.",
        lambda d_k, v, sq, sk: np.sqrt(d_k / v),
    ),
    Mistake(
        "Your τ carries the spread of the queries' entries, σ_q, but not that of the keys' "
        "entries: wider keys make wider scores too, so σ_k belongs in τ as well. "
        f"{_RULE}.",
        lambda d_k, v, sq, sk: sq * np.sqrt(d_k / v),
    ),
    Mistake(
        "Your τ carries the spread of the keys' entries, σ_k, but not that of the queries' "
        "entries: wider queries make wider scores too, so σ_q belongs in τ as well. "
        f"{_RULE}.",
        lambda d_k, v, sq, sk: sk * np.sqrt(d_k / v),
    ),
    Mistake(
        "You used the average of σ_q and σ_k. Both spreads enter Var(q·k), but how: "
        "added, or multiplied? Look again at lesson 02's formula (Section 7). "
        f"{_RULE}.",
        lambda d_k, v, sq, sk: (sq + sk) / 2 * np.sqrt(d_k / v),
    ),
    Mistake(
        "sigma_q and sigma_k are standard deviations, and you used them as variances: "
        "an entry with standard deviation σ has variance σ². "
        f"{_RULE}.",
        lambda d_k, v, sq, sk: np.sqrt(sq * sk * d_k / v),
    ),
    Mistake(
        "You multiplied by σ_q² σ_k² after taking the square root: the variance carries "
        f"σ_q² σ_k², so the divisor carries its square root, σ_q σ_k. {_RULE}.",
        lambda d_k, v, sq, sk: (sq * sk) ** 2 * np.sqrt(d_k / v),
    ),
    Mistake(
        "You divided by σ_q σ_k instead of multiplying: wider entries make wider scores, "
        f"so they need a larger divisor, not a smaller one. {_RULE}.",
        lambda d_k, v, sq, sk: np.sqrt(d_k / v) / (sq * sk),
    ),
    Mistake(
        f"You multiplied where you should divide: your τ gives variance 1/target. {_RULE}.",
        lambda d_k, v, sq, sk: sq * sk * np.sqrt(d_k * v),
    ),
    Mistake(
        f"Upside down: your τ is √(target / d_k), a number below 1 that makes scores larger. "
        f"{_RULE}.",
        lambda d_k, v, sq, sk: np.sqrt(v / d_k) / (sq * sk),
    ),
    Mistake(
        "You returned √d_k, which gives variance 1 only for σ_q = σ_k = 1 and a target of 1. "
        f"{_RULE}.",
        lambda d_k, v, sq, sk: np.sqrt(d_k),
    ),
    Mistake(
        f"You took the square root of d_k but not of the target. {_RULE}.",
        lambda d_k, v, sq, sk: sq * sk * np.sqrt(d_k) / v,
    ),
)

register(
    "notebooks/03_scaling.ipynb",
    solutions.divisor_for_variance,
    "divisor_for_variance(d_k, target_variance, sigma_q, sigma_k) -> τ with Var(q·k / τ) = target",
    ArrayCheck(
        divisor_cases,
        reference=divisor_for_variance,
        shape_rule="one number, the divisor τ",
        mistakes=DIVISOR_MISTAKES,
        hints=(
            ratio_hint(
                "Write the variance of q·k for entries of standard deviation σ_q and σ_k "
                "(lesson 02, Section 7), divide it by τ², set that equal to the target "
                "and solve for τ."
            ),
        ),
    ),
)


# ---------------------------------------------------- temperature_for_entropy


def temperature_cases() -> list[Case]:
    rng = np.random.default_rng(313)
    rows = [np.round(rng.normal(scale=3.0, size=n), 1) for n in (5, 8, 16)]
    targets = [1.0, 0.5, 2.0]
    return [
        Case(
            f"{len(s)} scores, target entropy {t:g} nats (uniform would be {np.log(len(s)):.2f})",
            {"scores": s, "target": t},
        )
        for s, t in zip(rows, targets, strict=True)
    ]


def _reference_temperature(scores, target):
    return temperature_for_entropy(scores, target)


def _multiplier(scores, target):
    # The τ of someone who multiplies the scores by τ: the reciprocal of the right one.
    return 1 / temperature_for_entropy(scores, target)


TEMPERATURE_MISTAKES = (
    Mistake(
        "Your τ is the reciprocal of the right one: did you multiply the scores by τ? A "
        "temperature divides them, softmax(scores / τ): a larger τ gives a flatter row.",
        _multiplier,
    ),
)


def _entropy_hint(got, want, inputs):
    got = float(np.asarray(got, dtype=np.float64).ravel()[0]) if np.size(got) == 1 else None
    if got is None or not np.isfinite(got) or got <= 0:
        return "Return one positive number, the temperature τ."
    reached = float(entropy(softmax(np.asarray(inputs["scores"], float) / got)))
    if abs(reached - inputs["target"]) < 0.01:
        return (
            f"Close: your τ = {got:.6g} gives entropy {reached:.4f} nats, near the target "
            f"{inputs['target']:g}, but τ should be right to within 1 part in 10,000, and "
            "yours is further off. How narrow is your interval when you stop?"
        )
    direction = "too sharp: raise τ" if reached < inputs["target"] else "too flat: lower τ"
    return (
        f"With your τ = {got:.4g} the row's entropy is {reached:.3f} nats, not the target "
        f"{inputs['target']:g}: {direction}. The entropy rises steadily with τ, so you can "
        "close in on the target by halving an interval of τ, e.g. from 0.001 to 1000."
    )


register(
    "notebooks/03_scaling.ipynb",
    solutions.temperature_for_entropy,
    "temperature_for_entropy(scores, target) -> τ with entropy(softmax(scores / τ)) = target",
    ArrayCheck(
        temperature_cases,
        reference=_reference_temperature,
        shape_rule="one number, the temperature τ",
        mistakes=TEMPERATURE_MISTAKES,
        hints=(_entropy_hint,),
    ),
)
