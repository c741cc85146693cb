/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen workload: popularity shapes, size distributions, key names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "parse.h"
#include "workload.h"

#define DRAWS 1000000

static lg_popularity pop_ok(const char *spec, uint64_t n)
{
    char err[LG_ERRLEN] = "";
    lg_popularity p;

    cr_assert_eq(lg_pop_parse(spec, &p, err), 0, "'%s': %s", spec, err);
    cr_assert_eq(lg_pop_init(&p, n, err), 0, "%s", err);
    return p;
}

static uint64_t *histogram(const lg_popularity *p, uint64_t seed)
{
    uint64_t *count = calloc(p->n, sizeof(*count));
    lg_rng r;

    lg_rng_seed(&r, seed, 0);
    for (int i = 0; i < DRAWS; i++) {
        uint64_t k = lg_pop_draw(p, &r);

        cr_assert(k < p->n);
        count[k]++;
    }
    return count;
}

/* Binomial count within 5 standard deviations of n*p. */
static void assert_count(uint64_t got, double prob, const char *what)
{
    double mean = DRAWS * prob, sd = sqrt(DRAWS * prob * (1 - prob));

    cr_assert(fabs((double)got - mean) <= 5 * sd + 1, "%s: %llu, expected %.1f (sd %.1f)", what,
              (unsigned long long)got, mean, sd);
}

Test(popularity, uniform_is_flat)
{
    lg_popularity p = pop_ok("uniform", 10);
    uint64_t *c = histogram(&p, 1);

    for (int k = 0; k < 10; k++)
        assert_count(c[k], 0.1, "uniform key");
    free(c);
}

Test(popularity, zipf_follows_power_law)
{
    static const int ranks[] = { 0, 1, 2, 9, 99, 999 };
    lg_popularity p = pop_ok("zipf:0.99", 1000);
    uint64_t *c = histogram(&p, 2);
    double h = 0;

    for (int k = 1; k <= 1000; k++)
        h += pow(k, -0.99);
    for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++)
        assert_count(c[ranks[i]], pow(ranks[i] + 1, -0.99) / h, "zipf rank");
    cr_assert(c[0] > c[1] && c[1] > c[9] && c[9] > c[999]);
    free(c);
    lg_pop_free(&p);
}

Test(popularity, gpareto_follows_truncated_cdf)
{
    /* ranks = floor(X), X ~ GPD(scale 0.01*n, shape 0.5) truncated to [0, n) */
    static const double at[] = { 1, 10, 100, 1000 };
    lg_popularity p = pop_ok("gpareto:scale=0.01,shape=0.5", 10000);
    uint64_t *c = histogram(&p, 3), below = 0;
    double sigma = 0.01 * 10000;
    size_t next = 0;

#define GPD_CDF(x) (1 - pow(1 + 0.5 * (x) / sigma, -1 / 0.5))
    for (uint64_t k = 0; k < p.n && next < 4; k++) {
        if ((double)k == at[next]) {
            assert_count(below, GPD_CDF(at[next]) / GPD_CDF(10000.0), "gpareto P(rank < r)");
            next++;
        }
        below += c[k];
    }
#undef GPD_CDF
    cr_assert_eq(next, 4);
    free(c);
}

Test(popularity, bad_specs_name_the_value)
{
    static const char *const bad[][2] = {
        { "zipf", "'zipf'" }, { "zipf:-1", "'-1'" }, { "gpareto:scale=1", "shape=" },
        { "gpareto:scale=0,shape=1", "scale 0" }, { "lognormal", "'lognormal'" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[LG_ERRLEN] = "";
        lg_popularity p;

        cr_assert_eq(lg_pop_parse(bad[i][0], &p, err), -1, "'%s' accepted", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]), "'%s': '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
    }
}

static lg_size size_ok(const char *spec, int is_key)
{
    char err[LG_ERRLEN] = "";
    lg_size s;

    cr_assert_eq(lg_size_parse(spec, is_key, &s, err), 0, "'%s': %s", spec, err);
    return s;
}

static double mean_size(const lg_size *s, uint32_t *lo, uint32_t *hi)
{
    double sum = 0;
    lg_rng r;

    lg_rng_seed(&r, 5, 0);
    *lo = UINT32_MAX;
    *hi = 0;
    for (int i = 0; i < DRAWS; i++) {
        uint32_t x = lg_size_draw(s, &r);

        sum += x;
        *lo = x < *lo ? x : *lo;
        *hi = x > *hi ? x : *hi;
    }
    return sum / DRAWS;
}

