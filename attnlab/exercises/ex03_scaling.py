"""Exercises ``temperature_for_entropy`` (the divisor τ that gives a softmax row a chosen
entropy) and ``largest_jacobian_entry`` (how much gradient a softmax row can pass back,
computed without building its Jacobian).

The entropy H(p) = -Σ_j p_j log p_j (nats, with 0 · log 0 = 0) measures how spread out a
row of weights is; the lesson gives it as ``attnlab.entropy`` and uses it to measure how
far softmax collapses onto one key when the scores are large.

Lesson: ``notebooks/03_scaling.ipynb``.
"""

import contextvars
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lessons.scaling import largest_jacobian_entry, temperature_for_entropy
from ..memory import measured_peak
from ..softmax import entropy, softmax
from . import solutions
from .arrays import ArrayCheck, Case, Mistake, softmax_rows
from .calling import call_answer, silenced
from .messages import CheckResult, Fail, TooSlow
from .registry import register

# ---------------------------------------------------- temperature_for_entropy


def temperature_cases() -> list[Case]:
    # The right τ runs from 0.07 to 44 (the third row's scores are in the hundreds), so a
    # search in a fixed interval such as 0 … 5 fails here, as it would in grading. The
    # fourth row has one score 800 below the rest: its τ (0.43) is set by the top two, far
    # below (max − min) / 1000, and near it e^(−800/τ) is exactly 0, so 0 · log 0 must count
    # as 0.
    rng = np.random.default_rng(313)
    rows = [np.round(rng.normal(scale=3.0, size=n), 1) for n in (5, 8)]
    rows.append(np.round(rng.normal(scale=60.0, size=16)))
    targets = [1.0, 0.5, 2.0]
    cases = [
        Case(
            f"{len(s)} scores from {s.min():g} to {s.max():g}, target entropy {t:g} nats "
            f"(uniform would be {np.log(len(s)):.2f})",
            {"scores": s, "target": t},
        )
        for s, t in zip(rows, targets, strict=True)
    ]
    far = np.array([0.0, -1.0, -800.0])
    cases.append(
        Case(
            f"3 scores, one of them 800 below the rest ({far.tolist()}), target entropy 0.3 "
            f"nats (uniform would be {np.log(3):.2f})",
            {"scores": far, "target": 0.3},
        )
    )
    return cases


def _reference_temperature(scores, target):
    return temperature_for_entropy(scores, target)


def _multiplier(scores, target):
    # The τ of someone who multiplies the scores by τ: the reciprocal of the right one.
    return 1 / temperature_for_entropy(scores, target)


def _in_bits(scores, target):
    # The τ of a search whose own entropy uses log base 2: it reaches `target` bits,
    # which is target · log 2 nats (always between 0 and log n when the target is).
    return temperature_for_entropy(scores, target * np.log(2))


TEMPERATURE_MISTAKES = (
    Mistake(
        "Your τ is the reciprocal of the right one: did you multiply the scores by τ, or "
        "return β = 1/τ (the hint's variable) instead of τ? A temperature divides the "
        "scores, softmax(scores / τ): a larger τ gives a flatter row.",
        _multiplier,
    ),
    Mistake(
        "You returned the target entropy itself, not a temperature. The target is what the "
        "row's entropy should reach; τ is the number you divide the scores by to get there. "
        "Which τ makes entropy(softmax(scores / τ)) equal to the target?",
        lambda scores, target: float(target),
    ),
    Mistake(
        "With your τ the row's entropy is the target in bits, not in nats: does your search "
        "measure entropy with `np.log2`? The target is in nats, like the course's "
        "`entropy`, which uses the natural log `np.log` (1 bit = log 2 ≈ 0.693 nats).",
        _in_bits,
    ),
)


def _digits(got: float, want: float) -> str:
    """A format that tells two numbers apart: 6 significant digits when they agree to 3
    decimals (they would print alike), 4 otherwise."""
    return ".6g" if f"{got:.3f}" == f"{want:.3f}" else ".4g"


def _round_end(tau: float, spread: float) -> bool:
    """Whether τ is a round number a search interval might end at: a power of ten, such
    as 0.1, 1 or 1000, or (for a search that sizes its interval by the row) the row's
    spread max − min times a power of ten."""
    for unit in (1.0, spread):
        if unit > 0:
            power = np.log10(tau / unit)
            if abs(power - round(power)) < 1e-6:
                return True
    return False


