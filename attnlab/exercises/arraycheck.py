"""The checker for exercises whose answer is a function returning one array.

Every exercise of lessons 01-05 uses it: it calls the answer on a few seeded
test inputs (``Case``), compares with the reference from ``attnlab``, and on
the first disagreement names the mistake by matching the answer against the
exercise's known wrong variants (``Mistake``), then shows expected against got.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .answers import as_answer_array
from .calling import DEFAULT_TIMEOUT, call_answer, quietly, silenced
from .compare import largest_difference, matches
from .formatting import array_block, inputs_block, shape_text
from .mistakes import Mistake
from .result import CheckResult, Fail

# hint(got, want, inputs) -> a message, or None when it has nothing to say.
Hint = Callable[[np.ndarray, np.ndarray, dict[str, Any]], str | None]
# prepare(got, notes) -> got in the form to compare; may Fail or add a note for the PASS message.
Prepare = Callable[[np.ndarray, list[str]], np.ndarray]


@dataclass(frozen=True)
class Case:
    """One test input: a short description for messages, and the arguments by name."""

    label: str
    inputs: dict[str, Any]


@dataclass(frozen=True)
class ArrayCheck:
    """Checks an answer against ``reference`` on ``cases()``; see the module docstring.

    ``shape_rule`` says what the result's shape should be and why, ``shape_hint`` is
    added when the learner's code stops on mismatched shapes, ``hints`` explain
    wrong answers no mistake matches, and ``prepare`` adapts the returned array
    before comparing (e.g. accepting 0/1 for a bool mask). A failure's example
    prints the inputs named in ``shown_inputs``; by default all of them when they are
    small, as the case's label already gives their shapes.
    """

    name: str
    cases: Callable[[], Sequence[Case]]
    reference: Callable[..., Any]
    shape_rule: str
    mistakes: tuple[Mistake, ...] = ()
    hints: tuple[Hint, ...] = ()
    shape_hint: str = ""
    prepare: Prepare | None = field(default=None)
    shown_inputs: tuple[str, ...] | None = None

    def __call__(self, answer: Callable[..., Any], *, timeout=DEFAULT_TIMEOUT) -> CheckResult:
        notes: list[str] = []
        cases = list(self.cases())
        try:
            with silenced():
                for case in cases:
                    self._check_case(answer, case, timeout, notes)
        except Fail as fail:
            return CheckResult(False, fail.message, self.name)
        labels = "; ".join(case.label for case in cases)
        message = (
            f"Well done! Your `{self.name}` matches the reference on all {len(cases)} "
            f"test inputs ({labels})."
        )
        return CheckResult(True, "\n\n".join([message, *notes]), self.name)

    def _check_case(self, answer, case: Case, timeout, notes: list[str]) -> None:
        value = call_answer(
            answer, case.inputs, name=self.name, timeout=timeout, shape_hint=self.shape_hint
        )
        want = np.asarray(quietly(self.reference, *_copies(case.inputs)))
        got = as_answer_array(value, self.name, want.ndim)
        if self.prepare is not None:
            got = self.prepare(got, notes)
        if not matches(got, want):
            raise Fail(self._diagnosis(got, want, case) + "\n\n" + self._example(got, want, case))

    def _diagnosis(self, got: np.ndarray, want: np.ndarray, case: Case) -> str:
        for mistake in self.mistakes:
            wrong = _wrong_result(mistake, case.inputs)
            # A variant that agrees with the reference on this input can't be the explanation.
            if wrong is not None and not matches(wrong, want) and matches(got, wrong):
                return mistake.message
        if got.shape != want.shape:
            return self._shape_message(got, want)
        for hint in self.hints:
            message = quietly(hint, got, want, case.inputs)
            if message:
                return message
        if not np.isfinite(got.astype(np.float64)).all():
            return (
                f"Your `{self.name}` returned NaN or inf. Look for a division by zero, "
                f"inf - inf, or an exponential of a large number."
            )
        size, index = largest_difference(got, want)
        return (
            f"Your `{self.name}` returns the right shape but different numbers: the largest "
            f"difference is {size:.3g}, at position {list(index)}."
        )

    def _shape_message(self, got: np.ndarray, want: np.ndarray) -> str:
        message = (
            f"Your `{self.name}` returned {shape_text(got.shape)}, but the result should have "
            f"{shape_text(want.shape)}: {self.shape_rule}."
        )
        if got.ndim == want.ndim > 1 and got.shape == want.shape[::-1]:
            message += " Yours has the axes the other way round; is something transposed?"
        elif got.size == want.size and got.ndim != want.ndim:
            message += " It has the right number of entries, arranged in a different shape."
        return message

    def _example(self, got: np.ndarray, want: np.ndarray, case: Case) -> str:
        lines = [f"Test input: {case.label}", *inputs_block(case.inputs, self.shown_inputs)]
        lines += [f"Expected, {shape_text(want.shape)}:", array_block(want)]
        lines += [f"Your `{self.name}` returned, {shape_text(got.shape)}:", array_block(got)]
        return "\n".join(lines)


def _copies(inputs: dict[str, Any]) -> list[Any]:
    return [np.copy(v) if isinstance(v, np.ndarray) else v for v in inputs.values()]


def _wrong_result(mistake: Mistake, inputs: dict[str, Any]) -> np.ndarray | None:
    try:
        return np.asarray(quietly(mistake.compute, *_copies(inputs)))
    except Exception:  # a variant that can't run on these shapes explains nothing here
        return None
