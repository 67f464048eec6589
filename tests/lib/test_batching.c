/* Adaptive batching against the local server. The first RPC is held by the
 * server's delay injection, so the requests after it provably queue behind
 * it; what leaves when it completes is counted by the server per RPC. */
#include "momento/coalescer.h"
#include "momento/collections.h"
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

static int client_id;

/* A batching client (min_in_flight n) whose first call of `rpcs` the
 * server holds `ms`. */
static momento_client *batching_client(tu_fixture *f, uint32_t n, const char *rpcs, int ms)
{
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(20000));
    if (n) {
        assert_int_equal(momento_config_set_batching(cfg, n, 0, 64, 1024 * 1024), MOMENTO_OK);
        /* Completions only, no bound on the wait: what queues behind the
         * held RPC provably stays queued until it completes. */
        assert_int_equal(momento_config_set_batching_max_wait(cfg, 0), MOMENTO_OK);
    }
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    char id[32], ms_s[16];
    snprintf(id, sizeof(id), "batch-%d", ++client_id);
    snprintf(ms_s, sizeof(ms_s), "%d", ms);
    momento__client_add_header(c, "request-id", id);
    if (rpcs) {
        momento__client_add_header(c, "delay-rpcs", rpcs);
        momento__client_add_header(c, "delay-ms", ms_s);
        momento__client_add_header(c, "delay-count", "1");
    }
    return c;
}

static bool all_called(tu_rec *gs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tu_rec_calls(&gs[i]) == 0)
            return false;
    return true;
}

/* Each of `gs` has been called back once so far. After the client's free,
 * which waits for every callback, "so far" is "ever": a test checks again
 * then, for the duplicate callback that would come late. */
static void assert_once(tu_rec *gs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(tu_rec_calls(&gs[i]), 1);
}

static void wait_all(tu_rec *gs, size_t n)
{
    tu_wait_until(all_called(gs, n), 10000);
    assert_once(gs, n);
}

static momento_client_batching_stats stats(momento_client *c)
{
    momento_client_batching_stats k;
    assert_int_equal(momento_client_batching_stats_get(c, &k, sizeof(k)), MOMENTO_OK);
    return k;
}

/* Starts a get of "a" that the server holds for as long as the test
 * lasts: while it is in flight, a batching client of min_in_flight 1
 * queues. Cancelling `*tok` ends it, and its RPC's completion sends the
 * queue - as one batch, whatever the time the test took to fill it. */
static void hold_one(tu_fixture *f, momento_client *c, tu_rec *held, momento_cancel_token **tok)
{
    memset(held, 0, sizeof(*held));
    assert_int_equal(momento_cancel_token_new(tok), MOMENTO_OK);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.cancel = *tok;
    uint64_t parked = momento_local_parked_calls(f->server);
    assert_int_equal(momento_get(c, "c", "a", 1, &o, tu_rec_cb, held), MOMENTO_OK);
    /* Held by the server before anything else is sent: a cancel that came
     * first would leave the session's one delay to the next get. */
    tu_wait_until(momento_local_parked_calls(f->server) > parked, 10000);
    assert_true(momento_local_parked_calls(f->server) > parked);
}

static void release_one(tu_rec *held, momento_cancel_token *tok)
{
    momento_cancel(tok);
    momento_cancel_token_free(tok);
    wait_all(held, 1);
    assert_int_equal(held->error, MOMENTO_ERR_CANCELLED);
}

static void test_config_is_checked(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_batching(NULL, 1, 0, 64, 65536),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 1, 65536),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 100), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching(cfg, 1, MOMENTO_MAX_BATCH_LINGER_US + 1, 64, 65536),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, MOMENTO_MAX_BATCH_BYTES + 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching(cfg, 0, 0, 0, 0), MOMENTO_OK); /* off */
    momento_config_free(cfg);
    assert_int_equal(momento_client_batching_stats_get(NULL, NULL, 0),
                     MOMENTO_ERR_INVALID_ARGUMENT);
}

