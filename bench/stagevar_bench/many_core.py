# SPDX-License-Identifier: BSD-3-Clause
"""many_core: the knobs measured where they are meant to run, a host with
8 or more CPUs (issue 47), in one go of about 9 minutes after the build.

The server gets the first half of the allowed CPUs, loadgen the rest, so
the client never shares a server core (on 2 vCPUs it must, and
ProcessCorePinning measured x3.27 worse there for that reason).

1. httpd event MPM as Suresh and Gandhi ran it: 6 children on 6 cores,
   5, 10 and 25 threads per child, ProcessCorePinning off and on, keep-alive
   (75 requests a connection) and a connection per request, at 30, 60 and
   90% of the capacity measured for each connection mode; 4 rounds.
2. memcached -t 4: every combination of helpers floating or pinned
   (pin_helpers) and workers floating or pinned (worker_cpus), times LRU
   stock, no_lru_maintainer and the fork's lru_amortized_budget_us=10;
   an ETC-like workload and the demo's, at 60 and 90% of capacity, with
   as many rounds as the time left allows.

Every cell, the statistic and the rounds are written to plan.json before
the first run; rounds interleave every cell (the levels of a cell's load
back to back, their order rotating). Results: many-core.md (the tables),
many-core.log (progress), results.json.gz (every run: `stagevar analyze`).
--smoke is the same code at a size for 2 CPUs, for CI: it shows that every
path works, not what the knobs do.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from stagevar_bench.lru_options import LRU_BUDGET_DEFAULT_US, LRU_KNOB
from stagevar_bench.timespec import parse_seconds

PROG = "bench/many-core/run"
MIN_CPUS = 8
PAPER_CHILDREN = 6
CONF = 0.95
COMPARED = ("mean", "p90", "p99")


class UsageError(Exception):
    pass


@dataclass(frozen=True)
class Size:
    budget_s: float                 # measuring time (capacity searches and rounds), after the build
    httpd_threads: tuple[int, ...]
    httpd_shares: tuple[float, ...]
    httpd_rounds: int
    httpd_duration_s: float
    httpd_warmup_s: float
    mc_threads: int
    mc_shares: tuple[float, ...]
    mc_max_rounds: int
    mc_duration_s: float
    mc_warmup_s: float
    etc_keys: int
    demo_keys: int
    bisections: int
    probe_s: float
    httpd_start: float              # capacity searches: first rate and the ceiling, req/s
    httpd_max: float
    mc_start: float
    mc_max: float


# A memcached run's cost is mostly its server start and preload (200,000
# keys over one pipelined connection took 1.5-2 s on this 2-CPU machine
# under load, 2026-12-02), so its measured window is short: 0.5 s at 60%
# of capacity is still some 100,000 requests.
FULL = Size(budget_s=540, httpd_threads=(5, 10, 25), httpd_shares=(0.3, 0.6, 0.9), httpd_rounds=4,
            httpd_duration_s=0.6, httpd_warmup_s=0.2, mc_threads=4, mc_shares=(0.6, 0.9), mc_max_rounds=8,
            mc_duration_s=0.5, mc_warmup_s=0.2, etc_keys=200000, demo_keys=200000, bisections=2,
            probe_s=0.5, httpd_start=5000, httpd_max=2e6, mc_start=100000, mc_max=6.4e6)
# The smoke size's capacity searches start low: only their path is under
# test, and on a loaded CI machine a first rate not sustained (twice)
# would end the search with nothing.
SMOKE = Size(budget_s=60, httpd_threads=(5, 25), httpd_shares=(0.3, 0.9), httpd_rounds=2,
             httpd_duration_s=0.3, httpd_warmup_s=0.1, mc_threads=2, mc_shares=(0.6, 0.9), mc_max_rounds=2,
             mc_duration_s=0.3, mc_warmup_s=0.1, etc_keys=20000, demo_keys=20000, bisections=0,
             probe_s=0.3, httpd_start=250, httpd_max=2000, mc_start=2500, mc_max=20000)


# ------------------------------------------------------------ arguments

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="results folder (default $OUT)")
    p.add_argument("--smoke", action="store_true", help="the reduced form for 2 CPUs (CI)")
    p.add_argument("--budget", type=seconds, default=None, metavar="SECONDS",
                   help=f"measuring time after the build (default {FULL.budget_s:g}; smoke {SMOKE.budget_s:g})")
    p.add_argument("--only", choices=["httpd", "memcached"], help="one server's cells only")
    p.add_argument("--seed", type=int, default=47, help="run order seed (default 47)")
    p.add_argument("--no-build", action="store_true", help="use the tree as built")
    p.add_argument("--build-only", action="store_true", help="build, then stop")
    p.add_argument("--upstream-cache", type=Path, metavar="DIR",
                   help="the upstream tarballs to build from (configure --with-upstream-cache)")
    p.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.no_build and args.build_only:
        p.error("--no-build and --build-only exclude each other")
    if args.out is None:
        if not os.environ.get("OUT"):
            p.error("no results folder: give --out DIR or set OUT")
        args.out = Path(os.environ["OUT"])
    if args.out.exists() and not args.out.is_dir():
        p.error(f"--out {args.out}: not a directory")
    if args.upstream_cache is not None and not args.upstream_cache.is_dir():
        p.error(f"--upstream-cache {args.upstream_cache}: no such directory")
    return args


def seconds(text: str) -> float:
    try:
        value = parse_seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: want a number of seconds > 0")
    return value


# --------------------------------------------------------------- layout

@dataclass(frozen=True)
class Layout:
    server: tuple[int, ...]
    client: tuple[int, ...]


def layout(allowed: Sequence[int], smoke: bool) -> Layout:
    """Server on the first half of the allowed CPUs, loadgen on the rest.
    Below MIN_CPUS only the smoke size runs (UsageError otherwise)."""
    cpus = sorted(allowed)
    if len(cpus) < MIN_CPUS and not smoke:
        raise UsageError(f"needs {MIN_CPUS} or more CPUs to keep server and client apart; this process "
                         f"may use {len(cpus)} ({cpu_list(cpus)}). --smoke runs the reduced form.")
    if len(cpus) < 2:
        raise UsageError(f"needs 2 CPUs even for --smoke; this process may use {cpu_list(cpus)}")
    half = len(cpus) // 2
    return Layout(tuple(cpus[:half]), tuple(cpus[half:]))


def cpu_list(cpus: Sequence[int]) -> str:
    return ",".join(str(c) for c in cpus)


# -------------------------------------------------------------- designs

def loadgen_threads(lay: Layout) -> list[str]:
    return ["-T", str(len(lay.client))]


def httpd_designs(size: Size, lay: Layout) -> list[Any]:
    """One design per (connection mode, threads per child): unpinned
    (the baseline) and pinned; loads are filled in from capacity."""
    from stagevar_bench.experiment import Design
    from stagevar_bench.reproduce import PINNING_CLIENTS, httpd_conf, pinning_level
    children = min(PAPER_CHILDREN, len(lay.server))
    designs = []
    for mode, rpc in (("keepalive", 75), ("conn-per-request", 1)):
        for t in size.httpd_threads:
            conf = httpd_conf(t, children)
            clients = max(1, min(PINNING_CLIENTS, t * children) // len(lay.client))
            levels = [replace(pinning_level(t, children, pin, "pinned" if pin else "unpinned", conf),
                              client_args=["--sequential-clients", str(clients)]) for pin in (False, True)]
            designs.append(Design(
                name=f"httpd-{mode}-{t}t", server="httpd", levels=levels, loads=[1.0], arrivals=["det"],
                runs=size.httpd_rounds, duration_s=size.httpd_duration_s, warmup_s=size.httpd_warmup_s,
                server_cpus=cpu_list(lay.server[:children]), client_cpus=cpu_list(lay.client),
                client_args=[*loadgen_threads(lay), "--requests-per-conn", str(rpc)],
                ideal_servers=children, ideal_shared=True,
                description=f"httpd fork, event MPM, {children} {'child' if children == 1 else 'children'} "
                            f"x {t} threads on CPUs "
                            f"{cpu_list(lay.server[:children])}, a 280-byte page; loadgen on "
                            f"{cpu_list(lay.client)}, {clients * len(lay.client)} sequential clients, "
                            f"{rpc} request(s) a connection, deterministic arrivals. "
                            "Knob: ProcessCorePinning on."))
    return designs


def mc_pinning(size: Size, lay: Layout) -> list[tuple[str, list[str]]]:
    """The four thread placements: helpers floating or on one CPU (the
    first server CPU the workers do not take), workers floating or one
    each on the first mc_threads server CPUs."""
    workers = cpu_list(lay.server[:size.mc_threads])
    helper = lay.server[size.mc_threads] if len(lay.server) > size.mc_threads else lay.server[-1]
    return [("float", []), ("pin_helpers", ["-o", f"pin_helpers={helper}"]),
            ("worker_cpus", ["-o", f"worker_cpus={workers}"]),
            ("both", ["-o", f"worker_cpus={workers}", "-o", f"pin_helpers={helper}"])]


MC_LRU = [("lru-stock", []), ("no_lru_maintainer", ["-o", "no_lru_maintainer"]),
          (f"amortized-{LRU_BUDGET_DEFAULT_US}us", ["-o", f"{LRU_KNOB}={LRU_BUDGET_DEFAULT_US}"])]


def mc_levels(size: Size, lay: Layout) -> list[Any]:
    from stagevar_bench.experiment import Level
    return [Level(f"{pin}+{lru}", "fork", server_args=[*pargs, *largs])
            for pin, pargs in mc_pinning(size, lay) for lru, largs in MC_LRU]


def mc_designs(size: Size, lay: Layout) -> list[Any]:
    from stagevar_bench.experiment import Design
    from stagevar_bench.reproduce import hashpower_for
    threads = ["-t", str(size.mc_threads)]
    etc = dict(server_args=[*threads, "-m", "64", "-o", f"hashpower={hashpower_for(size.etc_keys)}"],
               client_args=[*loadgen_threads(lay), "-c", "4", "--keys", str(size.etc_keys), "--key-size", "etc",
                            "--value-size", "etc", "--get-ratio", "0.97", "--popularity", "zipf:0.99",
                            "--preload"])
    demo = dict(server_args=[*threads, "-m", "8"],
                client_args=[*loadgen_threads(lay), "-c", "1", "--keys", str(size.demo_keys), "--key-size", "20",
                             "--value-size", "500", "--get-ratio", "0.1", "--preload"])
    where = (f"memcached fork -t {size.mc_threads}, every thread on CPUs {cpu_list(lay.server)} unless "
             f"pinned; loadgen on {cpu_list(lay.client)}, Poisson arrivals; ")
    return [Design(name="memcached-etc", server="memcached", levels=mc_levels(size, lay), loads=[1.0],
                   runs=size.mc_max_rounds, duration_s=size.mc_duration_s, warmup_s=size.mc_warmup_s,
                   server_cpus=cpu_list(lay.server), client_cpus=cpu_list(lay.client),
                   description=where + f"ETC-like: -m 64, {size.etc_keys} keys preloaded, key and value "
                               "sizes of Facebook's ETC pool, Zipf 0.99 popularity, 97% gets.", **etc),
            Design(name="memcached-demo", server="memcached", levels=mc_levels(size, lay), loads=[1.0],
                   runs=size.mc_max_rounds, duration_s=size.mc_duration_s, warmup_s=size.mc_warmup_s,
                   server_cpus=cpu_list(lay.server), client_cpus=cpu_list(lay.client),
                   description=where + f"the demo's: -m 8, {size.demo_keys} keys of 500 B preloaded (it evicts), "
                               "90% sets.", **demo)]


# ----------------------------------------------------------------- plan

STATISTIC = ("Per run: the mean, p90 and p99 of latency from each request's scheduled send (loadgen), and "
             "for memcached the hit ratio get_hits / (get_hits + get_misses) of the run's server. Per "
             "comparison (a level against its design's first level, at one load): the Hodges-Lehmann "
             "ratio of the runs' values with the exact Mann-Whitney 95% CI (ranks.py), < 1 is better; "
             "an interval the runs are too few for is shown as [0, inf].")


def plan(size: Size, lay: Layout, only: str | None, seed: int, budget_s: float) -> dict[str, Any]:
    """Everything decided before the first run."""
    designs = ([] if only == "memcached" else httpd_designs(size, lay)) + \
              ([] if only == "httpd" else mc_designs(size, lay))
    return {"format": "stagevar-many-core-plan/1", "size": "smoke" if size is SMOKE else "full",
            "server_cpus": list(lay.server), "client_cpus": list(lay.client), "seed": seed,
            "budget_s": budget_s, "statistic": STATISTIC,
            "loads": {"httpd": {"shares_of_capacity": list(size.httpd_shares),
                                "capacity_of": f"unpinned, {max(size.httpd_threads)} threads, each connection mode"},
                      "memcached": {"shares_of_capacity": list(size.mc_shares),
                                    "capacity_of": "float+lru-stock, each workload"}},
            "rounds": {"httpd": size.httpd_rounds,
                       "memcached": f"as many as fit in the budget left when memcached starts, 1 to "
                                    f"{size.mc_max_rounds}, from its capacity probes' mean run time"},
            "stop_rule": "a round that would end past the budget is not started (the first of each server "
                         f"always runs); with memcached to follow, httpd's budget is "
                         f"{HTTPD_BUDGET_SHARE:.0%} of the whole",
            "designs": [dict(asdict(d), loads="the shares above of the capacity measured first")
                        for d in designs]}


# ------------------------------------------------------------- running

Log = Callable[[str], None]


def file_log(stream: TextIO) -> Log:
    def log(line: str) -> None:
        stamped = f"{time.strftime('%H:%M:%S')} {line}"
        print(stamped, file=sys.stderr, flush=True)
        stream.write(stamped + "\n")
        stream.flush()
    return log


def capacity(design: Any, size: Size, start: float, ceiling: float, log: Log) -> dict[str, Any]:
    """The first level's saturation rate with this design's workload."""
    from stagevar_bench.saturation import find_saturation
    probe = replace(design, duration_s=size.probe_s, warmup_s=min(design.warmup_s, size.probe_s))
    t0 = time.monotonic()
    found = find_saturation(probe, design.levels[0], start=start, bisections=size.bisections,
                            max_rate=ceiling, progress=log)
    found["run_s"] = (time.monotonic() - t0) / len(found["probes"])
    return found


def run_rounds(designs: list[Any], rounds: int, seed: int, deadline: float, log: Log,
               runs: dict[str, list[dict[str, Any]]], after_round: Callable[[], None] = lambda: None) -> int:
    """Rounds of every cell of `designs`, interleaved: in each round the
    (design, load) pairs in a seeded random order, the levels of each back
    to back, their order rotating by round. A round that would end past
    `deadline` is not started, but the first always is. `after_round`
    runs after each. Returns the rounds run."""
    from stagevar_bench.experiment import Target, describe, run_one
    rng = random.Random(seed)
    pairs = [(d, load) for d in designs for load in d.loads]
    total = sum(len(d.levels) for d, _ in pairs)
    round_s = 0.0
    for rep in range(rounds):
        if rep and time.monotonic() + round_s > deadline:
            log(f"stop: round {rep + 1} would end past the budget ({round_s:.0f} s a round)")
            return rep
        t0 = time.monotonic()
        rng.shuffle(pairs)
        i = 0
        for d, load in pairs:
            shift = rep % len(d.levels)
            for level in d.levels[shift:] + d.levels[:shift]:
                rec = run_one(d, level, load, d.arrivals[0], rep, seed * 1000 + rep * 7 + 1, Target())
                rec["order"] = len(runs[d.name])
                runs[d.name].append(rec)
                i += 1
                log(f"[round {rep + 1}/{rounds} {i}/{total}] {d.name} {level.name} {load:.0f} req/s: "
                    + describe(rec))
        round_s = time.monotonic() - t0
        after_round()
    return rounds


# -------------------------------------------------------------- results

def hit_ratio(run: dict[str, Any]) -> float | None:
    s = run.get("server_stats") or {}
    gets = s.get("get_hits", 0) + s.get("get_misses", 0)
    return s.get("get_hits", 0) / gets if gets else None


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt_ratio(e: dict[str, Any] | None) -> str:
    if not e or "error" in e:
        return "-"
    lo = f"{e['low']:.2f}" if math.isfinite(e["low"]) else "0"
    hi = f"{e['high']:.2f}" if math.isfinite(e["high"]) else "inf"
    return f"x{e['ratio']:.2f} [{lo}, {hi}]"


def us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f}"


def cores(share: float | None) -> str:
    return "-" if share is None else f"{share:.2f}"


def analysis(exp: dict[str, Any]) -> dict[str, Any]:
    from stagevar_bench.analyze import analyze_experiment
    return analyze_experiment(exp, conf=CONF, reps=500, with_qr=False, with_ideal=False)


def pinning_summary(analysed: list[tuple[dict[str, Any], dict[str, Any]]],
                    shares: dict[str, dict[float, float]]) -> list[str]:
    """ProcessCorePinning on / off in every httpd cell, in one table."""
    lines = ["### ProcessCorePinning on / off, every httpd cell", "",
             "| design | load | runs a side | " + " | ".join(f"{m} ratio [95% CI]" for m in COMPARED) + " |",
             "|---|---|---|" + "---|" * len(COMPARED)]
    for exp, a in analysed:
        for r in a["ratios"]:
            share = shares.get(a["name"], {}).get(r["load"])
            lines.append(f"| {a['name']} | {r['load']:.0f} req/s" + (f" ({share:.0%})" if share else "")
                         + f" | {'/'.join(str(n) for n in r['ranks']['mean'].get('runs', []))} | "
                         + " | ".join(fmt_ratio(r["ranks"].get(m)) for m in COMPARED) + " |")
    return lines + [""]


def experiment_table(exp: dict[str, Any], a: dict[str, Any], shares: dict[float, float]) -> list[str]:
    """One row per cell: its runs' medians, hit ratio where memcached's,
    and its ratios to the design's first level with exact CIs."""
    ratios = {(r["knob"], r["load"]): r["ranks"] for r in a["ratios"]}
    hits: dict[tuple[str, float], list[float]] = {}
    for run in exp["runs"]:
        h = hit_ratio(run)
        if h is not None and not run.get("error"):
            hits.setdefault((run["cell"]["knob"], float(run["cell"]["load"])), []).append(h)
    memcached = exp["design"]["server"] == "memcached"
    head = ("| level | load | runs | mean us | p90 us | p99 us | lost | others' cores |"
            + (" hit ratio |" if memcached else "")
            + "".join(f" {m} ratio [95% CI] |" for m in COMPARED))
    lines = [f"### {exp['design']['name']}", "", exp["design"]["description"], "",
             f"Runs: {a['runs_total']} ({a['runs_failed']} failed"
             + (f": {'; '.join(a['failures'])[:300]}" if a["failures"] else "") + f"). Baseline: {a['baseline']}.",
             "", head, "|" + "---|" * (head.count("|") - 1)]
    for c in a["cells"]:
        key = (c["knob"], c["load"])
        r = ratios.get(key, {})
        hit = median(hits.get(key, []))
        share = shares.get(c["load"])
        lines.append(f"| {c['knob']} | {c['load']:.0f} req/s" + (f" ({share:.0%})" if share else "")
                     + f" | {c['runs']} | {us(c['mean_ns']['value'])} | {us(c['percentiles']['p90']['value'])} | "
                     f"{us(c['percentiles']['p99']['value'])} | {c['loss']:.2%} | {cores(c['outside_cores'])} |"
                     + (f" {'-' if hit is None else f'{hit:.3f}'} |" if memcached else "")
                     + "".join(f" {'baseline' if c['knob'] == a['baseline'] else fmt_ratio(r.get(m))} |"
                               for m in COMPARED))
    declared = {(l["name"], float(load)) for l in exp["design"]["levels"] for load in exp["design"]["loads"]}
    missing = sorted(declared - {(c["knob"], c["load"]) for c in a["cells"]})
    if missing:
        lines.append("")
        lines.append("Declared cells without a successful run: "
                     + ", ".join(f"{k} at {load:.0f} req/s" for k, load in missing) + ".")
    return lines + [""]


