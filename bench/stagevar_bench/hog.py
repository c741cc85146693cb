# SPDX-License-Identifier: BSD-3-Clause
"""The shared-CPU condition: a bounded CPU hog on the server's cores.

The amortized LRU knob exists for a worker that shares its core with
other work (in the paper, the LRU maintainer thread and other tenants).
A hog makes that condition reproducible: one process per CPU of the
server's set, pinned there, busy for `duty` percent of every 10 ms period
and asleep for the rest (at 100 it never sleeps: a plain busy loop, the
worst neighbour CFS knows). Each process stops by itself after its time
limit, and `CpuHog` kills it when the run ends, whichever comes first.

Where the hog sits for the scheduler (`group`): "server" starts it in the
bench's session, beside the server, so CFS weighs it against each server
thread as a peer; "own" starts it in a session of its own, which autogroup
(kernel.sched_autogroup_enabled) makes a task group apart from the
server's, as systemd's cgroups place a neighbouring service: CFS first
shares the CPU between the groups, then within each. The amortized LRU
knob loses more to a neighbour in its own group (bench/results/
2026-11-27-lru-hog-groups.md).
"""
from __future__ import annotations

import subprocess
import sys
from types import TracebackType

from stagevar_bench import machine

PERIOD_S = 0.010
GROUPS = ("server", "own")

# Busy for duty * PERIOD_S, asleep for the rest, until the deadline.
LOOP = """
import sys, time
duty, period, end = float(sys.argv[1]) / 100, float(sys.argv[2]), time.monotonic() + float(sys.argv[3])
now = time.monotonic()
while now < end:
    stop = now + duty * period
    while now < stop:
        now = time.monotonic()
    if duty < 1:
        time.sleep((1 - duty) * period)
    now = time.monotonic()
"""


def duty_error(duty: float) -> str | None:
    """Why `duty` is not a hog's duty cycle, or None if it is one."""
    if 0 <= duty <= 100:
        return None
    return f"hog duty must be a percentage from 0 to 100, not {duty:g}"


def group_error(group: str) -> str | None:
    """Why `group` is not where a hog can sit, or None if it is."""
    if group in GROUPS:
        return None
    return f"hog group must be {' or '.join(GROUPS)}, not {group!r}"


class CpuHog:
    """`with CpuHog(cpus, duty, limit_s, group) as hog:` one hog per CPU of
    `cpus` (a taskset list) while the block runs, in the scheduling
    `group` (see above); `hog.cpu_s` is the CPU time they took, read when
    they stop. Duty 0 starts nothing."""

    def __init__(self, cpus: str, duty: float, limit_s: float, group: str = "server") -> None:
        error = duty_error(duty) or group_error(group)
        if error:
            raise ValueError(error)
        self.cpus = machine.parse_cpu_list(cpus)
        self.duty = duty
        self.limit_s = limit_s
        self.group = group
        self.procs: list[subprocess.Popen[bytes]] = []
        self.cpu_s = 0.0

    def __enter__(self) -> "CpuHog":
        if self.duty > 0:
            for cpu in self.cpus:
                self.procs.append(subprocess.Popen(
                    ["taskset", "-c", str(cpu), sys.executable, "-c", LOOP, f"{self.duty:g}",
                     f"{PERIOD_S:g}", f"{self.limit_s:g}"], start_new_session=self.group == "own"))
        return self

    def __exit__(self, typ: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        for p in self.procs:
            self.cpu_s += machine.proc_cpu_s(p.pid)
            p.kill()
        for p in self.procs:
            p.wait()

    def describe(self) -> dict[str, float | str]:
        return {"duty": self.duty, "cpus": ",".join(map(str, self.cpus)), "period_s": PERIOD_S,
                "group": self.group, "cpu_s": self.cpu_s}
