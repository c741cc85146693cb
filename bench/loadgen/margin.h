/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How long before a send the loop stops doing other things, learnt from
 * how long those things take:
 *
 * - the margin (--spin-us auto): when to stop sleeping and start polling
 *   and spinning. A timer wakes the thread late by however long the
 *   machine takes to run it again (a few us when idle, a scheduler slice
 *   when the CPU is shared), and a send due in that lateness goes out
 *   late. The margin tracks the timer's recent p99.5 lateness, so the
 *   loop sleeps long on a quiet machine and spins more on a busy one,
 *   sending as close to schedule as a sender that always spins would,
 *   without spinning through every gap.
 * - the guard: when to stop reading replies (and polling for them), so
 *   that a read started just before a send does not make it late. It
 *   tracks the recent p99 of a read's duration (recvmsg, parsing,
 *   recording). Replies that come in later wait in the socket until the
 *   send has gone; their times are the kernel's receive stamps, so the
 *   wait is not in their latency (tstamp.h).
 * - the send: how long a send() takes, its running median. On loopback
 *   it runs the server's TCP receive too (10-13 us on the project's VM),
 *   and a request due meanwhile waits for it; --coalesce holds a request
 *   for the next one when that is due within half of it (loop.c).
 */
#ifndef LG_MARGIN_H
#define LG_MARGIN_H

#include <stdint.h>

/* Never less: the poll and the last clock spin need this much. */
#define LG_MARGIN_MIN_NS 10000ULL
/* Never more: lateness beyond this is another task holding the CPU,
 * which spinning does not prevent (the spinner is preempted as well), and
 * a thread that spins through whole gaps uses up its fair share and is
 * preempted more. Measured on the project's shared VM: with a 1 ms cap
 * the margin climbed to 0.26-0.87 ms and the schedule error was no
 * better than with a fixed 30 us. */
#define LG_MARGIN_MAX_NS 200000ULL
#define LG_MARGIN_START_NS 100000ULL

/* A read takes 2-3 us on the project's VM, and its p99 5-20 us depending
 * on what else the machine runs. Beyond the cap a read was preempted,
 * which says nothing about the next one, and a longer guard would only
 * leave replies unread for longer. */
#define LG_GUARD_MIN_NS 1000ULL
#define LG_GUARD_MAX_NS 20000ULL
#define LG_GUARD_START_NS 5000ULL

/* Clamped so that a preempted send cannot make a request wait long. */
#define LG_SEND_MIN_NS 1000ULL
#define LG_SEND_MAX_NS 50000ULL
#define LG_SEND_START_NS 10000ULL

/* Any kind: a running quantile of a duration. */
typedef struct {
    uint64_t est_ns;
} lg_margin;

/* How long before a send to stop (sleeping, or reading). */
static inline uint64_t lg_margin_ns(const lg_margin *m) { return m->est_ns; }

void lg_margin_init(lg_margin *m);
/* A timed sleep ended `late_ns` after the time it was armed for. */
void lg_margin_observe(lg_margin *m, uint64_t late_ns);

void lg_guard_init(lg_margin *g);
/* A read took `took_ns`. */
void lg_guard_observe(lg_margin *g, uint64_t took_ns);

void lg_send_est_init(lg_margin *s);
/* A send() took `took_ns`. */
void lg_send_est_observe(lg_margin *s, uint64_t took_ns);

#endif
