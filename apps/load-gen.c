/* load-gen: Momento's Node.js load generator, in C. Workers run set-then-get
 * against Momento, a compatible server, or (with no target given) a local
 * server started in-process; stats print as they accumulate and at the end.
 * With --merge it makes no load: it combines the --json files of runs made
 * at the same time (several processes or machines) into one report.
 * Run with --help for every option. */
#include "common/loadgen.h"
#include "common/plot.h"

#include <stdio.h>

static int write_json(const char *path, const lg_options *o, const lg_result *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    lg_json_run(f, o, r, 0);
    fprintf(f, "\n");
    return fclose(f);
}

static int write_plot(const char *path, bool log_y, const lg_result *r, const char *title,
                      const char *settings)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    plot_series s[2] = {
        {"get", "#1f77b4", NULL, &r->stats.get},
        {"set", "#ff7f0e", "6,4", &r->stats.set},
    };
    int rc = plot_svg(f, title, settings, s, 2, log_y);
    return fclose(f) == 0 ? rc : -1;
}

/* The JSON and the chart, when asked for; 0, or 1 after saying which
 * failed. */
static int write_outputs(const lg_options *o, const lg_result *r, const char *title,
                         const char *settings)
{
    int rc = 0;
    if (o->json_path && write_json(o->json_path, o, r) != 0) {
        fprintf(stderr, "load-gen: cannot write %s\n", o->json_path);
        rc = 1;
    }
    if (o->plot_path && write_plot(o->plot_path, o->plot_log, r, title, settings) != 0) {
        fprintf(stderr, "load-gen: cannot write %s (or no request succeeded to plot)\n",
                o->plot_path);
        rc = 1;
    }
    return rc;
}

static int merge(const lg_options *o)
{
    lg_options cfg;
    lg_result r;
    int rc = lg_merge(o, &cfg, &r);
    if (rc == 0) {
        char deadlines[64], batching[160], settings[1024];
        snprintf(settings, sizeof(settings),
                 "load-gen: merged %d run%s from %d file%s, started within %.3f s of each other; "
                 "%d workers, %s, get ratio %g, %.1f s; %s%s",
                 r.merged_runs, r.merged_runs == 1 ? "" : "s", o->n_merge,
                 o->n_merge == 1 ? "" : "s", r.start_spread_s, cfg.concurrency,
                 cfg.rps ? "rate-limited" : "no rate limit", cfg.get_ratio, cfg.duration_s,
                 lg_describe_deadlines(&cfg, deadlines, sizeof(deadlines)),
                 lg_describe_batching(&cfg, batching, sizeof(batching)));
        printf("%s\n", settings);
        lg_print_summary(stdout, "", &r);
        char title[96];
        snprintf(title, sizeof(title), "Latency by percentile, %d load-gen runs merged",
                 r.merged_runs);
        rc = write_outputs(&cfg, &r, title, settings);
        if (rc == 0 && r.stats.success == 0) {
            fprintf(stderr, "load-gen: no request succeeded\n");
            rc = 1;
        }
    }
    lg_merge_free();
    return rc;
}

int main(int argc, char **argv)
{
    lg_tune_process();
    lg_options o;
    int rc = lg_parse_options(argc, argv, false, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (o.merge_files)
        return merge(&o);
    lg_target t;
    if (lg_target_open(&t, &o) != MOMENTO_OK)
        return 1;
    /* The run's settings: printed first, and written under the chart's
     * title, so a chart says what run it shows. */
    char deadlines[64], batching[160], settings[1024];
    snprintf(settings, sizeof(settings),
             "load-gen: target %s; %d workers, %s, get ratio %g, %.1f s; %s%s", t.description,
             o.concurrency, o.rps ? "rate-limited" : "no rate limit", o.get_ratio, o.duration_s,
             lg_describe_deadlines(&o, deadlines, sizeof(deadlines)),
             lg_describe_batching(&o, batching, sizeof(batching)));
    printf("%s\n", settings);
    lg_result r;
    rc = lg_run(&o, &t, false, "", &r);
    if (rc == MOMENTO_OK) {
        lg_print_summary(stdout, "", &r);
        if (write_outputs(&o, &r, "Latency by percentile, load-gen", settings) != 0)
            rc = 1;
    } else {
        fprintf(stderr, "load-gen: %s\n", momento_strerror(rc));
    }
    lg_target_close(&t);
    if (rc == MOMENTO_OK && r.stats.success == 0) {
        /* A load test in which nothing worked has failed, whatever it printed. */
        fprintf(stderr, "load-gen: no request succeeded\n");
        return 1;
    }
    return rc == MOMENTO_OK ? 0 : 1;
}
