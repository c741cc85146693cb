# SPDX-License-Identifier: BSD-3-Clause
"""What stage tracing costs httpd (`stagevar bench trace --server httpd`):
the fork's saturated throughput with `StageTrace On` at its default
sampling (StageTraceSample 256) and at `StageTraceSample 1` (every
request), each against `StageTrace Off`, in interleaved paired rounds.

Setup, as issue 39 measured it: the fork with one child of --threads
worker threads pinned to the server CPU, a 0.7 KB static file, and h2load
(nghttp2-client, HTTP/1.1) on the client CPU, closed loop with
--clients connections. The threads must outnumber the clients: when no
worker is idle, mpm_event closes idle keep-alive connections, which
h2load counts as failed requests (and this benchmark as an error). Two connection modes (--modes):

  keepalive  every client keeps its connection: h2load --h1
  close      a connection per request: h2load --h1 -H 'Connection: close'
             makes the server close after each response; h2load opens a
             new connection for the next request

A round runs every side once per mode, one server at a time, in an
order that rotates from round to round (off on every, on every off, ...),
each after a --warmup request warm-up; the statistic is the per-round
ratio side/off of requests per second, so slow drifts of the machine
cancel within a round. Printed per mode and side: the median of the
per-round ratios with a bootstrap 95% CI (stats.bootstrap_ci, as the
memcached side), the paired signed-rank test of side against off
(ranks.compare_paired) and each side's median requests/s.

With --cpu-rate R the rounds measure instead the server's CPU time per
request at R requests/s, below saturation: loadgen (open loop, HTTP/1.1)
sends them for --cpu-seconds after a 1-s warm-up, over --clients
keep-alive connections or, in close mode, a new connection per request;
the CPU is httpd's (parent and child) schedstat time over the drive.
There a ratio above 1 is the cost.

    python -m stagevar_bench.trace_cost --server httpd [--rounds R]
        [--requests N] [--warmup N] [--clients C] [--threads T]
        [--cpus SERVER,CLIENT] [--modes keepalive,close]
        [--sides on,every] [--cpu-rate R [--cpu-seconds S]]
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from typing import Sequence

from stagevar_bench import machine
from stagevar_bench.ranks import compare_paired
from stagevar_bench.servers import HttpdServer, build_binary
from stagevar_bench.stats import bootstrap_ci

PAGE = ("stagevar " * 80)[:700] + "\n"      # a 0.7 KB static file
MODES = ("keepalive", "close")
# A window in which h2load saw a request fail (now and then, about one in
# 30 here, a keep-alive connection is closed under h2load, by stock httpd
# as well) is discarded and run again, at most this many times in all.
RETRIES = 3


@dataclass(frozen=True)
class Side:
    key: str
    name: str
    conf: str


SIDES = {
    "off": Side("off", "StageTrace Off", "StageTrace Off\n"),
    "on": Side("on", "StageTrace On (StageTraceSample 256, the default)", "StageTrace On\n"),
    "every": Side("every", "StageTrace On, StageTraceSample 1", "StageTrace On\nStageTraceSample 1\n"),
}


class BenchError(Exception):
    pass


def mpm_conf(threads: int) -> str:
    """One child of `threads` workers: the CPU it is pinned to is the limit."""
    return "\n".join([
        "StartServers 1", "ServerLimit 1", f"ThreadLimit {threads}",
        f"ThreadsPerChild {threads}", "MinSpareThreads 1", f"MaxSpareThreads {threads}",
        f"MaxRequestWorkers {threads}", "MaxConnectionsPerChild 0",
        "MaxKeepAliveRequests 0", "KeepAliveTimeout 5", ""])


def h2load_args(url: str, mode: str, requests: int, clients: int) -> list[str]:
    args = ["h2load", "--h1", "-n", str(requests), "-c", str(clients), "-t", "1"]
    if mode == "close":
        args += ["-H", "Connection: close"]
    return args + [url]


RPS = re.compile(r"finished in [\d.]+\w*, ([\d.]+) req/s")
DONE = re.compile(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed")


def parse_h2load(out: str, requests: int) -> float:
    """Requests per second from h2load's summary; every request must succeed."""
    rps, done = RPS.search(out), DONE.search(out)
    if not rps or not done:
        raise BenchError(f"no h2load summary in its output:\n{out}")
    if int(done[2]) != requests or int(done[3]) != 0:
        raise BenchError(f"h2load: {done[2]} of {requests} requests succeeded, {done[3]} failed")
    return float(rps[1])


