/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen: parse, preload, run the threads, report. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "preload.h"
#include "report.h"
#include "stagevar.h"
#include "loop.h"

#define START_MARGIN_NS 20000000ULL     /* threads read the start time well before it */
#define MAP_TRIES 8

static int die(const char *msg)
{
    fprintf(stderr, "loadgen: %s\n", msg);
    return 1;
}

static uint64_t total_progress(const lg_thread *t, unsigned n)
{
    uint64_t sum = 0;
    unsigned i;

    for (i = 0; i < n; i++)
        sum += __atomic_load_n(&t[i].progress, __ATOMIC_RELAXED);
    return sum;
}

/* A progress line on a terminal only: logs and pipes stay clean. */
static void wait_with_progress(lg_run *run, const lg_thread *t, const lg_options *o)
{
    int tty = isatty(STDERR_FILENO);
    struct timespec tick = { 0, 200000000 };
    uint64_t started = sv_clock_monotonic_ns();

    while (__atomic_load_n(&run->finished, __ATOMIC_ACQUIRE) < o->threads) {
        nanosleep(&tick, NULL);
        if (tty)
            fprintf(stderr, "\r[loadgen] %6.1f s  %llu replies measured ",
                    (double)(sv_clock_monotonic_ns() - started) / 1e9,
                    (unsigned long long)total_progress(t, o->threads));
    }
    if (tty)
        fputs("\n", stderr);
}

/* The monotonic time at a CLOCK_REALTIME reading: a monotonic read
 * between two real ones, the closest pair of a few, so that a thread
 * preempted between two reads does not shift the origin by as much. */
static void map_clocks(uint64_t *mono, uint64_t *real)
{
    uint64_t closest = UINT64_MAX;
    int i;

    *mono = sv_clock_monotonic_ns();
    *real = sv_clock_realtime_ns();
    for (i = 0; i < MAP_TRIES; i++) {
        uint64_t before = sv_clock_realtime_ns(), m = sv_clock_monotonic_ns(), after = sv_clock_realtime_ns();

        if (after >= before && after - before < closest) {
            closest = after - before;
            *mono = m;
            *real = before + closest / 2;
        }
    }
}

/* Without --start-at the schedule begins a margin from now. With it,
 * sleep until a margin before that CLOCK_REALTIME instant, then map it onto
 * the monotonic clock the threads run on: the mapping is fresh, so a clock
 * step during the wait does not shift the start. A start that passed
 * before the mapping fails the run rather than start late. */
static int schedule_start(lg_run *run, const lg_options *o, lg_result *r)
{
    uint64_t real = sv_clock_realtime_ns(), mono;
    struct timespec wake;

    if (o->start_at_ns && o->start_at_ns > real + START_MARGIN_NS) {
        wake.tv_sec = (time_t)((o->start_at_ns - START_MARGIN_NS) / 1000000000ULL);
        wake.tv_nsec = (long)((o->start_at_ns - START_MARGIN_NS) % 1000000000ULL);
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &wake, NULL) == EINTR)
            ;
    }
    map_clocks(&mono, &real);
    if (o->start_at_ns && o->start_at_ns <= real) {
        fprintf(stderr, "loadgen: --start-at %llu passed %.3f ms before the run could start "
                "(give it more lead)\n", (unsigned long long)o->start_at_ns,
                (double)(real - o->start_at_ns) / 1e6);
        return -1;
    }
    run->start_ns = mono + (o->start_at_ns ? o->start_at_ns - real : START_MARGIN_NS);
    r->start_unix_ns = run->start_unix_ns = o->start_at_ns ? o->start_at_ns : real + START_MARGIN_NS;
    return 0;
}

