# SPDX-License-Identifier: BSD-3-Clause
"""stagevar bench peers: loadgen side by side with mutilate and wrk2.

mutilate (github.com/leverich/mutilate) and wrk2 (github.com/giltene/wrk2)
are not part of stagevar and are never committed: build them outside the
repository (docs/stagevar/bench.md says how) and put them on PATH as
`mutilate` and `wrk2`, or name them with --mutilate/--wrk2 (or
$STAGEVAR_MUTILATE/$STAGEVAR_WRK2). A part whose peer is missing is
skipped with a note.

Every run is on loopback: the server pinned to --server-cpu, the tool to
--client-cpu. Within a repeat every side runs once, in the same order,
so sides alternate run by run (ABAB...). Printed: each run's figures,
then per side the median [min..max] over repeats of each percentile, and
per percentile the ratio loadgen / peer of the medians with the range of
the per-repeat ratios.

Parts (--only):
  memcached  stock memcached -t 1 at each of --rates: loadgen with its
             defaults, loadgen --spin-us 100000 (never sleeps), mutilate
             -d 1 and mutilate -d 16 (both spinning, mutilate's default)
  http       stock httpd (or the fork with StageTrace on, --httpd fork) at
             --http-rate: loadgen with its defaults, loadgen sending as
             wrk2 does (-a det --batch-interval-us B, each B of
             --http-batch-us), and wrk2 (corrected and uncorrected)
  co         coordinated omission: the server stopped (SIGSTOP) for
             --stop-ms in the middle of a --co-window run at --co-rate;
             each tool's p99
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from stagevar_bench.machine import load_and_idle_text, loadavg_text, loadgen_path
from stagevar_bench.servers import HttpdServer, MemcachedServer, build_binary, stop_process

PERCENTILES = (50.0, 90.0, 99.0, 99.9)
# mutilate's defaults (-r, -K, -V), given to both tools so they ask for the same items.
KEYS, KEY_SIZE, VALUE_SIZE = 10000, 30, 200
# wrk2 records nothing in its first 10 s (CALIBRATE_DELAY_MS, plus 5 ms a
# connection): its measurement window is what follows.
WRK2_CALIBRATION_S = 10.0
HTTP_PATH = "/index.html"
HTTP_BODY = "<html><body>stagevar bench peers</body></html>\n" * 4
SLACK_S = 60.0          # on top of a run's own length, before it is killed
PARTS = ("memcached", "http", "co")
HOW_TO_GET = {
    "mutilate": "build it from github.com/leverich/mutilate outside the repository "
                "(docs/stagevar/bench.md, 'Building the peers') and put it on PATH or pass --mutilate PATH",
    "wrk2": "build it from github.com/giltene/wrk2 outside the repository "
            "(docs/stagevar/bench.md, 'Building the peers'), install its `wrk` as `wrk2` on PATH "
            "or pass --wrk2 PATH",
}

Figures = dict[float, float]           # percentile -> microseconds
Run = dict[str, Figures]               # series name -> figures
Problems = dict[str, int]              # what went wrong in a run -> how many requests


# ------------------------------------------------------------- parsing

def time_us(text: str) -> float:
    """wrk2's '283.00us', '1.10ms', '2.35s', '5.00m' -> microseconds."""
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", text.strip())
    if not m:
        raise ValueError(f"not a wrk2 time: {text!r}")
    return float(m.group(1)) * {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6}[m.group(2)]


