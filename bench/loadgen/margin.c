/* A streaming quantile estimate of timer lateness (Robbins-Monro): step
 * up by Q/(1-Q) units when a sample exceeds the estimate and down by one
 * otherwise; it settles where a share 1-Q of samples exceed it. */
#include "margin.h"

/* One unit: the estimate moves 20 ns down per timely wake and 4 us up
 * per late one, so it rises within tens of late wakes when the machine
 * gets busy and falls by 100 us in 5000 wakes (1 s at 5k req/s). The
 * quantile is p99.5, not p99: a wake-up later than the margin makes at
 * most one send late, so the sends' p99 stays on time with room over. */
#define STEP_NS 20ULL
#define UP_STEPS 199ULL     /* Q = 0.995 */

void lg_margin_init(lg_margin *m)
{
    m->est_ns = LG_MARGIN_START_NS;
}

void lg_margin_observe(lg_margin *m, uint64_t late_ns)
{
    if (late_ns > m->est_ns)
        m->est_ns += STEP_NS * UP_STEPS;
    else
        m->est_ns -= STEP_NS;
    if (m->est_ns < LG_MARGIN_MIN_NS)
        m->est_ns = LG_MARGIN_MIN_NS;
    if (m->est_ns > LG_MARGIN_MAX_NS)
        m->est_ns = LG_MARGIN_MAX_NS;
}

uint64_t lg_margin_ns(const lg_margin *m)
{
    return m->est_ns;
}
