# SPDX-License-Identifier: BSD-3-Clause
"""Server CPU per request, or latency, of memcached builds side by side,
for the 2026-11-28 look at what the amortized LRU's probes cost.

The --cpu-cost workload (lru_cpu.py: one worker on CPU 1, 200,000 keys
of 500 B preloaded, 90% sets, Poisson from loadgen on CPU 0), one rate,
any number of binaries, run in a rotating order within each repetition.
Prints each run, then every side's paired ratio to the first side: the
geometric mean of the per-repetition ratios with a t-based 95% CI
(stats.paired_ratio_ci) of the server's CPU per request, or with
--latency of loadgen's p99 and mean (from the scheduled send time).

Usage, from bench/ with STAGEVAR_BUILD and STAGEVAR_LOADGEN set:
  python3 ../bench/results/2026-11-28-lru-probe-variants.py [--latency]
      [--memory MB] RATE REPS NAME:BINARY[:OPTION...] ...
e.g. stock:../build/stock/bin/memcached auto:../build/fork/bin/memcached:lru_amortized_budget_us=auto
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from stagevar_bench import lru_cpu, machine, memcache_client
from stagevar_bench.servers import LOOPBACK
from stagevar_bench.stats import paired_ratio_ci

DURATION_S = 2.0
SLICE_STATS = ("slices", "slices_yielded", "slices_over_budget", "time_us", "budget_now_us")


def one_run(binary: str, options: list[str], args: argparse.Namespace,
            seed: int) -> tuple[dict[str, float], dict[str, str]]:
    """The run's figures (CPU ns per request, p99 and mean us) and the
    server's slice counters."""
    with lru_cpu.server(Path(binary), args.memory, options, cpu=1) as server:
        assert server.proc is not None
        lru_cpu.preload(0, server.port)
        cpu0 = machine.proc_cpu_ns(server.proc.pid)
        report = lru_cpu.drive(0, server.port, args.rate, DURATION_S, seed)
        cpu1 = machine.proc_cpu_ns(server.proc.pid)
        stats = memcache_client.stats(LOOPBACK, server.port, "lru_amortized") if options else {}
    latency = report["latency_scheduled"]
    return {"cpu_ns": (cpu1 - cpu0) / lru_cpu.requests_in(report),
            "p99_us": latency["p99"] / 1e3, "mean_us": latency["mean"] / 1e3}, stats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--latency", action="store_true", help="compare p99 and mean, not CPU per request")
    p.add_argument("--memory", default="1024", help="-m in MB (default 1024: no evictions; 8 evicts)")
    p.add_argument("rate", type=float)
    p.add_argument("reps", type=int)
    p.add_argument("sides", nargs="+", metavar="NAME:BINARY[:OPTION...]")
    args = p.parse_args()
    sides = []
    for spec in args.sides:
        name, binary, *opts = spec.split(":")
        sides.append((name, binary, [a for o in opts for a in ("-o", o)]))
    figures = ("p99_us", "mean_us") if args.latency else ("cpu_ns",)
    values: dict[tuple[str, str], list[float]] = {}
    for rep in range(args.reps):
        for name, binary, options in sides[rep % len(sides):] + sides[:rep % len(sides)]:
            run, stats = one_run(binary, options, args, rep + 1)
            for f in figures:
                values.setdefault((name, f), []).append(run[f])
            print(f"rep {rep} {name}", " ".join(f"{f}={run[f]:.1f}" for f in figures),
                  " ".join(f"{k}={stats[k]}" for k in SLICE_STATS if k in stats), flush=True)
    base = sides[0][0]
    for name, _, _ in sides:
        for f in figures:
            v = values[(name, f)]
            r = paired_ratio_ci(v, values[(base, f)])
            print(f"{name} {f}: median {statistics.median(v):.1f}; / {base} x{r.value:.3f} [{r.low:.3f}, {r.high:.3f}]")


if __name__ == "__main__":
    main()
