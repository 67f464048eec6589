/* Dispatch mode over protosocket. There the transport's I/O thread
 * finishes each attempt itself (transport.h's finish()): it decodes the
 * reply, reports the metrics hook and queues the callback for the
 * dispatching thread, without handing the end to the completion thread
 * first. What must not change with that: every callback runs on the
 * dispatching thread, exactly once, also for retried, cancelled, held and
 * freed requests; a blocking call from the hook is refused, not hung.
 * (test_dispatch.c is the mode over gRPC: it needs the fault headers and
 * batching protosocket does not carry.) */
#include "testing.h"
#include "testutil.h"

#include "momento/metrics.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Callbacks by what they got, and whether one ran off the dispatching
 * thread or twice. */
typedef struct tally {
    pthread_t expect; /* the dispatching thread */
    int n, ok, hits, cancelled, other;
    int wrong_thread;
    int wrong_value;
    int max_attempts;
    unsigned char seen[512]; /* per request index: callbacks so far */
} tally;

typedef struct req {
    tally *k;
    int index;
    const char *want; /* a get's expected value, or NULL */
} req;

static void tally_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    tally *k = q->k;
    k->n++;
    k->seen[q->index]++;
    if (!pthread_equal(pthread_self(), k->expect))
        k->wrong_thread++;
    int err = momento_result_error(r);
    if (momento_result_attempts(r) > k->max_attempts)
        k->max_attempts = momento_result_attempts(r);
    if (err == MOMENTO_OK) {
        k->ok++;
        if (momento_result_outcome(r) == MOMENTO_OUTCOME_HIT) {
            k->hits++;
            size_t len = 0;
            const void *v = momento_result_value(r, &len);
            if (!q->want || len != strlen(q->want) || memcmp(v, q->want, len) != 0)
                k->wrong_value++;
        }
    } else if (err == MOMENTO_ERR_CANCELLED) {
        k->cancelled++;
    } else {
        k->other++;
    }
}

/* The metrics hook: which thread reported each request, and what a
 * blocking call of the same client answered there. */
typedef struct hooked {
    momento_client *c;
    int calls, on_io_thread, on_cq_thread, on_dispatcher;
    pthread_t dispatcher;
    int blocking_rc; /* 1: not tried */
} hooked;

static void hook(const momento_request_metrics *m, void *userdata)
{
    hooked *h = userdata;
    h->calls++;
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    if (strcmp(name, "momento-ps") == 0)
        h->on_io_thread++;
    else if (strcmp(name, "momento-cq") == 0)
        h->on_cq_thread++;
    else if (pthread_equal(pthread_self(), h->dispatcher))
        h->on_dispatcher++;
    if (h->c && h->blocking_rc == 1 && m->transport == MOMENTO_METRICS_TRANSPORT_PROTOSOCKET) {
        momento_result *r = NULL;
        h->blocking_rc = momento_get_sync(h->c, "c", "k0", 2, NULL, &r);
        momento_result_free(r);
    }
}

/* A dispatch-mode client over protosocket, with the hook when `h`. */
static momento_client *dispatch_client(hooked *h, uint32_t timeout_ms)
{
    momento_config *cfg;
    assert_int_equal(momento_config_new(&cfg), MOMENTO_OK);
    assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(timeout_ms));
    if (h)
        assert_int_equal(momento_config_set_metrics(cfg, hook, h), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg); /* protosocket: main() */
    momento_config_free(cfg);
    return c;
}

/* Dispatches until `k` has `n` callbacks or 20 s (scaled) passed. */
static void dispatch_until(momento_client *c, tally *k, int n)
{
    int64_t until = tu_now_ms() + TU_MS(20000);
    while (k->n < n && tu_now_ms() < until) {
        struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
        if (poll(&p, 1, 50) == 1)
            assert_true(momento_client_dispatch(c, 0) >= 0);
    }
}

