# SPDX-License-Identifier: BSD-3-Clause
"""Experiments: a design (knob levels x loads x arrival processes, N runs
per cell), run interleaved with the server restarted for every run, and
the results kept as JSON with everything needed to analyse them again.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from stagevar_bench import machine, thread_tuning
from stagevar_bench.hog import CpuHog, duty_error, group_error
from stagevar_bench.lru_options import LRU_KNOB
from stagevar_bench.netns import NetnsPair
from stagevar_bench.runs import OUT_OF_RANGE, runs_ok
from stagevar_bench.sched import ThreadSched, threads_sched
from stagevar_bench.servers import (LOOPBACK, TRACE_EVERY_REQUEST, HttpdServer, MemcachedServer, ServerError,
                                    build_binary)
from stagevar_bench import memcache_client as mc
from stagevar_bench.stages import Stages, read_httpd_stages, read_memcached_stages

FORMAT = "stagevar-results/1"
HTTPD_PAGE_BYTES = 280
STAGE_STATS_PATH = "/stage-stats"


class ExperimentError(RuntimeError):
    pass


@dataclass
class Level:
    """One level of the knob factor: which build, with which options."""

    name: str
    variant: str = "fork"                         # stock or fork
    server_args: list[str] = field(default_factory=list)
    client_args: list[str] = field(default_factory=list)
    httpd_conf: str = ""
    server_cpus: str | None = None                # overrides the design's
    params: dict[str, float] = field(default_factory=dict)   # for sensitivity plots
    # What an operator does to the running server without code, applied
    # after it is up and before loadgen's warm-up (thread_tuning.py):
    thread_sched: dict[str, str] = field(default_factory=dict)   # thread name: idle or nice19
    helper_cpus: str | None = None                # every thread but the workers to these CPUs


@dataclass
class Design:
    name: str
    server: str                                   # memcached or httpd
    levels: list[Level]
    loads: list[float]                            # req/s, or conn/s for sequential clients
    arrivals: list[str] = field(default_factory=lambda: ["exp"])
    runs: int = 5
    duration_s: float = 3.0
    warmup_s: float = 1.0
    server_cpus: str | None = None
    client_cpus: str | None = None
    netns: bool = False
    server_args: list[str] = field(default_factory=list)
    client_args: list[str] = field(default_factory=list)
    httpd_conf: str = ""
    stage_trace: bool = False
    seed: int = 1
    load_unit: str = "req/s"                      # or conn/s (httpd, sequential clients)
    requests_per_conn: int = 75
    ideal_servers: int = 1                        # the queueing ideal's c
    ideal_shared: bool = False                    # one queue (httpd) or one per worker
    sweep: str | None = None                      # the level parameter this design varies
    knob_param: str | None = None                 # with sweep: the level parameter that turns the
                                                  # knob on (0 = off), compared at each swept value
    hog: float = 0.0                              # the shared-CPU condition: a CPU hog busy this
                                                  # percent of the time on each server CPU (hog.py)
    hog_group: str = "server"                     # the hog's scheduling group: server or own
    description: str = ""

    def validate(self) -> None:
        if self.server not in ("memcached", "httpd"):
            raise ExperimentError(f"server must be memcached or httpd, not {self.server!r}")
        if not runs_ok(self.runs):
            raise ExperimentError(OUT_OF_RANGE.format(value=self.runs))
        if not self.levels:
            raise ExperimentError("no knob levels")
        names = [l.name for l in self.levels]
        if len(set(names)) != len(names):
            raise ExperimentError(f"level names repeat: {names}")
        for l in self.levels:
            if l.variant not in ("stock", "fork"):
                raise ExperimentError(f"level {l.name!r}: variant must be stock or fork, not {l.variant!r}")
            tuning_error = level_tuning_error(self, l)
            if tuning_error:
                raise ExperimentError(f"level {l.name!r}: {tuning_error}")
            if not build_binary(l.variant, self.server).exists():
                raise ExperimentError(f"{build_binary(l.variant, self.server)} is not built (run make)")
        for load in self.loads:
            if not load > 0:
                raise ExperimentError(f"load must be > 0, not {load}")
        for a in self.arrivals:
            if a.split(":")[0] not in ("det", "exp", "pareto"):
                raise ExperimentError(f"arrival must be det, exp or pareto:..., not {a!r}")
        if self.duration_s <= 0 or self.warmup_s < 0:
            raise ExperimentError(f"bad duration {self.duration_s} s or warm-up {self.warmup_s} s")
        for cpus in [self.server_cpus, self.client_cpus, *[l.server_cpus for l in self.levels]]:
            if cpus is not None:
                try:
                    machine.parse_cpu_list(cpus)
                except ValueError as e:
                    raise ExperimentError(str(e)) from None
        if not machine.loadgen_path().exists():
            raise ExperimentError(f"{machine.loadgen_path()} is not built (run make)")
        hog_error = duty_error(self.hog) or group_error(self.hog_group)
        if hog_error:
            raise ExperimentError(hog_error)
        if self.hog and not all(l.server_cpus or self.server_cpus for l in self.levels):
            raise ExperimentError("a CPU hog shares the server's cores: pin the server (--server-cpus)")

    def request_rate(self, load: float) -> float:
        return load * self.requests_per_conn if self.load_unit == "conn/s" else load

    def cells(self) -> list[tuple[Level, float, str]]:
        return [(l, load, a) for l in self.levels for load in self.loads for a in self.arrivals]

    def schedule(self) -> list[tuple[Level, float, str, int]]:
        """Every (cell, repetition) once, interleaved: repetition r of every
        level of a (load, arrival) runs back to back (A B A B ...), the
        levels' order rotating from one repetition to the next, so a drift
        of the machine hits every level alike; the (load, arrival) pairs
        take a random (seeded) order in each repetition."""
        rng = random.Random(self.seed)
        pairs = [(load, a) for load in self.loads for a in self.arrivals]
        order = []
        for rep in range(self.runs):
            rng.shuffle(pairs)
            shift = rep % len(self.levels)
            levels = self.levels[shift:] + self.levels[:shift]
            order += [(l, load, a, rep) for load, a in pairs for l in levels]
        return order

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Design":
        d = dict(d)
        d["levels"] = [Level(**l) for l in d["levels"]]
        d.pop("runs_done", None)
        return Design(**d)


def level_tuning_error(design: Design, level: Level) -> str | None:
    """What is wrong with a level's thread settings, or None."""
    if not (level.thread_sched or level.helper_cpus):
        return None
    if design.server not in WORKER_THREAD:
        return f"thread settings name {design.server}'s threads, which have no names: memcached only"
    for thread, policy in level.thread_sched.items():
        if policy not in thread_tuning.POLICIES:
            return (f"thread policy must be {' or '.join(thread_tuning.POLICIES)}, "
                    f"not {policy!r} (thread {thread!r})")
    if level.helper_cpus is None:
        return None
    try:
        helpers = machine.parse_cpu_list(level.helper_cpus)
    except ValueError as e:
        return str(e)
    cpus = level.server_cpus or design.server_cpus
    return thread_tuning.helper_cpus_error(helpers, machine.parse_cpu_list(cpus) if cpus else None)


