/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the load generator's whole command line, as main()
 * parses it (lg_options_parse): every flag, the CPU list, the specs and
 * their cross-checks.
 *
 * The input is argv after the program name, arguments separated by NUL
 * bytes. A refusal must leave exactly one plain line naming the problem;
 * an accepted command line must hold values within the documented ranges.
 *
 * Name resolution is limited to numeric addresses (getaddrinfo is wrapped
 * below), so a fuzzed --server never becomes a DNS query. Arguments may
 * name files (--trace, --paths-file): they are only read.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

#define MAX_ARGS 24

typedef int (*getaddrinfo_fn)(const char *, const char *, const struct addrinfo *,
                              struct addrinfo **);

/* The executable's definition wins over libc's: resolve numerically only. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static getaddrinfo_fn real;
    struct addrinfo h;

    if (!real)
        real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    memset(&h, 0, sizeof(h));
    if (hints)
        h = *hints;
    h.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
    return real(node, service, &h, res);
}

static void check(int ok, const char *what, const char *err)
{
    if (!ok) {
        fprintf(stderr, "fuzz_lg_options: %s: '%s'\n", what, err);
        abort();
    }
}

static void check_accepted(const lg_options *o)
{
    size_t i;

    check(o->threads >= 1 && o->threads <= 256, "threads out of range", "");
    check(o->rate >= 1e-3 && o->rate <= 1e9 && o->rate / o->threads <= 5e6, "rate out of range", "");
    check(o->port >= 1 && o->port <= 65535, "port out of range", "");
    check(o->ncpus <= LG_MAX_CPUS, "too many CPUs", "");
    for (i = 0; i < o->ncpus; i++)
        check(o->cpu[i] >= 0 && o->cpu[i] < LG_MAX_CPUS, "CPU out of range", "");
    check(o->wl.multiget >= 1 && o->wl.multiget <= LG_MAX_MULTIGET, "multiget out of range", "");
    check(o->wl.get_ratio >= 0 && o->wl.get_ratio <= 1, "get ratio out of range", "");
    check(o->wl.ttl.secs <= LG_MAX_TTL && o->wl.ttl.fraction >= 0 && o->wl.ttl.fraction <= 1,
          "TTL out of range", "");
    check(o->duration_ns == 0 || o->duration_ns >= 1e6, "duration under 1ms", "");
    check(o->proto != LG_PROTO_HTTP || o->npaths >= 1, "http without a path", "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    char *copy, *argv[MAX_ARGS + 2], err[LG_ERRLEN];
    int argc = 0, rc;
    size_t i = 0;
    lg_options o;

    if (!quiet) {
        /* --help and --version print to stdout. */
        int devnull = open("/dev/null", O_WRONLY);

        check(devnull >= 0 && dup2(devnull, STDOUT_FILENO) >= 0, "cannot silence stdout", "");
        quiet = 1;
    }
    copy = malloc(size + 1);
    check(copy != NULL, "out of memory", "");
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[argc++] = "loadgen";
    while (i <= size && argc <= MAX_ARGS) {
        argv[argc++] = copy + i;
        i += strlen(copy + i) + 1;
    }
    argv[argc] = NULL;
    memset(err, 0, sizeof(err));
    rc = lg_options_parse(&o, argc, argv, err);
    if (rc == LG_OPT_ERROR) {
        size_t n = strnlen(err, LG_ERRLEN);

        check(n > 0 && n < LG_ERRLEN, "refused without a reason", err);
        for (i = 0; i < n; i++)
            check((unsigned char)err[i] >= 0x20 && err[i] != 0x7f, "reason is not one plain line", err);
    } else if (rc == LG_OPT_RUN) {
        check_accepted(&o);
    }
    lg_options_free(&o);
    free(copy);
    return 0;
}
