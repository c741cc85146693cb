/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/* bench_record: the cost of one sv_record() on the hot path, in ns.
 * Spans cycle through a spread of magnitudes so the bucket index and
 * the cache lines touched vary as they do for real latencies. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "stagevar.h"

#define STAGES 6
#define ROUNDS 5
#define PER_ROUND 20000000u

int main(void)
{
    sv_recorder *r = sv_recorder_new(STAGES);
    double best = 1e30;
    unsigned round, i;

    if (r == NULL) {
        fprintf(stderr, "bench_record: out of memory\n");
        return 1;
    }
    for (round = 0; round < ROUNDS; round++) {
        uint64_t start = sv_clock_monotonic_ns(), elapsed;
        uint64_t x = 88172645463325252u;

        for (i = 0; i < PER_ROUND; i++) {
            x ^= x << 13;           /* xorshift: cheap, not optimised away */
            x ^= x >> 7;
            x ^= x << 17;
            sv_record(r, i % STAGES, (int64_t)(x >> (40 + (x & 15))));
        }
        elapsed = sv_clock_monotonic_ns() - start;
        if ((double)elapsed / PER_ROUND < best)
            best = (double)elapsed / PER_ROUND;
    }
    printf("sv_record: %.2f ns per record (best of %u rounds of %u; includes ~1 ns of xorshift)\n",
           best, ROUNDS, PER_ROUND);
    sv_recorder_free(r);
    return 0;
}
