/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests and the two wire protocols: memcached text (get, multiget,
 * set) and HTTP/1.1 keep-alive GET.
 *
 * Parsers are strict and stateless: each call looks at the bytes received
 * so far for the oldest outstanding request and either needs more, or
 * names the length of one complete reply and what it said. Anything that
 * does not fit the request it answers is "unexpected": framing is lost,
 * so the caller drops the connection and counts it.
 */
#ifndef LG_PROTO_H
#define LG_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "workload.h"

typedef enum { LG_OP_GET, LG_OP_SET, LG_OP_HTTP } lg_op;

/* One request from its scheduled time to its reply. */
typedef struct {
    uint64_t sched_ns;      /* when the arrival process said to send it */
    uint64_t sent_ns;       /* when write() took its last byte (0: not yet); with
                             * --timestamps kernel-tx, the kernel's TX stamp once known */
    uint64_t end_off;       /* connection stream offset just past its bytes */
    uint8_t op;
    uint8_t measured;       /* scheduled inside the measurement phase */
    uint8_t resent;         /* went again after a keep-alive close (retry.h) */
    uint8_t retries;        /* ... after a close that answered nothing on it */
    uint8_t tx_kernel;      /* sent_ns is the kernel's TX stamp */
    uint16_t nkeys;
    uint32_t key[LG_MAX_MULTIGET];  /* key indices, or key[0] = path index */
} lg_req;

typedef enum {
    LG_REPLY_MORE,          /* incomplete: read more */
    LG_REPLY_OK,
    LG_REPLY_ERROR,         /* well-formed failure: SERVER_ERROR, HTTP >= 400 */
    LG_REPLY_UNEXPECTED,    /* does not answer this request: framing lost */
} lg_reply_rc;

typedef struct {
    size_t len;             /* bytes of this reply */
    unsigned hits;          /* get: values returned */
    int close;              /* HTTP: the server will close after this reply */
} lg_reply;

/* Append the request's bytes to out; -1 on ENOMEM. */
int lg_mc_encode(const lg_workload *w, const lg_req *req, lg_buf *out);
int lg_http_encode(const lg_workload *w, const char *host, const lg_req *req, lg_buf *out);

lg_reply_rc lg_mc_parse(const lg_workload *w, const lg_req *req,
                        const char *buf, size_t len, lg_reply *out);
lg_reply_rc lg_http_parse(const char *buf, size_t len, lg_reply *out);

#endif
