# SPDX-License-Identifier: BSD-3-Clause
"""The probes behind the demo's capacity rule (2026-12-02-demo.md, part 1):
stock memcached on the demo's workload at fixed rates, each probe a fresh
preloaded server measured as the capacity search measures it (1 s after
0.5 s, experiment.run_one), the rates in order, then the next replicate.
One JSON line a probe: replies / offered, p50 and p99 (ns), the load
average before it.

usage: PYTHONPATH=bench python bench/results/2026-12-02-demo-probes.py RATE,RATE,... REPLICATES
"""
from __future__ import annotations

import json
import sys
from contextlib import ExitStack

from stagevar_bench.experiment import Design, Level, run_one, target_for
from stagevar_bench.reproduce import demo_common


def main(argv: list[str]) -> int:
    try:
        rates = [float(r) for r in argv[1].split(",")]
        replicates = int(argv[2])
    except (IndexError, ValueError):
        print(f"bad arguments {argv[1:]}; {__doc__.strip().splitlines()[-1]}", file=sys.stderr)
        return 2
    stock = Level("stock", "stock")
    design = Design(name="demo-probes", levels=[stock], loads=rates, **demo_common(duration_s=1.0, warmup_s=0.5))
    design.validate()
    with ExitStack() as stack:
        target = target_for(design, stack)
        for rep in range(replicates):
            for i, rate in enumerate(rates):
                rec = run_one(design, stock, rate, "exp", rep, 9000 + rep * 100 + i, target)
                if rec.get("error"):
                    print(json.dumps({"rate": rate, "rep": rep, "error": rec["error"]}), flush=True)
                    continue
                lg = rec["loadgen"]
                print(json.dumps({"rate": rate, "rep": rep, "ach": round(lg["rates"].get("achieved", 0) / rate, 4),
                                  "p50": lg["latency_scheduled"].get("p50"), "p99": lg["latency_scheduled"].get("p99"),
                                  "la": rec["loadavg_before"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
