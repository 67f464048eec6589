/* A stress test of momento-local's threads for ThreadSanitizer
 * (tests/tsan/run.sh builds and runs it after tsan_stress).
 *
 * momento-local answers long requests in slices, other calls running
 * between them on other threads (server/core/srv_turns.h): the state those
 * threads share, the pins that hold a long request's keys, the calls held
 * back behind them and the janitor that frees big collections are what
 * this races. In one in-process server:
 *  - 2 long threads loop over big SetUnions, SetFetches and Deletes of
 *    three sets, and fill and flush a second cache;
 *  - 3 short threads send Gets and Sets of their own keys, SetLength and
 *    SetContains of those sets (held back behind a long request on them),
 *    Gets of the second cache (held back behind its flush), each with a
 *    random deadline of 1..200 ms or none, some with a cancel token that
 *    another short thread cancels.
 * Checked: every accepted request gets exactly one callback; every result
 * is a success, a miss, TIMEOUT or CANCELLED; a SetLength that answers
 * finds a whole union (a multiple of its size) or nothing; at the end the
 * server has no long request and no call held back. TSan checks the rest.
 *
 * Usage: tsan_server [SECONDS]   (default 10) */
#include "momento/collections.h"
#include "momento/local.h"
#include "momento/momento.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_SETS 3
#define SET_N 20000   /* elements per union: long under TSan */
#define BIG_ITEMS 5000
#define N_SHORT 3
#define MAX_REQUESTS 200000
#define SLOTS 8

static momento_local *server;
static momento_client *clients[2];
static atomic_bool stopping;
static atomic_int failures;
static atomic_size_t accepted, answered, twice;
static atomic_size_t n_long, n_timeout, n_cancelled;
/* A long thread's requests not yet answered: it keeps at most a few out,
 * so that the server works on them rather than on a backlog. */
#define LONG_IN_FLIGHT 3
static atomic_int long_out[2];
static momento_cancel_token *_Atomic slots[SLOTS];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(const char *what)
{
    fprintf(stderr, "tsan_server: %s\n", what);
    atomic_fetch_add(&failures, 1);
}

static _Thread_local uint64_t rng;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* One request's record: its one callback, and what it may answer. */
typedef struct req {
    atomic_int calls;
    bool length; /* a SetLength: HIT with a multiple of SET_N, or MISS */
    atomic_int *out; /* a long thread's count of its requests out, or NULL */
} req;

static void on_result(const momento_result *r, void *userdata)
{
    req *q = userdata;
    if (atomic_fetch_add(&q->calls, 1) != 0) {
        atomic_fetch_add(&twice, 1);
        return;
    }
    int err = momento_result_error(r);
    momento_outcome o = momento_result_outcome(r);
    if (err == MOMENTO_ERR_TIMEOUT)
        atomic_fetch_add(&n_timeout, 1);
    else if (err == MOMENTO_ERR_CANCELLED)
        atomic_fetch_add(&n_cancelled, 1);
    else if (err != MOMENTO_OK || o == MOMENTO_OUTCOME_ERROR)
        fail(momento_result_message(r));
    else if (q->length && o == MOMENTO_OUTCOME_HIT && momento_result_int(r) % SET_N != 0)
        fail("a SetLength saw part of a union");
    atomic_fetch_add(&answered, 1);
    if (q->out)
        atomic_fetch_sub(q->out, 1);
}

/* Records live until the end: a callback may come after its thread left. */
static req *reqs;
static atomic_size_t n_reqs;

static req *new_req(bool length)
{
    size_t i = atomic_fetch_add(&n_reqs, 1);
    if (i >= MAX_REQUESTS)
        return NULL;
    reqs[i].length = length;
    return &reqs[i];
}

static void count_submit(int rc, req *q)
{
    if (rc == MOMENTO_OK)
        atomic_fetch_add(&accepted, 1);
    else if (rc != MOMENTO_ERR_CANCELLED)
        fail("a request was refused");
    else
        atomic_fetch_add(&q->calls, 1); /* refused: no callback, none expected */
}

static uint8_t elems_bytes[N_SETS][SET_N * 4];
static const void *elems[N_SETS][SET_N];
static size_t elem_lens[SET_N];