# The answer being checked, so that a hint can try it on other targets (set by
# TemperatureCheck while it checks).
_ANSWER: contextvars.ContextVar[tuple[Any, str, float | None] | None] = contextvars.ContextVar(
    "ex03_temperature_answer", default=None
)


def _tried(scores: np.ndarray, targets: tuple[float, ...]) -> list[float] | None:
    """The answer's τ for the same scores and each target, or None if it cannot say
    (no answer at hand, an error, or something other than one positive number)."""
    held = _ANSWER.get()
    if held is None:
        return None
    answer, name, timeout = held
    found = []
    for target in targets:
        try:
            value = call_answer(
                answer, {"scores": scores, "target": float(target)}, name=name, timeout=timeout
            )
            tau = float(np.asarray(value, dtype=np.float64).ravel()[0])
        except Exception:  # a Fail, or a value that is no number: the probe cannot say
            return None
        if np.size(value) != 1 or not np.isfinite(tau) or tau <= 0:
            return None
        found.append(tau)
    return found


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _zero_weight_hint(got: float, want: float, inputs: dict[str, Any]) -> str | None:
    """What to say to a search whose entropy is `-(p * np.log(p)).sum()`: on a row with a
    score far below the rest, a weight that is exactly 0 makes it NaN, and NaN < target is
    False. Found by running the answer again: it must be right on the row without the
    scores whose weights are 0 at the right τ (the same τ, to within rounding), and wrong
    on this row for a target whose τ lies just below the one where a weight first becomes
    0 (a right search with any interval that passed the other inputs finds that τ)."""
    scores = np.asarray(inputs["scores"], dtype=np.float64)
    target = float(inputs["target"])
    zero = softmax(scores / want) == 0
    if not zero.any() or zero.all() or not (softmax(scores / got) == 0).any():
        return None
    kept = scores[~zero]
    if kept.size < 2 or target >= np.log(kept.size):
        return None
    # e^(−x) is 0 in float64 from x ≈ 745 on: at 0.9 of this τ the lowest weight is 0.
    tau_probe = 0.9 * float(scores.max() - scores.min()) / 745.2
    target_probe = float(entropy(softmax(scores / tau_probe)))
    if not 0 < target_probe < np.log(scores.size):
        return None
    right_kept = temperature_for_entropy(kept, target)
    right_probe = temperature_for_entropy(scores, target_probe)
    on_kept, on_probe = _tried(kept, (target,)), _tried(scores, (target_probe,))
    if on_kept is None or on_probe is None:
        return None
    if abs(on_kept[0] / right_kept - 1) > 1e-4 or abs(on_probe[0] / right_probe - 1) <= 1e-4:
        return None
    low, gap = float(scores.min()), float(scores.max() - scores.min())
    return (
        f"Your search finds the right τ for the row without its score {low:g} (τ = "
        f"{right_kept:.4g}), but not with it. Near that τ the weight of {low:g} is about "
        f"e^(−{gap:g} / τ), which is exactly 0 in floating point. Does your "
        "search measure the entropy as `-(p * np.log(p)).sum()`? Then that weight gives "
        "0 · log 0 = 0 · (−inf) = nan (Section 2), and every comparison with nan, such as "
        "`nan < target`, is False, so your search takes each such τ for too flat. Use "
        "`entropy` (imported above), which counts 0 · log 0 as 0."
    )


