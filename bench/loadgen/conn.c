/* SPDX-License-Identifier: BSD-3-Clause */
/* Client connections: connect, queue, flush under limits, read and match
 * replies to requests in order. */
#define _GNU_SOURCE
#include "conn.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "stagevar.h"
#include "loop.h"
#include "retry.h"
#include "tstamp.h"

#define READ_CHUNK 65536
#define RING_START 64           /* requests queued on a connection, a power of two */
#define OUT_START 4096          /* bytes of requests encoded, not yet sent */

/* ---- the request ring (capacity a power of two) ---------------------- */

static lg_req *ring_at(const lg_conn *c, size_t i)
{
    return &c->ring[(c->head + i) & (c->cap - 1)];
}

static int ring_push(lg_conn *c, const lg_req *r)
{
    if (c->count == c->cap) {
        /* Open loop: no cap on queued requests, so the ring grows. */
        size_t cap = c->cap * 2, i;
        lg_req *p = malloc(cap * sizeof(*p));

        if (!p)
            return -1;
        for (i = 0; i < c->count; i++)
            p[i] = *ring_at(c, i);
        free(c->ring);
        c->ring = p;
        c->cap = cap;
        c->head = 0;
    }
    *ring_at(c, c->count++) = *r;
    return 0;
}

static void ring_pop(lg_conn *c)
{
    c->head = (c->head + 1) & (c->cap - 1);
    c->count--;
}

/* ---- lifecycle --------------------------------------------------------- */

int lg_conn_init(lg_conn *c, struct lg_thread *t, unsigned id)
{
    memset(c, 0, sizeof(*c));
    c->t = t;
    c->id = id;
    c->fd = -1;
    c->state = LG_CONN_DOWN;
    c->budget = UINT_MAX;
    c->client = &t->clients[id];
    /* What the first requests and replies need, allocated before the
     * run starts rather than in its first sends. */
    c->ring = malloc(RING_START * sizeof(*c->ring));
    c->cap = RING_START;
    return c->ring && lg_buf_reserve(&c->out, OUT_START) == 0 && lg_buf_reserve(&c->in, READ_CHUNK) == 0
           ? 0 : -1;
}

static void drop_socket(lg_conn *c)
{
    if (c->rev)
        event_free(c->rev);
    if (c->wev)
        event_free(c->wev);
    c->rev = c->wev = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = LG_CONN_DOWN;
    lg_buf_clear(&c->in);
}

void lg_conn_free(lg_conn *c)
{
    drop_socket(c);
    lg_buf_free(&c->out);
    lg_buf_free(&c->in);
    free(c->ring);
    c->ring = NULL;
}

/* Requests sent on a connection that is gone will never be answered. A
 * request cut in the middle of its bytes cannot be resent either: skip
 * the rest of it, so the next connection starts on a request boundary. */
static void lose_sent(lg_conn *c)
{
    while (c->written > 0) {
        lg_thread_dropped(c->t, ring_at(c, 0), 1);
        ring_pop(c);
        c->written--;
    }
    if (c->count > 0 && c->out_off > c->boundary) {
        lg_req *r = ring_at(c, 0);

        lg_buf_consume(&c->out, r->end_off - c->out_off);
        c->out_off = c->boundary = r->end_off;
        lg_thread_dropped(c->t, r, 1);
        ring_pop(c);
    }
}

static void conn_lost(lg_conn *c, uint64_t now, int failed)
{
    lose_sent(c);
    drop_socket(c);
    lg_thread_conn_down(c->t, c, now, failed);
}

/* The server ended the connection between replies: the requests it left
 * unanswered go again (retry.h), re-encoded in order ahead of those not
 * yet written; one cut in the middle of its bytes was never sent and goes
 * again without using its retry. */
static void resend_unanswered(lg_conn *c)
{
    size_t n = c->count, unanswered = c->written, i;

    c->written = 0;
    lg_buf_clear(&c->out);
    c->boundary = c->out_off;
    for (i = 0; i < n; i++) {
        lg_req r = *ring_at(c, 0);

        ring_pop(c);
        if (i < unanswered && !lg_retry_take(&r, c->answered > 0)) {
            lg_thread_dropped(c->t, &r, 1);
            continue;
        }
        if (i < unanswered)
            lg_thread_retried(c->t, &r);
        if (lg_conn_enqueue(c, &r) < 0)
            lg_thread_dropped(c->t, &r, 1);
    }
}

static void closed_between_replies(lg_conn *c, uint64_t now)
{
    resend_unanswered(c);
    drop_socket(c);
    lg_thread_conn_down(c->t, c, now, 0);
}

/* ---- writing ----------------------------------------------------------- */

static int batching(const lg_conn *c)
{
    return c->t->o->batch_ns > 0;
}

