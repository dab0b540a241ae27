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
worker are raised again here, as if raised here (this process's filters, and the same place
warns once by default), and the job runs under this process's NumPy error settings (jobs
under ``np.seterrcall``'s "call" or "log" modes stay here, with their function).

Lessons: ``notebooks/08_does_scaling_matter.ipynb`` and ``notebooks/10_in_practice.ipynb``
(through :mod:`attnlab.lessons.ablation`'s training).
"""

from __future__ import annotations

import atexit
import os
import pickle
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
_UNAVAILABLE = False  # where the worker cannot start, once it died during a job, in the worker
_LOCK = threading.Lock()  # one job out at a time; another thread, or a nested call, runs here
_JOB = 0  # the number of the last job sent; the worker's reply carries it back
_GREETED = False  # whether the worker has said it imported the caller's attnlab

# Every frame starts with this mark, then the job's number and the payload's size.
_MARK = b"attnlab\x00"
_LARGEST = 1 << 32  # bytes: a size past this is taken for a corrupted frame
_STRAY = 1 << 20  # bytes of start-up output (sitecustomize, say) skipped before the greeting

# The worker's first lines, before anything else is imported: it ignores interrupts (on
# POSIX, interrupting a notebook's kernel signals its whole process group; the kernel stops
# the worker if it no longer waits for it); the replies keep the pipe that was standard
# output, and anything else written there goes to standard error; the caller's sys.path
# comes first, so that the worker finds the same attnlab as the caller. One reader on the
# jobs' pipe from the start: a second one could miss what the first had already buffered.
_BOOT = """\
import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)
import os; parent = os.getppid(); results = os.fdopen(os.dup(1), "wb"); os.dup2(2, 1)
import pickle, sys; jobs = os.fdopen(os.dup(0), "rb")
try:
    sys.path[:0] = pickle.load(jobs)
except EOFError:  # the caller went away before it sent anything
    os._exit(0)
