/* SPDX-License-Identifier: BSD-3-Clause */
/* Which closes allow a resend, and how often one request may go again. */
#include "retry.h"

#include <errno.h>

int lg_retry_clean_close(int http, size_t buffered, ssize_t n, int err)
{
    /* memcached does not close on a client that behaves; half a reply
     * means the server died in the middle of it. A reset between replies
     * is a keep-alive close that raced our next pipelined request. */
    if (!http || buffered > 0)
        return 0;
    return n == 0 || (n < 0 && err == ECONNRESET);
}

int lg_retry_take(lg_req *r, int progressed)
{
    if (progressed) {
        r->resent = 1;
        return 1;
    }
    if (r->retries >= LG_MAX_RETRIES)
        return 0;
    r->retries++;
    r->resent = 1;
    return 1;
}
