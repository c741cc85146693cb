/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HTTP keep-alive: a server may end a connection after any complete
 * response (Connection: close, MaxKeepAliveRequests, an idle timeout).
 * Requests pipelined behind that response were never answered, and GETs
 * may safely go again, so they are resent on the next connection. A close
 * after replies (a keep-alive limit) is progress and costs nothing, however
 * many requests a busy client had queued behind it; a close before any
 * reply uses the request's one retry: closed on so twice, it is lost.
 */
#ifndef LG_RETRY_H
#define LG_RETRY_H

#include <stddef.h>
#include <sys/types.h>

#include "proto.h"

#define LG_MAX_RETRIES 1

/* Did the server end the connection between replies, so that what it
 * left unanswered can go again? `n` and `err` are recv()'s result and
 * errno, `buffered` the bytes of an incomplete reply kept from before. */
int lg_retry_clean_close(int http, size_t buffered, ssize_t n, int err);
/* An unanswered request on a connection the server closed cleanly, after
 * `progressed` (some replies on it) or not: 1 if it goes again, 0 if it is
 * lost. Only a close without progress counts on the request. */
int lg_retry_take(lg_req *r, int progressed);

#endif
