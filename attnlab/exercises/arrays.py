"""The checker for exercises whose answer is a function returning one array.

``ArrayCheck`` calls the answer on a few seeded test inputs (``Case``), compares with
the reference from ``attnlab``, and on the first disagreement names the mistake by
matching the answer against the exercise's known wrong variants (``Mistake``), then
shows expected against got. Also here: the test-input helpers and the wrong softmaxes
that several lessons' mistakes are built from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._inputs import EXP_LIMIT
from .calling import call_answer, quietly, silenced
from .messages import CheckResult, Fail, TooSlow, array_block, inputs_block, shape_text

# Loose enough for an answer computed (or returned) in float32, tight enough that every
# known mistake on the test inputs is far outside it.
RTOL, ATOL = 1e-4, 1e-6
_NOT_NUMBERS = {
    "O": "Python objects",
    "U": "text",
    "S": "bytes",
    "V": "structured records",
    "M": "dates",
    "m": "time spans",
}

# hint(got, want, inputs) -> a message, or None when it has nothing to say.
Hint = Callable[[np.ndarray, np.ndarray, dict[str, Any]], "str | None"]
# prepare(got, notes) -> got in the form to compare; may Fail or add a note to the PASS.
Prepare = Callable[[np.ndarray, list[str]], np.ndarray]
# (fits(error message, inputs), hint): a more specific hint for an error the answer raises.
ErrorHint = tuple[Callable[[str, dict[str, Any]], bool], str]


@dataclass(frozen=True)
class Case:
    """One test input: a short description for messages, and the arguments by name."""

    label: str
    inputs: dict[str, Any]


@dataclass(frozen=True)
class Mistake:
    """A classic mistake: ``compute`` takes the exercise's inputs and returns the wrong
    result it leads to; ``message`` names it and says in one sentence why it's wrong."""

    message: str
    compute: Callable[..., Any]


def ratio_hint(advice: str) -> Hint:
    """A hint for a wrong count that no known mistake explains: how far off it is, then
    ``advice`` on what to count. For exercises whose answer is one number."""

    def hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
        if got.shape != () or not np.isfinite(got.astype(np.float64)) or float(want) == 0:
            return None
        ratio = float(got) / float(want)
        if f"{ratio:.4g}" == "1":  # too close for a ratio to say anything: give the gap
            gap = float(got) - float(want)
            more = "more" if gap > 0 else "less"
            return f"Your number is {abs(gap):.6g} {more} than the right one. {advice}"
        return f"Your number is {ratio:.4g} times the right one. {advice}"

    return hint


def bool_mask(
    zero_one_note: str, label: str = "mask", other_forms: Callable[[np.ndarray], None] | None = None
) -> Prepare:
    """A ``prepare`` for mask exercises: accept bool, or numbers that are all exactly 0 or 1
    (adding ``zero_one_note``, which says why bool is preferred). Anything else fails,
    after ``other_forms(values)`` has had the chance to fail with a more specific message."""

    def prepare(got: np.ndarray, notes: list[str]) -> np.ndarray:
        if got.dtype == np.bool_:
            return got
        values = np.unique(got)
        if got.dtype.kind in "iuf" and np.isin(values, (0, 1)).all():
            note = (
                f"Note: your mask holds 0/1 numbers (dtype {got.dtype}) rather than "
                f"True/False. That passes, but a bool mask is preferred: {zero_one_note}"
            )
            if note not in notes:
                notes.append(note)
            return got.astype(bool)
        if other_forms is not None:
            other_forms(values)
        shown = np.array2string(values[:6], precision=3)
        raise Fail(
            f"Your {label} should hold only True and False (or 0 and 1), but it holds "
            f"{shown}{' ...' if values.size > 6 else ''}."
        )

    return prepare


