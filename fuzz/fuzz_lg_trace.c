/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the load generator's rate-trace files (--trace), and
 * the send schedule built from an accepted trace.
 *
 * The input is the file's content, read through a memfd as loadgen reads
 * a path. An accepted trace must start at 0, increase strictly and hold
 * finite, non-negative rates; its mean rate must be finite; the schedule
 * over it must give non-decreasing send times, and once it says "never"
 * (UINT64_MAX) it must keep saying so. A refused trace leaves a reason.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arrival.h"
#include "parse.h"

#define SENDS 256

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_lg_trace: %s\n", what);
        abort();
    }
}

static void check_trace(const lg_trace *t)
{
    size_t i;

    check(t->n > 0 && t->t_ns[0] == 0, "trace does not start at 0");
    for (i = 0; i < t->n; i++) {
        check(isfinite(t->rate[i]) && t->rate[i] >= 0, "rate not finite and >= 0");
        check(i == 0 || t->t_ns[i] > t->t_ns[i - 1], "times do not increase");
    }
    check(isfinite(lg_trace_mean_rate(t, 60e9)), "mean rate not finite");
}

/* Two streams sharing the trace, as two loadgen threads would. */
static void check_schedule(const lg_trace *t, const lg_arrival *a)
{
    lg_schedule s;
    uint64_t prev = 0;
    int i;

    lg_schedule_init(&s, a, 0, t, 0.5, 1e9, 0, 1, 0);
    for (i = 0; i < SENDS; i++) {
        uint64_t next = lg_schedule_next(&s);

        check(next >= prev, "send times go backwards");
        prev = next;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    static const char *const arrivals[] = { "det", "exp", "pareto:cv2=20" };
    char err[LG_ERRLEN] = "";
    lg_arrival a;
    lg_trace t;

    if (fd < 0) {
        fd = memfd_create("trace", 0);
        check(fd >= 0, "memfd_create failed");
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    check(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size, "cannot write the trace");
    memset(&t, 0, sizeof(t));
    if (lg_trace_load(path, &t, err) < 0) {
        check(err[0] != '\0', "refused without a reason");
        return 0;
    }
    check_trace(&t);
    check(lg_arrival_parse(arrivals[size % 3], &a, err) == 0, "arrival refused");
    check_schedule(&t, &a);
    lg_trace_free(&t);
    return 0;
}
