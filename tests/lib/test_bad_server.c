/* The library against a server that misbehaves in ways momento-local never
 * does (tests/common/fake_server.c): batch replies with the wrong number of
 * messages, ListCaches tokens that repeat or never end, pages slower than
 * the client's timeout. Each must end in one callback with a clear error,
 * bounded in time and memory. */
#include "fake_server.h"
#include "momento/coalescer.h"
#include "momento/metrics.h"
#include "testutil.h"

#include "cacheclient.pb-c.h"
#include "controlclient.pb-c.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static grpc_slice pack(const ProtobufCMessage *m)
{
    grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));
    protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
    return s;
}

/* A Get's reply: a hit of "v". */
static grpc_slice pack_hit(void)
{
    CacheClient__GetResponse m = CACHE_CLIENT____GET_RESPONSE__INIT;
    m.result = CACHE_CLIENT__ECACHE_RESULT__Hit;
    m.cache_body.data = (uint8_t *)"v";
    m.cache_body.len = 1;
    return pack(&m.base);
}

static momento_client *client_for(tu_fake *f, uint32_t timeout_ms)
{
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, timeout_ms);
    momento_config_set_retries(cfg, 1);
    momento_client *c = tu_client_at(tu_fake_endpoint(f), cfg);
    momento_config_free(cfg);
    return c;
}

/* ---- batches: one reply per key, no more, no less -------------------- */

static size_t hits_per_reply; /* messages the fake streams per call */

static bool hits(void *arg, size_t call, size_t i, grpc_slice *msg)
{
    (void)arg;
    (void)call;
    if (i >= hits_per_reply)
        return false;
    *msg = pack_hit();
    return true;
}

/* ---- a reply's trailing metadata, in callbacks, hook and copies ------- */

/* Whether `r` has the reply's trailers as the fake sends them for the
 * call-th call (callbacks run on the client's thread: no assert there). */
static bool trailers_ok(const momento_result *r, size_t call)
{
    char want[32];
    snprintf(want, sizeof(want), "%zu", call);
    const momento_metadata *a = momento_result_trailer(r, 0), *b = momento_result_trailer(r, 1);
    return momento_result_trailer_count(r) == 2 && a && b && !momento_result_trailer(r, 2) &&
           a->name_len == 9 && memcmp(a->name, "fake-call", 9) == 0 &&
           a->value_len == strlen(want) && memcmp(a->value, want, a->value_len) == 0 &&
           b->name_len == 16 && memcmp(b->name, "fake-trailer-bin", 16) == 0 &&
           b->value_len == 3 && memcmp(b->value, "\x00\xffx", 3) == 0;
}

typedef struct trailer_seen {
    tu_counter k;             /* first: tu_count_cb() takes it */
    size_t call;              /* the fake call every result must come from */
    _Atomic int hook_ok, hook_bad, cb_bad;
} trailer_seen;

static void trailer_hook(const momento_request_metrics *m, void *ud)
{
    trailer_seen *ts = ud;
    if (trailers_ok(m->result, ts->call))
        ts->hook_ok++;
    else
        ts->hook_bad++;
}

static void trailer_cb(const momento_result *r, void *ud)
{
    trailer_seen *ts = ud;
    if (momento_result_outcome(r) != MOMENTO_OUTCOME_HIT || !trailers_ok(r, ts->call))
        ts->cb_bad++;
    tu_count_cb(r, &ts->k);
}

static void test_reply_trailers(void **state)
{
    (void)state;
    hits_per_reply = 1;
    tu_fake *f = tu_fake_start(hits, NULL, 0);
    trailer_seen ts = {.call = 0};
    tu_counter_init(&ts.k);
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000));
    momento_config_set_metrics(cfg, trailer_hook, &ts);
    momento_client *c = tu_client_at(tu_fake_endpoint(f), cfg);
    momento_config_free(cfg);

    /* A plain get: its callback and its hook call. */
    assert_int_equal(momento_get(c, "c", MOMENTO_STR("k"), NULL, trailer_cb, &ts), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&ts.k, 1, (int)TU_MS(10000)), 1);
    assert_int_equal(ts.hook_ok, 1);

    /* Three coalesced waiters of one call: each sees that call's. The
     * fake holds the call's reply until all three are in, so they share
     * it on any machine. */
    ts.call = 1;
    tu_fake_hold_from(f, 1);
    momento_coalescer *co = tu_coalescer(c);
    for (int i = 0; i < 3; i++)
        assert_int_equal(momento_coalescing_get(co, "c", MOMENTO_STR("k"), NULL, trailer_cb, &ts),
                         MOMENTO_OK);
    tu_wait_until(tu_fake_calls(f) >= 2, 30000);
    tu_fake_release(f);
    assert_int_equal(tu_counter_wait(&ts.k, 4, (int)TU_MS(10000)), 4);
    assert_int_equal(ts.hook_ok, 4);
    assert_int_equal(tu_fake_calls(f), 2);
    momento_coalescer_free(co);

    /* A blocking call's result is a copy: it keeps them, NUL-terminated. */
    ts.call = 2;
    momento_result *r;
    assert_int_equal(momento_get_sync(c, "c", MOMENTO_STR("k"), NULL, &r), MOMENTO_OK);
    assert_true(trailers_ok(r, 2));
    assert_int_equal(momento_result_trailer(r, 0)->name[9], '\0');
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_true(trailers_ok(copy, 2));
    momento_result_free(copy);
    assert_int_equal(ts.hook_ok, 5);
    assert_int_equal(ts.hook_bad, 0);
    assert_int_equal(ts.cb_bad, 0);

    momento_client_free(c);
    tu_fake_stop(f);
    tu_counter_destroy(&ts.k);
}

