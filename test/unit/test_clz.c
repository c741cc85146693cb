/* SPDX-License-Identifier: BSD-3-Clause */
/* The portable count-leading-zeros that update.h falls back to where the
 * compiler has no __builtin_clzll, against the builtin. */
#define SV_PORTABLE_CLZ
#include <criterion/criterion.h>

#include "update.h"

Test(clz, portable_fallback_matches_the_builtin_for_every_bit_and_its_neighbours)
{
    unsigned bit;

    for (bit = 0; bit < 64; bit++) {
        uint64_t x = (uint64_t)1 << bit;

        cr_assert_eq(sv_update_clz64(x), 63 - bit, "x = 1 << %u", bit);
        cr_assert_eq(sv_update_clz64(x | (x - 1)), 63 - bit);
        cr_assert_eq(sv_update_clz64(x | 1), (unsigned)__builtin_clzll(x | 1));
    }
}

Test(clz, portable_fallback_matches_the_builtin_on_pseudorandom_values)
{
    uint64_t x = 88172645463325252u, v;
    unsigned i;

    for (i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v = x >> (i % 64);
        if (v == 0) {
            continue;   /* clz of 0 is undefined, and libstagevar never asks */
        }
        cr_assert_eq(sv_update_clz64(v), (unsigned)__builtin_clzll(v));
    }
}
