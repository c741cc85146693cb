/* SPDX-License-Identifier: BSD-3-Clause */
/* Growable byte buffer. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

int lg_buf_reserve(lg_buf *b, size_t n)
{
    size_t len = lg_buf_len(b), cap;
    char *p;

    if (b->cap - b->end >= n)
        return 0;
    /* Sliding the live bytes down is cheaper than growing when most of
     * the buffer is already consumed. */
    if (b->start > 0 && b->cap - len >= n) {
        memmove(b->p, b->p + b->start, len);
        b->start = 0;
        b->end = len;
        return 0;
    }
    cap = b->cap ? b->cap : 4096;
    while (cap - len < n)
        cap *= 2;
    p = malloc(cap);
    if (!p)
        return -1;
    if (len)
        memcpy(p, b->p + b->start, len);
    free(b->p);
    b->p = p;
    b->cap = cap;
    b->start = 0;
    b->end = len;
    return 0;
}

int lg_buf_append(lg_buf *b, const void *data, size_t n)
{
    if (lg_buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->end, data, n);
    b->end += n;
    return 0;
}

void lg_buf_consume(lg_buf *b, size_t n)
{
    b->start += n;
    if (b->start == b->end)
        b->start = b->end = 0;
}

void lg_buf_clear(lg_buf *b)
{
    b->start = b->end = 0;
}

void lg_buf_free(lg_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->start = b->end = b->cap = 0;
}
