/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen wire protocols: encoding and strict reply framing. */
#include <string.h>

#include <criterion/criterion.h>

#include "parse.h"
#include "proto.h"

static lg_workload wl(void)
{
    char err[LG_ERRLEN];
    lg_workload w = { .keys = 100, .seed = 1 };

    lg_size_parse("4", 1, &w.key_size, err);
    lg_size_parse("3", 0, &w.value_size, err);
    return w;
}

static lg_reply_rc mc(const lg_workload *w, const lg_req *r, const char *text, lg_reply *rep)
{
    return lg_mc_parse(w, r, text, strlen(text), rep);
}

Test(memcache, encodes_get_multiget_and_set)
{
    lg_workload w = wl();
    lg_req get = { .op = LG_OP_GET, .nkeys = 2, .key = { 7, 42 } }, set = { .op = LG_OP_SET, .nkeys = 1, .key = { 5 } };
    lg_buf b = { 0 };

    cr_assert_eq(lg_mc_encode(&w, &get, &b), 0);
    cr_assert_eq(lg_mc_encode(&w, &set, &b), 0);
    cr_assert_eq(lg_buf_len(&b), strlen("get k007 k042\r\nset k005 0 0 3\r\nxxx\r\n"));
    cr_assert(memcmp(lg_buf_data(&b), "get k007 k042\r\nset k005 0 0 3\r\nxxx\r\n", lg_buf_len(&b)) == 0);
    lg_buf_free(&b);
}

Test(memcache, set_carries_the_key_ttl)
{
    lg_workload w = wl();
    lg_req set = { .op = LG_OP_SET, .nkeys = 1, .key = { 5 } };
    lg_buf b = { 0 };
    char err[LG_ERRLEN];

    cr_assert_eq(lg_ttl_parse("90", &w.ttl, err), 0, "%s", err);
    cr_assert_eq(lg_mc_encode(&w, &set, &b), 0);
    cr_assert_eq(lg_buf_len(&b), strlen("set k005 0 90 3\r\nxxx\r\n"));
    cr_assert(memcmp(lg_buf_data(&b), "set k005 0 90 3\r\nxxx\r\n", lg_buf_len(&b)) == 0);
    lg_buf_free(&b);
}

Test(memcache, frames_get_replies)
{
    lg_workload w = wl();
    lg_req get = { .op = LG_OP_GET, .nkeys = 3, .key = { 1, 2, 3 } };
    const char *hit = "VALUE k001 0 3\r\nxxx\r\nVALUE k003 0 3 99\r\nxxx\r\nEND\r\nnext";
    lg_reply rep;

    cr_assert_eq(mc(&w, &get, hit, &rep), LG_REPLY_OK);
    cr_assert_eq(rep.len, strlen(hit) - 4);
    cr_assert_eq(rep.hits, 2);
    cr_assert_eq(mc(&w, &get, "END\r\n", &rep), LG_REPLY_OK);
    cr_assert_eq(rep.hits, 0);
    /* Every proper prefix needs more bytes. */
    for (size_t n = 0; n < strlen(hit) - 4; n++)
        cr_assert_eq(lg_mc_parse(&w, &get, hit, n, &rep), LG_REPLY_MORE, "prefix %zu", n);
    /* An empty input buffer has no storage yet (found by UBSAN in the
     * preload path: memchr was handed NULL). */
    cr_assert_eq(lg_mc_parse(&w, &get, NULL, 0, &rep), LG_REPLY_MORE);
}

