# SPDX-License-Identifier: BSD-3-Clause
"""The saturation rate of a server set-up: the highest open-loop rate it
sustains, found by doubling from a start rate and then bisecting, with a
fresh server for every probe (the same runs as an experiment's, shorter).

A probe sustains its rate when the replies that arrived within the
measurement window are at least SUSTAINED of the offered rate and its
median latency is at most MEDIAN_GROWTH times the lowest median of the
probes before it (the set-up's unloaded median, as far as known). Both are
needed: a server that falls behind answers fewer than it is sent, but
memcached past its knee reads ever larger batches and can answer nearly
all of them in the window while its queue, and so the median, grows
without bound. A rate that falls short is probed once more before it
counts as too high: on a shared machine a stall of another tenant can
hold back a short window.
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from stagevar_bench.experiment import Design, ExperimentError, Level, Progress, run_one, target_for

SUSTAINED = 0.95
MEDIAN_GROWTH = 10.0


def probe_summary(rec: dict[str, Any], rate: float, base_p50_ns: float | None) -> dict[str, Any]:
    """What a probe keeps: its rate, what came back, and whether that
    counts (against the lowest earlier median, `base_p50_ns`; None: there
    is none yet)."""
    if rec.get("error"):
        return {"rate": rate, "error": rec["error"], "sustained": False}
    lg = rec["loadgen"]
    achieved = float(lg["rates"].get("achieved", 0))
    p50 = float(lg["latency_scheduled"].get("p50") or 0)
    bounded = base_p50_ns is None or p50 <= MEDIAN_GROWTH * base_p50_ns
    return {"rate": rate, "achieved": achieved, "p50_ns": p50, "p99_ns": lg["latency_scheduled"].get("p99"),
            "sustained": achieved >= SUSTAINED * rate and bounded, "loadavg_after": rec.get("loadavg_after")}


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
            base = min((p["p50_ns"] for p in probes if p.get("p50_ns")), default=None)
            probes.append(probe_summary(rec, rate, base))
            last = probes[-1]
            progress(f"[saturation {design.name}] {rate:.0f} req/s: "
                     + (f"achieved {last['achieved']:.0f}, p50 {last['p50_ns'] / 1e3:.0f} us"
                        if "achieved" in last else f"FAILED: {last['error']}"))
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
    criterion = f"achieved >= {SUSTAINED:g} x offered and p50 <= {MEDIAN_GROWTH:g} x the lowest earlier probe's"
    if low == 0:
        raise ExperimentError(f"no rate down to {high:.0f} req/s was sustained ({criterion})")
    return {"rate": low, "upper_bound": high, "criterion": criterion, "level": level.name,
            "duration_s": design.duration_s, "probes": probes}
