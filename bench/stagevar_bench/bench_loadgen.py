# SPDX-License-Identifier: BSD-3-Clause
"""make bench-loadgen: how fast and how precise is one loadgen thread?

One loadgen thread pinned to one CPU (--loadgen-cpu, default 0), a server
pinned to another (--server-cpu, default 1), loopback, 8 connections,
gets only (every key missing: the cheapest request for the server, so the
hardest comparison for loadgen). Then:

1. one memcached worker's capacity: stock memcached -t 1. Ramp the
   offered rate (deterministic arrivals) by 25% steps, then bisect, to the
   highest *sustained* rate: replies within the measurement >= 99% of
   offered, nothing lost or failed, and sends on schedule (median schedule
   error <= 20 us; a failing rate is tried twice). If memcached gave up
   first, that rate is its capacity; if loadgen did, memcached's capacity
   is extrapolated from its CPU time
   (/proc) at that rate: rate / CPU. Whichever is higher is used (per
   request a busier server is cheaper, so the extrapolation understates).
2. one loadgen thread's capacity: the same search against stub-server,
   a server that costs almost nothing (it answers every get with END, all
   replies of one read in one send, and polls without sleeping, as a
   saturated server would). There loadgen gives up first: that rate is
   what one loadgen thread sustains.
3. the ratio: loadgen thread / memcached worker (goal >= 1.1x), and the
   most any loadgen making the same system calls could reach: memcached's
   CPU per request at its sustained rate over loadgen's *system* CPU per
   request at its capacity (on loopback a send() also runs the
   receiver's TCP input, so that kernel work is the floor of a request's
   cost on either side, whatever user space does).
4. precision: the schedule error (the clock read just before the send()
   that carried a request, minus its scheduled time) p50/p99 at 50% of
   loadgen's capacity, deterministic and Poisson arrivals, against the
   stub; and, for scale, the error a *perfect* sender would have on the
   loadgen CPU right now (a clock-reading loop's stalls).

With --baseline OTHER_LOADGEN, steps 2 and 4 are also run with that
binary, alternating with the current one in every repeat, and the ratios
current / baseline are printed. Every step is repeated (--repeats) and
medians are printed, with the load average before and after: on a shared
VM the figures move with whatever else runs.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from stagevar_bench.machine import load_and_idle_text, loadavg_text, loadgen_path, proc_user_sys_s
from stagevar_bench.servers import (REPO, MemcachedServer, build_binary, free_port,
                                    stop_process, wait_for_port)

LOADGEN = loadgen_path()
STUB = Path(os.environ.get("STAGEVAR_STUB_SERVER", REPO / "bench" / "loadgen" / "stub-server"))
STEP = 1.25


class Target:
    """A pinned server on loopback: its port and the pid whose CPU counts."""

    def __init__(self, name: str, port: int, pid: int) -> None:
        self.name, self.port, self.pid = name, port, pid


def run(args: argparse.Namespace, loadgen: Path, target: Target, rate: float, arrival: str) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        start = time.monotonic()
        proc = subprocess.Popen(["taskset", "-c", str(args.loadgen_cpu), str(loadgen), "-p", str(target.port),
                                 "--cpus", str(args.loadgen_cpu), "-r", f"{rate:.0f}", "-a", arrival,
                                 "-d", str(args.duration), "-w", str(args.warmup), "-c", "8",
                                 "--get-ratio", "1", "--quiet", "--json", out.name])
        try:
            # The server's CPU inside the measurement phase only (connecting,
            # warm-up and the wait for late replies are left out).
            cpu = server_cpu_between(target.pid, start + args.warmup + 0.1 * args.duration,
                                     start + args.warmup + 0.9 * args.duration)
            if proc.wait(timeout=120) != 0:
                raise subprocess.CalledProcessError(proc.returncode, str(loadgen))
        finally:
            stop_process(proc)
        report: dict[str, Any] = json.load(open(out.name))
    report["server_cpu"], report["server_sys"] = cpu
    return report


def server_cpu_between(pid: int, t0: float, t1: float) -> tuple[float, float]:
    """(total, system) CPU of `pid` from monotonic time t0 to t1, in cores."""
    time.sleep(max(0.0, t0 - time.monotonic()))
    user0, sys0, a = *proc_user_sys_s(pid), time.monotonic()
    time.sleep(max(0.0, t1 - time.monotonic()))
    user1, sys1, b = *proc_user_sys_s(pid), time.monotonic()
    return (user1 - user0 + sys1 - sys0) / (b - a), (sys1 - sys0) / (b - a)


def loadgen_sys_us(r: dict[str, Any]) -> float:
    """Loadgen's system CPU per request sent in the measurement, us."""
    sent = r["rates"]["sent"] * r["rates"]["window_s"]
    return r["cpu"]["measurement_sys_s"] / sent * 1e6 if sent else 0.0


