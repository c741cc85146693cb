/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections the poll found readable and the loop has not read yet, in
 * the order it found them. The event callback only queues a connection;
 * the loop reads it when it has time (loop.c), so a reply that comes in
 * just before a send is read after the send instead of delaying it, and
 * connections found ready together are read without polling again. Each
 * entry keeps when it was queued, so the loop can bound how long a reply
 * waits to be read however busy sending keeps it.
 */
#ifndef LG_READY_H
#define LG_READY_H

#include <stdint.h>

typedef struct {
    unsigned *slot;     /* connection slots, a ring from `head` */
    uint64_t *at;       /* when each was queued */
    uint8_t *queued;    /* per slot: already in the ring */
    unsigned cap, head, count;
} lg_ready;

/* Room for `n` connection slots; -1 on ENOMEM. */
int lg_ready_init(lg_ready *r, unsigned n);
void lg_ready_free(lg_ready *r);
/* Queue `slot`, found readable at `now`, unless it is queued already
 * (it keeps its place and its time). */
void lg_ready_push(lg_ready *r, unsigned slot, uint64_t now);
/* The oldest queued slot, taken off the queue; the queue must not be empty. */
unsigned lg_ready_pop(lg_ready *r);
static inline int lg_ready_empty(const lg_ready *r) { return r->count == 0; }
/* When the oldest queued slot was queued; the queue must not be empty. */
static inline uint64_t lg_ready_oldest(const lg_ready *r) { return r->at[r->head]; }

#endif
