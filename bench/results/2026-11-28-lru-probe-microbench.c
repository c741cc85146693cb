/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one probe of the amortized LRU's slices costs, against a bare
 * zero-timeout epoll_wait() and a clock read (2026-11-28-lru-cpu-cost.md):
 *   cc -O2 -o /tmp/probe bench/results/2026-11-28-lru-probe-microbench.c -levent
 *   taskset -c 1 /tmp/probe
 */
#include <event2/event.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 200000

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void probe_fired(evutil_socket_t fd, short which, void *base) {
    (void)fd;
    (void)which;
    event_base_loopbreak(base);
}

static void readable(evutil_socket_t fd, short which, void *arg) {
    (void)fd;
    (void)which;
    (void)arg;
}

int main(void) {
    struct epoll_event ev = { .events = EPOLLIN }, out[32];
    struct event_base *base = event_base_new();
    struct event *probe, *input;
    struct timespec ts;
    int fds[2], ep, i;
    double t0;

    if (base == NULL || pipe(fds) != 0 || (ep = epoll_create1(0)) < 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) != 0) {
        perror("setup");
        return 1;
    }
    t0 = now_ns();
    for (i = 0; i < ROUNDS; i++) {
        epoll_wait(ep, out, 32, 0);
    }
    printf("epoll_wait, zero timeout: %.0f ns\n", (now_ns() - t0) / ROUNDS);

    input = event_new(base, fds[0], EV_READ | EV_PERSIST, readable, NULL);
    probe = evtimer_new(base, probe_fired, base);
    event_add(input, NULL);
    t0 = now_ns();
    for (i = 0; i < ROUNDS; i++) {
        event_active(probe, EV_TIMEOUT, 1);
        event_base_loop(base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
    }
    printf("probe (event_active + non-blocking event_base_loop): %.0f ns\n", (now_ns() - t0) / ROUNDS);

    t0 = now_ns();
    for (i = 0; i < ROUNDS; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
    }
    printf("clock_gettime: %.0f ns\n", (now_ns() - t0) / ROUNDS);
    return 0;
}
