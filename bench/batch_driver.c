/* Closed-loop driver for bench/server_batch.sh: a fixed number of requests
 * in flight, each slot sending its next request from the callback of the
 * last, until `--keys` keys have been asked for. The requests are per-key
 * Gets or Sets, or GetBatch / SetBatch RPCs of `--batch` keys each, over a
 * table of `--table` distinct keys that is filled first (so gets are hits
 * returning `--payload`-byte values). The fill is the same in every run, so
 * a long run minus a short one leaves only the measured requests. Prints
 * one line of key=value results; exits 1 if any request or item failed, or
 * a get missed.
 *
 *   batch_driver --endpoint HOST:PORT --op get|set|get-batch|set-batch
 *                [--batch 10] [--keys 20000] [--in-flight 10]
 *                [--table 1000] [--payload 100]
 *
 * Loopback only: the endpoint must be 127.0.0.1, localhost or [::1]. */
#include "momento/momento.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_GET, OP_SET, OP_GET_BATCH, OP_SET_BATCH };

typedef struct driver {
    momento_client *client;
    int op;
    size_t batch;
    uint64_t keys;  /* keys to ask for in all */
    size_t table;   /* distinct keys */
    char **key;     /* the table's keys */
    size_t *key_len;
    char *payload;
    size_t payload_len;
    atomic_uint_fast64_t next;  /* keys handed out so far */
    atomic_uint_fast64_t done, failed, misses, requests;
    atomic_int active;
    pthread_mutex_t lock;
    pthread_cond_t idle;
} driver;

typedef struct slot {
    driver *d;
    /* The batch being sent: the library packs the request before
     * momento_*_batch() returns, so these are reused at once. */
    const void **keys;
    size_t *key_lens;
    const void **values;
    size_t *value_lens;
} slot;

static void on_result(const momento_result *r, void *ud);

static void retire(driver *d)
{
    if (atomic_fetch_sub(&d->active, 1) == 1) {
        pthread_mutex_lock(&d->lock);
        pthread_cond_signal(&d->idle);
        pthread_mutex_unlock(&d->lock);
    }
}

/* Sends the slot's next request, or retires it once every key was asked
 * for. */
static void submit(slot *s)
{
    driver *d = s->d;
    size_t n = d->op == OP_GET || d->op == OP_SET ? 1 : d->batch;
    uint64_t first = atomic_fetch_add(&d->next, n);
    if (first >= d->keys) {
        retire(d);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)((first + i) % d->table);
        s->keys[i] = d->key[k];
        s->key_lens[i] = d->key_len[k];
        s->values[i] = d->payload;
        s->value_lens[i] = d->payload_len;
    }
    int rc;
    switch (d->op) {
    case OP_GET:
        rc = momento_get(d->client, "bench", s->keys[0], s->key_lens[0], NULL, on_result, s);
        break;
    case OP_SET:
        rc = momento_set(d->client, "bench", s->keys[0], s->key_lens[0], d->payload,
                         d->payload_len, 600000, NULL, on_result, s);
        break;
    case OP_GET_BATCH:
        rc = momento_get_batch(d->client, "bench", s->keys, s->key_lens, n, NULL, on_result, s);
        break;
    default:
        rc = momento_set_batch(d->client, "bench", s->keys, s->key_lens, s->values, s->value_lens,
                               n, 600000, NULL, on_result, s);
        break;
    }
    atomic_fetch_add(&d->requests, 1);
    if (rc != MOMENTO_OK) {
        atomic_fetch_add(&d->failed, n);
        retire(d);
    }
}

static void tally(driver *d, const momento_result *r)
{
    momento_outcome o = momento_result_outcome(r);
    if (o == MOMENTO_OUTCOME_ERROR)
        atomic_fetch_add(&d->failed, 1);
    else if (o == MOMENTO_OUTCOME_MISS)
        atomic_fetch_add(&d->misses, 1);
    atomic_fetch_add(&d->done, 1);
}

static void on_result(const momento_result *r, void *ud)
{
    slot *s = ud;
    driver *d = s->d;
    if (d->op == OP_GET || d->op == OP_SET) {
        tally(d, r);
    } else if (momento_result_error(r) != MOMENTO_OK) {
        atomic_fetch_add(&d->failed, d->batch);
        atomic_fetch_add(&d->done, d->batch);
    } else {
        size_t n = momento_result_item_count(r);
        if (n != d->batch)
            atomic_fetch_add(&d->failed, d->batch);
        for (size_t i = 0; i < n; i++)
            tally(d, momento_result_item(r, i));
    }
    submit(s);
}

