/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen arrival processes: sample moments against theory over 1e6
 * draws, bounded Pareto bounds, C^2 targeting, spec errors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "arrival.h"
#include "parse.h"

#define DRAWS 1000000

typedef struct {
    double mean, cv2, min, max;
} sample;

static sample draw_gaps(const lg_arrival *a, uint64_t seed)
{
    sample s = { 0, 0, INFINITY, 0 };
    double sum = 0, sum2 = 0;
    lg_rng r;
    int i;

    lg_rng_seed(&r, seed, 0);
    for (i = 0; i < DRAWS; i++) {
        double x = lg_arrival_unit_gap(a, &r);

        sum += x;
        sum2 += x * x;
        s.min = fmin(s.min, x);
        s.max = fmax(s.max, x);
    }
    s.mean = sum / DRAWS;
    s.cv2 = (sum2 / DRAWS - s.mean * s.mean) / (s.mean * s.mean);
    return s;
}

static lg_arrival parse_ok(const char *spec)
{
    char err[LG_ERRLEN] = "";
    lg_arrival a;

    cr_assert_eq(lg_arrival_parse(spec, &a, err), 0, "'%s': %s", spec, err);
    return a;
}

Test(arrival, deterministic_is_exactly_one)
{
    lg_arrival a = parse_ok("det");
    sample s = draw_gaps(&a, 1);

    cr_assert_eq(s.min, 1.0);
    cr_assert_eq(s.max, 1.0);
    cr_assert_eq(lg_arrival_cv2(&a), 0.0);
}

Test(arrival, exponential_mean_and_cv2)
{
    lg_arrival a = parse_ok("exp");
    sample s = draw_gaps(&a, 2);

    /* Standard errors: mean 0.1%, C^2 about 0.45%. */
    cr_assert(fabs(s.mean - 1) < 0.005, "mean %g", s.mean);
    cr_assert(fabs(s.cv2 - 1) < 0.02, "C^2 %g", s.cv2);
    cr_assert(s.min > 0);
}

Test(arrival, bounded_pareto_by_alpha_matches_theory)
{
    /* A range narrow enough that the fourth moment, and so the error of
     * the sample C^2, stays small (about 1%). */
    double lo = 1, hi = 100, alpha = 1.5;
    double m1 = lg_bpareto_moment(alpha, lo, hi, 1), cv2 = lg_bpareto_cv2(alpha, lo, hi);
    double sum = 0, sum2 = 0, mn = INFINITY, mx = 0;
    lg_rng r;
    int i;

    lg_rng_seed(&r, 3, 0);
    for (i = 0; i < DRAWS; i++) {
        double x = lg_bpareto_draw(&r, alpha, lo, hi);

        sum += x;
        sum2 += x * x;
        mn = fmin(mn, x);
        mx = fmax(mx, x);
    }
    sum /= DRAWS;
    cr_assert(mn >= lo && mx <= hi, "left [%g, %g]: min %g max %g", lo, hi, mn, mx);
    cr_assert(fabs(sum / m1 - 1) < 0.01, "mean %g, theory %g", sum, m1);
    cr_assert(fabs((sum2 / DRAWS - sum * sum) / (sum * sum) / cv2 - 1) < 0.05, "C^2 theory %g", cv2);
}

Test(arrival, bounded_pareto_theory_against_integration)
{
    /* E[X] and E[X^2] by a midpoint sum over the density, on a log grid. */
    double alpha = 1.2, lo = 5e3, hi = 1e8, norm = alpha * pow(lo, alpha) / (1 - pow(lo / hi, alpha));
    double m1 = 0, m2 = 0, step = log(hi / lo) / 200000;
    int i;

    for (i = 0; i < 200000; i++) {
        double x = lo * exp((i + 0.5) * step), dx = x * step, f = norm * pow(x, -alpha - 1);

        m1 += x * f * dx;
        m2 += x * x * f * dx;
    }
    cr_assert(fabs(m1 / lg_bpareto_moment(alpha, lo, hi, 1) - 1) < 1e-6);
    cr_assert(fabs(m2 / lg_bpareto_moment(alpha, lo, hi, 2) - 1) < 1e-6);
}

Test(arrival, pareto_by_cv2_hits_target_and_stays_in_range)
{
    static const double targets[] = { 0.5, 1, 4, 10, 50 };
    size_t t;

    for (t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        char spec[64];
        lg_arrival a;
        sample s;

        snprintf(spec, sizeof(spec), "pareto:cv2=%g", targets[t]);
        a = parse_ok(spec);
        cr_assert_eq(a.lo_ns, 5e3, "default range is the paper's 5us..100ms");
        cr_assert_eq(a.hi_ns, 1e8);
        cr_assert(fabs(lg_arrival_cv2(&a) / targets[t] - 1) < 1e-6, "C^2 %g for target %g",
                  lg_arrival_cv2(&a), targets[t]);
        s = draw_gaps(&a, 4 + t);
        /* Unit-mean draws are the [lo, hi] draws divided by their mean. */
        cr_assert(s.min >= a.lo_ns / lg_bpareto_moment(a.alpha, a.lo_ns, a.hi_ns, 1) - 1e-12);
        cr_assert(s.max <= a.hi_ns / lg_bpareto_moment(a.alpha, a.lo_ns, a.hi_ns, 1) + 1e-12);
        /* The mean's standard error is sqrt(C^2 / n): at most 0.7% here. */
        cr_assert(fabs(s.mean - 1) < 0.03, "target %g: mean %g", targets[t], s.mean);
    }
}

Test(arrival, pareto_by_cv2_sample_cv2_narrow_range)
{
    lg_arrival a = parse_ok("pareto:cv2=2,lo=1us,hi=200us");
    sample s = draw_gaps(&a, 9);

    cr_assert(fabs(s.cv2 / 2 - 1) < 0.05, "sample C^2 %g", s.cv2);
    cr_assert(fabs(s.mean - 1) < 0.01, "mean %g", s.mean);
}

Test(arrival, bad_specs_name_the_value)
{
    static const char *const bad[][2] = {
        { "poisson", "'poisson'" },
        { "pareto", "alpha=" },
        { "pareto:alpha=1.5,cv2=3", "exactly one" },
        { "pareto:cv2=1000", "1000" },
        { "pareto:cv2=abc", "'abc'" },
        { "pareto:alpha=2,lo=1ms,hi=1us", "lo < hi" },
        { "pareto:alpha=2,lo=5parsecs", "5parsecs" },
        { "pareto:beta=2", "beta=2" },
        { "det:1", "det:1" },
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[LG_ERRLEN] = "";
        lg_arrival a;

        cr_assert_eq(lg_arrival_parse(bad[i][0], &a, err), -1, "'%s' accepted", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]), "'%s': message '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
    }
}
