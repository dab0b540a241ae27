"""Exercise ``std_512``: a number, not a function. The standard deviation of q·k for d_k = 512.

The learner assigns ``answer_std_512 = ...`` and the check cell passes that number.
The checker accepts an int, a float, a NumPy scalar or a 0-d array within
``TOLERANCE`` of √512, and names the classic slips: the variance instead of the
standard deviation, √d_k for another d_k, the scaled standard deviation 1,
``512 ** 1/2``, and anything that isn't a number at all.

Lesson: ``notebooks/02_variance.ipynb``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .calling import DEFAULT_TIMEOUT, call_answer, silenced
from .registry import Exercise, register
from .result import CheckResult, Fail

LESSON = "notebooks/02_variance.ipynb"
D_K = 512
VARIABLE = "answer_std_512"
# Two decimals are enough (√512 rounded to 22.6 or 22.63 passes); 22 or 23 is too coarse.
TOLERANCE = 0.05


def std_512():
    d_k = 512
    variance = d_k  # Var(q·k) = d_k when every entry of q and k has mean 0 and variance 1
    return np.sqrt(variance)  # the standard deviation is the square root of the variance


@dataclass(frozen=True)
class Slip:
    """A wrong number a classic mistake leads to, and what to tell the learner who gave it.

    The answer matches when it is within ``tolerance`` of ``value`` (absolute).
    """

    value: float
    message: str
    tolerance: float = TOLERANCE


@dataclass(frozen=True)
class NumberCheck:
    """Checks a single number against ``want`` (± ``tolerance``); see the module docstring.

    ``slips()`` lists the known wrong numbers in the order they are tried. The answer
    may be the number itself or, for the function-only form of ``check``, a function
    of no arguments returning it.
    """

    name: str
    variable: str
    want: float
    tolerance: float
    slips: Callable[[], list[Slip]]
    passed_message: Callable[[float], str]
    generic_hint: str
    accepts_values: ClassVar[bool] = True  # check() may pass a plain number here

    def __call__(self, answer: Any, *, timeout=DEFAULT_TIMEOUT) -> CheckResult:
        try:
            with silenced():
                value = self._as_number(answer, timeout)
                message = self._judge(value)
        except Fail as fail:
            return CheckResult(False, fail.message, self.name)
        return CheckResult(True, message, self.name)

    def _as_number(self, answer: Any, timeout) -> float:
        if callable(answer) and not isinstance(answer, (numbers.Number, np.generic, np.ndarray)):
            try:
                answer = call_answer(answer, {}, name=self.variable, timeout=timeout)
            except Fail as fail:
                # check("std_512", lambda: answer_std_512) before the answer cell has run
                if f"name '{self.variable}' is not defined" in fail.message:
                    raise Fail(
                        f"`{self.variable}` isn't defined yet. Assign your number to it in the "
                        f"cell above (e.g. `{self.variable} = 3.5`, not the answer), run that "
                        f"cell, then run this one again."
                    ) from None
                raise
        example = f"`{self.variable} = 3.5` (not the answer)"
        if answer is None:
            raise Fail(
                f"`{self.variable}` is None, not a number. Assign your number to it, "
                f"e.g. {example}, and run that cell again."
            )
        if answer is Ellipsis:
            raise Fail(
                f"`{self.variable}` is still `...`. Replace the three dots with your number, "
                f"e.g. {example}."
            )
        if isinstance(answer, (bool, np.bool_)):
            raise Fail(
                f"`{self.variable}` is {answer}, a yes/no value. A standard deviation is a "
                f"number: assign it, e.g. {example}."
            )
        if isinstance(answer, (str, bytes)):
            text = answer.decode(errors="replace") if isinstance(answer, bytes) else answer
            try:
                float(text)
            except ValueError:
                raise Fail(
                    f"`{self.variable}` is the text {text[:40]!r}, not a number. Assign the "
                    f"number itself, e.g. {example}."
                ) from None
            raise Fail(
                f"`{self.variable}` is the text {text!r}: the quotes make it a string. Assign "
                f"the number without quotes."
            )
        if isinstance(answer, numbers.Real):
            value = float(answer)
        else:
            value = self._from_array(answer)
        if not math.isfinite(value):
            raise Fail(
                f"`{self.variable}` is {value}, not a finite number. A standard deviation of "
                f"dot products of finite vectors is finite; check how you computed it."
            )
        return value

    def _from_array(self, answer: Any) -> float:
        try:
            arr = np.asarray(answer)
        except Exception:
            arr = None
        if arr is None or arr.dtype.kind not in "iuf":
            if arr is not None and arr.dtype.kind == "c":
                raise Fail(
                    f"`{self.variable}` is a complex number; a standard deviation is real. "
                    f"A square root of a negative number can bring in complex numbers."
                )
            raise Fail(
                f"`{self.variable}` is a {type(answer).__name__}, not a number. Assign a "
                f"single number, e.g. `{self.variable} = 3.5` (not the answer)."
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
                f"`{self.variable}` is {what} holding one number. The answer is a single "
                f"number: take it out with `float(...)`."
            )
        raise Fail(
            f"`{self.variable}` is {what} holding {arr.size} numbers; the question asks for "
            f"one number. If you measured it from samples, `np.std(samples)` turns them into one."
        )

    def _judge(self, value: float) -> str:
        if abs(value - self.want) <= self.tolerance:
            return self.passed_message(value)
        for slip in self.slips():
            if abs(value - slip.value) <= slip.tolerance:
                raise Fail(slip.message)
        raise Fail(f"Not quite: {value:g} is not it. {self.generic_hint}")


_STD = math.sqrt(D_K)
_RULE = (
    f"For d_k = {D_K} entries of variance 1, Var(q·k) = d_k, and the standard deviation is "
    f"the square root of the variance."
)


def _slips() -> list[Slip]:
    slips = [
        Slip(
            -_STD,
            "A standard deviation is never negative: it is the square root of the variance, "
            "and the square root of a positive number is taken to be positive.",
        ),
        Slip(
            float(D_K),
            f"That is the variance of q·k, not its standard deviation. The variance is d_k = "
            f"{D_K}; the standard deviation is its square root (`np.sqrt`).",
            tolerance=0.01 * D_K,
        ),
        Slip(
            D_K / 2,
            f"That is d_k / 2. Did you write `{D_K} ** 1/2`? Python reads it as "
            f"`({D_K} ** 1) / 2`, because powers bind tighter than division. Write "
            f"`{D_K} ** 0.5` or `np.sqrt({D_K})`.",
            tolerance=0.01 * D_K,
        ),
        Slip(
            float(D_K) ** 2,
            f"That is d_k squared. The variance is d_k = {D_K}, and the standard deviation is "
            f"its square root, not its square.",
            tolerance=0.01 * D_K**2,
        ),
        Slip(
            1 / _STD,
            "That is 1/√d_k, the factor the scores are multiplied by, not the spread of q·k. "
            + _RULE,
            tolerance=0.002,
        ),
        Slip(
            0.0,
            "0 is the mean of q·k (positive and negative products cancel on average), not its "
            "spread. The standard deviation measures how far q·k typically lands from 0. " + _RULE,
            tolerance=0.01,
        ),
        Slip(
            1.0,
            "1 is the standard deviation of the scaled scores q·k / √d_k. The question asks "
            "about q·k itself, before dividing: how spread out are the raw dot products?",
        ),
    ]
    # √d_k for another common d_k, such as the lesson's d_k = 64.
    for d in (2**i for i in range(1, 13)):
        if d != D_K:
            slips.append(
                Slip(
                    math.sqrt(d),
                    f"That is √{d}, the standard deviation of q·k for d_k = {d}. The question "
                    f"asks about d_k = {D_K}.",
                    tolerance=min(TOLERANCE, 0.005 * math.sqrt(d)),
                )
            )
    slips.append(
        Slip(
            _STD,
            f"Close, but not close enough: √{D_K} is not a whole number. Give at least two "
            f"decimals, or let NumPy compute it: `np.sqrt({D_K})`.",
            tolerance=1.0,
        )
    )
    return slips


def _passed(value: float) -> str:
    return (
        f"Right: the standard deviation of q·k for d_k = {D_K} is √{D_K} ≈ {_STD:.2f} (you "
        f"gave {value:g}). Its variance is {D_K}; dividing the scores by √{D_K} brings the "
        f"standard deviation back to 1."
    )


register(
    Exercise(
        id="std_512",
        lesson=LESSON,
        signature=f"{VARIABLE} = a number: the standard deviation of q·k for d_k = {D_K}",
        checker=NumberCheck(
            name="std_512",
            variable=VARIABLE,
            want=_STD,
            tolerance=TOLERANCE,
            slips=_slips,
            passed_message=_passed,
            generic_hint=_RULE,
        ),
        solution=std_512,
    )
)
