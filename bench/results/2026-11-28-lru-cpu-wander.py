# SPDX-License-Identifier: BSD-3-Clause
"""How stock memcached's CPU per request wanders within one drive: the
--cpu-cost workload (lru_cpu.py) evicting at RATE req/s for 21 s, the
server's CPU and its request count (cmd_get + cmd_set) read every
second. Prints each second's ns per request, their coefficient of
variation and the standard deviation of the log ratio of adjacent
seconds: with independent seconds that is sqrt(2) times the CV, with
drift much less.

Usage, from bench/ with STAGEVAR_BUILD and STAGEVAR_LOADGEN set:
  python3 results/2026-11-28-lru-cpu-wander.py RATE
"""
from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time

from stagevar_bench import lru_cpu, machine, memcache_client
from stagevar_bench.servers import LOOPBACK, build_binary

SECONDS = 20


def requests(port: int) -> int:
    stats = memcache_client.stats(LOOPBACK, port)
    return int(stats["cmd_get"]) + int(stats["cmd_set"])


def main() -> None:
    rate = float(sys.argv[1])
    with lru_cpu.server(build_binary("stock", "memcached"), lru_cpu.MEMORY["evicting"], (), cpu=1) as srv:
        assert srv.proc is not None
        lru_cpu.preload(0, srv.port)
        drive = subprocess.Popen([sys.executable, "-c",
                                  "import sys; from stagevar_bench import lru_cpu; "
                                  f"lru_cpu.drive(0, {srv.port}, {rate}, {SECONDS + 1}, 1)"])
        time.sleep(1.0)
        before = (machine.proc_cpu_ns(srv.proc.pid), requests(srv.port))
        per_second = []
        for _ in range(SECONDS):
            time.sleep(1.0)
            now = (machine.proc_cpu_ns(srv.proc.pid), requests(srv.port))
            per_second.append((now[0] - before[0]) / (now[1] - before[1]))
            before = now
        drive.wait()
    print(" ".join(f"{x:.0f}" for x in per_second))
    steps = [math.log(b / a) for a, b in zip(per_second, per_second[1:])]
    print(f"cv {statistics.stdev(per_second) / statistics.mean(per_second):.3f}  "
          f"adjacent log ratio sd {statistics.stdev(steps):.3f}")


if __name__ == "__main__":
    main()
