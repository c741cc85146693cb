/* SPDX-License-Identifier: BSD-3-Clause */
/* Strict parsing of numbers, times and "kind:k=v,..." specs. */
#include "parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err)
{
    char *end;
    unsigned long long v;

    errno = 0;
    /* strtoull accepts "-1" and wraps it; refuse any sign up front. */
    if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ') {
        snprintf(err, LG_ERRLEN, "'%s' is not a non-negative integer", s);
        return -1;
    }
    v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE) {
        snprintf(err, LG_ERRLEN, "'%s' is not a non-negative integer", s);
        return -1;
    }
    if (v < min || v > max) {
        snprintf(err, LG_ERRLEN, "'%s' is out of range [%llu, %llu]", s,
                 (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

/* strtod with the rest of the string returned, for unit suffixes. */
static int number_prefix(const char *s, double *v, const char **rest, char *err)
{
    char *end;

    errno = 0;
    *v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(*v)) {
        snprintf(err, LG_ERRLEN, "'%s' is not a number", s);
        return -1;
    }
    *rest = end;
    return 0;
}

int lg_parse_double(const char *s, double min, double max, double *out, char *err)
{
    const char *rest;
    double v;

    if (number_prefix(s, &v, &rest, err) < 0)
        return -1;
    if (*rest != '\0') {
        snprintf(err, LG_ERRLEN, "'%s' is not a number", s);
        return -1;
    }
    if (v < min || v > max) {
        snprintf(err, LG_ERRLEN, "'%s' is out of range [%g, %g]", s, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int lg_parse_time_ns(const char *s, double unit_ns, double *out_ns, char *err)
{
    static const struct { const char *suffix; double ns; } units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
    };
    const char *rest;
    double v;
    size_t i;

    if (number_prefix(s, &v, &rest, err) < 0)
        return -1;
    if (v < 0) {
        snprintf(err, LG_ERRLEN, "'%s' is a negative time", s);
        return -1;
    }
    for (i = 0; *rest != '\0' && i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(rest, units[i].suffix) == 0)
            break;
    if (i == sizeof(units) / sizeof(units[0])) {
        snprintf(err, LG_ERRLEN, "'%s' has an unknown time unit (use ns, us, ms or s)", s);
        return -1;
    }
    v *= *rest == '\0' ? unit_ns : units[i].ns;
    /* Times end up as uint64_t nanoseconds: keep far from 2^64 (and from
     * infinity, which ".01e308s" would give). */
    if (!(v <= LG_TIME_MAX_NS)) {
        snprintf(err, LG_ERRLEN, "'%s' is too long (at most %g s)", s, LG_TIME_MAX_NS / 1e9);
        return -1;
    }
    *out_ns = v;
    return 0;
}

int lg_read_line(FILE *f, char *buf, size_t cap, const char **why)
{
    size_t n = 0;
    int c;

    while ((c = getc(f)) != EOF && c != '\n') {
        if (c == '\0') {
            *why = "holds a NUL byte: not a text file";
            return -1;
        }
        if (n + 1 >= cap) {
            *why = "line too long";
            return -1;
        }
        buf[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return 0;
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    return 1;
}

const char *lg_split_kind(const char *s, char *name, size_t cap)
{
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);

    if (n >= cap)
        n = cap - 1;
    memcpy(name, s, n);
    name[n] = '\0';
    return colon ? colon + 1 : NULL;
}

static int key_allowed(const char *key, size_t n, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (strlen(*allowed) == n && strncmp(*allowed, key, n) == 0)
            return 1;
    return 0;
}

int lg_kv_get(const char *list, const char *k, char *val, size_t cap,
              const char *const *allowed, char *err)
{
    const char *p = list;
    int found = 0;

    while (p && *p) {
        const char *comma = strchr(p, ',');
        const char *eq = strchr(p, '=');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);

        if (!eq || eq >= p + len || !key_allowed(p, (size_t)(eq - p), allowed)) {
            snprintf(err, LG_ERRLEN, "'%.*s' in '%s' is not one of the known key=value settings",
                     (int)len, p, list);
            return -1;
        }
        if ((size_t)(eq - p) == strlen(k) && strncmp(p, k, strlen(k)) == 0) {
            size_t vn = len - (size_t)(eq + 1 - p);

            if (vn >= cap)
                vn = cap - 1;
            memcpy(val, eq + 1, vn);
            val[vn] = '\0';
            found = 1;
        }
        p = comma ? comma + 1 : NULL;
    }
    return found;
}
