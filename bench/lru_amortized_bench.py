#!/usr/bin/env python3
"""make bench-lru: the memcached fork's LRU maintainer thread versus
amortized maintenance (-o lru_amortized_budget_us), side by side.

Setup (the reference paper's low-throughput case on a 2-core machine):
memcached with -t 1 (or --threads) and all its threads on CPU 0, the
open-loop load generator on CPU 1; 90% gets / 10% sets, 20-byte keys,
50-byte values, more keys than fit in -m, so items are evicted and the
maintainer has segments to juggle. Both sides are the fork with
-o stage_trace, so `stats stages` gives each side's kernel_to_read (the
worker's wake-up delay) and tracing costs both the same:

    thread     -o stage_trace                         (the stock maintainer)
    amortized  -o stage_trace,lru_amortized_budget_us=N

1. saturation: the highest deterministic rate the thread side sustains
   (replies >= 99% of offered, nothing lost), by ramp and bisection;
2. for each arrival process and each load (fraction of saturation), runs
   alternate thread/amortized --runs times; each run is --duration long
   after `stats reset`. Printed per cell: mean, p50, p90, p99, p99.9 of the
   latency from each request's scheduled send (loadgen's
   latency_scheduled, in us) as the mean over runs with a 95% confidence
   interval (Student t), the kernel_to_read variance (us^2), and the
   amortized/thread ratio of the means of mean and p99.

Everything is measured in this one run; nothing is compared with figures
from elsewhere.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stagevar_bench.servers import LOOPBACK, REPO, MemcachedServer, build_binary  # noqa: E402

LOADGEN = Path(os.environ.get("STAGEVAR_LOADGEN", REPO / "bench" / "loadgen" / "loadgen"))
ARRIVALS = {"det": "det", "exp": "exp", "pareto": "pareto:cv2=4"}
QUANTILES = ("mean", "p50", "p90", "p99", "p999")
# Student t, two-sided 95%, by degrees of freedom
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


def stats(port: int, kind: str = "") -> dict[str, str]:
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        s.sendall(f"stats {kind}\r\n".encode())
        reply = b""
        while not reply.endswith(b"END\r\n"):
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("server closed the connection")
            reply += chunk
    return {p[1]: p[2] for p in (line.split(" ", 2) for line in reply.decode().splitlines()) if len(p) == 3}


def reset(port: int) -> None:
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        s.sendall(b"stats reset\r\n")
        if s.recv(64) != b"RESET\r\n":
            raise ConnectionError("stats reset refused")


def loadgen(args: argparse.Namespace, port: int, rate: float, arrival: str, preload: bool = False) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["taskset", "-c", str(args.loadgen_cpu), str(LOADGEN), "-p", str(port),
               "--cpus", str(args.loadgen_cpu), "-r", f"{rate:.0f}", "-a", arrival,
               "-d", f"{args.duration}s", "-w", "0.5s", "-c", "8", "--keys", str(args.keys),
               "--key-size", "20", "--value-size", "50", "--get-ratio", "0.9",
               "--quiet", "--json", out.name]
        if preload:
            cmd.append("--preload")
        subprocess.run(cmd, check=True, timeout=600)
        return json.load(open(out.name))


def sustained(r: dict[str, Any]) -> bool:
    c = r["counts"]
    return r["rates"]["achieved"] >= 0.99 * r["rates"]["offered"] and not (c["lost"] or c["errors"])


def saturation(args: argparse.Namespace, port: int) -> float:
    good, bad, rate = 0.0, 0.0, args.start
    while rate < 2e6:
        if not sustained(loadgen(args, port, rate, "det")):
            bad = rate
            break
        good, rate = rate, rate * 1.25
    for _ in range(3):
        mid = (good + bad) / 2
        if sustained(loadgen(args, port, mid, "det")):
            good = mid
        else:
            bad = mid
    return good


def one_run(args: argparse.Namespace, port: int, rate: float, arrival: str) -> dict[str, float]:
    reset(port)
    r = loadgen(args, port, rate, arrival)
    stages = stats(port, "stages")
    lat = r["latency_scheduled"]
    row = {q: lat[q] / 1e3 for q in QUANTILES}
    sd = float(stages.get("kernel_to_read:stddev_ns", "nan")) / 1e3
    row["k2r_var"] = sd * sd
    row["achieved"] = r["rates"]["achieved"]
    return row


def ci(values: list[float]) -> tuple[float, float]:
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, float("nan")
    return m, T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / len(values) ** 0.5


def report(cell: str, rows: dict[str, list[dict[str, float]]]) -> None:
    print(f"\n{cell}")
    print("  side        " + "".join(f"{q + ' (us)':>20}" for q in QUANTILES) + f"{'k2r var (us^2)':>20}")
    for side, runs in rows.items():
        line = f"  {side:<11} "
        for q in (*QUANTILES, "k2r_var"):
            m, h = ci([r[q] for r in runs])
            line += f"{m:>11.1f} ±{h:>7.1f}"
        print(line)
    t = {s: {q: statistics.fmean(r[q] for r in runs) for q in ("mean", "p99", "k2r_var")} for s, runs in rows.items()}
    if "thread" in t and "amortized" in t:
        print("  amortized/thread: mean %.3f  p99 %.3f  kernel_to_read variance %.3f" % tuple(
            t["amortized"][q] / t["thread"][q] if t["thread"][q] else float("nan") for q in ("mean", "p99", "k2r_var")))


def server(args: argparse.Namespace, options: str) -> MemcachedServer:
    binary = build_binary("fork", "memcached")
    return MemcachedServer(binary, args=["-t", str(args.threads), "-m", str(args.memory), "-o", options],
                           wrap=["taskset", "-c", str(args.server_cpu)])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=int, default=20, help="lru_amortized_budget_us (default 20)")
    p.add_argument("--threads", type=int, default=1, help="memcached -t (default 1)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--duration", type=float, default=3.0, help="seconds per run")
    p.add_argument("--loads", default="0.3,0.5,0.7,0.85", help="fractions of saturation")
    p.add_argument("--arrivals", default="det,exp,pareto", help=f"of {','.join(ARRIVALS)}")
    p.add_argument("--keys", type=int, default=400000)
    p.add_argument("--memory", type=int, default=16, help="memcached -m (MB)")
    p.add_argument("--start", type=float, default=10000, help="first rate of the saturation ramp")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--loadgen-cpu", type=int, default=1)
    args = p.parse_args()
    if not LOADGEN.exists():
        print(f"bench-lru: {LOADGEN} is not built (run make)", file=sys.stderr)
        return 1
    loads = [float(x) for x in args.loads.split(",")]
    arrivals = args.arrivals.split(",")
    if any(a not in ARRIVALS for a in arrivals):
        print(f"bench-lru: --arrivals takes {','.join(ARRIVALS)}, not '{args.arrivals}'", file=sys.stderr)
        return 1

    sides = {"thread": "stage_trace", "amortized": f"stage_trace,lru_amortized_budget_us={args.budget}"}
    servers = {name: server(args, opts).start() for name, opts in sides.items()}
    try:
        for s in servers.values():     # fill: every key once, then evictions
            loadgen(args, s.port, 20000, "det", preload=True)
        sat = saturation(args, servers["thread"].port)
        print(f"bench-lru: -t {args.threads}, server on CPU {args.server_cpu}, loadgen on CPU {args.loadgen_cpu}; "
              f"{args.keys} keys in -m {args.memory}; saturation (thread side, det) {sat:.0f} req/s; "
              f"{args.runs} runs of {args.duration:g} s per cell; budget {args.budget} us; "
              f"load average {Path('/proc/loadavg').read_text().split()[:3]}")
        for arrival in arrivals:
            for load in loads:
                rows: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
                for _ in range(args.runs):
                    for name, s in servers.items():
                        rows[name].append(one_run(args, s.port, load * sat, ARRIVALS[arrival]))
                report(f"{arrival} arrivals, {load:.0%} load ({load * sat:.0f} req/s)", rows)
        for name, s in servers.items():
            st = stats(s.port)
            am = stats(s.port, "lru_amortized")
            print(f"\n{name} (last run): evictions {st['evictions']} moves_to_cold {st['moves_to_cold']} "
                  f"moves_to_warm {st['moves_to_warm']} juggles {st.get('lru_maintainer_juggles')} "
                  f"bumps_dropped {st['lru_bumps_dropped']}"
                  + (f"; slices {am['slices']} over budget {am['slices_over_budget']} "
                     f"worst overrun {int(am['worst_overrun_ns']) / 1e3:.1f} us" if "slices" in am else ""))
    finally:
        for s in servers.values():
            s.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
