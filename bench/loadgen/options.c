/* SPDX-License-Identifier: BSD-3-Clause */
/* Command-line parsing and validation. */
#define _GNU_SOURCE
#include "options.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stagevar.h"

#ifndef LG_VERSION
#define LG_VERSION "dev"
#endif

enum {
    O_ARRIVAL = 'a', O_CONNS = 'c', O_DURATION = 'd', O_HELP = 'h', O_REQUESTS = 'n',
    O_PORT = 'p', O_QUIET = 'q', O_RATE = 'r', O_SERVER = 's', O_THREADS = 'T',
    O_VERSION = 'V', O_WARMUP = 'w', O_PROTOCOL = 'P',
    O_TRACE = 256, O_SHAPE, O_CPUS, O_SEQ, O_RPC, O_MAXOUT, O_BATCH, O_NAGLE, O_KEYS,
    O_KEYSIZE, O_VALSIZE, O_GETRATIO, O_POP, O_MULTIGET, O_PRELOAD, O_PATH, O_PATHSFILE,
    O_TIMEOUT, O_LATE, O_SPIN, O_TSTAMP, O_SEED, O_JSON, O_NONLOOP, O_TTL, O_COALESCE,
    O_STARTAT, O_STREAM,
};

static const struct option long_opts[] = {
    { "server", required_argument, NULL, O_SERVER },
    { "port", required_argument, NULL, O_PORT },
    { "protocol", required_argument, NULL, O_PROTOCOL },
    { "allow-nonloopback", no_argument, NULL, O_NONLOOP },
    { "rate", required_argument, NULL, O_RATE },
    { "duration", required_argument, NULL, O_DURATION },
    { "requests", required_argument, NULL, O_REQUESTS },
    { "warmup", required_argument, NULL, O_WARMUP },
    { "start-at", required_argument, NULL, O_STARTAT },
    { "timeout", required_argument, NULL, O_TIMEOUT },
    { "arrival", required_argument, NULL, O_ARRIVAL },
    { "trace", required_argument, NULL, O_TRACE },
    { "shape", required_argument, NULL, O_SHAPE },
    { "threads", required_argument, NULL, O_THREADS },
    { "connections", required_argument, NULL, O_CONNS },
    { "cpus", required_argument, NULL, O_CPUS },
    { "sequential-clients", required_argument, NULL, O_SEQ },
    { "requests-per-conn", required_argument, NULL, O_RPC },
    { "max-outstanding", required_argument, NULL, O_MAXOUT },
    { "batch-interval-us", required_argument, NULL, O_BATCH },
    { "coalesce", required_argument, NULL, O_COALESCE },
    { "nagle", no_argument, NULL, O_NAGLE },
    { "keys", required_argument, NULL, O_KEYS },
    { "key-size", required_argument, NULL, O_KEYSIZE },
    { "value-size", required_argument, NULL, O_VALSIZE },
    { "get-ratio", required_argument, NULL, O_GETRATIO },
    { "popularity", required_argument, NULL, O_POP },
    { "multiget", required_argument, NULL, O_MULTIGET },
    { "ttl", required_argument, NULL, O_TTL },
    { "stream", required_argument, NULL, O_STREAM },
    { "preload", no_argument, NULL, O_PRELOAD },
    { "path", required_argument, NULL, O_PATH },
    { "paths-file", required_argument, NULL, O_PATHSFILE },
    { "late-us", required_argument, NULL, O_LATE },
    { "spin-us", required_argument, NULL, O_SPIN },
    { "timestamps", required_argument, NULL, O_TSTAMP },
    { "seed", required_argument, NULL, O_SEED },
    { "json", required_argument, NULL, O_JSON },
    { "quiet", no_argument, NULL, O_QUIET },
    { "help", no_argument, NULL, O_HELP },
    { "version", no_argument, NULL, O_VERSION },
    { NULL, 0, NULL, 0 },
};

