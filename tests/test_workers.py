"""attnlab.lessons.workers: a second process, or the same results without it; and the
cores attnlab.fast counts on, which decide whether there is a second process."""

from __future__ import annotations

import math
import os
import pickle

import pytest

from attnlab.lessons import workers

TWO_CORES = workers._cores() >= 2
needs_two_cores = pytest.mark.skipif(not TWO_CORES, reason="the worker runs only on 2 cores")


@pytest.fixture
def fresh(monkeypatch):
    """No worker yet; one a test starts is stopped after it."""
    monkeypatch.setattr(workers, "_WORKER", None)
    monkeypatch.setattr(workers, "_UNAVAILABLE", False)
    monkeypatch.setattr(workers, "_GREETED", False)
    monkeypatch.delenv("ATTNLAB_WORKERS", raising=False)
    yield workers
    workers._stop()


def in_worker(module) -> bool:
    """Whether the last call really ran its second job in the worker (the fallback here
    gives the same results, so a test must check this too)."""
    return module._WORKER is not None and not module._UNAVAILABLE


def attnlab_file() -> str:  # run in the worker: which attnlab it imported
    import attnlab

    return attnlab.__file__


def plotting_loaded() -> list[str]:  # run in the worker: did training pull in plotting?
    import sys

    import attnlab.lessons.ablation  # noqa: F401 - what a training job imports

    return [m for m in ("matplotlib", "ipywidgets", "IPython") if m in sys.modules]


class TwoArguments(Exception):
    """An error that pickle cannot rebuild from its message alone."""

    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


def raise_two_arguments(really: bool):
    if really:
        raise TwoArguments("one", "two")


def test_the_second_job_runs_in_another_process_where_there_are_two_cores(fresh):
    here, there = fresh.run_in_two(os.getpid, [(), ()])
    assert here == os.getpid()
    assert (there != here) == TWO_CORES and fresh.available() == TWO_CORES
    assert fresh.run_in_two(math.exp, [(0.0,), (1.0,)]) == [1.0, math.exp(1.0)]
    assert fresh.run_in_two(os.getpid, [(), ()]) == [here, there]  # the same worker, kept
    assert in_worker(fresh) == TWO_CORES


@needs_two_cores
def test_the_worker_imports_this_attnlab_and_finds_what_this_process_finds(fresh):
    # This test module is importable only through the sys.path pytest set up here.
    assert fresh.run_in_two(attnlab_file, [(), ()]) == [attnlab_file()] * 2
    assert in_worker(fresh)


@needs_two_cores
def test_the_worker_trains_without_loading_plotting(fresh):
    # It starts in a moment: no matplotlib, no widgets, no IPython.
    assert fresh.run_in_two(plotting_loaded, [(), ()])[1] == []


def test_one_core_or_the_environment_runs_both_jobs_here(fresh, monkeypatch):
    monkeypatch.setattr(workers, "_cores", lambda: 1)
    assert fresh.run_in_two(os.getpid, [(), ()]) == [os.getpid()] * 2
    assert fresh._WORKER is None and not fresh.available()
    monkeypatch.setattr(workers, "_cores", lambda: 2)
    monkeypatch.setattr(workers, "_UNAVAILABLE", False)
    monkeypatch.setenv("ATTNLAB_WORKERS", "0")
    assert not fresh.available()


@pytest.mark.parametrize("bad", [0, 1])
def test_a_job_that_raises_raises_here_and_the_next_call_works(fresh, bad):
    jobs = [(4.0,), (9.0,)]
    jobs[bad] = (-1.0,)
    with pytest.raises(ValueError, match="math domain error") as raised:
        fresh.run_in_two(math.sqrt, jobs)
    if bad == 1 and TWO_CORES:  # the worker's own traceback comes along
        assert isinstance(raised.value.__cause__, workers.RemoteTraceback)
        assert "Traceback" in str(raised.value.__cause__)
    assert fresh.run_in_two(math.sqrt, [(4.0,), (16.0,)]) == [2.0, 4.0]
    # An error here stopped the worker with its job out, and this call started another;
    # an error in the worker came back as its answer, and the worker stayed.
    assert in_worker(fresh) == TWO_CORES


def two_arguments() -> TwoArguments:
    return TwoArguments("one", "two")


@needs_two_cores
def test_a_result_that_cannot_be_rebuilt_here_is_computed_here(fresh):
    first, second = fresh.run_in_two(two_arguments, [(), ()])
    assert str(first) == str(second) == "one and two" and in_worker(fresh)


def test_an_error_pickle_cannot_rebuild_arrives_by_name(fresh):
    error = RuntimeError if TWO_CORES else TwoArguments
    with pytest.raises(error, match="one and two"):
        fresh.run_in_two(raise_two_arguments, [(False,), (True,)])


def test_output_on_either_stream_does_not_garble_the_result(fresh):
    assert fresh.run_in_two(print, [("",), ("to the worker's stdout",)]) == [None, None]
    # Bytes written straight to file descriptor 1, as a library in C would.
    forged = workers._MARK + pickle.dumps((True, "forged", []))
    assert fresh.run_in_two(os.write, [(1, b""), (1, forged)]) == [0, len(forged)]
    assert fresh.run_in_two(abs, [(-2,), (-3,)]) == [2, 3]
    assert in_worker(fresh) == TWO_CORES


