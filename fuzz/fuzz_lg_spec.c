/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the load generator's value and spec parsers, and what
 * a run does with a spec they accepted.
 *
 * The first byte picks the parser, the rest is the text (cut at the first
 * NUL, as a command-line argument would be). A refusal must leave a
 * NUL-terminated reason (it may quote a newline from the value; the
 * command line shows that as '?', see fuzz_lg_options). An accepted spec is then used as a run
 * uses it, and its results must make sense: arrival gaps finite and
 * positive, sizes within the distribution's bounds, popularity draws among
 * the items, TTLs 0 or the one asked for, numbers within the range asked for.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrival.h"
#include "parse.h"
#include "workload.h"

#define DRAWS 64

static void check(int ok, const char *what, const char *spec)
{
    if (!ok) {
        fprintf(stderr, "fuzz_lg_spec: %s for '%s'\n", what, spec);
        abort();
    }
}

static void check_reason(const char *err, const char *spec)
{
    size_t n = strnlen(err, LG_ERRLEN);

    check(n > 0 && n < LG_ERRLEN, "refused without a reason", spec);
}

static void use_arrival(const char *spec, lg_rng *r)
{
    lg_arrival a;
    char err[LG_ERRLEN] = "";
    int i;

    if (lg_arrival_parse(spec, &a, err) < 0) {
        check_reason(err, spec);
        return;
    }
    check(lg_arrival_cv2(&a) >= 0 && isfinite(lg_arrival_cv2(&a)), "C^2 not a number", spec);
    for (i = 0; i < DRAWS; i++) {
        double gap = lg_arrival_unit_gap(&a, r);

        check(isfinite(gap) && gap >= 0, "gap not finite and >= 0", spec);
    }
}

static void use_size(const char *spec, int is_key, lg_rng *r)
{
    lg_size s;
    char err[LG_ERRLEN] = "";
    int i;

    if (lg_size_parse(spec, is_key, &s, err) < 0) {
        check_reason(err, spec);
        return;
    }
    check(s.min <= s.max && (!is_key || (s.min >= 1 && s.max <= LG_MAX_KEY)), "bad bounds", spec);
    for (i = 0; i < DRAWS; i++) {
        uint32_t x = lg_size_draw(&s, r);

        check(x >= s.min && x <= s.max, "size outside its bounds", spec);
    }
}

/* n, the item count, comes from the input too, kept small: the Zipf
 * table is n doubles. */
static void use_popularity(const char *spec, uint64_t n, lg_rng *r)
{
    lg_popularity p;
    char err[LG_ERRLEN] = "";
    int i;

    memset(&p, 0, sizeof(p));
    if (lg_pop_parse(spec, &p, err) < 0) {
        check_reason(err, spec);
        return;
    }
    check(lg_pop_init(&p, n, err) == 0, "init failed", spec);
    for (i = 0; i < DRAWS; i++)
        check(lg_pop_draw(&p, r) < n, "item outside the key space", spec);
    lg_pop_free(&p);
}

static void use_ttl(const char *spec)
{
    lg_workload w = { .keys = DRAWS, .seed = 1 };
    char err[LG_ERRLEN] = "";
    uint64_t i;

    if (lg_ttl_parse(spec, &w.ttl, err) < 0) {
        check_reason(err, spec);
        return;
    }
    check(w.ttl.secs <= LG_MAX_TTL && w.ttl.fraction >= 0 && w.ttl.fraction <= 1, "TTL out of range", spec);
    for (i = 0; i < DRAWS; i++) {
        uint32_t t = lg_key_ttl(&w, i);

        check(t == 0 || t == w.ttl.secs, "a key's TTL is neither 0 nor the one asked for", spec);
    }
}

static void use_numbers(const char *spec, int which)
{
    char err[LG_ERRLEN] = "";
    uint64_t u;
    double d;

    switch (which) {
    case 0:
        if (lg_parse_u64(spec, 3, 1u << 20, &u, err) == 0)
            check(u >= 3 && u <= (1u << 20), "integer outside its range", spec);
        else
            check_reason(err, spec);
        break;
    case 1:
        if (lg_parse_double(spec, -1.5, 1e6, &d, err) == 0)
            check(isfinite(d) && d >= -1.5 && d <= 1e6, "number outside its range", spec);
        else
            check_reason(err, spec);
        break;
    default:
        if (lg_parse_time_ns(spec, 1e9, &d, err) == 0)
            check(isfinite(d) && d >= 0, "time not finite and >= 0", spec);
        else
            check_reason(err, spec);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec;
    lg_rng r;

    if (size < 2)
        return 0;
    spec = strndup((const char *)data + 2, size - 2);
    if (!spec)
        abort();
    lg_rng_seed(&r, data[1], 0);
    switch (data[0] % 8) {
    case 0: use_arrival(spec, &r); break;
    case 1: use_size(spec, 1, &r); break;
    case 2: use_size(spec, 0, &r); break;
    case 3: use_popularity(spec, 1 + data[1] * 7u, &r); break;
    case 7: use_ttl(spec); break;
    default: use_numbers(spec, data[0] % 8 - 4); break;
    }
    free(spec);
    return 0;
}
