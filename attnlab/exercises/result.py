"""What a check hands back: a PASS or FAIL with a message, shown well in a notebook.

Used by every exercise of every lesson: ``attnlab.check(id, answer)`` returns a
``CheckResult``. Inside a check, ``Fail`` stops the checking with the message
the learner should read.
"""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass

_STYLES = {
    True: ("PASS", "✔", "#2e7d32", "#e8f5e9", "#1b3d1f"),
    False: ("FAIL", "✘", "#d84315", "#fbe9e7", "#3e2723"),
}


class Fail(Exception):
    """Stops a check: the learner's answer is wrong, and ``message`` says how."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


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


def _inline(text: str) -> str:
    """Escape text for HTML and show `backticked` parts as code."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(text))


def _message_html(message: str) -> str:
    """Paragraphs as <p>, runs of four-space-indented lines as <pre>."""
    parts: list[str] = []
    group: list[str] = []
    group_is_code = False

    def flush() -> None:
        if not group:
            return
        if group_is_code:
            code = html.escape(textwrap.dedent("\n".join(group)))
            parts.append(f'<pre style="margin: 0.2em 0 0.5em 0; background: none;">{code}</pre>')
        else:
            body = "<br>".join(_inline(line) for line in group)
            parts.append(f'<p style="margin: 0.3em 0;">{body}</p>')
        group.clear()

    for line in message.splitlines():
        if not line.strip():
            flush()
            continue
        is_code = line.startswith("    ")
        if is_code != group_is_code:
            flush()
            group_is_code = is_code
        group.append(line)
    flush()
    return "".join(parts)
