"""The exercise registry, and the two functions a learner calls: ``check`` and ``solution``.

Each lesson's module (``exNN_<lesson>.py`` in this package, found automatically)
calls ``register`` once per exercise; the exercise's id is the name of its reference
solution in ``solutions.py``. Used in every lesson notebook, e.g.
``attnlab.check("softmax", softmax)`` and ``attnlab.solution("softmax")``.
"""

from __future__ import annotations

import difflib
import dis
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .calling import COURSE_SPY, DEFAULT_TIMEOUT, CourseSpy
from .messages import CheckResult, SolutionCode
from .numbers import is_real_number


class Checker(Protocol):
    """Grades one answer: a function (or, for a numeric question, a number) → PASS or FAIL.

    ``name`` is the exercise id, as the learner's function is called; ``timeout`` is the
    limit in seconds for each call of the answer (None: no limit).
    """

    def __call__(self, answer: Any, *, name: str, timeout: float | None) -> CheckResult: ...


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id, the notebook that asks for it, what the learner writes, the
    checker, and the reference solution whose source ``solution(id)`` shows."""

    id: str
    lesson: str  # e.g. "notebooks/04_softmax.ipynb"
    signature: str  # e.g. "softmax(x) -> array like x"
    checker: Checker
    solution: Callable[..., Any]


_EXERCISES: dict[str, Exercise] = {}


def register(lesson: str, solution: Callable[..., Any], signature: str, checker: Checker) -> None:
    """Make an exercise known; its id is the name of ``solution``.

    Registering the same id again from the same lesson replaces it (a module reload).
    """
    exercise = Exercise(solution.__name__, lesson, signature, checker, solution)
    previous = _EXERCISES.get(exercise.id)
    if previous is not None and previous.lesson != lesson:
        raise ValueError(
            f"Exercise id {exercise.id!r} is already used by {previous.lesson}; "
            f"{lesson} needs a different id."
        )
    _EXERCISES[exercise.id] = exercise


# Course functions that do an exercise's whole job under another name.
_ALSO_THE_ANSWER = {
    "masked_attention": ("attention",),
    "masked_softmax": ("softmax",),
    "online_softmax": ("softmax", "online_softmax_steps", "block_state"),  # lesson 07's table
    "sdpa_weights": ("attention",),  # attention(..., return_weights=True) gives them
    "attention_grad_q": ("attention_backward",),
    "multi_head_attention": ("grouped_query_attention",),
    "largest_jacobian_entry": ("softmax_jacobian",),  # the point is not to build J
}


def course_versions(exercise_id: str) -> dict[Any, str]:
    """The course's own functions that answer ``exercise_id``: code object -> public name.

    Found by name in the attnlab modules loaded so far (the maths, the masks, the lesson
    modules), so ``attnlab.softmax`` and ``lesson.output_change`` both count.
    """
    names = {exercise_id, *_ALSO_THE_ANSWER.get(exercise_id, ())}
    found: dict[Any, str] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("attnlab."):
            continue
        if module_name.startswith(("attnlab.exercises", "attnlab.widgets")):
            continue
        for attr in names:
            fn = getattr(module, attr, None)
            if inspect.isfunction(fn) and fn.__module__ == module_name:
                public = sys.modules["attnlab"].__dict__.get(attr) is fn
                found[fn.__code__] = f"attnlab.{attr}" if public else f"{module_name}.{attr}"
    return found


def exercise_ids() -> tuple[str, ...]:
    """All registered ids, in lesson order."""
    return tuple(_EXERCISES)


def get_exercise(exercise_id: str) -> Exercise:
    """The record for an id; a ValueError naming every known id if there is none."""
    if isinstance(exercise_id, str) and exercise_id in _EXERCISES:
        return _EXERCISES[exercise_id]
    known = ", ".join(repr(i) for i in _EXERCISES)
    close = difflib.get_close_matches(str(exercise_id), list(_EXERCISES), n=1)
    guess = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"Unknown exercise id {exercise_id!r}.{guess} Known ids: {known}.")


def check(exercise_id: str, answer: Any, *, timeout: float | None = DEFAULT_TIMEOUT) -> CheckResult:
    """Check the learner's answer (their function, or a number for a numeric question).

    Returns a ``CheckResult`` (PASS or FAIL with a message) and never raises because of
    the answer. ``timeout`` is the limit in seconds for each call of the answer (None:
    no limit). An unknown id raises ValueError listing the known ones.

    Shapes: ``answer`` takes and returns the shapes the exercise's signature names, e.g.
    ``softmax(x)``: x ``(n, m)`` → ``(n, m)``. Usage in a notebook::

        attnlab.check("softmax", softmax)

    Lessons: every notebook with exercises, from ``notebooks/00_start_here.ipynb`` on.
    """
    exercise = get_exercise(exercise_id)
    if timeout is not None and not (is_real_number(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}.")
    spy = CourseSpy(course_versions(exercise.id))
    token = COURSE_SPY.set(spy)
    try:
        result = exercise.checker(answer, name=exercise.id, timeout=timeout)
        if result.passed and spy.used:
            return CheckResult(
                False,
                f"Your `{exercise.id}` runs the course's own `{spy.used[0]}`. That gives the "
                f"right numbers, but it skips the exercise: write `{exercise.id}` yourself. "
                f"(After this check the lesson carries on with the course's "
                f"version, so nothing later depends on yours.)",
                exercise.id,
            )
        return result
    except Exception as exc:  # whatever an odd answer does, the learner gets a message
        return CheckResult(
            False,
            f"The checker couldn't work with what your `{exercise_id}` returned "
            f"({type(exc).__name__}: {exc}). Return a NumPy array of numbers.",
            exercise_id,
        )
    finally:
        COURSE_SPY.reset(token)


def solution(exercise_id: str) -> SolutionCode:
    """The reference solution's source code for ``exercise_id``, as a str.

    In a notebook it shows as a highlighted code block. Shapes: the solution takes and
    returns the shapes of the exercise's signature. Usage::

        attnlab.solution("softmax")

    Lessons: every notebook with exercises, from ``notebooks/00_start_here.ipynb`` on.
    """
    exercise = get_exercise(exercise_id)
    known = set(_EXERCISES) - {exercise.id}
    # Globals only: `attnlab.attention` (an attribute) is the course's, not an exercise's.
    loaded = (
        i.argval for i in dis.get_instructions(exercise.solution) if i.opname == "LOAD_GLOBAL"
    )
    uses = list(dict.fromkeys(name for name in loaded if name in known))
    return SolutionCode(exercise.solution, exercise.id, exercise.lesson, uses)
