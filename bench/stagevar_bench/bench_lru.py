# SPDX-License-Identifier: BSD-3-Clause
"""stagevar bench lru (make bench-lru): every LRU option a user has,
side by side: stock's own (no_lru_maintainer, the maintainer thread at
SCHED_IDLE or nice 19, helpers on a spare core) against the fork's
amortized maintenance (-o lru_amortized_budget_us=--budget, a fixed budget).

Setup (the reference paper's low-throughput case on a 2-core machine):
memcached with -t 1 (or --threads) and all its threads on CPU 0, the
open-loop load generator on CPU 1; 90% gets / 10% sets, 20-byte keys,
50-byte values, more keys than fit in -m, so items are evicted and the
maintainer has segments to juggle. The sides are lru_options.LRU_OPTIONS
(stock first, the baseline; stock-helpers-spare only where a CPU is
neither the server's nor loadgen's). With --stage-trace the fork's sides
trace every request, so `stats stages` gives their kernel_to_read (the
worker's wake-up delay); stock cannot, and tracing costs the fork, so by
default nothing traces.

1. saturation: the highest deterministic rate stock sustains
   (replies >= 99% of offered, nothing lost), by ramp and bisection;
2. for each arrival process and each load (fraction of saturation), runs
   alternate between the sides --runs times; each run is --duration long
   after `stats reset`. Printed per cell: mean, p50, p90, p99, p99.9 of the
   latency from each request's scheduled send (loadgen's
   latency_scheduled, in us) and the kernel_to_read variance (us^2), each
   as the median over runs with a bootstrap 95% confidence interval, and
   each side's ratios of the medians of mean, p99 and kernel_to_read
   variance (where both are traced) over stock's, and the fork's over
   stock-no_lru_maintainer's, each with a bootstrap 95% CI (the two
   sides' runs resampled independently), as every stagevar benchmark
   reports.

3. with --budget-sweep LIST instead: the smallest budget that keeps
   maintenance equal to the fork's maintainer thread's (the fork traced,
   no option: the thread side). For each budget, and for it, a fresh
   server is filled and then driven --runs times by the same seeded
   request sequence at --sweep-load of saturation; the medians of hit
   ratio, segment moves (moves_to_cold + moves_to_warm) and evictions are
   compared with the thread side's. A budget keeps maintenance equal when
   the hit ratio is within 1 point and moves within 10% (issue 5's
   tolerances).

4. with --callgrind instead: instructions, not latency, of stock's
   worker and maintainer thread against the fork's worker doing the
   slices (--budget), over one light-load request script
   (lru_cost.py).

Everything is measured in this one run; nothing is compared with figures
from elsewhere.
"""
from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import sys
from typing import Any

from stagevar_bench import lru_cost, lru_cpu
from stagevar_bench import memcache_client as mc
from stagevar_bench.experiment import Level
from stagevar_bench.lru_options import (LRU_BUDGET_DEFAULT_US, lru_option_levels, spare_core,
                                        spare_core_note)
from stagevar_bench.machine import expand_cpu_list, loadavg_text, loadgen_path, run_loadgen
from stagevar_bench.servers import LOOPBACK, TRACE_EVERY_REQUEST, MemcachedServer, build_binary
from stagevar_bench.thread_tuning import TuningError, apply_tuning
from stagevar_bench.stats import bootstrap_ci, bootstrap_ratio_ci

LOADGEN = loadgen_path()
ARRIVALS = {"det": "det", "exp": "exp", "pareto": "pareto:cv2=4"}
QUANTILES = ("mean", "p50", "p90", "p99", "p999")
RATIOS = ("mean", "p99", "k2r_var")     # a side over a baseline, per cell
STOCK, NO_MAINTAINER = "stock", "stock-no_lru_maintainer"     # the baselines, in LRU_OPTIONS
COLUMN = 28                             # a median and its CI, with a space before
TRACE = TRACE_EVERY_REQUEST     # cells count every request


def stats(port: int, kind: str = "") -> dict[str, str]:
    return mc.stats(LOOPBACK, port, kind)


def reset(port: int) -> None:
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        s.sendall(b"stats reset\r\n")
        if s.recv(64) != b"RESET\r\n":
            raise ConnectionError("stats reset refused")


def loadgen(args: argparse.Namespace, port: int, rate: float, arrival: str, preload: bool = False) -> dict[str, Any]:
    return run_loadgen(args.loadgen_cpu, ["-p", str(port), "-r", f"{rate:.0f}", "-a", arrival,
                                          "-d", f"{args.duration}s", "-w", "0.5s", "-c", "8",
                                          "--keys", str(args.keys), "--key-size", "20", "--value-size", "50",
                                          "--get-ratio", "0.9", *(["--preload"] if preload else [])])