void lg_options_usage(FILE *out)
{
    fputs(
"usage: loadgen [OPTIONS]\n"
"Open-loop load generator for memcached (text protocol) and HTTP/1.1.\n"
"Latency is measured from each request's scheduled send time (no\n"
"coordinated omission) and, separately, from its actual send.\n"
"\n"
"Target:\n"
"  -s, --server HOST          server address (default 127.0.0.1); loopback only\n"
"  -p, --port PORT            port (default 11211, or 80 for http)\n"
"  -P, --protocol PROTO       memcache (default) or http\n"
"      --allow-nonloopback    allow a non-loopback address (e.g. a veth in a\n"
"                             network namespace the experiment created)\n"
"Load:\n"
"  -r, --rate N               offered requests/s, all threads (default 1000);\n"
"                             the mean rate when a trace or shape is given\n"
"  -d, --duration TIME        measurement phase (default 10s; units ns/us/ms/s)\n"
"  -n, --requests N           measure N requests instead of a duration\n"
"  -w, --warmup TIME          discarded warm-up phase first (default 1s)\n"
"      --start-at UNIX_NS     begin the schedule (warm-up first) at this\n"
"                             CLOCK_REALTIME instant, ns since the epoch, so\n"
"                             loadgens on several hosts start together\n"
"      --timeout TIME         wait for late replies at the end, then count them\n"
"                             as timeouts (default 1s)\n"
"  -a, --arrival SPEC         inter-arrival process: det, exp (default),\n"
"                             pareto:alpha=A[,lo=T,hi=T] or pareto:cv2=C[,lo=T,hi=T]\n"
"                             (bounded Pareto, default range 5us-100ms, scaled\n"
"                             to the rate; C^2 is unchanged by scaling)\n"
"      --trace FILE           rate steps: lines 'seconds,rate' from 0, relative\n"
"                             to the start of measurement\n"
"      --shape NAME           built-in rate shape over the measurement: var, app\n"
"                             or etc (24 steps, peak/min ~2, mean = --rate)\n"
"Connections:\n"
"  -T, --threads N            threads (default 1), each with its own schedule\n"
"  -c, --connections N        connections per thread (default 1); a thread's\n"
"                             arrivals go to its connections in turn\n"
"      --cpus LIST            pin thread i to CPU i of LIST, wrapping (e.g. 0,2-3)\n"
"      --sequential-clients N clients per thread, each opening a new connection\n"
"                             for every --requests-per-conn requests\n"
"      --requests-per-conn M  requests per connection in that mode (default 75)\n"
"      --max-outstanding N    at most N unanswered requests per connection\n"
"                             (closed loop: later requests wait their turn)\n"
"      --batch-interval-us N  queue requests, flush every connection every N us\n"
"      --coalesce on|off      on: when the next request is due within half a\n"
"                             send() of this one, hold this one and send both\n"
"                             in one write, so neither waits a whole send (the\n"
"                             server sees such pairs together); off (default):\n"
"                             each request goes alone at its time\n"
"      --nagle                leave Nagle's algorithm on (default TCP_NODELAY)\n"
"Workload:\n"
"      --keys N               key count (default 10000)\n"
"      --key-size SPEC        N, uniform:A-B, gev:loc=,scale=,shape= or etc (default 30)\n"
"      --value-size SPEC      N, uniform:A-B, gpareto:loc=,scale=,shape= or etc\n"
"                             (default 100)\n"
"      --get-ratio F          fraction of gets, the rest are sets (default 0.9)\n"
"      --popularity SPEC      uniform (default), zipf:S or gpareto:scale=F,shape=K\n"
"                             (F: scale as a fraction of the key count)\n"
"      --multiget K           keys per get (default 1, at most 64)\n"
"      --ttl SPEC             exptime of every set: N seconds (default 0: never\n"
"                             expire; at most 2592000), or mix:F:N, where a\n"
"                             fraction F of the keys get N and the rest 0\n"
"      --stream F             a fraction F of the requests set a new key each,\n"
"                             one never named again (a stream of items set\n"
"                             once); the rest follow --get-ratio and\n"
"                             --popularity over --keys (default 0)\n"
"      --preload              set every key once before the warm-up\n"
"      --path PATH            HTTP path to GET, repeatable (default /)\n"
"      --paths-file FILE      HTTP paths, one per line\n"
"Measurement and output:\n"
"      --late-us N            a send later than N us after its schedule is late\n"
"                             (default 50)\n"
"      --spin-us N|auto       stop sleeping N us before each send, then poll and\n"
"                             spin; auto (default): the timer's recent p99.5\n"
"                             lateness, 10..200 us, so sends are as punctual\n"
"                             as an always-spinning sender's\n"
"      --timestamps MODE      where reply times come from: kernel (default;\n"
"                             the kernel's RX stamp of the completing segment),\n"
"                             kernel-tx (also send times from its TX stamp,\n"
"                             for latency_sent; costs CPU), or loop (when the\n"
"                             loop read the reply)\n"
"      --seed N               random seed (default 1)\n"
"      --json FILE            write the full report as JSON\n"
"  -q, --quiet                no summary on stdout\n"
"  -h, --help                 this text\n"
"  -V, --version              version\n", out);
}

