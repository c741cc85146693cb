/* SPDX-License-Identifier: BSD-3-Clause */
/* Human summary and JSON report. */
#define _GNU_SOURCE
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"
#include "perfect.h"

const double lg_client_q[LG_NQ] = { 0.5, 0.99, 0.999 };
static const char *const client_q_name[LG_NQ] = { "p50_ns", "p99_ns", "p999_ns" };

static uint64_t quantile(const sv_stage *s, double q)
{
    return sv_hist_quantile(&s->hist, q, s->moments.max);
}

static const sv_stage *stage(const lg_result *r, unsigned i)
{
    return &r->total.rec->stage[i];
}

double lg_result_offered(const lg_result *r)
{
    if (r->o->trace.n && r->window_ns > 0)
        return lg_trace_mean_rate(&r->o->trace, r->window_ns);
    return r->o->rate;
}

double lg_result_busy(const lg_result *r)
{
    return r->window_ns > 0 ? (double)r->total.busy_ns / r->window_ns / r->nthreads : 0;
}

/* Replies that arrived within the measurement phase, per second: a server
 * that falls behind shows here, not only as latency. */
double lg_result_achieved(const lg_result *r)
{
    return r->window_ns > 0 ? (double)r->total.c.in_window / (r->window_ns / 1e9) : 0;
}

void lg_client_view_compute(const lg_result *r, lg_client_view *v)
{
    const sv_stage *lat = stage(r, LG_LAT_SCHED);
    unsigned t, c, q;

    memset(v, 0, sizeof(*v));
    for (t = 0; t < r->nthreads; t++) {
        for (c = 0; c < r->threads[t].nconns; c++) {
            const lg_client_stats *cs = &r->threads[t].clients[c];

            if (cs->m.count == 0)
                continue;
            v->clients++;
            for (q = 0; q < LG_NQ; q++)
                v->client_mean[q] += (double)sv_hist_quantile(&cs->h, lg_client_q[q], cs->m.max);
        }
    }
    for (q = 0; q < LG_NQ; q++) {
        v->merged[q] = (double)quantile(lat, lg_client_q[q]);
        v->client_mean[q] = v->clients ? v->client_mean[q] / v->clients : 0;
        v->disagree[q] = v->merged[q] > 0 &&
                         fabs(v->client_mean[q] - v->merged[q]) / v->merged[q] > LG_DISAGREE;
        v->any |= v->disagree[q];
    }
}

/* ---- text -------------------------------------------------------------- */

static const char *arrival_name(const lg_arrival *a)
{
    return a->kind == LG_ARRIVAL_DET ? "deterministic" : a->kind == LG_ARRIVAL_EXP ? "exponential"
                                                                                    : "bounded Pareto";
}

static void text_latency(FILE *out, const char *label, const sv_stage *s)
{
    fprintf(out, "  %-22s mean %9.1f  p50 %9.1f  p90 %9.1f  p95 %9.1f  p99 %9.1f  p99.9 %9.1f  max %9.1f\n",
            label, s->moments.mean / 1e3, quantile(s, 0.5) / 1e3, quantile(s, 0.9) / 1e3,
            quantile(s, 0.95) / 1e3, quantile(s, 0.99) / 1e3, quantile(s, 0.999) / 1e3,
            (double)s->moments.max / 1e3);
}

static void text_header(FILE *out, const lg_result *r)
{
    const lg_options *o = r->o;

    fprintf(out, "loadgen: %s %s port %u, %u thread(s) x %u %s, %s arrivals (C^2 %.3g)%s\n",
            o->proto == LG_PROTO_HTTP ? "http" : "memcache", o->host, o->port, o->threads,
            lg_options_slots(o), o->seq_clients ? "sequential clients" : "connections",
            arrival_name(&o->arrival), lg_arrival_cv2(&o->arrival),
            o->trace.n ? (o->shape ? ", rate shape" : ", rate trace") : "");
    if (o->max_outstanding)
        fprintf(out, "  CLOSED LOOP: at most %u outstanding per connection; later requests wait\n",
                o->max_outstanding);
    else
        fprintf(out, "  open loop: no cap on outstanding requests\n");
}

