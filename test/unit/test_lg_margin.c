/* SPDX-License-Identifier: BSD-3-Clause */
/* --spin-us auto: the margin follows the timer's high lateness quantile,
 * within its bounds; the read guard follows a read's p99 duration, and
 * the send estimate (--coalesce) a send's median. */
#include <criterion/criterion.h>

#include "margin.h"

Test(margin, starts_at_the_old_default)
{
    lg_margin m;

    lg_margin_init(&m);
    cr_assert_eq(lg_margin_ns(&m), LG_MARGIN_START_NS);
}

Test(margin, timely_wakes_shrink_it_to_the_minimum)
{
    lg_margin m;
    int i;

    lg_margin_init(&m);
    for (i = 0; i < 100000; i++)
        lg_margin_observe(&m, 2000);
    cr_assert_eq(lg_margin_ns(&m), LG_MARGIN_MIN_NS);
}

Test(margin, settles_near_the_p995_of_lateness)
{
    lg_margin m;
    int i;

    lg_margin_init(&m);
    /* One wake in 100 is 150 us late, the rest 5 us: p99.5 is 150 us. */
    for (i = 0; i < 200000; i++)
        lg_margin_observe(&m, i % 100 == 0 ? 150000 : 5000);
    cr_assert_geq(lg_margin_ns(&m), 140000, "%llu", (unsigned long long)lg_margin_ns(&m));
    cr_assert_leq(lg_margin_ns(&m), 160000, "%llu", (unsigned long long)lg_margin_ns(&m));
}

Test(margin, never_beyond_the_maximum)
{
    lg_margin m;
    int i;

    lg_margin_init(&m);
    for (i = 0; i < 1000; i++)
        lg_margin_observe(&m, 50000000);
    cr_assert_eq(lg_margin_ns(&m), LG_MARGIN_MAX_NS);
}

Test(guard, starts_at_its_start_value)
{
    lg_margin g;

    lg_guard_init(&g);
    cr_assert_eq(lg_margin_ns(&g), LG_GUARD_START_NS);
}

Test(guard, settles_near_the_p99_of_read_time)
{
    lg_margin g;
    int i;

    lg_guard_init(&g);
    /* One read in 50 takes 12 us, the rest 2 us: p99 is 12 us. */
    for (i = 0; i < 200000; i++)
        lg_guard_observe(&g, i % 50 == 0 ? 12000 : 2000);
    cr_assert_geq(lg_margin_ns(&g), 11000, "%llu", (unsigned long long)lg_margin_ns(&g));
    cr_assert_leq(lg_margin_ns(&g), 13000, "%llu", (unsigned long long)lg_margin_ns(&g));
}

Test(guard, fast_reads_shrink_it_to_the_minimum)
{
    lg_margin g;
    int i;

    lg_guard_init(&g);
    for (i = 0; i < 100000; i++)
        lg_guard_observe(&g, 300);
    cr_assert_eq(lg_margin_ns(&g), LG_GUARD_MIN_NS);
}

/* A run of `n` samples far from the estimate pins it at its bound. */
static void pinned_by(lg_margin *m, void (*observe)(lg_margin *, uint64_t), int n, uint64_t far,
                      uint64_t bound)
{
    int i;

    for (i = 0; i < n; i++)
        observe(m, far);
    cr_assert_eq(lg_margin_ns(m), bound);
}

Test(guard, a_preempted_read_moves_it_one_step_and_never_past_the_cap)
{
    lg_margin g;

    lg_guard_init(&g);
    lg_guard_observe(&g, 5000000);
    cr_assert_lt(lg_margin_ns(&g), LG_GUARD_START_NS + 2000);
    pinned_by(&g, lg_guard_observe, 1000, 5000000, LG_GUARD_MAX_NS);
}

Test(send_est, settles_near_the_median_send)
{
    lg_margin s;
    int i;

    lg_send_est_init(&s);
    /* Two sends in five take 30 us, the rest 6 us: the median is 6 us. */
    for (i = 0; i < 20000; i++)
        lg_send_est_observe(&s, i % 5 < 2 ? 30000 : 6000);
    cr_assert_geq(lg_margin_ns(&s), 5500, "%llu", (unsigned long long)lg_margin_ns(&s));
    cr_assert_leq(lg_margin_ns(&s), 6500, "%llu", (unsigned long long)lg_margin_ns(&s));
}

Test(send_est, a_preempted_send_moves_it_one_step_within_its_bounds)
{
    lg_margin s;

    lg_send_est_init(&s);
    lg_send_est_observe(&s, 5000000);
    cr_assert_eq(lg_margin_ns(&s), LG_SEND_START_NS + 10);
    pinned_by(&s, lg_send_est_observe, 5000, 5000000, LG_SEND_MAX_NS);
    pinned_by(&s, lg_send_est_observe, 5000, 100, LG_SEND_MIN_NS);
}
