# SPDX-License-Identifier: BSD-3-Clause
"""Per-thread server CPU and LRU maintenance counters over one drive of
the --cpu-cost workload, stock against the fork with auto, for the
2026-11-28 look at where the fork's extra CPU went with a full cache.

Each run: one worker on CPU 1, 200,000 keys of 500 B preloaded, then a
4-s Poisson drive (after 0.5 s of warm-up) from loadgen on CPU 0. Prints
the server's CPU per request, the worker's and the maintainer thread's
CPU in ms (schedstat, the drive only), and the drive's change in the slice counters ("stats
lru_amortized") and in lru_maintainer_juggles, moves_to_cold and
evictions.

Usage, from bench/ with STAGEVAR_BUILD and STAGEVAR_LOADGEN set:
  python3 results/2026-11-28-lru-turns.py RATE MEMORY_MB RUNS
"""
from __future__ import annotations

import sys

from stagevar_bench import lru_cpu, machine, memcache_client
from stagevar_bench.servers import LOOPBACK, build_binary

SIDES = (("stock", "stock", ()), ("auto", "fork", ("-o", "lru_amortized_budget_us=auto")))
THREADS = ("mc-worker", "mc-lrumaint")
DURATION_S = 4.0
SLICE_COUNTERS = ("slices", "slices_yielded", "time_us", "items_moved")
GENERAL_COUNTERS = ("lru_maintainer_juggles", "moves_to_cold", "evictions")


def counters(port: int, lru: bool) -> dict[str, int]:
    stats = memcache_client.stats(LOOPBACK, port)
    values = {k: int(stats[k]) for k in GENERAL_COUNTERS}
    if lru:
        slices = memcache_client.stats(LOOPBACK, port, "lru_amortized")
        values.update({k: int(slices[k]) for k in SLICE_COUNTERS})
    return values


def cpu_ns(pid: int) -> dict[str, int]:
    """The server's CPU, all threads and THREADS each, in ns."""
    return {"all": machine.proc_cpu_ns(pid), **{t: machine.proc_cpu_ns(pid, t) for t in THREADS}}


def one_run(variant: str, options: tuple[str, ...], rate: float, memory: str, seed: int) -> str:
    with lru_cpu.server(build_binary(variant, "memcached"), memory, options, cpu=1) as server:
        assert server.proc is not None
        lru_cpu.preload(0, server.port)
        before, cpu0 = counters(server.port, bool(options)), cpu_ns(server.proc.pid)
        report = lru_cpu.drive(0, server.port, rate, DURATION_S, seed)
        cpu1, after = cpu_ns(server.proc.pid), counters(server.port, bool(options))
    per_request = (cpu1["all"] - cpu0["all"]) / lru_cpu.requests_in(report)
    threads = " ".join(f"{t}={(cpu1[t] - cpu0[t]) / 1e6:.1f}ms" for t in THREADS)
    changes = " ".join(f"{k}={after[k] - before[k]}" for k in after)
    return f"{per_request:.0f} ns/request  {threads}  {changes}"


def main() -> None:
    rate, memory, runs = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for run in range(runs):
        for name, variant, options in SIDES:
            print(f"run {run} {name:<6}", one_run(variant, options, rate, memory, run + 1), flush=True)


if __name__ == "__main__":
    main()
