/*
 * Running moments. Welford's update keeps the sum of squared deviations
 * (M2) instead of sum(x^2): with nanosecond timestamps in the 1e18 range
 * or spans with a large common offset, sum(x^2) - n*mean^2 cancels
 * catastrophically in double precision, Welford does not. Merging uses
 * Chan et al.'s pairwise formula, so per-thread moments combine exactly
 * as if one thread had seen every value.
 */
#include <math.h>

#include "stagevar.h"

void sv_moments_reset(sv_moments *m)
{
    m->count = 0;
    m->mean = 0.0;
    m->m2 = 0.0;
    m->min = UINT64_MAX;
    m->max = 0;
}

void sv_moments_add(sv_moments *m, uint64_t x)
{
    double delta = (double)x - m->mean;

    m->count++;
    m->mean += delta / (double)m->count;
    m->m2 += delta * ((double)x - m->mean);
    if (x < m->min)
        m->min = x;
    if (x > m->max)
        m->max = x;
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
    delta = from->mean - into->mean;
    into->mean += delta * n_b / n;
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
