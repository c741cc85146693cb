# SPDX-License-Identifier: BSD-3-Clause
"""stagevar exporter: the memcached forks' stage latency, and the stats an
operator watches beside it, for Prometheus.

    stagevar exporter --target 10.0.0.5:11211 --target 10.0.0.6:11211 --port 9417

Each scrape of /metrics reads, from every target, on one connection:
`stats`, `stats stages hist` and `stats lru_amortized`. Every series
carries `instance="host:port"` of the memcached it came from, so one
exporter serves many servers; scrape it with `honor_labels: true`
(docs/monitoring.md). /probe?target=host:port answers for one of the
configured targets only (Prometheus's multi-target pattern).

A target that does not answer is `stagevar_memcached_up 0` and nothing
else: never zeros that would read as an idle server. It is read again at
the next scrape, so it comes back as soon as the server does.

Stage histograms follow docs/monitoring.md ("Exposition"): fixed edges
that are libstagevar bucket boundaries, so the server's buckets are
coarsened, never re-binned. They need the fork to answer `stats stages
hist` with its buckets (`<stage>:bucket_<low_ns> <count>` lines); a fork
that answers only the summaries gets no stage histogram and
`stagevar_memcached_stage_histograms 0`. The server's own summary (its
Welford mean and standard deviation, extremes, quantiles) is served as
gauges either way, from the same reply as the buckets.

For a memcached on the exporter's own host, proved by the connection it
asks on (local_server.py), it also serves the advisor's scheduling
evidence from /proc: per thread name, CPU, run-queue wait and timeslices;
and the other tasks' CPU on the server's allowed CPUs
(docs/monitoring.md, "Scheduling evidence").
"""
from __future__ import annotations

import argparse
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterable, Iterator, Mapping, NoReturn, Sequence
from urllib.parse import parse_qs, urlparse

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, Metric)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from stagevar_bench.local_server import OutsideCpu, ProcReading, read_proc, serving_pid
from stagevar_bench.memcache_client import parse_stats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_PORT = 9417
MAX_PARALLEL = 32           # targets read at once in one scrape
STAGES = ("kernel_to_read", "read_to_parse", "parse_to_response", "response_to_send",
          "server_total", "batch_idle")
SUMMARY_FIELDS = ("mean", "stddev", "min", "max", "p50", "p90", "p99", "p999")


# ------------------------------------------------------------ bucket edges

def stage_edges_ns() -> list[int]:
    """libstagevar's bucket lower bounds for every 8th sub-bucket (8 per
    power of two), from 2^10 ns up to and including 2^32 ns: 177 edges."""
    edges = [(8 + j) << (e - 3) for e in range(10, 32) for j in range(8)]
    return edges + [1 << 32]


STAGE_EDGES_NS = stage_edges_ns()
BATCH_EDGES = [1 << k for k in range(11)]          # 1, 2, 4, ..., 1024


def le_seconds(ns: int) -> str:
    return "%.9g" % (ns / 1e9)


def cumulative(buckets: Mapping[int, int], edges: Sequence[int], inclusive: bool) -> list[int]:
    """Counts of the values below each edge (`inclusive`: at or below an
    integer edge), from {libstagevar bucket low bound: count}. A stage edge
    is itself a bucket boundary, so each bucket lies wholly on one side."""
    lows = sorted(buckets)
    out, seen, i = [], 0, 0
    for edge in edges:
        while i < len(lows) and (lows[i] <= edge if inclusive else lows[i] < edge):
            seen += buckets[lows[i]]
            i += 1
        out.append(seen)
    return out


# ------------------------------------------------------------ one server

