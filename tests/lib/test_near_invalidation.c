/* Invalidation of near caches across clients (momento_config_set_near_
 * cache_invalidation(), issue 50) against the local server: its refusals;
 * a write or delete through one client drops another's entry long before
 * the bound; a client skips its own messages; a message lost on the way
 * (momento-local's stream-drop-items fault) or a stream that breaks
 * (stream-error) drops every entry, so nothing lost leaves one stale; a
 * client with invalidation and no near cache only publishes; a burst of
 * writes goes in few messages; anything else on the topic is a reset; and
 * exactly one callback per request through the client's free. Each client
 * here has a bound of a minute: an answer that changed within a test came
 * through the topic, never through the bound. */
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LONG_BOUND_MS 60000u
#define TOPIC "near-invalidation"

/* A client of the fixture's server with a near cache (`near_bytes` 0:
 * none, and then no subscription: it only publishes) and invalidation on
 * TOPIC of cache "c"; `headers` (pairs of name, value, `n` pairs) go with
 * every call, its subscription's too. Returns once its subscription is
 * up, so that nothing published after this is missed. */
static momento_client *sync_client_with(size_t near_bytes, const char *const *headers, size_t n)
{
    momento_config *cfg = tu_config();
    if (near_bytes)
        assert_int_equal(momento_config_set_near_cache(cfg, near_bytes, LONG_BOUND_MS), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "c", TOPIC), MOMENTO_OK);
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000)), MOMENTO_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(momento_config_add_header(cfg, headers[2 * i], headers[2 * i + 1]),
                         MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    momento_near_cache_stats st;
    tu_wait_until(momento_client_near_cache_stats_get(c, &st, sizeof(st)) == MOMENTO_OK &&
                      st.subscribed,
                  near_bytes ? 10000 : 0);
    assert_int_equal(st.subscribed, near_bytes ? 1 : 0);
    return c;
}

static momento_client *sync_client(void)
{
    return sync_client_with(1u << 20, NULL, 0);
}

static momento_near_cache_stats stats(const momento_client *c)
{
    momento_near_cache_stats s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(momento_client_near_cache_stats_get(c, &s, sizeof(s)), MOMENTO_OK);
    return s;
}

static void put(momento_client *c, const char *key, const char *value)
{
    momento_result *r = NULL;
    tu_expect(momento_set_sync(c, "c", key, strlen(key), value, strlen(value), 0, NULL, &r), r,
              MOMENTO_OUTCOME_SUCCESS);
}

/* Waits until `c` has heard `n` keys from other clients. */
static void wait_heard(momento_client *c, uint64_t n)
{
    tu_wait_until(stats(c).keys_heard >= n, 10000);
    assert_int_equal(stats(c).keys_heard, n);
}

/* ----------------------------------------------------------------- */

static void test_config_refusals(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_near_cache_invalidation(NULL, "c", "t"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "c", NULL),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(momento_refusal_reason(), "both a cache and a topic"));
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, NULL, "t"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "", "t"),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "c", ""),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    char long_name[300];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = 0;
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "c", long_name),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    /* On, then off: a client made after publishes nothing. */
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "c", "t"), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, NULL, NULL), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    put(c, "k", "v");
    momento_near_cache_stats st = stats(c);
    assert_int_equal(st.keys_published, 0);
    assert_int_equal(st.subscribed, 0);
    assert_int_equal(momento_local_rpc_count(tu_fx.server, "TopicPublish", -1), 0);
    momento_client_free(c);
}

/* A set and a delete through A reach B's near cache through the topic:
 * B's entry, kept for a minute, goes within the wait. */
static void test_write_and_delete_reach_other_client(void **state)
{
    (void)state;
    momento_client *a = sync_client(), *b = sync_client();
    put(a, "k", "v1");
    wait_heard(b, 1); /* before B reads: its news must not drop what B keeps */
    tu_assert_get_str(b, "c", "k", "v1");
    tu_assert_get_str(b, "c", "k", "v1");
    assert_int_equal(stats(b).hits, 1); /* the second from memory */

    put(a, "k", "v2");
    wait_heard(b, 2);
    momento_near_cache_stats was = stats(b);
    assert_int_equal(was.invalidated, 1);
    tu_assert_get_str(b, "c", "k", "v2"); /* from Momento, not the old entry */
    assert_int_equal(stats(b).hits, was.hits);
    tu_assert_get_str(b, "c", "k", "v2");
    assert_int_equal(stats(b).hits, was.hits + 1);

    momento_result *r = NULL;
    tu_expect(momento_delete_sync(a, "c", "k", 1, NULL, &r), r, MOMENTO_OUTCOME_SUCCESS);
    wait_heard(b, 3);
    assert_int_equal(stats(b).invalidated, 2);
    tu_assert_get_str(b, "c", "k", NULL);

    /* A heard none of these: they were its own. */
    assert_int_equal(stats(a).keys_heard, 0);
    assert_int_equal(stats(a).keys_published, 3);
    momento_client_free(a);
    momento_client_free(b);
}

