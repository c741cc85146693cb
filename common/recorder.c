/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/*
 * Per-thread stage recorders. A recorder is one flat allocation (header
 * plus nstages sv_stage blocks), written by one thread only, so the hot
 * path is a handful of plain stores into memory that thread owns.
 */
#include <stdlib.h>
#include <string.h>

#include "stagevar.h"
#include "update.h"

size_t sv_recorder_size(unsigned nstages)
{
    return sizeof(sv_recorder) + (size_t)nstages * sizeof(sv_stage);
}

static void stage_reset(sv_stage *s)
{
    sv_moments_reset(&s->moments);
    s->missing = 0;
    s->dropped = 0;
    sv_hist_reset(&s->hist);
}

void sv_recorder_reset(sv_recorder *r)
{
    unsigned i;

    for (i = 0; i < r->nstages; i++)
        stage_reset(&r->stage[i]);
}

void sv_recorder_init(sv_recorder *r, unsigned nstages)
{
    r->nstages = nstages;
    r->reserved = 0;
    sv_recorder_reset(r);
}

sv_recorder *sv_recorder_new(unsigned nstages)
{
    sv_recorder *r = malloc(sv_recorder_size(nstages));

    if (r != NULL)
        sv_recorder_init(r, nstages);
    return r;
}

void sv_recorder_free(sv_recorder *r)
{
    free(r);
}

/* The moments' and the histogram's updates inline: no call per record. */
void sv_record(sv_recorder *r, unsigned stage, int64_t span_ns)
{
    sv_stage *s;

    if (stage >= r->nstages)
        return;
    s = &r->stage[stage];
    if (span_ns < 0) {
        s->dropped++;
        return;
    }
    sv_update_moments(&s->moments, (uint64_t)span_ns);
    sv_update_hist(&s->hist, (uint64_t)span_ns);
}

void sv_record_missing(sv_recorder *r, unsigned stage)
{
    if (stage < r->nstages)
        r->stage[stage].missing++;
}

int sv_recorder_merge(sv_recorder *into, const sv_recorder *from)
{
    unsigned i;

    if (into->nstages != from->nstages)
        return -1;
    for (i = 0; i < into->nstages; i++) {
        sv_stage *a = &into->stage[i];
        const sv_stage *b = &from->stage[i];

        sv_moments_merge(&a->moments, &b->moments);
        sv_hist_merge(&a->hist, &b->hist);
        a->missing += b->missing;
        a->dropped += b->dropped;
    }
    return 0;
}

void sv_recorder_snapshot(sv_recorder *dst, const sv_recorder *src)
{
    memcpy(dst, src, sv_recorder_size(src->nstages));
}
