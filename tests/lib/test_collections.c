/* Dictionaries and sets through the library, against the local server:
 * each operation's outcome and values, CollectionTtl, misses, emptied
 * collections, type mismatches, refusals at submit, and owned copies of
 * collection results. */
#include "momento/coalescer.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

/* Whether `r`'s item i has field `f` (NULL: any) and value `v`. */
static int item_is(const momento_result *r, size_t i, const char *f, const char *v)
{
    const momento_result *it = momento_result_item(r, i);
    size_t len;
    const void *p;
    if (f) {
        p = momento_result_field(it, &len);
        if (!p || len != strlen(f) || memcmp(p, f, len) != 0)
            return 0;
    }
    p = momento_result_value(it, &len);
    return p && len == strlen(v) && memcmp(p, v, len) == 0;
}

/* The value of `field` among a fetch's items, or NULL. */
static const momento_result *entry(const momento_result *r, const char *field)
{
    for (size_t i = 0; i < momento_result_item_count(r); i++) {
        size_t len;
        const void *f = momento_result_field(momento_result_item(r, i), &len);
        if (len == strlen(field) && memcmp(f, field, len) == 0)
            return momento_result_item(r, i);
    }
    return NULL;
}

static void test_dictionary_roundtrip(void **state)
{
    (void)state;
    momento_result *r;
    tu_expect(momento_dictionary_fetch_sync(tu_fx.client, "c", MOMENTO_STR("d1"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);

    tu_expect(momento_dictionary_set_field_sync(tu_fx.client, "c", MOMENTO_STR("d1"),
                                                MOMENTO_STR("a"), MOMENTO_STR("1"), NULL, NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
    const void *fields[] = {"b", "", "a"};
    size_t field_lens[] = {1, 0, 1};
    const void *values[] = {"two", "empty-field", "one"};
    size_t value_lens[] = {3, 11, 3};
    assert_int_equal(momento_dictionary_set_fields_sync(tu_fx.client, "c", MOMENTO_STR("d1"),
                                                        fields, field_lens, values, value_lens, 3,
                                                        NULL, NULL, NULL),
                     MOMENTO_OK);

    /* Fetch: every entry, "a" overwritten, the empty field kept. */
    assert_int_equal(momento_dictionary_fetch_sync(tu_fx.client, "c", MOMENTO_STR("d1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_count(r), 3);
    const momento_result *e = entry(r, "a");
    assert_non_null(e);
    size_t len;
    assert_memory_equal(momento_result_value(e, &len), "one", 3);
    e = entry(r, "");
    assert_non_null(e);
    assert_non_null(momento_result_field(e, &len));
    assert_int_equal(len, 0);
    assert_memory_equal(momento_result_value(e, &len), "empty-field", 11);
    /* An owned copy keeps fields and values. */
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_non_null(entry(copy, "b"));
    assert_memory_equal(momento_result_value(entry(copy, "b"), &len), "two", 3);
    momento_result_free(copy);

    /* Get fields: per field, in request order. */
    const void *ask[] = {"b", "zzz", "a"};
    size_t ask_lens[] = {1, 3, 1};
    assert_int_equal(momento_dictionary_get_fields_sync(tu_fx.client, "c", MOMENTO_STR("d1"), ask,
                                                        ask_lens, 3, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_count(r), 3);
    assert_true(item_is(r, 0, "b", "two"));
    assert_int_equal(momento_result_outcome(momento_result_item(r, 1)), MOMENTO_OUTCOME_MISS);
    assert_memory_equal(momento_result_field(momento_result_item(r, 1), &len), "zzz", 3);
    assert_int_equal(len, 3);
    assert_true(item_is(r, 2, "a", "one"));
    /* ...and an owned copy keeps them. */
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    assert_true(item_is(copy, 0, "b", "two"));
    momento_result_free(copy);
    momento_result_free(r);

    assert_int_equal(momento_dictionary_get_field_sync(tu_fx.client, "c", MOMENTO_STR("d1"),
                                                       MOMENTO_STR("b"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_memory_equal(momento_result_value(r, &len), "two", 3);
    momento_result_free(r);
    tu_expect(momento_dictionary_get_field_sync(tu_fx.client, "c", MOMENTO_STR("d1"),
                                                MOMENTO_STR("no"), NULL, &r),
              r, MOMENTO_OUTCOME_MISS);
    tu_expect(momento_dictionary_get_field_sync(tu_fx.client, "c", MOMENTO_STR("none"),
                                                MOMENTO_STR("b"), NULL, &r),
              r, MOMENTO_OUTCOME_MISS);

    assert_int_equal(momento_dictionary_length_sync(tu_fx.client, "c", MOMENTO_STR("d1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_int(r), 3);
    momento_result_free(r);

    /* Removing every field deletes the dictionary: a miss, no type left. */
    assert_int_equal(momento_dictionary_remove_fields_sync(tu_fx.client, "c", MOMENTO_STR("d1"),
                                                           fields, field_lens, 2, NULL, NULL),
                     MOMENTO_OK);
    tu_expect(momento_dictionary_remove_field_sync(tu_fx.client, "c", MOMENTO_STR("d1"),
                                                   MOMENTO_STR("a"), NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
    tu_expect(momento_dictionary_length_sync(tu_fx.client, "c", MOMENTO_STR("d1"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    tu_expect(momento_item_get_type_sync(tu_fx.client, "c", MOMENTO_STR("d1"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
}

static void test_dictionary_increment(void **state)
{
    (void)state;
    momento_result *r;
    assert_int_equal(momento_dictionary_increment_sync(tu_fx.client, "c", MOMENTO_STR("d2"),
                                                       MOMENTO_STR("n"), 5, NULL, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_int(r), 5);
    momento_result_free(r);
    assert_int_equal(momento_dictionary_increment_sync(tu_fx.client, "c", MOMENTO_STR("d2"),
                                                       MOMENTO_STR("n"), -7, NULL, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_int(r), -2);
    momento_result_free(r);
    /* Stored as base-10 text. */
    assert_int_equal(momento_dictionary_get_field_sync(tu_fx.client, "c", MOMENTO_STR("d2"),
                                                       MOMENTO_STR("n"), NULL, &r),
                     MOMENTO_OK);
    size_t len;
    const void *v = momento_result_value(r, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(v, "-2", 2);
    momento_result_free(r);
    /* A field that holds no integer. */
    momento_dictionary_set_field_sync(tu_fx.client, "c", MOMENTO_STR("d2"), MOMENTO_STR("t"),
                                      MOMENTO_STR("text"), NULL, NULL, NULL);
    assert_int_equal(momento_dictionary_increment_sync(tu_fx.client, "c", MOMENTO_STR("d2"),
                                                       MOMENTO_STR("t"), 1, NULL, NULL, &r),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    momento_result_free(r);
}

static uint64_t ttl_left(const char *key)
{
    momento_result *r;
    assert_int_equal(momento_item_get_ttl_sync(tu_fx.client, "c", MOMENTO_STR(key), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    uint64_t ms = momento_result_ttl_ms(r);
    momento_result_free(r);
    return ms;
}

/* CollectionTtl: a write creating the collection sets its TTL; later writes
 * reset it only with refresh. */
static void test_collection_ttl(void **state)
{
    (void)state;
    momento_collection_ttl long_ttl = {600000, 1};
    momento_collection_ttl short_keep = {5000, 0};
    momento_collection_ttl short_refresh = {5000, 1};
    assert_int_equal(momento_set_add_element_sync(tu_fx.client, "c", MOMENTO_STR("s-ttl"),
                                                  MOMENTO_STR("x"), &long_ttl, NULL, NULL),
                     MOMENTO_OK);
    assert_true(ttl_left("s-ttl") > 500000);
    assert_int_equal(momento_set_add_element_sync(tu_fx.client, "c", MOMENTO_STR("s-ttl"),
                                                  MOMENTO_STR("y"), &short_keep, NULL, NULL),
                     MOMENTO_OK);
    assert_true(ttl_left("s-ttl") > 500000);
    assert_int_equal(momento_set_add_element_sync(tu_fx.client, "c", MOMENTO_STR("s-ttl"),
                                                  MOMENTO_STR("z"), &short_refresh, NULL, NULL),
                     MOMENTO_OK);
    assert_true(ttl_left("s-ttl") <= 5000);
    /* Without refresh, a write that creates the collection still sets it. */
    assert_int_equal(momento_dictionary_set_field_sync(tu_fx.client, "c", MOMENTO_STR("d-ttl"),
                                                       MOMENTO_STR("f"), MOMENTO_STR("v"),
                                                       &short_keep, NULL, NULL),
                     MOMENTO_OK);
    assert_true(ttl_left("d-ttl") <= 5000);
}

static int set_has(const momento_result *r, const char *v)
{
    for (size_t i = 0; i < momento_result_item_count(r); i++)
        if (item_is(r, i, NULL, v))
            return 1;
    return 0;
}

static void test_set_roundtrip(void **state)
{
    (void)state;
    momento_result *r;
    const void *els[] = {"a", "b", "c", "b", ""};
    size_t lens[] = {1, 1, 1, 1, 0};
    tu_expect(momento_set_add_elements_sync(tu_fx.client, "c", MOMENTO_STR("s1"), els, lens, 5,
                                            NULL, NULL, &r),
              r, MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_set_fetch_sync(tu_fx.client, "c", MOMENTO_STR("s1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_count(r), 4); /* duplicates once */
    assert_true(set_has(r, "a") && set_has(r, "b") && set_has(r, "c") && set_has(r, ""));
    momento_result_free(r);
    assert_int_equal(momento_set_length_sync(tu_fx.client, "c", MOMENTO_STR("s1"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_int(r), 4);
    momento_result_free(r);

    const void *ask[] = {"c", "q", ""};
    size_t ask_lens[] = {1, 1, 0};
    assert_int_equal(momento_set_contains_elements_sync(tu_fx.client, "c", MOMENTO_STR("s1"), ask,
                                                        ask_lens, 3, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_exists_count(r), 3);
    assert_int_equal(momento_result_exists(r, 0), 1);
    assert_int_equal(momento_result_exists(r, 1), 0);
    assert_int_equal(momento_result_exists(r, 2), 1);
    momento_result_free(r);
    tu_expect(momento_set_contains_elements_sync(tu_fx.client, "c", MOMENTO_STR("nope"), ask,
                                                 ask_lens, 3, NULL, &r),
              r, MOMENTO_OUTCOME_MISS);

    /* Sample: distinct members, min(limit, size) of them. */
    assert_int_equal(momento_set_sample_sync(tu_fx.client, "c", MOMENTO_STR("s1"), 2, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), 2);
    assert_false(item_is(r, 0, NULL, "q"));
    size_t l0, l1;
    const void *v0 = momento_result_value(momento_result_item(r, 0), &l0);
    const void *v1 = momento_result_value(momento_result_item(r, 1), &l1);
    assert_false(l0 == l1 && memcmp(v0, v1, l0) == 0);
    momento_result_free(r);
    assert_int_equal(momento_set_sample_sync(tu_fx.client, "c", MOMENTO_STR("s1"), 100, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), 4);
    momento_result_free(r);

    /* Remove and pop down to nothing: the set is gone. */
    assert_int_equal(momento_set_remove_element_sync(tu_fx.client, "c", MOMENTO_STR("s1"),
                                                     MOMENTO_STR("a"), NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_set_pop_sync(tu_fx.client, "c", MOMENTO_STR("s1"), 2, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_int_equal(momento_result_item_count(r), 2);
    assert_false(set_has(r, "a"));
    momento_result_free(r);
    assert_int_equal(momento_set_pop_sync(tu_fx.client, "c", MOMENTO_STR("s1"), 5, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_count(r), 1);
    momento_result_free(r);
    tu_expect(momento_set_fetch_sync(tu_fx.client, "c", MOMENTO_STR("s1"), NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    tu_expect(momento_set_pop_sync(tu_fx.client, "c", MOMENTO_STR("s1"), 1, NULL, &r), r,
              MOMENTO_OUTCOME_MISS);
    /* Removing from a missing set succeeds. */
    assert_int_equal(momento_set_remove_element_sync(tu_fx.client, "c", MOMENTO_STR("s1"),
                                                     MOMENTO_STR("a"), NULL, NULL),
                     MOMENTO_OK);
}

/* A collection operation on a key of another type. */
static void test_type_mismatch(void **state)
{
    (void)state;
    momento_result *r;
    assert_int_equal(
        momento_set_sync(tu_fx.client, "c", MOMENTO_STR("scalar"), MOMENTO_STR("v"), 0, NULL, NULL),
        MOMENTO_OK);
    momento_set_add_element_sync(tu_fx.client, "c", MOMENTO_STR("a-set"), MOMENTO_STR("x"), NULL,
                                 NULL, NULL);
    assert_int_equal(
        momento_dictionary_fetch_sync(tu_fx.client, "c", MOMENTO_STR("scalar"), NULL, &r),
        MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_result_grpc_status(r), 9);
    momento_result_free(r);
    assert_int_equal(momento_dictionary_set_field_sync(tu_fx.client, "c", MOMENTO_STR("a-set"),
                                                       MOMENTO_STR("f"), MOMENTO_STR("v"), NULL,
                                                       NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_set_length_sync(tu_fx.client, "c", MOMENTO_STR("scalar"), NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    assert_int_equal(momento_get_sync(tu_fx.client, "c", MOMENTO_STR("a-set"), NULL, NULL),
                     MOMENTO_ERR_FAILED_PRECONDITION);
    /* The set is unchanged by the refused writes. */
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", MOMENTO_STR("a-set"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_SET);
    momento_result_free(r);
    assert_int_equal(momento_dictionary_set_field_sync(tu_fx.client, "c", MOMENTO_STR("a-dict"),
                                                       MOMENTO_STR("f"), MOMENTO_STR("v"), NULL,
                                                       NULL, NULL),
                     MOMENTO_OK);
    assert_int_equal(momento_item_get_type_sync(tu_fx.client, "c", MOMENTO_STR("a-dict"), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_item_type(r), MOMENTO_ITEM_TYPE_DICTIONARY);
    momento_result_free(r);
    /* An unknown cache. */
    assert_int_equal(momento_set_fetch_sync(tu_fx.client, "nocache", MOMENTO_STR("s"), NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
}

/* Refused at submit: nothing sent, no callback. */
static void test_refusals(void **state)
{
    (void)state;
    const void *one[] = {"x"};
    size_t one_len[] = {1};
    const void *bad[] = {NULL};
    size_t bad_len[] = {3};
    momento_collection_ttl huge = {MOMENTO_MAX_TTL_MS + 1, 1};
    uint64_t before = momento_local_rpc_count(tu_fx.server, "SetUnion", -1);
    assert_int_equal(momento_set_add_element(tu_fx.client, "c", NULL, 0, MOMENTO_STR("x"), NULL,
                                             NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_element(tu_fx.client, "c", "", 0, MOMENTO_STR("x"), NULL, NULL,
                                             tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_element(tu_fx.client, "c", MOMENTO_STR("s"), NULL, 1, NULL,
                                             NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_elements(tu_fx.client, "c", MOMENTO_STR("s"), one, one_len, 0,
                                              NULL, NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_elements(tu_fx.client, "c", MOMENTO_STR("s"), bad, bad_len, 1,
                                              NULL, NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_elements(tu_fx.client, "c", MOMENTO_STR("s"), NULL, one_len, 1,
                                              NULL, NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_element(tu_fx.client, "c", MOMENTO_STR("s"), MOMENTO_STR("x"),
                                             &huge, NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_element(tu_fx.client, "c\t", MOMENTO_STR("s"),
                                             MOMENTO_STR("x"), NULL, NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_set_add_element(tu_fx.client, "c", MOMENTO_STR("s"), MOMENTO_STR("x"),
                                             NULL, NULL, NULL, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(
        momento_set_pop(tu_fx.client, "c", MOMENTO_STR("s"), 0, NULL, tu_never_cb, NULL),
        MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_dictionary_set_fields(tu_fx.client, "c", MOMENTO_STR("d"), one,
                                                   one_len, NULL, one_len, 1, NULL, NULL,
                                                   tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_dictionary_get_field(tu_fx.client, "c", MOMENTO_STR("d"), NULL, 2,
                                                  NULL, tu_never_cb, NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* Larger than one request can carry. */
    size_t big = 11u * 1024 * 1024;
    char *v = calloc(1, big);
    assert_non_null(v);
    assert_int_equal(momento_dictionary_set_field(tu_fx.client, "c", MOMENTO_STR("d"),
                                                  MOMENTO_STR("f"), v, big, NULL, NULL, tu_never_cb,
                                                  NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    free(v);
    momento_result *r = (momento_result *)1;
    assert_int_equal(momento_set_length_sync(tu_fx.client, "c", NULL, 1, NULL, &r),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    tu_assert_refusal(&r, MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "SetUnion", -1), before);
}

/* A result kept past its callback. */
typedef struct kept {
    pthread_mutex_t lock;
    momento_result *r;
    int done;
} kept;

static void keep_cb(const momento_result *r, void *ud)
{
    kept *k = ud;
    momento_result *copy = NULL;
    momento_result_dup(r, &copy);
    pthread_mutex_lock(&k->lock);
    k->r = copy;
    k->done = 1;
    pthread_mutex_unlock(&k->lock);
}

/* Waits until the server holds `want` calls. */
static void wait_parked(uint64_t want)
{
    tu_wait_until(momento_local_parked_calls(tu_fx.server) == want, 20000);
    assert_int_equal(momento_local_parked_calls(tu_fx.server), want);
}

/* Coalesced collection reads: identical reads share one RPC, different
 * ones do not, and a write of the key closes the reads in flight. The
 * server holds the first fetch and the first get-fields of "a" until the
 * test cancels them (delay-count 2; the client's 30 s deadline caps the
 * 600 s), so their duplicates, and the write, provably come while they
 * are in flight (issue 46: a 300 ms hold was a window). */
static void test_coalesced_reads(void **state)
{
    (void)state;
    momento_client *c = tu_patient_client(tu_fx.server, 30000);
    momento__client_add_header(c, "request-id", "coalesced-reads");
    momento__client_add_header(c, "delay-rpcs", "dictionary-fetch dictionary-get");
    momento__client_add_header(c, "delay-ms", "600000");
    momento__client_add_header(c, "delay-count", "2");
    momento_coalescer *co = tu_coalescer(c);
    assert_int_equal(momento_dictionary_set_field_sync(c, "c", MOMENTO_STR("cd"), MOMENTO_STR("a"),
                                                       MOMENTO_STR("1"), NULL, NULL, NULL),
                     MOMENTO_OK);
    uint64_t fetches = momento_local_rpc_count(tu_fx.server, "DictionaryFetch", -1);
    uint64_t gets = momento_local_rpc_count(tu_fx.server, "DictionaryGet", -1);
    uint64_t parked = momento_local_parked_calls(tu_fx.server);

    /* `held`: the fetch and the get of "a", each with its duplicates,
     * ended by cancelling their tokens. */
    tu_counter held, b;
    tu_counter_init(&held);
    tu_counter_init(&b);
    momento_cancel_token *tf, *ta;
    assert_int_equal(momento_cancel_token_new(&tf), MOMENTO_OK);
    assert_int_equal(momento_cancel_token_new(&ta), MOMENTO_OK);
    momento_request_options of = MOMENTO_REQUEST_OPTIONS_INIT, oa = of;
    of.cancel = tf;
    oa.cancel = ta;
    for (int i = 0; i < 10; i++) {
        assert_int_equal(
            momento_coalescing_dictionary_fetch(co, "c", MOMENTO_STR("cd"), &of, tu_count_cb, &held),
            MOMENTO_OK);
        if (i == 0) /* the first delay is the fetch's */
            wait_parked(parked + 1);
    }
    /* Two different get-fields requests: not the fetch, not each other. */
    assert_int_equal(momento_coalescing_dictionary_get_field(
                         co, "c", MOMENTO_STR("cd"), MOMENTO_STR("a"), &oa, tu_count_cb, &held),
                     MOMENTO_OK);
    wait_parked(parked + 2);
    assert_int_equal(momento_coalescing_dictionary_get_field(
                         co, "c", MOMENTO_STR("cd"), MOMENTO_STR("b"), NULL, tu_count_cb, &b),
                     MOMENTO_OK);
    assert_int_equal(momento_coalescing_dictionary_get_field(
                         co, "c", MOMENTO_STR("cd"), MOMENTO_STR("a"), &oa, tu_count_cb, &held),
                     MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&b, 1, (int)TU_MS(10000)), 1);
    assert_int_equal(b.ok, 1);
    /* A write through the client, then a fetch: it must not join the
     * fetch in flight, and it sees the write. */
    assert_int_equal(momento_dictionary_set_field_sync(c, "c", MOMENTO_STR("cd"), MOMENTO_STR("z"),
                                                       MOMENTO_STR("26"), NULL, NULL, NULL),
                     MOMENTO_OK);
    kept after = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};
    assert_int_equal(
        momento_coalescing_dictionary_fetch(co, "c", MOMENTO_STR("cd"), NULL, keep_cb, &after),
        MOMENTO_OK);
    tu_wait_until(tu_locked_int(&after.lock, &after.done), 10000);
    assert_non_null(after.r);
    assert_non_null(entry(after.r, "z"));
    momento_result_free(after.r);
    /* The first fetch and get of "a" were in flight all along. */
    assert_int_equal(held.total, 0);
    assert_int_equal(momento_local_parked_calls(tu_fx.server), parked + 2);
    momento_coalescer_stats cc = tu_coalescer_stats(co);
    assert_int_equal(cc.read_requests, 14);
    assert_int_equal(cc.read_coalesced, 10);

    momento_cancel(tf);
    momento_cancel(ta);
    assert_int_equal(tu_counter_wait(&held, 12, (int)TU_MS(10000)), 12);
    assert_int_equal(tu_counter_errors(&held, MOMENTO_ERR_CANCELLED), 12);
    tu_counter_destroy(&held);
    tu_counter_destroy(&b);
    momento_cancel_token_free(tf);
    momento_cancel_token_free(ta);
    /* Counted as they leave the server, a moment after the cancels. */
    tu_wait_until(momento_local_rpc_count(tu_fx.server, "DictionaryFetch", -1) == fetches + 2 &&
                      momento_local_rpc_count(tu_fx.server, "DictionaryGet", -1) == gets + 2,
                  10000);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "DictionaryFetch", -1), fetches + 2);
    /* "a" (shared by two) and "b". */
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "DictionaryGet", -1), gets + 2);
    momento_coalescer_free(co);
    momento_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary_roundtrip), cmocka_unit_test(test_dictionary_increment),
        cmocka_unit_test(test_collection_ttl),       cmocka_unit_test(test_set_roundtrip),
        cmocka_unit_test(test_type_mismatch),        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_coalesced_reads),
    };
    return cmocka_run_group_tests(tests, tu_fixture_setup, tu_fixture_teardown);
}
