# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, does auto's thread treat the worker as stock's
maintainer does? (issue 38). From the scheduler's own events.

Per round, stock and the fork with `lru_amortized_budget_us=auto` in
turn (order alternating): a busy loop on CPU 1, the server `-t 1 -m 8`
on CPU 1, loadgen on CPU 0 at 20k req/s Poisson on the demo's workload;
after 3 s (preload and warm-up) `perf sched record` takes 2 s. Printed
per run: loadgen's mean latency; the worker's wake-up latency (its
sched_waking to its switch-in) by the task on CPU 1 when it woke, as
(count, mean us, median us); every thread's runs on CPU 1 (count,
median us, share of the CPU); the wake-ups aimed at CPU 1 per thread.

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-29-lru-auto-busy-sched.py [ROUNDS]
"""
from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stagevar_bench import machine
from stagevar_bench.servers import MemcachedServer, build_binary

_spec = importlib.util.spec_from_file_location(
    "lru_mechanism", Path(__file__).with_name("2026-11-29-lru-mechanism.py"))
assert _spec is not None and _spec.loader is not None
mech = importlib.util.module_from_spec(_spec)
sys.modules["lru_mechanism"] = mech
_spec.loader.exec_module(mech)

SIDES = {"stock": ("stock", []), "auto": ("fork", ["-o", "lru_amortized_budget_us=auto"])}


def parse(text: str) -> dict[str, Any]:
    wake: dict[str, list[float]] = {}
    runs: dict[str, list[float]] = {}
    wakes: dict[str, int] = {}
    running, under = "", ""
    woke_at: float | None = None
    since: float | None = None
    first = last = 0.0
    for line in text.splitlines():
        m = mech.SWITCH.search(line)
        if m:
            ts, prev, nxt = float(m[1]), m[2], m[5]
            first, last = (first or ts), ts
            if since is not None:
                runs.setdefault(prev, []).append((ts - since) * 1e6)
            since = ts
            if nxt == mech.WORKER and woke_at is not None:
                wake.setdefault(under, []).append((ts - woke_at) * 1e6)
                woke_at = None
            running = nxt
            continue
        m = mech.WAKEUP.search(line)
        if m:
            wakes[m[2]] = wakes.get(m[2], 0) + 1
            if m[2] == mech.WORKER:
                woke_at, under = float(m[1]), running
    secs = last - first
    return {"seconds": round(secs, 3),
            "worker_wakeup_us_by_task_on_cpu": {k: (len(v), round(statistics.fmean(v), 1),
                                                    round(statistics.median(v), 1))
                                                for k, v in wake.items() if len(v) >= 10},
            "runs": {k: (len(v), round(statistics.median(v), 1), round(sum(v) / 1e6 / secs, 3))
                     for k, v in runs.items() if k.startswith(("mc-", "python"))},
            "wakeups": {k: v for k, v in wakes.items() if k.startswith("mc-")}}


def one(side: str) -> dict[str, Any]:
    variant, extra = SIDES[side]
    hog = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", "while 1: pass"])
    try:
        with MemcachedServer(build_binary(variant, "memcached"), args=["-t", "1", "-m", "8", *extra],
                             wrap=["taskset", "-c", "1"]) as server, tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "loadgen.json")
            gen = subprocess.Popen(["taskset", "-c", "0", str(machine.loadgen_path()), "-p", str(server.port),
                                    "-r", "20000", "-d", "3s", "-w", "2s", "-c", "1", *mech.WORKLOAD,
                                    "--preload", "--json", report],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(3.0)
            data = os.path.join(tmp, "perf.data")
            subprocess.run(["perf", "sched", "record", "-a", "-o", data, "--", "sleep", "2"],
                           check=True, capture_output=True, timeout=30)
            gen.wait(timeout=30)
            with open(report) as f:
                latency = json.load(f)["latency_scheduled"]
            text = subprocess.run(["perf", "script", "-i", data], check=True, capture_output=True,
                                  text=True, timeout=120).stdout
    finally:
        hog.kill()
        hog.wait()
    return {"side": side, "mean_us": round(latency["mean"] / 1000, 1), **parse(text)}


def main(argv: list[str]) -> int:
    rounds = int(argv[1]) if len(argv) > 1 else 3
    mech.ensure_tracefs()
    for r in range(rounds):
        for side in (("stock", "auto") if r % 2 == 0 else ("auto", "stock")):
            print(json.dumps({"round": r, **one(side)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
