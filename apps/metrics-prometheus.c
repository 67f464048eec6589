/* metrics-prometheus: request metrics from the library's hook, in the
 * Prometheus text format.
 *
 * The program registers a metrics hook (momento/metrics.h) on its client's
 * configuration, runs a bounded load (--requests in all, stopped early at
 * --seconds) of gets and sets over --keys keys with --concurrency requests
 * in flight, plus a get on a cache that does not exist every --error-every
 * requests, and prints, on stdout and in the Prometheus text exposition
 * format (version 0.0.4):
 *  - momento_requests_total{method,status}: a counter per method and
 *    result (status is momento_error_name(): "OK", "NOT_FOUND_ERROR", ...);
 *  - momento_request_attempts_total{method}: attempts on the wire, so
 *    attempts - requests = retries;
 *  - momento_request_bytes_total{method,direction}: protobuf bytes sent
 *    and received;
 *  - momento_request_duration_seconds{method}: a latency histogram with
 *    cumulative `le` buckets, _sum and _count.
 * Everything printed comes from the hook alone: the callbacks only keep the
 * load going. A program serving /metrics would print the same text from
 * its HTTP handler (under the same lock).
 *
 * The hook runs on the client's completion thread, just before each
 * request's callback: it must not block, so it only adds to counters. It
 * takes a mutex because another thread (here: main, at the end; in a
 * server: the scrape handler) reads them.
 *
 * Human-readable notes go to stderr, so stdout is only the exposition.
 * Where the requests go is shared with the other examples
 * (common/target.h). Run with --help for the options. */
#include "common/target.h"
#include "momento/metrics.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const prog = "metrics-prometheus";

typedef struct options {
    ex_target_options target; /* --endpoint, --insecure, --tls-roots */
    const char *cache;
    int requests;
    int seconds;
    int concurrency;
    int keys;
    int error_every;
} options;

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "A bounded load of gets and sets whose per-request metrics, taken from the\n"
           "library's metrics hook, are printed in the Prometheus text format: request\n"
           "counters by method and status, attempts, bytes, a latency histogram.\n\n"
           EX_TARGET_HELP "\n"
           "Load:\n"
           "  --cache NAME           cache to use, created if missing\n"
           "                         (default metrics-prometheus)\n"
           "  --requests N           requests in all, 1 to 10000000 (default 2000)\n"
           "  --seconds S            stop submitting after S seconds, 1 to 3600 (default 10)\n"
           "  --concurrency N        requests in flight, 1 to 1000 (default 16)\n"
           "  --keys N               distinct keys, 1 to 1000000 (default 100); gets of keys\n"
           "                         not yet set are misses\n"
           "  --error-every N        every Nth request is a get on a cache that does not\n"
           "                         exist, 0 (never) to 1000000 (default 50)\n"
           "  --help                 this text\n",
           prog);
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        EX_TARGET_LONGOPTS,
        {"cache", required_argument, NULL, 'C'},
        {"requests", required_argument, NULL, 'n'},
        {"seconds", required_argument, NULL, 's'},
        {"concurrency", required_argument, NULL, 'c'},
        {"keys", required_argument, NULL, 'k'},
        {"error-every", required_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->cache = "metrics-prometheus";
    o->requests = 2000;
    o->seconds = 10;
    o->concurrency = 16;
    o->keys = 100;
    o->error_every = 50;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case EX_OPT_ENDPOINT:
        case EX_OPT_INSECURE:
        case EX_OPT_TLS_ROOTS:
        case EX_OPT_TRANSPORT:
        case EX_OPT_PS_ENDPOINT:
            if (ex_target_option(prog, ch, optarg, &o->target))
                return 2;
            break;
        case 'C':
            if (ex_cache_option(prog, optarg, &o->cache))
                return 2;
            break;
        case 'n':
            if (!ex_parse_int(optarg, 1, 10000000, &o->requests))
                return ex_bad_option(prog, "--requests", optarg, "must be 1 to 10000000");
            break;
        case 's':
            if (!ex_parse_int(optarg, 1, 3600, &o->seconds))
                return ex_bad_option(prog, "--seconds", optarg, "must be 1 to 3600");
            break;
        case 'c':
            if (!ex_parse_int(optarg, 1, 1000, &o->concurrency))
                return ex_bad_option(prog, "--concurrency", optarg, "must be 1 to 1000");
            break;
        case 'k':
            if (!ex_parse_int(optarg, 1, 1000000, &o->keys))
                return ex_bad_option(prog, "--keys", optarg, "must be 1 to 1000000");
            break;
        case 'E':
            if (!ex_parse_int(optarg, 0, 1000000, &o->error_every))
                return ex_bad_option(prog, "--error-every", optarg, "must be 0 to 1000000");
            break;
        case 'h': usage(); return 1;
        default: return 2;
        }
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind], "no positional arguments are taken");
    return ex_check_target(prog, &o->target);
}

