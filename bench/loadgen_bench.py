#!/usr/bin/env python3
"""make bench-loadgen: how fast and how precise is one loadgen thread?

Setup: stock memcached with one worker thread pinned to one CPU, one
loadgen thread pinned to another, on loopback (2-core machine: CPU 1 and
CPU 0). Then:

1. capacity: ramp the offered rate (deterministic arrivals, 8
   connections) up by 25% steps, then bisect, to the highest rate that is
   *sustained*: replies within the measurement at >= 99% of the offered
   rate, nothing lost, and sends on schedule (median schedule error at
   most 20 us). The first failing rate says who gave up: loadgen (sends
   fell behind) or the server (sends on time, replies not).
2. one loadgen thread against one memcached worker, each extrapolated to
   100% of its core: memcached's CPU time (/proc) at the sustained rate
   gives its capacity as rate / CPU; loadgen's loop is busy a fraction b
   of the time at half that rate (sending, reading, parsing; the rest is
   waiting), so it would saturate at about rate / b. Both extrapolations
   assume cost per request stays flat; b counts wall time, so time the
   thread spends preempted makes loadgen look slower, never faster.
3. precision: schedule error (actual - scheduled send) p50/p99 at 50% of
   the sustained rate, deterministic and exponential arrivals; and, for
   scale, the error a perfect sender would have on that CPU right now
   (a clock-reading loop's stalls: preemption, the hypervisor).

Every measurement is repeated (--repeats, default 3) and the median is
printed. The machine's load average is printed too: on a shared VM the
figures move with whatever else runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stagevar_bench.servers import REPO, MemcachedServer, build_binary  # noqa: E402

LOADGEN = Path(os.environ.get("STAGEVAR_LOADGEN", REPO / "bench" / "loadgen" / "loadgen"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args: argparse.Namespace, port: int, pid: int, rate: float, arrival: str) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cpu0 = cpu_seconds(pid)
        subprocess.run(["taskset", "-c", str(args.loadgen_cpu), str(LOADGEN), "-p", str(port),
                        "--cpus", str(args.loadgen_cpu), "-r", str(rate), "-a", arrival,
                        "-d", str(args.duration), "-w", "0.5", "-c", "8", "--quiet",
                        "--json", out.name], check=True, timeout=120)
        report = json.load(open(out.name))
    report["server_cpu"] = (cpu_seconds(pid) - cpu0) / (args.duration + 0.5)
    return report


def verdict(r: dict[str, Any]) -> str:
    """'ok', or who could not keep up."""
    c = r["counts"]
    if r["schedule_error"]["p50"] > 20_000:
        return "loadgen"
    if r["rates"]["achieved"] < 0.99 * r["rates"]["offered"] or c["lost"] or c["errors"] or c["unexpected"]:
        return "server"
    return "ok"


def capacity(args: argparse.Namespace, port: int, pid: int) -> tuple[float, str, dict[str, Any]]:
    good, bad, why, best = 0.0, 0.0, "", {}
    rate = args.start
    while rate < 5e6:
        r = run(args, port, pid, rate, "det")
        v = verdict(r)
        if v != "ok":
            bad, why = rate, v
            break
        good, best, rate = rate, r, rate * 1.25
    for _ in range(3):
        mid = (good + bad) / 2
        r = run(args, port, pid, mid, "det")
        v = verdict(r)
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


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--start", type=float, default=10000)
    p.add_argument("--loadgen-cpu", type=int, default=0)
    p.add_argument("--server-cpu", type=int, default=1)
    args = p.parse_args()
    if not LOADGEN.exists():
        print(f"bench-loadgen: {LOADGEN} is not built (run make)", file=sys.stderr)
        return 1
    print(f"load average before: {loadavg()}")
    floor = machine_floor(args.loadgen_cpu)
    print(f"machine floor on CPU {args.loadgen_cpu}: a perfect sender's schedule error would be "
          f"p50 {floor[0] / 1e3:.2f} us, p99 {floor[1] / 1e3:.2f} us (preemption, hypervisor)", flush=True)
    caps, whys, busies, srv_cpu, errs = [], [], [], [], {"det": [], "exp": []}
    with MemcachedServer(build_binary("stock", "memcached"), args=["-t", "1"]) as mc:
        assert mc.proc is not None
        subprocess.run(["taskset", "-a", "-pc", str(args.server_cpu), str(mc.proc.pid)],
                       check=True, stdout=subprocess.DEVNULL)
        for i in range(args.repeats):
            cap, why, best = capacity(args, mc.port, mc.proc.pid)
            caps.append(cap)
            whys.append(why)
            srv_cpu.append(best.get("server_cpu", 0))
            half = run(args, mc.port, mc.proc.pid, cap / 2, "det")
            busies.append(half["cpu"]["busy_fraction"])
            errs["det"].append((half["schedule_error"]["p50"], half["schedule_error"]["p99"]))
            ex = run(args, mc.port, mc.proc.pid, cap / 2, "exp")
            errs["exp"].append((ex["schedule_error"]["p50"], ex["schedule_error"]["p99"]))
            print(f"repeat {i + 1}: sustained {cap:.0f} req/s (next step failed: {why}), "
                  f"memcached CPU {srv_cpu[-1]:.2f}, loadgen busy {busies[-1]:.1%} at {cap / 2:.0f} req/s, "
                  f"schedule error det p50/p99 {errs['det'][-1][0] / 1e3:.2f}/{errs['det'][-1][1] / 1e3:.2f} us, "
                  f"exp {errs['exp'][-1][0] / 1e3:.2f}/{errs['exp'][-1][1] / 1e3:.2f} us", flush=True)
    med = statistics.median
    cap = med(caps)
    lg_cap = med(c / 2 / b for c, b in zip(caps, busies) if b > 0)
    mc_cap = med(c / u for c, u in zip(caps, srv_cpu) if u > 0)
    print(f"load average after: {loadavg()}")
    print(f"median sustained rate, 1 loadgen thread -> 1 memcached worker: {cap:.0f} req/s "
          f"(next step failed because of: {', '.join(whys)})")
    print(f"memcached worker: {med(srv_cpu):.2f} CPU at that rate, so it would serve about "
          f"{mc_cap:.0f} req/s at 100%")
    print(f"loadgen thread: busy {med(busies):.1%} at half that rate, so about {lg_cap:.0f} req/s at 100%")
    print(f"loadgen thread / memcached worker: {lg_cap / mc_cap:.2f}x (goal >= 2x)")
    for a in ("det", "exp"):
        print(f"median schedule error at 50% ({a}): p50 {med(e[0] for e in errs[a]) / 1e3:.2f} us, "
              f"p99 {med(e[1] for e in errs[a]) / 1e3:.2f} us (goal p99 <= 5 us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