int lg_conn_enqueue(lg_conn *c, const lg_req *req)
{
    const lg_options *o = c->t->o;
    int rc = o->proto == LG_PROTO_HTTP ? lg_http_encode(&o->wl, o->host, req, &c->out)
                                       : lg_mc_encode(&o->wl, req, &c->out);
    lg_req *r;

    if (rc < 0 || ring_push(c, req) < 0)
        return -1;
    r = ring_at(c, c->count - 1);
    r->end_off = c->out_off + lg_buf_len(&c->out);
    r->sent_ns = 0;
    r->tx_kernel = 0;
    return 0;
}

/* How many queued requests the limits let us write now. */
static size_t writable_requests(const lg_conn *c)
{
    size_t n = lg_conn_unsent(c);
    unsigned max_out = c->t->o->max_outstanding;

    if (max_out)
        n = c->written >= max_out ? 0 : n < max_out - c->written ? n : max_out - c->written;
    return n < c->budget ? n : c->budget;
}

/* Requests whose last byte the kernel now has are sent, at `now`. */
static unsigned mark_sent(lg_conn *c, uint64_t now)
{
    unsigned n = 0;

    while (c->written < c->count && ring_at(c, c->written)->end_off <= c->out_off) {
        lg_req *r = ring_at(c, c->written++);

        r->sent_ns = now;
        c->boundary = r->end_off;
        if (c->budget != UINT_MAX)
            c->budget--;
        lg_thread_sent(c->t, r);
        n++;
    }
    return n;
}

unsigned lg_conn_flush(lg_conn *c)
{
    size_t allow = c->state == LG_CONN_UP ? writable_requests(c) : 0;
    uint64_t want, now;
    ssize_t n;
    unsigned sent;

    if (allow == 0)
        return 0;
    want = ring_at(c, c->written + allow - 1)->end_off - c->out_off;
    /* The send time is taken just before the kernel gets the bytes. */
    now = sv_clock_monotonic_ns();
    n = send(c->fd, lg_buf_data(&c->out), want, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            event_add(c->wev, NULL);
        else
            conn_lost(c, now, 1);
        return 0;
    }
    lg_buf_consume(&c->out, (size_t)n);
    c->out_off += (uint64_t)n;
    sent = mark_sent(c, now);
    if (sent)
        lg_thread_batch(c->t, sent, now);
    /* The socket buffer is full: resume when it drains. */
    if ((uint64_t)n < want)
        event_add(c->wev, NULL);
    return sent;
}

/* ---- reading ----------------------------------------------------------- */

/* A sequential client's connection that has had all its answers closes,
 * and the client opens a fresh one for its next requests. */
static void maybe_recycle(lg_conn *c, uint64_t now)
{
    if (c->budget == 0 && c->written == 0) {
        drop_socket(c);
        lg_thread_conn_down(c->t, c, now, 0);
    }
}

static lg_reply_rc parse_one(const lg_conn *c, const lg_req *r, lg_reply *rep)
{
    const lg_options *o = c->t->o;

    if (o->proto == LG_PROTO_HTTP)
        return lg_http_parse(lg_buf_data(&c->in), lg_buf_len(&c->in), rep);
    return lg_mc_parse(&o->wl, r, lg_buf_data(&c->in), lg_buf_len(&c->in), rep);
}

/* Match complete replies to the oldest sent requests; 0 if the
 * connection is still usable. */
static int consume_replies(lg_conn *c, const lg_rx_time *rx)
{
    while (lg_buf_len(&c->in) > 0) {
        lg_reply rep;
        lg_reply_rc rc;

        rc = c->written > 0 ? parse_one(c, ring_at(c, 0), &rep) : LG_REPLY_UNEXPECTED;
        if (rc == LG_REPLY_MORE)
            return 0;
        if (rc == LG_REPLY_UNEXPECTED) {
            /* Bytes nobody asked for, or a reply that does not fit: from
             * here on we cannot tell which reply is which. */
            lg_thread_unexpected(c->t);
            conn_lost(c, rx->mono_now, 1);
            return -1;
        }
        /* Recorded from its ring slot, which stays put until popped. */
        lg_thread_reply(c->t, c, ring_at(c, 0), rx, rc, &rep);
        ring_pop(c);
        c->written--;
        c->answered++;
        lg_buf_consume(&c->in, rep.len);
        if (rep.close) {
            closed_between_replies(c, rx->mono_now);
            return -1;
        }
    }
    return 0;
}

/* recv() that also collects the kernel's RX stamp of the last segment it
 * read: the one that completed any reply this read completes. */
static ssize_t recv_stamped(lg_conn *c, lg_rx_time *rx)
{
    union { struct cmsghdr align; char buf[256]; } control;
    struct iovec iov = { lg_buf_tail(&c->in), c->in.cap - c->in.end };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT);
    int saved = errno;

    rx->mono_now = sv_clock_monotonic_ns();
    rx->kernel_real = n > 0 ? lg_ts_from_msg(&msg) : 0;
    rx->real_now = 0;
    if (rx->kernel_real) {
        /* The other clock, to put the stamp on the monotonic scale: read
         * between two monotonic reads, it stands for their midpoint, so a
         * preemption between the reads does not move the stamp. */
        uint64_t real = sv_clock_realtime_ns(), after = sv_clock_monotonic_ns();

        rx->real_now = real - (after - rx->mono_now) / 2;
    }
    errno = saved;
    return n;
}

