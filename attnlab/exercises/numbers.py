"""The checker for questions whose answer is one number (``answer_<id> = ...``).

``NumberCheck`` accepts an int, a float, a NumPy scalar or a 0-d array within
``tolerance`` of the right value, names the classic slips (``Slip``: a wrong number
and what it means), and turns anything that isn't a number into a friendly FAIL.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .calling import call_answer, silenced
from .messages import CheckResult, Fail


@dataclass(frozen=True)
class Slip:
    """A wrong number a classic mistake leads to, and what to tell the learner who gave it.

    The answer matches when it is within ``tolerance`` of ``value`` (absolute).
    """

    value: float
    message: str
    tolerance: float


@dataclass(frozen=True)
class NumberCheck:
    """Checks a single number against ``want`` (± ``tolerance``).

    ``slips()`` lists the known wrong numbers in the order they are tried. The answer may
    be the number itself or a function of no arguments returning it.
    """

    want: float
    tolerance: float
    slips: Callable[[], list[Slip]]
    passed_message: Callable[[float], str]
    generic_hint: str
    # What the number is ("the standard deviation of q·k"), for the messages about answers
    # that are not one finite real number, and what to say to an answer of many numbers.
    what: str = "the answer"
    many_hint: str = "Which one of them does the question ask for?"

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult:
        try:
            with silenced():
                value = _as_number(answer, f"answer_{name}", timeout, self)
                if abs(value - self.want) <= self.tolerance:
                    return CheckResult(True, self.passed_message(value), name)
                for slip in self.slips():
                    if abs(value - slip.value) <= slip.tolerance:
                        raise Fail(slip.message)
                raise Fail(f"Not quite: {value:g} is not it. {self.generic_hint}")
        except Fail as fail:
            return CheckResult(False, fail.message, name)


def is_real_number(x: Any) -> bool:
    """An int, float or NumPy real scalar, but not a bool (which Python counts as an int).

    Also used by ``check`` to validate its ``timeout``."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _as_number(answer: Any, variable: str, timeout: float | None, check: NumberCheck) -> float:
    if callable(answer) and not isinstance(answer, (numbers.Number, np.generic, np.ndarray)):
        try:
            answer = call_answer(answer, {}, name=variable, timeout=timeout)
        except Fail as fail:
            # check("std_512", lambda: answer_std_512) before the answer cell has run
            if f"name '{variable}' is not defined" in fail.message:
                raise Fail(
                    f"`{variable}` isn't defined yet. Assign your number to it in the "
                    f"cell above (e.g. `{variable} = 3.5`, not the answer), run that "
                    f"cell, then run this one again."
                ) from None
            raise
    example = f"`{variable} = 3.5` (not the answer)"
    if answer is None:
        raise Fail(
            f"`{variable}` is None, not a number. Assign your number to it, "
            f"e.g. {example}, and run that cell again."
        )
    if answer is Ellipsis:
        raise Fail(
            f"`{variable}` is still `...`. Replace the three dots with your number, e.g. {example}."
        )
    if isinstance(answer, (bool, np.bool_)):
        raise Fail(
            f"`{variable}` is {answer}, a yes/no value. {check.what.capitalize()} is a "
            f"number: assign it, e.g. {example}."
        )
    if isinstance(answer, (str, bytes)):
        text = answer.decode(errors="replace") if isinstance(answer, bytes) else answer
        try:
            float(text)
        except ValueError:
            raise Fail(
                f"`{variable}` is the text {text[:40]!r}, not a number. Assign the "
                f"number itself, e.g. {example}."
            ) from None
        raise Fail(
            f"`{variable}` is the text {text!r}: the quotes make it a string. Assign "
            f"the number without quotes."
        )
    value = float(answer) if is_real_number(answer) else _from_array(answer, variable, check)
    if not math.isfinite(value):
        raise Fail(
            f"`{variable}` is {value}, not a finite number, and {check.what} is finite. "
            f"Which step of your computation gave NaN or inf?"
        )
    return value


def _from_array(answer: Any, variable: str, check: NumberCheck) -> float:
    try:
        arr = np.asarray(answer)
    except Exception:
        arr = None
    if arr is not None and arr.dtype.kind == "c":
        raise Fail(
            f"`{variable}` is a complex number, and {check.what} is real. "
            f"A square root of a negative number can bring in complex numbers."
        )
    if arr is None or arr.dtype.kind not in "iuf":
        raise Fail(
            f"`{variable}` is a {type(answer).__name__}, not a number. Assign a "
            f"single number, e.g. `{variable} = 3.5` (not the answer)."
        )
    if arr.ndim == 0:
        return float(arr)
    what = (
        f"a NumPy array of shape {arr.shape}"
        if isinstance(answer, np.ndarray)
        else f"a {type(answer).__name__}"
    )
    if arr.size == 1:
        raise Fail(
            f"`{variable}` is {what} holding one number. The answer is a single "
            f"number: take it out with `float(...)`."
        )
    raise Fail(
        f"`{variable}` is {what} holding {arr.size} numbers; the question asks for "
        f"one number, {check.what}. {check.many_hint}"
    )
