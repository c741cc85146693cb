/*
 * --spin-us auto: how long before a send the loop stops sleeping and
 * starts polling and spinning. A timer wakes the thread late by however
 * long the machine takes to run it again (a few us when idle, a
 * scheduler slice when the CPU is shared), and a send due in that
 * lateness goes out late. The margin tracks the timer's recent p99.5
 * lateness, so the loop sleeps long on a quiet machine and spins more on
 * a busy one, sending as close to schedule as a sender that always spins
 * would, without spinning through every gap.
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

typedef struct {
    uint64_t est_ns;    /* running p99.5 of the timer's lateness */
} lg_margin;

void lg_margin_init(lg_margin *m);
/* A timed sleep ended `late_ns` after the time it was armed for. */
void lg_margin_observe(lg_margin *m, uint64_t late_ns);
/* How long before a send to stop sleeping. */
uint64_t lg_margin_ns(const lg_margin *m);

#endif