/* Call 0 is a plain Get (one hit), call 1 the GetBatch of two. */
static bool one_then_two(void *arg, size_t call, size_t i, grpc_slice *msg)
{
    (void)arg;
    if (i >= call + 1)
        return false;
    *msg = pack_hit();
    return true;
}

typedef struct expect_call {
    tu_counter *k;
    size_t call;
    _Atomic int ok;
} expect_call;

static void expect_call_cb(const momento_result *r, void *ud)
{
    expect_call *e = ud;
    e->ok = momento_result_outcome(r) == MOMENTO_OUTCOME_HIT && trailers_ok(r, e->call);
    tu_count_cb(r, e->k);
}

/* Batched gets: each item of the GetBatch sees that RPC's trailers. */
static void test_batched_reply_trailers(void **state)
{
    (void)state;
    tu_fake *f = tu_fake_start(one_then_two, NULL, 0);
    /* The first get's reply waits until the next two are queued behind
     * it, whatever the machine's speed. */
    tu_fake_hold_from(f, 0);
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000));
    /* One RPC in flight is enough to queue: the next two wait for it -
     * for its completion only, not a time (a loaded machine may submit
     * them more than the default 1 ms apart). */
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1u << 20), MOMENTO_OK);
    assert_int_equal(momento_config_set_batching_max_wait(cfg, 0), MOMENTO_OK);
    /* Connected before the first get: calls started while a channel
     * connects go out in any order, and the fake numbers calls as they
     * come. */
    assert_int_equal(momento_config_set_eager_connect(cfg, (uint32_t)TU_MS(30000)), MOMENTO_OK);
    momento_client *c = tu_client_at(tu_fake_endpoint(f), cfg);
    momento_config_free(cfg);
    tu_counter k;
    tu_counter_init(&k);
    expect_call e[3] = {{&k, 0, 0}, {&k, 1, 0}, {&k, 1, 0}};
    assert_int_equal(momento_get(c, "c", MOMENTO_STR("a"), NULL, expect_call_cb, &e[0]),
                     MOMENTO_OK);
    assert_int_equal(momento_get(c, "c", MOMENTO_STR("b"), NULL, expect_call_cb, &e[1]),
                     MOMENTO_OK);
    assert_int_equal(momento_get(c, "c", MOMENTO_STR("d"), NULL, expect_call_cb, &e[2]),
                     MOMENTO_OK);
    /* Released once the fake has the first get (in flight, so the other
     * two are queued behind it). */
    tu_wait_until(tu_fake_calls(f) >= 1, 30000);
    tu_fake_release(f);
    assert_int_equal(tu_counter_wait(&k, 3, (int)TU_MS(10000)), 3);
    for (int i = 0; i < 3; i++)
        assert_true(e[i].ok);
    momento_client_batching_stats st;
    assert_int_equal(momento_client_batching_stats_get(c, &st, sizeof(st)), MOMENTO_OK);
    assert_int_equal(st.batches, 1);
    assert_int_equal(st.batched_keys, 2);
    assert_int_equal(tu_fake_calls(f), 2);
    momento_client_free(c);
    tu_fake_stop(f);
    tu_counter_destroy(&k);
}

static void test_batch_reply_count_is_checked(void **state)
{
    (void)state;
    tu_fake *f = tu_fake_start(hits, NULL, 0);
    momento_client *c = client_for(f, 5000);
    const void *keys[2] = {"a", "b"};
    size_t lens[2] = {1, 1};
    static const size_t counts[] = {0, 1, 3, 2};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        hits_per_reply = counts[i];
        momento_result *r;
        int rc = momento_get_batch_sync(c, "c", keys, lens, 2, NULL, &r);
        if (counts[i] == 2) {
            assert_int_equal(rc, MOMENTO_OK);
            assert_int_equal(momento_result_item_count(r), 2);
        } else {
            assert_int_equal(rc, MOMENTO_ERR_BAD_RESPONSE);
            assert_int_equal(momento_result_item_count(r), 0);
            assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_ERROR);
        }
        momento_result_free(r);
    }
    /* A set batch's replies are counted the same way. */
    hits_per_reply = 1;
    const void *vals[2] = {"x", "y"};
    assert_int_equal(momento_set_batch_sync(c, "c", keys, lens, vals, lens, 2, 0, NULL, NULL),
                     MOMENTO_ERR_BAD_RESPONSE);

    /* 100,000 replies for 2 keys: the client stops reading at the third and
     * cancels, so the server cannot make it hold them all. */
    hits_per_reply = 100000;
    momento_result *r;
    assert_int_equal(momento_get_batch_sync(c, "c", keys, lens, 2, NULL, &r), MOMENTO_ERR_BAD_RESPONSE);
    assert_int_equal(momento_result_item_count(r), 0);
    assert_non_null(strstr(momento_result_message(r), "more replies"));
    momento_result_free(r);
    momento_client_free(c);
    tu_fake_stop(f);
}

