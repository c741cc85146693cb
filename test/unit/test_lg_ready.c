/* SPDX-License-Identifier: BSD-3-Clause */
/* The ready queue: connections found readable, read in the order found,
 * each queued once, with the time the oldest has waited since. */
#include <criterion/criterion.h>

#include "ready.h"

Test(ready, starts_empty)
{
    lg_ready r;

    cr_assert_eq(lg_ready_init(&r, 4), 0);
    cr_assert(lg_ready_empty(&r));
    lg_ready_free(&r);
}

Test(ready, pops_in_the_order_found)
{
    lg_ready r;

    lg_ready_init(&r, 4);
    lg_ready_push(&r, 2, 100);
    lg_ready_push(&r, 0, 200);
    lg_ready_push(&r, 3, 300);
    cr_assert_eq(lg_ready_pop(&r), 2);
    cr_assert_eq(lg_ready_pop(&r), 0);
    cr_assert_eq(lg_ready_pop(&r), 3);
    cr_assert(lg_ready_empty(&r));
    lg_ready_free(&r);
}

Test(ready, a_slot_found_again_keeps_its_place_and_time)
{
    lg_ready r;

    lg_ready_init(&r, 4);
    lg_ready_push(&r, 1, 100);
    lg_ready_push(&r, 2, 150);
    lg_ready_push(&r, 1, 200);
    cr_assert_eq(lg_ready_oldest(&r), 100);
    cr_assert_eq(lg_ready_pop(&r), 1);
    cr_assert_eq(lg_ready_oldest(&r), 150);
    cr_assert_eq(lg_ready_pop(&r), 2);
    cr_assert(lg_ready_empty(&r));
    lg_ready_free(&r);
}

Test(ready, a_slot_read_can_be_queued_again)
{
    lg_ready r;

    lg_ready_init(&r, 2);
    lg_ready_push(&r, 0, 100);
    cr_assert_eq(lg_ready_pop(&r), 0);
    lg_ready_push(&r, 0, 300);
    cr_assert_eq(lg_ready_oldest(&r), 300);
    cr_assert_eq(lg_ready_pop(&r), 0);
    lg_ready_free(&r);
}

Test(ready, every_slot_fits_and_the_ring_wraps)
{
    lg_ready r;
    unsigned round, i;

    lg_ready_init(&r, 3);
    for (round = 0; round < 5; round++) {
        /* Start each round one place further round the ring. */
        lg_ready_push(&r, round % 3, 10 * round);
        cr_assert_eq(lg_ready_pop(&r), round % 3);
        for (i = 0; i < 3; i++)
            lg_ready_push(&r, (i + round) % 3, 10 * round + i);
        for (i = 0; i < 3; i++) {
            cr_assert_eq(lg_ready_oldest(&r), 10 * round + i);
            cr_assert_eq(lg_ready_pop(&r), (i + round) % 3);
        }
        cr_assert(lg_ready_empty(&r));
    }
    lg_ready_free(&r);
}