# ------------------------------------------------------------------ a run

def taskset(cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus] if cpus else []


def httpd_conf(design: Design, level: Level, client_addr: str | None) -> str:
    allow = "127.0.0.1 ::1" + (f" {client_addr}" if client_addr else "")
    parts = [design.httpd_conf, level.httpd_conf]
    if design.stage_trace and level.variant == "fork":
        parts.append(f'StageTrace On\nStageTraceSample 1\n<Location "{STAGE_STATS_PATH}">\n'
                     f'    SetHandler stage-stats\n'
                     f'    Require ip {allow}\n</Location>')
    return "\n".join(p for p in parts if p)


def trim_report(report: dict[str, Any]) -> dict[str, Any]:
    """What a result keeps of loadgen's JSON: everything but the per-client
    slots and the histograms nobody analyses."""
    keep = {k: report[k] for k in ("meta", "rates", "counts", "cpu") if k in report}
    keep["time_series"] = [{f: v for f, v in s.items() if f != "histogram"}
                           for s in report.get("time_series", [])]
    for k in ("latency_scheduled", "batch_size"):
        keep[k] = report.get(k, {})
    for k in ("latency_sent", "schedule_error", "connect"):
        keep[k] = {f: v for f, v in report.get(k, {}).items() if f != "histogram"}
    pc = report.get("per_client", {})
    keep["per_client"] = {f: pc.get(f) for f in ("merged", "mean_of_clients", "any_disagree")}
    return keep