static void text_counts(FILE *out, const lg_result *r)
{
    const lg_counters *c = &r->total.c;
    double w = r->window_ns / 1e9;

    fprintf(out, "  rate (req/s)           offered %.1f  scheduled %.1f  achieved %.1f  over %.3f s\n",
            lg_result_offered(r), w > 0 ? (double)c->scheduled / w : 0, lg_result_achieved(r), w);
    fprintf(out, "  requests               scheduled %llu  sent %llu  completed %llu  ok %llu\n",
            (unsigned long long)c->scheduled, (unsigned long long)c->sent,
            (unsigned long long)c->completed, (unsigned long long)c->ok);
    fprintf(out, "  problems               errors %llu  unexpected %llu  lost %llu  timeouts %llu  "
            "late sends %llu (> %.0f us)  connect errors %llu\n",
            (unsigned long long)c->errors, (unsigned long long)c->unexpected,
            (unsigned long long)c->lost, (unsigned long long)c->timeouts,
            (unsigned long long)c->late, r->o->late_ns / 1e3, (unsigned long long)c->connect_errors);
    if (r->o->proto == LG_PROTO_HTTP)
        fprintf(out, "  keep-alive             retried %llu (resent after the server closed; not lost)\n",
                (unsigned long long)c->retried);
    if (r->o->proto == LG_PROTO_MEMCACHE)
        fprintf(out, "  memcache               gets %llu (keys %llu, hits %llu)  sets %llu\n",
                (unsigned long long)c->gets, (unsigned long long)c->get_keys,
                (unsigned long long)c->hits, (unsigned long long)c->sets);
}

static void text_clients(FILE *out, const lg_result *r)
{
    lg_client_view v;

    lg_client_view_compute(r, &v);
    fprintf(out, "  p99 per client vs merged (us): mean of %u clients %.1f, merged %.1f%s\n",
            v.clients, v.client_mean[1] / 1e3, v.merged[1] / 1e3,
            v.any ? "  [DISAGREE: clients saw different latencies; trust the merged figure]" : "");
}

/* Where reply times came from, and how long the loop took to read them. */
static void text_reply_timing(FILE *out, const lg_result *r)
{
    const lg_counters *c = &r->total.c;
    const sv_stage *d = stage(r, LG_CLIENT_DELAY);

    fprintf(out, "  reply times            kernel %llu  loop %llu (no kernel stamp)", (unsigned long long)c->kernel_timed,
            (unsigned long long)c->loop_timed);
    if (r->o->timestamps == LG_TS_KERNEL_TX)
        fprintf(out, "  sends timed by kernel %llu", (unsigned long long)c->sends_kernel_timed);
    fprintf(out, "\n  client delay (us)      p50 %.2f  p99 %.2f  max %.1f  (kernel receive to loop read)\n",
            quantile(d, 0.5) / 1e3, quantile(d, 0.99) / 1e3, (double)d->moments.max / 1e3);
}

/* The schedule error against what the machine allowed (perfect.h). */
static void text_schedule(FILE *out, const lg_result *r)
{
    const sv_stage *err = stage(r, LG_SCHED_ERR), *own = stage(r, LG_LOOP_LATE);
    const sv_hist *stalls = &stage(r, LG_SPIN_STALL)->hist;
    uint64_t spun = r->total.spun_ns;

    fprintf(out, "  schedule error (us)    p50 %.2f  p99 %.2f  max %.1f\n", quantile(err, 0.5) / 1e3,
            quantile(err, 0.99) / 1e3, (double)err->moments.max / 1e3);
    fprintf(out, "    the loop's own (us)  p50 %.2f  p99 %.2f  max %.1f  (after an earlier send() "
            "returned)\n", quantile(own, 0.5) / 1e3, quantile(own, 0.99) / 1e3,
            (double)own->moments.max / 1e3);
    if (spun == 0)
        fprintf(out, "  perfect sender (us)    not measured (the loop never spun on the clock)\n");
    else
        fprintf(out, "  perfect sender (us)    p50 %.2f  p99 %.2f  (the CPU's stalls in %.3f s of "
                "clock-only spinning)\n", lg_perfect_quantile(stalls, spun, 0.5) / 1e3,
                lg_perfect_quantile(stalls, spun, 0.99) / 1e3, spun / 1e9);
}

