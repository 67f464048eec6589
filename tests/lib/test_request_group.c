/* Request groups against the local server: a group counts its own
 * requests as momento_client_in_flight() counts all of them - plain,
 * coalesced waiters, batched and queued ones, a listing, blocking calls,
 * dispatched callbacks - and its wait ends when they are done, whatever
 * other groups still hold. Requests are held on the server by
 * momento-local's fault injection (delay-ms, docs/server.md) with a delay
 * and a deadline far past the test's own timeout, so a held request ends
 * only when the test cancels it. */
#include "momento/coalescer.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer than any test's timeout (300 s): a held request never ends alone. */
#define HOLD_MS 600000u
#define HOLD_MS_STR "600000"
#define N 20

/* A client whose own deadline outlasts the hold. */
static momento_client *patient(momento_config *cfg)
{
    momento_config *own = NULL;
    if (!cfg) {
        assert_int_equal(momento_config_new(&own), MOMENTO_OK);
        cfg = own;
    }
    assert_int_equal(momento_config_set_timeout_ms(cfg, HOLD_MS + 60000u), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(own);
    return c;
}

/* The headers that hold a request's `rpc` on the server. */
static const momento_header hold_get[] = {{"delay-rpcs", "get"}, {"delay-ms", HOLD_MS_STR}};
static const momento_header hold_list[] = {{"delay-rpcs", "list-caches"},
                                           {"delay-ms", HOLD_MS_STR}};

/* Options with the group, a token and (optionally) the holding headers. */
static momento_request_options opts_for(momento_request_group *g, momento_cancel_token *t,
                                        const momento_header *hold)
{
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.group = g;
    o.cancel = t;
    o.timeout_ms = HOLD_MS + 60000u;
    if (hold) {
        o.headers = hold;
        o.n_headers = 2;
    }
    return o;
}

/* Two threads on one client, each waiting for its own group: B's wait ends
 * while A's requests are still held, and A's ends once they are cancelled. */
typedef struct side {
    momento_client *client;
    momento_request_group *group;
    momento_cancel_token *token;
    tu_counter k;
    int wait_rc;
    size_t other_in_flight; /* B: A's group, read as B's wait returned */
    momento_request_group *other;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool submitted;
} side;

static void *side_a(void *arg)
{
    side *a = arg;
    momento_request_options o = opts_for(a->group, a->token, hold_get);
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(a->client, "c", "held", 4, &o, tu_count_cb, &a->k),
                         MOMENTO_OK);
    pthread_mutex_lock(&a->lock);
    a->submitted = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    a->wait_rc = momento_request_group_wait(a->group, (uint32_t)TU_MS(60000));
    return NULL;
}

static void *side_b(void *arg)
{
    side *b = arg;
    momento_request_options o = opts_for(b->group, NULL, NULL);
    for (int i = 0; i < N; i++) {
        assert_int_equal(momento_set(b->client, "c", "k", 1, "v", 1, 0, &o, tu_count_cb, &b->k),
                         MOMENTO_OK);
        assert_int_equal(momento_get(b->client, "c", "k", 1, &o, tu_count_cb, &b->k), MOMENTO_OK);
    }
    b->wait_rc = momento_request_group_wait(b->group, (uint32_t)TU_MS(20000));
    b->other_in_flight = momento_request_group_in_flight(b->other);
    return NULL;
}

