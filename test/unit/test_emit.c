/* SPDX-License-Identifier: BSD-3-Clause */
/* Emitters: each format parses back to the recorded numbers. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "stagevar.h"

static const char *const names[] = { "kernel_to_read", "parse_to_response" };

/* 1..1000 ns in stage 0; stage 1 empty but for a missing and a dropped. */
static sv_recorder *sample(void)
{
    sv_recorder *r = sv_recorder_new(2);
    int i;

    for (i = 1; i <= 1000; i++)
        sv_record(r, 0, i);
    sv_record_missing(r, 1);
    sv_record(r, 1, -3);
    return r;
}

static char *render(int (*writer)(FILE *, const sv_recorder *, const char *const *))
{
    sv_recorder *r = sample();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    cr_assert_eq(writer(f, r, names), 0);
    fclose(f);
    sv_recorder_free(r);
    return buf;
}

/* The value of `key` in "<prefix><key><sep><value><eol>" lines, or NULL. */
static const char *find_value(const char *text, const char *line)
{
    const char *p = strstr(text, line);

    return p ? p + strlen(line) : NULL;
}

Test(emit, memcached_stat_lines)
{
    char *out = render(sv_write_stats);
    const char *v;
    int lines = 0;
    char *p;

    for (p = out; (p = strstr(p, "\r\n")) != NULL; p += 2)
        lines++;
    cr_assert_eq(lines, 24, "12 fields x 2 stages, got:\n%s", out);
    cr_assert(strncmp(out, "STAT kernel_to_read:count 1000\r\n", 32) == 0, "%s", out);
    cr_assert_not_null(v = find_value(out, "STAT kernel_to_read:mean_ns "));
    cr_assert_float_eq(strtod(v, NULL), 500.5, 0.05);
    cr_assert_not_null(v = find_value(out, "STAT kernel_to_read:p50_ns "));
    cr_assert(fabs(strtod(v, NULL) - 500) <= SV_HIST_REL_ERROR * 500, "p50 %s", v);
    cr_assert_not_null(v = find_value(out, "STAT kernel_to_read:max_ns "));
    cr_assert_eq(strtoull(v, NULL, 10), 1000);
    cr_assert_not_null(find_value(out, "STAT parse_to_response:missing 1\r\n"));
    cr_assert_not_null(find_value(out, "STAT parse_to_response:dropped 1\r\n"));
    cr_assert_not_null(find_value(out, "STAT parse_to_response:count 0\r\n"));
    free(out);
}

Test(emit, key_value_lines)
{
    char *out = render(sv_write_kv);
    const char *v;

    cr_assert(strncmp(out, "kernel_to_read_count: 1000\n", 27) == 0, "%s", out);
    cr_assert_not_null(v = find_value(out, "\nkernel_to_read_stddev_ns: "));
    cr_assert_float_eq(strtod(v, NULL), 288.7, 0.1);   /* sqrt((1000^2-1)/12) */
    cr_assert_not_null(find_value(out, "\nparse_to_response_missing: 1\n"));
    cr_assert_null(strchr(out, '\r'));
    free(out);
}

Test(emit, json_is_well_formed)
{
    char *out = render(sv_write_json);
    const char *v;
    int depth = 0, max_depth = 0;
    char *p;

    for (p = out; *p; p++) {
        if (*p == '{' && ++depth > max_depth)
            max_depth = depth;
        if (*p == '}')
            depth--;
        cr_assert(depth >= 0, "unbalanced: %s", out);
    }
    cr_assert_eq(depth, 0, "%s", out);
    cr_assert_eq(max_depth, 2, "%s", out);
    cr_assert(strncmp(out, "{\"kernel_to_read\":{\"count\":1000,", 32) == 0, "%s", out);
    cr_assert_not_null(strstr(out, "},\"parse_to_response\":{\"count\":0,"), "%s", out);
    cr_assert_not_null(v = find_value(out, "\"p99_ns\":"));
    cr_assert(fabs(strtod(v, NULL) - 990) <= SV_HIST_REL_ERROR * 990, "p99 %s", v);
    cr_assert(strcmp(out + strlen(out) - 2, "}}") == 0, "%s", out);
    free(out);
}

Test(emit, json_of_no_stages)
{
    sv_recorder *r = sv_recorder_new(0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    cr_assert_eq(sv_write_json(f, r, names), 0);
    fclose(f);
    cr_assert_str_eq(buf, "{}");
    free(buf);
    sv_recorder_free(r);
}

static void count_pairs(const char *key, const char *value, void *ctx)
{
    (void)value;
    cr_assert_not_null(strchr(key, ':'));
    ++*(int *)ctx;
}

Test(emit, callback_sees_every_field)
{
    sv_recorder *r = sample();
    int n = 0;

    sv_emit(r, names, count_pairs, &n);
    cr_assert_eq(n, 24);
    sv_recorder_free(r);
}

/* Bucket midpoints can overshoot the recorded extremes (1000 ns lies in
 * the bucket [1000, 1008)); summaries never report beyond them. */
Test(emit, quantiles_stay_within_min_and_max)
{
    sv_recorder *r = sv_recorder_new(1);
    sv_summary s;

    sv_record(r, 0, 1000);
    sv_stage_summarize(&r->stage[0], &s);
    cr_assert_eq(s.p50_ns, 1000);
    cr_assert_eq(s.p999_ns, 1000);

    sv_record(r, 0, 1001);
    sv_record(r, 0, 1006);
    sv_stage_summarize(&r->stage[0], &s);
    cr_assert(s.p50_ns >= s.min_ns && s.p50_ns <= s.max_ns, "p50 %llu", (unsigned long long)s.p50_ns);
    cr_assert(s.p999_ns <= 1006, "p99.9 %llu", (unsigned long long)s.p999_ns);
    sv_recorder_free(r);
}
