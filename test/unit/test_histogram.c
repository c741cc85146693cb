/* SPDX-License-Identifier: BSD-3-Clause */
/* Log-linear histogram: layout, bounds and quantile accuracy. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "stagevar.h"

static sv_hist *hist_new(void)
{
    sv_hist *h = malloc(sizeof(*h));

    sv_hist_reset(h);
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Nearest rank: the ceil(q*n)-th smallest, as sv_hist_quantile defines it. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n);

    return sorted[rank == 0 ? 0 : rank - 1];
}

static double uniform01(void)
{
    return (rand() + 1.0) / ((double)RAND_MAX + 2.0);
}

static void check_quantiles(uint64_t (*draw)(void), size_t n)
{
    static const double qs[] = { 0.0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0 };
    uint64_t *x = malloc(n * sizeof(*x));
    sv_hist *h = hist_new();
    size_t i;

    for (i = 0; i < n; i++) {
        x[i] = draw();
        sv_hist_add(h, x[i]);
    }
    qsort(x, n, sizeof(*x), cmp_u64);
    for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        double exact = (double)exact_quantile(x, n, qs[i]);
        double got = (double)sv_hist_quantile(h, qs[i], x[n - 1]);

        cr_assert(fabs(got - exact) <= SV_HIST_REL_ERROR * exact + 0.5,
                  "q=%g: histogram %g, exact %g", qs[i], got, exact);
    }
    free(x);
    free(h);
}

static uint64_t draw_uniform(void) { return 1000 + (uint64_t)(uniform01() * 1e6); }
static uint64_t draw_exponential(void) { return (uint64_t)(-log(uniform01()) * 50000.0); }
/* Pareto alpha 1.1 from 5 us: spans six decades, like real tails. */
static uint64_t draw_pareto(void) { return (uint64_t)(5000.0 / pow(uniform01(), 1.0 / 1.1)); }

Test(histogram, quantiles_uniform) { srand(1); check_quantiles(draw_uniform, 200000); }
Test(histogram, quantiles_exponential) { srand(2); check_quantiles(draw_exponential, 200000); }
Test(histogram, quantiles_heavy_tailed) { srand(3); check_quantiles(draw_pareto, 200000); }

Test(histogram, buckets_tile_the_range)
{
    size_t b;

    cr_assert_eq(sv_hist_bucket_low(0), 0);
    for (b = 0; b + 1 < SV_HIST_BUCKETS; b++)
        cr_assert_eq(sv_hist_bucket_low(b) + sv_hist_bucket_width(b), sv_hist_bucket_low(b + 1),
                     "gap after bucket %zu", b);
    b = SV_HIST_BUCKETS - 1;
    cr_assert_eq(sv_hist_bucket_low(b) + sv_hist_bucket_width(b), SV_HIST_LIMIT);
    cr_assert(SV_HIST_LIMIT >= 100000000000ull, "range must reach 100 s");
}

Test(histogram, every_value_lands_in_its_bucket)
{
    uint64_t x;

    for (x = 0; x < 5000; x++) {
        size_t b = sv_hist_bucket_of(x);

        cr_assert(sv_hist_bucket_low(b) <= x && x < sv_hist_bucket_low(b) + sv_hist_bucket_width(b));
    }
    for (x = 1; x < SV_HIST_LIMIT; x = x * 3 + 1) {
        size_t b = sv_hist_bucket_of(x);

        cr_assert(sv_hist_bucket_low(b) <= x && x < sv_hist_bucket_low(b) + sv_hist_bucket_width(b),
                  "x=%llu bucket %zu", (unsigned long long)x, b);
        cr_assert((double)sv_hist_bucket_width(b) / 2 <= SV_HIST_REL_ERROR * (double)x + 0.5);
    }
    cr_assert_eq(sv_hist_bucket_of(SV_HIST_LIMIT - 1), SV_HIST_BUCKETS - 1);
}

Test(histogram, out_of_range_values_are_counted_not_lost)
{
    sv_hist *h = hist_new();

    sv_hist_add(h, 0);
    sv_hist_add(h, 1);
    sv_hist_add(h, SV_HIST_LIMIT - 1);
    sv_hist_add(h, SV_HIST_LIMIT);
    sv_hist_add(h, UINT64_MAX);
    cr_assert_eq(h->total, 5);
    cr_assert_eq(h->overflow, 2);
    cr_assert_eq(sv_hist_quantile(h, 0.0, 999), 0);
    cr_assert_eq(sv_hist_quantile(h, 0.4, 999), 1);
    cr_assert_eq(sv_hist_quantile(h, 1.0, 999), 999, "overflowed rank reports the given maximum");
    free(h);
}

Test(histogram, edge_cases)
{
    sv_hist *h = hist_new();

    cr_assert_eq(sv_hist_quantile(h, 0.5, 0), 0, "empty");
    sv_hist_add(h, 12345);
    cr_assert(fabs((double)sv_hist_quantile(h, 0.0, 0) - 12345) <= SV_HIST_REL_ERROR * 12345);
    cr_assert(fabs((double)sv_hist_quantile(h, 1.0, 0) - 12345) <= SV_HIST_REL_ERROR * 12345);
    cr_assert_eq(sv_hist_quantile(h, -1.0, 0), sv_hist_quantile(h, 0.0, 0), "q clamped below");
    cr_assert_eq(sv_hist_quantile(h, 2.0, 0), sv_hist_quantile(h, 1.0, 0), "q clamped above");
    free(h);
}

Test(histogram, merge_adds_every_bucket)
{
    sv_hist *a = hist_new(), *b = hist_new(), *all = hist_new();
    size_t i;

    srand(5);
    for (i = 0; i < 50000; i++) {
        uint64_t x = draw_pareto();

        sv_hist_add(i & 1 ? a : b, x);
        sv_hist_add(all, x);
    }
    sv_hist_merge(a, b);
    cr_assert_eq(a->total, all->total);
    cr_assert_eq(a->overflow, all->overflow);
    for (i = 0; i < SV_HIST_BUCKETS; i++)
        cr_assert_eq(a->bucket[i], all->bucket[i], "bucket %zu", i);
    free(a);
    free(b);
    free(all);
}