def fork_server(side: Side, args: argparse.Namespace) -> HttpdServer:
    """The fork with `side`'s configuration, pinned, started."""
    server = HttpdServer(build_binary("fork", "httpd"),
                         extra_conf=mpm_conf(args.threads) + side.conf,
                         wrap=["taskset", "-c", str(args.cpus[0])])
    server.write_conf()
    (server.docroot / "page.html").write_text(PAGE)
    return server.start()


def measure(side: Side, mode: str, args: argparse.Namespace) -> float:
    """Start the fork with `side`, warm up, and measure one window: its
    saturated requests/s, or with --cpu-rate its CPU us per request."""
    if args.cpu_rate:
        return cpu_per_request(side, mode, args)
    server = fork_server(side, args)
    try:
        client = ["taskset", "-c", str(args.cpus[1])]
        url = server.url("/page.html")
        for n in (args.warmup, args.requests):
            for attempt in range(1, RETRIES + 1):
                proc = subprocess.run(client + h2load_args(url, mode, n, args.clients),
                                      capture_output=True, text=True, timeout=600)
                if proc.returncode != 0:
                    raise BenchError(f"h2load exited {proc.returncode}: {proc.stderr or proc.stdout}")
                try:
                    rps = parse_h2load(proc.stdout, n)
                    break
                except BenchError as e:
                    if attempt == RETRIES:
                        raise
                    print(f"{side.key} {mode}: window discarded ({e}), run again", file=sys.stderr)
        return rps
    finally:
        server.stop()


def loadgen_args(port: int, mode: str, args: argparse.Namespace) -> list[str]:
    conns = (["-c", str(args.clients)] if mode == "keepalive"
             else ["--sequential-clients", str(args.clients), "--requests-per-conn", "1"])
    return ["-P", "http", "-p", str(port), "--path", "/page.html", "-r", str(args.cpu_rate),
            "-d", f"{args.cpu_seconds}s", "-w", "1s", *conns]


def cpu_per_request(side: Side, mode: str, args: argparse.Namespace) -> float:
    """httpd's CPU us per request while loadgen drives it at --cpu-rate."""
    server = fork_server(side, args)
    try:
        assert server.proc is not None
        before = sum(machine.tree_cpu_s(server.proc.pid).values())
        try:
            report = machine.run_loadgen(args.cpus[1], loadgen_args(server.port, mode, args))
        except subprocess.CalledProcessError as e:
            raise BenchError(f"loadgen exited {e.returncode}") from None
        after = sum(machine.tree_cpu_s(server.proc.pid).values())
    finally:
        server.stop()
    counts = report["counts"]
    failed = sum(counts.get(k, 0) for k in ("errors", "lost", "timeouts"))
    if failed:
        raise BenchError(f"loadgen: {failed} of {counts.get('sent', 0)} requests failed at "
                         f"{args.cpu_rate} req/s: lower --cpu-rate below saturation")
    return (after - before) * 1e6 / (counts["sent"] + counts.get("warmup_requests", 0))


def rounds_of(sides: Sequence[Side], args: argparse.Namespace) -> dict[tuple[str, str], list[float]]:
    """{(mode, side key): requests/s per round}, sides interleaved in a
    rotating order within every round."""
    got: dict[tuple[str, str], list[float]] = {(m, s.key): [] for m in args.modes for s in sides}
    for r in range(args.rounds):
        for mode in args.modes:
            order = list(sides[r % len(sides):]) + list(sides[:r % len(sides)])
            for side in order:
                rps = measure(side, mode, args)
                got[(mode, side.key)].append(rps)
                print(f"round {r + 1} {mode} {side.key}: {rps:.{digits(args)}f} "
                      f"{unit(args)}", flush=True)
    return got