/* Off (the default) and under the threshold, nothing changes on the wire. */
static void test_light_load_is_unchanged(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 4, NULL, 0);
    for (int i = 0; i < 20; i++) {
        momento_result *r;
        assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, &r), MOMENTO_OK);
        momento_result_free(r);
        assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_OK);
        assert_true(momento_result_is_hit(r));
        momento_result_free(r);
    }
    assert_int_equal(stats(c).queued, 0);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 20);
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", -1), 0);
    momento_client_free(c);

    /* Off: 100 concurrent gets are 100 Gets. */
    c = batching_client(f, 0, NULL, 0);
    tu_rec gs[100];
    memset(gs, 0, sizeof(gs));
    for (int i = 0; i < 100; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_rec_cb, &gs[i]), MOMENTO_OK);
    wait_all(gs, 100);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 120);
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", -1), 0);
    momento_client_free(c);
    assert_once(gs, 100);
}

/* Behind a held RPC, distinct gets and sets leave as one batch each, and
 * each request gets its own result. */
static void test_queued_requests_leave_as_batches(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    enum { N = 40 };
    char key[N][16], val[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(key[i], sizeof(key[i]), "k%d", i);
        snprintf(val[i], sizeof(val[i]), "v%d", i);
        if (i % 2 == 0) /* the even keys exist */
            assert_int_equal(momento_set_sync(c, "c", key[i], strlen(key[i]), val[i],
                                              strlen(val[i]), 0, NULL, NULL),
                             MOMENTO_OK);
    }
    momento_cancel_token *hold;
    tu_rec held, gets[N], sets[N];
    memset(gets, 0, sizeof(gets));
    memset(sets, 0, sizeof(sets));
    /* The last blocking set woke in its callback: let it retire. */
    tu_wait_until(momento_client_in_flight(c) == 0, 10000);
    assert_int_equal(momento_client_in_flight(c), 0);
    hold_one(f, c, &held, &hold);
    for (int i = 0; i < N; i++) {
        assert_int_equal(momento_get(c, "c", key[i], strlen(key[i]), NULL, tu_rec_cb, &gets[i]),
                         MOMENTO_OK);
        char nv[16];
        snprintf(nv, sizeof(nv), "new%d", i);
        assert_int_equal(momento_set(c, "c", key[i], strlen(key[i]), nv, strlen(nv), 0, NULL,
                                     tu_rec_cb, &sets[i]),
                         MOMENTO_OK);
    }
    assert_int_equal(momento_client_in_flight(c), 1 + 2 * N); /* queued ones count */
    release_one(&held, hold);
    wait_all(gets, N);
    wait_all(sets, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(gets[i].error, MOMENTO_OK);
        /* The GetBatch and the SetBatch are two calls in flight at once:
         * each get reads its key's old state or the new value. */
        char nv[16];
        snprintf(nv, sizeof(nv), "new%d", i);
        if (gets[i].outcome == MOMENTO_OUTCOME_HIT) {
            if (strcmp(gets[i].value, nv) != 0) {
                assert_true(i % 2 == 0);
                assert_string_equal(gets[i].value, val[i]);
            }
        } else {
            assert_int_equal(gets[i].outcome, MOMENTO_OUTCOME_MISS);
            assert_true(i % 2 == 1);
        }
        assert_int_equal(sets[i].error, MOMENTO_OK);
        assert_int_equal(sets[i].outcome, MOMENTO_OUTCOME_SUCCESS);
    }
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", 0), 1);
    assert_int_equal(momento_local_rpc_count(f->server, "SetBatch", 0), 1);
    /* The held get, counted when the server hears of its cancel. */
    tu_wait_until(momento_local_rpc_count(f->server, "Get", -1) == 1, 10000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 1);
    momento_client_batching_stats k = stats(c);
    assert_int_equal(k.queued, 2 * N);
    assert_int_equal(k.batches, 2);
    assert_int_equal(k.batched_keys, 2 * N);
    assert_int_equal(k.keys_per_batch[5], 2); /* 33..64 keys */
    assert_true(k.queued_ns_max > 0);
    tu_assert_get(c, "c", "k7", 2, "new7", 4);
    /* Retired just after its callback returned (the blocking call woke in it). */
    tu_wait_until(momento_client_in_flight(c) == 0, 10000);
    assert_int_equal(momento_client_in_flight(c), 0);
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(gets, N);
    assert_once(sets, N);
}

/* A queued request's deadline and token end it where it is: it never
 * reaches the wire. */
