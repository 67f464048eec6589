/* The near cache (momento_config_set_near_cache(), issue 50) against the
 * local server, through the public interface only: its refusals, hits
 * within the staleness bound and none past it, a client reading its own
 * writes (sets, deletes, increments, a read sent before a write), kept
 * misses, a slow reply that cannot stretch the bound, a TTL the client
 * wrote, the memory bound, where and when its answers are called back,
 * the metrics hook, the coalescer, and exactly one callback per request
 * through the client's free. Client A has the near cache; the fixture's
 * client, B, has none and plays another process writing to Momento. */
#include "momento/metrics.h"
#include "testing.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024u * 1024u)
#define LONG_BOUND_MS 60000u

/* A client of the fixture's server with a near cache of `max_bytes` and
 * `staleness_ms`, and `dispatch` mode as given. */
static momento_client *near_client_with(size_t max_bytes, uint32_t staleness_ms, int dispatch,
                                        momento_metrics_fn hook, void *hook_data)
{
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_near_cache(cfg, max_bytes, staleness_ms), MOMENTO_OK);
    assert_int_equal(momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(5000)), MOMENTO_OK);
    if (dispatch)
        assert_int_equal(momento_config_set_dispatch(cfg, 1), MOMENTO_OK);
    if (hook)
        assert_int_equal(momento_config_set_metrics(cfg, hook, hook_data), MOMENTO_OK);
    momento_client *c = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    return c;
}

static momento_client *near_client(size_t max_bytes, uint32_t staleness_ms)
{
    return near_client_with(max_bytes, staleness_ms, 0, NULL, NULL);
}

static momento_near_cache_stats stats(const momento_client *c)
{
    momento_near_cache_stats s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(momento_client_near_cache_stats_get(c, &s, sizeof(s)), MOMENTO_OK);
    return s;
}

/* The stats of `c` after one get that bypassed the near cache since `was`:
 * that get counted once, as bypassed, and as no hit, miss or fill. */
static momento_near_cache_stats one_bypass_since(const momento_client *c,
                                                 momento_near_cache_stats was)
{
    momento_near_cache_stats now = stats(c);
    assert_int_equal(now.bypassed, was.bypassed + 1);
    assert_int_equal(now.hits, was.hits);
    assert_int_equal(now.misses, was.misses);
    assert_int_equal(now.fills, was.fills);
    return now;
}

/* Puts `a` in the fault session `request_id`, where the server holds its
 * first Get `delay_ms` ms. */
static void hold_first_get(momento_client *a, const char *request_id, const char *delay_ms)
{
    const char *const h[] = {"delay-rpcs", "get", "delay-ms", delay_ms, "delay-count", "1"};
    tu_headers(tu_fx.server, a, request_id, h, 3);
}

/* Get RPCs the server has answered: it counts one before it sends the
 * answer, so a count read after a call's callback includes that call. */
static uint64_t server_gets(void)
{
    return momento_local_rpc_count(tu_fx.server, "Get", -1);
}

static void put_bytes(momento_client *c, const char *key, const void *value, size_t len,
                      uint64_t ttl_ms)
{
    momento_result *r = NULL;
    tu_expect(momento_set_sync(c, "c", key, strlen(key), value, len, ttl_ms, NULL, &r), r,
              MOMENTO_OUTCOME_SUCCESS);
}

/* The same through momento_set(), waiting for its callback. */
static void put_async(momento_client *c, const char *key, const char *value, uint64_t ttl_ms)
{
    tu_rec x = {0};
    assert_int_equal(
        momento_set(c, "c", key, strlen(key), value, strlen(value), ttl_ms, NULL, tu_rec_cb, &x),
        MOMENTO_OK);
    assert_int_equal(tu_rec_wait(&x, 5000), 1);
    assert_int_equal(x.error, MOMENTO_OK);
    assert_int_equal(x.outcome, MOMENTO_OUTCOME_SUCCESS);
}

static void put(momento_client *c, const char *key, const char *value)
{
    put_bytes(c, key, value, strlen(value), 0);
}

/* A get of `key` through `c` (with `opts`), which must succeed: returns
 * its outcome and leaves a HIT's value, NUL-terminated, in `val`. */
