/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Seeded pseudo-random numbers for the load generator: xoshiro256**.
 *
 * Why not rand()/random(): they are shared, locked state (threads would
 * contend and the sequence would depend on scheduling) and their low bits
 * are poor. xoshiro256** is fast (a few ns), passes BigCrush, and each
 * thread owns its generator, so a run is reproducible from --seed.
 */
#ifndef LG_RNG_H
#define LG_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} lg_rng;

/* Independent streams from one seed: `stream` (thread number, key index,
 * ...) is mixed into the seed with splitmix64, which never yields the
 * all-zero state xoshiro must avoid. */
void lg_rng_seed(lg_rng *r, uint64_t seed, uint64_t stream);
uint64_t lg_rng_next(lg_rng *r);
/* Uniform in the open interval (0,1): never 0, so log(u) is finite. */
double lg_rng_uniform(lg_rng *r);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t lg_rng_below(lg_rng *r, uint64_t n);

#endif
