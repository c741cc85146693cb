# SPDX-License-Identifier: BSD-3-Clause
"""Why stock beats the options that leave its maintainer little to do,
beside a busy loop on the server's core (issue 45's busy-loop bar), from
the scheduler's own events. Declared in 2026-12-07-busy-loop-sched.md.

Per round, stock, stock -o no_lru_maintainer and the fork's
-o hot_lru_pct=0 in rotated order: a busy loop on CPU 1 in this session,
the server (-t 1 -m 8) on CPU 1, loadgen on CPU 0 at 20k req/s Poisson
on the demo's workload; after 3 s (preload and warm-up) `perf sched
record` takes 2 s of every CPU's switches and wake-ups. One JSON line a
run: loadgen's mean and p99; the worker's wake-up latency (its
sched_waking to its switch-in on CPU 1); the same split by the task that
held CPU 1 when it woke; which task's switch-out let it in; and the
maintainer's wake-ups a second. Only the servers' and loadgen's
command lines are used, as a user runs them.

    sh -c 'cd REPO && python3 bench/results/2026-12-07-busy-loop-sched.py ROUNDS OUT.jsonl'
"""
from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

SIDES = {"stock": ("build/stock/bin/memcached", []),
         "no_lru_maintainer": ("build/stock/bin/memcached", ["-o", "no_lru_maintainer"]),
         "hot0": ("build/fork/bin/memcached", ["-o", "hot_lru_pct=0"])}
PORT = 21877
WORKLOAD = ["--keys", "200000", "--key-size", "20", "--value-size", "500", "--get-ratio", "0.1",
            "--preload"]
WORKER, MAINTAINER, LOOP = "mc-worker", "mc-lrumaint", "python3"
SWITCH = re.compile(r"\[001\]\s+(\d+\.\d+):\s+sched:sched_switch:\s+prev_comm=(.+?) prev_pid=\d+ "
                    r".*?prev_state=(\S+) ==> next_comm=(.+?) next_pid=\d+")
WAKING = re.compile(r"\s(\d+\.\d+):\s+sched:sched_waking:\s+comm=(.+?) pid=\d+ .*target_cpu=0*1\b")
# Bounded: the loop ends by itself well after a run's 8 s.
BUSY_LOOP = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def dist(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "mean": round(statistics.fmean(values), 1),
            "p50": round(quantile(values, 0.5), 1), "p90": round(quantile(values, 0.9), 1),
            "p99": round(quantile(values, 0.99), 1)}


def parse(text: str) -> dict[str, object]:
    """CPU 1's switches and the wake-ups aimed at it, in time order."""
    wake_us: list[float] = []
    by_holder: dict[str, list[float]] = {}
    let_in_by: dict[str, int] = {}
    maintainer_wakes = 0
    running, holder, woke_at = "", "", None
    first = last = 0.0
    for line in text.splitlines():
        m = SWITCH.search(line)
        if m:
            ts, prev, nxt = float(m[1]), m[2], m[4]
            first, last = first or ts, ts
            if nxt == WORKER and woke_at is not None:
                wake_us.append((ts - woke_at) * 1e6)
                by_holder.setdefault(holder, []).append(wake_us[-1])
                let_in_by[prev] = let_in_by.get(prev, 0) + 1
                woke_at = None
            running = nxt
            continue
        m = WAKING.search(line)
        if m and m[2] == WORKER and woke_at is None:
            woke_at, holder = float(m[1]), running or "idle"
        elif m and m[2] == MAINTAINER:
            maintainer_wakes += 1
    seconds = last - first
    return {"seconds": round(seconds, 3), "worker_wakeup_us": dist(wake_us),
            "worker_wakeup_us_by_holder": {k: dist(v) for k, v in by_holder.items() if len(v) >= 10},
            "worker_let_in_by": let_in_by,
            "maintainer_wakes_per_s": round(maintainer_wakes / seconds, 1) if seconds else None}


def wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server on port {port} after 10 s")


@contextmanager
def serving(side: str, tmp: Path, loop_nice: int = 0,
            on_ready: Callable[[int], None] = lambda pid: None
            ) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A run of `side` beside the busy loop (at `loop_nice`): calls
    `on_ready(server_pid)` once the server listens, then yields loadgen's
    process, started 3 s before the measurement's first 2 s, and its
    report's path; stops the server and the loop on exit."""
    binary, extra = SIDES[side]
    user = ["-u", "root"] if os.geteuid() == 0 else []
    loop = subprocess.Popen(["nice", "-n", str(loop_nice), "taskset", "-c", "1",
                             "python3", "-c", BUSY_LOOP])
    server = subprocess.Popen(["taskset", "-c", "1", binary, "-t", "1", "-m", "8", "-U", "0",
                               "-l", "127.0.0.1", "-p", str(PORT), *user, *extra])
    try:
        wait_for_port(PORT)
        on_ready(server.pid)
        report = tmp / "loadgen.json"
        gen = subprocess.Popen(["taskset", "-c", "0", "bench/loadgen/loadgen", "-p", str(PORT),
                                "-r", "20000", "-d", "3s", "-w", "2s", "-c", "1", *WORKLOAD,
                                "--json", str(report)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield gen, report
    finally:
        for p in (server, loop):
            p.kill()
            p.wait()


def latency_us(report: Path) -> dict[str, float]:
    """Loadgen's mean and p99, in us."""
    latency = json.loads(report.read_text())["latency_scheduled"]
    return {"mean_us": round(latency["mean"] / 1000, 1), "p99_us": round(latency["p99"] / 1000, 1)}


def one(side: str, tmp: Path,
        parse_events: Callable[[str], dict[str, object]] = parse) -> dict[str, object]:
    """One run of `side`; `parse_events` reads its `perf script` text."""
    with serving(side, tmp) as (gen, report):
        time.sleep(3.0)
        data = tmp / "perf.data"
        subprocess.run(["perf", "sched", "record", "-a", "-o", str(data), "--", "sleep", "2"],
                       check=True, capture_output=True, timeout=60)
        gen.wait(timeout=60)
        latency = latency_us(report)
        text = subprocess.run(["perf", "script", "-i", str(data)], check=True,
                              capture_output=True, text=True, timeout=300).stdout
    return {"side": side, **latency, **parse_events(text)}


def ensure_tracefs() -> None:
    if not Path("/sys/kernel/tracing/events").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)


def rounds(argv: list[str], measure: Callable[[str, Path], dict[str, object]],
           setup: Callable[[], None] = lambda: None, sides: list[str] = list(SIDES)) -> int:
    """`SCRIPT ROUNDS OUT.jsonl`: every one of `sides` once a round, in
    rotated order, each run by `measure(side, scratch_dir)`; one JSON line a run."""
    if len(argv) != 3 or not argv[1].isdigit():
        print(f"usage: {argv[0]} ROUNDS OUT.jsonl", file=sys.stderr)
        return 2
    setup()
    with open(argv[2], "a") as out, tempfile.TemporaryDirectory() as tmp:
        for r in range(int(argv[1])):
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            for side in order:
                line = json.dumps({"round": r, **measure(side, Path(tmp))})
                print(line, flush=True)
                out.write(line + "\n")
    return 0


def run(argv: list[str], parse_events: Callable[[str], dict[str, object]] = parse) -> int:
    """The rounds of this diagnostic, each run's events read by `parse_events`."""
    return rounds(argv, lambda side, tmp: one(side, tmp, parse_events), ensure_tracefs)


if __name__ == "__main__":
    sys.exit(run(sys.argv))
