# SPDX-License-Identifier: BSD-3-Clause
"""The table of a `stagevar bench lru --cpu-cost` output, made again from
its per-drive lines with the committed lru_cpu.table(): for a run begun
before the paired column moved from the t interval to the signed-rank
one (2026-11-28).

Usage, from bench/:
  python3 results/2026-11-28-lru-cpu-retable.py OUTPUT.txt [BUDGET]
"""
from __future__ import annotations

import re
import sys

from stagevar_bench import lru_cpu

DRIVE = re.compile(r"\s+\[\d+/\d+\] (no evictions|evicting)\s+(\d+) req/s\s+(.+?)\s+([\d.]+) us/request$")


def main() -> None:
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    values: dict[tuple[str, float, str], list[float]] = {}
    rates: list[float] = []
    with open(sys.argv[1]) as f:
        for line in f:
            m = DRIVE.match(line.rstrip("\n"))
            if m:
                rate = float(m[2])
                rates += [rate] if rate not in rates else []
                values.setdefault((m[1], rate, m[3]), []).append(float(m[4]) * 1e3)
    print("\n".join(lru_cpu.table(values, budget, rates)))


if __name__ == "__main__":
    main()
