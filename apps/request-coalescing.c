/* request-coalescing: Momento's Node.js request-coalescing example, in C.
 * The same load runs three times, each phase on fresh connections: through
 * the plain client, through the coalescer, and through the coalescer on a
 * client with a near cache (docs/near-cache.md). The seed's before/after
 * table follows, with the third phase beside it, the server's RPCs per
 * request when the bundled server is used, and optionally JSON and an SVG
 * latency chart. */
#include "common/loadgen.h"
#include "common/plot.h"

#include <stdio.h>

/* The table's rows: a name, then phase 1, 2 and 3's values. */
static void row_u(const char *name, uint64_t b, uint64_t a, uint64_t n)
{
    printf("| %-32s | %17llu | %16llu | %23llu |\n", name, (unsigned long long)b,
           (unsigned long long)a, (unsigned long long)n);
}

static void row_f(const char *name, int decimals, double b, double a, double n)
{
    printf("| %-32s | %17.*f | %16.*f | %23.*f |\n", name, decimals, b, decimals, a, decimals, n);
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static uint64_t server_rpcs(const lg_result *r)
{
    return r->server_get_rpcs + r->server_set_rpcs + r->server_get_batch_rpcs +
           r->server_set_batch_rpcs;
}

static double per_request(uint64_t n, const lg_result *r)
{
    return r->stats.requests ? (double)n / (double)r->stats.requests : 0.0;
}

static double mean_batch(const momento_client_batching_stats *k)
{
    return k->batches ? (double)k->batched_keys / (double)k->batches : 0.0;
}

/* Phase 1 (b: before), phase 2 (a: after) and phase 3 (n: coalescing and
 * a near cache), side by side. */
static void table(const lg_options *o, const lg_result *b, const lg_result *a, const lg_result *n)
{
    const momento_coalescer_stats *ka = &a->counters, *kn = &n->counters;
    const momento_near_cache_stats *nc = &n->near_counters;
    printf("\n| %-32s | %17s | %16s | %23s |\n", "Request type, metric (us)", "Before Coalescing",
           "After Coalescing", "Coalescing + Near Cache");
    printf("|%.34s|%.19s|%.18s|%.25s|\n", "----------------------------------",
           "-------------------", "------------------", "-------------------------");
    row_u("set, p50", hist_quantile(&b->stats.set, 0.5), hist_quantile(&a->stats.set, 0.5),
          hist_quantile(&n->stats.set, 0.5));
    row_u("set, p99", hist_quantile(&b->stats.set, 0.99), hist_quantile(&a->stats.set, 0.99),
          hist_quantile(&n->stats.set, 0.99));
    row_u("get, p50", hist_quantile(&b->stats.get, 0.5), hist_quantile(&a->stats.get, 0.5),
          hist_quantile(&n->stats.get, 0.5));
    row_u("get, p99", hist_quantile(&b->stats.get, 0.99), hist_quantile(&a->stats.get, 0.99),
          hist_quantile(&n->stats.get, 0.99));
    /* Phase 3's coalescer sees only the gets the near cache did not answer:
     * its share is of those. */
    printf("| %-32s | %17s | %15.1f%% | %22.1f%% |\n", "set, % of requests coalesced", "-",
           pct(ka->set_coalesced, ka->set_requests), pct(kn->set_coalesced, kn->set_requests));
    printf("| %-32s | %17s | %15.1f%% | %22.1f%% |\n", "get, % of requests coalesced", "-",
           pct(ka->get_coalesced, ka->get_requests), pct(kn->get_coalesced, kn->get_requests));
    /* Of the gets the near cache looked up: answered (HIT or MISS kept)
     * or sent on. */
    printf("| %-32s | %17s | %16s | %22.1f%% |\n", "get, % answered by near cache", "-", "-",
           pct(nc->hits + nc->miss_hits, nc->hits + nc->miss_hits + nc->misses));
    if (o->rps) /* the rate asked for, beside the rate each phase reached */
        row_u("requests per second, limit", (uint64_t)o->rps, (uint64_t)o->rps, (uint64_t)o->rps);
    row_f("requests per second", 0, (double)b->stats.requests / b->wall_s,
          (double)a->stats.requests / a->wall_s, (double)n->stats.requests / n->wall_s);
    bool server = b->have_server && a->have_server && n->have_server;
    if (server && !a->batching) {
        row_u("server RPCs (get + set)", b->server_get_rpcs + b->server_set_rpcs,
              a->server_get_rpcs + a->server_set_rpcs, n->server_get_rpcs + n->server_set_rpcs);
    }
    /* Absolute RPC counts rise with throughput; per request they show what
     * coalescing and the near cache save. */
    if (server)
        row_f("server RPCs per request", 3, per_request(server_rpcs(b), b),
              per_request(server_rpcs(a), a), per_request(server_rpcs(n), n));
    else
        row_f("RPCs sent per request (client)", 3, per_request(b->rpcs, b),
              per_request(a->rpcs, a), per_request(n->rpcs, n));
    if (a->batching) { /* --batch: every phase batches */
        if (server)
            row_u("server RPCs (get, set, batches)", server_rpcs(b), server_rpcs(a),
                  server_rpcs(n));
        row_u("RPCs sent (client count)", b->rpcs, a->rpcs, n->rpcs);
        row_u("batches (GetBatch + SetBatch)", b->batch_counters.batches,
              a->batch_counters.batches, n->batch_counters.batches);
        row_f("requests per batch (mean)", 1, mean_batch(&b->batch_counters),
              mean_batch(&a->batch_counters), mean_batch(&n->batch_counters));
    }
    row_u("requests timed out", b->stats.timed_out, a->stats.timed_out, n->stats.timed_out);
    /* Called back with a timeout before the request's own deadline: with
     * per-request deadlines, a coalesced waiter must not inherit a shorter
     * one from the RPC it joined. */
    row_u("timed out before own deadline", b->stats.timed_out_early, a->stats.timed_out_early,
          n->stats.timed_out_early);
    printf("\n");
}

/* `plain`: phases 1 and 2's options (no near cache); `o`: phase 3's. */
static int write_json(const char *path, const lg_options *plain, const lg_options *o,
                      const lg_result *b, const lg_result *a, const lg_result *n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"before\": ");
    lg_json_run(f, plain, b, 2);
    fprintf(f, ",\n  \"after\": ");
    lg_json_run(f, plain, a, 2);
    fprintf(f, ",\n  \"after_near_cache\": ");
    lg_json_run(f, o, n, 2);
    fprintf(f, "\n}\n");
    return fclose(f);
}