Test(sizes, fixed_uniform_and_etc)
{
    lg_size fixed = size_ok("100", 0), uni = size_ok("uniform:10-20", 0), etc = size_ok("etc", 0);
    uint32_t lo, hi;
    double m;

    m = mean_size(&fixed, &lo, &hi);
    cr_assert(lo == 100 && hi == 100 && m == 100);
    m = mean_size(&uni, &lo, &hi);
    cr_assert(lo == 10 && hi == 20 && fabs(m - 15) < 0.05, "uniform %u..%u mean %g", lo, hi, m);
    /* ETC values: GPareto(0, 214.476, 0.348238), mean sigma / (1 - xi),
     * give or take rounding to whole bytes. */
    m = mean_size(&etc, &lo, &hi);
    cr_assert(fabs(m / (214.476 / (1 - 0.348238)) - 1) < 0.02, "etc value mean %g", m);
}

Test(sizes, bad_specs)
{
    static const char *const bad[][2] = {
        { "uniform:20-10", "'10'" }, { "uniform:5", "uniform:MIN-MAX" }, { "-3", "'-3'" },
        { "gpareto:loc=0,scale=1", "shape=" }, { "big", "'big'" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[LG_ERRLEN] = "";
        lg_size s;

        cr_assert_eq(lg_size_parse(bad[i][0], 0, &s, err), -1, "'%s' accepted", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]), "'%s': '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
    }
}

Test(keys, names_are_unique_sized_and_stable)
{
    lg_workload w = { .keys = 1000, .seed = 9 };
    char a[LG_MAX_KEY + 1], b[LG_MAX_KEY + 1];

    w.key_size = size_ok("30", 1);
    w.value_size = size_ok("etc", 0);
    for (uint64_t i = 0; i < 1000; i++) {
        cr_assert_eq(lg_key_name(&w, i, a), 30);
        cr_assert_eq(strlen(a), 30);
        lg_key_name(&w, i, b);
        cr_assert_str_eq(a, b);
        cr_assert_eq(lg_value_size(&w, i), lg_value_size(&w, i), "value size must be per key");
        if (i > 0) {
            lg_key_name(&w, i - 1, b);
            cr_assert_str_neq(a, b);
        }
    }
}

static lg_ttl ttl_ok(const char *spec)
{
    char err[LG_ERRLEN] = "";
    lg_ttl t;

    cr_assert_eq(lg_ttl_parse(spec, &t, err), 0, "'%s': %s", spec, err);
    return t;
}

Test(ttl, fixed_and_never)
{
    lg_workload w = { .keys = 1000, .seed = 3 };

    w.ttl = ttl_ok("7");
    for (uint64_t i = 0; i < 1000; i++)
        cr_assert_eq(lg_key_ttl(&w, i), 7);
    w.ttl = ttl_ok("0");
    for (uint64_t i = 0; i < 1000; i++)
        cr_assert_eq(lg_key_ttl(&w, i), 0);
    w.ttl = ttl_ok("2592000");
    cr_assert_eq(lg_key_ttl(&w, 5), 2592000);
}

Test(ttl, mix_is_per_key_with_the_fraction_asked)
{
    lg_workload w = { .keys = DRAWS, .seed = 3 };
    uint64_t with = 0;

    w.ttl = ttl_ok("mix:0.25:30");
    for (uint64_t i = 0; i < DRAWS; i++) {
        uint32_t t = lg_key_ttl(&w, i);

        cr_assert(t == 0 || t == 30, "key %llu got TTL %u", (unsigned long long)i, t);
        cr_assert_eq(lg_key_ttl(&w, i), t, "a key's TTL must not change between sets");
        with += t == 30;
    }
    assert_count(with, 0.25, "keys with a TTL");
    w.ttl = ttl_ok("mix:0:30");
    cr_assert_eq(lg_key_ttl(&w, 1), 0);
    w.ttl = ttl_ok("mix:1:30");
    cr_assert_eq(lg_key_ttl(&w, 1), 30);
}

