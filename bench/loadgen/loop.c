/* SPDX-License-Identifier: BSD-3-Clause */
/* A load-generating thread: connect, pace sends to the schedule, collect
 * replies, drain, and account for every measured request. */
#define _GNU_SOURCE
#include "loop.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "perfect.h"
#include "stagevar.h"

#define CONNECT_TIMEOUT_NS 5000000000ULL
#define RETRY_NS 10000000ULL            /* reconnect after a failure */
/* No read or poll starts within the guard (margin.h) of a send, so when
 * sends come closer together than that (a Poisson burst, or a rate near
 * the thread's capacity) replies could wait for a gap indefinitely. A
 * connection found readable is read after this long, and the sockets are
 * polled this often, however close the next send. */
#define MAX_DEFER_NS 20000ULL
/* Awake before a send with time to spare, the loop polls this often and
 * spins on the clock in between: a reply found then is read within a few
 * us, and most of the time goes to the clock alone, whose stalls are the
 * perfect sender's (perfect.h), rather than to epoll_wait calls. */
#define POLL_EVERY_NS 5000ULL

/* A spin-wait's pause: it tells the CPU that the loop waits, which saves
 * power and the sibling hyperthread's share; a plain loop elsewhere. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- setup ------------------------------------------------------------- */

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    lg_thread *t = arg;
    uint64_t expirations;

    /* Only here to end a blocking wait (the loop does the work); reading
     * the count re-arms the timerfd's readability. */
    (void)what;
    t->armed_ns = 0;
    if (read(fd, &expirations, sizeof(expirations)) < 0)
        return;
}

/* Our own timerfd, armed at an absolute CLOCK_MONOTONIC time (the clock
 * the schedule uses) only before a blocking wait. libevent's precise
 * timers would instead re-arm a timerfd, one more syscall, on every
 * non-blocking poll of the spin phase. A sleep that a reply cut short is
 * usually followed by one to the same time: the timer is still armed. */
