# SPDX-License-Identifier: BSD-3-Clause
"""make soak: the memcached fork with amortized LRU maintenance
(-o lru_amortized_budget_us=20) and stock memcached, side by side under
the same set-heavy load for a bounded time (default 30 minutes, --quick 2).

Both servers start with the same options (-m, -t) and get, at the same
time, the identical request stream: two loadgen processes with the same
seed, each driving one server. The workload keeps both servers busy with
what amortized maintenance must handle: 70% sets, Zipf popularity over
more keys than fit in -m (so items are evicted), and TTLs on a share of
the keys (--ttl mix:0.3:10, so items expire and are reclaimed). While it
runs, this script polls `stats` and `stats items` on each server every
--interval seconds and samples each server's VmRSS from /proc/PID/status.

Goals, each printed as a verdict line (exit status 1 if one fails):
- RSS flat after warm-up: the warm-up is the first quarter of the run;
  over the last three quarters the fork's RSS never exceeds its value at
  the start of that window by 2% or more;
- hit ratio (gets that found their key, counted by loadgen after
  warm-up) within 1 point of stock's;
- zero errors: no loadgen error, unexpected reply, lost request, timeout
  or connect error, no failed stats poll, no server exit, on either side;
- and the workload did what it is for: both servers evicted and expired
  items (otherwise the run tested nothing).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from stagevar_bench.machine import loadavg_text
from stagevar_bench import memcache_client as mc
from stagevar_bench.memcache_client import read_until
from stagevar_bench.servers import LOOPBACK, REPO, MemcachedServer, build_binary

SIDES = ("fork", "stock")
FORK_OPTIONS = ["-o", "lru_amortized_budget_us=20"]
RSS_GROWTH_MAX = 0.02       # fraction, over the window after warm-up
HIT_RATIO_POINTS_MAX = 1.0  # percentage points, fork versus stock
WARMUP_SHARE = 0.25
LOADGEN_GRACE_S = 60.0      # after the planned end, before a loadgen counts as hung
LOADGEN_ERRORS = ("errors", "unexpected", "lost", "timeouts", "connect_errors")
POLLED_STATS = ("get_hits", "get_misses", "get_expired", "evictions", "expired_unfetched", "reclaimed",
                "curr_items", "bytes", "cmd_set")


class SoakError(RuntimeError):
    """The soak could not run as asked (bad option, missing binary)."""


def parse_duration(text: str) -> float:
    """'30m', '120s', '1.5h' or plain seconds, in seconds; at least 10 s."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)([smh]?)", text)
    if not m:
        raise SoakError(f"--duration: '{text}' is not a time such as 30m, 120s or 1h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 10 <= seconds <= 24 * 3600:
        raise SoakError(f"--duration: '{text}' is out of range [10s, 24h]")
    return seconds


def number(name: str, text: str, kind: type = int, minimum: float = 1) -> Any:
    """--name's value as an int (or float), at least `minimum`."""
    try:
        value = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise SoakError(f"--{name}: '{text}' is not {what}") from None
    if not value >= minimum:
        raise SoakError(f"--{name}: '{text}' must be at least {minimum:g}")
    return value


def vm_rss_kb(pid: int) -> int:
    """The process's resident set size in KiB (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SoakError(f"/proc/{pid}/status has no VmRSS line")


@dataclass
class Side:
    """One server under soak, its load generator and what was seen of it."""
    name: str
    server: MemcachedServer
    loadgen: subprocess.Popen[bytes] | None = None
    report_path: Path | None = None
    poll_conn: socket.socket | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    poll_errors: list[str] = field(default_factory=list)
    exited: str | None = None   # why the server is gone, if it went early

    def poll_stats(self) -> dict[str, int]:
        """`stats` and `stats items` on one kept-open connection; the
        counters of `stats` that the table shows."""
        if self.poll_conn is None:
            self.poll_conn = socket.create_connection((LOOPBACK, self.server.port), timeout=10)
        self.poll_conn.sendall(b"stats\r\n")
        fields = mc.parse_stats(read_until(self.poll_conn, b"END\r\n").decode())
        self.poll_conn.sendall(b"stats items\r\n")
        read_until(self.poll_conn, b"END\r\n")
        return {k: int(fields[k]) for k in POLLED_STATS}

    def sample(self, t: float) -> None:
        proc = self.server.proc
        assert proc is not None
        if proc.poll() is not None:
            self.exited = self.exited or f"exited with status {proc.returncode} at {t:.0f} s"
            return
        row: dict[str, Any] = {"t": round(t, 1), "rss_kb": vm_rss_kb(proc.pid)}
        try:
            row.update(self.poll_stats())
        except (OSError, ConnectionError, KeyError, ValueError) as e:
            self.poll_errors.append(f"{t:.0f} s: {e}")
            self.poll_conn = None
        self.samples.append(row)


def loadgen_command(args: argparse.Namespace, port: int, report: Path) -> list[str]:
    warmup = args.duration * WARMUP_SHARE
    binary = os.environ.get("STAGEVAR_LOADGEN", str(REPO / "bench" / "loadgen" / "loadgen"))
    return [binary, "-p", str(port), "-r", str(args.rate), "-w", f"{warmup:.3f}s",
            "-d", f"{args.duration - warmup:.3f}s", "--timeout", "2s", "-c", "4",
            "--keys", str(args.keys), "--key-size", "20", "--value-size", "uniform:100-1500",
            "--get-ratio", "0.3", "--popularity", "zipf:0.9", "--ttl", "mix:0.3:10",
            "--spin-us", "0", "--seed", str(args.seed), "--quiet", "--json", str(report)]


def start_sides(args: argparse.Namespace, tmp: Path) -> list[Side]:
    common = ["-m", str(args.memory), "-t", str(args.threads)]
    binaries = {"fork": build_binary("fork", "memcached"), "stock": build_binary("stock", "memcached")}
    for name, path in binaries.items():
        if not path.is_file():
            raise SoakError(f"no {name} memcached at {path} (build first: make)")
    sides = [Side("fork", MemcachedServer(binaries["fork"], args=[*common, *FORK_OPTIONS])),
             Side("stock", MemcachedServer(binaries["stock"], args=common))]
    for side in sides:
        side.server.start()
    for side in sides:
        side.report_path = tmp / f"loadgen-{side.name}.json"
        side.loadgen = subprocess.Popen(loadgen_command(args, side.server.port, side.report_path),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return sides


def run_until_done(args: argparse.Namespace, sides: list[Side]) -> None:
    """Sample every --interval until both load generators have finished,
    bounded by the planned duration plus a grace period."""
    start = time.monotonic()
    deadline = start + args.duration + LOADGEN_GRACE_S
    next_sample = start
    while any(s.loadgen is not None and s.loadgen.poll() is None for s in sides):
        if time.monotonic() > deadline:
            for s in sides:
                if s.loadgen is not None and s.loadgen.poll() is None:
                    s.loadgen.kill()
            break
        if time.monotonic() >= next_sample:
            for s in sides:
                s.sample(time.monotonic() - start)
            next_sample += args.interval
            print_progress(sides)
        time.sleep(min(0.5, max(0.0, next_sample - time.monotonic())))
    for s in sides:
        s.sample(time.monotonic() - start)


def print_progress(sides: list[Side]) -> None:
    if sys.stderr.isatty():
        rss = "  ".join(f"{s.name} {s.samples[-1]['rss_kb'] / 1024:.1f} MB" for s in sides if s.samples)
        print(f"\rsoak: t={sides[0].samples[-1]['t'] if sides[0].samples else 0:.0f} s  RSS {rss}  ",
              end="", file=sys.stderr, flush=True)


def stop_sides(sides: list[Side]) -> None:
    for s in sides:
        proc = s.server.proc
        if proc is not None and proc.poll() is not None and s.exited is None:
            s.exited = f"exited with status {proc.returncode} before the end"
        if s.poll_conn is not None:
            s.poll_conn.close()
        s.server.stop()
        if s.loadgen is not None and s.loadgen.poll() is None:
            s.loadgen.kill()
            s.loadgen.wait()


def loadgen_result(side: Side) -> tuple[dict[str, Any] | None, str | None]:
    """The side's loadgen counts, or why there are none."""
    assert side.loadgen is not None and side.report_path is not None
    status = side.loadgen.wait()
    stderr = side.loadgen.stderr.read().decode(errors="replace").strip() if side.loadgen.stderr else ""
    if status != 0:
        return None, f"loadgen exited with status {status}: {stderr.splitlines()[-1] if stderr else ''}"
    try:
        return json.loads(side.report_path.read_text())["counts"], None
    except (OSError, ValueError, KeyError) as e:
        return None, f"no loadgen report: {e}"


# ---- verdicts (pure: samples and counts in, lines out) ----------------------

def rss_growth(samples: Sequence[dict[str, Any]], warmup_s: float) -> float | None:
    """Largest RSS after warm-up relative to the first sample after it,
    minus 1; None without two samples in that window."""
    window = [s["rss_kb"] for s in samples if s["t"] >= warmup_s]
    if len(window) < 2:
        return None
    return max(window) / window[0] - 1


def hit_ratio(counts: dict[str, Any]) -> float | None:
    """Percentage of the keys asked for by gets that were found."""
    return 100.0 * counts["hits"] / counts["get_keys"] if counts.get("get_keys") else None


def errors_of(side: Side, counts: dict[str, Any] | None, why: str | None) -> list[str]:
    out = [f"{side.name}: {why}"] if why else []
    if counts is not None:
        out += [f"{side.name}: loadgen {k} {counts[k]}" for k in LOADGEN_ERRORS if counts[k]]
    out += [f"{side.name}: stats poll failed at {e}" for e in side.poll_errors]
    if side.exited:
        out.append(f"{side.name}: server {side.exited}")
    return out


def verdicts(growth: float | None, hits: dict[str, float | None], errors: list[str],
             exercised: dict[str, tuple[int, int]]) -> list[tuple[bool, str]]:
    """(passed, line) for each goal."""
    out = []
    if growth is None:
        out.append((False, "RSS flat after warm-up: FAIL, fewer than 2 samples after warm-up"))
    else:
        ok = growth < RSS_GROWTH_MAX
        out.append((ok, f"RSS flat after warm-up: {'ok' if ok else 'FAIL'}, fork grew {100 * growth:+.2f}% "
                        f"over the last 3/4 (goal < {100 * RSS_GROWTH_MAX:.0f}%)"))
    fork, stock = hits.get("fork"), hits.get("stock")
    if fork is None or stock is None:
        out.append((False, "hit ratio within 1 point of stock: FAIL, no gets counted on a side"))
    else:
        ok = abs(fork - stock) <= HIT_RATIO_POINTS_MAX
        out.append((ok, f"hit ratio within 1 point of stock: {'ok' if ok else 'FAIL'}, fork {fork:.2f}% "
                        f"stock {stock:.2f}% ({fork - stock:+.2f} points)"))
    out.append((not errors, "zero errors: " + ("ok" if not errors else f"FAIL, {len(errors)}: "
                                                + "; ".join(errors[:5]))))
    idle = [n for n, (ev, ex) in exercised.items() if ev == 0 or ex == 0]
    detail = ", ".join(f"{n} evicted {ev} expired {ex}" for n, (ev, ex) in exercised.items())
    out.append((not idle, f"evictions and expirations on both sides: {'ok' if not idle else 'FAIL'}, {detail}"))
    return out


# ---- report -----------------------------------------------------------------

def table(sides: list[Side], rows: int) -> list[str]:
    """At most `rows` evenly spaced samples: time, each side's RSS and the
    hit ratio the server counted since the previous printed row."""
    n = min(len(s.samples) for s in sides)
    picks = sorted({round(i * (n - 1) / max(1, rows - 1)) for i in range(min(rows, n))})
    head = f"{'t s':>6}" + "".join(f" {s.name + ' RSS MB':>14} {s.name + ' hit%':>10} {s.name + ' evict':>11}"
                                   for s in sides)
    lines, prev = [head], None
    for i in picks:
        cells = f"{sides[0].samples[i]['t']:>6.0f}"
        for s in sides:
            cur, old = s.samples[i], (s.samples[prev] if prev is not None else {})
            cells += f" {cur['rss_kb'] / 1024:>14.1f} {interval_hits(cur, old):>10} {cur.get('evictions', '-'):>11}"
        lines.append(cells)
        prev = i
    return lines


def interval_hits(cur: dict[str, Any], old: dict[str, Any]) -> str:
    if "get_hits" not in cur:
        return "-"
    hits = cur["get_hits"] - old.get("get_hits", 0)
    gets = hits + cur["get_misses"] - old.get("get_misses", 0)
    return f"{100 * hits / gets:.1f}" if gets else "-"


def exercised(side: Side) -> tuple[int, int]:
    """Evictions, and expired items seen (gets that found one expired, plus
    expired items removed without ever being fetched)."""
    last = next((s for s in reversed(side.samples) if "evictions" in s), {})
    return last.get("evictions", 0), last.get("get_expired", 0) + last.get("expired_unfetched", 0)


def soak(args: argparse.Namespace) -> int:
    load_before = loadavg_text()
    print(f"soak: {args.duration:.0f} s, {args.rate} req/s per side, -m {args.memory} -t {args.threads}, "
          f"fork {' '.join(FORK_OPTIONS)} vs stock; loadavg {load_before}", flush=True)
    with tempfile.TemporaryDirectory(prefix="stagevar-soak-") as tmp:
        sides = start_sides(args, Path(tmp))
        try:
            run_until_done(args, sides)
        finally:
            stop_sides(sides)
        results = {s.name: loadgen_result(s) for s in sides}
    if sys.stderr.isatty():
        print(file=sys.stderr)
    warmup_s = args.duration * WARMUP_SHARE
    errors = [e for s in sides for e in errors_of(s, *results[s.name])]
    hits = {n: hit_ratio(c) if c else None for n, (c, _) in results.items()}
    growth = {s.name: rss_growth(s.samples, warmup_s) for s in sides}
    lines = verdicts(growth["fork"], hits, errors, {s.name: exercised(s) for s in sides})
    print("\n".join(table(sides, args.rows)))
    stock_growth = growth["stock"]
    print(f"RSS growth after warm-up ({warmup_s:.0f} s): fork {fmt_pct(growth['fork'])}, "
          f"stock {fmt_pct(stock_growth)}; final RSS fork/stock "
          f"{sides[0].samples[-1]['rss_kb'] / sides[1].samples[-1]['rss_kb']:.3f}")
    load_after = loadavg_text()
    print(f"loadavg before {load_before}, after {load_after}")
    for ok, line in lines:
        print(line)
    passed = all(ok for ok, _ in lines)
    print(f"soak: {'PASS' if passed else 'FAIL'}")
    if args.json:
        write_json(args, sides, results, lines, passed, (load_before, load_after))
    return 0 if passed else 1


def fmt_pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.2f}%"


