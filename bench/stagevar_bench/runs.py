# SPDX-License-Identifier: BSD-3-Clause
"""How many runs a cell of an experiment may have.

Its own module, free of numpy, so that the command line can name the
bound in --help and check --runs before it imports the statistics.
"""
from __future__ import annotations

# Fewer than two runs a side leave no spread to compare.
MIN_RUNS = 2
# Enough for the light-load LRU cells (60 a side resolve 20% at their
# spread); the exact rank test's null distribution is still quick there.
MAX_RUNS = 60
# The complaint about a count outside them, with {value} to fill in.
OUT_OF_RANGE = f"runs per cell must be {MIN_RUNS}..{MAX_RUNS}, not {{value}}"


def runs_ok(runs: int) -> bool:
    return MIN_RUNS <= runs <= MAX_RUNS