/* ---- value parsers that know their option's name ----------------------- */

static int opt_u(const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *out, char *err)
{
    char why[LG_ERRLEN];

    if (lg_parse_u64(v, min, max, out, why) == 0)
        return 0;
    snprintf(err, LG_ERRLEN, "--%s: %s", name, why);
    return -1;
}

static int opt_uint(const char *name, const char *v, unsigned min, unsigned max, unsigned *out, char *err)
{
    uint64_t x;

    if (opt_u(name, v, min, max, &x, err) < 0)
        return -1;
    *out = (unsigned)x;
    return 0;
}

/* A start in the past or over a day ahead is a unit slip (seconds, or
 * microseconds, for nanoseconds), not a plan. */
#define START_AT_HORIZON_NS (24ULL * 3600 * 1000000000)

static int opt_start_at(const char *v, uint64_t *out, char *err)
{
    uint64_t now = sv_clock_realtime_ns();

    if (opt_u("start-at", v, 1, UINT64_MAX, out, err) < 0)
        return -1;
    if (*out <= now) {
        snprintf(err, LG_ERRLEN, "--start-at: '%s' is %.3f s in the past (nanoseconds since the epoch, "
                 "CLOCK_REALTIME)", v, (double)(now - *out) / 1e9);
        return -1;
    }
    if (*out - now > START_AT_HORIZON_NS) {
        snprintf(err, LG_ERRLEN, "--start-at: '%s' is more than 24 h ahead (nanoseconds since the epoch?)", v);
        return -1;
    }
    return 0;
}

static int opt_time(const char *name, const char *v, double unit, double *out, char *err)
{
    char why[LG_ERRLEN];

    if (lg_parse_time_ns(v, unit, out, why) == 0)
        return 0;
    snprintf(err, LG_ERRLEN, "--%s: %s", name, why);
    return -1;
}

static int opt_spec(const char *name, int rc, const char *why, char *err)
{
    if (rc < 0)
        snprintf(err, LG_ERRLEN, "--%s: %s", name, why);
    return rc;
}

/* One item of a CPU list, "N" or "A-B", appended to o->cpu[]. */
static int parse_cpu_item(lg_options *o, char *item, const char *list, char *err)
{
    char *dash = strchr(item, '-'), why[LG_ERRLEN];
    uint64_t a, b;

    if (dash)
        *dash = '\0';
    if (lg_parse_u64(item, 0, CPU_SETSIZE - 1, &a, why) < 0 ||
        lg_parse_u64(dash ? dash + 1 : item, 0, CPU_SETSIZE - 1, &b, why) < 0) {
        snprintf(err, LG_ERRLEN, "--cpus '%s': %s", list, why);
        return -1;
    }
    if (b < a) {
        snprintf(err, LG_ERRLEN, "--cpus '%s': range '%s-%s' runs backwards", list, item, dash + 1);
        return -1;
    }
    for (; a <= b && o->ncpus < LG_MAX_CPUS; a++)
        o->cpu[o->ncpus++] = (int)a;
    return 0;
}

/* "0,2-3" into o->cpu[]. Items are split by hand, not with strtok: an
 * empty item ("0,,1", "0,") is a typo to report, not a gap to skip. */
static int parse_cpus(lg_options *o, const char *list, char *err)
{
    char *copy = strdup(list), *item, *comma;
    int rc = 0;

    if (!copy) {
        snprintf(err, LG_ERRLEN, "out of memory");
        return -1;
    }
    o->ncpus = 0;
    for (item = copy; rc == 0 && item; item = comma ? comma + 1 : NULL) {
        comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (*item == '\0') {
            snprintf(err, LG_ERRLEN, "--cpus '%s' has an empty item; want CPUs such as 0,2-3", list);
            rc = -1;
        } else {
            rc = parse_cpu_item(o, item, list, err);
        }
    }
    free(copy);
    return rc;
}