def write_json(args: argparse.Namespace, sides: list[Side],
               results: dict[str, tuple[dict[str, Any] | None, str | None]],
               lines: list[tuple[bool, str]], passed: bool, load: tuple[str, str]) -> None:
    doc = {"duration_s": args.duration, "rate": args.rate, "memory_mb": args.memory, "threads": args.threads,
           "keys": args.keys, "seed": args.seed, "fork_options": FORK_OPTIONS,
           "loadavg": {"before": load[0], "after": load[1]},
           "sides": {s.name: {"samples": s.samples, "loadgen_counts": results[s.name][0],
                              "poll_errors": s.poll_errors, "exited": s.exited} for s in sides},
           "verdicts": [{"ok": ok, "line": line} for ok, line in lines], "pass": passed}
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line."""

    def error(self, message: str) -> Any:
        raise SoakError(message)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = Parser(prog="stagevar soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2 minutes, a sample every 2 s")
    p.add_argument("--duration", default=None, help="run length, e.g. 30m, 600s, 1h (default 30m)")
    p.add_argument("--rate", default="4000", help="requests/s to each server (default 4000)")
    p.add_argument("--interval", default=None, help="seconds between samples (default 5, --quick 2)")
    p.add_argument("--memory", default="24", help="memcached -m, MB (default 24)")
    p.add_argument("--threads", default="2", help="memcached -t (default 2)")
    p.add_argument("--keys", default="200000", help="key count (default 200000)")
    p.add_argument("--seed", default="1", help="loadgen seed, the same for both sides (default 1)")
    p.add_argument("--rows", default="16", help="rows of the RSS table (default 16)")
    p.add_argument("--json", default=None, help="write samples, counts and verdicts to this file")
    args = p.parse_args(argv)
    # `is None`, not `or`: an empty value given is bad input, not the default.
    args.duration = parse_duration(("2m" if args.quick else "30m") if args.duration is None else args.duration)
    args.interval = number("interval", ("2" if args.quick else "5") if args.interval is None else args.interval,
                           float, 0.1)
    for name in ("rate", "memory", "threads", "keys", "rows"):
        setattr(args, name, number(name, getattr(args, name)))
    args.seed = number("seed", args.seed, int, 0)
    if args.interval > args.duration / 8:
        raise SoakError(f"--interval: '{args.interval:g}' leaves fewer than 8 samples in {args.duration:g} s")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return soak(parse_args(sys.argv[1:] if argv is None else argv))
    except SoakError as e:
        print(f"soak: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