@dataclass
class Target:
    """Where the server listens and how the client reaches it."""

    host: str = LOOPBACK
    server_wrap: list[str] = field(default_factory=list)
    client_wrap: list[str] = field(default_factory=list)
    client_netns: str | None = None
    client_addr: str | None = None


def target_for(design: Design, stack: ExitStack) -> Target:
    if not design.netns:
        return Target()
    ns = stack.enter_context(NetnsPair())
    return Target(host=ns.server_addr, server_wrap=ns.server_wrap(), client_wrap=ns.client_wrap(),
                  client_netns=ns.client, client_addr=ns.client_addr)


def loadgen_command(design: Design, level: Level, load: float, arrival: str, seed: int,
                    port: int, target: Target, json_path: str) -> list[str]:
    cmd = [*target.client_wrap, str(machine.loadgen_path()), "-s", target.host, "-p", str(port),
           "-r", f"{design.request_rate(load):g}", "-a", arrival,
           "-d", f"{design.duration_s:g}s", "-w", f"{design.warmup_s:g}s",
           "--seed", str(seed), "--json", json_path, "-q"]
    if design.server == "httpd":
        cmd += ["-P", "http"]
    if target.host != LOOPBACK:
        cmd.append("--allow-nonloopback")
    if design.client_cpus:
        cmd += ["--cpus", design.client_cpus]
    return cmd + design.client_args + level.client_args


def run_one(design: Design, level: Level, load: float, arrival: str, rep: int, seed: int,
            target: Target) -> dict[str, Any]:
    """Start the server fresh, drive one measurement, read what the server
    says, stop it. Never raises for a failed run: the record says why."""
    record: dict[str, Any] = {"cell": {"knob": level.name, "load": load, "arrival": arrival},
                              "rep": rep, "seed": seed, "loadavg_before": machine.loadavg(),
                              "start_unix": time.time(), "error": None}
    cpus = level.server_cpus or design.server_cpus
    wrap = [*target.server_wrap, *taskset(cpus)]
    binary = build_binary(level.variant, design.server)
    trace = design.stage_trace and level.variant == "fork"
    with tempfile.TemporaryDirectory(prefix="stagevar-run-") as tmp:
        json_path = os.path.join(tmp, "loadgen.json")
        server: MemcachedServer | HttpdServer
        if design.server == "memcached":
            args = [*design.server_args, *level.server_args, *(["-o", TRACE_EVERY_REQUEST] if trace else [])]
            server = MemcachedServer(binary, args=args, wrap=wrap, host=target.host, netns=target.client_netns)
        else:
            server = HttpdServer(binary, extra_conf=httpd_conf(design, level, target.client_addr),
                                 wrap=wrap, host=target.host, netns=target.client_netns)
            server.write_conf()
            (server.docroot / "index.html").write_text(httpd_page())
        try:
            with server:
                assert server.proc is not None
                record["server_cmd"] = (server.command() if isinstance(server, MemcachedServer)
                                        else [*wrap, str(binary), "-f", str(server.conf), "-DFOREGROUND"])
                if isinstance(server, HttpdServer):
                    record["httpd_conf"] = server.conf.read_text()
                pid = server.proc.pid
                if level.thread_sched or level.helper_cpus:
                    record["thread_tuning"] = thread_tuning.apply_tuning(
                        pid, level.thread_sched,
                        machine.parse_cpu_list(level.helper_cpus) if level.helper_cpus else None)
                cmd = loadgen_command(design, level, load, arrival, seed, server.port, target, json_path)
                record["loadgen_cmd"] = cmd
                limit = design.warmup_s + design.duration_s + 60
                with CpuHog(cpus or "0", design.hog, limit, design.hog_group) as hog:
                    steal0 = run_steal_s(cpus, design.client_cpus)
                    cpu0, busy0, t0 = machine.tree_cpu_s(pid), cores_busy_s(cpus), time.monotonic()
                    thr0 = machine.thread_cpu_s(pid) if design.server == "memcached" else {}
                    sched0 = worker_sched(design, pid)
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
                    cpu1, busy1, t1 = machine.tree_cpu_s(pid), cores_busy_s(cpus), time.monotonic()
                    record["host_steal_s"] = run_steal_s(cpus, design.client_cpus) - steal0
                    thr1 = machine.thread_cpu_s(pid) if design.server == "memcached" else {}
                if design.hog:
                    record["hog"] = hog.describe()
                if design.server in WORKER_THREAD:
                    record["worker_sched"] = (worker_sched(design, pid) - sched0).as_dict()
                if out.returncode != 0 or not os.path.exists(json_path):
                    raise ExperimentError(f"loadgen exited {out.returncode}: {out.stderr.strip()[-300:]}")
                report = json.loads(Path(json_path).read_text())
                record["loadgen"] = trim_report(report)
                record["server_cpu_s"] = sum(cpu1[p] - cpu0[p] for p in cpu1 if p in cpu0)
                if cpus:
                    record["outside_cores"] = max(0.0, busy1 - busy0 - record["server_cpu_s"]) / (t1 - t0)
                record["server_thread_cpu_s"] = {k: thr1.get(k, 0) - thr0.get(k, 0) for k in thr1}
                c = report.get("counts", {})
                record["requests_served"] = (c.get("sent", 0) + c.get("warmup_requests", 0)
                                             + report.get("meta", {}).get("preload_sets", 0))
                if trace:
                    record["stages"] = read_stages(design, server, target)
                if design.server == "memcached":
                    stats = mc.numbers(mc.stats(target.host, server.port, "", target.client_netns))
                    record["server_stats"] = {k: stats[k] for k in STATS_KEPT if k in stats}
                    if any(LRU_KNOB in a for a in args):
                        record["lru_amortized"] = mc.numbers(mc.stats(target.host, server.port,
                                                                      "lru_amortized", target.client_netns))
        except (ServerError, ExperimentError, thread_tuning.TuningError, OSError, subprocess.TimeoutExpired,
                ValueError) as e:
            record["error"] = str(e).strip().splitlines()[0][:500] if str(e).strip() else repr(e)
    record["loadavg_after"] = machine.loadavg()
    return record


