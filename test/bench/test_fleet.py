# SPDX-License-Identifier: BSD-3-Clause
"""The fleet profile's statistics: variance from the exposition's buckets
against the exact variance of the values, within the bound that
docs/monitoring.md states; and its input checks."""
from __future__ import annotations

import math
import random

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