Test(memcache, unexpected_and_error_replies)
{
    lg_workload w = wl();
    lg_req get = { .op = LG_OP_GET, .nkeys = 1, .key = { 1 } }, set = { .op = LG_OP_SET, .nkeys = 1, .key = { 1 } };
    lg_reply rep;

    cr_assert_eq(mc(&w, &get, "VALUE k009 0 3\r\nxxx\r\nEND\r\n", &rep), LG_REPLY_UNEXPECTED, "key not asked");
    cr_assert_eq(mc(&w, &get, "VALUE k001 0 5\r\nxxxxx\r\nEND\r\n", &rep), LG_REPLY_UNEXPECTED, "wrong size");
    cr_assert_eq(mc(&w, &get, "VALUE k001 0 3\r\nxxxyEND\r\n", &rep), LG_REPLY_UNEXPECTED, "no CRLF");
    cr_assert_eq(mc(&w, &get, "STORED\r\n", &rep), LG_REPLY_UNEXPECTED);
    /* VALUE headers are parsed by hand: every malformation is refused. */
    static const char *const bad_headers[] = {
        "VALUE k001 0\r\n", "VALUE k001 0 \r\n", "VALUE k001  0 3\r\n", "VALUE  k001 0 3\r\n",
        "VALUE k001 0 -3\r\n", "VALUE k001 x 3\r\n", "VALUE k001 0 3x\r\n", "VALUE \r\n",
        "VALUE k001 0 18446744073709551619\r\n", "VALUE k001\r\n",
    };
    for (size_t i = 0; i < sizeof(bad_headers) / sizeof(bad_headers[0]); i++)
        cr_assert_eq(mc(&w, &get, bad_headers[i], &rep), LG_REPLY_UNEXPECTED, "'%s'", bad_headers[i]);
    cr_assert_eq(mc(&w, &get, "END\n", &rep), LG_REPLY_UNEXPECTED, "bare LF");
    cr_assert_eq(mc(&w, &set, "END\r\n", &rep), LG_REPLY_UNEXPECTED);
    cr_assert_eq(mc(&w, &set, "NOT_STORED\r\n", &rep), LG_REPLY_UNEXPECTED);
    cr_assert_eq(mc(&w, &set, "STORED\r\n", &rep), LG_REPLY_OK);
    cr_assert_eq(mc(&w, &set, "SERVER_ERROR out of memory\r\n", &rep), LG_REPLY_ERROR);
    cr_assert_eq(rep.len, strlen("SERVER_ERROR out of memory\r\n"));
    cr_assert_eq(mc(&w, &get, "ERROR\r\n", &rep), LG_REPLY_ERROR);
}

static lg_reply_rc http(const char *text, lg_reply *rep)
{
    return lg_http_parse(text, strlen(text), rep);
}

Test(http, encodes_get)
{
    const char *paths[] = { "/a", "/b.html" };
    lg_workload w = { .paths = paths, .npaths = 2 };
    lg_req r = { .op = LG_OP_HTTP, .nkeys = 1, .key = { 1 } };
    lg_buf b = { 0 };
    const char *want = "GET /b.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: stagevar-loadgen\r\n\r\n";

    cr_assert_eq(lg_http_encode(&w, "127.0.0.1", &r, &b), 0);
    cr_assert_eq(lg_buf_len(&b), strlen(want));
    cr_assert(memcmp(lg_buf_data(&b), want, strlen(want)) == 0);
    lg_buf_free(&b);
}

Test(http, frames_content_length_and_chunked)
{
    const char *cl = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhelloHTTP/1.1";
    const char *ch = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: v\r\n\r\n";
    lg_reply rep;

    cr_assert_eq(http(cl, &rep), LG_REPLY_OK);
    cr_assert_eq(rep.len, strlen(cl) - 8);
    cr_assert_eq(rep.close, 0);
    cr_assert_eq(http(ch, &rep), LG_REPLY_OK);
    cr_assert_eq(rep.len, strlen(ch));
    for (size_t n = 0; n < strlen(ch); n++)
        cr_assert_eq(lg_http_parse(ch, n, &rep), LG_REPLY_MORE, "chunked prefix %zu", n);
    for (size_t n = 0; n < strlen(cl) - 8; n++)
        cr_assert_eq(lg_http_parse(cl, n, &rep), LG_REPLY_MORE, "prefix %zu", n);
}

Test(http, errors_close_and_garbage)
{
    lg_reply rep;

    cr_assert_eq(http("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", &rep), LG_REPLY_ERROR);
    cr_assert_eq(http("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", &rep), LG_REPLY_OK);
    cr_assert_eq(rep.close, 1);
    cr_assert_eq(http("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &rep), LG_REPLY_OK);
    cr_assert_eq(rep.close, 1, "HTTP/1.0 without keep-alive closes");
    cr_assert_eq(http("HTTP/1.1 304 Not Modified\r\n\r\n", &rep), LG_REPLY_OK);
    cr_assert_eq(http("SSH-2.0-OpenSSH\r\n\r\n", &rep), LG_REPLY_UNEXPECTED);
    cr_assert_eq(http("HTTP/1.1 200 OK\r\n\r\nbody until close", &rep), LG_REPLY_UNEXPECTED);
    cr_assert_eq(http("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n", &rep), LG_REPLY_UNEXPECTED);
    cr_assert_eq(http("HTTP/1.1 100 Continue\r\n\r\n", &rep), LG_REPLY_UNEXPECTED);
    cr_assert_eq(http("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", &rep), LG_REPLY_UNEXPECTED);
}