def _stuck_hint(got: float, want: float, inputs: dict[str, Any], reached: float) -> str | None:
    """What to say about a τ that does not move towards the right one when the target
    moves that way, found by running the answer again: on targets near this one, and on
    one near 0 and one near log n. A search stuck at one end of its interval gives the same
    τ for a target a little further towards the right τ's side and for the far one there
    (a search that merely stops too soon moves on the far one). If it moves the right way,
    a target near 0 gives a smaller τ than one near log n, and the right τ lies outside
    the interval; if it moves the wrong way, the reverse. A τ that never moves is no
    search at all."""
    scores = np.asarray(inputs["scores"], dtype=np.float64)
    target, top = float(inputs["target"]), float(np.log(scores.size))
    near = (target * 0.97, min(target * 1.03, (target + top) / 2))
    tried = _tried(scores, (*near, 1e-6 * top, (1 - 1e-6) * top))
    f = _digits(got, want)
    spread = float(scores.max() - scores.min())
    row = (
        f"the row is {'too sharp' if reached < target else 'too flat'}: entropy "
        f"{max(reached, 0.0) + 0.0:.3f} nats against the target {target:g} "  # no "-0.000"
        f"(the right τ is {want:{f}})"
    )
    side = "below" if want < got else "above"
    if tried is None:  # the answer could not be run again: only a round number suggests more
        if not _round_end(got, spread):
            return None
        return (
            f"With your τ = {got:g} {row}. Your τ looks like one end of your search interval. "
            f"Either the right τ lies outside your interval ({side} it: widen the interval, "
            "e.g. to 0.001 … 1000), or your search moved the wrong way at every step: when "
            "the entropy is below the target, the row is too sharp, so which end of the "
            "interval should move?"
        )
    near_low, near_high, sharpest, flattest = tried
    # An end of the interval stops τ on the right τ's side: a target a little further that
    # way, or one near 0 or log n, gives the same τ. (A coarse search can give the same τ
    # for the near target, but not for the far one.)
    toward, beyond = (near_high, flattest) if want > got else (near_low, sharpest)
    if not _same(toward, got):
        return None  # τ moves with the target: no end of an interval
    if not _same(beyond, got):
        if not _round_end(got, spread):
            return None
        # Stuck at a round end for every target near this one, though the far target moves
        # it: a search that walks away from the right τ, e.g. one that multiplies the scores
        # by τ or compares the largest weight (each turns the direction round).
        nearby = "falls a little" if want < got else "rises a little"
        return (
            f"Your τ = {got:g} stays put when the target {nearby}, so it looks like one end "
            f"of your search interval; with it {row}. Your search seems to walk away from "
            "the right τ: check what it compares with the target, and which way each step "
            "moves. Do you multiply the scores by τ, `scores * tau`? A temperature divides "
            "them, inside the softmax, so a larger τ gives a flatter row: not the weights "
            "after it (`softmax(scores) / tau`), and not by subtraction (`scores - tau`). Or "
            "is the number you compare the largest weight, which falls as τ rises, rather "
            "than the entropy?"
        )
    if _same(sharpest, got) and _same(flattest, got):
        if not _round_end(got, spread):
            return None  # a fixed rule, such as τ = √n: the general hint says what to do
        return (
            f"Your function returns τ = {got:g} whatever the target, even one near 0 or near "
            f"log {scores.size}; with it {row}. That looks like one end of your search "
            "interval, and it never moves. Does your loop run, and does each step move one "
            "end of the interval? Or does the number you compare never cross the target, for "
            "example an entropy with its minus sign dropped?"
        )
    moved = f"rises, even to near log {scores.size}" if want > got else "falls, even to near 0"
    state = (
        f"Your τ = {got:g} stays put when the target {moved}, so it looks like one end of "
        f"your search interval; with it {row}. "
    )
    if sharpest < flattest:  # a lower target gives a smaller τ: the right way
        return state + (
            "Your search moves the right way (a lower target gives a smaller τ), so the right "
            f"τ lies outside your interval, {side} it: widen the interval, e.g. to "
            "0.001 … 1000."
        )
    return state + (
        "Did your search move the wrong way at every step? When the entropy is below the "
        "target, the row is too sharp: which end of the interval should move, and where to? "
        "(Or is the number you compare with the target one that falls as τ rises, such as "
        "the largest weight, rather than the entropy?)"
    )


def _decimals_of(tau: float, right: float) -> int | None:
    """The number of decimals, 0 to 3, to which ``tau`` looks like ``right`` rounded: τ has
    no more decimals and lies within half a unit of the last one from ``right``. None if
    neither holds for any of them."""
    for decimals in range(4):
        unit = 10.0**-decimals
        steps = tau / unit
        if abs(steps - round(steps)) < 1e-9 * max(1.0, abs(steps)):
            return decimals if abs(tau - right) <= 0.5 * unit * (1 + 1e-9) else None
    return None


