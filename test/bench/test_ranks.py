# SPDX-License-Identifier: BSD-3-Clause
"""Exact rank inference (ranks.py) against known answers: the null
distribution of U and of the signed-rank sum, published critical values,
the Hodges-Lehmann shift, unpaired and paired, and coverage of their
exact CIs on simulated runs."""
from __future__ import annotations

import math
from itertools import combinations, product

import numpy as np
import pytest
from scipy import stats as sps

from stagevar_bench.ranks import (ci_rank, compare, compare_paired, exact_p_value, signed_rank_distribution,
                                  signed_rank_p_value, tail_rank, u_distribution, u_statistic)
from stagevar_bench.stats import paired_ratio_ci


@pytest.mark.parametrize("m,n", [(1, 1), (2, 3), (4, 4), (5, 5), (3, 7)])
def test_u_distribution_counts_every_ordering(m: int, n: int) -> None:
    counts = u_distribution(m, n)
    assert sum(counts) == math.comb(m + n, m)
    # By enumeration: which of the m + n ranks the first sample takes.
    brute = [0] * (m * n + 1)
    for ranks in combinations(range(m + n), m):
        u = sum(r - i for i, r in enumerate(ranks))   # y's below each x
        brute[u] += 1
    assert list(counts) == brute


def test_u_distribution_is_symmetric() -> None:
    counts = u_distribution(6, 8)
    assert counts == counts[::-1]


@pytest.mark.parametrize("m,n,k", [(5, 5, 3), (8, 8, 14), (10, 10, 24), (4, 4, 1)])
def test_ci_rank_matches_the_tables(m: int, n: int, k: int) -> None:
    """Two-sided 95 %: the HL interval runs from the k-th smallest to the
    k-th largest pairwise difference (critical values of U, e.g. Hollander
    & Wolfe: 2 for n = m = 5, 13 for 8, 23 for 10; k = critical + 1)."""
    assert ci_rank(m, n, 0.95) == k


def test_too_few_runs_give_no_interval() -> None:
    assert ci_rank(3, 3, 0.95) == 0
    result = compare([1, 2, 3], [2, 3, 4])
    assert math.isnan(result.ci[0]) and math.isnan(result.ci[1])


def test_p_value_agrees_with_scipy_exact() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = rng.lognormal(0, 1, 6), rng.lognormal(0.5, 1, 7)
        ours = exact_p_value(u_statistic(np.log(a), np.log(b)), 6, 7)
        theirs = sps.mannwhitneyu(b, a, alternative="two-sided", method="exact").pvalue
        assert ours == pytest.approx(theirs, rel=1e-9)


def test_hodges_lehmann_of_a_pure_factor_is_that_factor() -> None:
    a = [100.0, 130.0, 90.0, 210.0, 150.0, 120.0]
    b = [x * 0.7 for x in a]
    result = compare(a, b)
    assert result.ratio == pytest.approx(0.7)
    assert result.ci[0] < 0.7 < result.ci[1] or result.ci[0] == pytest.approx(0.7)
    assert result.p_value > 0.05          # overlapping spreads: not resolved


def test_a_clear_difference_is_resolved() -> None:
    a = [100.0, 102.0, 98.0, 101.0, 99.0, 103.0, 97.0, 100.5]
    b = [x * 2 for x in a]
    result = compare(a, b)
    assert result.ci[0] > 1.5 and result.p_value < 0.001


def test_coverage_of_the_exact_ci() -> None:
    """Lognormal runs with a true ratio of 0.8: the 95 % CI (which
    guarantees at least its stated coverage) covers 0.8 at least ~95 %
    of the time."""
    rng = np.random.default_rng(11)
    trials, covered = 400, 0
    for _ in range(trials):
        a = rng.lognormal(5, 0.6, 7)
        b = rng.lognormal(5 + math.log(0.8), 0.6, 7)
        lo, hi = compare(a, b).ci
        covered += lo <= 0.8 <= hi
    assert covered / trials >= 0.92


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        compare([], [1.0])
    with pytest.raises(ValueError):
        compare([0.0, 1.0], [1.0, 2.0])


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_signed_rank_distribution_counts_every_sign_assignment(n: int) -> None:
    brute = [0] * (n * (n + 1) // 2 + 1)
    for signs in product((0, 1), repeat=n):
        brute[sum(rank for rank, plus in zip(range(1, n + 1), signs) if plus)] += 1
    assert list(signed_rank_distribution(n)) == brute


@pytest.mark.parametrize("n,k", [(5, 0), (6, 1), (8, 4), (10, 9), (20, 53)])
def test_signed_rank_ci_rank_matches_the_tables(n: int, k: int) -> None:
    """Two-sided 95 %: critical values of the signed-rank sum (0 for
    n = 6, 3 for 8, 8 for 10, 52 for 20; k = critical + 1), and no
    interval at all below 6 pairs."""
    assert tail_rank(signed_rank_distribution(n), 0.95) == k


def test_signed_rank_p_value_agrees_with_scipy_exact() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        diffs = rng.normal(0.3, 1, 9)
        theirs = sps.wilcoxon(diffs, alternative="two-sided", method="exact").pvalue
        assert signed_rank_p_value(diffs) == pytest.approx(theirs, rel=1e-9)


def test_paired_hodges_lehmann_of_a_pure_factor_is_that_factor() -> None:
    a = [100.0, 130.0, 90.0, 210.0, 150.0, 120.0, 95.0]
    result = compare_paired(a, [x * 1.02 for x in a])
    assert result.ratio == pytest.approx(1.02)
    assert result.ci[0] == pytest.approx(1.02) and result.ci[1] == pytest.approx(1.02)


def test_one_wild_pair_moves_the_paired_estimate_less_than_a_t_interval() -> None:
    """Pairs a few per cent apart and one whose second run a burst slowed
    by 40%: the t interval's top follows the burst, the signed-rank one
    stays near the pairs."""
    rng = np.random.default_rng(3)
    a = rng.lognormal(3, 0.05, 30)
    b = a * rng.lognormal(0, 0.03, 30)
    b[7] *= 1.4
    ranked = compare_paired(a, b)
    t = paired_ratio_ci(b, a)
    assert ranked.ci[1] < t.high
    assert ranked.ci[0] <= ranked.ratio <= ranked.ci[1] < 1.03


def test_coverage_of_the_exact_paired_ci() -> None:
    rng = np.random.default_rng(13)
    trials, covered = 400, 0
    for _ in range(trials):
        a = rng.lognormal(3, 0.3, 12)
        b = a * 1.05 * rng.lognormal(0, 0.05, 12)
        lo, hi = compare_paired(a, b).ci
        covered += lo <= 1.05 <= hi
    assert covered / trials >= 0.92


def test_paired_bad_input() -> None:
    with pytest.raises(ValueError):
        compare_paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        compare_paired([1.0, -2.0], [1.0, 2.0])
