"""A second process that trains half of lesson 08's models while this one trains the rest.

Training is many small NumPy steps, so threads spend most of their time waiting for
Python's global interpreter lock; processes do not share it. The worker is a plain
``python -m attnlab.lessons.workers`` that reads jobs from a pipe and writes back
their results, pickled. Unlike :mod:`multiprocessing`, it never imports the caller's
script again (a script without ``if __name__ == "__main__":`` would train twice) and
needs no shared memory, which some sandboxes lack.

The worker starts on first use, while this process gets on with its own job, and lives
as long as this process. Where it cannot run (Pyodide in the browser, one core, a
worker that died), :func:`run_in_two` runs both jobs here, one after the other: the
results are the same, only slower.

Lesson: ``notebooks/08_does_scaling_matter.ipynb`` (through
:func:`attnlab.lessons.ablation.train_divisors`).
"""

from __future__ import annotations

import atexit
import pickle
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..fast import _cores

_WORKER: subprocess.Popen | None = None
_UNAVAILABLE = False  # set where the worker cannot start, or once it has died


def _serve() -> None:
    """The worker's loop: read ``(function, args)``, write back ``(True, result)`` or
    ``(False, exception)``, until the pipe closes."""
    # Interrupting a notebook's kernel signals its whole process group: the worker
    # ignores it, and the kernel stops the worker if it no longer waits for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    jobs, results = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a job that prints must not write into the results
    sys.path[:0] = pickle.load(jobs)  # where the caller finds its modules
    while True:
        try:
            function, args = pickle.load(jobs)
        except EOFError:
            return
        try:
            reply = (True, function(*args))
        except Exception as error:
            reply = (False, error)
        pickle.dump(reply, results, protocol=pickle.HIGHEST_PROTOCOL)
        results.flush()


def _send(worker: subprocess.Popen, message) -> None:
    assert worker.stdin is not None  # opened as a pipe in _start
    pickle.dump(message, worker.stdin, protocol=pickle.HIGHEST_PROTOCOL)
    worker.stdin.flush()


def _receive(worker: subprocess.Popen):
    assert worker.stdout is not None
    return pickle.load(worker.stdout)


def _start() -> subprocess.Popen | None:
    """The worker, started on first use; None where it cannot run."""
    global _WORKER, _UNAVAILABLE
    if _WORKER is not None or _UNAVAILABLE:
        return _WORKER
    if _cores() < 2 or sys.platform == "emscripten":
        _UNAVAILABLE = True
        return None
    command = [sys.executable, "-m", "attnlab.lessons.workers"]
    try:
        worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        _send(worker, sys.path)
    except OSError:
        _UNAVAILABLE = True
        return None
    _WORKER = worker
    return worker


def _stop() -> None:
    """Stop the worker, whatever it is doing."""
    global _WORKER
    if _WORKER is not None:
        _WORKER.kill()
        _WORKER.wait()
    _WORKER = None


def _died() -> None:
    global _UNAVAILABLE
    _stop()
    _UNAVAILABLE = True  # run here from now on


def run_in_two(function: Callable[..., Any], jobs: Sequence[tuple]) -> list:
    """``[function(*job) for job in jobs]`` for two jobs: the second in the worker process,
    where it can run, at the same time as the first here.

    ``function`` must be importable by name (a module's top-level function), and the
    second job's arguments and result picklable. A job that raises raises here, as in
    the loop.
    """
    worker = _start() if len(jobs) == 2 else None
    if worker is None:
        return [function(*job) for job in jobs]
    try:
        _send(worker, (function, tuple(jobs[1])))
    except OSError:  # the worker died (killed, or out of memory)
        _died()
        return [function(*job) for job in jobs]
    try:
        here = function(*jobs[0])
    except BaseException:
        # An error or an interrupt here: the worker's result would answer the next job.
        _stop()
        raise
    try:
        ok, there = _receive(worker)
    except (OSError, EOFError, pickle.UnpicklingError):
        _died()
        return [here, function(*jobs[1])]
    except BaseException:  # interrupted while waiting
        _stop()
        raise
    if not ok:
        raise there
    return [here, there]


atexit.register(_stop)

if __name__ == "__main__":
    _serve()
