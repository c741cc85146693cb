/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached text protocol: get/multiget and set, encoding and replies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* A header line longer than this cannot be a reply to our requests. */
#define MAX_LINE 2048

static int append_value(lg_buf *out, uint32_t size)
{
    if (lg_buf_reserve(out, size + 2) < 0)
        return -1;
    memset(lg_buf_tail(out), 'x', size);
    memcpy(lg_buf_tail(out) + size, "\r\n", 2);
    out->end += size + 2;
    return 0;
}

int lg_mc_encode(const lg_workload *w, const lg_req *req, lg_buf *out)
{
    char key[LG_MAX_KEY + 1], line[LG_MAX_KEY + 64];
    unsigned i;
    int n;

    if (req->op == LG_OP_SET) {
        uint32_t size = lg_value_size(w, req->key[0]);

        lg_key_name(w, req->key[0], key);
        n = snprintf(line, sizeof(line), "set %s 0 %u %u\r\n", key, lg_key_ttl(w, req->key[0]), size);
        return lg_buf_append(out, line, (size_t)n) < 0 ? -1 : append_value(out, size);
    }
    /* Key names are written straight into the buffer: room for the
     * longest is reserved once. */
    if (lg_buf_reserve(out, 3 + req->nkeys * (LG_MAX_KEY + 1) + 2) < 0)
        return -1;
    memcpy(lg_buf_tail(out), "get", 3);
    out->end += 3;
    for (i = 0; i < req->nkeys; i++) {
        *lg_buf_tail(out) = ' ';
        out->end += 1 + lg_key_name(w, req->key[i], lg_buf_tail(out) + 1);
    }
    memcpy(lg_buf_tail(out), "\r\n", 2);
    out->end += 2;
    return 0;
}

/* Length of the line at buf (without CRLF) or -1 if no CRLF yet; -2 if
 * the line is too long to be a reply. */
static long line_len(const char *buf, size_t len)
{
    const char *nl;

    /* An empty buffer may have no storage yet (NULL), and memchr must not
     * be given NULL even for 0 bytes (UBSAN: nonnull-attribute). */
    if (len == 0)
        return -1;
    nl = memchr(buf, '\n', len < MAX_LINE ? len : MAX_LINE);
    if (!nl)
        return len >= MAX_LINE ? -2 : -1;
    if (nl == buf || nl[-1] != '\r')
        return -2;
    return (long)(nl - buf - 1);
}

static int starts(const char *line, long n, const char *word)
{
    size_t w = strlen(word);

    return (size_t)n >= w && memcmp(line, word, w) == 0;
}

static int is_error_line(const char *line, long n)
{
    return (n == 5 && memcmp(line, "ERROR", 5) == 0) ||
           starts(line, n, "SERVER_ERROR ") || starts(line, n, "CLIENT_ERROR ");
}

/* A decimal number of at most 19 digits at *p, advancing *p past it. */
static int parse_decimal(const char **p, const char *end, unsigned long *v)
{
    const char *s = *p;

    *v = 0;
    while (*p < end && **p >= '0' && **p <= '9' && *p - s < 19)
        *v = *v * 10 + (unsigned long)(*(*p)++ - '0');
    return *p > s && (*p == end || **p < '0' || **p > '9') ? 0 : -1;
}

/* "VALUE <key> <flags> <bytes>[ <cas>]": the key (not copied) and the
 * byte count. By hand, not sscanf: every reply goes through here. */
static int parse_value_header(const char *line, long n, const char **key, size_t *klen,
                              unsigned long *bytes)
{
    const char *p = line + 6, *end = line + n;
    unsigned long flags;

    *key = p;
    while (p < end && *p != ' ')
        p++;
    *klen = (size_t)(p - *key);
    if (*klen == 0 || *klen > LG_MAX_KEY || p++ == end)
        return -1;
    if (parse_decimal(&p, end, &flags) < 0 || p == end || *p++ != ' ' ||
        parse_decimal(&p, end, bytes) < 0)
        return -1;
    return p == end || *p == ' ' ? 0 : -1;
}

/* A VALUE must name the next requested key that was a hit: memcached
 * answers a multiget in request order, skipping misses. */
static int match_key(const lg_workload *w, const lg_req *req, unsigned *next, const char *key,
                     size_t klen, unsigned long bytes)
{
    char want[LG_MAX_KEY + 1];

    for (; *next < req->nkeys; (*next)++) {
        if (lg_key_name(w, req->key[*next], want) == klen && memcmp(want, key, klen) == 0) {
            uint32_t size = lg_value_size(w, req->key[(*next)++]);

            return bytes == size ? 0 : -1;
        }
    }
    return -1;
}

static lg_reply_rc parse_get(const lg_workload *w, const lg_req *req, const char *buf,
                             size_t len, lg_reply *out)
{
    size_t off = 0;
    unsigned next = 0;

    out->hits = 0;
    for (;;) {
        long n = line_len(buf + off, len - off);
        const char *key;
        size_t klen;
        unsigned long bytes;

        if (n == -1)
            return LG_REPLY_MORE;
        if (n == -2)
            return LG_REPLY_UNEXPECTED;
        if (n == 3 && memcmp(buf + off, "END", 3) == 0) {
            out->len = off + 5;
            return LG_REPLY_OK;
        }
        if (is_error_line(buf + off, n) && off == 0) {
            out->len = (size_t)n + 2;
            return LG_REPLY_ERROR;
        }
        if (!starts(buf + off, n, "VALUE ") || parse_value_header(buf + off, n, &key, &klen, &bytes) < 0 ||
            match_key(w, req, &next, key, klen, bytes) < 0)
            return LG_REPLY_UNEXPECTED;
        off += (size_t)n + 2;
        if (len - off < bytes + 2)
            return LG_REPLY_MORE;
        if (memcmp(buf + off + bytes, "\r\n", 2) != 0)
            return LG_REPLY_UNEXPECTED;
        off += bytes + 2;
        out->hits++;
    }
}

lg_reply_rc lg_mc_parse(const lg_workload *w, const lg_req *req,
                        const char *buf, size_t len, lg_reply *out)
{
    long n;

    memset(out, 0, sizeof(*out));
    if (req->op == LG_OP_GET)
        return parse_get(w, req, buf, len, out);
    n = line_len(buf, len);
    if (n == -1)
        return LG_REPLY_MORE;
    if (n == -2)
        return LG_REPLY_UNEXPECTED;
    out->len = (size_t)n + 2;
    if (n == 6 && memcmp(buf, "STORED", 6) == 0)
        return LG_REPLY_OK;
    return is_error_line(buf, n) ? LG_REPLY_ERROR : LG_REPLY_UNEXPECTED;
}