static void test_two_threads_two_groups(void **state)
{
    (void)state;
    momento_client *c = patient(NULL);
    side a = {.client = c}, b = {.client = c};
    assert_int_equal(momento_request_group_new(c, &a.group), MOMENTO_OK);
    assert_int_equal(momento_request_group_new(c, &b.group), MOMENTO_OK);
    assert_int_equal(momento_cancel_token_new(&a.token), MOMENTO_OK);
    b.other = a.group;
    tu_counter_init(&a.k);
    tu_counter_init(&b.k);
    pthread_mutex_init(&a.lock, NULL);
    pthread_cond_init(&a.cond, NULL);

    pthread_t ta, tb;
    pthread_create(&ta, NULL, side_a, &a);
    pthread_mutex_lock(&a.lock);
    while (!a.submitted)
        pthread_cond_wait(&a.cond, &a.lock);
    pthread_mutex_unlock(&a.lock);
    pthread_create(&tb, NULL, side_b, &b);
    pthread_join(tb, NULL);

    /* B's requests are done, and only B's: A's are all still held. */
    assert_int_equal(b.wait_rc, MOMENTO_OK);
    assert_int_equal(b.k.total, 2 * N);
    assert_int_equal(b.k.ok, 2 * N);
    assert_int_equal(momento_request_group_in_flight(b.group), 0);
    assert_int_equal(b.other_in_flight, N);
    assert_int_equal(momento_request_group_in_flight(a.group), N);
    /* The client counts both (B's last may still be leaving its count:
     * a group gives a request back just before its client does). */
    assert_true(momento_client_in_flight(c) >= N);
    assert_int_equal(momento_client_wait_idle(c, 0), MOMENTO_ERR_TIMEOUT);

    momento_cancel(a.token);
    pthread_join(ta, NULL);
    assert_int_equal(a.wait_rc, MOMENTO_OK);
    assert_int_equal(momento_request_group_in_flight(a.group), 0);
    assert_int_equal(a.k.total, N);
    assert_int_equal(tu_counter_errors(&a.k, MOMENTO_ERR_CANCELLED), N);

    momento_cancel_token_free(a.token);
    momento_request_group_free(a.group);
    momento_request_group_free(b.group);
    pthread_cond_destroy(&a.cond);
    pthread_mutex_destroy(&a.lock);
    momento_client_free(c);
    tu_counter_destroy(&a.k);
    tu_counter_destroy(&b.k);
}

/* Waits for `g` to be done after `t` is cancelled: every one of its `n`
 * requests ended, cancelled. */
static void cancel_and_drain(momento_request_group *g, momento_cancel_token *t, tu_counter *k,
                             size_t n)
{
    assert_int_equal(momento_request_group_wait(g, 0), MOMENTO_ERR_TIMEOUT);
    momento_cancel(t);
    assert_int_equal(momento_request_group_wait(g, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(momento_request_group_in_flight(g), 0);
    assert_int_equal(k->total, n);
    assert_int_equal(tu_counter_errors(k, MOMENTO_ERR_CANCELLED), n);
}

/* What most tests hold: a patient client, one group, one cancel token
 * that ends what the group holds, and a counter of callbacks. */
typedef struct held_set {
    momento_client *c;
    momento_request_group *g;
    momento_cancel_token *t;
    tu_counter k;
} held_set;

static void held_begin(held_set *h, momento_config *cfg)
{
    h->c = patient(cfg);
    assert_int_equal(momento_request_group_new(h->c, &h->g), MOMENTO_OK);
    assert_int_equal(momento_cancel_token_new(&h->t), MOMENTO_OK);
    tu_counter_init(&h->k);
}

/* Frees what held_begin() made; the client last, after the group. */
static void held_end(held_set *h)
{
    momento_cancel_token_free(h->t);
    momento_request_group_free(h->g);
    momento_client_free(h->c);
    tu_counter_destroy(&h->k);
}

/* 100 coalesced waiters on one RPC count 100 in the group. */
static void test_coalesced_waiters_counted(void **state)
{
    (void)state;
    held_set h;
    held_begin(&h, NULL);
    /* Client-wide: a request with headers of its own is never coalesced. */
    momento__client_add_header(h.c, "delay-rpcs", "get");
    momento__client_add_header(h.c, "delay-ms", HOLD_MS_STR);
    momento_coalescer *co = tu_coalescer(h.c);
    momento_request_options o = opts_for(h.g, h.t, NULL);
    for (int i = 0; i < 100; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "hot", 3, &o, tu_count_cb, &h.k),
                         MOMENTO_OK);
    momento_coalescer_stats s = tu_coalescer_stats(co);
    assert_int_equal(s.get_coalesced, 99); /* they did share one RPC */
    assert_int_equal(momento_request_group_in_flight(h.g), 100);
    cancel_and_drain(h.g, h.t, &h.k, 100);
    momento_coalescer_free(co);
    held_end(&h);
}

/* Requests waiting in the batching queue, and behind the cap on requests
 * in flight, count from their call's return. */
static void test_batched_and_capped_counted(void **state)
{
    (void)state;
    for (int capped = 0; capped < 2; capped++) {
        momento_config *cfg = tu_config();
        if (capped)
            assert_int_equal(momento_config_set_max_concurrent_requests(cfg, 1), MOMENTO_OK);
        else
            assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1024 * 1024), MOMENTO_OK);
        held_set h;
        held_begin(&h, cfg);
        momento_config_free(cfg);
        momento__client_add_header(h.c, "delay-rpcs", "get get-batch");
        momento__client_add_header(h.c, "delay-ms", HOLD_MS_STR);
        momento_request_options o = opts_for(h.g, h.t, NULL);
        for (int i = 0; i < N; i++) {
            char key[8];
            snprintf(key, sizeof(key), "k%d", i);
            assert_int_equal(momento_get(h.c, "c", MOMENTO_STR(key), &o, tu_count_cb, &h.k),
                             MOMENTO_OK);
        }
        if (!capped) {
            momento_client_batching_stats s;
            assert_int_equal(momento_client_batching_stats_get(h.c, &s, sizeof(s)), MOMENTO_OK);
            assert_int_equal(s.queued, N - 1); /* behind the first, held */
        }
        assert_int_equal(momento_request_group_in_flight(h.g), N);
        cancel_and_drain(h.g, h.t, &h.k, N);
        held_end(&h);
    }
}

