/* SPDX-License-Identifier: BSD-3-Clause */
/* The ready queue: a ring as long as there are connection slots, since
 * each slot is in it at most once. */
#include "ready.h"

#include <stdlib.h>

int lg_ready_init(lg_ready *r, unsigned n)
{
    r->cap = n;
    r->head = r->count = 0;
    r->slot = calloc(n, sizeof(*r->slot));
    r->at = calloc(n, sizeof(*r->at));
    r->queued = calloc(n, sizeof(*r->queued));
    return r->slot && r->at && r->queued ? 0 : -1;
}

void lg_ready_free(lg_ready *r)
{
    free(r->slot);
    free(r->at);
    free(r->queued);
    r->slot = NULL;
    r->at = NULL;
    r->queued = NULL;
    r->cap = r->count = 0;
}

void lg_ready_push(lg_ready *r, unsigned slot, uint64_t now)
{
    unsigned i;

    if (r->queued[slot])
        return;
    i = r->head + r->count < r->cap ? r->head + r->count : r->head + r->count - r->cap;
    r->slot[i] = slot;
    r->at[i] = now;
    r->queued[slot] = 1;
    r->count++;
}

unsigned lg_ready_pop(lg_ready *r)
{
    unsigned slot = r->slot[r->head];

    r->queued[slot] = 0;
    r->head = r->head + 1 == r->cap ? 0 : r->head + 1;
    r->count--;
    return slot;
}
