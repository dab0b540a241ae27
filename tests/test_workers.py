"""attnlab.lessons.workers: a second process, or the same results without it."""

from __future__ import annotations

import math
import os

import pytest

from attnlab.lessons import workers

TWO_CORES = workers._cores() >= 2


@pytest.fixture
def fresh(monkeypatch):
    """No worker yet; one a test starts is stopped after it."""
    monkeypatch.setattr(workers, "_WORKER", None)
    monkeypatch.setattr(workers, "_UNAVAILABLE", False)
    yield workers
    workers._stop()


def test_the_second_job_runs_in_another_process_where_there_are_two_cores(fresh):
    here, there = fresh.run_in_two(os.getpid, [(), ()])
    assert here == os.getpid()
    assert (there != here) == TWO_CORES
    assert fresh.run_in_two(math.exp, [(0.0,), (1.0,)]) == [1.0, math.exp(1.0)]
    assert fresh.run_in_two(os.getpid, [(), ()]) == [here, there]  # the same worker, kept


def test_one_core_runs_both_jobs_here(fresh, monkeypatch):
    monkeypatch.setattr(workers, "_cores", lambda: 1)
    assert fresh.run_in_two(os.getpid, [(), ()]) == [os.getpid()] * 2
    assert fresh._WORKER is None and fresh._UNAVAILABLE


@pytest.mark.parametrize("bad", [0, 1])
def test_a_job_that_raises_raises_here_and_the_next_call_works(fresh, bad):
    jobs = [(4.0,), (9.0,)]
    jobs[bad] = (-1.0,)
    with pytest.raises(ValueError, match="math domain error"):
        fresh.run_in_two(math.sqrt, jobs)
    assert fresh.run_in_two(math.sqrt, [(4.0,), (16.0,)]) == [2.0, 4.0]


def test_a_job_that_prints_does_not_garble_the_result(fresh):
    assert fresh.run_in_two(print, [("",), ("to the worker's stderr",)]) == [None, None]
    assert fresh.run_in_two(abs, [(-2,), (-3,)]) == [2, 3]


@pytest.mark.skipif(not TWO_CORES, reason="the worker starts only where there are two cores")
def test_a_dead_worker_gives_way_to_running_here(fresh):
    before = fresh.run_in_two(os.getpid, [(), ()])
    fresh._WORKER.kill()
    fresh._WORKER.wait()
    assert fresh.run_in_two(os.getpid, [(), ()]) == [os.getpid()] * 2
    assert fresh._WORKER is None and fresh._UNAVAILABLE and before[1] != os.getpid()


def test_other_numbers_of_jobs_run_here(fresh):
    assert fresh.run_in_two(os.getpid, [(), (), ()]) == [os.getpid()] * 3
    assert fresh.run_in_two(os.getpid, [()]) == [os.getpid()]
    assert fresh._WORKER is None


@pytest.mark.parametrize(
    "cpu_max, quota_cores",
    [("max 100000\n", None), ("150000 100000\n", 1), ("200000 100000\n", 2), ("50000 100000", 1)],
)
def test_a_container_quota_caps_the_cores(tmp_path, monkeypatch, cpu_max, quota_cores):
    from attnlab import fast

    free = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    (tmp_path / "cpu.max").write_text(cpu_max)
    monkeypatch.setattr(fast, "_CPU_MAX", str(tmp_path / "cpu.max"))
    fast._cores.cache_clear()
    try:
        assert fast._cores() == (free if quota_cores is None else min(free, quota_cores))
    finally:
        fast._cores.cache_clear()