# The threads whose scheduling is the mechanism metric: memcached's
# workers; httpd's worker threads have no name of their own.
WORKER_THREAD = {"memcached": "mc-worker"}


def cores_busy_s(cpus: str | None) -> float:
    """What machine.cpu_busy_s says of a pinned server's CPUs (0 unpinned)."""
    return machine.cpu_busy_s(machine.parse_cpu_list(cpus)) if cpus else 0.0


def run_steal_s(server_cpus: str | None, client_cpus: str | None) -> float:
    """What machine.cpu_steal_s says of the CPUs a run uses, the server's
    and loadgen's (a stall of either delays what loadgen measures); of
    every CPU if either is unpinned."""
    if not (server_cpus and client_cpus):
        return machine.cpu_steal_s()
    cpus = {*machine.parse_cpu_list(server_cpus), *machine.parse_cpu_list(client_cpus)}
    return machine.cpu_steal_s(sorted(cpus))


def worker_sched(design: Design, pid: int) -> ThreadSched:
    name = WORKER_THREAD.get(design.server)
    return threads_sched(pid, name) if name else ThreadSched()


STATS_KEPT = ("lru_maintainer_juggles", "evictions", "curr_items", "moves_to_cold", "moves_to_warm", "moves_within_lru",
              "lru_crawler_starts", "crawler_reclaimed",
              "rusage_user", "rusage_system", "threads", "get_hits", "get_misses")


def read_stages(design: Design, server: MemcachedServer | HttpdServer, target: Target) -> Stages:
    if design.server == "memcached":
        return read_memcached_stages(target.host, server.port, target.client_netns)
    return read_httpd_stages(target.host, server.port, f"{STAGE_STATS_PATH}?json", target.client_netns)


def httpd_page() -> str:
    """A static HTML page of exactly HTTPD_PAGE_BYTES bytes."""
    head = "<!DOCTYPE html>\n<html><head><title>stagevar</title></head><body>\n<p>"
    tail = "</p>\n</body></html>\n"
    return head + "x" * (HTTPD_PAGE_BYTES - len(head) - len(tail)) + tail


# ------------------------------------------------------------ a design

