# SPDX-License-Identifier: BSD-3-Clause
"""A merged load report's per-second latency as an HdrHistogram interval
log (the format HdrHistogram's HistogramLogProcessor and plotters read),
encoded by PyPI's hdrhistogram.

Values are nanoseconds of latency from the schedule (latency_scheduled).
Each loadgen bucket is recorded at its midpoint, the value loadgen's own
percentiles report, with its count: HdrHistogram's 3 significant digits
are finer than loadgen's 1/128 buckets, so nothing is lost that loadgen
had. Interval_Max is in milliseconds, HdrHistogram's convention for ns.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

LOWEST_NS = 1
HIGHEST_NS = 1 << 37            # libstagevar's top bucket edge (SV_HIST_LIMIT)
SIGNIFICANT_DIGITS = 3
NS_PER_MS = 1e6


class HdrLogError(RuntimeError):
    pass


def check_available() -> None:
    try:
        import hdrh.histogram  # noqa: F401
        import hdrh.log  # noqa: F401
    except ImportError:
        raise HdrLogError("--hdr-log needs the hdrhistogram package (pip install -r "
                          "bench/requirements.txt)") from None


def interval(second: dict[str, Any], start_ms: float) -> Any:
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
    for low, width, count in second.get("histogram", []):
        h.record_value(max(LOWEST_NS, min(low + (width - 1) // 2, HIGHEST_NS)), count)
    h.set_start_time_stamp(start_ms)
    h.set_end_time_stamp(start_ms + 1000)
    return h


def write(path: Path, report: dict[str, Any]) -> None:
    """One interval per second of the merged time series, timed from the
    measurement's start (the common start plus the warm-up)."""
    from hdrh.log import HistogramLogWriter

    first = report["agents"][0]["meta"]
    base_ms = (report["meta"]["start"]["requested_unix_ns"] + first["warmup_s"] * 1e9) / 1e6
    when = datetime.datetime.fromtimestamp(base_ms / 1e3, datetime.timezone.utc)
    with open(path, "w", encoding="utf-8") as f:
        log = HistogramLogWriter(f)
        log.output_comment("stagevar load: latency_scheduled in ns, merged over "
                           + ", ".join(a["agent"] for a in report["agents"]))
        log.output_log_format_version()
        # Written as BaseTime is (%f): readers skip an interval that seems
        # to begin before StartTime.
        log.output_comment(f"[StartTime: {base_ms / 1e3:.6f} (seconds since epoch), {when.isoformat()}]")
        log.output_base_time(base_ms)
        log.base_time = base_ms        # interval times are then relative to it
        log.output_legend()
        for sec in report["time_series"]:
            log.output_interval_histogram(interval(sec, base_ms + 1000 * sec["second"]),
                                          max_value_unit_ratio=NS_PER_MS)
