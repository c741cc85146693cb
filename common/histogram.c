/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/*
 * Log-linear histogram. Below 2^(SUB_BITS+1) every value has its own
 * bucket; above, each power of two [2^e, 2^(e+1)) is split into
 * 2^SUB_BITS equal buckets of width 2^(e-SUB_BITS). The bucket index is
 * computed with one count-leading-zeros and two shifts, no loop, no
 * branch, no floating point (update.h): cheap enough for every request.
 */
#include <string.h>

#include "stagevar.h"
#include "update.h"

#define SUB_COUNT ((uint64_t)1 << SV_HIST_SUB_BITS)

void sv_hist_reset(sv_hist *h)
{
    memset(h, 0, sizeof(*h));
}

size_t sv_hist_bucket_of(uint64_t x)
{
    return sv_update_bucket(x);
}

uint64_t sv_hist_bucket_low(size_t bucket)
{
    unsigned shift;

    if (bucket < 2 * SUB_COUNT)
        return bucket;
    shift = (unsigned)(bucket >> SV_HIST_SUB_BITS) - 1;
    return (SUB_COUNT + (bucket & (SUB_COUNT - 1))) << shift;
}

uint64_t sv_hist_bucket_width(size_t bucket)
{
    if (bucket < 2 * SUB_COUNT)
        return 1;
    return (uint64_t)1 << ((bucket >> SV_HIST_SUB_BITS) - 1);
}

void sv_hist_add(sv_hist *h, uint64_t x)
{
    sv_update_hist(h, x);
}

void sv_hist_merge(sv_hist *into, const sv_hist *from)
{
    size_t i;

    into->total += from->total;
    into->overflow += from->overflow;
    for (i = 0; i < SV_HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
}

/* The midpoint halves the worst-case error of reporting a bucket. */
static uint64_t bucket_mid(size_t bucket)
{
    return sv_hist_bucket_low(bucket) + (sv_hist_bucket_width(bucket) - 1) / 2;
}

uint64_t sv_hist_quantile(const sv_hist *h, double q, uint64_t overflow_value)
{
    uint64_t rank, seen = 0;
    size_t i;

    if (h->total == 0)
        return 0;
    if (q < 0.0)
        q = 0.0;
    if (q > 1.0)
        q = 1.0;
    rank = (uint64_t)(q * (double)h->total);
    if ((double)rank < q * (double)h->total)
        rank++;                 /* ceil without libm */
    if (rank == 0)
        rank = 1;
    for (i = 0; i < SV_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank)
            return bucket_mid(i);
    }
    return overflow_value;
}
