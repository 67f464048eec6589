/* Adaptive batching against a server that takes time to answer (issue 15):
 * what batching does to latency when the server is not the bottleneck, as
 * against a remote service. momento-local holds every Get, Set, GetBatch
 * and SetBatch for --delay-ms (its delay-ms fault header; parked calls wait
 * in parallel on its timer heap, so the delay acts like a round trip), and
 * --in-flight closed-loop workers each set a fresh key to a 100-byte value
 * and get it back, for --seconds. With --rate R the load is open loop
 * instead: requests arrive at random (Poisson, R per second on average),
 * alternately a set of a fresh key and a get of the key set just before,
 * and latency counts from each arrival. Closed-loop workers fall into step
 * with the batches, which hides what queueing costs; arrivals at random
 * show it.
 *
 *   batching_rtt --endpoint HOST:PORT [--in-flight 10 | --rate R] [--seconds 5]
 *                [--delay-ms 2] [--batch N[:L[:M[:B]]]] [--payload 100]
 *
 * Without --batch batching is off. Prints one line:
 *   RESULT ops= ops_per_s= cpu_us_per_op= p50_us= p99_us= batches= keys_per_batch= wrong=
 *          failed= misses=
 * (latency of sets and gets together; CPU is the whole process's; misses:
 * open-loop gets that came before their set had landed). Exits 1 when a
 * request failed or a get returned a value not its key's.
 *
 * The delay headers can only be sent with the test-only
 * momento__client_add_header(), so this links the static library, as
 * bench/lateness does. Loopback endpoints only; the run ends --seconds
 * after it starts, plus at most 30 s for the requests in flight. */
#include "engine/client.h"
#include "histogram.h"
#include "momento/momento.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE "load-gen"

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

typedef struct run run;

typedef struct worker {
    run *rn;
    int id;
    bool get;          /* the current request is the get */
    uint64_t n;
    int64_t start_ns;
    char key[48];
    size_t key_len;
} worker;

struct run {
    momento_client *client;
    size_t payload;
    int64_t end_ns;
    pthread_mutex_t lock; /* guards what follows */
    pthread_cond_t idle;
    int active;
    uint64_t ops, failed, wrong, misses;
    histogram latency;
};

/* One open-loop request (--rate): freed by its callback. */
typedef struct arrival {
    run *rn;
    bool get;
    int64_t start_ns;
    size_t key_len;
    char key[48];
} arrival;

static void on_done(const momento_result *r, void *ud);

/* The value of a key: the key, then 'x's (checked by check() below). */
static void fill(const char *key, size_t key_len, char *buf, size_t len)
{
    memset(buf, 'x', len);
    memcpy(buf, key, key_len < len ? key_len : len);
}

/* Records one callback: `get` of `key`, submitted at start_ns. */
static bool check(run *rn, const momento_result *r, bool get, const char *key, size_t key_len,
                  int64_t start_ns)
{
    int64_t t = now_ns();
    bool ok = momento_result_error(r) == MOMENTO_OK;
    bool right = true, miss = false;
    if (ok && get) {
        size_t len;
        const char *v = momento_result_value(r, &len);
        char want[4096];
        fill(key, key_len, want, rn->payload);
        miss = momento_result_outcome(r) == MOMENTO_OUTCOME_MISS;
        right = miss || (momento_result_is_hit(r) && len == rn->payload &&
                         memcmp(v, want, len) == 0);
    } else if (ok) {
        right = momento_result_outcome(r) == MOMENTO_OUTCOME_SUCCESS;
    }
    pthread_mutex_lock(&rn->lock);
    rn->ops++;
    if (!ok)
        rn->failed++;
    else if (!right)
        rn->wrong++;
    else
        hist_record(&rn->latency, (uint64_t)(t - start_ns) / 1000);
    if (miss)
        rn->misses++;
    pthread_mutex_unlock(&rn->lock);
    if (!ok) {
        static atomic_bool told;
        if (!atomic_exchange(&told, true))
            fprintf(stderr, "batching_rtt: %s: %s\n", momento_error_name(momento_result_error(r)),
                    momento_result_message(r));
    }
    return t < rn->end_ns;
}

