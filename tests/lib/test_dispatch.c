/* Dispatch mode against the local server: callbacks wait for
 * momento_client_dispatch() and run on its thread, the eventfd says when
 * there are some, and every guarantee of the default mode holds - one
 * callback per request through timeouts, cancels, coalescing and the
 * client's free (also from a dispatched callback) - with blocking calls
 * and topic events too. */
#include "momento/coalescer.h"
#include "momento/topics.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static momento_client *dispatch_client(void)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000));
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    return c;
}

static bool readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Records callbacks: how many, which errors, on which thread. */
typedef struct rec {
    int n;
    int ok, timeouts, cancels, hits;
    bool wrong_thread;
    pthread_t expect;
    momento_client *free_me; /* freed from the first callback, if set */
} rec;

static void rec_cb(const momento_result *r, void *ud)
{
    rec *k = ud;
    k->n++;
    if (!pthread_equal(pthread_self(), k->expect))
        k->wrong_thread = true;
    int e = momento_result_error(r);
    k->ok += e == MOMENTO_OK;
    k->timeouts += e == MOMENTO_ERR_TIMEOUT;
    k->cancels += e == MOMENTO_ERR_CANCELLED;
    k->hits += momento_result_is_hit(r);
    if (k->free_me) {
        momento_client *c = k->free_me;
        k->free_me = NULL;
        momento_client_free(c);
    }
}

/* Dispatches until `k` has seen `n` callbacks or `ms` passed. */
static void dispatch_until(momento_client *c, rec *k, int n, int ms)
{
    int64_t until = tu_now_ms() + TU_MS(ms);
    while (k->n < n && tu_now_ms() < until) {
        if (readable(momento_client_dispatch_fd(c), 50))
            assert_true(momento_client_dispatch(c, 0) >= 0);
    }
}

static void test_queued_until_dispatched(void **state)
{
    (void)state;
    momento_client *c = dispatch_client();
    int fd = momento_client_dispatch_fd(c);
    assert_true(fd >= 0);
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    rec k = {.expect = pthread_self()};
    momento_local_reset_stats(tu_fx.server);
    for (int i = 0; i < 10; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, rec_cb, &k), MOMENTO_OK);
    assert_true(readable(fd, (int)TU_MS(20000)));
    /* Answered, but nothing runs until the application dispatches. */
    tu_wait_until(momento_local_rpc_count(tu_fx.server, "Get", 0) >= 10, 20000);
    /* All ten reach the queue (a fixed 50 ms was too short under valgrind
     * with another test beside it), and none has run meanwhile. */
    tu_wait_until(momento__dispatch_queued(c) >= 10, 20000);
    assert_int_equal(momento__dispatch_queued(c), 10);
    assert_int_equal(k.n, 0);
    assert_int_equal(momento_client_in_flight(c), 10);
    /* At most `max`: the fd stays readable for the rest. */
    assert_int_equal(momento_client_dispatch(c, 4), 4);
    assert_int_equal(k.n, 4);
    assert_true(readable(fd, 0));
    assert_int_equal(momento_client_dispatch(c, 0), 6);
    assert_int_equal(k.n, 10);
    assert_int_equal(k.hits, 10);
    assert_false(k.wrong_thread);
    assert_int_equal(momento_client_in_flight(c), 0);
    assert_false(readable(fd, 0));
    assert_int_equal(momento_client_dispatch(c, 0), 0);
    momento_client_free(c);
}