def _rounding_hint(got: float, want: float, inputs: dict[str, Any]) -> str | None:
    """What to say about a τ that is the right one rounded (or found on a grid of whole
    numbers or a few decimals). Where the answer can be run again, it must look rounded at
    half the target too: a fixed τ = 2, say, does not."""
    decimals = _decimals_of(got, want)
    if decimals is None:
        return None
    scores = np.asarray(inputs["scores"], dtype=np.float64)
    half = 0.5 * float(inputs["target"])
    tried = _tried(scores, (half,))
    if tried is not None and _decimals_of(tried[0], temperature_for_entropy(scores, half)) is None:
        return None
    if decimals == 0:
        rounded, grid = "a whole number", "whole numbers"
    else:
        rounded, grid = f"{decimals} decimal{'s' * (decimals > 1)}", f"steps of {10.0**-decimals:g}"
    return (
        f"Your τ = {got:g} is the right τ, {want:{_digits(got, want)}}, rounded to {rounded}: "
        f"did you round τ, or try only {grid}? τ should be right to within 1 part in 10,000: "
        "return it unrounded, and let your search stop only when it is that close."
    )


# Within 5 % of the right τ (but not within the pass tolerance) an answer most likely comes
# from a search that stopped too soon; a rule such as τ = √n is further off on the first
# test input (9 %). Up to 20 % off, it is still a search stopped too soon if its τ falls
# when the target does (10 halvings of 0.001 … 1000 give 2.44 against 2.04); a fixed rule's
# τ does not move.
_CLOSE, _CLOSE_IF_IT_MOVES = 0.05, 0.2


def _not_a_temperature(got: float) -> str:
    """What to say about a τ that is NaN, infinite, zero or negative."""
    if np.isnan(got):
        return (
            "Your τ came out as nan (not a number). NaN comes from 0/0 or ∞ − ∞ somewhere: "
            "a step divided by a slope that came out 0, say, or a division by τ = 0. "
            "Return one positive number, the temperature τ."
        )
    if np.isinf(got):
        return (
            f"Your τ came out as {got:g}: your search ran off without limit. Return one "
            "positive number, the temperature τ. A search that keeps τ between two finite "
            "numbers cannot run off."
        )
    return (
        f"Your τ came out as {got:.4g}, but a temperature is positive: τ = 0 divides by 0, "
        "and a negative τ turns the order of the scores round, so the lowest score gets the "
        "most weight. Return one positive number. (A Newton step can overshoot below 0; a "
        "search that keeps τ inside an interval of positive numbers cannot.)"
    )


def _divided_by_zero(message: str, inputs: dict[str, Any]) -> bool:
    return "ZeroDivisionError" in message or "FloatingPointError" in message


# Cell 25's hint gives dH/dβ = −β·Var_p(s) to show that the entropy is monotone; a Newton
# step divides by it, and it is exactly 0 on a row that is one-hot in floating point.
_ZERO_SLOPE = (
    "If you take Newton steps with the slope dH/dβ = −β·Var_p(s) from the hint (β = 1/τ), "
    "that slope is exactly 0 on a row that is one-hot in floating point, as a row of scores "
    "in the hundreds is at τ = 1"
)
_NO_SLOPE_NEEDED = (
    "The hint gives the slope to show that the entropy moves one way only; a search that "
    "keeps τ between two finite numbers and halves that interval needs no slope, so it "
    "cannot divide by 0."
)
DIVIDED_BY_ZERO = (
    f"Where does that 0 come from? {_ZERO_SLOPE}. {_NO_SLOPE_NEEDED} "
    "(Or is τ itself 0 at some step?)"
)


def _infinite_input(message: str, inputs: dict[str, Any]) -> bool:
    return "x contains +inf" in message


def _entropy_of_scores(message: str, inputs: dict[str, Any]) -> bool:
    return "p has negative entries" in message


# `entropy(scores / tau)`: the course's entropy refuses a row with negative entries.
ENTROPY_OF_SCORES = (
    "`entropy` takes a row of weights, and yours had negative entries: did you forget the "
    "softmax? The row whose entropy you compare with the target is softmax(scores / τ)."
)


# The same Newton step with NumPy floats: a float64 divided by a zero slope gives inf (with
# a warning) rather than raising, and softmax then meets scores * inf.
INFINITE_INPUT = (
    f"Where does that ∞ come from? {_ZERO_SLOPE}, and a NumPy number divided by 0 gives inf "
    f"instead of an error, so β becomes inf. {_NO_SLOPE_NEEDED} (Or do you divide the scores "
    "by a τ of 0 at some step?)"
)