Progress = Callable[[str], None]


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_design(design: Design, progress: Progress = stderr_progress) -> dict[str, Any]:
    """All runs of a design in random order; the design and its runs."""
    design.validate()
    runs: list[dict[str, Any]] = []
    schedule = design.schedule()
    with ExitStack() as stack:
        target = target_for(design, stack)
        for i, (level, load, arrival, rep) in enumerate(schedule):
            seed = design.seed * 1000 + rep * 7 + 1
            rec = run_one(design, level, load, arrival, rep, seed, target)
            rec["order"] = i
            runs.append(rec)
            progress(f"[{design.name} {i + 1}/{len(schedule)}] knob={level.name} load={load:g} "
                     f"{design.load_unit} arrival={arrival} rep={rep}: " + describe(rec))
    return {"design": asdict(design), "runs": runs}


def describe(rec: dict[str, Any]) -> str:
    if rec.get("error"):
        return f"FAILED: {rec['error']}"
    lat = rec["loadgen"]["latency_scheduled"]
    la = rec.get("loadavg_after") or [0]
    return (f"p50 {lat.get('p50', 0) / 1e3:.1f} us, p99 {lat.get('p99', 0) / 1e3:.1f} us, "
            f"achieved {rec['loadgen']['rates'].get('achieved', 0):.0f} req/s (load avg {la[0]:.2f})")


def new_results(notes: list[str] | None = None) -> dict[str, Any]:
    return {"format": FORMAT, "meta": machine.metadata(), "experiments": [], "profiles": [],
            "notes": list(notes or [])}


def finish_results(results: dict[str, Any]) -> None:
    results["meta"]["loadavg_end"] = machine.loadavg()
    results["meta"]["time_end_unix"] = time.time()


def save_results(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(results, separators=(",", ":")).encode()
    if path.suffix == ".gz":
        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(data)
    else:
        path.write_bytes(data)


def read_json(path: Path) -> Any:
    """A JSON file, gzipped or not (results and analyses are either)."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ExperimentError(f"cannot read {path}: {e.strerror}") from None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise ExperimentError(f"{path} is not JSON: {e}") from None


def load_results(path: Path) -> dict[str, Any]:
    results = read_json(path)
    if not isinstance(results, dict) or results.get("format") != FORMAT:
        raise ExperimentError(f"{path} is not a stagevar results file (format {FORMAT})")
    return results


def compact_histogram(obj: dict[str, Any], per_octave: int) -> dict[str, Any]:
    """The same histogram with buckets merged to `per_octave` per power of
    two (libstagevar has 64): a smaller file, quantiles within 1/per_octave."""
    merged: dict[float, list[float]] = {}
    for low, width, count in obj.get("histogram") or []:
        if low < 64:
            key, w = float(low), float(width)
        else:
            octave = 2.0 ** math.floor(math.log2(low))
            w = max(octave / per_octave, float(width))
            key = math.floor(low / w) * w
        entry = merged.setdefault(key, [key, w, 0])
        entry[2] += count
    out = dict(obj)
    out["histogram"] = [[lo, w, int(c)] for lo, w, c in sorted(merged.values())]
    return out


def compact_results(results: dict[str, Any], per_octave: int) -> dict[str, Any]:
    """A copy with every run's latency histogram at `per_octave` buckets per
    power of two, noted in the results."""
    if per_octave not in (4, 8, 16, 32, 64):
        raise ExperimentError(f"buckets per power of two must be 4, 8, 16, 32 or 64, not {per_octave}")
    out = json.loads(json.dumps(results))
    profile_runs = [run for p in out.get("profiles", []) for run in p.get("runs", [])]
    for run in [r for _, r in iter_runs(out)] + profile_runs:
        lg = run.get("loadgen") or {}
        for key in ("latency_scheduled", "batch_size"):
            if lg.get(key):
                lg[key] = compact_histogram(lg[key], per_octave)
    out.setdefault("notes", []).append(
        f"Latency histograms in this results file were compacted to {per_octave} buckets per power "
        f"of two (loadgen records 64): quantiles are within {100 / per_octave:.1f}% of the recorded ones.")
    return out


def iter_runs(results: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for exp in results.get("experiments", []):
        for run in exp["runs"]:
            yield exp, run