Test(ttl, bad_specs_name_the_value)
{
    static const char *const bad[][2] = {
        { "-1", "'-1'" }, { "2592001", "'2592001' is out of range" }, { "", "''" }, { "5s", "'5s'" },
        { "mix:0.5", "want N (seconds) or mix:FRACTION:N" }, { "mix:1.5:3", "fraction '1.5'" },
        { "mix:0.5:0", "'0' is out of range [1," }, { "mix::3", "fraction ''" },
        { "mix:0.5:", "TTL ''" }, { "max:0.5:3", "'max:0.5:3'" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[LG_ERRLEN] = "";
        lg_ttl t;

        cr_assert_eq(lg_ttl_parse(bad[i][0], &t, err), -1, "'%s' accepted", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]), "'%s': '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
    }
}

/* lg_key_name formats by hand for speed; it must name keys exactly as
 * "k%0*llu" (width: key size - 1, at least 1) cut to LG_MAX_KEY would. */
Test(keys, names_match_the_printf_format)
{
    static const char *const sizes[] = { "1", "2", "5", "30", "250", "uniform:1-250" };
    static const uint64_t idx[] = { 0, 7, 10, 99999, 123456789, 18446744073709551615ULL };
    char got[LG_MAX_KEY + 1], want[512];

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        lg_workload w = { .keys = 1000, .seed = 3 };

        w.key_size = size_ok(sizes[s], 1);
        for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]) + 1000; i++) {
            uint64_t k = i < sizeof(idx) / sizeof(idx[0]) ? idx[i] : i * 7919;
            lg_rng r;
            uint32_t len;
            int n;

            lg_rng_seed(&r, w.seed ^ 0x6b6579, k);
            len = lg_size_draw(&w.key_size, &r);
            n = snprintf(want, sizeof(want), "k%0*llu", len > 1 ? (int)len - 1 : 1, (unsigned long long)k);
            want[n > LG_MAX_KEY ? LG_MAX_KEY : n] = '\0';
            cr_assert_eq(lg_key_name(&w, k, got), strlen(want), "size %s key %llu", sizes[s],
                         (unsigned long long)k);
            cr_assert_str_eq(got, want, "size %s key %llu", sizes[s], (unsigned long long)k);
        }
    }
}

/* Zipf's table takes 8 bytes a key: a key count past the cap is refused
 * with its value named, before anything is allocated (the fuzzer once
 * asked for 645,555,003 keys: a 5 GB table). */
Test(popularity, zipf_refuses_more_keys_than_its_table_may_hold)
{
    char err[LG_ERRLEN] = "";
    lg_popularity p;

    cr_assert_eq(lg_pop_parse("zipf:0.9", &p, err), 0, "%s", err);
    cr_assert_eq(lg_pop_init(&p, (uint64_t)LG_MAX_ZIPF_KEYS + 1, err), -1);
    cr_assert(strstr(err, "134217729") != NULL, "%s", err);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* Stream keys: past the key set, never one twice (across threads too),
 * and the wrap keeps them inside [keys, 2^32). */
Test(stream, keys_are_new_and_distinct)
{
    lg_workload w = { .keys = 1000 };
    enum { THREADS = 3, PER_THREAD = 5000 };
    uint32_t *seen = malloc(THREADS * PER_THREAD * sizeof(*seen));
    size_t n = 0;

    for (unsigned t = 0; t < THREADS; t++)
        for (uint64_t j = 0; j < PER_THREAD; j++) {
            uint32_t k = lg_stream_key(&w, j, t, THREADS);

            cr_assert(k >= w.keys, "stream key %u inside the key set", k);
            seen[n++] = k;
        }
    cr_assert_eq(lg_stream_key(&w, 0, 0, THREADS), 1000, "the first stream key follows the key set");
    cr_assert_eq(lg_stream_key(&w, 1, 2, THREADS), 1005);
    qsort(seen, n, sizeof(*seen), cmp_u32);
    for (size_t i = 1; i < n; i++)
        cr_assert_neq(seen[i - 1], seen[i], "stream key %u named twice", seen[i]);
    free(seen);
}

Test(stream, wraps_past_the_key_set)
{
    lg_workload w = { .keys = 0x7fffffffu };
    uint64_t span = ((uint64_t)1 << 32) - w.keys;

    cr_assert_eq(lg_stream_key(&w, span - 1, 0, 1), 0xffffffffu, "the last 32-bit index");
    cr_assert_eq(lg_stream_key(&w, span, 0, 1), w.keys, "then round to the first stream key");
}
