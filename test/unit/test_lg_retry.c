/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen keep-alive retries: which closes let unanswered requests go
 * again, and that each goes again at most once. */
#include <errno.h>

#include <criterion/criterion.h>

#include "retry.h"

Test(retry, http_close_between_replies_is_clean)
{
    cr_assert(lg_retry_clean_close(1, 0, 0, 0));
    cr_assert(lg_retry_clean_close(1, 0, -1, ECONNRESET));
}

Test(retry, close_inside_a_reply_is_not)
{
    cr_assert_not(lg_retry_clean_close(1, 17, 0, 0));
    cr_assert_not(lg_retry_clean_close(1, 17, -1, ECONNRESET));
}

Test(retry, other_errors_are_not)
{
    cr_assert_not(lg_retry_clean_close(1, 0, -1, EIO));
}

Test(retry, memcache_never_retries)
{
    cr_assert_not(lg_retry_clean_close(0, 0, 0, 0));
    cr_assert_not(lg_retry_clean_close(0, 0, -1, ECONNRESET));
}

Test(retry, a_close_without_replies_allows_one_resend)
{
    lg_req r = { .op = LG_OP_HTTP };

    cr_assert_eq(lg_retry_take(&r, 0), 1);
    cr_assert_eq(r.retries, 1);
    cr_assert(r.resent);
    cr_assert_eq(lg_retry_take(&r, 0), 0);
    cr_assert_eq(r.retries, 1);
}

/* A keep-alive limit closes after replies: however many requests a late
 * client had queued behind it, each goes again until one is answered. */
Test(retry, a_close_after_replies_costs_nothing)
{
    lg_req r = { .op = LG_OP_HTTP };
    int i;

    for (i = 0; i < 10; i++)
        cr_assert_eq(lg_retry_take(&r, 1), 1);
    cr_assert_eq(r.retries, 0);
    cr_assert(r.resent);
    cr_assert_eq(lg_retry_take(&r, 0), 1, "its one retry without progress is still there");
}