def sustained(r: dict[str, Any]) -> bool:
    c = r["counts"]
    return r["rates"]["achieved"] >= 0.99 * r["rates"]["offered"] and not (c["lost"] or c["errors"])


def saturation(args: argparse.Namespace, port: int) -> float:
    good, bad, rate = 0.0, 0.0, args.start
    while rate < 2e6:
        if not sustained(loadgen(args, port, rate, "det")):
            bad = rate
            break
        good, rate = rate, rate * 1.25
    for _ in range(3):
        mid = (good + bad) / 2
        if sustained(loadgen(args, port, mid, "det")):
            good = mid
        else:
            bad = mid
    return good


def one_run(args: argparse.Namespace, port: int, rate: float, arrival: str, traced: bool) -> dict[str, float]:
    reset(port)
    r = loadgen(args, port, rate, arrival)
    stages = stats(port, "stages") if traced else {}
    lat = r["latency_scheduled"]
    row = {q: lat[q] / 1e3 for q in QUANTILES}
    sd = float(stages.get("kernel_to_read:stddev_ns", "nan")) / 1e3
    row["k2r_var"] = sd * sd
    row["achieved"] = r["rates"]["achieved"]
    return row


def median_ci(values: list[float]) -> str:
    """The median over runs [bootstrap 95% CI]."""
    m = bootstrap_ci(values)
    return f"{m.value:.1f} [{m.low:.1f}, {m.high:.1f}]"


def ratio_of_medians(numerator: list[float], denominator: list[float]) -> str:
    """median(numerator) / median(denominator) [bootstrap 95% CI]."""
    r = bootstrap_ratio_ci(numerator, denominator)
    return f"{r.value:.3f} [{r.low:.3f}, {r.high:.3f}]"


def ratio_pairs(sides: list[str]) -> list[tuple[str, str]]:
    """(side, baseline) for each ratio a cell prints: every side over
    stock, and the sides that are neither baseline over stock's own
    no-maintainer option, the one the fork's knob has to beat."""
    pairs = [(side, STOCK) for side in sides if side != STOCK] if STOCK in sides else []
    if NO_MAINTAINER in sides:
        pairs += [(side, NO_MAINTAINER) for side in sides if side not in (STOCK, NO_MAINTAINER)]
    return pairs


def cell_lines(cell: str, rows: dict[str, list[dict[str, float]]]) -> list[str]:
    """One cell's table: per side, each quantity's median over runs with
    its CI; then each side's ratios of the medians over the baselines."""
    width = max([10, *map(len, rows)])
    lines = ["", cell, f"  {'side':<{width}} " + "".join(f"{q + ' (us)':>{COLUMN}}" for q in QUANTILES)
             + f"{'k2r var (us^2)':>{COLUMN}}"]
    for side, runs in rows.items():
        lines.append(f"  {side:<{width}} " + "".join(f" {median_ci([r[q] for r in runs]):>{COLUMN - 1}}"
                                                     for q in (*QUANTILES, "k2r_var")))
    for side, base in ratio_pairs(list(rows)):
        ratio = {q: ratio_of_medians([r[q] for r in rows[side]], [r[q] for r in rows[base]]) for q in RATIOS}
        lines.append(f"  {side}/{base}, ratio of medians [95% CI]: mean {ratio['mean']}  "
                     f"p99 {ratio['p99']}  kernel_to_read variance {ratio['k2r_var']}")
    return lines


def report(cell: str, rows: dict[str, list[dict[str, float]]]) -> None:
    print("\n".join(cell_lines(cell, rows)))


def maintenance(args: argparse.Namespace, options: str, rate: float) -> dict[str, float]:
    """Median hit ratio, moves and evictions of --runs fresh servers with
    `options`, each filled and then driven by the same request sequence."""
    runs = []
    for _ in range(args.runs):
        s = server(args, options).start()
        try:
            loadgen(args, s.port, 20000, "det", preload=True)
            reset(s.port)
            loadgen(args, s.port, rate, "det")
            st = stats(s.port)
        finally:
            s.stop()
        hits, misses = int(st["get_hits"]), int(st["get_misses"])
        runs.append({"hit_ratio": 100.0 * hits / max(1, hits + misses),
                     "moves": int(st["moves_to_cold"]) + int(st["moves_to_warm"]),
                     "evictions": int(st["evictions"])})
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def budget_sweep(args: argparse.Namespace, budgets: list[int], rate: float) -> None:
    base = maintenance(args, TRACE, rate)
    print(f"\nmaintenance at {rate:.0f} req/s (det), median of {args.runs} fresh servers each")
    print(f"  {'side':<16}{'hit ratio (%)':>15}{'moves':>10}{'evictions':>11}  equal to thread?")
    print(f"  {'thread':<16}{base['hit_ratio']:>15.2f}{base['moves']:>10.0f}{base['evictions']:>11.0f}")
    smallest = None
    for budget in budgets:
        m = maintenance(args, f"{TRACE},lru_amortized_budget_us={budget}", rate)
        equal = (abs(m["hit_ratio"] - base["hit_ratio"]) <= 1.0
                 and abs(m["moves"] - base["moves"]) <= 0.1 * max(1.0, base["moves"]))
        if equal and smallest is None:
            smallest = budget
        print(f"  {f'budget {budget} us':<16}{m['hit_ratio']:>15.2f}{m['moves']:>10.0f}{m['evictions']:>11.0f}"
              f"  {'yes' if equal else 'no'}")
    print(f"smallest budget keeping maintenance equal: {f'{smallest} us' if smallest else 'none of those tried'}")