static void *long_thread(void *arg)
{
    momento_client *c = clients[(uintptr_t)arg];
    atomic_int *out = &long_out[(uintptr_t)arg];
    rng = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
    static const char *const names[N_SETS] = {"L0", "L1", "L2"};
    while (!atomic_load(&stopping)) {
        if (atomic_load(out) >= LONG_IN_FLIGHT) {
            usleep(1000);
            continue;
        }
        unsigned k = rnd(N_SETS);
        req *q = new_req(false);
        if (!q)
            break;
        q->out = out;
        atomic_fetch_add(out, 1);
        int rc;
        switch (rnd(5)) {
        case 0:
        case 1:
            rc = momento_set_add_elements(c, "tsan", names[k], 2, elems[k], elem_lens, SET_N, NULL,
                                          NULL, on_result, q);
            break;
        case 2:
            rc = momento_set_fetch(c, "tsan", names[k], 2, NULL, on_result, q);
            break;
        case 3:
            rc = momento_delete(c, "tsan", names[k], 2, NULL, on_result, q);
            break;
        default: {
            static _Thread_local char keys[BIG_ITEMS][8];
            static _Thread_local const void *kp[BIG_ITEMS], *vp[BIG_ITEMS];
            static _Thread_local size_t kl[BIG_ITEMS], vl[BIG_ITEMS];
            for (int i = 0; i < BIG_ITEMS; i++) {
                kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]), "b%d", i);
                kp[i] = keys[i];
                vp[i] = "v";
                vl[i] = 1;
            }
            momento_result *r = NULL;
            momento_set_batch_sync(c, "big", kp, kl, vp, vl, BIG_ITEMS, 0, NULL, &r);
            momento_result_free(r);
            rc = momento_flush_cache(c, "big", NULL, on_result, q);
            break;
        }
        }
        if (rc != MOMENTO_OK)
            atomic_fetch_sub(out, 1);
        count_submit(rc, q);
    }
    return NULL;
}

/* Counts the moments a long request runs, so that a run in which none did
 * (nothing tested) fails. */
static void *monitor(void *arg)
{
    (void)arg;
    while (!atomic_load(&stopping)) {
        if (momento_local_long_requests(server) > 0)
            atomic_fetch_add(&n_long, 1);
        usleep(500);
    }
    return NULL;
}

static void *short_thread(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg;
    momento_client *c = clients[me % 2];
    rng = 0x2545f4914f6cdd1dull * (me + 1);
    char key[8];
    snprintf(key, sizeof(key), "k%u", me);
    while (!atomic_load(&stopping)) {
        momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
        o.timeout_ms = rnd(4) ? 1 + rnd(200) : 0;
        momento_cancel_token *t = NULL;
        if (rnd(3) == 0 && momento_cancel_token_new(&t) == MOMENTO_OK) {
            o.cancel = t;
            /* One reference for the slot (another thread may cancel and
             * drop it at once), this one for the request. */
            momento_cancel_token *old = atomic_exchange(&slots[rnd(SLOTS)],
                                                        momento_cancel_token_ref(t));
            if (old)
                momento_cancel_token_free(old);
        }
        unsigned op = rnd(6);
        req *q = new_req(op == 2);
        if (!q) {
            if (t)
                momento_cancel_token_free(t);
            break;
        }
        static const char *const names[N_SETS] = {"L0", "L1", "L2"};
        const void *probe[1] = {elems[0][0]};
        size_t probe_len[1] = {4};
        int rc;
        switch (op) {
        case 0:
            rc = momento_get(c, "tsan", key, strlen(key), &o, on_result, q);
            break;
        case 1:
            rc = momento_set(c, "tsan", key, strlen(key), "v", 1, 0, &o, on_result, q);
            break;
        case 2:
            rc = momento_set_length(c, "tsan", names[rnd(N_SETS)], 2, &o, on_result, q);
            break;
        case 3:
            rc = momento_set_contains_elements(c, "tsan", names[rnd(N_SETS)], 2, probe, probe_len,
                                               1, &o, on_result, q);
            break;
        case 4:
            rc = momento_get(c, "big", "b1", 2, &o, on_result, q);
            break;
        default: {
            /* Cancels another request's token (held back, maybe). */
            momento_cancel_token *v = atomic_exchange(&slots[rnd(SLOTS)], NULL);
            if (v) {
                momento_cancel(v);
                momento_cancel_token_free(v);
            }
            rc = momento_get(c, "tsan", key, strlen(key), &o, on_result, q);
            break;
        }
        }
        count_submit(rc, q);
        if (t)
            momento_cancel_token_free(t);
        usleep(200 + rnd(800));
    }
    return NULL;
}

