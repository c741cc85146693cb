/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A load-generating thread: its schedule, its connections, its event loop
 * and its statistics. Threads share nothing while they run but the start
 * time, set once before the run, and a progress counter.
 */
#ifndef LG_LOOP_H
#define LG_LOOP_H

#include <pthread.h>
#include <stdint.h>

#include "arrival.h"
#include "conn.h"
#include "margin.h"
#include "options.h"
#include "ready.h"
#include "rng.h"
#include "stats.h"
#include "tstamp.h"

struct event_base;
struct event;

/* Shared between main and the threads. */
typedef struct {
    pthread_barrier_t connected, started;
    uint64_t start_ns;          /* written by main between the barriers */
    uint64_t start_unix_ns;     /* the same instant on CLOCK_REALTIME */
    int abort;                  /* a thread could not connect */
    unsigned finished;          /* threads done (atomic), for the progress line */
} lg_run;

typedef struct lg_thread {
    unsigned id;
    const lg_options *o;
    lg_run *run;
    pthread_t tid;
    struct event_base *base;
    int tfd;                    /* timerfd that ends blocking waits */
    uint64_t armed_ns;          /* when it is armed to fire, 0 once it has */
    struct event *wake;
    lg_schedule sched;
    lg_rng rng;                 /* request contents */
    uint64_t streamed;          /* --stream sets made (workload.h) */
    lg_conn *conns;
    unsigned nconns, rr;
    uint64_t next_ns;           /* next scheduled send */
    uint64_t polled_ns;         /* when the loop last polled its sockets */
    uint64_t sent_back_ns;      /* when its last send() returned */
    lg_ready ready;             /* connections found readable, not yet read */
    lg_margin margin;           /* --spin-us auto: when to stop sleeping */
    lg_margin guard;            /* when to stop reading (margin.h) */
    lg_margin send_est;         /* how long a send() takes (margin.h) */
    unsigned held;              /* requests queued on conns[rr], not yet written */
    uint64_t held_since;        /* the first one's schedule time */
    uint64_t measure_start, measure_end, deadline;
    uint64_t to_measure;        /* --requests: measured requests left */
    int generating, measuring, ending, connecting;
    unsigned up;                /* connections established at start-up */
    uint64_t last_measured_ns;  /* schedule time of the last measured request */
    uint64_t woke_unix_ns;      /* CLOCK_REALTIME when it was running at the origin */
    uint64_t first_late_ns;     /* the first send's schedule error, warm-up or not */
    int sent_first;
    uint64_t pending;           /* measured requests not yet answered */
    uint64_t next_flush;        /* batching clock */
    unsigned down;              /* connections waiting to reconnect */
    uint64_t next_retry;
    lg_stats st;
    lg_client_stats *clients;   /* one per connection slot */
    uint64_t progress;          /* completed, read by main (relaxed) */
    int failed;
    char err[LG_ERRLEN];
} lg_thread;

int lg_thread_init(lg_thread *t, unsigned id, const lg_options *o, lg_run *run);
void lg_thread_free(lg_thread *t);
void *lg_thread_main(void *arg);

/* Connection callbacks. */
void lg_thread_sent(lg_thread *t, const lg_req *req);
/* One send() that began at `start` carried `n` requests and has just
 * returned. */
void lg_thread_batch(lg_thread *t, unsigned n, uint64_t start);
/* A reply to `req` came in the read `rx` describes. */
void lg_thread_reply(lg_thread *t, lg_conn *c, const lg_req *req, const lg_rx_time *rx,
                     lg_reply_rc rc, const lg_reply *reply);
/* A request goes again after a keep-alive close (retry.h). */
void lg_thread_retried(lg_thread *t, const lg_req *req);
/* A request will never be answered: lost with its connection
 * (`sent`), or still queued when the run ended. */
void lg_thread_dropped(lg_thread *t, const lg_req *req, int sent);
void lg_thread_unexpected(lg_thread *t);
/* The poll found `c` readable: the loop reads it when it has time. */
void lg_thread_readable(lg_thread *t, lg_conn *c);
/* A write callback (connected, or room in a full socket buffer) that
 * began at `start` is done: count it as busy. */
void lg_thread_io_done(lg_thread *t, uint64_t start);
void lg_thread_connected(lg_thread *t, lg_conn *c, uint64_t now);
void lg_thread_conn_down(lg_thread *t, lg_conn *c, uint64_t now, int connect_failed);

#endif
