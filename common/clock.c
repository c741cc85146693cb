/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026, the stagevar authors. See LICENSE. */
/* Clock reads in nanoseconds. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "stagevar.h"

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sv_clock_realtime_ns(void)
{
    return read_ns(CLOCK_REALTIME);
}

uint64_t sv_clock_monotonic_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}
