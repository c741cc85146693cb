"""reproduce: the reference paper's three use cases on this machine, then
the report.

1. client batching for high-throughput memcached (loadgen --batch-interval-us);
2. amortized LRU maintenance for low-core memcached
   (-o lru_amortized_budget_us=N; skipped with a note if the fork lacks it);
3. process pinning for httpd (ProcessCorePinning): event MPM, one child per
   CPU, 25 threads per child, a 280-byte static page, 75 requests per
   connection at a deterministic interval, load set by connection rate.

Sizes: full (about 30 min on 2 cores), quick (about 5), tiny (about a
minute: the end-to-end test). Each use case first profiles the fork with
stage tracing (baseline and knob), then runs its factorial experiment and
its sensitivity sweeps with tracing off.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from stagevar_bench import profile as prof
from stagevar_bench.experiment import (Design, ExperimentError, Level, finish_results, new_results,
                                       run_design, save_results)
from stagevar_bench.report import write_report
from stagevar_bench.servers import build_binary

LRU_OPTION = "lru_amortized_budget_us"


@dataclass(frozen=True)
class Size:
    runs: int
    sweep_runs: int
    duration_s: float
    warmup_s: float
    sweeps: bool
    profile_s: float


SIZES = {
    "tiny": Size(runs=2, sweep_runs=2, duration_s=0.4, warmup_s=0.2, sweeps=True, profile_s=0.5),
    "quick": Size(runs=5, sweep_runs=3, duration_s=1.0, warmup_s=0.5, sweeps=True, profile_s=1.0),
    "full": Size(runs=5, sweep_runs=5, duration_s=3.0, warmup_s=1.0, sweeps=True, profile_s=3.0),
}


def cpus() -> int:
    return os.cpu_count() or 1


def fork_has_lru_option() -> bool:
    """The fork's binary mentions the option's name if it parses it."""
    try:
        return LRU_OPTION.encode() in build_binary("fork", "memcached").read_bytes()
    except OSError:
        return False


# ----------------------------------------------------------- use cases

def batching(size: Size, name: str) -> tuple[list[Design], dict[str, Any], Level, Level, float]:
    loads = {"tiny": [30000.0], "quick": [20000.0, 50000.0], "full": [20000.0, 40000.0, 70000.0]}[name]
    arrivals = ["exp"] if name != "full" else ["exp", "det"]
    common = dict(server="memcached", server_cpus="1" if cpus() > 1 else None,
                  client_cpus="0", server_args=["-t", "1"],
                  client_args=["-c", "2", "--preload"], duration_s=size.duration_s,
                  warmup_s=size.warmup_s, ideal_servers=1, ideal_shared=False)
    off = Level("no-batching", "fork", params={"batch_interval_us": 0})
    on = Level("batch-50us", "fork", client_args=["--batch-interval-us", "50"], params={"batch_interval_us": 50})
    main = Design(name="batching", levels=[off, on], loads=loads, arrivals=arrivals, runs=size.runs,
                  description="memcached fork, one worker thread (-t 1) pinned to CPU 1, loadgen on CPU 0 "
                              "with 2 connections and preloaded keys (90% gets); knob: the client flushes "
                              "its queued requests every 50 µs instead of sending each at once.",
                  **common)  # type: ignore[arg-type]
    designs = [main]
    if size.sweeps:
        values = [0, 25, 100] if name != "full" else [0, 10, 25, 50, 100, 200]
        levels = [Level(f"batch-{v}us" if v else "no-batching", "fork",
                        client_args=["--batch-interval-us", str(v)] if v else [],
                        params={"batch_interval_us": v}) for v in values]
        designs.append(Design(name="batching-sweep", levels=levels, loads=[loads[-1]], arrivals=["exp"],
                              runs=size.sweep_runs, sweep="batch_interval_us", seed=2,
                              description="The batching interval swept at the highest load.",
                              **common))  # type: ignore[arg-type]
    return designs, {"use_case": "client batching (memcached, high throughput)",
                     "claim": "batching requests on the client makes server batch sizes even and lowers "
                              "tail latency at high throughput (the issues give no figure)",
                     "checks": [{"metric": "p99", "load": "highest", "at_most": 1.0}]}, off, on, loads[-1]


def lru(size: Size, name: str) -> tuple[list[Design], dict[str, Any], Level, Level, float]:
    loads = {"tiny": [10000.0], "quick": [25000.0], "full": [10000.0, 25000.0]}[name]
    common = dict(server="memcached", server_cpus="1" if cpus() > 1 else None, client_cpus="0",
                  server_args=["-t", "1", "-m", "16"],
                  client_args=["-c", "4", "--get-ratio", "0.9", "--keys", "50000" if name == "tiny" else "200000",
                               "--key-size", "20",
                               "--value-size", "50", "--preload"],
                  duration_s=size.duration_s, warmup_s=size.warmup_s, ideal_servers=1)
    off = Level("maintainer-thread", "fork", params={"budget_us": 0, "cores": 1})
    on = Level("amortized-50us", "fork", server_args=["-o", f"{LRU_OPTION}=50"],
               params={"budget_us": 50, "cores": 1})
    main = Design(name="lru", levels=[off, on], loads=loads, arrivals=["exp"], runs=size.runs,
                  description="memcached fork with one worker (-t 1) and its background threads on one core "
                              "(CPU 1), loadgen on CPU 0; 90% gets, 20-byte keys, 50-byte values, 200,000 "
                              "keys preloaded into 16 MB (evictions keep the LRU maintainer busy); knob: no maintainer thread, the worker "
                              "does the maintenance for at most 50 µs after each batch.",
                  **common)  # type: ignore[arg-type]
    designs = [main]
    if size.sweeps:
        budgets = {"tiny": [200], "quick": [10, 200]}.get(name, [10, 50, 200, 1000])
        levels = [replace(off)] + [Level(f"amortized-{b}us", "fork", server_args=["-o", f"{LRU_OPTION}={b}"],
                                         params={"budget_us": b, "cores": 1}) for b in budgets]
        designs.append(Design(name="lru-budget-sweep", levels=levels, loads=[loads[-1]], arrivals=["exp"],
                              runs=size.sweep_runs, sweep="budget_us", seed=3,
                              description="The amortized budget swept (0 = the maintainer thread).",
                              **common))  # type: ignore[arg-type]
        if cpus() > 1 and name != "tiny":
            two = dict(common, server_cpus=None)
            cl = [replace(off, name="thread-1core", server_cpus="1"),
                  replace(on, name="amortized-1core", server_cpus="1"),
                  replace(off, name="thread-2cores", server_cpus="0-1", server_args=["-t", "2"],
                          params={"budget_us": 0, "cores": 2}),
                  replace(on, name="amortized-2cores", server_cpus="0-1",
                          server_args=["-t", "2", "-o", f"{LRU_OPTION}=50"], params={"budget_us": 50, "cores": 2})]
            # The design's -t 1 comes first; a level's -t 2 after it wins.
            designs.append(Design(name="lru-cores-sweep", levels=cl, loads=[loads[-1]], arrivals=["exp"],
                                  runs=size.sweep_runs, sweep="cores", seed=4,
                                  description="Cores for the server: 1 (CPU 1, -t 1) or 2 (CPUs 0-1, -t 2, "
                                              "shared with loadgen), maintainer thread vs amortized.",
                                  **two))  # type: ignore[arg-type]
    return designs, {"use_case": "amortized LRU (memcached, low core count)",
                     "claim": "doing the LRU maintainer's work in the workers, in bounded slices, removes "
                              "its interference: mean -30% and p99 -35% at 70-85% load (issue 5's goal)",
                     "checks": [{"metric": "mean", "load": "highest", "at_most": 0.7},
                                {"metric": "p99", "load": "highest", "at_most": 0.65}]}, off, on, loads[-1]


def httpd_conf(threads: int, children: int) -> str:
    return (f"KeepAlive On\nMaxKeepAliveRequests 100\nKeepAliveTimeout 5\n"
            f"StartServers {children}\nServerLimit {children}\nThreadLimit {threads}\n"
            f"ThreadsPerChild {threads}\nMaxRequestWorkers {threads * children}\n"
            f"MinSpareThreads {threads}\nMaxSpareThreads {threads * children}\n"
            f"MaxConnectionsPerChild 0\nAcceptFilter http none\n")


def pinning(size: Size, name: str) -> tuple[list[Design], dict[str, Any], Level, Level, float]:
    loads = {"tiny": [20.0], "quick": [20.0, 60.0], "full": [20.0, 40.0, 80.0]}[name]
    children = cpus()
    common = dict(server="httpd", server_cpus=None, client_cpus="0", load_unit="conn/s",
                  requests_per_conn=75, httpd_conf=httpd_conf(25, children),
                  client_args=["--sequential-clients", "25", "--requests-per-conn", "75"],
                  duration_s=size.duration_s, warmup_s=size.warmup_s,
                  ideal_servers=children, ideal_shared=True)
    off = Level("unpinned", "fork", httpd_conf="ProcessCorePinning off",
                params={"threads_per_child": 25, "pinned": 0})
    on = Level("pinned", "fork", httpd_conf="ProcessCorePinning on", params={"threads_per_child": 25, "pinned": 1})
    main = Design(name="pinning", levels=[off, on], loads=loads, arrivals=["det"], runs=size.runs,
                  description=f"httpd fork, event MPM, {children} children (one per CPU) x 25 threads, a "
                              "280-byte static page; loadgen on CPU 0 with 25 sequential clients, each "
                              "sending 75 requests per connection at a deterministic interval; load is "
                              "the connection rate (x75 requests/s). Knob: ProcessCorePinning on.",
                  **common)  # type: ignore[arg-type]
    designs = [main]
    if size.sweeps:
        tpcs = [10, 25] if name != "full" else [5, 10, 15, 25]
        levels = []
        for t in tpcs:
            for pin in (0, 1):
                levels.append(Level(f"{'pinned' if pin else 'unpinned'}-{t}t", "fork",
                                    httpd_conf=httpd_conf(t, children)
                                    + f"ProcessCorePinning {'on' if pin else 'off'}\n",
                                    params={"threads_per_child": t, "pinned": pin}))
        d = dict(common, httpd_conf="")
        designs.append(Design(name="pinning-threads-sweep", levels=levels, loads=[loads[-1]], arrivals=["det"],
                              runs=size.sweep_runs, sweep="threads_per_child", seed=5,
                              description="Threads per child swept, pinned and unpinned.",
                              **d))  # type: ignore[arg-type]
    return designs, {"use_case": "process pinning (httpd)",
                     "claim": "pinning each httpd child process (and so its threads) to one core: mean "
                              "-40% at high load, no loss at low load (issue 6's goal)",
                     "checks": [{"metric": "mean", "load": "highest", "at_most": 0.6},
                                {"metric": "mean", "load": "lowest", "at_most": 1.0}]}, off, on, loads[-1]


USE_CASES: dict[str, Callable[[Size, str], tuple[list[Design], dict[str, Any], Level, Level, float]]] = {
    "batching": batching, "lru": lru, "pinning": pinning}


def log(msg: str) -> None:
    print(f"reproduce: {msg}", file=sys.stderr, flush=True)


def reproduce(out: Path, size_name: str, only: list[str], netns: bool = False) -> int:
    size = SIZES[size_name]
    t0 = time.monotonic()
    results = new_results()
    results["title"] = f"stagevar reproduction report ({size_name})"
    results["size"] = size_name
    results["claims"] = []
    load0 = results["meta"]["loadavg"]
    results["notes"].append(
        f"Size `{size_name}`: {size.runs} runs per cell ({size.sweep_runs} in sweeps), "
        f"{size.duration_s:g} s measured after {size.warmup_s:g} s of warm-up per run. "
        f"Load average when the run started: {load0}; this is a shared 2-core machine where other "
        "work (builds, test suites) comes and goes, which the runs' random order spreads over all cells.")
    for name in only:
        designs, claim, off, on, top_load = USE_CASES[name](size, size_name)
        if netns:
            designs = [replace(d, netns=True) for d in designs]
        claim = dict(claim, experiment=designs[0].name, knob=on.name)
        if name == "lru" and not fork_has_lru_option():
            note = (f"the fork memcached has no `-o {LRU_OPTION}` (it is implemented on another branch); "
                    "this use case was skipped")
            results["notes"].append(f"Amortized LRU: {note}.")
            results["claims"].append(dict(claim, skipped=note))
            log(f"lru: skipped: {note}")
            continue
        for level in (off, on):
            log(f"{name}: profiling {level.name}")
            base = designs[0]
            pd = replace(base, duration_s=size.profile_s, runs=2)
            rates = [base.loads[0], top_load] if base.server == "httpd" and base.loads[0] != top_load else [top_load]
            if base.server == "httpd" and len(rates) == 1:
                rates = [top_load / 4, top_load]
            try:
                p = prof.profile(pd, level, rates, base.arrivals[0], seed=11)
            except (ExperimentError, ValueError) as e:
                p = {"error": str(e), "server": base.server, "level": {"name": level.name}}
            p["use_case"] = name
            results["profiles"].append(p)
            print(prof.text(p), file=sys.stderr)
        for d in designs:
            log(f"{name}: experiment {d.name}: {len(d.schedule())} runs")
            try:
                results["experiments"].append(run_design(d))
            except ExperimentError as e:
                results["notes"].append(f"Experiment {d.name} could not run: {e}")
                log(f"{d.name}: {e}")
        results["claims"].append(claim)
    finish_results(results)
    elapsed = time.monotonic() - t0
    results["notes"].append(f"Experiments took {elapsed / 60:.1f} min; load average at the end: "
                            f"{results['meta']['loadavg_end']}.")
    out.mkdir(parents=True, exist_ok=True)
    save_results(results, out / "results.json.gz")
    md = write_report(results, out)
    log(f"results {out / 'results.json.gz'}, report {md} ({(time.monotonic() - t0) / 60:.1f} min)")
    return 0
