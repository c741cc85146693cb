# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, how often loadgen's requests wait behind a full
congestion window in loadgen's own socket (issue 45's busy-loop bar).
Declared in 2026-12-07-busy-loop-window.md; the sides, workload and busy
loop are 2026-12-07-busy-loop-sched.py's, the run is
2026-12-07-busy-loop-tcp.py's with the snapshots taken through it.

One JSON line a run: loadgen's mean and p99; over 2 s of the
measurement, every 20 ms, `ss -tin` of loadgen's end of the connection:
the share of snapshots with requests unsent (`notsent` > 0), with the
window full (`unacked` >= `cwnd`), and the mean unsent bytes.

    taskset -c 0 python3 bench/results/2026-12-07-busy-loop-window.py ROUNDS OUT.jsonl
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path


def _load(name: str, file: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sched = _load("busy_loop_sched", "2026-12-07-busy-loop-sched.py")
SNAPSHOTS, EVERY_S = 100, 0.020


def client_socket(port: int) -> dict[str, int]:
    """unacked, cwnd and notsent of loadgen's end of the connection."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( dport = :{port} )"],
                         check=True, capture_output=True, text=True, timeout=10).stdout
    return {k: int(m[1]) if (m := re.search(rf"\b{k}:(\d+)", out)) else 0
            for k in ("unacked", "cwnd", "notsent")}


def one(side: str, tmp: Path) -> dict[str, object]:
    with sched.serving(side, tmp) as (gen, report):
        time.sleep(3.0)
        snaps = []
        for _ in range(SNAPSHOTS):
            snaps.append(client_socket(sched.PORT))
            time.sleep(EVERY_S)
        gen.wait(timeout=60)
        latency = sched.latency_us(report)
    n = len(snaps)
    return {"side": side, **latency, "snapshots": n,
            "unsent_share": round(sum(s["notsent"] > 0 for s in snaps) / n, 3),
            "window_full_share": round(sum(s["cwnd"] > 0 and s["unacked"] >= s["cwnd"]
                                           for s in snaps) / n, 3),
            "unsent_bytes_mean": round(sum(s["notsent"] for s in snaps) / n, 1)}


if __name__ == "__main__":
    sys.exit(sched.rounds(sys.argv, one))
