/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread measurement state and its merge. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

const char *const lg_stage_names[LG_NSTAGES] = {
    "latency_scheduled", "latency_sent", "schedule_error", "batch_size", "connect",
    "latency_read", "client_delay", "loop_lateness", "spin_stall",
};

int lg_stats_init(lg_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->rec = sv_recorder_new(LG_NSTAGES);
    return s->rec ? 0 : -1;
}

void lg_stats_free(lg_stats *s)
{
    sv_recorder_free(s->rec);
    free(s->sec);
    memset(s, 0, sizeof(*s));
}

lg_second *lg_stats_second(lg_stats *s, size_t i)
{
    if (i >= s->nsec) {
        /* Grow geometrically: a second is 16 KiB, allocated on first use. */
        size_t n = s->nsec ? s->nsec : 16, k;
        lg_second *p;

        while (n <= i)
            n *= 2;
        p = realloc(s->sec, n * sizeof(*p));
        if (!p)
            return NULL;
        for (k = s->nsec; k < n; k++) {
            memset(&p[k], 0, sizeof(p[k]));
            sv_moments_reset(&p[k].lat_m);
            sv_hist_reset(&p[k].lat);
        }
        s->sec = p;
        s->nsec = n;
    }
    return &s->sec[i];
}

void lg_counters_add(lg_counters *into, const lg_counters *from)
{
    const uint64_t *f = (const uint64_t *)from;
    uint64_t *t = (uint64_t *)into;
    size_t i;

    /* lg_counters is all uint64_t: add it field by field as an array. */
    for (i = 0; i < sizeof(*from) / sizeof(uint64_t); i++)
        t[i] += f[i];
}

int lg_stats_merge(lg_stats *into, const lg_stats *from)
{
    size_t i;

    sv_recorder_merge(into->rec, from->rec);
    lg_counters_add(&into->c, &from->c);
    into->cpu_user_s += from->cpu_user_s;
    into->cpu_sys_s += from->cpu_sys_s;
    into->busy_ns += from->busy_ns;
    into->spun_ns += from->spun_ns;
    for (i = from->nsec; i-- > 0;) {
        const lg_second *f = &from->sec[i];
        lg_second *t;

        if (f->scheduled == 0 && f->completed == 0 && f->errors == 0)
            continue;
        t = lg_stats_second(into, i);
        if (!t)
            return -1;
        t->scheduled += f->scheduled;
        t->completed += f->completed;
        t->errors += f->errors;
        sv_moments_merge(&t->lat_m, &f->lat_m);
        sv_hist_merge(&t->lat, &f->lat);
    }
    return 0;
}