def _temperature_hint(got, want, inputs):
    if np.size(got) != 1:
        return "Return one positive number, the temperature τ."
    got = float(np.asarray(got, dtype=np.float64).ravel()[0])
    if not np.isfinite(got) or got <= 0:
        return _not_a_temperature(got)
    want = float(want)
    f = _digits(got, want)
    target = inputs["target"]
    reached = float(entropy(softmax(np.asarray(inputs["scores"], float) / got)))
    # First a weight of exactly 0, whose NaN entropy can also leave τ at an end of the
    # interval; then an end of the interval: one just short of the right τ is close, but
    # narrowing cannot help it.
    zero = _zero_weight_hint(got, want, inputs)
    if zero is not None:
        return zero
    stuck = _stuck_hint(got, want, inputs, reached)
    if stuck is not None:
        return stuck
    rounded = _rounding_hint(got, want, inputs)
    if rounded is not None:
        return rounded
    reached = max(reached, 0.0) + 0.0  # rounding can leave -1e-17: no "-0.000"
    off = abs(got / want - 1)
    tried = None if off < _CLOSE else _tried(np.asarray(inputs["scores"], float), (target * 0.5,))
    moves = tried is not None and tried[0] < got and not _same(tried[0], got)
    if off < _CLOSE or (off < _CLOSE_IF_IT_MOVES and moves):
        return (
            f"Close: your τ = {got:{f}} gives entropy {reached:.4f} nats against the target "
            f"{target:g}, and the right τ is {want:{f}}. τ should be right to within 1 part "
            "in 10,000, and yours is further off: your search seems to stop too early. How "
            "fine is your search when it stops: how wide is your last interval, or the step "
            "of your grid? Keep narrowing until it is narrower than τ / 10,000."
        )
    too_sharp = reached < target
    fixed = ""
    if tried is not None and _same(tried[0], got):
        fixed = (
            f"Your function returns τ = {got:{f}} for the target {target:g} and for "
            f"{target * 0.5:g} too, but a lower entropy needs a sharper row, a smaller τ. "
        )
    direction = "too sharp, so τ must be larger" if too_sharp else "too flat, so τ must be smaller"
    # No method named: the notebook's hint asks the same question, and the solution shows it.
    return fixed + (
        f"With your τ = {got:{f}} the row's entropy is {reached:.3f} nats, not the target "
        f"{target:g} (the right τ is {want:{f}}): the row is {direction}. No formula gives "
        'τ, but the entropy rises steadily with τ, so each τ you try tells you "too sharp" '
        'or "too flat". How can you use that answer to rule out a whole range of τ at '
        "once? (If your code searches already: is the number you compare with the target "
        "the entropy, in nats, of softmax(scores / τ)?)"
    )


def _one_number(got: np.ndarray, notes: list[str]) -> np.ndarray:
    """Accept τ inside an array of one entry (it holds the right number), with a note."""
    if got.shape == () or got.size != 1:
        return got
    note = (
        f"Note: your function returns τ wrapped in an array (or list) of shape {got.shape}. That "
        "passes, but τ is one number: return it as such, e.g. `float(tau)`."
    )
    if note not in notes:
        notes.append(note)
    return got.reshape(())


# What a slow answer is told in place of the general "Is there an endless loop?": here a
# grid of τ values is as likely as a loop that never stops. Halving 10⁻³ … 10³ reaches 1
# part in 10,000 after 18 steps on a log scale, 28 on a linear one (for τ = 0.07).
SLOW_TEMPERATURE = (
    "Two things take that long here: a loop that never stops (a `while` that waits for the "
    "entropy to equal the target exactly, say, which rounding may never allow), or trying "
    'τ values one by one on a fine grid. Each τ you try tells you "too sharp" or "too '
    'flat", and so rules out every τ on one side of it: try the middle of the range still '
    "open each time, and a few dozen tries narrow τ to 1 part in 10,000."
)


