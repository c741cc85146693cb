# SPDX-License-Identifier: BSD-3-Clause
"""Queue simulations against Pollaczek-Khinchine and Erlang C."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stagevar_bench.queueing import (ArrivalProcess, IdealModel, Unstable, bounded_pareto,
                                     erlang_c, lindley, md1_mean_wait, mmc_mean_wait,
                                     mmc_wait_quantile, pk_mean_response, pk_mean_wait,
                                     simulate_multiqueue, simulate_shared)

N = 400_000


def poisson(rate: float, n: int, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(1 / rate, n))


def test_closed_forms_known_values() -> None:
    assert erlang_c(1, 0.5) == pytest.approx(0.5)            # M/M/1: P(wait) = rho
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # M/M/1 from P-K: W = rho / (mu - lambda)
    assert pk_mean_wait(0.8, 1.0, 1.0) == pytest.approx(0.8 / 0.2)
    assert md1_mean_wait(0.5, 1.0) == pytest.approx(0.5)
    assert pk_mean_response(0.5, 1.0, 0.0) == pytest.approx(1.5)
    assert mmc_mean_wait(0.8, 1.0, 1) == pytest.approx(4.0)
    with pytest.raises(Unstable):
        pk_mean_wait(1.0, 1.0, 1.0)


@pytest.mark.parametrize("cs2,rho", [(0.0, 0.7), (1.0, 0.6), (4.0, 0.5)])
def test_mg1_simulation_matches_pk(cs2: float, rho: float) -> None:
    rng = np.random.default_rng(1)
    if cs2 == 0:
        s = np.ones(N)
    else:                                   # gamma with the wanted C²
        s = rng.gamma(1 / cs2, cs2, N)
    arrivals = poisson(rho, N, 2)
    w = lindley(arrivals, s)[N // 10:]
    assert w.mean() == pytest.approx(pk_mean_wait(rho, 1.0, cs2), rel=0.08)


def test_mmc_simulation_matches_erlang_c() -> None:
    c, mu, lam = 3, 1.0, 2.4
    s = np.random.default_rng(4).exponential(1 / mu, N)
    w = simulate_shared(poisson(lam, N, 3), s, c)[N // 10:]
    assert (w > 0).mean() == pytest.approx(erlang_c(c, lam / mu), abs=0.02)
    assert w.mean() == pytest.approx(mmc_mean_wait(lam, mu, c), rel=0.08)
    for p in (0.9, 0.99):
        assert np.quantile(w, p) == pytest.approx(mmc_wait_quantile(lam, mu, c, p), rel=0.1)


def test_multiqueue_is_c_independent_queues() -> None:
    """Round-robin split of Poisson(lambda) over 2 queues gives each queue
    Erlang-2 arrivals: less waiting than M/D/1 at the same load per queue.
    With deterministic service the shared 2-server queue serves requests
    alternately too, so the two agree exactly; with exponential service
    the shared queue waits less."""
    lam = 1.6
    a = poisson(lam, N, 5)
    d = np.ones(N)
    multi = simulate_multiqueue(a, d, np.arange(N) % 2)[N // 10:]
    assert multi.mean() < md1_mean_wait(lam / 2, 1.0)
    np.testing.assert_allclose(simulate_shared(a, d, 2)[N // 10:], multi)
    e = np.random.default_rng(6).exponential(1.0, N)
    assert (simulate_shared(a, e, 2)[N // 10:].mean()
            < 0.8 * simulate_multiqueue(a, e, np.arange(N) % 2)[N // 10:].mean())


def test_ideal_model_deterministic_is_zero_wait() -> None:
    model = IdealModel(service_ns=10_000, servers=2, shared=False, floor_ns=30_000)
    q = model.quantiles(ArrivalProcess("det", rate=1 / 20_000), [0.5, 0.99], n=10_000)
    assert q[0.5] == pytest.approx(30_000) and q[0.99] == pytest.approx(30_000)
    busy = model.quantiles(ArrivalProcess("exp", rate=1 / 12_000), [0.99], n=100_000)
    assert busy[0.99] > 30_000


def test_bounded_pareto_range_and_mean() -> None:
    rng = np.random.default_rng(9)
    x = bounded_pareto(1.5, 1.0, 100.0, 200_000, rng)
    assert x.min() >= 1.0 and x.max() <= 100.0
    # E[X] for bounded Pareto(alpha, L, H)
    a, lo, hi = 1.5, 1.0, 100.0
    mean = (lo ** a) / (1 - (lo / hi) ** a) * a / (a - 1) * (lo ** (1 - a) - hi ** (1 - a))
    assert x.mean() == pytest.approx(mean, rel=0.02)
    assert math.isfinite(x.var())