def verdict(r: dict[str, Any]) -> str:
    """'ok', or who could not keep up."""
    c = r["counts"]
    if r["schedule_error"]["p50"] > 20_000:
        return "loadgen"
    if r["rates"]["achieved"] < 0.99 * r["rates"]["offered"] or c["lost"] or c["errors"] or c["unexpected"]:
        return "server"
    return "ok"


def try_rate(measure: Callable[[float], dict[str, Any]], rate: float) -> tuple[str, dict[str, Any]]:
    """verdict() of a run at `rate`; a failure is retried once, so one
    burst of preemption on a shared machine does not end a search."""
    r = measure(rate)
    v = verdict(r)
    if v != "ok":
        r = measure(rate)
        v = verdict(r)
    return v, r


def capacity(measure: Callable[[float], dict[str, Any]], start: float) -> tuple[float, str, dict[str, Any]]:
    """Highest sustained rate (ramp by STEP from `start`, then bisect 3
    times), who gave up at the first failing rate, and the best report."""
    good, bad, why, best = 0.0, 0.0, "", {}
    rate = start
    while rate < 5e6:
        v, r = try_rate(measure, rate)
        if v != "ok":
            bad, why = rate, v
            break
        good, best, rate = rate, r, rate * STEP
    if good == 0:
        return 0.0, why, r
    for _ in range(3):
        mid = (good + bad) / 2
        v, r = try_rate(measure, mid)
        if v == "ok":
            good, best = mid, r
        else:
            bad, why = mid, v
    return good, why, best