def unit(args: argparse.Namespace) -> str:
    return f"us CPU per request at {args.cpu_rate} req/s" if args.cpu_rate else "req/s"


def digits(args: argparse.Namespace) -> int:
    """Decimals printed: whole requests/s, or CPU us per request to 0.01."""
    return 2 if args.cpu_rate else 0


def ratio_line(mode: str, side: Side, values: list[float], off: list[float],
               args: argparse.Namespace) -> str:
    ratios = [v / o for v, o in zip(values, off)]
    ci = bootstrap_ci(ratios)
    places, what = digits(args), unit(args)
    line = (f"{mode} {side.key}/off: x{ci.value:.4f} [{ci.low:.4f} .. {ci.high:.4f}] "
            f"({100 * (ci.value - 1):+.2f}%), {len(ratios)} paired rounds, "
            f"median {statistics.median(values):.{places}f} vs {statistics.median(off):.{places}f} {what}")
    if len(ratios) >= 2:
        line += f", signed-rank p={compare_paired(off, values).p_value:.3g}"
    return line


def parse_cpus(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected SERVER,CLIENT CPU numbers, not '{text}'")
    return int(parts[0]), int(parts[1])


def parse_list(choices: Sequence[str], what: str):
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(t for t in text.split(",") if t)
        bad = [t for t in items if t not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"{what} must be a comma-separated list of {', '.join(choices)}, not '{text}'")
        return items
    return parse


def positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not '{text}'")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stagevar bench trace --server httpd",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=positive, default=8, help="paired rounds (default 8)")
    parser.add_argument("--requests", type=positive, default=100000,
                        help="requests measured per side and round (default 100000)")
    parser.add_argument("--warmup", type=positive, default=20000,
                        help="warm-up requests before each window (default 20000)")
    parser.add_argument("--clients", type=positive, default=8, help="h2load connections (default 8)")
    parser.add_argument("--threads", type=positive, default=16,
                        help="the child's worker threads, more than --clients (default 16)")
    parser.add_argument("--cpus", type=parse_cpus, default=(1, 0),
                        help="server and client CPU (default 1,0)")
    parser.add_argument("--modes", type=parse_list(MODES, "--modes"), default=MODES,
                        help="keepalive and/or close (default both)")
    parser.add_argument("--sides", type=parse_list(("on", "every"), "--sides"),
                        default=("on", "every"), help="sides against off (default on,every)")
    parser.add_argument("--cpu-rate", type=positive, default=0, metavar="R",
                        help="instead of saturated throughput: httpd's CPU time per request at R "
                             "req/s (loadgen, open loop), below saturation")
    parser.add_argument("--cpu-seconds", type=positive, default=5,
                        help="with --cpu-rate: seconds measured per window (default 5)")
    args = parser.parse_args(argv)
    if args.threads <= args.clients:
        parser.error(f"--threads must be more than --clients ({args.clients}), not {args.threads}")
    if not args.cpu_rate and shutil.which("h2load") is None:
        print("stagevar bench trace: error: h2load not found (Debian: nghttp2-client)",
              file=sys.stderr)
        return 2
    binary = build_binary("fork", "httpd")
    if not binary.exists():
        print(f"stagevar bench trace: error: no fork httpd at {binary} (make -C httpd)",
              file=sys.stderr)
        return 2
    sides = [SIDES["off"]] + [SIDES[k] for k in args.sides]
    try:
        got = rounds_of(sides, args)
    except BenchError as e:
        print(f"stagevar bench trace: error: {e}", file=sys.stderr)
        return 1
    for mode in args.modes:
        for side in sides[1:]:
            print(ratio_line(mode, side, got[(mode, side.key)], got[(mode, "off")], args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