static bool start(worker *w)
{
    run *rn = w->rn;
    if (!w->get)
        w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "rtt-%d-%llu", w->id,
                                      (unsigned long long)w->n);
    w->start_ns = now_ns();
    int rc;
    if (w->get) {
        rc = momento_get(rn->client, CACHE, w->key, w->key_len, NULL, on_done, w);
    } else {
        char value[4096];
        fill(w->key, w->key_len, value, rn->payload);
        rc = momento_set(rn->client, CACHE, w->key, w->key_len, value, rn->payload, 0, NULL,
                         on_done, w);
    }
    if (rc != MOMENTO_OK)
        fprintf(stderr, "batching_rtt: refused: %s\n", momento_strerror(rc));
    return rc == MOMENTO_OK;
}

static void retire(run *rn)
{
    pthread_mutex_lock(&rn->lock);
    if (--rn->active == 0)
        pthread_cond_signal(&rn->idle);
    pthread_mutex_unlock(&rn->lock);
}

static void on_done(const momento_result *r, void *ud)
{
    worker *w = ud;
    run *rn = w->rn;
    bool more = check(rn, r, w->get, w->key, w->key_len, w->start_ns);
    if (w->get)
        w->n++;
    w->get = !w->get;
    if (!more || !start(w))
        retire(rn);
}

static void on_arrival_done(const momento_result *r, void *ud)
{
    arrival *a = ud;
    run *rn = a->rn;
    check(rn, r, a->get, a->key, a->key_len, a->start_ns);
    free(a);
    retire(rn);
}

