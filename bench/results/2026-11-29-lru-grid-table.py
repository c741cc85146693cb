# SPDX-License-Identifier: BSD-3-Clause
"""The LRU grid's cells as Markdown rows (issue 37): per memory size, load,
arrival and level, the Hodges-Lehmann ratio level / stock of the runs'
p90 and mean with the exact 95% CI and the MDE (80% power) analyze
gives, from the runs' robust spread (power.log_spread; before
2026-11-29 10:00 UTC analyze's was the pooled sd, which this file's
first tables print beside it). Then the worker's wait for its core (stock -> level) and the
maintainer's work done (juggles, moves, evictions and crawler starts,
level / stock, medians).

    .venv/bin/python bench/results/2026-11-29-lru-grid-table.py bench/results/2026-11-29-lru-grid/grid-m*.json.gz
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from stagevar_bench.analyze import analyze
from stagevar_bench.experiment import load_results

CAPACITY = {"8": 680000.0, "256": 450000.0}
WORK = ("lru_maintainer_juggles", "moves", "evictions", "lru_crawler_starts")


def work(run: dict[str, Any], key: str) -> float:
    s = run.get("server_stats", {})
    return float(s.get("moves_to_cold", 0) + s.get("moves_to_warm", 0)) if key == "moves" else float(s.get(key, 0))


def work_ratio(runs: list[dict[str, Any]], knob: str, base: str, load: float, arrival: str, key: str) -> str:
    def med(level: str) -> float:
        return statistics.median(work(r, key) for r in runs if r["cell"] == {"knob": level, "load": load,
                                                                              "arrival": arrival})
    b = med(base)
    return f"{med(knob) / b:.2f}" if b else ("=" if med(knob) == 0 else "n/a")


def verdict(e: dict[str, Any]) -> str:
    if e["high"] < 1:
        return "lower"
    if e["low"] > 1:
        return "higher"
    return "no change shown"


def mde(value: float) -> str:
    return f"{100 * value:.0f}%"


def rows(path: Path) -> list[str]:
    results = load_results(path)
    exp = analyze(results, with_qr=False, with_ideal=False, reps=2000)["experiments"][0]
    raw = results["experiments"][0]["runs"]
    stock_args = results["experiments"][0]["design"]["levels"][0]["server_args"]
    memory = stock_args[stock_args.index("-m") + 1]
    out = []
    for r in exp["ratios"]:
        p90, mean = r["ranks"]["p90"], r["ranks"]["mean"]
        waits = r["worker_sched"]
        wait = (f"{100 * waits[0]['wait_share']:.1f} -> {100 * waits[1]['wait_share']:.1f}%"
                if all(waits) else "n/a")
        done = " / ".join(work_ratio(raw, r["knob"], r["baseline"], r["load"], r["arrival"], k) for k in WORK)
        out.append(f"| {'evicting' if memory == '8' else 'holds all'} | {r['load'] / 1e3:.0f}k "
                   f"({100 * r['load'] / CAPACITY[memory]:.0f}%) | {r['arrival'].split(':')[0]} | {r['knob']} | "
                   f"x{p90['ratio']:.3f} [{p90['low']:.3f}, {p90['high']:.3f}] ({mde(p90['mde'])}) | "
                   f"x{mean['ratio']:.3f} [{mean['low']:.3f}, {mean['high']:.3f}] ({mde(mean['mde'])}) | "
                   f"{verdict(p90)} | {wait} | {done} |")
    return out


def main(argv: list[str]) -> int:
    print("| cache | load (of C) | arrivals | level | p90 level/stock [95% CI] (MDE) "
          "| mean [95% CI] (MDE) "
          "| p90 | worker waited, stock -> level | juggles / moves / evictions / crawler starts, level/stock |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in argv[1:]:
        print("\n".join(rows(Path(path))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