static void test_queued_deadline_and_cancel(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    tu_rec held, late, cancelled, kept;
    momento_cancel_token *hold;
    memset(&late, 0, sizeof(late));
    memset(&cancelled, 0, sizeof(cancelled));
    memset(&kept, 0, sizeof(kept));
    hold_one(f, c, &held, &hold);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.timeout_ms = 100;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_get(c, "c", "b", 1, &o, tu_rec_cb, &late), MOMENTO_OK);
    momento_cancel_token *t;
    momento_cancel_token_new(&t);
    momento_request_options oc = MOMENTO_REQUEST_OPTIONS_INIT;
    oc.cancel = t;
    assert_int_equal(momento_get(c, "c", "c", 1, &oc, tu_rec_cb, &cancelled), MOMENTO_OK);
    assert_int_equal(momento_get(c, "c", "d", 1, NULL, tu_rec_cb, &kept), MOMENTO_OK);
    momento_cancel(t);
    momento_cancel_token_free(t);
    /* Both end where they wait, while the RPC they queued behind is still
     * held and the queue has not left. */
    wait_all(&cancelled, 1);
    assert_int_equal(cancelled.error, MOMENTO_ERR_CANCELLED);
    wait_all(&late, 1);
    assert_int_equal(late.error, MOMENTO_ERR_TIMEOUT);
    assert_true(late.at_ms - t0 >= 99); /* never before its deadline: a timer does not fire early */
    assert_int_equal(tu_rec_calls(&held), 0);
    assert_int_equal(tu_rec_calls(&kept), 0);
    release_one(&held, hold);
    wait_all(&kept, 1);
    assert_int_equal(kept.error, MOMENTO_OK);
    /* Only "d" left the queue: alone, as a plain Get (the other Get is the
     * held one, counted when the server hears of its cancel). */
    tu_wait_until(momento_local_rpc_count(f->server, "Get", -1) == 2, 10000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 2);
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", -1), 0);
    momento_client_batching_stats k = stats(c);
    assert_int_equal(k.left_queue, 2);
    assert_int_equal(k.sent_alone, 1);
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(&late, 1);
    assert_once(&cancelled, 1);
    assert_once(&kept, 1);
}

/* A batch that fails as a whole fails each of its requests as a single
 * call would (after the same retries). */