def parse_mutilate(text: str) -> dict[str, float]:
    """mutilate's summary: the 'read' row (us: avg, std, min, p5, p10, p90,
    p95, p99), 'qps', 'misses' and 'skipped'."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["read"] and len(words) == 9:
            out.update(zip(("avg", "std", "min", "p5", "p10", "p90", "p95", "p99"), map(float, words[1:])))
        elif line.startswith("Total QPS ="):
            out["qps"] = float(line.split()[3])
        elif line.startswith("Misses ="):
            out["misses"] = float(line.split()[2])
        elif line.startswith("Skipped TXs ="):
            out["skipped"] = float(line.split()[3])
    if "p99" not in out:
        raise ValueError("no 'read' row in mutilate's output")
    return out


def mutilate_samples(text: str) -> list[float]:
    """The latencies (us) of mutilate --save FILE: 'start latency' per line."""
    return [float(line.split()[1]) for line in text.splitlines() if line.strip()]


def percentiles(samples: Sequence[float]) -> Figures:
    """PERCENTILES of raw samples, as mutilate itself takes them (the
    sample at index floor(n * p / 100) of the sorted list)."""
    if not samples:
        raise ValueError("no samples")
    s = sorted(samples)
    return {p: s[min(len(s) - 1, int(len(s) * p / 100))] for p in PERCENTILES}


@dataclass
class Wrk2Report:
    corrected: Figures                  # from each request's intended start
    uncorrected: Figures                # from its actual write (-U)
    requests: int = 0
    rate: float = 0.0
    errors: int = 0                     # socket errors and non-2xx/3xx replies


def parse_wrk2(text: str) -> Wrk2Report:
    """wrk2 -L -U's output: both 'Latency Distribution' blocks (50%, 90%,
    99%, 99.9% lines), the request count and rate, and the errors."""
    blocks: dict[str, Figures] = {}
    current = ""
    rep = Wrk2Report({}, {})
    for line in text.splitlines():
        if line.startswith("  Latency Distribution"):
            current = "uncorrected" if "Uncorrected" in line else "corrected"
            blocks[current] = {}
            continue
        m = re.fullmatch(r"\s*([0-9.]+)%\s+([0-9.]+(?:us|ms|s|m))", line)
        if m and current:
            p = float(m.group(1))
            if p in PERCENTILES:
                blocks[current][p] = time_us(m.group(2))
            continue
        if m := re.match(r"\s*(\d+) requests in ", line):
            rep.requests = int(m.group(1))
        elif line.startswith("Requests/sec:"):
            rep.rate = float(line.split()[1])
        elif line.strip().startswith("Socket errors:"):
            rep.errors += sum(int(n) for n in re.findall(r"\d+", line))
        elif line.strip().startswith("Non-2xx or 3xx responses:"):
            rep.errors += int(line.split()[-1])
    for name in ("corrected", "uncorrected"):
        if set(blocks.get(name, {})) != set(PERCENTILES):
            raise ValueError(f"wrk2's output has no complete {name} latency distribution (run it with -L -U)")
    rep.corrected, rep.uncorrected = blocks["corrected"], blocks["uncorrected"]
    return rep


def wrk2_run(rep: Wrk2Report) -> tuple[Run, Problems]:
    return ({"corrected": rep.corrected, "uncorrected": rep.uncorrected},
            {"errors": rep.errors} if rep.errors else {})


LOADGEN_SERIES = {"sched": "latency_scheduled", "sent": "latency_sent", "read": "latency_read",
                  "client_delay": "client_delay", "sched_err": "schedule_error"}


def loadgen_run(report: dict[str, Any]) -> Run:
    """A loadgen JSON report's series (us) under short names: sched (from
    the schedule to the kernel's RX stamp), sent (from the send), read
    (from the schedule to the loop's read), client_delay, sched_err."""
    keys = {50.0: "p50", 90.0: "p90", 99.0: "p99", 99.9: "p999"}
    return {short: {p: report[long][k] / 1e3 for p, k in keys.items()}
            for short, long in LOADGEN_SERIES.items()}


def loadgen_problems(report: dict[str, Any]) -> Problems:
    """loadgen's counters of requests that went wrong, those not zero."""
    return {k: int(report["counts"][k]) for k in ("errors", "unexpected", "lost", "timeouts")
            if report["counts"][k]}


def stage_run(stats: dict[str, Any]) -> Run:
    """The httpd fork's /stage-stats?json stages (us), those a comparison needs."""
    keys = {50.0: "p50_ns", 90.0: "p90_ns", 99.0: "p99_ns", 99.9: "p999_ns"}
    return {name: {p: stats["stages"][name][k] / 1e3 for p, k in keys.items()}
            for name in ("server_total", "kernel_to_read", "listener_to_worker")}


# ------------------------------------------------------------- tables

def median_range(values: Sequence[float]) -> str:
    return f"{statistics.median(values):9.1f} [{min(values):.1f}..{max(values):.1f}]"


def figures_table(title: str, runs: dict[str, list[Run]]) -> str:
    """Per side and series, median [min..max] over the repeats of each percentile."""
    head = "".join(f"{f'p{p:g}':>26}" for p in PERCENTILES)
    lines = [title, f"  {'side / series':<34}{head}"]
    for side, side_runs in runs.items():
        for series in side_runs[0]:
            cells = "".join(f"{median_range([r[series][p] for r in side_runs]):>26}" for p in PERCENTILES)
            lines.append(f"  {side + ' ' + series:<34}{cells}")
    return "\n".join(lines)


@dataclass
class Comparison:
    label: str
    ours: list[Figures]                 # one per repeat
    theirs: list[Figures]               # the same repeats, same order
    rows: list[tuple[float, float, float, float, float, float]] = field(init=False)

    def __post_init__(self) -> None:
        """(percentile, our median, their median, ratio of medians, min and
        max of the per-repeat ratios) for each percentile."""
        self.rows = []
        for p in PERCENTILES:
            a, b = [f[p] for f in self.ours], [f[p] for f in self.theirs]
            per = [x / y for x, y in zip(a, b) if y > 0]
            ma, mb = statistics.median(a), statistics.median(b)
            self.rows.append((p, ma, mb, ma / mb if mb > 0 else float("nan"),
                              min(per, default=float("nan")), max(per, default=float("nan"))))

    def ratio(self, p: float) -> float:
        return next(r[3] for r in self.rows if r[0] == p)


def ratio_table(title: str, comparisons: Sequence[Comparison]) -> str:
    lines = [title, f"  {'loadgen / peer':<52}{'pct':>6}{'ours us':>10}{'theirs us':>11}{'ratio':>8}"
                    f"  per-repeat ratios"]
    for c in comparisons:
        for i, (p, a, b, r, lo, hi) in enumerate(c.rows):
            lines.append(f"  {c.label if i == 0 else '':<52}{f'p{p:g}':>6}{a:>10.1f}{b:>11.1f}{r:>8.2f}"
                         f"  [{lo:.2f}..{hi:.2f}]")
    return "\n".join(lines)


# ------------------------------------------------------------- running

@dataclass
class Tools:
    loadgen: Path
    mutilate: Path | None
    wrk2: Path | None


def find_tool(name: str, given: Path | None, env: str) -> Path | None:
    """--NAME PATH, else $ENV, else NAME on PATH; None when none is set.
    A path given (by option or variable) must be an executable."""
    path = given or (Path(os.environ[env]) if os.environ.get(env) else None)
    if path is not None:
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BadArgument(f"{'--' + name if given else '$' + env} {path}: not an executable file")
        return path
    found = shutil.which(name)
    return Path(found) if found else None


class BadArgument(Exception):
    """A bad option value: one line, exit status 2."""


def pinned(cpu: int, cmd: Sequence[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *cmd]


def run_checked(cmd: list[str], timeout: float) -> str:
    """Run `cmd`, bounded by `timeout`; its stdout, or an error naming it."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {out.returncode}: {out.stderr.strip()[-500:]}")
    return out.stdout


@dataclass
class Bench:
    args: argparse.Namespace
    tools: Tools

    def loadgen_cmd(self, port: int, rate: float, extra: Sequence[str], json_path: str,
                    window: float, warmup: float) -> list[str]:
        a = self.args
        return pinned(a.client_cpu, [str(self.tools.loadgen), "-p", str(port), "--cpus", str(a.client_cpu),
                                     "-r", f"{rate:.0f}", "-d", f"{window:g}", "-w", f"{warmup:g}",
                                     "--quiet", "--json", json_path, *extra])

    def loadgen(self, port: int, rate: float, extra: Sequence[str]) -> tuple[Run, Problems]:
        a = self.args
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            run_checked(self.loadgen_cmd(port, rate, extra, out.name, a.duration, a.warmup),
                        a.duration + a.warmup + SLACK_S)
            report = json.loads(Path(out.name).read_text())
        return loadgen_run(report), loadgen_problems(report)

    def mutilate_cmd(self, port: int, rate: float, depth: int, seconds: int, warmup: int,
                     save: str, load: bool = True) -> list[str]:
        assert self.tools.mutilate is not None
        return pinned(self.args.client_cpu, [
            str(self.tools.mutilate), "-s", f"127.0.0.1:{port}", "-T", "1", "-c", str(self.args.connections),
            "-d", str(depth), "-q", f"{rate:.0f}", "-t", str(seconds), "-w", str(warmup),
            "-K", str(KEY_SIZE), "-V", str(VALUE_SIZE), "-r", str(KEYS), "-u", "0", "--save", save,
            *([] if load else ["--noload"])])

    def mutilate(self, port: int, rate: float, depth: int) -> tuple[Run, Problems]:
        a = self.args
        with tempfile.NamedTemporaryFile(suffix=".txt") as save:
            text = run_checked(self.mutilate_cmd(port, rate, depth, a.duration, a.warmup, save.name),
                               a.duration + a.warmup + SLACK_S)
            samples = mutilate_samples(Path(save.name).read_text())
        misses = int(parse_mutilate(text).get("misses", 0))
        return {"latency": percentiles(samples)}, {"misses": misses} if misses else {}

    def wrk2_cmd(self, port: int, rate: float, window: float) -> list[str]:
        assert self.tools.wrk2 is not None
        seconds = int(WRK2_CALIBRATION_S + window + 0.999)
        return pinned(self.args.client_cpu, [
            str(self.tools.wrk2), "-t", "1", "-c", str(self.args.http_connections), "-d", f"{seconds}s",
            "-R", f"{rate:.0f}", "-L", "-U", f"http://127.0.0.1:{port}{HTTP_PATH}"])

    def wrk2(self, port: int, rate: float) -> tuple[Run, Problems]:
        text = run_checked(self.wrk2_cmd(port, rate, self.args.duration),
                           WRK2_CALIBRATION_S + self.args.duration + SLACK_S)
        return wrk2_run(parse_wrk2(text))

    # --------------------------------------------------------- servers

    def memcached(self) -> MemcachedServer:
        return MemcachedServer(build_binary("stock", "memcached"), args=["-t", "1"],
                               wrap=["taskset", "-c", str(self.args.server_cpu)])

    @contextmanager
    def httpd(self, variant: str) -> Iterator[HttpdServer]:
        """A fresh httpd serving HTTP_PATH; the fork with StageTrace on and /stage-stats."""
        extra = ("StageTrace on\n<Location \"/stage-stats\">\n    SetHandler stage-stats\n"
                 "    Require ip 127.0.0.1 ::1\n</Location>\n") if variant == "fork" else ""
        with HttpdServer(build_binary(variant, "httpd"), extra_conf=extra,
                         wrap=["taskset", "-c", str(self.args.server_cpu)]) as h:
            (h.docroot / HTTP_PATH.lstrip("/")).write_text(HTTP_BODY)
            yield h


def alternate(sides: dict[str, Callable[[], tuple[Run, Problems]]], repeats: int, label: str) -> dict[str, list[Run]]:
    """Each side once per repeat, in order (ABAB...): its runs, and one line per run."""
    runs: dict[str, list[Run]] = {name: [] for name in sides}
    for i in range(repeats):
        for name, measure in sides.items():
            run, problems = measure()
            runs[name].append(run)
            cells = ", ".join(f"{series} p50 {f[50.0]:.1f} p99 {f[99.0]:.1f}" for series, f in run.items()
                              if series not in ("sched_err", "client_delay"))
            warn = "; requests " + ", ".join(f"{k} {n}" for k, n in problems.items()) if problems else ""
            print(f"{label} repeat {i + 1} {name}: {cells} us{warn}", flush=True)
    return runs


def bar(what: str, ratio: float, lo: float, hi: float) -> str:
    return f"  {what}: {ratio:.3f} (bar {lo:.2f}..{hi:.2f}: {'within' if lo <= ratio <= hi else 'OUTSIDE'})"


def part_memcached(b: Bench) -> None:
    a = b.args
    load = ["-c", str(a.connections), "--keys", str(KEYS), "--key-size", str(KEY_SIZE),
            "--value-size", str(VALUE_SIZE), "--get-ratio", "1", "--preload"]
    with b.memcached() as mc:
        for rate in a.rates:
            sides: dict[str, Callable[[], tuple[Run, Problems]]] = {
                "loadgen": lambda rate=rate: b.loadgen(mc.port, rate, load),
                "loadgen-spin": lambda rate=rate: b.loadgen(mc.port, rate, [*load, "--spin-us", "100000"]),
                "mutilate-d1": lambda rate=rate: b.mutilate(mc.port, rate, 1),
                "mutilate-d16": lambda rate=rate: b.mutilate(mc.port, rate, 16),
            }
            runs = alternate(sides, a.repeats, f"memcached {rate} req/s")
            lg, spin = runs["loadgen"], runs["loadgen-spin"]
            d1 = [r["latency"] for r in runs["mutilate-d1"]]
            d16 = [r["latency"] for r in runs["mutilate-d16"]]
            print()
            print(figures_table(f"stock memcached -t 1, {rate} req/s, {a.connections} connections, "
                                f"median [min..max] of {a.repeats} runs, us", runs))
            comps = [
                Comparison("loadgen sched (kernel RX) / mutilate -d 1", [r["sched"] for r in lg], d1),
                Comparison("loadgen read (loop read) / mutilate -d 1", [r["read"] for r in lg], d1),
                Comparison("loadgen --spin-us 100000 read / mutilate -d 1", [r["read"] for r in spin], d1),
                Comparison("loadgen sched / loadgen --spin-us 100000 sched", [r["sched"] for r in lg],
                           [r["sched"] for r in spin]),
                Comparison("loadgen sent / mutilate -d 16", [r["sent"] for r in lg], d16),
                Comparison("loadgen sched / mutilate -d 16", [r["sched"] for r in lg], d16),
            ]
            print(ratio_table(f"ratios at {rate} req/s", comps))
            print(bar("p50 loadgen (defaults) / mutilate -d 1", comps[0].ratio(50.0), 0.9, 1.1))
            print(bar("p50 loadgen (defaults) / loadgen --spin-us 100000", comps[3].ratio(50.0), 0.9, 1.1))
            print(bar("p99 loadgen from the send / mutilate -d 16", comps[4].ratio(99.0), 0.8, 1.2))
            print(flush=True)


def part_http(b: Bench) -> None:
    a = b.args
    load = ["-P", "http", "--path", HTTP_PATH, "-c", str(a.http_connections)]

    def in_httpd(measure: Callable[[int], tuple[Run, Problems]]) -> Callable[[], tuple[Run, Problems]]:
        def run() -> tuple[Run, Problems]:
            with b.httpd(a.httpd) as h:
                result, problems = measure(h.port)
                if a.httpd == "fork":
                    with urllib.request.urlopen(h.url("/stage-stats?json"), timeout=10) as r:
                        result.update(stage_run(json.load(r)))
            return result, problems
        return run

    sides = {"loadgen": in_httpd(lambda port: b.loadgen(port, a.http_rate, load))}
    for us in a.http_batch_us:
        sides[f"loadgen-det-b{us}"] = in_httpd(
            lambda port, us=us: b.loadgen(port, a.http_rate, [*load, "-a", "det", "--batch-interval-us", str(us)]))
    sides["wrk2"] = in_httpd(lambda port: b.wrk2(port, a.http_rate))
    runs = alternate(sides, a.repeats, f"{a.httpd} httpd {a.http_rate} req/s")
    wrk2 = runs.pop("wrk2")
    print()
    print(figures_table(f"{a.httpd} httpd, {a.http_rate} req/s, {a.http_connections} connections, "
                        f"median [min..max] of {a.repeats} runs, us", {**runs, "wrk2": wrk2}))
    comps = []
    for name, side in runs.items():
        comps += [Comparison(f"{name} sched / wrk2 corrected", [r["sched"] for r in side],
                             [r["corrected"] for r in wrk2]),
                  Comparison(f"{name} sent / wrk2 uncorrected", [r["sent"] for r in side],
                             [r["uncorrected"] for r in wrk2])]
        if a.httpd == "fork":
            comps.append(Comparison(f"server_total under {name} / under wrk2", [r["server_total"] for r in side],
                                    [r["server_total"] for r in wrk2]))
    print(ratio_table(f"ratios at {a.http_rate} req/s", comps))
    if a.httpd == "fork":
        print("p50 the client added to the server's own time (server_total, kernel RX to kernel TX), "
              "median of the runs' differences, us:")
        added = [(f"{name} sent", side, "sent") for name, side in runs.items()] + \
                [("wrk2 uncorrected", wrk2, "uncorrected")]
        for label, side, series in added:
            print(f"  {label:<28}{statistics.median(r[series][50.0] - r['server_total'][50.0] for r in side):8.1f}")
    print(flush=True)


def server_pids(root: int) -> list[int]:
    """`root` and every process descending from it (httpd's children)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    pids, todo = [root], [root]
    while todo:
        pid = todo.pop()
        kids = [child for child, ppid in parent.items() if ppid == pid]
        pids += kids
        todo += kids
    return pids


def stall(pids: Sequence[int], seconds: float) -> None:
    """SIGSTOP `pids`, wait, SIGCONT them: the server stops answering."""
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def co_run(b: Bench, server: str, tool: str) -> tuple[Run, Problems]:
    """One run of `tool` against a fresh `server` stopped for --stop-ms in
    the middle of the tool's measurement window."""
    a = b.args
    stop = a.stop_ms / 1e3
    with tempfile.NamedTemporaryFile(suffix=".out") as out, \
            (b.memcached() if server == "memcached" else b.httpd("stock")) as srv:
        assert srv.proc is not None
        if tool == "loadgen":
            proto = ["-P", "http", "--path", HTTP_PATH] if server == "httpd" else ["--get-ratio", "1"]
            cmd = b.loadgen_cmd(srv.port, a.co_rate, [*proto, "-c", str(a.connections if server == "memcached"
                                                                       else a.http_connections)],
                                out.name, a.co_window, 1.0)
            starts = 1.0
        elif tool == "mutilate":
            cmd = b.mutilate_cmd(srv.port, a.co_rate, 1, a.co_window, 0, out.name, load=False)
            starts = 0.0
        else:
            cmd = b.wrk2_cmd(srv.port, a.co_rate, a.co_window)
            starts = WRK2_CALIBRATION_S + 0.005 * a.http_connections
        pids = server_pids(srv.proc.pid)
        with tempfile.TemporaryFile() as stdout:
            proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
            try:
                time.sleep(starts + a.co_window / 2 - stop / 2)
                stall(pids, stop)
                if proc.wait(timeout=starts + a.co_window + SLACK_S) != 0:
                    raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
            finally:
                stop_process(proc)
            stdout.seek(0)
            text = stdout.read().decode()
        if tool == "loadgen":
            report = json.loads(Path(out.name).read_text())
            run = loadgen_run(report)
            return {"sched": run["sched"], "sent": run["sent"]}, loadgen_problems(report)
        if tool == "mutilate":     # --noload: every get misses, by design
            return {"latency": percentiles(mutilate_samples(Path(out.name).read_text()))}, {}
        return wrk2_run(parse_wrk2(text))


def part_co(b: Bench) -> None:
    a = b.args
    cases = ([("memcached", "loadgen"), ("memcached", "mutilate")] if b.tools.mutilate else []) + \
            ([("httpd", "loadgen"), ("httpd", "wrk2")] if b.tools.wrk2 else [])
    sides: dict[str, Callable[[], tuple[Run, Problems]]] = {
        f"{tool} vs {server}": (lambda s=server, t=tool: co_run(b, s, t)) for server, tool in cases}
    runs = alternate(sides, a.co_repeats, f"co {a.co_rate} req/s, {a.stop_ms} ms stop")
    # A tool timing from each request's schedule sees every request due in
    # the stop late by the rest of it; the 1% slowest of the window's
    # requests are those due in its first 1% x window.
    expect = a.stop_ms - 0.01 * a.co_window * 1e3
    print(f"\ncoordinated omission: the server stopped {a.stop_ms} ms in a {a.co_window} s window at "
          f"{a.co_rate} req/s; a tool that times from the schedule should report p99 about {expect:.0f} ms")
    for name, side in runs.items():
        for series in side[0]:
            p99 = [r[series][99.0] / 1e3 for r in side]
            verdict = (f"  (bar >= 250 ms: {'met' if statistics.median(p99) >= 250 else 'NOT met'})"
                       if series == "sched" else "")
            print(f"  {name + ' ' + series:<32} p99 {statistics.median(p99):8.2f} ms "
                  f"[{min(p99):.2f}..{max(p99):.2f}]{verdict}")
    print(flush=True)


PART_RUNNERS: dict[str, Callable[[Bench], None]] = {"memcached": part_memcached, "http": part_http, "co": part_co}
PART_NEEDS = {"memcached": ("mutilate",), "http": ("wrk2",), "co": ("mutilate", "wrk2")}


# ------------------------------------------------------------- options

def at_least(least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, not {text!r}")
        return value
    return parse


positive_int, nonnegative_int = at_least(1), at_least(0)


def int_list(text: str) -> list[int]:
    items = text.split(",")
    if not all(i.strip().isdigit() and int(i) > 0 for i in items):
        raise argparse.ArgumentTypeError(f"takes positive integers like 5000,20000, not {text!r}")
    return [int(i) for i in items]


def part_list(text: str) -> list[str]:
    items = text.split(",")
    if not items or any(i not in PARTS for i in items):
        raise argparse.ArgumentTypeError(f"takes some of {','.join(PARTS)}, not {text!r}")
    return items


def cpu(text: str) -> int:
    value = nonnegative_int(text)
    if value not in os.sched_getaffinity(0):
        raise argparse.ArgumentTypeError(f"CPU {text} is not one this process may run on")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stagevar bench peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", type=part_list, default=list(PARTS), help=f"parts to run (default {','.join(PARTS)})")
    p.add_argument("--repeats", type=positive_int, default=5, help="runs of each side (default 5)")
    p.add_argument("--duration", type=positive_int, default=5, help="seconds measured per run (default 5)")
    p.add_argument("--warmup", type=nonnegative_int, default=1, help="seconds of warm-up per run (default 1)")
    p.add_argument("--rates", type=int_list, default=[5000, 20000], help="memcached: req/s (default 5000,20000)")
    p.add_argument("--connections", type=positive_int, default=4, help="memcached: connections (default 4)")
    p.add_argument("--http-rate", type=positive_int, default=2000, help="http: req/s (default 2000)")
    p.add_argument("--http-connections", type=positive_int, default=16, help="http: connections (default 16)")
    p.add_argument("--http-batch-us", type=int_list, default=[1000],
                   help="http: a loadgen side -a det --batch-interval-us B for each B (default 1000)")
    p.add_argument("--httpd", choices=("stock", "fork"), default="stock",
                   help="http: stock httpd, or the fork with StageTrace on and its stages printed")
    p.add_argument("--co-rate", type=positive_int, default=2000, help="co: req/s (default 2000)")
    p.add_argument("--co-window", type=positive_int, default=4, help="co: seconds measured (default 4)")
    p.add_argument("--stop-ms", type=positive_int, default=300, help="co: how long the server stops (default 300)")
    p.add_argument("--co-repeats", type=positive_int, default=3, help="co: runs of each case (default 3)")
    p.add_argument("--server-cpu", type=cpu, default=1, help="the servers' CPU (default 1)")
    p.add_argument("--client-cpu", type=cpu, default=0, help="the tools' CPU (default 0)")
    p.add_argument("--mutilate", type=Path, help="mutilate binary (default $STAGEVAR_MUTILATE, else on PATH)")
    p.add_argument("--wrk2", type=Path, help="wrk2 binary (default $STAGEVAR_WRK2, else wrk2 on PATH)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.server_cpu == args.client_cpu:
        p.error(f"--server-cpu and --client-cpu must differ, not both {args.server_cpu}")
    if args.stop_ms >= args.co_window * 1000:
        p.error(f"--stop-ms {args.stop_ms} must be shorter than --co-window ({args.co_window} s)")
    try:
        tools = Tools(loadgen_path(), find_tool("mutilate", args.mutilate, "STAGEVAR_MUTILATE"),
                      find_tool("wrk2", args.wrk2, "STAGEVAR_WRK2"))
    except BadArgument as e:
        print(f"bench-peers: {e}", file=sys.stderr)
        return 2
    if not tools.loadgen.exists():
        print(f"bench-peers: {tools.loadgen} does not exist (run make)", file=sys.stderr)
        return 1
    for name in ("mutilate", "wrk2"):
        if getattr(tools, name) is None:
            print(f"bench-peers: {name} not found: {HOW_TO_GET[name]}")
    todo = [part for part in args.only if any(getattr(tools, n) for n in PART_NEEDS[part])]
    for part in args.only:
        if part not in todo:
            print(f"bench-peers: part {part} skipped: it needs {' or '.join(PART_NEEDS[part])}")
    if not todo:
        return 0
    # Killed, still stop the servers (the with blocks): never leave one behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"load average before: {load_and_idle_text()}")
    print(f"loadgen {tools.loadgen}; mutilate {tools.mutilate or 'absent'}; wrk2 {tools.wrk2 or 'absent'}; "
          f"servers on CPU {args.server_cpu}, tools on CPU {args.client_cpu}; {args.duration} s measured "
          f"after {args.warmup} s warm-up (wrk2: after its {WRK2_CALIBRATION_S:.0f} s calibration)", flush=True)
    bench = Bench(args, tools)
    for part in todo:
        PART_RUNNERS[part](bench)
    print(f"load average after: {loadavg_text()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
