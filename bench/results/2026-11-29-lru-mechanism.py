# SPDX-License-Identifier: BSD-3-Clause
"""How stock's LRU maintainer thread delays the worker, at each load of
the LRU grid (issue 37, item 2), from the scheduler's own events.

For each memory size and load: a fresh server (stock, and the fork with
budget 10 for contrast) pinned to CPU 1, preloaded, driven by loadgen on
CPU 0 (Poisson); for 1 s in the middle of the run `perf sched record`
takes every sched_switch and sched_waking (CPU 1's switches, and the
wake-ups aimed at it, which loopback's receive path issues from CPU 0).
From them:

- the worker's wake-up latency (its sched_waking to its switch-in), split
  by whether mc-lrumaint held CPU 1 when the worker woke;
- the worker's preemptions (switched out while runnable), by whom, and
  how long it then waited to run again;
- mc-lrumaint's run lengths (switch-in to switch-out) and its CPU share.

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-29-lru-mechanism.py [ROUNDS]
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from stagevar_bench import machine
from stagevar_bench.servers import MemcachedServer, build_binary

LOADS = {8: [200000, 410000, 545000, 610000], 256: [135000, 270000, 360000, 405000]}
WORKLOAD = ["--keys", "200000", "--key-size", "20", "--value-size", "500", "--get-ratio", "0.1"]
SIDES = {"stock": ("stock", []), "b10": ("fork", ["-o", "lru_amortized_budget_us=10"])}
MAINTAINER = "mc-lrumaint"
WORKER = "mc-worker"
SWITCH = re.compile(r"\[001\]\s+(\d+\.\d+):\s+sched:sched_switch:\s+prev_comm=(.+?) prev_pid=(\d+) .*?prev_state=(\S+)"
                    r" ==> next_comm=(.+?) next_pid=(\d+)")
WAKEUP = re.compile(r"\s(\d+\.\d+):\s+sched:sched_waking:\s+comm=(.+?) pid=(\d+) .*target_cpu=0*1\b")


@dataclass
class Timeline:
    wake_us: dict[str, list[float]] = field(default_factory=lambda: {"maintainer on CPU": [], "not": []})
    preempted_by: dict[str, int] = field(default_factory=dict)
    preempted_wait_us: list[float] = field(default_factory=list)
    maintainer_runs_us: list[float] = field(default_factory=list)
    seconds: float = 0.0


def parse(text: str) -> Timeline:
    """Walk CPU 1's switches and wake-ups in time order."""
    t = Timeline()
    running, woke_at, woke_under, maint_in, preempted_at = "", None, "", None, None
    first = last = None
    for line in text.splitlines():
        m = SWITCH.search(line)
        if m:
            ts, prev, state, nxt = float(m[1]), m[2], m[4], m[5]
            first = ts if first is None else first
            last = ts
            if prev == WORKER and state.startswith("R"):
                t.preempted_by[nxt] = t.preempted_by.get(nxt, 0) + 1
                preempted_at = ts
            if prev == MAINTAINER and maint_in is not None:
                t.maintainer_runs_us.append((ts - maint_in) * 1e6)
                maint_in = None
            if nxt == MAINTAINER:
                maint_in = ts
            if nxt == WORKER and woke_at is not None:
                t.wake_us[woke_under].append((ts - woke_at) * 1e6)
                woke_at = None
            if nxt == WORKER and preempted_at is not None:
                t.preempted_wait_us.append((ts - preempted_at) * 1e6)
                preempted_at = None
            running = nxt
            continue
        m = WAKEUP.search(line)
        if m and m[2] == WORKER:
            woke_at = float(m[1])
            woke_under = "maintainer on CPU" if running == MAINTAINER else "not"
    t.seconds = (last - first) if first is not None and last is not None else 0.0
    return t


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summary(t: Timeline) -> dict[str, object]:
    def dist(v: list[float]) -> dict[str, object]:
        return {"n": len(v), "p50": quantile(v, 0.5), "p90": quantile(v, 0.9), "p99": quantile(v, 0.99),
                "mean": statistics.fmean(v) if v else None}
    return {"seconds": round(t.seconds, 3),
            "worker_wakeup_us": {k: dist(v) for k, v in t.wake_us.items()},
            "worker_preempted_by": t.preempted_by,
            "worker_preempted_wait_us": dist(t.preempted_wait_us),
            "maintainer_runs_us": dist(t.maintainer_runs_us),
            "maintainer_cpu_share": round(sum(t.maintainer_runs_us) / 1e6 / t.seconds, 4) if t.seconds else None}


def ensure_tracefs() -> None:
    if not Path("/sys/kernel/tracing/events").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)


def one(memory: int, load: int, side: str) -> dict[str, object]:
    variant, extra = SIDES[side]
    with MemcachedServer(build_binary(variant, "memcached"), args=["-t", "1", "-m", str(memory), *extra],
                         wrap=["taskset", "-c", "1"]) as server, tempfile.TemporaryDirectory() as tmp:
        cmd = ["taskset", "-c", "0", str(machine.loadgen_path()), "-p", str(server.port), "-r", str(load),
               "-d", "2.5s", "-w", "0.5s", "-c", "1", *WORKLOAD, "--preload"]
        gen = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2.0)     # preload (~0.5 s) and warm-up done
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "sched", "record", "-a", "-o", data, "--", "sleep", "1"],
                       check=True, capture_output=True, timeout=30)
        gen.wait(timeout=30)
        text = subprocess.run(["perf", "script", "-i", data], check=True, capture_output=True, text=True,
                              timeout=120).stdout
    return {"memory_mb": memory, "load": load, "side": side, **summary(parse(text))}


def main(argv: list[str]) -> int:
    rounds = int(argv[1]) if len(argv) > 1 else 2
    ensure_tracefs()
    for r in range(rounds):
        for memory, loads in LOADS.items():
            for load in loads:
                for side in SIDES:
                    print(json.dumps({"round": r, **one(memory, load, side)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
