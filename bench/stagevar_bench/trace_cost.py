# SPDX-License-Identifier: BSD-3-Clause
"""What stage tracing costs memcached, stock vs fork with tracing off,
with `-o stage_trace` (its default rate: one read in 256 of each worker)
and tracing every request, side by side in one run: (a) instructions
per request, (b) server CPU per request and latency under a fixed load,
(c) saturated throughput and latency (see trace_load.py).

A fifth side, not measured unless --sides names it, traces every Nth
socket read of a worker (`-o stage_trace_sample=N`, --sample, default
64), to see what another rate costs. Untraced reads take the untraced
path: no clock reads, a plain read(), no TX timestamp to read back from
the error queue.

(a) runs stock memcached, the fork with tracing off and the fork with
tracing on under `valgrind --tool=callgrind`, each answering the same
fixed request script on loopback, and prints instructions per request and
the ratios to stock. Instruction counts are repeatable whatever else the
machine is doing, unlike times on a noisy 2-core box.

Only the worker thread is counted (callgrind's --toggle-collect on
worker_libevent): the request path, event loop included, and nothing of
the timer-driven background threads. Each server answers the script twice
in two runs, N and 2N requests, and the difference cancels start-up and
shut-down: instructions/request = (I(2N) - I(N)) / N. Counts still differ a
little from run to run (a one-off event such as a slab page split lands in
one run or the other), so each side is measured --repeat times and the
median is reported with the range.

(c) saturates memcached -t 1 on one CPU with a pipelining closed-loop
client (pipeline_client.py) on another, so the worker, not the client,
is the limit, in one of two schedules (--schedule):

together (the default): stock and one other side run at the same time,
both pinned to the server CPU, and the client drives both through one
selector (each server its own connections, same shape). The scheduler
splits the CPU between the two workers, so whatever the machine does
(steal, other tenants, frequency) hits both alike within milliseconds,
and the ratio of their replies in the same window is the throughput
ratio. Each round starts both servers afresh, alternating which one
starts first and is served first, warms up (1 s) and measures one window; a
side gets --rounds rounds against stock. Windows within a round are not
independent, so the statistic is one ratio per round. Printed per side:
both servers' median throughput, the median of the per-round ratios with
a bootstrap 95% CI and their sd, each worker's share of the server CPU
(together near 100 %: a warning below 90 %), the client's CPU, and the
same for requests per second of each worker's own CPU time, then both
servers' batch round trip p50/p99 (a batch's send to its last reply:
in a closed loop, the pipeline's queueing) and the per-round ratios of
the p99s. With --sides
stock alone, stock runs against a second stock: the schedule's null
result. Caveat: the kernel turns RX timestamping on for every socket
(a static key) as soon as one socket asks for it, so next to a tracing
side stock's packets are stamped too; that machine-wide part (perf:
~0.4 % of the worker) is common to both servers and not in this ratio.

alternate: one server at a time, the sides alternating within every
round (ABCD ABCD ...), so slow drifts of the machine hit all of them
alike, and each side's throughput is compared with stock's of the same
round. It includes the machine-wide timestamping cost but its per-round
ratios spread by ~10 % on a shared machine. Printed per side: median
throughput, the median of the per-round ratios to stock with a
bootstrap 95% CI, the worker's and the client's CPU use (the worker
should be near 100 %, the client below), the batch round trip's p50/p99,
and the requests answered per second of the worker's CPU time with its
own per-round ratios (the worker's capacity, its idle and preempted time
left out).

    python -m stagevar_bench.trace_cost [--requests N] [--repeat R]
        [--rate N] [--duration S] [--cpus SERVER,CLIENT] [--sample N]
        [--schedule together|alternate] [--rounds R] [--seconds S]
        [--pipeline CONNS,BATCH,DEPTH] [--sides LIST]
        [--only callgrind|load|saturate]
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from stagevar_bench.memcache_client import read_until
from stagevar_bench.servers import LOOPBACK, TRACE_EVERY_REQUEST, MemcachedServer, build_binary
from stagevar_bench.stats import bootstrap_ci
from stagevar_bench.trace_load import (LoadSample, Pipeline, SaturatedPair, SaturatedSample,
                                       check_cpus, check_ready, run_load, run_saturated,
                                       run_saturated_pair)

VALGRIND_START_S = 60.0


@dataclass(frozen=True)
class Side:
    key: str        # its name on the command line (--sides)
    name: str
    variant: str
    options: tuple[str, ...]


SAMPLE_MAX = 1000000     # memcached's own limit for stage_trace_sample


SIDE_KEYS = ("stock", "off", "on", "every", "sampled")
DEFAULT_SIDES = ("stock", "off", "on", "every")
SCHEDULES = ("together", "alternate")
ROUNDS = {"together": 12, "alternate": 8}     # (c)'s default rounds per schedule
TOGETHER_BUSY_MIN = 0.90     # the two workers' summed share of the server CPU


def sides(sample: int, keys: Sequence[str] = DEFAULT_SIDES) -> tuple[Side, ...]:
    every = (
        Side("stock", "stock", "stock", ()),
        Side("off", "fork, tracing off", "fork", ()),
        Side("on", "fork, -o stage_trace", "fork", ("-o", "stage_trace")),
        Side("every", "fork, every request", "fork", ("-o", TRACE_EVERY_REQUEST)),
        Side("sampled", f"fork, trace 1 read in {sample}", "fork",
             ("-o", f"stage_trace,stage_trace_sample={sample}")),
    )
    return tuple(side for side in every if side.key in keys)


def parse_sides(text: str) -> tuple[str, ...]:
    """A comma list of SIDE_KEYS; stock is always measured (the ratios' base)."""
    keys = tuple(k.strip() for k in text.split(","))
    bad = [k for k in keys if k not in SIDE_KEYS]
    if bad:
        raise argparse.ArgumentTypeError(f"expected a list of {','.join(SIDE_KEYS)}, not '{text}'")
    return ("stock",) + tuple(k for k in keys if k != "stock")


def request_script(port: int, requests: int) -> None:
    """`requests` requests, one at a time: alternately a set and a get of it."""
    with socket.create_connection((LOOPBACK, port), timeout=60) as s:
        for i in range(requests // 2):
            key = b"key%d" % (i % 1000)
            s.sendall(b"set %s 0 0 32\r\n%s\r\n" % (key, b"v" * 32))
            read_until(s, b"STORED\r\n")
            s.sendall(b"get %s\r\n" % key)
            read_until(s, b"END\r\n")


def worker_instructions(side: Side, requests: int) -> int:
    """Instructions the worker thread ran for `requests` requests plus start and stop."""
    with tempfile.TemporaryDirectory(prefix="stagevar-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    "--toggle-collect=worker_libevent"]
        server = MemcachedServer(build_binary(side.variant, "memcached"),
                                 args=["-t", "1", "-c", str(valgrind_fd_limit()),
                                       *same_user(), *side.options],
                                 wrap=valgrind, start_timeout=VALGRIND_START_S)
        with server:
            request_script(server.port, requests)
        return callgrind_total(out)


def same_user() -> list[str]:
    """callgrind writes its profile at exit, as the user memcached runs as
    by then: keep it the user that created the file."""
    return ["-u", "root"] if os.geteuid() == 0 else []


def valgrind_fd_limit() -> int:
    """The open-files limit a program sees under valgrind, which keeps some
    descriptors for itself and refuses any other hard limit: memcached sets
    both limits to its maxconns (-c) and must ask for exactly this."""
    out = subprocess.run(["valgrind", "-q", "sh", "-c", "ulimit -Hn"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[-1])


def callgrind_total(path: Path) -> int:
    match = re.search(r"^(?:summary|totals):\s+(\d+)", path.read_text(), re.MULTILINE)
    if not match:
        raise RuntimeError(f"no instruction total in {path}")
    return int(match.group(1))


def per_request(side: Side, requests: int) -> float:
    return (worker_instructions(side, 2 * requests) - worker_instructions(side, requests)) / requests


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def spread(values: list[float]) -> str:
    return f"{median(values):9.1f} [{min(values):.1f} .. {max(values):.1f}]"


def instructions_part(all_sides: tuple[Side, ...], requests: int, repeat: int) -> None:
    print(f"(a) memcached instructions per request (callgrind, worker thread, "
          f"{requests} vs {2 * requests} requests, median of {repeat} [min .. max])")
    runs: dict[str, list[float]] = {side.name: [] for side in all_sides}
    for _ in range(repeat):
        for side in all_sides:
            runs[side.name].append(per_request(side, requests))
    stock = median(runs["stock"])
    for name, values in runs.items():
        ir = median(values)
        print(f"  {name:<26} {spread(values)}   ratio to stock {ir / stock:.4f} ({100 * (ir / stock - 1):+.2f}%)")


def load_part(all_sides: tuple[Side, ...], rate: int, duration: float, cpus: tuple[int, int],
              repeat: int) -> None:
    print(f"(b) memcached -t 1 on CPU {cpus[0]}, loadgen on CPU {cpus[1]}, {rate} req/s Poisson, "
          f"{duration:g} s, median of {repeat} [min .. max] (sides in random order each round)")
    runs: dict[str, list[LoadSample]] = {side.name: [] for side in all_sides}
    for _ in range(repeat):
        for side in random.sample(all_sides, len(all_sides)):
            binary = build_binary(side.variant, "memcached")
            runs[side.name].append(run_load(binary, side.options, cpus, rate, duration))
    stock = median([s.cpu_ns_per_request for s in runs["stock"]])
    print(f"  {'':<26} {'server CPU ns/request':>30} {'p50 µs':>22} {'p99 µs':>24}  CPU/request vs stock")
    for name, samples in runs.items():
        cpu = [s.cpu_ns_per_request for s in samples]
        p50 = [s.p50_ns / 1e3 for s in samples]
        p99 = [s.p99_ns / 1e3 for s in samples]
        ratio = median(cpu) / stock
        print(f"  {name:<26} {spread(cpu):>30} {spread(p50):>22} {spread(p99):>24}  "
              f"{ratio:.4f} ({100 * (ratio - 1):+.2f}%)")


def saturated_part(all_sides: tuple[Side, ...], rounds: int, seconds: float,
                   cpus: tuple[int, int], shape: Pipeline) -> None:
    print(f"(c) saturated: memcached -t 1 on CPU {cpus[0]}, pipelining client on CPU {cpus[1]} "
          f"({shape.connections} connections x {shape.depth} batches of {shape.batch} requests "
          f"in flight), {rounds} rounds of {seconds:g} s, sides alternating in every round")
    runs: dict[str, list[SaturatedSample]] = {side.name: [] for side in all_sides}
    for _ in range(rounds):
        for side in all_sides:
            binary = build_binary(side.variant, "memcached")
            runs[side.name].append(run_saturated(binary, side.options, cpus, seconds, shape))
    stock = runs["stock"]
    print(f"  {'':<26} {'req/s':>9}  {'vs stock: median of per-round ratios [95% CI]':<46} "
          f"{'worker CPU':>10} {'client CPU':>10} {'p50 ms':>7} {'p99 ms':>7}")
    for name, samples in runs.items():
        print(f"  {name:<26} {median([s.throughput for s in samples]):9.0f}  "
              f"{versus_stock(name, samples, stock, lambda s: s.throughput):<46} "
              f"{100 * median([s.worker_cpu for s in samples]):9.1f}% "
              f"{100 * median([s.client_cpu for s in samples]):9.1f}% "
              f"{1e3 * median([s.p50_s for s in samples]):7.2f} "
              f"{1e3 * median([s.p99_s for s in samples]):7.2f}")
    print(f"  {'':<26} {'req/worker-CPU-s':>16}  vs stock: median of per-round ratios [95% CI] "
          f"(the worker's own capacity: its idle and preempted time left out)")
    for name, samples in runs.items():
        per_cpu = [s.throughput / s.worker_cpu for s in samples]
        print(f"  {name:<26} {median(per_cpu):16.0f}  "
              f"{versus_stock(name, samples, stock, lambda s: s.throughput / s.worker_cpu)}")
    worker = median([s.worker_cpu for samples in runs.values() for s in samples])
    if worker < 0.95:
        print(f"  warning: the worker was busy only {100 * worker:.0f}% of the time: not saturated, "
              f"the ratios measure the client or the machine too")


def together_part(all_sides: tuple[Side, ...], rounds: int, seconds: float,
                  cpus: tuple[int, int], shape: Pipeline) -> None:
    print(f"(c) saturated, together: stock and one other side at a time, both memcached -t 1 on "
          f"CPU {cpus[0]}, one pipelining client on CPU {cpus[1]} (per server {shape.connections} "
          f"connections x {shape.depth} batches of {shape.batch} requests in flight), "
          f"{rounds} rounds of {seconds:g} s per side, the first-started server alternating")
    runs = together_runs(all_sides, rounds, seconds, cpus, shape)
    print(f"  {'':<26} {'req/s':>9} {'stock':>9}  {'vs stock: median of per-round ratios [95% CI]':<46} "
          f"{'sd':>6} {'worker CPU':>10} {'stock CPU':>9} {'client CPU':>10}")
    for name, pairs in runs.items():
        print(f"  {name:<26} {median([p.other.throughput for p in pairs]):9.0f} "
              f"{median([p.base.throughput for p in pairs]):9.0f}  "
              f"{ratio_ci([p.throughput_ratio for p in pairs]):<46} "
              f"{round_sd([p.throughput_ratio for p in pairs]):>6} "
              f"{100 * median([p.other.worker_cpu for p in pairs]):9.1f}% "
              f"{100 * median([p.base.worker_cpu for p in pairs]):8.1f}% "
              f"{100 * median([p.other.client_cpu for p in pairs]):9.1f}%")
    print(f"  {'':<26} {'req/worker-CPU-s':>19}  vs stock: median of per-round ratios [95% CI], sd "
          f"(the workers' own capacity: idle and preempted time left out)")
    for name, pairs in runs.items():
        print(f"  {name:<26} {median([p.other.throughput / p.other.worker_cpu for p in pairs]):9.0f} "
              f"{median([p.base.throughput / p.base.worker_cpu for p in pairs]):9.0f}  "
              f"{ratio_ci([p.capacity_ratio for p in pairs]):<46} "
              f"{round_sd([p.capacity_ratio for p in pairs]):>6}")
    print(f"  {'':<26} {'p50 ms':>9} {'p99 ms':>9}  batch round trip (stock's p50, p99), p99 vs stock: "
          f"median of per-round ratios [95% CI]")
    for name, pairs in runs.items():
        print(f"  {name:<26} {1e3 * median([p.other.p50_s for p in pairs]):9.2f} "
              f"{1e3 * median([p.other.p99_s for p in pairs]):9.2f}  "
              f"({1e3 * median([p.base.p50_s for p in pairs]):.2f}, "
              f"{1e3 * median([p.base.p99_s for p in pairs]):.2f})  "
              f"{ratio_ci([p.p99_ratio for p in pairs])}")
    for name, pairs in runs.items():
        busy = median([p.base.worker_cpu + p.other.worker_cpu for p in pairs])
        if busy < TOGETHER_BUSY_MIN:
            print(f"  warning: {name} and stock's workers together were busy only {100 * busy:.0f}% "
                  f"of the time: not saturated, the ratios measure the client or the machine too")


def together_runs(all_sides: tuple[Side, ...], rounds: int, seconds: float,
                  cpus: tuple[int, int], shape: Pipeline) -> dict[str, list[SaturatedPair]]:
    """`rounds` pairs of stock and each other side (stock and a second
    stock if there is none), by the other side's name."""
    stock = all_sides[0]
    base = (build_binary(stock.variant, "memcached"), stock.options)
    runs: dict[str, list[SaturatedPair]] = {}
    for side in [s for s in all_sides if s.key != "stock"] or [stock]:
        other = (build_binary(side.variant, "memcached"), side.options)
        name = side.name if side.key != "stock" else "stock (a second one)"
        runs[name] = [run_saturated_pair(base, other, cpus, seconds, shape, other_first=r % 2 == 1)
                      for r in range(rounds)]
    return runs


def ratio_ci(ratios: list[float]) -> str:
    """The median of per-round ratios with a bootstrap 95% CI over rounds."""
    ci = bootstrap_ci(ratios)
    return f"{ci.value:.4f} [{ci.low:.4f} .. {ci.high:.4f}] ({100 * (ci.value - 1):+.2f}%)"


def round_sd(ratios: list[float]) -> str:
    """The per-round ratios' standard deviation, in %."""
    return f"{100 * statistics.stdev(ratios):.2f}%" if len(ratios) > 1 else "-"


def versus_stock(name: str, samples: list[SaturatedSample], stock: list[SaturatedSample],
                 metric: Callable[[SaturatedSample], float]) -> str:
    """The median of the per-round ratios to stock's same round, with a
    bootstrap 95% CI."""
    if name == "stock":
        return "1"
    return ratio_ci([metric(s) / metric(base) for s, base in zip(samples, stock)])


def parse_cpus(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected SERVER,CLIENT CPU numbers, not '{text}'")
    return int(parts[0]), int(parts[1])


def parse_pipeline(text: str) -> Pipeline:
    parts = text.split(",")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected CONNS,BATCH,DEPTH positive numbers, not '{text}'")
    return Pipeline(*(int(p) for p in parts))


def main(argv: list[str] | None = None) -> int:
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument("--server", choices=("memcached", "httpd"), default="memcached")
    known, rest = server.parse_known_args(sys.argv[1:] if argv is None else argv)
    if known.server == "httpd":
        from stagevar_bench import trace_httpd
        return trace_httpd.main(rest)
    parser = argparse.ArgumentParser(prog="stagevar bench trace", description=__doc__.split("\n\n")[0],
                                     epilog="--server httpd: the httpd side (trace_httpd.py, its own "
                                            "options: --server httpd --help)")
    parser.add_argument("--requests", type=int, default=4000,
                        help="requests in the shorter run (default: 4000)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="measurements per side; the median is reported (default: 5)")
    parser.add_argument("--rate", type=int, default=20000,
                        help="(b) offered requests/s (default: 20000)")
    parser.add_argument("--duration", type=float, default=5.0,
                        help="(b) seconds of measurement per run (default: 5)")
    parser.add_argument("--cpus", type=parse_cpus, default=(1, 0),
                        help="(b) CPU for the server, CPU for loadgen (default: 1,0)")
    parser.add_argument("--sample", type=int, default=64,
                        help="the sampled side's stage_trace_sample (default: 64)")
    parser.add_argument("--schedule", choices=SCHEDULES, default="together",
                        help="(c) together: stock and each other side at the same time on the "
                             "server CPU, R rounds per side; alternate: one server at a time, "
                             "every side once per round (default: together)")
    parser.add_argument("--rounds", type=int,
                        help="(c) rounds: per side (together) or each running every side "
                             f"once (alternate) (default: {ROUNDS['together']} together, "
                             f"{ROUNDS['alternate']} alternate)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="(c) measured seconds per round and side (default: 3)")
    parser.add_argument("--pipeline", type=parse_pipeline, default=Pipeline(),
                        help="(c) client connections, requests per batch, batches in flight "
                             "per connection (default: 4,32,4)")
    parser.add_argument("--sides", type=parse_sides, default=DEFAULT_SIDES,
                        help="which of stock,off,on,every,sampled to measure; stock always is "
                             "(default: stock,off,on,every)")
    parser.add_argument("--only", choices=("callgrind", "load", "saturate"),
                        help="run one part only")
    args = parser.parse_args(rest)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    if args.requests < 100 or args.requests % 2:
        parser.error(f"--requests must be an even number >= 100, not {args.requests}")
    if args.rate <= 0 or args.duration <= 0:
        parser.error(f"--rate and --duration must be positive, not {args.rate} and {args.duration:g}")
    if not 1 <= args.sample <= SAMPLE_MAX:
        parser.error(f"--sample must be a number from 1 to {SAMPLE_MAX}, not {args.sample}")
    if args.rounds is None:
        args.rounds = ROUNDS[args.schedule]
    if args.rounds < 1 or args.seconds <= 0:
        parser.error(f"--rounds must be at least 1 and --seconds positive, "
                     f"not {args.rounds} and {args.seconds:g}")
    parts = [args.only] if args.only else ["callgrind", "load", "saturate"]
    if "callgrind" in parts and shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    if "load" in parts and (why := check_ready(args.cpus)):
        parser.error(why)
    if "saturate" in parts and (why := check_cpus(args.cpus)):
        parser.error(why)
    all_sides = sides(args.sample, args.sides)
    for side in all_sides:
        if not build_binary(side.variant, "memcached").exists():
            parser.error(f"{build_binary(side.variant, 'memcached')} is not built (run make)")

    if "callgrind" in parts:
        instructions_part(all_sides, args.requests, args.repeat)
    if "load" in parts:
        load_part(all_sides, args.rate, args.duration, args.cpus, args.repeat)
    if "saturate" in parts:
        saturate = together_part if args.schedule == "together" else saturated_part
        saturate(all_sides, args.rounds, args.seconds, args.cpus, args.pipeline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
