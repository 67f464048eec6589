/* The library against the local server: data plane, control plane, ping,
 * TTLs, errors, concurrency, and shutdown with requests in flight. */
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

static void test_set_get_binary(void **state)
{
    tu_fixture *f = *state;
    const unsigned char key[] = {0, 1, 0, 255};
    const unsigned char val[] = {0, 0, 7, 0, 0};
    momento_result *r;
    assert_int_equal(momento_set_sync(f->client, "c", key, sizeof(key), val, sizeof(val), 0, NULL, &r),
                     MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_result_grpc_status(r), 0);
    momento_result_free(r);

    assert_int_equal(momento_get_sync(f->client, "c", key, sizeof(key), NULL, &r), MOMENTO_OK);
    assert_true(momento_result_is_hit(r));
    size_t len;
    const void *v = momento_result_value(r, &len);
    assert_int_equal(len, sizeof(val));
    assert_memory_equal(v, val, sizeof(val));
    momento_result_free(r);

    /* An empty value is a hit with zero bytes, not a miss. */
    assert_int_equal(momento_set_sync(f->client, "c", "empty", 5, NULL, 0, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(f->client, "c", "empty", 5, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_HIT);
    assert_non_null(momento_result_value(r, &len));
    assert_int_equal(len, 0);
    momento_result_free(r);
}

static void test_one_mebibyte(void **state)
{
    tu_fixture *f = *state;
    size_t n = 1024 * 1024;
    unsigned char *val = malloc(n);
    for (size_t i = 0; i < n; i++)
        val[i] = (unsigned char)(i * 31 + 7);
    assert_int_equal(momento_set_sync(f->client, "c", "big", 3, val, n, 0, NULL, NULL), MOMENTO_OK);
    tu_assert_get(f->client, "c", "big", 3, val, n);
    free(val);
}

static void test_miss_and_delete(void **state)
{
    tu_fixture *f = *state;
    momento_result *r;
    assert_int_equal(momento_get_sync(f->client, "c", "nope", 4, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_MISS);
    assert_false(momento_result_is_hit(r));
    size_t len = 9;
    assert_null(momento_result_value(r, &len));
    assert_int_equal(len, 0);
    momento_result_free(r);

    assert_int_equal(momento_set_sync(f->client, "c", "d", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    tu_expect(momento_delete_sync(f->client, "c", "d", 1, NULL, &r), r, MOMENTO_OUTCOME_SUCCESS);
    tu_expect(momento_get_sync(f->client, "c", "d", 1, NULL, &r), r, MOMENTO_OUTCOME_MISS);
    /* Deleting a missing key succeeds. */
    assert_int_equal(momento_delete_sync(f->client, "c", "d", 1, NULL, NULL), MOMENTO_OK);
}

static void test_ttl_expiry(void **state)
{
    tu_fixture *f = *state;
    momento_result *r;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_set_sync(f->client, "c", "t", 1, "v", 1, 150, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(f->client, "c", "t", 1, NULL, &r), MOMENTO_OK);
    /* A hit while the TTL cannot have run out (the server took the set
     * after t0 and the get before now); a loaded machine may get there
     * later, when a miss is right too. */
    if (tu_now_ms() - t0 < 150)
        assert_true(momento_result_is_hit(r));
    momento_result_free(r);
    usleep(250 * 1000); /* past the TTL on any machine: a miss */
    tu_expect(momento_get_sync(f->client, "c", "t", 1, NULL, &r), r, MOMENTO_OUTCOME_MISS);
}

static void test_default_ttl_from_config(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = tu_config();
    momento_config_set_default_ttl_ms(cfg, 100);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    assert_int_equal(momento_set_sync(c, "c", "dt", 2, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    usleep(200 * 1000);
    momento_result *r;
    tu_expect(momento_get_sync(c, "c", "dt", 2, NULL, &r), r, MOMENTO_OUTCOME_MISS);
    momento_client_free(c);
}

static void test_cache_not_found(void **state)
{
    tu_fixture *f = *state;
    momento_result *r;
    assert_int_equal(momento_get_sync(f->client, "no-such-cache", "k", 1, NULL, &r),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_error(r), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_result_grpc_status(r), 5);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_ERROR);
    assert_non_null(strstr(momento_result_message(r), "no-such-cache"));
    momento_result_free(r);
    assert_int_equal(momento_set_sync(f->client, "no-such-cache", "k", 1, "v", 1, 0, NULL, NULL),
                     MOMENTO_ERR_CACHE_NOT_FOUND);
}

static bool listed(momento_result *r, const char *name)
{
    for (size_t i = 0; i < momento_result_cache_count(r); i++)
        if (strcmp(momento_result_cache_name(r, i), name) == 0)
            return true;
    return false;
}

static void test_control_plane(void **state)
{
    tu_fixture *f = *state;
    momento_result *r;
    tu_expect(momento_create_cache_sync(f->client, "second", NULL, &r), r, MOMENTO_OUTCOME_CREATED);
    /* Creating it again is not a failure, but a distinct outcome. */
    assert_int_equal(momento_create_cache_sync(f->client, "second", NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_outcome(r), MOMENTO_OUTCOME_ALREADY_EXISTS);
    assert_int_equal(momento_result_grpc_status(r), 6);
    momento_result_free(r);

    assert_int_equal(momento_list_caches_sync(f->client, NULL, &r), MOMENTO_OK);
    assert_true(listed(r, "c"));
    assert_true(listed(r, "second"));
    assert_null(momento_result_cache_name(r, momento_result_cache_count(r)));
    momento_result_free(r);

    assert_int_equal(momento_set_sync(f->client, "second", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_flush_cache_sync(f->client, "second", NULL, NULL), MOMENTO_OK);
    tu_expect(momento_get_sync(f->client, "second", "k", 1, NULL, &r), r, MOMENTO_OUTCOME_MISS);

    assert_int_equal(momento_delete_cache_sync(f->client, "second", NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_delete_cache_sync(f->client, "second", NULL, &r), MOMENTO_ERR_CACHE_NOT_FOUND);
    momento_result_free(r);
    assert_int_equal(momento_flush_cache_sync(f->client, "second", NULL, NULL), MOMENTO_ERR_CACHE_NOT_FOUND);
    assert_int_equal(momento_list_caches_sync(f->client, NULL, &r), MOMENTO_OK);
    assert_false(listed(r, "second"));
    momento_result_free(r);
}

/* ListCaches in pages: a server that answers two caches a page makes the
 * client follow next_token to the last page and hand back every cache once. */
static void test_list_caches_paged(void **state)
{
    (void)state;
    momento_local_options *o = tu_options(NULL);
    assert_int_equal(momento_local_options_set_list_page_size(o, 2), MOMENTO_OK);
    /* Limits the server reports, which every cache's entry must carry. */
    assert_int_equal(momento_local_options_set_max_item_bytes(o, 3u << 20), MOMENTO_OK);
    assert_int_equal(momento_local_options_set_max_rps(o, 777), MOMENTO_OK);
    momento_local *s = tu_start(o);
    momento_client *c = tu_client(s, NULL);
    const char *names[] = {"p-e", "p-a", "p-d", "p-b", "p-c"};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(momento_create_cache_sync(c, names[i], NULL, NULL), MOMENTO_OK);

    momento_result *r;
    assert_int_equal(momento_list_caches_sync(c, NULL, &r), MOMENTO_OK);
    assert_int_equal(momento_result_cache_count(r), 5);
    for (size_t i = 0; i < 5; i++) {
        size_t seen = 0;
        for (size_t k = 0; k < 5; k++)
            seen += strcmp(momento_result_cache_name(r, k), names[i]) == 0;
        assert_int_equal(seen, 1);
    }
    /* Every page's limits, each beside its name, and kept by a copy. */
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    for (size_t k = 0; k < 5; k++) {
        const momento_cache_limits *l = momento_result_cache_limits(copy, k);
        assert_non_null(l);
        assert_int_equal(l->max_item_size_kb, 3 * 1024);
        assert_int_equal(l->max_traffic_rate, 777);
        assert_true(l->max_ttl_seconds > 0);
        assert_true(l->max_subscription_count > 0);
        assert_true(l->max_publish_message_size_kb > 0);
    }
    assert_null(momento_result_cache_limits(copy, 5));
    momento_result_free(copy);
    /* It took three pages (2 + 2 + 1), each an OK ListCaches call. */
    assert_int_equal(momento_local_rpc_count(s, "ListCaches", 0), 3);
    assert_int_equal(momento_local_rpc_count(s, "ListCaches", -1), 3);

    momento_client_free(c);
    momento_local_stop(s);
}

static void test_ping(void **state)
{
    tu_fixture *f = *state;
    momento_result *r;
    tu_expect(momento_ping_sync(f->client, NULL, &r), r, MOMENTO_OUTCOME_SUCCESS);
    assert_int_equal(momento_local_rpc_count(f->server, "Ping", 0), 1);
}

static void test_request_headers(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = tu_client(f->server, NULL);
    momento_local_reset_stats(f->server);
    assert_int_equal(momento_set_sync(c, "c", "h", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(c, "c", "h", 1, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_list_caches_sync(c, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_ping_sync(c, NULL, NULL), MOMENTO_OK);
    /* agent and runtime-version on the first call only; cache on the two
     * data calls; authorization (empty for a local server) on all but ping. */
    assert_int_equal(momento_local_header_count(f->server, "agent"), 1);
    assert_int_equal(momento_local_header_count(f->server, "runtime-version"), 1);
    assert_int_equal(momento_local_header_count(f->server, "cache"), 2);
    assert_int_equal(momento_local_header_count(f->server, "authorization"), 3);
    momento_client_free(c);
}

typedef struct submitter {
    momento_client *client;
    tu_counter *k;
    int id;
    int refused;
} submitter;

static void *submit_many(void *arg)
{
    submitter *s = arg;
    for (int i = 0; i < 2000; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "t%d-%d", s->id, i % 50);
        int rc = (i % 2) ? momento_get(s->client, "c", key, (size_t)n, NULL, tu_count_cb, s->k)
                         : momento_set(s->client, "c", key, (size_t)n, "v", 1, 0, NULL, tu_count_cb, s->k);
        if (rc != MOMENTO_OK)
            s->refused++;
    }
    return NULL;
}

static void test_submit_from_many_threads(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = tu_patient_client(f->server, 30000);
    momento_local_reset_stats(f->server);
    tu_counter k;
    tu_counter_init(&k);
    pthread_t threads[8];
    submitter subs[8];
    for (int t = 0; t < 8; t++) {
        subs[t] = (submitter){c, &k, t, 0};
        pthread_create(&threads[t], NULL, submit_many, &subs[t]);
    }
    for (int t = 0; t < 8; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(subs[t].refused, 0);
    }
    assert_int_equal(tu_counter_wait(&k, 16000, 60000), 16000);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, 16000);
    for (int e = 1; e < 64; e++)
        if (k.by_error[e])
            print_message("%zu callbacks with %s\n", k.by_error[e], momento_error_name(-e));
    assert_int_equal(k.ok, 16000);
    assert_int_equal(momento_local_rpc_count(f->server, "Set", 0), 8000);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), 8000);
    tu_counter_destroy(&k);
}

static void test_ten_thousand_in_flight(void **state)
{
    tu_fixture *f = *state;
    tu_counter k;
    tu_counter_init(&k);
    k.expect = "value";
    k.expect_len = 5;
    /* All 10,000 are in flight at once, so the last is answered only after
     * the rest: give the deadline room under slow wrappers (valgrind). */
    momento_client *c = tu_patient_client(f->server, 30000);
    assert_int_equal(momento_set_sync(c, "c", "hot", 3, "value", 5, 0, NULL, NULL), MOMENTO_OK);
    momento_local_reset_stats(f->server);
    const size_t n = 10000;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(momento_get(c, "c", "hot", 3, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, n, 60000), n);
    /* The last callback has counted, and returns a moment later. */
    tu_wait_until(momento_client_in_flight(c) == 0, 5000);
    assert_int_equal(momento_client_in_flight(c), 0);
    /* The free waits for every callback, so none can come after it: a
     * duplicate would have been counted by now. */
    momento_client_free(c);
    assert_int_equal(k.total, n);
    assert_int_equal(k.ok, n);
    assert_int_equal(k.hits, n);
    assert_int_equal(k.bad_values, 0);
    assert_int_equal(momento_local_rpc_count(f->server, "Get", 0), n);
    tu_counter_destroy(&k);
}

static void test_free_with_requests_in_flight(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = tu_client(f->server, NULL);
    /* The server holds every get for 60 s, so all are in flight at free. */
    assert_int_equal(momento__client_add_header(c, "delay-ms", "60000"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "delay-rpcs", "get"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "request-id", "free-in-flight"), MOMENTO_OK);
    tu_counter k;
    tu_counter_init(&k);
    const size_t n = 200;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(momento_client_in_flight(c), n);
    momento_client_free(c);
    /* Every callback ran, exactly once, before free returned, and each was
     * CANCELLED: the free ended them rather than wait for their answers
     * (OK, after 60 s) or their deadlines (TIMEOUT). */
    assert_int_equal(k.total, n);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_CANCELLED), n);
    tu_counter_destroy(&k);
}

static void test_free_from_callback(void **state)
{
    tu_fixture *f = *state;
    int cq_threads = tu_threads_named("momento-cq");
    tu_freer x;
    x.client = tu_client(f->server, NULL);
    tu_counter_init(&x.k);
    momento_client *c = x.client;
    /* Held for good: only the free can end them (CANCELLED, below). */
    assert_int_equal(momento__client_add_header(c, "delay-ms", "999999999"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "delay-rpcs", "get"), MOMENTO_OK);
    assert_int_equal(momento__client_add_header(c, "request-id", "free-in-cb"), MOMENTO_OK);
    for (int i = 0; i < 20; i++)
        assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_free_client_cb, &x), MOMENTO_OK);
    /* The ping is answered at once; its callback frees the client, which
     * must cancel the 20 delayed gets and call each back once. */
    assert_int_equal(momento_ping(c, NULL, tu_free_client_cb, &x), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&x.k, 21, 30000), 21);
    /* The release ends on the client's completion thread, which then
     * exits: once it has gone no callback can come, and a duplicate would
     * have been counted. */
    tu_wait_until(tu_threads_named("momento-cq") == cq_threads, 30000);
    assert_int_equal(tu_threads_named("momento-cq"), cq_threads);
    assert_int_equal(x.k.total, 21);
    assert_int_equal(tu_counter_errors(&x.k, MOMENTO_ERR_CANCELLED), 20);
    tu_counter_destroy(&x.k);
}

static void blocking_in_callback(const momento_result *r, void *ud)
{
    (void)r;
    momento_client *c = ((void **)ud)[0];
    int *rc = ((void **)ud)[1];
    momento_result *res = (momento_result *)0x1;
    *rc = momento_get_sync(c, "c", "k", 1, NULL, &res);
    if (res != NULL)
        *rc = 999;
    tu_count_cb(r, ((void **)ud)[2]);
}

static void test_blocking_call_in_callback(void **state)
{
    tu_fixture *f = *state;
    int rc = 0;
    tu_counter k;
    tu_counter_init(&k);
    void *ud[3] = {f->client, &rc, &k};
    assert_int_equal(momento_ping(f->client, NULL, blocking_in_callback, ud), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 1, 5000), 1);
    assert_int_equal(rc, MOMENTO_ERR_WOULD_DEADLOCK);
    tu_counter_destroy(&k);
}

static void test_timeout(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, 200);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    /* Held for good: only the deadline can end it. */
    momento__client_add_header(c, "delay-ms", "999999999");
    momento__client_add_header(c, "request-id", "timeout");
    momento_result *r;
    int64_t t0 = tu_now_ms();
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_ERR_TIMEOUT);
    int64_t took = tu_now_ms() - t0;
    assert_int_equal(momento_result_grpc_status(r), 4);
    /* Not before the deadline (a timer cannot fire early); how long after
     * it is the machine's business. */
    assert_true(took >= 190);
    momento_result_free(r);
    momento_client_free(c);
}

