/* SPDX-License-Identifier: BSD-3-Clause */
/* xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
#include "rng.h"

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* splitmix64: a bijective mixer, so distinct inputs give distinct,
 * well-spread words for the four state words. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void lg_rng_seed(lg_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    int i;

    /* One extra round separates seed=s,stream=0 from nearby seeds. */
    (void)splitmix64(&x);
    for (i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

uint64_t lg_rng_next(lg_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double lg_rng_uniform(lg_rng *r)
{
    /* 53 random bits, offset by half a step: (k + 0.5) / 2^53 is in (0,1). */
    return ((double)(lg_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

uint64_t lg_rng_below(lg_rng *r, uint64_t n)
{
    /* Rejection: discard the top partial block so every residue is
     * equally likely. At most one retry is expected. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;

    do
        x = lg_rng_next(r);
    while (x >= limit);
    return x % n;
}
