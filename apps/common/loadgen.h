/* What load-gen and request-coalescing share: options, the target (local
 * server, an endpoint, or Momento itself), the workers that drive
 * set-then-get, and the statistics they keep and print. */
#ifndef LG_LOADGEN_H
#define LG_LOADGEN_H

#include "histogram.h"
#include "target.h"
#include "momento/coalescer.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct lg_options {
    const char *prog;       /* "load-gen" or "request-coalescing" */
    ex_target_options target; /* --endpoint, --insecure, --tls-roots */
    const char *cache;
    int concurrency;
    int rps;                /* 0 = unlimited */
    double duration_s;
    int payload_bytes;
    /* --timeout-ms A:B: each request's deadline is drawn uniformly from
     * [timeout_min_ms, timeout_ms] and passed in its momento_request_options;
     * timeout_ms (the upper end) is also the client's default deadline. */
    int timeout_min_ms;
    int timeout_ms;
    double stats_interval_s;
    int keys;               /* 0 = a fresh key per step */
    bool zipf;
    bool open_loop;
    int threads;
    const char *json_path;
    const char *plot_path;  /* --plot: latency by percentile, SVG */
    bool plot_log;          /* --plot-log: a log-scale latency axis */
    const char *samples_path; /* --samples (load-gen): every latency recorded */
    /* --merge FILE...: no load; the runs in these load-gen JSON files are
     * combined into one report (load-gen only). */
    char **merge_files;
    int n_merge;
    bool quiet;
    /* --batch [N[:L[:M[:B]]]]: adaptive batching (momento_config_set_batching:
     * min_in_flight, linger_us, max_keys, max_bytes); off unless `batch`. */
    bool batch;
    uint32_t batch_min_in_flight, batch_linger_us, batch_max_keys, batch_max_bytes;
    uint32_t batch_max_wait_us; /* W: momento_config_set_batching_max_wait() */
    /* --io-callbacks: momento_config_set_io_thread_callbacks() (callbacks
     * of protosocket's requests on its I/O thread). */
    bool io_callbacks;
    /* --dispatch: the client in dispatch mode, each thread's callbacks run
     * by that thread's own loop (momento_config_set_dispatch()); over
     * protosocket with no I/O thread (momento_config_set_dispatch_io()). */
    bool dispatch;
    /* --near-cache-bytes N --near-cache-staleness-ms M
     * (momento_config_set_near_cache()); 0 bytes = off. */
    int near_bytes, near_staleness_ms;
    /* --get-ratio R (0.5 to 0.999): the share of a worker's requests that
     * are gets. 0.5 is set-then-get of one key; above it a worker follows
     * each set and its get with gets of keys chosen as sets choose them,
     * until its gets reach R of its requests. */
    double get_ratio;
} lg_options;

/* Process-wide tuning for a load tool: one glibc malloc arena (unless the
 * environment sets MALLOC_ARENA_MAX). Call first thing in main(). */
void lg_tune_process(void);

/* Parses argv. Returns 0 to run, 1 when --help was printed, 2 after printing
 * a message about a bad option. `coalescing` selects that example's
 * defaults (10 keys) and leaves out load-gen's --merge and --samples. */
int lg_parse_options(int argc, char **argv, bool coalescing, lg_options *o);

typedef enum {
    LG_ERR_UNAVAILABLE,
    LG_ERR_DEADLINE,
    LG_ERR_RESOURCE_EXHAUSTED,
    LG_ERR_RST_STREAM, /* RST_STREAM / INTERNAL, as the seed groups them */
    LG_ERR_CANCELLED,
    LG_ERR_OTHER,
    LG_ERR_COUNT
} lg_error_kind;