static void test_batch_failure_reaches_each_request(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    momento__client_add_header(c, "return-error", "unavailable");
    momento__client_add_header(c, "error-rpcs", "get-batch");
    momento_cancel_token *hold;
    tu_rec held, gs[5];
    memset(gs, 0, sizeof(gs));
    hold_one(f, c, &held, &hold);
    const char *keys[5] = {"k1", "k2", "k3", "k4", "k5"};
    for (int i = 0; i < 5; i++)
        assert_int_equal(momento_get(c, "c", keys[i], 2, NULL, tu_rec_cb, &gs[i]), MOMENTO_OK);
    release_one(&held, hold);
    wait_all(gs, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(gs[i].error, MOMENTO_ERR_SERVER_UNAVAILABLE);
    /* Retried as a get is: 3 attempts of the one batch. */
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", -1), 3);
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(gs, 5);
}

/* What a plain client answers for `key` (its own get, no batching). */
static tu_rec plain_get(tu_fixture *f, const char *key)
{
    momento_client *p = tu_client(f->server, NULL);
    tu_rec g;
    memset(&g, 0, sizeof(g));
    momento_result *r = NULL;
    int rc = momento_get_sync(p, "c", key, strlen(key), NULL, &r);
    tu_rec_cb(r, &g);
    g.error = rc;
    momento_result_free(r);
    momento_client_free(p);
    return g;
}

/* One caller's key of another type shares a GetBatch with others' string
 * keys: each request ends as it would alone - the strings with their
 * values, the dictionary with its own FAILED_PRECONDITION - whether the
 * server fails the whole batch or only that key's item. */
static void test_wrong_type_key_fails_only_itself(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    momento_result *r;
    enum { N = 6 };
    const char *keys[N] = {"s0", "s1", "dict", "s3", "missing", "s5"};
    for (int i = 0; i < N; i++) {
        if (i == 2 || i == 4)
            continue;
        assert_int_equal(momento_set_sync(c, "c", keys[i], 2, keys[i], 2, 0, NULL, &r),
                         MOMENTO_OK);
        momento_result_free(r);
    }
    assert_int_equal(momento_dictionary_set_field_sync(c, "c", "dict", 4, "f", 1, "v", 1, NULL,
                                                       NULL, &r),
                     MOMENTO_OK);
    momento_result_free(r);
    tu_rec alone[N];
    for (int i = 0; i < N; i++)
        alone[i] = plain_get(f, keys[i]);
    assert_int_equal(alone[2].error, MOMENTO_ERR_FAILED_PRECONDITION); /* the premise */

    tu_rec held, gs[N];
    momento_cancel_token *tok;
    memset(gs, 0, sizeof(gs));
    uint64_t rpcs_before = momento_local_rpc_count(f->server, "Get", -1) +
                           momento_local_rpc_count(f->server, "GetBatch", -1);
    hold_one(f, c, &held, &tok);
    for (int i = 0; i < N; i++)
        assert_int_equal(momento_get(c, "c", keys[i], strlen(keys[i]), NULL, tu_rec_cb, &gs[i]),
                         MOMENTO_OK);
    release_one(&held, tok);
    wait_all(gs, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(gs[i].error, alone[i].error);
        assert_int_equal(gs[i].outcome, alone[i].outcome);
        assert_string_equal(gs[i].value, alone[i].value);
    }
    /* The premise: they did share a batch. */
    momento_client_batching_stats k = stats(c);
    assert_int_equal(k.batches, 1);
    assert_int_equal(k.batched_keys, N);
    assert_true(k.asked_alone >= 1);
    /* docs/batching.md's formula: RPCs sent = requests - (batched_keys -
     * batches - asked_alone), here with requests asked again alone. The
     * held get is counted by the server when it sees the cancel. */
    uint64_t saved = k.batched_keys - k.batches - k.asked_alone;
    uint64_t want = (uint64_t)N + 1 /* the held get */ - saved;
#define RPCS_SINCE()                                                                               \
    (momento_local_rpc_count(f->server, "Get", -1) +                                             \
     momento_local_rpc_count(f->server, "GetBatch", -1) - rpcs_before)
    tu_wait_until(RPCS_SINCE() == want, 10000);
    assert_int_equal(RPCS_SINCE(), want);
#undef RPCS_SINCE
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(gs, N);
}

/* A batch failing as a whole with an error that may be one key's doing
 * (here INTERNAL, injected into every GetBatch and SetBatch after their
 * retries) is asked again key by key: each request ends as alone - a
 * success - and writes still land. */
static void test_batch_failure_of_one_key_is_asked_again_alone(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    momento__client_add_header(c, "return-error", "internal");
    momento__client_add_header(c, "error-rpcs", "get-batch set-batch");
    tu_rec held, gs[4], ss[4];
    momento_cancel_token *tok;
    memset(gs, 0, sizeof(gs));
    memset(ss, 0, sizeof(ss));
    const char *keys[4] = {"k1", "k2", "k3", "k4"};
    hold_one(f, c, &held, &tok);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(momento_set(c, "c", keys[i], 2, keys[i], 2, 0, NULL, tu_rec_cb, &ss[i]),
                         MOMENTO_OK);
        assert_int_equal(momento_get(c, "c", keys[i], 2, NULL, tu_rec_cb, &gs[i]), MOMENTO_OK);
    }
    release_one(&held, tok);
    wait_all(ss, 4);
    wait_all(gs, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ss[i].error, MOMENTO_OK);
        assert_int_equal(gs[i].error, MOMENTO_OK); /* a hit or a miss: the race of its set */
    }
    /* The batches did fail (3 attempts each), and each request was asked
     * again alone. */
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", 13), 3);
    assert_int_equal(momento_local_rpc_count(f->server, "SetBatch", 13), 3);
    assert_int_equal(stats(c).asked_alone, 8);
    for (int i = 0; i < 4; i++) {
        tu_rec g = plain_get(f, keys[i]);
        assert_int_equal(g.outcome, MOMENTO_OUTCOME_HIT);
        assert_string_equal(g.value, keys[i]);
    }
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(gs, 4);
    assert_once(ss, 4);
}

/* A slow RPC in flight does not hold requests that have nothing to do
 * with it: with the default bound on the wait, a set and a get of another
 * key queued behind a get the server holds (as long as the test lasts)
 * are answered while that get is still held. */
