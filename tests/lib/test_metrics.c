/* The metrics hook (momento/metrics.h) against the local server: one call
 * per accepted request, just before its callback and on the same thread,
 * with the method, cache, status, attempts, latency and bytes of that
 * request; errors (unknown cache, timeout, cancel, client freed with
 * requests in flight) each reported once; coalesced waiters and batched
 * requests reported per request, never their shared RPC; nothing from a
 * client without a hook. The server's fault injection holds or fails
 * calls, so timeouts, cancels and retries happen for certain. */
#include "momento/coalescer.h"
#include "momento/metrics.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RECS 256

/* One hook call, copied (the record and its strings are borrowed). */
typedef struct rec {
    size_t size;
    const char *method;
    char cache[64];
    bool has_cache;
    int error;
    int grpc_status;
    int outcome;
    uint32_t attempts;
    uint32_t flags;
    uint64_t latency_ns;
    uint64_t request_bytes;
    uint64_t response_bytes;
    bool result_matches;  /* m->result said what m's fields say */
} rec;

/* Everything the hooks and callbacks of a test saw. Off the stack: the
 * records are large for valgrind's taste. */
typedef struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    rec *recs;
    size_t n;                    /* hook calls */
    size_t callbacks;
    /* A callback whose own hook call did not come just before it, on its
     * thread: the hook ran after it, not at all, or twice. */
    size_t out_of_order;
    const momento_result *last_result;
    pthread_t last_thread;
} recorder;

static recorder R = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
static int client_id;

static void reset(void)
{
    pthread_mutex_lock(&R.lock);
    if (!R.recs)
        R.recs = calloc(MAX_RECS, sizeof(rec));
    memset(R.recs, 0, MAX_RECS * sizeof(rec));
    R.n = R.callbacks = R.out_of_order = 0;
    R.last_result = NULL;
    pthread_mutex_unlock(&R.lock);
}

static void hook(const momento_request_metrics *m, void *userdata)
{
    pthread_mutex_lock(&R.lock);
    if (userdata != &R)
        R.out_of_order++; /* cmocka's asserts belong to the main thread */
    if (R.n < MAX_RECS) {
        rec *x = &R.recs[R.n];
        x->size = m->size;
        x->method = m->method;
        x->has_cache = m->cache != NULL;
        if (m->cache)
            snprintf(x->cache, sizeof(x->cache), "%s", m->cache);
        x->error = m->error;
        x->grpc_status = m->grpc_status;
        x->outcome = m->outcome;
        x->attempts = m->attempts;
        x->flags = m->flags;
        x->latency_ns = m->latency_ns;
        x->request_bytes = m->request_bytes;
        x->response_bytes = m->response_bytes;
        x->result_matches = m->result && momento_result_error(m->result) == m->error &&
                            (int)momento_result_outcome(m->result) == m->outcome;
    }
    R.n++;
    R.last_result = m->result;
    R.last_thread = pthread_self();
    pthread_mutex_unlock(&R.lock);
}

/* Every request of these tests calls back here. */
static void cb(const momento_result *r, void *userdata)
{
    (void)userdata;
    pthread_mutex_lock(&R.lock);
    R.callbacks++;
    if (R.last_result != r || R.n != R.callbacks || !pthread_equal(R.last_thread, pthread_self()))
        R.out_of_order++;
    R.last_result = NULL;
    pthread_cond_broadcast(&R.cond);
    pthread_mutex_unlock(&R.lock);
}

/* Waits for `n` callbacks in all (or a while); returns the callbacks. An
 * extra hook call or callback would come later: each test counts again
 * once the client's free has returned (assert_settled), which waits for
 * every callback. */
static size_t wait_callbacks(size_t n)
{
    return tu_wait_count(&R.lock, &R.cond, &R.callbacks, n, 10000);
}

static size_t hooks(void)
{
    pthread_mutex_lock(&R.lock);
    size_t n = R.n;
    pthread_mutex_unlock(&R.lock);
    return n;
}

/* After the waits: every callback was preceded by its own hook call. */
static void assert_in_order(void)
{
    pthread_mutex_lock(&R.lock);
    size_t bad = R.out_of_order, n = R.n, calls = R.callbacks;
    pthread_mutex_unlock(&R.lock);
    assert_int_equal(bad, 0);
    assert_int_equal(n, calls);
}

