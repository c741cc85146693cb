#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tables of the LRU options grid (2026-12-02-lru-options-grid.md), from
`stagevar compare` results files, by the rules declared there:

  capacity FILE [RULE]
                  per level: the highest offered rate sustained by RULE,
                  counted up the ladder from its bottom; then latency
                  against offered rate (median of the replicates, with
                  their range). RULE:
                    p99-every  (declared first) p99 at most 1 ms and the
                               achieved rate at least 99% of offered in
                               every replicate
                    p50-median (declared second, after the first found
                               no capacity) the replicates' median of
                               achieved / offered at least 0.99 and their
                               median p50 at most 10x that of the
                               ladder's lowest rate
                  (default p50-median)
  stock-capacity FILE [RULE]
                  stock's capacity alone, one number (for the script)
  runs FILE       runs per side for the equal-rate cells, from a pilot:
                  ceil(2 (1.96 + 0.84)^2 s^2 / ln(1.1)^2), s = 1.4826 x the
                  MAD of log p90, the larger of stock's and
                  stock-no_lru_maintainer's, clamped to [8, 30]
"""
from __future__ import annotations

import gzip
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

P99_BOUND_NS = 1e6
ACHIEVED_SHARE = 0.99
P50_GROWTH = 10.0
RUNS_MIN, RUNS_MAX = 8, 30
Z = 1.96 + 0.84
STOCK, NO_MAINTAINER = "stock", "stock-no_lru_maintainer"


def load_runs(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        results = json.load(f)
    return [r for e in results["experiments"] for r in e["runs"]]


def by_level_and_rate(runs: list[dict[str, Any]]) -> dict[str, dict[float, list[dict[str, Any]]]]:
    table: dict[str, dict[float, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        table[r["cell"]["knob"]][float(r["cell"]["load"])].append(r)
    return table


def sustained(run: dict[str, Any]) -> bool:
    if run.get("error"):
        return False
    lg = run["loadgen"]
    p99 = lg["latency_scheduled"].get("p99")
    return (p99 is not None and p99 <= P99_BOUND_NS
            and lg["rates"]["achieved"] >= ACHIEVED_SHARE * lg["rates"]["offered"])


def p99_every(rates: dict[float, list[dict[str, Any]]], rate: float) -> bool:
    return all(sustained(r) for r in rates[rate])


def achieved_share(run: dict[str, Any]) -> float:
    if run.get("error"):
        return 0.0
    return run["loadgen"]["rates"]["achieved"] / run["loadgen"]["rates"]["offered"]


def p50_median(rates: dict[float, list[dict[str, Any]]], rate: float) -> bool:
    """The replicates' medians: one stalled replicate of three moves
    neither, where it fails a rule on every replicate's p99."""
    runs = rates[rate]
    base = statistics.median(percentile_us(r, "p50") for r in rates[min(rates)])
    return (statistics.median(achieved_share(r) for r in runs) >= ACHIEVED_SHARE
            and statistics.median(percentile_us(r, "p50") for r in runs) <= P50_GROWTH * base)


RULES = {"p99-every": p99_every, "p50-median": p50_median}


def capacity_of(rates: dict[float, list[dict[str, Any]]], rule: str) -> float | None:
    """The highest rate `rule` sustains (None: not even the lowest). A
    rate is not credited past one that failed: capacity is the top of the
    run of sustained rates from the bottom of the ladder."""
    best = None
    for rate in sorted(rates):
        if not RULES[rule](rates, rate):
            break
        best = rate
    return best


def percentile_us(run: dict[str, Any], name: str) -> float:
    return float(run["loadgen"]["latency_scheduled"][name]) / 1e3 if not run.get("error") else math.nan


def fmt_point(runs: list[dict[str, Any]], name: str) -> str:
    values = sorted(percentile_us(r, name) for r in runs)
    return f"{statistics.median(values):.0f} ({values[0]:.0f}-{values[-1]:.0f})"


def cmd_capacity(path: Path, rule: str) -> None:
    table = by_level_and_rate(load_runs(path))
    caps = {level: capacity_of(rates, rule) for level, rates in table.items()}
    print(f"capacity rule: {rule}\n")
    top = {level: max(rates) for level, rates in table.items()}
    print("| level | capacity (req/s) | over stock | over no_lru_maintainer |")
    print("|---|---|---|---|")
    for level, cap in caps.items():
        shown = "none" if cap is None else (f"at least {cap:.0f}" if cap == top[level] else f"{cap:.0f}")
        ratios = [f"x{cap / caps[ref]:.2f}" if cap and caps.get(ref) else "-" for ref in (STOCK, NO_MAINTAINER)]
        print(f"| {level} | {shown} | {ratios[0]} | {ratios[1]} |")
    print("\nlatency against offered rate, us: median of the replicates (their range)\n")
    print("| level | offered | p50 | p90 | p99 | sustained |")
    print("|---|---|---|---|---|---|")
    for level, rates in table.items():
        for rate in sorted(rates):
            runs = rates[rate]
            print(f"| {level} | {rate:.0f} | {fmt_point(runs, 'p50')} | {fmt_point(runs, 'p90')} | "
                  f"{fmt_point(runs, 'p99')} | {'yes' if RULES[rule](rates, rate) else 'no'} |")


def cmd_stock_capacity(path: Path, rule: str) -> None:
    cap = capacity_of(by_level_and_rate(load_runs(path))[STOCK], rule)
    if cap is None:
        sys.exit("stock sustained none of the rates")
    print(f"{cap:.0f}")


def robust_sd_log_p90(runs: list[dict[str, Any]]) -> float:
    logs = [math.log(percentile_us(r, "p90")) for r in runs if not r.get("error")]
    med = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - med) for x in logs)


def cmd_runs(path: Path, rule: str) -> None:
    table = by_level_and_rate(load_runs(path))
    s = max(robust_sd_log_p90([r for runs in table[level].values() for r in runs])
            for level in (STOCK, NO_MAINTAINER))
    n = math.ceil(2 * Z ** 2 * s ** 2 / math.log(1.1) ** 2)
    print(min(RUNS_MAX, max(RUNS_MIN, n)))


COMMANDS = {"capacity": cmd_capacity, "stock-capacity": cmd_stock_capacity, "runs": cmd_runs}


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4) or argv[1] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, rule = Path(argv[2]), argv[3] if len(argv) == 4 else "p50-median"
    if not path.is_file():
        print(f"{argv[0]}: no results file {path}", file=sys.stderr)
        return 2
    if rule not in RULES:
        print(f"{argv[0]}: no capacity rule {rule!r} ({', '.join(RULES)})", file=sys.stderr)
        return 2
    COMMANDS[argv[1]](path, rule)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
