/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the httpd fork's ProcessCoreList argument, parsed by
 * the directive's own handler, ap_cpu_pinning_set_list(), compiled from the
 * patched tree (build/src/httpd-fork/server/mpm_cpu_pinning.c, which the
 * MPMs share).
 *
 * The file is included whole, so the harness sees the parsed bitmap; the
 * few httpd core functions it calls are replaced by the stubs below
 * (logging, the directive-context check, retained data, the scoreboard),
 * which the parser does not depend on. Nothing in the patch is changed.
 *
 * A reference parser written here from the documented syntax (decimal
 * CPUs 0-1023 and inclusive ranges, comma-separated, nothing else) must
 * agree with httpd's on every input: accepted or not, and the same set;
 * a refusal must be one line that quotes the argument.
 */
#include "mpm_cpu_pinning.c"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- stubs for the httpd core ----------------------------------------- */

module AP_MODULE_DECLARE_DATA core_module;     /* it logs as the core */
AP_DECLARE_DATA server_rec *ap_server_conf;

AP_DECLARE(const char *) ap_check_cmd_context(cmd_parms *cmd, unsigned forbidden)
{
    (void)cmd;
    (void)forbidden;
    return NULL;
}

AP_DECLARE(void) ap_log_error_(const char *file, int line, int module_index, int level,
                               apr_status_t status, const server_rec *s, const char *fmt, ...)
{
    (void)file, (void)line, (void)module_index, (void)level, (void)status, (void)s, (void)fmt;
}

AP_DECLARE(void *) ap_retained_data_get(const char *key)
{
    (void)key;
    return NULL;
}

AP_DECLARE(void *) ap_retained_data_create(const char *key, apr_size_t size)
{
    (void)key;
    return calloc(1, size);
}

AP_DECLARE(process_score *) ap_get_scoreboard_process(int x)
{
    (void)x;
    abort();    /* only ap_cpu_pinning_choose() uses it, never called here */
}

/* ---- the reference ----------------------------------------------------- */

static void fail(const char *what, const char *arg, const char *err)
{
    fprintf(stderr, "fuzz_httpd_corelist: %s for '%s' (httpd said: %s)\n", what, arg,
            err ? err : "nothing");
    abort();
}

/* Decimal number < PIN_MAX_CPUS at *s, advancing *s; -1 if none. */
static int ref_number(const char **s)
{
    long v = 0;

    if (**s < '0' || **s > '9')
        return -1;
    while (**s >= '0' && **s <= '9') {
        v = v * 10 + (*(*s)++ - '0');
        if (v >= PIN_MAX_CPUS)
            return -1;
    }
    return (int)v;
}

/* 1 and the set in out, or 0 if the list is not valid. */
static int ref_parse(const char *s, cpu_bits *out)
{
    memset(out, 0, sizeof(*out));
    for (;;) {
        int lo = ref_number(&s), hi = lo, c;

        if (lo < 0)
            return 0;
        if (*s == '-') {
            s++;
            if ((hi = ref_number(&s)) < lo)
                return 0;
        }
        for (c = lo; c <= hi; c++)
            bits_set(out, c);
        if (*s == '\0')
            return 1;
        if (*s++ != ',')
            return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static apr_pool_t *pool;
    static cpu_bits allowed;
    cmd_parms cmd;
    cpu_bits want;
    const char *err;
    char *arg;
    int ok, all_allowed = 1, c;

    if (!pool) {
        if (apr_initialize() != APR_SUCCESS || apr_pool_create(&pool, NULL) != APR_SUCCESS
            || allowed_cpus(&allowed) != APR_SUCCESS)
            abort();
    }
    arg = apr_pstrmemdup(pool, (const char *)data, size);
    if (strlen(arg) != size || strchr(arg, '\n')) {
        apr_pool_clear(pool);
        return 0;       /* a configuration line holds no NUL or newline */
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.pool = pool;
    ok = ref_parse(arg, &want);
    for (c = 0; ok && c < PIN_MAX_CPUS; c++)
        all_allowed &= !bits_has(&want, c) || bits_has(&allowed, c);
    err = ap_cpu_pinning_set_list(&cmd, NULL, arg);
    if ((err == NULL) != (ok && all_allowed))
        fail(err ? "valid list refused" : "invalid list accepted", arg, err);
    if (err == NULL && memcmp(&list, &want, sizeof(want)) != 0)
        fail("parsed set differs", arg, err);
    if (err != NULL && (strchr(err, '\n') || strncmp(err, "ProcessCoreList: ", 17) != 0))
        fail("error is not one 'ProcessCoreList: ' line", arg, err);
    apr_pool_clear(pool);
    return 0;
}