static void test_slow_rpc_does_not_hold_the_queue(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, (uint32_t)TU_MS(60000));
    assert_int_equal(momento_config_set_batching(cfg, 1, 0, 64, 1024 * 1024), MOMENTO_OK);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    momento__client_add_header(c, "request-id", "slow-held");
    momento__client_add_header(c, "delay-rpcs", "get");
    momento__client_add_header(c, "delay-ms", "60000");
    momento__client_add_header(c, "delay-count", "1");
    tu_rec held, set, get;
    memset(&held, 0, sizeof(held));
    memset(&set, 0, sizeof(set));
    memset(&get, 0, sizeof(get));
    assert_int_equal(momento_get(c, "c", "slow", 4, NULL, tu_rec_cb, &held), MOMENTO_OK);
    assert_int_equal(momento_set(c, "c", "other", 5, "v", 1, 0, NULL, tu_rec_cb, &set), MOMENTO_OK);
    wait_all(&set, 1);
    assert_int_equal(momento_get(c, "c", "other", 5, NULL, tu_rec_cb, &get), MOMENTO_OK);
    wait_all(&get, 1);
    assert_int_equal(set.error, MOMENTO_OK);
    assert_int_equal(get.outcome, MOMENTO_OUTCOME_HIT);
    assert_int_equal(tu_rec_calls(&held), 0); /* still held by the server */
    momento_client_batching_stats k = stats(c);
    assert_int_equal(k.queued, 2); /* the premise: both waited in the queue */
    assert_int_equal(k.wait_bound_reached, 2);
    momento_client_free(c); /* ends the held get: CANCELLED */
    assert_once(&held, 1);
    assert_int_equal(held.error, MOMENTO_ERR_CANCELLED);
}

static void test_max_wait_is_checked(void **state)
{
    (void)state;
    momento_config *cfg = tu_config();
    assert_int_equal(momento_config_set_batching_max_wait(NULL, 0), MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching_max_wait(cfg, MOMENTO_MAX_BATCH_LINGER_US + 1),
                     MOMENTO_ERR_INVALID_ARGUMENT);
    assert_int_equal(momento_config_set_batching_max_wait(cfg, MOMENTO_MAX_BATCH_LINGER_US),
                     MOMENTO_OK);
    assert_int_equal(momento_config_set_batching_max_wait(cfg, 0), MOMENTO_OK);
    momento_config_free(cfg);
}

/* A delete issued after a queued set of the same key waits in the queue
 * behind it and leaves after it. (Which lands first once both are sent is
 * the channels' business, as for any two writes in flight: asserting it
 * failed 1 run in 140 beside two CPU hogs.) */
static void test_writes_keep_their_order(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    momento_cancel_token *hold;
    tu_rec held, set, del;
    memset(&set, 0, sizeof(set));
    memset(&del, 0, sizeof(del));
    hold_one(f, c, &held, &hold);
    assert_int_equal(momento_set(c, "c", "w", 1, "x", 1, 0, NULL, tu_rec_cb, &set), MOMENTO_OK);
    /* Not batched itself, but queued behind the set (a delete alone never
     * queues: without the rule it would be on the wire now). */
    assert_int_equal(momento_delete(c, "c", "w", 1, NULL, tu_rec_cb, &del), MOMENTO_OK);
    assert_int_equal(momento__batcher_queued(c), 2);
    assert_int_equal(tu_rec_calls(&del), 0);
    release_one(&held, hold);
    wait_all(&set, 1);
    wait_all(&del, 1);
    assert_int_equal(set.error, MOMENTO_OK);
    assert_int_equal(del.error, MOMENTO_OK);
    /* Each left alone (a group of one), the set first. */
    assert_int_equal(stats(c).sent_alone, 2);
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(&set, 1);
    assert_once(&del, 1);
}

/* Duplicates merge in the coalescer, distinct keys batch below it. */
static void test_coalescer_composes(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    momento_coalescer *co = tu_coalescer(c);
    momento_cancel_token *hold;
    tu_rec held, gs[50];
    memset(gs, 0, sizeof(gs));
    hold_one(f, c, &held, &hold);
    for (int i = 0; i < 50; i++) {
        char key[8];
        snprintf(key, sizeof(key), "k%d", i % 10);
        assert_int_equal(momento_coalescing_get(co, "c", key, strlen(key), NULL, tu_rec_cb, &gs[i]),
                         MOMENTO_OK);
    }
    release_one(&held, hold);
    wait_all(gs, 50);
    for (int i = 0; i < 50; i++)
        assert_int_equal(gs[i].error, MOMENTO_OK);
    momento_coalescer_stats k = tu_coalescer_stats(co);
    assert_int_equal(k.get_coalesced, 40);
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", 0), 1);
    assert_int_equal(stats(c).batched_keys, 10);
    momento_coalescer_free(co);
    momento_client_free(c);
    assert_once(&held, 1);
    assert_once(gs, 50);
}

/* A coalesced RPC that is queued when all its waiters leave is withdrawn:
 * it never reaches the wire, and the batch leaves without it. */