@dataclass(frozen=True)
class ArrayCheck:
    """Checks an answer against ``reference`` on ``cases()``; see the module docstring.

    ``shape_rule`` says what the result's shape should be and why, ``shape_hint`` is
    added when the learner's code stops on mismatched shapes, ``hints`` explain wrong
    answers no mistake matches, and ``prepare`` adapts the returned array before
    comparing (e.g. accepting 0/1 for a bool mask). A failure's example prints the
    inputs named in ``shown_inputs``; by default all of them when they are small.
    ``exact`` compares without tolerance, for answers that are counts. ``index_hint``
    is added when the learner's code stops on an IndexError that is not about shapes:
    an index past the end of an array it reads from, such as a table of biases.
    ``show_expected=False`` leaves the expected array out of a failure's example,
    ``show_returned=False`` the learner's. ``error_hints`` are (test on the error message
    and the inputs, hint) pairs for errors the answer raises; the first that fits replaces
    the general ``shape_hint``.
    """

    cases: Callable[[], Sequence[Case]]
    reference: Callable[..., Any]
    shape_rule: str
    mistakes: tuple[Mistake, ...] = ()
    hints: tuple[Hint, ...] = ()
    shape_hint: str = ""
    prepare: Prepare | None = None
    shown_inputs: tuple[str, ...] | None = None
    # Counts (tokens, layers) must match exactly: a relative tolerance would let n ± 1
    # pass once n is in the tens of thousands.
    exact: bool = False
    index_hint: str = ""
    # False where the expected array would give the answer away (a mask's pattern), or
    # where the arrays are too big to read and the diagnosis says what matters.
    show_expected: bool = True
    show_returned: bool = True
    error_hints: tuple[ErrorHint, ...] = ()

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        if not callable(answer):
            return CheckResult(
                False,
                f"`check` needs your function itself, e.g. `check({name!r}, {name})`, but got a "
                f"{type(answer).__name__}. Pass the name without calling it (no parentheses).",
                name,
            )
        notes: list[str] = []
        cases = list(self.cases())
        try:
            with silenced():
                for case in cases:
                    self._check_case(answer, case, name, timeout, notes, cases)
        except Fail as fail:
            return CheckResult(False, fail.message, name)
        labels = "; ".join(case.label for case in cases)
        message = (
            f"Well done! Your `{name}` matches the reference on all {len(cases)} "
            f"test inputs ({labels})."
        )
        return CheckResult(True, "\n\n".join([message, *notes]), name)

    def _expected(self, case: Case) -> np.ndarray:
        return np.asarray(quietly(self.reference, *_copies(case.inputs)))

    def _answer_on(
        self, answer, case: Case, want: np.ndarray, name: str, timeout, notes: list[str]
    ) -> np.ndarray:
        try:
            value = call_answer(
                answer,
                case.inputs,
                name=name,
                timeout=timeout,
                shape_hint=self.shape_hint,
                index_hint=self.index_hint,
            )
        except TooSlow:
            raise
        except Fail as fail:
            raise self._with_error_hint(fail, case) from None
        self._refuse_returned(value, name)
        got = as_answer_array(value, name, want.ndim)
        return got if self.prepare is None else self.prepare(got, notes)

    def _refuse_returned(self, value: Any, name: str) -> None:
        """Raise Fail for a returned value this exercise has its own words for, before the
        general messages of :func:`as_answer_array` see it (none here)."""

    def _with_error_hint(self, fail: Fail, case: Case) -> Fail:
        for fits, hint in self.error_hints:
            if fits(fail.message, case.inputs):
                head = fail.message
                if self.shape_hint and head.endswith(" " + self.shape_hint):
                    head = head[: -len(self.shape_hint) - 1]
                return Fail(f"{head} {hint}")
        return fail

    def _check_case(self, answer, case: Case, name: str, timeout, notes, cases) -> None:
        want = self._expected(case)
        got = self._answer_on(answer, case, want, name, timeout, notes)
        same = np.array_equal(got, want) if self.exact else matches(got, want)
        if not same:

            def elsewhere() -> list[tuple[Case, np.ndarray]]:
                # The answer on the other test inputs, to test a suspected mistake against;
                # an input the answer fails on in another way, or too slowly, is left out.
                found = []
                for other in cases:
                    if other is not case:
                        try:
                            theirs = self._answer_on(
                                answer, other, self._expected(other), name, timeout, []
                            )
                        except TooSlow:
                            break
                        except Fail:
                            continue
                        found.append((other, theirs))
                return found

            diagnosis = self._diagnosis(got, want, case, name, elsewhere)
            example = _example(
                got if self.show_returned else None,
                want if self.show_expected else None,
                case,
                name,
                self.shown_inputs,
            )
            raise Fail(f"{diagnosis}\n\n{example}")

    def _diagnosis(self, got, want, case: Case, name: str, elsewhere=lambda: []) -> str:
        answers_elsewhere = None
        for mistake in self.mistakes:
            wrong = wrong_result(mistake, case.inputs)
            # A variant that agrees with the reference on this input can't be the explanation.
            if wrong is None or matches(wrong, want) or not matches(got, wrong):
                continue
            # Nor can one the answer contradicts on another input: a slip that happens to
            # give the same mask as the answer here may give a different one there.
            if answers_elsewhere is None:
                answers_elsewhere = elsewhere()
            if all(_consistent(mistake, other, theirs) for other, theirs in answers_elsewhere):
                return mistake.message
        if got.shape != want.shape:
            message = (
                f"Your `{name}` returned {shape_text(got.shape)}, but the result should "
                f"{'be' if want.shape == () else 'have'} {shape_text(want.shape)}: "
                f"{self.shape_rule}."
            )
            if got.ndim == want.ndim == 1:  # a list of numbers, e.g. a shape: count them
                message = (
                    f"Your `{name}` returned {got.size} number{'s' * (got.size != 1)}, where "
                    f"the result has {want.size}: {self.shape_rule}."
                )
            if got.ndim == want.ndim > 1 and got.shape == want.shape[::-1]:
                message += " Yours has the axes the other way round; is something transposed?"
            elif got.size == want.size and got.ndim != want.ndim:
                message += " It has the right number of entries, arranged in a different shape."
            return message
        if got.dtype != np.bool_ and not got.any() and want.astype(np.float64).any():
            return (
                f"Your `{name}` returns only zeros, where the right result does not. Is it "
                "still a placeholder, or does a product with an empty or all-zero array "
                "creep in?"
            )
        for hint in self.hints:
            message = quietly(hint, got, want, case.inputs)
            if message:
                return message
        if not np.isfinite(got.astype(np.float64)).all():
            return (
                f"Your `{name}` returned NaN or inf. Look for a division by zero, "
                f"inf - inf, 0 · inf, or an exponential of a large number."
            )
        if got.ndim == 0:
            return (
                f"Your `{name}` returns {float(got):.4g}, which is not the right number here. "
                "Work through one test input by hand: which step gives a different number?"
            )
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        index = [int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape)]
        return (
            f"Your `{name}` returns the right shape but different numbers: the largest "
            f"difference is {float(diff[tuple(index)]):.3g}, at position {index}."
        )