static int parse_op(const char *s)
{
    if (strcmp(s, "get") == 0)
        return OP_GET;
    if (strcmp(s, "set") == 0)
        return OP_SET;
    if (strcmp(s, "get-batch") == 0)
        return OP_GET_BATCH;
    if (strcmp(s, "set-batch") == 0)
        return OP_SET_BATCH;
    return -1;
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *op = "get-batch";
    long batch = 10, in_flight = 10, table = 1000, payload = 100;
    unsigned long long keys = 20000;
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, 'e'}, {"op", required_argument, NULL, 'o'},
        {"batch", required_argument, NULL, 'b'},    {"keys", required_argument, NULL, 'k'},
        {"in-flight", required_argument, NULL, 'i'}, {"table", required_argument, NULL, 't'},
        {"payload", required_argument, NULL, 'p'},  {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': endpoint = optarg; break;
        case 'o': op = optarg; break;
        case 'b': batch = atol(optarg); break;
        case 'k': keys = strtoull(optarg, NULL, 10); break;
        case 'i': in_flight = atol(optarg); break;
        case 't': table = atol(optarg); break;
        case 'p': payload = atol(optarg); break;
        default: return 2;
        }
    }
    /* Bounded: at most 10 million keys, 1000 requests in flight. */
    if (!endpoint || parse_op(op) < 0 || batch < 1 || batch > 10000 || keys < 1 ||
        keys > 10000000 || in_flight < 1 || in_flight > 1000 || table < batch ||
        table > 1000000 || payload < 0 || payload > 1000000) {
        fprintf(stderr, "usage: batch_driver --endpoint HOST:PORT --op get|set|get-batch|set-batch "
                        "[--batch 1..10000] [--keys N<=1e7] [--in-flight 1..1000] "
                        "[--table N>=batch] [--payload B]\n");
        return 2;
    }
    if (strncmp(endpoint, "127.", 4) != 0 && strncmp(endpoint, "localhost:", 10) != 0 &&
        strncmp(endpoint, "[::1]:", 6) != 0) {
        fprintf(stderr, "batch_driver: loopback endpoints only\n");
        return 2;
    }

    driver d;
    memset(&d, 0, sizeof(d));
    d.op = parse_op(op);
    d.batch = (size_t)batch;
    d.keys = keys;
    d.table = (size_t)table;
    d.payload_len = (size_t)payload;
    d.payload = malloc(d.payload_len + 1);
    d.key = calloc(d.table, sizeof(*d.key));
    d.key_len = calloc(d.table, sizeof(*d.key_len));
    if (!d.payload || !d.key || !d.key_len)
        return 1;
    memset(d.payload, 'x', d.payload_len);
    for (size_t i = 0; i < d.table; i++) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "key-%zu", i);
        d.key[i] = strdup(buf);
        d.key_len[i] = (size_t)n;
        if (!d.key[i])
            return 1;
    }
    pthread_mutex_init(&d.lock, NULL);
    pthread_cond_init(&d.idle, NULL);

    momento_credentials *creds;
    momento_config *cfg;
    momento_config_new(&cfg);
    momento_config_set_timeout_ms(cfg, 60000); /* callgrind slows the server ~50x */
    if (momento_credentials_local(&creds, endpoint) != MOMENTO_OK ||
        momento_client_new(&d.client, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "batch_driver: cannot make a client for %s\n", endpoint);
        return 1;
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);

    /* Fill the table one Set at a time, identically in every run. */
    for (size_t i = 0; i < d.table; i++) {
        momento_result *r = NULL;
        int rc = momento_set_sync(d.client, "bench", d.key[i], d.key_len[i], d.payload,
                                  d.payload_len, 600000, NULL, &r);
        momento_result_free(r);
        if (rc != MOMENTO_OK) {
            fprintf(stderr, "batch_driver: filling the table failed (%d)\n", rc);
            return 1;
        }
    }

    size_t per = d.batch;
    slot *slots = calloc((size_t)in_flight, sizeof(*slots));
    if (!slots)
        return 1;
    atomic_store(&d.active, (int)in_flight);
    for (long i = 0; i < in_flight; i++) {
        slots[i].d = &d;
        slots[i].keys = calloc(per, sizeof(void *));
        slots[i].key_lens = calloc(per, sizeof(size_t));
        slots[i].values = calloc(per, sizeof(void *));
        slots[i].value_lens = calloc(per, sizeof(size_t));
        if (!slots[i].keys || !slots[i].key_lens || !slots[i].values || !slots[i].value_lens)
            return 1;
    }
    for (long i = 0; i < in_flight; i++)
        submit(&slots[i]);
    pthread_mutex_lock(&d.lock);
    while (atomic_load(&d.active) > 0)
        pthread_cond_wait(&d.idle, &d.lock);
    pthread_mutex_unlock(&d.lock);

    unsigned long long failed = atomic_load(&d.failed), misses = atomic_load(&d.misses);
    printf("op=%s batch=%zu requests=%llu keys=%llu failed=%llu misses=%llu\n", op,
           d.op == OP_GET || d.op == OP_SET ? (size_t)1 : d.batch,
           (unsigned long long)atomic_load(&d.requests), (unsigned long long)atomic_load(&d.done),
           failed, misses);
    momento_client_free(d.client);
    for (long i = 0; i < in_flight; i++) {
        free(slots[i].keys);
        free(slots[i].key_lens);
        free(slots[i].values);
        free(slots[i].value_lens);
    }
    free(slots);
    for (size_t i = 0; i < d.table; i++)
        free(d.key[i]);
    free(d.key);
    free(d.key_len);
    free(d.payload);
    return failed || misses ? 1 : 0;
}