static int start_threads(lg_thread *t, lg_run *run, const lg_options *o, lg_result *r)
{
    unsigned i;

    for (i = 0; i < o->threads; i++) {
        if (pthread_create(&t[i].tid, NULL, lg_thread_main, &t[i]) != 0)
            return -1;
    }
    pthread_barrier_wait(&run->connected);
    for (i = 0; i < o->threads; i++) {
        if (t[i].failed) {
            run->abort = 1;
            fprintf(stderr, "loadgen: %s\n", t[i].err);
            break;
        }
    }
    if (!run->abort && schedule_start(run, o, r) < 0)
        run->abort = 1;
    pthread_barrier_wait(&run->started);
    return run->abort ? -1 : 0;
}

/* When the last thread was running at the origin: how punctually this
 * host began its load (loop.c, wait_for_origin). */
static uint64_t latest_woke(const lg_thread *t, unsigned n)
{
    uint64_t woke = 0;
    unsigned i;

    for (i = 0; i < n; i++)
        if (t[i].woke_unix_ns > woke)
            woke = t[i].woke_unix_ns;
    return woke;
}

static double measurement_window(const lg_thread *t, const lg_options *o)
{
    uint64_t last = 0;
    unsigned i;

    if (!o->requests)
        return o->duration_ns;
    for (i = 0; i < o->threads; i++)
        if (t[i].last_measured_ns > last)
            last = t[i].last_measured_ns;
    return last > t[0].measure_start ? (double)(last - t[0].measure_start) : 0;
}

static int report(const lg_options *o, lg_thread *t, lg_result *r)
{
    char err[LG_ERRLEN];
    unsigned i;

    if (lg_stats_init(&r->total) < 0)
        return die("out of memory");
    for (i = 0; i < o->threads; i++)
        if (lg_stats_merge(&r->total, &t[i].st) < 0)
            return die("out of memory");
    r->threads = t;
    r->nthreads = o->threads;
    r->start_woke_unix_ns = latest_woke(t, o->threads);
    r->window_ns = measurement_window(t, o);
    getrusage(RUSAGE_SELF, &r->ru);
    if (!o->quiet)
        lg_report_text(stdout, r);
    if (o->json && lg_report_json(o->json, r, err) < 0)
        return die(err);
    return 0;
}

static int run(const lg_options *o, lg_result *r)
{
    lg_thread *t = calloc(o->threads, sizeof(*t));
    lg_run shared = { .abort = 0 };
    uint64_t t0 = sv_clock_monotonic_ns();
    unsigned i;
    int rc = 0;

    if (!t)
        return die("out of memory");
    pthread_barrier_init(&shared.connected, NULL, o->threads + 1);
    pthread_barrier_init(&shared.started, NULL, o->threads + 1);
    for (i = 0; i < o->threads; i++)
        if (lg_thread_init(&t[i], i, o, &shared) < 0)
            return die("cannot set up a thread (out of memory or event loop)");
    if (start_threads(t, &shared, o, r) < 0)
        rc = 1;
    else
        wait_with_progress(&shared, t, o);
    for (i = 0; i < o->threads; i++)
        pthread_join(t[i].tid, NULL);
    r->wall_s = (double)(sv_clock_monotonic_ns() - t0) / 1e9;
    for (i = 0; i < o->threads && rc == 0; i++)
        if (t[i].failed)
            rc = die(t[i].err);
    if (rc == 0)
        rc = report(o, t, r);
    for (i = 0; i < o->threads; i++)
        lg_thread_free(&t[i]);
    free(t);
    lg_stats_free(&r->total);
    return rc;
}

int main(int argc, char **argv)
{
    lg_options o;
    lg_result r;
    char err[LG_ERRLEN];
    int rc;

    switch (lg_options_parse(&o, argc, argv, err)) {
    case LG_OPT_EXIT:
        return 0;
    case LG_OPT_ERROR:
        fprintf(stderr, "loadgen: %s\n", err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    memset(&r, 0, sizeof(r));
    r.o = &o;
    if (o.preload && lg_preload(&o, &r.preload_sets, err) < 0) {
        lg_options_free(&o);
        return die(err);
    }
    rc = run(&o, &r);
    lg_options_free(&o);
    return rc;
}
