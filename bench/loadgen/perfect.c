/* SPDX-License-Identifier: BSD-3-Clause */
/* The perfect sender's schedule error from the clock stalls the loop saw
 * (perfect.h): the smallest x with share(x) <= 1 - q, by bisection. */
#include "perfect.h"

/* Share of sends, due at random times, later than x: sum(max(0, g - x))
 * over the stalls g (each taken at its bucket's middle) / observed. */
static double share_later(const sv_hist *stalls, uint64_t observed_ns, uint64_t x)
{
    double later = 0;
    size_t b;

    for (b = 0; b < SV_HIST_BUCKETS; b++) {
        uint64_t g;

        if (stalls->bucket[b] == 0)
            continue;
        g = sv_hist_bucket_low(b) + sv_hist_bucket_width(b) / 2;
        if (g > x)
            later += (double)(g - x) * (double)stalls->bucket[b];
    }
    return later / (double)observed_ns;
}

uint64_t lg_perfect_quantile(const sv_hist *stalls, uint64_t observed_ns, double q)
{
    uint64_t lo = 0, hi = SV_HIST_LIMIT;

    if (observed_ns == 0 || share_later(stalls, observed_ns, 0) <= 1 - q)
        return 0;
    /* share_later(lo) > 1 - q >= share_later(hi): it falls as x grows. */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (share_later(stalls, observed_ns, mid) > 1 - q)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}