/* A listing is one request, however many pages; a blocking call counts
 * until it has its result. */
typedef struct blocked {
    momento_client *client;
    momento_request_options opts;
    int rc;
} blocked;

static void *get_sync_thread(void *arg)
{
    blocked *b = arg;
    momento_result *r = NULL;
    b->rc = momento_get_sync(b->client, "c", "k", 1, &b->opts, &r);
    momento_result_free(r);
    return NULL;
}

static void test_listing_and_blocking_counted(void **state)
{
    (void)state;
    held_set h;
    held_begin(&h, NULL);
    momento_request_options list = opts_for(h.g, h.t, hold_list);
    assert_int_equal(momento_list_caches(h.c, &list, tu_count_cb, &h.k), MOMENTO_OK);
    assert_int_equal(momento_request_group_in_flight(h.g), 1);

    blocked b = {.client = h.c, .opts = opts_for(h.g, h.t, hold_get)};
    pthread_t th;
    pthread_create(&th, NULL, get_sync_thread, &b);
    tu_wait_until(momento_request_group_in_flight(h.g) == 2, 20000);
    assert_int_equal(momento_request_group_in_flight(h.g), 2);
    momento_cancel(h.t);
    pthread_join(th, NULL);
    assert_int_equal(b.rc, MOMENTO_ERR_CANCELLED);
    assert_int_equal(momento_request_group_wait(h.g, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(h.k.total, 1);
    assert_int_equal(tu_counter_errors(&h.k, MOMENTO_ERR_CANCELLED), 1);
    /* A blocking call done is counted no more. */
    momento_request_options plain = opts_for(h.g, NULL, NULL);
    assert_int_equal(momento_get_sync(h.c, "c", "k", 1, &plain, NULL), MOMENTO_OK);
    assert_int_equal(momento_request_group_in_flight(h.g), 0);
    held_end(&h);
}

/* The application drops its group while requests hold it: their callbacks
 * run, and the last frees the group (ASan and valgrind check that it is
 * freed, once). */
static void test_freed_with_requests_in_flight(void **state)
{
    (void)state;
    momento_client *c = patient(NULL);
    momento_request_group *g;
    momento_cancel_token *t;
    assert_int_equal(momento_request_group_new(c, &g), MOMENTO_OK);
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    tu_counter k;
    tu_counter_init(&k);
    momento_request_options o = opts_for(g, t, hold_get);
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_count_cb, &k), MOMENTO_OK);
    momento_request_group_free(g);
    momento_cancel(t);
    assert_int_equal(momento_client_wait_idle(c, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), N);

    /* Dropped again with requests in flight, which the client's free ends. */
    assert_int_equal(momento_request_group_new(c, &g), MOMENTO_OK);
    o = opts_for(g, NULL, hold_get);
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_count_cb, &k), MOMENTO_OK);
    momento_request_group_free(g);
    momento_client_free(c);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), 2 * N);

    /* A group may also go after its client. */
    c = tu_client(tu_fx.server, NULL);
    assert_int_equal(momento_request_group_new(c, &g), MOMENTO_OK);
    momento_client_free(c);
    assert_int_equal(momento_request_group_in_flight(g), 0);
    momento_request_group_free(g);
    momento_cancel_token_free(t);
    tu_counter_destroy(&k);
}

/* Dispatch mode: the wait runs the queued callbacks on the waiting thread,
 * and ends when the group's have run, another group's still held. */
