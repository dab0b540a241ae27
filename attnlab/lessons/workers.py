"""A second process that trains half of lesson 08's models while this one trains the rest.

Training is many small NumPy steps, so threads spend most of their time waiting for
Python's global interpreter lock; processes do not share it. The worker is a plain Python
process that reads jobs from a pipe and writes back their results, pickled, each in a
numbered frame. Unlike :mod:`multiprocessing`, it never runs the caller's script again
(which fails in a script without ``if __name__ == "__main__":``) and needs no shared
memory, which some sandboxes lack.

The worker starts on first use, with the caller's ``sys.path`` and interpreter flags, and
lives as long as this process. It imports attnlab afresh: changes made to attnlab's code in
a running kernel (monkeypatching, ``%autoreload``) do not reach it. Where it cannot run
(Pyodide in the browser, one core, ``ATTNLAB_WORKERS=0`` in the environment, a worker that
died), :func:`available` says so and the caller trains everything here: the results are
the same, only slower. Anything that goes wrong while a job is out (an error, an
interrupt) stops the worker, so that no result ever answers the wrong job; the next call
starts a fresh one.

Lessons: ``notebooks/08_does_scaling_matter.ipynb`` and ``notebooks/10_in_practice.ipynb``
(through :mod:`attnlab.lessons.ablation`'s training).
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from ..fast import _cores

_WORKER: subprocess.Popen | None = None
_OWNER = 0  # the process that started the worker: a forked child must not use its pipes
_UNAVAILABLE = False  # set where the worker cannot start, or once it has died
_LOCK = threading.Lock()  # one job out at a time; another thread runs its jobs here
_JOB = 0  # the number of the last job sent; the worker's reply carries it back
_GREETED = False  # whether the worker has said it imported the caller's attnlab

# The worker's first lines: the caller's sys.path comes before anything is imported, so
# that the worker finds the same attnlab as the caller. One reader on the jobs' pipe from
# the start: a second one could miss what the first had already buffered.
_BOOT = (
    "import os, pickle, sys; jobs = os.fdopen(os.dup(0), 'rb'); "
    "sys.path[:0] = pickle.load(jobs); "
    "from attnlab.lessons.workers import _serve; _serve(jobs)"
)


class RemoteTraceback(Exception):
    """The traceback of an error raised in the worker, attached as its cause."""

    def __str__(self) -> str:
        return str(self.args[0])


def _write(stream, number: int, payload: bytes) -> None:
    stream.write(struct.pack("<QQ", number, len(payload)) + payload)
    stream.flush()


def _read(stream) -> tuple[int, bytes]:
    header = stream.read(16)
    if len(header) < 16:
        raise EOFError("the other end closed the pipe")
    number, size = struct.unpack("<QQ", header)
    payload = stream.read(size)
    if len(payload) < size:
        raise EOFError("the other end closed the pipe")
    return number, payload


def _serve(jobs) -> None:
    """The worker's loop: read a numbered ``(function, args)`` from ``jobs``, write back
    under the same number ``(True, result)`` or ``(False, error, traceback)``, until the
    pipe closes. First it says which attnlab it imported (frame 0)."""
    # On POSIX, interrupting a notebook's kernel signals its whole process group: the
    # worker ignores it, and the kernel stops the worker if it no longer waits for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Jobs and results keep pipes of their own; anything a job (or a library in C) writes
    # to standard output goes to standard error instead, never into the results.
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    import attnlab

    _write(results, 0, pickle.dumps(attnlab.__file__))  # which attnlab this is
    while True:
        try:
            number, payload = _read(jobs)
        except EOFError:
            return
        try:
            function, args = pickle.loads(payload)
            reply = pickle.dumps((True, function(*args)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:
            reply = _error_reply(error, traceback.format_exc())
        _write(results, number, reply)


def _error_reply(error: Exception, text: str) -> bytes:
    """``(False, error, traceback)`` pickled; an error that would not arrive whole (it cannot
    be pickled, or rebuilt from its arguments) travels as its type's name and message."""
    try:
        reply = pickle.dumps((False, error, text))
        pickle.loads(reply)
        return reply
    except Exception:
        return pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}"), text))


