"""The exercise registry: one ``Exercise`` record per id.

Every lesson's exercise module builds its records and calls ``register`` once;
``attnlab.exercises`` imports that module, which is what makes the ids known
to ``check`` and ``solution``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from .result import CheckResult


@dataclass(frozen=True)
class Exercise:
    """One exercise.

    ``checker(answer, timeout=...)`` returns a ``CheckResult``; ``solution`` is the
    reference function whose source ``attnlab.solution(id)`` shows.
    """

    id: str
    lesson: str  # the notebook that asks for it, e.g. "notebooks/04_softmax.ipynb"
    signature: str  # what the learner writes, e.g. "softmax(x) -> array like x"
    checker: Callable[..., CheckResult]
    solution: Callable


_EXERCISES: dict[str, Exercise] = {}


def register(*exercises: Exercise) -> None:
    """Make exercises known by id. A lesson calls this once with all of its exercises."""
    for exercise in exercises:
        if not isinstance(exercise, Exercise):
            raise TypeError(f"register() takes Exercise records, got {exercise!r}.")
        previous = _EXERCISES.get(exercise.id)
        # Re-registering from the same lesson happens when its module is reloaded.
        if previous is not None and previous.lesson != exercise.lesson:
            raise ValueError(
                f"Exercise id {exercise.id!r} is already used by {previous.lesson}; "
                f"{exercise.lesson} needs a different id."
            )
        _EXERCISES[exercise.id] = exercise


def exercise_ids() -> tuple[str, ...]:
    """All registered ids, in the order the lessons registered them."""
    return tuple(_EXERCISES)


def get_exercise(exercise_id) -> Exercise:
    """The record for an id; a ValueError naming every known id if there is none."""
    if isinstance(exercise_id, str) and exercise_id in _EXERCISES:
        return _EXERCISES[exercise_id]
    known = ", ".join(repr(i) for i in _EXERCISES)
    close = difflib.get_close_matches(str(exercise_id), list(_EXERCISES), n=1)
    guess = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"Unknown exercise id {exercise_id!r}.{guess} Known ids: {known}.")