static void test_injected_error_and_trailer(void **state)
{
    tu_fixture *f = *state;
    momento_client *c = tu_client(f->server, NULL);
    momento__client_add_header(c, "return-error", "resource-exhausted");
    momento__client_add_header(c, "error-rpcs", "set");
    momento__client_add_header(c, "error-count", "1");
    momento__client_add_header(c, "request-id", "inject-1");
    momento_result *r;
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, &r), MOMENTO_ERR_LIMIT_EXCEEDED);
    assert_int_equal(momento_result_grpc_status(r), 8);
    momento_result_free(r);
    /* error-count 1: the next set succeeds; gets were never affected. */
    assert_int_equal(momento_set_sync(c, "c", "k", 1, "v", 1, 0, NULL, NULL), MOMENTO_OK);
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, NULL), MOMENTO_OK);
    momento_client_free(c);

    /* An oversized item on a server with a small limit: RESOURCE_EXHAUSTED
     * with Momento's `err` trailer, kept in the result. */
    momento_local_options *o = tu_options("small");
    momento_local_options_set_max_item_bytes(o, 1000);
    momento_local *s = tu_start(o);
    c = tu_client(s, NULL);
    char big[2000] = {0};
    assert_int_equal(momento_set_sync(c, "small", "k", 1, big, sizeof(big), 0, NULL, &r),
                     MOMENTO_ERR_LIMIT_EXCEEDED);
    assert_string_equal(momento_result_error_detail(r), "item_size_limit_exceeded");
    /* The same `err`, as the reply's one trailer, for readers of metadata. */
    assert_int_equal(momento_result_trailer_count(r), 1);
    const momento_metadata *t = momento_result_trailer(r, 0);
    assert_int_equal(t->name_len, 3);
    assert_memory_equal(t->name, "err", 3);
    assert_int_equal(t->value_len, strlen("item_size_limit_exceeded"));
    assert_memory_equal(t->value, "item_size_limit_exceeded", t->value_len);
    momento_result *copy;
    assert_int_equal(momento_result_dup(r, &copy), MOMENTO_OK);
    momento_result_free(r);
    assert_string_equal(momento_result_error_detail(copy), "item_size_limit_exceeded");
    assert_int_equal(momento_result_trailer_count(copy), 1);
    assert_string_equal((const char *)momento_result_trailer(copy, 0)->value, "item_size_limit_exceeded");
    momento_result_free(copy);
    momento_client_free(c);
    momento_local_stop(s);
}

