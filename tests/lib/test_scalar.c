/* The scalar API beyond get/set/delete, against the local server: every
 * operation, every outcome, both branches of each condition (the hash
 * conditions too), batches of 1,000 keys, and the documented refusals. */
#include "testing.h"
#include "testutil.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(const char *key, const char *value)
{
    assert_int_equal(
        momento_set_sync(tu_fx.client, "c", key, strlen(key), value, strlen(value), 0, NULL, NULL),
        MOMENTO_OK);
}

static void check_value(const char *key, const char *want)
{
    tu_assert_get_str(tu_fx.client, "c", key, want);
}

/* Runs a conditional set and returns its outcome. */
static momento_outcome cond_set(const char *key, const char *value, momento_condition cond,
                                const char *compare)
{
    momento_result *r;
    int rc = momento_set_if_sync(tu_fx.client, "c", key, strlen(key), value, strlen(value), 0, cond,
                                 compare, compare ? strlen(compare) : 0, NULL, &r);
    return tu_outcome(rc, &r);
}

static void test_conditional_sets(void **state)
{
    (void)state;
    /* absent / not exists */
    assert_int_equal(cond_set("a", "1", MOMENTO_IF_ABSENT, NULL), MOMENTO_OUTCOME_STORED);
    assert_int_equal(cond_set("a", "2", MOMENTO_IF_ABSENT, NULL), MOMENTO_OUTCOME_NOT_STORED);
    check_value("a", "1");
    /* present */
    assert_int_equal(cond_set("a", "2", MOMENTO_IF_PRESENT, NULL), MOMENTO_OUTCOME_STORED);
    assert_int_equal(cond_set("none", "x", MOMENTO_IF_PRESENT, NULL), MOMENTO_OUTCOME_NOT_STORED);
    check_value("none", NULL);
    /* equal */
    assert_int_equal(cond_set("a", "3", MOMENTO_IF_EQUAL, "2"), MOMENTO_OUTCOME_STORED);
    assert_int_equal(cond_set("a", "4", MOMENTO_IF_EQUAL, "2"), MOMENTO_OUTCOME_NOT_STORED);
    /* not equal (absent counts as not equal) */
    assert_int_equal(cond_set("a", "4", MOMENTO_IF_NOT_EQUAL, "3"), MOMENTO_OUTCOME_NOT_STORED);
    assert_int_equal(cond_set("a", "4", MOMENTO_IF_NOT_EQUAL, "9"), MOMENTO_OUTCOME_STORED);
    assert_int_equal(cond_set("ne", "x", MOMENTO_IF_NOT_EQUAL, "9"), MOMENTO_OUTCOME_STORED);
    /* present and not equal (absent does not count) */
    assert_int_equal(cond_set("a", "5", MOMENTO_IF_PRESENT_AND_NOT_EQUAL, "4"), MOMENTO_OUTCOME_NOT_STORED);
    assert_int_equal(cond_set("a", "5", MOMENTO_IF_PRESENT_AND_NOT_EQUAL, "9"), MOMENTO_OUTCOME_STORED);
    assert_int_equal(cond_set("pne", "x", MOMENTO_IF_PRESENT_AND_NOT_EQUAL, "9"), MOMENTO_OUTCOME_NOT_STORED);
    /* absent or equal */
    assert_int_equal(cond_set("a", "6", MOMENTO_IF_ABSENT_OR_EQUAL, "9"), MOMENTO_OUTCOME_NOT_STORED);
    assert_int_equal(cond_set("a", "6", MOMENTO_IF_ABSENT_OR_EQUAL, "5"), MOMENTO_OUTCOME_STORED);
    assert_int_equal(cond_set("aoe", "x", MOMENTO_IF_ABSENT_OR_EQUAL, "9"), MOMENTO_OUTCOME_STORED);
    check_value("a", "6");
    /* An empty comparison value is legal: equal to an empty stored value. */
    put("empty", "");
    assert_int_equal(cond_set("empty", "y", MOMENTO_IF_EQUAL, ""), MOMENTO_OUTCOME_STORED);
}

/* An async call's outcome, kept by keep_outcome(); `waited` counts the
 * callbacks RUN_ASYNC() has waited for. */
typedef struct outcome_box {
    tu_counter k;
    momento_outcome outcome;
    size_t waited;
} outcome_box;

/* Asserts that the async `call` (its callback keeping its outcome in the
 * outcome_box `box`) was accepted, waits for that callback and asserts its
 * outcome is `want`. A macro, so that a failure names the test's line. */
#define RUN_ASYNC(box, call, want)                                                                 \
    do {                                                                                           \
        assert_int_equal((call), MOMENTO_OK);                                                      \
        (box)->waited++;                                                                           \
        assert_int_equal(tu_counter_wait(&(box)->k, (box)->waited, 5000), (box)->waited);          \
        assert_int_equal((box)->outcome, (want));                                                  \
    } while (0)

static void keep_outcome(const momento_result *r, void *ud)
{
    outcome_box *b = ud;
    b->outcome = momento_result_outcome(r);
    tu_count_cb(r, &b->k);
}

