/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen schedules: constant rates, trace steps, shapes, phases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrival.h"
#include "parse.h"

#define SEC 1e9

/* Arrivals per whole second over [0, secs). */
static void count_per_second(lg_schedule *s, unsigned secs, unsigned *counts)
{
    uint64_t t;

    memset(counts, 0, secs * sizeof(*counts));
    while ((t = lg_schedule_next(s)) < (uint64_t)(secs * SEC))
        counts[t / (uint64_t)SEC]++;
}

Test(schedule, constant_deterministic_rate)
{
    lg_arrival a = { .kind = LG_ARRIVAL_DET };
    lg_schedule s;
    unsigned c[3];

    lg_schedule_init(&s, &a, 1000, NULL, 1, 0, 0, 1, 0);
    count_per_second(&s, 3, c);
    for (int i = 0; i < 3; i++)
        cr_assert(c[i] >= 999 && c[i] <= 1001, "second %d: %u", i, c[i]);
}

Test(schedule, constant_exponential_rate)
{
    lg_arrival a = { .kind = LG_ARRIVAL_EXP };
    lg_schedule s;
    unsigned c[10], total = 0;

    lg_schedule_init(&s, &a, 10000, NULL, 1, 0, 0, 7, 0);
    count_per_second(&s, 10, c);
    for (int i = 0; i < 10; i++)
        total += c[i];
    /* Poisson: sd sqrt(1e5) = 316; allow 5 sd. */
    cr_assert(fabs((double)total - 1e5) < 1600, "total %u", total);
}

Test(schedule, trace_steps_are_honoured_at_their_start)
{
    double t_ns[] = { 0, 1 * SEC, 2 * SEC, 3 * SEC }, rate[] = { 1000, 3000, 0, 2000 };
    lg_trace tr = { t_ns, rate, 4 };
    lg_arrival a = { .kind = LG_ARRIVAL_DET };
    unsigned want[] = { 1000, 3000, 0, 2000 }, c[4];
    lg_schedule s;

    lg_schedule_init(&s, &a, 0, &tr, 1, 0, 0, 1, 0);
    count_per_second(&s, 4, c);
    for (int i = 0; i < 4; i++)
        cr_assert(abs((int)c[i] - (int)want[i]) <= 1, "second %d: %u, want %u", i, c[i], want[i]);
}

Test(schedule, trace_share_splits_rate_between_threads)
{
    double t_ns[] = { 0, 1 * SEC }, rate[] = { 4000, 8000 };
    lg_trace tr = { t_ns, rate, 2 };
    lg_arrival a = { .kind = LG_ARRIVAL_DET };
    lg_schedule s;
    unsigned c[2];

    lg_schedule_init(&s, &a, 0, &tr, 0.25, 0, 0, 1, 3);
    count_per_second(&s, 2, c);
    cr_assert(abs((int)c[0] - 1000) <= 1 && abs((int)c[1] - 2000) <= 1, "%u %u", c[0], c[1]);
}

Test(schedule, warmup_before_origin_uses_first_rate)
{
    double t_ns[] = { 0, 1 * SEC }, rate[] = { 500, 5000 };
    lg_trace tr = { t_ns, rate, 2 };
    lg_arrival a = { .kind = LG_ARRIVAL_DET };
    lg_schedule s;
    unsigned n = 0;

    /* Start 1 s before the origin (warm-up): 500/s until the origin. */
    lg_schedule_init(&s, &a, 0, &tr, 1, 1 * SEC, 0, 1, 0);
    while (lg_schedule_next(&s) < (uint64_t)SEC)
        n++;
    cr_assert(abs((int)n - 500) <= 1, "%u", n);
}

Test(schedule, rate_zero_forever_ends_the_schedule)
{
    double t_ns[] = { 0, 1 * SEC }, rate[] = { 100, 0 };
    lg_trace tr = { t_ns, rate, 2 };
    lg_arrival a = { .kind = LG_ARRIVAL_EXP };
    lg_schedule s;
    uint64_t t, last = 0;
    unsigned n = 0;

    lg_schedule_init(&s, &a, 0, &tr, 1, 0, 0, 1, 0);
    while ((t = lg_schedule_next(&s)) != UINT64_MAX && n < 100000) {
        last = t;
        n++;
    }
    cr_assert(last < (uint64_t)SEC && n < 200, "n %u last %llu", n, (unsigned long long)last);
}

