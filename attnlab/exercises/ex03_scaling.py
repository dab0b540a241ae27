"""Exercises ``entropy`` (how spread out each row of softmax weights is, in nats),
``temperature_for_entropy`` (choosing the divisor τ) and ``largest_jacobian_entry`` (how
much gradient a softmax row can pass back, computed without building its Jacobian).

H(p) = -Σ_j p_j log p_j for each row, with 0 · log 0 = 0. The lesson uses it to
measure how far softmax collapses onto one key when the scores are large.

Lesson: ``notebooks/03_scaling.ipynb``.
"""

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lessons.scaling import largest_jacobian_entry, temperature_for_entropy
from ..memory import measured_peak
from ..softmax import entropy, softmax
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, _example, matches, softmax_rows
from .calling import call_answer, silenced
from .messages import CheckResult, Fail
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
    "Before taking the log, replace each p = 0 by a number whose log is 0 (`np.where` can "
    "do it): those entries then add exactly 0, which is the right value of 0 · log 0 "
    "(x log x goes to 0 as x goes to 0)."
)

_OUT_TIP = (
    "(With `np.log(p, where=p > 0)`, also pass `out=np.zeros_like(p)`: without `out`, the "
    "skipped entries hold whatever happened to be in memory.)"
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
            "contain p = 0, so the 0 · log 0 entries are the trouble. " + _ZERO_FIX + " " + _OUT_TIP
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
        if matches(-got, want):
            return (
                "Your entropies have the wrong sign: -Σ p log p is never negative "
                f"(every log p ≤ 0). Check the minus sign. {_FORMULA}."
            )
        return (
            "Some of your entropies are negative, but -Σ p log p never is: for a "
            "probability p ≤ 1, log p ≤ 0. Is the number inside your log ever above 1? "
            f"Did you add something to p inside the log? {_FORMULA}."
        )
    if (got > np.log(p.shape[-1]) + 1e-6).any():
        return (
            f"Some of your entropies are larger than log(n) = {np.log(p.shape[-1]):.3f}, "
            "the entropy of a uniform row of n entries, which no row can exceed. "
            f"{_FORMULA}."
        )
    return None


def _fill_freed_memory_with_nan(n_numbers: int) -> None:
    """Leave freed blocks the size of n float64 and of n float32 numbers holding NaN.

    A NumPy function called with ``where=`` but no ``out=`` skips the entries where the
    condition is False and leaves in them whatever was in the memory it got, often zeros
    that hide the mistake. NumPy keeps recently freed small blocks and hands them out again,
    so after this the next arrays of that size start as NaN, and the mistake shows up.
    Correct code never reads such entries, so this cannot fail a correct answer.
    """
    for dtype in (np.float64, np.float32):
        blocks = [np.full(n_numbers, np.nan, dtype=dtype) for _ in range(8)]
        del blocks


def _ufunc_where_without_out(answer: Any) -> bool:
    """Whether the answer's source calls a NumPy ufunc (np.log, np.multiply...) with
    ``where=`` and no ``out=``; False when its source can't be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(answer)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        keywords = {k.arg for k in node.keywords}
        if "where" in keywords and "out" not in keywords:
            if isinstance(getattr(np, called, None), np.ufunc):
                return True
    return False


_WHERE_WITHOUT_OUT = (
    "Your entropy is wrong on the rows that contain p = 0. You call a NumPy function with "
    "`where=` but without `out=`: where the condition is False it skips the entry and "
    "leaves in it whatever happened to be in memory. Here that was NaN; another time it may "
    "be 0 and hide the problem, so the result changes from run to run. Which value should a "
    "skipped entry of log p hold, and how can you hand the function an array that already "
    "holds it?"
)


@dataclass(frozen=True)
class EntropyCheck(ArrayCheck):
    """An ArrayCheck that runs the answer where freed memory holds NaN, so that entries a
    ufunc skips (``where=`` without ``out=``) come out NaN every time, not by chance."""

    def _answer_on(
        self, answer, case: Case, want: np.ndarray, name: str, timeout, notes: list[str]
    ) -> np.ndarray:
        _fill_freed_memory_with_nan(np.size(case.inputs["p"]))
        got = super()._answer_on(answer, case, want, name, timeout, notes)
        if not matches(got, want) and _ufunc_where_without_out(answer):
            raise Fail(f"{_WHERE_WITHOUT_OUT}\n\n{_example(got, want, case, name, None)}")
        return got


register(
    "notebooks/03_scaling.ipynb",
    solutions.entropy,
    "entropy(p) -> one entropy in nats per row of a 2-D p, shape (n_rows,)",
    EntropyCheck(
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


# ----------------------------------------------------- largest_jacobian_entry


def jacobian_cases() -> list[Case]:
    # The first case is square, so summing or taking the maximum down the columns gives
    # numbers of the right shape, and its rows have a top weight above ½, below ½ and at
    # ½, so 1/4, p_max, p_max² and the top two weights' product all differ there.
    rng = np.random.default_rng(333)
    return [
        Case(
            "p (3×3): top weights 0.7, 0.4 and 0.5",
            {"p": np.array([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [0.3, 0.5, 0.2]])},
        ),
        Case(
            "p (3×4): a one-hot row, a uniform row, a row with a zero",
            {"p": np.array([[0.0, 1.0, 0.0, 0.0], [0.25] * 4, [0.6, 0.0, 0.3, 0.1]])},
        ),
        Case(
            "p (2×3×5): a batch of 2 × 3 rows of softmax weights",
            {"p": softmax_rows(np.round(rng.normal(scale=1.5, size=(2, 3, 5)), 1))},
        ),
    ]


def _top_two(p):
    top = np.sort(np.asarray(p, dtype=np.float64), axis=-1)
    return top[..., -1] * top[..., -2]


_WHICH = (
    "Compare an entry off the diagonal, |J_ij| = p_i p_j, with the diagonal entry "
    "p_i (1 − p_i) of the same row i: how large can p_j be, when all the weights sum to 1?"
)

JACOBIAN_MISTAKES = (
    Mistake(
        "You returned the largest weight p_max itself. A diagonal entry of J is "
        "J_ii = p_i (1 − p_i): the weight times what is left for the other keys. "
        "That is why a one-hot row, p_max = 1, has J = 0.",
        lambda p: p.max(axis=-1),
    ),
    Mistake(
        "You returned p_max², the size of the term p_i p_j with i = j. On the diagonal "
        "that term is subtracted from p_i: J_ii = p_i − p_i² = p_i (1 − p_i).",
        lambda p: p.max(axis=-1) ** 2,
    ),
    Mistake(
        "You returned 1/4 for every row: that is the largest entry any row can have, "
        "reached only when the top weight is exactly ½. A one-hot row has J = 0. Which "
        "weight decides the largest entry of one particular row?",
        lambda p: np.full(p.shape[:-1], 0.25),
    ),
    Mistake(
        "You returned the product of the two largest weights, the largest entry off the "
        f"diagonal. Is it larger than every entry on the diagonal? {_WHICH}",
        _top_two,
    ),
    Mistake(
        "You summed p_i (1 − p_i) over the row: that is the trace of J, the sum of its "
        "diagonal, not its largest entry. Take the maximum instead of the sum, and think "
        "about which i gives it.",
        lambda p: (p * (1 - p)).sum(axis=-1),
    ),
    Mistake(
        "You returned 1 − p_max, the weight left for the other keys. The diagonal entry "
        "J_ii = p_i (1 − p_i) has both factors.",
        lambda p: 1 - p.max(axis=-1),
    ),
    Mistake(
        "You used p_max (1 − p_min), mixing the largest and the smallest weight. Each "
        "diagonal entry, J_ii = p_i (1 − p_i), uses one weight twice.",
        lambda p: p.max(axis=-1) * (1 - p.min(axis=-1)),
    ),
    Mistake(
        "You used the smallest weight. p_i (1 − p_i) grows with p_i up to p_i = ½, and "
        "at most one weight of a row can be above ½: which weight gives the largest "
        "product?",
        lambda p: p.min(axis=-1) * (1 - p.min(axis=-1)),
    ),
    Mistake(
        "You took the maximum down the columns (axis 0). Each row of p is one softmax "
        "row with its own Jacobian: work along the last axis, `axis=-1`.",
        lambda p: p.max(axis=0) * (1 - p.max(axis=0)),
    ),
    Mistake(
        "You kept the reduced axis (`keepdims=True`), so you return one more axis than "
        "needed: one number per row, shape p.shape[:-1].",
        lambda p: p.max(axis=-1, keepdims=True) * (1 - p.max(axis=-1, keepdims=True)),
    ),
    Mistake(
        "You returned one number for the whole array. Each row has its own Jacobian, so "
        "return one number per row: work along the last axis, `axis=-1`.",
        lambda p: p.max() * (1 - p.max()),
    ),
)


def _jacobian_range_hint(got, want, inputs):
    """Every |J_ij| lies between 0 and 1/4; the signed off-diagonal entries are negative."""
    if got.shape != want.shape:
        return None
    got = got.astype(np.float64)
    if not np.isfinite(got).all():
        return None
    if (got < -1e-12).any():
        return (
            "Some of your numbers are negative. The entries off the diagonal, −p_i p_j, "
            "are negative, but you want the largest *size* |J_ij|, which is never below 0. "
            + _WHICH
        )
    if (got > 0.25 + 1e-9).any():
        return (
            "Some of your numbers are above 1/4, but no entry of a softmax Jacobian can be: "
            "p (1 − p) is largest, 1/4, at p = ½. " + _WHICH
        )
    return None


def _same_for_every_row(got, want, inputs):
    """One number repeated in every row: the maximum was taken over the whole array."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape or got.size < 2 or not np.isfinite(got).all():
        return None
    if np.ptp(got) > 1e-12 or np.ptp(np.asarray(want, dtype=np.float64)) <= 1e-12:
        return None
    return (
        "Your function gives the same number for every row, but the rows differ: did you "
        "take the maximum over the whole array? Each row has its own Jacobian and its own "
        "top weight: reduce along the last axis only, `axis=-1`."
    )


def _jacobian_advice(got, want, inputs):
    """Right shape, numbers in range, but not the largest entry: how to find it."""
    if got.shape != want.shape or not np.isfinite(got.astype(np.float64)).all():
        return None
    return (
        "Your numbers have the right shape but are not the largest |J_ij| of each row. "
        "Write the two kinds of entry, J_ii = p_i (1 − p_i) and J_ij = −p_i p_j, then "
        "compare them: which kind holds the largest size, and for which i? Try a row such "
        "as [0.7, 0.2, 0.1] by hand with `attnlab.softmax_jacobian` next to you."
    )


# 4 rows of 1000 weights: their Jacobians, (4, 1000, 1000) in float64, take 32 MB, p itself
# 32 kB. An answer that never builds J needs a few arrays the size of p at most.
MEMORY_ROWS, MEMORY_KEYS, MEMORY_FACTOR = 4, 1000, 10


@dataclass(frozen=True)
class NoJacobianCheck(ArrayCheck):
    """An ArrayCheck, then rows of 1000 weights on which the answer's peak memory must
    stay below 10 times that of p: building the m × m Jacobian fails, even with the
    learner's own NumPy code."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        result = super().__call__(answer, name=name, timeout=timeout)
        if not result.passed:
            return result
        rng = np.random.default_rng(3303)
        p = softmax_rows(rng.normal(scale=2.0, size=(MEMORY_ROWS, MEMORY_KEYS)))
        try:
            with silenced():
                value, peak = measured_peak(
                    lambda: call_answer(answer, {"p": p.copy()}, name=name, timeout=timeout)
                )
        except Fail as fail:
            return CheckResult(False, fail.message, name)
        if peak > MEMORY_FACTOR * p.nbytes:
            return CheckResult(
                False,
                f"Your `{name}` gives the right numbers, but on p of shape "
                f"({MEMORY_ROWS}, {MEMORY_KEYS}) ({p.nbytes / 1e3:.0f} kB) it needed "
                f"{peak / 1e6:.0f} MB at its peak: you built the m×m Jacobian. Find the "
                "entry from p alone: which single weight of a row decides it?",
                name,
            )
        if not np.allclose(np.asarray(value, dtype=float), _top_entry_of(p), rtol=1e-4, atol=1e-6):
            return CheckResult(
                False,
                f"Your `{name}` is right on the small inputs but not on rows of "
                f"{MEMORY_KEYS} weights; does it use a fixed size somewhere?",
                name,
            )
        return result


def _top_entry_of(p: np.ndarray) -> np.ndarray:
    p_max = p.max(axis=-1)
    return p_max * (1 - p_max)


register(
    "notebooks/03_scaling.ipynb",
    solutions.largest_jacobian_entry,
    "largest_jacobian_entry(p) -> the largest |J_ij| of each row's softmax Jacobian, shape (...)",
    NoJacobianCheck(
        jacobian_cases,
        reference=largest_jacobian_entry,
        shape_rule="one number per row of p, shape p.shape[:-1]",
        mistakes=JACOBIAN_MISTAKES,
        hints=(
            _jacobian_range_hint,
            _same_for_every_row,
            _jacobian_advice,
        ),
        shape_hint=(
            "p is (..., n): reduce along the last axis, e.g. `p.max(axis=-1)`, for one "
            "number per row, shape p.shape[:-1]."
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
    Mistake(
        "You returned the target entropy itself, not a temperature. The target is what the "
        "row's entropy should reach; τ is the number you divide the scores by to get there. "
        "Which τ makes entropy(softmax(scores / τ)) equal to the target?",
        lambda scores, target: float(target),
    ),
)


def _digits(got: float, want: float) -> str:
    """A format that tells two numbers apart: 6 significant digits when they agree to 3
    decimals (they would print alike), 4 otherwise."""
    return ".6g" if f"{got:.3f}" == f"{want:.3f}" else ".4g"


def _at_an_end(tau: float) -> bool:
    """Whether τ is a round end of a search interval, such as 0.1, 10, 0.001 or 1000."""
    power = np.log10(tau)
    return abs(power) >= 1 and abs(power - round(power)) < 1e-6


def _entropy_hint(got, want, inputs):
    got = float(np.asarray(got, dtype=np.float64).ravel()[0]) if np.size(got) == 1 else None
    if got is None or not np.isfinite(got) or got <= 0:
        return "Return one positive number, the temperature τ."
    want = float(want)
    f = _digits(got, want)
    reached = float(entropy(softmax(np.asarray(inputs["scores"], float) / got)))
    if abs(reached - inputs["target"]) < 0.01:
        return (
            f"Close: your τ = {got:{f}} gives entropy {reached:.4f} nats, near the target "
            f"{inputs['target']:g}, and the right τ is {want:{f}}. τ should be right to "
            "within 1 part in 10,000, and yours is further off. How fine is your search "
            "when you stop: how wide is the last interval, or the last step of your grid?"
        )
    too_sharp = reached < inputs["target"]
    if _at_an_end(got):
        state = (
            f"Your τ = {got:g} looks like one end of your search interval (the right τ is "
            f"{want:{f}}), and with it the row is {'too sharp' if too_sharp else 'too flat'}: "
            f"entropy {max(reached, 0.0) + 0.0:.3f} nats against the target "  # no "-0.000"
            f"{inputs['target']:g}. "
        )
        # A τ below 1 is most likely the low end, above 1 the high end. A search that
        # moves the right way ends at the low end only if even that end is too flat (the
        # right τ is smaller still), and at the high end only if that end is too sharp.
        if (got < 1) != too_sharp:
            return state + (
                f"So the right τ lies outside your interval, "
                f"{'below' if got < 1 else 'above'} it: widen the interval, e.g. to "
                "0.001 … 1000."
            )
        return state + (
            "Did your search move the wrong way at every step? When the entropy is below the "
            "target, the row is too sharp: which end of the interval should move, and where to?"
        )
    direction = "too sharp: raise τ" if too_sharp else "too flat: lower τ"
    return (
        f"With your τ = {got:{f}} the row's entropy is {reached:.3f} nats, not the target "
        f"{inputs['target']:g} (the right τ is {want:{f}}): {direction}. The entropy rises "
        "steadily with τ, so you can close in on the target by halving an interval of τ, "
        "e.g. from 0.001 to 1000."
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
        # The hint prints both temperatures with enough digits to tell them apart; the
        # example's 3 decimals would show a close answer and the right one alike.
        show_expected=False,
        show_returned=False,
    ),
)