typedef struct lg_stats {
    uint64_t requests;  /* accepted and called back */
    uint64_t success;
    uint64_t refused;   /* refused at submit (no callback): the worker stops */
    int first_refusal;  /* the momento_error of the first refusal, or 0 */
    uint64_t errors[LG_ERR_COUNT];
    histogram set;
    histogram get;
    /* Deadlines. timed_out: callbacks with MOMENTO_ERR_TIMEOUT (the same
     * requests as errors[LG_ERR_DEADLINE]). timed_out_early: those that came
     * before the request's own deadline had elapsed since its submission
     * (monotonic clock, no slack); early_max_us: the earliest of them, in us
     * before its deadline. late: for the others, callback time minus
     * deadline, in us. */
    uint64_t timed_out;
    uint64_t timed_out_early;
    uint64_t early_max_us;
    histogram late;
    /* Results checked: every value set is the key's own (the key, then
     * 'x's), so a get must find its key's value. get_hits: gets that did;
     * get_misses: gets that found nothing (eviction, TTL, another client's
     * delete; none expected against a fresh local server); wrong_results:
     * successful callbacks with the wrong outcome or a value that is not the
     * key's (another key's, or the wrong length) - a bug, expect 0. */
    uint64_t get_hits;
    uint64_t get_misses;
    uint64_t wrong_results;
} lg_stats;

void lg_stats_init(lg_stats *s);
void lg_stats_merge(lg_stats *dst, const lg_stats *src);

/* Where requests go (target.h): --endpoint, MOMENTO_API_KEY, or a local
 * server started in-process. */
typedef ex_target lg_target;

int lg_target_open(lg_target *t, const lg_options *o);
void lg_target_close(lg_target *t);

/* One measured run (a phase, for request-coalescing). */
typedef struct lg_result {
    lg_stats stats;
    double wall_s;
    double cpu_s;
    long max_rss_kb;    /* the process's peak resident memory so far */
    bool coalesced;
    momento_coalescer_stats counters; /* summed over threads, when coalesced */
    bool have_server;
    uint64_t server_get_rpcs, server_set_rpcs;
    /* Appended with adaptive batching (--batch). */
    uint64_t server_get_batch_rpcs, server_set_batch_rpcs;
    /* RPCs the clients started for the load, counted on the client: the
     * requests that reached the client (less those a coalescer merged or the
     * near cache answered) and did not queue, plus the batches and the
     * queued requests sent alone.
     * First attempts only: retries and coalescer re-issues are not counted. */
    uint64_t rpcs;
    bool batching;
    momento_client_batching_stats batch_counters; /* summed over threads, when batching */
    bool near_cache;                              /* the run's clients had one */
    momento_near_cache_stats near_counters;       /* summed over threads, with a near cache */
    /* When the run started, Unix time in seconds (a merge's: the earliest
     * run's), so a merge can tell how far apart its runs were. */
    double started_at;
    int merged_runs;        /* 0 for a run; for a merge, how many runs */
    double start_spread_s;  /* a merge's: last run's start - first run's */
} lg_result;

/* Runs workers for o->duration_s on fresh clients (one per thread), through
 * a coalescer when `coalesce`; prints cumulative stats every interval unless
 * quiet, prefixed with `label`. Returns 0 or a negative momento_error. */
int lg_run(const lg_options *o, const lg_target *t, bool coalesce, const char *label,
           lg_result *out);

/* "deadline N ms", or "deadlines A to B ms" for a spread, into buf. */
const char *lg_describe_deadlines(const lg_options *o, char *buf, size_t len);

/* "" without --batch, else "; batching N:L:M:B" (min in flight, linger us,
 * max keys, max bytes), into buf. */
const char *lg_describe_batching(const lg_options *o, char *buf, size_t len);

/* Prints the summary of a run. */
void lg_print_summary(FILE *f, const char *label, const lg_result *r);
/* Prints adaptive batching's counters (two lines). */
void lg_print_batching(FILE *f, const momento_client_batching_stats *k);
/* Prints stats in the interval format. */
void lg_print_stats(FILE *f, const char *label, const lg_stats *s, double elapsed_s);

/* load-gen --merge: reads the runs in o->merge_files (each a load-gen
 * --json file) and combines them into `out` as if one run had made every
 * request (histograms added bucket by bucket, counters summed, throughput
 * over the span from the first run's start to the last one's end), with
 * `cfg` the combined configuration (workers, rates and threads summed; the
 * rest the first run's). Strings in `cfg` stay valid until lg_merge_free().
 * Returns 0, or 2 after printing why a file cannot be merged. */
int lg_merge(const lg_options *o, lg_options *cfg, lg_result *out);
void lg_merge_free(void);

/* Writes one run as a JSON object (no trailing newline). */
void lg_json_run(FILE *f, const lg_options *o, const lg_result *r, int indent);
void lg_json_config(FILE *f, const lg_options *o, int indent);

#endif
