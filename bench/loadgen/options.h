/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line: every knob of a run, parsed and cross-checked up front so
 * a bad value fails before any connection is opened. */
#ifndef LG_OPTIONS_H
#define LG_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "arrival.h"
#include "parse.h"
#include "workload.h"

typedef enum { LG_PROTO_MEMCACHE, LG_PROTO_HTTP } lg_proto;
/* Where reply (and send) times come from: see tstamp.h. */
typedef enum { LG_TS_KERNEL, LG_TS_KERNEL_TX, LG_TS_LOOP } lg_ts_mode;
extern const char *const lg_ts_mode_names[3];  /* as --timestamps spells them */

#define LG_MAX_CPUS 1024

typedef struct {
    /* target */
    const char *host;
    unsigned port;
    lg_proto proto;
    int allow_nonloopback;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    /* load */
    double rate;                /* total req/s (mean rate with a trace) */
    double duration_ns;         /* measurement phase, 0 with --requests */
    uint64_t requests;          /* measured requests, 0 with --duration */
    double warmup_ns;
    uint64_t start_at_ns;       /* --start-at: CLOCK_REALTIME start, 0: now */
    double timeout_ns;          /* wait for outstanding replies at the end */
    lg_arrival arrival;
    const char *arrival_spec;
    const char *trace_file, *shape;
    lg_trace trace;             /* n == 0: constant rate */
    /* connections */
    unsigned threads, conns;
    int cpu[LG_MAX_CPUS];
    size_t ncpus;
    unsigned seq_clients;       /* sequential-clients mode when > 0 */
    unsigned reqs_per_conn;
    unsigned max_outstanding;   /* per connection; 0: open loop */
    double batch_ns;            /* user-space batching interval, 0: off */
    int coalesce;               /* --coalesce on: hold a request for a close next one */
    int nagle;
    /* workload */
    lg_workload wl;
    const char **paths;
    size_t npaths;
    int preload;
    /* measurement */
    double late_ns, spin_ns;
    int spin_auto;              /* --spin-us auto (margin.h); spin_ns unused */
    lg_ts_mode timestamps;
    uint64_t seed;
    const char *json;
    int quiet;
    int argc;
    char **argv;
} lg_options;

enum { LG_OPT_RUN, LG_OPT_EXIT, LG_OPT_ERROR };

/* LG_OPT_RUN: o is ready. LG_OPT_EXIT: --help or --version was printed to
 * stdout. LG_OPT_ERROR: err holds one line naming the bad value. */
int lg_options_parse(lg_options *o, int argc, char **argv, char *err);
void lg_options_free(lg_options *o);
void lg_options_usage(FILE *out);
/* Connections (or sequential clients) per thread. */
unsigned lg_options_slots(const lg_options *o);

#endif
