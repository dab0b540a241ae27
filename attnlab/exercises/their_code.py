"""Finding the line of the learner's own code where their answer failed.

Used by every check to report an exception from an answer without showing a
traceback through attnlab, NumPy or the standard library.
"""

from __future__ import annotations

import functools
import sysconfig
import traceback
from pathlib import Path

import numpy as np


@functools.cache
def _library_dirs() -> tuple[Path, ...]:
    dirs = {Path(__file__).resolve().parent.parent, Path(np.__file__).resolve().parent}
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if key in paths:
            dirs.add(Path(paths[key]).resolve())
    return tuple(dirs)


def _is_library(filename: str) -> bool:
    # Notebook cells have names like "/tmp/ipykernel_12/3456.py" or "<ipython-input-1>":
    # anything outside the library folders counts as the learner's.
    if filename.startswith("<"):
        return False
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(d) for d in _library_dirs())


def where_in_their_code(exc: BaseException) -> str:
    """Describe the innermost frame of the learner's code in exc's traceback, or ''.

    E.g. "at `return Q @ K` (line 3, in `scores`)".
    """
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _is_library(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    code = (frame.line or "").strip()
    place = f"line {frame.lineno}, in `{frame.name}`"
    return f"at `{code}` ({place})" if code else f"on {place}"
