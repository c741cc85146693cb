/* SPDX-License-Identifier: BSD-3-Clause */
/* Preload: store every key once before the run, so gets hit from the
 * first request and the server's memory is at its working size. */
#ifndef LG_PRELOAD_H
#define LG_PRELOAD_H

#include <stdint.h>

#include "options.h"

/* 0, or -1 with err set. Counts the sets it made in *sets. */
int lg_preload(const lg_options *o, uint64_t *sets, char *err);

#endif
