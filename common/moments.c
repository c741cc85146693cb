/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/*
 * Running moments. Welford's update keeps the sum of squared deviations
 * (M2) instead of sum(x^2): with nanosecond timestamps in the 1e18 range
 * or spans with a large common offset, sum(x^2) - n*mean^2 cancels
 * catastrophically in double precision, Welford does not; and it runs on
 * the values minus the first one, so the mean's rounding does not eat a
 * low variance either (update.h). Merging uses
 * Chan et al.'s pairwise formula, so per-thread moments combine exactly
 * as if one thread had seen every value.
 */
#include <math.h>

#include "stagevar.h"
#include "update.h"

void sv_moments_reset(sv_moments *m)
{
    m->count = 0;
    m->mean = 0.0;
    m->m2 = 0.0;
    m->min = UINT64_MAX;
    m->max = 0;
    m->shift = 0.0;
    m->shifted_mean = 0.0;
}

void sv_moments_add(sv_moments *m, uint64_t x)
{
    sv_update_moments(m, x);
}

void sv_moments_merge(sv_moments *into, const sv_moments *from)
{
    double n_a = (double)into->count, n_b = (double)from->count, n, delta;

    if (from->count == 0)
        return;
    if (into->count == 0) {
        *into = *from;
        return;
    }
    n = n_a + n_b;
    /* Both means relative to into's shift: the difference of the shifts
     * is exact, and so is the merged mean to the spread's precision. */
    delta = (from->shift - into->shift) + from->shifted_mean - into->shifted_mean;
    into->shifted_mean += delta * n_b / n;
    into->mean = into->shift + into->shifted_mean;
    into->m2 += from->m2 + delta * delta * n_a * n_b / n;
    into->count += from->count;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

double sv_moments_variance(const sv_moments *m)
{
    return m->count < 2 ? 0.0 : m->m2 / (double)m->count;
}

double sv_moments_stddev(const sv_moments *m)
{
    return sqrt(sv_moments_variance(m));
}

double sv_moments_cv2(const sv_moments *m)
{
    return m->mean == 0.0 ? 0.0 : sv_moments_variance(m) / (m->mean * m->mean);
}
