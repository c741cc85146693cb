# SPDX-License-Identifier: BSD-3-Clause
"""Exact rank-based comparison of two small samples of runs, unpaired
or paired.

With five or ten runs per side the bootstrap's coverage is poor, and one
wild run can make a ratio look significant. The Mann-Whitney U test and
the Hodges-Lehmann estimate of the shift between two samples need no
distribution assumptions, and for small samples their p-value and
confidence interval can be computed exactly from the null distribution
of U (every ordering of the pooled runs equally likely).

Runs made in pairs, back to back, compare by their pairs instead: the
Hodges-Lehmann estimate of the median log ratio (the median of the Walsh
averages) with the exact CI of the Wilcoxon signed-rank test, which one
wild pair moves by one rank, not by its size as it moves a t interval.

Latencies differ by factors, not amounts, so the comparison is made on
the logarithms: the shift of log latency is the log of a ratio, and the
estimate and its interval are reported as ratios (b over a).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from stagevar_bench.stats import DEFAULT_CONF


@lru_cache(maxsize=None)
def u_distribution(m: int, n: int) -> tuple[int, ...]:
    """The number of orderings of m + n distinct values giving each U from
    0 to m*n (U: the pairs (x, y), x from the first sample, with y < x).
    f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u): the largest value is
    either one of the m (it beats all n) or one of the n."""
    if m == 0 or n == 0:
        return (1,)
    with_x = u_distribution(m - 1, n)          # largest is an x: U shifts by n
    with_y = u_distribution(m, n - 1)
    counts = [0] * (m * n + 1)
    for u, c in enumerate(with_x):
        counts[u + n] += c
    for u, c in enumerate(with_y):
        counts[u] += c
    return tuple(counts)


def u_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """U of b against a: pairs with b > a, ties counting one half."""
    return float(sum((y > x) + 0.5 * (y == x) for x in a for y in b))


def exact_p_value(u: float, m: int, n: int) -> float:
    """Two-sided p of U under the null, from its exact distribution
    (symmetric about m*n/2). Ties make U a half-integer; the
    distribution used is the tie-free one, which is conservative."""
    counts = u_distribution(m, n)
    total = sum(counts)
    centre = m * n / 2
    extreme = abs(u - centre)
    tail = sum(c for k, c in enumerate(counts) if abs(k - centre) >= extreme - 1e-9)
    return min(1.0, tail / total)


def tail_rank(counts: Sequence[int], conf: float) -> int:
    """The largest k such that P(statistic < k) <= (1 - conf) / 2, from
    the statistic's null counts: an interval from the k-th smallest to
    the k-th largest of the ordered estimates has coverage >= conf
    (Lehmann 1963). 0 when the samples are too small for conf."""
    total = sum(counts)
    alpha2 = (1 - conf) / 2
    below, k = 0, 0
    while k < len(counts) and (below + counts[k]) / total <= alpha2:
        below += counts[k]
        k += 1
    return k


def ci_rank(m: int, n: int, conf: float) -> int:
    """tail_rank of U: the CI of the shift runs from the k-th smallest
    pairwise difference to the k-th largest."""
    return tail_rank(u_distribution(m, n), conf)


@lru_cache(maxsize=None)
def signed_rank_distribution(n: int) -> tuple[int, ...]:
    """The number of sign assignments to the ranks 1..n giving each
    signed-rank sum W+ (the ranks with a + sign) from 0 to n(n+1)/2."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for w, c in enumerate(counts):
            grown[w + rank] += c
        counts = grown
    return tuple(counts)


def signed_rank_p_value(diffs: np.ndarray) -> float:
    """Two-sided exact p of the signed-rank sum of `diffs` (no zeros;
    ties in |diff| get the tie-free distribution, conservatively)."""
    n = diffs.size
    order = np.argsort(np.abs(diffs), kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(1, n + 1)
    w = float(ranks[diffs > 0].sum())
    counts = signed_rank_distribution(n)
    extreme = abs(w - n * (n + 1) / 4)
    tail = sum(c for k, c in enumerate(counts) if abs(k - n * (n + 1) / 4) >= extreme - 1e-9)
    return min(1.0, tail / sum(counts))


@dataclass(frozen=True)
class RankComparison:
    """b against a, on the log scale, reported as ratios b/a (paired:
    n_a == n_b, the pairs)."""
    n_a: int
    n_b: int
    ratio: float                 # Hodges-Lehmann: exp(median of log b - log a)
    ci: tuple[float, float]      # its exact CI (nan when n is too small)
    conf: float                  # the coverage the CI guarantees (>= asked)
    p_value: float               # exact two-sided Mann-Whitney p


def compare(a: Sequence[float], b: Sequence[float], conf: float = DEFAULT_CONF) -> RankComparison:
    """Hodges-Lehmann ratio of b to a with its exact CI, and the exact
    Mann-Whitney p-value. Values must be positive (latencies)."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if va.size == 0 or vb.size == 0 or not ((va > 0).all() and (vb > 0).all()):
        raise ValueError("compare needs two non-empty samples of positive values")
    la, lb = np.log(va), np.log(vb)
    m, n = la.size, lb.size
    diffs = np.sort((lb[None, :] - la[:, None]).ravel())
    estimate = math.exp(float(np.median(diffs)))
    k = ci_rank(m, n, conf)
    if k == 0:
        ci = (math.nan, math.nan)
        achieved = math.nan
    else:
        ci = (math.exp(diffs[k - 1]), math.exp(diffs[m * n - k]))
        counts = u_distribution(m, n)
        achieved = 1 - 2 * sum(counts[:k]) / sum(counts)
    p = exact_p_value(u_statistic(la, lb), m, n)
    return RankComparison(m, n, estimate, ci, achieved, p)


def compare_paired(a: Sequence[float], b: Sequence[float], conf: float = DEFAULT_CONF) -> RankComparison:
    """Hodges-Lehmann ratio of b to a over pairs (a[i], b[i]): exp of the
    median Walsh average of the log ratios, with the exact signed-rank CI
    and p-value. Values must be positive."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if va.size == 0 or va.size != vb.size or not ((va > 0).all() and (vb > 0).all()):
        raise ValueError("compare_paired needs two samples of positive values, as many in each")
    diffs = np.log(vb) - np.log(va)
    n = diffs.size
    i, j = np.triu_indices(n)
    walsh = np.sort((diffs[i] + diffs[j]) / 2)
    estimate = math.exp(float(np.median(walsh)))
    counts = signed_rank_distribution(n)
    k = tail_rank(counts, conf)
    if k == 0:
        ci = (math.nan, math.nan)
        achieved = math.nan
    else:
        ci = (math.exp(walsh[k - 1]), math.exp(walsh[walsh.size - k]))
        achieved = 1 - 2 * sum(counts[:k]) / sum(counts)
    nonzero = diffs[diffs != 0]
    p = signed_rank_p_value(nonzero) if nonzero.size else 1.0
    return RankComparison(n, n, estimate, ci, achieved, p)
