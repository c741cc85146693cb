/* SPDX-License-Identifier: BSD-3-Clause */
/* Key names and sizes, value sizes, popularity, stream keys. */
#include "workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define VALUE_MAX (1024 * 1024 - 1024)  /* fits memcached's default item limit */

/* ---- size distributions -------------------------------------------- */

static int size_kv(const char *list, const char *k, double *out, char *err)
{
    static const char *const keys[] = { "loc", "scale", "shape", NULL };
    char val[64], why[LG_ERRLEN];
    int found = lg_kv_get(list, k, val, sizeof(val), keys, err);

    if (found == 0)
        snprintf(err, LG_ERRLEN, "'%s' lacks %s=", list, k);
    if (found <= 0)
        return -1;
    if (lg_parse_double(val, -1e9, 1e9, out, why) < 0) {
        snprintf(err, LG_ERRLEN, "%s: %s", k, why);
        return -1;
    }
    return 0;
}

static int parse_uniform(const char *rest, lg_size *s, char *err)
{
    const char *dash = rest ? strchr(rest, '-') : NULL;
    char lo[32], why[LG_ERRLEN];
    uint64_t a, b;

    if (!dash || (size_t)(dash - rest) >= sizeof(lo)) {
        snprintf(err, LG_ERRLEN, "'uniform:%s' should be uniform:MIN-MAX", rest ? rest : "");
        return -1;
    }
    memcpy(lo, rest, (size_t)(dash - rest));
    lo[dash - rest] = '\0';
    if (lg_parse_u64(lo, 0, s->max, &a, why) < 0 || lg_parse_u64(dash + 1, a, s->max, &b, why) < 0) {
        snprintf(err, LG_ERRLEN, "'uniform:%s': %s", rest, why);
        return -1;
    }
    s->a = (double)a;
    s->b = (double)b;
    return 0;
}

static void set_etc(lg_size *s, int is_key)
{
    if (is_key) {
        s->kind = LG_SIZE_GEV;
        s->a = 30.7984, s->b = 8.20449, s->c = 0.078688;
    } else {
        s->kind = LG_SIZE_GPARETO;
        s->a = 0, s->b = 214.476, s->c = 0.348238;
    }
}

int lg_size_parse(const char *spec, int is_key, lg_size *s, char *err)
{
    char kind[16], why[LG_ERRLEN];
    const char *rest = lg_split_kind(spec, kind, sizeof(kind));
    uint64_t n;

    memset(s, 0, sizeof(*s));
    s->min = is_key ? 1 : 0;
    s->max = is_key ? LG_MAX_KEY : VALUE_MAX;
    s->kind = LG_SIZE_UNIFORM;
    if (strcmp(kind, "uniform") == 0)
        return parse_uniform(rest, s, err);
    if (!rest && strcmp(kind, "etc") == 0) {
        set_etc(s, is_key);
        return 0;
    }
    if (strcmp(kind, "gpareto") == 0 || strcmp(kind, "gev") == 0) {
        s->kind = kind[1] == 'p' ? LG_SIZE_GPARETO : LG_SIZE_GEV;
        if (!rest)
            rest = "";
        if (size_kv(rest, "loc", &s->a, err) < 0 || size_kv(rest, "scale", &s->b, err) < 0 ||
            size_kv(rest, "shape", &s->c, err) < 0)
            return -1;
        /* scale 0 is not a distribution, and times an infinite tail it
         * would make every draw NaN. */
        if (s->b <= 0) {
            snprintf(err, LG_ERRLEN, "'%s': scale %g must be > 0", spec, s->b);
            return -1;
        }
        return 0;
    }
    if (lg_parse_u64(spec, s->min, s->max, &n, why) == 0) {
        s->kind = LG_SIZE_FIXED;
        s->a = (double)n;
        return 0;
    }
    snprintf(err, LG_ERRLEN, "bad %s size '%s': want N in [%u, %u], uniform:A-B, gpareto:..., gev:... or etc",
             is_key ? "key" : "value", spec, s->min, s->max);
    return -1;
}

/* (u^-k - 1) / k, and its k -> 0 limit -log(u). */
static double box_cox_tail(double u, double k)
{
    return fabs(k) < 1e-12 ? -log(u) : (pow(u, -k) - 1) / k;
}