void lg_report_text(FILE *out, const lg_result *r)
{
    const sv_stage *batch = stage(r, LG_BATCH);
    double cpu = r->total.cpu_user_s + r->total.cpu_sys_s;

    text_header(out, r);
    text_counts(out, r);
    fprintf(out, "  latency (us)\n");
    text_latency(out, "from schedule", stage(r, LG_LAT_SCHED));
    text_latency(out, "from actual send", stage(r, LG_LAT_SENT));
    text_latency(out, "from sched to read", stage(r, LG_LAT_READ));
    text_reply_timing(out, r);
    text_schedule(out, r);
    fprintf(out, "  requests per write     mean %.2f  p99 %llu  max %llu  held for a later one %llu\n",
            batch->moments.mean, (unsigned long long)quantile(batch, 0.99),
            (unsigned long long)batch->moments.max, (unsigned long long)r->total.c.held);
    if (r->o->seq_clients)
        fprintf(out, "  connections opened     %llu (%.1f/s), connect p50 %.1f us\n",
                (unsigned long long)r->total.c.conns_opened,
                r->window_ns > 0 ? (double)r->total.c.conns_opened / (r->window_ns / 1e9) : 0,
                quantile(stage(r, LG_CONNECT), 0.5) / 1e3);
    text_clients(out, r);
    fprintf(out, "  client CPU             %.2f cores during measurement (user %.2f s, sys %.2f s), "
            "loop busy %.1f%% (the rest waits or spins)\n",
            r->window_ns > 0 ? cpu / (r->window_ns / 1e9) : 0, r->total.cpu_user_s, r->total.cpu_sys_s,
            100 * lg_result_busy(r));
}

/* ---- JSON -------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* Every non-empty bucket as [low, width, count]. */
static void json_buckets(FILE *f, const sv_hist *h)
{
    const char *sep = "";
    size_t b;

    for (b = 0; b < SV_HIST_BUCKETS; b++) {
        if (h->bucket[b] == 0)
            continue;
        fprintf(f, "%s[%llu,%llu,%llu]", sep, (unsigned long long)sv_hist_bucket_low(b),
                (unsigned long long)sv_hist_bucket_width(b), (unsigned long long)h->bucket[b]);
        sep = ",";
    }
}

/* Summary, then the histogram. */
static void json_stage(FILE *f, const char *name, const sv_stage *s)
{
    sv_summary sum;

    sv_stage_summarize(s, &sum);
    fprintf(f, "\"%s\":{\"count\":%llu,\"mean\":%.3f,\"stddev\":%.3f,\"cv2\":%.6g,\"min\":%llu,\"max\":%llu,"
            "\"p50\":%llu,\"p90\":%llu,\"p95\":%llu,\"p99\":%llu,\"p999\":%llu,\"overflow\":%llu,"
            "\"histogram\":[", name, (unsigned long long)sum.count, sum.mean_ns, sum.stddev_ns, sum.cv2,
            (unsigned long long)sum.min_ns, (unsigned long long)sum.max_ns,
            (unsigned long long)sum.p50_ns, (unsigned long long)sum.p90_ns,
            (unsigned long long)quantile(s, 0.95), (unsigned long long)sum.p99_ns,
            (unsigned long long)sum.p999_ns, (unsigned long long)s->hist.overflow);
    json_buckets(f, &s->hist);
    fputs("]}", f);
}

static void json_arrival(FILE *f, const lg_options *o, double rate)
{
    static const char *const kinds[] = { "det", "exp", "pareto" };

    fprintf(f, "\"arrival\":{\"spec\":");
    json_str(f, o->arrival_spec);
    fprintf(f, ",\"kind\":\"%s\",\"cv2\":%.6g", kinds[o->arrival.kind], lg_arrival_cv2(&o->arrival));
    if (o->arrival.kind == LG_ARRIVAL_PARETO) {
        /* The range that actually applies after scaling to the mean
         * rate of one thread's stream. */
        double k = (o->threads / rate * 1e9) /
                   lg_bpareto_moment(o->arrival.alpha, o->arrival.lo_ns, o->arrival.hi_ns, 1);

        fprintf(f, ",\"alpha\":%.6g,\"lo_ns\":%.6g,\"hi_ns\":%.6g,\"scaled_lo_ns\":%.6g,\"scaled_hi_ns\":%.6g",
                o->arrival.alpha, o->arrival.lo_ns, o->arrival.hi_ns, k * o->arrival.lo_ns,
                k * o->arrival.hi_ns);
    }
    fprintf(f, "},\"rate_steps\":[");
    for (size_t i = 0; i < o->trace.n; i++)
        fprintf(f, "%s[%.6g,%.6g]", i ? "," : "", o->trace.t_ns[i] / 1e9, o->trace.rate[i]);
    fprintf(f, "]");
}