static void test_named_conditional_sets_async(void **state)
{
    (void)state;
    outcome_box b = {.waited = 0};
    tu_counter_init(&b.k);
#define RUN(call, want) RUN_ASYNC(&b, call, want)
    RUN(momento_set_if_not_exists(tu_fx.client, "c", "n1", 2, "v", 1, 0, NULL, keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_absent(tu_fx.client, "c", "n1", 2, "w", 1, 0, NULL, keep_outcome, &b),
        MOMENTO_OUTCOME_NOT_STORED);
    RUN(momento_set_if_present(tu_fx.client, "c", "n1", 2, "w", 1, 0, NULL, keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_equal(tu_fx.client, "c", "n1", 2, "x", 1, 0, "w", 1, NULL, keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_not_equal(tu_fx.client, "c", "n1", 2, "y", 1, 0, "x", 1, NULL, keep_outcome,
                                 &b),
        MOMENTO_OUTCOME_NOT_STORED);
    RUN(momento_set_if_present_and_not_equal(tu_fx.client, "c", "n1", 2, "y", 1, 0, "q", 1, NULL,
                                             keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_absent_or_equal(tu_fx.client, "c", "n1", 2, "z", 1, 0, "y", 1, NULL,
                                       keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
#undef RUN
    check_value("n1", "z");
    tu_counter_destroy(&b.k);
}

static void test_increment(void **state)
{
    (void)state;
    momento_result *r;
    assert_int_equal(momento_increment_sync(tu_fx.client, "c", "ctr", 3, 5, 0, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_int(r), 5);
    momento_result_free(r);
    assert_int_equal(momento_increment_sync(tu_fx.client, "c", "ctr", 3, -12, 0, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_int(r), -7);
    momento_result_free(r);
    check_value("ctr", "-7");
    put("text", "abc");
    assert_int_equal(momento_increment_sync(tu_fx.client, "c", "text", 4, 1, 0, NULL, &r),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_result_grpc_status(r), 9);
    momento_result_free(r);
    put("big", "9223372036854775807");
    assert_int_equal(momento_increment_sync(tu_fx.client, "c", "big", 3, 1, 0, NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
}

static void test_keys_exist(void **state)
{
    (void)state;
    put("e1", "v");
    put("e3", "v");
    const void *keys[4] = {"e1", "e2", "e3", "e1"};
    size_t lens[4] = {2, 2, 2, 2};
    momento_result *r;
    assert_int_equal(momento_keys_exist_sync(tu_fx.client, "c", keys, lens, 4, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_exists_count(r), 4);
    assert_int_equal(momento_result_exists(r, 0), 1);
    assert_int_equal(momento_result_exists(r, 1), 0);
    assert_int_equal(momento_result_exists(r, 2), 1);
    assert_int_equal(momento_result_exists(r, 3), 1);
    assert_int_equal(momento_result_exists(r, 4), -1);
    momento_result_free(r);
    assert_int_equal(momento_key_exists_sync(tu_fx.client, "c", "e2", 2, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_exists_count(r), 1);
    assert_int_equal(momento_result_exists(r, 0), 0);
    momento_result_free(r);
    assert_int_equal(momento_keys_exist_sync(tu_fx.client, "c", keys, lens, 0, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    size_t bad[2] = {2, 0};
    assert_int_equal(momento_keys_exist_sync(tu_fx.client, "c", keys, bad, 2, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

static uint64_t ttl_of(const char *key, momento_outcome *outcome)
{
    momento_result *r;
    assert_int_equal(momento_item_get_ttl_sync(tu_fx.client, "c", key, strlen(key), NULL, &r),
                     MOMENTO_OK);
    *outcome = momento_result_outcome(r);
    uint64_t v = momento_result_ttl_ms(r);
    momento_result_free(r);
    return v;
}

static momento_outcome ttl_op(int which, const char *key, uint64_t ms)
{
    momento_result *r;
    int rc = which == 0 ? momento_update_ttl_sync(tu_fx.client, "c", key, strlen(key), ms, NULL, &r)
             : which == 1
                 ? momento_increase_ttl_sync(tu_fx.client, "c", key, strlen(key), ms, NULL, &r)
                 : momento_decrease_ttl_sync(tu_fx.client, "c", key, strlen(key), ms, NULL, &r);
    return tu_outcome(rc, &r);
}

static void test_ttl_operations(void **state)
{
    (void)state;
    momento_outcome o;
    assert_int_equal(momento_set_sync(tu_fx.client, "c", "t", 1, "v", 1, 10000, NULL, NULL),
                     MOMENTO_OK);
    uint64_t left = ttl_of("t", &o);
    assert_int_equal(o, MOMENTO_OUTCOME_HIT);
    /* Bounds with seconds to spare, not a window a loaded machine can
     * miss: more than the 5 s the next step compares with, and never more
     * than was set; each later step checks that its TTL went past (or
     * under) the one before it. */
    assert_true(left > 5000 && left <= 10000);
    ttl_of("absent", &o);
    assert_int_equal(o, MOMENTO_OUTCOME_MISS);

    assert_int_equal(ttl_op(1, "t", 5000), MOMENTO_OUTCOME_TTL_NOT_UPDATED);  /* not longer */
    assert_int_equal(ttl_op(1, "t", 30000), MOMENTO_OUTCOME_TTL_UPDATED);
    assert_true(ttl_of("t", &o) > 10000); /* more than it ever was */
    assert_int_equal(ttl_op(2, "t", 60000), MOMENTO_OUTCOME_TTL_NOT_UPDATED); /* not shorter */
    assert_int_equal(ttl_op(2, "t", 4000), MOMENTO_OUTCOME_TTL_UPDATED);
    assert_true(ttl_of("t", &o) <= 4000);
    assert_int_equal(ttl_op(0, "t", 20000), MOMENTO_OUTCOME_TTL_UPDATED);     /* always */
    assert_true(ttl_of("t", &o) > 4000); /* up from the decrease's 4 s */
    for (int which = 0; which < 3; which++)
        assert_int_equal(ttl_op(which, "absent", 1000), MOMENTO_OUTCOME_MISS);
    /* A decrease takes effect: the item expires. */
    assert_int_equal(ttl_op(2, "t", 100), MOMENTO_OUTCOME_TTL_UPDATED);
    usleep(200 * 1000);
    check_value("t", NULL);
    assert_int_equal(momento_update_ttl_sync(tu_fx.client, "c", "t", 1, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

static void type_cb(const momento_result *r, void *userdata)
{
    tu_counter *k = userdata;
    if (momento_result_item_type(r) != MOMENTO_ITEM_TYPE_SCALAR)
        k->bad_values++; /* counted before the callback is counted */
    tu_count_cb(r, userdata);
}

static void test_item_get_type(void **state)
{
    (void)state;
    put("typed", "v");
    momento_result *r;
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", "typed", 5, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_SCALAR);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);

    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", "untyped", 7, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_NONE);
    momento_result_free(r);

    /* An expired item is a miss; so is a deleted one. */
    assert_int_equal(momento_set_sync(tu_fx.client, "c", "brief", 5, "v", 1, 50, NULL, NULL),
                     MOMENTO_OK);
    usleep(120 * 1000);
    tu_expect(momento_item_get_type_sync(tu_fx.client, "c", "brief", 5, NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_delete_sync(tu_fx.client, "c", "typed", 5, NULL, NULL), MOMENTO_OK);
    tu_expect(momento_item_get_type_sync(tu_fx.client, "c", "typed", 5, NULL, &r), r,
              MOMENTO_OUTCOME_MISS);

    /* Async, many at once, each called back once with the type. */
    put("typed", "v");
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 50; i++)
        assert_int_equal(momento_item_get_type(tu_fx.client, "c", "typed", 5, NULL, type_cb, &k),
                         MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 50, 5000), 50);
    assert_int_equal(k.ok, 50);
    assert_int_equal(k.bad_values, 0);
    tu_counter_destroy(&k);

    /* Refusals, an unknown cache, and the server's count of the RPC. */
    assert_int_equal(momento_item_get_type(tu_fx.client, "c", "k", 1, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", "", 0, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "", "k", 1, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_type_sync(NULL, "c", "k", 1, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "nope", "k", 1, NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_grpc_status(r), 5);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "ItemGetType", 0), 54);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "ItemGetType", 5), 1);

    /* Idempotent, as the official SDKs treat it: UNAVAILABLE is retried. */
    momento_client *faulty = tu_client(tu_fx.server, NULL);
    momento__client_add_header(faulty, "request-id", "item-get-type-retry");
    momento__client_add_header(faulty, "return-error", "unavailable");
    momento__client_add_header(faulty, "error-rpcs", "item-get-type");
    momento__client_add_header(faulty, "error-count", "1");
    assert_int_equal(momento_item_get_type_sync(faulty, "c", "typed", 5, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_attempts(r), 2);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_SCALAR);
    momento_result_free(r);
    momento_client_free(faulty);
}

static void test_batches_of_a_thousand(void **state)
{
    (void)state;
    enum { N = 1000 };
    static char keybuf[N][16], valbuf[N][24];
    static const void *keys[N], *values[N];
    static size_t klens[N], vlens[N];
    for (int i = 0; i < N; i++) {
        klens[i] = (size_t)snprintf(keybuf[i], sizeof(keybuf[i]), "b%d", i);
        vlens[i] = (size_t)snprintf(valbuf[i], sizeof(valbuf[i]), "value-%d", i * 7);
        keys[i] = keybuf[i];
        values[i] = valbuf[i];
    }
    /* Store the even keys only, as one batch of 500... */
    static const void *ek[N / 2], *ev[N / 2];
    static size_t ekl[N / 2], evl[N / 2];
    for (int i = 0; i < N / 2; i++) {
        ek[i] = keys[2 * i];
        ekl[i] = klens[2 * i];
        ev[i] = values[2 * i];
        evl[i] = vlens[2 * i];
    }
    momento_result *r;
    assert_int_equal(
        momento_set_batch_sync(tu_fx.client, "c", ek, ekl, ev, evl, N / 2, 0, NULL, &r),
        MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), N / 2);
    for (size_t i = 0; i < N / 2; i++)
        assert_int_equal(momento_result_outcome(momento_result_item(r, i)), MOMENTO_OUTCOME_SUCCESS);
    momento_result_free(r);
    momento_local_reset_stats(tu_fx.server);
    /* ...then read all 1,000: hits and misses alternate, in request order. */
    assert_int_equal(momento_get_batch_sync(tu_fx.client, "c", keys, klens, N, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), N);
    for (int i = 0; i < N; i++) {
        const momento_result *it = momento_result_item(r, (size_t)i);
        size_t len;
        const void *v = momento_result_value(it, &len);
        if (i % 2 == 0) {
            assert_int_equal(momento_result_outcome(it), MOMENTO_OUTCOME_HIT);
            assert_int_equal(len, vlens[i]);
            assert_memory_equal(v, values[i], len);
        } else {
            assert_int_equal(momento_result_outcome(it), MOMENTO_OUTCOME_MISS);
            assert_null(v);
        }
    }
    assert_null(momento_result_item(r, N));
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "GetBatch", 0), 1); /* one RPC for all */
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "Get", -1), 0);
}

typedef struct batch_seen {
    pthread_mutex_t lock;
    int calls;
    size_t n_items;
    int errors[16];
    size_t in_flight; /* momento_client_in_flight() inside the callback */
} batch_seen;

static void on_delete_batch(const momento_result *r, void *userdata)
{
    batch_seen *b = userdata;
    pthread_mutex_lock(&b->lock);
    b->calls++;
    b->n_items = momento_result_item_count(r);
    for (size_t i = 0; i < b->n_items && i < 16; i++)
        b->errors[i] = momento_result_error(momento_result_item(r, i));
    b->in_flight = momento_client_in_flight(tu_fx.client);
    pthread_mutex_unlock(&b->lock);
}

/* The SDKs' batchDelete: one Delete per key, one callback with an item per
 * key; one request however many keys; a key's failure is its item's. */
static void test_delete_batch(void **state)
{
    (void)state;
    enum { N = 300, D = 200 };
    static char keybuf[N][16];
    static const void *keys[N + 1], *values[N];
    static size_t klens[N + 1], vlens[N];
    for (int i = 0; i < N; i++) {
        klens[i] = (size_t)snprintf(keybuf[i], sizeof(keybuf[i]), "del%d", i);
        keys[i] = keybuf[i];
        values[i] = "v";
        vlens[i] = 1;
    }
    momento_result *r = NULL;
    assert_int_equal(
        momento_set_batch_sync(tu_fx.client, "c", keys, klens, values, vlens, N, 0, NULL, &r),
        MOMENTO_OK);
    momento_result_free(r);
    momento_local_reset_stats(tu_fx.server);
    /* The first D keys and one that never existed (a delete of nothing is
     * a success, as Momento answers it). */
    const void *dk[D + 1];
    size_t dkl[D + 1];
    memcpy(dk, keys, D * sizeof(dk[0]));
    memcpy(dkl, klens, D * sizeof(dkl[0]));
    dk[D] = "never-there";
    dkl[D] = 11;
    assert_int_equal(momento_delete_batch_sync(tu_fx.client, "c", dk, dkl, D + 1, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_item_count(r), D + 1);
    for (size_t i = 0; i <= D; i++)
        assert_int_equal(momento_result_error(momento_result_item(r, i)), MOMENTO_OK);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "Delete", 0), D + 1);
    assert_int_equal(momento_get_batch_sync(tu_fx.client, "c", keys, klens, N, NULL, &r),
                     MOMENTO_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_result_outcome(momento_result_item(r, (size_t)i)),
                         i < D ? MOMENTO_OUTCOME_MISS : MOMENTO_OUTCOME_HIT);
    momento_result_free(r);

    /* Refused whole, no callback: as a get batch. */
    batch_seen b = {.lock = PTHREAD_MUTEX_INITIALIZER};
    assert_int_equal(
        momento_delete_batch(tu_fx.client, "c", keys, klens, 0, NULL, on_delete_batch, &b),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(
        momento_delete_batch(tu_fx.client, "c", NULL, klens, 3, NULL, on_delete_batch, &b),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_delete_batch(tu_fx.client, "c", keys, klens, 3, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);

    /* One key's failure is its item's; the batch counts as one request:
     * with the gate closed nothing of it can complete, however slow the
     * machine (issue 46: a 200 ms hold was a window), and the client
     * counts it and the gate. */
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    momento_header h[] = {{"request-id", "delete-batch"},
                          {"return-error", "invalid-argument"},
                          {"error-rpcs", "delete"},
                          {"error-count", "1"}};
    o.headers = h;
    o.n_headers = 4;
    tu_gate *g = tu_gate_close(tu_fx.client);
    assert_int_equal(
        momento_delete_batch(tu_fx.client, "c", keys, klens, 5, &o, on_delete_batch, &b),
        MOMENTO_OK);
    assert_int_equal(momento_client_in_flight(tu_fx.client), 2);
    tu_gate_open(g);
    tu_wait_until(tu_locked_int(&b.lock, &b.calls) == 1, 5000);
    assert_int_equal(tu_locked_int(&b.lock, &b.calls), 1);
    assert_int_equal(b.n_items, 5);
    int failed = 0;
    for (int i = 0; i < 5; i++) {
        failed += b.errors[i] == MOMENTO_ERR_INVALID_ARGUMENT;
        assert_true(b.errors[i] == MOMENTO_OK || b.errors[i] == MOMENTO_ERR_INVALID_ARGUMENT);
    }
    assert_int_equal(failed, 1);
    assert_int_equal(b.in_flight, 1); /* its own, while its callback runs */
    tu_wait_until(momento_client_in_flight(tu_fx.client) == 0, 2000);
    assert_int_equal(momento_client_in_flight(tu_fx.client), 0);
}

static void test_batch_refusals_and_errors(void **state)
{
    (void)state;
    const void *keys[2] = {"k", ""};
    size_t lens[2] = {1, 0};
    const void *vals[2] = {"v", "v"};
    size_t vlens[2] = {1, 1};
    momento_result *r = (momento_result *)0x1;
    /* Empty batches are refused, documented in the header. */
    assert_int_equal(momento_get_batch_sync(tu_fx.client, "c", keys, lens, 0, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(
        momento_set_batch_sync(tu_fx.client, "c", keys, lens, vals, vlens, 0, 0, NULL, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    /* One bad key refuses the whole batch, before sending. */
    assert_int_equal(momento_get_batch_sync(tu_fx.client, "c", keys, lens, 2, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(
        momento_set_batch_sync(tu_fx.client, "c", keys, lens, NULL, vlens, 1, 0, NULL, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    /* Unknown cache: the stream's status reaches the caller. */
    assert_int_equal(momento_get_batch_sync(tu_fx.client, "nope", keys, lens, 1, NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_item_count(r), 0);
    momento_result_free(r);
    /* Over the item limit inside a batch: the server's answer. */
    size_t big = MOMENTO_MAX_ITEM_BYTES - 2;
    char *bigval = calloc(1, big);
    const void *bv[1] = {bigval};
    size_t bvl[1] = {big};
    assert_int_equal(
        momento_set_batch_sync(tu_fx.client, "c", keys, lens, bv, bvl, 1, 0, NULL, NULL),
        MOMENTO_OK);
    free(bigval);
    /* Conditions and TTLs checked up front. */
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0,
                                         (momento_condition)99, NULL, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0, MOMENTO_IF_EQUAL,
                                         NULL, 3, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_increment_sync(tu_fx.client, "", "k", 1, 1, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_ttl_sync(tu_fx.client, "c", NULL, 1, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* Unknown cache on each scalar op. */
    assert_int_equal(momento_increment_sync(tu_fx.client, "nope", "k", 1, 1, 0, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_set_if_sync(tu_fx.client, "nope", "k", 1, "v", 1, 0, MOMENTO_IF_ABSENT,
                                         NULL, 0, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_item_get_ttl_sync(tu_fx.client, "nope", "k", 1, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_update_ttl_sync(tu_fx.client, "nope", "k", 1, 5, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_key_exists_sync(tu_fx.client, "nope", "k", 1, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
}

/* ---- Hashes: GetWithHash, setWithHash and the hash conditions. */

/* A hash kept beyond its result. */
typedef struct hash_buf {
    unsigned char bytes[64];
    size_t len;
} hash_buf;

static void copy_hash(const momento_result *r, hash_buf *h)
{
    size_t len = 0;
    const void *p = momento_result_hash(r, &len);
    assert_non_null(p);
    assert_true(len > 0 && len <= sizeof(h->bytes));
    memcpy(h->bytes, p, len);
    h->len = len;
}

static bool same_hash(const hash_buf *a, const hash_buf *b)
{
    return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* setWithHash: STORED and the new hash. */
static hash_buf set_hashed(const char *key, const char *value)
{
    momento_result *r;
    assert_int_equal(momento_set_with_hash_sync(tu_fx.client, "c", key, strlen(key), value,
                                                strlen(value), 0, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_STORED);
    hash_buf h;
    copy_hash(r, &h);
    momento_result_free(r);
    return h;
}

/* GetWithHash of a key that must hold `want`: its hash. */
static hash_buf get_hashed(const char *key, const char *want)
{
    momento_result *r;
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "c", key, strlen(key), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    size_t len;
    const void *v = momento_result_value(r, &len);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(v, want, len);
    hash_buf h;
    copy_hash(r, &h);
    momento_result_free(r);
    return h;
}

/* A hash-conditional set: its outcome; a STORED one's hash goes to *ret. */
static momento_outcome hash_set(const char *key, const char *value, momento_condition cond,
                                const hash_buf *h, hash_buf *ret)
{
    momento_result *r;
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", key, strlen(key), value, strlen(value),
                                         0, cond, h->bytes, h->len, NULL, &r),
                     MOMENTO_OK);
    momento_outcome o = momento_result_outcome(r);
    if (o == MOMENTO_OUTCOME_STORED) {
        hash_buf got;
        copy_hash(r, &got);
        if (ret)
            *ret = got;
    } else {
        /* Nothing written, no hash. */
        size_t len = 99;
        assert_null(momento_result_hash(r, &len));
        assert_int_equal(len, 0);
    }
    momento_result_free(r);
    return o;
}

static void test_hash_get_and_set(void **state)
{
    (void)state;
    momento_result *r;
    /* A miss has no value and no hash. */
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "c", "hmiss", 5, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    size_t len = 99;
    assert_null(momento_result_hash(r, &len));
    assert_int_equal(len, 0);
    momento_result_free(r);

    /* The hash a set returns is the one a get returns for that value. */
    hash_buf alpha = set_hashed("h1", "alpha");
    hash_buf got = get_hashed("h1", "alpha");
    assert_true(same_hash(&alpha, &got));
    /* Stable: the same value under another key, written again, or written
     * by a plain set, has the same hash. */
    hash_buf again = set_hashed("h2", "alpha");
    assert_true(same_hash(&alpha, &again));
    put("h3", "alpha");
    got = get_hashed("h3", "alpha");
    assert_true(same_hash(&alpha, &got));
    /* Different values, different hashes (the empty one included). */
    hash_buf beta = set_hashed("h2", "beta");
    assert_false(same_hash(&alpha, &beta));
    got = get_hashed("h2", "beta");
    assert_true(same_hash(&beta, &got));
    hash_buf empty = set_hashed("h4", "");
    assert_false(same_hash(&empty, &alpha));
    got = get_hashed("h4", "");
    assert_true(same_hash(&empty, &got));

    /* Results without a hash: a plain get's HIT, NULL. */
    assert_int_equal(momento_get_sync(tu_fx.client, "c", "h1", 2, NULL, &r), MOMENTO_OK);
    assert_null(momento_result_hash(r, &len));
    assert_int_equal(len, 0);
    momento_result_free(r);
    assert_null(momento_result_hash(NULL, &len));
    assert_int_equal(len, 0);
    assert_null(momento_result_hash(NULL, NULL));
}

/* One hash condition, on "hc" holding `was`: with the hash `refused` the
 * set of `value` is NOT_STORED and "hc" still holds `was`; with `met` it is
 * STORED and "hc" holds `value`. On `absent`, a key never written, the set
 * of "x" with the hash `absent_with` answers `absent_outcome`, and the key
 * then holds "x" if it was stored. Answers the hash the STORED set carried. */
static hash_buf check_hash_condition(momento_condition cond, const char *was, const char *value,
                                     const hash_buf *refused, const hash_buf *met,
                                     const char *absent, const hash_buf *absent_with,
                                     momento_outcome absent_outcome)
{
    hash_buf now;
    assert_int_equal(hash_set("hc", value, cond, refused, NULL), MOMENTO_OUTCOME_NOT_STORED);
    check_value("hc", was);
    assert_int_equal(hash_set("hc", value, cond, met, &now), MOMENTO_OUTCOME_STORED);
    check_value("hc", value);
    assert_int_equal(hash_set(absent, "x", cond, absent_with, NULL), absent_outcome);
    check_value(absent, absent_outcome == MOMENTO_OUTCOME_STORED ? "x" : NULL);
    return now;
}

static void test_hash_conditions(void **state)
{
    (void)state;
    hash_buf one = set_hashed("hc", "one");
    hash_buf other = set_hashed("hc-other", "other");

    /* present and hash equal */
    hash_buf now = check_hash_condition(MOMENTO_IF_PRESENT_AND_HASH_EQUAL, "one", "two", &other,
                                        &one, "hc-none1", &one, MOMENTO_OUTCOME_NOT_STORED);
    hash_buf two = get_hashed("hc", "two");
    assert_true(same_hash(&now, &two)); /* STORED carries the new value's hash */

    /* present and hash not equal */
    hash_buf three = check_hash_condition(MOMENTO_IF_PRESENT_AND_HASH_NOT_EQUAL, "two", "three",
                                          &two, &one, "hc-none2", &one,
                                          MOMENTO_OUTCOME_NOT_STORED);

    /* absent or hash equal */
    hash_buf four = check_hash_condition(MOMENTO_IF_ABSENT_OR_HASH_EQUAL, "three", "four", &one,
                                         &three, "hc-none3", &one, MOMENTO_OUTCOME_STORED);

    /* absent or hash not equal */
    check_hash_condition(MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL, "four", "five", &four, &one,
                         "hc-none4", &one, MOMENTO_OUTCOME_STORED);

    /* A hash of another length (not one the server makes) matches nothing. */
    hash_buf odd = {.bytes = "short", .len = 5};
    assert_int_equal(hash_set("hc", "six", MOMENTO_IF_PRESENT_AND_HASH_EQUAL, &odd, NULL),
                     MOMENTO_OUTCOME_NOT_STORED);
    assert_int_equal(hash_set("hc", "six", MOMENTO_IF_PRESENT_AND_HASH_NOT_EQUAL, &odd, NULL),
                     MOMENTO_OUTCOME_STORED);
    check_value("hc", "six");

    /* The value conditions still answer without a hash. */
    momento_result *r;
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "hc", 2, "seven", 5, 0,
                                         MOMENTO_IF_EQUAL, "six", 3, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_STORED);
    assert_null(momento_result_hash(r, NULL));
    momento_result_free(r);
}

/* The async forms: the hash is borrowed in the callback, so it is copied
 * there. */
typedef struct hash_box {
    outcome_box o;
    hash_buf hash;
} hash_box;

static void keep_hash(const momento_result *r, void *ud)
{
    hash_box *b = ud;
    size_t len = 0;
    const void *p = momento_result_hash(r, &len);
    b->hash.len = p && len <= sizeof(b->hash.bytes) ? len : 0;
    if (b->hash.len)
        memcpy(b->hash.bytes, p, len);
    keep_outcome(r, &b->o); /* last: it wakes the test */
}

static void test_hash_async_and_named(void **state)
{
    (void)state;
    hash_box b = {.o.waited = 0};
    tu_counter_init(&b.o.k);
#define RUN(call, want) RUN_ASYNC(&b.o, call, want)
    RUN(momento_set_with_hash(tu_fx.client, "c", "ha", 2, "v1", 2, 0, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_STORED);
    hash_buf v1 = b.hash;
    assert_true(v1.len > 0);
    RUN(momento_get_with_hash(tu_fx.client, "c", "ha", 2, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_HIT);
    assert_true(same_hash(&v1, &b.hash));
    RUN(momento_get_with_hash(tu_fx.client, "c", "ha-none", 7, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_MISS);
    assert_int_equal(b.hash.len, 0);
    RUN(momento_set_if_present_and_hash_equal(tu_fx.client, "c", "ha", 2, "v2", 2, 0, v1.bytes,
                                              v1.len, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_STORED);
    hash_buf v2 = b.hash;
    assert_false(same_hash(&v1, &v2));
    RUN(momento_set_if_present_and_hash_not_equal(tu_fx.client, "c", "ha", 2, "v3", 2, 0, v2.bytes,
                                                  v2.len, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_NOT_STORED);
    RUN(momento_set_if_absent_or_hash_equal(tu_fx.client, "c", "ha", 2, "v3", 2, 0, v2.bytes,
                                            v2.len, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_STORED);
    hash_buf v3 = b.hash;
    RUN(momento_set_if_absent_or_hash_not_equal(tu_fx.client, "c", "ha", 2, "v4", 2, 0, v3.bytes,
                                                v3.len, NULL, keep_hash, &b),
        MOMENTO_OUTCOME_NOT_STORED);
#undef RUN
    check_value("ha", "v3");
    tu_counter_destroy(&b.o.k);

    /* Every named conditional set has a blocking form. */
    momento_result *r;
#define SYNC(call, want)                                                                           \
    do {                                                                                           \
        assert_int_equal((call), MOMENTO_OK);                                                      \
        assert_int_equal(momento_result_outcome(r), (want));                                       \
        momento_result_free(r);                                                                    \
    } while (0)
    SYNC(momento_set_if_absent_sync(tu_fx.client, "c", "hs", 2, "a", 1, 0, NULL, &r),
         MOMENTO_OUTCOME_STORED);
    SYNC(momento_set_if_not_exists_sync(tu_fx.client, "c", "hs", 2, "b", 1, 0, NULL, &r),
         MOMENTO_OUTCOME_NOT_STORED);
    SYNC(momento_set_if_present_sync(tu_fx.client, "c", "hs", 2, "b", 1, 0, NULL, &r),
         MOMENTO_OUTCOME_STORED);
    SYNC(momento_set_if_equal_sync(tu_fx.client, "c", "hs", 2, "c", 1, 0, "b", 1, NULL, &r),
         MOMENTO_OUTCOME_STORED);
    SYNC(momento_set_if_not_equal_sync(tu_fx.client, "c", "hs", 2, "d", 1, 0, "c", 1, NULL, &r),
         MOMENTO_OUTCOME_NOT_STORED);
    SYNC(momento_set_if_present_and_not_equal_sync(tu_fx.client, "c", "hs", 2, "d", 1, 0, "x", 1,
                                                   NULL, &r),
         MOMENTO_OUTCOME_STORED);
    SYNC(momento_set_if_absent_or_equal_sync(tu_fx.client, "c", "hs", 2, "e", 1, 0, "d", 1, NULL,
                                             &r),
         MOMENTO_OUTCOME_STORED);
    hash_buf e = get_hashed("hs", "e");
    SYNC(momento_set_if_present_and_hash_equal_sync(tu_fx.client, "c", "hs", 2, "f", 1, 0, e.bytes,
                                                    e.len, NULL, &r),
         MOMENTO_OUTCOME_STORED);
    SYNC(momento_set_if_present_and_hash_not_equal_sync(tu_fx.client, "c", "hs", 2, "g", 1, 0,
                                                        e.bytes, e.len, NULL, &r),
         MOMENTO_OUTCOME_STORED);
    SYNC(momento_set_if_absent_or_hash_equal_sync(tu_fx.client, "c", "hs", 2, "h", 1, 0, e.bytes,
                                                  e.len, NULL, &r),
         MOMENTO_OUTCOME_NOT_STORED);
    SYNC(momento_set_if_absent_or_hash_not_equal_sync(tu_fx.client, "c", "hs-new", 6, "h", 1, 0,
                                                      e.bytes, e.len, NULL, &r),
         MOMENTO_OUTCOME_STORED);
#undef SYNC
    check_value("hs", "g");
    check_value("hs-new", "h");
}

static void test_hash_refusals_and_errors(void **state)
{
    (void)state;
    static const unsigned char h[32] = {1, 2, 3};
    static const momento_condition hash_conds[] = {
        MOMENTO_IF_PRESENT_AND_HASH_EQUAL, MOMENTO_IF_PRESENT_AND_HASH_NOT_EQUAL,
        MOMENTO_IF_ABSENT_OR_HASH_EQUAL, MOMENTO_IF_ABSENT_OR_HASH_NOT_EQUAL};
    /* Not NULL: a refusal must write NULL over it. */
    static char sentinel;
    momento_result *r = (momento_result *)(void *)&sentinel;
    for (size_t i = 0; i < sizeof(hash_conds) / sizeof(hash_conds[0]); i++) {
        /* A hash is never NULL or empty. */
        assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0, hash_conds[i],
                                             NULL, 32, NULL, &r),
                         MOMENTO_ERR_INVALID_ARGUMENT);
        tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
        assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0, hash_conds[i],
                                             NULL, 0, NULL, NULL),
                         MOMENTO_ERR_INVALID_ARGUMENT);
        assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0, hash_conds[i], h,
                                             0, NULL, NULL),
                         MOMENTO_ERR_INVALID_ARGUMENT);
    }
    assert_int_equal(momento_set_if_present_and_hash_equal_sync(tu_fx.client, "c", "k", 1, "v", 1,
                                                                0, NULL, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_if_absent_or_hash_not_equal(tu_fx.client, "c", "k", 1, "v", 1, 0,
                                                             h, 0, NULL, tu_count_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* Conditions outside the enum, on either side of it. */
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0, (momento_condition)0,
                                         h, 32, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "k", 1, "v", 1, 0,
                                         (momento_condition)11, h, 32, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* The key, cache and value checks every request makes. */
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "c", NULL, 1, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "c", "k", 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "", "k", 1, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_get_with_hash(tu_fx.client, "c", "k", 1, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_with_hash_sync(tu_fx.client, "c", "k", 1, NULL, 3, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_with_hash_sync(NULL, "c", "k", 1, "v", 1, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* The server's answers: an unknown cache, and a collection where a
     * scalar value is needed. */
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "nope", "k", 1, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(
        momento_set_with_hash_sync(tu_fx.client, "nope", "k", 1, "v", 1, 0, NULL, NULL),
        MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_dictionary_set_field_sync(tu_fx.client, "c", "hdict", 5, "f", 1, "v",
                                                       1, NULL, NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "c", "hdict", 5, NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_set_if_sync(tu_fx.client, "c", "hdict", 5, "v", 1, 0,
                                         MOMENTO_IF_ABSENT_OR_HASH_EQUAL, h, 32, NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    /* setWithHash replaces a collection, as set does. */
    assert_int_equal(
        momento_set_with_hash_sync(tu_fx.client, "c", "hdict", 5, "v", 1, 0, NULL, NULL),
        MOMENTO_OK);
    check_value("hdict", "v");
}

/* Retries: GetWithHash is a read (retried after UNAVAILABLE), SetIfHash a
 * conditional write (never); the fault names are the SDKs'. */
static void test_hash_retry_classes(void **state)
{
    (void)state;
    put("hr", "v");
    momento_result *r;
    momento_client *faulty = tu_client(tu_fx.server, NULL);
    momento__client_add_header(faulty, "request-id", "hash-retry");
    momento__client_add_header(faulty, "return-error", "unavailable");
    momento__client_add_header(faulty, "error-rpcs", "get-with-hash set-if-hash");
    momento__client_add_header(faulty, "error-count", "2");
    assert_int_equal(momento_set_with_hash_sync(faulty, "c", "hr", 2, "w", 1, 0, NULL, &r),
                     MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);
    /* The second failure of the session, then a retry that succeeds. */
    assert_int_equal(momento_get_with_hash_sync(faulty, "c", "hr", 2, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_attempts(r), 2);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    momento_result_free(r);
    momento_client_free(faulty);
    check_value("hr", "v");
}

/* With compression the hash is the stored (compressed) bytes', so a
 * compressing and a plain client agree on it, and a get with hash returns
 * the value decompressed as a get does. */
static void test_hash_with_compression(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_compression(cfg, MOMENTO_COMPRESS_GZIP,
                                                    MOMENTO_COMPRESS_LEVEL_BALANCED),
                     MOMENTO_OK);
    momento_client *zc = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    enum { N = 4096 };
    char *value = malloc(N);
    assert_non_null(value);
    memset(value, 'z', N);

    momento_result *r;
    assert_int_equal(momento_set_with_hash_sync(zc, "c", "hz", 2, value, N, 0, NULL, &r), MOMENTO_OK);
    hash_buf stored;
    copy_hash(r, &stored);
    momento_result_free(r);

    /* The compressing client reads the value back as it was written. */
    assert_int_equal(momento_get_with_hash_sync(zc, "c", "hz", 2, NULL, &r), MOMENTO_OK);
    size_t len;
    const void *v = momento_result_value(r, &len);
    assert_int_equal(len, N);
    assert_memory_equal(v, value, N);
    hash_buf got;
    copy_hash(r, &got);
    assert_true(same_hash(&stored, &got));
    momento_result_free(r);

    /* The plain client sees the gzip stream that is stored, and the same
     * hash. */
    assert_int_equal(momento_get_with_hash_sync(tu_fx.client, "c", "hz", 2, NULL, &r), MOMENTO_OK);
    v = momento_result_value(r, &len);
    assert_true(len > 2 && len < N);
    assert_memory_equal(v, "\x1f\x8b", 2);
    copy_hash(r, &got);
    assert_true(same_hash(&stored, &got));
    momento_result_free(r);

    /* So the hash conditions work across the two. */
    tu_expect(momento_set_if_present_and_hash_equal_sync(tu_fx.client, "c", "hz", 2, "plain", 5, 0,
                                                         stored.bytes, stored.len, NULL, &r),
              r, MOMENTO_OUTCOME_STORED);
    check_value("hz", "plain");
    free(value);
    momento_client_free(zc);
}

static void test_batch_result_survives_dup(void **state)
{
    (void)state;
    put("d1", "one");
    put("d3", "three");
    const void *keys[3] = {"d1", "d2", "d3"};
    size_t lens[3] = {2, 2, 2};
    tu_kept b = {.copy = NULL};
    tu_counter_init(&b.k);
    assert_int_equal(momento_get_batch(tu_fx.client, "c", keys, lens, 3, NULL, tu_keep_cb, &b),
                     MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&b.k, 1, 5000), 1);
    assert_non_null(b.copy); /* the dup succeeded */
    /* The callback's buffers are gone; the copy must stand alone. */
    assert_int_equal(momento_result_item_count(b.copy), 3);
    size_t len;
    const void *v = momento_result_value(momento_result_item(b.copy, 2), &len);
    assert_int_equal(len, 5);
    assert_memory_equal(v, "three", 5);
    assert_int_equal(momento_result_outcome(momento_result_item(b.copy, 1)), MOMENTO_OUTCOME_MISS);
    momento_result_free(b.copy);
    tu_counter_destroy(&b.k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conditional_sets),
        cmocka_unit_test(test_named_conditional_sets_async),
        cmocka_unit_test(test_increment),
        cmocka_unit_test(test_keys_exist),
        cmocka_unit_test(test_ttl_operations),
        cmocka_unit_test(test_item_get_type),
        cmocka_unit_test(test_batches_of_a_thousand),
        cmocka_unit_test(test_batch_refusals_and_errors),
        cmocka_unit_test(test_delete_batch),
        cmocka_unit_test(test_batch_result_survives_dup),
        cmocka_unit_test(test_hash_get_and_set),
        cmocka_unit_test(test_hash_conditions),
        cmocka_unit_test(test_hash_async_and_named),
        cmocka_unit_test(test_hash_refusals_and_errors),
        cmocka_unit_test(test_hash_retry_classes),
        cmocka_unit_test(test_hash_with_compression),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup, tu_fixture_teardown);
}
