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
(Pyodide in the browser, one core, ``ATTNLAB_WORKERS=0`` in the environment before the
first training, a worker that died during a job), :func:`available` says so and the caller
trains everything here: the results are the same, only slower. Anything that goes wrong
while a job is out (an error, an interrupt) stops the worker, so that no result ever
answers the wrong job; the next call starts a fresh one. Warnings a job raises in the
worker are raised again here, under this process's filters.

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
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..fast import _cores

_WORKER: subprocess.Popen | None = None
_UNAVAILABLE = False  # set where the worker cannot start, or once it has died during a job
_LOCK = threading.RLock()  # one job out at a time; another thread runs its jobs here
_JOB = 0  # the number of the last job sent; the worker's reply carries it back
_GREETED = False  # whether the worker has said it imported the caller's attnlab

# Every frame starts with this mark, then the job's number and the payload's size.
_MARK = b"attnlab\x00"
_LARGEST = 1 << 32  # bytes: a size past this is not a frame of ours
_STRAY = 1 << 20  # bytes of start-up output (sitecustomize, say) skipped before the greeting

# The worker's first lines, before anything else is imported: the replies keep the pipe
# that was standard output, and anything else written there goes to standard error; the
# caller's sys.path comes first, so that the worker finds the same attnlab as the caller.
# One reader on the jobs' pipe from the start: a second one could miss what the first had
# already buffered.
_BOOT = (
    "import os; results = os.fdopen(os.dup(1), 'wb'); os.dup2(2, 1); "
    "import pickle, sys; jobs = os.fdopen(os.dup(0), 'rb'); "
    "sys.path[:0] = pickle.load(jobs); "
    "from attnlab.lessons.workers import _serve; _serve(jobs, results)"
)


class RemoteTraceback(Exception):
    """The traceback of an error raised in the worker, attached as its cause."""

    def __str__(self) -> str:
        return str(self.args[0])


def _write(stream, number: int, payload: bytes) -> None:
    stream.write(_MARK + struct.pack("<QQ", number, len(payload)))
    stream.write(payload)
    stream.flush()


def _read(stream) -> tuple[int, bytes]:
    """The next frame; EOFError if the pipe closed or what came is not a frame."""
    if _exactly(stream, len(_MARK)) != _MARK:
        raise EOFError("the pipe carried something other than a frame")
    return _rest_of_frame(stream)


def _rest_of_frame(stream) -> tuple[int, bytes]:
    """A frame's number and payload, read after its mark."""
    number, size = struct.unpack("<QQ", _exactly(stream, 16))
    if size > _LARGEST:
        raise EOFError("the pipe carried something other than a frame")
    return number, _exactly(stream, size)


