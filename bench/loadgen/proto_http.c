/* SPDX-License-Identifier: BSD-3-Clause */
/* HTTP/1.1 keep-alive GET: encoding and strict response framing. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto.h"

/* Headers bigger than this are not a reply to a static GET. */
#define MAX_HEAD 65536

int lg_http_encode(const lg_workload *w, const char *host, const lg_req *req, lg_buf *out)
{
    char head[1024];
    /* An IPv6 literal is bracketed in Host (RFC 7230, 5.4). */
    int v6 = strchr(host, ':') != NULL;
    int n = snprintf(head, sizeof(head),
                     "GET %s HTTP/1.1\r\nHost: %s%s%s\r\nUser-Agent: stagevar-loadgen\r\n\r\n",
                     w->paths[req->key[0]], v6 ? "[" : "", host, v6 ? "]" : "");

    return n < 0 || (size_t)n >= sizeof(head) ? -1 : lg_buf_append(out, head, (size_t)n);
}

typedef struct {
    int status;
    int http10;
    long long content_length;   /* -1: absent */
    int chunked;
    int close, keep_alive;
} head_info;

/* Does header line [p, p+n) have this name? Then *value is its value. */
static int header_is(const char *p, size_t n, const char *name, const char **value)
{
    size_t k = strlen(name);

    if (n <= k || strncasecmp(p, name, k) != 0 || p[k] != ':')
        return 0;
    for (*value = p + k + 1; **value == ' ' || **value == '\t'; (*value)++)
        ;
    return 1;
}

static int parse_header(const char *p, size_t n, head_info *h)
{
    const char *v;

    if (header_is(p, n, "Content-Length", &v)) {
        char *end;

        if (h->content_length >= 0 || !isdigit((unsigned char)*v))
            return -1;
        h->content_length = strtoll(v, &end, 10);
        return end == p + n ? 0 : -1;
    }
    if (header_is(p, n, "Transfer-Encoding", &v))
        h->chunked = (size_t)(p + n - v) == 7 && strncasecmp(v, "chunked", 7) == 0;
    if (header_is(p, n, "Connection", &v)) {
        h->close = (size_t)(p + n - v) >= 5 && strncasecmp(v, "close", 5) == 0;
        h->keep_alive = (size_t)(p + n - v) >= 10 && strncasecmp(v, "keep-alive", 10) == 0;
    }
    return 0;
}

/* Status line and headers in [buf, buf+head_len). */
static int parse_head(const char *buf, size_t head_len, head_info *h)
{
    const char *p = buf, *end = buf + head_len, *eol;

    memset(h, 0, sizeof(*h));
    h->content_length = -1;
    if (head_len < 14 || (memcmp(p, "HTTP/1.1 ", 9) != 0 && memcmp(p, "HTTP/1.0 ", 9) != 0) ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]) || (p[12] != ' ' && p[12] != '\r'))
        return -1;
    h->http10 = p[7] == '0';
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    p = memmem(p, (size_t)(end - p), "\r\n", 2) + 2;
    while (p < end - 2) {
        eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (parse_header(p, (size_t)(eol - p), h) < 0)
            return -1;
        p = eol + 2;
    }
    return 0;
}

/* Length of a chunked body at buf, 0 if incomplete, -1 if malformed. */
static long long chunked_len(const char *buf, size_t len)
{
    size_t off = 0;

    for (;;) {
        const char *eol = memmem(buf + off, len - off, "\r\n", 2);
        unsigned long long size;
        char *end;

        if (!eol)
            return len - off > 64 ? -1 : 0;
        if (!isxdigit((unsigned char)buf[off]))
            return -1;
        size = strtoull(buf + off, &end, 16);
        if (end != eol && *end != ';')
            return -1;
        off = (size_t)(eol - buf) + 2;
        if (size == 0)
            break;
        if (len - off < size + 2)
            return 0;
        if (memcmp(buf + off + size, "\r\n", 2) != 0)
            return -1;
        off += size + 2;
    }
    /* Trailer lines, if any, then the empty line that ends the body. */
    for (;;) {
        const char *eol = memmem(buf + off, len - off, "\r\n", 2);

        if (!eol)
            return 0;
        if (eol == buf + off)
            return (long long)off + 2;
        off = (size_t)(eol - buf) + 2;
    }
}

static long long body_len(const head_info *h, const char *body, size_t avail)
{
    if ((h->status >= 100 && h->status < 200) || h->status == 204 || h->status == 304)
        return 0;
    if (h->chunked)
        return chunked_len(body, avail);
    if (h->content_length >= 0)
        return avail >= (unsigned long long)h->content_length ? h->content_length : 0;
    return -1;      /* delimited by close: unusable on a keep-alive stream */
}

lg_reply_rc lg_http_parse(const char *buf, size_t len, lg_reply *out)
{
    const char *end = memmem(buf, len < MAX_HEAD ? len : MAX_HEAD, "\r\n\r\n", 4);
    size_t head_len;
    long long body;
    head_info h;

    memset(out, 0, sizeof(*out));
    if (!end)
        return len >= MAX_HEAD ? LG_REPLY_UNEXPECTED : LG_REPLY_MORE;
    head_len = (size_t)(end - buf) + 4;
    if (parse_head(buf, head_len, &h) < 0 || h.status < 200)
        return LG_REPLY_UNEXPECTED;
    body = body_len(&h, buf + head_len, len - head_len);
    if (body < 0)
        return LG_REPLY_UNEXPECTED;
    if (body == 0 && (h.chunked || h.content_length > 0))
        return LG_REPLY_MORE;
    out->len = head_len + (size_t)body;
    out->close = h.close || (h.http10 && !h.keep_alive);
    return h.status >= 400 ? LG_REPLY_ERROR : LG_REPLY_OK;
}
