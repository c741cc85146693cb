/* SPDX-License-Identifier: BSD-3-Clause */
/* Arrival processes: gap shapes, bounded Pareto maths, rate traces and
 * the per-stream schedule. */
#define _GNU_SOURCE
#include "arrival.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* ---- bounded Pareto ------------------------------------------------ */

/* Integral of r^p over [1, R]. */
static double power_integral(double p, double R)
{
    if (fabs(p + 1) < 1e-12)
        return log(R);
    return (pow(R, p + 1) - 1) / (p + 1);
}

/* Computed on x/lo, so lo^alpha never overflows for ns-scale bounds. */
double lg_bpareto_moment(double alpha, double lo, double hi, int k)
{
    double R = hi / lo;
    double norm = alpha / (1 - pow(R, -alpha));

    return pow(lo, k) * norm * power_integral(k - 1 - alpha, R);
}

double lg_bpareto_cv2(double alpha, double lo, double hi)
{
    double m1 = lg_bpareto_moment(alpha, lo, hi, 1);
    double m2 = lg_bpareto_moment(alpha, lo, hi, 2);

    return (m2 - m1 * m1) / (m1 * m1);
}

double lg_bpareto_draw(lg_rng *r, double alpha, double lo, double hi)
{
    /* Inverse of F(x) = (1 - (lo/x)^a) / (1 - (lo/hi)^a). */
    double u = lg_rng_uniform(r);
    double x = lo * pow(1 - u * (1 - pow(lo / hi, alpha)), -1 / alpha);

    /* Rounding can land a hair outside; the bound is part of the contract. */
    return x < lo ? lo : x > hi ? hi : x;
}

#define ALPHA_MIN 0.02
#define ALPHA_MAX 50.0

/* C^2 rises from log-uniform (alpha -> 0) to a peak near alpha = 1 and
 * falls to 0 as alpha grows: find the peak on a log grid. */
static double alpha_of_peak(double lo, double hi)
{
    double best = ALPHA_MIN, best_cv2 = 0, a;

    for (a = ALPHA_MIN; a <= ALPHA_MAX; a *= 1.01) {
        double c = lg_bpareto_cv2(a, lo, hi);

        if (c > best_cv2) {
            best_cv2 = c;
            best = a;
        }
    }
    return best;
}

int lg_bpareto_alpha_for_cv2(double cv2, double lo, double hi, double *alpha, char *err)
{
    double a = alpha_of_peak(lo, hi), b = ALPHA_MAX;
    double top = lg_bpareto_cv2(a, lo, hi), bottom = lg_bpareto_cv2(b, lo, hi);
    int i;

    if (cv2 > top || cv2 < bottom) {
        snprintf(err, LG_ERRLEN, "C^2 %g is outside what a bounded Pareto on [%g ns, %g ns] reaches (%.3g to %.4g)",
                 cv2, lo, hi, bottom, top);
        return -1;
    }
    /* On [peak, ALPHA_MAX] C^2 decreases: bisect. Of the two alphas with
     * this C^2 we take the larger, the one with a finite-mean Pareto tail. */
    for (i = 0; i < 200; i++) {
        double mid = (a + b) / 2;

        if (lg_bpareto_cv2(mid, lo, hi) > cv2)
            a = mid;
        else
            b = mid;
    }
    *alpha = (a + b) / 2;
    return 0;
}

/* ---- arrival specs ------------------------------------------------- */

static int parse_time_setting(const char *list, const char *key, double *out, char *err)
{
    static const char *const keys[] = { "alpha", "cv2", "lo", "hi", NULL };
    char val[64], why[LG_ERRLEN];
    int found = lg_kv_get(list, key, val, sizeof(val), keys, err);

    if (found <= 0)
        return found;
    if (lg_parse_time_ns(val, 1, out, why) < 0) {
        snprintf(err, LG_ERRLEN, "pareto %s: %s", key, why);
        return -1;
    }
    return 1;
}

static int parse_number_setting(const char *list, const char *key, double *out, char *err)
{
    static const char *const keys[] = { "alpha", "cv2", "lo", "hi", NULL };
    char val[64], why[LG_ERRLEN];
    int found = lg_kv_get(list, key, val, sizeof(val), keys, err);

    if (found <= 0)
        return found;
    if (lg_parse_double(val, 1e-9, 1e9, out, why) < 0) {
        snprintf(err, LG_ERRLEN, "pareto %s: %s", key, why);
        return -1;
    }
    return 1;
}

