# SPDX-License-Identifier: BSD-3-Clause
"""stagevar bench lru --cpu-cost: what amortized LRU maintenance costs in
native CPU time per request, against stock memcached's worker and LRU
maintainer thread.

Each side is one server per condition and rate (`-t 1`, every thread on
--server-cpu, the hash table sized for the keys), filled by loadgen's
preload and then driven open-loop (Poisson) --runs times, for --duration
after a 0.5 s warm-up each; the cost of a drive is the server's CPU time
over it (every thread's schedstat time, ns resolution), divided by the
requests sent in it. The demo's workload: KEYS keys of VALUE_BYTES
bytes, 90% sets; a cache that holds every key (no evictions) and one of
8 MB (evicting). The sides' drives alternate, their order rotating each
repetition. The servers live through the cell so that a repetition is
a few seconds of drives, not a start and a preload each: this machine's
CPU per request wanders by 4-6% from one second to the next, so many
short alternating drives bound a ratio more tightly than a few long
ones in the same time (bench/results/2026-11-28-lru-cpu-alternate.md).
Printed per condition and rate: each side's median, and its ratio to
stock (Hodges-Lehmann) with the exact 95% CI, and paired: the
Hodges-Lehmann estimate of the repetitions' ratios with the exact
signed-rank 95% CI (the sides of a repetition run back to back, so
pairing them cancels most of the drift between repetitions; a drive
that a burst on the host slowed by 30-50% moves it by one rank).

callgrind (--callgrind) counts instructions instead: repeatable, but
valgrind slows the clock that time-driven code reads, so slices and
timers fire far more often per request than natively. This is the cost.
"""
from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from stagevar_bench import lru_cost, machine, ranks
from stagevar_bench.lru_cost import Side
from stagevar_bench.reproduce import hashpower_for
from stagevar_bench.servers import MemcachedServer, build_binary

KEYS = 200000
VALUE_BYTES = 500
MEMORY = {"no evictions": "1024", "evicting": "8"}
WARMUP_S = 0.5


def sides(budget: int) -> list[Side]:
    return lru_cost.sides([budget], "stock", lambda b: f"fork {b} us")


def server(binary: Path, memory: str, options: Sequence[str], cpu: int) -> MemcachedServer:
    """The workload's server: one worker, every thread on `cpu`, the hash
    table sized for KEYS so that it does not grow inside a drive."""
    return MemcachedServer(binary, args=["-t", "1", "-m", memory, "-o", f"hashpower={hashpower_for(KEYS)}",
                                         *options],
                           wrap=["taskset", "-c", str(cpu)])


def loadgen(cpu: int, port: int, extra: list[str]) -> dict:
    """loadgen's report of the workload's keys and mix, pinned to `cpu`."""
    return machine.run_loadgen(cpu, ["-p", str(port), "-c", "1", "--keys", str(KEYS),
                                     "--key-size", "20", "--value-size", str(VALUE_BYTES),
                                     "--get-ratio", "0.1", *extra])


def preload(cpu: int, port: int) -> None:
    """Every key set once: the cache full, or evicting."""
    loadgen(cpu, port, ["--preload", "-r", "1000", "-d", "0.01s"])


def drive(cpu: int, port: int, rate: float, duration_s: float, seed: int) -> dict:
    """The measured drive: Poisson at `rate` for `duration_s` after
    WARMUP_S of warm-up; loadgen's report."""
    return loadgen(cpu, port, ["-r", f"{rate:g}", "-a", "exp", "-d", f"{duration_s:g}s",
                               "-w", f"{WARMUP_S:g}s", "--seed", str(seed)])


def requests_in(report: dict) -> int:
    """Every request the server answered in a drive, its warm-up's too:
    the CPU read spans both."""
    counts = report["counts"]
    return counts.get("sent", 0) + counts.get("warmup_requests", 0)


def drive_cost(args: argparse.Namespace, srv: MemcachedServer, rate: float, seed: int) -> float:
    """ns of server CPU per request of one drive of `srv`."""
    assert srv.proc is not None
    cpu0 = machine.proc_cpu_ns(srv.proc.pid)
    report = drive(args.loadgen_cpu, srv.port, rate, args.duration, seed)
    cpu1 = machine.proc_cpu_ns(srv.proc.pid)
    requests = requests_in(report)
    if not requests:
        raise RuntimeError(f"loadgen sent nothing at {rate:g} req/s")
    return (cpu1 - cpu0) / requests


def measure_cell(args: argparse.Namespace, all_sides: list[Side], condition: str, rate: float,
                 values: dict[tuple[str, float, str], list[float]]) -> None:
    """Every side's server started and filled, then driven --runs times,
    the sides alternating in rotating order."""
    with ExitStack() as stack:
        servers = {side.name: stack.enter_context(
            server(build_binary(side.variant, "memcached"), MEMORY[condition], side.options, args.server_cpu))
            for side in all_sides}
        for srv in servers.values():
            preload(args.loadgen_cpu, srv.port)
        for rep in range(args.runs):
            shift = rep % len(all_sides)
            for side in all_sides[shift:] + all_sides[:shift]:
                ns = drive_cost(args, servers[side.name], rate, seed=rep + 1)
                values.setdefault((condition, rate, side.name), []).append(ns)
                print(f"  [{rep + 1}/{args.runs}] {condition:<13}{rate:>8g} req/s  {side.name:<12}"
                      f"{ns / 1e3:8.2f} us/request", flush=True)


def measure(args: argparse.Namespace) -> dict[tuple[str, float, str], list[float]]:
    """Every (condition, rate, side) --runs times."""
    all_sides = sides(args.budget)
    values: dict[tuple[str, float, str], list[float]] = {}
    for condition in MEMORY:
        for rate in args.rates:
            measure_cell(args, all_sides, condition, rate, values)
    return values


def table(values: dict[tuple[str, float, str], list[float]], budget: int, rates: list[float]) -> list[str]:
    names = [s.name for s in sides(budget)]
    lines = ["server CPU per request, us: median over runs; ratio to stock (Hodges-Lehmann) "
             "[exact 95% CI]; paired: Hodges-Lehmann of each repetition's ratio [exact signed-rank 95% CI]"]
    for condition in MEMORY:
        for rate in rates:
            base = values[(condition, rate, "stock")]
            parts = [f"stock {statistics.median(base) / 1e3:.2f}"]
            for name in names[1:]:
                mine = values[(condition, rate, name)]
                r = ranks.compare(base, mine)
                p = ranks.compare_paired(base, mine)
                parts.append(f"{name} {statistics.median(mine) / 1e3:.2f} x{r.ratio:.3f} "
                             f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}], paired x{p.ratio:.3f} [{p.ci[0]:.3f}, {p.ci[1]:.3f}]")
            lines.append(f"  {condition:<13}{rate:>8g} req/s ({len(base)} runs):  " + ";  ".join(parts))
    return lines


def run(args: argparse.Namespace) -> int:
    print(f"native CPU cost: memcached -t 1 on CPU {args.server_cpu}, loadgen on CPU {args.loadgen_cpu}, "
          f"{KEYS} keys of {VALUE_BYTES} B, 90% sets, Poisson, {args.duration:g} s per run, "
          f"{args.runs} runs per side; {machine.load_and_idle_text()}")
    values = measure(args)
    print("\n".join(table(values, args.budget, args.rates)))
    return 0
