# SPDX-License-Identifier: BSD-3-Clause
"""Graceful stop under load (issue 45, "Done when"): SIGUSR1 sent to
memcached while loadgen drives it, and the seconds until the process
exits, for the amortized LRU's budgets, `auto`, `auto` in thread mode
beside a busy loop, and stock and the fork without the option as
controls.

Each try: the server with -t 1 -m 8, every thread on CPU 1; loadgen on
CPU 0 with the demo's workload (200,000 keys of 20 + 500 B preloaded,
which the 8 MB cache cannot hold, so it evicts; 90% sets; one
connection) at 150,000 req/s. One second after the preload has been
served (cmd_set), with the load still running, SIGUSR1; a server not
gone after 30 s is killed with SIGKILL and counts as a failure. The
configurations take turns within each round of tries, so a busy spell
of the shared machine falls on all of them alike.

Calls only the built servers and loadgen; the stats it reads are the
servers' own text protocol.

Usage: python3 bench/results/2026-12-02-lru-sigusr1.py [--tries N] [--out FILE.jsonl] [--config NAME ...]
  with STAGEVAR_BUILD (default <repo>/build) and STAGEVAR_LOADGEN
  (default <repo>/bench/loadgen/loadgen).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
SERVER_CPU = "1"
CLIENT_CPU = "0"
RATE = 150000
DEMO_KEYS = 200000
# The demo's workload (stagevar_bench.reproduce.demo_common), spelled out
# as loadgen's options: this script calls the CLI, not the package.
WORKLOAD = ["-c", "1", "--keys", str(DEMO_KEYS), "--key-size", "20", "--value-size", "500",
            "--get-ratio", "0.1", "--preload"]
WARMUP_S = 0.5
DRIVE_S = 4.0           # after the warm-up: the signal comes 1 s into the load, so it runs on
SIGNAL_AFTER_S = 1.0    # after the preload is served
STOPPED_WITHIN_S = 10.0
KILL_AFTER_S = 30.0
PRELOAD_LIMIT_S = 30.0  # the preload, 200,000 sets, takes 1-3 s here, a busy loop beside included
HOG_LIMIT_S = 60.0      # a busy loop that outlives this script stops by itself


@dataclass(frozen=True)
class Config:
    name: str
    side: str               # stock or fork: build/<side>/bin/memcached
    options: tuple[str, ...]
    hog: bool = False       # a busy loop on the server's CPU
    thread_mode: bool = False  # auto must be in its thread mode at the signal


CONFIGS = (
    Config("stock", "stock", ()),
    Config("fork, no option", "fork", ()),
    Config("fork, budget 20", "fork", ("-o", "lru_amortized_budget_us=20")),
    Config("fork, budget 200", "fork", ("-o", "lru_amortized_budget_us=200")),
    Config("fork, budget 1000", "fork", ("-o", "lru_amortized_budget_us=1000")),
    Config("fork, auto", "fork", ("-o", "lru_amortized_budget_us=auto")),
    Config("fork, auto, busy loop on CPU 1 (thread mode)", "fork", ("-o", "lru_amortized_budget_us=auto"),
           hog=True, thread_mode=True),
    # Added 2026-12-03, when auto was removed: what stands in for its
    # thread-mode try (run with --config, see the .md).
    Config("fork, budget 20, busy loop on CPU 1", "fork", ("-o", "lru_amortized_budget_us=20"), hog=True),
)


def fail(message: str) -> None:
    print(f"lru-sigusr1: {message}", file=sys.stderr)
    sys.exit(2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def stats(port: int, sub: str = "") -> dict[str, str]:
    """`stats [sub]` over the text protocol: name -> value."""
    with socket.create_connection((HOST, port), timeout=5.0) as s:
        s.sendall(f"stats {sub}".strip().encode() + b"\r\n")
        data = b""
        deadline = time.monotonic() + 5.0
        while not data.endswith(b"END\r\n"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"stats {sub} on port {port}: no END within 5 s")
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"stats {sub} on port {port}: connection closed")
            data += chunk
    out = {}
    for line in data.decode().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def wait_until_listening(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"server exited with status {server.returncode} before it listened")
        try:
            socket.create_connection((HOST, port), timeout=1.0).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server not listening on port {port} after 10 s")


def wait_for_preload(port: int) -> None:
    deadline = time.monotonic() + PRELOAD_LIMIT_S
    while int(stats(port)["cmd_set"]) < DEMO_KEYS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"preload of {DEMO_KEYS} keys not served within {PRELOAD_LIMIT_S:g} s")
        time.sleep(0.1)


def start_hog() -> subprocess.Popen[bytes]:
    loop = f"import time\nend = time.monotonic() + {HOG_LIMIT_S}\nwhile time.monotonic() < end: pass\n"
    return subprocess.Popen(["taskset", "-c", SERVER_CPU, sys.executable, "-c", loop])


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10.0)


def exit_after_signal(server: subprocess.Popen[bytes]) -> tuple[float, int | None]:
    """SIGUSR1, then the seconds until the process exits and its status;
    (KILL_AFTER_S, None) if it had to be killed."""
    start = time.monotonic()
    server.send_signal(signal.SIGUSR1)
    try:
        status = server.wait(timeout=KILL_AFTER_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10.0)
        return KILL_AFTER_S, None
    return time.monotonic() - start, status


def one_try(config: Config, build: Path, loadgen: Path, attempt: int, log: IO[bytes]) -> dict[str, object]:
    port = free_port()
    cmd = ["taskset", "-c", SERVER_CPU, str(build / config.side / "bin" / "memcached"),
           "-l", HOST, "-p", str(port), "-U", "0", "-t", "1", "-m", "8", *config.options]
    if os.geteuid() == 0:
        cmd += ["-u", "nobody"]  # memcached refuses to run as root without -u
    server = subprocess.Popen(cmd, stdout=log, stderr=log)
    hog = start_hog() if config.hog else None
    load = None
    try:
        wait_until_listening(port, server)
        load = subprocess.Popen(["taskset", "-c", CLIENT_CPU, str(loadgen), "-s", HOST, "-p", str(port),
                                 "-r", str(RATE), "-w", f"{WARMUP_S}s", "-d", f"{DRIVE_S}s", "-q", *WORKLOAD],
                                stdout=log, stderr=log)
        wait_for_preload(port)
        time.sleep(SIGNAL_AFTER_S)
        general = stats(port)
        lru = stats(port, "lru_amortized") if config.side == "fork" else {}
        load_running = load.poll() is None
        seconds, status = exit_after_signal(server)
    finally:
        stop(server)
        if load is not None:
            stop(load)
        if hog is not None:
            stop(hog)
    return {"config": config.name, "try": attempt, "seconds": round(seconds, 4), "exit_status": status,
            "load_running_at_signal": load_running, "evictions_at_signal": int(general["evictions"]),
            "cmd_set_at_signal": int(general["cmd_set"]), "mode_at_signal": lru.get("mode"),
            "mode_switches": int(lru["mode_switches"]) if "mode_switches" in lru else None,
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def problems(record: dict[str, object], config: Config) -> list[str]:
    """Why a try does not measure what it claims: no load at the signal,
    a cache that did not evict, auto not in thread mode where it must be."""
    out = []
    if not record["load_running_at_signal"]:
        out.append("loadgen had already finished at the signal")
    if record["evictions_at_signal"] == 0:
        out.append("no evictions before the signal")
    if config.thread_mode and record["mode_at_signal"] != "thread":
        out.append(f"auto's mode was {record['mode_at_signal']!r}, not 'thread'")
    return out


def chosen(names: list[str] | None) -> tuple[Config, ...]:
    """The configurations --config names (all of them without it)."""
    if not names:
        return CONFIGS
    known = {c.name: c for c in CONFIGS}
    for name in names:
        if name not in known:
            fail(f"no configuration {name!r}; known: {', '.join(known)}")
    return tuple(known[n] for n in names)


def table(records: list[dict[str, object]], configs: tuple[Config, ...]) -> str:
    rows = ["| configuration | tries | stopped within 10 s | max seconds | exit statuses | mode at the signal |",
            "|---|---|---|---|---|---|"]
    for config in configs:
        mine = [r for r in records if r["config"] == config.name]
        stopped = sum(1 for r in mine if r["exit_status"] is not None and float(r["seconds"]) <= STOPPED_WITHIN_S)
        statuses = sorted({"killed" if r["exit_status"] is None else str(r["exit_status"]) for r in mine})
        worst = max(float(r["seconds"]) for r in mine)
        modes = sorted({str(r["mode_at_signal"]) for r in mine if r["mode_at_signal"] is not None})
        mode_counts = ", ".join(f"{m} {sum(1 for r in mine if r['mode_at_signal'] == m)}" for m in modes)
        rows.append(f"| {config.name} | {len(mine)} | {stopped} of {len(mine)} | {worst:.3f} | "
                    f"{', '.join(statuses)} | {mode_counts or '-'} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", default="12", help="tries per configuration (default 12)")
    parser.add_argument("--out", help="write one JSON line per try here")
    parser.add_argument("--config", action="append", metavar="NAME",
                        help="only this configuration (repeat; default: every one)")
    args = parser.parse_args()
    configs = chosen(args.config)
    if not args.tries.isdigit() or int(args.tries) < 1:
        fail(f"--tries must be a positive whole number, not {args.tries!r}")
    tries = int(args.tries)
    build = Path(os.environ.get("STAGEVAR_BUILD", str(REPO / "build")))
    loadgen = Path(os.environ.get("STAGEVAR_LOADGEN", str(REPO / "bench" / "loadgen" / "loadgen")))
    for side in ("stock", "fork"):
        if not os.access(build / side / "bin" / "memcached", os.X_OK):
            fail(f"no {side} memcached at {build / side / 'bin' / 'memcached'} (STAGEVAR_BUILD={build})")
    if not os.access(loadgen, os.X_OK):
        fail(f"no loadgen at {loadgen} (STAGEVAR_LOADGEN)")
    if (os.cpu_count() or 1) < 2:
        fail("needs CPUs 0 and 1: the server on 1, loadgen on 0")

    records = []
    bad = []
    out = open(args.out, "w") if args.out else None
    with open(os.devnull, "wb") as log:
        for attempt in range(1, tries + 1):
            for config in configs:
                record = one_try(config, build, loadgen, attempt, log)
                records.append(record)
                bad += [f"{config.name}, try {attempt}: {p}" for p in problems(record, config)]
                print(json.dumps(record), flush=True)
                if out is not None:
                    out.write(json.dumps(record) + "\n")
                    out.flush()
    if out is not None:
        out.close()
    loads = [float(r["loadavg_1m"]) for r in records]
    print(f"\nload average (1 min) over the tries: {min(loads):.2f} to {max(loads):.2f}")
    print(table(records, configs))
    if bad:
        print("\ntries that do not measure what they claim:\n  " + "\n  ".join(bad), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