def server(args: argparse.Namespace, options: str, variant: str = "fork",
           extra: tuple[str, ...] = ()) -> MemcachedServer:
    binary = build_binary(variant, "memcached")
    return MemcachedServer(binary, args=["-t", str(args.threads), "-m", str(args.memory),
                                         *(["-o", options] if options else []), *extra],
                           wrap=["taskset", "-c", str(args.server_cpu)])


def sides(args: argparse.Namespace) -> list[Level]:
    """The LRU option set on this machine, --budget the fork's fixed one."""
    return lru_option_levels(args.budget, spare_core(str(args.server_cpu), str(args.loadgen_cpu)))


def traced(args: argparse.Namespace, level: Level) -> bool:
    return bool(args.stage_trace) and level.variant == "fork"


def start_side(args: argparse.Namespace, level: Level) -> MemcachedServer:
    """A side's server, started, with its thread settings applied."""
    s = server(args, TRACE if traced(args, level) else "", level.variant, tuple(level.server_args)).start()
    assert s.proc is not None
    try:
        apply_tuning(s.proc.pid, level.thread_sched,
                     expand_cpu_list(level.helper_cpus) if level.helper_cpus else None)
    except TuningError:
        s.stop()
        raise
    return s


def parse_budgets(text: str) -> list[int]:
    """'1,2,5' -> [1, 2, 5]; [] when any item is not a positive integer."""
    items = text.split(",")
    if not all(i.isdigit() and int(i) > 0 for i in items):
        return []
    return sorted(int(i) for i in items)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="stagevar bench lru", description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=int, default=LRU_BUDGET_DEFAULT_US,
                   help=f"the fork-budget side's lru_amortized_budget_us (default {LRU_BUDGET_DEFAULT_US})")
    p.add_argument("--stage-trace", action="store_true",
                   help="trace every request in the fork's sides (kernel_to_read; stock cannot, and it "
                        "costs the fork)")
    p.add_argument("--threads", type=int, default=1, help="memcached -t (default 1)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--duration", type=float, default=3.0, help="seconds per run")
    p.add_argument("--loads", default="0.3,0.5,0.7,0.85", help="fractions of saturation")
    p.add_argument("--arrivals", default="det,exp,pareto", help=f"of {','.join(ARRIVALS)}")
    p.add_argument("--keys", type=int, default=400000)
    p.add_argument("--memory", type=int, default=16, help="memcached -m (MB)")
    p.add_argument("--start", type=float, default=10000, help="first rate of the saturation ramp")
    p.add_argument("--budget-sweep", metavar="LIST",
                   help="instead of latency: budgets (us, e.g. 1,2,5,10,20) to test for equal maintenance")
    p.add_argument("--sweep-load", type=float, default=0.7, help="fraction of saturation for --budget-sweep")
    p.add_argument("--callgrind", action="store_true",
                   help="instead of latency: instructions of stock's worker and maintainer thread against "
                        "the fork's worker with --budget (valgrind)")
    p.add_argument("--cpu-cost", action="store_true",
                   help="instead of latency: the server's native CPU time per request, stock against "
                        "the fork with --budget, at --rates, evicting and not (lru_cpu.py)")
    p.add_argument("--rates", default="5000,20000,80000", help="req/s for --cpu-cost (default 5000,20000,80000)")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--loadgen-cpu", type=int, default=1)
    args = p.parse_args(argv)
    try:
        loads = [float(x) for x in args.loads.split(",")]
    except ValueError:
        p.error(f"--loads takes fractions of saturation like 0.3,0.7, not '{args.loads}'")
    arrivals = args.arrivals.split(",")
    if any(a not in ARRIVALS for a in arrivals):
        p.error(f"--arrivals takes {','.join(ARRIVALS)}, not '{args.arrivals}'")
    budgets = parse_budgets(args.budget_sweep) if args.budget_sweep else []
    if args.budget_sweep and not budgets:
        p.error(f"--budget-sweep takes positive integers like 1,2,5,10, not '{args.budget_sweep}'")
    if args.runs < 1:
        p.error(f"--runs takes a positive number of runs, not '{args.runs}'")
    if args.budget < 1:
        p.error(f"--budget takes a positive number of microseconds, not '{args.budget}'")
    if args.cpu_cost:
        try:
            args.rates = [float(x) for x in args.rates.split(",")]
        except ValueError:
            p.error(f"--rates takes req/s like 5000,20000, not '{args.rates}'")
        if any(not r > 0 for r in args.rates):
            p.error(f"--rates must be > 0, not '{args.rates}'")
        return lru_cpu.run(args)
    if args.callgrind:
        if shutil.which("valgrind") is None:
            print("bench-lru: --callgrind needs valgrind (apt-get install valgrind)", file=sys.stderr)
            return 1
        lru_cost.run([args.budget], args.runs)
        return 0
    if not LOADGEN.exists():
        print(f"bench-lru: {LOADGEN} is not built (run make)", file=sys.stderr)
        return 1
    if budgets:
        return sweep_mode(args, budgets)
    return latency_mode(args, loads, arrivals)


