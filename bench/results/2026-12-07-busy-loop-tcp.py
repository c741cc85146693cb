# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, what TCP does on the loopback path outside the
server's stamps (issue 45's busy-loop bar). Declared in
2026-12-07-busy-loop-tcp.md; the sides, workload and busy loop are
2026-12-07-busy-loop-sched.py's, without perf.

One JSON line a run: loadgen's mean, p99 and requests; the change of
every TcpExt and Tcp counter of /proc/net/netstat and /proc/net/snmp
over the last 2 s of the measurement (the counters are the machine's,
and only this run's traffic is on it); and `ss -tin` of the run's
connection, both ends, 1 s before the measurement ends.

    python3 bench/results/2026-12-07-busy-loop-tcp.py ROUNDS OUT.jsonl
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "busy_loop_sched", Path(__file__).with_name("2026-12-07-busy-loop-sched.py"))
assert _spec is not None and _spec.loader is not None
sched = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sched)


def tcp_counters() -> dict[str, int]:
    """Every TcpExt and Tcp counter, by name."""
    counters: dict[str, int] = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = Path(path).read_text().splitlines()
        for names, values in zip(lines[::2], lines[1::2]):
            prefix, *keys = names.split()
            if prefix in ("TcpExt:", "Tcp:"):
                counters.update({f"{prefix[:-1]}.{k}": int(v)
                                 for k, v in zip(keys, values.split()[1:])})
    return counters


def connection_info(port: int) -> list[str]:
    """`ss -tin` of both ends of the run's connection."""
    out = subprocess.run(["ss", "-tinH", "state", "established",
                          f"( sport = :{port} or dport = :{port} )"],
                         check=True, capture_output=True, text=True, timeout=10).stdout
    return [" ".join(line.split()) for line in out.splitlines() if line.strip()]


def one(side: str, tmp: Path) -> dict[str, object]:
    with sched.serving(side, tmp) as (gen, report):
        time.sleep(3.0)
        before = tcp_counters()
        time.sleep(1.0)
        info = connection_info(sched.PORT)
        time.sleep(1.0)
        after = tcp_counters()
        gen.wait(timeout=60)
        loadgen = json.loads(report.read_text())
    return {"side": side, **sched.latency_us(report), "counts": loadgen["counts"],
            "tcp_counters": {k: after[k] - before[k] for k in after if after[k] != before[k]},
            "ss": info}


if __name__ == "__main__":
    sys.exit(sched.rounds(sys.argv, one))
