"""Calling a learner's function safely: copies of the inputs, a time limit, no warnings.

Used by every check. Whatever goes wrong in the answer (an exception, an endless loop,
changing an input in place) becomes a ``Fail`` about the learner's own code, never a
traceback of ours. In the main thread (where Jupyter runs cells) a SIGALRM timer stops
an endless loop; elsewhere the answer runs in a daemon thread that is abandoned when
the time is up; where there are neither usable signals nor threads (Pyodide in
JupyterLite) the answer runs without a time limit.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import signal
import sys
import sysconfig
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any

import numpy as np

from .messages import Fail, TooSlow, describe_call

DEFAULT_TIMEOUT = 5.0
# After the first alarm the timer keeps firing at this interval, so an answer that
# swallows one interruption (a bare ``except:``) is still stopped.
_REPEAT_SECONDS = 0.1
_LONGEST_ERROR = 300  # longer error messages (some print whole arrays) are cut
# Words in NumPy's messages about arrays whose shapes don't fit together.
_SHAPE_ERROR = re.compile(r"shape|broadcast|mismatch|aligned|dimension|axes", re.IGNORECASE)
# A Python list (or tuple) indexed like an array: `xs[:, None]`, `xs[i, j]`, `xs[None]`
# or `xs[[0, 1]]`. Indexing one by a float is a different slip, with its own hint.
_LIST_INDEX = re.compile(
    r"(list|tuple) indices must be integers or slices, not (tuple|NoneType|list)"
)


@dataclass
class CourseSpy:
    """The course's own versions of the function being checked (code object -> the name a
    learner calls it by), and which of them the answer ran. ``registry.check`` sets one up
    for each check: an answer that runs the course's version passes every test without
    practising anything, so a PASS is turned into a FAIL that says so."""

    versions: dict[CodeType, str]
    used: list[str] = field(default_factory=list)

    def __call__(self, frame: Any, event: str, arg: Any) -> None:  # a sys.setprofile hook
        if event == "call" and frame.f_code in self.versions:
            self.used.append(self.versions[frame.f_code])


COURSE_SPY: contextvars.ContextVar[CourseSpy | None] = contextvars.ContextVar(
    "course_spy", default=None
)


class TimeLimitExceeded(Exception):
    """The function ran longer than ``seconds``; ``still_running`` if it could not be stopped."""

    def __init__(self, seconds: float, still_running: bool = False):
        super().__init__(f"took longer than {seconds:g} s")
        self.seconds, self.still_running = seconds, still_running


class _Alarm(BaseException):
    """Raised inside the answer by the timer; an ``except Exception`` there lets it through."""


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """No NumPy floating-point warnings and no Python warnings: the learner reads our words."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def quietly(fn: Callable[..., Any], *args: Any) -> Any:
    with silenced():
        return fn(*args)


def run_with_time_limit(fn: Callable[[], Any], seconds: float | None) -> Any:
    """Return ``fn()``, or raise TimeLimitExceeded once it has run ``seconds`` (None: no limit).

    Exceptions from ``fn`` propagate unchanged.
    """
    # Pyodide (the course's in-browser site) can start neither threads nor timers.
    if seconds is None or sys.platform == "emscripten":
        return fn()
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(_Unavailable):
            return _run_with_alarm(fn, seconds)
    with contextlib.suppress(_Unavailable):
        return _run_in_thread(fn, seconds)
    return fn()  # neither signals nor threads: no time limit rather than none at all


class _Unavailable(Exception):
    """This way of stopping an answer doesn't work here; nothing of the answer has run."""


def _run_with_alarm(fn: Callable[[], Any], seconds: float) -> Any:
    armed = True

    def on_alarm(signum, frame):
        if armed:
            raise _Alarm

    try:
        previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    except (AttributeError, ValueError, OSError):  # no SIGALRM, or not the main interpreter
        raise _Unavailable from None
    # A handler installed from C reads back as None and cannot be reinstalled.
    restore = signal.SIG_DFL if previous_handler is None else previous_handler
    started = time.monotonic()
    try:
        previous_delay, previous_interval = signal.setitimer(
            signal.ITIMER_REAL, seconds, _REPEAT_SECONDS
        )
    except (AttributeError, ValueError, OSError):  # Pyodide has no working setitimer
        signal.signal(signal.SIGALRM, restore)
        raise _Unavailable from None
    try:
        try:
            return fn()
        finally:
            armed = False
    except _Alarm:
        raise TimeLimitExceeded(seconds) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, restore)
        if previous_delay > 0:
            # Someone else's timer was running: give it back the time it had left.
            left = max(previous_delay - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, previous_interval)


