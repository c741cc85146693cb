# SPDX-License-Identifier: BSD-3-Clause
"""How busy one memcached worker is at each offered rate on the LRU grid's
set-up (issue 37, item 1): stock 1.6.45 -t 1 on CPU 1, loadgen (one
connection) on CPU 0, 200,000 keys of 500 B preloaded, 90% sets, Poisson,
evicting (-m 8) and holding every key (-m 256). For each rate: the
worker's and the maintainer's CPU share of the measured window, and the
latency loadgen saw. One server per memory size, preloaded once; rates
in random order, each twice.

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-29-lru-utilisation.py

A rate whose replies fall short of it (achieved) is past capacity.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from stagevar_bench import machine
from stagevar_bench.servers import MemcachedServer, build_binary

RATES = [20000, 40000, 80000, 120000, 160000, 200000, 240000, 320000, 400000, 480000, 560000, 640000, 720000,
         800000]
WORKLOAD = ["--keys", "200000", "--key-size", "20", "--value-size", "500", "--get-ratio", "0.1"]


def loadgen(port: int, rate: int, extra: list[str], seconds: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run(["taskset", "-c", "0", str(machine.loadgen_path()), "-p", str(port), "-r", str(rate),
                        "-d", f"{seconds}s", "-w", "0.5s", "-c", "1", *WORKLOAD, *extra, "--json", str(out)],
                       check=True, capture_output=True, timeout=60)
        return json.loads(out.read_text())


def main() -> int:
    rng = random.Random(29)
    for memory in ("8", "256"):
        with MemcachedServer(build_binary("stock", "memcached"), args=["-t", "1", "-m", memory],
                             wrap=["taskset", "-c", "1"]) as server:
            assert server.proc is not None
            loadgen(server.port, 20000, ["--preload"], 1.0)
            rates = RATES * 2
            rng.shuffle(rates)
            for rate in rates:
                before = machine.thread_cpu_s(server.proc.pid)
                r = loadgen(server.port, rate, [], 2.0)
                after = machine.thread_cpu_s(server.proc.pid)
                window = 2.5   # warm-up and measurement
                lat = r["latency_scheduled"]
                print(json.dumps({"memory_mb": int(memory), "rate": rate,
                                  "achieved": r["rates"].get("achieved"),
                                  "busy": {name: round((after[name] - before.get(name, 0)) / window, 4)
                                           for name in sorted(after)},
                                  "p50_us": lat["p50"] / 1e3, "p90_us": lat["p90"] / 1e3,
                                  "p99_us": lat["p99"] / 1e3, "mean_us": lat["mean"] / 1e3}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
