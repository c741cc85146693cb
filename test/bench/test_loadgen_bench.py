# SPDX-License-Identifier: BSD-3-Clause
"""make bench-loadgen's search: who gave up, and the highest sustained rate."""
from __future__ import annotations

from typing import Any

from stagevar_bench import bench_loadgen


def report(offered: float, achieved: float, p50_ns: float, lost: int = 0) -> dict[str, Any]:
    return {"rates": {"offered": offered, "achieved": achieved}, "schedule_error": {"p50": p50_ns},
            "counts": {"lost": lost, "errors": 0, "unexpected": 0}}


def fake(limit: float, who: str, flaky_at: float | None = None) -> Any:
    """A measurement: sustained below `limit`, then `who` gives up; the
    first run at `flaky_at` fails once as if preempted."""
    seen: list[float] = []

    def measure(rate: float) -> dict[str, Any]:
        seen.append(rate)
        if rate == flaky_at and seen.count(rate) == 1:
            return report(rate, rate, 80_000)
        if rate <= limit:
            return report(rate, rate, 1_000)
        if who == "loadgen":
            return report(rate, rate, 50_000)
        return report(rate, 0.9 * rate, 1_000)
    measure.seen = seen  # type: ignore[attr-defined]
    return measure


def test_verdict_names_who_gave_up() -> None:
    assert bench_loadgen.verdict(report(100, 100, 1_000)) == "ok"
    assert bench_loadgen.verdict(report(100, 100, 25_000)) == "loadgen"
    assert bench_loadgen.verdict(report(100, 98, 1_000)) == "server"
    assert bench_loadgen.verdict(report(100, 100, 1_000, lost=1)) == "server"


def test_capacity_ramps_then_bisects_to_the_limit() -> None:
    for who in ("loadgen", "server"):
        rate, why, best = bench_loadgen.capacity(fake(37_000, who), 10_000)
        assert why == who
        # Ramp 10k, 12.5k, ... 30.5k ok, 38.1k fails; 3 bisections land within 1/8 of the step.
        assert 35_000 < rate <= 37_000, rate
        assert best["rates"]["offered"] == rate


def test_capacity_retries_a_failure_once() -> None:
    m = fake(37_000, "loadgen", flaky_at=15_625)
    rate, _, _ = bench_loadgen.capacity(m, 10_000)
    assert 35_000 < rate <= 37_000
    assert m.seen.count(15_625) == 2


def test_capacity_zero_when_the_first_rate_fails() -> None:
    rate, why, _ = bench_loadgen.capacity(fake(5_000, "server"), 10_000)
    assert rate == 0 and why == "server"


def test_loadgen_sys_us_is_system_cpu_per_request_sent() -> None:
    r = {"rates": {"sent": 100_000.0, "window_s": 2.0}, "cpu": {"measurement_sys_s": 0.6}}
    assert abs(bench_loadgen.loadgen_sys_us(r) - 3.0) < 1e-9
    r["rates"]["sent"] = 0.0
    assert bench_loadgen.loadgen_sys_us(r) == 0.0
