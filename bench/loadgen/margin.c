/* SPDX-License-Identifier: BSD-3-Clause */
/* Streaming quantile estimates (Robbins-Monro): step up by Q/(1-Q) units
 * when a sample exceeds the estimate and down by one otherwise; the
 * estimate settles where a share 1-Q of samples exceed it. */
#include "margin.h"

/* The timer margin: one unit is 20 ns, so the estimate moves down 20 ns
 * per timely wake and up 4 us per late one: it rises within tens of late
 * wakes when the machine gets busy and falls by 100 us in 5000 wakes (1 s
 * at 5k req/s). The quantile is p99.5, not p99: a wake-up later than the
 * margin makes at most one send late, so the sends' p99 stays on time
 * with room over. */
#define MARGIN_STEP_NS 20ULL
#define MARGIN_UP_STEPS 199ULL      /* Q = 0.995 */
/* The read guard: p99 in 10 ns units (up 0.99 us per read longer than
 * the guard). Reads are about as many as requests, so it follows a
 * change of machine within a few thousand requests. */
#define GUARD_STEP_NS 10ULL
#define GUARD_UP_STEPS 99ULL        /* Q = 0.99 */
/* The send: the median in 10 ns units, one send per request or fewer. */
#define SEND_STEP_NS 10ULL
#define SEND_UP_STEPS 1ULL          /* Q = 0.5 */

static uint64_t track(uint64_t est, uint64_t sample, uint64_t step, uint64_t up_steps,
                      uint64_t min, uint64_t max)
{
    est = sample > est ? est + step * up_steps : est - step;
    return est < min ? min : est > max ? max : est;
}

void lg_margin_init(lg_margin *m)
{
    m->est_ns = LG_MARGIN_START_NS;
}

void lg_margin_observe(lg_margin *m, uint64_t late_ns)
{
    m->est_ns = track(m->est_ns, late_ns, MARGIN_STEP_NS, MARGIN_UP_STEPS, LG_MARGIN_MIN_NS,
                      LG_MARGIN_MAX_NS);
}

void lg_guard_init(lg_margin *g)
{
    g->est_ns = LG_GUARD_START_NS;
}

void lg_guard_observe(lg_margin *g, uint64_t took_ns)
{
    g->est_ns = track(g->est_ns, took_ns, GUARD_STEP_NS, GUARD_UP_STEPS, LG_GUARD_MIN_NS,
                      LG_GUARD_MAX_NS);
}

void lg_send_est_init(lg_margin *s)
{
    s->est_ns = LG_SEND_START_NS;
}

void lg_send_est_observe(lg_margin *s, uint64_t took_ns)
{
    s->est_ns = track(s->est_ns, took_ns, SEND_STEP_NS, SEND_UP_STEPS, LG_SEND_MIN_NS, LG_SEND_MAX_NS);
}