static void sleep_until(int64_t t_ns)
{
    struct timespec ts = {(time_t)(t_ns / 1000000000), (long)(t_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

/* Open loop: arrivals at `rate` per second on average until the end. */
static void open_loop(run *rn, double rate)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    int64_t at = now_ns();
    for (uint64_t i = 0; at < rn->end_ns; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        double u = ((double)(rng >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
        at += (int64_t)(-log(u) / rate * 1e9);
        sleep_until(at);
        arrival *a = malloc(sizeof(*a));
        if (!a)
            break;
        a->rn = rn;
        a->get = i % 2 == 1; /* a get of the key the set before it wrote */
        a->key_len = (size_t)snprintf(a->key, sizeof(a->key), "rtt-o-%llu",
                                      (unsigned long long)(i / 2));
        pthread_mutex_lock(&rn->lock);
        rn->active++;
        pthread_mutex_unlock(&rn->lock);
        a->start_ns = at; /* latency from the arrival, even if we submit late */
        int rc;
        if (a->get) {
            rc = momento_get(rn->client, CACHE, a->key, a->key_len, NULL, on_arrival_done, a);
        } else {
            char value[4096];
            fill(a->key, a->key_len, value, rn->payload);
            rc = momento_set(rn->client, CACHE, a->key, a->key_len, value, rn->payload, 0, NULL,
                             on_arrival_done, a);
        }
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "batching_rtt: refused: %s\n", momento_strerror(rc));
            free(a);
            retire(rn);
            break;
        }
    }
}

/* "N[:L[:M[:B]]]" over the library's defaults. */
static bool parse_batch(const char *s, uint32_t f[4])
{
    for (int i = 0; i < 4; i++) {
        char *end;
        if (*s < '0' || *s > '9')
            return false;
        unsigned long v = strtoul(s, &end, 10);
        if (v > 100000000ul || (*end && *end != ':'))
            return false;
        f[i] = (uint32_t)v;
        if (!*end)
            return true;
        s = end + 1;
    }
    return false;
}

static int usage(void)
{
    fprintf(stderr, "usage: batching_rtt --endpoint HOST:PORT [--in-flight N] [--seconds S] "
                    "[--delay-ms D] [--batch N[:L[:M[:B]]]] [--payload BYTES]\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"in-flight", required_argument, NULL, 'n'},
        {"seconds", required_argument, NULL, 's'},  {"delay-ms", required_argument, NULL, 'd'},
        {"batch", required_argument, NULL, 'b'},    {"payload", required_argument, NULL, 'p'},
        {"rate", required_argument, NULL, 'r'},     {NULL, 0, NULL, 0},
    };
    const char *endpoint = NULL;
    int in_flight = 10, delay_ms = 2;
    double seconds = 5, rate = 0;
    long payload = 100;
    bool batch = false;
    uint32_t b[4] = {MOMENTO_BATCH_DEFAULT_MIN_IN_FLIGHT, 0, MOMENTO_BATCH_DEFAULT_MAX_KEYS,
                     MOMENTO_BATCH_DEFAULT_MAX_BYTES};
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': endpoint = optarg; break;
        case 'n': in_flight = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'd': delay_ms = atoi(optarg); break;
        case 'p': payload = atol(optarg); break;
        case 'r': rate = atof(optarg); break;
        case 'b':
            if (!parse_batch(optarg, b))
                return usage();
            batch = true;
            break;
        default: return usage();
        }
    }
    if (optind < argc || !endpoint || in_flight < 1 || in_flight > 100000 || !(seconds > 0) ||
        seconds > 600 || delay_ms < 0 || delay_ms > 10000 || payload < 0 || payload > 4096 ||
        rate < 0 || rate > 1e6)
        return usage();
    if (strncmp(endpoint, "127.", 4) != 0 && strncmp(endpoint, "localhost:", 10) != 0 &&
        strncmp(endpoint, "[::1]:", 6) != 0) {
        fprintf(stderr, "batching_rtt: loopback endpoints only\n");
        return 2;
    }

    momento_credentials *creds;
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK) {
        fprintf(stderr, "batching_rtt: %s\n", momento_refusal_reason());
        return 2;
    }
    momento_config *cfg;
    momento_config_new(&cfg);
    momento_config_set_timeout_ms(cfg, 30000);
    if (batch && momento_config_set_batching(cfg, b[0], b[1], b[2], b[3]) != MOMENTO_OK) {
        fprintf(stderr, "batching_rtt: --batch out of range\n");
        return 2;
    }
    run rn;
    memset(&rn, 0, sizeof(rn));
    rn.payload = (size_t)payload;
    hist_init(&rn.latency);
    pthread_mutex_init(&rn.lock, NULL);
    pthread_cond_init(&rn.idle, NULL);
    int rc = momento_client_new(&rn.client, cfg, creds);
    momento_config_free(cfg);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK) {
        fprintf(stderr, "batching_rtt: client: %s\n", momento_strerror(rc));
        return 1;
    }
    char delay[16];
    snprintf(delay, sizeof(delay), "%d", delay_ms);
    if (momento__client_add_header(rn.client, "delay-ms", delay) != MOMENTO_OK ||
        momento__client_add_header(rn.client, "delay-rpcs", "get set get-batch set-batch") !=
            MOMENTO_OK) {
        fprintf(stderr, "batching_rtt: cannot add the fault headers\n");
        return 1;
    }

    worker *ws = calloc((size_t)in_flight, sizeof(*ws));
    int64_t t0 = now_ns();
    double c0 = cpu_s();
    rn.end_ns = t0 + (int64_t)(seconds * 1e9);
    if (rate > 0) {
        open_loop(&rn, rate);
    } else {
        rn.active = in_flight;
        for (int i = 0; i < in_flight; i++) {
            ws[i].rn = &rn;
            ws[i].id = i;
            if (!start(&ws[i]))
                retire(&rn);
        }
    }
    /* Bounded: the end of the run, then at most 30 s for what is in flight. */
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += (time_t)seconds + 31;
    pthread_mutex_lock(&rn.lock);
    while (rn.active > 0)
        if (pthread_cond_timedwait(&rn.idle, &rn.lock, &limit) != 0)
            break;
    int left = rn.active;
    pthread_mutex_unlock(&rn.lock);
    double wall = (double)(now_ns() - t0) / 1e9, cpu = cpu_s() - c0;
    momento_client_batching_stats k;
    momento_client_batching_stats_get(rn.client, &k, sizeof(k));
    if (left) {
        fprintf(stderr, "batching_rtt: %d workers still waiting after the run\n", left);
        return 1; /* the client cannot be freed safely under its own callbacks' feet here */
    }
    momento_client_free(rn.client);
    printf("RESULT ops=%llu ops_per_s=%.0f cpu_us_per_op=%.2f p50_us=%llu p99_us=%llu batches=%llu "
           "keys_per_batch=%.1f wrong=%llu failed=%llu misses=%llu\n",
           (unsigned long long)rn.ops, (double)rn.ops / wall,
           rn.ops ? cpu * 1e6 / (double)rn.ops : 0.0,
           (unsigned long long)hist_quantile(&rn.latency, 0.5),
           (unsigned long long)hist_quantile(&rn.latency, 0.99), (unsigned long long)k.batches,
           k.batches ? (double)k.batched_keys / (double)k.batches : 0.0,
           (unsigned long long)rn.wrong, (unsigned long long)rn.failed,
           (unsigned long long)rn.misses);
    free(ws);
    return rn.failed || rn.wrong || rn.ops == 0 ? 1 : 0;
}
