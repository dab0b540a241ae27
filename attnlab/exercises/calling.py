"""Calling a learner's answer safely.

Used by every check: the answer gets copies of the inputs, runs under a time
limit with warnings silenced, and whatever goes wrong (an exception, an
endless loop, changing an input in place) becomes a ``Fail`` with a message
about the learner's code, never a traceback of ours.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .formatting import describe_call
from .result import Fail
from .their_code import where_in_their_code
from .timelimit import TimeLimitExceeded, run_with_time_limit

DEFAULT_TIMEOUT = 5.0

# Longer error messages (some print whole arrays) are cut to this many characters.
_LONGEST_ERROR = 300

# Words in NumPy's messages about arrays whose shapes don't fit together.
_SHAPE_ERROR = re.compile(r"shape|broadcast|mismatch|aligned|dimension", re.IGNORECASE)


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """Silence NumPy's floating-point warnings and all Python warnings.

    The learner should read our message about an overflow, not RuntimeWarnings.
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def quietly(fn: Callable[..., Any], *args: Any) -> Any:
    """Call fn inside ``silenced()``."""
    with silenced():
        return fn(*args)


def _numpy_quietly(fn: Callable[..., Any], *args: Any) -> Any:
    # The answer may run in a worker thread, which starts with NumPy's default error
    # state. Python's warning filters are global, so the caller's silenced() covers
    # them; setting them here too would let an abandoned worker, when it finally
    # ends, put back "ignore" filters long after the check has finished.
    with np.errstate(all="ignore"):
        return fn(*args)


def call_answer(
    answer: Callable[..., Any],
    inputs: dict[str, Any],
    *,
    name: str,
    timeout: float | None,
    shape_hint: str = "",
) -> Any:
    """Return ``answer(*inputs.values())``, or raise Fail explaining what went wrong.

    ``name`` is the exercise id (the learner's function name); ``shape_hint`` is
    added when their code stops on arrays whose shapes don't fit.
    """
    args = {key: np.copy(v) if isinstance(v, np.ndarray) else v for key, v in inputs.items()}
    call = f"{name}({', '.join(inputs)})"
    on_what = describe_call(inputs)
    try:
        with silenced():
            value = run_with_time_limit(lambda: _numpy_quietly(answer, *args.values()), timeout)
    except TimeLimitExceeded as stop:
        background = (
            " It is still running in the background; restart the kernel if things slow down."
            if stop.still_running
            else ""
        )
        raise Fail(
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
        raise Fail(_error_message(exc, name, call, on_what, shape_hint)) from None
    for key, original in inputs.items():
        if isinstance(original, np.ndarray) and not _unchanged(original, args[key]):
            raise Fail(
                f"Your `{name}` changed its input {key} in place; compute into a new array "
                f"instead (write `y = {key} - m`, not `{key} -= m`), because whoever calls "
                f"your function still needs the original {key}."
            )
    return value


def _unchanged(original: np.ndarray, passed: np.ndarray) -> bool:
    return original.shape == passed.shape and np.array_equal(original, passed, equal_nan=True)


def _error_message(exc: BaseException, name: str, call: str, on_what: str, hint: str) -> str:
    kind = type(exc).__name__
    text = str(exc).strip()
    if len(text) > _LONGEST_ERROR:
        text = text[: _LONGEST_ERROR - 3] + "..."
    what = f"{kind}: {text}" if text else kind
    where = where_in_their_code(exc)
    place = f" {where}" if where else ""
    message = f"Your `{name}` raised {what}{place}, when called with {on_what}."
    if isinstance(exc, SystemExit):
        return message + " Your function should `return` its result, not exit."
    if not where and isinstance(exc, TypeError):
        # Nothing of theirs ran, so the call itself failed: wrong parameters.
        return message + f" The checker calls it as `{call}`; check its parameters."
    if isinstance(exc, NameError):
        return message + (
            " A name it uses isn't defined; did you run the cell that defines or imports "
            "it (e.g. `import numpy as np`)?"
        )
    if hint and _SHAPE_ERROR.search(text):
        return f"{message} {hint}"
    return message
