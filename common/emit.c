/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/*
 * Summaries and text emitters. Every format is built on sv_emit(), so
 * the field set and order are defined once: memcached's stats code and
 * httpd's handler plug their own output functions into the callback,
 * the FILE* writers serve tools and tests.
 */
#include <stdio.h>
#include <string.h>

#include "stagevar.h"

/* A bucket's midpoint can lie beyond the extreme values recorded in it;
 * the exact min and max bound every quantile, so report it within them. */
static uint64_t quantile_within(const sv_stage *s, double q, uint64_t min, uint64_t max)
{
    uint64_t v = sv_hist_quantile(&s->hist, q, max);

    if (s->moments.count == 0)
        return v;
    return v < min ? min : v > max ? max : v;
}

void sv_stage_summarize(const sv_stage *s, sv_summary *out)
{
    const sv_moments *m = &s->moments;
    uint64_t max = m->max;

    out->count = m->count;
    out->mean_ns = m->mean;
    out->stddev_ns = sv_moments_stddev(m);
    out->cv2 = sv_moments_cv2(m);
    out->min_ns = m->count ? m->min : 0;
    out->max_ns = max;
    out->p50_ns = quantile_within(s, 0.50, out->min_ns, max);
    out->p90_ns = quantile_within(s, 0.90, out->min_ns, max);
    out->p99_ns = quantile_within(s, 0.99, out->min_ns, max);
    out->p999_ns = quantile_within(s, 0.999, out->min_ns, max);
    out->missing = s->missing;
    out->dropped = s->dropped;
}

static void emit_u64(const char *stage, const char *field, uint64_t v,
                     sv_emit_fn fn, void *ctx)
{
    char key[128], val[32];

    snprintf(key, sizeof(key), "%s:%s", stage, field);
    snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
    fn(key, val, ctx);
}

/* fmt: "%.1f" for nanosecond means (sub-ns digits are noise), "%.6g"
 * for dimensionless ratios that may be tiny or large. */
static void emit_double(const char *stage, const char *field, const char *fmt,
                        double v, sv_emit_fn fn, void *ctx)
{
    char key[128], val[64];

    snprintf(key, sizeof(key), "%s:%s", stage, field);
    snprintf(val, sizeof(val), fmt, v);
    fn(key, val, ctx);
}

static void emit_stage(const char *name, const sv_stage *s, sv_emit_fn fn, void *ctx)
{
    sv_summary sum;

    sv_stage_summarize(s, &sum);
    emit_u64(name, "count", sum.count, fn, ctx);
    emit_double(name, "mean_ns", "%.1f", sum.mean_ns, fn, ctx);
    emit_double(name, "stddev_ns", "%.1f", sum.stddev_ns, fn, ctx);
    emit_double(name, "cv2", "%.6g", sum.cv2, fn, ctx);
    emit_u64(name, "min_ns", sum.min_ns, fn, ctx);
    emit_u64(name, "max_ns", sum.max_ns, fn, ctx);
    emit_u64(name, "p50_ns", sum.p50_ns, fn, ctx);
    emit_u64(name, "p90_ns", sum.p90_ns, fn, ctx);
    emit_u64(name, "p99_ns", sum.p99_ns, fn, ctx);
    emit_u64(name, "p999_ns", sum.p999_ns, fn, ctx);
    emit_u64(name, "missing", sum.missing, fn, ctx);
    emit_u64(name, "dropped", sum.dropped, fn, ctx);
}

void sv_emit(const sv_recorder *r, const char *const *names, sv_emit_fn fn, void *ctx)
{
    unsigned i;

    for (i = 0; i < r->nstages; i++)
        emit_stage(names[i], &r->stage[i], fn, ctx);
}

/* State shared by the FILE* writers: the stream and whether a write failed. */
struct writer {
    FILE *out;
    int failed;
    char open_stage[128];       /* JSON: the stage whose object is open */
};

static void put(struct writer *w, int n)
{
    if (n < 0)
        w->failed = 1;
}

static void stat_line(const char *key, const char *value, void *ctx)
{
    struct writer *w = ctx;

    put(w, fprintf(w->out, "STAT %s %s\r\n", key, value));
}

static void kv_line(const char *key, const char *value, void *ctx)
{
    struct writer *w = ctx;
    const char *colon = strchr(key, ':');

    put(w, fprintf(w->out, "%.*s_%s: %s\n", (int)(colon - key), key, colon + 1, value));
}

int sv_write_stats(FILE *out, const sv_recorder *r, const char *const *names)
{
    struct writer w = { out, 0, "" };

    sv_emit(r, names, stat_line, &w);
    return w.failed ? -1 : 0;
}

int sv_write_kv(FILE *out, const sv_recorder *r, const char *const *names)
{
    struct writer w = { out, 0, "" };

    sv_emit(r, names, kv_line, &w);
    return w.failed ? -1 : 0;
}

/* JSON: stage names are identifiers chosen by the program, never request
 * data, so they are written without escaping; values are numbers. */
static void json_field(const char *key, const char *value, void *ctx)
{
    struct writer *w = ctx;
    const char *colon = strchr(key, ':');
    int stage_len = (int)(colon - key);

    if (strlen(w->open_stage) != (size_t)stage_len
        || strncmp(w->open_stage, key, (size_t)stage_len) != 0) {
        put(w, fprintf(w->out, "%s\"%.*s\":{", w->open_stage[0] ? "}," : "",
                       stage_len, key));
        snprintf(w->open_stage, sizeof(w->open_stage), "%.*s", stage_len, key);
    } else {
        put(w, fputc(',', w->out) == EOF ? -1 : 0);
    }
    put(w, fprintf(w->out, "\"%s\":%s", colon + 1, value));
}

int sv_write_json(FILE *out, const sv_recorder *r, const char *const *names)
{
    struct writer w = { out, 0, "" };

    put(&w, fputc('{', out) == EOF ? -1 : 0);
    sv_emit(r, names, json_field, &w);
    put(&w, fprintf(out, "%s}", w.open_stage[0] ? "}" : ""));
    return w.failed ? -1 : 0;
}
