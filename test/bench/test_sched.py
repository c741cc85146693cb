# SPDX-License-Identifier: BSD-3-Clause
"""Scheduler counters of a thread (sched.py), read from this process's
own threads: a busy thread's time on the CPU grows, a sleeping one's
voluntary switches do."""
from __future__ import annotations

import os
import threading
import time

from stagevar_bench.sched import ThreadSched, threads_sched


def named_thread(name: str, work: "callable[[], None]") -> threading.Thread:
    def body() -> None:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode(), 0, 0, 0)    # PR_SET_NAME: its /proc comm
        work()
    return threading.Thread(target=body, daemon=True)


def test_a_busy_threads_cpu_time_and_a_sleepers_switches() -> None:
    done = threading.Event()

    def spin() -> None:
        while not done.is_set():
            pass

    seen: dict[str, ThreadSched] = {}

    def sleep() -> None:
        for _ in range(20):
            time.sleep(0.005)
        seen["sleeper"] = threads_sched(os.getpid(), "sv-sleeper")   # as it ends

    busy, sleeper = named_thread("sv-busy", spin), named_thread("sv-sleeper", sleep)
    busy.start(), sleeper.start()
    try:
        sleeper.join()
        mid_busy = threads_sched(os.getpid(), "sv-busy")
        time.sleep(0.05)
        assert threads_sched(os.getpid(), "sv-busy").run_ns > mid_busy.run_ns
        assert seen["sleeper"].voluntary >= 10
    finally:
        done.set()
        busy.join()


def test_no_such_thread_is_all_zero() -> None:
    assert threads_sched(os.getpid(), "no-such-thread") == ThreadSched()


def test_wait_share() -> None:
    assert ThreadSched(run_ns=750, wait_ns=250).wait_share == 0.25
    assert ThreadSched().wait_share == 0.0
    assert (ThreadSched(10, 5, 3, 1) - ThreadSched(4, 1, 1, 0)) == ThreadSched(6, 4, 2, 1)
