# SPDX-License-Identifier: BSD-3-Clause
"""Stage parsing, ranking, the knob rules and the P-K prediction."""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict

import pytest

from stagevar_bench.queueing import pk_mean_response
from stagevar_bench.experiment import Design, Level
from stagevar_bench.profile import local_evidence
from stagevar_bench.profile import text as profile_text
from stagevar_bench.stages import (Evidence, advice_lines, parse_httpd_stages, parse_memcached_stages,
                                   pk_prediction, rank_stages, recommend)

MEMCACHED = """STAT stage_trace on
STAT stage_trace_kernel on
STAT kernel_to_read:count 100
STAT kernel_to_read:mean_ns 30000.0
STAT kernel_to_read:stddev_ns 10000.0
STAT kernel_to_read:cv2 0.111
STAT read_to_parse:count 100
STAT read_to_parse:mean_ns 5000.0
STAT read_to_parse:stddev_ns 20000.0
STAT read_to_parse:cv2 16.0
STAT parse_to_response:count 100
STAT parse_to_response:mean_ns 2000.0
STAT parse_to_response:stddev_ns 1000.0
STAT response_to_send:count 100
STAT response_to_send:mean_ns 3000.0
STAT response_to_send:stddev_ns 1000.0
STAT server_total:count 100
STAT server_total:mean_ns 40000.0
STAT server_total:stddev_ns 23000.0
STAT batch_size:count 50
STAT batch_size:mean 2.0
STAT batch_size:cv2 1.5
STAT batch_size:max 12
END
"""


def stages(**over: float) -> dict[str, dict[str, float]]:
    s = parse_memcached_stages(MEMCACHED)
    for key, value in over.items():
        stage, fld = key.split("__")
        s[stage][fld] = value
    return s


def test_parse_memcached_and_httpd() -> None:
    s = parse_memcached_stages(MEMCACHED)
    assert s["kernel_to_read"]["mean"] == 30000.0
    assert s["batch_size"]["max"] == 12
    assert "stage_trace" not in s
    h = parse_httpd_stages(json.dumps({"stage_trace": True, "requests": 3, "stages": {
        "kernel_to_read": {"count": 3, "mean_ns": 10.5, "stddev_ns": 2.0, "cv2": 0.04}}}))
    assert h == {"kernel_to_read": {"count": 3.0, "mean": 10.5, "stddev": 2.0, "cv2": 0.04}}


def test_rank_by_variance_components_only() -> None:
    ranked = rank_stages(parse_memcached_stages(MEMCACHED))
    assert [r.name for r in ranked] == ["read_to_parse", "kernel_to_read", "parse_to_response",
                                        "response_to_send"]
    assert sum(r.share for r in ranked) == pytest.approx(1.0)
    assert ranked[0].share == pytest.approx(4e8 / (4e8 + 1e8 + 1e6 + 1e6))


def test_rules() -> None:
    s = stages()
    assert recommend("memcached", rank_stages(s), s).knob == "client batching"
    steady = stages(batch_size__cv2=0.01)
    assert recommend("memcached", rank_stages(steady), steady).knob == "none"
    k = stages(kernel_to_read__stddev=50000.0)
    quiet = 0.0                         # no other task on the server's cores

    def lru(maint: float | None, outside: float | None):
        return recommend("memcached", rank_stages(k), k, Evidence(maint, outside, how_to_know="deploy X"))
    assert lru(0.2, quiet).knob == "amortized LRU"
    assert lru(0.001, quiet).knob == "none"
    # evidence missing, as from a fleet's Prometheus without it: unknown, never the
    # knob blind, and what would tell
    for maint, outside in ((None, None), (0.2, None), (None, quiet)):
        blind = lru(maint, outside)
        assert blind.knob == "unknown" and "not known" in blind.reason and "deploy X" in blind.reason
    # an outside task on the workers' cores: the knob would lose to it, whether
    # the maintainer is busy, idle or not measured
    for maint in (0.2, 0.0, None):
        busy = lru(maint, 0.9)
        assert busy.knob == "none" and "other tasks took 0.90 cores" in busy.reason
    assert lru(0.2, 0.02).knob == "amortized LRU"
    # every decision names the maintainer's measured CPU
    for outside in (quiet, 0.9):
        assert "LRU maintainer thread took 0.200 cores" in lru(0.2, outside).reason
    # httpd: grows with load -> pinning; flat -> nothing
    low = rank_stages(stages(kernel_to_read__stddev=50000.0, kernel_to_read__mean=10000.0))
    assert recommend("httpd", rank_stages(k), k, low_load=low).knob == "process pinning"
    assert recommend("httpd", rank_stages(k), k, low_load=rank_stages(k)).knob == "none"
    p = stages(parse_to_response__stddev=1e6)
    assert recommend("memcached", rank_stages(p), p).knob == "none"
    assert recommend("memcached", [], {}).knob == "none"


def test_pk_prediction_and_halving() -> None:
    ranked = rank_stages(parse_memcached_stages(MEMCACHED))
    pred = pk_prediction(ranked, rate_per_s=20000, servers=2, mean_service_ns=20000)
    assert pred is not None
    var = 4e8 + 1e8 + 1e6 + 1e6
    cs2 = var / 40000.0 ** 2
    assert pred.cs2 == pytest.approx(cs2)
    assert pred.utilisation == pytest.approx(10000 / 1e9 * 20000)
    assert pred.mean_latency_ns == pytest.approx(pk_mean_response(1e-5, 20000, cs2))
    half = (var - 2e8) / 40000.0 ** 2
    assert pred.halved_cs2 == pytest.approx(half)
    assert pred.gain == pytest.approx(1 - pk_mean_response(1e-5, 20000, half) / pred.mean_latency_ns)
    assert 0 < pred.gain < 1
    over = pk_prediction(ranked, rate_per_s=1e6, servers=1, mean_service_ns=20000)
    assert over is not None and math.isinf(over.mean_latency_ns)


