/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One client connection: its socket, the bytes not yet written, the
 * bytes received, and its requests in send order.
 *
 * Requests are queued (encoded into `out`, recorded in the ring) and
 * flushed: written as far as the limits allow. Three limits keep the
 * modes in one mechanism: --max-outstanding caps requests written but
 * unanswered, a sequential client's connection takes at most
 * --requests-per-conn requests, and with --batch-interval-us flushes
 * happen only on the batch clock. Requests the limits hold back wait in
 * the queue; their latency from the schedule keeps counting.
 */
#ifndef LG_CONN_H
#define LG_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"
#include "stats.h"

struct lg_thread;
struct event;

typedef enum { LG_CONN_DOWN, LG_CONN_CONNECTING, LG_CONN_UP } lg_conn_state;

typedef struct lg_conn {
    struct lg_thread *t;
    unsigned id;
    int fd;
    lg_conn_state state;
    struct event *rev, *wev;
    lg_buf out, in;
    lg_req *ring;               /* requests in send order, from `head` */
    size_t cap, head, count;
    size_t written;             /* the first `written` are sent, unanswered */
    uint64_t answered;          /* replies on this connection since it opened */
    uint64_t out_off;           /* stream offset of out's first byte */
    uint64_t boundary;          /* stream offset where the first unsent request starts */
    unsigned budget;            /* requests this connection may still take */
    int tx_stamps;              /* the kernel reports TX stamps on this socket */
    uint64_t ts_base;           /* stream offset of TX stamp key 0 */
    uint64_t connect_ns;        /* when connect() was called */
    uint64_t retry_ns;          /* DOWN: reconnect not before this */
    lg_client_stats *client;    /* this slot's latency view */
} lg_conn;

/* A connection slot with its first buffers; -1 when out of memory. */
int lg_conn_init(lg_conn *c, struct lg_thread *t, unsigned id);
void lg_conn_free(lg_conn *c);
/* Start a non-blocking connect. -1 (with errno) if it failed at once. */
int lg_conn_connect(lg_conn *c, uint64_t now);
/* Queue one request (encodes it); -1 on ENOMEM. */
int lg_conn_enqueue(lg_conn *c, const lg_req *req);
/* Write what the limits allow; returns requests that left in this write. */
unsigned lg_conn_flush(lg_conn *c);
/* Requests queued and not yet written. */
static inline size_t lg_conn_unsent(const lg_conn *c) { return c->count - c->written; }
/* Read what the socket has and match the replies to their requests. */
void lg_conn_read(lg_conn *c);
/* Drop every queued request (end of run), calling back for each. */
void lg_conn_abandon(lg_conn *c);

#endif