/* The worst of the threads' first-send schedule errors: how late the whole
 * load began. */
static uint64_t first_send_late(const lg_result *r)
{
    uint64_t late = 0;
    unsigned i;

    for (i = 0; i < r->nthreads; i++)
        if (r->threads[i].first_late_ns > late)
            late = r->threads[i].first_late_ns;
    return late;
}

static void json_meta(FILE *f, const lg_result *r)
{
    const lg_options *o = r->o;
    char host[256] = "";
    int i;

    gethostname(host, sizeof(host) - 1);
    fprintf(f, "\"meta\":{\"tool\":\"stagevar-loadgen\",\"argv\":[");
    for (i = 0; i < o->argc; i++) {
        fputs(i ? "," : "", f);
        json_str(f, o->argv[i]);
    }
    fprintf(f, "],\"hostname\":");
    json_str(f, host);
    fprintf(f, ",\"start_unix_ns\":%llu,\"start_woke_unix_ns\":%llu,\"first_send_late_ns\":%llu,"
            "\"start_at_ns\":%llu,\"wall_s\":%.6f,\"seed\":%llu,\"protocol\":\"%s\",\"server\":",
            (unsigned long long)r->start_unix_ns, (unsigned long long)r->start_woke_unix_ns,
            (unsigned long long)first_send_late(r),
            (unsigned long long)o->start_at_ns, r->wall_s, (unsigned long long)o->seed,
            o->proto == LG_PROTO_HTTP ? "http" : "memcache");
    json_str(f, o->host);
    fprintf(f, ",\"port\":%u,\"threads\":%u,\"connections_per_thread\":%u,\"sequential_clients\":%u,"
            "\"requests_per_conn\":%u,\"mode\":\"%s\",\"max_outstanding\":%u,\"batch_interval_us\":%.3f,"
            "\"nagle\":%s,\"rate\":%.6g,\"warmup_s\":%.6g,\"duration_s\":%.6g,\"requests\":%llu,"
            "\"timeout_s\":%.6g,\"late_us\":%.6g,\"keys\":%llu,\"get_ratio\":%.6g,"
            "\"multiget\":%u,\"ttl_s\":%u,\"ttl_fraction\":%.6g,\"stream\":%.6g,\"preload_sets\":%llu,",
            o->port, o->threads, o->seq_clients ? 0 : o->conns, o->seq_clients,
            o->seq_clients ? o->reqs_per_conn : 0, o->max_outstanding ? "closed-loop" : "open-loop",
            o->max_outstanding, o->batch_ns / 1e3, o->nagle ? "true" : "false", o->rate,
            o->warmup_ns / 1e9, o->duration_ns / 1e9, (unsigned long long)o->requests,
            o->timeout_ns / 1e9, o->late_ns / 1e3, (unsigned long long)o->wl.keys,
            o->wl.get_ratio, o->wl.multiget, o->wl.ttl.secs, o->wl.ttl.secs ? o->wl.ttl.fraction : 0,
            o->wl.stream, (unsigned long long)r->preload_sets);
    fprintf(f, "\"timestamps\":\"%s\",\"coalesce\":%s,", lg_ts_mode_names[o->timestamps],
            o->coalesce ? "true" : "false");
    if (o->spin_auto)
        fputs("\"spin_us\":\"auto\",", f);
    else
        fprintf(f, "\"spin_us\":%.6g,", o->spin_ns / 1e3);
    json_arrival(f, o, lg_result_offered(r));
    fputs("}", f);
}