static momento_client *new_client(void)
{
    momento_credentials *creds = NULL;
    momento_config *cfg = NULL;
    momento_client *c = NULL;
    if (momento_credentials_local(&creds, momento_local_endpoint(server)) != MOMENTO_OK ||
        momento_config_new(&cfg) != MOMENTO_OK ||
        momento_config_set_timeout_ms(cfg, 60000) != MOMENTO_OK ||
        momento_config_set_keepalive(cfg, 0, 0) != MOMENTO_OK ||
        momento_client_new(&c, cfg, creds) != MOMENTO_OK) {
        fprintf(stderr, "tsan_server: cannot create a client\n");
        exit(2);
    }
    momento_config_free(cfg);
    momento_credentials_free(creds);
    return c;
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? atoi(argv[1]) : 10;
    reqs = calloc(MAX_REQUESTS, sizeof(*reqs));
    if (!reqs)
        return 2;
    for (unsigned k = 0; k < N_SETS; k++)
        for (uint32_t i = 0; i < SET_N; i++) {
            uint32_t v = i | k << 24;
            memcpy(elems_bytes[k] + 4 * i, &v, 4);
            elems[k][i] = elems_bytes[k] + 4 * i;
            elem_lens[i] = 4;
        }
    momento_local_options *opts = NULL;
    if (momento_local_options_new(&opts) != 0 ||
        momento_local_options_add_cache(opts, "tsan") != 0 ||
        momento_local_options_add_cache(opts, "big") != 0 ||
        momento_local_start(&server, opts) != 0) {
        fprintf(stderr, "tsan_server: cannot start momento-local\n");
        return 2;
    }
    momento_local_options_free(opts);
    clients[0] = new_client();
    clients[1] = new_client();
    pthread_t th[3 + N_SHORT];
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, long_thread, (void *)i);
    for (uintptr_t i = 0; i < N_SHORT; i++)
        pthread_create(&th[2 + i], NULL, short_thread, (void *)i);
    pthread_create(&th[2 + N_SHORT], NULL, monitor, NULL);
    int64_t end = now_ms() + (int64_t)secs * 1000;
    while (now_ms() < end && atomic_load(&n_reqs) < MAX_REQUESTS)
        usleep(10000);
    atomic_store(&stopping, true);
    for (int i = 0; i < 3 + N_SHORT; i++)
        pthread_join(th[i], NULL);
    /* Each free waits for its requests' callbacks. */
    momento_client_free(clients[0]);
    momento_client_free(clients[1]);
    for (int i = 0; i < SLOTS; i++)
        if (slots[i])
            momento_cancel_token_free(slots[i]);
    size_t n = atomic_load(&n_reqs);
    if (n > MAX_REQUESTS)
        n = MAX_REQUESTS;
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += atomic_load(&reqs[i].calls) == 0;
    if (missing)
        fail("a request got no callback");
    if (atomic_load(&twice))
        fail("a request got two callbacks");
    if (atomic_load(&answered) != atomic_load(&accepted))
        fail("answered != accepted");
    /* The clients are gone, but the server learns it a moment later (a
     * held call's close, a long request finishing): it must come to
     * nothing held within a bound. */
    int64_t until = now_ms() + 60000;
    while ((momento_local_long_requests(server) != 0 || momento_local_waiting_calls(server) != 0) &&
           now_ms() < until)
        usleep(10000);
    if (momento_local_long_requests(server) != 0 || momento_local_waiting_calls(server) != 0) {
        fprintf(stderr, "tsan_server: %llu long, %llu held back\n",
                (unsigned long long)momento_local_long_requests(server),
                (unsigned long long)momento_local_waiting_calls(server));
        fail("the server still has a long request or a call held back, 60 s after the clients");
    }
    if (atomic_load(&n_long) == 0)
        fail("no request ever ran long: nothing was tested");
    printf("tsan_server: %zu requests, %zu answered (%zu timeouts, %zu cancelled), long seen %zu "
           "times\n",
           n, atomic_load(&answered), atomic_load(&n_timeout), atomic_load(&n_cancelled),
           atomic_load(&n_long));
    momento_local_stop(server);
    free(reqs);
    return atomic_load(&failures) ? 1 : 0;
}