static void test_refusals(void **state)
{
    (void)state;
    momento_client *plain = tu_client(tu_fx.server, NULL);
    assert_int_equal(momento_client_dispatch_fd(plain), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_client_dispatch(plain, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_client_free(plain);
    assert_int_equal(momento_client_dispatch_fd(NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_client_dispatch(NULL, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_config *cfg = tu_config();
    /* Off unless asked, from a config as from none (a config is not
     * zeroed memory: every field needs its default). */
    momento_client *from_cfg = tu_client(tu_fx.server, cfg);
    assert_int_equal(momento_client_dispatch_fd(from_cfg), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_client_free(from_cfg);
    assert_int_equal(momento_config_set_dispatch(cfg, 2), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_dispatch(NULL, 1), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_config_free(cfg);
}

/* A dispatched callback that makes a blocking call on its own client. */
typedef struct nested {
    rec k;
    momento_client *c;
    int rc;
    bool hit;
} nested;

static void blocking_in_callback(const momento_result *r, void *ud)
{
    nested *x = ud;
    momento_result *got = NULL;
    x->rc = momento_get_sync(x->c, "c", "b", 1, NULL, &got);
    x->hit = got && momento_result_is_hit(got);
    momento_result_free(got);
    rec_cb(r, &x->k);
}

static void test_blocking_calls_need_no_dispatch(void **state)
{
    (void)state;
    momento_client *c = dispatch_client();
    momento_coalescer *co = tu_coalescer(c);
    assert_int_equal(momento_set_sync(c, "c", "b", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "b", 1, NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(momento_coalescing_get_sync(co, "c", "b", 1, NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(momento_list_caches_sync(c, NULL, &r), MOMENTO_OK);
    momento_result_free(r);
    assert_false(readable(momento_client_dispatch_fd(c), 0));
    /* Inside a dispatched callback too: it runs on the dispatching thread,
     * not the completion thread, and the blocking call's own answer never
     * waits in the dispatch queue (docs/threading.md). */
    nested x = {.k = {.expect = pthread_self()}, .c = c, .rc = 1};
    assert_int_equal(momento_get(c, "c", "b", 1, NULL, blocking_in_callback, &x), MOMENTO_OK);
    dispatch_until(c, &x.k, 1, 20000);
    assert_int_equal(x.k.n, 1);
    assert_int_equal(x.rc, MOMENTO_OK);
    assert_true(x.hit);
    assert_false(x.k.wrong_thread);
    momento_coalescer_free(co);
    momento_client_free(c);
}

static void test_endings(void **state)
{
    (void)state;
    momento_client *c = dispatch_client();
    /* The gets of t, x and f are held until their deadline, cancel or the
     * client's free, whichever the test makes come (issue 46: a 300 ms
     * hold let a slow cancel or free meet an answer instead); those of w
     * are answered at once. The deadlines of x and f are 30 s: the server
     * caps a hold at the call's deadline. */
    momento__client_add_header(c, "request-id", "dispatch-endings");
    momento__client_add_header(c, "delay-rpcs", "get");
    momento__client_add_header(c, "delay-ms", "600000");
    momento__client_add_header(c, "delay-keys", "t x f");
    momento_coalescer *co = tu_coalescer(c);
    rec k = {.expect = pthread_self()};
    momento_request_options quick = MOMENTO_REQUEST_OPTIONS_INIT;
    quick.timeout_ms = 50;
    momento_cancel_token *tok;
    momento_cancel_token_new(&tok);
    momento_request_options tokened = MOMENTO_REQUEST_OPTIONS_INIT;
    tokened.cancel = tok;
    tokened.timeout_ms = (uint32_t)TU_MS(30000);
    assert_int_equal(momento_get(c, "c", "t", 1, &quick, rec_cb, &k), MOMENTO_OK);
    assert_int_equal(momento_get(c, "c", "x", 1, &tokened, rec_cb, &k), MOMENTO_OK);
    /* Three coalesced waiters on one RPC: three callbacks. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(momento_coalescing_get(co, "c", "w", 1, NULL, rec_cb, &k), MOMENTO_OK);
    momento_cancel(tok);
    dispatch_until(c, &k, 5, 20000);
    assert_int_equal(k.n, 5);
    assert_int_equal(k.timeouts, 1);
    assert_int_equal(k.cancels, 1);
    assert_int_equal(k.ok, 3);
    assert_false(k.wrong_thread);
    momento_cancel_token_free(tok);

    /* Freed with requests in flight and callbacks queued: the free runs
     * them all, once each, on its own thread. */
    rec f = {.expect = pthread_self()};
    momento_request_options held = MOMENTO_REQUEST_OPTIONS_INIT;
    held.timeout_ms = (uint32_t)TU_MS(30000);
    for (int i = 0; i < 4; i++)
        assert_int_equal(momento_get(c, "c", "f", 1, &held, rec_cb, &f), MOMENTO_OK);
    momento_coalescer_free(co);
    momento_client_free(c);
    assert_int_equal(f.n, 4);
    assert_int_equal(f.cancels, 4);
    assert_false(f.wrong_thread);
}

/* Callbacks run in the order their results were queued, also when one of
 * them dispatches (the nested run goes on where its caller was), and each
 * sees its own value: the queue keeps results in entries it reuses, so a
 * stale or mixed-up copy would show here. Values of 1,500 bytes and more
 * take entries too large to reuse, the others reusable ones. */
#define ORDER_N 20
typedef struct order_rec {
    momento_client *c;
    int n, seen[ORDER_N + 4];
    int round;
    int nested_ran;
    bool wrong_value;
} order_rec;

static size_t order_value(int round, int i, char *buf)
{
    size_t len = (size_t)(i % 4 == 3 ? 1500 + i : 10 + i * 7);
    for (size_t j = 0; j < len; j++)
        buf[j] = (char)('a' + (int)((j + (size_t)i + (size_t)round * 5) % 26));
    return len;
}

typedef struct order_arg {
    order_rec *k;
    int i;
} order_arg;

static void order_cb(const momento_result *r, void *ud)
{
    order_arg *a = ud;
    order_rec *k = a->k;
    if (k->n < ORDER_N + 4)
        k->seen[k->n] = a->i;
    k->n++;
    char want[2048];
    size_t len = order_value(k->round, a->i, want);
    size_t got_len = 0;
    const void *got = momento_result_value(r, &got_len);
    if (!momento_result_is_hit(r) || got_len != len || memcmp(got, want, len) != 0)
        k->wrong_value = true;
    if (a->i == 4)
        k->nested_ran = momento_client_dispatch(k->c, 2);
}

static void test_order_nested_and_reused_entries(void **state)
{
    (void)state;
    momento_client *c = dispatch_client();
    char key[16], value[2048];
    order_arg args[ORDER_N];
    order_rec k = {.c = c};
    for (int round = 0; round < 3; round++) {
        memset(&k, 0, sizeof(k));
        k.c = c;
        k.round = round;
        for (int i = 0; i < ORDER_N; i++) {
            int kl = snprintf(key, sizeof(key), "o%d", i);
            size_t vl = order_value(round, i, value);
            assert_int_equal(momento_set_sync(c, "c", key, (size_t)kl, value, vl, 0, NULL, NULL),
                             MOMENTO_OK);
        }
        /* One at a time, so the queue's order is the order of issue. */
        for (int i = 0; i < ORDER_N; i++) {
            int kl = snprintf(key, sizeof(key), "o%d", i);
            args[i] = (order_arg){&k, i};
            assert_int_equal(momento_get(c, "c", key, (size_t)kl, NULL, order_cb, &args[i]),
                             MOMENTO_OK);
            tu_wait_until(momento__dispatch_queued(c) >= (size_t)i + 1, 20000);
            assert_int_equal(momento__dispatch_queued(c), (size_t)i + 1);
        }
        /* Ten of the outer run's own; the fifth runs two more inside. */
        assert_int_equal(momento_client_dispatch(c, 10), 10);
        assert_int_equal(k.nested_ran, 2);
        assert_int_equal(k.n, 12);
        assert_true(readable(momento_client_dispatch_fd(c), 0));
        assert_int_equal(momento_client_dispatch(c, 0), ORDER_N - 12);
        assert_int_equal(k.n, ORDER_N);
        for (int i = 0; i < ORDER_N; i++)
            assert_int_equal(k.seen[i], i);
        assert_false(k.wrong_value);
        assert_int_equal(momento__dispatch_queued(c), 0);
        assert_int_equal(momento_client_in_flight(c), 0);
    }
    momento_client_free(c);
}

/* A batch's answer and a coalesced read's are delivered whole on the
 * dispatching thread: one queued entry per RPC, not one per request, and
 * their requests called back there, each once, with its own value. A
 * blocking call from that same thread meanwhile goes alone - batched or
 * coalesced it would wait on an answer that only this thread can run. */
#define SHARED_KEYS 40
#define SHARED_HOT 10
typedef struct shared_arg {
    rec *k;
    int i; /* -1: the hot key */
    bool wrong_value;
} shared_arg;

static void shared_cb(const momento_result *r, void *ud)
{
    shared_arg *a = ud;
    char want[32];
    int wl = a->i < 0 ? snprintf(want, sizeof(want), "hot") : snprintf(want, sizeof(want), "v%d", a->i);
    size_t len = 0;
    const void *got = momento_result_value(r, &len);
    if (!momento_result_is_hit(r) || len != (size_t)wl || memcmp(got, want, len) != 0)
        a->wrong_value = true;
    rec_cb(r, a->k);
}

static void test_shared_answers_delivered_whole(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000));
    /* Queue whenever one RPC is in flight: the first get goes alone, the
     * rest leave together when it ends. */
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1u << 20), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    momento_coalescer *co = tu_coalescer(c);
    char key[16], value[16];
    for (int i = 0; i < SHARED_KEYS; i++) {
        int kl = snprintf(key, sizeof(key), "s%d", i);
        int vl = snprintf(value, sizeof(value), "v%d", i);
        assert_int_equal(momento_set_sync(c, "c", key, (size_t)kl, value, (size_t)vl, 0, NULL, NULL),
                         MOMENTO_OK);
    }
    assert_int_equal(momento_set_sync(c, "c", "hot", 3, "hot", 3, 0, NULL, NULL), MOMENTO_OK);
    /* Every call held 200 ms by the server: the blocking calls below are
     * made while the others are in flight, and would queue behind them. */
    momento__client_add_header(c, "request-id", "dispatch-shared-whole");
    momento__client_add_header(c, "delay-ms", "200");

    rec k = {.expect = pthread_self()};
    shared_arg args[SHARED_KEYS + SHARED_HOT];
    for (int i = 0; i < SHARED_KEYS; i++) {
        int kl = snprintf(key, sizeof(key), "s%d", i);
        args[i] = (shared_arg){&k, i, false};
        assert_int_equal(momento_get(c, "c", key, (size_t)kl, NULL, shared_cb, &args[i]),
                         MOMENTO_OK);
    }
    for (int i = 0; i < SHARED_HOT; i++) {
        args[SHARED_KEYS + i] = (shared_arg){&k, -1, false};
        assert_int_equal(momento_coalescing_get(co, "c", "hot", 3, NULL, shared_cb,
                                                &args[SHARED_KEYS + i]),
                         MOMENTO_OK);
    }
    /* Blocking calls of keys with answers waiting for this thread: they
     * return without a dispatch (or time out, failing the test). */
    momento_request_options brief = MOMENTO_REQUEST_OPTIONS_INIT;
    brief.timeout_ms = (uint32_t)TU_MS(20000);
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", "s1", 2, &brief, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(momento_coalescing_get_sync(co, "c", "hot", 3, &brief, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    assert_int_equal(k.n, 0);

    /* Every answer in: the 50 requests wait in one entry per RPC. 41 went
     * to the batcher (the keys, and the hot key's one RPC): those offered
     * while an RPC was in flight were queued and left in batches (or
     * alone), the others were sent as they came. */
    momento_client_batching_stats bs;
    size_t rpcs = tu_wait_dispatched(c, SHARED_KEYS, &bs);
    assert_true(bs.batches >= 1);
    assert_int_equal(bs.batched_keys + bs.sent_alone, bs.queued);
    assert_int_equal(momento__dispatch_queued(c), rpcs);
    assert_true(rpcs < SHARED_KEYS);
    assert_int_equal(k.n, 0);

    dispatch_until(c, &k, SHARED_KEYS + SHARED_HOT, 20000);
    assert_int_equal(k.n, SHARED_KEYS + SHARED_HOT);
    assert_int_equal(k.hits, SHARED_KEYS + SHARED_HOT);
    assert_false(k.wrong_thread);
    for (int i = 0; i < SHARED_KEYS + SHARED_HOT; i++)
        assert_false(args[i].wrong_value);
    assert_int_equal(momento_client_in_flight(c), 0);
    assert_int_equal(momento__dispatch_queued(c), 0);
    momento_coalescer_free(co);
    momento_client_free(c);
}

static void test_free_from_a_dispatched_callback(void **state)
{
    (void)state;
    /* With max 1 the run takes one entry off the queue; with 0 it takes
     * all six at once, and the five not run must go back for the free. */
    const size_t maxes[] = {1, 0};
    for (size_t m = 0; m < 2; m++) {
        momento_client *c = dispatch_client();
        assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
        rec k = {.expect = pthread_self()};
        for (int i = 0; i < 6; i++)
            assert_int_equal(momento_get(c, "c", "k", 1, NULL, rec_cb, &k), MOMENTO_OK);
        int fd = momento_client_dispatch_fd(c);
        tu_wait_until(momento__dispatch_queued(c) >= 6, 20000);
        assert_int_equal(momento__dispatch_queued(c), 6);
        assert_true(readable(fd, 0));
        /* The first callback frees the client; the queued rest still run,
         * in this dispatch, which then releases the client. */
        k.free_me = c;
        assert_int_equal(momento_client_dispatch(c, maxes[m]), 6);
        assert_int_equal(k.n, 6);
        assert_int_equal(k.hits, 6);
        assert_false(k.wrong_thread);
    }
}

typedef struct topic_rec {
    int connected, items, ends;
    char last[32];
    bool wrong_thread;
    pthread_t expect;
} topic_rec;

static void topic_cb(momento_subscription *sub, const momento_topic_event *ev, void *ud)
{
    (void)sub;
    topic_rec *t = ud;
    if (!pthread_equal(pthread_self(), t->expect))
        t->wrong_thread = true;
    if (ev->kind == MOMENTO_TOPIC_CONNECTED)
        t->connected++;
    if (ev->kind == MOMENTO_TOPIC_ITEM) {
        t->items++;
        snprintf(t->last, sizeof(t->last), "%.*s", (int)ev->value_len, (const char *)ev->value);
    }
    if (ev->kind == MOMENTO_TOPIC_END)
        t->ends++;
}

static void test_topic_events(void **state)
{
    (void)state;
    momento_client *c = dispatch_client();
    int fd = momento_client_dispatch_fd(c);
    topic_rec t = {.expect = pthread_self()};
    momento_subscription *sub = NULL;
    /* The blocking subscribe returns once connected, without a dispatch;
     * the CONNECTED event itself waits for one. */
    assert_int_equal(momento_topic_subscribe_sync(c, "c", "news", NULL, topic_cb, &t, &sub),
                     MOMENTO_OK);
    assert_int_equal(t.connected, 0);
    for (int i = 0; i < 3; i++) {
        char v[16];
        snprintf(v, sizeof(v), "item-%d", i);
        assert_int_equal(momento_topic_publish_text_sync(c, "c", "news", v, strlen(v), NULL, NULL),
                         MOMENTO_OK);
    }
    int64_t until = tu_now_ms() + TU_MS(20000);
    while (t.items < 3 && tu_now_ms() < until)
        if (readable(fd, 50))
            momento_client_dispatch(c, 0);
    assert_int_equal(t.connected, 1);
    assert_int_equal(t.items, 3);
    assert_string_equal(t.last, "item-2");
    momento_topic_unsubscribe(sub);
    until = tu_now_ms() + TU_MS(20000);
    while (t.ends < 1 && tu_now_ms() < until)
        if (readable(fd, 50))
            momento_client_dispatch(c, 0);
    assert_int_equal(t.ends, 1);
    assert_false(t.wrong_thread);
    momento_subscription_free(sub);
    momento_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queued_until_dispatched),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_blocking_calls_need_no_dispatch),
        cmocka_unit_test(test_endings),
        cmocka_unit_test(test_order_nested_and_reused_entries),
        cmocka_unit_test(test_shared_answers_delivered_whole),
        cmocka_unit_test(test_free_from_a_dispatched_callback),
        cmocka_unit_test(test_topic_events),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup_server, tu_fixture_teardown);
}