static int add_path(lg_options *o, const char *path, char *err)
{
    const char **p;

    if (path[0] != '/' || strpbrk(path, " \r\n\t") || strlen(path) > 900) {
        snprintf(err, LG_ERRLEN, "HTTP path '%s' must start with '/', be under 900 bytes and have no spaces", path);
        return -1;
    }
    p = realloc(o->paths, (o->npaths + 1) * sizeof(*p));
    if (!p) {
        snprintf(err, LG_ERRLEN, "out of memory");
        return -1;
    }
    o->paths = p;
    o->paths[o->npaths++] = strdup(path);
    return 0;
}

static int load_paths(lg_options *o, const char *file, char *err)
{
    FILE *f = fopen(file, "r");
    char line[1024];
    const char *why;
    int rc = 0, got;

    if (!f) {
        snprintf(err, LG_ERRLEN, "--paths-file: cannot open '%s': %m", file);
        return -1;
    }
    while (rc == 0 && (got = lg_read_line(f, line, sizeof(line), &why)) != 0) {
        if (got < 0) {
            snprintf(err, LG_ERRLEN, "--paths-file: '%s': %s", file, why);
            rc = -1;
        } else if (line[0] != '\0' && line[0] != '#') {
            rc = add_path(o, line, err);
        }
    }
    fclose(f);
    if (rc == 0 && o->npaths == 0) {
        snprintf(err, LG_ERRLEN, "--paths-file: '%s' lists no path", file);
        rc = -1;
    }
    return rc;
}

static void set_defaults(lg_options *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->host = "127.0.0.1";
    o->rate = 1000;
    o->warmup_ns = 1e9;
    o->timeout_ns = 1e9;
    o->arrival_spec = "exp";
    o->threads = 1;
    o->conns = 1;
    o->reqs_per_conn = 75;
    o->wl.keys = 10000;
    o->wl.get_ratio = 0.9;
    o->wl.multiget = 1;
    o->late_ns = 50e3;
    o->spin_auto = 1;
    o->seed = 1;
    o->argc = argc;
    o->argv = argv;
}

/* Which options were given, for the cross-checks. */
typedef struct {
    int duration, requests, conns, rpc, port, multiget, path, preload, keysize, valsize, getratio, stream;
    const char *ttl_spec, *keysize_spec, *valsize_spec, *pop_spec, *duration_arg, *rate_arg;
} seen_opts;

static int parse_target_opt(lg_options *o, int c, const char *v, seen_opts *s, char *err)
{
    switch (c) {
    case O_SERVER: o->host = v; return 0;
    case O_PORT: s->port = 1; return opt_uint("port", v, 1, 65535, &o->port, err);
    case O_NONLOOP: o->allow_nonloopback = 1; return 0;
    case O_PROTOCOL:
        if (strcmp(v, "memcache") == 0 || strcmp(v, "http") == 0) {
            o->proto = v[0] == 'm' ? LG_PROTO_MEMCACHE : LG_PROTO_HTTP;
            return 0;
        }
        snprintf(err, LG_ERRLEN, "--protocol: '%s' is not memcache or http", v);
        return -1;
    }
    return 1;
}

static int parse_load_opt(lg_options *o, int c, const char *v, seen_opts *s, char *err)
{
    switch (c) {
    case O_RATE: {
        char why[LG_ERRLEN];

        s->rate_arg = v;
        return opt_spec("rate", lg_parse_double(v, 1e-3, 1e9, &o->rate, why), why, err);
    }
    case O_DURATION:
        s->duration = 1;
        s->duration_arg = v;
        return opt_time("duration", v, 1e9, &o->duration_ns, err);
    case O_REQUESTS: s->requests = 1; return opt_u("requests", v, 1, UINT64_MAX / 2, &o->requests, err);
    case O_WARMUP: return opt_time("warmup", v, 1e9, &o->warmup_ns, err);
    case O_STARTAT: return opt_start_at(v, &o->start_at_ns, err);
    case O_TIMEOUT: return opt_time("timeout", v, 1e9, &o->timeout_ns, err);
    case O_ARRIVAL: o->arrival_spec = v; return 0;
    case O_TRACE: o->trace_file = v; return 0;
    case O_SHAPE: o->shape = v; return 0;
    }
    return 1;
}