/* Regression (fuzz_lg_trace): a tiny rate put the next send beyond
 * 2^64 ns, and converting that to uint64_t was undefined behaviour. */
Test(schedule, a_send_beyond_uint64_means_never)
{
    double t_ns[] = { 0 }, rate[] = { 1e-12 };
    lg_trace tr = { t_ns, rate, 1 };
    lg_arrival a = { .kind = LG_ARRIVAL_DET };
    lg_schedule s;

    lg_schedule_init(&s, &a, 0, &tr, 1, 0, 0, 1, 0);
    cr_assert_eq(lg_schedule_next(&s), UINT64_MAX);
    cr_assert_eq(lg_schedule_next(&s), UINT64_MAX);
}

Test(schedule, streams_start_at_random_phases)
{
    lg_arrival a = { .kind = LG_ARRIVAL_DET };
    uint64_t first[8];

    for (int i = 0; i < 8; i++) {
        lg_schedule s;

        lg_schedule_init(&s, &a, 1000, NULL, 1, 0, 0, 42, (uint64_t)i);
        first[i] = lg_schedule_next(&s);
        cr_assert(first[i] < 1000000, "phase %llu outside one gap", (unsigned long long)first[i]);
        for (int j = 0; j < i; j++)
            cr_assert_neq(first[i], first[j], "streams %d and %d fire in step", i, j);
    }
}

Test(schedule, builtin_shapes_have_mean_rate_and_peak_over_min_two)
{
    static const char *const names[] = { "var", "app", "etc" };

    for (int i = 0; i < 3; i++) {
        char err[LG_ERRLEN];
        double lo = INFINITY, hi = 0;
        lg_trace tr;

        cr_assert_eq(lg_trace_shape(names[i], 1000, 24 * SEC, &tr, err), 0, "%s", err);
        cr_assert_eq(tr.n, 24);
        for (size_t k = 0; k < tr.n; k++) {
            lo = fmin(lo, tr.rate[k]);
            hi = fmax(hi, tr.rate[k]);
        }
        cr_assert(hi / lo > 1.9 && hi / lo < 2.1, "%s: peak/min %g", names[i], hi / lo);
        cr_assert(fabs(lg_trace_mean_rate(&tr, 24 * SEC) - 1000) < 1e-6, "%s mean", names[i]);
        lg_trace_free(&tr);
    }
}

static char *write_temp(const char *text)
{
    static char path[64];
    int fd;

    strcpy(path, "/tmp/lg-trace-XXXXXX");
    fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

Test(schedule, trace_file_loads)
{
    char err[LG_ERRLEN], *path = write_temp("# time,rate\n0,100\n\n1.5,300\r\n3,0\n");
    lg_trace tr;

    cr_assert_eq(lg_trace_load(path, &tr, err), 0, "%s", err);
    cr_assert_eq(tr.n, 3);
    cr_assert_eq(tr.t_ns[1], 1.5e9);
    cr_assert_eq(tr.rate[1], 300);
    lg_trace_free(&tr);
    unlink(path);
}

Test(schedule, bad_trace_files_name_the_line)
{
    static const char *const bad[][2] = {
        { "0,100\n2,50\n1,20\n", ":3:" },
        { "1,100\n", "start at 0" },
        { "0,abc\n", "'abc'" },
        { "0;100\n", "'0;100'" },
        { "# nothing\n", "no 'seconds,rate'" },
        { "0,-5\n", "'-5'" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[LG_ERRLEN] = "", *path = write_temp(bad[i][0]);
        lg_trace tr;

        cr_assert_eq(lg_trace_load(path, &tr, err), -1, "accepted %s", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]), "message '%s' lacks '%s'", err, bad[i][1]);
        unlink(path);
    }
}
