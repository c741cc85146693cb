# SPDX-License-Identifier: BSD-3-Clause
"""Figures for bench/results/2026-11-25-loadgen-kernel-time.md (issue 20).

Stock memcached -t 1 on CPU 1, loadgen on CPU 0, loopback. For each rate
and wait setting: the machine floor (a perfect sender's schedule error on
CPU 0, measured just before) and loadgen's schedule error, p50 latency
and CPU; then the CPU cost of --timestamps kernel-tx. Run from the
worktree under the benchmark lock:

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-25-loadgen-kernel-time.py
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from stagevar_bench.bench_loadgen import machine_floor
from stagevar_bench.servers import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
LOADGEN = ROOT / "bench/loadgen/loadgen"
MEMCACHED = ROOT / "build/stock/bin/memcached"


def run(port: int, rate: int, extra: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(["taskset", "-c", "0", str(LOADGEN), "-p", str(port), "-r", str(rate),
                        "-d", "4", "-w", "1", "--cpus", "0", "--json", f.name, "--quiet", *extra],
                       check=True, timeout=60)
        return json.load(open(f.name))


def row(rep: dict) -> str:
    c = rep["counts"]
    cpu = rep["cpu"]["measurement_user_s"] + rep["cpu"]["measurement_sys_s"]
    return (f"sched_err p50 {rep['schedule_error']['p50']/1e3:.2f} p99 {rep['schedule_error']['p99']/1e3:.2f} us"
            f" | lat p50 {rep['latency_scheduled']['p50']/1e3:.1f} p99 {rep['latency_scheduled']['p99']/1e3:.1f} us"
            f" | read p50 {rep['latency_read']['p50']/1e3:.1f} us | client_delay p50 {rep['client_delay']['p50']/1e3:.2f}"
            f" p99 {rep['client_delay']['p99']/1e3:.2f} us | cpu/req {cpu/max(c['completed'],1)*1e6:.2f} us"
            f" | busy {rep['cpu']['busy_fraction']*100:.1f}% | margin {rep['cpu']['threads'][0]['spin_margin_us']:.0f} us"
            f" | kernel {c['kernel_timed']} loop {c['loop_timed']} tx {c['sends_kernel_timed']}")


def main() -> None:
    port = free_port()
    mc = subprocess.Popen(["taskset", "-c", "1", str(MEMCACHED), "-u", "root", "-l", "127.0.0.1",
                           "-p", str(port), "-t", "1", "-U", "0"])
    try:
        wait_for_port(port, mc, 10)
        spins = sys.argv[1].split(",") if len(sys.argv) > 1 else ["auto", "30", "100", "100000"]
        # Settings interleaved, so a busy spell on the shared machine hits
        # them alike; the floor is taken just before and just after.
        for rate in (5000, 20000):
            for _ in range(3):
                for spin in spins:
                    b50, b99 = machine_floor(0, 1.0)
                    rep = run(port, rate, ["--spin-us", spin])
                    a50, a99 = machine_floor(0, 1.0)
                    print(f"rate {rate} spin-us {spin}: floor p99 before {b99/1e3:.2f} after {a99/1e3:.2f} us | "
                          + row(rep), flush=True)
        if "notx" in sys.argv:
            return
        # CPU cost of TX stamps: --spin-us 0 sleeps up to each send, so the
        # thread's CPU is its work, not its spinning.
        for _ in range(3):
            for ts in ("kernel", "kernel-tx"):
                print(f"rate 20000 spin-us 0 timestamps {ts}: "
                      + row(run(port, 20000, ["--spin-us", "0", "--timestamps", ts])), flush=True)
    finally:
        mc.terminate()
        mc.wait()


if __name__ == "__main__":
    main()
