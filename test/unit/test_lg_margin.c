/* --spin-us auto: the margin follows the timer's high lateness quantile,
 * within its bounds. */
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