static void json_counts(FILE *f, const lg_result *r)
{
    const lg_counters *c = &r->total.c;
    double w = r->window_ns / 1e9;

    fprintf(f, "\"rates\":{\"window_s\":%.6f,\"offered\":%.3f,\"scheduled\":%.3f,\"sent\":%.3f,\"achieved\":%.3f},",
            w, lg_result_offered(r), w > 0 ? c->scheduled / w : 0, w > 0 ? c->sent / w : 0,
            lg_result_achieved(r));
    fprintf(f, "\"counts\":{\"scheduled\":%llu,\"sent\":%llu,\"completed\":%llu,\"completed_in_window\":%llu,\"ok\":%llu,\"errors\":%llu,"
            "\"unexpected\":%llu,\"lost\":%llu,\"timeouts\":%llu,\"late\":%llu,\"gets\":%llu,\"get_keys\":%llu,"
            "\"hits\":%llu,\"sets\":%llu,\"connections_opened\":%llu,\"connect_errors\":%llu,"
            "\"warmup_requests\":%llu,\"retried\":%llu,\"kernel_timed\":%llu,\"loop_timed\":%llu,"
            "\"sends_kernel_timed\":%llu,\"held\":%llu}",
            (unsigned long long)c->scheduled, (unsigned long long)c->sent, (unsigned long long)c->completed,
            (unsigned long long)c->in_window, (unsigned long long)c->ok, (unsigned long long)c->errors, (unsigned long long)c->unexpected,
            (unsigned long long)c->lost, (unsigned long long)c->timeouts, (unsigned long long)c->late,
            (unsigned long long)c->gets, (unsigned long long)c->get_keys, (unsigned long long)c->hits,
            (unsigned long long)c->sets, (unsigned long long)c->conns_opened,
            (unsigned long long)c->connect_errors, (unsigned long long)c->warmup_requests,
            (unsigned long long)c->retried, (unsigned long long)c->kernel_timed,
            (unsigned long long)c->loop_timed, (unsigned long long)c->sends_kernel_timed,
            (unsigned long long)c->held);
}

static void json_clients(FILE *f, const lg_result *r)
{
    lg_client_view v;
    const char *sep = "";
    unsigned t, c, q;

    lg_client_view_compute(r, &v);
    fprintf(f, "\"per_client\":{\"clients\":[");
    for (t = 0; t < r->nthreads; t++) {
        for (c = 0; c < r->threads[t].nconns; c++) {
            const lg_client_stats *cs = &r->threads[t].clients[c];

            fprintf(f, "%s{\"thread\":%u,\"client\":%u,\"count\":%llu,\"mean_ns\":%.3f", sep, t, c,
                    (unsigned long long)cs->m.count, cs->m.mean);
            for (q = 0; q < LG_NQ; q++)
                fprintf(f, ",\"%s\":%llu", client_q_name[q],
                        (unsigned long long)sv_hist_quantile(&cs->h, lg_client_q[q], cs->m.max));
            fprintf(f, ",\"max_ns\":%llu}", (unsigned long long)cs->m.max);
            sep = ",";
        }
    }
    fprintf(f, "],\"merged\":{");
    for (q = 0; q < LG_NQ; q++)
        fprintf(f, "%s\"%s\":%.0f", q ? "," : "", client_q_name[q], v.merged[q]);
    fprintf(f, "},\"mean_of_clients\":{");
    for (q = 0; q < LG_NQ; q++)
        fprintf(f, "%s\"%s\":%.0f", q ? "," : "", client_q_name[q], v.client_mean[q]);
    fprintf(f, "},\"disagree\":{");
    for (q = 0; q < LG_NQ; q++)
        fprintf(f, "%s\"%s\":%s", q ? "," : "", client_q_name[q], v.disagree[q] ? "true" : "false");
    fprintf(f, "},\"any_disagree\":%s,\"disagree_threshold\":%.2f}", v.any ? "true" : "false", LG_DISAGREE);
}