static void assert_each_once(const tally *k, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(k->seen[i], 1);
    assert_int_equal(k->n, n);
    assert_int_equal(k->wrong_thread, 0);
}

#define N 200

static void test_answers_reported_on_io_thread(void **state)
{
    (void)state;
    hooked h = {.dispatcher = pthread_self(), .blocking_rc = 1};
    momento_client *c = dispatch_client(&h, 5000);
    tally k = {.expect = pthread_self()};
    static req q[2 * N];
    static char vals[N][16];
    char key[16];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(vals[i], sizeof(vals[i]), "v%d", i);
        q[i] = (req){.k = &k, .index = i};
        assert_int_equal(momento_set(c, "c", key, strlen(key), vals[i], strlen(vals[i]), 0, NULL,
                                     tally_cb, &q[i]),
                         MOMENTO_OK);
    }
    dispatch_until(c, &k, N);
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        q[N + i] = (req){.k = &k, .index = N + i, .want = vals[i]};
        assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, tally_cb, &q[N + i]),
                         MOMENTO_OK);
    }
    dispatch_until(c, &k, 2 * N);
    assert_each_once(&k, 2 * N);
    assert_int_equal(k.ok, 2 * N);
    assert_int_equal(k.hits, N);
    assert_int_equal(k.wrong_value, 0);
    /* Each request reported once, before its callback, where its RPC
     * ended: the protosocket I/O thread - not the completion thread,
     * which the ends no longer cross. */
    assert_int_equal(h.calls, 2 * N);
    assert_int_equal(h.on_io_thread, 2 * N);
    assert_int_equal(h.on_cq_thread, 0);
    momento_client_free(c);
}

static void test_blocking_call_from_hook_refused(void **state)
{
    (void)state;
    hooked h = {.dispatcher = pthread_self(), .blocking_rc = 1};
    momento_client *c = dispatch_client(&h, 5000);
    h.c = c;
    tally k = {.expect = pthread_self()};
    req q = {.k = &k, .index = 0};
    assert_int_equal(momento_get(c, "c", "k0", 2, NULL, tally_cb, &q), MOMENTO_OK);
    dispatch_until(c, &k, 1);
    assert_each_once(&k, 1);
    /* It would wait for the very thread the hook runs on. */
    assert_int_equal(h.blocking_rc, MOMENTO_ERR_WOULD_DEADLOCK);
    h.c = NULL;
    momento_client_free(c);
}

static void test_retries_made_from_io_thread(void **state)
{
    (void)state;
    /* The first 3 gets fail UNAVAILABLE, which the default strategy
     * retries: the failed attempt ends on the I/O thread, which makes the
     * next (or arms its timer). */
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", 14, 0, 3), MOMENTO_OK);
    momento_client *c = dispatch_client(NULL, 5000);
    tally k = {.expect = pthread_self()};
    static req q[20];
    for (int i = 0; i < 20; i++) {
        q[i] = (req){.k = &k, .index = i};
        assert_int_equal(momento_get(c, "c", "absent", 6, NULL, tally_cb, &q[i]), MOMENTO_OK);
    }
    dispatch_until(c, &k, 20);
    assert_each_once(&k, 20);
    assert_int_equal(k.ok, 20);
    assert_true(k.max_attempts >= 2);
    momento_client_free(c);
}

