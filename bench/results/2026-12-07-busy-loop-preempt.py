# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, where the worker loses its time: its waits after
being switched out while runnable (issue 45's busy-loop bar). Declared
in 2026-12-07-busy-loop-preempt.md; the runs are 2026-12-07-busy-loop-
sched.py's (same sides, workload and recording), read for preemptions.

One JSON line a run: loadgen's mean and p99; the worker's switch-outs
while runnable (state R) a second; the wait from each to its next
switch-in (n, mean, p50, p90, p99); the worker's runnable wait a second
(ms); which task's switch-out ended those waits; and the same wake-up
figures as 2026-12-07-busy-loop-sched.py.

    python3 bench/results/2026-12-07-busy-loop-preempt.py ROUNDS OUT.jsonl
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "busy_loop_sched", Path(__file__).with_name("2026-12-07-busy-loop-sched.py"))
assert _spec is not None and _spec.loader is not None
sched = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sched)


def parse(text: str) -> dict[str, object]:
    """The wake-up figures, then the worker's preemptions on CPU 1."""
    waits_us: list[float] = []
    ended_by: dict[str, int] = {}
    preempted_at = None
    first = last = 0.0
    for line in text.splitlines():
        m = sched.SWITCH.search(line)
        if not m:
            continue
        ts, prev, state, nxt = float(m[1]), m[2], m[3], m[4]
        first, last = first or ts, ts
        if prev == sched.WORKER and state.startswith("R"):
            preempted_at = ts
        elif nxt == sched.WORKER and preempted_at is not None:
            waits_us.append((ts - preempted_at) * 1e6)
            ended_by[prev] = ended_by.get(prev, 0) + 1
            preempted_at = None
    seconds = last - first
    return {**sched.parse(text),
            "preemptions_per_s": round(len(waits_us) / seconds, 1) if seconds else None,
            "preempted_wait_us": sched.dist(waits_us),
            "preempted_wait_ms_per_s": round(sum(waits_us) / 1e3 / seconds, 1) if seconds else None,
            "preempted_wait_ended_by": ended_by}


if __name__ == "__main__":
    sys.exit(sched.run(sys.argv, parse))