@dataclass
class Target:
    host: str
    port: int

    @property
    def instance(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_target(text: str) -> Target:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad target {text!r}: expected host:port, e.g. 127.0.0.1:11211")
    return Target(host, int(port))


FAILED = (b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")    # a reply line, its CRLF split off


def ask(sock: socket.socket, line: str) -> str | None:
    """One stats command; its reply, or None if the server refused it
    (a group the server does not have)."""
    sock.sendall(line.encode() + b"\r\n")
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"{line}: the server closed the connection")
        data += chunk
        if data.endswith(b"END\r\n"):
            return data.decode(errors="replace")
        last = data.rsplit(b"\r\n", 2)
        if data.endswith(b"\r\n") and len(last) >= 2 and last[-2].lstrip().startswith(FAILED):
            return None


@dataclass
class Reading:
    stats: dict[str, str]
    stages: dict[str, str]          # empty: tracing off, or not the fork
    lru: dict[str, str]
    proc: ProcReading | None = None     # the server is a process on this host (local_server.py)


def read_server(target: Target, timeout: float) -> Reading:
    with socket.create_connection((target.host, target.port), timeout=timeout) as s:
        s.settimeout(timeout)
        stats = parse_stats(ask(s, "stats") or "")
        pid = serving_pid(s, stats.get("pid"))      # while the connection that proves it is open
        stages = parse_stats(ask(s, "stats stages hist") or "")
        lru = parse_stats(ask(s, "stats lru_amortized") or "")
    return Reading(stats, stages, lru, read_proc(pid) if pid is not None else None)


# ------------------------------------------------------------ metrics

# Standard `stats` fields: (name, counter?, help).
STATS = (
    ("uptime", False, "Seconds since the server started."),
    ("curr_connections", False, "Open connections."),
    ("total_connections", True, "Connections accepted."),
    ("cmd_get", True, "get commands."),
    ("cmd_set", True, "set commands."),
    ("get_hits", True, "get hits."),
    ("get_misses", True, "get misses."),
    ("curr_items", False, "Items stored."),
    ("bytes", False, "Bytes used by items."),
    ("limit_maxbytes", False, "The cache's size in bytes."),
    ("evictions", True, "Items evicted to make room."),
    ("reclaimed", True, "Expired items' memory reused."),
    ("rusage_user", True, "User CPU seconds."),
    ("rusage_system", True, "System CPU seconds."),
)


def number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def stage_buckets(stages: Mapping[str, str], stage: str) -> tuple[dict[int, int], int] | None:
    """{low_ns: count} and the overflow of `stats stages hist`, or None
    when the reply has no buckets for the stage."""
    prefix = f"{stage}:bucket_"
    buckets = {int(k[len(prefix):]): int(v) for k, v in stages.items()
               if k.startswith(prefix) and k[len(prefix):].isdigit() and v.isdigit()}
    overflow = stages.get(f"{stage}:overflow")
    if not buckets and overflow is None:
        return None
    return buckets, int(overflow or 0)


class Families:
    """The metric families of one scrape, filled target by target."""

    def __init__(self, outside: OutsideCpu | None = None) -> None:
        self.outside_cpu = outside or OutsideCpu()
        inst = ["instance"]
        self.up = GaugeMetricFamily("stagevar_memcached_up", "1 if the memcached answered this scrape.",
                                    labels=inst)
        self.trace = GaugeMetricFamily("stagevar_memcached_stage_trace",
                                       "1 if the server traces stages (-o stage_trace).", labels=inst)
        self.hists = GaugeMetricFamily("stagevar_memcached_stage_histograms",
                                       "1 if the server gives its stage buckets (stats stages hist).",
                                       labels=inst)
        st = ["instance", "stage"]
        self.stage = HistogramMetricFamily(
            "stagevar_stage_seconds", "Per-stage request latency (libstagevar log-linear edges).", labels=st)
        self.missing = CounterMetricFamily("stagevar_stage_missing", "Traced requests without an event "
                                           "the stage needs.", labels=st)
        self.dropped = CounterMetricFamily("stagevar_stage_dropped", "Spans that came out negative.",
                                           labels=st)
        self.batch = HistogramMetricFamily("stagevar_batch_size", "Requests per traced socket read.",
                                           labels=inst)
        self.summary = GaugeMetricFamily("stagevar_memcached_stage_stat_seconds",
                                         "The server's own summary of a stage (Welford mean and stddev, "
                                         "extremes, quantiles) since start or stats reset.",
                                         labels=["instance", "stage", "stat"])
        self.stats: dict[str, Metric] = {
            name: (CounterMetricFamily if counter else GaugeMetricFamily)(
                f"stagevar_memcached_{name}", text, labels=inst)
            for name, counter, text in STATS}
        self.lru = GaugeMetricFamily("stagevar_memcached_lru_amortized",
                                     "stats lru_amortized, one series per field.", labels=["instance", "field"])
        # Scheduling evidence, only for a memcached verified to run on this host.
        self.local = GaugeMetricFamily("stagevar_memcached_local_process",
                                       "1 if the memcached is a process on the exporter's host that the "
                                       "exporter reads from /proc (its threads, its CPUs' other tasks).",
                                       labels=inst)
        th = ["instance", "thread"]
        self.threads = GaugeMetricFamily("stagevar_memcached_threads", "Threads of this name.", labels=th)
        self.thread_cpu = CounterMetricFamily(
            "stagevar_memcached_thread_cpu_seconds", "On-CPU time of the threads of this name "
            "(/proc/PID/task/*/schedstat), summed.", labels=th)
        self.thread_wait = CounterMetricFamily(
            "stagevar_memcached_thread_runqueue_seconds", "Time the threads of this name were runnable "
            "but waiting for a CPU (run-queue delay), summed.", labels=th)
        self.thread_slices = CounterMetricFamily(
            "stagevar_memcached_thread_timeslices", "Times the threads of this name were put on a CPU, "
            "summed.", labels=th)
        self.cpus = GaugeMetricFamily("stagevar_memcached_allowed_cpus",
                                      "CPUs the server may run on (Cpus_allowed_list).", labels=inst)
        self.outside = CounterMetricFamily(
            "stagevar_memcached_other_tasks_cpu_seconds", "CPU time other tasks took on the CPUs the "
            "server may run on: their busy time (/proc/stat) less the server's own.", labels=inst)

    def add(self, inst: str, r: Reading) -> None:
        self.up.add_metric([inst], 1)
        self.local.add_metric([inst], 0 if r.proc is None else 1)
        if r.proc is not None:
            self.add_proc(inst, r.proc)
        for name, _, _ in STATS:
            v = number(r.stats.get(name))
            if v is not None:
                self.stats[name].add_metric([inst], v)
        for field, value in r.lru.items():
            v = number(value)
            if v is not None:
                self.lru.add_metric([inst, field], v)
        tracing = r.stages.get("stage_trace") == "on"
        self.trace.add_metric([inst], 1 if tracing else 0)
        if not tracing:
            return
        with_buckets = 0
        for stage in STAGES:
            if f"{stage}:count" not in r.stages:
                continue
            self.add_stage(inst, stage, r.stages)
            with_buckets = with_buckets or int(stage_buckets(r.stages, stage) is not None)
        self.hists.add_metric([inst], with_buckets)
        batch = stage_buckets(r.stages, "batch_size")
        if batch:
            counts = cumulative(batch[0], BATCH_EDGES, inclusive=True)
            total = sum(batch[0].values()) + batch[1]
            mean = number(r.stages.get("batch_size:mean")) or 0.0
            self.batch.add_metric([inst], [(str(e), c) for e, c in zip(BATCH_EDGES, counts)]
                                  + [("+Inf", total)], sum_value=total * mean)

    def add_proc(self, inst: str, p: ProcReading) -> None:
        for name, (n, sched) in sorted(p.threads.items()):
            labels = [inst, name]
            self.threads.add_metric(labels, n)
            self.thread_cpu.add_metric(labels, sched.run_ns / 1e9)
            self.thread_wait.add_metric(labels, sched.wait_ns / 1e9)
            self.thread_slices.add_metric(labels, sched.timeslices)
        self.cpus.add_metric([inst], len(p.cpus))
        self.outside.add_metric([inst], self.outside_cpu.update(inst, p))

    def add_stage(self, inst: str, stage: str, s: Mapping[str, str]) -> None:
        labels = [inst, stage]
        self.missing.add_metric(labels, number(s.get(f"{stage}:missing")) or 0)
        self.dropped.add_metric(labels, number(s.get(f"{stage}:dropped")) or 0)
        for f in SUMMARY_FIELDS:
            v = number(s.get(f"{stage}:{f}_ns"))
            if v is not None:
                self.summary.add_metric([inst, stage, f], v / 1e9)
        hist = stage_buckets(s, stage)
        if hist is None:
            return
        buckets, overflow = hist
        total = sum(buckets.values()) + overflow
        counts = cumulative(buckets, STAGE_EDGES_NS, inclusive=False)
        mean_ns = number(s.get(f"{stage}:mean_ns")) or 0.0
        self.stage.add_metric(labels, [(le_seconds(e), c) for e, c in zip(STAGE_EDGES_NS, counts)]
                              + [("+Inf", total)], sum_value=total * mean_ns / 1e9)

    def all(self) -> Iterator[Metric]:
        yield from (self.up, self.trace, self.hists, self.stage, self.missing, self.dropped,
                    self.batch, self.summary, *self.stats.values(), self.lru, self.local, self.threads,
                    self.thread_cpu, self.thread_wait, self.thread_slices, self.cpus, self.outside)


class MemcachedCollector(Collector):
    def __init__(self, targets: Sequence[Target], timeout: float, outside: OutsideCpu | None = None) -> None:
        self.targets = list(targets)
        self.timeout = timeout
        self.outside = outside

    def read(self, t: Target) -> Reading | None:
        try:
            return read_server(t, self.timeout)
        except (OSError, ValueError):
            return None

    def collect(self) -> Iterable[Metric]:
        """Every target at once: a scrape takes one --timeout at most."""
        fams = Families(self.outside)
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(self.targets))) as pool:
            readings = list(pool.map(self.read, self.targets))
        for t, reading in zip(self.targets, readings):
            if reading is None:
                fams.up.add_metric([t.instance], 0)
            else:
                fams.add(t.instance, reading)
        return list(fams.all())