def markdown(results: dict[str, Any], plan_: dict[str, Any], shares: dict[str, dict[float, float]]) -> str:
    meta = results["meta"]
    lines = [f"# Many-core measurement ({plan_['size']}): ProcessCorePinning, worker pinning, LRU options", "",
             f"Host: {meta.get('cpus')} CPUs ({meta.get('cpu_model')}), {meta.get('kernel')}; "
             f"governor {meta.get('governor')}; commit {meta.get('git_commit')}.",
             f"Server CPUs {cpu_list(plan_['server_cpus'])}, loadgen CPUs {cpu_list(plan_['client_cpus'])}. "
             f"Budget {plan_['budget_s']:g} s of measuring; seed {plan_['seed']}.", "",
             "Declared before any run (plan.json): every cell below, the loads as shares of capacity, "
             f"the rounds ({plan_['rounds']['httpd']} for httpd; memcached: {plan_['rounds']['memcached']}), "
             f"and the stop rule: {plan_['stop_rule']}.", "", "Statistic: " + plan_["statistic"], "",
             "Others' cores: what other tasks took of the server's CPUs during a run, in cores (median "
             "over the cell's runs); loadgen would be among them if it strayed there.", ""]
    lines += ["## Notes", ""] + [f"- {n}" for n in results["notes"]] + [""]
    for server in ("httpd", "memcached"):
        analysed = [(e, analysis(e)) for e in results["experiments"] if e["design"]["server"] == server]
        if not analysed:
            continue
        lines += [f"## {server}", ""]
        if server == "httpd":
            lines += pinning_summary(analysed, shares)
        for e, a in analysed:
            lines += experiment_table(e, a, shares.get(e["design"]["name"], {}))
    return "\n".join(lines)