/* A client skips its own messages and hears the others': once A has heard
 * B's key, published after A's own on the same topic, A's was seen first
 * and skipped. */
static void test_own_messages_skipped(void **state)
{
    (void)state;
    momento_client *a = sync_client(), *b = sync_client();
    put(a, "mine", "1");
    wait_heard(b, 1);
    put(b, "theirs", "1");
    wait_heard(a, 1);
    assert_int_equal(stats(a).keys_heard, 1);
    momento_client_free(a);
    momento_client_free(b);
}

/* A message lost on the way to B (the server drops B's third item
 * unseen): B's entry for that key would live its minute, but the next item
 * shows the gap and B drops everything. */
static void test_lost_message_drops_everything(void **state)
{
    (void)state;
    const char *const h[] = {"request-id", "near-lost", "stream-drop-items", "1",
                             "stream-drop-after", "2"};
    momento_client *a = sync_client(), *b = sync_client_with(1u << 20, h, 3);
    put(a, "first", "1"); /* B's first item: delivered */
    put(a, "k", "old");   /* the second: delivered */
    wait_heard(b, 2);
    tu_assert_get_str(b, "c", "k", "old");
    tu_assert_get_str(b, "c", "k", "old"); /* kept */
    momento_near_cache_stats was = stats(b);
    assert_int_equal(was.hits, 1);

    put(a, "k", "new");   /* the third: dropped by the server */
    put(a, "other", "1"); /* the fourth: B sees the gap before it */
    wait_heard(b, 3);
    momento_near_cache_stats st = stats(b);
    assert_int_equal(st.resets, was.resets + 1);
    assert_int_equal(st.invalidated, was.invalidated); /* no key of B's was named */
    assert_int_equal(st.entries, 0);
    tu_assert_get_str(b, "c", "k", "new");
    momento_client_free(a);
    momento_client_free(b);
}

/* B's first stream breaks after its first message (stream-error): B
 * drops everything as it breaks and again as it is back, subscribes again
 * by itself, and hears the others' writes on the new stream. */
static void test_broken_stream_resubscribes(void **state)
{
    (void)state;
    const char *const h[] = {"request-id", "near-break", "stream-error", "unavailable",
                             "stream-error-message-limit", "1"};
    momento_client *b = sync_client_with(1u << 20, h, 3);
    /* Connected, lost, connected again: a reset each (and one more for
     * the discontinuity the library reports, as the break came before any
     * item told it where the topic stood). */
    tu_wait_until(stats(b).resets >= 3 && stats(b).subscribed, 10000);
    momento_near_cache_stats st = stats(b);
    assert_true(st.resets >= 3);
    assert_int_equal(st.subscribed, 1);
    momento_client *a = sync_client();
    put(a, "k", "old");
    wait_heard(b, 1);
    tu_assert_get_str(b, "c", "k", "old");
    put(a, "k", "new");
    wait_heard(b, 2);
    tu_assert_get_str(b, "c", "k", "new");
    momento_client_free(a);
    momento_client_free(b);
}

/* A flush of the cache through A is every key of it written: B drops
 * everything (a reset message) and reads the flushed cache's MISS. */
static void test_flush_resets_the_others(void **state)
{
    (void)state;
    momento_client *a = sync_client(), *b = sync_client();
    put(a, "k", "v");
    wait_heard(b, 1);
    tu_assert_get_str(b, "c", "k", "v");
    tu_assert_get_str(b, "c", "k", "v"); /* kept */
    uint64_t resets = stats(b).resets;
    momento_result *r = NULL;
    tu_expect(momento_flush_cache_sync(a, "c", NULL, &r), r, MOMENTO_OUTCOME_SUCCESS);
    tu_wait_until(stats(b).resets > resets, 10000);
    assert_int_equal(stats(b).resets, resets + 1);
    assert_int_equal(stats(b).entries, 0);
    tu_assert_get_str(b, "c", "k", NULL);
    momento_client_free(a);
    momento_client_free(b);
}

