"""kernelevo.search.request_threads: calls an interrupted run can walk away from (events only, no clock: a hang
is pytest-timeout's to end)."""

from __future__ import annotations

import threading

import pytest

from kernelevo.search.request_threads import CallsAborted, RequestThreads


def test_calls_return_their_results_and_at_most_limit_run_at_once():
    threads = RequestThreads(2, name="test")
    release, lock = threading.Event(), threading.Lock()
    running, peak, started = [0], [0], threading.Semaphore(0)

    def call(value: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        started.release()
        release.wait()
        with lock:
            running[0] -= 1
        return value * 2

    futures = [threads.submit(call, i) for i in range(5)]
    started.acquire()
    started.acquire()  # two are running; the others wait for a slot (the peak below says none got one)
    release.set()
    assert [f.result() for f in futures] == [0, 2, 4, 6, 8]
    assert peak[0] == 2
    threads.wait()


def test_abort_wakes_whoever_waits_and_leaves_the_blocked_thread_behind():
    threads = RequestThreads(1, name="test")
    blocked, never = threading.Event(), threading.Event()

    def hang() -> str:
        blocked.set()
        never.wait()  # a reply that never comes
        return "late"

    running = threads.submit(hang)
    queued = threads.submit(hang)
    blocked.wait()
    threads.abort()
    with pytest.raises(CallsAborted, match="interrupted"):
        running.result()
    assert queued.cancelled()
    with pytest.raises(CallsAborted):
        threads.submit(hang)
    worker = next(t for t in threading.enumerate() if t.name == "test")
    assert worker.daemon  # the interpreter does not wait for it at exit
    never.set()  # the late reply changes nothing
    worker.join()
    assert running.exception() is not None


def test_an_exception_in_a_call_reaches_its_future():
    threads = RequestThreads(1, name="test")

    def fail() -> None:
        raise ValueError("bad reply")

    with pytest.raises(ValueError, match="bad reply"):
        threads.submit(fail).result()
