/* SPDX-License-Identifier: BSD-3-Clause */
/* The perfect sender's schedule error from the clock stalls the loop saw
 * while spinning: the same estimate as bench-loadgen's machine floor. */
#include <criterion/criterion.h>

#include "perfect.h"

static sv_hist stalls;

static void add(unsigned n, uint64_t ns)
{
    while (n-- > 0)
        sv_hist_add(&stalls, ns);
}

Test(perfect, nothing_observed_is_zero)
{
    sv_hist_reset(&stalls);
    add(3, 50000);
    cr_assert_eq(lg_perfect_quantile(&stalls, 0, 0.99), 0);
}

Test(perfect, no_stalls_is_zero)
{
    sv_hist_reset(&stalls);
    cr_assert_eq(lg_perfect_quantile(&stalls, 1000000000ULL, 0.99), 0);
}

Test(perfect, stalls_rarer_than_the_quantile_do_not_show)
{
    sv_hist_reset(&stalls);
    /* 0.5% of the second stalled: a send due at random is on time with
     * probability 0.995. */
    add(50, 100000);
    cr_assert_eq(lg_perfect_quantile(&stalls, 1000000000ULL, 0.99), 0);
    cr_assert_gt(lg_perfect_quantile(&stalls, 1000000000ULL, 0.999), 0);
}

Test(perfect, the_tail_is_the_rest_of_a_stall)
{
    uint64_t p99, p50;

    sv_hist_reset(&stalls);
    /* 500 stalls of 100 us in 1 s: 5% of sends fall in one, uniformly, so
     * 1% are later than 80 us (share later than x: 500 (100 us - x) / 1 s). */
    add(500, 100000);
    p99 = lg_perfect_quantile(&stalls, 1000000000ULL, 0.99);
    p50 = lg_perfect_quantile(&stalls, 1000000000ULL, 0.5);
    cr_assert(p99 > 79000 && p99 < 81000, "p99 %llu", (unsigned long long)p99);
    cr_assert_eq(p50, 0);
}

Test(perfect, more_time_observed_thins_the_same_stalls)
{
    uint64_t one, ten;

    sv_hist_reset(&stalls);
    add(2000, 50000);
    one = lg_perfect_quantile(&stalls, 1000000000ULL, 0.99);
    ten = lg_perfect_quantile(&stalls, 10000000000ULL, 0.99);
    cr_assert_gt(one, ten);
}
