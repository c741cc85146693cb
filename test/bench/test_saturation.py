# SPDX-License-Identifier: BSD-3-Clause
"""The capacity searches: the bounded-latency rule on canned probe
records, the search's steps, and find_capacity against a real stock
memcached."""
from __future__ import annotations

from typing import Any

import pytest

from stagevar_bench.experiment import Design, ExperimentError, Level
from stagevar_bench.saturation import (CAPACITY_STEAL_VOID_S, CAPACITY_SUSTAINED, bounded_probe, find_capacity,
                                       rate_decided, rate_held, rate_sustained, search)
from stagevar_bench.servers import build_binary

BOUND_NS = 20e6


def record(achieved: float, p99_ns: float, error: str | None = None,
           scheduled: float = 100000.0, steal_s: float = 0.0) -> dict[str, Any]:
    """A run record as run_one writes it, cut to what a probe reads."""
    return {"error": error, "loadavg_before": [0.5, 0.5, 0.5], "host_steal_s": steal_s,
            "loadgen": {"rates": {"offered": 100000.0, "scheduled": scheduled, "achieved": achieved},
                        "latency_scheduled": {"p50": 30e3, "p99": p99_ns}}}


def test_a_replicate_holds_its_rate_only_with_its_replies_and_its_tail() -> None:
    rate = 100000.0
    assert bounded_probe(record(rate, 5e6), rate, BOUND_NS)["sustained"]
    assert bounded_probe(record(CAPACITY_SUSTAINED * rate, BOUND_NS), rate, BOUND_NS)["sustained"]
    short = bounded_probe(record(0.97 * rate, 1e6), rate, BOUND_NS)
    assert not short["sustained"] and short["achieved"] == 0.97 * rate
    assert not bounded_probe(record(rate, 25e6), rate, BOUND_NS)["sustained"]
    # judged against what was sent in the window, not the nominal rate
    assert bounded_probe(record(0.97 * rate, 1e6, scheduled=0.975 * rate), rate, BOUND_NS)["sustained"]
    # no latency at all (nothing came back) is no evidence of a bounded tail
    assert not bounded_probe(record(rate, 0), rate, BOUND_NS)["sustained"]
    failed = bounded_probe(record(rate, 1e6, error="server exited"), rate, BOUND_NS)
    assert failed == {"rate": rate, "error": "server exited", "sustained": False}


def test_a_rate_is_sustained_when_a_majority_of_its_replicates_held_it() -> None:
    held = bounded_probe(record(1e5, 1e6), 1e5, BOUND_NS)
    stalled = bounded_probe(record(1e5, 40e6), 1e5, BOUND_NS)
    assert rate_sustained([held, held, held], 3)
    assert rate_sustained([held, stalled, held], 3)
    assert not rate_sustained([stalled, held, stalled], 3)
    assert not rate_sustained([held, stalled], 4) and rate_sustained([held, held, stalled, held], 4)
    # the search stops a rate once its majority is settled
    assert rate_sustained([held, held], 3) and rate_decided([held, held], 3)
    assert not rate_decided([held, stalled], 3) and not rate_decided([held], 3)
    assert rate_decided([stalled, stalled], 3) and not rate_sustained([stalled, stalled], 3)
    assert not rate_sustained([], 3)


def test_a_failed_replicate_the_host_stole_from_is_void_and_runs_again() -> None:
    rate = 1e5
    assert not bounded_probe(record(rate, 40e6, steal_s=CAPACITY_STEAL_VOID_S / 2), rate, BOUND_NS)["void"]
    # steal only adds latency: a replicate that held despite it stands
    assert not bounded_probe(record(rate, 1e6, steal_s=1.0), rate, BOUND_NS)["void"]
    stolen = bounded_probe(record(rate, 40e6, steal_s=CAPACITY_STEAL_VOID_S), rate, BOUND_NS)
    assert stolen["void"] and stolen["host_steal_s"] == CAPACITY_STEAL_VOID_S
    held = bounded_probe(record(rate, 1e6), rate, BOUND_NS)
    stalled = bounded_probe(record(rate, 40e6), rate, BOUND_NS)
    asked: list[int] = []

    def replicates(*probes: dict[str, Any]):
        queue = list(probes)

        def replicate(counted: int) -> dict[str, Any]:
            asked.append(counted)
            return queue.pop(0)
        return replicate

    # a void replicate neither holds nor fails the rate: the next one counts in its place
    assert rate_held(replicates(stolen, held, stolen, held), 3, rate)
    assert asked == [0, 0, 1, 1]
    assert not rate_held(replicates(stalled, stolen, stalled), 3, rate)
    refusal = r"3 probes at 100000 req/s failed while the hypervisor took their CPUs \(steal; the last 100 ms\)"
    with pytest.raises(ExperimentError, match=refusal):
        rate_held(replicates(stolen, held, stolen, stolen), 3, rate)


def test_the_search_doubles_then_bisects_to_the_highest_rate_held() -> None:
    tried: list[float] = []

    def below_330k(rate: float) -> bool:
        tried.append(rate)
        return rate <= 330000

    assert search(below_330k, 100000, 3, 3200000) == (325000, 350000)
    assert tried == [100000, 200000, 400000, 300000, 350000, 325000]
    assert search(lambda rate: False, 100000, 2, 3200000) == (0, 25000)
    assert search(lambda rate: True, 100000, 0, 300000) == (200000, 300000)


def test_find_capacity_refuses_a_rule_without_replicates_or_bound() -> None:
    design = Design(name="capacity-refused", server="memcached", levels=[Level("stock", "stock")], loads=[1000])
    with pytest.raises(ExperimentError, match="replicates must be >= 1.*not 0"):
        find_capacity(design, design.levels[0], 1000, 0, 2000, print, replicates=0)
    with pytest.raises(ExperimentError, match="p99 bound > 0.*-1 ns"):
        find_capacity(design, design.levels[0], 1000, 0, 2000, print, p99_bound_ns=-1)


def test_find_capacity_replicates_each_rate_on_a_real_server() -> None:
    """Light rates a busy machine holds: each rate the search passed was
    probed the stated number of times, each a sustained replicate. The
    bounds are wide (a p99 of 1 s, steal of 10 s) so that the test asserts
    the rule, not the host."""
    stock = Level("stock", "stock")
    if not build_binary("stock", "memcached").exists():
        pytest.skip(f"{build_binary('stock', 'memcached')} is not built (run make)")
    design = Design(name="capacity-test", server="memcached", levels=[stock], loads=[2000],
                    server_args=["-t", "1"], duration_s=0.5, warmup_s=0.2)
    lines: list[str] = []
    found = find_capacity(design, stock, start=2000, bisections=0, max_rate=8000, progress=lines.append,
                          replicates=2, p99_bound_ns=1e9, steal_void_s=10)
    assert (found["rate"], found["upper_bound"]) == (4000, 8000)
    assert [p["rate"] for p in found["probes"]] == [2000, 2000, 4000, 4000]
    assert all(p["sustained"] and p["achieved"] > 0 for p in found["probes"])
    assert all(0 <= p["host_steal_s"] < 10 and not p["void"] for p in found["probes"])
    assert "a majority of 2 replicates" in found["criterion"] and "10000 ms or more" in found["criterion"]
    assert len(lines) == 4 and "replicate 2/2" in lines[-1]

