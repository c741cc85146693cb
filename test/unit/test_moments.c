/* SPDX-License-Identifier: BSD-3-Clause */
/* Welford moments against a two-pass reference, and Chan merge. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "stagevar.h"

/* Two-pass reference in long double: mean first, then squared deviations. */
static void two_pass(const uint64_t *x, size_t n, long double *mean, long double *var)
{
    long double sum = 0, ss = 0;
    size_t i;

    for (i = 0; i < n; i++)
        sum += (long double)x[i];
    *mean = sum / n;
    for (i = 0; i < n; i++)
        ss += ((long double)x[i] - *mean) * ((long double)x[i] - *mean);
    *var = ss / n;
}

static void check_against_reference(uint64_t offset, uint64_t spread, size_t n)
{
    uint64_t *x = malloc(n * sizeof(*x));
    long double mean, var;
    sv_moments m;
    size_t i;

    srand(42);
    sv_moments_reset(&m);
    for (i = 0; i < n; i++) {
        x[i] = offset + (uint64_t)rand() % spread;
        sv_moments_add(&m, x[i]);
    }
    two_pass(x, n, &mean, &var);
    cr_assert_eq(m.count, n);
    cr_assert(fabsl((long double)m.mean - mean) <= 1e-12L * mean, "mean %f vs %Lf", m.mean, mean);
    cr_assert(fabsl((long double)sv_moments_variance(&m) - var) <= 1e-6L * var,
              "variance %.17g vs %.17Lg (offset %llu)", sv_moments_variance(&m), var,
              (unsigned long long)offset);
    free(x);
}

Test(moments, matches_two_pass_on_small_values)
{
    check_against_reference(0, 100000, 100000);
}

/* Around 1e12 with a spread of 1000, sum(x^2) - n*mean^2 loses every
 * significant digit in double; Welford must not. */
Test(moments, matches_two_pass_with_large_offset)
{
    check_against_reference(1000000000000ull, 1000, 100000);
}

/* The recorder's inlined update (sv_record) on spans with a large common
 * offset and a tiny spread: the mean must not drift and the variance of
 * 0..3 (1.25) must survive an offset 10^12 times larger. */
Test(moments, recorder_keeps_a_low_variance_under_a_large_offset)
{
    enum { N = 100000 };
    uint64_t *x = malloc(N * sizeof(*x));
    sv_recorder *r = sv_recorder_new(1);
    const sv_moments *m = &r->stage[0].moments;
    long double mean, var;
    size_t i;

    srand(11);
    for (i = 0; i < N; i++) {
        x[i] = 1000000000000ull + (uint64_t)rand() % 4;
        sv_record(r, 0, (int64_t)x[i]);
    }
    two_pass(x, N, &mean, &var);
    cr_assert_eq(m->count, N);
    cr_assert(fabsl((long double)m->mean - mean) <= 1e-12L * mean, "mean %f vs %Lf", m->mean, mean);
    cr_assert(fabsl((long double)sv_moments_variance(m) - var) <= 1e-6L * var,
              "variance %.17g vs %.17Lg", sv_moments_variance(m), var);
    cr_assert_eq(m->min, 1000000000000ull);
    cr_assert_eq(m->max, 1000000000003ull);
    sv_recorder_free(r);
    free(x);
}

Test(moments, naive_formula_would_fail_here)
{
    /* Guard that the previous test really is hard: the naive formula is
     * off by far more than our tolerance on the same data. */
    double sum = 0, sumsq = 0, n = 100000, naive;
    long double mean, var;
    uint64_t *x = malloc(100000 * sizeof(*x));
    size_t i;

    srand(42);
    for (i = 0; i < 100000; i++) {
        x[i] = 1000000000000ull + (uint64_t)rand() % 1000;
        sum += (double)x[i];
        sumsq += (double)x[i] * (double)x[i];
    }
    two_pass(x, 100000, &mean, &var);
    naive = sumsq / n - (sum / n) * (sum / n);
    cr_assert(fabsl((long double)naive - var) > 1e-3L * var);
    free(x);
}

Test(moments, min_max_and_small_counts)
{
    sv_moments m;

    sv_moments_reset(&m);
    cr_assert_eq(sv_moments_variance(&m), 0.0);
    cr_assert_eq(sv_moments_cv2(&m), 0.0);
    sv_moments_add(&m, 7);
    cr_assert_eq(sv_moments_variance(&m), 0.0);
    sv_moments_add(&m, 3);
    sv_moments_add(&m, 11);
    cr_assert_eq(m.min, 3);
    cr_assert_eq(m.max, 11);
    cr_assert_float_eq(m.mean, 7.0, 1e-12);
    cr_assert_float_eq(sv_moments_variance(&m), 32.0 / 3.0, 1e-9);
}

Test(moments, cv2_of_deterministic_is_zero)
{
    sv_moments m;
    int i;

    sv_moments_reset(&m);
    for (i = 0; i < 1000; i++)
        sv_moments_add(&m, 5000);
    cr_assert_eq(sv_moments_cv2(&m), 0.0);
}

Test(moments, cv2_of_exponential_is_about_one)
{
    sv_moments m;
    int i;

    srand(7);
    sv_moments_reset(&m);
    for (i = 0; i < 200000; i++) {
        double u = (rand() + 1.0) / ((double)RAND_MAX + 2.0);
        sv_moments_add(&m, (uint64_t)(-log(u) * 100000.0));
    }
    cr_assert(fabs(sv_moments_cv2(&m) - 1.0) < 0.03, "cv2 %f", sv_moments_cv2(&m));
}

Test(moments, merge_equals_one_stream)
{
    sv_moments a, b, all;
    int i;

    sv_moments_reset(&a);
    sv_moments_reset(&b);
    sv_moments_reset(&all);
    srand(3);
    for (i = 0; i < 5000; i++) {
        uint64_t x = 1000000000ull + (uint64_t)rand() % 50000;
        sv_moments_add(i % 3 ? &a : &b, x);
        sv_moments_add(&all, x);
    }
    sv_moments_merge(&a, &b);
    cr_assert_eq(a.count, all.count);
    cr_assert_eq(a.min, all.min);
    cr_assert_eq(a.max, all.max);
    cr_assert(fabs(a.mean - all.mean) <= 1e-9 * all.mean);
    cr_assert(fabs(sv_moments_variance(&a) - sv_moments_variance(&all))
              <= 1e-9 * sv_moments_variance(&all));
}

Test(moments, merge_with_empty_sides)
{
    sv_moments a, empty;

    sv_moments_reset(&a);
    sv_moments_reset(&empty);
    sv_moments_merge(&a, &empty);
    cr_assert_eq(a.count, 0);
    sv_moments_add(&empty, 9);
    sv_moments_merge(&a, &empty);
    cr_assert_eq(a.count, 1);
    cr_assert_eq(a.min, 9);
    cr_assert_eq(a.max, 9);
}