def header(args: argparse.Namespace, sat: float, what: str) -> str:
    return (f"bench-lru: -t {args.threads}, server on CPU {args.server_cpu}, loadgen on CPU {args.loadgen_cpu}; "
            f"{args.keys} keys in -m {args.memory}; saturation ({what}, det) {sat:.0f} req/s; "
            f"{args.runs} runs of {args.duration:g} s per cell, medians over runs "
            f"[bootstrap 95% CI]; budget {args.budget} us; "
            f"load average {loadavg_text()}")


def sweep_mode(args: argparse.Namespace, budgets: list[int]) -> int:
    """The budget sweep, its saturation from the fork's traced thread side."""
    thread = server(args, TRACE).start()
    try:
        loadgen(args, thread.port, 20000, "det", preload=True)
        sat = saturation(args, thread.port)
    finally:
        thread.stop()
    print(header(args, sat, "thread side"))
    budget_sweep(args, budgets, args.sweep_load * sat)
    return 0


def latency_mode(args: argparse.Namespace, loads: list[float], arrivals: list[str]) -> int:
    """Every option of the set, one server each, alternating per run."""
    levels = sides(args)
    servers: dict[str, MemcachedServer] = {}
    try:
        for level in levels:
            servers[level.name] = start_side(args, level)
        for s in servers.values():     # fill: every key once, then evictions
            loadgen(args, s.port, 20000, "det", preload=True)
        sat = saturation(args, servers[STOCK].port)
        print(header(args, sat, "stock"))
        print(f"bench-lru: sides {', '.join(servers)}; "
              f"{spare_core_note(str(args.server_cpu), str(args.loadgen_cpu))}; "
              f"traced: {', '.join(l.name for l in levels if traced(args, l)) or 'none'}")
        for arrival in arrivals:
            for load in loads:
                rows: dict[str, list[dict[str, float]]] = {level.name: [] for level in levels}
                for _ in range(args.runs):
                    for level in levels:
                        rows[level.name].append(one_run(args, servers[level.name].port, load * sat,
                                                        ARRIVALS[arrival], traced(args, level)))
                report(f"{arrival} arrivals, {load:.0%} load ({load * sat:.0f} req/s)", rows)
        for level in levels:
            print("\n" + counters_line(level, servers[level.name].port))
    except TuningError as e:
        print(f"bench-lru: {e}", file=sys.stderr)
        return 1
    finally:
        for s in servers.values():
            s.stop()
    return 0


def counters_line(level: Level, port: int) -> str:
    """A side's LRU counters after its last run."""
    st = stats(port)
    line = (f"{level.name} (last run): evictions {st.get('evictions')} moves_to_cold {st.get('moves_to_cold')} "
            f"moves_to_warm {st.get('moves_to_warm')} juggles {st.get('lru_maintainer_juggles')} "
            f"bumps_dropped {st.get('lru_bumps_dropped')}")
    if any("lru_amortized_budget_us" in a for a in level.server_args):
        am = stats(port, "lru_amortized")
        line += (f"; slices {am.get('slices')} yielded {am.get('slices_yielded')} "
                 f"time {am.get('time_us')} us")
    if level.helper_cpus:
        line += f"; helpers on CPU {level.helper_cpus}"
    return line


if __name__ == "__main__":
    sys.exit(main())