/* ---- ListCaches: one deadline, and no endless paging ---------------- */

/* THREE_PAGES: new tokens on the first two pages, none on the third. */
typedef enum { SAME_TOKEN, NEW_TOKENS, THREE_PAGES } token_mode;

static bool page(void *arg, size_t call, size_t i, grpc_slice *msg)
{
    token_mode mode = *(token_mode *)arg;
    if (i > 0)
        return false;
    char name[32], token[32];
    snprintf(name, sizeof(name), "cache-%zu", call);
    snprintf(token, sizeof(token), mode == SAME_TOKEN ? "again" : "t%zu", call);
    if (mode == THREE_PAGES && call >= 2)
        token[0] = '\0';
    ControlClient__Cache cache = CONTROL_CLIENT____CACHE__INIT;
    cache.cache_name = name;
    ControlClient__Cache *caches[1] = {&cache};
    ControlClient__ListCachesResponse m = CONTROL_CLIENT____LIST_CACHES_RESPONSE__INIT;
    m.n_cache = 1;
    m.cache = caches;
    m.next_token = token;
    *msg = pack(&m.base);
    return true;
}

/* Lists the caches of a fake paging as `mode` says, with a timeout of
 * `timeout_ms`: the listing must fail BAD_RESPONSE, its message naming
 * `why`, after `calls` calls to the fake. Answers the caches the failed
 * result holds. */
static size_t listing_fails(token_mode mode, uint32_t timeout_ms, const char *why, size_t calls)
{
    tu_fake *f = tu_fake_start(page, &mode, 0);
    momento_client *c = client_for(f, timeout_ms);
    momento_result *r;
    assert_int_equal(momento_list_caches_sync(c, NULL, &r), MOMENTO_ERR_BAD_RESPONSE);
    size_t caches = momento_result_cache_count(r);
    assert_non_null(strstr(momento_result_message(r), why));
    momento_result_free(r);
    assert_int_equal(tu_fake_calls(f), calls);
    momento_client_free(c);
    tu_fake_stop(f);
    return caches;
}

static void test_repeated_token_stops_the_listing(void **state)
{
    (void)state;
    /* Two calls: the first page, then the page asked for with "again",
     * which answered "again" once more. */
    assert_int_equal(listing_fails(SAME_TOKEN, 5000, "token", 2), 0);
}

static void test_endless_pages_are_capped(void **state)
{
    (void)state;
    listing_fails(NEW_TOKENS, (uint32_t)TU_MS(60000), "pages", 1000);
}

static void test_listing_has_one_deadline(void **state)
{
    (void)state;
    /* Three pages of 600 ms each against a 1 s timeout: one deadline for
     * the listing ends it in the second page (TIMEOUT, the third page never
     * asked for), where a deadline per page would let all three through
     * (OK). The pages' 1.8 s are a lower bound (the fake sleeps them), so
     * no machine's load can make the listing fit. */
    token_mode mode = THREE_PAGES;
    tu_fake *f = tu_fake_start(page, &mode, 600);
    momento_client *c = client_for(f, 1000);
    int64_t t0 = tu_now_ms();
    momento_result *r;
    assert_int_equal(momento_list_caches_sync(c, NULL, &r), MOMENTO_ERR_TIMEOUT);
    int64_t took = tu_now_ms() - t0;
    momento_result_free(r);
    assert_true(took >= 1000 - 50); /* not before the deadline */
    assert_true(tu_fake_calls(f) <= 2);
    momento_client_free(c);
    tu_fake_stop(f);

    /* The deadline, not a page later: the second page is held until the
     * test releases it, and the listing ends (TIMEOUT) while it is still
     * held - the fake has sent the first page's message and no other. */
    mode = NEW_TOKENS;
    f = tu_fake_start(page, &mode, 0);
    tu_fake_hold_from(f, 1);
    c = client_for(f, 1000);
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_list_caches(c, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 1, (int)TU_MS(60000)), 1);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_TIMEOUT), 1);
    assert_int_equal(tu_fake_messages(f), 1);
    tu_fake_release(f);
    momento_client_free(c);
    tu_fake_stop(f);
    tu_counter_destroy(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_reply_count_is_checked),
        cmocka_unit_test(test_reply_trailers),
        cmocka_unit_test(test_batched_reply_trailers),
        cmocka_unit_test(test_repeated_token_stops_the_listing),
        cmocka_unit_test(test_endless_pages_are_capped),
        cmocka_unit_test(test_listing_has_one_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
