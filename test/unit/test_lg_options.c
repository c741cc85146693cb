/* SPDX-License-Identifier: BSD-3-Clause */
/* loadgen command line: every bad value or combination is refused with a
 * message naming it; good lines set what they say. */
#include <string.h>

#include <criterion/criterion.h>

#include "options.h"
#include "stagevar.h"

#define MAXARGS 40

static int parse(lg_options *o, char *err, const char *line)
{
    char copy[512], *argv[MAXARGS + 1], *save = NULL, *tok;
    int argc = 0;

    snprintf(copy, sizeof(copy), "loadgen %s", line);
    for (tok = strtok_r(copy, " ", &save); tok && argc < MAXARGS; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = strdup(tok);
    argv[argc] = NULL;
    return lg_options_parse(o, argc, argv, err);
}

Test(options, bad_flags_are_named)
{
    static const char *const bad[][2] = {
        { "--rate 0", "'0'" },
        { "--rate fast", "'fast'" },
        { "--rate", "needs a value" },
        { "--duration 10parsecs", "10parsecs" },
        { "--duration -1", "'-1'" },
        { "--duration 0.1ms", "at least 1ms" },
        { "--requests 0", "'0'" },
        { "--threads 0", "'0'" },
        { "--threads 1000", "'1000'" },
        { "--connections x", "'x'" },
        { "--port 70000", "'70000'" },
        { "--protocol gopher", "'gopher'" },
        { "--arrival weibull", "'weibull'" },
        { "--arrival pareto:cv2=1e6", "1e+06" },
        { "--get-ratio 1.5", "'1.5'" },
        { "--multiget 65", "'65'" },
        { "--keys 0", "'0'" },
        { "--value-size huge", "'huge'" },
        { "--key-size 300", "'300'" },
        { "--popularity zipf:x", "'x'" },
        { "--cpus 0-x", "'0-x'" },
        { "--cpus 1023", "CPU 1023" },
        { "--shape wave", "'wave'" },
        { "--trace /nonexistent/trace", "/nonexistent/trace" },
        { "--server 10.1.2.3", "'10.1.2.3' is not a loopback" },
        { "--server no.such.host.invalid", "no.such.host.invalid" },
        { "--batch-interval-us 0", "'0'" },
        { "--timestamps hardware", "'hardware'" },
        { "--bogus", "'--bogus'" },
        { "-x", "'-x'" },
        { "stray", "'stray'" },
        { "--duration 1 --requests 5", "exclude each other" },
        { "--trace /dev/null --shape var", "exclude each other" },
        { "--sequential-clients 2 --connections 3", "--sequential-clients replaces --connections" },
        { "--requests-per-conn 75", "needs --sequential-clients" },
        { "--protocol http --multiget 4", "memcache options" },
        { "--stream 1.5", "'1.5'" },
        { "--stream -0.1", "'-0.1'" },
        { "--protocol http --stream 0.5", "memcache options" },
        { "--stream 0.5 --keys 4000000000", "--keys 4000000000" },
        { "--path /x", "http options" },
        { "--protocol http --path noslash", "'noslash'" },
        { "--rate 1e8", "per thread" },
        { "--start-at soon", "'soon'" },
        { "--start-at 0", "'0'" },
        { "--start-at -5", "'-5'" },
        { "--start-at 1700000000", "in the past" },
        { "--start-at 18446744073709551615", "more than 24 h ahead" },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[LG_ERRLEN] = "";
        lg_options o;

        cr_assert_eq(parse(&o, err, bad[i][0]), LG_OPT_ERROR, "'%s' accepted", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]), "'%s': message '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
        cr_assert(strchr(err, '\n') == NULL, "one line: '%s'", err);
    }
}

Test(options, defaults)
{
    char err[LG_ERRLEN] = "";
    lg_options o;

    cr_assert_eq(parse(&o, err, ""), LG_OPT_RUN, "%s", err);
    cr_assert_str_eq(o.host, "127.0.0.1");
    cr_assert_eq(o.port, 11211);
    cr_assert_eq(o.proto, LG_PROTO_MEMCACHE);
    cr_assert_eq(o.duration_ns, 10e9);
    cr_assert_eq(o.arrival.kind, LG_ARRIVAL_EXP);
    cr_assert_eq(o.max_outstanding, 0, "open loop unless asked");
    cr_assert_eq(o.nagle, 0, "TCP_NODELAY by default");
    cr_assert_eq(o.spin_auto, 1, "the wait margin adapts by default");
    cr_assert_eq(o.coalesce, 0, "each request its own send by default");
    cr_assert_eq(o.timestamps, LG_TS_KERNEL, "replies timed by the kernel by default");
    cr_assert_eq(o.start_at_ns, 0, "start now unless asked");
    cr_assert_eq(o.wl.stream, 0, "no stream unless asked");
    lg_options_free(&o);
}

