/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen report: per-client percentiles against the merged ones, and
 * the flag that says averaging them would mislead. */
#include <string.h>

#include <criterion/criterion.h>

#include "report.h"

/* One thread with two clients; client 0 and client 1 each see one fixed
 * latency, n0 and n1 times. */
static void view(uint64_t lat0, unsigned n0, uint64_t lat1, unsigned n1, lg_client_view *v)
{
    static lg_client_stats clients[2];
    static lg_thread thread;
    lg_result r;
    unsigned i;

    memset(&r, 0, sizeof(r));
    cr_assert_eq(lg_stats_init(&r.total), 0);
    memset(&thread, 0, sizeof(thread));
    thread.nconns = 2;
    thread.clients = clients;
    for (i = 0; i < 2; i++) {
        sv_moments_reset(&clients[i].m);
        sv_hist_reset(&clients[i].h);
    }
    for (i = 0; i < n0 + n1; i++) {
        uint64_t lat = i < n0 ? lat0 : lat1;
        lg_client_stats *c = &clients[i < n0 ? 0 : 1];

        sv_moments_add(&c->m, lat);
        sv_hist_add(&c->h, lat);
        sv_record(r.total.rec, LG_LAT_SCHED, (int64_t)lat);
    }
    r.threads = &thread;
    r.nthreads = 1;
    lg_client_view_compute(&r, v);
    lg_stats_free(&r.total);
}

Test(report, clients_that_agree_are_not_flagged)
{
    lg_client_view v;

    view(100000, 500, 100000, 500, &v);
    cr_assert_eq(v.clients, 2);
    cr_assert_eq(v.any, 0);
    for (int q = 0; q < LG_NQ; q++)
        cr_assert(v.merged[q] > 99000 && v.merged[q] < 101000);
}

Test(report, averaging_percentiles_is_flagged_when_clients_differ)
{
    lg_client_view v;

    /* A busy fast client and a rare slow one: the median request took
     * 100 us, but the mean of the two clients' medians says ~5 ms. */
    view(100000, 1000, 10000000, 10, &v);
    cr_assert(v.merged[0] < 101000, "merged p50 %g", v.merged[0]);
    cr_assert(v.client_mean[0] > 4900000, "mean of client p50s %g", v.client_mean[0]);
    cr_assert_eq(v.disagree[0], 1);
    cr_assert_eq(v.any, 1);
}