static int parse_on_off(const char *name, const char *v, int *out, char *err)
{
    if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0) {
        *out = strcmp(v, "on") == 0;
        return 0;
    }
    snprintf(err, LG_ERRLEN, "--%s: '%s' is not on or off", name, v);
    return -1;
}

static int parse_conn_opt(lg_options *o, int c, const char *v, seen_opts *s, char *err)
{
    switch (c) {
    case O_THREADS: return opt_uint("threads", v, 1, 256, &o->threads, err);
    case O_CONNS: s->conns = 1; return opt_uint("connections", v, 1, 100000, &o->conns, err);
    case O_CPUS: return parse_cpus(o, v, err);
    case O_SEQ: return opt_uint("sequential-clients", v, 1, 100000, &o->seq_clients, err);
    case O_RPC: s->rpc = 1; return opt_uint("requests-per-conn", v, 1, 1u << 30, &o->reqs_per_conn, err);
    case O_MAXOUT: return opt_uint("max-outstanding", v, 1, 1u << 30, &o->max_outstanding, err);
    case O_BATCH: {
        uint64_t us;

        if (opt_u("batch-interval-us", v, 1, 10000000, &us, err) < 0)
            return -1;
        o->batch_ns = (double)us * 1e3;
        return 0;
    }
    case O_COALESCE: return parse_on_off("coalesce", v, &o->coalesce, err);
    case O_NAGLE: o->nagle = 1; return 0;
    }
    return 1;
}

static int parse_workload_opt(lg_options *o, int c, const char *v, seen_opts *s, char *err)
{
    switch (c) {
    case O_KEYS: return opt_u("keys", v, 1, UINT32_MAX, &o->wl.keys, err);
    case O_KEYSIZE: s->keysize = 1; s->keysize_spec = v; return 0;
    case O_VALSIZE: s->valsize = 1; s->valsize_spec = v; return 0;
    case O_GETRATIO: {
        char why[LG_ERRLEN];

        s->getratio = 1;
        return opt_spec("get-ratio", lg_parse_double(v, 0, 1, &o->wl.get_ratio, why), why, err);
    }
    case O_POP: s->pop_spec = v; return 0;
    case O_MULTIGET: s->multiget = 1; return opt_uint("multiget", v, 1, LG_MAX_MULTIGET, &o->wl.multiget, err);
    case O_TTL: s->ttl_spec = v; return 0;
    case O_STREAM: {
        char why[LG_ERRLEN];

        s->stream = 1;
        return opt_spec("stream", lg_parse_double(v, 0, 1, &o->wl.stream, why), why, err);
    }
    case O_PRELOAD: s->preload = 1; o->preload = 1; return 0;
    case O_PATH: s->path = 1; return add_path(o, v, err);
    case O_PATHSFILE: s->path = 1; return load_paths(o, v, err);
    }
    return 1;
}

const char *const lg_ts_mode_names[3] = { "kernel", "kernel-tx", "loop" };

static int parse_timestamps(lg_options *o, const char *v, char *err)
{
    unsigned i;

    for (i = 0; i < 3; i++) {
        if (strcmp(v, lg_ts_mode_names[i]) == 0) {
            o->timestamps = (lg_ts_mode)i;
            return 0;
        }
    }
    snprintf(err, LG_ERRLEN, "--timestamps: '%s' is not kernel, kernel-tx or loop", v);
    return -1;
}

static int parse_output_opt(lg_options *o, int c, const char *v, char *err)
{
    uint64_t us;

    switch (c) {
    case O_LATE:
        if (opt_u("late-us", v, 0, 10000000, &us, err) < 0)
            return -1;
        o->late_ns = (double)us * 1e3;
        return 0;
    case O_SPIN:
        o->spin_auto = strcmp(v, "auto") == 0;
        if (o->spin_auto)
            return 0;
        if (opt_u("spin-us", v, 0, 1000000, &us, err) < 0)
            return -1;
        o->spin_ns = (double)us * 1e3;
        return 0;
    case O_TSTAMP: return parse_timestamps(o, v, err);
    case O_SEED: return opt_u("seed", v, 0, UINT64_MAX, &o->seed, err);
    case O_JSON: o->json = v; return 0;
    case O_QUIET: o->quiet = 1; return 0;
    }
    return 1;
}