static int parse_pareto(const char *list, lg_arrival *a, char *err)
{
    double cv2 = 0;
    int has_alpha, has_cv2;

    a->kind = LG_ARRIVAL_PARETO;
    a->lo_ns = LG_PARETO_LO_NS;
    a->hi_ns = LG_PARETO_HI_NS;
    if (!list) {
        snprintf(err, LG_ERRLEN, "pareto needs alpha=A or cv2=C, e.g. 'pareto:cv2=10'");
        return -1;
    }
    if ((has_alpha = parse_number_setting(list, "alpha", &a->alpha, err)) < 0 ||
        (has_cv2 = parse_number_setting(list, "cv2", &cv2, err)) < 0 ||
        parse_time_setting(list, "lo", &a->lo_ns, err) < 0 ||
        parse_time_setting(list, "hi", &a->hi_ns, err) < 0)
        return -1;
    if (has_alpha == has_cv2) {
        snprintf(err, LG_ERRLEN, "'pareto:%s': give exactly one of alpha= and cv2=", list);
        return -1;
    }
    /* Beyond ALPHA_MAX every draw is lo to within rounding, and the
     * moments, once scaled to the rate, stop being finite (fuzzing found
     * alpha=239508947). */
    if (has_alpha && a->alpha > ALPHA_MAX) {
        snprintf(err, LG_ERRLEN, "'pareto:%s': alpha %g is above %g", list, a->alpha, ALPHA_MAX);
        return -1;
    }
    if (!(a->lo_ns > 0 && a->hi_ns > a->lo_ns)) {
        snprintf(err, LG_ERRLEN, "'pareto:%s': need 0 < lo < hi", list);
        return -1;
    }
    /* The moments grow like (hi/lo)^2: past this ratio they overflow a
     * double for some alpha (lo=1e-299 made C^2 NaN; found by fuzzing). */
    if (a->hi_ns / a->lo_ns > LG_PARETO_MAX_RANGE) {
        snprintf(err, LG_ERRLEN, "'pareto:%s': hi/lo is %g, at most %g", list, a->hi_ns / a->lo_ns,
                 LG_PARETO_MAX_RANGE);
        return -1;
    }
    if (has_cv2 && lg_bpareto_alpha_for_cv2(cv2, a->lo_ns, a->hi_ns, &a->alpha, err) < 0)
        return -1;
    if (!isfinite(lg_arrival_cv2(a)) || !(lg_bpareto_moment(a->alpha, a->lo_ns, a->hi_ns, 1) > 0)) {
        snprintf(err, LG_ERRLEN, "'pareto:%s': alpha %g on this range has no usable mean and C^2",
                 list, a->alpha);
        return -1;
    }
    return 0;
}

int lg_arrival_parse(const char *spec, lg_arrival *a, char *err)
{
    char kind[16];
    const char *rest = lg_split_kind(spec, kind, sizeof(kind));

    memset(a, 0, sizeof(*a));
    if (strcmp(kind, "pareto") == 0)
        return parse_pareto(rest, a, err);
    if (rest == NULL && strcmp(kind, "det") == 0) {
        a->kind = LG_ARRIVAL_DET;
        return 0;
    }
    if (rest == NULL && strcmp(kind, "exp") == 0) {
        a->kind = LG_ARRIVAL_EXP;
        return 0;
    }
    snprintf(err, LG_ERRLEN, "unknown arrival process '%s' (det, exp, pareto:alpha=A or pareto:cv2=C)", spec);
    return -1;
}

double lg_arrival_cv2(const lg_arrival *a)
{
    switch (a->kind) {
    case LG_ARRIVAL_DET: return 0;
    case LG_ARRIVAL_EXP: return 1;
    case LG_ARRIVAL_PARETO: return lg_bpareto_cv2(a->alpha, a->lo_ns, a->hi_ns);
    }
    return 0;
}