static void test_server_down(void **state)
{
    (void)state;
    momento_local *s = tu_server(NULL);
    momento_client *c = tu_client(s, NULL);
    momento_local_stop(s);
    momento_result *r;
    /* UNAVAILABLE, not TIMEOUT: it failed on the refused connection, not at
     * the deadline. */
    assert_int_equal(momento_get_sync(c, "c", "k", 1, NULL, &r), MOMENTO_ERR_SERVER_UNAVAILABLE);
    assert_int_equal(momento_result_grpc_status(r), 14);
    momento_result_free(r);
    momento_client_free(c);

    /* With a 10-minute deadline it still fails fast: its callback comes
     * within the watchdog's minute, so the deadline did not end it. */
    momento_config *cfg = tu_config();
    momento_config_set_timeout_ms(cfg, 600000);
    s = tu_server(NULL);
    c = tu_client(s, cfg);
    momento_config_free(cfg);
    momento_local_stop(s);
    tu_counter k;
    tu_counter_init(&k);
    assert_int_equal(momento_get(c, "c", "k", 1, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 1, (int)TU_MS(60000)), 1);
    assert_int_equal(tu_counter_errors(&k, MOMENTO_ERR_SERVER_UNAVAILABLE), 1);
    momento_client_free(c);
    tu_counter_destroy(&k);
}