static int parse_one(lg_options *o, int c, const char *v, seen_opts *s, char *err)
{
    int rc = parse_target_opt(o, c, v, s, err);

    if (rc == 1)
        rc = parse_load_opt(o, c, v, s, err);
    if (rc == 1)
        rc = parse_conn_opt(o, c, v, s, err);
    if (rc == 1)
        rc = parse_workload_opt(o, c, v, s, err);
    if (rc == 1)
        rc = parse_output_opt(o, c, v, err);
    return rc;
}

/* ---- cross-checks ------------------------------------------------------- */

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

static int resolve(lg_options *o, char *err)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
    char port[8];
    int rc;

    snprintf(port, sizeof(port), "%u", o->port);
    rc = getaddrinfo(o->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(err, LG_ERRLEN, "--server: cannot resolve '%s': %s", o->host, gai_strerror(rc));
        return -1;
    }
    memcpy(&o->addr, res->ai_addr, res->ai_addrlen);
    o->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    if (!o->allow_nonloopback && !is_loopback((struct sockaddr *)&o->addr)) {
        snprintf(err, LG_ERRLEN, "--server: '%s' is not a loopback address (127.0.0.0/8, ::1); "
                 "pass --allow-nonloopback for an address your experiment owns", o->host);
        return -1;
    }
    return 0;
}

static int check_cpus(const lg_options *o, char *err)
{
    cpu_set_t allowed;
    size_t i;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
        return 0;   /* cannot tell: let pthread_setaffinity_np report it */
    for (i = 0; i < o->ncpus; i++) {
        if (!CPU_ISSET(o->cpu[i], &allowed)) {
            snprintf(err, LG_ERRLEN, "--cpus: CPU %d is not available to this process", o->cpu[i]);
            return -1;
        }
    }
    return 0;
}

static int fail(char *err, const char *msg)
{
    snprintf(err, LG_ERRLEN, "%s", msg);
    return -1;
}

/* Combinations that cannot mean what the user wants. */
static int check_combinations(lg_options *o, const seen_opts *s, char *err)
{
    int http = o->proto == LG_PROTO_HTTP;

    if (s->duration && s->requests)
        return fail(err, "--duration and --requests exclude each other: measure by time or by count");
    if (o->trace_file && o->shape)
        return fail(err, "--trace and --shape exclude each other");
    if (o->shape && s->requests)
        return fail(err, "--shape spreads over --duration; it cannot be used with --requests");
    if (o->seq_clients && s->conns)
        return fail(err, "--sequential-clients replaces --connections; give one of them");
    if (s->rpc && !o->seq_clients)
        return fail(err, "--requests-per-conn needs --sequential-clients");
    if (http && (s->multiget || s->preload || s->getratio || s->keysize || s->valsize || s->ttl_spec ||
                 s->stream))
        return fail(err, "--multiget, --preload, --get-ratio, --key-size, --value-size, --ttl and --stream are "
                    "memcache options, not http");
    if (o->wl.stream > 0 && o->wl.keys > LG_MAX_STREAM_KEYS) {
        snprintf(err, LG_ERRLEN, "--keys %llu leaves --stream too few new keys: at most %u with --stream",
                 (unsigned long long)o->wl.keys, LG_MAX_STREAM_KEYS);
        return -1;
    }
    if (!http && s->path)
        return fail(err, "--path and --paths-file are http options; add --protocol http");
    if (o->rate / o->threads > 5e6) {
        snprintf(err, LG_ERRLEN, "--rate '%s' over %u thread(s) is over 5M requests/s per thread, "
                 "which cannot be paced; add --threads", s->rate_arg, o->threads);
        return -1;
    }
    return 0;
}

static int build_specs(lg_options *o, const seen_opts *s, char *err)
{
    char why[LG_ERRLEN];

    if (opt_spec("arrival", lg_arrival_parse(o->arrival_spec, &o->arrival, why), why, err) < 0 ||
        opt_spec("key-size", lg_size_parse(s->keysize_spec ? s->keysize_spec : "30", 1, &o->wl.key_size, why),
                 why, err) < 0 ||
        opt_spec("value-size", lg_size_parse(s->valsize_spec ? s->valsize_spec : "100", 0, &o->wl.value_size,
                 why), why, err) < 0 ||
        opt_spec("popularity", lg_pop_parse(s->pop_spec ? s->pop_spec : "uniform", &o->wl.pop, why), why,
                 err) < 0 ||
        opt_spec("ttl", lg_ttl_parse(s->ttl_spec ? s->ttl_spec : "0", &o->wl.ttl, why), why, err) < 0)
        return -1;
    if (o->trace_file &&
        opt_spec("trace", lg_trace_load(o->trace_file, &o->trace, why), why, err) < 0)
        return -1;
    if (o->shape &&
        opt_spec("shape", lg_trace_shape(o->shape, o->rate, o->duration_ns, &o->trace, why), why, err) < 0)
        return -1;
    if (o->proto == LG_PROTO_HTTP && o->npaths == 0 && add_path(o, "/", err) < 0)
        return -1;
    o->wl.paths = o->paths;
    o->wl.npaths = o->npaths;
    o->wl.seed = o->seed;
    return lg_pop_init(&o->wl.pop, o->proto == LG_PROTO_HTTP ? o->npaths : o->wl.keys, err);
}

