"""The saturation rate of a server set-up: the highest open-loop rate it
sustains, found by doubling from a start rate and then bisecting, with a
fresh server for every probe (the same runs as an experiment's, shorter).

A probe sustains its rate when the replies that arrived within the
measurement window are at least SUSTAINED of the offered rate: a server
that falls behind answers fewer than it is sent, and its backlog shows
there before latency alone would say it. A rate that falls short is
probed once more before it counts as too high: on a shared machine a
stall of another tenant can hold back a short window's replies.
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from stagevar_bench.experiment import Design, ExperimentError, Level, Progress, run_one, target_for

SUSTAINED = 0.95


def probe_summary(rec: dict[str, Any], rate: float) -> dict[str, Any]:
    """What a probe keeps: its rate, what came back, and whether that counts."""
    if rec.get("error"):
        return {"rate": rate, "error": rec["error"], "sustained": False}
    lg = rec["loadgen"]
    achieved = float(lg["rates"].get("achieved", 0))
    return {"rate": rate, "achieved": achieved, "p99_ns": lg["latency_scheduled"].get("p99"),
            "sustained": achieved >= SUSTAINED * rate, "loadavg_after": rec.get("loadavg_after")}


def find_saturation(design: Design, level: Level, start: float, bisections: int, max_rate: float,
                    progress: Progress) -> dict[str, Any]:
    """Double from `start` until a probe falls behind (or `max_rate`), then
    bisect between the last rate sustained and the first one not. Raises
    ExperimentError if not even the lowest rate tried was sustained."""
    design = replace(design, arrivals=design.arrivals[:1])
    design.validate()
    probes: list[dict[str, Any]] = []
    with ExitStack() as stack:
        target = target_for(design, stack)

        def probe(rate: float) -> bool:
            rec = run_one(design, level, rate, design.arrivals[0], len(probes), 9000 + len(probes), target)
            probes.append(probe_summary(rec, rate))
            progress(f"[saturation {design.name}] {rate:.0f} req/s: "
                     + (f"achieved {probes[-1]['achieved']:.0f}" if "achieved" in probes[-1]
                        else f"FAILED: {probes[-1]['error']}"))
            return bool(probes[-1]["sustained"])

        def sustains(rate: float) -> bool:
            return probe(rate) or probe(rate)

        low, high = 0.0, start
        while high < max_rate and sustains(high):
            low, high = high, min(high * 2, max_rate)
        for _ in range(bisections):
            mid = (low + high) / 2
            if sustains(mid):
                low = mid
            else:
                high = mid
    if low == 0:
        raise ExperimentError(f"no rate down to {high:.0f} req/s was sustained (>= {SUSTAINED:.0%} answered)")
    return {"rate": low, "upper_bound": high, "criterion": f"achieved >= {SUSTAINED:g} x offered",
            "level": level.name, "duration_s": design.duration_s, "probes": probes}
