/* Closed-loop driver for the near cache's benchmarks (bench/near_cache.sh,
 * issue 50): coalesce_bench's workers, with a near cache when asked, gets
 * of hot keys that exist (set once before the clock starts), the latency
 * of each get when asked, peak RSS, and the near cache's counters. Prints
 * one line of key=value results.
 *
 *   near_bench --endpoint HOST:PORT [--mode plain|coalesce]
 *              [--near-cache-bytes N (0 = none)] [--near-cache-staleness-ms M]
 *              [--workers 1000] [--keys 10 (0 = a fresh key each time)]
 *              [--op get|set|both] [--seconds 10] [--ops N] [--payload 100]
 *              [--latency] [--sync] [--delay-ms D]
 *
 * --op get with --keys N sets the N keys first, so every get is a HIT;
 * with --keys 0 every get is of a key never written (a MISS), which leaves
 * a near cache nothing to reuse. --sync: one worker, the program's own
 * thread calling momento_get_sync() (or the coalescer's) in a loop, so
 * every get crosses to the completion thread and back, as an application
 * thread's would; without it the next request is submitted from the
 * callback, on the completion thread. --latency: each get's time from just
 * before its call to its callback (or return), p50 and p99 in ns.
 *
 * Loopback only: the endpoint must be 127.0.0.1, localhost or [::1]. */
#include "momento/coalescer.h"
#include "momento/momento.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Enough for p50 and p99 of any run here; later gets are not sampled. */
#define MAX_SAMPLES (4u << 20)

typedef struct bench {
    int op_mode; /* 0 set-then-get, 1 get only, 2 set only */
    momento_client *client;
    momento_coalescer *co; /* NULL = plain client */
    int keys;
    char *payload;
    size_t payload_len;
    bool latency;
    uint32_t *samples; /* ns, with --latency */
    atomic_uint n_samples;
    atomic_bool stop;
    uint64_t max_ops;
    atomic_uint_fast64_t ops, errors, misses;
    atomic_int active;
    pthread_mutex_t lock;
    pthread_cond_t done;
} bench;

typedef struct worker {
    bench *b;
    int id;
    int phase; /* 0: a set is in flight, 1: a get is */
    uint64_t n;
    int64_t start_ns;
    char key[48];
    size_t key_len;
} worker;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void choose_key(worker *w)
{
    bench *b = w->b;
    if (b->keys > 0)
        w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "hot-%d",
                                      (int)((w->id + w->n) % (uint64_t)b->keys));
    else
        w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "u-%d-%llu", w->id,
                                      (unsigned long long)w->n);
}

static void step(const momento_result *r, void *ud);

static int submit(worker *w)
{
    bench *b = w->b;
    if (b->op_mode == 1)
        w->phase = 1;
    else if (b->op_mode == 2)
        w->phase = 0;
    if (w->phase == 0 || b->op_mode == 1)
        choose_key(w);
    if (w->phase == 0)
        return b->co ? momento_coalescing_set(b->co, "bench", w->key, w->key_len, b->payload,
                                              b->payload_len, 60000, NULL, step, w)
                     : momento_set(b->client, "bench", w->key, w->key_len, b->payload,
                                   b->payload_len, 60000, NULL, step, w);
    if (b->latency)
        w->start_ns = now_ns();
    return b->co ? momento_coalescing_get(b->co, "bench", w->key, w->key_len, NULL, step, w)
                 : momento_get(b->client, "bench", w->key, w->key_len, NULL, step, w);
}

