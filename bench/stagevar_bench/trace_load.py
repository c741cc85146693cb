# SPDX-License-Identifier: BSD-3-Clause
"""What stage tracing costs memcached under load: server CPU per request
and latency at a fixed offered rate (run_load), and saturated throughput,
one server at a time (run_saturated) or two sharing one CPU at the same
time (run_saturated_pair).

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

import contextlib
import json
import math
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from stagevar_bench import memcache_client as mc
from stagevar_bench.machine import loadgen_path, proc_cpu_ns, this_thread_cpu_ns
from stagevar_bench.pipeline_client import (PipelineClient, PipelineResult, WindowHook, build_batches,
                                             preload, run_together)
from stagevar_bench.servers import LOOPBACK, MemcachedServer, stop_all

SATURATION_KEYS = 1000
SATURATION_GET_RATIO = 0.9
SATURATION_WARMUP_S = 1.0
WORKER_THREAD = "mc-worker"     # memcached's worker threads' name


@dataclass(frozen=True)
class LoadSample:
    cpu_ns_per_request: float
    p50_ns: float
    p99_ns: float
    achieved_rps: float


def requests_served(port: int) -> int:
    stats = mc.stats(LOOPBACK, port)
    return int(stats["cmd_get"]) + int(stats["cmd_set"])


def run_load(binary: Path, options: Sequence[str], cpus: tuple[int, int],
             rate: int, duration_s: float) -> LoadSample:
    server_cpu, client_cpu = cpus
    with MemcachedServer(binary, args=["-t", "1", *options],
                         wrap=["taskset", "-c", str(server_cpu)]) as server:
        assert server.proc is not None
        with tempfile.TemporaryDirectory(prefix="stagevar-load-") as tmp:
            report = Path(tmp) / "load.json"
            served, cpu = requests_served(server.port), proc_cpu_ns(server.proc.pid)
            subprocess.run([str(loadgen_path()), "-p", str(server.port), "-r", str(rate),
                            "-d", f"{duration_s}s", "-w", "1s", "-a", "exp", "-c", "4",
                            "--keys", "1000", "--preload", "--get-ratio", "0.9",
                            "--cpus", str(client_cpu), "--json", str(report), "-q"],
                           check=True, timeout=duration_s + 60)
            cpu = proc_cpu_ns(server.proc.pid) - cpu
            served = requests_served(server.port) - served - 1   # not our own stats
            result = json.loads(report.read_text())
    latency = result["latency_scheduled"]
    return LoadSample(cpu_ns_per_request=cpu / served, p50_ns=latency["p50"],
                      p99_ns=latency["p99"], achieved_rps=result["rates"]["achieved"])


def check_ready(cpus: tuple[int, int]) -> str | None:
    """Why the load part cannot run here, or None."""
    if not loadgen_path().exists():
        return f"{loadgen_path()} is not built (run make)"
    return check_cpus(cpus)


@dataclass(frozen=True)
class Pipeline:
    """The saturating client's shape: connections, each with `depth`
    batches of `batch` requests in flight."""
    connections: int = 4
    batch: int = 32
    depth: int = 4


@dataclass(frozen=True)
class SaturatedSample:
    throughput: float       # replies per second over the measured window
    worker_cpu: float       # fraction of one CPU the server's worker used
    client_cpu: float       # fraction of one CPU the client used
    p50_s: float            # batch round trip (pipeline_client.py)
    p99_s: float


class _CpuWindow(WindowHook):
    """CPU times of the servers' workers and of the client over the window."""

    def __init__(self, server_pids: Sequence[int]) -> None:
        self.server_pids = list(server_pids)
        self.workers = [0] * len(self.server_pids)
        self.client = self.wall = 0

    def begin(self) -> None:
        self.workers = [-proc_cpu_ns(pid, WORKER_THREAD) for pid in self.server_pids]
        self.client = -this_thread_cpu_ns()
        self.wall = -time.monotonic_ns()

    def end(self) -> None:
        self.workers = [w + proc_cpu_ns(pid, WORKER_THREAD) for w, pid in zip(self.workers, self.server_pids)]
        self.client += this_thread_cpu_ns()
        self.wall += time.monotonic_ns()

    def sample(self, server: int, result: PipelineResult, binary: Path) -> "SaturatedSample":
        """Server number `server`'s sample from its client's result."""
        latencies = result.batch_latency_s
        if not latencies:
            raise RuntimeError(f"no batch completed in {result.seconds:g} s: is {binary} answering?")
        return SaturatedSample(throughput=result.throughput,
                               worker_cpu=self.workers[server] / self.wall,
                               client_cpu=self.client / self.wall,
                               p50_s=nearest_rank(latencies, 0.50),
                               p99_s=nearest_rank(latencies, 0.99))


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def saturating_server(binary: Path, options: Sequence[str], server_cpu: int) -> MemcachedServer:
    return MemcachedServer(binary, args=["-t", "1", *options], wrap=["taskset", "-c", str(server_cpu)])


