# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, whether a thread that wakes every millisecond on
the server's core is what stock's maintainer gives the worker (issue 45's
busy-loop bar). Declared in 2026-12-07-busy-loop-waker.md; the sides,
workload, busy loop and run are 2026-12-07-busy-loop-sched.py's, no perf.

A side "NAME+waker" is NAME with a second process on CPU 1 that sleeps
1 ms at a time for the whole run (stock's maintainer, with work to do,
sleeps its floor of 1 ms). One JSON line a run: loadgen's mean and p99.

    python3 bench/results/2026-12-07-busy-loop-waker.py ROUNDS OUT.jsonl
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "busy_loop_sched", Path(__file__).with_name("2026-12-07-busy-loop-sched.py"))
assert _spec is not None and _spec.loader is not None
sched = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sched)

SIDES = ["stock", "no_lru_maintainer", "no_lru_maintainer+waker", "hot0", "hot0+waker"]
# Bounded like the busy loop: it ends by itself well after a run's 8 s.
WAKER = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: time.sleep(0.001)\n"


def one(side: str, tmp: Path) -> dict[str, object]:
    base, _, waker = side.partition("+")
    sleeper = subprocess.Popen(["taskset", "-c", "1", "python3", "-c", WAKER]) if waker else None
    try:
        with sched.serving(base, tmp) as (gen, report):
            gen.wait(timeout=60)
    finally:
        if sleeper:
            sleeper.kill()
            sleeper.wait()
    return {"side": side, **sched.latency_us(report)}


if __name__ == "__main__":
    sys.exit(sched.rounds(sys.argv, one, sides=SIDES))