/* A start in a minute's time, written as a shell would pass it. */
Test(options, start_at)
{
    char err[LG_ERRLEN] = "", line[64];
    uint64_t at = sv_clock_realtime_ns() + 60000000000ULL;
    lg_options o;

    snprintf(line, sizeof(line), "--start-at %llu", (unsigned long long)at);
    cr_assert_eq(parse(&o, err, line), LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.start_at_ns, at);
    lg_options_free(&o);
}

Test(options, wait_and_timestamps)
{
    char err[LG_ERRLEN] = "";
    lg_options o;

    cr_assert_eq(parse(&o, err, "--spin-us 30 --timestamps kernel-tx"), LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.spin_auto, 0);
    cr_assert_eq(o.spin_ns, 30e3);
    cr_assert_eq(o.timestamps, LG_TS_KERNEL_TX);
    lg_options_free(&o);
    cr_assert_eq(parse(&o, err, "--spin-us 30 --spin-us auto --timestamps loop"), LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.spin_auto, 1);
    cr_assert_eq(o.timestamps, LG_TS_LOOP);
    lg_options_free(&o);
    cr_assert_eq(parse(&o, err, "--coalesce on"), LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.coalesce, 1);
    lg_options_free(&o);
    cr_assert_eq(parse(&o, err, "--coalesce on --coalesce off"), LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.coalesce, 0);
    lg_options_free(&o);
}

Test(options, full_line)
{
    char err[LG_ERRLEN] = "";
    lg_options o;

    cr_assert_eq(parse(&o, err, "-P http -p 8080 -r 5e4 -d 250ms -w 0 -T 2 --cpus 0-1 "
                                "--sequential-clients 3 --requests-per-conn 75 --path /a --path /b"),
                 LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.proto, LG_PROTO_HTTP);
    cr_assert_eq(o.port, 8080);
    cr_assert_eq(o.rate, 5e4);
    cr_assert_eq(o.duration_ns, 250e6);
    cr_assert_eq(o.warmup_ns, 0);
    cr_assert_eq(o.ncpus, 2);
    cr_assert_eq(lg_options_slots(&o), 3);
    cr_assert_eq(o.npaths, 2);
    cr_assert_str_eq(o.wl.paths[1], "/b");
    lg_options_free(&o);
}

Test(options, memcache_line)
{
    char err[LG_ERRLEN] = "";
    lg_options o;

    cr_assert_eq(parse(&o, err, "-a pareto:cv2=10 --keys 1000 --multiget 8 --get-ratio 0.5 "
                                "--popularity zipf:1 --value-size etc --max-outstanding 1 "
                                "--batch-interval-us 20 --nagle --shape etc"),
                 LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.arrival.kind, LG_ARRIVAL_PARETO);
    cr_assert_eq(o.wl.multiget, 8);
    cr_assert_eq(o.wl.pop.kind, LG_POP_ZIPF);
    cr_assert_eq(o.max_outstanding, 1);
    cr_assert_eq(o.batch_ns, 20e3);
    cr_assert_eq(o.nagle, 1);
    cr_assert_eq(o.trace.n, 24);
    lg_options_free(&o);
}

/* The grid's policy workload: a hot set under a stream of new keys. */
Test(options, stream)
{
    char err[LG_ERRLEN] = "";
    lg_options o;

    cr_assert_eq(parse(&o, err, "--keys 10000 --preload --get-ratio 0.99 --stream 0.1"), LG_OPT_RUN, "%s", err);
    cr_assert_eq(o.wl.stream, 0.1);
    cr_assert_eq(o.wl.get_ratio, 0.99);
    lg_options_free(&o);
    cr_assert_eq(parse(&o, err, "--stream 1 --keys 2147483647"), LG_OPT_RUN, "%s", err);
    lg_options_free(&o);
}
