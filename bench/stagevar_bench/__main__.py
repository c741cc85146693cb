# SPDX-License-Identifier: BSD-3-Clause
"""python -m stagevar_bench <command>: see stagevar_bench.cli."""
from stagevar_bench.cli import run

run()
