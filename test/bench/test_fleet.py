# SPDX-License-Identifier: BSD-3-Clause
"""The fleet profile's statistics: variance from the exposition's buckets
against the exact variance of the values, within the bound that
docs/monitoring.md states; and its input checks."""
from __future__ import annotations

import math
import random
from dataclasses import asdict

import pytest

from stagevar_bench import fleet
from stagevar_bench.exporter import STAGE_EDGES_NS

EDGES_S = [e / 1e9 for e in STAGE_EDGES_NS]


def hist_of(values_ns: list[int]) -> fleet.Hist:
    h = fleet.Hist(sum=sum(values_ns) / 1e9)
    for edge_ns, edge_s in zip(STAGE_EDGES_NS, EDGES_S):
        h.buckets[edge_s] = float(sum(v < edge_ns for v in values_ns))
    h.buckets[math.inf] = float(len(values_ns))
    return h


def population_variance(xs: list[int]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.0])
def test_bucket_variance_is_within_the_stated_bound_of_the_exact_one(sigma: float) -> None:
    rng = random.Random(7)
    xs = [int(2000 + rng.lognormvariate(math.log(20000), sigma)) for _ in range(20000)]
    m = fleet.moments(hist_of(xs))
    exact = population_variance(xs)
    mean = sum(xs) / len(xs)
    cv2 = exact / mean ** 2
    worst = (1 / 8) * math.sqrt(1 + 1 / cv2) + (1 + 1 / cv2) / 256    # docs/monitoring.md
    assert m["count"] == len(xs)
    assert m["mean"] * 1e9 == pytest.approx(mean, rel=1e-9)      # from _sum: exact
    assert abs((m["stddev"] * 1e9) ** 2 / exact - 1) <= worst
    assert abs((m["stddev"] * 1e9) ** 2 / exact - 1) <= 0.02     # what it is in practice


def test_overflow_sits_at_the_last_edge_and_empty_buckets_count_nothing() -> None:
    h = hist_of([5000] * 9)
    h.buckets[math.inf] = 10.0                        # one value above 2^32 ns
    rows = [(lo, hi, c) for lo, hi, c in h.counts() if c]
    assert rows[-1] == (EDGES_S[-1], math.inf, 1.0)
    assert sum(c for _, _, c in rows) == 10


def test_batch_sizes_are_whole_numbers_in_le_buckets() -> None:
    h = fleet.Hist(buckets={1.0: 4.0, 2.0: 6.0, 4.0: 8.0, math.inf: 8.0})
    m = fleet.moments(h, integer=True)
    assert m["count"] == 8
    assert m["mean"] == pytest.approx((4 * 1 + 2 * 2 + 2 * 3.5) / 8)
    assert m["max"] == 4


def ranked_instance(name: str, variances: dict[str, float]) -> fleet.Instance:
    table = {s: {"count": 100.0, "mean": 10000.0, "stddev": math.sqrt(v), "cv2": 0.1, "p99": 1.0}
             for s, v in variances.items()}
    ranked = fleet.rank_stages(table)
    return fleet.Instance(name, "memcached", table, ranked, fleet.recommend("memcached", ranked, table))


def test_an_instance_stands_out_by_its_top_stage_or_its_variance() -> None:
    a = ranked_instance("a", {"kernel_to_read": 100.0, "read_to_parse": 10.0})
    b = ranked_instance("b", {"kernel_to_read": 110.0, "read_to_parse": 10.0})
    c = ranked_instance("c", {"kernel_to_read": 900.0, "read_to_parse": 10.0})
    d = ranked_instance("d", {"kernel_to_read": 5.0, "read_to_parse": 50.0})
    fleet_ranked = ranked_instance("all", {"kernel_to_read": 300.0, "read_to_parse": 20.0}).ranked
    out = {s["instance"]: s["why"] for s in fleet.stand_out([a, b, c, d], fleet_ranked)}
    assert set(out) == {"c", "d"}
    assert "8.6x" in out["c"] and "read_to_parse" in out["d"]
    # Prometheus shows neither the maintainer's CPU nor the workers' neighbours:
    # the knob is not recommended blind.
    assert a.advice.knob == "unknown" and "maintainer thread's CPU" in a.advice.reason


@pytest.mark.parametrize("call, named", [
    (lambda: fleet.parse_window("5x"), "'5x'"),
    (lambda: fleet.parse_window("0m"), "'0m'"),
    (lambda: fleet.check_url("localhost:9090"), "'localhost:9090'"),
    (lambda: fleet.check_url("http://h:port/"), "'http://h:port/'"),
    (lambda: fleet.matchers("{a}{b}"), "'{a}{b}'"),
])
def test_bad_input_names_the_value(call, named: str) -> None:
    with pytest.raises(fleet.FleetError) as e:
        call()
    assert named in str(e.value)


def test_matchers_take_braces_or_not() -> None:
    assert fleet.matchers('{job="mc"}') == 'job="mc"'
    assert fleet.matchers('job="mc"') == 'job="mc"'
    assert fleet.matchers("") == ""