def exposition(targets: Sequence[Target], timeout: float, outside: OutsideCpu | None = None) -> bytes:
    """One scrape. `outside` carries the other-tasks counters from scrape
    to scrape (a fresh one starts them at 0)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MemcachedCollector(targets, timeout, outside))
    return generate_latest(registry)


# ------------------------------------------------------------ HTTP

INDEX = b"""<html><head><title>stagevar exporter</title></head><body>
<h1>stagevar exporter</h1><p><a href="/metrics">/metrics</a>: every target;
/probe?target=host:port: one of them.</p></body></html>
"""


def handler(targets: Sequence[Target], timeout: float) -> type[BaseHTTPRequestHandler]:
    by_instance = {t.instance: t for t in targets} | {f"{t.host}:{t.port}": t for t in targets}
    outside = OutsideCpu()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path == "/metrics":
                self.reply(200, exposition(targets, timeout, outside), CONTENT_TYPE)
            elif url.path == "/probe":
                want = parse_qs(url.query).get("target", [""])[0]
                if want not in by_instance:
                    self.reply(400, f"target {want!r} is not one of --target\n".encode(), "text/plain")
                else:
                    self.reply(200, exposition([by_instance[want]], timeout, outside), CONTENT_TYPE)
            elif url.path == "/":
                self.reply(200, INDEX, "text/html")
            else:
                self.reply(404, b"not found\n", "text/plain")

        def reply(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass                                        # one line per scrape is noise

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], h: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, h)


# ------------------------------------------------------------ command line

class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def positive_seconds(text: str) -> float:
    try:
        v = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad timeout {text!r} (seconds, e.g. 2 or 0.5s)") from None
    if not 0 < v <= 60:
        raise argparse.ArgumentTypeError(f"timeout {text!r} must be > 0 and <= 60 seconds")
    return v


def port_number(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"bad port {text!r} (1-65535)")
    return int(text)


def target_arg(text: str) -> Target:
    try:
        return parse_target(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> Parser:
    p = Parser(prog="stagevar exporter",
               description="Serve the memcached forks' stage histograms and stats to Prometheus, "
                           "and, for a memcached on this host, its threads' scheduling counters.")
    p.add_argument("--target", action="append", type=target_arg, required=True, metavar="HOST:PORT",
                   help="a memcached to read (repeat for several); its series carry instance=HOST:PORT")
    p.add_argument("--listen", default="127.0.0.1", metavar="ADDR",
                   help="address to serve on (default 127.0.0.1; 0.0.0.0 or :: for every interface)")
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"port to serve on (default {DEFAULT_PORT})")
    p.add_argument("--timeout", type=positive_seconds, default=2.0,
                   help="per target and scrape: connect and read within this (default 2s)")
    p.add_argument("--once", action="store_true", help="print one exposition on stdout and exit")
    return p


def main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(f"stagevar exporter: error: {e}", file=sys.stderr)
        return 2
    if args.once:
        sys.stdout.write(exposition(args.target, args.timeout).decode())
        return 0
    try:
        server = Server((args.listen, args.port), handler(args.target, args.timeout))
    except (OSError, OverflowError) as e:
        print(f"stagevar exporter: error: cannot listen on {args.listen!r} port {args.port}: {e}",
              file=sys.stderr)
        return 2
    print(f"stagevar exporter: serving {len(args.target)} target(s) on "
          f"http://{args.listen}:{server.server_address[1]}/metrics", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


__all__ = ["main", "exposition", "stage_edges_ns", "cumulative", "parse_target", "Target"]
