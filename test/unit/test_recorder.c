/* SPDX-License-Identifier: BSD-3-Clause */
/* Recorders: the hot path, error counters, merge across threads. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "stagevar.h"

enum { STAGES = 3 };

Test(recorder, records_spans_per_stage)
{
    sv_recorder *r = sv_recorder_new(STAGES);

    sv_record(r, 0, 100);
    sv_record(r, 0, 300);
    sv_record(r, 2, 5);
    cr_assert_eq(r->stage[0].moments.count, 2);
    cr_assert_float_eq(r->stage[0].moments.mean, 200.0, 1e-9);
    cr_assert_eq(r->stage[0].hist.total, 2);
    cr_assert_eq(r->stage[1].moments.count, 0);
    cr_assert_eq(r->stage[2].moments.count, 1);
    sv_recorder_free(r);
}

Test(recorder, negative_spans_are_dropped_missing_are_counted)
{
    sv_recorder *r = sv_recorder_new(STAGES);

    sv_record(r, 1, -1);
    sv_record(r, 1, -5000);
    sv_record_missing(r, 1);
    sv_record(r, 1, 0);
    cr_assert_eq(r->stage[1].dropped, 2);
    cr_assert_eq(r->stage[1].missing, 1);
    cr_assert_eq(r->stage[1].moments.count, 1, "a zero span is a valid sample");
    cr_assert_eq(r->stage[1].hist.total, 1);
    sv_recorder_free(r);
}

Test(recorder, out_of_range_stage_is_ignored)
{
    sv_recorder *r = sv_recorder_new(STAGES);
    sv_recorder *copy = sv_recorder_new(STAGES);

    sv_recorder_snapshot(copy, r);
    sv_record(r, STAGES, 10);
    sv_record_missing(r, STAGES + 7);
    cr_assert_eq(memcmp(r, copy, sv_recorder_size(STAGES)), 0);
    sv_recorder_free(r);
    sv_recorder_free(copy);
}

Test(recorder, reset_and_snapshot)
{
    sv_recorder *r = sv_recorder_new(STAGES);
    sv_recorder *snap = sv_recorder_new(STAGES);

    sv_record(r, 0, 42);
    sv_record_missing(r, 1);
    sv_recorder_snapshot(snap, r);
    sv_recorder_reset(r);
    cr_assert_eq(r->stage[0].moments.count, 0);
    cr_assert_eq(r->stage[1].missing, 0);
    cr_assert_eq(r->stage[0].hist.total, 0);
    cr_assert_eq(snap->stage[0].moments.count, 1, "snapshot is independent of the source");
    cr_assert_eq(snap->stage[1].missing, 1);
    sv_recorder_free(r);
    sv_recorder_free(snap);
}

Test(recorder, caller_memory_init)
{
    unsigned char *mem = malloc(sv_recorder_size(2));
    sv_recorder *r = (sv_recorder *)mem;

    memset(mem, 0xab, sv_recorder_size(2));
    sv_recorder_init(r, 2);
    cr_assert_eq(r->nstages, 2);
    cr_assert_eq(r->stage[1].moments.count, 0);
    cr_assert_eq(r->stage[1].hist.bucket[SV_HIST_BUCKETS - 1], 0);
    free(mem);
}

Test(recorder, merge_requires_same_shape)
{
    sv_recorder *a = sv_recorder_new(2), *b = sv_recorder_new(3);

    sv_record(b, 0, 1);
    cr_assert_eq(sv_recorder_merge(a, b), -1);
    cr_assert_eq(a->stage[0].moments.count, 0);
    sv_recorder_free(a);
    sv_recorder_free(b);
}

Test(recorder, merge_equals_one_recorder_seeing_both_streams)
{
    sv_recorder *a = sv_recorder_new(STAGES), *b = sv_recorder_new(STAGES);
    sv_recorder *all = sv_recorder_new(STAGES);
    unsigned s;
    int i;

    srand(11);
    for (i = 0; i < 30000; i++) {
        int64_t span = (int64_t)(rand() % 2000000) - 1000;
        unsigned stage = (unsigned)i % STAGES;

        sv_record(i % 2 ? a : b, stage, span);
        sv_record(all, stage, span);
        if (i % 97 == 0) {
            sv_record_missing(i % 2 ? a : b, stage);
            sv_record_missing(all, stage);
        }
    }
    cr_assert_eq(sv_recorder_merge(a, b), 0);
    for (s = 0; s < STAGES; s++) {
        const sv_stage *m = &a->stage[s], *w = &all->stage[s];

        cr_assert_eq(m->moments.count, w->moments.count);
        cr_assert_eq(m->moments.min, w->moments.min);
        cr_assert_eq(m->moments.max, w->moments.max);
        cr_assert(fabs(m->moments.mean - w->moments.mean) <= 1e-9 * w->moments.mean);
        cr_assert(fabs(m->moments.m2 - w->moments.m2) <= 1e-9 * w->moments.m2);
        cr_assert_eq(m->missing, w->missing);
        cr_assert_eq(m->dropped, w->dropped);
        cr_assert_eq(memcmp(&m->hist, &w->hist, sizeof(m->hist)), 0, "stage %u histogram", s);
    }
    sv_recorder_free(a);
    sv_recorder_free(b);
    sv_recorder_free(all);
}

enum { THREADS = 4, PER_THREAD = 250000 };

static void *record_many(void *arg)
{
    sv_recorder *r = arg;
    int i;

    for (i = 0; i < PER_THREAD; i++) {
        sv_record(r, (unsigned)i % STAGES, i);
        if (i % 10 == 0)
            sv_record_missing(r, 0);
    }
    return NULL;
}

Test(recorder, threads_with_own_recorders_merge_to_exact_counts)
{
    sv_recorder *r[THREADS], *total = sv_recorder_new(STAGES);
    pthread_t tid[THREADS];
    uint64_t count = 0, hist = 0;
    unsigned s;
    int t;

    for (t = 0; t < THREADS; t++) {
        r[t] = sv_recorder_new(STAGES);
        cr_assert_eq(pthread_create(&tid[t], NULL, record_many, r[t]), 0);
    }
    for (t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        cr_assert_eq(sv_recorder_merge(total, r[t]), 0);
        sv_recorder_free(r[t]);
    }
    for (s = 0; s < STAGES; s++) {
        count += total->stage[s].moments.count;
        hist += total->stage[s].hist.total;
    }
    cr_assert_eq(count, (uint64_t)THREADS * PER_THREAD);
    cr_assert_eq(hist, (uint64_t)THREADS * PER_THREAD);
    cr_assert_eq(total->stage[0].missing, (uint64_t)THREADS * (PER_THREAD / 10));
    cr_assert_eq(total->stage[0].moments.max, PER_THREAD - 1 - (PER_THREAD - 1) % STAGES);
    sv_recorder_free(total);
}
