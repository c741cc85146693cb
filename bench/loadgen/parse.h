/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Strict number parsing for command-line values and spec strings.
 *
 * Every function accepts the whole string or nothing (no trailing junk,
 * no silent wrap-around), and on failure writes a one-line reason naming
 * the offending text into `err` (LG_ERRLEN bytes).
 */
#ifndef LG_PARSE_H
#define LG_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LG_ERRLEN 256

int lg_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err);
/* A finite number in [min, max]. */
int lg_parse_double(const char *s, double min, double max, double *out, char *err);
/* A time with an optional unit suffix ns, us, ms or s; a bare number is in
 * `unit_ns` (1e9 for seconds). Must be >= 0 and <= LG_TIME_MAX_NS. */
#define LG_TIME_MAX_NS 1e18
int lg_parse_time_ns(const char *s, double unit_ns, double *out_ns, char *err);
/* One line of a text file into buf (cap bytes), without its line end
 * (LF or CRLF). 1: a line; 0: end of file; -1: not a text file as
 * expected, *why says how (a NUL byte, as /dev/zero gives for ever, or a
 * line of cap bytes or more, which fgets would silently split). */
int lg_read_line(FILE *f, char *buf, size_t cap, const char **why);
/* Split "name:rest" (or "name" alone): copies name into `name` (at most
 * `cap` bytes) and returns rest (NULL if there is no ':'). */
const char *lg_split_kind(const char *s, char *name, size_t cap);
/* In a comma-separated "k=v,k=v" list, the value of key `k` as a
 * freshly formatted string in `val` (cap bytes); 1 found, 0 not, -1 if
 * the list has a key outside `allowed` (a NULL-terminated array). */
int lg_kv_get(const char *list, const char *k, char *val, size_t cap,
              const char *const *allowed, char *err);

#endif
