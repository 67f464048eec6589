/* The scalar API beyond get/set/delete, against the local server: every
 * operation, every outcome, both branches of each condition, batches of
 * 1,000 keys, and the documented refusals. */
#include "client.h" /* momento__client_add_header, for fault injection */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static momento_local *server;
static momento_client *client;

static int setup(void **state)
{
    (void)state;
    momento_local_options *o;
    momento_local_options_new(&o);
    momento_local_options_add_cache(o, "c");
    server = tu_server(o);
    momento_local_options_free(o);
    client = tu_client(server, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    momento_client_free(client);
    momento_local_stop(server);
    return 0;
}

static void put(const char *key, const char *value)
{
    assert_int_equal(momento_set_sync(client, "c", key, strlen(key), value, strlen(value), 0, NULL, NULL),
                     MOMENTO_OK);
}

static void check_value(const char *key, const char *want)
{
    momento_result *r;
    assert_int_equal(momento_get_sync(client, "c", key, strlen(key), NULL, &r), MOMENTO_OK);
    if (!want) {
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    } else {
        size_t len;
        const void *v = momento_result_value(r, &len);
        assert_true(momento_result_is_hit(r));
        assert_int_equal(len, strlen(want));
        assert_memory_equal(v, want, len);
    }
    momento_result_free(r);
}

/* Runs a conditional set and returns its outcome. */
static momento_outcome cond_set(const char *key, const char *value, momento_condition cond,
                                const char *compare)
{
    momento_result *r;
    int rc = momento_set_if_sync(client, "c", key, strlen(key), value, strlen(value), 0, cond,
                                 compare, compare ? strlen(compare) : 0, NULL, &r);
    assert_int_equal(rc, MOMENTO_OK);
    momento_outcome o = momento_result_outcome(r);
    momento_result_free(r);
    return o;
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

typedef struct outcome_box {
    tu_counter k;
    momento_outcome outcome;
} outcome_box;

static void keep_outcome(const momento_result *r, void *ud)
{
    outcome_box *b = ud;
    b->outcome = momento_result_outcome(r);
    tu_count_cb(r, &b->k);
}

static void test_named_conditional_sets_async(void **state)
{
    (void)state;
    outcome_box b;
    tu_counter_init(&b.k);
    size_t waited = 0;
#define RUN(call, want)                                                                            \
    do {                                                                                           \
        assert_int_equal((call), MOMENTO_OK);                                                      \
        waited++;                                                                                  \
        assert_int_equal(tu_counter_wait(&b.k, waited, 5000), waited);                             \
        assert_int_equal(b.outcome, (want));                                                       \
    } while (0)
    RUN(momento_set_if_not_exists(client, "c", "n1", 2, "v", 1, 0, NULL, keep_outcome, &b), MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_absent(client, "c", "n1", 2, "w", 1, 0, NULL, keep_outcome, &b), MOMENTO_OUTCOME_NOT_STORED);
    RUN(momento_set_if_present(client, "c", "n1", 2, "w", 1, 0, NULL, keep_outcome, &b), MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_equal(client, "c", "n1", 2, "x", 1, 0, "w", 1, NULL, keep_outcome, &b), MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_not_equal(client, "c", "n1", 2, "y", 1, 0, "x", 1, NULL, keep_outcome, &b), MOMENTO_OUTCOME_NOT_STORED);
    RUN(momento_set_if_present_and_not_equal(client, "c", "n1", 2, "y", 1, 0, "q", 1, NULL, keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
    RUN(momento_set_if_absent_or_equal(client, "c", "n1", 2, "z", 1, 0, "y", 1, NULL, keep_outcome, &b),
        MOMENTO_OUTCOME_STORED);
#undef RUN
    check_value("n1", "z");
    tu_counter_destroy(&b.k);
}

static void test_increment(void **state)
{
    (void)state;
    momento_result *r;
    assert_int_equal(momento_increment_sync(client, "c", "ctr", 3, 5, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_int(r), 5);
    momento_result_free(r);
    assert_int_equal(momento_increment_sync(client, "c", "ctr", 3, -12, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_int(r), -7);
    momento_result_free(r);
    check_value("ctr", "-7");
    put("text", "abc");
    assert_int_equal(momento_increment_sync(client, "c", "text", 4, 1, 0, NULL, &r), MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_result_grpc_status(r), 9);
    momento_result_free(r);
    put("big", "9223372036854775807");
    assert_int_equal(momento_increment_sync(client, "c", "big", 3, 1, 0, NULL, NULL), MOMENTO_ERR_FAILED_PRECONDITION);
}

static void test_keys_exist(void **state)
{
    (void)state;
    put("e1", "v");
    put("e3", "v");
    const void *keys[4] = {"e1", "e2", "e3", "e1"};
    size_t lens[4] = {2, 2, 2, 2};
    momento_result *r;
    assert_int_equal(momento_keys_exist_sync(client, "c", keys, lens, 4, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_exists_count(r), 4);
    assert_int_equal(momento_result_exists(r, 0), 1);
    assert_int_equal(momento_result_exists(r, 1), 0);
    assert_int_equal(momento_result_exists(r, 2), 1);
    assert_int_equal(momento_result_exists(r, 3), 1);
    assert_int_equal(momento_result_exists(r, 4), -1);
    momento_result_free(r);
    assert_int_equal(momento_key_exists_sync(client, "c", "e2", 2, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_exists_count(r), 1);
    assert_int_equal(momento_result_exists(r, 0), 0);
    momento_result_free(r);
    assert_int_equal(momento_keys_exist_sync(client, "c", keys, lens, 0, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(r);
    size_t bad[2] = {2, 0};
    assert_int_equal(momento_keys_exist_sync(client, "c", keys, bad, 2, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
}

static uint64_t ttl_of(const char *key, momento_outcome *outcome)
{
    momento_result *r;
    assert_int_equal(momento_item_get_ttl_sync(client, "c", key, strlen(key), NULL, &r), MOMENTO_OK);
    *outcome = momento_result_outcome(r);
    uint64_t v = momento_result_ttl_ms(r);
    momento_result_free(r);
    return v;
}

static momento_outcome ttl_op(int which, const char *key, uint64_t ms)
{
    momento_result *r;
    int rc = which == 0   ? momento_update_ttl_sync(client, "c", key, strlen(key), ms, NULL, &r)
             : which == 1 ? momento_increase_ttl_sync(client, "c", key, strlen(key), ms, NULL, &r)
                          : momento_decrease_ttl_sync(client, "c", key, strlen(key), ms, NULL, &r);
    assert_int_equal(rc, MOMENTO_OK);
    momento_outcome o = momento_result_outcome(r);
    momento_result_free(r);
    return o;
}

static void test_ttl_operations(void **state)
{
    (void)state;
    momento_outcome o;
    assert_int_equal(momento_set_sync(client, "c", "t", 1, "v", 1, 10000, NULL, NULL), MOMENTO_OK);
    uint64_t left = ttl_of("t", &o);
    assert_int_equal(o, MOMENTO_OUTCOME_HIT);
    assert_true(left > 9000 && left <= 10000);
    ttl_of("absent", &o);
    assert_int_equal(o, MOMENTO_OUTCOME_MISS);

    assert_int_equal(ttl_op(1, "t", 5000), MOMENTO_OUTCOME_TTL_NOT_UPDATED);  /* not longer */
    assert_int_equal(ttl_op(1, "t", 30000), MOMENTO_OUTCOME_TTL_UPDATED);
    assert_true(ttl_of("t", &o) > 29000);
    assert_int_equal(ttl_op(2, "t", 60000), MOMENTO_OUTCOME_TTL_NOT_UPDATED); /* not shorter */
    assert_int_equal(ttl_op(2, "t", 4000), MOMENTO_OUTCOME_TTL_UPDATED);
    assert_true(ttl_of("t", &o) <= 4000);
    assert_int_equal(ttl_op(0, "t", 20000), MOMENTO_OUTCOME_TTL_UPDATED);     /* always */
    assert_true(ttl_of("t", &o) > 19000);
    for (int which = 0; which < 3; which++)
        assert_int_equal(ttl_op(which, "absent", 1000), MOMENTO_OUTCOME_MISS);
    /* A decrease takes effect: the item expires. */
    assert_int_equal(ttl_op(2, "t", 100), MOMENTO_OUTCOME_TTL_UPDATED);
    usleep(200 * 1000);
    check_value("t", NULL);
    assert_int_equal(momento_update_ttl_sync(client, "c", "t", 1, 0, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
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
    assert_int_equal(momento_item_get_type_sync(client, "c", "typed", 5, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_SCALAR);
    assert_int_equal(momento_result_attempts(r), 1);
    momento_result_free(r);

    assert_int_equal(momento_item_get_type_sync(client, "c", "untyped", 7, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_NONE);
    momento_result_free(r);

    /* An expired item is a miss; so is a deleted one. */
    assert_int_equal(momento_set_sync(client, "c", "brief", 5, "v", 1, 50, NULL, NULL), MOMENTO_OK);
    usleep(120 * 1000);
    assert_int_equal(momento_item_get_type_sync(client, "c", "brief", 5, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);
    assert_int_equal(momento_delete_sync(client, "c", "typed", 5, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_item_get_type_sync(client, "c", "typed", 5, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    momento_result_free(r);

    /* Async, many at once, each called back once with the type. */
    put("typed", "v");
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 50; i++)
        assert_int_equal(momento_item_get_type(client, "c", "typed", 5, NULL, type_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 50, 5000), 50);
    assert_int_equal(k.ok, 50);
    assert_int_equal(k.bad_values, 0);
    tu_counter_destroy(&k);

    /* Refusals, an unknown cache, and the server's count of the RPC. */
    assert_int_equal(momento_item_get_type(client, "c", "k", 1, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_type_sync(client, "c", "", 0, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(r);
    assert_int_equal(momento_item_get_type_sync(client, "", "k", 1, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(r);
    assert_int_equal(momento_item_get_type_sync(NULL, "c", "k", 1, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_type_sync(client, "nope", "k", 1, NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_grpc_status(r), 5);
    momento_result_free(r);
    assert_int_equal(momento_local_rpc_count(server, "ItemGetType", 0), 54);
    assert_int_equal(momento_local_rpc_count(server, "ItemGetType", 5), 1);

    /* Idempotent, as the official SDKs treat it: UNAVAILABLE is retried. */
    momento_client *faulty = tu_client(server, NULL);
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
    assert_int_equal(momento_set_batch_sync(client, "c", ek, ekl, ev, evl, N / 2, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), N / 2);
    for (size_t i = 0; i < N / 2; i++)
        assert_int_equal(momento_result_outcome(momento_result_item(r, i)), MOMENTO_OUTCOME_SUCCESS);
    momento_result_free(r);
    momento_local_reset_stats(server);
    /* ...then read all 1,000: hits and misses alternate, in request order. */
    assert_int_equal(momento_get_batch_sync(client, "c", keys, klens, N, NULL, &r), MOMENTO_OK);
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
    assert_int_equal(momento_local_rpc_count(server, "GetBatch", 0), 1); /* one RPC for all */
    assert_int_equal(momento_local_rpc_count(server, "Get", -1), 0);
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
    assert_int_equal(momento_get_batch_sync(client, "c", keys, lens, 0, NULL, &r), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_null(r);
    assert_int_equal(momento_set_batch_sync(client, "c", keys, lens, vals, vlens, 0, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* One bad key refuses the whole batch, before sending. */
    assert_int_equal(momento_get_batch_sync(client, "c", keys, lens, 2, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_batch_sync(client, "c", keys, lens, NULL, vlens, 1, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* Unknown cache: the stream's status reaches the caller. */
    assert_int_equal(momento_get_batch_sync(client, "nope", keys, lens, 1, NULL, &r), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_item_count(r), 0);
    momento_result_free(r);
    /* Over the item limit inside a batch: the server's answer. */
    size_t big = MOMENTO_MAX_ITEM_BYTES - 2;
    char *bigval = calloc(1, big);
    const void *bv[1] = {bigval};
    size_t bvl[1] = {big};
    assert_int_equal(momento_set_batch_sync(client, "c", keys, lens, bv, bvl, 1, 0, NULL, NULL), MOMENTO_OK);
    free(bigval);
    /* Conditions and TTLs checked up front. */
    assert_int_equal(momento_set_if_sync(client, "c", "k", 1, "v", 1, 0, (momento_condition)99, NULL, 0, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_if_sync(client, "c", "k", 1, "v", 1, 0, MOMENTO_IF_EQUAL, NULL, 3, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_increment_sync(client, "", "k", 1, 1, 0, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_item_get_ttl_sync(client, "c", NULL, 1, NULL, NULL), MOMENTO_ERR_INVALID_ARGUMENT);
    /* Unknown cache on each scalar op. */
    assert_int_equal(momento_increment_sync(client, "nope", "k", 1, 1, 0, NULL, NULL), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_set_if_sync(client, "nope", "k", 1, "v", 1, 0, MOMENTO_IF_ABSENT, NULL, 0, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_item_get_ttl_sync(client, "nope", "k", 1, NULL, NULL), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_update_ttl_sync(client, "nope", "k", 1, 5, NULL, NULL), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_key_exists_sync(client, "nope", "k", 1, NULL, NULL), MOMENTO_ERR_CACHE_NOT_FOUND);
}

typedef struct dup_box {
    tu_counter k;
    momento_result *copy;
} dup_box;

static void keep_copy(const momento_result *r, void *ud)
{
    dup_box *b = ud;
    assert_int_equal(momento_result_dup(r, &b->copy), MOMENTO_OK);
    tu_count_cb(r, &b->k);
}

static void test_batch_result_survives_dup(void **state)
{
    (void)state;
    put("d1", "one");
    put("d3", "three");
    const void *keys[3] = {"d1", "d2", "d3"};
    size_t lens[3] = {2, 2, 2};
    dup_box b = {.copy = NULL};
    tu_counter_init(&b.k);
    assert_int_equal(momento_get_batch(client, "c", keys, lens, 3, NULL, keep_copy, &b), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&b.k, 1, 5000), 1);
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
        cmocka_unit_test(test_batch_result_survives_dup),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