def _start() -> subprocess.Popen | None:
    """The worker, started on first use; None where it cannot run."""
    global _WORKER, _OWNER, _UNAVAILABLE, _GREETED
    if _WORKER is not None and _OWNER != os.getpid():  # in a forked child: not ours
        _WORKER = None
    if _WORKER is not None or _UNAVAILABLE:
        return _WORKER
    if (
        _cores() < 2
        or sys.platform == "emscripten"
        or os.environ.get("ATTNLAB_WORKERS") == "0"
        or not sys.executable
    ):
        _UNAVAILABLE = True
        return None
    flags: list[str] = getattr(subprocess, "_args_from_interpreter_flags", list)()  # -I, -s, -E
    # A kernel started without a console on Windows must not open one for its worker.
    hidden = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    worker = None
    try:
        worker = subprocess.Popen(
            [sys.executable, *flags, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            creationflags=hidden,
        )
        assert worker.stdin is not None
        pickle.dump(sys.path, worker.stdin)
        worker.stdin.flush()
    except OSError:
        if worker is not None:
            _kill(worker)
        _UNAVAILABLE = True
        return None
    _WORKER, _OWNER, _GREETED = worker, os.getpid(), False
    return worker


def available() -> bool:
    """Whether a second process can take jobs here; starts it if it can."""
    return _start() is not None


def _kill(worker: subprocess.Popen) -> None:
    worker.kill()
    worker.wait()
    for pipe in (worker.stdin, worker.stdout):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:  # unsent bytes, with nobody left to read them
            pass


def _stop() -> None:
    """Stop the worker, whatever it is doing."""
    global _WORKER
    if _WORKER is not None and _OWNER == os.getpid():
        _kill(_WORKER)
    _WORKER = None


def _answer(worker: subprocess.Popen, job: int) -> tuple:
    """The worker's reply to job number ``job``; EOFError if it is not that."""
    global _GREETED
    if not _GREETED:
        import attnlab

        number, found = _read(worker.stdout)
        if number != 0 or pickle.loads(found) != attnlab.__file__:
            raise EOFError("the worker imported another attnlab than this process")
        _GREETED = True
    number, reply = _read(worker.stdout)
    if number != job:
        raise EOFError(f"the worker answered job {number}, not job {job}")
    return pickle.loads(reply)


def run_in_two(function: Callable[..., Any], jobs: Sequence[tuple]) -> list:
    """``[function(*job) for job in jobs]`` for two jobs: the second in the worker process,
    where it can run, at the same time as the first here.

    ``function`` must be importable by name (a module's top-level function), and the
    second job's arguments and result picklable. A job that raises raises here, as in
    the loop; an error in the worker carries the worker's traceback as its cause.
    """
    global _JOB, _UNAVAILABLE
    if len(jobs) != 2 or not _LOCK.acquire(blocking=False):
        return [function(*job) for job in jobs]
    try:
        worker = _start()
        try:
            payload = pickle.dumps((function, tuple(jobs[1])), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # not picklable: no worker for this one
            worker = None
        if worker is None:
            return [function(*job) for job in jobs]
        _JOB += 1
        stage = "send"
        try:
            _write(worker.stdin, _JOB, payload)
            stage = "here"
            here = function(*jobs[0])
            stage = "receive"
            answer = _answer(worker, _JOB)
        except BaseException as error:
            # Whatever happened while the job was out (an error here, an interrupt, a dead
            # worker), a result still on its way must not answer the next job: the worker
            # goes, and the next call starts a fresh one.
            _stop()
            if stage == "here" or not isinstance(error, (OSError, EOFError)):
                raise
            # The worker died (killed, or out of memory): everything runs here from now on.
            _UNAVAILABLE = True
            first = here if stage == "receive" else function(*jobs[0])
            return [first, function(*jobs[1])]
    finally:
        _LOCK.release()
    if not answer[0]:
        raise answer[1] from RemoteTraceback(answer[2])
    return [here, answer[1]]


atexit.register(_stop)
