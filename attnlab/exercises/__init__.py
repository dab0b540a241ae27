"""Exercise checker for the lesson notebooks: ``check(id, answer)`` and ``solution(id)``.

``check("softmax", softmax)`` runs the learner's function on seeded test inputs
and returns a PASS, or a FAIL naming the likely mistake; ``solution("softmax")``
shows a reference solution. Imports NumPy and the standard library only.

Each lesson keeps its exercises in its own module, which registers them when
imported. A new lesson adds its module and one import line below.
"""

# Importing a lesson's module registers its exercises: one line per lesson.
from . import (
    ex00_start_here,  # noqa: F401
    ex01_dot_product,  # noqa: F401
    ex02_numbers,  # noqa: F401
    ex02_variance,  # noqa: F401
    ex03_scaling,  # noqa: F401
    ex04_softmax,  # noqa: F401
    ex05_values,  # noqa: F401
    ex06_full_attention,  # noqa: F401
    ex07_ablation,  # noqa: F401
)
from .api import check, solution
from .registry import Exercise, exercise_ids, register
from .result import CheckResult

__all__ = ["CheckResult", "Exercise", "check", "exercise_ids", "register", "solution"]