static int finish(lg_options *o, const seen_opts *s, char *err)
{
    if (!s->duration && !s->requests)
        o->duration_ns = 10e9;
    if (s->duration && o->duration_ns < 1e6) {
        snprintf(err, LG_ERRLEN, "--duration: '%s' is too short: it must be at least 1ms", s->duration_arg);
        return -1;
    }
    if (!s->port)
        o->port = o->proto == LG_PROTO_HTTP ? 80 : 11211;
    if (check_combinations(o, s, err) < 0 || check_cpus(o, err) < 0 || build_specs(o, s, err) < 0)
        return -1;
    return resolve(o, err);
}

/* getopt's '?' (unknown) or ':' (missing value), worded with the argument. */
static int bad_option(int c, int argc, char **argv, char *err)
{
    const char *arg = optind - 1 < argc && optind > 0 ? argv[optind - 1] : "?";

    if (c == ':')
        snprintf(err, LG_ERRLEN, "option '%s' needs a value", arg);
    else if (optopt > 0 && optopt < 256)
        snprintf(err, LG_ERRLEN, "unknown option '-%c' (see --help)", optopt);
    else
        snprintf(err, LG_ERRLEN, "unknown option '%s' (see --help)", arg);
    return LG_OPT_ERROR;
}

static int parse_args(lg_options *o, int argc, char **argv, char *err)
{
    seen_opts seen;
    int c;

    set_defaults(o, argc, argv);
    memset(&seen, 0, sizeof(seen));
    optind = 0;         /* glibc: full re-initialisation, for repeated calls */
    opterr = 0;         /* we word the errors ourselves */
    while ((c = getopt_long(argc, argv, ":a:c:d:hn:p:P:qr:s:T:Vw:", long_opts, NULL)) != -1) {
        if (c == '?' || c == ':')
            return bad_option(c, argc, argv, err);
        if (c == O_HELP) {
            lg_options_usage(stdout);
            return LG_OPT_EXIT;
        }
        if (c == O_VERSION) {
            printf("loadgen (stagevar) %s\n", LG_VERSION);
            return LG_OPT_EXIT;
        }
        if (parse_one(o, c, optarg, &seen, err) < 0)
            return LG_OPT_ERROR;
    }
    if (optind < argc) {
        snprintf(err, LG_ERRLEN, "unexpected argument '%s' (options only; see --help)", argv[optind]);
        return LG_OPT_ERROR;
    }
    return finish(o, &seen, err) < 0 ? LG_OPT_ERROR : LG_OPT_RUN;
}

/* Error reasons quote the values given, which may hold a newline or a
 * terminal escape: shown as '?', so the reason stays one plain line. */
static int one_line(char *err)
{
    for (; *err; err++)
        if ((unsigned char)*err < 0x20 || *err == 0x7f)
            *err = '?';
    return LG_OPT_ERROR;
}

int lg_options_parse(lg_options *o, int argc, char **argv, char *err)
{
    int rc = parse_args(o, argc, argv, err);

    return rc == LG_OPT_ERROR ? one_line(err) : rc;
}

void lg_options_free(lg_options *o)
{
    size_t i;

    for (i = 0; i < o->npaths; i++)
        free((void *)o->paths[i]);
    free(o->paths);
    o->paths = NULL;
    o->npaths = 0;
    lg_trace_free(&o->trace);
    lg_pop_free(&o->wl.pop);
}

unsigned lg_options_slots(const lg_options *o)
{
    return o->seq_clients ? o->seq_clients : o->conns;
}
