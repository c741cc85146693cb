/* SPDX-License-Identifier: BSD-3-Clause */
/* A growable byte buffer with a consumed prefix: appended at the end,
 * consumed from the front, compacted lazily so consuming is O(1). */
#ifndef LG_BUF_H
#define LG_BUF_H

#include <stddef.h>

typedef struct {
    char *p;
    size_t start, end, cap;
} lg_buf;

static inline size_t lg_buf_len(const lg_buf *b) { return b->end - b->start; }
static inline char *lg_buf_data(const lg_buf *b) { return b->p + b->start; }

/* Room for at least n more bytes at lg_buf_tail(); -1 on ENOMEM. */
int lg_buf_reserve(lg_buf *b, size_t n);
static inline char *lg_buf_tail(const lg_buf *b) { return b->p + b->end; }
int lg_buf_append(lg_buf *b, const void *data, size_t n);
void lg_buf_consume(lg_buf *b, size_t n);
void lg_buf_clear(lg_buf *b);
void lg_buf_free(lg_buf *b);

#endif
