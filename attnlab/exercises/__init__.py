"""Exercise checker for the lesson notebooks: ``check(id, answer)`` and ``solution(id)``.

``check("softmax", softmax)`` runs the learner's function on seeded test inputs and
returns a PASS, or a FAIL naming the likely mistake; ``solution("softmax")`` shows a
reference solution. Imports NumPy and the standard library only.

Every lesson with exercises has one module here, ``exNN_<lesson>.py``, which
registers its exercises when imported; the modules are found and imported below, in
lesson order. Infrastructure: ``calling`` (the learner's function under a time limit),
``arrays`` (array answers), ``numbers`` (numeric answers), ``messages`` (what the
learner reads), ``registry`` (ids, ``check`` and ``solution``); ``solutions`` holds
every reference solution.
"""

import importlib
import pkgutil

from .messages import CheckResult
from .registry import Checker, Exercise, check, exercise_ids, get_exercise, register, solution

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name[2:4].isdigit()):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = [
    "CheckResult",
    "Checker",
    "Exercise",
    "check",
    "exercise_ids",
    "get_exercise",
    "register",
    "solution",
]
