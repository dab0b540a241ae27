"""Showing a reference solution: source code that a notebook renders as a code block.

Used by ``attnlab.solution(id)`` for every exercise.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable


class SolutionCode(str):
    """The source of a reference solution.

    It is a str (so it can be printed, searched or compared), shows as
    highlighted Python in a notebook, and as the bare code in a terminal.
    """

    exercise: str
    lesson: str
    uses: tuple[str, ...]

    def __new__(cls, source: str, exercise: str = "", lesson: str = "", uses=()):
        code = super().__new__(cls, source)
        code.exercise = exercise
        code.lesson = lesson
        code.uses = tuple(uses)
        return code

    @classmethod
    def of(cls, fn: Callable, exercise: str, lesson: str, uses=()) -> SolutionCode:
        source = textwrap.dedent(inspect.getsource(fn)).rstrip("\n")
        return cls(source, exercise, lesson, uses)

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        head = f"**Reference solution for `{self.exercise}`**"
        if self.lesson:
            head += f" ({self.lesson})"
        if self.uses:
            names = ", ".join(f"`{u}`" for u in self.uses)
            head += f"\n\nIt calls {names}, from the earlier exercise of that name."
        return f"{head}\n\n```python\n{self}\n```"
