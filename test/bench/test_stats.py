# SPDX-License-Identifier: BSD-3-Clause
"""The statistics of stagevar_bench.stats against known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from stagevar_bench.stats import (Histogram, bootstrap_ci, bootstrap_ratio_ci, paired_ratio_ci,
                                  quantile_ci_ranks, quantile_regression, sample_quantile_ci)


@pytest.mark.parametrize("n", [20, 100, 1000, 10000])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.99, 0.999])
def test_ci_ranks_exact_coverage(n: int, p: float) -> None:
    """The exact binomial coverage of the ranks is at least the stated rate
    (or the interval is open on the side that cannot be covered), and not
    wastefully above it when n is large enough."""
    lo, hi = quantile_ci_ranks(n, p, 0.95)
    b = sps.binom(n, p)
    coverage = b.cdf(hi - 1) - b.cdf(lo - 1)
    assert coverage >= 0.95 - 1e-12
    assert 0 <= lo < hi <= n + 1
    if 1 <= lo and hi <= n and n * p * (1 - p) > 50:
        assert coverage < 0.97       # tight: each tail close to 2.5%


def test_ci_ranks_known_values() -> None:
    # n = 100, median: the classic ranks 40 and 61 (coverage 0.9648).
    assert quantile_ci_ranks(100, 0.5, 0.95) == (40, 61)
    # Too few samples for the 99.9th percentile: open above.
    assert quantile_ci_ranks(100, 0.999, 0.95)[1] == 101


@pytest.mark.parametrize("n,p", [(200, 0.5), (1000, 0.99), (5000, 0.999)])
def test_sample_ci_covers_true_quantile_at_stated_rate(n: int, p: float) -> None:
    rng = np.random.default_rng(7)
    true_q = -math.log(1 - p)               # exponential(1)
    trials = 1500
    hits = 0
    for _ in range(trials):
        _, lo, hi = sample_quantile_ci(rng.exponential(1.0, n), p, 0.95)
        hits += lo <= true_q <= hi
    rate = hits / trials
    # Binomial SE of the observed rate is ~0.006: 0.93 is > 3 SE below 95%.
    assert 0.93 <= rate <= 0.995, rate


@pytest.mark.parametrize("p", [0.5, 0.99])
def test_histogram_ci_covers_true_quantile(p: float) -> None:
    """The same from log-linear histograms (the form loadgen reports)."""
    rng = np.random.default_rng(11)
    dist = sps.lognorm(s=1.0, scale=50_000)
    true_q = dist.ppf(p)
    trials, hits = 400, 0
    for _ in range(trials):
        h = Histogram.from_samples(dist.rvs(size=2000, random_state=rng))
        _, lo, hi = h.quantile_ci(p, 0.95)
        hits += lo <= true_q <= hi
    assert hits / trials >= 0.93


def test_histogram_quantiles_and_json() -> None:
    rng = np.random.default_rng(3)
    v = rng.exponential(100_000, 50_000)
    h = Histogram.from_samples(v)
    assert h.n == v.size
    for p in (0.5, 0.9, 0.99, 0.999):
        assert h.quantile(p) == pytest.approx(np.quantile(v, p), rel=0.02)
    assert h.mean() == pytest.approx(v.mean(), rel=0.01)
    assert h.cdf(float(np.quantile(v, 0.9))) == pytest.approx(0.9, abs=0.01)
    obj = {"min": 1000, "max": 9000, "overflow": 1,
           "histogram": [[4000, 1000, 2], [1000, 1000, 1]]}
    j = Histogram.from_json(obj)
    assert j.n == 4
    assert list(j.lows) == [1000, 4000]
    assert j.value_at_rank(4) == 9000          # the overflow value is the max
    assert 1000 <= j.value_at_rank(1) < 2000
    sample = h.representative_sample(1000)
    assert sample.size == 1000 and np.all(np.diff(sample) >= 0)
    assert np.quantile(sample, 0.99) == pytest.approx(np.quantile(v, 0.99), rel=0.03)


def test_bootstrap_ratio_covers_true_ratio() -> None:
    rng = np.random.default_rng(5)
    trials, hits = 200, 0
    for t in range(trials):
        a = rng.lognormal(math.log(150), 0.3, 30)
        b = rng.lognormal(math.log(100), 0.3, 30)
        est = bootstrap_ratio_ci(a, b, reps=2000, seed=t)
        hits += est.low <= 1.5 <= est.high
        assert est.low <= est.value <= est.high
    assert hits / trials >= 0.88


def test_bootstrap_median_ci() -> None:
    est = bootstrap_ci([1.0, 2.0, 3.0, 4.0, 100.0], reps=2000)
    assert est.value == 3.0 and est.n == 5
    assert 1.0 <= est.low <= 3.0 <= est.high <= 100.0


def planted_rows(rng: np.random.Generator, n_per_cell: int) -> tuple[dict[str, list], dict]:
    """Latency = 100 + 20 A + 10 B + 15 A B + (1 + A) * Exp(10), C has no
    effect: the true conditional quantiles are known exactly."""
    rows: dict[str, list] = {"lat": [], "knob": [], "load": [], "arrival": []}
    for a in (0, 1):
        for b in (0, 1):
            for c in ("det", "exp"):
                noise = rng.exponential(10.0, n_per_cell) * (1 + a)
                rows["lat"] += list(100 + 20 * a + 10 * b + 15 * a * b + noise)
                rows["knob"] += ["on" if a else "off"] * n_per_cell
                rows["load"] += ["high" if b else "low"] * n_per_cell
                rows["arrival"] += [c] * n_per_cell
    return rows, {}


@pytest.mark.parametrize("q", [0.5, 0.95])
def test_quantile_regression_recovers_planted_effects(q: float) -> None:
    rng = np.random.default_rng(2)
    rows, _ = planted_rows(rng, 1500)
    (res,) = quantile_regression(rows, "lat", ["knob", "load", "arrival"], quantiles=[q],
                                 references={"knob": "off", "load": "low", "arrival": "det"})
    e = -math.log(1 - q) * 10.0               # Exp(10) quantile
    # True quantiles per cell: 100 + 20A + 10B + 15AB + (1 + A) e.
    assert res.term("Intercept").effect == pytest.approx(100 + e, abs=0.06 * e + 1)
    assert res.term("knob[on]").effect == pytest.approx(20 + e, abs=0.1 * e + 2)
    assert res.term("load[high]").effect == pytest.approx(10, abs=0.1 * e + 2)
    assert res.term("knob[on]:load[high]").effect == pytest.approx(15, abs=0.15 * e + 3)
    assert res.term("knob[on]").p_value < 1e-6
    assert res.term("knob[on]:load[high]").p_value < 1e-3
    assert abs(res.term("arrival[exp]").effect) < 0.1 * e + 2
    assert res.term("arrival[exp]").p_value > 0.001
    assert 0 < res.pseudo_r2 < 1
    assert res.formula == "lat ~ knob * load * arrival"


def test_quantile_regression_drops_constant_factors() -> None:
    rows = {"lat": [1.0, 2.0, 3.0, 4.0], "knob": ["a", "a", "b", "b"], "load": ["x"] * 4}
    (res,) = quantile_regression(rows, "lat", ["knob", "load"], quantiles=[0.5])
    assert [t.name for t in res.terms] == ["Intercept", "knob[b]"]


def test_paired_ratio_ci_cancels_a_drift_common_to_both_sides_of_a_pair() -> None:
    base = [10.0, 25.0, 4.0, 70.0]          # the machine drifts between pairs
    est = paired_ratio_ci([1.02 * b for b in base], base)
    assert est.n == 4
    assert est.value == pytest.approx(1.02)
    assert est.low == pytest.approx(1.02) and est.high == pytest.approx(1.02)


def test_paired_ratio_ci_is_a_t_interval_on_the_log_ratios() -> None:
    ratios = [math.exp(0.1), math.exp(-0.1)] * 2
    est = paired_ratio_ci(ratios, [1.0] * 4)
    half = 3.182446 * 0.1154701 / 2           # t(0.975, 3) x sd / sqrt(4)
    assert est.value == pytest.approx(1.0)
    assert est.low == pytest.approx(math.exp(-half), rel=1e-5)
    assert est.high == pytest.approx(math.exp(half), rel=1e-5)


def test_paired_ratio_ci_refuses_unpaired_lists() -> None:
    with pytest.raises(ValueError, match="3 numerators for 2 denominators"):
        paired_ratio_ci([1.0, 2.0, 3.0], [1.0, 2.0])
