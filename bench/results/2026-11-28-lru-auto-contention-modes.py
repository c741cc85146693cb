# SPDX-License-Identifier: BSD-3-Clause
"""Per run of a `stagevar compare` results file: the knob, the worker's
run-queue share (schedstat, over the run), what other tasks took of the
server's CPU, and auto's mode figures from `stats lru_amortized` at the
run's end (cumulative since the server started, preload included).

    python3 2026-11-28-lru-auto-contention-modes.py FILE.json.gz ...
"""
import gzip
import json
import sys

for path in sys.argv[1:]:
    data = json.load(gzip.open(path))
    for exp in data["experiments"]:
        print(f"== {path}")
        for r in sorted(exp["runs"], key=lambda r: r.get("order", 0)):
            la = r.get("lru_amortized") or {}
            ws = r.get("worker_sched") or {}
            mode = ""
            if "mode_switches" in la:
                mode = (f" mode: thread {la['mode_thread_ms'] / 1000:.1f} s, slices "
                        f"{la['mode_slices_ms'] / 1000:.1f} s, {la['mode_switches']:.0f} switches,"
                        f" {la['thread_turns']:.0f} thread turns, {la['slices']:.0f} slices")
            print(f"{r['cell']['knob']:9} rep {r['rep']}: worker waited "
                  f"{100 * ws.get('wait_share', float('nan')):.1f}% of its runnable time,"
                  f" others took {r.get('outside_cores', float('nan')):.2f} cores;"
                  f" last window runq {la.get('runqueue_permille', float('nan')):.0f} permille{mode}")