static int write_plot(const char *path, bool log_y, const lg_result *b, const lg_result *a,
                      const lg_result *n, const char *settings)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    plot_series s[6] = {
        {"get, before", "#d62728", "6,4", &b->stats.get},
        {"get, after", "#2ca02c", NULL, &a->stats.get},
        {"get, near cache", "#9467bd", "2,3", &n->stats.get},
        {"set, before", "#ff7f0e", "6,4", &b->stats.set},
        {"set, after", "#1f77b4", NULL, &a->stats.set},
        {"set, near cache", "#8c564b", "2,3", &n->stats.set},
    };
    int rc = plot_svg(f, "Latency by percentile: plain, coalescing, coalescing + near cache",
                      settings, s, 6, log_y);
    return fclose(f) == 0 ? rc : -1;
}

int main(int argc, char **argv)
{
    lg_tune_process();
    lg_options o;
    int rc = lg_parse_options(argc, argv, true, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    lg_target t;
    if (lg_target_open(&t, &o) != MOMENTO_OK)
        return 1;
    /* The run's settings: printed first, and written under the chart's
     * title, so a chart says what run it shows. */
    char deadlines[64], batching[160], settings[1024];
    snprintf(settings, sizeof(settings),
             "request-coalescing: target %s; %d workers on %d keys, %s, get ratio %g, %.1f s per "
             "phase; %s%s; phase 3's near cache %d bytes, %d ms stale at most",
             t.description, o.concurrency, o.keys, o.rps ? "rate-limited" : "no rate limit",
             o.get_ratio, o.duration_s, lg_describe_deadlines(&o, deadlines, sizeof(deadlines)),
             lg_describe_batching(&o, batching, sizeof(batching)), o.near_bytes,
             o.near_staleness_ms);
    printf("%s\n", settings);
    /* Phases 1 and 2 without the near cache, phase 3 with it. */
    lg_options plain = o;
    plain.near_bytes = 0;

    static const char *const headings[3] = {"without coalescing", "with coalescing",
                                            "with coalescing and a near cache"};
    static const char *const labels[3] = {"[before] ", "[after] ", "[near cache] "};
    static const char *const ordinals[3] = {"first", "second", "third"};
    lg_result res[3];
    for (int i = 0; i < 3 && rc == MOMENTO_OK; i++) {
        /* With --quiet only the final table is printed: a phase's heading
         * would stand over nothing. */
        if (!o.quiet)
            printf("\nphase %d: %s\n", i + 1, headings[i]);
        rc = lg_run(i == 2 ? &o : &plain, &t, i > 0, labels[i], &res[i]);
        if (rc == MOMENTO_OK && !o.quiet)
            lg_print_summary(stdout, labels[i], &res[i]);
    }
    if (rc == MOMENTO_OK) {
        table(&o, &res[0], &res[1], &res[2]);
        if (o.json_path && write_json(o.json_path, &plain, &o, &res[0], &res[1], &res[2]) != 0) {
            fprintf(stderr, "request-coalescing: cannot write %s\n", o.json_path);
            rc = 1;
        }
        if (o.plot_path &&
            write_plot(o.plot_path, o.plot_log, &res[0], &res[1], &res[2], settings) != 0) {
            fprintf(stderr, "request-coalescing: cannot write %s\n", o.plot_path);
            rc = 1;
        }
    } else {
        fprintf(stderr, "request-coalescing: %s\n", momento_strerror(rc));
    }
    lg_target_close(&t);
    for (int i = 0; i < 3 && rc == MOMENTO_OK; i++)
        if (res[i].stats.success == 0) {
            /* A demo in which nothing worked has failed, whatever it printed. */
            fprintf(stderr, "request-coalescing: no request succeeded in the %s phase\n",
                    ordinals[i]);
            return 1;
        }
    return rc == MOMENTO_OK ? 0 : 1;
}
