/* SPDX-License-Identifier: BSD-3-Clause */
/* Preload over one blocking connection, pipelined in windows. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "buf.h"
#include "proto.h"

#define WINDOW 64

static int send_all(int fd, const lg_buf *b)
{
    size_t off = 0;

    while (off < lg_buf_len(b)) {
        ssize_t n = send(fd, lg_buf_data(b) + off, lg_buf_len(b) - off, MSG_NOSIGNAL);

        if (n < 0 && errno != EINTR)
            return -1;
        off += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

/* Read until `n` replies to sets have arrived; all must be STORED. */
static int expect_stored(int fd, const lg_options *o, lg_buf *in, unsigned n, char *err)
{
    lg_req set = { .op = LG_OP_SET, .nkeys = 1 };

    while (n > 0) {
        lg_reply rep;
        lg_reply_rc rc = lg_mc_parse(&o->wl, &set, lg_buf_data(in), lg_buf_len(in), &rep);
        ssize_t got;

        if (rc == LG_REPLY_OK) {
            lg_buf_consume(in, rep.len);
            n--;
            continue;
        }
        if (rc != LG_REPLY_MORE) {
            snprintf(err, LG_ERRLEN, "preload: the server answered a set with '%.*s'",
                     (int)strcspn(lg_buf_data(in), "\r\n"), lg_buf_data(in));
            return -1;
        }
        if (lg_buf_reserve(in, 4096) < 0)
            return -1;
        got = recv(fd, lg_buf_tail(in), in->cap - in->end, 0);
        if (got <= 0) {
            snprintf(err, LG_ERRLEN, "preload: %s", got == 0 ? "server closed the connection" : strerror(errno));
            return -1;
        }
        in->end += (size_t)got;
    }
    return 0;
}

static int preload_keys(int fd, const lg_options *o, uint64_t *sets, char *err)
{
    lg_buf out = { 0 }, in = { 0 };
    uint64_t k = 0;
    int rc = 0;

    while (rc == 0 && k < o->wl.keys) {
        unsigned n = 0;

        lg_buf_clear(&out);
        for (; n < WINDOW && k < o->wl.keys; n++, k++) {
            lg_req r = { .op = LG_OP_SET, .nkeys = 1, .key = { (uint32_t)k } };

            rc |= lg_mc_encode(&o->wl, &r, &out);
        }
        if (rc == 0 && send_all(fd, &out) < 0) {
            snprintf(err, LG_ERRLEN, "preload: %s", strerror(errno));
            rc = -1;
        }
        if (rc == 0)
            rc = expect_stored(fd, o, &in, n, err);
        *sets += n;
    }
    lg_buf_free(&out);
    lg_buf_free(&in);
    return rc;
}

int lg_preload(const lg_options *o, uint64_t *sets, char *err)
{
    struct timeval tv = { 5, 0 };
    int fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

    *sets = 0;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(fd, (const struct sockaddr *)&o->addr, o->addrlen) < 0) {
        snprintf(err, LG_ERRLEN, "preload: cannot connect to %s port %u: %s", o->host, o->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rc = preload_keys(fd, o, sets, err);
    close(fd);
    return rc;
}