static void test_abandoned_coalesced_rpc_is_withdrawn(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 600000);
    momento_coalescer *co = tu_coalescer(c);
    momento_cancel_token *hold;
    tu_rec held, gone[6], kept[2];
    memset(gone, 0, sizeof(gone));
    memset(kept, 0, sizeof(kept));
    hold_one(f, c, &held, &hold);
    momento_cancel_token *t;
    momento_cancel_token_new(&t);
    momento_request_options o = MOMENTO_REQUEST_OPTIONS_INIT;
    o.cancel = t;
    /* Two waiters on each of "x", "y", "z", all with the token; "p" and
     * "q" without: they keep their RPCs. */
    const char *gone_keys[6] = {"x", "y", "z", "x", "y", "z"};
    for (int i = 0; i < 6; i++)
        assert_int_equal(momento_coalescing_get(co, "c", gone_keys[i], 1, &o, tu_rec_cb, &gone[i]),
                         MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "p", 1, NULL, tu_rec_cb, &kept[0]), MOMENTO_OK);
    assert_int_equal(momento_coalescing_get(co, "c", "q", 1, NULL, tu_rec_cb, &kept[1]), MOMENTO_OK);
    assert_int_equal(momento__batcher_queued(c), 5);
    momento_cancel(t);
    momento_cancel_token_free(t);
    wait_all(gone, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(gone[i].error, MOMENTO_ERR_CANCELLED);
    /* Their RPCs left the queue before the held get came back. */
    tu_wait_until(momento__batcher_queued(c) == 2, 10000);
    assert_int_equal(momento__batcher_queued(c), 2);
    assert_int_equal(tu_rec_calls(&held), 0);
    release_one(&held, hold);
    wait_all(kept, 2);
    assert_int_equal(kept[0].error, MOMENTO_OK);
    assert_int_equal(kept[1].error, MOMENTO_OK);
    /* On the wire: the held Get and one GetBatch of "p" and "q" only. */
    tu_wait_until(momento_local_rpc_count(f->server, "Get", -1) == 1, 10000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", -1), 1);
    assert_int_equal(momento_local_rpc_count(f->server, "GetBatch", -1), 1);
    momento_client_batching_stats k = stats(c);
    assert_int_equal(k.left_queue, 3);
    assert_int_equal(k.batched_keys, 2);
    momento_coalescer_stats kc = tu_coalescer_stats(co);
    assert_int_equal(kc.rpcs_abandoned, 3);
    assert_int_equal(kc.waiters_left, 6);
    momento_coalescer_free(co);
    momento_client_free(c);
    assert_once(gone, 6);
    assert_once(&held, 1);
    assert_once(kept, 2);
}

/* Freed with requests queued: each is called back once, CANCELLED. */
static void test_free_with_queued_requests(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = batching_client(f, 1, "get", 60000);
    tu_rec held, gs[30];
    memset(&held, 0, sizeof(held));
    memset(gs, 0, sizeof(gs));
    assert_int_equal(momento_get(c, "c", "a", 1, NULL, tu_rec_cb, &held), MOMENTO_OK);
    for (int i = 0; i < 30; i++)
        assert_int_equal(momento_set(c, "c", "k", 1, "v", 1, 0, NULL, tu_rec_cb, &gs[i]),
                         MOMENTO_OK);
    momento_client_free(c);
    assert_int_equal(tu_rec_calls(&held), 1);
    assert_int_equal(held.error, MOMENTO_ERR_CANCELLED);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(tu_rec_calls(&gs[i]), 1);
        assert_int_equal(gs[i].error, MOMENTO_ERR_CANCELLED);
    }
    assert_int_equal(momento_local_rpc_count(f->server, "SetBatch", -1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_is_checked),
        cmocka_unit_test_setup_teardown(test_light_load_is_unchanged, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_queued_requests_leave_as_batches, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_queued_deadline_and_cancel, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_batch_failure_reaches_each_request, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_type_key_fails_only_itself, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_batch_failure_of_one_key_is_asked_again_alone,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_slow_rpc_does_not_hold_the_queue, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test(test_max_wait_is_checked),
        cmocka_unit_test_setup_teardown(test_writes_keep_their_order, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_coalescer_composes, tu_fixture_setup,
                                        tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_coalesced_rpc_is_withdrawn,
                                        tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_free_with_queued_requests, tu_fixture_setup,
                                        tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
