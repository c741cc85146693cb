# SPDX-License-Identifier: BSD-3-Clause
"""The exporter's stage histograms: fixed edges that are libstagevar bucket
boundaries, and buckets coarsened onto them without re-binning."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stagevar_bench import exporter
from stagevar_bench.exporter import Families, Reading, cumulative, stage_edges_ns

TOP = Path(__file__).resolve().parents[2]


def sub_bits() -> int:
    text = (TOP / "common" / "stagevar.h").read_text()
    return int(re.search(r"#define SV_HIST_SUB_BITS (\d+)", text).group(1))


def bucket_low(b: int, bits: int) -> int:
    """sv_hist_bucket_low (common/histogram.c)."""
    if b < 2 << bits:
        return b
    return ((1 << bits) + (b & ((1 << bits) - 1))) << ((b >> bits) - 1)


def test_edges_are_every_eighth_libstagevar_boundary_from_2_10_to_2_32_ns() -> None:
    bits = sub_bits()
    want = [low for b in range(40 << bits) if b % 8 == 0
            and (1 << 10) <= (low := bucket_low(b, bits)) <= (1 << 32)]
    assert stage_edges_ns() == want
    assert len(want) == 177
    assert exporter.le_seconds(want[0]) == "1.024e-06"
    assert exporter.le_seconds(want[-1]) == "4.2949673"      # "%.9g", as the spec prints it


def test_cumulative_counts_each_bucket_below_its_edge_once() -> None:
    bits = sub_bits()
    # Buckets just below and at an edge, and one in the first (sub-1.024 us) bucket.
    edge = stage_edges_ns()[8]                       # 2048 ns
    below = bucket_low(next(b for b in range(40 << bits) if bucket_low(b, bits) == edge) - 1, bits)
    counts = cumulative({500: 2, below: 3, edge: 5}, stage_edges_ns(), inclusive=False)
    assert counts[0] == 2 and counts[7] == 2 and counts[8] == 5 and counts[9] == 10
    assert counts[-1] == 10


def hist_reply(stage: str, buckets: dict[int, int], overflow: int, mean_ns: float) -> dict[str, str]:
    count = sum(buckets.values()) + overflow
    out = {f"{stage}:count": str(count), f"{stage}:mean_ns": str(mean_ns),
           f"{stage}:missing": "1", f"{stage}:dropped": "0", f"{stage}:overflow": str(overflow)}
    out |= {f"{stage}:bucket_{low}": str(c) for low, c in buckets.items()}
    return out


def exposition(readings: dict[str, Reading]) -> str:
    fams = Families()
    for inst, r in readings.items():
        fams.add(inst, r)
    from prometheus_client.exposition import generate_latest
    from prometheus_client.registry import CollectorRegistry

    class Fixed:
        def collect(self):  # type: ignore[no-untyped-def]
            return list(fams.all())
    reg = CollectorRegistry(auto_describe=False)
    reg.register(Fixed())  # type: ignore[arg-type]
    return generate_latest(reg).decode()


def test_a_fork_with_buckets_gets_a_histogram_per_stage_that_promtool_accepts() -> None:
    stages = {"stage_trace": "on"}
    stages |= hist_reply("kernel_to_read", {2976: 4, 9216: 6}, 1, 20000.0)
    stages |= hist_reply("server_total", {1100: 10}, 0, 1150.0)
    stages |= {"batch_size:count": "3", "batch_size:mean": "2.00", "batch_size:bucket_1": "1",
               "batch_size:bucket_2": "1", "batch_size:bucket_3": "1", "batch_size:overflow": "0"}
    text = exposition({"10.0.0.1:11211": Reading({"evictions": "7"}, stages, {}),
                       "10.0.0.2:11211": Reading({}, {"stage_trace": "off"}, {})})
    line = 'stagevar_stage_seconds_bucket{instance="10.0.0.1:11211",le="%s",stage="kernel_to_read"} %s'
    assert line % ("2.816e-06", "0.0") in text       # 2816 ns: below the 2976 ns bucket
    assert line % ("3.072e-06", "4.0") in text
    assert line % ("9.216e-06", "4.0") in text       # the 9216 ns bucket is not below its own edge
    assert line % ("1.024e-05", "10.0") in text
    assert line % ("4.2949673", "10.0") in text
    assert line % ("+Inf", "11.0") in text           # the overflow only in +Inf
    assert 'stagevar_stage_seconds_count{instance="10.0.0.1:11211",stage="kernel_to_read"} 11.0' in text
    assert 'stagevar_stage_seconds_sum{instance="10.0.0.1:11211",stage="kernel_to_read"} 0.00022' in text
    assert 'stagevar_batch_size_bucket{instance="10.0.0.1:11211",le="2"} 2.0' in text
    assert 'stagevar_memcached_evictions_total{instance="10.0.0.1:11211"} 7.0' in text
    assert 'stagevar_memcached_stage_trace{instance="10.0.0.2:11211"} 0.0' in text
    assert 'instance="10.0.0.2:11211",le=' not in text
    if not shutil.which("promtool"):
        pytest.skip("promtool is not installed (tools/setup installs prometheus)")
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