uint32_t lg_size_draw(const lg_size *s, lg_rng *r)
{
    double x = s->a;

    switch (s->kind) {
    case LG_SIZE_FIXED:
        break;
    case LG_SIZE_UNIFORM:
        x = s->a + (double)lg_rng_below(r, (uint64_t)(s->b - s->a) + 1);
        break;
    case LG_SIZE_GPARETO:
        x = s->a + s->b * box_cox_tail(lg_rng_uniform(r), s->c);
        break;
    case LG_SIZE_GEV:
        x = s->a + s->b * box_cox_tail(-log(lg_rng_uniform(r)), s->c);
        break;
    }
    x = floor(x + 0.5);
    /* Written so that a NaN (no draw should give one) lands on min
     * rather than in a float-to-integer conversion, which is undefined. */
    return !(x >= s->min) ? s->min : x > s->max ? s->max : (uint32_t)x;
}

/* ---- popularity ----------------------------------------------------- */

static int pop_kv(const char *list, const char *k, double *out, char *err)
{
    static const char *const keys[] = { "scale", "shape", NULL };
    char val[64], why[LG_ERRLEN];
    int found = lg_kv_get(list, k, val, sizeof(val), keys, err);

    if (found == 0)
        snprintf(err, LG_ERRLEN, "'gpareto:%s' lacks %s=", list, k);
    if (found <= 0)
        return -1;
    if (lg_parse_double(val, -10, 1e6, out, why) < 0) {
        snprintf(err, LG_ERRLEN, "popularity %s: %s", k, why);
        return -1;
    }
    return 0;
}

int lg_pop_parse(const char *spec, lg_popularity *p, char *err)
{
    char kind[16], why[LG_ERRLEN];
    const char *rest = lg_split_kind(spec, kind, sizeof(kind));

    memset(p, 0, sizeof(*p));
    if (!rest && strcmp(kind, "uniform") == 0) {
        p->kind = LG_POP_UNIFORM;
        return 0;
    }
    if (rest && strcmp(kind, "zipf") == 0) {
        p->kind = LG_POP_ZIPF;
        if (lg_parse_double(rest, 1e-6, 100, &p->s, why) < 0) {
            snprintf(err, LG_ERRLEN, "zipf exponent: %s", why);
            return -1;
        }
        return 0;
    }
    if (rest && strcmp(kind, "gpareto") == 0) {
        p->kind = LG_POP_GPARETO;
        if (pop_kv(rest, "scale", &p->scale, err) < 0 || pop_kv(rest, "shape", &p->shape, err) < 0)
            return -1;
        if (p->scale <= 0) {
            snprintf(err, LG_ERRLEN, "popularity gpareto scale %g must be > 0", p->scale);
            return -1;
        }
        return 0;
    }
    snprintf(err, LG_ERRLEN, "unknown popularity '%s' (uniform, zipf:S, gpareto:scale=F,shape=K)", spec);
    return -1;
}

int lg_pop_init(lg_popularity *p, uint64_t n, char *err)
{
    double sum = 0;
    uint64_t i;

    p->n = n;
    if (p->kind != LG_POP_ZIPF)
        return 0;
    if (n > LG_MAX_ZIPF_KEYS) {
        snprintf(err, LG_ERRLEN, "zipf popularity takes at most %u keys (a table of 8 bytes a key), not %llu",
                 LG_MAX_ZIPF_KEYS, (unsigned long long)n);
        return -1;
    }
    /* An exact inverse-CDF table: n doubles, searched in O(log n). */
    p->cdf = malloc(n * sizeof(double));
    if (!p->cdf) {
        snprintf(err, LG_ERRLEN, "no memory for a Zipf table of %llu keys", (unsigned long long)n);
        return -1;
    }
    for (i = 0; i < n; i++)
        p->cdf[i] = (sum += pow((double)(i + 1), -p->s));
    for (i = 0; i < n; i++)
        p->cdf[i] /= sum;
    return 0;
}