from attnlab.lessons.workers import _serve; _serve(jobs, results, parent)
"""


class RemoteTraceback(Exception):
    """The traceback of an error raised in the worker, attached as its cause."""

    def __str__(self) -> str:
        return str(self.args[0])


def _write(stream, number: int, payload: bytes) -> None:
    """One frame: the mark, the job's number, the payload's size, the payload."""
    _write_all(stream, _MARK + struct.pack("<QQ", number, len(payload)))
    _write_all(stream, payload)


def _write_all(stream, data: bytes) -> None:
    """All of ``data``: an unbuffered stream may take only part of it at a time."""
    view = memoryview(data)
    while view:
        view = view[stream.write(view) :]
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
    """``size`` bytes, read in as many parts as the (perhaps unbuffered) stream gives."""
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            raise EOFError("the other end closed the pipe")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _greeting(stream) -> bytes:
    """The worker's first frame's payload, past anything printed before it (a
    sitecustomize's output, say; at most ``_STRAY`` bytes)."""
    window = b""
    for _ in range(_STRAY):
        window = (window + _exactly(stream, 1))[-len(_MARK) :]
        if window == _MARK:
            return _rest_of_frame(stream)[1]
    raise EOFError("the worker never greeted")


def _serve(jobs, results, parent: int) -> None:
    """The worker's loop: read a numbered ``(function, args, numpy_errors)`` from ``jobs``
    and write back, under the same number, ``(True, result, warnings)``, ``(False, error,
    traceback)``, or ``(None, reason)`` for a job it cannot unpickle or a result it cannot
    pickle, which the caller then runs itself; until the pipe closes, or the caller (the
    process ``parent``) ends. First it says which attnlab it imported (frame 0)."""
    global _UNAVAILABLE
    _UNAVAILABLE = True  # in the worker: a job that splits its own work runs both halves here
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # a job that reads standard input must not read the jobs
    os.close(null)
    if os.name == "posix":
        _end_with(parent)
    import attnlab

    try:
        _write(results, 0, pickle.dumps(_where(attnlab.__file__)))
        while True:
            try:
                number, payload = _read(jobs)
            except EOFError:
                break
            _write(results, number, _run(payload))
    except OSError:  # a pipe to a caller that went away
        pass
    _flush_quietly()
    os._exit(0)  # not exit(): a thread a job left running must not keep the worker alive


def _flush_quietly() -> None:
    """Show what jobs printed; a job may have closed or replaced the streams."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _end_with(parent: int) -> None:
    """End the worker as soon as ``parent`` has ended, even in the middle of a job: a kernel
    killed with its process group (as Jupyter stops one) leaves the worker running, since
    it has a session of its own, and nobody will read what it computes. POSIX only: there
    a process whose parent ends is handed to another, and ``getppid`` changes."""
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="attnlab-watch").start()


def _run(payload: bytes) -> bytes:
    """One job, from its pickle to its reply's."""
    import numpy as np

    try:
        function, args, numpy_errors = pickle.loads(payload)
    except Exception as error:  # a class defined in the caller's notebook, say
        return pickle.dumps((None, f"{type(error).__name__}: {error}"))
    try:
        with warnings.catch_warnings(record=True) as caught, np.errstate(**numpy_errors):
            warnings.simplefilter("always")  # the caller's filters decide, when raised again
            result = function(*args)
        said = [(w.message, w.category, w.filename, w.lineno) for w in caught]
    except Exception as error:
        return _error_reply(error, traceback.format_exc())
    finally:  # what the job printed shows now, even if the worker is stopped next
        _flush_quietly()
    try:
        return pickle.dumps((True, result, said), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # a result that cannot travel: the caller runs the job itself
        return pickle.dumps((None, f"{type(error).__name__}: {error}"))


def _error_reply(error: Exception, text: str) -> bytes:
    """``(False, error, traceback)`` pickled; an error that would not arrive whole (it cannot
    be pickled, or rebuilt from its arguments) travels as its type's name and message."""
    try:
        reply = pickle.dumps((False, error, text))
        pickle.loads(reply)
        return reply
    except Exception:
        return pickle.dumps((False, RuntimeError(f"{type(error).__name__}: {error}"), text))


def _where(file: str) -> str:
    """A module's file as a path both processes spell alike."""
    return os.path.normcase(os.path.realpath(file))


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
            bufsize=0,  # no buffer lock for a forked child to find held (_forget_after_fork)
            creationflags=hidden,
            start_new_session=os.name == "posix",  # the kernel's interrupts are not its own
        )
        _write_all(worker.stdin, pickle.dumps(path))  # what _BOOT reads first
    except BaseException as error:
        if worker is not None:
            _kill(worker)
        if not isinstance(error, OSError):
            raise
        _UNAVAILABLE = True
        return None
    _WORKER, _GREETED = worker, False
    return worker


def available() -> bool:
    """Whether a second process can take a job now; starts it if it can. False while
    another job is out (from another thread, or a call inside a job)."""
    lock = _LOCK
    if not lock.acquire(blocking=False):
        return False
    try:
        return _start() is not None
    finally:
        lock.release()


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
    worker, _WORKER = _WORKER, None
    if worker is not None:
        _kill(worker)


def _forget_after_fork() -> None:
    """In a forked child: the parent's worker and lock are not the child's to use."""
    global _WORKER, _LOCK
    if _WORKER is not None:
        for pipe in (_WORKER.stdin, _WORKER.stdout):
            if pipe is not None:
                pipe.close()  # the child's copies only (unbuffered: nothing to flush)
        _WORKER.returncode = 0  # so that nothing here waits for it or warns about it
    _WORKER, _LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _answer(worker: subprocess.Popen, job: int) -> tuple:
    """The worker's reply to job number ``job`` (``(None, reason)`` if it cannot be
    rebuilt here); EOFError if it is not that job's."""
    global _GREETED
    if not _GREETED:
        import attnlab

        try:
            found = pickle.loads(_greeting(worker.stdout))
        except pickle.UnpicklingError as error:
            raise EOFError("the worker's greeting was not one") from error
        if found != _where(attnlab.__file__):
            raise EOFError("the worker imported another attnlab than this process")
        _GREETED = True
    number, reply = _read(worker.stdout)
    if number != job:
        raise EOFError(f"the worker answered job {number}, not job {job}")
    try:
        return pickle.loads(reply)
    except Exception as error:  # a result that cannot be rebuilt here: run the job here
        return (None, f"{type(error).__name__}: {error}")


def run_in_two(function: Callable[..., Any], jobs: Sequence[tuple]) -> list:
    """``[function(*job) for job in jobs]`` for two jobs: the second in the worker process,
    where it can run, at the same time as the first here.

    ``function`` must be importable by name (a module's top-level function), and the
    second job's arguments and result picklable. In the worker, a job reads an empty
    standard input and prints to standard error. A job that raises raises here, as in
    the loop; an error in the worker carries the worker's traceback as its cause.
    """
    global _JOB, _UNAVAILABLE
    import numpy as np

    lock, locked = _LOCK, False
    try:
        numpy_errors = np.geterr()
        # np.seterrcall's function lives in this process only: such jobs stay here.
        here_only = "call" in numpy_errors.values() or "log" in numpy_errors.values()
        locked = len(jobs) == 2 and not here_only and lock.acquire(blocking=False)
        worker = _start() if locked else None
        payload = b""
        if worker is not None:
            job = (function, tuple(jobs[1]), numpy_errors)
            try:
                payload = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
            except Exception:  # not picklable: no worker for this one
                worker = None
        if worker is None:
            return [function(*job) for job in jobs]
        _JOB += 1
        number, stage = _JOB, "send"
        try:
            _write(worker.stdin, number, payload)
            stage = "here"
            here = function(*jobs[0])
            stage = "receive"
            answer = _answer(worker, number)
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
            lock.release()
    if answer[0] is None:  # the job could not go to the worker, or come back: run it here
        return [here, function(*jobs[1])]
    if not answer[0]:
        raise answer[1] from RemoteTraceback(answer[2])
    if answer[2]:
        owners: dict = {}
        for name, loaded in list(sys.modules.items()):
            owners.setdefault(getattr(loaded, "__file__", None), name)
        for message, category, filename, lineno in answer[2]:
            _warn_here(message, category, filename, lineno, owners.get(filename))
    return [here, answer[1]]


_REGISTRIES: dict[str, dict] = {}  # for warnings from files no loaded module owns


def _warn_here(message, category, filename: str, lineno: int, module: str | None) -> None:
    """A warning from the worker, raised as if the code at ``filename:lineno`` (in
    ``module``, where one loaded here owns that file) had raised it here: the filters for
    its module apply, and its module's registry records that it was shown, so that by
    default it shows once, as it would have here."""
    if module is not None:
        registry = vars(sys.modules[module]).setdefault("__warningregistry__", {})
    else:
        registry = _REGISTRIES.setdefault(filename, {})
    warnings.warn_explicit(message, category, filename, lineno, module=module, registry=registry)


atexit.register(_stop)