class AnsweringPrometheus:
    """Fixed answers to the range queries of fleet_evidence(): samples every
    2 s over 60 s, as the exporter's counters would give them."""

    def __init__(self, series: dict[str, list[tuple[dict[str, str], list[float]]]]) -> None:
        self.series = series
        self.asked: list[str] = []

    def query(self, promql: str, at: float | None = None) -> list[dict[str, object]]:
        self.asked.append(promql)
        name = promql.split("{", 1)[0]
        return [{"metric": {"__name__": name, **labels},
                 "values": [[1000.0 + 2 * i, str(v)] for i, v in enumerate(values)]}
                for labels, values in self.series.get(name, [])]


def counter(rate: float, n: int = 31, start: float = 5.0) -> list[float]:
    """A counter growing `rate` per second, sampled every 2 s."""
    return [start + 2 * rate * i for i in range(n)]


def test_fleet_evidence_from_the_exporters_counters_decides_per_instance() -> None:
    beside, quiet, busy, remote = "10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211", "10.0.0.4:11211"

    def threads(inst: str, maint: float) -> list[tuple[dict[str, str], list[float]]]:
        return [({"instance": inst, "thread": "mc-lrumaint"}, counter(maint)),
                ({"instance": inst, "thread": "mc-worker"}, counter(0.3))]
    prom = AnsweringPrometheus({
        fleet.THREAD_CPU: threads(beside, 0.02) + threads(quiet, 0.001) + threads(busy, 0.02),
        fleet.THREAD_WAIT: [({"instance": i, "thread": "mc-worker"}, counter(0.1)) for i in (beside, quiet, busy)],
        fleet.OTHER_CPU: [({"instance": beside}, counter(0.9, start=0.0)),
                          ({"instance": quiet}, counter(0.01, start=0.0)),
                          ({"instance": busy}, counter(0.01, start=0.0))],
    })
    ev = fleet.fleet_evidence(prom, 'job="mc"', 1060.0, 600.0)   # type: ignore[arg-type]
    assert all('job="mc"' in q and "[600s]" in q for q in prom.asked)
    assert set(ev) == {beside, quiet, busy}
    assert ev[beside].maintainer_cores == pytest.approx(0.02)
    assert ev[beside].outside_cores == pytest.approx(0.9)
    assert ev[beside].worker_wait_share == pytest.approx(0.25)
    k = {"kernel_to_read": {"count": 100.0, "mean": 1e4, "stddev": 5e4},
         "read_to_parse": {"count": 100.0, "mean": 1e4, "stddev": 1e3}}
    ranked = fleet.rank_stages(k)
    decide = {i: fleet.recommend("memcached", ranked, k, e) for i, e in ev.items()}
    assert decide[beside].knob == "none" and "other tasks took 0.90 cores" in decide[beside].reason
    assert decide[quiet].knob == "none" and "maintainer thread took 0.001 cores" in decide[quiet].reason
    assert decide[busy].knob == "amortized LRU"
    # ... whose text names the options to measure, stock's first, not the knob as the answer
    shown = fleet.text({"prometheus": "http://p", "match": "{}", "window": "10m", "fleets": {},
                        "instances": [{"name": busy, "kind": "memcached", "stages": k,
                                       "ranked": [asdict(r) for r in ranked],
                                       "evidence": asdict(ev[busy]), "advice": asdict(decide[busy])}]})
    assert "    knob: measure before choosing" in shown and "knob: amortized LRU" not in shown
    assert shown.index("stock-no_lru_maintainer") < shown.index("fork-budget")
    # an instance the exporter does not read from /proc (another host): unknown,
    # and the answer names what to deploy
    blind = fleet.recommend("memcached", ranked, k, ev.get(remote, fleet.Evidence(how_to_know=fleet.DEPLOY)))
    assert blind.knob == "unknown" and "stagevar exporter` on the memcached's own host" in blind.reason
    # the fleet's one knob must fit every instance: the neighbour declines it
    pooled = fleet.pooled_evidence(list(ev.values()))
    assert (pooled.maintainer_cores, pooled.outside_cores) == (pytest.approx(0.001), pytest.approx(0.9))
    assert fleet.pooled_evidence([ev[busy], fleet.Evidence()]).outside_cores is None
    # ... and an instance's neighbour declines it whatever the others' evidence
    assert fleet.pooled_evidence([ev[beside], fleet.Evidence()]).outside_cores == pytest.approx(0.9)


def test_counter_growth_takes_resets_and_needs_two_samples() -> None:
    assert fleet.growth_and_span([[0, "5"]]) is None
    # 5 -> 7, then a reset (a thread restarted) to 1, then 4: grew 2 + 1 + 3
    assert fleet.growth_and_span([[0, "5"], [2, "7"], [4, "1"], [6, "4"]]) == (6.0, 6.0)
    # the knob on: threads but no maintainer among them -> it took nothing
    prom = AnsweringPrometheus({fleet.THREAD_CPU: [({"instance": "a", "thread": "mc-worker"}, counter(0.3))]})
    ev = fleet.fleet_evidence(prom, "", 1060.0, 60.0)   # type: ignore[arg-type]
    assert ev["a"].maintainer_cores == 0.0 and ev["a"].outside_cores is None