# ----------------------------------------------------------------- main

# httpd's rounds stop where the next would end past this share of the
# budget, so that memcached's capacity searches and at least one round of
# its 48 cells (a fresh server and a preload each) keep the rest. The
# split is not yet measured on a many-core host: httpd's 4 rounds are
# sized to take about half (144 runs of 0.8 s measured plus a server
# start), and the first device run's log gives the real figures.
HTTPD_BUDGET_SHARE = 0.6


class Session:
    """One measurement: the plan, the runs so far, and the files they go to."""

    def __init__(self, args: argparse.Namespace, size: Size, lay: Layout, log: Log) -> None:
        from stagevar_bench.experiment import new_results
        self.args, self.size, self.lay, self.log = args, size, lay, log
        self.t0 = time.monotonic()
        self.budget = args.budget or size.budget_s
        self.plan = plan(size, lay, args.only, args.seed, self.budget)
        self.httpd = httpd_designs(size, lay) if args.only != "memcached" else []
        self.memcached = mc_designs(size, lay) if args.only != "httpd" else []
        self.runs: dict[str, list[dict[str, Any]]] = {d.name: [] for d in self.httpd + self.memcached}
        self.shares: dict[str, dict[float, float]] = {}
        self.results = new_results([f"Size {self.plan['size']}; server CPUs {cpu_list(lay.server)}, "
                                    f"loadgen CPUs {cpu_list(lay.client)}."])

    def note(self, text: str) -> None:
        self.results["notes"].append(text)
        self.log(text)

    def declare(self) -> None:
        """plan.json, before the first run; then the designs' own checks."""
        (self.args.out / "plan.json").write_text(json.dumps(self.plan, indent=1))
        self.log(f"plan: {len(self.plan['designs'])} designs, "
                 f"{sum(len(d['levels']) for d in self.plan['designs'])} levels -> {self.args.out / 'plan.json'}")
        for d in self.httpd + self.memcached:
            d.validate()

    def with_loads(self, designs: list[Any], shares: tuple[float, ...], found: dict[str, Any]) -> list[Any]:
        out = []
        for d in designs:
            loads = [float(round(found["rate"] * s, -1)) for s in shares]
            self.shares[d.name] = dict(zip(loads, shares))
            out.append(replace(d, loads=loads))
        return out

    def capacity_note(self, what: str, level: str, found: dict[str, Any]) -> None:
        self.note(f"{what} capacity ({level}): {found['rate']:.0f} req/s, not {found['upper_bound']:.0f} "
                  f"({found['criterion']}; {len(found['probes'])} probes of {found['duration_s']:g} s).")

    def run_httpd(self) -> None:
        size, ready = self.size, []
        for mode in ("keepalive", "conn-per-request"):
            group = [d for d in self.httpd if f"-{mode}-" in d.name]
            top = next(d for d in group if d.name.endswith(f"-{max(size.httpd_threads)}t"))
            self.log(f"httpd {mode}: capacity of {top.name} {top.levels[0].name}")
            found = capacity(top, size, size.httpd_start, size.httpd_max, self.log)
            self.capacity_note(f"httpd {mode}", f"{top.name}, unpinned", found)
            ready += self.with_loads(group, size.httpd_shares, found)
        self.httpd = ready
        deadline = self.t0 + self.budget * (HTTPD_BUDGET_SHARE if self.memcached else 1.0)
        done = run_rounds(self.httpd, size.httpd_rounds, self.args.seed, deadline, self.log, self.runs)
        self.note(f"httpd: {done} of {size.httpd_rounds} rounds run.")

    def run_memcached(self) -> None:
        size, ready, run_s = self.size, [], []
        for d in self.memcached:
            self.log(f"{d.name}: capacity of {d.levels[0].name}")
            found = capacity(d, size, size.mc_start, size.mc_max, self.log)
            run_s.append(found["run_s"] + d.duration_s - size.probe_s)
            self.capacity_note(d.name, d.levels[0].name, found)
            ready += self.with_loads([d], size.mc_shares, found)
        cells = sum(len(d.levels) * len(d.loads) for d in ready)
        round_s = cells * sum(run_s) / len(run_s)
        left = max(0.0, self.t0 + self.budget - time.monotonic())
        rounds = max(1, min(size.mc_max_rounds, int(left // round_s)))
        self.note(f"memcached: {rounds} round(s) for the {left:.0f} s of the budget left ({cells} cells, "
                  f"about {round_s:.0f} s a round from the capacity probes; the first runs in any case).")
        self.memcached = [replace(d, runs=rounds) for d in ready]
        done = run_rounds(self.memcached, rounds, self.args.seed + 1, self.t0 + self.budget, self.log,
                          self.runs, after_round=self.save)
        self.note(f"memcached: {done} of {rounds} rounds run.")

    def save(self) -> None:
        """results.json.gz and many-core.md, as far as the runs go."""
        from stagevar_bench.experiment import compact_results, finish_results, save_results
        designs = self.httpd + self.memcached
        self.results["experiments"] = [{"design": asdict(d), "runs": self.runs[d.name]} for d in designs]
        finish_results(self.results)
        save_results(compact_results(self.results, 16), self.args.out / "results.json.gz")
        (self.args.out / "many-core.md").write_text(markdown(self.results, self.plan, self.shares))


def measure(args: argparse.Namespace, size: Size, lay: Layout, log: Log) -> int:
    """Declare, then each server's capacity and rounds; a server whose
    measurement fails is noted and the other still runs."""
    from stagevar_bench.experiment import ExperimentError
    session = Session(args, size, lay, log)
    try:
        session.declare()
    except ExperimentError as e:
        log(f"error: {e}")
        return 1
    failed = False
    for server, step in (("httpd", session.run_httpd), ("memcached", session.run_memcached)):
        if not (session.httpd if server == "httpd" else session.memcached):
            continue
        try:
            step()
        except ExperimentError as e:
            session.note(f"{server}: stopped: {e}")
            failed = True
        session.save()
    session.note(f"Measuring took {(time.monotonic() - session.t0) / 60:.1f} min.")
    session.save()
    runs = [r for rs in session.runs.values() for r in rs]
    log(f"done: {len(runs)} runs ({sum(1 for r in runs if r.get('error'))} failed) -> "
        f"{args.out / 'many-core.md'}")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    size = SMOKE if args.smoke else FULL
    try:
        lay = layout(os.sched_getaffinity(0), args.smoke)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if args.check_only or args.build_only:
        print(args.out)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "many-core.log", "a") as stream:
        log = file_log(stream)
        log(f"many-core: size {'smoke' if args.smoke else 'full'}, server CPUs {cpu_list(lay.server)}, "
            f"loadgen CPUs {cpu_list(lay.client)}")
        try:
            return measure(args, size, lay, log)
        except KeyboardInterrupt:
            log("interrupted")
            return 130


if __name__ == "__main__":
    sys.exit(main())
