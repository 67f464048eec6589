/* request-coalescing: Momento's Node.js request-coalescing example, in C.
 * The same load runs twice, each phase on fresh connections: first through
 * the plain client, then through the coalescer. The seed's before/after
 * table follows, with the server's RPC counts when the bundled server is
 * used, and optionally JSON and an SVG latency chart. */
#include "common/loadgen.h"
#include "common/plot.h"

#include <stdio.h>

static void row_us(const char *name, uint64_t before, uint64_t after)
{
    printf("| %-32s | %17llu | %16llu |\n", name, (unsigned long long)before,
           (unsigned long long)after);
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

static double mean_batch(const momento_client_batching_stats *k)
{
    return k->batches ? (double)k->batched_keys / (double)k->batches : 0.0;
}

static void table(const lg_result *b, const lg_result *a)
{
    const momento_coalescer_stats *k = &a->counters;
    printf("\n| %-32s | %17s | %16s |\n", "Request type, metric (us)", "Before Coalescing",
           "After Coalescing");
    printf("|%.34s|%.19s|%.18s|\n", "----------------------------------",
           "-------------------", "------------------");
    row_us("set, p50", hist_quantile(&b->stats.set, 0.5), hist_quantile(&a->stats.set, 0.5));
    row_us("set, p99", hist_quantile(&b->stats.set, 0.99), hist_quantile(&a->stats.set, 0.99));
    row_us("get, p50", hist_quantile(&b->stats.get, 0.5), hist_quantile(&a->stats.get, 0.5));
    row_us("get, p99", hist_quantile(&b->stats.get, 0.99), hist_quantile(&a->stats.get, 0.99));
    printf("| %-32s | %17s | %15.1f%% |\n", "set, % of requests coalesced", "-",
           pct(k->set_coalesced, k->set_requests));
    printf("| %-32s | %17s | %15.1f%% |\n", "get, % of requests coalesced", "-",
           pct(k->get_coalesced, k->get_requests));
    printf("| %-32s | %17.0f | %16.0f |\n", "requests per second",
           (double)b->stats.requests / b->wall_s, (double)a->stats.requests / a->wall_s);
    if (b->have_server && a->have_server && !a->batching)
        printf("| %-32s | %17llu | %16llu |\n", "server RPCs (get + set)",
               (unsigned long long)(b->server_get_rpcs + b->server_set_rpcs),
               (unsigned long long)(a->server_get_rpcs + a->server_set_rpcs));
    if (a->batching) { /* --batch: both phases batch */
        if (b->have_server && a->have_server)
            printf("| %-32s | %17llu | %16llu |\n", "server RPCs (get, set, batches)",
                   (unsigned long long)server_rpcs(b), (unsigned long long)server_rpcs(a));
        row_us("RPCs sent (client count)", b->rpcs, a->rpcs);
        row_us("batches (GetBatch + SetBatch)", b->batch_counters.batches,
               a->batch_counters.batches);
        printf("| %-32s | %17.1f | %16.1f |\n", "requests per batch (mean)",
               mean_batch(&b->batch_counters), mean_batch(&a->batch_counters));
    }
    printf("| %-32s | %17llu | %16llu |\n", "requests timed out",
           (unsigned long long)b->stats.timed_out, (unsigned long long)a->stats.timed_out);
    /* Called back with a timeout before the request's own deadline: with
     * per-request deadlines, a coalesced waiter must not inherit a shorter
     * one from the RPC it joined. */
    printf("| %-32s | %17llu | %16llu |\n", "timed out before own deadline",
           (unsigned long long)b->stats.timed_out_early, (unsigned long long)a->stats.timed_out_early);
    printf("\n");
}

static int write_json(const char *path, const lg_options *o, const lg_result *b, const lg_result *a)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"before\": ");
    lg_json_run(f, o, b, 2);
    fprintf(f, ",\n  \"after\": ");
    lg_json_run(f, o, a, 2);
    fprintf(f, "\n}\n");
    return fclose(f);
}

static int write_plot(const char *path, bool log_y, const lg_result *b, const lg_result *a,
                      const char *settings)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    plot_series s[4] = {
        {"get, before", "#d62728", "6,4", &b->stats.get},
        {"get, after", "#2ca02c", NULL, &a->stats.get},
        {"set, before", "#ff7f0e", "6,4", &b->stats.set},
        {"set, after", "#1f77b4", NULL, &a->stats.set},
    };
    int rc = plot_svg(f, "Latency by percentile, before and after request coalescing", settings, s,
                      4, log_y);
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
             "phase; %s%s",
             t.description, o.concurrency, o.keys, o.rps ? "rate-limited" : "no rate limit",
             o.get_ratio, o.duration_s, lg_describe_deadlines(&o, deadlines, sizeof(deadlines)),
             lg_describe_batching(&o, batching, sizeof(batching)));
    printf("%s\n", settings);

    lg_result before, after;
    /* With --quiet only the final table is printed: a phase's heading
     * would stand over nothing. */
    if (!o.quiet)
        printf("\nphase 1: without coalescing\n");
    rc = lg_run(&o, &t, false, "[before] ", &before);
    if (rc == MOMENTO_OK) {
        if (!o.quiet) {
            lg_print_summary(stdout, "[before] ", &before);
            printf("\nphase 2: with coalescing\n");
        }
        rc = lg_run(&o, &t, true, "[after] ", &after);
    }
    if (rc == MOMENTO_OK) {
        if (!o.quiet)
            lg_print_summary(stdout, "[after] ", &after);
        table(&before, &after);
        if (o.json_path && write_json(o.json_path, &o, &before, &after) != 0) {
            fprintf(stderr, "request-coalescing: cannot write %s\n", o.json_path);
            rc = 1;
        }
        if (o.plot_path && write_plot(o.plot_path, o.plot_log, &before, &after, settings) != 0) {
            fprintf(stderr, "request-coalescing: cannot write %s\n", o.plot_path);
            rc = 1;
        }
    } else {
        fprintf(stderr, "request-coalescing: %s\n", momento_strerror(rc));
    }
    lg_target_close(&t);
    if (rc == MOMENTO_OK && (before.stats.success == 0 || after.stats.success == 0)) {
        /* A demo in which nothing worked has failed, whatever it printed. */
        fprintf(stderr, "request-coalescing: no request succeeded in the %s phase\n",
                before.stats.success == 0 ? "first" : "second");
        return 1;
    }
    return rc == MOMENTO_OK ? 0 : 1;
}
