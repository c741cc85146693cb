/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Arrival processes and the send schedule they produce.
 *
 * An arrival process is a distribution of inter-arrival gaps with unit
 * mean (its *shape*: deterministic, exponential or bounded Pareto); the
 * rate turns unit gaps into nanoseconds. Scaling leaves C^2 unchanged, so
 * "bounded Pareto with C^2 = 20 at 50k req/s" is one well-defined process.
 *
 * A rate may vary over time (a trace of rate steps, or a built-in shape).
 * Gaps are then drawn in units of *expected arrivals* and mapped to time
 * through the integrated rate, so a step is honoured exactly at its start
 * even when a long gap straddles it.
 */
#ifndef LG_ARRIVAL_H
#define LG_ARRIVAL_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

typedef enum { LG_ARRIVAL_DET, LG_ARRIVAL_EXP, LG_ARRIVAL_PARETO } lg_arrival_kind;

typedef struct {
    lg_arrival_kind kind;
    /* Bounded Pareto: shape alpha on [lo_ns, hi_ns] before scaling. */
    double alpha, lo_ns, hi_ns;
} lg_arrival;

/* The paper's bounded Pareto range, used when only a C^2 is given. */
#define LG_PARETO_LO_NS 5e3
#define LG_PARETO_HI_NS 1e8
/* Widest hi/lo accepted: the paper's range is 2e4. */
#define LG_PARETO_MAX_RANGE 1e12

/* "det", "exp", "pareto:alpha=A[,lo=T,hi=T]" or "pareto:cv2=C[,lo=T,hi=T]". */
int lg_arrival_parse(const char *spec, lg_arrival *a, char *err);
/* Theoretical squared coefficient of variation of the gaps. */
double lg_arrival_cv2(const lg_arrival *a);
/* One gap with mean 1. */
double lg_arrival_unit_gap(const lg_arrival *a, lg_rng *r);

/* Bounded Pareto on [lo, hi]: E[X^k], C^2, one draw (by inversion), and
 * the alpha >= the C^2-maximising alpha whose C^2 equals `cv2`. */
double lg_bpareto_moment(double alpha, double lo, double hi, int k);
double lg_bpareto_cv2(double alpha, double lo, double hi);
double lg_bpareto_draw(lg_rng *r, double alpha, double lo, double hi);
int lg_bpareto_alpha_for_cv2(double cv2, double lo, double hi, double *alpha, char *err);

/* Piecewise-constant rate: step i holds rate[i] req/s from t_ns[i] on
 * (times relative to the start of measurement; before the first step the
 * first rate applies). */
typedef struct {
    double *t_ns;
    double *rate;
    size_t n;
} lg_trace;

/* A file of "seconds,rate" lines ('#' comments, blank lines allowed),
 * times strictly increasing from 0. */
int lg_trace_load(const char *path, lg_trace *t, char *err);
/* Built-in shapes "var", "app", "etc": 24 equal steps over `span_ns`,
 * peak/min about 2, scaled so the mean rate is `mean_rate`. */
int lg_trace_shape(const char *name, double mean_rate, double span_ns, lg_trace *t, char *err);
void lg_trace_free(lg_trace *t);
double lg_trace_mean_rate(const lg_trace *t, double span_ns);

/* The send times of one stream (one thread). */
typedef struct {
    const lg_arrival *arrival;
    const lg_trace *trace;  /* NULL: constant `rate` */
    double rate;            /* req/s of this stream without a trace */
    double share;           /* this stream's fraction of the trace's rate */
    double origin_ns;       /* absolute time of the trace's t = 0 */
    double next_ns;         /* absolute time of the next arrival */
    size_t step;            /* trace step containing next_ns */
    lg_rng rng;
} lg_schedule;

/* The first arrival is a random fraction of a gap after start_ns, so
 * streams started together do not fire in step. */
void lg_schedule_init(lg_schedule *s, const lg_arrival *a, double rate,
                      const lg_trace *trace, double share, double origin_ns,
                      double start_ns, uint64_t seed, uint64_t stream);
/* The next send time (ns, absolute), and advance. UINT64_MAX once the
 * rate stays 0 for ever, or the next send lies beyond 2^64 ns. */
uint64_t lg_schedule_next(lg_schedule *s);

#endif
