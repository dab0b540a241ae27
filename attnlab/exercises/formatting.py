"""Writing arrays, shapes and inputs into a learner's message.

Used by every check to show expected against got: numbers rounded to three
decimals, blocks indented by four spaces (a notebook shows them monospaced).
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np

INDENT = "    "

# An input is printed in full when it is this small; larger ones are described by
# the test case's label (which gives their shapes).
_SHOWN_INPUT_SIZE = 12


def shape_text(shape: tuple) -> str:
    return "a single number" if shape == () else f"shape {tuple(int(n) for n in shape)}"


def array_block(a: Any) -> str:
    """A small array as text, each line indented; big ones are summarised with '...'."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        # Adding 0.0 turns the -0.0 that rounding leaves behind into 0.0.
        a = np.round(a, 3) + 0.0
    text = np.array2string(
        a,
        precision=3,
        suppress_small=True,
        floatmode="maxprec",
        threshold=60,
        edgeitems=3,
        max_line_width=76,
    )
    return textwrap.indent(text, INDENT)


def inputs_block(inputs: dict[str, Any], names: tuple[str, ...] | None = None) -> list[str]:
    """Lines showing the test inputs called ``names`` (default: all of them, when every
    input is small enough to read)."""
    if names is None:
        if any(np.size(v) > _SHOWN_INPUT_SIZE for v in inputs.values()):
            return []
        names = tuple(inputs)
    lines = []
    for name in names:
        value = inputs[name]
        if np.ndim(value) == 0:
            lines.append(f"{name} = {value!r}")
        else:
            lines += [f"{name} =", array_block(value)]
    return lines


def describe_call(inputs: dict[str, Any]) -> str:
    """E.g. "Q of shape (2, 3) and K of shape (4, 3)" or "n = 4"."""
    parts = []
    for key, value in inputs.items():
        if np.ndim(value) == 0:
            parts.append(f"{key} = {value!r}")
        else:
            parts.append(f"{key} of {shape_text(np.shape(value))}")
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return parts[0] if parts else "no arguments"