static uint64_t zipf_draw(const lg_popularity *p, lg_rng *r)
{
    double u = lg_rng_uniform(r);
    uint64_t lo = 0, hi = p->n - 1;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (p->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t lg_pop_draw(const lg_popularity *p, lg_rng *r)
{
    double x;

    switch (p->kind) {
    case LG_POP_UNIFORM:
        return lg_rng_below(r, p->n);
    case LG_POP_ZIPF:
        return zipf_draw(p, r);
    case LG_POP_GPARETO:
        /* A GPareto over ranks, truncated to [0, n) by rejection. */
        do
            x = p->scale * (double)p->n * box_cox_tail(lg_rng_uniform(r), p->shape);
        while (x >= (double)p->n);
        return (uint64_t)x;
    }
    return 0;
}

void lg_pop_free(lg_popularity *p)
{
    free(p->cdf);
    p->cdf = NULL;
}

/* ---- keys ----------------------------------------------------------- */

/* Key idx's size from s: drawn with a generator that depends only on
 * (seed, idx), so sizes are per key. A fixed size needs no generator
 * (seeding one costs more than the rest of a key name). */
static uint32_t key_size(const lg_workload *w, const lg_size *s, uint64_t idx, uint64_t salt)
{
    lg_rng r;

    if (s->kind == LG_SIZE_FIXED)
        return lg_size_draw(s, NULL);
    lg_rng_seed(&r, w->seed ^ salt, idx);
    return lg_size_draw(s, &r);
}

size_t lg_key_name(const lg_workload *w, uint64_t idx, char *buf)
{
    char digits[20];
    size_t nd = 0, width, len, pad;
    uint32_t want = key_size(w, &w->key_size, idx, 0x6b6579);

    /* "k" then the zero-padded index: unique, and as long as asked unless
     * the index needs more digits than that. (By hand, not snprintf: this
     * runs for every key of every request and reply.) */
    do
        digits[nd++] = (char)('0' + idx % 10);
    while ((idx /= 10) > 0);
    width = want > 1 ? want - 1 : 1;
    len = 1 + (width > nd ? width : nd);
    len = len > LG_MAX_KEY ? LG_MAX_KEY : len;
    pad = len - 1 > nd ? len - 1 - nd : 0;
    buf[0] = 'k';
    memset(buf + 1, '0', pad);
    for (size_t i = 0; 1 + pad + i < len; i++)
        buf[1 + pad + i] = digits[nd - 1 - i];
    buf[len] = '\0';
    return len;
}

uint32_t lg_value_size(const lg_workload *w, uint64_t idx)
{
    return key_size(w, &w->value_size, idx, 0x76616c);
}

/* ---- expiry ---------------------------------------------------------- */

static int ttl_secs(const char *spec, const char *text, uint64_t min, uint32_t *secs, char *err)
{
    char why[LG_ERRLEN];
    uint64_t n;

    if (lg_parse_u64(text, min, LG_MAX_TTL, &n, why) == 0) {
        *secs = (uint32_t)n;
        return 0;
    }
    if (text == spec)
        snprintf(err, LG_ERRLEN, "%s (seconds; memcached reads over 30 days as a date)", why);
    else
        snprintf(err, LG_ERRLEN, "'%s': TTL %s (seconds; memcached reads over 30 days as a date)", spec, why);
    return -1;
}

int lg_ttl_parse(const char *spec, lg_ttl *t, char *err)
{
    char kind[16], why[LG_ERRLEN], frac[64];
    const char *rest = lg_split_kind(spec, kind, sizeof(kind)), *colon;

    t->fraction = 1;
    if (!rest)
        return ttl_secs(spec, spec, 0, &t->secs, err);
    colon = strchr(rest, ':');
    if (strcmp(kind, "mix") != 0 || !colon || (size_t)(colon - rest) >= sizeof(frac)) {
        snprintf(err, LG_ERRLEN, "bad TTL '%s': want N (seconds) or mix:FRACTION:N", spec);
        return -1;
    }
    memcpy(frac, rest, (size_t)(colon - rest));
    frac[colon - rest] = '\0';
    if (lg_parse_double(frac, 0, 1, &t->fraction, why) < 0) {
        snprintf(err, LG_ERRLEN, "'%s': fraction %s", spec, why);
        return -1;
    }
    return ttl_secs(spec, colon + 1, 1, &t->secs, err);
}

uint32_t lg_key_ttl(const lg_workload *w, uint64_t idx)
{
    lg_rng r;

    if (w->ttl.secs == 0 || w->ttl.fraction >= 1)
        return w->ttl.secs;
    lg_rng_seed(&r, w->seed ^ 0x74746c, idx);
    return lg_rng_uniform(&r) < w->ttl.fraction ? w->ttl.secs : 0;
}

/* ---- stream ----------------------------------------------------------- */

uint32_t lg_stream_key(const lg_workload *w, uint64_t j, unsigned thread, unsigned threads)
{
    uint64_t span = ((uint64_t)1 << 32) - w->keys;

    return (uint32_t)(w->keys + (j * threads + thread) % span);
}