def _consistent(mistake: Mistake, case: Case, got: np.ndarray) -> bool:
    """Whether the answer on another input is what the mistake gives there. An answer with
    NaN or inf there has a second problem, which says nothing against this one."""
    wrong = wrong_result(mistake, case.inputs)
    if wrong is None or (got.dtype.kind in "fc" and not np.isfinite(got).all()):
        return True
    return matches(got, wrong)


def _example(got, want, case: Case, name: str, shown: tuple[str, ...] | None) -> str:
    if shown is None and all(np.ndim(v) == 0 for v in case.inputs.values()):
        # Numbers the label already names ("d_k = 4") are not listed a second time.
        shown = tuple(k for k, v in case.inputs.items() if f"{k} = {v!r}" not in case.label)
    lines = [f"Test input: {case.label}", *inputs_block(case.inputs, shown)]
    if want is not None:
        lines += [f"Expected, {shape_text(want.shape)}:", array_block(want)]
    if got is not None:
        lines += [f"Your `{name}` returned, {shape_text(got.shape)}:", array_block(got)]
    return "\n".join(lines)


def _copies(inputs: dict[str, Any]) -> list[Any]:
    return [np.copy(v) if isinstance(v, np.ndarray) else v for v in inputs.values()]


def wrong_result(mistake: Mistake, inputs: dict[str, Any]) -> np.ndarray | None:
    """What the mistake gives on these inputs; None if it can't run on their shapes."""
    try:
        return np.asarray(quietly(mistake.compute, *_copies(inputs)))
    except Exception:  # a variant that can't run on these shapes explains nothing here
        return None


def matches(got: np.ndarray, want: np.ndarray) -> bool:
    """Same shape and the same values: exactly for bool arrays, within tolerance otherwise.

    NaN matches NaN, so an answer can be matched against a variant that overflows.
    """
    if got.shape != want.shape:
        return False
    if want.dtype == np.bool_ or got.dtype == np.bool_:
        return got.dtype == want.dtype and np.array_equal(got, want)
    got, want = got.astype(np.float64), want.astype(np.float64)
    finite = np.abs(want[np.isfinite(want)])
    # The absolute tolerance grows with the size of the numbers involved.
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return bool(np.allclose(got, want, rtol=RTOL, atol=ATOL * scale, equal_nan=True))


