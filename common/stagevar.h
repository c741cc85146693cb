/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/*
 * libstagevar: per-stage latency recording for servers and load generators.
 *
 * A recorder holds, for each of a fixed set of stages, the running
 * moments (Welford), a log-linear histogram and two error counters. It is
 * a flat, pointer-free block of memory, so it can live in a thread's own
 * struct, on the heap or in shared memory, and be copied with memcpy.
 *
 * Concurrency: one writer per recorder, no locks, no atomics. A reader
 * that copies or merges a recorder while its writer runs may see a sample
 * half-recorded (e.g. counted in the moments but not yet in a bucket);
 * each field is a naturally aligned 64-bit word, so no single field is
 * torn on the platforms we build for. Counts are exact once the writer is
 * quiescent. Stage names are kept by the caller and passed to emitters.
 */
#ifndef STAGEVAR_H
#define STAGEVAR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- clocks ---------------------------------------------------------- */

/* Kernel socket timestamps are CLOCK_REALTIME: spans mixing them with
 * application events must read this clock on the application side too. */
uint64_t sv_clock_realtime_ns(void);
uint64_t sv_clock_monotonic_ns(void);

/* ---- moments: count, mean, variance, min, max ------------------------ */

typedef struct {
    uint64_t count;
    double mean;
    double m2;          /* sum of squared deviations from the mean */
    uint64_t min;
    uint64_t max;
    /* Private to the update: it runs on x - shift (shift = the first
     * value), so the mean's rounding error scales with the spread of the
     * values, not with their size. */
    double shift;
    double shifted_mean;    /* mean - shift */
} sv_moments;

void sv_moments_reset(sv_moments *m);
void sv_moments_add(sv_moments *m, uint64_t x);
void sv_moments_merge(sv_moments *into, const sv_moments *from);
/* Population variance (M2 / n): the variance of the recorded service
 * times themselves, as queueing formulas use it. 0 when count < 2. */
double sv_moments_variance(const sv_moments *m);
double sv_moments_stddev(const sv_moments *m);
/* Squared coefficient of variation, variance / mean^2 (0 if mean is 0). */
double sv_moments_cv2(const sv_moments *m);

/* ---- log-linear histogram -------------------------------------------- */

/* 64 linear sub-buckets per power of two: a quantile reported as a
 * bucket's midpoint is within 1/128 (0.79%) of a value in that bucket.
 * Values 0..127 are exact. The top bucket ends at 2^37 ns (137 s); larger
 * values are counted in `overflow`, never clipped into a bucket. */
#define SV_HIST_SUB_BITS 6
#define SV_HIST_TOP_EXP 37
#define SV_HIST_BUCKETS ((SV_HIST_TOP_EXP - SV_HIST_SUB_BITS + 1) << SV_HIST_SUB_BITS)
#define SV_HIST_LIMIT ((uint64_t)1 << SV_HIST_TOP_EXP)
#define SV_HIST_REL_ERROR (1.0 / (2 << SV_HIST_SUB_BITS))

typedef struct {
    uint64_t total;     /* values recorded, overflow included */
    uint64_t overflow;  /* values >= SV_HIST_LIMIT */
    uint64_t bucket[SV_HIST_BUCKETS];
} sv_hist;

void sv_hist_reset(sv_hist *h);
void sv_hist_add(sv_hist *h, uint64_t x);
void sv_hist_merge(sv_hist *into, const sv_hist *from);
size_t sv_hist_bucket_of(uint64_t x);           /* x < SV_HIST_LIMIT */
uint64_t sv_hist_bucket_low(size_t bucket);     /* smallest value in it */
uint64_t sv_hist_bucket_width(size_t bucket);
/* Nearest-rank quantile, q in [0,1]: an estimate of the ceil(q*n)-th
 * smallest value, within SV_HIST_REL_ERROR of it. If it falls among the
 * overflowed values, `overflow_value` is returned (callers pass the exact
 * maximum). 0 for an empty histogram. */
uint64_t sv_hist_quantile(const sv_hist *h, double q, uint64_t overflow_value);

/* ---- stages and recorders -------------------------------------------- */

typedef struct {
    sv_moments moments;
    uint64_t missing;   /* an event of the span was not available */
    uint64_t dropped;   /* negative span (clock step): not recorded */
    sv_hist hist;
} sv_stage;

typedef struct {
    uint32_t nstages;
    uint32_t reserved;
    sv_stage stage[];
} sv_recorder;

size_t sv_recorder_size(unsigned nstages);
/* Initialise caller memory of sv_recorder_size(nstages) bytes. */
void sv_recorder_init(sv_recorder *r, unsigned nstages);
sv_recorder *sv_recorder_new(unsigned nstages);     /* NULL on ENOMEM */
void sv_recorder_free(sv_recorder *r);
void sv_recorder_reset(sv_recorder *r);

/* The hot path: one span of one stage. Out-of-range stages are ignored. */
void sv_record(sv_recorder *r, unsigned stage, int64_t span_ns);
void sv_record_missing(sv_recorder *r, unsigned stage);

/* into += from; -1 (and no change) if their stage counts differ. */
int sv_recorder_merge(sv_recorder *into, const sv_recorder *from);
/* Copy a possibly live recorder into dst of the same size (see the
 * concurrency note above). */
void sv_recorder_snapshot(sv_recorder *dst, const sv_recorder *src);

/* ---- summaries and emitters ------------------------------------------ */

typedef struct {
    uint64_t count;
    double mean_ns;
    double stddev_ns;
    double cv2;
    uint64_t min_ns, max_ns;
    uint64_t p50_ns, p90_ns, p99_ns, p999_ns;
    uint64_t missing, dropped;
} sv_summary;

void sv_stage_summarize(const sv_stage *s, sv_summary *out);

/* Receives one "stage:field" key and its formatted value. */
typedef void (*sv_emit_fn)(const char *key, const char *value, void *ctx);

/* Yield every field of every stage, in a fixed order:
 * count mean_ns stddev_ns cv2 min_ns max_ns p50_ns p90_ns p99_ns p999_ns
 * missing dropped. `names` has r->nstages entries. */
void sv_emit(const sv_recorder *r, const char *const *names, sv_emit_fn fn, void *ctx);

/* Ready formatters over sv_emit:
 *   memcached:  "STAT kernel_to_read:count 12\r\n"
 *   key-value:  "kernel_to_read_count: 12\n"   (mod_status ?auto style)
 *   JSON:       {"kernel_to_read":{"count":12,...},...}
 * Each returns 0, or -1 if writing to the stream failed. */
int sv_write_stats(FILE *out, const sv_recorder *r, const char *const *names);
int sv_write_kv(FILE *out, const sv_recorder *r, const char *const *names);
int sv_write_json(FILE *out, const sv_recorder *r, const char *const *names);

#endif /* STAGEVAR_H */
