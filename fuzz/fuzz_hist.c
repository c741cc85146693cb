/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: libstagevar's histogram, quantile, moments and merge
 * invariants, against exact answers computed here from the raw values.
 *
 *  - every value lies in the bucket sv_hist_bucket_of() names;
 *  - each quantile is within SV_HIST_REL_ERROR of the exact nearest-rank
 *    quantile (or the overflow value, when that rank overflowed), and
 *    quantiles never decrease with q;
 *  - a summary's figures are ordered min <= p50 <= ... <= p999 <= max;
 *  - recording the values into two recorders and merging them gives the
 *    histogram of recording them into one, and the same moments (counts,
 *    min and max exactly, mean and M2 to rounding).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stagevar.h"

#define MAX_VALUES 4096

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_hist: %s\n", what);
        abort();
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void check_bucket(uint64_t x)
{
    size_t b;

    if (x >= SV_HIST_LIMIT)
        return;
    b = sv_hist_bucket_of(x);
    check(b < SV_HIST_BUCKETS, "bucket index out of range");
    check(sv_hist_bucket_low(b) <= x, "value below its bucket");
    check(x - sv_hist_bucket_low(b) < sv_hist_bucket_width(b), "value above its bucket");
    check(x == 0 || sv_hist_bucket_of(x - 1) <= b, "bucket index not monotonic");
}

/* The exact nearest-rank quantile of sorted[0..n-1]: the ceil(q*n)-th. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
    double want = q * (double)n;
    size_t rank = (size_t)want;

    if ((double)rank < want)
        rank++;
    return sorted[rank == 0 ? 0 : rank - 1];
}

static void check_quantiles(const sv_hist *h, const uint64_t *sorted, size_t n)
{
    static const double qs[] = { 0, 0.001, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1 };
    const uint64_t overflow_value = UINT64_MAX;
    uint64_t prev = 0;
    size_t i;

    for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        uint64_t got = sv_hist_quantile(h, qs[i], overflow_value);
        uint64_t want = exact_quantile(sorted, n, qs[i]);

        if (want >= SV_HIST_LIMIT)
            check(got == overflow_value, "overflowed quantile not reported as such");
        else
            check(fabs((double)got - (double)want) <= (double)want * SV_HIST_REL_ERROR,
                  "quantile outside the histogram's error bound");
        check(got >= prev, "quantiles decrease with q");
        prev = got;
    }
}

static void check_summary(const sv_stage *s)
{
    sv_summary m;

    sv_stage_summarize(s, &m);
    check(m.min_ns <= m.p50_ns && m.p50_ns <= m.p90_ns && m.p90_ns <= m.p99_ns
          && m.p99_ns <= m.p999_ns && m.p999_ns <= m.max_ns, "summary out of order");
    check(m.stddev_ns >= 0 && !isnan(m.mean_ns) && !isnan(m.cv2), "moments not numbers");
}

static void check_merge(const sv_recorder *whole, const sv_recorder *a, const sv_recorder *b)
{
    sv_recorder *m = sv_recorder_new(1);
    const sv_moments *x, *y;

    check(m != NULL, "out of memory");
    check(sv_recorder_merge(m, a) == 0 && sv_recorder_merge(m, b) == 0, "merge refused");
    check(memcmp(&m->stage[0].hist, &whole->stage[0].hist, sizeof(sv_hist)) == 0,
          "merged histogram differs");
    x = &m->stage[0].moments;
    y = &whole->stage[0].moments;
    check(x->count == y->count && (x->count == 0 || (x->min == y->min && x->max == y->max)),
          "merged count, min or max differs");
    check(fabs(x->mean - y->mean) <= 1e-9 * fabs(y->mean) + 1e-9, "merged mean differs");
    check(fabs(x->m2 - y->m2) <= 1e-6 * fabs(y->m2) + 1e-6 * y->mean * y->mean + 1e-6,
          "merged M2 differs");
    sv_recorder_free(m);
}

/* Each value is 8 bytes, shifted right by its own low 6 bits, so that
 * small, medium and overflowing values are all common; the top bit of
 * the first byte chooses which half of the split it goes to. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t sorted[MAX_VALUES];
    sv_recorder *whole = sv_recorder_new(1), *a = sv_recorder_new(1), *b = sv_recorder_new(1);
    size_t n = 0, i;

    check(whole && a && b, "out of memory");
    for (i = 0; i + 8 <= size && n < MAX_VALUES; i += 8) {
        uint64_t x;

        memcpy(&x, data + i, sizeof(x));
        x >>= x & 63;
        check_bucket(x);
        sv_record(whole, 0, (int64_t)(x >> 1));
        sv_record(data[i] & 0x80 ? a : b, 0, (int64_t)(x >> 1));
        sorted[n++] = x >> 1;
    }
    if (n > 0) {
        qsort(sorted, n, sizeof(sorted[0]), cmp_u64);
        check_quantiles(&whole->stage[0].hist, sorted, n);
        check_summary(&whole->stage[0]);
    }
    check_merge(whole, a, b);
    sv_recorder_free(whole);
    sv_recorder_free(a);
    sv_recorder_free(b);
    return 0;
}