def _run_in_thread(fn: Callable[[], Any], seconds: float) -> Any:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller, which reports it
            outcome["error"] = exc

    # Daemon, so a thread stuck in an endless loop does not keep Python from exiting.
    worker = threading.Thread(target=target, name="attnlab-check", daemon=True)
    try:
        worker.start()
    except RuntimeError:  # "can't start new thread", e.g. in Pyodide
        raise _Unavailable from None
    worker.join(seconds)
    if worker.is_alive():
        raise TimeLimitExceeded(seconds, still_running=True)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def call_answer(
    answer: Callable[..., Any],
    inputs: dict[str, Any],
    *,
    name: str,
    timeout: float | None,
    shape_hint: str = "",
    index_hint: str = "",
) -> Any:
    """Return ``answer(*inputs.values())``, or raise Fail explaining what went wrong.

    ``name`` is the learner's function name; ``shape_hint`` is added when their code
    stops on arrays whose shapes don't fit, ``index_hint`` when it stops on an
    IndexError that is not about shapes (an index past the end of an array).
    """
    args = {key: np.copy(v) if isinstance(v, np.ndarray) else v for key, v in inputs.items()}
    on_what = describe_call(inputs)
    spy = COURSE_SPY.get()  # read here: a worker thread does not inherit it

    def run() -> Any:
        # A worker thread starts with NumPy's default error state. Python's warning
        # filters are global and the caller's silenced() covers them; setting them here
        # would let an abandoned worker, when it ends, restore filters long after.
        # The profiler is per thread, so it is set in the thread that runs the answer.
        previous = sys.getprofile()
        if spy and spy.versions:
            sys.setprofile(spy)
        try:
            with np.errstate(all="ignore"):
                return answer(*args.values())
        finally:
            if spy and spy.versions:
                sys.setprofile(previous)

    try:
        with silenced():
            value = run_with_time_limit(run, timeout)
    except TimeLimitExceeded as stop:
        background = (
            " It is still running in the background; restart the kernel if things slow down."
            if stop.still_running
            else ""
        )
        raise TooSlow(
            f"Your `{name}` took longer than {stop.seconds:g} s on {on_what} and was "
            f"stopped. Is there an endless loop? These inputs are tiny, so a correct answer "
            f"finishes in well under a second.{background}"
        ) from None
    except NotImplementedError:
        raise Fail(
            f"You haven't written `{name}` yet: replace the `raise NotImplementedError` "
            f"with your code, run that cell, then check again."
        ) from None
    except (Exception, SystemExit) as exc:
        message = _error_message(exc, name, list(inputs), on_what, shape_hint, index_hint)
        raise Fail(message) from None
    for key, original in inputs.items():
        passed = args[key]
        if isinstance(original, np.ndarray) and not (
            original.shape == passed.shape and np.array_equal(original, passed, equal_nan=True)
        ):
            raise Fail(
                f"Your `{name}` changed its input {key} in place; compute into a new array "
                f"instead: `y = {key} / c` makes a new array, while `{key} /= c` (or `-=`, `*=`, "
                f"`+=`) overwrites the one you were given, and whoever calls your function still "
                f"needs the original {key}."
            )
    return value


def _error_message(
    exc: BaseException, name: str, params: list[str], on_what: str, hint: str, index_hint: str = ""
) -> str:
    text = str(exc).strip()
    if len(text) > _LONGEST_ERROR:
        text = text[: _LONGEST_ERROR - 3] + "..."
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    where = where_in_their_code(exc)
    message = (
        f"Your `{name}` raised {what}{' ' + where if where else ''}, when called with {on_what}."
    )
    if isinstance(exc, SystemExit):
        return message + " Your function should `return` its result, not exit."
    if not where and isinstance(exc, TypeError):
        # Nothing of theirs ran, so the call itself failed: wrong parameters.
        call = f"{name}({', '.join(params)})"
        return message + f" The checker calls it as `{call}`; check its parameters."
    if isinstance(exc, NameError):
        return message + (
            " A name it uses isn't defined; did you run the cell that defines or imports "
            "it (e.g. `import numpy as np`)?"
        )
    if isinstance(exc, TypeError) and "bitwise_and" in text:
        return message + (
            " `&` is AND only between True/False arrays (or whole numbers). Is one side a "
            "float array, such as one made by `np.ones` or `np.tril(np.ones(...))`? A "
            "comparison such as `j <= i` gives True/False directly."
        )
    if _LIST_INDEX.search(text):
        return message + (
            " A Python list (or tuple) takes one index at a time, so `[:, None]` or `[i, j]` "
            "does not work on it. Make it an array first (`np.array(...)`), or build the array "
            "in one NumPy step instead of as a list."
        )
    if "indices must be integers" in text and ("float" in text or "slice indices" in text):
        return message + (
            " An index or a size is a float: `/` always gives one. Which division should "
            "give a whole number, and what does `//` give?"
        )
    if hint and _SHAPE_ERROR.search(text):
        return f"{message} {hint}"
    # An IndexError such as "too many indices for array" is about shapes, not range.
    if index_hint and isinstance(exc, IndexError) and not _SHAPE_ERROR.search(text):
        return f"{message} {index_hint}"
    return message


@functools.cache
def _library_dirs() -> tuple[Path, ...]:
    dirs = {Path(__file__).resolve().parent.parent, Path(np.__file__).resolve().parent}
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    dirs |= {Path(paths[k]).resolve() for k in keys if k in paths}
    return tuple(dirs)


def _is_theirs(filename: str) -> bool:
    # Notebook cells have names like "/tmp/ipykernel_12/3456.py" or "<ipython-input-1>":
    # anything outside the library folders counts as the learner's.
    if filename.startswith("<"):
        return True
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return True
    return not any(path.is_relative_to(d) for d in _library_dirs())


def where_in_their_code(exc: BaseException) -> str:
    """The innermost frame of the learner's code in exc's traceback, e.g.
    "at `return Q @ K` (line 3, in `scores`)", or ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_theirs(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    code = (frame.line or "").strip()
    place = f"line {frame.lineno}, in `{frame.name}`"
    return f"at `{code}` ({place})" if code else f"on {place}"
