"""What a learner reads: a PASS or FAIL box, arrays written small, a solution's source.

``CheckResult`` is what ``attnlab.check(id, answer)`` returns in every lesson; inside a
check, ``Fail`` stops the checking with the message the learner should read.
"""

from __future__ import annotations

import html
import inspect
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

INDENT = "    "
_STYLES = {
    True: ("PASS", "✔", "#2e7d32", "#e8f5e9", "#1b3d1f"),
    False: ("FAIL", "✘", "#d84315", "#fbe9e7", "#3e2723"),
}
# An input is printed in full when it is this small; a larger one is described by the
# test case's label, which gives its shape.
_SHOWN_INPUT_SIZE = 12


class Fail(Exception):
    """Stops a check: the learner's answer is wrong, and ``message`` says how."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class TooSlow(Fail):
    """A Fail because the answer ran past its time limit: running it on more inputs would
    only take that long again."""


@dataclass(frozen=True, repr=False)
class CheckResult:
    """The outcome of ``check``: ``passed``, a ``message`` for the learner, and the exercise id.

    ``bool(result)`` is ``result.passed``. The message is plain text; lines indented by
    four spaces are blocks of numbers (shown monospaced in a notebook).
    """

    passed: bool
    message: str
    exercise: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        title, mark, border, background, ink = _STYLES[bool(self.passed)]
        name = f" <code>{html.escape(self.exercise)}</code>" if self.exercise else ""
        # Explicit text colour so the box stays readable under dark notebook themes.
        return (
            f'<div style="border-left: 6px solid {border}; background: {background}; '
            f"color: {ink}; padding: 0.5em 1em; margin: 0.3em 0; border-radius: 4px; "
            f'font-family: sans-serif; line-height: 1.4;">'
            f'<div style="font-weight: bold; color: {border};">{mark} {title}{name}</div>'
            f"{_message_html(self.message)}</div>"
        )


def _message_html(message: str) -> str:
    """Paragraphs as <p> (`backticked` parts as code), runs of indented lines as <pre>."""
    parts = []
    for block in re.split(r"\n\s*\n", message):
        # Split each paragraph into runs of prose lines and of indented (code) lines.
        runs: list[tuple[bool, list[str]]] = []
        for line in block.splitlines():
            is_code = line.startswith(INDENT)
            if not runs or runs[-1][0] != is_code:
                runs.append((is_code, []))
            runs[-1][1].append(line)
        for is_code, lines in runs:
            if is_code:
                code = html.escape(textwrap.dedent("\n".join(lines)))
                parts.append(
                    f'<pre style="margin: 0.2em 0 0.5em 0; background: none;">{code}</pre>'
                )
            else:
                inline = "<br>".join(_inline_html(line) for line in lines)
                parts.append(f'<p style="margin: 0.3em 0;">{inline}</p>')
    return "".join(parts)


# `code` as <code>; *a word or two* as <em>, but only outside code and only where the
# asterisks hug the words, so that a product such as `n * d` or 2 * d_k stays as it is.
_CODE = re.compile(r"`([^`\n]+)`")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![\w*])")


def _inline_html(line: str) -> str:
    pieces = _CODE.split(line)  # even indices: prose; odd: the code between backticks
    return "".join(
        f"<code>{html.escape(piece)}</code>"
        if i % 2
        else _EMPHASIS.sub(r"<em>\1</em>", html.escape(piece))
        for i, piece in enumerate(pieces)
    )


class SolutionCode(str):
    """The source of a reference solution: a str, shown as highlighted Python in a notebook.

    ``uses`` names the earlier exercises it calls.
    """

    exercise: str
    lesson: str
    uses: tuple[str, ...]

    def __new__(cls, fn: Callable[..., Any], exercise: str, lesson: str, uses: Iterable[str]):
        source = textwrap.dedent(inspect.getsource(fn)).rstrip("\n")
        if not inspect.signature(fn).parameters:
            source = _as_answer_cell(source, exercise)
        code = super().__new__(cls, source)
        code.exercise, code.lesson, code.uses = exercise, lesson, tuple(uses)
        return code

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        head = f"**Reference solution for `{self.exercise}`** ({self.lesson})"
        if self.uses:
            names = ", ".join(f"`{u}`" for u in self.uses)
            head += f"\n\nIt calls {names}, from the earlier exercise of that name."
        return f"{head}\n\n```python\n{self}\n```"


def _as_answer_cell(source: str, exercise: str) -> str:
    """A solution with no arguments (the answer is a number the learner assigns) as the
    answer cell would hold it: the body, with ``return x`` as ``answer_<exercise> = x``."""
    body = textwrap.dedent(source.split("\n", 1)[1]).splitlines()
    last = body[-1]
    if last.startswith("return "):
        value = last.removeprefix("return ")
        target = f"answer_{exercise}"
        if value.split("#")[0].strip() == target:
            body.pop()
        else:
            body[-1] = f"{target} = {value}"
    return "\n".join(body)


def shape_text(shape: tuple[int, ...]) -> str:
    return "a single number" if shape == () else f"shape {tuple(int(n) for n in shape)}"


def array_block(a: Any) -> str:
    """A small array as text rounded to 3 decimals, each line indented; big ones with '...'."""
    a = np.asarray(a)
    if a.ndim == 0 and a.dtype.kind == "f" and np.isfinite(a):
        # One number below 1 gets 4 significant digits, so that 1/16 reads 0.0625, not 0.062;
        # a larger one keeps 3 decimals, so that no digit before the point is lost.
        x = float(a) + 0.0
        small = abs(x) < 1
        shown = np.format_float_positional(
            x, precision=4 if small else 3, fractional=not small, trim="-"
        )
        return textwrap.indent(shown, INDENT)
    if a.dtype.kind == "f":
        a = np.round(a, 3) + 0.0  # adding 0.0 turns the -0.0 rounding leaves into 0.0
    text = np.array2string(
        a, precision=3, suppress_small=True, floatmode="maxprec", threshold=60, edgeitems=3,
        max_line_width=76,
    )  # fmt: skip
    return textwrap.indent(text, INDENT)


def inputs_block(inputs: dict[str, Any], names: tuple[str, ...] | None = None) -> list[str]:
    """Lines showing the inputs called ``names`` (default: all, when all are small)."""
    if names is None:
        if any(np.size(v) > _SHOWN_INPUT_SIZE for v in inputs.values()):
            return []
        names = tuple(inputs)
    lines = []
    for name in names:
        value = inputs[name]
        lines += (
            [f"{name} = {value!r}"] if np.ndim(value) == 0 else [f"{name} =", array_block(value)]
        )
    return lines


def describe_call(inputs: dict[str, Any]) -> str:
    """E.g. "Q of shape (2, 3) and K of shape (4, 3)" or "n = 4"."""
    parts = [
        f"{key} = {value!r}" if np.ndim(value) == 0 else f"{key} of {shape_text(np.shape(value))}"
        for key, value in inputs.items()
    ]
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return parts[0] if parts else "no arguments"
