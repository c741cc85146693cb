"""What stage tracing costs memcached under load: server CPU per request
and latency at a fixed offered rate.

memcached (-t 1, all threads) is pinned to one CPU and the load generator
to another; loadgen offers the same open-loop Poisson load to each side
(90 % gets, 10 % sets of 1,000 preloaded keys). The server's CPU time,
user and kernel, of all its threads (/proc/PID/task/*/schedstat, in ns) is
divided by the requests it served (cmd_get + cmd_set): a saturated server
serves 1/that requests per second, so the ratio of CPU per request is the
ratio of saturated throughputs, measured without needing a client faster
than the server (one loadgen thread is not, on this machine). Latency
p50/p99 come from loadgen, measured from each request's scheduled time.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from stagevar_bench.servers import LOOPBACK, MemcachedServer, build_dir


@dataclass(frozen=True)
class LoadSample:
    cpu_ns_per_request: float
    p50_ns: float
    p99_ns: float
    achieved_rps: float


def loadgen_binary() -> Path:
    """$STAGEVAR_LOADGEN, else the loadgen built next to the servers."""
    env = os.environ.get("STAGEVAR_LOADGEN")
    return Path(env) if env else build_dir().parent / "bench" / "loadgen" / "loadgen"


def server_cpu_ns(pid: int) -> int:
    """CPU time of every thread of `pid`, user and system, in ns."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            pass    # a thread that just exited
    return total


def requests_served(port: int) -> int:
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        s.sendall(b"stats\r\n")
        reply = b""
        while not reply.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("memcached closed the connection during stats")
            reply += chunk
    stats = dict(re.findall(rb"STAT (cmd_get|cmd_set) (\d+)", reply))
    return int(stats[b"cmd_get"]) + int(stats[b"cmd_set"])


def run_load(binary: Path, options: Sequence[str], cpus: tuple[int, int],
             rate: int, duration_s: float) -> LoadSample:
    server_cpu, client_cpu = cpus
    with MemcachedServer(binary, args=["-t", "1", *options],
                         wrap=["taskset", "-c", str(server_cpu)]) as server:
        assert server.proc is not None
        with tempfile.TemporaryDirectory(prefix="stagevar-load-") as tmp:
            report = Path(tmp) / "load.json"
            served, cpu = requests_served(server.port), server_cpu_ns(server.proc.pid)
            subprocess.run([str(loadgen_binary()), "-p", str(server.port), "-r", str(rate),
                            "-d", f"{duration_s}s", "-w", "1s", "-a", "exp", "-c", "4",
                            "--keys", "1000", "--preload", "--get-ratio", "0.9",
                            "--cpus", str(client_cpu), "--json", str(report), "-q"],
                           check=True, timeout=duration_s + 60)
            cpu = server_cpu_ns(server.proc.pid) - cpu
            served = requests_served(server.port) - served - 1   # not our own stats
            result = json.loads(report.read_text())
    latency = result["latency_scheduled"]
    return LoadSample(cpu_ns_per_request=cpu / served, p50_ns=latency["p50"],
                      p99_ns=latency["p99"], achieved_rps=result["rates"]["achieved"])


def check_ready(cpus: tuple[int, int]) -> str | None:
    """Why the load part cannot run here, or None."""
    if not loadgen_binary().exists():
        return f"{loadgen_binary()} is not built (run make)"
    allowed = os.sched_getaffinity(0)
    if cpus[0] == cpus[1] or not set(cpus) <= allowed:
        return f"--cpus needs two different CPUs of {sorted(allowed)}, not {cpus[0]},{cpus[1]}"
    return None
