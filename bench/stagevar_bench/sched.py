# SPDX-License-Identifier: BSD-3-Clause
"""What the scheduler did to a server's worker threads: the mechanism
behind a latency ratio, and far less noisy than a p99.

Per thread, from /proc/PID/task/TID/schedstat (time on a CPU, time
runnable but waiting for one) and .../status (voluntary and involuntary
context switches). The share of a worker's runnable time spent waiting
behind other threads is what amortized LRU maintenance and pinning set
out to remove: a maintainer thread that preempts a worker shows up as
run-queue delay and involuntary switches of the worker.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ThreadSched:
    """Counters of one or more threads, summed."""
    run_ns: int = 0           # on a CPU
    wait_ns: int = 0          # runnable, waiting for a CPU (run-queue delay)
    voluntary: int = 0        # switches away to wait (for events, a lock)
    involuntary: int = 0      # switches away while runnable: preempted

    def __add__(self, other: "ThreadSched") -> "ThreadSched":
        return ThreadSched(self.run_ns + other.run_ns, self.wait_ns + other.wait_ns,
                           self.voluntary + other.voluntary, self.involuntary + other.involuntary)

    def __sub__(self, other: "ThreadSched") -> "ThreadSched":
        return ThreadSched(self.run_ns - other.run_ns, self.wait_ns - other.wait_ns,
                           self.voluntary - other.voluntary, self.involuntary - other.involuntary)

    @property
    def wait_share(self) -> float:
        """Of the time the threads were runnable, the share spent waiting
        for a CPU (0 when they never ran)."""
        runnable = self.run_ns + self.wait_ns
        return self.wait_ns / runnable if runnable else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"run_ns": self.run_ns, "wait_ns": self.wait_ns, "voluntary": self.voluntary,
                "involuntary": self.involuntary, "wait_share": self.wait_share}


def task_sched(task: Path) -> ThreadSched:
    """One thread's counters; OSError if it has gone."""
    run, wait = (int(x) for x in (task / "schedstat").read_text().split()[:2])
    switches = {}
    for line in (task / "status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            switches[key] = int(value)
    return ThreadSched(run, wait, switches.get("voluntary_ctxt_switches", 0),
                       switches.get("nonvoluntary_ctxt_switches", 0))


def threads_sched(pid: int, name: str) -> ThreadSched:
    """The counters of every thread of `pid` named `name` (memcached's
    workers: mc-worker), summed. Threads that exit meanwhile are left out."""
    total = ThreadSched()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().strip() == name:
                total = total + task_sched(task)
        except (OSError, ValueError):
            pass
    return total


@dataclass(frozen=True)
class SchedStat:
    """A thread's /proc schedstat, or several threads' summed."""
    run_ns: int = 0           # on a CPU
    wait_ns: int = 0          # runnable, waiting for a CPU (run-queue delay)
    timeslices: int = 0       # times it was put on a CPU

    def __add__(self, other: "SchedStat") -> "SchedStat":
        return SchedStat(self.run_ns + other.run_ns, self.wait_ns + other.wait_ns,
                         self.timeslices + other.timeslices)


def schedstat_by_name(pid: int) -> dict[str, tuple[int, SchedStat]]:
    """{thread name: (how many threads, their schedstat summed)} of every
    thread of `pid` (memcached: mc-worker, mc-lrumaint, ...). Threads that
    exit meanwhile are left out; OSError if the process has gone."""
    out: dict[str, tuple[int, SchedStat]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            run, wait, slices = (int(x) for x in (task / "schedstat").read_text().split()[:3])
        except (OSError, ValueError):
            continue
        n, total = out.get(name, (0, SchedStat()))
        out[name] = (n + 1, total + SchedStat(run, wait, slices))
    return out
