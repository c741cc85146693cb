#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The LRU work each option does, read from a `stagevar compare` results
file (2026-12-04-lru-work.md): per level and offered rate, the runs'
medians of the server's moves to COLD per eviction and of its CPU time
per request served.

  python3 bench/results/2026-12-04-lru-work.py FILE
"""
from __future__ import annotations

import gzip
import json
import statistics
import sys
from collections import defaultdict
from typing import Any


def load(path: str) -> dict[str, Any]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def work(run: dict[str, Any]) -> tuple[float, float] | None:
    """(moves to COLD per eviction, server CPU us per request), or None
    for a failed run or one that evicted or served nothing."""
    stats = run.get("server_stats") or {}
    evictions, served = stats.get("evictions", 0), run.get("requests_served", 0)
    if run.get("error") or not evictions or not served:
        return None
    return stats.get("moves_to_cold", 0) / evictions, run["server_cpu_s"] * 1e6 / served


def table(results: dict[str, Any]) -> list[str]:
    cells: dict[tuple[str, float], list[tuple[float, float]]] = defaultdict(list)
    for experiment in results["experiments"]:
        for run in experiment["runs"]:
            figures = work(run)
            if figures:
                cells[(run["cell"]["knob"], run["cell"]["load"])].append(figures)
    lines = ["| level | offered (req/s) | runs | moves to COLD per eviction | server CPU per request (us) |",
             "|---|---|---|---|---|"]
    for (knob, load_rate), runs in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        moves = statistics.median(m for m, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        lines.append(f"| {knob} | {load_rate:.0f} | {len(runs)} | {moves:.3f} | {cpu:.3f} |")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        results = load(argv[1])
    except (OSError, ValueError) as e:
        print(f"2026-12-04-lru-work.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
