# SPDX-License-Identifier: BSD-3-Clause
"""Figures for bench/results/2026-11-26-loadgen-wait-capacity.md (issue 20).

Stock memcached -t 1 -U 0 on CPU 1, loadgen (one thread, default options
but the rate) on CPU 0, loopback. Each named loadgen binary runs at each
rate in turn, runs interleaved (A B A B ...) so a busy spell of the
shared VM hits them alike; the machine floor (a perfect sender's
schedule error on CPU 0, bench_loadgen.machine_floor) is taken for 1 s
just before and just after every run. Run from the worktree under the
benchmark lock:

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-26-loadgen-wait-capacity.py \\
        --loadgen new=bench/loadgen/loadgen --loadgen old=/tmp/loadgen-main \\
        --rates 5000,20000,90000 --repeats 5 [-- EXTRA LOADGEN ARGS]

One line per run; then, per binary and rate, the medians.

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-26-loadgen-wait-capacity.py \
        --capacity --loadgen new=bench/loadgen/loadgen --loadgen old=/tmp/loadgen-main --repeats 5

measures capacity as `make bench-loadgen` does (its search, its runs:
8 connections, gets of missing keys, deterministic arrivals), but in
pairs: each repeat searches memcached's capacity (driven by the first
binary, as make bench-loadgen drives it with the current one) and then,
right after, each binary's capacity against the stub, so the ratio is
taken within minutes on a machine whose speed drifts by tens of percent
over an hour. Medians of the per-repeat ratios at the end.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from stagevar_bench import bench_loadgen as bl
from stagevar_bench.bench_loadgen import machine_floor
from stagevar_bench.servers import MemcachedServer, build_binary, free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
MEMCACHED = Path(os.environ.get("STAGEVAR_BUILD", ROOT / "build")) / "stock/bin/memcached"


def run(binary: str, port: int, rate: int, extra: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(["taskset", "-c", "0", binary, "-p", str(port), "-r", str(rate),
                        "-d", "4", "-w", "1", "--cpus", "0", "--json", f.name, "--quiet", *extra],
                       check=True, timeout=60)
        return json.load(open(f.name))


def figures(rep: dict) -> dict:
    c, cpu, th = rep["counts"], rep["cpu"], rep["cpu"]["threads"][0]
    us = lambda stage, q: rep[stage][q] / 1e3
    own = rep.get("loop_lateness", {}).get("p99", float("nan")) / 1e3
    perfect = rep.get("perfect_sender", {}).get("p99", float("nan")) / 1e3
    return {"err50": us("schedule_error", "p50"), "err99": us("schedule_error", "p99"),
            "own99": own, "perfect99": perfect,
            "lat50": us("latency_scheduled", "p50"), "lat99": us("latency_scheduled", "p99"),
            "read50": us("latency_read", "p50"), "delay50": us("client_delay", "p50"),
            "delay99": us("client_delay", "p99"),
            "cpu_us": (cpu["measurement_user_s"] + cpu["measurement_sys_s"]) / max(c["completed"], 1) * 1e6,
            "busy": cpu["busy_fraction"] * 100, "margin": th["spin_margin_us"],
            "guard": th.get("read_guard_us", float("nan")),
            "lost": c["lost"] + c["timeouts"] + c["errors"] + c["unexpected"],
            "done": c["completed"], "sched": c["scheduled"], "loop": c["loop_timed"]}


def line(name: str, rate: int, before: float, after: float, f: dict) -> str:
    return (f"{name} rate {rate}: floor p99 before {before:.2f} after {after:.2f} us | sched_err p50 "
            f"{f['err50']:.2f} p99 {f['err99']:.2f} us | loop's own p99 {f['own99']:.2f} us | loadgen's "
            f"perfect sender p99 {f['perfect99']:.2f} us | lat p50 {f['lat50']:.1f} p99 {f['lat99']:.1f} us"
            f" | read p50 {f['read50']:.1f} us | client_delay p50 {f['delay50']:.2f} p99 {f['delay99']:.2f} us"
            f" | cpu/req {f['cpu_us']:.2f} us | busy {f['busy']:.1f}% | margin {f['margin']:.0f} us"
            f" | guard {f['guard']:.1f} us | completed {f['done']}/{f['sched']} lost+failed {f['lost']}"
            f" loop_timed {f['loop']}")


def capacities(binaries: dict, repeats: int) -> None:
    """Paired capacity searches, as make bench-loadgen's (see the docstring)."""
    args = argparse.Namespace(loadgen_cpu=0, server_cpu=1, duration=1.0, warmup=0.3, start=20000.0)
    first = Path(next(iter(binaries.values())))
    ratios: dict = {name: [] for name in binaries}
    caps: dict = {name: [] for name in binaries}
    mcs = []
    with open("/proc/loadavg") as f:
        print("load average before:", f.read().strip(), flush=True)
    for i in range(repeats):
        with MemcachedServer(build_binary("stock", "memcached"), args=["-t", "1"],
                             wrap=["taskset", "-c", "1"]) as mc:
            target = bl.Target("memcached", mc.port, mc.proc.pid)
            rate, why, best = bl.capacity(lambda r: bl.run(args, first, target, r, "det"), args.start)
        cpu = best.get("server_cpu", 0.0)
        mc_cap = max(rate, rate / cpu if cpu > 0 else 0.0, 1.0)
        mcs.append(mc_cap)
        print(f"repeat {i + 1}: memcached sustained {rate:.0f} req/s (next step failed: {why}), CPU {cpu:.2f} "
              f"there: one worker serves about {mc_cap:.0f} req/s", flush=True)
        with bl.StubServer(1, seconds=3600) as stub:
            target = bl.Target("stub", stub.port, stub.proc.pid)
            for name, binary in binaries.items():
                cap, why, best = bl.capacity(lambda r: bl.run(args, Path(binary), target, r, "det"), args.start)
                sys_us = bl.loadgen_sys_us(best) if best else 0.0
                caps[name].append(cap)
                ratios[name].append(cap / mc_cap)
                print(f"repeat {i + 1}: {name} sustains {cap:.0f} req/s against the stub (next step failed: "
                      f"{why}; system CPU {sys_us:.2f} us/request, busy {best.get('cpu', {}).get('busy_fraction', 0):.2f}"
                      f"): {cap / mc_cap:.2f}x the memcached worker", flush=True)
    with open("/proc/loadavg") as f:
        print("load average after:", f.read().strip(), flush=True)
    med = statistics.median
    print(f"memcached worker: median {med(mcs):.0f} req/s")
    for name in binaries:
        print(f"{name}: median {med(caps[name]):.0f} req/s; ratio per repeat "
              f"{', '.join(f'{r:.2f}' for r in ratios[name])}; median ratio {med(ratios[name]):.2f}x (goal >= 1.1x)")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--loadgen", action="append", required=True, help="NAME=PATH, repeatable")
    p.add_argument("--rates", default="5000,20000")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--capacity", action="store_true", help="paired capacity searches instead")
    p.add_argument("extra", nargs="*", help="more loadgen arguments, after --")
    args = p.parse_args()
    binaries = dict(spec.split("=", 1) for spec in args.loadgen)
    if args.capacity:
        capacities(binaries, args.repeats)
        return
    rates = [int(r) for r in args.rates.split(",")]
    port = free_port()
    mc = subprocess.Popen(["taskset", "-c", "1", str(MEMCACHED), "-u", "root", "-l", "127.0.0.1",
                           "-p", str(port), "-t", "1", "-U", "0"])
    rows: dict = {}
    try:
        wait_for_port(port, mc, 10)
        with open("/proc/loadavg") as f:
            print("load average before:", f.read().strip(), flush=True)
        for rate in rates:
            for _ in range(args.repeats):
                for name, binary in binaries.items():
                    before = machine_floor(0, 1.0)[1] / 1e3
                    f = figures(run(binary, port, rate, args.extra))
                    after = machine_floor(0, 1.0)[1] / 1e3
                    f["floor"], f["floor_lo"] = max(before, after), min(before, after)
                    rows.setdefault((name, rate), []).append(f)
                    print(line(name, rate, before, after, f), flush=True)
        with open("/proc/loadavg") as f:
            print("load average after:", f.read().strip(), flush=True)
    finally:
        mc.terminate()
        mc.wait()
    med = statistics.median
    print("medians: name rate | floor p99 (worse of before/after) | sched_err p99 | over the floor "
          "(the worse; the better) | the loop's own p99 | loadgen's perfect sender p99 | lat p50 | read p50 | "
          "client_delay p50 | cpu/req | busy | lost+failed (sum)")
    for (name, rate), fs in rows.items():
        over = med(f["err99"] - f["floor"] for f in fs)
        over_lo = med(f["err99"] - f["floor_lo"] for f in fs)
        print(f"{name} {rate}: floor {med(f['floor'] for f in fs):.2f} | err99 {med(f['err99'] for f in fs):.2f}"
              f" | over {over:.2f}; {over_lo:.2f} | own99 {med(f['own99'] for f in fs):.2f} | perfect99 "
              f"{med(f['perfect99'] for f in fs):.2f} | lat50 {med(f['lat50'] for f in fs):.1f} | read50 "
              f"{med(f['read50'] for f in fs):.1f} | delay50 {med(f['delay50'] for f in fs):.2f} | cpu/req "
              f"{med(f['cpu_us'] for f in fs):.2f} | busy {med(f['busy'] for f in fs):.1f}% | lost "
              f"{sum(f['lost'] for f in fs)}")


if __name__ == "__main__":
    main()
