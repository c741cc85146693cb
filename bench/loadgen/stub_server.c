/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stub-server: the cheapest memcached-text-protocol server we can write,
 * for measuring how fast one loadgen thread can go when the server is not
 * the bottleneck (`make bench-loadgen`).
 *
 * It answers every "get ..." line with "END\r\n" (a miss) and every other
 * line with "ERROR\r\n"; it stores nothing. One thread, one epoll set
 * polled without blocking (a saturated server never sleeps either, so a
 * client's send never has to wake it), all replies of one read in one
 * send (a client that does not read its replies is dropped). It exits
 * when its parent does, and after --seconds (default 600) anyway, so a
 * busy-polling process never outlives the benchmark that started it.
 * Loopback only.
 *
 * usage: stub-server -p PORT [--seconds N]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 64
#define BUF_SIZE 65536
#define MAX_CONNS 1024

typedef struct {
    char in[BUF_SIZE];
    size_t len;
} stub_conn;

static stub_conn *conns[MAX_CONNS];
/* The worst case: every byte a line ending, each answered "ERROR\r\n". */
static char out[BUF_SIZE * 7];

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
    char *end;

    errno = 0;
    *v = strtoul(s, &end, 10);
    return errno || *s == '\0' || *end != '\0' || *v == 0 || *v > max ? -1 : 0;
}

static int listen_on(unsigned port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0)
        return -1;
    return fd;
}

static void drop(int ep, int fd)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
    free(conns[fd]);
    conns[fd] = NULL;
}

static void accept_all(int ep, int lfd)
{
    struct epoll_event ev = { .events = EPOLLIN };
    int fd, one = 1;

    while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        if (fd >= MAX_CONNS || !(conns[fd] = calloc(1, sizeof(stub_conn)))) {
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ev.data.fd = fd;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
            drop(ep, fd);
    }
}

/* Answer every complete line in the buffer; keep a partial one. */
static size_t answer_lines(stub_conn *c)
{
    size_t off = 0, n = 0;
    char *nl;

    while ((nl = memchr(c->in + off, '\n', c->len - off)) != NULL) {
        const char *r = memcmp(c->in + off, "get ", 4) == 0 ? "END\r\n" : "ERROR\r\n";
        size_t rl = strlen(r);

        memcpy(out + n, r, rl);
        n += rl;
        off = (size_t)(nl - c->in) + 1;
    }
    memmove(c->in, c->in + off, c->len - off);
    c->len -= off;
    return n;
}

static void serve(int ep, int fd)
{
    stub_conn *c = conns[fd];
    ssize_t n = recv(fd, c->in + c->len, sizeof(c->in) - c->len, 0);
    size_t reply;

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        drop(ep, fd);
        return;
    }
    c->len += (size_t)n;
    reply = answer_lines(c);
    /* A line longer than the buffer is no request of ours; a client that
     * stops reading its replies is not one either. */
    if (c->len == sizeof(c->in) ||
        (reply && send(fd, out, reply, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)reply))
        drop(ep, fd);
}

int main(int argc, char **argv)
{
    unsigned long port = 0, seconds = 600;
    struct epoll_event ev = { .events = EPOLLIN }, evs[MAX_EVENTS];
    int i, lfd, ep;
    time_t end;

    for (i = 1; i < argc; i += 2) {
        unsigned long *v = strcmp(argv[i], "-p") == 0 ? &port : strcmp(argv[i], "--seconds") == 0 ? &seconds : NULL;

        if (!v || i + 1 >= argc || parse_uint(argv[i + 1], v == &port ? 65535 : 86400, v) < 0) {
            fprintf(stderr, "stub-server: bad argument '%s' (usage: stub-server -p PORT [--seconds N])\n",
                    i + 1 < argc && v ? argv[i + 1] : argv[i]);
            return 2;
        }
    }
    if (port == 0) {
        fprintf(stderr, "stub-server: -p PORT is required\n");
        return 2;
    }
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0) {
        fprintf(stderr, "stub-server: cannot ask to die with its parent: %s\n", strerror(errno));
        return 1;
    }
    lfd = listen_on((unsigned)port);
    ep = epoll_create1(EPOLL_CLOEXEC);
    ev.data.fd = lfd;
    if (lfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0) {
        fprintf(stderr, "stub-server: cannot listen on 127.0.0.1 port %lu: %s\n", port, strerror(errno));
        return 1;
    }
    end = time(NULL) + (time_t)seconds;
    while (time(NULL) < end) {
        int n = epoll_wait(ep, evs, MAX_EVENTS, 0);

        for (i = 0; i < n; i++) {
            if (evs[i].data.fd == lfd)
                accept_all(ep, lfd);
            else
                serve(ep, evs[i].data.fd);
        }
    }
    return 0;
}
