/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: libstagevar's three text formats, round-tripped.
 *
 * The input is a recording: which stage, and a span (negative spans are
 * dropped, a marker byte records "missing"). The recorder is written with
 * sv_write_stats, sv_write_kv and sv_write_json into memory, each output
 * is parsed back by a strict parser written here from the documented
 * formats, and every number must equal the stage's summary: integers
 * exactly, means and standard deviations to the 0.1 ns they are printed
 * with, cv2 to its 6 significant digits. Anything the parsers cannot read
 * (a "nan", a missing field, a stray character) aborts.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stagevar.h"

#define NSTAGES 4
#define NFIELDS 12

static const char *const names[NSTAGES] = {
    "kernel_to_read", "read_to_parse", "parse_to_response", "server_total"
};
static const char *const fields[NFIELDS] = {
    "count", "mean_ns", "stddev_ns", "cv2", "min_ns", "max_ns",
    "p50_ns", "p90_ns", "p99_ns", "p999_ns", "missing", "dropped"
};
enum { F_COUNT, F_MEAN, F_STDDEV, F_CV2 };

/* values[stage][field], as parsed back from one format. */
typedef struct {
    double v[NSTAGES][NFIELDS];
    int seen[NSTAGES][NFIELDS];
} table;

/* Abort with the output that failed, for the crash report. */
static void fail(const char *what, const char *text) __attribute__((noreturn));
static void fail(const char *what, const char *text)
{
    fprintf(stderr, "fuzz_emit: %s\n--- output ---\n%s\n", what, text);
    abort();
}

static int index_of(const char *const *list, int n, const char *s, size_t len)
{
    int i;

    for (i = 0; i < n; i++)
        if (strlen(list[i]) == len && strncmp(list[i], s, len) == 0)
            return i;
    return -1;
}

/* A decimal number as the emitters print it: digits, optional fraction,
 * optional exponent; nothing else (no nan, inf, hex or spaces). */
static const char *number(const char *p, double *out, const char *text)
{
    const char *start = p;
    char *end;

    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        fail("not a number", text);
    while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+'
           || (*p == '-' && (p[-1] == 'e' || p[-1] == 'E')))
        p++;
    *out = strtod(start, &end);
    if (end != p)
        fail("malformed number", text);
    return p;
}

static void store(table *t, const char *stage, size_t slen, const char *field, size_t flen,
                  double v, const char *text)
{
    int s = index_of(names, NSTAGES, stage, slen), f = index_of(fields, NFIELDS, field, flen);

    if (s < 0 || f < 0)
        fail("unknown stage or field", text);
    if (t->seen[s][f]++)
        fail("field given twice", text);
    t->v[s][f] = v;
}

/* "STAT <stage>:<field> <value>\r\n" lines. */
static void parse_stats(const char *text, table *t)
{
    const char *p = text;

    while (*p) {
        const char *key, *colon, *space;
        double v;

        if (strncmp(p, "STAT ", 5) != 0)
            fail("stats: line without STAT", text);
        key = p + 5;
        colon = strchr(key, ':');
        space = colon ? strchr(colon, ' ') : NULL;
        if (!space)
            fail("stats: no stage:field key", text);
        p = number(space + 1, &v, text);
        if (strncmp(p, "\r\n", 2) != 0)
            fail("stats: line does not end in CRLF", text);
        p += 2;
        store(t, key, (size_t)(colon - key), colon + 1, (size_t)(space - colon - 1), v, text);
    }
}

/* "<stage>_<field>: <value>\n" lines; stage names contain '_' themselves,
 * so the stage is the longest known name the line starts with. */
static void parse_kv(const char *text, table *t)
{
    const char *p = text;

    while (*p) {
        const char *sep = strstr(p, ": "), *key = p;
        size_t slen = 0;
        double v;
        int i;

        if (!sep || memchr(p, '\n', (size_t)(sep - p)))
            fail("kv: no ': '", text);
        for (i = 0; i < NSTAGES; i++) {
            size_t n = strlen(names[i]);

            if (strncmp(p, names[i], n) == 0 && p[n] == '_' && n > slen)
                slen = n;
        }
        if (slen == 0)
            fail("kv: unknown stage", text);
        p = number(sep + 2, &v, text);
        if (*p != '\n')
            fail("kv: line does not end in LF", text);
        p++;
        store(t, key, slen, key + slen + 1, (size_t)(sep - key) - slen - 1, v, text);
    }
}