typedef struct on_thread {
    pthread_t expect;
    int n, wrong_thread;
} on_thread;

static void on_thread_cb(const momento_result *r, void *ud)
{
    (void)r;
    on_thread *s = ud;
    s->n++;
    s->wrong_thread += !pthread_equal(pthread_self(), s->expect);
}

static void test_dispatch_mode(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    momento_client *c = patient(cfg);
    momento_config_free(cfg);
    momento_request_group *mine, *held;
    momento_cancel_token *t;
    assert_int_equal(momento_request_group_new(c, &mine), MOMENTO_OK);
    assert_int_equal(momento_request_group_new(c, &held), MOMENTO_OK);
    assert_int_equal(momento_cancel_token_new(&t), MOMENTO_OK);
    on_thread s = {.expect = pthread_self()}, sh = {.expect = pthread_self()};
    momento_request_options oh = opts_for(held, t, hold_get);
    assert_int_equal(momento_get(c, "c", "k", 1, &oh, on_thread_cb, &sh), MOMENTO_OK);
    momento_request_options o = opts_for(mine, NULL, NULL);
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_set(c, "c", "k", 1, "v", 1, 0, &o, on_thread_cb, &s), MOMENTO_OK);
    assert_int_equal(momento_request_group_wait(mine, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(s.n, N);
    assert_int_equal(s.wrong_thread, 0);
    assert_int_equal(momento_request_group_in_flight(held), 1);
    assert_int_equal(sh.n, 0);
    momento_cancel(t);
    assert_int_equal(momento_request_group_wait(held, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(sh.n, 1);
    assert_int_equal(sh.wrong_thread, 0);
    momento_cancel_token_free(t);
    momento_request_group_free(mine);
    momento_request_group_free(held);
    momento_client_free(c);
}

static int deadlock_rc;

static void wait_from_callback(const momento_result *r, void *ud)
{
    (void)r;
    deadlock_rc = momento_request_group_wait(ud, 10);
}

/* Bad arguments, a group of another client, a wait where it would
 * deadlock: each refused with its code, nothing counted. */
static void test_refusals(void **state)
{
    (void)state;
    momento_client *c = tu_client(tu_fx.server, NULL);
    momento_client *other = tu_client(tu_fx.server, NULL);
    momento_request_group *g, *theirs;
    assert_int_equal(momento_request_group_new(NULL, &g), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_request_group_new(c, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_request_group_wait(NULL, 10), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_request_group_in_flight(NULL), 0);
    momento_request_group_free(NULL);
    assert_int_equal(momento_request_group_new(c, &g), MOMENTO_OK);
    assert_int_equal(momento_request_group_new(other, &theirs), MOMENTO_OK);
    assert_int_equal(momento_request_group_wait(g, 86400001u), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_request_group_wait(g, 0), MOMENTO_OK); /* empty: at once */

    momento_request_options o = opts_for(theirs, NULL, NULL);
    assert_int_equal(momento_get(c, "c", "k", 1, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "another client"));
    momento_coalescer *co = tu_coalescer(c);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "another client"));
    momento_result *r = NULL;
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, &o, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_result_message(r), "another client"));
    momento_result_free(r);
    assert_int_equal(momento_request_group_in_flight(theirs), 0);
    assert_int_equal(momento_client_in_flight(c), 0);

    /* A request refused for another reason is not counted either. */
    o = opts_for(g, NULL, NULL);
    assert_int_equal(momento_get(c, "c", NULL, 1, &o, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_request_group_in_flight(g), 0);

    /* From one of the client's callbacks: its thread ends the group's
     * requests, so it refuses. */
    assert_int_equal(momento_get(c, "c", "k", 1, &o, wait_from_callback, g), MOMENTO_OK);
    assert_int_equal(momento_request_group_wait(g, (uint32_t)TU_MS(20000)), MOMENTO_OK);
    assert_int_equal(deadlock_rc, MOMENTO_ERR_WOULD_DEADLOCK);

    momento_coalescer_free(co);
    momento_request_group_free(g);
    momento_request_group_free(theirs);
    momento_client_free(other);
    momento_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_threads_two_groups),
        cmocka_unit_test(test_coalesced_waiters_counted),
        cmocka_unit_test(test_batched_and_capped_counted),
        cmocka_unit_test(test_listing_and_blocking_counted),
        cmocka_unit_test(test_freed_with_requests_in_flight),
        cmocka_unit_test(test_dispatch_mode),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