def run_saturated(binary: Path, options: Sequence[str], cpus: tuple[int, int],
                  seconds: float, shape: Pipeline) -> SaturatedSample:
    """memcached -t 1 on cpus[0], this process (the client) on cpus[1],
    as many requests as the worker can answer for `seconds`."""
    return run_saturated_servers([(binary, options)], cpus, seconds, shape)[0]


@dataclass(frozen=True)
class SaturatedPair:
    """Two servers saturated at the same time, sharing one CPU."""
    base: SaturatedSample
    other: SaturatedSample

    @property
    def throughput_ratio(self) -> float:
        return self.other.throughput / self.base.throughput

    @property
    def capacity_ratio(self) -> float:
        """The ratio of requests per second of each worker's own CPU time."""
        return ((self.other.throughput / self.other.worker_cpu)
                / (self.base.throughput / self.base.worker_cpu))

    @property
    def p99_ratio(self) -> float:
        """The ratio of the batch round trips' p99."""
        return self.other.p99_s / self.base.p99_s


Server = tuple[Path, Sequence[str]]     # a memcached binary and its options


def run_saturated_pair(base: Server, other: Server, cpus: tuple[int, int], seconds: float,
                       shape: Pipeline, other_first: bool) -> SaturatedPair:
    """Two memcached -t 1, `base` and `other`, both on cpus[0] at the same
    time, and this process on cpus[1] driving `shape` to each through one
    selector: the scheduler splits the server CPU between the two
    workers, and whatever slows the machine slows both. `other_first`
    starts `other` first and serves its connections first."""
    order = [other, base] if other_first else [base, other]
    first, second = run_saturated_servers(order, cpus, seconds, shape)
    return SaturatedPair(base=second, other=first) if other_first else SaturatedPair(first, second)


def run_saturated_servers(servers: Sequence[Server], cpus: tuple[int, int], seconds: float,
                          shape: Pipeline) -> list[SaturatedSample]:
    """Every server as memcached -t 1 on cpus[0], started in order, all
    loaded at once by this process on cpus[1] for `seconds` after
    SATURATION_WARMUP_S."""
    server_cpu, client_cpu = cpus
    allowed = os.sched_getaffinity(0)
    batches = build_batches(shape.batch, SATURATION_KEYS, SATURATION_GET_RATIO, seed=1)
    with contextlib.ExitStack() as stack:
        running: list[MemcachedServer] = []
        stack.callback(stop_all, running)
        for binary, options in servers:     # a server that fails to start stops itself
            running.append(saturating_server(binary, options, server_cpu).start())
        for server in running:
            preload(LOOPBACK, server.port, SATURATION_KEYS)
        pids = [server.proc.pid for server in running if server.proc is not None]
        assert len(pids) == len(running)
        window = _CpuWindow(pids)
        os.sched_setaffinity(0, {client_cpu})
        stack.callback(os.sched_setaffinity, 0, allowed)
        clients: list[PipelineClient] = []
        stack.callback(lambda: [client.close() for client in clients])
        for server in running:
            clients.append(PipelineClient(LOOPBACK, server.port, shape.connections, shape.batch,
                                          shape.depth, batches))
        results = run_together(clients, SATURATION_WARMUP_S, seconds, window)
    return [window.sample(i, result, binary) for i, (result, (binary, _)) in
            enumerate(zip(results, servers))]


def check_cpus(cpus: tuple[int, int]) -> str | None:
    """Why server and client cannot be pinned to `cpus`, or None."""
    allowed = os.sched_getaffinity(0)
    if cpus[0] == cpus[1] or not set(cpus) <= allowed:
        return f"--cpus needs two different CPUs of {sorted(allowed)}, not {cpus[0]},{cpus[1]}"
    return None
