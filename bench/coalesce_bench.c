/* Closed-loop driver for the coalescing benchmarks: N workers each run
 * set-then-get against a server, through the plain client or through the
 * coalescer, until a duration or an operation count is reached. Prints one
 * line of key=value results.
 *
 *   coalesce_bench --endpoint HOST:PORT --mode plain|coalesce
 *                  [--workers 1000] [--keys 10 (0 = a fresh key per set)]
 *                  [--seconds 20] [--ops N] [--payload 100] [--op both|get|set]
 *
 * Loopback only: the endpoint must be 127.0.0.1, localhost or [::1]. */
#include "momento/coalescer.h"
#include "momento/momento.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct bench {
    int op_mode; /* 0 set-then-get, 1 get only, 2 set only */
    momento_client *client;
    momento_coalescer *co; /* NULL = plain client */
    int keys;
    char *payload;
    size_t payload_len;
    atomic_bool stop;
    uint64_t max_ops;
    atomic_uint_fast64_t ops, errors;
    atomic_int active;
    pthread_mutex_t lock;
    pthread_cond_t done;
} bench;

typedef struct worker {
    bench *b;
    int id;
    int phase; /* 0: a set is in flight, 1: a get is */
    uint64_t n;
    char key[48];
    size_t key_len;
} worker;

static void step(const momento_result *r, void *ud);

static int submit(worker *w)
{
    bench *b = w->b;
    if (b->op_mode == 1)
        w->phase = 1; /* gets only: of keys never set (misses) */
    else if (b->op_mode == 2)
        w->phase = 0;
    if (w->phase == 0 || b->op_mode == 1) {
        if (b->keys > 0)
            w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "hot-%d", (int)((w->id + w->n) % (uint64_t)b->keys));
        else
            w->key_len = (size_t)snprintf(w->key, sizeof(w->key), "u-%d-%llu", w->id, (unsigned long long)w->n);
        if (w->phase == 0)
            return b->co ? momento_coalescing_set(b->co, "bench", w->key, w->key_len, b->payload,
                                                  b->payload_len, 60000, NULL, step, w)
                         : momento_set(b->client, "bench", w->key, w->key_len, b->payload,
                                       b->payload_len, 60000, NULL, step, w);
    }
    return b->co ? momento_coalescing_get(b->co, "bench", w->key, w->key_len, NULL, step, w)
                 : momento_get(b->client, "bench", w->key, w->key_len, NULL, step, w);
}

static void retire(bench *b)
{
    if (atomic_fetch_sub(&b->active, 1) == 1) {
        pthread_mutex_lock(&b->lock);
        pthread_cond_signal(&b->done);
        pthread_mutex_unlock(&b->lock);
    }
}

static void step(const momento_result *r, void *ud)
{
    worker *w = ud;
    bench *b = w->b;
    if (momento_result_error(r) != MOMENTO_OK)
        atomic_fetch_add(&b->errors, 1);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *mode = "plain", *op = "both";
    int workers = 1000, keys = 10, payload = 100;
    double seconds = 20;
    uint64_t max_ops = 0;
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"mode", required_argument, NULL, 'm'},
        {"workers", required_argument, NULL, 'w'},  {"keys", required_argument, NULL, 'k'},
        {"seconds", required_argument, NULL, 's'},  {"ops", required_argument, NULL, 'o'},
        {"payload", required_argument, NULL, 'p'},  {"op", required_argument, NULL, 'O'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': endpoint = optarg; break;
        case 'm': mode = optarg; break;
        case 'w': workers = atoi(optarg); break;
        case 'k': keys = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'o': max_ops = strtoull(optarg, NULL, 10); break;
        case 'p': payload = atoi(optarg); break;
        case 'O': op = optarg; break;
        default: return 2;
        }
    }
    if (!endpoint || workers < 1 || keys < 0 || payload < 0 || seconds <= 0 || seconds > 600 ||
        (strcmp(mode, "plain") != 0 && strcmp(mode, "coalesce") != 0) ||
        (strcmp(op, "both") && strcmp(op, "get") && strcmp(op, "set"))) {
        fprintf(stderr, "usage: coalesce_bench --endpoint HOST:PORT --mode plain|coalesce "
                        "[--workers N] [--keys N] [--seconds S<=600] [--ops N] [--payload B] "
                        "[--op both|get|set]\n");
        return 2;
    }
    if (strncmp(endpoint, "127.", 4) != 0 && strncmp(endpoint, "localhost:", 10) != 0 &&
        strncmp(endpoint, "[::1]:", 6) != 0) {
        fprintf(stderr, "coalesce_bench: loopback endpoints only\n");
        return 2;
    }

    bench b;
    memset(&b, 0, sizeof(b));
    b.keys = keys;
    b.op_mode = strcmp(op, "get") == 0 ? 1 : strcmp(op, "set") == 0 ? 2 : 0;
    b.max_ops = max_ops;
    b.payload_len = (size_t)payload;
    b.payload = malloc(b.payload_len + 1);
    memset(b.payload, 'x', b.payload_len);
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.done, NULL);

    momento_credentials *creds;
    momento_config *cfg;
    momento_config_new(&cfg);
    momento_config_set_timeout_ms(cfg, 15000);
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK ||
        momento_client_new(&b.client, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "coalesce_bench: cannot make a client for %s\n", endpoint);
        return 1;
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);
    momento_create_cache_sync(b.client, "bench", NULL, NULL);
    if (strcmp(mode, "coalesce") == 0)
        momento_coalescer_new(&b.co, b.client);

    worker *ws = calloc((size_t)workers, sizeof(*ws));
    double t0 = now_s(), c0 = cpu_s();
    atomic_store(&b.active, workers);
    for (int i = 0; i < workers; i++) {
        ws[i] = (worker){.b = &b, .id = i};
        if (submit(&ws[i]) != MOMENTO_OK)
            retire(&b);
    }
    /* Bounded in time whatever happens: the duration, then the stop flag. */
    while (!atomic_load(&b.stop) && now_s() - t0 < seconds)
        usleep(10000);
    atomic_store(&b.stop, true);
    pthread_mutex_lock(&b.lock);
    while (atomic_load(&b.active) > 0)
        pthread_cond_wait(&b.done, &b.lock);
    pthread_mutex_unlock(&b.lock);
    double wall = now_s() - t0, cpu = cpu_s() - c0;

    uint64_t ops = atomic_load(&b.ops);
    printf("mode=%s workers=%d keys=%d ops=%llu errors=%llu wall_s=%.2f ops_per_s=%.0f client_cpu_s=%.2f",
           mode, workers, keys, (unsigned long long)ops, (unsigned long long)atomic_load(&b.errors),
           wall, (double)ops / wall, cpu);
    if (b.co) {
        momento_coalescer_stats s;
        momento_coalescer_stats_get(b.co, &s, sizeof(s));
        uint64_t req = s.get_requests + s.set_requests;
        uint64_t coal = s.get_coalesced + s.set_coalesced;
        printf(" requests=%llu coalesced=%llu coalesced_pct=%.2f rpcs=%llu",
               (unsigned long long)req, (unsigned long long)coal, req ? 100.0 * (double)coal / (double)req : 0.0,
               (unsigned long long)(req - coal));
    }
    printf("\n");
    momento_coalescer_free(b.co);
    momento_client_free(b.client);
    free(ws);
    free(b.payload);
    return 0;
}