def machine_floor(cpu: int, seconds: float = 2.0) -> tuple[float, float]:
    """Schedule error (p50, p99, ns) of a perfect sender on `cpu`.

    A thread that only reads the clock records every gap over 2 us (it
    was preempted, or the hypervisor took the CPU); a send due inside a
    gap goes out at its end. Sends due every 10 us over the trace give the
    error no sender on this CPU can beat right now."""
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        gaps, clock = [], time.perf_counter_ns
        start = prev = clock()
        end = start + int(seconds * 1e9)
        while prev < end:
            now = clock()
            if now - prev > 2000:
                gaps.append((prev, now))
            prev = now
    finally:
        os.sched_setaffinity(0, old)
    late, gi = [], 0
    for due in range(start, end, 10_000):
        while gi < len(gaps) and gaps[gi][1] <= due:
            gi += 1
        late.append(gaps[gi][1] - due if gi < len(gaps) and gaps[gi][0] < due else 0)
    late.sort()
    return late[len(late) // 2], late[int(len(late) * 0.99)]


class StubServer:
    """stub-server pinned to `cpu`; use as a context manager."""

    def __init__(self, cpu: int, seconds: int) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(["taskset", "-c", str(cpu), str(STUB), "-p", str(self.port),
                                      "--seconds", str(seconds)])

    def __enter__(self) -> "StubServer":
        wait_for_port(self.port, self.proc, 10)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_process(self.proc)


def memcached_capacity(args: argparse.Namespace) -> list[tuple[float, str, float, float]]:
    """Per repeat: (capacity req/s, who gave up, memcached CPU at the
    sustained rate, memcached's system CPU per request there in us)."""
    out = []
    with MemcachedServer(build_binary("stock", "memcached"), args=["-t", "1"],
                         wrap=["taskset", "-c", str(args.server_cpu)]) as mc:
        assert mc.proc is not None
        target = Target("memcached", mc.port, mc.proc.pid)
        start = args.start
        for i in range(args.repeats):
            rate, why, best = capacity(lambda r: run(args, LOADGEN, target, r, "det"), start)
            cpu, sys_cpu = best.get("server_cpu", 0.0), best.get("server_sys", 0.0)
            cap = max(rate, rate / cpu if cpu > 0 else 0.0, 1.0)
            out.append((cap, why, cpu, sys_cpu / rate * 1e6 if rate else 0.0))
            print(f"memcached repeat {i + 1}: sustained {rate:.0f} req/s (next step failed: {why}), "
                  f"memcached CPU {cpu:.2f} there ({sys_cpu:.2f} system), so one worker serves about "
                  f"{cap:.0f} req/s", flush=True)
            start = max(args.start, rate / STEP ** 3)
    return out


def loadgen_side(args: argparse.Namespace, loadgen: Path, target: Target, start: float) -> dict[str, Any]:
    """One repeat of steps 2 and 4 for one loadgen binary."""
    rate, why, best = capacity(lambda r: run(args, loadgen, target, r, "det"), start)
    res: dict[str, Any] = {"cap": rate, "why": why, "stub_cpu": best.get("server_cpu", 0.0),
                           "sys_us": loadgen_sys_us(best) if best else 0.0}
    for a in ("det", "exp"):
        # Not even --start was sustained: say so, and measure at half of it.
        half = run(args, loadgen, target, (rate or args.start) / 2, a)
        res[a] = (half["schedule_error"]["p50"], half["schedule_error"]["p99"])
        res[a + "_busy"] = half["cpu"]["busy_fraction"]
    return res


def describe(name: str, r: dict[str, Any]) -> str:
    return (f"{name}: sustained {r['cap']:.0f} req/s (next step failed: {r['why']}; stub CPU "
            f"{r['stub_cpu']:.2f}; loadgen system CPU {r['sys_us']:.2f} us/request there); "
            f"at half: schedule error det p50/p99 {r['det'][0] / 1e3:.2f}/{r['det'][1] / 1e3:.2f} us, "
            f"exp {r['exp'][0] / 1e3:.2f}/{r['exp'][1] / 1e3:.2f} us")


def summary(name: str, runs: list[dict[str, Any]], mc_cap: float, mc_sys_us: float,
            floor99: float) -> dict[str, float]:
    med = statistics.median
    s = {"cap": med(r["cap"] for r in runs), "sys_us": med(r["sys_us"] for r in runs)}
    for a in ("det", "exp"):
        s[a + "50"] = med(r[a][0] for r in runs)
        s[a + "99"] = med(r[a][1] for r in runs)
    print(f"{name}: one thread sustains {s['cap']:.0f} req/s against the stub "
          f"(next step failed because of: {', '.join(r['why'] for r in runs)})")
    print(f"{name}: loadgen thread / memcached worker: {s['cap'] / mc_cap:.2f}x (goal >= 1.1x)"
          + (" (a search failed at its first rate: lower --start)" if min(r["cap"] for r in runs) == 0 else ""))
    mc_us = 1e6 / mc_cap
    print(f"{name}: CPU per request: memcached worker {mc_us:.2f} us ({mc_sys_us:.2f} us system), "
          f"loadgen thread {1e6 / max(s['cap'], 1):.2f} us ({s['sys_us']:.2f} us system): a loadgen "
          f"with no user-space cost at all could reach {mc_us / max(s['sys_us'], 1e-9):.2f}x")
    for a in ("det", "exp"):
        print(f"{name}: schedule error at 50% ({a}): p50 {s[a + '50'] / 1e3:.2f} us, "
              f"p99 {s[a + '99'] / 1e3:.2f} us (goal p99 <= the machine floor's p99 + 10 us = "
              f"{floor99 / 1e3 + 10:.2f} us)")
    return s


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--peers" in argv:
        # make bench-loadgen BENCH_ARGS=--peers: the comparison with mutilate
        # and wrk2 (stagevar bench peers), with the rest of the options.
        from stagevar_bench import bench_peers
        return bench_peers.main([a for a in argv if a != "--peers"])
    p = argparse.ArgumentParser(prog="stagevar bench loadgen", description=__doc__.split("\n\n")[0],
                                epilog="--peers: run stagevar bench peers instead, with the other options")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--duration", type=float, default=1.0, help="measurement per run, s (default 1)")
    p.add_argument("--warmup", type=float, default=0.3, help="warm-up per run, s (default 0.3)")
    p.add_argument("--start", type=float, default=20000, help="first rate of a search (default 20000)")
    p.add_argument("--loadgen-cpu", type=int, default=0)
    p.add_argument("--server-cpu", type=int, default=1)
    p.add_argument("--baseline", type=Path, help="another loadgen binary to measure alongside")
    args = p.parse_args(argv)
    # Killed, still stop the servers (the with blocks): never leave one behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for path in [LOADGEN, STUB] + ([args.baseline] if args.baseline else []):
        if not path.exists():
            print(f"bench-loadgen: {path} does not exist (run make)", file=sys.stderr)
            return 1
    if args.repeats < 1 or args.duration <= 0 or args.warmup < 0 or args.start <= 0:
        print("bench-loadgen: --repeats, --duration and --start must be positive", file=sys.stderr)
        return 2
    print(f"load average before: {load_and_idle_text()}")
    floor = machine_floor(args.loadgen_cpu)
    print(f"machine floor on CPU {args.loadgen_cpu}: a perfect sender's schedule error would be "
          f"p50 {floor[0] / 1e3:.2f} us, p99 {floor[1] / 1e3:.2f} us (preemption, hypervisor)", flush=True)
    mc = memcached_capacity(args)
    mc_cap = statistics.median(m[0] for m in mc)
    mc_sys_us = statistics.median(m[3] for m in mc)
    sides = {"current": LOADGEN, **({"baseline": args.baseline} if args.baseline else {})}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in sides}
    with StubServer(args.server_cpu, seconds=3600) as stub:
        target = Target("stub", stub.port, stub.proc.pid)
        for i in range(args.repeats):
            for name, binary in sides.items():
                prev = runs[name][-1]["cap"] if runs[name] else 0.0
                runs[name].append(loadgen_side(args, binary, target, max(args.start, prev / STEP ** 3)))
                print(f"repeat {i + 1}, {describe(name, runs[name][-1])}", flush=True)
    end_floor = machine_floor(args.loadgen_cpu)
    print(f"machine floor on CPU {args.loadgen_cpu} at the end: p50 {end_floor[0] / 1e3:.2f} us, "
          f"p99 {end_floor[1] / 1e3:.2f} us")
    print(f"load average after: {loadavg_text()}")
    print(f"memcached worker (-t 1, gets of missing keys): about {mc_cap:.0f} req/s at 100% of a core "
          f"(median of {args.repeats}; who gave up: {', '.join(m[1] for m in mc)})")
    floor99 = max(floor[1], end_floor[1])
    s = {name: summary(name, runs[name], mc_cap, mc_sys_us, floor99) for name in sides}
    if "baseline" in s:
        c, b = s["current"], s["baseline"]
        print(f"current / baseline: capacity {c['cap'] / max(b['cap'], 1):.2f}x; schedule error p99 det "
              f"{c['det99'] / max(b['det99'], 1):.2f}x, exp {c['exp99'] / max(b['exp99'], 1):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
