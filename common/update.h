/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/*
 * The per-sample updates of a moments block and a histogram, inline:
 * sv_moments_add and sv_hist_add are built on them, and sv_record runs
 * both in one function with no call (the hot path of every traced
 * request). Private to libstagevar.
 */
#ifndef STAGEVAR_UPDATE_H
#define STAGEVAR_UPDATE_H

#include "stagevar.h"

/* Welford's update on x - shift. The mean and M2 stay current after
 * every sample, as the public fields promise (callers read them live),
 * which takes one divide; it overlaps with the histogram's work.
 * Shifting by the first value keeps a low variance under a large common
 * offset (spans of 10^12 ns varying by a few ns) to full precision,
 * where plain Welford loses digits to the mean's rounding. min/max
 * compile to cmov. */
static inline void sv_update_moments(sv_moments *m, uint64_t x)
{
    uint64_t n = m->count + 1;
    double v = (double)x;
    double shift = n == 1 ? v : m->shift;
    double delta, shifted_mean;

    v -= shift;
    delta = v - m->shifted_mean;
    shifted_mean = m->shifted_mean + delta / (double)(int64_t)n;
    m->count = n;
    m->shift = shift;
    m->shifted_mean = shifted_mean;
    m->m2 += delta * (v - shifted_mean);
    m->mean = shift + shifted_mean;
    m->min = x < m->min ? x : m->min;
    m->max = x > m->max ? x : m->max;
}

/* Leading zero bits of x != 0: one instruction where the compiler has
 * the builtin (GCC, Clang), else a branchy binary search. */
static inline unsigned sv_update_clz64(uint64_t x)
{
#if defined(__GNUC__) && !defined(SV_PORTABLE_CLZ)
    return (unsigned)__builtin_clzll(x);
#else
    unsigned n = 0;

    if (x >> 32 == 0) { n += 32; x <<= 32; }
    if (x >> 48 == 0) { n += 16; x <<= 16; }
    if (x >> 56 == 0) { n += 8; x <<= 8; }
    if (x >> 60 == 0) { n += 4; x <<= 4; }
    if (x >> 62 == 0) { n += 2; x <<= 2; }
    if (x >> 63 == 0) { n += 1; }
    return n;
#endif
}

/* The bucket of x < SV_HIST_LIMIT with no branch: or-ing in bit
 * SUB_BITS makes values below 2^(SUB_BITS+1) land on shift 0, i.e. their
 * own bucket, and leaves the exponent of larger values unchanged. */
static inline size_t sv_update_bucket(uint64_t x)
{
    unsigned shift = (63u - SV_HIST_SUB_BITS)
        - sv_update_clz64(x | ((uint64_t)1 << SV_HIST_SUB_BITS));

    return ((size_t)shift << SV_HIST_SUB_BITS) + (size_t)(x >> shift);
}

static inline void sv_update_hist(sv_hist *h, uint64_t x)
{
    h->total++;
    if (x >= SV_HIST_LIMIT)
        h->overflow++;
    else
        h->bucket[sv_update_bucket(x)]++;
}

#endif /* STAGEVAR_UPDATE_H */
