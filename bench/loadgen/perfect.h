/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a perfect sender would have seen: one that does nothing but read
 * the clock and sends at no cost, on the same CPU at the same time. Its
 * only schedule error is the machine's: a send due while the CPU was
 * taken away (an interrupt, another task, the hypervisor) goes out when
 * the CPU comes back. The loop measures that in its last stretch before
 * each send, where it does nothing but read the clock: every gap between
 * two reads longer than LG_STALL_MIN_NS is such a stall. Sends due at
 * random times would fall into a stall of length g with probability
 * g / (time observed), uniformly within it, so the perfect sender's
 * error exceeds x with probability sum(max(0, g - x)) / observed. The
 * same estimate as `make bench-loadgen`'s machine floor, taken while the
 * run goes on rather than around it.
 */
#ifndef LG_PERFECT_H
#define LG_PERFECT_H

#include <stdint.h>

#include "stagevar.h"

/* Shorter gaps are the clock read itself and a pause instruction. */
#define LG_STALL_MIN_NS 2000ULL

/* The perfect sender's schedule error at quantile q (0..1), in ns, from
 * the stalls seen in `observed_ns` of clock-only spinning; 0 when nothing
 * was observed. */
uint64_t lg_perfect_quantile(const sv_hist *stalls, uint64_t observed_ns, double q);

#endif