def _exactly(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other end closed the pipe")
    return data


def _greeting(stream) -> bytes:
    """The worker's first frame's payload, past anything printed before it (a
    sitecustomize's output, say; at most ``_STRAY`` bytes)."""
    window = b""
    for _ in range(_STRAY):
        window = (window + _exactly(stream, 1))[-len(_MARK) :]
        if window == _MARK:
            return _rest_of_frame(stream)[1]
    raise EOFError("the worker never greeted")


def _serve(jobs, results) -> None:
    """The worker's loop: read a numbered ``(function, args)`` from ``jobs`` and write back,
    under the same number, ``(True, result, warnings)``, ``(False, error, traceback)``,
    or ``(None, reason)`` for a job it cannot even unpickle, which the caller then runs
    itself; until the pipe closes. First it says which attnlab it imported (frame 0)."""
    # On POSIX, interrupting a notebook's kernel signals its whole process group: the
    # worker ignores it, and the kernel stops the worker if it no longer waits for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # a job that reads standard input must not read the jobs
    os.close(null)
    import attnlab

    with jobs, results:
        _write(results, 0, pickle.dumps(attnlab.__file__))
        while True:
            try:
                number, payload = _read(jobs)
            except EOFError:
                return
            _write(results, number, _run(payload))


def _run(payload: bytes) -> bytes:
    """One job, from its pickle to its reply's."""
    try:
        function, args = pickle.loads(payload)
    except Exception as error:  # a class defined in the caller's notebook, say
        return pickle.dumps((None, f"{type(error).__name__}: {error}"))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # the caller's filters decide, when re-raised
            result = function(*args)
        said = [(w.message, w.category, w.filename, w.lineno) for w in caught]
        return pickle.dumps((True, result, said), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        return _error_reply(error, traceback.format_exc())


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
    global _WORKER, _UNAVAILABLE, _GREETED
    if _WORKER is not None and _WORKER.poll() is not None:  # it died between jobs: again
        _stop()
    if _WORKER is not None or _UNAVAILABLE:
        return _WORKER
    if (
        _cores() < 2
        or sys.platform == "emscripten"
        or os.environ.get("ATTNLAB_WORKERS") == "0"
        or not sys.executable
        or getattr(sys, "frozen", False)  # an embedded Python would start itself again
    ):
        _UNAVAILABLE = True
        return None
    import attnlab

    flags: list[str] = getattr(subprocess, "_args_from_interpreter_flags", list)()  # -I, -s, -E
    # A kernel started without a console on Windows must not open one for its worker.
    hidden = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    # This attnlab's folder first, absolute: a relative entry of sys.path would be read
    # against whatever folder the caller has moved to since.
    path = [os.path.dirname(os.path.dirname(os.path.abspath(attnlab.__file__))), *sys.path]
    worker = None
    try:
        worker = subprocess.Popen(
            [sys.executable, *flags, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            creationflags=hidden,
        )
        assert worker.stdin is not None
        pickle.dump(path, worker.stdin)
        worker.stdin.flush()
    except OSError:
        if worker is not None:
            _kill(worker)
        _UNAVAILABLE = True
        return None
    _WORKER, _GREETED = worker, False
    return worker


def available() -> bool:
    """Whether a second process can take jobs here; starts it if it can."""
    with _LOCK:
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
    if _WORKER is not None:
        _kill(_WORKER)
    _WORKER = None


def _forget_after_fork() -> None:
    """In a forked child: the parent's worker and lock are not the child's to use."""
    global _WORKER, _LOCK
    if _WORKER is not None:
        for pipe in (_WORKER.stdin, _WORKER.stdout):
            try:
                if pipe is not None:
                    pipe.close()  # the child's copies only: the worker is the parent's
            except OSError:
                pass
        _WORKER.returncode = 0  # so that nothing here waits for it or warns about it
    _WORKER, _LOCK = None, threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _answer(worker: subprocess.Popen, job: int) -> tuple:
    """The worker's reply to job number ``job``; EOFError if it is not that."""
    global _GREETED
    if not _GREETED:
        import attnlab

        try:
            found = pickle.loads(_greeting(worker.stdout))
        except pickle.UnpicklingError as error:
            raise EOFError("the worker's greeting was not one") from error
        if found != attnlab.__file__:
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
    locked = False
    try:
        locked = len(jobs) == 2 and _LOCK.acquire(blocking=False)
        worker = _start() if locked else None
        payload = b""
        if worker is not None:
            try:
                payload = pickle.dumps((function, tuple(jobs[1])), pickle.HIGHEST_PROTOCOL)
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
            if stage == "here" or not isinstance(error, (OSError, EOFError, MemoryError)):
                raise
            # The worker died during a job (killed, or out of memory), or its pipe carried
            # something else: everything runs here from now on.
            _UNAVAILABLE = True
            first = here if stage == "receive" else function(*jobs[0])
            return [first, function(*jobs[1])]
    finally:
        if locked:
            _LOCK.release()
    if answer[0] is None:  # the worker could not even read the job: run it here
        return [here, function(*jobs[1])]
    if not answer[0]:
        raise answer[1] from RemoteTraceback(answer[2])
    for message, category, filename, lineno in answer[2]:
        warnings.warn_explicit(message, category, filename, lineno)
    return [here, answer[1]]


atexit.register(_stop)
