#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A copy of a compare results file with one level moved first, so that
`stagevar advise` and `stagevar analyze`, which compare every level with
the first, give each ratio against that level instead. Used by
bench/results/2026-12-04-lru-hot0.md for hot0 over stock:

    python3 bench/results/2026-12-04-lru-hot0-against.py W1.json.gz stock W1-stock.json.gz
    .venv/bin/stagevar advise W1-stock.json.gz --metric p90
"""
from __future__ import annotations

import gzip
import json
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(f"usage: {argv[0]} RESULTS LEVEL OUT", file=sys.stderr)
        return 2
    src, level, out = argv[1:]
    with gzip.open(src, "rt") as f:
        results = json.load(f)
    for exp in results["experiments"]:
        levels = exp["design"]["levels"]
        first = [lv for lv in levels if lv["name"] == level]
        if not first:
            print(f"{src}: no level {level!r} (levels: {', '.join(lv['name'] for lv in levels)})",
                  file=sys.stderr)
            return 1
        exp["design"]["levels"] = first + [lv for lv in levels if lv["name"] != level]
    with gzip.open(out, "wt") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