def as_answer_array(value: Any, name: str, expected_ndim: int) -> np.ndarray:
    """What an answer returned (list, tuple of rows, any dtype, a CPU torch tensor) as a
    plain ndarray of real numbers or booleans; None, text, complex numbers... Fail."""
    if value is None:
        raise Fail(
            f"Your `{name}` returned None. Did you forget `return`? A function without a "
            f"`return` statement (or with only `pass` or `...`) gives back None."
        )
    # What to return instead, in the words of this exercise's result.
    wanted = "the number" if expected_ndim == 0 else "the array"
    if isinstance(value, (str, bytes)):
        raise Fail(
            f"Your `{name}` returned a string ({_short(value)}); return {wanted} itself, not "
            f"text describing it."
        )
    # Rows of a result are arrays too, but with one dimension fewer than the result and
    # all of one shape; `return out, weights` gives arrays of the result's size or more.
    if (
        isinstance(value, tuple)
        and len(value) > 1
        and all(isinstance(v, np.ndarray) for v in value)
        and (any(v.ndim >= expected_ndim for v in value) or len({v.shape for v in value}) > 1)
    ):
        raise Fail(
            f"Your `{name}` returned {len(value)} arrays (a tuple, e.g. `return a, b`); "
            f"return only the result."
        )
    kind = type(value)
    if kind.__module__.startswith("torch") and kind.__name__ != "Tensor":
        # E.g. torch.nn.attention.bias.CausalBias: NumPy reads its storage, not its values.
        raise Fail(
            f"Your `{name}` returned a PyTorch `{kind.__name__}`, not an array of numbers. "
            "What would the same result look like built with NumPy?"
        )
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise Fail(
            f"Your `{name}` returned a {type(value).__name__} that NumPy cannot turn into one "
            f"array ({type(exc).__name__}: {exc}). Are some rows longer than others?"
        ) from None
    if type(arr) is not np.ndarray:  # np.matrix and masked arrays behave differently
        arr = arr.view(np.ndarray)
    if arr.dtype.kind == "c":
        raise Fail(
            f"Your `{name}` returned complex numbers; the result should be real. A square "
            f"root of a negative number, or np.lib.scimath, can bring them in."
        )
    if arr.dtype.kind in _NOT_NUMBERS:
        raise Fail(
            f"Your `{name}` returned a {type(value).__name__} holding "
            f"{_NOT_NUMBERS[arr.dtype.kind]} ({_short(value)}), not numbers; "
            + (
                "return one number on its own."
                if expected_ndim == 0
                else "return a NumPy array (or a list of lists) of numbers."
            )
        )
    return arr


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def overflow_hint(message: str, size: Callable[[dict[str, Any]], float]) -> Hint:
    """A hint giving ``message`` when the answer isn't finite and ``size(inputs)``, the
    largest exponent a plain exp would meet, overflows."""

    def hint(got: np.ndarray, want: np.ndarray, inputs: dict[str, Any]) -> str | None:
        finite = np.isfinite(got.astype(np.float64)).all()
        return message if not finite and size(inputs) > EXP_LIMIT else None

    return hint


# ------------------------------------------------- test inputs and wrong softmaxes


def readable(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """Seeded normal random numbers rounded to one decimal (0.3, -1.2): quick to read."""
    return np.round(rng.normal(scale=scale, size=shape), 1)


def softmax_along(S: np.ndarray, axis: int | None) -> np.ndarray:
    """Softmax over ``axis`` (every entry at once for None), as a building block of answers
    that normalise along the wrong axis. A slice that is -inf everywhere gives 0 rather
    than NaN: a NaN result would "explain" every answer that is NaN for another reason."""
    with np.errstate(all="ignore"):
        top = np.max(S, axis=axis, keepdims=True)
        e = np.exp(S - np.where(np.isfinite(top), top, 0.0))
        total = e.sum(axis=axis, keepdims=True)
        return np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)


def softmax_rows(S: np.ndarray) -> np.ndarray:
    """Correct softmax over the last axis, as a building block of wrong answers."""
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_columns(S: np.ndarray) -> np.ndarray:
    """Softmax over the first axis: each column sums to 1."""
    return softmax_rows(S.T).T


def softmax_unshifted(S: np.ndarray) -> np.ndarray:
    """Softmax without subtracting the maximum: overflows to inf/inf = NaN for large S."""
    e = np.exp(S)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_unnormalised(S: np.ndarray) -> np.ndarray:
    """exp(S - row max) without dividing by the row sums."""
    return np.exp(S - S.max(axis=-1, keepdims=True))