/* A double-quoted name without escapes; returns the character after it. */
static const char *quoted(const char *p, const char **s, size_t *len, const char *text)
{
    const char *end;

    if (*p != '"' || !(end = strchr(p + 1, '"')))
        fail("json: expected a string", text);
    *s = p + 1;
    *len = (size_t)(end - p - 1);
    return end + 1;
}

static const char *expect(const char *p, char c, const char *text)
{
    if (*p != c)
        fail("json: unexpected character", text);
    return p + 1;
}

/* {"stage":{"field":number,...},...} exactly, no whitespace. */
static void parse_json(const char *text, table *t)
{
    const char *p = expect(text, '{', text);

    while (*p == '"') {
        const char *stage;
        size_t slen;

        p = expect(quoted(p, &stage, &slen, text), ':', text);
        p = expect(p, '{', text);
        for (;;) {
            const char *field;
            size_t flen;
            double v;

            p = expect(quoted(p, &field, &flen, text), ':', text);
            p = number(p, &v, text);
            store(t, stage, slen, field, flen, v, text);
            if (*p != ',')
                break;
            p++;
        }
        p = expect(p, '}', text);
        if (*p == ',')
            p++;
    }
    p = expect(p, '}', text);
    if (*p != '\0')
        fail("json: text after the object", text);
}

/* A printed double read back: within half a unit of the last printed
 * place (plus a little for the double nearest the decimal). */
static int close_to(double got, double want, double abs_tol, double rel_tol)
{
    return fabs(got - want) <= abs_tol + rel_tol * fabs(want);
}

static void check(const table *t, const sv_recorder *r, const char *text)
{
    int s, f;

    for (s = 0; s < NSTAGES; s++) {
        sv_summary sum;
        uint64_t ints[NFIELDS];

        sv_stage_summarize(&r->stage[s], &sum);
        ints[F_COUNT] = sum.count;
        ints[4] = sum.min_ns, ints[5] = sum.max_ns, ints[6] = sum.p50_ns, ints[7] = sum.p90_ns;
        ints[8] = sum.p99_ns, ints[9] = sum.p999_ns, ints[10] = sum.missing, ints[11] = sum.dropped;
        for (f = 0; f < NFIELDS; f++)
            if (!t->seen[s][f])
                fail("field missing", text);
        for (f = 0; f < NFIELDS; f++) {
            if (f == F_MEAN || f == F_STDDEV || f == F_CV2)
                continue;
            /* Integers print exactly; read back as a double they must be
             * the double nearest to the integer. */
            if (t->v[s][f] != (double)ints[f])
                fail("integer field differs", text);
        }
        if (!close_to(t->v[s][F_MEAN], sum.mean_ns, 0.05, 1e-15)
            || !close_to(t->v[s][F_STDDEV], sum.stddev_ns, 0.05, 1e-15)
            || !close_to(t->v[s][F_CV2], sum.cv2, 0, 5e-6))
            fail("mean, stddev or cv2 differs", text);
    }
}

typedef int (*writer)(FILE *, const sv_recorder *, const char *const *);
typedef void (*parser)(const char *, table *);

static void round_trip(const sv_recorder *r, writer w, parser parse)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    table *t = calloc(1, sizeof(*t));

    if (!out || !t)
        abort();
    if (w(out, r, names) != 0)
        fail("writer reported an error", "");
    fclose(out);
    if (strlen(buf) != len)
        fail("output holds a NUL byte", buf);
    parse(buf, t);
    check(t, r, buf);
    free(t);
    free(buf);
}

/* Each record is 9 bytes: a stage byte (bit 7: record as missing) and a
 * signed 64-bit span, scaled down by the stage byte's bits 2..6 so that
 * small and large spans are both common. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sv_recorder *r;
    size_t i;

    if (!r && !(r = sv_recorder_new(NSTAGES)))
        abort();
    sv_recorder_reset(r);
    for (i = 0; i + 9 <= size; i += 9) {
        unsigned stage = data[i] & 3, shift = (data[i] >> 2) & 31;
        int64_t span;

        memcpy(&span, data + i + 1, sizeof(span));
        if (data[i] & 0x80)
            sv_record_missing(r, stage);
        else
            sv_record(r, stage, span >> (shift * 2 > 62 ? 62 : shift * 2));
    }
    round_trip(r, sv_write_stats, parse_stats);
    round_trip(r, sv_write_kv, parse_kv);
    round_trip(r, sv_write_json, parse_json);
    return 0;
}