double lg_arrival_unit_gap(const lg_arrival *a, lg_rng *r)
{
    switch (a->kind) {
    case LG_ARRIVAL_DET:
        return 1;
    case LG_ARRIVAL_EXP:
        return -log(lg_rng_uniform(r));
    case LG_ARRIVAL_PARETO:
        return lg_bpareto_draw(r, a->alpha, a->lo_ns, a->hi_ns) /
               lg_bpareto_moment(a->alpha, a->lo_ns, a->hi_ns, 1);
    }
    return 1;
}

/* ---- rate traces --------------------------------------------------- */

static int trace_alloc(lg_trace *t, size_t n)
{
    t->t_ns = calloc(n, sizeof(double));
    t->rate = calloc(n, sizeof(double));
    t->n = 0;
    return t->t_ns && t->rate ? 0 : -1;
}

void lg_trace_free(lg_trace *t)
{
    free(t->t_ns);
    free(t->rate);
    memset(t, 0, sizeof(*t));
}

static int trace_add_line(lg_trace *t, size_t *cap, const char *path, unsigned lineno,
                          char *line, char *err)
{
    char *comma = strchr(line, ','), why[LG_ERRLEN];
    double sec, rate;

    if (!comma) {
        snprintf(err, LG_ERRLEN, "%s:%u: expected 'seconds,rate', got '%s'", path, lineno, line);
        return -1;
    }
    *comma = '\0';
    if (lg_parse_double(line, 0, 1e9, &sec, why) < 0 ||
        lg_parse_double(comma + 1, 0, 1e9, &rate, why) < 0) {
        snprintf(err, LG_ERRLEN, "%s:%u: %s", path, lineno, why);
        return -1;
    }
    if ((t->n == 0 && sec != 0) || (t->n > 0 && sec * 1e9 <= t->t_ns[t->n - 1])) {
        snprintf(err, LG_ERRLEN, "%s:%u: time %g s: steps must start at 0 and increase", path, lineno, sec);
        return -1;
    }
    if (t->n == *cap) {
        *cap *= 2;
        t->t_ns = realloc(t->t_ns, *cap * sizeof(double));
        t->rate = realloc(t->rate, *cap * sizeof(double));
        if (!t->t_ns || !t->rate) {
            snprintf(err, LG_ERRLEN, "%s: out of memory", path);
            return -1;
        }
    }
    t->t_ns[t->n] = sec * 1e9;
    t->rate[t->n++] = rate;
    return 0;
}

static void chomp(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

int lg_trace_load(const char *path, lg_trace *t, char *err)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t cap = 16;
    unsigned lineno = 0;
    int rc = 0;

    if (!f) {
        snprintf(err, LG_ERRLEN, "cannot open trace '%s': %m", path);
        return -1;
    }
    if (trace_alloc(t, cap) < 0) {
        fclose(f);
        snprintf(err, LG_ERRLEN, "%s: out of memory", path);
        return -1;
    }
    while (rc == 0) {
        const char *why;
        int got = lg_read_line(f, line, sizeof(line), &why);

        if (got == 0)
            break;
        lineno++;
        if (got < 0) {
            snprintf(err, LG_ERRLEN, "%s:%u: %s", path, lineno, why);
            rc = -1;
            break;
        }
        chomp(line);
        if (line[0] != '\0' && line[0] != '#')
            rc = trace_add_line(t, &cap, path, lineno, line, err);
    }
    fclose(f);
    if (rc == 0 && t->n == 0) {
        snprintf(err, LG_ERRLEN, "trace '%s' has no 'seconds,rate' lines", path);
        rc = -1;
    }
    if (rc < 0)
        lg_trace_free(t);
    return rc;
}

/* Stylised daily shapes with the Facebook traces' peak/min ratio of
 * about 2 (hourly multipliers, normalised to a mean of 1 below): "etc" a
 * smooth sinusoid, "var" a flat night and a broad day plateau, "app" two
 * peaks, morning and evening. They are shapes, not the traces. */
