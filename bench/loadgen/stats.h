/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a run measured: libstagevar recorders for the latency-like
 * distributions, plain counters, a per-second series and per-client
 * histograms. Each thread owns its own (one writer, no locks); the report
 * merges them after the threads have joined.
 */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "stagevar.h"

enum {
    LG_LAT_SCHED,   /* reply - scheduled send: what a user would see */
    LG_LAT_SENT,    /* reply - actual send: what a closed-loop tool reports */
    LG_SCHED_ERR,   /* actual send - scheduled send */
    LG_BATCH,       /* requests per write() (the "batch size sent") */
    LG_CONNECT,     /* connect() to established, ns */
    LG_LAT_READ,    /* loop read - scheduled send: the reply time before kernel stamps */
    LG_CLIENT_DELAY,/* loop read - kernel receive: the client's own delay */
    LG_LOOP_LATE,   /* actual send - (scheduled send, or the thread's previous send()
                     * returning, whichever is later): the wait's own error */
    LG_SPIN_STALL,  /* a gap over LG_STALL_MIN_NS between two clock reads of a spin */
    LG_NSTAGES
};

extern const char *const lg_stage_names[LG_NSTAGES];

typedef struct {
    uint64_t scheduled;     /* measured requests the schedule produced */
    uint64_t sent;          /* ... of them written to a socket */
    uint64_t completed;     /* ... answered (ok + errors) */
    uint64_t in_window;     /* ... answered before the measurement ended */
    uint64_t ok, errors;    /* well-formed success / failure replies */
    uint64_t unexpected;    /* replies that did not fit their request */
    uint64_t lost;          /* sent, then the connection dropped */
    uint64_t timeouts;      /* unanswered when the run's timeout ran out */
    uint64_t late;          /* sent more than --late-us after schedule */
    uint64_t held;          /* held to share a later request's send (--coalesce) */
    uint64_t gets, sets, get_keys, hits;
    uint64_t conns_opened, connect_errors;
    uint64_t warmup_requests;
    uint64_t retried;       /* resent after a keep-alive close (then answered or lost) */
    uint64_t kernel_timed;  /* replies timed by the kernel's RX stamp */
    uint64_t loop_timed;    /* ... by the loop's read: no usable stamp */
    uint64_t sends_kernel_timed;  /* answered requests whose send time is the kernel's TX stamp */
} lg_counters;

/* One second of the measurement phase. Latency of the requests scheduled
 * in it; completions counted when their reply arrived in it. */
typedef struct {
    uint64_t scheduled, completed, errors;
    sv_moments lat_m;
    sv_hist lat;
} lg_second;

typedef struct {
    sv_recorder *rec;
    lg_counters c;
    lg_second *sec;
    size_t nsec;
    double cpu_user_s, cpu_sys_s;   /* during measurement */
    uint64_t busy_ns;               /* loop time spent working, not waiting */
    uint64_t spun_ns;               /* loop time spent spinning on the clock alone */
} lg_stats;

/* Per client (connection slot): its own view of scheduled latency. */
typedef struct {
    sv_moments m;
    sv_hist h;
} lg_client_stats;

int lg_stats_init(lg_stats *s);
void lg_stats_free(lg_stats *s);
/* Second i of the measurement, growing the series; NULL on ENOMEM. */
lg_second *lg_stats_second(lg_stats *s, size_t i);
/* into += from (recorders, counters, series). -1 on ENOMEM. */
int lg_stats_merge(lg_stats *into, const lg_stats *from);
void lg_counters_add(lg_counters *into, const lg_counters *from);

#endif