static momento_outcome get_opts(momento_client *c, const char *key,
                                const momento_request_options *opts, char *val, size_t cap)
{
    momento_result *r = NULL;
    assert_int_equal(momento_get_sync(c, "c", key, strlen(key), opts, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_outcome o = momento_result_outcome(r);
    size_t len = 0;
    const void *v = momento_result_value(r, &len);
    if (val && cap) {
        if (len >= cap)
            len = cap - 1;
        if (v && len)
            memcpy(val, v, len);
        val[v ? len : 0] = 0;
    }
    momento_result_free(r);
    return o;
}

/* Asserts that a get of `key` through `c` is a HIT of `want`, or a MISS
 * when `want` is NULL; a failure names the caller's line (the macros). */
static void expect_get_at(momento_client *c, const char *key, const momento_request_options *opts,
                          const char *want, const char *file, int line)
{
    char got[256];
    momento_outcome o = get_opts(c, key, opts, got, sizeof(got));
    if (want) {
        _assert_int_equal(o, MOMENTO_OUTCOME_HIT, file, line);
        _assert_string_equal(got, want, file, line);
    } else {
        _assert_int_equal(o, MOMENTO_OUTCOME_MISS, file, line);
    }
}
#define expect_get_opts(c, key, opts, want) expect_get_at(c, key, opts, want, __FILE__, __LINE__)
#define expect_get(c, key, want) expect_get_at(c, key, NULL, want, __FILE__, __LINE__)

/* ----------------------------------------------------------------- 1 */

static void test_config_refusals(void **state)
{
    (void)state;
    assert_int_equal(momento_config_set_near_cache(NULL, MIB, 1000), MOMENTO_ERR_INVALID_ARGUMENT);
    momento_config *cfg = tu_config();
    /* Sizes below 4096 bytes, other than 0 (off). */
    assert_int_equal(momento_config_set_near_cache(cfg, 1, 1000), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache(cfg, 4095, 1000), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache(cfg, 4096, 1000), MOMENTO_OK);
#if SIZE_MAX > UINT32_MAX
    /* At most 1 TiB. */
    assert_int_equal(momento_config_set_near_cache(cfg, (size_t)1 << 40, 1000), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache(cfg, ((size_t)1 << 40) + 1, 1000),
                     MOMENTO_ERR_INVALID_ARGUMENT);
#endif
    /* The bound, 1 .. 3,600,000 ms, when it is on. */
    assert_int_equal(momento_config_set_near_cache(cfg, MIB, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache(cfg, MIB, 3600001), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache(cfg, 4096, UINT32_MAX),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_near_cache(cfg, MIB, 1), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache(cfg, MIB, 3600000), MOMENTO_OK);
    /* Off: the bound is ignored, whatever it is. */
    assert_int_equal(momento_config_set_near_cache(cfg, 0, 0), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache(cfg, 0, 3600001), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache(cfg, 0, UINT32_MAX), MOMENTO_OK);
    momento_config_free(cfg);
}

/* A client whose near cache was set and then turned off has none: two gets
 * of one key both reach the server, and its counters stay 0. */
static void test_off_after_on(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_near_cache(cfg, MIB, LONG_BOUND_MS), MOMENTO_OK);
    assert_int_equal(momento_config_set_near_cache(cfg, 0, 0), MOMENTO_OK);
    momento_client *a = tu_client(tu_fx.server, cfg);
    momento_config_free(cfg);
    put(a, "k", "v1");
    uint64_t gets = server_gets();
    expect_get(a, "k", "v1");
    expect_get(a, "k", "v1");
    assert_int_equal(server_gets(), gets + 2);
    momento_near_cache_stats zero, s = stats(a);
    memset(&zero, 0, sizeof(zero));
    assert_memory_equal(&s, &zero, sizeof(s));
    momento_client_free(a);
}

static void test_stats_without_near_cache(void **state)
{
    (void)state;
    momento_client *b = tu_fx.client;
    put(b, "k", "v");
    expect_get(b, "k", "v");
    expect_get(b, "absent", NULL);
    momento_near_cache_stats s, zero;
    memset(&zero, 0, sizeof(zero));
    memset(&s, 0xab, sizeof(s));
    assert_int_equal(momento_client_near_cache_stats_get(b, &s, sizeof(s)), MOMENTO_OK);
    assert_memory_equal(&s, &zero, sizeof(s));
    /* At most `size` bytes: the first field only. */
    memset(&s, 0xab, sizeof(s));
    assert_int_equal(momento_client_near_cache_stats_get(b, &s, sizeof(uint64_t)), MOMENTO_OK);
    assert_int_equal(s.hits, 0);
    assert_int_equal(s.miss_hits, UINT64_C(0xabababababababab));
    assert_int_equal(s.bytes, UINT64_C(0xabababababababab));
    /* Refusals. */
    assert_int_equal(momento_client_near_cache_stats_get(NULL, &s, sizeof(s)),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_client_near_cache_stats_get(b, NULL, sizeof(s)),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

/* ----------------------------------------------------------------- 2 */

static void test_hit_within_bound(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    momento_client *b = tu_fx.client;
    put(a, "k", "v1");
    expect_get(a, "k", "v1"); /* from A's own write, or a read that keeps it */
    put(b, "k", "v2");

    momento_near_cache_stats before = stats(a);
    uint64_t gets = server_gets();
    for (int i = 0; i < 3; i++)
        expect_get(a, "k", "v1");
    momento_near_cache_stats after = stats(a);
    assert_int_equal(after.hits, before.hits + 3);
    assert_int_equal(after.misses, before.misses);
    assert_int_equal(server_gets(), gets); /* no Get reached the server */
    assert_true(after.entries >= 1);
    assert_true(after.bytes > 0);

    /* no_near_cache: read from Momento, and the answer not stored; each
     * such get counted once, async ... */
    tu_rec by = {0};
    assert_int_equal(momento_get(a, "c", "k", 1, MOMENTO_REQUEST_OPTIONS(.no_near_cache = 1),
                                 tu_rec_cb, &by),
                     MOMENTO_OK);
    assert_int_equal(tu_rec_wait(&by, 5000), 1);
    assert_int_equal(by.outcome, MOMENTO_OUTCOME_HIT);
    assert_string_equal(by.value, "v2");
    assert_int_equal(server_gets(), gets + 1);
    momento_near_cache_stats bypass = one_bypass_since(a, after);
    /* ... and blocking. */
    expect_get_opts(a, "k", MOMENTO_REQUEST_OPTIONS(.no_near_cache = 1), "v2");
    assert_int_equal(server_gets(), gets + 2);
    one_bypass_since(a, bypass);
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 3 */

static void test_bound_passes(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, 50);
    momento_client *b = tu_fx.client;
    put(b, "k", "v1");
    expect_get(a, "k", "v1");
    put(b, "k", "v2");
    /* More than the 50 ms bound since A's read was sent. */
    usleep(200 * 1000);
    momento_near_cache_stats before = stats(a);
    uint64_t gets = server_gets();
    expect_get(a, "k", "v2");
    momento_near_cache_stats after = stats(a);
    assert_int_equal(server_gets(), gets + 1);
    assert_int_equal(after.hits, before.hits);
    assert_int_equal(after.misses, before.misses + 1);
    momento_client_free(a);
}


/* Refreshing ahead: a read in the last quarter of the bound is answered
 * from memory and starts one background read (not the application's: no
 * callback, not in flight); its answer, younger, is kept, so a read after
 * the first entry's bound has passed is still answered from memory - and
 * sees what Momento held when the refresh was sent. */
static void test_refresh_ahead(void **state)
{
    (void)state;
    const int64_t bound = TU_MS(1000);
    momento_client *a = near_client(MIB, (uint32_t)bound);
    momento_client *b = tu_fx.client;
    put(b, "k", "v1");
    int64_t t0 = tu_now_ms();
    expect_get(a, "k", "v1"); /* its read sent after t0 */
    put(b, "k", "v2");
    usleep((useconds_t)(bound * 3 / 4 + 10) * 1000);
    /* Past 3/4 of the bound: from memory, and a refresh starts. */
    uint64_t gets = server_gets();
    momento_near_cache_stats was = stats(a);
    expect_get(a, "k", "v1");
    assert_int_equal(stats(a).hits, was.hits + 1);
    assert_int_equal(stats(a).refreshes, was.refreshes + 1);
    assert_int_equal(momento_client_in_flight(a), 0);
    tu_wait_until(stats(a).fills > was.fills, 5000);
    assert_int_equal(stats(a).fills, was.fills + 1);
    assert_int_equal(server_gets(), gets + 1);
    /* Another read meanwhile starts no second refresh... of the new entry
     * not before its own last quarter. */
    expect_get(a, "k", "v2");
    assert_int_equal(stats(a).refreshes, was.refreshes + 1);
    /* Past the first entry's bound (it would have expired): still from
     * memory, the refreshed value. */
    while (tu_now_ms() - t0 <= bound + 10)
        usleep(5 * 1000);
    momento_near_cache_stats now = stats(a);
    expect_get(a, "k", "v2");
    assert_int_equal(stats(a).hits, now.hits + 1);
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 4 */

static void test_reads_own_writes(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    momento_client *b = tu_fx.client;
    put(b, "k", "v1");
    expect_get(a, "k", "v1");
    expect_get(a, "k", "v1");
    assert_true(stats(a).hits >= 1); /* v1 is kept */

    /* A set: a get made once its callback came sees v3, never v1. */
    tu_rec set = {0};
    assert_int_equal(momento_set(a, "c", "k", 1, "v3", 2, 0, NULL, tu_rec_cb, &set), MOMENTO_OK);
    assert_int_equal(tu_rec_wait(&set, 5000), 1);
    assert_int_equal(set.error, MOMENTO_OK);
    expect_get(a, "k", "v3");
    expect_get(a, "k", "v3");

    /* A delete: then a MISS. */
    tu_rec del = {0};
    assert_int_equal(momento_delete(a, "c", "k", 1, NULL, tu_rec_cb, &del), MOMENTO_OK);
    assert_int_equal(tu_rec_wait(&del, 5000), 1);
    assert_int_equal(del.error, MOMENTO_OK);
    expect_get(a, "k", NULL);
    expect_get(a, "k", NULL);

    /* An increment: then the new number. */
    put(b, "n", "5");
    expect_get(a, "n", "5");
    expect_get(a, "n", "5");
    momento_result *r = NULL;
    assert_int_equal(momento_increment_sync(a, "c", "n", 1, 2, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    assert_int_equal(momento_result_int(r), 7);
    momento_result_free(r);
    expect_get(a, "n", "7");

    /* A flush of the cache: every key of it, then a MISS. */
    expect_get(a, "n", "7"); /* kept */
    uint64_t gets = server_gets();
    r = NULL;
    tu_expect(momento_flush_cache_sync(a, "c", NULL, &r), r, MOMENTO_OUTCOME_SUCCESS);
    expect_get(a, "n", NULL);
    assert_int_equal(server_gets(), gets + 1);

    /* The writes dropped the entries they found. */
    assert_true(stats(a).dropped >= 3);
    momento_client_free(a);
}

/* A momento_set() that succeeds stores the value it wrote, and so does
 * its blocking form (a _sync call is its async request): A's next get is
 * answered from memory, though B wrote the key meanwhile. */
static void test_set_stores(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    momento_client *b = tu_fx.client;
    put_async(a, "async", "v1", 0);
    put(b, "async", "v2");
    momento_near_cache_stats before = stats(a);
    uint64_t gets = server_gets();
    expect_get(a, "async", "v1");
    assert_int_equal(stats(a).hits, before.hits + 1);
    assert_int_equal(server_gets(), gets);

    put(a, "sync", "v1");
    put(b, "sync", "v2");
    before = stats(a);
    expect_get(a, "sync", "v1");
    assert_int_equal(stats(a).hits, before.hits + 1);
    assert_int_equal(server_gets(), gets);
    momento_client_free(a);
}

/* A read sent before a write of its key never stores its answer after the
 * write: the server holds A's get 300 ms, A sets the key meanwhile, and the
 * get's answer (read before or after the set) is not kept. */
static void test_read_before_write_not_stored(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    hold_first_get(a, "near-read-before-write", "300");
    momento_client *b = tu_fx.client;
    put(b, "k", "v1");

    tu_rec held = {0};
    assert_int_equal(momento_get(a, "c", "k", 1, NULL, tu_rec_cb, &held), MOMENTO_OK);
    tu_wait_until(momento_local_parked_calls(tu_fx.server) == 1, 5000);
    assert_int_equal(momento_local_parked_calls(tu_fx.server), 1);
    assert_int_equal(tu_rec_calls(&held), 0);
    momento_near_cache_stats before = stats(a);
    put(a, "k", "v3");
    assert_int_equal(tu_rec_wait(&held, 5000), 1);
    assert_int_equal(held.error, MOMENTO_OK);
    assert_int_equal(held.outcome, MOMENTO_OUTCOME_HIT);
    momento_near_cache_stats after = stats(a);
    assert_int_equal(after.stale, before.stale + 1);
    expect_get(a, "k", "v3");
    expect_get(a, "k", "v3");
    momento_client_free(a);
}

/* The other writes drop the key's entry too: a conditional set, a set
 * batch, a TTL update (the item then expires on the server, and A does not
 * answer it from memory past that). */
static void test_other_writes_drop(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    momento_client *b = tu_fx.client;
    const char *keys[] = {"k1", "k2", "k3", "k4"};
    for (int i = 0; i < 4; i++) {
        put(b, keys[i], "v1");
        expect_get(a, keys[i], "v1");
    }
    momento_near_cache_stats kept = stats(a);
    assert_int_equal(kept.entries, 4);

    momento_result *r = NULL;
    tu_expect(momento_set_if_sync(a, "c", "k1", 2, "c1", 2, 0, MOMENTO_IF_PRESENT, NULL, 0, NULL, &r),
              r, MOMENTO_OUTCOME_STORED);
    expect_get(a, "k1", "c1");

    const void *bk[] = {"k2"};
    size_t bkl[] = {2};
    const void *bv[] = {"b2"};
    size_t bvl[] = {2};
    assert_int_equal(momento_set_batch_sync(a, "c", bk, bkl, bv, bvl, 1, 0, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    expect_get(a, "k2", "b2");

    /* A batch of deletes (momento-proxy's DEL) is a write of each key. */
    const void *dk[] = {"k4"};
    assert_int_equal(momento_delete_batch_sync(a, "c", dk, bkl, 1, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    expect_get(a, "k4", NULL);

    assert_int_equal(momento_update_ttl_sync(a, "c", "k3", 2, (uint64_t)TU_MS(100), NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_error(r), MOMENTO_OK);
    momento_result_free(r);
    usleep((useconds_t)TU_MS(300) * 1000); /* past the TTL the update set */
    expect_get(a, "k3", NULL);
    assert_true(stats(a).dropped >= kept.dropped + 4);
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 5 */

static void test_misses_kept(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    momento_client *b = tu_fx.client;
    expect_get(a, "absent", NULL);
    put(b, "absent", "now");
    momento_near_cache_stats before = stats(a);
    uint64_t gets = server_gets();
    expect_get(a, "absent", NULL);
    expect_get(a, "absent", NULL);
    momento_near_cache_stats after = stats(a);
    assert_int_equal(after.miss_hits, before.miss_hits + 2);
    assert_int_equal(after.hits, before.hits);
    assert_int_equal(after.misses, before.misses);
    assert_int_equal(server_gets(), gets);
    /* The value is there for whoever asks Momento. */
    expect_get_opts(a, "absent", MOMENTO_REQUEST_OPTIONS(.no_near_cache = 1), "now");
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 6 */

static void test_slow_reply_not_kept(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, 100);
    hold_first_get(a, "near-slow-reply", "400");
    momento_client *b = tu_fx.client;
    put(b, "k", "v1");

    uint64_t gets = server_gets();
    expect_get(a, "k", "v1"); /* held 400 ms by the server: past the 100 ms bound */
    assert_int_equal(server_gets(), gets + 1);
    momento_near_cache_stats s = stats(a);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.stale, 1);
    assert_int_equal(s.fills, 0);
    assert_int_equal(s.entries, 0);

    /* So the next get goes to the server again. */
    expect_get(a, "k", "v1");
    assert_int_equal(server_gets(), gets + 2);
    s = stats(a);
    assert_int_equal(s.misses, 2);
    assert_int_equal(s.hits, 0);
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 7 */

static void test_written_ttl(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    /* A TTL long enough that the get below comes before it ends on a
     * loaded machine (its hit is asserted). */
    put_async(a, "k", "v1", (uint64_t)TU_MS(1000));
    momento_near_cache_stats before = stats(a);
    uint64_t gets = server_gets();
    expect_get(a, "k", "v1");
    assert_int_equal(stats(a).hits, before.hits + 1);
    assert_int_equal(server_gets(), gets);
    /* Past the TTL A wrote (the server dropped the item): a MISS, though
     * the staleness bound is a minute. */
    usleep((useconds_t)TU_MS(1300) * 1000);
    expect_get(a, "k", NULL);
    momento_near_cache_stats after = stats(a);
    assert_int_equal(after.hits, before.hits + 1);
    assert_int_equal(after.misses, before.misses + 1);
    assert_int_equal(server_gets(), gets + 1);
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 8 */

static void test_memory_bound(void **state)
{
    (void)state;
    const size_t max = 16384;
    momento_client *a = near_client(max, LONG_BOUND_MS);
    char key[16], value[201], got[256];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        memset(value, 'a' + i % 26, 200);
        value[200] = 0;
        put_bytes(a, key, value, 200, 0);
        assert_int_equal(get_opts(a, key, NULL, got, sizeof(got)), MOMENTO_OUTCOME_HIT);
        assert_string_equal(got, value);
        momento_near_cache_stats s = stats(a);
        assert_true(s.bytes <= max);
    }
    momento_near_cache_stats s = stats(a);
    assert_true(s.evictions > 0);
    assert_true(s.entries > 0);
    assert_true(s.entries < 200);

    /* Once full, a key read no more often lately than the entry it would
     * replace is not kept (the frequency sketch): every key here was read
     * once since the sketch was made, so the last one was not kept. */
    assert_true(s.rejected > 0);
    uint64_t gets = server_gets();
    snprintf(key, sizeof(key), "k%03d", 199);
    assert_int_equal(get_opts(a, key, NULL, got, sizeof(got)), MOMENTO_OUTCOME_HIT);
    assert_int_equal(stats(a).misses, s.misses + 1);
    assert_int_equal(server_gets(), gets + 1);
    /* Some of the others are still answered from memory (which ones: what
     * the reads on the way let in; test_scan_keeps_hot_keys is exact). */
    s = stats(a);
    for (int i = 0; i < 199; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        get_opts(a, key, NULL, got, sizeof(got));
    }
    assert_true(stats(a).hits > s.hits);
    assert_true(stats(a).bytes <= max);

    /* A value over an eighth of max_bytes is never kept: read ... */
    static char big[4001];
    memset(big, 'B', 4000);
    put_bytes(tu_fx.client, "big", big, 4000, 0);
    s = stats(a);
    gets = server_gets();
    for (int i = 0; i < 2; i++) {
        momento_result *r = NULL;
        assert_int_equal(momento_get_sync(a, "c", "big", 3, NULL, &r), MOMENTO_OK);
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
        size_t len = 0;
        momento_result_value(r, &len);
        assert_int_equal(len, 4000);
        momento_result_free(r);
        momento_near_cache_stats t = stats(a);
        assert_int_equal(t.entries, s.entries);
        assert_int_equal(t.fills, s.fills);
        assert_int_equal(t.hits, s.hits);
        assert_int_equal(t.misses, s.misses + (uint64_t)i + 1);
        assert_true(t.bytes <= max);
    }
    assert_int_equal(server_gets(), gets + 2);
    /* ... nor written by A itself. */
    put_bytes(a, "big2", big, 4000, 0);
    s = stats(a);
    gets = server_gets();
    momento_result *r = NULL;
    tu_expect(momento_get_sync(a, "c", "big2", 4, NULL, &r), r, MOMENTO_OUTCOME_HIT);
    assert_int_equal(stats(a).misses, s.misses + 1);
    assert_int_equal(stats(a).fills, s.fills);
    assert_int_equal(server_gets(), gets + 1);
    momento_client_free(a);
}

/* Scan resistance (the frequency sketch): a full cache of keys read again
 * and again keeps them through a run of many keys read once each, which
 * plain CLOCK would let push them out (the hand clears their marks on one
 * pass and evicts them on the next); the once-read keys are not kept
 * (`rejected`), and the hot keys are still answered from memory. */
static void test_scan_keeps_hot_keys(void **state)
{
    (void)state;
    const size_t max = 16384;
    momento_client *a = near_client(max, LONG_BOUND_MS);
    char key[16], value[201], got[256];
    memset(value, 'h', 200);
    value[200] = 0;
    enum { HOT = 10, FILL = 80, SCAN = 400 };
    /* Full of keys read once, so that the sketch is made... */
    for (int i = 0; i < FILL; i++) {
        snprintf(key, sizeof(key), "f%03d", i);
        put_bytes(tu_fx.client, key, value, 200, 0);
        get_opts(a, key, NULL, got, sizeof(got));
    }
    assert_true(stats(a).evictions > 0);
    /* ...then the hot keys, each read four times (three from memory). */
    for (int i = 0; i < HOT; i++) {
        snprintf(key, sizeof(key), "hot%d", i);
        put_bytes(tu_fx.client, key, value, 200, 0);
    }
    for (int round = 0; round < 4; round++)
        for (int i = 0; i < HOT; i++) {
            snprintf(key, sizeof(key), "hot%d", i);
            assert_int_equal(get_opts(a, key, NULL, got, sizeof(got)), MOMENTO_OUTCOME_HIT);
        }
    momento_near_cache_stats was = stats(a);
    /* The scan: many keys read once (misses, kept as such or not). */
    for (int i = 0; i < SCAN; i++) {
        snprintf(key, sizeof(key), "s%03d", i);
        get_opts(a, key, NULL, got, sizeof(got));
    }
    momento_near_cache_stats st = stats(a);
    assert_true(st.rejected > was.rejected);
    assert_true(st.bytes <= max);
    /* Every hot key still from memory: no Get reaches the server. */
    uint64_t gets = server_gets();
    for (int i = 0; i < HOT; i++) {
        snprintf(key, sizeof(key), "hot%d", i);
        assert_int_equal(get_opts(a, key, NULL, got, sizeof(got)), MOMENTO_OUTCOME_HIT);
        assert_string_equal(got, value);
    }
    assert_int_equal(server_gets(), gets);
    assert_int_equal(stats(a).hits, st.hits + HOT);
    momento_client_free(a);
}

/* ----------------------------------------------------------------- 9 */

/* A callback that says whether it ran inside the call that made its
 * request: on the submitting thread while that call had not returned. */
static pthread_t submitter;
static atomic_bool in_call;

typedef struct where {
    tu_rec rec;
    bool inside;
    bool on_submitter;
} where;

static void where_cb(const momento_result *r, void *userdata)
{
    where *w = userdata;
    bool mine = pthread_equal(pthread_self(), submitter);
    w->on_submitter = mine;
    w->inside = mine && atomic_load(&in_call);
    tu_rec_cb(r, &w->rec);
}

static void submit_get(momento_client *a, const char *key, where *w)
{
    submitter = pthread_self();
    atomic_store(&in_call, true);
    int rc = momento_get(a, "c", key, strlen(key), NULL, where_cb, w);
    atomic_store(&in_call, false);
    assert_int_equal(rc, MOMENTO_OK);
}

static void test_callback_on_completion_thread(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    put(a, "k", "v1");
    expect_get(a, "k", "v1");
    momento_near_cache_stats before = stats(a);

    /* With the completion thread held, a near-cache answer waits for it. */
    tu_gate *g = tu_gate_close(a);
    where w = {0};
    submit_get(a, "k", &w);
    assert_int_equal(tu_rec_calls(&w.rec), 0);
    tu_gate_open(g);
    assert_int_equal(tu_rec_wait(&w.rec, 5000), 1);
    assert_false(w.inside);
    assert_false(w.on_submitter);
    assert_string_equal(w.rec.thread, "momento-cq");
    assert_int_equal(w.rec.error, MOMENTO_OK);
    assert_int_equal(w.rec.outcome, MOMENTO_OUTCOME_HIT);
    assert_string_equal(w.rec.value, "v1");

    /* And with it free. */
    where w2 = {0};
    submit_get(a, "k", &w2);
    assert_int_equal(tu_rec_wait(&w2.rec, 5000), 1);
    assert_false(w2.inside);
    assert_string_equal(w2.rec.thread, "momento-cq");
    assert_string_equal(w2.rec.value, "v1");
    assert_int_equal(stats(a).hits, before.hits + 2);
    momento_client_free(a);
}

static bool readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void test_callback_dispatched(void **state)
{
    (void)state;
    momento_client *a = near_client_with(MIB, LONG_BOUND_MS, 1, NULL, NULL);
    int fd = momento_client_dispatch_fd(a);
    assert_true(fd >= 0);
    put(a, "k", "v1");
    expect_get(a, "k", "v1");
    assert_false(readable(fd, 0)); /* a blocking call's answer is never queued */
    momento_near_cache_stats before = stats(a);

    where w = {0};
    submit_get(a, "k", &w);
    assert_int_equal(tu_rec_calls(&w.rec), 0);
    /* Queued, and the fd says so; nothing runs until the test dispatches. */
    assert_true(readable(fd, (int)TU_MS(5000)));
    assert_int_equal(tu_rec_calls(&w.rec), 0);
    assert_int_equal(momento_client_dispatch(a, 0), 1);
    assert_int_equal(stats(a).hits, before.hits + 1);
    assert_int_equal(tu_rec_calls(&w.rec), 1);
    assert_false(w.inside);
    assert_true(w.on_submitter);
    assert_int_equal(w.rec.error, MOMENTO_OK);
    assert_int_equal(w.rec.outcome, MOMENTO_OUTCOME_HIT);
    assert_string_equal(w.rec.value, "v1");
    assert_false(readable(fd, 0));
    momento_client_free(a);
}

/* A blocking get's near answer is made on the calling thread: it returns
 * while the completion thread is held in another request's callback,
 * which waits until the get has returned (with a long safety bound). */
typedef struct holder {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool entered, released, timed_out;
} holder;

static void hold_cb(const momento_result *r, void *userdata)
{
    (void)r;
    holder *h = userdata;
    pthread_mutex_lock(&h->lock);
    h->entered = true;
    pthread_cond_broadcast(&h->cond);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10 * tu_time_scale();
    while (!h->released && !h->timed_out)
        h->timed_out = pthread_cond_timedwait(&h->cond, &h->lock, &until) != 0;
    pthread_mutex_unlock(&h->lock);
}

static void test_sync_hit_on_calling_thread(void **state)
{
    (void)state;
    momento_client *a = near_client(1u << 20, LONG_BOUND_MS);
    put(a, "k", "v");
    holder h = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    assert_int_equal(momento_get(a, "c", "other", 5, NULL, hold_cb, &h), MOMENTO_OK);
    pthread_mutex_lock(&h.lock);
    while (!h.entered)
        pthread_cond_wait(&h.cond, &h.lock);
    pthread_mutex_unlock(&h.lock);
    /* The completion thread is in hold_cb now. */
    momento_near_cache_stats was = stats(a);
    expect_get(a, "k", "v");
    assert_int_equal(stats(a).hits, was.hits + 1);
    pthread_mutex_lock(&h.lock);
    bool timed_out = h.timed_out;
    h.released = true;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.lock);
    assert_false(timed_out);
    /* With a metrics hook it is answered through the completion thread,
     * as the hook's calls are promised there (test_metrics_hook). */
    momento_client_free(a);
}

/* ---------------------------------------------------------------- 10 */

typedef struct hook_rec {
    char method[32];
    uint32_t flags;
    uint32_t attempts;
    int transport;
    int grpc_status;
    int outcome;
    int error;
} hook_rec;

static struct {
    pthread_mutex_t lock;
    size_t n;
    hook_rec r[16];
} H = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void hook(const momento_request_metrics *m, void *userdata)
{
    (void)userdata;
    pthread_mutex_lock(&H.lock);
    if (H.n < sizeof(H.r) / sizeof(H.r[0])) {
        hook_rec *x = &H.r[H.n];
        snprintf(x->method, sizeof(x->method), "%s", m->method);
        x->flags = m->flags;
        x->attempts = m->attempts;
        x->transport = m->transport;
        x->grpc_status = m->grpc_status;
        x->outcome = m->outcome;
        x->error = m->error;
    }
    H.n++;
    pthread_mutex_unlock(&H.lock);
}

static size_t hook_calls(void)
{
    pthread_mutex_lock(&H.lock);
    size_t n = H.n;
    pthread_mutex_unlock(&H.lock);
    return n;
}

static void test_metrics_hook(void **state)
{
    (void)state;
    H.n = 0;
    momento_client *a = near_client_with(MIB, LONG_BOUND_MS, 0, hook, NULL);
    /* A blocking call returns after its callback, and the hook runs before
     * that: each count below is final when read. */
    put_async(a, "k", "v1", 0);
    assert_int_equal(hook_calls(), 1);
    momento_near_cache_stats before = stats(a);
    expect_get(a, "k", "v1");
    assert_int_equal(stats(a).hits, before.hits + 1);
    assert_int_equal(hook_calls(), 2);
    hook_rec near = H.r[1];
    assert_string_equal(near.method, "Get");
    assert_true(near.flags & MOMENTO_METRICS_NEAR_CACHE);
    assert_int_equal(near.attempts, 0);
    assert_int_equal(near.transport, MOMENTO_METRICS_TRANSPORT_NONE);
    assert_int_equal(near.grpc_status, -1);
    assert_int_equal(near.error, MOMENTO_OK);
    assert_int_equal(near.outcome, MOMENTO_OUTCOME_HIT);

    /* A get answered by an RPC has no such flag. */
    expect_get(a, "absent", NULL);
    assert_int_equal(hook_calls(), 3);
    hook_rec rpc = H.r[2];
    assert_string_equal(rpc.method, "Get");
    assert_false(rpc.flags & MOMENTO_METRICS_NEAR_CACHE);
    assert_true(rpc.attempts >= 1);
    assert_int_equal(rpc.transport, MOMENTO_METRICS_TRANSPORT_GRPC);
    assert_int_equal(rpc.grpc_status, 0);
    assert_int_equal(rpc.outcome, MOMENTO_OUTCOME_MISS);

    /* A kept MISS is a near-cache answer too. */
    expect_get(a, "absent", NULL);
    assert_int_equal(hook_calls(), 4);
    assert_true(H.r[3].flags & MOMENTO_METRICS_NEAR_CACHE);
    assert_int_equal(H.r[3].attempts, 0);
    assert_int_equal(H.r[3].outcome, MOMENTO_OUTCOME_MISS);
    momento_client_free(a);
    assert_int_equal(hook_calls(), 4);
}

/* ---------------------------------------------------------------- 11 */

static void test_coalescer(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    momento_client *b = tu_fx.client;
    momento_coalescer *co = tu_coalescer(a);
    put(b, "k", "v1");
    momento_result *r = NULL;
    /* Not kept yet: the coalescer's RPC reads it, and its answer is kept. */
    uint64_t gets = server_gets();
    tu_expect(momento_coalescing_get_sync(co, "c", "k", 1, NULL, &r), r, MOMENTO_OUTCOME_HIT);
    assert_int_equal(server_gets(), gets + 1);
    put(b, "k", "v2");
    momento_near_cache_stats before = stats(a);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(momento_coalescing_get_sync(co, "c", "k", 1, NULL, &r), MOMENTO_OK);
        assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
        size_t len = 0;
        const void *v = momento_result_value(r, &len);
        assert_int_equal(len, 2);
        assert_memory_equal(v, "v1", 2);
        momento_result_free(r);
    }
    assert_int_equal(stats(a).hits, before.hits + 2);
    assert_int_equal(server_gets(), gets + 1);
    /* And the client's own gets see what the coalescer's kept. */
    expect_get(a, "k", "v1");
    momento_coalescer_free(co);
    momento_client_free(a);
}

/* A coalesced get that joins an RPC already in flight: the RPC's answer
 * is aged from when the RPC was sent, not from the join. The server holds
 * the first Get 2 s (scaled); a second waiter joins 1.5 s in; the bound is
 * 1 s. Aged from the join the answer would be 0.5 s old and kept; from the
 * send it is 2 s old and must not be. */
static void test_coalesced_join_aged_from_the_send(void **state)
{
    (void)state;
    momento_client *a = near_client(MIB, (uint32_t)TU_MS(1000));
    momento_client *b = tu_fx.client;
    put(b, "k", "v1");
    char hold[16];
    snprintf(hold, sizeof(hold), "%d", (int)TU_MS(2000));
    hold_first_get(a, "near-coalesced-join", hold);
    momento_coalescer *co = tu_coalescer(a);
    tu_rec first, joined;
    memset(&first, 0, sizeof(first));
    memset(&joined, 0, sizeof(joined));
    momento_near_cache_stats before = stats(a);
    uint64_t gets = server_gets();
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_rec_cb, &first), MOMENTO_OK);
    usleep((useconds_t)TU_MS(1500) * 1000);
    assert_int_equal(momento_coalescing_get(co, "c", "k", 1, NULL, tu_rec_cb, &joined),
                     MOMENTO_OK);
    assert_int_equal(tu_rec_wait(&first, 20000), 1);
    assert_int_equal(tu_rec_wait(&joined, 20000), 1);
    assert_int_equal(first.outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(joined.outcome, MOMENTO_OUTCOME_HIT);
    /* Both rode the one held RPC. */
    assert_int_equal(server_gets(), gets + 1);
    momento_near_cache_stats after = stats(a);
    assert_int_equal(after.fills, before.fills);
    assert_true(after.stale > before.stale);
    assert_int_equal(after.entries, 0);
    momento_coalescer_free(co);
    momento_client_free(a);
}

/* ---------------------------------------------------------------- 12 */

static void test_exactly_once_under_free(void **state)
{
    (void)state;
    enum { N = 100 };
    momento_client *a = near_client(MIB, LONG_BOUND_MS);
    put(a, "k", "v1");
    expect_get(a, "k", "v1");
    static tu_rec recs[N];
    memset(recs, 0, sizeof(recs));
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(a, "c", "k", 1, NULL, tu_rec_cb, &recs[i]), MOMENTO_OK);
    momento_client_free(a);
    /* The free waited for every callback. */
    int hits = 0, cancelled = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(tu_rec_calls(&recs[i]), 1);
        if (recs[i].error == MOMENTO_OK) {
            assert_int_equal(recs[i].outcome, MOMENTO_OUTCOME_HIT);
            assert_string_equal(recs[i].value, "v1");
            hits++;
        } else {
            assert_int_equal(recs[i].error, MOMENTO_ERR_CANCELLED);
            cancelled++;
        }
    }
    assert_int_equal(hits + cancelled, N);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        tu_fixture_test(test_config_refusals),
        tu_fixture_test(test_off_after_on),
        tu_fixture_test(test_stats_without_near_cache),
        tu_fixture_test(test_hit_within_bound),
        tu_fixture_test(test_bound_passes),
        tu_fixture_test(test_refresh_ahead),
        tu_fixture_test(test_reads_own_writes),
        tu_fixture_test(test_set_stores),
        tu_fixture_test(test_read_before_write_not_stored),
        tu_fixture_test(test_other_writes_drop),
        tu_fixture_test(test_misses_kept),
        tu_fixture_test(test_slow_reply_not_kept),
        tu_fixture_test(test_written_ttl),
        tu_fixture_test(test_memory_bound),
        tu_fixture_test(test_scan_keeps_hot_keys),
        tu_fixture_test(test_callback_on_completion_thread),
        tu_fixture_test(test_callback_dispatched),
        tu_fixture_test(test_sync_hit_on_calling_thread),
        tu_fixture_test(test_metrics_hook),
        tu_fixture_test(test_coalescer),
        tu_fixture_test(test_coalesced_join_aged_from_the_send),
        tu_fixture_test(test_exactly_once_under_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
