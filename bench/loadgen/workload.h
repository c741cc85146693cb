/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What to ask for: keys (count, names, sizes), value sizes, the get/set
 * mix, multiget width, key popularity, and HTTP paths.
 *
 * Sizes are a property of the key, not of the request: key i always has
 * the same name length and value size (drawn once from the distribution
 * with a generator seeded by i), so a get returns the size a set stored
 * and the server's memory use is stable.
 */
#ifndef LG_WORKLOAD_H
#define LG_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

typedef enum { LG_SIZE_FIXED, LG_SIZE_UNIFORM, LG_SIZE_GPARETO, LG_SIZE_GEV } lg_size_kind;

/* A size distribution; draws are rounded and clamped to [min, max]. */
typedef struct {
    lg_size_kind kind;
    double a, b, c;     /* fixed: a; uniform: [a, b]; gpareto: loc a, scale b, shape c;
                           gev: loc a, scale b, shape c */
    uint32_t min, max;
} lg_size;

/* "N", "uniform:A-B", "gpareto:loc=L,scale=S,shape=K", "gev:loc=L,scale=S,shape=K",
 * or "etc" (Atikoglu et al., SIGMETRICS 2012, ETC pool: values
 * GPareto(0, 214.476, 0.348238); keys GEV(30.7984, 8.20449, 0.078688)). */
int lg_size_parse(const char *spec, int is_key, lg_size *s, char *err);
/* r may be NULL for a fixed size. */
uint32_t lg_size_draw(const lg_size *s, lg_rng *r);

typedef enum { LG_POP_UNIFORM, LG_POP_ZIPF, LG_POP_GPARETO } lg_pop_kind;

/* Which of n items (rank 0 most popular) a request names. */
typedef struct {
    lg_pop_kind kind;
    double s;               /* Zipf exponent */
    double scale, shape;    /* GPareto over ranks: scale as a fraction of n */
    uint64_t n;
    double *cdf;            /* Zipf: cumulative probabilities, n entries */
} lg_popularity;

/* "uniform", "zipf:S", "gpareto:scale=F,shape=K". */
int lg_pop_parse(const char *spec, lg_popularity *p, char *err);
/* Prepare for n items (builds the Zipf table). */
int lg_pop_init(lg_popularity *p, uint64_t n, char *err);
uint64_t lg_pop_draw(const lg_popularity *p, lg_rng *r);
void lg_pop_free(lg_popularity *p);

/* Expiry times of sets, a property of the key like its sizes: a share of
 * the keys (drawn once per key) always gets `secs`, the rest never expire. */
typedef struct {
    uint32_t secs;      /* exptime of the keys that expire; 0: none does */
    double fraction;    /* share of the keys that expire */
} lg_ttl;

/* memcached reads an exptime over 30 days as a Unix time, not a TTL. */
#define LG_MAX_TTL 2592000u

/* "N" (seconds, 0 = never expire) or "mix:F:N" (a fraction F of the keys
 * get N, the others 0). */
int lg_ttl_parse(const char *spec, lg_ttl *t, char *err);

#define LG_MAX_MULTIGET 64
/* Zipf keeps an exact inverse-CDF table, 8 bytes a key: 1 GiB at most. */
#define LG_MAX_ZIPF_KEYS (1u << 27)
#define LG_MAX_KEY 250

typedef struct {
    uint64_t keys;
    lg_size key_size, value_size;
    double get_ratio;
    unsigned multiget;
    lg_popularity pop;
    lg_ttl ttl;
    double stream;          /* --stream: share of requests that set a new key */
    const char **paths;     /* HTTP: request one of these (pop over paths) */
    size_t npaths;
    uint64_t seed;
} lg_workload;

/* Name of key `idx` into buf (LG_MAX_KEY + 1 bytes); returns its length. */
size_t lg_key_name(const lg_workload *w, uint64_t idx, char *buf);
uint32_t lg_value_size(const lg_workload *w, uint64_t idx);
/* The exptime every set of key `idx` carries. */
uint32_t lg_key_ttl(const lg_workload *w, uint64_t idx);

/* --stream: requests that set a key no other request names, so they turn
 * the cache over without being read. Stream keys lie past the key set:
 * the j-th of thread `thread` (of `threads`) is keys + j * threads +
 * thread, wrapping within [keys, 2^32) (requests carry 32-bit key
 * indexes); by the time one comes round again its first set is long
 * evicted. */
#define LG_MAX_STREAM_KEYS 0x7fffffffu  /* --keys at most this with --stream */
uint32_t lg_stream_key(const lg_workload *w, uint64_t j, unsigned thread, unsigned threads);

#endif