/* ------------------------------------------------------------ the metrics */

/* Prometheus's histogram buckets, in seconds, chosen for a cache: from
 * 100 us (a local server) to 2.5 s (a timeout); +Inf is implied. */
static const double bucket_le[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                   0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
#define N_BUCKETS (sizeof(bucket_le) / sizeof(bucket_le[0]))
#define MAX_METHODS 32
#define MAX_STATUSES 16

typedef struct status_count {
    const char *status; /* momento_error_name(): static */
    uint64_t count;
} status_count;

typedef struct method_metrics {
    const char *method; /* the hook's: static */
    status_count statuses[MAX_STATUSES];
    size_t n_statuses;
    uint64_t attempts;
    uint64_t bytes_sent, bytes_received;
    uint64_t buckets[N_BUCKETS]; /* per bucket, not yet cumulative */
    uint64_t count;              /* = the +Inf bucket */
    double sum_seconds;
} method_metrics;

typedef struct metrics {
    pthread_mutex_t lock;
    method_metrics methods[MAX_METHODS];
    size_t n_methods;
    uint64_t requests;    /* hook calls; checked against the callbacks */
    uint64_t unrecorded;  /* past MAX_METHODS or MAX_STATUSES (none expected) */
} metrics;

static method_metrics *method_of(metrics *mx, const char *method)
{
    for (size_t i = 0; i < mx->n_methods; i++)
        if (strcmp(mx->methods[i].method, method) == 0)
            return &mx->methods[i];
    if (mx->n_methods == MAX_METHODS)
        return NULL;
    method_metrics *mm = &mx->methods[mx->n_methods++];
    mm->method = method;
    return mm;
}

/* The hook: on the completion thread, before each request's callback.
 * Only counting here, nothing that blocks. */
static void on_request(const momento_request_metrics *m, void *userdata)
{
    metrics *mx = userdata;
    const char *status = momento_error_name(m->error);
    double seconds = (double)m->latency_ns / 1e9;
    pthread_mutex_lock(&mx->lock);
    mx->requests++;
    method_metrics *mm = method_of(mx, m->method);
    status_count *sc = NULL;
    if (mm) {
        for (size_t i = 0; i < mm->n_statuses && !sc; i++)
            if (strcmp(mm->statuses[i].status, status) == 0)
                sc = &mm->statuses[i];
        if (!sc && mm->n_statuses < MAX_STATUSES) {
            sc = &mm->statuses[mm->n_statuses++];
            sc->status = status;
        }
    }
    if (!sc) {
        mx->unrecorded++;
    } else {
        sc->count++;
        mm->attempts += m->attempts;
        mm->bytes_sent += m->request_bytes;
        mm->bytes_received += m->response_bytes;
        size_t b = 0;
        while (b < N_BUCKETS && seconds > bucket_le[b])
            b++;
        if (b < N_BUCKETS)
            mm->buckets[b]++;
        mm->count++;
        mm->sum_seconds += seconds;
    }
    pthread_mutex_unlock(&mx->lock);
}

/* Prometheus's float format: shortest round-tripping is not needed here;
 * %g keeps the bucket bounds as written ("0.00025", "1", "2.5"). */
static void print_exposition(metrics *mx, FILE *out)
{
    pthread_mutex_lock(&mx->lock);
    fprintf(out, "# HELP momento_requests_total Requests completed, by method and status.\n"
                 "# TYPE momento_requests_total counter\n");
    for (size_t i = 0; i < mx->n_methods; i++) {
        const method_metrics *mm = &mx->methods[i];
        for (size_t s = 0; s < mm->n_statuses; s++)
            fprintf(out, "momento_requests_total{method=\"%s\",status=\"%s\"} %llu\n", mm->method,
                    mm->statuses[s].status, (unsigned long long)mm->statuses[s].count);
    }
    fprintf(out, "# HELP momento_request_attempts_total Attempts on the wire, retries included.\n"
                 "# TYPE momento_request_attempts_total counter\n");
    for (size_t i = 0; i < mx->n_methods; i++)
        fprintf(out, "momento_request_attempts_total{method=\"%s\"} %llu\n", mx->methods[i].method,
                (unsigned long long)mx->methods[i].attempts);
    fprintf(out, "# HELP momento_request_bytes_total Protobuf bytes of requests and replies.\n"
                 "# TYPE momento_request_bytes_total counter\n");
    for (size_t i = 0; i < mx->n_methods; i++) {
        const method_metrics *mm = &mx->methods[i];
        fprintf(out, "momento_request_bytes_total{method=\"%s\",direction=\"sent\"} %llu\n",
                mm->method, (unsigned long long)mm->bytes_sent);
        fprintf(out, "momento_request_bytes_total{method=\"%s\",direction=\"received\"} %llu\n",
                mm->method, (unsigned long long)mm->bytes_received);
    }
    fprintf(out, "# HELP momento_request_duration_seconds Latency from submission to callback.\n"
                 "# TYPE momento_request_duration_seconds histogram\n");
    for (size_t i = 0; i < mx->n_methods; i++) {
        const method_metrics *mm = &mx->methods[i];
        uint64_t cumulative = 0;
        for (size_t b = 0; b < N_BUCKETS; b++) {
            cumulative += mm->buckets[b];
            fprintf(out, "momento_request_duration_seconds_bucket{method=\"%s\",le=\"%g\"} %llu\n",
                    mm->method, bucket_le[b], (unsigned long long)cumulative);
        }
        fprintf(out, "momento_request_duration_seconds_bucket{method=\"%s\",le=\"+Inf\"} %llu\n",
                mm->method, (unsigned long long)mm->count);
        fprintf(out, "momento_request_duration_seconds_sum{method=\"%s\"} %.9f\n", mm->method,
                mm->sum_seconds);
        fprintf(out, "momento_request_duration_seconds_count{method=\"%s\"} %llu\n", mm->method,
                (unsigned long long)mm->count);
    }
    pthread_mutex_unlock(&mx->lock);
}

/* ------------------------------------------------------------ the load */

typedef struct load {
    momento_client *client;
    const options *o;
    metrics *mx;
    int64_t stop_ns;         /* no submission after this */
    pthread_mutex_t lock;
    pthread_cond_t done;
    int submitted;
    int in_flight;
    uint64_t callbacks;
    uint64_t hooked_before;  /* callbacks whose hook count already included them */
    int refused;             /* submits that returned an error (no callback, no hook) */
} load;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_done(const momento_result *r, void *userdata);

/* Submits request number `i` (a get, a set every fourth, or a get on a
 * missing cache every error_every-th). Returns 0 or the submit's error. */
static int submit(load *ld, int i)
{
    char key[32];
    int k = (int)(((unsigned)i * 2654435761u) % (unsigned)ld->o->keys);
    snprintf(key, sizeof(key), "key-%d", k);
    if (ld->o->error_every && i % ld->o->error_every == ld->o->error_every - 1)
        return momento_get(ld->client, "metrics-prometheus-no-such-cache", key, strlen(key), NULL,
                           on_done, ld);
    if (i % 4 == 0)
        return momento_set(ld->client, ld->o->cache, key, strlen(key), "some value", 10, 0, NULL,
                           on_done, ld);
    return momento_get(ld->client, ld->o->cache, key, strlen(key), NULL, on_done, ld);
}

/* Takes the next request number, or -1 when the load is over. With the
 * load's lock held. */
static int next_locked(load *ld)
{
    if (ld->submitted >= ld->o->requests || now_ns() >= ld->stop_ns)
        return -1;
    ld->in_flight++;
    return ld->submitted++;
}

/* Each callback starts the next request, keeping --concurrency in flight
 * (an async submit from a callback is allowed; it does not block). */
static void on_done(const momento_result *r, void *userdata)
{
    (void)r;
    load *ld = userdata;
    /* The hook ran just before this callback, on this thread: its count
     * already includes this request, and no later one. */
    pthread_mutex_lock(&ld->mx->lock);
    uint64_t hooked = ld->mx->requests;
    pthread_mutex_unlock(&ld->mx->lock);
    pthread_mutex_lock(&ld->lock);
    ld->callbacks++;
    if (hooked == ld->callbacks + 1) /* + the CreateCache before the load */
        ld->hooked_before++;
    ld->in_flight--;
    int i = next_locked(ld);
    pthread_mutex_unlock(&ld->lock);
    while (i >= 0 && submit(ld, i) != MOMENTO_OK) {
        pthread_mutex_lock(&ld->lock);
        ld->refused++;
        ld->in_flight--;
        i = next_locked(ld);
        pthread_mutex_unlock(&ld->lock);
    }
    pthread_mutex_lock(&ld->lock);
    if (ld->in_flight == 0)
        pthread_cond_broadcast(&ld->done);
    pthread_mutex_unlock(&ld->lock);
}

static void run_load(load *ld)
{
    pthread_mutex_lock(&ld->lock);
    for (int c = 0; c < ld->o->concurrency; c++) {
        int i = next_locked(ld);
        if (i < 0)
            break;
        pthread_mutex_unlock(&ld->lock);
        int rc = submit(ld, i);
        pthread_mutex_lock(&ld->lock);
        if (rc != MOMENTO_OK) {
            ld->refused++;
            ld->in_flight--;
        }
    }
    while (ld->in_flight > 0)
        pthread_cond_wait(&ld->done, &ld->lock);
    pthread_mutex_unlock(&ld->lock);
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;

    ex_target target;
    if (ex_target_open(&target, prog, &o.target) != MOMENTO_OK)
        return 1;
    fprintf(stderr, "%s: %s\n", prog, target.description);

    static metrics mx; /* large: off the stack */
    pthread_mutex_init(&mx.lock, NULL);
    momento_config *cfg = NULL;
    momento_client *client = NULL;
    rc = ex_target_config_new(&target, &cfg);
    if (rc == MOMENTO_OK)
        rc = momento_config_set_metrics(cfg, on_request, &mx);
    if (rc == MOMENTO_OK)
        rc = momento_client_new(&client, cfg, target.creds);
    momento_config_free(cfg);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "%s: creating the client failed: %s\n", prog, momento_error_name(rc));
        ex_target_close(&target);
        return 1;
    }

    /* The setup call is a request like the others: it shows in the
     * metrics as CreateCache. */
    momento_result *r = NULL;
    rc = momento_create_cache_sync(client, o.cache, NULL, &r);
    momento_result_free(r);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "%s: create cache '%s' failed: %s\n", prog, o.cache,
                momento_error_name(rc));
        momento_client_free(client);
        ex_target_close(&target);
        return 1;
    }

    load ld;
    memset(&ld, 0, sizeof(ld));
    ld.client = client;
    ld.o = &o;
    ld.mx = &mx;
    ld.stop_ns = now_ns() + (int64_t)o.seconds * 1000000000;
    pthread_mutex_init(&ld.lock, NULL);
    pthread_cond_init(&ld.done, NULL);
    int64_t started = now_ns();
    run_load(&ld);
    double took = (double)(now_ns() - started) / 1e9;

    /* After momento_client_free() returns no hook runs: the counters are
     * final. */
    momento_client_free(client);
    ex_target_close(&target);

    print_exposition(&mx, stdout);
    fflush(stdout);

    /* The hook's count is exact: every callback found its own request
     * counted (plus the one CreateCache, which had no callback here). */
    bool exact = ld.hooked_before == ld.callbacks && mx.requests == ld.callbacks + 1 &&
                 mx.unrecorded == 0;
    fprintf(stderr,
            "%s: %d requests in %.2f s (%d refused at submit); %llu hook calls, %llu callbacks: "
            "%s\n",
            prog, ld.submitted, took, ld.refused, (unsigned long long)mx.requests,
            (unsigned long long)ld.callbacks,
            exact ? "each counted before its callback" : "COUNTS DISAGREE");
    pthread_cond_destroy(&ld.done);
    pthread_mutex_destroy(&ld.lock);
    pthread_mutex_destroy(&mx.lock);
    return exact ? 0 : 1;
}