static void test_eager_connect(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = tu_config();
    momento_config_set_eager_connect(cfg, 2000);
    momento_client *c = tu_client(f->server, cfg);
    momento_client_free(c);

    /* Nobody listens on port 1: creation fails instead of a later call. */
    momento_credentials *creds;
    momento_credentials_local(&creds, "127.0.0.1:1");
    c = (momento_client *)0x1;
    momento_config_set_eager_connect(cfg, 300);
    assert_int_equal(momento_client_new(&c, cfg, creds), MOMENTO_ERR_CONNECTION);
    assert_ptr_equal(c, (momento_client *)0x1);
    momento_credentials_free(creds);
    momento_config_free(cfg);
}

static void test_multiple_channels(void **state)
{
    tu_fixture *f = *state;
    momento_config *cfg = tu_config();
    momento_config_set_num_channels(cfg, 4);
    momento_client *c = tu_client(f->server, cfg);
    momento_config_free(cfg);
    tu_counter k;
    tu_counter_init(&k);
    for (int i = 0; i < 400; i++)
        assert_int_equal(momento_set(c, "c", "mc", 2, "v", 1, 0, NULL, tu_count_cb, &k), MOMENTO_OK);
    assert_int_equal(tu_counter_wait(&k, 400, 20000), 400);
    assert_int_equal(k.ok, 400);
    tu_counter_destroy(&k);
    momento_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_get_binary, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_one_mebibyte, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_miss_and_delete, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_ttl_expiry, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_default_ttl_from_config, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cache_not_found, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_control_plane, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test(test_list_caches_paged),
        cmocka_unit_test_setup_teardown(test_ping, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_request_headers, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_submit_from_many_threads, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_ten_thousand_in_flight, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_free_with_requests_in_flight, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_free_from_callback, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_blocking_call_in_callback, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_timeout, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_injected_error_and_trailer, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test(test_server_down),
        cmocka_unit_test_setup_teardown(test_eager_connect, tu_fixture_setup, tu_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_multiple_channels, tu_fixture_setup, tu_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