/* After the client's free, when no hook call or callback can come any
 * more: `n` of each in all, in order (none twice). */
static void assert_settled(size_t n)
{
    assert_int_equal(hooks(), n);
    pthread_mutex_lock(&R.lock);
    size_t calls = R.callbacks;
    pthread_mutex_unlock(&R.lock);
    assert_int_equal(calls, n);
    assert_in_order();
}

/* A client with the hook (and `timeout_ms`, 0 = default; batching from
 * `batch_n` RPCs in flight, 0 = off), whose calls carry `headers` (pairs)
 * under a fresh fault-injection session. */
static momento_client *hooked(tu_fixture *f, uint32_t timeout_ms, uint32_t batch_n,
                              const char *const *headers, size_t n_headers)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_metrics(cfg, hook, &R), MOMENTO_OK);
    if (timeout_ms)
        assert_int_equal(momento_config_set_timeout_ms(cfg, timeout_ms), MOMENTO_OK);
    if (batch_n) {
        assert_int_equal(momento_config_set_batching(cfg, batch_n, 0, 64, 1024 * 1024),
                         MOMENTO_OK);
        /* Completions only: the requests behind a held one share a batch. */
        assert_int_equal(momento_config_set_batching_max_wait(cfg, 0), MOMENTO_OK);
    }
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    char id[32];
    snprintf(id, sizeof(id), "metrics-%d", ++client_id);
    tu_headers(f->server, c, id, headers, n_headers);
    return c;
}

static void assert_rec(const rec *x, const char *method, const char *cache, int error,
                       int grpc_status, uint32_t attempts)
{
    assert_int_equal(x->size, sizeof(momento_request_metrics));
    assert_string_equal(x->method, method);
    if (cache) {
        assert_true(x->has_cache);
        assert_string_equal(x->cache, cache);
    } else {
        assert_false(x->has_cache);
    }
    assert_int_equal(x->error, error);
    assert_int_equal(x->grpc_status, grpc_status);
    assert_int_equal(x->attempts, attempts);
    assert_true(x->latency_ns > 0);
    assert_true(x->result_matches);
}

static momento_request_options with(uint32_t timeout_ms, momento_cancel_token *t)
{
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = timeout_ms;
    o.cancel = t;
    return o;
}

/* Longer than any test: the server caps a delay at its call's deadline
 * (docs/protocol.md "Fault injection"), so a client with HELD_TIMEOUT_MS
 * sees a call so held end only by its cancel or the client's free. */
static const char *const hold_first_get[] = {"delay-rpcs", "get", "delay-ms", "600000",
                                             "delay-count", "1"};
static const char *const held_gets[] = {"delay-rpcs", "get", "delay-ms", "600000"};
#define HELD_TIMEOUT_MS ((uint32_t)TU_MS(30000))

/* Starts a get of "held" on `c` (a client with hold_first_get) that the
 * server holds until `*t` is cancelled, and waits until it does: while it
 * is in flight, a client batching from one RPC in flight queues every
 * other get, until its completion. */
static void hold_one(tu_fixture *f, momento_client *c, momento_cancel_token **t)
{
    assert_int_equal(momento_cancel_token_new(t), MOMENTO_OK);
    momento_request_options o = with(0, *t);
    uint64_t parked = momento_local_parked_calls(f->server);
    assert_int_equal(momento_get(c, "c", "held", 4, &o, cb, NULL), MOMENTO_OK);
    tu_wait_until(momento_local_parked_calls(f->server) > parked, 20000);
    assert_int_equal(momento_local_parked_calls(f->server), parked + 1);
}

/* ------------------------------------------------------------ tests */