static void test_cancel_and_free_with_requests_held(void **state)
{
    (void)state;
    /* Every get is held by the server (released by a cancel frame or the
     * connection closing); the sets are answered. */
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, "get", -1, 600000, 1000000),
                     MOMENTO_OK);
    momento_client *c = dispatch_client(NULL, 30000);
    tally k = {.expect = pthread_self()};
    momento_cancel_token *tok;
    assert_int_equal(momento_cancel_token_new(&tok), MOMENTO_OK);
    momento_request_options tokened = MOMENTO_REQUEST_OPTIONS_INIT;
    tokened.cancel = tok;
    static req q[90];
    char key[16];
    for (int i = 0; i < 30; i++) { /* held, then cancelled */
        snprintf(key, sizeof(key), "h%d", i);
        q[i] = (req){.k = &k, .index = i};
        assert_int_equal(momento_get(c, "c", key, strlen(key), &tokened, tally_cb, &q[i]),
                         MOMENTO_OK);
    }
    for (int i = 30; i < 60; i++) { /* held until the free */
        snprintf(key, sizeof(key), "h%d", i);
        q[i] = (req){.k = &k, .index = i};
        assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, tally_cb, &q[i]),
                         MOMENTO_OK);
    }
    for (int i = 60; i < 90; i++) { /* answered, left queued */
        snprintf(key, sizeof(key), "s%d", i);
        q[i] = (req){.k = &k, .index = i};
        assert_int_equal(momento_set(c, "c", key, strlen(key), "v", 1, 0, NULL, tally_cb, &q[i]),
                         MOMENTO_OK);
    }
    momento_cancel(tok);
    dispatch_until(c, &k, 30);
    assert_int_equal(k.cancelled, 30);
    for (int i = 0; i < 30; i++)
        assert_int_equal(k.seen[i], 1);
    /* The sets' answers queued, not run: the free must run them. */
    tu_wait_until(momento__dispatch_queued(c) >= 30 - (size_t)(k.n - 30), 20000);
    assert_int_equal(momento__dispatch_queued(c) + (size_t)(k.n - 30), 30);
    /* The free ends the held gets and runs every queued callback, on this
     * thread, once each. */
    momento_client_free(c);
    assert_each_once(&k, 90);
    assert_int_equal(k.cancelled, 60);
    assert_int_equal(k.ok, 30);
    momento_cancel_token_free(tok);
    assert_int_equal(momento_local_protosocket_fault(tu_fx.server, NULL, 0, 0, 0), MOMENTO_OK);
}

/* Frees the client from its first callback (dispatching thread). */
typedef struct freer {
    tally k;
    momento_client *c;
} freer;

static void free_cb(const momento_result *r, void *userdata)
{
    req *q = userdata;
    freer *f = (freer *)q->k;
    tally_cb(r, userdata);
    if (f->c) {
        momento_client *c = f->c;
        f->c = NULL;
        momento_client_free(c);
    }
}

static void test_free_from_dispatched_callback(void **state)
{
    (void)state;
    momento_client *c = dispatch_client(NULL, 5000);
    freer f = {.k = {.expect = pthread_self()}, .c = c};
    static req q[100];
    for (int i = 0; i < 100; i++) {
        q[i] = (req){.k = &f.k, .index = i};
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, free_cb, &q[i]), MOMENTO_OK);
    }
    int64_t until = tu_now_ms() + TU_MS(20000);
    while (f.c && tu_now_ms() < until) {
        struct pollfd p = {.fd = momento_client_dispatch_fd(c), .events = POLLIN};
        if (poll(&p, 1, 50) == 1)
            assert_true(momento_client_dispatch(c, 1) >= 0);
    }
    /* The free ran inside the first callback: every other request got its
     * one callback by the time the dispatch that ran it returned. */
    assert_null(f.c);
    assert_each_once(&f.k, 100);
    assert_int_equal(f.k.ok + f.k.cancelled, 100);
}

int main(void)
{
    /* The fixture's server gets a protosocket port, and tu_client() sends
     * get, set and delete to it (testutil.c). */
    setenv("MOMENTO_TEST_TRANSPORT", "protosocket", 1);
    const struct CMUnitTest tests[] = {
        tu_fixture_test(test_answers_reported_on_io_thread),
        tu_fixture_test(test_blocking_call_from_hook_refused),
        tu_fixture_test(test_retries_made_from_io_thread),
        tu_fixture_test(test_cancel_and_free_with_requests_held),
        tu_fixture_test(test_free_from_dispatched_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
