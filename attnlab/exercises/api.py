"""The two functions a learner calls: ``check`` and ``solution``.

Used in every lesson notebook, e.g. ``attnlab.check("softmax", softmax)``.
"""

from __future__ import annotations

import numbers
from typing import Any

from .calling import DEFAULT_TIMEOUT
from .listing import SolutionCode
from .registry import exercise_ids, get_exercise
from .result import CheckResult


def check(exercise_id: str, answer: Any, *, timeout=DEFAULT_TIMEOUT) -> CheckResult:
    """Check the learner's answer (their function, or a number for a numeric question).

    Returns a ``CheckResult`` (PASS or FAIL with a message) and never raises because
    of the answer. ``timeout`` is the limit in seconds for each call of the answer
    (None: no limit). An unknown id raises ValueError listing the known ones.

    Shapes: ``answer`` takes and returns the shapes the exercise's signature names,
    e.g. ``softmax(x)``: x ``(n, m)`` → ``(n, m)``. Usage in a notebook::

        attnlab.check("softmax", softmax)

    Lessons: every notebook with exercises, ``notebooks/01_dot_product.ipynb``
    to ``notebooks/05_values.ipynb``.
    """
    exercise = get_exercise(exercise_id)
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not timeout > 0
    ):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}.")
    if not callable(answer) and not getattr(exercise.checker, "accepts_values", False):
        return CheckResult(
            False,
            f"`check` needs your function itself, e.g. `check({exercise_id!r}, "
            f"{exercise_id})`, but got a {type(answer).__name__}. Pass the name without "
            f"calling it (no parentheses).",
            exercise_id,
        )
    try:
        return exercise.checker(answer, timeout=timeout)
    except Exception as exc:  # whatever an odd answer does, the learner gets a message
        return CheckResult(
            False,
            f"The checker couldn't work with what your `{exercise_id}` returned "
            f"({type(exc).__name__}: {exc}). Return a NumPy array of numbers.",
            exercise_id,
        )


def solution(exercise_id: str) -> SolutionCode:
    """The reference solution's source code for ``exercise_id``, as a str.

    In a notebook it shows as a highlighted code block. Shapes: the solution takes
    and returns the shapes of the exercise's signature. Usage::

        attnlab.solution("softmax")

    Lessons: every notebook with exercises, ``notebooks/01_dot_product.ipynb``
    to ``notebooks/05_values.ipynb``.
    """
    exercise = get_exercise(exercise_id)
    known = set(exercise_ids()) - {exercise.id}
    uses = [name for name in exercise.solution.__code__.co_names if name in known]
    return SolutionCode.of(exercise.solution, exercise.id, exercise.lesson, uses)