@needs_two_cores
def test_output_before_the_worker_starts_serving_is_skipped(fresh, tmp_path, monkeypatch):
    # A sitecustomize that prints, as some environments have, before any of our code runs.
    (tmp_path / "sitecustomize.py").write_text(
        "import os\nos.write(1, b'hello from sitecustomize ' * 50)\n"  # unbuffered, at once
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    here, there = fresh.run_in_two(os.getpid, [(), ()])
    assert here != there and in_worker(fresh)


class MadeHere:
    """A class the worker cannot import, as one defined in a notebook's cell."""

    __module__ = "__main__"

    def __init__(self, value):
        self.value = value


def value_of(thing) -> int:
    return thing.value


@needs_two_cores
def test_a_job_the_worker_cannot_read_runs_here(fresh, monkeypatch):
    import __main__

    monkeypatch.setattr(__main__, "MadeHere", MadeHere, raising=False)
    assert fresh.run_in_two(value_of, [(MadeHere(1),), (MadeHere(2),)]) == [1, 2]
    assert in_worker(fresh)  # still there for the next job


def nested(x: float) -> tuple:  # a job that itself splits its work
    return os.getpid(), workers.run_in_two(os.getpid, [(), ()]), workers.available()


@needs_two_cores
def test_a_call_inside_a_job_runs_both_its_jobs_there(fresh):
    (here, inner_here, free_here), (there, inner_there, free_there) = fresh.run_in_two(
        nested, [(1.0,), (9.0,)]
    )
    assert inner_here == [here, here] and inner_there == [there, there] and here != there
    assert not free_here and not free_there  # no third process, here or in the worker
    assert in_worker(fresh)


def careful() -> None:
    import warnings

    warnings.warn("careful", UserWarning, stacklevel=1)


@needs_two_cores
def test_a_warning_from_the_worker_shows_once_like_one_raised_here(fresh):
    import warnings

    sent = fresh._JOB
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")  # once per place
        fresh.run_in_two(careful, [(), ()])
        fresh.run_in_two(careful, [(), ()])
    assert [str(w.message) for w in seen] == ["careful"]
    assert in_worker(fresh) and fresh._JOB == sent + 2  # both calls went to the worker


def exp_of(x: float) -> float:
    import numpy as np

    return float(np.exp(np.float64(x)))


@needs_two_cores
def test_the_job_runs_under_this_processs_numpy_error_settings(fresh):
    import numpy as np

    with np.errstate(under="raise"), pytest.raises(FloatingPointError, match="underflow") as e:
        fresh.run_in_two(exp_of, [(0.0,), (-1000.0,)])
    assert isinstance(e.value.__cause__, workers.RemoteTraceback)  # raised in the worker
    assert fresh.run_in_two(exp_of, [(0.0,), (-1000.0,)]) == [1.0, 0.0]
    assert in_worker(fresh)


def test_a_job_under_seterrcall_stays_here_with_its_function(fresh):
    import numpy as np

    calls, sent = [], fresh._JOB
    old = np.seterrcall(lambda kind, flag: calls.append(kind))
    try:
        with np.errstate(under="call"):
            assert fresh.run_in_two(exp_of, [(-1000.0,), (-1000.0,)]) == [0.0, 0.0]
    finally:
        np.seterrcall(old)
    assert calls == ["underflow", "underflow"]  # both jobs called this process's function
    assert fresh._JOB == sent  # and neither went to the worker


def shout(text: str) -> None:
    print(text)


@needs_two_cores
def test_what_a_job_prints_in_the_worker_shows_even_if_it_is_stopped_next(fresh, capfd):
    fresh.run_in_two(shout, [("here",), ("from the worker",)])
    fresh._stop()  # killed at once: anything still buffered would be lost
    out, err = capfd.readouterr()
    assert "here" in out and "from the worker" in err


@pytest.mark.skipif(os.name != "posix" or not TWO_CORES, reason="POSIX, with a worker")
def test_the_worker_ends_soon_after_its_caller_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    caller = tmp_path / "caller.py"
    caller.write_text(
        "import os, time\n"
        "from attnlab.lessons import workers\n"
        "print(workers.run_in_two(os.getpid, [(), ()])[1], flush=True)\n"
        "workers._write(workers._WORKER.stdin, 9, __import__('pickle').dumps("
        "(time.sleep, (30,), {})))\n"  # a long job out, then the caller dies at once
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, str(caller)], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL
    worker = int(done.stdout.split()[0])
    for _ in range(40):  # the watch looks every 0.5 s
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    pytest.fail(f"the worker {worker} outlived its caller by 4 s")


def log_of(x: float) -> float:
    import numpy as np

    return float(np.log(x))


@needs_two_cores
def test_a_warning_in_the_worker_meets_this_processs_filters(fresh):
    # pytest here turns RuntimeWarning into an error (pyproject.toml); so must the worker's.
    with pytest.raises(RuntimeWarning, match="divide by zero"):
        fresh.run_in_two(log_of, [(1.0,), (0.0,)])
    assert fresh.run_in_two(log_of, [(1.0,), (1.0,)]) == [0.0, 0.0]


@needs_two_cores
def test_an_interrupt_while_a_job_is_out_never_lets_its_result_answer_the_next(fresh, monkeypatch):
    write = workers._write

    def write_then_interrupt(*args):
        write(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(workers, "_write", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        fresh.run_in_two(math.sqrt, [(16.0,), (25.0,)])
    assert fresh._WORKER is None  # stopped with the job still out
    monkeypatch.setattr(workers, "_write", write)
    assert fresh.run_in_two(abs, [(-1,), (-2,)]) == [1, 2]
    assert in_worker(fresh)  # a fresh one


@needs_two_cores
def test_a_worker_that_dies_between_jobs_is_started_again(fresh):
    before = fresh.run_in_two(os.getpid, [(), ()])
    fresh._WORKER.kill()
    fresh._WORKER.wait()
    after = fresh.run_in_two(os.getpid, [(), ()])
    assert in_worker(fresh) and len({os.getpid(), before[1], after[1]}) == 3


def die_unless_in(pid: int) -> str:
    if os.getpid() != pid:  # in the worker: end it, mid-job
        os._exit(3)
    return "done here"


@needs_two_cores
def test_a_worker_that_dies_during_a_job_gives_way_to_running_here(fresh):
    me = os.getpid()
    assert fresh.run_in_two(die_unless_in, [(me,), (me,)]) == ["done here"] * 2
    assert fresh._WORKER is None and not fresh.available()
    assert fresh.run_in_two(os.getpid, [(), ()]) == [os.getpid()] * 2


def test_other_numbers_of_jobs_run_here(fresh):
    assert fresh.run_in_two(os.getpid, [(), (), ()]) == [os.getpid()] * 3
    assert fresh.run_in_two(os.getpid, [()]) == [os.getpid()]
    assert fresh._WORKER is None


def _cgroups(tmp_path, monkeypatch, membership: str, files: dict[str, str]):
    """A fake /proc/self/cgroup and /sys/fs/cgroup for attnlab.fast to read."""
    from attnlab import fast

    (tmp_path / "cgroup").write_text(membership)
    for name, text in files.items():
        (tmp_path / "sys" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "sys" / name).write_text(text)
    monkeypatch.setattr(fast, "_PROC_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(fast, "_CGROUP_ROOT", str(tmp_path / "sys"))
    return fast


@pytest.mark.parametrize(
    "membership, files, quota",
    [
        ("0::/\n", {"cpu.max": "max 100000\n"}, None),
        ("0::/\n", {"cpu.max": "150000 100000\n"}, 1),  # 1.5 cores' worth: 1 busy core
        ("0::/\n", {"cpu.max": "400000 100000\n"}, 4),
        ("0::/\n", {"cpu.max": "50000 100000\n"}, 1),  # never below one
        # A systemd unit's quota, two levels below the root, and a looser one above it.
        (
            "0::/user.slice/user-1000.slice\n",
            {
                "cpu.max": "max 100000",
                "user.slice/cpu.max": "800000 100000",
                "user.slice/user-1000.slice/cpu.max": "200000 100000",
            },
            2,
        ),
        # cgroup v1, as a container sees it; a "-1" quota is none.
        ("4:cpu,cpuacct:/\n3:memory:/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "300000",
                                             "cpu,cpuacct/cpu.cfs_period_us": "100000"}, 3),
        ("4:cpu,cpuacct:/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "-1",
                                "cpu,cpuacct/cpu.cfs_period_us": "100000"}, None),
        # cgroup v1 with a systemd service's quota below an unlimited root.
        (
            "4:cpu,cpuacct:/system.slice/jupyter.service\n",
            {
                "cpu,cpuacct/cpu.cfs_quota_us": "-1",
                "cpu,cpuacct/cpu.cfs_period_us": "100000",
                "cpu,cpuacct/system.slice/jupyter.service/cpu.cfs_quota_us": "100000",
                "cpu,cpuacct/system.slice/jupyter.service/cpu.cfs_period_us": "100000",
            },
            1,
        ),
        # A hybrid host (v1 controllers, v2 mounted elsewhere) without a quota.
        ("12:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n", {}, None),
        ("0::/\n", {"cpu.max": "150000"}, None),  # not in a form known here: no quota
        ("0::/\n", {}, None),  # no quota files at all
    ],
)  # fmt: skip
def test_a_control_groups_cpu_quota_caps_the_cores(tmp_path, monkeypatch, membership, files, quota):
    fast = _cgroups(tmp_path, monkeypatch, membership, files)
    assert fast._quota_cores() == quota
    free = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    fast._cores.cache_clear()
    try:
        assert fast._cores() == (free if quota is None else min(free, quota))
    finally:
        fast._cores.cache_clear()
