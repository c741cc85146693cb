/* SPDX-License-Identifier: BSD-3-Clause */
/* The human summary and the JSON report of a finished run. */
#ifndef LG_REPORT_H
#define LG_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "options.h"
#include "stats.h"
#include "loop.h"

typedef struct {
    const lg_options *o;
    lg_stats total;             /* every thread merged */
    const lg_thread *threads;
    unsigned nthreads;
    double window_ns;           /* length of the measurement phase */
    uint64_t start_unix_ns;     /* the schedule's origin, CLOCK_REALTIME */
    uint64_t start_woke_unix_ns;/* when the last thread was running at the origin */
    double wall_s;              /* whole run, connect to drain */
    uint64_t preload_sets;
    struct rusage ru;           /* the whole process, whole run */
} lg_result;

/* Percentile views: the merged histogram against the mean of each
 * client's own percentile. They differ when clients saw different
 * latencies, and averaging percentiles is then simply wrong. */
#define LG_NQ 3
extern const double lg_client_q[LG_NQ];
#define LG_DISAGREE 0.10        /* relative difference that gets flagged */

typedef struct {
    double merged[LG_NQ], client_mean[LG_NQ];
    int disagree[LG_NQ], any;
    unsigned clients;
} lg_client_view;

void lg_client_view_compute(const lg_result *r, lg_client_view *v);
double lg_result_achieved(const lg_result *r);
/* Fraction of the measurement each thread spent working (sending,
 * reading, parsing) rather than waiting for the next send: a rate that
 * keeps it at b would, extrapolated, saturate the thread at rate / b. */
double lg_result_busy(const lg_result *r);
double lg_result_offered(const lg_result *r);
void lg_report_text(FILE *out, const lg_result *r);
int lg_report_json(const char *path, const lg_result *r, char *err);

#endif