static void sample(bench *b, int64_t ns)
{
    unsigned i = atomic_fetch_add_explicit(&b->n_samples, 1, memory_order_relaxed);
    if (i < MAX_SAMPLES)
        b->samples[i] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static void retire(bench *b)
{
    if (atomic_fetch_sub(&b->active, 1) == 1) {
        pthread_mutex_lock(&b->lock);
        pthread_cond_signal(&b->done);
        pthread_mutex_unlock(&b->lock);
    }
}

/* Counts a result: errors, and the misses of gets that should hit. */
static void count(bench *b, const momento_result *r, int phase)
{
    if (momento_result_error(r) != MOMENTO_OK)
        atomic_fetch_add(&b->errors, 1);
    else if (phase == 1 && momento_result_outcome(r) == MOMENTO_OUTCOME_MISS)
        atomic_fetch_add(&b->misses, 1);
}

static void step(const momento_result *r, void *ud)
{
    worker *w = ud;
    bench *b = w->b;
    if (b->latency && w->phase == 1)
        sample(b, now_ns() - w->start_ns);
    count(b, r, w->phase);
    uint64_t done = atomic_fetch_add(&b->ops, 1) + 1;
    if (atomic_load(&b->stop) || (b->max_ops && done >= b->max_ops)) {
        atomic_store(&b->stop, true);
        retire(b);
        return;
    }
    if (w->phase == 1 || b->op_mode != 0)
        w->n++;
    w->phase ^= 1;
    if (submit(w) != MOMENTO_OK)
        retire(b);
}

/* --sync: gets from this thread, one at a time, until the bound. */
static void run_sync(bench *b, double seconds)
{
    worker w = {.b = b, .phase = 1};
    int64_t end = now_ns() + (int64_t)(seconds * 1e9);
    while (!(b->max_ops && atomic_load(&b->ops) >= b->max_ops) && now_ns() < end) {
        choose_key(&w);
        momento_result *r = NULL;
        int64_t t0 = now_ns();
        int rc = b->co ? momento_coalescing_get_sync(b->co, "bench", w.key, w.key_len, NULL, &r)
                       : momento_get_sync(b->client, "bench", w.key, w.key_len, NULL, &r);
        if (b->latency)
            sample(b, now_ns() - t0);
        if (rc != MOMENTO_OK && !r) {
            atomic_fetch_add(&b->errors, 1);
            break;
        }
        count(b, r, 1);
        momento_result_free(r);
        atomic_fetch_add(&b->ops, 1);
        w.n++;
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The process's resident set now, in kB (/proc/self/statm). */
static long rss_kb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void usage(void)
{
    fprintf(stderr, "usage: near_bench --endpoint HOST:PORT [--mode plain|coalesce] "
                    "[--near-cache-bytes N] [--near-cache-staleness-ms M] [--workers N] "
                    "[--keys N] [--op both|get|set] [--seconds S<=600] [--ops N] "
                    "[--payload B] [--latency] [--sync] [--delay-ms D]\n");
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *mode = "plain", *op = "get";
    int workers = 1000, keys = 10, payload = 100, staleness_ms = 1000;
    long long near_bytes = 0;
    bool latency = false, sync = false;
    const char *delay_ms = NULL;
    double seconds = 10;
    uint64_t max_ops = 0;
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'},
        {"mode", required_argument, NULL, 'm'},
        {"near-cache-bytes", required_argument, NULL, 'N'},
        {"near-cache-staleness-ms", required_argument, NULL, 'W'},
        {"workers", required_argument, NULL, 'w'},
        {"keys", required_argument, NULL, 'k'},
        {"seconds", required_argument, NULL, 's'},
        {"ops", required_argument, NULL, 'o'},
        {"payload", required_argument, NULL, 'p'},
        {"op", required_argument, NULL, 'O'},
        {"latency", no_argument, NULL, 'l'},
        {"sync", no_argument, NULL, 'S'},
        {"delay-ms", required_argument, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': endpoint = optarg; break;
        case 'm': mode = optarg; break;
        case 'N': near_bytes = atoll(optarg); break;
        case 'W': staleness_ms = atoi(optarg); break;
        case 'w': workers = atoi(optarg); break;
        case 'k': keys = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'o': max_ops = strtoull(optarg, NULL, 10); break;
        case 'p': payload = atoi(optarg); break;
        case 'O': op = optarg; break;
        case 'l': latency = true; break;
        case 'S': sync = true; break;
        case 'D': delay_ms = optarg; break;
        default: usage(); return 2;
        }
    }
    if (!endpoint || workers < 1 || keys < 0 || payload < 0 || seconds <= 0 || seconds > 600 ||
        near_bytes < 0 || staleness_ms < 1 ||
        (strcmp(mode, "plain") != 0 && strcmp(mode, "coalesce") != 0) ||
        (strcmp(op, "both") && strcmp(op, "get") && strcmp(op, "set")) ||
        (sync && (workers != 1 || strcmp(op, "get") != 0))) {
        usage();
        return 2;
    }
    if (strncmp(endpoint, "127.", 4) != 0 && strncmp(endpoint, "localhost:", 10) != 0 &&
        strncmp(endpoint, "[::1]:", 6) != 0) {
        fprintf(stderr, "near_bench: loopback endpoints only\n");
        return 2;
    }

    bench b;
    memset(&b, 0, sizeof(b));
    b.keys = keys;
    b.op_mode = strcmp(op, "get") == 0 ? 1 : strcmp(op, "set") == 0 ? 2 : 0;
    b.max_ops = max_ops;
    b.latency = latency;
    b.samples = latency ? malloc(MAX_SAMPLES * sizeof(uint32_t)) : NULL;
    b.payload_len = (size_t)payload;
    b.payload = malloc(b.payload_len + 1);
    if ((latency && !b.samples) || !b.payload)
        return 1;
    memset(b.payload, 'x', b.payload_len);
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.done, NULL);

    momento_credentials *creds;
    momento_config *cfg;
    momento_config_new(&cfg);
    momento_config_set_timeout_ms(cfg, 15000);
    /* --delay-ms: momento-local holds every Get that long (its fault
     * headers, client-wide so that coalesced RPCs carry them too): a
     * server a round trip away instead of loopback's tens of
     * microseconds. */
    if (delay_ms && (momento_config_add_header(cfg, "delay-ms", delay_ms) != MOMENTO_OK ||
                     momento_config_add_header(cfg, "delay-rpcs", "get") != MOMENTO_OK)) {
        fprintf(stderr, "near_bench: bad --delay-ms\n");
        return 2;
    }
    if (near_bytes && momento_config_set_near_cache(cfg, (size_t)near_bytes,
                                                    (uint32_t)staleness_ms) != MOMENTO_OK) {
        fprintf(stderr, "near_bench: bad near cache settings\n");
        return 2;
    }
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK ||
        momento_client_new(&b.client, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "near_bench: cannot make a client for %s\n", endpoint);
        return 1;
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);
    momento_create_cache_sync(b.client, "bench", NULL, NULL);
    if (strcmp(mode, "coalesce") == 0)
        momento_coalescer_new(&b.co, b.client);
    /* Gets of hot keys hit: the keys exist before the clock starts (and a
     * near cache keeps what these sets wrote, as it would an
     * application's). */
    for (int k = 0; b.op_mode == 1 && k < keys; k++) {
        char key[48];
        int len = snprintf(key, sizeof(key), "hot-%d", k);
        momento_result *r = NULL;
        if (momento_set_sync(b.client, "bench", key, (size_t)len, b.payload, b.payload_len,
                             600000, NULL, &r) != MOMENTO_OK) {
            fprintf(stderr, "near_bench: the prefill failed: %s\n",
                    r ? momento_result_message(r) : "");
            return 1;
        }
        momento_result_free(r);
    }
    long rss_before_kb = rss_kb();

    worker *ws = calloc((size_t)workers, sizeof(*ws));
    int64_t t0 = now_ns();
    double c0 = cpu_s();
    if (sync) {
        run_sync(&b, seconds);
    } else {
        atomic_store(&b.active, workers);
        for (int i = 0; i < workers; i++) {
            ws[i] = (worker){.b = &b, .id = i, .phase = b.op_mode == 1 ? 1 : 0};
            if (submit(&ws[i]) != MOMENTO_OK)
                retire(&b);
        }
        /* Bounded in time whatever happens: the duration, then the stop flag. */
        while (!atomic_load(&b.stop) && (double)(now_ns() - t0) / 1e9 < seconds)
            usleep(10000);
        atomic_store(&b.stop, true);
        pthread_mutex_lock(&b.lock);
        while (atomic_load(&b.active) > 0)
            pthread_cond_wait(&b.done, &b.lock);
        pthread_mutex_unlock(&b.lock);
    }
    double wall = (double)(now_ns() - t0) / 1e9, cpu = cpu_s() - c0;
    long rss_after_kb = rss_kb();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    uint64_t ops = atomic_load(&b.ops);
    printf("RESULT near_bench mode=%s near_bytes=%lld workers=%d keys=%d op=%s sync=%d ops=%llu "
           "errors=%llu misses=%llu wall_s=%.3f ops_per_s=%.0f client_cpu_s=%.4f "
           "cpu_us_per_op=%.4f max_rss_kb=%ld rss_before_kb=%ld rss_after_kb=%ld",
           mode, near_bytes, workers, keys, op, sync, (unsigned long long)ops,
           (unsigned long long)atomic_load(&b.errors), (unsigned long long)atomic_load(&b.misses),
           wall, (double)ops / wall, cpu, ops ? cpu * 1e6 / (double)ops : 0.0, ru.ru_maxrss,
           rss_before_kb, rss_after_kb);
    if (latency) {
        unsigned n = atomic_load(&b.n_samples);
        if (n > MAX_SAMPLES)
            n = MAX_SAMPLES;
        qsort(b.samples, n, sizeof(uint32_t), cmp_u32);
        printf(" samples=%u p50_ns=%u p99_ns=%u", n, n ? b.samples[n / 2] : 0,
               n ? b.samples[(size_t)n * 99 / 100] : 0);
    }
    if (near_bytes) {
        momento_near_cache_stats s;
        momento_client_near_cache_stats_get(b.client, &s, sizeof(s));
        printf(" near_hits=%llu near_miss_hits=%llu near_misses=%llu near_fills=%llu "
               "near_stale=%llu near_evictions=%llu near_entries=%llu near_cache_bytes=%llu",
               (unsigned long long)s.hits, (unsigned long long)s.miss_hits,
               (unsigned long long)s.misses, (unsigned long long)s.fills,
               (unsigned long long)s.stale, (unsigned long long)s.evictions,
               (unsigned long long)s.entries, (unsigned long long)s.bytes);
    }
    printf("\n");
    momento_coalescer_free(b.co);
    momento_client_free(b.client);
    free(ws);
    free(b.samples);
    free(b.payload);
    return atomic_load(&b.errors) ? 1 : 0;
}