static void arm_wake(lg_thread *t, uint64_t at_ns)
{
    struct itimerspec its = { { 0, 0 }, { (time_t)(at_ns / 1000000000ULL), (long)(at_ns % 1000000000ULL) } };

    if (at_ns == t->armed_ns)
        return;
    timerfd_settime(t->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    t->armed_ns = at_ns;
}

static struct event_base *new_base(void)
{
    struct event_config *cfg = event_config_new();
    struct event_base *base;

    if (!cfg)
        return NULL;
    /* One thread per base; no libevent timers (see arm_wake). Read
     * callbacks only queue their connection (ready.h), so a pass over
     * many ready connections is short and needs no dispatch limit. */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

int lg_thread_init(lg_thread *t, unsigned id, const lg_options *o, lg_run *run)
{
    unsigned i, n = lg_options_slots(o);

    memset(t, 0, sizeof(*t));
    t->tfd = -1;
    t->id = id;
    t->o = o;
    t->run = run;
    t->nconns = n;
    t->base = new_base();
    t->conns = calloc(n, sizeof(*t->conns));
    t->clients = calloc(n, sizeof(*t->clients));
    if (!t->base || !t->conns || !t->clients || lg_stats_init(&t->st) < 0 ||
        lg_ready_init(&t->ready, n) < 0)
        return -1;
    t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    t->wake = t->tfd >= 0 ? event_new(t->base, t->tfd, EV_READ | EV_PERSIST, on_wake, t) : NULL;
    if (!t->wake || event_add(t->wake, NULL) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        sv_moments_reset(&t->clients[i].m);
        sv_hist_reset(&t->clients[i].h);
        if (lg_conn_init(&t->conns[i], t, i) < 0)
            return -1;
    }
    /* The first seconds of the time series, so that the first measured
     * requests do not wait for their allocation. */
    if (!lg_stats_second(&t->st, 0))
        return -1;
    lg_rng_seed(&t->rng, o->seed, 0x10000 + id);
    lg_margin_init(&t->margin);
    lg_guard_init(&t->guard);
    lg_send_est_init(&t->send_est);
    return 0;
}

void lg_thread_free(lg_thread *t)
{
    unsigned i;

    for (i = 0; t->conns && i < t->nconns; i++)
        lg_conn_free(&t->conns[i]);
    free(t->conns);
    free(t->clients);
    if (t->wake)
        event_free(t->wake);
    if (t->tfd >= 0)
        close(t->tfd);
    if (t->base)
        event_base_free(t->base);
    lg_ready_free(&t->ready);
    lg_stats_free(&t->st);
}

/* ---- connection callbacks --------------------------------------------- */

/* The schedule error, and the part of it that is the loop's own: a
 * request that fell due while the thread was still in an earlier send()
 * (which on loopback runs the server's TCP receive, and wakes it) could
 * not go before that returned, whatever the wait did. */
void lg_thread_sent(lg_thread *t, const lg_req *req)
{
    uint64_t err = req->sent_ns - req->sched_ns;
    uint64_t could_go = req->sched_ns > t->sent_back_ns ? req->sched_ns : t->sent_back_ns;

    /* How late the load began, from its first send: warm-up when there
     * is a warm-up, so taken before the check below. */
    if (!t->sent_first) {
        t->sent_first = 1;
        t->first_late_ns = err;
    }
    /* A resent request was counted, and its schedule error taken, when
     * it first went out. */
    if (!req->measured || req->resent)
        return;
    t->st.c.sent++;
    sv_record(t->st.rec, LG_SCHED_ERR, (int64_t)err);
    sv_record(t->st.rec, LG_LOOP_LATE, req->sent_ns > could_go ? (int64_t)(req->sent_ns - could_go) : 0);
    if ((double)err > t->o->late_ns)
        t->st.c.late++;
}

void lg_thread_batch(lg_thread *t, unsigned n, uint64_t start)
{
    t->sent_back_ns = sv_clock_monotonic_ns();
    lg_send_est_observe(&t->send_est, t->sent_back_ns - start);
    if (t->measuring)
        sv_record(t->st.rec, LG_BATCH, n);
}

static void record_second(lg_thread *t, const lg_req *req, uint64_t now, uint64_t lat, int error)
{
    lg_second *s = lg_stats_second(&t->st, (req->sched_ns - t->measure_start) / 1000000000ULL);

    if (s) {
        sv_moments_add(&s->lat_m, lat);
        sv_hist_add(&s->lat, lat);
        s->errors += error;
    }
    s = now >= t->measure_start ? lg_stats_second(&t->st, (now - t->measure_start) / 1000000000ULL) : NULL;
    if (s)
        s->completed++;
}

/* The reply's time is the kernel's when it has one (tstamp.h); the
 * loop's read time stays as a third figure, and the difference is the
 * client's own delay in getting to the reply. */
static uint64_t reply_time(lg_thread *t, const lg_req *req, const lg_rx_time *rx)
{
    int kernel;
    uint64_t at = lg_ts_reply_at(rx, req->sent_ns, &kernel);

    if (kernel) {
        t->st.c.kernel_timed++;
        sv_record(t->st.rec, LG_CLIENT_DELAY, (int64_t)(rx->mono_now - at));
    } else {
        t->st.c.loop_timed++;
    }
    sv_record(t->st.rec, LG_LAT_READ, (int64_t)(rx->mono_now - req->sched_ns));
    t->st.c.sends_kernel_timed += req->tx_kernel;
    return at;
}

void lg_thread_reply(lg_thread *t, lg_conn *c, const lg_req *req, const lg_rx_time *rx,
                     lg_reply_rc rc, const lg_reply *reply)
{
    lg_counters *k = &t->st.c;
    uint64_t at, lat;

    if (!req->measured)
        return;
    at = reply_time(t, req, rx);
    lat = at - req->sched_ns;
    t->pending--;
    k->completed++;
    k->in_window += at < t->measure_end;
    if (rc == LG_REPLY_OK)
        k->ok++;
    else
        k->errors++;
    if (req->op == LG_OP_GET) {
        k->gets++;
        k->get_keys += req->nkeys;
        k->hits += reply->hits;
    } else if (req->op == LG_OP_SET) {
        k->sets++;
    }
    sv_record(t->st.rec, LG_LAT_SCHED, (int64_t)lat);
    sv_record(t->st.rec, LG_LAT_SENT, (int64_t)(at - req->sent_ns));
    sv_moments_add(&c->client->m, lat);
    sv_hist_add(&c->client->h, lat);
    record_second(t, req, at, lat, rc != LG_REPLY_OK);
    __atomic_store_n(&t->progress, k->completed, __ATOMIC_RELAXED);
}

void lg_thread_retried(lg_thread *t, const lg_req *req)
{
    if (req->measured)
        t->st.c.retried++;
}

void lg_thread_dropped(lg_thread *t, const lg_req *req, int sent)
{
    if (!req->measured)
        return;
    t->pending--;
    /* Lost with a connection during the run; at the end, whatever is
     * still queued or unanswered has run out of time. */
    if (t->ending || !sent)
        t->st.c.timeouts++;
    else
        t->st.c.lost++;
}

void lg_thread_readable(lg_thread *t, lg_conn *c)
{
    lg_ready_push(&t->ready, c->id, sv_clock_monotonic_ns());
}

void lg_thread_io_done(lg_thread *t, uint64_t start)
{
    if (t->measuring)
        t->st.busy_ns += sv_clock_monotonic_ns() - start;
}

void lg_thread_unexpected(lg_thread *t)
{
    t->st.c.unexpected++;
}

void lg_thread_connected(lg_thread *t, lg_conn *c, uint64_t now)
{
    if (t->connecting)
        t->up++;
    if (t->measuring) {
        t->st.c.conns_opened++;
        sv_record(t->st.rec, LG_CONNECT, (int64_t)(now - c->connect_ns));
    }
}

static void schedule_retry(lg_thread *t, lg_conn *c, uint64_t now)
{
    c->retry_ns = now + RETRY_NS;
    if (t->down++ == 0 || c->retry_ns < t->next_retry)
        t->next_retry = c->retry_ns;
}

void lg_thread_conn_down(lg_thread *t, lg_conn *c, uint64_t now, int failed)
{
    if (t->connecting) {
        /* At start-up a failure is fatal: report it, do not retry. */
        if (failed && !t->failed) {
            t->failed = 1;
            snprintf(t->err, LG_ERRLEN, "cannot connect to %s port %u: %s", t->o->host, t->o->port,
                     strerror(errno ? errno : ECONNREFUSED));
        }
        return;
    }
    if (failed)
        t->st.c.connect_errors++;
    /* A clean close (sequential client done, server's Connection: close)
     * reconnects at once; a failure waits a little before trying again. */
    if (!failed && lg_conn_connect(c, now) == 0)
        return;
    schedule_retry(t, c, now);
}

static void retry_down(lg_thread *t, uint64_t now)
{
    unsigned i;

    if (t->down == 0 || now < t->next_retry)
        return;
    t->down = 0;
    t->next_retry = UINT64_MAX;
    for (i = 0; i < t->nconns; i++) {
        lg_conn *c = &t->conns[i];

        if (c->state != LG_CONN_DOWN)
            continue;
        if (c->retry_ns > now) {
            schedule_retry(t, c, c->retry_ns - RETRY_NS);
            continue;
        }
        if (lg_conn_connect(c, now) < 0) {
            t->st.c.connect_errors++;
            schedule_retry(t, c, now);
        }
    }
}

/* ---- start-up ---------------------------------------------------------- */

static void pin(lg_thread *t)
{
    cpu_set_t set;
    int rc;

    if (t->o->ncpus == 0)
        return;
    CPU_ZERO(&set);
    CPU_SET(t->o->cpu[t->id % t->o->ncpus], &set);
    rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc != 0 && !t->failed) {
        t->failed = 1;
        snprintf(t->err, LG_ERRLEN, "cannot pin thread %u to CPU %d: %s", t->id,
                 t->o->cpu[t->id % t->o->ncpus], strerror(rc));
    }
}

/* Open every connection before the clock starts, so connection set-up
 * never delays the first scheduled sends. */
static void connect_all(lg_thread *t)
{
    uint64_t start = sv_clock_monotonic_ns();
    unsigned i;

    t->connecting = 1;
    for (i = 0; i < t->nconns && !t->failed; i++) {
        if (lg_conn_connect(&t->conns[i], start) < 0)
            lg_thread_conn_down(t, &t->conns[i], start, 1);
    }
    while (!t->failed && t->up < t->nconns) {
        if (sv_clock_monotonic_ns() - start > CONNECT_TIMEOUT_NS) {
            t->failed = 1;
            snprintf(t->err, LG_ERRLEN, "connecting to %s port %u timed out", t->o->host, t->o->port);
            break;
        }
        arm_wake(t, sv_clock_monotonic_ns() + 100000000ULL);
        event_base_loop(t->base, EVLOOP_ONCE);
    }
    t->connecting = 0;
}

/* Each thread waits for the origin itself, so that the load starts when
 * its threads do, not when a thread that slept through the origin's
 * arrival gets a CPU. It waits as for a send (wait_until): it sleeps to
 * within the spin margin of the origin (the timer slack is 1 ns,
 * lg_thread_main) and spins the rest on CLOCK_REALTIME, the clock
 * --start-at names, so that no thread begins before that instant
 * whatever the error of its mapping onto the monotonic clock (main.c).
 * A real clock stepped back during the spin ends it. The read that
 * ended the spin is when this thread began. */
static void wait_for_origin(lg_thread *t)
{
    const lg_run *run = t->run;
    uint64_t spin = t->o->spin_auto ? lg_margin_ns(&t->margin) : (uint64_t)t->o->spin_ns;
    uint64_t wake = run->start_ns - spin, now, prev;
    struct timespec at = { (time_t)(wake / 1000000000ULL), (long)(wake % 1000000000ULL) };

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
    now = sv_clock_realtime_ns();
    for (prev = now; now < run->start_unix_ns && now >= prev; now = sv_clock_realtime_ns()) {
        prev = now;
        cpu_relax();
    }
    t->woke_unix_ns = now;
}

static void start_phases(lg_thread *t)
{
    const lg_options *o = t->o;
    uint64_t start = t->run->start_ns;

    t->measure_start = start + (uint64_t)o->warmup_ns;
    t->measure_end = o->requests ? UINT64_MAX : t->measure_start + (uint64_t)o->duration_ns;
    t->to_measure = o->requests / o->threads + (t->id < o->requests % o->threads);
    /* Each thread is its own arrival stream with 1/T of the rate. */
    lg_schedule_init(&t->sched, &o->arrival, o->rate / o->threads, o->trace.n ? &o->trace : NULL,
                     1.0 / o->threads, (double)t->measure_start, (double)start, o->seed, t->id);
    t->next_ns = lg_schedule_next(&t->sched);
    t->next_flush = start + (uint64_t)o->batch_ns;
    t->next_retry = UINT64_MAX;
    t->generating = 1;
}

/* ---- generating -------------------------------------------------------- */

static void cpu_now(double *user, double *sys)
{
    struct rusage ru;

    if (getrusage(RUSAGE_THREAD, &ru) < 0) {
        *user = *sys = 0;
        return;
    }
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void begin_measuring(lg_thread *t)
{
    double u, s;

    t->measuring = 1;
    cpu_now(&u, &s);
    t->st.cpu_user_s = -u;
    t->st.cpu_sys_s = -s;
}

static void stop_generating(lg_thread *t, uint64_t now)
{
    double u, s;

    t->generating = 0;
    if (t->measuring) {
        cpu_now(&u, &s);
        t->st.cpu_user_s += u;
        t->st.cpu_sys_s += s;
    }
    t->measuring = 0;
    t->deadline = (t->measure_end != UINT64_MAX && t->measure_end > now ? t->measure_end : now) +
                  (uint64_t)t->o->timeout_ns;
}

static void make_request(lg_thread *t, lg_req *r, uint64_t sched)
{
    const lg_workload *w = &t->o->wl;
    unsigned i;

    r->sched_ns = sched;
    r->sent_ns = 0;
    r->retries = 0;
    r->resent = 0;
    r->tx_kernel = 0;
    r->nkeys = 1;
    if (t->o->proto == LG_PROTO_HTTP) {
        r->op = LG_OP_HTTP;
    } else if (w->stream > 0 && lg_rng_uniform(&t->rng) < w->stream) {
        /* Drawn only with --stream, so runs without it keep their keys. */
        r->op = LG_OP_SET;
        r->key[0] = lg_stream_key(w, t->streamed++, t->id, t->o->threads);
        return;
    } else if (lg_rng_uniform(&t->rng) < w->get_ratio) {
        r->op = LG_OP_GET;
        r->nkeys = (uint16_t)w->multiget;
    } else {
        r->op = LG_OP_SET;
    }
    for (i = 0; i < r->nkeys; i++)
        r->key[i] = (uint32_t)lg_pop_draw(&w->pop, &t->rng);
}

/* Is the request scheduled at `sched` warm-up (0), measured (1), or past
 * the end of the measurement (-1)? */
static int classify(lg_thread *t, uint64_t sched)
{
    if (sched < t->measure_start)
        return 0;
    if (sched >= t->measure_end || (t->o->requests && t->to_measure == 0))
        return -1;
    if (t->o->requests)
        t->to_measure--;
    return 1;
}

/* The next request falls past the measurement (or --requests are all
 * scheduled): nothing more to generate. */
static void stop_if_scheduled_out(lg_thread *t, uint64_t now)
{
    if (t->generating && (t->next_ns >= t->measure_end || t->next_ns == UINT64_MAX ||
                          (t->o->requests && t->to_measure == 0 && t->next_ns >= t->measure_start)))
        stop_generating(t, now);
}

/* Write what the last pass queued: one send() per connection, so
 * requests that fell due together on one connection (the thread was
 * behind) share a write instead of paying a syscall each. */
static void flush_queued(lg_thread *t, unsigned first, unsigned n)
{
    unsigned i;

    if (t->o->batch_ns > 0)
        return;     /* the batch clock flushes */
    for (i = 0; i < n && i < t->nconns; i++)
        lg_conn_flush(&t->conns[(first + i) % t->nconns]);
}

/* --coalesce: should the next request join the ones held on conns[rr]
 * and go in their send()? Yes when it is due within half a send() of the
 * first of them: sent apart, it would wait for the rest of their send,
 * more than half of it; held, they wait less than half for it. Either
 * way a collision costs at most half a send instead of a whole one. Not
 * where a request's connection matters: the batch clock spreads requests
 * over connections, and a closed loop's or a sequential client's
 * connection may not take another request now. */
static int join_held(const lg_thread *t)
{
    const lg_options *o = t->o;

    return o->coalesce && t->generating && o->batch_ns == 0 && !o->max_outstanding && !o->seq_clients &&
           t->next_ns - t->held_since < lg_margin_ns(&t->send_est) / 2;
}

/* The requests on conns[rr] go at the end of this pass, and the next
 * request to the next connection: connections take the thread's
 * arrivals in turn. */
static void release_held(lg_thread *t, unsigned *released)
{
    t->held = 0;
    t->rr = t->rr + 1 == t->nconns ? 0 : t->rr + 1;
    (*released)++;
}

static int generate(lg_thread *t, uint64_t now)
{
    unsigned first = t->rr, released = 0;

    while (t->generating && t->next_ns <= now) {
        int phase = classify(t, t->next_ns);
        lg_req r;

        if (phase < 0) {
            stop_generating(t, now);
            break;
        }
        r.measured = (uint8_t)phase;
        make_request(t, &r, t->next_ns);
        if (lg_conn_enqueue(&t->conns[t->rr], &r) < 0) {
            snprintf(t->err, LG_ERRLEN, "out of memory queueing requests");
            return -1;
        }
        if (phase) {
            lg_second *s = lg_stats_second(&t->st, (t->next_ns - t->measure_start) / 1000000000ULL);

            if (s)
                s->scheduled++;
            t->st.c.scheduled++;
            t->pending++;
            t->last_measured_ns = t->next_ns;
        } else {
            t->st.c.warmup_requests++;
        }
        if (t->held++ == 0)
            t->held_since = t->next_ns;
        t->next_ns = lg_schedule_next(&t->sched);
        stop_if_scheduled_out(t, now);
        if (!join_held(t))
            release_held(t, &released);
        else if (phase && t->next_ns > now)
            t->st.c.held++;
    }
    stop_if_scheduled_out(t, now);
    if (t->held && !t->generating)
        release_held(t, &released);
    flush_queued(t, first, released);
    return 0;
}

/* The batch clock: every connection writes what it has queued. */
static void batch_tick(lg_thread *t, uint64_t now)
{
    unsigned i;

    if (t->o->batch_ns == 0 || now < t->next_flush)
        return;
    for (i = 0; i < t->nconns; i++)
        if (lg_conn_unsent(&t->conns[i]) > 0)
            lg_conn_flush(&t->conns[i]);
    while (t->next_flush <= now)
        t->next_flush += (uint64_t)t->o->batch_ns;
}

/* ---- the loop ---------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint64_t next_wake(const lg_thread *t)
{
    uint64_t wake = t->generating ? min_u64(t->next_ns, t->measure_end) : t->deadline;

    if (t->o->batch_ns > 0)
        wake = min_u64(wake, t->next_flush);
    if (t->down > 0)
        wake = min_u64(wake, t->next_retry);
    return wake;
}

/* Block in the event loop until `at` (or a socket is ready). How late
 * past `at` the loop got back (the timer's wake-up, or a write callback
 * that ran past it: either delays the send) teaches --spin-us auto how
 * early to stop sleeping; an early return for a reply teaches nothing. */
static uint64_t sleep_until(lg_thread *t, uint64_t at, uint64_t now)
{
    arm_wake(t, at);
    event_base_loop(t->base, EVLOOP_ONCE);
    now = t->polled_ns = sv_clock_monotonic_ns();
    if (t->o->spin_auto && now >= at)
        lg_margin_observe(&t->margin, now - at);
    return now;
}

/* ONCE too: without it libevent polls again while any callback ran, and
 * a connection stays readable until the loop reads it. */
static uint64_t poll_once(lg_thread *t, uint64_t now)
{
    t->polled_ns = now;
    event_base_loop(t->base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
    return sv_clock_monotonic_ns();
}

/* Read the connection found readable first (conn.c), and learn from how
 * long that took how close to a send a read may start. */
static uint64_t read_one(lg_thread *t, uint64_t now)
{
    lg_conn *c = &t->conns[lg_ready_pop(&t->ready)];
    uint64_t done;

    if (c->state != LG_CONN_UP)
        return now;     /* dropped since it was found readable */
    lg_conn_read(c);
    done = sv_clock_monotonic_ns();
    lg_guard_observe(&t->guard, done - now);
    if (t->measuring)
        t->st.busy_ns += done - now;
    return done;
}

/* The last stretch before a send: the clock alone. Its stalls are what a
 * perfect sender would suffer on this CPU now (perfect.h). */
static uint64_t spin_until(lg_thread *t, uint64_t wake, uint64_t now)
{
    uint64_t from = now;

    while (now < wake) {
        uint64_t before = now;

        cpu_relax();
        now = sv_clock_monotonic_ns();
        if (now - before > LG_STALL_MIN_NS && t->measuring)
            sv_record(t->st.rec, LG_SPIN_STALL, (int64_t)(now - before));
    }
    if (t->measuring)
        t->st.spun_ns += now - from;
    return now;
}

/* One step of waiting for the wake time: read a connection found
 * readable, sleep in the event loop until the margin before the wake
 * time, poll without blocking, or spin on the clock alone. A timer wakes
 * up tens of microseconds late on a busy machine, a spinning loop within
 * a few; within the guard of the wake time nothing but the clock runs, so
 * a reply that comes in then waits for the send (unless replies have
 * waited MAX_DEFER_NS). Returns the time the step ended (after a spin,
 * the very read that crossed the wake time), which the caller uses. */
static uint64_t wait_until(lg_thread *t, uint64_t wake, uint64_t now)
{
    uint64_t spin = t->o->spin_auto ? lg_margin_ns(&t->margin) : (uint64_t)t->o->spin_ns;
    uint64_t guard = lg_margin_ns(&t->guard);
    int room = wake > now + guard;

    if (!lg_ready_empty(&t->ready)) {
        if (room || now - lg_ready_oldest(&t->ready) > MAX_DEFER_NS)
            return read_one(t, now);
    } else if (room && wake > now + spin) {
        return sleep_until(t, wake - spin, now);
    } else if (now - t->polled_ns > (room ? POLL_EVERY_NS : MAX_DEFER_NS)) {
        return poll_once(t, now);
    }
    /* With room to spare, only until the next poll is due. */
    if (room)
        wake = min_u64(wake - guard, t->polled_ns + POLL_EVERY_NS);
    return spin_until(t, wake, now);
}

/* One clock read ends the work of a pass and starts the wait; the wait
 * returns the time it ended (after a spin, the very read that crossed
 * the send time), which the next pass uses. */
static int run_loop(lg_thread *t)
{
    uint64_t now = sv_clock_monotonic_ns();

    for (;;) {
        uint64_t done;

        if (!t->measuring && t->generating && now >= t->measure_start)
            begin_measuring(t);
        if (generate(t, now) < 0)
            return -1;
        batch_tick(t, now);
        retry_down(t, now);
        done = sv_clock_monotonic_ns();
        if (t->measuring)
            t->st.busy_ns += done - now;
        if (!t->generating && (t->pending == 0 || done >= t->deadline))
            return 0;
        now = wait_until(t, next_wake(t), done);
    }
}

void *lg_thread_main(void *arg)
{
    lg_thread *t = arg;
    unsigned i;

    pin(t);
    /* The kernel's default 50 us timer slack would be our schedule error. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (!t->failed)
        connect_all(t);
    pthread_barrier_wait(&t->run->connected);
    pthread_barrier_wait(&t->run->started);
    if (__atomic_load_n(&t->run->abort, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&t->run->finished, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    wait_for_origin(t);
    start_phases(t);
    if (run_loop(t) < 0)
        t->failed = 1;
    /* Whatever is still queued or unanswered has run out of time. */
    t->ending = 1;
    for (i = 0; i < t->nconns; i++)
        lg_conn_abandon(&t->conns[i]);
    __atomic_add_fetch(&t->run->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}