static void test_setter_is_checked(void **state)
{
    (void)state;
    assert_int_equal(momento_config_set_metrics(NULL, hook, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_metrics(cfg, hook, &R), MOMENTO_OK);
    assert_int_equal(momento_config_set_metrics(cfg, NULL, NULL), MOMENTO_OK); /* off again */
    momento_config_free(cfg);
}

/* Each kind of request once: one hook call each, in callback order, with
 * its method, cache, status and sizes. */
static void test_one_call_per_request(void **state)
{
    tu_fixture *f = *state;
    reset();
    momento_client *c = hooked(f, 0, 0, NULL, 0);

    assert_int_equal(momento_set(c, "c", "k", 1, "value", 5, 0, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(1), 1);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(2), 2);
    assert_int_equal(momento_get(c, "c", "absent", 6, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(3), 3);
    assert_int_equal(momento_increment(c, "c", "n", 1, 5, 0, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(4), 4);
    assert_int_equal(momento_create_cache(c, "c2", NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(5), 5);
    assert_int_equal(momento_delete(c, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(6), 6);
    assert_in_order();

    assert_rec(&R.recs[0], "Set", "c", MOMENTO_OK, 0, 1);
    assert_true(R.recs[0].request_bytes >= 1 + 5); /* key and value at least */
    assert_rec(&R.recs[1], "Get", "c", MOMENTO_OK, 0, 1);
    assert_int_equal(R.recs[1].outcome, MOMENTO_OUTCOME_HIT);
    assert_true(R.recs[1].response_bytes >= 5);
    assert_int_equal(R.recs[1].flags, 0);
    assert_rec(&R.recs[2], "Get", "c", MOMENTO_OK, 0, 1);
    assert_int_equal(R.recs[2].outcome, MOMENTO_OUTCOME_MISS);
    assert_rec(&R.recs[3], "Increment", "c", MOMENTO_OK, 0, 1);
    assert_rec(&R.recs[4], "CreateCache", NULL, MOMENTO_OK, 0, 1); /* control plane */
    assert_rec(&R.recs[5], "Delete", "c", MOMENTO_OK, 0, 1);

    /* A blocking call is its async request: one call, before it returns. */
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "n", 1, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(hooks(), 7);
    assert_rec(&R.recs[6], "Get", "c", MOMENTO_OK, 0, 1);

    momento_client_free(c);
    assert_int_equal(hooks(), 7);
    pthread_mutex_lock(&R.lock);
    size_t calls = R.callbacks; /* the blocking call's is the library's own */
    pthread_mutex_unlock(&R.lock);
    assert_int_equal(calls, 6);
}

/* A client without the hook reports nothing, while one with it, on the
 * same server at the same time, reports each of its requests. */
static void test_no_hook_no_calls(void **state)
{
    tu_fixture *f = *state;
    reset();
    momento_client *c = hooked(f, 0, 0, NULL, 0);
    tu_counter plain;
    tu_counter_init(&plain);
    for (int i = 0; i < 20; i++) {
        /* f->client has no hook: its callbacks are counted apart. */
        assert_int_equal(momento_get(f->client, "c", "k", 1, NULL, tu_count_cb, &plain),
                         MOMENTO_OK);
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    }
    assert_int_equal(tu_counter_wait(&plain, 20, (int)TU_MS(10000)), 20);
    assert_int_equal(wait_callbacks(20), 20);
    tu_counter_destroy(&plain);
    assert_in_order();
    assert_int_equal(hooks(), 20);
    momento_client_free(c);
    assert_settled(20);
}

static void test_cache_not_found(void **state)
{
    tu_fixture *f = *state;
    reset();
    momento_client *c = hooked(f, 0, 0, NULL, 0);
    assert_int_equal(momento_get(c, "no-such-cache", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(1), 1);
    assert_in_order();
    assert_rec(&R.recs[0], "Get", "no-such-cache", MOMENTO_ERR_CACHE_NOT_FOUND, 5, 1);
    assert_int_equal(R.recs[0].outcome, MOMENTO_OUTCOME_ERROR);
    momento_client_free(c);
    assert_settled(1);
}

/* The first Get fails UNAVAILABLE, the retry succeeds: one call, two
 * attempts. */
static void test_retry_counts_attempts(void **state)
{
    tu_fixture *f = *state;
    reset();
    const char *h[] = {"return-error", "unavailable", "error-rpcs", "get", "error-count", "1"};
    momento_client *c = hooked(f, 0, 0, h, 3);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(1), 1);
    assert_in_order();
    assert_rec(&R.recs[0], "Get", "c", MOMENTO_OK, 0, 2);
    momento_client_free(c);
    assert_settled(1);
}

static void test_timeout(void **state)
{
    tu_fixture *f = *state;
    reset();
    const char *h[] = {"delay-rpcs", "get", "delay-ms", "5000"};
    momento_client *c = hooked(f, 0, 0, h, 2);
    momento_request_options o = with(100, NULL);
    assert_int_equal(momento_get(c, "c", "k", 1, &o, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(1), 1);
    assert_in_order();
    assert_rec(&R.recs[0], "Get", "c", MOMENTO_ERR_TIMEOUT, 4, 1);
    assert_true(R.recs[0].latency_ns >= 90u * 1000000u); /* it waited for its deadline */
    momento_client_free(c);
    assert_settled(1);
}

static void test_cancel(void **state)
{
    tu_fixture *f = *state;
    reset();
    /* Held until the cancel, however late that comes. */
    momento_client *c = hooked(f, HELD_TIMEOUT_MS, 0, held_gets, 2);
    momento_cancel_token *t;
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    momento_request_options o = with(0, t);
    assert_int_equal(momento_get(c, "c", "k", 1, &o, cb, NULL), MOMENTO_OK);
    /* Refused, already cancelled below: no call for it. */
    usleep(50 * 1000);
    assert_int_equal(hooks(), 0);
    momento_cancel(t);
    assert_int_equal(momento_get(c, "c", "k", 1, &o, cb, NULL), MOMENTO_ERR_CANCELLED);
    assert_int_equal(wait_callbacks(1), 1);
    assert_in_order();
    assert_int_equal(R.recs[0].error, MOMENTO_ERR_CANCELLED);
    assert_string_equal(R.recs[0].method, "Get");
    assert_true(R.recs[0].latency_ns >= 40u * 1000000u);
    momento_cancel_token_free(t);
    momento_client_free(c);
    assert_settled(1);
}

/* Freed with requests held by the server: each still reported, once,
 * before momento_client_free() returns; nothing afterwards. */
static void test_free_with_requests_in_flight(void **state)
{
    tu_fixture *f = *state;
    reset();
    /* Held until the free, however late that comes. */
    momento_client *c = hooked(f, HELD_TIMEOUT_MS, 0, held_gets, 2);
    for (int i = 0; i < 8; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    usleep(50 * 1000);
    assert_int_equal(hooks(), 0);
    momento_client_free(c);
    assert_int_equal(hooks(), 8);
    assert_int_equal(wait_callbacks(8), 8);
    assert_in_order();
    for (int i = 0; i < 8; i++) {
        assert_string_equal(R.recs[i].method, "Get");
        assert_int_not_equal(R.recs[i].error, MOMENTO_OK);
        assert_int_equal(R.recs[i].error, R.recs[0].error);
    }
    /* Nothing after the free has returned: the one check here that a
     * sleep makes, since what it checks is the free itself. */
    usleep(30 * 1000);
    assert_settled(8);
}

/* Three waiters on one Get: three calls, each a "Get" flagged coalesced
 * (COALESCED only, though their RPC was queued by batching); the one that
 * leaves at its own deadline made no attempt of its own. The shared RPC is
 * not reported. It waits in the batching queue behind a get the server
 * holds until the test cancels it, so the 50 ms waiter leaves while the
 * others still wait, on any machine, and the others then get the answer. */
static void test_coalesced_waiters(void **state)
{
    tu_fixture *f = *state;
    reset();
    momento_client *c = hooked(f, HELD_TIMEOUT_MS, 1, hold_first_get, 3);
    momento_cancel_token *t;
    hold_one(f, c, &t);
    momento_coalescer *co = tu_coalescer(c);
    momento_request_options shorter = with(50, NULL);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &shorter, cb, NULL), MOMENTO_OK);
    momento_coalescer_stats k = tu_coalescer_stats(co);
    assert_int_equal(k.get_coalesced, 2); /* the test's premise: one RPC for three */
    assert_int_equal(momento__batcher_queued(c), 1);

    /* The 50 ms waiter's deadline, while the shared RPC is still queued. */
    assert_int_equal(wait_callbacks(1), 1);
    assert_in_order();
    assert_rec(&R.recs[0], "Get", "c", MOMENTO_ERR_TIMEOUT, -1, 0);
    assert_int_equal(R.recs[0].flags, MOMENTO_METRICS_COALESCED);
    assert_int_equal(momento__batcher_queued(c), 1);

    /* The held get's completion sends the queue: its RPC, then the shared
     * one, answered. */
    momento_cancel(t);
    assert_int_equal(wait_callbacks(4), 4);
    assert_in_order();
    int cancelled = 0;
    for (int i = 1; i < 4; i++) {
        if (R.recs[i].error == MOMENTO_ERR_CANCELLED) { /* the held get */
            cancelled++;
            assert_string_equal(R.recs[i].method, "Get");
            assert_int_equal(R.recs[i].flags, 0);
            continue;
        }
        assert_rec(&R.recs[i], "Get", "c", MOMENTO_OK, 0, 1);
        assert_int_equal(R.recs[i].flags, MOMENTO_METRICS_COALESCED);
        assert_int_equal(R.recs[i].request_bytes, 0);
        /* Submitted before the 50 ms waiter, answered after it: its
         * latency runs from its own submit to its own callback. */
        assert_true(R.recs[i].latency_ns >= R.recs[0].latency_ns);
    }
    assert_int_equal(cancelled, 1);
    momento_cancel_token_free(t);
    momento_coalescer_free(co);
    momento_client_free(c);
    assert_settled(4);
}

/* With batching from one RPC in flight and the first Get held (until the
 * test cancels it), the next four queue and leave as one GetBatch when it
 * completes: five calls, all "Get", the four flagged batched; no
 * "GetBatch". */
static void test_batched_requests(void **state)
{
    tu_fixture *f = *state;
    reset();
    momento_client *c = hooked(f, HELD_TIMEOUT_MS, 1, hold_first_get, 3);
    momento_cancel_token *t;
    hold_one(f, c, &t);
    for (int i = 0; i < 4; i++) {
        char key[8];
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(momento_get(c, "c", key, strlen(key), NULL, cb, NULL), MOMENTO_OK);
    }
    assert_int_equal(momento__batcher_queued(c), 4);
    assert_int_equal(hooks(), 0);
    momento_cancel(t);
    assert_int_equal(wait_callbacks(5), 5);
    assert_in_order();
    momento_client_batching_stats k;
    assert_int_equal(momento_client_batching_stats_get(c, &k, sizeof(k)), MOMENTO_OK);
    assert_int_equal(k.batches, 1); /* the test's premise */

    /* The held get, its own RPC: called back first, its completion is
     * what sent the queue. */
    assert_string_equal(R.recs[0].method, "Get");
    assert_int_equal(R.recs[0].error, MOMENTO_ERR_CANCELLED);
    assert_int_equal(R.recs[0].flags, 0);
    for (int i = 1; i < 5; i++) {
        assert_rec(&R.recs[i], "Get", "c", MOMENTO_OK, 0, 1);
        assert_int_equal(R.recs[i].flags, MOMENTO_METRICS_BATCHED);
        assert_int_equal(R.recs[i].request_bytes, 0);
    }
    momento_cancel_token_free(t);
    momento_client_free(c);
    assert_settled(5);
}

/* A listing of three pages is one request. */
static void test_paged_listing_is_one_request(void **state)
{
    (void)state;
    reset();
    momento_local_options *o = tu_options(NULL);
    momento_local_options_set_list_page_size(o, 1);
    momento_local_options_add_cache(o, "a");
    momento_local_options_add_cache(o, "b");
    momento_local_options_add_cache(o, "c");
    tu_fixture f = {.server = tu_server(o)};
    momento_local_options_free(o);
    momento_client *c = hooked(&f, 0, 0, NULL, 0);
    assert_int_equal(momento_list_caches(c, NULL, cb, NULL), MOMENTO_OK);
    assert_int_equal(wait_callbacks(1), 1);
    assert_in_order();
    assert_true(momento_local_rpc_count(f.server, "ListCaches", 0) >= 3); /* the premise */
    assert_rec(&R.recs[0], "ListCaches", NULL, MOMENTO_OK, 0, 1);
    momento_client_free(c);
    assert_settled(1);
    momento_local_stop(f.server);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setter_is_checked),
        cmocka_unit_test_setup_teardown(test_one_call_per_request, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_no_hook_no_calls, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cache_not_found, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_retry_counts_attempts, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_timeout, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cancel, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_free_with_requests_in_flight, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_coalesced_waiters, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_batched_requests, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test(test_paged_listing_is_one_request),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(R.recs);
    return rc;
}