/* A writer without a near cache only publishes; a burst of writes while a
 * publish is on its way goes in fewer messages than keys, and every key
 * reaches the reader. */
static void test_publisher_without_near_cache_batches(void **state)
{
    (void)state;
    momento_client *w = sync_client_with(0, NULL, 0), *b = sync_client();
    enum { N = 200 };
    tu_rec recs[N];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < N; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "burst-%d", i);
        assert_int_equal(momento_set(w, "c", key, (size_t)n, "v", 1, 0, NULL, tu_rec_cb, &recs[i]),
                         MOMENTO_OK);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(tu_rec_wait(&recs[i], 5000), 1);
    tu_wait_until(stats(w).keys_published == N, 10000);
    momento_near_cache_stats st = stats(w);
    assert_int_equal(st.keys_published, N);
    assert_true(st.publishes >= 1 && st.publishes < N);
    assert_int_equal(st.publish_errors, 0);
    assert_int_equal(st.hits + st.misses + st.entries, 0); /* no near cache */
    wait_heard(b, N);
    momento_client_free(w);
    momento_client_free(b);
}

/* Anything on the topic that is not our format drops every entry. */
static void test_foreign_message_is_a_reset(void **state)
{
    (void)state;
    momento_client *b = sync_client();
    put(b, "k", "v");
    tu_assert_get_str(b, "c", "k", "v"); /* from memory: B's set stored it */
    assert_int_equal(stats(b).entries, 1);
    uint64_t resets = stats(b).resets;
    momento_result *r = NULL;
    tu_expect(momento_topic_publish_text_sync(tu_fx.client, "c", TOPIC, "hello", 5, NULL, &r), r,
              MOMENTO_OUTCOME_SUCCESS);
    tu_wait_until(stats(b).resets > resets, 10000);
    assert_int_equal(stats(b).resets, resets + 1);
    assert_int_equal(stats(b).entries, 0);
    momento_client_free(b);
}

/* A topic whose cache does not exist yet: the subscription ends, is made
 * again a second later, and is up once the cache is. */
static void test_subscribes_again_until_the_cache_exists(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_near_cache(cfg, 1u << 20, LONG_BOUND_MS), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache_invalidation(cfg, "later", TOPIC), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    tu_wait_until(momento_local_rpc_count(tu_fx.server, "TopicSubscribe", -1) >= 1, 10000);
    assert_int_equal(stats(c).subscribed, 0);
    tu_create_cache(tu_fx.client, "later");
    tu_wait_until(stats(c).subscribed, 10000);
    assert_int_equal(stats(c).subscribed, 1);
    momento_client_free(c);
}

/* Requests in flight when the client is freed, with publishes pending:
 * each still gets exactly one callback, and the free returns. */
static void test_exactly_once_under_free(void **state)
{
    (void)state;
    momento_client *a = sync_client();
    enum { N = 100 };
    tu_rec recs[N];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < N; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "free-%d", i % 10);
        int rc = i % 2 ? momento_set(a, "c", key, (size_t)n, "v", 1, 0, NULL, tu_rec_cb, &recs[i])
                       : momento_get(a, "c", key, (size_t)n, NULL, tu_rec_cb, &recs[i]);
        assert_int_equal(rc, MOMENTO_OK);
    }
    momento_client_free(a);
    for (int i = 0; i < N; i++)
        assert_int_equal(tu_rec_calls(&recs[i]), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        tu_fixture_test(test_config_refusals),
        tu_fixture_test(test_write_and_delete_reach_other_client),
        tu_fixture_test(test_own_messages_skipped),
        tu_fixture_test(test_lost_message_drops_everything),
        tu_fixture_test(test_broken_stream_resubscribes),
        tu_fixture_test(test_flush_resets_the_others),
        tu_fixture_test(test_publisher_without_near_cache_batches),
        tu_fixture_test(test_foreign_message_is_a_reset),
        tu_fixture_test(test_subscribes_again_until_the_cache_exists),
        tu_fixture_test(test_exactly_once_under_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