/* A TX stamp covers every request whose last byte its send() carried. */
static void stamp_sends(lg_conn *c, uint32_t key, uint64_t at)
{
    size_t i;

    for (i = 0; i < c->written; i++) {
        lg_req *r = ring_at(c, i);

        if ((int32_t)((uint32_t)(r->end_off - 1 - c->ts_base) - key) > 0)
            break;
        if (!r->tx_kernel && at >= r->sent_ns) {
            r->sent_ns = at;
            r->tx_kernel = 1;
        }
    }
}

/* TX stamps wait on the socket's error queue (which is also what wakes
 * the loop for them): take them before the replies they may precede. */
static void drain_tx_stamps(lg_conn *c)
{
    union { struct cmsghdr align; char buf[256]; } control;

    for (;;) {
        struct msghdr msg = { .msg_control = control.buf, .msg_controllen = sizeof(control.buf) };
        uint32_t key;
        uint64_t real;

        if (recvmsg(c->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return;
        if (lg_ts_tx_from_msg(&msg, &key, &real))
            stamp_sends(c, key, lg_ts_to_mono(real, sv_clock_realtime_ns(), sv_clock_monotonic_ns()));
    }
}

void lg_conn_read(lg_conn *c)
{
    lg_rx_time rx;
    ssize_t n;

    if (c->tx_stamps)
        drain_tx_stamps(c);
    if (lg_buf_reserve(&c->in, READ_CHUNK) < 0)
        return;
    n = recv_stamped(c, &rx);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        if (lg_retry_clean_close(c->t->o->proto == LG_PROTO_HTTP, lg_buf_len(&c->in), n, errno))
            closed_between_replies(c, rx.mono_now);
        else    /* The server closed (or reset) the connection. */
            conn_lost(c, rx.mono_now, n < 0 || c->written > 0);
        return;
    }
    c->in.end += (size_t)n;
    if (consume_replies(c, &rx) < 0)
        return;
    maybe_recycle(c, rx.mono_now);
    if (c->state == LG_CONN_UP && !batching(c))
        lg_conn_flush(c);
}

/* The loop reads when a send is not near (loop.c). */
static void on_read(evutil_socket_t fd, short what, void *arg)
{
    lg_conn *c = arg;

    (void)fd, (void)what;
    lg_thread_readable(c->t, c);
}

/* ---- connecting -------------------------------------------------------- */

/* Asked for once connected (TX stamp keys start at the first byte sent
 * after this). If the kernel refuses, replies are timed by the loop and
 * the report counts them. */
static void enable_stamps(lg_conn *c)
{
    lg_ts_mode mode = c->t->o->timestamps;

    c->tx_stamps = 0;
    c->ts_base = c->out_off;
    if (mode == LG_TS_LOOP)
        return;
    if (mode == LG_TS_KERNEL_TX && lg_ts_enable(c->fd, 1) == 0)
        c->tx_stamps = 1;
    else
        lg_ts_enable(c->fd, 0);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    lg_conn *c = arg;
    uint64_t now = sv_clock_monotonic_ns();
    int err = 0;
    socklen_t len = sizeof(err);

    (void)what;
    if (c->state == LG_CONN_UP) {
        lg_conn_flush(c);
        lg_thread_io_done(c->t, now);
        return;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
        errno = err;
        drop_socket(c);
        lg_thread_conn_down(c->t, c, now, 1);
        return;
    }
    c->state = LG_CONN_UP;
    enable_stamps(c);
    c->budget = c->t->o->seq_clients ? c->t->o->reqs_per_conn : UINT_MAX;
    event_add(c->rev, NULL);
    lg_thread_connected(c->t, c, now);
    if (!batching(c))
        lg_conn_flush(c);
}

int lg_conn_connect(lg_conn *c, uint64_t now)
{
    const lg_options *o = c->t->o;
    int one = 1;

    c->fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    /* Requests go out when we write them, unless asked to let Nagle wait. */
    if (!o->nagle && setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
        goto fail;
    c->rev = event_new(c->t->base, c->fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(c->t->base, c->fd, EV_WRITE, on_writable, c);
    if (!c->rev || !c->wev)
        goto fail;
    c->connect_ns = now;
    c->answered = 0;
    c->state = LG_CONN_CONNECTING;
    if (connect(c->fd, (const struct sockaddr *)&o->addr, o->addrlen) < 0 && errno != EINPROGRESS)
        goto fail;
    /* Writable means connected (or failed): on_writable finds out which. */
    event_add(c->wev, NULL);
    return 0;
fail:
    {
        int saved = errno;

        drop_socket(c);
        errno = saved;
    }
    return -1;
}

void lg_conn_abandon(lg_conn *c)
{
    while (c->count > 0) {
        lg_thread_dropped(c->t, ring_at(c, 0), c->written > 0);
        if (c->written > 0)
            c->written--;
        ring_pop(c);
    }
}
