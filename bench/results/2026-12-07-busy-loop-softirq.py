# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, the network's softirq thread on the server's core
(issue 45's busy-loop bar). Declared in 2026-12-07-busy-loop-softirq.md;
the runs are 2026-12-07-busy-loop-sched.py's (same sides, workload and
recording), read for `ksoftirqd/1`.

One JSON line a run: loadgen's mean and p99; ksoftirqd/1's wake-ups a
second, its wake-up latency (sched_waking aimed at CPU 1 to its
switch-in; n, mean, p50, p90, p99), that wait summed (ms a second), the
task whose switch-out let it in, and its share of CPU 1; and the same
wake-up figures as 2026-12-07-busy-loop-sched.py for the worker.

    python3 bench/results/2026-12-07-busy-loop-softirq.py ROUNDS OUT.jsonl
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

SOFTIRQ = "ksoftirqd/1"


def parse(text: str) -> dict[str, object]:
    """The worker's wake-up figures, then ksoftirqd/1's on CPU 1."""
    waits_us: list[float] = []
    let_in_by: dict[str, int] = {}
    woke_at = since = None
    run_s = 0.0
    first = last = 0.0
    for line in text.splitlines():
        m = sched.SWITCH.search(line)
        if m:
            ts, prev, nxt = float(m[1]), m[2], m[4]
            first, last = first or ts, ts
            if prev == SOFTIRQ and since is not None:
                run_s += ts - since
                since = None
            if nxt == SOFTIRQ:
                since = ts
                if woke_at is not None:
                    waits_us.append((ts - woke_at) * 1e6)
                    let_in_by[prev] = let_in_by.get(prev, 0) + 1
                    woke_at = None
            continue
        m = sched.WAKING.search(line)
        if m and m[2] == SOFTIRQ and woke_at is None:
            woke_at = float(m[1])
    seconds = last - first
    per_s = (lambda x: round(x / seconds, 1)) if seconds else (lambda x: None)
    return {**sched.parse(text),
            "softirq_wakes_per_s": per_s(len(waits_us)),
            "softirq_wakeup_us": sched.dist(waits_us),
            "softirq_wait_ms_per_s": per_s(sum(waits_us) / 1e3),
            "softirq_let_in_by": let_in_by,
            "softirq_cpu_share": round(run_s / seconds, 4) if seconds else None}


if __name__ == "__main__":
    sys.exit(sched.run(sys.argv, parse))
