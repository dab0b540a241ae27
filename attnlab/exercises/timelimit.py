"""Running a learner's function under a time limit.

Used by every check, so that an endless loop in an answer ends with a FAIL
instead of a hung notebook. In the main thread (where Jupyter runs cells) a
SIGALRM timer interrupts the answer; elsewhere the answer runs in a daemon
thread that is abandoned when the time is up.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# After the first alarm, the timer keeps firing at this interval, so an answer
# that swallows one interruption (a bare ``except:``) is still stopped.
_REPEAT_SECONDS = 0.1


class TimeLimitExceeded(Exception):
    """The function ran longer than ``seconds``; ``still_running`` if it could not be stopped."""

    def __init__(self, seconds: float, still_running: bool = False):
        super().__init__(f"took longer than {seconds:g} s")
        self.seconds = seconds
        self.still_running = still_running


class _Alarm(BaseException):
    """Raised inside the answer by the timer.

    A BaseException, so an ``except Exception`` in the learner's code lets it through.
    """


def run_with_time_limit(fn: Callable[[], Any], seconds: float | None) -> Any:
    """Return ``fn()``, or raise TimeLimitExceeded once it has run ``seconds``.

    ``seconds=None`` means no limit. Exceptions from ``fn`` propagate unchanged.
    """
    # Pyodide (the course's in-browser site) can start neither threads nor timers:
    # there the answer runs without a limit rather than failing every check.
    if seconds is None or sys.platform == "emscripten":
        return fn()
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        try:
            return _run_with_alarm(fn, seconds)
        except _SignalsUnavailable:
            pass
    return _run_in_thread(fn, seconds)


class _SignalsUnavailable(Exception):
    pass


def _run_with_alarm(fn: Callable[[], Any], seconds: float) -> Any:
    armed = True

    def on_alarm(signum, frame):
        if armed:
            raise _Alarm

    try:
        previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    except ValueError:  # not the main interpreter
        raise _SignalsUnavailable from None
    started = time.monotonic()
    previous_delay, previous_interval = signal.setitimer(
        signal.ITIMER_REAL, seconds, _REPEAT_SECONDS
    )
    try:
        try:
            return fn()
        finally:
            armed = False
    except _Alarm:
        raise TimeLimitExceeded(seconds) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        # A handler installed from C reads back as None and cannot be reinstalled.
        signal.signal(
            signal.SIGALRM, signal.SIG_DFL if previous_handler is None else previous_handler
        )
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
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeLimitExceeded(seconds, still_running=True)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