static const double shape_etc[24] = {
    1.00, 1.02, 1.07, 1.15, 1.25, 1.37, 1.50, 1.63, 1.75, 1.85, 1.93, 1.98,
    2.00, 1.98, 1.93, 1.85, 1.75, 1.63, 1.50, 1.37, 1.25, 1.15, 1.07, 1.02,
};
static const double shape_var[24] = {
    1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.2, 1.5, 1.8, 2.0, 2.0, 2.0,
    2.0, 2.0, 2.0, 2.0, 1.9, 1.8, 1.6, 1.4, 1.2, 1.1, 1.0, 1.0,
};
static const double shape_app[24] = {
    1.2, 1.1, 1.0, 1.0, 1.0, 1.1, 1.3, 1.6, 1.9, 2.0, 1.8, 1.6,
    1.5, 1.5, 1.6, 1.8, 2.0, 1.9, 1.7, 1.5, 1.4, 1.3, 1.2, 1.2,
};

int lg_trace_shape(const char *name, double mean_rate, double span_ns, lg_trace *t, char *err)
{
    const double *shape = strcmp(name, "etc") == 0 ? shape_etc :
                          strcmp(name, "var") == 0 ? shape_var :
                          strcmp(name, "app") == 0 ? shape_app : NULL;
    double sum = 0;
    size_t i;

    if (!shape) {
        snprintf(err, LG_ERRLEN, "unknown rate shape '%s' (var, app or etc)", name);
        return -1;
    }
    if (trace_alloc(t, 24) < 0) {
        snprintf(err, LG_ERRLEN, "out of memory");
        return -1;
    }
    for (i = 0; i < 24; i++)
        sum += shape[i];
    for (i = 0; i < 24; i++) {
        t->t_ns[i] = span_ns * (double)i / 24;
        t->rate[i] = mean_rate * shape[i] * 24 / sum;
    }
    t->n = 24;
    return 0;
}

double lg_trace_mean_rate(const lg_trace *t, double span_ns)
{
    double area = 0;
    size_t i;

    for (i = 0; i < t->n && t->t_ns[i] < span_ns; i++) {
        double end = i + 1 < t->n && t->t_ns[i + 1] < span_ns ? t->t_ns[i + 1] : span_ns;

        area += t->rate[i] * (end - t->t_ns[i]);
    }
    return span_ns > 0 ? area / span_ns : 0;
}

/* ---- schedule ------------------------------------------------------ */

/* Rate of this stream at its current step, and where that step ends. */
static double stream_rate(const lg_schedule *s, double *step_end_ns)
{
    if (!s->trace) {
        *step_end_ns = INFINITY;
        return s->rate;
    }
    *step_end_ns = s->step + 1 < s->trace->n ? s->origin_ns + s->trace->t_ns[s->step + 1] : INFINITY;
    return s->trace->rate[s->step] * s->share;
}

/* Move next_ns forward by `units` expected arrivals of the (possibly
 * stepping) rate: the integrated-rate time change. */
static void advance(lg_schedule *s, double units)
{
    while (isfinite(s->next_ns)) {
        double end, rate = stream_rate(s, &end);
        double room = rate * (end - s->next_ns) / 1e9;

        if (rate > 0 && units <= room) {
            s->next_ns += units / rate * 1e9;
            return;
        }
        units -= rate > 0 ? room : 0;
        s->next_ns = end;
        s->step++;
    }
}

void lg_schedule_init(lg_schedule *s, const lg_arrival *a, double rate,
                      const lg_trace *trace, double share, double origin_ns,
                      double start_ns, uint64_t seed, uint64_t stream)
{
    memset(s, 0, sizeof(*s));
    s->arrival = a;
    s->trace = trace;
    s->rate = rate;
    s->share = share;
    s->origin_ns = origin_ns;
    s->next_ns = start_ns;
    lg_rng_seed(&s->rng, seed, stream);
    /* Find the step holding start_ns (times before the origin use step 0). */
    while (trace && s->step + 1 < trace->n && start_ns >= origin_ns + trace->t_ns[s->step + 1])
        s->step++;
    advance(s, lg_rng_uniform(&s->rng) * lg_arrival_unit_gap(a, &s->rng));
}

uint64_t lg_schedule_next(lg_schedule *s)
{
    double now = s->next_ns;

    /* A tiny trace rate (say 1e-12 req/s) puts the next send past the
     * year 2554: as good as never, and not convertible to uint64_t. */
    if (!(now < 0x1p64))
        return UINT64_MAX;
    advance(s, lg_arrival_unit_gap(s->arrival, &s->rng));
    return (uint64_t)now;
}
