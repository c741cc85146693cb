# SPDX-License-Identifier: BSD-3-Clause
"""Per-thread server CPU and LRU maintenance counters over one drive of
the --cpu-cost workload, stock against the fork with auto, for the
2026-11-28 look at where the fork's extra CPU went with a full cache.

Each run: one worker on CPU 1, 200,000 keys of 500 B preloaded, then a
4-s Poisson drive (after 0.5 s of warm-up) from loadgen on CPU 0. Prints
the server's CPU per request, each thread's CPU in ms (schedstat, the
drive only), and the drive's change in the slice counters ("stats
lru_amortized") and in lru_maintainer_juggles, moves_to_cold and
evictions.

Usage, from bench/ with STAGEVAR_BUILD and STAGEVAR_LOADGEN set:
  python3 results/2026-11-28-lru-turns.py RATE MEMORY_MB RUNS
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from stagevar_bench import memcache_client
from stagevar_bench.lru_cpu import KEYS, WARMUP_S, loadgen, requests_in
from stagevar_bench.reproduce import hashpower_for
from stagevar_bench.servers import LOOPBACK, MemcachedServer, build_binary

SIDES = (("stock", "stock", ()), ("auto", "fork", ("-o", "lru_amortized_budget_us=auto")))
SLICE_COUNTERS = ("slices", "slices_yielded", "time_us", "items_moved")
GENERAL_COUNTERS = ("lru_maintainer_juggles", "moves_to_cold", "evictions")


def thread_cpu_ns(pid: int) -> dict[str, int]:
    """{"name/tid": CPU ns} for every thread of `pid`."""
    cpu = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        task = Path(f"/proc/{pid}/task/{tid}")
        cpu[f"{(task / 'comm').read_text().strip()}/{tid}"] = int((task / "schedstat").read_text().split()[0])
    return cpu


def counters(port: int, lru: bool) -> dict[str, int]:
    stats = memcache_client.stats(LOOPBACK, port)
    values = {k: int(stats[k]) for k in GENERAL_COUNTERS}
    if lru:
        slices = memcache_client.stats(LOOPBACK, port, "lru_amortized")
        values.update({k: int(slices[k]) for k in SLICE_COUNTERS})
    return values


def one_run(variant: str, options: tuple[str, ...], rate: float, memory: str, seed: int) -> str:
    server = MemcachedServer(build_binary(variant, "memcached"),
                             args=["-t", "1", "-m", memory, "-o", f"hashpower={hashpower_for(KEYS)}", *options],
                             wrap=["taskset", "-c", "1"])
    with server:
        assert server.proc is not None
        loadgen(0, server.port, ["--preload", "-r", "1000", "-d", "0.01s"])
        before, cpu0 = counters(server.port, bool(options)), thread_cpu_ns(server.proc.pid)
        report = loadgen(0, server.port, ["-r", f"{rate:g}", "-a", "exp", "-d", "4s",
                                          "-w", f"{WARMUP_S:g}s", "--seed", str(seed)])
        cpu1, after = thread_cpu_ns(server.proc.pid), counters(server.port, bool(options))
    busy = {name: (ns - cpu0.get(name, 0)) / 1e6 for name, ns in cpu1.items() if ns - cpu0.get(name, 0) > 1e5}
    total_ns = sum(ns - cpu0.get(name, 0) for name, ns in cpu1.items())
    threads = " ".join(f"{name.split('/')[0]}={ms:.1f}ms" for name, ms in busy.items())
    changes = " ".join(f"{k}={after[k] - before[k]}" for k in after)
    return f"{total_ns / requests_in(report):.0f} ns/request  {threads}  {changes}"


def main() -> None:
    rate, memory, runs = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for run in range(runs):
        for name, variant, options in SIDES:
            print(f"run {run} {name:<6}", one_run(variant, options, rate, memory, run + 1), flush=True)


if __name__ == "__main__":
    main()