@dataclass(frozen=True)
class TemperatureCheck(ArrayCheck):
    """An ArrayCheck whose hints may run the answer on other targets, to tell a search
    stuck at one end of too narrow an interval from one that moves the wrong way, and
    whose time-limit message names a fine grid as well as an endless loop."""

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        token = _ANSWER.set((answer, name, timeout))
        try:
            return super().__call__(answer, name=name, timeout=timeout)
        finally:
            _ANSWER.reset(token)

    def _answer_on(self, answer, case: Case, want, name: str, timeout, notes) -> np.ndarray:
        try:
            return super()._answer_on(answer, case, want, name, timeout, notes)
        except TooSlow as slow:
            head, found, _ = slow.message.partition(" Is there an endless loop?")
            if not found:
                raise
            still = " It is still running"
            tail = slow.message[slow.message.find(still) :] if still in slow.message else ""
            raise TooSlow(f"{head} {SLOW_TEMPERATURE}{tail}") from None


register(
    "notebooks/03_scaling.ipynb",
    solutions.temperature_for_entropy,
    "temperature_for_entropy(scores, target) -> τ with entropy(softmax(scores / τ)) = target",
    TemperatureCheck(
        temperature_cases,
        reference=_reference_temperature,
        shape_rule="one number, the temperature τ",
        prepare=_one_number,
        mistakes=TEMPERATURE_MISTAKES,
        hints=(_temperature_hint,),
        # The hint prints both temperatures with enough digits to tell them apart; the
        # example's 3 decimals would show a close answer and the right one alike.
        show_expected=False,
        show_returned=False,
        error_hints=(
            (_divided_by_zero, DIVIDED_BY_ZERO),
            (_infinite_input, INFINITE_INPUT),
            (_entropy_of_scores, ENTROPY_OF_SCORES),
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
            "p (3×3): three rows of softmax weights",
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
        "You used the row's mean weight, p (1 − p) at p = 1/n. But the mean of a softmax "
        "row is always 1/n, since its n weights sum to 1, so it gives the same number for "
        "every row of n keys, sharp or flat. Which single weight of a row decides its "
        "largest entry?",
        lambda p: p.mean(axis=-1) * (1 - p.mean(axis=-1)),
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
        "You returned 1 − p_max, the weight left for the other keys: one factor of the "
        "diagonal entry J_ii = p_i (1 − p_i). Which i gives the largest entry, and why can "
        "no entry off the diagonal beat it?",
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
        "You used the index of the largest weight, not the weight: `argmax` gives its "
        "position in the row, `max` its value. J_ii = p_i (1 − p_i) needs the weight.",
        lambda p: p.argmax(axis=-1) * (1 - p.argmax(axis=-1)),
    ),
    Mistake(
        "You took the maximum down the columns (axis 0). Each row of p is one softmax "
        "row with its own Jacobian: work along the last axis, `axis=-1`.",
        lambda p: p.max(axis=0) * (1 - p.max(axis=0)),
    ),
    Mistake(
        "You took the maximum down the columns (axis 0). Each row of p is one softmax "
        "row with its own Jacobian: work along the last axis, `axis=-1`.",
        lambda p: (p * (1 - p)).max(axis=0),
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

    def _diagnosis(self, got, want, case, name: str, elsewhere=lambda: []) -> str:
        # An integer result (``astype(int)``) turns every entry, all below 1/4, into 0:
        # name the dtype instead of the general "only zeros" message (a named mistake that
        # returns integers, such as the index of the top weight, keeps its own message).
        message = super()._diagnosis(got, want, case, name, elsewhere)
        if got.dtype.kind in "iu" and "returns only zeros" in message:
            return (
                f"Your `{name}` returns whole numbers (dtype {got.dtype}), but every entry "
                "here lies between 0 and 1/4. An integer dtype, e.g. from `astype(int)`, turns "
                "every entry below 1 into 0: keep the floats."
            )
        return message

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
        except TooSlow:
            return CheckResult(
                False,
                f"Your `{name}` is right on the small inputs, but on p of shape "
                f"({MEMORY_ROWS}, {MEMORY_KEYS}), rows of {MEMORY_KEYS} weights, it took "
                f"longer than {timeout:g} s and was stopped. Does it loop over all pairs "
                f"i, j? That is {MEMORY_KEYS**2:,} pairs a row. One weight of each row "
                "decides the answer: which one?",
                name,
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
        # The expected numbers are p_max (1 − p_max) of rows the example prints: showing
        # them would give the formula away.
        show_expected=False,
    ),
)