static void json_series(FILE *f, const lg_result *r)
{
    size_t i, n = r->total.nsec;

    /* Trim the empty tail the geometric growth left. */
    while (n > 0 && r->total.sec[n - 1].scheduled == 0 && r->total.sec[n - 1].completed == 0)
        n--;
    fprintf(f, "\"time_series\":[");
    for (i = 0; i < n; i++) {
        const lg_second *s = &r->total.sec[i];

        fprintf(f, "%s{\"second\":%zu,\"scheduled\":%llu,\"completed\":%llu,\"errors\":%llu,\"latency_count\":%llu,"
                "\"mean_ns\":%.1f,\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu,\"histogram\":[",
                i ? "," : "", i, (unsigned long long)s->scheduled, (unsigned long long)s->completed,
                (unsigned long long)s->errors, (unsigned long long)s->lat_m.count, s->lat_m.mean,
                (unsigned long long)sv_hist_quantile(&s->lat, 0.5, s->lat_m.max),
                (unsigned long long)sv_hist_quantile(&s->lat, 0.99, s->lat_m.max),
                (unsigned long long)s->lat_m.max);
        json_buckets(f, &s->lat);
        fputs("]}", f);
    }
    fputs("]", f);
}

static void json_perfect(FILE *f, const lg_result *r)
{
    const sv_hist *stalls = &stage(r, LG_SPIN_STALL)->hist;
    uint64_t spun = r->total.spun_ns;

    fprintf(f, "\"perfect_sender\":{\"observed_ns\":%llu,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu,"
            "\"p999\":%llu}", (unsigned long long)spun,
            (unsigned long long)lg_perfect_quantile(stalls, spun, 0.5),
            (unsigned long long)lg_perfect_quantile(stalls, spun, 0.9),
            (unsigned long long)lg_perfect_quantile(stalls, spun, 0.99),
            (unsigned long long)lg_perfect_quantile(stalls, spun, 0.999));
}

static void json_cpu(FILE *f, const lg_result *r)
{
    double w = r->window_ns / 1e9, cpu = r->total.cpu_user_s + r->total.cpu_sys_s;
    double pu = (double)r->ru.ru_utime.tv_sec + r->ru.ru_utime.tv_usec * 1e-6;
    double ps = (double)r->ru.ru_stime.tv_sec + r->ru.ru_stime.tv_usec * 1e-6;
    unsigned t;

    fprintf(f, "\"cpu\":{\"measurement_user_s\":%.6f,\"measurement_sys_s\":%.6f,\"utilisation_cores\":%.4f,"
            "\"busy_fraction\":%.4f,\"process_user_s\":%.6f,\"process_sys_s\":%.6f,\"threads\":[",
            r->total.cpu_user_s, r->total.cpu_sys_s, w > 0 ? cpu / w : 0, lg_result_busy(r), pu, ps);
    for (t = 0; t < r->nthreads; t++)
        fprintf(f, "%s{\"user_s\":%.6f,\"sys_s\":%.6f,\"spin_margin_us\":%.3f,\"read_guard_us\":%.3f,"
                "\"send_p50_us\":%.3f}",
                t ? "," : "", r->threads[t].st.cpu_user_s, r->threads[t].st.cpu_sys_s,
                (r->o->spin_auto ? (double)lg_margin_ns(&r->threads[t].margin) : r->o->spin_ns) / 1e3,
                (double)lg_margin_ns(&r->threads[t].guard) / 1e3,
                (double)lg_margin_ns(&r->threads[t].send_est) / 1e3);
    fputs("]}", f);
}

int lg_report_json(const char *path, const lg_result *r, char *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    unsigned i;

    if (!f) {
        snprintf(err, LG_ERRLEN, "--json: cannot write '%s': %m", path);
        return -1;
    }
    fputc('{', f);
    json_meta(f, r);
    fputc(',', f);
    json_counts(f, r);
    for (i = 0; i < LG_NSTAGES; i++) {
        fputc(',', f);
        json_stage(f, lg_stage_names[i], stage(r, i));
    }
    fputc(',', f);
    json_perfect(f, r);
    fputc(',', f);
    json_clients(f, r);
    fputc(',', f);
    json_series(f, r);
    fputc(',', f);
    json_cpu(f, r);
    fputs("}\n", f);
    if ((f == stdout ? fflush(f) : fclose(f)) != 0) {
        snprintf(err, LG_ERRLEN, "--json: error writing '%s': %m", path);
        return -1;
    }
    return 0;
}