def test_the_local_profile_gives_the_advisor_its_evidence() -> None:
    """profile.py's evidence from a run record: the mc-lrumaint thread's CPU
    over the run's wall time, the other tasks on the pinned server's CPUs and
    the workers' run-queue share; the same rule decides as for the fleet."""
    design = Design(name="p", server="memcached", levels=[Level("fork")], loads=[1000.0])
    k = stages(kernel_to_read__stddev=50000.0)
    run = {"loadgen": {"meta": {"wall_s": 4.0}}, "server_thread_cpu_s": {"mc-lrumaint": 0.4, "mc-worker": 3.0},
           "outside_cores": 0.01, "worker_sched": {"wait_share": 0.02}, "stages": k}
    ev = local_evidence(design, run)
    assert (ev.maintainer_cores, ev.outside_cores, ev.worker_wait_share) == (0.1, 0.01, 0.02)
    assert recommend("memcached", rank_stages(k), k, ev).knob == "amortized LRU"
    beside = local_evidence(design, run | {"outside_cores": 0.8})
    advice = recommend("memcached", rank_stages(k), k, beside)
    assert advice.knob == "none" and "other tasks took 0.80 cores" in advice.reason
    assert "run the neighbour at nice 19" in advice.reason
    # the knob already on: no maintainer thread, so not busy
    on = local_evidence(design, run | {"server_thread_cpu_s": {"mc-worker": 3.0}})
    assert on.maintainer_cores == 0.0
    assert recommend("memcached", rank_stages(k), k, on).knob == "none"
    # unpinned: the other tasks on its cores are not measured
    unpinned = {key: v for key, v in run.items() if key != "outside_cores"}
    blind = recommend("memcached", rank_stages(k), k, local_evidence(design, unpinned))
    assert blind.knob == "unknown" and "--server-cpus" in blind.reason


def test_a_busy_maintainer_names_the_options_to_measure_stock_first() -> None:
    """The stages show that the maintainer competes with the workers, not
    which remedy wins: the advice keeps its knob (tools/demo picks its
    comparison by it) and lists stock's own options before the fork's,
    and the text says to measure them instead of recommending the knob."""
    k = stages(kernel_to_read__stddev=50000.0)
    advice = recommend("memcached", rank_stages(k), k, Evidence(0.2, 0.0, spare_cpus="0"))
    assert advice.knob == "amortized LRU" and "competes with the workers" in advice.suggests
    assert advice.option == "-o lru_amortized_budget_us=10"     # the fixed budget, the fork's knob
    names = [o.name for o in advice.measure]
    assert names[0] == "stock" and names[1] == "stock-no_lru_maintainer"
    assert [o.needs_fork for o in advice.measure] == [False] * 4 + [True] * 2
    assert names[4:] == ["fork-hot0", "fork-budget"] and "hot_lru_pct=0" in advice.measure[4].how
    assert names[2] == "stock-lrumaint-idle" and "SCHED_IDLE" in advice.measure[2].how
    assert names[3] == "stock-helpers-spare" and "CPUs 0" in advice.measure[3].how
    text = "\n".join(advice_lines(asdict(advice), "", "recommendation"))
    assert text.startswith("recommendation: measure before choosing")
    assert text.index("no_lru_maintainer") < text.index("lru_amortized_budget_us=10")
    assert "stagevar advise" in text
    # without a known spare CPU the option says where one exists
    unpinned = recommend("memcached", rank_stages(k), k, Evidence(0.2, 0.0))
    assert "where the host has one" in unpinned.measure[3].how
    # the other rules still answer with their knob and no options
    s = stages()
    batching = recommend("memcached", rank_stages(s), s)
    assert batching.measure == () and advice_lines(asdict(batching), "", "recommendation")[0] == (
        "recommendation: client batching: loadgen --batch-interval-us N (e.g. 50)")


def test_the_profile_prints_the_options_it_would_measure() -> None:
    """profile.text() of a profile whose maintainer was busy: the options,
    no `recommendation: amortized LRU` line; the local evidence knows the
    CPUs outside a pinned server's."""
    design = Design(name="p", server="memcached", levels=[Level("fork", server_cpus="0")], loads=[1000.0],
                    client_cpus="0")
    k = stages(kernel_to_read__stddev=50000.0)
    run = {"loadgen": {"meta": {"wall_s": 1.0}}, "server_thread_cpu_s": {"mc-lrumaint": 0.05},
           "outside_cores": 0.0, "stages": k}
    ev = local_evidence(design, run)
    # CPU 0 is the server's and loadgen's: the helpers could go to any other
    assert ev.spare_cpus == (",".join(str(c) for c in sorted(os.sched_getaffinity(0) - {0})) or None)
    ranked = rank_stages(k)
    advice = recommend("memcached", ranked, k, ev)
    p = {"server": "memcached", "level": {"name": "fork"}, "rate": 1000.0, "arrival": "exp",
         "ranked": [asdict(r) for r in ranked], "stages": k, "maintainer_cores": 0.05,
         "advice": asdict(advice), "prediction": None}
    out = profile_text(p)
    assert "recommendation: measure before choosing" in out and "stock-no_lru_maintainer" in out
    assert "recommendation: amortized LRU" not in out
