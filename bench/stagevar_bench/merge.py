# SPDX-License-Identifier: BSD-3-Clause
"""Several loadgen JSON reports merged into one, exactly.

loadgen's histograms are log-linear with fixed bucket edges, the same on
every host, so adding them bucket by bucket gives the histogram of the
union of all samples. Percentiles are then taken from that sum with the
rule libstagevar's sv_hist_quantile uses (nearest rank, reported as the
bucket's midpoint), never averaged across reports. Counts and rates add.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

Report = dict[str, Any]
Buckets = dict[tuple[int, int], int]     # (low, width) -> count

QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}


def add_buckets(hists: Iterable[Sequence[Sequence[int]]]) -> Buckets:
    """Bucket-by-bucket sum of loadgen histograms ([low, width, count] lists)."""
    out: Buckets = {}
    for hist in hists:
        for low, width, count in hist:
            out[(low, width)] = out.get((low, width), 0) + count
    return out


def as_list(buckets: Buckets) -> list[list[int]]:
    """Back to loadgen's own form, lowest bucket first."""
    return [[low, width, n] for (low, width), n in sorted(buckets.items()) if n]


def quantile(hist: Sequence[Sequence[int]], q: float, overflow: int = 0, overflow_value: int = 0) -> int:
    """The ceil(q*n)-th smallest value's bucket midpoint, as sv_hist_quantile
    computes it; `overflow_value` (the maximum) when it lies past the top."""
    total = sum(n for _, _, n in hist) + overflow
    if total == 0:
        return 0
    rank = max(1, math.ceil(min(max(q, 0.0), 1.0) * total))
    seen = 0
    for low, width, n in sorted(hist):
        seen += n
        if seen >= rank:
            return int(low + (width - 1) // 2)
    return overflow_value


def merge_stage(stages: Sequence[Report]) -> Report:
    """One latency-like summary (count, mean, stddev, ..., histogram) from several."""
    count = sum(s["count"] for s in stages)
    hist = as_list(add_buckets(s["histogram"] for s in stages))
    overflow = sum(s.get("overflow", 0) for s in stages)
    mean = sum(s["mean"] * s["count"] for s in stages) / count if count else 0.0
    # Pooled population variance: E[x^2] over the union, minus its mean squared.
    ex2 = sum(s["count"] * (s["stddev"] ** 2 + s["mean"] ** 2) for s in stages) / count if count else 0.0
    var = max(ex2 - mean * mean, 0.0)
    seen = [s for s in stages if s["count"]]
    top = max((s["max"] for s in seen), default=0)
    out: Report = {"count": count, "mean": mean, "stddev": math.sqrt(var),
                   "cv2": var / (mean * mean) if mean else 0.0,
                   "min": min((s["min"] for s in seen), default=0), "max": top}
    for name, q in QUANTILES.items():
        out[name] = quantile(hist, q, overflow, top)
    out["overflow"] = overflow
    out["histogram"] = hist
    return out


def is_stage(value: Any) -> bool:
    return isinstance(value, dict) and "histogram" in value and "count" in value


def merge_series(reports: Sequence[Report]) -> list[Report]:
    """Second i of every report added: the agents started together, so
    their seconds are the same seconds."""
    seconds = max((len(r.get("time_series", [])) for r in reports), default=0)
    out = []
    for i in range(seconds):
        secs = [r["time_series"][i] for r in reports if i < len(r.get("time_series", []))]
        n = sum(s["latency_count"] for s in secs)
        hist = as_list(add_buckets(s.get("histogram", []) for s in secs))
        top = max((s["max_ns"] for s in secs), default=0)
        out.append({"second": i,
                    "scheduled": sum(s["scheduled"] for s in secs),
                    "completed": sum(s["completed"] for s in secs),
                    "errors": sum(s["errors"] for s in secs),
                    "latency_count": n,
                    "mean_ns": sum(s["mean_ns"] * s["latency_count"] for s in secs) / n if n else 0.0,
                    "p50_ns": quantile(hist, 0.5, 0, top), "p99_ns": quantile(hist, 0.99, 0, top),
                    "max_ns": top, "histogram": hist})
    return out


def merge_reports(reports: Sequence[Report]) -> Report:
    """counts and rates summed (window_s: the longest), every stage merged,
    the time series merged second by second. Per-client views and CPU stay
    in each agent's own report."""
    if not reports:
        return {}
    counts = {k: sum(r["counts"][k] for r in reports) for k in reports[0]["counts"]}
    rates = {k: sum(r["rates"][k] for r in reports) for k in reports[0]["rates"] if k != "window_s"}
    rates = {"window_s": max(r["rates"]["window_s"] for r in reports), **rates}
    out: Report = {"rates": rates, "counts": counts}
    for key, value in reports[0].items():
        if is_stage(value) and all(is_stage(r.get(key)) for r in reports):
            out[key] = merge_stage([r[key] for r in reports])
    out["time_series"] = merge_series(reports)
    return out
